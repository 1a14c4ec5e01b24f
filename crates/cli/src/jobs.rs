//! `railyard jobs`: many jobs on one fabric: a job mix placed by scheduler policies, every step
//! alone and with the others (`study::jobs`); or a cluster's arrivals and departures replayed.

use crate::design::{self, DesignArgs, PxnArg};
use crate::error::CliError;
use crate::fabric_arg::design_fabric;
use crate::given::Given;
use crate::io::{json_with, print, read_input, Input};
use crate::training::train_error;
use clap::Args;
use railyard_study::jobs::checkpoint::Storage;
use railyard_study::jobs::place::{policy, POLICIES};
use railyard_study::jobs::share::Overlap;
use railyard_study::jobs::{mix, output, replay, run_mix, trace, JobsError};
use railyard_study::rules;
use railyard_study::text::{number, thousands};
use railyard_study::train::{StepConfig, StepSetup};
use railyard_study::{RoutingKind, RunSettings, Scenario};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Built-in design (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// The fabric as built: a fabric.json (`import ibnet`, `plan --out`) or ibnetdiscover /
    /// iblinkinfo output; its servers as the preset or --spec, or --gpu and --gpus-per-server, say.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// The job mix: a TOML file of `[[job]]` tables (model or traffic, GPUs, layout, start, end,
    /// servers); see docs/guide/jobs.md.
    #[arg(long, value_name = "FILE", required_unless_present_any = ["replay", "generate"],
          conflicts_with_all = ["replay", "generate"])]
    pub mix: Option<PathBuf>,
    /// Replay a cluster trace (CSV: submit_s,gpus,duration_s): arrivals queue first come first
    /// served, each placed by each --placement policy; prints GPUs idle because no placement
    /// fits and what sharing the fabric does to the jobs' slowdown.
    #[arg(long, value_name = "FILE", conflicts_with = "generate")]
    pub replay: Option<PathBuf>,
    /// Replay N jobs drawn from distributions fitted to the Acme Kalos trace's published summary
    /// (seeded by --seed; docs/guide/jobs.md) instead of a trace file.
    #[arg(long, value_name = "N")]
    pub generate: Option<usize>,
    /// Offered load of --generate: the share of the design's GPUs the arrivals ask for on average.
    #[arg(long, value_name = "F", default_value_t = 0.9, requires = "generate")]
    pub load: f64,
    /// Placement policies to run the mix under, comma-separated: topology (Slurm topology/tree
    /// best fit), contiguous (consecutive free servers by scalable unit), scattered (random,
    /// --seed).
    #[arg(
        long,
        value_name = "P,P,...",
        default_value = "topology,scattered",
        value_delimiter = ','
    )]
    pub placement: Vec<String>,
    /// Seed of the scattered placement and of --generate.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// How the other jobs' traffic lines up with a job's own: aligned (their collectives run
    /// whenever this job's do: the worst case) or averaged (spread over their whole step).
    #[arg(long, value_name = "aligned|averaged", default_value = "aligned")]
    pub overlap: String,
    /// Routing policy: dmodk (as OpenSM ftree), ecmp, adaptive.
    #[arg(long, value_name = "R", default_value = "dmodk", value_parser = design::parse_routing)]
    pub routing: RoutingKind,
    /// How expert all-to-all and pipeline send/recv cross rails (as `train --pxn`).
    #[arg(long, value_name = "auto|on|off|staged", default_value = "auto",
          value_parser = PxnArg::parse)]
    pub pxn: PxnArg,
    /// Run every FLOP at this fraction of the GPU's dense peak instead of timing each operation
    /// from its shapes on the GPU generation's kernel table, the default (as `train --efficiency`).
    #[arg(long, value_name = "F")]
    pub efficiency: Option<f64>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The flags checked before any work: those that cannot change the result (house rule: the seed
/// draws only the scattered placement and --generate's trace), the overlap, the placement
/// policies and the efficiency; the overlap as parsed.
fn checked_flags(a: &JobsArgs, given: &Given) -> Result<Overlap, CliError> {
    // A flag that cannot change the result is refused (house rule): the seed draws only the
    // scattered placement and --generate's trace.
    let facts = rules::JobsFacts {
        seed: a.seed,
        generate: a.generate.is_some(),
        scattered: a.placement.iter().any(|p| p == "scattered"),
    };
    rules::jobs_keys_in_effect(given, &facts).map_err(|e| CliError::input(e.message))?;
    let overlap = Overlap::parse(&a.overlap).ok_or_else(|| {
        CliError::input(format!(
            "--overlap {}: valid: {}",
            a.overlap,
            Overlap::NAMES.join(", ")
        ))
    })?;
    for p in &a.placement {
        if policy(p, a.seed).is_none() {
            return Err(CliError::input(format!(
                "--placement {p}: valid: {}",
                POLICIES.join(", ")
            )));
        }
    }
    if let Some(e) = a.efficiency.filter(|e| !(*e > 0.0 && *e <= 1.0)) {
        return Err(CliError::input(format!(
            "--efficiency {}: valid: above 0, at most 1",
            number(e)
        )));
    }
    Ok(overlap)
}

pub fn run(a: &JobsArgs, given: &Given) -> Result<(), CliError> {
    let overlap = checked_flags(a, given)?;
    let (fabric, catalog) = design_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
    // As NCCL runs by default (no SHARP plugin, no calibration), routed and relayed as asked
    // (`jobs` keeps its own --routing default, dmodk).
    let run = RunSettings {
        routing: Some(a.routing),
        pxn: a.pxn.0,
        ..RunSettings::default()
    };
    let scn = Scenario::built(fabric, catalog, &run);
    let (fabric, catalog) = (&scn.fabric, &scn.catalog);
    let relay = scn.relay();
    let setup = scn.step_setup(StepConfig {
        compute_efficiency: a.efficiency,
        ..StepConfig::default()
    });
    let Some(mix_path) = &a.mix else {
        return run_replay(a, &setup, overlap);
    };
    let text = read_input(mix_path, Input::MIX)?;
    let jobs = mix::parse(&text, &mix_path.display().to_string())
        .map_err(|e| CliError::input(e.to_string()))?;
    // Where checkpoints go, as the design's `storage` key says (for a discovered fabric, the
    // preset's or --spec's that describes its servers); read only where a job checkpoints.
    let storage = if jobs.iter().any(|j| j.checkpoint_every.is_some()) {
        let (spec, _) = a.design.load(a.preset.as_deref())?;
        Storage::of(&spec, fabric, catalog)
    } else {
        None
    };
    let mut runs = Vec::new();
    for p in &a.placement {
        let mut pol = policy(p, a.seed).expect("checked above");
        let run = run_mix(&setup, &jobs, (pol.as_mut(), storage.as_ref()), overlap).map_err(
            |e| match e {
                JobsError::Train(e) => train_error(e, a.routing, relay),
                e => CliError::input(format!("{}: {e}", mix_path.display())),
            },
        )?;
        runs.push(run);
    }
    if a.json {
        let v = serde_json::json!({
            "design": fabric.meta.name,
            "servers": fabric.servers.len(),
            "gpus": railyard_study::train::gpus(fabric, &[]),
            "routing": a.routing.as_str(),
            "relay": relay.as_str(),
            "runs": runs.iter().map(|r| output::json(r, fabric)).collect::<Vec<_>>(),
        });
        return print(&json_with(v, Vec::<(String, serde_json::Value)>::new()));
    }
    let mut out = output::header(fabric, jobs.len(), a.routing.as_str(), overlap.as_str());
    for r in &runs {
        out.push_str(&output::text(r));
    }
    print(&out)
}

/// `--replay FILE` or `--generate N`: the trace replayed under every policy.
fn run_replay(a: &JobsArgs, setup: &StepSetup, overlap: Overlap) -> Result<(), CliError> {
    let gpus = railyard_study::train::gpus(setup.fabric, &[]);
    let (trace, origin) = match (&a.replay, a.generate) {
        (Some(path), _) => {
            let text = read_input(path, Input::TRACE)?;
            let origin = path.display().to_string();
            (
                trace::parse(&text, &origin).map_err(CliError::input)?,
                origin,
            )
        }
        (None, Some(n)) => {
            if n == 0 {
                return Err(CliError::input("--generate 0: valid: 1 or more jobs"));
            }
            if !(a.load > 0.0 && a.load.is_finite()) {
                return Err(CliError::input(format!(
                    "--load {}: valid: above 0",
                    number(a.load)
                )));
            }
            (
                trace::generate(n, gpus, a.load, a.seed),
                format!(
                    "{n} jobs drawn from the Acme Kalos summary at load {}, seed {}",
                    number(a.load),
                    a.seed
                ),
            )
        }
        (None, None) => unreachable!("clap requires --mix, --replay or --generate"),
    };
    let mut rows = Vec::new();
    let mut replays = Vec::new();
    for p in &a.placement {
        let mut pol = policy(p, a.seed).expect("checked by run");
        let r = replay::replay(setup, &trace, pol.as_mut(), overlap).map_err(|e| match e {
            JobsError::Train(e) => train_error(e, a.routing, setup.relay),
            e => CliError::input(format!("{origin}: {e}")),
        })?;
        rows.push(output::replay_summary(&r, gpus));
        replays.push(r);
    }
    if a.json {
        let v = serde_json::json!({
            "design": setup.fabric.meta.name,
            "gpus": gpus,
            "trace": origin,
            "routing": a.routing.as_str(),
            "overlap": overlap.as_str(),
            "runs": rows.iter().zip(&replays).map(|(row, r)| output::replay_json(row, r)).collect::<Vec<_>>(),
        });
        return print(&json_with(v, Vec::<(String, serde_json::Value)>::new()));
    }
    let mut out = format!(
        "railyard jobs: replay of {origin} on {} ({} GPUs, {}), routing {}, overlap {}\n",
        setup.fabric.meta.name,
        thousands(gpus as f64),
        output::design_words(setup.fabric),
        a.routing.as_str(),
        overlap.as_str()
    );
    out.push_str(&output::replay_text(&rows));
    print(&out)
}
