//! The plan as a verification reads it: InfiniBand devices and cables by the descriptions a
//! discovery shows them under.

use super::{planned_rate, Options, PortRef};
use crate::rate::Rate;
use railyard_fabric::{Fabric, NodeKind};
use std::collections::BTreeMap;

/// Planned InfiniBand devices and cables, by description.
pub(super) struct Planned {
    pub(super) devices: BTreeMap<String, bool>,
    /// Switch -> (ports, model).
    pub(super) switches: BTreeMap<String, (u32, String)>,
    /// port -> (far port, expected rate, cable index in [`Fabric::cables`] order)
    pub(super) links: BTreeMap<PortRef, (PortRef, Rate, usize)>,
    pub(super) cables: usize,
    /// Device -> node, to look up where it stands.
    pub(super) node: BTreeMap<String, usize>,
}

pub(super) fn planned(f: &Fabric, opts: Options) -> Planned {
    let mut devices = BTreeMap::new();
    let mut switches = BTreeMap::new();
    let mut node = BTreeMap::new();
    for (i, n) in f.nodes.iter().enumerate() {
        let is_ib = n.is_switch() || matches!(n.kind, NodeKind::Nic { .. });
        let cabled = n.ports().any(|p| {
            f.port(p)
                .link()
                .is_some_and(|l| f.link(l).kind.is_network())
        });
        if is_ib && (cabled || n.is_switch()) {
            let desc = crate::export::node_desc(f, railyard_fabric::NodeId(i as u32));
            if n.is_switch() {
                switches.insert(desc.clone(), (n.num_ports, n.model.to_string()));
            }
            node.insert(desc.clone(), i);
            devices.insert(desc, n.is_switch());
        }
    }
    let mut links = BTreeMap::new();
    let mut cables = 0;
    for (_, l) in f.network_links() {
        let end = |p| PortRef {
            device: crate::export::node_desc(f, f.port(p).node),
            port: f.port(p).number,
        };
        let (a, b) = (end(l.a), end(l.b));
        let rate = planned_rate(l.gbps, l.lanes, opts.ibsim_rates);
        links.insert(a.clone(), (b.clone(), rate, cables));
        links.insert(b, (a, rate, cables));
        cables += 1;
    }
    Planned {
        devices,
        switches,
        links,
        cables,
        node,
    }
}

/// A host CA description as railyard names it: `host mlx5_2` reads as `host hca3`.
pub(super) fn normalise_ca_desc(desc: &str) -> String {
    if let Some((host, dev)) = desc.rsplit_once(' ') {
        if let Some(n) = dev
            .strip_prefix("mlx5_")
            .and_then(|n| n.parse::<u32>().ok())
        {
            return format!("{host} hca{}", n + 1);
        }
    }
    desc.to_string()
}
