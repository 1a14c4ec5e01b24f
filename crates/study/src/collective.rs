//! A collective swept over message sizes on a designed fabric ([`sweep`]): the network with its
//! failed cables and host memory, the route source, NCCL's algorithms priced per size, what the
//! failures cost, and over OpenSM's tables how far they agree with D-mod-K.

use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_ib::lft::{compare_with_dmodk, OpenSmRouting, Router};
use railyard_sim::collective::{self, CollectiveConfig};
use railyard_sim::fabric_net::{self, FabricNet, FabricRouting, NetConfig, TreeRouter};
use railyard_sim::routing::{RoutingConfig, RoutingKind};

use crate::scenario::Scenario;
/// The vocabulary of `sim collective`'s flags and report: the operations, protocols and algorithm
/// choices NCCL has, the message sizes of a sweep (`-b`, `-e`, `-f`), an OpenSM LFT dump, the
/// host memory bandwidth a server has by default, and the sweep's report (nccl-tests' table or
/// JSON).
pub use railyard_ib::lft::Lfts;
/// What a sweep fails with, as the front ends tell the input's fault (exit 2) from the
/// simulator's: the collective's and the simulator's errors.
pub use railyard_sim::collective::CollectiveError;
pub use railyard_sim::collective::{AlgoChoice, Relay};
pub use railyard_sim::fabric_net::HOST_MEMORY_GBS;
/// The model's fitted constants, which `sim collective --fitted NAME=VALUE` replaces.
pub use railyard_sim::fitted::Fitted;
pub use railyard_sim::nccl::{sweep as sizes, Collective, Protocols};
pub use railyard_sim::output::CollectiveRun;
/// Whether a rate a flag gave moves the largest transfer within the simulator's clock.
pub use railyard_sim::time::check_flag_rate;
pub use railyard_sim::SimError;
use std::fmt;

/// An OpenSM LFT dump (`--routing opensm:FILE`), parsed and checked against the fabric.
pub fn lfts(text: &str, fabric: &Fabric) -> Result<Lfts, String> {
    let lfts = railyard_ib::lft::parse(text).map_err(|e| e.to_string())?;
    railyard_ib::lft::check_matches(fabric, &lfts).map_err(|e| e.to_string())?;
    Ok(lfts)
}

/// How `op` runs on the scenario: NCCL left the algorithms `algo` and `protocols`, relayed across
/// rails as the scenario says, through the switches where it has SHARP, at the model's `fitted`
/// constants.
pub fn config(
    scn: &Scenario,
    op: Collective,
    algo: AlgoChoice,
    protocols: Protocols,
    fitted: Fitted,
) -> CollectiveConfig {
    CollectiveConfig {
        algo,
        protocols,
        relay: scn.relay(),
        collnet: scn.net.sharp,
        fitted,
        ..CollectiveConfig::new(op)
    }
}

/// The least time nccl-tests reports for `op` on `ranks` ranks above size 0 when one thread
/// drives `gpus_per_thread` GPUs (its `-g`): the kernel launches the thread makes one after
/// another, us, at the model's `fitted` host constants
/// ([`railyard_sim::collective::nccl_tests_host_us`]).
pub fn host_floor_us(op: Collective, ranks: u32, gpus_per_thread: u32, fitted: &Fitted) -> f64 {
    collective::nccl_tests_host_us(op, ranks, gpus_per_thread, fitted)
}

/// The sweep fits the design's servers, as nccl-tests runs it: its largest message (`end`, `-e`)
/// in one GPU's memory, and `gpus_per_thread` (`-g`) dividing a server's GPUs. The error names
/// the flag and the valid values.
pub fn fits_servers(
    fabric: &Fabric,
    catalog: &Catalog,
    end: u64,
    gpus_per_thread: u32,
) -> Result<(), String> {
    // nccl-tests holds the message in a buffer on every GPU (the receive buffer of all-gather and
    // all-to-all, both buffers of all-reduce): a size larger than a GPU's memory cannot run.
    if let Some(gpu) = catalog.gpus.get(&fabric.meta.gpu_model) {
        let memory = gpu.memory_bytes() as u64;
        if end > memory {
            return Err(format!(
                "-e {}: larger than the memory of one {}, {}, where nccl-tests holds the whole message; valid: at most {memory} bytes",
                end,
                gpu.id,
                gpu.memory_label()
            ));
        }
    }
    // nccl-tests' threads each drive GPUs of their own process, on one server: -g must divide
    // the GPUs of a server (as processes x threads x g = the GPUs of each node).
    let per_server = fabric.meta.gpus_per_server;
    if !per_server.is_multiple_of(gpus_per_thread) {
        let valid: Vec<String> = (1..=per_server)
            .filter(|d| per_server.is_multiple_of(*d))
            .map(|d| d.to_string())
            .collect();
        return Err(format!(
            "--gpus-per-thread {}: one thread drives GPUs of its own server, and {} does not divide the {per_server} GPUs of a server; valid: {}",
            gpus_per_thread,
            gpus_per_thread,
            valid.join(", ")
        ));
    }
    Ok(())
}

/// Where routes come from.
#[derive(Debug, Clone, Copy)]
pub enum RouteSource<'a> {
    /// A built-in policy over the tree, with its knobs.
    Policy(RoutingKind, RoutingConfig),
    /// An OpenSM LFT dump (`file`: its name, for reports).
    OpenSm { lfts: &'a Lfts, file: &'a str },
}

impl RouteSource<'_> {
    /// The name reports give the route source: `dmodk`, `opensm:lfts.txt`.
    pub fn name(&self) -> String {
        match self {
            RouteSource::Policy(kind, _) => kind.as_str().to_string(),
            RouteSource::OpenSm { file, .. } => format!("opensm:{file}"),
        }
    }

    fn router<'f>(&self, fabric: &'f Fabric) -> Box<dyn FabricRouting + 'f>
    where
        Self: 'f,
    {
        match *self {
            RouteSource::Policy(kind, config) => Box::new(TreeRouter::new(kind, config)),
            RouteSource::OpenSm { lfts, file } => Box::new(OpenSmRouting {
                router: Router::new(fabric, lfts),
                file: file.to_string(),
            }),
        }
    }
}

/// Why a sweep did not run.
#[derive(Debug, Clone, PartialEq)]
pub enum SweepError {
    /// The network could not be built (a failed link that does not exist, a bad host memory).
    Net(SimError),
    /// The collective could not run on it.
    Collective(CollectiveError),
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Net(e) => write!(f, "{e}"),
            SweepError::Collective(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SweepError {}

/// `cfg.op` on `fabric` at every size of `sizes` (as asked: nccl-tests' rounding shows in the
/// result), on the network `net` describes, routed by `routes`. `progress` hears about each phase.
pub fn sweep<'f>(
    fabric: &'f Fabric,
    catalog: &Catalog,
    net: &NetConfig,
    routes: RouteSource<'f>,
    cfg: &CollectiveConfig,
    sizes: &[u64],
    progress: &mut dyn FnMut(&str),
) -> Result<CollectiveRun<'f>, SweepError> {
    if let RouteSource::Policy(kind, _) = routes {
        fabric_net::check_routing(fabric, catalog, kind).map_err(SweepError::Net)?;
    }
    let network = FabricNet::over_nvlink_domains(fabric, catalog, net).map_err(SweepError::Net)?;
    let router = routes.router(fabric);
    let sweep = collective::run(&network, router.as_ref(), cfg, sizes, progress)
        .map_err(SweepError::Collective)?;
    let vs_dmodk = match routes {
        RouteSource::OpenSm { .. } => Some(compare_with_dmodk(&network, router.as_ref())),
        RouteSource::Policy(..) => None,
    };
    let mut failed = net.failed.clone();
    failed.sort();
    failed.dedup();
    Ok(CollectiveRun {
        fabric,
        sweep,
        lost: fabric_net::failure_report(fabric, &failed),
        failed,
        gpudirect: network.gpudirect(),
        protocols: cfg.protocols,
        vs_dmodk,
        requested: sizes.to_vec(),
        drained: fabric
            .servers
            .iter()
            .enumerate()
            .filter(|&(i, _)| network.is_drained(i))
            .map(|(_, s)| s.name.clone())
            .collect(),
        nvlink_domain: network.nvlink_domain().cloned(),
        routing_default: None,
        cross_rail: matches!(
            cfg.op,
            railyard_sim::nccl::Collective::AllToAll | railyard_sim::nccl::Collective::SendRecv
        )
        .then(|| cfg.relay.as_str()),
    })
}

/// Whether SHARP changes `op` on the design: the same collective with SHARP off is the test
/// (`sim collective --sharp on`); `None` where the fabric cannot take SHARP (its own error names
/// the switches).
pub fn sharp_changes(
    fabric: &railyard_fabric::Fabric,
    catalog: &railyard_catalog::Catalog,
    op: railyard_sim::nccl::Collective,
) -> Option<bool> {
    let config = railyard_sim::fabric_net::NetConfig {
        sharp: true,
        ..Default::default()
    };
    let net =
        railyard_sim::fabric_net::FabricNet::over_nvlink_domains(fabric, catalog, &config).ok()?;
    railyard_sim::collective::sharp_changes(&net, op).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_sim::collective::AlgoChoice;
    use railyard_sim::nccl::Collective;
    use railyard_spec::{presets, ClusterSpec, Overrides};

    fn fabric(servers: u32) -> Fabric {
        let mut raw = presets::raw("seed-leaf-spine").unwrap();
        Overrides {
            servers: Some(servers),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    /// A sweep is the collective's own run on the network asked for, plus what the failures cost:
    /// the same rows as `collective::run`, the failed cables once each, the sizes as asked.
    #[test]
    fn a_sweep_is_the_run_and_its_failures() {
        let f = fabric(8);
        let catalog = Catalog::builtin();
        let cable = f.cables()[3];
        let net = NetConfig {
            failed: vec![cable, cable],
            ..NetConfig::default()
        };
        let cfg = CollectiveConfig {
            algo: AlgoChoice::Ring,
            ..CollectiveConfig::new(Collective::AllReduce)
        };
        let sizes = [1 << 20, 1 << 30];
        let routes = RouteSource::Policy(RoutingKind::DModK, RoutingConfig::default());
        assert_eq!(routes.name(), "dmodk");
        let run = sweep(&f, &catalog, &net, routes, &cfg, &sizes, &mut |_| {}).unwrap();
        let network = FabricNet::new(&f, &catalog, &net).unwrap();
        let router = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
        let direct = collective::run(&network, &router, &cfg, &sizes, &mut |_| {}).unwrap();
        assert_eq!(run.sweep, direct);
        assert_eq!(run.failed, [cable]);
        assert_eq!(run.lost.tiers.iter().map(|t| t.1).sum::<usize>(), 1);
        assert_eq!(run.requested, sizes);
        assert_eq!(run.vs_dmodk, None);
        // A failed link the fabric does not have is the network's error, before any routing.
        let bad = NetConfig {
            failed: vec![railyard_fabric::LinkId(u32::MAX)],
            ..NetConfig::default()
        };
        assert!(matches!(
            sweep(&f, &catalog, &bad, routes, &cfg, &sizes, &mut |_| {}),
            Err(SweepError::Net(_))
        ));
    }
}
