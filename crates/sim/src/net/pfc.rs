//! Lossless Ethernet with priority flow control (PFC) as a fluid in time: how `sim flows
//! --transport roce` moves bytes, in place of the engine's max-min fairness.
//!
//! What a PFC switch does (IEEE 802.1Qbb-2011, clause 36: a receiver whose ingress buffer for a
//! priority passes a threshold sends PAUSE upstream, which stops *every* frame of that priority on
//! the link until the buffer drains), with FIFO egress queues and no congestion control (RoCE
//! senders at line rate), as htsim's `htsim_roce` runs it (Broadcom/csg-htsim at 841d9e7:
//! `sim/roce.cpp` `RoceSrc`, `sim/queue_lossless_input.cpp` `LosslessInputQueue`,
//! `sim/queue_lossless_output.cpp` `LosslessOutputQueue`, `sim/queue.cpp` `FairPriorityQueue`):
//! - **Senders.** A NIC sends its flows at its link's rate, round-robin among them, until its ToR
//!   pauses the link.
//! - **Egress queues are FIFOs.** Bytes leave an egress in the order they arrived, from whichever
//!   ingress port brought them, at the link's rate while the link is not paused.
//! - **Per-ingress-port accounting.** A switch counts, per ingress port, the bytes that came in on
//!   it and have not yet left (in any egress queue). Above `xoff` it sends PAUSE (XOFF) up that
//!   link, below `xon` it sends XON; both take the link's latency to reach the sender, which keeps
//!   sending meanwhile, and after XON the first bytes take the latency again to arrive.
//!
//! This gives what a steady-state share cannot: an egress shared by its *ports* (each port is
//! paused at the same threshold), victims slowed by pauses of links they share with congested
//! flows (head-of-line blocking, spreading hop by hop up to the senders), links idling while their
//! upstream restarts after XON (the XON threshold holds less than a pause round trip at the link
//! rate), and the start-up transient when every sender starts at once.
//!
//! As a fluid: time moves in steps of `Pfc::step_ps` (half a full packet's wire time, shortened so
//! a hop's latency is a whole number of steps). In a step each NIC that is not paused sends its
//! rate's worth, split equally among its flows with bytes left; each switch egress that is not
//! paused sends its rate's worth from the head of its FIFO; bytes sent arrive at the next switch a
//! hop's latency later and join the FIFO of their next link, counted against the ingress port they
//! came in on; then every switch compares its ports' counts with `xoff` and `xon`. A flow has
//! drained when its last byte reaches its receiver (in the step it arrives, at the part of the
//! step those bytes fill on the last link, so a lone flow drains at exactly bytes / rate plus its
//! hops' latency); its finish adds what the path's completion adds beyond the one-way latency the
//! steps already hold (the ACK's way back and store-and-forward: `rates::Completion`).
//!
//! Not modelled: packets (a byte can leave a switch in the step it arrives: cut-through, with the
//! store-and-forward delay of the last packet added at the end instead), ACKs sharing the queues
//! (their 1.5% of the reverse links and their waits behind data), PFC priorities other than one,
//! and DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015),
//! whose rate cuts stop most pauses: this is its worst case, the one the reference runs have
//! (docs/validation/htsim/README.md: `htsim_roce` has no congestion control). InfiniBand is
//! lossless too (credit-based link-level flow control, IBTA Vol. 1 7.9); railyard keeps max-min
//! for it, having no packet-level InfiniBand reference to test a model against.
//!
//! Cost: steps x (links + bytes in flight in chunks): a 16 MiB permutation of 288 hosts takes
//! about 42,000 steps. Deterministic: every loop runs in flow or resource order and no hash map is
//! iterated.

use crate::engine::{EngineStats, FlowTimes, Outcome, Workload};
use crate::net::rates::PacketFormat;
use crate::time::Time;
use std::collections::VecDeque;

/// htsim's default PFC thresholds, in 4,096-byte packets of wire bytes: XOFF above 15, XON
/// below 12 (Broadcom/csg-htsim 841d9e7, `sim/datacenter/main_roce.cpp`: `high_pfc = 15,
/// low_pfc = 12`, and `LosslessInputQueue::_high_threshold = Packet::data_packet_size() *
/// high_pfc`). The reference runs of docs/validation/htsim use them.
pub const HTSIM_XOFF_PACKETS: u32 = 15;
/// See [`HTSIM_XOFF_PACKETS`].
pub const HTSIM_XON_PACKETS: u32 = 12;
/// The packet size htsim's thresholds count in (`-mtu 4096` of the reference runs).
const THRESHOLD_PACKET_BYTES: f64 = 4096.0;

/// A byte count below which a flow or a chunk counts as empty (fluid rounding).
const EMPTY: f64 = 1e-6;

/// The timing and thresholds of a PFC fabric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pfc {
    /// Length of one time step, in picoseconds (a fraction of a picosecond when a hop's latency
    /// is not a whole multiple).
    pub step_ps: f64,
    /// A hop's latency in steps.
    pub hop_steps: u64,
    /// A hop's latency (what the steps hold of each path's latency).
    pub hop_latency: Time,
    /// Payload bytes an ingress port may hold before its switch pauses the link.
    pub xoff: f64,
    /// Payload bytes below which a paused port's switch resumes the link.
    pub xon: f64,
}

impl Pfc {
    /// htsim's thresholds ([`HTSIM_XOFF_PACKETS`]) on links of `link_gbps` carrying `format`'s
    /// packets, `hop_latency` per hop. The thresholds count wire bytes; the fluid counts payload,
    /// so they are scaled by the format's efficiency.
    pub fn htsim(format: &PacketFormat, link_gbps: f64, hop_latency: Time) -> Pfc {
        let packet_ps = f64::from(format.payload + format.overhead) * 8e3 / link_gbps;
        let half = (packet_ps / 2.0).max(1.0);
        let hop_ps = hop_latency.ps() as f64;
        let (step_ps, hop_steps) = if hop_ps > 0.0 {
            let n = (hop_ps / half).ceil().max(1.0);
            (hop_ps / n, n as u64)
        } else {
            (half.round(), 0)
        };
        let payload =
            |packets: u32| f64::from(packets) * THRESHOLD_PACKET_BYTES * format.efficiency();
        Pfc {
            step_ps,
            hop_steps,
            hop_latency,
            xoff: payload(HTSIM_XOFF_PACKETS),
            xon: payload(HTSIM_XON_PACKETS),
        }
    }
}

/// Bytes of one flow in an egress FIFO, from one ingress port.
struct Chunk {
    flow: u32,
    /// Index in the flow's path of the resource whose FIFO holds it.
    hop: u32,
    /// The resource it arrived on (its ingress port's count).
    ingress: u32,
    bytes: f64,
}

/// Bytes on a link's wire: they arrive at the far end in step `at`.
struct InFlight {
    at: u64,
    flow: u32,
    /// Index in the flow's path of the link carrying them.
    hop: u32,
    bytes: f64,
}

/// The fabric's state between steps.
struct State<'a> {
    w: &'a Workload,
    pfc: Pfc,
    /// Per resource, its bytes per step.
    per_step: Vec<f64>,
    fifo: Vec<VecDeque<Chunk>>,
    wire: Vec<VecDeque<InFlight>>,
    /// Per resource, the payload bytes that came in on it and wait in its far switch.
    held: Vec<f64>,
    /// Per resource, whether its far switch has it paused (as decided there).
    pausing: Vec<bool>,
    /// Per resource, the pause state its sender obeys now.
    paused: Vec<bool>,
    /// Per resource, (step, state) of the PAUSE and XON frames on their way to its sender.
    frames: Vec<VecDeque<(u64, bool)>>,
    /// Per flow, bytes not yet sent by its NIC, and not yet received.
    unsent: Vec<f64>,
    unreceived: Vec<f64>,
    /// Per NIC resource, its started flows with bytes to send, in flow order.
    nic_flows: Vec<Vec<u32>>,
    /// NIC resources with flows to send, in resource order.
    nics: Vec<u32>,
    /// Per resource, whether it is in `active`.
    busy: Vec<bool>,
    /// The resources with anything to do: bytes in their FIFO or on their wire, frames on their
    /// way, or a pause standing (bytes held at a far switch sit in that switch's FIFOs, which are
    /// active themselves). Each step visits only these, in
    /// resource order.
    active: Vec<u32>,
    drained: Vec<Option<Time>>,
    /// Flows not yet drained.
    left: usize,
}

impl<'a> State<'a> {
    fn path(&self, f: usize) -> &'a [u32] {
        let w = self.w;
        &w.path[w.path_offset[f] as usize..w.path_offset[f + 1] as usize]
    }

    /// Puts `r` among the active resources.
    fn mark(&mut self, r: usize) {
        if !self.busy[r] {
            self.busy[r] = true;
            self.active.push(r as u32);
        }
    }

    /// The active resources, in resource order (hand them back with `done`).
    fn visit(&mut self) -> Vec<u32> {
        let mut list = std::mem::take(&mut self.active);
        list.sort_unstable();
        list
    }

    /// Hands back the list `visit` gave, with the resources marked meanwhile.
    fn done(&mut self, mut list: Vec<u32>) {
        list.append(&mut self.active);
        self.active = list;
    }

    /// Bytes whose wire delivers them in step `k` join their next FIFO, or their receiver.
    fn arrive(&mut self, k: u64) {
        let list = self.visit();
        for &r in &list {
            let r = r as usize;
            while self.wire[r].front().is_some_and(|x| x.at <= k) {
                let x = self.wire[r].pop_front().expect("front checked");
                let path = self.path(x.flow as usize);
                let next = x.hop as usize + 1;
                if next == path.len() {
                    let f = x.flow as usize;
                    self.unreceived[f] -= x.bytes;
                    if self.unreceived[f] <= EMPTY * (1.0 + self.w.bytes[f] as f64 * 1e-9) {
                        // The last bytes end the step's part they fill of their link.
                        let part = (x.bytes / self.per_step[r]).min(1.0);
                        let at = (k as f64 + part) * self.pfc.step_ps;
                        if self.drained[f].is_none() {
                            self.drained[f] = Some(Time::from_ps(at.round() as u64));
                            self.left -= 1;
                        }
                    }
                    continue;
                }
                let e = path[next] as usize;
                self.held[r] += x.bytes;
                self.mark(e);
                match self.fifo[e].back_mut() {
                    Some(c) if c.flow == x.flow && c.ingress == r as u32 => c.bytes += x.bytes,
                    _ => self.fifo[e].push_back(Chunk {
                        flow: x.flow,
                        hop: next as u32,
                        ingress: r as u32,
                        bytes: x.bytes,
                    }),
                }
            }
        }
        self.done(list);
    }

    /// Puts `bytes` of flow `flow` on link `r` (its hop `hop`) in step `k`.
    fn send(&mut self, r: usize, k: u64, flow: u32, hop: u32, bytes: f64) {
        let at = k + self.pfc.hop_steps;
        self.mark(r);
        match self.wire[r].back_mut() {
            Some(x) if x.at == at && x.flow == flow => x.bytes += bytes,
            _ => self.wire[r].push_back(InFlight {
                at,
                flow,
                hop,
                bytes,
            }),
        }
    }

    /// Every NIC that is not paused sends a step's worth, round-robin among its flows.
    fn nics_send(&mut self, k: u64) {
        let nics = std::mem::take(&mut self.nics);
        let mut still = Vec::with_capacity(nics.len());
        for &n in &nics {
            let r = n as usize;
            let mut flows = std::mem::take(&mut self.nic_flows[r]);
            if !self.paused[r] {
                // Water-fill the step among the flows: one with less left leaves the rest.
                flows.sort_by(|&a, &b| {
                    self.unsent[a as usize]
                        .total_cmp(&self.unsent[b as usize])
                        .then(a.cmp(&b))
                });
                let mut left = self.per_step[r];
                for (i, &f) in flows.iter().enumerate() {
                    let share = left / (flows.len() - i) as f64;
                    let b = share.min(self.unsent[f as usize]);
                    self.unsent[f as usize] -= b;
                    left -= b;
                    self.send(r, k, f, 0, b);
                }
                flows.retain(|&f| self.unsent[f as usize] > EMPTY);
                flows.sort_unstable();
            }
            if !flows.is_empty() {
                still.push(n);
            }
            self.nic_flows[r] = flows;
        }
        self.nics = still;
    }

    /// Every switch egress that is not paused sends a step's worth from the head of its FIFO.
    fn egresses_send(&mut self, k: u64) {
        let list = self.visit();
        for &r in &list {
            let r = r as usize;
            if self.paused[r] || self.fifo[r].is_empty() {
                continue;
            }
            let mut left = self.per_step[r];
            while left > 0.0 {
                let Some(c) = self.fifo[r].front_mut() else {
                    break;
                };
                let b = c.bytes.min(left);
                c.bytes -= b;
                let (flow, hop, ingress, empty) =
                    (c.flow, c.hop, c.ingress as usize, c.bytes <= EMPTY);
                left -= b;
                self.held[ingress] -= b;
                self.send(r, k, flow, hop, b);
                if empty {
                    let c = self.fifo[r].pop_front().expect("front checked");
                    // Fluid rounding: what is left of an emptied chunk goes with it.
                    self.held[ingress] -= c.bytes;
                    if c.bytes > 0.0 {
                        self.send(r, k, flow, hop, c.bytes);
                    }
                }
            }
        }
        self.done(list);
    }

    /// Each switch pauses the ports holding more than `xoff` and resumes those below `xon`; the
    /// frames reach the senders a hop later.
    fn decide(&mut self, k: u64) {
        let list = self.visit();
        for &r in &list {
            let r = r as usize;
            let held = self.held[r];
            let change = if self.pausing[r] {
                held < self.pfc.xon
            } else {
                held > self.pfc.xoff
            };
            if change {
                self.pausing[r] = !self.pausing[r];
                self.frames[r].push_back((k + self.pfc.hop_steps, self.pausing[r]));
            }
        }
        self.done(list);
    }

    /// The senders obey the PAUSE and XON frames that reach them by step `k`.
    fn obey(&mut self, k: u64) {
        let list = self.visit();
        for &r in &list {
            let r = r as usize;
            while let Some(&(at, state)) = self.frames[r].front() {
                if at > k {
                    break;
                }
                self.paused[r] = state;
                self.frames[r].pop_front();
            }
        }
        self.done(list);
    }

    /// Drops the resources left with nothing to do; true when none is left.
    fn idle(&mut self) -> bool {
        let mut list = std::mem::take(&mut self.active);
        list.retain(|&r| {
            let r = r as usize;
            let keep = !self.fifo[r].is_empty()
                || !self.wire[r].is_empty()
                || !self.frames[r].is_empty()
                || self.pausing[r]
                || self.paused[r];
            self.busy[r] = keep;
            keep
        });
        self.active = list;
        self.active.is_empty()
    }
}

/// Runs every flow of `w` to its finish on a PFC fabric. `w`'s flows must wait for no others
/// (`sim flows` makes none that do); each flow's first resource is its sender's NIC link and
/// each next one the egress its previous one feeds; a flow's latency is its path's completion
/// latency, of which `pfc.hop_latency` per hop is simulated.
pub fn simulate(w: &Workload, pfc: Pfc) -> Outcome {
    let flows = w.bytes.len();
    let resources = w.capacity.len();
    let step_s = pfc.step_ps * 1e-12;
    let mut s = State {
        w,
        pfc,
        per_step: w.capacity.iter().map(|c| c * step_s).collect(),
        fifo: (0..resources).map(|_| VecDeque::new()).collect(),
        wire: (0..resources).map(|_| VecDeque::new()).collect(),
        held: vec![0.0; resources],
        pausing: vec![false; resources],
        paused: vec![false; resources],
        frames: (0..resources).map(|_| VecDeque::new()).collect(),
        unsent: w.bytes.iter().map(|&b| b as f64).collect(),
        unreceived: w.bytes.iter().map(|&b| b as f64).collect(),
        nic_flows: vec![Vec::new(); resources],
        nics: Vec::new(),
        busy: vec![false; resources],
        active: Vec::new(),
        drained: vec![None; flows],
        left: flows,
    };
    let path_len = |f: usize| (w.path_offset[f + 1] - w.path_offset[f]) as u64;
    let mut order: Vec<usize> = (0..flows).collect();
    order.sort_by_key(|&f| (w.start[f], f));
    let mut next_start = 0usize;
    let mut stats = EngineStats::default();
    let mut k = 0u64;
    loop {
        let now = Time::from_ps((k as f64 * pfc.step_ps).round() as u64);
        let mut started = false;
        while next_start < order.len() && w.start[order[next_start]] <= now {
            let f = order[next_start];
            next_start += 1;
            if w.bytes[f] == 0 || path_len(f) == 0 {
                s.drained[f] = Some(w.start[f]);
                s.left -= 1;
                continue;
            }
            let nic = w.path[w.path_offset[f] as usize] as usize;
            if s.nic_flows[nic].is_empty() {
                s.nics.push(nic as u32);
            }
            s.nic_flows[nic].push(f as u32);
            started = true;
        }
        if started {
            s.nics.sort_unstable();
            s.nics.dedup();
        }
        s.obey(k);
        s.arrive(k);
        s.nics_send(k);
        s.egresses_send(k);
        s.decide(k);
        stats.events += 1;
        k += 1;
        let quiet = s.idle();
        if s.left == 0 {
            break;
        }
        if s.nics.is_empty() && quiet {
            let Some(&f) = order.get(next_start) else {
                break;
            };
            // Nothing moves until the next start: jump to its step.
            k = k.max((w.start[f].ps() as f64 / pfc.step_ps).ceil() as u64);
        }
    }
    stats.solves = stats.events;
    let flows = (0..flows)
        .map(|f| {
            let oneway = pfc.hop_latency.saturating_mul(path_len(f));
            let drained = s.drained[f].unwrap_or(w.start[f]);
            FlowTimes {
                start: w.start[f],
                finish: drained + w.latency[f].saturating_sub(oneway),
            }
        })
        .collect();
    Outcome { flows, stats }
}

#[cfg(test)]
#[path = "pfc_tests.rs"]
mod tests;
