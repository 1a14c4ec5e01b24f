//! The in-band management network: leaves in pairs for the servers' bonded ports, two
//! inter-switch cables per pair, four uplinks per leaf to the spines, uplinks to the data centre.

use super::network::{
    cable_ctx, device_ports, meta, named_ports, resolved, servers_with_ports, NetSwitch, Network,
    NetworkKind,
};
use super::out_of_band::OOB_UPLINKS;
use crate::error::{err, BuildError};
use crate::graph::{Fabric, LinkKind, NodeId, PortId, Tier};
use crate::layout::cable;
use crate::search::tree_uppers;
use crate::shape::{Shape, Upper};
use crate::topo::{pad, Wiring};
use railyard_catalog::{Catalog, PortMode};
use railyard_spec::ClusterSpec;
use std::collections::BTreeMap;

/// In-band leaves send four uplinks each to the spines (RA-11333-001: 24 leaf-to-core cables on six
/// leaves).
const IN_BAND_LEAF_UPLINKS: u32 = 4;

/// In-band leaves are paired for the servers' bonded ports, two inter-switch cables per pair (the
/// reference: 6 for three pairs).
const IN_BAND_PAIR_LINKS: u32 = 2;

/// In-band host ports: servers, management nodes, user storage, out-of-band uplinks.
pub(super) fn in_band_hosts(spec: &ClusterSpec, n_oob: u64) -> InBandHosts {
    let m = &spec.management;
    InBandHosts {
        servers: u64::from(spec.servers.count) * u64::from(m.in_band_ports_per_server),
        management: u64::from(m.management_servers) * u64::from(m.management_server_ports),
        user_storage: u64::from(m.user_storage_ports),
        oob: n_oob * u64::from(OOB_UPLINKS),
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct InBandHosts {
    pub(super) servers: u64,
    pub(super) management: u64,
    pub(super) user_storage: u64,
    pub(super) oob: u64,
}

impl InBandHosts {
    fn total(&self) -> u64 {
        self.servers + self.management + self.user_storage + self.oob
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct InBandLayout {
    pub(super) down: u32,
    pub(super) leaves: u64,
    pub(super) upper: Upper,
    pub(super) spines: u64,
    pub(super) cores: u64,
}

impl InBandLayout {
    pub(super) fn switches(&self) -> u64 {
        self.leaves + self.spines + self.cores
    }
}

/// In-band leaves in pairs of `k - 4 - 2` host ports; above them a pair of spines (two links from
/// every leaf to each), four spines when more leaves than a spine can take twice, three tiers beyond.
pub(super) fn in_band_layout(k: u32, hosts: InBandHosts) -> Result<InBandLayout, BuildError> {
    let up = IN_BAND_LEAF_UPLINKS;
    if k <= up + IN_BAND_PAIR_LINKS {
        return Err(err(
            "management.in_band_switch",
            format!("a {k}-port switch leaves no host port after {up} uplinks and {IN_BAND_PAIR_LINKS} pair links"),
        ));
    }
    let down = k - up - IN_BAND_PAIR_LINKS;
    let pairs = hosts.total().div_ceil(2 * u64::from(down)).max(1);
    let leaves = 2 * pairs;
    if leaves == 2 {
        return Ok(InBandLayout {
            down,
            leaves,
            upper: Upper::None,
            spines: 0,
            cores: 0,
        });
    }
    // Prefer two spines (resilience) with the most links each, else the fewest switches.
    let mut best: Option<(u64, Upper, u64, u64)> = None;
    tree_uppers(k, up, leaves, &mut |upper| {
        let (spines, cores) = match upper {
            Upper::Two { spines, .. } => (u64::from(spines), 0),
            Upper::Three {
                pods,
                spines_per_pod,
                group,
                ..
            } => (
                pods.count(leaves, 1).0 * u64::from(spines_per_pod),
                u64::from(spines_per_pod) * u64::from(group),
            ),
            Upper::None => return true,
        };
        let score = spines + cores + if spines < 2 { 1_000_000 } else { 0 };
        if best.is_none_or(|b| score < b.0) {
            best = Some((score, upper, spines, cores));
        }
        true
    });
    let (_, upper, spines, cores) = best.ok_or_else(|| {
        err(
            "management.in_band_switch",
            format!("{leaves} in-band leaves do not fit three tiers of {k}-port switches"),
        )
    })?;
    Ok(InBandLayout {
        down,
        leaves,
        upper,
        spines,
        cores,
    })
}

pub(super) fn in_band_network(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
    switch: NetSwitch,
    n_oob: u64,
    oob_data_ports: u32,
) -> Result<Network, BuildError> {
    let NetSwitch { sw, mode, tech } = switch;
    let m = &spec.management;
    let k = mode.ports;
    let hosts = in_band_hosts(spec, n_oob);
    let l = in_band_layout(k, hosts)?;
    let shape = Shape {
        leaf_down: l.down,
        leaf_up: IN_BAND_LEAF_UPLINKS,
        su_size: None,
        upper: l.upper,
    };
    let r = resolved(spec, catalog, sw, mode, tech, shape)?;
    let mut f = Fabric::new(meta(spec, NetworkKind::InBand, sw, mode, tech));
    let ports = host_ports(&mut f, spec, compute, mode, n_oob, oob_data_ports);
    let w = Wiring::new(&r, "inband-");
    let n = l.leaves as u32;
    let leaves: Vec<NodeId> = (0..n)
        .map(|i| w.switch(&mut f, Tier::Leaf, format!("leaf{}", pad(i, n))))
        .collect();
    // Host j goes to pair j / (2 x down), alternating leaves: a server's two ports on both of a pair.
    for (j, &p) in ports.iter().enumerate() {
        let j = j as u32;
        let pair = j / (2 * l.down);
        let leaf = leaves[(2 * pair + j % 2) as usize];
        let q = f.nth_port(leaf, (j % (2 * l.down)) / 2);
        w.cable(&mut f, p, q, LinkKind::ServerLeaf);
    }
    for pair in 0..n / 2 {
        for t in 0..IN_BAND_PAIR_LINKS {
            let port = k - IN_BAND_PAIR_LINKS + t;
            let a = f.nth_port(leaves[2 * pair as usize], port);
            let b = f.nth_port(leaves[2 * pair as usize + 1], port);
            w.cable(&mut f, a, b, LinkKind::InterSwitch);
        }
    }
    w.upper(&mut f, &leaves, &shape);
    f.meta.tiers = match l.upper {
        Upper::None => 1,
        Upper::Two { .. } => 2,
        Upper::Three { .. } => 3,
    };
    cable(&mut f, &cable_ctx(spec, catalog, sw, mode, tech))?;
    let mut endpoints = BTreeMap::new();
    endpoints.insert("server ports".to_string(), hosts.servers);
    endpoints.insert("management node ports".to_string(), hosts.management);
    endpoints.insert("user storage ports".to_string(), hosts.user_storage);
    endpoints.insert("out-of-band switch uplinks".to_string(), hosts.oob);
    Ok(Network {
        kind: NetworkKind::InBand,
        fabric: f,
        endpoints,
        uplinks_outside: u64::from(m.uplinks),
        notes: notes(spec, &l),
    })
}

/// The in-band ports to cable, in order: the servers' (`inband1`, `inband2`), the management
/// nodes', the user storage's and the out-of-band switches' uplinks (`n_oob` switches whose
/// uplink ports follow their `oob_data_ports` RJ45 ports).
fn host_ports(
    f: &mut Fabric,
    spec: &ClusterSpec,
    compute: &Fabric,
    mode: &PortMode,
    n_oob: u64,
    oob_data_ports: u32,
) -> Vec<PortId> {
    let m = &spec.management;
    let (gbps, lanes) = (mode.gbps, mode.lanes);
    let mut ports = servers_with_ports(
        f,
        compute,
        "inband",
        m.in_band_ports_per_server,
        gbps,
        lanes,
    );
    for i in 0..m.management_servers {
        ports.extend(device_ports(
            f,
            format!("mgmt-node{}", pad(i, m.management_servers)),
            m.management_server_ports,
            gbps,
            lanes,
        ));
    }
    if m.user_storage_ports > 0 {
        ports.extend(device_ports(
            f,
            "user-storage".to_string(),
            m.user_storage_ports,
            gbps,
            lanes,
        ));
    }
    // The out-of-band switches' uplinks leave from their QSFP28 ports, numbered after the RJ45
    // ports the out-of-band network cables (SN2201: 1-48 RJ45, 49-52 QSFP28).
    let uplinks: Vec<String> = (0..OOB_UPLINKS)
        .map(|t| format!("p{}", oob_data_ports + 1 + t))
        .collect();
    for i in 0..n_oob as u32 {
        ports.extend(named_ports(
            f,
            &format!("oob-switch{}", pad(i, n_oob as u32)),
            &uplinks,
            gbps,
            lanes,
        ));
    }
    ports
}

/// How the in-band network was shaped.
fn notes(spec: &ClusterSpec, l: &InBandLayout) -> Vec<String> {
    let m = &spec.management;
    let leaves_note = if matches!(l.upper, Upper::None) {
        format!(
            "{} leaves in a pair of {} host ports each, {IN_BAND_PAIR_LINKS} cables within the pair; no uplinks cabled (one pair needs no spines; {IN_BAND_LEAF_UPLINKS} ports per leaf stay free for them)",
            l.leaves, l.down
        )
    } else {
        format!(
            "{} leaves in pairs of {} host ports, {IN_BAND_PAIR_LINKS} cables within each pair, {IN_BAND_LEAF_UPLINKS} uplinks per leaf",
            l.leaves, l.down
        )
    };
    vec![
        leaves_note,
        format!(
            "{} spines{}; {} uplinks to the data-centre network (counted, not priced: their far ends are the site's)",
            l.spines,
            if l.cores > 0 { format!(" and {} cores", l.cores) } else { String::new() },
            m.uplinks
        ),
    ]
}
