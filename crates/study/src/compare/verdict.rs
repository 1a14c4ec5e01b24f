//! Which design is best on each axis and by how much: the verdicts a comparison opens with, and
//! the decision (issue 36 item 4): a design is named ahead only where its figure's error band
//! (`band`) does not overlap the next design's; otherwise the designs are "tied within model
//! error", and the decision says which figure decides.

use super::band::ErrorBand;
use super::Compared;
use railyard_plan::output::thousands;
use serde::Serialize;

/// Which design is best on one axis and by how much: numbers only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// E.g. "network cost".
    pub axis: String,
    /// Whether lower is better on this axis.
    pub lower_is_better: bool,
    /// The best design(s) (more than one on a tie: the same value as printed, or an error band
    /// that overlaps the best design's).
    pub best: Vec<String>,
    pub best_value: f64,
    /// The next best design and its value, when another design differs beyond the error band.
    pub next: Option<(String, f64)>,
    /// How far the best is ahead of the next, percent of the next's value.
    pub margin_percent: Option<f64>,
    /// Designs in `best` only because their error bands overlap the best's: no winner on this
    /// axis within the model's error.
    pub tied_within_error: bool,
    /// The half-width of the best design's error band, percent, where the figure is predicted
    /// (none for figures counted from the catalog: cost, power).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_band_percent: Option<f64>,
    /// The sentence the report and the text print.
    pub text: String,
}

/// The decision of a comparison: the winner on the figure that decides, or none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// The design ahead on `decided_by` beyond the model's error; `None` on a tie.
    pub winner: Option<String>,
    /// The designs are tied within model error (or equal) on `decided_by`.
    pub tied: bool,
    /// The axis that decides (`DECIDING`: the first the comparison has).
    pub decided_by: String,
    /// The sentence the report and the text print.
    pub text: String,
}

/// The figures that decide a comparison, first found first: what a token costs where a training
/// step was predicted (the whole cluster's where its price is known, else the network's), else the
/// network's price.
pub const DECIDING: [&str; 3] = [
    "cluster cost per million tokens",
    "network cost per million tokens",
    "network cost",
];

/// The axes a buyer reads: (name, lower is better, unit formatter, value, the figure's key in
/// `Perf::error_band` where it is predicted).
type Axis = (
    &'static str,
    bool,
    fn(f64) -> String,
    fn(&Compared) -> Option<f64>,
    Option<&'static str>,
);

const AXES: [Axis; 8] = [
    (
        "network cost",
        true,
        |x| format!("${}", thousands(x)),
        |d| Some(d.summary.cost_usd.total),
        None,
    ),
    (
        "network power",
        true,
        |x| format!("{x:.2} kW"),
        |d| Some(d.summary.power_w.total / 1000.0),
        None,
    ),
    (
        "all-reduce busbw at 1 GiB",
        false,
        |x| format!("{x:.1} GB/s"),
        |d| d.performance.allreduce_busbw_1g_gbs,
        Some("allreduce_busbw_1g_gbs"),
    ),
    (
        "all-to-all busbw at 1 GiB",
        false,
        |x| format!("{x:.1} GB/s"),
        |d| d.performance.alltoall_busbw_1g_gbs,
        Some("alltoall_busbw_1g_gbs"),
    ),
    (
        "training step time",
        true,
        |x| format!("{x:.3} s"),
        |d| d.performance.step_time_s,
        Some("step_time_s"),
    ),
    (
        "training throughput",
        false,
        |x| format!("{} tokens/s", thousands(x)),
        |d| d.performance.tokens_per_s,
        Some("tokens_per_s"),
    ),
    (
        "network cost per million tokens",
        true,
        |x| format!("${x:.4}"),
        |d| d.performance.network_usd_per_million_tokens,
        Some("network_usd_per_million_tokens"),
    ),
    (
        "cluster cost per million tokens",
        true,
        |x| format!("${x:.4}"),
        |d| d.performance.cluster_usd_per_million_tokens,
        Some("cluster_usd_per_million_tokens"),
    ),
];

/// One design's figure on an axis: its label, value and error band (none where not predicted).
struct Val<'a> {
    label: &'a str,
    x: f64,
    band: Option<&'a ErrorBand>,
}

/// For each axis where at least two designs have a value: the best design(s), the value, and how
/// far ahead of the next best it is. A design whose error band overlaps the best's ties with it:
/// a lead inside the model's error is no lead. Generated from the numbers alone.
pub fn verdicts(designs: &[Compared]) -> Vec<Verdict> {
    AXES.iter().filter_map(|a| verdict(designs, a)).collect()
}

fn verdict(designs: &[Compared], a: &Axis) -> Option<Verdict> {
    let (get, key) = (a.3, a.4);
    let vals: Vec<Val> = designs
        .iter()
        .filter_map(|d| {
            get(d).filter(|x| x.is_finite()).map(|x| Val {
                label: d.label.as_str(),
                x,
                band: key.and_then(|k| d.performance.error_band.get(k)),
            })
        })
        .collect();
    judge(a, &vals)
}

/// The verdict on the axis named `axis` (one of the comparison's: "network cost per million
/// tokens", ...) of figures given without their designs: (label, value, error band), for a front
/// end that holds only the figures (the web app's comparison). `None`: no such axis, or fewer
/// than two figures.
pub fn verdict_on(axis: &str, figures: &[(String, f64, Option<ErrorBand>)]) -> Option<Verdict> {
    let a = AXES.iter().find(|a| a.0 == axis)?;
    let vals: Vec<Val> = figures
        .iter()
        .filter(|f| f.1.is_finite())
        .map(|(label, x, band)| Val {
            label,
            x: *x,
            band: band.as_ref(),
        })
        .collect();
    judge(a, &vals)
}

/// The verdict of one axis on its designs' figures.
fn judge(&(axis, lower, unit, _, _): &Axis, vals: &[Val]) -> Option<Verdict> {
    if vals.len() < 2 {
        return None;
    }
    let better = |a: f64, b: f64| if lower { a < b } else { a > b };
    let top = vals
        .iter()
        .fold(&vals[0], |acc, v| if better(v.x, acc.x) { v } else { acc });
    // Designs the table shows at the same value tie with the best: a lead too small to print is
    // no lead (352.36 and 352.44 GB/s both read 352.4). So do designs within the model's error.
    let shown = unit(top.x);
    let level = |v: &Val| unit(v.x) == shown;
    let within = |v: &Val| matches!((v.band, top.band), (Some(a), Some(b)) if a.overlaps(b));
    // Best first (a stable sort: designs at one value keep their order).
    let mut tied: Vec<&Val> = vals.iter().filter(|v| level(v) || within(v)).collect();
    tied.sort_by(|a, b| {
        if better(a.x, b.x) {
            std::cmp::Ordering::Less
        } else if better(b.x, a.x) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    let best: Vec<String> = tied.iter().map(|v| v.label.to_string()).collect();
    let tied_within_error = vals.iter().any(|v| !level(v) && within(v));
    let next = vals
        .iter()
        .filter(|v| !level(v) && !within(v))
        .fold(None::<&Val>, |acc, v| match acc {
            Some(a) if !better(v.x, a.x) => acc,
            _ => Some(v),
        })
        .map(|v| (v.label.to_string(), v.x));
    let margin_percent = next
        .as_ref()
        .and_then(|&(_, y)| (y != 0.0).then(|| 100.0 * (y - top.x).abs() / y.abs()));
    let error_band_percent = top.band.map(|b| b.half_width_percent);
    // The last of the tied designs, for the range a tie spans.
    let worst = vals
        .iter()
        .filter(|v| level(v) || within(v))
        .fold(top.x, |acc, v| if better(acc, v.x) { v.x } else { acc });
    let text = sentence(
        (axis, lower, unit),
        (&best, top.x, worst),
        next.as_ref(),
        margin_percent,
        error_band_percent.filter(|_| tied_within_error),
    );
    Some(Verdict {
        axis: axis.to_string(),
        lower_is_better: lower,
        best,
        best_value: top.x,
        next,
        margin_percent,
        tied_within_error,
        error_band_percent,
        text,
    })
}

/// The verdict's sentence: the best design(s) and value, how far ahead of the next, and where
/// designs tie within the model's error (`tied_band`: the half-width, percent), that they do.
fn sentence(
    (axis, lower, unit): (&str, bool, fn(f64) -> String),
    (best, best_value, worst): (&[String], f64, f64),
    next: Option<&(String, f64)>,
    margin_percent: Option<f64>,
    tied_band: Option<f64>,
) -> String {
    let lead = if lower { "lowest" } else { "highest" };
    let who = match tied_band {
        Some(h) => format!(
            "{} tied within model error (error band ±{h:.1}%: {} to {})",
            best.join(" and "),
            unit(best_value),
            unit(worst)
        ),
        None => format!("{} ({})", best.join(" and "), unit(best_value)),
    };
    match (next, margin_percent) {
        (Some((l, y)), Some(m)) => format!(
            "{lead} {axis}: {who}, {} {} {l} ({})",
            if m < 0.05 {
                "less than 0.1%".to_string()
            } else {
                format!("{m:.1}%")
            },
            if lower { "below" } else { "above" },
            unit(*y)
        ),
        (Some((l, y)), None) => format!("{lead} {axis}: {who}; next {l} ({})", unit(*y)),
        (None, _) if tied_band.is_some() => format!("{axis}: {who}"),
        (None, _) => format!("{axis}: every design at {}", unit(best_value)),
    }
}

/// The decision of a comparison from its verdicts: the winner on the first `DECIDING` figure the
/// comparison has, only when it is ahead of every other design beyond the model's error;
/// otherwise no winner, "tied within model error". `None` when no deciding figure was compared.
pub fn decision(verdicts: &[Verdict]) -> Option<Decision> {
    let v = DECIDING
        .iter()
        .find_map(|a| verdicts.iter().find(|v| v.axis == *a))?;
    let tied = v.best.len() > 1;
    let winner = (!tied).then(|| v.best[0].clone());
    let text = match (&winner, v.tied_within_error) {
        (Some(w), _) => format!(
            "{w} wins on {}, the figure that decides, {}: {}",
            v.axis,
            if v.error_band_percent.is_some() {
                "beyond the model's error"
            } else {
                "counted from the catalog (no model error)"
            },
            v.text
        ),
        (None, true) => format!(
            "no winner: tied within model error on {}, the figure that decides: {}",
            v.axis, v.text
        ),
        (None, false) => format!(
            "no winner: equal on {}, the figure that decides: {}",
            v.axis, v.text
        ),
    };
    Some(Decision {
        winner,
        tied,
        decided_by: v.axis.clone(),
        text,
    })
}
