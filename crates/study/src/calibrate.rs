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

use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::calibration::{self, Calibration, Fit, Residual};
use railyard_sim::collective::{
    self, AlgoChoice, CollectiveConfig, CollectiveError, Relay, SendRecvPattern,
};
use railyard_sim::fabric_net::{self, NetConfig, RoutedNet};
use railyard_sim::nccl::Collective;
use railyard_sim::nccl_tests::Run;
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_sim::SimError;
use std::fmt;

/// A parsed nccl-tests run, the name it is known by (its file) and the collective it measured
/// ([`collective_of`]).
#[derive(Debug, Clone, Copy)]
pub struct Log<'a> {
    pub name: &'a str,
    pub run: &'a Run,
    pub op: Collective,
}

/// The collective a log measured: `given` (`--op`) where the caller names one, else the header's
/// (`# Collective test starting: all_reduce_perf` or the program name), else all-reduce where every
/// row's busbw / algbw is all-reduce's 2(n-1)/n (no other collective has that factor on n > 2
/// ranks). Anything else cannot be told apart (all-gather and reduce-scatter share (n-1)/n) and is
/// [`CalibrateError::NoCollective`].
pub fn collective_of(
    name: &str,
    run: &Run,
    given: Option<Collective>,
) -> Result<Collective, CalibrateError> {
    if let Some(op) = given.or(run.collective) {
        return Ok(op);
    }
    let n = run.ranks().map(f64::from);
    let factors: Vec<f64> = run
        .rows
        .iter()
        .filter_map(|r| r.measurement())
        // Two decimals printed: from 1 GB/s up the rounding is within 0.5%.
        .filter(|m| m.algbw_gbs >= 1.0)
        .map(|m| m.busbw_gbs / m.algbw_gbs)
        .collect();
    if let Some(n) = n.filter(|&n| n > 2.0) {
        let ar = 2.0 * (n - 1.0) / n;
        if !factors.is_empty() && factors.iter().all(|f| (f / ar - 1.0).abs() < 0.02) {
            return Ok(Collective::AllReduce);
        }
    }
    Err(CalibrateError::NoCollective {
        log: name.to_string(),
    })
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
}

/// Why logs cannot be set against a design.
#[derive(Debug, Clone, PartialEq)]
pub enum CalibrateError {
    /// No logs were given.
    NoLogs,
    /// The log's header names no collective nccl-tests runs.
    NoCollective { log: String },
    /// The log ran on another number of ranks than the design has GPUs.
    Ranks {
        log: String,
        ranks: u32,
        design_gpus: u64,
    },
    /// The log has no row with bytes moved and a positive time.
    NoRows { log: String },
    /// The design's fabric has no NIC to calibrate.
    NoNic,
    /// The network could not be built.
    Net(SimError),
    /// A collective could not be simulated.
    Collective { log: String, error: CollectiveError },
    /// The simulation gave no time for a logged size.
    NoPrediction { log: String, line: usize, size: u64 },
}

impl fmt::Display for CalibrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibrateError::NoLogs => write!(f, "no nccl-tests log given"),
            CalibrateError::NoCollective { log } => write!(
                f,
                "{log}: the log does not say which collective it measured (no `# Collective test \
                 starting: NAME_perf` line); give --op (valid: {})",
                Collective::ALL.map(Collective::as_str).join(", ")
            ),
            CalibrateError::Ranks {
                log,
                ranks,
                design_gpus,
            } => write!(
                f,
                "{log}: the run has {ranks} ranks but the design has {design_gpus} GPUs; give the \
                 design it ran on (--servers, --gpus-per-server)"
            ),
            CalibrateError::NoRows { log } => {
                write!(f, "{log}: no row with bytes moved and a positive time")
            }
            CalibrateError::NoNic => write!(f, "the design has no NIC to calibrate"),
            CalibrateError::Net(e) => write!(f, "{e}"),
            CalibrateError::Collective { log, error } => write!(f, "{log}: {error}"),
            CalibrateError::NoPrediction { log, line, size } => write!(
                f,
                "{log}: line {line}: the model gives no time for {size} bytes"
            ),
        }
    }
}

impl std::error::Error for CalibrateError {}

/// The servers and GPUs per server a log ran on, as far as it says: hosts from its rank lines, GPUs
/// per server as ranks over hosts (`None` when there are no rank lines or they do not divide).
pub fn shape_of_log(run: &Run) -> Option<(u32, u32)> {
    let hosts = u32::try_from(run.hosts().len()).ok()?;
    let ranks = run.ranks()?;
    (hosts > 0 && ranks % hosts == 0).then(|| (hosts, ranks / hosts))
}

/// The points of `logs` (in log order, then row order) and how many rows were left out (0 bytes or
/// no positive time).
pub fn points(fabric: &Fabric, logs: &[Log<'_>]) -> Result<(Vec<Point>, usize), CalibrateError> {
    if logs.is_empty() {
        return Err(CalibrateError::NoLogs);
    }
    let gpus = fabric.servers.len() as u64 * u64::from(fabric.meta.gpus_per_server);
    let mut out = Vec::new();
    let mut skipped = 0;
    for (i, l) in logs.iter().enumerate() {
        let op = l.op;
        if let Some(ranks) = l.run.ranks() {
            if u64::from(ranks) != gpus {
                return Err(CalibrateError::Ranks {
                    log: l.name.to_string(),
                    ranks,
                    design_gpus: gpus,
                });
            }
        }
        let before = out.len();
        for r in &l.run.rows {
            match r.measurement() {
                Some(m) if r.size > 0 && m.time_us > 0.0 => out.push(Point {
                    log: i,
                    line: r.line,
                    op,
                    size: r.size,
                    measured_us: m.time_us,
                    measured_busbw_gbs: m.busbw_gbs,
                }),
                _ => skipped += 1,
            }
        }
        if out.len() == before {
            return Err(CalibrateError::NoRows {
                log: l.name.to_string(),
            });
        }
    }
    Ok((out, skipped))
}

/// One point's prediction: time, and the algorithm and protocol NCCL's tuner picked.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub time_us: f64,
    pub algorithm: &'static str,
    pub protocol: &'static str,
}

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
            op: points[first].op,
            algo: AlgoChoice::Auto,
            relay: Relay::auto(fabric),
            collnet: net.sharp(),
            send_recv: SendRecvPattern::Ring,
        };
        // Timed as the log's nccl-tests ran: `nGpus` GPUs per thread (`-g`), whose launches take the
        // place of NCCL's latency where longer.
        let sweep = collective::run(&net, &router, &cfg, &sizes, &mut |_| {})
            .map_err(|error| CalibrateError::Collective {
                log: l.name.to_string(),
                error,
            })?
            .driven_by_one_thread(l.run.gpus_per_process.unwrap_or(1).max(1));
        for &p in &mine {
            let row = sweep
                .rows
                .iter()
                .find(|r| r.row.size_bytes == points[p].size)
                .or_else(|| sweep.rows.get(sizes.binary_search(&points[p].size).ok()?));
            out[p] = row.map(|r| Predicted {
                time_us: r.row.time_us,
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

/// Fits a calibration to `logs` run on `fabric`.
pub fn calibrate(
    fabric: &Fabric,
    catalog: &Catalog,
    logs: &[Log<'_>],
) -> Result<Calibrated, CalibrateError> {
    let (points, skipped) = points(fabric, logs)?;
    let nominal = fabric_net::nic_payload_gbs(fabric).ok_or(CalibrateError::NoNic)?;
    let measured: Vec<f64> = points.iter().map(|p| p.measured_us).collect();
    let fit = calibration::fit(&measured, nominal, &mut |c| {
        predict(fabric, catalog, c, logs, &points)
            .map(|v| v.into_iter().map(|p| p.time_us).collect())
    })?;
    Ok(Calibrated {
        busbw_before: busbw_residual(&fit.before, &measured),
        busbw_after: busbw_residual(&fit.after, &measured),
        fit,
        nominal_nic_gbs: nominal,
        points,
        skipped,
    })
}

/// One row of a check: a logged size beside its prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    pub point: Point,
    pub predicted: Predicted,
    pub predicted_busbw_gbs: f64,
    /// measured / predicted busbw - 1 (negative: slower than the model).
    pub error: f64,
    /// More than the tolerance slower than predicted.
    pub below: bool,
    /// More than the tolerance faster than predicted (the model is pessimistic there).
    pub above: bool,
}

/// A log checked against a design.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub rows: Vec<CheckRow>,
    pub skipped: usize,
    pub tolerance: f64,
    pub residual: Residual,
}

impl Check {
    /// Rows more than the tolerance below the prediction.
    pub fn below(&self) -> usize {
        self.rows.iter().filter(|r| r.below).count()
    }

    /// Rows more than the tolerance above the prediction.
    pub fn above(&self) -> usize {
        self.rows.iter().filter(|r| r.above).count()
    }

    /// One line: whether the run is within the tolerance of the prediction, and where not.
    pub fn verdict(&self) -> String {
        let n = self.rows.len();
        let pct = self.tolerance * 100.0;
        match (self.below(), self.above()) {
            (0, 0) => format!("OK: all {n} sizes within {pct:.0}% of the prediction"),
            (0, a) => format!(
                "OK: no size more than {pct:.0}% below the prediction; {a} of {n} above it (the \
                 model is pessimistic there)"
            ),
            (b, _) => {
                let worst = self
                    .rows
                    .iter()
                    .filter(|r| r.below)
                    .min_by(|x, y| x.error.total_cmp(&y.error))
                    .map(|r| (r.point.size, r.error));
                let (size, e) = worst.unwrap_or((0, 0.0));
                format!(
                    "UNDERPERFORMS: {b} of {n} sizes more than {pct:.0}% below the prediction \
                     (worst {:.1}% at {size} bytes)",
                    e * 100.0
                )
            }
        }
    }
}

/// Sets every row of `log` beside its prediction on `fabric` with `calibration`; rows more than
/// `tolerance` (relative busbw) below the prediction are flagged.
pub fn check(
    fabric: &Fabric,
    catalog: &Catalog,
    calibration: &Calibration,
    log: Log<'_>,
    tolerance: f64,
) -> Result<Check, CalibrateError> {
    let logs = [log];
    let (points, skipped) = points(fabric, &logs)?;
    let predicted = predict(fabric, catalog, calibration, &logs, &points)?;
    let measured: Vec<f64> = points.iter().map(|p| p.measured_us).collect();
    let times: Vec<f64> = predicted.iter().map(|p| p.time_us).collect();
    let residual = busbw_residual(&times, &measured);
    let rows = points
        .into_iter()
        .zip(predicted)
        .map(|(point, predicted)| {
            let predicted_busbw_gbs =
                point.measured_busbw_gbs * point.measured_us / predicted.time_us;
            let error = predicted.time_us / point.measured_us - 1.0;
            CheckRow {
                below: error < -tolerance,
                above: error > tolerance,
                point,
                predicted,
                predicted_busbw_gbs,
                error,
            }
        })
        .collect();
    Ok(Check {
        rows,
        skipped,
        tolerance,
        residual,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_sim::nccl_tests::parse;

    fn log(header: &str, rows: &str) -> Run {
        let text = format!(
            "{header}# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n\
             #\n# Using devices\n\
             #  Rank  0 Group  0 Pid  1 on  a device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n\
             #  Rank  1 Group  0 Pid  2 on  a device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n\
             #  Rank  2 Group  0 Pid  3 on  b device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n\
             #  Rank  3 Group  0 Pid  4 on  b device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n\
             #\n\
             #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
             #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n\
             {rows}"
        );
        parse(&text).unwrap().runs.remove(0)
    }

    const ALL_REDUCE: &str = "\
           0             0     float     sum      -1     1.00    0.00    0.00      0     1.00    0.00    0.00      0
  1073741824     268435456     float     sum      -1  10000.0  107.37  161.06      0  10000.0  107.37  161.06      0
";

    /// The header names the collective; without it all-reduce is told by busbw/algbw = 2(n-1)/n,
    /// and anything else needs `--op`. The shape is read off the rank lines: 2 hosts x 2 GPUs.
    #[test]
    fn the_collective_and_shape_come_from_the_log() {
        let named = log("# Collective test starting: all_gather_perf\n", ALL_REDUCE);
        assert_eq!(collective_of("x", &named, None), Ok(Collective::AllGather));
        assert_eq!(
            collective_of("x", &named, Some(Collective::Broadcast)),
            Ok(Collective::Broadcast)
        );
        let bare = log("", ALL_REDUCE);
        assert_eq!(collective_of("x", &bare, None), Ok(Collective::AllReduce));
        assert_eq!(shape_of_log(&bare), Some((2, 2)));
        let gather = log(
            "",
            "  1073741824     268435456     float    none      -1  10000.0  107.37   80.53      0  10000.0  107.37   80.53      0\n",
        );
        let e = collective_of("g.log", &gather, None).unwrap_err();
        assert!(
            e.to_string().starts_with("g.log: the log does not say"),
            "{e}"
        );
    }

    /// The verdict: below the tolerance is underperforming (the worst size named), above it only
    /// says the model is pessimistic.
    #[test]
    fn the_verdict_flags_rows_below_the_prediction() {
        let row = |size: u64, error: f64| CheckRow {
            point: Point {
                log: 0,
                line: 1,
                op: Collective::AllReduce,
                size,
                measured_us: 1.0,
                measured_busbw_gbs: 1.0,
            },
            predicted: Predicted {
                time_us: 1.0,
                algorithm: "ring",
                protocol: "Simple",
            },
            predicted_busbw_gbs: 1.0,
            error,
            below: error < -0.2,
            above: error > 0.2,
        };
        let check = |rows: Vec<CheckRow>| Check {
            rows,
            skipped: 0,
            tolerance: 0.2,
            residual: Residual {
                median_abs: 0.0,
                worst_abs: 0.0,
            },
        };
        assert_eq!(
            check(vec![row(8, 0.1), row(16, -0.1)]).verdict(),
            "OK: all 2 sizes within 20% of the prediction"
        );
        assert!(check(vec![row(8, 0.5), row(16, 0.0)])
            .verdict()
            .starts_with("OK: no size more than 20% below the prediction; 1 of 2 above it"));
        assert_eq!(
            check(vec![row(8, -0.3), row(16, -0.5), row(32, 0.0)]).verdict(),
            "UNDERPERFORMS: 2 of 3 sizes more than 20% below the prediction (worst -50.0% at 16 bytes)"
        );
    }
}
