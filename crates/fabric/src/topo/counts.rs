//! The one counting model: what a shape holds for a spec on radix-k switches, from numbers alone.

use super::ports::isl_links;
use crate::shape::{Shape, Upper};
use railyard_spec::{ClusterSpec, Topology};
use serde::Serialize;

/// What a design holds, counted from its numbers alone (the planes included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Counts {
    /// Network tiers: 1 (leaves only), 2 or 3.
    pub tiers: u32,
    pub leaves: u64,
    pub spines: u64,
    pub cores: u64,
    pub server_leaf: u64,
    pub leaf_spine: u64,
    pub spine_core: u64,
    pub inter_switch: u64,
}

impl Counts {
    pub fn switches(&self) -> u64 {
        self.leaves + self.spines + self.cores
    }

    pub fn network_links(&self) -> u64 {
        self.server_leaf + self.leaf_spine + self.spine_core + self.inter_switch
    }

    /// Bisection bandwidth at `gbps` per link, as [`Fabric::bisection_gbps`](crate::graph::Fabric::bisection_gbps) computes it on the built
    /// fabric: the narrowest of half the host links and half of each tier boundary's links.
    pub fn bisection_gbps(&self, gbps: f64, two_switch_isl: bool) -> f64 {
        let mut b = self.server_leaf as f64 * gbps / 2.0;
        if self.tiers >= 2 {
            b = b.min(self.leaf_spine as f64 * gbps / 2.0);
        }
        if self.tiers >= 3 {
            b = b.min(self.spine_core as f64 * gbps / 2.0);
        }
        if two_switch_isl {
            b = b.min(self.inter_switch as f64 * gbps);
        }
        b
    }

    fn times(self, n: u64) -> Counts {
        Counts {
            tiers: self.tiers,
            leaves: self.leaves * n,
            spines: self.spines * n,
            cores: self.cores * n,
            server_leaf: self.server_leaf * n,
            leaf_spine: self.leaf_spine * n,
            spine_core: self.spine_core * n,
            inter_switch: self.inter_switch * n,
        }
    }
}

/// Checks the tiers above `units` x `rails` leaves with `up` uplinks each on radix `k` and counts
/// them: (spines, cores, leaf-spine links, spine-core links, tiers). `None` when the shape does not
/// fit the radix or is not balanced.
fn upper_counts(
    k: u32,
    up: u32,
    units: u64,
    rails: u32,
    upper: Upper,
) -> Option<(u64, u64, u64, u64, u32)> {
    let leaves = units * u64::from(rails);
    let k64 = u64::from(k);
    match upper {
        Upper::None => (leaves == 1 && up == 0).then_some((0, 0, 0, 0, 1)),
        Upper::Two { spines, links } => {
            let ok = spines >= 1
                && links >= 1
                && u64::from(spines) * u64::from(links) == u64::from(up)
                && leaves * u64::from(links) <= k64;
            ok.then(|| (u64::from(spines), 0, leaves * u64::from(up), 0, 2))
        }
        Upper::Three {
            pods,
            spines_per_pod,
            links,
            spine_up,
            group,
        } => {
            let (n_pods, slots) = pods.count(units, rails);
            let spine_down = slots * u64::from(links);
            let ok = spines_per_pod >= 1
                && links >= 1
                && group >= 1
                && u64::from(spines_per_pod) * u64::from(links) == u64::from(up)
                && spine_down >= 1
                && spine_down + u64::from(spine_up) <= k64
                && u64::from(spine_up) >= spine_down
                && spine_up.is_multiple_of(group)
                && n_pods * u64::from(spine_up / group) <= k64
                && n_pods >= 1;
            ok.then(|| {
                let spines = n_pods * u64::from(spines_per_pod);
                (
                    spines,
                    u64::from(spines_per_pod) * u64::from(group),
                    leaves * u64::from(up),
                    spines * u64::from(spine_up),
                    3,
                )
            })
        }
    }
}

/// One tree over `hosts` host ports (fat-tree, or one rail of rail-only): the shape's counts, or
/// `None` when it does not fit.
fn tree_counts(k: u32, hosts: u64, shape: &Shape) -> Option<Counts> {
    if shape.upper == Upper::None {
        // One switch holds everything.
        return (hosts <= u64::from(k) && hosts >= 1).then_some(Counts {
            tiers: 1,
            leaves: 1,
            server_leaf: hosts,
            ..Counts::default()
        });
    }
    if hosts <= u64::from(k) || shape.leaf_down == 0 || shape.leaf_down + shape.leaf_up > k {
        // A tree over hosts one switch holds would only add switches: the builder puts them on one.
        return None;
    }
    let leaves = hosts.div_ceil(u64::from(shape.leaf_down));
    let (spines, cores, leaf_spine, spine_core, tiers) =
        upper_counts(k, shape.leaf_up, leaves, 1, shape.upper)?;
    Some(Counts {
        tiers,
        leaves,
        spines,
        cores,
        server_leaf: hosts,
        leaf_spine,
        spine_core,
        inter_switch: 0,
    })
}

/// What a shape holds for a spec on radix-`k` switches: the one counting model of railyard's fabrics.
/// `None` when the shape does not fit the radix, is unbalanced or is not one the builders wire (the
/// search only offers shapes that fit; checks that name a field live there).
pub fn counts(spec: &ClusterSpec, k: u32, shape: &Shape) -> Option<Counts> {
    let s = &spec.servers;
    let servers = u64::from(s.count);
    let rails = s.compute_nics;
    let hosts = servers * u64::from(rails);
    let planes = u64::from(spec.fabric.planes);
    let one_plane = match spec.fabric.topology {
        Topology::SingleSwitch => (hosts <= u64::from(k)).then_some(Counts {
            tiers: 1,
            leaves: 1,
            server_leaf: hosts,
            ..Counts::default()
        })?,
        Topology::TwoSwitch => {
            // Odd HCAs (1-based) on switch 1: the larger half; with one HCA per server, odd
            // servers on switch 1 (`two_switch_side`).
            let most = if rails == 1 {
                servers.div_ceil(2)
            } else {
                servers * u64::from(rails.div_ceil(2))
            };
            let isl = isl_links(spec, most);
            if isl >= k || most > u64::from(k - isl) {
                return None;
            }
            Counts {
                tiers: 1,
                leaves: 2,
                server_leaf: hosts,
                inter_switch: u64::from(isl),
                ..Counts::default()
            }
        }
        Topology::FatTree => tree_counts(k, hosts, shape)?,
        Topology::RailOnly => tree_counts(k, servers, shape)?.times(u64::from(rails)),
        Topology::RailOptimized => {
            let su = shape.su_size?;
            if su == 0 || shape.leaf_down != su || su + shape.leaf_up > k {
                return None;
            }
            let units = servers.div_ceil(u64::from(su));
            let (spines, cores, leaf_spine, spine_core, tiers) =
                upper_counts(k, shape.leaf_up, units, rails, shape.upper)?;
            Counts {
                tiers,
                leaves: units * u64::from(rails),
                spines,
                cores,
                server_leaf: hosts,
                leaf_spine,
                spine_core,
                inter_switch: 0,
            }
        }
    };
    Some(one_plane.times(planes))
}
