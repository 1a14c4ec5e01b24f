//! The compute efficiency that reproduces a measured step: a step's one free assumption
//! ([`StepConfig::compute_efficiency`](crate::step::StepConfig)), fitted to what a cluster measured.
//!
//! A faster GEMM shortens compute and never lengthens communication, so tokens/s and MFU grow,
//! and the step time shrinks, as the efficiency grows: bisection over (0, 1] finds the efficiency
//! whose simulated step matches the measurement, to [`TOLERANCE`]. Each probe is a whole step
//! simulated on the fabric (exposed communication, overlap and bubble as [`crate::step`] prices
//! them), so what the fit absorbs is only what the model leaves to the efficiency: the kernels'
//! speed, and whatever else of the real step the model does not see.

use crate::step::Breakdown;
use std::fmt;

/// Bisection stops when the efficiency is bracketed this tightly (absolute).
pub const TOLERANCE: f64 = 1e-4;

/// The lowest efficiency the fit tries.
pub const MIN_EFFICIENCY: f64 = 1e-3;

/// A measured step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measured {
    /// Tokens per second over the whole cluster.
    TokensPerS(f64),
    /// Seconds per step.
    StepTimeS(f64),
    /// Model FLOPs utilisation, a fraction (railyard's FLOP count: 6 x parameters plus attention).
    Mfu(f64),
}

impl Measured {
    /// `tokens-per-s=X`, `step-time=X` (seconds) or `mfu=X` (a fraction, or a percentage with %).
    pub fn parse(s: &str) -> Result<Measured, String> {
        const VALID: &str =
            "valid: tokens-per-s=X, step-time=SECONDS, mfu=FRACTION or mfu=PERCENT%";
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}` has no `=`; {VALID}"))?;
        let value = value.trim();
        let (number, percent) = match value.strip_suffix('%') {
            Some(v) => (v.trim(), true),
            None => (value, false),
        };
        let x: f64 = number
            .parse()
            .map_err(|_| format!("`{value}` is not a number; {VALID}"))?;
        if !(x.is_finite() && x > 0.0) {
            return Err(format!("`{value}` must be above 0; {VALID}"));
        }
        let m = match (key.trim(), percent) {
            ("tokens-per-s", false) => Measured::TokensPerS(x),
            ("step-time", false) => Measured::StepTimeS(x),
            ("mfu", true) => Measured::Mfu(x / 100.0),
            ("mfu", false) => Measured::Mfu(x),
            (k, _) => return Err(format!("`{k}={value}`: {VALID}")),
        };
        if let Measured::Mfu(f) = m {
            if f > 1.0 {
                return Err(format!("mfu {value} is above 100%; {VALID}"));
            }
        }
        Ok(m)
    }

    /// The measured value on a scale that grows with the efficiency.
    fn rising(self) -> f64 {
        match self {
            Measured::TokensPerS(x) | Measured::Mfu(x) => x,
            Measured::StepTimeS(t) => -t,
        }
    }

    /// The same quantity of a simulated step, on the same scale.
    fn of(self, b: &Breakdown) -> f64 {
        match self {
            Measured::TokensPerS(_) => b.tokens_per_s,
            Measured::Mfu(_) => b.mfu,
            Measured::StepTimeS(_) => -b.step_time_s,
        }
    }

    /// `63,099 tokens/s`, `8.31 s per step`, `MFU 53.5%`.
    pub fn describe(self) -> String {
        match self {
            Measured::TokensPerS(x) => format!("{x:.0} tokens/s"),
            Measured::StepTimeS(t) => format!("{t} s per step"),
            Measured::Mfu(f) => format!("MFU {:.1}%", f * 100.0),
        }
    }

    /// The JSON key and value: `tokens_per_s`, `step_time_s` or `mfu`.
    pub fn json_pair(self) -> (&'static str, f64) {
        match self {
            Measured::TokensPerS(x) => ("tokens_per_s", x),
            Measured::StepTimeS(t) => ("step_time_s", t),
            Measured::Mfu(f) => ("mfu", f),
        }
    }
}

/// The fitted efficiency and the step it gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub efficiency: f64,
    pub breakdown: Breakdown,
    /// Steps simulated.
    pub probes: u32,
}

/// Why no efficiency reproduces the measurement.
#[derive(Debug, Clone, PartialEq)]
pub enum FitError<E> {
    /// A step could not be simulated.
    Step(E),
    /// Even at efficiency 1 the step is slower than measured: the network, the layout or the
    /// model's FLOPs differ from the measured run's.
    FasterThanPeak { at_peak: Box<Breakdown> },
    /// Even at the lowest efficiency the step is faster than measured.
    SlowerThanFloor { at_floor: Box<Breakdown> },
}

impl<E: fmt::Display> fmt::Display for FitError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FitError::Step(e) => e.fmt(f),
            FitError::FasterThanPeak { at_peak } => write!(
                f,
                "no efficiency reproduces it: even at 1.0 (the GPU's whole peak) the step takes {:.3} s, {:.0} tokens/s, MFU {:.1}%; the measured run must differ in network, layout or model",
                at_peak.step_time_s,
                at_peak.tokens_per_s,
                at_peak.mfu * 100.0
            ),
            FitError::SlowerThanFloor { at_floor } => write!(
                f,
                "no efficiency reproduces it: even at {MIN_EFFICIENCY} the step takes only {:.3} s, {:.0} tokens/s",
                at_floor.step_time_s, at_floor.tokens_per_s
            ),
        }
    }
}

/// The efficiency in [[`MIN_EFFICIENCY`], 1] whose step (`step(efficiency)`) matches `measured`,
/// by bisection to [`TOLERANCE`]; the returned step is the one at that efficiency.
pub fn fit_efficiency<E>(
    measured: Measured,
    mut step: impl FnMut(f64) -> Result<Breakdown, E>,
) -> Result<Fit, FitError<E>> {
    let target = measured.rising();
    let mut probes = 0;
    let mut probe = |e: f64| {
        probes += 1;
        step(e).map_err(FitError::Step)
    };
    let at_peak = probe(1.0)?;
    if measured.of(&at_peak) < target {
        return Err(FitError::FasterThanPeak {
            at_peak: Box::new(at_peak),
        });
    }
    let at_floor = probe(MIN_EFFICIENCY)?;
    if measured.of(&at_floor) > target {
        return Err(FitError::SlowerThanFloor {
            at_floor: Box::new(at_floor),
        });
    }
    let (mut lo, mut hi) = (MIN_EFFICIENCY, 1.0);
    while hi - lo > TOLERANCE {
        let mid = 0.5 * (lo + hi);
        if measured.of(&probe(mid)?) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let efficiency = 0.5 * (lo + hi);
    let breakdown = probe(efficiency)?;
    Ok(Fit {
        efficiency,
        breakdown,
        probes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A step of compute c/e plus n seconds of exposed communication, 1e6 tokens.
    fn step(c: f64, n: f64) -> impl FnMut(f64) -> Result<Breakdown, String> {
        move |e| {
            let t = c / e + n;
            Ok(Breakdown {
                compute_s: c / e,
                tensor_parallel_s: n,
                expert_parallel_s: 0.0,
                expert_parallel_total_s: None,
                pipeline_parallel_s: 0.0,
                context_parallel_s: None,
                data_parallel_exposed_s: 0.0,
                data_parallel_total_s: 0.0,
                pipeline_bubble_s: 0.0,
                optimizer_s: 0.0,
                compute_efficiency: 0.0,
                step_time_s: t,
                tokens_per_s: 1e6 / t,
                mfu: c / t,
                microbatches: 1,
                network_bytes_per_tier: BTreeMap::new(),
                model_state_bytes_per_gpu: 0.0,
                activation_bytes_per_gpu: 0.0,
                memory_bytes_per_gpu: 0.0,
                operations: Vec::new(),
            })
        }
    }

    /// Known answer: compute 2 s at efficiency 1, 1 s of communication; a 5 s step is 4 s of
    /// compute, so efficiency 0.5.
    #[test]
    fn bisection_recovers_a_known_efficiency() {
        for m in [Measured::StepTimeS(5.0), Measured::TokensPerS(1e6 / 5.0)] {
            let fit = fit_efficiency(m, step(2.0, 1.0)).unwrap();
            assert!((fit.efficiency - 0.5).abs() <= TOLERANCE, "{m:?}: {fit:?}");
            assert!((fit.breakdown.step_time_s - 5.0).abs() < 5.0 * 1e-3);
            assert!(fit.probes < 20, "{}", fit.probes);
        }
    }

    #[test]
    fn unreachable_measurements_say_why() {
        // Faster than the peak allows: 2 s compute + 1 s communication is at least 3 s.
        let e = fit_efficiency(Measured::StepTimeS(2.5), step(2.0, 1.0)).unwrap_err();
        assert!(matches!(e, FitError::FasterThanPeak { .. }));
        assert!(e.to_string().contains("even at 1.0"), "{e}");
        let e = fit_efficiency(Measured::StepTimeS(1e6), step(2.0, 1.0)).unwrap_err();
        assert!(matches!(e, FitError::SlowerThanFloor { .. }));
    }

    #[test]
    fn measurements_parse_with_their_units() {
        assert_eq!(
            Measured::parse("tokens-per-s=63099").unwrap(),
            Measured::TokensPerS(63099.0)
        );
        assert_eq!(
            Measured::parse("step-time=8.31").unwrap(),
            Measured::StepTimeS(8.31)
        );
        assert_eq!(Measured::parse("mfu=53.5%").unwrap(), Measured::Mfu(0.535));
        assert_eq!(Measured::parse("mfu=0.535").unwrap(), Measured::Mfu(0.535));
        for bad in ["mfu=120%", "tokens=5", "step-time=-1", "step-time=x", "mfu"] {
            let e = Measured::parse(bad).unwrap_err();
            assert!(e.contains("valid:"), "{bad}: {e}");
        }
    }
}
