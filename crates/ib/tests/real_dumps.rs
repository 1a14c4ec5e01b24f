//! Public discoveries of real clusters (tests/data/real, sources in its README): they read, import at
//! the rates their links run at, and verify against their own import; the excerpts that are not whole
//! discoveries are refused at the line at fault.

use railyard_ib::discovery::{self, Discovered, Format, NodeType};
use railyard_ib::import::to_fabric;
use railyard_ib::verify::{verify, Options};
use std::collections::BTreeMap;

fn real(name: &str) -> String {
    let path = format!("{}/tests/data/real/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn count(d: &Discovered, kind: NodeType) -> usize {
    d.nodes.iter().filter(|n| n.kind == kind).count()
}

fn rates(d: &Discovered) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in &d.links {
        *m.entry(l.rate.map(|r| r.to_string()).unwrap_or_default())
            .or_default() += 1;
    }
    m
}

/// Imports `d` and checks the fabric keeps every link's rate, survives fabric.json, and verifies as
/// a match against the discovery it came from.
fn imports_and_verifies_against_itself(name: &str, d: &Discovered) -> railyard_fabric::Fabric {
    let f = to_fabric(d, name).unwrap();
    f.check().unwrap();
    assert_eq!(f.network_links().count(), d.links.len());
    let text = railyard_fabric::fabric_file::fabric_json(&f);
    assert_eq!(
        railyard_fabric::fabric_file::load_fabric_json(&text).unwrap(),
        f
    );
    let r = verify(&f, d, Options::default());
    assert!(r.matches, "{name}: {:?}", r.findings.first());
    f
}

#[test]
fn sx6036_qdr_fdr10_2014_reads_and_imports_as_qdr() {
    let text = real("sx6036-qdr-fdr10-2014.ibnetdiscover");
    assert_eq!(discovery::detect(&text), Format::Ibnetdiscover);
    let d = discovery::parse(&text).unwrap();
    assert_eq!(count(&d, NodeType::Switch), 8);
    assert_eq!(count(&d, NodeType::Ca), 144);
    assert_eq!(d.links.len(), 192);
    assert_eq!(
        rates(&d),
        BTreeMap::from([("4xFDR10".to_string(), 47), ("4xQDR".to_string(), 145)])
    );
    assert!(d
        .nodes
        .iter()
        .filter(|n| n.kind == NodeType::Switch)
        .all(|n| n.reported_ports == Some(36) && n.desc.ends_with(":SX6036/U1")));
    let f = imports_and_verifies_against_itself("sx6036", &d);
    assert_eq!(f.meta.tech, railyard_catalog::Tech::IbQdr);
    assert_eq!(f.servers.len(), 144);
    // FDR10 inter-switch links stay 4 x 10 Gb/s, QDR host links 4 x 8 Gb/s.
    let mut by_rate: BTreeMap<(u64, u32), usize> = BTreeMap::new();
    for (_, l) in f.network_links() {
        *by_rate.entry((l.gbps.round() as u64, l.lanes)).or_default() += 1;
    }
    assert_eq!(by_rate, BTreeMap::from([((32, 4), 145), ((40, 4), 47)]));
}

#[test]
fn voltaire_infiniscale_2020_keeps_its_degraded_ddr_links() {
    let text = real("voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover");
    let d = discovery::parse(&text).unwrap();
    assert_eq!(count(&d, NodeType::Switch), 11);
    assert_eq!(count(&d, NodeType::Ca), 89);
    assert_eq!(d.links.len(), 159);
    assert_eq!(
        rates(&d),
        BTreeMap::from([("4xDDR".to_string(), 23), ("4xQDR".to_string(), 136)])
    );
    // Descriptions run to their closing quote, `#` included.
    assert!(d
        .nodes
        .iter()
        .any(|n| n.desc == "Voltaire 4036 # 4036-8C5C"));
    let f = imports_and_verifies_against_itself("x5", &d);
    assert_eq!(f.meta.tech, railyard_catalog::Tech::IbQdr);
    // 89 HCAs that share one default description are 89 servers, not one.
    assert_eq!(f.servers.len(), 89);
    let ddr = f
        .network_links()
        .filter(|(_, l)| l.gbps == 16.0 && l.lanes == 4)
        .count();
    assert_eq!(ddr, 23);
}

#[test]
fn excerpts_that_are_not_whole_discoveries_are_refused_at_their_line() {
    let osc = real("osc-edr-excerpt.ibnetdiscover-p");
    assert_eq!(discovery::detect(&osc), Format::IbnetdiscoverPorts);
    let e = discovery::parse(&osc).unwrap_err();
    assert_eq!(e.line, 6, "{e}");
    assert!(e.message.contains("one-sided"), "{e}");
    let hdr = real("hdr-excerpt.ibnetdiscover-p");
    let e = discovery::parse(&hdr).unwrap_err();
    assert_eq!(e.line, 1, "{e}");
    // Cut to the lines whose links show from both ends, the EDR excerpt reads: `4x ???` and
    // `4x SDR` sit on unconnected ports and say nothing about a link.
    let whole: String = osc
        .lines()
        .filter(|l| !l.starts_with("SW  1719  1 "))
        .map(|l| format!("{l}\n"))
        .collect();
    let d = discovery::parse(&whole).unwrap();
    assert_eq!(d.links.len(), 3);
    assert_eq!(rates(&d), BTreeMap::from([("4xEDR".to_string(), 3)]));
    let sw = d.nodes.iter().find(|n| n.desc == "ib-i4l1s01").unwrap();
    // Ports 35 and 37 listed, not 1 to 37: the switch's port count is not known.
    assert_eq!((sw.ports, sw.reported_ports), (37, None));
}
