use super::*;
use railyard_spec::{presets, ClusterSpec, Overrides};

fn plan(name: &str, o: Overrides) -> (Fabric, Plan) {
    let mut raw = presets::raw(name).unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, name).unwrap();
    let catalog = Catalog::builtin();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    let p = Plan::new(&f, &catalog);
    (f, p)
}

#[test]
fn summary_counts_match_the_reference_design() {
    let (_, p) = plan("dgx-h100-superpod", Overrides::default());
    let s = &p.summary;
    assert_eq!((s.servers, s.gpus, s.nics), (127, 1016, 1016));
    assert_eq!(
        (s.switches.leaf, s.switches.spine, s.switches.core),
        (32, 16, 0)
    );
    assert_eq!(
        (s.links.server_leaf, s.links.leaf_spine, s.links.spine_core),
        (1016, 1024, 0)
    );
    assert_eq!(s.oversubscription.leaf, 1.0);
    assert_eq!(s.oversubscription.spine, 1.0);
    assert_eq!(s.oversubscription.core, 0.0);
    assert_eq!(s.worst_case_switch_hops, 3);
    assert_eq!(s.cables_by_type.values().sum::<u64>(), s.links.total);
}

#[test]
fn cost_adds_up_to_the_bom() {
    let (_, p) = plan("dgx-h100-superpod", Overrides::default());
    let bom: f64 = p.bom.iter().map(|l| l.total_usd).sum();
    assert!((bom - p.summary.cost_usd.total).abs() < 1e-6);
    assert!((p.summary.cost_usd.per_gpu * 1016.0 - bom).abs() < 1e-6);
    assert!(p.summary.cost_usd.includes_estimates);
}

#[test]
fn oversubscribed_leaf_reports_its_ratio() {
    let (_, p) = plan(
        "seed-edr-fat-tree",
        Overrides {
            oversubscription: Some(2.0),
            ..Default::default()
        },
    );
    assert_eq!(p.summary.oversubscription.leaf, 2.0);
}

#[test]
fn cabling_names_ends_as_on_the_floor() {
    let (f, _) = plan("dgx-h100-superpod", Overrides::default());
    let csv = output::cabling_csv(&f);
    let first = csv.lines().nth(1).unwrap();
    let cols: Vec<&str> = first.split(',').collect();
    assert_eq!(cols[5..9], ["su1-srv01", "hca1", "su1-leaf1", "p1"]);
    assert_eq!(csv.lines().count() as u64 - 1, 1016 + 1024);
}

#[test]
fn same_spec_same_bytes() {
    let (f1, p1) = plan("dgx-a100-superpod", Overrides::default());
    let (f2, p2) = plan("dgx-a100-superpod", Overrides::default());
    assert_eq!(output::cabling_csv(&f1), output::cabling_csv(&f2));
    assert_eq!(output::bom_csv(&p1), output::bom_csv(&p2));
    assert_eq!(
        railyard_fabric::fabric_file::fabric_json(&f1),
        railyard_fabric::fabric_file::fabric_json(&f2)
    );
    assert_eq!(
        output::summary_json(&p1.summary),
        output::summary_json(&p2.summary)
    );
}
