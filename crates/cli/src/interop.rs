//! `railyard export`: hand a planned fabric to the InfiniBand tools.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::io::{print, read_input, split_output, write_files, Input};
use clap::{Args, Subcommand};
use railyard_fabric::Fabric;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub format: ExportFormat,
}

#[derive(Debug, Subcommand)]
pub enum ExportFormat {
    /// ibnetdiscover-format topology that `ibsim -s FILE` loads.
    Ibnet(IbnetArgs),
}

#[derive(Debug, Args)]
pub struct IbnetArgs {
    /// Built-in design to export (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// A fabric.json written by `railyard plan --out`, instead of a preset or spec.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// Output topology file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Also write root_guids.txt and cn_guids.txt for OpenSM's ftree routing (`-a`, `-u`) and
    /// ibsim-flags.txt with the ibsim size limits this fabric needs.
    #[arg(long, value_name = "DIR")]
    pub opensm_dir: Option<PathBuf>,
}

/// The fabric named by a preset, a spec, or `--fabric fabric.json`.
pub fn load_fabric(
    preset: Option<&str>,
    design: &DesignArgs,
    fabric: Option<&Path>,
) -> Result<Fabric, CliError> {
    match fabric {
        Some(path) => {
            if preset.is_some() || design.spec.is_some() {
                return Err(CliError::input(
                    "give either --fabric or a preset / --spec, not both",
                ));
            }
            let text = read_input(path, Input::FABRIC_JSON)?;
            railyard_fabric::fabric_file::load_fabric_json(&text)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))
        }
        None => {
            let (spec, catalog) = design.load(preset)?;
            design::build(&spec, &catalog)
        }
    }
}

pub fn export(a: &ExportArgs) -> Result<(), CliError> {
    match &a.format {
        ExportFormat::Ibnet(a) => {
            let f = load_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
            let export = railyard_ib::export::ibsim_topology(&f)
                .map_err(|e| CliError::input(e.to_string()))?;
            let (dir, name) = split_output(&a.output)?;
            write_files(&dir, &[(name.as_str(), export.text)])?;
            if let Some(d) = &a.opensm_dir {
                let files = railyard_ib::export::opensm_files(&f);
                let files: Vec<(&str, String)> = files.into_iter().collect();
                write_files(d, &files)?;
            }
            let mut msg = format!("wrote {}\n", a.output.display());
            for n in &export.notes {
                msg.push_str(&format!("note: {n}\n"));
            }
            print(&msg)
        }
    }
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The plan: a fabric.json from `railyard plan --out`, a spec file (TOML), or a preset name; the
    /// design flags below apply to specs and presets.
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// ibnetdiscover output (default or -p), iblinkinfo output, or an ibsim topology file of the
    /// cluster as built; the format is recognised by content.
    #[arg(long, value_name = "FILE")]
    pub discovered: PathBuf,
    /// The discovered fabric runs in ibsim, which shows NDR and XDR links as HDR: expect the rates
    /// `railyard export ibnet` wrote instead of the planned ones.
    #[arg(long)]
    pub ibsim: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Compares the discovered fabric with the plan. Exit status: 0 when they match, 1 when they differ,
/// 2 on bad input.
pub fn verify(a: &VerifyArgs) -> Result<(), CliError> {
    let plan = match a.plan.as_deref() {
        Some(p) if Path::new(p).is_file() && p.ends_with(".json") => {
            load_fabric(None, &a.design, Some(Path::new(p)))?
        }
        Some(p) if Path::new(p).is_file() => {
            let mut design = a.design.clone();
            design.spec = Some(PathBuf::from(p));
            load_fabric(None, &design, None)?
        }
        other => load_fabric(other, &a.design, None)?,
    };
    let text = read_input(&a.discovered, Input::DISCOVERED)?;
    let discovered = railyard_ib::discovery::parse(&text)
        .map_err(|e| CliError::input(format!("{}: {e}", a.discovered.display())))?;
    let report = railyard_ib::verify::verify(
        &plan,
        &discovered,
        railyard_ib::verify::Options {
            ibsim_rates: a.ibsim,
        },
    );
    if a.json {
        let mut text =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::failed(e.to_string()))?;
        text.push('\n');
        print(&text)?;
    } else {
        print(&railyard_ib::verify::report_text(&report))?;
    }
    if report.matches {
        Ok(())
    } else {
        std::process::exit(1)
    }
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub format: ImportFormat,
}

#[derive(Debug, Subcommand)]
pub enum ImportFormat {
    /// ibnetdiscover (default or -p) or iblinkinfo output: switches, HCAs (grouped into servers by
    /// description) and cables at the rates they run.
    Ibnet(ImportIbnetArgs),
}

#[derive(Debug, Args)]
pub struct ImportIbnetArgs {
    /// ibnetdiscover or iblinkinfo output file (recognised by content).
    pub file: PathBuf,
    /// Write the fabric as fabric.json here (for `sim`, `verify --plan`, `export`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn import(a: &ImportArgs) -> Result<(), CliError> {
    match &a.format {
        ImportFormat::Ibnet(a) => {
            let text = read_input(&a.file, Input::IMPORT)?;
            let origin = a.file.display().to_string();
            let discovered = railyard_ib::discovery::parse(&text)
                .map_err(|e| CliError::input(format!("{origin}: {e}")))?;
            let name = a
                .file
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("discovered");
            let fabric = railyard_ib::import::to_fabric(&discovered, name)
                .map_err(|e| CliError::input(format!("{origin}: {e}")))?;
            let switches = fabric.nodes.iter().filter(|n| n.is_switch()).count();
            let mut msg = format!(
                "{origin}: {} servers, {} HCAs, {switches} switches in {} tier{}, {} cables ({})\n",
                fabric.servers.len(),
                fabric
                    .nodes
                    .iter()
                    .filter(|n| matches!(n.kind, railyard_fabric::NodeKind::Nic { .. }))
                    .count(),
                fabric.meta.tiers,
                if fabric.meta.tiers == 1 { "" } else { "s" },
                fabric.network_links().count(),
                fabric.meta.tech
            );
            if let Some(out) = &a.output {
                let (dir, file) = split_output(out)?;
                write_files(
                    &dir,
                    &[(
                        file.as_str(),
                        railyard_fabric::fabric_file::fabric_json(&fabric),
                    )],
                )?;
                msg.push_str(&format!("wrote {}\n", out.display()));
            }
            print(&msg)
        }
    }
}
