//! Every network link of a shape as the builders wire it, by the ends it joins, without building
//! it: what the design search prices shapes from.

use super::counts::Counts;
use crate::shape::{Pods, Shape, Upper};
use railyard_spec::{ClusterSpec, Topology};

/// One network link's ends as the builders below wire a shape, without building it: servers by
/// index, leaves by their order among the leaves, spines and cores by their order among the switches
/// above the leaves (every spine, then every core), which is node order and how
/// `layout::place` places them. The design search prices shapes it has not built from these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    ServerLeaf { server: u32, leaf: u64 },
    LeafSpine { leaf: u64, spine: u64 },
    SpineCore { spine: u64, core: u64 },
}

/// The trees of a shape: one per plane, and per rail in rail-only designs; each with the same
/// switches. `None` for the one- and two-switch designs, which have no tree.
#[derive(Debug, Clone, Copy)]
struct Trees {
    count: u64,
    leaves: u64,
    spines: u64,
    cores: u64,
}

fn trees(spec: &ClusterSpec, c: &Counts) -> Option<Trees> {
    let per_plane = match spec.fabric.topology {
        Topology::SingleSwitch | Topology::TwoSwitch => return None,
        Topology::RailOnly => u64::from(spec.servers.compute_nics),
        Topology::FatTree | Topology::RailOptimized => 1,
    };
    let count = per_plane * u64::from(spec.fabric.planes);
    Some(Trees {
        count,
        leaves: c.leaves / count,
        spines: c.spines / count,
        cores: c.cores / count,
    })
}

/// The first server of every leaf, in leaf order (`None` without a tree; see [`Ends`]).
pub fn leaf_first_servers(spec: &ClusterSpec, shape: &Shape, c: &Counts) -> Option<Vec<u32>> {
    let t = trees(spec, c)?;
    let rails = spec.servers.compute_nics;
    let d = shape.leaf_down.max(1);
    let one: Vec<u32> = match spec.fabric.topology {
        // Leaves fill with NIC ports in server order, `leaf_down` each.
        Topology::FatTree => (0..t.leaves)
            .map(|i| (i * u64::from(d) / u64::from(rails)) as u32)
            .collect(),
        Topology::RailOnly => (0..t.leaves).map(|i| (i * u64::from(d)) as u32).collect(),
        // Every leaf of a unit starts at the unit's first server.
        _ => {
            let su = shape.su_size.unwrap_or(d).max(1);
            (0..t.leaves)
                .map(|i| (i / u64::from(rails)) as u32 * su)
                .collect()
        }
    };
    let mut all = Vec::with_capacity((t.leaves * t.count) as usize);
    for _ in 0..t.count {
        all.extend_from_slice(&one);
    }
    Some(all)
}

/// Visits every network link of a shape with how many links join the same ends (see [`Ends`]);
/// false without a tree.
pub fn each_link(
    spec: &ClusterSpec,
    shape: &Shape,
    c: &Counts,
    visit: &mut dyn FnMut(Ends, u64),
) -> bool {
    let Some(t) = trees(spec, c) else {
        return false;
    };
    for tree in 0..t.count {
        server_links(spec, shape, tree * t.leaves, visit);
        upper_links(spec, shape, &t, tree, visit);
    }
    true
}

/// The server links of one tree whose leaves start at `leaf0`, in host order.
fn server_links(spec: &ClusterSpec, shape: &Shape, leaf0: u64, visit: &mut dyn FnMut(Ends, u64)) {
    let servers = spec.servers.count;
    let rails = spec.servers.compute_nics;
    let d = u64::from(shape.leaf_down.max(1));
    let su = u64::from(shape.su_size.unwrap_or(shape.leaf_down).max(1));
    match spec.fabric.topology {
        Topology::FatTree => {
            for h in 0..u64::from(servers) * u64::from(rails) {
                let leaf = if shape.upper == Upper::None { 0 } else { h / d };
                let server = (h / u64::from(rails)) as u32;
                visit(
                    Ends::ServerLeaf {
                        server,
                        leaf: leaf0 + leaf,
                    },
                    1,
                );
            }
        }
        Topology::RailOnly => {
            for s in 0..u64::from(servers) {
                let leaf = if shape.upper == Upper::None { 0 } else { s / d };
                visit(
                    Ends::ServerLeaf {
                        server: s as u32,
                        leaf: leaf0 + leaf,
                    },
                    1,
                );
            }
        }
        _ => {
            for s in 0..u64::from(servers) {
                for r in 0..u64::from(rails) {
                    let leaf = (s / su) * u64::from(rails) + r;
                    visit(
                        Ends::ServerLeaf {
                            server: s as u32,
                            leaf: leaf0 + leaf,
                        },
                        1,
                    );
                }
            }
        }
    }
}

/// The leaf-spine and spine-core links of tree `tree` of `t`.
fn upper_links(
    spec: &ClusterSpec,
    shape: &Shape,
    t: &Trees,
    tree: u64,
    visit: &mut dyn FnMut(Ends, u64),
) {
    let leaf0 = tree * t.leaves;
    let spine0 = tree * t.spines;
    let core0 = t.spines * t.count + tree * t.cores;
    match shape.upper {
        Upper::None => {}
        Upper::Two { spines, links } => {
            for leaf in 0..t.leaves {
                for j in 0..u64::from(spines) {
                    visit(
                        Ends::LeafSpine {
                            leaf: leaf0 + leaf,
                            spine: spine0 + j,
                        },
                        u64::from(links),
                    );
                }
            }
        }
        Upper::Three {
            pods,
            spines_per_pod,
            links,
            spine_up,
            group,
        } => {
            let spp = u64::from(spines_per_pod);
            let r = u64::from(spec.servers.compute_nics);
            let pod_of = |leaf: u64| match (spec.fabric.topology, pods) {
                (Topology::RailOptimized, Pods::WholeRails { rails: per }) => {
                    (leaf % r) / u64::from(per.max(1))
                }
                (Topology::RailOptimized, Pods::WholeUnits { units: per }) => {
                    (leaf / r) / u64::from(per.max(1))
                }
                (_, Pods::InOrder { size }) => leaf / u64::from(size.max(1)),
                // Not a shape the builders wire for this topology (`counts` refuses it).
                _ => 0,
            };
            for leaf in 0..t.leaves {
                let p = pod_of(leaf);
                for j in 0..spp {
                    visit(
                        Ends::LeafSpine {
                            leaf: leaf0 + leaf,
                            spine: spine0 + p * spp + j,
                        },
                        u64::from(links),
                    );
                }
            }
            let n_pods = t.spines / spp.max(1);
            let g = u64::from(group.max(1));
            let per_core = u64::from(spine_up) / g;
            for p in 0..n_pods {
                for j in 0..spp {
                    for x in 0..g {
                        visit(
                            Ends::SpineCore {
                                spine: spine0 + p * spp + j,
                                core: core0 + j * g + x,
                            },
                            per_core,
                        );
                    }
                }
            }
        }
    }
}
