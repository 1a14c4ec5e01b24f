use super::*;
use crate::nccl::tuning::graph::ring_graph;

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
    assert!(!tune(Collective::AllReduce, &one_per_node).enabled(NcclAlgo::Pat, Protocol::Simple));
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

/// NCCL's NVLS search across nodes (v2.26.2-1 src/graph/search.cc): each head channel takes its
/// speed on every GPU's NVLink, twice on its head's, so an NVL72 rack (72 GPUs and NICs) keeps
/// `NCCL_MAX_NVLS_ARITY` = 32 heads at 20 GB/s, the network raised to 40 (under twice that); an
/// HGX H100 server keeps all 8 GPUs as heads at 40 GB/s, 48 on the network; a B200 server all 8
/// at the NIC's 48.
#[test]
fn nvls_heads_across_nodes_follow_the_nvlink_budget() {
    let nvl72 = NcclSystem {
        ranks: 20 * 72,
        nodes: 20,
        nics_per_node: 72,
        nic_gbs: 50.0,
        ..dgx(GpuGeneration::Blackwell, 20, 72, 50.0)
    };
    let g = crate::nccl::tuning::graph::nvls_graph(&nvl72).unwrap();
    assert_eq!((g.channels, g.bw_intra, g.bw_inter), (32, 20.0, 40.0));
    // (heads + 1) x speed fits a GPU's NVLink.
    assert!(f64::from(g.channels + 1) * g.bw_intra <= nvl72.nvlink_gbs);
    let h100 = crate::nccl::tuning::graph::nvls_graph(&dgx(GpuGeneration::Hopper, 4, 8, 50.0));
    let g = h100.unwrap();
    assert_eq!((g.channels, g.bw_intra, g.bw_inter), (8, 40.0, 48.0));
    let b200 = crate::nccl::tuning::graph::nvls_graph(&dgx(GpuGeneration::Blackwell, 4, 8, 50.0));
    let g = b200.unwrap();
    assert_eq!((g.channels, g.bw_intra, g.bw_inter), (8, 48.0, 48.0));
    // NVLSTree stays NCCL's choice for a large all-reduce over 20 racks.
    let t = tune(Collective::AllReduce, &nvl72);
    assert!(
        busbw(&t, NcclAlgo::NvlsTree, Protocol::Simple)
            > busbw(&t, NcclAlgo::Ring, Protocol::Simple)
    );
}
