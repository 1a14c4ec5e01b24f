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
//! - A re-solve covers only the connected component of the resources that changed (flows linked
//!   through shared resources), found by a search over per-resource lists of active flows. This is
//!   the "selective update" of SimGrid's LMM solver. Flows outside it keep their rates and events.
//! - Water-filling is bottleneck-first: a priority queue of resources keyed by fair share (remaining
//!   capacity / unfrozen flows) pops the next bottleneck; only resources whose share changed are
//!   pushed again. Cost: O(P log R) for P path entries and R resources in the component.
//! - A batch that only removes flows skips the solve when no remaining flow on a freed resource
//!   had that resource as its bottleneck (see `Engine::removal_changes_rates`): the old rates are
//!   still max-min fair. Equal-sized flows that start together (all-to-all, permutations) then
//!   never re-solve after the first instant, however many distinct finish times they have.
//! - A flow whose rate did not change (within a relative 1e-12) keeps its scheduled drain event, so
//!   a re-solve does not reschedule the world and exact times stay exact.
//! - Stale drain events are dropped lazily (each carries its flow's version) and the heap is
//!   compacted when they outnumber the live ones.
//!
//! Architecture invariant: the engine does no I/O, reads no clock, never iterates a hash map, and
//! breaks every tie by id, so the same workload gives the same times on every machine. A validated
//! [`Workload`] always runs to the end: every active flow has a positive rate, and a flow only waits
//! for flows added before it, so there are no cycles.

use crate::cancel::{Cancel, Cancelled};
use crate::error::SimError;
use crate::time::Time;
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
    capacity: Vec<f64>,
    /// Flow f's path is `path[path_offset[f]..path_offset[f + 1]]`.
    path_offset: Vec<u32>,
    path: Vec<u32>,
    bytes: Vec<u64>,
    start: Vec<Time>,
    latency: Vec<Time>,
    gap: Vec<Time>,
    /// Flow f waits for `deps[dep_offset[f]..dep_offset[f + 1]]`.
    dep_offset: Vec<u32>,
    deps: Vec<u32>,
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
        if !(bytes_per_second.is_finite() && bytes_per_second > 0.0) {
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
        let index = self.bytes.len();
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

    fn path_range(&self, f: usize) -> std::ops::Range<usize> {
        self.path_offset[f] as usize..self.path_offset[f + 1] as usize
    }

    fn path_of(&self, f: usize) -> &[u32] {
        &self.path[self.path_range(f)]
    }

    fn deps_of(&self, f: usize) -> &[u32] {
        &self.deps[self.dep_offset[f] as usize..self.dep_offset[f + 1] as usize]
    }

    /// A flow that never occupies a resource: nothing to send or nowhere to send it through.
    fn drains_at_once(&self, f: usize) -> bool {
        self.bytes[f] == 0 || self.path_offset[f] == self.path_offset[f + 1]
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
    /// Water-filling runs (one per batch that changed some resource's flows and could move a rate).
    pub solves: u64,
    /// Batches that only removed flows and provably left every other rate as it was.
    pub skipped_solves: u64,
    /// Flows re-solved, summed over all solves (the size of the components).
    pub flows_solved: u64,
    /// Times a flow's rate changed and its drain event was rescheduled.
    pub reschedules: u64,
}

/// The result of [`simulate`]: times per flow, indexed by [`FlowId`], and effort counters.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub flows: Vec<FlowTimes>,
    pub stats: EngineStats,
}

/// Runs the workload to the end.
pub fn simulate(w: &Workload) -> Outcome {
    match Engine::new(w).run(Cancel::NEVER) {
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
    Engine::new(w).run(cancel)
}

/// Flows started or drained at one event time (or solver queue entries) between two reads of the
/// cancellation flag.
pub const CANCEL_EVERY_FLOWS: u32 = 4096;

/// Like [`simulate`] but re-solving after every change, to check the skip rule against.
#[cfg(test)]
fn simulate_without_skips(w: &Workload) -> Outcome {
    let mut engine = Engine::new(w);
    engine.skip_solves = false;
    match engine.run(Cancel::NEVER) {
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
    let mut seeds = Vec::new();
    for f in 0..w.flows() {
        for e in w.path_range(f) {
            let r = w.path[e] as usize;
            solver.active[r].push((f as u32, e as u32));
            seeds.push(r as u32);
        }
    }
    solver.solve(w, &seeds, cancel)?;
    Ok((0..w.flows())
        .map(|f| {
            if w.path_range(f).is_empty() {
                f64::INFINITY
            } else {
                solver.new_rate[f]
            }
        })
        .collect())
}

/// Two rates closer than this (relative) are the same rate: the flow keeps its drain event. Far
/// below any physical meaning, far above f64 noise from summing in a different order.
const SAME_RATE: f64 = 1e-12;

/// Progressive-filling solver state, sized once per workload and reused by every solve.
struct Solver {
    /// Per resource: the active flows crossing it, as (flow, index of the path entry).
    active: Vec<Vec<(u32, u32)>>,
    capacity: Vec<f64>,
    /// Per resource, during a solve: capacity not yet given to frozen flows.
    rem: Vec<f64>,
    /// Per resource, during a solve: active flows not frozen yet.
    unfrozen: Vec<u32>,
    /// Per resource: bumped on every push so older queue entries are recognised as stale.
    version: Vec<u32>,
    /// Per resource / per flow: `epoch` when in the current component.
    res_mark: Vec<u32>,
    flow_mark: Vec<u32>,
    /// Per flow: `epoch` once frozen in the current solve.
    frozen_mark: Vec<u32>,
    /// Per flow: the rate from the latest solve that included it.
    new_rate: Vec<f64>,
    /// Per flow: the resource it froze at in the latest solve that included it (its bottleneck).
    bottleneck: Vec<u32>,
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
            active: vec![Vec::new(); r],
            capacity: w.capacity.clone(),
            rem: vec![0.0; r],
            unfrozen: vec![0; r],
            version: vec![0; r],
            res_mark: vec![0; r],
            flow_mark: vec![0; f],
            frozen_mark: vec![0; f],
            new_rate: vec![0.0; f],
            bottleneck: vec![0; f],
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
    fn solve(&mut self, w: &Workload, seeds: &[u32], cancel: Cancel<'_>) -> Result<(), Cancelled> {
        self.next_epoch();
        let Solver {
            active,
            capacity,
            rem,
            unfrozen,
            version,
            res_mark,
            flow_mark,
            frozen_mark,
            new_rate,
            bottleneck,
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
            // At most u32::MAX - 1 flows exist (checked in add_flow), so the count fits.
            unfrozen[ri] = active[ri].len() as u32;
            version[ri] = version[ri].wrapping_add(1);
            let share = rem[ri] / f64::from(unfrozen[ri]);
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
            for &(f, _) in &active[ri] {
                let fi = f as usize;
                if frozen_mark[fi] == epoch {
                    continue;
                }
                frozen_mark[fi] = epoch;
                new_rate[fi] = share;
                bottleneck[fi] = r;
                for &r2 in w.path_of(fi) {
                    if r2 == r {
                        continue;
                    }
                    let r2i = r2 as usize;
                    rem[r2i] -= share;
                    unfrozen[r2i] -= 1;
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
                    let share = (rem[r2i] / f64::from(unfrozen[r2i])).max(level);
                    queue.push(Reverse((share.to_bits(), r2, version[r2i])));
                }
            }
        }
        Ok(())
    }
}

/// The running simulation: the solver plus per-flow progress and the event queues.
struct Engine<'w> {
    w: &'w Workload,
    solver: Solver,
    times: Vec<FlowTimes>,
    /// Bytes left at `since`, sent at `rate` since then (rate 0: not yet solved).
    remaining: Vec<f64>,
    rate: Vec<f64>,
    since: Vec<Time>,
    /// Bumped whenever a flow's drain event is replaced or it drains; older events are stale.
    version: Vec<u32>,
    /// Per path entry: position of the flow in that resource's active list.
    pos: Vec<u32>,
    /// Per flow: flows it still waits for, and the earliest start those allow so far.
    waiting: Vec<u32>,
    ready: Vec<Time>,
    dependents_offset: Vec<u32>,
    dependents: Vec<u32>,
    /// Flows whose dependencies are all done, by (start, id).
    released: BinaryHeap<Reverse<(Time, u32)>>,
    /// Drain events: (time, flow, version).
    drains: BinaryHeap<Reverse<(Time, u32, u32)>>,
    changed: Vec<u32>,
    changed_flag: Vec<bool>,
    /// Whether the current batch started a flow that occupies resources (it must be solved).
    started: bool,
    /// Off only in tests, to check the skip rule against full solves.
    skip_solves: bool,
    active_flows: usize,
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
            solver: Solver::new(w),
            times: vec![
                FlowTimes {
                    start: Time::MAX,
                    finish: Time::MAX
                };
                n
            ],
            remaining: vec![0.0; n],
            rate: vec![0.0; n],
            since: vec![Time::ZERO; n],
            version: vec![0; n],
            pos: vec![0; w.path.len()],
            waiting: (0..n).map(|f| w.deps_of(f).len() as u32).collect(),
            ready: w.start.clone(),
            dependents_offset,
            dependents,
            released: BinaryHeap::new(),
            drains: BinaryHeap::new(),
            changed: Vec::new(),
            changed_flag: vec![false; w.resources()],
            started: false,
            skip_solves: true,
            active_flows: 0,
            stats: EngineStats::default(),
        }
    }

    fn run(mut self, cancel: Cancel<'_>) -> Result<Outcome, Cancelled> {
        let w = self.w;
        // Flows that wait for nothing start at their own time: one sorted list, walked in order.
        let mut pending: Vec<u32> = (0..w.flows() as u32)
            .filter(|&f| self.waiting[f as usize] == 0)
            .collect();
        pending.sort_by_key(|&f| (w.start[f as usize], f));
        let mut next_pending = 0;
        loop {
            self.drop_stale_drains();
            let candidates = [
                self.drains.peek().map(|Reverse((t, _, _))| *t),
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
                while let Some(&Reverse((t, f, v))) = self.drains.peek() {
                    if t != now {
                        break;
                    }
                    handled = handled.wrapping_add(1);
                    if handled.is_multiple_of(CANCEL_EVERY_FLOWS) {
                        cancel.check()?;
                    }
                    self.drains.pop();
                    if v == self.version[f as usize] {
                        self.drain(f as usize, now);
                        any = true;
                    }
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
        }
        Ok(Outcome {
            flows: self.times,
            stats: self.stats,
        })
    }

    /// Pops stale events off the top, and compacts the heap when stale events outnumber live ones
    /// (each rate change leaves one behind).
    fn drop_stale_drains(&mut self) {
        while let Some(&Reverse((_, f, v))) = self.drains.peek() {
            if v == self.version[f as usize] {
                break;
            }
            self.drains.pop();
        }
        if self.drains.len() > 2 * self.active_flows + 1024 {
            let version = &self.version;
            self.drains
                .retain(|&Reverse((_, f, v))| v == version[f as usize]);
        }
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
            let list = &mut self.solver.active[r];
            // Fits: a list holds at most one entry per flow, and flows are < u32::MAX.
            self.pos[e] = list.len() as u32;
            list.push((f as u32, e as u32));
            self.mark_changed(r);
        }
        self.remaining[f] = w.bytes[f] as f64;
        self.rate[f] = 0.0;
        self.since[f] = now;
        self.active_flows += 1;
        self.started = true;
    }

    /// The last byte of `f` has been sent: free its resources; it finishes one latency later.
    fn drain(&mut self, f: usize, now: Time) {
        let w = self.w;
        for e in w.path_range(f) {
            let r = w.path[e] as usize;
            let p = self.pos[e] as usize;
            let list = &mut self.solver.active[r];
            list.swap_remove(p);
            if let Some(&(_, moved)) = list.get(p) {
                self.pos[moved as usize] = p as u32;
            }
            self.mark_changed(r);
        }
        self.version[f] = self.version[f].wrapping_add(1);
        self.rate[f] = 0.0;
        self.remaining[f] = 0.0;
        self.active_flows -= 1;
        self.finish(f, now + self.w.latency[f]);
    }

    /// Records `f`'s finish and releases the flows waiting for it.
    fn finish(&mut self, f: usize, at: Time) {
        self.times[f].finish = at;
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

    /// Whether removing flows from the `freed` resources can change any remaining rate.
    ///
    /// Not if no remaining flow on a freed resource froze there (had it as its bottleneck). Then
    /// every remaining flow's bottleneck lost no flow: it is still saturated by the same flows and
    /// no flow on it is faster. Loads elsewhere only fell, so the old rates are feasible, and a
    /// feasible allocation in which every flow has such a bottleneck is the max-min fair one
    /// (Bertsekas & Gallager, *Data Networks*, 2nd ed., §6.5.2). The check reads the freed
    /// resources' lists once, far cheaper than a solve. It always holds for equal-sized flows
    /// started together: they finish in decreasing order of rate, and a flow that froze at a
    /// resource leaves no slower flow there that froze at that resource too.
    fn removal_changes_rates(&self, freed: &[u32]) -> bool {
        freed.iter().any(|&r| {
            self.solver.active[r as usize]
                .iter()
                .any(|&(g, _)| self.solver.bottleneck[g as usize] == r)
        })
    }

    /// Re-solves the component of the changed resources and reschedules flows whose rate moved.
    fn resolve(&mut self, now: Time, cancel: Cancel<'_>) -> Result<(), Cancelled> {
        let changed = std::mem::take(&mut self.changed);
        for &r in &changed {
            self.changed_flag[r as usize] = false;
        }
        let started = std::mem::replace(&mut self.started, false);
        if !started && self.skip_solves && !self.removal_changes_rates(&changed) {
            self.changed = changed;
            self.changed.clear();
            self.stats.skipped_solves += 1;
            return Ok(());
        }
        self.solver.solve(self.w, &changed, cancel)?;
        self.changed = changed;
        self.changed.clear();
        self.stats.solves += 1;
        self.stats.flows_solved += self.solver.comp_flows.len() as u64;
        for &f in &self.solver.comp_flows {
            let fi = f as usize;
            let old = self.rate[fi];
            let new = self.solver.new_rate[fi];
            if old > 0.0 && (new - old).abs() <= old * SAME_RATE {
                continue;
            }
            if old > 0.0 {
                let sent = old * (now - self.since[fi]).ps() as f64 / 1e12;
                self.remaining[fi] = (self.remaining[fi] - sent).max(0.0);
            }
            self.rate[fi] = new;
            self.since[fi] = now;
            self.version[fi] = self.version[fi].wrapping_add(1);
            // `as u64` saturates, and Time addition saturates: a drain past 2^64 ps is "never".
            let transfer = (self.remaining[fi] * 1e12 / new).round() as u64;
            let at = now + Time::from_ps(transfer);
            self.drains.push(Reverse((at, f, self.version[fi])));
            self.stats.reschedules += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(out.stats.solves, 1);
        assert!(out.stats.skipped_solves >= 2);
        assert_eq!(out.flows, simulate_without_skips(&w).flows);
        assert_eq!(out.flows[0].finish, Time::from_us(240));
        assert_eq!(out.flows[4].finish, Time::from_us(80));
    }

    #[test]
    fn skipping_solves_never_changes_results() {
        let mut rng = Rng(11);
        for case in 0..100 {
            let mut w = Workload::new();
            let nr = 2 + rng.below(10) as usize;
            let caps: Vec<f64> = (0..nr).map(|_| 1e9 * (1 + rng.below(4)) as f64).collect();
            let r = res(&mut w, &caps);
            let equal = case % 2 == 0;
            for _ in 0..1 + rng.below(60) {
                let mut path: Vec<ResourceId> = Vec::new();
                for _ in 0..1 + rng.below(3) {
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
                let start = if equal { 0 } else { rng.below(3) * 200 };
                flow(&mut w, &path, bytes, Time::from_us(start));
            }
            let fast = simulate(&w);
            let slow = simulate_without_skips(&w);
            assert_eq!(fast.flows, slow.flows, "case {case}");
            if equal {
                assert_eq!(fast.stats.solves, 1, "case {case}");
            }
        }
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
