use super::*;
use proptest::prelude::*;
use railyard_catalog::Catalog;
use std::collections::BTreeSet;

fn plan(preset: &str, servers: Option<u32>, oversubscription: Option<f64>) -> Fabric {
    let mut spec = railyard_spec::presets::load(preset).unwrap();
    if let Some(n) = servers {
        spec.servers.count = n;
    }
    if let Some(o) = oversubscription {
        spec.fabric.oversubscription = o;
    }
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

/// The lines Slurm reads (comments dropped).
fn lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

/// Every server once under one leaf, every leaf below the top, names unique.
fn assert_tree(f: &Fabric, t: &Tree) {
    let mut nodes: Vec<&str> = t
        .leaves()
        .flat_map(|s| s.nodes.iter().map(String::as_str))
        .collect();
    nodes.sort();
    let mut servers: Vec<&str> = f.servers.iter().map(|s| s.name.as_str()).collect();
    servers.sort();
    assert_eq!(nodes, servers, "{}", f.meta.name);
    let names: BTreeSet<&str> = t.switches.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.len(), t.switches.len());
    let physical: usize = t
        .switches
        .iter()
        .filter(|s| !s.joined)
        .map(|s| s.members.len())
        .sum();
    assert_eq!(physical, f.nodes.iter().filter(|n| n.is_switch()).count());
    for s in &t.switches {
        assert!(s.children.iter().all(|&c| t.switches[c].level < s.level));
        assert_eq!(s.level == 0, !s.nodes.is_empty(), "{}", s.name);
    }
}

/// A Slurm line's value for a key.
fn value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

#[test]
fn two_tier_superpod_is_a_leaf_per_unit_under_one_spine_switch() {
    let f = plan("dgx-h100-superpod", Some(40), None);
    let e = topology_conf(&f, None, Plugin::Tree).unwrap();
    assert_eq!(
        lines(&e.text),
        [
            "SwitchName=su1-leaf1-8 Nodes=su1-srv[01-32] LinkSpeed=400",
            "SwitchName=su2-leaf1-8 Nodes=su2-srv[01-08] LinkSpeed=400",
            "SwitchName=spine01-08 Switches=su1-leaf1-8,su2-leaf1-8 LinkSpeed=400",
        ]
    );
    assert!(e
        .text
        .contains("# su1-leaf[1-8]: 8 switches, one to Slurm\n"));
    assert!(e.notes.is_empty(), "{:?}", e.notes);
    assert_eq!(
        e.summary,
        "topology/tree: 40 nodes, 2 leaf switches (of 16 leaves), 1 switch above"
    );
    assert_tree(&f, &tree(&f, None).unwrap());
}

#[test]
fn three_tier_fat_tree_has_a_switch_per_pod_under_the_cores() {
    // 36-port EDR switches at 2:1: 6 servers of 4 NICs a leaf, pods of 17 leaves, 24 cores.
    let f = plan("seed-edr-fat-tree", Some(400), Some(2.0));
    assert_eq!(f.meta.tiers, 3);
    let t = tree(&f, None).unwrap();
    assert_tree(&f, &t);
    let leaves: Vec<&Switch> = t.leaves().collect();
    assert_eq!(leaves.len(), 67);
    assert!(leaves
        .iter()
        .all(|l| l.members.len() == 1 && l.nodes.len() <= 6));
    let pods: Vec<&Switch> = t.switches.iter().filter(|s| s.level == 1).collect();
    assert_eq!(pods.len(), 4);
    for (p, pod) in pods.iter().enumerate() {
        assert_eq!(pod.name, format!("pod{}-spine01-12", p + 1));
        assert_eq!(pod.members.len(), 12);
        // Its leaves are the ones its spines are cabled to.
        for &c in &pod.children {
            assert!(f.links.iter().any(|l| {
                let (a, b) = (f.port_node(l.a), f.port_node(l.b));
                a.name == t.switches[c].members[0] && b.name.starts_with(&format!("pod{}-", p + 1))
            }));
        }
    }
    assert_eq!(pods.iter().map(|p| p.children.len()).sum::<usize>(), 67);
    let top: Vec<&Switch> = t.switches.iter().filter(|s| s.level == 2).collect();
    assert_eq!(top.len(), 1);
    assert_eq!(top[0].name, "core01-24");
    assert_eq!(top[0].children.len(), 4);
    let text = t.conf();
    assert!(lines(&text).contains(
        &"SwitchName=core01-24 Switches=pod1-spine01-12,pod2-spine01-12,pod3-spine01-12,pod4-spine01-12 LinkSpeed=100"
    ));
    assert!(lines(&text).contains(&"SwitchName=pod1-spine01-12 Switches=leaf[01-17] LinkSpeed=100"));
    // Pods of 17 leaves are no power of two: BlockSizes is the base block alone, and says why.
    let (block, notes) = t.block_conf();
    assert!(block.ends_with("BlockSizes=6\n"), "{block}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("group 17 base blocks each, not a power of two")),
        "{notes:?}"
    );
}

#[test]
fn three_tier_rail_optimized_pods_holding_whole_rails_are_one_switch() {
    // 300 DGX H100: 10 units; a pod holds whole rails of every unit, so every pod's spines reach
    // every unit and the pods are one switch to Slurm, under the cores.
    let f = plan("dgx-h100-superpod", Some(300), None);
    assert_eq!(f.meta.tiers, 3);
    let t = tree(&f, None).unwrap();
    assert_tree(&f, &t);
    assert_eq!(t.leaves().count(), 10);
    let above: Vec<(&str, u32, usize)> = t
        .switches
        .iter()
        .filter(|s| s.level > 0)
        .map(|s| (s.name.as_str(), s.level, s.children.len()))
        .collect();
    assert_eq!(above, [("pod1-3-spine01-32", 1, 10), ("core01-64", 2, 1)]);
}

#[test]
fn two_switches_joined_by_their_cables_get_a_switch_above_them() {
    // One HCA a server: odd servers on switch1, even on switch2.
    let mut raw = railyard_spec::presets::raw("seed-two-switch").unwrap();
    let o = railyard_spec::Overrides {
        nics_per_server: Some(1),
        ..Default::default()
    };
    o.apply(&mut raw).unwrap();
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, "test").unwrap();
    let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
    let t = tree(&f, None).unwrap();
    assert_tree(&f, &t);
    assert_eq!(
        lines(&t.conf()),
        [
            "SwitchName=switch1 Nodes=srv[01,03,05,07,09] LinkSpeed=200",
            "SwitchName=switch2 Nodes=srv[02,04,06,08] LinkSpeed=200",
            "SwitchName=switch1-2 Switches=switch[1-2] LinkSpeed=200",
        ]
    );
    assert!(t.switches[2].joined);
}

#[test]
fn servers_split_between_leaves_go_under_the_leaf_with_most_of_their_nics() {
    // seed-leaf-spine: 20 NIC ports a leaf, 8 per server: srv03 and srv08 have 4 on each of two.
    let f = plan("seed-leaf-spine", None, None);
    let e = topology_conf(&f, None, Plugin::Tree).unwrap();
    assert_eq!(
        lines(&e.text),
        [
            "SwitchName=leaf01 Nodes=srv[01-03] LinkSpeed=200",
            "SwitchName=leaf02 Nodes=srv[04-05] LinkSpeed=200",
            "SwitchName=leaf03 Nodes=srv[06-08] LinkSpeed=200",
            "SwitchName=leaf04 Nodes=srv[09-10] LinkSpeed=200",
            "SwitchName=spine01-02 Switches=leaf[01-04] LinkSpeed=200",
        ]
    );
    assert_eq!(e.notes.len(), 1);
    assert!(
        e.notes[0].starts_with("2 servers (srv[03,08]) reach leaves"),
        "{:?}",
        e.notes
    );
}

#[test]
fn every_preset_gives_a_tree_of_all_its_servers() {
    for p in railyard_spec::presets::PRESETS {
        let f = plan(p.name, None, None);
        let t = tree(&f, None).unwrap();
        assert_tree(&f, &t);
        // A node's line in the file names it among the leaf's nodes as Slurm expands them.
        for line in lines(&t.conf()) {
            let name = value(line, "SwitchName").unwrap();
            let s = t.switches.iter().find(|s| s.name == name).unwrap();
            if let Some(nodes) = value(line, "Nodes") {
                assert_eq!(hostlist::expand(nodes).unwrap(), s.nodes, "{}", p.name);
            }
        }
    }
}

#[test]
fn site_names_rename_nodes_and_switches() {
    let f = plan("dgx-h100-superpod", Some(40), None);
    let mut csv = String::from("plan,site\n");
    for i in 1..=32 {
        csv.push_str(&format!("su1-srv{i:02},gpu{i:03}\n"));
    }
    for r in 1..=8 {
        csv.push_str(&format!("su1-leaf{r},ib-leaf-a{r:02}\n"));
    }
    csv.push_str("spine03,ib-core-x\n");
    let names = NameMap::parse(&csv).unwrap();
    names.check(&f).unwrap();
    let e = topology_conf(&f, Some(&names), Plugin::Tree).unwrap();
    assert_eq!(
        lines(&e.text),
        [
            "SwitchName=ib-leaf-a01-08 Nodes=gpu[001-032] LinkSpeed=400",
            "SwitchName=su2-leaf1-8 Nodes=su2-srv[01-08] LinkSpeed=400",
            // spine03 renamed: the spines no longer share one name with a range.
            "SwitchName=ib-core-x+7 Switches=ib-leaf-a01-08,su2-leaf1-8 LinkSpeed=400",
        ]
    );
    assert!(e
        .text
        .contains("# ib-core-x,spine[01-02,04-08]: 8 switches, one to Slurm\n"));
    let (block, _) = tree(&f, Some(&names)).unwrap().block_conf();
    assert!(
        block.contains("\nBlockName=ib-leaf-a01-08 Nodes=gpu[001-032]\n"),
        "{block}"
    );
}

#[test]
fn names_slurm_cannot_take_are_refused_or_cleaned() {
    let f = plan("dgx-h100-superpod", Some(40), None);
    let map = |csv: &str| NameMap::parse(csv).unwrap();
    let e = tree(&f, Some(&map("su1-srv01,\"gpu 001\"\n"))).unwrap_err();
    assert_eq!(
        e,
        SlurmError::NodeName {
            server: "su1-srv01".into(),
            name: "gpu 001".into()
        }
    );
    assert!(e.to_string().contains("--names"), "{e}");
    let e = tree(&f, Some(&map("su1-srv01,su1-srv02\n"))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "servers su1-srv01 and su1-srv02 would both be Slurm node \"su1-srv02\"; give them distinct site names with --names"
    );
    // A switch's name is Slurm's own: what it cannot take becomes _, and a note says so.
    let t = tree(&f, Some(&map("spine01,\"core [a]\"\n"))).unwrap();
    assert!(t
        .switches
        .iter()
        .any(|s| s.members.contains(&"core__a_".to_string())));
    assert_eq!(
        t.notes,
        ["1 switch name held characters Slurm cannot take, written as _ (\"core [a]\" is core__a_)"]
    );
    let long = "x".repeat(65);
    let leaf_spine = plan("seed-leaf-spine", None, None);
    let e = tree(&leaf_spine, Some(&map(&format!("leaf01,{long}\n")))).unwrap_err();
    assert!(matches!(e, SlurmError::LongSwitchName { .. }), "{e}");
}

#[test]
fn group_names_range_the_numbers_that_vary() {
    let names = |v: &[&str]| group_name(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(names(&["leaf01"]), "leaf01");
    assert_eq!(
        names(&["su1-leaf1", "su1-leaf2", "su1-leaf3"]),
        "su1-leaf1-3"
    );
    assert_eq!(names(&["rail1-leaf01", "rail2-leaf01"]), "rail1-2-leaf01");
    assert_eq!(
        names(&[
            "rail1-spine1",
            "rail1-spine2",
            "rail2-spine1",
            "rail2-spine2"
        ]),
        "rail1-2-spine1-2"
    );
    assert_eq!(names(&["spine09", "spine10"]), "spine09-10");
    // Not every combination, a gap, another width, other text: the first and how many more.
    assert_eq!(names(&["r1-s1", "r1-s2", "r2-s1"]), "r1-s1+2");
    assert_eq!(names(&["leaf1", "leaf3"]), "leaf1+1");
    assert_eq!(names(&["leaf09", "leaf1"]), "leaf09+1");
    assert_eq!(names(&["core", "spine"]), "core+1");
}

#[test]
fn blocks_follow_pods_whose_leaf_groups_are_a_power_of_two() {
    // Two pods of two leaf groups of 4 nodes, under one top; written pod by pod.
    let leaf = |name: &str, nodes: &[&str]| Switch {
        name: name.into(),
        members: vec![name.into()],
        level: 0,
        nodes: nodes.iter().map(|s| s.to_string()).collect(),
        children: Vec::new(),
        link_speed: None,
        joined: false,
    };
    let up = |name: &str, level: u32, children: Vec<usize>| Switch {
        level,
        children,
        nodes: Vec::new(),
        ..leaf(name, &[])
    };
    let t = Tree {
        origin: "test".into(),
        switches: vec![
            leaf("l1", &["n1", "n2", "n3", "n4"]),
            leaf("l2", &["n5", "n6", "n7", "n8"]),
            leaf("l3", &["n9", "n10", "n11", "n12"]),
            leaf("l4", &["n13", "n14", "n15"]),
            up("pod1", 1, vec![0, 2]),
            up("pod2", 1, vec![1, 3]),
            up("top", 2, vec![4, 5]),
        ],
        notes: Vec::new(),
    };
    let (text, notes) = t.block_conf();
    assert_eq!(
        lines(&text),
        [
            "BlockName=l1 Nodes=n[1-4]",
            "BlockName=l3 Nodes=n[9-12]",
            "BlockName=l2 Nodes=n[5-8]",
            "BlockName=l4 Nodes=n[13-15]",
            "BlockSizes=4,8",
        ]
    );
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].starts_with("1 of 4 blocks holds fewer nodes than the base block of 4 (l4: 3)")
    );
}

#[test]
fn default_plan_blocks_are_its_scalable_units() {
    let f = plan("dgx-h100-superpod", None, None);
    let e = topology_conf(&f, None, Plugin::Block).unwrap();
    assert_eq!(
        lines(&e.text),
        [
            "BlockName=su1-leaf1-8 Nodes=su1-srv[01-32]",
            "BlockName=su2-leaf1-8 Nodes=su2-srv[01-32]",
            "BlockName=su3-leaf1-8 Nodes=su3-srv[01-32]",
            "BlockName=su4-leaf1-8 Nodes=su4-srv[01-31]",
            "BlockSizes=32",
        ]
    );
    assert!(
        e.notes[0].contains("25.05 and later take it"),
        "{:?}",
        e.notes
    );
}

fn name_strategy() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "a", "su1-srv", "node-", "x9y", "gpu"]),
        prop::option::of((0u64..3000, 0usize..5)),
    )
        .prop_map(|(prefix, number)| match number {
            Some((n, w)) => format!("{prefix}{n:0w$}"),
            None => format!("{prefix}z"),
        })
}

proptest! {
    /// Whatever the names, Slurm's parser reads back exactly them from the compressed form.
    #[test]
    fn hostlists_round_trip(names in prop::collection::vec(name_strategy(), 0..200)) {
        let expr = hostlist::compress(&names);
        let mut back = hostlist::expand(&expr).unwrap();
        back.sort();
        let mut want = names.clone();
        want.sort();
        want.dedup();
        prop_assert_eq!(back, want, "{}", expr);
    }
}
