//! `railyard sim`: runs the flow-level simulator (crate railyard-sim) and reports.
//!
//! `sim flows` builds a plain two-tier leaf-spine of single-NIC hosts from flags, reads flows from a
//! file, and prints flow-completion-time statistics; `--fct` writes one CSV row per flow. Flags and
//! the flows file are checked in full before anything is simulated or written.
//!
//! `sim collective` builds the fabric of a design (the same flags as `plan`), takes cables down if
//! asked, and prints an nccl-tests style table of an NCCL collective swept over message sizes
//! (crate railyard-sim, modules `fabric_net` and `collective`). `--routing opensm:FILE` routes over
//! an OpenSM LFT dump (crate railyard-ib) instead of a built-in policy.

use crate::design::{DesignArgs, PxnArg};
use crate::error::CliError;
use crate::io::{print, split_output, write_files};
use clap::{Args, Subcommand};
use railyard_fabric::{Fabric, LinkId};
use railyard_sim::collective::{self, AlgoChoice, CollectiveConfig, CollectiveError};
use railyard_sim::fabric_net::{self, FabricNet, FabricRouting, NetConfig, TreeRouter};
use railyard_sim::fct::{self, FctSummary};
use railyard_sim::flows_file;
use railyard_sim::leafspine::{self, FlowResult, HostFlow, LeafSpine, LeafSpineConfig};
use railyard_sim::nccl::{self, Collective};
use railyard_sim::rates::INFINIBAND;
use railyard_sim::routing::{self, RoutingConfig, RoutingKind};
use railyard_sim::{SimError, Time};
use std::fmt::Write;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SimArgs {
    #[command(subcommand)]
    pub command: SimCommand,
}

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Simulate flows between hosts on a plain two-tier leaf-spine (host i on leaf i / K, one link
    /// from every leaf to every spine).
    Flows(FlowsArgs),
    /// Simulate an NCCL collective on a designed fabric and print an nccl-tests style table.
    Collective(Box<CollectiveArgs>),
}

#[derive(Debug, Args)]
pub struct FlowsArgs {
    /// Number of hosts (one NIC each).
    #[arg(long, value_name = "H")]
    pub hosts: u32,
    /// Hosts per leaf switch: host i hangs off leaf i / K.
    #[arg(long, value_name = "K")]
    pub hosts_per_leaf: u32,
    /// Number of spine switches; every leaf has one link to each.
    #[arg(long, value_name = "S")]
    pub spines: u32,
    /// Rate of every link, per direction, in Gb/s.
    #[arg(long, value_name = "G")]
    pub link_gbps: f64,
    /// Latency of one hop (link and switch) in nanoseconds.
    #[arg(long, value_name = "L")]
    pub link_latency_ns: u64,
    /// Links carry payload at the raw rate (no InfiniBand packet headers subtracted).
    #[arg(long)]
    pub ideal_links: bool,
    /// Flows file: one flow per line, `src dst bytes [start_seconds]`, hosts by index; `#` starts a
    /// comment.
    #[arg(long, value_name = "FILE")]
    pub flows: PathBuf,
    /// Routing: ecmp (per-flow hash over the spines, seeded; each queue pair hashed on its own),
    /// dmodk (spine = destination host index mod spines, as OpenSM ftree), adaptive (every flow
    /// spread evenly over all spines).
    #[arg(long, value_name = "R", default_value = "ecmp", value_parser = crate::design::parse_routing)]
    pub routing: RoutingKind,
    /// Seed of the ECMP hash.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Queue pairs per connection for ECMP, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(routing::MAX_QPS_PER_CONNECTION)))]
    pub qps_per_connection: u32,
    /// Write each flow's start and finish to OUT.csv (`flow,src,dst,bytes,start_us,finish_us`).
    #[arg(long, value_name = "OUT.csv")]
    pub fct: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &SimArgs) -> Result<(), CliError> {
    match &a.command {
        SimCommand::Flows(f) => flows(f),
        SimCommand::Collective(c) => collective(c),
    }
}

fn flows(a: &FlowsArgs) -> Result<(), CliError> {
    let net = LeafSpine::new(LeafSpineConfig {
        hosts: a.hosts,
        hosts_per_leaf: a.hosts_per_leaf,
        spines: a.spines,
        link_gbps: a.link_gbps,
        hop_latency: Time::from_ns(a.link_latency_ns),
        packet_format: (!a.ideal_links).then_some(INFINIBAND),
    })
    .map_err(flag_error)?;
    let text = crate::io::read_input(&a.flows, crate::io::Input::FLOWS)?;
    let parsed = flows_file::parse(&text, a.hosts)
        .map_err(|e| CliError::input(e.render(&a.flows.display().to_string())))?;
    let (flows, total_bytes) = (parsed.flows, parsed.total_bytes);
    leafspine::check_flows(&net, &flows).map_err(|e| match e {
        SimError::Config { message, .. } => {
            CliError::input(format!("{}: {message}", a.flows.display()))
        }
        other => CliError::input(format!("{}: {other}", a.flows.display())),
    })?;
    let fct_out = a.fct.as_deref().map(split_output).transpose()?;

    let kind = a.routing;
    let policy = routing::build(
        kind,
        RoutingConfig {
            seed: a.seed,
            qps_per_connection: a.qps_per_connection,
        },
    );
    // Flows were checked against the network above, so this only fails on a bug.
    let run = leafspine::simulate(&net, policy.as_ref(), &flows)
        .map_err(|e| CliError::failed(e.to_string()))?;
    let summary = fct::summarize(&run.flows);

    if let Some((dir, name)) = fct_out {
        write_files(&dir, &[(name.as_str(), fct_csv(&flows, &run.flows))])?;
    }
    let report = Report {
        args: a,
        net: &net,
        routing: policy.name(),
        flows: &flows,
        total_bytes,
        summary: &summary,
    };
    if a.json {
        print(&report.json())
    } else {
        print(&report.text())
    }
}

/// A network parameter error, named as the flag the user typed.
fn flag_error(e: SimError) -> CliError {
    match e {
        SimError::Config { what, message } => CliError::input(format!("--{what}: {message}")),
        other => CliError::input(other.to_string()),
    }
}

/// One row per flow in input order. Times are exact decimal microseconds (picosecond resolution),
/// so the file is byte-identical across machines.
fn fct_csv(flows: &[HostFlow], results: &[FlowResult]) -> String {
    let mut out = String::with_capacity(48 * flows.len() + 48);
    out.push_str("flow,src,dst,bytes,start_us,finish_us\n");
    for (i, (f, r)) in flows.iter().zip(results).enumerate() {
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

/// Microseconds to the nearest nanosecond, from integers (no float formatting differences).
fn us3(t: Time) -> String {
    let ns = (t.ps() + 500) / 1_000;
    format!("{}.{:03} us", ns / 1_000, ns % 1_000)
}

fn gbps(bytes_per_second: f64) -> f64 {
    bytes_per_second * 8.0 / 1e9
}

struct Report<'a> {
    args: &'a FlowsArgs,
    net: &'a LeafSpine,
    routing: &'static str,
    flows: &'a [HostFlow],
    /// Bytes of every flow (checked: it fits).
    total_bytes: u64,
    summary: &'a FctSummary,
}

impl Report<'_> {
    fn text(&self) -> String {
        let (a, net, s) = (self.args, self.net, self.summary);
        let mut out = String::new();
        let links = match net.config().packet_format {
            Some(p) => format!(
                "{} Gb/s links ({:.2} Gb/s payload after {} headers)",
                a.link_gbps,
                gbps(net.link_rate()),
                p.name
            ),
            None => format!("{} Gb/s ideal links", a.link_gbps),
        };
        let _ = writeln!(
            out,
            "leaf-spine: {} hosts on {} leaves ({} per leaf), {} spines, {links}, {} ns per hop",
            net.hosts(),
            net.leaves(),
            a.hosts_per_leaf,
            net.spines(),
            a.link_latency_ns
        );
        let routing = match self.routing {
            "ecmp" => format!(
                "ecmp (seed {}, {} QP per connection)",
                a.seed, a.qps_per_connection
            ),
            other => other.to_string(),
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

    fn json(&self) -> String {
        let (a, net, s) = (self.args, self.net, self.summary);
        let us = |t: Time| t.as_us_f64();
        let slowest = s.slowest.map(|w| {
            let f = self.flows[w.flow];
            serde_json::json!({
                "flow": w.flow,
                "src": f.src,
                "dst": f.dst,
                "fct_us": us(w.fct),
                "ideal_us": us(w.ideal),
                "ratio": w.ratio,
            })
        });
        let value = serde_json::json!({
            "network": {
                "hosts": net.hosts(),
                "hosts_per_leaf": a.hosts_per_leaf,
                "leaves": net.leaves(),
                "spines": net.spines(),
                "link_gbps": a.link_gbps,
                "payload_gbps": gbps(net.link_rate()),
                "packet_format": net.config().packet_format.map(|p| p.name),
                "hop_latency_ns": a.link_latency_ns,
            },
            "routing": self.routing,
            "seed": a.seed,
            "qps_per_connection": a.qps_per_connection,
            "flows": s.flows,
            "bytes": self.total_bytes,
            "makespan_us": us(s.makespan),
            "fct_us": {
                "mean": us(s.mean),
                "p50": us(s.p50),
                "p99": us(s.p99),
                "max": us(s.max),
            },
            "slowest": slowest,
        });
        // A json! value of numbers and strings always serializes.
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// `railyard sim collective OP [PRESET] [design flags] ...`.
#[derive(Debug, Args)]
pub struct CollectiveArgs {
    /// Collective: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv.
    #[arg(value_name = "OP", value_parser = parse_collective)]
    pub op: Collective,
    /// Built-in design to start from (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// Algorithm: ring, tree (all-reduce only) or auto (the faster per size, as NCCL picks).
    #[arg(long, value_name = "A", default_value = "auto", value_parser = crate::design::parse_algo)]
    pub algo: AlgoChoice,
    /// Routing: ecmp, dmodk, adaptive, or opensm:FILE (an OpenSM LFT dump, `dump_lfts.sh` output).
    #[arg(long, value_name = "R", default_value = "dmodk", value_parser = crate::design::parse_route)]
    pub routing: RouteArg,
    /// Seed of the ECMP hash and of --fail-links.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Queue pairs per connection for ECMP, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(routing::MAX_QPS_PER_CONNECTION)))]
    pub qps_per_connection: u32,
    /// How all-to-all crosses rails between servers. `on`: PXN, relayed over NVLink to the GPU on
    /// the destination's rail, the hops pipelined as NCCL's proxy does; `staged`: relayed
    /// store-and-forward (the NVLink phase, then the rail phase: the Rail-only paper's model);
    /// `off`: straight from the GPU's own NIC through the spines; `auto`: `off` where spines join
    /// the rails, `staged` on a rail-only fabric.
    #[arg(long, value_name = "auto|on|off|staged", default_value = "auto",
          value_parser = PxnArg::parse)]
    pub pxn: PxnArg,
    /// Smallest message size (`8`, `1K`, `128M`, `8G`).
    #[arg(short = 'b', long = "minbytes", value_name = "SIZE", default_value = "8",
          value_parser = parse_size_arg)]
    pub begin: u64,
    /// Largest message size.
    #[arg(short = 'e', long = "maxbytes", value_name = "SIZE", default_value = "8G",
          value_parser = parse_size_arg)]
    pub end: u64,
    /// Multiply the size by this factor between rows.
    #[arg(
        short = 'f',
        long = "stepfactor",
        value_name = "FACTOR",
        default_value_t = 2
    )]
    pub factor: u64,
    /// Take N network cables down, chosen at random (seeded by --seed).
    #[arg(long, value_name = "N")]
    pub fail_links: Option<usize>,
    /// Take a cable down by its cabling.csv id (C0042); repeatable.
    #[arg(long, value_name = "ID")]
    pub fail_cable: Vec<String>,
    /// Host memory bandwidth per server, GB/s, for GPUDirect RDMA off (default: 2 sockets x 8
    /// DDR5-4800 channels = 614.4).
    #[arg(long, value_name = "GB/S")]
    pub host_memory_gbs: Option<f64>,
    /// Print the rows and context as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--routing`: a built-in policy or an OpenSM LFT dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteArg {
    Policy(RoutingKind),
    OpenSm(PathBuf),
}

fn parse_collective(s: &str) -> Result<Collective, String> {
    s.parse()
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    nccl::parse_size(s)
}

/// Cable ids as cabling.csv numbers them: `C` + the network link's 1-based index, zero-padded.
fn cable_id(index: usize, count: usize) -> String {
    format!(
        "C{}",
        railyard_fabric::topo::pad(index as u32, count as u32)
    )
}

/// The network links `--fail-cable` and `--fail-links` take down, sorted, each once.
fn failed_links(a: &CollectiveArgs, f: &Fabric) -> Result<Vec<LinkId>, CliError> {
    let net: Vec<LinkId> = f.network_links().map(|(l, _)| l).collect();
    let mut out = Vec::new();
    for id in &a.fail_cable {
        let n = id
            .strip_prefix(['C', 'c'])
            .and_then(|d| d.parse::<usize>().ok())
            .filter(|&n| (1..=net.len()).contains(&n))
            .ok_or_else(|| {
                CliError::input(format!(
                    "--fail-cable {id}: not a cable of this design; valid: {} .. {} (cabling.csv ids)",
                    cable_id(0, net.len()),
                    cable_id(net.len().saturating_sub(1), net.len())
                ))
            })?;
        out.push(net[n - 1]);
    }
    if let Some(n) = a.fail_links {
        if n > net.len() {
            return Err(CliError::input(format!(
                "--fail-links {n}: the design has {} network cables",
                net.len()
            )));
        }
        out.extend(fabric_net::random_network_links(f, n, a.seed));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn collective(a: &CollectiveArgs) -> Result<(), CliError> {
    let sizes = nccl::sweep(a.begin, a.end, a.factor).map_err(CliError::input)?;
    if let Some(m) = a.host_memory_gbs {
        if !(m.is_finite() && m > 0.0 && m <= 1e6) {
            return Err(CliError::input(format!(
                "--host-memory-gbs {m}: must be a number of GB/s above zero, at most 1000000"
            )));
        }
    }
    let (spec, catalog) = a.design.load(a.preset.as_deref())?;
    let fabric = crate::design::build(&spec, &catalog)?;
    let failed = failed_links(a, &fabric)?;
    let lfts = match &a.routing {
        RouteArg::OpenSm(path) => {
            let text = crate::io::read_input(path, crate::io::Input::LFTS)?;
            let lfts = railyard_ib::lft::parse(&text)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            Some((lfts, path.display().to_string()))
        }
        RouteArg::Policy(_) => None,
    };
    let config = NetConfig {
        host_memory_gbs: a.host_memory_gbs.unwrap_or(fabric_net::HOST_MEMORY_GBS),
        failed: failed.clone(),
        ..NetConfig::default()
    };
    let net =
        FabricNet::new(&fabric, &catalog, &config).map_err(|e| CliError::input(e.to_string()))?;
    let router: Box<dyn FabricRouting + '_> = match (&a.routing, &lfts) {
        (RouteArg::OpenSm(_), Some((lfts, file))) => Box::new(railyard_ib::lft::OpenSmRouting {
            router: railyard_ib::lft::Router::new(&fabric, lfts),
            file: file.clone(),
        }),
        (RouteArg::Policy(kind), _) => Box::new(TreeRouter {
            policy: routing::build(
                *kind,
                RoutingConfig {
                    seed: a.seed,
                    qps_per_connection: a.qps_per_connection,
                },
            ),
        }),
        // `lfts` is Some exactly when the routing is opensm.
        (RouteArg::OpenSm(_), None) => return Err(CliError::failed("LFT dump not loaded")),
    };
    let cfg = CollectiveConfig {
        op: a.op,
        algo: a.algo,
        relay: a.pxn.resolve(&fabric),
        collnet: false,
    };
    let tty = std::io::stderr().is_terminal();
    let mut progress = |msg: &str| {
        if tty {
            eprint!("\r\x1b[2Krailyard: {msg}");
        }
    };
    let result = collective::run(&net, router.as_ref(), &cfg, &sizes, &mut progress);
    if tty {
        eprint!("\r\x1b[2K");
    }
    let report = result.map_err(|e| match e {
        CollectiveError::Routes { .. } => {
            CliError::input(format!("routing {}: {e}", router.name()))
        }
        CollectiveError::Config { what, message } => {
            CliError::input(format!("--{what}: {message}"))
        }
        CollectiveError::Sim(e) => CliError::failed(e.to_string()),
        // `run` never cancels.
        CollectiveError::Cancelled => CliError::failed(e.to_string()),
    })?;
    let lost = fabric_net::failure_report(&fabric, &failed);
    // Over OpenSM's tables, say how far they agree with railyard's own D-mod-K routes: a shift
    // permutation of every NIC port (port i to port i + n/2) is compared path by path.
    let vs_dmodk = match &a.routing {
        RouteArg::OpenSm(_) => {
            let ports: Vec<_> = fabric
                .network_links()
                .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::ServerLeaf)
                .map(|(_, l)| l.a)
                .collect();
            let n = ports.len();
            let pairs: Vec<_> = (0..n)
                .map(|i| (ports[i], ports[(i + n / 2) % n]))
                .filter(|(x, y)| x != y)
                .collect();
            let dmodk = TreeRouter {
                policy: routing::build(RoutingKind::DModK, RoutingConfig::default()),
            };
            Some(railyard_ib::lft::compare_routes(
                &net,
                router.as_ref(),
                &dmodk,
                &pairs,
            ))
        }
        RouteArg::Policy(_) => None,
    };
    let out = CollectiveOut {
        fabric: &fabric,
        report: &report,
        failed: &failed,
        lost: &lost,
        gpudirect: net.gpudirect(),
        vs_dmodk: vs_dmodk.as_ref(),
        requested: &sizes,
    };
    if a.json {
        print(&out.json())
    } else {
        print(&out.text())
    }
}

struct CollectiveOut<'a> {
    fabric: &'a Fabric,
    report: &'a collective::Report,
    failed: &'a [LinkId],
    lost: &'a fabric_net::FailureReport,
    gpudirect: bool,
    /// With OpenSM routing: how its routes compare with railyard's D-mod-K.
    vs_dmodk: Option<&'a railyard_ib::lft::RouteComparison>,
    /// The sizes asked for (-b -e -f), before rounding as nccl-tests does.
    requested: &'a [u64],
}

impl CollectiveOut<'_> {
    fn cable_ids(&self) -> Vec<String> {
        let count = self.fabric.network_links().count();
        let index: std::collections::BTreeMap<LinkId, usize> = self
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

    fn text(&self) -> String {
        let (f, r) = (self.fabric, self.report);
        let m = &f.meta;
        let s = &r.shape;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "# railyard sim collective: {} on {}: {} servers x {} {} = {} ranks, NICs per server: {} ({} {}, GPUDirect RDMA {})",
            r.op,
            m.name,
            s.nodes,
            s.gpus_per_node,
            m.gpu_model,
            s.ranks,
            s.nics_per_node,
            m.tech,
            m.topology,
            if self.gpudirect { "on" } else { "off" }
        );
        let _ = writeln!(o, "# routing: {}, {} channels", r.routing, s.channels);
        if let Some(c) = self.vs_dmodk {
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
        }
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
                nccl::Collective::AllGather
                    | nccl::Collective::ReduceScatter
                    | nccl::Collective::AllToAll
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
                    "# a size of 0 moves nothing (less than one float{}): its time is latency alone",
                    if per_rank { " per rank" } else { "" }
                );
            }
        }
        o
    }

    fn json(&self) -> String {
        let (f, r) = (self.fabric, self.report);
        let s = &r.shape;
        let rows: Vec<serde_json::Value> = r
            .rows
            .iter()
            .zip(self.requested)
            .map(|(x, requested)| {
                serde_json::json!({
                    "size_bytes": x.row.size_bytes,
                    "requested_bytes": requested,
                    "count": x.row.count,
                    "time_us": x.row.time_us,
                    "algbw_gbs": x.row.algbw_gbs,
                    "busbw_gbs": x.row.busbw_gbs,
                    "algorithm": x.algorithm,
                    "protocol": x.protocol.as_str(),
                })
            })
            .collect();
        let models: Vec<serde_json::Value> = r
            .models
            .iter()
            .map(|m| {
                serde_json::json!({
                    "algorithm": m.algorithm,
                    "flows": m.flows,
                    "edge_gbs": m.edge_gbs(),
                    "path_latency_us": m.path_latency.as_us_f64(),
                    "bottleneck": m.bottleneck.as_ref().map(|b| serde_json::json!({
                        "resource": b.resource,
                        "capacity_gbs": b.capacity_gbs,
                        "flows": b.flows,
                    })),
                })
            })
            .collect();
        let lost: Vec<serde_json::Value> = self
            .lost
            .tiers
            .iter()
            .map(|(k, down, total, gbps)| {
                serde_json::json!({"tier": k.as_str(), "down": down, "total": total, "gbps_lost": gbps})
            })
            .collect();
        let value = serde_json::json!({
            "collective": r.op.as_str(),
            "design": f.meta.name,
            "tech": f.meta.tech.as_str(),
            "topology": f.meta.topology,
            "gpu": f.meta.gpu_model,
            "gpudirect": self.gpudirect,
            "ranks": s.ranks,
            "nodes": s.nodes,
            "gpus_per_server": s.gpus_per_node,
            "nics_per_server": s.nics_per_node,
            "channels": s.channels,
            "routing": r.routing,
            "opensm_vs_dmodk": self.vs_dmodk.map(|c| serde_json::json!({
                "same": c.same,
                "differ": c.differ,
                "examples": c.examples,
            })),
            "steps": models,
            "failed_cables": self.cable_ids(),
            "lost": lost,
            "bisection_gbps": {
                "planned": self.lost.bisection_gbps.0,
                "with_failures": self.lost.bisection_gbps.1,
            },
            "rows": rows,
        });
        // A json! value of numbers and strings always serializes.
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}
