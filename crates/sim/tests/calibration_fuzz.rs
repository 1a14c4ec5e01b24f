//! Property tests of the calibration file (railyard-calibration/1): any calibration in range
//! round-trips through its TOML exactly as written (4 decimals); whatever the text, `from_toml`
//! returns a calibration in range or an error that says what is wrong, and never panics.
//! PROPTEST_CASES fuzzes longer.

use proptest::prelude::*;
use railyard_sim::calibration::{Calibration, FORMAT};

fn check(text: &str) {
    match Calibration::from_toml(text) {
        Ok(c) => {
            assert_eq!(c.check(), Ok(()), "{text:?}");
            // What was read writes back and reads the same.
            let again = Calibration::from_toml(&c.to_toml("")).unwrap();
            assert!((again.latency_us - c.latency_us).abs() <= 5e-5, "{text:?}");
            match (again.nic_gbs, c.nic_gbs) {
                (None, None) => {}
                (Some(a), Some(b)) => assert!((a - b).abs() <= 5e-5, "{text:?}"),
                other => panic!("{other:?} from {text:?}"),
            }
        }
        Err(e) => assert!(!e.is_empty(), "{text:?}"),
    }
}

/// Pieces a calibration file is made of, to build plausible garbage.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("format".to_string()),
        Just("nic_gbs".to_string()),
        Just("latency_us".to_string()),
        Just(format!("\"{FORMAT}\"")),
        Just("\"railyard-calibration/2\"".to_string()),
        Just("=".to_string()),
        Just("#".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("\n".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e400".to_string()),
        Just("-0.0".to_string()),
        Just("true".to_string()),
        "[ -~]{0,12}",
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| format!("{n:?}")),
    ]
}

/// A well-formed file with arbitrary values (most out of range).
fn file() -> impl Strategy<Value = String> {
    (
        prop::option::of(any::<f64>()),
        prop::option::of(any::<f64>()),
    )
        .prop_map(|(nic, lat)| {
            let mut s = format!("format = \"{FORMAT}\"\n");
            if let Some(n) = nic {
                s.push_str(&format!("nic_gbs = {n:?}\n"));
            }
            if let Some(l) = lat {
                s.push_str(&format!("latency_us = {l:?}\n"));
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..40)) {
        check(&tokens.join(" "));
    }

    #[test]
    fn well_formed_files_with_any_values_never_panic(text in file()) {
        check(&text);
    }

    /// Every calibration in range is written and read back as the 4 decimals it is written with.
    #[test]
    fn calibrations_round_trip(
        nic in prop::option::of(0.001f64..10_000.0),
        latency in 0.0f64..1_000_000.0,
        comment in "[ -~\n]{0,80}",
    ) {
        let c = Calibration { nic_gbs: nic, latency_us: latency };
        let text = c.to_toml(&comment);
        let back = Calibration::from_toml(&text).unwrap();
        let round = |x: f64| format!("{x:.4}").parse::<f64>().unwrap();
        prop_assert_eq!(back.nic_gbs, nic.map(round));
        prop_assert_eq!(back.latency_us, round(latency));
    }
}
