//! Benchmarks from issue 3 ("Must show"): the simulator core on the two large plain-network cases;
//! and from issue 14: random workloads of log-normal sizes, all starting at zero or arriving as a
//! Poisson process, which exercise the incremental max-min re-solve. Run with
//! `cargo bench -p railyard-sim --bench flows [-- FILTER]`; results are recorded in BENCHMARKS.md.
//! They are not run in CI (clippy --all-targets only compiles them).

use criterion::{criterion_group, criterion_main, Criterion};
use railyard_sim::leafspine::{self, HostFlow, LeafSpine, LeafSpineConfig};
use railyard_sim::rates::INFINIBAND;
use railyard_sim::routing::{build, RoutingConfig, RoutingKind};
use railyard_sim::traffic::Generate;
use railyard_sim::{traffic, Time};
use std::time::Duration;

fn network(hosts: u32, per_leaf: u32, spines: u32) -> LeafSpine {
    let config = LeafSpineConfig {
        hosts,
        hosts_per_leaf: per_leaf,
        spines,
        link_gbps: 400.0,
        hop_latency: Time::from_ns(150),
        packet_format: Some(INFINIBAND),
    };
    LeafSpine::new(config).expect("valid benchmark network")
}

fn flows(pairs: &[(u32, u32)], bytes: u64) -> Vec<HostFlow> {
    pairs
        .iter()
        .map(|&(src, dst)| HostFlow {
            src,
            dst,
            bytes,
            start: Time::ZERO,
        })
        .collect()
}

fn run(net: &LeafSpine, kind: RoutingKind, flows: &[HostFlow]) -> Time {
    let routing = build(kind, RoutingConfig::default());
    let run = leafspine::simulate(net, routing.as_ref(), flows).expect("valid benchmark flows");
    run.flows
        .iter()
        .map(|f| f.finish)
        .max()
        .unwrap_or(Time::ZERO)
}

/// Random permutation on 65,536 hosts, 256 per leaf, 256 spines (targets: at most 2 s with D-mod-K
/// and ECMP, at most 5 s and 1 GB adaptive: 16.7 million sub-flows folded into 65,536 engine flows,
/// one per host flow, as `leafspine::simulate` does where every flow is spread over all spines).
fn permutation(c: &mut Criterion) {
    let net = network(65_536, 256, 256);
    let flows = flows(&traffic::permutation(65_536, 1), 16 << 20);
    let mut g = c.benchmark_group("permutation_65536");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for kind in [RoutingKind::DModK, RoutingKind::Ecmp, RoutingKind::Adaptive] {
        let name = format!("{kind:?}").to_lowercase();
        g.bench_function(name, |b| b.iter(|| run(&net, kind, &flows)));
    }
    g.finish();
}

/// Adaptive routing on 8,192 hosts, 64 per leaf, 64 spines (524,288 sub-flows, folded as above).
fn permutation_adaptive(c: &mut Criterion) {
    let net = network(8_192, 64, 64);
    let flows = flows(&traffic::permutation(8_192, 1), 16 << 20);
    let mut g = c.benchmark_group("permutation_8192");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("adaptive", |b| {
        b.iter(|| run(&net, RoutingKind::Adaptive, &flows))
    });
    g.finish();
}

/// All-to-all among 1,024 hosts, 1,047,552 flows, on a non-blocking leaf-spine of 32 leaves and
/// 32 spines (target: at most 10 s), with D-mod-K and with ECMP.
fn all_to_all(c: &mut Criterion) {
    let net = network(1_024, 32, 32);
    let flows = flows(&traffic::all_to_all(1_024), 1 << 20);
    let mut g = c.benchmark_group("alltoall_1024");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    for kind in [RoutingKind::DModK, RoutingKind::Ecmp] {
        let name = format!("{kind:?}").to_lowercase();
        g.bench_function(name, |b| b.iter(|| run(&net, kind, &flows)));
    }
    g.finish();
}

/// Random flows as `sim flows --generate SPEC` makes them, simulated with ECMP (the CLI's default).
fn generated(net: &LeafSpine, spec: &str) -> Time {
    let generate = Generate::parse(spec).expect("valid benchmark spec");
    let flows = generate
        .flows(net.hosts(), net.link_rate())
        .expect("valid benchmark flows")
        .flows;
    run(net, RoutingKind::Ecmp, &flows)
}

/// Log-normal sizes (median 1 MB, sigma 2) all starting at zero on 1,024 hosts (32 per leaf, 32
/// spines). Every distinct finish time re-solves; the flows whose rates move grow with the number
/// in flight (BENCHMARKS.md), so this is timed at 5,000 and 10,000 flows.
fn lognormal_at_zero(c: &mut Criterion) {
    let net = network(1_024, 32, 32);
    let mut g = c.benchmark_group("lognormal_at_zero_1024");
    g.sample_size(10).measurement_time(Duration::from_secs(60));
    for flows in [5_000, 10_000] {
        let spec = format!("lognormal:flows={flows},median=1000000");
        g.bench_function(flows.to_string(), |b| b.iter(|| generated(&net, &spec)));
    }
    g.finish();
}

/// 1,000,000 flows of log-normal sizes (median 1 MB, sigma 2 and 1) arriving as a Poisson process
/// that loads every host link to 60%, on 16,384 hosts (64 per leaf, 256 leaves, 64 spines;
/// target: at most 60 s). Also 100,000 flows, to see how the cost grows.
fn lognormal_poisson(c: &mut Criterion) {
    let net = network(16_384, 64, 64);
    let mut g = c.benchmark_group("lognormal_poisson_16384");
    g.sample_size(10).measurement_time(Duration::from_secs(600));
    for (flows, sigma) in [(100_000, 2), (1_000_000, 2), (1_000_000, 1)] {
        let spec = format!(
            "lognormal:flows={flows},median=1000000,sigma={sigma},arrivals=poisson,load=0.6,seed=2"
        );
        let name = format!("{flows}_sigma{sigma}");
        g.bench_function(name, |b| b.iter(|| generated(&net, &spec)));
    }
    g.finish();
}

criterion_group!(benches, permutation, permutation_adaptive, all_to_all);
criterion_group!(random, lognormal_at_zero, lognormal_poisson);
criterion_main!(benches, random);
