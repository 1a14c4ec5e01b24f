//! Public discoveries of real clusters (tests/data/real, sources in its README): Mellanox SwitchX-2,
//! Voltaire and Mellanox InfiniScale-IV, QLogic TrueScale, Mellanox Switch-IB, and the examples of
//! infiniband-diags' manual, an IBM article and an Oracle manual. They read, import at the rates their
//! links run at, and verify against their own import; the excerpts that are not whole discoveries
//! are refused at the line at fault.

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

/// Switches, HCAs and links.
fn shape(d: &Discovered) -> (usize, usize, usize) {
    (
        count(d, NodeType::Switch),
        count(d, NodeType::Ca),
        d.links.len(),
    )
}

/// Links by rate, as [`rates`] gives them.
fn by_rate(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|&(r, n)| (r.to_string(), n)).collect()
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
    assert_eq!(shape(&d), (8, 144, 192));
    assert_eq!(rates(&d), by_rate(&[("4xFDR10", 47), ("4xQDR", 145)]));
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
    assert_eq!(shape(&d), (11, 89, 159));
    assert_eq!(rates(&d), by_rate(&[("4xDDR", 23), ("4xQDR", 136)]));
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

/// A QLogic 12800-180 director (TrueScale QDR) and its 281 QLogic HCAs, as `ibnetdiscover -s -p`
/// printed them: 834 progress lines first, then every port of every chip. The director's 16 leaf
/// boards and 9 spine chips are switches of their own, cabled inside the chassis.
#[test]
fn avakas_qlogic_director_reads_past_its_progress_lines_and_imports_as_qdr() {
    let text = real("avakas-qlogic12800-qdr-2016.ibnetdiscover-p");
    assert_eq!(discovery::detect(&text), Format::IbnetdiscoverPorts);
    let d = discovery::parse(&text).unwrap();
    assert_eq!(shape(&d), (25, 281, 569));
    assert_eq!(rates(&d), by_rate(&[("4xDDR", 1), ("4xQDR", 568)]));
    // Every chip lists 36 ports (cabled or not), and says which board of the chassis it is.
    assert!(d
        .nodes
        .iter()
        .filter(|n| n.kind == NodeType::Switch)
        .all(|n| n.reported_ports == Some(36)
            && n.desc
                .starts_with("QLogic 12800-180 GUID=0x00066a00e8001310 ")));
    // The one DDR link, named where the file names it (its first end at line 1004).
    let ddr: Vec<&railyard_ib::discovery::Link> = d
        .links
        .iter()
        .filter(|l| l.rate.is_some_and(|r| r.to_string() == "4xDDR"))
        .collect();
    assert_eq!(ddr.len(), 1);
    assert_eq!(ddr[0].line, 1004);
    let mut ends = [&d.nodes[ddr[0].a.0].desc, &d.nodes[ddr[0].b.0].desc];
    ends.sort();
    assert_eq!(
        ends,
        [
            "QLogic 12800-180 GUID=0x00066a00e8001310 L107",
            "node008 HCA-1"
        ]
    );
    let f = imports_and_verifies_against_itself("avakas", &d);
    assert_eq!(f.meta.tech, railyard_catalog::Tech::IbQdr);
    assert_eq!(f.servers.len(), 281);
}

/// PlaFRIM's two subnets of 2016, each discovered on its own (`ibnetdiscover -s -p`): QLogic
/// TrueScale edge and core switches with QLogic `qib0` HCAs, and one Mellanox IS5030 with
/// ConnectX HCAs. Concatenated they read as one file of two parts; the head node `bright` has an
/// HCA in each.
#[test]
fn plafrim2_subnets_read_alone_and_concatenated() {
    let qlogic = real("plafrim2-truescale-qdr-2016-subnet0.ibnetdiscover-p");
    let mellanox = real("plafrim2-is5030-qdr-2016-subnet1.ibnetdiscover-p");
    let d = discovery::parse(&qlogic).unwrap();
    assert_eq!(shape(&d), (7, 96, 155));
    assert_eq!(rates(&d), by_rate(&[("4xQDR", 155)]));
    assert_eq!(
        d.nodes.iter().filter(|n| n.desc.ends_with(" qib0")).count(),
        91
    );
    let f = imports_and_verifies_against_itself("plafrim2-0", &d);
    assert_eq!(f.servers.len(), 96);
    let d = discovery::parse(&mellanox).unwrap();
    assert_eq!(shape(&d), (1, 23, 23));
    assert_eq!(rates(&d), by_rate(&[("4xQDR", 22), ("4xSDR", 1)]));
    // 21 HCAs left at the default description are 21 servers, not one.
    let f = imports_and_verifies_against_itself("plafrim2-1", &d);
    assert_eq!(f.servers.len(), 23);
    let both = discovery::parse(&format!("{qlogic}{mellanox}")).unwrap();
    assert_eq!(shape(&both), (8, 119, 178));
    let f = imports_and_verifies_against_itself("plafrim2", &both);
    // `bright qib0` and `bright mlx4_0` are one server with two HCAs.
    assert_eq!(f.servers.len(), 118);
}

/// An EDR Switch-IB and an FDR SX6012 from an NVIDIA support article, whose first line is the
/// warning libibmad printed for a query that timed out: kept as a warning with its line and
/// route, not refused. Three cables loop the Switch-IB to itself; they are links like any other.
#[test]
fn switchib_lab_fabric_reads_past_its_timeout_warning_and_imports_as_edr() {
    let text = real("mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover");
    assert_eq!(discovery::detect(&text), Format::Ibnetdiscover);
    let d = discovery::parse(&text).unwrap();
    assert_eq!(shape(&d), (2, 6, 10));
    assert_eq!(
        rates(&d),
        by_rate(&[("4xEDR", 4), ("4xFDR", 3), ("4xQDR", 2), ("4xSDR", 1)])
    );
    assert_eq!(d.warnings.len(), 1);
    assert_eq!(d.warnings[0].line, 1);
    assert!(d.warnings[0]
        .text
        .ends_with("bad status 110; Connection timed out"));
    assert_eq!(d.warnings[0].route(), Some("0,1,1,31"));
    let loops: Vec<(u32, u32)> = d
        .links
        .iter()
        .filter(|l| l.a.0 == l.b.0)
        .map(|l| (l.a.1, l.b.1))
        .collect();
    assert_eq!(loops, [(1, 2), (19, 21), (29, 30)]);
    let f = imports_and_verifies_against_itself("switchib-lab", &d);
    assert_eq!(f.meta.tech, railyard_catalog::Tech::IbEdr);
    // r-ufm101 has two HCAs.
    assert_eq!(f.servers.len(), 5);
}

/// The file as kept, less the appliance's shell prompt PuTTY logged after the output (its last
/// line, line 33821).
fn sat11_without_prompt() -> String {
    let text = real("sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover");
    let cut = text.trim_end().rfind('\n').unwrap() + 1;
    text[..cut].to_string()
}

/// An HDR cluster's `ibnetdiscover` as a PuTTY session log kept it: PuTTY's header, CRLF line ends,
/// tabs dropped (`Switch41 "S-..."# ...`) and the UFM appliance's prompt after the last record.
/// The prompt is not discovery output and is refused at its line; without it the file reads:
/// 160 MQM8700 and the 240 chips of MCS8500 directors, 2,328 HCAs, 8,723 links.
#[test]
fn sat11_hdr_cluster_reads_from_its_putty_log() {
    let text = real("sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover");
    let e = discovery::parse(&text).unwrap_err();
    assert_eq!(e.line, 33821, "{e}");
    assert!(
        e.message
            .contains("sat11-0101-0902-02ufm [ mgmt-ha-active ] (config) #"),
        "{e}"
    );
    let text = sat11_without_prompt();
    assert_eq!(discovery::detect(&text), Format::Ibnetdiscover);
    let d = discovery::parse(&text).unwrap();
    assert_eq!(shape(&d), (400, 2328, 8723));
    assert_eq!(rates(&d), by_rate(&[("4xEDR", 4), ("4xHDR", 8719)]));
    let models = |m: &str| {
        d.nodes
            .iter()
            .filter(|n| n.kind == NodeType::Switch && n.desc.contains(m))
            .count()
    };
    assert_eq!(
        (
            models(":MQM8700/U1"),
            models(":MCS8500/L"),
            models(":MCS8500/S")
        ),
        (160, 160, 80)
    );
    assert!(d
        .nodes
        .iter()
        .filter(|n| n.kind == NodeType::Switch)
        .all(|n| n.reported_ports == Some(41)));
    let f = imports_and_verifies_against_itself("sat11", &d);
    assert_eq!(f.meta.tech, railyard_catalog::Tech::IbHdr);
    // 280 hosts by name, and 103 HCAs left at `MT4123 ConnectX6 Mellanox Technologies`, each a
    // server of its own.
    assert_eq!(f.servers.len(), 383);
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
    assert_eq!(rates(&d), by_rate(&[("4xEDR", 3)]));
    let sw = d.nodes.iter().find(|n| n.desc == "ib-i4l1s01").unwrap();
    // Ports 35 and 37 listed, not 1 to 37: the switch's port count is not known.
    assert_eq!((sw.ports, sw.reported_ports), (37, None));
}

/// `man ibnetdiscover`'s example (infiniband-diags, 2007): two of its links print a different rate
/// at each end (4xSDR at one, 1xSDR at the other). It was refused as a whole; it now reads, each such
/// link at the lower rate, and `check` names both.
#[test]
fn voltaire_manpage_links_whose_ends_disagree_read_at_the_lower_rate() {
    let text = real("voltaire-isr9024-sdr-2007-manpage.ibnetdiscover");
    let d = discovery::parse(&text).unwrap();
    assert_eq!(shape(&d), (2, 4, 7));
    assert_eq!(rates(&d), by_rate(&[("1xSDR", 2), ("4xSDR", 5)]));
    let seen: Vec<(usize, String, usize, String, String)> = d
        .rate_disagreements
        .iter()
        .map(|r| {
            (
                r.first.0,
                r.first.1.to_string(),
                r.second.0,
                r.second.1.to_string(),
                r.kept.to_string(),
            )
        })
        .collect();
    let row = |a: usize, x: &str, b: usize, y: &str, k: &str| {
        (a, x.to_string(), b, y.to_string(), k.to_string())
    };
    assert_eq!(
        seen,
        [
            row(15, "4xSDR", 26, "1xSDR", "1xSDR"),
            row(18, "4xSDR", 52, "1xSDR", "1xSDR")
        ]
    );
    let h = railyard_ib::health::check(&d);
    let disagreeing: Vec<String> = h
        .findings
        .iter()
        .filter(|f| f.kind == railyard_ib::health::Kind::RateDisagreement)
        .map(|f| {
            let (a, b) = &f.ends[0];
            format!(
                "{}:{} {}",
                a.device,
                a.port,
                b.as_ref().map_or(0, |b| b.port)
            )
        })
        .collect();
    assert_eq!(disagreeing.len(), 2, "{:#?}", h.findings);
    // `check --json` carries both reports and the rate kept, not only the sentence.
    let json = serde_json::to_value(&h).unwrap();
    let rates: Vec<&serde_json::Value> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "rate-disagreement")
        .map(|f| &f["rates"])
        .collect();
    assert_eq!(
        rates[0],
        &serde_json::json!({"reported": [{"line": 15, "rate": "4xSDR"}, {"line": 26, "rate": "1xSDR"}], "kept": "1xSDR"})
    );
    assert!(json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] != "rate-disagreement")
        .all(|f| f.get("rates").is_none()));
    imports_and_verifies_against_itself("voltaire-manpage", &d);
}

/// Two small public discoveries from vendor documents: IBM's (an InfiniScale III switch, one host
/// on its HCA's second port) and Oracle's (a Sun DCS 36 with a line holding one space between
/// records). Both read, import at their rate and verify against their import.
#[test]
fn vendor_article_dumps_read_and_import() {
    for (name, shape_seen, rate, tech) in [
        (
            "mt43132-sdr-2009-ibm-article.ibnetdiscover",
            (1, 2, 2),
            "4xSDR",
            railyard_catalog::Tech::IbSdr,
        ),
        (
            "sun-dcs36-qdr-oracle-manual.ibnetdiscover",
            (1, 1, 1),
            "4xQDR",
            railyard_catalog::Tech::IbQdr,
        ),
    ] {
        let d = discovery::parse(&real(name)).unwrap();
        assert_eq!(shape(&d), shape_seen, "{name}");
        assert_eq!(rates(&d), by_rate(&[(rate, shape_seen.2)]), "{name}");
        assert!(d.rate_disagreements.is_empty() && d.warnings.is_empty());
        let f = imports_and_verifies_against_itself(name, &d);
        assert_eq!(f.meta.tech, tech, "{name}");
    }
}
