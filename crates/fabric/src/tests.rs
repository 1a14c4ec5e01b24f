use super::*;
use railyard_catalog::{Catalog, Tech};
use railyard_spec::{presets, Overrides};

fn build_preset(name: &str, o: Overrides) -> Result<Fabric, BuildError> {
    let mut raw = presets::raw(name).unwrap();
    o.apply(&mut raw).unwrap();
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, name).unwrap();
    build(&spec, &Catalog::builtin())
}

fn count(f: &Fabric, tier: Tier) -> usize {
    f.switches(tier).count()
}

fn links(f: &Fabric, kind: LinkKind) -> usize {
    f.links.iter().filter(|l| l.kind == kind).count()
}

#[test]
fn default_preset_builds_and_checks() {
    let f = build_preset("dgx-h100-superpod", Overrides::default()).unwrap();
    f.check().unwrap();
    assert_eq!(f.servers.len(), 127);
}

fn servers(n: u32) -> Overrides {
    Overrides {
        servers: Some(n),
        ..Default::default()
    }
}

/// NVIDIA DGX SuperPOD H100 reference architecture (RA-11333-001), via hardware.md.
#[test]
fn superpod_h100_127_servers() {
    let f = build_preset("dgx-h100-superpod", servers(127)).unwrap();
    assert_eq!(
        (
            count(&f, Tier::Leaf),
            count(&f, Tier::Spine),
            count(&f, Tier::Core)
        ),
        (32, 16, 0)
    );
    assert_eq!(links(&f, LinkKind::ServerLeaf), 1016);
    assert_eq!(links(&f, LinkKind::LeafSpine), 1024);
    assert_eq!(f.meta.tiers, 2);
}

/// NVIDIA DGX SuperPOD H100 reference architecture (RA-11333-001 V11): Table 4 for 1 to 4 units (a
/// unit of 32 slots holds 31 servers, one slot going to the fabric manager, whose 4 ports railyard
/// does not plan: Table 4's "compute and UFM" cables are 4 more than the server-leaf cables here)
/// and Table 3 for 8 and 16 units. The preset pins the reference's switch and unit; the search
/// chooses the rest and lands on the reference at every size.
#[test]
fn superpod_h100_reference_at_1_2_3_4_8_and_16_units() {
    for (servers, leaf, spine, core, node_leaf, leaf_spine, spine_core) in [
        (31, 8, 4, 0, 248, 256, 0),
        (63, 16, 8, 0, 504, 512, 0),
        (95, 24, 16, 0, 760, 768, 0),
        (127, 32, 16, 0, 1016, 1024, 0),
        (256, 64, 32, 0, 2048, 2048, 0),
        (512, 128, 128, 64, 4096, 4096, 4096),
    ] {
        let f = build_preset("dgx-h100-superpod", self::servers(servers)).unwrap();
        assert_eq!(
            (
                count(&f, Tier::Leaf),
                count(&f, Tier::Spine),
                count(&f, Tier::Core)
            ),
            (leaf, spine, core),
            "{servers} servers"
        );
        assert_eq!(
            (
                links(&f, LinkKind::ServerLeaf),
                links(&f, LinkKind::LeafSpine),
                links(&f, LinkKind::SpineCore)
            ),
            (node_leaf, leaf_spine, spine_core),
            "{servers} servers"
        );
        assert_eq!(f.meta.su_size, Some(32));
    }
}

/// A preset keeps its reference's choices; where the search finds a cheaper valid design without
/// them (the default preset on QM9790, the unmanaged QM9700), the summary says so and
/// `--alternatives` lists it, cheaper than the chosen design and marked as not the reference's.
#[test]
fn a_cheaper_design_than_the_reference_is_listed_as_an_alternative() {
    let spec = presets::load("dgx-h100-superpod").unwrap();
    let catalog = Catalog::builtin();
    let d = design(&spec, &catalog, &SearchOptions { alternatives: 3 }).unwrap();
    assert_eq!(d.fabric.meta.switch_model, "QM9700");
    let cheaper: Vec<_> = d
        .report
        .alternatives
        .iter()
        .filter(|a| a.cost_usd < d.report.cost_usd)
        .collect();
    assert!(!cheaper.is_empty(), "{:?}", d.report.alternatives);
    for a in &cheaper {
        assert!(!a.keeps_preset && a.cost_delta_usd < 0.0, "{a:?}");
        assert!(a
            .differs
            .iter()
            .any(|x| x == "not the preset's reference choice"));
    }
    assert_eq!(cheaper[0].switch_model, "QM9790");
    let switch = &d.report.choices[0];
    assert_eq!(switch.source, "preset");
    // The choice quotes the price --alternatives lists, built, not an estimate from counts (it
    // said ~$6,706,033 where the design built costs $6,694,000).
    assert!(!cheaper[0].cost_estimated);
    let quoted = format!(
        "a design with QM9790 costs ${} (",
        crate::search::thousands(cheaper[0].cost_usd)
    );
    assert!(
        switch.why.contains(&quoted) && switch.why.contains("see --alternatives"),
        "{} / {quoted}",
        switch.why
    );
    let qm9790 = d
        .report
        .switches
        .iter()
        .find(|s| s.switch_model == "QM9790");
    assert!(
        qm9790.is_some_and(|s| !s.cost_estimated),
        "{:?}",
        d.report.switches
    );
}

/// `plan` and `report` say alike how many designs chose the design: those built only to cost the
/// alternatives the report lists are counted apart (the report said "4 built", the plan "2").
#[test]
fn designs_built_for_alternatives_are_counted_apart() {
    let spec = presets::load("dgx-h100-superpod").unwrap();
    let catalog = Catalog::builtin();
    let plain = design(&spec, &catalog, &SearchOptions { alternatives: 0 }).unwrap();
    let listed = design(&spec, &catalog, &SearchOptions { alternatives: 3 }).unwrap();
    assert_eq!(plain.report.costed_for_alternatives, 0);
    assert!(listed.report.costed_for_alternatives > 0);
    assert_eq!(
        listed.report.costed_exactly - listed.report.costed_for_alternatives,
        plain.report.costed_exactly
    );
}

/// Where no design can be ordered (HDR100: two ports to a cage, and no twin-port HDR100 part in the
/// catalog), the designs built still compete: the switch choice names QM8700 beside QM8790 and
/// `--alternatives` lists some. Both went missing ("1 switch model", no alternatives).
#[test]
fn unorderable_designs_are_compared_when_none_can_be_ordered() {
    let spec = railyard_spec::parse(
        "name = \"hdr100\"\n[servers]\ncount = 16\nnic = \"ConnectX-6\"\n[fabric]\n\
         tech = \"ib-hdr\"\nport_gbps = 100\n[storage]\nfabric = \"none\"\n\
         [management]\nin_band = \"none\"\nout_of_band = \"none\"\n",
        "hdr100.toml",
    )
    .unwrap();
    let catalog = Catalog::builtin();
    let d = design(&spec, &catalog, &SearchOptions { alternatives: 3 }).unwrap();
    assert!(layout::shared_cage_cables(&d.fabric, &catalog).is_some());
    let why = &d.report.choices[0].why;
    assert!(
        why.contains("2 switch models") && why.contains("QM8700"),
        "{why}"
    );
    assert!(!d.report.alternatives.is_empty());
}

/// A port mode whose cages the catalog has no part for, and whose runs no straight cable reaches,
/// is refused for the missing part, not for the hall: NDR200 (four ports to a QM9700 cage) said
/// its 13.9 m run was longer than any cable reaches.
#[test]
fn a_cage_without_parts_is_named_not_the_run() {
    let spec = railyard_spec::parse(
        "name = \"ndr200\"\n[servers]\ncount = 4\n[fabric]\ntech = \"ib-ndr\"\n\
         port_gbps = 200\n[storage]\nfabric = \"none\"\n[management]\n\
         in_band = \"none\"\nout_of_band = \"none\"\n",
        "ndr200.toml",
    )
    .unwrap();
    let e = build(&spec, &Catalog::builtin()).unwrap_err();
    assert_eq!(e.field, "layout");
    assert!(
        e.message
            .contains("no part for a 4-port cage of ib-ndr at 200 Gb/s (a 4-port splitter cable")
            && e.message.contains("--catalog"),
        "{}",
        e.message
    );
}

/// Issue 15: 19 units (a prime) gave every unit a core group of its own: 608 servers cost $65.1M
/// and 609 $49.9M, and at 897 servers the cores went from 128 to 928. Spines now send as many links
/// up as balance the fewest cores, so units share core groups and cost grows with the servers.
#[test]
fn prime_unit_counts_share_core_groups_and_cost_grows_with_servers() {
    let catalog = Catalog::builtin();
    let cost = |n: u32| {
        let f = build_preset("dgx-h100-superpod", self::servers(n)).unwrap();
        (bom::cost(&f, &catalog), count(&f, Tier::Core))
    };
    let (c608, cores608) = cost(608);
    let (c609, cores609) = cost(609);
    assert!(c608 <= c609, "608: {c608}, 609: {c609}");
    assert!(cores608 <= 128 && cores609 <= 128, "{cores608} {cores609}");
    let (c896, _) = cost(896);
    let (c897, cores897) = cost(897);
    assert!(c896 <= c897);
    assert_eq!(cores897, 128);
}

/// Issue 15: rail-optimized designs of 40-port switches in units of 20 were refused past 80 units
/// with a message naming 2,000 servers. The limit is what the topology holds, and the message says it.
#[test]
fn the_rail_optimized_limit_is_what_the_topology_holds() {
    let f = build_preset("dgx-a100-superpod", self::servers(1600)).unwrap();
    assert_eq!(f.meta.scalable_units, Some(80));
    let e = build_preset("dgx-a100-superpod", self::servers(1601)).unwrap_err();
    assert_eq!(e.field, "servers.count");
    assert!(
        e.message.contains("three-tier rail-optimized fabric")
            && e.message.contains("valid: at most 1600 servers"),
        "{e}"
    );
}

/// Issue 15: 96 one-NIC servers on EDR at 2:1 built 4 leaves and 13 spines, each using 4 of its 40
/// ports (the largest switch, 13 uplinks per leaf, spines by the smallest divisor). The search
/// builds 2 spines on the cheapest switch and lists that conventional design as an alternative.
#[test]
fn edr_96_servers_at_2_to_1_share_two_spines() {
    let spec = {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        Overrides {
            servers: Some(96),
            gpus_per_server: Some(1),
            nics_per_server: Some(1),
            tech: Some(Tech::IbEdr),
            topology: Some(railyard_spec::Topology::FatTree),
            oversubscription: Some(2.0),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        railyard_spec::ClusterSpec::from_raw(&raw, "t").unwrap()
    };
    let catalog = Catalog::builtin();
    let d = design(&spec, &catalog, &SearchOptions { alternatives: 3 }).unwrap();
    let f = &d.fabric;
    assert_eq!((count(f, Tier::Leaf), count(f, Tier::Spine)), (4, 2));
    assert_eq!(f.meta.switch_model, "SB7800");
    let chosen = bom::cost(f, &catalog);
    assert_eq!(d.report.cost_usd, chosen);
    let conventional = d
        .report
        .alternatives
        .iter()
        .find(|a| a.conventional)
        .expect("the conventional design is listed");
    assert_eq!(
        (
            conventional.switch_model.as_str(),
            conventional.switches.spine,
            conventional.leaf_uplinks
        ),
        ("QM8790", 13, 13)
    );
    assert!(conventional.cost_delta_usd > 0.0 && !conventional.cost_estimated);
    assert!(conventional
        .differs
        .iter()
        .any(|d| d == "13 spines instead of 2"));
    // Every alternative costs at least as much as the chosen design.
    assert!(d
        .report
        .alternatives
        .iter()
        .all(|a| a.cost_usd >= chosen - 1e-6));
    // The summary says why the switch won: the other switch models and what their best design costs.
    let switch = &d.report.choices[0];
    assert_eq!(
        (switch.key.as_str(), switch.value.as_str()),
        ("switch", "SB7800")
    );
    assert!(
        switch.why.contains("cheapest design of 3 switch models"),
        "{}",
        switch.why
    );
    assert!(
        switch
            .why
            .contains("technology changed from ib-ndr to ib-edr"),
        "{}",
        switch.why
    );
}

/// A tech override to the technology the spec already has changes nothing (issue 15: `compare
/// --vary tech=ib-ndr` on the NDR default swapped QM9700 for QM9790; `plan seed-edr-fat-tree --tech
/// ib-edr` swapped SB7800).
#[test]
fn an_override_that_changes_nothing_changes_nothing() {
    for (preset, tech) in [
        ("dgx-h100-superpod", Tech::IbNdr),
        ("seed-edr-fat-tree", Tech::IbEdr),
    ] {
        let plain = build_preset(preset, Overrides::default()).unwrap();
        let same = build_preset(
            preset,
            Overrides {
                tech: Some(tech),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(plain == same, "{preset}: --tech {tech} changed the design");
    }
}

#[test]
fn superpod_h100_256_servers() {
    let f = build_preset("dgx-h100-superpod", servers(256)).unwrap();
    assert_eq!(
        (
            count(&f, Tier::Leaf),
            count(&f, Tier::Spine),
            count(&f, Tier::Core)
        ),
        (64, 32, 0)
    );
    assert_eq!(f.meta.tiers, 2);
}

#[test]
fn superpod_h100_512_servers_three_tiers() {
    let f = build_preset("dgx-h100-superpod", servers(512)).unwrap();
    f.check().unwrap();
    assert_eq!(
        (
            count(&f, Tier::Leaf),
            count(&f, Tier::Spine),
            count(&f, Tier::Core)
        ),
        (128, 128, 64)
    );
    assert_eq!(links(&f, LinkKind::ServerLeaf), 4096);
    assert_eq!(links(&f, LinkKind::LeafSpine), 4096);
    assert_eq!(links(&f, LinkKind::SpineCore), 4096);
    assert_eq!(f.meta.tiers, 3);
}

fn edr_fat_tree(servers: u32) -> Result<Fabric, BuildError> {
    build_preset(
        "seed-edr-fat-tree",
        Overrides {
            servers: Some(servers),
            gpus_per_server: Some(1),
            nics_per_server: Some(1),
            ..Default::default()
        },
    )
}

/// Al-Fares et al.: two tiers of 36-port switches hold 36^2/2 = 648 hosts, three tiers 36^3/4 = 11,664.
#[test]
fn fat_tree_capacity_k2_over_2_and_k3_over_4() {
    let f = edr_fat_tree(648).unwrap();
    assert_eq!(f.meta.tiers, 2);
    assert_eq!((count(&f, Tier::Leaf), count(&f, Tier::Spine)), (36, 18));
    let f = edr_fat_tree(649).unwrap();
    assert_eq!(f.meta.tiers, 3);
    let f = edr_fat_tree(11_664).unwrap();
    assert_eq!(f.meta.tiers, 3);
    assert_eq!(
        (
            count(&f, Tier::Leaf),
            count(&f, Tier::Spine),
            count(&f, Tier::Core)
        ),
        (648, 648, 324)
    );
    let e = edr_fat_tree(11_665).unwrap_err();
    assert_eq!(e.field, "servers.count");
    assert!(e.message.contains("11664"), "{e}");
}

#[test]
fn seed_two_switch() {
    let f = build_preset("seed-two-switch", Overrides::default()).unwrap();
    assert_eq!(count(&f, Tier::Leaf), 2);
    assert_eq!(links(&f, LinkKind::InterSwitch), 4);
    assert_eq!(links(&f, LinkKind::ServerLeaf), 72);
    // HCA 1,3,5,7 on switch 1, HCA 2,4,6,8 on switch 2.
    for (_, l) in f
        .network_links()
        .filter(|(_, l)| l.kind == LinkKind::ServerLeaf)
    {
        let hca: u32 = f.port_label(l.a).trim_start_matches("hca").parse().unwrap();
        let sw = &f.port_node(l.b).name;
        assert_eq!(sw, if hca % 2 == 1 { "switch1" } else { "switch2" });
    }
}

#[test]
fn seed_leaf_spine() {
    let f = build_preset("seed-leaf-spine", Overrides::default()).unwrap();
    assert_eq!((count(&f, Tier::Leaf), count(&f, Tier::Spine)), (4, 2));
    assert_eq!(links(&f, LinkKind::LeafSpine), 80);
    assert_eq!(links(&f, LinkKind::ServerLeaf), 80);
}

#[test]
fn seed_edr_fat_tree_half_down_half_up() {
    let f = build_preset("seed-edr-fat-tree", Overrides::default()).unwrap();
    for (id, _) in f.switches(Tier::Leaf) {
        let n = f.node(id);
        let down = n
            .ports()
            .filter(|&p| {
                f.port(p)
                    .link()
                    .is_some_and(|l| f.link(l).kind == LinkKind::ServerLeaf)
            })
            .count();
        let up = n
            .ports()
            .filter(|&p| {
                f.port(p)
                    .link()
                    .is_some_and(|l| f.link(l).kind == LinkKind::LeafSpine)
            })
            .count();
        assert_eq!((down, up), (18, 18), "{}", n.name);
    }
    assert_eq!((count(&f, Tier::Leaf), count(&f, Tier::Spine)), (16, 9));
}

#[test]
fn rail_optimized_hca_i_goes_to_leaf_i() {
    let f = build_preset("dgx-h100-superpod", servers(40)).unwrap();
    for (_, l) in f
        .network_links()
        .filter(|(_, l)| l.kind == LinkKind::ServerLeaf)
    {
        let dev = f.port_device(l.a);
        let hca = f.port_label(l.a);
        let su = dev.split('-').next().unwrap();
        let leaf = &f.port_node(l.b).name;
        assert_eq!(leaf, &format!("{su}-leaf{}", hca.trim_start_matches("hca")));
    }
    // 40 servers: two whole units of 32, leaves and uplinks included.
    assert_eq!(count(&f, Tier::Leaf), 16);
    assert_eq!(links(&f, LinkKind::LeafSpine), 16 * 32);
}

#[test]
fn su_size_defaults_to_leaf_down_ports() {
    let f = build_preset("dgx-a100-superpod", Overrides::default()).unwrap();
    assert_eq!(f.meta.su_size, Some(20));
    let f = build_preset("dgx-h100-superpod", Overrides::default()).unwrap();
    assert_eq!(f.meta.su_size, Some(32));
}

#[test]
fn trees_are_balanced() {
    for (preset, n) in [
        ("dgx-h100-superpod", 512),
        ("dgx-a100-superpod", 140),
        ("seed-edr-fat-tree", 200),
    ] {
        let f = build_preset(preset, servers(n)).unwrap();
        let mut pairs: std::collections::BTreeMap<(u32, u32), u32> = Default::default();
        for (_, l) in f
            .network_links()
            .filter(|(_, l)| matches!(l.kind, LinkKind::LeafSpine | LinkKind::SpineCore))
        {
            *pairs
                .entry((f.port(l.a).node.0, f.port(l.b).node.0))
                .or_default() += 1;
        }
        let mut per_lower: std::collections::BTreeMap<u32, std::collections::BTreeSet<u32>> =
            Default::default();
        for (&(lo, _), &c) in &pairs {
            per_lower.entry(lo).or_default().insert(c);
        }
        for (lo, counts) in per_lower {
            assert_eq!(
                counts.len(),
                1,
                "{preset}: {} sends unequal link counts up: {counts:?}",
                f.node(NodeId(lo)).name
            );
        }
    }
}

#[test]
fn every_preset_builds_and_checks() {
    for p in presets::PRESETS {
        let f = build_preset(p.name, Overrides::default())
            .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        f.check().unwrap_or_else(|e| panic!("{}: {e}", p.name));
    }
}

/// Every rack of every preset holds its devices within its height (42U): sixteen 4U Q3400 spines
/// of b200-xdr filled a network rack to U64, where ten fit.
#[test]
fn every_preset_fits_its_racks() {
    let catalog = Catalog::builtin();
    for p in presets::PRESETS {
        let raw = presets::raw(p.name).unwrap();
        let spec = railyard_spec::ClusterSpec::from_raw(&raw, p.name).unwrap();
        let f = build(&spec, &catalog).unwrap();
        let mut top = 0;
        for place in layout::rack_places_of(&f, &spec, &catalog)
            .into_iter()
            .flatten()
        {
            if let (Some(u), Some(h)) = (place.u, place.height_u) {
                top = top.max(u + h - 1);
            }
        }
        assert!(top > 0, "{}: no rack units", p.name);
        assert!(
            top <= spec.layout.rack_units,
            "{}: a rack is filled to U{top}, past {}U",
            p.name,
            spec.layout.rack_units
        );
    }
    // Ten 4U switches to a 42U rack, at most `switches_per_rack` of 1U.
    let raw = presets::raw("b200-xdr").unwrap();
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, "b200-xdr").unwrap();
    assert_eq!(spec.layout.switches_in_rack(4), 10);
    assert_eq!(spec.layout.switches_in_rack(1), 16);
}

/// More servers to a rack than its height holds stand in more racks: six 8U servers to a 42U rack
/// become five (they were drawn up to U48), six to a 48U rack stay six.
#[test]
fn servers_that_do_not_fit_a_rack_take_more_racks() {
    let catalog = Catalog::builtin();
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    raw.layout.servers_per_rack = Some(6);
    for (units, fill) in [(None, 5), (Some(48), 6)] {
        raw.layout.rack_units = units;
        let spec = railyard_spec::ClusterSpec::from_raw(&raw, "dgx-h100-superpod").unwrap();
        let f = build(&spec, &catalog).unwrap();
        assert_eq!(layout::RackFill::of(&f, &spec, &catalog).servers, fill);
        let top = layout::rack_places_of(&f, &spec, &catalog)
            .into_iter()
            .flatten()
            .filter_map(|p| Some(p.u? + p.height_u? - 1))
            .max()
            .unwrap();
        assert!(top <= spec.layout.rack_units, "U{top}");
    }
}

#[test]
fn rail_only_has_no_spines() {
    let f = build_preset("rail-only-h100", Overrides::default()).unwrap();
    assert_eq!((count(&f, Tier::Leaf), count(&f, Tier::Spine)), (8, 0));
    let f = build_preset("rail-only-h100", servers(256)).unwrap();
    assert!(f
        .switches(Tier::Leaf)
        .all(|(_, n)| n.name.starts_with("rail")));
}

#[test]
fn switch_that_cannot_carry_the_speed_is_named() {
    let e = build_preset(
        "dgx-h100-superpod",
        Overrides {
            switch: Some("QM8700".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.field, "fabric.switch");
    assert!(
        e.message.contains("QM9700") && e.message.contains("ib-ndr"),
        "{e}"
    );
}

#[test]
fn tech_change_picks_matching_hardware() {
    let f = build_preset(
        "dgx-h100-superpod",
        Overrides {
            tech: Some(Tech::Roce400g),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(f.meta.switch_model, "SN5600");
    assert_eq!(f.meta.port_mode, "400GbE");
}

#[test]
fn network_ends_agree_and_storage_is_explicitly_unused() {
    let f = build_preset("dgx-h100-superpod", servers(8)).unwrap();
    let unused = f
        .ports
        .iter()
        .filter(|p| p.state == PortState::Unused(Unused::StorageNotPlanned))
        .count();
    // Two storage ports per DGX H100 (RA-11333-001): the storage fabric is planned on its own.
    assert_eq!(unused, 16);
}

#[test]
fn twin_port_cages_share_one_transceiver() {
    let f = build_preset("dgx-h100-superpod", Overrides::default()).unwrap();
    let mut cages = std::collections::BTreeSet::new();
    for m in &f.modules {
        assert!(cages.insert((m.node, m.cage)), "two modules in one cage");
    }
    // Every fibre link end sits in a cage with a module.
    for (_, l) in f.network_links() {
        if let Medium::Fibre { .. } = l.medium {
            for p in [l.a, l.b] {
                assert!(cages.contains(&f.cage_holder(p)));
            }
        }
    }
}

#[test]
fn cage_index_numbers_cages_in_node_order() {
    // Dense: cages counted up from 0 per node.
    let pairs = [
        (NodeId(2), 1),
        (NodeId(0), 2),
        (NodeId(2), 1),
        (NodeId(0), 1),
    ];
    let ix = CageIndex::of(3, pairs.iter().copied());
    assert_eq!(ix.len(), 5);
    assert_eq!(ix.slot(NodeId(0), 2), Some(2));
    assert_eq!(ix.slot(NodeId(2), 1), Some(4));
    assert_eq!(ix.slot(NodeId(1), 0), None);
    assert_eq!(ix.slot(NodeId(9), 0), None);
    let slots: Vec<(NodeId, u32, usize)> = ix.slots().collect();
    assert_eq!(slots.len(), 5);
    assert_eq!(slots[4], (NodeId(2), 1, 4));
    // Sparse: far-apart cage numbers get a slot per distinct pair, still in (node, cage) order.
    let pairs = [(NodeId(1), u32::MAX), (NodeId(0), 7), (NodeId(5), 0)];
    let ix = CageIndex::of(2, pairs.iter().copied());
    assert_eq!(ix.len(), 2);
    assert_eq!(ix.slot(NodeId(0), 7), Some(0));
    assert_eq!(ix.slot(NodeId(1), u32::MAX), Some(1));
    assert_eq!(ix.slot(NodeId(5), 0), None);
    assert_eq!(
        ix.slots().collect::<Vec<_>>(),
        [(NodeId(0), 7, 0), (NodeId(1), u32::MAX, 1)]
    );
    // Built from a fabric: every port's cage is indexed.
    let f = build_preset("dgx-h100-superpod", Overrides::default()).unwrap();
    let ix = CageIndex::new(&f);
    assert!((0..f.ports.len() as u32).all(|p| ix.port_slot(&f, PortId(p)).is_some()));
}

#[test]
fn port_labels_name_nic_and_switch_ports() {
    let f = build_preset("dgx-h100-superpod", Overrides::default()).unwrap();
    let (_, l) = f.network_links().next().unwrap();
    assert_eq!(f.port_label(l.a), "hca1");
    assert_eq!(f.port_label(l.b), "p1");
    let mut s = String::from("x,");
    f.write_port_label(l.b, &mut s);
    assert_eq!(s, "x,p1");
    let mut n = String::new();
    push_u64(&mut n, 0);
    push_u64(&mut n, 18_446_744_073_709_551_615);
    assert_eq!(n, "018446744073709551615");
}

fn size_of(text: &str) -> Result<topo::DesignSize, BuildError> {
    let spec = railyard_spec::parse(text, "t.toml").unwrap();
    let catalog = Catalog::builtin();
    let r = resolve(&spec, &catalog)?;
    let size = topo::size(&r)?;
    size.check(&r)?;
    Ok(size)
}

/// The largest benched design (16,384 XDR servers, 131,072 GPUs) fits the limits with room to spare.
#[test]
fn xdr_16k_fits_the_limits() {
    let size = size_of(include_str!("../../plan/benches/xdr-16k.toml")).unwrap();
    assert_eq!(size.servers, 16_384);
    assert_eq!(size.network_links, 394_368);
    assert!(size.nodes * 4 < topo::MAX_NODES, "{size:?}");
    assert!(size.ports * 4 < topo::MAX_PORTS, "{size:?}");
    assert!(size.links * 4 < topo::MAX_LINKS, "{size:?}");
}

/// A million servers is refused from the counts alone, naming the three-tier limit of the radix (it
/// used to build 8 million NIC ports, 7.4 GB, before finding out).
#[test]
fn designs_past_three_tiers_or_the_limits_are_refused_from_counts() {
    let e = size_of("[servers]\ncount = 1000000\n").unwrap_err();
    assert_eq!(e.field, "servers.count");
    assert!(
        e.message.contains("three-tier rail-optimized fabric")
            && e.message.contains("at most 8192 servers"),
        "{e}"
    );
    let e = size_of("[servers]\ncount = 1000000\n[fabric]\ntopology = \"fat-tree\"\n").unwrap_err();
    assert!(
        e.message.contains("three-tier fat-tree") && e.message.contains("at most 8192 servers"),
        "{e}"
    );
    // 256-port 200GbE switches hold 4 million host ports in three tiers: the size limit refuses it.
    let e = size_of(
        "[servers]\ncount = 400000\ncompute_nics = 8\n[fabric]\ntech = \"roce-200g\"\ntopology = \"fat-tree\"\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "servers.count");
    assert!(e.message.contains("past railyard's limit"), "{e}");
    assert!(e.message.contains("valid: at most about"), "{e}");
}

// fabric.json: the fabric's own file format (fabric_file/).

use crate::fabric_file::{fabric_json, load_fabric_json, FabricFileError};

fn plan(name: &str, o: Overrides) -> Fabric {
    build_preset(name, o).unwrap()
}

#[test]
fn fabric_json_round_trips() {
    let f = plan("seed-leaf-spine", Overrides::default());
    let text = fabric_json(&f);
    let back = load_fabric_json(&text).unwrap();
    assert_eq!(back, f);
    assert!(load_fabric_json("{\"format\":\"x\",\"fabric\":1}").is_err());
    let e = load_fabric_json("{\"format\": 7}").unwrap_err();
    assert!(matches!(e, FabricFileError::Json { line: 1, .. }), "{e}");
}

#[test]
fn fabric_json_round_trips_every_preset() {
    for name in railyard_spec::presets::names() {
        let f = plan(name, Overrides::default());
        let text = fabric_json(&f);
        assert!(text.starts_with("{\"format\":\"railyard-fabric/2\""));
        let back = load_fabric_json(&text).unwrap();
        assert!(back == f, "{name} does not round-trip");
        // Servers are alike: the file is a template and exceptions are not needed.
        assert!(!text.contains("_exceptions"), "{name}");
    }
}

#[test]
fn fabric_json_round_trips_what_it_cannot_predict() {
    let mut f = plan("dgx-h100-superpod", Overrides::default());
    // Break the patterns the format predicts: a renamed server node, a port caged differently, a
    // server-internal link of another length, and a spare switch port at another speed.
    f.nodes[30].name = "elsewhere/gpu9".to_string();
    let nic_port = f.nodes[40].first_port as usize;
    f.ports[nic_port].cage = 99;
    f.links[50].run_m = 0.25;
    let spare = f
        .nodes
        .iter()
        .filter(|n| n.is_switch())
        .flat_map(|n| n.ports())
        .find(|&p| f.port(p).link().is_none())
        .unwrap();
    f.ports[spare.0 as usize].gbps = 1.5;
    f.check().unwrap();
    let text = fabric_json(&f);
    assert!(text.contains("node_exceptions") && text.contains("port_exceptions"));
    assert!(load_fabric_json(&text).unwrap() == f);

    // No servers at all: every node is explicit.
    let mut f = plan("seed-two-switch", Overrides::default());
    f.servers.clear();
    let text = fabric_json(&f);
    assert!(!text.contains("\"template\""));
    assert!(load_fabric_json(&text).unwrap() == f);
}

#[test]
fn fabric_json_refuses_broken_files() {
    let f = plan("seed-leaf-spine", Overrides::default());
    let text = fabric_json(&f);
    let old = text.replace("railyard-fabric/2", "railyard-fabric/1");
    let e = load_fabric_json(&old).unwrap_err();
    assert_eq!(
        e,
        FabricFileError::Format {
            found: "railyard-fabric/1".into()
        }
    );
    assert!(e.to_string().contains("railyard-fabric/2"), "{e}");
    // A port count the nodes cannot fill, and a link to a port that does not exist.
    let ports = format!("\"ports\":{}", f.ports.len());
    let more = text.replace(&ports, &format!("\"ports\":{}", f.ports.len() + 5));
    assert!(matches!(
        load_fabric_json(&more),
        Err(FabricFileError::Records(_))
    ));
    let links = text.replacen("\"links\":[[", "\"links\":[[99999999,", 1);
    assert!(load_fabric_json(&links).is_err());
}

/// A few bytes of fabric.json can name billions of ports (a switch's port count); the loader
/// refuses past the design limits before allocating them.
#[test]
fn fabric_json_counts_past_the_limits_are_refused_before_allocating() {
    let f = plan("seed-leaf-spine", Overrides::default());
    let mut v: serde_json::Value = serde_json::from_str(&fabric_json(&f)).unwrap();
    let extra = 3_000_000_000u64;
    let last = v["nodes"].as_array_mut().unwrap().last_mut().unwrap();
    let ports = last[5].as_u64().unwrap();
    last[5] = (ports + extra).into();
    v["ports"] = (v["ports"].as_u64().unwrap() + extra).into();
    let e = load_fabric_json(&v.to_string()).unwrap_err().to_string();
    assert!(
        e.contains("past railyard's limit") && e.contains("ports"),
        "{e}"
    );
}

/// cabling.csv ids: `C` and the 1-based cable number, as wide as the count (two digits at least),
/// read back in either case.
#[test]
fn cable_ids_number_the_network_links() {
    // One width in every design: enough digits for the most links a design may have.
    assert_eq!(cable_id(0, 2040), "C0000001");
    assert_eq!(cable_id(41, 99), "C0000042");
    assert_eq!(cable_id(0, 5), "C0000001");
    let most = crate::topo::MAX_LINKS as usize;
    assert_eq!(cable_id(most - 1, most).len(), 1 + CABLE_ID_DIGITS);
    assert_eq!(cable_index("C0000042", 2040), Some(41));
    assert_eq!(cable_index("C0042", 2040), Some(41));
    assert_eq!(cable_index("c42", 99), Some(41));
    for bad in ["C0", "C100", "42", "Cx", ""] {
        assert_eq!(cable_index(bad, 99), None, "{bad}");
    }
    let f = plan("seed-leaf-spine", Overrides::default());
    let cables = f.cables();
    assert_eq!(cables.len(), f.network_links().count());
    assert!(cables.iter().all(|&l| f.link(l).kind.is_network()));
}

/// DGX H100's ConnectX-7 ports leave through twin-port OSFP cages (`nic_ports_per_cage = 2`). With
/// another technology the NIC is picked anew, and the cages go with the NIC the preset named: at
/// HDR each ConnectX-6 port is a QSFP56 cage of its own, cabled straight (200 Gb/s AOC), never
/// through the 2 x HDR100 splitter, whose legs run at half the link's rate; at 400GbE the same
/// ConnectX-7 comes back, and with it the twin-port cages.
#[test]
fn a_technology_change_keeps_twin_port_nic_cages_only_with_their_nic() {
    let build = |tech| {
        build_preset(
            "dgx-h100-superpod",
            Overrides {
                servers: Some(16),
                tech: Some(tech),
                storage: Some(false),
                management: Some(false),
                ..Default::default()
            },
        )
        .unwrap()
    };
    // The model of the first server's NICs and the cages of hca1's and hca2's first ports.
    let cages = |f: &Fabric| {
        let nics: Vec<_> = f
            .nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Nic { .. }))
            .take(2)
            .collect();
        let cage = |i: usize| f.port(PortId(nics[i].first_port)).cage;
        (nics[0].model.to_string(), cage(0), cage(1))
    };
    let hdr = build(Tech::IbHdr);
    let parts = bom::parts(&hdr, &Catalog::builtin());
    assert!(
        parts.iter().all(|p| p.part != "AOCS-QSFP56-2x100G"),
        "{parts:?}"
    );
    // hca1 and hca2 are single-port NICs: their ports are cages 1 and 2 of the server.
    assert_eq!(cages(&hdr), ("ConnectX-6".to_string(), 1, 2));
    let f = build(Tech::Roce400g);
    assert_eq!(cages(&f), ("ConnectX-7".to_string(), 1, 1));
    let parts = bom::parts(&f, &Catalog::builtin());
    assert!(
        parts.iter().any(|p| p.part == "OSFP-2x400G-SR4"),
        "{parts:?}"
    );
}

/// A design whose links share cages the catalog has no part for (100GbE on the SN5600 puts four
/// links in each 800G cage, and the catalog has no 4-way splitter or 4-port transceiver) cannot be
/// ordered: the search passes over it although it is the cheapest, takes the cheapest design whose
/// cables can be ordered (SN4600C), and says why; where nothing else carries the technology
/// (200GbE: only the SN5600), it still takes it (the plan warns).
#[test]
fn the_search_passes_over_designs_whose_cables_cannot_be_ordered() {
    let designed = |tech| {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        Overrides {
            tech: Some(tech),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = railyard_spec::ClusterSpec::from_raw(&raw, "dgx-h100-superpod").unwrap();
        let catalog = Catalog::builtin();
        let d = design(&spec, &catalog, &SearchOptions::default()).unwrap();
        let orderable = layout::shared_cage_cables(&d.fabric, &catalog).is_none();
        let why = d
            .report
            .choices
            .iter()
            .find(|c| c.key == "switch")
            .map(|c| (c.value.clone(), c.why.clone()))
            .unwrap();
        (orderable, why)
    };
    let (orderable, (switch, why)) = designed(Tech::Roce100g);
    assert!(orderable);
    assert_eq!(switch, "SN4600C");
    assert!(
        why.contains("a design with SN5600 at 100GbE costs $2,095,544")
            && why.contains("passed over"),
        "{why}"
    );
    // Nor is one named as the best with another switch or listed as an alternative: every
    // SN5600 design at 100GbE has such cages (it named one at ~$2,535,544 and listed six).
    assert!(
        why.contains(
            "1 switch model carrying roce-100g at 100 Gb/s with cables that can be ordered"
        ) && !why.contains("the best with SN5600"),
        "{why}"
    );
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    Overrides {
        tech: Some(Tech::Roce100g),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, "dgx-h100-superpod").unwrap();
    let catalog = Catalog::builtin();
    let d = design(&spec, &catalog, &SearchOptions { alternatives: 6 }).unwrap();
    assert_eq!(d.report.alternatives.len(), 6);
    assert!(
        d.report
            .alternatives
            .iter()
            .all(|a| a.switch_model == "SN4600C"),
        "{:?}",
        d.report.alternatives
    );
    let (orderable, (switch, _)) = designed(Tech::Roce200g);
    assert!(!orderable);
    assert_eq!(switch, "SN5600");
}

/// The shared-cage groups of `f` whose links are all of `kind`, each asserted to be one twin-port
/// assembly (the two ports of a cage meeting one cage at the other end); how many there are.
fn twin_cage_groups(f: &Fabric, kind: LinkKind) -> usize {
    let net = f.cables();
    let mut groups = 0;
    for (form, links) in layout::shared_cage_groups(f) {
        if links.iter().all(|&i| f.link(net[i as usize]).kind == kind) {
            groups += 1;
            assert_eq!(
                form,
                layout::GroupForm::Assembly {
                    form: railyard_catalog::CableForm::Twin,
                    ports: 2
                },
                "{kind:?}"
            );
        }
    }
    groups
}

/// The storage fabric spreads a leaf's uplinks over the spines a cage at a time: both ports of a
/// QM9700 twin-port cage go to one spine, onto one cage there, so one twin-port cable joins them
/// where the run is short enough for copper. Round-robin by port sent a cage's two ports to two
/// spines, which only transceivers and fibre reach: on the default design 48 leaf-spine links now
/// run on twin-port DACs (the plan counted 24 DAC of 518 cables, now 48 of 494) and the storage
/// fabric costs $1,249,393, was $1,308,265 (17.06 kW, was 17.78).
#[test]
fn storage_leaf_uplinks_keep_a_cage_on_one_spine() {
    let spec = presets::load("dgx-h100-superpod").unwrap();
    let catalog = Catalog::builtin();
    let compute = build(&spec, &catalog).unwrap();
    let nets = networks::plan(&spec, &catalog, &compute).unwrap();
    let storage = &nets[0].fabric;
    assert_eq!(nets[0].kind, networks::NetworkKind::Storage);
    // 240 leaf-spine links in pairs.
    assert_eq!(twin_cage_groups(storage, LinkKind::LeafSpine), 120);
    let twin_dac = storage
        .network_links()
        .filter(|(_, l)| {
            l.kind == LinkKind::LeafSpine
                && matches!(
                    &l.medium,
                    Medium::Cable {
                        kind: railyard_catalog::CableKind::Dac,
                        ..
                    }
                )
        })
        .count();
    assert_eq!(twin_dac, 48);
    assert_eq!(bom::cost(storage, &catalog).round(), 1_249_393.0);
}

/// The compute fabric spreads a leaf's uplinks a cage at a time too (`Ctx::cage`), so where the
/// hall is compact enough for copper every leaf-spine cage pair takes one twin-port cable. 64 DGX
/// H100 in two 32-server units, four racks to a 1 m row: every one of the 512 leaf-spine links was
/// on a transceiver at each end (a twin-port cage's two ports went to two spines), 1,024 SR4 optics
/// and 512 fibres, $741,120; now 256 twin-port active copper cables of 4 and 5 m, $332,800.
#[test]
fn compute_leaf_uplinks_keep_a_cage_on_one_spine() {
    let mut spec = presets::load("dgx-h100-superpod").unwrap();
    spec.servers.count = 64;
    spec.layout.racks_per_row = 4;
    spec.layout.servers_per_rack = 4;
    spec.layout.row_pitch_m = 1.0;
    spec.layout.tray_drop_m = 0.2;
    spec.layout.slack = 0.0;
    let catalog = Catalog::builtin();
    let f = build(&spec, &catalog).unwrap();
    assert_eq!(twin_cage_groups(&f, LinkKind::LeafSpine), 256);
    let leaf_spine: Vec<_> = f
        .network_links()
        .filter(|(_, l)| l.kind == LinkKind::LeafSpine)
        .collect();
    assert_eq!(leaf_spine.len(), 512);
    assert!(
        leaf_spine.iter().all(|(_, l)| matches!(
            &l.medium,
            Medium::Cable {
                kind: railyard_catalog::CableKind::Acc,
                ..
            }
        )),
        "every leaf-spine link on twin-port active copper"
    );

    // Three tiers: a spine's uplinks meet the cores a cage at a time as well (500 servers: before,
    // every spine cage went to two cores and 256 spine-core links in 4.6 m runs took optics).
    let mut spec = presets::load("dgx-h100-superpod").unwrap();
    spec.servers.count = 500;
    let f = build(&spec, &catalog).unwrap();
    assert!(twin_cage_groups(&f, LinkKind::SpineCore) > 0);
}

/// A multi-port cable must carry the links' rate on every port (`port_gbps`): DGX H100's twin-port
/// ConnectX-7 cages at HDR (the NIC named, so its cages kept) took the HDR splitters, whose legs
/// are HDR100 (100 Gb/s), for 1,016 HDR links at 200 Gb/s. The catalog has no 2 x 200G splitter,
/// so the links stay straight cables the plan warns cannot be ordered; the HDR100 mode's cages
/// still take the HDR100 splitters.
#[test]
fn a_splitter_carries_the_links_rate_on_every_leg() {
    let catalog = Catalog::builtin();
    let hdr100 = |f: &Fabric| {
        f.network_links()
            .filter(|(_, l)| {
                l.medium.part().is_some_and(|p| {
                    catalog
                        .cables
                        .get(p)
                        .is_some_and(|c| c.port_gbps == Some(100))
                })
            })
            .count()
    };
    let f = build_preset(
        "dgx-h100-superpod",
        Overrides {
            tech: Some(Tech::IbHdr),
            nic: Some("ConnectX-7".to_string()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(f.meta.port_mode, "HDR");
    assert_eq!(hdr100(&f), 0);
    let cages = layout::shared_cage_cables(&f, &catalog).unwrap();
    assert_eq!(cages.splitter, 1016, "{cages:?}");
}

/// The preset's 6 storage spines are the reference's for its 127 servers: one server took 2 leaves
/// and 6 spines ($285k for 3 ports); another size takes the cheapest count that balances it, and
/// the note on a storage leaf short of storage ports says what it holds and runs at.
#[test]
fn storage_spines_follow_the_size_and_short_leaves_say_so() {
    let catalog = Catalog::builtin();
    let storage = |o: Overrides| {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        o.apply(&mut raw).unwrap();
        let spec = railyard_spec::ClusterSpec::from_raw(&raw, "dgx-h100-superpod").unwrap();
        let compute = build(&spec, &catalog).unwrap();
        networks::plan(&spec, &catalog, &compute)
            .unwrap()
            .into_iter()
            .find(|n| n.kind == networks::NetworkKind::Storage)
            .unwrap()
    };
    let spines = |n: &networks::Network| n.fabric.switches(Tier::Spine).count();
    let one = storage(servers(1));
    assert_eq!(spines(&one), 1, "{:?}", one.notes);
    let notes = one.notes.join("\n");
    assert!(
        notes.contains("1 storage leaf of 2 storage ports + 2 uplinks, 1 storage port attached: the leaf holds 1 of 2, on all 2 uplinks (0.5:1; leaves are built whole)"),
        "{notes}"
    );
    assert!(
        notes.contains("the preset's 6 storage spines are the reference's, for its size: 1 here"),
        "{notes}"
    );
    // The reference's own size keeps them, given or not.
    for o in [Overrides::default(), servers(127)] {
        let r = storage(o);
        assert_eq!(spines(&r), 6);
        assert!(
            r.notes
                .iter()
                .any(|n| n == "2 storage leaves of 24 storage ports + 24 uplinks (1:1)"),
            "{:?}",
            r.notes
        );
    }
}

/// The switch choice names what else the cheaper design changes: on two servers QM9790 alone
/// saves $36,000 and the unit of 2 servers (not the preset's 32) the rest; it credited the switch
/// with all $477,000.
#[test]
fn the_switch_choice_names_the_shape_the_saving_comes_with() {
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    servers(2).apply(&mut raw).unwrap();
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, "dgx-h100-superpod").unwrap();
    let catalog = Catalog::builtin();
    let d = design(&spec, &catalog, &SearchOptions::default()).unwrap();
    let why = &d.report.choices[0].why;
    assert!(
        why.contains("a design with QM9790 and units of 2 servers instead of 32, 2 uplinks per leaf instead of 32 costs $351,688"),
        "{why}"
    );
}

/// Two switches with one HCA per server: odd servers on switch 1, even on switch 2, as a server's
/// odd and even HCAs are split where it has several. Every HCA went to switch 1 (its 0-based rail is
/// even), so switch 2 held only the inter-switch cables and the plan's "9 host ports per switch"
/// was false.
#[test]
fn two_switches_with_one_hca_per_server_split_the_servers() {
    let f = build_preset(
        "seed-two-switch",
        Overrides {
            nics_per_server: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    let hosts_on = |name: &str| {
        f.network_links()
            .filter(|(_, l)| l.kind == LinkKind::ServerLeaf && f.port_device(l.b) == name)
            .count()
    };
    let servers = f.servers.len();
    assert_eq!(hosts_on("switch1"), servers.div_ceil(2));
    assert_eq!(hosts_on("switch2"), servers / 2);
}
