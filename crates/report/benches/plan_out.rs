//! Everything `railyard plan --out DIR` writes, for 16,384 servers x 8 GPUs (131,072 B200 on XDR,
//! three-tier rail-optimized): the design search, the build, the management networks planned with
//! it, and bom.csv, cabling.csv, fabric.json, summary.json, report.html and the networks' files,
//! rendered on the threads the CLI uses and written to a temp dir (cabling.csv streamed as it
//! renders). Issue 2's target: at most 1 s on 2 cores (issue 15: with the search and the networks).
//! Run with `cargo bench -p railyard-report --bench plan_out`.

use criterion::{criterion_group, criterion_main, Criterion};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_plan::output;
use std::path::Path;
use std::time::Duration;

const SPEC: &str = include_str!("../../plan/benches/xdr-16k.toml");

fn plan_out(dir: &Path) -> Fabric {
    let spec = railyard_spec::parse(SPEC, "xdr-16k.toml").expect("the bench spec is valid");
    let catalog = Catalog::builtin();
    let planned = railyard_plan::plan_design(&spec, &catalog, &Default::default())
        .expect("the bench spec builds");
    let network_files = output::network_files(&planned, &catalog);
    let railyard_plan::Planned { fabric, plan, .. } = planned;
    let places = railyard_fabric::layout::rack_places_of(&fabric, &spec, &catalog);
    let cabling = std::fs::File::create(dir.join("cabling.csv")).expect("temp dir is writable");
    let mut cabling = std::io::BufWriter::with_capacity(1 << 20, cabling);
    let (files, report) = std::thread::scope(|s| {
        let report = s.spawn(|| {
            railyard_report::report_html(&railyard_report::DesignReport {
                fabric: &fabric,
                plan: &plan,
                description: spec.description.clone(),
                busbw: Default::default(),
            })
        });
        (
            output::render_files(&fabric, &catalog, &plan, Some(&places), &mut cabling)
                .expect("cabling.csv is written"),
            report.join().expect("report renders"),
        )
    });
    std::io::Write::flush(&mut cabling).expect("cabling.csv is written");
    for (name, text) in files
        .into_iter()
        .map(|(n, t)| (n.to_string(), t))
        .chain([("report.html".to_string(), report)])
        .chain(network_files)
    {
        std::fs::write(dir.join(name), text).expect("temp dir is writable");
    }
    fabric
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    c.bench_function("plan_out_xdr_16k_with_report", |b| {
        b.iter_with_large_drop(|| plan_out(dir.path()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(15));
    targets = bench
}
criterion_main!(benches);
