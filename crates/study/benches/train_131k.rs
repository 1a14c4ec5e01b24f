//! Issue 36's target: `train` of a MoE model on 131,072 GPUs in at most 30 s on the 2-core
//! machine. The design is `crates/plan/benches/xdr-16k.toml` (16,384 B200 servers of 8 GPUs and 8
//! ConnectX-8 XDR NICs, three-tier rail-optimized Q3400: the largest design the planner builds and
//! is measured on), the model `deepseek-v3-like` with EP 64 and the layout `train` takes when none
//! is asked for (TP the GPUs per server, DP the rest), as `railyard train --spec
//! crates/plan/benches/xdr-16k.toml --model deepseek-v3-like --ep 64 --routing R` runs it. The
//! design is planned once outside the timing; timed is the training step: the layout, the network
//! model and every collective of the step simulated on the fabric, priced per token.
//!
//! Routed D-mod-K (OpenSM's static fat-tree routing). The catalog's default for InfiniBand,
//! adaptive routing, is not benchmarked here: at this size it passes the memory budget (18 GB on
//! the 24 GB machine, BENCHMARKS.md, issue 36 section). Results in BENCHMARKS.md. Run with
//! `cargo bench -p railyard-study --bench train_131k`.

use criterion::{criterion_group, criterion_main, Criterion};
use railyard_catalog::Catalog;
use railyard_study::compare::{self, Layout, Model, PerfRequest};
use railyard_study::RoutingKind;
use std::time::Duration;

const SPEC: &str = include_str!("../../plan/benches/xdr-16k.toml");

fn bench(c: &mut Criterion) {
    let spec = railyard_spec::parse(SPEC, "xdr-16k.toml").expect("the bench spec is valid");
    let catalog = Catalog::builtin();
    let planned = railyard_plan::plan_design(&spec, &catalog, &Default::default())
        .expect("the bench spec builds");
    let model = Model::preset("deepseek-v3-like").expect("a built-in model");
    let layout = Layout {
        ep: 64,
        ..Layout::unasked()
    };
    let mut g = c.benchmark_group("train_131k");
    g.sample_size(10).measurement_time(Duration::from_secs(200));
    g.bench_function("deepseek_v3_like_ep64_dmodk", |b| {
        b.iter(|| {
            let req = PerfRequest {
                model: Some((&model, layout.clone())),
                ..PerfRequest::routed(RoutingKind::DModK)
            };
            compare::perf(&planned.fabric, &catalog, &planned.plan.summary, &req)
                .expect("the step is predicted")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
