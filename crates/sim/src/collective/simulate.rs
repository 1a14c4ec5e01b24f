//! A collective simulated: each needed algorithm's step once, every size priced from it.

use crate::cancel::Cancel;
use crate::collective::comm::Comm;
use crate::collective::config::AlgoChoice;
use crate::collective::config::CollectiveConfig;
use crate::collective::error::CollectiveError;
use crate::collective::lay_out::StepLayout;
use crate::collective::nccl_system;
use crate::collective::price::family_of;
use crate::collective::price::price;
use crate::collective::price::realized_time_us;
use crate::collective::price::why_disabled;
use crate::collective::price::Family;
use crate::collective::shape_of_comm;
use crate::collective::AllToAll;
use crate::collective::Bottleneck;
use crate::collective::CollectiveAlgorithm;
use crate::collective::DoubleBinaryTree;
use crate::collective::JobShape;
use crate::collective::NvlsTreeNetwork;
use crate::collective::Ring;
use crate::collective::RowResult;
use crate::collective::SendRecv;
use crate::collective::StepModel;
use crate::collective::Sweep;
use crate::collective::COUNT_EQUAL_ABOVE_FLOWS;
use crate::collective::FOLD_ABOVE_FLOWS;
use crate::collective::MAX_ALLTOALL_FLOWS;
use crate::nccl;
use crate::nccl::fitted::Fitted;
use crate::nccl::p2p::P2pSchedule;
use crate::nccl::tuning;
use crate::nccl::tuning::NcclAlgo;
use crate::nccl::tuning::NcclSystem;
use crate::nccl::tuning::Tuning;
use crate::nccl::Collective;
use crate::nccl::Protocol;
use crate::nccl::Protocols;
use crate::net::fabric_net::FabricNet;
use crate::net::routes::FabricRouting;
use crate::time::Time;
/// Simulates `cfg.op` on `net` for every size: one step per algorithm on the engine, then priced per
/// size and protocol. `progress` hears about each phase (for a terminal).
pub fn run(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    cfg: &CollectiveConfig,
    sizes: &[u64],
    progress: &mut dyn FnMut(&str),
) -> Result<Sweep, CollectiveError> {
    run_until(net, router, cfg, sizes, progress, Cancel::NEVER)
}

/// [`run`] that stops with [`CollectiveError::Cancelled`] soon after `cancel` is set: the flag is
/// read while a step is laid out, at every engine event, and between phases and algorithms.
pub fn run_until(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    cfg: &CollectiveConfig,
    sizes: &[u64],
    progress: &mut dyn FnMut(&str),
    cancel: Cancel<'_>,
) -> Result<Sweep, CollectiveError> {
    let sim = simulate_until(net, router, cfg, &[Comm::whole(net)], progress, cancel)?;
    sim.sweep(sizes)
}

/// The bottleneck of the slowest simulated step: what holds a collective back where it is slow.
pub(super) fn slowest_bottleneck(models: &[StepModel]) -> Option<Bottleneck> {
    models
        .iter()
        .max_by(|a, b| a.secs_per_byte.total_cmp(&b.secs_per_byte))
        .and_then(|m| m.bottleneck.clone())
}

/// A collective simulated on the fabric for a set of communicators that run it at the same time
/// (every data-parallel group of a training job, say): the simulated steps, and how NCCL prices a
/// size from them. [`Simulated::row`] prices one size; the communicators share the fabric, so a
/// size costs what the slowest of them takes. `sim collective` is the case of one communicator
/// of every GPU ([`run_until`]); `train` times every operation of a step through the same
/// function, so both give the same time for the same collective on the same GPUs.
pub struct Simulated {
    pub op: Collective,
    pub shape: JobShape,
    pub routing: String,
    pub models: Vec<StepModel>,
    pub(super) pricing: Pricing,
    /// A calibration's latency added to every operation (`NetConfig::calibration`), µs.
    pub(super) extra_latency_us: f64,
    /// The fitted constants it is priced with (`CollectiveConfig::fitted`).
    pub(super) fitted: Fitted,
}

pub(super) enum Pricing {
    /// NCCL's own model picks algorithm and protocol; the simulated step of each candidate's
    /// family bounds its bandwidth.
    Nccl {
        sys: NcclSystem,
        tuning: Box<Tuning>,
        algo: AlgoChoice,
        protocols: Protocols,
        candidates: Vec<NcclAlgo>,
        steps: Vec<(Family, Box<dyn CollectiveAlgorithm>)>,
        /// What NVLS carries on one node of the communicator, GB/s of algorithm bandwidth
        /// ([`nvls_node_gbs`]): NVLSTree's NVLink side.
        nvls_node_gbs: f64,
    },
    /// Point-to-point steps (all-to-all, send/recv, one rank) priced with NCCL's ring latency,
    /// or for all-to-all and send/recv with NCCL's p2p schedule where NCCL's view of the
    /// communicator is known ([`P2pSchedule`]).
    P2p {
        algos: Vec<Box<dyn CollectiveAlgorithm>>,
        gpu: Option<nccl::GpuGeneration>,
        protocols: Protocols,
        schedule: Option<P2pSchedule>,
    },
}

impl Simulated {
    /// The predicted row of one size (nccl-tests' size: whole floats, per rank where it counts);
    /// a time past the simulator's clock is [`CollectiveError::PastClock`], naming the size and
    /// the slowest step's bottleneck. The one place a collective's time is computed: every
    /// command's collective times come through here.
    pub fn row(&self, size: u64) -> Result<RowResult, CollectiveError> {
        let op = self.op;
        let shape = &self.shape;
        let size = op.tested_bytes(size, 4, shape.ranks);
        let mut row = self.priced(size);
        Time::from_us_checked(row.row.time_us).map_err(|past| CollectiveError::PastClock {
            what: format!("{op} of {size} bytes"),
            past,
            bottleneck: slowest_bottleneck(&self.models),
        })?;
        if size == 0 {
            // NCCL discards an empty collective before it is planned or launched (src/enqueue.cc
            // `taskAppend`, "Empty collectives can be discarded", since 2.22; nccl-tests does not
            // call all-to-all at a count of 0): no time to price. nccl-tests' own loop around the
            // call (about 0.2 us in published logs) is not NCCL's.
            row.row = nccl::Row::new(op, 0, shape.ranks, 0.0);
            row.latency_us = 0.0;
            row.startup_us = 0.0;
        }
        Ok(row)
    }

    /// [`Simulated::row`] of a size already rounded as nccl-tests tests it.
    pub(super) fn priced(&self, size: u64) -> RowResult {
        let op = self.op;
        let shape = &self.shape;
        match &self.pricing {
            Pricing::Nccl {
                sys,
                tuning,
                algo,
                protocols,
                candidates,
                steps,
                nvls_node_gbs,
            } => {
                let bound = |family: Family, size: u64| -> (f64, Time) {
                    let (algbw, path) = steps
                        .iter()
                        .zip(&self.models)
                        .find(|((f, _), _)| *f == family)
                        .map_or((f64::INFINITY, Time::ZERO), |((_, a), m)| {
                            let secs = a.edge_bytes(size, shape) * m.secs_per_byte;
                            let algbw = if secs > 0.0 {
                                size as f64 / secs / 1e9
                            } else {
                                f64::INFINITY
                            };
                            (algbw, m.path_latency)
                        });
                    match family {
                        Family::NvlsTree => (algbw.min(*nvls_node_gbs), path),
                        _ => (algbw, path),
                    }
                };
                let allowed = |a: NcclAlgo| algo.allows(a);
                let (a, p) = tuning
                    .select(size, &allowed, *protocols)
                    .unwrap_or((candidates[0], Protocol::Simple));
                let (t, latency, startup) =
                    realized_time_us(tuning, sys, a, p, size, &bound, &self.fitted);
                RowResult {
                    row: nccl::Row::new(op, size, shape.ranks, t + self.extra_latency_us),
                    algorithm: a.as_str(),
                    protocol: p,
                    latency_us: latency + self.extra_latency_us,
                    startup_us: startup,
                }
            }
            Pricing::P2p {
                algos,
                gpu,
                protocols,
                schedule,
            } => {
                let mut best: Option<((f64, f64), &'static str, Protocol)> = None;
                let p2p = matches!(op, Collective::AllToAll | Collective::SendRecv);
                for (a, m) in algos.iter().zip(&self.models) {
                    // Send/recv runs the one protocol NCCL's enqueue picks for the bytes each peer
                    // gets; one rank's copy, the fastest.
                    let protos = if p2p {
                        // LL where NCCL's enqueue picks it and NCCL_PROTO leaves it, else Simple
                        // (point-to-point sends run no LL128).
                        // Across servers the network's transfers run Simple at any size
                        // (no LL buffers on p2p network connections: `nccl::p2p`); the time
                        // is theirs, so the row names Simple.
                        let p = match schedule {
                            Some(s) if s.nodes > 1 => Protocol::Simple,
                            _ => nccl::p2p_protocol(a.edge_bytes(size, shape)),
                        };
                        vec![if protocols.allows(p) {
                            p
                        } else {
                            Protocol::Simple
                        }]
                    } else {
                        Protocol::ALL
                            .into_iter()
                            .filter(|&p| protocols.allows(p))
                            .collect()
                    };
                    for proto in protos {
                        // All-to-all: NCCL's base latency and the busiest channel's batches.
                        let nccl_latency = match (op, schedule) {
                            (Collective::AllToAll, Some(s)) => Some(s.all_to_all_latency_us(
                                size / u64::from(shape.ranks.max(1)),
                                proto,
                            )),
                            _ => None,
                        };
                        let t = price(a.as_ref(), m, shape, op, proto, size, *gpu, nccl_latency);
                        if best.is_none_or(|(bt, _, _)| t.0 < bt.0) {
                            best = Some((t, a.name(), proto));
                        }
                    }
                }
                // `algos` is never empty (every arm of `simulate_until` pushes one).
                let ((t, latency), name, proto) =
                    best.unwrap_or(((0.0, 0.0), "none", Protocol::Simple));
                RowResult {
                    row: nccl::Row::new(op, size, shape.ranks, t + self.extra_latency_us),
                    algorithm: name,
                    protocol: proto,
                    latency_us: latency + self.extra_latency_us,
                    startup_us: 0.0,
                }
            }
        }
    }

    /// Every size priced, as `sim collective` prints them.
    pub fn sweep(self, sizes: &[u64]) -> Result<Sweep, CollectiveError> {
        let rows = sizes
            .iter()
            .map(|&size| self.row(size))
            .collect::<Result<_, _>>()?;
        Ok(Sweep {
            op: self.op,
            shape: self.shape,
            routing: self.routing,
            models: self.models,
            rows,
            fitted: self.fitted,
        })
    }
}

/// Lays out and simulates one step of each algorithm `cfg` may run, for every communicator of
/// `comms` at once (they must have the same shape: as many servers and GPUs per server).
pub fn simulate_until(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    cfg: &CollectiveConfig,
    comms: &[Comm],
    progress: &mut dyn FnMut(&str),
    cancel: Cancel<'_>,
) -> Result<Simulated, CollectiveError> {
    simulate_folding_above(
        net,
        router,
        cfg,
        comms,
        progress,
        cancel,
        FOLD_ABOVE_FLOWS,
        MAX_ALLTOALL_FLOWS,
        COUNT_EQUAL_ABOVE_FLOWS,
    )
}

/// [`simulate_until`] laying out all-to-all by symmetry above `fold_above` flows, and by counting
/// flows per resource above `count_above` where it cannot (tests lower both to compare with the
/// per-flow layout).
#[allow(clippy::too_many_arguments)]
pub(super) fn simulate_folding_above(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    cfg: &CollectiveConfig,
    comms: &[Comm],
    progress: &mut dyn FnMut(&str),
    cancel: Cancel<'_>,
    fold_above: u64,
    count_above: u64,
    count_equal_above: u64,
) -> Result<Simulated, CollectiveError> {
    let first = comms.first().ok_or(CollectiveError::Config {
        what: "ranks",
        message: "no communicator to simulate".into(),
    })?;
    let shape = shape_of_comm(net, first)?;
    if comms
        .iter()
        .any(|c| c.servers.len() != first.servers.len() || c.locals.len() != first.locals.len())
    {
        return Err(CollectiveError::Config {
            what: "ranks",
            message: "communicators simulated together need the same shape".into(),
        });
    }
    if cfg.collnet && !net.sharp() {
        return Err(CollectiveError::Config {
            what: "sharp",
            message: "CollNet needs a network built with SHARP on (NetConfig::sharp), on a fabric \
                      whose switches and NICs support it"
                .into(),
        });
    }
    let p2p = matches!(cfg.op, Collective::AllToAll | Collective::SendRecv);
    // Laying out by symmetry: one communicator of every GPU a job runs on, with routes from the
    // structure, where the fabric's structure routes alike servers alike (`regular::routes_alike`:
    // found on the graph, for designed and discovered fabrics alike); with cables down or
    // servers drained, routes that keep to the structure around them on a tree of two tiers
    // (`fold`: above the spines a route picks its port by the destination's digit, and a failure
    // or a drained server leaves the spines' traffic uneven over digits the classes do not see).
    let degraded = net.any_failed() || net.any_drained();
    // The fabric's symmetry classes servers of the fabric, not NVLink domains of several trays.
    let foldable = comms.len() == 1
        && net.nvlink_domain().is_none()
        && *first == Comm::whole(net)
        && router.structural()
        && (!degraded || (router.symmetric_around_failures() && !net.tier_above_spines()));
    // The step's flows on the engine: a transfer per pair of ranks, each as many sub-flows as
    // its route takes (adaptive routing: one per up-port of the first switch).
    let mut layout = StepLayout {
        net,
        router,
        comms,
        cancel,
        shape,
        foldable,
        sub_flows: u64::from(router.max_sub_flows(net).max(1)),
        fold_above,
        count_above,
        count_equal_above,
        symmetry: None,
        irregular: false,
    };
    // On one server's xGMI mesh RCCL runs its rings (`crate::net::xgmi`): RCCL's tuning.cc never
    // picks Tree on one gfx942 node, and NVLS needs an NVSwitch. Ring is priced with NCCL's
    // latencies and protocols, as send/recv is, the least time winning.
    let mesh = net.xgmi_mesh().is_some();
    if mesh && !p2p && !cfg.algo.allows(NcclAlgo::Ring) {
        return Err(CollectiveError::Config {
            what: "algo",
            message: format!(
                "RCCL runs rings on one server's xGMI mesh (its tuning.cc never picks Tree on one gfx942 node; NVLS needs an NVSwitch), not {}; valid: ring, auto",
                cfg.algo.nccl().map_or("auto", NcclAlgo::as_str)
            ),
        });
    }
    // RCCL's one-node mesh model does not enable LL128 (rome_model_79's options lack
    // `ll128Enabled=1`, which rome_model_81 sets; docs/hardware-2026.md).
    let protocols = if mesh && !p2p {
        cfg.protocols
            .without(Protocol::Ll128)
            .ok_or_else(|| CollectiveError::Config {
                what: "proto",
                message: "RCCL runs no LL128 on one server's xGMI mesh (rome_models.cc rome_model_79 does not set ll128Enabled); valid: LL, Simple".into(),
            })?
    } else {
        cfg.protocols
    };
    if p2p || shape.ranks < 2 || mesh {
        let algos: Vec<Box<dyn CollectiveAlgorithm>> = match cfg.op {
            Collective::AllToAll => vec![Box::new(AllToAll { relay: cfg.relay })],
            Collective::SendRecv => vec![Box::new(SendRecv {
                relay: cfg.relay,
                pattern: cfg.send_recv,
            })],
            op => vec![Box::new(Ring { op })],
        };
        let refs: Vec<&dyn CollectiveAlgorithm> = algos.iter().map(|a| a.as_ref()).collect();
        let models = layout.models(&refs, progress)?;
        // NCCL's p2p schedule needs its view of the communicator; a GPU outside its tuning
        // tables keeps the ring latency.
        let schedule = if p2p && shape.ranks >= 2 {
            nccl_system(net, &shape, first, false).ok().map(|sys| {
                let channels = tuning::tune(Collective::AllReduce, &sys).runtime_channels;
                P2pSchedule::new(&sys, channels)
            })
        } else {
            None
        };
        return Ok(Simulated {
            op: cfg.op,
            shape,
            routing: router.name(),
            models,
            extra_latency_us: net.extra_latency_us(),
            fitted: cfg.fitted,
            pricing: Pricing::P2p {
                algos,
                gpu: net.gpu_generation(),
                protocols,
                schedule,
            },
        });
    }
    let sys = nccl_system(net, &shape, first, cfg.collnet)?;
    let tuning = tuning::tune(cfg.op, &sys);
    let candidates = candidates(cfg, &tuning, &sys)?;
    // The fabric steps that bound the candidates: the ring's channels (ring, PAT, and the network
    // side of CollNet and NVLS across nodes) and the double binary tree's (tree, NVLSTree).
    let needs = |family: Family| {
        candidates
            .iter()
            .any(|&a| family_of(a, &sys) == Some(family))
    };
    let mut steps: Vec<(Family, Box<dyn CollectiveAlgorithm>)> = Vec::new();
    if needs(Family::Ring) {
        steps.push((Family::Ring, Box::new(Ring { op: cfg.op })));
    }
    if needs(Family::Tree) {
        steps.push((Family::Tree, Box::new(DoubleBinaryTree)));
    }
    if needs(Family::NvlsTree) {
        steps.push((Family::NvlsTree, Box::new(NvlsTreeNetwork)));
    }
    let refs: Vec<&dyn CollectiveAlgorithm> = steps.iter().map(|(_, a)| a.as_ref()).collect();
    let models = layout.models(&refs, progress)?;
    Ok(Simulated {
        op: cfg.op,
        shape,
        routing: router.name(),
        models,
        extra_latency_us: net.extra_latency_us(),
        fitted: cfg.fitted,
        pricing: Pricing::Nccl {
            sys,
            tuning: Box::new(tuning),
            algo: cfg.algo,
            protocols: cfg.protocols,
            candidates,
            steps,
            nvls_node_gbs: nvls_node_gbs(cfg.op, &sys),
        },
    })
}

/// What NVLS carries on one node of `sys`'s communicator, GB/s of algorithm bandwidth: NCCL's
/// model of NVLS over the node's GPUs alone (NVLS on one node crosses only NVLink switches, whose
/// in-switch reduction the fluid model does not represent: NCCL's model is its only bound,
/// `price::Family`). NVLSTree reduces and broadcasts inside every node with NVLS, each GPU moving
/// over its NVLink what NVLS on the node alone moves, so it can be no faster; without this bound
/// the network tree's NCCL figures (the NIC's speed on each of up to 32 NVLS heads) gave a
/// multi-node NVL72 all-reduce more than twice the bus bandwidth of one rack. Unbounded where the
/// node runs no NVLS.
fn nvls_node_gbs(op: Collective, sys: &NcclSystem) -> f64 {
    let node = NcclSystem {
        nodes: 1,
        ranks: sys.ppn(),
        ..*sys
    };
    let bw = tuning::tune(op, &node).bandwidth(NcclAlgo::Nvls, Protocol::Simple);
    if bw > 0.0 {
        bw
    } else {
        f64::INFINITY
    }
}

/// The algorithms NCCL would choose from for `cfg` on `sys`: those `--algo` allows that run with a
/// protocol `--proto` allows; an error naming what does run when none does.
fn candidates(
    cfg: &CollectiveConfig,
    tuning: &Tuning,
    sys: &NcclSystem,
) -> Result<Vec<NcclAlgo>, CollectiveError> {
    let allowed = |a: NcclAlgo| cfg.algo.allows(a);
    let runs = |a: NcclAlgo, p: Protocol| cfg.protocols.allows(p) && tuning.enabled(a, p);
    let candidates: Vec<NcclAlgo> = NcclAlgo::ALL
        .into_iter()
        .filter(|&a| allowed(a) && Protocol::ALL.iter().any(|&p| runs(a, p)))
        .collect();
    if candidates.is_empty() && !cfg.protocols.is_all() {
        // The protocols leave nothing of what NCCL_ALGO allows.
        let pairs: Vec<String> = NcclAlgo::ALL
            .into_iter()
            .filter(|&a| allowed(a))
            .flat_map(|a| {
                Protocol::ALL
                    .into_iter()
                    .filter(move |&p| tuning.enabled(a, p))
                    .map(move |p| format!("{}/{}", a.as_str(), p.as_str()))
            })
            .collect();
        if !pairs.is_empty() {
            return Err(CollectiveError::Config {
                what: "proto",
                message: format!(
                    "NCCL runs none of {} with protocol {} for {} on this fabric (NVLS, NVLSTree, \
PAT and CollNet run Simple only; LL128 needs NVLink inside the server and a GPU-to-NIC path it \
supports); it runs here: {}",
                    cfg.algo.nccl().map_or("its algorithms", NcclAlgo::as_str),
                    cfg.protocols.label(),
                    cfg.op,
                    pairs.join(", ")
                ),
            });
        }
    }
    if candidates.is_empty() {
        let enabled: Vec<&str> = NcclAlgo::ALL
            .into_iter()
            .filter(|&a| Protocol::ALL.iter().any(|&p| tuning.enabled(a, p)))
            .map(NcclAlgo::as_str)
            .collect();
        return Err(CollectiveError::Config {
            what: "algo",
            message: format!(
                "NCCL does not run {} for {} on this fabric ({}); enabled here: {}, auto",
                cfg.algo.nccl().map_or("auto", NcclAlgo::as_str),
                cfg.op,
                why_disabled(cfg.op, cfg.algo.nccl(), sys),
                enabled.join(", ")
            ),
        });
    }
    Ok(candidates)
}
