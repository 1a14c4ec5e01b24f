use super::plan::normalise_ca_desc;
use super::*;
use crate::discovery::ibnet::{parse, Link};
use crate::discovery::NodeType;
use crate::rate::Rate;
use railyard_catalog::Catalog;
use railyard_spec::{presets, ClusterSpec};

fn plan(name: &str) -> Fabric {
    let spec: ClusterSpec = presets::load(name).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn discovered(f: &Fabric) -> Discovered {
    parse(&crate::export::ibsim_topology(f).unwrap().text).unwrap()
}

fn opts() -> Options {
    Options { ibsim_rates: true }
}

fn node(d: &Discovered, desc: &str) -> usize {
    d.nodes.iter().position(|n| n.desc == desc).unwrap()
}

fn link_at(d: &Discovered, n: usize, port: u32) -> usize {
    d.links
        .iter()
        .position(|l| l.a == (n, port) || l.b == (n, port))
        .unwrap()
}

fn kinds(r: &Verification) -> Vec<Kind> {
    r.findings.iter().map(|f| f.kind).collect()
}

/// Regression: an InfiniBand discovery checked against a RoCE plan listed a difference for
/// nearly every device and cable (86 on seed-leaf-spine as RoCE 400G); it is one finding that
/// names both technologies, and the report is that one line.
#[test]
fn another_technology_is_one_finding_not_every_port() {
    let ib = plan("seed-leaf-spine");
    let d = discovered(&ib);
    let roce = plan("roce-400g-sn5600");
    let r = verify(&roce, &d, opts());
    assert!(!r.matches);
    assert_eq!(kinds(&r), [Kind::TechnologyMismatch]);
    assert_eq!(r.discovered_cables, d.links.len());
    let text = report_text(&r);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("technology mismatch: the plan is roce-400g (RoCE over Ethernet) and the discovery is InfiniBand"),
        "{text}"
    );
    // The other way: Ethernet (LLDP) tables against an InfiniBand plan.
    let lldp = Discovered {
        family: railyard_catalog::Family::Ethernet,
        ..d.clone()
    };
    let r = verify(&ib, &lldp, opts());
    assert_eq!(kinds(&r), [Kind::TechnologyMismatch]);
    assert!(
        r.findings[0]
            .fix
            .contains("the plan is ib-hdr (InfiniBand) and the discovery is Ethernet"),
        "{}",
        r.findings[0].fix
    );
    // The same family compares port by port, as before.
    assert!(verify(&ib, &d, opts()).matches);
}

#[test]
fn exported_plan_matches_itself() {
    for p in ["seed-two-switch", "seed-leaf-spine", "dgx-h100-superpod"] {
        let f = plan(p);
        let r = verify(&f, &discovered(&f), opts());
        assert!(r.matches, "{p}: {:?}", r.findings);
        assert_eq!(r.planned_cables, r.discovered_cables);
    }
}

#[test]
fn true_rates_differ_from_ibsim_rates_on_ndr() {
    let f = plan("dgx-h100-superpod");
    let r = verify(&f, &discovered(&f), Options::default());
    assert!(r.findings.iter().all(|x| x.kind == Kind::WrongRate));
    assert_eq!(r.findings.len(), r.planned_cables);
    // Every NDR cable at the rate ibsim shows it at: the report says how to verify it.
    assert!(r.rates_as_ibsim_shows);
    assert!(report_text(&r)
        .contains("if this discovery ran in ibsim, give --ibsim (verify, check --plan)"));
    // Not where one cable runs at another rate, or where it is asked for.
    let mut d = discovered(&f);
    d.links[0].rate = Some(Rate::of_link(200.0, 2));
    assert!(!verify(&f, &d, Options::default()).rates_as_ibsim_shows);
    assert!(!verify(&f, &discovered(&f), opts()).rates_as_ibsim_shows);
    // An HDR plan found at HDR has nothing beyond ibsim.
    let hdr = plan("seed-leaf-spine");
    assert!(!verify(&hdr, &discovered(&hdr), Options::default()).rates_as_ibsim_shows);
}

#[test]
fn swapped_cables_are_one_swap() {
    let f = plan("seed-leaf-spine");
    let mut d = discovered(&f);
    let leaf = node(&d, "leaf01");
    let (i, j) = (link_at(&d, leaf, 1), link_at(&d, leaf, 2));
    // Exchange the leaf ends of the cables on leaf01 ports 1 and 2.
    let swap_end = |l: &mut Link, from: (usize, u32), to: (usize, u32)| {
        if l.a == from {
            l.a = to
        } else {
            l.b = to
        }
    };
    swap_end(&mut d.links[i], (leaf, 1), (leaf, 2));
    swap_end(&mut d.links[j], (leaf, 2), (leaf, 1));
    let r = verify(&f, &d, opts());
    assert_eq!(kinds(&r), vec![Kind::Swap], "{:?}", r.findings);
    assert!(
        r.findings[0].fix.contains("leaf01[1]") && r.findings[0].fix.contains("leaf01[2]"),
        "{}",
        r.findings[0].fix
    );
}

/// HCAs matched by place are matched a host at a time: the site names its hosts `node01
/// mlx5_1` where the plan says `srv01 hca1`, and two HCAs of two servers have their cables
/// exchanged. HCA by HCA, each was named after the port it sat on and the report said "no
/// differences" (exit 0); a host's HCAs are one server, so the exchange is one swap.
#[test]
fn a_swap_between_servers_is_found_when_hosts_are_matched_by_place() {
    let f = plan("seed-leaf-spine");
    let mut d = discovered(&f);
    let (l1, l2) = (node(&d, "leaf01"), node(&d, "leaf02"));
    let (i, j) = (link_at(&d, l1, 1), link_at(&d, l2, 5));
    for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Ca) {
        let (host, hca) = n.desc.split_once(' ').unwrap();
        n.desc = format!(
            "{} mlx5_{}",
            host.replace("srv", "node"),
            hca.trim_start_matches("hca")
        );
    }
    let ca_end = |l: &Link| if l.a.0 == l1 || l.a.0 == l2 { l.b } else { l.a };
    let (a, b) = (ca_end(&d.links[i]), ca_end(&d.links[j]));
    assert_ne!(
        d.nodes[a.0].desc.split_once(' ').unwrap().0,
        d.nodes[b.0].desc.split_once(' ').unwrap().0,
        "two servers' HCAs"
    );
    for (k, to) in [(i, b), (j, a)] {
        let l = &mut d.links[k];
        if l.a.0 == l1 || l.a.0 == l2 {
            l.b = to
        } else {
            l.a = to
        }
    }
    let r = verify(&f, &d, opts());
    assert_eq!(kinds(&r), vec![Kind::Swap], "{:?}", r.findings);
    let fix = &r.findings[0].fix;
    assert!(fix.contains("exchange them"), "{fix}");
    // Intact, every host still matches.
    let mut d = discovered(&f);
    for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Ca) {
        n.desc = n.desc.replace("srv", "node").replace(" hca", " mlx5_");
    }
    assert!(verify(&f, &d, opts()).matches);
    // HCAs that all keep the factory description are no host: each matches by its port.
    let mut d = discovered(&f);
    for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Ca) {
        n.desc = "MT4123 ConnectX6   Mellanox Technologies".to_string();
    }
    let r = verify(&f, &d, opts());
    assert!(r.matches, "{:?}", r.findings);
    assert_eq!(r.matched_by_place, 80);
}

/// Switches that keep their factory description and hosts of foreign names: nothing matches,
/// so nothing can be placed. The report says so and points to --names, instead of only
/// calling every switch "not discovered: check that it is installed, powered and cabled".
#[test]
fn nothing_matched_says_to_give_the_names() {
    let f = plan("seed-leaf-spine");
    let mut d = discovered(&f);
    for (i, n) in d.nodes.iter_mut().enumerate() {
        n.desc = match n.kind {
            NodeType::Switch => "SwitchIB Mellanox Technologies".to_string(),
            _ => format!("node{i:03} HCA-1"),
        };
    }
    let r = verify(&f, &d, opts());
    assert!(!r.matches);
    let text = report_text(&r);
    assert!(
        text.lines().nth(1).is_some_and(
            |l| l.starts_with("note: no discovered device matched") && l.contains("--names")
        ),
        "{text}"
    );
}

#[test]
fn missing_extra_and_wrong_port() {
    // 127 servers: the fourth unit has 31, so port 32 of its leaves is free.
    let f = plan("dgx-h100-superpod");
    let mut d = discovered(&f);
    let leaf = node(&d, "su1-leaf1");
    d.links.remove(link_at(&d, leaf, 33));
    let leaf4 = node(&d, "su4-leaf1");
    let k = link_at(&d, leaf4, 1);
    if d.links[k].a == (leaf4, 1) {
        d.links[k].a = (leaf4, 32)
    } else {
        d.links[k].b = (leaf4, 32)
    }
    let r = verify(&f, &d, opts());
    assert_eq!(
        kinds(&r),
        vec![Kind::MissingCable, Kind::WrongPort],
        "{:?}",
        r.findings
    );
    assert!(
        r.findings[1]
            .fix
            .contains("su4-leaf1[32]: move that end to su4-leaf1[1]"),
        "{}",
        r.findings[1].fix
    );

    let mut d = discovered(&f);
    let (a, b) = (node(&d, "su4-leaf1"), node(&d, "su4-leaf2"));
    d.links.push(Link {
        a: (a, 32),
        b: (b, 32),
        rate: None,
        line: 0,
    });
    let r = verify(&f, &d, opts());
    assert_eq!(kinds(&r), vec![Kind::UnexpectedCable]);
}

#[test]
fn switches_match_by_place_when_descriptions_are_foreign() {
    let f = plan("seed-leaf-spine");
    let mut d = discovered(&f);
    for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Switch) {
        n.desc = format!("MF0;switch-{}:MQM8700/U1", n.guid.unwrap_or(0));
    }
    let r = verify(&f, &d, opts());
    assert!(r.matches, "{:?}", r.findings);
    assert_eq!(r.matched_by_place, 6);
}

#[test]
fn hosts_match_by_place_when_their_descriptions_are_foreign() {
    let f = plan("seed-leaf-spine");
    let mut d = discovered(&f);
    let mut cas = 0;
    for (i, n) in d.nodes.iter_mut().enumerate() {
        if n.kind == NodeType::Ca {
            n.desc = format!("node{i:04} ens{i}f0np0");
            cas += 1;
        }
    }
    let r = verify(&f, &d, opts());
    assert!(r.matches, "{:?}", r.findings);
    assert_eq!(r.matched_by_place, cas);
    assert!(report_text(&r).contains(&format!(
        "note: {cas} devices whose descriptions match no planned name were matched by their place"
    )));
}

#[test]
fn names_order_numbers_by_value() {
    let mut v = vec![
        "core01[10]",
        "core01[2]",
        "core01[1]",
        "srv10",
        "srv9",
        "a",
        "a0",
    ];
    v.sort_by_key(|s| natural(s));
    assert_eq!(
        v,
        [
            "a",
            "a0",
            "core01[1]",
            "core01[2]",
            "core01[10]",
            "srv9",
            "srv10"
        ]
    );
    assert!(natural(&"9".repeat(60)) > natural("1"));
}

#[test]
fn alike_findings_are_one_line_and_all_lists_every_one() {
    let f = plan("dgx-h100-superpod");
    let r = verify(&f, &discovered(&f), Options::default());
    let n = r.findings.len();
    let text = report_text(&r);
    // Header, the ibsim note, the group line, its examples and the hint to list them all.
    assert_eq!(text.lines().count(), 3 + 1 + EXAMPLES + 1, "{text}");
    assert!(text.contains(&format!(
        "\nwrong-rate ({n}):\n  {n} cables run at 4xHDR, planned 4xNDR"
    )));
    let all = report_text_with(&r, true);
    assert_eq!(
        all.lines().filter(|l| l.contains("runs at 4xHDR")).count(),
        n
    );
    // Every finding names its one planned cable by id.
    assert!(r
        .findings
        .iter()
        .all(|x| x.cables.len() == 1 && x.cables[0].id.is_some()));
}

#[test]
fn a_unit_scope_holds_its_hcas_and_the_switches_they_are_cabled_to() {
    let f = plan("dgx-h100-superpod");
    let s = crate::site::Scope::resolve(&f, &["su1".to_string()]).unwrap();
    assert!(s.contains("su1-leaf1") && s.contains("su1-leaf8"));
    assert!(s.contains("su1-srv01 hca1") && s.contains("su1-srv32 hca8"));
    assert!(!s.contains("su2-leaf1") && !s.contains("su2-srv01 hca1"));
    assert!(!s.devices.iter().any(|d| d.contains("spine")));
    assert_eq!(s.devices.len(), 8 + 32 * 8);
    let one = crate::site::Scope::resolve(&f, &["su2-srv03".to_string()]).unwrap();
    assert_eq!(one.devices.len(), 8);
    assert!(crate::site::Scope::resolve(&f, &["su5".to_string()])
        .unwrap_err()
        .contains("a scalable unit (su1..su4)"));
}

#[test]
fn mlx5_names_read_as_hca_numbers() {
    assert_eq!(normalise_ca_desc("node0013 mlx5_0"), "node0013 hca1");
    assert_eq!(normalise_ca_desc("su1-srv07 hca3"), "su1-srv07 hca3");
}
