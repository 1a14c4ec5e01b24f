use super::*;
use crate::net::rates::INFINIBAND;
use crate::net::routing::{build, RoutingConfig, RoutingKind};
use crate::traffic;

const MB: u64 = 1_000_000;

fn net(hosts: u32, k: u32, spines: u32, format: Option<PacketFormat>) -> LeafSpine {
    LeafSpine::new(LeafSpineConfig {
        hosts,
        hosts_per_leaf: k,
        spines,
        link_gbps: 100.0,
        hop_latency: Time::from_ns(100),
        packet_format: format,
    })
    .unwrap()
}

fn run(net: &LeafSpine, kind: RoutingKind, pairs: &[(u32, u32)], bytes: u64) -> Vec<FlowResult> {
    let flows: Vec<HostFlow> = pairs
        .iter()
        .map(|&(src, dst)| HostFlow {
            src,
            dst,
            bytes,
            start: Time::ZERO,
        })
        .collect();
    let routing = build(kind, RoutingConfig::default());
    simulate(net, routing.as_ref(), &flows).unwrap().flows
}

fn makespan(results: &[FlowResult]) -> Time {
    results.iter().map(|r| r.finish).max().unwrap()
}

#[test]
fn lone_flow_on_ideal_and_infiniband_links() {
    // Ideal 100 Gb/s: 1 MB in 80 us exactly, plus 4 hops of 100 ns.
    let ideal = net(8, 4, 2, None);
    let r = run(&ideal, RoutingKind::DModK, &[(0, 5)], MB);
    assert_eq!(r[0].finish, Time::from_us(80) + Time::from_ns(400));
    assert_eq!(r[0].fct(), r[0].ideal);
    // Same leaf: two hops.
    let r = run(&ideal, RoutingKind::DModK, &[(0, 1)], MB);
    assert_eq!(r[0].finish, Time::from_us(80) + Time::from_ns(200));
    // InfiniBand headers: 1 MiB x 4122/4096 at 12.5 GB/s = 84.41856 us, an exact number of
    // picoseconds, computed here in integers; 1 MB gives 80507812.5 ps, a tie that rounds up.
    let ib = net(8, 4, 2, Some(INFINIBAND));
    let exact_ps = |bytes: u128| {
        let (num, den) = (bytes * 8 * 4122 * 1_000_000_000_000, 100_000_000_000 * 4096);
        ((num + den / 2) / den) as u64
    };
    for bytes in [1 << 20, MB, 12_345] {
        let r = run(&ib, RoutingKind::DModK, &[(0, 5)], bytes);
        assert_eq!(
            r[0].finish,
            Time::from_ps(exact_ps(u128::from(bytes))) + Time::from_ns(400)
        );
    }
}

#[test]
fn two_flows_into_one_host_get_half_each() {
    let n = net(8, 4, 2, None);
    let r = run(&n, RoutingKind::DModK, &[(0, 5), (1, 5)], MB);
    for x in &r {
        assert_eq!(x.finish, Time::from_us(160) + Time::from_ns(400));
    }
}

/// Shift permutation i -> i + H/2 on a non-blocking leaf-spine (K = S) with D-mod-K: every flow
/// has its own up-link and down-link, so all finish at exactly S / B + path latency.
#[test]
fn shift_permutation_with_dmodk_is_collision_free() {
    let (h, k) = (64, 8);
    let n = net(h, k, k, None);
    let pairs = traffic::shift(h, h / 2);
    let r = run(&n, RoutingKind::DModK, &pairs, 10 * MB);
    for x in &r {
        assert_eq!(x.finish, Time::from_us(800) + Time::from_ns(400));
    }
}

/// Random permutation with D-mod-K: makespan n x S / B + path latency, n the largest number of
/// flows on one leaf->spine up-link, counted here independently of the simulator.
#[test]
fn random_permutation_with_dmodk_is_set_by_the_busiest_up_link() {
    let (h, k) = (256, 16);
    let n = net(h, k, k, None);
    for seed in 0..5 {
        let pairs = traffic::permutation(h, seed);
        let mut on_link = std::collections::BTreeMap::new();
        for &(s, d) in &pairs {
            if s / k != d / k {
                *on_link.entry((s / k, d % k)).or_insert(0u64) += 1;
            }
        }
        let most = on_link.values().copied().max().unwrap_or(1);
        let r = run(&n, RoutingKind::DModK, &pairs, MB);
        assert_eq!(
            makespan(&r),
            Time::from_us(80 * most) + Time::from_ns(400),
            "seed {seed}, {most} flows on the busiest up-link"
        );
    }
}

fn worst_ratio(r: &[FlowResult]) -> f64 {
    r.iter()
        .map(|x| x.fct().ps() as f64 / x.ideal.ps() as f64)
        .fold(0.0, f64::max)
}

#[test]
fn ecmp_collides_and_adaptive_does_not() {
    let (h, k) = (256, 16);
    let n = net(h, k, k, None);
    let pairs = traffic::permutation(h, 1);
    let ecmp = worst_ratio(&run(&n, RoutingKind::Ecmp, &pairs, 10 * MB));
    let adaptive = worst_ratio(&run(&n, RoutingKind::Adaptive, &pairs, 10 * MB));
    assert!(ecmp >= 3.0, "ECMP slowest flow only {ecmp:.2}x ideal");
    assert!(
        adaptive < 1.01,
        "adaptive slowest flow {adaptive:.4}x ideal"
    );
}

#[test]
fn flows_spread_over_every_spine_fold_into_one_engine_flow_each() {
    // Random pairs (some on one leaf), sizes a multiple of the spine count so the per-flow
    // parts are equal, staggered starts: the folded run gives every host flow the finish time
    // of the sub-flow by sub-flow run.
    let n = net(48, 6, 4, Some(INFINIBAND));
    let routing = build(RoutingKind::Adaptive, RoutingConfig::default());
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |m: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % m
    };
    let flows: Vec<HostFlow> = (0..300)
        .map(|_| {
            let src = next(48) as u32;
            let dst = (src + 1 + next(47) as u32) % 48;
            HostFlow {
                src,
                dst,
                bytes: 4 * (1 + next(2_000_000)),
                start: Time::from_ns(next(50_000)),
            }
        })
        .collect();
    let folded = simulate_with(&n, routing.as_ref(), &flows, true, &Watch::new()).unwrap();
    let each = simulate_with(&n, routing.as_ref(), &flows, false, &Watch::new()).unwrap();
    assert_eq!(folded.sub_flows, each.sub_flows);
    for (i, (a, b)) in folded.flows.iter().zip(&each.flows).enumerate() {
        let (fa, fb) = (a.finish.ps() as f64, b.finish.ps() as f64);
        assert!(
            (fa - fb).abs() <= 1e-9 * fb + 2.0,
            "flow {i}: folded {fa} ps, sub-flow by sub-flow {fb} ps"
        );
    }
    // ECMP is not spread: simulated sub-flow by sub-flow, as before.
    let ecmp = build(RoutingKind::Ecmp, RoutingConfig::default());
    let a = simulate_with(&n, ecmp.as_ref(), &flows, true, &Watch::new()).unwrap();
    let b = simulate_with(&n, ecmp.as_ref(), &flows, false, &Watch::new()).unwrap();
    assert_eq!(a.flows, b.flows);
}

#[test]
fn qps_split_a_connection_into_sub_flows() {
    let n = net(8, 4, 2, None);
    let routing = build(
        RoutingKind::Ecmp,
        RoutingConfig {
            seed: 0,
            qps_per_connection: 4,
        },
    );
    let flows = [HostFlow {
        src: 0,
        dst: 5,
        bytes: 10,
        start: Time::ZERO,
    }];
    let run = simulate(&n, routing.as_ref(), &flows).unwrap();
    assert_eq!(run.sub_flows, 4);
}

#[test]
fn bad_configs_and_flows_are_rejected() {
    let mut cfg = LeafSpineConfig {
        hosts: 8,
        hosts_per_leaf: 4,
        spines: 2,
        link_gbps: 100.0,
        hop_latency: Time::ZERO,
        packet_format: None,
    };
    assert!(LeafSpine::new(cfg).is_ok());
    cfg.spines = 0;
    assert!(LeafSpine::new(cfg).is_err());
    cfg.spines = 2;
    cfg.link_gbps = f64::NAN;
    assert!(LeafSpine::new(cfg).is_err());
    let n = net(8, 4, 2, None);
    let r = build(RoutingKind::DModK, RoutingConfig::default());
    let flow = |src, dst| HostFlow {
        src,
        dst,
        bytes: 1,
        start: Time::ZERO,
    };
    assert!(matches!(
        simulate(&n, r.as_ref(), &[flow(0, 8)]),
        Err(SimError::BadFlow { flow: 0, .. })
    ));
    assert!(simulate(&n, r.as_ref(), &[flow(0, 1), flow(3, 3)]).is_err());
}

#[test]
fn uneven_last_leaf() {
    // 10 hosts, 4 per leaf: leaves 0..=2, the last with 2 hosts.
    let n = net(10, 4, 2, None);
    assert_eq!(n.leaves(), 3);
    let r = run(&n, RoutingKind::Ecmp, &[(9, 0), (0, 9)], MB);
    for x in &r {
        assert_eq!(x.fct(), x.ideal);
    }
}
