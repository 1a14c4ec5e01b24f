//! `railyard check`: the health of a discovered fabric on its own (`ib::health`), optionally
//! verified against a plan (`ib::verify`) and with what each finding costs (`study::impact`).

use crate::design::DesignArgs;
use crate::error::CliError;
use crate::io::{print, read_input, Input};
use clap::Args;
use railyard_sim::routing::RoutingKind;
use railyard_study::compare::{PerfError, PerfRequest};
use railyard_study::impact::{impact, impact_text, ImpactError};
use railyard_train::parallel::Layout;
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
    let d = railyard_ib::discovery::parse(&text)
        .map_err(|e| CliError::input(format!("{origin}: {e}")))?;
    let health = railyard_ib::health::check(&d);
    if a.ibsim && a.plan.is_none() {
        return Err(CliError::input(
            "--ibsim says which rates to expect of the plan: give it with --plan",
        ));
    }
    let verification = match &a.plan {
        Some(p) => {
            // The plan and where its devices stand, as `verify` reads them.
            let (plan, places) = crate::interop::plan_with_places(Some(p), &a.design)?;
            Some(railyard_ib::verify::verify_with(
                &plan,
                &d,
                railyard_ib::verify::Options {
                    ibsim_rates: a.ibsim,
                },
                railyard_ib::verify::Site {
                    locations: places.as_deref(),
                    ..Default::default()
                },
            ))
        }
        None => None,
    };
    let impact_result = if a.impact {
        let name = a
            .discovered
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("discovered");
        let imported = railyard_ib::import::to_fabric(&d, name)
            .map_err(|e| CliError::input(format!("{origin}: {e}")))?;
        let catalog = a.design.catalog()?;
        let base = if a.design.spec.is_some() {
            Some(a.design.raw(None)?)
        } else {
            None
        };
        let spec = railyard_study::discovered::server_spec(&imported, base, &a.design.overrides())
            .map_err(|e| CliError::input(format!("{origin}: {e}")))?;
        let model = match &a.model {
            Some(m) => Some(crate::training::load_model(Some(m), None)?),
            None => None,
        };
        let req = PerfRequest {
            busbw: true,
            model: model.as_ref().map(|m| (m, Layout::unasked())),
            routing: a.routing,
            relay: None,
            // The impact of a finding is priced as NCCL runs by default (no SHARP plugin).
            sharp: false,
            costs: Default::default(),
            capex: None,
            step: Default::default(),
            calibration: Default::default(),
            sim: Default::default(),
        };
        Some(
            impact(&d, &health, name, &spec, &catalog, &req).map_err(|e| match e {
                ImpactError::Perf(PerfError::Train(_))
                | ImpactError::Perf(PerfError::Collective(_)) => {
                    CliError::failed(format!("{origin}: {e}"))
                }
                e => CliError::input(format!("{origin}: {e}")),
            })?,
        )
    } else {
        None
    };
    let ok = health.healthy && verification.as_ref().is_none_or(|v| v.matches);
    if a.json {
        let mut v = serde_json::json!({ "health": health });
        if let Some(r) = &verification {
            v["verification"] =
                serde_json::to_value(r).map_err(|e| CliError::failed(e.to_string()))?;
        }
        if let Some(i) = &impact_result {
            v["impact"] = serde_json::to_value(i).map_err(|e| CliError::failed(e.to_string()))?;
        }
        let mut text =
            serde_json::to_string_pretty(&v).map_err(|e| CliError::failed(e.to_string()))?;
        text.push('\n');
        print(&text)?;
    } else {
        let mut out = railyard_ib::health::health_text(&health, &origin);
        if let Some(r) = &verification {
            out.push_str(&format!(
                "against the plan {}:\n",
                a.plan.as_deref().unwrap_or("")
            ));
            out.push_str(&railyard_ib::verify::report_text(r));
        }
        if let Some(i) = &impact_result {
            out.push_str(&impact_text(i, a.routing.as_str()));
        }
        print(&out)?;
    }
    if ok {
        Ok(())
    } else {
        std::process::exit(1)
    }
}
