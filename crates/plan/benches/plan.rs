//! End-to-end planning benchmark: 16,384 servers x 8 GPUs (131,072 GPUs), XDR, three-tier
//! rail-optimized (the spec is `xdr-16k.toml` beside this file).
//!
//! One iteration does what `railyard plan --spec xdr-16k.toml --out DIR` does: parse the spec, load the
//! catalog, build the fabric, count the plan, render `bom.csv`, `cabling.csv`, `fabric.json` and
//! `summary.json`, and write them into a temp dir. Run with `cargo bench -p railyard-plan --bench plan`;
//! results are recorded in BENCHMARKS.md at the repo root.

use criterion::{criterion_group, criterion_main, Criterion};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_plan::{output, Plan};
use std::path::Path;
use std::time::Duration;

const SPEC: &str = include_str!("xdr-16k.toml");

/// Plans and writes every file; returns the fabric so that freeing it is left out of the time, as
/// `railyard plan` leaves it to the process's exit.
fn plan_and_write(dir: &Path) -> Fabric {
    let spec = railyard_spec::parse(SPEC, "xdr-16k.toml").expect("the bench spec is valid");
    let catalog = Catalog::builtin();
    let fabric = railyard_fabric::build(&spec, &catalog).expect("the bench spec builds");
    let plan = Plan::new(&fabric, &catalog);
    for (name, text) in output::render_files(&fabric, &plan) {
        std::fs::write(dir.join(name), text).expect("temp dir is writable");
    }
    fabric
}

fn bench_plan(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    c.bench_function("plan_xdr_16k_rail_optimized", |b| {
        b.iter_with_large_drop(|| plan_and_write(dir.path()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(15));
    targets = bench_plan
}
criterion_main!(benches);
