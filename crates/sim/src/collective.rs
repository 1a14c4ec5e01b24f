//! NCCL-style collectives on a fabric network ([`FabricNet`]).
//!
//! # Method
//!
//! NCCL's ring and tree algorithms are pipelines: the buffer is cut into chunks and every edge of
//! the ring or tree (one per channel) carries the same volume, concurrently, for the whole
//! collective. Simulating every chunk of every step of a 16,384-GPU ring as its own flow would cost
//! millions of events and tell nothing new, so the simulator runs **one step**: every edge of every
//! channel becomes one flow of the same size, all started together on the engine. That is where the
//! topology, the routing (which links each edge crosses), and contention (edges sharing a NIC, a PCIe
//! switch, an uplink, a spine link) enter. The fluid model is linear in the bytes, so the step gives
//! seconds per byte of edge volume, and a message of S bytes takes
//!
//! `time = NCCL latency(algorithm, protocol) + path latency + edge volume(S) x seconds per byte / f`
//!
//! (NCCL's latency of LL128 across servers times its measured start-up,
//! [`LL128_NET_STARTUP_FACTOR`])
//!
//! where the edge volume is what each edge moves in the whole collective (ring all-reduce:
//! 2(n-1)/n x S per channel, [`CollectiveAlgorithm::edge_bytes`]), the NCCL latency is tuning.cc's
//! base plus per-step hardware latency ([`nccl::ring_latency_us`], [`nccl::tree_latency_us`]; that
//! per-step figure already covers wires and switches), the path latency is the slowest simulated
//! path once (the last chunk's flight), and f is the protocol's bandwidth factor
//! ([`nccl::bandwidth_factor`]). With `auto`, every algorithm and protocol is priced per size and the
//! least time wins, as NCCL's tuner does. One engine run per algorithm covers a whole `-b -e -f`
//! sweep.
//!
//! # Channels on rails
//!
//! There are `max(NICs per server, 2)` channels. Channel c uses rail `c mod NICs`; inside a server
//! its ring enters at a GPU whose nearest NIC is that rail and leaves from another GPU on the same
//! PCIe switch (as NCCL's ring search pairs GPUs with a NIC), so every inter-server hop stays on one
//! rail: exit GPU -> PCIe -> NIC r -> network -> NIC r -> PCIe -> entry GPU of the next server.
//! Where no other GPU of the communicator shares the NIC's switch, the exit GPU sends over NVLink to
//! a GPU that does and out from there (NCCL's PXN path, [`FabricNet::pxn_relay`]), not through the
//! CPU; a NIC that is no GPU's own (more NICs than GPUs on a switch) is entered at the switch's
//! GPUs in turn. Inside a server the ring crosses NVLink (or PCIe without NVLink). Trees (NCCL's double binary
//! tree over nodes, `ncclGetDtree`) alternate between the two complementary trees per channel,
//! with a chain inside each server.
//!
//! All-to-all sends S/n from every rank to every other at once; with PXN a transfer to another
//! server first moves over NVLink to the local GPU on the destination's rail, so traffic stays
//! rail-local. Send/recv is nccl-tests' pattern: rank i sends to i+1.

use crate::cancel::{Cancel, Cancelled};
use crate::engine::classes::{self, Quotient};
use crate::engine::{self, Flow, Weight, Workload};
use crate::error::SimError;
use crate::fabric_net::{resource_ids, FabricNet, FabricRouting, PcieMemo, RouteFailure, Routes};
use crate::fitted::Fitted;
use crate::nccl::{self, Algorithm, Collective, HopKind, Protocol, Protocols};
use crate::regular;
use crate::symmetry::{self, Symmetry};
use crate::time::{PastClock, Time};
use crate::tuning::{self, NcclAlgo, NcclSystem, Tuning};
use railyard_catalog::number;
use std::fmt;

/// Bytes per flow in the simulated step. Any size gives the same seconds per byte (the fluid model
/// is linear); 1 MiB keeps picosecond rounding far below a part per million.
const STEP_CHUNK: u64 = 1 << 20;

/// The most flows an all-to-all step may have (n x (n - 1)).
pub const MAX_ALLTOALL_FLOWS: u64 = 4_200_000;

/// `--algo`: one of NCCL's algorithms by the name `NCCL_ALGO` takes, or `auto` (NCCL's own choice per
/// size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlgoChoice {
    Ring,
    Tree,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
    Auto,
}

impl AlgoChoice {
    /// The run key's names (`railyard_spec::run`), in this enum's order.
    pub const NAMES: [&'static str; 8] = railyard_spec::run::ALGO_NAMES;

    /// Any case, as `NCCL_ALGO` reads it; `collnet` is CollNetDirect.
    pub fn parse(s: &str) -> Option<AlgoChoice> {
        if s.eq_ignore_ascii_case("auto") {
            return Some(AlgoChoice::Auto);
        }
        Some(match NcclAlgo::parse(s)? {
            NcclAlgo::Ring => AlgoChoice::Ring,
            NcclAlgo::Tree => AlgoChoice::Tree,
            NcclAlgo::CollNetDirect => AlgoChoice::CollNetDirect,
            NcclAlgo::CollNetChain => AlgoChoice::CollNetChain,
            NcclAlgo::Nvls => AlgoChoice::Nvls,
            NcclAlgo::NvlsTree => AlgoChoice::NvlsTree,
            NcclAlgo::Pat => AlgoChoice::Pat,
        })
    }

    /// The one algorithm asked for; `None` for `auto`.
    pub fn nccl(self) -> Option<NcclAlgo> {
        match self {
            AlgoChoice::Ring => Some(NcclAlgo::Ring),
            AlgoChoice::Tree => Some(NcclAlgo::Tree),
            AlgoChoice::CollNetDirect => Some(NcclAlgo::CollNetDirect),
            AlgoChoice::CollNetChain => Some(NcclAlgo::CollNetChain),
            AlgoChoice::Nvls => Some(NcclAlgo::Nvls),
            AlgoChoice::NvlsTree => Some(NcclAlgo::NvlsTree),
            AlgoChoice::Pat => Some(NcclAlgo::Pat),
            AlgoChoice::Auto => None,
        }
    }

    fn allows(self, a: NcclAlgo) -> bool {
        self.nccl().is_none_or(|x| x == a)
    }
}

/// How a transfer between two servers gets from the source GPU's rail to the destination GPU's
/// rail when they differ.
///
/// On a fabric with spines the network joins the rails, so the source GPU may send straight from
/// its own NIC. A rail-only fabric has no spine (Wang et al., "Rail-only: A Low-Cost
/// High-Performance Network for Training LLMs with Trillion Parameters", HOTI 2024): the transfer
/// must first cross NVLink to the local GPU on the destination's rail and leave from that GPU's
/// NIC, which is also what NCCL's PXN does by choice (NCCL_PXN_DISABLE=0). How the two hops share
/// time is the question the variants answer.
///
/// Each variant is one `--pxn` value and one printed name ([`Relay::as_str`]):
///
/// | variant | `--pxn` | printed |
/// |---|---|---|
/// | [`Relay::Direct`] | `off` | `direct` |
/// | [`Relay::Pxn`] | `on` | `pxn` |
/// | [`Relay::PxnStaged`] | `staged` | `pxn-staged` |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relay {
    /// Out of the source GPU's own NIC; the network must join the rails.
    Direct,
    /// PXN as NCCL runs it: relayed over NVLink to the GPU on the destination's rail, the hops
    /// overlapped chunk by chunk as NCCL's proxy pipelines them: one flow over NVLink, PCIe and the
    /// rail. The optimistic bound: with NVLink's headroom over a NIC the relay costs next to
    /// nothing.
    Pxn,
    /// PXN store-and-forward: every NVLink hop of the operation completes before the rail hops
    /// start, so the step costs the NVLink phase plus the rail phase. This is the Rail-only
    /// paper's model of all-to-all forwarding through the HB domain, for which it reports
    /// 8.2-11.2% more completion time than a full-bisection Clos.
    PxnStaged,
}

impl Relay {
    /// `--pxn` values; `auto` is [`Relay::auto`].
    pub const NAMES: [&'static str; 4] = railyard_spec::run::RELAY_NAMES;

    /// `None` for `auto`.
    pub fn parse(s: &str) -> Result<Option<Relay>, String> {
        match s {
            "auto" => Ok(None),
            "on" | "pipelined" => Ok(Some(Relay::Pxn)),
            "off" | "direct" => Ok(Some(Relay::Direct)),
            "staged" => Ok(Some(Relay::PxnStaged)),
            _ => Err(format!(
                "`{s}` is not a PXN mode; valid: {}",
                Relay::NAMES.join(", ")
            )),
        }
    }

    /// The default for a fabric: straight through the network where it joins the rails (the
    /// Rail-only paper's Clos baseline), store-and-forward relaying where it does not (its
    /// forwarding model), so the comparison of the two prices forwarding as the paper does.
    /// Whether the network joins the rails is read off the links, not the design's name, so a
    /// discovered rail-only fabric (`import ibnet`) gets the same answer.
    pub fn auto(fabric: &railyard_fabric::Fabric) -> Relay {
        if fabric.rails_joined() {
            Relay::Direct
        } else {
            Relay::PxnStaged
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Relay::Direct => "direct",
            Relay::Pxn => "pxn",
            Relay::PxnStaged => "pxn-staged",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveConfig {
    pub op: Collective,
    pub algo: AlgoChoice,
    /// How all-to-all and send/recv cross rails between servers.
    pub relay: Relay,
    /// CollNet (SHARP in-network reduction) is enabled: the switches support it and the user asked
    /// for it (NCCL_COLLNET_ENABLE=1 with the SHARP plugin). Set it from [`FabricNet::sharp`]: a
    /// network built without SHARP refuses it.
    pub collnet: bool,
    /// Who sends to whom in a send/recv (ignored by the other collectives).
    pub send_recv: SendRecvPattern,
    /// The protocols NCCL may run (`NCCL_PROTO`); all by default.
    pub protocols: Protocols,
    /// The fitted constants of the model ([`crate::fitted`]): the shipped values by default; the
    /// validation's leave-one-source-out refits replace them (`sim collective --fitted`).
    pub fitted: Fitted,
}

impl CollectiveConfig {
    /// `op` as NCCL runs it by default: its own choice of algorithm, straight from each GPU's NIC
    /// (no relay), no CollNet, nccl-tests' send/recv ring. Change a field with struct update syntax.
    pub fn new(op: Collective) -> CollectiveConfig {
        CollectiveConfig {
            op,
            algo: AlgoChoice::Auto,
            relay: Relay::Direct,
            collnet: false,
            send_recv: SendRecvPattern::Ring,
            protocols: Protocols::ALL,
            fitted: Fitted::default(),
        }
    }
}

/// The transfers of a send/recv on a communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SendRecvPattern {
    /// nccl-tests' `sendrecv_perf`: every rank sends to the next and the last to the first
    /// (src/sendrecv.cu: peer `(rank + 1) % nranks`), so on two ranks both send at once.
    #[default]
    Ring,
    /// A pipeline hop: each rank sends to the next and the last sends nothing, as a pipeline
    /// stage passes activations forward (or gradients back) while receiving from the other side
    /// (Megatron-LM's `send_forward_recv_backward`): every stage sends once, not to both
    /// neighbours at once.
    Pipeline,
}

/// Why a collective cannot run.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectiveError {
    Sim(SimError),
    /// Connections with no route (first few, and how many in all).
    Routes {
        failures: Vec<RouteFailure>,
        total: usize,
    },
    /// Input the collective cannot use (`what` names the flag).
    Config {
        what: &'static str,
        message: String,
    },
    /// An all-to-all of `ranks` ranks makes `flows` flows, more than [`MAX_ALLTOALL_FLOWS`]: too
    /// large to lay out as one step.
    TooManyFlows {
        ranks: u32,
        flows: u64,
    },
    /// The caller's [`Cancel`] flag was set ([`run_until`]).
    Cancelled,
    /// A time past the simulator's clock ([`Time::CLOCK`]): what would take it (`allreduce of
    /// 8589934592 bytes`, `one step of ring`), how long, and the resource that limits the slowest
    /// flow, with its rate (what made it so slow).
    PastClock {
        what: String,
        past: PastClock,
        bottleneck: Option<Bottleneck>,
    },
}

impl From<Cancelled> for CollectiveError {
    fn from(_: Cancelled) -> Self {
        CollectiveError::Cancelled
    }
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectiveError::Sim(e) => write!(f, "{e}"),
            CollectiveError::Routes { failures, total } => {
                write!(f, "{total} connection(s) have no route")?;
                for x in failures {
                    write!(f, "\n  {x}")?;
                }
                Ok(())
            }
            CollectiveError::Config { what, message } => write!(f, "{what}: {message}"),
            CollectiveError::TooManyFlows { ranks, flows } => write!(
                f,
                "{ranks} ranks make {flows} flows; the limit is {MAX_ALLTOALL_FLOWS} (about 2,048 GPUs)"
            ),
            CollectiveError::Cancelled => f.write_str("cancelled"),
            CollectiveError::PastClock {
                what,
                past,
                bottleneck,
            } => {
                write!(f, "{what} would take {past}")?;
                if let Some(b) = bottleneck {
                    write!(
                        f,
                        "; its bottleneck: {}, {} GB/s shared by {} flows",
                        b.resource,
                        number(b.capacity_gbs),
                        b.flows
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CollectiveError {}

impl From<SimError> for CollectiveError {
    fn from(e: SimError) -> Self {
        CollectiveError::Sim(e)
    }
}

/// The size of the job: ranks are every GPU, server-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobShape {
    pub ranks: u32,
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub nics_per_node: u32,
    pub channels: u32,
    /// What the hops inside a server are, for NCCL's latency table.
    pub intra: HopKind,
}

/// The resource that limits the slowest flow of a step.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Bottleneck {
    pub resource: String,
    pub capacity_gbs: f64,
    /// Flows crossing it.
    pub flows: u32,
}

/// One simulated step of an algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct StepModel {
    pub algorithm: &'static str,
    pub nccl_algorithm: Algorithm,
    /// Seconds per byte of edge volume (the slowest edge, after max-min sharing).
    pub secs_per_byte: f64,
    /// Longest path latency of a step flow.
    pub path_latency: Time,
    pub flows: usize,
    /// Flow classes simulated instead of the flows (`crate::engine::classes`), when the step was
    /// simulated by class.
    pub classes: Option<usize>,
    /// The step was timed by counting flows per resource, not simulated
    /// (`StepBuilder::count_on`).
    pub counted: Option<Counting>,
    pub bottleneck: Option<Bottleneck>,
}

/// How a step timed by counting flows per resource stands to the simulation of every flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counting {
    /// Every flow moves the same bytes, so the time is the one the per-flow engine gives
    /// ([`engine::first_bottleneck`]); otherwise (adaptive routing splitting transfers unevenly over
    /// their paths) an upper bound of it.
    pub exact: bool,
}

impl StepModel {
    /// Bandwidth of one edge of the step, GB/s; 0 for a step with no flows (a single rank sends
    /// nothing, and nccl-tests reports 0 bus bandwidth for it).
    pub fn edge_gbs(&self) -> f64 {
        if self.flows == 0 || self.secs_per_byte <= 0.0 {
            0.0
        } else {
            1.0 / self.secs_per_byte / 1e9
        }
    }
}

/// One size of the sweep with the algorithm and protocol that priced it.
#[derive(Debug, Clone, PartialEq)]
pub struct RowResult {
    pub row: nccl::Row,
    pub algorithm: &'static str,
    pub protocol: Protocol,
    /// The part of `row.time_us` that does not grow with the size: NCCL's latency of the algorithm
    /// and protocol, the slowest simulated path and a calibration's latency, microseconds.
    pub latency_us: f64,
    /// The part of `latency_us` that NCCL's own model does not have: the measured start-up of
    /// LL128 across servers ([`LL128_NET_STARTUP_FACTOR`]), microseconds; 0 elsewhere. NCCL picks
    /// its algorithm and protocol without it.
    pub startup_us: f64,
}

/// A collective swept over message sizes: the job's shape, the route source, the simulated step of
/// each algorithm, and one row per size with the algorithm and protocol that priced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub op: Collective,
    pub shape: JobShape,
    pub routing: String,
    pub models: Vec<StepModel>,
    pub rows: Vec<RowResult>,
    /// The fitted constants it was priced with (the host times of [`Sweep::driven_by_one_thread`]
    /// among them).
    pub fitted: Fitted,
}

/// Host time of one nccl-tests iteration per GPU its thread drives, microseconds: with `-g N` one
/// thread issues the operation on N GPUs in turn (N calls in a group, N kernel launches: NCCL's
/// src/group.cc `doLaunches` launches each communicator's kernel in turn from the calling thread),
/// so the last GPU's kernel starts N times this after the first. Measured, not a datasheet figure: the 0-byte rows
/// of an 8 x A100 `nThread 1 nGpus 8` all-reduce log (microsoft/superbenchmark
/// `tests/data/nccl_allreduce.log`: 35.20, 34.05, 34.18 and 33.50 us; NCCL launches its kernel on
/// every GPU and moves nothing) average 34.23 us, 4.28 us per GPU; the same log's 0-byte
/// all-to-all, which launches nothing, takes 1.35 us, so the time is the launches, not the test
/// loop. The figure belongs to that host (AMD EPYC, 2021 NCCL): a faster host launches faster.
/// One process per GPU (`-g 1`, the MPI launch) hides it behind NCCL's own latency, which is
/// larger.
pub const NCCL_TESTS_HOST_US_PER_GPU: f64 = 4.28;

/// Host time of each point-to-point call nccl-tests makes (one `ncclSend` or `ncclRecv`: its
/// alltoall posts a send and a receive to every rank, itself included, src/alltoall.cu; sendrecv
/// one of each), microseconds, on top of [`NCCL_TESTS_HOST_US_PER_GPU`]. NCCL checks the
/// connection of every channel the peer may use and queues the call (enqueue.cc `ncclSaveP2p` of
/// 2.9-2.11) before a kernel is launched. Measured, not a datasheet figure: the all-to-all log of
/// the same superbenchmark host (`tests/data/nccl_alltoall.log`, `nThread 1 nGpus 8`) is flat at a
/// median 87.27 us from 32 B to 1 MiB, 10.91 us per GPU: 4.28 for the launch and 16 calls of
/// 0.414 us. A check on other data: tinygrad/open-gpu-kernel-modules issue 17 (8 x RTX 4090, a
/// 2.2x NCCL, `-g 2`) gives 11.3-12.3 us for small all-to-alls, where 2 x (4.28 + 4 x 0.41) is
/// 11.8 us.
pub const NCCL_TESTS_HOST_US_PER_P2P_CALL: f64 = 0.41;

/// The host time one nccl-tests iteration of `op` takes when one thread drives `gpus_per_thread`
/// of its `ranks` GPUs ([`Sweep::driven_by_one_thread`]): each GPU's launch, and, where the thread
/// drives several GPUs, for all-to-all and send/recv each of their point-to-point calls. With one
/// GPU per thread (`mpirun`) the calls are left out: they were measured only with one thread
/// driving several GPUs, and one process per GPU makes its calls beside the others' while the GPUs
/// run the previous iteration (nccl-tests does not wait between iterations).
/// The host times are `fitted`'s (the shipped [`NCCL_TESTS_HOST_US_PER_GPU`] and
/// [`NCCL_TESTS_HOST_US_PER_P2P_CALL`] by default).
pub fn nccl_tests_host_us(
    op: Collective,
    ranks: u32,
    gpus_per_thread: u32,
    fitted: &Fitted,
) -> f64 {
    let calls = match op {
        _ if gpus_per_thread <= 1 => 0,
        Collective::AllToAll => 2 * ranks,
        Collective::SendRecv => 2,
        _ => 0,
    };
    f64::from(gpus_per_thread)
        * (fitted.nccl_tests_host_us_per_gpu
            + f64::from(calls) * fitted.nccl_tests_host_us_per_p2p_call)
}

impl Sweep {
    /// The sweep as nccl-tests times it when one thread drives `gpus_per_thread` GPUs (its `-g`):
    /// the last GPU's kernel starts [`nccl_tests_host_us`] after the first (a launch per GPU, and
    /// for all-to-all and send/recv each point-to-point call). The earlier GPUs' steps wait for
    /// it, so the launches take the place of NCCL's latency where they are longer; the data
    /// cannot: every GPU runs the same steps on its share (src/device/all_reduce.h; a ring's every
    /// byte passes through every GPU), so the last GPU still moves its share after it starts. A
    /// row takes the larger of the launches and NCCL's latency, plus the size-dependent part; a
    /// size of 0 launches nothing in the NCCL modelled (the 2021 log's 0-byte rows came from an
    /// NCCL that still launched its kernels for them). With one GPU per thread nothing changes
    /// (NCCL's latency is always above one launch).
    pub fn driven_by_one_thread(mut self, gpus_per_thread: u32) -> Result<Sweep, CollectiveError> {
        let ranks = self.shape.ranks;
        let floor = nccl_tests_host_us(self.op, ranks, gpus_per_thread, &self.fitted);
        for r in &mut self.rows {
            // An empty collective launches nothing (see `Simulated::row`).
            if r.row.size_bytes > 0 && r.latency_us < floor {
                let transfer = (r.row.time_us - r.latency_us).max(0.0);
                let t = floor + transfer;
                Time::from_us_checked(t).map_err(|past| CollectiveError::PastClock {
                    what: format!("{} of {} bytes", self.op, r.row.size_bytes),
                    past,
                    bottleneck: slowest_bottleneck(&self.models),
                })?;
                r.row = nccl::Row::new(self.op, r.row.size_bytes, ranks, t);
                r.latency_us = floor;
                r.startup_us = 0.0;
            }
        }
        Ok(self)
    }
}

/// A collective algorithm, as quinn puts congestion controllers behind a trait: it lays out one
/// step's flows and says how much each edge moves and what NCCL's latency model charges.
pub trait CollectiveAlgorithm: Sync {
    fn name(&self) -> &'static str;
    /// Which row of NCCL's latency and bandwidth tables applies.
    fn nccl_algorithm(&self) -> Algorithm;
    /// Adds one step's flows (one per edge, `STEP_CHUNK` bytes each).
    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError>;
    /// Bytes one edge moves in the whole collective for a message of `size` bytes.
    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64;
    /// NCCL's latency, microseconds.
    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64;
    /// Whether [`CollectiveAlgorithm::step`] can lay out by symmetry (`Fold`): representative
    /// servers only.
    fn folds(&self) -> bool {
        false
    }
}

/// The local GPU on the destination's rail and that rail, when a transfer from `a` to `d`
/// crosses servers and rails; `None` when it stays in a server or on one rail.
pub fn relay_of(net: &FabricNet<'_>, a: Gpu, d: Gpu) -> Option<(u32, u32)> {
    if a.server == d.server {
        return None;
    }
    let (sa, sd) = (&net.servers[a.server], &net.servers[d.server]);
    let rail = *sd.nic_of_gpu.get(d.local as usize)?;
    if sa.nic_of_gpu.get(a.local as usize) == Some(&rail) {
        return None;
    }
    let via = sa.gpus_of_nic.get(rail as usize)?.first().copied()?;
    Some((via, rail))
}

/// The flows of one phase of a step: they all start together.
struct StepPhase {
    /// The network's resources and the step's flows; folded (see [`Fold`]): one resource per
    /// resource class and the representative servers' flows.
    w: Workload,
    /// Every flow's path (resource indexes of the network), for the bottleneck report.
    paths: Vec<u32>,
    offsets: Vec<u32>,
    latency: Time,
    /// Flows of the whole step the phase's flows stand for.
    represented: u64,
    /// The flows counted per resource instead of added to `w` ([`StepBuilder::count_on`]).
    counted: Option<Counted>,
    /// Laid out by symmetry: the representatives' flows merged by what they cross, turned into
    /// `w` once the step is laid out ([`fold::Merged`]).
    merged: Option<fold::Merged>,
    /// Folded: per resource class, what its widths and capacity were divided by (to keep widths
    /// in range), for the flows per member the bottleneck report names.
    divisor: Vec<u64>,
}

/// A phase laid out by counting: how many flows cross each resource of the network, and the
/// smallest and largest flow. A step of flows that all start together is timed from the counts
/// alone ([`engine::first_bottleneck`]): exactly when the flows are equal.
///
/// Unequal flows (adaptive routing splits a transfer over as many sub-flows as it has paths) are
/// bounded from above with a second pass over the same flows once the counts are complete
/// ([`StepBuilder::bound_counted`]): a flow's max-min rate is never below the smallest
/// `capacity / load` on its path (the level at which a resource fills is at least that, and flows
/// leaving only lower the loads), so no flow ends after `bytes / that share`, and the step ends
/// by the latest of these.
struct Counted {
    /// Per resource, the flows crossing it, each by its weight (`Routes::weight`).
    load: count::Load,
    /// Some flow weighs other than 1: the flows are unequal.
    weighted: bool,
    min_bytes: u64,
    max_bytes: u64,
    /// The counts are complete and flows are being bounded ([`StepBuilder::bound_counted`]).
    bounding: bool,
    /// The latest bound of a flow's drain seen while bounding.
    bound: Time,
}

impl Counted {
    fn equal(&self) -> bool {
        self.min_bytes == self.max_bytes && !self.weighted
    }

    /// The phase's makespan (exact for equal flows, else the bounding pass's bound, or before
    /// it, the largest flow at the first bottleneck's share), and its bottleneck (resource index,
    /// flows on it).
    fn makespan(&self, net: &FabricNet<'_>) -> Option<(Time, u32, u32)> {
        let (r, share) = self.load.first_bottleneck(|r| net.capacity(r as u32))?;
        let t = if !self.equal() && self.bounding {
            self.bound
        } else {
            engine::drain_time(self.max_bytes, share)
        };
        Some((t, r as u32, self.load.flows(r).round() as u32))
    }

    /// A flow of `weight` in the bounding pass: it runs at least at `weight` times the smallest
    /// share on its path.
    fn bound_flow(&mut self, net: &FabricNet<'_>, path: &[u32], bytes: u64, weight: Weight) {
        let share = path
            .iter()
            .map(|&r| self.load.share(r as usize, net.capacity(r)))
            .fold(f64::INFINITY, f64::min);
        if share.is_finite() {
            self.bound = self
                .bound
                .max(engine::drain_time(bytes, share * weight.as_f64()));
        }
    }
}

impl StepPhase {
    fn new(
        net: &FabricNet<'_>,
        fold: Option<&Fold<'_>>,
        count: bool,
    ) -> Result<StepPhase, SimError> {
        let counted = count.then(|| Counted {
            load: count::Load::new(net.resources()),
            weighted: false,
            min_bytes: u64::MAX,
            max_bytes: 0,
            bounding: false,
            bound: Time::ZERO,
        });
        let w = match fold {
            None if count => Workload::new(),
            None => net.workload()?,
            // Built from the merged flows once the step is laid out (`fold::materialise`).
            Some(_) => Workload::new(),
        };
        Ok(StepPhase {
            w,
            paths: Vec::new(),
            offsets: vec![0],
            latency: Time::ZERO,
            represented: 0,
            counted,
            merged: fold.map(|f| fold::Merged::new(f.trace)),
            divisor: Vec::new(),
        })
    }

    fn makespan(&self) -> Time {
        engine::simulate(&self.w)
            .flows
            .iter()
            .map(|f| f.finish)
            .max()
            .unwrap_or(Time::ZERO)
    }

    /// [`StepPhase::makespan`], stopping once `cancel` is set.
    fn makespan_until(&self, cancel: Cancel<'_>) -> Result<Time, Cancelled> {
        Ok(engine::simulate_until(&self.w, cancel)?
            .flows
            .iter()
            .map(|f| f.finish)
            .max()
            .unwrap_or(Time::ZERO))
    }

    /// The phase's quotient by flow classes, when `classes` allows it and it has at most half as
    /// many classes as flows; else `None` (simulate flow by flow).
    fn quotient(&self, classes: bool, cancel: Cancel<'_>) -> Result<Option<Quotient>, Cancelled> {
        if !classes {
            return Ok(None);
        }
        Ok(classes::quotient(&self.w, cancel)?.filter(Quotient::worth_it))
    }

    /// [`StepPhase::quotient`] of a folded phase, always (every flow a class of its own when
    /// colour refinement splits them all), its widths divided down ([`classes::divide_widths`]):
    /// a folded phase's widths count whole server classes.
    fn folded_quotient(&self, cancel: Cancel<'_>) -> Result<Quotient, Cancelled> {
        let mut q = match classes::quotient(&self.w, cancel)? {
            Some(q) => q,
            None => Quotient {
                workload: self.w.clone(),
                class_of: (0..self.w.flows() as u32).collect(),
                count: vec![1; self.w.flows()],
            },
        };
        classes::divide_widths(&mut q.workload);
        Ok(q)
    }

    /// The makespan, on the quotient when there is one (a class's flows finish together).
    fn makespan_by(&self, q: Option<&Quotient>, cancel: Cancel<'_>) -> Result<Time, Cancelled> {
        match q {
            None => self.makespan_until(cancel),
            Some(q) => Ok(engine::simulate_until(&q.workload, cancel)?
                .flows
                .iter()
                .map(|f| f.finish)
                .max()
                .unwrap_or(Time::ZERO)),
        }
    }

    /// Every flow's max-min rate with all active, solved on the quotient when there is one.
    fn rates_by(&self, q: Option<&Quotient>, cancel: Cancel<'_>) -> Result<Vec<f64>, Cancelled> {
        match q {
            None => engine::max_min_rates_until(&self.w, cancel),
            Some(q) => Ok(q.expand(&engine::max_min_rates_until(&q.workload, cancel)?)),
        }
    }
}

/// An all-to-all laid out by symmetry: only the flows of representative servers, one per class of
/// servers the fabric cannot tell apart ([`crate::symmetry`]).
///
/// # Method
///
/// Every server of a class sends the same traffic, seen from its own place in the fabric, so the
/// flows of a whole class load every resource class the way `members` copies of one server's flows
/// load it. The folded phase has one resource per resource class, with the capacity of all its
/// members together (over `scale`, the greatest common divisor of the server classes' sizes), and
/// one flow per flow of a representative server, crossing each resource class with width
/// (members of its server class / `scale`) x (how many members of that class its path crosses).
/// When every member of a resource class carries the same mix of flows (the symmetry holds for
/// the traffic, not only for the cables), progressive filling on the folded phase fills a class
/// exactly when it fills each member of it, and every flow gets the max-min rate of the whole
/// step: the sum over members of a class is the member's load times the members, and the
/// capacity is scaled the same way. The folded phase is then reduced to flow classes
/// ([`crate::engine::classes`]) and simulated.
///
/// The symmetry is checked for the traffic: the last server of every class is laid out too, and
/// its flows must cross the resource classes exactly as the representative's do (the same
/// multiset of per-flow crossings); otherwise the step is laid out flow by flow (or refused as too
/// large). The tests compare every flow's rate and finish time with the per-flow engine on every
/// preset.
///
/// Path latency: a flow's latency is computed with each link's latency replaced by the longest of
/// its class, so the step's path latency is an upper bound of the per-flow one, equal to it when
/// cables of a class have one length.
struct Fold<'n> {
    sym: &'n Symmetry,
    /// Greatest common divisor of the server classes' sizes.
    scale: u32,
    /// Flows added now stand for `weight` x `scale` flows each.
    weight: u32,
    /// Signatures of the flows laid out (the representative's, then the check server's).
    signatures: Vec<u64>,
    /// Lay out for the check: record signatures only, add nothing.
    checking: bool,
    /// Keep, per representative flow, its server and merged flow (tests map them back).
    trace: bool,
    /// The resource classes a flow crosses, kept between flows.
    crossed: Vec<(u32, u32)>,
}

/// Flows above which an all-to-all is laid out by symmetry (`Fold`) where the fabric allows:
/// the per-flow layout's limit, so every all-to-all that ran before runs as before, to the last
/// bit (the reports' golden records), and the fold takes over where the layout was refused.
pub const FOLD_ABOVE_FLOWS: u64 = MAX_ALLTOALL_FLOWS;

/// Flows above which an all-to-all that flow classes cannot shrink (ECMP, OpenSM routes, cables
/// down) is timed from its flows counted per link when they are equal, as past the per-flow
/// limit: the same makespan as the per-flow engine (`Counted`), in a second instead of minutes
/// (2,048 GPUs with ECMP: 110 s and 1.5 GB flow by flow).
pub const COUNT_EQUAL_ABOVE_FLOWS: u64 = 1 << 20;

/// Builds one step's flows on a fabric network. A step has one phase, or two when relays are
/// staged: the NVLink hops, then the network hops, one after the other.
pub struct StepBuilder<'n, 'f> {
    pub net: &'n FabricNet<'f>,
    router: &'n dyn FabricRouting,
    pub shape: JobShape,
    /// The communicator the algorithm lays out ([`StepBuilder::gpu`] maps its nodes).
    pub comm: Comm,
    phases: Vec<StepPhase>,
    conn: u32,
    routes: Routes,
    /// Paths inside servers, by their ends.
    pcie: PcieMemo,
    path: Vec<u32>,
    failures: Vec<RouteFailure>,
    failure_count: usize,
    cancel: Cancel<'n>,
    /// Transfers laid out, to read `cancel` every [`CANCEL_EVERY_TRANSFERS`].
    transfers: u32,
    /// Laying out by symmetry ([`Fold`]).
    fold: Option<Fold<'n>>,
    /// The symmetry check failed: the step must be laid out flow by flow.
    fold_failed: bool,
    /// Counting flows per resource instead of simulating them ([`StepBuilder::count_on`]).
    count: bool,
    /// The source ranks an all-to-all lays out (`lo..hi`), when not all: a counted step is laid
    /// out a few sources at a time to report progress.
    sources: Option<(u32, u32)>,
}

/// Transfers laid out between two reads of a [`StepBuilder`]'s cancellation flag.
const CANCEL_EVERY_TRANSFERS: u32 = 256;

/// A GPU by its server and its index inside the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gpu {
    /// The server's index in `Fabric::servers`.
    pub server: usize,
    /// The GPU's index inside its server.
    pub local: u32,
}

impl Gpu {
    pub fn new(server: usize, local: u32) -> Gpu {
        Gpu { server, local }
    }

    /// The GPU of `rank` when ranks fill servers of `gpus_per_server` GPUs in order (rank r on GPU
    /// r mod g of server r / g).
    pub fn of_rank(rank: u32, gpus_per_server: u32) -> Gpu {
        let g = gpus_per_server.max(1);
        Gpu::new((rank / g) as usize, rank % g)
    }
}

/// The GPUs one NCCL communicator spans: a list of servers and the same local GPUs on each (a
/// data-parallel group takes one GPU per server, a tensor-parallel group several GPUs of one
/// server, the whole job every GPU of every server). Node `i` of the communicator is server
/// `servers[i]`; its rank `r` is local GPU `locals[r % locals.len()]` of node `r / locals.len()`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Comm {
    pub servers: Vec<usize>,
    pub locals: Vec<u32>,
}

impl Comm {
    /// Every GPU of every server of `net` a job runs on (all but the drained ones,
    /// `NetConfig::drained`).
    pub fn whole(net: &FabricNet<'_>) -> Comm {
        let servers = net.active_servers().to_vec();
        let g = servers
            .first()
            .and_then(|&s| net.servers.get(s))
            .map_or(0, |s| s.gpus.len() as u32);
        Comm {
            servers,
            locals: (0..g).collect(),
        }
    }

    /// The communicator of `gpus` when they take the same local GPUs on every server they use
    /// (servers and local GPUs in the order they first appear), else `None`.
    pub fn of_gpus(gpus: &[Gpu]) -> Option<Comm> {
        let mut servers: Vec<usize> = Vec::new();
        let mut locals: Vec<u32> = Vec::new();
        for g in gpus {
            if !servers.contains(&g.server) {
                servers.push(g.server);
            }
            if !locals.contains(&g.local) {
                locals.push(g.local);
            }
        }
        let product = servers.len() * locals.len() == gpus.len()
            && servers
                .iter()
                .all(|&s| locals.iter().all(|&l| gpus.contains(&Gpu::new(s, l))));
        (product && !servers.is_empty()).then_some(Comm { servers, locals })
    }

    pub fn ranks(&self) -> u32 {
        (self.servers.len() * self.locals.len()) as u32
    }

    /// The GPU of rank `r`.
    pub fn gpu_of_rank(&self, r: u32) -> Gpu {
        let g = self.locals.len().max(1);
        Gpu::new(self.servers[r as usize / g], self.locals[r as usize % g])
    }

    /// The NICs (rails) NCCL uses for it: those of its GPUs, in rail order.
    pub fn rails(&self, net: &FabricNet<'_>) -> Vec<u32> {
        let Some(s) = self.servers.first().and_then(|&s| net.servers.get(s)) else {
            return Vec::new();
        };
        if self.locals.len() == s.gpus.len() {
            return (0..s.nics.len() as u32).collect();
        }
        let mut rails: Vec<u32> = self
            .locals
            .iter()
            .filter_map(|&l| s.nic_of_gpu.get(l as usize).copied())
            .collect();
        rails.sort_unstable();
        rails.dedup();
        rails
    }
}

impl<'n, 'f> StepBuilder<'n, 'f> {
    pub fn new(
        net: &'n FabricNet<'f>,
        router: &'n dyn FabricRouting,
        shape: JobShape,
    ) -> Result<Self, SimError> {
        Ok(StepBuilder {
            net,
            router,
            shape,
            comm: Comm::whole(net),
            phases: vec![StepPhase::new(net, None, false)?],
            conn: 0,
            routes: Routes::default(),
            pcie: PcieMemo::default(),
            path: Vec::new(),
            failures: Vec::new(),
            failure_count: 0,
            cancel: Cancel::NEVER,
            transfers: 0,
            fold: None,
            fold_failed: false,
            count: false,
            sources: None,
        })
    }

    /// Counts flows per resource from now on instead of adding them to a workload: for a step too
    /// large to simulate flow by flow that cannot be laid out by symmetry (ECMP, failed links,
    /// imported routes). Every phase's flows start together, so [`Counted`] times the step from
    /// the counts. Only for a step with no flows yet.
    fn count_on(&mut self) -> Result<(), SimError> {
        self.phases = vec![StepPhase::new(self.net, None, true)?];
        self.fold = None;
        self.count = true;
        Ok(())
    }

    /// Whether the step is being laid out by counting flows per resource instead of simulating
    /// them (`StepBuilder::count_on`).
    pub fn counting(&self) -> bool {
        self.count
    }

    /// Whether counted phases are in their bounding pass ([`StepBuilder::bound_counted`]).
    fn bounding(&self) -> bool {
        self.phases
            .iter()
            .any(|p| p.counted.as_ref().is_some_and(|c| c.bounding))
    }

    /// Whether a counted phase has unequal flows, so the step needs a bounding pass
    /// ([`StepBuilder::bound_counted`]) to be timed well.
    fn counted_unequal(&self) -> bool {
        self.phases.iter().any(|p| {
            p.counted
                .as_ref()
                .is_some_and(|c| p.represented > 0 && !c.equal())
        })
    }

    /// Ends counting: the same transfers laid out again from now on bound each flow's drain by
    /// the complete counts ([`Counted`]) instead of counting. Transfers and route failures are
    /// not counted twice.
    fn bound_counted(&mut self) {
        for c in self.phases.iter_mut().filter_map(|p| p.counted.as_mut()) {
            c.bounding = true;
        }
        // The same connections again, so each takes the same paths.
        self.conn = 0;
    }

    /// A builder for one worker of [`lay_out_counted`]: the same network, routes, shape and
    /// cancellation, counting from zero, or, in the bounding pass, bounding against a copy of the
    /// complete counts.
    fn worker(&self) -> StepBuilder<'n, 'f> {
        let phases = self
            .phases
            .iter()
            .map(|p| StepPhase {
                w: Workload::new(),
                paths: Vec::new(),
                offsets: vec![0],
                latency: Time::ZERO,
                represented: 0,
                merged: None,
                divisor: Vec::new(),
                counted: p.counted.as_ref().map(|c| Counted {
                    load: if c.bounding {
                        c.load.clone()
                    } else {
                        c.load.empty_like()
                    },
                    weighted: c.weighted,
                    min_bytes: u64::MAX,
                    max_bytes: 0,
                    bounding: c.bounding,
                    bound: Time::ZERO,
                }),
            })
            .collect();
        StepBuilder {
            net: self.net,
            router: self.router,
            shape: self.shape,
            comm: self.comm.clone(),
            phases,
            conn: 0,
            routes: Routes::default(),
            pcie: PcieMemo::default(),
            path: Vec::new(),
            failures: Vec::new(),
            failure_count: 0,
            cancel: self.cancel,
            transfers: 0,
            fold: None,
            fold_failed: false,
            count: true,
            sources: None,
        }
    }

    /// Adds up what the workers of [`lay_out_counted`] counted (or bounded), as one builder
    /// laying out every chunk in order would have: failures in chunk order, the first error by
    /// chunk.
    fn merge(&mut self, workers: Vec<ChunkWork<'n, 'f>>) -> Result<(), CollectiveError> {
        let mut failures: Vec<(usize, Vec<RouteFailure>, usize)> = Vec::new();
        let mut error: Option<(usize, CollectiveError)> = None;
        for w in workers {
            failures.extend(w.failures);
            if let Some((i, e)) = w.error {
                if error.as_ref().is_none_or(|(j, _)| i < *j) {
                    error = Some((i, e));
                }
            }
            for (k, wp) in w.builder.phases.into_iter().enumerate() {
                while self.phases.len() <= k {
                    self.phases.push(StepPhase::new(self.net, None, true)?);
                }
                let p = &mut self.phases[k];
                let (Some(c), Some(wc)) = (p.counted.as_mut(), wp.counted) else {
                    continue;
                };
                if c.bounding {
                    c.bound = c.bound.max(wc.bound);
                    continue;
                }
                p.represented += wp.represented;
                p.latency = p.latency.max(wp.latency);
                c.load.absorb(&wc.load)?;
                c.weighted |= wc.weighted;
                c.min_bytes = c.min_bytes.min(wc.min_bytes);
                c.max_bytes = c.max_bytes.max(wc.max_bytes);
            }
        }
        if let Some((_, e)) = error {
            return Err(e);
        }
        failures.sort_by_key(|f| f.0);
        for (_, list, count) in failures {
            self.failure_count += count;
            for f in list {
                if self.failures.len() < 5 {
                    self.failures.push(f);
                }
            }
        }
        Ok(())
    }

    /// Lays out by symmetry from now on ([`Fold`]); only for a step with no flows yet, by an
    /// algorithm that can ([`CollectiveAlgorithm::folds`]).
    fn fold_on(&mut self, sym: &'n Symmetry) -> Result<(), SimError> {
        let scale = sym
            .server_classes
            .iter()
            .fold(0u32, |g, c| gcd(g, c.len() as u32))
            .max(1);
        let fold = Fold {
            sym,
            scale,
            weight: 1,
            signatures: Vec::new(),
            checking: false,
            trace: false,
            crossed: Vec::new(),
        };
        self.phases = vec![StepPhase::new(self.net, Some(&fold), false)?];
        self.fold = Some(fold);
        Ok(())
    }

    /// Local GPU `local` of node `node` of the communicator being laid out.
    pub fn gpu(&self, node: usize, local: u32) -> Gpu {
        Gpu::new(self.comm.servers[node], local)
    }

    /// Stops laying out and simulating with [`CollectiveError::Cancelled`] once `cancel` is set.
    pub fn cancel_on(mut self, cancel: Cancel<'n>) -> Self {
        self.cancel = cancel;
        self
    }

    fn add(
        &mut self,
        phase: usize,
        path: &[u32],
        bytes: u64,
        latency: Time,
        weight: Weight,
    ) -> Result<(), SimError> {
        while self.phases.len() <= phase {
            self.phases
                .push(StepPhase::new(self.net, self.fold.as_ref(), self.count)?);
        }
        if let Some(fold) = &mut self.fold {
            return fold::add_folded(
                self.net,
                fold,
                &mut self.phases[phase],
                phase,
                path,
                fold::Piece {
                    bytes,
                    latency,
                    share: weight,
                },
            );
        }
        let ph = &mut self.phases[phase];
        if let Some(c) = ph.counted.as_mut().filter(|c| c.bounding) {
            c.bound_flow(self.net, path, bytes, weight);
            return Ok(());
        }
        ph.represented += 1;
        if let Some(c) = &mut ph.counted {
            for &r in path {
                c.load.add(r as usize, 1, weight)?;
            }
            c.weighted |= weight != Weight::ONE;
            c.min_bytes = c.min_bytes.min(bytes);
            c.max_bytes = c.max_bytes.max(bytes);
            ph.latency = ph.latency.max(latency);
            return Ok(());
        }
        let ids = resource_ids(path, &ph.w)?;
        ph.w.add_weighted_flow(
            &Flow {
                path: &ids,
                bytes,
                ..Flow::default()
            },
            &[],
            weight,
        )?;
        ph.paths.extend_from_slice(path);
        ph.offsets.push(ph.paths.len() as u32);
        ph.latency = ph.latency.max(latency);
        Ok(())
    }

    /// Flows added so far, over all phases (laid out by symmetry: the flows they stand for).
    pub fn flows(&self) -> usize {
        self.phases.iter().map(|p| p.represented as usize).sum()
    }

    /// Adds a transfer of `bytes` from `a` to `d` that crosses rails as `relay` says. Staged
    /// relays put the NVLink hop (and every transfer inside a server) in the first phase and the
    /// network hop in the second.
    pub fn send(
        &mut self,
        a: Gpu,
        d: Gpu,
        relay: Relay,
        bytes: u64,
    ) -> Result<(), CollectiveError> {
        match (relay, relay_of(self.net, a, d)) {
            (Relay::Pxn, Some((via, rail))) => {
                self.transfer_in(0, a, d, Some(rail), Some(via), bytes)
            }
            (Relay::PxnStaged, Some((via, _))) => {
                let hop = Gpu::new(a.server, via);
                self.transfer_in(0, a, hop, None, None, bytes)?;
                self.transfer_in(1, hop, d, None, None, bytes)
            }
            // Between servers on one rail, staging puts the network hop in the second phase.
            (Relay::PxnStaged, None) if a.server != d.server => {
                self.transfer_in(1, a, d, None, None, bytes)
            }
            _ => self.transfer_in(0, a, d, None, None, bytes),
        }
    }

    /// Adds a transfer of `bytes` from GPU `a` to GPU `b`. Between servers it leaves through NIC
    /// `rail` (default: `a`'s nearest) and arrives through the same rail's NIC, or `b`'s nearest
    /// when `rail` is `None`; with `via` (a local index of a GPU in `a`'s server), it first crosses
    /// NVLink to that GPU and leaves from there, hops pipelined (PXN, [`Relay::Pxn`]).
    pub fn transfer(
        &mut self,
        a: Gpu,
        b: Gpu,
        rail: Option<u32>,
        via: Option<u32>,
        bytes: u64,
    ) -> Result<(), CollectiveError> {
        self.transfer_in(0, a, b, rail, via, bytes)
    }

    /// [`StepBuilder::transfer`] into phase `phase`.
    fn transfer_in(
        &mut self,
        phase: usize,
        a: Gpu,
        b: Gpu,
        rail: Option<u32>,
        via: Option<u32>,
        bytes: u64,
    ) -> Result<(), CollectiveError> {
        self.transfers = self.transfers.wrapping_add(1);
        if self.transfers.is_multiple_of(CANCEL_EVERY_TRANSFERS) {
            self.cancel.check()?;
        }
        let net = self.net;
        let (sa, sb) = (&net.servers[a.server], &net.servers[b.server]);
        let (ga, gb) = (sa.gpus[a.local as usize], sb.gpus[b.local as usize]);
        self.path.clear();
        if a.server == b.server {
            let mut path = std::mem::take(&mut self.path);
            let lat = net.intra_path(ga, gb, a.server, &mut path);
            self.add(phase, &path, bytes, lat, Weight::ONE)?;
            self.path = path;
            return Ok(());
        }
        let conn = self.conn;
        self.conn += 1;
        let mut path = std::mem::take(&mut self.path);
        let mut lat = Time::ZERO;
        let mut from = ga;
        // Out through a NIC the GPU is not near: over NVLink to a GPU that is, as NCCL does.
        let via = via
            .or_else(|| rail.and_then(|r| net.pxn_relay(a.server, a.local, r, &self.comm.locals)));
        if let Some(p) = via.filter(|&p| p != a.local) {
            let pg = sa.gpus[p as usize];
            lat += net.intra_path(ga, pg, a.server, &mut path);
            from = pg;
        }
        let src_rail = rail.unwrap_or(sa.nic_of_gpu[a.local as usize]);
        let dst_rail = rail.unwrap_or(sb.nic_of_gpu[b.local as usize]);
        let plane = conn % net.fabric.meta.planes.max(1);
        let (Some((_, sp)), Some((_, dp))) = (
            net.nic_port(a.server, src_rail, plane),
            net.nic_port(b.server, dst_rail, plane),
        ) else {
            self.fail(RouteFailure {
                src: net.fabric.node(from).name.clone(),
                dst: net.fabric.node(gb).name.clone(),
                reason: "every NIC cable of a server is down".into(),
            });
            self.path = path;
            return Ok(());
        };
        let snic = net.fabric.port(sp).node;
        let dnic = net.fabric.port(dp).node;
        lat += net.pcie_path_memo(&mut self.pcie, from, snic, a.server, &mut path);
        let head = path.len();
        let mut routes = std::mem::take(&mut self.routes);
        routes.clear();
        if let Err(e) = self.router.route_into(net, sp, dp, conn, &mut routes) {
            self.fail(e);
            self.routes = routes;
            self.path = path;
            return Ok(());
        }
        for (i, part) in routes.bytes(bytes).enumerate() {
            path.truncate(head);
            let mut l = lat + net.network_path(sp, routes.path(i), &mut path);
            l += net.pcie_path_memo(&mut self.pcie, dnic, gb, b.server, &mut path);
            self.add(phase, &path, part, l, routes.weight(i))?;
        }
        self.routes = routes;
        self.path = path;
        Ok(())
    }

    fn fail(&mut self, e: RouteFailure) {
        self.failure_count += 1;
        if self.failures.len() < 5 {
            self.failures.push(e);
        }
    }

    /// Runs the step: seconds per byte of the slowest edge, and what limits it.
    pub fn finish(self, algorithm: &dyn CollectiveAlgorithm) -> Result<StepModel, CollectiveError> {
        if self.failure_count > 0 {
            return Err(CollectiveError::Routes {
                failures: self.failures,
                total: self.failure_count,
            });
        }
        // Flows the fabric cannot tell apart are simulated as classes where routes depend on the
        // structure alone and no link is down; elsewhere (ECMP, imported routes, failures) flow by
        // flow, as before.
        let by_class = self.router.structural() && !self.net.any_failed();
        // Phases run one after the other: their times and latencies add; the slowest names the
        // bottleneck.
        let mut secs = 0.0;
        let mut latency = Time::ZERO;
        let mut slowest: Option<(Time, &StepPhase, Option<Quotient>)> = None;
        let mut classes = None;
        // Counted phases: timed and their bottleneck found from the counts.
        let mut counted: Option<(Time, Bottleneck)> = None;
        let mut exact = true;
        for ph in self.phases.iter().filter(|p| p.represented > 0) {
            if let Some(c) = &ph.counted {
                let Some((makespan, r, flows)) = c.makespan(self.net) else {
                    continue;
                };
                if let Err(past) = makespan.checked() {
                    return Err(CollectiveError::PastClock {
                        what: format!(
                            "one step of {} ({STEP_CHUNK} bytes a flow)",
                            algorithm.name()
                        ),
                        past,
                        bottleneck: Some(Bottleneck {
                            resource: self.net.describe(r),
                            capacity_gbs: self.net.capacity(r) / 1e9,
                            flows,
                        }),
                    });
                }
                exact &= c.min_bytes == c.max_bytes;
                secs += makespan.as_secs_f64();
                latency += ph.latency;
                if counted.as_ref().is_none_or(|(t, _)| makespan > *t) {
                    counted = Some((
                        makespan,
                        Bottleneck {
                            resource: self.net.describe(r),
                            capacity_gbs: self.net.capacity(r) / 1e9,
                            flows,
                        },
                    ));
                }
                continue;
            }
            let q = match self.fold {
                Some(_) => Some(ph.folded_quotient(self.cancel)?),
                None => ph.quotient(by_class, self.cancel)?,
            };
            if let Some(q) = &q {
                *classes.get_or_insert(0) += q.classes();
            }
            let makespan = ph.makespan_by(q.as_ref(), self.cancel)?;
            if let Err(past) = makespan.checked() {
                let rates = ph.rates_by(q.as_ref(), self.cancel)?;
                return Err(CollectiveError::PastClock {
                    what: format!(
                        "one step of {} ({STEP_CHUNK} bytes a flow)",
                        algorithm.name()
                    ),
                    past,
                    bottleneck: match &self.fold {
                        None => bottleneck_at(self.net, &ph.w, &rates, &ph.paths, &ph.offsets),
                        Some(fold) => bottleneck_folded(self.net, fold, ph, &rates),
                    },
                });
            }
            secs += makespan.as_secs_f64();
            latency += ph.latency;
            if slowest.as_ref().is_none_or(|(t, _, _)| makespan > *t) {
                slowest = Some((makespan, ph, q));
            }
        }
        let bottleneck = match slowest {
            _ if self.count => counted.map(|(_, b)| b),
            Some((_, ph, q)) => {
                let rates = ph.rates_by(q.as_ref(), self.cancel)?;
                match &self.fold {
                    None => bottleneck_at(self.net, &ph.w, &rates, &ph.paths, &ph.offsets),
                    Some(fold) => bottleneck_folded(self.net, fold, ph, &rates),
                }
            }
            None => None,
        };
        Ok(StepModel {
            algorithm: algorithm.name(),
            nccl_algorithm: algorithm.nccl_algorithm(),
            secs_per_byte: secs / STEP_CHUNK as f64,
            path_latency: latency,
            flows: self.flows(),
            classes,
            counted: self.count.then_some(Counting { exact }),
            bottleneck,
        })
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// [`bottleneck_at`] on a folded phase: loads per resource class (all members together), the
/// slowest representative flow's path named by its own resources.
fn bottleneck_folded(
    net: &FabricNet<'_>,
    fold: &Fold<'_>,
    ph: &StepPhase,
    rates: &[f64],
) -> Option<Bottleneck> {
    let (r, flows) = bottleneck_folded_at(fold, ph, rates)?;
    Some(Bottleneck {
        resource: net.describe(r),
        capacity_gbs: net.capacity(r) / 1e9,
        flows,
    })
}

/// The resource on the slowest flow's path that holds it back: one that is full and where no flow
/// runs faster than it (max-min fairness freezes a flow at such a resource), the fullest such
/// one (the last among equals); where rounding leaves none, the fullest on the path. A full
/// resource whose other flows run faster is not what limits the flow: with a cable down, a
/// source's own full NIC link sits on the path of its slowest flow, whose limit is the
/// destination's link carrying twice the flows. `usage(r)` gives (utilisation, fastest rate).
fn limiting(path: &[u32], slowest: f64, usage: impl Fn(u32) -> (f64, f64)) -> Option<u32> {
    let util = |r: &u32| usage(*r).0;
    let holds = |r: &&u32| {
        let (u, fastest) = usage(**r);
        u >= 1.0 - 1e-9 && fastest <= slowest * (1.0 + 1e-9)
    };
    path.iter()
        .filter(holds)
        .max_by(|a, b| util(a).total_cmp(&util(b)))
        .or_else(|| path.iter().max_by(|a, b| util(a).total_cmp(&util(b))))
        .copied()
}

/// The network resource [`bottleneck_folded`] names, and the flows crossing it.
fn bottleneck_folded_at(fold: &Fold<'_>, ph: &StepPhase, rates: &[f64]) -> Option<(u32, u32)> {
    let w = &ph.w;
    // Compared per unit of weight: a sub-flow of a connection sprayed over fewer paths runs
    // faster by its weight without being ahead.
    let share = shares(w, rates);
    let slowest = (0..rates.len())
        .filter(|&f| rates[f].is_finite())
        .min_by(|&a, &b| share[a].total_cmp(&share[b]))?;
    let mut load = vec![0.0f64; w.resources()];
    let mut count = vec![0u64; w.resources()];
    let mut fastest = vec![0.0f64; w.resources()];
    for (f, &rate) in rates.iter().enumerate() {
        if !rate.is_finite() {
            continue;
        }
        let units = w.units_of(f);
        for e in w.path_range(f) {
            let c = w.path[e] as usize;
            let n = u64::from(w.width_of(e)) / units;
            load[c] += n as f64 * rate;
            count[c] += n;
            fastest[c] = fastest[c].max(share[f]);
        }
    }
    let sym = fold.sym;
    let path = &ph.paths[ph.offsets[slowest] as usize..ph.offsets[slowest + 1] as usize];
    let class = |r: u32| sym.resource_class[r as usize] as usize;
    let r = limiting(path, share[slowest], |r| {
        (load[class(r)] / w.capacity[class(r)], fastest[class(r)])
    })?;
    let c = sym.resource_class[r as usize] as usize;
    // Per member: the class's crossings (in units of `scale` flows, and of what the widths were
    // divided by) over its members.
    let divisor = ph.divisor.get(c).copied().unwrap_or(1).max(1);
    let flows = count[c] * divisor * u64::from(fold.scale) / u64::from(sym.class_size[c].max(1));
    Some((r, u32::try_from(flows).unwrap_or(u32::MAX)))
}

/// Every flow's rate per unit of its weight (`Workload::add_weighted_flow`): the fair share it
/// froze at, up to the workload's unit.
fn shares(w: &Workload, rates: &[f64]) -> Vec<f64> {
    (0..rates.len())
        .map(|f| rates[f] / w.units_of(f) as f64)
        .collect()
}

/// The saturated resource on the slowest flow's path under max-min sharing with every flow active,
/// given every flow's max-min rate.
fn bottleneck_at(
    net: &FabricNet<'_>,
    w: &Workload,
    rates: &[f64],
    paths: &[u32],
    offsets: &[u32],
) -> Option<Bottleneck> {
    let share = shares(w, rates);
    let slowest = (0..rates.len())
        .filter(|&f| rates[f].is_finite())
        .min_by(|&a, &b| share[a].total_cmp(&share[b]))?;
    let path = &paths[offsets[slowest] as usize..offsets[slowest + 1] as usize];
    let mut load = vec![0.0f64; net.resources()];
    let mut count = vec![0u32; net.resources()];
    let mut fastest = vec![0.0f64; net.resources()];
    for f in 0..rates.len() {
        if !rates[f].is_finite() {
            continue;
        }
        for &r in &paths[offsets[f] as usize..offsets[f + 1] as usize] {
            load[r as usize] += rates[f];
            count[r as usize] += 1;
            fastest[r as usize] = fastest[r as usize].max(share[f]);
        }
    }
    let r = limiting(path, share[slowest], |r| {
        (load[r as usize] / net.capacity(r), fastest[r as usize])
    })?;
    Some(Bottleneck {
        resource: net.describe(r),
        capacity_gbs: net.capacity(r) / 1e9,
        flows: count[r as usize],
    })
}

/// The GPU order of channel `c` inside a server: enter at a GPU near rail `c mod NICs`, leave from
/// another GPU on the same PCIe switch (or the next GPU), the rest in index order between.
fn channel_order(net: &FabricNet<'_>, comm: &Comm, shape: &JobShape, c: u32) -> (u32, Vec<u32>) {
    // `shape_of_comm` made the shape: the communicator has a server and `g >= 1` GPUs on each, so
    // `cand` below holds its GPUs and is never empty.
    let s = &net.servers[comm.servers[0]];
    let rails = comm.rails(net);
    let k = (rails.len() as u32).max(1);
    let rail = rails.get((c % k) as usize).copied().unwrap_or(c % k);
    let v = c / k;
    let mine = |x: &u32| comm.locals.contains(x);
    let own: Vec<u32> = s
        .gpus_of_nic
        .get(rail as usize)
        .map(|g| g.iter().copied().filter(mine).collect())
        .unwrap_or_default();
    let near: Vec<u32> = s
        .gpus_near_nic
        .get(rail as usize)
        .map(|g| g.iter().copied().filter(mine).collect())
        .unwrap_or_default();
    let mut cand: Vec<u32> = Vec::with_capacity(comm.locals.len());
    for x in own
        .iter()
        .chain(near.iter())
        .chain(comm.locals.iter())
        .copied()
    {
        if !cand.contains(&x) {
            cand.push(x);
        }
    }
    let _ = shape;
    // The channel enters at a GPU of the rail's NIC; a NIC that is no GPU's own (more NICs than
    // GPUs on a PCIe switch) is taken by the switch's GPUs in turn, as `nic_of_gpu` deals the
    // GPUs to the NICs, so each GPU's PCIe link receives from as many NICs as the others'.
    let first = if own.is_empty() && !near.is_empty() {
        let on_switch = s.gpus_near_nic.get(rail as usize);
        let pos = (0..rail)
            .filter(|&r| s.gpus_near_nic.get(r as usize) == on_switch)
            .count();
        (pos + v as usize) % near.len()
    } else {
        (v as usize) % own.len().max(1).min(cand.len())
    };
    let entry = cand[first];
    // The exit is the GPU after the entry among the switch's GPUs, in turn: each GPU on a switch
    // then sends one channel out and takes one in. Taking the switch's first GPU for every channel
    // put three channels' egress on one GPU's PCIe link with four GPUs and NICs per switch, and
    // made 16 NICs on 16 GPUs slower than 8.
    let after_entry = near
        .iter()
        .position(|&x| x == entry)
        .filter(|_| near.len() > 1)
        .map(|i| near[(i + 1) % near.len()]);
    let exit = after_entry.unwrap_or_else(|| {
        cand.iter()
            .cycle()
            .skip(first + 1)
            .take(cand.len())
            .copied()
            .find(|&x| x != entry)
            .unwrap_or(entry)
    });
    let mut order = vec![entry];
    order.extend(
        comm.locals
            .iter()
            .copied()
            .filter(|&x| x != entry && x != exit),
    );
    if exit != entry {
        order.push(exit);
    }
    (rail, order)
}

/// Ring algorithms: all-reduce, all-gather, reduce-scatter, and the chain for broadcast / reduce.
pub struct Ring {
    pub op: Collective,
}

impl CollectiveAlgorithm for Ring {
    fn name(&self) -> &'static str {
        "ring"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Ring
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        let n = shape.nodes as usize;
        let chain = matches!(self.op, Collective::Broadcast | Collective::Reduce);
        for c in 0..shape.channels {
            let (rail, order) = channel_order(b.net, &b.comm, &shape, c);
            let (entry, exit) = (order[0], order[order.len() - 1]);
            for s in 0..n {
                for pair in order.windows(2) {
                    b.transfer(b.gpu(s, pair[0]), b.gpu(s, pair[1]), None, None, STEP_CHUNK)?;
                }
                // The edge into the next server (or back to the entry on one server). The chain
                // of broadcast / reduce has no edge into the root (server 0's entry).
                let next = (s + 1) % n;
                if chain && next == 0 {
                    continue;
                }
                if n > 1 || exit != entry {
                    b.transfer(
                        b.gpu(s, exit),
                        b.gpu(next, entry),
                        Some(rail),
                        None,
                        STEP_CHUNK,
                    )?;
                }
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        let n = f64::from(shape.ranks.max(1));
        let per_channel = size as f64 / f64::from(shape.channels.max(1));
        per_channel
            * match self.op {
                Collective::AllReduce => 2.0 * (n - 1.0) / n,
                Collective::AllGather | Collective::ReduceScatter => (n - 1.0) / n,
                _ => 1.0,
            }
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::ring_latency_us(self.op, proto, shape.ranks, shape.nodes, shape.intra)
    }
}

/// NCCL's double binary tree for all-reduce: two complementary binary trees over the nodes
/// (`ncclGetDtree`), a chain inside each node; reduce up and broadcast down pipelined together, so
/// every edge carries the channel's data in both directions.
pub struct DoubleBinaryTree;

/// Parent of `rank` in NCCL's binary tree over `n` ranks (`ncclGetBtree`, src/graph/trees.cc).
pub fn btree_parent(n: u32, rank: u32) -> Option<u32> {
    if rank == 0 || rank >= n {
        return None;
    }
    let mut bit = 1u32;
    while bit < n && bit & rank == 0 {
        bit <<= 1;
    }
    let up = (rank ^ bit) | (bit << 1);
    Some(if up >= n { rank ^ bit } else { up })
}

/// Parent in tree `t` (0 or 1) of NCCL's double binary tree: the second tree is the first shifted
/// by one rank (odd n) or mirrored (even n) (`ncclGetDtree`).
pub fn dtree_parent(n: u32, rank: u32, t: u32) -> Option<u32> {
    if t == 0 {
        return btree_parent(n, rank);
    }
    if n % 2 == 1 {
        btree_parent(n, (rank + n - 1) % n).map(|u| (u + 1) % n)
    } else {
        btree_parent(n, n - 1 - rank).map(|u| n - 1 - u)
    }
}

impl CollectiveAlgorithm for DoubleBinaryTree {
    fn name(&self) -> &'static str {
        "tree"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Tree
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        let n = shape.nodes;
        // Both trees on every ring channel's rail: 2 x channels tree channels.
        for c in 0..2 * shape.channels {
            let t = c % 2;
            let (rail, order) = channel_order(b.net, &b.comm, &shape, c / 2);
            let head = order[0];
            for s in 0..n as usize {
                for pair in order.windows(2) {
                    b.transfer(b.gpu(s, pair[0]), b.gpu(s, pair[1]), None, None, STEP_CHUNK)?;
                    b.transfer(b.gpu(s, pair[1]), b.gpu(s, pair[0]), None, None, STEP_CHUNK)?;
                }
                if let Some(p) = dtree_parent(n, s as u32, t) {
                    let p = p as usize;
                    let (child, parent) = (b.gpu(s, head), b.gpu(p, head));
                    b.transfer(child, parent, Some(rail), None, STEP_CHUNK)?;
                    b.transfer(parent, child, Some(rail), None, STEP_CHUNK)?;
                }
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        size as f64 / f64::from(2 * shape.channels.max(1))
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::tree_latency_us(proto, shape.gpus_per_node, shape.nodes, shape.intra)
    }
}

/// The network side of NVLSTree: NVLink SHARP reduces inside each node, so only one head GPU per
/// channel (the GPU on the channel's rail) sends; the heads of all nodes form NCCL's double binary
/// tree, reduce up and broadcast down together (`ncclGetDtree`; NVLSTree in NCCL's
/// src/device/all_reduce.h).
pub struct NvlsTreeNetwork;

impl CollectiveAlgorithm for NvlsTreeNetwork {
    fn name(&self) -> &'static str {
        "nvlstree"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Tree
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        let n = shape.nodes;
        for c in 0..2 * shape.channels {
            let t = c % 2;
            let (rail, order) = channel_order(b.net, &b.comm, &shape, c / 2);
            let head = order[0];
            for s in 0..n {
                if let Some(p) = dtree_parent(n, s, t) {
                    let (s, p) = (s as usize, p as usize);
                    b.transfer(b.gpu(s, head), b.gpu(p, head), Some(rail), None, STEP_CHUNK)?;
                    b.transfer(b.gpu(p, head), b.gpu(s, head), Some(rail), None, STEP_CHUNK)?;
                }
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        size as f64 / f64::from(2 * shape.channels.max(1))
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::tree_latency_us(proto, shape.gpus_per_node, shape.nodes, shape.intra)
    }
}

/// All-to-all: every rank sends S/n to every other rank at once, crossing rails as `relay` says.
pub struct AllToAll {
    pub relay: Relay,
}

impl CollectiveAlgorithm for AllToAll {
    fn name(&self) -> &'static str {
        match self.relay {
            Relay::Direct => "alltoall",
            Relay::Pxn => "alltoall-pxn",
            Relay::PxnStaged => "alltoall-pxn-staged",
        }
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Ring
    }

    fn folds(&self) -> bool {
        true
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        if b.fold.is_some() {
            return self.step_folded(b);
        }
        let flows = u64::from(shape.ranks) * u64::from(shape.ranks.saturating_sub(1));
        if flows > MAX_ALLTOALL_FLOWS && !b.counting() {
            return Err(CollectiveError::TooManyFlows {
                ranks: shape.ranks,
                flows,
            });
        }
        let (lo, hi) = b.sources.unwrap_or((0, shape.ranks));
        if self.relay == Relay::Direct && b.counting() {
            if b.router.by_first_switch() {
                return b.count_direct_by_switch(lo, hi);
            }
            if !b.bounding() {
                return b.count_direct(lo, hi);
            }
        }
        for i in lo..hi.min(shape.ranks) {
            for j in 0..shape.ranks {
                if i == j {
                    continue;
                }
                b.send(
                    b.comm.gpu_of_rank(i),
                    b.comm.gpu_of_rank(j),
                    self.relay,
                    STEP_CHUNK,
                )?;
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        size as f64 / f64::from(shape.ranks.max(1))
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::ring_latency_us(
            Collective::AllToAll,
            proto,
            shape.ranks,
            shape.nodes,
            shape.intra,
        )
    }
}

impl AllToAll {
    /// The step by symmetry ([`Fold`]), for a communicator of every GPU a job runs on: per server
    /// class, the representative's transfers, then the last member's as a check
    /// ([`fold::lay_out_folded`]).
    fn step_folded(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        fold::lay_out_folded(b, self.relay)
    }
}

/// A send/recv: rank i sends the whole buffer to rank i+1 (and receives from i-1), the last rank to
/// the first as nccl-tests does or not at all in a pipeline hop ([`SendRecvPattern`]); between
/// rails as `relay` says, as all-to-all's transfers do (NCCL's PXN serves every p2p operation:
/// src/transport/net.cc, paths.cc `ncclTopoGetPxnRanks`).
pub struct SendRecv {
    pub relay: Relay,
    pub pattern: SendRecvPattern,
}

impl CollectiveAlgorithm for SendRecv {
    fn name(&self) -> &'static str {
        "p2p"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Ring
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        if shape.ranks < 2 {
            return Ok(());
        }
        let senders = match self.pattern {
            SendRecvPattern::Ring => shape.ranks,
            SendRecvPattern::Pipeline => shape.ranks - 1,
        };
        for i in 0..senders {
            let j = (i + 1) % shape.ranks;
            b.send(
                b.comm.gpu_of_rank(i),
                b.comm.gpu_of_rank(j),
                self.relay,
                STEP_CHUNK,
            )?;
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, _shape: &JobShape) -> f64 {
        size as f64
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::ring_latency_us(
            Collective::SendRecv,
            proto,
            shape.ranks,
            shape.nodes,
            shape.intra,
        )
    }
}

/// The shape of the job on `net`: every GPU a rank.
pub fn shape_of(net: &FabricNet<'_>) -> Result<JobShape, CollectiveError> {
    shape_of_comm(net, &Comm::whole(net))
}

/// The shape of communicator `comm` on `net`: its servers are its nodes, its local GPUs the GPUs
/// per node, the NICs of those GPUs its NICs per node.
pub fn shape_of_comm(net: &FabricNet<'_>, comm: &Comm) -> Result<JobShape, CollectiveError> {
    let nodes = comm.servers.len() as u32;
    let first = comm
        .servers
        .first()
        .and_then(|&s| net.servers.get(s))
        .ok_or(CollectiveError::Config {
            what: "servers",
            message: "the fabric has no servers".into(),
        })?;
    let gpus = comm.locals.len() as u32;
    if gpus == 0
        || comm.servers.iter().any(|&s| {
            net.servers
                .get(s)
                .is_none_or(|srv| comm.locals.iter().any(|&l| l as usize >= srv.gpus.len()))
        })
        || net.servers.iter().any(|s| s.gpus.len() != first.gpus.len())
    {
        return Err(CollectiveError::Config {
            what: "gpus-per-server",
            message: "every server needs the same number of GPUs, at least one".into(),
        });
    }
    let nics = if comm.locals.len() == first.gpus.len() {
        first.nics.len() as u32
    } else {
        comm.rails(net).len() as u32
    };
    if nodes > 1 && nics == 0 {
        return Err(CollectiveError::Config {
            what: "nics-per-server",
            message: "servers without compute NICs cannot talk to each other".into(),
        });
    }
    let mut scratch = Vec::new();
    let intra = if gpus > 1
        && net
            .nvlink_path(
                first.gpus[comm.locals[0] as usize],
                first.gpus[comm.locals[1] as usize],
                &mut scratch,
            )
            .is_some()
    {
        HopKind::Nvlink
    } else {
        HopKind::Pcie
    };
    Ok(JobShape {
        ranks: nodes * gpus,
        nodes,
        gpus_per_node: gpus,
        nics_per_node: nics,
        channels: nics.max(2),
        intra,
    })
}

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
fn slowest_bottleneck(models: &[StepModel]) -> Option<Bottleneck> {
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
    pricing: Pricing,
    /// A calibration's latency added to every operation (`NetConfig::calibration`), µs.
    extra_latency_us: f64,
    /// The fitted constants it is priced with (`CollectiveConfig::fitted`).
    fitted: Fitted,
}

enum Pricing {
    /// NCCL's own model picks algorithm and protocol; the simulated step of each candidate's
    /// family bounds its bandwidth.
    Nccl {
        sys: NcclSystem,
        tuning: Box<Tuning>,
        algo: AlgoChoice,
        protocols: Protocols,
        candidates: Vec<NcclAlgo>,
        steps: Vec<(Family, Box<dyn CollectiveAlgorithm>)>,
    },
    /// Point-to-point steps (all-to-all, send/recv, one rank) priced with NCCL's ring latency.
    P2p {
        algos: Vec<Box<dyn CollectiveAlgorithm>>,
        gpu: Option<nccl::GpuGeneration>,
        protocols: Protocols,
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
    fn priced(&self, size: u64) -> RowResult {
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
            } => {
                let bound = |family: Family, size: u64| -> (f64, Time) {
                    steps
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
                        })
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
            } => {
                let mut best: Option<((f64, f64), &'static str, Protocol)> = None;
                let p2p = matches!(op, Collective::AllToAll | Collective::SendRecv);
                for (a, m) in algos.iter().zip(&self.models) {
                    // Send/recv runs the one protocol NCCL's enqueue picks for the bytes each peer
                    // gets; one rank's copy, the fastest.
                    let protos = if p2p {
                        // LL where NCCL's enqueue picks it and NCCL_PROTO leaves it, else Simple
                        // (point-to-point sends run no LL128).
                        let p = nccl::p2p_protocol(a.edge_bytes(size, shape));
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
                        let t = price(a.as_ref(), m, shape, op, proto, size, *gpu);
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

/// Lays out `a` over `comms` by counting flows per link ([`StepBuilder::count_on`]): the source
/// ranks a few at a time, saying how far it got (a step of 131,072 GPUs has 17 billion flows),
/// then, where the flows turn out unequal, the same again to bound them
/// ([`StepBuilder::bound_counted`]).
///
/// The chunks of sources run on every core the machine has. The answer does not depend on how
/// many or in which order: each chunk starts at the connection number the sequential layout
/// gives its first source (every rank sends once over the network to each rank of another
/// server, as [`StepBuilder::send`] does), counts add up, bounds take the largest, and route
/// failures are kept in chunk order.
fn lay_out_counted(
    b: &mut StepBuilder<'_, '_>,
    a: &dyn CollectiveAlgorithm,
    comms: &[Comm],
    progress: &mut dyn FnMut(&str),
    bound_unequal: bool,
) -> Result<(), CollectiveError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    lay_out_counted_on(b, a, comms, progress, cores, bound_unequal)
}

/// [`lay_out_counted`] on at most `threads` threads; unequal flows are bounded only with
/// `bound_unequal` (a caller that will lay them out flow by flow instead skips that pass).
fn lay_out_counted_on(
    b: &mut StepBuilder<'_, '_>,
    a: &dyn CollectiveAlgorithm,
    comms: &[Comm],
    progress: &mut dyn FnMut(&str),
    threads: usize,
    bound_unequal: bool,
) -> Result<(), CollectiveError> {
    b.count_on()?;
    let total: u64 = comms
        .iter()
        .map(|c| u64::from(c.ranks()) * u64::from(c.ranks().saturating_sub(1)))
        .sum();
    // (communicator, first source, end of sources, first connection number, flows).
    let mut chunks: Vec<(usize, u32, u32, u32, u64)> = Vec::new();
    let mut conn = 0u32;
    for (k, comm) in comms.iter().enumerate() {
        let ranks = comm.ranks();
        // About a hundred chunks over the whole step; sixteen where a chunk's routes are found
        // once per first switch and destination (`count_direct_by_switch`): a first switch's
        // sources in fewer chunks find its routes fewer times.
        let flows = u64::from(ranks) * u64::from(ranks.saturating_sub(1));
        let per_step = if b.router.by_first_switch() { 16 } else { 100 };
        let reports = (flows * per_step)
            .div_ceil(total.max(1))
            .clamp(1, u64::from(ranks.max(1)));
        let chunk = (u64::from(ranks).div_ceil(reports) as u32).max(1);
        // Network transfers per source: one to each rank on another server.
        let per_source = ranks.saturating_sub(comm.locals.len() as u32);
        let mut lo = 0;
        while lo < ranks {
            let hi = (lo + chunk).min(ranks);
            chunks.push((
                k,
                lo,
                hi,
                conn,
                u64::from(hi - lo) * u64::from(ranks.saturating_sub(1)),
            ));
            conn = conn.wrapping_add((hi - lo).wrapping_mul(per_source));
            lo = hi;
        }
    }
    let threads = threads.min(chunks.len()).max(1);
    let pass = |b: &mut StepBuilder<'_, '_>,
                what: &str,
                progress: &mut dyn FnMut(&str)|
     -> Result<(), CollectiveError> {
        let say = |done: u64, progress: &mut dyn FnMut(&str)| {
            progress(&format!(
                "{}: {what}: {done} of {total} flows ({}%)",
                a.name(),
                done * 100 / total.max(1)
            ))
        };
        let run = |w: &mut StepBuilder<'_, '_>, c: &(usize, u32, u32, u32, u64)| {
            w.comm = comms[c.0].clone();
            w.sources = Some((c.1, c.2));
            w.conn = c.3;
            a.step(w)
        };
        if threads == 1 {
            let mut done = 0;
            for c in &chunks {
                run(b, c)?;
                done += c.4;
                say(done, progress);
            }
        } else {
            let next = std::sync::atomic::AtomicUsize::new(0);
            let (tx, rx) = std::sync::mpsc::channel::<u64>();
            let mut workers: Vec<ChunkWork<'_, '_>> = Vec::new();
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| {
                        let mut w = b.worker();
                        let (tx, next, chunks, run) = (tx.clone(), &next, &chunks, &run);
                        scope.spawn(move || {
                            let mut failures = Vec::new();
                            let mut error = None;
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some(c) = chunks.get(i) else { break };
                                let before = w.failure_count;
                                if let Err(e) = run(&mut w, c) {
                                    error = Some((i, e));
                                    break;
                                }
                                if w.failure_count > before {
                                    failures.push((
                                        i,
                                        std::mem::take(&mut w.failures),
                                        w.failure_count - before,
                                    ));
                                }
                                // The receiver outlives the workers.
                                let _ = tx.send(c.4);
                            }
                            ChunkWork {
                                builder: w,
                                failures,
                                error,
                            }
                        })
                    })
                    .collect();
                drop(tx);
                let mut done = 0;
                for n in rx {
                    done += n;
                    say(done, progress);
                }
                for h in handles {
                    match h.join() {
                        Ok(w) => workers.push(w),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
            });
            b.merge(workers)?;
        }
        b.sources = None;
        Ok(())
    };
    pass(b, "counting flows per link", progress)?;
    if bound_unequal && b.failure_count == 0 && b.counted_unequal() {
        b.bound_counted();
        pass(b, "bounding unequal sub-flows", progress)?;
    }
    Ok(())
}

/// What one worker of [`lay_out_counted`] did: its builder (counts or bounds), the route failures
/// of each chunk that had any (chunk, the first few, how many), the error that stopped it.
struct ChunkWork<'n, 'f> {
    builder: StepBuilder<'n, 'f>,
    failures: Vec<(usize, Vec<RouteFailure>, usize)>,
    error: Option<(usize, CollectiveError)>,
}

/// [`simulate_until`] laying out all-to-all by symmetry above `fold_above` flows, and by counting
/// flows per resource above `count_above` where it cannot (tests lower both to compare with the
/// per-flow layout).
#[allow(clippy::too_many_arguments)]
fn simulate_folding_above(
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
    let foldable = comms.len() == 1
        && *first == Comm::whole(net)
        && router.structural()
        && (!degraded || (router.symmetric_around_failures() && !net.tier_above_spines()));
    // The step's flows on the engine: a transfer per pair of ranks, each as many sub-flows as
    // its route takes (adaptive routing: one per up-port of the first switch).
    let sub_flows = u64::from(router.max_sub_flows(net).max(1));
    let mut symmetry: Option<Symmetry> = None;
    let mut irregular = false;
    let mut layout = |algos: &[&dyn CollectiveAlgorithm],
                      progress: &mut dyn FnMut(&str)|
     -> Result<Vec<StepModel>, CollectiveError> {
        let mut models = Vec::with_capacity(algos.len());
        for a in algos {
            cancel.check()?;
            let all = u64::from(shape.ranks) * u64::from(shape.ranks.saturating_sub(1)) * sub_flows;
            if foldable && a.folds() && all > fold_above && symmetry.is_none() && !irregular {
                match regular::routes_alike(net, router) {
                    Ok(()) => {
                        progress("finding the fabric's symmetry");
                        symmetry = Some(symmetry::of_net(net, cancel)?);
                    }
                    Err(e) => {
                        progress(&format!("{}: not laid out by symmetry: {e}", a.name()));
                        irregular = true;
                    }
                }
            }
            let sym = symmetry
                .as_ref()
                .filter(|_| foldable && a.folds() && all > fold_above);
            match sym {
                Some(sym) => progress(&format!(
                    "{}: laying out one step from {} representative server(s)",
                    a.name(),
                    sym.server_classes
                        .iter()
                        .filter(|c| !net.is_drained(c[0]))
                        .count()
                )),
                None => progress(&format!("{}: laying out one step", a.name())),
            }
            // Too many flows to simulate one by one: count them per resource instead. Past
            // `count_equal_above` also where flow classes cannot shrink the step (ECMP, OpenSM
            // routes, cables down): counting gives the per-flow engine's makespan when the flows
            // are equal, and gives way to the per-flow layout when they are not (adaptive
            // routing's sub-flows), so those steps keep their per-flow times.
            let classes_help = router.structural() && !net.any_failed();
            let exact_only = all <= count_above;
            let count = a.folds() && (!exact_only || (all > count_equal_above && !classes_help));
            let mut b = StepBuilder::new(net, router, shape)?.cancel_on(cancel);
            // By symmetry where the check holds (foldable: one communicator of every GPU).
            let folded = match sym {
                Some(sym) => {
                    b.fold_on(sym)?;
                    a.step(&mut b)?;
                    // Missing routes are counted over every flow, as the per-flow layout
                    // reports them.
                    let held = !b.fold_failed && b.failure_count == 0;
                    if !held {
                        progress(&format!(
                            "{}: not laid out by symmetry; laying out every flow",
                            a.name()
                        ));
                    }
                    held
                }
                None => false,
            };
            if !folded {
                if sym.is_some() {
                    b = StepBuilder::new(net, router, shape)?.cancel_on(cancel);
                }
                if count {
                    lay_out_counted(&mut b, *a, comms, progress, !exact_only)?;
                    if exact_only && b.counted_unequal() {
                        progress(&format!(
                            "{}: unequal sub-flows; laying out every flow",
                            a.name()
                        ));
                        b = StepBuilder::new(net, router, shape)?.cancel_on(cancel);
                    }
                }
                if !b.counting() {
                    for comm in comms {
                        b.comm = comm.clone();
                        a.step(&mut b)?;
                    }
                }
            }
            cancel.check()?;
            if b.counting() {
                progress(&format!(
                    "{}: timing {} flows from their counts",
                    a.name(),
                    b.flows()
                ));
            } else {
                progress(&format!("{}: simulating {} flows", a.name(), b.flows()));
            }
            models.push(b.finish(*a)?);
        }
        Ok(models)
    };
    if p2p || shape.ranks < 2 {
        let algos: Vec<Box<dyn CollectiveAlgorithm>> = match cfg.op {
            Collective::AllToAll => vec![Box::new(AllToAll { relay: cfg.relay })],
            Collective::SendRecv => vec![Box::new(SendRecv {
                relay: cfg.relay,
                pattern: cfg.send_recv,
            })],
            op => vec![Box::new(Ring { op })],
        };
        let refs: Vec<&dyn CollectiveAlgorithm> = algos.iter().map(|a| a.as_ref()).collect();
        let models = layout(&refs, progress)?;
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
                protocols: cfg.protocols,
            },
        });
    }
    let sys = nccl_system(net, &shape, first, cfg.collnet)?;
    let tuning = tuning::tune(cfg.op, &sys);
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
                let tuning = &tuning;
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
                why_disabled(cfg.op, cfg.algo.nccl(), &sys),
                enabled.join(", ")
            ),
        });
    }
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
    let models = layout(&refs, progress)?;
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
        },
    })
}

/// Which fabric step bounds an NCCL algorithm: its traffic between servers has the ring's pattern
/// (ring, PAT; CollNet and NVLS across nodes send every node's data once up and once down, the
/// ring's NIC load without its repeats), the double binary tree's (tree) or the double binary tree
/// of one head GPU per channel (NVLSTree, [`NvlsTreeNetwork`]). NVLS on one
/// node crosses only NVSwitch, whose in-switch reduction the fluid model does not represent:
/// NCCL's own model is its only bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Ring,
    Tree,
    NvlsTree,
}

fn family_of(a: NcclAlgo, sys: &NcclSystem) -> Option<Family> {
    match a {
        NcclAlgo::Ring | NcclAlgo::Pat | NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain => {
            Some(Family::Ring)
        }
        NcclAlgo::Nvls if sys.nodes > 1 => Some(Family::Ring),
        NcclAlgo::Nvls => None,
        NcclAlgo::Tree => Some(Family::Tree),
        NcclAlgo::NvlsTree => Some(Family::NvlsTree),
    }
}

/// Payload a protocol carries per byte on the wire: LL sends a 4-byte flag with every 4 bytes of
/// data, LL128 8 bytes of flags per 128-byte line (NCCL src/device/prims_ll*.h).
fn payload_fraction(p: Protocol) -> f64 {
    match p {
        Protocol::Ll => 0.5,
        Protocol::Ll128 => 120.0 / 128.0,
        Protocol::Simple => 1.0,
    }
}

/// The time of `size` bytes with the algorithm and protocol NCCL picked: NCCL's latency (times
/// the measured start-up of LL128 across servers, [`LL128_NET_STARTUP_FACTOR`]), the slowest
/// simulated path once, and the bytes at the lesser of NCCL's bandwidth and what the fabric
/// carries for that algorithm's traffic (the simulated step, times the protocol's payload); and the
/// first two alone (the part that does not grow with the size), and of that the measured start-up
/// NCCL's model leaves out, microseconds.
fn realized_time_us(
    tuning: &Tuning,
    sys: &NcclSystem,
    a: NcclAlgo,
    p: Protocol,
    size: u64,
    bound: &dyn Fn(Family, u64) -> (f64, Time),
    fitted: &Fitted,
) -> (f64, f64, f64) {
    let model = tuning.bandwidth_at(a, p, size);
    let (fabric, path) = match family_of(a, sys) {
        Some(family) => {
            let (algbw, path) = bound(family, size);
            // In-network reduction sends each node's data once each way: the ring's NIC load
            // divided by its repeats.
            let algbw = match a {
                NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain | NcclAlgo::Nvls => {
                    algbw * tuning.op.busbw_factor(sys.ranks)
                }
                _ => algbw,
            };
            (algbw * payload_fraction(p), path)
        }
        None => (f64::INFINITY, Time::ZERO),
    };
    let bw = model.min(fabric);
    let nccl = tuning.latency_at(a, p, size);
    let startup = nccl * (startup_factor(p, sys, fitted) - 1.0);
    let latency = nccl + startup + path.as_us_f64();
    (latency + size as f64 / (bw * 1e3), latency, startup)
}

/// How much longer than NCCL's latency model (tuning.cc) an LL128 collective across servers takes
/// to start, measured: the median over six published healthy multi-node `all_reduce_perf` runs at
/// 1 MiB with NCCL's defaults, where NCCL runs LL128, of `1 + (measured time - railyard's time
/// without this factor) / NCCL's latency`. The runs (their logs and sources in
/// docs/validation/mid-size-survey, their parameters in `startup-runs.toml` there): OCI BM.GPU4.8
/// A100 over RoCE 1.36; H100 over InfiniBand from NVIDIA/nccl-tests issue 309, a VMware cluster of
/// 4 servers 1.01 and one cluster at 2, 4 and 8 servers 1.43, 1.18, 1.20; the vpbenchmarking
/// repository's 4 servers 1.16. When it was fitted none of these 1 MiB points was a row of
/// docs/validation.md; since issue 35 the VMware run's is, and docs/validation.md scores every
/// row of these three sources with the factor refitted without that source (leave one source out,
/// [`crate::fitted`]: 1.26 without issue 309, 1.18 without OCI, 1.21 without vpbenchmarking). At 8 bytes (LL) the same systems are within
/// about 8 us of NCCL's latency, and in the bandwidth regime the slope agrees within about 6% (the
/// survey's README): the excess is a start-up of the LL128 pipeline that NCCL's per-hop latencies
/// leave out, so it scales the latency only, and only where it was measured. NCCL's choice of
/// algorithm and protocol is made on NCCL's own model ([`Tuning::select`]), without it, as NCCL
/// makes it.
pub const LL128_NET_STARTUP_FACTOR: f64 = 1.19;

/// [`LL128_NET_STARTUP_FACTOR`] (as `fitted` has it) where it applies (LL128 across servers),
/// else 1.
fn startup_factor(p: Protocol, sys: &NcclSystem, fitted: &Fitted) -> f64 {
    if p == Protocol::Ll128 && sys.nodes > 1 {
        fitted.ll128_net_startup_factor
    } else {
        1.0
    }
}

/// Why NCCL would not run algorithm `a` here, in a user's words.
fn why_disabled(op: Collective, a: Option<NcclAlgo>, sys: &NcclSystem) -> &'static str {
    // What the collective allows comes first (tuning.rs `algo_enabled`): NVLSTree on all-gather
    // was refused for "NVSwitch servers with Hopper or later GPUs" on DGX H100.
    match (op, a) {
        (Collective::Broadcast | Collective::Reduce, Some(a)) if a != NcclAlgo::Ring => {
            return "NCCL runs broadcast and reduce as rings only";
        }
        (
            Collective::AllGather | Collective::ReduceScatter,
            Some(NcclAlgo::Tree | NcclAlgo::NvlsTree | NcclAlgo::CollNetChain),
        ) => {
            return "all-gather and reduce-scatter run as ring, PAT, NVLS or CollNetDirect only";
        }
        (Collective::AllReduce, Some(NcclAlgo::Pat)) => {
            return "PAT runs all-gather and reduce-scatter only";
        }
        _ => {}
    }
    match a {
        Some(NcclAlgo::Nvls) if !sys.nvswitch || sys.generation < nccl::GpuGeneration::Hopper => {
            "NVLS needs NVSwitch servers with Hopper or later GPUs"
        }
        Some(NcclAlgo::Nvls) => "NVLS across servers needs CollNet/SHARP (--sharp on)",
        Some(NcclAlgo::NvlsTree) if sys.nodes <= 1 => "NVLSTree needs more than one server",
        Some(NcclAlgo::NvlsTree) => "NVLSTree needs NVSwitch servers with Hopper or later GPUs",
        Some(NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain) => {
            "CollNet needs SHARP-capable switches and --sharp on, more than one server, and for \
             CollNetDirect NVSwitch servers"
        }
        Some(NcclAlgo::Pat) => {
            "PAT runs all-gather and reduce-scatter with one GPU per server only"
        }
        Some(NcclAlgo::Tree) => "NCCL's trees run all-reduce only",
        Some(NcclAlgo::Ring) | None => "not for this collective",
    }
}

/// Whether in-network reduction can change how NCCL runs `op` over every GPU of `net` (a net built
/// with SHARP on): some algorithm and protocol NCCL's model enables with CollNet that it does not
/// enable without (CollNet, or NVLS across servers). False on one server, or where neither the
/// switches' reduction nor NVLS applies (all-gather with one GPU per server): `--sharp on` would
/// change nothing there.
pub fn sharp_changes(net: &FabricNet<'_>, op: Collective) -> Result<bool, CollectiveError> {
    let comm = Comm::whole(net);
    let shape = shape_of_comm(net, &comm)?;
    let on = tuning::tune(op, &nccl_system(net, &shape, &comm, true)?);
    let off = tuning::tune(op, &nccl_system(net, &shape, &comm, false)?);
    Ok(NcclAlgo::ALL.into_iter().any(|a| {
        Protocol::ALL
            .into_iter()
            .any(|p| on.enabled(a, p) && !off.enabled(a, p))
    }))
}

/// NCCL's view of the job on `net` (`tuning::NcclSystem`): the GPU generation, NVLink and PCIe
/// bandwidth of a GPU, and the NICs (network ports, one per plane) and their speed.
pub fn nccl_system(
    net: &FabricNet<'_>,
    shape: &JobShape,
    comm: &Comm,
    collnet: bool,
) -> Result<NcclSystem, CollectiveError> {
    let gpu_model = &net.fabric.meta.gpu_model;
    let generation = net.gpu_generation().ok_or_else(|| CollectiveError::Config {
            what: "gpu",
            message: format!(
                "NCCL's tuning tables cover Volta, Ampere, Hopper and Blackwell GPUs; `{gpu_model}` is none of them"
            ),
        })?;
    let s0 = &net.servers[comm.servers[0]];
    let g0 = s0.gpus[comm.locals[0] as usize];
    let nvlink = shape.intra == HopKind::Nvlink;
    let gpu_pcie = net.nccl_pcie_gbs(g0).unwrap_or(f64::INFINITY);
    let planes = net.fabric.meta.planes.max(1);
    let mut ports = 0u32;
    let mut nic_gbs: f64 = 0.0;
    let mut nic_pcie = f64::INFINITY;
    for rail in comm.rails(net) {
        for plane in 0..planes {
            if let Some((_, port)) = net.nic_port(comm.servers[0], rail, plane) {
                ports += 1;
                nic_gbs = nic_gbs.max(net.port_gbps(port) / 8.0);
                let nic = net.fabric.port(port).node;
                if let Some(p) = net.nccl_pcie_gbs(nic) {
                    nic_pcie = nic_pcie.min(p);
                }
            }
        }
    }
    let near = s0.gpus_near_nic.first().is_some_and(|g| !g.is_empty());
    Ok(NcclSystem {
        generation,
        nodes: shape.nodes,
        ranks: shape.ranks,
        nvlink,
        nvswitch: nvlink && shape.gpus_per_node > 2,
        nvlink_gbs: net.nvlink_gbs(g0).unwrap_or(0.0),
        pcie_gbs: gpu_pcie.min(nic_pcie).min(1e6),
        nics_per_node: ports.max(1),
        nic_gbs: if nic_gbs > 0.0 { nic_gbs } else { gpu_pcie },
        ll128_net_path: net.gpudirect() && (generation >= nccl::GpuGeneration::Hopper || near),
        collnet,
    })
}

/// Predicted time of one size and the part of it that does not grow with the size (NCCL's latency
/// and the slowest path), microseconds, with NCCL's bus-bandwidth ceilings: S x busbw factor / t may
/// not pass the SM80 cap (before protocol factors) nor the LL cap (after).
fn price(
    a: &dyn CollectiveAlgorithm,
    m: &StepModel,
    shape: &JobShape,
    op: Collective,
    proto: Protocol,
    size: u64,
    gpu: Option<nccl::GpuGeneration>,
) -> (f64, f64) {
    let f = nccl::bandwidth_factor(a.nccl_algorithm(), proto, shape.nodes);
    let mut transfer = a.edge_bytes(size, shape) * m.secs_per_byte / f;
    let bus_bytes = size as f64 * op.busbw_factor(shape.ranks);
    if gpu == Some(nccl::GpuGeneration::Ampere) {
        transfer = transfer.max(bus_bytes / (nccl::SM80_BUSBW_CAP_GBS * 1e9 * f));
    }
    if proto == Protocol::Ll {
        if let Some(cap) = nccl::ll_max_busbw_gbs(gpu, shape.nodes) {
            transfer = transfer.max(bus_bytes / (cap * 1e9));
        }
    }
    let latency = a.latency_us(proto, shape) + m.path_latency.as_us_f64();
    (latency + transfer * 1e6, latency)
}

/// The step of `pairs` (each `bytes`, crossing rails as `relay` says), routed; with `track`, per
/// phase the transfer each flow belongs to.
fn transfer_step<'n, 'f>(
    net: &'n FabricNet<'f>,
    router: &'n dyn FabricRouting,
    pairs: &[(Gpu, Gpu)],
    relay: Relay,
    bytes: u64,
    track: bool,
) -> Result<(StepBuilder<'n, 'f>, Vec<Vec<usize>>), CollectiveError> {
    let mut b = StepBuilder::new(net, router, shape_of(net)?)?;
    let mut owner: Vec<Vec<usize>> = Vec::new();
    for (i, &(a, d)) in pairs.iter().enumerate() {
        if !track {
            b.send(a, d, relay, bytes)?;
            continue;
        }
        let before: Vec<usize> = b.phases.iter().map(|p| p.w.flows()).collect();
        b.send(a, d, relay, bytes)?;
        owner.resize(b.phases.len(), Vec::new());
        for (k, ph) in b.phases.iter().enumerate() {
            let from = before.get(k).copied().unwrap_or(0);
            owner[k].extend(std::iter::repeat_n(i, ph.w.flows() - from));
        }
    }
    if b.failure_count > 0 {
        return Err(CollectiveError::Routes {
            failures: b.failures,
            total: b.failure_count,
        });
    }
    Ok((b, owner))
}

/// How long a step of arbitrary GPU-to-GPU transfers takes (each `bytes`, crossing rails as `relay`
/// says; staged phases add), for the training model.
pub fn transfers_makespan(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    pairs: &[(Gpu, Gpu)],
    relay: Relay,
    bytes: u64,
) -> Result<Time, CollectiveError> {
    let (b, _) = transfer_step(net, router, pairs, relay, bytes, false)?;
    // By flow classes where the step would be (see `StepBuilder::finish`).
    let by_class = router.structural() && !net.any_failed();
    let mut t = Time::ZERO;
    for ph in b.phases.iter().filter(|p| p.w.flows() > 0) {
        let q = ph.quotient(by_class, Cancel::NEVER)?;
        t += ph.makespan_by(q.as_ref(), Cancel::NEVER)?;
    }
    Ok(t)
}

/// [`transfers_makespan`] and each transfer's rate with all active (for a staged relay, the rate
/// over both hops one after the other), for studies and tests.
pub fn simulate_transfers(
    net: &FabricNet<'_>,
    router: &dyn FabricRouting,
    pairs: &[(Gpu, Gpu)],
    relay: Relay,
    bytes: u64,
) -> Result<(Time, Vec<f64>), CollectiveError> {
    let (b, owner) = transfer_step(net, router, pairs, relay, bytes, true)?;
    let mut makespan = Time::ZERO;
    // Seconds per byte of each transfer, summed over the phases it takes part in.
    let mut spb = vec![0.0f64; pairs.len()];
    for (ph, owners) in b.phases.iter().zip(&owner) {
        if ph.w.flows() == 0 {
            continue;
        }
        makespan += ph.makespan();
        let rates = engine::max_min_rates(&ph.w);
        let mut per = vec![0.0f64; pairs.len()];
        for (f, &i) in owners.iter().enumerate() {
            per[i] += rates[f];
        }
        for (i, r) in per.into_iter().enumerate() {
            if r > 0.0 {
                spb[i] += 1.0 / r;
            }
        }
    }
    let per = spb
        .into_iter()
        .map(|x| if x > 0.0 { 1.0 / x } else { 0.0 })
        .collect();
    Ok((makespan, per))
}

#[path = "fold.rs"]
mod fold;

#[path = "count.rs"]
mod count;

#[cfg(test)]
#[path = "collective_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "collective_discovered_tests.rs"]
mod discovered_tests;
