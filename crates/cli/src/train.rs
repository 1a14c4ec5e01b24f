//! `railyard train`: one training step of an LLM on the planned fabric.

use crate::design::{self, CalibrationArgs, DesignArgs, PxnArg, RunOverrides, SharpArg};
use crate::error::CliError;
use crate::given::Given;
use crate::io::{json_with, print};
use crate::training::{load_model, train_error, CostArgs, LayoutArgs};
use clap::Args;
use railyard_study::failures::FailureRequest;
use railyard_study::rules::{self, TrainFlags};
use railyard_study::train::{
    check_efficiency, replay, train, Measured, TrainFailure, TrainRequest,
};
use railyard_study::{RoutingKind, RunSettings, Scenario};
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
                                "fp8_dispatch", "ep_overlap", "grad_reduce_in_bf16", "recompute_modules",
                                "schedule", "tp_overlap", "overlap_p2p_warmup_flush", "fp8_param_gather", "fp8_activation_cache",
                                "bf16_moments", "fp8_blockwise"])]
    pub workload: Option<PathBuf>,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Run every FLOP at this fraction of the GPU's dense peak instead of timing each operation
    /// from its shapes on the GPU generation's kernel table (the default).
    #[arg(long, value_name = "F")]
    pub efficiency: Option<f64>,
    /// Fit the compute efficiency to a step your cluster measured, and run at it:
    /// tokens-per-s=X, step-time=SECONDS or mfu=FRACTION (or PERCENT%). Bisection over the
    /// efficiency, each probe the whole step simulated on the fabric.
    #[arg(long, value_name = "MEASURED", value_parser = Measured::parse, conflicts_with = "efficiency")]
    pub fit_efficiency: Option<Measured>,
    /// Routing policy: dmodk (as OpenSM ftree), ecmp, adaptive (where the switches, or on
    /// Ethernet a Spectrum-X pairing, do it). Default: as the technology's sites route it (the
    /// catalog's default_routing: InfiniBand adaptive, dmodk on switches without it; RoCE ecmp).
    #[arg(long, value_name = "R", value_parser = design::parse_routing)]
    pub routing: Option<RoutingKind>,
    /// Queue pairs per connection, each hashed on its own by ECMP (NCCL_IB_QPS_PER_CONNECTION;
    /// NCCL's default 1).
    #[arg(long, value_name = "N", default_value = "1", value_parser = design::parse_qps)]
    pub qps_per_connection: u32,
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
    pub costs: CostArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A step that could not be predicted, as the CLI says it: a simulation's error names the routing
/// and cross-rail mode ([`train_error`]); every other is bad input (exit 2).
fn failure(e: TrainFailure, scn: &Scenario) -> CliError {
    match e {
        TrainFailure::Step(e) => train_error(e, scn.routing, scn.relay()),
        e => CliError::input(e.to_string()),
    }
}

/// The scenario `train` runs: the design planned (with its storage and management networks, so
/// the whole cluster's cost is known) or the fabric as built (with only its own), routed and
/// relayed as the flags say.
fn scenario(a: &TrainArgs, run: &RunSettings) -> Result<Scenario, CliError> {
    match &a.fabric {
        None => {
            let (spec, catalog) = a.design.load(a.preset.as_deref())?;
            let planned = design::plan(&spec, &catalog, 0)?;
            Ok(Scenario::planned(&spec, catalog, planned, run))
        }
        Some(path) => {
            let (fabric, catalog) =
                crate::fabric_arg::design_fabric(a.preset.as_deref(), &a.design, Some(path))?;
            Ok(Scenario::built(fabric, catalog, run))
        }
    }
}

/// How the step's simulations run, from the flags.
fn run_settings(a: &TrainArgs) -> Result<RunSettings, CliError> {
    Ok(RunSettings {
        routing: a.routing,
        qps_per_connection: a.qps_per_connection,
        pxn: a.pxn.0,
        sharp: a.sharp.0,
        calibration: a.calibration.load()?,
        ..RunSettings::default()
    })
}

pub fn run(a: &TrainArgs, given: &Given) -> Result<(), CliError> {
    a.memory.apply();
    // Flags that cannot change the result in the combination given (study's rules): `--seed`
    // seeds only `--fail-links` here, a replayed workload takes its stages from its header and is
    // priced without costs per token.
    let flags = TrainFlags {
        seed: a.seed,
        fail_links: a.fail_links.is_some(),
        workload: a.workload.is_some(),
        pp: a.layout.pp,
    };
    rules::train_flags_in_effect(given, &flags).map_err(|e| CliError::input(e.message))?;
    if let Some(path) = &a.workload {
        return run_workload(a, path);
    }
    let model = load_model(a.model.as_deref(), a.model_file.as_deref())?;
    if let Some(e) = a.efficiency {
        check_efficiency(e).map_err(CliError::input)?;
    }
    let run = run_settings(a)?;
    let assumptions = a.costs.assumptions()?;
    let mut scn = scenario(a, &run)?;
    let step = a.layout.recipe.step_config(a.efficiency)?;
    scn.fail(&FailureRequest {
        cables: &a.fail_cable,
        links: a.fail_links,
        host_links: None,
        seed: a.seed,
    })
    .map_err(|e| CliError::input(e.0))?;
    let req = TrainRequest {
        model: &model,
        layout: a.layout.layout(&RunOverrides::default()),
        step,
        fit: a.fit_efficiency,
        assumptions,
    };
    let t = train(&scn, &req, given).map_err(|e| failure(e, &scn))?;
    if a.json {
        let calibration = a.calibration.json_key(&scn.net.calibration);
        print(&json_with(t.json(&scn, &model), calibration))
    } else {
        print(&annotate(a, &scn, t.text(&scn, &model, &assumptions)))
    }
}

/// The text with the calibration it applied said in a last line.
fn annotate(a: &TrainArgs, scn: &Scenario, mut out: String) -> String {
    if let Some(note) = a.calibration.note(&scn.net.calibration) {
        out.push_str(&format!("{note}\n"));
    }
    out
}

/// `train --workload FILE`: a SimAI/AICB workload replayed on the fabric.
fn run_workload(a: &TrainArgs, path: &std::path::Path) -> Result<(), CliError> {
    let text = crate::io::read_input(path, crate::io::Input::WORKLOAD)?;
    let run = run_settings(a)?;
    let (fabric, catalog) =
        crate::fabric_arg::design_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
    let scn = Scenario::built(fabric, catalog, &run);
    let file = path.display().to_string();
    let r = replay(&scn, &file, &text, a.layout.seq, a.layout.micro_batch)
        .map_err(|e| failure(e, &scn))?;
    if a.json {
        print(&json_with(
            r.json(&scn),
            a.calibration.json_key(&scn.net.calibration),
        ))
    } else {
        print(&annotate(a, &scn, r.text(&scn)))
    }
}
