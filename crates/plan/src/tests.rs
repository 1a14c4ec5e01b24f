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
fn fabric_json_round_trips() {
    let (f, _) = plan("seed-leaf-spine", Overrides::default());
    let text = output::fabric_json(&f);
    let back = output::load_fabric_json(&text).unwrap();
    assert_eq!(back, f);
    assert!(output::load_fabric_json("{\"format\":\"x\",\"fabric\":1}").is_err());
}

#[test]
fn fabric_json_round_trips_every_preset() {
    for name in railyard_spec::presets::names() {
        let (f, _) = plan(name, Overrides::default());
        let text = output::fabric_json(&f);
        assert!(text.starts_with("{\"format\":\"railyard-fabric/2\""));
        let back = output::load_fabric_json(&text).unwrap();
        assert!(back == f, "{name} does not round-trip");
        // Servers are alike: the file is a template and exceptions are not needed.
        assert!(!text.contains("_exceptions"), "{name}");
    }
}

#[test]
fn fabric_json_round_trips_what_it_cannot_predict() {
    let (mut f, _) = plan("dgx-h100-superpod", Overrides::default());
    // Break the patterns the format predicts: a renamed server node, a port caged differently, a
    // server-internal link of another length, and a spare switch port at another speed.
    f.nodes[30].name = "elsewhere/gpu9".to_string();
    let nic_port = f.nodes[40].first_port as usize;
    f.ports[nic_port].cage = 99;
    f.links[50].run_m = 0.25;
    let spare = f
        .nodes
        .iter()
        .filter(|n| n.is_switch())
        .flat_map(|n| n.ports())
        .find(|&p| f.port(p).link().is_none())
        .unwrap();
    f.ports[spare.0 as usize].gbps = 1.5;
    f.check().unwrap();
    let text = output::fabric_json(&f);
    assert!(text.contains("node_exceptions") && text.contains("port_exceptions"));
    assert!(output::load_fabric_json(&text).unwrap() == f);

    // No servers at all: every node is explicit.
    let (mut f, _) = plan("seed-two-switch", Overrides::default());
    f.servers.clear();
    let text = output::fabric_json(&f);
    assert!(!text.contains("\"template\""));
    assert!(output::load_fabric_json(&text).unwrap() == f);
}

#[test]
fn fabric_json_refuses_broken_files() {
    let (f, _) = plan("seed-leaf-spine", Overrides::default());
    let text = output::fabric_json(&f);
    let old = text.replace("railyard-fabric/2", "railyard-fabric/1");
    assert!(output::load_fabric_json(&old)
        .unwrap_err()
        .contains("railyard-fabric/2"));
    // A port count the nodes cannot fill, and a link to a port that does not exist.
    let ports = format!("\"ports\":{}", f.ports.len());
    let more = text.replace(&ports, &format!("\"ports\":{}", f.ports.len() + 5));
    assert!(output::load_fabric_json(&more).is_err());
    let links = text.replacen("\"links\":[[", "\"links\":[[99999999,", 1);
    assert!(output::load_fabric_json(&links).is_err());
}

/// A few bytes of fabric.json can name billions of ports (a switch's port count); the loader
/// refuses past the design limits before allocating them.
#[test]
fn fabric_json_counts_past_the_limits_are_refused_before_allocating() {
    let (f, _) = plan("seed-leaf-spine", Overrides::default());
    let mut v: serde_json::Value = serde_json::from_str(&output::fabric_json(&f)).unwrap();
    let extra = 3_000_000_000u64;
    let last = v["nodes"].as_array_mut().unwrap().last_mut().unwrap();
    let ports = last[5].as_u64().unwrap();
    last[5] = (ports + extra).into();
    v["ports"] = (v["ports"].as_u64().unwrap() + extra).into();
    let e = output::load_fabric_json(&v.to_string()).unwrap_err();
    assert!(
        e.contains("past railyard's limit") && e.contains("ports"),
        "{e}"
    );
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
    assert_eq!(output::fabric_json(&f1), output::fabric_json(&f2));
    assert_eq!(
        output::summary_json(&p1.summary),
        output::summary_json(&p2.summary)
    );
}
