//! The site's names CSV (`verify --names`) and scope lists fuzzed: whatever the text, the parser
//! returns a map or an error naming a line of the input, never a panic; what parses checks against a
//! plan and verifies without panicking. Failures proptest finds are kept in
//! `site_fuzz.proptest-regressions` and replayed first.

use proptest::prelude::*;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_ib::site::{NameMap, Scope};
use railyard_ib::verify::{verify_with, Options, Site};

fn plan() -> &'static Fabric {
    static PLAN: std::sync::OnceLock<Fabric> = std::sync::OnceLock::new();
    PLAN.get_or_init(|| {
        let spec = railyard_spec::presets::load("seed-leaf-spine").unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    })
}

fn discovered() -> &'static railyard_ib::discovery::Discovered {
    static D: std::sync::OnceLock<railyard_ib::discovery::Discovered> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        railyard_ib::discovery::parse(&railyard_ib::export::ibsim_topology(plan()).unwrap().text)
            .unwrap()
    })
}

const VALID: &str =
    "plan,site\nsrv01,node101\n\"leaf01\",\"ib-leaf, a1\"\nsrv02 hca1,gpu002 HCA-1\n";

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn names_csv_never_panics(text in "\\PC{0,200}") {
        if let Err(e) = NameMap::parse(&text) {
            prop_assert!(e.line <= text.lines().count().max(1), "line {} of {:?}", e.line, text);
        }
    }

    #[test]
    fn mutated_names_csv_never_panics_and_verifies(
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..5),
        truncate in any::<prop::sample::Index>(),
    ) {
        let mut bytes = VALID.as_bytes().to_vec();
        for (at, b) in cuts {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        bytes.truncate(truncate.index(bytes.len() + 1));
        let text = String::from_utf8_lossy(&bytes).to_string();
        match NameMap::parse(&text) {
            Err(e) => prop_assert!(e.line <= text.lines().count().max(1)),
            Ok(m) => {
                let _ = m.check(plan());
                let site = Site { names: Some(&m), ..Site::default() };
                let r = verify_with(plan(), discovered(), Options { ibsim_rates: true }, site);
                let _ = railyard_ib::verify::report_text(&r);
            }
        }
    }

    #[test]
    fn scope_lists_never_panic(items in proptest::collection::vec("[a-z0-9 \\-]{0,12}", 0..4)) {
        if let Ok(s) = Scope::resolve(plan(), &items) {
            let site = Site { scope: Some(&s), ..Site::default() };
            let _ = verify_with(plan(), discovered(), Options { ibsim_rates: true }, site);
        }
    }
}
