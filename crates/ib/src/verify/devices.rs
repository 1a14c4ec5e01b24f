//! Findings about devices: not in the plan, sharing a description, not discovered, or with a
//! port count the planned model cannot report.

use super::matching::Adjacency;
use super::plan::normalise_ca_desc;
use super::{Ctx, Finding, Kind};
use crate::discovery::{escaped, Discovered, NodeType};
use std::collections::{BTreeMap, BTreeSet};

/// Every device finding, and the planned switches that were not discovered (whose cables the
/// cable comparison leaves to them).
pub(super) fn findings<'p>(
    disc: &Discovered,
    cx: &Ctx<'p>,
    disc_adj: &Adjacency,
    name: &[Option<String>],
    taken: &BTreeSet<String>,
) -> (Vec<Finding>, BTreeSet<&'p String>) {
    let p = cx.p;
    let mut findings = Vec::new();
    unknown_devices(disc, cx, disc_adj, name, &mut findings);
    // An HCA whose cables are all unplugged is invisible to discovery: report its missing cables
    // (below), not a missing device. A switch that was not found is a missing device.
    let missing_devices: BTreeSet<&String> = p
        .devices
        .iter()
        .filter(|(d, &is_switch)| is_switch && !taken.contains(*d))
        .map(|(d, _)| d)
        .collect();
    wrong_port_counts(disc, cx, name, &mut findings);
    for d in missing_devices.iter().filter(|d| cx.in_scope(d)) {
        findings.push(cx.device_finding(
            Kind::MissingDevice,
            format!(
                "{} was not discovered: check that it is installed, powered and cabled",
                escaped(d)
            ),
            "switches not discovered: check that each is installed, powered and cabled",
            Some(d),
        ));
    }
    (findings, missing_devices)
}

/// Discovered devices the plan does not have, or whose description another device took.
fn unknown_devices(
    disc: &Discovered,
    cx: &Ctx,
    disc_adj: &Adjacency,
    name: &[Option<String>],
    findings: &mut Vec<Finding>,
) {
    let site = cx.site;
    let in_scope = |d: &str| cx.in_scope(d);
    // The discovered device that took each planned name: a second device of the same description
    // is then no stranger to the plan but a duplicate description (an HCA renamed by hand to its
    // neighbour's name was "not in the plan", and its cables a miswired chain).
    let taken_by: BTreeMap<&str, usize> = name
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((d.as_deref()?, i)))
        .collect();
    for (i, n) in disc.nodes.iter().enumerate() {
        // A switch's SHARP aggregation node is part of the switch (its link is left out below, as
        // a link to an unmatched node is). Under a scope, an unknown device counts when it is
        // cabled to a device in scope.
        let touches_scope = || {
            disc_adj[i]
                .iter()
                .any(|&(_, r, _)| name[r].as_deref().is_some_and(in_scope))
        };
        let what = if n.kind == NodeType::Switch {
            "switch"
        } else {
            "CA"
        };
        let own = if n.kind == NodeType::Ca {
            normalise_ca_desc(&n.desc)
        } else {
            n.desc.clone()
        };
        if let (None, Some(&other)) = (&name[i], taken_by.get(own.as_str())) {
            if site.scope.is_none() || touches_scope() {
                findings.push(cx.device_finding(
                    Kind::UnknownDevice,
                    format!(
                        "\"{}\" ({}, line {}) has the description of line {}, which matched the plan's \"{own}\": two devices share one description; give each its own (a host's HCAs are named by hostname and device) and verify again",
                        escaped(&n.desc),
                        what,
                        n.line,
                        disc.nodes[other].line
                    ),
                    "devices that share a description: give each its own and verify again",
                    None,
                ));
                continue;
            }
        }
        if name[i].is_none()
            && !n.is_aggregation_node()
            && (site.scope.is_none() || touches_scope())
        {
            findings.push(cx.device_finding(
                Kind::UnknownDevice,
                format!(
                    "\"{}\" ({}, line {}) is not in the plan: remove it or its cables, or add it to the plan",
                    escaped(&n.desc),
                    what,
                    n.line
                ),
                "devices the plan does not have: remove them or their cables, or add them to the plan",
                None,
            ));
        }
    }
}

// A matched switch whose port count the plan's model cannot report. Real switches may report
// more than the planned mode's ports: ports split in two (HDR100, NDR200), and NVIDIA Quantum
// switches attach their SHARP aggregation node as a CA on one more port (an HDR100-split switch
// lists it on port 81: tests/data/real/hdr-excerpt.ibnetdiscover-p). So the range is the planned
// ports up to twice them plus one; below is a smaller model, above is more than any split.
fn wrong_port_counts(
    disc: &Discovered,
    cx: &Ctx,
    name: &[Option<String>],
    findings: &mut Vec<Finding>,
) {
    let p = cx.p;
    for (i, n) in disc.nodes.iter().enumerate() {
        let (Some(desc), Some(reported)) = (&name[i], n.reported_ports) else {
            continue;
        };
        let Some((ports, model)) = p.switches.get(desc) else {
            continue;
        };
        let most = 2 * ports + 1;
        if cx.in_scope(desc) && (reported < *ports || reported > most) {
            let model = if model.is_empty() {
                "the plan's switch".to_string()
            } else {
                format!("the plan's {model}")
            };
            let fix = format!(
                "{} reports {reported} ports (line {}), {model} has {ports} (up to {most} with its ports split and a SHARP aggregation node port): check that the planned switch model is installed",
                escaped(desc),
                n.line
            );
            findings.push(cx.device_finding(Kind::WrongPortCount, fix.clone(), &fix, Some(desc)));
        }
    }
}
