//! The incremental re-solve (`Incremental`): the last solution kept as a bottleneck structure and
//! only the resources whose fill can change replayed.

use super::*;

/// The fill key of a resource that did not fill: all its flows froze elsewhere, or it has none.
pub(super) const NEVER: u64 = u64::MAX;
/// The bottleneck of a flow that has not been solved yet; also "no entry" in `Incremental`'s lists.
pub(super) const NONE: u32 = u32::MAX;

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
pub(super) struct Event {
    pub(super) key: u64,
    pub(super) resource: u32,
    pub(super) kind: u8,
    pub(super) a: u32,
    pub(super) b: u32,
}

/// What the incremental solver keeps per resource and reads on visits from outside the set (16
/// bytes, four to a cache line: a re-solve visits resources in no particular order, so the
/// records of 65,536 resources fit in 1 MB; the capacity and a member's slot, read only for the
/// few resources in the set, are kept apart).
#[derive(Debug, Clone, Copy)]
pub(super) struct ResourceState {
    /// The solution: the share the resource filled at (f64 bits), or `NEVER`.
    pub(super) fill: u64,
    /// `Incremental::set_epoch` while in the set being re-solved (its index there in
    /// `Incremental::slot`).
    pub(super) set: u32,
    /// `Incremental::run` once marked to join the set at the next replay.
    pub(super) grow: u32,
}

/// What the incremental solver keeps per flow, with the flow's path range (a copy of the
/// workload's offsets, so a visit to a flow reads one record).
#[derive(Debug, Clone, Copy)]
pub(super) struct FlowState {
    /// The solution: the resource the flow froze at, or `NONE` before its first solve.
    pub(super) bneck: u32,
    /// The resource it froze at in the current replay, valid when `frozen == Incremental::run`.
    pub(super) new_bneck: u32,
    pub(super) frozen: u32,
    /// The flow's path entries: `Workload::path[path..end]`.
    pub(super) path: u32,
    pub(super) end: u32,
}

impl FlowState {
    pub(super) fn path(&self) -> std::ops::Range<usize> {
        self.path as usize..self.end as usize
    }
}

/// How a replay ended.
pub(super) enum Replay {
    Closed,
    Grow,
    OverBudget,
}

pub(super) const FILL: u8 = 0;
pub(super) const OUTSIDE: u8 = 1;

/// What a replay keeps per member of the re-solved set.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// Remaining capacity and widths not frozen yet.
    pub(super) rem: f64,
    pub(super) units: u64,
    /// Share of the last freeze on it (the clamp; `NEVER` if none).
    pub(super) last: u64,
    /// Share it filled at in this replay (`NEVER` if not yet).
    pub(super) filled: u64,
    /// The level the latest freezes on it came at, and its state when that level began.
    pub(super) level: u64,
    pub(super) level_rem: f64,
    pub(super) level_units: u64,
    /// The key of its earliest fill event in the queue (`NEVER`: none). Fair shares only grow as
    /// flows freeze, so a share that grew is not queued again at once: the earlier event, when it
    /// comes, finds the share moved on and queues it then (see `fill_event`).
    pub(super) queued: u64,
    /// How many fills touched it at `level`, and the outside resources among them (a list in
    /// `Incremental::outside_log`).
    pub(super) level_touches: u32,
    pub(super) level_outside: u32,
    /// Whether it is listed in `Incremental::touched`.
    pub(super) touched: bool,
}

impl Slot {
    pub(super) const EMPTY: Slot = Slot {
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
pub(super) struct Incremental {
    /// Per resource: the solution and the marks of the current re-solve (one 16-byte record, as a
    /// re-solve visits resources in no particular order).
    pub(super) res: Vec<ResourceState>,
    /// Per resource in the set: its index there (and in `slots`).
    pub(super) slot: Vec<u32>,
    /// Per flow: the solution and the marks of the current replay.
    pub(super) flow: Vec<FlowState>,
    /// The set D: resources with `set == set_epoch`, listed in `set`.
    pub(super) set_epoch: u32,
    pub(super) set: Vec<u32>,
    /// One replay: `run` marks flows frozen and resources to add to the set (listed in `grow`).
    pub(super) run: u32,
    pub(super) frozen_list: Vec<u32>,
    pub(super) grow: Vec<u32>,
    /// Per member of the set, by its slot (see [`Slot`]).
    pub(super) slots: Vec<Slot>,
    pub(super) outside_log: Vec<(u32, u32)>,
    pub(super) touched: Vec<u32>,
    pub(super) scratch: Vec<(u64, u32, u32)>,
    pub(super) later: Vec<(u64, u32, u32)>,
    /// Work done by the replays of the current re-solve (flows looked at, events).
    pub(super) work: u64,
    /// The from-scratch solver, made on first use.
    pub(super) full: Option<Solver>,
    /// Levels of resources of the set where outside freezes came in an order that may matter:
    /// (head of their list in `outside_log`, level).
    pub(super) unplaced: Vec<(u32, u64)>,
    /// The replay's event queue, events encoded by `push_event`.
    pub(super) queue: BinaryHeap<Reverse<u128>>,
    /// `(a, b)` of the `OUTSIDE` events queued in this replay.
    pub(super) outside_events: Vec<(u32, u32)>,
}

impl Incremental {
    pub(super) fn new(w: &Workload) -> Incremental {
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
    pub(super) fn push_event(&mut self, ev: Event) {
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
    pub(super) fn decode(&self, code: u128) -> Event {
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

    pub(super) fn in_set(&self, r: u32) -> bool {
        self.res[r as usize].set == self.set_epoch
    }

    /// A flow the replay solves: it froze at a resource of D, or it is new.
    pub(super) fn inner(&self, f: u32) -> bool {
        let b = self.flow[f as usize].bneck;
        b == NONE || self.in_set(b)
    }

    /// The current rate of an active flow (after a re-solve that included it).
    pub(super) fn rate(&self, f: usize) -> f64 {
        f64::from_bits(self.res[self.flow[f].bneck as usize].fill)
    }

    pub(super) fn add_to_set(&mut self, r: u32) {
        self.res[r as usize].set = self.set_epoch;
        self.slot[r as usize] = self.set.len() as u32;
        self.set.push(r);
    }

    /// Re-solves after the active flows of the `roots` changed, and lists in `changed` the flows
    /// whose rate moved (or that are new). Afterwards `rate` gives every active flow's rate.
    /// `only_removed`: the change only took flows away. `budget`: work (flows looked at, events)
    /// past which the replay gives way to water-filling the roots' component from scratch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn solve(
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
    pub(super) fn removal_keeps_rates(&self, active: &ActiveLists, roots: &[u32]) -> bool {
        roots.iter().all(|&r| {
            active[r as usize]
                .iter()
                .all(|&(f, _)| self.flow[f as usize].bneck != r)
        })
    }

    /// Water-fills the component of the `roots` from scratch and takes its answer as the new
    /// solution there: for changes whose replay would cost more than that.
    pub(super) fn solve_from_scratch(
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
    pub(super) fn replay(
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
}
