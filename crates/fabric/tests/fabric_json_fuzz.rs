//! Property-based fuzzing of the fabric.json loader (`--fabric`, `verify --plan`): whatever the text,
//! `load_fabric_json` returns a fabric that keeps the graph invariants, or an error, and never panics
//! or allocates past the design limits (a few bytes can name billions of ports). The case count is
//! bounded so the run stays short in CI; set PROPTEST_CASES to fuzz longer. Failures are kept in
//! fabric_json_fuzz.proptest-regressions beside this file and re-run first.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use railyard_catalog::Catalog;
use railyard_fabric::fabric_file::{fabric_json, load_fabric_json};
use std::sync::OnceLock;

/// fabric.json of a small design with servers, switches, links and transceivers.
fn sample() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let spec = railyard_spec::presets::load("seed-leaf-spine").unwrap();
        fabric_json(&railyard_fabric::build(&spec, &Catalog::builtin()).unwrap())
    })
}

const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4294967295",
    "4294967296",
    "3000000000",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "null",
    "\"x\"",
    "[]",
    "{}",
];

/// Byte ranges of the integers in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

fn check(text: &str) {
    if let Ok(f) = load_fabric_json(text) {
        assert_eq!(f.check(), Ok(()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/fabric_json_fuzz.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn numbers_at_the_edges_never_panic(
        edits in prop::collection::vec((any::<usize>(), prop::sample::select(EDGES)), 1..4),
    ) {
        let mut text = sample().to_string();
        for (which, v) in edits {
            let spots = numbers(&text);
            let (s, e) = spots[which % spots.len()];
            text = format!("{}{v}{}", &text[..s], &text[e..]);
        }
        check(&text);
    }

    #[test]
    fn mutated_bytes_never_panic(pos in any::<usize>(), byte in any::<u8>(), delete in any::<bool>()) {
        let mut bytes = sample().as_bytes().to_vec();
        let pos = pos % bytes.len();
        if delete {
            bytes.remove(pos);
        } else {
            bytes[pos] = byte;
        }
        check(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }
}

#[test]
fn the_sample_loads() {
    let f = load_fabric_json(sample()).unwrap();
    assert!(f.check().is_ok() && !f.links.is_empty());
}
