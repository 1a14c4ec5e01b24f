//! NCCL's search graphs as tuning.cc reads them: channels and per-channel bandwidth of the ring,
//! tree, CollNet and NVLS graphs (graph/search.cc's speed arrays).

use crate::nccl::GpuGeneration;

use crate::nccl::tuning::Graph;
use crate::nccl::tuning::NcclSystem;
pub(super) const SPEED_INTRA: [f64; 13] = [
    40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0,
];
pub(super) const SPEED_INTER: [f64; 19] = [
    48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2,
    0.24, 0.12,
];
pub(super) const SM90_SPEED_INTRA: [f64; 11] = [
    60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0,
];
pub(super) const SM90_SPEED_INTER: [f64; 17] = [
    48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24,
    0.12,
];
pub(super) const SM100_SPEED_INTRA: [f64; 12] = [
    90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0,
];
pub(super) const SM100_SPEED_INTER: [f64; 20] = [
    96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
    2.4, 1.2, 0.24, 0.12,
];

/// `MAXCHANNELS / 2`: the most channels a ring or tree search returns.
pub(super) const MAX_GRAPH_CHANNELS: u32 = 16;

pub(super) fn speeds(g: GpuGeneration, inter: bool) -> &'static [f64] {
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
pub(super) fn speed_at_most(array: &[f64], max: f64) -> f64 {
    array
        .iter()
        .copied()
        .find(|&s| s <= max + 1e-9)
        .unwrap_or(array[array.len() - 1])
}

/// `ncclTopoDupChannels`: fast channels are doubled at half the speed (not NVLS; not under 25 GB/s;
/// on SM90+ not under 50 GB/s when there are more than 4).
pub(super) fn dup_channels(g: Graph, generation: GpuGeneration, nvls: bool) -> Graph {
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
pub(super) const MAX_DIRECT_ARITY: u32 = 7;

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
pub(super) fn raise_intra(sys: &NcclSystem, g: &mut Graph) {
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

/// `NCCL_MAX_NVLS_ARITY` (src/include/device.h): the NVLS search keeps at most this many heads
/// (`ncclTopoCompute`: `maxChannels = min(NCCL_MAX_NVLS_ARITY, GPUs)`); an NVL72 rack's 72 GPUs
/// get 32 channels.
pub(crate) const MAX_NVLS_ARITY: u32 = 32;

/// The NVLS graph (NVSwitch systems from Hopper on): one channel per head GPU, at most one per GPU
/// of the node and [`MAX_NVLS_ARITY`] (`NCCL_MAX_NVLS_ARITY`), and across nodes at most one per
/// NIC; on one node the fastest speed the GPU's NVLink carries on every channel (the search forces
/// all of them there: "pull evenly from all GPUs"), across nodes as [`nvls_heads_across_nodes`]
/// searches.
pub fn nvls_graph(sys: &NcclSystem) -> Option<Graph> {
    if !sys.nvswitch || sys.generation < GpuGeneration::Hopper || sys.ppn() < 2 {
        return None;
    }
    let heads = sys.ppn().min(MAX_NVLS_ARITY);
    if sys.nodes <= 1 {
        let array = speeds(sys.generation, false);
        let s = array
            .iter()
            .copied()
            .find(|&s| f64::from(heads) * s <= sys.nvlink_gbs + 1e-9)?;
        Some(Graph {
            channels: heads,
            bw_intra: s,
            bw_inter: s,
        })
    } else {
        nvls_heads_across_nodes(sys, heads.min(sys.nics_per_node.max(1)))
    }
}

/// The NVLS search across nodes (NVIDIA/nccl v2.26.2-1, f44ac759, src/graph/search.cc:
/// `ncclTopoCompute`, `ncclTopoSearchTryNvls`, `ncclTopoCompareGraphs`; the same search through
/// v2.28.7-1, ae7aed19, whose SM100 speed array adds 96 GB/s for 800G NICs). Each head channel
/// is a NIC and its GPU, and takes its speed on the NVLink of every GPU of the node both ways,
/// twice on its head's own (`ncclTopoFollowPath` with `mul` 2 for `g`), so `h` heads at speed
/// `s` need `(h + 1) x s` of a GPU's NVLink. Pass one walks the speed array down from the NIC's
/// speed while a speed is above 0.49 of the best found,
/// keeping the graph with more channels ("NVLS channels correspond to GPUs pulling from NVLS. So
/// the more the better"), or more channels x speed; pass two then raises the network speed alone,
/// one step at a time while it is under twice the NVLink speed and the NIC carries it. On an NVL72
/// rack (72 GPUs of 721.8 GB/s NVLink as NCCL counts it, 72 NICs of 400G) that gives 32 heads at
/// 20 GB/s inside the node and 40 GB/s on the network; on 8-GPU HGX nodes all 8 GPUs are heads.
fn nvls_heads_across_nodes(sys: &NcclSystem, cap: u32) -> Option<Graph> {
    let array = speeds(sys.generation, true);
    let nic = sys.nic_gbs.min(sys.pcie_gbs);
    let mut best: Option<(u32, f64, usize)> = None;
    for (i, &s) in array.iter().enumerate().filter(|(_, &s)| s <= nic + 1e-9) {
        if let Some((_, bs, _)) = best {
            if s / bs <= 0.49 {
                break;
            }
        }
        let h = ((sys.nvlink_gbs / s + 1e-9).floor() as u32)
            .saturating_sub(1)
            .min(cap);
        if h == 0 {
            continue;
        }
        let better =
            best.is_none_or(|(bh, bs, _)| h > bh || f64::from(h) * s > f64::from(bh) * bs + 1e-9);
        if better {
            best = Some((h, s, i));
        }
    }
    let (channels, bw_intra, mut i) = best?;
    let mut bw_inter = bw_intra;
    while i > 0 && bw_inter < 2.0 * bw_intra && array[i - 1] <= nic + 1e-9 {
        i -= 1;
        bw_inter = array[i];
    }
    Some(Graph {
        channels,
        bw_intra,
        bw_inter,
    })
}

/// NVLS efficiency by generation (tuning.cc `nvlsEfficiency`).
pub(super) fn nvls_efficiency(g: GpuGeneration) -> f64 {
    match g {
        GpuGeneration::Hopper => 0.85,
        GpuGeneration::Blackwell => 0.74,
        _ => 0.0,
    }
}
