//! What `railyard sim` prints: flow-completion times on a plain leaf-spine ([`FlowsRun`]) and an
//! nccl-tests style sweep of a collective on a designed fabric ([`CollectiveRun`]), as text and as
//! JSON; and the per-flow CSV of `sim flows --fct`.
//!
//! JSON objects are written with their keys in alphabetical order (through `serde_json::Value`,
//! whose maps are sorted), so the bytes do not depend on the order fields are declared in.

use crate::collective::{self, StepModel};
use crate::error::SimError;
use crate::nccl::{self, Collective};
use crate::net::failures::FailureReport;
use crate::net::leafspine::{self, FlowResult, HostFlow, LeafSpine};
use crate::net::nvl_domain::NvlDomain;
use crate::net::routed::RouteComparison;
use crate::net::routing::{self, RoutingConfig, RoutingKind};
use crate::time::Time;
use crate::traffic::fct::{self, FctSummary};
use crate::watch::Watch;
use railyard_fabric::search::plural;
use railyard_fabric::{cable_id, Fabric, LinkId};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// `v` as a JSON value; its objects keep their keys in alphabetical order (serde_json's map).
fn json_value(v: &impl Serialize) -> serde_json::Value {
    // Numbers, strings and maps with string keys: serializing them cannot fail.
    serde_json::to_value(v).unwrap_or_default()
}

/// Pretty JSON with a final newline.
pub fn pretty_json(v: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    text
}

/// Microseconds to the nearest nanosecond, from integers (no float formatting differences).
fn us3(t: Time) -> String {
    let ns = (t.ps() + 500) / 1_000;
    format!("{}.{:03} us", ns / 1_000, ns % 1_000)
}

fn gbps(bytes_per_second: f64) -> f64 {
    bytes_per_second * 8.0 / 1e9
}

/// Flows simulated on a plain leaf-spine, and their completion times.
pub struct FlowsRun<'a> {
    pub net: &'a LeafSpine,
    pub routing: RoutingKind,
    pub routing_config: RoutingConfig,
    pub flows: &'a [HostFlow],
    /// Bytes of every flow (checked: it fits).
    pub total_bytes: u64,
    /// Per flow, in input order.
    pub results: Vec<FlowResult>,
    pub summary: FctSummary,
}

impl<'a> FlowsRun<'a> {
    /// Routes `flows` on `net` with policy `routing` and simulates them together
    /// ([`leafspine::simulate`], which checks them first).
    pub fn simulate(
        net: &'a LeafSpine,
        routing: RoutingKind,
        routing_config: RoutingConfig,
        flows: &'a [HostFlow],
        total_bytes: u64,
    ) -> Result<FlowsRun<'a>, SimError> {
        Self::simulate_watched(
            net,
            routing,
            routing_config,
            flows,
            total_bytes,
            &Watch::new(),
        )
    }

    /// [`FlowsRun::simulate`], telling `watch` how far the engine got as it goes (see
    /// [`leafspine::simulate_watched`]).
    pub fn simulate_watched(
        net: &'a LeafSpine,
        routing: RoutingKind,
        routing_config: RoutingConfig,
        flows: &'a [HostFlow],
        total_bytes: u64,
        watch: &Watch,
    ) -> Result<FlowsRun<'a>, SimError> {
        let policy = routing::build(routing, routing_config);
        let run = leafspine::simulate_watched(net, policy.as_ref(), flows, watch)?;
        let summary = fct::summarize(&run.flows);
        Ok(FlowsRun {
            net,
            routing,
            routing_config,
            flows,
            total_bytes,
            results: run.flows,
            summary,
        })
    }

    /// One row per flow in input order (`flow,src,dst,bytes,start_us,finish_us`). Times are exact
    /// decimal microseconds (picosecond resolution), so the file is byte-identical across machines.
    pub fn fct_csv(&self) -> String {
        let mut out = String::with_capacity(48 * self.flows.len() + 48);
        out.push_str("flow,src,dst,bytes,start_us,finish_us\n");
        for (i, (f, r)) in self.flows.iter().zip(&self.results).enumerate() {
            let _ = writeln!(
                out,
                "{i},{},{},{},{},{}",
                f.src,
                f.dst,
                f.bytes,
                r.start.us_exact(),
                r.finish.us_exact()
            );
        }
        out
    }

    /// Hop latency in whole nanoseconds, as given.
    fn hop_latency_ns(&self) -> u64 {
        self.net.config().hop_latency.ps() / 1_000
    }

    pub fn text(&self) -> String {
        let (net, s) = (self.net, &self.summary);
        let c = net.config();
        let mut out = String::new();
        let links = match c.packet_format {
            Some(p) => format!(
                "{} Gb/s links ({:.2} Gb/s payload after {} headers{})",
                c.link_gbps,
                gbps(net.link_rate()),
                p.name,
                if p.completion.is_some() {
                    "; complete at the last ACK, store-and-forward switches"
                } else {
                    ""
                }
            ),
            None => format!("{} Gb/s ideal links", c.link_gbps),
        };
        let _ = writeln!(
            out,
            "leaf-spine: {} on {} ({} per leaf), {}, {links}, {} ns per hop",
            plural(net.hosts() as u64, "host", "hosts"),
            plural(net.leaves() as u64, "leaf", "leaves"),
            c.hosts_per_leaf,
            plural(net.spines() as u64, "spine", "spines"),
            self.hop_latency_ns()
        );
        let routing = match self.routing {
            RoutingKind::Ecmp => format!(
                "ecmp (seed {}, {} QP per connection)",
                self.routing_config.seed, self.routing_config.qps_per_connection
            ),
            other => other.as_str().to_string(),
        };
        let _ = writeln!(out, "routing: {routing}");
        let _ = writeln!(out, "flows: {} ({} bytes)", s.flows, self.total_bytes);
        let _ = writeln!(out, "makespan: {}", us3(s.makespan));
        let _ = writeln!(
            out,
            "FCT: mean {}, p50 {}, p99 {}, max {}",
            us3(s.mean),
            us3(s.p50),
            us3(s.p99),
            us3(s.max)
        );
        if let Some(w) = s.slowest {
            let f = self.flows[w.flow];
            let _ = writeln!(
                out,
                "slowest flow vs ideal: flow {} (host {} -> {}), {} vs {} alone: {:.2}x",
                w.flow,
                f.src,
                f.dst,
                us3(w.fct),
                us3(w.ideal),
                w.ratio
            );
        }
        out
    }

    /// The JSON text: [`Self::json_value`], pretty, keys in alphabetical order.
    pub fn json(&self) -> String {
        pretty_json(&self.json_value())
    }

    /// The JSON object, for a front end to print as it is or with keys of its own added.
    pub fn json_value(&self) -> serde_json::Value {
        let (net, s) = (self.net, &self.summary);
        let c = net.config();
        let us = |t: Time| t.as_us_f64();
        json_value(&FlowsJson {
            network: NetworkJson {
                hosts: net.hosts(),
                hosts_per_leaf: c.hosts_per_leaf,
                leaves: net.leaves(),
                spines: net.spines(),
                link_gbps: c.link_gbps,
                payload_gbps: gbps(net.link_rate()),
                packet_format: c.packet_format.map(|p| p.name),
                completion: c
                    .packet_format
                    .and_then(|p| p.completion)
                    .map(|_| "last ACK"),
                hop_latency_ns: self.hop_latency_ns(),
            },
            routing: self.routing.as_str(),
            seed: self.routing_config.seed,
            qps_per_connection: self.routing_config.qps_per_connection,
            flows: s.flows,
            bytes: self.total_bytes,
            makespan_us: us(s.makespan),
            fct_us: FctJson {
                mean: us(s.mean),
                p50: us(s.p50),
                p99: us(s.p99),
                max: us(s.max),
            },
            slowest: s.slowest.map(|w| {
                let f = self.flows[w.flow];
                SlowestJson {
                    flow: w.flow,
                    src: f.src,
                    dst: f.dst,
                    fct_us: us(w.fct),
                    ideal_us: us(w.ideal),
                    ratio: w.ratio,
                }
            }),
        })
    }
}

#[derive(Serialize)]
struct FlowsJson {
    network: NetworkJson,
    routing: &'static str,
    seed: u64,
    qps_per_connection: u32,
    flows: usize,
    bytes: u64,
    makespan_us: f64,
    fct_us: FctJson,
    slowest: Option<SlowestJson>,
}

#[derive(Serialize)]
struct NetworkJson {
    hosts: u32,
    hosts_per_leaf: u32,
    leaves: u32,
    spines: u32,
    link_gbps: f64,
    payload_gbps: f64,
    packet_format: Option<&'static str>,
    /// When a flow counts as complete, where not at its last byte's arrival (RoCE: `last ACK`).
    #[serde(skip_serializing_if = "Option::is_none")]
    completion: Option<&'static str>,
    hop_latency_ns: u64,
}

#[derive(Serialize)]
struct FctJson {
    mean: f64,
    p50: f64,
    p99: f64,
    max: f64,
}

#[derive(Serialize)]
struct SlowestJson {
    flow: usize,
    src: u32,
    dst: u32,
    fct_us: f64,
    ideal_us: f64,
    ratio: f64,
}

/// A collective swept over message sizes on a designed fabric, with what was taken down and how the
/// routes compare, as `railyard sim collective` reports it.
pub struct CollectiveRun<'f> {
    pub fabric: &'f Fabric,
    pub sweep: collective::Sweep,
    /// Network links taken down, sorted.
    pub failed: Vec<LinkId>,
    pub lost: FailureReport,
    pub gpudirect: bool,
    /// The protocols NCCL was left (`NCCL_PROTO`, `--proto`).
    pub protocols: nccl::Protocols,
    /// With OpenSM routing: how its routes compare with railyard's D-mod-K.
    pub vs_dmodk: Option<RouteComparison>,
    /// The sizes asked for (-b -e -f), before rounding as nccl-tests does.
    pub requested: Vec<u64>,
    /// Servers drained (a host cable down): the job ran on the others. Names, in server order.
    pub drained: Vec<String>,
    /// The rack-scale NVLink domain every node of the job is (multi-node NVLink: a GB200 NVL72
    /// rack of trays), `None` where a node is a server.
    pub nvlink_domain: Option<NvlDomain>,
    /// Why the routing is what it is, where it is the technology's default rather than asked
    /// for (the catalog's `default_routing`), printed beside it; in JSON `routing_default`.
    pub routing_default: Option<String>,
    /// How all-to-all and send/recv crossed rails (`--pxn`, `auto` resolved: `Relay::as_str`); in
    /// JSON `cross_rail`, as `train` names it. `None` for the collectives that relay nothing.
    pub cross_rail: Option<&'static str>,
}

impl CollectiveRun<'_> {
    /// The failed links' cabling.csv ids.
    fn cable_ids(&self) -> Vec<String> {
        let count = self.fabric.network_links().count();
        let index: BTreeMap<LinkId, usize> = self
            .fabric
            .network_links()
            .enumerate()
            .map(|(i, (l, _))| (l, i))
            .collect();
        self.failed
            .iter()
            .filter_map(|l| index.get(l).map(|&i| cable_id(i, count)))
            .collect()
    }

    pub fn text(&self) -> String {
        let mut o = String::new();
        self.head_text(&mut o);
        self.steps_text(&mut o);
        self.failures_text(&mut o);
        self.table_text(&mut o);
        o
    }

    /// The header: the run, the NVLink domain, routing, protocols and OpenSM's routes against
    /// dmodk.
    fn head_text(&self, o: &mut String) {
        let (f, r) = (self.fabric, &self.sweep);
        let m = &f.meta;
        let s = &r.shape;
        let _ = writeln!(
            o,
            "# railyard sim collective: {} on {}: {} server{} x {} {} = {} rank{}, NICs per server: {} ({} {}, GPUDirect RDMA {})",
            r.op,
            m.name,
            s.nodes, // digits alone, as every version of this line printed them
            if s.nodes == 1 { "" } else { "s" },
            s.gpus_per_node,
            m.gpu_model,
            s.ranks,
            if s.ranks == 1 { "" } else { "s" },
            s.nics_per_node,
            m.tech,
            m.topology,
            if self.gpudirect { "on" } else { "off" }
        );
        if let Some(d) = &self.nvlink_domain {
            let _ = writeln!(
                o,
                "# multi-node NVLink: a node is {} {} rack, {} trays x {} GPUs in one NVLink domain (NCCL's MNNVL clique): rings, trees and NVLS stay inside it; between racks traffic leaves through the trays' NICs over the {} fabric",
                if d.clique_trays < d.trays {
                    format!("the job's first {} of the {} trays of one", d.clique_trays, d.trays)
                } else {
                    "one".to_string()
                },
                d.system,
                d.clique_trays,
                m.gpus_per_server,
                m.tech
            );
        }
        match &self.routing_default {
            Some(why) => {
                let _ = writeln!(
                    o,
                    "# routing: {} ({why}), {} channels",
                    r.routing, s.channels
                );
            }
            None => {
                let _ = writeln!(o, "# routing: {}, {} channels", r.routing, s.channels);
            }
        }
        if !self.protocols.is_all() {
            let _ = writeln!(
                o,
                "# protocols NCCL may choose: {} (--proto, as NCCL_PROTO sets them)",
                self.protocols.label()
            );
        }
        if let Some(c) = &self.vs_dmodk {
            if c.differ == 0 {
                let _ = writeln!(
                    o,
                    "# OpenSM's routes equal railyard's dmodk on all {} connections of a shift permutation: the same times as --routing dmodk",
                    c.same
                );
            } else {
                let _ = writeln!(
                    o,
                    "# OpenSM's routes differ from railyard's dmodk on {} of {} connections of a shift permutation (e.g. {}): times may differ from --routing dmodk",
                    c.differ,
                    c.same + c.differ,
                    c.examples.join(", ")
                );
            }
        }
    }

    /// Each simulated step: its flows, rate per edge and bottleneck.
    fn steps_text(&self, o: &mut String) {
        let r = &self.sweep;
        for x in &r.models {
            if x.flows == 0 {
                let _ = writeln!(
                    o,
                    "# {} step: 0 flows (a single rank: nothing crosses a link; busbw is 0, as nccl-tests reports one rank)",
                    x.algorithm
                );
                continue;
            }
            let _ = write!(
                o,
                "# {} step: {} flows, {:.2} GB/s per edge",
                x.algorithm,
                x.flows,
                x.edge_gbs()
            );
            if let Some(b) = &x.bottleneck {
                let _ = write!(
                    o,
                    ", bottleneck {} ({:.2} GB/s, {} flow(s) on it)",
                    b.resource, b.capacity_gbs, b.flows
                );
            }
            o.push('\n');
            if let Some(c) = &x.counted {
                let _ = writeln!(o, "# {} step: {}", x.algorithm, counted_note(c));
            }
        }
    }

    /// The failed cables, the bisection and links they take, and the servers drained.
    fn failures_text(&self, o: &mut String) {
        if !self.failed.is_empty() {
            let _ = writeln!(
                o,
                "# failed cables ({}): {}",
                self.failed.len(),
                self.cable_ids().join(" ")
            );
            let (before, after) = self.lost.bisection_gbps;
            let _ = writeln!(
                o,
                "# bisection: {after} Gb/s of {before} ({:.2}% lost)",
                100.0 * (before - after) / before.max(f64::MIN_POSITIVE)
            );
            for (kind, down, total, gbps) in &self.lost.tiers {
                if *down > 0 {
                    let _ = writeln!(
                        o,
                        "# lost {}: {down} of {total} links ({:.2}% of the tier, {gbps} Gb/s per direction)",
                        kind.as_str(),
                        100.0 * *down as f64 / *total as f64
                    );
                }
            }
        }
        if !self.drained.is_empty() {
            let _ = writeln!(
                o,
                "# drained ({} of {} servers, a host cable down; the job runs on the {} left): {}",
                self.drained.len(),
                self.fabric.servers.len(),
                self.fabric.servers.len() - self.drained.len(),
                self.drained.join(" ")
            );
        }
    }

    /// The nccl-tests table, the algorithm and protocol by size, the average busbw and the notes
    /// on LL128's start-up and rounded sizes.
    fn table_text(&self, o: &mut String) {
        let r = &self.sweep;
        o.push_str("#\n");
        let rows: Vec<nccl::Row> = r.rows.iter().map(|x| x.row.clone()).collect();
        o.push_str(&nccl::table(r.op, &rows));
        let avg = rows.iter().map(|x| x.busbw_gbs).sum::<f64>() / rows.len().max(1) as f64;
        // Runs of sizes priced with one algorithm and protocol.
        let mut runs: Vec<(u64, u64, String)> = Vec::new();
        for x in &r.rows {
            let label = format!("{}/{}", x.algorithm, x.protocol.as_str());
            match runs.last_mut() {
                Some(last) if last.2 == label => last.1 = x.row.size_bytes,
                _ => runs.push((x.row.size_bytes, x.row.size_bytes, label)),
            }
        }
        let runs: Vec<String> = runs
            .iter()
            .map(|(a, b, l)| {
                if a == b {
                    format!("{a} {l}")
                } else {
                    format!("{a}-{b} {l}")
                }
            })
            .collect();
        let _ = writeln!(o, "# algorithm/protocol by size: {}", runs.join(", "));
        let _ = writeln!(o, "# Avg bus bandwidth    : {avg:.3}");
        let started: Vec<&collective::RowResult> =
            r.rows.iter().filter(|x| x.startup_us > 0.0).collect();
        if let (Some(first), Some(last)) = (started.first(), started.last()) {
            let _ = writeln!(
                o,
                "# LL128 across servers (sizes {}): NCCL's latency x {} (+{:.1} us), the start-up \
measured on published runs (docs/validation/mid-size-survey); NCCL's choice is made without it",
                if first.row.size_bytes == last.row.size_bytes {
                    format!("{}", first.row.size_bytes)
                } else {
                    format!("{}-{}", first.row.size_bytes, last.row.size_bytes)
                },
                r.fitted.ll128_net_startup_factor,
                last.startup_us
            );
        }
        let rounded: Vec<String> = self
            .requested
            .iter()
            .zip(&r.rows)
            .filter(|(asked, x)| **asked != x.row.size_bytes)
            .map(|(asked, x)| format!("{asked} -> {}", x.row.size_bytes))
            .collect();
        if !rounded.is_empty() {
            let per_rank = matches!(
                r.op,
                Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll
            );
            let _ =
                writeln!(
                o,
                "# sizes rounded down as nccl-tests rounds them, to whole 4-byte floats{}: {}{}",
                if per_rank {
                    format!(", the same number on each of the {} ranks", r.shape.ranks)
                } else {
                    String::new()
                },
                rounded.iter().take(8).cloned().collect::<Vec<_>>().join(", "),
                if rounded.len() > 8 { ", ..." } else { "" }
            );
            if r.rows.iter().any(|x| x.row.size_bytes == 0) {
                let _ = writeln!(
                    o,
                    "# a size of 0 moves nothing (less than one float{}): NCCL discards the call, 0 us",
                    if per_rank { " per rank" } else { "" }
                );
            }
        }
    }

    /// The JSON text: [`Self::json_value`], pretty, keys in alphabetical order.
    pub fn json(&self) -> String {
        pretty_json(&self.json_value())
    }

    /// The JSON object, for a front end to print as it is or with keys of its own added.
    pub fn json_value(&self) -> serde_json::Value {
        let (f, r) = (self.fabric, &self.sweep);
        let s = &r.shape;
        json_value(&CollectiveJson {
            collective: r.op.as_str(),
            design: &f.meta.name,
            tech: f.meta.tech.as_str(),
            topology: &f.meta.topology,
            gpu: &f.meta.gpu_model,
            gpudirect: self.gpudirect,
            protocols: self.protocols.names(),
            ranks: s.ranks,
            nodes: s.nodes,
            gpus_per_server: s.gpus_per_node,
            nics_per_server: s.nics_per_node,
            channels: s.channels,
            routing: &r.routing,
            routing_default: self.routing_default.as_deref(),
            cross_rail: self.cross_rail,
            opensm_vs_dmodk: self.vs_dmodk.as_ref(),
            steps: r.models.iter().map(StepJson::of).collect(),
            failed_cables: self.cable_ids(),
            drained_servers: &self.drained,
            nvlink_domain: self.nvlink_domain.as_ref(),
            lost: self
                .lost
                .tiers
                .iter()
                .map(|(k, down, total, gbps)| LostJson {
                    tier: k.as_str(),
                    down: *down,
                    total: *total,
                    gbps_lost: *gbps,
                })
                .collect(),
            bisection_gbps: BisectionJson {
                planned: self.lost.bisection_gbps.0,
                with_failures: self.lost.bisection_gbps.1,
            },
            rows: r
                .rows
                .iter()
                .zip(&self.requested)
                .map(|(x, requested)| RowJson {
                    size_bytes: x.row.size_bytes,
                    requested_bytes: *requested,
                    count: x.row.count,
                    time_us: x.row.time_us,
                    algbw_gbs: x.row.algbw_gbs,
                    busbw_gbs: x.row.busbw_gbs,
                    algorithm: x.algorithm,
                    protocol: x.protocol.as_str(),
                    latency_us: x.latency_us,
                    startup_us: x.startup_us,
                })
                .collect(),
        })
    }
}

#[derive(Serialize)]
struct CollectiveJson<'a> {
    collective: &'static str,
    design: &'a str,
    tech: &'static str,
    topology: &'a str,
    gpu: &'a str,
    gpudirect: bool,
    /// The protocols NCCL was left to choose from (all three unless `--proto` says).
    protocols: Vec<&'static str>,
    ranks: u32,
    nodes: u32,
    gpus_per_server: u32,
    nics_per_server: u32,
    channels: u32,
    routing: &'a str,
    /// Why `routing`, where it is the technology's default (absent where asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    routing_default: Option<&'a str>,
    /// How all-to-all and send/recv crossed rails, `auto` resolved (absent for the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    cross_rail: Option<&'static str>,
    opensm_vs_dmodk: Option<&'a RouteComparison>,
    steps: Vec<StepJson<'a>>,
    failed_cables: Vec<String>,
    /// Servers drained by a host cable down (absent when none).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    drained_servers: &'a [String],
    /// The rack-scale NVLink domain a node is (absent where a node is a server).
    #[serde(skip_serializing_if = "Option::is_none")]
    nvlink_domain: Option<&'a NvlDomain>,
    lost: Vec<LostJson>,
    bisection_gbps: BisectionJson,
    rows: Vec<RowJson>,
}

#[derive(Serialize)]
struct StepJson<'a> {
    algorithm: &'static str,
    flows: usize,
    edge_gbs: f64,
    path_latency_us: f64,
    bottleneck: Option<&'a collective::Bottleneck>,
    /// Present when the step was timed from flows counted per link: `exact` or `upper-bound`.
    #[serde(skip_serializing_if = "Option::is_none")]
    counted: Option<&'static str>,
}

impl<'a> StepJson<'a> {
    fn of(m: &'a StepModel) -> StepJson<'a> {
        StepJson {
            algorithm: m.algorithm,
            flows: m.flows,
            edge_gbs: m.edge_gbs(),
            path_latency_us: m.path_latency.as_us_f64(),
            bottleneck: m.bottleneck.as_ref(),
            counted: m
                .counted
                .map(|c| if c.exact { "exact" } else { "upper-bound" }),
        }
    }
}

/// What a step timed from flows counted per link (`collective::Counting`) means, for the text.
pub fn counted_note(c: &collective::Counting) -> &'static str {
    if c.exact {
        "timed from the flows counted on each link instead of simulating each flow: \
         exact, as equal flows that start together all end by the time those on the link with \
         the smallest share per flow do"
    } else {
        "timed from the flows counted on each link instead of simulating each flow: an \
         upper bound, as adaptive routing splits transfers into unequal sub-flows (each bounded \
         by the smallest share per flow on its path)"
    }
}

#[derive(Serialize)]
struct LostJson {
    tier: &'static str,
    down: usize,
    total: usize,
    gbps_lost: f64,
}

#[derive(Serialize)]
struct BisectionJson {
    planned: f64,
    with_failures: f64,
}

#[derive(Serialize)]
struct RowJson {
    size_bytes: u64,
    requested_bytes: u64,
    count: u64,
    time_us: f64,
    algbw_gbs: f64,
    busbw_gbs: f64,
    algorithm: &'static str,
    protocol: &'static str,
    /// The part of `time_us` that does not grow with the size (NCCL's latency, the slowest path,
    /// a calibration's latency).
    latency_us: f64,
    /// Of `latency_us`, the measured start-up of LL128 across servers NCCL's model leaves out.
    startup_us: f64,
}
