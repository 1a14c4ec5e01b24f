//! Property-based fuzzing of the spec parser: whatever the TOML and whatever the command-line
//! overrides, `parse` / `Overrides::apply` + `ClusterSpec::from_raw` return a spec whose numbers are
//! in range, or an error naming the origin (and the field, for a value out of range), and never panic.
//! The case count is bounded so the run stays short in CI; set PROPTEST_CASES to fuzz longer.
//! Failures proptest finds are kept in spec_fuzz.proptest-regressions beside this file and re-run
//! first; CORPUS keeps inputs that once got through or panicked.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use railyard_spec::{parse, parse_raw, presets, ClusterSpec, Overrides, Topology};

/// Inputs that once got past validation (and then divided by zero or overflowed).
const CORPUS: &[&str] = &[
    "[fabric]\nsu_size = 0\n",
    "[fabric]\nsu_size = 4294967296\n",
    "[fabric]\nsu_size = -1\n",
    "[servers]\ncount = 1000000\ngpus_per_server = 72\ncompute_nics = 64\n[fabric]\nplanes = 8\n",
    "[servers]\ncount = 9223372036854775807\n",
    "[fabric]\noversubscription = nan\n",
    "[fabric]\noversubscription = inf\n",
    "[fabric]\noversubscription = -1.0\n",
    "[layout]\nslack = 1e308\n",
    "[servers]\ngpus_per_server = 8\n[[servers.pcie_switch]]\ngpus = [9223372036854775807]\n",
    "[servers]\npcie_switches = 0\n",
];

/// Every numeric key of a spec, with its table.
const KEYS: &[(&str, &str)] = &[
    ("servers", "count"),
    ("servers", "gpus_per_server"),
    ("servers", "compute_nics"),
    ("servers", "storage_nics"),
    ("servers", "nic_ports_per_cage"),
    ("servers", "pcie_switches"),
    ("fabric", "oversubscription"),
    ("fabric", "su_size"),
    ("fabric", "planes"),
    ("fabric", "port_gbps"),
    ("fabric", "isl_links"),
    ("layout", "servers_per_rack"),
    ("layout", "rack_pitch_m"),
    ("layout", "row_pitch_m"),
    ("layout", "racks_per_row"),
    ("layout", "switches_per_rack"),
    ("layout", "rack_units"),
    ("layout", "tray_drop_m"),
    ("layout", "in_rack_m"),
    ("layout", "slack"),
];

/// Values at the edges: zero, negative, huge, NaN and infinities, strings where numbers go.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        (0i64..200).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just(i64::MAX.to_string()),
        Just(u32::MAX.to_string()),
        Just("4294967296".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("1e308".to_string()),
        Just("0.5".to_string()),
        Just("\"auto\"".to_string()),
        Just("\"x\"".to_string()),
        Just("true".to_string()),
        Just("[]".to_string()),
        any::<f64>().prop_map(|x| format!("{x:?}")),
    ]
}

/// A spec whose numbers are out of range must not come back as valid.
fn check_spec(s: &ClusterSpec) {
    let sv = &s.servers;
    assert!((1..=1_000_000).contains(&sv.count));
    assert!((1..=72).contains(&sv.gpus_per_server));
    assert!((1..=64).contains(&sv.compute_nics));
    assert!(
        sv.gpus_per_server.is_multiple_of(sv.compute_nics)
            || sv.compute_nics.is_multiple_of(sv.gpus_per_server)
    );
    let f = &s.fabric;
    assert!(f.oversubscription.is_finite() && f.oversubscription >= 1.0);
    assert!(f.su_size.is_none_or(|n| n >= 1));
    assert!(f.planes >= 1 && f.isl_links.is_none_or(|n| n >= 1));
    let l = &s.layout;
    for x in [
        l.rack_pitch_m,
        l.row_pitch_m,
        l.tray_drop_m,
        l.in_rack_m,
        l.slack,
    ] {
        assert!(x.is_finite() && x >= 0.0);
    }
    for sw in &sv.pcie {
        assert!(sw.gpus.iter().all(|&g| g < sv.gpus_per_server));
        assert!(sw.nics.iter().all(|&n| n < sv.compute_nics));
    }
}

fn check(text: &str) {
    match parse(text, "fuzz.toml") {
        Ok(s) => check_spec(&s),
        Err(e) => {
            assert_eq!(e.origin, "fuzz.toml");
            assert!(!e.message.is_empty());
        }
    }
}

/// `text` with the byte at `pos` deleted or replaced.
fn mutate(text: &str, pos: usize, byte: u8, delete: bool) -> String {
    let mut bytes = text.as_bytes().to_vec();
    if pos < bytes.len() {
        if delete {
            bytes.remove(pos);
        } else {
            bytes[pos] = byte;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn preset_text() -> &'static str {
    include_str!("../presets/dgx-h100-superpod.toml")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/spec_fuzz.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }

    #[test]
    fn numeric_keys_with_edge_values_never_panic(
        entries in prop::collection::vec((0..KEYS.len(), value()), 0..8),
    ) {
        let mut text = String::new();
        for table in ["servers", "fabric", "layout"] {
            text.push_str(&format!("[{table}]\n"));
            let mut seen = std::collections::BTreeSet::new();
            for (k, v) in &entries {
                let (t, key) = KEYS[*k];
                if t == table && seen.insert(key) {
                    text.push_str(&format!("{key} = {v}\n"));
                }
            }
        }
        check(&text);
    }

    #[test]
    fn mutated_preset_never_panics(pos in 0usize..4096, byte in any::<u8>(), delete in any::<bool>()) {
        check(&mutate(preset_text(), pos % preset_text().len(), byte, delete));
    }

    /// Flags are applied to every preset with any values, as `plan --servers N ...` does.
    #[test]
    fn overrides_with_any_numbers_never_panic(
        preset in prop::sample::select(presets::names()),
        servers in prop::option::of(any::<u32>()),
        gpus in prop::option::of(any::<u32>()),
        nics in prop::option::of(any::<u32>()),
        su in prop::option::of(any::<u32>()),
        over in prop::option::of(any::<f64>()),
        ratio in prop::option::of((any::<u32>(), any::<u32>())),
        topology in prop::option::of(prop::sample::select(Topology::ALL.to_vec())),
    ) {
        let mut raw = presets::raw(preset).unwrap();
        let o = Overrides {
            servers,
            gpus_per_server: gpus,
            nics_per_server: nics,
            su_size: su,
            oversubscription: over,
            nic_ratio: ratio.map(|(a, b)| (a.max(1), b.max(1))),
            topology,
            ..Overrides::default()
        };
        if o.apply(&mut raw).is_ok() {
            if let Ok(s) = ClusterSpec::from_raw(&raw, preset) {
                check_spec(&s);
            }
        }
    }
}

#[test]
fn corpus_never_panics() {
    for text in CORPUS {
        check(text);
    }
    for text in &CORPUS[..3] {
        let e = parse(text, "t.toml").unwrap_err();
        assert!(
            e.message.contains("su_size") || e.field == "fabric.su_size",
            "{e}"
        );
    }
    assert!(parse_raw(CORPUS[4], "t.toml").is_ok());
    assert_eq!(
        parse(CORPUS[4], "t.toml").unwrap_err().field,
        "servers.count"
    );
}
