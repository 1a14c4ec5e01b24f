//! `railyard export`: hand a planned fabric to the InfiniBand tools.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::fabric_arg::load_fabric;
use crate::io::{print, read_input, Input};
use crate::output::{commit_together, Names, Outputs, PathArgs};
use clap::{Args, Subcommand};
use railyard_study::design::{self as study_design, Places};
use railyard_study::interop::{self as ib, LldpFile, VerifyAsk};
use railyard_study::Fabric;
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
    /// The LLDP neighbour tables a plan expects: one file per switch and server, DEVICE.json, in
    /// the form `lldpcli -f json show neighbors` prints (switch ports `swp<N>`, host interfaces by
    /// the plan's NIC names), for `verify --lldp` and for comparing with what devices report.
    Lldp(LldpArgs),
    /// Slurm's topology.conf: switches with their nodes and child switches (topology/tree), or
    /// base blocks and block sizes (`--plugin block`), nodes by the site's names (`--names`).
    Slurm(crate::slurm::SlurmArgs),
}

#[derive(Debug, Args)]
pub struct LldpArgs {
    /// Built-in design to export (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// A fabric.json written by `railyard plan --out`, instead of a preset or spec.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// Directory to write DEVICE.json files into.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
pub struct IbnetArgs {
    /// Built-in design to export (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// A fabric.json written by `railyard plan --out` or `import ibnet`, or ibnetdiscover /
    /// iblinkinfo output, instead of a preset or spec.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// Output topology file.
    #[arg(
        short = 'o',
        long = "out",
        visible_alias = "output",
        value_name = "FILE"
    )]
    pub output: PathBuf,
    /// Also write root_guids.txt and cn_guids.txt for OpenSM's ftree routing (`-a`, `-u`) and
    /// ibsim-flags.txt with the ibsim size limits this fabric needs.
    #[arg(long, value_name = "DIR")]
    pub opensm_dir: Option<PathBuf>,
}

/// The files `export ibnet --opensm-dir DIR` writes (`study::interop::ibnet`).
const OPENSM_FILES: [&str; 3] = ["root_guids.txt", "cn_guids.txt", "ibsim-flags.txt"];

impl ExportArgs {
    /// What `export` reads and writes, for the output check.
    pub fn paths(&self) -> PathArgs {
        match &self.format {
            ExportFormat::Slurm(a) => a.paths(),
            ExportFormat::Lldp(a) => a
                .design
                .paths(PathArgs::default())
                .inputs("--fabric", &a.fabric)
                .output_dir(
                    "--output",
                    Some(&a.output),
                    Names::EndingIn {
                        suffix: ".json",
                        what: "a DEVICE.json for every device",
                    },
                ),
            ExportFormat::Ibnet(a) => a
                .design
                .paths(PathArgs::default())
                .inputs("--fabric", &a.fabric)
                .output_file("--out", Some(&a.output))
                .output_dir(
                    "--opensm-dir",
                    a.opensm_dir.as_ref(),
                    Names::exact(&OPENSM_FILES),
                ),
        }
    }
}

pub fn export(a: &ExportArgs, outputs: &Outputs) -> Result<(), CliError> {
    match &a.format {
        ExportFormat::Slurm(a) => crate::slurm::export(a, outputs),
        ExportFormat::Lldp(a) => {
            let f = load_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
            let files = ib::lldp_files(&f).map_err(CliError::input)?;
            let count = files.len();
            if let Some(mut staging) = outputs.dir("--output") {
                for (name, text) in files {
                    staging.write(&name, text)?;
                }
                staging.commit()?;
            }
            print(&format!(
                "wrote {count} neighbour tables to {}\n",
                a.output.display()
            ))
        }
        ExportFormat::Ibnet(a) => {
            let f = load_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
            let export = ib::ibnet(&f, a.opensm_dir.is_some()).map_err(CliError::input)?;
            // The topology and the OpenSM files appear together or not at all; stdout names the
            // topology, stderr the OpenSM files.
            let mut stagings = Vec::new();
            if let Some((mut staging, name)) = outputs.file("--out") {
                staging.write(&name, export.text)?;
                stagings.push(staging);
            }
            let mut opensm = Vec::new();
            if let (Some(mut staging), Some(dir)) = (outputs.dir("--opensm-dir"), &a.opensm_dir) {
                for (name, text) in export.opensm {
                    opensm.push(dir.join(name).display().to_string());
                    staging.write(name, text)?;
                }
                stagings.push(staging);
            }
            commit_together(stagings, false)?;
            if !opensm.is_empty() {
                crate::io::say!("railyard: wrote {}", opensm.join(", "));
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
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "lldp",
        conflicts_with = "lldp"
    )]
    pub discovered: Option<PathBuf>,
    /// An Ethernet (RoCE) fabric as built: LLDP neighbour tables of its switches and hosts
    /// (`lldpcli show neighbors`, plain or `-f json`), one file per device named after it
    /// (DEVICE, DEVICE.json or DEVICE.txt). Cables are compared port by port; LLDP gives no rates.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub lldp: Vec<PathBuf>,
    /// The discovered fabric runs in ibsim, which shows NDR and XDR links as HDR: expect the rates
    /// `railyard export ibnet` wrote instead of the planned ones.
    #[arg(long)]
    pub ibsim: bool,
    /// The site's names for planned devices: a CSV of plan name, site name (a switch, a server or an
    /// HCA a row; a server's row renames its HCAs). Devices whose descriptions match neither name
    /// are matched by their place in the tree and port numbers, and the report says so.
    #[arg(long, value_name = "MAP")]
    pub names: Option<PathBuf>,
    /// Check only part of the fabric during staged bring-up: scalable units (`su3`), switches,
    /// servers or HCAs, comma-separated; cables with no end among them are ignored.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub scope: Vec<String>,
    /// List every finding; without it, findings alike are one line with a count and the first few.
    #[arg(long)]
    pub all: bool,
    /// Print the report as JSON (every finding, always).
    #[arg(long)]
    pub json: bool,
}

/// What `--plan` names.
enum PlanArg<'a> {
    /// A fabric.json (`plan --out`, `import ibnet -o`).
    Fabric(&'a Path),
    /// A spec file.
    Spec(&'a Path),
    Preset(&'a str),
}

/// What `--plan P` names: a word that is on disk, or reads as a path (a `/`, a `.json` or `.toml`
/// ending), is a file, which must be a regular one (`/dev/zero`, a directory or a missing file is
/// refused as such, not taken for an unknown preset); any other word is a preset.
fn plan_arg(p: &str) -> Result<PlanArg<'_>, CliError> {
    let path = Path::new(p);
    let is_path = path.symlink_metadata().is_ok()
        || p.contains('/')
        || p.ends_with(".json")
        || p.ends_with(".toml");
    if !is_path {
        return Ok(PlanArg::Preset(p));
    }
    crate::io::regular_file(path, Input::PLAN)?;
    Ok(if p.ends_with(".json") {
        PlanArg::Fabric(path)
    } else {
        PlanArg::Spec(path)
    })
}

/// The plan of `verify --plan` and `check --plan`: a fabric.json, a spec file or a preset (see
/// [`plan_arg`]); with where every node stands when the plan has a layout (specs and presets do; a
/// fabric.json does not), as `plan` writes it in cabling.csv
/// ([`study::design::places`](railyard_study::design::places)).
pub fn plan_with_places(
    plan: Option<&str>,
    design: &DesignArgs,
) -> Result<(Fabric, Option<Places>), CliError> {
    let spec_and_catalog = match plan.map(plan_arg).transpose()? {
        Some(PlanArg::Fabric(path)) => {
            return Ok((load_fabric(None, design, Some(path))?, None));
        }
        Some(PlanArg::Spec(path)) => {
            let mut design = design.clone();
            design.spec = Some(path.to_path_buf());
            design.load(None)?
        }
        Some(PlanArg::Preset(name)) => design.load(Some(name))?,
        None => design.load(None)?,
    };
    let (spec, catalog) = spec_and_catalog;
    let f = design::build(&spec, &catalog)?;
    let places = study_design::places(&f, &spec, &catalog);
    Ok((f, Some(places)))
}

/// The device an LLDP table file was taken on: its file name without a .json, .txt or .lldp ending.
fn lldp_device(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    for ext in [".json", ".txt", ".lldp"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return stem.to_string();
        }
    }
    name
}

/// An LLDP table of `verify --lldp`, read, with the device it was taken on.
fn lldp_file(path: &Path) -> Result<LldpFile, CliError> {
    Ok(LldpFile {
        device: lldp_device(path),
        source: path.display().to_string(),
        text: read_input(path, Input::LLDP)?,
    })
}

/// Compares the discovered fabric with the plan. Exit status: 0 when they match, 1 when they differ,
/// 2 on bad input.
pub fn verify(a: &VerifyArgs) -> Result<(), CliError> {
    let (plan, locations) = plan_with_places(a.plan.as_deref(), &a.design)?;
    let names = match &a.names {
        Some(path) => {
            let text = read_input(path, Input::NAMES)?;
            let map = ib::names(&text, &plan)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            Some(map)
        }
        None => None,
    };
    let scope = if a.scope.is_empty() {
        None
    } else {
        Some(ib::scope(&plan, &a.scope).map_err(|e| CliError::input(format!("--scope: {e}")))?)
    };
    let discovered = match &a.discovered {
        Some(path) => {
            let text = read_input(path, Input::DISCOVERED)?;
            let (d, notes) = ib::discovered(&text)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            for note in notes {
                crate::io::say!(
                    "railyard: note: {}: {note} (`railyard check` names it)",
                    path.display()
                );
            }
            d
        }
        None => {
            ib::lldp_plan(&plan).map_err(CliError::input)?;
            let files = a.lldp.iter().map(|p| lldp_file(p));
            ib::lldp_discovered(files, &plan, names.as_ref(), CliError::input)?
        }
    };
    let ask = VerifyAsk {
        names: names.as_ref(),
        places: locations.as_deref(),
        scope: scope.as_ref(),
        without_rates: a.discovered.is_none(),
        ibsim: a.ibsim,
    };
    let report = ib::verify(&plan, &discovered, &ask);
    if a.json {
        let mut text =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::failed(e.to_string()))?;
        text.push('\n');
        print(&text)?;
    } else {
        print(&ib::verification_text(&report, a.all))?;
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
    #[arg(
        short = 'o',
        long = "out",
        visible_alias = "output",
        value_name = "FILE"
    )]
    pub output: Option<PathBuf>,
}

impl ImportArgs {
    /// What `import` reads and writes, for the output check.
    pub fn paths(&self) -> PathArgs {
        match &self.format {
            ImportFormat::Ibnet(a) => PathArgs::default()
                .inputs("FILE", [&a.file])
                .output_file("--out", a.output.as_ref()),
        }
    }
}

pub fn import(a: &ImportArgs, outputs: &Outputs) -> Result<(), CliError> {
    match &a.format {
        ImportFormat::Ibnet(a) => {
            let text = read_input(&a.file, Input::IMPORT)?;
            let origin = a.file.display().to_string();
            let name = a
                .file
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("discovered");
            let imported = ib::import_ibnet(&text, name)
                .map_err(|e| CliError::input(format!("{origin}: {e}")))?;
            let mut msg = imported.text(&origin);
            if let Some(out) = &a.output {
                outputs.write_file("--out", imported.json(), true)?;
                msg.push_str(&format!("wrote {}\n", out.display()));
            }
            print(&msg)
        }
    }
}
