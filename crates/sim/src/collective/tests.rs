//! Collectives on real fabrics: the claims of issue 3 ("Must show").

use super::*;
use crate::collective::bottleneck::bottleneck_folded_at;
use crate::collective::lay_out::lay_out_counted_on;
use crate::collective::phase::StepPhase;
use crate::collective::simulate::simulate_folding_above;
use crate::engine;
use crate::engine::classes;
use crate::net::fabric_net::NetConfig;
use crate::net::fabric_net::HOST_MEMORY_GBS;
use crate::net::rates;
use crate::net::routes::FabricRouting;
use crate::net::routing::{RoutingConfig, RoutingKind};
use crate::net::symmetry;
use crate::net::tree_router::TreeRouter;
use crate::Cancel;
use crate::SimError;
use railyard_catalog::Catalog;
use railyard_fabric::{Fabric, LinkId};
use railyard_spec::{presets, ClusterSpec, Overrides};

fn fabric(preset: &str, o: Overrides) -> Fabric {
    let mut raw = presets::raw(preset).unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

use crate::net::scale_up::simulated_presets;

/// The rack-scale presets left out above are refused by the network of one domain per server,
/// naming why; the others are not. (The xGMI mesh presets build: `xgmi_tests`.)
#[test]
fn scale_up_domains_the_model_lacks_are_refused() {
    let catalog = Catalog::builtin();
    let covered = simulated_presets();
    for (preset, why) in [
        ("gb200-nvl72-superpod", "one NVLink domain of 72 GPUs"),
        ("gb300-nvl72", "one NVLink domain of 72 GPUs"),
    ] {
        assert!(!covered.contains(&preset), "{preset}");
        let servers = 36;
        let f = fabric(
            preset,
            Overrides {
                servers: Some(servers),
                ..Default::default()
            },
        );
        match crate::net::fabric_net::FabricNet::new(&f, &catalog, &NetConfig::default()) {
            Err(crate::SimError::Config { what, message }) => {
                assert_eq!(what, "scale-up domain");
                assert!(message.contains(why), "{preset}: {message}");
            }
            Err(e) => panic!("{preset}: {e}"),
            Ok(_) => panic!("{preset}: simulated"),
        }
    }
    for preset in covered {
        let f = fabric(
            preset,
            Overrides {
                servers: Some(4),
                ..Default::default()
            },
        );
        assert!(
            crate::net::scale_up::scale_up_support(&f, &catalog).is_ok(),
            "{preset}"
        );
    }
}

fn router(kind: RoutingKind) -> TreeRouter {
    TreeRouter::new(kind, RoutingConfig::default())
}

/// Which cases of a grid's costly slice the suite runs: `keep` of them drawn from the SplitMix64
/// stream `state` (a partial Fisher-Yates; successive draws continue the stream, so strata drawn one
/// after another do not pick the same places), or all of them (`keep` = `None`: the exhaustive
/// tests, run with `cargo test --release -p railyard-sim --lib -- --ignored`). The suite stays in
/// minutes on a 2-core machine (issue 34) and still runs a different corner of the slice than the
/// cheap cases.
fn drawn<T>(cases: Vec<T>, keep: Option<usize>, state: &mut u64) -> Vec<T> {
    let Some(keep) = keep else {
        return cases;
    };
    let mut order: Vec<usize> = (0..cases.len()).collect();
    for i in 0..keep.min(order.len()) {
        let span = (order.len() - i) as u128;
        let j = i + ((u128::from(crate::net::routing::mix64(state)) * span) >> 64) as usize;
        order.swap(i, j);
    }
    order.truncate(keep);
    let mut cases: Vec<Option<T>> = cases.into_iter().map(Some).collect();
    order.sort_unstable();
    order.into_iter().filter_map(|i| cases[i].take()).collect()
}

/// The suite's seed for [`drawn`]'s stream (the issue that asked for a suite in minutes).
const SUITE_SEED: u64 = 34;

fn report_on(
    f: &Fabric,
    config: &NetConfig,
    op: Collective,
    algo: AlgoChoice,
    sizes: &[u64],
) -> Sweep {
    let net = FabricNet::new(f, &Catalog::builtin(), config).unwrap();
    let cfg = CollectiveConfig {
        algo,
        ..CollectiveConfig::new(op)
    };
    run(&net, &router(RoutingKind::DModK), &cfg, sizes, &mut |_| {}).unwrap()
}

fn busbw(f: &Fabric, op: Collective, size: u64) -> f64 {
    let r = report_on(f, &NetConfig::default(), op, AlgoChoice::Ring, &[size]);
    r.rows[0].row.busbw_gbs
}

const G: u64 = 1 << 30;

fn design(servers: u32, gpus: u32, nics: u32) -> Overrides {
    Overrides {
        servers: Some(servers),
        gpus_per_server: Some(gpus),
        nics_per_server: Some(nics),
        ..Default::default()
    }
}

/// Issue 3: `sim collective sendrecv --servers 2 --gpus-per-server 1 --nics-per-server 1 --tech
/// ib-edr -b 1G -e 1G` gives about 12 GB/s (11.5-12.5). Model: 12.5e9 x 4096 / 4122 = 12.42 GB/s.
#[test]
fn sendrecv_over_one_edr_nic_is_about_12_gbs() {
    let mut o = design(2, 1, 1);
    o.tech = Some(railyard_catalog::Tech::IbEdr);
    let f = fabric("seed-leaf-spine", o);
    let b = busbw(&f, Collective::SendRecv, G);
    assert!((11.5..12.5).contains(&b), "{b}");
}

/// Inter-server all-reduce busbw grows almost linearly with NICs per server (HDR NICs, so PCIe
/// (Gen4 x16, 28.6 GB/s) and NVLink (240 GB/s) are not the bottleneck): 24.8, 49.6, 99.2, 198 GB/s.
/// A 1:4 NIC:GPU ratio (2 NICs for 8 GPUs) is 4x slower than 1:1.
#[test]
fn allreduce_busbw_scales_with_nics_per_server() {
    let mut got = Vec::new();
    for n in [1, 2, 4, 8] {
        let f = fabric("seed-leaf-spine", design(4, 8, n));
        got.push(busbw(&f, Collective::AllReduce, 8 * G));
    }
    for (i, n) in [1.0, 2.0, 4.0, 8.0].iter().enumerate() {
        assert!(got[i] >= 0.95 * n * got[0], "{got:?}");
        assert!(got[i] <= 1.01 * n * got[0], "{got:?}");
    }
    let ratio = got[3] / got[1];
    assert!((3.8..4.2).contains(&ratio), "1:1 vs 1:4: {ratio}");
}

/// A ring's last GPU in a server sends out of the channel's NIC. Where it is not on that NIC's
/// PCIe switch, NCCL routes it over NVLink to a GPU that is (PXN, src/graph/paths.cc), never
/// through the CPU: 4 H100 on 4 PCIe switches scale with their NICs like 8 on 4 (1 NIC: 49.7 GB/s
/// busbw on the ring, 2: 99.4, 4: 198.7; through the root complex 4 NICs gave 75.6). And NICs no
/// GPU owns (16 NICs on 8 GPUs) are taken by the switch's GPUs in turn, so no GPU's PCIe link
/// receives from three NICs while its neighbour's receives from one: 16 NICs are not slower than 8.
/// Nor does one GPU send out for three channels (16 GPUs and 16 NICs).
#[test]
fn ring_channels_leave_through_nvlink_not_the_cpu_and_spread_over_the_gpus() {
    let mut got = Vec::new();
    for n in [1, 2, 4] {
        let f = fabric("dgx-h100-superpod", design(4, 4, n));
        got.push(busbw(&f, Collective::AllReduce, G));
    }
    for (i, n) in [1.0, 2.0, 4.0].iter().enumerate() {
        assert!(got[i] >= 0.97 * n * got[0], "{got:?}");
    }
    let eight = busbw(
        &fabric("dgx-h100-superpod", design(4, 8, 8)),
        Collective::AllReduce,
        G,
    );
    let sixteen = busbw(
        &fabric("dgx-h100-superpod", design(4, 8, 16)),
        Collective::AllReduce,
        G,
    );
    assert!(
        sixteen >= eight,
        "16 NICs {sixteen} GB/s, 8 NICs {eight} GB/s"
    );
    // 16 GPUs and 16 NICs, four of each per PCIe switch: each GPU of a switch leaves with one
    // channel. When every channel left from the switch's first GPU, three shared its PCIe link
    // (57.2 / 3 = 19.1 GB/s per channel, all-gather 303.7 GB/s busbw against 368.7 on 8 NICs).
    let on = |nics| {
        busbw(
            &fabric("dgx-h100-superpod", design(4, 16, nics)),
            Collective::AllGather,
            16 * G,
        )
    };
    let (eight, sixteen) = (on(8), on(16));
    assert!(
        sixteen >= eight,
        "16 GPUs: 16 NICs {sixteen} GB/s, 8 NICs {eight} GB/s"
    );
}

/// Single server, ring: NCCL's search fits 6 channels of 60 GB/s in an H100's NVLink (18 x 20.6 =
/// 370.8 GB/s) and doubles them to 12 x 30: 360 GB/s (published without NVLS: 368.76, nccl-tests
/// issue 309); on A100 (12 x 20 = 240 GB/s) 12 x 20 = 240 (published: 231.58 and 235.26).
/// Left to NCCL, H100 all-reduce runs NVLS: 8 channels x 40 GB/s x 0.85 x 7/8 x 2 = 476 GB/s
/// (published: 478.87, Azure ND H100 v5; 473.6, nccl-tests issue 290).
#[test]
fn single_server_nvlink_allreduce() {
    let h100 = fabric("dgx-h100-superpod", design(1, 8, 8));
    let ring = busbw(&h100, Collective::AllReduce, 8 * G);
    assert!((355.0..361.0).contains(&ring), "{ring}");
    let auto = report_on(
        &h100,
        &NetConfig::default(),
        Collective::AllReduce,
        AlgoChoice::Auto,
        &[8 * G],
    );
    let r = &auto.rows[0];
    assert_eq!(r.algorithm, "nvls");
    assert!(
        (470.0..476.0).contains(&r.row.busbw_gbs),
        "{}",
        r.row.busbw_gbs
    );
    let a100 = busbw(
        &fabric("seed-leaf-spine", design(1, 8, 8)),
        Collective::AllReduce,
        8 * G,
    );
    assert!((235.0..240.5).contains(&a100), "{a100}");
}

/// Two GPUs sharing one NIC and one PCIe switch each get half of what one gets alone.
#[test]
fn two_gpus_sharing_a_nic_get_half_each() {
    let mut o = design(2, 2, 1);
    o.tech = Some(railyard_catalog::Tech::IbHdr);
    let f = fabric("seed-leaf-spine", o);
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let r = router(RoutingKind::DModK);
    let (_, alone) = simulate_transfers(
        &net,
        &r,
        &[(Gpu::new(0, 0), Gpu::new(1, 0))],
        Relay::Direct,
        1 << 20,
    )
    .unwrap();
    let (_, both) = simulate_transfers(
        &net,
        &r,
        &[
            (Gpu::new(0, 0), Gpu::new(1, 0)),
            (Gpu::new(0, 1), Gpu::new(1, 1)),
        ],
        Relay::Direct,
        1 << 20,
    )
    .unwrap();
    for x in &both {
        assert!((x / alone[0] - 0.5).abs() < 0.01, "{alone:?} {both:?}");
    }
}

/// GPUDirect RDMA off stages every byte through host memory: on a DGX H100 the PCIe uplink to the
/// root complex (two GPUs and two NICs share it) becomes the bottleneck; with little host memory
/// bandwidth, host memory does.
#[test]
fn gpudirect_off_is_slower_through_the_root_complex_or_host_memory() {
    let run_with = |gdr: bool, mem: f64| {
        let mut o = design(2, 8, 8);
        o.gpudirect = Some(gdr);
        let f = fabric("dgx-h100-superpod", o);
        let config = NetConfig {
            host_memory_gbs: mem,
            ..NetConfig::default()
        };
        let r = report_on(
            &f,
            &config,
            Collective::AllReduce,
            AlgoChoice::Ring,
            &[8 * G],
        );
        let b = r.models[0].bottleneck.clone().unwrap();
        (r.rows[0].row.busbw_gbs, b.resource)
    };
    let (on, on_at) = run_with(true, HOST_MEMORY_GBS);
    let (off, off_at) = run_with(false, HOST_MEMORY_GBS);
    assert!(on_at.contains("server-leaf"), "{on_at}");
    assert!(off < 0.5 * on, "{off} vs {on}");
    assert!(off_at.contains("pcie-uplink"), "{off_at}");
    let (slow, slow_at) = run_with(false, 100.0);
    assert!(slow < off, "{slow} vs {off}");
    assert!(slow_at.contains("host memory"), "{slow_at}");
}

/// A random permutation between 200 single-GPU servers on a two-tier HDR fat-tree (10 leaves, 20
/// up-links each): per-flow ECMP hashes several flows onto one up-link (the slowest flow takes
/// several times the ideal), adaptive routing spreads every flow and finishes in the ideal time.
#[test]
fn ecmp_collides_on_a_permutation_and_adaptive_does_not() {
    let f = fabric("seed-leaf-spine", design(200, 1, 1));
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let pairs: Vec<(Gpu, Gpu)> = crate::traffic::permutation(200, 1)
        .into_iter()
        .map(|(a, b)| (Gpu::new(a as usize, 0), Gpu::new(b as usize, 0)))
        .collect();
    let bytes = 1 << 20;
    let ideal = bytes as f64 / rates::INFINIBAND.payload_rate(200.0);
    let slowest = |k| {
        let (t, _) = simulate_transfers(&net, &router(k), &pairs, Relay::Direct, bytes).unwrap();
        t.as_secs_f64() / ideal
    };
    let ecmp = slowest(RoutingKind::Ecmp);
    let adaptive = slowest(RoutingKind::Adaptive);
    assert!(ecmp >= 2.5, "ECMP slowest {ecmp} x ideal");
    assert!(adaptive <= 1.05, "adaptive slowest {adaptive} x ideal");
    // Several queue pairs per connection, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION),
    // spread a connection and soften the collisions (Meta, SIGCOMM 2024).
    let qps = TreeRouter::new(
        RoutingKind::Ecmp,
        RoutingConfig {
            seed: 0,
            qps_per_connection: 8,
        },
    );
    let (t, _) = simulate_transfers(&net, &qps, &pairs, Relay::Direct, bytes).unwrap();
    let eight = t.as_secs_f64() / ideal;
    assert!(eight < ecmp && eight > adaptive, "8 QPs: {eight} x ideal");
}

/// Ring all-reduce on a rail-optimized fabric is at least as fast as on a 2:1 oversubscribed plain
/// fat-tree (64 DGX H100). The ring's hops between servers mostly stay under one leaf on both, so the
/// two tie at the NICs' rate; all-to-all, which crosses the spines, shows the oversubscription: about
/// half the busbw on the 2:1 fat-tree (32 servers).
#[test]
fn rail_optimized_beats_an_oversubscribed_fat_tree() {
    let fat_tree = |servers| {
        let mut o = design(servers, 8, 8);
        o.topology = Some(railyard_spec::Topology::FatTree);
        o.oversubscription = Some(2.0);
        fabric("dgx-h100-superpod", o)
    };
    let rail = busbw(
        &fabric("dgx-h100-superpod", design(64, 8, 8)),
        Collective::AllReduce,
        8 * G,
    );
    let fat = busbw(&fat_tree(64), Collective::AllReduce, 8 * G);
    assert!(rail >= fat, "rail {rail} fat-tree 2:1 {fat}");
    let a2a = |f: &Fabric| {
        let r = report_on(
            f,
            &NetConfig::default(),
            Collective::AllToAll,
            AlgoChoice::Auto,
            &[G],
        );
        r.rows[0].row.busbw_gbs
    };
    let rail = a2a(&fabric("dgx-h100-superpod", design(32, 8, 8)));
    let fat = a2a(&fat_tree(32));
    assert!(
        rail >= 1.5 * fat,
        "all-to-all: rail {rail} fat-tree 2:1 {fat}"
    );
}

/// `auto` runs what NCCL's model picks: where that is ring or tree it is never slower than ring or
/// tree alone; it picks LL for tiny messages and Simple ring for the largest.
#[test]
fn auto_picks_the_fastest_per_size() {
    let f = fabric("dgx-h100-superpod", design(4, 8, 8));
    let sizes = crate::nccl::sweep(8, 8 * G, 8).unwrap();
    let t = |algo| {
        report_on(
            &f,
            &NetConfig::default(),
            Collective::AllReduce,
            algo,
            &sizes,
        )
        .rows
    };
    let (auto, ring, tree) = (
        t(AlgoChoice::Auto),
        t(AlgoChoice::Ring),
        t(AlgoChoice::Tree),
    );
    // NCCL picks on its own model (`Tuning::select`); where it picks ring or tree, that is the
    // faster of the two as realized. Where it picks NVLSTree, the chunk pipeline NCCL's model
    // leaves out can make a forced ring faster at mid sizes, as published: nccl-tests issue 309's
    // gj-aion pair ran 64 MiB in 469.6 us by default (NVLSTree) and 432.6 us with NCCL_ALGO=Ring
    // (docs/validation/mid-size-survey/nccltests309_all.txt, runs D and G).
    for i in 0..sizes.len() {
        let forced = match auto[i].algorithm {
            "ring" => ring[i].row.time_us,
            "tree" => tree[i].row.time_us,
            _ => continue,
        };
        assert_eq!(auto[i].row.time_us, forced);
        assert!(auto[i].row.time_us <= ring[i].row.time_us.min(tree[i].row.time_us) + 1e-9);
    }
    assert_eq!(auto[0].protocol, Protocol::Ll);
    let last = auto.last().unwrap();
    assert_eq!((last.algorithm, last.protocol), ("ring", Protocol::Simple));
}

/// On a rail-only fabric (no spine) cross-rail all-to-all has no route without PXN; with PXN it
/// relays over NVLink to the destination's rail and runs at the NICs' speed. Staged (store-and-
/// forward, the Rail-only paper's model) adds exactly the NVLink phase: a visible, bounded penalty.
#[test]
fn alltoall_needs_pxn_on_rail_only() {
    let f = fabric("rail-only-h100", design(4, 8, 8));
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let go = |relay| {
        let cfg = CollectiveConfig {
            relay,
            ..CollectiveConfig::new(Collective::AllToAll)
        };
        run(&net, &router(RoutingKind::DModK), &cfg, &[G], &mut |_| {})
    };
    let without = go(Relay::Direct);
    assert!(
        matches!(without, Err(CollectiveError::Routes { .. })),
        "{without:?}"
    );
    let with = go(Relay::Pxn).unwrap();
    // Each GPU's 3/4 of the buffer that leaves the server crosses its rail's NDR NIC (49.7 GB/s):
    // algbw = 49.7 x 4/3, busbw = algbw x 31/32 = 64 GB/s (nccl-tests issue 130: N/(N-1) x NIC).
    let b = with.rows[0].row.busbw_gbs;
    assert!((62.0..66.0).contains(&b), "{b}");

    // Staged: first every GPU sends each of its 7 local peers that peer's own 1/32 plus the 3/32
    // bound for the peer's rail on the 3 other servers: 7 x 4/32 = 7/8 of the buffer over its
    // NVLink (18 x 20.6 GB/s = 370.8 GB/s, NCCL topo.h SM90), then the rail phase as above.
    // `auto` relays as NCCL's proxy does (pipelined); without GPUDirect RDMA NCCL has no relay,
    // and railyard stages over the server (the Rail-only paper's model), read off the links, not
    // the name: a discovered rail-only fabric is still one.
    assert_eq!(Relay::auto(&f, &Catalog::builtin()), Relay::Pxn);
    let mut discovered = f.clone();
    discovered.meta.topology = "discovered".into();
    discovered.meta.gpudirect = false;
    assert_eq!(
        Relay::auto(&discovered, &Catalog::builtin()),
        Relay::PxnStaged
    );
    let staged = go(Relay::PxnStaged).unwrap();
    let nvlink_us = 7.0 / 8.0 * G as f64 / 370.8e9 * 1e6;
    let extra = staged.rows[0].row.time_us - with.rows[0].row.time_us;
    assert!(
        (extra - nvlink_us).abs() < 0.01 * nvlink_us,
        "staged adds {extra} us, expected {nvlink_us}"
    );
    // Bounded: (K-1)/K x NIC / NVLink over the rail phase's (N-K)/N, here 7/6 x 49.7 / 370.8.
    let penalty = staged.rows[0].row.time_us / with.rows[0].row.time_us - 1.0;
    assert!((0.14..0.17).contains(&penalty), "{penalty}");
    assert_eq!(staged.models[0].algorithm, "alltoall-pxn-staged");
}

/// Failed leaf-spine cables: D-mod-K falls back to the next up-port, the collective still runs, and
/// a server whose only NIC cable is down cannot take part.
#[test]
fn failed_links_are_routed_around() {
    let f = fabric("seed-leaf-spine", design(200, 1, 1));
    let failed = crate::net::failures::random_network_links(&f, 10, 7);
    assert_eq!(
        failed,
        crate::net::failures::random_network_links(&f, 10, 7)
    );
    let config = NetConfig {
        failed: failed.clone(),
        ..NetConfig::default()
    };
    let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
    let only_spine: Vec<_> = failed
        .iter()
        .filter(|l| f.link(**l).kind != railyard_fabric::LinkKind::LeafSpine)
        .collect();
    let cfg = CollectiveConfig {
        algo: AlgoChoice::Ring,
        ..CollectiveConfig::new(Collective::AllReduce)
    };
    let out = run(&net, &router(RoutingKind::DModK), &cfg, &[G], &mut |_| {});
    if only_spine.is_empty() {
        assert!(out.is_ok());
    } else {
        // A server lost its cable: the report names the connection.
        assert!(matches!(out, Err(CollectiveError::Routes { .. })));
    }
    // Only leaf-spine cables down: every route avoids them.
    let spine_links: Vec<_> = f
        .network_links()
        .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::LeafSpine)
        .map(|(id, _)| id)
        .take(15)
        .collect();
    let config = NetConfig {
        failed: spine_links.clone(),
        ..NetConfig::default()
    };
    let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
    let r = router(RoutingKind::DModK);
    for a in 0..200 {
        for b in (0..200).step_by(7) {
            if a == b {
                continue;
            }
            let (sp, dp) = (
                net.nic_port(a, 0, 0).unwrap().1,
                net.nic_port(b, 0, 0).unwrap().1,
            );
            let mut out = Vec::new();
            r.route(&net, sp, dp, 0, &mut out).unwrap();
            assert!(out.iter().flatten().all(|l| !spine_links.contains(l)));
        }
    }
    let report = crate::net::failures::failure_report(&f, &spine_links);
    let ls = report
        .tiers
        .iter()
        .find(|t| t.0 == railyard_fabric::LinkKind::LeafSpine)
        .unwrap();
    assert_eq!((ls.1, ls.3), (15, 15.0 * 200.0));
    // 200 leaf-spine links of 200 Gb/s: bisection 20,000 Gb/s, 15 down -> 18,500.
    assert_eq!(report.bisection_gbps, (20_000.0, 18_500.0));
    assert!(run(&net, &r, &cfg, &[G], &mut |_| {}).is_ok());
}

/// One of two parallel links from a spine to a leaf down: the sub-flows that would descend it go
/// over other spines, so the survivor carries no more than any link did intact (it carried both
/// shares, and an all-to-all of 24 DGX A100 fell from 25.77 to 14.37 GB/s busbw); and that
/// all-to-all keeps at least the share of uplinks the leaf keeps, 19 of 20 (25.06 GB/s against
/// 25.39 intact on 40 servers). Two whole units of
/// 20 servers: on a partly filled unit D-mod-K itself (as OpenSM's ftree, `FabricNet::new`)
/// crowds the short leaves' destinations onto a few up-links, and the intact all-to-all is slower.
#[test]
fn a_parallel_link_down_does_not_double_its_survivor() {
    const SERVERS: usize = 40;
    let f = fabric("dgx-a100-superpod", design(SERVERS as u32, 8, 8));
    let (dead, _) = f
        .network_links()
        .find(|(_, l)| l.kind == railyard_fabric::LinkKind::LeafSpine)
        .unwrap();
    let (leaf, spine) = (f.port(f.link(dead).a).node, f.port(f.link(dead).b).node);
    let pair: Vec<LinkId> = f
        .network_links()
        .filter(|(_, l)| f.port(l.a).node == leaf && f.port(l.b).node == spine)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(
        pair.len(),
        2,
        "two parallel links from the leaf to the spine"
    );
    let most_on_pair = |failed: Vec<LinkId>| {
        let config = NetConfig {
            failed,
            ..NetConfig::default()
        };
        let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
        let r = router(RoutingKind::Adaptive);
        let mut on: std::collections::HashMap<LinkId, usize> = Default::default();
        for a in 0..SERVERS {
            for b in 0..SERVERS {
                if a == b {
                    continue;
                }
                let (sp, dp) = (
                    net.nic_port(a, 0, 0).unwrap().1,
                    net.nic_port(b, 0, 0).unwrap().1,
                );
                let mut out = Vec::new();
                r.route(&net, sp, dp, 0, &mut out).unwrap();
                // Down the pair only: towards the leaf.
                let to_leaf = f.port(dp).link().is_some_and(|l| {
                    let k = f.link(l);
                    f.port(k.a).node == leaf || f.port(k.b).node == leaf
                });
                for l in out.iter().flatten().filter(|_| to_leaf) {
                    *on.entry(*l).or_default() += 1;
                }
            }
        }
        pair.iter()
            .map(|l| on.get(l).copied().unwrap_or(0))
            .max()
            .unwrap()
    };
    let intact = most_on_pair(Vec::new());
    let degraded = most_on_pair(vec![dead]);
    assert!(intact > 0);
    assert!(
        degraded <= intact,
        "{degraded} sub-flows on the survivor, {intact} on each intact"
    );
    let config = NetConfig {
        failed: vec![dead],
        ..NetConfig::default()
    };
    let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
    let cfg = CollectiveConfig {
        relay: Relay::Direct,
        ..CollectiveConfig::new(Collective::AllToAll)
    };
    let busbw = |net: &FabricNet<'_>| {
        run(net, &router(RoutingKind::DModK), &cfg, &[G], &mut |_| {})
            .unwrap()
            .rows[0]
            .row
            .busbw_gbs
    };
    let whole = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let (cut, full) = (busbw(&net), busbw(&whole));
    assert!(
        cut >= 19.0 / 20.0 * full,
        "{cut} GB/s with the link down, {full} intact"
    );
}

/// The busbw table of a 2 x DGX H100 all-reduce sweep, pinned.
#[test]
fn busbw_table_snapshot() {
    let f = fabric("dgx-h100-superpod", design(2, 8, 8));
    let sizes = crate::nccl::sweep(8, 8 * G, 16).unwrap();
    let r = report_on(
        &f,
        &NetConfig::default(),
        Collective::AllReduce,
        AlgoChoice::Auto,
        &sizes,
    );
    let rows: Vec<_> = r.rows.iter().map(|x| x.row.clone()).collect();
    let got = crate::nccl::table(Collective::AllReduce, &rows);
    assert_eq!(got, SNAPSHOT, "got:\n{got}");
}

/// Small sizes are NCCL's latency (tree LL: 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us, plus 1.06 us
/// of simulated path); the largest run NVLSTree, which NCCL's model puts at 8 channels x min(NVLS
/// 71.4, 2 x 48, 57.7) = 461.6 GB/s on two nodes (published: 469.21, nccl-tests issue 309). At
/// 512 KiB NCCL runs tree LL128, whose latency across servers is NCCL's times the measured start-up
/// (`LL128_NET_STARTUP_FACTOR`, 1.19). NVLSTree runs as a pipeline of chunk steps
/// (`tuning::chunking`): 64 KiB chunks at 8 MiB and 128 KiB from 64 MiB, each step paying
/// `NVLS_CHUNK_STEP_US` and the pipeline `NVLS_PIPELINE_FILL_STEPS` of fill (452.8 GB/s at 2 GiB).
const SNAPSHOT: &str = "\
#       size         count      type   redop    root     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    26.26    0.00    0.00     N/A
         128            32     float     sum      -1    26.27    0.00    0.01     N/A
        2048           512     float     sum      -1    26.39    0.08    0.15     N/A
       32768          8192     float     sum      -1    28.66    1.14    2.14     N/A
      524288        131072     float     sum      -1    64.73    8.10   15.19     N/A
     8388608       2097152     float     sum      -1    155.0   54.10  101.45     N/A
   134217728      33554432     float     sum      -1    715.3  187.65  351.84     N/A
  2147483648     536870912     float     sum      -1   8893.1  241.48  452.77     N/A
";

/// Regression: on two scalable units (each leaf has four parallel links to each spine) the way down
/// took the parallel link by destination index, which D-mod-K had already fixed on the way up, so
/// all of a spine's flows to one leaf shared one link (all-to-all at a quarter of the NIC rate).
/// The way down now keeps the parallel index of the way up: all-to-all without PXN crosses the
/// spines at the NICs' rate with D-mod-K and adaptive routing.
#[test]
fn alltoall_across_spines_is_not_funnelled_into_one_parallel_link() {
    let f = fabric("dgx-h100-superpod", design(64, 4, 4));
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let cfg = CollectiveConfig::new(Collective::AllToAll);
    // 64 servers of 4 GPUs and 4 NICs (two whole SUs, 4 spines, 8 parallel links per leaf and
    // spine), 256 ranks: each GPU sends 252/256 of its buffer off the server through its 400G
    // NIC: busbw = 49.68 x 256/252 x 255/256 = 50.3 GB/s. (Whole units: on a partly filled one
    // D-mod-K, as OpenSM's ftree, crowds the short leaves' destinations onto a few up-links.)
    let want = rates::INFINIBAND.payload_rate(400.0) / 1e9 * 255.0 / 252.0;
    for kind in [RoutingKind::DModK, RoutingKind::Adaptive] {
        let r = run(&net, &router(kind), &cfg, &[G], &mut |_| {}).unwrap();
        let b = r.rows[0].row.busbw_gbs;
        assert!(b > 0.98 * want && b <= want, "{kind:?}: {b} vs {want}");
    }
}

/// Every built-in design relays by default as NCCL's proxy does (`nccl_relays`: NVLink, the NICs
/// on the GPUs' PCIe switches, GPUDirect RDMA). Without GPUDirect RDMA NCCL relays nothing:
/// every design but rail-only joins its rails in the network (two-switch through its
/// inter-switch cables), so all-to-all goes straight through it; rail-only stages over the server.
#[test]
fn pxn_by_default_and_without_gpudirect_only_rail_only_relays() {
    for name in simulated_presets() {
        let mut f = fabric(name, design(4, 8, 8));
        assert_eq!(Relay::auto(&f, &Catalog::builtin()), Relay::Pxn, "{name}");
        f.meta.gpudirect = false;
        let want = if name == "rail-only-h100" {
            Relay::PxnStaged
        } else {
            Relay::Direct
        };
        assert_eq!(Relay::auto(&f, &Catalog::builtin()), want, "{name}");
    }
}

/// Calibration: times generated with a known NIC rate and latency (the way `sim collective
/// --calibration` prints them) are fitted back to that rate and latency within 1%.
#[test]
fn calibration_recovers_a_known_nic_rate_and_latency() {
    use crate::net::calibration::{fit, Calibration};
    let f = fabric("dgx-h100-superpod", design(2, 8, 8));
    let sizes = crate::nccl::sweep(8, 8 * G, 8).unwrap();
    let times = |c: &Calibration| -> Vec<f64> {
        let config = NetConfig {
            calibration: *c,
            ..NetConfig::default()
        };
        let mut all = Vec::new();
        for op in [Collective::AllReduce, Collective::AllGather] {
            let r = report_on(&f, &config, op, AlgoChoice::Auto, &sizes);
            // As `calibrate` reads a log: rows of 0 bytes (NCCL discards them) are left out.
            all.extend(
                r.rows
                    .iter()
                    .filter(|x| x.row.size_bytes > 0)
                    .map(|x| x.row.time_us),
            );
        }
        all
    };
    let truth = Calibration {
        nic_gbs: Some(31.5),
        latency_us: 6.25,
    };
    let measured = times(&truth);
    // Searched up to the NIC's line rate after headers, as `calibrate` searches (a rate above it
    // is refused by the network).
    let line = crate::net::capability::nic_payload_gbs(&f).unwrap();
    let got = fit(&measured, line, &mut |c| Ok::<_, ()>(times(c))).unwrap();
    let r = got
        .calibration
        .nic_gbs
        .expect("the NIC rate limits large sizes");
    assert!((r / 31.5 - 1.0).abs() < 0.01, "{got:?}");
    assert!(
        (got.calibration.latency_us / 6.25 - 1.0).abs() < 0.01,
        "{got:?}"
    );
    assert!(
        got.residual_after.worst_abs < 1e-3,
        "{:?}",
        got.residual_after
    );
    assert!(got.residual_before.worst_abs > 0.1);
}

/// An all-to-all past the flow limit that cannot be laid out by symmetry (ECMP hashes every
/// connection its own way) is timed by counting its flows per link instead of refused: the same
/// flows as by symmetry, and ECMP's collisions make it slower than D-mod-K. A builder that was not
/// told to count still refuses it as its own error, before any flow is laid out.
#[test]
fn alltoall_past_the_flow_limit_is_counted() {
    let f = fabric("dgx-h100-superpod", design(257, 8, 8));
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let cfg = CollectiveConfig::new(Collective::AllToAll);
    let by_symmetry = run(&net, &router(RoutingKind::DModK), &cfg, &[G], &mut |_| {}).unwrap();
    assert_eq!(by_symmetry.models[0].flows, 2056 * 2055);
    assert_eq!(by_symmetry.models[0].counted, None);
    let mut said = Vec::new();
    let counted = run(&net, &router(RoutingKind::Ecmp), &cfg, &[G], &mut |m| {
        said.push(m.to_string())
    })
    .unwrap();
    let m = &counted.models[0];
    assert_eq!(m.flows, 2056 * 2055);
    assert_eq!(m.counted, Some(Counting { exact: true }));
    assert!(m.bottleneck.as_ref().is_some_and(|b| b.flows > 2000));
    assert!(
        said.iter()
            .any(|m| m
                .contains("alltoall: counting flows per link: 4225080 of 4225080 flows (100%)")),
        "{said:?}"
    );
    let (ecmp, dmodk) = (
        counted.rows[0].row.busbw_gbs,
        by_symmetry.rows[0].row.busbw_gbs,
    );
    assert!(ecmp < dmodk && ecmp > 0.8 * dmodk, "{ecmp} vs {dmodk}");

    let shape = shape_of(&net).unwrap();
    let r = router(RoutingKind::Ecmp);
    let mut b = StepBuilder::new(&net, &r, shape).unwrap();
    let e = AllToAll {
        relay: Relay::Direct,
    }
    .step(&mut b)
    .unwrap_err();
    assert_eq!(
        e,
        CollectiveError::TooManyFlows {
            ranks: 2056,
            flows: 2056 * 2055
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "2056 ranks make 4225080 flows; the limit is {MAX_ALLTOALL_FLOWS} (about 2,048 GPUs)"
        )
    );
}

/// Issue 14: a step timed by counting flows per link ([`StepBuilder::count_on`]) against the same
/// step laid out flow by flow on the per-flow engine, phase by phase: (largest relative
/// difference of the makespans, whether every phase's flows were equal). `None` when a route is
/// missing.
fn counted_vs_per_flow(
    net: &FabricNet<'_>,
    kind: RoutingKind,
    relay: Relay,
) -> Option<(f64, bool, usize)> {
    let r = router(kind);
    let shape = shape_of(net).unwrap();
    let a = AllToAll { relay };
    let mut full = StepBuilder::new(net, &r, shape).unwrap();
    a.step(&mut full).unwrap();
    if full.failure_count > 0 {
        return None;
    }
    // As `simulate_until` lays it out: the sources a few at a time, on one thread and on three
    // (chunks taken in whatever order the threads get to them), with the same counts and bounds.
    let mut counted = StepBuilder::new(net, &r, shape).unwrap();
    lay_out_counted_on(&mut counted, &a, &[Comm::whole(net)], &mut |_| {}, 1, true).unwrap();
    let mut threaded = StepBuilder::new(net, &r, shape).unwrap();
    lay_out_counted_on(&mut threaded, &a, &[Comm::whole(net)], &mut |_| {}, 3, true).unwrap();
    assert_eq!(threaded.phases.len(), counted.phases.len());
    for (x, y) in threaded.phases.iter().zip(&counted.phases) {
        let (cx, cy) = (x.counted.as_ref().unwrap(), y.counted.as_ref().unwrap());
        assert_eq!(cx.load, cy.load);
        assert_eq!(
            (
                cx.min_bytes,
                cx.max_bytes,
                cx.bound,
                x.represented,
                x.latency
            ),
            (
                cy.min_bytes,
                cy.max_bytes,
                cy.bound,
                y.represented,
                y.latency
            )
        );
    }
    assert_eq!(counted.flows(), full.flows());
    assert_eq!(counted.phases.len(), full.phases.len());
    let (mut worst, mut exact) = (0.0f64, true);
    for (pf, pc) in full.phases.iter().zip(&counted.phases) {
        if pf.w.flows() == 0 {
            assert_eq!(pc.represented, 0);
            continue;
        }
        let c = pc.counted.as_ref().unwrap();
        let (t, _, n) = c.makespan(net).unwrap();
        let want = pf.makespan();
        let rel = (t.ps() as f64 - want.ps() as f64) / want.ps() as f64;
        assert_eq!(pc.latency, pf.latency);
        if c.min_bytes == c.max_bytes {
            worst = worst.max(rel.abs());
        } else {
            // Unequal flows (adaptive routing's sub-flows): an upper bound.
            exact = false;
            assert!(rel >= -1e-4, "{rel:e}");
            worst = worst.max(rel);
        }
        assert!(n > 0);
    }
    Some((worst, exact, full.flows()))
}

/// Every preset, all-to-all direct and with PXN (pipelined and staged), routed where the fabric has
/// no symmetry to lay out by (ECMP; D-mod-K and adaptive with cables down): timed by counting,
/// the step's makespan equals the per-flow engine's within 1e-4 (the contract is 0.1%) wherever
/// every flow moves the same bytes (ECMP, D-mod-K: 0 here). Adaptive routing's uneven sub-flows
/// give an upper bound (never below the per-flow makespan): within 20% direct and staged (at most
/// 17% here, on seed-edr-fat-tree and h100-nic-1to4; 4.3% before a cable down spread its share
/// over the live links, which made the per-flow makespan shorter), but loose with pipelined PXN, where one server's
/// NVLink carries thousands of slow relayed sub-flows beside fast local transfers (the bound
/// takes the local transfer at the NVLink's share per flow: up to 8.7x the makespan here).
///
/// The suite runs every ECMP and D-mod-K case and 2 of the adaptive ones per relay, drawn with
/// [`SUITE_SEED`] (adaptive routing's sub-flows make these the costly ones: 107 of the grid's 110 s
/// on the debug build); the exhaustive test runs all 26.
#[test]
fn counted_alltoall_gives_the_per_flow_makespan_on_every_preset() {
    counted_alltoall_on_every_preset(Some(2));
}

/// [`counted_alltoall_gives_the_per_flow_makespan_on_every_preset`] on every adaptive case.
#[test]
#[ignore = "exhaustive grid, about 2 minutes: cargo test --release -p railyard-sim --lib -- --ignored"]
fn counted_alltoall_gives_the_per_flow_makespan_on_every_preset_exhaustive() {
    counted_alltoall_on_every_preset(None);
}

fn counted_alltoall_on_every_preset(adaptive_per_relay: Option<usize>) {
    let relays = [Relay::Direct, Relay::Pxn, Relay::PxnStaged];
    let mut cases = Vec::new();
    let mut costly = Vec::new();
    for preset in simulated_presets() {
        for kind in [RoutingKind::Ecmp, RoutingKind::DModK, RoutingKind::Adaptive] {
            for relay in relays {
                // Rail-only routes nothing between rails without a relay.
                if preset.starts_with("rail-only") && relay == Relay::Direct {
                    continue;
                }
                match kind {
                    RoutingKind::Adaptive => costly.push((preset, kind, relay)),
                    _ => cases.push((preset, kind, relay)),
                }
            }
        }
    }
    let mut state = SUITE_SEED;
    for relay in relays {
        let of_relay = costly.iter().filter(|c| c.2 == relay).copied().collect();
        cases.extend(drawn(of_relay, adaptive_per_relay, &mut state));
    }
    let mut seen = std::collections::BTreeSet::new();
    for preset in simulated_presets() {
        let servers = if preset == "seed-two-switch" { 8 } else { 12 };
        let f = fabric(
            preset,
            Overrides {
                servers: Some(servers),
                ..Default::default()
            },
        );
        let spine = f
            .network_links()
            .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::LeafSpine)
            .map(|(id, _)| id)
            .take(3)
            .collect::<Vec<_>>();
        for &(_, kind, relay) in cases.iter().filter(|c| c.0 == preset) {
            // D-mod-K and adaptive with three cables down: nothing to lay out by symmetry.
            let failed = if kind == RoutingKind::Ecmp {
                Vec::new()
            } else if spine.is_empty() {
                continue;
            } else {
                spine.clone()
            };
            let config = NetConfig {
                failed,
                ..NetConfig::default()
            };
            let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
            let what = format!("{preset} x{servers} {kind:?} {relay:?}");
            let (worst, exact, flows) = counted_vs_per_flow(&net, kind, relay)
                .unwrap_or_else(|| panic!("{what}: no route"));
            eprintln!("{what}: {flows} flows, exact {exact}, {worst:.1e}");
            if exact {
                assert!(worst <= 1e-4, "{what}: {worst:e}");
            } else if relay != Relay::Pxn {
                assert!(worst <= 0.2, "{what}: upper bound {worst:e}");
            } else {
                assert!(worst <= 10.0, "{what}: upper bound {worst:e}");
            }
            seen.insert((format!("{kind:?}"), format!("{relay:?}"), exact));
        }
    }
    // The draw leaves every routing with every relay, and both kinds of answer checked.
    for kind in ["Ecmp", "DModK", "Adaptive"] {
        for relay in relays {
            assert!(
                seen.iter()
                    .any(|(k, r, _)| k == kind && *r == format!("{relay:?}")),
                "{kind} {relay:?} not run: {seen:?}"
            );
        }
    }
    assert!(seen.iter().any(|s| s.2) && seen.iter().any(|s| !s.2));
}

/// Issue 14: simulating a step by flow classes (`crate::engine::classes`) gives every flow the finish time
/// and max-min rate the per-flow engine gives it. Returns (flows, classes) summed over phases, and
/// the largest relative difference seen.
fn by_class_vs_per_flow(
    f: &Fabric,
    kind: RoutingKind,
    algo: &dyn CollectiveAlgorithm,
) -> Option<(usize, usize, f64)> {
    let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let r = router(kind);
    let mut b = StepBuilder::new(&net, &r, shape_of(&net).unwrap()).unwrap();
    algo.step(&mut b).unwrap();
    if b.failure_count > 0 {
        // Rail-only without PXN: no route between rails.
        return None;
    }
    let (mut flows, mut classes, mut worst) = (0, 0, 0.0f64);
    for ph in b.phases.iter().filter(|p| p.w.flows() > 0) {
        let q = classes::quotient(&ph.w, Cancel::NEVER)
            .unwrap()
            .expect("an equitable partition");
        flows += ph.w.flows();
        classes += q.classes();
        let per_flow = engine::simulate(&ph.w).flows;
        let by_class = q.expand_times(&engine::simulate(&q.workload).flows);
        for (a, b) in per_flow.iter().zip(&by_class) {
            assert_eq!(a.start, b.start);
            let (x, y) = (a.finish.ps() as f64, b.finish.ps() as f64);
            worst = worst.max((x - y).abs() / x);
        }
        let per_flow = engine::max_min_rates(&ph.w);
        let by_class = q.expand(&engine::max_min_rates(&q.workload));
        for (a, b) in per_flow.iter().zip(&by_class) {
            if a.is_finite() {
                worst = worst.max((a - b).abs() / a);
            } else {
                assert_eq!(a, b);
            }
        }
    }
    Some((flows, classes, worst))
}

/// Every preset (rail-optimized, rail-only, fat-tree, two-switch; InfiniBand and RoCE), D-mod-K
/// and adaptive routing, all-to-all direct and with PXN (pipelined and staged), and the ring and
/// double-binary-tree steps of all-reduce, on 4 and 32 servers: by class equals per flow within
/// 1e-9 (the contract is 0.1%), and symmetric fabrics do reduce.
///
/// The suite runs every case on 4 servers, every D-mod-K case and adaptive ring and tree on 32, and
/// of the 26 adaptive all-to-alls on 32 (rail-only routes none without a relay) 2 per relay drawn
/// with [`SUITE_SEED`] (those take 245 of the grid's 252 s on the debug build); the exhaustive
/// test runs them all.
#[test]
fn flow_classes_give_the_per_flow_times_on_every_preset() {
    flow_classes_on_every_preset(Some(2));
}

/// [`flow_classes_give_the_per_flow_times_on_every_preset`] on every adaptive all-to-all.
#[test]
#[ignore = "exhaustive grid, about 4 minutes: cargo test --release -p railyard-sim --lib -- --ignored"]
fn flow_classes_give_the_per_flow_times_on_every_preset_exhaustive() {
    flow_classes_on_every_preset(None);
}

fn flow_classes_on_every_preset(adaptive_alltoall_per_relay: Option<usize>) {
    let algos: Vec<Box<dyn CollectiveAlgorithm>> = vec![
        Box::new(AllToAll {
            relay: Relay::Direct,
        }),
        Box::new(AllToAll { relay: Relay::Pxn }),
        Box::new(AllToAll {
            relay: Relay::PxnStaged,
        }),
        Box::new(Ring {
            op: Collective::AllReduce,
        }),
        Box::new(DoubleBinaryTree),
    ];
    // Two switches hold at most 9 servers of 8 NICs.
    let big = |preset: &str| if preset == "seed-two-switch" { 8 } else { 32 };
    let mut cases = Vec::new();
    let mut costly = Vec::new();
    let presets = simulated_presets();
    for preset in presets.iter().copied() {
        for servers in [4, big(preset)] {
            for kind in [RoutingKind::DModK, RoutingKind::Adaptive] {
                for (i, a) in algos.iter().enumerate() {
                    let case = (preset, servers, kind, i);
                    if servers > 4
                        && kind == RoutingKind::Adaptive
                        && a.name().starts_with("alltoall")
                    {
                        // Rail-only routes no all-to-all without a relay: checked on 4 servers.
                        if !(preset.starts_with("rail-only") && a.name() == "alltoall") {
                            costly.push(case);
                        }
                    } else {
                        cases.push(case);
                    }
                }
            }
        }
    }
    let mut state = SUITE_SEED;
    for i in 0..3 {
        let of_relay = costly.iter().filter(|c| c.3 == i).copied().collect();
        cases.extend(drawn(of_relay, adaptive_alltoall_per_relay, &mut state));
    }
    cases.sort_by_key(|c| (presets.iter().position(|p| *p == c.0), c.1));
    let mut built: Option<(&str, u32, Fabric)> = None;
    for (preset, servers, kind, i) in cases {
        if built
            .as_ref()
            .is_none_or(|b| (b.0, b.1) != (preset, servers))
        {
            let o = Overrides {
                servers: Some(servers),
                ..Default::default()
            };
            built = Some((preset, servers, fabric(preset, o)));
        }
        let f = &built.as_ref().unwrap().2;
        let a = algos[i].as_ref();
        let what = format!("{preset} x{servers} {kind:?} {}", a.name());
        let Some((flows, classes, worst)) = by_class_vs_per_flow(f, kind, a) else {
            assert!(
                preset.starts_with("rail-only") && a.name() == "alltoall",
                "{what}"
            );
            continue;
        };
        assert!(worst <= 1e-9, "{what}: {worst:e}");
        eprintln!("{what}: {classes} classes of {flows} flows, {worst:.1e}");
        // All-to-all among many servers: classes are a small fraction of the flows (adaptive
        // routing shifts each sub-flow by its destination, which leaves fewer flows
        // interchangeable than D-mod-K's: a fifth on the EDR fat-tree).
        if servers == big(preset) && a.name().starts_with("alltoall") {
            let fraction = if kind == RoutingKind::DModK { 8 } else { 2 };
            assert!(classes * fraction <= flows, "{what}: {classes} of {flows}");
        }
    }
}

/// The same at 512 GPUs (64 DGX H100, two full scalable units of the rail-optimized NDR SuperPOD):
/// the all-reduce steps, and all-to-all (261,632 flows) laid out by symmetry. The suite's size of
/// the exhaustive test below.
#[test]
fn flow_classes_give_the_per_flow_times_on_two_scalable_units() {
    flow_classes_on_the_superpod(64);
}

/// The same at 2,048 GPUs (256 DGX H100: 8 scalable units, all-to-all's 4.2 million flows).
#[test]
#[ignore = "2,048 GPUs, about 3 minutes: cargo test --release -p railyard-sim --lib -- --ignored"]
fn flow_classes_give_the_per_flow_times_at_2048_gpus() {
    flow_classes_on_the_superpod(256);
}

fn flow_classes_on_the_superpod(servers: u32) {
    let f = fabric(
        "dgx-h100-superpod",
        Overrides {
            servers: Some(servers),
            ..Default::default()
        },
    );
    let algos: Vec<Box<dyn CollectiveAlgorithm>> = vec![
        Box::new(Ring {
            op: Collective::AllReduce,
        }),
        Box::new(DoubleBinaryTree),
    ];
    for a in &algos {
        let (flows, classes, worst) =
            by_class_vs_per_flow(&f, RoutingKind::DModK, a.as_ref()).expect("routes");
        assert!(worst <= 1e-9, "{}: {worst:e}", a.name());
        eprintln!("{}: {flows} flows, {classes} classes", a.name());
    }
    // All-to-all as `sim collective alltoall` runs it at this size (laid out by symmetry) against
    // every one of its flows on the per-flow engine.
    let (reps, flows, classes, worst, worst_rate) =
        folded_vs_per_flow(&f, RoutingKind::DModK, Relay::Direct).expect("folds");
    eprintln!("alltoall: {reps} of {flows} flows laid out, {classes} classes");
    let gpus = 8 * servers as usize;
    assert_eq!(flows, gpus * (gpus - 1));
    assert!(worst_rate <= 1e-9, "{worst_rate:e}");
    assert!(worst <= 1e-4, "{worst:e}");
}

/// Issue 14: an all-to-all laid out by symmetry (`Fold`: representative servers only) against the
/// same step laid out flow by flow. Every flow of a representative server gets its own finish
/// time and max-min rate; every other server's flows get the same times as its class's
/// representative (as multisets: which flow of a server is which differs by position); the step's
/// flow count, makespan and bottleneck agree. `None` when the symmetry check refused the fold (or
/// a route is missing); else (folded flows, flows, classes, largest relative difference).
pub(super) fn folded_vs_per_flow(
    f: &Fabric,
    kind: RoutingKind,
    relay: Relay,
) -> Option<(usize, usize, usize, f64, f64)> {
    let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    folded_vs_per_flow_on(&net, kind, relay)
}

/// [`folded_vs_per_flow`] on a network built as the caller says (cables down, servers drained).
fn folded_vs_per_flow_on(
    net: &FabricNet<'_>,
    kind: RoutingKind,
    relay: Relay,
) -> Option<(usize, usize, usize, f64, f64)> {
    let r = router(kind);
    let shape = shape_of(net).unwrap();
    let a = AllToAll { relay };
    let mut full = StepBuilder::new(net, &r, shape).unwrap();
    a.step(&mut full).unwrap();
    if full.failure_count > 0 {
        return None;
    }
    let sym = symmetry::of_net(net, Cancel::NEVER).unwrap();
    let mut folded = StepBuilder::new(net, &r, shape).unwrap();
    folded.fold_on(&sym).unwrap();
    folded.fold.as_mut().unwrap().trace = true;
    folded.phases = vec![StepPhase::new(net, folded.fold.as_ref(), false).unwrap()];
    a.step(&mut folded).unwrap();
    if folded.fold_failed {
        return None;
    }
    assert_eq!(folded.flows(), full.flows());
    let (mut reps, mut classes, mut worst, mut worst_rate) = (0, 0, 0.0f64, 0.0f64);
    let rel = |x: f64, y: f64| if x == y { 0.0 } else { (x - y).abs() / x.abs() };
    for (k, (pf, pc)) in full.phases.iter().zip(&folded.phases).enumerate() {
        if pf.w.flows() == 0 {
            assert_eq!(pc.w.flows(), 0);
            continue;
        }
        let trace = pc.merged.as_ref().unwrap().trace.as_ref().unwrap();
        reps += trace.len();
        let per_flow = engine::simulate(&pf.w).flows;
        let rates = engine::max_min_rates(&pf.w);
        let q = classes::quotient(&pc.w, Cancel::NEVER).unwrap().unwrap();
        classes += q.classes();
        let by_fold = q.expand_times(&engine::simulate(&q.workload).flows);
        let fold_rates = q.expand(&engine::max_min_rates(&q.workload));
        // Each flow's source server: the server of its path's first resource.
        let server_of = |paths: &[u32], offsets: &[u32], f: usize| -> usize {
            let r = paths[offsets[f] as usize];
            let l = net.fabric.link(railyard_fabric::LinkId(r / 2));
            let node = net
                .fabric
                .port_node(if r.is_multiple_of(2) { l.a } else { l.b });
            node.server.unwrap() as usize
        };
        let mut full_of: Vec<Vec<usize>> = vec![Vec::new(); net.servers.len()];
        for f in 0..pf.w.flows() {
            full_of[server_of(&pf.paths, &pf.offsets, f)].push(f);
        }
        // Per server laid out: the merged flow of each of its flows, in order.
        let mut fold_of: Vec<Vec<usize>> = vec![Vec::new(); net.servers.len()];
        for &(s, m) in trace {
            fold_of[s as usize].push(m as usize);
        }
        let mut at = 0;
        for members in sym.server_classes.iter().filter(|c| !net.is_drained(c[0])) {
            let rep = &fold_of[members[0]];
            at += rep.len();
            let mut want: Vec<u64> = rep.iter().map(|&f| by_fold[f].finish.ps()).collect();
            want.sort_unstable();
            for (m, &s) in members.iter().enumerate() {
                let mine = &full_of[s];
                assert_eq!(mine.len(), rep.len(), "phase {k} server {s}");
                if m == 0 {
                    for (&x, &y) in mine.iter().zip(rep) {
                        let (a, b) = (
                            per_flow[x].finish.ps() as f64,
                            by_fold[y].finish.ps() as f64,
                        );
                        worst = worst.max(rel(a, b));
                        worst_rate = worst_rate.max(rel(rates[x], fold_rates[y]));
                    }
                }
                let mut got: Vec<u64> = mine.iter().map(|&f| per_flow[f].finish.ps()).collect();
                got.sort_unstable();
                for (x, y) in got.iter().zip(&want) {
                    worst = worst.max(rel(*x as f64, *y as f64));
                }
            }
        }
        assert_eq!(at, trace.len(), "phase {k}");
        for (s, flows) in full_of.iter().enumerate() {
            if net.is_drained(s) {
                assert!(flows.is_empty(), "drained server {s} sends");
            }
        }
        // The bottleneck named by symmetry is full in the per-flow solution and carries the
        // flows it says (ties between full resources may name another than the per-flow one).
        let fold = folded.fold.as_ref().unwrap();
        let (r, n) = bottleneck_folded_at(fold, pc, &fold_rates).unwrap();
        let (mut load, mut count) = (0.0, 0u32);
        for (f, &rate) in rates.iter().enumerate() {
            if pf.paths[pf.offsets[f] as usize..pf.offsets[f + 1] as usize].contains(&r) {
                load += rate;
                count += 1;
            }
        }
        assert_eq!(count, n, "phase {k}");
        assert!(
            rel(net.capacity(r), load) <= 1e-9,
            "phase {k}: {load} of {}",
            net.capacity(r)
        );
        assert!(pc.latency >= pf.latency, "phase {k}");
    }
    Some((reps, full.flows(), classes, worst, worst_rate))
}

/// Every preset, D-mod-K and adaptive, all-to-all direct and with PXN (pipelined and staged), on
/// 4 and 12 servers: laid out by symmetry, every flow's max-min rate equals the per-flow one
/// within 1e-9 and its finish time within 1e-4 (the contract is 0.1%). Finish times differ more
/// than rates because the per-flow engine lets flows that the fabric cannot tell apart drift
/// apart by rounding (9,109,775,324 to 9,109,866,999 ps for one class on the 32-server leaf-spine
/// with adaptive routing, where the folded run finishes them together at 9,109,844,078).
#[test]
fn folded_alltoall_gives_the_per_flow_times_on_every_preset() {
    for preset in simulated_presets() {
        // 12 servers: a partial scalable unit on every rail-optimized preset (two server classes
        // or more), and a few seconds in all.
        let big = if preset == "seed-two-switch" { 8 } else { 12 };
        for servers in [4, big] {
            let f = fabric(
                preset,
                Overrides {
                    servers: Some(servers),
                    ..Default::default()
                },
            );
            for kind in [RoutingKind::DModK, RoutingKind::Adaptive] {
                for relay in [Relay::Direct, Relay::Pxn, Relay::PxnStaged] {
                    let what = format!("{preset} x{servers} {kind:?} {relay:?}");
                    match folded_vs_per_flow(&f, kind, relay) {
                        Some((reps, flows, classes, worst, worst_rate)) => {
                            eprintln!(
                                "{what}: {reps} of {flows} flows laid out, {classes} classes, \
                                 finish {worst:.1e}, rate {worst_rate:.1e}"
                            );
                            assert!(worst_rate <= 1e-9, "{what}: rates {worst_rate:e}");
                            assert!(worst <= 1e-4, "{what}: finish times {worst:e}");
                        }
                        None => eprintln!("{what}: not folded"),
                    }
                }
            }
        }
    }
}

/// All-reduce of `sizes` with SHARP on or off (NCCL picks the algorithm), D-mod-K.
fn allreduce_sharp(f: &Fabric, sharp: bool, sizes: &[u64]) -> Sweep {
    let config = NetConfig {
        sharp,
        ..NetConfig::default()
    };
    let net = FabricNet::new(f, &Catalog::builtin(), &config).unwrap();
    let cfg = CollectiveConfig {
        collnet: net.sharp(),
        ..CollectiveConfig::new(Collective::AllReduce)
    };
    run(&net, &router(RoutingKind::DModK), &cfg, sizes, &mut |_| {}).unwrap()
}

/// SHARP is used only where the switches and NICs support it (NVIDIA, "Using NVIDIA SHARP with
/// NVIDIA NCCL", Rev 3.9.1): refused on RoCE (Spectrum switches) and on EDR (Switch-IB 2 SB7800,
/// ConnectX-5), each refusal naming the models at fault and the valid ones; accepted on HDR
/// (QM8790) and NDR (QM9700). A collective asking for CollNet on a network built without SHARP
/// is refused too.
#[test]
fn sharp_only_where_switches_and_nics_support_it() {
    let catalog = Catalog::builtin();
    let sharp = NetConfig {
        sharp: true,
        ..NetConfig::default()
    };
    let refused = |f: &Fabric| match FabricNet::new(f, &catalog, &sharp) {
        Err(SimError::Config { what, message }) => {
            assert_eq!(what, "sharp");
            message
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("SHARP accepted on {}", f.meta.name),
    };
    let roce = refused(&fabric("roce-400g-sn5600", design(4, 8, 8)));
    assert!(roce.contains("InfiniBand only"), "{roce}");
    assert!(roce.contains("switch SN5600"), "{roce}");
    assert!(
        roce.contains("valid switches: Q3400, QM8700, QM8790, QM9700, QM9790"),
        "{roce}"
    );
    let edr = refused(&fabric("seed-edr-fat-tree", Overrides::default()));
    assert!(edr.contains("switch SB7800"), "{edr}");
    assert!(edr.contains("NIC ConnectX-5"), "{edr}");
    assert!(!edr.contains("InfiniBand only"), "{edr}");
    for preset in ["dgx-a100-superpod", "dgx-h100-superpod"] {
        let f = fabric(preset, design(2, 8, 8));
        assert!(FabricNet::new(&f, &catalog, &sharp).unwrap().sharp());
        // Without the key, CollNet is not asked for.
        let net = FabricNet::new(&f, &catalog, &NetConfig::default()).unwrap();
        assert!(!net.sharp());
        let cfg = CollectiveConfig {
            collnet: true,
            ..CollectiveConfig::new(Collective::AllReduce)
        };
        let e = run(&net, &router(RoutingKind::DModK), &cfg, &[G], &mut |_| {}).unwrap_err();
        assert!(
            matches!(e, CollectiveError::Config { what: "sharp", .. }),
            "{e}"
        );
    }
    // Without SHARP no row runs CollNet, whatever the fabric.
    let f = fabric("dgx-a100-superpod", design(4, 8, 8));
    let off = allreduce_sharp(&f, false, &[1 << 20, G]);
    assert!(off.rows.iter().all(|r| !r.algorithm.starts_with("collnet")));
}

/// With SHARP, all-reduce between DGX A100 servers (8 HDR NICs) runs CollNetDirect, NCCL's
/// in-network reduction, and its busbw rises from the ring's (below the 8 x 24.2 GB/s the NICs
/// carry) past it, towards what in-network reduction allows: each server's data crosses its NICs
/// once each way, so algbw at most 8 NICs' payload rate, busbw at most that x 2(n-1)/n. NCCL's
/// model (tuning.cc: 8 channels at 30 GB/s inside the node, x 1/2) gives 120 GB/s algbw; the
/// fabric carries it, so busbw is 120 x 2(n-1)/n: 225 on 2 servers, 236 on 16.
#[test]
fn sharp_raises_allreduce_busbw_towards_the_nic_bound() {
    let nic = rates::INFINIBAND.payload_rate(200.0) / 1e9;
    for servers in [2u32, 16] {
        let f = fabric("dgx-a100-superpod", design(servers, 8, 8));
        let off = allreduce_sharp(&f, false, &[G]);
        let on = allreduce_sharp(&f, true, &[G]);
        let (off, on) = (&off.rows[0], &on.rows[0]);
        let ranks = f64::from(servers * 8);
        let factor = 2.0 * (ranks - 1.0) / ranks;
        assert_eq!(on.algorithm, "collnetdirect", "{servers} servers");
        assert!(
            off.row.busbw_gbs < 8.0 * nic,
            "{servers}: {}",
            off.row.busbw_gbs
        );
        assert!(
            on.row.busbw_gbs > 1.15 * off.row.busbw_gbs,
            "{servers}: {} vs {}",
            on.row.busbw_gbs,
            off.row.busbw_gbs
        );
        assert!(
            on.row.algbw_gbs <= 8.0 * nic + 1e-9,
            "{servers}: {}",
            on.row.algbw_gbs
        );
        let want = 120.0 * factor;
        assert!(
            (on.row.busbw_gbs - want).abs() < 0.03 * want,
            "{servers}: {} vs {want}",
            on.row.busbw_gbs
        );
    }
    // On DGX H100 (NDR), NCCL's model keeps the ring's bandwidth for CollNetDirect (x 0.85 on
    // Hopper) and picks NVLS with SHARP: 1 GiB on 16 servers at about 8 x 48 GB/s busbw (a
    // published run on 12 CoreWeave H100 servers with SHARP: 386.56), and medium sizes faster than
    // without SHARP (NVLS's latency).
    let f = fabric("dgx-h100-superpod", design(16, 8, 8));
    let sizes = [32 << 20, G];
    let off = allreduce_sharp(&f, false, &sizes);
    let on = allreduce_sharp(&f, true, &sizes);
    assert_eq!(on.rows[1].algorithm, "nvls");
    assert!(
        (370.0..=384.0).contains(&on.rows[1].row.busbw_gbs),
        "{}",
        on.rows[1].row.busbw_gbs
    );
    for (a, b) in off.rows.iter().zip(&on.rows) {
        assert!(
            b.row.time_us <= a.row.time_us,
            "{} vs {}",
            b.row.time_us,
            a.row.time_us
        );
    }
}

/// Route failures found while counting on several threads are the ones one thread finds, in the
/// same order (the first few kept, all counted).
#[test]
fn counted_route_failures_do_not_depend_on_threads() {
    let f = fabric("seed-leaf-spine", design(40, 1, 1));
    let down: Vec<_> = f
        .network_links()
        .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::ServerLeaf)
        .map(|(id, _)| id)
        .enumerate()
        .filter(|(i, _)| [3, 17, 29].contains(i))
        .map(|(_, id)| id)
        .collect();
    assert_eq!(down.len(), 3);
    let config = NetConfig {
        failed: down,
        ..NetConfig::default()
    };
    let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
    let r = router(RoutingKind::DModK);
    let a = AllToAll {
        relay: Relay::Direct,
    };
    let run = |threads| {
        let mut b = StepBuilder::new(&net, &r, shape_of(&net).unwrap()).unwrap();
        lay_out_counted_on(&mut b, &a, &[Comm::whole(&net)], &mut |_| {}, threads, true).unwrap();
        (b.failure_count, b.failures.clone())
    };
    let one = run(1);
    // Three servers without a cable: none of their 3 x 39 transfers leaves, and none of the
    // other 37 servers' transfers to them arrives.
    assert_eq!(one.0, 3 * 39 + 37 * 3);
    assert_eq!(one.1.len(), 5);
    assert_eq!(run(3), one);
    assert_eq!(run(7), one);
}

/// Below the per-flow limit, an all-to-all that flow classes cannot shrink (ECMP, cables down) is
/// counted only when its flows are equal, and then prints the per-flow engine's table: the same
/// rows, bit for bit, as laying out every flow. Adaptive routing with a cable down (unequal
/// sub-flows) goes back to the per-flow layout.
#[test]
fn counting_below_the_limit_keeps_the_per_flow_table() {
    for preset in ["dgx-h100-superpod", "roce-400g-sn5600", "seed-edr-fat-tree"] {
        let f = fabric(
            preset,
            Overrides {
                servers: Some(12),
                ..Default::default()
            },
        );
        let spine: Vec<_> = f
            .network_links()
            .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::LeafSpine)
            .map(|(id, _)| id)
            .take(2)
            .collect();
        for (kind, failed) in [
            (RoutingKind::Ecmp, Vec::new()),
            (RoutingKind::DModK, spine.clone()),
            (RoutingKind::Adaptive, spine.clone()),
        ] {
            let config = NetConfig {
                failed,
                ..NetConfig::default()
            };
            let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
            let cfg = CollectiveConfig::new(Collective::AllToAll);
            let sizes = [1 << 10, 1 << 20, 1 << 30];
            let go = |count_equal_above| {
                let r = router(kind);
                let sim = simulate_folding_above(
                    &net,
                    &r,
                    &cfg,
                    &[Comm::whole(&net)],
                    &mut |_| {},
                    Cancel::NEVER,
                    FOLD_ABOVE_FLOWS,
                    MAX_ALLTOALL_FLOWS,
                    count_equal_above,
                )
                .unwrap();
                sim.sweep(&sizes).unwrap()
            };
            let (per_flow, counted) = (go(u64::MAX), go(0));
            let what = format!("{preset} {kind:?}");
            let rows = |s: &Sweep| -> Vec<(u64, f64, f64)> {
                s.rows
                    .iter()
                    .map(|r| (r.row.size_bytes, r.row.time_us, r.row.busbw_gbs))
                    .collect()
            };
            assert_eq!(rows(&counted), rows(&per_flow), "{what}");
            let m = &counted.models[0];
            if kind == RoutingKind::Adaptive {
                assert_eq!(m.counted, None, "{what}");
            } else {
                assert_eq!(m.counted, Some(Counting { exact: true }), "{what}");
            }
            assert_eq!(m.flows, per_flow.models[0].flows, "{what}");
        }
    }
}

/// The bottleneck a step names is what holds its slowest flow back, not any full link on that
/// flow's path: on two switches the all-to-all's slowest flows cross the inter-switch links, and
/// the step's edge rate is that link's capacity over its flows (the servers' links are full too,
/// but with faster flows on them).
#[test]
fn the_named_bottleneck_limits_the_slowest_flow() {
    let f = fabric("seed-two-switch", design(8, 8, 8));
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let cfg = CollectiveConfig::new(Collective::AllToAll);
    let s = run(&net, &router(RoutingKind::DModK), &cfg, &[G], &mut |_| {}).unwrap();
    let m = &s.models[0];
    let b = m.bottleneck.as_ref().unwrap();
    assert!(b.resource.ends_with("(inter-switch)"), "{}", b.resource);
    let per_flow = b.capacity_gbs / f64::from(b.flows);
    assert!(
        (m.edge_gbs() - per_flow).abs() <= 1e-6 * per_flow,
        "{} vs {per_flow}",
        m.edge_gbs()
    );
}

/// Adaptive routing sprays a transfer over the links between the two switches of a two-switch
/// design as over a leaf's up-links. It took D-mod-K's single link by destination before: on
/// seed-two-switch's send/recv the 9 transfers crossing one way all landed on one of the 4 links
/// (389 ms at 1 GiB, ECMP 173 ms); spread, each link carries a quarter of each: 4x faster than
/// D-mod-K and never slower than ECMP.
#[test]
fn adaptive_spreads_over_the_links_between_two_switches() {
    let f = fabric("seed-two-switch", Overrides::default());
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let time = |kind| {
        let cfg = CollectiveConfig::new(Collective::SendRecv);
        let s = run(&net, &router(kind), &cfg, &[G], &mut |_| {}).unwrap();
        s.rows[0].row.time_us
    };
    let (adaptive, dmodk, ecmp) = (
        time(RoutingKind::Adaptive),
        time(RoutingKind::DModK),
        time(RoutingKind::Ecmp),
    );
    assert!(adaptive <= ecmp, "adaptive {adaptive} us, ECMP {ecmp} us");
    let gain = dmodk / adaptive;
    assert!((3.9..4.01).contains(&gain), "D-mod-K / adaptive = {gain}");
}

/// Send/recv crosses rails as `--pxn` says, as all-to-all does: on a rail-only fabric the
/// nccl-tests ring's hop from GPU 7 of one server to GPU 0 of the next has no route straight
/// (the rails do not meet) and runs relayed over NVLink; before, send/recv ignored the relay and
/// was refused there.
#[test]
fn sendrecv_crosses_rails_on_rail_only() {
    let f = fabric("rail-only-h100", design(4, 8, 8));
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let go = |relay| {
        let cfg = CollectiveConfig {
            relay,
            ..CollectiveConfig::new(Collective::SendRecv)
        };
        run(&net, &router(RoutingKind::DModK), &cfg, &[G], &mut |_| {})
    };
    assert!(matches!(
        go(Relay::Direct),
        Err(CollectiveError::Routes { .. })
    ));
    // Pipelined: every transfer at its rail's NDR NIC rate (49.7 GB/s payload), the relay hidden.
    let pxn = go(Relay::Pxn).unwrap().rows[0].row.busbw_gbs;
    assert!((48.0..50.0).contains(&pxn), "{pxn}");
    // Staged: the NVLink hop first, then the rail: slower, never faster.
    let staged = go(Relay::PxnStaged).unwrap().rows[0].row.busbw_gbs;
    assert!(staged < pxn && staged > 0.8 * pxn, "{staged} against {pxn}");
}

/// Send/recv and all-to-all run the protocol NCCL's enqueue picks for the bytes each peer gets
/// (src/enqueue.cc `addP2pToPlan`): LL up to 16 KiB per peer, Simple above, never LL128, even where
/// LL128 would be faster in the model; across servers Simple at every size, since p2p network
/// connections have no LL buffers (`NCCL_ALLOC_P2P_NET_LL_BUFFERS` 0, src/transport/net.cc).
#[test]
fn point_to_point_runs_ll_up_to_16_kib_per_peer_then_simple() {
    let sizes = crate::nccl::sweep(1024, G, 2).unwrap();
    for servers in [1, 2] {
        let f = fabric("dgx-h100-superpod", design(servers, 8, 8));
        let ranks = u64::from(servers) * 8;
        for op in [Collective::AllToAll, Collective::SendRecv] {
            let r = report_on(&f, &NetConfig::default(), op, AlgoChoice::Auto, &sizes);
            for row in &r.rows {
                let per_peer = match op {
                    Collective::AllToAll => row.row.size_bytes / ranks,
                    _ => row.row.size_bytes,
                };
                let want = if per_peer <= 16384 && servers == 1 {
                    Protocol::Ll
                } else {
                    Protocol::Simple
                };
                assert_eq!(
                    row.protocol, want,
                    "{op} on {servers} server(s) at {} bytes",
                    row.row.size_bytes
                );
            }
        }
    }
}

/// A switch of 8 EDR ports, so a tree of a few dozen GPUs needs three tiers (tests only).
const TINY_SWITCH: &str = r#"
[[switch]]
id = "TINY8"
name = "Test switch, 8 EDR ports"
family = "infiniband"
cages = 8
latency_ns = 90
power_w = 50.0
rack_units = 1
managed = true
sharp = { supported = false, source = "a test part" }
price = { usd = 1000.0, estimate = true, source = "a test part" }
source = "a small radix, so trees of a few servers have three tiers (tests only)"
modes = [
  { name = "EDR", techs = ["ib-edr"], gbps = 100, lanes = 4, ports = 8 },
]
"#;

/// The catalog with [`TINY_SWITCH`].
fn tiny_catalog() -> Catalog {
    let mut c = Catalog::builtin();
    c.overlay(TINY_SWITCH, "tiny.toml").unwrap();
    c
}

/// Small fabrics of two and three tiers (rail-optimized and fat-tree; parallel links between
/// leaves and spines, and between spines and cores), with the catalog they were built from.
pub(super) fn small_trees() -> Vec<(String, Fabric, Catalog)> {
    let tiny = tiny_catalog();
    let build = |preset: &str, o: Overrides, catalog: &Catalog| {
        let mut raw = presets::raw(preset).unwrap();
        o.apply(&mut raw).unwrap();
        let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
        railyard_fabric::build(&spec, catalog).unwrap()
    };
    let tiny_tree = |servers: u32, gpus: u32, su: Option<u32>| Overrides {
        tech: Some(railyard_catalog::Tech::IbEdr),
        switch: Some("TINY8".into()),
        su_size: su,
        ..design(servers, gpus, gpus)
    };
    vec![
        (
            "seed-leaf-spine x10 (2 tiers, 10 links per leaf and spine)".into(),
            build("seed-leaf-spine", design(10, 8, 8), &Catalog::builtin()),
            Catalog::builtin(),
        ),
        (
            "dgx-h100-superpod x12 (2 tiers, 8 links per leaf and spine)".into(),
            build("dgx-h100-superpod", design(12, 8, 8), &Catalog::builtin()),
            Catalog::builtin(),
        ),
        (
            "rail-optimized x16 (3 tiers, 2 links per spine and core)".into(),
            build("dgx-a100-superpod", tiny_tree(16, 4, Some(4)), &tiny),
            tiny.clone(),
        ),
        (
            "fat-tree x24 (3 tiers, 2 links per spine and core)".into(),
            build("seed-edr-fat-tree", tiny_tree(24, 2, None), &tiny),
            tiny.clone(),
        ),
        (
            "fat-tree x40 (3 tiers, 1 link per spine and core)".into(),
            build("seed-edr-fat-tree", tiny_tree(40, 1, None), &tiny),
            tiny,
        ),
    ]
}

/// `n` distinct switch-to-switch links of `f` (seeded), as `--fail-links` picks them.
fn fabric_links(f: &Fabric, n: usize, seed: u64) -> Vec<LinkId> {
    crate::net::failures::random_fabric_links(f, n, seed)
}

/// Issue 33: with cables down between switches and servers drained, adaptive routing spreads
/// around the failures, the classes of servers and links the failures do not touch are kept, and
/// the all-to-all laid out by symmetry gives every flow the per-flow engine's max-min rate
/// (1e-9) and finish time (1e-4), on two-tier trees with parallel links (rail-optimized and
/// leaf-spine), direct and with PXN, over seeds. The symmetry check holds on every case (the
/// step is laid out by symmetry, not flow by flow). Three-tier trees are not folded with cables
/// down (`simulate_folding_above`): see the counted test below.
#[test]
fn folded_alltoall_with_cables_down_and_servers_drained_gives_the_per_flow_times() {
    let two_tier = small_trees().into_iter().filter(|(_, f, _)| {
        !f.links
            .iter()
            .any(|l| l.kind == railyard_fabric::LinkKind::SpineCore)
    });
    for (name, f, catalog) in two_tier {
        for seed in 1..=3u64 {
            let fabric = f
                .network_links()
                .filter(|(_, l)| l.kind != railyard_fabric::LinkKind::ServerLeaf)
                .count();
            let failed = fabric_links(&f, (fabric / 12).clamp(1, 6), seed);
            let drained = if seed % 2 == 0 {
                vec![seed as usize % f.servers.len()]
            } else {
                Vec::new()
            };
            let config = NetConfig {
                failed,
                drained,
                ..NetConfig::default()
            };
            let net = FabricNet::new(&f, &catalog, &config).unwrap();
            for relay in [Relay::Direct, Relay::Pxn, Relay::PxnStaged] {
                let what = format!("{name} seed {seed} {relay:?}");
                let (reps, flows, classes, worst, worst_rate) =
                    folded_vs_per_flow_on(&net, RoutingKind::Adaptive, relay)
                        .unwrap_or_else(|| panic!("{what}: not laid out by symmetry"));
                eprintln!(
                    "{what}: {reps} of {flows} flows laid out, {classes} classes, finish \
                     {worst:.1e}, rate {worst_rate:.1e}"
                );
                // Sprayed around a failure, a connection's paths weigh 20/19, 20/18, ... of a
                // flow (`Routes::weight`), counted in units of 1/11,628 flow here: the shares
                // take millions of f64 subtractions, grouped differently by the two layouts.
                assert!(worst_rate <= 1e-8, "{what}: rates {worst_rate:e}");
                assert!(worst <= 1e-4, "{what}: finish times {worst:e}");
            }
        }
    }
}

/// NCCL gives a network peer at least one channel per NIC of the GPU (src/graph/paths.cc
/// `ncclTopoGetNchannels`) and each channel its NIC in turn, so with two NICs per GPU an
/// all-to-all across two servers leaves through both: twice the 8-NIC busbw (the published HGX
/// B300 two-server run, 16 x 400 GbE, measured 180.98 GB/s at 8 GiB; one NIC per GPU gave 91.9).
/// Direct and PXN alike, and no NIC carries more than the others (the spare NICs are dealt to the
/// switch's GPUs in turn, `rails_of_gpu`).
#[test]
fn alltoall_spreads_over_every_nic_of_a_gpu() {
    let mut o = design(2, 8, 8);
    o.gpu = Some("B300".into());
    let eight = busbw(
        &fabric("roce-400g-sn5600", o.clone()),
        Collective::AllToAll,
        8 * G,
    );
    o.nics_per_server = Some(16);
    let f = fabric("roce-400g-sn5600", o);
    let sixteen = busbw(&f, Collective::AllToAll, 8 * G);
    assert!(
        (1.9..2.05).contains(&(sixteen / eight)),
        "8 NICs {eight}, 16 NICs {sixteen}"
    );
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    for s in 0..net.servers.len() {
        let mut rails: Vec<u32> = (0..8).flat_map(|g| rails_of_gpu(&net, s, g)).collect();
        assert_eq!(rails.len(), 16, "two NICs per GPU");
        rails.sort_unstable();
        rails.dedup();
        assert_eq!(rails.len(), 16, "each NIC one GPU's");
    }
    for pxn in [Relay::Direct, Relay::Pxn] {
        let cfg = CollectiveConfig {
            relay: pxn,
            ..CollectiveConfig::new(Collective::AllToAll)
        };
        let r = run(
            &net,
            &router(RoutingKind::DModK),
            &cfg,
            &[8 * G],
            &mut |_| {},
        )
        .unwrap();
        let b = r.rows[0].row.busbw_gbs;
        assert!(
            (b / sixteen - 1.0).abs() < 0.02,
            "{pxn:?}: {b} vs {sixteen}"
        );
    }
}
