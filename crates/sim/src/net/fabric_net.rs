//! A railyard [`Fabric`] as an engine network: every link direction, and every server's host memory,
//! is a resource; routes run GPU -> PCIe -> NIC -> network -> NIC -> PCIe -> GPU, or over NVLink
//! inside a server.
//!
//! # Capacities (bytes per second, per direction)
//!
//! - Network links: the link's data rate after packet headers at a 4096-byte MTU,
//!   `rates::INFINIBAND` or `rates::ROCE_V2` by the fabric technology's family.
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
//! choice among equal-cost ports the [`Routing`](crate::net::routing::Routing) policy answers: D-mod-K takes the destination's
//! index (NIC ports ordered by leaf, as OpenSM's ftree numbers them) divided by the product of the
//! up-port counts below, modulo the ports (on the way down, among parallel links to one switch, the
//! parallel index taken on the way up, so the up-ports' spread carries down) (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic for
//! Shift Permutations on Real Life Fat Trees", 2010); ECMP hashes; adaptive spreads a connection
//! over every up-port of its first switch. A failed link is never taken: the choice falls to the
//! next port that still leads to the destination. Any other route source (an OpenSM LFT dump)
//! plugs in through `FabricRouting`.

use crate::engine::Workload;
use crate::error::SimError;
use crate::net::calibration::Calibration;
use crate::net::failures::DeadParallel;
use crate::time::Time;
use railyard_catalog::GpuGeneration;
use railyard_fabric::{Fabric, LinkId, Medium, NodeId, NodeKind, PortId, Tier};

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
    /// (`sharp_support`).
    pub sharp: bool,
    /// The ECMP hash of the simulations that route over this network without a routing config
    /// of their own (a training step: `train --qps-per-connection`): queue pairs per connection
    /// (NCCL_IB_QPS_PER_CONNECTION, NCCL's default 1) and the seed.
    pub hash: crate::net::routing::RoutingConfig,
    /// On a network over the NVLink domains of a rack-scale system's trays
    /// ([`FabricNet::over_nvlink_domains`]): the trays of each rack the job runs on, its first
    /// `N` (`sim collective --trays-per-rack`); `None`: every tray. NCCL's MNNVL clique is the
    /// communicator's ranks in one NVLink domain (src/mnnvl.cc), so the NVLink domain a job sees
    /// is these trays' GPUs: OCI's and CoreWeave's runs on 16 trays (64 GPUs) of each NVL72 rack.
    pub rack_trays: Option<u32>,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            host_memory_gbs: HOST_MEMORY_GBS,
            failed: Vec::new(),
            drained: Vec::new(),
            calibration: Calibration::default(),
            sharp: false,
            hash: crate::net::routing::RoutingConfig::default(),
            rack_trays: None,
        }
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
    pub(super) capacity: Vec<f64>,
    /// Per link, the one-way latency of the medium.
    pub(super) link_latency: Vec<Time>,
    /// Per node, the latency of crossing it.
    pub(super) node_latency: Vec<Time>,
    pub(super) failed: Vec<bool>,
    /// Any link down (`failed` holds a true).
    pub(super) degraded: bool,
    pub(super) gpudirect: bool,
    /// SHARP (CollNet) is on, on a fabric that supports it.
    pub(super) sharp: bool,
    /// Latency added to every operation by a calibration, us.
    pub(super) extra_latency_us: f64,
    /// The GPUs' generation from the catalog, for NCCL's per-generation caps.
    pub(super) gpu_generation: Option<GpuGeneration>,
    pub servers: Vec<ServerDevices>,
    /// Per node, the PCIe link up towards the root complex (GPUs, NICs, PCIe switches).
    pub(super) pcie_up: Vec<Option<LinkId>>,
    /// The servers (NVLink domains on a network over them) a job runs on (not drained,
    /// [`NetConfig::drained`]), ascending: indexes into [`FabricNet::servers`].
    pub(super) active: Vec<usize>,
    /// Per server of the fabric, whether it is drained ([`NetConfig::drained`]).
    pub(super) drained: Vec<bool>,
    /// The rack-scale NVLink domain each of [`FabricNet::servers`] is, on a network built over
    /// them ([`FabricNet::over_nvlink_domains`]); `None`: a server each.
    pub(super) domain: Option<crate::net::nvl_domain::NvlDomain>,
    /// The failed links between switches, as routing reads them for every sub-flow's climb once
    /// a cable is down ([`FabricNet::parallel_down_is_failed`]).
    pub(super) dead_parallel: DeadParallel,
    /// Some spine has up-links (a tier above the spines).
    pub(super) tier_above: bool,
    /// Per node, its live up-links, or where it has none its live lateral links: a connection's
    /// equal-cost ways on from its first switch.
    pub(crate) live_ways: Vec<u32>,
    /// Per node, its up-links, or where it has none its lateral links, live or not: the
    /// sub-flows a connection from it takes on the intact fabric, which it weighs as in every
    /// fair share however many of them a failure leaves (`Routes::nominal`).
    pub(crate) ways: Vec<u32>,
    /// Per link, the nodes at its ends (`a`, `b`): routing reads them at every hop, and the
    /// fabric's own records are far apart in memory.
    pub(super) ends: Vec<(u32, u32)>,
    /// Per node, its live network ports (cabled to the network, the cable up), in port order:
    /// `nic_ports[nic_port_at[n]..nic_port_at[n + 1]]`.
    pub(super) nic_port_at: Vec<u32>,
    pub(super) nic_ports: Vec<PortId>,
    /// Per node, its resource receiving through host memory (GPUs with GPUDirect RDMA off;
    /// `u32::MAX` otherwise), and those GPUs in resource order.
    pub(super) staged_receive: Vec<u32>,
    pub(super) staged_receivers: Vec<NodeId>,
    /// Per GPU node, its NVLink.
    pub(super) nvlink: Vec<Option<LinkId>>,
    /// The xGMI mesh joining each server's GPUs pair by pair (AMD Instinct), if the GPU has one:
    /// GPU to GPU crosses the pair's link, not an NVLink to a switch (`crate::net::xgmi`).
    pub(super) mesh: Option<crate::net::xgmi::XgmiMesh>,
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
    pub(super) words: usize,
    /// Per node, bitsets over leaves: the leaves below it over live links, and every leaf it
    /// reaches over live links going up, down or across.
    pub(crate) below: Vec<u64>,
    pub(crate) reach: Vec<u64>,
    /// Built on first use by the tree router: per switch above the leaves and per leaf, the one
    /// child (by its group of parallel links) with that leaf below it.
    pub(super) down_table: std::sync::OnceLock<DownTable>,
}

/// Per switch above the leaves, its live down-links grouped by child (in down-list order of
/// each group's first link), and per (switch, leaf) the group with the leaf below it when there
/// is exactly one ([`DownTable::ONE_OF_MANY`] when several, [`DownTable::NONE`] when none).
pub(super) struct DownTable {
    /// Row of each switch in `group_of` (`u32::MAX` for nodes without one).
    pub(super) row: Vec<u32>,
    /// Per row, per leaf: a group index among the row's groups (routing reads it at every hop
    /// down: kept small).
    pub(super) group_of: Vec<u16>,
    /// Per row, its first group; group g's links are `links[ends[g - 1]..ends[g]]`.
    pub(super) first_group: Vec<u32>,
    pub(super) ends: Vec<u32>,
    pub(super) links: Vec<LinkId>,
}

impl DownTable {
    const NONE: u16 = u16::MAX;
    const ONE_OF_MANY: u16 = u16::MAX - 1;
}

/// Resource of link `l` in one direction: `2l` from `a` to `b` (`forward`), `2l + 1` back.
pub(crate) fn link_dir(l: LinkId, forward: bool) -> u32 {
    2 * l.0 + u32::from(!forward)
}

impl<'f> FabricNet<'f> {
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
        if let Some(d) = self.mesh.as_ref().and_then(|m| m.describe(r)) {
            return d;
        }
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
    /// ascending, as indexes into [`FabricNet::servers`] (on a network over the NVLink domains,
    /// the domains none of whose trays is drained).
    pub fn active_servers(&self) -> &[usize] {
        &self.active
    }

    /// Whether some server of the fabric is drained.
    pub fn any_drained(&self) -> bool {
        self.drained.contains(&true)
    }

    /// Whether `server` (an index into `Fabric::servers`) is drained ([`NetConfig::drained`]).
    pub fn is_drained(&self, server: usize) -> bool {
        self.drained.get(server).copied().unwrap_or(false)
    }

    /// The rack-scale NVLink domain each of [`FabricNet::servers`] is, on a network built over
    /// the NVLink domains ([`FabricNet::over_nvlink_domains`]) of a rack-scale system's trays;
    /// `None` where every server is its own domain.
    pub fn nvlink_domain(&self) -> Option<&crate::net::nvl_domain::NvlDomain> {
        self.domain.as_ref()
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

    /// The xGMI mesh of the servers' GPUs, if they are joined by one (`crate::net::xgmi`).
    pub fn xgmi_mesh(&self) -> Option<&crate::net::xgmi::XgmiMesh> {
        self.mesh.as_ref()
    }

    /// GPU to GPU in one server over NVLink (or the pair's xGMI link on a mesh); `None` if
    /// either has no NVLink.
    pub fn nvlink_path(&self, from: NodeId, to: NodeId, out: &mut Vec<u32>) -> Option<Time> {
        if let Some(r) = self.mesh.as_ref().and_then(|m| m.resource(from, to)) {
            out.push(r);
            return Some(Time::ZERO);
        }
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

#[cfg(test)]
#[path = "fabric_net_tests.rs"]
mod tests;
