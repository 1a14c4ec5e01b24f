use super::*;
use crate::raw::RawSpec;

#[test]
fn names_are_unique_and_spelled_alike() {
    for (i, k) in DESIGN_KEYS.iter().enumerate() {
        assert_eq!(k.json, k.name.replace('-', "_"), "{}", k.name);
        assert!(
            !k.fronts.form || k.fronts.json,
            "{}: a form field is a JSON key",
            k.name
        );
        assert!(!k.help.is_empty() && !k.label.is_empty() && !k.fields.is_empty());
        for other in &DESIGN_KEYS[i + 1..] {
            assert_ne!(k.name, other.name);
        }
    }
}

/// Every valid example parses, prints as text that parses to the same value, sets the spec and
/// reads back from it; every invalid one is refused naming the value and the valid values.
#[test]
fn every_key_parses_sets_and_reads_back() {
    let catalog = Catalog::builtin();
    for k in &DESIGN_KEYS {
        let (ok, bad) = k.examples(&catalog);
        assert!(!ok.is_empty() && !bad.is_empty(), "{}", k.name);
        for text in ok {
            let v = k
                .parse(&text)
                .unwrap_or_else(|e| panic!("{} {text}: {e}", k.name));
            assert_eq!(k.parse(&v.to_string()), Ok(v.clone()), "{} {text}", k.name);
            let mut o = Overrides::default();
            (k.set)(&mut o, v.clone());
            assert_ne!(o, Overrides::default(), "{} {text} sets nothing", k.name);
            let mut raw = RawSpec::default();
            o.apply(&mut raw).unwrap();
            let spec = ClusterSpec::from_raw(&raw, "test")
                .unwrap_or_else(|e| panic!("{} {text}: {e}", k.name));
            let back = (k.read)(&spec).unwrap();
            // Switches and choices read back as their canonical spelling.
            assert_eq!(back, k.parse(&text).unwrap(), "{} {text}", k.name);
        }
        for text in bad {
            let e = k.parse(&text).expect_err(&format!("{} {text:?}", k.name));
            assert_eq!(e.valid, k.valid());
            assert!(e.problem.contains(text.trim()), "{}: {e}", k.name);
        }
    }
}

/// A range is the spec's: a flag's bound is where the spec file's check refuses.
#[test]
fn ranges_are_the_spec_fields_ranges() {
    for k in &DESIGN_KEYS {
        let set = |text: &str| -> Result<(), String> {
            let (table, field) = k.fields[0].split_once('.').unwrap();
            let doc = format!("[{table}]\n{field} = {text}\n");
            let raw = crate::parse_raw(&doc, "test").map_err(|e| e.to_string())?;
            ClusterSpec::from_raw(&raw, "test")
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let (lo, hi) = match k.kind {
            Kind::Count(b) => (
                (i64::from(b.min) - 1).to_string(),
                (i64::from(b.max) + 1).to_string(),
            ),
            Kind::Number { bounds: b, .. } => {
                ((b.min - 0.5).to_string(), (b.max + 0.5).to_string())
            }
            _ => continue,
        };
        let valid = format!("valid: {}", k.valid());
        // Below the range (TOML's reader refuses a zero SU size itself) and above it.
        assert!(
            set(&lo).is_err() && k.parse(&lo).is_err(),
            "{} {lo}",
            k.name
        );
        let e = set(&hi).expect_err(&format!("{} {hi}", k.name));
        assert!(
            e.contains(k.fields[0]) && e.contains(&valid),
            "{}: {e}",
            k.name
        );
        assert!(k.parse(&hi).is_err());
        let max = k.valid().rsplit(' ').next().unwrap().to_string();
        assert!(
            set(&max).is_ok() && k.parse(&max).is_ok(),
            "{} {max}",
            k.name
        );
    }
}

#[test]
fn messages_name_the_value_and_the_valid_ones() {
    let key = |name| find(&DESIGN_KEYS, Front::Flag, name).unwrap();
    let (servers, topology) = (key("servers"), key("topology"));
    assert_eq!(
        servers.parse("0").unwrap_err().to_string(),
        "0 is out of range; valid: 1 to 1000000"
    );
    assert_eq!(
        servers.parse("many").unwrap_err().to_string(),
        "`many` is not a whole number; valid: 1 to 1000000"
    );
    assert_eq!(
        topology.parse("torus").unwrap_err().to_string(),
        "`torus` is not a valid choice; valid: single-switch, fat-tree, rail-optimized, rail-only, two-switch"
    );
    assert_eq!(
        unknown_key(&DESIGN_KEYS, Front::Json, "colour", &["preset"]).to_string(),
        "unknown key `colour`; valid: preset, servers, gpu, gpus_per_server, nics_per_server, nic_ratio, nic, tech, topology, switch, oversubscription, gpudirect, su_size, storage, management, max_rack_kw, cooling"
    );
}

#[test]
fn errors_on_a_spec_field_name_the_key_given() {
    let owner =
        |field, given: &[&str]| owner_of(&DESIGN_KEYS, Front::Json, field, given).map(|k| k.json);
    assert_eq!(owner("servers.count", &[]), Some("servers"));
    assert_eq!(owner("servers.compute_nics", &[]), Some("nics_per_server"));
    assert_eq!(
        owner("servers.compute_nics", &["nic_ratio"]),
        Some("nic_ratio")
    );
    assert_eq!(owner("nic-ratio", &[]), Some("nic_ratio"));
    assert_eq!(owner("servers.nic", &["nic"]), Some("nic"));
    // `--nic cx7-ndr` on RoCE was named `--nics-per-server`, which only resets the NIC.
    assert_eq!(owner("servers.nic", &[]), Some("nic"));
    assert_eq!(owner("layout.slack", &[]), None);
}
