//! Whether a row's numbers agree with each other as nccl-tests computes them.
//!
//! nccl-tests derives both bandwidths of a row from its size and its time (src/*.cu `*GetBw`):
//! `algbw = size / time` with GB = 1e9 bytes and `size` the size it prints (for all-gather,
//! reduce-scatter and all-to-all the whole array), and `busbw = algbw x factor`, one factor per
//! collective and rank count (doc/PERFORMANCE.md; /work/shared/reference/nccl.md). It prints every
//! number rounded (src/util.cu `getFloatStr`: two decimals where they fit the column, then one, then
//! none; before 2.19, `%7.2f` / `%7.1f` / `%7.0f` for the time and `%6.2f` for the bandwidths), so
//! each printed number stands for an interval: the value plus or minus half a unit in its last
//! printed place. A row agrees with itself when some true time, algbw and busbw inside those
//! intervals satisfy both formulas; a row where none does was not printed by nccl-tests as it
//! stands (an edited or mangled log), and its numbers cannot all be measurements.
//!
//! With `-C 1` nccl-tests prints CPU time (`cputime`) but still computes the bandwidths from the
//! wall time (src/common.cu `BenchTime`), so there the time says nothing about algbw.

/// A number as a log prints it: its value and half a unit in its last printed place (`46.79`:
/// 0.005; `22950`: 0.5; `1e+06`: 5e5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Printed {
    pub value: f64,
    pub half_unit: f64,
}

impl Printed {
    /// Reads a non-negative decimal as printf prints it (`46.79`, `22950`, `1.2e+07`); `None` for
    /// anything else.
    pub fn parse(s: &str) -> Option<Printed> {
        let value: f64 = s.parse().ok()?;
        if !(value.is_finite() && value >= 0.0) {
            return None;
        }
        let (mantissa, exponent) = match s.find(['e', 'E']) {
            Some(at) => (&s[..at], s[at + 1..].parse::<i32>().ok()?),
            None => (s, 0),
        };
        let decimals = mantissa
            .split_once('.')
            .map_or(0, |(_, frac)| frac.len() as i32);
        Some(Printed {
            value,
            half_unit: 0.5 * 10f64.powi(exponent - decimals),
        })
    }

    /// The interval of true values this number was rounded from.
    fn range(self) -> (f64, f64) {
        (
            (self.value - self.half_unit).max(0.0),
            self.value + self.half_unit,
        )
    }
}

/// Slack on top of the printed rounding for the floating-point arithmetic of the check itself.
const SLACK: f64 = 1e-9;

/// Whether two closed intervals meet, with [`SLACK`].
fn meet((a_lo, a_hi): (f64, f64), (b_lo, b_hi): (f64, f64)) -> bool {
    a_lo <= b_hi * (1.0 + SLACK) && b_lo <= a_hi * (1.0 + SLACK)
}

/// The algbw, GB/s, that `size` bytes in a time anywhere in `time`'s interval give: `size / time`.
fn algbw_range(size: u64, time_us: Printed) -> (f64, f64) {
    let (t_lo, t_hi) = time_us.range();
    let s = size as f64;
    let lo = if t_hi > 0.0 { s / (t_hi * 1e3) } else { 0.0 };
    let hi = if t_lo > 0.0 {
        s / (t_lo * 1e3)
    } else if size == 0 {
        0.0
    } else {
        f64::INFINITY
    };
    (lo, hi)
}

/// Why `algbw` is not `size / time` within the printed rounding, or `None` when it is.
pub fn algbw_disagrees(size: u64, time_us: Printed, algbw_gbs: Printed) -> Option<String> {
    let (lo, hi) = algbw_range(size, time_us);
    if meet((lo, hi), algbw_gbs.range()) {
        return None;
    }
    let exact = if time_us.value > 0.0 {
        format!(" = {:.2} GB/s", size as f64 / (time_us.value * 1e3))
    } else {
        String::new()
    };
    Some(format!(
        "algbw {} GB/s is not size / time ({size} B / {} us{exact}; nccl-tests prints algbw = \
         size / time, GB = 1e9 B, and the digits printed allow {} to {} GB/s)",
        algbw_gbs.value,
        time_us.value,
        round_down(lo),
        round_up(hi),
    ))
}

/// The busbw / algbw ratios a row's printed algbw and busbw allow: `None` where algbw may be 0
/// (the row says nothing about the factor).
pub fn factor_range(algbw_gbs: Printed, busbw_gbs: Printed) -> Option<(f64, f64)> {
    let (a_lo, a_hi) = algbw_gbs.range();
    let (b_lo, b_hi) = busbw_gbs.range();
    (a_lo > 0.0).then(|| (b_lo / a_hi, b_hi / a_lo))
}

/// Why `busbw` is not `algbw x factor` within the printed rounding, or `None` when it is.
pub fn busbw_disagrees(algbw_gbs: Printed, busbw_gbs: Printed, factor: f64) -> Option<String> {
    let (a_lo, a_hi) = algbw_gbs.range();
    if meet((a_lo * factor, a_hi * factor), busbw_gbs.range()) {
        return None;
    }
    Some(format!(
        "busbw {} GB/s is not algbw x {factor:.4} ({} GB/s x {factor:.4} = {:.2} GB/s)",
        busbw_gbs.value,
        algbw_gbs.value,
        algbw_gbs.value * factor
    ))
}

/// `x` to two decimals, rounded down (a bound shown as a bound).
fn round_down(x: f64) -> String {
    format!("{:.2}", (x * 100.0).floor() / 100.0)
}

/// `x` to two decimals, rounded up; `any` for no bound.
fn round_up(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}", (x * 100.0).ceil() / 100.0)
    } else {
        "any".into()
    }
}

/// The first of `ranges` (line, busbw / algbw range) that excludes the ratio most of them share,
/// with that ratio and how many share it; `None` when one ratio fits them all.
pub fn odd_factor(ranges: &[(usize, (f64, f64))]) -> Option<(usize, f64, usize)> {
    if ranges.is_empty() {
        return None;
    }
    // The ratio inside the most ranges: sweep their ends (opening before closing at a tie).
    let mut ends: Vec<(f64, i32)> = Vec::with_capacity(ranges.len() * 2);
    for &(_, (lo, hi)) in ranges {
        ends.push((lo, 1));
        ends.push((hi * (1.0 + SLACK), -1));
    }
    ends.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let (mut open, mut best, mut at) = (0i32, 0i32, ends[0].0);
    for &(x, step) in &ends {
        open += step;
        if open > best {
            (best, at) = (open, x);
        }
    }
    let shared = usize::try_from(best).unwrap_or(0);
    if shared == ranges.len() {
        return None;
    }
    let &(line, _) = ranges.iter().find(|(_, r)| !meet(*r, (at, at)))?;
    // The middle of the ranges that share `at`: the ratio to name.
    let sharing: Vec<(f64, f64)> = ranges
        .iter()
        .map(|&(_, r)| r)
        .filter(|&r| meet(r, (at, at)))
        .collect();
    let lo = sharing.iter().map(|r| r.0).fold(f64::MIN, f64::max);
    let hi = sharing.iter().map(|r| r.1).fold(f64::MAX, f64::min);
    Some((line, (lo + hi) / 2.0, shared))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Printed {
        Printed::parse(s).unwrap()
    }

    #[test]
    fn printed_numbers_carry_their_rounding() {
        assert_eq!(p("46.79").half_unit, 0.005);
        assert_eq!(p("22950").half_unit, 0.5);
        assert_eq!(p("1459.6").half_unit, 0.05);
        assert!((p("1e+06").half_unit - 5e5).abs() < 1e-6);
        assert!((p("1.2e+07").half_unit - 5e5).abs() < 1e-6);
        assert_eq!(p("1.2e+07").value, 1.2e7);
        assert!(Printed::parse("N/A").is_none());
        assert!(Printed::parse("-1").is_none());
        assert!(Printed::parse("inf").is_none());
    }

    /// A row of NVIDIA/nccl-tests issue 309 agrees; the same row with its time cut to 0.01 us
    /// does not, and the message gives the algbw its time implies.
    #[test]
    fn algbw_is_size_over_time_within_the_printed_digits() {
        assert_eq!(algbw_disagrees(1 << 30, p("13435"), p("79.92")), None);
        assert_eq!(algbw_disagrees(8, p("36.04"), p("0.00")), None);
        assert_eq!(algbw_disagrees(0, p("0.20"), p("0.00")), None);
        // At the edge of the rounding: 8 GiB in 52043 +- 0.5 us is 165.05 to 165.06 GB/s.
        assert_eq!(algbw_disagrees(8 << 30, p("52043"), p("165.06")), None);
        assert!(algbw_disagrees(8 << 30, p("52043"), p("165.10")).is_some());
        let e = algbw_disagrees(1 << 30, p("0.01"), p("79.92")).unwrap();
        assert!(
            e.starts_with(
                "algbw 79.92 GB/s is not size / time (1073741824 B / 0.01 us = 107374182.40 GB/s"
            ),
            "{e}"
        );
        // Time 0.00 with bytes: any algbw from 0.005 us on.
        assert!(algbw_disagrees(1 << 30, p("0.00"), p("0.00")).is_some());
    }

    #[test]
    fn busbw_is_algbw_times_the_factor_within_the_printed_digits() {
        assert_eq!(busbw_disagrees(p("79.92"), p("149.85"), 1.875), None);
        assert!(busbw_disagrees(p("79.92"), p("151.00"), 1.875).is_some());
        assert_eq!(busbw_disagrees(p("0.00"), p("0.00"), 1.875), None);
        let (lo, hi) = factor_range(p("79.92"), p("149.85")).unwrap();
        assert!(lo < 1.875 && 1.875 < hi);
        assert_eq!(factor_range(p("0.00"), p("0.01")), None);
    }

    #[test]
    fn the_odd_row_out_is_the_one_named() {
        let rows = [
            (10, (1.87, 1.88)),
            (11, (1.874, 1.876)),
            (12, (2.0, 2.1)),
            (13, (1.86, 1.90)),
        ];
        let (line, factor, shared) = odd_factor(&rows).unwrap();
        assert_eq!((line, shared), (12, 3));
        assert!((factor - 1.875).abs() < 1e-3, "{factor}");
        assert_eq!(odd_factor(&rows[..2]), None);
        assert_eq!(odd_factor(&[]), None);
    }
}
