//! The comparison as a table: the plans' rows, then what each topology costs and was predicted to do.

use super::verdict::verdicts;
use super::{Compared, Perf};
use crate::tco::Assumptions;
use railyard_plan::output::{compare_text, thousands};
use railyard_plan::Summary;

/// The rows the comparison adds to the plans' rows: what the topology costs and what was predicted.
fn extra_rows(
    designs: &[Compared],
    model: &str,
    costs: &Assumptions,
) -> Vec<(String, Vec<String>)> {
    let mut extra = cost_rows(designs);
    extra.extend(setting_rows(designs));
    extra.extend(performance_rows(designs, model, costs));
    extra
}

/// What the topology costs: the other networks, and the fabric against the first design's.
fn cost_rows(designs: &[Compared]) -> Vec<(String, Vec<String>)> {
    let mut extra: Vec<(String, Vec<String>)> = Vec::new();
    // The other planned networks (the compute fabric's rows are the plan's own).
    let others = |s: &Summary| {
        let storage = s.storage.as_ref().map(|n| n.cost_usd.total);
        let management = s.management.as_ref().map(|m| m.cost_usd);
        (storage.is_some() || management.is_some())
            .then(|| storage.unwrap_or(0.0) + management.unwrap_or(0.0))
    };
    if designs.iter().any(|d| others(&d.summary).is_some()) {
        extra.push((
            "storage + management ($)".to_string(),
            designs
                .iter()
                .map(|d| others(&d.summary).map_or("-".to_string(), thousands))
                .collect(),
        ));
    }
    // Switches, cables and optics: what the topology changes (the NICs are the servers' choice).
    let fabric_cost = |s: &Summary| s.cost_usd.total - s.cost_usd.nics;
    let base = designs.first().map_or(0.0, |d| fabric_cost(&d.summary));
    extra.push((
        "fabric cost excl. NICs ($)".to_string(),
        designs
            .iter()
            .map(|d| thousands(fabric_cost(&d.summary)))
            .collect(),
    ));
    extra.push((
        "  vs the first design".to_string(),
        designs
            .iter()
            .map(|d| {
                if base > 0.0 {
                    format!("{:+.0}%", 100.0 * (fabric_cost(&d.summary) - base) / base)
                } else {
                    "-".to_string()
                }
            })
            .collect(),
    ));
    extra
}

/// How the simulated designs were run: routing, cross-rail relay, all-reduce algorithm.
fn setting_rows(designs: &[Compared]) -> Vec<(String, Vec<String>)> {
    let mut extra: Vec<(String, Vec<String>)> = Vec::new();
    let simulated = designs.iter().any(|d| {
        d.performance.allreduce_busbw_1g_gbs.is_some() || d.performance.step_time_s.is_some()
    });
    if simulated {
        extra.push((
            "routing".to_string(),
            designs.iter().map(|d| d.routing.clone()).collect(),
        ));
        extra.push((
            "cross-rail (PXN)".to_string(),
            designs.iter().map(|d| d.pxn.clone()).collect(),
        ));
    }
    if designs
        .iter()
        .any(|d| d.performance.allreduce_algo.is_some())
    {
        extra.push((
            "all-reduce algorithm".to_string(),
            designs
                .iter()
                .map(|d| {
                    d.performance
                        .allreduce_algo
                        .clone()
                        .unwrap_or_else(|| "auto".to_string())
                })
                .collect(),
        ));
    }
    extra
}

/// What was predicted: busbw, the training step and its memory, the cost per token; a row only
/// where some design has a value.
fn performance_rows(
    designs: &[Compared],
    model: &str,
    costs: &Assumptions,
) -> Vec<(String, Vec<String>)> {
    let amortize_years = costs.amortize_years;
    let mut extra: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |label: &str, f: &dyn Fn(&Perf) -> Option<String>| {
        let cells: Vec<Option<String>> = designs.iter().map(|d| f(&d.performance)).collect();
        if cells.iter().any(Option::is_some) {
            extra.push((
                label.to_string(),
                cells.into_iter().map(Option::unwrap_or_default).collect(),
            ));
        }
    };
    row("all-reduce busbw 1 GiB (GB/s)", &|p| {
        p.allreduce_busbw_1g_gbs.map(|x| format!("{x:.1}"))
    });
    row("all-to-all busbw 1 GiB (GB/s)", &|p| {
        match (p.allreduce_busbw_1g_gbs, p.alltoall_busbw_1g_gbs) {
            // Simulated designs without an all-to-all: past the simulation limit (see notes).
            (Some(_), None) => Some("too large".to_string()),
            (_, a2a) => a2a.map(|x| format!("{x:.1}")),
        }
    });
    row(&format!("{model} layout"), &|p| {
        p.layout.as_ref().map(|l| l.short())
    });
    row(&format!("{model} step time (s)"), &|p| {
        p.step_time_s.map(|x| format!("{x:.3}"))
    });
    row("  expert all-to-all (ms)", &|p| {
        p.expert_all_to_all_s.map(|x| format!("{:.1}", x * 1e3))
    });
    row(&format!("{model} tokens/s"), &|p| {
        p.tokens_per_s.map(thousands)
    });
    row("model state per GPU (GB)", &|p| {
        p.model_state_gb_per_gpu.map(|x| format!("{x:.1}"))
    });
    row("activations per GPU (GB)", &|p| {
        p.activation_gb_per_gpu.map(|x| format!("{x:.1}"))
    });
    row(
        &format!("network $ per M tokens ({amortize_years} y)"),
        &|p| p.network_usd_per_million_tokens.map(|x| format!("{x:.4}")),
    );
    row(
        &format!(
            "cluster $ per M tokens ({amortize_years} y, PUE {}, ${}/kWh)",
            costs.pue, costs.usd_per_kwh
        ),
        &|p| p.cluster_usd_per_million_tokens.map(|x| format!("{x:.4}")),
    );
    extra
}

/// Short column labels for a comparison too wide for its labels: A, B, ... Z, AA, AB, ...
pub fn short_label(i: usize) -> String {
    let mut n = i;
    let mut s = Vec::new();
    loop {
        s.push(b'A' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s.iter().rev().map(|&b| b as char).collect()
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// The comparison as a table (the plans' rows, then what the topology costs and what was
/// predicted), the notes of what could not be simulated, and which design wins on which axis.
/// `model` names the model in the step rows and `costs` the assumptions in the cost rows.
///
/// The table fits `width` columns: when the designs' own labels make it wider, the columns are
/// labelled A, B, ... with a legend, and designs that still do not fit go on further pages of the
/// same rows.
pub fn compare_table(
    designs: &[Compared],
    model: &str,
    costs: &Assumptions,
    width: usize,
) -> String {
    let extra = extra_rows(designs, model, costs);
    let page = |range: std::ops::Range<usize>, short: bool| -> String {
        let columns: Vec<(String, Summary)> = designs[range.clone()]
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let label = if short {
                    short_label(range.start + i)
                } else {
                    d.label.clone()
                };
                (label, d.summary.clone())
            })
            .collect();
        let rows: Vec<(String, Vec<String>)> = extra
            .iter()
            .map(|(l, v)| (l.clone(), v[range.clone()].to_vec()))
            .collect();
        compare_text(&columns, &rows)
    };
    let mut text = page(0..designs.len(), false);
    let lettered = widest(&text) > width;
    if lettered {
        text.clear();
        let pad = short_label(designs.len().saturating_sub(1)).len();
        text.push_str("designs:\n");
        for (i, d) in designs.iter().enumerate() {
            text.push_str(&format!("  {:<pad$}  {}\n", short_label(i), d.label));
        }
        let mut start = 0;
        while start < designs.len() {
            // As many designs as fit (at least one).
            let mut end = start + 1;
            while end < designs.len() && widest(&page(start..end + 1, true)) <= width {
                end += 1;
            }
            let body = page(start..end, true);
            text.push('\n');
            for line in body.lines() {
                // The estimate note once, after the last page.
                if end < designs.len() && line.starts_with("costs include") {
                    continue;
                }
                text.push_str(line);
                text.push('\n');
            }
            start = end;
        }
    }
    for d in designs {
        for n in &d.performance.notes {
            text.push_str(&format!("{}: {n}\n", d.label));
        }
    }
    // Lettered columns: the verdicts name the designs by their letters too (a tie names several).
    let v = if lettered {
        let by_letter: Vec<Compared> = designs
            .iter()
            .enumerate()
            .map(|(i, d)| Compared {
                label: short_label(i),
                ..d.clone()
            })
            .collect();
        verdicts(&by_letter)
    } else {
        verdicts(designs)
    };
    if !v.is_empty() {
        text.push_str("\nwhich design wins:\n");
        for x in &v {
            text.push_str(&format!("  {}\n", x.text));
        }
    }
    if let Some(d) = super::verdict::decision(&v) {
        text.push_str(&format!("\ndecision: {}\n", d.text));
    }
    text
}
