//! `railyard`: design, simulate and verify RDMA fabrics for GPU training clusters.
//!
//! This crate is the thin command-line layer: it parses flags, reads and writes files, and calls the
//! deterministic core crates (spec, fabric, plan), which do no I/O.
//!
//! Every command's path arguments go through one check before it runs (`output`), and every
//! print goes through `io`, whose writers never panic: `println!` and `eprintln!` (which panic
//! when the stream fails, `2>/dev/full`) are denied here.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod calibrate;
mod check;
mod commands;
mod compare;
mod design;
mod error;
mod fabric_arg;
mod given;
mod interop;
mod io;
mod jobs;
mod memory;
mod merge;
mod output;
mod report;
mod serve;
mod sim;
mod slurm;
mod train;
mod training;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// The system allocator, counting what it holds for `--memory-budget` ([`memory`]).
#[global_allocator]
static ALLOCATOR: memory::Counting = memory::Counting;

#[derive(Debug, Parser)]
#[command(
    name = "railyard",
    version,
    about = "Design, simulate and verify RDMA fabrics for GPU training clusters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan a fabric: switches, cables, optics, cabling plan, cost and power.
    Plan(commands::PlanArgs),
    /// List the built-in designs.
    Presets,
    /// Compare designs side by side.
    Compare(compare::CompareArgs),
    /// Merge the shards of a sweep run on a job array (`compare --shard I/N -o DIR`) and print
    /// what the unsharded run prints.
    Merge(merge::MergeArgs),
    /// List the hardware catalog.
    Catalog(commands::CatalogArgs),
    /// Export a fabric for other tools (ibsim / ibnetdiscover topology, expected LLDP tables, Slurm
    /// topology.conf).
    Export(interop::ExportArgs),
    /// Simulate traffic on a fabric (flow-level, max-min fair sharing).
    Sim(sim::SimArgs),
    /// Verify a discovered fabric (ibnetdiscover output) against the plan, port by port.
    Verify(interop::VerifyArgs),
    /// Import a discovered fabric (ibnetdiscover output) as fabric.json.
    Import(interop::ImportArgs),
    /// The health of a discovered fabric on its own: its tiers, oversubscription and links per
    /// pair, every fault naming both ends, and with --impact what each costs.
    Check(check::CheckArgs),
    /// Predict one training step of an LLM on the fabric (compute, communication, pipeline bubble).
    Train(train::TrainArgs),
    /// Many jobs on one fabric: a job mix placed by scheduler policies, each job's step alone and
    /// shared, its slowdown and the links it contends on.
    Jobs(jobs::JobsArgs),
    /// Write a self-contained HTML report (drawing, BOM, cost, cabling) and PNGs of its figures.
    Report(report::ReportArgs),
    /// Fit a calibration (NIC rate, latency) to a cluster's own nccl-tests logs and write it.
    Calibrate(calibrate::CalibrateArgs),
    /// Set an nccl-tests log beside the prediction, size by size: is this run normal?
    CheckNccl(calibrate::CheckNcclArgs),
    /// Serve the web app: a design form, plan, cost and drawing, two designs side by side.
    Serve(serve::ServeArgs),
}

impl Command {
    /// The command's path arguments (its inputs, the files and directories it writes), for the one
    /// check every command passes before it runs. Commands that write nothing read whatever they
    /// read: nothing to check.
    fn paths(&self) -> output::PathArgs {
        match self {
            Command::Plan(a) => a.paths(),
            Command::Compare(a) => a.paths(),
            Command::Export(a) => a.paths(),
            Command::Sim(a) => a.paths(),
            Command::Import(a) => a.paths(),
            Command::Report(a) => a.paths(),
            Command::Calibrate(a) => a.paths(),
            Command::Presets
            | Command::Catalog(_)
            | Command::Verify(_)
            | Command::Check(_)
            | Command::Train(_)
            | Command::Jobs(_)
            | Command::Merge(_)
            | Command::CheckNccl(_)
            | Command::Serve(_) => output::PathArgs::default(),
        }
    }
}

fn main() {
    // As `Cli::parse` does, keeping the matches to tell flags given from defaults.
    let mut matches = Cli::command().get_matches();
    let given = given::Given::of(given::innermost(&matches));
    let cli = Cli::from_arg_matches_mut(&mut matches)
        .map_err(|e| e.format(&mut Cli::command()))
        .unwrap_or_else(|e| e.exit());
    let result = cli
        .command
        .paths()
        .check()
        .and_then(|out| match cli.command {
            Command::Plan(a) => commands::plan(&a, &out),
            Command::Presets => commands::presets(),
            Command::Compare(a) => compare::run(&a, &given, &out),
            Command::Merge(a) => merge::run(&a, &given),
            Command::Catalog(a) => commands::catalog(&a),
            Command::Sim(a) => sim::run(&a, &given, &out),
            Command::Export(a) => interop::export(&a, &out),
            Command::Verify(a) => interop::verify(&a),
            Command::Import(a) => interop::import(&a, &out),
            Command::Check(a) => check::check(&a),
            Command::Train(a) => train::run(&a, &given),
            Command::Jobs(a) => jobs::run(&a, &given),
            Command::Report(a) => report::run(&a, &given, &out),
            Command::Serve(a) => serve::run(&a),
            Command::Calibrate(a) => calibrate::calibrate(&a, &out),
            Command::CheckNccl(a) => calibrate::check_nccl(&a),
        });
    // Past the memory budget, a simulation stops with whatever error its check gives: the budget
    // is why.
    if let Some(e) = result.as_ref().err().and_then(|_| memory::exceeded()) {
        io::say!("railyard: error: {e}");
        std::process::exit(e.status);
    }
    if let Err(e) = result {
        io::say!("railyard: error: {e}");
        std::process::exit(e.status);
    }
}
