//! `railyard merge DIR...`: the shards of a sweep run on a job array (`compare --shard I/N -o
//! DIR`) merged and printed as the unsharded run prints them, with merge's own output flags.
//! The checks (one command, every shard once, one format version) are the application layer's
//! (`railyard_study::shard`); this reads the files and prints.

use crate::error::CliError;
use crate::given::Given;
use crate::io::{print, read_input, Input};
use clap::Args;
use railyard_study::compare::shard as sharded;
use railyard_study::rules;
use railyard_study::shard::command_of;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Directories a sharded run wrote into (its -o DIR), or shard files: every
    /// COMMAND-shard-I-of-N.json in a directory is read. Every shard of the run must be there,
    /// once.
    #[arg(value_name = "DIR", required = true)]
    pub inputs: Vec<PathBuf>,
    /// Print as the command's --json does.
    #[arg(long)]
    pub json: bool,
    /// Columns the table may take, as compare's --width (default: $COLUMNS on a terminal, else
    /// 160).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(40..))]
    pub width: Option<u16>,
}

/// Whether a file name is a shard's (`compare-shard-2-of-4.json`).
fn is_shard_name(name: &str) -> bool {
    name.ends_with(".json") && name.contains("-shard-") && name.contains("-of-")
}

/// The shard files named: the files given, and the shard files of each directory given, in name
/// order; a directory with none is refused.
fn shard_paths(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for p in inputs {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let entries = std::fs::read_dir(p)
            .map_err(|e| CliError::input(format!("{}: {e} (DIR)", p.display())))?;
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in entries {
            let entry =
                entry.map_err(|e| CliError::input(format!("{}: {e} (DIR)", p.display())))?;
            let name = entry.file_name();
            if name.to_str().is_some_and(is_shard_name) {
                found.push(entry.path());
            }
        }
        if found.is_empty() {
            return Err(CliError::input(format!(
                "{}: no shard file (COMMAND-shard-I-of-N.json, written by compare --shard I/N -o DIR) in it",
                p.display()
            )));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

pub fn run(a: &MergeArgs, given: &Given) -> Result<(), CliError> {
    if let Some(width) = a.width {
        let facts = rules::TableFacts {
            json: a.json,
            width,
        };
        rules::table_keys_in_effect(given, &facts).map_err(|e| CliError::input(e.message))?;
    }
    let mut files = Vec::new();
    for path in shard_paths(&a.inputs)? {
        let text = read_input(&path, Input::SHARD)?;
        files.push((path.display().to_string(), text));
    }
    let (name, text) = &files[0];
    let command = command_of(name, text).map_err(|e| CliError::input(e.0))?;
    if command != "compare" {
        return Err(CliError::input(format!(
            "{name} is a shard of `{command}`; merge reads compare's shards (compare --shard I/N -o DIR)"
        )));
    }
    let (context, designs) = sharded::merge(&files).map_err(|e| CliError::input(e.0))?;
    let width = crate::compare::table_width(a.width);
    print(&sharded::render(&designs, &context, a.json, width))
}
