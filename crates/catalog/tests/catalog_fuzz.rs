//! Property-based fuzzing of the catalog and prices parsers (`--catalog`, `--prices`): whatever the
//! text, `Catalog::overlay` and `Catalog::apply_prices` return a catalog whose numbers are in range,
//! or an error naming the file, and never panic; a refused file leaves the catalog as it was. The
//! case count is bounded so the run stays short in CI; set PROPTEST_CASES to fuzz longer. Failures
//! are kept in catalog_fuzz.proptest-regressions beside this file and re-run first.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use railyard_catalog::{Catalog, MAX_PRICE_PER_M_USD, MAX_PRICE_USD, MAX_SWITCH_PORTS};

const SWITCHES: &str = include_str!("../data/switches.toml");
const CABLES: &str = include_str!("../data/cables.toml");

/// Values at the edges of every numeric field's type and range.
const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "-inf",
    "0.0",
    "1e-300",
    "\"x\"",
    "[]",
];

/// Byte ranges of the numbers in `text` (digits, with a sign, point or exponent).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-' || b[i - 1] == b'_'));
        if starts {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'e') {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

fn with_number(text: &str, which: usize, value: &str) -> String {
    let spots = numbers(text);
    let (s, e) = spots[which % spots.len()];
    format!("{}{value}{}", &text[..s], &text[e..])
}

/// Every number a valid catalog holds is in range.
fn check_catalog(c: &Catalog) {
    let price = |p: &railyard_catalog::Price| {
        assert!(p.usd.is_finite() && (0.0..=MAX_PRICE_USD).contains(&p.usd));
        assert!(p.per_m_usd.is_finite() && (0.0..=MAX_PRICE_PER_M_USD).contains(&p.per_m_usd));
    };
    for s in c.switches.values() {
        price(&s.price);
        assert!(s.power_w.is_finite() && s.power_w >= 0.0);
        for m in &s.modes {
            assert!((2..=MAX_SWITCH_PORTS).contains(&m.ports));
        }
    }
    for x in c.cables.values() {
        price(&x.price);
        assert!(x.lengths_m.iter().all(|l| l.is_finite() && *l > 0.0));
    }
    for x in c.nics.values() {
        price(&x.price);
    }
    for x in c.transceivers.values() {
        price(&x.price);
    }
    for x in c.fibres.values() {
        price(&x.price);
    }
}

fn builtin() -> Catalog {
    static BUILTIN: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
    BUILTIN.get_or_init(Catalog::builtin).clone()
}

fn overlay(text: &str) {
    let mut c = builtin();
    match c.overlay(text, "fuzz.toml") {
        Ok(()) => check_catalog(&c),
        Err(e) => {
            assert_eq!(e.origin, "fuzz.toml");
            assert!(!e.message.is_empty());
        }
    }
}

fn prices(text: &str) {
    let mut c = builtin();
    if c.apply_prices(text, "p.toml").is_ok() {
        check_catalog(&c);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/catalog_fuzz.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        overlay(&s);
        prices(&s);
    }

    #[test]
    fn switch_numbers_at_the_edges_never_panic(which in any::<usize>(), v in prop::sample::select(EDGES)) {
        overlay(&with_number(SWITCHES, which, v));
    }

    #[test]
    fn cable_numbers_at_the_edges_never_panic(which in any::<usize>(), v in prop::sample::select(EDGES)) {
        overlay(&with_number(CABLES, which, v));
    }

    #[test]
    fn prices_at_the_edges_never_panic(
        id in prop::sample::select(vec!["QM9700", "ConnectX-7", "MPO12-OM4", "NOPE"]),
        usd in prop::sample::select(EDGES),
        per_m in prop::option::of(prop::sample::select(EDGES)),
    ) {
        let text = match per_m {
            Some(m) => format!("[price_usd]\n\"{id}\" = {{ usd = {usd}, per_m_usd = {m} }}\n"),
            None => format!("[price_usd]\n\"{id}\" = {usd}\n"),
        };
        prices(&text);
    }
}
