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
//! send/recv cross rails as the timer's [`Relay`] says — by default [`Relay::auto`]: through the
//! spines, or relayed store-and-forward over NVLink on a rail-only fabric.

use crate::model::Model;
use crate::parallel::Parallelism;
use crate::simai::SimaiWorkload;
use crate::step::{step, Breakdown, CommTimer, Op, Peaks, StepConfig, StepError};
use railyard_catalog::{number, Catalog};
use railyard_fabric::Fabric;
use railyard_sim::cancel::Cancel;
use railyard_sim::collective::{
    relay_of, simulate_until, transfers_makespan, CollectiveConfig, CollectiveError, Comm, Gpu,
    Relay, SendRecvPattern, Simulated,
};
use railyard_sim::fabric_net::{FabricNet, FabricRouting, NetConfig, RoutedNet};
use railyard_sim::nccl::Collective;
use railyard_sim::nccl::{base_latency_us, Algorithm, Protocol};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
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
                    None => write!(f, "{} of it (the workload's)", duration_words(*compute_s)),
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
    let stepped = with_timer(fabric, catalog, config, routing, relay, |timer| {
        Ok(step(model, par, peaks, cfg, timer))
    })?;
    let b = stepped.map_err(|e| match e {
        StepError::Comm(e) => TrainError::Comm(e),
        StepError::NoFp8 => TrainError::NoFp8(gpu.id.clone()),
    })?;
    on_the_clock(b, Some(cfg.compute_efficiency))
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

/// Runs `f` with the fabric's simulator as its communication timer.
fn with_timer<T>(
    fabric: &Fabric,
    catalog: &Catalog,
    config: &NetConfig,
    routing: RoutingKind,
    relay: Relay,
    f: impl FnOnce(&FabricTimer<'_, '_>) -> Result<T, CollectiveError>,
) -> Result<T, TrainError> {
    let RoutedNet { net, router } =
        RoutedNet::new(fabric, catalog, config, routing, RoutingConfig::default())
            .map_err(TrainError::Net)?;
    let timer = FabricTimer::new(&net, &router, fabric.meta.gpus_per_server, relay);
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
    gpus_per_server: u32,
    /// How all-to-all and send/recv cross rails between servers.
    relay: Relay,
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
            fits: RefCell::new(HashMap::new()),
            sims: RefCell::new(HashMap::new()),
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
        match self.net.active_servers().get(g.server) {
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
    fn tier_bytes(
        &self,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
    ) -> Result<BTreeMap<String, f64>, CollectiveError> {
        let n = groups.first().map_or(1, Vec::len).max(1) as u64;
        let bytes = self.timed_bytes(op, groups, bytes);
        let (steps, per_transfer) = steps(op, n, bytes);
        let per_pair = (steps * per_transfer) as f64;
        let net = self.net;
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        let mut routes = railyard_sim::fabric_net::Routes::default();
        for (k, (a, b)) in self.pairs(op, groups).into_iter().enumerate() {
            if a.server == b.server {
                continue; // NVLink or PCIe inside the server.
            }
            let (sa, sb) = (&net.servers[a.server], &net.servers[b.server]);
            // A relayed transfer leaves from the NIC on the destination's rail.
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
                let share = per_pair / f64::from(routes.parts(i));
                for &l in routes.path(i) {
                    *out.entry(net.fabric.link(l).kind.as_str().to_string())
                        .or_default() += share;
                }
            }
        }
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
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::parallel::Parallelism;
    use crate::step::{step, Breakdown, StepConfig};
    use railyard_catalog::Catalog;
    use railyard_fabric::Fabric;
    use railyard_sim::fabric_net::{NetConfig, RoutedNet};
    use railyard_sim::routing::{RoutingConfig, RoutingKind};
    use railyard_spec::{presets, ClusterSpec, Overrides};

    fn fabric(o: Overrides) -> Fabric {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        o.apply(&mut raw).unwrap();
        let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    fn run(f: &Fabric, config: &NetConfig, model: &str, par: &Parallelism) -> Breakdown {
        run_routed(f, config, model, par, RoutingKind::DModK)
    }

    fn run_routed(
        f: &Fabric,
        config: &NetConfig,
        model: &str,
        par: &Parallelism,
        kind: RoutingKind,
    ) -> Breakdown {
        run_relayed(f, config, model, par, kind, Relay::auto(f))
    }

    fn run_relayed(
        f: &Fabric,
        config: &NetConfig,
        model: &str,
        par: &Parallelism,
        kind: RoutingKind,
        relay: Relay,
    ) -> Breakdown {
        let RoutedNet { net, router } = RoutedNet::new(
            f,
            &Catalog::builtin(),
            config,
            kind,
            RoutingConfig::default(),
        )
        .unwrap();
        let timer = FabricTimer::new(&net, &router, f.meta.gpus_per_server, relay);
        let m = Model::preset(model).unwrap();
        step(&m, par, Peaks::bf16(989.0), &StepConfig::default(), &timer).unwrap()
    }

    fn llama8b_dp(servers: u32) -> Parallelism {
        Parallelism {
            tp: 8,
            pp: 1,
            dp: servers,
            ep: 1,
            cp: 1,
            seq: 8192,
            micro_batch: 1,
            global_batch: u64::from(servers) * 4,
            zero: 1,
            recompute: false,
            grad_bf16: true,
            stage_layers: Vec::new(),
            vp: 1,
        }
    }

    fn servers(n: u32) -> Overrides {
        Overrides {
            servers: Some(n),
            ..Default::default()
        }
    }

    /// Fewer NICs (1:4 against 1:1) never make a step faster; GPUDirect off never makes it faster.
    #[test]
    fn more_nics_and_gpudirect_never_slow_a_step() {
        let par = llama8b_dp(16);
        let one_to_one = run(
            &fabric(servers(16)),
            &NetConfig::default(),
            "llama3-8b",
            &par,
        );
        let quarter = run(
            &fabric(Overrides {
                servers: Some(16),
                nic_ratio: Some((1, 4)),
                ..Default::default()
            }),
            &NetConfig::default(),
            "llama3-8b",
            &par,
        );
        assert!(
            one_to_one.step_time_s <= quarter.step_time_s,
            "{one_to_one:?} vs {quarter:?}"
        );
        assert!(quarter.data_parallel_total_s > 2.0 * one_to_one.data_parallel_total_s);
        let no_gdr = run(
            &fabric(Overrides {
                servers: Some(16),
                gpudirect: Some(false),
                ..Default::default()
            }),
            &NetConfig::default(),
            "llama3-8b",
            &par,
        );
        assert!(one_to_one.step_time_s <= no_gdr.step_time_s);
    }

    /// More oversubscription never makes a step faster. Adaptive routing spreads every flow over all
    /// up-links; with D-mod-K the answer depends on which destinations collide on the leaves'
    /// up-ports of each layout (on 32 servers, 2:1 collides where 4:1 does not), so it need not be
    /// monotonic.
    #[test]
    fn oversubscription_never_speeds_a_step() {
        let par = llama8b_dp(32);
        let mut last = 0.0;
        for r in [1.0, 2.0, 4.0] {
            let f = fabric(Overrides {
                servers: Some(32),
                topology: Some(railyard_spec::Topology::FatTree),
                oversubscription: Some(r),
                ..Default::default()
            });
            let b = run_routed(
                &f,
                &NetConfig::default(),
                "llama3-8b",
                &par,
                RoutingKind::Adaptive,
            );
            // Cable lengths differ between layouts: allow their nanoseconds.
            assert!(
                b.step_time_s >= last * (1.0 - 1e-6),
                "oversubscription {r}: {} < {last}",
                b.step_time_s
            );
            last = b.step_time_s;
        }
    }

    /// Pure data parallelism along rails inside one scalable unit: the reduce-scatter and all-gather
    /// rings cross two server-leaf cables per transfer and never a spine.
    #[test]
    fn data_parallel_traffic_stays_on_the_rail_leaves() {
        let par = llama8b_dp(16);
        let b = run(
            &fabric(servers(16)),
            &NetConfig::default(),
            "llama3-8b",
            &par,
        );
        let m = Model::preset("llama3-8b").unwrap();
        let n = 16u64;
        let per_transfer = m.params() * crate::step::BYTES_PER_VALUE / 8 / n;
        // 8 rails x n ring edges x (n-1) steps, two operations, two server-leaf cables per transfer.
        let expect = (8 * n * (n - 1) * per_transfer * 2 * 2) as f64;
        assert_eq!(
            b.network_bytes_per_tier.get("server-leaf").copied(),
            Some(expect)
        );
        assert!(
            b.network_bytes_per_tier
                .get("leaf-spine")
                .copied()
                .unwrap_or(0.0)
                == 0.0
        );
    }

    /// Expert parallelism across servers puts all-to-all on the wire.
    #[test]
    fn moe_all_to_all_is_timed_on_the_fabric() {
        let f = fabric(servers(8));
        let par = Parallelism {
            tp: 2,
            pp: 1,
            dp: 32,
            ep: 8,
            cp: 1,
            seq: 4096,
            micro_batch: 1,
            global_batch: 64,
            zero: 1,
            recompute: false,
            grad_bf16: true,
            stage_layers: Vec::new(),
            vp: 1,
        };
        let b = run(&f, &NetConfig::default(), "mixtral-8x7b", &par);
        assert!(b.expert_parallel_s > 0.0);
        assert!(b.tokens_per_s > 0.0 && b.mfu > 0.0 && b.mfu < 1.0, "{b:?}");
    }

    /// MoE on rail-only: with TP 2 an EP group of 8 spans two servers and three of each GPU's four
    /// remote peers sit on other rails. Without a spine those transfers are relayed over NVLink;
    /// staged (the Rail-only paper's model), the NVLink phase adds to the rail phase: per GPU
    /// 6/8 of its buffer over NVLink (3 local peers + 3 relayed, 370.8 GB/s) against 4/8 over its
    /// NIC (49.7 GB/s): 0.75/370.8 / (0.5/49.7) = 20% more all-to-all time, no more. The rest of the
    /// step is unchanged, so the step pays a few per cent; pipelined relaying (NCCL's PXN) hides it.
    #[test]
    fn moe_on_rail_only_pays_a_bounded_relay_penalty() {
        let par = Parallelism {
            tp: 2,
            pp: 1,
            dp: 64,
            ep: 8,
            cp: 1,
            seq: 4096,
            micro_batch: 1,
            global_batch: 512,
            zero: 1,
            recompute: false,
            grad_bf16: true,
            stage_layers: Vec::new(),
            vp: 1,
        };
        let go = |topology, relay: Option<Relay>| {
            let f = fabric(Overrides {
                servers: Some(16),
                topology: Some(topology),
                ..Default::default()
            });
            let relay = relay.unwrap_or_else(|| Relay::auto(&f));
            run_relayed(
                &f,
                &NetConfig::default(),
                "mixtral-8x7b",
                &par,
                RoutingKind::DModK,
                relay,
            )
        };
        let optimized = go(railyard_spec::Topology::RailOptimized, None);
        let rail_only = go(railyard_spec::Topology::RailOnly, None);
        let pipelined = go(railyard_spec::Topology::RailOnly, Some(Relay::Pxn));
        let a2a = rail_only.expert_parallel_s / optimized.expert_parallel_s - 1.0;
        assert!((0.18..0.21).contains(&a2a), "all-to-all penalty {a2a}");
        let step = rail_only.step_time_s / optimized.step_time_s - 1.0;
        assert!(step > 0.0 && step < 0.05, "step penalty {step}");
        assert_eq!(
            rail_only.data_parallel_total_s,
            optimized.data_parallel_total_s
        );
        let hidden = pipelined.expert_parallel_s / optimized.expert_parallel_s - 1.0;
        // Within 0.5%: the bandwidth is the same; NCCL's model adds each path's latency, and the
        // relayed path crosses NVLink where the rail-optimized one crosses a spine.
        assert!(hidden.abs() < 5e-3, "pipelined relay {hidden}");
    }

    /// Issue 12: `train` and `sim collective` give the same time for the same collective on the
    /// same GPUs, because both price it with `collective::simulate_until`. Every GPU of 16 DGX
    /// H100 (the communicator `sim collective` runs), for every operation and a few sizes; and a
    /// data-parallel group (one GPU per server) against the same function called directly.
    #[test]
    fn train_and_sim_collective_agree_exactly() {
        use railyard_sim::collective::{run, simulate_until, CollectiveConfig, Comm};
        let f = fabric(servers(16));
        let catalog = Catalog::builtin();
        let RoutedNet { net, router } = RoutedNet::new(
            &f,
            &catalog,
            &NetConfig::default(),
            RoutingKind::DModK,
            RoutingConfig::default(),
        )
        .unwrap();
        let relay = Relay::auto(&f);
        let timer = FabricTimer::new(&net, &router, 8, relay);
        let everyone: Vec<u32> = (0..128).collect();
        let sizes = [1u64 << 20, 64 << 20, 1 << 30];
        for op in [
            Op::AllReduce,
            Op::ReduceScatter,
            Op::AllGather,
            Op::AllToAll,
        ] {
            let cfg = CollectiveConfig {
                relay: timer.relay(op),
                ..CollectiveConfig::new(collective_of(op))
            };
            let sweep = run(&net, &router, &cfg, &sizes, &mut |_| {}).unwrap();
            for (row, &size) in sweep.rows.iter().zip(&sizes) {
                let t = timer
                    .seconds(op, std::slice::from_ref(&everyone), size)
                    .unwrap();
                assert_eq!(t, row.row.time_us * 1e-6, "{op:?} at {size} bytes");
            }
        }
        // Data-parallel groups: local GPU k of every server, all eight at once.
        let groups: Vec<Vec<u32>> = (0..8)
            .map(|k| (0..16).map(|s| s * 8 + k).collect())
            .collect();
        let comms: Vec<Comm> = (0..8)
            .map(|k| Comm {
                servers: (0..16).collect(),
                locals: vec![k],
            })
            .collect();
        let cfg = CollectiveConfig {
            relay: Relay::Pxn,
            ..CollectiveConfig::new(railyard_sim::nccl::Collective::AllReduce)
        };
        let sim = simulate_until(&net, &router, &cfg, &comms, &mut |_| {}, Cancel::NEVER).unwrap();
        let t = timer.seconds(Op::AllReduce, &groups, 1 << 30).unwrap();
        assert!(t > 0.0);
        assert_eq!(t, sim.row(1 << 30).unwrap().row.time_us * 1e-6);
    }

    /// A pipeline hop sends one way: stage s to s + 1, every stage at once. A middle stage sends
    /// once and receives once, so a hop takes as long with 4 stages as with 2 (the same bytes over
    /// the same kind of path), and a two-stage hop is what `sim collective sendrecv` gives for the
    /// two GPUs (nccl-tests' two ranks send both ways, on full-duplex links). Before, every stage
    /// boundary ran as a two-rank send/recv in both directions, so a middle stage sent to both
    /// neighbours at once and a hop of 3 or more stages took 1.9x as long.
    #[test]
    fn a_pipeline_hop_sends_one_way() {
        use railyard_sim::collective::{simulate_until, CollectiveConfig, Comm};
        let f = fabric(servers(4));
        let catalog = Catalog::builtin();
        let RoutedNet { net, router } = RoutedNet::new(
            &f,
            &catalog,
            &NetConfig::default(),
            RoutingKind::DModK,
            RoutingConfig::default(),
        )
        .unwrap();
        let timer = FabricTimer::new(&net, &router, 8, Relay::auto(&f));
        let bytes = 8 << 20;
        // Local GPU 0 of each server a stage.
        let chain = |stages: u32| -> Vec<Vec<u32>> {
            (0..stages - 1).map(|s| vec![s * 8, (s + 1) * 8]).collect()
        };
        let two = timer.seconds(Op::SendRecv, &chain(2), bytes).unwrap();
        let four = timer.seconds(Op::SendRecv, &chain(4), bytes).unwrap();
        assert!(two > 0.0);
        assert_eq!(two, four, "a hop of 4 stages against 2");
        // Two stages: nccl-tests' sendrecv on those two GPUs, as `sim collective` prices it.
        let cfg = CollectiveConfig {
            relay: Relay::auto(&f),
            ..CollectiveConfig::new(railyard_sim::nccl::Collective::SendRecv)
        };
        let pair = Comm {
            servers: vec![0, 1],
            locals: vec![0],
        };
        let sim = simulate_until(&net, &router, &cfg, &[pair], &mut |_| {}, Cancel::NEVER).unwrap();
        assert_eq!(two, sim.row(bytes).unwrap().row.time_us * 1e-6);
    }

    /// Regression (issue 33): `train --model-file` with every dimension 1 printed 7984% link
    /// utilisation. A reduce-scatter of fewer elements than ranks is empty and timed at 0 (NCCL
    /// discards it), but its bytes were counted on the links before nccl-tests' rounding, so bytes
    /// crossed them in no time. Now every operation's bytes on every tier fit the tier's capacity
    /// over the time the same operation is timed at, at sizes below, at and above the rank count.
    #[test]
    fn regression_train_counted_link_bytes_of_an_operation_timed_at_zero() {
        let f = fabric(servers(2));
        let RoutedNet { net, router } = RoutedNet::new(
            &f,
            &Catalog::builtin(),
            &NetConfig::default(),
            RoutingKind::DModK,
            RoutingConfig::default(),
        )
        .unwrap();
        let timer = FabricTimer::new(&net, &router, f.meta.gpus_per_server, Relay::auto(&f));
        let mut capacity: BTreeMap<String, f64> = BTreeMap::new();
        for (_, l) in f.network_links() {
            *capacity.entry(l.kind.as_str().to_string()).or_default() += 2.0 * l.gbps * 1e9 / 8.0;
        }
        // One rank per server (a data-parallel group across rails) and every rank.
        let groups = [vec![vec![0, 8]], vec![(0..16).collect::<Vec<u32>>()]];
        for g in &groups {
            for op in [
                Op::AllReduce,
                Op::ReduceScatter,
                Op::AllGather,
                Op::AllToAll,
            ] {
                for bytes in [1u64, 36, 60, 64, 100, 4096, 1 << 20] {
                    let t = timer.seconds(op, g, bytes).unwrap();
                    for (tier, carried) in timer.tier_bytes(op, g, bytes).unwrap() {
                        let most = capacity[&tier] * t;
                        assert!(
                            carried <= most * (1.0 + 1e-9),
                            "{op:?} of {bytes} B on {} ranks: {carried} B on {tier} in {t} s",
                            g[0].len()
                        );
                    }
                }
            }
        }
    }
}
