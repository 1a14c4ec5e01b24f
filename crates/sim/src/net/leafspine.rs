//! A plain two-tier leaf-spine of single-NIC hosts, for studying the network alone and comparing
//! with other flow-level simulators.
//!
//! Host `i` hangs off leaf `i / K`; every leaf has one link to every spine; every link runs at the
//! same rate in each direction with the same latency per hop. Each link direction is one engine
//! resource, in this order: host->leaf for every host, leaf->host for every host, leaf->spine for
//! every (leaf, spine), spine->leaf for every (spine, leaf).
//!
//! A flow between hosts on one leaf crosses two links (two hops); any other flow crosses four
//! (host, leaf, spine, leaf, host), taking the spine the routing policy picks at the source leaf.

use crate::engine::{self, EngineStats, Flow, ResourceId, Workload};
use crate::error::SimError;
use crate::net::rates::{self, PacketFormat};
use crate::net::routing::{Connection, Routing};
use crate::time::{Rate, Time};
use crate::watch::Watch;
use railyard_catalog::number;

/// The most hosts a plain leaf-spine may have (four times the largest fabric railyard plans).
pub const MAX_HOSTS: u32 = 1 << 20;
/// The most link directions (engine resources) of one leaf-spine simulation.
pub const MAX_LINK_DIRECTIONS: u64 = 1 << 24;
/// The longest hop latency, ns: one second, far past any cable and switch.
pub const MAX_HOP_LATENCY_NS: u64 = 1_000_000_000;

/// The shape and links of a leaf-spine, as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeafSpineConfig {
    pub hosts: u32,
    pub hosts_per_leaf: u32,
    pub spines: u32,
    /// Signalling data rate of every link, per direction, in Gb/s.
    pub link_gbps: f64,
    /// Latency of one hop (link plus the switch it enters).
    pub hop_latency: Time,
    /// Packet format whose headers are subtracted from the link rate; `None` for ideal links at the
    /// raw rate.
    pub packet_format: Option<PacketFormat>,
}

/// A validated leaf-spine: every host index and link below is in range.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafSpine {
    config: LeafSpineConfig,
    leaves: u32,
    /// Payload bytes per second of each link direction.
    rate: f64,
}

impl LeafSpine {
    pub fn new(config: LeafSpineConfig) -> Result<LeafSpine, SimError> {
        let bad = |what, message: &str| {
            Err(SimError::Config {
                what,
                message: message.to_string(),
            })
        };
        if config.hosts < 2 {
            return bad("hosts", "need at least 2 hosts");
        }
        if config.hosts_per_leaf == 0 {
            return bad("hosts-per-leaf", "must be at least 1");
        }
        if config.spines == 0 {
            return bad("spines", "must be at least 1");
        }
        if Rate::from_gbps(config.link_gbps).is_none() || config.link_gbps > 1e6 {
            return bad(
                "link-gbps",
                "must be a number above zero, at most 1000000 Gb/s",
            );
        }
        if config.hop_latency > Time::from_ns(MAX_HOP_LATENCY_NS) {
            return bad(
                "link-latency-ns",
                &format!("at most {MAX_HOP_LATENCY_NS} ns (one second) per hop"),
            );
        }
        if config.hosts > MAX_HOSTS {
            return bad("hosts", &format!("valid: 2 to {MAX_HOSTS}"));
        }
        let leaves = config.hosts.div_ceil(config.hosts_per_leaf);
        let resources =
            2 * u64::from(config.hosts) + 2 * u64::from(leaves) * u64::from(config.spines);
        if resources > MAX_LINK_DIRECTIONS {
            return bad(
                "spines",
                &format!(
                    "{leaves} leaves x {} spines make {resources} link directions, past the limit of {MAX_LINK_DIRECTIONS} for one simulation; valid: at most {} spines",
                    config.spines,
                    (MAX_LINK_DIRECTIONS - 2 * u64::from(config.hosts)) / (2 * u64::from(leaves))
                ),
            );
        }
        let rate = match config.packet_format {
            Some(format) => format.payload_rate(config.link_gbps),
            None => rates::raw_rate(config.link_gbps),
        };
        Ok(LeafSpine {
            config,
            leaves,
            rate,
        })
    }

    pub fn config(&self) -> &LeafSpineConfig {
        &self.config
    }

    pub fn hosts(&self) -> u32 {
        self.config.hosts
    }

    pub fn leaves(&self) -> u32 {
        self.leaves
    }

    pub fn spines(&self) -> u32 {
        self.config.spines
    }

    /// Payload bytes per second of one link direction.
    pub fn link_rate(&self) -> f64 {
        self.rate
    }

    pub fn leaf_of(&self, host: u32) -> u32 {
        host / self.config.hosts_per_leaf
    }

    /// Hops between two hosts: 2 on one leaf, 4 through a spine.
    pub fn hops(&self, src: u32, dst: u32) -> u64 {
        if self.leaf_of(src) == self.leaf_of(dst) {
            2
        } else {
            4
        }
    }

    /// Latency of the path between two hosts: hops x hop latency, and what the transport adds
    /// until the flow counts as complete (RoCE: the last ACK's return and store-and-forward,
    /// `PacketFormat::completion_latency`).
    pub fn path_latency(&self, src: u32, dst: u32) -> Time {
        self.latency_of(self.hops(src, dst))
    }

    /// [`Self::path_latency`] of a path of `hops` links.
    fn latency_of(&self, hops: u64) -> Time {
        match self.config.packet_format {
            Some(format) => {
                format.completion_latency(hops, self.config.hop_latency, self.config.link_gbps)
            }
            None => self.config.hop_latency.saturating_mul(hops),
        }
    }

    /// Completion time of a flow alone on the network: path latency + bytes / link rate, with the
    /// engine's rounding (nearest picosecond).
    pub fn ideal_fct(&self, src: u32, dst: u32, bytes: u64) -> Time {
        let transfer = (bytes as f64 * 1e12 / self.rate).round() as u64;
        self.path_latency(src, dst) + Time::from_ps(transfer)
    }

    fn host_up(&self, h: u32) -> u32 {
        h
    }

    fn host_down(&self, h: u32) -> u32 {
        self.config.hosts + h
    }

    fn leaf_up(&self, leaf: u32, spine: u32) -> u32 {
        2 * self.config.hosts + leaf * self.config.spines + spine
    }

    fn spine_down(&self, spine: u32, leaf: u32) -> u32 {
        2 * self.config.hosts + self.leaves * self.config.spines + spine * self.leaves + leaf
    }
}

/// A flow between two hosts, as a line of a flows file gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFlow {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub start: Time,
}

/// How one host flow went. Its completion time (FCT) is `finish - start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowResult {
    pub start: Time,
    pub finish: Time,
    /// The FCT it would have alone on the network.
    pub ideal: Time,
}

impl FlowResult {
    pub fn fct(&self) -> Time {
        self.finish - self.start
    }
}

/// Results per host flow, in input order, plus engine counters.
#[derive(Debug, Clone)]
pub struct Run {
    pub flows: Vec<FlowResult>,
    /// Engine flows simulated (host flows times their sub-flows).
    pub sub_flows: usize,
    pub stats: EngineStats,
}

/// Checks flows against the network: hosts in range, no flow to itself, and every flow finishing
/// within the simulator's clock ([`Time::CLOCK`], 2^63 ps, 106 days). The last holds when the last start plus all
/// the bytes sent one after another over one link, plus the longest path latency, fits: under max-min
/// sharing no flow finishes later than that.
pub fn check_flows(net: &LeafSpine, flows: &[HostFlow]) -> Result<(), SimError> {
    let hosts = net.hosts();
    let mut total: u128 = 0;
    let mut last_start = Time::ZERO;
    for (i, f) in flows.iter().enumerate() {
        let bad = |message: String| Err(SimError::BadFlow { flow: i, message });
        if f.src >= hosts || f.dst >= hosts {
            return bad(format!(
                "host {} out of range (hosts are 0..{})",
                f.src.max(f.dst),
                hosts.saturating_sub(1)
            ));
        }
        if f.src == f.dst {
            return bad(format!("source and destination are both host {}", f.src));
        }
        total += u128::from(f.bytes);
        last_start = last_start.max(f.start);
    }
    let latency = net.latency_of(4);
    let worst_s = last_start.as_secs_f64() + total as f64 / net.rate + latency.as_secs_f64();
    // On the clock (`Time::CLOCK`): the engine's rounding may add a little, and no answer should
    // touch the end.
    if let Err(past) = Time::from_secs_checked(worst_s) {
        return Err(SimError::Config {
            what: "flows",
            message: format!(
                "{total} bytes at {} GB/s per link (--link-gbps {}), starting as late as {:.3} s, may take {past}; valid: fewer bytes, earlier starts or a faster link",
                number(net.rate / 1e9),
                number(net.config.link_gbps),
                last_start.as_secs_f64(),
            ),
        });
    }
    Ok(())
}

/// Routes every flow with `routing`, simulates them together and gathers each host flow's result
/// (a flow split into sub-flows finishes when its last sub-flow does). Host flow `i` is connection
/// `i` for the routing hash, so two flows between one pair may take different paths.
pub fn simulate(
    net: &LeafSpine,
    routing: &dyn Routing,
    flows: &[HostFlow],
) -> Result<Run, SimError> {
    simulate_with(net, routing, flows, true, &Watch::new())
}

/// [`simulate`], telling `watch` how far the engine got after every event time (for a progress
/// line; the results are those of [`simulate`]). The watch counts engine flows: host flows times
/// their sub-flows, or one per host flow where flows spread over every spine are folded.
pub fn simulate_watched(
    net: &LeafSpine,
    routing: &dyn Routing,
    flows: &[HostFlow],
    watch: &Watch,
) -> Result<Run, SimError> {
    simulate_with(net, routing, flows, true, watch)
}

/// [`simulate`], folding flows spread over every spine into one engine flow each when `fold`.
fn simulate_with(
    net: &LeafSpine,
    routing: &dyn Routing,
    flows: &[HostFlow],
    fold: bool,
    watch: &Watch,
) -> Result<Run, SimError> {
    check_flows(net, flows)?;
    let hosts = net.hosts();
    let conn_index = |i: usize| u32::try_from(i).map_err(|_| SimError::TooLarge("flows"));

    let mut w = Workload::new();
    let resources = 2 * hosts + 2 * net.leaves() * net.spines();
    let mut ids: Vec<ResourceId> = Vec::with_capacity(resources as usize);
    for _ in 0..resources {
        ids.push(w.add_resource(net.link_rate())?);
    }
    let spines = net.spines();
    // Sub-flows per host flow, to size the workload and to gather results.
    let mut parts = Vec::with_capacity(flows.len());
    let mut total = 0usize;
    for (i, f) in flows.iter().enumerate() {
        let conn = Connection {
            src: f.src,
            dst: f.dst,
            index: conn_index(i)?,
        };
        let up_ports = if net.leaf_of(f.src) == net.leaf_of(f.dst) {
            1
        } else {
            spines
        };
        let n = routing.sub_flows(&conn, up_ports).max(1);
        parts.push(n);
        total += n as usize;
    }
    // Spread over every spine: a host flow split into one equal sub-flow per spine (adaptive
    // routing) on every flow between leaves. Then the spines are interchangeable (swapping two
    // maps the workload onto itself), and max-min fairness, whose allocation is unique, gives the
    // sub-flows of one host flow the same rate through every spine: one engine flow of width `S`
    // on its hosts' links and width 1 on spine 0's links stands for all `S` (the quotient of
    // `crate::engine::classes`, built without enumerating the sub-flows). Sub-flows then carry
    // `ceil(bytes / S)` each instead of parts differing by one byte. 16.7 million sub-flows of a
    // permutation on 65,536 hosts and 256 spines become 65,536 engine flows.
    // Per spine, the last flow that picked it (one buffer for the whole check).
    let mut picked_by = vec![usize::MAX; spines as usize];
    // PFC's sharing (`net::pfc`) is not max-min, so the quotient below does not hold for it.
    let pfc = net.config.packet_format.is_some_and(|p| p.pfc);
    let spread = fold
        && !pfc
        && spines > 1
        && flows.iter().enumerate().all(|(i, f)| {
            let src_leaf = net.leaf_of(f.src);
            if src_leaf == net.leaf_of(f.dst) {
                return true;
            }
            if parts[i] != spines {
                return false;
            }
            let conn = Connection {
                src: f.src,
                dst: f.dst,
                index: i as u32,
            };
            (0..spines).all(|sub| {
                let k = routing.pick_port(&conn, sub, src_leaf, spines) as usize;
                k < picked_by.len() && std::mem::replace(&mut picked_by[k], i) != i
            })
        });
    if spread {
        return simulate_spread(net, flows, &parts, total, w, &ids, watch);
    }
    w.reserve(total, 4 * total);

    let mut path: Vec<ResourceId> = Vec::with_capacity(4);
    for (i, f) in flows.iter().enumerate() {
        let conn = Connection {
            src: f.src,
            dst: f.dst,
            index: conn_index(i)?,
        };
        let (src_leaf, dst_leaf) = (net.leaf_of(f.src), net.leaf_of(f.dst));
        let n = parts[i];
        let latency = net.path_latency(f.src, f.dst);
        for sub in 0..n {
            path.clear();
            path.push(ids[net.host_up(f.src) as usize]);
            if src_leaf != dst_leaf {
                // A policy answering past the last port breaks the trait's contract; clamping keeps
                // that bug from indexing out of range (spines >= 1 was checked in LeafSpine::new).
                let spine = routing
                    .pick_port(&conn, sub, src_leaf, spines)
                    .min(spines - 1);
                path.push(ids[net.leaf_up(src_leaf, spine) as usize]);
                path.push(ids[net.spine_down(spine, dst_leaf) as usize]);
            }
            path.push(ids[net.host_down(f.dst) as usize]);
            // Equal parts; the first `bytes % n` sub-flows carry one byte more.
            let bytes = f.bytes / u64::from(n) + u64::from(u64::from(sub) < f.bytes % u64::from(n));
            w.add_flow(&Flow {
                path: &path,
                bytes,
                start: f.start,
                latency,
                ..Flow::default()
            })?;
        }
    }

    let outcome = match net.config.packet_format.filter(|_| pfc) {
        Some(format) => {
            let c = &net.config;
            let timing = crate::net::pfc::Pfc::htsim(&format, c.link_gbps, c.hop_latency);
            crate::net::pfc::simulate(&w, timing)
        }
        None => engine::simulate_watched(&w, watch),
    };
    let mut results = Vec::with_capacity(flows.len());
    let mut next = 0usize;
    for (f, &n) in flows.iter().zip(&parts) {
        let subs = &outcome.flows[next..next + n as usize];
        next += n as usize;
        let finish = subs.iter().map(|s| s.finish).max().unwrap_or(f.start);
        results.push(FlowResult {
            start: f.start,
            finish,
            ideal: net.ideal_fct(f.src, f.dst, f.bytes),
        });
    }
    Ok(Run {
        flows: results,
        sub_flows: total,
        stats: outcome.stats,
    })
}

/// [`simulate`] where every flow between leaves is spread over all spines: one engine flow per
/// host flow, of width `S` (spines) on its hosts' links and width 1 on spine 0's links, which stand
/// for every spine's.
fn simulate_spread(
    net: &LeafSpine,
    flows: &[HostFlow],
    parts: &[u32],
    total: usize,
    mut w: Workload,
    ids: &[ResourceId],
    watch: &Watch,
) -> Result<Run, SimError> {
    w.reserve(flows.len(), 4 * flows.len());
    let mut path: Vec<ResourceId> = Vec::with_capacity(4);
    let mut widths: Vec<u32> = Vec::with_capacity(4);
    for (f, &n) in flows.iter().zip(parts) {
        let (src_leaf, dst_leaf) = (net.leaf_of(f.src), net.leaf_of(f.dst));
        path.clear();
        widths.clear();
        path.push(ids[net.host_up(f.src) as usize]);
        widths.push(n);
        if src_leaf != dst_leaf {
            path.push(ids[net.leaf_up(src_leaf, 0) as usize]);
            path.push(ids[net.spine_down(0, dst_leaf) as usize]);
            widths.extend([1, 1]);
        }
        path.push(ids[net.host_down(f.dst) as usize]);
        widths.push(n);
        w.add_flow_with_widths(
            &Flow {
                path: &path,
                bytes: f.bytes.div_ceil(u64::from(n)),
                start: f.start,
                latency: net.path_latency(f.src, f.dst),
                ..Flow::default()
            },
            &widths,
        )?;
    }
    let outcome = engine::simulate_watched(&w, watch);
    let results = flows
        .iter()
        .zip(&outcome.flows)
        .map(|(f, o)| FlowResult {
            start: f.start,
            finish: o.finish,
            ideal: net.ideal_fct(f.src, f.dst, f.bytes),
        })
        .collect();
    Ok(Run {
        flows: results,
        sub_flows: total,
        stats: outcome.stats,
    })
}

#[cfg(test)]
#[path = "leafspine_tests.rs"]
mod tests;
