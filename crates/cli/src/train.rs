//! `railyard train`: one training step of an LLM on the planned fabric.

use crate::design::{self, CalibrationArgs, DesignArgs, PxnArg, RunOverrides, SharpArg};
use crate::error::CliError;
use crate::given::{flag, Given};
use crate::io::{json_with, print};
use crate::training::{gpus, layout_error, load_model, train_error, CostArgs, LayoutArgs};
use clap::Args;
use railyard_sim::fabric_net::NetConfig;
use railyard_sim::routing::RoutingKind;
use railyard_study::rules::{self, StepFacts};
use railyard_study::tco::{Capex, TokenCosts};
use railyard_study::train::{lay_out, StepSetup};
use railyard_train::fabric_timer::replay_workload;
use railyard_train::fit::{fit_efficiency, FitError, Measured};
use railyard_train::output::{CommSetup, ReplayOutput, StepOutput};
use railyard_train::parallel::Resolved;
use railyard_train::step::StepConfig;
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
                                "schedule", "tp_overlap", "fp8_param_gather"])]
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
    pub costs: CostArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `train` that cannot change its result in the combination given, refused naming both
/// flags and where the flag does matter: `--seed` seeds only `--fail-links` here (the step's ECMP
/// hash has a fixed seed, as `fabric_timer` routes), and a replayed workload takes its pipeline
/// stages from its header and is priced without costs per token.
fn flags_in_effect(a: &TrainArgs, given: &Given) -> Result<(), CliError> {
    if given.has(flag::SEED) && a.fail_links.is_none() {
        return Err(CliError::input(format!(
            "--seed {} has no effect without --fail-links: in train it seeds only the cables --fail-links takes down (the step's ECMP hash has a fixed seed); give it with --fail-links N",
            a.seed
        )));
    }
    if a.workload.is_some() {
        if let (true, Some(pp)) = (given.has(flag::PP), a.layout.pp) {
            return Err(CliError::input(format!(
                "--pp {pp} has no effect with --workload: a workload's header gives its pipeline stages (pp:); --pp lays out --model or --model-file"
            )));
        }
        for f in [flag::AMORTIZE_YEARS, flag::PUE, flag::USD_PER_KWH] {
            if given.has(f) {
                let flag = f.long;
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
/// EP 1 has none of. The run keys' rules (`--pxn` on a layout or design with nothing crossing
/// rails) are study's, which the web API checks alike ([`railyard_study::rules`]).
fn layout_flags_in_effect(
    a: &TrainArgs,
    given: &Given,
    model: &railyard_train::model::Model,
    facts: &StepFacts,
) -> Result<(), CliError> {
    let layout = if facts.fitted {
        "the layout fitted to the GPU's memory"
    } else {
        "the layout given"
    };
    a.layout.recipe.for_model(model)?;
    for (on, flag) in [
        (a.layout.recipe.ep_overlap, "--ep-overlap"),
        (a.layout.recipe.fp8_dispatch, "--fp8-dispatch"),
    ] {
        if on && facts.par.ep <= 1 {
            return Err(CliError::input(format!(
                "{flag} has no effect: {layout} has EP 1, so no expert all-to-all; give --ep N (experts spread over N GPUs)"
            )));
        }
    }
    rules::step_keys_in_effect(given, facts).map_err(|e| CliError::input(e.message))
}

pub fn run(a: &TrainArgs, given: &Given) -> Result<(), CliError> {
    a.memory.apply();
    flags_in_effect(a, given)?;
    if let Some(path) = &a.workload {
        return run_workload(a, path);
    }
    let model = load_model(a.model.as_deref(), a.model_file.as_deref())?;
    if let Some(e) = a.efficiency.filter(|e| !(*e > 0.0 && *e <= 1.0)) {
        return Err(CliError::input(format!(
            "--efficiency {}: valid: above 0, at most 1",
            railyard_catalog::number(e)
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
                crate::fabric_arg::design_fabric(a.preset.as_deref(), &a.design, Some(path))?;
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
    // Every server: a server cable down is refused below (train drains none).
    let Resolved {
        par,
        fitted,
        virtual_stages,
    } = lay_out(
        &fabric,
        &catalog,
        &[],
        &model,
        &a.layout.layout(&RunOverrides::default()),
    )
    .map_err(layout_error)?;
    let base = a.layout.recipe.step_config(a.efficiency)?;
    let facts = StepFacts {
        par: &par,
        fitted: a.layout.fitted(),
        nics_per_server: fabric.meta.compute_nics_per_server,
    };
    layout_flags_in_effect(a, given, &model, &facts)?;
    let relay = a.pxn.resolve(&fabric);
    let failed =
        crate::sim::failures(&a.fail_cable, a.fail_links, None, a.seed, &fabric, &catalog)?;
    if !failed.drained.is_empty() {
        return Err(CliError::input(format!(
            "--fail-cable takes a server's cable down ({} of them): a job with a dead host link aborts and the node is drained; train lays the model out on every server, so take switch-to-switch cables down here, or see the drained servers' cost with sim collective --fail-host-links",
            failed.drained.len()
        )));
    }
    let net = NetConfig {
        failed: failed.links.clone(),
        drained: failed.drained,
        ..net
    };
    let failed = failed.links;
    let setup = StepSetup {
        fabric: &fabric,
        catalog: &catalog,
        net: &net,
        routing: kind,
        relay,
        step: base,
    };
    let step = |efficiency: f64| {
        let step = StepConfig {
            compute_efficiency: Some(efficiency),
            ..base
        };
        StepSetup { step, ..setup }.run(&model, &par)
    };
    let (cfg, b) = match a.fit_efficiency {
        None => (
            base,
            StepSetup {
                step: base,
                ..setup
            }
            .run(&model, &par)
            .map_err(|e| train_error(e, kind, relay))?,
        ),
        Some(measured) => {
            let fit = fit_efficiency(measured, step).map_err(|e| match e {
                FitError::Step(e) => train_error(e, kind, relay),
                e => CliError::input(format!("--fit-efficiency {}: {e}", measured.describe())),
            })?;
            let cfg = StepConfig {
                compute_efficiency: Some(fit.efficiency),
                ..base
            };
            (cfg, fit.breakdown)
        }
    };
    // `--sharp on` where no collective of the step would reduce in the switches: the same step
    // with SHARP off is the test (study's rule, as the web API checks it).
    let with_cfg = StepSetup { step: cfg, ..setup };
    rules::sharp_in_effect(given, net.sharp, &par, &mut || {
        with_cfg.sharp_changes(&model, &par, &b)
    })
    .map_err(|e| CliError::input(e.message))?;
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
        virtual_stages: virtual_stages.as_deref(),
    };
    let costs = TokenCosts::of(network_usd, capex.as_ref(), b.tokens_per_s, &assumptions)
        .map_err(|e| CliError::input(format!("--{e}")))?;
    if !a.json {
        let text = out.text() + &costs.text(&assumptions) + &failures_text(&fabric, &failed);
        return print(&annotate(a, &net, text));
    }
    // The costs per million tokens (`network_usd_per_million_tokens`, and `cluster_usd_per_hour`
    // and `cluster_usd_per_million_tokens` where the cluster's cost is known), the cables down.
    let costs = match serde_json::to_value(costs) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let down = (!failed.is_empty()).then(|| {
        let ids = failed_ids(&fabric, &failed);
        ("failed_cables".to_string(), serde_json::Value::from(ids))
    });
    let calibration = a.calibration.json_key(&net.calibration);
    let keys = costs
        .into_iter()
        .chain(down)
        .chain(calibration.map(|(k, v)| (k.to_string(), v)));
    print(&json_with(out.json_value(), keys))
}

/// The text with the calibration it applied said in a last line.
fn annotate(a: &TrainArgs, net: &NetConfig, mut out: String) -> String {
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
        crate::fabric_arg::design_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
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
        .tokens_per_step(a.layout.seq, a.layout.micro_batch)
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
    if a.json {
        print(&json_with(
            out.json_value(),
            a.calibration.json_key(&net.calibration),
        ))
    } else {
        print(&annotate(a, &net, out.text()))
    }
}
