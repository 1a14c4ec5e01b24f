use super::*;
use railyard_catalog::Tech;

fn spec(text: &str) -> Result<ClusterSpec, SpecError> {
    parse(text, "t.toml")
}

#[test]
fn defaults_are_a_dgx_class_server_on_ndr() {
    let s = spec("").unwrap();
    assert_eq!(s.servers.gpus_per_server, 8);
    assert_eq!(s.servers.compute_nics, 8);
    assert_eq!(s.fabric.tech, Tech::IbNdr);
    assert_eq!(s.fabric.topology, Topology::RailOptimized);
    assert_eq!(s.servers.pcie.len(), 4);
    assert_eq!(s.servers.pcie[1].gpus, vec![2, 3]);
    assert_eq!(s.servers.pcie[1].nics, vec![2, 3]);
}

#[test]
fn unknown_key_names_the_key_and_line() {
    let e = spec("[servers]\ncount = 4\ncolor = \"red\"\n").unwrap_err();
    assert!(
        e.message.contains("line 3") && e.message.contains("color"),
        "{e}"
    );
    assert!(
        e.message.contains("gpus_per_server"),
        "lists valid keys: {e}"
    );
}

#[test]
fn wrong_type_names_the_line() {
    let e = spec("[servers]\ncount = \"many\"\n").unwrap_err();
    assert!(e.message.contains("line 2"), "{e}");
}

#[test]
fn nic_ratio_must_divide_gpus() {
    let e = spec("[servers]\ngpus_per_server = 8\ncompute_nics = 3\n").unwrap_err();
    assert_eq!(e.field, "servers.compute_nics");
    assert!(e.message.contains("1, 2, 4, 8"), "{e}");
    let ok = spec("[servers]\ngpus_per_server = 8\ncompute_nics = 2\n").unwrap();
    assert_eq!(ok.servers.nic_ratio(), "1:4");
    assert_eq!(ok.servers.gpus_per_nic(), 4);
}

#[test]
fn unknown_tech_lists_valid_ones() {
    let e = spec("[fabric]\ntech = \"ib-qdr\"\n").unwrap_err();
    assert_eq!(e.field, "fabric.tech");
    assert!(
        e.message.contains("ib-ndr") && e.message.contains("roce-800g"),
        "{e}"
    );
}

#[test]
fn su_size_accepts_auto_or_number() {
    assert_eq!(
        spec("[fabric]\nsu_size = \"auto\"\n")
            .unwrap()
            .fabric
            .su_size,
        None
    );
    assert_eq!(
        spec("[fabric]\nsu_size = 16\n").unwrap().fabric.su_size,
        Some(16)
    );
    let e = spec("[fabric]\nsu_size = \"big\"\n").unwrap_err();
    assert!(e.message.contains("auto"), "{e}");
}

#[test]
fn explicit_pcie_layout_is_checked() {
    let text = "[servers]\ngpus_per_server = 2\ncompute_nics = 2\n[[servers.pcie_switch]]\ngpus = [1, 2]\nnics = [1, 3]\n";
    let e = spec(text).unwrap_err();
    assert_eq!(e.field, "servers.pcie_switch[0].nics");
    let text = "[servers]\ngpus_per_server = 2\ncompute_nics = 1\n[[servers.pcie_switch]]\ngpus = [1]\nnics = [1]\n[[servers.pcie_switch]]\ngpus = [1]\n";
    let e = spec(text).unwrap_err();
    assert!(e.message.contains("already"), "{e}");
}

#[test]
fn tech_override_resets_switch_and_nic() {
    let mut raw = parse_raw(
        "[servers]\nnic = \"ConnectX-7\"\n[fabric]\nswitch = \"QM9700\"\n",
        "t",
    )
    .unwrap();
    Overrides {
        tech: Some(Tech::Roce400g),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let s = ClusterSpec::from_raw(&raw, "t").unwrap();
    assert_eq!((s.servers.nic, s.fabric.switch), (None, None));
}

#[test]
fn every_preset_parses() {
    for p in presets::PRESETS {
        let s = presets::load(p.name).unwrap_or_else(|e| panic!("{}: {e}", p.name));
        assert_eq!(s.name, p.name);
        assert!(!s.description.is_empty());
    }
    assert_eq!(presets::DEFAULT, "dgx-h100-superpod");
}

/// `--su-size 0` reached the topology builder and divided by zero; it is refused at the boundary, as
/// is a unit larger than any switch's radix.
#[test]
fn su_size_zero_or_huge_is_refused_from_flags() {
    for n in [0, railyard_catalog::MAX_SWITCH_PORTS + 1, u32::MAX] {
        let mut raw = parse_raw("", "t.toml").unwrap();
        Overrides {
            su_size: Some(n),
            ..Overrides::default()
        }
        .apply(&mut raw)
        .unwrap();
        let e = ClusterSpec::from_raw(&raw, "t.toml").unwrap_err();
        assert_eq!(e.field, "fabric.su_size", "{e}");
        assert!(e.message.contains("valid: 1 to 2048"), "{e}");
    }
}
