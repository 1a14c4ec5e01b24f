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
//! - Flows the network cannot tell apart can be solved as one (`crate::classes`); collective
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

/// Index of a resource in its [`Workload`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(u32);

impl ResourceId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The id of the `i`th resource added; callers that add resources in a known order (the fabric
    /// network) name them without keeping every id. `Workload::add_flow` still checks the range.
    pub(crate) const fn from_index(i: u32) -> ResourceId {
        ResourceId(i)
    }
}

/// Index of a flow in its [`Workload`], in the order flows were added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(u32);

impl FlowId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

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
    /// see `crate::leafspine`). Equivalent, rate for rate, to `n` flows of width 1 on that resource.
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

    /// A flow whose widths already count its units (a quotient's flow, `crate::classes`), with
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

/// Entries a resource's active list holds in place before it moves to a vector of its own.
const INLINE: usize = 3;

/// Active flows per resource, as (flow, index of the path entry); `active[r]` is resource r's
/// list as a slice. Most lists are short (a few flows per link under random traffic), so up to
/// [`INLINE`] entries sit in the resource's own 32-byte record: reading a short list costs one
/// cache line instead of a vector header and a separate allocation.
#[derive(Debug, Clone)]
struct ActiveLists {
    heads: Vec<ListHead>,
    /// Per resource: the list while longer than `INLINE` (empty otherwise, capacity kept).
    spill: Vec<Vec<(u32, u32)>>,
}

#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
struct ListHead {
    len: u32,
    inline: [(u32, u32); INLINE],
}

impl ActiveLists {
    fn new(resources: usize) -> ActiveLists {
        ActiveLists {
            heads: vec![
                ListHead {
                    len: 0,
                    inline: [(0, 0); INLINE],
                };
                resources
            ],
            spill: vec![Vec::new(); resources],
        }
    }

    /// Appends to resource `r`'s list and returns the entry's position.
    fn push(&mut self, r: usize, entry: (u32, u32)) -> u32 {
        let h = &mut self.heads[r];
        let len = h.len as usize;
        if len < INLINE {
            h.inline[len] = entry;
        } else {
            let spill = &mut self.spill[r];
            if len == INLINE {
                spill.clear();
                spill.extend_from_slice(&h.inline);
            }
            spill.push(entry);
        }
        h.len += 1;
        len as u32
    }

    /// Removes the entry at position `p` of resource `r`'s list, moving the last one into its
    /// place; returns the entry now at `p`, if any.
    fn swap_remove(&mut self, r: usize, p: usize) -> Option<(u32, u32)> {
        let h = &mut self.heads[r];
        let len = h.len as usize;
        if len <= INLINE {
            h.inline[p] = h.inline[len - 1];
            h.len -= 1;
            return (p < len - 1).then(|| h.inline[p]);
        }
        let spill = &mut self.spill[r];
        spill.swap_remove(p);
        h.len -= 1;
        let moved = spill.get(p).copied();
        if len - 1 == INLINE {
            h.inline.copy_from_slice(spill);
            spill.clear();
        }
        moved
    }
}

impl std::ops::Index<usize> for ActiveLists {
    type Output = [(u32, u32)];

    fn index(&self, r: usize) -> &[(u32, u32)] {
        let h = &self.heads[r];
        let len = h.len as usize;
        if len <= INLINE {
            &h.inline[..len]
        } else {
            &self.spill[r]
        }
    }
}

/// Progressive filling from scratch over the connected component of some resources: the definition
/// of the rates. `max_min_rates` uses it; the engine's incremental solver ([`Incremental`]) gives
/// the same rates, bit for bit, and the tests check it against this one.
struct Solver {
    capacity: Vec<f64>,
    /// Per resource, during a solve: capacity not yet given to frozen flows.
    rem: Vec<f64>,
    /// Per resource, during a solve: widths of the active flows not frozen yet.
    unfrozen: Vec<u64>,
    /// Per resource: bumped on every push so older queue entries are recognised as stale.
    version: Vec<u32>,
    /// Per resource / per flow: `epoch` when in the current component.
    res_mark: Vec<u32>,
    flow_mark: Vec<u32>,
    /// Per flow: `epoch` once frozen in the current solve.
    frozen_mark: Vec<u32>,
    /// Per flow: the rate from the latest solve that included it, and the resource it froze at.
    new_rate: Vec<f64>,
    bottleneck: Vec<u32>,
    /// Per resource: the share it filled at in the latest solve that included it (f64 bits), or
    /// `NEVER` if all its flows froze elsewhere.
    filled: Vec<u64>,
    touched_flag: Vec<bool>,
    epoch: u32,
    stack: Vec<u32>,
    comp_flows: Vec<u32>,
    comp_res: Vec<u32>,
    touched: Vec<u32>,
    /// (fair share as f64 bits, resource, version), smallest first. Non-negative f64s order like
    /// their bit patterns, so the key is an integer and ties fall to the resource id.
    queue: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

impl Solver {
    fn new(w: &Workload) -> Solver {
        let (r, f) = (w.resources(), w.flows());
        Solver {
            capacity: w.capacity.clone(),
            rem: vec![0.0; r],
            unfrozen: vec![0; r],
            version: vec![0; r],
            res_mark: vec![0; r],
            flow_mark: vec![0; f],
            frozen_mark: vec![0; f],
            new_rate: vec![0.0; f],
            bottleneck: vec![NONE; f],
            filled: vec![NEVER; r],
            touched_flag: vec![false; r],
            epoch: 0,
            stack: Vec::new(),
            comp_flows: Vec::new(),
            comp_res: Vec::new(),
            touched: Vec::new(),
            queue: BinaryHeap::new(),
        }
    }

    fn next_epoch(&mut self) {
        if self.epoch == u32::MAX {
            self.res_mark.fill(0);
            self.flow_mark.fill(0);
            self.frozen_mark.fill(0);
            self.epoch = 0;
        }
        self.epoch += 1;
    }

    /// Finds the component reachable from `seeds` and water-fills it. Afterwards `comp_flows` lists
    /// its flows and `new_rate` holds their max-min fair rates. Stops with [`Cancelled`] (leaving
    /// the solver fit only to be dropped) when `cancel` is set: read once per resource visited and
    /// every [`CANCEL_EVERY_FLOWS`] queue entries, as one solve over a million flows takes seconds.
    fn solve(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        seeds: &[u32],
        cancel: Cancel<'_>,
    ) -> Result<(), Cancelled> {
        self.next_epoch();
        let Solver {
            capacity,
            rem,
            unfrozen,
            version,
            res_mark,
            flow_mark,
            frozen_mark,
            new_rate,
            bottleneck,
            filled,
            touched_flag,
            epoch,
            stack,
            comp_flows,
            comp_res,
            touched,
            queue,
        } = self;
        let epoch = *epoch;
        comp_flows.clear();
        comp_res.clear();
        stack.clear();
        for &r in seeds {
            let ri = r as usize;
            if res_mark[ri] != epoch && !active[ri].is_empty() {
                res_mark[ri] = epoch;
                stack.push(r);
            }
        }
        // Depth-first search: resource -> its active flows -> their resources.
        while let Some(r) = stack.pop() {
            cancel.check()?;
            comp_res.push(r);
            for &(f, _) in &active[r as usize] {
                let fi = f as usize;
                if flow_mark[fi] == epoch {
                    continue;
                }
                flow_mark[fi] = epoch;
                comp_flows.push(f);
                for &r2 in w.path_of(fi) {
                    let r2i = r2 as usize;
                    if res_mark[r2i] != epoch {
                        res_mark[r2i] = epoch;
                        stack.push(r2);
                    }
                }
            }
        }

        // Progressive filling, bottleneck first. Every resource in the component has active flows,
        // so every share pushed here is capacity / count > 0.
        queue.clear();
        for &r in comp_res.iter() {
            let ri = r as usize;
            rem[ri] = capacity[ri];
            filled[ri] = NEVER;
            unfrozen[ri] = active[ri]
                .iter()
                .map(|&(_, e)| u64::from(w.width_of(e as usize)))
                .sum();
            version[ri] = version[ri].wrapping_add(1);
            let share = rem[ri] / unfrozen[ri] as f64;
            queue.push(Reverse((share.to_bits(), r, version[ri])));
        }
        // Fair shares only grow as flows freeze (a flow frozen at the minimum share leaves at least
        // the average behind), so `level` is monotone; clamping to it absorbs f64 error that would
        // otherwise push a share below the previous bottleneck or to zero.
        let mut level = 0.0_f64;
        // Most pops are stale entries (each freeze re-queues the resources it touched), millions
        // in a big solve: count them all between reads of `cancel`.
        let mut pops = 0u32;
        while let Some(Reverse((bits, r, v))) = queue.pop() {
            pops = pops.wrapping_add(1);
            if pops.is_multiple_of(CANCEL_EVERY_FLOWS) {
                cancel.check()?;
            }
            let ri = r as usize;
            if v != version[ri] || unfrozen[ri] == 0 {
                continue;
            }
            let share = f64::from_bits(bits).max(level);
            level = share;
            filled[ri] = share.to_bits();
            for &(f, _) in &active[ri] {
                let fi = f as usize;
                if frozen_mark[fi] == epoch {
                    continue;
                }
                frozen_mark[fi] = epoch;
                new_rate[fi] = share;
                bottleneck[fi] = r;
                for e2 in w.path_range(fi) {
                    let r2 = w.path[e2];
                    if r2 == r {
                        continue;
                    }
                    let r2i = r2 as usize;
                    let n = w.width_of(e2);
                    rem[r2i] = subtract_n(rem[r2i], share, u64::from(n));
                    unfrozen[r2i] -= u64::from(n);
                    if !touched_flag[r2i] {
                        touched_flag[r2i] = true;
                        touched.push(r2);
                    }
                }
            }
            unfrozen[ri] = 0;
            for r2 in touched.drain(..) {
                let r2i = r2 as usize;
                touched_flag[r2i] = false;
                if unfrozen[r2i] > 0 {
                    version[r2i] = version[r2i].wrapping_add(1);
                    let share = (rem[r2i] / unfrozen[r2i] as f64).max(level);
                    queue.push(Reverse((share.to_bits(), r2, version[r2i])));
                }
            }
        }
        Ok(())
    }
}

/// The fill key of a resource that did not fill: all its flows froze elsewhere, or it has none.
const NEVER: u64 = u64::MAX;
/// The bottleneck of a flow that has not been solved yet; also "no entry" in `Incremental`'s lists.
const NONE: u32 = u32::MAX;

/// An event of an incremental re-solve, in the order the water-filling pops its queue: by fair
/// share (f64 bits), then resource id. `FILL`: resource `resource` of the re-solved set fills at
/// share `key` (`a` unused; see `Slot::queued` for events that went stale). `OUTSIDE`: resource
/// `resource`, outside the set, fills at `key` as in the last solution and so freezes a flow that
/// also crosses resource `a` of the set, `b` times (the flow's width there).
///
/// Queued as one `u128` (see `Incremental::push_event`): the key, the resource, the kind, and for
/// `OUTSIDE` the index of `(a, b)` in `Incremental::outside_events` (31 bits; a replay that queues
/// more gives way to a from-scratch solve). Events pop by key, then resource, then kind (a fill
/// before an outside freeze), and the outside freezes of one fill in the order they were queued:
/// they subtract the same share, so their order changes no result. A 16-byte integer key halves
/// the heap's memory traffic and compares without branches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Event {
    key: u64,
    resource: u32,
    kind: u8,
    a: u32,
    b: u32,
}

/// What the incremental solver keeps per resource and reads on visits from outside the set (16
/// bytes, four to a cache line: a re-solve visits resources in no particular order, so the
/// records of 65,536 resources fit in 1 MB; the capacity and a member's slot, read only for the
/// few resources in the set, are kept apart).
#[derive(Debug, Clone, Copy)]
struct ResourceState {
    /// The solution: the share the resource filled at (f64 bits), or `NEVER`.
    fill: u64,
    /// `Incremental::set_epoch` while in the set being re-solved (its index there in
    /// `Incremental::slot`).
    set: u32,
    /// `Incremental::run` once marked to join the set at the next replay.
    grow: u32,
}

/// What the incremental solver keeps per flow, with the flow's path range (a copy of the
/// workload's offsets, so a visit to a flow reads one record).
#[derive(Debug, Clone, Copy)]
struct FlowState {
    /// The solution: the resource the flow froze at, or `NONE` before its first solve.
    bneck: u32,
    /// The resource it froze at in the current replay, valid when `frozen == Incremental::run`.
    new_bneck: u32,
    frozen: u32,
    /// The flow's path entries: `Workload::path[path..end]`.
    path: u32,
    end: u32,
}

impl FlowState {
    fn path(&self) -> std::ops::Range<usize> {
        self.path as usize..self.end as usize
    }
}

/// How a replay ended.
enum Replay {
    Closed,
    Grow,
    OverBudget,
}

const FILL: u8 = 0;
const OUTSIDE: u8 = 1;

/// What a replay keeps per member of the re-solved set.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Remaining capacity and widths not frozen yet.
    rem: f64,
    units: u64,
    /// Share of the last freeze on it (the clamp; `NEVER` if none).
    last: u64,
    /// Share it filled at in this replay (`NEVER` if not yet).
    filled: u64,
    /// The level the latest freezes on it came at, and its state when that level began.
    level: u64,
    level_rem: f64,
    level_units: u64,
    /// The key of its earliest fill event in the queue (`NEVER`: none). Fair shares only grow as
    /// flows freeze, so a share that grew is not queued again at once: the earlier event, when it
    /// comes, finds the share moved on and queues it then (see `fill_event`).
    queued: u64,
    /// How many fills touched it at `level`, and the outside resources among them (a list in
    /// `Incremental::outside_log`).
    level_touches: u32,
    level_outside: u32,
    /// Whether it is listed in `Incremental::touched`.
    touched: bool,
}

impl Slot {
    const EMPTY: Slot = Slot {
        rem: 0.0,
        units: 0,
        last: NEVER,
        filled: NEVER,
        level: NEVER,
        level_rem: 0.0,
        level_units: 0,
        queued: NEVER,
        level_touches: 0,
        level_outside: NONE,
        touched: false,
    };
}

/// Incremental progressive filling: after flows start or finish, re-solves only the resources whose
/// part of the water-filling can change, and gives every flow the rate, bit for bit, that a
/// water-filling of all active flows from scratch ([`Solver`]) would.
///
/// # Method
///
/// The last solution is kept as a *bottleneck structure* (Ros-Giralt et al., "Designing data center
/// networks using bottleneck structures", SIGCOMM 2021): for each resource the fair share at which
/// it filled (its *level*), or none; for each flow the resource it froze at. Progressive filling is
/// a sweep through the levels in increasing order, and a resource's fill depends only on the flows
/// that froze on it at lower levels (each subtracting its share from the remaining capacity, in
/// level order) and on how many it still carries. So after a change, a resource whose flows all
/// froze as before (same resource, same level) fills as before, and need not be looked at.
///
/// A re-solve keeps a set D of resources, starting with those whose flows changed, and replays the
/// sweep over D alone: flows that froze at a resource outside D are replayed as events at that
/// resource's level (they subtract their share from D's resources then), and D's own resources
/// fill as the sweep reaches them. The replay is the same f64 operations in the same order as the
/// full water-filling, for the resources in D. It is valid when nothing outside D behaves
/// differently, which is checked as it goes; a resource that may is added to D (on the spot when
/// the sweep has not reached it yet and its state at the current level is known exactly, else by
/// running the replay again with the larger set), until the replay is closed:
/// - A flow that froze differently (another resource, or another level) changes the history of
///   every resource it crosses: they join D.
/// - A flow of D's that froze as before, at level L, crossing a resource outside D: that resource
///   joins D if the order of fills within level L can matter to it (it fills at L itself, or
///   another flow froze on it at L), since D's fills may move within level L.
/// - A resource of D on which flows from outside froze at level L, where D's replay took the
///   events of level L in resource order and the real sweep may not have (a resource pushed back
///   to the queue at exactly L pops by id among those still waiting): the outside resources join D
///   when the order could change the result, that is when the resource fills at L, or when, after
///   part of level L's flows froze on it, its fair share could round to exactly L.
/// - A resource of D that fills before a flow from outside froze on it: that flow would freeze
///   here instead; its resource joins D.
///
/// Each addition is a resource the full water-filling depends on, so the replay converges to the
/// exact answer; in the worst case D is the whole component and the cost that of the full solve.
///
/// This is the "selective update" of SimGrid's lazy max-min solver (Velho, Schnorr, Casanova &
/// Legrand, "On the validity of flow-level TCP network models for grid and cloud simulations",
/// ACM TOMACS 23(4), 2013, and SimGrid's `lmm` solver) narrowed from a connected component to the
/// resources whose fill changes, made exact for f64 rates: no tolerance, the same bits.
struct Incremental {
    /// Per resource: the solution and the marks of the current re-solve (one 16-byte record, as a
    /// re-solve visits resources in no particular order).
    res: Vec<ResourceState>,
    /// Per resource in the set: its index there (and in `slots`).
    slot: Vec<u32>,
    /// Per flow: the solution and the marks of the current replay.
    flow: Vec<FlowState>,
    /// The set D: resources with `set == set_epoch`, listed in `set`.
    set_epoch: u32,
    set: Vec<u32>,
    /// One replay: `run` marks flows frozen and resources to add to the set (listed in `grow`).
    run: u32,
    frozen_list: Vec<u32>,
    grow: Vec<u32>,
    /// Per member of the set, by its slot (see [`Slot`]).
    slots: Vec<Slot>,
    outside_log: Vec<(u32, u32)>,
    touched: Vec<u32>,
    scratch: Vec<(u64, u32, u32)>,
    later: Vec<(u64, u32, u32)>,
    /// Work done by the replays of the current re-solve (flows looked at, events).
    work: u64,
    /// The from-scratch solver, made on first use.
    full: Option<Solver>,
    /// Levels of resources of the set where outside freezes came in an order that may matter:
    /// (head of their list in `outside_log`, level).
    unplaced: Vec<(u32, u64)>,
    /// The replay's event queue, events encoded by `push_event`.
    queue: BinaryHeap<Reverse<u128>>,
    /// `(a, b)` of the `OUTSIDE` events queued in this replay.
    outside_events: Vec<(u32, u32)>,
}

impl Incremental {
    fn new(w: &Workload) -> Incremental {
        let f = w.flows();
        Incremental {
            res: vec![
                ResourceState {
                    fill: NEVER,
                    set: 0,
                    grow: 0,
                };
                w.resources()
            ],
            slot: vec![0; w.resources()],
            flow: (0..f)
                .map(|i| FlowState {
                    bneck: NONE,
                    new_bneck: NONE,
                    frozen: 0,
                    path: w.path_offset[i],
                    end: w.path_offset[i + 1],
                })
                .collect(),
            set_epoch: 0,
            set: Vec::new(),
            run: 0,
            frozen_list: Vec::new(),
            grow: Vec::new(),
            slots: Vec::new(),
            outside_log: Vec::new(),
            touched: Vec::new(),
            scratch: Vec::new(),
            later: Vec::new(),
            unplaced: Vec::new(),
            work: 0,
            full: None,
            queue: BinaryHeap::new(),
            outside_events: Vec::new(),
        }
    }

    /// Queues `ev` (see [`Event`] for the encoding).
    fn push_event(&mut self, ev: Event) {
        let low = if ev.kind == OUTSIDE {
            let i = self.outside_events.len() as u128;
            self.outside_events.push((ev.a, ev.b));
            1 << 31 | i
        } else {
            0
        };
        let code = u128::from(ev.key) << 64 | u128::from(ev.resource) << 32 | low;
        self.queue.push(Reverse(code));
    }

    /// The event `push_event` encoded as `code`.
    fn decode(&self, code: u128) -> Event {
        let (key, resource) = ((code >> 64) as u64, (code >> 32) as u32);
        if code & 1 << 31 == 0 {
            Event {
                key,
                resource,
                kind: FILL,
                a: 0,
                b: 0,
            }
        } else {
            let (a, b) = self.outside_events[(code as u32 & !(1 << 31)) as usize];
            Event {
                key,
                resource,
                kind: OUTSIDE,
                a,
                b,
            }
        }
    }

    fn in_set(&self, r: u32) -> bool {
        self.res[r as usize].set == self.set_epoch
    }

    /// A flow the replay solves: it froze at a resource of D, or it is new.
    fn inner(&self, f: u32) -> bool {
        let b = self.flow[f as usize].bneck;
        b == NONE || self.in_set(b)
    }

    /// The current rate of an active flow (after a re-solve that included it).
    fn rate(&self, f: usize) -> f64 {
        f64::from_bits(self.res[self.flow[f].bneck as usize].fill)
    }

    fn add_to_set(&mut self, r: u32) {
        self.res[r as usize].set = self.set_epoch;
        self.slot[r as usize] = self.set.len() as u32;
        self.set.push(r);
    }

    /// Re-solves after the active flows of the `roots` changed, and lists in `changed` the flows
    /// whose rate moved (or that are new). Afterwards `rate` gives every active flow's rate.
    /// `only_removed`: the change only took flows away. `budget`: work (flows looked at, events)
    /// past which the replay gives way to water-filling the roots' component from scratch.
    #[allow(clippy::too_many_arguments)]
    fn solve(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        roots: &[u32],
        only_removed: bool,
        budget: u64,
        changed: &mut Vec<u32>,
        stats: &mut EngineStats,
        cancel: Cancel<'_>,
    ) -> Result<(), Cancelled> {
        changed.clear();
        if only_removed && self.removal_keeps_rates(active, roots) {
            for &r in roots {
                self.res[r as usize].fill = NEVER;
            }
            return Ok(());
        }
        // A change that touches most flows (the first flows starting, a whole step of a
        // collective) is re-solved from scratch at once.
        let touched: u64 = roots.iter().map(|&r| active[r as usize].len() as u64).sum();
        if touched > budget / 2 {
            stats.full_solves += 1;
            return self.solve_from_scratch(w, active, roots, changed, stats, cancel);
        }
        if self.set_epoch == u32::MAX {
            self.res.iter_mut().for_each(|r| r.set = 0);
            self.set_epoch = 0;
        }
        self.set_epoch += 1;
        self.set.clear();
        for &r in roots {
            if !self.in_set(r) {
                self.add_to_set(r);
            }
        }
        // One hop: the flows that froze at a root (or are new) may freeze elsewhere now, where
        // they would fill below the level the replay meets them at; start with their resources.
        for &x in roots {
            for &(f, _) in &active[x as usize] {
                let b = self.flow[f as usize].bneck;
                if b == x || b == NONE {
                    for e in self.flow[f as usize].path() {
                        let r2 = w.path[e];
                        if !self.in_set(r2) {
                            self.add_to_set(r2);
                        }
                    }
                }
            }
        }
        self.work = 0;
        loop {
            match self.replay(w, active, budget, cancel)? {
                Replay::Closed => break,
                Replay::Grow => {
                    stats.restarts += 1;
                    for i in 0..self.grow.len() {
                        let r = self.grow[i];
                        if !self.in_set(r) {
                            self.add_to_set(r);
                        }
                    }
                }
                Replay::OverBudget => {
                    stats.full_solves += 1;
                    return self.solve_from_scratch(w, active, roots, changed, stats, cancel);
                }
            }
        }
        // Commit: which flows' rates moved, then the new solution.
        for &f in &self.frozen_list {
            let fi = f as usize;
            let nb = self.flow[fi].new_bneck;
            let new = self.slots[self.slot[nb as usize] as usize].filled;
            let old = match self.flow[fi].bneck {
                NONE => NEVER,
                b => self.res[b as usize].fill,
            };
            if new != old {
                changed.push(f);
                if old != NEVER && self.flow[fi].bneck != nb {
                    stats.bottleneck_moves += 1;
                }
            }
        }
        for &f in &self.frozen_list {
            self.flow[f as usize].bneck = self.flow[f as usize].new_bneck;
        }
        for (i, &x) in self.set.iter().enumerate() {
            let new = self.slots[i].filled;
            if new != NEVER && new != self.res[x as usize].fill {
                stats.levels_moved += 1;
            }
            self.res[x as usize].fill = new;
        }
        stats.flows_solved += self.frozen_list.len() as u64;
        stats.resources_solved += self.set.len() as u64;
        Ok(())
    }

    /// Whether taking flows off the `roots` leaves every other flow's rate as it was: so when no
    /// remaining flow on a root froze there (had it as its bottleneck). Each remaining flow then
    /// froze elsewhere, at a resource whose flows and history are unchanged (a flow that left
    /// crossed only roots), so every fill outside the roots happens as before, bit for bit; the
    /// roots themselves now fill at no level (their remaining flows all froze before they would).
    /// Equal-sized flows that start together finish this way, however many finish times they
    /// have: the check reads the roots' lists once, far cheaper than a re-solve.
    fn removal_keeps_rates(&self, active: &ActiveLists, roots: &[u32]) -> bool {
        roots.iter().all(|&r| {
            active[r as usize]
                .iter()
                .all(|&(f, _)| self.flow[f as usize].bneck != r)
        })
    }

    /// Water-fills the component of the `roots` from scratch and takes its answer as the new
    /// solution there: for changes whose replay would cost more than that.
    fn solve_from_scratch(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        roots: &[u32],
        changed: &mut Vec<u32>,
        stats: &mut EngineStats,
        cancel: Cancel<'_>,
    ) -> Result<(), Cancelled> {
        let full = self.full.get_or_insert_with(|| Solver::new(w));
        full.solve(w, active, roots, cancel)?;
        for &f in &full.comp_flows {
            let fi = f as usize;
            let old = match self.flow[fi].bneck {
                NONE => NEVER,
                b => self.res[b as usize].fill,
            };
            if full.new_rate[fi].to_bits() != old {
                changed.push(f);
                if old != NEVER && self.flow[fi].bneck != full.bottleneck[fi] {
                    stats.bottleneck_moves += 1;
                }
            }
        }
        for &f in &full.comp_flows {
            self.flow[f as usize].bneck = full.bottleneck[f as usize];
        }
        for &r in &full.comp_res {
            let new = full.filled[r as usize];
            if new != NEVER && new != self.res[r as usize].fill {
                stats.levels_moved += 1;
            }
        }
        for &r in roots {
            self.res[r as usize].fill = NEVER;
        }
        for &r in &full.comp_res {
            self.res[r as usize].fill = full.filled[r as usize];
        }
        stats.flows_solved += full.comp_flows.len() as u64;
        stats.resources_solved += full.comp_res.len() as u64;
        Ok(())
    }

    /// One replay over the set: closed, or `grow` lists resources to add, or it went past the
    /// `budget` of work for this re-solve (counted in `work` over all its replays).
    fn replay(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        budget: u64,
        cancel: Cancel<'_>,
    ) -> Result<Replay, Cancelled> {
        if self.run == u32::MAX {
            self.flow.iter_mut().for_each(|f| f.frozen = 0);
            self.res.iter_mut().for_each(|r| r.grow = 0);
            self.run = 0;
        }
        self.run += 1;
        self.queue.clear();
        self.outside_events.clear();
        self.frozen_list.clear();
        self.grow.clear();
        self.outside_log.clear();
        self.unplaced.clear();
        self.touched.clear();
        let n = self.set.len();
        self.slots.clear();
        for i in 0..n {
            self.new_slot();
            let x = self.set[i];
            self.slot[x as usize] = i as u32;
            self.init(w, active, x);
        }
        let mut pops = 0u32;
        while let Some(Reverse(code)) = self.queue.pop() {
            let ev = self.decode(code);
            pops = pops.wrapping_add(1);
            if pops.is_multiple_of(CANCEL_EVERY_FLOWS) {
                cancel.check()?;
            }
            self.work += 1;
            // The index of an outside event has 31 bits (a replay queues one per path entry at
            // most: never near 2^31 in practice).
            if self.work > budget || self.outside_events.len() >= 1 << 31 {
                return Ok(Replay::OverBudget);
            }
            if ev.kind == FILL {
                self.fill_event(w, active, ev);
            } else {
                self.outside_event(ev);
            }
        }
        for s in 0..self.set.len() {
            self.end_level(s);
        }
        for i in 0..self.unplaced.len() {
            let (head, key) = self.unplaced[i];
            self.grow_unplaced_outside(w, active, head, key);
        }
        Ok(if self.grow.is_empty() {
            Replay::Closed
        } else {
            Replay::Grow
        })
    }

    /// Appends the per-slot state of a new member of the set (its values are set by `init`).
    fn new_slot(&mut self) {
        self.slots.push(Slot::EMPTY);
    }

    /// Sets up resource `x` of the set at the start of the replay: every flow on it that froze
    /// outside the set becomes an `OUTSIDE` event at the level it froze at.
    fn init(&mut self, w: &Workload, active: &ActiveLists, x: u32) {
        let s = self.slot[x as usize] as usize;
        let mut units = 0u64;
        self.work += active[x as usize].len() as u64;
        for &(f, e) in &active[x as usize] {
            let width = w.width_of(e as usize);
            units += u64::from(width);
            if !self.inner(f) {
                let c = self.flow[f as usize].bneck;
                self.push_event(Event {
                    key: self.res[c as usize].fill,
                    resource: c,
                    kind: OUTSIDE,
                    a: x,
                    b: width,
                });
            }
        }
        self.slots[s].rem = w.capacity[x as usize];
        self.slots[s].units = units;
        self.slots[s].last = NEVER;
        self.slots[s].filled = NEVER;
        self.slots[s].level = NEVER;
        self.slots[s].level_touches = 0;
        self.slots[s].level_outside = NONE;
        self.slots[s].queued = NEVER;
        if units > 0 {
            self.queue_fill(x, s);
        }
    }

    fn mark_grow(&mut self, r: u32) {
        if self.res[r as usize].grow != self.run {
            self.res[r as usize].grow = self.run;
            self.grow.push(r);
        }
    }

    /// Grows the set by the outside resources on list `head` (of `outside_log`) that filled at
    /// level `key` after being pushed back to the queue within the level: the replay took them in
    /// resource order, which is then not certain to be the real one. An outside resource queued at
    /// the level from its start keeps its place (it pops when no smaller id is queued at the level,
    /// in the replay as in the full water-filling).
    fn grow_unplaced_outside(&mut self, w: &Workload, active: &ActiveLists, head: u32, key: u64) {
        let mut i = head;
        while i != NONE {
            let (c, next) = self.outside_log[i as usize];
            if self.res[c as usize].grow != self.run {
                let (rem, units, last, _) = self.level_start(w, active, c, key, NONE);
                if units == 0 || fair_share(rem, units, last).to_bits() != key {
                    self.mark_grow(c);
                }
            }
            i = next;
        }
    }

    /// Outside resource `z` at the start of level `key`, as the replay sees its flows (frozen as
    /// in the last solution unless re-solved; flow `skip` left out): remaining capacity, unfrozen
    /// widths and level of the last freeze, from the freezes below the level in level order; and
    /// the widths that freeze on it at the level.
    fn level_start(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        z: u32,
        key: u64,
        skip: u32,
    ) -> (f64, u64, u64, u64) {
        self.work += active[z as usize].len() as u64;
        self.scratch.clear();
        let mut units = 0u64;
        let mut at_level = 0u64;
        for &(h, e) in &active[z as usize] {
            let width = w.width_of(e as usize);
            units += u64::from(width);
            if h == skip {
                continue;
            }
            let hi = h as usize;
            let k = if self.flow[hi].frozen == self.run {
                self.slots[self.slot[self.flow[hi].new_bneck as usize] as usize].filled
            } else {
                match self.flow[hi].bneck {
                    NONE => NEVER,
                    b => self.res[b as usize].fill,
                }
            };
            if k < key {
                self.scratch.push((k, 0, width));
            } else if k == key {
                at_level += u64::from(width);
            }
        }
        self.scratch.sort_unstable();
        let mut rem = w.capacity[z as usize];
        let mut last = NEVER;
        for &(k, _, width) in &self.scratch {
            let share = f64::from_bits(k);
            rem = subtract_n(rem, share, u64::from(width));
            units -= u64::from(width);
            last = k;
        }
        (rem, units, last, at_level)
    }

    /// Resource `x` of the set fills at `ev.key`: its flows not frozen yet freeze there.
    fn fill_event(&mut self, w: &Workload, active: &ActiveLists, ev: Event) {
        let x = ev.resource;
        let s = self.slot[x as usize] as usize;
        if self.slots[s].units == 0 || self.slots[s].filled != NEVER {
            return;
        }
        // The share grew since this event was queued: queue it at its share now (the order of
        // fills is that of queueing every change at once).
        let share = self.share(s);
        if share != ev.key {
            if share > ev.key && self.slots[s].queued == ev.key {
                self.queue_fill(x, s);
            }
            return;
        }
        let key = ev.key;
        // Outside flows froze on it at this level, in an order the replay cannot vouch for, and
        // whether they came before its own fill decides what it freezes.
        if self.slots[s].level == key && self.slots[s].level_outside != NONE {
            let head = self.slots[s].level_outside;
            self.grow_unplaced_outside(w, active, head, key);
        }
        self.slots[s].filled = key;
        self.work += active[x as usize].len() as u64;
        // Flows that froze outside the set at this level or above are still unfrozen here (or
        // in an order the replay cannot vouch for): they freeze here instead, so the resource
        // they froze at behaves differently and must join the set.
        for &(f, _) in &active[x as usize] {
            let fi = f as usize;
            if self.flow[fi].frozen == self.run || self.inner(f) {
                continue;
            }
            let c = self.flow[fi].bneck;
            let fc = self.res[c as usize].fill;
            if fc == key || (fc > key && !self.try_join(w, active, c, key, None)) {
                self.mark_grow(c);
            }
        }
        for &(f, _) in &active[x as usize] {
            let fi = f as usize;
            if self.flow[fi].frozen == self.run || !self.inner(f) {
                continue;
            }
            self.flow[fi].frozen = self.run;
            self.flow[fi].new_bneck = x;
            self.frozen_list.push(f);
            let old = self.flow[fi].bneck;
            let same = old == x && self.res[x as usize].fill == key;
            for e2 in self.flow[fi].path() {
                let r2 = w.path[e2];
                if r2 == x {
                    continue;
                }
                let n = w.width_of(e2);
                if self.in_set(r2) {
                    self.touch(r2, key, n, None);
                } else if same {
                    self.check_outside(w, active, r2, key, f);
                } else if self.try_join(w, active, r2, key, Some(f)) {
                    self.touch(r2, key, n, None);
                } else {
                    self.mark_grow(r2);
                }
            }
        }
        self.slots[s].units = 0;
        self.rekey();
    }

    /// An outside resource fills at `ev.key` as before; it and every following event of the same
    /// fill freeze their flows on resources of the set.
    fn outside_event(&mut self, first: Event) {
        let (key, c) = (first.key, first.resource);
        let mut ev = first;
        loop {
            if !self.in_set(c) {
                let s = self.slot[ev.a as usize] as usize;
                if self.slots[s].filled != NEVER {
                    // The set's resource filled first and would have frozen this flow.
                    self.mark_grow(c);
                } else {
                    self.touch(ev.a, key, ev.b, Some(c));
                }
            }
            match self.queue.peek().map(|&Reverse(code)| self.decode(code)) {
                Some(next) if next.key == key && next.resource == c && next.kind == OUTSIDE => {
                    ev = next;
                    self.queue.pop();
                }
                _ => break,
            }
        }
        self.rekey();
    }

    /// A flow froze at level `key` on resource `x` of the set, `n` times (its width there), at
    /// the fill of a resource of the set (`outside == None`) or of `outside`.
    fn touch(&mut self, x: u32, key: u64, n: u32, outside: Option<u32>) {
        let s = self.slot[x as usize] as usize;
        debug_assert!(
            self.slots[s].filled == NEVER,
            "a flow froze on a filled resource"
        );
        if self.slots[s].level != key {
            self.end_level(s);
            self.slots[s].level = key;
            self.slots[s].level_rem = self.slots[s].rem;
            self.slots[s].level_units = self.slots[s].units;
            self.slots[s].level_touches = 0;
            self.slots[s].level_outside = NONE;
        }
        let share = f64::from_bits(key);
        self.slots[s].rem = subtract_n(self.slots[s].rem, share, u64::from(n));
        self.slots[s].units -= u64::from(n);
        self.slots[s].last = key;
        if !self.slots[s].touched {
            self.slots[s].touched = true;
            self.touched.push(x);
            self.slots[s].level_touches += 1;
        }
        if let Some(c) = outside {
            self.outside_log.push((c, self.slots[s].level_outside));
            self.slots[s].level_outside = (self.outside_log.len() - 1) as u32;
        }
    }

    /// Slot `s`'s fair share now (f64 bits), clamped at its last freeze's level as the full
    /// water-filling queues it.
    fn share(&self, s: usize) -> u64 {
        let slot = &self.slots[s];
        fair_share(slot.rem, slot.units, slot.last).to_bits()
    }

    /// Queues the fill of resource `x` (slot `s`) at its share now.
    fn queue_fill(&mut self, x: u32, s: usize) {
        let key = self.share(s);
        self.slots[s].queued = key;
        self.push_event(Event {
            key,
            resource: x,
            kind: FILL,
            a: 0,
            b: 0,
        });
    }

    /// After a fill, queues the new fair share of every resource it touched whose share fell below
    /// its queued one; a share that grew is queued when its earlier event comes (the full
    /// water-filling queues both at once: the same order of fills, fewer queue entries).
    fn rekey(&mut self) {
        for i in 0..self.touched.len() {
            let x = self.touched[i];
            let s = self.slot[x as usize] as usize;
            self.slots[s].touched = false;
            // A share that rounded below the queued one is queued at once; one that grew waits
            // for the queued event to come.
            if self.slots[s].units > 0
                && self.slots[s].filled == NEVER
                && self.share(s) < self.slots[s].queued
            {
                self.queue_fill(x, s);
            }
        }
        self.touched.clear();
    }

    /// Closes slot `s`'s current level. If flows from outside froze on it there, among two or more
    /// fills, the replay took them in resource order, which may not be the real one: harmless
    /// unless some prefix of the level's freezes leaves a share that rounds to exactly the level
    /// (the resource would then be queued at the level and could fill there, between them).
    fn end_level(&mut self, s: usize) {
        let key = self.slots[s].level;
        if key == NEVER {
            return;
        }
        self.slots[s].level = NEVER;
        if self.slots[s].level_outside == NONE
            || self.slots[s].level_touches < 2
            || self.slots[s].filled == key
        {
            return;
        }
        let frozen = self.slots[s].level_units - self.slots[s].units;
        if share_hits_level(
            self.slots[s].level_rem,
            self.slots[s].level_units,
            frozen,
            f64::from_bits(key),
        ) {
            self.unplaced.push((self.slots[s].level_outside, key));
        }
    }

    /// Flow `f` of the set froze as before, at level `key`, and crosses outside resource `z`. The
    /// fills of the set may have moved within the level; that matters to `z` only if it fills at
    /// the level itself or another of its flows froze there.
    fn check_outside(&mut self, w: &Workload, active: &ActiveLists, z: u32, key: u64, f: u32) {
        if self.res[z as usize].grow == self.run {
            return;
        }
        if self.res[z as usize].fill == key {
            self.mark_grow(z);
            return;
        }
        let (rem, units, last, others) = self.level_start(w, active, z, key, f);
        if others == 0 {
            return;
        }
        let mine = active[z as usize]
            .iter()
            .find(|&&(h, _)| h == f)
            .map_or(1, |&(_, e)| u64::from(w.width_of(e as usize)));
        let share = f64::from_bits(key);
        if fair_share(rem, units, last) <= share
            || share_hits_level(rem, units, mine + others, share)
        {
            self.mark_grow(z);
        }
    }

    /// Adds outside resource `z` to the set in the middle of the replay, at level `key`, where the
    /// flow `via` (if any) freezes on it, provided its state there is known exactly: it has not
    /// filled yet (the last solution had it fill above this level or not at all), replaying the
    /// freezes of its flows below the level, in level order, it does not fill before the level,
    /// and no other freeze on it comes at this level (whose order against the replay's could
    /// matter). Returns false, changing nothing, when any of that fails.
    fn try_join(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        z: u32,
        key: u64,
        via: Option<u32>,
    ) -> bool {
        let zi = z as usize;
        if self.res[zi].grow == self.run {
            return false;
        }
        if self.res[zi].fill != NEVER && self.res[zi].fill <= key {
            return false;
        }
        self.work += active[zi].len() as u64;
        // Freezes on z: (level, filling resource, width), below the level and above it.
        self.scratch.clear();
        self.later.clear();
        let mut units = 0u64;
        for &(h, e) in &active[zi] {
            let width = w.width_of(e as usize);
            units += u64::from(width);
            if Some(h) == via {
                continue;
            }
            let hi = h as usize;
            // Flows that froze at z itself are the set's to solve once it joins.
            let (k, src) = if self.inner(h) || self.flow[hi].bneck == z {
                if self.flow[hi].frozen != self.run {
                    continue;
                }
                let nb = self.flow[hi].new_bneck;
                (self.slots[self.slot[nb as usize] as usize].filled, nb)
            } else {
                let c = self.flow[hi].bneck;
                (self.res[c as usize].fill, c)
            };
            match k.cmp(&key) {
                std::cmp::Ordering::Less => self.scratch.push((k, src, width)),
                std::cmp::Ordering::Equal => return false,
                std::cmp::Ordering::Greater => self.later.push((k, src, width)),
            }
        }
        self.scratch.sort_unstable();
        let mut rem = w.capacity[zi];
        let mut last = NEVER;
        let mut i = 0;
        while i < self.scratch.len() {
            let k = self.scratch[i].0;
            if fair_share(rem, units, last).to_bits() <= k {
                return false;
            }
            let (mut total, mut sources, mut prev) = (0u64, 0, NONE);
            let mut j = i;
            while j < self.scratch.len() && self.scratch[j].0 == k {
                total += u64::from(self.scratch[j].2);
                if self.scratch[j].1 != prev {
                    sources += 1;
                    prev = self.scratch[j].1;
                }
                j += 1;
            }
            let share = f64::from_bits(k);
            if sources >= 2 && share_hits_level(rem, units, total, share) {
                return false;
            }
            rem = subtract_n(rem, share, total);
            units -= total;
            last = k;
            i = j;
        }
        if units == 0 || fair_share(rem, units, last).to_bits() <= key {
            return false;
        }
        self.add_to_set(z);
        self.new_slot();
        let s = self.slot[zi] as usize;
        self.slots[s].rem = rem;
        self.slots[s].units = units;
        self.slots[s].last = last;
        self.queue_fill(z, s);
        for i in 0..self.later.len() {
            let (k, c, width) = self.later[i];
            self.push_event(Event {
                key: k,
                resource: c,
                kind: OUTSIDE,
                a: z,
                b: width,
            });
        }
        true
    }
}

/// `rem` after subtracting `share` from it `n` times, one subtraction after another, bit for bit
/// (the water-filling's order-free way to take `n` equal flows' rates off a resource), in time
/// that does not grow with `n` while `rem` stays positive: where `rem - share` keeps `rem`'s
/// binade, every subtraction rounds to the same multiple of `rem`'s ulp, so a run of them is one
/// exact integer step. Weighted flows (`Workload::add_weighted_flow`) have widths in the
/// thousands.
fn subtract_n(mut rem: f64, share: f64, mut n: u64) -> f64 {
    while n > 0 {
        match leap(rem, share, n) {
            Leap::Fixed => return rem,
            Leap::Steps { k, big, d, ulp } => {
                rem = ((big - k * d) as f64) * ulp;
                n -= k;
            }
            Leap::One => {
                rem -= share;
                n -= 1;
            }
        }
    }
    rem
}

/// What the next of `n` subtractions of `share` from `rem` do ([`subtract_n`]).
enum Leap {
    /// Each rounds back to `rem`.
    Fixed,
    /// The next `k` take `d` ulps each off `rem`, which is `big` ulps (`ulp` a power of two):
    /// after step `j` of them, `rem` is `(big - j d) ulp` exactly.
    Steps { k: u64, big: u64, d: u64, ulp: f64 },
    /// Take one step as it comes.
    One,
}

/// The run of subtractions of `share` from `rem` that stay in `rem`'s binade (at most `n`).
fn leap(rem: f64, share: f64, n: u64) -> Leap {
    const MANTISSA: u64 = 1 << 52;
    let bits = rem.to_bits();
    let exp = bits >> 52; // the sign bit is 0 for a positive `rem`
                          // A positive normal `rem` (its ulp a normal power of two), a positive finite share, a few
                          // steps at least.
    if n < 4 || rem <= 0.0 || exp <= 52 || exp >= 0x7ff || share <= 0.0 || !share.is_finite() {
        return Leap::One;
    }
    let ulp = f64::from_bits((exp - 52) << 52);
    // `rem` in ulps, in [2^52, 2^53); `share` in ulps (exact: a power of two apart).
    let big = MANTISSA | (bits & (MANTISSA - 1));
    let x = share / ulp;
    if x >= MANTISSA as f64 || x - x.floor() == 0.5 {
        return Leap::One;
    }
    // Step j's exact result `big - j d - x` stays at or above 2^52 ulps, so it rounds to the
    // nearest whole ulp: `big - (j + 1) d`, d = x rounded (no tie).
    let (room, need, d) = (big - MANTISSA, x.ceil() as u64, x.round() as u64);
    if room < need {
        return Leap::One;
    }
    if d == 0 {
        return Leap::Fixed;
    }
    Leap::Steps {
        k: ((room - need) / d + 1).min(n),
        big,
        d,
        ulp,
    }
}

/// The fair share of a resource with `rem` capacity left over `units` unfrozen widths, clamped at
/// the level of the last freeze on it (`NEVER`: none yet), as the water-filling queues it.
fn fair_share(rem: f64, units: u64, last: u64) -> f64 {
    let share = rem / units as f64;
    if last == NEVER {
        share
    } else {
        share.max(f64::from_bits(last))
    }
}

/// Whether freezing `total` widths at `share` on a resource (`rem` left over `units`) one at a
/// time could, after some but not all of them, leave a fair share that rounds to `share` or below:
/// the water-filling would then queue the resource at this level between the fills that freeze
/// them, so their order matters.
///
/// Steps taken a run at a time ([`leap`]): over a run `rem` falls by the same ulps each step, so
/// `rem / units` moves one way (its exact value's derivative in the step has the sign of a
/// constant) and rounding keeps that order, so a run has a step at or below `share` if one of its
/// two ends does.
fn share_hits_level(mut rem: f64, units: u64, total: u64, share: f64) -> bool {
    let hits = |rem: f64, i: u64| rem / (units - i) as f64 <= share;
    let mut i = 0u64;
    while i + 1 < total {
        match leap(rem, share, total - 1 - i) {
            Leap::Fixed => {
                // `rem` stays while `units` falls, so the share only grows: the next step
                // decides.
                return hits(rem, i + 1);
            }
            Leap::Steps { k, big, d, ulp } => {
                let at = |j: u64| ((big - j * d) as f64) * ulp;
                if hits(at(1), i + 1) || hits(at(k), i + k) {
                    return true;
                }
                rem = at(k);
                i += k;
            }
            Leap::One => {
                rem -= share;
                i += 1;
                if hits(rem, i) {
                    return true;
                }
            }
        }
    }
    false
}

/// Every active flow's drain time, earliest first, ties by flow id: an indexed 4-ary heap (one
/// entry per flow, its position kept per flow, so a new drain time moves the entry in place: no
/// stale entries to pop later; a 4-ary heap is half as deep as a binary one and its children share
/// a cache line).
#[derive(Debug, Clone)]
struct DrainQueue {
    heap: Vec<(Time, u32)>,
    /// Per flow: its index in `heap`, or `NONE`.
    pos: Vec<u32>,
}

impl DrainQueue {
    fn new(flows: usize) -> DrainQueue {
        DrainQueue {
            heap: Vec::new(),
            pos: vec![NONE; flows],
        }
    }

    fn peek(&self) -> Option<(Time, u32)> {
        self.heap.first().copied()
    }

    /// Sets flow `f` to drain at `at`, whether or not it had a drain time.
    fn set(&mut self, f: u32, at: Time) {
        let i = self.pos[f as usize];
        if i == NONE {
            self.heap.push((at, f));
            let last = self.heap.len() - 1;
            self.pos[f as usize] = last as u32;
            self.up(last);
        } else {
            let i = i as usize;
            let old = self.heap[i];
            self.heap[i] = (at, f);
            if (at, f) < old {
                self.up(i);
            } else {
                self.down(i);
            }
        }
    }

    /// Removes the earliest.
    fn pop(&mut self) {
        let Some(&(_, f)) = self.heap.first() else {
            return;
        };
        self.pos[f as usize] = NONE;
        let last = self.heap.pop();
        if let (Some(x), false) = (last, self.heap.is_empty()) {
            self.heap[0] = x;
            self.pos[x.1 as usize] = 0;
            self.down(0);
        }
    }

    fn up(&mut self, mut i: usize) {
        let x = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 4;
            let p = self.heap[parent];
            if p <= x {
                break;
            }
            self.heap[i] = p;
            self.pos[p.1 as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = x;
        self.pos[x.1 as usize] = i as u32;
    }

    fn down(&mut self, mut i: usize) {
        let x = self.heap[i];
        let n = self.heap.len();
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let mut best = first;
            for c in first + 1..(first + 4).min(n) {
                if self.heap[c] < self.heap[best] {
                    best = c;
                }
            }
            let b = self.heap[best];
            if x <= b {
                break;
            }
            self.heap[i] = b;
            self.pos[b.1 as usize] = i as u32;
            i = best;
        }
        self.heap[i] = x;
        self.pos[x.1 as usize] = i as u32;
    }
}

/// A flow's progress: bytes left at `since`, sent at `rate` since then (rate 0: not yet solved).
#[derive(Debug, Clone, Copy)]
struct Progress {
    remaining: f64,
    rate: f64,
    since: Time,
}

/// The running simulation: the solver plus per-flow progress and the event queues.
struct Engine<'w> {
    w: &'w Workload,
    /// Per resource: the active flows crossing it.
    active: ActiveLists,
    solver: Incremental,
    /// Flows whose rate a re-solve moved.
    moved: Vec<u32>,
    /// Tests only: solve each change's component from scratch instead (the reference).
    #[cfg(test)]
    full: Option<Solver>,
    /// Tests only: check every incremental re-solve against a from-scratch one, bit for bit.
    #[cfg(test)]
    verify: bool,
    times: Vec<FlowTimes>,
    /// Per flow: how far it got.
    progress: Vec<Progress>,
    /// Per path entry: position of the flow in that resource's active list.
    pos: Vec<u32>,
    /// Per flow: flows it still waits for, and the earliest start those allow so far.
    waiting: Vec<u32>,
    ready: Vec<Time>,
    dependents_offset: Vec<u32>,
    dependents: Vec<u32>,
    /// Flows whose dependencies are all done, by (start, id).
    released: BinaryHeap<Reverse<(Time, u32)>>,
    /// Drain events: each active flow's drain time, earliest first.
    drains: DrainQueue,
    changed: Vec<u32>,
    changed_flag: Vec<bool>,
    /// Whether the current batch started a flow that occupies resources.
    started: bool,
    active_flows: usize,
    /// Path entries of the active flows: the size of a from-scratch solve of everything.
    active_entries: u64,
    /// The least work an incremental re-solve may do before it gives way to a from-scratch one.
    min_budget: u64,
    /// Flows finished so far (for a [`Watch`]).
    finished: u64,
    stats: EngineStats,
}

impl<'w> Engine<'w> {
    fn new(w: &'w Workload) -> Engine<'w> {
        let n = w.flows();
        // Reverse the dependency lists (counting sort): who waits for flow f.
        let mut dependents_offset = vec![0u32; n + 1];
        for &d in &w.deps {
            dependents_offset[d as usize + 1] += 1;
        }
        for i in 0..n {
            dependents_offset[i + 1] += dependents_offset[i];
        }
        let mut fill = dependents_offset.clone();
        let mut dependents = vec![0u32; w.deps.len()];
        for f in 0..n {
            for &d in w.deps_of(f) {
                let slot = &mut fill[d as usize];
                dependents[*slot as usize] = f as u32;
                *slot += 1;
            }
        }
        Engine {
            w,
            active: ActiveLists::new(w.resources()),
            solver: Incremental::new(w),
            moved: Vec::new(),
            #[cfg(test)]
            full: None,
            #[cfg(test)]
            verify: false,
            times: vec![
                FlowTimes {
                    start: Time::MAX,
                    finish: Time::MAX
                };
                n
            ],
            progress: vec![
                Progress {
                    remaining: 0.0,
                    rate: 0.0,
                    since: Time::ZERO,
                };
                n
            ],
            pos: vec![0; w.path.len()],
            waiting: (0..n).map(|f| w.deps_of(f).len() as u32).collect(),
            ready: w.start.clone(),
            dependents_offset,
            dependents,
            released: BinaryHeap::new(),
            drains: DrainQueue::new(n),
            changed: Vec::new(),
            changed_flag: vec![false; w.resources()],
            started: false,
            active_flows: 0,
            active_entries: 0,
            min_budget: MIN_BUDGET,
            finished: 0,
            stats: EngineStats::default(),
        }
    }

    fn run(mut self, cancel: Cancel<'_>, watch: Option<&Watch>) -> Result<Outcome, Cancelled> {
        let w = self.w;
        if let Some(watch) = watch {
            watch.set_flows(w.flows() as u64);
        }
        // Flows that wait for nothing start at their own time: one sorted list, walked in order.
        let mut pending: Vec<u32> = (0..w.flows() as u32)
            .filter(|&f| self.waiting[f as usize] == 0)
            .collect();
        pending.sort_by_key(|&f| (w.start[f as usize], f));
        let mut next_pending = 0;
        loop {
            let candidates = [
                self.drains.peek().map(|(t, _)| t),
                pending.get(next_pending).map(|&f| w.start[f as usize]),
                self.released.peek().map(|Reverse((t, _))| *t),
            ];
            let Some(now) = candidates.into_iter().flatten().min() else {
                break;
            };
            self.stats.events += 1;
            cancel.check()?;
            // Everything at `now`, including flows released by flows that finish at `now`. A
            // symmetric step drains a million flows at one instant: read `cancel` every
            // CANCEL_EVERY_FLOWS of them too.
            let mut handled = 0u32;
            loop {
                let mut any = false;
                while let Some((t, f)) = self.drains.peek() {
                    if t != now {
                        break;
                    }
                    handled = handled.wrapping_add(1);
                    if handled.is_multiple_of(CANCEL_EVERY_FLOWS) {
                        cancel.check()?;
                    }
                    self.drains.pop();
                    self.drain(f as usize, now);
                    any = true;
                }
                while let Some(&f) = pending.get(next_pending) {
                    if w.start[f as usize] != now {
                        break;
                    }
                    next_pending += 1;
                    handled = handled.wrapping_add(1);
                    if handled.is_multiple_of(CANCEL_EVERY_FLOWS) {
                        cancel.check()?;
                    }
                    self.start(f as usize, now);
                    any = true;
                }
                while let Some(&Reverse((t, f))) = self.released.peek() {
                    if t != now {
                        break;
                    }
                    self.released.pop();
                    self.start(f as usize, now);
                    any = true;
                }
                if !any {
                    break;
                }
            }
            if !self.changed.is_empty() {
                self.resolve(now, cancel)?;
            }
            if let Some(watch) = watch {
                watch.set(self.finished, now);
            }
        }
        Ok(Outcome {
            flows: self.times,
            stats: self.stats,
        })
    }

    fn mark_changed(&mut self, r: usize) {
        if !self.changed_flag[r] {
            self.changed_flag[r] = true;
            self.changed.push(r as u32);
        }
    }

    fn start(&mut self, f: usize, now: Time) {
        let w = self.w;
        self.times[f].start = now;
        if w.drains_at_once(f) {
            self.finish(f, now + w.latency[f]);
            return;
        }
        for e in w.path_range(f) {
            let r = w.path[e] as usize;
            // Fits: a list holds at most one entry per flow, and flows are < u32::MAX.
            self.pos[e] = self.active.push(r, (f as u32, e as u32));
            self.mark_changed(r);
        }
        // In units: the flow runs at its units times the share the solver gives.
        self.progress[f].remaining = w.bytes[f] as f64 / w.units_of(f) as f64;
        self.progress[f].rate = 0.0;
        self.progress[f].since = now;
        self.active_flows += 1;
        self.active_entries += w.path_range(f).len() as u64;
        self.started = true;
    }

    /// The last byte of `f` has been sent: free its resources; it finishes one latency later.
    fn drain(&mut self, f: usize, now: Time) {
        let w = self.w;
        for e in w.path_range(f) {
            let r = w.path[e] as usize;
            let p = self.pos[e] as usize;
            if let Some((_, moved)) = self.active.swap_remove(r, p) {
                self.pos[moved as usize] = p as u32;
            }
            self.mark_changed(r);
        }
        self.progress[f].rate = 0.0;
        self.progress[f].remaining = 0.0;
        self.active_flows -= 1;
        self.active_entries -= w.path_range(f).len() as u64;
        self.finish(f, now + self.w.latency[f]);
    }

    /// Records `f`'s finish and releases the flows waiting for it.
    fn finish(&mut self, f: usize, at: Time) {
        self.times[f].finish = at;
        self.finished += 1;
        let range = self.dependents_offset[f] as usize..self.dependents_offset[f + 1] as usize;
        for i in range {
            let d = self.dependents[i] as usize;
            self.ready[d] = self.ready[d].max(at + self.w.gap[d]);
            self.waiting[d] -= 1;
            if self.waiting[d] == 0 {
                self.released.push(Reverse((self.ready[d], d as u32)));
            }
        }
    }

    /// Re-solves after the flows of the changed resources changed, and reschedules flows whose
    /// rate moved.
    fn resolve(&mut self, now: Time, cancel: Cancel<'_>) -> Result<(), Cancelled> {
        let changed = std::mem::take(&mut self.changed);
        for &r in &changed {
            self.changed_flag[r as usize] = false;
        }
        self.stats.solves += 1;
        #[cfg(test)]
        if let Some(mut full) = self.full.take() {
            self.started = false;
            full.solve(self.w, &self.active, &changed, cancel)?;
            self.stats.flows_solved += full.comp_flows.len() as u64;
            for &f in &full.comp_flows {
                self.set_rate(f as usize, full.new_rate[f as usize], now);
            }
            self.full = Some(full);
            self.changed = changed;
            self.changed.clear();
            return Ok(());
        }
        let mut moved = std::mem::take(&mut self.moved);
        let only_removed = !std::mem::replace(&mut self.started, false);
        let budget = self.min_budget.max(self.active_entries);
        self.solver.solve(
            self.w,
            &self.active,
            &changed,
            only_removed,
            budget,
            &mut moved,
            &mut self.stats,
            cancel,
        )?;
        #[cfg(test)]
        if self.verify {
            self.verify_rates();
        }
        if moved.is_empty() {
            self.stats.skipped_solves += 1;
        }
        for &f in &moved {
            let f = f as usize;
            let new = self.solver.rate(f);
            self.set_rate(f, new, now);
        }
        self.moved = moved;
        self.changed = changed;
        self.changed.clear();
        Ok(())
    }

    /// Gives `f` rate `new` from `now`, unless it is the same rate (within `SAME_RATE`): then the
    /// flow keeps its drain event, so exact times stay exact.
    fn set_rate(&mut self, f: usize, new: f64, now: Time) {
        let old = self.progress[f].rate;
        if old > 0.0 && (new - old).abs() <= old * SAME_RATE {
            return;
        }
        if old > 0.0 {
            let sent = old * (now - self.progress[f].since).ps() as f64 / 1e12;
            self.progress[f].remaining = (self.progress[f].remaining - sent).max(0.0);
        }
        self.progress[f].rate = new;
        self.progress[f].since = now;
        // Time addition saturates too.
        let at = now + Time::from_ps(transfer_ps(self.progress[f].remaining, new));
        self.drains.set(f as u32, at);
        self.stats.reschedules += 1;
    }

    /// Tests: the incremental solution equals a from-scratch water-filling of every active flow.
    #[cfg(test)]
    fn verify_rates(&self) {
        let mut full = Solver::new(self.w);
        let seeds: Vec<u32> = (0..self.w.resources() as u32).collect();
        full.solve(self.w, &self.active, &seeds, Cancel::NEVER)
            .unwrap();
        for &f in &full.comp_flows {
            let f = f as usize;
            assert_eq!(
                self.solver.rate(f).to_bits(),
                full.new_rate[f].to_bits(),
                "flow {f}: incremental {} vs full {}",
                self.solver.rate(f),
                full.new_rate[f]
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Weighted max-min fairness: on one link a flow of weight 20/19 takes 20/39 of it and one
    /// of weight 1 takes 19/39; a connection split over 19 paths of weight 20/19 each takes as
    /// much of its NIC's link as one over 20 paths of weight 1, and both drain together. A
    /// weighted flow added after others rescales their units without changing their rates.
    /// `share_hits_level` run a run at a time answers as taking every step does.
    #[test]
    fn share_hits_level_by_runs_answers_as_step_by_step() {
        let naive = |mut rem: f64, mut units: u64, total: u64, share: f64| {
            for _ in 1..total {
                rem -= share;
                units -= 1;
                if rem / units as f64 <= share {
                    return true;
                }
            }
            false
        };
        let mut rng = Rng(11);
        let mut hits = 0;
        for case in 0..20_000u64 {
            let units = 2 + rng.below(20_000);
            let total = 1 + rng.below(units);
            let rem = 1e9 * (1.0 + rng.below(1 << 20) as f64 / 1024.0);
            let fair = rem / units as f64;
            let ulp = |v: f64| f64::from_bits(v.to_bits() + 1) - v;
            let share = match case % 4 {
                0 => fair,
                1 => fair - ulp(fair) * rng.below(4) as f64,
                2 => fair + ulp(fair) * rng.below(4) as f64,
                _ => fair * (1.0 - rng.below(100) as f64 * 1e-12),
            };
            let want = naive(rem, units, total, share);
            hits += u32::from(want);
            assert_eq!(
                share_hits_level(rem, units, total, share),
                want,
                "{rem:e} {units} {total} {share:e}"
            );
        }
        assert!(hits > 100, "{hits} hits: the cases test nothing");
    }

    /// `subtract_n` is `n` subtractions one after another, bit for bit: shares at and around
    /// ties, below half an ulp, runs that cross binades and end at or below zero.
    #[test]
    fn subtracting_n_times_at_once_is_subtracting_one_at_a_time() {
        let mut rng = Rng(7);
        for case in 0..20_000u64 {
            let rem = match case % 4 {
                0 => (rng.below(1 << 40) + 1) as f64 * 1e3,
                1 => f64::from_bits(rng.next() >> 2),
                2 => 2f64.powi(rng.below(80) as i32 - 20),
                _ => 25e9 * (1.0 + rng.below(1000) as f64 / 7.0),
            };
            let ulp = |v: f64| f64::from_bits(v.to_bits() + 1) - v;
            let share = match case % 5 {
                0 => rem / (rng.below(50_000) + 1) as f64,
                1 => ulp(rem) * (rng.below(64) as f64 / 4.0),
                2 => ulp(rem) * 0.5,
                3 => rem / 3.0 + ulp(rem) * rng.below(8) as f64,
                _ => (rng.below(1 << 30) + 1) as f64 / 1024.0,
            };
            let n = rng.below(30_000);
            let mut want = rem;
            for _ in 0..n {
                want -= share;
            }
            let got = subtract_n(rem, share, n);
            assert_eq!(got.to_bits(), want.to_bits(), "{rem:e} - {share:e} x {n}");
        }
    }

    #[test]
    fn weighted_flows_share_as_their_weights_say() {
        let mut w = Workload::new();
        let link = w.add_resource(39e9).unwrap();
        let flow = |bytes| Flow {
            path: &[],
            bytes,
            ..Flow::default()
        };
        let path = [link];
        w.add_flow(&Flow {
            path: &path,
            ..flow(19_000)
        })
        .unwrap();
        let heavy = Weight::new(20, 19).unwrap();
        w.add_weighted_flow(
            &Flow {
                path: &path,
                ..flow(20_000)
            },
            &[],
            heavy,
        )
        .unwrap();
        let rates = max_min_rates(&w);
        assert!((rates[0] - 19e9).abs() < 1.0, "{rates:?}");
        assert!((rates[1] - 20e9).abs() < 1.0, "{rates:?}");
        let out = simulate(&w);
        assert_eq!(out.flows[0].finish, out.flows[1].finish);
        assert_eq!(out.flows[0].finish, Time::from_ps(1_000_000));

        // 20 paths of weight 1 and 19 of weight 20/19 through one NIC link and one spine link
        // each: the NIC's link is split evenly between the two connections.
        let mut w = Workload::new();
        let nic = w.add_resource(100e9).unwrap();
        let spines: Vec<ResourceId> = (0..20).map(|_| w.add_resource(100e9).unwrap()).collect();
        // The first flow weighted: the flows after it are counted in its units.
        for (i, s) in spines.iter().enumerate() {
            if i < 19 {
                w.add_weighted_flow(
                    &Flow {
                        path: &[nic, *s],
                        ..flow(1_000)
                    },
                    &[],
                    heavy,
                )
                .unwrap();
            }
            w.add_flow(&Flow {
                path: &[nic, *s],
                ..flow(1_000)
            })
            .unwrap();
        }
        let rates = max_min_rates(&w);
        let (light, heavy): (f64, f64) =
            rates
                .iter()
                .enumerate()
                .fold((0.0, 0.0), |(l, h), (f, &r)| {
                    if f % 2 == 1 || f == 38 {
                        (l + r, h)
                    } else {
                        (l, h + r)
                    }
                });
        assert!(
            (light - 50e9).abs() < 1.0 && (heavy - 50e9).abs() < 1.0,
            "{rates:?}"
        );
        let verified = simulate_reference(&w, false, true);
        assert_eq!(verified.flows, simulate(&w).flows);
    }

    #[test]
    fn a_set_cancellation_flag_stops_the_run_and_an_unset_one_changes_nothing() {
        use std::sync::atomic::AtomicBool;
        let mut w = Workload::new();
        let link = w.add_resource(12.5e9).unwrap();
        for _ in 0..3 {
            w.add_flow(&Flow {
                path: &[link],
                bytes: 1_000_000,
                ..Flow::default()
            })
            .unwrap();
        }
        let unset = AtomicBool::new(false);
        let out = simulate_until(&w, Cancel::new(&unset)).unwrap();
        assert_eq!(out.flows, simulate(&w).flows);
        let set = AtomicBool::new(true);
        assert_eq!(simulate_until(&w, Cancel::new(&set)).err(), Some(Cancelled));
        // The solver reads it too (one solve over a million flows takes seconds).
        assert_eq!(
            max_min_rates_until(&w, Cancel::new(&unset)),
            Ok(max_min_rates(&w))
        );
        assert_eq!(max_min_rates_until(&w, Cancel::new(&set)), Err(Cancelled));
    }

    fn res(w: &mut Workload, caps: &[f64]) -> Vec<ResourceId> {
        caps.iter().map(|&c| w.add_resource(c).unwrap()).collect()
    }

    fn flow(w: &mut Workload, path: &[ResourceId], bytes: u64, start: Time) -> FlowId {
        w.add_flow(&Flow {
            path,
            bytes,
            start,
            ..Flow::default()
        })
        .unwrap()
    }

    const GB: f64 = 1e9;

    #[test]
    fn lone_flow_takes_bytes_over_rate_plus_latency_exactly() {
        // 100 Gb/s = 12.5 GB/s; 1 MB takes 80 us exactly; 4 hops of 100 ns.
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB, 12.5 * GB]);
        w.add_flow(&Flow {
            path: &r,
            bytes: 1_000_000,
            start: Time::from_ns(5),
            latency: Time::from_ns(400),
            ..Flow::default()
        })
        .unwrap();
        let out = simulate(&w);
        assert_eq!(out.flows[0].start, Time::from_ns(5));
        assert_eq!(
            out.flows[0].finish,
            Time::from_ns(5) + Time::from_ns(400) + Time::from_us(80)
        );
    }

    #[test]
    fn lone_flow_rounds_to_the_nearest_picosecond() {
        // 1000 bytes at 3 B/ps: 333.33.. ps rounds to 333; 2000 bytes: 666.67 rounds to 667.
        let mut w = Workload::new();
        let r = res(&mut w, &[3e12]);
        flow(&mut w, &r, 1000, Time::ZERO);
        flow(&mut w, &r, 2000, Time::from_us(1));
        let out = simulate(&w);
        assert_eq!(out.flows[0].finish, Time::from_ps(333));
        assert_eq!(out.flows[1].finish, Time::from_us(1) + Time::from_ps(667));
    }

    /// The drain queue pops what a sorted list of every flow's latest drain time would, under
    /// random moves earlier and later, new entries and pops.
    #[test]
    fn drain_queue_pops_in_time_then_flow_order() {
        let mut rng = Rng(5);
        for _ in 0..200 {
            let n = 1 + rng.below(40) as usize;
            let mut q = DrainQueue::new(n);
            let mut model: Vec<Option<Time>> = vec![None; n];
            for _ in 0..300 {
                if rng.below(3) == 0 {
                    let expect = (0..n).filter_map(|f| model[f].map(|t| (t, f as u32))).min();
                    assert_eq!(q.peek(), expect);
                    if let Some((_, f)) = expect {
                        q.pop();
                        model[f as usize] = None;
                    }
                } else {
                    let f = rng.below(n as u64) as u32;
                    let t = Time::from_ps(rng.below(50));
                    q.set(f, t);
                    model[f as usize] = Some(t);
                }
            }
        }
    }

    /// Regression: the widths of a workload's first flow were dropped (its path was the first, so
    /// "no widths yet" and "widths of an empty list" looked alike).
    #[test]
    fn the_first_flow_keeps_its_widths() {
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB, 12.5 * GB]);
        w.add_flow_with_widths(
            &Flow {
                path: &r,
                bytes: 1_000_000,
                ..Flow::default()
            },
            &[2, 5],
        )
        .unwrap();
        flow(&mut w, &r[..1], 1_000_000, Time::ZERO);
        // Resource 1 is crossed 5 times: 2.5 GB/s each; then resource 0 leaves 12.5 - 2 x 2.5 for
        // the other flow.
        assert_eq!(max_min_rates(&w), vec![2.5 * GB, 7.5 * GB]);
    }

    #[test]
    fn two_flows_on_one_link_get_half_each() {
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB]);
        flow(&mut w, &r, 1_000_000, Time::ZERO);
        flow(&mut w, &r, 1_000_000, Time::ZERO);
        let out = simulate(&w);
        for f in &out.flows {
            assert_eq!(f.finish, Time::from_us(160));
        }
        assert_eq!(max_min_rates(&w), vec![6.25 * GB, 6.25 * GB]);
        // One batch for the start and one for both finishes.
        assert_eq!(out.stats.events, 2);
    }

    #[test]
    fn a_watch_sees_every_flow_finish_and_changes_no_time() {
        // S and 2S on one link plus a flow with nothing to send: the watch ends at three finished
        // flows and the last event's time (the second drain at 3S/C), and the times are simulate's.
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB]);
        flow(&mut w, &r, 1_000_000, Time::ZERO);
        flow(&mut w, &r, 2_000_000, Time::ZERO);
        flow(&mut w, &[], 0, Time::from_us(5));
        let watch = Watch::new();
        assert_eq!(watch.read(), crate::watch::Reading::default());
        let watched = simulate_watched(&w, &watch);
        let plain = simulate(&w);
        assert_eq!(watched.flows, plain.flows);
        assert_eq!(
            watch.read(),
            crate::watch::Reading {
                flows: 3,
                finished: 3,
                now: Time::from_us(240),
            }
        );
    }

    #[test]
    fn freed_capacity_goes_to_the_survivor() {
        // S and 2S on one link: both at C/2 until 2S/C, then the second alone: done at 3S/C.
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB]);
        flow(&mut w, &r, 1_000_000, Time::ZERO);
        flow(&mut w, &r, 2_000_000, Time::ZERO);
        let out = simulate(&w);
        assert_eq!(out.flows[0].finish, Time::from_us(160));
        assert_eq!(out.flows[1].finish, Time::from_us(240));
    }

    #[test]
    fn a_finish_re_solves_only_its_component() {
        // Two links that share no flow. At time 0 all four flows are solved; after that each finish
        // re-solves only the survivor on its own link: 4 + 1 + 1 flows solved.
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB, 12.5 * GB]);
        flow(&mut w, &r[..1], 1_000_000, Time::ZERO);
        flow(&mut w, &r[..1], 2_000_000, Time::ZERO);
        flow(&mut w, &r[1..], 3_000_000, Time::ZERO);
        flow(&mut w, &r[1..], 5_000_000, Time::ZERO);
        let out = simulate(&w);
        assert_eq!(out.stats.flows_solved, 6);
        assert_eq!(out.flows[1].finish, Time::from_us(240));
        assert_eq!(out.flows[3].finish, Time::from_us(640));
    }

    #[test]
    fn equal_flows_started_together_solve_once() {
        // Rates 1/3, 2/3 and 1 of capacity on three links in a chain of shared flows: three
        // distinct finish times, but after the first solve no finish can move a rate.
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB; 3]);
        for path in [&r[..1], &r[..1], &r[..2], &r[1..2], &r[2..]] {
            flow(&mut w, path, 1_000_000, Time::ZERO);
        }
        let out = simulate(&w);
        assert_eq!(out.stats.solves, out.stats.skipped_solves + 1);
        assert!(out.stats.skipped_solves >= 2);
        assert_eq!(out.flows, simulate_reference(&w, true, false).flows);
        assert_eq!(out.flows[0].finish, Time::from_us(240));
        assert_eq!(out.flows[4].finish, Time::from_us(80));
    }

    /// Random workloads full of ties (a few capacities, equal sizes, shared starts) and of staggered
    /// unequal flows: the incremental engine gives the rates of a from-scratch water-filling of all
    /// active flows after every change, bit for bit (`verify`), and the same finish times as the
    /// engine that re-solved whole components from scratch.
    #[test]
    fn incremental_re_solves_equal_full_re_solves() {
        let mut rng = Rng(11);
        let (mut restarts, mut full_solves) = (0, 0);
        for case in 0..400 {
            let mut w = Workload::new();
            let nr = 2 + rng.below(14) as usize;
            let caps: Vec<f64> = (0..nr)
                .map(|_| match case % 3 {
                    0 => 1e9 * (1 + rng.below(4)) as f64,
                    1 => 1e9 * (1 + rng.below(2)) as f64 / 3.0,
                    _ => 1e9 + rng.below(1_000_000) as f64,
                })
                .collect();
            let r = res(&mut w, &caps);
            let equal = case % 4 == 0;
            let widths = case % 5 == 1;
            for _ in 0..1 + rng.below(60) {
                let mut path: Vec<ResourceId> = Vec::new();
                for _ in 0..1 + rng.below(4) {
                    let x = r[rng.below(nr as u64) as usize];
                    if !path.contains(&x) {
                        path.push(x);
                    }
                }
                let bytes = if equal {
                    1_000_000
                } else {
                    1 + rng.below(2_000_000)
                };
                let start = if equal {
                    0
                } else {
                    rng.below(4) * rng.below(300)
                };
                let width: Vec<u32> = if widths {
                    path.iter().map(|_| 1 + rng.below(3) as u32).collect()
                } else {
                    Vec::new()
                };
                w.add_flow_with_widths(
                    &Flow {
                        path: &path,
                        bytes,
                        start: Time::from_us(start),
                        ..Flow::default()
                    },
                    &width,
                )
                .unwrap();
            }
            eprintln!("case {case}");
            // Every seventh case with a tiny budget: re-solves fall back to from-scratch ones.
            let budget = if case % 7 == 3 { 16 } else { MIN_BUDGET };
            let fast = simulate_with_budget(&w, false, true, budget);
            let full = simulate_reference(&w, true, false);
            assert_eq!(fast.flows, full.flows, "case {case}");
            restarts += fast.stats.restarts;
            full_solves += fast.stats.full_solves;
        }
        // Replays that had to grow their set happen, and so do fallbacks: both were exercised.
        assert!(restarts > 0 && full_solves > 0, "{restarts} {full_solves}");
    }

    /// Larger random networks (up to 45 resources and 400 flows, paths of up to 5 resources), in
    /// four families of capacities: few distinct values, fractions of a gigabyte per second (shares
    /// that round), one value for all, and all distinct. Bit for bit as above.
    #[test]
    fn incremental_re_solves_equal_full_re_solves_on_larger_networks() {
        let mut rng = Rng(5);
        let mut restarts = 0;
        for case in 0..60 {
            let mut w = Workload::new();
            let nr = 5 + rng.below(40) as usize;
            let family = rng.below(4);
            let caps: Vec<f64> = (0..nr)
                .map(|_| match family {
                    0 => 1e9 * (1 + rng.below(3)) as f64,
                    1 => 1e9 / (1 + rng.below(7)) as f64,
                    2 => 12.5e9,
                    _ => 1e9 + rng.below(1000) as f64,
                })
                .collect();
            let r = res(&mut w, &caps);
            let (sizes, starts, widths) = (rng.below(3), rng.below(3), rng.below(3) == 0);
            for _ in 0..1 + rng.below(400) {
                let mut path: Vec<ResourceId> = Vec::new();
                for _ in 0..1 + rng.below(5) {
                    let x = r[rng.below(nr as u64) as usize];
                    if !path.contains(&x) {
                        path.push(x);
                    }
                }
                let bytes = match sizes {
                    0 => 1_000_000,
                    1 => 1_000_000 * (1 + rng.below(3)),
                    _ => 1 + rng.below(5_000_000),
                };
                let start = match starts {
                    0 => 0,
                    1 => 100 * rng.below(5),
                    _ => rng.below(2000),
                };
                let width: Vec<u32> = if widths {
                    path.iter().map(|_| 1 + rng.below(4) as u32).collect()
                } else {
                    Vec::new()
                };
                w.add_flow_with_widths(
                    &Flow {
                        path: &path,
                        bytes,
                        start: Time::from_us(start),
                        ..Flow::default()
                    },
                    &width,
                )
                .unwrap();
            }
            let fast = simulate_reference(&w, false, true);
            let full = simulate_reference(&w, true, false);
            assert_eq!(fast.flows, full.flows, "case {case}");
            restarts += fast.stats.restarts;
        }
        assert!(restarts > 0);
    }

    #[test]
    fn a_late_flow_slows_an_early_one() {
        // A starts alone at C, B joins at 40 us: A has S/2 left at C/2 -> done at 120 us; B sent
        // S/2 by then and finishes alone at 120 + 40 = 160 us.
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB]);
        flow(&mut w, &r, 1_000_000, Time::ZERO);
        flow(&mut w, &r, 1_000_000, Time::from_us(40));
        let out = simulate(&w);
        assert_eq!(out.flows[0].finish, Time::from_us(120));
        assert_eq!(out.flows[1].finish, Time::from_us(160));
    }

    /// Bertsekas & Gallager, *Data Networks*, 2nd ed., §6.5.2, the max-min fair example: all link
    /// capacities 1; sessions 2, 3 and 5 are bottlenecked on link (2,3) at 1/3, session 1 on (3,5)
    /// at 2/3, session 4 on (4,5) at 1, and link (1,3) keeps 1/3 spare. The paths are those the
    /// book's caption implies: 1: (1,3),(3,5); 2: (2,3); 3: (2,3),(3,4); 4: (4,5); 5: (2,3),(3,5).
    #[test]
    fn bertsekas_gallager_max_min_example() {
        let mut w = Workload::new();
        let l = res(&mut w, &[1.0; 5]);
        let (l13, l23, l35, l45, l34) = (l[0], l[1], l[2], l[3], l[4]);
        for path in [
            vec![l13, l35],
            vec![l23],
            vec![l23, l34],
            vec![l45],
            vec![l23, l35],
        ] {
            flow(&mut w, &path, 1, Time::ZERO);
        }
        let rates = max_min_rates(&w);
        let expect = [2.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 1.0, 1.0 / 3.0];
        for (got, want) in rates.iter().zip(expect) {
            assert!((got - want).abs() < 1e-12, "{rates:?}");
        }
    }

    /// Small deterministic generator for the property test (SplitMix64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            crate::routing::mix64(&mut self.0)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Max-min fairness as a certificate: the allocation is feasible, and every flow crosses a
    /// saturated resource on which no flow gets more than it does (its bottleneck).
    #[test]
    fn random_networks_get_max_min_fair_rates() {
        let mut rng = Rng(7);
        for _case in 0..200 {
            let mut w = Workload::new();
            let nr = 1 + rng.below(12) as usize;
            let caps: Vec<f64> = (0..nr).map(|_| 1.0 + rng.below(100) as f64).collect();
            let r = res(&mut w, &caps);
            let nf = 1 + rng.below(30) as usize;
            let mut paths = Vec::new();
            for _ in 0..nf {
                let mut path: Vec<ResourceId> = Vec::new();
                for _ in 0..1 + rng.below(4) {
                    let x = r[rng.below(nr as u64) as usize];
                    if !path.contains(&x) {
                        path.push(x);
                    }
                }
                flow(&mut w, &path, 1, Time::ZERO);
                paths.push(path);
            }
            let rates = max_min_rates(&w);
            let mut load = vec![0.0; nr];
            let mut top = vec![0.0_f64; nr];
            for (p, &x) in paths.iter().zip(&rates) {
                assert!(x > 0.0);
                for q in p {
                    load[q.index()] += x;
                    top[q.index()] = top[q.index()].max(x);
                }
            }
            let eps = 1e-9;
            for i in 0..nr {
                assert!(load[i] <= caps[i] * (1.0 + eps), "over capacity");
            }
            for (p, &x) in paths.iter().zip(&rates) {
                let bottleneck = p.iter().any(|q| {
                    load[q.index()] >= caps[q.index()] * (1.0 - eps) && top[q.index()] <= x + eps
                });
                assert!(bottleneck, "flow without a bottleneck: {paths:?} {rates:?}");
            }
        }
    }

    #[test]
    fn dependencies_wait_for_finish_plus_gap() {
        let mut w = Workload::new();
        let r = res(&mut w, &[12.5 * GB]);
        let a = w
            .add_flow(&Flow {
                path: &r,
                bytes: 1_000_000,
                latency: Time::from_ns(100),
                ..Flow::default()
            })
            .unwrap();
        let b = w
            .add_flow(&Flow {
                path: &[],
                bytes: 0,
                latency: Time::from_ns(7),
                after: &[a],
                gap: Time::from_ns(3),
                ..Flow::default()
            })
            .unwrap();
        w.add_flow(&Flow {
            path: &r,
            bytes: 1_000_000,
            after: &[a, b],
            ..Flow::default()
        })
        .unwrap();
        let out = simulate(&w);
        let a_done = Time::from_us(80) + Time::from_ns(100);
        assert_eq!(out.flows[0].finish, a_done);
        assert_eq!(out.flows[1].start, a_done + Time::from_ns(3));
        assert_eq!(out.flows[1].finish, a_done + Time::from_ns(10));
        assert_eq!(out.flows[2].start, a_done + Time::from_ns(10));
        assert_eq!(
            out.flows[2].finish,
            a_done + Time::from_ns(10) + Time::from_us(80)
        );
    }

    #[test]
    fn zero_byte_chains_resolve_in_one_instant() {
        let mut w = Workload::new();
        let r = res(&mut w, &[1.0]);
        let mut prev = flow(&mut w, &r, 0, Time::from_ns(1));
        for _ in 0..10 {
            prev = w
                .add_flow(&Flow {
                    path: &r,
                    after: &[prev],
                    ..Flow::default()
                })
                .unwrap();
        }
        let out = simulate(&w);
        assert!(out.flows.iter().all(|f| f.finish == Time::from_ns(1)));
        assert_eq!(out.stats.events, 1);
    }

    #[test]
    fn invalid_input_is_rejected() {
        let mut w = Workload::new();
        assert!(matches!(
            w.add_resource(0.0),
            Err(SimError::BadCapacity { .. })
        ));
        assert!(w.add_resource(f64::NAN).is_err());
        let r = w.add_resource(1.0).unwrap();
        let bad = ResourceId(5);
        assert!(matches!(
            w.add_flow(&Flow {
                path: &[bad],
                ..Flow::default()
            }),
            Err(SimError::UnknownResource { .. })
        ));
        assert!(matches!(
            w.add_flow(&Flow {
                path: &[r, r],
                ..Flow::default()
            }),
            Err(SimError::RepeatedResource { .. })
        ));
        assert!(matches!(
            w.add_flow(&Flow {
                after: &[FlowId(0)],
                ..Flow::default()
            }),
            Err(SimError::BadDependency { .. })
        ));
        assert_eq!(w.flows(), 0);
    }

    #[test]
    fn many_flows_same_results_every_run() {
        // A random mesh with staggered starts: two runs agree bit for bit, and the heap compaction
        // and component search are exercised.
        let mut rng = Rng(3);
        let mut w = Workload::new();
        let r = res(&mut w, &vec![1e9; 50]);
        for i in 0..2000 {
            let a = r[rng.below(50) as usize];
            let b = r[rng.below(50) as usize];
            let path = if a == b { vec![a] } else { vec![a, b] };
            flow(
                &mut w,
                &path,
                1 + rng.below(1_000_000),
                Time::from_ns(i * rng.below(100)),
            );
        }
        let one = simulate(&w);
        let two = simulate(&w);
        assert_eq!(one.flows, two.flows);
        assert!(one.flows.iter().all(|f| f.finish > f.start));
        // Total bytes / total capacity bounds the makespan from below.
        let bytes: u64 = (0..w.flows()).map(|f| w.bytes[f]).sum();
        let makespan = one.flows.iter().map(|f| f.finish).max().unwrap();
        assert!(makespan.as_secs_f64() >= bytes as f64 / (50.0 * 1e9) * 0.999);
    }
}
