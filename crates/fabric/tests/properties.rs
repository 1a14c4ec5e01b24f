//! Property tests: random valid specs over every topology and technology either build into a fabric
//! that keeps the graph invariants, or are refused with a [`BuildError`]; building never panics.

use proptest::prelude::*;
use railyard_catalog::{CableForm, Catalog, Tech};
use railyard_fabric::{
    bom, build, topo::leaf_split, BuildError, Fabric, LinkKind, Medium, NodeKind, Tier,
};
use railyard_plan::Plan;
use railyard_spec::{ClusterSpec, Topology};
use std::sync::OnceLock;

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(Catalog::builtin)
}

/// A random valid spec, as the TOML a user would write.
#[derive(Debug, Clone)]
struct Case {
    servers: u32,
    gpus: u32,
    nics: u32,
    tech: Tech,
    topology: Topology,
    oversubscription: u32,
    placement: &'static str,
    servers_per_rack: u32,
}

impl Case {
    fn toml(&self) -> String {
        format!(
            r#"name = "prop"
[servers]
count = {}
gpus_per_server = {}
compute_nics = {}
[fabric]
tech = "{}"
topology = "{}"
oversubscription = {}.0
[layout]
leaf_placement = "{}"
servers_per_rack = {}
"#,
            self.servers,
            self.gpus,
            self.nics,
            self.tech,
            self.topology,
            self.oversubscription,
            self.placement,
            self.servers_per_rack
        )
    }

    fn spec(&self) -> ClusterSpec {
        let raw = railyard_spec::parse_raw(&self.toml(), "prop").expect("generated TOML parses");
        ClusterSpec::from_raw(&raw, "prop").expect("generated spec is valid")
    }
}

fn case() -> impl Strategy<Value = Case> {
    (
        // Small counts often, so the one- and two-switch designs fit as well as being refused.
        prop_oneof![1u32..=40, 1u32..=300],
        prop::sample::select(vec![1u32, 2, 4, 8]),
        any::<prop::sample::Index>(),
        prop::sample::select(Tech::ALL.to_vec()),
        prop::sample::select(Topology::ALL.to_vec()),
        1u32..=3,
        prop::sample::select(vec!["end-of-row", "middle-of-row", "top-of-rack"]),
        prop::sample::select(vec![1u32, 2, 4, 8]),
    )
        .prop_map(
            |(
                servers,
                gpus,
                nic,
                tech,
                topology,
                oversubscription,
                placement,
                servers_per_rack,
            )| {
                let divisors: Vec<u32> = (1..=gpus).filter(|d| gpus % d == 0).collect();
                Case {
                    servers,
                    gpus,
                    nics: *nic.get(&divisors),
                    tech,
                    topology,
                    oversubscription,
                    placement,
                    servers_per_rack,
                }
            },
        )
}

/// Builds, turning a panic into a test failure that names the spec.
fn try_build(c: &Case) -> Result<Fabric, BuildError> {
    let spec = c.spec();
    std::panic::catch_unwind(|| build(&spec, catalog()))
        .unwrap_or_else(|_| panic!("building panicked for\n{}", c.toml()))
}

/// The counts computed from the design's numbers alone, before building, are the built fabric's.
fn check_size(spec: &ClusterSpec, f: &Fabric) -> Result<(), TestCaseError> {
    let d = railyard_fabric::design(spec, catalog(), &Default::default()).expect("built once");
    prop_assert!(&d.fabric == f, "the design search is deterministic");
    let size = railyard_fabric::topo::size(&d.resolved).expect("built, so it has a size");
    let switches = f.nodes.iter().filter(|n| n.is_switch()).count() as u64;
    let network = f.network_links().count() as u64;
    prop_assert_eq!(
        (
            size.servers,
            size.switches,
            size.nodes,
            size.ports,
            size.links,
            size.network_links
        ),
        (
            f.servers.len() as u64,
            switches,
            f.nodes.len() as u64,
            f.ports.len() as u64,
            f.links.len() as u64,
            network
        ),
        "counts before building differ from the fabric for\n{}",
        spec.origin
    );
    Ok(())
}

fn count(f: &Fabric, kind: LinkKind) -> u64 {
    f.links.iter().filter(|l| l.kind == kind).count() as u64
}

fn check_fabric(c: &Case, f: &Fabric) -> Result<(), TestCaseError> {
    prop_assert_eq!(f.check(), Ok(()));

    // Every port is used by at most one link, and every link's ports point back to it.
    let mut uses = vec![0u32; f.ports.len()];
    for (i, l) in f.links.iter().enumerate() {
        for p in [l.a, l.b] {
            uses[p.0 as usize] += 1;
            prop_assert_eq!(f.port(p).link().map(|id| id.0), Some(i as u32));
        }
    }
    prop_assert!(uses.iter().all(|&n| n <= 1), "a port carries two links");

    // Network links join two different nodes; `a` is the end nearer the servers.
    for (_, l) in f.network_links() {
        let (a, b) = (f.port_node(l.a), f.port_node(l.b));
        prop_assert_ne!(f.port(l.a).node, f.port(l.b).node);
        prop_assert!(b.is_switch(), "{} -> {}", a.name, b.name);
        match l.kind {
            LinkKind::ServerLeaf => {
                prop_assert!(!a.is_switch() && a.server.is_some(), "{}", a.name);
                prop_assert_eq!(b.tier(), Some(Tier::Leaf));
            }
            LinkKind::LeafSpine => {
                prop_assert_eq!((a.tier(), b.tier()), (Some(Tier::Leaf), Some(Tier::Spine)));
            }
            LinkKind::SpineCore => {
                prop_assert_eq!((a.tier(), b.tier()), (Some(Tier::Spine), Some(Tier::Core)));
            }
            LinkKind::InterSwitch => prop_assert!(a.is_switch()),
            _ => prop_assert!(false, "{:?} is not a network link", l.kind),
        }
        prop_assert!(l.medium.part().is_some(), "{} has no cable", a.name);
    }

    // Optics: the transceivers at both ends of a fibre take the connector the fibre ends in (an
    // SR8 port MPO-16, an LR4 or FR4 port a duplex LC pair, SR4 and DR4 MPO-12).
    let module_at: std::collections::BTreeMap<(u32, u32), &str> = f
        .modules
        .iter()
        .map(|m| ((m.node.0, m.cage), &*m.part))
        .collect();
    for (_, l) in f.network_links() {
        if let Medium::Fibre { part, .. } = &l.medium {
            let fibre = &catalog().fibres[&**part];
            for p in [l.a, l.b] {
                let (node, cage) = f.cage_holder(p);
                let Some(&module) = module_at.get(&(node.0, cage)) else {
                    return Err(TestCaseError::fail(format!("no transceiver at {:?}", p)));
                };
                let t = &catalog().transceivers[module];
                prop_assert_eq!(&t.connector, &fibre.connector, "{} over {}", module, part);
                prop_assert_eq!(t.fibre, fibre.kind);
            }
        }
    }

    // Direct cables fit their cages: a straight cable's cages carry only its link; the links of a
    // twin cable join the same two cages, each of the cable's ports; a splitter's links share one
    // cage of its ports and each leg's cage carries only that leg; and the bill of materials counts
    // each such cable once.
    type Cage = (u32, u32);
    let mut in_cage: std::collections::BTreeMap<Cage, Vec<usize>> = Default::default();
    let net: Vec<_> = f.network_links().map(|(_, l)| l).collect();
    for (i, l) in net.iter().enumerate() {
        for p in [l.a, l.b] {
            let (node, cage) = f.cage_holder(p);
            in_cage.entry((node.0, cage)).or_default().push(i);
        }
    }
    let firsts = railyard_fabric::bom::cable_firsts(f, catalog());
    let mut cables: std::collections::BTreeMap<&str, u64> = Default::default();
    let mut straight_shared = 0u64;
    for (i, l) in net.iter().enumerate() {
        let Medium::Cable { part, .. } = &l.medium else {
            continue;
        };
        let cable = &catalog().cables[&**part];
        let ends = [l.a, l.b].map(|p| {
            let (node, cage) = f.cage_holder(p);
            in_cage[&(node.0, cage)].clone()
        });
        let shared = ends.iter().filter(|e| e.len() > 1).count();
        match cable.form {
            // Only where the catalog has no part for such cages, and then flagged (below).
            CableForm::Straight => straight_shared += u64::from(shared > 0),
            CableForm::Twin => {
                prop_assert_eq!(&ends[0], &ends[1], "twin {} joins two cages", part);
                prop_assert!(ends[0].len() as u32 <= cable.ports);
            }
            CableForm::Splitter => {
                prop_assert_eq!(shared, 1, "splitter {} has one multi-port end", part);
                let multi = ends.iter().find(|e| e.len() > 1).unwrap();
                prop_assert!(multi.len() as u32 <= cable.ports);
            }
        }
        // The cable a link runs on, told from the cages alone: its own for a straight cable, else
        // the first link through its multi-port cage (a twin cable's two cages carry the same links).
        let first = match cable.form {
            CableForm::Straight => i,
            _ => ends.iter().find(|e| e.len() > 1).map_or(i, |e| e[0]),
        };
        prop_assert_eq!(firsts[i] as usize, first, "{} leg {}", part, i);
        if first == i {
            *cables.entry(part).or_default() += 1;
        }
    }
    // The plan's classifier is the layout's: every twin-port or splitter cable's links are one
    // group of `shared_cage_groups`, of that form and the cable's ports.
    let mut form_of = vec![None; net.len()];
    for (form, links) in railyard_fabric::layout::shared_cage_groups(f) {
        for i in links {
            form_of[i as usize] = Some(form);
        }
    }
    for (i, l) in net.iter().enumerate() {
        if let Medium::Cable { part, .. } = &l.medium {
            let cable = &catalog().cables[&**part];
            if cable.form != CableForm::Straight {
                prop_assert_eq!(
                    form_of[i],
                    Some(railyard_fabric::layout::GroupForm::Assembly {
                        form: cable.form,
                        ports: cable.ports
                    }),
                    "{} leg {}",
                    part,
                    i
                );
            }
        }
    }
    // The bill of materials orders those cables: each once.
    let mut bom_cables: std::collections::BTreeMap<&str, u64> = Default::default();
    for p in bom::parts(f, catalog())
        .into_iter()
        .filter(|p| p.kind == bom::PartKind::Cable)
    {
        *bom_cables.entry(p.part).or_default() += p.quantity;
    }
    prop_assert_eq!(bom_cables, cables);

    // Every compute NIC port of every plane is cabled to a leaf.
    let hosts = u64::from(c.servers) * u64::from(c.nics);
    prop_assert_eq!(count(f, LinkKind::ServerLeaf), hosts);

    // The plan's per-tier link counts are a direct count of the links.
    let plan = Plan::new(f, catalog());
    prop_assert_eq!(
        plan.summary
            .shared_cage_cables
            .as_ref()
            .map_or(0, |c| c.links()),
        straight_shared
    );
    let links = &plan.summary.links;
    let direct = [
        (links.server_leaf, count(f, LinkKind::ServerLeaf)),
        (links.leaf_spine, count(f, LinkKind::LeafSpine)),
        (links.spine_core, count(f, LinkKind::SpineCore)),
        (links.inter_switch, count(f, LinkKind::InterSwitch)),
        (links.total, f.network_links().count() as u64),
    ];
    for (planned, counted) in direct {
        prop_assert_eq!(planned, counted);
    }
    let sw = &plan.summary.switches;
    prop_assert_eq!(sw.leaf, f.switches(Tier::Leaf).count() as u64);
    prop_assert_eq!(sw.spine, f.switches(Tier::Spine).count() as u64);
    prop_assert_eq!(sw.core, f.switches(Tier::Core).count() as u64);

    // Non-blocking trees: a leaf whose down-ports are all cabled has as much capacity up as down.
    if c.oversubscription == 1 {
        for (id, leaf) in f.switches(Tier::Leaf) {
            let (mut down, mut up, mut hosts_on_leaf) = (0.0, 0.0, 0);
            for p in leaf.ports() {
                let Some(l) = f.port(p).link() else { continue };
                let link = f.link(l);
                match link.kind {
                    LinkKind::ServerLeaf => {
                        down += link.gbps;
                        hosts_on_leaf += 1;
                    }
                    LinkKind::LeafSpine => up += link.gbps,
                    _ => {}
                }
            }
            let (down_ports, _) = leaf_split(leaf.num_ports, 1.0);
            if up > 0.0 && hosts_on_leaf == down_ports {
                prop_assert_eq!(down, up, "leaf {} ({:?})", leaf.name, id);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_specs_build_into_sound_fabrics_or_are_refused(c in case()) {
        match try_build(&c) {
            Ok(f) => {
                check_fabric(&c, &f)?;
                check_size(&c.spec(), &f)?;
                // Deterministic: the same spec gives the same fabric, port for port.
                let again = try_build(&c).expect("built once, builds again");
                prop_assert!(f == again, "two builds differ for\n{}", c.toml());
            }
            Err(e) => {
                prop_assert!(!e.field.is_empty() && !e.message.is_empty(), "{e:?}");
            }
        }
    }

    /// Overrides on presets: every preset takes a random size and NIC count.
    #[test]
    fn presets_with_overrides_build_or_are_refused(
        preset in prop::sample::select(railyard_spec::presets::names()),
        servers in prop_oneof![1u32..=40, 1u32..=300],
        nics in prop::sample::select(vec![1u32, 2, 4, 8]),
        topology in prop::sample::select(Topology::ALL.to_vec()),
    ) {
        let mut raw = railyard_spec::presets::raw(preset).unwrap();
        let o = railyard_spec::Overrides {
            servers: Some(servers),
            nics_per_server: Some(nics),
            topology: Some(topology),
            ..Default::default()
        };
        o.apply(&mut raw).unwrap();
        let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
        let built = std::panic::catch_unwind(|| build(&spec, catalog()));
        let Ok(built) = built else {
            return Err(TestCaseError::fail(format!("{preset} {o:?} panicked")));
        };
        if let Ok(f) = built {
            let gpus = spec.servers.gpus_per_server;
            let c = Case {
                servers,
                gpus,
                nics,
                tech: spec.fabric.tech,
                topology,
                oversubscription: spec.fabric.oversubscription as u32,
                placement: "",
                servers_per_rack: 0,
            };
            // Planes multiply server-leaf links; the presets have one plane each.
            prop_assert_eq!(spec.fabric.planes, 1);
            check_fabric(&c, &f)?;
            check_size(&spec, &f)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 512,
        ..ProptestConfig::default()
    })]

    /// The guard before building: for any spec the validator accepts (up to a million servers of 72
    /// GPUs and 64 NICs on 8 planes), counting the design never panics or overflows, and a refusal
    /// names a field. Nothing is built, so this runs at any size.
    #[test]
    fn designs_of_any_size_are_counted_without_panicking(
        preset in prop::sample::select(railyard_spec::presets::names()),
        servers in prop_oneof![1u32..=1_000_000, Just(1_000_000u32)],
        gpus in prop::sample::select(vec![1u32, 2, 4, 8, 16, 36, 72]),
        nics in prop::sample::select(vec![1u32, 2, 4, 8, 16, 32, 64]),
        su in prop::option::of(1u32..=2048),
        oversubscription in prop::option::of(1.0f64..=64.0),
        topology in prop::sample::select(Topology::ALL.to_vec()),
        tech in prop::sample::select(Tech::ALL.to_vec()),
    ) {
        let mut raw = railyard_spec::presets::raw(preset).unwrap();
        railyard_spec::Overrides {
            servers: Some(servers),
            gpus_per_server: Some(gpus),
            nics_per_server: Some(nics),
            su_size: su,
            oversubscription,
            topology: Some(topology),
            tech: Some(tech),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let Ok(spec) = ClusterSpec::from_raw(&raw, preset) else {
            return Ok(());
        };
        let counted = std::panic::catch_unwind(|| {
            let r = railyard_fabric::resolve(&spec, catalog())?;
            let size = railyard_fabric::topo::size(&r)?;
            size.check(&r).map(|()| size)
        });
        match counted {
            Err(_) => return Err(TestCaseError::fail(format!("counting panicked: {spec:?}"))),
            Ok(Ok(size)) => {
                prop_assert!(size.ports <= railyard_fabric::topo::MAX_PORTS);
                prop_assert!(size.servers == u64::from(servers));
            }
            Ok(Err(e)) => prop_assert!(!e.field.is_empty() && !e.message.is_empty(), "{e:?}"),
        }
    }
}

/// DGX H100: eight single-port ConnectX-7 NICs leave the server through four twin-port OSFP cages
/// (`nic_ports_per_cage = 2`), so a cage holds one transceiver shared by two NICs.
#[test]
fn twin_port_nic_cages_hold_one_transceiver() {
    let spec = railyard_spec::presets::load("dgx-h100-superpod").unwrap();
    let f = build(&spec, catalog()).unwrap();
    let mut per_cage: std::collections::BTreeMap<(u32, u32), u32> = Default::default();
    for m in &f.modules {
        let node = f.node(m.node);
        if let (NodeKind::Nic { .. }, Some(server)) = (node.kind, node.server) {
            *per_cage.entry((server, m.cage)).or_default() += 1;
        }
    }
    assert!(!per_cage.is_empty(), "the preset has NIC-side optics");
    for ((server, cage), n) in per_cage {
        assert_eq!(
            n, 1,
            "{} cage {cage} has {n} transceivers",
            f.servers[server as usize].name
        );
    }
}
