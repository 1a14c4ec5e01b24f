//! Benchmark from issue 3 ("Must show"): a ring all-reduce sweep of 8 B .. 8 GB (`-b 8 -e 8G -f 2`,
//! 31 sizes) on 16,384 GPUs: 2,048 DGX H100 (8 GPUs, 8 NDR NICs each) on the rail-optimized
//! SuperPOD design, target at most 2 s. The fabric is built once outside the timing (planning has
//! its own benchmark); timed are the network model (`FabricNet::new`) and the collective (routing
//! one step's 16,384 x 8 flows, simulating it, pricing 31 sizes). Results in BENCHMARKS.md.

use criterion::{criterion_group, criterion_main, Criterion};
use railyard_catalog::Catalog;
use railyard_sim::collective::{self, AlgoChoice, CollectiveConfig, Relay};
use railyard_sim::fabric_net::{NetConfig, RoutedNet};
use railyard_sim::nccl::{self, Collective};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_spec::{presets, ClusterSpec, Overrides};
use std::time::Duration;

fn ring_allreduce_16k(c: &mut Criterion) {
    let catalog = Catalog::builtin();
    let mut raw = presets::raw("dgx-h100-superpod").expect("preset");
    Overrides {
        servers: Some(2_048),
        ..Overrides::default()
    }
    .apply(&mut raw)
    .expect("overrides");
    let spec = ClusterSpec::from_raw(&raw, "bench").expect("spec");
    let fabric = railyard_fabric::build(&spec, &catalog).expect("fabric");
    let sizes = nccl::sweep(8, 8 << 30, 2).expect("sweep");
    let cfg = CollectiveConfig {
        op: Collective::AllReduce,
        algo: AlgoChoice::Ring,
        relay: Relay::Direct,
        collnet: false,
    };
    let mut g = c.benchmark_group("collective_16384");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for kind in [RoutingKind::DModK, RoutingKind::Ecmp] {
        let name = format!("ring_allreduce_sweep_{kind:?}").to_lowercase();
        g.bench_function(name, |b| {
            b.iter(|| {
                let RoutedNet { net, router } = RoutedNet::new(
                    &fabric,
                    &catalog,
                    &NetConfig::default(),
                    kind,
                    RoutingConfig::default(),
                )
                .expect("net");
                collective::run(&net, &router, &cfg, &sizes, &mut |_| {}).expect("run")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, ring_allreduce_16k);
criterion_main!(benches);
