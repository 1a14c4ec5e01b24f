//! Exact arithmetic of equal fair shares: subtracting a share many times as one step, and whether
//! a resource's share reaches a level.

use super::NEVER;

/// `rem` after subtracting `share` from it `n` times, one subtraction after another, bit for bit
/// (the water-filling's order-free way to take `n` equal flows' rates off a resource), in time
/// that does not grow with `n` while `rem` stays positive: where `rem - share` keeps `rem`'s
/// binade, every subtraction rounds to the same multiple of `rem`'s ulp, so a run of them is one
/// exact integer step. Weighted flows (`Workload::add_weighted_flow`) have widths in the
/// thousands.
pub(super) fn subtract_n(mut rem: f64, share: f64, mut n: u64) -> f64 {
    while n > 0 {
        match leap(rem, share, n) {
            Leap::Fixed => return rem,
            Leap::Steps { k, big, d, ulp } => {
                rem = ((big - k * d) as f64) * ulp;
                n -= k;
            }
            Leap::One => {
                rem -= share;
                n -= 1;
            }
        }
    }
    rem
}

/// What the next of `n` subtractions of `share` from `rem` do ([`subtract_n`]).
pub(super) enum Leap {
    /// Each rounds back to `rem`.
    Fixed,
    /// The next `k` take `d` ulps each off `rem`, which is `big` ulps (`ulp` a power of two):
    /// after step `j` of them, `rem` is `(big - j d) ulp` exactly.
    Steps { k: u64, big: u64, d: u64, ulp: f64 },
    /// Take one step as it comes.
    One,
}

/// The run of subtractions of `share` from `rem` that stay in `rem`'s binade (at most `n`).
pub(super) fn leap(rem: f64, share: f64, n: u64) -> Leap {
    const MANTISSA: u64 = 1 << 52;
    let bits = rem.to_bits();
    let exp = bits >> 52; // the sign bit is 0 for a positive `rem`
                          // A positive normal `rem` (its ulp a normal power of two), a positive finite share, a few
                          // steps at least.
    if n < 4 || rem <= 0.0 || exp <= 52 || exp >= 0x7ff || share <= 0.0 || !share.is_finite() {
        return Leap::One;
    }
    let ulp = f64::from_bits((exp - 52) << 52);
    // `rem` in ulps, in [2^52, 2^53); `share` in ulps (exact: a power of two apart).
    let big = MANTISSA | (bits & (MANTISSA - 1));
    let x = share / ulp;
    if x >= MANTISSA as f64 || x - x.floor() == 0.5 {
        return Leap::One;
    }
    // Step j's exact result `big - j d - x` stays at or above 2^52 ulps, so it rounds to the
    // nearest whole ulp: `big - (j + 1) d`, d = x rounded (no tie).
    let (room, need, d) = (big - MANTISSA, x.ceil() as u64, x.round() as u64);
    if room < need {
        return Leap::One;
    }
    if d == 0 {
        return Leap::Fixed;
    }
    Leap::Steps {
        k: ((room - need) / d + 1).min(n),
        big,
        d,
        ulp,
    }
}

/// The fair share of a resource with `rem` capacity left over `units` unfrozen widths, clamped at
/// the level of the last freeze on it (`NEVER`: none yet), as the water-filling queues it.
pub(super) fn fair_share(rem: f64, units: u64, last: u64) -> f64 {
    let share = rem / units as f64;
    if last == NEVER {
        share
    } else {
        share.max(f64::from_bits(last))
    }
}

/// Whether freezing `total` widths at `share` on a resource (`rem` left over `units`) one at a
/// time could, after some but not all of them, leave a fair share that rounds to `share` or below:
/// the water-filling would then queue the resource at this level between the fills that freeze
/// them, so their order matters.
///
/// Steps taken a run at a time ([`leap`]): over a run `rem` falls by the same ulps each step, so
/// `rem / units` moves one way (its exact value's derivative in the step has the sign of a
/// constant) and rounding keeps that order, so a run has a step at or below `share` if one of its
/// two ends does.
pub(super) fn share_hits_level(mut rem: f64, units: u64, total: u64, share: f64) -> bool {
    let hits = |rem: f64, i: u64| rem / (units - i) as f64 <= share;
    let mut i = 0u64;
    while i + 1 < total {
        match leap(rem, share, total - 1 - i) {
            Leap::Fixed => {
                // `rem` stays while `units` falls, so the share only grows: the next step
                // decides.
                return hits(rem, i + 1);
            }
            Leap::Steps { k, big, d, ulp } => {
                let at = |j: u64| ((big - j * d) as f64) * ulp;
                if hits(at(1), i + 1) || hits(at(k), i + k) {
                    return true;
                }
                rem = at(k);
                i += k;
            }
            Leap::One => {
                rem -= share;
                i += 1;
                if hits(rem, i) {
                    return true;
                }
            }
        }
    }
    false
}
