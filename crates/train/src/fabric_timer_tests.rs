//! Unit tests of [`crate::fabric_timer`].

use super::*;
use crate::fixtures::megatron;
use crate::model::Model;
use crate::parallel::Parallelism;
use crate::step::{step, Breakdown};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::fabric_net::{NetConfig, RoutedNet};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_spec::{presets, ClusterSpec, Overrides};

fn fabric(o: Overrides) -> Fabric {
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn run(f: &Fabric, config: &NetConfig, model: &str, par: &Parallelism) -> Breakdown {
    run_routed(f, config, model, par, RoutingKind::DModK)
}

fn run_routed(
    f: &Fabric,
    config: &NetConfig,
    model: &str,
    par: &Parallelism,
    kind: RoutingKind,
) -> Breakdown {
    run_relayed(
        f,
        config,
        model,
        par,
        kind,
        Relay::auto(f, &Catalog::builtin()),
    )
}

fn run_relayed(
    f: &Fabric,
    config: &NetConfig,
    model: &str,
    par: &Parallelism,
    kind: RoutingKind,
    relay: Relay,
) -> Breakdown {
    let RoutedNet { net, router } = RoutedNet::new(
        f,
        &Catalog::builtin(),
        config,
        kind,
        RoutingConfig::default(),
    )
    .unwrap();
    let timer = FabricTimer::new(&net, &router, f.meta.gpus_per_server, relay);
    let m = Model::preset(model).unwrap();
    step(
        &m,
        par,
        Peaks::bf16(989.0),
        &crate::step::tests::flat(),
        &timer,
    )
    .unwrap()
}

fn llama8b_dp(servers: u32) -> Parallelism {
    Parallelism {
        global_batch: u64::from(servers) * 4,
        grad_bf16: true,
        ..megatron(8, 1, servers)
    }
}

fn servers(n: u32) -> Overrides {
    Overrides {
        servers: Some(n),
        ..Default::default()
    }
}

/// Fewer NICs (1:4 against 1:1) never make a step faster; GPUDirect off never makes it faster.
#[test]
fn more_nics_and_gpudirect_never_slow_a_step() {
    let par = llama8b_dp(16);
    let one_to_one = run(
        &fabric(servers(16)),
        &NetConfig::default(),
        "llama3-8b",
        &par,
    );
    let quarter = run(
        &fabric(Overrides {
            servers: Some(16),
            nic_ratio: Some((1, 4)),
            ..Default::default()
        }),
        &NetConfig::default(),
        "llama3-8b",
        &par,
    );
    assert!(
        one_to_one.step_time_s <= quarter.step_time_s,
        "{one_to_one:?} vs {quarter:?}"
    );
    assert!(quarter.data_parallel_total_s > 2.0 * one_to_one.data_parallel_total_s);
    let no_gdr = run(
        &fabric(Overrides {
            servers: Some(16),
            gpudirect: Some(false),
            ..Default::default()
        }),
        &NetConfig::default(),
        "llama3-8b",
        &par,
    );
    assert!(one_to_one.step_time_s <= no_gdr.step_time_s);
}

/// More oversubscription never makes a step faster. Adaptive routing spreads every flow over all
/// up-links; with D-mod-K the answer depends on which destinations collide on the leaves'
/// up-ports of each layout (on 32 servers, 2:1 collides where 4:1 does not), so it need not be
/// monotonic.
#[test]
fn oversubscription_never_speeds_a_step() {
    let par = llama8b_dp(32);
    let mut last = 0.0;
    for r in [1.0, 2.0, 4.0] {
        let f = fabric(Overrides {
            servers: Some(32),
            topology: Some(railyard_spec::Topology::FatTree),
            oversubscription: Some(r),
            ..Default::default()
        });
        let b = run_routed(
            &f,
            &NetConfig::default(),
            "llama3-8b",
            &par,
            RoutingKind::Adaptive,
        );
        // Cable lengths differ between layouts: allow their nanoseconds.
        assert!(
            b.step_time_s >= last * (1.0 - 1e-6),
            "oversubscription {r}: {} < {last}",
            b.step_time_s
        );
        last = b.step_time_s;
    }
}

/// Pure data parallelism along rails inside one scalable unit: the reduce-scatter and all-gather
/// rings cross two server-leaf cables per transfer and never a spine.
#[test]
fn data_parallel_traffic_stays_on_the_rail_leaves() {
    let par = llama8b_dp(16);
    let b = run(
        &fabric(servers(16)),
        &NetConfig::default(),
        "llama3-8b",
        &par,
    );
    let m = Model::preset("llama3-8b").unwrap();
    let n = 16u64;
    let per_transfer = m.params() * crate::step::BYTES_PER_VALUE / 8 / n;
    // 8 rails x n ring edges x (n-1) steps, two operations, two server-leaf cables per transfer.
    let expect = (8 * n * (n - 1) * per_transfer * 2 * 2) as f64;
    assert_eq!(
        b.network_bytes_per_tier.get("server-leaf").copied(),
        Some(expect)
    );
    assert!(
        b.network_bytes_per_tier
            .get("leaf-spine")
            .copied()
            .unwrap_or(0.0)
            == 0.0
    );
}

/// Expert parallelism across servers puts all-to-all on the wire.
#[test]
fn moe_all_to_all_is_timed_on_the_fabric() {
    let f = fabric(servers(8));
    let par = Parallelism {
        global_batch: 64,
        ep: 8,
        seq: 4096,
        grad_bf16: true,
        ..megatron(2, 1, 32)
    };
    let b = run(&f, &NetConfig::default(), "mixtral-8x7b", &par);
    assert!(b.expert_parallel_s > 0.0);
    assert!(b.tokens_per_s > 0.0 && b.mfu > 0.0 && b.mfu < 1.0, "{b:?}");
}

/// MoE on rail-only: with TP 2 an EP group of 8 spans two servers and three of each GPU's four
/// remote peers sit on other rails. Without a spine those transfers are relayed over NVLink;
/// staged (the Rail-only paper's model), the NVLink phase adds to the rail phase: per GPU
/// 6/8 of its buffer over NVLink (3 local peers + 3 relayed, 370.8 GB/s) against 4/8 over its
/// NIC (49.7 GB/s): 0.75/370.8 / (0.5/49.7) = 20% more all-to-all time, no more. The rest of the
/// step is unchanged, so the step pays a few per cent; pipelined relaying (NCCL's PXN, what
/// `--pxn auto` now picks on both fabrics) hides it.
#[test]
fn moe_on_rail_only_pays_a_bounded_relay_penalty() {
    let par = Parallelism {
        global_batch: 512,
        ep: 8,
        seq: 4096,
        grad_bf16: true,
        ..megatron(2, 1, 64)
    };
    let go = |topology, relay: Option<Relay>| {
        let f = fabric(Overrides {
            servers: Some(16),
            topology: Some(topology),
            ..Default::default()
        });
        let relay = relay.unwrap_or_else(|| Relay::auto(&f, &Catalog::builtin()));
        run_relayed(
            &f,
            &NetConfig::default(),
            "mixtral-8x7b",
            &par,
            RoutingKind::DModK,
            relay,
        )
    };
    let optimized = go(railyard_spec::Topology::RailOptimized, Some(Relay::Direct));
    let rail_only = go(railyard_spec::Topology::RailOnly, Some(Relay::PxnStaged));
    let pipelined = go(railyard_spec::Topology::RailOnly, Some(Relay::Pxn));
    assert_eq!(go(railyard_spec::Topology::RailOnly, None), pipelined);
    let a2a = rail_only.expert_parallel_s / optimized.expert_parallel_s - 1.0;
    assert!((0.18..0.21).contains(&a2a), "all-to-all penalty {a2a}");
    let step = rail_only.step_time_s / optimized.step_time_s - 1.0;
    assert!(step > 0.0 && step < 0.05, "step penalty {step}");
    assert_eq!(
        rail_only.data_parallel_total_s,
        optimized.data_parallel_total_s
    );
    let hidden = pipelined.expert_parallel_s / optimized.expert_parallel_s - 1.0;
    // Within 0.5%: the bandwidth is the same; NCCL's model adds each path's latency, and the
    // relayed path crosses NVLink where the rail-optimized one crosses a spine.
    assert!(hidden.abs() < 5e-3, "pipelined relay {hidden}");
}

/// Issue 36: DeepSeek-V3-like's expert all-to-all on a rail-optimized design oversubscribed 2:1
/// at the leaves (a whole scalable unit of 32 servers, so every leaf's down-links are busy).
/// `--pxn auto` is NCCL's default (P2P_PXN_LEVEL=2, `nccl_relays`): relayed over
/// NVLink to the destination's rail, so it equals `--pxn on` exactly; straight from each GPU's
/// own NIC (`--pxn off`) the cross-rail transfers climb to the oversubscribed spines and the
/// all-to-all takes longer.
#[test]
fn deepseek_alltoall_on_rail_optimized_2_to_1_relays_by_default() {
    let f = fabric(Overrides {
        servers: Some(32),
        oversubscription: Some(2.0),
        ..Default::default()
    });
    let catalog = Catalog::builtin();
    assert_eq!(Relay::auto(&f, &catalog), Relay::Pxn);
    let par = Parallelism {
        global_batch: 2048,
        ep: 16,
        seq: 4096,
        recompute: true,
        grad_bf16: true,
        ..megatron(1, 1, 256)
    };
    let go = |relay| {
        run_relayed(
            &f,
            &NetConfig::default(),
            "deepseek-v3-like",
            &par,
            RoutingKind::DModK,
            relay,
        )
    };
    let auto = go(Relay::auto(&f, &catalog));
    let on = go(Relay::Pxn);
    let off = go(Relay::Direct);
    eprintln!(
        "expert parallel: auto {} s, on {} s, off {} s",
        auto.expert_parallel_s, on.expert_parallel_s, off.expert_parallel_s
    );
    assert_eq!(auto, on);
    // Off: each leaf's 32 NICs send 7/8 of their remote bytes (to the other rails) up its 16
    // spine links: 32 x 7/8 / 16 = 1.75 times the relayed time, which stays on the rails.
    let ratio = off.expert_parallel_s / on.expert_parallel_s;
    assert!((1.6..1.9).contains(&ratio), "off/on {ratio}");
}

/// Issue 12: `train` and `sim collective` give the same time for the same collective on the
/// same GPUs, because both price it with `collective::simulate_until`. Every GPU of 16 DGX
/// H100 (the communicator `sim collective` runs), for every operation and a few sizes; and a
/// data-parallel group (one GPU per server) against the same function called directly.
#[test]
fn train_and_sim_collective_agree_exactly() {
    use railyard_sim::collective::{run, simulate_until, CollectiveConfig, Comm};
    let f = fabric(servers(16));
    let catalog = Catalog::builtin();
    let RoutedNet { net, router } = RoutedNet::new(
        &f,
        &catalog,
        &NetConfig::default(),
        RoutingKind::DModK,
        RoutingConfig::default(),
    )
    .unwrap();
    let relay = Relay::auto(&f, &catalog);
    let timer = FabricTimer::new(&net, &router, 8, relay);
    let everyone: Vec<u32> = (0..128).collect();
    let sizes = [1u64 << 20, 64 << 20, 1 << 30];
    for op in [
        Op::AllReduce,
        Op::ReduceScatter,
        Op::AllGather,
        Op::AllToAll,
    ] {
        let cfg = CollectiveConfig {
            relay: timer.relay(op),
            ..CollectiveConfig::new(collective_of(op))
        };
        let sweep = run(&net, &router, &cfg, &sizes, &mut |_| {}).unwrap();
        for (row, &size) in sweep.rows.iter().zip(&sizes) {
            let t = timer
                .seconds(op, std::slice::from_ref(&everyone), size)
                .unwrap();
            assert_eq!(t, row.row.time_us * 1e-6, "{op:?} at {size} bytes");
        }
    }
    // Data-parallel groups: local GPU k of every server, all eight at once.
    let groups: Vec<Vec<u32>> = (0..8)
        .map(|k| (0..16).map(|s| s * 8 + k).collect())
        .collect();
    let comms: Vec<Comm> = (0..8)
        .map(|k| Comm {
            servers: (0..16).collect(),
            locals: vec![k],
        })
        .collect();
    let cfg = CollectiveConfig {
        relay: Relay::Pxn,
        ..CollectiveConfig::new(railyard_sim::nccl::Collective::AllReduce)
    };
    let sim = simulate_until(&net, &router, &cfg, &comms, &mut |_| {}, Cancel::NEVER).unwrap();
    let t = timer.seconds(Op::AllReduce, &groups, 1 << 30).unwrap();
    assert!(t > 0.0);
    assert_eq!(t, sim.row(1 << 30).unwrap().row.time_us * 1e-6);
}

/// A pipeline hop sends one way: stage s to s + 1, every stage at once. A middle stage sends
/// once and receives once, so a hop takes as long with 4 stages as with 2 (the same bytes over
/// the same kind of path), and a two-stage hop is what `sim collective sendrecv` gives for the
/// two GPUs (nccl-tests' two ranks send both ways, on full-duplex links). Before, every stage
/// boundary ran as a two-rank send/recv in both directions, so a middle stage sent to both
/// neighbours at once and a hop of 3 or more stages took 1.9x as long.
#[test]
fn a_pipeline_hop_sends_one_way() {
    use railyard_sim::collective::{simulate_until, CollectiveConfig, Comm};
    let f = fabric(servers(4));
    let catalog = Catalog::builtin();
    let RoutedNet { net, router } = RoutedNet::new(
        &f,
        &catalog,
        &NetConfig::default(),
        RoutingKind::DModK,
        RoutingConfig::default(),
    )
    .unwrap();
    let timer = FabricTimer::new(&net, &router, 8, Relay::auto(&f, &catalog));
    let bytes = 8 << 20;
    // Local GPU 0 of each server a stage.
    let chain = |stages: u32| -> Vec<Vec<u32>> {
        (0..stages - 1).map(|s| vec![s * 8, (s + 1) * 8]).collect()
    };
    let two = timer.seconds(Op::SendRecv, &chain(2), bytes).unwrap();
    let four = timer.seconds(Op::SendRecv, &chain(4), bytes).unwrap();
    assert!(two > 0.0);
    assert_eq!(two, four, "a hop of 4 stages against 2");
    // Two stages: nccl-tests' sendrecv on those two GPUs, as `sim collective` prices it.
    let cfg = CollectiveConfig {
        relay: Relay::auto(&f, &catalog),
        ..CollectiveConfig::new(railyard_sim::nccl::Collective::SendRecv)
    };
    let pair = Comm {
        servers: vec![0, 1],
        locals: vec![0],
    };
    let sim = simulate_until(&net, &router, &cfg, &[pair], &mut |_| {}, Cancel::NEVER).unwrap();
    assert_eq!(two, sim.row(bytes).unwrap().row.time_us * 1e-6);
}

/// Regression (issue 33): `train --model-file` with every dimension 1 printed 7984% link
/// utilisation. A reduce-scatter of fewer elements than ranks is empty and timed at 0 (NCCL
/// discards it), but its bytes were counted on the links before nccl-tests' rounding, so bytes
/// crossed them in no time. Now every operation's bytes on every tier fit the tier's capacity
/// over the time the same operation is timed at, at sizes below, at and above the rank count.
#[test]
fn regression_train_counted_link_bytes_of_an_operation_timed_at_zero() {
    let f = fabric(servers(2));
    let RoutedNet { net, router } = RoutedNet::new(
        &f,
        &Catalog::builtin(),
        &NetConfig::default(),
        RoutingKind::DModK,
        RoutingConfig::default(),
    )
    .unwrap();
    let timer = FabricTimer::new(
        &net,
        &router,
        f.meta.gpus_per_server,
        Relay::auto(&f, &Catalog::builtin()),
    );
    let mut capacity: BTreeMap<String, f64> = BTreeMap::new();
    for (_, l) in f.network_links() {
        *capacity.entry(l.kind.as_str().to_string()).or_default() += 2.0 * l.gbps * 1e9 / 8.0;
    }
    // One rank per server (a data-parallel group across rails) and every rank.
    let groups = [vec![vec![0, 8]], vec![(0..16).collect::<Vec<u32>>()]];
    for g in &groups {
        for op in [
            Op::AllReduce,
            Op::ReduceScatter,
            Op::AllGather,
            Op::AllToAll,
        ] {
            for bytes in [1u64, 36, 60, 64, 100, 4096, 1 << 20] {
                let t = timer.seconds(op, g, bytes).unwrap();
                for (tier, carried) in timer.tier_bytes(op, g, bytes).unwrap() {
                    let most = capacity[&tier] * t;
                    assert!(
                        carried <= most * (1.0 + 1e-9),
                        "{op:?} of {bytes} B on {} ranks: {carried} B on {tier} in {t} s",
                        g[0].len()
                    );
                }
            }
        }
    }
}
