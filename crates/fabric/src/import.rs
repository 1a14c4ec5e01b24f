//! Fabrics assembled from what a tool discovered (ibnetdiscover), rather than built from a spec.
//!
//! Discovery shows switches, HCAs and cables, not what is inside a server, so an assembled fabric has
//! NICs grouped into servers by name and no GPUs, PCIe switches or NVLink. Switch tiers are read off
//! the graph: leaves have HCAs, spines are one hop above leaves, cores are further up.

use crate::graph::{
    Fabric, FabricMeta, LinkKind, Medium, NodeId, NodeKind, NodeSpec, PortId, Server, Tier, Unused,
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
    let servers = group_by_first_appearance(
        devices
            .iter()
            .enumerate()
            .filter(|(_, d)| d.hca.is_some())
            .map(|(i, d)| (d.name.as_str(), i)),
    );
    let nics_per_server = servers
        .iter()
        .map(|(_, members)| members.len() as u32)
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
        guids: Default::default(),
    });

    // HCAs grouped by server (servers' nodes are contiguous), then switches. Ports no cable uses run
    // at the rate most cables run at (ties to the faster), whichever cable comes first.
    let mut id_of: Vec<NodeId> = vec![NodeId(0); n];
    let (gbps0, lanes0) = common_rate(cables);
    for (s, (server, mut members)) in servers.into_iter().enumerate() {
        let first_node = f.nodes.len() as u32;
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

/// `items` (key, index) grouped by key: the keys in order of first appearance, each with its
/// indexes in the order given. One map lookup per item (O(n log k) key comparisons for k keys): a
/// scan of every item per key made importing 131,072 HCAs take minutes (issue 33).
pub fn group_by_first_appearance<K: Ord + Copy>(
    items: impl IntoIterator<Item = (K, usize)>,
) -> Vec<(K, Vec<usize>)> {
    let mut group_of: BTreeMap<K, usize> = BTreeMap::new();
    let mut groups: Vec<(K, Vec<usize>)> = Vec::new();
    for (key, i) in items {
        let g = *group_of.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    groups
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

/// A discovered fabric with servers inside: every server of `discovered` gets the GPUs, PCIe
/// switches, CPU root complex, NVLink domain and NICs that `spec`'s servers have (discovery sees
/// none of them), its HCA `hcaN` becoming the server's compute NIC N (rail N-1), HCA port P the NIC's
/// network port P. Switches, ports and cables are the discovered ones, at their discovered rates.
/// Servers come in name order (numbers within names compared as numbers: `node2` before `node10`),
/// as a plan numbers them, so ranks and D-mod-K routes are placed as on the plan.
///
/// The spec's technology picks the NIC where the spec names none, and the switch model of switches
/// whose model discovery does not give (their latency comes from it); only its `servers` table and
/// `fabric.switch` are read otherwise. Errors name the spec field at fault (`servers.compute_nics`, `servers.nic`).
pub fn furnish(
    discovered: &Fabric,
    spec: &railyard_spec::ClusterSpec,
    catalog: &railyard_catalog::Catalog,
) -> Result<Fabric, BuildError> {
    let r = crate::resolve(spec, catalog)?;
    let s = &spec.servers;
    // Every discovered HCA must have a NIC to land on, each cabled port a network port.
    let mut by_server: Vec<Vec<(NodeId, u32)>> = vec![Vec::new(); discovered.servers.len()];
    for (i, n) in discovered.nodes.iter().enumerate() {
        if let (NodeKind::Nic { rail }, Some(srv)) = (n.kind, n.server) {
            let server = &discovered.servers[srv as usize].name;
            if rail >= s.compute_nics {
                return Err(err(
                    "servers.compute_nics",
                    format!(
                        "{server} has HCA {} but the servers have {} compute NICs; valid: at least {}",
                        n.name.rsplit('/').next().unwrap_or(&n.name),
                        s.compute_nics,
                        discovered.meta.compute_nics_per_server.max(rail + 1)
                    ),
                ));
            }
            for p in n.ports() {
                if discovered.port(p).link().is_some() {
                    let number = discovered.port(p).number;
                    if number > r.nic.ports {
                        return Err(err(
                            "servers.nic",
                            format!(
                                "{} has a cable on port {number} but a {} has {} network port{}",
                                n.name,
                                r.nic.id,
                                r.nic.ports,
                                if r.nic.ports == 1 { "" } else { "s" }
                            ),
                        ));
                    }
                }
            }
            by_server[srv as usize].push((NodeId(i as u32), rail));
        }
    }
    let mut order: Vec<usize> = (0..discovered.servers.len()).collect();
    order.sort_by(|&a, &b| {
        natural_cmp(&discovered.servers[a].name, &discovered.servers[b].name).then(a.cmp(&b))
    });

    let mut f = Fabric::new(FabricMeta {
        gpu_model: r.gpu.id.clone(),
        nic_model: r.nic.id.clone(),
        gpudirect: s.gpudirect,
        gpus_per_server: s.gpus_per_server,
        compute_nics_per_server: s.compute_nics,
        ..discovered.meta.clone()
    });
    if f.meta.switch_model.is_empty() {
        f.meta.switch_model = r.switch.id.clone();
    }
    let switch_model: std::sync::Arc<str> = r.switch.id.as_str().into();
    let template = crate::server::ServerTemplate::new(&f, &r);
    template.reserve(&mut f, order.len());
    // Discovered node -> (new node, first port) for HCAs and switches.
    let mut moved: Vec<Option<NodeId>> = vec![None; discovered.nodes.len()];
    for (index, &srv) in order.iter().enumerate() {
        let first = f.nodes.len();
        template.stamp(
            &mut f,
            index as u32,
            discovered.servers[srv].name.clone(),
            None,
        );
        let nics: BTreeMap<u32, NodeId> = (first..f.nodes.len())
            .filter_map(|i| match f.nodes[i].kind {
                NodeKind::Nic { rail } => Some((rail, NodeId(i as u32))),
                _ => None,
            })
            .collect();
        for &(node, rail) in &by_server[srv] {
            moved[node.0 as usize] = nics.get(&rail).copied();
        }
    }
    // Switches tier by tier (leaves first), each tier in name order as servers are: the order a
    // discovery lists them in is the order the tool met them from wherever it ran (ibnetdiscover
    // walks the fabric from its own HCA), and D-mod-K numbers destinations by leaf order.
    let mut switches: Vec<usize> = (0..discovered.nodes.len())
        .filter(|&i| discovered.nodes[i].is_switch())
        .collect();
    switches.sort_by(|&a, &b| {
        let (x, y) = (&discovered.nodes[a], &discovered.nodes[b]);
        x.tier()
            .cmp(&y.tier())
            .then_with(|| natural_cmp(&x.name, &y.name))
            .then(a.cmp(&b))
    });
    for i in switches {
        let n = &discovered.nodes[i];
        let id = f.add_node(
            NodeSpec {
                kind: n.kind,
                name: n.name.clone(),
                model: if n.model.is_empty() {
                    switch_model.clone()
                } else {
                    n.model.clone()
                },
                server: None,
                plane: n.plane,
            },
            n.num_ports,
            0.0,
            0,
            1,
        );
        let first = f.node(id).first_port as usize;
        for (k, p) in n.ports().enumerate() {
            let from = discovered.port(p);
            let to = &mut f.ports[first + k];
            to.gbps = from.gbps;
            to.lanes = from.lanes;
            to.cage = from.cage;
        }
        moved[i] = Some(id);
    }
    let port_of = |f: &Fabric, p: PortId| -> Result<PortId, BuildError> {
        let port = discovered.port(p);
        let node = moved[port.node.0 as usize].ok_or_else(|| {
            err(
                "discovered",
                format!("{} is not an HCA or a switch", discovered.port_node(p).name),
            )
        })?;
        Ok(f.nth_port(node, port.number - 1))
    };
    for (_, l) in discovered.network_links() {
        let (a, b) = (port_of(&f, l.a)?, port_of(&f, l.b)?);
        let id = f.connect(a, b, l.kind, l.gbps, l.lanes, l.medium.clone());
        f.links[id.0 as usize].run_m = l.run_m;
    }
    // NIC network ports no cable reached: discovery does not show them.
    for i in 0..f.ports.len() {
        let p = &f.ports[i];
        if matches!(f.nodes[p.node.0 as usize].kind, NodeKind::Nic { .. })
            && p.state == crate::graph::PortState::Unused(Unused::Spare)
        {
            f.ports[i].state = crate::graph::PortState::Unused(Unused::NotDiscovered);
        }
    }
    f.check().map_err(|e| err("discovered", e.0))?;
    Ok(f)
}

/// Names compared with runs of digits as numbers: `node2` < `node10`, `su1-srv02` < `su1-srv10`.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let run = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
                let (m, n) = (run(x), run(y));
                let (p, q) = (&x[..m], &y[..n]);
                // Without leading zeros, the longer run is the larger number.
                let strip = |s: &[u8]| {
                    let z = s.iter().take_while(|&&c| c == b'0').count();
                    s[z.min(s.len().saturating_sub(1))..].to_vec()
                };
                let (sp, sq) = (strip(p), strip(q));
                let ord = sp.len().cmp(&sq.len()).then_with(|| sp.cmp(&sq));
                if ord != std::cmp::Ordering::Equal {
                    return ord;
                }
                x = &x[m..];
                y = &y[n..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A server name that counts how often it is compared.
    #[derive(Clone, Copy)]
    struct Name<'a>(&'a str, &'a Cell<u64>);

    impl PartialEq for Name<'_> {
        fn eq(&self, other: &Self) -> bool {
            self.cmp(other) == std::cmp::Ordering::Equal
        }
    }
    impl Eq for Name<'_> {}
    impl PartialOrd for Name<'_> {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Name<'_> {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            self.1.set(self.1.get() + 1);
            self.0.cmp(other.0)
        }
    }

    /// Name comparisons to group `servers` servers' 8 HCAs each, listed as ibnetdiscover lists
    /// a rail-optimized fabric: leaf by leaf, so a server's HCAs are far apart.
    fn comparisons(servers: usize) -> u64 {
        let names: Vec<String> = (1..=servers).map(|s| format!("srv{s:05}")).collect();
        let count = Cell::new(0);
        let items = (0..8).flat_map(|_| names.iter().map(|n| Name(n, &count)));
        let groups = group_by_first_appearance(items.zip(0..));
        assert_eq!(groups.len(), servers);
        assert!(groups.iter().all(|(_, members)| members.len() == 8));
        assert_eq!(
            groups[1].1,
            (0..8).map(|h| h * servers + 1).collect::<Vec<_>>()
        );
        count.get()
    }

    /// Import grouped HCAs into servers by scanning every device for every server: 16,384
    /// servers of 8 HCAs took 23.8 s, 58% of it comparing names (issue 33). Grouping is one map
    /// lookup per HCA: comparisons grow as n log n, not n^2 (which would be 64 times as many
    /// for 8 times the servers, and 16,384 x 131,072 at the largest size).
    #[test]
    fn regression_import_was_quadratic_in_nodes() {
        let (small, large) = (comparisons(1024), comparisons(8192));
        let hcas = 8.0 * 8192.0;
        let per_hca = large as f64 / hcas;
        assert!(
            per_hca <= 2.0 * (8192f64).log2(),
            "{per_hca} comparisons per HCA"
        );
        // n log n with a B-tree's scans inside its nodes: 11x here.
        assert!(large <= 16 * small, "{small} -> {large} for 8x the servers");
    }

    #[test]
    fn hcas_group_into_servers_in_order_of_first_appearance() {
        let dev = |name: &str, hca: Option<&str>, ports: u32| Device {
            name: name.into(),
            hca: hca.map(str::to_string),
            ports,
        };
        let devices = [
            dev("leaf1", None, 3),
            dev("b", Some("hca2"), 1),
            dev("a", Some("hca1"), 1),
            dev("b", Some("hca1"), 1),
        ];
        let cables = [1, 2, 3].map(|d| Cable {
            a: (d, 1),
            b: (0, d as u32),
            gbps: 200.0,
            lanes: 4,
        });
        let f = assemble("t", Tech::IbHdr, &devices, &cables).unwrap();
        let names: Vec<&str> = f.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        let nics: Vec<&str> = f.nodes.iter().take(3).map(|n| n.name.as_str()).collect();
        assert_eq!(nics, ["b/hca1", "b/hca2", "a/hca1"]);
        assert_eq!(f.meta.compute_nics_per_server, 2);
    }
}
