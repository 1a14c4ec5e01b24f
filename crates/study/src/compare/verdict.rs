//! Which design is best on each axis and by how much: the verdicts a comparison opens with.

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
    /// The best design(s) (more than one on a tie).
    pub best: Vec<String>,
    pub best_value: f64,
    /// The next best design and its value, when another design differs.
    pub next: Option<(String, f64)>,
    /// How far the best is ahead of the next, percent of the next's value.
    pub margin_percent: Option<f64>,
    /// The sentence the report and the text print.
    pub text: String,
}

/// The axes a buyer reads: (name, lower is better, unit formatter, value).
type Axis = (
    &'static str,
    bool,
    fn(f64) -> String,
    fn(&Compared) -> Option<f64>,
);

const AXES: [Axis; 8] = [
    (
        "network cost",
        true,
        |x| format!("${}", thousands(x)),
        |d| Some(d.summary.cost_usd.total),
    ),
    (
        "network power",
        true,
        |x| format!("{x:.2} kW"),
        |d| Some(d.summary.power_w.total / 1000.0),
    ),
    (
        "all-reduce busbw at 1 GiB",
        false,
        |x| format!("{x:.1} GB/s"),
        |d| d.performance.allreduce_busbw_1g_gbs,
    ),
    (
        "all-to-all busbw at 1 GiB",
        false,
        |x| format!("{x:.1} GB/s"),
        |d| d.performance.alltoall_busbw_1g_gbs,
    ),
    (
        "training step time",
        true,
        |x| format!("{x:.3} s"),
        |d| d.performance.step_time_s,
    ),
    (
        "training throughput",
        false,
        |x| format!("{} tokens/s", thousands(x)),
        |d| d.performance.tokens_per_s,
    ),
    (
        "network cost per million tokens",
        true,
        |x| format!("${x:.4}"),
        |d| d.performance.network_usd_per_million_tokens,
    ),
    (
        "cluster cost per million tokens",
        true,
        |x| format!("${x:.4}"),
        |d| d.performance.cluster_usd_per_million_tokens,
    ),
];

/// For each axis where at least two designs have a value: the best design, its value, and how far
/// ahead of the next best it is. Generated from the numbers alone.
pub fn verdicts(designs: &[Compared]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (axis, lower, unit, get) in AXES {
        let vals: Vec<(&str, f64)> = designs
            .iter()
            .filter_map(|d| {
                get(d)
                    .filter(|x| x.is_finite())
                    .map(|x| (d.label.as_str(), x))
            })
            .collect();
        if vals.len() < 2 {
            continue;
        }
        let better = |a: f64, b: f64| if lower { a < b } else { a > b };
        let best_value =
            vals.iter()
                .map(|v| v.1)
                .fold(vals[0].1, |acc, x| if better(x, acc) { x } else { acc });
        // Designs the table shows at the same value tie with the best: a lead too small to
        // print is no lead (352.36 and 352.44 GB/s both read 352.4).
        let shown = unit(best_value);
        let best: Vec<String> = vals
            .iter()
            .filter(|v| unit(v.1) == shown)
            .map(|v| v.0.to_string())
            .collect();
        let next =
            vals.iter()
                .filter(|v| unit(v.1) != shown)
                .fold(None::<(&str, f64)>, |acc, &(l, x)| match acc {
                    Some((_, y)) if !better(x, y) => acc,
                    _ => Some((l, x)),
                });
        let margin_percent =
            next.and_then(|(_, y)| (y != 0.0).then(|| 100.0 * (y - best_value).abs() / y.abs()));
        let lead = if lower { "lowest" } else { "highest" };
        let text = match (next, margin_percent) {
            (Some((l, y)), Some(m)) => format!(
                "{lead} {axis}: {} ({}), {} {} {l} ({})",
                best.join(" and "),
                unit(best_value),
                if m < 0.05 {
                    "less than 0.1%".to_string()
                } else {
                    format!("{m:.1}%")
                },
                if lower { "below" } else { "above" },
                unit(y)
            ),
            (Some((l, y)), None) => format!(
                "{lead} {axis}: {} ({}); next {l} ({})",
                best.join(" and "),
                unit(best_value),
                unit(y)
            ),
            (None, _) => format!("{axis}: every design at {}", unit(best_value)),
        };
        out.push(Verdict {
            axis: axis.to_string(),
            lower_is_better: lower,
            best,
            best_value,
            next: next.map(|(l, y)| (l.to_string(), y)),
            margin_percent,
            text,
        });
    }
    out
}
