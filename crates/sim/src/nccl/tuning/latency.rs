//! tuning.cc's per-channel bandwidth caps and its base and per-hop latencies.

use crate::nccl::{GpuGeneration, HopKind, Protocol};

use crate::nccl::tuning::NcclAlgo;
/// Per-channel caps, GB/s, by generation and node count (1, 2, more) (tuning.cc tuner constants).
pub(super) fn per_channel_caps(g: GpuGeneration, nodes: u32) -> PerChannelCaps {
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

pub(super) struct PerChannelCaps {
    pub(super) ring_ll128: f64,
    pub(super) tree_ll128: f64,
    pub(super) tree: f64,
    pub(super) nvls_tree: f64,
}

/// The LL ceiling, GB/s (tuning.cc `llMaxBws`): on one node by generation, across nodes by CPU
/// (Intel: 39.0 on two nodes, 20.4 on more).
pub(super) fn ll_max_bw(g: GpuGeneration, nodes: u32) -> f64 {
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
pub(super) fn base_latency(a: NcclAlgo, p: Protocol) -> f64 {
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
pub(super) fn hw_latency(hop: HopKind, a: NcclAlgo, p: Protocol) -> f64 {
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

pub(super) fn proto_index(p: Protocol) -> usize {
    match p {
        Protocol::Ll => 0,
        Protocol::Ll128 => 1,
        Protocol::Simple => 2,
    }
}

/// `log2i`: floor of log2, 0 for 0 and 1.
pub(super) fn log2i(n: u32) -> u32 {
    31 - n.max(1).leading_zeros()
}
