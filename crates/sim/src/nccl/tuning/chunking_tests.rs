use super::*;
use crate::nccl::tuning::tune;

const MIB: u64 = 1 << 20;

/// A DGX-style server: 8 GPUs on NVSwitch, 8 NICs of `nic_gbs`.
fn dgx(generation: GpuGeneration, nodes: u32, nic_gbs: f64) -> NcclSystem {
    NcclSystem {
        generation,
        nodes,
        ranks: nodes * 8,
        nvlink: true,
        nvswitch: true,
        nvlink_gbs: if generation == GpuGeneration::Hopper {
            370.8
        } else {
            721.8
        },
        pcie_gbs: 48.0,
        nics_per_node: 8,
        nic_gbs,
        ll128_net_path: true,
        collnet: false,
    }
}

fn chunk_of(sys: &NcclSystem, a: NcclAlgo, bytes: u64) -> Chunking {
    nvls_chunking(&tune(Collective::AllReduce, sys), a, bytes).unwrap()
}

#[test]
fn nvls_on_one_h100_server_shrinks_its_chunk_as_calc_coll_chunking_does() {
    // 16 channels x 8 heads = 128 concurrent ops: 16 KiB below 2 x 128 x 32 KiB = 8 MiB, 32 KiB
    // below 8 x 128 x 64 KiB = 64 MiB, 64 KiB below 64 x 128 x 128 KiB = 1 GiB, then 128 KiB.
    let sys = dgx(GpuGeneration::Hopper, 1, 50.0);
    for (bytes, kib) in [
        (4 * MIB, 16),
        (8 * MIB, 32),
        (63 * MIB, 32),
        (64 * MIB, 64),
        (512 * MIB, 64),
        (1024 * MIB, 128),
    ] {
        let c = chunk_of(&sys, NcclAlgo::Nvls, bytes);
        assert_eq!((c.channels, c.heads), (16, 8));
        assert_eq!(c.chunk, kib * 1024, "{bytes}");
        assert_eq!(c.full_chunk, 128 * 1024);
    }
    // 4 MiB: one loop of 128 x 16 KiB... two loops, 16 steps per channel of whole chunks.
    let c = chunk_of(&sys, NcclAlgo::Nvls, 4 * MIB);
    assert_eq!((c.steps, c.step_bytes), (16, 16384.0));
    // 1 KiB: one loop, 8 steps of 8 bytes.
    let c = chunk_of(&sys, NcclAlgo::Nvls, 1024);
    assert_eq!((c.steps, c.step_bytes), (8, 8.0));
    assert!(nvls_chunking(&tune(Collective::AllReduce, &sys), NcclAlgo::Ring, MIB).is_none());
}

#[test]
fn nvls_tree_chunk_follows_the_node_count_as_nccl_2_29_and_later() {
    // Two servers: from 128 KiB; 4+ servers: from 64 KiB (NVLSTREE_MAX_CHUNKSIZE = -2).
    let two = dgx(GpuGeneration::Hopper, 2, 50.0);
    let four = dgx(GpuGeneration::Hopper, 4, 50.0);
    for (bytes, at2, at4) in [
        (4 * MIB, 32, 32),
        (16 * MIB, 64, 64),
        (64 * MIB, 128, 64),
        (1024 * MIB, 128, 64),
    ] {
        assert_eq!(chunk_of(&two, NcclAlgo::NvlsTree, bytes).chunk, at2 * 1024);
        assert_eq!(chunk_of(&four, NcclAlgo::NvlsTree, bytes).chunk, at4 * 1024);
    }
    assert_eq!(nvls_tuning(&four).tree_max_chunk, 64 * 1024);
}

#[test]
fn blackwell_across_nodes_takes_the_sm100_tuning() {
    // Two B200 servers on 400G NICs (50 GB/s, PXB): 32 channels, 64 KiB tree chunk.
    let t = nvls_tuning(&dgx(GpuGeneration::Blackwell, 2, 50.0));
    assert_eq!(
        (t.channels, t.chunk, t.tree_max_chunk),
        (32, 128 * 1024, 64 * 1024)
    );
    // One server: 24 channels. 800G NICs on 4 servers: 24 channels, 256 KiB.
    assert_eq!(
        nvls_tuning(&dgx(GpuGeneration::Blackwell, 1, 50.0)).channels,
        24
    );
    let t = nvls_tuning(&dgx(GpuGeneration::Blackwell, 4, 100.0));
    assert_eq!(
        (t.channels, t.chunk, t.tree_max_chunk),
        (24, 256 * 1024, 256 * 1024)
    );
}

#[test]
fn the_pipeline_keeps_large_sizes_and_slows_small_chunks() {
    let sys = dgx(GpuGeneration::Hopper, 1, 50.0);
    let algbw = 271.7;
    let at = |bytes: u64, o: f64, d: f64| {
        pipelined_transfer_us(algbw, &chunk_of(&sys, NcclAlgo::Nvls, bytes), o, d)
    };
    // Neutral constants: bytes / bandwidth at every size.
    for bytes in [MIB, 16 * MIB, 1 << 34] {
        let plain = bytes as f64 / (algbw * 1e3);
        assert!((at(bytes, 0.0, 0.0) / plain - 1.0).abs() < 1e-12);
    }
    // With a per-step cost and a fill, 16 GiB stays within 1% and 16 MiB is slower by a third.
    let big = 1u64 << 34;
    assert!(at(big, 0.3, 10.0) / at(big, 0.0, 0.0) < 1.01);
    assert!(at(16 * MIB, 0.3, 10.0) / at(16 * MIB, 0.0, 0.0) > 1.3);
    // The 1 GiB jump of the published sweeps: busbw(1G) / busbw(512M) above 1.04.
    let bw = |bytes: u64| bytes as f64 / (25.0 + at(bytes, 0.3, 10.0));
    assert!(bw(1 << 30) / bw(512 * MIB) > 1.04);
    // Time grows with the size.
    let mut last = 0.0;
    for k in 10..35 {
        let t = at(1 << k, 0.3, 10.0);
        assert!(t > last, "{k}");
        last = t;
    }
}
