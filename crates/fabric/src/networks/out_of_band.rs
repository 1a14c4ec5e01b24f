//! The out-of-band management network: 1 GbE to every BMC, every switch's management port, the
//! management nodes, the fabric managers and the rack PDUs; two uplinks per switch into the
//! in-band network.

use super::network::{
    cable_ctx, device_ports, meta, named_ports, resolved, servers_with_ports, NetSwitch, Network,
    NetworkKind,
};
use crate::error::BuildError;
use crate::graph::{Fabric, LinkKind, NodeId, PortId, Tier};
use crate::layout::cable;
use crate::shape::Shape;
use crate::text::thousands;
use crate::topo::{pad, Wiring};
use railyard_catalog::{Catalog, PortMode};
use railyard_spec::ClusterSpec;
use std::collections::BTreeMap;

/// Out-of-band uplinks per switch into the in-band network (the reference: "two uplinks per OOB").
pub(super) const OOB_UPLINKS: u32 = 2;

/// Rack PDUs on the out-of-band network: per server rack and per other rack (the reference: 96 for
/// its 32 DGX racks and 12 for its 6 other racks).
pub(super) const PDUS_PER_SERVER_RACK: u64 = 3;

pub(super) const PDUS_PER_OTHER_RACK: u64 = 2;

pub(super) fn oob_network(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
    switch: NetSwitch,
    per_switch: u32,
    switches: &[String],
    pdus: u64,
) -> Result<Network, BuildError> {
    let NetSwitch { sw, mode, tech } = switch;
    let m = &spec.management;
    let r = resolved(spec, catalog, sw, mode, tech, Shape::FLAT)?;
    let mut f = Fabric::new(meta(spec, NetworkKind::OutOfBand, sw, mode, tech));
    let ports = device_ports_of(&mut f, spec, compute, mode, switches, pdus);
    let w = Wiring::new(&r, "oob-");
    let n = (ports.len() as u64).div_ceil(u64::from(per_switch)) as u32;
    let leaves: Vec<NodeId> = (0..n)
        .map(|i| w.switch(&mut f, Tier::Leaf, format!("switch{}", pad(i, n))))
        .collect();
    for (j, &p) in ports.iter().enumerate() {
        let leaf = leaves[j / per_switch as usize];
        let q = f.nth_port(leaf, j as u32 % per_switch);
        w.cable(&mut f, p, q, LinkKind::ServerLeaf);
    }
    cable(&mut f, &cable_ctx(spec, catalog, sw, mode, tech))?;
    let mut endpoints = BTreeMap::new();
    endpoints.insert("server BMCs".to_string(), u64::from(spec.servers.count));
    endpoints.insert("switches".to_string(), switches.len() as u64);
    endpoints.insert(
        "management nodes".to_string(),
        u64::from(m.management_servers),
    );
    endpoints.insert("fabric managers".to_string(), u64::from(m.fabric_managers));
    endpoints.insert("PDUs".to_string(), pdus);
    Ok(Network {
        kind: NetworkKind::OutOfBand,
        fabric: f,
        endpoints,
        uplinks_outside: 0,
        notes: notes(spec, mode, per_switch, ports.len(), n, pdus),
    })
}

/// The out-of-band ports to cable, in order: every server's BMC, every switch of every network by
/// its management port, the management nodes' and fabric managers' BMCs, the rack PDUs.
fn device_ports_of(
    f: &mut Fabric,
    spec: &ClusterSpec,
    compute: &Fabric,
    mode: &PortMode,
    switches: &[String],
    pdus: u64,
) -> Vec<PortId> {
    let m = &spec.management;
    let (gbps, lanes) = (mode.gbps, mode.lanes);
    let mut ports = servers_with_ports(f, compute, "bmc", 1, gbps, lanes);
    // Switches by their management port, management nodes and fabric managers by their BMC: their
    // numbered ports are data ports in the other networks' files.
    let (mgmt, bmc) = (["mgmt".to_string()], ["bmc".to_string()]);
    for name in switches {
        ports.extend(named_ports(f, name, &mgmt, gbps, lanes));
    }
    for i in 0..m.management_servers {
        ports.extend(named_ports(
            f,
            &format!("mgmt-node{}", pad(i, m.management_servers)),
            &bmc,
            gbps,
            lanes,
        ));
    }
    for i in 0..m.fabric_managers {
        ports.extend(named_ports(
            f,
            &format!("fabric-manager{}", pad(i, m.fabric_managers)),
            &bmc,
            gbps,
            lanes,
        ));
    }
    for i in 0..pdus as u32 {
        ports.extend(device_ports(
            f,
            format!("pdu{}", pad(i, pdus as u32)),
            1,
            gbps,
            lanes,
        ));
    }
    ports
}

/// How the out-of-band network was shaped: `n` switches for `ports` device ports, `per_switch`
/// used on each; its PDUs.
fn notes(
    spec: &ClusterSpec,
    mode: &PortMode,
    per_switch: u32,
    ports: usize,
    n: u32,
    pdus: u64,
) -> Vec<String> {
    let m = &spec.management;
    vec![
        if n <= 1 {
            format!(
                "1 switch with {} of {} ports used (at most {per_switch} per switch); {OOB_UPLINKS} uplinks into the in-band network (cabled there)",
                ports,
                mode.ports
            )
        } else {
            format!(
                "{n} switches with {} of {} ports used ({per_switch} on each but the last, which has {}); {OOB_UPLINKS} uplinks each into the in-band network (cabled there)",
                thousands(ports as f64),
                thousands(f64::from(n) * f64::from(mode.ports)),
                ports - (n as usize - 1) * per_switch as usize
            )
        },
        if m.pdus.is_some() {
            format!("{pdus} rack PDUs as given")
        } else {
            format!("{pdus} rack PDUs: {PDUS_PER_SERVER_RACK} per server rack and {PDUS_PER_OTHER_RACK} per other rack, the reference's rule (96 for its 32 DGX racks, 12 for its 6 other racks)")
        },
    ]
}
