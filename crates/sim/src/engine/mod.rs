//! The flow-level (fluid) engine: flows share resources max-min fairly, and the sharing is re-solved
//! whenever flows start or finish.
//!
//! # Model
//!
//! A *resource* is anything with a capacity in bytes per second that flows cross: one direction of a
//! link, a PCIe bus, a memory path. A *flow* moves `bytes` along a path of resources. While flows are
//! active, each gets its max-min fair rate (Bertsekas & Gallager, *Data Networks*, 2nd ed., §6.5.2:
//! no flow's rate can grow without shrinking the rate of a flow that has no more than it), computed
//! by progressive filling ("water-filling"): raise every rate together until some resource is full,
//! freeze the flows crossing it, and go on with the rest.
//!
//! A flow occupies its resources from its start until its last byte is sent (its *drain* time) and
//! is *finished* one path latency later, when the last byte arrives. So a lone flow finishes at
//! `start + latency + bytes / rate`, and a flow's completion in general is its start, plus its path
//! latency, plus its transfer time under max-min sharing.
//!
//! A flow may wait for other flows: it starts at the latest of its own start time and, for each flow
//! it waits for, that flow's finish plus the flow's `gap`. Collective algorithms chain their steps
//! this way.
//!
//! # Rounding
//!
//! Time is integer picoseconds; rates are `f64` bytes per second. Each time a flow's rate is set, its
//! drain time is `now + round(remaining_bytes * 1e12 / rate)` picoseconds, rounded to the nearest
//! picosecond. The product is formed before the division, so when the exact quotient is an integer
//! and the operands are exact (1 MB at 12.5 GB/s: 10^18 / 1.25 * 10^10 = 8 * 10^7 ps) the result is
//! exact, and otherwise within half a picosecond plus the f64 rounding error (relative 2^-52).
//!
//! # Speed
//!
//! Built for a million concurrent flows:
//! - Events at the same picosecond are one batch: a thousand flows finishing together cause one
//!   re-solve, not a thousand.
//! - Water-filling is bottleneck-first: a priority queue of resources keyed by fair share (remaining
//!   capacity / unfrozen flows) pops the next bottleneck; only resources whose share changed are
//!   pushed again. Cost: O(P log R) for P path entries and R resources solved.
//! - A re-solve is incremental (`Incremental`, whose docs give the method): it keeps the last
//!   solution as a bottleneck structure (Ros-Giralt et al., SIGCOMM 2021), replays the
//!   water-filling over only the resources whose fill can change, with the others' fills entering
//!   as events at their old levels, and gives the same rates, bit for bit, as a water-filling of
//!   every active flow from scratch. This is SimGrid's lazy "selective update" of its LMM solver
//!   (Velho et al., ACM TOMACS 2013) narrowed from connected components to the resources that
//!   move. A re-solve that would cost more (work past `MIN_BUDGET` or the active flows' path
//!   entries) than water-filling the changed resources' connected component from scratch does that
//!   instead. (For max-min fairness in general, and why water-filling yields the unique max-min
//!   fair allocation, see Nace & Pióro, "Max-min fairness and its applications to routing and
//!   load-balancing in communication networks: a tutorial", IEEE Comm. Surveys & Tutorials 10(4),
//!   2008.)
//! - Flows the network cannot tell apart can be solved as one (`crate::engine::classes`); collective
//!   steps do so.
//! - A batch that only removes flows skips the solve when no remaining flow on a freed resource
//!   had that resource as its bottleneck (see `Incremental::removal_keeps_rates`): the old rates
//!   are still max-min fair. Equal-sized flows that start together (all-to-all, permutations) then
//!   never re-solve after the first instant, however many distinct finish times they have.
//! - A flow whose rate did not change (within a relative 1e-12) keeps its scheduled drain event, so
//!   a re-solve does not reschedule the world and exact times stay exact.
//! - Drain events sit in an indexed 4-ary heap with one entry per active flow: a rate change moves
//!   the flow's entry in place instead of leaving a stale one behind.
//! - Data layout for random traffic, where a re-solve touches a few dozen resources and flows
//!   scattered over the network and its time goes in cache misses rather than arithmetic: a
//!   resource's active list sits in its own 32-byte record while it holds at most three flows
//!   (`ActiveLists`); the solver's per-resource state read on every visit is 16 bytes (fill level,
//!   set and growth marks), a flow's path range is in its own record, and the replay's queue holds
//!   16-byte integer keys. None of this changes the arithmetic: the one change of order, among
//!   the freezes of one outside fill (now in the order they were queued), subtracts the same
//!   share from each resource, so finish times are the same to the picosecond
//!   (`tests/random_workload_times.rs` pins them by hash).
//!
//! Architecture invariant: the engine does no I/O, reads no clock, never iterates a hash map, and
//! breaks every tie by id, so the same workload gives the same times on every machine. A validated
//! [`Workload`] always runs to the end: every active flow has a positive rate, and a flow only waits
//! for flows added before it, so there are no cycles.

use crate::cancel::{Cancel, Cancelled};
use crate::error::SimError;
use crate::time::Time;
use crate::watch::Watch;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub mod classes;
pub(crate) mod ids;
mod incremental;
mod replay;
mod run;
mod shares;
mod solver;

pub use ids::{FlowId, ResourceId};
use incremental::*;
use run::*;
use shares::*;
use solver::*;

/// One flow to add to a [`Workload`]. `Default` is an empty flow at time zero that waits for nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flow<'a> {
    /// Resources crossed, in order. An empty path means the flow is limited by nothing but its
    /// latency (it drains the moment it starts).
    pub path: &'a [ResourceId],
    pub bytes: u64,
    /// Earliest start.
    pub start: Time,
    /// Propagation and switching delay of the whole path, added once after the last byte is sent.
    pub latency: Time,
    /// Flows that must finish before this one starts; each must have been added earlier.
    pub after: &'a [FlowId],
    /// Delay between the last of `after` finishing and this flow starting (software overhead).
    pub gap: Time,
}

/// Resources and flows, validated as they are added. Stored flat (struct of arrays, paths in one
/// vector) so a million flows cost a few allocations, not a million.
#[derive(Debug, Clone)]
pub struct Workload {
    pub(crate) capacity: Vec<f64>,
    /// Flow f's path is `path[path_offset[f]..path_offset[f + 1]]`.
    pub(crate) path_offset: Vec<u32>,
    pub(crate) path: Vec<u32>,
    /// Per path entry, how many of the flow's equal sub-flows cross that resource (see
    /// [`Workload::add_flow_with_widths`]); empty while every width is 1 (`wide` false).
    pub(crate) width: Vec<u32>,
    wide: bool,
    /// Per flow, its weight in units of `1 / unit` flow ([`Workload::add_weighted_flow`]);
    /// empty while every flow weighs 1. The widths above are multiplied by it, so the solver
    /// counts a flow of weight `u` as `u` flows in every fair share; the flow's own rate is
    /// `u` times the share.
    pub(crate) units: Vec<u64>,
    /// Some flow weighs other than 1 (`units` holds every flow's units).
    weighted: bool,
    /// Units of one flow of weight 1: the least common multiple of the weights' denominators.
    unit: u64,
    pub(crate) bytes: Vec<u64>,
    pub(crate) start: Vec<Time>,
    pub(crate) latency: Vec<Time>,
    pub(crate) gap: Vec<Time>,
    /// Flow f waits for `deps[dep_offset[f]..dep_offset[f + 1]]`.
    pub(crate) dep_offset: Vec<u32>,
    pub(crate) deps: Vec<u32>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload::new()
    }
}

impl Workload {
    pub fn new() -> Workload {
        Workload {
            capacity: Vec::new(),
            path_offset: vec![0],
            path: Vec::new(),
            width: Vec::new(),
            wide: false,
            units: Vec::new(),
            weighted: false,
            unit: 1,
            bytes: Vec::new(),
            start: Vec::new(),
            latency: Vec::new(),
            gap: Vec::new(),
            dep_offset: vec![0],
            deps: Vec::new(),
        }
    }

    /// Reserves room for `flows` more flows with `path_entries` more path entries in total, to
    /// avoid regrowing the vectors when the size is known.
    pub fn reserve(&mut self, flows: usize, path_entries: usize) {
        self.path_offset.reserve(flows);
        self.path.reserve(path_entries);
        self.bytes.reserve(flows);
        self.start.reserve(flows);
        self.latency.reserve(flows);
        self.gap.reserve(flows);
        self.dep_offset.reserve(flows);
    }

    /// Adds a resource of `bytes_per_second` capacity.
    pub fn add_resource(&mut self, bytes_per_second: f64) -> Result<ResourceId, SimError> {
        if crate::time::Rate::from_bytes_per_sec(bytes_per_second).is_none() {
            return Err(SimError::BadCapacity {
                resource: self.capacity.len(),
                bytes_per_second,
            });
        }
        let id = u32::try_from(self.capacity.len())
            .ok()
            .filter(|&i| i < u32::MAX)
            .ok_or(SimError::TooLarge("resources"))?;
        self.capacity.push(bytes_per_second);
        Ok(ResourceId(id))
    }

    /// Adds a flow after checking that its path names existing resources, each once, and that it
    /// waits only for earlier flows.
    pub fn add_flow(&mut self, flow: &Flow<'_>) -> Result<FlowId, SimError> {
        self.add_flow_with_widths(flow, &[])
    }

    /// Adds a flow that stands for several equal sub-flows moving together: `widths[i]` of them
    /// cross `flow.path[i]` side by side, each at the flow's rate and each carrying `flow.bytes`.
    /// On a resource of width `n` the flow counts as `n` flows in the fair share and takes `n`
    /// times its rate of the capacity. Adaptive routing on a leaf-spine is the use: a host flow
    /// spread over `S` spines is `S` sub-flows through its hosts' links (width `S`) and one through
    /// each spine's links, which are interchangeable and so are stood for by one resource (width 1;
    /// see the `leafspine` module). Equivalent, rate for rate, to `n` flows of width 1 on that resource.
    /// Empty `widths` means width 1 everywhere; otherwise one width, at least 1, per path entry.
    pub fn add_flow_with_widths(
        &mut self,
        flow: &Flow<'_>,
        widths: &[u32],
    ) -> Result<FlowId, SimError> {
        self.add_weighted_flow(flow, widths, Weight::ONE)
    }

    /// [`Workload::add_flow_with_widths`] for a flow that counts as `weight` of a flow in every
    /// fair share it takes part in, and so runs at `weight` times the share (weighted max-min
    /// fairness; Bertsekas & Gallager, *Data Networks*, 2nd ed., §6.5.2). Adaptive routing is the
    /// use: a connection sprayed over `k` paths competes at its NIC as one connection, each path
    /// carrying `1 / k` of it, whether `k` is the first switch's every up-port or, around a
    /// failure, the ones left. Weights are kept exact, as whole units of `1 / unit` flow (the
    /// least common multiple of their denominators); while every weight is 1 nothing changes,
    /// bit for bit.
    pub fn add_weighted_flow(
        &mut self,
        flow: &Flow<'_>,
        widths: &[u32],
        weight: Weight,
    ) -> Result<FlowId, SimError> {
        let too_large = || SimError::TooLarge("flow weights");
        if weight != Weight::ONE || self.weighted {
            let den = u64::from(weight.den);
            let grow = den / gcd64(self.unit, den);
            if grow > 1 || !self.weighted {
                let unit = self.unit.checked_mul(grow).ok_or_else(too_large)?;
                if !self.weighted {
                    self.units = vec![self.unit; self.bytes.len()];
                    self.weighted = true;
                }
                self.rescale(grow)?;
                self.unit = unit;
            }
        }
        let units = if self.weighted {
            u64::from(weight.num) * (self.unit / u64::from(weight.den))
        } else {
            1
        };
        let scaled: Vec<u32>;
        let widths = if units == 1 {
            widths
        } else {
            let base = |i: usize| u64::from(widths.get(i).copied().unwrap_or(1));
            scaled = (0..flow.path.len())
                .map(|i| u32::try_from(base(i) * units).map_err(|_| too_large()))
                .collect::<Result<_, _>>()?;
            &scaled
        };
        let id = self.add_units_flow(flow, widths)?;
        if self.weighted {
            self.units.push(units);
        }
        Ok(id)
    }

    /// Multiplies every flow's units and widths by `grow` (a weight's denominator the unit did
    /// not divide).
    fn rescale(&mut self, grow: u64) -> Result<(), SimError> {
        if grow == 1 {
            return Ok(());
        }
        let too_large = || SimError::TooLarge("flow weights");
        if !self.wide {
            self.width = vec![1; self.path.len()];
            self.wide = true;
        }
        for x in &mut self.width {
            *x = u32::try_from(u64::from(*x) * grow).map_err(|_| too_large())?;
        }
        for u in &mut self.units {
            *u = u.checked_mul(grow).ok_or_else(too_large)?;
        }
        Ok(())
    }

    /// A flow whose widths already count its units (a quotient's flow, `crate::engine::classes`), with
    /// `units` for its own rate.
    pub(crate) fn add_flow_in_units(
        &mut self,
        flow: &Flow<'_>,
        widths: &[u32],
        units: u64,
    ) -> Result<FlowId, SimError> {
        if units != 1 && !self.weighted {
            self.units = vec![1; self.bytes.len()];
            self.weighted = true;
        }
        let id = self.add_units_flow(flow, widths)?;
        if self.weighted {
            self.units.push(units);
        }
        Ok(id)
    }

    /// The flow's weight in units (1 while every flow weighs 1).
    pub(crate) fn units_of(&self, f: usize) -> u64 {
        self.units.get(f).copied().unwrap_or(1)
    }

    /// Adds the flow with widths as given (already in units).
    fn add_units_flow(&mut self, flow: &Flow<'_>, widths: &[u32]) -> Result<FlowId, SimError> {
        let index = self.bytes.len();
        if !widths.is_empty() && widths.len() != flow.path.len() {
            return Err(SimError::BadFlow {
                flow: index,
                message: format!(
                    "{} widths for a path of {} resources",
                    widths.len(),
                    flow.path.len()
                ),
            });
        }
        if widths.contains(&0) {
            return Err(SimError::BadFlow {
                flow: index,
                message: "a width of 0 sub-flows".to_string(),
            });
        }
        let id = u32::try_from(index)
            .ok()
            .filter(|&i| i < u32::MAX)
            .ok_or(SimError::TooLarge("flows"))?;
        for (i, r) in flow.path.iter().enumerate() {
            if r.index() >= self.capacity.len() {
                return Err(SimError::UnknownResource {
                    flow: index,
                    resource: *r,
                });
            }
            if flow.path[..i].contains(r) {
                return Err(SimError::RepeatedResource {
                    flow: index,
                    resource: *r,
                });
            }
        }
        if let Some(d) = flow.after.iter().find(|d| d.index() >= index) {
            return Err(SimError::BadDependency {
                flow: index,
                dependency: *d,
            });
        }
        let path_end = u32::try_from(self.path.len() + flow.path.len())
            .map_err(|_| SimError::TooLarge("path entries"))?;
        let deps_end = u32::try_from(self.deps.len() + flow.after.len())
            .map_err(|_| SimError::TooLarge("dependencies"))?;
        let wide = widths.iter().any(|&n| n != 1);
        if wide && !self.wide {
            self.width = vec![1; self.path.len()];
            self.wide = true;
        }
        if self.wide {
            if widths.is_empty() {
                self.width.extend(std::iter::repeat_n(1, flow.path.len()));
            } else {
                self.width.extend_from_slice(widths);
            }
        }
        self.path.extend(flow.path.iter().map(|r| r.0));
        self.path_offset.push(path_end);
        self.deps.extend(flow.after.iter().map(|d| d.0));
        self.dep_offset.push(deps_end);
        self.bytes.push(flow.bytes);
        self.start.push(flow.start);
        self.latency.push(flow.latency);
        self.gap.push(flow.gap);
        Ok(FlowId(id))
    }

    pub fn resources(&self) -> usize {
        self.capacity.len()
    }

    pub fn flows(&self) -> usize {
        self.bytes.len()
    }

    pub fn capacity(&self, r: ResourceId) -> f64 {
        self.capacity[r.index()]
    }

    pub(crate) fn path_range(&self, f: usize) -> std::ops::Range<usize> {
        self.path_offset[f] as usize..self.path_offset[f + 1] as usize
    }

    pub(crate) fn path_of(&self, f: usize) -> &[u32] {
        &self.path[self.path_range(f)]
    }

    /// The width of path entry `e` (1 unless the flow was added with widths).
    pub(crate) fn width_of(&self, e: usize) -> u32 {
        self.width.get(e).copied().unwrap_or(1)
    }

    fn deps_of(&self, f: usize) -> &[u32] {
        &self.deps[self.dep_offset[f] as usize..self.dep_offset[f + 1] as usize]
    }

    /// A flow that never occupies a resource: nothing to send or nowhere to send it through.
    fn drains_at_once(&self, f: usize) -> bool {
        self.bytes[f] == 0 || self.path_offset[f] == self.path_offset[f + 1]
    }
}

/// A flow's weight in the fair shares: `num / den` of a flow, in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weight {
    num: u32,
    den: u32,
}

impl Weight {
    pub const ONE: Weight = Weight { num: 1, den: 1 };

    /// `num / den` in lowest terms; `None` for a zero.
    pub fn new(num: u32, den: u32) -> Option<Weight> {
        if num == 0 || den == 0 {
            return None;
        }
        let g = gcd64(u64::from(num), u64::from(den)) as u32;
        Some(Weight {
            num: num / g,
            den: den / g,
        })
    }

    pub fn num(self) -> u32 {
        self.num
    }

    pub fn den(self) -> u32 {
        self.den
    }

    pub fn as_f64(self) -> f64 {
        f64::from(self.num) / f64::from(self.den)
    }
}

fn gcd64(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd64(b, a % b)
    }
}

/// When a flow started and finished (its last byte arrived).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowTimes {
    pub start: Time,
    pub finish: Time,
}

/// Counters that show where a run spent its effort.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Distinct event times processed (each a batch of simultaneous starts and finishes).
    pub events: u64,
    /// Re-solves (one per batch that changed some resource's flows).
    pub solves: u64,
    /// Re-solves that found every rate as it was (a removal that freed no remaining flow's
    /// bottleneck, for one).
    pub skipped_solves: u64,
    /// Flows re-solved, summed over all re-solves.
    pub flows_solved: u64,
    /// Resources re-solved, summed over all re-solves (the sets D of the incremental solver).
    pub resources_solved: u64,
    /// Times an incremental re-solve found its set of resources too small and replayed a larger one.
    pub restarts: u64,
    /// Re-solves that would have cost the incremental solver more than water-filling the changed
    /// resources' component from scratch, and did that instead.
    pub full_solves: u64,
    /// Times a flow's rate changed and its drain event was rescheduled.
    pub reschedules: u64,
    /// Re-solved flows, already running, whose rate changed with their bottleneck: the flow now
    /// freezes at another resource than before (the rest of the rate changes are flows whose
    /// bottleneck filled at another level, all of its flows together).
    pub bottleneck_moves: u64,
    /// Resources that fill at another level than before (not at none): the bottlenecks whose
    /// flows' common rate changed, summed over all re-solves.
    pub levels_moved: u64,
}

/// The result of [`simulate`]: times per flow, indexed by [`FlowId`], and effort counters.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub flows: Vec<FlowTimes>,
    pub stats: EngineStats,
}

/// Runs the workload to the end.
pub fn simulate(w: &Workload) -> Outcome {
    match Engine::new(w).run(Cancel::NEVER, None) {
        Ok(out) => out,
        // `Cancel::NEVER` is never set, so `run` never stops early.
        Err(Cancelled) => unreachable!("Cancel::NEVER was set"),
    }
}

/// Runs the workload to the end, or stops with [`Cancelled`] soon after `cancel` is set: the flag is
/// read at every event time, every [`CANCEL_EVERY_FLOWS`] flows started or drained at one time, and
/// in the solver (a relaxed load beside heap work; one solve or one instant of a symmetric step
/// over a million flows takes seconds).
pub fn simulate_until(w: &Workload, cancel: Cancel<'_>) -> Result<Outcome, Cancelled> {
    Engine::new(w).run(cancel, None)
}

/// [`simulate`], telling `watch` after every event time how many flows have finished and the
/// simulated time reached. The times are those of [`simulate`]: the engine only stores into the
/// watch.
pub fn simulate_watched(w: &Workload, watch: &Watch) -> Outcome {
    match Engine::new(w).run(Cancel::NEVER, Some(watch)) {
        Ok(out) => out,
        Err(Cancelled) => unreachable!("Cancel::NEVER was set"),
    }
}

/// Flows started or drained at one event time (or solver queue entries) between two reads of the
/// cancellation flag.
pub const CANCEL_EVERY_FLOWS: u32 = 4096;

/// Like [`simulate`] but water-filling the whole connected component of every change from scratch,
/// as the engine did before it re-solved incrementally: the reference the incremental engine is
/// tested against. With `verify`, every incremental re-solve is also checked, rate for rate and bit
/// for bit, against a from-scratch water-filling of every active flow.
#[cfg(test)]
fn simulate_reference(w: &Workload, full: bool, verify: bool) -> Outcome {
    simulate_with_budget(w, full, verify, MIN_BUDGET)
}

/// [`simulate_reference`] with the incremental solver's least budget set: a small one makes it
/// water-fill from scratch more often.
#[cfg(test)]
fn simulate_with_budget(w: &Workload, full: bool, verify: bool, min_budget: u64) -> Outcome {
    let mut engine = Engine::new(w);
    engine.min_budget = min_budget;
    if full {
        engine.full = Some(Solver::new(w));
    }
    engine.verify = verify;
    match engine.run(Cancel::NEVER, None) {
        Ok(out) => out,
        Err(Cancelled) => unreachable!("Cancel::NEVER was set"),
    }
}

/// The max-min fair rate (bytes per second) of every flow if all were active at once, ignoring
/// start times and dependencies. Flows with an empty path are limited by nothing: `f64::INFINITY`.
/// The engine uses the same solver; this entry point lets tests check it against textbook cases.
pub fn max_min_rates(w: &Workload) -> Vec<f64> {
    match max_min_rates_until(w, Cancel::NEVER) {
        Ok(rates) => rates,
        Err(Cancelled) => unreachable!("Cancel::NEVER was set"),
    }
}

/// [`max_min_rates`], stopping with [`Cancelled`] soon after `cancel` is set.
pub fn max_min_rates_until(w: &Workload, cancel: Cancel<'_>) -> Result<Vec<f64>, Cancelled> {
    let mut solver = Solver::new(w);
    let mut active = ActiveLists::new(w.resources());
    let mut seeds = Vec::new();
    for f in 0..w.flows() {
        for e in w.path_range(f) {
            let r = w.path[e] as usize;
            active.push(r, (f as u32, e as u32));
            seeds.push(r as u32);
        }
    }
    solver.solve(w, &active, &seeds, cancel)?;
    Ok((0..w.flows())
        .map(|f| {
            if w.path_range(f).is_empty() {
                f64::INFINITY
            } else {
                solver.new_rate[f] * w.units_of(f) as f64
            }
        })
        .collect())
}

/// The first bottleneck of flows that all start at time 0 with no latency, width 1 and no
/// dependencies, when `load[r]` of them cross resource `r`: the resource (the lowest index among
/// ties, as the water-filling breaks them) and its fair share `capacity / load`, bytes per second;
/// `None` when no flow crosses any resource.
///
/// Why it is enough to time such a step: water-filling's first level, `min_r capacity_r /
/// load_r`, is the smallest max-min rate, and flows leaving can only raise it (every `load_r`
/// falls or stays), so every flow runs at this level or faster until it ends, while the flows of
/// the first bottleneck run at exactly this level from start to end (their resource is full with
/// them alone). With equal bytes the step therefore ends when they do: `bytes / share`
/// ([`drain_time`]), the time [`simulate`] gives the last flow, without simulating any flow
/// (Bertsekas & Gallager, *Data Networks*, 2nd ed., §6.5.2, for the water-filling). With unequal
/// bytes, `largest bytes / share` bounds the step from above. Loads of weighted flows
/// ([`Workload::add_weighted_flow`]) count each flow by its weight in whole units, and a flow
/// then runs at its units times the share or faster.
pub fn first_bottleneck<T: Copy + Into<u64>>(
    load: &[T],
    capacity: impl Fn(usize) -> f64,
) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for (r, &n) in load.iter().enumerate() {
        let n: u64 = n.into();
        if n == 0 {
            continue;
        }
        // The same division as the water-filling's first fair share (`fair_share`).
        let share = capacity(r) / n as f64;
        if best.is_none_or(|(_, s)| share < s) {
            best = Some((r, share));
        }
    }
    best
}

/// How long `bytes` take at `rate` bytes per second, rounded to the picosecond as the engine
/// rounds a drain (`now + round(remaining * 1e12 / rate)`).
pub fn drain_time(bytes: u64, rate: f64) -> Time {
    Time::from_ps(transfer_ps(bytes as f64, rate))
}

/// Picoseconds `remaining` bytes take at `rate`, rounded to the nearest (the module's rounding).
/// `as u64` saturates: a drain past 2^64 ps is "never".
fn transfer_ps(remaining: f64, rate: f64) -> u64 {
    (remaining * 1e12 / rate).round() as u64
}

/// An incremental re-solve may always look at this many flows and events before giving way to a
/// from-scratch one (beyond that, as many as the active flows have path entries).
const MIN_BUDGET: u64 = 4096;

/// Two rates closer than this (relative) are the same rate: the flow keeps its drain event. Far
/// below any physical meaning, far above f64 noise from summing in a different order.
const SAME_RATE: f64 = 1e-12;

#[cfg(test)]
mod tests;
