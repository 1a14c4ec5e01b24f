//! The run keys: how `sim`, `train` and `compare` simulate, beside the design keys
//! ([`crate::keys`]: the same [`Key`] machinery, one parser, one error wording). Each key declares
//! its type and range ([`Kind`]), the front ends that take it ([`Fronts`]) and what it reaches
//! ([`Reach`]): the simulations whose result it can change, from which a front end derives when a
//! key given has no effect.
//!
//! The names are the simulator's: its `RoutingKind::NAMES`, `Relay::NAMES` and `AlgoChoice::NAMES`
//! are [`ROUTING_NAMES`], [`RELAY_NAMES`] and [`ALGO_NAMES`], and the simulator parses the names a
//! key sets ([`RunOverrides`]).

use crate::keys::{self, Fronts, Key, Kind, Value};

/// Routing policies (`--routing`, `routing=`): `RoutingKind`'s names in its order.
pub const ROUTING_NAMES: [&str; 3] = ["ecmp", "dmodk", "adaptive"];
/// How transfers cross rails (`--pxn`, `pxn=`): `auto`, then `Relay`'s names.
pub const RELAY_NAMES: [&str; 4] = ["auto", "on", "off", "staged"];
/// NCCL's algorithms (`--algo`, `algo=`): `AlgoChoice`'s names in its order.
pub const ALGO_NAMES: [&str; 8] = [
    "ring",
    "tree",
    "collnetdirect",
    "collnetchain",
    "nvls",
    "nvlstree",
    "pat",
    "auto",
];
/// The most queue pairs NCCL opens per connection (`NCCL_IB_MAX_QPS` in NCCL's
/// src/transport/net_ib.cc), the ceiling of NCCL_IB_QPS_PER_CONNECTION.
pub const MAX_QPS_PER_CONNECTION: u32 = 128;

/// What a run key's value reaches: the simulations whose result it can change. Given where none
/// of them runs, it has no effect, and the front ends refuse it naming what it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The training step of a model (the layout: `tp=`, ... `zero=`).
    TrainingStep,
    /// The all-reduce busbw row (`compare --perf`); a training step runs NCCL's own choice.
    AllReduceRow,
    /// Every simulation: busbw rows and the training step (routing, PXN).
    Simulations,
    /// Every simulation and the report's busbw curves (SHARP).
    SimulationsAndCurves,
    /// Only the ECMP hash (queue pairs per connection).
    EcmpHash,
    /// The random choices: the cables taken down at random and the ECMP hash (`--seed`).
    Randomness,
    /// Transfers staged through host memory, with GPUDirect RDMA off (`--host-memory-gbs`).
    HostStaging,
    /// The text table's layout (`--width`).
    Table,
    /// A training step's costs per million tokens (`--amortize-years`, `--pue`, `--usd-per-kwh`).
    TokenCosts,
}

/// A run key: sets [`RunOverrides`]; [`Reach`] says what it can change.
#[derive(Debug, Clone, Copy)]
pub struct RunKey {
    pub key: Key<RunOverrides>,
    pub reach: Reach,
}

impl std::ops::Deref for RunKey {
    type Target = Key<RunOverrides>;
    fn deref(&self) -> &Key<RunOverrides> {
        &self.key
    }
}

/// A routing value: a policy by name, or an OpenSM LFT dump (`opensm:FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Policy(&'static str),
    OpenSm(String),
}

/// What a run's keys set, by name: how a simulation routes, relays across rails and picks its
/// algorithm, and (per design of `compare`) how the training job is laid out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOverrides {
    pub routing: Option<Route>,
    /// One of [`RELAY_NAMES`] (an alias read as its name).
    pub pxn: Option<&'static str>,
    /// One of [`ALGO_NAMES`].
    pub algo: Option<&'static str>,
    pub sharp: Option<bool>,
    pub qps_per_connection: Option<u32>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    pub ep: Option<u32>,
    pub micro_batch: Option<u64>,
    pub global_batch: Option<u64>,
    pub zero: Option<u32>,
}

/// The run keys that reach `r`.
pub fn reaching(r: Reach) -> impl Iterator<Item = &'static RunKey> {
    RUN_KEYS.iter().filter(move |k| k.reach == r)
}

fn routing_names() -> Vec<&'static str> {
    ROUTING_NAMES.to_vec()
}

fn pxn_names() -> Vec<&'static str> {
    RELAY_NAMES.to_vec()
}

fn algo_names() -> Vec<&'static str> {
    ALGO_NAMES.to_vec()
}

/// The route a routing value names: a policy, or an OpenSM LFT dump.
fn route_of(v: Value) -> Option<Route> {
    match v {
        Value::Choice(name) => Some(Route::Policy(name)),
        Value::File { path, .. } => Some(Route::OpenSm(path)),
        _ => None,
    }
}

/// A choice's name.
fn name_of(v: Value) -> Option<&'static str> {
    match v {
        Value::Choice(name) => Some(name),
        _ => None,
    }
}

/// The run keys: how `sim`, `train` and `compare` simulate, the sibling of the design keys (the
/// same [`Key`] machinery: one parser, one error wording). Their names are the simulator's
/// (`RoutingKind::NAMES`, `Relay::NAMES`, `AlgoChoice::NAMES` are these constants); each command's flag (with its own default and help) parses through the entries below,
/// and the tests enumerate this list.
///
/// Routing, PXN, the algorithm, SHARP and the queue pairs are also `compare`'s per-design pairs
/// (`DESIGN:routing=ecmp`, `--vary pxn=on,off`, `--vary algo=ring,tree`, `--vary sharp=on,off`),
/// as are the training layout's keys, which are pairs only (`train` and `compare` have their own
/// flags for them, with defaults).
pub static RUN_KEYS: [RunKey; 12] = [
    ROUTING,
    PXN,
    ALGO,
    SHARP,
    QPS_PER_CONNECTION,
    layout_key!("tp", tp, "Tensor parallelism of --model on this design"),
    layout_key!("pp", pp, "Pipeline stages of --model on this design"),
    layout_key!("dp", dp, "Data parallelism of --model on this design"),
    layout_key!("ep", ep, "Expert parallelism of --model on this design"),
    layout_key!(
        "micro-batch",
        micro_batch,
        "Sequences per micro-batch of --model on this design"
    ),
    layout_key!(
        "global-batch",
        global_batch,
        "Sequences per step of --model on this design"
    ),
    ZERO,
];

/// Flag and per-design pair.
const FLAG_AND_PAIR: Fronts = Fronts {
    flag: true,
    vary: true,
    json: false,
    form: false,
};

/// Flag, per-design pair and a key of the web API's requests (not in its form).
const FLAG_PAIR_AND_JSON: Fronts = Fronts {
    flag: true,
    vary: true,
    json: true,
    form: false,
};

/// Per-design pair only.
const PAIR: Fronts = Fronts {
    flag: false,
    vary: true,
    json: false,
    form: false,
};

/// Largest count a layout pair takes (the layout itself checks it against the design's GPUs).
const LAYOUT: keys::Bounds<u32> = keys::Bounds {
    min: 1,
    max: 1 << 24,
};

/// A count of the training layout as a per-design pair of `compare`, setting `RunOverrides::$field`.
macro_rules! layout_key {
    ($name:literal, $field:ident, $help:literal) => {
        RunKey {
            reach: Reach::TrainingStep,
            key: Key {
                name: $name,
                json: $name,
                value_name: "N",
                kind: Kind::Count(LAYOUT),
                help: $help,
                label: $name,
                fields: &[],
                fronts: PAIR,
                set: |r, v| {
                    if let Value::Count(n) = v {
                        r.$field = Some(n.into());
                    }
                },
                read: |_| None,
            },
        }
    };
}
use layout_key;

fn zero_names() -> Vec<&'static str> {
    vec!["0", "1", "2", "3"]
}

/// `zero=0|1|2|3`: the ZeRO stage of --model on this design.
pub const ZERO: RunKey = RunKey {
    reach: Reach::TrainingStep,
    key: Key {
        name: "zero",
        json: "zero",
        value_name: "0|1|2|3",
        kind: Kind::Choice {
            names: zero_names,
            aliases: &[],
            files: &[],
        },
        help: "ZeRO stage of --model on this design",
        label: "ZeRO",
        fields: &[],
        fronts: PAIR,
        set: |r, v| {
            if let Value::Choice(n) = v {
                r.zero = n.parse().ok();
            }
        },
        read: |_| None,
    },
};

/// `--routing`: `ecmp`, `dmodk`, `adaptive`, or `opensm:FILE` where a command reads LFT dumps.
pub const ROUTING: RunKey = RunKey {
    reach: Reach::Simulations,
    key: Key {
        name: "routing",
        json: "routing",
        value_name: "R",
        kind: Kind::Choice {
            names: routing_names,
            aliases: &[],
            files: &["opensm"],
        },
        help: "Routing: a policy (ecmp, dmodk as OpenSM ftree, adaptive) or an OpenSM LFT dump",
        label: "routing",
        fields: &[],
        fronts: FLAG_AND_PAIR,
        set: |r, v| r.routing = route_of(v),
        read: |_| None,
    },
};

/// `--pxn`: `auto`, `on`, `off`, `staged`.
pub const PXN: RunKey = RunKey {
    reach: Reach::Simulations,
    key: Key {
        name: "pxn",
        json: "pxn",
        value_name: "auto|on|off|staged",
        kind: Kind::Choice {
            names: pxn_names,
            aliases: &[("pipelined", "on"), ("direct", "off")],
            files: &[],
        },
        help: "How transfers cross rails between servers (PXN)",
        label: "PXN",
        fields: &[],
        fronts: FLAG_PAIR_AND_JSON,
        set: |r, v| r.pxn = name_of(v),
        read: |_| None,
    },
};

/// `--algo`: `ring`, `tree`, `auto`.
pub const ALGO: RunKey = RunKey {
    reach: Reach::AllReduceRow,
    key: Key {
        name: "algo",
        json: "algo",
        value_name: "A",
        kind: Kind::Choice {
            names: algo_names,
            aliases: &[],
            files: &[],
        },
        help: "Collective algorithm",
        label: "algorithm",
        fields: &[],
        fronts: FLAG_AND_PAIR,
        set: |r, v| r.algo = name_of(v),
        read: |_| None,
    },
};

fn sharp_names() -> Vec<&'static str> {
    vec!["on", "off"]
}

/// `--sharp on|off`: whether NCCL may reduce in the switches (SHARP, NCCL's CollNet:
/// `NCCL_COLLNET_ENABLE=1` with the NCCL-SHARP plugin). Off by default, as NCCL has it without
/// the plugin; on a fabric whose switches or NICs do not support it, an error names them.
pub const SHARP: RunKey = RunKey {
    reach: Reach::SimulationsAndCurves,
    key: Key {
        name: "sharp",
        json: "sharp",
        value_name: "on|off",
        kind: Kind::Choice {
            names: sharp_names,
            aliases: &[],
            files: &[],
        },
        help: "In-network all-reduce on SHARP switches (NCCL CollNet, with the SHARP plugin)",
        label: "SHARP",
        fields: &[],
        fronts: FLAG_PAIR_AND_JSON,
        set: |r, v| {
            if let Value::Choice(n) = v {
                r.sharp = match n {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                };
            }
        },
        read: |_| None,
    },
};

/// `--qps-per-connection N`: queue pairs per connection, each hashed on its own by ECMP
/// (`NCCL_IB_QPS_PER_CONNECTION`).
pub const QPS_PER_CONNECTION: RunKey = RunKey {
    reach: Reach::EcmpHash,
    key: Key {
        name: "qps-per-connection",
        json: "qps_per_connection",
        value_name: "N",
        kind: Kind::Count(keys::Bounds {
            min: 1,
            max: MAX_QPS_PER_CONNECTION,
        }),
        help:
            "Queue pairs per connection for ECMP, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION)",
        label: "QPs per connection",
        fields: &[],
        fronts: FLAG_AND_PAIR,
        set: |r, v| {
            if let Value::Count(n) = v {
                r.qps_per_connection = Some(n);
            }
        },
        read: |_| None,
    },
};

/// A command-line flag only: no pair, no key of the web API.
const FLAG: Fronts = Fronts {
    flag: true,
    vary: false,
    json: false,
    form: false,
};

/// A run knob that is a flag only (no pair, no web key), named in the run keys' terms so that a
/// rule refusing it is keyed by a constant (a typo does not compile): it sets nothing of
/// [`RunOverrides`], its command parses it with its own flag.
macro_rules! flag_key {
    ($(#[$doc:meta])* $konst:ident, $name:literal, $json:literal, $value:literal, $kind:expr, $reach:expr, $help:literal) => {
        $(#[$doc])*
        pub const $konst: RunKey = RunKey {
            reach: $reach,
            key: Key {
                name: $name,
                json: $json,
                value_name: $value,
                kind: $kind,
                help: $help,
                label: $name,
                fields: &[],
                fronts: FLAG,
                set: |_, _| {},
                read: |_| None,
            },
        };
    };
}

flag_key!(
    /// `--seed N`: the cables `--fail-links` and `--fail-host-links` take down at random, and the
    /// ECMP hash.
    SEED, "seed", "seed", "N",
    Kind::Count(keys::Bounds { min: 0, max: u32::MAX }),
    Reach::Randomness,
    "Seed of the ECMP hash and of the cables taken down at random"
);
flag_key!(
    /// `--host-memory-gbs GB/S`: host memory bandwidth per server, with GPUDirect RDMA off.
    HOST_MEMORY_GBS, "host-memory-gbs", "host_memory_gbs", "GB/S",
    Kind::Number { bounds: keys::Bounds { min: 0.0, max: 1e6 }, step: 1.0 },
    Reach::HostStaging,
    "Host memory bandwidth per server, GB/s, for GPUDirect RDMA off"
);
flag_key!(
    /// `--fail-links N`: switch-to-switch cables taken down at random.
    FAIL_LINKS, "fail-links", "fail_links", "N",
    Kind::Count(keys::Bounds { min: 0, max: u32::MAX }),
    Reach::Simulations,
    "Switch-to-switch cables taken down at random (seeded by --seed)"
);
flag_key!(
    /// `--fail-host-links N`: servers' cables taken down at random, draining their servers.
    FAIL_HOST_LINKS, "fail-host-links", "fail_host_links", "N",
    Kind::Count(keys::Bounds { min: 0, max: u32::MAX }),
    Reach::Simulations,
    "Servers' cables taken down at random (seeded by --seed), draining their servers"
);
flag_key!(
    /// `--calibration FILE`: a cluster's calibration (`railyard calibrate`).
    CALIBRATION, "calibration", "calibration", "FILE",
    Kind::Choice { names: Vec::new, aliases: &[], files: &["file"] },
    Reach::SimulationsAndCurves,
    "A cluster's calibration (railyard calibrate), applied to every simulation"
);
flag_key!(
    /// `--width N`: the columns of `compare`'s text table.
    WIDTH, "width", "width", "N",
    Kind::Count(keys::Bounds { min: 40, max: u16::MAX as u32 }),
    Reach::Table,
    "Columns the text table may take"
);
flag_key!(
    /// `--ep-overlap`: expert all-to-all hidden under compute, as DeepSeek-V3's DualPipe does.
    EP_OVERLAP, "ep-overlap", "ep_overlap", "", Kind::Switch, Reach::TrainingStep,
    "Hide expert all-to-all under compute"
);
flag_key!(
    /// `--fp8-dispatch`: expert dispatch all-to-alls in FP8.
    FP8_DISPATCH, "fp8-dispatch", "fp8_dispatch", "", Kind::Switch, Reach::TrainingStep,
    "Expert dispatch all-to-alls in FP8"
);
flag_key!(
    /// `--pp N`: pipeline stages of `--model` (the flag; `pp=` is its pair).
    PP_FLAG, "pp", "pp", "N", Kind::Count(LAYOUT), Reach::TrainingStep,
    "Pipeline stages"
);
flag_key!(
    /// `--amortize-years Y`: years the hardware is paid off over, for the costs per token.
    AMORTIZE_YEARS, "amortize-years", "amortize_years", "Y",
    Kind::Number { bounds: keys::Bounds { min: 0.01, max: 100.0 }, step: 1.0 },
    Reach::TokenCosts,
    "Years over which the hardware is paid off"
);
flag_key!(
    /// `--pue R`: the hall's power usage effectiveness, for the cluster's costs per token.
    PUE, "pue", "pue", "R",
    Kind::Number { bounds: keys::Bounds { min: 1.0, max: 10.0 }, step: 0.1 },
    Reach::TokenCosts,
    "Power usage effectiveness of the hall"
);
flag_key!(
    /// `--usd-per-kwh USD`: the electricity price, for the cluster's costs per token.
    USD_PER_KWH, "usd-per-kwh", "usd_per_kwh", "USD",
    Kind::Number { bounds: keys::Bounds { min: 0.0, max: 100.0 }, step: 0.01 },
    Reach::TokenCosts,
    "Electricity price, US dollars per kWh"
);

fn schedule_names() -> Vec<&'static str> {
    vec!["1f1b", "zero-bubble", "dualpipe"]
}

fn precision_names() -> Vec<&'static str> {
    vec!["bf16", "fp8"]
}

fn recompute_module_names() -> Vec<&'static str> {
    vec!["core_attn", "layernorm", "mlp", "moe_act", "moe"]
}

/// A count of the training layout as a flag (`--tp N`), beside its pair.
const COUNT: Kind = Kind::Count(LAYOUT);

flag_key!(
    /// `--tp N`: tensor parallelism of `--model`.
    TP_FLAG, "tp", "tp", "N", COUNT, Reach::TrainingStep, "Tensor parallelism"
);
flag_key!(
    /// `--dp N`: data parallelism of `--model`.
    DP_FLAG, "dp", "dp", "N", COUNT, Reach::TrainingStep, "Data parallelism"
);
flag_key!(
    /// `--ep N`: expert parallelism of `--model`.
    EP_FLAG, "ep", "ep", "N", COUNT, Reach::TrainingStep, "Expert parallelism"
);
flag_key!(
    /// `--cp N`: context parallelism of `--model`.
    CP, "cp", "cp", "N", COUNT, Reach::TrainingStep, "Context parallelism"
);
flag_key!(
    /// `--seq N`: the sequence length.
    SEQ, "seq", "seq", "N", COUNT, Reach::TrainingStep, "Sequence length"
);
flag_key!(
    /// `--micro-batch N`: sequences per micro-batch.
    MICRO_BATCH_FLAG, "micro-batch", "micro_batch", "N", COUNT, Reach::TrainingStep,
    "Sequences per micro-batch"
);
flag_key!(
    /// `--global-batch N`: sequences per step.
    GLOBAL_BATCH_FLAG, "global-batch", "global_batch", "N", COUNT, Reach::TrainingStep,
    "Sequences per step"
);
flag_key!(
    /// `--zero 0|1|2|3`: the ZeRO stage.
    ZERO_FLAG, "zero", "zero", "0|1|2|3",
    Kind::Choice { names: zero_names, aliases: &[], files: &[] },
    Reach::TrainingStep, "ZeRO stage"
);
flag_key!(
    /// `--recompute`: full activation recomputation.
    RECOMPUTE, "recompute", "recompute", "", Kind::Switch, Reach::TrainingStep,
    "Recompute activations in the backward pass"
);
flag_key!(
    /// `--stage-layers L,L,...`: layers of each pipeline stage (each a count).
    STAGE_LAYERS, "stage-layers", "stage_layers", "L,L,...", COUNT, Reach::TrainingStep,
    "Layers of each pipeline stage"
);
flag_key!(
    /// `--vp N`: virtual pipeline stages per stage.
    VP, "vp", "vp", "N", COUNT, Reach::TrainingStep, "Virtual pipeline stages per stage"
);
flag_key!(
    /// `--schedule`: the pipeline schedule.
    SCHEDULE, "schedule", "schedule", "1f1b|zero-bubble|dualpipe",
    Kind::Choice { names: schedule_names, aliases: &[], files: &[] },
    Reach::TrainingStep, "Pipeline schedule"
);
flag_key!(
    /// `--recompute-modules M,M,...`: modules recomputed (each one of the names).
    RECOMPUTE_MODULES, "recompute-modules", "recompute_modules", "M,M,...",
    Kind::Choice { names: recompute_module_names, aliases: &[], files: &[] },
    Reach::TrainingStep, "Modules recomputed in the backward pass"
);
flag_key!(
    /// `--tp-overlap`: tensor-parallel communication overlapped with its GEMMs.
    TP_OVERLAP, "tp-overlap", "tp_overlap", "", Kind::Switch, Reach::TrainingStep,
    "Overlap tensor-parallel communication with the GEMMs"
);
flag_key!(
    /// `--overlap-p2p-warmup-flush`: interleaved 1F1B's warm-up and cool-down sends asynchronous.
    OVERLAP_P2P_WARMUP_FLUSH, "overlap-p2p-warmup-flush", "overlap_p2p_warmup_flush", "",
    Kind::Switch, Reach::TrainingStep, "Asynchronous pipeline sends in warm-up and cool-down"
);
flag_key!(
    /// `--fp8-param-gather`: parameters all-gathered in FP8.
    FP8_PARAM_GATHER, "fp8-param-gather", "fp8_param_gather", "", Kind::Switch,
    Reach::TrainingStep, "All-gather the parameters in FP8"
);
flag_key!(
    /// `--fp8-activation-cache`: the linear layers' inputs cached in FP8 for the backward pass.
    FP8_ACTIVATION_CACHE, "fp8-activation-cache", "fp8_activation_cache", "", Kind::Switch,
    Reach::TrainingStep, "Cache the linear layers' inputs in FP8"
);
flag_key!(
    /// `--fp8-blockwise`: FP8 GEMMs with fine-grained block scaling.
    FP8_BLOCKWISE, "fp8-blockwise", "fp8_blockwise", "", Kind::Switch,
    Reach::TrainingStep, "FP8 GEMMs with 1x128 / 128x128 block scaling"
);
flag_key!(
    /// `--bf16-moments`: AdamW's moments in BF16.
    BF16_MOMENTS, "bf16-moments", "bf16_moments", "", Kind::Switch,
    Reach::TrainingStep, "Keep AdamW's moments in BF16"
);
flag_key!(
    /// `--precision bf16|fp8`: the GEMMs' number format.
    PRECISION, "precision", "precision", "bf16|fp8",
    Kind::Choice { names: precision_names, aliases: &[], files: &[] },
    Reach::TrainingStep, "Number format of the GEMMs"
);
flag_key!(
    /// `--grad-reduce-in-bf16`: gradients accumulated and reduced in BF16.
    GRAD_REDUCE_IN_BF16, "grad-reduce-in-bf16", "grad_reduce_in_bf16", "", Kind::Switch,
    Reach::TrainingStep, "Accumulate and reduce gradients in BF16"
);
flag_key!(
    /// `--efficiency F`: every FLOP at this fraction of the GPU's dense peak.
    EFFICIENCY, "efficiency", "efficiency", "F",
    Kind::Number { bounds: keys::Bounds { min: 0.0, max: 1.0 }, step: 0.01 },
    Reach::TrainingStep, "Compute efficiency: the fraction of the GPU's dense peak"
);

/// The training flags of `compare` and `train`, in their order: they lay out and price the step
/// of `--model`, and nothing else.
pub static TRAINING_FLAGS: [RunKey; 25] = [
    TP_FLAG,
    PP_FLAG,
    DP_FLAG,
    EP_FLAG,
    CP,
    SEQ,
    MICRO_BATCH_FLAG,
    GLOBAL_BATCH_FLAG,
    ZERO_FLAG,
    RECOMPUTE,
    STAGE_LAYERS,
    VP,
    SCHEDULE,
    RECOMPUTE_MODULES,
    TP_OVERLAP,
    OVERLAP_P2P_WARMUP_FLUSH,
    FP8_PARAM_GATHER,
    FP8_ACTIVATION_CACHE,
    FP8_BLOCKWISE,
    BF16_MOMENTS,
    PRECISION,
    FP8_DISPATCH,
    EP_OVERLAP,
    GRAD_REDUCE_IN_BF16,
    EFFICIENCY,
];

/// The run knobs that are flags only (no pair, no web key), for the rules that refuse them.
pub static FLAG_KEYS: [RunKey; 12] = [
    SEED,
    HOST_MEMORY_GBS,
    FAIL_LINKS,
    FAIL_HOST_LINKS,
    CALIBRATION,
    WIDTH,
    EP_OVERLAP,
    FP8_DISPATCH,
    PP_FLAG,
    AMORTIZE_YEARS,
    PUE,
    USD_PER_KWH,
];

/// The run key a front end names `name`, if it offers one ([`keys::find`] for this table).
pub fn find(front: keys::Front, name: &str) -> Option<&'static RunKey> {
    RUN_KEYS
        .iter()
        .find(|k| k.fronts.has(front) && k.name_in(front) == name)
}

/// The run keys a front end offers, as it names them ([`keys::names`] for this table).
pub fn names(front: keys::Front) -> Vec<&'static str> {
    RUN_KEYS
        .iter()
        .filter(|k| k.fronts.has(front))
        .map(|k| k.name_in(front))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Front;

    /// Every run key is a `compare` pair, named once, and what it reaches partitions the table.
    #[test]
    fn every_run_key_is_a_pair_named_once_with_one_reach() {
        let names = names(Front::Vary);
        assert_eq!(names.len(), RUN_KEYS.len());
        for k in &RUN_KEYS {
            assert_eq!(
                names.iter().filter(|n| **n == k.name).count(),
                1,
                "{}",
                k.name
            );
            assert_eq!(find(Front::Vary, k.name).map(|f| f.reach), Some(k.reach));
        }
        let reaches = [
            Reach::TrainingStep,
            Reach::AllReduceRow,
            Reach::Simulations,
            Reach::SimulationsAndCurves,
            Reach::EcmpHash,
        ];
        let counted: usize = reaches.iter().map(|r| reaching(*r).count()).sum();
        assert_eq!(counted, RUN_KEYS.len());
        // The layout's keys reach only the training step; a routing pair every simulation.
        assert_eq!(reaching(Reach::TrainingStep).count(), 7);
        assert_eq!(ROUTING.reach, Reach::Simulations);
    }

    /// A pair sets the name it was given, an alias as its name.
    #[test]
    fn pairs_set_names() {
        let mut r = RunOverrides::default();
        PXN.apply(&mut r, "pipelined").unwrap();
        ROUTING.apply(&mut r, "opensm:lfts.dump").unwrap();
        SHARP.apply(&mut r, "on").unwrap();
        assert_eq!(r.pxn, Some("on"));
        assert_eq!(r.routing, Some(Route::OpenSm("lfts.dump".into())));
        assert_eq!(r.sharp, Some(true));
    }
}
