//! `sim flows`: flows between hosts on a plain two-tier leaf-spine of single-NIC hosts (host i
//! on leaf i / K, one link from every leaf to every spine), read from a flows file or drawn at
//! random, checked against the network, and simulated to their completion times. The front end
//! reads the files and names them in errors.

use railyard_sim::flows_file;
use railyard_sim::leafspine::{self, LeafSpineConfig};
use railyard_sim::rates::{PacketFormat, INFINIBAND, ROCE_V2_COMPLETED};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_sim::traffic::{EmpiricalCdf, Sizes};
use railyard_sim::{SimError, Time};

/// What the leaf-spine, the flows and a run are: the network built, the flows to run on it (a
/// file's or drawn), and the run's flow-completion times (text, JSON, `--fct` CSV).
pub use railyard_sim::flows_file::FlowsFile;
pub use railyard_sim::leafspine::LeafSpine;
pub use railyard_sim::output::FlowsRun;
/// `--generate`: random flows (log-normal sizes, or an empirical CDF's), and the largest flow it
/// draws.
pub use railyard_sim::traffic::{Generate, MAX_RANDOM_FLOW_BYTES};
/// How far a run got, read while it runs (for a terminal's progress line).
pub use railyard_sim::Watch;

/// The leaf-spine `sim flows` builds from its flags.
#[derive(Debug, Clone, Copy)]
pub struct LeafSpineAsk {
    pub hosts: u32,
    pub hosts_per_leaf: u32,
    pub spines: u32,
    /// Every link's rate per direction, Gb/s.
    pub link_gbps: f64,
    /// One hop's latency (link and switch), ns.
    pub link_latency_ns: u64,
    /// Payload at the raw rate (no packet headers subtracted, complete at the last byte).
    pub ideal_links: bool,
    /// The transport whose framing and completion the links carry (ignored with `ideal_links`).
    pub transport: Transport,
}

/// `sim flows --transport`: whose packets the links carry and when a flow counts as complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// InfiniBand headers; a flow completes when its last byte arrives.
    #[default]
    Infiniband,
    /// RoCEv2 headers; a flow completes when the ACK of its last packet reaches the sender, through
    /// store-and-forward switches (`rates::ROCE_V2_COMPLETED`).
    Roce,
}

impl Transport {
    /// The valid `--transport` values.
    pub const NAMES: [&'static str; 2] = ["infiniband", "roce"];

    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Infiniband => "infiniband",
            Transport::Roce => "roce",
        }
    }

    /// `--transport` parsed; the error names the valid values.
    pub fn parse(s: &str) -> Result<Transport, String> {
        match s {
            "infiniband" => Ok(Transport::Infiniband),
            "roce" => Ok(Transport::Roce),
            _ => Err(format!(
                "unknown transport '{s}'; valid: {}",
                Transport::NAMES.join(", ")
            )),
        }
    }

    fn format(self) -> PacketFormat {
        match self {
            Transport::Infiniband => INFINIBAND,
            Transport::Roce => ROCE_V2_COMPLETED,
        }
    }
}

/// The network, or the parameter at fault ([`SimError::Config`] names it as its flag).
pub fn network(a: &LeafSpineAsk) -> Result<LeafSpine, SimError> {
    LeafSpine::new(LeafSpineConfig {
        hosts: a.hosts,
        hosts_per_leaf: a.hosts_per_leaf,
        spines: a.spines,
        link_gbps: a.link_gbps,
        hop_latency: Time::from_ns(a.link_latency_ns),
        packet_format: (!a.ideal_links).then_some(a.transport.format()),
    })
}

/// A flows file of `hosts` hosts; the error lists every problem, each naming `origin` and its line.
pub fn read_flows(text: &str, hosts: u32, origin: &str) -> Result<FlowsFile, String> {
    flows_file::parse(text, hosts).map_err(|e| e.render(origin))
}

/// Flows drawn as `--generate` says, and how many were capped at [`MAX_RANDOM_FLOW_BYTES`].
#[derive(Debug, Clone)]
pub struct Drawn {
    pub flows: FlowsFile,
    pub capped: usize,
}

/// Flows drawn at random on `net` as `g` says; `cdf` is the size CDF file `g` names (its path and
/// text), read by the front end. Errors name the CDF file (and line) or `--generate`.
pub fn generate(
    g: &Generate,
    cdf: Option<(&str, &str)>,
    net: &LeafSpine,
    hosts: u32,
) -> Result<Drawn, String> {
    let mut g = g.clone();
    if let Some((path, text)) = cdf {
        let cdf = EmpiricalCdf::parse(text).map_err(|(line, message)| {
            if line == 0 {
                format!("{path}: {message}")
            } else {
                format!("{path}: line {line}: {message}")
            }
        })?;
        g.sizes = Sizes::Empirical(cdf);
    }
    let drawn = g
        .flows(hosts, net.link_rate())
        .map_err(|e| format!("--generate: {e}"))?;
    let flows = drawn.flows;
    // At most 10^7 flows of at most 10^12 bytes: the sum fits in a u64.
    let total_bytes = flows.iter().map(|f| f.bytes).sum();
    Ok(Drawn {
        flows: FlowsFile { flows, total_bytes },
        capped: drawn.capped,
    })
}

/// The flows fit the network (hosts, sizes, start times); the error names `origin`.
pub fn check(net: &LeafSpine, flows: &FlowsFile, origin: &str) -> Result<(), String> {
    leafspine::check_flows(net, &flows.flows).map_err(|e| match e {
        SimError::Config { message, .. } => format!("{origin}: {message}"),
        other => format!("{origin}: {other}"),
    })
}

/// The flows simulated on the network, routed by `routing` (ECMP hashed by `config`), `watch`
/// told how far the engine got.
pub fn simulate<'a>(
    net: &'a LeafSpine,
    routing: RoutingKind,
    config: RoutingConfig,
    flows: &'a FlowsFile,
    watch: &Watch,
) -> Result<FlowsRun<'a>, SimError> {
    FlowsRun::simulate_watched(net, routing, config, &flows.flows, flows.total_bytes, watch)
}
