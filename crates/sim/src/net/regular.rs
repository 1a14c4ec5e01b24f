//! Whether a fabric is a regular tree: the structure under which servers the fabric cannot tell
//! apart ([`crate::net::symmetry`]) also carry alike traffic under routes from the structure, so an
//! all-to-all may be laid out from representative servers (`collective::Fold`).
//!
//! Colour refinement sees which devices look alike, not how D-mod-K numbers them: in a leaf-spine
//! with one leaf-spine cable missing, the spine with 7 links down to that leaf sends it the
//! destinations its 8 parallel links would carry, mod 7, so its links carry unequal loads while
//! every server of a class still crosses the classes alike; laid out by symmetry, flows ran 20%
//! off their max-min rates. The builders make regular trees by construction (scalable units and
//! pods provisioned whole, every lower switch sending the same number of links to each parent it
//! uses); a discovered fabric has to show it. Checked here on the graph, with the first
//! departure named:
//!
//! - tiers in layers: hosts to leaves, leaves to spines, spines to cores; links inside a tier
//!   only where there is no tier above (the two-switch design);
//! - per tier boundary, every switch of the lower tier has the same number of links up, and every
//!   joined pair (lower, upper) the same number of parallel links;
//! - per tier boundary, the parent sets of the lower switches are equal or disjoint (pods, rail
//!   groups), and so are the child sets of the upper switches (a core group serves spine j of
//!   every pod).
//!
//! A regular tree may still hold servers of several classes (a partial last scalable unit);
//! the fold lays out one of each and checks another. Under D-mod-K the tree must also be
//! non-blocking ([`non_blocking`]); adaptive routing spreads every transfer over all up-ports
//! and needs no more. The tests lay out every preset (non-blocking, 2:1 and 3:1, partial units)
//! and random departures from it (devices in any order, cables swapped across ports, leaves and
//! pods, cables missing) both ways: where these checks pass, every flow's rate and time equals
//! the per-flow engine's (crates/sim/src/collective/discovered_tests.rs).

use crate::net::fabric_net::FabricNet;

use crate::net::routes::FabricRouting;
use railyard_fabric::{Fabric, LinkKind, NodeId};
use std::collections::BTreeMap;
use std::fmt;

/// How a fabric departs from a regular tree (names the devices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Irregular(pub String);

impl fmt::Display for Irregular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether servers the fabric cannot tell apart are routed alike on `net` by `router`: the
/// fabric is a regular tree ([`regular_tree`]), and unless the routing spreads every transfer
/// over all up-ports (adaptive), no switch is oversubscribed ([`non_blocking`]).
pub fn routes_alike(net: &FabricNet<'_>, router: &dyn FabricRouting) -> Result<(), Irregular> {
    regular_tree(net.fabric)?;
    if router.spreads_over_every_up_port() {
        Ok(())
    } else {
        non_blocking(net)
    }
}

/// `Ok` when no switch takes more from below than it can send up (its links' payload rates).
///
/// D-mod-K sends a destination up the port its number picks, mod the up-ports: where a leaf has
/// fewer up-ports than hosts, the numbers of a partial unit spread unevenly over them, and the up
/// ports become the bottleneck unequally; laid out by symmetry, an all-to-all of 17 DGX H100 at
/// 2:1 ran flows 75% off their max-min rates. Non-blocking, a host's own link binds first.
pub fn non_blocking(net: &FabricNet<'_>) -> Result<(), Irregular> {
    let f = net.fabric;
    // Per switch: what it can send on (up, or across to the other switch of a two-switch
    // design) and what reaches it from below, bytes/s one way.
    let mut on = vec![0.0f64; f.nodes.len()];
    let mut below = vec![0.0f64; f.nodes.len()];
    for (id, l) in f.network_links() {
        let (a, b) = (f.port(l.a).node.0 as usize, f.port(l.b).node.0 as usize);
        // Upwards: `a` is the end nearer the servers.
        let rate = net.capacity(2 * id.0);
        match l.kind {
            LinkKind::ServerLeaf => below[b] += rate,
            LinkKind::LeafSpine | LinkKind::SpineCore => {
                on[a] += rate;
                below[b] += rate;
            }
            LinkKind::InterSwitch => {
                on[a] += rate;
                on[b] += net.capacity(2 * id.0 + 1);
            }
            _ => {}
        }
    }
    let blocking = (0..f.nodes.len()).find(|&i| on[i] > 0.0 && on[i] < below[i] * (1.0 - 1e-9));
    match blocking {
        None => Ok(()),
        Some(i) => Err(Irregular(format!(
            "{} takes {:.0} Gb/s from below and sends on {:.0} Gb/s: D-mod-K does not route \
             alike servers alike through an oversubscribed switch",
            f.nodes[i].name,
            below[i] * 8e-9,
            on[i] * 8e-9
        ))),
    }
}

/// `Ok` when `f` is a regular tree (see the module docs), else the first departure found.
pub fn regular_tree(f: &Fabric) -> Result<(), Irregular> {
    let upper = f
        .network_links()
        .any(|(_, l)| matches!(l.kind, LinkKind::LeafSpine | LinkKind::SpineCore));
    if upper {
        if let Some((_, l)) = f
            .network_links()
            .find(|(_, l)| l.kind == LinkKind::InterSwitch)
        {
            return Err(Irregular(format!(
                "{} and {} are joined inside a tier of a tree",
                f.port_node(l.a).name,
                f.port_node(l.b).name
            )));
        }
    }
    for kind in [LinkKind::LeafSpine, LinkKind::SpineCore] {
        boundary(f, kind)?;
    }
    Ok(())
}

/// The checks of one tier boundary (links of `kind`, `a` the lower end).
fn boundary(f: &Fabric, kind: LinkKind) -> Result<(), Irregular> {
    // Parallel links per joined pair, in (lower, upper) order.
    let mut pairs: BTreeMap<(NodeId, NodeId), u32> = BTreeMap::new();
    for (_, l) in f.network_links().filter(|(_, l)| l.kind == kind) {
        *pairs
            .entry((f.port(l.a).node, f.port(l.b).node))
            .or_default() += 1;
    }
    let Some((&first, &m)) = pairs.iter().next() else {
        return Ok(());
    };
    if let Some((&(lo, hi), &n)) = pairs.iter().find(|(_, &n)| n != m) {
        return Err(Irregular(format!(
            "{} has {n} link(s) to {} where {} has {m} to {}",
            f.node(lo).name,
            f.node(hi).name,
            f.node(first.0).name,
            f.node(first.1).name
        )));
    }
    let (parents, children) = neighbour_sets(&pairs);
    // Every switch of the lower tier goes up, each as many times.
    let tier = f.node(first.0).tier();
    let ups = parents.get(&first.0).map_or(0, Vec::len);
    for (id, n) in f.nodes.iter().enumerate() {
        let id = NodeId(id as u32);
        if n.is_switch() && n.tier() == tier {
            let mine = parents.get(&id).map_or(0, Vec::len);
            if mine != ups {
                return Err(Irregular(format!(
                    "{} has {} switch(es) above it where {} has {ups}",
                    n.name,
                    mine,
                    f.node(first.0).name
                )));
            }
        }
    }
    equal_or_disjoint(f, &parents, "parents")?;
    equal_or_disjoint(f, &children, "children")
}

type Sets = BTreeMap<NodeId, Vec<NodeId>>;

/// Per lower switch its parents and per upper switch its children, ascending.
fn neighbour_sets(pairs: &BTreeMap<(NodeId, NodeId), u32>) -> (Sets, Sets) {
    let (mut parents, mut children) = (Sets::new(), Sets::new());
    for &(lo, hi) in pairs.keys() {
        parents.entry(lo).or_default().push(hi);
        children.entry(hi).or_default().push(lo);
    }
    for v in children.values_mut() {
        v.sort_unstable();
    }
    (parents, children)
}

/// The sets of `sets` are pairwise equal or disjoint: a switch in two different sets is named.
fn equal_or_disjoint(f: &Fabric, sets: &Sets, what: &str) -> Result<(), Irregular> {
    // Each member's set, by the first switch that has it.
    let mut owner: BTreeMap<NodeId, NodeId> = BTreeMap::new();
    for (&switch, set) in sets {
        for &member in set {
            match owner.get(&member) {
                None => {
                    owner.insert(member, switch);
                }
                Some(&other) if sets[&other] == *set => {}
                Some(&other) => {
                    return Err(Irregular(format!(
                        "the {what} of {} and of {} overlap but differ (both have {})",
                        f.node(other).name,
                        f.node(switch).name,
                        f.node(member).name
                    )))
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::fabric_net::NetConfig;
    use crate::net::routing::{RoutingConfig, RoutingKind};
    use crate::net::tree_router::TreeRouter;
    use railyard_catalog::Catalog;
    use railyard_spec::{presets, ClusterSpec, Overrides};

    fn plan(preset: &str, servers: u32, oversubscription: Option<f64>) -> Option<Fabric> {
        let mut raw = presets::raw(preset).unwrap();
        let o = Overrides {
            servers: Some(servers),
            oversubscription,
            ..Default::default()
        };
        o.apply(&mut raw).ok()?;
        let spec = ClusterSpec::from_raw(&raw, preset).ok()?;
        railyard_fabric::build(&spec, &Catalog::builtin()).ok()
    }

    /// Every design the builders make is a regular tree, and a non-blocking one routes alike
    /// servers alike under D-mod-K, so a plan keeps its fast path: every preset from one server
    /// to past a scalable unit or pod, whole and partial.
    #[test]
    fn every_plan_is_a_regular_tree() {
        let dmodk = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
        // Rack-scale trays and GPU meshes are not simulated (`scale_up`): no network to build.
        for preset in crate::net::scale_up::simulated_presets() {
            for servers in [1, 2, 3, 4, 9, 12, 20, 33, 40, 64, 100, 130, 257] {
                let Some(f) = plan(preset, servers, None) else {
                    continue;
                };
                assert_eq!(regular_tree(&f), Ok(()), "{preset} x{servers}");
                if preset != "seed-two-switch" {
                    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default());
                    let net = net.unwrap();
                    assert_eq!(routes_alike(&net, &dmodk), Ok(()), "{preset} x{servers}");
                }
            }
        }
    }

    /// `sim collective alltoall` past the per-flow limit laid an oversubscribed design out by
    /// symmetry under D-mod-K, and 17 DGX H100 at 2:1 ran flows 75% off their max-min rates
    /// (`folded_vs_per_flow`). D-mod-K on an oversubscribed switch is not laid out by symmetry;
    /// adaptive routing is, exactly (collective/discovered_tests.rs).
    #[test]
    fn regression_an_oversubscribed_tree_was_laid_out_by_symmetry_off_its_rates() {
        let f = plan("dgx-h100-superpod", 17, Some(2.0)).unwrap();
        assert_eq!(regular_tree(&f), Ok(()));
        let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
        let dmodk = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
        let adaptive = TreeRouter::new(RoutingKind::Adaptive, RoutingConfig::default());
        let e = routes_alike(&net, &dmodk).unwrap_err().to_string();
        assert!(
            e.starts_with("su1-leaf1 takes 6757 Gb/s from below and sends on 6360 Gb/s"),
            "{e}"
        );
        assert_eq!(routes_alike(&net, &adaptive), Ok(()));
        // The two-switch design sends across 4 links what 36 ports bring.
        let f = plan("seed-two-switch", 8, None).unwrap();
        let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
        assert!(routes_alike(&net, &dmodk).is_err());
    }
}
