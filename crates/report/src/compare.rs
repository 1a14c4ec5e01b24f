//! The decision report: designs side by side in one self-contained page (`railyard report
//! --compare`, `railyard compare --html`). The comparison table, network cost against training
//! throughput with the Pareto front, cost per million tokens, the step breakdowns side by side,
//! bus bandwidth overlaid per design, each design's drawing, and which design wins on which axis
//! (generated from the numbers: `railyard_study::compare::verdicts`).

use crate::chart::{bars_svg, busbw_svg, pareto_svg, Curve, Point};
use crate::html::CSS;
use crate::svg::{esc, thousands, trim};
use railyard_study::busbw::Busbw;
use railyard_study::compare::{decision, short_label, verdicts, Compared};
use std::fmt::Write;

/// One design of the report: its row of the comparison, its drawing (SVG) and its busbw curves.
pub struct ComparedDesign<'a> {
    pub compared: &'a Compared,
    pub drawing: String,
    pub busbw: Busbw,
}

/// What the decision report shows.
pub struct ComparisonReport<'a> {
    pub designs: Vec<ComparedDesign<'a>>,
    /// The training model's name (empty without one).
    pub model: String,
    /// Years the network is paid off over (the cost per token's assumption).
    pub amortize_years: f64,
    /// The command line and every run key, to run the report again.
    pub invocation: crate::reproduce::Invocation,
}

type Row = (&'static str, fn(&Compared) -> Option<String>);

/// The comparison table's rows: the plan's numbers, then how it was simulated and what was
/// predicted (a row where no design has a value is left out).
const ROWS: [Row; 28] = [
    ("servers", |d| Some(thousands(d.summary.servers as f64))),
    ("GPUs", |d| {
        Some(format!(
            "{} x {}",
            thousands(d.summary.gpus as f64),
            d.summary.gpu_model
        ))
    }),
    ("NIC:GPU", |d| Some(d.summary.nic_gpu_ratio.clone())),
    ("NICs", |d| {
        Some(format!(
            "{} x {}",
            thousands(d.summary.nics as f64),
            d.summary.nic_model
        ))
    }),
    ("technology", |d| Some(d.summary.tech.clone())),
    ("topology", |d| Some(d.summary.topology.clone())),
    ("switch", |d| {
        Some(format!(
            "{} {}",
            d.summary.switch_model, d.summary.port_mode
        ))
    }),
    ("tiers", |d| Some(d.summary.tiers.to_string())),
    ("leaf switches", |d| {
        Some(thousands(d.summary.switches.leaf as f64))
    }),
    ("spine switches", |d| {
        Some(thousands(d.summary.switches.spine as f64))
    }),
    ("core switches", |d| {
        Some(thousands(d.summary.switches.core as f64))
    }),
    ("cables", |d| {
        Some(thousands(d.summary.cable_count() as f64))
    }),
    ("transceivers", |d| {
        Some(thousands(
            d.summary.transceivers.values().sum::<u64>() as f64
        ))
    }),
    ("bisection (Tb/s)", |d| {
        Some(trim(d.summary.bisection_gbps / 1000.0))
    }),
    ("power (kW)", |d| {
        Some(trim(d.summary.power_w.total / 1000.0))
    }),
    ("network cost ($)", |d| {
        Some(thousands(d.summary.cost_usd.total))
    }),
    ("cost per GPU ($)", |d| {
        Some(thousands(d.summary.cost_usd.per_gpu))
    }),
    ("routing", |d| {
        Some(match &d.routing_default {
            Some(why) => format!("{} ({why})", d.routing),
            None => format!("{} (given)", d.routing),
        })
    }),
    ("cross-rail (PXN)", |d| Some(d.pxn.clone())),
    ("all-reduce busbw 1 GiB (GB/s)", |d| {
        banded(
            d,
            "allreduce_busbw_1g_gbs",
            d.performance.allreduce_busbw_1g_gbs,
            |x| format!("{x:.1}"),
        )
    }),
    ("all-to-all busbw 1 GiB (GB/s)", |d| {
        banded(
            d,
            "alltoall_busbw_1g_gbs",
            d.performance.alltoall_busbw_1g_gbs,
            |x| format!("{x:.1}"),
        )
    }),
    ("layout", |d| {
        d.performance.layout.as_ref().map(|l| l.short())
    }),
    ("step time (s)", |d| {
        banded(d, "step_time_s", d.performance.step_time_s, |x| {
            format!("{x:.3}")
        })
    }),
    ("tokens/s", |d| {
        banded(d, "tokens_per_s", d.performance.tokens_per_s, thousands)
    }),
    ("model state per GPU (GB)", |d| {
        d.performance
            .model_state_gb_per_gpu
            .map(|x| format!("{x:.1}"))
    }),
    ("activations per GPU (GB)", |d| {
        d.performance
            .activation_gb_per_gpu
            .map(|x| format!("{x:.1}"))
    }),
    ("memory per GPU (GB)", |d| {
        let p = &d.performance;
        p.memory_gb_per_gpu.map(|x| match p.gpu_memory_gb {
            Some(m) if x > m => format!("{x:.1} of {m:.1}: does not fit"),
            Some(m) => format!("{x:.1} of {m:.1}"),
            None => format!("{x:.1}"),
        })
    }),
    ("network $ per M tokens", |d| {
        banded(
            d,
            "network_usd_per_million_tokens",
            d.performance.network_usd_per_million_tokens,
            |x| format!("{x:.4}"),
        )
    }),
];

/// A predicted figure with its error band, `9.389 [8.250, 10.890]`: the interval a measurement may
/// lie in (`railyard_study::compare::band`); the figure alone where it has none.
fn banded(d: &Compared, key: &str, x: Option<f64>, fmt: fn(f64) -> String) -> Option<String> {
    let x = x?;
    Some(match d.performance.error_band.get(key) {
        Some(b) => format!("{} [{}, {}]", fmt(x), fmt(b.lo), fmt(b.hi)),
        None => fmt(x),
    })
}

/// The step breakdown's rows, seconds (exposed communication only).
type StepRow = (&'static str, fn(&railyard_study::compare::Breakdown) -> f64);

const STEP_ROWS: [StepRow; 8] = [
    ("compute", |b| b.compute_s),
    ("tensor-parallel (exposed)", |b| b.tensor_parallel_s),
    ("expert-parallel (exposed)", |b| b.expert_parallel_s),
    ("pipeline send/recv (exposed)", |b| b.pipeline_parallel_s),
    ("data-parallel (exposed)", |b| b.data_parallel_exposed_s),
    ("data-parallel (in all)", |b| b.data_parallel_total_s),
    ("pipeline bubble", |b| b.pipeline_bubble_s),
    ("step time", |b| b.step_time_s),
];

fn head(designs: &[ComparedDesign], first: &str) -> String {
    let mut o = format!("<thead><tr><th>{}</th>", esc(first));
    for (i, d) in designs.iter().enumerate() {
        let _ = write!(
            o,
            r#"<th class="num" title="{}">{} <span class="muted">{}</span></th>"#,
            esc(&d.compared.label),
            short_label(i),
            esc(&d.compared.label)
        );
    }
    o.push_str("</tr></thead>");
    o
}

/// The comparison table.
fn table(r: &ComparisonReport) -> String {
    let mut o = String::from(r#"<div class="table-box"><table id="comparison">"#);
    o.push_str(&head(&r.designs, "design"));
    o.push_str("<tbody>");
    for (label, get) in ROWS {
        let cells: Vec<Option<String>> = r.designs.iter().map(|d| get(d.compared)).collect();
        if cells.iter().all(Option::is_none) {
            continue;
        }
        let label = match label {
            "step time (s)" | "tokens/s" | "layout" if !r.model.is_empty() => {
                format!("{} {label}", r.model)
            }
            "network $ per M tokens" => format!("{label} ({} y)", trim(r.amortize_years)),
            _ => label.to_string(),
        };
        let _ = write!(o, "<tr><td>{}</td>", esc(&label));
        for c in cells {
            let _ = write!(o, r#"<td class="num">{}</td>"#, esc(&c.unwrap_or_default()));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    if r.designs
        .iter()
        .any(|d| d.compared.summary.cost_usd.includes_estimates)
    {
        o.push_str(r#"<p class="muted">Costs include estimated prices <span class="est">estimate</span>; each design's bill of materials (<code>railyard plan --out DIR</code>) names every price's source.</p>"#);
    }
    o
}

/// The step breakdowns side by side.
fn breakdowns(r: &ComparisonReport) -> Option<String> {
    if r.designs
        .iter()
        .all(|d| d.compared.performance.breakdown.is_none())
    {
        return None;
    }
    let mut o = String::from(r#"<div class="table-box"><table id="step-breakdown">"#);
    o.push_str(&head(&r.designs, "seconds per step"));
    o.push_str("<tbody>");
    for (label, get) in STEP_ROWS {
        let _ = write!(o, "<tr><td>{label}</td>");
        for d in &r.designs {
            let v = d.compared.performance.breakdown.as_ref().map(get);
            let _ = write!(
                o,
                r#"<td class="num">{}</td>"#,
                v.map(|x| format!("{x:.3}")).unwrap_or_default()
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("<tr><td>MFU</td>");
    for d in &r.designs {
        let v = d.compared.performance.breakdown.as_ref().map(|b| b.mfu);
        let _ = write!(
            o,
            r#"<td class="num">{}</td>"#,
            v.map(|x| format!("{:.1}%", 100.0 * x)).unwrap_or_default()
        );
    }
    o.push_str("</tr></tbody></table></div>");
    Some(o)
}

fn section(o: &mut String, id: &str, title: &str, caption: &str, body: &str) {
    let _ = writeln!(
        o,
        r#"<section id="{id}"><h2>{}</h2><p class="muted">{}</p>{body}</section>"#,
        esc(title),
        esc(caption)
    );
}

fn figure(svg: &str) -> String {
    format!(r#"<div class="figure">{svg}</div>"#)
}

/// The decision report's page.
pub fn comparison_html(r: &ComparisonReport) -> String {
    let compared: Vec<Compared> = r.designs.iter().map(|d| d.compared.clone()).collect();
    let mut o = String::with_capacity(256 * 1024);
    let _ = write!(
        o,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="railyard {}">
<title>railyard decision report: {} designs</title>
<style>{CSS}</style></head>
<body>
<header><h1>Decision report: {} designs</h1><p class="muted">Each design named by what differs from the others. Letters label the designs in the charts.</p><ul id="designs-key">"#,
        env!("CARGO_PKG_VERSION"),
        r.designs.len(),
        r.designs.len(),
    );
    for (i, d) in r.designs.iter().enumerate() {
        let _ = write!(
            o,
            "<li><b>{}</b> {}{}</li>",
            short_label(i),
            esc(&d.compared.label),
            warnings(d.compared)
        );
    }
    o.push_str("</ul></header>\n");
    summary_section(&mut o, r, &compared);
    pareto_section(&mut o, r);
    cost_per_token_section(&mut o, r);
    if let Some(t) = breakdowns(r) {
        section(
            &mut o,
            "step-breakdowns",
            "Training step, side by side",
            "Where each design's step time goes (railyard train): compute, the communication compute does not hide, and the pipeline bubble.",
            &t,
        );
    }
    busbw_section(&mut o, r);
    drawings_section(&mut o, r);
    o.push_str(&crate::reproduce::section(&r.invocation));
    let _ = write!(
        o,
        r#"<footer><p class="muted">Made by railyard {} from the designs' specs and catalog; prices marked “estimate” have no public price list behind them.</p></footer>
</body></html>
"#,
        env!("CARGO_PKG_VERSION")
    );
    o
}

/// A design's warnings beside it (a layout over the GPU's memory, a fitted layout, what could not
/// be simulated): its notes, in the order the prediction gave them.
fn warnings(c: &Compared) -> String {
    if c.performance.notes.is_empty() {
        return String::new();
    }
    let mut o = String::from(r#"<ul class="warnings">"#);
    for n in &c.performance.notes {
        let _ = write!(o, "<li>{}</li>", esc(n));
    }
    o.push_str("</ul>");
    o
}

/// Which design wins, and the comparison table.
fn summary_section(o: &mut String, r: &ComparisonReport, compared: &[Compared]) {
    let v = verdicts(compared);
    let mut list = String::new();
    if let Some(d) = decision(&v) {
        let _ = write!(list, r#"<p id="decision"><b>{}</b></p>"#, esc(&d.text));
    }
    list.push_str(r#"<ul id="verdicts">"#);
    for x in &v {
        let _ = write!(list, "<li>{}</li>", esc(&x.text));
    }
    list.push_str("</ul>");
    section(
        o,
        "summary",
        "Which design wins",
        "Generated from the numbers below: the best design on each axis and how far ahead of the next it is. A predicted figure carries its error band (in brackets in the table: the 80th percentile of the validation's |error| for its kind and scale, crates/study/data/model-error.toml); designs whose bands overlap are tied within model error, and no winner is named on them.",
        &list,
    );
    section(
        o,
        "comparison-table",
        "Comparison",
        "Plans from the catalog; busbw and the training step simulated on each fabric (railyard compare).",
        &table(r),
    );
}

/// Cost against performance: tokens/s where a model was given, else bisection.
fn pareto_section(o: &mut String, r: &ComparisonReport) {
    let tokens: Option<Vec<f64>> = r
        .designs
        .iter()
        .map(|d| d.compared.performance.tokens_per_s)
        .collect();
    let points: Vec<Point> = r
        .designs
        .iter()
        .enumerate()
        .map(|(i, d)| Point {
            label: short_label(i),
            x: tokens
                .as_ref()
                .map_or(d.compared.summary.bisection_gbps / 1000.0, |t| t[i]),
            y: d.compared.summary.cost_usd.total,
        })
        .collect();
    let x_axis = if tokens.is_some() {
        format!("{} tokens/s", r.model)
    } else {
        "bisection (Tb/s)".to_string()
    };
    section(
        o,
        "pareto",
        "Cost against performance",
        "Network cost against what the network delivers; designs on the line are Pareto-optimal (no other design is both cheaper and faster).",
        &figure(&pareto_svg(&x_axis, "network cost ($)", &points)),
    );
}

/// The network's cost per million tokens, where every design has one.
fn cost_per_token_section(o: &mut String, r: &ComparisonReport) {
    if let Some(per_m) = r
        .designs
        .iter()
        .map(|d| d.compared.performance.network_usd_per_million_tokens)
        .collect::<Option<Vec<f64>>>()
    {
        let bars: Vec<(String, f64)> = per_m
            .iter()
            .enumerate()
            .map(|(i, &x)| (short_label(i), x))
            .collect();
        section(
            o,
            "cost-per-token",
            "Network cost per million tokens",
            &format!(
                "The network's cost paid off over {} years of training at each design's predicted tokens/s (an assumption: --amortize-years).",
                trim(r.amortize_years)
            ),
            &figure(&bars_svg(
                &format!("Network $ per million tokens, {}", r.model),
                &bars,
                4,
            )),
        );
    }
}

/// Predicted busbw: one chart per collective, a curve per design.
fn busbw_section(o: &mut String, r: &ComparisonReport) {
    // busbw: one chart per collective, a curve per design.
    let mut charts = String::new();
    let mut notes = Vec::new();
    for op in railyard_study::busbw::COLLECTIVES {
        let name = op.to_string();
        let curves: Vec<Curve> = r
            .designs
            .iter()
            .enumerate()
            .filter_map(|(i, d)| {
                d.busbw
                    .curves
                    .iter()
                    .find(|c| c.collective == name)
                    .map(|c| Curve {
                        collective: short_label(i),
                        points: c.points.clone(),
                    })
            })
            .collect();
        if !curves.is_empty() {
            charts.push_str(&figure(&busbw_svg(
                &format!("{op} busbw, by design"),
                &curves,
            )));
        }
    }
    for (i, d) in r.designs.iter().enumerate() {
        for n in &d.busbw.notes {
            notes.push(format!("{}: {n}.", short_label(i)));
        }
    }
    if !charts.is_empty() {
        let mut caption = "Simulated on each fabric as nccl-tests reports busbw (railyard sim collective: NCCL's algorithm and protocol per size, D-mod-K routing).".to_string();
        for n in notes {
            caption.push(' ');
            caption.push_str(&n);
        }
        section(o, "busbw", "Predicted bus bandwidth", &caption, &charts);
    }
}

/// Each design's topology drawing.
fn drawings_section(o: &mut String, r: &ComparisonReport) {
    let mut drawings = String::new();
    for (i, d) in r.designs.iter().enumerate() {
        if d.drawing.is_empty() {
            continue;
        }
        let _ = write!(
            drawings,
            r#"<h3>{} {}</h3><p class="muted">{}</p>{}"#,
            short_label(i),
            esc(&d.compared.label),
            esc(&crate::html::design_line(&d.compared.summary)),
            figure(&d.drawing)
        );
    }
    if !drawings.is_empty() {
        section(
            o,
            "drawings",
            "The designs",
            "Tiers as rows, servers at the bottom; server-leaf cables in their rail's colour.",
            &drawings,
        );
    }
}
