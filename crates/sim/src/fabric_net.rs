//! A railyard [`Fabric`] as an engine network: every link direction, and every server's host memory,
//! is a resource; routes run GPU -> PCIe -> NIC -> network -> NIC -> PCIe -> GPU, or over NVLink
//! inside a server.
//!
//! # Capacities (bytes per second, per direction)
//!
//! - Network links: the link's data rate after packet headers at a 4096-byte MTU,
//!   [`rates::INFINIBAND`] or [`rates::ROCE_V2`] by the fabric technology's family.
//! - PCIe links: the link's rate after line coding (`railyard_catalog::pcie_gbps`) times the TLP
//!   efficiency of [`pcie_tlp_efficiency`] (256-byte max payload).
//! - NVLink: the GPU's catalog rate (links x GB/s per link, NCCL topo.h figures), per direction,
//!   between the GPU and its NVLink domain (NVSwitch): a GPU-to-GPU transfer crosses its sender's
//!   egress and its receiver's ingress.
//! - Host memory (GPUDirect RDMA off): one resource per server of [`NetConfig::host_memory_gbs`]
//!   / 2, since every staged byte is written to and read back from memory.
//!
//! GPUs that share a NIC, a PCIe switch or an uplink to the root complex cross the same resources
//! and so contend by construction.
//!
//! # Latency per path
//!
//! Switch latency from the switch's catalog entry (`latency_ns`) for every switch crossed; cable
//! propagation from the link's stocked length x the cable or fibre's catalog `delay_ns_per_m`;
//! [`NIC_LATENCY`] at each end of a network path and [`PCIE_SWITCH_LATENCY`] per PCIe switch.
//!
//! # Routing
//!
//! Inside a tree of switches (leaf, spine, core; `Link::a` is the end nearer the servers) a route
//! goes up until it reaches a switch with the destination leaf below it, then down. At every
//! choice among equal-cost ports the [`Routing`](crate::routing::Routing) policy answers: D-mod-K takes the destination's
//! index (NIC ports ordered by leaf, as OpenSM's ftree numbers them) divided by the product of the
//! up-port counts below, modulo the ports (on the way down, among parallel links to one switch, the
//! parallel index taken on the way up, so the up-ports' spread carries down) (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for
//! Shift Permutations on Real Life Fat Trees", 2010); ECMP hashes; adaptive spreads a connection
//! over every up-port of its first switch. A failed link is never taken: the choice falls to the
//! next port that still leads to the destination. Any other route source (an OpenSM LFT dump)
//! plugs in through [`FabricRouting`].

use crate::calibration::Calibration;
use crate::engine::{ResourceId, Weight, Workload};
use crate::error::SimError;
use crate::rates::{self, PacketFormat};
use crate::routing::{mix64, RoutingConfig, RoutingKind};
use crate::time::Time;
use railyard_catalog::{Catalog, Family, GpuGeneration, Sharp};
use railyard_fabric::{Fabric, LinkId, LinkKind, Medium, NodeId, NodeKind, PortId, Tier};
use std::collections::BTreeSet;

pub use crate::tree_router::TreeRouter;

/// One adapter's share of the end-to-end adapter latency: NVIDIA quotes "sub-600ns latency" for
/// ConnectX-6 VPI (ConnectX-6 user manual, Introduction, docs.nvidia.com/networking, H); half of
/// it at each end of a network path.
pub const NIC_LATENCY: Time = Time::from_ns(300);

/// Cut-through latency of a PCIe switch between x16 ports: 105 ns for Broadcom's PEX88000 (Gen4,
/// Broadcom's claim reported by the Linley Newsletter, 24 Sep 2019, M) and 115 ns for the PEX89000
/// (Gen5, M); the Gen5 figure is used.
pub const PCIE_SWITCH_LATENCY: Time = Time::from_ns(115);

/// Default host memory bandwidth of a server, GB/s: two sockets with eight DDR5-4800 channels each
/// (DGX H100: 2 x Xeon Platinum 8480C, NVIDIA DGX H100 datasheet), 38.4 GB/s per channel (JEDEC
/// JESD79-5: 4800 MT/s x 8 bytes) = 614.4 GB/s peak.
pub const HOST_MEMORY_GBS: f64 = 614.4;

/// What one GPU receives from the network without GPUDirect RDMA, GB/s. NCCL then keeps its
/// receive buffers in host memory and the GPU's own kernel reads them across PCIe (NVIDIA/nccl
/// src/transport/net.cc, `recvProxyConnect`: device memory only with `useGdr`), so a GPU receives
/// well below what its NIC delivers to host memory. NCCL's maintainer, for an HDR NIC that gives
/// 24 GB/s with GPUDirect RDMA: "If the NIC is attached to the CPU getting 16 GB/s is normal"
/// (NVIDIA/nccl#412, 2023; the reporter measured 15.3 GB/s all-reduce busbw on A800s). The value is
/// taken from there alone; docs/validation.md tests it on other runs (one H100 per node through a
/// 400G NIC, "GDR 0", NCCL 2.26.2). A slower NIC binds first: 11.4 GB/s through 100G on an L40S
/// pair, the same with GPUDirect RDMA on (NCCL 2.27.3). Only receives are
/// capped: the GPU writes its sends to host memory with posted PCIe writes, which do not wait for
/// a reply. Every GPU of the catalog reaches host memory over PCIe (Grace-Hopper's NVLink-C2C is
/// not modelled).
pub const HOST_STAGED_RECEIVE_GBS: f64 = 16.0;

/// PCIe links followed from a device up to its CPU: railyard's servers have at most 2 (device,
/// switch, CPU); a deeper tree in a fabric file is cut here, and a loop of PCIe links ends.
const PCIE_DEPTH: usize = 8;

/// Fraction of a PCIe link carrying payload with 256-byte TLPs (PCI Express Base Specification 5.0,
/// §2.2 TLP format and §4.2.2.3 framing tokens; §3.6.2 LCRC and sequence number):
///
/// - Gen1/2 (8b/10b): STP + END symbols 2 + sequence number 2 + 4DW header 16 + LCRC 4 = 24 bytes,
/// - Gen3-5 (128b/130b): STP token 4 + sequence 2 + header 16 + LCRC 4 = 26 bytes,
/// - Gen6 FLIT mode: the FLIT's CRC, FEC and DLLP bytes are already out of `pcie_gbps`; a TLP keeps
///   its 16-byte header only (Base Specification 6.0, §2.2.1.2).
///
/// 64-bit addresses (4DW headers) since GPU and NIC buffers sit above 4 GB; no ECRC. DLLPs (ACK,
/// flow control) take a further few percent that this leaves out. Gen5 x16: 63.0 GB/s x 256/282 =
/// 57.2 GB/s, against 51-55 GB/s measured host-to-device (hardware.md).
pub fn pcie_tlp_efficiency(gen: u32) -> f64 {
    let overhead = match gen {
        1 | 2 => 2 + 2 + 16 + 4,
        3..=5 => 4 + 2 + 16 + 4,
        _ => 16,
    };
    256.0 / f64::from(256 + overhead)
}

/// How the network is built from a fabric.
#[derive(Debug, Clone, PartialEq)]
pub struct NetConfig {
    /// Host memory bandwidth per server, GB/s (both directions together).
    pub host_memory_gbs: f64,
    /// Links that are down.
    pub failed: Vec<LinkId>,
    /// Servers no job runs on (indexes into `Fabric::servers`): drained, as a scheduler drains a
    /// node whose host link is down (NCCL aborts a job that loses a NIC; it never relays a GPU's
    /// traffic through another server's NIC). Their links stay up and carry nothing: a job spans
    /// the other servers ([`FabricNet::active_servers`], `collective::Comm::whole`).
    pub drained: Vec<usize>,
    /// What a cluster's own measurements say (`railyard calibrate`): the rate a NIC delivers, and
    /// latency NCCL's model leaves out.
    pub calibration: Calibration,
    /// NCCL may reduce in the switches (SHARP, NCCL's CollNet): `NCCL_COLLNET_ENABLE=1` with the
    /// NCCL-SHARP plugin. Off by default, as NCCL has it; the fabric must support it
    /// ([`sharp_support`]).
    pub sharp: bool,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            host_memory_gbs: HOST_MEMORY_GBS,
            failed: Vec::new(),
            drained: Vec::new(),
            calibration: Calibration::default(),
            sharp: false,
        }
    }
}

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

/// A route source over the fabric's network: the links (in order from the source NIC port) each
/// sub-flow of a connection crosses. Implemented by [`TreeRouter`] over the routing policies, and by
/// `railyard_ib::lft::OpenSmRouting` over OpenSM LFT dumps.
pub trait FabricRouting: Sync {
    /// Short name for reports.
    fn name(&self) -> String;

    /// Appends one path per sub-flow of connection `conn` from NIC port `src` to NIC port `dst`.
    fn route(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut Vec<Vec<LinkId>>,
    ) -> Result<(), RouteFailure>;

    /// Whether routes follow from the fabric's structure alone (D-mod-K, adaptive), not from a
    /// hash of the connection (ECMP) nor from tables read from a file: then flows the fabric
    /// cannot tell apart may be simulated as classes (`crate::classes`). The partition is checked
    /// exactly either way; this keeps the per-flow engine, and today's results to the last bit,
    /// where symmetry is unlikely. Default: no.
    fn structural(&self) -> bool {
        false
    }

    /// [`FabricRouting::route`] into `out`, with each path's share of the connection's bytes
    /// (a route source that splits a sub-flow around a failed link gives its pieces smaller
    /// shares). The default takes [`FabricRouting::route`]'s paths as equal shares.
    fn route_into(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut Routes,
    ) -> Result<(), RouteFailure> {
        let mut paths = Vec::new();
        self.route(net, src, dst, conn, &mut paths)?;
        let n = paths.len() as u32;
        for p in &paths {
            out.push(p, n);
        }
        Ok(())
    }

    /// Whether routes around failed links (and drained servers) keep to the fabric's structure
    /// too: no choice depends on a source's or destination's number where a link is down, so the
    /// servers and links that colour refinement cannot tell apart with the failed links as
    /// colours of their own carry the same traffic (`crate::symmetry`, `collective`'s fold).
    /// Adaptive routing spreads around a failure ([`Routing::sprays`](crate::routing::Routing::sprays)); D-mod-K and ECMP move a
    /// dead port's share to a live port picked by the source. Default: no.
    fn symmetric_around_failures(&self) -> bool {
        false
    }

    /// Whether a route's links after its first (the source NIC's cable) depend only on the first
    /// switch and the destination port: not on the source port nor the connection number, so
    /// one route serves every source on that switch (`collective`'s counted all-to-all routes
    /// once per first switch and destination). Default: no.
    fn by_first_switch(&self) -> bool {
        false
    }

    /// The most sub-flows one connection takes on `net` (adaptive routing: one per up-port of the
    /// first switch; ECMP: its queue pairs): what a step's flow count is multiplied by, for the
    /// choice of how to lay it out and for its memory. Default: 1.
    fn max_sub_flows(&self, _net: &FabricNet<'_>) -> u32 {
        1
    }

    /// Whether every transfer leaving a switch is spread over all of its up-ports alike (adaptive
    /// routing), so how destinations are numbered cannot load one up-link more than another.
    /// Default: no.
    fn spreads_over_every_up_port(&self) -> bool {
        false
    }
}

/// A direct-mapped memo of [`FabricNet::pcie_path`] by its two ends (one per step builder).
#[derive(Debug, Clone, Default)]
pub struct PcieMemo {
    keys: Vec<(u32, u32)>,
    paths: Vec<[u32; PcieMemo::LEN]>,
    lens: Vec<u8>,
    latency: Vec<Time>,
}

impl PcieMemo {
    const BITS: u32 = 15;
    const SLOTS: usize = 1 << Self::BITS;
    /// Longest path kept (GPU to NIC crosses two or three PCIe links, four through host memory).
    const LEN: usize = 6;
}

/// The paths of one connection, each with its share of the connection's bytes (`1 / parts`):
/// [`FabricRouting::route_into`]'s output, kept between calls so routing a step's millions of
/// connections allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    pub(crate) links: Vec<LinkId>,
    /// End of each path in `links`.
    pub(crate) ends: Vec<u32>,
    /// Per path, the parts of the connection it carries one of.
    pub(crate) parts: Vec<u32>,
    /// The parts the connection takes on the intact fabric, whose weight in the fair shares
    /// it keeps: each path weighs `nominal / parts` of a flow ([`Routes::weight`]); 0: each
    /// path weighs one flow.
    pub(crate) nominal: u32,
    /// Working lists of the tree router.
    pub(crate) scratch: [Vec<LinkId>; 3],
    /// The tree router's order of a connection's sub-flows: (port, sub-flow).
    pub(crate) order: Vec<(u32, u32)>,
}

impl Routes {
    pub fn clear(&mut self) {
        self.links.clear();
        self.ends.clear();
        self.parts.clear();
        self.nominal = 0;
    }

    /// Path `i`'s weight in the fair shares it takes part in: a connection competes as its
    /// intact self, `nominal` sub-flows, whatever paths a failure leaves it, each path weighing
    /// its part of that (`engine::Workload::add_weighted_flow`). Adaptive routing spreads a
    /// connection's bytes over its live paths; the connection, not each path, is what its NIC
    /// shares its link between. A whole flow per path gave a connection sprayed over 19 live
    /// up-ports 19 shares of its NIC's link next to its neighbours' 20: it lagged, and one
    /// leaf-spine cable of 80 down made an all-to-all 3% slower than the intact fabric.
    pub fn weight(&self, i: usize) -> Weight {
        let parts = self.parts(i);
        if self.nominal == 0 || self.nominal == parts {
            return Weight::ONE;
        }
        Weight::new(self.nominal, parts).unwrap_or(Weight::ONE)
    }

    /// What the connection weighs in flows, its paths' weights added up: `nominal` where they
    /// are weighed by it (a connection's parts add up to one), else one flow per path.
    pub fn flows(&self) -> u64 {
        if self.nominal == 0 {
            self.len() as u64
        } else {
            u64::from(self.nominal)
        }
    }

    /// Number of paths.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Path `i`: the links from the source NIC port, in order.
    pub fn path(&self, i: usize) -> &[LinkId] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.links[start..self.ends[i] as usize]
    }

    /// Every path, in order.
    pub fn paths(&self) -> impl Iterator<Item = &[LinkId]> + '_ {
        (0..self.len()).map(|i| self.path(i))
    }

    /// The parts of the connection path `i` carries one of: its share is `1 / parts`.
    pub fn parts(&self, i: usize) -> u32 {
        self.parts[i].max(1)
    }

    /// Adds a path carrying one of `parts` equal parts of the connection.
    pub fn push(&mut self, links: &[LinkId], parts: u32) {
        self.links.extend_from_slice(links);
        self.ends.push(self.links.len() as u32);
        self.parts.push(parts.max(1));
    }

    /// The bytes of each path when the connection moves `bytes`: `bytes / parts`, rounded down,
    /// and the bytes left one each to the first paths (so `n` equal paths take `bytes / n`, the
    /// first `bytes % n` one more, and the bytes add up).
    pub fn bytes(&self, bytes: u64) -> impl Iterator<Item = u64> + '_ {
        let base = move |i: usize| bytes / u64::from(self.parts[i].max(1));
        let laid: u64 = (0..self.len()).map(base).sum();
        let left = bytes.saturating_sub(laid);
        (0..self.len()).map(move |i| base(i) + u64::from((i as u64) < left))
    }
}

/// A connection with no usable route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteFailure {
    pub src: String,
    pub dst: String,
    pub reason: String,
}

impl std::fmt::Display for RouteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} -> {}: {}", self.src, self.dst, self.reason)
    }
}

/// One server's devices, by local index.
#[derive(Debug, Clone)]
pub struct ServerDevices {
    pub gpus: Vec<NodeId>,
    /// Compute NICs by rail.
    pub nics: Vec<NodeId>,
    pub cpu: Option<NodeId>,
    /// Per local GPU, the rail of its NIC (nearest: same PCIe switch, else by index).
    pub nic_of_gpu: Vec<u32>,
    /// Per rail, the local GPUs whose NIC it is, ascending.
    pub gpus_of_nic: Vec<Vec<u32>>,
    /// Per rail, the local GPUs on the NIC's PCIe switch.
    pub gpus_near_nic: Vec<Vec<u32>>,
}

/// The fabric as resources and paths.
pub struct FabricNet<'f> {
    pub fabric: &'f Fabric,
    /// Capacity of link l: `[2l]` for a -> b, `[2l + 1]` for b -> a; then host memory per server.
    capacity: Vec<f64>,
    /// Per link, the one-way latency of the medium.
    link_latency: Vec<Time>,
    /// Per node, the latency of crossing it.
    node_latency: Vec<Time>,
    failed: Vec<bool>,
    /// Any link down (`failed` holds a true).
    degraded: bool,
    gpudirect: bool,
    /// SHARP (CollNet) is on, on a fabric that supports it.
    sharp: bool,
    /// Latency added to every operation by a calibration, us.
    extra_latency_us: f64,
    /// The GPUs' generation from the catalog, for NCCL's per-generation caps.
    gpu_generation: Option<GpuGeneration>,
    pub servers: Vec<ServerDevices>,
    /// Per node, the PCIe link up towards the root complex (GPUs, NICs, PCIe switches).
    pcie_up: Vec<Option<LinkId>>,
    /// The servers a job runs on (not drained, [`NetConfig::drained`]), ascending.
    active: Vec<usize>,
    /// The failed links between switches, as routing reads them for every sub-flow's climb once
    /// a cable is down ([`FabricNet::parallel_down_is_failed`]).
    dead_parallel: DeadParallel,
    /// Some spine has up-links (a tier above the spines).
    tier_above: bool,
    /// Per node, its live up-links, or where it has none its live lateral links: a connection's
    /// equal-cost ways on from its first switch.
    pub(crate) live_ways: Vec<u32>,
    /// Per node, its up-links, or where it has none its lateral links, live or not: the
    /// sub-flows a connection from it takes on the intact fabric, which it weighs as in every
    /// fair share however many of them a failure leaves (`Routes::nominal`).
    pub(crate) ways: Vec<u32>,
    /// Per link, the nodes at its ends (`a`, `b`): routing reads them at every hop, and the
    /// fabric's own records are far apart in memory.
    ends: Vec<(u32, u32)>,
    /// Per node, its live network ports (cabled to the network, the cable up), in port order:
    /// `nic_ports[nic_port_at[n]..nic_port_at[n + 1]]`.
    nic_port_at: Vec<u32>,
    nic_ports: Vec<PortId>,
    /// Per node, its resource receiving through host memory (GPUs with GPUDirect RDMA off;
    /// `u32::MAX` otherwise), and those GPUs in resource order.
    staged_receive: Vec<u32>,
    staged_receivers: Vec<NodeId>,
    /// Per GPU node, its NVLink.
    nvlink: Vec<Option<LinkId>>,
    /// Per switch: links up (it is `a`), down (it is `b`) and lateral, each in port order.
    pub(crate) up: Vec<Vec<LinkId>>,
    pub(crate) down: Vec<Vec<LinkId>>,
    pub(crate) lateral: Vec<Vec<LinkId>>,
    /// Per link going up from a switch: (its index among the up-links of that switch to the same
    /// parent, how many there are); the tree router reads it at every hop up.
    pub(crate) up_parallel: Vec<(u32, u32)>,
    /// Per port: index of the leaf (for NIC network ports) and D-mod-K destination index.
    pub(crate) port_leaf: Vec<u32>,
    pub(crate) port_index: Vec<u32>,
    /// Words of 64 bits in each node's bitset over the leaves (leaves numbered in node order).
    words: usize,
    /// Per node, bitsets over leaves: the leaves below it over live links, and every leaf it
    /// reaches over live links going up, down or across.
    pub(crate) below: Vec<u64>,
    pub(crate) reach: Vec<u64>,
    /// Built on first use by the tree router: per switch above the leaves and per leaf, the one
    /// child (by its group of parallel links) with that leaf below it.
    down_table: std::sync::OnceLock<DownTable>,
}

/// Per switch above the leaves, its live down-links grouped by child (in down-list order of
/// each group's first link), and per (switch, leaf) the group with the leaf below it when there
/// is exactly one ([`DownTable::ONE_OF_MANY`] when several, [`DownTable::NONE`] when none).
struct DownTable {
    /// Row of each switch in `group_of` (`u32::MAX` for nodes without one).
    row: Vec<u32>,
    /// Per row, per leaf: a group index among the row's groups (routing reads it at every hop
    /// down: kept small).
    group_of: Vec<u16>,
    /// Per row, its first group; group g's links are `links[ends[g - 1]..ends[g]]`.
    first_group: Vec<u32>,
    ends: Vec<u32>,
    links: Vec<LinkId>,
}

impl DownTable {
    const NONE: u16 = u16::MAX;
    const ONE_OF_MANY: u16 = u16::MAX - 1;
}

fn link_dir(l: LinkId, forward: bool) -> u32 {
    2 * l.0 + u32::from(!forward)
}

/// The headers the fabric's network links carry.
fn packet_format(f: &Fabric) -> PacketFormat {
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

impl<'f> FabricNet<'f> {
    /// Builds the network of `fabric`; `catalog` gives switch latencies and cable delays.
    pub fn new(
        fabric: &'f Fabric,
        catalog: &Catalog,
        config: &NetConfig,
    ) -> Result<Self, SimError> {
        let f = fabric;
        let bad = |what, message: String| SimError::Config { what, message };
        crate::scale_up::scale_up_support(f, catalog).map_err(|m| bad("scale-up domain", m))?;
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
        let format = packet_format(f);
        let nl = f.links.len();
        let mut failed = vec![false; nl];
        for l in &config.failed {
            let Some(x) = failed.get_mut(l.0 as usize) else {
                return Err(bad("failed links", format!("no link {}", l.0)));
            };
            *x = true;
        }
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
        for _ in &f.servers {
            capacity.push(config.host_memory_gbs * 1e9 / 2.0);
        }
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

        let servers = f
            .servers
            .iter()
            .map(|s| server_devices(f, s.first_node, s.num_nodes, &pcie_up))
            .collect();

        let mut up_parallel = vec![(0, 1); f.links.len()];
        let mut by_parent: Vec<(NodeId, usize)> = Vec::new();
        for ups in &up {
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

        let mut drained = vec![false; f.servers.len()];
        for &s in &config.drained {
            let Some(x) = drained.get_mut(s) else {
                return Err(bad("drained servers", format!("no server {s}")));
            };
            *x = true;
        }
        let active: Vec<usize> = (0..f.servers.len()).filter(|&s| !drained[s]).collect();
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
        Ok(FabricNet {
            fabric,
            active,
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

    /// GPUs that receive through host memory (GPUDirect RDMA off), in the order of their
    /// resources, which follow the servers' host memory.
    pub fn staged_receivers(&self) -> &[NodeId] {
        &self.staged_receivers
    }

    /// Engine resources: 2 per link, then one per server, then (GPUDirect RDMA off) one per GPU.
    pub fn resources(&self) -> usize {
        self.capacity.len()
    }

    /// A workload with every resource of the network added, in index order.
    pub fn workload(&self) -> Result<Workload, SimError> {
        let mut w = Workload::new();
        for &c in &self.capacity {
            w.add_resource(c)?;
        }
        Ok(w)
    }

    /// Capacity of resource `r`, bytes per second.
    pub fn capacity(&self, r: u32) -> f64 {
        self.capacity[r as usize]
    }

    /// Sets the capacity of resource `r` to what other traffic leaves of it, bytes per second
    /// (`study::jobs`: the links other jobs share). Everything the simulator derives from
    /// capacities (flow classes, symmetry, the regular-tree check) reads them through
    /// [`FabricNet::capacity`], so a step simulated afterwards sees the link as that much slower.
    /// Refuses a resource the network does not have and a rate that is not finite and above zero.
    pub fn set_capacity(&mut self, r: u32, bytes_per_s: f64) -> Result<(), SimError> {
        if r as usize >= self.capacity.len() {
            return Err(SimError::Config {
                what: "capacity",
                message: format!("no resource {r}"),
            });
        }
        if !(bytes_per_s.is_finite() && bytes_per_s > 0.0) {
            return Err(SimError::Config {
                what: "capacity",
                message: format!("{bytes_per_s} B/s for {}", self.describe(r)),
            });
        }
        self.capacity[r as usize] = bytes_per_s;
        Ok(())
    }

    /// Who a resource is, for reports: `su1-srv01/hca1 -> su1-leaf1 (server-leaf)`.
    pub fn describe(&self, r: u32) -> String {
        let f = self.fabric;
        let nl = f.links.len() as u32;
        let hosts = 2 * nl + f.servers.len() as u32;
        if r >= hosts {
            let g = self.staged_receivers.get((r - hosts) as usize);
            return format!(
                "{} receiving through host memory (GPUDirect RDMA off)",
                g.map_or("?", |&g| f.node(g).name.as_str())
            );
        }
        if r >= 2 * nl {
            let s = (r - 2 * nl) as usize;
            return format!("{} host memory", f.servers.get(s).map_or("?", |s| &s.name));
        }
        let l = f.link(LinkId(r / 2));
        let (a, b) = (
            f.port_node(l.a).name.as_str(),
            f.port_node(l.b).name.as_str(),
        );
        let (from, to) = if r.is_multiple_of(2) { (a, b) } else { (b, a) };
        format!("{from} -> {to} ({})", l.kind.as_str())
    }

    /// One-way latency of link `l`'s medium.
    pub fn link_latency(&self, l: LinkId) -> Time {
        self.link_latency[l.0 as usize]
    }

    /// Latency of crossing node `n`.
    pub fn node_latency(&self, n: NodeId) -> Time {
        self.node_latency[n.0 as usize]
    }

    /// A switch's links up to its parents, in port order (the order routing policies pick from).
    pub fn up_links(&self, n: NodeId) -> &[LinkId] {
        &self.up[n.0 as usize]
    }

    pub fn is_failed(&self, l: LinkId) -> bool {
        self.failed[l.0 as usize]
    }

    /// Whether any link is down.
    pub fn any_failed(&self) -> bool {
        self.degraded
    }

    /// The servers a job runs on: every server but the drained ones ([`NetConfig::drained`]),
    /// ascending.
    pub fn active_servers(&self) -> &[usize] {
        &self.active
    }

    /// Whether some server is drained.
    pub fn any_drained(&self) -> bool {
        self.active.len() < self.servers.len()
    }

    /// Whether `server` is drained ([`NetConfig::drained`]).
    pub fn is_drained(&self, server: usize) -> bool {
        self.active.binary_search(&server).is_err()
    }

    /// Whether the tree has a tier above the spines (a spine has up-links).
    pub fn tier_above_spines(&self) -> bool {
        self.tier_above
    }

    /// Whether the way down that a sub-flow climbing up-link `l` to `parent` takes towards leaf
    /// `leaf` (node `leaf_node`) is cut: the descent carries `l`'s parallel index down (as
    /// D-mod-K does), and of the parallel links it then takes the one with that index is down.
    /// Such a sub-flow is sent elsewhere, as a fabric that routes around a failure sends it: the
    /// survivor of two parallel links carried both shares, and one leaf-spine cable of 320 down
    /// made an all-to-all 44% slower (weighted multipath after a failure: Zhou et al., "WCMP",
    /// EuroSys 2014). Where the sub-flow descends with that index:
    ///
    /// - `parent` has the leaf below it: from `parent` itself, to its child towards the leaf
    ///   (the leaf, or on a core the spine above it);
    /// - otherwise (a spine of another pod under three tiers): from the spine of `parent`'s
    ///   column above the leaf, the only one the cores above `parent` lead down to. Checking
    ///   `parent` alone there missed it: one leaf-spine cable of 2 parallel ones down on 512 DGX
    ///   H100 (3 tiers) nearly halved an all-to-all (adaptive 49.71 -> 26.58 GB/s).
    ///
    /// Table lookups: routing asks this for every sub-flow's climb.
    pub(crate) fn parallel_down_is_failed(
        &self,
        l: LinkId,
        parent: NodeId,
        leaf: u32,
        leaf_node: NodeId,
    ) -> bool {
        let d = &self.dead_parallel;
        let (k, _) = self.up_parallel[l.0 as usize];
        let p = parent.0 as usize;
        if self.leaf_has(&self.below, parent, leaf) {
            if !d.has.get(p).copied().unwrap_or(false) {
                return false;
            }
            let cut = |child: NodeId| d.dead_index(&d.by_pair, (parent.0, child.0), k);
            return match cut(leaf_node) {
                Some(x) => x,
                // Not right above the leaf: its child towards it, when there is one.
                None => match self.down_to(parent, leaf) {
                    Some(&[first, ..]) => cut(self.far(first, parent)).unwrap_or(false),
                    _ => false,
                },
            };
        }
        d.column_has.get(p).copied().unwrap_or(false)
            && d.dead_index(&d.by_column, (d.column[p], leaf_node.0), k)
                .unwrap_or(false)
    }

    pub fn gpudirect(&self) -> bool {
        self.gpudirect
    }

    /// Whether NCCL may reduce in the switches (SHARP, CollNet): asked for ([`NetConfig::sharp`])
    /// and supported by the fabric (checked when the network was built).
    pub fn sharp(&self) -> bool {
        self.sharp
    }

    /// Latency a calibration adds to every operation, us (0 uncalibrated).
    pub fn extra_latency_us(&self) -> f64 {
        self.extra_latency_us
    }

    /// The generation of the fabric's GPUs (catalog `generation`), `None` when the catalog names
    /// none.
    pub fn gpu_generation(&self) -> Option<GpuGeneration> {
        self.gpu_generation
    }

    /// The GPU a transfer from local GPU `gpu` of `server` crosses NVLink to before it leaves
    /// through NIC `rail`, as NCCL routes it (PXN; src/graph/paths.cc `ncclTopoComputePaths`,
    /// "Update paths for NICs", v2.12 and later): where the GPU is not on the NIC's PCIe switch, so
    /// its own path to the NIC would cross the CPU, and a GPU on that switch shares NVLink with
    /// it, NCCL sends over NVLink to that GPU and out from there, in the GPU-to-NIC direction only
    /// (receives stay local). Its relay needs GPUDirect RDMA (`ncclTopoGetPxnRanks` skips a NIC
    /// without it), so a fabric with GPUDirect off has none. `None` where the GPU is near the NIC
    /// or no relay qualifies. The relay is the NIC's own GPU (`ncclTopoGetLocalGpu`), else the
    /// first GPU on its switch. NCCL's topology holds the communicator's GPUs only
    /// (`ncclTopoGetSystem` adds the GPUs of its ranks), so the relay is one of `members` (local
    /// indexes of the communicator's GPUs on the server).
    pub fn pxn_relay(&self, server: usize, gpu: u32, rail: u32, members: &[u32]) -> Option<u32> {
        if !self.gpudirect {
            return None;
        }
        let s = self.servers.get(server)?;
        let near = s.gpus_near_nic.get(rail as usize)?;
        if near.contains(&gpu) {
            return None;
        }
        let ok = |x: &&u32| near.contains(x) && members.contains(x);
        let relay = s
            .gpus_of_nic
            .get(rail as usize)
            .and_then(|g| g.iter().find(ok))
            .or_else(|| near.iter().find(ok))
            .copied()?;
        let nvlink = |g: u32| {
            s.gpus
                .get(g as usize)
                .is_some_and(|n| self.nvlink.get(n.0 as usize).copied().flatten().is_some())
        };
        (nvlink(gpu) && nvlink(relay)).then_some(relay)
    }

    /// A GPU's NVLink bandwidth, GB/s per direction, or `None` without NVLink.
    pub fn nvlink_gbs(&self, gpu: NodeId) -> Option<f64> {
        let l = self.nvlink.get(gpu.0 as usize).copied().flatten()?;
        Some(self.fabric.link(l).gbps / 8.0)
    }

    /// A device's PCIe link as NCCL's topology code rates it: 0.75 of the raw lane rate (NCCL's
    /// `PCI_BW` of 12 GB/s for Gen3 x16, doubling per generation; src/graph/topo.h), or `None`
    /// for a device without a PCIe link of its own.
    pub fn nccl_pcie_gbs(&self, node: NodeId) -> Option<f64> {
        let l = self.pcie_up.get(node.0 as usize).copied().flatten()?;
        let link = self.fabric.link(l);
        let Medium::Pcie { gen } = link.medium else {
            return None;
        };
        let lanes = self.fabric.port(link.a).lanes.max(1);
        // Nominal, as NCCL counts it: 0.75 GB/s per Gen3 lane, doubling per generation.
        Some(0.75 * f64::from(lanes) * 2f64.powi(gen as i32 - 3))
    }

    /// The speed a port runs at, Gb/s, as `ibv_query_port` reports it to NCCL.
    pub fn port_gbps(&self, port: PortId) -> f64 {
        self.fabric.port(port).gbps
    }

    /// The live network port of NIC `rail` of `server`, falling back to the next rail whose link
    /// is up; with several planes, plane `plane % planes`.
    pub fn nic_port(&self, server: usize, rail: u32, plane: u32) -> Option<(u32, PortId)> {
        let s = &self.servers[server];
        let n = s.nics.len() as u32;
        (0..n).find_map(|k| {
            let r = (rail + k) % n;
            // The NIC's live network ports, listed when the network was built: this runs for
            // every transfer of a step.
            let nic = s.nics[r as usize].0 as usize;
            let live =
                &self.nic_ports[self.nic_port_at[nic] as usize..self.nic_port_at[nic + 1] as usize];
            (!live.is_empty()).then(|| (r, live[plane as usize % live.len()]))
        })
    }

    /// [`FabricNet::pcie_path`] through `memo`: a step crosses the same few paths inside each
    /// server for every one of its millions of transfers.
    pub fn pcie_path_memo(
        &self,
        memo: &mut PcieMemo,
        from: NodeId,
        to: NodeId,
        server: usize,
        out: &mut Vec<u32>,
    ) -> Time {
        if memo.keys.is_empty() {
            memo.keys = vec![(u32::MAX, u32::MAX); PcieMemo::SLOTS];
            memo.paths = vec![[0; PcieMemo::LEN]; PcieMemo::SLOTS];
            memo.lens = vec![0; PcieMemo::SLOTS];
            memo.latency = vec![Time::ZERO; PcieMemo::SLOTS];
        }
        let slot = (u64::from(from.0).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(to.0))
            .wrapping_mul(0xBF58_476D_1CE4_E5B9)
            >> (64 - PcieMemo::BITS);
        let slot = slot as usize;
        if memo.keys[slot] == (from.0, to.0) {
            out.extend_from_slice(&memo.paths[slot][..memo.lens[slot] as usize]);
            return memo.latency[slot];
        }
        let head = out.len();
        let lat = self.pcie_path(from, to, server, out);
        let path = &out[head..];
        if path.len() <= PcieMemo::LEN {
            memo.keys[slot] = (from.0, to.0);
            memo.paths[slot][..path.len()].copy_from_slice(path);
            memo.lens[slot] = path.len() as u8;
            memo.latency[slot] = lat;
        }
        lat
    }

    /// Appends the resources (and adds the latency) from `from` to `to` inside one server: GPU to
    /// NIC, NIC to GPU, or GPU to GPU over PCIe. With GPUDirect RDMA off, GPU <-> NIC goes through
    /// host memory.
    pub fn pcie_path(&self, from: NodeId, to: NodeId, server: usize, out: &mut Vec<u32>) -> Time {
        let f = self.fabric;
        // A device's links up to the CPU, on the stack: this runs for every transfer of a step.
        let chain = |mut n: NodeId| {
            let mut c = [LinkId(0); PCIE_DEPTH];
            let mut len = 0;
            while let Some(l) = self.pcie_up[n.0 as usize] {
                if len == PCIE_DEPTH {
                    break;
                }
                c[len] = l;
                len += 1;
                n = f.port(f.link(l).b).node;
            }
            (c, len)
        };
        let ((up, up_len), (down, down_len)) = (chain(from), chain(to));
        let (up, down) = (&up[..up_len], &down[..down_len]);
        let gpu_nic =
            matches!(f.node(from).kind, NodeKind::Gpu) != matches!(f.node(to).kind, NodeKind::Gpu);
        let staged = gpu_nic && !self.gpudirect;
        // Drop the common tail (the shared part above the meeting point) unless staging.
        let mut keep = (up.len(), down.len());
        if !staged {
            while keep.0 > 0 && keep.1 > 0 && up[keep.0 - 1] == down[keep.1 - 1] {
                keep.0 -= 1;
                keep.1 -= 1;
            }
        }
        let mut lat = Time::ZERO;
        for &l in &up[..keep.0] {
            out.push(link_dir(l, true));
            lat += self.link_latency[l.0 as usize]
                + self.node_latency[f.port(f.link(l).b).node.0 as usize];
        }
        if staged {
            out.push(2 * f.links.len() as u32 + server as u32);
            // Into a GPU: its kernel reads what the NIC wrote to host memory.
            let r = self.staged_receive[to.0 as usize];
            if r != u32::MAX {
                out.push(r);
            }
        }
        for &l in down[..keep.1].iter().rev() {
            out.push(link_dir(l, false));
            lat += self.link_latency[l.0 as usize];
            // Entering a PCIe switch on the way down; the NIC's own latency is the network path's.
            let entered = f.port(f.link(l).a).node;
            if f.node(entered).kind == NodeKind::PcieSwitch {
                lat += self.node_latency[entered.0 as usize];
            }
        }
        lat
    }

    /// GPU to GPU in one server over NVLink; `None` if either has no NVLink.
    pub fn nvlink_path(&self, from: NodeId, to: NodeId, out: &mut Vec<u32>) -> Option<Time> {
        let a = self.nvlink[from.0 as usize]?;
        let b = self.nvlink[to.0 as usize]?;
        out.push(link_dir(a, true));
        out.push(link_dir(b, false));
        Some(Time::ZERO)
    }

    /// GPU to GPU in one server: NVLink where both have it, PCIe otherwise.
    pub fn intra_path(&self, from: NodeId, to: NodeId, server: usize, out: &mut Vec<u32>) -> Time {
        match self.nvlink_path(from, to, out) {
            Some(t) => t,
            None => self.pcie_path(from, to, server, out),
        }
    }

    /// Appends the directed resources of a network path (links from the source NIC port) and returns
    /// its latency: links, switches crossed and both NICs.
    pub fn network_path(&self, src: PortId, links: &[LinkId], out: &mut Vec<u32>) -> Time {
        let f = self.fabric;
        let mut at = f.port(src).node;
        let mut lat = NIC_LATENCY;
        for &l in links {
            let (a, b) = self.ends[l.0 as usize];
            let forward = a == at.0;
            out.push(link_dir(l, forward));
            at = NodeId(if forward { b } else { a });
            lat += self.link_latency[l.0 as usize] + self.node_latency[at.0 as usize];
        }
        lat
    }

    fn down_table(&self) -> &DownTable {
        self.down_table.get_or_init(|| {
            let f = self.fabric;
            let leaves = self.words * 64;
            let mut row = vec![u32::MAX; f.nodes.len()];
            let (mut first_group, mut ends, mut links) = (Vec::new(), vec![0u32], Vec::new());
            let mut group_of: Vec<u16> = Vec::new();
            for (i, n) in f.nodes.iter().enumerate() {
                if !matches!(n.tier(), Some(t) if t != Tier::Leaf) {
                    continue;
                }
                let here = NodeId(i as u32);
                let mut mine: Vec<(NodeId, Vec<LinkId>)> = Vec::new();
                for &l in &self.down[i] {
                    if self.is_failed(l) {
                        continue;
                    }
                    let child = self.far(l, here);
                    if !f.node(child).is_switch() {
                        continue;
                    }
                    match mine.iter_mut().find(|(c, _)| *c == child) {
                        Some((_, links)) => links.push(l),
                        None => mine.push((child, vec![l])),
                    }
                }
                let base = group_of.len();
                group_of.resize(base + leaves, DownTable::NONE);
                for (g, (child, _)) in mine.iter().enumerate() {
                    let bits = &self.below[child.0 as usize * self.words..][..self.words];
                    for (w, &word) in bits.iter().enumerate() {
                        let mut word = word;
                        while word != 0 {
                            let k = w * 64 + word.trailing_zeros() as usize;
                            word &= word - 1;
                            let x = &mut group_of[base + k];
                            *x = if *x == DownTable::NONE {
                                // A switch has fewer children than ports.
                                u16::try_from(g).unwrap_or(DownTable::ONE_OF_MANY)
                            } else {
                                DownTable::ONE_OF_MANY
                            };
                        }
                    }
                }
                row[i] = first_group.len() as u32;
                first_group.push(ends.len() as u32 - 1);
                for (_, group) in mine {
                    links.extend(group);
                    ends.push(links.len() as u32);
                }
            }
            DownTable {
                row,
                group_of,
                first_group,
                ends,
                links,
            }
        })
    }

    /// The live down-links of `here` to a switch with leaf `leaf` below it, when they all lead to
    /// one child (`None`: several children, or no table row: look through the down-links).
    pub(crate) fn down_to(&self, here: NodeId, leaf: u32) -> Option<&[LinkId]> {
        let t = self.down_table();
        let row = *t.row.get(here.0 as usize)?;
        if row == u32::MAX {
            return None;
        }
        let leaves = self.words * 64;
        let g = t.group_of[row as usize * leaves + leaf as usize];
        match g {
            DownTable::NONE => Some(&[]),
            DownTable::ONE_OF_MANY => None,
            g => {
                let k = (t.first_group[row as usize] + u32::from(g)) as usize;
                Some(&t.links[t.ends[k] as usize..t.ends[k + 1] as usize])
            }
        }
    }

    pub(crate) fn leaf_has(&self, bits: &[u64], node: NodeId, leaf: u32) -> bool {
        let k = leaf as usize;
        bits[node.0 as usize * self.words + k / 64] & (1 << (k % 64)) != 0
    }

    pub(crate) fn far(&self, l: LinkId, from: NodeId) -> NodeId {
        let (a, b) = self.ends[l.0 as usize];
        if a == from.0 {
            NodeId(b)
        } else {
            NodeId(a)
        }
    }

    pub(crate) fn port_name(&self, p: PortId) -> String {
        format!(
            "{}/{}",
            self.fabric.port_device(p),
            self.fabric.port_label(p)
        )
    }
}

/// The failed links between switches, as routing reads them ([`FabricNet::parallel_down_is_failed`]).
#[derive(Default)]
struct DeadParallel {
    /// By (switch, child directly below it) with a failed link between them: how many parallel
    /// links join the two (live or not) and the indexes, in the switch's down-list order, of
    /// those that are down; in (switch, child) order.
    by_pair: Vec<DeadLinks>,
    /// Per node, whether it is a switch with an entry in `by_pair` (empty: none is).
    has: Vec<bool>,
    /// Per spine, its column: the component of the spine-core links it is in (spine j of every
    /// pod with core group j). A sub-flow that climbs to a spine of one pod comes down to
    /// another pod through the spine of the same column there. Empty with no cable down.
    column: Vec<u32>,
    /// `by_pair`'s entries of a spine and a leaf below it, by (the spine's column, the leaf),
    /// where that spine is the only one of its column above the leaf (so the descent to the
    /// leaf from that column is known); in (column, leaf) order.
    by_column: Vec<DeadLinks>,
    /// Per node, whether its column has an entry in `by_column`.
    column_has: Vec<bool>,
}

/// ((a switch or column, a child), (parallel links between them, indexes of those down)).
type DeadLinks = ((u32, u32), (u32, Vec<u32>));

impl DeadParallel {
    /// Whether index `k` (mod the parallel links) is among `key`'s dead links (`None`: no entry).
    fn dead_index(&self, table: &[DeadLinks], key: (u32, u32), k: u32) -> Option<bool> {
        let i = table.binary_search_by_key(&key, |e| e.0).ok()?;
        let (m, dead) = &table[i].1;
        Some(*m > 0 && dead.binary_search(&(k % m)).is_ok())
    }
}

/// The failed links between a switch and a child directly below it ([`DeadParallel`]).
fn dead_parallel_links(
    f: &Fabric,
    up: &[Vec<LinkId>],
    down: &[Vec<LinkId>],
    failed: &[bool],
) -> DeadParallel {
    let mut out: Vec<DeadLinks> = Vec::new();
    let mut has = vec![false; f.nodes.len()];
    for (i, _) in failed.iter().enumerate().filter(|(_, &x)| x) {
        let link = f.link(LinkId(i as u32));
        if !matches!(link.kind, LinkKind::LeafSpine | LinkKind::SpineCore) {
            continue;
        }
        let (child, parent) = (f.port(link.a).node, f.port(link.b).node);
        if out.iter().any(|e| e.0 == (parent.0, child.0)) {
            continue;
        }
        let to_child: Vec<LinkId> = down[parent.0 as usize]
            .iter()
            .copied()
            .filter(|&d| f.port(f.link(d).a).node == child)
            .collect();
        let dead = (0..to_child.len() as u32)
            .filter(|&k| failed[to_child[k as usize].0 as usize])
            .collect();
        out.push(((parent.0, child.0), (to_child.len() as u32, dead)));
        has[parent.0 as usize] = true;
    }
    out.sort_unstable_by_key(|e| e.0);
    if out.is_empty() {
        return DeadParallel::default();
    }
    let column = spine_columns(f);
    let mut by_column: Vec<DeadLinks> = Vec::new();
    let mut column_has = vec![false; f.nodes.len()];
    for ((spine, leaf), dead) in &out {
        let c = column[*spine as usize];
        if c == u32::MAX || f.node(NodeId(*leaf)).kind != (NodeKind::Switch { tier: Tier::Leaf }) {
            continue;
        }
        // The leaf's spines of that column: one, or the descent is not known.
        let mut above: Vec<u32> = up[*leaf as usize]
            .iter()
            .map(|&l| f.port(f.link(l).b).node.0)
            .filter(|&s| column[s as usize] == c)
            .collect();
        above.sort_unstable();
        above.dedup();
        if above.len() == 1 {
            by_column.push(((c, *leaf), dead.clone()));
        }
    }
    by_column.sort_unstable_by_key(|e| e.0);
    for (n, &c) in column.iter().enumerate() {
        column_has[n] = c != u32::MAX && by_column.iter().any(|e| e.0 .0 == c);
    }
    DeadParallel {
        by_pair: out,
        has,
        column,
        by_column,
        column_has,
    }
}

/// Per spine, the smallest node number of its component over the spine-core links (live or
/// not); `u32::MAX` for every other node.
fn spine_columns(f: &Fabric) -> Vec<u32> {
    let mut root: Vec<u32> = (0..f.nodes.len() as u32).collect();
    fn find(root: &mut [u32], mut x: u32) -> u32 {
        while root[x as usize] != x {
            root[x as usize] = root[root[x as usize] as usize];
            x = root[x as usize];
        }
        x
    }
    for l in f.links.iter().filter(|l| l.kind == LinkKind::SpineCore) {
        let (a, b) = (
            find(&mut root, f.port(l.a).node.0),
            find(&mut root, f.port(l.b).node.0),
        );
        root[a.max(b) as usize] = a.min(b);
    }
    (0..f.nodes.len() as u32)
        .map(|n| match f.node(NodeId(n)).kind {
            NodeKind::Switch { tier: Tier::Spine } => find(&mut root, n),
            _ => u32::MAX,
        })
        .collect()
}

/// Finds one server's GPUs, NICs and their nearness.
fn server_devices(f: &Fabric, first: u32, count: u32, pcie_up: &[Option<LinkId>]) -> ServerDevices {
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

/// What a simulation on a designed fabric starts from: the fabric's network and a tree router over
/// one routing policy.
pub struct RoutedNet<'f> {
    pub net: FabricNet<'f>,
    pub router: TreeRouter,
}

impl<'f> RoutedNet<'f> {
    /// The network of `fabric` built as `config` says, routed by policy `kind` with `routing`'s knobs.
    pub fn new(
        fabric: &'f Fabric,
        catalog: &Catalog,
        config: &NetConfig,
        kind: RoutingKind,
        routing: RoutingConfig,
    ) -> Result<RoutedNet<'f>, SimError> {
        Ok(RoutedNet {
            net: FabricNet::new(fabric, catalog, config)?,
            router: TreeRouter::new(kind, routing),
        })
    }
}

/// `ups` (one switch's up-links, in port order) reordered round-robin over their parents: the
/// first link to each parent in the order the parents first appear, then the second to each, and
/// so on. A switch cabled round-robin by port keeps its order.
fn round_robin_over_parents(f: &Fabric, ups: &[LinkId]) -> Vec<LinkId> {
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

/// How many connections two route sources send over exactly the same links (every sub-flow's path
/// compared in order), and the first few that differ, so a simulation over OpenSM's tables can say
/// where it departs from railyard's own routing.
pub fn compare_routes(
    net: &FabricNet<'_>,
    a: &dyn FabricRouting,
    b: &dyn FabricRouting,
    pairs: &[(PortId, PortId)],
) -> RouteComparison {
    let mut cmp = RouteComparison::default();
    for &(src, dst) in pairs {
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        let same = match (
            a.route(net, src, dst, 0, &mut pa),
            b.route(net, src, dst, 0, &mut pb),
        ) {
            (Ok(()), Ok(())) => pa == pb,
            _ => false,
        };
        if same {
            cmp.same += 1;
        } else {
            cmp.differ += 1;
            if cmp.examples.len() < 5 {
                let f = net.fabric;
                cmp.examples.push(format!(
                    "{}/{} -> {}/{}",
                    f.port_device(src),
                    f.port_label(src),
                    f.port_device(dst),
                    f.port_label(dst)
                ));
            }
        }
    }
    cmp
}

/// The result of [`compare_routes`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RouteComparison {
    pub same: usize,
    pub differ: usize,
    /// Up to five connections that differ, `device/port -> device/port`.
    pub examples: Vec<String>,
}

/// `n` distinct network links chosen uniformly at random (seeded SplitMix64 partial Fisher-Yates),
/// in link order.
pub fn random_network_links(f: &Fabric, n: usize, seed: u64) -> Vec<LinkId> {
    random_of(f.network_links().map(|(l, _)| l).collect(), n, seed)
}

/// `n` distinct switch-to-switch links (leaf-spine, spine-core, between the two switches of a
/// two-switch design) chosen uniformly at random, as [`random_network_links`] chooses among all
/// network links, in link order: the cables `--fail-links` takes down (a server's own cable
/// drains the server instead, `NetConfig::drained`).
pub fn random_fabric_links(f: &Fabric, n: usize, seed: u64) -> Vec<LinkId> {
    let all: Vec<LinkId> = f
        .network_links()
        .filter(|(_, l)| l.kind != LinkKind::ServerLeaf)
        .map(|(l, _)| l)
        .collect();
    random_of(all, n, seed)
}

/// `n` distinct server links (a NIC's cable to its leaf) chosen uniformly at random, as
/// [`random_network_links`] chooses, in link order: the cables `--fail-host-links` takes down,
/// each draining its server ([`drained_by`]).
pub fn random_host_links(f: &Fabric, n: usize, seed: u64) -> Vec<LinkId> {
    let all: Vec<LinkId> = f
        .network_links()
        .filter(|(_, l)| l.kind == LinkKind::ServerLeaf)
        .map(|(l, _)| l)
        .collect();
    random_of(all, n, seed)
}

/// The servers (indexes into `Fabric::servers`, ascending, each once) that `links` drain: a job
/// with a dead host link aborts and the scheduler drains the node (NCCL does not move a GPU's
/// traffic to another server's NIC, nor to another NIC of its own once the job has started), so
/// the job runs on the servers left ([`NetConfig::drained`]).
pub fn drained_by(f: &Fabric, links: &[LinkId]) -> Vec<usize> {
    let mut out: Vec<usize> = links
        .iter()
        .filter(|&&l| f.link(l).kind == LinkKind::ServerLeaf)
        .filter_map(|&l| {
            let link = f.link(l);
            [link.a, link.b]
                .into_iter()
                .find_map(|p| f.node(f.port(p).node).server)
        })
        .map(|s| s as usize)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `n` of `all` chosen by a seeded partial Fisher-Yates shuffle (SplitMix64), in link order.
fn random_of(mut all: Vec<LinkId>, n: usize, seed: u64) -> Vec<LinkId> {
    let n = n.min(all.len());
    let mut state = seed;
    for i in 0..n {
        let span = (all.len() - i) as u128;
        let j = i + ((u128::from(mix64(&mut state)) * span) >> 64) as usize;
        all.swap(i, j);
    }
    let mut out = all[..n].to_vec();
    out.sort();
    out
}

/// What failed links cost: per tier, links down of links in total and the capacity lost; and the
/// bisection bandwidth before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureReport {
    /// (link kind, links down, links of that kind, Gb/s lost).
    pub tiers: Vec<(LinkKind, usize, usize, f64)>,
    /// Bisection bandwidth, Gb/s, with every link up and with the failed ones down.
    pub bisection_gbps: (f64, f64),
}

/// Counts failed links per network tier, and bisection bandwidth before and after the failures
/// (`Fabric::bisection_gbps`, as the plan reports it).
pub fn failure_report(f: &Fabric, failed: &[LinkId]) -> FailureReport {
    let kinds = [
        LinkKind::ServerLeaf,
        LinkKind::LeafSpine,
        LinkKind::SpineCore,
        LinkKind::InterSwitch,
    ];
    let mut tiers = Vec::new();
    for k in kinds {
        let total = f.network_links().filter(|(_, l)| l.kind == k).count();
        let down: Vec<&LinkId> = failed.iter().filter(|l| f.link(**l).kind == k).collect();
        // `+ 0.0`: an empty f64 sum is -0.0, which would print as "-0".
        let gbps: f64 = down.iter().map(|l| f.link(**l).gbps).sum::<f64>() + 0.0;
        if total > 0 {
            tiers.push((k, down.len(), total, gbps));
        }
    }
    let failed: std::collections::BTreeSet<LinkId> = failed.iter().copied().collect();
    FailureReport {
        tiers,
        bisection_gbps: (
            f.bisection_gbps(|_| true),
            f.bisection_gbps(|l| !failed.contains(&l)),
        ),
    }
}

/// Resource ids of a path as the engine's type (the workload from [`FabricNet::workload`] holds
/// every resource index the network hands out).
pub fn resource_ids(path: &[u32], w: &Workload) -> Result<Vec<ResourceId>, SimError> {
    path.iter()
        .map(|&r| {
            if (r as usize) < w.resources() {
                Ok(ResourceId::from_index(r))
            } else {
                Err(SimError::TooLarge("resources"))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{simulate_transfers, Gpu, Relay};
    use railyard_spec::{presets, ClusterSpec, Overrides};

    fn fabric(preset: &str, servers: u32, gpus: u32, nics: u32) -> Fabric {
        let mut raw = presets::raw(preset).unwrap();
        Overrides {
            servers: Some(servers),
            gpus_per_server: Some(gpus),
            nics_per_server: Some(nics),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    fn dmodk() -> TreeRouter {
        TreeRouter::new(RoutingKind::DModK, RoutingConfig::default())
    }

    #[test]
    fn pcie_tlp_efficiency_per_generation() {
        assert_eq!(pcie_tlp_efficiency(5), 256.0 / 282.0);
        assert_eq!(pcie_tlp_efficiency(2), 256.0 / 280.0);
        assert_eq!(pcie_tlp_efficiency(6), 256.0 / 272.0);
        // Gen5 x16: 63.0 GB/s after 128b/130b, 57.2 GB/s of payload.
        let gen5 = rates::raw_rate(railyard_catalog::pcie_gbps(5, 16)) * pcie_tlp_efficiency(5);
        assert!((57.0e9..57.5e9).contains(&gen5), "{gen5}");
    }

    #[test]
    fn capacities_follow_the_technology_and_the_link() {
        let ib = fabric("dgx-h100-superpod", 2, 8, 8);
        let roce = fabric("roce-400g-sn5600", 2, 8, 8);
        for (f, format) in [(&ib, rates::INFINIBAND), (&roce, rates::ROCE_V2)] {
            let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
            let (l, link) = f.network_links().next().unwrap();
            let want = format.payload_rate(link.gbps);
            assert_eq!(net.capacity(2 * l.0), want);
            assert_eq!(net.capacity(2 * l.0 + 1), want);
            let nv = f
                .links
                .iter()
                .position(|l| l.kind == LinkKind::Nvlink)
                .unwrap();
            assert_eq!(net.capacity(2 * nv as u32), 370.8e9);
            // Host memory: half the bandwidth per staged byte (written, then read).
            let last = net.resources() as u32 - 1;
            assert_eq!(net.capacity(last), HOST_MEMORY_GBS * 1e9 / 2.0);
        }
    }

    /// A path's latency: both NICs, every switch from the catalog, every cable's length x its
    /// catalog delay per metre.
    #[test]
    fn path_latency_from_catalog() {
        let f = fabric("seed-leaf-spine", 2, 1, 1);
        let catalog = Catalog::builtin();
        let net = FabricNet::new(&f, &catalog, &NetConfig::default()).unwrap();
        let (src, dst) = (
            net.nic_port(0, 0, 0).unwrap().1,
            net.nic_port(1, 0, 0).unwrap().1,
        );
        let mut paths = Vec::new();
        dmodk().route(&net, src, dst, 0, &mut paths).unwrap();
        let mut res = Vec::new();
        let got = net.network_path(src, &paths[0], &mut res);
        let mut want_ps = 2 * NIC_LATENCY.ps();
        let mut at = f.port(src).node;
        for &l in &paths[0] {
            let link = f.link(l);
            let delay = match &link.medium {
                Medium::Cable { part, length_m, .. } => {
                    catalog.cables[&**part].delay_ns_per_m * length_m
                }
                Medium::Fibre { part, length_m, .. } => {
                    catalog.fibres[&**part].delay_ns_per_m * length_m
                }
                _ => panic!("a network link without a medium"),
            };
            want_ps += (delay * 1000.0).round() as u64;
            at = net.far(l, at);
            if let Some(s) = catalog.switches.get(&*f.node(at).model) {
                want_ps += u64::from(s.latency_ns) * 1000;
            }
        }
        // The last hop enters the NIC, counted once above.
        assert_eq!(got, Time::from_ps(want_ps));
        assert_eq!(res.len(), paths[0].len());
    }

    /// GPU to NIC: one PCIe switch crossed when they share it, two plus the root complex when not;
    /// with GPUDirect RDMA off, through host memory.
    #[test]
    fn pcie_paths_cross_the_switches_between() {
        let f = fabric("dgx-h100-superpod", 1, 8, 8);
        let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
        let s = &net.servers[0];
        let mut out = Vec::new();
        // GPU 0 and NIC 0 share PCIe switch 1.
        assert_eq!(s.nic_of_gpu[..2], [0, 1]);
        let lat = net.pcie_path(s.gpus[0], s.nics[0], 0, &mut out);
        assert_eq!((out.len(), lat), (2, PCIE_SWITCH_LATENCY));
        out.clear();
        let lat = net.pcie_path(s.gpus[0], s.nics[7], 0, &mut out);
        assert_eq!((out.len(), lat), (4, PCIE_SWITCH_LATENCY.saturating_mul(2)));
        let o = Overrides {
            gpudirect: Some(false),
            servers: Some(1),
            ..Overrides::default()
        };
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        o.apply(&mut raw).unwrap();
        let spec = ClusterSpec::from_raw(&raw, "t").unwrap();
        let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
        let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
        let s = &net.servers[0];
        out.clear();
        net.pcie_path(s.gpus[0], s.nics[0], 0, &mut out);
        // Up to the root complex, host memory, back down.
        let host = 2 * f.links.len() as u32;
        assert_eq!(out.len(), 5);
        assert_eq!(out[2], host);
        // NIC to GPU: the same, and the GPU's own receive through host memory (one per GPU,
        // after the server's host memory), capped at what NCCL's kernel reads.
        out.clear();
        net.pcie_path(s.nics[0], s.gpus[0], 0, &mut out);
        assert_eq!(out.len(), 6);
        assert_eq!((out[2], out[3]), (host, host + 1));
        assert_eq!(net.capacity(out[3]), HOST_STAGED_RECEIVE_GBS * 1e9);
        assert_eq!(net.staged_receivers()[0], s.gpus[0]);
        assert_eq!(net.resources() as u32, host + 1 + 8);
        assert!(net
            .describe(out[3])
            .ends_with("gpu1 receiving through host memory (GPUDirect RDMA off)"));
    }

    /// Issue 3's analytic case on a designed fabric: a shift permutation (i -> i + H/2) on a
    /// non-blocking two-tier tree with D-mod-K never shares a link, so every transfer runs at the
    /// full NIC rate.
    #[test]
    fn dmodk_shift_permutation_is_collision_free() {
        let f = fabric("seed-leaf-spine", 200, 1, 1);
        let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
        let pairs: Vec<(Gpu, Gpu)> = crate::traffic::shift(200, 100)
            .into_iter()
            .map(|(a, b)| (Gpu::new(a as usize, 0), Gpu::new(b as usize, 0)))
            .collect();
        let (_, rates) =
            simulate_transfers(&net, &dmodk(), &pairs, Relay::Direct, 1 << 20).unwrap();
        let full = rates::INFINIBAND.payload_rate(200.0);
        for r in rates {
            assert!((r - full).abs() < 1.0, "{r} vs {full}");
        }
    }
}
