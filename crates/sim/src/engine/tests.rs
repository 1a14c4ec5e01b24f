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
        crate::net::routing::mix64(&mut self.0)
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
