//! The design search: what an architect would build for a request.
//!
//! A request fixes the servers, their NICs, the technology and link speed, the topology and the
//! largest leaf down:up ratio it accepts. Everything else is a choice: the switch model and port mode,
//! the leaf port split (how many ports face hosts, how many face up), the scalable-unit size, how many
//! spines and cores and how they are grouped, and the number of tiers. Values the user gives stay
//! fixed; values a preset gives (a published reference design's choices) are kept by the plan, and
//! the alternatives also show designs that do not keep them.
//!
//! Method, in three steps:
//! 1. **Enumerate** every valid shape of every catalog switch that carries the request
//!    ([`crate::topo::Shape`]): every leaf size and unit size, every tier balanced, within the radix, every
//!    full leaf at most the requested ratio, the spine tier non-blocking. Dominated shapes are
//!    skipped as they are generated (for one leaf size, more uplinks only pay off if they need fewer
//!    spines; more spine uplinks only if they need fewer cores), and the fewest tiers that hold the
//!    leaves are used (a third tier only adds switches and cables to a tree that two tiers hold).
//! 2. **Count and bound** each with the one counting model, [`crate::topo::counts`]: switches and NICs at
//!    their catalog prices; cables and optics estimated at typical runs of the hall
//!    ([`CableCtx::typical_link_costs`], to rank) and bounded below by the shortest runs the hall
//!    allows ([`MediaFloor`], a floor no built design goes under). A switch whose cables cannot reach
//!    the servers in any design is dropped here, before anything is built.
//! 3. **Cost exactly, branch and bound**: the best-ranked designs are built and priced from their
//!    parts ([`bom::cost`], the plan's own bill of materials) while any design's floor is below the
//!    best exact cost. Before a design is built its floor is tightened to every link at its own run
//!    ([`MediaFloor::runs`]: the same hall [`crate::layout::place`] uses), which is the exact cost but
//!    for shared transceiver cages, so most designs stop there and few are built. The chosen design
//!    is then the cheapest of all, to the cent ([`DesignReport::complete`]), unless a budget of links
//!    to build runs out first (the 131,072-GPU design is built once).
//!
//! Ties go to fewer switches, then more bisection bandwidth, then the larger scalable unit and the
//! order of enumeration, so the same request gives the same design.

use crate::bom;
use crate::build::build_resolved;
use crate::error::{err, BuildError};
use crate::graph::Fabric;
use crate::hardware::{base, server_height_u, switch_options, Base, Resolved, SwitchOption};
use crate::layout::{self, CableCtx, Hall, MediaFloor, RackFill};
use crate::shape::{Pods, Shape, Upper};
use crate::text::{ratio_text, signed_usd};
use crate::topo::{
    counts, divisors, leaf_first_servers, leaf_split, uplinks_for, Counts, DesignSize, ServerCounts,
};
use railyard_catalog::{Catalog, Tech};
use railyard_spec::{ClusterSpec, Source, Topology};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write;

pub use crate::text::{plural, thousands};

/// How much the search reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchOptions {
    /// Alternatives to report besides the chosen design.
    pub alternatives: usize,
}

/// The searched design, built, with the report of how it was chosen.
#[derive(Debug)]
pub struct Designed<'a> {
    pub fabric: Fabric,
    pub resolved: Resolved<'a>,
    pub report: DesignReport,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How the design was chosen: each choice with its source and reason, the best design per switch
/// model, and the alternatives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignReport {
    /// Valid designs the search counted.
    pub candidates: u64,
    /// Designs built and costed exactly.
    pub costed_exactly: u32,
    /// Of them, those built only to cost the alternatives asked for (`--alternatives`, the report's
    /// list): a plan without them builds the rest, so both say how the design was chosen alike.
    #[serde(skip_serializing_if = "is_zero")]
    pub costed_for_alternatives: u32,
    /// Every design that could cost less than the chosen one was built and costed (false when the
    /// search's budget of links to build ran out first, as on the largest designs).
    pub complete: bool,
    /// The chosen design's cost from its parts, US dollars.
    pub cost_usd: f64,
    pub choices: Vec<Choice>,
    /// The cheapest design of each switch model that carries the request, cheapest first.
    pub switches: Vec<SwitchCost>,
    /// The next designs, cheapest first (see [`Alternative`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
    /// A full leaf's host ports and uplinks as designed (absent without a leaf tier), to explain
    /// the leaf ratio cabled (the `leaf_ports` choice says it in words).
    #[serde(skip)]
    pub leaf_ports: Option<(u32, u32)>,
}

/// One choice of the design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// What was chosen: `switch`, `port_mode`, `nic`, `leaf_ports`, `scalable_unit`, `spines`,
    /// `cores`, `tiers`, `cable_media`.
    pub key: String,
    pub value: String,
    /// `given` (the user's), `preset` (the reference design's), `auto` (the search's).
    pub source: String,
    /// Why, when the search chose or something differs from what was implied.
    pub why: String,
}

/// The cheapest design of one switch model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchCost {
    pub switch_model: String,
    pub port_mode: String,
    pub cost_usd: f64,
    /// True when the cost is from counts at typical cable runs, not from a built design.
    pub cost_estimated: bool,
}

/// A design the search did not choose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternative {
    pub switch_model: String,
    pub port_mode: String,
    pub tiers: u32,
    pub su_size: Option<u32>,
    /// Host-facing and up-facing ports of a leaf.
    pub leaf_host_ports: u32,
    pub leaf_uplinks: u32,
    pub switches: AltSwitches,
    pub links: AltLinks,
    /// Down:up ratio of a full switch per tier (a tier that does not exist: 0; the top tier: 1).
    pub oversubscription: AltRatios,
    pub bisection_gbps: f64,
    pub cost_usd: f64,
    /// This design's cost minus the chosen one's.
    pub cost_delta_usd: f64,
    /// True when the cost is from counts at typical cable runs, not from a built design.
    pub cost_estimated: bool,
    /// The conventional design: the switch with the most ports, the leaf split `leaf_split` gives for
    /// the ratio, a unit of a leaf's host ports, spines and cores by the smallest divisors.
    pub conventional: bool,
    /// Keeps every choice the preset made (the reference design's).
    pub keeps_preset: bool,
    /// What differs from the chosen design.
    pub differs: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AltSwitches {
    pub leaf: u64,
    pub spine: u64,
    pub core: u64,
    pub total: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AltLinks {
    pub server_leaf: u64,
    pub leaf_spine: u64,
    pub spine_core: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AltRatios {
    pub leaf: f64,
    pub spine: f64,
    pub core: f64,
}

/// Network links the search may build to cost designs exactly, beyond the first design (which is
/// always built): a few designs of tens of thousands of links, and no second build of the
/// 131,072-GPU design (397,184 links).
const EXACT_BUDGET_LINKS: u64 = 1 << 18;
/// Uplinks per leaf beyond the fewest that a three-tier search tries (more only pays off in two tiers,
/// where it can let leaves share spines).
const THREE_TIER_UPLINK_SLACK: u32 = 4;
/// Pod counts beyond the fewest that a three-tier search tries (smaller pods can balance cores).
const POD_SLACK: u64 = 3;

/// What the search needs of the request.
#[derive(Debug, Clone, Copy)]
struct Req {
    topology: Topology,
    servers: u64,
    rails: u32,
    ratio: f64,
    /// Scalable unit: `Some` when the user or the preset fixed it.
    su: Option<u32>,
    /// The user fixed the unit (no other size is tried, even for alternatives).
    su_given: bool,
}

impl Req {
    fn of(spec: &ClusterSpec) -> Req {
        Req {
            topology: spec.fabric.topology,
            servers: u64::from(spec.servers.count),
            rails: spec.servers.compute_nics,
            ratio: spec.fabric.oversubscription,
            su: spec.fabric.su_size,
            su_given: spec.provenance.source("fabric.su_size") == Source::Given,
        }
    }
}

/// Visits every shape worth counting for `req` on radix `k`; `visit` returns false to stop.
fn each_shape(req: &Req, k: u32, visit: &mut dyn FnMut(Shape) -> bool) {
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
        if s == 0 || s >= k {
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

/// The conventional design's shape on radix `k`: the leaf split [`leaf_split`] gives for the ratio,
/// a unit of the leaf's host ports (or the fixed unit), and the tiers above by the smallest divisors.
fn conventional_shape(req: &Req, k: u32) -> Option<Shape> {
    let (down, up) = leaf_split(k, req.ratio);
    let tree = |hosts: u64| -> Option<Shape> {
        if hosts <= u64::from(k) {
            return Some(Shape {
                leaf_down: hosts as u32,
                leaf_up: 0,
                su_size: None,
                upper: Upper::None,
            });
        }
        let leaves = hosts.div_ceil(u64::from(down));
        conventional_upper(k, up, leaves, 1, Pods::InOrder { size: k / 2 }).map(|upper| Shape {
            leaf_down: down,
            leaf_up: up,
            su_size: None,
            upper,
        })
    };
    match req.topology {
        Topology::SingleSwitch | Topology::TwoSwitch => Some(Shape::FLAT),
        Topology::FatTree => tree(req.servers * u64::from(req.rails)),
        Topology::RailOnly => tree(req.servers),
        Topology::RailOptimized => {
            let su = req.su.unwrap_or(down);
            if su > down || su == 0 {
                return None;
            }
            let units = req.servers.div_ceil(u64::from(su));
            let rails = req.rails;
            let half = k / 2;
            let pods = if units <= u64::from(half) {
                Pods::WholeRails {
                    rails: (half / units as u32).min(rails).max(1),
                }
            } else if rails > half {
                Pods::InOrder { size: half }
            } else {
                Pods::WholeUnits {
                    units: (half / rails).max(1),
                }
            };
            let upper = if units * u64::from(rails) == 1 {
                Upper::None
            } else {
                conventional_upper(k, up, units, rails, pods)?
            };
            Some(Shape {
                leaf_down: su,
                leaf_up: if upper == Upper::None { 0 } else { up },
                su_size: Some(su),
                upper,
            })
        }
    }
}

/// The tiers above as the first railyard built them: two tiers with the largest divisor of the
/// uplinks as links per spine, three with as many links per spine as fit half a spine's ports and the
/// smallest core group.
fn conventional_upper(k: u32, up: u32, units: u64, rails: u32, pods: Pods) -> Option<Upper> {
    let leaves = units * u64::from(rails);
    let k64 = u64::from(k);
    if leaves <= k64 {
        let links = divisors(up).rev().find(|m| leaves * u64::from(*m) <= k64)?;
        return Some(Upper::Two {
            spines: up / links,
            links,
        });
    }
    let (n_pods, slots) = pods.count(units, rails);
    let half = u64::from(k / 2);
    let links = divisors(up).rev().find(|m| slots * u64::from(*m) <= half)?;
    let spine_up = (slots * u64::from(links)).min(k64 - half) as u32;
    let group = divisors(spine_up).find(|g| n_pods * u64::from(spine_up / g) <= k64)?;
    Some(Upper::Three {
        pods,
        spines_per_pod: up / links,
        links,
        spine_up,
        group,
    })
}

/// One design the search considered.
#[derive(Debug, Clone)]
struct Candidate<'a> {
    option: SwitchOption<'a>,
    shape: Shape,
    counts: Counts,
    /// Switches and NICs at catalog prices.
    hardware: f64,
    /// Cables and optics at typical runs (before calibration).
    media: f64,
    /// The least the design can cost: switches and NICs at their prices, cables and optics at the
    /// shortest runs the hall allows ([`MediaFloor`]); never above the exact cost.
    floor: f64,
    /// The floor counts every link at its own run ([`MediaFloor::runs`]).
    refined: bool,
    /// Index of its switch option in [`Space::options`].
    option_index: usize,
    exact: Option<f64>,
    /// Keeps every choice the preset made.
    keeps_preset: bool,
    conventional: bool,
    /// Enumeration order: the last tie-break.
    order: usize,
    /// Host ports on a full leaf.
    leaf_hosts: u64,
    /// Leaf slots per pod (three tiers; 0 otherwise).
    pod_slots: u64,
}

impl Candidate<'_> {
    fn estimate(&self, calibration: f64) -> f64 {
        self.hardware + self.media * calibration
    }

    fn cost(&self, calibration: f64) -> f64 {
        self.exact.unwrap_or_else(|| self.estimate(calibration))
    }

    fn bisection(&self, gbps: u32) -> f64 {
        self.counts
            .bisection_gbps(f64::from(gbps), self.counts.inter_switch > 0)
    }

    /// Ranking key: cost, then fewer switches, more bisection, enumeration order.
    fn key(&self, calibration: f64, gbps: u32) -> (f64, u64, f64, usize) {
        (
            self.cost(calibration),
            self.counts.switches(),
            -self.bisection(gbps),
            self.order,
        )
    }

    /// The best key the design could have once built: its floor for the cost.
    fn floor_key(&self, gbps: u32) -> (f64, u64, f64, usize) {
        (
            self.exact.unwrap_or(self.floor),
            self.counts.switches(),
            -self.bisection(gbps),
            self.order,
        )
    }

    fn same_design(&self, other: &Candidate) -> bool {
        self.option.switch.id == other.option.switch.id
            && self.option.mode.name == other.option.mode.name
            && self.shape.su_size == other.shape.su_size
            && self.counts == other.counts
    }
}

fn cmp_keys(a: (f64, u64, f64, usize), b: (f64, u64, f64, usize)) -> std::cmp::Ordering {
    // Costs are sums of prices: equal designs cost the same to the cent, so compare cents.
    let cents = |x: f64| (x * 100.0).round();
    cents(a.0)
        .total_cmp(&cents(b.0))
        .then(a.1.cmp(&b.1))
        .then(a.2.total_cmp(&b.2))
        .then(a.3.cmp(&b.3))
}

/// Every candidate of the request, counted and estimated; and the reason none exists, if none does.
struct Space<'a> {
    base: Base<'a>,
    options: Vec<SwitchOption<'a>>,
    /// The cable floor of each option.
    floors: Vec<MediaFloor<'a>>,
    candidates: Vec<Candidate<'a>>,
    /// The smallest design refused for its size, if every design of some switch was.
    too_big: Option<BuildError>,
    /// The best-ranked design that keeps the preset's choices but whose runs no cable or optics
    /// reaches ([`MediaFloor`]): built only to say why, when no design is left.
    out_of_reach: Option<Candidate<'a>>,
}

fn space<'a>(spec: &'a ClusterSpec, catalog: &'a Catalog) -> Result<Space<'a>, BuildError> {
    let base = base(spec, catalog)?;
    let options = switch_options(&base)?;
    let req = Req::of(spec);
    let servers = u64::from(spec.servers.count);
    let server_counts = ServerCounts::of(&Resolved::new(
        &base,
        options[0].switch,
        options[0].mode,
        Shape::FLAT,
    ));
    let preset_su = (spec.provenance.source("fabric.su_size") == Source::Preset)
        .then_some(spec.fabric.su_size)
        .flatten();
    let nic_cost = base.nic.price.usd * servers as f64 * f64::from(spec.servers.compute_nics);
    // The conventional switch: the one the spec names, else the most ports, then the cheapest.
    let conventional_switch = options
        .iter()
        .find(|o| o.named)
        .or_else(|| {
            options.iter().min_by(|a, b| {
                (std::cmp::Reverse(a.mode.ports), a.switch.price.usd)
                    .partial_cmp(&(std::cmp::Reverse(b.mode.ports), b.switch.price.usd))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
        })
        .map(|o| (o.switch.id.clone(), o.mode.name.clone()));
    let mut candidates = Vec::new();
    let mut too_big: Option<(u64, BuildError)> = None;
    let mut out_of_reach: Option<Candidate<'a>> = None;
    let gbps = base.gbps;
    let mut floors = Vec::with_capacity(options.len());
    // Where servers stand, per unit size (leaves are placed by the floors themselves).
    let mut halls: HashMap<Option<u32>, Hall> = HashMap::new();
    let server_u = server_height_u(spec, catalog).map(|(_, u)| u);
    for (option_index, option) in options.iter().enumerate() {
        let k = option.mode.ports;
        let ctx = CableCtx {
            layout: &spec.layout,
            fill: RackFill::new(&spec.layout, server_u, option.switch.rack_units),
            catalog,
            tech: spec.fabric.tech,
            gbps: option.mode.gbps,
            switch_cage: option.switch.ports_per_cage(option.mode),
            host_cage: base.host_cage(),
        };
        let (c_sl, c_ss) = ctx.typical_link_costs(spec.servers.count);
        floors.push(MediaFloor::new(ctx));
        let media_floor = &floors[option_index];
        // The floors of the server links per unit size, and of a leaf-spine link per spine count.
        let mut server_floor: HashMap<Option<u32>, Result<f64, f64>> = HashMap::new();
        let isl_floor = media_floor.switch_switch();
        let keeps_switch = option.named || spec.provenance.source("fabric.switch") == Source::Auto;
        let conventional = (conventional_switch
            == Some((option.switch.id.clone(), option.mode.name.clone())))
        .then(|| conventional_shape(&req, k))
        .flatten();
        let mut add = |shape: Shape, conv: bool, out: &mut Vec<Candidate<'a>>| {
            let Some(c) = counts(spec, k, &shape) else {
                return;
            };
            let size = DesignSize::of(servers, server_counts, &c, k);
            let r = Resolved::new(&base, option.switch, option.mode, shape);
            if let Err(e) = size.check(&r) {
                if too_big.as_ref().is_none_or(|(n, _)| size.nodes < *n) {
                    too_big = Some((size.nodes, e));
                }
                return;
            }
            // A unit size only shapes rail-optimized designs.
            let keeps_su = preset_su.is_none()
                || spec.fabric.topology != Topology::RailOptimized
                || shape.su_size == preset_su;
            let (units, rails, tree_hosts) = match spec.fabric.topology {
                Topology::RailOptimized => (
                    servers.div_ceil(u64::from(shape.su_size.unwrap_or(1).max(1))),
                    spec.servers.compute_nics,
                    servers,
                ),
                Topology::RailOnly => (
                    servers.div_ceil(u64::from(shape.leaf_down.max(1))),
                    1,
                    servers,
                ),
                _ => {
                    let hosts = servers * u64::from(spec.servers.compute_nics);
                    (hosts.div_ceil(u64::from(shape.leaf_down.max(1))), 1, hosts)
                }
            };
            let pod_slots = match shape.upper {
                Upper::Three { pods, .. } => pods.count(units, rails).1,
                _ => 0,
            };
            let hardware = c.switches() as f64 * option.switch.price.usd + nic_cost;
            let media = c.server_leaf as f64 * c_sl
                + (c.leaf_spine + c.spine_core + c.inter_switch) as f64 * c_ss;
            // The least this design can cost; none when no cable or optics reaches its runs.
            let su = shape
                .su_size
                .filter(|_| spec.fabric.topology == Topology::RailOptimized);
            let floor = (|| {
                let sl = *server_floor.entry(su).or_insert_with(|| {
                    media_floor.server_leaf(spec.servers.count, su, c.server_leaf / servers.max(1))
                });
                let ls = if c.leaf_spine > 0 {
                    // Every leaf at least as many rows from the spines as its first server.
                    let hall = halls.entry(su).or_insert_with(|| {
                        Hall::new(
                            &spec.layout,
                            RackFill::new(&spec.layout, server_u, option.switch.rack_units),
                            (0..spec.servers.count).map(|i| su.map(|s| i / s.max(1))),
                            &[],
                        )
                    });
                    let firsts = leaf_first_servers(spec, &shape, &c)?;
                    media_floor.leaf_spine(
                        firsts.iter().map(|&s| hall.rows_from_network(s)),
                        c.leaf_spine / c.leaves.max(1),
                        c.spines,
                    )?
                } else {
                    0.0
                };
                let sc = media_floor.spine_core(c.spines, c.cores, c.spine_core)?;
                let isl = if c.inter_switch > 0 {
                    isl_floor? * c.inter_switch as f64
                } else {
                    0.0
                };
                Some(hardware + sl.ok()? + ls + sc + isl)
            })();
            let candidate = Candidate {
                leaf_hosts: tree_hosts.min(u64::from(shape.leaf_down)),
                pod_slots,
                option: *option,
                shape,
                counts: c,
                hardware,
                media,
                floor: floor.unwrap_or(f64::INFINITY),
                refined: false,
                option_index,
                exact: None,
                keeps_preset: keeps_switch && keeps_su,
                conventional: conv,
                order: 0,
            };
            if floor.is_some() {
                out.push(candidate);
            } else if candidate.keeps_preset
                && out_of_reach.as_ref().is_none_or(|o: &Candidate| {
                    cmp_keys(candidate.key(1.0, gbps), o.key(1.0, gbps)).is_lt()
                })
            {
                out_of_reach = Some(candidate);
            }
        };
        let before = candidates.len();
        each_shape(&req, k, &mut |shape| {
            add(shape, Some(shape) == conventional, &mut candidates);
            true
        });
        if let Some(conv) = conventional {
            if !candidates[before..].iter().any(|c| c.shape == conv) {
                add(conv, true, &mut candidates);
            }
        }
    }
    for (i, c) in candidates.iter_mut().enumerate() {
        c.order = i;
    }
    Ok(Space {
        base,
        options,
        floors,
        candidates,
        too_big: too_big.map(|(_, e)| e),
        out_of_reach,
    })
}

/// The design the counting model ranks first among those that keep the preset's choices, without
/// building anything (the search's first step; [`design`] and [`build`] then cost the best few
/// exactly).
pub fn resolve<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
) -> Result<Resolved<'a>, BuildError> {
    let sp = space(spec, catalog)?;
    let gbps = sp.base.gbps;
    let best = sp
        .candidates
        .iter()
        .filter(|c| c.keeps_preset)
        .min_by(|a, b| cmp_keys(a.key(1.0, gbps), b.key(1.0, gbps)))
        .or(sp.out_of_reach.as_ref())
        .ok_or_else(|| no_design(spec, &sp))?;
    Ok(Resolved::new(
        &sp.base,
        best.option.switch,
        best.option.mode,
        best.shape,
    ))
}

/// Builds the whole fabric of the searched design: servers, switches, links, cable lengths, cables
/// and transceivers. [`design`] does the same and also reports the choices and alternatives.
pub fn build(spec: &ClusterSpec, catalog: &Catalog) -> Result<Fabric, BuildError> {
    design(spec, catalog, &SearchOptions::default()).map(|d| d.fabric)
}

/// Searches the designs of a spec, builds the cheapest that keeps the preset's choices, and reports
/// how it was chosen and the next designs.
pub fn design<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
    opts: &SearchOptions,
) -> Result<Designed<'a>, BuildError> {
    let mut sp = space(spec, catalog)?;
    let gbps = sp.base.gbps;
    if !sp.candidates.iter().any(|c| c.keeps_preset) {
        // No cable reaches some run of any design left: building the best of them says which.
        if let Some(c) = &sp.out_of_reach {
            let r = Resolved::new(&sp.base, c.option.switch, c.option.mode, c.shape);
            build_resolved(&r)?;
        }
        return Err(no_design(spec, &sp));
    }
    let mut calibration = 1.0;
    let mut spent: u64 = 0;
    let mut built = 0u32;
    let mut best: Option<(usize, Fabric)> = None;
    // The best design built whose cables cannot be ordered (links sharing a cage the catalog has
    // no part for: `layout::shared_cage_cables`): chosen only when no other design is.
    let mut unorderable: Option<(usize, Fabric)> = None;
    // Every design built whose cables cannot be ordered: alternatives to one another when no
    // design that can be ordered was found.
    let mut unorderable_built: Vec<usize> = Vec::new();
    let mut first_error: Option<BuildError> = None;
    let mut failed = vec![false; sp.candidates.len()];
    let mut exhausted = false;
    // The first design found out of reach of every cable when counted link by link.
    let mut unreached: Option<usize> = None;
    // The chosen design: build the best-ranked designs that keep the preset's choices.
    loop {
        // Branch and bound: the best-ranked design not built yet whose floor could still beat the
        // best built one (cost, then fewer switches, more bisection, order).
        let best_key = best
            .as_ref()
            .map(|(b, _)| sp.candidates[*b].key(calibration, gbps));
        let next = next_to_build(&sp, calibration, &failed, best_key, |c| c.keeps_preset);
        let Some(i) = next else { break };
        if !sp.candidates[i].refined {
            // Count every link at its own run before building: most designs stop here.
            if !refine(&mut sp, i, spec) {
                failed[i] = true;
                unreached.get_or_insert(i);
            }
            continue;
        }
        if (best.is_some() || unorderable.is_some())
            && spent + sp.candidates[i].counts.network_links() > EXACT_BUDGET_LINKS
        {
            exhausted = true;
            break;
        }
        match build_candidate(&sp, i) {
            Ok(f) => {
                let cost = bom::cost(&f, catalog);
                spent += sp.candidates[i].counts.network_links();
                built += 1;
                let c = &mut sp.candidates[i];
                debug_assert!(
                    c.floor <= cost + 1e-6,
                    "floor {} above the exact cost {cost} of {:?}",
                    c.floor,
                    c.shape
                );
                c.exact = Some(cost);
                if built == 1 && c.media > 0.0 {
                    calibration = ((cost - c.hardware) / c.media).clamp(0.2, 5.0);
                }
                // A design whose cables cannot be ordered competes only with its like.
                let slot = if layout::shared_cage_cables(&f, catalog).is_some() {
                    failed[i] = true;
                    unorderable_built.push(i);
                    &mut unorderable
                } else {
                    &mut best
                };
                let better = slot.as_ref().is_none_or(|(b, _)| {
                    cmp_keys(
                        sp.candidates[i].key(calibration, gbps),
                        sp.candidates[*b].key(calibration, gbps),
                    )
                    .is_lt()
                });
                if better {
                    *slot = Some((i, f));
                }
            }
            Err(e) => {
                failed[i] = true;
                first_error.get_or_insert(e);
            }
        }
    }
    // A cheaper design passed over for cables that cannot be ordered, named in the report.
    let cost_of = |i: usize| sp.candidates[i].cost(calibration);
    let passed_over = match (&best, &unorderable) {
        (Some((b, _)), Some((u, _))) if cost_of(*u) < cost_of(*b) => Some(*u),
        _ => None,
    };
    if best.is_none() {
        // None can be ordered: those built compete with one another, in the switch choice and as
        // alternatives (QM8700's HDR100 designs went unnamed beside QM8790's).
        for &u in &unorderable_built {
            failed[u] = false;
        }
    }
    let orderable_only = best.is_some();
    let Some((chosen, fabric)) = best.or(unorderable) else {
        if let (None, Some(i)) = (&first_error, unreached) {
            // Building it says which run no cable reaches.
            build_candidate(&sp, i)?;
        }
        return Err(first_error.unwrap_or_else(|| no_design(spec, &sp)));
    };
    // Where the chosen design can be ordered, no alternative or switch comparison names one that
    // cannot: designs on switch modes the catalog has no cage part for are all such.
    let partless = orderable_only
        && sp
            .options
            .iter()
            .any(|o| !cage_parts(o, catalog, spec.fabric.tech));
    if orderable_only {
        for (i, c) in sp.candidates.iter().enumerate() {
            if !cage_parts(&sp.options[c.option_index], catalog, spec.fabric.tech) {
                failed[i] = true;
            }
        }
    }
    let mut budget = ExactBudget {
        spent,
        built,
        orderable_only,
    };
    // The best design of every switch model, named in the switch choice: costed exactly while the
    // budget lasts, so the choice quotes the price --alternatives lists, not an estimate. Branch
    // and bound as for the chosen design, within one switch model.
    for oi in 0..sp.options.len() {
        loop {
            let bound = best_exact_of_option(&sp, oi, calibration, &failed)
                .map(|b| sp.candidates[b].key(calibration, gbps));
            let next = next_to_build(&sp, calibration, &failed, bound, |c| c.option_index == oi);
            let Some(i) = next else { break };
            if !sp.candidates[i].refined {
                if !refine(&mut sp, i, spec) {
                    failed[i] = true;
                }
                continue;
            }
            if !budget.cost(&mut sp, i, catalog, &mut failed) {
                break;
            }
        }
    }
    // Alternatives: cost the next few exactly while the budget lasts.
    let built_to_choose = budget.built;
    let mut alternatives =
        alternative_indexes(&sp, chosen, opts.alternatives, calibration, &failed);
    for _ in 0..2 {
        let mut changed = false;
        for &i in &alternatives {
            if sp.candidates[i].exact.is_none() && budget.cost(&mut sp, i, catalog, &mut failed) {
                changed = true;
            }
        }
        if !changed {
            break;
        }
        alternatives = alternative_indexes(&sp, chosen, opts.alternatives, calibration, &failed);
    }
    let ExactBudget { built, .. } = budget;
    let resolved = Resolved::new(
        &sp.base,
        sp.candidates[chosen].option.switch,
        sp.candidates[chosen].option.mode,
        sp.candidates[chosen].shape,
    );
    let report = report(
        spec,
        &sp,
        chosen,
        &alternatives,
        Costing {
            calibration,
            built,
            for_alternatives: built - built_to_choose,
            passed_over,
            partless,
            complete: !exhausted,
        },
        &failed,
    );
    Ok(Designed {
        fabric,
        resolved,
        report,
    })
}

/// Branch and bound's next design to build among those `wanted` takes: the best-ranked not built
/// (nor failed) whose floor could still beat `bound`, the best built so far.
fn next_to_build(
    sp: &Space,
    calibration: f64,
    failed: &[bool],
    bound: Option<(f64, u64, f64, usize)>,
    wanted: impl Fn(&Candidate) -> bool,
) -> Option<usize> {
    let gbps = sp.base.gbps;
    sp.candidates
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            wanted(c)
                && c.exact.is_none()
                && !failed[*i]
                && bound.is_none_or(|b| cmp_keys(c.floor_key(gbps), b).is_lt())
        })
        .min_by(|a, b| cmp_keys(a.1.key(calibration, gbps), b.1.key(calibration, gbps)))
        .map(|(i, _)| i)
}

/// The links built to cost designs exactly after the chosen one, and the designs built.
struct ExactBudget {
    spent: u64,
    built: u32,
    /// The chosen design can be ordered: one whose cables cannot be is no alternative to it.
    orderable_only: bool,
}

impl ExactBudget {
    /// Builds design `i` and costs it exactly if [`EXACT_BUDGET_LINKS`] allows; a design that does
    /// not build, or (when the chosen design can be ordered) whose cables cannot be
    /// (`layout::shared_cage_cables`), is marked failed. False when the budget does not allow it.
    fn cost(&mut self, sp: &mut Space, i: usize, catalog: &Catalog, failed: &mut [bool]) -> bool {
        let links = sp.candidates[i].counts.network_links();
        if self.spent + links > EXACT_BUDGET_LINKS {
            return false;
        }
        self.spent += links;
        match build_candidate(sp, i) {
            Ok(f) => {
                sp.candidates[i].exact = Some(bom::cost(&f, catalog));
                self.built += 1;
                if self.orderable_only && layout::shared_cage_cables(&f, catalog).is_some() {
                    failed[i] = true;
                }
            }
            Err(_) => failed[i] = true,
        }
        true
    }
}

/// Whether the catalog has any part for a cage of `option`'s switch in its mode: a cage of one
/// port takes any cable; a cage of several needs a cable or transceiver of that many ports for the
/// technology (twin-port, splitter or multi-port module: `layout::CableCtx`). Without one, every
/// link on a shared cage keeps a straight cable that cannot be ordered
/// (`layout::shared_cage_cables`), and every design on the mode has such links.
fn cage_parts(option: &SwitchOption, catalog: &Catalog, tech: Tech) -> bool {
    let ports = option.switch.ports_per_cage(option.mode);
    ports == 1
        || catalog
            .transceivers
            .values()
            .any(|t| t.ports == ports && t.techs.contains(&tech))
        || catalog
            .cables
            .values()
            .any(|c| c.ports == ports && c.carries(tech, option.mode.gbps))
}

/// Tightens design `i`'s floor to every link at its own run ([`MediaFloor::runs`]); false when
/// some run is out of reach of every cable.
fn refine(sp: &mut Space, i: usize, spec: &ClusterSpec) -> bool {
    let c = &mut sp.candidates[i];
    c.refined = true;
    match sp.floors[c.option_index].runs(spec, &c.shape, &c.counts) {
        Some(Ok(media)) => {
            c.floor = c.floor.max(c.hardware + media);
            true
        }
        Some(Err(_)) => false,
        None => true,
    }
}

/// The best design (by [`Candidate::key`]) of switch option `oi` not failed: the best costed
/// exactly when no design left unbuilt could beat it (its floor), else the best by estimate.
fn best_of_option(sp: &Space, oi: usize, calibration: f64, failed: &[bool]) -> Option<usize> {
    let gbps = sp.base.gbps;
    let of_option = || {
        sp.candidates
            .iter()
            .enumerate()
            .filter(move |(i, c)| c.option_index == oi && !failed[*i])
    };
    let by_key = |a: &(usize, &Candidate), b: &(usize, &Candidate)| {
        cmp_keys(a.1.key(calibration, gbps), b.1.key(calibration, gbps))
    };
    if let Some(e) = best_exact_of_option(sp, oi, calibration, failed) {
        let bound = sp.candidates[e].key(calibration, gbps);
        let open = of_option()
            .any(|(_, c)| c.exact.is_none() && cmp_keys(c.floor_key(gbps), bound).is_lt());
        if !open {
            return Some(e);
        }
    }
    of_option().min_by(by_key).map(|(i, _)| i)
}

/// The best design of switch option `oi` costed exactly and not failed.
fn best_exact_of_option(sp: &Space, oi: usize, calibration: f64, failed: &[bool]) -> Option<usize> {
    let gbps = sp.base.gbps;
    sp.candidates
        .iter()
        .enumerate()
        .filter(|(i, c)| c.option_index == oi && c.exact.is_some() && !failed[*i])
        .min_by(|a, b| cmp_keys(a.1.key(calibration, gbps), b.1.key(calibration, gbps)))
        .map(|(i, _)| i)
}

fn build_candidate(sp: &Space, i: usize) -> Result<Fabric, BuildError> {
    let c = &sp.candidates[i];
    build_resolved(&Resolved::new(
        &sp.base,
        c.option.switch,
        c.option.mode,
        c.shape,
    ))
}

/// The alternatives to report: the next `n` distinct designs by cost (preset choices not kept), the
/// conventional design taking the last place if it is not among them.
fn alternative_indexes(
    sp: &Space,
    chosen: usize,
    n: usize,
    calibration: f64,
    failed: &[bool],
) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let gbps = sp.base.gbps;
    let mut order: Vec<usize> = (0..sp.candidates.len())
        .filter(|&i| i != chosen && !failed[i])
        .collect();
    order.sort_by(|&a, &b| {
        cmp_keys(
            sp.candidates[a].key(calibration, gbps),
            sp.candidates[b].key(calibration, gbps),
        )
    });
    let mut out: Vec<usize> = Vec::new();
    for i in order {
        let c = &sp.candidates[i];
        if c.same_design(&sp.candidates[chosen])
            || out.iter().any(|&j| sp.candidates[j].same_design(c))
        {
            continue;
        }
        out.push(i);
        if out.len() == n {
            break;
        }
    }
    let conventional = (0..sp.candidates.len()).find(|&i| {
        let c = &sp.candidates[i];
        c.conventional && c.keeps_preset && !failed[i]
    });
    if let Some(conv) = conventional {
        let present = conv == chosen
            || sp.candidates[conv].same_design(&sp.candidates[chosen])
            || out
                .iter()
                .any(|&j| sp.candidates[j].same_design(&sp.candidates[conv]));
        if !present {
            if out.len() == n {
                out.pop();
            }
            out.push(conv);
        }
    }
    out
}

/// Down:up ratios of full switches per tier, as the plan reports them (0 absent, 1 top tier).
fn ratios(c: &Candidate) -> AltRatios {
    let s = &c.shape;
    let leaf = if s.leaf_up == 0 {
        1.0
    } else {
        c.leaf_hosts as f64 / f64::from(s.leaf_up)
    };
    let (spine, core) = match s.upper {
        Upper::None => (0.0, 0.0),
        Upper::Two { .. } => (1.0, 0.0),
        Upper::Three {
            links, spine_up, ..
        } => (
            (c.pod_slots * u64::from(links)) as f64 / f64::from(spine_up),
            1.0,
        ),
    };
    AltRatios { leaf, spine, core }
}

/// What differs between an alternative and the chosen design.
fn differences(a: &Candidate, c: &Candidate) -> Vec<String> {
    let mut out = Vec::new();
    if a.option.switch.id != c.option.switch.id {
        out.push(format!(
            "{} instead of {}",
            a.option.switch.id, c.option.switch.id
        ));
    } else if a.option.mode.name != c.option.mode.name {
        out.push(format!(
            "{} instead of {}",
            a.option.mode.name, c.option.mode.name
        ));
    }
    if a.shape.su_size != c.shape.su_size {
        if let (Some(x), Some(y)) = (a.shape.su_size, c.shape.su_size) {
            out.push(format!(
                "units of {} instead of {y}",
                plural(u64::from(x), "server", "servers")
            ));
        }
    } else if a.shape.leaf_down != c.shape.leaf_down && a.shape.leaf_up > 0 {
        out.push(format!(
            "{} per leaf instead of {}",
            plural(u64::from(a.shape.leaf_down), "host port", "host ports"),
            c.shape.leaf_down
        ));
    }
    if a.shape.leaf_up != c.shape.leaf_up && a.shape.leaf_up > 0 && c.shape.leaf_up > 0 {
        out.push(format!(
            "{} per leaf instead of {}",
            plural(u64::from(a.shape.leaf_up), "uplink", "uplinks"),
            c.shape.leaf_up
        ));
    }
    if a.counts.tiers != c.counts.tiers {
        out.push(format!(
            "{} tiers instead of {}",
            a.counts.tiers, c.counts.tiers
        ));
    }
    for (what, x, y) in [
        ("leaves", a.counts.leaves, c.counts.leaves),
        ("spines", a.counts.spines, c.counts.spines),
        ("cores", a.counts.cores, c.counts.cores),
    ] {
        if x != y {
            out.push(format!(
                "{} {what} instead of {}",
                thousands(x as f64),
                thousands(y as f64)
            ));
        }
    }
    let links = |c: &Candidate| c.counts.leaf_spine + c.counts.spine_core + c.counts.inter_switch;
    if links(a) != links(c) {
        out.push(format!(
            "{} switch-to-switch cables instead of {}",
            thousands(links(a) as f64),
            thousands(links(c) as f64)
        ));
    }
    if a.conventional {
        out.push(
            "the conventional design: the switch with the most ports, the even leaf split, spines by the smallest divisor"
                .to_string(),
        );
    }
    if !a.keeps_preset {
        out.push("not the preset's reference choice".to_string());
    }
    out
}

/// How the search costed its designs.
#[derive(Debug, Clone, Copy)]
struct Costing {
    /// Factor on typical cable costs, from the first design built.
    calibration: f64,
    /// Designs built.
    built: u32,
    /// Of them, built only to cost the alternatives asked for.
    for_alternatives: u32,
    /// No design left unbuilt could cost less than the chosen one.
    complete: bool,
    /// A cheaper design built and passed over: links share cages the catalog has no part for.
    passed_over: Option<usize>,
    /// Switch models left out of the comparison because the catalog has no part for their cages
    /// at this technology (`cage_parts`), the chosen design being one that can be ordered.
    partless: bool,
}

fn report(
    spec: &ClusterSpec,
    sp: &Space,
    chosen: usize,
    alternatives: &[usize],
    costing: Costing,
    failed: &[bool],
) -> DesignReport {
    let Costing {
        calibration,
        built,
        for_alternatives,
        complete,
        passed_over,
        partless,
    } = costing;
    let gbps = sp.base.gbps;
    let c = &sp.candidates[chosen];
    let cost = c.cost(calibration);
    let prov = &spec.provenance;
    let source = |field: &str| prov.source(field).as_str().to_string();
    let reset_note = |field: &str| {
        prov.reset(field)
            .map(|r| {
                format!(
                    "the spec's {} was reset to auto because {}; ",
                    r.value, r.because
                )
            })
            .unwrap_or_default()
    };
    let tech = spec.fabric.tech;

    // The best design of each switch model, cheapest first.
    let mut per_switch: Vec<(usize, SwitchCost)> = Vec::new();
    // What else the best design of each switch model changes (its unit size, its leaf split), so the
    // switch choice does not credit the switch with a saving the shape makes.
    let mut shape_of: HashMap<String, String> = HashMap::new();
    for (oi, option) in sp.options.iter().enumerate() {
        if let Some(b) = best_of_option(sp, oi, calibration, failed).map(|i| &sp.candidates[i]) {
            let shape: Vec<String> = differences(b, c)
                .into_iter()
                .filter(|d| {
                    d.starts_with("units of")
                        || d.contains(" per leaf instead")
                        || d.contains(" tiers instead")
                })
                .collect();
            if !shape.is_empty() {
                shape_of.insert(option.switch.id.clone(), shape.join(", "));
            }
            per_switch.push((
                oi,
                SwitchCost {
                    switch_model: option.switch.id.clone(),
                    port_mode: option.mode.name.clone(),
                    cost_usd: b.cost(calibration),
                    cost_estimated: b.exact.is_none(),
                },
            ));
        }
    }
    per_switch.sort_by(|a, b| a.1.cost_usd.total_cmp(&b.1.cost_usd).then(a.0.cmp(&b.0)));
    let switches: Vec<SwitchCost> = per_switch.into_iter().map(|(_, s)| s).collect();

    let mut choices = Vec::new();
    let mut push = |key: &str, value: String, source: String, why: String| {
        choices.push(Choice {
            key: key.to_string(),
            value,
            source,
            why,
        })
    };

    // Switch.
    let sw = &c.option.switch.id;
    let cheapest_other = switches.iter().find(|s| &s.switch_model != sw);
    let mut why = reset_note("fabric.switch");
    let tilde = |s: &SwitchCost| if s.cost_estimated { "~" } else { "" };
    let also = |s: &SwitchCost| {
        shape_of
            .get(&s.switch_model)
            .map_or(String::new(), |d| format!(" and {d}"))
    };
    match prov.source("fabric.switch") {
        Source::Auto => {
            let _ = write!(
                why,
                "cheapest design of {} switch model{} carrying {tech} at {gbps} Gb/s{}",
                switches.len(),
                if switches.len() == 1 { "" } else { "s" },
                if partless {
                    " with cables that can be ordered"
                } else {
                    ""
                }
            );
            if let Some(o) = cheapest_other {
                let _ = write!(
                    why,
                    "; the best with {}{} costs {}${} ({})",
                    o.switch_model,
                    also(o),
                    tilde(o),
                    thousands(o.cost_usd),
                    signed_usd(o.cost_usd - cost)
                );
            }
        }
        Source::Preset => {
            let _ = write!(why, "the preset's reference choice");
            if let Some(o) = switches
                .first()
                .filter(|o| &o.switch_model != sw && o.cost_usd < cost - 0.5)
            {
                let _ = write!(
                    why,
                    "; a design with {}{} costs {}${} ({}, see --alternatives)",
                    o.switch_model,
                    also(o),
                    tilde(o),
                    thousands(o.cost_usd),
                    signed_usd(o.cost_usd - cost)
                );
            } else {
                let _ = write!(why, "; also the cheapest");
            }
        }
        Source::Given => {
            if let Some(o) = switches
                .first()
                .filter(|o| &o.switch_model != sw && o.cost_usd < cost - 0.5)
            {
                let _ = write!(
                    why,
                    "a design with {}{} would cost {}${} ({})",
                    o.switch_model,
                    also(o),
                    tilde(o),
                    thousands(o.cost_usd),
                    signed_usd(o.cost_usd - cost)
                );
            }
        }
    }
    if let Some(u) = passed_over.map(|u| &sp.candidates[u]) {
        let _ = write!(
            why,
            "{}a design with {} at {} costs ${} ({}) but was passed over: links share cages the catalog has no part for (a multi-port cable or transceiver), so its cables could not be ordered",
            if why.is_empty() { "" } else { "; " },
            u.option.switch.id,
            u.option.mode.name,
            thousands(u.cost(calibration)),
            signed_usd(u.cost(calibration) - cost)
        );
    }
    push("switch", sw.clone(), source("fabric.switch"), why);

    let mode = c.option.mode;
    push(
        "port_mode",
        format!("{} ({} x {} Gb/s)", mode.name, mode.ports, mode.gbps),
        source("fabric.port_gbps"),
        format!(
            "{}{}",
            reset_note("fabric.port_gbps"),
            if spec.fabric.port_gbps.is_some() {
                format!("the port speed asked for, {gbps} Gb/s")
            } else {
                format!("{tech}'s port speed, {gbps} Gb/s")
            }
        ),
    );
    let nic = sp.base.nic;
    push(
        "nic",
        nic.id.clone(),
        source("servers.nic"),
        format!(
            "{}{}{}",
            reset_note("servers.nic"),
            if sp.base.host_cage() < spec.servers.nic_ports_per_cage {
                format!(
                    "its {} ports per cage went with it (one cage per port); ",
                    spec.servers.nic_ports_per_cage
                )
            } else {
                String::new()
            },
            if prov.source("servers.nic") == Source::Auto {
                format!("the NIC whose ports run {tech} at {gbps} Gb/s (fewest ports, then lowest price)")
            } else {
                String::new()
            }
        ),
    );

    let shape = c.shape;
    let requested = spec.fabric.oversubscription;
    let topology = spec.fabric.topology;
    if matches!(
        topology,
        Topology::FatTree | Topology::RailOnly | Topology::RailOptimized
    ) {
        let ports_why = if shape.leaf_up == 0 {
            String::new()
        } else {
            let need = uplinks_for(shape.leaf_down, requested);
            let full = f64::from(shape.leaf_down) / f64::from(shape.leaf_up);
            let mut w = format!(
                "a full leaf at {} (at most {} asked)",
                ratio_text(full),
                ratio_text(requested)
            );
            if c.leaf_hosts < u64::from(shape.leaf_down) {
                // No leaf is full (it said "a full leaf at 0.03:1" for one server's 32 + 32 leaf).
                let _ = write!(
                    w,
                    "; the fullest here has {} of its {} host ports cabled: {}",
                    c.leaf_hosts,
                    shape.leaf_down,
                    ratio_text(c.leaf_hosts as f64 / f64::from(shape.leaf_up))
                );
            }
            if shape.leaf_up > need {
                // What the fewest uplinks would need above the leaves.
                let fewest = sp.candidates.iter().find(|x| {
                    x.option.switch.id == c.option.switch.id
                        && x.shape.su_size == shape.su_size
                        && x.shape.leaf_down == shape.leaf_down
                        && x.shape.leaf_up == need
                });
                let _ = write!(
                    w,
                    "; {} uplinks where {need} meet the ratio, so the leaves share {}",
                    shape.leaf_up,
                    plural(c.counts.spines, "spine", "spines")
                );
                if let Some(f) = fewest {
                    let _ = write!(w, " instead of {}", thousands(f.counts.spines as f64));
                }
            }
            w
        };
        let value = if shape.leaf_up == 0 {
            format!("{} host ports on one switch", shape.leaf_down)
        } else {
            format!("{} to hosts + {} up", shape.leaf_down, shape.leaf_up)
        };
        push("leaf_ports", value, "auto".to_string(), ports_why);
    }
    if let Some(su) = shape.su_size {
        let units = spec.servers.count.div_ceil(su);
        let last = spec.servers.count - (units - 1) * su;
        let mut why = reset_note("fabric.su_size");
        match prov.source("fabric.su_size") {
            Source::Auto => why.push_str("the cheapest unit size"),
            Source::Preset => why.push_str("the preset's reference unit"),
            Source::Given => {}
        }
        if last < su {
            if !why.is_empty() {
                why.push_str("; ");
            }
            let _ = write!(
                why,
                "the last unit holds {last} of {su} servers: its leaves and uplinks are built whole, so its leaves run at {}",
                ratio_text(f64::from(last) / f64::from(shape.leaf_up.max(1)))
            );
        }
        push(
            "scalable_unit",
            format!(
                "{} of {su} servers",
                plural(u64::from(units), "unit", "units")
            ),
            source("fabric.su_size"),
            why,
        );
    }
    match shape.upper {
        Upper::None => {}
        Upper::Two { spines, links } => push(
            "spines",
            format!(
                "{}, {} from every leaf",
                plural(c.counts.spines, "spine", "spines"),
                plural(u64::from(links), "link", "links")
            ),
            "auto".to_string(),
            format!(
                "{} of {} leaf uplinks each: the fewest that balance {} leaves on {}-port spines",
                plural(u64::from(spines), "spine", "spines"),
                shape.leaf_up,
                thousands(
                    c.counts.leaves as f64
                        / f64::from(spec.fabric.planes)
                        / if topology == Topology::RailOnly {
                            f64::from(spec.servers.compute_nics)
                        } else {
                            1.0
                        }
                ),
                mode.ports
            ),
        ),
        Upper::Three {
            pods,
            spines_per_pod,
            links,
            spine_up,
            group,
        } => {
            let pod_kind = match pods {
                Pods::InOrder { .. } => "in leaf order".to_string(),
                Pods::WholeRails { rails } => format!(
                    "of {} whole rail{}",
                    rails,
                    if rails == 1 { "" } else { "s" }
                ),
                Pods::WholeUnits { units } => format!(
                    "of {} whole unit{}",
                    units,
                    if units == 1 { "" } else { "s" }
                ),
            };
            push(
                "spines",
                format!(
                    "{}: {} per pod of {} leaf slots ({pod_kind}), {} from every leaf",
                    plural(c.counts.spines, "spine", "spines"),
                    spines_per_pod,
                    c.pod_slots,
                    plural(u64::from(links), "link", "links"),
                ),
                "auto".to_string(),
                format!(
                    "each spine {} down and {spine_up} up",
                    c.pod_slots * u64::from(links)
                ),
            );
            push(
                "cores",
                format!(
                    "{}: {} groups of {group}",
                    plural(c.counts.cores, "core", "cores"),
                    spines_per_pod
                ),
                "auto".to_string(),
                format!(
                    "spine j of every pod sends {} link{} to each core of group j; the fewest cores that balance",
                    spine_up / group,
                    if spine_up / group == 1 { "" } else { "s" }
                ),
            );
        }
    }
    push(
        "tiers",
        c.counts.tiers.to_string(),
        "auto".to_string(),
        match c.counts.tiers {
            1 => "every leaf is a top-tier switch".to_string(),
            2 => format!(
                "every leaf reaches every spine on {}-port switches",
                mode.ports
            ),
            _ => format!(
                "more leaves than a {}-port spine has ports: pods under a core tier",
                mode.ports
            ),
        },
    );
    push(
        "cable_media",
        "per run".to_string(),
        "auto".to_string(),
        "the cheapest catalog cable or optics that reaches each run; a cage's ports share one twin-port cable, one splitter or one transceiver"
            .to_string(),
    );

    let chosen_cost = cost;
    let alternatives = alternatives
        .iter()
        .map(|&i| {
            let a = &sp.candidates[i];
            let ac = a.cost(calibration);
            Alternative {
                switch_model: a.option.switch.id.clone(),
                port_mode: a.option.mode.name.clone(),
                tiers: a.counts.tiers,
                su_size: a.shape.su_size,
                leaf_host_ports: a.shape.leaf_down,
                leaf_uplinks: a.shape.leaf_up,
                switches: AltSwitches {
                    leaf: a.counts.leaves,
                    spine: a.counts.spines,
                    core: a.counts.cores,
                    total: a.counts.switches(),
                },
                links: AltLinks {
                    server_leaf: a.counts.server_leaf,
                    leaf_spine: a.counts.leaf_spine,
                    spine_core: a.counts.spine_core,
                },
                oversubscription: ratios(a),
                bisection_gbps: a.bisection(gbps),
                cost_usd: ac,
                cost_delta_usd: ac - chosen_cost,
                cost_estimated: a.exact.is_none(),
                conventional: a.conventional,
                keeps_preset: a.keeps_preset,
                differs: differences(a, c),
            }
        })
        .collect();
    DesignReport {
        candidates: sp.candidates.len() as u64,
        costed_exactly: built,
        costed_for_alternatives: for_alternatives,
        complete,
        cost_usd: cost,
        choices,
        switches,
        alternatives,
        leaf_ports: (c.shape.leaf_up > 0).then_some((c.shape.leaf_down, c.shape.leaf_up)),
    }
}

/// Why no design exists: the size limit, or what the topology of the spec's switches holds.
fn no_design(spec: &ClusterSpec, sp: &Space) -> BuildError {
    if let Some(e) = &sp.too_big {
        if !sp.candidates.iter().any(|c| c.keeps_preset) {
            return e.clone();
        }
    }
    let s = &spec.servers;
    let rails = s.compute_nics;
    let hosts = u64::from(s.count) * u64::from(rails);
    let req = Req::of(spec);
    // Only the switches the plan may use (the preset's, when it names one).
    let options: Vec<&SwitchOption> = sp
        .options
        .iter()
        .filter(|o| o.named || spec.fabric.switch.is_none())
        .collect();
    let best = options
        .iter()
        .max_by_key(|o| o.mode.ports)
        .copied()
        .unwrap_or(&sp.options[0]);
    let (k, sw, mode) = (best.mode.ports, &best.switch.id, &best.mode.name);
    // `max_servers` servers fit, of at most `max_nics` NICs each.
    let too_many = |what: &str, limit: u64, max_servers: u64, max_nics: u64| {
        let valid = if max_servers == 0 {
            format!(
                "no server of {rails} NICs fits {what}; valid: servers of at most {max_nics} NICs there, or a topology of more switches (rail-optimized, fat-tree)"
            )
        } else {
            format!("valid: at most {max_servers} servers of {rails} NICs")
        };
        err(
            "servers.count",
            format!(
                "{hosts} NIC ports exceed {what}: at most {limit} NIC ports on {k}-port {sw} ({mode}); {valid}"
            ),
        )
    };
    match spec.fabric.topology {
        Topology::SingleSwitch => {
            let k = u64::from(k);
            return too_many("one switch", k, k / u64::from(rails.max(1)), k);
        }
        Topology::TwoSwitch => {
            // A server's odd HCAs (1-based) go to switch 1, the larger half: it bounds the rest.
            let per_server = u64::from(rails.div_ceil(2)).max(1);
            let most = u64::from(s.count) * per_server;
            let isl = crate::topo::isl_links(spec, most);
            if spec.fabric.isl_links.is_none() && most + u64::from(isl) > u64::from(k) {
                // Sized from the ratio asked: a switch holds h hosts and h / r links to the other.
                let r = spec.fabric.oversubscription.max(1.0);
                let hosts_fit = (f64::from(k) * r / (r + 1.0)).floor() as u64;
                return err(
                    "servers.count",
                    format!(
                        "{most} host ports per switch ({} servers x {per_server}) at {r}:1 need {isl} links to the other switch, more than a {k}-port {sw} has left; valid: at most {} servers, a higher --oversubscription, or fabric.isl_links",
                        s.count,
                        hosts_fit / per_server
                    ),
                );
            }
            let max_isl = u64::from(k).saturating_sub(most);
            if u64::from(isl) > max_isl && (max_isl >= 1 || isl >= k) {
                let valid = if max_isl >= 1 {
                    format!("1 to {max_isl}")
                } else {
                    format!(
                        "1 to {}, and at most {} servers of {rails} NICs",
                        k - 1,
                        u64::from(k - 1) / per_server
                    )
                };
                let left = match k.saturating_sub(isl) {
                    0 => "no port".to_string(),
                    n => format!("{n} ports"),
                };
                return err(
                    "fabric.isl_links",
                    format!(
                        "{isl} inter-switch links leave {left} of a {k}-port {sw} for {most} host ports ({} servers x {per_server}); valid: {valid}",
                        s.count
                    ),
                );
            }
            let free = u64::from(k.saturating_sub(isl));
            return too_many(
                &format!("two switches with {isl} inter-switch links"),
                2 * free,
                free / per_server,
                2 * free,
            );
        }
        _ => {}
    }
    if let (Topology::RailOptimized, Some(su), true) = (req.topology, req.su, req.su_given) {
        // The largest unit a leaf holds at this ratio.
        let max_su = (1..k)
            .rev()
            .find(|&s| s + uplinks_for(s, req.ratio) <= k)
            .unwrap_or(0);
        if su > max_su {
            return err(
                "fabric.su_size",
                format!(
                    "{su} servers per unit need {su} host ports and {} uplinks per leaf at oversubscription {}, but a {k}-port {sw} leaf has {k}; valid: 1 to {max_su}",
                    uplinks_for(su, req.ratio),
                    req.ratio
                ),
            );
        }
    }
    // The most servers any of the switches holds in this topology (a binary search on the counts).
    let fits = |servers: u64, o: &SwitchOption| -> bool {
        let mut probe = spec.clone();
        probe.servers.count = servers as u32;
        let req = Req::of(&probe);
        let mut found = false;
        each_shape(&req, o.mode.ports, &mut |shape| {
            found = counts(&probe, o.mode.ports, &shape).is_some();
            !found
        });
        found
    };
    let mut limit: Option<(u64, &SwitchOption)> = None;
    for o in &options {
        let (mut lo, mut hi) = (0u64, u64::from(s.count));
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid, o) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if limit.is_none_or(|(best, _)| lo > best) {
            limit = Some((lo, o));
        }
    }
    let (max_servers, o) = limit.unwrap_or((0, best));
    let what = match spec.fabric.topology {
        Topology::FatTree => "a three-tier fat-tree",
        Topology::RailOnly => "rails of three-tier fat-trees",
        _ => "a three-tier rail-optimized fabric",
    };
    err(
        "servers.count",
        format!(
            "{hosts} NIC ports exceed {what}: at most {} NIC ports on {}-port {} ({}) at oversubscription {}; valid: at most {max_servers} servers of {rails} NICs",
            max_servers * u64::from(rails),
            o.mode.ports,
            o.switch.id,
            o.mode.name,
            req.ratio
        ),
    )
}
