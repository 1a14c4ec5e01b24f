//! Simulated time as an integer number of picoseconds.
//!
//! Integer time (as smoltcp's `time.rs` does) keeps runs bit-for-bit reproducible: events compare
//! exactly, ties are real ties, and adding a latency never drifts. Picoseconds are fine enough for a
//! 64-byte packet at 800 Gb/s (640 ps) and a `u64` still spans 213 days.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, or a duration, in picoseconds since the start of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

impl Time {
    pub const ZERO: Time = Time(0);
    /// The end of time: arithmetic saturates here rather than wrapping.
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_ps(ps: u64) -> Time {
        Time(ps)
    }

    pub const fn from_ns(ns: u64) -> Time {
        Time(ns.saturating_mul(1_000))
    }

    pub const fn from_us(us: u64) -> Time {
        Time(us.saturating_mul(1_000_000))
    }

    /// Seconds (as a user writes them in a flows file) rounded to the nearest picosecond.
    /// `None` for negative, non-finite or out-of-range values.
    pub fn from_secs_f64(secs: f64) -> Option<Time> {
        let ps = (secs * 1e12).round();
        // u64::MAX as f64 rounds up to 2^64, so `<` keeps the cast below in range.
        (secs.is_finite() && ps >= 0.0 && ps < u64::MAX as f64).then_some(Time(ps as u64))
    }

    pub const fn ps(self) -> u64 {
        self.0
    }

    /// Microseconds, for reports.
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Seconds, for rates.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }

    pub const fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }

    pub const fn saturating_mul(self, n: u64) -> Time {
        Time(self.0.saturating_mul(n))
    }

    /// Exact decimal microseconds with six places (`12.345678`): integer formatting, so output files
    /// are byte-identical across machines.
    pub fn us_exact(self) -> String {
        format!("{}.{:06}", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

/// Saturating: a time past `Time::MAX` is still "never", not a wrap to zero.
impl Add for Time {
    type Output = Time;
    fn add(self, rhs: Time) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Time {
    fn add_assign(&mut self, rhs: Time) {
        *self = *self + rhs;
    }
}

/// Saturating at zero: a duration is never negative.
impl Sub for Time {
    type Output = Time;
    fn sub(self, rhs: Time) -> Time {
        self.saturating_sub(rhs)
    }
}

impl fmt::Display for Time {
    /// Microseconds with picosecond precision, e.g. `80.000000us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}us", self.us_exact())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_and_arithmetic() {
        assert_eq!(Time::from_ns(3).ps(), 3_000);
        assert_eq!(Time::from_us(2).ps(), 2_000_000);
        assert_eq!(Time::from_secs_f64(1.5e-6), Some(Time::from_ps(1_500_000)));
        assert_eq!(Time::from_secs_f64(-1.0), None);
        assert_eq!(Time::from_secs_f64(f64::NAN), None);
        assert_eq!(Time::from_secs_f64(1e300), None);
        assert_eq!(Time::MAX + Time::from_ps(1), Time::MAX);
        assert_eq!(Time::from_ps(1) - Time::from_ps(2), Time::ZERO);
        assert_eq!(Time::from_ps(12_345_678).us_exact(), "12.345678");
        assert_eq!(Time::from_ps(5).to_string(), "0.000005us");
    }
}
