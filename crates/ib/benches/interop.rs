//! Export + import + verify, and import + check, at 8,192 HCAs (1,024 DGX-class servers, three-tier rail-optimized NDR):
//! the target is at most 1 s on the 2-core machine. Run with
//! `cargo bench -p railyard-ib --bench interop`.

use criterion::{criterion_group, criterion_main, Criterion};
use railyard_catalog::Catalog;
use railyard_spec::{presets, ClusterSpec, Overrides};
use std::hint::black_box;

fn plan_1024_servers() -> railyard_fabric::Fabric {
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    Overrides {
        servers: Some(1024),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, "bench").unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn export_import_verify(c: &mut Criterion) {
    let plan = plan_1024_servers();
    assert_eq!(
        plan.nodes
            .iter()
            .filter(|n| matches!(n.kind, railyard_fabric::NodeKind::Nic { .. }))
            .count(),
        8192
    );
    // What ibnetdiscover prints on the built cluster, made once outside the timing.
    let discovered = railyard_ib::export::ibnetdiscover_text(&plan).unwrap();
    let mut g = c.benchmark_group("interop");
    g.sample_size(10);
    g.bench_function("export_import_verify_8192_hcas", |b| {
        b.iter(|| {
            let topo = railyard_ib::export::ibsim_topology(black_box(&plan)).unwrap();
            let d = railyard_ib::ibnet::parse(black_box(&discovered)).unwrap();
            let imported = railyard_ib::import::to_fabric(&d, "bench").unwrap();
            let report =
                railyard_ib::verify::verify(&plan, &d, railyard_ib::verify::Options::default());
            assert!(report.matches);
            black_box((topo.text.len(), imported.links.len()))
        })
    });
    // `railyard check` without a plan (issue 13): parse, import, health.
    g.bench_function("import_check_8192_hcas", |b| {
        b.iter(|| {
            let d = railyard_ib::discovery::parse(black_box(&discovered)).unwrap();
            let imported = railyard_ib::import::to_fabric(&d, "bench").unwrap();
            let health = railyard_ib::health::check(&d);
            assert!(health.healthy);
            black_box((imported.links.len(), health.shape.cables))
        })
    });
    g.finish();
}

criterion_group!(benches, export_import_verify);
criterion_main!(benches);
