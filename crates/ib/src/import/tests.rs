use super::*;

#[test]
fn the_technology_is_what_most_links_run_at_ties_to_the_faster() {
    let r = |s: &str| Rate::parse_compact(s).unwrap();
    assert_eq!(
        majority_speed([r("4xHDR"), r("4xDDR"), r("4xDDR")]),
        Some(Speed::Ddr)
    );
    assert_eq!(
        majority_speed([r("4xDDR"), r("4xHDR"), r("4xHDR")]),
        Some(Speed::Hdr)
    );
    assert_eq!(majority_speed([r("4xDDR"), r("4xHDR")]), Some(Speed::Hdr));
    assert_eq!(majority_speed([r("4xHDR"), r("4xDDR")]), Some(Speed::Hdr));
    assert_eq!(majority_speed([r("4x???")]), None);
}

#[test]
fn exported_plan_imports_with_its_shape() {
    let spec = railyard_spec::presets::load("seed-leaf-spine").unwrap();
    let plan = railyard_fabric::build(&spec, &railyard_catalog::Catalog::builtin()).unwrap();
    let text = crate::export::ibsim_topology(&plan).unwrap().text;
    // ibsim files carry no rates; ibnetdiscover output does. Add them as ibnetdiscover prints them.
    let with_rates: String = text
        .lines()
        .map(|l| {
            if l.starts_with('[') {
                format!("{l}\t# lid 0 4xHDR\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let d = crate::discovery::ibnet::parse(&with_rates).unwrap();
    let f = to_fabric(&d, "leaf-spine.topo").unwrap();
    f.check().unwrap();
    assert_eq!(f.servers.len(), 10);
    assert_eq!(f.meta.tiers, 2);
    assert_eq!(f.network_links().count(), plan.network_links().count());
    let report = crate::verify::verify(&f, &d, crate::verify::Options::default());
    assert!(report.matches, "{:?}", report.findings);
}

mod expected_discovery {
    #[test]
    fn expected_ibnetdiscover_output_imports_and_verifies_with_true_rates() {
        let spec = railyard_spec::presets::load("dgx-h100-superpod").unwrap();
        let plan = railyard_fabric::build(&spec, &railyard_catalog::Catalog::builtin()).unwrap();
        let text = crate::export::ibnetdiscover_text(&plan).unwrap();
        let d = crate::discovery::ibnet::parse(&text).unwrap();
        let report = crate::verify::verify(&plan, &d, crate::verify::Options::default());
        assert!(report.matches, "{:?}", report.findings.first());
        let f = super::to_fabric(&d, "expected").unwrap();
        assert_eq!(f.meta.tech, railyard_catalog::Tech::IbNdr);
        assert_eq!(f.network_links().count(), plan.network_links().count());
    }
}
