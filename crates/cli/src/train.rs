//! `railyard train`: one training step of an LLM on the planned fabric.

use crate::design::{self, CalibrationArgs, DesignArgs, PxnArg, SharpArg};
use crate::error::CliError;
use crate::given::Given;
use crate::io::print;
use clap::Args;
use railyard_sim::collective::Relay;
use railyard_sim::routing::RoutingKind;
use railyard_study::tco::{Capex, TokenCosts};
use railyard_study::train::step_with_failures;
use railyard_train::fabric_timer::{replay_workload, TrainError};
use railyard_train::fit::{fit_efficiency, FitError, Measured};
use railyard_train::model::Model;
use railyard_train::output::{CommSetup, ReplayOutput, StepOutput};
use railyard_train::parallel::{Layout, MAX_STAGES};
use railyard_train::step::{Precision, StepConfig};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub memory: crate::memory::MemoryArgs,
    /// Built-in design (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    /// The fabric as built: a fabric.json (`import ibnet`, `plan --out`) or ibnetdiscover /
    /// iblinkinfo output; its servers as the preset or --spec, or --gpu and --gpus-per-server, say.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// Model: gpt3-175b, llama3-8b, llama3-70b, llama3-405b, mixtral-8x7b, deepseek-v3-like.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// A model TOML file (same keys as crates/train/models/*.toml) instead of --model.
    #[arg(long, value_name = "FILE")]
    pub model_file: Option<PathBuf>,
    /// A SimAI/AICB workload file to replay instead of a model: its header gives TP
    /// (model_parallel_NPU_group), EP, PP and the GPUs; compute times are read as ns ticks.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["model", "model_file", "tp", "dp", "ep", "cp", "global_batch", "zero",
                                "recompute", "efficiency", "fit_efficiency", "stage_layers", "vp", "precision",
                                "fp8_dispatch", "ep_overlap", "grad_reduce_in_bf16"])]
    pub workload: Option<PathBuf>,
    /// Tensor parallelism (inside a server); default the GPUs per server.
    #[arg(long, value_name = "N")]
    pub tp: Option<u32>,
    /// Pipeline stages; default 1, or with no layout flag at all, as the layout fitted to the GPU's
    /// memory has it (of the layouts whose model state and activations fit, the one using the most
    /// GPUs, then the fewest stages).
    #[arg(long, value_name = "N")]
    pub pp: Option<u32>,
    /// Data parallelism; default every remaining GPU.
    #[arg(long, value_name = "N")]
    pub dp: Option<u32>,
    /// Expert parallelism (divides dp); default 1, or with no layout flag at all, the least that
    /// lets the model state and activations fit in the GPU's memory.
    #[arg(long, value_name = "N")]
    pub ep: Option<u32>,
    /// Context parallelism: each sequence split over N ranks (ring attention, as Megatron-Core's
    /// --context-parallel-size); 2 x N must divide the sequence.
    #[arg(long, value_name = "N")]
    pub cp: Option<u32>,
    /// Sequence length; default the model's.
    #[arg(long, value_name = "N")]
    pub seq: Option<u64>,
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub micro_batch: u64,
    /// Sequences per step; default the model's published batch rounded to a multiple of dp x
    /// micro-batch, else 8 micro-batches per data-parallel rank.
    #[arg(long, value_name = "N")]
    pub global_batch: Option<u64>,
    /// ZeRO stage: 0 (gradients all-reduced, nothing sharded), 1 (optimizer state sharded over the
    /// data-parallel ranks), 2 (and the gradients, reduce-scattered after every micro-batch) or 3
    /// (and the weights, gathered for every pass).
    #[arg(long, value_name = "0|1|2|3", default_value_t = 1)]
    pub zero: u32,
    /// Recompute activations in the backward pass (full recomputation: 8 x the parameters' FLOPs a
    /// token instead of 6, and only each layer's input kept).
    #[arg(long)]
    pub recompute: bool,
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Fraction of the GPU's dense BF16 peak the model's GEMMs reach (an assumption; see README).
    #[arg(long, value_name = "F", default_value_t = StepConfig::default().compute_efficiency)]
    pub efficiency: f64,
    /// Fit the compute efficiency to a step your cluster measured, and run at it:
    /// tokens-per-s=X, step-time=SECONDS or mfu=FRACTION (or PERCENT%). Bisection over the
    /// efficiency, each probe the whole step simulated on the fabric.
    #[arg(long, value_name = "MEASURED", value_parser = Measured::parse, conflicts_with = "efficiency")]
    pub fit_efficiency: Option<Measured>,
    /// Routing policy: dmodk (as OpenSM ftree), ecmp, adaptive.
    #[arg(long, value_name = "R", default_value = "dmodk", value_parser = design::parse_routing)]
    pub routing: RoutingKind,
    /// How expert all-to-all and pipeline send/recv cross rails between servers: `on` (PXN, relayed
    /// over NVLink, hops pipelined), `staged` (relayed store-and-forward, the Rail-only paper's
    /// model), `off` (through the spines), `auto` (`off` with spines, `staged` on rail-only).
    #[arg(long, value_name = "auto|on|off|staged", default_value = "auto",
          value_parser = PxnArg::parse)]
    pub pxn: PxnArg,
    /// In-network all-reduce on SHARP switches: `on` lets NCCL use CollNetDirect / CollNetChain
    /// (and NVLS across servers) as with `NCCL_COLLNET_ENABLE=1` and the NCCL-SHARP plugin; `off`
    /// (default) as NCCL runs without the plugin. Refused on a fabric whose switches or NICs do
    /// not support SHARP (the error names them and the valid models).
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = SharpArg::parse)]
    pub sharp: SharpArg,
    /// Take N switch-to-switch cables (leaf-spine, spine-core) down, chosen at random (seeded by
    /// --seed); routes go around them.
    #[arg(long, value_name = "N", conflicts_with = "workload")]
    pub fail_links: Option<usize>,
    /// Take a cable down by its cabling.csv id (C0000042, or C42); repeatable. The id of one leg of
    /// a twin-port or splitter cable takes every leg of that cable (its `assembly`) down.
    #[arg(long, value_name = "ID", conflicts_with = "workload")]
    pub fail_cable: Vec<String>,
    /// Seed of --fail-links.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub costs: crate::compare::CostArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How the model trains, beyond its layout: the stage split, interleaving, number format and
/// expert overlap. `train`, `compare` and `report --compare` flatten these in, so a step is priced
/// the same way by each.
#[derive(Debug, Clone, Args)]
pub struct RecipeArgs {
    /// Layers of each pipeline stage, first to last, comma-separated (e.g. 7,8,...,8,7 for Llama 3
    /// 405B on 16 stages); one per stage, adding up to the model's layers. Default: an even split,
    /// or the model's own rule where the layers do not split evenly.
    #[arg(long, value_name = "L,L,...", value_parser = parse_stage_layers)]
    pub stage_layers: Option<StageLayers>,
    /// Virtual pipeline stages per stage (Megatron's interleaved 1F1B): the bubble shrinks vp
    /// times, stage boundaries are crossed vp times per micro-batch. Must divide every stage's
    /// layers; the micro-batches per pipeline must be a multiple of pp.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub vp: u32,
    /// Number format of the GEMMs: bf16, or fp8 (the linear layers at the GPU's dense FP8 peak,
    /// attention and the output layer at BF16; MFU against the FP8 peak).
    #[arg(long, value_name = "bf16|fp8", default_value = "bf16", value_parser = Precision::parse)]
    pub precision: Precision,
    /// With --precision fp8: expert dispatch all-to-alls in FP8 (with one FP32 scale per 128
    /// values), combines in BF16, as DeepSeek-V3 trains.
    #[arg(long)]
    pub fp8_dispatch: bool,
    /// Hide expert all-to-all under compute as DeepSeek-V3's DualPipe overlaps it: exposed =
    /// max(0, all-to-all - compute) per micro-batch on each stage.
    #[arg(long)]
    pub ep_overlap: bool,
    /// Accumulate and reduce gradients in BF16 (Megatron-LM's --grad-reduce-in-bf16): 2 bytes a
    /// gradient in memory and on the data-parallel reduce-scatter or all-reduce, where the default
    /// is FP32, 4, as Megatron-LM trains with BF16 parameters.
    #[arg(long)]
    pub grad_reduce_in_bf16: bool,
}

/// True when no layout flag was given (tp, pp, dp, ep, stage layers, virtual stages): the layout
/// is then fitted to the GPU's memory ([`Layout::resolve_fitted`]).
pub fn unasked(
    tp: Option<u32>,
    pp: Option<u32>,
    dp: Option<u32>,
    ep: Option<u32>,
    recipe: &RecipeArgs,
) -> bool {
    tp.is_none()
        && pp.is_none()
        && dp.is_none()
        && ep.is_none()
        && recipe.stage_layers.is_none()
        && recipe.vp == 1
}

impl RecipeArgs {
    /// The expert flags need a model with experts (`train` and `compare` alike): on a dense model
    /// they would change nothing.
    pub fn for_model(&self, model: &railyard_train::model::Model) -> Result<(), CliError> {
        for (on, flag, what) in [
            (self.ep_overlap, "--ep-overlap", "hides"),
            (self.fp8_dispatch, "--fp8-dispatch", "sends in FP8"),
        ] {
            if on && model.experts == 0 {
                return Err(CliError::input(format!(
                    "{flag} has no effect: {} is a dense model with no experts; it {what} the expert all-to-all of a mixture-of-experts model",
                    model.name
                )));
            }
        }
        Ok(())
    }

    /// Layers per stage as given (empty: the default split).
    pub fn stage_layers(&self) -> Vec<u64> {
        self.stage_layers.clone().map(|s| s.0).unwrap_or_default()
    }

    /// The step configuration at `efficiency`; `--fp8-dispatch` needs `--precision fp8`.
    pub fn step_config(&self, efficiency: f64) -> Result<StepConfig, CliError> {
        if self.fp8_dispatch && self.precision != Precision::Fp8 {
            return Err(CliError::input(
                "--fp8-dispatch: FP8 dispatch needs --precision fp8",
            ));
        }
        Ok(StepConfig {
            compute_efficiency: efficiency,
            precision: self.precision,
            fp8_dispatch: self.fp8_dispatch,
            ep_overlap: self.ep_overlap,
            ..StepConfig::default()
        })
    }
}

/// `--stage-layers`: layer counts, comma-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageLayers(pub Vec<u64>);

fn parse_stage_layers(s: &str) -> Result<StageLayers, String> {
    let v: Vec<u64> = s
        .split(',')
        .map(|w| {
            w.trim().parse::<u64>().map_err(|_| {
                format!("`{w}` is not a layer count; valid: whole numbers separated by commas, one per pipeline stage, such as 7,8,8,7")
            })
        })
        .collect::<Result<_, _>>()?;
    if v.len() > MAX_STAGES {
        return Err(format!("{} stages; valid: at most {MAX_STAGES}", v.len()));
    }
    Ok(StageLayers(v))
}

/// A step's layout error, a flag at fault.
fn layout_error(e: railyard_train::parallel::LayoutError) -> CliError {
    CliError::input(e.to_string())
}

/// A step that could not be timed: a network that cannot be built or communication that cannot run
/// is bad input (exit 2, naming the routing and cross-rail mode); a GPU missing from the catalog
/// the fabric was built from is a failure.
pub fn train_error(e: TrainError, routing: RoutingKind, relay: Relay) -> CliError {
    match e {
        TrainError::UnknownGpu(_) => CliError::failed(e.to_string()),
        TrainError::Net(_) | TrainError::NoFp8(_) | TrainError::PastClock { .. } => {
            CliError::input(e.to_string())
        }
        TrainError::Comm(e) => CliError::simulation(
            e,
            &format!("{}, cross-rail {}", routing.as_str(), relay.as_str()),
        ),
    }
}

/// The GPUs of `fabric`.
pub fn gpus(fabric: &railyard_fabric::Fabric) -> u64 {
    fabric.servers.len() as u64 * u64::from(fabric.meta.gpus_per_server)
}

/// A model preset by name or a model file.
pub fn load_model(name: Option<&str>, file: Option<&std::path::Path>) -> Result<Model, CliError> {
    match (name, file) {
        (Some(_), Some(_)) => Err(CliError::input(
            "give either --model or --model-file, not both",
        )),
        (None, Some(path)) => {
            let text = crate::io::read_input(path, crate::io::Input::MODEL)?;
            Model::parse(&text, &path.display().to_string())
                .map_err(|e| CliError::input(e.to_string()))
        }
        (m, None) => Model::preset(m.unwrap_or("llama3-70b"))
            .map_err(|e| CliError::input(format!("--model: {e}"))),
    }
}

/// Flags of `train` that cannot change its result in the combination given, refused naming both
/// flags and where the flag does matter: `--seed` seeds only `--fail-links` here (the step's ECMP
/// hash has a fixed seed, as `fabric_timer` routes), and a replayed workload takes its pipeline
/// stages from its header and is priced without costs per token.
fn flags_in_effect(a: &TrainArgs, given: &Given) -> Result<(), CliError> {
    if given.has("seed") && a.fail_links.is_none() {
        return Err(CliError::input(format!(
            "--seed {} has no effect without --fail-links: in train it seeds only the cables --fail-links takes down (the step's ECMP hash has a fixed seed); give it with --fail-links N",
            a.seed
        )));
    }
    if a.workload.is_some() {
        if let (true, Some(pp)) = (given.has("pp"), a.pp) {
            return Err(CliError::input(format!(
                "--pp {pp} has no effect with --workload: a workload's header gives its pipeline stages (pp:); --pp lays out --model or --model-file"
            )));
        }
        for (id, flag) in [
            ("amortize_years", "--amortize-years"),
            ("pue", "--pue"),
            ("usd_per_kwh", "--usd-per-kwh"),
        ] {
            if given.has(id) {
                return Err(CliError::input(format!(
                    "{flag} has no effect with --workload: a replayed workload is printed without costs per million tokens; {flag} prices the step of --model or --model-file"
                )));
            }
        }
    }
    Ok(())
}

/// Flags the layout leaves nothing to act on are refused, as [`flags_in_effect`] refuses others:
/// `--ep-overlap` and `--fp8-dispatch` act on expert all-to-all, which a dense model or a layout of
/// EP 1 has none of;
/// `--pxn` says how expert all-to-all and pipeline and context-parallel send/recv cross rails,
/// which a layout of EP 1, PP 1 and CP 1 has none of.
fn layout_flags_in_effect(
    a: &TrainArgs,
    given: &Given,
    model: &railyard_train::model::Model,
    par: &railyard_train::parallel::Parallelism,
    fitted: bool,
) -> Result<(), CliError> {
    let layout = if fitted {
        "the layout fitted to the GPU's memory"
    } else {
        "the layout given"
    };
    a.recipe.for_model(model)?;
    for (on, flag) in [
        (a.recipe.ep_overlap, "--ep-overlap"),
        (a.recipe.fp8_dispatch, "--fp8-dispatch"),
    ] {
        if on && par.ep <= 1 {
            return Err(CliError::input(format!(
                "{flag} has no effect: {layout} has EP 1, so no expert all-to-all; give --ep N (experts spread over N GPUs)"
            )));
        }
    }
    if given.has("pxn") && par.ep <= 1 && par.pp <= 1 && par.cp <= 1 {
        return Err(CliError::input(format!(
            "--pxn has no effect: {layout} (EP 1, PP 1, CP 1) has no expert all-to-all, pipeline or context-parallel send/recv, the traffic it routes across rails; give --ep, --pp or --cp"
        )));
    }
    Ok(())
}

pub fn run(a: &TrainArgs, given: &Given) -> Result<(), CliError> {
    a.memory.apply();
    flags_in_effect(a, given)?;
    if let Some(path) = &a.workload {
        return run_workload(a, path);
    }
    let model = load_model(a.model.as_deref(), a.model_file.as_deref())?;
    if !(a.efficiency > 0.0 && a.efficiency <= 1.0) {
        return Err(CliError::input(format!(
            "--efficiency {}: valid: above 0, at most 1",
            railyard_catalog::number(a.efficiency)
        )));
    }
    let kind = a.routing;
    let net = railyard_sim::fabric_net::NetConfig {
        sharp: a.sharp.0,
        ..a.calibration.net_config()?
    };
    let assumptions = a.costs.assumptions()?;
    // A design is planned with its storage and management networks, so the whole cluster's cost is
    // known; a fabric as built has only its own.
    let (fabric, catalog, network_usd, capex) = match &a.fabric {
        None => {
            let (spec, catalog) = a.design.load(a.preset.as_deref())?;
            let planned = design::plan(&spec, &catalog, &Default::default())?;
            let capex = Capex::of(&spec, &catalog, &planned);
            let network_usd = planned.plan.summary.cost_usd.total;
            (planned.fabric, catalog, network_usd, capex)
        }
        Some(path) => {
            let (fabric, catalog) =
                crate::interop::design_fabric(a.preset.as_deref(), &a.design, Some(path))?;
            let network_usd = railyard_plan::Plan::new(&fabric, &catalog)
                .summary
                .cost_usd
                .total;
            (fabric, catalog, network_usd, None)
        }
    };
    let gpu = catalog.gpus.get(&fabric.meta.gpu_model).ok_or_else(|| {
        CliError::input(format!(
            "the fabric's GPU `{}` is not in the catalog",
            fabric.meta.gpu_model
        ))
    })?;
    let par = Layout {
        tp: a.tp,
        pp: a.pp.unwrap_or(1),
        dp: a.dp,
        ep: a.ep.unwrap_or(1),
        cp: a.cp.unwrap_or(1),
        seq: a.seq,
        micro_batch: a.micro_batch,
        global_batch: a.global_batch,
        zero: a.zero,
        recompute: a.recompute,
        grad_bf16: a.recipe.grad_reduce_in_bf16,
        stage_layers: a.recipe.stage_layers(),
        vp: a.recipe.vp,
        fit_to_memory: unasked(a.tp, a.pp, a.dp, a.ep, &a.recipe) && a.cp.is_none(),
    }
    .resolve_fitted(
        gpus(&fabric),
        fabric.meta.gpus_per_server,
        &model,
        gpu.memory_bytes(),
    )
    .map_err(layout_error)?;
    let (par, fitted) = (par.par, par.fitted);
    let base = a.recipe.step_config(a.efficiency)?;
    layout_flags_in_effect(
        a,
        given,
        &model,
        &par,
        unasked(a.tp, a.pp, a.dp, a.ep, &a.recipe) && a.cp.is_none(),
    )?;
    // One NIC per server: nothing crosses rails, so PXN relays nothing (a staged relay would only
    // serialise the transfers inside a server before those between servers).
    if given.has("pxn") && fabric.meta.compute_nics_per_server <= 1 {
        return Err(CliError::input(
            "--pxn has no effect on this design: it has one NIC per server, so no transfer crosses rails; give it with --nics-per-server 2 or more".to_string(),
        ));
    }
    let relay = a.pxn.resolve(&fabric);
    let failed =
        crate::sim::failures(&a.fail_cable, a.fail_links, None, a.seed, &fabric, &catalog)?;
    if !failed.drained.is_empty() {
        return Err(CliError::input(format!(
            "--fail-cable takes a server's cable down ({} of them): a job with a dead host link aborts and the node is drained; train lays the model out on every server, so take switch-to-switch cables down here, or see the drained servers' cost with sim collective --fail-host-links",
            failed.drained.len()
        )));
    }
    let failed = failed.links;
    let step = |efficiency: f64| {
        let cfg = StepConfig {
            compute_efficiency: efficiency,
            ..base
        };
        step_with_failures(
            &fabric, &catalog, &net, &model, &par, &cfg, kind, relay, &failed,
        )
    };
    let (cfg, b) = match a.fit_efficiency {
        None => (
            base,
            step(base.compute_efficiency).map_err(|e| train_error(e, kind, relay))?,
        ),
        Some(measured) => {
            let fit = fit_efficiency(measured, step).map_err(|e| match e {
                FitError::Step(e) => train_error(e, kind, relay),
                e => CliError::input(format!("--fit-efficiency {}: {e}", measured.describe())),
            })?;
            let cfg = StepConfig {
                compute_efficiency: fit.efficiency,
                ..base
            };
            (cfg, fit.breakdown)
        }
    };
    // `--sharp on` where no collective of the step would reduce in the switches (the default
    // ZeRO layouts keep the all-reduce in a server and run one GPU per server in each
    // data-parallel all-gather and reduce-scatter): the same step with SHARP off is the test.
    if net.sharp && given.has("sharp") {
        let off = railyard_sim::fabric_net::NetConfig {
            sharp: false,
            ..net.clone()
        };
        let without = step_with_failures(
            &fabric, &catalog, &off, &model, &par, &cfg, kind, relay, &failed,
        );
        if without.as_ref() == Ok(&b) {
            return Err(CliError::input(format!(
                "--sharp on has no effect on this step: NCCL runs none of its collectives on CollNet or NVLS across servers (TP {}, DP {}, ZeRO-{}: no all-reduce that spans servers picks them, and the all-gathers and reduce-scatters have one GPU per server or no NVSwitch); leave it out",
                par.tp, par.dp, par.zero
            )));
        }
    }
    let out = StepOutput {
        model: &model,
        design: &fabric.meta.name,
        fabric: &fabric,
        gpu,
        par: &par,
        cfg: &cfg,
        comm: CommSetup {
            routing: kind,
            relay,
        },
        breakdown: &b,
        fitted: fitted.as_ref(),
        efficiency_fitted_to: a.fit_efficiency,
    };
    let costs = TokenCosts::of(network_usd, capex.as_ref(), b.tokens_per_s, &assumptions)
        .map_err(|e| CliError::input(format!("--{e}")))?;
    let text = if a.json {
        with_costs_json(with_failures_json(out.json(), &fabric, &failed), &costs)
    } else {
        out.text() + &costs.text(&assumptions) + &failures_text(&fabric, &failed)
    };
    print(&annotate(a, &net, text))
}

/// The output with the calibration it applied said (a last line, or a JSON key).
fn annotate(a: &TrainArgs, net: &railyard_sim::fabric_net::NetConfig, mut out: String) -> String {
    if a.json {
        return a.calibration.annotate_json(&net.calibration, out);
    }
    if let Some(note) = a.calibration.note(&net.calibration) {
        out.push_str(&format!("{note}\n"));
    }
    out
}

/// The cables down, by cabling.csv id.
fn failed_ids(fabric: &railyard_fabric::Fabric, failed: &[railyard_fabric::LinkId]) -> Vec<String> {
    let cables = fabric.cables();
    cables
        .iter()
        .enumerate()
        .filter(|(_, l)| failed.binary_search(l).is_ok())
        .map(|(i, _)| railyard_fabric::cable_id(i, cables.len()))
        .collect()
}

/// The text's line naming the cables down (none without failures).
fn failures_text(fabric: &railyard_fabric::Fabric, failed: &[railyard_fabric::LinkId]) -> String {
    if failed.is_empty() {
        return String::new();
    }
    format!(
        "failed cables ({}): {}\n",
        failed.len(),
        failed_ids(fabric, failed).join(" ")
    )
}

/// The JSON with `failed_cables` added where cables are down.
fn with_failures_json(
    json: String,
    fabric: &railyard_fabric::Fabric,
    failed: &[railyard_fabric::LinkId],
) -> String {
    if failed.is_empty() {
        return json;
    }
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(serde_json::Value::Object(mut m)) => {
            m.insert(
                "failed_cables".to_string(),
                serde_json::Value::from(failed_ids(fabric, failed)),
            );
            let mut text =
                serde_json::to_string_pretty(&serde_json::Value::Object(m)).unwrap_or(json);
            text.push('\n');
            text
        }
        _ => json,
    }
}

/// The JSON with the costs per million tokens added (`network_usd_per_million_tokens`, and
/// `cluster_usd_per_hour` and `cluster_usd_per_million_tokens` where the cluster's cost is known).
fn with_costs_json(json: String, costs: &TokenCosts) -> String {
    match (
        serde_json::from_str::<serde_json::Value>(&json),
        serde_json::to_value(costs),
    ) {
        (Ok(serde_json::Value::Object(mut m)), Ok(serde_json::Value::Object(c))) => {
            m.extend(c);
            let mut text =
                serde_json::to_string_pretty(&serde_json::Value::Object(m)).unwrap_or(json);
            text.push('\n');
            text
        }
        _ => json,
    }
}

/// `train --workload FILE`: a SimAI/AICB workload replayed on the fabric.
fn run_workload(a: &TrainArgs, path: &std::path::Path) -> Result<(), CliError> {
    use railyard_train::simai;
    let text = crate::io::read_input(path, crate::io::Input::WORKLOAD)?;
    let w = simai::parse(&text).map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
    let kind = a.routing;
    let net = railyard_sim::fabric_net::NetConfig {
        sharp: a.sharp.0,
        ..a.calibration.net_config()?
    };
    let (fabric, catalog) =
        crate::interop::design_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
    let gpu = catalog.gpus.get(&fabric.meta.gpu_model).ok_or_else(|| {
        CliError::input(format!(
            "the fabric's GPU `{}` is not in the catalog",
            fabric.meta.gpu_model
        ))
    })?;
    let gpus = gpus(&fabric);
    w.check_fits(gpus)
        .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
    let tokens = w
        .tokens_per_step(a.seq, a.micro_batch)
        .map_err(layout_error)?;
    let relay = a.pxn.resolve(&fabric);
    let b = replay_workload(&fabric, &catalog, &net, &w, tokens, kind, relay)
        .map_err(|e| train_error(e, kind, relay))?;
    let out = ReplayOutput {
        file: &path.display().to_string(),
        workload: &w,
        design: &fabric.meta.name,
        fabric: &fabric,
        gpu,
        comm: CommSetup {
            routing: kind,
            relay,
        },
        tokens,
        breakdown: &b,
    };
    print(&annotate(
        a,
        &net,
        if a.json { out.json() } else { out.text() },
    ))
}
