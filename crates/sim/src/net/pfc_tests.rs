//! Tests of `net::pfc`: analytic cases of the PFC fluid.

use super::*;
use crate::engine::Flow;
use crate::net::rates::ROCE_V2_COMPLETED;

/// 400 Gb/s RoCEv2 links, 1 us hops, htsim's thresholds.
fn timing() -> Pfc {
    Pfc::htsim(&ROCE_V2_COMPLETED, 400.0, Time::from_us(1))
}

/// Finish times (us) of flows of `bytes` on `paths` over resources of capacity `caps` (bytes/s),
/// each flow's latency its hops' one-way latency (no completion terms).
fn run(caps: &[f64], paths: &[&[u32]], bytes: u64, pfc: Pfc) -> Vec<f64> {
    let mut w = Workload::new();
    let ids: Vec<_> = caps.iter().map(|&c| w.add_resource(c).unwrap()).collect();
    for p in paths {
        let path: Vec<_> = p.iter().map(|&i| ids[i as usize]).collect();
        w.add_flow(&Flow {
            path: &path,
            bytes,
            latency: pfc.hop_latency.saturating_mul(p.len() as u64),
            ..Flow::default()
        })
        .unwrap();
    }
    simulate(&w, pfc)
        .flows
        .iter()
        .map(|f| f.finish.as_us_f64())
        .collect()
}

#[test]
fn timing_follows_the_packet_and_the_hop() {
    let p = timing();
    // A 4178-byte packet is 83.56 ns at 400 Gb/s; half is 41.78 ns, so 1 us is 24 steps of 41.667.
    assert_eq!(p.hop_steps, 24);
    assert!((p.step_ps - 1e6 / 24.0).abs() < 1e-9);
    // 15 and 12 packets of 4096 wire bytes, as payload of 4178-byte packets.
    let eff = 4096.0 / 4178.0;
    assert!((p.xoff - 15.0 * 4096.0 * eff).abs() < 1e-9);
    assert!((p.xon - 12.0 * 4096.0 * eff).abs() < 1e-9);
}

#[test]
fn a_lone_flow_moves_at_its_link_rate() {
    // 1 MiB over host, uplink, downlink, host at 50 GB/s: 20.97152 us plus 4 hops of 1 us, to
    // within a step (41.667 ns).
    let c = 50e9;
    let t = run(&[c; 4], &[&[0, 1, 2, 3]], 1 << 20, timing());
    let want = (1u64 << 20) as f64 / c * 1e6 + 4.0;
    assert!(
        t[0] >= want - 1e-6 && t[0] <= want + 0.0417,
        "{t:?} vs {want}"
    );
}

#[test]
fn incast_ports_share_round_robin_not_per_flow() {
    // Receiver link 4 fed by ingress port 2 (one sender, NIC 0) and port 3 (two senders, NICs 1
    // and 5, both through link 3). Each port is paused at the same threshold, so each gets half of
    // link 4: sender 0 finishes its 16 MiB at 2 x 16 MiB / C, the other two share a half until
    // then and end together at 3 x 16 MiB / C, within the start-up transient (a few us).
    let c = 50e9;
    let bytes = 16u64 << 20;
    let t = run(
        &[c; 6],
        &[&[0, 2, 4], &[1, 3, 4], &[5, 3, 4]],
        bytes,
        timing(),
    );
    let one = bytes as f64 / c * 1e6;
    assert!((t[0] - (2.0 * one + 3.0)).abs() < 0.02 * one, "{t:?}");
    for x in &t[1..] {
        assert!((x - (3.0 * one + 3.0)).abs() < 0.02 * one, "{t:?}");
    }
    // Max-min would give every flow a third: 3 x one each.
    assert!(t[0] < 2.2 * one);
}

#[test]
fn a_paused_link_slows_its_victims() {
    // Link 2 carries flow A (to congested link 4, shared with B and C from their own ports) and
    // victim V (to idle link 5). Link 4 is shared by its three ports; link 2 is paused whenever
    // its share of link 4 backs up, and V, in the same FIFO, waits too, where max-min would give
    // it two thirds of link 2.
    let c = 50e9;
    let bytes = 16u64 << 20;
    let t = run(
        &[c; 8],
        &[&[0, 2, 4], &[1, 2, 5], &[6, 4], &[7, 4]],
        bytes,
        timing(),
    );
    let one = bytes as f64 / c * 1e6;
    // Max-min: V at 2/3 of c would finish in 1.5 x one.
    assert!(t[1] > 2.5 * one, "{t:?}");
    // B and C, each alone on its port, end together; A and V, which share link 2's pauses and
    // FIFO, end together after them (once B and C are done, link 2 still carries A at half its
    // rate, V taking the other half).
    assert!((t[2] - t[3]).abs() < 0.01 * one, "{t:?}");
    assert!((t[0] - t[1]).abs() < 0.01 * one, "{t:?}");
    assert!(t[0] > t[2] + 0.1 * one, "{t:?}");
}

#[test]
fn deep_thresholds_keep_a_link_busy_after_xon() {
    // Two senders into one receiver link through two ports: with XON well above a pause round
    // trip at the link rate (2 us x 50 GB/s = 100 kB) the receiver link never idles and both
    // finish at 2 x bytes / C; with htsim's 12 packets (48 kB), ports run dry after XON, but the
    // other port covers: it still finishes within a percent.
    let c = 50e9;
    let bytes = 16u64 << 20;
    let deep = Pfc {
        xoff: 1200.0 * 4096.0,
        xon: 1000.0 * 4096.0,
        ..timing()
    };
    let one = bytes as f64 / c * 1e6;
    for p in [deep, timing()] {
        let t = run(&[c; 3], &[&[0, 2], &[1, 2]], bytes, p);
        for x in &t {
            assert!((x - (2.0 * one + 2.0)).abs() < 0.01 * one, "{t:?}");
        }
    }
}

#[test]
fn same_input_same_output() {
    let c = 50e9;
    let paths: &[&[u32]] = &[&[0, 2, 4], &[1, 2, 5], &[6, 4], &[7, 4]];
    let a = run(&[c; 8], paths, 1 << 20, timing());
    let b = run(&[c; 8], paths, 1 << 20, timing());
    assert_eq!(a, b);
}
