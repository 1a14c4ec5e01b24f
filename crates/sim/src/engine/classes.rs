//! Flow classes: max-min sharing solved on a workload's quotient by its symmetry, where a class of
//! interchangeable flows is one flow that counts as many.
//!
//! # Method
//!
//! Flows that the network cannot tell apart get the same max-min rate: in an all-to-all on a
//! rail-optimized fat-tree, every GPU's transfer to a GPU of another scalable unit on its own rail
//! looks like every other. Such flows are found without knowing the fabric's structure, by *colour
//! refinement* (the one-dimensional Weisfeiler-Leman algorithm; Weisfeiler & Leman 1968, in the
//! form of Berkholz, Bonsma & Grohe, "Tight lower and upper bounds for the complexity of canonical
//! colour refinement", ESA 2013) on the bipartite graph of flows and the resources they cross:
//!
//! 1. Colour resources by capacity and flows by (bytes, start, latency).
//! 2. Recolour every resource by its colour and the multiset of (colour, width) of the flows that
//!    cross it; then every flow by its colour and the multiset of (colour, width) of its resources.
//! 3. Repeat until no class splits.
//!
//! The result is the coarsest *equitable partition* refining the first colouring: any two
//! resources of one class are crossed by the same number of flows of each flow class, and any two
//! flows of one class cross the same number of resources of each resource class. Progressive
//! filling (Bertsekas & Gallager, *Data Networks*, §6.5.2) respects such a partition: if every flow
//! of a class has one rate and every resource of a class has the same capacity left, then the
//! resources of a class have one fair share, fill together and freeze whole flow classes, which
//! leaves every resource of a class the same capacity again (by induction over the fills). So the
//! max-min rates are constant on flow classes, as linear programs are on equitable partitions
//! (Grohe, Kersting, Mladenov & Selman, "Dimension reduction via colour refinement", ESA 2014). The
//! same holds over time: a class's flows start together, move the same bytes, and finish together.
//!
//! The *quotient* has one resource per resource class (one member's capacity) and one flow per flow
//! class, crossing each resource class with a width (`Workload::add_flow_with_widths`): the number
//! of the class's flows that cross one member. On the quotient, the engine's water-filling makes
//! the same decisions as on the whole workload, class for class; only the order of floating-point
//! operations can differ, so rates agree to rounding (the tests hold them to 1e-9 relative, the
//! issue's contract to 0.1%).
//!
//! Where the network has no symmetry (ECMP hashes, failed links, imported routes) classes split
//! down to single flows and nothing is gained; callers then run the per-flow engine on the
//! original workload (see [`Quotient::worth_it`]).
//!
//! # Exactness of the partition
//!
//! Step 2 compares multisets by two independent 64-bit sums of mixed elements, so two classes
//! could in principle be merged by a hash collision. [`quotient`] therefore checks the result
//! exactly (sorted multisets, flow by flow and resource by resource) and returns `None` when the
//! partition is not equitable: a collision can cost speed, never correctness.
//!
//! Workloads whose flows wait for other flows are not reduced (`None`): a dependency would have to
//! be part of a flow's colour, which one simulated step of a collective does not need.

use crate::cancel::{Cancel, Cancelled};
use crate::engine::{Flow, FlowTimes, ResourceId, Workload};

/// A workload's quotient by its coarsest equitable partition, and how to map results back.
#[derive(Debug, Clone)]
pub struct Quotient {
    /// One resource per resource class that some flow crosses, one flow per flow class (class
    /// order: by the colour refinement's final colours).
    pub workload: Workload,
    /// Per flow of the original workload: its class, a flow index of `workload`.
    pub class_of: Vec<u32>,
    /// Per class: how many flows of the original it stands for.
    pub count: Vec<u32>,
}

impl Quotient {
    /// Number of flow classes.
    pub fn classes(&self) -> usize {
        self.count.len()
    }

    /// Whether simulating the quotient saves enough to pay for mapping back: at most half as many
    /// classes as flows.
    pub fn worth_it(&self) -> bool {
        2 * self.classes() <= self.class_of.len()
    }

    /// Per-class values (times, rates) spread to every flow of the original workload.
    pub fn expand<T: Copy>(&self, per_class: &[T]) -> Vec<T> {
        self.class_of
            .iter()
            .map(|&c| per_class[c as usize])
            .collect()
    }

    /// Per-class [`FlowTimes`] spread to every flow.
    pub fn expand_times(&self, per_class: &[FlowTimes]) -> Vec<FlowTimes> {
        self.expand(per_class)
    }
}

/// Divides every resource's capacity and the widths of the flows crossing it by the greatest
/// common divisor of those widths. Max-min rates do not change: a resource limits
/// `sum(width x rate) <= capacity`, and dividing both sides by one number is the same constraint,
/// its fair share `capacity left / widths not frozen` the same share (to rounding). The engine's
/// work on a resource grows with the widths crossing it, so a quotient whose widths count
/// thousands of flows per member (an all-to-all at 100,000 GPUs) runs as fast as a small one.
pub fn divide_widths(w: &mut Workload) {
    if w.width.is_empty() {
        return;
    }
    let mut g = vec![0u32; w.resources()];
    for (e, &r) in w.path.iter().enumerate() {
        g[r as usize] = gcd(g[r as usize], w.width[e]);
    }
    for (e, &r) in w.path.iter().enumerate() {
        w.width[e] /= g[r as usize].max(1);
    }
    for (c, &d) in w.capacity.iter_mut().zip(&g) {
        if d > 1 {
            *c /= f64::from(d);
        }
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Two independent mixes of a (colour, width) element, summed over a multiset: SplitMix64's
/// finalizer (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014)
/// with two different offsets.
pub(crate) fn mix(x: u64, seed: u64) -> u64 {
    let mut z = x.wrapping_add(seed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) const SEED_A: u64 = 0x9e37_79b9_7f4a_7c15;
pub(crate) const SEED_B: u64 = 0xd1b5_4a32_d192_ed03;

/// Ranks `keys` densely in sorted order: equal keys get equal ranks, so the result depends only on
/// the keys, not on the sort's handling of ties. Returns the ranks and how many distinct keys.
pub(crate) fn rank<K: Ord + Copy>(keys: &[K]) -> (Vec<u32>, u32) {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by_key(|&i| keys[i as usize]);
    let mut out = vec![0u32; keys.len()];
    let mut next = 0u32;
    for (k, &i) in order.iter().enumerate() {
        if k > 0 && keys[i as usize] != keys[order[k - 1] as usize] {
            next += 1;
        }
        out[i as usize] = next;
    }
    let distinct = if keys.is_empty() { 0 } else { next + 1 };
    (out, distinct)
}

/// One element of a multiset: a colour and a width, packed.
fn element(colour: u32, width: u32) -> u64 {
    (u64::from(colour) << 32) | u64::from(width)
}

/// The coarsest equitable partition of `w`'s flows and resources and the quotient by it; `None`
/// when `w` has dependencies, or (never seen) the refined colouring failed the exact check.
/// Reads `cancel` once per refinement round and check.
pub fn quotient(w: &Workload, cancel: Cancel<'_>) -> Result<Option<Quotient>, Cancelled> {
    if !w.deps.is_empty() {
        return Ok(None);
    }
    let (nf, nr) = (w.flows(), w.resources());
    let flow_keys: Vec<(u64, u64, u64, u64)> = (0..nf)
        .map(|f| {
            (
                w.bytes[f],
                w.start[f].ps(),
                w.latency[f].ps(),
                w.units_of(f),
            )
        })
        .collect();
    let (mut fcol, mut nfc) = rank(&flow_keys);
    drop(flow_keys);
    let cap_keys: Vec<u64> = w.capacity.iter().map(|c| c.to_bits()).collect();
    let (mut rcol, mut nrc) = rank(&cap_keys);
    drop(cap_keys);
    let mut ha = vec![0u64; nr];
    let mut hb = vec![0u64; nr];
    loop {
        cancel.check()?;
        ha.fill(0);
        hb.fill(0);
        for (f, &c) in fcol.iter().enumerate() {
            for e in w.path_range(f) {
                let r = w.path[e] as usize;
                let x = element(c, w.width_of(e));
                ha[r] = ha[r].wrapping_add(mix(x, SEED_A));
                hb[r] = hb[r].wrapping_add(mix(x, SEED_B));
            }
        }
        let keys: Vec<(u32, u64, u64)> = (0..nr).map(|r| (rcol[r], ha[r], hb[r])).collect();
        let (new_rcol, new_nrc) = rank(&keys);
        drop(keys);
        let keys: Vec<(u32, u64, u64)> = (0..nf)
            .map(|f| {
                let (mut a, mut b) = (0u64, 0u64);
                for e in w.path_range(f) {
                    let x = element(new_rcol[w.path[e] as usize], w.width_of(e));
                    a = a.wrapping_add(mix(x, SEED_A));
                    b = b.wrapping_add(mix(x, SEED_B));
                }
                (fcol[f], a, b)
            })
            .collect();
        let (new_fcol, new_nfc) = rank(&keys);
        drop(keys);
        let stable = new_nrc == nrc && new_nfc == nfc;
        rcol = new_rcol;
        fcol = new_fcol;
        nrc = new_nrc;
        nfc = new_nfc;
        if stable {
            break;
        }
    }
    cancel.check()?;
    if !equitable(w, &fcol, nfc, &rcol, nrc) {
        return Ok(None);
    }
    Ok(build(w, &fcol, nfc, &rcol, nrc))
}

/// The exact check: every flow of a class crosses the same multiset of (resource class, width),
/// and every resource of a class is crossed by the same multiset of (flow class, width).
fn equitable(w: &Workload, fcol: &[u32], nfc: u32, rcol: &[u32], nrc: u32) -> bool {
    // Flows: the first flow of each class is its representative.
    let mut rep = vec![u32::MAX; nfc as usize];
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for (f, &c) in fcol.iter().enumerate() {
        let c = c as usize;
        if rep[c] == u32::MAX {
            rep[c] = f as u32;
            continue;
        }
        let r0 = rep[c] as usize;
        if w.path_range(f).len() != w.path_range(r0).len() {
            return false;
        }
        for (out, g) in [(&mut mine, f), (&mut theirs, r0)] {
            out.clear();
            out.extend(
                w.path_range(g)
                    .map(|e| element(rcol[w.path[e] as usize], w.width_of(e))),
            );
            out.sort_unstable();
        }
        if mine != theirs {
            return false;
        }
    }
    // Resources: incidences gathered per resource (counting sort), each list sorted. Without
    // widths an incidence is its flow class alone (half the memory).
    if w.width.is_empty() {
        resources_equitable(w, rcol, nrc, fcol, |c, _| c)
    } else {
        resources_equitable(w, rcol, nrc, fcol, element)
    }
}

/// The resource side of [`equitable`], incidences as `T`s made from (flow class, width).
fn resources_equitable<T: Ord + Copy + Default>(
    w: &Workload,
    rcol: &[u32],
    nrc: u32,
    fcol: &[u32],
    make: impl Fn(u32, u32) -> T,
) -> bool {
    let nr = w.resources();
    let mut offset = vec![0u64; nr + 1];
    for &r in &w.path {
        offset[r as usize + 1] += 1;
    }
    for r in 0..nr {
        offset[r + 1] += offset[r];
    }
    let mut fill = offset.clone();
    let mut inc = vec![T::default(); w.path.len()];
    for (f, &c) in fcol.iter().enumerate() {
        for e in w.path_range(f) {
            let r = w.path[e] as usize;
            inc[fill[r] as usize] = make(c, w.width_of(e));
            fill[r] += 1;
        }
    }
    drop(fill);
    let list = |r: usize| offset[r] as usize..offset[r + 1] as usize;
    let mut rep = vec![u32::MAX; nrc as usize];
    for r in 0..nr {
        inc[list(r)].sort_unstable();
        let c = rcol[r] as usize;
        if rep[c] == u32::MAX {
            rep[c] = r as u32;
        } else if inc[list(r)] != inc[list(rep[c] as usize)] {
            return false;
        }
    }
    true
}

/// The quotient of an equitable partition; `None` if a width would not fit a `u32` (or, for a
/// partition that is not equitable, not divide evenly).
fn build(w: &Workload, fcol: &[u32], nfc: u32, rcol: &[u32], nrc: u32) -> Option<Quotient> {
    let mut count = vec![0u32; nfc as usize];
    let mut rep = vec![u32::MAX; nfc as usize];
    for (f, &c) in fcol.iter().enumerate() {
        let c = c as usize;
        count[c] += 1;
        if rep[c] == u32::MAX {
            rep[c] = f as u32;
        }
    }
    let mut rsize = vec![0u64; nrc as usize];
    for &c in rcol {
        rsize[c as usize] += 1;
    }
    // Quotient resources: the classes some flow crosses, in class order.
    let mut crossed = vec![false; nrc as usize];
    for &r in &w.path {
        crossed[rcol[r as usize] as usize] = true;
    }
    let mut q = Workload::new();
    let mut id = vec![u32::MAX; nrc as usize];
    let mut rep_res = vec![u32::MAX; nrc as usize];
    for (r, &c) in rcol.iter().enumerate() {
        let c = c as usize;
        if rep_res[c] == u32::MAX {
            rep_res[c] = r as u32;
        }
    }
    for c in 0..nrc as usize {
        if crossed[c] {
            // Capacities are positive and finite: the original accepted them.
            id[c] = q
                .add_resource(w.capacity[rep_res[c] as usize])
                .ok()?
                .index() as u32;
        }
    }
    let mut per_class: Vec<(u32, u64)> = Vec::new();
    let mut path: Vec<ResourceId> = Vec::new();
    let mut widths: Vec<u32> = Vec::new();
    for c in 0..nfc as usize {
        let f0 = rep[c] as usize;
        per_class.clear();
        for e in w.path_range(f0) {
            per_class.push((rcol[w.path[e] as usize], u64::from(w.width_of(e))));
        }
        per_class.sort_unstable();
        path.clear();
        widths.clear();
        let mut i = 0;
        while i < per_class.len() {
            let rc = per_class[i].0;
            let mut sum = 0u64;
            while i < per_class.len() && per_class[i].0 == rc {
                sum += per_class[i].1;
                i += 1;
            }
            // Incidences of the class on resource class rc, shared evenly by its members.
            let total = u64::from(count[c]) * sum;
            let members = rsize[rc as usize];
            if !total.is_multiple_of(members) {
                return None;
            }
            widths.push(u32::try_from(total / members).ok()?);
            path.push(ResourceId::from_index(id[rc as usize]));
        }
        q.add_flow_in_units(
            &Flow {
                path: &path,
                bytes: w.bytes[f0],
                start: w.start[f0],
                latency: w.latency[f0],
                ..Flow::default()
            },
            &widths,
            w.units_of(f0),
        )
        .ok()?;
    }
    Some(Quotient {
        workload: q,
        class_of: fcol.to_vec(),
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{max_min_rates, simulate};
    use crate::time::Time;

    /// Whole-workload and quotient results agree flow for flow, to `tol` relative.
    fn check(w: &Workload, tol: f64) -> Quotient {
        let q = quotient(w, Cancel::NEVER).unwrap().expect("reducible");
        let full = max_min_rates(w);
        let by_class = q.expand(&max_min_rates(&q.workload));
        for (f, (a, b)) in full.iter().zip(&by_class).enumerate() {
            assert!(
                (a - b).abs() <= tol * a.abs() || a == b,
                "flow {f}: rate {a} vs {b}"
            );
        }
        let full = simulate(w).flows;
        let by_class = q.expand_times(&simulate(&q.workload).flows);
        for (f, (a, b)) in full.iter().zip(&by_class).enumerate() {
            assert_eq!(a.start, b.start, "flow {f}");
            let (x, y) = (a.finish.ps() as f64, b.finish.ps() as f64);
            assert!((x - y).abs() <= tol * x + 1.0, "flow {f}: {x} vs {y} ps");
        }
        q
    }

    /// An all-to-all among `n` hosts, each with an uplink and a downlink of 12.5 GB/s, on a
    /// non-blocking switch: every flow is alike, so one class.
    #[test]
    fn all_to_all_on_one_switch_is_one_class() {
        let n = 16;
        let mut w = Workload::new();
        let up: Vec<_> = (0..n).map(|_| w.add_resource(12.5e9).unwrap()).collect();
        let down: Vec<_> = (0..n).map(|_| w.add_resource(12.5e9).unwrap()).collect();
        for (s, &u) in up.iter().enumerate() {
            for (d, &v) in down.iter().enumerate() {
                if s != d {
                    w.add_flow(&Flow {
                        path: &[u, v],
                        bytes: 1 << 20,
                        latency: Time::from_ns(500),
                        ..Flow::default()
                    })
                    .unwrap();
                }
            }
        }
        let q = check(&w, 1e-12);
        assert_eq!(q.classes(), 1);
        assert_eq!(q.count, [240]);
        // One resource class (up and down links alike), each member crossed by 15 of the flows.
        assert_eq!(q.workload.resources(), 1);
        assert_eq!(q.workload.width, [15]);
    }

    /// Two hosts behind a slower link are told apart from the rest, and so are their flows.
    #[test]
    fn asymmetry_splits_classes() {
        let n = 8;
        let mut w = Workload::new();
        let up: Vec<_> = (0..n)
            .map(|i| w.add_resource(if i < 2 { 5e9 } else { 12.5e9 }).unwrap())
            .collect();
        let down: Vec<_> = (0..n).map(|_| w.add_resource(12.5e9).unwrap()).collect();
        for (s, &u) in up.iter().enumerate() {
            for (d, &v) in down.iter().enumerate() {
                if s != d {
                    w.add_flow(&Flow {
                        path: &[u, v],
                        bytes: 1 << 20,
                        ..Flow::default()
                    })
                    .unwrap();
                }
            }
        }
        let q = check(&w, 1e-12);
        assert!(q.classes() > 1 && q.classes() < 56, "{}", q.classes());
    }

    /// Random workloads with planted symmetry: a random network copied `k` times side by side
    /// with shared "core" resources crossed by every copy's flows the same way. Results agree.
    #[test]
    fn copies_of_a_random_network_reduce_to_one_copy() {
        let mut state = 7u64;
        let mut next = |n: u64| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            mix(state, 0) % n
        };
        for case in 0..60 {
            let base_res = 2 + next(6) as usize;
            let base_flows = 1 + next(12) as usize;
            let k = 2 + next(4) as usize;
            let core = next(3) as usize;
            let caps: Vec<f64> = (0..base_res)
                .map(|_| [10e9, 12.5e9, 25e9][next(3) as usize])
                .collect();
            let core_caps: Vec<f64> = (0..core).map(|_| [40e9, 50e9][next(2) as usize]).collect();
            let mut flows = Vec::new();
            for _ in 0..base_flows {
                let mut p: Vec<usize> = Vec::new();
                for _ in 0..1 + next(3) {
                    let r = next(base_res as u64) as usize;
                    if !p.contains(&r) {
                        p.push(r);
                    }
                }
                let c = (core > 0 && next(2) == 0).then(|| next(core as u64) as usize);
                let bytes = [1u64 << 20, 3 << 19, 1 << 21][next(3) as usize];
                let start = Time::from_ns(next(3) * 1000);
                flows.push((p, c, bytes, start));
            }
            let mut w = Workload::new();
            let core_ids: Vec<_> = core_caps
                .iter()
                .map(|&c| w.add_resource(c).unwrap())
                .collect();
            let mut ids = Vec::new();
            for _ in 0..k {
                ids.push(
                    caps.iter()
                        .map(|&c| w.add_resource(c).unwrap())
                        .collect::<Vec<_>>(),
                );
            }
            for copy in &ids {
                for (p, c, bytes, start) in &flows {
                    let mut path: Vec<ResourceId> = p.iter().map(|&r| copy[r]).collect();
                    if let Some(c) = c {
                        path.push(core_ids[*c]);
                    }
                    w.add_flow(&Flow {
                        path: &path,
                        bytes: *bytes,
                        start: *start,
                        ..Flow::default()
                    })
                    .unwrap();
                }
            }
            let q = quotient(&w, Cancel::NEVER).unwrap().expect("reducible");
            assert!(
                q.classes() <= base_flows,
                "case {case}: {} classes",
                q.classes()
            );
            check(&w, 1e-9);
        }
    }

    /// The exact check refuses partitions that are not equitable (what a hash collision would
    /// produce), on either side.
    #[test]
    fn the_check_refuses_a_partition_that_is_not_equitable() {
        let mut w = Workload::new();
        let r: Vec<_> = (0..3).map(|_| w.add_resource(1e9).unwrap()).collect();
        for path in [&[r[0], r[1]][..], &[r[0]], &[r[2]]] {
            w.add_flow(&Flow {
                path,
                bytes: 10,
                ..Flow::default()
            })
            .unwrap();
        }
        // Colour refinement tells every flow apart here, and its partition passes.
        let q = quotient(&w, Cancel::NEVER).unwrap().expect("checked");
        assert_eq!(q.classes(), 3);
        // All resources alike: r0 carries two flows, r2 one.
        assert!(!equitable(&w, &[0, 1, 2], 3, &[0, 0, 0], 1));
        // All flows alike: flow 0 crosses two resources, flow 1 one.
        assert!(!equitable(&w, &[0, 0, 0], 1, &[0, 1, 2], 3));
        // With widths too.
        let mut v = Workload::new();
        let a = v.add_resource(1e9).unwrap();
        let b = v.add_resource(1e9).unwrap();
        v.add_flow_with_widths(
            &Flow {
                path: &[a, b],
                bytes: 10,
                ..Flow::default()
            },
            &[1, 2],
        )
        .unwrap();
        assert!(!equitable(&v, &[0], 1, &[0, 0], 1));
        assert!(equitable(&v, &[0], 1, &[0, 1], 2));
    }

    #[test]
    fn dependencies_are_not_reduced() {
        let mut w = Workload::new();
        let r = w.add_resource(1e9).unwrap();
        let a = w
            .add_flow(&Flow {
                path: &[r],
                bytes: 10,
                ..Flow::default()
            })
            .unwrap();
        w.add_flow(&Flow {
            path: &[r],
            bytes: 10,
            after: &[a],
            ..Flow::default()
        })
        .unwrap();
        assert!(quotient(&w, Cancel::NEVER).unwrap().is_none());
    }
}
