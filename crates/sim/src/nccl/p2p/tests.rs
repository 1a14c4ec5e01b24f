use super::*;

/// A DGX H100 communicator: 8 GPUs per node on NVSwitch (18 NVLinks), one 400 Gb/s NIC each.
fn h100(nodes: u32) -> NcclSystem {
    NcclSystem {
        generation: GpuGeneration::Hopper,
        nodes,
        ranks: nodes * 8,
        nvlink: true,
        nvswitch: true,
        nvlink_gbs: 18.0 * 20.6,
        pcie_gbs: 48.0,
        nics_per_node: 8,
        nic_gbs: 50.0,
        ll128_net_path: true,
        collnet: false,
    }
}

#[test]
fn channels_per_peer_shrink_until_every_peer_fits_one_round_across_nodes() {
    // 400 Gb/s = 50 GB/s: ceil(50 / 14) = 4 channels per network peer (paths.cc); 16 ranks
    // (2 groups of 8) fit 4 x 2 = 8 <= 32 channels; 512 ranks (64 groups) need 1.
    let two = P2pSchedule::new(&h100(2), 32);
    assert_eq!((two.channels, two.channels_per_peer), (32, 4));
    let big = P2pSchedule::new(&h100(64), 32);
    assert_eq!((big.channels, big.channels_per_peer), (32, 1));
    // One node: 2 x 18 links = 36, rounded up to 64, capped at the p2p channels.
    let one = P2pSchedule::new(&h100(1), 24);
    assert_eq!((one.channels, one.channels_per_peer), (32, 32));
    assert_eq!(one.chunk_bytes, P2P_NVL_CHUNK_BYTES);
    assert_eq!(big.chunk_bytes, P2P_NET_CHUNK_BYTES);
}

#[test]
fn a_transfer_is_split_only_when_its_parts_pass_a_chunk() {
    let two = P2pSchedule::new(&h100(2), 32);
    // nChannelsMin: 4 x 16 ranks > 32, so 2; 1 KiB fills one part of 64 KiB.
    assert_eq!(two.task_channels(1024), 1);
    assert_eq!(two.task_channels(128 << 10), 2);
    // 1 MiB on 2 channels is 512 KiB a part, above the 128 KiB chunk: doubled to 4.
    assert_eq!(two.task_channels(1 << 20), 4);
}

#[test]
fn network_transfers_run_simple_and_nvlink_ones_ll_below_the_threshold() {
    let two = P2pSchedule::new(&h100(2), 32);
    assert_eq!(two.protocol(1024, HopKind::Net), Protocol::Simple);
    assert_eq!(two.protocol(1024, HopKind::Nvlink), Protocol::Ll);
    assert_eq!(two.protocol(1 << 20, HopKind::Nvlink), Protocol::Simple);
}

#[test]
fn batches_follow_the_round_groups_over_the_channels() {
    // One node of 8: each round its own channel, one batch each.
    assert_eq!(
        P2pSchedule::new(&h100(1), 32).all_to_all_batches(128),
        (1, 0)
    );
    // Two nodes: the own node's group on channel 0, the other node's on channel 16.
    assert_eq!(
        P2pSchedule::new(&h100(2), 32).all_to_all_batches(128),
        (0, 1)
    );
    // 64 nodes over 32 channels: two round groups per channel.
    assert_eq!(
        P2pSchedule::new(&h100(64), 32).all_to_all_batches(2048),
        (0, 2)
    );
    // 512 nodes: 16 a channel.
    assert_eq!(
        P2pSchedule::new(&h100(512), 32).all_to_all_batches(2048),
        (0, 16)
    );
}

#[test]
fn the_latency_is_the_base_and_the_busiest_channels_steps() {
    let one = P2pSchedule::new(&h100(1), 32);
    // Ring LL base 6.6 + one NVLink LL step 0.6 (tuning.cc baseLat, hwLat).
    assert!((one.all_to_all_latency_us(128, Protocol::Ll) - 7.2).abs() < 1e-9);
    let big = P2pSchedule::new(&h100(64), 32);
    // Ring Simple base 8.4 + 2 network Simple steps of 14.
    assert!((big.all_to_all_latency_us(2048, Protocol::Simple) - 36.4).abs() < 1e-9);
}

#[test]
fn reverse_bits_is_nccls() {
    assert_eq!(reverse_bits(1, 5), 16);
    assert_eq!(reverse_bits(3, 5), 24);
    assert_eq!(reverse_bits(0, 5), 0);
    assert_eq!(reverse_bits(5, 0), 0);
}

/// A published NCCL 2.26.2 log of send/recv between two H100 servers, one GPU and one 400 GbE NIC
/// each, prints '2 coll channels, 2 collnet channels, 0 nvls channels, 2 p2p channels, 2 p2p
/// channels per peer' and 'via NET/IB/1/Shared' (shared p2p buffers: no LL): CCI-MOC/roce-testing
/// @9c5b424 RHELAI/3_nccl_tests/logs/sendrecv_roce_1gpu.log.
#[test]
fn one_gpu_per_server_gets_the_channels_nccl_printed() {
    let sys = NcclSystem {
        ranks: 2,
        nvlink: false,
        nvswitch: false,
        ..h100(2)
    };
    let s = P2pSchedule::new(&sys, 2);
    assert_eq!((s.channels, s.channels_per_peer), (2, 2));
    assert_eq!(s.protocol(8, HopKind::Net), Protocol::Simple);
}
