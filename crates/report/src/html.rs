//! The self-contained HTML report: inline CSS, inline SVG, one small inline script (the cabling
//! filter), and a Content-Security-Policy that forbids loading anything from anywhere.

use crate::svg::{esc, speed, thousands, trim};
use crate::{DesignReport, Figure};
use railyard_fabric::{Fabric, LinkKind};
use railyard_plan::Summary;
use std::fmt::Write;

/// Cabling rows included in the report at most; the rest are in cabling.csv.
pub const MAX_CABLING_ROWS: usize = 5_000;
/// Bytes of cabling table at most, whatever the row count (keeps the file far below 5 MB).
const MAX_CABLING_BYTES: usize = 1_500_000;

/// Styles shared by the report and the web app.
pub const CSS: &str = r#"
:root { --ink: #1f2328; --muted: #59636e; --line: #d0d7de; --est: #9a6700; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", Verdana, system-ui, sans-serif; color: var(--ink); margin: 0 auto; padding: 1.5rem; max-width: 1400px; line-height: 1.4; }
h1 { font-size: 1.6rem; margin: 0 0 .2rem; } h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
.muted { color: var(--muted); }
.figure { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
.figure svg { display: block; max-width: 100%; height: auto; }
.figure.wide svg { max-width: none; min-width: 100%; }
table { border-collapse: collapse; font-size: .85rem; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .6rem; text-align: left; white-space: nowrap; }
td.muted { white-space: normal; min-width: 14rem; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.est { color: var(--est); font-size: .75rem; border: 1px solid var(--est); border-radius: 3px; padding: 0 .25rem; margin-left: .3rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: .6rem; margin: 1rem 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .7rem; }
.card .v { font-size: 1.35rem; font-weight: bold; } .card .k { color: var(--muted); font-size: .8rem; }
.table-box { overflow-x: auto; }
.scroll { max-height: 32rem; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
.scroll thead th { position: sticky; top: 0; background: #f6f8fa; }
input, select { font: inherit; padding: .2rem .4rem; }
"#;

/// Summary cards: the numbers an architect asks for first.
pub fn summary_cards(s: &Summary) -> String {
    let est = if s.cost_usd.includes_estimates {
        r#"<span class="est" title="includes estimated prices; see the bill of materials">estimate</span>"#
    } else {
        ""
    };
    let mut cards: Vec<(String, String, &str)> = vec![
        (
            "GPUs".into(),
            format!("{} x {}", thousands(s.gpus as f64), s.gpu_model),
            "gpus",
        ),
        ("servers".into(), thousands(s.servers as f64), "servers"),
        (
            "compute NICs".into(),
            format!(
                "{} ({}, {})",
                thousands(s.nics as f64),
                s.nic_model,
                s.nic_gpu_ratio
            ),
            "nics",
        ),
        (
            "leaf switches".into(),
            thousands(s.switches.leaf as f64),
            "switches-leaf",
        ),
        (
            "spine switches".into(),
            thousands(s.switches.spine as f64),
            "switches-spine",
        ),
        (
            "core switches".into(),
            thousands(s.switches.core as f64),
            "switches-core",
        ),
        ("cables".into(), thousands(s.cable_count() as f64), "cables"),
        (
            "transceivers".into(),
            thousands(s.transceivers.values().sum::<u64>() as f64),
            "transceivers",
        ),
    ];
    cards.push(("power (kW)".into(), trim(s.power_w.total / 1000.0), "power"));
    if let Some(r) = &s.racks {
        if let Some(d) = &r.nvlink_domain {
            cards.push((
                format!(
                    "NVLink domains of {} GPUs ({})",
                    d.gpus_per_domain, d.system
                ),
                thousands(f64::from(d.domains)),
                "nvlink-domains",
            ));
        }
        cards.push((
            format!("server racks of {}", r.servers_per_rack),
            thousands(f64::from(r.server_racks)),
            "server-racks",
        ));
        if let Some(kw) = r.rack_kw {
            let limit = r
                .max_rack_kw
                .map_or(String::new(), |l| format!(", limit {}", trim(l)));
            cards.push((format!("kW per server rack{limit}"), trim(kw), "rack-kw"));
        }
        let cooling = if r.needs_liquid {
            format!("liquid ({})", r.cooling)
        } else {
            "air".to_string()
        };
        cards.push(("cooling the servers need".into(), cooling, "cooling"));
    }
    let mut o = String::from(r#"<div class="cards">"#);
    for (k, v, id) in &cards {
        let _ = write!(
            o,
            r#"<div class="card"><div class="v" data-key="{id}">{}</div><div class="k">{}</div></div>"#,
            esc(v),
            esc(k)
        );
    }
    let _ = write!(
        o,
        r#"<div class="card"><div class="v" data-key="cost-total">${}</div><div class="k">network cost{est}</div></div><div class="card"><div class="v" data-key="cost-per-gpu">${}</div><div class="k">cost per GPU{est}</div></div></div>"#,
        thousands(s.cost_usd.total),
        thousands(s.cost_usd.per_gpu),
    );
    o
}

/// How the design was chosen (every choice with where it came from and why) and the next designs
/// the search found, cheapest first; empty for a fabric planned without its search (as built).
pub fn design_choices(s: &Summary) -> String {
    let Some(d) = &s.design else {
        return String::new();
    };
    let mut o = format!(
        r#"<p class="muted">The {} of {} designs that meet the request and keep the given and preset choices ({} built and costed from their parts{}{}).</p><div class="table-box"><table id="choices"><thead><tr><th>choice</th><th>value</th><th>from</th><th>why</th></tr></thead><tbody>"#,
        if d.complete { "cheapest" } else { "best built" },
        thousands(d.candidates as f64),
        d.costed_exactly - d.costed_for_alternatives,
        railyard_plan::output::alternatives_built(d),
        if d.complete {
            ""
        } else {
            "; the search's budget of links to build ran out: a design not built may cost a little less"
        }
    );
    for c in &d.choices {
        let _ = write!(
            o,
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="muted">{}</td></tr>"#,
            esc(&c.key.replace('_', " ")),
            esc(&c.value),
            esc(&c.source),
            esc(&c.why)
        );
    }
    o.push_str("</tbody></table></div>");
    if !d.alternatives.is_empty() {
        o.push_str(
            r#"<h3>Alternatives</h3><div class="table-box"><table id="alternatives"><thead><tr><th class="num">#</th><th class="num">cost ($)</th><th class="num">vs chosen ($)</th><th>switch</th><th class="num">leaf</th><th class="num">spine</th><th class="num">core</th><th class="num">leaf ratio</th><th class="num">tiers</th><th>what differs</th></tr></thead><tbody>"#,
        );
        for (i, a) in d.alternatives.iter().enumerate() {
            let est = if a.cost_estimated {
                r#"<span class="est" title="estimated from counts at typical cable runs, not built">from counts</span>"#
            } else {
                ""
            };
            let delta = if a.cost_delta_usd < 0.0 {
                format!("-{}", thousands(-a.cost_delta_usd))
            } else {
                format!("+{}", thousands(a.cost_delta_usd))
            };
            let _ = write!(
                o,
                r#"<tr><td class="num">{}</td><td class="num">{}{est}</td><td class="num">{delta}</td><td>{} {}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}:1</td><td class="num">{}</td><td class="muted">{}</td></tr>"#,
                i + 1,
                thousands(a.cost_usd),
                esc(&a.switch_model),
                esc(&a.port_mode),
                thousands(a.switches.leaf as f64),
                thousands(a.switches.spine as f64),
                thousands(a.switches.core as f64),
                trim(a.oversubscription.leaf),
                a.tiers,
                esc(&a.differs.join("; "))
            );
        }
        o.push_str("</tbody></table></div>");
    }
    o
}

/// The storage fabric and management networks planned with the compute fabric: their switches,
/// cables, power and cost, and how each was shaped; empty when none is planned.
pub fn networks(s: &Summary) -> String {
    let mut nets: Vec<&railyard_plan::NetworkSummary> = Vec::new();
    nets.extend(s.storage.as_ref());
    if let Some(m) = &s.management {
        nets.extend(m.in_band.as_ref());
        nets.extend(m.out_of_band.as_ref());
    }
    if nets.is_empty() {
        return String::new();
    }
    let mut o = String::from(
        r#"<div class="table-box"><table id="networks"><thead><tr><th>network</th><th>switch</th><th class="num">switches</th><th class="num">cables</th><th>ports attached</th><th class="num">power (kW)</th><th class="num">cost ($)</th><th>how</th></tr></thead><tbody>"#,
    );
    for n in nets {
        let est = if n.cost_usd.includes_estimates {
            r#"<span class="est">estimate</span>"#
        } else {
            ""
        };
        let ports: Vec<String> = n
            .endpoints
            .iter()
            .map(|(k, v)| format!("{} {k}", thousands(*v as f64)))
            .collect();
        let _ = write!(
            o,
            r#"<tr><td>{}</td><td>{} {}</td><td class="num">{}</td><td class="num">{}</td><td class="muted">{}</td><td class="num">{}</td><td class="num">{}{est}</td><td class="muted">{}</td></tr>"#,
            esc(&n.network),
            esc(&n.switch_model),
            esc(&n.port_mode),
            thousands(n.switches.total as f64),
            thousands(n.cables_by_type.values().sum::<u64>() as f64),
            esc(&ports.join(", ")),
            trim(n.power_w.total / 1000.0),
            thousands(n.cost_usd.total),
            esc(&n.notes.join("; "))
        );
    }
    o.push_str("</tbody></table></div>");
    o
}

/// One-line description of the design.
pub fn design_line(s: &Summary) -> String {
    let su = match (s.su_size, s.scalable_units) {
        (Some(size), Some(n)) => format!(
            ", {} of {}",
            railyard_fabric::search::plural(u64::from(n), "scalable unit", "scalable units"),
            railyard_fabric::search::plural(u64::from(size), "server", "servers")
        ),
        _ => String::new(),
    };
    format!(
        "{} {} with {} {} switches ({}, {} links), {} tier{}{su}; GPUDirect RDMA {}; oversubscription leaf {}; bisection {} Tb/s; worst case {}.",
        s.tech,
        s.topology,
        s.switch_model,
        s.port_mode,
        speed(s.link_gbps),
        s.port_mode,
        s.tiers,
        if s.tiers == 1 { "" } else { "s" },
        if s.gpudirect { "on" } else { "off" },
        if s.oversubscription.leaf == 0.0 {
            "-".to_string()
        } else {
            format!("{}:1", trim(s.oversubscription.leaf))
        },
        trim(s.bisection_gbps / 1000.0),
        railyard_fabric::search::plural(
            u64::from(s.worst_case_switch_hops),
            "switch hop",
            "switch hops"
        ),
    )
}

/// Dollars with thousands separators, and cents where the amount has them (`50.50`, `19,392`), so
/// that unit price x quantity = total as shown, as bom.csv has it.
fn dollars(x: f64) -> String {
    let cents = (x * 100.0).round();
    if !cents.is_finite() || cents % 100.0 == 0.0 {
        return thousands(x);
    }
    let whole = (cents.abs() / 100.0).trunc();
    let sign = if cents < 0.0 { "-" } else { "" };
    format!("{sign}{}.{:02}", thousands(whole), cents.abs() % 100.0)
}

/// The bill of materials as a table, estimated prices marked.
pub fn bom_table(r: &DesignReport) -> String {
    let mut o = String::from(
        r#"<div class="table-box"><table id="bom"><thead><tr><th>category</th><th>part</th><th>description</th><th class="num">length (m)</th><th class="num">quantity</th><th class="num">unit ($)</th><th class="num">total ($)</th><th>price source</th></tr></thead><tbody>"#,
    );
    for l in &r.plan.bom {
        let est = if l.price_estimate {
            r#"<span class="est">estimate</span>"#
        } else {
            ""
        };
        let _ = write!(
            o,
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}{est}</td><td class="muted">{}</td></tr>"#,
            l.category,
            esc(&l.part),
            esc(&l.description),
            l.length_m.map(trim).unwrap_or_default(),
            thousands(l.quantity as f64),
            dollars(l.unit_price_usd),
            dollars(l.total_usd),
            esc(&l.price_source),
        );
    }
    let c = &r.plan.summary.cost_usd;
    let _ = write!(
        o,
        r#"</tbody><tfoot><tr><th colspan="6">total</th><th class="num">{}{}</th><th></th></tr></tfoot></table></div>"#,
        dollars(c.total),
        if c.includes_estimates {
            r#"<span class="est">estimate</span>"#
        } else {
            ""
        }
    );
    o
}

/// The cabling plan: the first rows (all of them for all but huge fabrics) with a filter by device.
pub fn cabling_table(f: &Fabric) -> String {
    let total = f.network_links().count();
    let width = railyard_fabric::CABLE_ID_DIGITS;
    let mut rows = String::new();
    let mut shown = 0usize;
    let mut label = String::new();
    for (i, (_, l)) in f.network_links().enumerate() {
        if shown >= MAX_CABLING_ROWS || rows.len() >= MAX_CABLING_BYTES {
            break;
        }
        let tier = match l.kind {
            LinkKind::ServerLeaf => "server-leaf",
            LinkKind::LeafSpine => "leaf-spine",
            LinkKind::SpineCore => "spine-core",
            _ => "inter-switch",
        };
        let _ = write!(
            rows,
            "<tr><td>C{:0width$}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{tier}</td>",
            i + 1,
            l.medium.type_name(),
            esc(l.medium.part().unwrap_or("")),
            l.medium.length_m().map(trim).unwrap_or_default(),
        );
        for p in [l.a, l.b] {
            label.clear();
            f.write_port_label(p, &mut label);
            let _ = write!(
                rows,
                "<td>{}</td><td>{}</td>",
                esc(f.port_device(p)),
                esc(&label)
            );
        }
        rows.push_str("</tr>\n");
        shown += 1;
    }
    let note = if shown < total {
        format!(
            "Showing the first {} of {} cables; the whole plan is in cabling.csv (<code>railyard plan --out DIR</code>).",
            thousands(shown as f64),
            thousands(total as f64)
        )
    } else {
        format!("All {} cables.", thousands(total as f64))
    };
    format!(
        r#"<p><label>Filter by device <input id="cable-filter" type="search" placeholder="e.g. su1-srv07 or spine05" autocomplete="off"></label> <span id="cable-count" class="muted"></span></p><p class="muted" id="cabling-note">{note}</p><div class="scroll"><table id="cabling"><thead><tr><th>id</th><th>type</th><th>part</th><th class="num">length (m)</th><th>tier</th><th>A device</th><th>A port</th><th>B device</th><th>B port</th></tr></thead><tbody>
{rows}</tbody></table></div>"#
    )
}

/// The cabling filter: shows rows whose A or B device contains the typed text.
const SCRIPT: &str = r#"(function () {
  var input = document.getElementById('cable-filter');
  var count = document.getElementById('cable-count');
  var rows = document.querySelectorAll('#cabling tbody tr');
  function apply() {
    var q = input.value.trim().toLowerCase(), shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var c = rows[i].cells;
      var hit = !q || c[5].textContent.toLowerCase().indexOf(q) >= 0 || c[7].textContent.toLowerCase().indexOf(q) >= 0;
      rows[i].hidden = !hit;
      if (hit) shown++;
    }
    count.textContent = shown + ' of ' + rows.length + ' rows';
  }
  input.addEventListener('input', apply);
  apply();
})();"#;

/// The `width` attribute of an SVG document's root element.
fn svg_width(svg: &str) -> f64 {
    svg.split_once(" width=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(w, _)| w.parse().ok())
        .unwrap_or(0.0)
}

/// The whole report page.
pub fn page(r: &DesignReport, figures: &[Figure]) -> String {
    let s = &r.plan.summary;
    let mut o = String::with_capacity(256 * 1024);
    let _ = write!(
        o,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="railyard {}">
<title>railyard report: {}</title>
<style>{CSS}</style></head>
<body>
<header><h1>{}</h1><p class="muted">{}</p><p>{}</p></header>
<section id="summary"><h2>Summary</h2>{}</section>
"#,
        env!("CARGO_PKG_VERSION"),
        esc(&s.name),
        esc(&s.name),
        esc(&r.description),
        esc(&design_line(s)),
        summary_cards(s),
    );
    let choices = design_choices(s);
    if !choices.is_empty() {
        let _ = writeln!(
            o,
            r#"<section id="design"><h2>How the design was chosen</h2>{choices}</section>"#
        );
    }
    let others = networks(s);
    if !others.is_empty() {
        let _ = writeln!(
            o,
            r#"<section id="networks"><h2>Storage and management networks</h2>{others}</section>"#
        );
    }
    for fig in figures {
        let _ = writeln!(
            o,
            r#"<section id="{}"><h2>{}</h2><p class="muted">{}</p><div class="figure{}">{}</div></section>"#,
            fig.name,
            esc(&fig.title),
            esc(&fig.caption),
            if svg_width(&fig.svg) > 2200.0 {
                " wide"
            } else {
                ""
            },
            fig.svg
        );
    }
    let _ = write!(
        o,
        r#"<section id="bill-of-materials"><h2>Bill of materials</h2>{}</section>
<section id="cabling-plan"><h2>Cabling plan</h2>{}</section>
<footer><p class="muted">Made by railyard {} from the design's spec and catalog; prices marked “estimate” have no public price list behind them.</p></footer>
<script>{SCRIPT}</script>
</body></html>
"#,
        bom_table(r),
        cabling_table(r.fabric),
        env!("CARGO_PKG_VERSION"),
    );
    o
}
