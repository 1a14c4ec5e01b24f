//! What a fabric's hardware supports: SHARP, the NICs' payload rate, a calibration's NIC rate.

use crate::error::SimError;
use crate::net::calibration::Calibration;
use crate::net::rates::{self, PacketFormat};
use railyard_catalog::{Catalog, Family, Sharp};
use railyard_fabric::{Fabric, LinkKind, NodeKind};
use std::collections::BTreeSet;

/// Whether NCCL can use SHARP in-network aggregation (CollNet) on `fabric`: an InfiniBand
/// network whose every switch and compute NIC the catalog marks as SHARP-capable (`sharp`, from
/// NVIDIA's "Using NVIDIA SHARP with NVIDIA NCCL": Quantum HDR switches or newer, ConnectX-6 HDR
/// HCAs or newer). The error names the models that are not and the valid ones.
pub fn sharp_support(fabric: &Fabric, catalog: &Catalog) -> Result<(), String> {
    let capable_switches: Vec<&str> = catalog
        .switches
        .values()
        .filter(|s| Sharp::supported(&s.sharp))
        .map(|s| s.id.as_str())
        .collect();
    let capable_nics: Vec<&str> = catalog
        .nics
        .values()
        .filter(|n| Sharp::supported(&n.sharp))
        .map(|n| n.id.as_str())
        .collect();
    let mut switches = BTreeSet::new();
    let mut nics = BTreeSet::new();
    for n in &fabric.nodes {
        match n.kind {
            NodeKind::Switch { .. } => {
                let ok = catalog
                    .switches
                    .get(&*n.model)
                    .is_some_and(|s| Sharp::supported(&s.sharp));
                if !ok {
                    switches.insert(&*n.model);
                }
            }
            NodeKind::Nic { .. } => {
                let ok = catalog
                    .nics
                    .get(&*n.model)
                    .is_some_and(|s| Sharp::supported(&s.sharp));
                if !ok {
                    nics.insert(&*n.model);
                }
            }
            _ => {}
        }
    }
    let name = |m: &str| {
        if m.is_empty() {
            "(no model)".to_string()
        } else {
            m.to_string()
        }
    };
    let mut problems = Vec::new();
    if fabric.meta.tech.family() != Family::Infiniband {
        problems.push(format!(
            "SHARP runs on InfiniBand only, this fabric is {}",
            fabric.meta.tech
        ));
    }
    if !switches.is_empty() {
        let list: Vec<String> = switches.iter().map(|m| name(m)).collect();
        problems.push(format!(
            "switch {} does not aggregate in the network for NCCL; valid switches: {}",
            list.join(", "),
            capable_switches.join(", ")
        ));
    }
    if !nics.is_empty() {
        let list: Vec<String> = nics.iter().map(|m| name(m)).collect();
        problems.push(format!(
            "NIC {} does not take part in SHARP for NCCL; valid NICs: {}",
            list.join(", "),
            capable_nics.join(", ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "SHARP (CollNet) is not supported here: {}",
            problems.join("; ")
        ))
    }
}

/// Whether the fabric's hardware routes adaptively (`--routing adaptive`): on InfiniBand every
/// switch must do it (the catalog's `adaptive_routing`: NVIDIA switches from Switch-IB on; the
/// HCAs place out-of-order packets from ConnectX-5 on); on Ethernet only a Spectrum-X pairing
/// sprays packets over paths, Spectrum-4 SN5000 switches (`adaptive_routing`) with SuperNICs that
/// put the packets back in order (`packet_spraying`: BlueField-3 or ConnectX-8 SuperNIC). The
/// error names the parts that do not and the valid ones, and the routings that remain.
pub fn adaptive_support(fabric: &Fabric, catalog: &Catalog) -> Result<(), String> {
    let ethernet = fabric.meta.tech.family() == Family::Ethernet;
    let switch_ok = |m: &str| {
        catalog.switches.get(m).is_some_and(|s| {
            s.family == fabric.meta.tech.family() && Sharp::supported(&s.adaptive_routing)
        })
    };
    let nic_ok = |m: &str| {
        catalog
            .nics
            .get(m)
            .is_some_and(|n| Sharp::supported(&n.packet_spraying))
    };
    let mut switches = BTreeSet::new();
    let mut nics = BTreeSet::new();
    for n in &fabric.nodes {
        match n.kind {
            NodeKind::Switch { .. } if !switch_ok(&n.model) => {
                switches.insert(display_model(&n.model));
            }
            NodeKind::Nic { .. } if ethernet && !nic_ok(&n.model) => {
                nics.insert(display_model(&n.model));
            }
            _ => {}
        }
    }
    if switches.is_empty() && nics.is_empty() {
        return Ok(());
    }
    let family = fabric.meta.tech.family();
    let valid_switches: Vec<&str> = catalog
        .switches
        .values()
        .filter(|s| s.family == family && Sharp::supported(&s.adaptive_routing))
        .map(|s| s.id.as_str())
        .collect();
    let mut problems = Vec::new();
    if !switches.is_empty() {
        problems.push(format!(
            "switch {} does not route adaptively on {}; valid switches: {}",
            switches.into_iter().collect::<Vec<_>>().join(", "),
            family,
            valid_switches.join(", ")
        ));
    }
    if !nics.is_empty() {
        let valid_nics: Vec<&str> = catalog
            .nics
            .values()
            .filter(|n| Sharp::supported(&n.packet_spraying))
            .map(|n| n.id.as_str())
            .collect();
        problems.push(format!(
            "NIC {} does not put sprayed packets back in order (Spectrum-X needs a SuperNIC); valid NICs: {}",
            nics.into_iter().collect::<Vec<_>>().join(", "),
            valid_nics.join(", ")
        ));
    }
    let what = if ethernet {
        "adaptive routing on Ethernet needs a Spectrum-X pairing (Spectrum-4 switches with SuperNICs)"
    } else {
        "adaptive routing needs InfiniBand switches that do it"
    };
    Err(format!(
        "{what}: {}; valid routings here: ecmp, dmodk",
        problems.join("; ")
    ))
}

/// Refuses a routing policy the fabric's hardware does not run (adaptive without switches, or on
/// Ethernet a Spectrum-X pairing, that do it: [`adaptive_support`]).
pub fn check_routing(
    fabric: &Fabric,
    catalog: &Catalog,
    kind: crate::net::routing::RoutingKind,
) -> Result<(), SimError> {
    if kind == crate::net::routing::RoutingKind::Adaptive {
        adaptive_support(fabric, catalog).map_err(|message| SimError::Config {
            what: "routing",
            message,
        })?;
    }
    Ok(())
}

/// A node's model as errors print it.
fn display_model(m: &str) -> String {
    if m.is_empty() {
        "(no model)".to_string()
    } else {
        m.to_string()
    }
}

/// The routing sites run on `fabric`'s technology unless told otherwise, from the catalog
/// (`default_routing`: InfiniBand adaptive routing, on by default in NVIDIA's OpenSM and in NCCL;
/// RoCE ECMP per queue pair), with the few words reports print beside it. Where the default is
/// adaptive and the hardware does not route adaptively ([`adaptive_support`]: a discovered fabric
/// of switches the catalog does not know), the subnet manager's static fat-tree routing, D-mod-K
/// (OpenSM's `ar_updn` routes such switches as `updn`, by static tables). `None` when the catalog
/// has no entry for the technology (an older InfiniBand generation of a discovered fabric).
pub fn default_routing(
    fabric: &Fabric,
    catalog: &Catalog,
) -> Option<(crate::net::routing::RoutingKind, String)> {
    use crate::net::routing::RoutingKind;
    let t = catalog.technologies.get(&fabric.meta.tech)?;
    let kind = RoutingKind::parse(&t.default_routing.policy)?;
    let why = t.default_routing.why.clone();
    if kind == RoutingKind::Adaptive && adaptive_support(fabric, catalog).is_err() {
        return Some((
            RoutingKind::DModK,
            format!("{why}; these switches do not route adaptively: static fat-tree routing"),
        ));
    }
    Some((kind, why))
}

/// The payload rate of the fabric's fastest NIC cable, GB/s per direction (line rate after the
/// technology's headers): the rate a calibration's NIC rate is fitted below. `None` without NICs.
pub fn nic_payload_gbs(fabric: &Fabric) -> Option<f64> {
    let format = packet_format(fabric);
    fabric
        .links
        .iter()
        .filter(|l| matches!(l.kind, LinkKind::ServerLeaf))
        .map(|l| format.payload_rate(l.gbps) / 1e9)
        .reduce(f64::max)
}

/// The payload rate of one server's compute NICs together, GB/s per direction (each NIC cable's line
/// rate after the technology's headers, summed per server; the largest server's sum): what a server
/// can move into or out of the network at most. `None` without NICs.
pub fn server_nic_payload_gbs(fabric: &Fabric) -> Option<f64> {
    let format = packet_format(fabric);
    let mut per_server = vec![0.0; fabric.servers.len()];
    for l in &fabric.links {
        if !matches!(l.kind, LinkKind::ServerLeaf) {
            continue;
        }
        let Some(port) = fabric.ports.get(l.a.0 as usize) else {
            continue;
        };
        let Some(node) = fabric.nodes.get(port.node.0 as usize) else {
            continue;
        };
        if let (NodeKind::Nic { .. }, Some(s)) = (&node.kind, node.server) {
            if let Some(sum) = per_server.get_mut(s as usize) {
                *sum += format.payload_rate(l.gbps) / 1e9;
            }
        }
    }
    per_server.into_iter().reduce(f64::max).filter(|&g| g > 0.0)
}

/// The headers the fabric's network links carry.
pub(crate) fn packet_format(f: &Fabric) -> PacketFormat {
    match f.meta.tech.family() {
        Family::Infiniband => rates::INFINIBAND,
        Family::Ethernet => rates::ROCE_V2,
    }
}

/// Refuses a calibrated NIC rate above the line rate after headers of a NIC's cable on `fabric`.
/// It is no fit of this design (`calibrate` fits at most the line rate), and a network built with
/// it would cap it there while the output said it applied. The file's four decimals may round a
/// fit at line rate up by 5e-5 GB/s, which passes.
pub fn check_calibration(fabric: &Fabric, calibration: &Calibration) -> Result<(), SimError> {
    let Some(gbs) = calibration.nic_gbs else {
        return Ok(());
    };
    match nic_payload_gbs(fabric) {
        Some(line) if gbs > line * (1.0 + 1e-6) + 1e-4 => Err(SimError::Config {
            what: "calibration",
            message: format!(
                "nic_gbs {gbs:.2} GB/s is above this design's NIC line rate after headers, {line:.2} GB/s: a calibration describes the NICs of the design it was fitted on (calibrate fits at most the line rate)"
            ),
        }),
        _ => Ok(()),
    }
}
