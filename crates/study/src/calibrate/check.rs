//! `railyard check-nccl`: each logged size beside its prediction.

use super::logs::{above_bound, busbw_bound, fabric_ranks, points};
use super::{busbw_residual, predict, CalibrateError, Log, Point, Predicted};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::calibration::{Calibration, Residual};

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
    /// More than the tolerance faster than predicted (the model is pessimistic there), and not
    /// [`CheckRow::impossible`].
    pub above: bool,
    /// The run returned wrong data at this size: broken, whatever its time.
    pub wrong_data: bool,
    /// Measured above [`Check::bound_busbw_gbs`]: more than the design's NICs can carry, so the log
    /// did not run on this design.
    pub impossible: bool,
}

/// A log checked against a design.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub rows: Vec<CheckRow>,
    pub skipped: usize,
    pub tolerance: f64,
    pub residual: Residual,
    /// The most busbw the design's NICs allow ([`busbw_bound`]); `None` on one server.
    pub bound_busbw_gbs: Option<f64>,
}

impl Check {
    /// Rows that returned wrong data.
    pub fn wrong_data(&self) -> usize {
        self.rows.iter().filter(|r| r.wrong_data).count()
    }

    /// Rows measured above what the design allows.
    pub fn impossible(&self) -> usize {
        self.rows.iter().filter(|r| r.impossible).count()
    }

    /// Whether the run is sound and delivers what the design should: no wrong data, nothing above
    /// the design's bound, nothing below the tolerance.
    pub fn ok(&self) -> bool {
        self.below() == 0 && self.wrong_data() == 0 && self.impossible() == 0
    }

    /// Rows more than the tolerance below the prediction.
    pub fn below(&self) -> usize {
        self.rows.iter().filter(|r| r.below).count()
    }

    /// Rows more than the tolerance above the prediction.
    pub fn above(&self) -> usize {
        self.rows.iter().filter(|r| r.above).count()
    }

    /// One line: whether the run is within the tolerance of the prediction, and where not. Wrong
    /// data and rows above the design's bound come first: neither is a speed to compare.
    pub fn verdict(&self) -> String {
        let n = self.rows.len();
        let pct = self.tolerance * 100.0;
        let mut broken = Vec::new();
        let wrong: Vec<&CheckRow> = self.rows.iter().filter(|r| r.wrong_data).collect();
        if let Some(first) = wrong.first() {
            broken.push(format!(
                "DATA ERRORS: {} of {n} sizes returned wrong data (nccl-tests' #wrong or \
                 error column; first at {} bytes, line {}): the run is broken, not slow",
                wrong.len(),
                first.point.size,
                first.point.line
            ));
        }
        let worst = self.rows.iter().filter(|r| r.impossible).max_by(|x, y| {
            x.point
                .measured_busbw_gbs
                .total_cmp(&y.point.measured_busbw_gbs)
        });
        if let (Some(w), Some(bound)) = (worst, self.bound_busbw_gbs) {
            broken.push(format!(
                "IMPOSSIBLE FOR THIS DESIGN: {} of {n} sizes measured above {bound:.2} GB/s busbw, \
                 the most its NICs allow ({:.2} GB/s at {} bytes): the log did not run on this \
                 design; check --servers, --gpus-per-server, --nics-per-server, --tech",
                self.impossible(),
                w.point.measured_busbw_gbs,
                w.point.size
            ));
        }
        if !broken.is_empty() {
            return broken.join("; ");
        }
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
    let bound = busbw_bound(fabric, log.op);
    let ranks = fabric_ranks(fabric);
    let rows = points
        .into_iter()
        .zip(predicted)
        .map(|(point, predicted)| {
            // nccl-tests' busbw of the predicted time (bytes per microsecond / 1e3 = GB/s), as
            // `sim collective` prints it: not the log's rounded busbw scaled by the times.
            let predicted_busbw_gbs =
                point.size as f64 * point.op.busbw_factor(ranks) / (predicted.time_us * 1e3);
            let error = predicted.time_us / point.measured_us - 1.0;
            let impossible = above_bound(point.measured_busbw_gbs, bound);
            CheckRow {
                below: error < -tolerance,
                above: error > tolerance && !impossible,
                wrong_data: point.wrong_data,
                impossible,
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
        bound_busbw_gbs: bound,
    })
}
