//! A cluster's own measurements, folded into the model: the rate one NIC delivers through NCCL and
//! the latency per operation NCCL's model leaves out (launch, proxy and software overheads of that
//! site's stack). `railyard calibrate` fits both to nccl-tests logs; `--calibration FILE` applies them
//! to every command.
//!
//! The NIC rate caps every NIC's cable in the fabric network, so it enters the simulation where the
//! NIC does (its share of contention included); the latency adds to every operation's time. The fit
//! minimises the squared log error of predicted against measured times over every logged size:
//! latency is solved for each NIC rate, the rate by golden-section search (Kiefer, "Sequential
//! minimax search for a maximum", Proc. AMS 1953), which needs one simulation per probe.
//!
//! A NIC rate is only seen where it limits: above the per-channel speed NCCL runs its channels at
//! (48 GB/s per 400G NIC, `tuning::ring_graph`) a faster NIC changes no prediction, and the fit
//! says the rate was not identifiable instead of inventing one.
//!
//! The search runs between 5% of the line rate and the line rate. A fit that ends at either end
//! says so ([`FitBound`]) instead of passing the end off as a fitted value: at the line rate with
//! the sizes the NIC limits still measured faster than predicted, the logs are faster than the
//! design allows (another NIC speed, more NICs, other servers); at 5% of it, something other than
//! the NIC holds them back.

use railyard_catalog::number;
use std::fmt;

/// The calibration file's format tag.
pub const FORMAT: &str = "railyard-calibration/1";

/// What a calibration sets; the default changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Calibration {
    /// GB/s one NIC delivers (per direction), or `None` for the line rate after headers.
    pub nic_gbs: Option<f64>,
    /// Microseconds added to every operation.
    pub latency_us: f64,
}

impl Calibration {
    /// The ranges a calibration may take, naming the key at fault.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if let Some(r) = self.nic_gbs {
            // From 1 MB/s: the file writes 4 decimals, and a rate it would write as 0 cannot be read
            // back.
            if crate::time::Rate::from_gbs(r).is_none() || !(0.001..=10_000.0).contains(&r) {
                return Err((
                    "calibration nic_gbs",
                    format!("{}: valid: 0.001 to 10000 GB/s", number(r)),
                ));
            }
        }
        let l = self.latency_us;
        // Added to every operation of every command: a negative latency could make a small
        // operation's time negative.
        if !(l.is_finite() && (0.0..=1_000_000.0).contains(&l)) {
            return Err((
                "calibration latency_us",
                format!("{}: valid: 0 to 1000000 us", number(l)),
            ));
        }
        Ok(())
    }

    /// What it sets, in words: `NIC 41.25 GB/s, latency +3.50 us`.
    pub fn describe(&self) -> String {
        let nic = match self.nic_gbs {
            Some(r) => format!("NIC {r:.2} GB/s"),
            None => "NIC at line rate".to_string(),
        };
        format!("{nic}, latency +{:.2} us", self.latency_us)
    }

    /// The calibration as its TOML file, with a comment of where it came from.
    pub fn to_toml(&self, comment: &str) -> String {
        let mut s = String::new();
        for line in comment.lines() {
            s.push_str("# ");
            s.push_str(line);
            s.push('\n');
        }
        s.push_str(&format!("format = \"{FORMAT}\"\n"));
        if let Some(r) = self.nic_gbs {
            s.push_str(&format!("nic_gbs = {r:.4}\n"));
        }
        s.push_str(&format!("latency_us = {:.4}\n", self.latency_us));
        s
    }

    /// Reads a calibration file; errors name the key (and line, from the TOML reader).
    pub fn from_toml(text: &str) -> Result<Calibration, String> {
        let v: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        for k in v.keys() {
            if !["format", "nic_gbs", "latency_us"].contains(&k.as_str()) {
                return Err(format!(
                    "unknown key `{k}`; valid: format, nic_gbs, latency_us"
                ));
            }
        }
        match v.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(format!(
                    "format `{}` is not one railyard reads; valid: {FORMAT}",
                    other.escape_debug()
                ))
            }
            None => return Err(format!("no `format`; expected format = \"{FORMAT}\"")),
        }
        let number = |k: &str| -> Result<Option<f64>, String> {
            match v.get(k) {
                None => Ok(None),
                Some(x) => x
                    .as_float()
                    .or_else(|| x.as_integer().map(|i| i as f64))
                    .map(Some)
                    .ok_or_else(|| format!("{k}: expected a number, got {x}")),
            }
        };
        let c = Calibration {
            nic_gbs: number("nic_gbs")?,
            latency_us: number("latency_us")?.unwrap_or(0.0),
        };
        c.check().map_err(|(k, m)| format!("{k}: {m}"))?;
        Ok(c)
    }
}

/// How far predictions are from measurements: relative errors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Residual {
    pub median_abs: f64,
    pub worst_abs: f64,
}

impl Residual {
    pub fn of(predicted: &[f64], measured: &[f64]) -> Residual {
        let mut e: Vec<f64> = predicted
            .iter()
            .zip(measured)
            .map(|(p, m)| ((p - m) / m).abs())
            .collect();
        e.sort_by(f64::total_cmp);
        Residual {
            median_abs: e.get(e.len() / 2).copied().unwrap_or(0.0),
            worst_abs: e.last().copied().unwrap_or(0.0),
        }
    }
}

impl fmt::Display for Residual {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "median |error| {:.1}%, worst {:.1}%",
            self.median_abs * 100.0,
            self.worst_abs * 100.0
        )
    }
}

/// Where a fit stopped at an end of the NIC rates it searches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FitBound {
    /// At the line rate (or where the NIC stops limiting below it), with the `sizes` sizes whose
    /// time the NIC's rate enters (a NIC of half the line rate slows them by more than 0.5%)
    /// measured `faster` than predicted (the median of predicted / measured time - 1 over them,
    /// latency included), by more than [`LINE_RATE_MARGIN`].
    LineRate { faster: f64, sizes: usize },
    /// At the lowest rate searched, `rate_gbs` (5% of the line rate).
    Floor { rate_gbs: f64 },
}

/// How much faster than the line-rate prediction the sizes the NIC's rate enters must be measured
/// (median) before a fit at the line rate counts as stopped there rather than fitted there: 20%,
/// the tolerance `check-nccl` holds a log to by default. Within it the line-rate prediction matches
/// as well as the model claims to (OCI's two-node A100 RoCE log on an HDR design is 7% faster);
/// beyond it, the design is slower than the logs (issue 309's NDR log on HDR is 42% faster).
pub const LINE_RATE_MARGIN: f64 = 0.20;

/// A fitted calibration and how well the model matches before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub calibration: Calibration,
    /// Whether the measurements pinned the NIC rate (false: the NIC never limited a logged size).
    pub nic_identified: bool,
    /// Whether a latency was fitted ([`fit_with`]); false: it stays 0.
    pub latency_fitted: bool,
    pub before: Vec<f64>,
    pub after: Vec<f64>,
    pub residual_before: Residual,
    pub residual_after: Residual,
    /// Where the fit stopped at an end of its search; `None` for a fit inside it.
    pub bound: Option<FitBound>,
}

/// Fits a NIC rate in (0, `nominal_nic_gbs`] and a latency to `measured` times (us), where
/// `predict` gives the model's times for a calibration (latency not yet added). Sizes whose
/// measured time is not positive must be left out by the caller.
pub fn fit<E>(
    measured: &[f64],
    nominal_nic_gbs: f64,
    predict: &mut dyn FnMut(&Calibration) -> Result<Vec<f64>, E>,
) -> Result<Fit, E> {
    fit_with(measured, nominal_nic_gbs, true, predict)
}

/// [`fit`], with the latency fitted only where `fit_latency`: where every measured size is in the
/// bandwidth regime, a latency added to all of them cannot be told from a slower NIC (an affine fit
/// of 1-4 GiB rows put 3.9 ms on every operation, an 8-byte one included), so it stays 0.
pub fn fit_with<E>(
    measured: &[f64],
    nominal_nic_gbs: f64,
    fit_latency: bool,
    predict: &mut dyn FnMut(&Calibration) -> Result<Vec<f64>, E>,
) -> Result<Fit, E> {
    let base = Calibration::default();
    let before = predict(&base)?;
    // For a NIC rate, the best latency and its cost.
    let score = |pred: &[f64]| -> (f64, f64) {
        if fit_latency {
            best_latency(pred, measured)
        } else {
            (0.0, log_cost(pred, measured, 0.0))
        }
    };
    let at_nominal = predict(&Calibration {
        nic_gbs: Some(nominal_nic_gbs),
        latency_us: 0.0,
    })?;
    // Golden-section search over log(rate) in [5% of nominal, nominal].
    let floor = (0.05 * nominal_nic_gbs).ln();
    let (mut lo, mut hi) = (floor, nominal_nic_gbs.ln());
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let mut eval = |x: f64| -> Result<(f64, f64, Vec<f64>), E> {
        let p = predict(&Calibration {
            nic_gbs: Some(x.exp()),
            latency_us: 0.0,
        })?;
        let (d, cost) = score(&p);
        Ok((cost, d, p))
    };
    let (mut c, mut d) = (hi - phi * (hi - lo), lo + phi * (hi - lo));
    let (mut fc, mut fd) = (eval(c)?, eval(d)?);
    for _ in 0..60 {
        if hi - lo < 1e-7 {
            break;
        }
        if fc.0 <= fd.0 {
            hi = d;
            d = c;
            fd = fc;
            c = hi - phi * (hi - lo);
            fc = eval(c)?;
        } else {
            lo = c;
            c = d;
            fc = fd;
            d = lo + phi * (hi - lo);
            fd = eval(d)?;
        }
    }
    let (rate, (cost, latency, pred)) = if fc.0 <= fd.0 { (c, fc) } else { (d, fd) };
    // The nominal rate itself (the end of the interval) may be best.
    let (nominal_latency, nominal_cost) = score(&at_nominal);
    let (rate, latency, pred) = if nominal_cost <= cost {
        (nominal_nic_gbs.ln(), nominal_latency, at_nominal.clone())
    } else {
        (rate, latency, pred)
    };
    // Identified only if the fitted rate changes some prediction against the nominal one.
    let nic_identified = pred
        .iter()
        .zip(&at_nominal)
        .any(|(a, b)| (a - b).abs() > 1e-9 * b.abs().max(1.0));
    let calibration = Calibration {
        nic_gbs: nic_identified.then_some(rate.exp()),
        latency_us: latency,
    };
    let after: Vec<f64> = pred.iter().map(|p| p + latency).collect();
    let bound = if !nic_identified {
        // At the line rate, or where the NIC stops limiting below it (the model's channels may be
        // slower than the NIC). The sizes the NIC's rate enters are those a NIC of half the line
        // rate slows by more than 0.5%.
        let slower = predict(&Calibration {
            nic_gbs: Some(nominal_nic_gbs * 0.5),
            latency_us: 0.0,
        })?;
        let mut faster: Vec<f64> = slower
            .iter()
            .zip(&at_nominal)
            .zip(after.iter().zip(measured))
            .filter(|((s, n), _)| **s > **n * 1.005)
            .map(|(_, (a, m))| a / m - 1.0)
            .collect();
        faster.sort_by(f64::total_cmp);
        faster
            .get(faster.len() / 2)
            .filter(|&&f| f > LINE_RATE_MARGIN)
            .map(|&f| FitBound::LineRate {
                faster: f,
                sizes: faster.len(),
            })
    } else if rate - floor < 1e-4 {
        Some(FitBound::Floor {
            rate_gbs: rate.exp(),
        })
    } else {
        None
    };
    Ok(Fit {
        calibration,
        nic_identified,
        latency_fitted: fit_latency,
        bound,
        residual_before: Residual::of(&before, measured),
        residual_after: Residual::of(&after, measured),
        before,
        after,
    })
}

/// sum (ln(p + d) - ln(m))^2 over the sizes: the fit's cost of latency `d` added to `pred`.
fn log_cost(pred: &[f64], measured: &[f64], d: f64) -> f64 {
    pred.iter()
        .zip(measured)
        .map(|(p, m)| {
            let x = p + d;
            if x <= 0.0 {
                f64::INFINITY
            } else {
                (x.ln() - m.ln()).powi(2)
            }
        })
        .sum()
}

/// The latency d minimising sum (ln(p + d) - ln(m))^2, by golden-section search between 0 (a
/// calibration only adds latency the model leaves out; a negative one could make a small operation
/// of another command take negative time) and 10 ms, and that sum.
fn best_latency(pred: &[f64], measured: &[f64]) -> (f64, f64) {
    let cost = |d: f64| log_cost(pred, measured, d);
    let (mut lo, mut hi) = (0.0, 10_000.0);
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (hi - phi * (hi - lo), lo + phi * (hi - lo));
    let (mut fc, mut fd) = (cost(c), cost(d));
    for _ in 0..200 {
        if hi - lo < 1e-9 {
            break;
        }
        if fc <= fd {
            hi = d;
            d = c;
            fd = fc;
            c = hi - phi * (hi - lo);
            fc = cost(c);
        } else {
            lo = c;
            c = d;
            fc = fd;
            d = lo + phi * (hi - lo);
            fd = cost(d);
        }
    }
    let x = (lo + hi) / 2.0;
    // At the bound the search ends a hair above it: none is none.
    let (c0, cx) = (cost(0.0), cost(x));
    if c0 <= cx {
        (0.0, c0)
    } else {
        (x, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy model: time = 10 us + bytes / min(rate, 48) GB/s.
    fn toy(sizes: &[f64], c: &Calibration) -> Vec<f64> {
        let r = c.nic_gbs.unwrap_or(50.0).min(48.0);
        sizes.iter().map(|s| 10.0 + s / (r * 1e3)).collect()
    }

    #[test]
    fn a_known_rate_and_latency_are_recovered() {
        let sizes = [8.0, 1e3, 1e5, 1e7, 1e9];
        let truth = Calibration {
            nic_gbs: Some(31.0),
            latency_us: 7.5,
        };
        let measured: Vec<f64> = toy(&sizes, &truth).iter().map(|t| t + 7.5).collect();
        let f = fit(&measured, 50.0, &mut |c| Ok::<_, ()>(toy(&sizes, c))).unwrap();
        let r = f.calibration.nic_gbs.unwrap();
        assert!((r / 31.0 - 1.0).abs() < 1e-4, "{r}");
        assert!((f.calibration.latency_us - 7.5).abs() < 1e-3, "{f:?}");
        assert!(f.residual_after.worst_abs < 1e-4);
    }

    #[test]
    fn a_rate_the_model_never_reaches_is_not_invented() {
        let sizes = [8.0, 1e5, 1e9];
        let measured: Vec<f64> = toy(&sizes, &Calibration::default())
            .iter()
            .map(|t| t + 2.0)
            .collect();
        let f = fit(&measured, 50.0, &mut |c| Ok::<_, ()>(toy(&sizes, c))).unwrap();
        assert_eq!(f.calibration.nic_gbs, None);
        assert!(!f.nic_identified);
        assert!((f.calibration.latency_us - 2.0).abs() < 1e-3);
    }

    /// Logs faster than the line rate allows stop the fit at the line rate, logs slower than 5% of
    /// it at the floor; both are said, not passed off as a fitted rate.
    #[test]
    fn a_fit_that_stops_at_a_bound_says_so() {
        let sizes = [8.0, 1e5, 1e7, 1e9];
        // A model whose NIC limits up to 200 GB/s; the design's line rate is 40 GB/s.
        let model = |c: &Calibration| -> Vec<f64> {
            let r = c.nic_gbs.unwrap_or(40.0).min(200.0);
            sizes.iter().map(|s| 10.0 + s / (r * 1e3)).collect()
        };
        let at = |rate: f64| {
            model(&Calibration {
                nic_gbs: Some(rate),
                latency_us: 0.0,
            })
        };
        let f = fit(&at(60.0), 40.0, &mut |c| Ok::<_, ()>(model(c))).unwrap();
        match f.bound {
            Some(FitBound::LineRate { faster, sizes }) => {
                // 100 kB, 10 MB and 1 GB; 10 MB: 10 + 250 us predicted against 10 + 166.7 us
                // measured.
                assert_eq!(sizes, 3);
                assert!(faster > 0.45 && faster < 0.5, "{faster}");
            }
            other => panic!("{other:?}"),
        }
        // Measured at the line rate itself: fitted there, no bound.
        let f = fit(&at(40.0), 40.0, &mut |c| Ok::<_, ()>(model(c))).unwrap();
        assert_eq!(f.bound, None);
        let f = fit(&at(0.5), 40.0, &mut |c| Ok::<_, ()>(model(c))).unwrap();
        match f.bound {
            Some(FitBound::Floor { rate_gbs }) => assert!((rate_gbs - 2.0).abs() < 1e-3),
            other => panic!("{other:?}"),
        }
        // Inside the range: no bound.
        let f = fit(&at(20.0), 40.0, &mut |c| Ok::<_, ()>(model(c))).unwrap();
        assert_eq!(f.bound, None);
    }

    #[test]
    fn the_file_round_trips_and_bad_files_name_the_key() {
        let c = Calibration {
            nic_gbs: Some(41.25),
            latency_us: 3.5,
        };
        assert_eq!(
            Calibration::from_toml(&c.to_toml("from two logs")).unwrap(),
            c
        );
        let e = Calibration::from_toml("format = \"railyard-calibration/1\"\nnic_gbs = -3\n")
            .unwrap_err();
        assert!(e.contains("nic_gbs"), "{e}");
        let e = Calibration::from_toml("format = \"x\"\n").unwrap_err();
        assert!(e.contains("railyard-calibration/1"), "{e}");
        let e =
            Calibration::from_toml("format = \"railyard-calibration/1\"\nspeed = 3\n").unwrap_err();
        assert!(e.contains("unknown key `speed`"), "{e}");
    }
}
