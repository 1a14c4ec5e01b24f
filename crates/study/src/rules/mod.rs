//! When a run key given cannot change the result: one table of rules ([`RULES`]), each naming
//! its key by the run keys' table ([`railyard_spec::run`], so a typo does not compile) and saying
//! from what it reads of the question why that key has no effect. Every front end asks the same
//! checker (one function per question: [`routed_keys_in_effect`], [`collective_keys_in_effect`],
//! [`step_keys_in_effect`], [`sharp_in_effect`]) with the keys it was given, so a key is
//! refused by the command line (`train --pxn on`) and by the web API (`{"pxn": "on"}`) with the
//! same message; each front end only names the key its own way around it (the CLI prints the
//! message, the web API answers `{"error": message, "field": key}`).
//!
//! The messages name the command line's flags (`--pxn`), the spelling the guide documents for
//! every key.

mod compare;

pub use compare::{compare_keys_in_effect, CompareFacts, CompareRule, DesignFacts, COMPARE_RULES};
use railyard_sim::nccl::Collective;
pub use railyard_spec::run::RunKey;
use railyard_spec::run::{ALGO, PXN, QPS_PER_CONNECTION, SHARP};
use railyard_spec::run::{
    AMORTIZE_YEARS, CALIBRATION, EP_OVERLAP, FP8_DISPATCH, HOST_MEMORY_GBS, PP_FLAG, PUE, SEED,
    USD_PER_KWH, WIDTH,
};
use railyard_train::parallel::Parallelism;

/// A run key given where it cannot change the result: the key and why.
#[derive(Debug, Clone)]
pub struct NoEffect {
    pub key: &'static RunKey,
    pub message: String,
}

/// Alike when they name one key (a key is its name in the table) and say the same.
impl PartialEq for NoEffect {
    fn eq(&self, other: &NoEffect) -> bool {
        self.key.name == other.key.name && self.message == other.message
    }
}

impl std::fmt::Display for NoEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NoEffect {}

/// Which run keys a front end was given (not defaulted): the CLI's flags on the command line,
/// the web API's keys in the request.
pub trait GivenKeys {
    fn has(&self, key: &RunKey) -> bool;
}

/// What the rules of a routed simulation read (`sim flows`, `sim collective`): the routing as
/// given and the queue pairs per connection.
#[derive(Debug, Clone, Copy)]
pub struct RoutedFacts<'a> {
    /// The routing as named: a policy (`ecmp`, `dmodk`, `adaptive`) or `opensm:FILE`.
    pub routing: &'a str,
    pub qps_per_connection: u32,
    pub seed: u64,
    /// The cables taken down at random (`--fail-links` plus `--fail-host-links`): `None` where
    /// the command takes no such flag (`sim flows`), `Some(None)` where none was given.
    pub random_failures: Option<Option<usize>>,
}

/// What a collective's rules read (`sim collective`): the operation, the run keys' values, and
/// the design's compute NICs per server once it is built.
#[derive(Debug, Clone, Copy)]
pub struct CollectiveFacts {
    pub op: Collective,
    /// The algorithm's name (`ring`, `auto`).
    pub algo: &'static str,
    pub sharp: bool,
    /// The relay's name (`auto`, `on`, `off`, `staged`).
    pub pxn: &'static str,
    /// Compute NICs per server of the design; `None` before it is built.
    pub nics_per_server: Option<u32>,
    /// The design once built: its servers and whether GPUDirect RDMA is on.
    pub design: Option<CollectiveDesign>,
    /// The values the messages name.
    pub host_memory_gbs: f64,
    pub seed: u64,
    pub qps_per_connection: u32,
    /// Routed by ECMP (`--routing ecmp`).
    pub ecmp: bool,
}

/// What a collective's rules read of its design once built.
#[derive(Debug, Clone, Copy)]
pub struct CollectiveDesign {
    pub servers: usize,
    pub gpudirect: bool,
}

/// What a training step's rules read, known once the layout is resolved.
#[derive(Debug, Clone, Copy)]
pub struct StepFacts<'a> {
    /// The layout the step runs.
    pub par: &'a Parallelism,
    /// The layout was fitted to the GPU's memory (none was asked for), not given.
    pub fitted: bool,
    /// Compute NICs per server of the design.
    pub nics_per_server: u32,
}

/// What the rules of `train`'s flags read before anything is loaded: the seed, whether cables
/// are taken down at random, and whether a workload is replayed (with the `--pp` it was given).
#[derive(Debug, Clone, Copy)]
pub struct TrainFlags {
    pub seed: u64,
    pub fail_links: bool,
    pub workload: bool,
    pub pp: Option<u32>,
}

/// What the rules of a model read: its name and its experts.
#[derive(Debug, Clone, Copy)]
pub struct ModelFacts<'a> {
    pub name: &'a str,
    /// Routed experts per MoE layer (0: a dense model).
    pub experts: u64,
}

/// What the rule of a text table reads (`compare`, `merge`): JSON asked, and the columns given.
#[derive(Debug, Clone, Copy)]
pub struct TableFacts {
    pub json: bool,
    pub width: u16,
}

/// What the rule of `jobs --seed` reads: what the seed could draw.
#[derive(Debug, Clone, Copy)]
pub struct JobsFacts {
    pub seed: u64,
    /// `--generate N`: a trace drawn.
    pub generate: bool,
    /// A `--placement` is `scattered`.
    pub scattered: bool,
}

/// What the rules of a plain `report` read.
#[derive(Debug, Clone, Copy)]
pub struct ReportFacts {
    /// `--no-sim`: no busbw curves.
    pub no_sim: bool,
}

/// What a rule reads, by the question it belongs to.
#[derive(Debug, Clone, Copy)]
pub enum When {
    /// A text table (`compare`, `merge`).
    Table(fn(&TableFacts) -> Option<String>),
    /// `jobs`.
    Jobs(fn(&JobsFacts) -> Option<String>),
    /// A plain `report`.
    Report(fn(&ReportFacts) -> Option<String>),
    /// `train`'s flags, before anything is loaded.
    TrainFlags(fn(&TrainFlags) -> Option<String>),
    /// A training step, from its model alone (before a layout).
    Model(fn(&ModelFacts) -> Option<String>),
    /// A routed simulation, from its routing.
    Routed(fn(&RoutedFacts) -> Option<String>),
    /// A collective, from its operation and (once built) design.
    Collective(fn(&CollectiveFacts) -> Option<String>),
    /// A collective with SHARP on, from its operation and whether the same collective with
    /// SHARP off differs.
    CollectiveSharp(fn(Collective, bool) -> Option<String>),
    /// A training step, before it runs: from its layout and design.
    Laid(fn(&StepFacts) -> Option<String>),
    /// A training step, after it ran with the key's value: the layout, and whether the same step
    /// with SHARP off differs.
    Stepped(fn(&Parallelism, bool) -> Option<String>),
}

impl When {
    /// The question the rule belongs to.
    pub fn question(&self) -> Question {
        match self {
            When::Table(_) | When::Jobs(_) | When::Report(_) => Question::Output,
            When::Routed(_) | When::Collective(_) | When::CollectiveSharp(_) => {
                Question::Simulation
            }
            When::TrainFlags(_) | When::Model(_) | When::Laid(_) | When::Stepped(_) => {
                Question::TrainingStep
            }
        }
    }
}

/// The questions rules belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// A flow or collective simulation (`sim flows`, `sim collective`); the web API asks none.
    Simulation,
    /// A training step (`train`; the web API's `/api/plan` with `model`).
    TrainingStep,
    /// How a command prints or reports (`compare`/`merge --width`, `jobs --seed`, `report`);
    /// the web API has none of these inputs.
    Output,
}

/// A rule: given `key`, `when` says why it has no effect, if it has none.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub key: &'static RunKey,
    /// A short name for the rule, as tests and the guide list it.
    pub name: &'static str,
    pub when: When,
}

/// Every rule, by question, in the order the front ends check them.
pub static RULES: [Rule; 29] = [
    Rule {
        key: &WIDTH,
        name: "width-with-json",
        when: When::Table(width_with_json),
    },
    Rule {
        key: &SEED,
        name: "seed-with-nothing-drawn-in-jobs",
        when: When::Jobs(seed_with_nothing_drawn),
    },
    Rule {
        key: &SHARP,
        name: "sharp-with-no-sim",
        when: When::Report(sharp_with_no_sim),
    },
    Rule {
        key: &CALIBRATION,
        name: "calibration-with-no-sim",
        when: When::Report(calibration_with_no_sim),
    },
    Rule {
        key: &SEED,
        name: "seed-without-fail-links-in-train",
        when: When::TrainFlags(seed_without_fail_links),
    },
    Rule {
        key: &PP_FLAG,
        name: "pp-with-a-workload",
        when: When::TrainFlags(pp_with_a_workload),
    },
    Rule {
        key: &AMORTIZE_YEARS,
        name: "amortize-years-with-a-workload",
        when: When::TrainFlags(amortize_years_with_a_workload),
    },
    Rule {
        key: &PUE,
        name: "pue-with-a-workload",
        when: When::TrainFlags(pue_with_a_workload),
    },
    Rule {
        key: &USD_PER_KWH,
        name: "usd-per-kwh-with-a-workload",
        when: When::TrainFlags(usd_per_kwh_with_a_workload),
    },
    Rule {
        key: &EP_OVERLAP,
        name: "ep-overlap-on-a-dense-model",
        when: When::Model(ep_overlap_on_a_dense_model),
    },
    Rule {
        key: &FP8_DISPATCH,
        name: "fp8-dispatch-on-a-dense-model",
        when: When::Model(fp8_dispatch_on_a_dense_model),
    },
    Rule {
        key: &EP_OVERLAP,
        name: "ep-overlap-with-ep-1",
        when: When::Laid(ep_overlap_with_ep_1),
    },
    Rule {
        key: &FP8_DISPATCH,
        name: "fp8-dispatch-with-ep-1",
        when: When::Laid(fp8_dispatch_with_ep_1),
    },
    Rule {
        key: &QPS_PER_CONNECTION,
        name: "qps-per-connection-without-ecmp",
        when: When::Routed(qps_without_ecmp),
    },
    Rule {
        key: &SEED,
        name: "seed-without-a-hash-in-sim-flows",
        when: When::Routed(seed_without_a_hash),
    },
    Rule {
        key: &SEED,
        name: "seed-with-no-cable-down-and-no-hash",
        when: When::Routed(seed_with_no_cable_down),
    },
    Rule {
        key: &SEED,
        name: "seed-without-a-hash-or-failures",
        when: When::Routed(seed_without_a_hash_or_failures),
    },
    Rule {
        key: &ALGO,
        name: "algo-on-an-operation-with-no-algorithm",
        when: When::Collective(algo_without_a_choice),
    },
    Rule {
        key: &SHARP,
        name: "sharp-on-an-operation-that-never-reduces-in-switches",
        when: When::Collective(sharp_on_sends_or_rings),
    },
    Rule {
        key: &PXN,
        name: "pxn-on-rings-and-trees",
        when: When::Collective(pxn_on_rings_and_trees),
    },
    Rule {
        key: &HOST_MEMORY_GBS,
        name: "host-memory-gbs-with-gpudirect",
        when: When::Collective(host_memory_with_gpudirect),
    },
    Rule {
        key: &PXN,
        name: "pxn-on-one-nic-collective",
        when: When::Collective(pxn_on_one_nic_collective),
    },
    Rule {
        key: &HOST_MEMORY_GBS,
        name: "host-memory-gbs-on-one-server",
        when: When::Collective(host_memory_on_one_server),
    },
    Rule {
        key: &SEED,
        name: "seed-on-one-server",
        when: When::Collective(seed_on_one_server),
    },
    Rule {
        key: &QPS_PER_CONNECTION,
        name: "qps-per-connection-on-one-server",
        when: When::Collective(qps_on_one_server),
    },
    Rule {
        key: &SHARP,
        name: "sharp-on-a-collective-it-does-not-change",
        when: When::CollectiveSharp(sharp_does_not_change_the_collective),
    },
    Rule {
        key: &PXN,
        name: "pxn-without-cross-rail-traffic",
        when: When::Laid(pxn_without_cross_rail_traffic),
    },
    Rule {
        key: &PXN,
        name: "pxn-on-one-nic",
        when: When::Laid(pxn_on_one_nic),
    },
    Rule {
        key: &SHARP,
        name: "sharp-on-a-step-it-does-not-change",
        when: When::Stepped(sharp_does_not_change_the_step),
    },
];

/// In `train`, `--seed` seeds only the cables `--fail-links` takes down: the step's ECMP hash has
/// a fixed seed, as `fabric_timer` routes.
fn seed_without_fail_links(f: &TrainFlags) -> Option<String> {
    (!f.fail_links).then(|| format!(
        "--seed {} has no effect without --fail-links: in train it seeds only the cables --fail-links takes down (the step's ECMP hash has a fixed seed); give it with --fail-links N",
        f.seed
    ))
}

/// A workload's header gives its pipeline stages.
fn pp_with_a_workload(f: &TrainFlags) -> Option<String> {
    let pp = f.pp.filter(|_| f.workload)?;
    Some(format!(
        "--pp {pp} has no effect with --workload: a workload's header gives its pipeline stages (pp:); --pp lays out --model or --model-file"
    ))
}

/// A replayed workload is printed without costs per million tokens.
fn costs_with_a_workload(flag: &str, f: &TrainFlags) -> Option<String> {
    f.workload.then(|| format!(
        "{flag} has no effect with --workload: a replayed workload is printed without costs per million tokens; {flag} prices the step of --model or --model-file"
    ))
}

fn amortize_years_with_a_workload(f: &TrainFlags) -> Option<String> {
    costs_with_a_workload("--amortize-years", f)
}

fn pue_with_a_workload(f: &TrainFlags) -> Option<String> {
    costs_with_a_workload("--pue", f)
}

fn usd_per_kwh_with_a_workload(f: &TrainFlags) -> Option<String> {
    costs_with_a_workload("--usd-per-kwh", f)
}

/// The expert flags need a model with experts: on a dense model they change nothing.
fn on_a_dense_model(flag: &str, what: &str, f: &ModelFacts) -> Option<String> {
    (f.experts == 0).then(|| format!(
        "{flag} has no effect: {} is a dense model with no experts; it {what} the expert all-to-all of a mixture-of-experts model",
        f.name
    ))
}

fn ep_overlap_on_a_dense_model(f: &ModelFacts) -> Option<String> {
    on_a_dense_model("--ep-overlap", "hides", f)
}

fn fp8_dispatch_on_a_dense_model(f: &ModelFacts) -> Option<String> {
    on_a_dense_model("--fp8-dispatch", "sends in FP8", f)
}

/// The expert flags act on expert all-to-all, which a layout of EP 1 has none of.
fn with_ep_1(flag: &str, f: &StepFacts) -> Option<String> {
    let layout = if f.fitted {
        "the layout fitted to the GPU's memory"
    } else {
        "the layout given"
    };
    (f.par.ep <= 1).then(|| format!(
        "{flag} has no effect: {layout} has EP 1, so no expert all-to-all; give --ep N (experts spread over N GPUs)"
    ))
}

fn ep_overlap_with_ep_1(f: &StepFacts) -> Option<String> {
    with_ep_1("--ep-overlap", f)
}

fn fp8_dispatch_with_ep_1(f: &StepFacts) -> Option<String> {
    with_ep_1("--fp8-dispatch", f)
}

/// What a routing policy without a hash does instead, for the errors of the ECMP knobs.
pub fn unhashed(routing: &str) -> &'static str {
    match routing {
        "dmodk" => "D-mod-K routes by destination",
        "adaptive" => "adaptive routing spreads every flow over every up-port",
        _ => "an OpenSM LFT dump routes by its tables",
    }
}

/// Queue pairs matter only to the ECMP hash, each hashed on its own.
fn qps_without_ecmp(f: &RoutedFacts) -> Option<String> {
    let (qps, routing) = (f.qps_per_connection, f.routing);
    (routing != "ecmp").then(|| format!(
        "--qps-per-connection {qps} has no effect with --routing {routing} ({}): queue pairs matter only to the ECMP hash, each hashed on its own; give it with --routing ecmp",
        unhashed(routing)
    ))
}

/// `--width` sets the columns of the text table, which JSON has none of.
fn width_with_json(f: &TableFacts) -> Option<String> {
    f.json.then(|| format!(
        "--width {} has no effect with --json: it sets the columns of the text table; give it without --json",
        f.width
    ))
}

/// The seed draws only the scattered placement and `--generate`'s trace.
fn seed_with_nothing_drawn(f: &JobsFacts) -> Option<String> {
    (!f.generate && !f.scattered).then(|| format!(
        "--seed {} has no effect: it draws the scattered placement and --generate's trace; give --placement with scattered, or --generate N",
        f.seed
    ))
}

/// A plain report's busbw curves are its only simulations: `--no-sim` leaves them out.
fn sharp_with_no_sim(f: &ReportFacts) -> Option<String> {
    f.no_sim.then(|| {
        "--sharp has no effect with --no-sim: only the busbw curves reduce in the switches; leave out --no-sim".to_string()
    })
}

fn calibration_with_no_sim(f: &ReportFacts) -> Option<String> {
    f.no_sim.then(|| {
        "--calibration has no effect with --no-sim: only the busbw curves run calibrated; leave out --no-sim".to_string()
    })
}

/// `sim flows` hashes only with ECMP, and takes no cable down.
fn seed_without_a_hash(f: &RoutedFacts) -> Option<String> {
    (f.random_failures.is_none() && f.routing != "ecmp").then(|| format!(
        "--seed {} has no effect with --routing {} ({}; nothing is random): --seed seeds the ECMP hash; give it with --routing ecmp (a --generate workload takes its own seed=N)",
        f.seed,
        f.routing,
        unhashed(f.routing)
    ))
}

fn seed_with_no_cable_down(f: &RoutedFacts) -> Option<String> {
    (f.random_failures == Some(Some(0)) && f.routing != "ecmp").then(|| format!(
        "--seed {} has no effect with --routing {} and --fail-links 0: no cable is taken down, and nothing is hashed; give --fail-links N (N >= 1) or --routing ecmp",
        f.seed, f.routing
    ))
}

fn seed_without_a_hash_or_failures(f: &RoutedFacts) -> Option<String> {
    (f.random_failures == Some(None) && f.routing != "ecmp").then(|| format!(
        "--seed {} has no effect with --routing {} ({}) and no --fail-links: --seed seeds the ECMP hash (--routing ecmp) and the cables --fail-links and --fail-host-links take down; give it with either",
        f.seed,
        f.routing,
        unhashed(f.routing)
    ))
}

/// Host memory is crossed only by transfers staged through it, with GPUDirect RDMA off
/// (`fabric_net`): on a design with it on, the bandwidth cannot change the result.
fn host_memory_with_gpudirect(f: &CollectiveFacts) -> Option<String> {
    f.design.filter(|d| d.gpudirect).map(|_| format!(
        "--host-memory-gbs {} has no effect on this design: it has GPUDirect RDMA on, so no transfer goes through host memory; give it with --gpudirect off",
        railyard_catalog::number(f.host_memory_gbs)
    ))
}

/// One server: no transfer goes through a NIC, so none is staged in host memory, and none
/// crosses a switch to be hashed.
fn on_one_server(f: &CollectiveFacts, flag: String, why: &str) -> Option<String> {
    f.design.filter(|d| d.servers <= 1).map(|_| {
        format!("{flag} has no effect on one server: {why}; give it with --servers 2 or more")
    })
}

fn host_memory_on_one_server(f: &CollectiveFacts) -> Option<String> {
    let flag = format!(
        "--host-memory-gbs {}",
        railyard_catalog::number(f.host_memory_gbs)
    );
    on_one_server(
        f,
        flag,
        "only transfers through a NIC are staged in host memory",
    )
}

fn seed_on_one_server(f: &CollectiveFacts) -> Option<String> {
    let flag = format!("--seed {}", f.seed);
    f.ecmp
        .then(|| on_one_server(f, flag, "no transfer crosses a switch to be hashed"))
        .flatten()
}

fn qps_on_one_server(f: &CollectiveFacts) -> Option<String> {
    let flag = format!("--qps-per-connection {}", f.qps_per_connection);
    f.ecmp
        .then(|| on_one_server(f, flag, "no transfer crosses a switch to be hashed"))
        .flatten()
}

/// SHARP where no algorithm would reduce in the switches: one server, or an all-gather with one
/// GPU per server.
fn sharp_does_not_change_the_collective(op: Collective, changes: bool) -> Option<String> {
    (!changes).then(|| format!(
        "--sharp on has no effect on {op} here: NCCL would run no algorithm that reduces in the switches (CollNet, or NVLS across servers), which needs more than one server and, for allgather and reducescatter, NVSwitch servers with a NIC per GPU; leave it out"
    ))
}

/// All-to-all and send/recv are point-to-point sends in NCCL (`collective::run`): no collective
/// algorithm, no CollNet, and only they cross rails through a relay. Broadcast and reduce run
/// only as rings (`tuning::algo_enabled`), so neither the algorithm nor SHARP changes them.
fn point_to_point(op: Collective) -> bool {
    matches!(op, Collective::AllToAll | Collective::SendRecv)
}

fn ring_only(op: Collective) -> bool {
    matches!(op, Collective::Broadcast | Collective::Reduce)
}

fn algo_without_a_choice(f: &CollectiveFacts) -> Option<String> {
    let op = f.op;
    let why = if point_to_point(op) {
        "NCCL runs it as point-to-point sends, with no collective algorithm to choose"
    } else if ring_only(op) {
        "NCCL runs it only as a ring"
    } else {
        return None;
    };
    Some(format!(
        "--algo {} has no effect on {op}: {why}; --algo applies to allreduce, allgather and reducescatter",
        f.algo
    ))
}

fn sharp_on_sends_or_rings(f: &CollectiveFacts) -> Option<String> {
    let op = f.op;
    let why = if point_to_point(op) {
        "its point-to-point sends never reduce in the switches"
    } else if ring_only(op) {
        "NCCL runs it only as a ring, never on CollNet or NVLS"
    } else {
        return None;
    };
    Some(format!(
        "--sharp {} has no effect on {op}: {why}; --sharp applies to allreduce, allgather and reducescatter",
        if f.sharp { "on" } else { "off" }
    ))
}

fn pxn_on_rings_and_trees(f: &CollectiveFacts) -> Option<String> {
    let op = f.op;
    (!point_to_point(op)).then(|| format!(
        "--pxn {} has no effect on {op}: it says how alltoall and sendrecv cross rails between servers, and {op} runs NCCL's rings and trees, which relay nothing; give it with alltoall or sendrecv",
        f.pxn
    ))
}

/// One NIC per server: every transfer between servers leaves and arrives on the one rail, so PXN
/// relays nothing (`collective::relay_of`), and a staged relay only serialised the transfers
/// inside a server before those between servers.
fn pxn_on_one_nic_collective(f: &CollectiveFacts) -> Option<String> {
    (f.nics_per_server? <= 1).then(|| format!(
        "--pxn {} has no effect on this design: it has one NIC per server, so no transfer crosses rails; give it with --nics-per-server 2 or more",
        f.pxn
    ))
}

/// `pxn` says how expert all-to-all and pipeline and context-parallel send/recv cross rails,
/// which a layout of EP 1, PP 1 and CP 1 has none of.
fn pxn_without_cross_rail_traffic(f: &StepFacts) -> Option<String> {
    let layout = if f.fitted {
        "the layout fitted to the GPU's memory"
    } else {
        "the layout given"
    };
    (f.par.ep <= 1 && f.par.pp <= 1 && f.par.cp <= 1).then(|| format!(
        "--pxn has no effect: {layout} (EP 1, PP 1, CP 1) has no expert all-to-all, pipeline or context-parallel send/recv, the traffic it routes across rails; give --ep, --pp or --cp"
    ))
}

/// One NIC per server: nothing crosses rails, so PXN relays nothing (a staged relay would only
/// serialise the transfers inside a server before those between servers).
fn pxn_on_one_nic(f: &StepFacts) -> Option<String> {
    (f.nics_per_server <= 1).then(|| {
        "--pxn has no effect on this design: it has one NIC per server, so no transfer crosses rails; give it with --nics-per-server 2 or more".to_string()
    })
}

/// `sharp` on where no collective of the step would reduce in the switches (the default ZeRO
/// layouts keep the all-reduce in a server and run one GPU per server in each data-parallel
/// all-gather and reduce-scatter): the same step with SHARP off is the test.
fn sharp_does_not_change_the_step(par: &Parallelism, changes: bool) -> Option<String> {
    (!changes).then(|| format!(
        "--sharp on has no effect on this step: NCCL runs none of its collectives on CollNet or NVLS across servers (TP {}, DP {}, ZeRO-{}: no all-reduce that spans servers picks them, and the all-gathers and reduce-scatters have one GPU per server or no NVSwitch); leave it out",
        par.tp, par.dp, par.zero
    ))
}

/// The first rule, in [`RULES`]' order, that refuses a key given: `refuse` reads the rules of one
/// question (`None` for the others').
fn first_refusal(
    given: &dyn GivenKeys,
    mut refuse: impl FnMut(&When) -> Option<String>,
) -> Result<(), NoEffect> {
    for rule in &RULES {
        if given.has(rule.key) {
            if let Some(message) = refuse(&rule.when) {
                return Err(NoEffect {
                    key: rule.key,
                    message,
                });
            }
        }
    }
    Ok(())
}

/// The rules of a routed simulation (`sim flows`, `sim collective`).
pub fn routed_keys_in_effect(given: &dyn GivenKeys, facts: &RoutedFacts) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::Routed(refuse) => refuse(facts),
        _ => None,
    })
}

/// The rules of a collective (`sim collective`): before its design is built, then again with
/// [`CollectiveFacts::nics_per_server`] known.
pub fn collective_keys_in_effect(
    given: &dyn GivenKeys,
    facts: &CollectiveFacts,
) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::Collective(refuse) => refuse(facts),
        _ => None,
    })
}

/// The rules of `train`'s flags, checked before anything is loaded.
pub fn train_flags_in_effect(given: &dyn GivenKeys, facts: &TrainFlags) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::TrainFlags(refuse) => refuse(facts),
        _ => None,
    })
}

/// The rules of a model's flags (`train`, `compare`), checked once the model is known.
pub fn model_keys_in_effect(given: &dyn GivenKeys, facts: &ModelFacts) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::Model(refuse) => refuse(facts),
        _ => None,
    })
}

/// The rule of a collective with SHARP on (`sim collective --sharp on`): `changes` (asked only
/// when SHARP is on and given) says whether the same collective with SHARP off differs, `None`
/// where that cannot be told (a fabric that cannot take SHARP is refused elsewhere, naming it).
pub fn collective_sharp_in_effect(
    given: &dyn GivenKeys,
    sharp_on: bool,
    op: Collective,
    changes: &mut dyn FnMut() -> Option<bool>,
) -> Result<(), NoEffect> {
    if !sharp_on {
        return Ok(());
    }
    first_refusal(given, |when| match when {
        When::CollectiveSharp(refuse) => changes().and_then(|c| refuse(op, c)),
        _ => None,
    })
}

/// The rule of a text table (`compare`, `merge`).
pub fn table_keys_in_effect(given: &dyn GivenKeys, facts: &TableFacts) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::Table(refuse) => refuse(facts),
        _ => None,
    })
}

/// The rule of `jobs`.
pub fn jobs_keys_in_effect(given: &dyn GivenKeys, facts: &JobsFacts) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::Jobs(refuse) => refuse(facts),
        _ => None,
    })
}

/// The rules of a plain `report`.
pub fn report_keys_in_effect(given: &dyn GivenKeys, facts: &ReportFacts) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::Report(refuse) => refuse(facts),
        _ => None,
    })
}

/// The rules checked before a training step runs.
pub fn step_keys_in_effect(given: &dyn GivenKeys, facts: &StepFacts) -> Result<(), NoEffect> {
    first_refusal(given, |when| match when {
        When::Laid(refuse) => refuse(facts),
        _ => None,
    })
}

/// The first rule checked after the step ran that refuses a key given: `sharp_on` says SHARP was
/// on, and `changes` (asked only then) whether the same step with SHARP off differs.
pub fn sharp_in_effect(
    given: &dyn GivenKeys,
    sharp_on: bool,
    par: &Parallelism,
    changes: &mut dyn FnMut() -> bool,
) -> Result<(), NoEffect> {
    if !sharp_on {
        return Ok(());
    }
    first_refusal(given, |when| match when {
        When::Stepped(refuse) => refuse(par, changes()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Keys(&'static [&'static str]);

    impl GivenKeys for Keys {
        fn has(&self, key: &RunKey) -> bool {
            self.0.contains(&key.name)
        }
    }

    /// Llama 3 8B on 32 GPUs as `train` lays it out when asked nothing (EP 1, PP 1, CP 1), with
    /// `pp` pipeline stages.
    fn par(pp: u32) -> Parallelism {
        let model = railyard_train::model::Model::preset("llama3-8b").unwrap();
        let par = railyard_train::parallel::Layout::unasked()
            .resolve(32, 8, &model)
            .unwrap();
        assert_eq!((par.ep, par.pp, par.cp), (1, 1, 1));
        Parallelism { pp, ..par }
    }

    /// A key not given is never refused; given where the layout has no traffic for it, it is,
    /// and the one-NIC rule speaks after the layout's.
    #[test]
    fn pxn_is_refused_only_where_it_has_no_effect() {
        let p = par(1);
        let facts = StepFacts {
            par: &p,
            fitted: true,
            nics_per_server: 1,
        };
        assert_eq!(step_keys_in_effect(&Keys(&[]), &facts), Ok(()));
        let e = step_keys_in_effect(&Keys(&["pxn"]), &facts).unwrap_err();
        assert!(e.message.contains("the layout fitted"), "{e}");
        assert_eq!(e.key.name, "pxn");
        let p = par(2);
        let facts = StepFacts { par: &p, ..facts };
        let e = step_keys_in_effect(&Keys(&["pxn"]), &facts).unwrap_err();
        assert!(e.message.contains("one NIC per server"), "{e}");
        let facts = StepFacts {
            nics_per_server: 8,
            ..facts
        };
        assert_eq!(step_keys_in_effect(&Keys(&["pxn"]), &facts), Ok(()));
    }

    /// SHARP is tested only when on and given, and refused when the step does not change.
    #[test]
    fn sharp_is_refused_when_the_step_does_not_change() {
        let p = par(1);
        let mut asked = 0;
        let mut same = || {
            asked += 1;
            false
        };
        assert_eq!(
            sharp_in_effect(&Keys(&["sharp"]), false, &p, &mut same),
            Ok(())
        );
        assert_eq!(sharp_in_effect(&Keys(&[]), true, &p, &mut same), Ok(()));
        let e = sharp_in_effect(&Keys(&["sharp"]), true, &p, &mut same).unwrap_err();
        assert!(e.message.starts_with("--sharp on has no effect"), "{e}");
        assert_eq!(asked, 1);
        assert_eq!(
            sharp_in_effect(&Keys(&["sharp"]), true, &p, &mut || true),
            Ok(())
        );
    }
}
