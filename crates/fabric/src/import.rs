//! Fabrics assembled from what a tool discovered (ibnetdiscover), rather than built from a spec.
//!
//! Discovery shows switches, HCAs and cables, not what is inside a server, so an assembled fabric has
//! NICs grouped into servers by name and no GPUs, PCIe switches or NVLink. Switch tiers are read off
//! the graph: leaves have HCAs, spines are one hop above leaves, cores are further up.

use crate::graph::{
    Fabric, FabricMeta, LinkKind, Medium, NodeId, NodeKind, NodeSpec, Server, Tier, Unused,
};
use crate::{err, BuildError};
use railyard_catalog::Tech;
use std::collections::{BTreeMap, VecDeque};

/// A discovered switch or HCA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Switch name, or for an HCA its server (`su1-srv07`).
    pub name: String,
    /// For an HCA, its name within the server (`hca3`); `None` for switches.
    pub hca: Option<String>,
    pub ports: u32,
}

/// A discovered cable between two (device index, port number) ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Cable {
    pub a: (usize, u32),
    pub b: (usize, u32),
    pub gbps: f64,
    pub lanes: u32,
}

/// Assembles a fabric from discovered devices and cables. `name` names the fabric (a file name).
pub fn assemble(
    name: &str,
    tech: Tech,
    devices: &[Device],
    cables: &[Cable],
) -> Result<Fabric, BuildError> {
    // Tiers: leaves touch HCAs; every other switch's tier is its hop distance from the leaves.
    let n = devices.len();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for c in cables {
        for (i, _) in [c.a, c.b] {
            if i >= n {
                return Err(err(
                    "discovered",
                    format!("a cable names device {i} of {n}"),
                ));
            }
        }
        adj[c.a.0].push(c.b.0);
        adj[c.b.0].push(c.a.0);
    }
    let is_ca = |i: usize| devices[i].hca.is_some();
    let mut depth: Vec<Option<u32>> = vec![None; n];
    let mut queue = VecDeque::new();
    for i in 0..n {
        if !is_ca(i) && adj[i].iter().any(|&j| is_ca(j)) {
            depth[i] = Some(0);
            queue.push_back(i);
        }
    }
    while let Some(i) = queue.pop_front() {
        for &j in &adj[i] {
            if !is_ca(j) && depth[j].is_none() {
                depth[j] = Some(depth[i].unwrap_or(0) + 1);
                queue.push_back(j);
            }
        }
    }
    let tier_of = |i: usize| match depth[i] {
        Some(0) | None => Tier::Leaf,
        Some(1) => Tier::Spine,
        _ => Tier::Core,
    };
    let tiers = (0..n)
        .filter(|&i| !is_ca(i))
        .map(|i| match tier_of(i) {
            Tier::Leaf => 1,
            Tier::Spine => 2,
            Tier::Core => 3,
        })
        .max()
        .unwrap_or(1);

    // Servers by name, in order of first appearance; NICs numbered within each.
    let mut servers: BTreeMap<&str, u32> = BTreeMap::new();
    let mut server_names: Vec<&str> = Vec::new();
    for d in devices.iter().filter(|d| d.hca.is_some()) {
        servers.entry(d.name.as_str()).or_insert_with(|| {
            server_names.push(d.name.as_str());
            server_names.len() as u32 - 1
        });
    }
    let nics_per_server = server_names
        .iter()
        .map(|s| {
            devices
                .iter()
                .filter(|d| d.hca.is_some() && d.name == *s)
                .count() as u32
        })
        .max()
        .unwrap_or(0);
    let mut f = Fabric::new(FabricMeta {
        name: name.to_string(),
        tech,
        topology: "discovered".to_string(),
        switch_model: String::new(),
        port_mode: String::new(),
        nic_model: String::new(),
        gpu_model: String::new(),
        tiers,
        planes: 1,
        su_size: None,
        scalable_units: None,
        gpudirect: false,
        gpus_per_server: 0,
        compute_nics_per_server: nics_per_server,
        shape: None,
        oversubscription_requested: None,
    });

    // HCAs grouped by server (servers' nodes are contiguous), then switches. Ports no cable uses run
    // at the rate most cables run at (ties to the faster), whichever cable comes first.
    let mut id_of: Vec<NodeId> = vec![NodeId(0); n];
    let (gbps0, lanes0) = common_rate(cables);
    for (s, server) in server_names.iter().enumerate() {
        let first_node = f.nodes.len() as u32;
        let mut members: Vec<usize> = (0..n)
            .filter(|&i| devices[i].hca.is_some() && devices[i].name == *server)
            .collect();
        members.sort_by_key(|&i| hca_number(devices[i].hca.as_deref().unwrap_or("")));
        for (k, &i) in members.iter().enumerate() {
            let d = &devices[i];
            let local = d.hca.clone().unwrap_or_default();
            let rail = hca_number(&local).map_or(k as u32, |h| h.saturating_sub(1));
            // Network ports, then one PCIe port that discovery cannot see.
            let id = f.add_node(
                NodeSpec {
                    kind: NodeKind::Nic { rail },
                    name: format!("{server}/{local}"),
                    model: "".into(),
                    server: Some(s as u32),
                    plane: 0,
                },
                d.ports + 1,
                gbps0,
                lanes0,
                1,
            );
            for p in 0..d.ports {
                let port = f.nth_port(id, p);
                f.mark_unused(port, Unused::NotDiscovered);
            }
            let pcie = f.nth_port(id, d.ports);
            f.mark_unused(pcie, Unused::NotDiscovered);
            id_of[i] = id;
        }
        f.servers.push(Server {
            name: server.to_string(),
            su: None,
            first_node,
            num_nodes: f.nodes.len() as u32 - first_node,
        });
    }
    for (i, d) in devices.iter().enumerate() {
        if d.hca.is_some() {
            continue;
        }
        id_of[i] = f.add_node(
            NodeSpec {
                kind: NodeKind::Switch { tier: tier_of(i) },
                name: d.name.clone(),
                model: "".into(),
                server: None,
                plane: 0,
            },
            d.ports,
            gbps0,
            lanes0,
            1,
        );
    }

    // Cables, oriented with the end nearer the servers first.
    let rank = |i: usize| if is_ca(i) { 0 } else { 1 + tier_of(i) as u32 };
    let mut sorted: Vec<&Cable> = cables.iter().collect();
    sorted.sort_by_key(|c| (c.a, c.b));
    for c in sorted {
        let (lo, hi) = if rank(c.a.0) <= rank(c.b.0) {
            (c.a, c.b)
        } else {
            (c.b, c.a)
        };
        for (i, port) in [lo, hi] {
            if port == 0 || port > devices[i].ports {
                return Err(err(
                    "discovered",
                    format!(
                        "{} has {} ports, not port {port}",
                        devices[i].name, devices[i].ports
                    ),
                ));
            }
        }
        let kind = match (rank(lo.0), rank(hi.0)) {
            (0, 1) => LinkKind::ServerLeaf,
            (1, 2) => LinkKind::LeafSpine,
            (2, 3) => LinkKind::SpineCore,
            (0, _) => {
                return Err(err(
                    "discovered",
                    format!(
                        "an HCA of {} is cabled to something that is not a leaf switch",
                        devices[lo.0].name
                    ),
                ))
            }
            _ => LinkKind::InterSwitch,
        };
        let (pa, pb) = (
            f.nth_port(id_of[lo.0], lo.1 - 1),
            f.nth_port(id_of[hi.0], hi.1 - 1),
        );
        if f.port(pa).link().is_some() || f.port(pb).link().is_some() {
            return Err(err(
                "discovered",
                format!(
                    "a port of {} or {} carries two cables",
                    devices[lo.0].name, devices[hi.0].name
                ),
            ));
        }
        // Discovery measures no cable: the medium is known only as a cable of unknown kind and length.
        f.connect(pa, pb, kind, c.gbps, c.lanes, Medium::Discovered);
    }
    f.check().map_err(|e| err("discovered", e.0))?;
    Ok(f)
}

/// The (Gb/s, lanes) most cables run at, ties to the faster; (0, 4) without cables.
fn common_rate(cables: &[Cable]) -> (f64, u32) {
    let mut count: BTreeMap<(u64, u32), usize> = BTreeMap::new();
    for c in cables {
        // Non-negative f64s order as their bit patterns do.
        *count
            .entry((c.gbps.max(0.0).to_bits(), c.lanes))
            .or_default() += 1;
    }
    count
        .into_iter()
        .max_by_key(|&(_, k)| k)
        .map_or((0.0, 4), |((bits, lanes), _)| (f64::from_bits(bits), lanes))
}

/// `hca3` -> 3.
fn hca_number(local: &str) -> Option<u32> {
    local.strip_prefix("hca").and_then(|n| n.parse().ok())
}
