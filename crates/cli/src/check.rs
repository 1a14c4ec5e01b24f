//! `railyard check`: the health of a discovered fabric on its own, optionally verified against a
//! plan and with what each finding costs (`study::check`); this reads the files and prints.

use crate::design::DesignArgs;
use crate::error::CliError;
use crate::io::{print, read_input, Input};
use clap::Args;
use railyard_study::check::{self as study, CheckReport, ImpactAsk};
use railyard_study::RoutingKind;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// ibnetdiscover output (default or -p) or iblinkinfo output of the fabric as built; the format
    /// is recognised by content.
    #[arg(value_name = "DISCOVERED")]
    pub discovered: PathBuf,
    /// Also verify against the plan, as `verify --plan` does: a fabric.json, a spec file or a
    /// preset name (the design flags apply to specs and presets). Findings name where each end
    /// stands (row, rack and rack unit, as cabling.csv) when the plan is a spec or preset.
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<String>,
    /// With --plan: the discovered fabric runs in ibsim, which shows NDR and XDR links as HDR:
    /// expect the rates `railyard export ibnet` wrote instead of the planned ones (as `verify
    /// --ibsim`).
    #[arg(long)]
    pub ibsim: bool,
    /// Simulate what each finding costs: all-reduce and all-to-all busbw at 1 GiB (and with
    /// --model a training step) as discovered and with the finding repaired. Discovery does not see
    /// GPUs: describe the servers with --gpu and --gpus-per-server (--nics-per-server), or --spec.
    #[arg(long)]
    pub impact: bool,
    #[command(flatten)]
    pub design: DesignArgs,
    /// With --impact: also a training step of this model (see `railyard train --help`), laid out
    /// with the defaults of `train`.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// With --impact: routing of every simulation (ecmp, dmodk, adaptive).
    #[arg(long, value_name = "R", default_value = "dmodk", value_parser = crate::design::parse_routing)]
    pub routing: RoutingKind,
    /// Print the shape, the findings (and the verification and impact) as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub memory: crate::memory::MemoryArgs,
}

/// Exit status: 0 healthy (and matching the plan), 1 findings, 2 bad input.
pub fn check(a: &CheckArgs) -> Result<(), CliError> {
    a.memory.apply();
    let origin = a.discovered.display().to_string();
    if a.model.is_some() && !a.impact {
        return Err(CliError::input("--model needs --impact"));
    }
    let text = read_input(&a.discovered, Input::CHECK)?;
    let checked = study::discover(&text).map_err(|e| CliError::input(format!("{origin}: {e}")))?;
    if a.ibsim && a.plan.is_none() {
        return Err(CliError::input(
            "--ibsim says which rates to expect of the plan: give it with --plan",
        ));
    }
    let verification = match &a.plan {
        Some(p) => {
            // The plan and where its devices stand, as `verify` reads them.
            let (plan, places) = crate::interop::plan_with_places(Some(p), &a.design)?;
            Some(checked.verify(&plan, places.as_deref(), a.ibsim))
        }
        None => None,
    };
    let impact = if a.impact {
        let name = a
            .discovered
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("discovered");
        let catalog = a.design.catalog()?;
        let base = if a.design.spec.is_some() {
            Some(a.design.raw(None)?)
        } else {
            None
        };
        let model = match &a.model {
            Some(m) => Some(crate::training::load_model(Some(m), None)?),
            None => None,
        };
        let ask = ImpactAsk {
            name,
            base: base.as_ref(),
            overrides: &a.design.overrides(),
            catalog: &catalog,
            model: model.as_ref(),
            routing: a.routing,
        };
        Some(checked.impact(&ask).map_err(|e| {
            let message = format!("{origin}: {e}");
            if e.is_simulation() {
                CliError::failed(message)
            } else {
                CliError::input(message)
            }
        })?)
    } else {
        None
    };
    let report = CheckReport {
        health: checked.health,
        impact,
        verification,
    };
    let ok = report.ok();
    if a.json {
        // Through a JSON value, whose objects list their keys in order, as every JSON output.
        let v = serde_json::to_value(&report).map_err(|e| CliError::failed(e.to_string()))?;
        let mut text =
            serde_json::to_string_pretty(&v).map_err(|e| CliError::failed(e.to_string()))?;
        text.push('\n');
        print(&text)?;
    } else {
        print(&report.text(&origin, a.plan.as_deref().unwrap_or(""), a.routing))?;
    }
    if ok {
        Ok(())
    } else {
        std::process::exit(1)
    }
}
