//! NCCL's own model of a communicator: the channels and per-channel bandwidths its topology search
//! finds, and the latency and bandwidth it predicts for every algorithm and protocol. NCCL picks the
//! algorithm and protocol of each call from this model; railyard does the same, then bounds the
//! model's bandwidth by what the fabric simulation delivers (see `collective`).
//!
//! Followed (NVIDIA/nccl, master of 2026; read, not copied; constants are NCCL's):
//! - `src/graph/search.cc`, `ncclTopoCompute`: per-channel speeds come from fixed arrays per GPU
//!   generation (`speedArrayIntra/Inter`, `sm90SpeedArray*`, `sm100SpeedArray*`); the search takes the
//!   fastest speed no path is slower than and fits as many channels as the links carry;
//!   `ncclTopoDupChannels` doubles fast channels at half the speed.
//! - `src/graph/tuning.cc`, `ncclTopoTuneModel`: base and per-hop latencies, the bandwidth of every
//!   algorithm and protocol with its refinements (LL halves, LL128 x 0.92 or 120/128, per-channel caps
//!   by generation and node count, NVLS efficiency, CollNet's GPU-per-NIC factor, PAT x 0.75), the
//!   conversion from bus bandwidth to algorithm bandwidth, and which algorithms and protocols are
//!   enabled (NVLSTree not on one node, NVLS across nodes and CollNet only with CollNet/SHARP, LL128
//!   only where paths allow it).
//! - `src/graph/tuning.cc`, `ncclTopoGetAlgoTime`: time = latency + bytes / bandwidth, with the tree
//!   correction factors for medium sizes and the ring "plateau" latency on several nodes.
//!
//! What is simplified, and why it is safe: the search here is closed-form (channels = what the
//! GPU's NVLink or NICs carry at the chosen speed) instead of NCCL's path search over the PCI tree; it
//! gives NCCL's channel counts on the balanced servers railyard builds (every GPU with the same
//! NVLink and, across nodes, the same share of NICs). CPU vendor is taken as Intel x86 (the LL
//! ceilings and network overhead NCCL uses for it).

use crate::nccl::tuning::graph::collnet_graph;
use crate::nccl::tuning::graph::nvls_efficiency;
use crate::nccl::tuning::graph::nvls_graph;
use crate::nccl::tuning::graph::ring_graph;
use crate::nccl::tuning::graph::tree_graph;
use crate::nccl::tuning::graph::MAX_GRAPH_CHANNELS;
use crate::nccl::tuning::latency::base_latency;
use crate::nccl::tuning::latency::hw_latency;
use crate::nccl::tuning::latency::ll_max_bw;
use crate::nccl::tuning::latency::log2i;
use crate::nccl::tuning::latency::per_channel_caps;
use crate::nccl::tuning::latency::proto_index;
use crate::nccl::{Collective, GpuGeneration, HopKind, Protocol, Protocols};

pub mod chain;
pub mod chunking;
mod graph;
pub(crate) use graph::MAX_NVLS_ARITY;
mod latency;

/// Every algorithm NCCL prices, in NCCL's order (`NCCL_ALGO_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NcclAlgo {
    Tree,
    Ring,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
}

impl NcclAlgo {
    pub const ALL: [NcclAlgo; 7] = [
        NcclAlgo::Tree,
        NcclAlgo::Ring,
        NcclAlgo::CollNetDirect,
        NcclAlgo::CollNetChain,
        NcclAlgo::Nvls,
        NcclAlgo::NvlsTree,
        NcclAlgo::Pat,
    ];

    /// The name `NCCL_ALGO` takes (case-insensitive there), lower case.
    pub fn as_str(self) -> &'static str {
        match self {
            NcclAlgo::Tree => "tree",
            NcclAlgo::Ring => "ring",
            NcclAlgo::CollNetDirect => "collnetdirect",
            NcclAlgo::CollNetChain => "collnetchain",
            NcclAlgo::Nvls => "nvls",
            NcclAlgo::NvlsTree => "nvlstree",
            NcclAlgo::Pat => "pat",
        }
    }

    /// Reads an `NCCL_ALGO` name, any case (`collnet` alone means both CollNet algorithms in NCCL;
    /// here it names CollNetDirect).
    pub fn parse(s: &str) -> Option<NcclAlgo> {
        let l = s.to_ascii_lowercase();
        NcclAlgo::ALL
            .into_iter()
            .find(|a| a.as_str() == l)
            .or(match l.as_str() {
                "collnet" => Some(NcclAlgo::CollNetDirect),
                _ => None,
            })
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The communicator as NCCL's topology code sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclSystem {
    pub generation: GpuGeneration,
    pub nodes: u32,
    pub ranks: u32,
    /// GPUs of the communicator talk over NVLink inside a node (else PCIe).
    pub nvlink: bool,
    /// An NVSwitch joins the node's GPUs (NVLS needs it, and SM90 or later).
    pub nvswitch: bool,
    /// Total NVLink bandwidth of one GPU, GB/s per direction (NCCL's `ncclTopoNVLinkBw` x links).
    pub nvlink_gbs: f64,
    /// A GPU's PCIe bandwidth as NCCL counts it (Gen3 x16 = 12 GB/s, doubling per generation).
    pub pcie_gbs: f64,
    /// NICs a node's ranks use.
    pub nics_per_node: u32,
    /// One NIC's bandwidth as NCCL reads it: the port speed / 8, GB/s.
    pub nic_gbs: f64,
    /// The path from a GPU to its NIC allows LL128 (GPUDirect RDMA through a PCIe switch, or on
    /// Hopper and later any path up to PXN). False with GPUDirect off (data through host memory).
    pub ll128_net_path: bool,
    /// CollNet (SHARP in-network reduction) is available and enabled.
    pub collnet: bool,
}

impl NcclSystem {
    /// Ranks per node.
    pub fn ppn(&self) -> u32 {
        self.ranks / self.nodes.max(1)
    }

    fn intra_hop(&self) -> HopKind {
        if self.nvlink {
            HopKind::Nvlink
        } else {
            HopKind::Pcie
        }
    }
}

/// A graph NCCL's search found: how many channels, at what speed inside and between nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Graph {
    pub channels: u32,
    /// GB/s per channel.
    pub bw_intra: f64,
    pub bw_inter: f64,
}

/// NCCL's prediction for one collective: per algorithm and protocol, the latency (us) and the
/// algorithm bandwidth (GB/s; 0 where NCCL does not use it).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    pub op: Collective,
    pub system: NcclSystem,
    /// `[algorithm][protocol]`, GB/s of algorithm bandwidth.
    pub bandwidth: [[f64; 3]; 7],
    /// `[algorithm][protocol]`, microseconds.
    pub latency: [[f64; 3]; 7],
    /// Channels NCCL runs at (the ring graph's, doubled by connect.cc), for the ring plateau.
    pub runtime_channels: u32,
}

impl Tuning {
    pub fn bandwidth(&self, a: NcclAlgo, p: Protocol) -> f64 {
        self.bandwidth[a.index()][proto_index(p)]
    }

    pub fn latency_us(&self, a: NcclAlgo, p: Protocol) -> f64 {
        self.latency[a.index()][proto_index(p)]
    }

    /// Whether NCCL would consider this algorithm and protocol.
    pub fn enabled(&self, a: NcclAlgo, p: Protocol) -> bool {
        self.bandwidth(a, p) > 0.0
    }

    /// NCCL's bandwidth for `bytes` with its medium-size corrections: the tree correction factor
    /// (64 B to 256 MB, tuning.cc `treeCorrectionFactor`), GB/s of algorithm bandwidth.
    pub fn bandwidth_at(&self, a: NcclAlgo, p: Protocol, bytes: u64) -> f64 {
        let mut bw = self.bandwidth(a, p);
        let log_size = (bytes >> 6).checked_ilog2().map(|l| l as usize);
        if a == NcclAlgo::Tree && self.op == Collective::AllReduce {
            if let Some(l) = log_size.filter(|&l| l < 23) {
                bw *= TREE_CORRECTION[proto_index(p)][l];
            }
        }
        if a == NcclAlgo::NvlsTree
            && self.op == Collective::AllReduce
            && self.system.generation >= GpuGeneration::Blackwell
        {
            if let Some(l) = log_size.filter(|&l| l < 24) {
                bw *= TREE_CORRECTION[proto_index(p)][l];
            }
        }
        bw
    }

    /// NCCL's latency for `bytes`: ring Simple all-reduce on several nodes pays x1.4 (x1.9 before
    /// Ampere) once each rank's share of a channel reaches 64 bytes (the ring "plateau").
    pub fn latency_at(&self, a: NcclAlgo, p: Protocol, bytes: u64) -> f64 {
        let mut lat = self.latency_us(a, p);
        let per = u64::from(self.runtime_channels.max(1)) * u64::from(self.system.ranks.max(1));
        if a == NcclAlgo::Ring
            && p == Protocol::Simple
            && self.system.nodes > 1
            && self.op == Collective::AllReduce
            && bytes / per >= 64
        {
            lat *= if self.system.generation < GpuGeneration::Ampere {
                1.9
            } else {
                1.4
            };
        }
        lat
    }

    /// NCCL's predicted time, us (`ncclTopoGetAlgoTime`, one operation); `None` if disabled.
    pub fn time_us(&self, a: NcclAlgo, p: Protocol, bytes: u64) -> Option<f64> {
        let bw = self.bandwidth_at(a, p, bytes);
        (bw > 0.0).then(|| self.latency_at(a, p, bytes) + bytes as f64 / (1e3 * bw))
    }

    /// The algorithm and protocol NCCL picks for `bytes`: the least predicted time among those
    /// allowed (`allowed(a)`, `NCCL_ALGO`; `protocols`, `NCCL_PROTO`), first in NCCL's order on a
    /// tie.
    pub fn select(
        &self,
        bytes: u64,
        allowed: &dyn Fn(NcclAlgo) -> bool,
        protocols: Protocols,
    ) -> Option<(NcclAlgo, Protocol)> {
        let mut best: Option<(f64, NcclAlgo, Protocol)> = None;
        for a in NcclAlgo::ALL {
            if !allowed(a) {
                continue;
            }
            for p in Protocol::ALL {
                if !protocols.allows(p) {
                    continue;
                }
                if let Some(t) = self.time_us(a, p, bytes) {
                    if best.is_none_or(|(bt, _, _)| t < bt) {
                        best = Some((t, a, p));
                    }
                }
            }
        }
        best.map(|(_, a, p)| (a, p))
    }
}

/// tuning.cc `treeCorrectionFactor[protocol][log2(bytes / 64)]`.
const TREE_CORRECTION: [[f64; 24]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9,
        0.9, 0.9, 0.9, 1.0, 1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8,
        0.7, 0.7, 0.8, 0.9, 0.9, 0.9,
    ],
];

/// NCCL's model of `op` on `sys` (`ncclTopoTuneModel`).
pub fn tune(op: Collective, sys: &NcclSystem) -> Tuning {
    let ring = ring_graph(sys);
    let tree = tree_graph(sys);
    let nvls = nvls_graph(sys);
    let graph = |a: NcclAlgo| -> Option<Graph> {
        match a {
            NcclAlgo::Ring | NcclAlgo::Pat => Some(ring),
            NcclAlgo::Tree => Some(tree),
            NcclAlgo::CollNetDirect => Some(collnet_graph(sys, true)),
            NcclAlgo::CollNetChain => Some(collnet_graph(sys, false)),
            NcclAlgo::Nvls | NcclAlgo::NvlsTree => nvls,
        }
    };
    let nodes = sys.nodes.max(1);
    let ranks = sys.ranks.max(1);
    let ppn = f64::from(ranks) / f64::from(nodes);
    let caps = per_channel_caps(sys.generation, nodes);
    let ll_max = ll_max_bw(sys.generation, nodes);
    let nsteps = match op {
        Collective::AllReduce => 2 * (ranks - 1),
        Collective::ReduceScatter | Collective::AllGather => ranks - 1,
        _ => ranks,
    }
    .max(1);
    let mut bandwidth = [[0.0; 3]; 7];
    let mut latency = [[0.0; 3]; 7];
    for a in NcclAlgo::ALL {
        let Some(g) = graph(a) else { continue };
        if !algo_enabled(op, a, sys) {
            continue;
        }
        for p in Protocol::ALL {
            if matches!(a, NcclAlgo::Nvls | NcclAlgo::NvlsTree | NcclAlgo::Pat)
                && p != Protocol::Simple
            {
                continue;
            }
            if matches!(a, NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain)
                && p != Protocol::Simple
            {
                continue;
            }
            if p == Protocol::Ll128 && !ll128_enabled(sys) {
                continue;
            }
            let collnet = matches!(a, NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain);
            let mut bw = if nodes <= 2 || collnet {
                g.bw_intra
            } else {
                g.bw_inter
            };
            let channels = f64::from(g.channels);
            if matches!(a, NcclAlgo::Nvls | NcclAlgo::NvlsTree) {
                if g.channels < 2 {
                    continue;
                }
                let mut intra =
                    g.bw_intra * nvls_efficiency(sys.generation) * (channels - 1.0) / channels;
                if op == Collective::AllReduce {
                    intra *= 2.0;
                } else {
                    intra *= (ppn - 1.0) / ppn;
                }
                let inter = g.bw_inter
                    * if nodes <= 2 && a == NcclAlgo::NvlsTree {
                        2.0
                    } else {
                        1.0
                    };
                let cap = if a == NcclAlgo::NvlsTree {
                    caps.nvls_tree
                } else {
                    f64::INFINITY
                };
                // On one node NVLS has no network hop: only its NVLink side counts.
                bw = if nodes <= 1 {
                    intra.min(cap)
                } else {
                    intra.min(inter).min(cap)
                };
            }
            let mut bus = channels * bw;
            match (a, p) {
                (NcclAlgo::Ring, Protocol::Ll) => bus = ll_max.min(bus * 0.5),
                (NcclAlgo::Ring, Protocol::Ll128) => {
                    bus = (bus * 0.92).min(channels * caps.ring_ll128)
                }
                _ => {}
            }
            if a == NcclAlgo::Tree && op == Collective::AllReduce {
                bus = (bus * 0.92).min(channels * caps.tree);
            }
            match (a, p) {
                (NcclAlgo::Tree, Protocol::Ll) => bus = (bus / 3.8).min(ll_max),
                (NcclAlgo::Tree, Protocol::Ll128) => {
                    let f = if nodes == 1 { 7.0 / 9.0 } else { 120.0 / 128.0 };
                    bus = (bus * f).min(channels * caps.tree_ll128)
                }
                _ => {}
            }
            if a == NcclAlgo::Pat {
                bus *= 0.75;
            }
            if a == NcclAlgo::CollNetDirect {
                if matches!(op, Collective::AllGather | Collective::ReduceScatter) {
                    bus = ppn * g.bw_intra.min(g.bw_inter * 0.9);
                } else {
                    // "Collnet+Direct requires all GPUs to have a local NIC to work at full speed":
                    // divided by the GPU:NIC ratio, half-way back to 1.
                    let mut factor = ppn / channels;
                    factor -= (factor - 1.0) / 2.0;
                    bus /= factor;
                    if sys.generation >= GpuGeneration::Hopper {
                        bus *= 0.85;
                    }
                }
            }
            // Bus bandwidth to algorithm bandwidth (not for non-ring all-gather / reduce-scatter).
            let agrs = matches!(op, Collective::AllGather | Collective::ReduceScatter);
            if !(a != NcclAlgo::Ring && agrs) {
                let ratio = if matches!(a, NcclAlgo::Ring | NcclAlgo::Nvls | NcclAlgo::NvlsTree) {
                    f64::from(ranks) / f64::from(nsteps)
                } else {
                    0.5
                };
                bus *= ratio;
            }
            bandwidth[a.index()][proto_index(p)] = bus;
            latency[a.index()][proto_index(p)] = algo_latency(op, a, p, sys, nsteps);
        }
    }
    Tuning {
        op,
        system: *sys,
        bandwidth,
        latency,
        runtime_channels: runtime_channels(sys, &ring),
    }
}

/// Channels NCCL runs at: the ring graph's, doubled when rings and trees are connected, and
/// doubled again on Hopper and later across nodes while fewer than 16 and the ring is faster
/// than 45 GB/s inside the node (connect.cc `ncclTopoPostset`).
fn runtime_channels(sys: &NcclSystem, ring: &Graph) -> u32 {
    let mut c = (ring.channels * 2).min(2 * MAX_GRAPH_CHANNELS);
    if sys.generation >= GpuGeneration::Hopper && sys.nodes > 1 && ring.bw_intra > 45.0 && c < 16 {
        c *= 2;
    }
    c
}

/// Which algorithms NCCL prices for `op` and enables on `sys` (tuning.cc).
fn algo_enabled(op: Collective, a: NcclAlgo, sys: &NcclSystem) -> bool {
    let agrs = matches!(op, Collective::AllGather | Collective::ReduceScatter);
    let op_ok = match op {
        Collective::Broadcast | Collective::Reduce => a == NcclAlgo::Ring,
        Collective::AllGather | Collective::ReduceScatter => matches!(
            a,
            NcclAlgo::Pat | NcclAlgo::Ring | NcclAlgo::Nvls | NcclAlgo::CollNetDirect
        ),
        Collective::AllReduce => a != NcclAlgo::Pat,
        Collective::AllToAll | Collective::SendRecv => false,
    };
    if !op_ok {
        return false;
    }
    let nodes = sys.nodes.max(1);
    match a {
        NcclAlgo::Ring => true,
        // A tree needs two ranks per node or two nodes to be one.
        NcclAlgo::Tree => sys.ranks > 1,
        // PAT: one GPU per node, Pascal and later, host network (ncclPatEnable).
        NcclAlgo::Pat => nodes == sys.ranks && nodes > 1,
        NcclAlgo::NvlsTree => nodes > 1 && nvls_graph(sys).is_some(),
        // NVLS across nodes needs CollNet; all-gather / reduce-scatter across nodes need
        // CollNet's all-gather and reduce-scatter too (taken as available with CollNet).
        NcclAlgo::Nvls => nvls_graph(sys).is_some() && (nodes == 1 || sys.collnet),
        // CollNet: with SHARP; Direct only on NVSwitch systems; not for all-gather /
        // reduce-scatter with more local ranks than heads (one per NIC).
        NcclAlgo::CollNetDirect => {
            sys.collnet && sys.nvswitch && nodes > 1 && (!agrs || sys.ppn() <= sys.nics_per_node)
        }
        NcclAlgo::CollNetChain => sys.collnet && nodes > 1,
    }
}

/// LL128 is on by default only where paths allow it (tuning.cc): NVLink (or one GPU) inside the
/// node, and a GPU-to-NIC path LL128 supports.
fn ll128_enabled(sys: &NcclSystem) -> bool {
    let intra_ok = sys.nvlink || sys.ppn() <= 1;
    let inter_ok = sys.nodes <= 1 || sys.ll128_net_path;
    intra_ok && inter_ok
}

/// NCCL's latency of an algorithm and protocol, us (tuning.cc, after the bandwidth loop).
fn algo_latency(op: Collective, a: NcclAlgo, p: Protocol, sys: &NcclSystem, nsteps: u32) -> f64 {
    let nodes = sys.nodes.max(1);
    let ranks = sys.ranks.max(1);
    let ppn = ranks / nodes;
    let intra_hop = sys.intra_hop();
    let hw = if nodes == 1 { intra_hop } else { HopKind::Net };
    let mut lat = base_latency(a, p);
    let mut intra = hw_latency(intra_hop, a, p);
    // With one rank per node every hop is a network hop: NCCL charges the tree's network row.
    let inter = if ppn == 1 {
        hw_latency(HopKind::Net, NcclAlgo::Tree, p)
    } else {
        hw_latency(HopKind::Net, a, p)
    };
    match a {
        NcclAlgo::Ring => {
            let step = hw_latency(hw, a, p);
            if matches!(op, Collective::Broadcast | Collective::Reduce) {
                // Rings and trees search the same channels on railyard's balanced servers.
                lat += step;
            } else {
                // Inter-node rings still launch a network post per step (x86 Intel: 1 us, x3
                // for Simple).
                if nodes > 1 {
                    let overhead = if p == Protocol::Simple { 3.0 } else { 1.0 };
                    intra = intra.max(overhead);
                }
                let inter_steps = match op {
                    _ if nodes == 1 => 0,
                    Collective::AllReduce => 2 * (nodes - 1),
                    _ => nodes - 1,
                }
                .min(nsteps);
                lat += f64::from(nsteps - inter_steps) * intra + f64::from(inter_steps) * inter;
            }
        }
        NcclAlgo::Tree => {
            if op == Collective::AllReduce {
                lat += 2.0 * (f64::from(ppn - 1) * intra + f64::from(log2i(nodes)) * inter);
            }
        }
        NcclAlgo::CollNetDirect => {
            let local = f64::from(ppn - 1);
            lat += 2.0 * (local.min(1.0) * intra + local * 0.4) + inter;
        }
        NcclAlgo::CollNetChain => {
            lat += 2.0 * f64::from(ppn - 1) * intra + inter;
        }
        NcclAlgo::Nvls => {
            lat = intra;
            if nodes > 1 {
                lat += inter;
            }
        }
        NcclAlgo::NvlsTree => {
            lat += intra + 2.0 * f64::from(log2i(nodes)) * inter;
        }
        NcclAlgo::Pat => {
            if matches!(op, Collective::AllGather | Collective::ReduceScatter) {
                lat += f64::from(log2i(nodes)) * (inter / 3.5) + f64::from(ranks) * 2.8;
            }
        }
    }
    lat
}

#[cfg(test)]
#[path = "tuning_tests.rs"]
mod tests;
