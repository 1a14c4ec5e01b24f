//! Benchmark from issue 3 ("Must show"): a ring all-reduce sweep of 8 B .. 8 GB (`-b 8 -e 8G -f 2`,
//! 31 sizes) on 16,384 GPUs: 2,048 DGX H100 (8 GPUs, 8 NDR NICs each) on the rail-optimized
//! SuperPOD design, target at most 2 s. The fabric is built once outside the timing (planning has
//! its own benchmark); timed are the network model (`FabricNet::new`) and the collective (routing
//! one step's 16,384 x 8 flows, simulating it, pricing 31 sizes). Results in BENCHMARKS.md.

use criterion::{criterion_group, criterion_main, Criterion};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::collective::{self, AlgoChoice, CollectiveConfig, Relay};
use railyard_sim::fabric_net::{NetConfig, RoutedNet};
use railyard_sim::nccl::{self, Collective};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_spec::{presets, ClusterSpec, Overrides};
use std::time::Duration;

/// The DGX H100 SuperPOD preset with `servers` servers (8 H100 and 8 NDR NICs each).
fn dgx_h100(servers: u32) -> ClusterSpec {
    let mut raw = presets::raw("dgx-h100-superpod").expect("preset");
    Overrides {
        servers: Some(servers),
        ..Overrides::default()
    }
    .apply(&mut raw)
    .expect("overrides");
    ClusterSpec::from_raw(&raw, "bench").expect("spec")
}

/// What each benchmark times: the network model with `routing`, then the collective at `sizes`.
fn timed_run(
    fabric: &Fabric,
    catalog: &Catalog,
    routing: RoutingKind,
    cfg: &CollectiveConfig,
    sizes: &[u64],
) -> collective::Sweep {
    let RoutedNet { net, router } = RoutedNet::new(
        fabric,
        catalog,
        &NetConfig::default(),
        routing,
        RoutingConfig::default(),
    )
    .expect("net");
    collective::run(&net, &router, cfg, sizes, &mut |_| {}).expect("run")
}

fn ring_allreduce_16k(c: &mut Criterion) {
    let catalog = Catalog::builtin();
    let fabric = railyard_fabric::build(&dgx_h100(2_048), &catalog).expect("fabric");
    let sizes = nccl::sweep(8, 8 << 30, 2).expect("sweep");
    let cfg = CollectiveConfig {
        algo: AlgoChoice::Ring,
        ..CollectiveConfig::new(Collective::AllReduce)
    };
    let mut g = c.benchmark_group("collective_16384");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for kind in [RoutingKind::DModK, RoutingKind::Ecmp] {
        let name = format!("ring_allreduce_sweep_{kind:?}").to_lowercase();
        g.bench_function(name, |b| {
            b.iter(|| timed_run(&fabric, &catalog, kind, &cfg, &sizes))
        });
    }
    g.finish();
}

/// Issue 14: all-to-all at one size (1 GiB) on 2,048 GPUs (256 DGX H100, rail-optimized NDR),
/// D-mod-K, `--pxn off` (straight through the spines, as BENCHMARKS.md times it; `auto` now relays
/// as NCCL does): 4,192,256 flows, simulated by flow
/// class (`sim::classes`). Timed as above: network model, layout, classes, engine, pricing.
fn alltoall_2048(c: &mut Criterion) {
    let catalog = Catalog::builtin();
    let fabric = railyard_fabric::build(&dgx_h100(256), &catalog).expect("fabric");
    let cfg = CollectiveConfig {
        relay: Relay::Direct,
        ..CollectiveConfig::new(Collective::AllToAll)
    };
    let mut g = c.benchmark_group("collective_2048");
    g.sample_size(10).measurement_time(Duration::from_secs(60));
    g.bench_function("alltoall_1g_dmodk", |b| {
        b.iter(|| timed_run(&fabric, &catalog, RoutingKind::DModK, &cfg, &[1 << 30]))
    });
    g.finish();
}

/// Issue 14: all-to-all at 1 GiB laid out by symmetry (`collective::Fold`): 16,384 GPUs (2,048
/// DGX H100, rail-optimized NDR, 268,419,072 flows) and 131,072 GPUs (16,384 B200 servers, XDR
/// three-tier rail-optimized, crates/plan/benches/xdr-16k.toml; 17,179,738,112 flows). Timed as
/// above: network model, symmetry, layout of the representative servers, classes, engine,
/// pricing. `--pxn off`, as BENCHMARKS.md times it. `cargo bench -p railyard-sim --bench
/// collective -- alltoall_by_symmetry`.
fn alltoall_by_symmetry(c: &mut Criterion) {
    let catalog = Catalog::builtin();
    let h100 = dgx_h100(2_048);
    let xdr = railyard_spec::parse(include_str!("../../plan/benches/xdr-16k.toml"), "xdr-16k")
        .expect("spec");
    let mut g = c.benchmark_group("alltoall_by_symmetry");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    for (name, spec) in [("gpus_16384_ndr", h100), ("gpus_131072_xdr", xdr)] {
        let fabric = railyard_fabric::build(&spec, &catalog).expect("fabric");
        let cfg = CollectiveConfig {
            relay: Relay::Direct,
            ..CollectiveConfig::new(Collective::AllToAll)
        };
        g.bench_function(name, |b| {
            b.iter(|| timed_run(&fabric, &catalog, RoutingKind::DModK, &cfg, &[1 << 30]))
        });
    }
    g.finish();
}

/// All-to-all of 1 GiB on 4,096 GPUs (512 DGX H100, rail-optimized NDR) with ECMP: no symmetry to
/// lay it out by and 16,773,120 flows, past the per-flow limit, so every flow is routed and counted
/// per link (`collective::Counted`) on every core, `--pxn off` (the counted shortcut for direct
/// transfers, as BENCHMARKS.md times it). Timed: network model, layout, pricing.
/// `cargo bench -p railyard-sim --bench collective -- alltoall_counted`.
fn alltoall_counted(c: &mut Criterion) {
    let catalog = Catalog::builtin();
    let fabric = railyard_fabric::build(&dgx_h100(512), &catalog).expect("fabric");
    let cfg = CollectiveConfig {
        relay: Relay::Direct,
        ..CollectiveConfig::new(Collective::AllToAll)
    };
    let mut g = c.benchmark_group("alltoall_counted");
    g.sample_size(10).measurement_time(Duration::from_secs(40));
    g.bench_function("gpus_4096_ndr_ecmp", |b| {
        b.iter(|| timed_run(&fabric, &catalog, RoutingKind::Ecmp, &cfg, &[1 << 30]))
    });
    g.finish();
}

criterion_group!(
    benches,
    ring_allreduce_16k,
    alltoall_2048,
    alltoall_by_symmetry,
    alltoall_counted
);
criterion_main!(benches);
