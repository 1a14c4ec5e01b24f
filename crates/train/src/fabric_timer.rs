//! Communication of a training step timed on the fabric by the flow-level simulator.
//!
//! Every operation is timed by sim's collective model, the one `sim collective` prints
//! (`collective::simulate_until`): each group is an NCCL communicator (its servers and the local
//! GPUs it takes on each; a pipeline hop is a communicator of two ranks), all groups' steps run
//! together on the engine over the fabric's routes, so groups that share NICs, spines or PCIe
//! switches slow each other as they would, and NCCL's tuning model picks algorithm and protocol
//! per size as it does for `sim collective`. The same collective on the same GPUs therefore
//! takes the same time in `train` and in `sim collective`. Groups NCCL's model has no shape for
//! (a group taking different GPUs on different servers) fall back to a ring of transfers timed
//! on the fabric: one step simulated at two probe sizes, every size from its latency and seconds
//! per byte; ring all-reduce 2(n-1) steps of S/n, reduce-scatter and all-gather n-1 steps of S/n
//! (Patarasuk and Yuan, JPDC 2009), all-to-all one round of S/n to every peer, send/recv one
//! transfer of S; plus NCCL's base latency for the ring Simple protocol.
//!
//! Crossing rails: a ring's hop between servers stays on one rail, as NCCL's ring search arranges
//! (the NVLink leg to the GPU on that rail overlaps the ring, [`Relay::Pxn`]); all-to-all and
//! send/recv cross rails as the timer's [`Relay`] says — by default [`Relay::auto`], NCCL's own
//! default: relayed over NVLink to the destination's rail, pipelined, on NVIDIA servers with
//! GPUDirect RDMA; otherwise through the spines, or store-and-forward over the server on a
//! rail-only fabric.

use crate::model::Model;
use crate::parallel::Parallelism;
use crate::simai::SimaiWorkload;
use crate::step::{step, Breakdown, CommTimer, Device, Op, Peaks, StepConfig, StepError};
use railyard_catalog::{number, Catalog};
use railyard_fabric::{Fabric, LinkId, PortId};
use railyard_sim::cancel::Cancel;
use railyard_sim::collective::{
    relay_of, simulate_until, transfers_makespan, CollectiveConfig, CollectiveError, Comm, Gpu,
    Relay, SendRecvPattern, Simulated,
};
use railyard_sim::fabric_net::{FabricNet, FabricRouting, NetConfig, RoutedNet};
use railyard_sim::nccl::Collective;
use railyard_sim::nccl::{base_latency_us, Algorithm, Protocol};
use railyard_sim::routing::RoutingKind;
use railyard_sim::scale_up::job_domains;
use railyard_sim::time::{duration_words, PastClock, Time};
use railyard_sim::SimError;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Why a step could not be timed on a fabric.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainError {
    /// The fabric's GPU model is not in the catalog.
    UnknownGpu(String),
    /// The fabric's network could not be built.
    Net(SimError),
    /// Communication of the step could not run on the fabric (no route, too large to simulate).
    Comm(CollectiveError),
    /// FP8 asked of a GPU (named) with no FP8 peak in the catalog.
    NoFp8(String),
    /// No flat efficiency given and no kernel table for the GPU (named).
    NoKernels(String),
    /// The step would end past the simulator's clock: how long, how much of it is compute, and
    /// the compute efficiency it ran at (`--efficiency`; `None` for a replayed workload, whose
    /// compute times are the file's).
    PastClock {
        past: PastClock,
        compute_s: f64,
        efficiency: Option<f64>,
    },
}

impl fmt::Display for TrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainError::UnknownGpu(id) => write!(f, "GPU {id} is not in the catalog"),
            TrainError::Net(e) => write!(f, "{e}"),
            TrainError::Comm(e) => write!(f, "{e}"),
            TrainError::NoKernels(id) => write!(
                f,
                "the {id} has no kernel efficiency table in the catalog (its generation has none), so its operations cannot be timed by shape; give --efficiency F (the fraction of the dense peak its kernels reach)"
            ),
            TrainError::NoFp8(id) => write!(
                f,
                "--precision fp8: the {id} has no FP8 peak in the catalog (no FP8 tensor cores); valid: bf16"
            ),
            TrainError::PastClock {
                past,
                compute_s,
                efficiency,
            } => {
                write!(f, "a training step would take {past}: compute ")?;
                match efficiency {
                    Some(e) => write!(
                        f,
                        "{} of it, at a compute efficiency of {} of the GPU's peak (--efficiency)",
                        duration_words(*compute_s),
                        number(*e)
                    ),
                    None => write!(
                        f,
                        "{} of it (by operation, or the workload's)",
                        duration_words(*compute_s)
                    ),
                }
            }
        }
    }
}

impl std::error::Error for TrainError {}

/// Where a step's communication runs: the fabric, the catalog it was built from, its network as
/// `net` says (a calibration, SHARP, links down), the routing policy, and how cross-rail transfers
/// are relayed.
#[derive(Debug, Clone, Copy)]
pub struct OnFabric<'a> {
    pub fabric: &'a Fabric,
    pub catalog: &'a Catalog,
    pub net: &'a NetConfig,
    pub routing: RoutingKind,
    pub relay: Relay,
}

/// One training step of `model` laid out as `par`, its communication simulated on the network
/// `on` describes.
pub fn simulate_step(
    on: &OnFabric,
    model: &Model,
    par: &Parallelism,
    cfg: &StepConfig,
) -> Result<Breakdown, TrainError> {
    let OnFabric {
        fabric,
        catalog,
        net: config,
        routing,
        relay,
    } = *on;
    let device = device_of(fabric, catalog, cfg)?;
    let stepped = with_timer(fabric, catalog, config, routing, relay, |timer| {
        Ok(step(model, par, device, cfg, timer))
    })?;
    finish_step(stepped, fabric, catalog, cfg)
}

/// The fabric's GPU as a step times it: its dense peaks, held to the precision `cfg` asks for,
/// and its generation's kernel table.
fn device_of<'c>(
    fabric: &Fabric,
    catalog: &'c Catalog,
    cfg: &StepConfig,
) -> Result<Device<'c>, TrainError> {
    let gpu = catalog
        .gpus
        .get(&fabric.meta.gpu_model)
        .ok_or_else(|| TrainError::UnknownGpu(fabric.meta.gpu_model.clone()))?;
    let peaks = Peaks {
        bf16_tflops: gpu.peak_tflops_bf16,
        fp8_tflops: gpu.peak_tflops_fp8,
    };
    if peaks.of(cfg.precision).is_none() {
        return Err(TrainError::NoFp8(gpu.id.clone()));
    }
    Ok(Device {
        peaks,
        kernels: gpu.generation.and_then(|g| catalog.kernels.get(&g)),
    })
}

/// A step's result as [`simulate_step`] reports it: its errors named, its time on the clock.
fn finish_step(
    stepped: Result<Breakdown, StepError>,
    fabric: &Fabric,
    catalog: &Catalog,
    cfg: &StepConfig,
) -> Result<Breakdown, TrainError> {
    let gpu_id = || {
        catalog
            .gpus
            .get(&fabric.meta.gpu_model)
            .map_or_else(|| fabric.meta.gpu_model.clone(), |g| g.id.clone())
    };
    let b = stepped.map_err(|e| match e {
        StepError::Comm(e) => TrainError::Comm(e),
        StepError::NoFp8 => TrainError::NoFp8(gpu_id()),
        StepError::NoKernels => TrainError::NoKernels(gpu_id()),
    })?;
    on_the_clock(b, cfg.compute_efficiency)
}

/// One step of a job that runs on some servers of a shared fabric (`study::jobs`), and what it
/// puts on the network: the step, the bytes one step puts on each directed network resource
/// (every operation's, times its calls per step), and the seconds the step spends communicating
/// (every operation's time times its calls, hidden or not).
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedStep {
    pub breakdown: Breakdown,
    pub resource_bytes: BTreeMap<u32, f64>,
    pub comm_s: f64,
    /// The operations whose traffic the step counts, with their calls per step: the same on any
    /// servers (ranks, not places), so [`placed_resource_bytes`] puts them on other servers
    /// without simulating the step again.
    pub ops: Vec<PlacedOp>,
}

/// One operation of a step as [`PlacedStep::ops`] keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedOp {
    pub op: Op,
    pub groups: Vec<Vec<u32>>,
    pub bytes: u64,
    pub calls_per_step: f64,
}

/// Bytes per step the operations `ops` put on each directed network resource when the job runs
/// on `at.servers`: the routes only, no simulation.
pub fn placed_resource_bytes(
    at: &Placed,
    ops: &[PlacedOp],
) -> Result<BTreeMap<u32, f64>, CollectiveError> {
    let timer = FabricTimer::placed(
        at.net,
        at.router,
        at.net.fabric.meta.gpus_per_server,
        at.relay,
        at.servers,
    );
    let mut out: BTreeMap<u32, f64> = BTreeMap::new();
    for o in ops {
        for (r, v) in timer.resource_bytes(o.op, &o.groups, o.bytes)? {
            *out.entry(r).or_default() += v * o.calls_per_step;
        }
    }
    Ok(out)
}

/// Where a placed job's step runs: a network already built (its capacities as other jobs leave
/// them), its router, the catalog, the relay, and the job's servers in rank order.
#[derive(Clone, Copy)]
pub struct Placed<'a, 'f> {
    pub net: &'a FabricNet<'f>,
    pub router: &'a dyn FabricRouting,
    pub catalog: &'a Catalog,
    pub relay: Relay,
    pub servers: &'a [usize],
}

/// One training step of `model` laid out as `par` on the servers `at` names, timed by the same
/// timer as [`simulate_step`] (on every server of the fabric in order, the same step exactly).
pub fn simulate_placed_step(
    at: &Placed,
    model: &Model,
    par: &Parallelism,
    cfg: &StepConfig,
) -> Result<PlacedStep, TrainError> {
    let fabric = at.net.fabric;
    let device = device_of(fabric, at.catalog, cfg)?;
    let timer = FabricTimer::placed(
        at.net,
        at.router,
        fabric.meta.gpus_per_server,
        at.relay,
        at.servers,
    );
    let recording = Recording {
        timer: &timer,
        calls: RefCell::new(Vec::new()),
    };
    let b = finish_step(
        step(model, par, device, cfg, &recording),
        fabric,
        at.catalog,
        cfg,
    )?;
    let ops: Vec<PlacedOp> = recording
        .calls
        .into_inner()
        .into_iter()
        .zip(&b.operations)
        // `step` counts each operation's traffic once, then records it: the two lists pair up.
        .map(|((op, groups, bytes), o)| PlacedOp {
            op,
            groups,
            bytes,
            calls_per_step: o.calls_per_step,
        })
        .collect();
    let comm_s = b
        .operations
        .iter()
        .map(|o| o.seconds_per_call * o.calls_per_step)
        .sum();
    let resource_bytes = placed_resource_bytes(at, &ops).map_err(TrainError::Comm)?;
    Ok(PlacedStep {
        breakdown: b,
        resource_bytes,
        comm_s,
        ops,
    })
}

/// An operation as a step asks for its traffic: the collective, its groups, the buffer.
type Call = (Op, Vec<Vec<u32>>, u64);

/// A timer that remembers the operations whose traffic a step counts, in order.
struct Recording<'t, 'a, 'f> {
    timer: &'t FabricTimer<'a, 'f>,
    calls: RefCell<Vec<Call>>,
}

impl CommTimer for Recording<'_, '_, '_> {
    fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError> {
        self.timer.seconds(op, groups, bytes)
    }

    fn tier_bytes(
        &self,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
    ) -> Result<BTreeMap<String, f64>, CollectiveError> {
        self.calls.borrow_mut().push((op, groups.to_vec(), bytes));
        self.timer.tier_bytes(op, groups, bytes)
    }

    fn gpus_per_server(&self) -> Option<u32> {
        self.timer.gpus_per_server()
    }
}

/// `b` if its step ends on the simulator's clock ([`Time::CLOCK`]); else why not. Every time a
/// step reports (its parts are below it) passes through here, as a collective's through
/// `collective::Simulated::row`.
fn on_the_clock(b: Breakdown, efficiency: Option<f64>) -> Result<Breakdown, TrainError> {
    match Time::from_secs_checked(b.step_time_s) {
        Ok(_) => Ok(b),
        Err(past) => Err(TrainError::PastClock {
            past,
            compute_s: b.compute_s,
            efficiency,
        }),
    }
}

/// A SimAI workload replayed on `fabric` ([`crate::simai::replay`]), its communication simulated
/// with `routing` and `relay`; `tokens` per step, when known, give tokens per second.
pub fn replay_workload(
    fabric: &Fabric,
    catalog: &Catalog,
    config: &NetConfig,
    w: &SimaiWorkload,
    tokens: Option<u64>,
    routing: RoutingKind,
    relay: Relay,
) -> Result<Breakdown, TrainError> {
    let b = with_timer(fabric, catalog, config, routing, relay, |timer| {
        crate::simai::replay(w, timer, tokens)
    })?;
    on_the_clock(b, None)
}

/// Runs `f` with the fabric's simulator as its communication timer, on the fabric's NVLink
/// domains as NCCL sees them (`RoutedNet::over_nvlink_domains`): a GB200/GB300 NVL72 rack is
/// one node whose job trays' GPUs the ranks fill (`scale_up::job_domains`), so tensor-, expert-
/// and context-parallel groups inside a rack run over NVLink and only what crosses racks takes
/// the trays' NICs.
fn with_timer<T>(
    fabric: &Fabric,
    catalog: &Catalog,
    config: &NetConfig,
    routing: RoutingKind,
    relay: Relay,
    f: impl FnOnce(&FabricTimer<'_, '_>) -> Result<T, CollectiveError>,
) -> Result<T, TrainError> {
    let domains = job_domains(fabric, catalog).map_err(|message| {
        TrainError::Net(SimError::Config {
            what: "scale-up domain",
            message,
        })
    })?;
    let RoutedNet { net, router } =
        RoutedNet::over_nvlink_domains(fabric, catalog, config, routing, config.hash)
            .map_err(TrainError::Net)?;
    let timer = FabricTimer::new(&net, &router, domains.ranks, relay);
    f(&timer).map_err(TrainError::Comm)
}

/// Average use of each network tier over the step: the bytes it carried over its capacity (every
/// link, both directions) times the step time.
pub fn network_utilisation(fabric: &Fabric, b: &Breakdown) -> BTreeMap<String, f64> {
    let mut capacity: BTreeMap<String, f64> = BTreeMap::new();
    for (_, l) in fabric.network_links() {
        *capacity.entry(l.kind.as_str().to_string()).or_default() += 2.0 * l.gbps * 1e9 / 8.0;
    }
    capacity
        .into_iter()
        .map(|(tier, bytes_per_s)| {
            let carried = b.network_bytes_per_tier.get(&tier).copied().unwrap_or(0.0);
            (tier, carried / (bytes_per_s * b.step_time_s))
        })
        .collect()
}

/// Probe sizes for the two-point fit, bytes per transfer.
const PROBE: [u64; 2] = [1 << 20, 2 << 20];

/// An operation on a set of groups: what one fit describes.
type FitKey = (Op, Vec<Vec<u32>>);

/// Times collectives on a simulated fabric. Rank r runs on GPU r of the cluster.
pub struct FabricTimer<'a, 'f> {
    net: &'a FabricNet<'f>,
    router: &'a dyn FabricRouting,
    /// Ranks on each node of the network: a server's GPUs, or the GPUs a job takes of a
    /// rack-scale NVLink domain (`scale_up::JobDomains::ranks`).
    gpus_per_server: u32,
    /// How all-to-all and send/recv cross rails between servers.
    relay: Relay,
    /// The fabric's servers the job's ranks run on, in rank order (`servers[r / gpus_per_server]`
    /// holds rank r); empty: every server of the fabric, rank r on server r / gpus_per_server.
    placed: Vec<usize>,
    /// (operation, groups) -> (latency s, seconds per byte of one transfer).
    fits: RefCell<HashMap<FitKey, (f64, f64)>>,
    /// (operation, groups) -> the collective simulated for those communicators, or `None` when
    /// they are not communicators NCCL's model describes.
    sims: RefCell<HashMap<FitKey, Timed>>,
}

/// How an operation on a set of groups is timed.
enum Timed {
    /// By sim's collective model (`collective::simulate_until`), as `sim collective` times it.
    Nccl(Box<Simulated>),
    /// No group has two ranks: nothing to send.
    Nothing,
    /// Groups that are not NCCL communicators of one shape: a ring of transfers on the fabric.
    Transfers,
}

impl<'a, 'f> FabricTimer<'a, 'f> {
    pub fn new(
        net: &'a FabricNet<'f>,
        router: &'a dyn FabricRouting,
        gpus_per_server: u32,
        relay: Relay,
    ) -> Self {
        FabricTimer {
            net,
            router,
            gpus_per_server,
            relay,
            placed: Vec::new(),
            fits: RefCell::new(HashMap::new()),
            sims: RefCell::new(HashMap::new()),
        }
    }

    /// The timer of a job that runs on `servers` of the fabric only (a job of a mix placed by a
    /// scheduler, `study::jobs`): its rank r on `servers[r / gpus_per_server]`. On every server of
    /// the fabric in order it is [`FabricTimer::new`]'s timer exactly.
    pub fn placed(
        net: &'a FabricNet<'f>,
        router: &'a dyn FabricRouting,
        gpus_per_server: u32,
        relay: Relay,
        servers: &[usize],
    ) -> Self {
        FabricTimer {
            placed: servers.to_vec(),
            ..FabricTimer::new(net, router, gpus_per_server, relay)
        }
    }

    /// The communicators `op` runs on for `groups`: each group (send/recv: each pair of
    /// consecutive ranks, a pipeline hop) as servers and the local GPUs it takes on each; `None`
    /// when a group takes different GPUs on different servers or the groups differ in shape.
    fn comms(&self, op: Op, groups: &[Vec<u32>]) -> Option<Vec<Comm>> {
        let gpus: Vec<Vec<Gpu>> = match op {
            Op::SendRecv => groups
                .iter()
                .flat_map(|g| g.windows(2).map(|w| vec![self.gpu(w[0]), self.gpu(w[1])]))
                .collect(),
            _ => groups
                .iter()
                .filter(|g| g.len() > 1)
                .map(|g| g.iter().map(|&r| self.gpu(r)).collect())
                .collect(),
        };
        let comms: Vec<Comm> = gpus
            .iter()
            .map(|g| Comm::of_gpus(g))
            .collect::<Option<_>>()?;
        let same = comms.windows(2).all(|w| {
            w[0].servers.len() == w[1].servers.len() && w[0].locals.len() == w[1].locals.len()
        });
        same.then_some(comms)
    }

    /// The time of `op` on `groups` from sim's collective model, the one `sim collective` uses:
    /// `Some(seconds)`, or `None` when the groups are not communicators it describes.
    fn nccl_seconds(
        &self,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
    ) -> Result<Option<f64>, CollectiveError> {
        let key = (op, groups.to_vec());
        if !self.sims.borrow().contains_key(&key) {
            let timed = match self.comms(op, groups) {
                Some(comms) if comms.is_empty() => Timed::Nothing,
                Some(comms) => {
                    let cfg = CollectiveConfig {
                        relay: self.relay(op),
                        collnet: self.net.sharp(),
                        // A pipeline hop or a ring-attention pass: each rank sends to the next once.
                        send_recv: SendRecvPattern::Pipeline,
                        ..CollectiveConfig::new(collective_of(op))
                    };
                    let sim = simulate_until(
                        self.net,
                        self.router,
                        &cfg,
                        &comms,
                        &mut |_| {},
                        Cancel::NEVER,
                    )?;
                    Timed::Nccl(Box::new(sim))
                }
                None => Timed::Transfers,
            };
            self.sims.borrow_mut().insert(key.clone(), timed);
        }
        Ok(match self.sims.borrow().get(&key) {
            Some(Timed::Nccl(sim)) => Some(sim.row(bytes)?.row.time_us * 1e-6),
            Some(Timed::Nothing) => Some(0.0),
            Some(Timed::Transfers) | None => None,
        })
    }

    /// The bytes `op` on `groups` moves as [`CommTimer::seconds`] times it: where NCCL's model
    /// times it (`nccl_seconds`), whole elements per rank as nccl-tests sizes them
    /// ([`Collective::tested_bytes`]): a reduce-scatter of fewer elements than ranks moves nothing
    /// and takes no time. Counting the bytes before that rounding put bytes on the links in no
    /// time: a model of ones showed 7984% link utilisation (issue 33).
    fn timed_bytes(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> u64 {
        let n = groups.first().map_or(1, Vec::len);
        match self.comms(op, groups) {
            Some(comms) if !comms.is_empty() => {
                collective_of(op).tested_bytes(bytes, 4, u32::try_from(n).unwrap_or(u32::MAX))
            }
            _ => bytes,
        }
    }

    /// Every network route one run of `op` on `groups` takes, as [`CommTimer::tier_bytes`]
    /// counts them: `visit(source NIC port, links, bytes on each)`. A transfer inside a server
    /// crosses no network link; a relayed one leaves from the NIC on the destination's rail.
    fn each_route(
        &self,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
        mut visit: impl FnMut(PortId, &[LinkId], f64),
    ) -> Result<(), CollectiveError> {
        let n = groups.first().map_or(1, Vec::len).max(1) as u64;
        let bytes = self.timed_bytes(op, groups, bytes);
        let (steps, per_transfer) = steps(op, n, bytes);
        let per_pair = (steps * per_transfer) as f64;
        let net = self.net;
        let mut routes = railyard_sim::fabric_net::Routes::default();
        for (k, (a, b)) in self.pairs(op, groups).into_iter().enumerate() {
            if a.server == b.server {
                continue; // NVLink or PCIe inside the server.
            }
            let (sa, sb) = (&net.servers[a.server], &net.servers[b.server]);
            let src_rail = match relay_of(net, a, b) {
                Some((_, rail)) if self.relay(op) != Relay::Direct => rail,
                _ => sa.nic_of_gpu[a.local as usize],
            };
            let (Some((_, sp)), Some((_, dp))) = (
                net.nic_port(a.server, src_rail, 0),
                net.nic_port(b.server, sb.nic_of_gpu[b.local as usize], 0),
            ) else {
                continue;
            };
            routes.clear();
            self.router
                .route_into(net, sp, dp, k as u32, &mut routes)
                .map_err(|e| CollectiveError::Routes {
                    failures: vec![e],
                    total: 1,
                })?;
            for i in 0..routes.len() {
                visit(sp, routes.path(i), per_pair / f64::from(routes.parts(i)));
            }
        }
        Ok(())
    }

    /// Bytes one run of `op` on `groups` puts on each directed network resource of the fabric
    /// (`FabricNet::network_path`'s indexes): where a job's traffic meets another's.
    pub fn resource_bytes(
        &self,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
    ) -> Result<BTreeMap<u32, f64>, CollectiveError> {
        let net = self.net;
        let mut out: BTreeMap<u32, f64> = BTreeMap::new();
        let mut path = Vec::new();
        self.each_route(op, groups, bytes, |src, links, share| {
            path.clear();
            net.network_path(src, links, &mut path);
            for &r in &path {
                *out.entry(r).or_default() += share;
            }
        })?;
        Ok(out)
    }

    /// How `op` crosses rails.
    fn relay(&self, op: Op) -> Relay {
        match op {
            Op::AllToAll | Op::SendRecv => self.relay,
            Op::AllReduce | Op::ReduceScatter | Op::AllGather => Relay::Pxn,
        }
    }

    /// Rank `rank`'s GPU: the job runs on the servers left (drained ones are not scheduled,
    /// `NetConfig::drained`), ranks filling them in order.
    fn gpu(&self, rank: u32) -> Gpu {
        let g = Gpu::of_rank(rank, self.gpus_per_server);
        // A placed job's servers, or else every server but the drained ones.
        let servers = if self.placed.is_empty() {
            self.net.active_servers()
        } else {
            &self.placed
        };
        match servers.get(g.server) {
            Some(&s) => Gpu::new(s, g.local),
            None => g,
        }
    }

    /// The transfers of one step of `op` in every group.
    fn pairs(&self, op: Op, groups: &[Vec<u32>]) -> Vec<(Gpu, Gpu)> {
        let mut pairs = Vec::new();
        for g in groups {
            let n = g.len();
            match op {
                Op::AllToAll => {
                    for (i, &a) in g.iter().enumerate() {
                        for (j, &b) in g.iter().enumerate() {
                            if i != j {
                                pairs.push((self.gpu(a), self.gpu(b)));
                            }
                        }
                    }
                }
                Op::SendRecv => {
                    for w in g.windows(2) {
                        pairs.push((self.gpu(w[0]), self.gpu(w[1])));
                    }
                }
                _ if n > 1 => {
                    for i in 0..n {
                        pairs.push((self.gpu(g[i]), self.gpu(g[(i + 1) % n])));
                    }
                }
                _ => {}
            }
        }
        pairs
    }

    fn fit(&self, op: Op, groups: &[Vec<u32>]) -> Result<(f64, f64), CollectiveError> {
        let key = (op, groups.to_vec());
        if let Some(&f) = self.fits.borrow().get(&key) {
            return Ok(f);
        }
        let pairs = self.pairs(op, groups);
        let fit = if pairs.is_empty() {
            (0.0, 0.0)
        } else {
            let mut t = [0.0; 2];
            for (k, &bytes) in PROBE.iter().enumerate() {
                let makespan =
                    transfers_makespan(self.net, self.router, &pairs, self.relay(op), bytes)?;
                t[k] = makespan.as_secs_f64();
            }
            let spb = (t[1] - t[0]) / (PROBE[1] - PROBE[0]) as f64;
            (t[0] - spb * PROBE[0] as f64, spb)
        };
        self.fits.borrow_mut().insert(key, fit);
        Ok(fit)
    }
}

/// The NCCL collective a training operation runs.
fn collective_of(op: Op) -> Collective {
    match op {
        Op::AllReduce => Collective::AllReduce,
        Op::ReduceScatter => Collective::ReduceScatter,
        Op::AllGather => Collective::AllGather,
        Op::AllToAll => Collective::AllToAll,
        Op::SendRecv => Collective::SendRecv,
    }
}

/// Ring steps and bytes per transfer of `op` on groups of `n` ranks for a buffer of `bytes`.
fn steps(op: Op, n: u64, bytes: u64) -> (u64, u64) {
    match op {
        Op::AllReduce => (2 * (n - 1), bytes / n),
        Op::ReduceScatter | Op::AllGather => (n - 1, bytes / n),
        Op::AllToAll => (1, bytes / n),
        Op::SendRecv => (1, bytes),
    }
}

impl CommTimer for FabricTimer<'_, '_> {
    fn gpus_per_server(&self) -> Option<u32> {
        Some(self.gpus_per_server)
    }

    fn tier_bytes(
        &self,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
    ) -> Result<BTreeMap<String, f64>, CollectiveError> {
        let net = self.net;
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        self.each_route(op, groups, bytes, |_, links, share| {
            for &l in links {
                *out.entry(net.fabric.link(l).kind.as_str().to_string())
                    .or_default() += share;
            }
        })?;
        Ok(out)
    }

    fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError> {
        if let Some(t) = self.nccl_seconds(op, groups, bytes)? {
            return Ok(t);
        }
        // Groups that take different GPUs on different servers: NCCL's model has no shape for
        // them; their ring of transfers is timed on the fabric as before.
        let n = groups.first().map_or(1, Vec::len).max(1) as u64;
        let (steps, per_transfer) = steps(op, n, bytes);
        if steps == 0 {
            return Ok(0.0);
        }
        let (latency, spb) = self.fit(op, groups)?;
        // NCCL's base latency, and what a calibration adds to every operation.
        let base = (base_latency_us(Algorithm::Ring, Protocol::Simple)
            + self.net.extra_latency_us())
            * 1e-6;
        Ok(base + steps as f64 * (latency + spb * per_transfer as f64))
    }
}

#[cfg(test)]
#[path = "fabric_timer_tests.rs"]
mod tests;
