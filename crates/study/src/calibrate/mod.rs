//! A cluster's own nccl-tests logs against the model: `railyard calibrate` fits a
//! [`Calibration`] (the rate a NIC delivers, the latency NCCL's model leaves out) to them, and
//! `railyard check-nccl` sets each logged size beside its prediction ("is my number normal?").
//!
//! Every logged row with bytes moved and a positive time is a point; rows of 0 bytes (sizes below
//! the rank count) are left out. A prediction is `sim collective`'s: the collective the log's
//! header names, on the design's fabric, D-mod-K routing, PXN as NCCL sets it, algorithm and
//! protocol per size as NCCL's tuner picks them. Errors are relative errors of busbw (at one size
//! busbw scales as 1 / time, so the predicted busbw is the measured one times measured / predicted
//! time).
//!
//! Before any number is compared the log is held to the design and to itself: the collective the
//! header names wins over `--op`, and without a header the rows' busbw / algbw must be `--op`'s
//! factor ([`collective_of`]); the hosts x GPUs per host of its rank lines must be the design's
//! servers x GPUs per server ([`points`]); a row that returned wrong data is broken, not slow
//! (refused by [`calibrate`], flagged by [`check`]); a row above the busbw the design's NICs can carry
//! ([`busbw_bound`]) did not run on this design.

mod check;
mod error;
mod logs;

use logs::above_bound;

pub use check::{check, Check, CheckRow};
pub use error::CalibrateError;
pub use logs::{busbw_bound, collective_of, factor_of_rows, points, shape_of_log};
pub use logs::{nics_for_gpus, other_gpu, ranks_of};
/// The vocabulary a front end parses a calibration's flags and logs into: nccl-tests logs (one
/// parser, `railyard_sim::nccl_tests`), the collectives and protocols `--op` and `--proto` name,
/// the algorithms `--algo` leaves NCCL, and what a fit's residual and calibration hold.
pub use railyard_sim::calibration::Residual;
pub use railyard_sim::collective::CollectiveError;
pub use railyard_sim::nccl::{Collective, Protocols};
pub use railyard_sim::nccl_tests::{parse as parse_log, Run};

use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::calibration::{self, Calibration, Fit};
use railyard_sim::collective::{self, AlgoChoice, CollectiveConfig, Relay};
use railyard_sim::fabric_net::{self, NetConfig, RoutedNet};
use railyard_sim::routing::{RoutingConfig, RoutingKind};

/// A parsed nccl-tests run, the name it is known by (its file) and the collective it measured
/// ([`collective_of`]).
#[derive(Debug, Clone, Copy)]
pub struct Log<'a> {
    pub name: &'a str,
    pub run: &'a Run,
    pub op: Collective,
    /// What the run's environment left NCCL to choose from.
    pub nccl: NcclEnv,
}

/// The algorithms and protocols a run's environment left NCCL (`NCCL_ALGO`, `NCCL_PROTO`; the
/// `--algo` and `--proto` of `calibrate` and `check-nccl`). A log does not record them, and a run
/// with `NCCL_ALGO=Ring` (the usual way to measure the network alone) is predicted as a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NcclEnv {
    pub algo: AlgoChoice,
    pub protocols: Protocols,
}

impl Default for NcclEnv {
    /// NCCL's defaults: its own choice of every algorithm and protocol.
    fn default() -> NcclEnv {
        NcclEnv {
            algo: AlgoChoice::Auto,
            protocols: Protocols::ALL,
        }
    }
}

/// One logged size: where it is, what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index of the log in the list given.
    pub log: usize,
    /// 1-based line of the row in its log.
    pub line: usize,
    pub op: Collective,
    pub size: u64,
    pub measured_us: f64,
    pub measured_busbw_gbs: f64,
    /// The run returned wrong data at this size ([`Run::wrong_data`]).
    pub wrong_data: bool,
}

/// One point's prediction: time, and the algorithm and protocol NCCL's tuner picked.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub time_us: f64,
    /// The part of `time_us` that does not grow with the size (`RowResult::latency_us`).
    pub latency_us: f64,
    pub algorithm: &'static str,
    pub protocol: &'static str,
}

/// The largest median busbw error a calibration leaves without a warning, 20%: the tolerance
/// `check-nccl` holds a log to by default. Past it a NIC rate and a latency do not describe the
/// logs on this design, and every command calibrated with it carries the mismatch
/// ([`Calibrated::poor_fit`]).
pub const POOR_FIT: f64 = 0.20;

/// The share of a predicted time its latency must reach, at one logged size at least, for a fit to
/// tell an added latency from a slower NIC: below it at every size, the logs are all in the
/// bandwidth regime and the latency is left at 0 ([`calibration::fit_with`]).
pub const LATENCY_REGIME_SHARE: f64 = 0.10;

/// The model's prediction of every point on `fabric` with `calibration` applied.
pub fn predict(
    fabric: &Fabric,
    catalog: &Catalog,
    calibration: &Calibration,
    logs: &[Log<'_>],
    points: &[Point],
) -> Result<Vec<Predicted>, CalibrateError> {
    let config = NetConfig {
        calibration: *calibration,
        ..NetConfig::default()
    };
    let RoutedNet { net, router } = RoutedNet::new(
        fabric,
        catalog,
        &config,
        RoutingKind::DModK,
        RoutingConfig::default(),
    )
    .map_err(CalibrateError::Net)?;
    let mut out: Vec<Option<Predicted>> = vec![None; points.len()];
    for (i, l) in logs.iter().enumerate() {
        let mine: Vec<usize> = (0..points.len()).filter(|&p| points[p].log == i).collect();
        let Some(&first) = mine.first() else { continue };
        let mut sizes: Vec<u64> = mine.iter().map(|&p| points[p].size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let cfg = CollectiveConfig {
            relay: Relay::auto(fabric, catalog),
            collnet: net.sharp(),
            algo: l.nccl.algo,
            protocols: l.nccl.protocols,
            ..CollectiveConfig::new(points[first].op)
        };
        // Timed as the log's nccl-tests ran: `nGpus` GPUs per thread (`-g`), whose launches take the
        // place of NCCL's latency where longer.
        let sweep = collective::run(&net, &router, &cfg, &sizes, &mut |_| {})
            .and_then(|s| s.driven_by_one_thread(l.run.gpus_per_process.unwrap_or(1).max(1)))
            .map_err(|error| CalibrateError::Collective {
                log: l.name.to_string(),
                error,
            })?;
        for &p in &mine {
            let row = sweep
                .rows
                .iter()
                .find(|r| r.row.size_bytes == points[p].size)
                .or_else(|| sweep.rows.get(sizes.binary_search(&points[p].size).ok()?));
            out[p] = row.map(|r| Predicted {
                time_us: r.row.time_us,
                latency_us: r.latency_us,
                algorithm: r.algorithm,
                protocol: r.protocol.as_str(),
            });
        }
    }
    out.into_iter()
        .zip(points)
        .map(|(p, pt)| {
            p.filter(|p| p.time_us > 0.0 && p.time_us.is_finite())
                .ok_or_else(|| CalibrateError::NoPrediction {
                    log: logs[pt.log].name.to_string(),
                    line: pt.line,
                    size: pt.size,
                })
        })
        .collect()
}

/// The relative errors of predicted busbw against measured busbw, from times (busbw at one size
/// scales as 1 / time).
pub fn busbw_residual(predicted_us: &[f64], measured_us: &[f64]) -> Residual {
    let inv = |v: &[f64]| v.iter().map(|t| 1.0 / t).collect::<Vec<f64>>();
    Residual::of(&inv(predicted_us), &inv(measured_us))
}

/// A calibration fitted to logs, with the points it used.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    pub fit: Fit,
    /// The NIC payload rate the fit searched below, GB/s.
    pub nominal_nic_gbs: f64,
    pub points: Vec<Point>,
    /// Rows left out (0 bytes or no positive time).
    pub skipped: usize,
    /// busbw residuals before and after (the fit's own residuals are of time).
    pub busbw_before: Residual,
    pub busbw_after: Residual,
}

impl Calibrated {
    /// Where the fitted NIC rate is below what a logged row needs: the busbw bound scales with the
    /// NIC rate, so a row measured at busbw B where the bound at line rate is U needs at least
    /// `nominal x B / U` per NIC. The time-weighted fit can settle below it (issue 309's 2 x H100
    /// all-reduce: 27.98 GB/s, while its 16 GiB row needs 31.3), and the calibrated model then
    /// runs that size slower than the log measured it. The neediest row: (index into `points`,
    /// the rate it needs, GB/s).
    pub fn nic_below_needed(&self, fabric: &Fabric) -> Option<(usize, f64)> {
        let fitted = self.fit.calibration.nic_gbs?;
        let (i, needed) = self
            .points
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.wrong_data)
            .filter_map(|(i, p)| {
                let bound = busbw_bound(fabric, p.op)?;
                (bound > 0.0).then(|| (i, self.nominal_nic_gbs * p.measured_busbw_gbs / bound))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        // Beyond the two decimals nccl-tests prints and calibrate writes.
        (fitted < needed * 0.999).then_some((i, needed))
    }

    /// Where the fit leaves the median size more than [`POOR_FIT`] off (busbw): the worst size's
    /// (log, line, size, predicted / measured busbw - 1).
    pub fn poor_fit(&self) -> Option<(usize, usize, u64, f64)> {
        if self.busbw_after.median_abs <= POOR_FIT {
            return None;
        }
        let measured = self.points.iter().map(|p| p.measured_us);
        let (i, err) = self
            .fit
            .after
            .iter()
            .zip(measured)
            .map(|(p, m)| m / p - 1.0)
            .enumerate()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
        let p = &self.points[i];
        Some((p.log, p.line, p.size, err))
    }
}

/// Fits a calibration to `logs` run on `fabric`.
pub fn calibrate(
    fabric: &Fabric,
    catalog: &Catalog,
    logs: &[Log<'_>],
) -> Result<Calibrated, CalibrateError> {
    let (points, skipped) = points(fabric, logs)?;
    for (i, l) in logs.iter().enumerate() {
        let mine = || points.iter().filter(move |p| p.log == i);
        let wrong: Vec<(usize, u64)> = mine()
            .filter(|p| p.wrong_data)
            .map(|p| (p.line, p.size))
            .collect();
        if !wrong.is_empty() {
            return Err(CalibrateError::WrongData {
                log: l.name.to_string(),
                rows: wrong,
            });
        }
    }
    let nominal = fabric_net::nic_payload_gbs(fabric).ok_or(CalibrateError::NoNic)?;
    let measured: Vec<f64> = points.iter().map(|p| p.measured_us).collect();
    let fit_latency = predict(fabric, catalog, &Calibration::default(), logs, &points)?
        .iter()
        .any(|p| p.latency_us >= LATENCY_REGIME_SHARE * p.time_us);
    let fit = calibration::fit_with(&measured, nominal, fit_latency, &mut |c| {
        predict(fabric, catalog, c, logs, &points)
            .map(|v| v.into_iter().map(|p| p.time_us).collect())
    })?;
    if let Some(bound) = fit.bound {
        return Err(CalibrateError::FitBound {
            bound,
            nominal_gbs: nominal,
        });
    }
    for (i, l) in logs.iter().enumerate() {
        let mine = || points.iter().filter(move |p| p.log == i);
        let bound = busbw_bound(fabric, l.op);
        let over: Vec<(usize, u64, f64)> = mine()
            .filter(|p| above_bound(p.measured_busbw_gbs, bound))
            .map(|p| (p.line, p.size, p.measured_busbw_gbs))
            .collect();
        if let (Some(bound_gbs), false) = (bound, over.is_empty()) {
            return Err(CalibrateError::Impossible {
                log: l.name.to_string(),
                bound_gbs,
                rows: over,
            });
        }
    }
    Ok(Calibrated {
        busbw_before: busbw_residual(&fit.before, &measured),
        busbw_after: busbw_residual(&fit.after, &measured),
        fit,
        nominal_nic_gbs: nominal,
        points,
        skipped,
    })
}

#[cfg(test)]
mod tests;
