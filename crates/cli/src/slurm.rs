//! `railyard export slurm`: Slurm's topology.conf from a plan or a discovered fabric.

use crate::design::DesignArgs;
use crate::error::CliError;
use crate::fabric_arg::load_fabric;
use crate::io::{print, read_input, Input};
use crate::output::{Outputs, PathArgs};
use clap::Args;
use railyard_study::interop as ib;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// Built-in design to export (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// A fabric.json written by `railyard plan --out` or `import ibnet`, or ibnetdiscover /
    /// iblinkinfo output, instead of a preset or spec.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// The site's names, as `verify --names` reads them: a CSV of plan name, site name (a switch or
    /// a server a row). Nodes must be named as slurm.conf names them.
    #[arg(long, value_name = "MAP")]
    pub names: Option<PathBuf>,
    /// The topology plugin the file is for: tree (switches with their nodes and child switches)
    /// or block (base blocks of nodes under one leaf group, and BlockSizes; Slurm 24.05 or later).
    #[arg(long, value_name = "PLUGIN", default_value = "tree", value_parser = ["tree", "block"])]
    pub plugin: String,
    /// Write topology.conf here; without it, it is printed.
    #[arg(
        short = 'o',
        long = "out",
        visible_alias = "output",
        value_name = "FILE"
    )]
    pub output: Option<PathBuf>,
}

impl SlurmArgs {
    /// What `export slurm` reads and writes, for the output check.
    pub fn paths(&self) -> PathArgs {
        self.design
            .paths(PathArgs::default())
            .inputs("--fabric", &self.fabric)
            .inputs("--names", &self.names)
            .output_file("--out", self.output.as_ref())
    }
}

pub fn export(a: &SlurmArgs, outputs: &Outputs) -> Result<(), CliError> {
    let f = load_fabric(a.preset.as_deref(), &a.design, a.fabric.as_deref())?;
    let names = match &a.names {
        Some(path) => {
            let text = read_input(path, Input::NAMES)?;
            let map = ib::names(&text, &f)
                .map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
            Some(map)
        }
        None => None,
    };
    let export = ib::slurm_conf(&f, names.as_ref(), &a.plugin).map_err(CliError::input)?;
    match &a.output {
        Some(out) => {
            outputs.write_file("--out", export.text, true)?;
            let mut msg = format!("wrote {}: {}\n", out.display(), export.summary);
            for n in &export.notes {
                msg.push_str(&format!("note: {n}\n"));
            }
            print(&msg)
        }
        None => {
            for n in &export.notes {
                crate::io::say!("railyard: note: {n}");
            }
            print(&export.text)
        }
    }
}
