//! Simulated time as an integer number of picoseconds, and the rates that turn bytes into it.
//!
//! Integer time (as smoltcp's `time.rs` does) keeps runs bit-for-bit reproducible: events compare
//! exactly, ties are real ties, and adding a latency never drifts. Picoseconds are fine enough for a
//! 64-byte packet at 800 Gb/s (640 ps) and a `u64` still spans 213 days.
//!
//! The clock every command reports on is [`Time::CLOCK`], 2^63 ps (106 days): arithmetic on
//! [`Time`] saturates at [`Time::MAX`] ("never"), and below half of it the sum of any two times is
//! exact, so a time at or past the clock can only come from a rate or a size too far out, never
//! from a measurement. Times computed in floating point (a collective priced per size, a training
//! step) become a `Time` through the checked [`Time::from_secs_checked`] /
//! [`Time::from_us_checked`], and rates enter as a checked [`Rate`]: a time past the clock is a
//! [`PastClock`] error saying how long it would have been, never a printed number.

use railyard_catalog::number;
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, or a duration, in picoseconds since the start of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

impl Time {
    pub const ZERO: Time = Time(0);
    /// The end of time: arithmetic saturates here rather than wrapping.
    pub const MAX: Time = Time(u64::MAX);
    /// The simulator's clock: every time railyard reports is below 2^63 ps (9.22e6 s, 106.75
    /// days). See the module docs.
    pub const CLOCK: Time = Time(1 << 63);

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

    /// `secs` seconds as a time on the clock, rounded to the picosecond; a negative, non-finite
    /// or too large value is a [`PastClock`] (a negative one is no time: callers pass durations).
    pub fn from_secs_checked(secs: f64) -> Result<Time, PastClock> {
        let ps = (secs * 1e12).round();
        if secs.is_finite() && ps >= 0.0 && ps < Time::CLOCK.0 as f64 {
            Ok(Time(ps as u64))
        } else {
            Err(PastClock { secs })
        }
    }

    /// [`Time::from_secs_checked`] of `us` microseconds.
    pub fn from_us_checked(us: f64) -> Result<Time, PastClock> {
        Time::from_secs_checked(us * 1e-6).map_err(|_| PastClock { secs: us * 1e-6 })
    }

    /// This time if it is on the clock ([`Time::CLOCK`]); a saturated sum is not.
    pub fn checked(self) -> Result<Time, PastClock> {
        if self < Time::CLOCK {
            Ok(self)
        } else {
            Err(PastClock {
                secs: self.as_secs_f64(),
            })
        }
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

/// A time past the simulator's clock ([`Time::CLOCK`]): how long it would have been, seconds (at
/// least that where the computation saturated; infinite or NaN where a rate was 0 or not a
/// number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PastClock {
    pub secs: f64,
}

impl fmt::Display for PastClock {
    /// `272 years, past the simulator's clock of 2^63 ps (106 days)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, past the simulator's clock of 2^63 ps (106 days)",
            duration_words(self.secs)
        )
    }
}

impl std::error::Error for PastClock {}

/// A duration in the unit a reader thinks in: `3.2 s`, `4.5 hours`, `12 days`, `272 years`,
/// `3.4e290 years`; `forever` for an infinite or undefined one.
pub fn duration_words(secs: f64) -> String {
    const YEAR: f64 = 365.25 * 86_400.0;
    if !secs.is_finite() || secs.is_nan() {
        return "forever".into();
    }
    let (value, unit) = if secs < 60.0 {
        (secs, "s")
    } else if secs < 3_600.0 {
        (secs / 60.0, "minutes")
    } else if secs < 86_400.0 {
        (secs / 3_600.0, "hours")
    } else if secs < YEAR {
        (secs / 86_400.0, "days")
    } else {
        (secs / YEAR, "years")
    };
    let shown = if value >= 1e6 {
        number(format!("{value:.1e}").parse().unwrap_or(value))
    } else if value >= 10.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    };
    format!("{shown} {unit}")
}

/// A data rate in bytes per second, checked where it enters: finite and above zero. Every rate a
/// command takes (a flag, a calibration, a catalog entry's link speed) is one before the simulator
/// uses it, and [`Rate::time_for`] is the checked way from bytes to time.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(f64);

impl Rate {
    /// `bytes_per_sec` as a rate; `None` unless finite and above zero.
    pub fn from_bytes_per_sec(bytes_per_sec: f64) -> Option<Rate> {
        (bytes_per_sec.is_finite() && bytes_per_sec > 0.0).then_some(Rate(bytes_per_sec))
    }

    /// A rate in GB/s (1e9 bytes per second).
    pub fn from_gbs(gbs: f64) -> Option<Rate> {
        Rate::from_bytes_per_sec(gbs * 1e9)
    }

    /// A rate in Gb/s (1e9 bits per second).
    pub fn from_gbps(gbps: f64) -> Option<Rate> {
        Rate::from_bytes_per_sec(gbps * 1e9 / 8.0)
    }

    pub fn bytes_per_sec(self) -> f64 {
        self.0
    }

    pub fn gbs(self) -> f64 {
        self.0 / 1e9
    }

    /// How long `bytes` take at this rate, on the clock.
    pub fn time_for(self, bytes: f64) -> Result<Time, PastClock> {
        Time::from_secs_checked(bytes / self.0)
    }

    /// The least rate that moves `bytes` within the clock, GB/s, rounded up to two significant
    /// digits (a bound to quote).
    pub fn least_gbs_for(bytes: f64) -> f64 {
        let exact = bytes / Time::CLOCK.as_secs_f64() / 1e9;
        if !(exact.is_finite() && exact > 0.0) {
            return exact;
        }
        let unit = 10f64.powi(exact.log10().floor() as i32 - 1);
        let up = (exact / unit).ceil() * unit;
        format!("{up:.1e}").parse().unwrap_or(up)
    }
}

/// Checks a rate given by `flag` (`--host-memory-gbs`, in GB/s) against a transfer it must carry
/// (`bytes`, described as `transfer`: `an 8589934592-byte message (-e)`): the error names the flag
/// and value, how long the transfer would take, and the least rate that fits the clock.
pub fn check_flag_rate(flag: &str, gbs: f64, bytes: u64, transfer: &str) -> Result<Rate, String> {
    let least = Rate::least_gbs_for(bytes as f64);
    let valid = format!("valid: at least {} GB/s for it", number(least));
    let Some(rate) = Rate::from_gbs(gbs) else {
        return Err(format!(
            "{flag} {}: not a rate above zero; {valid}",
            number(gbs)
        ));
    };
    match rate.time_for(bytes as f64) {
        Ok(_) => Ok(rate),
        Err(past) => Err(format!(
            "{flag} {}: {transfer} would take {past}; {valid}",
            number(gbs)
        )),
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

    /// The clock is 2^63 ps: a time at or past it, a negative one or one that is not a number is
    /// refused with how long it would have been.
    #[test]
    fn checked_times_stay_on_the_clock() {
        assert_eq!(Time::from_us_checked(1.5), Ok(Time::from_ps(1_500_000)));
        let clock = Time::CLOCK.as_secs_f64();
        assert!(Time::from_secs_checked(clock * 0.999).is_ok());
        assert!(Time::from_secs_checked(clock).is_err());
        assert!(Time::from_secs_checked(-1.0).is_err());
        assert!(Time::from_secs_checked(f64::NAN).is_err());
        assert!((Time::MAX).checked().is_err());
        assert!((Time::CLOCK - Time::from_ps(1)).checked().is_ok());
        let e = Time::from_secs_checked(8.6e9).unwrap_err();
        assert_eq!(
            e.to_string(),
            "273 years, past the simulator's clock of 2^63 ps (106 days)"
        );
        assert_eq!(duration_words(f64::INFINITY), "forever");
        assert_eq!(duration_words(3.0e300), "9.5e292 years");
        assert_eq!(duration_words(90.0), "1.5 minutes");
        assert_eq!(duration_words(5.0 * 3600.0), "5.0 hours");
        assert_eq!(duration_words(1.2e7), "139 days");
    }

    /// Rates are finite and above zero; the flag check names the flag, the transfer, how long it
    /// would take and the least rate that fits (issue 33: `--host-memory-gbs 1e-9`).
    #[test]
    fn rates_are_checked_where_they_enter() {
        assert!(Rate::from_gbs(0.0).is_none());
        assert!(Rate::from_gbs(f64::NAN).is_none());
        assert_eq!(Rate::from_gbps(800.0).unwrap().gbs(), 100.0);
        let r = Rate::from_gbs(12.5).unwrap();
        assert_eq!(r.time_for(1e6), Ok(Time::from_us(80)));
        let e =
            check_flag_rate("--host-memory-gbs", 1e-9, 1 << 30, "a 1 GiB transfer").unwrap_err();
        assert_eq!(
            e,
            "--host-memory-gbs 1e-9: a 1 GiB transfer would take 34 years, past the simulator's \
             clock of 2^63 ps (106 days); valid: at least 1.2e-7 GB/s for it"
        );
        assert!(check_flag_rate("--host-memory-gbs", 614.4, 8 << 30, "x").is_ok());
    }
}
