//! The from-scratch water-filling: bottleneck-first progressive filling over resources' active
//! flow lists.

use super::*;

/// Entries a resource's active list holds in place before it moves to a vector of its own.
pub(super) const INLINE: usize = 3;

/// Active flows per resource, as (flow, index of the path entry); `active[r]` is resource r's
/// list as a slice. Most lists are short (a few flows per link under random traffic), so up to
/// [`INLINE`] entries sit in the resource's own 32-byte record: reading a short list costs one
/// cache line instead of a vector header and a separate allocation.
#[derive(Debug, Clone)]
pub(super) struct ActiveLists {
    pub(super) heads: Vec<ListHead>,
    /// Per resource: the list while longer than `INLINE` (empty otherwise, capacity kept).
    pub(super) spill: Vec<Vec<(u32, u32)>>,
}

#[derive(Debug, Clone, Copy)]
#[repr(C, align(32))]
pub(super) struct ListHead {
    pub(super) len: u32,
    pub(super) inline: [(u32, u32); INLINE],
}

impl ActiveLists {
    pub(super) fn new(resources: usize) -> ActiveLists {
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
    pub(super) fn push(&mut self, r: usize, entry: (u32, u32)) -> u32 {
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
    pub(super) fn swap_remove(&mut self, r: usize, p: usize) -> Option<(u32, u32)> {
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
pub(super) struct Solver {
    pub(super) capacity: Vec<f64>,
    /// Per resource, during a solve: capacity not yet given to frozen flows.
    pub(super) rem: Vec<f64>,
    /// Per resource, during a solve: widths of the active flows not frozen yet.
    pub(super) unfrozen: Vec<u64>,
    /// Per resource: bumped on every push so older queue entries are recognised as stale.
    pub(super) version: Vec<u32>,
    /// Per resource / per flow: `epoch` when in the current component.
    pub(super) res_mark: Vec<u32>,
    pub(super) flow_mark: Vec<u32>,
    /// Per flow: `epoch` once frozen in the current solve.
    pub(super) frozen_mark: Vec<u32>,
    /// Per flow: the rate from the latest solve that included it, and the resource it froze at.
    pub(super) new_rate: Vec<f64>,
    pub(super) bottleneck: Vec<u32>,
    /// Per resource: the share it filled at in the latest solve that included it (f64 bits), or
    /// `NEVER` if all its flows froze elsewhere.
    pub(super) filled: Vec<u64>,
    pub(super) touched_flag: Vec<bool>,
    pub(super) epoch: u32,
    pub(super) stack: Vec<u32>,
    pub(super) comp_flows: Vec<u32>,
    pub(super) comp_res: Vec<u32>,
    pub(super) touched: Vec<u32>,
    /// (fair share as f64 bits, resource, version), smallest first. Non-negative f64s order like
    /// their bit patterns, so the key is an integer and ties fall to the resource id.
    pub(super) queue: BinaryHeap<Reverse<(u64, u32, u32)>>,
}

impl Solver {
    pub(super) fn new(w: &Workload) -> Solver {
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

    pub(super) fn next_epoch(&mut self) {
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
    pub(super) fn solve(
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
