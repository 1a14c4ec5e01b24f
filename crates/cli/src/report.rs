//! `railyard report`: the self-contained report.html, and PNGs of its drawings and charts.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::io::{split_output, write_files};
use clap::Args;
use railyard_fabric::Fabric;
use railyard_plan::Plan;
use railyard_report::{figures, png, report_html, DesignReport};
use railyard_spec::ClusterSpec;
use railyard_study::busbw::{self, Busbw};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Built-in design to start from (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// Where to write the report.
    #[arg(
        short = 'o',
        long = "out",
        value_name = "FILE",
        default_value = "report.html"
    )]
    pub out: PathBuf,
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

pub fn run(a: &ReportArgs) -> Result<(), CliError> {
    if !(a.png_scale.is_finite() && a.png_scale > 0.0 && a.png_scale <= 8.0) {
        return Err(CliError::input(format!(
            "--png-scale {}: valid: above 0, at most 8",
            a.png_scale
        )));
    }
    let (spec, catalog) = a.design.load(a.preset.as_deref())?;
    let fabric = design::build(&spec, &catalog)?;
    let plan = Plan::new(&fabric, &catalog);
    let busbw = if a.no_sim {
        Busbw::default()
    } else {
        let tty = std::io::stderr().is_terminal();
        let mut progress = |msg: &str| {
            if tty {
                eprint!("\r\x1b[2Krailyard: simulating {msg}");
            }
        };
        let b = busbw::simulate(&fabric, &catalog, &mut progress);
        if tty {
            eprint!("\r\x1b[2K");
        }
        b
    };
    let report = report_of(&spec, &fabric, &plan, busbw);
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
    let (dir, name) = split_output(&a.out)?;
    write_files(&dir, &[(name.as_str(), html)])?;
    if let Some(dir) = &a.png {
        write_files(dir, &pngs)?;
    }
    Ok(())
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
