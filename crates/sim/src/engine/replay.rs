//! The incremental re-solve's replay of the water-filling over the resources that move.

use super::*;

impl Incremental {
    /// Appends the per-slot state of a new member of the set (its values are set by `init`).
    pub(super) fn new_slot(&mut self) {
        self.slots.push(Slot::EMPTY);
    }

    /// Sets up resource `x` of the set at the start of the replay: every flow on it that froze
    /// outside the set becomes an `OUTSIDE` event at the level it froze at.
    pub(super) fn init(&mut self, w: &Workload, active: &ActiveLists, x: u32) {
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

    pub(super) fn mark_grow(&mut self, r: u32) {
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
    pub(super) fn grow_unplaced_outside(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        head: u32,
        key: u64,
    ) {
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
    pub(super) fn level_start(
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
    pub(super) fn fill_event(&mut self, w: &Workload, active: &ActiveLists, ev: Event) {
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
    pub(super) fn outside_event(&mut self, first: Event) {
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
    pub(super) fn touch(&mut self, x: u32, key: u64, n: u32, outside: Option<u32>) {
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
    pub(super) fn share(&self, s: usize) -> u64 {
        let slot = &self.slots[s];
        fair_share(slot.rem, slot.units, slot.last).to_bits()
    }

    /// Queues the fill of resource `x` (slot `s`) at its share now.
    pub(super) fn queue_fill(&mut self, x: u32, s: usize) {
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
    pub(super) fn rekey(&mut self) {
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
    pub(super) fn end_level(&mut self, s: usize) {
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
    pub(super) fn check_outside(
        &mut self,
        w: &Workload,
        active: &ActiveLists,
        z: u32,
        key: u64,
        f: u32,
    ) {
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
    pub(super) fn try_join(
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
