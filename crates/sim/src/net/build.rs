//! Building a [`FabricNet`] from a fabric: its resources, latencies, server devices and the links a failure leaves dead.

use crate::error::SimError;
use crate::fabric_net::packet_format;
use crate::net::failures::dead_parallel_links;
use crate::net::rates::{self, PacketFormat};
use crate::time::Time;
use railyard_catalog::Catalog;
use railyard_fabric::{Fabric, LinkId, LinkKind, Medium, NodeId, NodeKind, PortId, Tier};

use crate::fabric_net::check_calibration;
use crate::fabric_net::pcie_tlp_efficiency;
use crate::fabric_net::sharp_support;
use crate::fabric_net::FabricNet;
use crate::fabric_net::NetConfig;
use crate::fabric_net::ServerDevices;
use crate::fabric_net::HOST_STAGED_RECEIVE_GBS;
use crate::fabric_net::NIC_LATENCY;
use crate::fabric_net::PCIE_SWITCH_LATENCY;
impl<'f> FabricNet<'f> {
    /// Builds the network of `fabric`, one NVLink domain per server; `catalog` gives switch
    /// latencies and cable delays. A rack-scale system's trays are refused
    /// (`scale_up::scale_up_support`): their rack is one NVLink domain, which only
    /// [`FabricNet::over_nvlink_domains`] models.
    pub fn new(
        fabric: &'f Fabric,
        catalog: &Catalog,
        config: &NetConfig,
    ) -> Result<Self, SimError> {
        let bad = |what, message: String| SimError::Config { what, message };
        crate::net::scale_up::scale_up_support(fabric, catalog)
            .map_err(|m| bad("scale-up domain", m))?;
        Self::build(fabric, catalog, config, None)
    }

    /// Builds the network of `fabric` over its NVLink domains, as NCCL sees them
    /// (`crate::net::nvl_domain`): a rack-scale system's rack of trays is one of
    /// [`FabricNet::servers`] (multi-node NVLink), any other server its own. Ranks, communicators
    /// and [`FabricNet::active_servers`] then count domains. Refuses a fabric that is not whole
    /// racks, and a rack-scale fabric with GPUDirect RDMA off (its trays reach their NICs over
    /// GPUDirect RDMA, `NCCL_NET_GDR_C2C`; staging through another tray's host memory is not
    /// modelled).
    pub fn over_nvlink_domains(
        fabric: &'f Fabric,
        catalog: &Catalog,
        config: &NetConfig,
    ) -> Result<Self, SimError> {
        let bad = |what, message: String| SimError::Config { what, message };
        let domain = match crate::net::scale_up::scale_up_domain(fabric, catalog)
            .map_err(|m| bad("scale-up domain", m))?
        {
            crate::net::scale_up::ScaleUpDomain::Server => None,
            crate::net::scale_up::ScaleUpDomain::Rack { system, trays } => {
                let n = fabric.servers.len();
                if n == 0 || !n.is_multiple_of(trays as usize) {
                    return Err(bad(
                        "scale-up domain",
                        format!(
                            "{n} compute trays are not whole {system} racks of {trays} trays (one NVLink domain each); valid: a multiple of {trays}"
                        ),
                    ));
                }
                if !fabric.meta.gpudirect {
                    return Err(bad(
                        "scale-up domain",
                        format!(
                            "{system} trays reach their NICs with GPUDirect RDMA (NCCL_NET_GDR_C2C); GPUDirect RDMA off on a rack-scale NVLink domain is not modelled: valid: gpudirect = true"
                        ),
                    ));
                }
                let clique_trays = config.rack_trays.unwrap_or(trays);
                if !(1..=trays).contains(&clique_trays) {
                    return Err(bad(
                        "trays per rack",
                        format!(
                            "{clique_trays} trays of each {system} rack: a rack holds {trays}; valid: 1 to {trays}"
                        ),
                    ));
                }
                Some(crate::net::nvl_domain::NvlDomain {
                    system,
                    trays,
                    clique_trays,
                })
            }
        };
        if domain.is_none() {
            if let Some(t) = config.rack_trays {
                return Err(bad(
                    "trays per rack",
                    format!(
                        "{t} trays of each rack: the design's servers are no rack-scale system's compute trays; valid: a GB200 or GB300 NVL72 design (gb200-nvl72-superpod, gb300-nvl72)"
                    ),
                ));
            }
        }
        Self::build(fabric, catalog, config, domain)
    }

    fn build(
        fabric: &'f Fabric,
        catalog: &Catalog,
        config: &NetConfig,
        domain: Option<crate::net::nvl_domain::NvlDomain>,
    ) -> Result<Self, SimError> {
        let f = fabric;
        let bad = |what, message: String| SimError::Config { what, message };
        check(f, catalog, config)?;
        let format = packet_format(f);
        let nl = f.links.len();
        let mut failed = vec![false; nl];
        for l in &config.failed {
            let Some(x) = failed.get_mut(l.0 as usize) else {
                return Err(bad("failed links", format!("no link {}", l.0)));
            };
            *x = true;
        }
        let (mut capacity, link_latency) = link_resources(f, catalog, config, format)?;
        for _ in &f.servers {
            capacity.push(config.host_memory_gbs * 1e9 / 2.0);
        }
        let (staged_receive, staged_receivers) = staged_receive(f, &mut capacity);
        let node_latency = f
            .nodes
            .iter()
            .map(|n| match n.kind {
                NodeKind::Switch { .. } => catalog
                    .switches
                    .get(&*n.model)
                    .map_or(Time::ZERO, |s| Time::from_ns(u64::from(s.latency_ns))),
                NodeKind::PcieSwitch => PCIE_SWITCH_LATENCY,
                NodeKind::Nic { .. } => NIC_LATENCY,
                _ => Time::ZERO,
            })
            .collect();

        let nn = f.nodes.len();
        let NodeLinks {
            pcie_up,
            nvlink,
            up,
            down,
            lateral,
        } = node_links(f);

        let (leaf_no, leaves, port_leaf, port_index) = destinations(f, &up, &down);

        let (words, below, reach) =
            reachability(f, &leaves, &leaf_no, &up, &down, &lateral, &failed);

        let servers: Vec<ServerDevices> = f
            .servers
            .iter()
            .map(|s| server_devices(f, s.first_node, s.num_nodes, &pcie_up))
            .collect();
        let gpu_nodes: Vec<Vec<NodeId>> = servers.iter().map(|s| s.gpus.clone()).collect();
        let mesh = crate::net::xgmi::XgmiMesh::build(f, catalog, &gpu_nodes, &mut capacity);
        let per_domain = domain.as_ref().map_or(1, |d| d.trays as usize);
        let used = domain.as_ref().map_or(1, |d| d.clique_trays as usize);
        let servers = if per_domain > 1 {
            merge_domains(&servers, per_domain, used)
        } else {
            servers
        };

        let up_parallel = up_parallel(f, &up);

        let mut drained = vec![false; f.servers.len()];
        for &s in &config.drained {
            let Some(x) = drained.get_mut(s) else {
                return Err(bad("drained servers", format!("no server {s}")));
            };
            *x = true;
        }
        // A domain runs a job only with every tray of its clique (one NCCL clique).
        let active: Vec<usize> = (0..servers.len())
            .filter(|&d| !drained[d * per_domain..d * per_domain + used].contains(&true))
            .collect();
        let dead_parallel = dead_parallel_links(f, &up, &down, &failed);
        let tier_above = f.links.iter().any(|l| l.kind == LinkKind::SpineCore);
        let live_count =
            |links: &[LinkId]| links.iter().filter(|&&l| !failed[l.0 as usize]).count() as u32;
        let ways = (0..nn)
            .map(|n| match up[n].len() {
                0 => lateral[n].len() as u32,
                k => k as u32,
            })
            .collect();
        let live_ways = (0..nn)
            .map(|n| match live_count(&up[n]) {
                0 => live_count(&lateral[n]),
                k => k,
            })
            .collect();
        let ends = f
            .links
            .iter()
            .map(|l| (f.port(l.a).node.0, f.port(l.b).node.0))
            .collect();
        let (nic_port_at, nic_ports) = nic_ports(f, &failed);
        Ok(FabricNet {
            fabric,
            active,
            drained,
            domain,
            dead_parallel,
            tier_above,
            live_ways,
            ways,
            ends,
            nic_port_at,
            nic_ports,
            capacity,
            link_latency,
            node_latency,
            degraded: failed.contains(&true),
            failed,
            gpudirect: f.meta.gpudirect,
            sharp: config.sharp,
            extra_latency_us: config.calibration.latency_us,
            gpu_generation: catalog
                .gpus
                .get(&f.meta.gpu_model)
                .and_then(|g| g.generation),
            servers,
            pcie_up,
            staged_receive,
            staged_receivers,
            nvlink,
            mesh,
            up,
            down,
            lateral,
            up_parallel,
            port_leaf,
            port_index,
            words,
            below,
            reach,
            down_table: std::sync::OnceLock::new(),
        })
    }
}

/// Finds one server's GPUs, NICs and their nearness.
pub(crate) fn server_devices(
    f: &Fabric,
    first: u32,
    count: u32,
    pcie_up: &[Option<LinkId>],
) -> ServerDevices {
    let mut gpus = Vec::new();
    let mut nics: Vec<(u32, NodeId)> = Vec::new();
    let mut cpu = None;
    for i in first..first + count {
        let id = NodeId(i);
        match f.node(id).kind {
            NodeKind::Gpu => gpus.push(id),
            NodeKind::Nic { rail } => nics.push((rail, id)),
            NodeKind::Cpu => cpu = Some(id),
            _ => {}
        }
    }
    nics.sort();
    let nics: Vec<NodeId> = nics.into_iter().map(|(_, n)| n).collect();
    let parent = |n: NodeId| {
        pcie_up[n.0 as usize]
            .map(|l| f.port(f.link(l).b).node)
            .filter(|&p| f.node(p).kind == NodeKind::PcieSwitch)
    };
    let nic_parent: Vec<Option<NodeId>> = nics.iter().map(|&n| parent(n)).collect();
    let (g, k) = (gpus.len() as u32, nics.len() as u32);
    let mut nic_of_gpu = Vec::with_capacity(gpus.len());
    for (i, &gpu) in gpus.iter().enumerate() {
        let p = parent(gpu);
        let near: Vec<u32> = (0..k)
            .filter(|&r| p.is_some() && nic_parent[r as usize] == p)
            .collect();
        let rail = if near.is_empty() {
            (i as u32 * k) / g.max(1)
        } else {
            // GPUs on one switch take its NICs in turn.
            let pos = gpus[..i].iter().filter(|&&o| parent(o) == p).count();
            near[pos % near.len()]
        };
        nic_of_gpu.push(rail.min(k.saturating_sub(1)));
    }
    let gpus_of_nic = (0..k)
        .map(|r| (0..g).filter(|&i| nic_of_gpu[i as usize] == r).collect())
        .collect();
    let gpus_near_nic = (0..k as usize)
        .map(|r| {
            (0..g)
                .filter(|&i| nic_parent[r].is_some() && parent(gpus[i as usize]) == nic_parent[r])
                .collect()
        })
        .collect();
    ServerDevices {
        gpus,
        nics,
        cpu,
        nic_of_gpu,
        gpus_of_nic,
        gpus_near_nic,
    }
}

/// `ups` (one switch's up-links, in port order) reordered round-robin over their parents: the
/// first link to each parent in the order the parents first appear, then the second to each, and
/// so on. A switch cabled round-robin by port keeps its order.
pub(crate) fn round_robin_over_parents(f: &Fabric, ups: &[LinkId]) -> Vec<LinkId> {
    let mut groups: Vec<(NodeId, Vec<LinkId>)> = Vec::new();
    for &l in ups {
        let parent = f.port(f.link(l).b).node;
        match groups.iter_mut().find(|(p, _)| *p == parent) {
            Some((_, links)) => links.push(l),
            None => groups.push((parent, vec![l])),
        }
    }
    let deepest = groups
        .iter()
        .map(|(_, links)| links.len())
        .max()
        .unwrap_or(0);
    (0..deepest)
        .flat_map(|t| {
            groups
                .iter()
                .filter_map(move |(_, links)| links.get(t).copied())
        })
        .collect()
}

/// Each link's two directions as resources (bytes per second: the payload rate of its packet
/// `format`, PCIe's after TLP efficiency, a NIC cable held to a calibrated NIC rate) and its
/// cable or fibre delay.
fn link_resources(
    f: &Fabric,
    catalog: &Catalog,
    config: &NetConfig,
    format: PacketFormat,
) -> Result<(Vec<f64>, Vec<Time>), SimError> {
    let bad = |what, message: String| SimError::Config { what, message };
    let nl = f.links.len();
    let mut capacity = Vec::with_capacity(2 * nl + f.servers.len());
    let mut link_latency = Vec::with_capacity(nl);
    for l in &f.links {
        let bytes = match (l.kind, &l.medium) {
            (LinkKind::Nvlink, _) => rates::raw_rate(l.gbps),
            (LinkKind::Pcie | LinkKind::PcieUplink, Medium::Pcie { gen }) => {
                rates::raw_rate(l.gbps) * pcie_tlp_efficiency(*gen)
            }
            (LinkKind::Pcie | LinkKind::PcieUplink, _) => rates::raw_rate(l.gbps),
            _ => format.payload_rate(l.gbps),
        };
        if !(bytes.is_finite() && bytes > 0.0) {
            return Err(bad(
                "fabric",
                format!("a {} link has no rate", l.kind.as_str()),
            ));
        }
        // A calibrated NIC rate holds the NIC's cable to what the NIC delivers (at most the
        // line rate: `check_calibration` above).
        let bytes = match (l.kind, config.calibration.nic_gbs) {
            (LinkKind::ServerLeaf, Some(gbs)) => bytes.min(gbs * 1e9),
            _ => bytes,
        };
        capacity.push(bytes);
        capacity.push(bytes);
        let delay = match &l.medium {
            Medium::Cable { part, length_m, .. } => catalog
                .cables
                .get(&**part)
                .map_or(0.0, |c| c.delay_ns_per_m * length_m),
            Medium::Fibre { part, length_m, .. } => catalog
                .fibres
                .get(&**part)
                .map_or(0.0, |c| c.delay_ns_per_m * length_m),
            _ => 0.0,
        };
        link_latency.push(Time::from_ps((delay * 1000.0).round() as u64));
    }
    Ok((capacity, link_latency))
}

/// Per node, its PCIe up-link, its NVLink, and its network links up, down and lateral.
struct NodeLinks {
    pcie_up: Vec<Option<LinkId>>,
    nvlink: Vec<Option<LinkId>>,
    up: Vec<Vec<LinkId>>,
    down: Vec<Vec<LinkId>>,
    lateral: Vec<Vec<LinkId>>,
}

/// Every node's links ([`NodeLinks`]), each switch's in its own port order and its up-links
/// round-robin over its parents.
fn node_links(f: &Fabric) -> NodeLinks {
    // Per-node link lists.
    let nn = f.nodes.len();
    let mut pcie_up = vec![None; nn];
    let mut nvlink = vec![None; nn];
    let mut up = vec![Vec::new(); nn];
    let mut down = vec![Vec::new(); nn];
    let mut lateral = vec![Vec::new(); nn];
    for (i, l) in f.links.iter().enumerate() {
        let id = LinkId(i as u32);
        let (a, b) = (f.port(l.a).node, f.port(l.b).node);
        match l.kind {
            LinkKind::Pcie | LinkKind::PcieUplink => pcie_up[a.0 as usize] = Some(id),
            LinkKind::Nvlink => nvlink[a.0 as usize] = Some(id),
            LinkKind::ServerLeaf => down[b.0 as usize].push(id),
            LinkKind::LeafSpine | LinkKind::SpineCore => {
                up[a.0 as usize].push(id);
                down[b.0 as usize].push(id);
            }
            LinkKind::InterSwitch => {
                lateral[a.0 as usize].push(id);
                lateral[b.0 as usize].push(id);
            }
        }
    }

    // Each switch's lists in its own port order, whatever order the links were made in: a
    // plan makes them so, a discovered fabric in the order the tool met the cables (D-mod-K
    // numbers a leaf's hosts, and OpenSM's ftree its port groups, by port).
    let port_at = |l: LinkId, at: usize| {
        let link = f.link(l);
        let a = f.port(link.a);
        if a.node.0 as usize == at {
            a.number
        } else {
            f.port(link.b).number
        }
    };
    for lists in [&mut up, &mut down, &mut lateral] {
        for (at, links) in lists.iter_mut().enumerate() {
            if !links.is_sorted_by_key(|&l| port_at(l, at)) {
                links.sort_by_key(|&l| port_at(l, at));
            }
        }
    }
    // A switch's up-links in OpenSM ftree's order: round-robin over the parents (in the order
    // of their first port), then over each parent's parallel links. D-mod-K picks the up-link
    // `destination mod n` of this list, as ftree picks a port group and then a port of it
    // (osm_ucast_ftree.c), whatever the port numbering: a leaf whose twin-port cages send
    // both ports to one spine (p33 and p34 to spine01) routes as one cabled round-robin.
    for ups in &mut up {
        if ups.len() > 1 {
            *ups = round_robin_over_parents(f, ups);
        }
    }
    NodeLinks {
        pcie_up,
        nvlink,
        up,
        down,
        lateral,
    }
}

/// The leaves by number (`leaf_no` per node, `leaves` in order) and, per NIC port, its leaf's
/// number and its D-mod-K destination index.
#[allow(clippy::type_complexity)]
fn destinations(
    f: &Fabric,
    up: &[Vec<LinkId>],
    down: &[Vec<LinkId>],
) -> (Vec<u32>, Vec<NodeId>, Vec<u32>, Vec<u32>) {
    let nn = f.nodes.len();
    // Leaves and D-mod-K destination indexes: NIC ports in order of (leaf, leaf port).
    let mut leaf_no = vec![u32::MAX; nn];
    let mut leaves = Vec::new();
    for (i, n) in f.nodes.iter().enumerate() {
        if n.tier() == Some(Tier::Leaf) {
            leaf_no[i] = leaves.len() as u32;
            leaves.push(NodeId(i as u32));
        }
    }
    let mut port_leaf = vec![u32::MAX; f.ports.len()];
    let mut port_index = vec![u32::MAX; f.ports.len()];
    // D-mod-K numbers destinations in tree order (Zahavi, "D-Mod-K Routing Providing
    // Non-Blocking Traffic for Shift Permutations on Real Life Fat Trees", 2010): the hosts of
    // a leaf consecutive, and the leaves that share their parents (a pod, or a rail group of a
    // rail-optimized design) consecutive, so that the digit read at each tier
    // (`index / ups below`) counts leaves within the group its parents serve. In plain leaf
    // order a rail-optimized design interleaves the rails, the spine tier's digit takes only
    // a few values per rail and a shift permutation collides at the cores.
    // Leaves with the same first parent form one group (pods and rail groups have disjoint
    // parents; in two tiers every leaf shares them all, and the order stays the leaves').
    let first_parent = |leaf: NodeId| -> Option<u32> {
        up[leaf.0 as usize]
            .iter()
            .map(|&l| f.port(f.link(l).b).node.0)
            .min()
    };
    let mut tree_order: Vec<(Option<u32>, NodeId)> = leaves
        .iter()
        .map(|&leaf| (first_parent(leaf), leaf))
        .collect();
    tree_order.sort_unstable();
    // Every leaf counts as many destinations as the fullest: a leaf short of hosts (the last
    // scalable unit partly filled) leaves its missing hosts' numbers unused, as OpenSM's ftree
    // routes "dummy" compute nodes up to `max_cn_per_leaf` on every leaf (osm_ucast_ftree.c,
    // `fabric_route_to_cns`), so the leaves after it keep the up-ports a full fabric gives
    // them. Numbered without gaps, two hops of one job met on one up-link behind a short leaf
    // (the default design's data-parallel reduce-scatter ran at half a NIC's rate on 126 and
    // 127 servers, where 124 and 125 ran at its full rate).
    let hosts_on = |leaf: NodeId| {
        down[leaf.0 as usize]
            .iter()
            .filter(|&&l| f.link(l).kind == LinkKind::ServerLeaf)
            .count() as u32
    };
    let per_leaf = tree_order
        .iter()
        .map(|&(_, leaf)| hosts_on(leaf))
        .max()
        .unwrap_or(0);
    for (k, &(_, leaf)) in tree_order.iter().enumerate() {
        let mut next = k as u32 * per_leaf;
        for &l in &down[leaf.0 as usize] {
            let link = f.link(l);
            if link.kind == LinkKind::ServerLeaf {
                port_leaf[link.a.0 as usize] = leaf_no[leaf.0 as usize];
                port_index[link.a.0 as usize] = next;
                next += 1;
            }
        }
    }
    (leaf_no, leaves, port_leaf, port_index)
}

/// Reachability over live links as bitsets over leaves, `words` 64-bit words per node: the leaves
/// `below` each switch, and those it can `reach` (below, across lateral links, or through a
/// parent).
fn reachability(
    f: &Fabric,
    leaves: &[NodeId],
    leaf_no: &[u32],
    up: &[Vec<LinkId>],
    down: &[Vec<LinkId>],
    lateral: &[Vec<LinkId>],
    failed: &[bool],
) -> (usize, Vec<u64>, Vec<u64>) {
    let nn = f.nodes.len();
    // Reachability over live links, as bitsets over leaves.
    let words = leaves.len().div_ceil(64).max(1);
    let mut below = vec![0u64; nn * words];
    let mut reach = vec![0u64; nn * words];
    for (k, &leaf) in leaves.iter().enumerate() {
        below[leaf.0 as usize * words + k / 64] |= 1 << (k % 64);
    }
    let switches_of = |t: Tier| -> Vec<usize> {
        f.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.tier() == Some(t))
            .map(|(i, _)| i)
            .collect()
    };
    let tiers: Vec<Vec<usize>> = Tier::ALL.iter().map(|&t| switches_of(t)).collect();
    for tier in tiers.iter().skip(1) {
        for &s in tier {
            for &l in &down[s] {
                if failed[l.0 as usize] {
                    continue;
                }
                let child = f.port(f.link(l).a).node.0 as usize;
                for w in 0..words {
                    below[s * words + w] |= below[child * words + w];
                }
            }
        }
    }
    // Lateral links (two-switch designs) join leaves.
    for &s in &tiers[0] {
        for &l in &lateral[s] {
            if failed[l.0 as usize] {
                continue;
            }
            let link = f.link(l);
            let other = {
                let (a, b) = (
                    f.port(link.a).node.0 as usize,
                    f.port(link.b).node.0 as usize,
                );
                if a == s {
                    b
                } else {
                    a
                }
            };
            let k = leaf_no[other] as usize;
            reach[s * words + k / 64] |= 1 << (k % 64);
        }
    }
    for tier in tiers.iter().rev() {
        for &s in tier {
            for w in 0..words {
                reach[s * words + w] |= below[s * words + w];
            }
            for &l in &up[s] {
                if failed[l.0 as usize] {
                    continue;
                }
                let parent = f.port(f.link(l).b).node.0 as usize;
                for w in 0..words {
                    reach[s * words + w] |= reach[parent * words + w];
                }
            }
        }
    }
    (words, below, reach)
}

/// What every network refuses before building anything (its constructor has refused the scale-up
/// domains it does not cover): a calibration or host memory rate out of range, SHARP the hardware lacks, a NIC rate
/// above the line rate.
fn check(f: &Fabric, catalog: &Catalog, config: &NetConfig) -> Result<(), SimError> {
    let bad = |what, message: String| SimError::Config { what, message };
    config
        .calibration
        .check()
        .map_err(|(what, message)| bad(what, message))?;
    if crate::time::Rate::from_gbs(config.host_memory_gbs).is_none() {
        return Err(bad("host-memory-gbs", "must be above zero".into()));
    }
    if config.sharp {
        sharp_support(f, catalog).map_err(|m| bad("sharp", m))?;
    }
    check_calibration(f, &config.calibration)?;
    Ok(())
}

/// Without GPUDirect RDMA, one more resource per GPU, appended to `capacity`: its receive through
/// host memory. Per node the resource (or `u32::MAX`), and the GPUs that have one in order.
fn staged_receive(f: &Fabric, capacity: &mut Vec<f64>) -> (Vec<u32>, Vec<NodeId>) {
    // Without GPUDirect RDMA, one more resource per GPU: its receive through host memory.
    let mut staged_receive = vec![u32::MAX; f.nodes.len()];
    let mut staged_receivers = Vec::new();
    if !f.meta.gpudirect {
        for (i, n) in f.nodes.iter().enumerate() {
            if n.kind == NodeKind::Gpu {
                staged_receive[i] = capacity.len() as u32;
                staged_receivers.push(NodeId(i as u32));
                capacity.push(HOST_STAGED_RECEIVE_GBS * 1e9);
            }
        }
    }
    (staged_receive, staged_receivers)
}

/// Per link, for an up-link its index among the parallel links to the same parent and their
/// number; `(0, 1)` for every other link.
fn up_parallel(f: &Fabric, up: &[Vec<LinkId>]) -> Vec<(u32, u32)> {
    let mut up_parallel = vec![(0, 1); f.links.len()];
    let mut by_parent: Vec<(NodeId, usize)> = Vec::new();
    for ups in up {
        by_parent.clear();
        by_parent.extend(
            ups.iter()
                .enumerate()
                .map(|(i, &l)| (f.port(f.link(l).b).node, i)),
        );
        by_parent.sort_unstable();
        for group in by_parent.chunk_by(|a, b| a.0 == b.0) {
            for (k, &(_, i)) in group.iter().enumerate() {
                up_parallel[ups[i].0 as usize] = (k as u32, group.len() as u32);
            }
        }
    }
    up_parallel
}

/// The NICs' live network ports, in node order, and per node where its ports start in that list.
fn nic_ports(f: &Fabric, failed: &[bool]) -> (Vec<u32>, Vec<PortId>) {
    let nn = f.nodes.len();
    let mut nic_port_at = Vec::with_capacity(nn + 1);
    let mut nic_ports = Vec::new();
    nic_port_at.push(0);
    for n in &f.nodes {
        if matches!(n.kind, NodeKind::Nic { .. }) {
            nic_ports.extend(n.ports().filter(|&p| {
                f.port(p)
                    .link()
                    .is_some_and(|l| f.link(l).kind.is_network() && !failed[l.0 as usize])
            }));
        }
        nic_port_at.push(nic_ports.len() as u32);
    }
    (nic_port_at, nic_ports)
}

/// `trays`, a server's devices each, grouped `per_domain` at a time into one device set per
/// NVLink domain of its first `used` trays (the job's clique): GPUs and NICs in tray order, the
/// rails numbered on from tray to tray, each GPU near (and owning) its own tray's NICs. A last
/// group short of `per_domain` is not built (the caller refuses fabrics that are not whole
/// domains).
pub(crate) fn merge_domains(
    trays: &[ServerDevices],
    per_domain: usize,
    used: usize,
) -> Vec<ServerDevices> {
    trays
        .chunks_exact(per_domain.max(1))
        .map(|rack| {
            let group = &rack[..used.clamp(1, rack.len())];
            let mut d = ServerDevices {
                gpus: Vec::new(),
                nics: Vec::new(),
                cpu: group.first().and_then(|t| t.cpu),
                nic_of_gpu: Vec::new(),
                gpus_of_nic: Vec::new(),
                gpus_near_nic: Vec::new(),
            };
            for t in group {
                let (g0, r0) = (d.gpus.len() as u32, d.nics.len() as u32);
                d.gpus.extend_from_slice(&t.gpus);
                d.nics.extend_from_slice(&t.nics);
                d.nic_of_gpu.extend(t.nic_of_gpu.iter().map(|&r| r0 + r));
                let shift = |v: &Vec<u32>| v.iter().map(|&g| g0 + g).collect::<Vec<u32>>();
                d.gpus_of_nic.extend(t.gpus_of_nic.iter().map(shift));
                d.gpus_near_nic.extend(t.gpus_near_nic.iter().map(shift));
            }
            d
        })
        .collect()
}
