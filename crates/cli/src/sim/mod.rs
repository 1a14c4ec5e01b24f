//! `railyard sim`: runs the flow-level simulator (crate railyard-sim) and reports.
//!
//! `sim flows` builds a plain two-tier leaf-spine of single-NIC hosts from flags, reads flows from a
//! file, and prints flow-completion-time statistics (`sim::output::FlowsRun`); `--fct` writes one CSV
//! row per flow. Flags and the flows file are checked in full before anything is simulated or
//! written.
//!
//! `sim collective` builds the fabric of a design (the same flags as `plan`), picks the cables to
//! take down, and prints an nccl-tests style table of an NCCL collective swept over message sizes
//! (`study::collective::sweep`) on a `study::Scenario`. `--routing opensm:FILE` routes over an
//! OpenSM LFT dump (`study::collective::lfts`) instead of a built-in policy.

mod fitted;

use crate::design::{CalibrationArgs, DesignArgs, PxnArg, RouteArg, SharpArg};
use crate::error::CliError;
use crate::given::{flag, Given};
use crate::io::{json_with, print};
use crate::output::{Outputs, PathArgs};
use clap::{Args, Subcommand};
use railyard_study::collective::{self as coll, sweep, RouteSource, SweepError};
use railyard_study::collective::{check_flag_rate, CollectiveError, CollectiveRun, Lfts, SimError};
use railyard_study::collective::{AlgoChoice, Collective, Protocols, Relay, HOST_MEMORY_GBS};
use railyard_study::failures::FailureRequest;
use railyard_study::flows::MAX_RANDOM_FLOW_BYTES;
use railyard_study::flows::{self, FlowsFile, Generate, LeafSpine, LeafSpineAsk, Transport, Watch};
use railyard_study::rules;
use railyard_study::scenario::{Calibration, RoutingConfig};
use railyard_study::text::{number, thousands};
use railyard_study::{Catalog, Fabric, RoutingKind, RunSettings, Scenario};
use std::io::IsTerminal;
use std::path::PathBuf;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
#[command(group(clap::ArgGroup::new("source").required(true).args(["flows", "generate"])))]
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
    #[arg(long, value_name = "G", allow_negative_numbers = true)]
    pub link_gbps: f64,
    /// Latency of one hop (link and switch) in nanoseconds.
    #[arg(long, value_name = "L", allow_negative_numbers = true)]
    pub link_latency_ns: u64,
    /// Links carry payload at the raw rate (no packet headers subtracted; a flow completes when its
    /// last byte arrives).
    #[arg(long, conflicts_with = "transport")]
    pub ideal_links: bool,
    /// Transport: infiniband (InfiniBand headers; a flow completes at its last byte) or roce
    /// (RoCEv2 headers; a flow completes when the ACK of its last packet reaches the sender, through
    /// store-and-forward switches).
    #[arg(long, value_name = "T", default_value = "infiniband", value_parser = Transport::parse)]
    pub transport: Transport,
    /// Flows file: one flow per line, `src dst bytes [start_seconds]`, hosts by index; `#` starts a
    /// comment.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "generate",
        conflicts_with = "generate"
    )]
    pub flows: Option<PathBuf>,
    /// Random flows instead of a file:
    /// `lognormal:flows=N,median=SIZE[,sigma=S][,arrivals=zero|poisson][,load=L][,seed=N]`, between
    /// uniformly random pairs of hosts; sizes log-normal (sigma 2 unless given; SIZE as for `-b`,
    /// 1M = 1 MiB), all starting at time zero or as Poisson arrivals loading every host link to L
    /// (default 0.6); seed 1 unless given. Or `cdf:file=PATH,flows=N[,...]`: sizes from a CDF file of
    /// `SIZE PERCENT` lines (0% to 100%, linear between points), as HPCC's traffic_gen publishes
    /// them (web search, Hadoop, storage).
    #[arg(long, value_name = "SPEC", value_parser = Generate::parse)]
    pub generate: Option<Generate>,
    /// Routing: ecmp (per-flow hash over the spines, seeded; each queue pair hashed on its own),
    /// dmodk (spine = destination host index mod spines, as OpenSM ftree), adaptive (every flow
    /// spread evenly over all spines).
    #[arg(long, value_name = "R", default_value = "ecmp", value_parser = crate::design::parse_routing)]
    pub routing: RoutingKind,
    /// Seed of the ECMP hash.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Queue pairs per connection for ECMP, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION).
    #[arg(long, value_name = "N", default_value = "1", value_parser = crate::design::parse_qps)]
    pub qps_per_connection: u32,
    /// Write each flow's start and finish to OUT.csv (`flow,src,dst,bytes,start_us,finish_us`).
    #[arg(long, value_name = "OUT.csv")]
    pub fct: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

impl SimArgs {
    /// What `sim` reads and writes, for the output check (`sim collective` writes nothing).
    pub fn paths(&self) -> PathArgs {
        match &self.command {
            SimCommand::Flows(a) => PathArgs::default()
                .inputs("--flows", &a.flows)
                .inputs(
                    "--generate cdf:file=",
                    a.generate.as_ref().and_then(|g| g.cdf_file()),
                )
                .output_file("--fct", a.fct.as_ref()),
            SimCommand::Collective(_) => PathArgs::default(),
        }
    }
}

pub fn run(a: &SimArgs, given: &Given, outputs: &Outputs) -> Result<(), CliError> {
    match &a.command {
        SimCommand::Flows(f) => flows(f, given, outputs),
        SimCommand::Collective(c) => collective(c, given),
    }
}

/// `--qps-per-connection`, given with a routing that hashes nothing: refused, naming both flags
/// (study's rule).
/// The rules of a routed simulation (study's): queue pairs and the seed where nothing is hashed
/// or taken down at random.
fn routed_in_effect(given: &Given, facts: &rules::RoutedFacts) -> Result<(), CliError> {
    rules::routed_keys_in_effect(given, facts).map_err(|e| CliError::input(e.message))
}

fn flows(a: &FlowsArgs, given: &Given, outputs: &Outputs) -> Result<(), CliError> {
    if a.fct.as_deref() == Some(std::path::Path::new("-")) {
        return Err(CliError::input(
            "--fct -: give a file name for the CSV (stdout carries the summary, or --json)",
        ));
    }
    // Flags that cannot change the result are refused before anything is read or simulated.
    let facts = rules::RoutedFacts {
        routing: a.routing.as_str(),
        qps_per_connection: a.qps_per_connection,
        seed: a.seed,
        random_failures: None,
    };
    routed_in_effect(given, &facts)?;
    let net = flows::network(&LeafSpineAsk {
        hosts: a.hosts,
        hosts_per_leaf: a.hosts_per_leaf,
        spines: a.spines,
        link_gbps: a.link_gbps,
        link_latency_ns: a.link_latency_ns,
        ideal_links: a.ideal_links,
        transport: a.transport,
    })
    .map_err(flag_error)?;
    let (parsed, origin) = flows_of(a, &net)?;
    flows::check(&net, &parsed, &origin).map_err(CliError::input)?;

    let kind = a.routing;
    let config = RoutingConfig {
        seed: a.seed,
        qps_per_connection: a.qps_per_connection,
    };
    // Flows were checked against the network above, so this only fails on a bug. A hundred
    // thousand flows in flight at once take many minutes (BENCHMARKS.md): a terminal is shown how
    // far the engine got, once a second, on stderr.
    let watch = Watch::new();
    let done = AtomicBool::new(false);
    let run = std::thread::scope(|s| {
        if std::io::stderr().is_terminal() {
            s.spawn(|| show_flows_progress(&watch, &done, parsed.flows.len()));
        }
        let run = flows::simulate(&net, kind, config, &parsed, &watch);
        done.store(true, Ordering::Relaxed);
        run
    })
    .map_err(|e| CliError::failed(e.to_string()))?;
    if a.fct.is_some() {
        outputs.write_file("--fct", run.fct_csv(), false)?;
    }
    // A generated workload is named with every key it took (the file's path for a CDF), so the
    // output says which flows it is of; `seed` beside `routing` is ECMP's.
    let generated = a.generate.as_ref().map(|g| g.to_string());
    print(&if a.json {
        let generate = generated
            .as_ref()
            .map(|spec| ("generate", serde_json::json!(spec)));
        json_with(run.json_value(), generate)
    } else {
        let mut text = run.text();
        if let Some(spec) = &generated {
            text.push_str(&format!("generated: --generate {spec}\n"));
        }
        text
    })
}

/// The flows of `sim flows`: the `--flows` file's, or drawn as `--generate` says (its size CDF
/// file read), with the name errors give them.
fn flows_of(a: &FlowsArgs, net: &LeafSpine) -> Result<(FlowsFile, String), CliError> {
    Ok(match (&a.flows, &a.generate) {
        (Some(path), _) => {
            let text = crate::io::read_input(path, crate::io::Input::FLOWS)?;
            let parsed = flows::read_flows(&text, a.hosts, &path.display().to_string())
                .map_err(CliError::input)?;
            (parsed, path.display().to_string())
        }
        (None, Some(g)) => {
            let cdf = match g.cdf_file() {
                Some(path) => Some((
                    path,
                    crate::io::read_input(std::path::Path::new(path), crate::io::Input::SIZE_CDF)?,
                )),
                None => None,
            };
            let cdf = cdf.as_ref().map(|(path, text)| (*path, text.as_str()));
            let drawn = flows::generate(g, cdf, net, a.hosts).map_err(CliError::input)?;
            if drawn.capped > 0 {
                crate::io::say!(
                    "railyard: warning: --generate: {} of {} flows were drawn above {MAX_RANDOM_FLOW_BYTES} bytes (10^12) and capped at it, the largest flow the generator makes; the sizes above it are not log-normal (a smaller median or sigma keeps them below)",
                    drawn.capped,
                    drawn.flows.flows.len()
                );
            }
            (drawn.flows, "--generate".to_string())
        }
        // clap requires one of the two.
        (None, None) => return Err(CliError::input("give --flows FILE or --generate SPEC")),
    })
}

/// Prints, until `done`, a line a second on stderr of how far `sim flows` got: engine flows finished
/// (sub-flows where ECMP splits host flows into several) and simulated time, then clears it.
fn show_flows_progress(watch: &Watch, done: &AtomicBool, host_flows: usize) {
    let clock = Instant::now();
    let mut next = Duration::ZERO;
    // The first line is printed even when the run is already over, so a terminal always sees one.
    loop {
        let elapsed = clock.elapsed();
        if elapsed >= next {
            let r = watch.read();
            let line = if r.flows == 0 {
                format!("sim flows: routing {} flows", thousands(host_flows as f64))
            } else {
                let noun = if r.flows == host_flows as u64 {
                    "flows"
                } else {
                    "sub-flows"
                };
                format!(
                    "sim flows: {} of {} {noun} finished, {:.3} us simulated, {} s",
                    thousands(r.finished as f64),
                    thousands(r.flows as f64),
                    r.now.ps() as f64 / 1e6,
                    elapsed.as_secs()
                )
            };
            crate::io::to_stderr(&format!("\r\x1b[2Krailyard: {line}"));
            next += Duration::from_secs(1);
        }
        if done.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    crate::io::to_stderr("\r\x1b[2K");
}

/// A network parameter error, named as the flag the user typed.
fn flag_error(e: SimError) -> CliError {
    match e {
        SimError::Config { what, message } => CliError::input(format!("--{what}: {message}")),
        other => CliError::input(other.to_string()),
    }
}

/// `railyard sim collective OP [PRESET] [design flags] ...`.
#[derive(Debug, Args)]
pub struct CollectiveArgs {
    #[command(flatten)]
    pub memory: crate::memory::MemoryArgs,
    /// Collective: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv.
    #[arg(value_name = "OP", value_parser = parse_collective)]
    pub op: Collective,
    /// Built-in design to start from (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    /// The fabric as built: a fabric.json (`import ibnet`, `plan --out`) or ibnetdiscover /
    /// iblinkinfo output; its servers as the preset or --spec, or --gpu and --gpus-per-server, say.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// Algorithm, as NCCL_ALGO names them: ring, tree, collnetdirect, collnetchain, nvls,
    /// nvlstree, pat (each where NCCL runs it), or auto: NCCL's own choice per size, by its cost
    /// model (src/graph/tuning.cc), which is not always the fastest on this fabric.
    #[arg(long, value_name = "A", default_value = "auto", value_parser = crate::design::parse_algo)]
    pub algo: AlgoChoice,
    /// Protocols NCCL may choose from, as NCCL_PROTO names them: LL, LL128, Simple, a
    /// comma-separated list, or ^LIST for all but those. Default: all, each where NCCL enables it.
    /// Point-to-point sends (alltoall, sendrecv) use LL for small messages only where it is left.
    #[arg(long, value_name = "P", value_parser = Protocols::parse)]
    pub proto: Option<Protocols>,
    /// Routing: ecmp, dmodk, adaptive (where the switches, or on Ethernet a Spectrum-X pairing,
    /// do it), or opensm:FILE (an OpenSM LFT dump, `dump_lfts.sh` output). Default: as the
    /// technology's sites route it (the catalog's default_routing: InfiniBand adaptive, dmodk on
    /// switches without it; RoCE ecmp).
    #[arg(long, value_name = "R", value_parser = crate::design::parse_route)]
    pub routing: Option<RouteArg>,
    /// Seed of the ECMP hash and of --fail-links.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Queue pairs per connection for ECMP, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION).
    #[arg(long, value_name = "N", default_value = "1", value_parser = crate::design::parse_qps)]
    pub qps_per_connection: u32,
    /// How all-to-all and send/recv cross rails between servers. `on`: PXN, relayed over NVLink to the GPU on
    /// the destination's rail, the hops pipelined as NCCL's proxy does; `staged`: relayed
    /// store-and-forward (the NVLink phase, then the rail phase: the Rail-only paper's model);
    /// `off`: straight from the GPU's own NIC through the spines; `auto`: `off` where spines join
    /// the rails, `staged` on a rail-only fabric.
    #[arg(long, value_name = "auto|on|off|staged", default_value = "auto",
          value_parser = PxnArg::parse)]
    pub pxn: PxnArg,
    /// In-network all-reduce on SHARP switches: `on` lets NCCL use CollNetDirect / CollNetChain
    /// (and NVLS across servers) as with `NCCL_COLLNET_ENABLE=1` and the NCCL-SHARP plugin; `off`
    /// (default) as NCCL runs without the plugin. Refused on a fabric whose switches or NICs do
    /// not support SHARP (the error names them and the valid models).
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = SharpArg::parse)]
    pub sharp: SharpArg,
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
    /// Take N switch-to-switch cables (leaf-spine, spine-core) down, chosen at random (seeded by
    /// --seed); routes go around them.
    #[arg(long, value_name = "N")]
    pub fail_links: Option<usize>,
    /// Take N servers' cables down, chosen at random (seeded by --seed): a job with a dead host
    /// link aborts and the node is drained, so each drains its server and the job runs on the
    /// servers left, as a scheduler would run it.
    #[arg(long, value_name = "N")]
    pub fail_host_links: Option<usize>,
    /// Take a cable down by its cabling.csv id (C0000042, or C42); repeatable. The id of one leg of
    /// a twin-port or splitter cable takes every leg of that cable (its `assembly`) down.
    #[arg(long, value_name = "ID")]
    pub fail_cable: Vec<String>,
    /// Host memory bandwidth per server, GB/s, for GPUDirect RDMA off (default: 2 sockets x 8
    /// DDR5-4800 channels = 614.4).
    #[arg(long, value_name = "GB/S")]
    pub host_memory_gbs: Option<f64>,
    /// GPUs one nccl-tests thread drives (its `-g N`): a single-process `-g 8` run issues every
    /// operation on its 8 GPUs in turn, so 8 host launches (4.28 us each, measured) and, for
    /// all-to-all and send/recv, every point-to-point call (0.41 us each) take the place of NCCL's
    /// latency where longer, and the transfer follows them. Default 1: one process per GPU, as
    /// `mpirun` runs nccl-tests.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub gpus_per_thread: u32,
    /// On a rack-scale design (GB200/GB300 NVL72): the job runs on the first N compute trays of
    /// each rack, N x 4 GPUs in each rack's NVLink domain (NCCL's MNNVL clique is the job's ranks
    /// in a rack), as runs that leave trays of a rack out are published (OCI's and CoreWeave's
    /// 16 of 18 trays, 64 GPUs a rack). Default: every tray.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub trays_per_rack: Option<u32>,
    /// Replace a fitted constant of the model (one measured on published runs rather than taken
    /// from NCCL: `study::collective::Fitted`, listed in docs/validation.md with its runs), as
    /// NAME=VALUE; repeatable. For leave-one-source-out validation and for seeing what a constant
    /// is worth. Names: LL128_NET_STARTUP_FACTOR, NCCL_TESTS_HOST_US_PER_GPU,
    /// NCCL_TESTS_HOST_US_PER_P2P_CALL.
    #[arg(long, value_name = "NAME=VALUE")]
    pub fitted: Vec<String>,
    /// Print the rows and context as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The rates a user gave that a time past the clock may come from, for its message: the host
/// memory's (`--host-memory-gbs`) and a calibration's NIC rate (`--calibration`).
fn rates_given(
    given: &Given,
    host_memory_gbs: f64,
    args: &CalibrationArgs,
    calibration: &Calibration,
) -> String {
    let mut rates = Vec::new();
    if given.has(flag::HOST_MEMORY_GBS) {
        rates.push(format!("--host-memory-gbs {}", number(host_memory_gbs)));
    }
    if let (Some(path), Some(nic)) = (&args.calibration, calibration.nic_gbs) {
        rates.push(format!(
            "--calibration {} (nic_gbs {})",
            path.display(),
            number(nic)
        ));
    }
    if rates.is_empty() {
        String::new()
    } else {
        format!(" (rates given: {})", rates.join(", "))
    }
}

/// `--host-memory-gbs`, checked: as given, or the default.
pub fn host_memory(gbs: Option<f64>) -> Result<f64, CliError> {
    match gbs {
        Some(m) if !(m.is_finite() && m > 0.0 && m <= 1e6) => Err(CliError::input(format!(
            "--host-memory-gbs {}: must be a number of GB/s above zero, at most 1000000",
            number(m)
        ))),
        Some(m) => Ok(m),
        None => Ok(HOST_MEMORY_GBS),
    }
}

fn parse_collective(s: &str) -> Result<Collective, String> {
    s.parse()
}

fn parse_size_arg(s: &str) -> Result<u64, String> {
    railyard_study::parse_size(s)
}

/// Flags of `sim collective` that cannot change its result in the combination given, refused
/// naming both flags and where the flag does matter: the ECMP knobs on another route source,
/// `--algo` and `--sharp` on point-to-point operations, `--pxn` on the collective algorithms.
fn collective_flags_in_effect(a: &CollectiveArgs, given: &Given) -> Result<(), CliError> {
    // Without --routing the technology's default is not known before the design is built: the
    // ECMP knobs are checked once it is (`refuse_on_design`).
    let Some(given_routing) = &a.routing else {
        return rules::collective_keys_in_effect(given, &collective_facts(a, None, None))
            .map_err(|e| CliError::input(e.message));
    };
    let routing = route_name(given_routing);
    let random = match (a.fail_links, a.fail_host_links) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    let facts = rules::RoutedFacts {
        routing: &routing,
        qps_per_connection: a.qps_per_connection,
        seed: a.seed,
        random_failures: Some(random),
    };
    routed_in_effect(given, &facts)?;
    // The algorithm, SHARP and PXN on an operation they cannot change (study's rules).
    rules::collective_keys_in_effect(given, &collective_facts(a, None, Some(given_routing)))
        .map_err(|e| CliError::input(e.message))
}

/// A route source as `--routing` names it.
fn route_name(r: &RouteArg) -> String {
    match r {
        RouteArg::Policy(kind) => kind.as_str().to_string(),
        RouteArg::OpenSm(path) => format!("opensm:{}", path.display()),
    }
}

/// The ECMP knobs' rules once the design is built, where no --routing was given: its
/// technology's default routing is known now.
fn defaulted_routing_in_effect(
    a: &CollectiveArgs,
    given: &Given,
    routing: &RouteArg,
) -> Result<(), CliError> {
    if a.routing.is_some() {
        return Ok(());
    }
    let random = match (a.fail_links, a.fail_host_links) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    let name = route_name(routing);
    routed_in_effect(
        given,
        &rules::RoutedFacts {
            routing: &name,
            qps_per_connection: a.qps_per_connection,
            seed: a.seed,
            random_failures: Some(random),
        },
    )
}

/// What study's rules read of `sim collective`'s flags, with the design's NICs per server once
/// it is built, and its routing where known (`None`: not before the design says its default,
/// counted as hashing).
fn collective_facts(
    a: &CollectiveArgs,
    fabric: Option<&Fabric>,
    routing: Option<&RouteArg>,
) -> rules::CollectiveFacts {
    rules::CollectiveFacts {
        op: a.op,
        algo: AlgoChoice::NAMES[a.algo as usize],
        sharp: a.sharp.0,
        pxn: pxn_name(a.pxn.0),
        nics_per_server: fabric.map(|f| f.meta.compute_nics_per_server),
        design: fabric.map(|f| rules::CollectiveDesign {
            servers: f.servers.len(),
            gpudirect: f.meta.gpudirect,
        }),
        host_memory_gbs: a.host_memory_gbs.unwrap_or(HOST_MEMORY_GBS),
        seed: a.seed,
        qps_per_connection: a.qps_per_connection,
        ecmp: matches!(routing, None | Some(RouteArg::Policy(RoutingKind::Ecmp))),
    }
}

/// The `--pxn` value as given.
fn pxn_name(relay: Option<Relay>) -> &'static str {
    match relay {
        None => "auto",
        Some(Relay::Pxn) => "on",
        Some(Relay::Direct) => "off",
        Some(Relay::PxnStaged) => "staged",
    }
}

fn collective(a: &CollectiveArgs, given: &Given) -> Result<(), CliError> {
    a.memory.apply();
    collective_flags_in_effect(a, given)?;
    let sizes = coll::sizes(a.begin, a.end, a.factor).map_err(CliError::input)?;
    let host_memory_gbs = host_memory(a.host_memory_gbs)?;
    // The largest message must fit the simulator's clock at the host memory's rate, as one
    // transfer at least: said for the flag, before any work.
    if given.has(flag::HOST_MEMORY_GBS) {
        let largest = sizes.iter().copied().max().unwrap_or(a.end);
        check_flag_rate(
            "--host-memory-gbs",
            host_memory_gbs,
            largest,
            &format!("the {largest}-byte message (-e)"),
        )
        .map_err(CliError::input)?;
    }
    let calibration = a.calibration.load()?;
    let (fabric, catalog) =
        crate::fabric_arg::design_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
    // Without --routing, the technology's default (said beside the routing in the output).
    let default = a
        .routing
        .is_none()
        .then(|| railyard_study::scenario::default_routing(&fabric, &catalog))
        .flatten();
    let routing = match (&a.routing, &default) {
        (Some(r), _) => r.clone(),
        (None, Some((kind, _))) => RouteArg::Policy(*kind),
        // A technology the catalog does not describe: OpenSM's ftree, D-mod-K.
        (None, None) => RouteArg::Policy(RoutingKind::DModK),
    };
    defaulted_routing_in_effect(a, given, &routing)?;
    refuse_on_design(a, given, &fabric, &catalog, &routing)?;
    check_fits_servers(a, &fabric, &catalog)?;
    let scn = scenario(a, &routing, fabric, catalog, calibration, host_memory_gbs)?;
    let lfts = load_lfts(&routing, &scn.fabric)?;
    let routes = match (&routing, &lfts) {
        (RouteArg::OpenSm(_), Some((lfts, file))) => RouteSource::OpenSm { lfts, file },
        (RouteArg::Policy(kind), _) => RouteSource::Policy(
            *kind,
            RoutingConfig {
                seed: a.seed,
                qps_per_connection: a.qps_per_connection,
            },
        ),
        // `lfts` is Some exactly when the routing is opensm.
        (RouteArg::OpenSm(_), None) => return Err(CliError::failed("LFT dump not loaded")),
    };
    let fitted = fitted::constants(&a.fitted)?;
    let cfg = coll::config(&scn, a.op, a.algo, a.proto.unwrap_or_default(), fitted);
    let tty = std::io::stderr().is_terminal();
    let mut progress = |msg: &str| {
        if tty {
            crate::io::to_stderr(&format!("\r\x1b[2Krailyard: {msg}"));
        }
    };
    let result = sweep(
        &scn.fabric,
        &scn.catalog,
        &scn.net,
        routes,
        &cfg,
        &sizes,
        &mut progress,
    );
    if tty {
        crate::io::to_stderr("\r\x1b[2K");
    }
    let past_clock = |e: CollectiveError| {
        CliError::input(format!(
            "{e}{}",
            rates_given(given, host_memory_gbs, &a.calibration, &calibration)
        ))
    };
    let mut run = result.map_err(|e| match e {
        SweepError::Net(e) => CliError::input(e.to_string()),
        SweepError::Collective(e @ CollectiveError::TooManyFlows { .. }) => {
            CliError::input(format!("{}: {e}", a.op))
        }
        SweepError::Collective(e @ CollectiveError::PastClock { .. }) => past_clock(e),
        SweepError::Collective(e) => CliError::simulation(e, &routes.name()),
    })?;
    let g = a.gpus_per_thread;
    run.sweep = run.sweep.driven_by_one_thread(g).map_err(past_clock)?;
    run.routing_default = default.map(|(_, why)| why);
    print(&collective_output(a, &run, &calibration))
}

/// The scenario `sim collective` sweeps on: the design with its calibration, SHARP and host
/// memory as the flags say, relayed as `--pxn` says, with the cables `--fail-cable`,
/// `--fail-links` and `--fail-host-links` take down (and the servers they drain).
fn scenario(
    a: &CollectiveArgs,
    routing: &RouteArg,
    fabric: Fabric,
    catalog: Catalog,
    calibration: Calibration,
    host_memory_gbs: f64,
) -> Result<Scenario, CliError> {
    let run = RunSettings {
        routing: match routing {
            RouteArg::Policy(kind) => Some(*kind),
            // The LFT dump routes; the scenario's policy is unused.
            RouteArg::OpenSm(_) => None,
        },
        qps_per_connection: a.qps_per_connection,
        pxn: a.pxn.0,
        sharp: a.sharp.0,
        calibration,
        host_memory_gbs,
    };
    let mut scn = Scenario::built(fabric, catalog, &run);
    scn.net.rack_trays = a.trays_per_rack;
    scn.fail(&FailureRequest {
        cables: &a.fail_cable,
        links: a.fail_links,
        host_links: a.fail_host_links,
        seed: a.seed,
    })
    .map_err(|e| CliError::input(e.0))?;
    Ok(scn)
}

/// The design's own refusals of `sim collective`'s flags (study's rules, with the design known):
/// host memory on a design with GPUDirect RDMA, the rail and relay keys with one NIC per server,
/// on one server the flags that only act through a NIC or a switch; then `--sharp on` where NCCL
/// would run no algorithm that reduces in the switches.
fn refuse_on_design(
    a: &CollectiveArgs,
    given: &Given,
    fabric: &Fabric,
    catalog: &Catalog,
    routing: &RouteArg,
) -> Result<(), CliError> {
    let facts = collective_facts(a, Some(fabric), Some(routing));
    rules::collective_keys_in_effect(given, &facts).map_err(|e| CliError::input(e.message))?;
    rules::collective_sharp_in_effect(given, a.sharp.0, a.op, &mut || {
        railyard_study::collective::sharp_changes(fabric, catalog, a.op)
    })
    .map_err(|e| CliError::input(e.message))
}

/// The sweep fits the design's servers (`study::collective::fits_servers`).
fn check_fits_servers(
    a: &CollectiveArgs,
    fabric: &Fabric,
    catalog: &Catalog,
) -> Result<(), CliError> {
    coll::fits_servers(fabric, catalog, a.end, a.gpus_per_thread).map_err(CliError::input)
}

/// The OpenSM LFT dump `--routing opensm:FILE` names, read and checked against the fabric, with
/// its file name; `None` for a built-in policy.
fn load_lfts(routing: &RouteArg, fabric: &Fabric) -> Result<Option<(Lfts, String)>, CliError> {
    Ok(match routing {
        RouteArg::OpenSm(path) => {
            let text = crate::io::read_input(path, crate::io::Input::LFTS)?;
            let lfts = coll::lfts(&text, fabric)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            Some((lfts, path.display().to_string()))
        }
        RouteArg::Policy(_) => None,
    })
}

/// `sim collective`'s report: JSON, or the nccl-tests table with its notes.
fn collective_output(a: &CollectiveArgs, run: &CollectiveRun, calibration: &Calibration) -> String {
    let g = a.gpus_per_thread;
    if a.json {
        // `gpus_per_thread` is given only when above 1, `fitted_replaced` only with `--fitted`.
        let threads = (g > 1).then(|| ("gpus_per_thread", serde_json::json!(g)));
        let keys = a
            .calibration
            .json_key(calibration)
            .into_iter()
            .chain(threads)
            .chain(fitted::replaced_key(&run.sweep.fitted));
        json_with(run.json_value(), keys)
    } else {
        let mut text = run.text();
        if let Some(note) = a.calibration.note(calibration) {
            text.push_str(&format!("# {note}\n"));
        }
        for (name, value, shipped) in run.sweep.fitted.replaced() {
            text.push_str(&format!(
                "# fitted constant {name} replaced: {value} (shipped {shipped})\n"
            ));
        }
        if g > 1 {
            text.push_str(&format!(
                "# one thread drives {g} GPUs (nccl-tests -g {g}): no size above 0 takes less than {:.2} us\n",
                coll::host_floor_us(
                    run.sweep.op,
                    run.sweep.shape.ranks,
                    g,
                    &run.sweep.fitted
                )
            ));
        }
        text
    }
}
