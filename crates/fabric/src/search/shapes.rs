//! Step 1, enumerate: every shape worth counting for a request on a radix (every leaf and unit
//! size, every balanced tier within the radix), dominated shapes skipped as they are generated.

use crate::shape::{Pods, Shape, Upper};
use crate::topo::{divisors, uplinks_for};
use railyard_spec::{ClusterSpec, Source, Topology};

/// Uplinks per leaf beyond the fewest that a three-tier search tries (more only pays off in two tiers,
/// where it can let leaves share spines).
const THREE_TIER_UPLINK_SLACK: u32 = 4;

/// Pod counts beyond the fewest that a three-tier search tries (smaller pods can balance cores).
const POD_SLACK: u64 = 3;

/// What the search needs of the request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Req {
    pub(super) topology: Topology,
    pub(super) servers: u64,
    pub(super) rails: u32,
    pub(super) ratio: f64,
    /// Scalable unit: `Some` when the user or the preset fixed it.
    pub(super) su: Option<u32>,
    /// The user fixed the unit (no other size is tried, even for alternatives).
    pub(super) su_given: bool,
    /// Unit sizes are multiples of it: a rack-scale system's trays per rack (a unit starts a new
    /// rack, and a GB200 NVL72 rack is never split); 1 otherwise.
    pub(super) su_step: u32,
}

impl Req {
    pub(super) fn of(spec: &ClusterSpec) -> Req {
        Req {
            topology: spec.fabric.topology,
            servers: u64::from(spec.servers.count),
            rails: spec.servers.compute_nics,
            ratio: spec.fabric.oversubscription,
            su: spec.fabric.su_size,
            su_given: spec.provenance.source("fabric.su_size") == Source::Given,
            su_step: 1,
        }
    }

    /// Units in whole racks of `trays` (a rack-scale system's), where the servers are its trays.
    pub(super) fn in_racks(mut self, trays: Option<u32>) -> Req {
        self.su_step = trays.unwrap_or(1).max(1);
        self
    }
}

/// Visits every shape worth counting for `req` on radix `k`; `visit` returns false to stop.
pub(super) fn each_shape(req: &Req, k: u32, visit: &mut dyn FnMut(Shape) -> bool) {
    match req.topology {
        Topology::SingleSwitch | Topology::TwoSwitch => {
            visit(Shape::FLAT);
        }
        Topology::FatTree => tree_shapes(req.servers * u64::from(req.rails), k, req.ratio, visit),
        Topology::RailOnly => tree_shapes(req.servers, k, req.ratio, visit),
        Topology::RailOptimized => rail_optimized_shapes(req, k, visit),
    }
}

/// Shapes of one tree over `hosts` host ports.
fn tree_shapes(hosts: u64, k: u32, ratio: f64, visit: &mut dyn FnMut(Shape) -> bool) {
    if hosts == 0 {
        return;
    }
    if hosts <= u64::from(k) {
        // One switch holds every port: any tree would only add switches.
        visit(Shape {
            leaf_down: hosts as u32,
            leaf_up: 0,
            su_size: None,
            upper: Upper::None,
        });
        return;
    }
    // Every leaf size, not only the smallest that gives a leaf count: for the same switches and
    // cables, how ports fill the leaves moves cable runs and shared transceiver cages, and the design
    // of one server more with a port left free must stay a design of this request (cost never drops
    // when a server is added).
    for d in 1..k {
        let leaves = hosts.div_ceil(u64::from(d));
        let u_min = uplinks_for(d, ratio);
        if u_min + d > k {
            continue;
        }
        let mut go = true;
        leaf_uppers(k, d, u_min, leaves, 1, None, &mut |shape| {
            go = visit(shape);
            go
        });
        if !go {
            return;
        }
    }
}

/// Shapes of a rail-optimized design: every unit size (or the fixed one), then its uplinks and tiers.
fn rail_optimized_shapes(req: &Req, k: u32, visit: &mut dyn FnMut(Shape) -> bool) {
    let servers = req.servers;
    let mut sizes: Vec<u32> = Vec::new();
    if let Some(su) = req.su {
        sizes.push(su);
    }
    if !req.su_given {
        // Largest unit first: ties between equal designs go to the unit with room to grow. Every
        // size, also past the servers (a unit with room to grow), for the reason `tree_shapes` gives.
        for s in (1..k).rev() {
            if Some(s) != req.su {
                sizes.push(s);
            }
        }
    }
    for s in sizes {
        if s == 0 || s >= k || !s.is_multiple_of(req.su_step) {
            continue;
        }
        let u_min = uplinks_for(s, req.ratio);
        if u_min + s > k {
            continue;
        }
        let units = servers.div_ceil(u64::from(s));
        let mut go = true;
        leaf_uppers(k, s, u_min, units, req.rails, Some(s), &mut |shape| {
            go = visit(shape);
            go
        });
        if !go {
            return;
        }
    }
}

/// The tiers above `units` x `rails` leaves of `d` host ports, trying uplinks from `u_min`.
fn leaf_uppers(
    k: u32,
    d: u32,
    u_min: u32,
    units: u64,
    rails: u32,
    su: Option<u32>,
    visit: &mut dyn FnMut(Shape) -> bool,
) {
    let leaves = units * u64::from(rails);
    let shape = |u: u32, upper: Upper| Shape {
        leaf_down: d,
        leaf_up: u,
        su_size: su,
        upper,
    };
    if leaves == 1 && su.is_some() {
        // One rail of one unit: a single leaf.
        visit(shape(0, Upper::None));
        return;
    }
    let k64 = u64::from(k);
    if leaves <= k64 {
        // Two tiers: per uplink count, the most links per spine (fewest spines); more uplinks only
        // when they need fewer spines.
        let mut best_spines = u32::MAX;
        for u in u_min..=k - d {
            let Some(links) = divisors(u).rev().find(|m| leaves * u64::from(*m) <= k64) else {
                continue;
            };
            let spines = u / links;
            if spines < best_spines {
                best_spines = spines;
                if !visit(shape(u, Upper::Two { spines, links })) {
                    return;
                }
            }
        }
        return;
    }
    // Three tiers.
    let arrangements = pod_arrangements(k, units, rails, su.is_some());
    for u in u_min..=(k - d).min(u_min + THREE_TIER_UPLINK_SLACK) {
        let mut go = true;
        three_tier_uppers(k, u, units, rails, &arrangements, &mut |upper| {
            go = visit(shape(u, upper));
            go
        });
        if !go {
            return;
        }
    }
}

/// How `units` x `rails` leaves may be grouped into pods of at most half a switch's ports: in leaf
/// order, or for a rail-optimized design by whole rails (when every unit fits a pod) or whole units.
fn pod_arrangements(k: u32, units: u64, rails: u32, rail_optimized: bool) -> Vec<Pods> {
    let half = k / 2;
    let leaves = units * u64::from(rails);
    let mut out: Vec<Pods> = Vec::new();
    let in_order = |out: &mut Vec<Pods>| {
        let fewest = leaves.div_ceil(u64::from(half.max(1)));
        for pods in fewest..=fewest + POD_SLACK {
            let size = leaves.div_ceil(pods);
            if size >= 1 && size <= u64::from(half) && leaves.div_ceil(size) == pods {
                out.push(Pods::InOrder { size: size as u32 });
            }
        }
    };
    if !rail_optimized {
        in_order(&mut out);
    } else if units <= u64::from(half) {
        let most = (half / units.max(1) as u32).min(rails).max(1);
        for per in (1..=most).rev().take(1 + POD_SLACK as usize) {
            out.push(Pods::WholeRails { rails: per });
        }
    } else if rails > half {
        in_order(&mut out);
    } else {
        let most = (half / rails.max(1)).max(1);
        for per in (1..=most).rev().take(1 + POD_SLACK as usize) {
            out.push(Pods::WholeUnits { units: per });
        }
    }
    out
}

/// Three-tier uppers for leaves with `u` uplinks: per arrangement and links per spine, the fewest
/// cores for each spine uplink count (more spine uplinks only when they need fewer cores).
fn three_tier_uppers(
    k: u32,
    u: u32,
    units: u64,
    rails: u32,
    arrangements: &[Pods],
    visit: &mut dyn FnMut(Upper) -> bool,
) {
    let k64 = u64::from(k);
    for &pods in arrangements {
        let (n_pods, slots) = pods.count(units, rails);
        if n_pods > k64 {
            continue;
        }
        for links in divisors(u).rev() {
            let spine_down = slots * u64::from(links);
            if 2 * spine_down > k64 {
                continue;
            }
            let spines_per_pod = u / links;
            let mut best_group = u32::MAX;
            for spine_up in spine_down as u32..=k - spine_down as u32 {
                let Some(group) =
                    divisors(spine_up).find(|g| n_pods * u64::from(spine_up / g) <= k64)
                else {
                    continue;
                };
                if group < best_group {
                    best_group = group;
                    let upper = Upper::Three {
                        pods,
                        spines_per_pod,
                        links,
                        spine_up,
                        group,
                    };
                    if !visit(upper) {
                        return;
                    }
                }
            }
        }
    }
}

/// Every balanced upper for `leaves` leaves in leaf order with `u` uplinks each on radix `k`: two
/// tiers with any links per spine that fit, or three tiers when the leaves outnumber a spine's ports.
pub(crate) fn tree_uppers(k: u32, u: u32, leaves: u64, visit: &mut dyn FnMut(Upper) -> bool) {
    if leaves <= u64::from(k) {
        for links in divisors(u).rev() {
            if leaves * u64::from(links) <= u64::from(k)
                && !visit(Upper::Two {
                    spines: u / links,
                    links,
                })
            {
                return;
            }
        }
        return;
    }
    let arrangements = pod_arrangements(k, leaves, 1, false);
    three_tier_uppers(k, u, leaves, 1, &arrangements, visit);
}
