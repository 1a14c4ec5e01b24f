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

use crate::nccl::{Collective, GpuGeneration, HopKind, Protocol, Protocols};

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

const SPEED_INTRA: [f64; 13] = [
    40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0,
];
const SPEED_INTER: [f64; 19] = [
    48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2,
    0.24, 0.12,
];
const SM90_SPEED_INTRA: [f64; 11] = [
    60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0,
];
const SM90_SPEED_INTER: [f64; 17] = [
    48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24,
    0.12,
];
const SM100_SPEED_INTRA: [f64; 12] = [
    90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0,
];
const SM100_SPEED_INTER: [f64; 20] = [
    96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
    2.4, 1.2, 0.24, 0.12,
];

/// `MAXCHANNELS / 2`: the most channels a ring or tree search returns.
const MAX_GRAPH_CHANNELS: u32 = 16;

fn speeds(g: GpuGeneration, inter: bool) -> &'static [f64] {
    match (g, inter) {
        (GpuGeneration::Blackwell, false) => &SM100_SPEED_INTRA,
        (GpuGeneration::Blackwell, true) => &SM100_SPEED_INTER,
        (GpuGeneration::Hopper, false) => &SM90_SPEED_INTRA,
        (GpuGeneration::Hopper, true) => &SM90_SPEED_INTER,
        (_, false) => &SPEED_INTRA,
        (_, true) => &SPEED_INTER,
    }
}

/// The fastest speed of `array` no faster than `max` (the slowest entry if none is).
fn speed_at_most(array: &[f64], max: f64) -> f64 {
    array
        .iter()
        .copied()
        .find(|&s| s <= max + 1e-9)
        .unwrap_or(array[array.len() - 1])
}

/// `ncclTopoDupChannels`: fast channels are doubled at half the speed (not NVLS; not under 25 GB/s;
/// on SM90+ not under 50 GB/s when there are more than 4).
fn dup_channels(g: Graph, generation: GpuGeneration, nvls: bool) -> Graph {
    let sm90_plus = generation >= GpuGeneration::Hopper;
    if nvls
        || g.channels == 0
        || g.bw_intra < 25.0
        || (sm90_plus && g.bw_intra < 50.0 && g.channels > 4)
    {
        return g;
    }
    let dup = (g.channels * 2).min(MAX_GRAPH_CHANNELS);
    let div = f64::from(dup.div_ceil(g.channels));
    Graph {
        channels: dup,
        bw_intra: g.bw_intra / div,
        bw_inter: g.bw_inter / div,
    }
}

/// The ring graph (trees share its channels): on one node the speed the GPU's links carry, as many
/// channels as its NVLink (or PCIe) bandwidth holds; across nodes the NIC's speed (through the
/// GPU's PCIe), one channel per NIC per speed step it holds.
pub fn ring_graph(sys: &NcclSystem) -> Graph {
    let total_intra = if sys.nvlink {
        sys.nvlink_gbs
    } else {
        sys.pcie_gbs
    };
    let g = if sys.nodes <= 1 {
        let s = speed_at_most(speeds(sys.generation, false), total_intra);
        let channels = ((total_intra / s + 1e-9).floor() as u32).clamp(1, MAX_GRAPH_CHANNELS);
        Graph {
            channels,
            bw_intra: s,
            bw_inter: s,
        }
    } else {
        // The slowest hop of a GPU -> NIC path bounds the speed: the NIC, or the GPU's PCIe.
        let max_bw = sys.nic_gbs.min(sys.pcie_gbs);
        let s = speed_at_most(speeds(sys.generation, true), max_bw);
        let per_nic = ((sys.nic_gbs / s + 1e-9).floor() as u32).max(1);
        let channels = (sys.nics_per_node.max(1) * per_nic).clamp(1, MAX_GRAPH_CHANNELS);
        Graph {
            channels,
            bw_intra: s,
            bw_inter: s,
        }
    };
    dup_channels(g, sys.generation, false)
}

/// The tree graph: the ring's channels; on two nodes NCCL's second search pass raises the speed
/// inside the node up to twice the network's while the GPU's links carry it.
pub fn tree_graph(sys: &NcclSystem) -> Graph {
    let mut g = ring_graph(sys);
    if sys.nodes == 2 {
        raise_intra(sys, &mut g);
    }
    g
}

/// `NCCL_MAX_DIRECT_ARITY` (src/include/device.h): a CollNetDirect head reaches at most this many
/// other GPUs, so the CollNetDirect search keeps at most one more channel than that.
const MAX_DIRECT_ARITY: u32 = 7;

/// The CollNet graphs (init.cc builds them when CollNet is on; search.cc `ncclTopoCompute`): the
/// chain is searched with exactly the ring's channels; the direct graph one channel per head GPU,
/// each head on a NIC, at most `MAX_DIRECT_ARITY + 1` and the node's GPUs, doubled by
/// `ncclTopoDupChannels` up to that. Both start at the NIC's speed and, as trees on two nodes, then
/// raise the speed inside the node step by step up to twice the network's while the GPU's links
/// carry it ("increase bwIntra for trees (2 nodes or collnet)") — on any node count.
pub fn collnet_graph(sys: &NcclSystem, direct: bool) -> Graph {
    let ring = ring_graph(sys);
    let mut g = if direct {
        let cap = (MAX_DIRECT_ARITY + 1).min(sys.ppn().max(1));
        let s = speed_at_most(speeds(sys.generation, true), sys.nic_gbs.min(sys.pcie_gbs));
        let per_nic = ((sys.nic_gbs / s + 1e-9).floor() as u32).max(1);
        let channels = (sys.nics_per_node.max(1) * per_nic).clamp(1, cap);
        let g = Graph {
            channels,
            bw_intra: s,
            bw_inter: s,
        };
        let sm90_plus = sys.generation >= GpuGeneration::Hopper;
        if g.bw_intra < 25.0 || (sm90_plus && g.bw_intra < 50.0 && g.channels > 4) {
            g
        } else {
            let dup = (g.channels * 2).min(cap);
            let div = f64::from(dup.div_ceil(g.channels));
            Graph {
                channels: dup,
                bw_intra: g.bw_intra / div,
                bw_inter: g.bw_inter / div,
            }
        }
    } else {
        ring
    };
    raise_intra(sys, &mut g);
    g
}

/// search.cc's second pass for trees: the speed inside the node rises through the speed array up
/// to twice the network's, while the GPU's NVLink (or PCIe) carries it on every channel.
fn raise_intra(sys: &NcclSystem, g: &mut Graph) {
    let total_intra = if sys.nvlink {
        sys.nvlink_gbs
    } else {
        sys.pcie_gbs
    };
    let per_channel = total_intra / f64::from(g.channels.max(1));
    let raised = speed_at_most(
        speeds(sys.generation, true),
        (2.0 * g.bw_inter).min(per_channel),
    );
    g.bw_intra = g.bw_intra.max(raised);
}

/// The NVLS graph (NVSwitch systems from Hopper on): one channel per head GPU, at most one per GPU
/// of the node (`NCCL_MAX_NVLS_ARITY`), and across nodes at most one per NIC; on one node the
/// fastest speed the GPU's NVLink carries on every channel, across nodes the NIC's.
pub fn nvls_graph(sys: &NcclSystem) -> Option<Graph> {
    if !sys.nvswitch || sys.generation < GpuGeneration::Hopper || sys.ppn() < 2 {
        return None;
    }
    let ppn = sys.ppn();
    if sys.nodes <= 1 {
        let array = speeds(sys.generation, false);
        let s = array
            .iter()
            .copied()
            .find(|&s| f64::from(ppn) * s <= sys.nvlink_gbs + 1e-9)?;
        Some(Graph {
            channels: ppn,
            bw_intra: s,
            bw_inter: s,
        })
    } else {
        let s = speed_at_most(speeds(sys.generation, true), sys.nic_gbs.min(sys.pcie_gbs));
        Some(Graph {
            channels: ppn.min(sys.nics_per_node.max(1)),
            bw_intra: s,
            bw_inter: s,
        })
    }
}

/// NVLS efficiency by generation (tuning.cc `nvlsEfficiency`).
fn nvls_efficiency(g: GpuGeneration) -> f64 {
    match g {
        GpuGeneration::Hopper => 0.85,
        GpuGeneration::Blackwell => 0.74,
        _ => 0.0,
    }
}

/// Per-channel caps, GB/s, by generation and node count (1, 2, more) (tuning.cc tuner constants).
fn per_channel_caps(g: GpuGeneration, nodes: u32) -> PerChannelCaps {
    let i = match nodes {
        0 | 1 => 0,
        2 => 1,
        _ => 2,
    };
    let (ring_ll128, tree_ll128, tree, nvls_tree): ([f64; 3], [f64; 3], [f64; 3], [f64; 3]) =
        match g {
            GpuGeneration::Volta => ([20.0; 3], [20.0; 3], [26.5, 18.5, 10.0], [26.5, 18.5, 10.0]),
            GpuGeneration::Ampere => ([20.0; 3], [20.0; 3], [24.0, 23.6, 17.8], [24.0, 23.6, 17.8]),
            GpuGeneration::Hopper => (
                [36.7; 3],
                [36.7, 36.7, 29.0],
                [38.7, 41.4, 36.0],
                [0.0, 57.7, 45.5],
            ),
            GpuGeneration::Blackwell => (
                [40.0; 3],
                [55.6, 31.67, 20.0],
                [70.0, 42.8, 24.0],
                [0.0, 96.0, 80.0],
            ),
        };
    PerChannelCaps {
        ring_ll128: ring_ll128[i],
        tree_ll128: tree_ll128[i],
        tree: tree[i],
        nvls_tree: nvls_tree[i],
    }
}

struct PerChannelCaps {
    ring_ll128: f64,
    tree_ll128: f64,
    tree: f64,
    nvls_tree: f64,
}

/// The LL ceiling, GB/s (tuning.cc `llMaxBws`): on one node by generation, across nodes by CPU
/// (Intel: 39.0 on two nodes, 20.4 on more).
fn ll_max_bw(g: GpuGeneration, nodes: u32) -> f64 {
    match nodes {
        0 | 1 => match g {
            GpuGeneration::Volta => 39.0,
            GpuGeneration::Ampere => 87.7,
            GpuGeneration::Hopper => 141.0,
            GpuGeneration::Blackwell => 282.0,
        },
        2 => 39.0,
        _ => 20.4,
    }
}

/// Base latency, us, {LL, LL128, Simple} per algorithm (tuning.cc `baseLatencies`).
fn base_latency(a: NcclAlgo, p: Protocol) -> f64 {
    const T: [[f64; 3]; 7] = [
        [6.8, 14.0, 8.4],
        [6.6, 14.0, 8.4],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0],
        [8.0, 8.0, 8.0],
    ];
    T[a.index()][proto_index(p)]
}

/// Hardware latency of one step, us, by hop kind, algorithm and protocol (tuning.cc `hwLatencies`).
fn hw_latency(hop: HopKind, a: NcclAlgo, p: Protocol) -> f64 {
    const NVLINK: [[f64; 3]; 7] = [
        [0.6, 1.25, 4.0],
        [0.6, 1.9, 3.4],
        [0.0, 0.0, 3.7],
        [0.0, 0.0, 2.8],
        [0.0, 0.0, 25.0],
        [0.0, 0.0, 25.0],
        [0.0, 0.0, 4.0],
    ];
    const PCI: [[f64; 3]; 7] = [
        [1.0, 1.9, 4.0],
        [1.0, 2.5, 5.7],
        [0.0, 0.0, 3.7],
        [0.0, 0.0, 2.8],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 4.0],
    ];
    const NET: [[f64; 3]; 7] = [
        [5.0, 8.5, 14.0],
        [2.7, 4.0, 14.0],
        [0.0, 0.0, 31.0],
        [0.0, 0.0, 30.0],
        [0.0, 0.0, 18.0],
        [0.0, 0.0, 20.9],
        [0.0, 0.0, 14.0],
    ];
    let t = match hop {
        HopKind::Nvlink => &NVLINK,
        HopKind::Pcie => &PCI,
        HopKind::Net => &NET,
    };
    t[a.index()][proto_index(p)]
}

fn proto_index(p: Protocol) -> usize {
    match p {
        Protocol::Ll => 0,
        Protocol::Ll128 => 1,
        Protocol::Simple => 2,
    }
}

/// `log2i`: floor of log2, 0 for 0 and 1.
fn log2i(n: u32) -> u32 {
    31 - n.max(1).leading_zeros()
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
mod tests {
    use super::*;

    /// A DGX-style server: 8 GPUs on NVSwitch, `nics` NICs of `nic_gbs`.
    fn dgx(generation: GpuGeneration, nodes: u32, nics: u32, nic_gbs: f64) -> NcclSystem {
        let (nvlink_gbs, pcie_gbs) = match generation {
            GpuGeneration::Ampere => (240.0, 24.0),
            GpuGeneration::Hopper => (370.8, 48.0),
            _ => (721.8, 96.0),
        };
        NcclSystem {
            generation,
            nodes,
            ranks: nodes * 8,
            nvlink: true,
            nvswitch: true,
            nvlink_gbs,
            pcie_gbs,
            nics_per_node: nics,
            nic_gbs,
            ll128_net_path: true,
            collnet: false,
        }
    }

    /// nccl-tests' bus bandwidth of NCCL's predicted algorithm bandwidth.
    fn busbw(t: &Tuning, a: NcclAlgo, p: Protocol) -> f64 {
        t.bandwidth(a, p) * t.op.busbw_factor(t.system.ranks)
    }

    #[test]
    fn one_server_graphs_follow_the_nvlink() {
        // H100: 18 x 20.6 GB/s; 60 GB/s channels fit 6 times, doubled at 30.
        let g = ring_graph(&dgx(GpuGeneration::Hopper, 1, 8, 50.0));
        assert_eq!((g.channels, g.bw_intra), (12, 30.0));
        // A100: 12 x 20 GB/s; 40 GB/s fits 6 times, doubled at 20.
        let g = ring_graph(&dgx(GpuGeneration::Ampere, 1, 8, 25.0));
        assert_eq!((g.channels, g.bw_intra), (12, 20.0));
    }

    #[test]
    fn nvls_on_one_h100_server_is_near_the_published_480() {
        // 8 channels x 40 GB/s x 0.85 x 7/8 x 2 = 476 GB/s of bus bandwidth (published: 478.87
        // on Azure ND H100 v5; 475-480 in nccl-tests issues 212 and 272).
        let t = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Hopper, 1, 8, 50.0),
        );
        let bus = busbw(&t, NcclAlgo::Nvls, Protocol::Simple);
        assert!((bus - 476.0).abs() < 0.01, "{bus}");
        // NCCL picks it for large all-reduces.
        assert_eq!(
            t.select(1 << 30, &|_| true, Protocols::ALL),
            Some((NcclAlgo::Nvls, Protocol::Simple))
        );
        // Ring: 12 x 30 = 360 GB/s (published without NVLS: 368.76, nccl-tests issue 309).
        let ring = busbw(&t, NcclAlgo::Ring, Protocol::Simple);
        assert!((ring - 360.0).abs() < 0.01, "{ring}");
    }

    #[test]
    fn nvls_tree_across_h100_servers_matches_published_runs() {
        // Two servers, 8 x NDR: min(40 x ... , 2 x 48, cap 57.7) x 8 channels = 461.6 GB/s
        // (published: 469.21 at 16 GiB, nccl-tests issue 309).
        let t = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Hopper, 2, 8, 50.0),
        );
        let bus = busbw(&t, NcclAlgo::NvlsTree, Protocol::Simple);
        assert!((bus - 461.6).abs() < 0.01, "{bus}");
        assert_eq!(
            t.select(1 << 34, &|_| true, Protocols::ALL),
            Some((NcclAlgo::NvlsTree, Protocol::Simple))
        );
        // Four servers: the cap for more than two nodes, 45.5 x 8 = 364 GB/s (published: 365.84).
        let t = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Hopper, 4, 8, 50.0),
        );
        let bus = busbw(&t, NcclAlgo::NvlsTree, Protocol::Simple);
        assert!((bus - 364.0).abs() < 0.01, "{bus}");
    }

    #[test]
    fn across_nodes_a_ring_channel_runs_at_the_nic_speed() {
        // 4 x HDR (25 GB/s) on A100: 4 channels at 24 GB/s = 96 GB/s of bus bandwidth
        // (published: about 91, nccl-tests issue 100).
        let t = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Ampere, 2, 4, 25.0),
        );
        let bus = busbw(&t, NcclAlgo::Ring, Protocol::Simple);
        assert!((bus - 96.0).abs() < 0.01, "{bus}");
        // 8 x NDR on H100: 8 channels at 48, not doubled (SM90, under 50 GB/s, more than 4).
        let g = ring_graph(&dgx(GpuGeneration::Hopper, 16, 8, 50.0));
        assert_eq!((g.channels, g.bw_inter), (8, 48.0));
    }

    #[test]
    fn a_tree_on_two_nodes_stays_below_the_ring() {
        // tuning.cc charges a tree twice its data (x0.5) and caps its channels: on two A100
        // servers with 4 HDR NICs the tree's bus bandwidth does not pass the ring's.
        let t = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Ampere, 2, 4, 25.0),
        );
        let tree = busbw(&t, NcclAlgo::Tree, Protocol::Simple);
        let ring = busbw(&t, NcclAlgo::Ring, Protocol::Simple);
        assert!(tree <= ring, "tree {tree} ring {ring}");
    }

    #[test]
    fn enabled_algorithms_follow_nccl() {
        let one = dgx(GpuGeneration::Hopper, 1, 8, 50.0);
        let t = tune(Collective::AllReduce, &one);
        assert!(
            !t.enabled(NcclAlgo::NvlsTree, Protocol::Simple),
            "no NVLSTree on one node"
        );
        assert!(
            !t.enabled(NcclAlgo::Nvls, Protocol::Ll),
            "NVLS is Simple only"
        );
        let a100 = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Ampere, 1, 8, 25.0),
        );
        assert!(
            !a100.enabled(NcclAlgo::Nvls, Protocol::Simple),
            "NVLS needs SM90"
        );
        let many = dgx(GpuGeneration::Hopper, 4, 8, 50.0);
        let t = tune(Collective::AllReduce, &many);
        assert!(
            !t.enabled(NcclAlgo::Nvls, Protocol::Simple),
            "NVLS across nodes needs CollNet"
        );
        assert!(!t.enabled(NcclAlgo::CollNetDirect, Protocol::Simple));
        let sharp = tune(
            Collective::AllReduce,
            &NcclSystem {
                collnet: true,
                ..many
            },
        );
        assert!(sharp.enabled(NcclAlgo::Nvls, Protocol::Simple));
        assert!(sharp.enabled(NcclAlgo::CollNetDirect, Protocol::Simple));
        // PAT: all-gather with one GPU per node only.
        let one_per_node = NcclSystem {
            ranks: 16,
            nodes: 16,
            ..many
        };
        assert!(tune(Collective::AllGather, &one_per_node).enabled(NcclAlgo::Pat, Protocol::Simple));
        assert!(!tune(Collective::AllGather, &many).enabled(NcclAlgo::Pat, Protocol::Simple));
        assert!(
            !tune(Collective::AllReduce, &one_per_node).enabled(NcclAlgo::Pat, Protocol::Simple)
        );
        // LL128 needs NVLink inside the node and an LL128 path to the NIC.
        let no_gdr = NcclSystem {
            ll128_net_path: false,
            ..many
        };
        assert!(!tune(Collective::AllReduce, &no_gdr).enabled(NcclAlgo::Ring, Protocol::Ll128));
    }

    #[test]
    fn nvls_with_sharp_across_h100_servers_matches_the_published_run() {
        // NVLS across nodes with SHARP: min(NVLink side, 48) x 8 = 384 GB/s (published: 386.56
        // on 12 CoreWeave H100 servers with SHARP).
        let sys = NcclSystem {
            collnet: true,
            ..dgx(GpuGeneration::Hopper, 12, 8, 50.0)
        };
        let t = tune(Collective::AllReduce, &sys);
        let bus = busbw(&t, NcclAlgo::Nvls, Protocol::Simple);
        assert!((bus - 384.0).abs() < 0.01, "{bus}");
    }

    #[test]
    fn latencies_follow_tuning_cc() {
        // Ring LL all-reduce on one 8-GPU NVLink node: 6.6 + 14 steps x 0.6 us.
        let t = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Hopper, 1, 8, 50.0),
        );
        assert!((t.latency_us(NcclAlgo::Ring, Protocol::Ll) - (6.6 + 14.0 * 0.6)).abs() < 1e-9);
        // Tree LL on 16 nodes: 6.8 + 2 x (7 x 0.6 + 4 x 5.0).
        let t = tune(
            Collective::AllReduce,
            &dgx(GpuGeneration::Hopper, 16, 8, 50.0),
        );
        let want = 6.8 + 2.0 * (7.0 * 0.6 + 4.0 * 5.0);
        assert!((t.latency_us(NcclAlgo::Tree, Protocol::Ll) - want).abs() < 1e-9);
        // The ring plateau: x1.4 on several nodes once the per-rank share reaches 64 B.
        let small = t.latency_at(NcclAlgo::Ring, Protocol::Simple, 8);
        let large = t.latency_at(NcclAlgo::Ring, Protocol::Simple, 1 << 30);
        assert!((large / small - 1.4).abs() < 1e-9);
    }

    #[test]
    fn algo_names_are_nccls() {
        for a in NcclAlgo::ALL {
            assert_eq!(NcclAlgo::parse(&a.as_str().to_uppercase()), Some(a));
        }
        assert_eq!(NcclAlgo::parse("CollNet"), Some(NcclAlgo::CollNetDirect));
        assert_eq!(NcclAlgo::parse("butterfly"), None);
    }
}
