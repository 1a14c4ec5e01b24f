//! Property-based fuzzing of the ibnetdiscover parser: whatever the text, `parse` returns a value or a
//! line-numbered error and never panics. The case count is bounded so the run stays short in CI; set
//! PROPTEST_CASES to fuzz longer.

use proptest::prelude::*;
use railyard_ib::ibnet::parse;

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
[2]	"H-0008000000000020"[1](8000000000021) 		# "srv2 hca1" lid 0 4xHDR
[3]	"S-0002c90001000002"[3]		# "leafB" lid 0 4xHDR

caguid=0x8000000000010
Ca	1 "H-0008000000000010"		# "srv1 hca1"
[1](8000000000011) 	"S-0002c90001000001"[1]		# lid 0 lmc 0 "leafA" lid 0 4xHDR

caguid=0x8000000000020
Ca	1 "H-0008000000000020"		# "srv2 hca1"
[1](8000000000021) 	"S-0002c90001000001"[2]		# lid 0 lmc 0 "leafA" lid 0 4xHDR
"#;

/// The same fabric as `ibnetdiscover -p` prints it.
const VALID_PORTS: &str =
    "SW     0  3 0x0002c90001000002 4x HDR - SW     0  3 0x0002c90001000001 ( 'leafB' - 'leafA' )
SW     0  1 0x0002c90001000001 4x HDR - CA     0  1 0x0008000000000011 ( 'leafA' - 'srv1 hca1' )
SW     0  2 0x0002c90001000001 4x HDR - CA     0  1 0x0008000000000021 ( 'leafA' - 'srv2 hca1' )
SW     0  3 0x0002c90001000001 4x HDR - SW     0  3 0x0002c90001000002 ( 'leafA' - 'leafB' )
CA     0  1 0x0008000000000011 4x HDR - SW     0  1 0x0002c90001000001 ( 'srv1 hca1' - 'leafA' )
CA     0  1 0x0008000000000021 4x HDR - SW     0  2 0x0002c90001000001 ( 'srv2 hca1' - 'leafA' )
";

fn check(text: &str) {
    match parse(text) {
        Ok(d) => {
            for l in &d.links {
                assert!(l.a.0 < d.nodes.len() && l.b.0 < d.nodes.len());
            }
        }
        Err(e) => {
            let lines = text.lines().count().max(1);
            // Line 0: the file as a whole (no nodes, no links).
            assert!(e.line <= lines, "error line {} of {lines}: {e}", e.line);
            assert!(!e.message.is_empty());
        }
    }
}

/// `text` with the byte at `pos` deleted or replaced.
fn mutate(text: &str, pos: usize, byte: u8, delete: bool) -> String {
    let mut bytes = text.as_bytes().to_vec();
    if delete {
        bytes.remove(pos);
    } else {
        bytes[pos] = byte;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Pieces ibnetdiscover output is made of, to build plausible garbage.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Switch".to_string()),
        Just("Ca".to_string()),
        Just("Rt".to_string()),
        Just("\"S-0002c90001000001\"".to_string()),
        Just("\"H-0008000000000010\"".to_string()),
        Just("[1]".to_string()),
        Just("[3]".to_string()),
        Just("[0]".to_string()),
        Just("[999999999999]".to_string()),
        Just("(8000000000011)".to_string()),
        Just("switchguid=0x2c90001000001".to_string()),
        Just("caguid=0xZZ".to_string()),
        Just("#".to_string()),
        Just("\"".to_string()),
        Just("SW 0 3 0x0002c90001000002 4x HDR -".to_string()),
        Just("CA".to_string()),
        Just("( 'leafA' - 'srv1 hca1' )".to_string()),
        Just("'".to_string()),
        Just("w=2".to_string()),
        Just("e=x".to_string()),
        Just("\n".to_string()),
        Just("\t".to_string()),
        "[ -~]{0,12}",
        any::<u32>().prop_map(|n| n.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..60)) {
        check(&tokens.join(" "));
    }

    #[test]
    fn truncated_records_never_panic(cut in 0usize..VALID.len()) {
        let mut end = cut;
        while !VALID.is_char_boundary(end) {
            end -= 1;
        }
        check(&VALID[..end]);
    }

    #[test]
    fn mutated_valid_input_never_panics(pos in 0usize..VALID.len(), byte in any::<u8>(), delete in any::<bool>()) {
        check(&mutate(VALID, pos, byte, delete));
    }

    #[test]
    fn mutated_per_port_input_never_panics(pos in 0usize..VALID_PORTS.len(), byte in any::<u8>(), delete in any::<bool>()) {
        check(&mutate(VALID_PORTS, pos, byte, delete));
    }
}

#[test]
fn the_valid_sample_parses() {
    let d = parse(VALID).unwrap();
    assert_eq!((d.nodes.len(), d.links.len()), (4, 3));
    let p = parse(VALID_PORTS).unwrap();
    assert_eq!((p.nodes.len(), p.links.len()), (4, 3));
}
