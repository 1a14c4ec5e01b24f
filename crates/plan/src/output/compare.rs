//! Designs side by side, one row per metric (`railyard compare`).

use super::words::{ratio, trim};
use crate::Summary;
use railyard_fabric::text::thousands;
use std::fmt::Write;

/// Designs side by side: one row per metric, one column per design.
/// `extra` rows (label, one cell per design) follow the plan's rows: simulated performance, say.
pub fn compare_text(designs: &[(String, Summary)], extra: &[(String, Vec<String>)]) -> String {
    let rows = ROWS;
    let labels: Vec<&str> = rows
        .iter()
        .map(|r| r.0)
        .chain(extra.iter().map(|(l, _)| l.as_str()))
        .collect();
    let label_w = labels.iter().map(|l| l.len()).max().unwrap_or(0);
    let cells: Vec<Vec<String>> = designs
        .iter()
        .enumerate()
        .map(|(d, (_, s))| {
            rows.iter()
                .map(|r| (r.1)(s))
                .chain(
                    extra
                        .iter()
                        .map(|(_, v)| v.get(d).cloned().unwrap_or_default()),
                )
                .collect()
        })
        .collect();
    let widths: Vec<usize> = designs
        .iter()
        .zip(&cells)
        .map(|((name, _), col)| {
            col.iter()
                .map(String::len)
                .chain([name.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    let _ = write!(o, "{:<label_w$}", "");
    for ((name, _), w) in designs.iter().zip(&widths) {
        let _ = write!(o, "  {name:>w$}");
    }
    o.push('\n');
    for (i, label) in labels.iter().enumerate() {
        let _ = write!(o, "{label:<label_w$}");
        for (col, w) in cells.iter().zip(&widths) {
            let _ = write!(o, "  {:>w$}", col[i]);
        }
        o.push('\n');
    }
    if designs.iter().any(|(_, s)| s.cost_usd.includes_estimates) {
        o.push_str("costs include estimated prices (see bom.csv of each design for sources)\n");
    }
    o
}

/// A metric of the comparison: its label and how a design's summary gives it.
type Row = (&'static str, fn(&Summary) -> String);

/// The plan's rows, in order.
const ROWS: &[Row] = &[
    ("servers", |s| thousands(s.servers as f64)),
    ("GPUs", |s| {
        format!("{} x {}", thousands(s.gpus as f64), s.gpu_model)
    }),
    ("NIC:GPU", |s| s.nic_gpu_ratio.clone()),
    ("NICs", |s| {
        format!("{} x {}", thousands(s.nics as f64), s.nic_model)
    }),
    ("GPUDirect RDMA", |s| {
        if s.gpudirect { "on" } else { "off" }.to_string()
    }),
    ("technology", |s| s.tech.clone()),
    ("topology", |s| s.topology.clone()),
    ("switch", |s| format!("{} {}", s.switch_model, s.port_mode)),
    ("tiers", |s| s.tiers.to_string()),
    ("leaf switches", |s| thousands(s.switches.leaf as f64)),
    ("spine switches", |s| thousands(s.switches.spine as f64)),
    ("core switches", |s| thousands(s.switches.core as f64)),
    ("cables", |s| thousands(s.cable_count() as f64)),
    ("transceivers", |s| {
        thousands(s.transceivers.values().sum::<u64>() as f64)
    }),
    ("oversubscription (leaf)", |s| {
        ratio(s.oversubscription.leaf)
    }),
    ("bisection (Tb/s)", |s| trim(s.bisection_gbps / 1000.0)),
    ("worst-case switch hops", |s| {
        s.worst_case_switch_hops.to_string()
    }),
    ("power (kW)", |s| trim(s.power_w.total / 1000.0)),
    ("server racks", |s| {
        s.racks.as_ref().map_or("-".to_string(), |r| {
            format!(
                "{} of {}",
                thousands(f64::from(r.server_racks)),
                r.servers_per_rack
            )
        })
    }),
    ("kW per server rack", |s| {
        s.racks
            .as_ref()
            .and_then(|r| r.rack_kw.map(|kw| (kw, r.needs_liquid)))
            .map_or("-".to_string(), |(kw, liquid)| {
                format!("{}{}", trim(kw), if liquid { " liquid" } else { "" })
            })
    }),
    ("network cost ($)", |s| thousands(s.cost_usd.total)),
    ("cost per GPU ($)", |s| thousands(s.cost_usd.per_gpu)),
];
