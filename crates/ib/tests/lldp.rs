//! LLDP neighbour tables: published lldpcli outputs (tests/data/lldp, sources in its README), the
//! tables railyard writes for a RoCE plan read back and verified, with a swap and a missing cable
//! injected, and the parser fuzzed (never a panic; every error names a line of its input).
//! Failures proptest finds are kept in `lldp.proptest-regressions` and replayed first.

use proptest::prelude::*;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_ib::lldp::{self, Neighbour, Table};
use railyard_ib::verify::{verify_with, Kind, Options, Site};
use railyard_spec::{presets, ClusterSpec};
use std::collections::BTreeMap;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/data/lldp/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn one(
    local: &str,
    remote: &str,
    port: &str,
    bridge: Option<bool>,
) -> (String, String, String, Option<bool>) {
    (local.into(), remote.into(), port.into(), bridge)
}

fn read(name: &str) -> Vec<(String, String, String, Option<bool>)> {
    lldp::parse(&data(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .into_iter()
        .map(|n| (n.local, n.remote, n.remote_port, n.remote_bridge))
        .collect()
}

#[test]
fn published_lldpcli_outputs_read_in_every_format() {
    // lldpd's own test: the neighbour's port id is a MAC, its description the interface.
    for f in [
        "lldpd-neighbors.txt",
        "lldpd-neighbors.json",
        "lldpd-neighbors.json0",
    ] {
        assert_eq!(
            read(f),
            vec![one("eth0", "ns-2.example.com", "eth1", Some(false))],
            "{f}"
        );
    }
    // VyOS: an ifname port id wins over a description that is no interface name.
    assert_eq!(
        read("vyos-r4.txt"),
        vec![one("eth0", "r16", "eth0", Some(false))]
    );
    // SONiC on a DX010: a port name with a space, no description, no capabilities.
    assert_eq!(
        read("sonic-dx010-excerpt.txt"),
        vec![one(
            "Ethernet104",
            "sw0",
            "FortyGigabitEthernet 1/0/49",
            None
        )]
    );
    assert_eq!(lldp::port_number("FortyGigabitEthernet 1/0/49"), Some(49));
    // lldpd's bug of one port listed twice: two entries, one cable.
    let td3 = read("sonic-td3-two-neighbours-excerpt.txt");
    assert_eq!(td3.len(), 2);
    assert_eq!(
        td3[0],
        one("Ethernet38", "TD3-1", "58:69:6c:fb:22:08", Some(true))
    );
    let table = Table {
        device: "sonic".into(),
        source: "td3".into(),
        neighbours: lldp::parse(&data("sonic-td3-two-neighbours-excerpt.txt")).unwrap(),
    };
    let d = lldp::to_discovered(&[table], |d| Some(d == "sonic")).unwrap();
    assert_eq!(d.links.len(), 1);
    // The caller says TD3-1 is no switch, so its port (a MAC) is a host interface of its own.
    assert_eq!(d.nodes.len(), 2);
    assert_eq!(d.nodes[1].desc, "TD3-1 58:69:6c:fb:22:08");
}

fn plan(name: &str) -> Fabric {
    let spec: ClusterSpec = presets::load(name).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn tables_of(files: &BTreeMap<String, String>) -> Vec<Table> {
    files
        .iter()
        .map(|(device, text)| Table {
            device: device.clone(),
            source: format!("{device}.json"),
            neighbours: lldp::parse(text).unwrap_or_else(|e| panic!("{device}: {e}")),
        })
        .collect()
}

/// lldpcli's plain-text form of a table, as lldpd prints it.
fn as_text(neighbours: &[Neighbour]) -> String {
    let mut o = String::from("-------------------------------------------------------------------------------\nLLDP neighbors:\n-------------------------------------------------------------------------------\n");
    for n in neighbours {
        o.push_str(&format!(
            "Interface:    {}, via: LLDP, RID: 1, Time: 0 day, 00:01:00\n  Chassis:\n    ChassisID:    mac 00:00:00:00:00:01\n    SysName:      {}\n    Capability:   Bridge, {}\n  Port:\n    PortID:       ifname {}\n    TTL:          120\n-------------------------------------------------------------------------------\n",
            n.local,
            n.remote,
            if n.remote_bridge == Some(true) { "on" } else { "off" },
            n.remote_port
        ));
    }
    o
}

fn check(f: &Fabric, tables: &[Table]) -> railyard_ib::verify::Verification {
    let switches: Vec<&str> = f
        .nodes
        .iter()
        .filter(|n| n.is_switch())
        .map(|n| n.name.as_str())
        .collect();
    let d = lldp::to_discovered(tables, |d| Some(switches.contains(&d))).unwrap();
    verify_with(
        f,
        &d,
        Options::default(),
        Site {
            without_rates: true,
            ..Site::default()
        },
    )
}

#[test]
fn a_roce_plan_verifies_against_its_own_tables_in_both_forms() {
    let f = plan("roce-400g-sn5600");
    let files = lldp::expected_tables(&f).unwrap();
    // 128 servers, 16 leaves and 8 spines.
    assert_eq!(files.len(), 152);
    let tables = tables_of(&files);
    let r = check(&f, &tables);
    assert!(r.matches, "{:?}", r.findings.first());
    assert_eq!(r.discovered_cables, f.network_links().count());
    // The plain-text form reads to the same fabric.
    let text: Vec<Table> = tables
        .iter()
        .map(|t| Table {
            neighbours: lldp::parse(&as_text(&t.neighbours)).unwrap(),
            ..t.clone()
        })
        .collect();
    let ends = |ts: &[Table]| -> Vec<(String, String, String, Option<bool>)> {
        ts.iter()
            .flat_map(|t| &t.neighbours)
            .map(|n| {
                (
                    n.local.clone(),
                    n.remote.clone(),
                    n.remote_port.clone(),
                    n.remote_bridge,
                )
            })
            .collect()
    };
    assert_eq!(ends(&text), ends(&tables));
    assert!(check(&f, &text).matches);
    // Switch tables alone (hosts without lldpd) still show every cable.
    let switches_only: Vec<Table> = tables
        .iter()
        .filter(|t| !t.device.contains("srv"))
        .cloned()
        .collect();
    assert!(check(&f, &switches_only).matches);
}

#[test]
fn an_injected_swap_and_a_missing_cable_are_found_with_their_cable_ids() {
    let f = plan("roce-400g-sn5600");
    let mut tables = tables_of(&lldp::expected_tables(&f).unwrap());
    let t = |tables: &mut Vec<Table>, d: &str| tables.iter().position(|t| t.device == d).unwrap();
    // Swap: the cables on su1-leaf1 swp1 and swp2 exchange places (srv01 hca1 <-> srv02 hca1).
    let leaf = t(&mut tables, "su1-leaf1");
    for n in &mut tables[leaf].neighbours {
        match n.local.as_str() {
            "swp1" => n.remote = "su1-srv02".into(),
            "swp2" => n.remote = "su1-srv01".into(),
            _ => {}
        }
    }
    for (srv, port) in [("su1-srv01", "swp2"), ("su1-srv02", "swp1")] {
        let i = t(&mut tables, srv);
        for n in &mut tables[i].neighbours {
            if n.local == "hca1" {
                n.remote_port = port.into();
            }
        }
    }
    // Missing: su1-srv05 hca3 unplugged, gone from both tables.
    let leaf3 = t(&mut tables, "su1-leaf3");
    tables[leaf3].neighbours.retain(|n| n.remote != "su1-srv05");
    let srv5 = t(&mut tables, "su1-srv05");
    tables[srv5].neighbours.retain(|n| n.local != "hca3");
    let r = check(&f, &tables);
    let kinds: Vec<Kind> = r.findings.iter().map(|x| x.kind).collect();
    assert_eq!(
        kinds,
        vec![Kind::MissingCable, Kind::Swap],
        "{:#?}",
        r.findings
    );
    assert_eq!(
        r.findings[0].fix,
        "add a cable su1-leaf3[5] - su1-srv05 hca3[1]"
    );
    assert_eq!(
        r.findings[1].fix,
        "the cables at su1-leaf1[1] and su1-leaf1[2] are swapped: exchange them"
    );
    // Every planned cable involved carries its cabling.csv id.
    let ids = |k: usize| -> Vec<Option<String>> {
        r.findings[k].cables.iter().map(|c| c.id.clone()).collect()
    };
    assert!(ids(0)[0].is_some());
    assert_eq!(
        ids(1).iter().filter(|i| i.is_some()).count(),
        2,
        "{:?}",
        r.findings[1].cables
    );
    // ... the id cabling.csv gives the cable with these ends.
    let cables = f.cables();
    for c in r.findings.iter().flat_map(|x| &x.cables) {
        let Some(id) = c.id.as_deref() else { continue };
        let l = f.link(cables[railyard_fabric::cable_index(id, cables.len()).unwrap()]);
        let mut ends = [
            railyard_ib::export::node_desc(&f, f.port(l.a).node),
            railyard_ib::export::node_desc(&f, f.port(l.b).node),
        ];
        ends.sort();
        let mut want = [c.a.device.clone(), c.b.device.clone()];
        want.sort();
        assert_eq!(ends, want, "{c}");
    }
}

#[test]
fn conflicting_tables_name_both_sources() {
    let f = plan("roce-400g-sn5600");
    let mut tables = tables_of(&lldp::expected_tables(&f).unwrap());
    // su1-leaf1 says swp1 reaches srv02, while srv01's table says its hca1 reaches swp1.
    let leaf = tables.iter().position(|t| t.device == "su1-leaf1").unwrap();
    tables[leaf].neighbours[0].remote = "su1-srv02".into();
    let switches: Vec<String> = f
        .nodes
        .iter()
        .filter(|n| n.is_switch())
        .map(|n| n.name.clone())
        .collect();
    let e = lldp::to_discovered(&tables, |d| Some(switches.iter().any(|s| s == d))).unwrap_err();
    assert!(e.to_string().contains("line"), "{e}");
    assert!(e.message.contains("su1-leaf1[1]"), "{e}");
}

#[test]
fn errors_name_the_line() {
    for (text, line, says) in [
        ("", 0, "empty"),
        ("hello\n", 0, "no LLDP neighbours"),
        ("LLDP neighbors:\n  SysName: x\n", 2, "before any Interface"),
        (
            "Interface:    eth0, via: LLDP\n  Port:\n    PortID: ifname swp1\n",
            1,
            "no SysName",
        ),
        (
            "Interface:    eth0, via: LLDP\n    SysName: a\n",
            1,
            "no PortID",
        ),
        (
            "{\"lldp\": {\"interface\": {\"eth0\": {\"chassis\": {\"a\": {}}}}}}",
            1,
            "no port",
        ),
        ("{\n\"lldp\": [1,\n", 2, "not valid JSON"),
        ("{\"x\": 1}", 1, "no \"lldp\""),
    ] {
        let e = lldp::parse(text).unwrap_err();
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.message.contains(says), "{text:?}: {e}");
    }
    // An empty table is a table.
    assert_eq!(lldp::parse("{\"lldp\": {}}").unwrap(), vec![]);
}

/// Every line number an error gives is a line of the input (0: the whole file).
fn line_ok(text: &str, line: usize) -> bool {
    line <= text.lines().count().max(1)
}

fn samples() -> &'static [String] {
    static SAMPLES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SAMPLES.get_or_init(build_samples)
}

fn build_samples() -> Vec<String> {
    let mut v: Vec<String> = [
        "lldpd-neighbors.txt",
        "lldpd-neighbors.json",
        "lldpd-neighbors.json0",
        "vyos-r4.txt",
        "sonic-dx010-excerpt.txt",
        "sonic-td3-two-neighbours-excerpt.txt",
    ]
    .iter()
    .map(|f| data(f))
    .collect();
    let f = plan("roce-400g-sn5600");
    v.extend(lldp::expected_tables(&f).unwrap().into_values().take(3));
    // InfiniBand fabrics have no LLDP tables.
    assert!(lldp::expected_tables(&plan("seed-two-switch"))
        .unwrap_err()
        .0
        .contains("valid technologies: roce"));
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_never_panics_on_any_text(text in "\\PC{0,400}") {
        if let Err(e) = lldp::parse(&text) {
            prop_assert!(line_ok(&text, e.line), "line {} of {:?}", e.line, text);
        }
    }

    #[test]
    fn parse_never_panics_on_mutated_samples(
        which in 0usize..9,
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        truncate in any::<prop::sample::Index>(),
    ) {
        let all = samples();
        let mut bytes = all[which % all.len()].clone().into_bytes();
        for (at, b) in cuts {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        let keep = truncate.index(bytes.len() + 1);
        bytes.truncate(keep);
        let text = String::from_utf8_lossy(&bytes).to_string();
        match lldp::parse(&text) {
            Err(e) => prop_assert!(line_ok(&text, e.line), "line {} of {:?}", e.line, text),
            Ok(neighbours) => {
                let t = Table { device: "dev".into(), source: "x".into(), neighbours };
                let _ = lldp::to_discovered(&[t], |_| None);
            }
        }
    }

    #[test]
    fn token_soups_never_panic(
        parts in proptest::collection::vec(
            prop::sample::select(vec![
                "Interface:", " eth0,", " via: LLDP", "\n", "  SysName:", " sw1", "ChassisID: mac 00:11",
                "PortID:", " ifname", " swp", "1", "PortDescr:", "Capability:", " Bridge, on", "----",
                "{", "}", "[", "]", "\"lldp\"", ":", ",", "\"interface\"", "\"chassis\"", "\"port\"",
                "\"id\"", "\"value\"", "\"name\"", "\"type\"", "\"ifname\"", "\"descr\"", "true", "null",
            ]),
            0..60,
        )
    ) {
        let text: String = parts.concat();
        if let Err(e) = lldp::parse(&text) {
            prop_assert!(line_ok(&text, e.line), "line {} of {:?}", e.line, text);
        }
    }
}
