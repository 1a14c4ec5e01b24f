//! `railyard report`: the self-contained report.html, and PNGs of its drawings and charts.

use crate::design::{self, CalibrationArgs, DesignArgs};
use crate::error::CliError;
use crate::given::{flag, Given};
use crate::output::{commit_together, Names, Outputs, PathArgs};
use clap::Args;
use railyard_report::{figures, png, report_html, DesignReport};
use railyard_study::busbw::{self, Busbw};
use railyard_study::design::{ClusterSpec, Plan};
use railyard_study::scenario::Calibration;
use railyard_study::text::number;
use railyard_study::{Catalog, Fabric};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Built-in design to start from (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    /// Report on the fabric as built: a fabric.json (`import ibnet`, `plan --out`) or
    /// ibnetdiscover / iblinkinfo output; its servers as the preset or --spec, or --gpu and
    /// --gpus-per-server, say.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// Where to write the report (`--output` is the same flag).
    #[arg(
        short = 'o',
        long = "out",
        visible_alias = "output",
        value_name = "FILE",
        default_value = "report.html"
    )]
    pub out: PathBuf,
    /// The decision report instead: these designs side by side (as `railyard compare` names them,
    /// `dgx-h100-superpod:tech=roce-400g,name=RoCE`), with the training model of --model.
    #[arg(long, value_name = "DESIGN", num_args = 1.., conflicts_with_all = ["preset", "png"])]
    pub compare: Vec<String>,
    #[command(flatten)]
    pub study: crate::compare::StudyArgs,
    /// Also write a PNG of every drawing and chart into DIR (topology.png, cost.png, busbw.png).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// Pixels per SVG unit of the PNGs (2 suits slides).
    #[arg(long, value_name = "N", default_value_t = 2.0)]
    pub png_scale: f32,
    /// Leave out the bus-bandwidth plots (no simulation).
    #[arg(long)]
    pub no_sim: bool,
}

/// The decision report's flags typed on a plain report, refused naming the flag: they were taken
/// and ignored. The plain report's busbw curves reduce in the switches with `--sharp on` (so it,
/// and `--calibration`, count unless `--no-sim` leaves the curves out); every other flag of
/// `StudyArgs` only reaches `report --compare`.
fn decision_flags_in_plain_report(a: &ReportArgs, given: &Given) -> Result<(), CliError> {
    let study = crate::compare::StudyArgs::augment_args(clap::Command::new("report"));
    for arg in study.get_arguments() {
        let id = arg.get_id().as_str();
        if !given.has_id(id) {
            continue;
        }
        let flag = arg
            .get_long()
            .map_or_else(|| id.to_string(), |l| format!("--{l}"));
        if id != flag::SHARP.id {
            return Err(CliError::input(format!(
                "{flag} has no effect on a plain report: it belongs to the decision report; name the designs with --compare DESIGN... (and the model with --model)"
            )));
        }
    }
    // `--sharp` and `--calibration` reach the busbw curves, which `--no-sim` leaves out (study's
    // rules).
    let facts = railyard_study::rules::ReportFacts { no_sim: a.no_sim };
    railyard_study::rules::report_keys_in_effect(given, &facts)
        .map_err(|e| CliError::input(e.message))
}

/// Alternatives the report lists beside the chosen design.
pub const REPORT_ALTERNATIVES: usize = 3;

/// The PNGs `report --png DIR` writes: one per figure of `railyard_report::figures`.
const PNG_FILES: [&str; 3] = ["topology.png", "cost.png", "busbw.png"];

impl ReportArgs {
    /// What `report` reads and writes, for the output check.
    pub fn paths(&self) -> PathArgs {
        let p = self.design.paths(PathArgs::default());
        let p = self.calibration.paths(self.study.paths(p));
        p.inputs("--fabric", &self.fabric)
            .inputs("--compare", crate::compare::design_files(&self.compare))
            .output_file("--out", Some(&self.out))
            .output_dir("--png", self.png.as_ref(), Names::exact(&PNG_FILES))
    }
}

pub fn run(a: &ReportArgs, given: &Given, outputs: &Outputs) -> Result<(), CliError> {
    if !a.compare.is_empty() {
        return decision(a, given, outputs);
    }
    if a.study.model.is_some() || a.study.model_file.is_some() {
        return Err(CliError::input(
            "--model predicts a training step for the decision report: name the designs with --compare DESIGN...",
        ));
    }
    decision_flags_in_plain_report(a, given)?;
    if !(a.png_scale.is_finite() && a.png_scale > 0.0 && a.png_scale <= 8.0) {
        return Err(CliError::input(format!(
            "--png-scale {}: valid: above 0, at most 8",
            number(f64::from(a.png_scale))
        )));
    }
    let calibration = a.calibration.load()?;
    let (fabric, catalog, description, plan) = design_and_plan(a)?;
    let busbw = if a.no_sim {
        Busbw::default()
    } else {
        curves(a, &fabric, &catalog, calibration)?
    };
    let report = DesignReport {
        fabric: &fabric,
        plan: &plan,
        description,
        busbw,
    };
    // Render everything before writing anything.
    let html = report_html(&report);
    let mut pngs: Vec<(String, Vec<u8>)> = Vec::new();
    if a.png.is_some() {
        for fig in figures(&report) {
            let bytes =
                png::render(&fig.svg, a.png_scale).map_err(|e| CliError::failed(e.to_string()))?;
            pngs.push((format!("{}.png", fig.name), bytes));
        }
    }
    // The report and its PNGs appear together or not at all.
    let mut stagings = Vec::new();
    if let Some((mut staging, name)) = outputs.file("--out") {
        staging.write(&name, html)?;
        stagings.push(staging);
    }
    if let Some(mut staging) = outputs.dir("--png") {
        for (name, bytes) in pngs {
            staging.write(&name, bytes)?;
        }
        stagings.push(staging);
    }
    commit_together(stagings, true)
}

/// The design a plain report shows: the fabric as built (`--fabric`, with its compute network's
/// plan), or the design searched with the next designs and its storage and management networks;
/// with its description.
fn design_and_plan(a: &ReportArgs) -> Result<(Fabric, Catalog, String, Plan), CliError> {
    Ok(match &a.fabric {
        Some(path) => {
            let (fabric, catalog) =
                crate::fabric_arg::design_fabric(a.preset.as_deref(), &a.design, Some(path))?;
            let description = format!("the fabric as built: {}", path.display());
            let plan = Plan::new(&fabric, &catalog);
            (fabric, catalog, description, plan)
        }
        None => {
            // Searched, with the next designs and the storage and management networks.
            let (spec, catalog) = a.design.load(a.preset.as_deref())?;
            let planned = design::plan(&spec, &catalog, REPORT_ALTERNATIVES)?;
            (
                planned.fabric,
                catalog,
                spec.description.clone(),
                planned.plan,
            )
        }
    })
}

/// The report's busbw curves, simulated as `--sharp` and `--calibration` say (the note names the
/// calibration), a terminal told what is being simulated.
fn curves(
    a: &ReportArgs,
    fabric: &Fabric,
    catalog: &Catalog,
    calibration: Calibration,
) -> Result<Busbw, CliError> {
    let tty = std::io::stderr().is_terminal();
    let mut progress = |msg: &str| {
        if tty {
            crate::io::to_stderr(&format!("\r\x1b[2Krailyard: simulating {msg}"));
        }
    };
    // A calibration that cannot apply to this design is bad input, as in every other command
    // (the busbw simulation would only leave its curves out).
    let mut b = busbw::report_curves(fabric, catalog, calibration, a.study.sharp.0, &mut progress)
        .map_err(CliError::input)?;
    if let Some(path) = &a.calibration.calibration {
        b.notes.push(format!(
            "calibrated by {} ({})",
            path.display(),
            calibration.describe()
        ));
    }
    if tty {
        crate::io::to_stderr("\r\x1b[2K");
    }
    Ok(b)
}

/// `report --compare DESIGN...`: the decision report of the designs side by side.
fn decision(a: &ReportArgs, given: &Given, outputs: &Outputs) -> Result<(), CliError> {
    let job = crate::compare::Job {
        designs: &a.compare,
        design: &a.design,
        vary: &[],
        study: &a.study,
        perf: false,
        max_designs: crate::compare::DEFAULT_MAX_DESIGNS,
        drawings: true,
        curves: !a.no_sim,
        calibration: a.calibration.load()?,
        fabric: None,
        given,
        offers_perf: false,
        shard: None,
    };
    let evaluated = crate::compare::evaluate_all(&job)?;
    let inv = crate::compare::invocation(crate::compare::argv(), given);
    let html = crate::compare::report_html(&evaluated, &a.study, inv);
    outputs.write_file("--out", html, false)
}

/// What the report of a design shows.
fn report_of<'a>(
    spec: &ClusterSpec,
    fabric: &'a Fabric,
    plan: &'a Plan,
    busbw: Busbw,
) -> DesignReport<'a> {
    DesignReport {
        fabric,
        plan,
        description: spec.description.clone(),
        busbw,
    }
}

/// report.html of a planned design (`plan --out` writes it beside the other files). Planning does not
/// simulate, so this report has no bus-bandwidth plots; `railyard report` has them.
pub fn html(spec: &ClusterSpec, fabric: &Fabric, plan: &Plan) -> String {
    report_html(&report_of(spec, fabric, plan, Busbw::default()))
}
