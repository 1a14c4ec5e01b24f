//! Property-based fuzzing of every parser of tool output: ibnetdiscover (default form and `-p`),
//! iblinkinfo (default form and `-l`), the format detector in front of them, and OpenSM's LFT dump.
//! Whatever the text, a parser returns a value or an error that names a line of the input (0: the
//! file as a whole) and never panics; what parses also imports and verifies without panicking.
//!
//! Inputs are arbitrary strings, soups of the tokens these formats are made of, and byte-level
//! mutations and truncations of valid samples, of the real dumps in tests/data/real and of the real
//! tools' output on ibsim in tests/data/ibsim (ibnetdiscover, `-p`, iblinkinfo, OpenSM's LFT dump).
//! An LFT dump that parses is also matched against a plan and routed over it without panicking. Case counts
//! are bounded so each test runs in a few seconds in CI; set PROPTEST_CASES to fuzz longer. Failures
//! proptest finds are kept in `parser_fuzz.proptest-regressions` and replayed first on every run.

use proptest::prelude::*;
use railyard_ib::{discovery, iblinkinfo, ibnet, lft};

/// A valid topology to mutate: two switches and two CAs, as ibnetdiscover prints them.
const VALID: &str = r#"vendid=0x2c9
devid=0xd2f0
sysimgguid=0x2c90001000002
switchguid=0x2c90001000002(2c90001000002)
Switch	4 "S-0002c90001000002"		# "leafB" base port 0 lid 0 lmc 0
[3]	"S-0002c90001000001"[3]		# "leafA" lid 0 4xHDR

vendid=0x2c9
switchguid=0x2c90001000001(2c90001000001)
Switch	4 "S-0002c90001000001"		# "leafA" base port 0 lid 0 lmc 0
[1]	"H-0008000000000010"[1](8000000000011) 		# "srv1 hca1" lid 0 4xHDR
[2]	"H-0008000000000020"[1](8000000000021) 		# "srv2 hca1" lid 0 4xFDR10
[3]	"S-0002c90001000002"[3]		# "leafB" lid 0 4xHDR

caguid=0x8000000000010
Ca	1 "H-0008000000000010"		# "srv1 hca1"
[1](8000000000011) 	"S-0002c90001000001"[1]		# lid 0 lmc 0 "leafA" lid 0 4x???

caguid=0x8000000000020
Ca	1 "H-0008000000000020"		# "srv2 hca1"
[1](8000000000021) 	"S-0002c90001000001"[2]		# lid 0 lmc 0 "leafA" lid 0 ??FDR10
"#;

/// The same fabric as `ibnetdiscover -p` prints it.
const VALID_PORTS: &str =
    "SW     0  3 0x0002c90001000002 4x HDR - SW     0  3 0x0002c90001000001 ( 'leafB' - 'leafA' )
SW     0  4 0x0002c90001000002 4x ???                                    'leafB'
SW     0  1 0x0002c90001000001 4x HDR - CA     0  1 0x0008000000000011 ( 'leafA' - 'srv1 hca1' )
SW     0  2 0x0002c90001000001 4x FDR10 - CA     0  1 0x0008000000000021 ( 'leafA' - 'srv2 hca1' )
SW     0  3 0x0002c90001000001 4x HDR - SW     0  3 0x0002c90001000002 ( 'leafA' - 'leafB' )
CA     0  1 0x0008000000000011 4x HDR - SW     0  1 0x0002c90001000001 ( 'srv1 hca1' - 'leafA' )
CA     0  1 0x0008000000000021 ?? FDR10 - SW     0  2 0x0002c90001000001 ( 'srv2 hca1' - 'leafA' )
";

/// The same fabric as iblinkinfo prints it (format of infiniband-diags 44 on ibsim).
const VALID_LINKS: &str = "CA: srv1 hca1:
      0x0008000000000011      3    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       2    1[  ] \"leafA\" ( )
CA: srv2 hca1:
      0x0008000000000021      4    1[  ] ==( 4X 10.0 Gbps (FDR10) Active/  LinkUp)==>       2    2[  ] \"leafA\" (Could be 12X )
Switch: 0x0002c90001000002 leafB:
           1    1[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
           1    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
           1    3[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       2    3[  ] \"leafA\" ( )
           1    4[  ] ==( undefined (9) undefined (64) Active/  LinkUp)==>    \"Port not available\"
Switch: 0x0002c90001000001 leafA:
           2    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       3    1[  ] \"srv1 hca1\" ( )
           2    2[  ] ==( 4X 10.0 Gbps (FDR10) Active/  LinkUp)==>       4    1[  ] \"srv2 hca1\" ( ) (HOQ:19 VL_Stall:7)
           2    3[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       1    3[  ] \"leafB\" ( )
";

/// `iblinkinfo -l` of a link.
const VALID_LINE_MODE: &str = "0x0008000000000011 \"                     srv1 hca1\"      3    1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  0x0002c90001000001      2    1[  ] \"leafA\" ( )
0x0002c90001000001 \"                         leafA\"      2    1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  0x0008000000000011      3    1[  ] \"srv1 hca1\" ( )
0x0002c90001000001 \"                         leafA\"      2    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
";

/// An OpenSM LFT dump, as `opensm -D 0x40 --dump_files_dir` writes it.
const VALID_LFT: &str = "Unicast lids [0-3] of switch Lid 2 guid 0x0002c90001000001 ('leafA'):
0x0001 003 # Switch portguid 0x0002c90001000002: 'leafB'
0x0002 000 # Switch portguid 0x0002c90001000001: 'leafA'
0x0003 001 # Channel Adapter portguid 0x0008000000000011: 'srv1 hca1'
3 lids dumped
Unicast lids [0-3] of switch Lid 1 guid 0x0002c90001000002 ('leafB'):
0x0001 000 # Switch portguid 0x0002c90001000002: 'leafB'
0x0002 003 # Switch portguid 0x0002c90001000001: 'leafA'
0x0003 003 # Channel Adapter portguid 0x0008000000000011: 'srv1 hca1'
3 lids dumped
";

const SX6036: &str = include_str!("data/real/sx6036-qdr-fdr10-2014.ibnetdiscover");
const X5: &str = include_str!("data/real/voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover");
const OSC: &str = include_str!("data/real/osc-edr-excerpt.ibnetdiscover-p");
const PLAFRIM2_1: &str = include_str!("data/real/plafrim2-is5030-qdr-2016-subnet1.ibnetdiscover-p");
const LAB: &str = include_str!("data/real/mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover");
const SIM_DISC: &str = include_str!("data/ibsim/seed8.ibnetdiscover");
const SIM_PORTS: &str = include_str!("data/ibsim/seed8.ibnetdiscover-p");
const SIM_LINKS: &str = include_str!("data/ibsim/seed8.iblinkinfo");
const SIM_LFT: &str = include_str!("data/ibsim/seed8.opensm-lfts.dump");

/// Checks an error's line is one of the input's (or 0, the whole file) and says something.
fn line_ok(line: usize, message: &str, text: &str) {
    let lines = text.lines().count().max(1);
    assert!(line <= lines, "error line {line} of {lines}: {message}");
    assert!(!message.is_empty());
}

/// Every discovery parser on `text`; what parses must be consistent, import and verify.
fn check(text: &str) {
    for result in [
        discovery::parse(text),
        ibnet::parse(text),
        iblinkinfo::parse(text),
    ] {
        match result {
            Ok(d) => {
                assert!(!d.nodes.is_empty() && !d.links.is_empty());
                for l in &d.links {
                    assert!(l.a.0 < d.nodes.len() && l.b.0 < d.nodes.len());
                    assert!(l.a.1 >= 1 && l.a.1 <= d.nodes[l.a.0].ports);
                    assert!(l.b.1 >= 1 && l.b.1 <= d.nodes[l.b.0].ports);
                }
                // Importing and verifying a parsed discovery never panics either.
                let _ = railyard_ib::import::to_fabric(&d, "fuzz");
                let _ = railyard_ib::verify::verify(&plan(), &d, Default::default());
                // So does checking its health, and every finding names a node of the discovery.
                let h = railyard_ib::health::check(&d);
                assert_eq!(h.healthy, h.findings.is_empty());
                for f in &h.findings {
                    let repaired = railyard_ib::health::repaired(&d, &f.repair);
                    let _ = railyard_ib::health::check(&repaired);
                    let _ = railyard_ib::import::to_fabric(&repaired, "fuzz");
                }
                let _ = railyard_ib::health::health_text(&h, "fuzz");
            }
            Err(e) => line_ok(e.line, &e.message, text),
        }
    }
}

fn check_lft(text: &str) {
    match lft::parse(text) {
        Err(e) => line_ok(e.line, &e.message, text),
        // What parses is matched against the plan and routed over it, never panicking.
        Ok(lfts) => {
            let f = seed8();
            if lft::check_matches(f, &lfts).is_ok() {
                let router = lft::Router::new(f, &lfts);
                let ports = hca_ports(f);
                for (i, &src) in ports.iter().enumerate().take(4) {
                    let _ = router.route(src, ports[(i + 1) % ports.len()]);
                }
            }
        }
    }
}

/// The plan tests/data/ibsim was exported from: seed-leaf-spine with 8 servers.
fn seed8() -> &'static railyard_fabric::Fabric {
    use std::sync::OnceLock;
    static F: OnceLock<railyard_fabric::Fabric> = OnceLock::new();
    F.get_or_init(|| {
        let mut raw = railyard_spec::presets::raw("seed-leaf-spine").unwrap();
        railyard_spec::Overrides {
            servers: Some(8),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = railyard_spec::ClusterSpec::from_raw(&raw, "seed8").unwrap();
        railyard_fabric::build(&spec, &railyard_catalog::Catalog::builtin()).unwrap()
    })
}

/// Every cabled HCA port of a fabric.
fn hca_ports(f: &railyard_fabric::Fabric) -> Vec<railyard_fabric::PortId> {
    f.network_links()
        .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::ServerLeaf)
        .map(|(_, l)| l.a)
        .collect()
}

fn plan() -> railyard_fabric::Fabric {
    use std::sync::OnceLock;
    static PLAN: OnceLock<railyard_fabric::Fabric> = OnceLock::new();
    PLAN.get_or_init(|| {
        let spec = railyard_spec::presets::load("seed-two-switch").unwrap();
        railyard_fabric::build(&spec, &railyard_catalog::Catalog::builtin()).unwrap()
    })
    .clone()
}

/// `text` with the byte at `pos` deleted or replaced (read back lossily, as a file would be).
fn mutate(text: &str, pos: usize, byte: u8, delete: bool) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let pos = pos % bytes.len().max(1);
    if bytes.is_empty() {
        return String::new();
    }
    if delete {
        bytes.remove(pos);
    } else {
        bytes[pos] = byte;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `text` cut at a character boundary at or before `cut`.
fn truncate(text: &str, cut: usize) -> &str {
    let mut end = cut.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Pieces these formats are made of, to build plausible garbage.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Switch".to_string()),
        Just("Ca".to_string()),
        Just("Rt".to_string()),
        Just("Switch:".to_string()),
        Just("CA:".to_string()),
        Just("\"S-0002c90001000001\"".to_string()),
        Just("\"H-0008000000000010\"".to_string()),
        Just("[1]".to_string()),
        Just("[3]".to_string()),
        Just("[0]".to_string()),
        Just("[ext 3]".to_string()),
        Just("[999999999999]".to_string()),
        Just("(8000000000011)".to_string()),
        Just("switchguid=0x2c90001000001".to_string()),
        Just("caguid=0xZZ".to_string()),
        Just("# \"leafA\" lid 5 4xHDR".to_string()),
        Just("lid".to_string()),
        Just("4x???".to_string()),
        Just("??HDR".to_string()),
        Just("12xfdr10".to_string()),
        Just("#".to_string()),
        Just("\"".to_string()),
        Just("SW 0 3 0x0002c90001000002 4x HDR -".to_string()),
        Just("CA".to_string()),
        Just("( 'leafA' - 'srv1 hca1' )".to_string()),
        Just("'".to_string()),
        Just("==( 4X 53.125 Gbps Active/  LinkUp)==>".to_string()),
        Just("==(  Down/ Polling)==>".to_string()),
        Just("0x0008000000000011".to_string()),
        Just("1[  ]".to_string()),
        Just("\"leafA\" ( )".to_string()),
        Just("Unicast lids [0-3] of switch Lid 1 guid 0x1 ('x'):".to_string()),
        Just("0x0003 001 # Channel Adapter portguid 0x11: 'y'".to_string()),
        Just("w=2".to_string()),
        Just("DR path slid 0; dlid 0; 0,1 -> new Switch {0002c90001000001} portnum 0 lid 0-0 \"\"".to_string()),
        Just("DR path slid 0; dlid 0; 0,1,".to_string()),
        Just(" -> known".to_string()),
        Just("src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110".to_string()),
        Just("ibwarn: ".to_string()),
        Just("Switch41".to_string()),
        Just("=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2021.06.15 12:06:05 =~=~=~=~=~=~=~=~=~=~=~=".to_string()),
        Just("\r\n".to_string()),
        Just("e=x".to_string()),
        Just("\u{feff}".to_string()),
        Just("\u{200b}".to_string()),
        Just("\n".to_string()),
        Just("\t".to_string()),
        // Printable ASCII words (cheaper to generate than a regex strategy).
        prop::collection::vec(0x20u8..0x7f, 0..12)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        any::<u32>().prop_map(|n| n.to_string()),
    ]
}

/// The valid samples and the real dumps, to mutate and cut.
fn sample() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        VALID,
        VALID_PORTS,
        VALID_LINKS,
        VALID_LINE_MODE,
        VALID_LFT,
        SX6036,
        X5,
        OSC,
        PLAFRIM2_1,
        LAB,
        SIM_DISC,
        SIM_PORTS,
        SIM_LINKS,
        SIM_LFT,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
        check_lft(&s);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..60), lines in any::<bool>()) {
        let text = tokens.join(if lines { "\n" } else { " " });
        check(&text);
        check_lft(&text);
    }

    #[test]
    fn truncated_samples_never_panic(text in sample(), cut in any::<usize>()) {
        let cut = truncate(text, cut % (text.len() + 1));
        check(cut);
        check_lft(cut);
    }

    #[test]
    fn mutated_samples_never_panic(text in sample(), pos in any::<usize>(), byte in any::<u8>(), delete in any::<bool>()) {
        let m = mutate(text, pos, byte, delete);
        check(&m);
        check_lft(&m);
    }

    #[test]
    fn samples_with_lines_swapped_never_panic(text in sample(), i in any::<usize>(), j in any::<usize>()) {
        let mut lines: Vec<&str> = text.lines().collect();
        let n = lines.len();
        lines.swap(i % n, j % n);
        let m = lines.join("\n");
        check(&m);
        check_lft(&m);
    }
}

#[test]
fn the_valid_samples_parse() {
    for (text, nodes, links) in [
        (VALID, 4, 3),
        (VALID_PORTS, 4, 3),
        (VALID_LINKS, 4, 3),
        (VALID_LINE_MODE, 2, 1),
    ] {
        let d = discovery::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!((d.nodes.len(), d.links.len()), (nodes, links), "{text}");
        // Every link's rate is known once both ends are read (an unknown part takes the other's).
        assert!(d.links.iter().all(|l| l.rate.is_some_and(|r| r.is_known())));
    }
    assert_eq!(lft::parse(VALID_LFT).unwrap().switches.len(), 2);
    // The real tools' output on ibsim: the same 6 switches, 64 HCAs and 128 links in every form,
    // and OpenSM's tables route every HCA port of the plan to every other.
    for text in [SIM_DISC, SIM_PORTS, SIM_LINKS] {
        let d = discovery::parse(text).unwrap();
        assert_eq!((d.nodes.len(), d.links.len()), (70, 128));
    }
    let lfts = lft::parse(SIM_LFT).unwrap();
    assert_eq!(lfts.switches.len(), 6);
    let f = seed8();
    lft::check_matches(f, &lfts).unwrap();
    let router = lft::Router::new(f, &lfts);
    let ports = hca_ports(f);
    for &a in &ports {
        for &b in ports.iter().filter(|&&b| b != a) {
            router.route(a, b).unwrap();
        }
    }
    assert_eq!(
        discovery::detect(VALID_LINE_MODE),
        discovery::Format::Iblinkinfo
    );
}
