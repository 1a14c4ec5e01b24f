//! `check` on its own: the expected discovery of every preset is healthy, the public real dumps are
//! described as they are with their faults found (a degraded DDR link among QDR ones, a leaf short
//! of an uplink), and a missing uplink is a finding whose repair makes the fabric healthy again.

use railyard_catalog::Catalog;
use railyard_ib::discovery;
use railyard_ib::health::{check, health_text, repaired, Kind};
use railyard_spec::presets;

fn real(name: &str) -> String {
    let path = format!("{}/tests/data/real/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn tiers(h: &railyard_ib::health::Health) -> Vec<(String, usize)> {
    h.shape
        .tiers
        .iter()
        .map(|t| (t.name.clone(), t.switches))
        .collect()
}

#[test]
fn every_presets_expected_discovery_is_healthy() {
    for p in presets::PRESETS {
        let spec = presets::load(p.name).unwrap();
        let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
        let Ok(text) = railyard_ib::export::ibnetdiscover_text(&f) else {
            continue; // Ethernet
        };
        let h = check(&discovery::parse(&text).unwrap());
        assert!(h.healthy, "{}: {}", p.name, health_text(&h, p.name));
        assert_eq!(h.shape.cables, f.network_links().count(), "{}", p.name);
        assert_eq!(h.shape.hosts, f.servers.len(), "{}", p.name);
        assert_eq!(h.shape.tiers.len() as u32, f.meta.tiers, "{}", p.name);
    }
}

#[test]
fn seed_leaf_spine_is_described_tier_by_tier() {
    let spec = presets::load("seed-leaf-spine").unwrap();
    let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
    let h =
        check(&discovery::parse(&railyard_ib::export::ibnetdiscover_text(&f).unwrap()).unwrap());
    assert_eq!(tiers(&h), [("leaf".into(), 4), ("spine".into(), 2)]);
    assert_eq!((h.shape.hosts, h.shape.hcas, h.shape.cables), (10, 80, 160));
    // 20 hosts down and 20 up on every leaf: 1:1, and 10 links on each of the 8 leaf-spine pairs.
    assert_eq!(h.shape.tiers[0].oversubscription, Some(1.0));
    assert_eq!(h.shape.pairs.len(), 8);
    assert!(h.shape.pairs.iter().all(|p| p.links == 10));
    let text = health_text(&h, "seed");
    assert!(
        text.contains("links per leaf-spine pair: 10 links on 8 pairs"),
        "{text}"
    );
    assert!(text.ends_with("healthy: no findings\n"), "{text}");
}

/// A missing uplink names the leaf, the spine and free ports on both; cabling them (the repair)
/// leaves the fabric healthy.
#[test]
fn a_missing_uplink_is_found_and_its_repair_heals_the_fabric() {
    let spec = presets::load("seed-leaf-spine").unwrap();
    let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
    let mut d = discovery::parse(&railyard_ib::export::ibnetdiscover_text(&f).unwrap()).unwrap();
    let k = d
        .links
        .iter()
        .position(|l| {
            let (a, b) = (&d.nodes[l.a.0].desc, &d.nodes[l.b.0].desc);
            (a == "leaf03" && b == "spine02") || (a == "spine02" && b == "leaf03")
        })
        .unwrap();
    d.links.remove(k);
    let h = check(&d);
    assert_eq!(h.findings.len(), 1, "{}", health_text(&h, "x"));
    let finding = &h.findings[0];
    assert_eq!(finding.kind, Kind::FewUplinks);
    assert!(
        finding
            .what
            .contains("\"leaf03\" has 19 uplinks where 3 of the 4 leaves have 20"),
        "{}",
        finding.what
    );
    let (a, b) = &finding.ends[0];
    assert_eq!(a.device, "leaf03");
    assert_eq!(b.as_ref().unwrap().device, "spine02");
    assert!(check(&repaired(&d, &finding.repair)).healthy);
}

/// tests/data/real/sx6036-qdr-fdr10-2014.ibnetdiscover: six leaves and two spines, one of which
/// carries two hosts (the structure says spine: it joins the leaves); one leaf is an uplink short.
#[test]
fn sx6036_real_dump_is_described_and_its_short_leaf_found() {
    let d = discovery::parse(&real("sx6036-qdr-fdr10-2014.ibnetdiscover")).unwrap();
    let h = check(&d);
    assert_eq!(tiers(&h), [("leaf".into(), 6), ("spine".into(), 2)]);
    assert_eq!(
        (h.shape.hosts, h.shape.hcas, h.shape.cables),
        (144, 144, 192)
    );
    assert_eq!(h.shape.rates.get("4xFDR10"), Some(&47));
    assert_eq!(h.findings.len(), 1, "{}", health_text(&h, "sx6036"));
    assert_eq!(h.findings[0].kind, Kind::FewUplinks);
    assert!(h.findings[0]
        .what
        .contains("\"MF0;ib1:SX6036/U1\" has 7 uplinks where 5 of the 6 leaves have 8"));
}

/// tests/data/real/voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover: 23 host links came up at
/// 4xDDR among 4xQDR ones; each is a slow-link finding naming the HCA and the switch port with
/// their GUIDs.
#[test]
fn voltaire_real_dump_reports_each_ddr_link_with_both_ends() {
    let d = discovery::parse(&real("voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover")).unwrap();
    let h = check(&d);
    assert_eq!(
        (h.shape.hosts, h.shape.cables, h.shape.switches.len()),
        (89, 159, 11)
    );
    let slow: Vec<_> = h
        .findings
        .iter()
        .filter(|f| f.kind == Kind::SlowLink)
        .collect();
    assert_eq!(slow.len(), 23);
    for f in slow {
        assert!(f.what.starts_with("runs at 4xDDR (16 Gb/s) where 66 of the 89 links between hosts and leaves run at 4xQDR"), "{}", f.what);
        let (a, b) = &f.ends[0];
        let b = b.as_ref().unwrap();
        assert_eq!(a.device, "MT25408 ConnectX Mellanox Technologies");
        assert!(b.device.starts_with("Voltaire 4036"));
        assert!(a.guid.is_some() && b.guid.is_some() && a.port == 1 && b.port > 0);
    }
    let text = health_text(&h, "voltaire");
    assert!(text.contains("slow-link: runs at 4xDDR"), "{text}");
}
