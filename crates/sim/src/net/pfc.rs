//! Lossless Ethernet with priority flow control (PFC) as a fluid: how `sim flows --transport roce`
//! shares links, in place of the engine's max-min fairness.
//!
//! What a PFC switch does (IEEE 802.1Qbb-2011, clause 36: a receiver whose ingress buffer for a
//! priority passes a threshold sends PAUSE upstream, which stops *every* frame of that priority on
//! the link until the buffer drains), with FIFO egress queues and no congestion control
//! (RoCE senders at line rate, as htsim's `htsim_roce` runs them: Broadcom/csg-htsim
//! `sim/datacenter/main_roce.cpp`, `LosslessInputQueue` and `LosslessOutputQueue`):
//! - **Per-ingress-port arbitration.** A congested egress serves the ingress ports with traffic
//!   for it round-robin, not its flows: each port gets an equal part (water-filled: a port that
//!   needs less leaves the rest to the others), and the flows of one port share that part in
//!   proportion to what they bring (one FIFO). Eight senders on eight ports of a receiver's leaf
//!   each get an eighth; two of them arriving through one spine link share an eighth.
//! - **Pauses travel upstream (head-of-line blocking).** A port that brings more than its part
//!   fills its ingress buffer and is paused; a paused link carries less for *all* its flows,
//!   including flows whose own egress is idle (victims), and the egress feeding it is then
//!   congested in turn, up to the senders' NICs.
//!
//! As a fluid: every link `l` has the fraction `u[l]` of the time it is not paused, so it carries at
//! most `u[l]` times its rate. A pass in path order (`level`) sends every flow's NIC share forward;
//! at each egress the ports' parts are water-filled and each port's flows scaled to its part. Then
//! every ingress link whose flows were cut is paused more, and one that could carry more is paused
//! less: `u[p]` is multiplied by the square root (damping) of the least, over the egresses it
//! feeds, of what the port could have there over what it brought. The pass is repeated until no
//! `u` moves by more than 1e-9 (at most `MAX_PASSES`); the flows' rates are the last pass's. A
//! flow alone, a shift permutation or an incast inside one leaf get max-min's rates; under
//! collisions the victims lose what max-min would have given them.
//!
//! DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) is not
//! modelled: its rate cuts converge to the fair share and stop most pauses, so this is its worst
//! case, the one the reference runs have (docs/validation/htsim/README.md: `htsim_roce` has no
//! congestion control). InfiniBand is lossless too (credit-based link-level flow control, IBTA
//! Vol. 1 7.9), and credits spread congestion the same way; railyard keeps max-min for it, having no
//! packet-level InfiniBand reference to test a model against.
//!
//! Rates are re-solved whenever a flow starts or drains; between events flows move at constant
//! rates. Each solve costs passes x path entries: the 288-host reference cases take under a
//! second, but a run of 100,000 flows in flight would take hours, and the engine's incremental
//! solver cannot hold these rates (they are not max-min fair). Deterministic: every loop runs in
//! flow or resource order and no hash map is iterated.

use crate::engine::{EngineStats, FlowTimes, Outcome, Workload};
use crate::time::Time;

/// Passes of one solve at most (each a fixed-point step of the pause fractions).
pub const MAX_PASSES: usize = 400;
/// A solve stops once no pause fraction moved by more than this.
const SETTLED: f64 = 1e-9;

/// One egress's use by the flows of one ingress link: (egress level, egress, ingress, flow).
type Entry = (u32, u32, u32, u32);

/// Runs every flow of `w` to its finish under PFC sharing. `w`'s flows must wait for no others
/// (`sim flows` makes none that do); each flow's first resource is its sender's NIC link and
/// each next one the egress its previous one feeds.
pub fn simulate(w: &Workload) -> Outcome {
    let flows = w.bytes.len();
    let path = |f: usize| &w.path[w.path_offset[f] as usize..w.path_offset[f + 1] as usize];
    let level = levels(w);
    let mut remaining: Vec<f64> = w.bytes.iter().map(|&b| b as f64).collect();
    let mut drained: Vec<Option<Time>> = vec![None; flows];
    let mut order: Vec<usize> = (0..flows).collect();
    order.sort_by_key(|&f| (w.start[f], f));
    let mut next_start = 0usize;
    let mut active: Vec<usize> = Vec::new();
    let mut now = Time::ZERO;
    let mut stats = EngineStats::default();
    while next_start < order.len() || !active.is_empty() {
        if active.is_empty() {
            now = now.max(w.start[order[next_start]]);
        }
        while next_start < order.len() && w.start[order[next_start]] <= now {
            let f = order[next_start];
            next_start += 1;
            if w.bytes[f] == 0 || path(f).is_empty() {
                drained[f] = Some(now);
            } else {
                active.push(f);
            }
        }
        active.sort_unstable();
        if active.is_empty() {
            continue;
        }
        stats.events += 1;
        stats.solves += 1;
        stats.flows_solved += active.len() as u64;
        let rates = solve(w, &level, &active);
        // The next event: the first drain, or the next start if sooner.
        let mut dt = active
            .iter()
            .zip(&rates)
            .map(|(&f, &r)| remaining[f] / r)
            .fold(f64::INFINITY, f64::min);
        if let Some(&f) = order.get(next_start) {
            dt = dt.min((w.start[f] - now).as_secs_f64());
        }
        let step = Time::from_ps((dt * 1e12).round() as u64);
        let mut still = Vec::with_capacity(active.len());
        for (&f, &r) in active.iter().zip(&rates) {
            let left = remaining[f] - r * dt;
            // Within a millionth of a byte (or of the flow) of done: drained now.
            if left <= 1e-6 * (1.0 + w.bytes[f] as f64 * 1e-9) {
                drained[f] = Some(now + step);
            } else {
                remaining[f] = left;
                still.push(f);
            }
        }
        active = still;
        now += step;
    }
    let flows = (0..flows)
        .map(|f| {
            let finish = drained[f].unwrap_or(w.start[f]) + w.latency[f];
            FlowTimes {
                start: w.start[f],
                finish,
            }
        })
        .collect();
    Outcome { flows, stats }
}

/// Each resource's place in path order: 0 for a flow's first, else one more than the highest of
/// the resources feeding it, so a pass by level meets every egress after all its ingresses.
fn levels(w: &Workload) -> Vec<u32> {
    let mut level = vec![0u32; w.capacity.len()];
    let longest = w.path_offset.windows(2).map(|p| p[1] - p[0]).max();
    for _ in 0..longest.unwrap_or(0) {
        for p in w.path_offset.windows(2) {
            let path = &w.path[p[0] as usize..p[1] as usize];
            for k in 1..path.len() {
                let want = level[path[k - 1] as usize] + 1;
                let l = &mut level[path[k] as usize];
                *l = (*l).max(want);
            }
        }
    }
    level
}

/// The rates (bytes per second) of the `active` flows, in their order, under PFC sharing.
fn solve(w: &Workload, level: &[u32], active: &[usize]) -> Vec<f64> {
    let path = |f: usize| &w.path[w.path_offset[f] as usize..w.path_offset[f + 1] as usize];
    // Every (egress, ingress, flow) of the active flows, in pass order.
    let mut entries: Vec<Entry> = Vec::new();
    let mut senders: Vec<(u32, u32)> = Vec::with_capacity(active.len());
    for (i, &f) in active.iter().enumerate() {
        let p = path(f);
        senders.push((p[0], i as u32));
        for k in 1..p.len() {
            entries.push((level[p[k] as usize], p[k], p[k - 1], i as u32));
        }
    }
    entries.sort_unstable();
    senders.sort_unstable();
    let mut unpaused = vec![1.0f64; w.capacity.len()];
    let mut rate = vec![0.0f64; active.len()];
    // Per ingress link, the least (what it could get / what it brought) over its egresses.
    let mut room = vec![f64::INFINITY; w.capacity.len()];
    let mut ports: Vec<(u32, f64)> = Vec::new();
    for _ in 0..MAX_PASSES {
        // Each NIC splits what it may send equally among its flows.
        for group in senders.chunk_by(|a, b| a.0 == b.0) {
            let l = group[0].0 as usize;
            let share = w.capacity[l] * unpaused[l] / group.len() as f64;
            for &(_, i) in group {
                rate[i as usize] = share;
            }
        }
        for r in room.iter_mut() {
            *r = f64::INFINITY;
        }
        for at_egress in entries.chunk_by(|a, b| a.1 == b.1) {
            let e = at_egress[0].1 as usize;
            ports.clear();
            for port in at_egress.chunk_by(|a, b| a.2 == b.2) {
                let brought: f64 = port.iter().map(|x| rate[x.3 as usize]).sum();
                ports.push((port[0].2, brought));
            }
            let cap = w.capacity[e] * unpaused[e];
            for (port, &(ingress, brought)) in at_egress.chunk_by(|a, b| a.2 == b.2).zip(&ports) {
                let could = part(cap, &ports, ingress);
                let r = &mut room[ingress as usize];
                *r = r.min(could / brought);
                let cut = (could / brought).min(1.0);
                for x in port {
                    rate[x.3 as usize] *= cut;
                }
            }
        }
        let mut moved = 0.0f64;
        for (l, &r) in room.iter().enumerate() {
            if r.is_finite() {
                let next = (unpaused[l] * r.sqrt()).min(1.0);
                moved = moved.max((next - unpaused[l]).abs());
                unpaused[l] = next;
            }
        }
        if moved <= SETTLED {
            break;
        }
    }
    rate
}

/// The part of `cap` that port `me` gets when the ports water-fill it round-robin and `me` wants
/// all it can: the level at which the others' demands (each up to the level) and `me` fill `cap`.
fn part(cap: f64, ports: &[(u32, f64)], me: u32) -> f64 {
    let mut others: Vec<f64> = ports.iter().filter(|p| p.0 != me).map(|p| p.1).collect();
    others.sort_by(f64::total_cmp);
    let mut left = cap;
    let mut n = others.len() + 1;
    for d in others {
        let level = left / n as f64;
        if d >= level {
            return level;
        }
        left -= d;
        n -= 1;
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Flow;

    fn run(caps: &[f64], paths: &[&[u32]], bytes: u64) -> Vec<f64> {
        let mut w = Workload::new();
        let ids: Vec<_> = caps.iter().map(|&c| w.add_resource(c).unwrap()).collect();
        for p in paths {
            let path: Vec<_> = p.iter().map(|&i| ids[i as usize]).collect();
            w.add_flow(&Flow {
                path: &path,
                bytes,
                ..Flow::default()
            })
            .unwrap();
        }
        simulate(&w)
            .flows
            .iter()
            .map(|f| f.finish.as_us_f64())
            .collect()
    }

    #[test]
    fn incast_ports_share_round_robin_not_per_flow() {
        // Receiver link 4 fed by port 2 (one sender, NIC 0) and port 3 (two senders, NICs 1 and 5,
        // both through link 3). Per port: sender 0 gets half of link 4, the other two a quarter.
        let c = 1e9;
        let t = run(&[c; 6], &[&[0, 2, 4], &[1, 3, 4], &[5, 3, 4]], 1_000_000);
        // 1 MB at 0.5 GB/s = 2000 us; then the two others at 0.5 each: 1 MB - 0.5 MB over 1000 us.
        assert!((t[0] - 2000.0).abs() < 1e-3, "{t:?}");
        assert!(
            (t[1] - 3000.0).abs() < 1e-3 && (t[2] - 3000.0).abs() < 1e-3,
            "{t:?}"
        );
    }

    #[test]
    fn a_paused_link_slows_its_victims() {
        // Link 2 carries flow A (to congested link 4, shared with B and C from their own ports) and
        // victim V (to idle link 5). Link 4 gives each of its three ports a third; link 2 is paused
        // until it brings A only a third, and V, in the same FIFO, gets a third too, where max-min
        // would give it two thirds.
        let c = 3e9;
        let t = run(
            &[c; 8],
            &[&[0, 2, 4], &[1, 2, 5], &[6, 4], &[7, 4]],
            1_000_000,
        );
        // All four at 1 GB/s: 1000 us.
        for x in &t {
            assert!((x - 1000.0).abs() < 1e-2, "{t:?}");
        }
    }
}
