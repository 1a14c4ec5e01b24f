//! Regression tests for issue 10 item 1 and issue 13 item 1, one per class of wrong answer the
//! discovery parsers gave: rates read as "no rate" (FDR10, `???`, `??`, lowercase), port counts,
//! empty discoveries, byte-order marks, mixed technologies, degraded links. The discoveries are what
//! ibnetdiscover prints for the seed-leaf-spine plan (`export::ibnetdiscover_text`), edited as the
//! issue edited a real one; the same edit on a real ibsim rediscovery runs through the binary in
//! crates/cli/tests/cli/interop.rs.

use railyard_ib::discovery::{self, Discovered};
use railyard_ib::rate::{Rate, Speed, Width};
use railyard_ib::verify::{verify, Kind, Options, Verification};

fn plan() -> railyard_fabric::Fabric {
    let spec = railyard_spec::presets::load("seed-leaf-spine").unwrap();
    railyard_fabric::build(&spec, &railyard_catalog::Catalog::builtin()).unwrap()
}

/// What ibnetdiscover prints for the plan as built: 160 links at 4xHDR.
fn discovered_text() -> String {
    railyard_ib::export::ibnetdiscover_text(&plan()).unwrap()
}

fn check(text: &str) -> Verification {
    let d = discovery::parse(text).unwrap_or_else(|e| panic!("{e}"));
    verify(&plan(), &d, Options::default())
}

fn kinds(r: &Verification) -> Vec<Kind> {
    let mut k: Vec<Kind> = r.findings.iter().map(|f| f.kind).collect();
    k.dedup();
    k
}

#[test]
fn the_unedited_discovery_matches() {
    let r = check(&discovered_text());
    assert!(r.matches, "{:?}", r.findings.first());
    assert_eq!(r.discovered_cables, 160);
}

#[test]
fn regression_fdr10_rate_was_read_as_no_rate_and_matched() {
    let r = check(&discovered_text().replace("4xHDR", "4xFDR10"));
    assert!(!r.matches);
    assert_eq!(kinds(&r), [Kind::WrongRate]);
    assert_eq!(r.findings.len(), 160);
    assert!(
        r.findings[0].fix.contains("runs at 4xFDR10, planned 4xHDR"),
        "{}",
        r.findings[0].fix
    );
}

#[test]
fn regression_unknown_speed_4x_question_marks_was_a_silent_pass() {
    let r = check(&discovered_text().replace("4xHDR", "4x???"));
    assert_eq!(kinds(&r), [Kind::UnknownRate]);
    assert_eq!(r.findings.len(), 160);
    assert!(
        r.findings[0].fix.contains("(4x???"),
        "{}",
        r.findings[0].fix
    );
}

#[test]
fn regression_unknown_width_question_marks_hdr_was_a_silent_pass() {
    let r = check(&discovered_text().replace("4xHDR", "??HDR"));
    assert_eq!(kinds(&r), [Kind::UnknownRate]);
    assert_eq!(r.findings.len(), 160);
}

#[test]
fn regression_missing_rate_was_a_silent_pass() {
    // Port lines that end at `lid N`, as a cut or hand-edited file does.
    let r = check(&discovered_text().replace(" 4xHDR", ""));
    assert_eq!(kinds(&r), [Kind::UnknownRate]);
    assert!(
        r.findings[0].fix.contains("gives no rate"),
        "{}",
        r.findings[0].fix
    );
}

#[test]
fn regression_lowercase_rate_was_read_as_no_rate() {
    let text = discovered_text().replace("4xHDR", "4xhdr");
    let d = discovery::parse(&text).unwrap();
    let hdr = Rate {
        width: Width::X4,
        speed: Speed::Hdr,
    };
    assert!(d.links.iter().all(|l| l.rate == Some(hdr)));
    assert!(check(&text).matches);
    // And a lowercase rate that differs from the plan is a difference.
    let r = check(&discovered_text().replace("4xHDR", "4xedr"));
    assert_eq!(kinds(&r), [Kind::WrongRate]);
}

#[test]
fn one_unknown_end_takes_the_other_ends_rate_and_contradicting_ends_keep_the_lower() {
    // ibnetdiscover prints `???` for a switch whose port 0 it could not read; the HCA's end of
    // each link still names the rate. Switch port lines to HCAs name an `"H-` node.
    let to_hca = |l: &str| l.starts_with('[') && l.contains("\t\"H-");
    let text: String = discovered_text()
        .lines()
        .map(|l| {
            if to_hca(l) {
                format!("{}\n", l.replace("4xHDR", "4x???"))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert!(check(&text).matches);
    assert_eq!(text.matches("4x???").count(), 80);
    let contradicting: String = discovered_text()
        .lines()
        .map(|l| {
            if to_hca(l) {
                format!("{}\n", l.replace("4xHDR", "1xHDR"))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    // Both ends known and different (the link retrained between ibnetdiscover's two reads, or the
    // output was edited): the link is kept at the lower rate, and the disagreement is kept.
    let d = discovery::parse(&contradicting).unwrap();
    assert_eq!(d.rate_disagreements.len(), 80);
    let x1 = Rate {
        width: Width::X1,
        speed: Speed::Hdr,
    };
    assert!(d.rate_disagreements.iter().all(|r| r.kept == x1));
    assert_eq!(d.links.iter().filter(|l| l.rate == Some(x1)).count(), 80);
    let r = check(&contradicting);
    assert!(!r.matches);
    assert!(
        kinds(&r).iter().all(|&k| k == Kind::WrongRate),
        "{:?}",
        kinds(&r)
    );
}

#[test]
fn regression_a_switch_claiming_255_ports_matched() {
    let text = discovered_text();
    let leaf01 = text
        .lines()
        .find(|l| l.starts_with("Switch") && l.contains("\"leaf01\""))
        .unwrap()
        .to_string();
    let r = check(&text.replace(&leaf01, &leaf01.replace("Switch\t40 ", "Switch\t255 ")));
    assert_eq!(kinds(&r), [Kind::WrongPortCount]);
    assert!(
        r.findings[0]
            .fix
            .starts_with("leaf01 reports 255 ports (line"),
        "{}",
        r.findings[0].fix
    );
    assert!(
        r.findings[0].fix.contains("QM8700 has 40 (up to 81"),
        "{}",
        r.findings[0].fix
    );
    // One more port for a SHARP aggregation node (41), or the ports split (80, 81 with the
    // aggregation node): not a difference. 82 is. (Fewer than the 40 cabled
    // ports is no discovery at all: a port line past the count is refused.)
    for (ports, finding) in [(41, false), (81, false), (82, true)] {
        let edited = leaf01.replace("Switch\t40 ", &format!("Switch\t{ports} "));
        let r = check(&text.replace(&leaf01, &edited));
        assert_eq!(!r.matches, finding, "{ports} ports: {:?}", r.findings);
    }
}

#[test]
fn regression_empty_and_header_only_discoveries_gave_six_differences() {
    for text in [
        "",
        "\n\n",
        "#\n# Topology file: generated on Mon Nov 30 13:39:41 2026\n#\n# Initiated from node 0002c90100000001 port 0002c90100000001\n",
    ] {
        let e = discovery::parse(text).unwrap_err();
        assert_eq!(e.line, 0, "{e}");
        assert!(e.message.starts_with("no nodes"), "{e}");
    }
    // Records without a single cabled port.
    let headers: String = discovered_text()
        .lines()
        .filter(|l| !l.starts_with('['))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = discovery::parse(&headers).unwrap_err();
    assert!(e.message.contains("86 nodes and no links"), "{e}");
    // The same for the other formats.
    assert!(discovery::parse("Switch: 0x0002c90100000001 leaf01:\n").is_err());
}

#[test]
fn regression_a_byte_order_mark_was_refused_with_an_invisible_character() {
    let text = format!("\u{feff}{}", discovered_text());
    assert!(check(&text).matches);
    // An invisible character anywhere else is refused, and the message shows it.
    let e = discovery::parse("vendid=0x2c9\n\u{200b}Switch 4 \"a\"\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("\\u{200b}Switch"), "{e}");
    let e = discovery::parse("\u{feff}\u{feff}vendid=0x2c9\n").unwrap_err();
    assert!(e.message.contains("\\u{feff}"), "{e}");
}

/// Two switches and three HCAs; the first link in the file runs at `first`, the other two at
/// `rest`.
fn three_links(first: &str, rest: &str) -> Discovered {
    let text = format!(
        "switchguid=0x10\nSwitch\t4 \"S-10\"\t\t# \"leaf\" base port 0 lid 1 lmc 0
[1]\t\"H-20\"[1](21) \t\t# \"a hca1\" lid 2 {first}
[2]\t\"H-30\"[1](31) \t\t# \"b hca1\" lid 3 {rest}
[3]\t\"H-40\"[1](41) \t\t# \"c hca1\" lid 4 {rest}

caguid=0x20\nCa\t1 \"H-20\"\t\t# \"a hca1\"
[1](21) \t\"S-10\"[1]\t\t# lid 2 lmc 0 \"leaf\" lid 1 {first}
caguid=0x30\nCa\t1 \"H-30\"\t\t# \"b hca1\"
[1](31) \t\"S-10\"[2]\t\t# lid 3 lmc 0 \"leaf\" lid 1 {rest}
caguid=0x40\nCa\t1 \"H-40\"\t\t# \"c hca1\"
[1](41) \t\"S-10\"[3]\t\t# lid 4 lmc 0 \"leaf\" lid 1 {rest}
"
    );
    discovery::parse(&text).unwrap()
}

#[test]
fn regression_the_imported_technology_followed_the_first_link() {
    use railyard_catalog::Tech;
    let tech = |first, rest| {
        railyard_ib::import::to_fabric(&three_links(first, rest), "t")
            .unwrap()
            .meta
            .tech
    };
    // Records without blank lines between them read as well; the first link is the odd one out.
    assert_eq!(tech("4xHDR", "4xEDR"), Tech::IbEdr);
    assert_eq!(tech("4xDDR", "4xHDR"), Tech::IbHdr);
    assert_eq!(tech("4xHDR", "4xqdr"), Tech::IbQdr);
}

#[test]
fn a_degraded_link_imports_at_its_real_rate() {
    // Issue 13: `import ibnet` stopped at the first 4xDDR link. The file imports, the fabric stays
    // HDR, and the degraded link carries 4 x 4 Gb/s.
    let f = railyard_ib::import::to_fabric(&three_links("4xDDR", "4xHDR"), "t").unwrap();
    f.check().unwrap();
    let mut rates: Vec<(f64, u32)> = f.network_links().map(|(_, l)| (l.gbps, l.lanes)).collect();
    rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(rates, [(16.0, 4), (200.0, 4), (200.0, 4)]);
    // A link whose rate is unknown cannot be imported: the error names its line.
    let e = railyard_ib::import::to_fabric(&three_links("4x???", "4xHDR"), "t").unwrap_err();
    assert!(
        matches!(
            e,
            railyard_ib::import::ImportError::UnknownRate { line: 3, .. }
        ),
        "{e}"
    );
    let e = e.to_string();
    assert!(e.starts_with("line 3: "), "{e}");
    assert!(e.contains("unknown rate (4x???)"), "{e}");
}

#[test]
fn every_speed_and_width_imports_and_verifies_against_its_own_import() {
    for speed in [
        "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR",
    ] {
        for width in ["1x", "2x", "4x", "8x", "12x"] {
            let rate = format!("{width}{speed}");
            let d = three_links(&rate, &rate);
            let f = railyard_ib::import::to_fabric(&d, "t").unwrap();
            assert_eq!(Some(f.meta.tech), Speed::from_name(speed).tech(), "{rate}");
            let r = verify(&f, &d, Options::default());
            assert!(r.matches, "{rate}: {:?}", r.findings);
        }
    }
}

#[test]
fn a_sharp_aggregation_node_is_part_of_its_switch() {
    // An NVIDIA Quantum switch lists its SHARP aggregation node as a CA on one more port (the
    // HDR fabric in tests/data/real shows it on port 81 of an HDR100-split switch).
    let text = discovered_text();
    let leaf01 = text
        .lines()
        .find(|l| l.starts_with("Switch") && l.contains("\"leaf01\""))
        .unwrap()
        .to_string();
    let an = "[41]\t\"H-0002c90100000f00\"[1](2c90100000f01) \t\t# \"Mellanox Technologies Aggregation Node\" lid 90 4xHDR\n";
    let with_an = text.replace(
        &format!("{leaf01}\n"),
        &format!("{}\n{an}", leaf01.replace("Switch\t40 ", "Switch\t41 ")),
    ) + "vendid=0x2c9\ncaguid=0x2c90100000f00\nCa\t1 \"H-0002c90100000f00\"\t\t# \"Mellanox Technologies Aggregation Node\"\n[1](2c90100000f01) \t\"S-0002c90100000001\"[41]\t\t# lid 90 lmc 0 \"leaf01\" lid 1 4xHDR\n";
    let d = discovery::parse(&with_an).unwrap();
    assert_eq!(d.links.len(), 161);
    assert!(d.nodes.iter().any(|n| n.is_aggregation_node()));
    let r = verify(&plan(), &d, Options::default());
    assert!(r.matches, "{:?}", r.findings);
    let f = railyard_ib::import::to_fabric(&d, "t").unwrap();
    assert_eq!((f.servers.len(), f.network_links().count()), (10, 160));
}

/// Two HCAs that share one description (an HCA renamed by hand to its neighbour's name, on its own
/// line of ibsim's real rediscovery of the plan): the second was "not in the plan: remove it or its
/// cables". It is a duplicate description, named with the line of the device that took the name.
#[test]
fn regression_a_duplicated_description_was_a_device_not_in_the_plan() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/ibsim/seed8.ibnetdiscover"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let line_of = |needle: &str| {
        text.lines()
            .position(|l| l.starts_with("Ca") && l.ends_with(needle))
            .map(|i| i + 1)
            .unwrap()
    };
    let (hca1, hca2) = (line_of("\"srv07 hca1\""), line_of("\"srv07 hca2\""));
    let edited: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let l = if i + 1 == hca2 {
                l.replace("\"srv07 hca2\"", "\"srv07 hca1\"")
            } else {
                l.to_string()
            };
            l + "\n"
        })
        .collect();
    let r = check(&edited);
    let unknown: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.kind == Kind::UnknownDevice)
        .map(|f| f.fix.as_str())
        .collect();
    assert_eq!(unknown.len(), 1, "{:?}", r.findings);
    let (first, second) = (hca1.min(hca2), hca1.max(hca2));
    assert!(
        unknown[0].contains(&format!(
            "\"srv07 hca1\" (CA, line {second}) has the description of line {first}, which matched the plan's \"srv07 hca1\": two devices share one description"
        )),
        "{}",
        unknown[0]
    );
}
