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

/// tests/data/real/sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover less its last line (a shell prompt).
fn sat11() -> String {
    let text = real("sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover");
    let cut = text.trim_end().rfind('\n').unwrap() + 1;
    text[..cut].to_string()
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

/// Switches that keep their factory description all share it (a real EDR cluster's six Switch-IB
/// all read "SwitchIB Mellanox Technologies"): the links per pair are still counted per pair of
/// tiers (they were all put on the spine-core line of a two-tier fabric, the tier of the last
/// switch of that description), and each pair names its switches' GUIDs.
#[test]
fn switches_of_one_description_keep_their_tiers() {
    let spec = presets::load("seed-leaf-spine").unwrap();
    let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
    let mut d = discovery::parse(&railyard_ib::export::ibnetdiscover_text(&f).unwrap()).unwrap();
    for n in d.nodes.iter_mut() {
        if n.kind == discovery::NodeType::Switch {
            n.desc = "SwitchIB Mellanox Technologies".to_string();
        }
    }
    let h = check(&d);
    let text = health_text(&h, "seed");
    assert!(
        text.contains("links per leaf-spine pair: 10 links on 8 pairs"),
        "{text}"
    );
    assert!(!text.contains("spine-core"), "{text}");
    assert!(h.shape.pairs.iter().all(|p| p.lower_tier == Some(1)));
    let guids: std::collections::BTreeSet<_> = h
        .shape
        .pairs
        .iter()
        .map(|p| (p.lower_guid.clone().unwrap(), p.upper_guid.clone().unwrap()))
        .collect();
    assert_eq!(guids.len(), 8);
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
    // The leaf tier's oversubscription is its largest leaf's, as `plan` gives it (the tier's
    // total, 4544 / 1880 Gb/s, would be 2.42:1).
    let largest = h
        .shape
        .switches
        .iter()
        .filter(|s| s.tier == Some(1))
        .filter_map(|s| s.oversubscription)
        .fold(0.0, f64::max);
    assert!((largest - 2.74).abs() < 0.005, "{largest}");
    assert_eq!(h.shape.tiers[0].oversubscription, Some(largest));
    assert_eq!(h.findings.len(), 1, "{}", health_text(&h, "sx6036"));
    assert_eq!(h.findings[0].kind, Kind::FewUplinks);
    assert!(h.findings[0]
        .what
        .contains("\"MF0;ib1:SX6036/U1\" has 7 uplinks where 5 of the 6 leaves have 8"));
}

/// tests/data/real/voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover: 23 host links came up at
/// 4xDDR among 4xQDR ones, and each of those 23 HCAs is a DDR-only ConnectX (`devid=0x6732`,
/// MT25408 "Hermon" DDR): each link is a slow-device finding naming the HCA and the switch port
/// with their GUIDs, not a cable to reseat.
#[test]
fn voltaire_real_dump_reports_each_ddr_link_with_both_ends_and_its_ddr_hca() {
    let d = discovery::parse(&real("voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover")).unwrap();
    let h = check(&d);
    assert_eq!(
        (h.shape.hosts, h.shape.cables, h.shape.switches.len()),
        (89, 159, 11)
    );
    assert!(h.findings.iter().all(|f| f.kind != Kind::SlowLink));
    let slow: Vec<_> = h
        .findings
        .iter()
        .filter(|f| f.kind == Kind::SlowDevice)
        .collect();
    assert_eq!(slow.len(), 23);
    for f in slow {
        assert!(f.what.starts_with("runs at 4xDDR (16 Gb/s), the top speed of the HCA \"MT25408 ConnectX Mellanox Technologies\" (ConnectX (MT25408 Hermon DDR, PCIe gen2), device id 0x6732), where 66 of the 89 links between hosts and leaves run at 4xQDR"), "{}", f.what);
        assert!(f.fix.starts_with("no cable fault"), "{}", f.fix);
        let (a, b) = &f.ends[0];
        let b = b.as_ref().unwrap();
        assert_eq!(a.device, "MT25408 ConnectX Mellanox Technologies");
        assert!(b.device.starts_with("Voltaire 4036"));
        assert!(a.guid.is_some() && b.guid.is_some() && a.port == 1 && b.port > 0);
    }
    // The HCAs that run QDR are QDR ConnectX parts (0x673c) or not decoded (0x6746, and the
    // Voltaire-made 0x5a5a): the devids are read, and only the DDR ones explain a slow link.
    let devids: std::collections::BTreeSet<u32> =
        d.nodes.iter().filter_map(|n| n.device_id).collect();
    assert_eq!(
        devids.into_iter().collect::<Vec<_>>(),
        [0x5a5a, 0x6732, 0x673c, 0x6746, 0xbd36]
    );
    let text = health_text(&h, "voltaire");
    assert!(text.contains("slow-device: runs at 4xDDR"), "{text}");
}

/// A DDR link whose HCA could run QDR is still a cable to reseat: the same dump with the first
/// DDR host's device id changed to a QDR ConnectX (0x673c) makes that link a slow-link finding,
/// and with its vendor changed the id is not decoded and the link is judged by its peers alone.
#[test]
fn a_slow_link_whose_chips_could_run_faster_stays_a_cable_fault() {
    let text = real("voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover");
    let first = text.find("devid=0x6732").unwrap();
    for changed in [
        format!("{}devid=0x673c{}", &text[..first], &text[first + 12..]),
        {
            let vendid = text[..first].rfind("vendid=0x2c9").unwrap();
            format!("{}vendid=0x8f1{}", &text[..vendid], &text[vendid + 12..])
        },
    ] {
        let h = check(&discovery::parse(&changed).unwrap());
        let kinds = |k: Kind| h.findings.iter().filter(|f| f.kind == k).count();
        assert_eq!((kinds(Kind::SlowLink), kinds(Kind::SlowDevice)), (1, 22));
        let f = h
            .findings
            .iter()
            .find(|f| f.kind == Kind::SlowLink)
            .unwrap();
        assert!(f.fix.ends_with("it should come up at 4xQDR"), "{}", f.fix);
    }
}

/// tests/data/real/avakas-qlogic12800-qdr-2016.ibnetdiscover-p: a QLogic 12800-180 director seen
/// chip by chip. Its 16 leaf boards (L101-L116) are the leaves, its 9 spine chips (S201A-S209A) the
/// spines, 2 links inside the chassis between every leaf and spine; 281 hosts, one of them
/// (node008, on L107 port 6) at 4xDDR. Repaired to QDR, the fabric is healthy.
#[test]
fn avakas_director_is_described_board_by_board_and_its_ddr_host_found() {
    let d = discovery::parse(&real("avakas-qlogic12800-qdr-2016.ibnetdiscover-p")).unwrap();
    let h = check(&d);
    assert_eq!(tiers(&h), [("leaf".into(), 16), ("spine".into(), 9)]);
    assert_eq!(
        (h.shape.hosts, h.shape.hcas, h.shape.cables, h.shape.subnets),
        (281, 281, 569, 1)
    );
    assert_eq!(h.shape.pairs.len(), 144);
    assert!(h.shape.pairs.iter().all(|p| p.links == 2));
    assert!(h
        .shape
        .switches
        .iter()
        .filter(|s| s.tier == Some(1))
        .all(|s| s.up_links == 18 && s.device.contains(" L1")));
    assert_eq!(h.findings.len(), 1, "{}", health_text(&h, "avakas"));
    let f = &h.findings[0];
    assert_eq!(f.kind, Kind::SlowLink);
    assert!(
        f.what.starts_with(
            "runs at 4xDDR (16 Gb/s) where 280 of the 281 links between hosts and leaves run at 4xQDR (32 Gb/s)"
        ),
        "{}",
        f.what
    );
    let (a, b) = &f.ends[0];
    let b = b.as_ref().unwrap();
    assert_eq!(
        (a.device.as_str(), a.guid.as_deref(), a.port),
        ("node008 HCA-1", Some("0x001175000077f8e0"), 1)
    );
    assert_eq!(
        (b.device.as_str(), b.guid.as_deref(), b.port),
        (
            "QLogic 12800-180 GUID=0x00066a00e8001310 L107",
            Some("0x00066a00ec002e04"),
            6
        )
    );
    assert!(check(&repaired(&d, &f.repair)).healthy);
}

/// tests/data/real/plafrim2-*: PlaFRIM's QLogic subnet has 5 leaves and 2 spines with 6 links on
/// every leaf-spine pair but one (5): that leaf is an uplink short. Its Mellanox subnet is one
/// IS5030 with one host at 4xSDR. Concatenated, the two are two subnets, each checked on its own:
/// the IS5030 is not a leaf with no uplinks, and the findings are those of the two apart.
#[test]
fn plafrim2_subnets_are_checked_each_on_its_own() {
    let qlogic = real("plafrim2-truescale-qdr-2016-subnet0.ibnetdiscover-p");
    let mellanox = real("plafrim2-is5030-qdr-2016-subnet1.ibnetdiscover-p");
    let h0 = check(&discovery::parse(&qlogic).unwrap());
    assert_eq!(tiers(&h0), [("leaf".into(), 5), ("spine".into(), 2)]);
    assert_eq!((h0.shape.hosts, h0.shape.cables), (96, 155));
    let mut per_pair: Vec<usize> = h0.shape.pairs.iter().map(|p| p.links).collect();
    per_pair.sort();
    assert_eq!(per_pair, [5, 6, 6, 6, 6, 6, 6, 6, 6, 6]);
    assert_eq!(h0.findings.len(), 1, "{}", health_text(&h0, "plafrim2"));
    assert_eq!(h0.findings[0].kind, Kind::FewUplinks);
    assert!(h0.findings[0]
        .what
        .contains("\"TS-i12k00066a00e30076ab\" has 11 uplinks where 4 of the 5 leaves have 12"));
    let h1 = check(&discovery::parse(&mellanox).unwrap());
    assert_eq!(tiers(&h1), [("leaf".into(), 1)]);
    assert_eq!(h1.findings.len(), 1, "{}", health_text(&h1, "plafrim2"));
    assert_eq!(h1.findings[0].kind, Kind::SlowLink);
    assert_eq!(h1.findings[0].ends[0].0.device, "bright mlx4_0");

    let both = check(&discovery::parse(&format!("{qlogic}{mellanox}")).unwrap());
    assert_eq!(
        (
            both.shape.subnets,
            both.shape.hosts,
            both.shape.hcas,
            both.shape.cables
        ),
        (2, 118, 119, 178)
    );
    let kinds: Vec<(Kind, String)> = both
        .findings
        .iter()
        .map(|f| (f.kind, f.what.clone()))
        .collect();
    let apart: Vec<(Kind, String)> = h1
        .findings
        .iter()
        .chain(&h0.findings)
        .map(|f| (f.kind, f.what.clone()))
        .collect();
    assert_eq!(kinds, apart, "{}", health_text(&both, "plafrim2"));
    assert!(health_text(&both, "plafrim2").contains(" in 2 subnets"));
}

/// tests/data/real/mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover: a one-tier lab fabric
/// of mixed generations. Host links run at FDR on 2 of 6 (ties go to the faster rate over QDR's
/// 2), so both QDR hosts and the SDR host are slow; the Switch-IB's three loop cables are each a
/// `loopback` and not peers of anything (the one link between the two switches is no slow link);
/// the timed-out query in line 1 is a `discovery-warning` naming its route. Gb/s print to one
/// decimal (FDR's 54.5), not as raw floats.
#[test]
fn switchib_lab_fabric_reports_its_loops_its_slow_hosts_and_the_failed_query() {
    let d = discovery::parse(&real(
        "mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover",
    ))
    .unwrap();
    let h = check(&d);
    assert_eq!(tiers(&h), [("leaf".into(), 2)]);
    assert_eq!((h.shape.hosts, h.shape.hcas, h.shape.cables), (5, 6, 10));
    let kinds: Vec<Kind> = h.findings.iter().map(|f| f.kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::SlowLink,
            Kind::SlowDevice,
            Kind::SlowDevice,
            Kind::Loopback,
            Kind::Loopback,
            Kind::Loopback,
            Kind::DiscoveryWarning
        ],
        "{}",
        health_text(&h, "lab")
    );
    let slow: Vec<(&str, u32, &str)> = h.findings[..3]
        .iter()
        .map(|f| {
            let b = f.ends[0].1.as_ref().unwrap();
            (f.ends[0].0.device.as_str(), b.port, &f.what[..16])
        })
        .collect();
    assert_eq!(
        slow,
        [
            ("r-ufm96 HCA-1", 8, "runs at 4xSDR (8"),
            ("r-ufm101 HCA-1", 2, "runs at 4xQDR (3"),
            ("r-ufm101 HCA-2", 3, "runs at 4xQDR (3")
        ]
    );
    assert!(h.findings[0]
        .what
        .contains("where 2 of the 6 links between hosts and leaves run at 4xFDR (54.5 Gb/s)"));
    let loops: Vec<(u32, u32)> = h.findings[3..6]
        .iter()
        .map(|f| (f.ends[0].0.port, f.ends[0].1.as_ref().unwrap().port))
        .collect();
    assert_eq!(loops, [(1, 2), (19, 21), (29, 30)]);
    let w = &h.findings[6];
    assert!(w
        .what
        .starts_with("line 1: the tool printed a failed query"));
    assert!(w.fix.contains("directed route 0,1,1,31"), "{}", w.fix);
    let text = health_text(&h, "lab");
    assert!(text.contains("down      6 links      281.1 Gb/s"), "{text}");
}

/// The HDR cluster of tests/data/real/sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover: 154 MQM8700
/// leaves (the ones with hosts), 160 spines (the MCS8500 directors' line chips), 86 cores (the
/// directors' 80 spine chips and the 6 MQM8700 without hosts, cabled to line chips); one link on
/// every pair. Five leaves have 19 uplinks where the others have 20 (counted by hand for
/// `0902-14ib0`: 19 switch ports and 16 hosts); the two UFM appliances' four HCAs run at 4xEDR;
/// 108 hosts show fewer than the 8 HCAs most have (3 with 7, the 2 appliances with 2, and the 103
/// HCAs left at their default description, each a host of its own).
#[test]
fn sat11_hdr_cluster_is_described_with_its_short_leaves_and_edr_appliances() {
    let h = check(&discovery::parse(&sat11()).unwrap());
    assert_eq!(
        tiers(&h),
        [
            ("leaf".into(), 154),
            ("spine".into(), 160),
            ("core".into(), 86)
        ]
    );
    assert_eq!(
        (h.shape.hosts, h.shape.hcas, h.shape.cables, h.shape.subnets),
        (383, 2328, 8723, 1)
    );
    assert!(h.shape.pairs.iter().all(|p| p.links == 1));
    let mut kinds: std::collections::BTreeMap<Kind, usize> = Default::default();
    for f in &h.findings {
        *kinds.entry(f.kind).or_default() += 1;
    }
    assert_eq!(
        kinds,
        [
            (Kind::SlowDevice, 4),
            (Kind::FewUplinks, 5),
            (Kind::MissingHca, 108)
        ]
        .into_iter()
        .collect(),
        "{}",
        health_text(&h, "sat11")
    );
    assert!(h.findings.iter().any(|f| f
        .what
        .contains("\"MF0;sat11-0101-0902-14ib0:MQM8700/U1\" has 19 uplinks where 149 of the 154 leaves have 20")));
    assert!(h
        .findings
        .iter()
        .filter(|f| f.kind == Kind::SlowDevice)
        .all(|f| f.ends[0].0.device.starts_with("sat11-0101-0902-0")
            && f.ends[0].0.device.contains("ufm HCA-")));
}
