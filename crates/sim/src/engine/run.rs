//! The running simulation: flows' progress, their drain times, the event loop.

use super::*;

/// Every active flow's drain time, earliest first, ties by flow id: an indexed 4-ary heap (one
/// entry per flow, its position kept per flow, so a new drain time moves the entry in place: no
/// stale entries to pop later; a 4-ary heap is half as deep as a binary one and its children share
/// a cache line).
#[derive(Debug, Clone)]
pub(super) struct DrainQueue {
    pub(super) heap: Vec<(Time, u32)>,
    /// Per flow: its index in `heap`, or `NONE`.
    pub(super) pos: Vec<u32>,
}

impl DrainQueue {
    pub(super) fn new(flows: usize) -> DrainQueue {
        DrainQueue {
            heap: Vec::new(),
            pos: vec![NONE; flows],
        }
    }

    pub(super) fn peek(&self) -> Option<(Time, u32)> {
        self.heap.first().copied()
    }

    /// Sets flow `f` to drain at `at`, whether or not it had a drain time.
    pub(super) fn set(&mut self, f: u32, at: Time) {
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
    pub(super) fn pop(&mut self) {
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

    pub(super) fn up(&mut self, mut i: usize) {
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

    pub(super) fn down(&mut self, mut i: usize) {
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
pub(super) struct Progress {
    pub(super) remaining: f64,
    pub(super) rate: f64,
    pub(super) since: Time,
}

/// The running simulation: the solver plus per-flow progress and the event queues.
pub(super) struct Engine<'w> {
    pub(super) w: &'w Workload,
    /// Per resource: the active flows crossing it.
    pub(super) active: ActiveLists,
    pub(super) solver: Incremental,
    /// Flows whose rate a re-solve moved.
    pub(super) moved: Vec<u32>,
    /// Tests only: solve each change's component from scratch instead (the reference).
    #[cfg(test)]
    pub(super) full: Option<Solver>,
    /// Tests only: check every incremental re-solve against a from-scratch one, bit for bit.
    #[cfg(test)]
    pub(super) verify: bool,
    pub(super) times: Vec<FlowTimes>,
    /// Per flow: how far it got.
    pub(super) progress: Vec<Progress>,
    /// Per path entry: position of the flow in that resource's active list.
    pub(super) pos: Vec<u32>,
    /// Per flow: flows it still waits for, and the earliest start those allow so far.
    pub(super) waiting: Vec<u32>,
    pub(super) ready: Vec<Time>,
    pub(super) dependents_offset: Vec<u32>,
    pub(super) dependents: Vec<u32>,
    /// Flows whose dependencies are all done, by (start, id).
    pub(super) released: BinaryHeap<Reverse<(Time, u32)>>,
    /// Drain events: each active flow's drain time, earliest first.
    pub(super) drains: DrainQueue,
    pub(super) changed: Vec<u32>,
    pub(super) changed_flag: Vec<bool>,
    /// Whether the current batch started a flow that occupies resources.
    pub(super) started: bool,
    pub(super) active_flows: usize,
    /// Path entries of the active flows: the size of a from-scratch solve of everything.
    pub(super) active_entries: u64,
    /// The least work an incremental re-solve may do before it gives way to a from-scratch one.
    pub(super) min_budget: u64,
    /// Flows finished so far (for a [`Watch`]).
    pub(super) finished: u64,
    pub(super) stats: EngineStats,
}

impl<'w> Engine<'w> {
    pub(super) fn new(w: &'w Workload) -> Engine<'w> {
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

    pub(super) fn run(
        mut self,
        cancel: Cancel<'_>,
        watch: Option<&Watch>,
    ) -> Result<Outcome, Cancelled> {
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

    pub(super) fn mark_changed(&mut self, r: usize) {
        if !self.changed_flag[r] {
            self.changed_flag[r] = true;
            self.changed.push(r as u32);
        }
    }

    pub(super) fn start(&mut self, f: usize, now: Time) {
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
    pub(super) fn drain(&mut self, f: usize, now: Time) {
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
    pub(super) fn finish(&mut self, f: usize, at: Time) {
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
    pub(super) fn resolve(&mut self, now: Time, cancel: Cancel<'_>) -> Result<(), Cancelled> {
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
    pub(super) fn set_rate(&mut self, f: usize, new: f64, now: Time) {
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
    pub(super) fn verify_rates(&self) {
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
