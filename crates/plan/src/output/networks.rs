//! A storage or management network in the readable summary.

use super::words::{singular, trim};
use crate::NetworkSummary;
use railyard_fabric::text::{plural, thousands};
use std::fmt::Write;

/// A storage or management network.
pub(super) fn network_text(o: &mut String, name: &str, n: &NetworkSummary) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{name}: {} {} ({} Gb/s), {} tier{}",
        n.switch_model,
        n.port_mode,
        n.link_gbps,
        n.tiers,
        if n.tiers == 1 { "" } else { "s" }
    );
    let ends: Vec<String> = n
        .endpoints
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| plural(*v, &singular(k), k))
        .collect();
    let _ = writeln!(o, "  ports attached: {}", ends.join(", "));
    let _ = writeln!(
        o,
        "  switches: {} leaf, {} spine, {} core ({} total)",
        thousands(n.switches.leaf as f64),
        thousands(n.switches.spine as f64),
        thousands(n.switches.core as f64),
        thousands(n.switches.total as f64)
    );
    cables_text(o, n);
    if !n.transceivers.is_empty() {
        let t: Vec<String> = n
            .transceivers
            .iter()
            .map(|(k, v)| plural(*v, &singular(k), k))
            .collect();
        let _ = writeln!(o, "  transceivers: {}", t.join(", "));
    }
    for note in &n.notes {
        let _ = writeln!(o, "  {note}");
    }
    let _ = writeln!(
        o,
        "  power: {} kW; cost: ${}{}",
        trim(n.power_w.total / 1000.0),
        thousands(n.cost_usd.total),
        if n.cost_usd.includes_estimates {
            " (includes estimated prices)"
        } else {
            ""
        }
    );
}

/// The network's cables: to devices and per tier, and (where a twin-port or splitter cable
/// carries more than one link) on how many cables, by type.
fn cables_text(o: &mut String, n: &NetworkSummary) {
    let mut links = format!(
        "  cables: {} to devices",
        thousands(n.links.server_leaf as f64)
    );
    if n.links.leaf_spine > 0 {
        let _ = write!(
            links,
            ", {} leaf-spine",
            thousands(n.links.leaf_spine as f64)
        );
    }
    if n.links.spine_core > 0 {
        let _ = write!(
            links,
            ", {} spine-core",
            thousands(n.links.spine_core as f64)
        );
    }
    if n.links.inter_switch > 0 {
        let _ = write!(
            links,
            ", {} inter-switch",
            thousands(n.links.inter_switch as f64)
        );
    }
    let by_type: Vec<String> = n
        .cables_by_type
        .iter()
        .map(|(k, v)| plural(*v, &singular(k), k))
        .collect();
    let cables: u64 = n.cables_by_type.values().sum();
    let total =
        n.links.server_leaf + n.links.leaf_spine + n.links.spine_core + n.links.inter_switch;
    if cables < total {
        // Twin-port and splitter cables carry more than one link each.
        let _ = writeln!(
            o,
            "{links} links, on {} cables ({})",
            thousands(cables as f64),
            by_type.join(", ")
        );
    } else {
        let _ = writeln!(o, "{links} ({})", by_type.join(", "));
    }
}
