use super::*;
use railyard_catalog::Tech;
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
