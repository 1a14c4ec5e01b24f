//! `railyard calibrate` and `railyard check-nccl`: a cluster's own nccl-tests logs against the
//! design they ran on. The CLI reads the logs (one parser, `study::calibrate::parse_log`), works out
//! the design from the flags and the logs' hosts and ranks, and prints what
//! `railyard_study::calibrate` fits or checks; `calibrate -o FILE` writes the calibration atomically.

mod render;

use crate::design::{self, CalibrationArgs, DesignArgs};
use crate::error::CliError;
use crate::io::{print, read_input, Input};
use crate::output::resolve::Place;
use crate::output::{Outputs, PathArgs};
use clap::Args;
use railyard_study::calibrate::{self as study, other_gpu, ranks_of, Log, NcclEnv};
use railyard_study::calibrate::{Collective, CollectiveError, Protocols, Run};
use railyard_study::compare::AlgoChoice;
use railyard_study::design::presets;
use railyard_study::scenario::Calibration;
use railyard_study::{Catalog, Fabric};
use render::{calibrate_json, calibrate_text, check_json, check_text, describe};
use render::{poor_fit_text, slow_nic_text};
use std::path::PathBuf;

fn parse_op(s: &str) -> Result<Collective, String> {
    s.parse()
}

/// One `--op` of `calibrate`: the collective of every log that does not say (`OP`), or of one
/// log, named by its path as given (`LOG=OP`).
#[derive(Debug, Clone, PartialEq)]
pub struct OpChoice {
    pub log: Option<String>,
    pub op: Collective,
}

fn parse_op_choice(s: &str) -> Result<OpChoice, String> {
    match s.rsplit_once('=') {
        Some((log, op)) if !log.is_empty() => Ok(OpChoice {
            log: Some(log.to_string()),
            op: op.parse()?,
        }),
        _ => Ok(OpChoice {
            log: None,
            op: s.parse()?,
        }),
    }
}

/// The `--op` each log path takes: its own (`LOG=OP`), else the one for every log. A second
/// `--op` for every log, two for one log, or one naming no log given are refused.
fn op_per_log<'a>(
    choices: &'a [OpChoice],
    paths: &'a [String],
) -> Result<impl Fn(&str) -> Option<Collective> + 'a, CliError> {
    let mut every: Option<Collective> = None;
    let mut own: std::collections::BTreeMap<&str, Collective> = Default::default();
    for c in choices {
        match &c.log {
            None => {
                if every.replace(c.op).is_some() {
                    return Err(CliError::input(
                        "--op: given twice for every log; give one, or LOG=OP for each log"
                            .to_string(),
                    ));
                }
            }
            Some(given) => {
                // The log as given, or the same file by another path (`./a.txt`, absolute).
                let same = |p: &String| {
                    p == given
                        || Place::followed(p.as_ref()).same_file(&Place::followed(given.as_ref()))
                };
                let Some(log) = paths.iter().find(|p| same(p)) else {
                    return Err(CliError::input(format!(
                        "--op {given}={}: {given} is none of the logs given; the logs: {}",
                        c.op.as_str(),
                        paths.join(", ")
                    )));
                };
                if own.insert(log.as_str(), c.op).is_some() {
                    return Err(CliError::input(format!(
                        "--op: {log} is given twice; give one collective for it"
                    )));
                }
            }
        }
    }
    Ok(move |path: &str| own.get(path).copied().or(every))
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// nccl-tests logs (all_reduce_perf, all_gather_perf, ... output) run on the design; a last word
    /// that names a built-in design (`railyard presets`) and no file is the design to start from
    #[arg(value_name = "LOG", required = true, num_args = 1..)]
    pub logs: Vec<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// The collective the logs measured, where a log does not say (no `# Collective test
    /// starting` line and not an all-reduce by its busbw / algbw): `OP` for every log, `LOG=OP` for
    /// the log at that path (repeat it for each); refused where a log's header names another or
    /// its rows' busbw / algbw contradicts it
    #[arg(long, value_name = "[LOG=]OP", value_parser = parse_op_choice, action = clap::ArgAction::Append)]
    pub op: Vec<OpChoice>,
    #[command(flatten)]
    pub nccl: NcclEnvArgs,
    /// Where to write the calibration (TOML, railyard-calibration/1)
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: PathBuf,
    /// Print the fit as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CheckNcclArgs {
    /// nccl-tests log (all_reduce_perf, all_gather_perf, ... output)
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// Built-in design it ran on (see `railyard presets`); default dgx-h100-superpod
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    #[command(flatten)]
    pub calibration: CalibrationArgs,
    /// The collective the log measured, where it does not say; refused where its header names
    /// another or its rows' busbw / algbw contradicts it
    #[arg(long, value_name = "OP", value_parser = parse_op)]
    pub op: Option<Collective>,
    #[command(flatten)]
    pub nccl: NcclEnvArgs,
    /// Flag sizes whose busbw is more than this many percent below (or above) the prediction
    #[arg(long, value_name = "PCT", default_value_t = 20.0,
          value_parser = parse_tolerance, allow_negative_numbers = true)]
    pub tolerance: f64,
    /// Print the rows and verdict as JSON
    #[arg(long)]
    pub json: bool,
}

/// `--algo` and `--proto`: what the logged run's `NCCL_ALGO` and `NCCL_PROTO` left NCCL (a log
/// does not record them).
#[derive(Debug, Args)]
pub struct NcclEnvArgs {
    /// The algorithms the run left NCCL, as its NCCL_ALGO named them (ring, tree, collnetdirect,
    /// collnetchain, nvls, nvlstree, pat), or auto (default: NCCL's own choice per size)
    #[arg(long, value_name = "A", default_value = "auto", value_parser = crate::design::parse_algo)]
    pub algo: AlgoChoice,
    /// The protocols the run left NCCL, as its NCCL_PROTO named them: LL, LL128, Simple, a
    /// comma-separated list, or ^LIST for all but those (default: all)
    #[arg(long, value_name = "P", value_parser = Protocols::parse)]
    pub proto: Option<Protocols>,
}

impl NcclEnvArgs {
    fn env(&self) -> NcclEnv {
        NcclEnv {
            algo: self.algo,
            protocols: self.proto.unwrap_or_default(),
        }
    }
}

fn parse_tolerance(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1000.0 => Ok(v),
        _ => Err(format!("`{s}`: valid: a percentage above 0, at most 1000")),
    }
}

/// A log read and parsed: its name (the path as given, with the run's place where the file
/// holds several), the path as given, and its one run.
struct LogFile {
    name: String,
    path: String,
    run: Run,
}

/// Every run of a log file: one, named by the path as given, or several (a loop over the
/// collectives into one file), each named by the path, its place and its first line.
fn read_runs(path: &std::path::Path) -> Result<Vec<LogFile>, CliError> {
    let name = path.display().to_string();
    let text = read_input(path, Input::NCCL_LOG)?;
    let log = study::parse_log(&text).map_err(|e| CliError::input(format!("{name}: {e}")))?;
    for w in &log.warnings {
        crate::io::say!("railyard: warning: {name}: {w}");
    }
    let n = log.runs.len();
    if n == 0 {
        return Err(CliError::input(format!("{name}: no nccl-tests run")));
    }
    Ok(log
        .runs
        .into_iter()
        .enumerate()
        .map(|(k, run)| LogFile {
            name: if n == 1 {
                name.clone()
            } else {
                format!("{name} (run {} of {n}, line {})", k + 1, run.first_line)
            },
            path: name.clone(),
            run,
        })
        .collect())
}

/// A log file of one run (`check-nccl` gives one verdict per run).
fn read_log(path: &std::path::Path) -> Result<LogFile, CliError> {
    let mut runs = read_runs(path)?;
    if runs.len() > 1 {
        return Err(CliError::input(format!(
            "{}: {} nccl-tests runs in the file, from lines {}; check-nccl checks one: give each \
             run as its own file (calibrate takes them all from one file)",
            path.display(),
            runs.len(),
            runs.iter()
                .map(|r| r.run.first_line.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(runs.remove(0))
}

/// The design the logs ran on: the preset or spec with the flags, and where the flags leave them
/// out, the servers and GPUs per server the first log's rank lines show.
fn design_of(
    d: &DesignArgs,
    preset: Option<&str>,
    first: &Run,
) -> Result<(Fabric, Catalog), CliError> {
    let mut d = d.clone();
    if let Some((hosts, gpus)) = study::shape_of_log(first) {
        d.overrides.servers = d.overrides.servers.or(Some(hosts));
        if d.overrides.gpus_per_server.is_none() {
            d.overrides.gpus_per_server = Some(gpus);
            // The design's NICs per GPU kept (`--nic-ratio` applies to the log's GPUs itself;
            // `study::calibrate::nics_for_gpus` says why).
            if d.overrides.nics_per_server.is_none() && d.overrides.nic_ratio.is_none() {
                let mut base = DesignArgs {
                    given: Vec::new(),
                    ..d.clone()
                };
                base.overrides.gpus_per_server = None;
                let (spec, _) = base.load(preset)?;
                d.overrides.nics_per_server = study::nics_for_gpus(&spec, gpus);
            }
        }
    }
    let (spec, catalog) = d.load(preset)?;
    let fabric = design::build(&spec, &catalog)?;
    Ok((fabric, catalog))
}

fn study_error(e: study::CalibrateError) -> CliError {
    match e {
        // `--algo` or `--proto` leaves NCCL nothing it runs here: bad input, named by its flag.
        study::CalibrateError::Collective {
            error: CollectiveError::Config { what, message },
            ..
        } => CliError::input(format!("--{what}: {message}")),
        study::CalibrateError::Collective { .. } | study::CalibrateError::NoPrediction { .. } => {
            CliError::failed(e.to_string())
        }
        _ => CliError::input(e.to_string()),
    }
}

impl CalibrateArgs {
    /// What `calibrate` reads and writes, for the output check: the logs (a last word that is a
    /// preset and no file is the design, not a log) and the calibration it writes.
    pub fn paths(&self) -> PathArgs {
        let logs = self.logs.iter().filter(|l| {
            std::path::Path::new(l).exists() || !presets::names().contains(&l.as_str())
        });
        self.design
            .paths(PathArgs::default())
            .inputs("LOG", logs)
            .output_file("--out", Some(&self.out))
    }
}

/// The log paths `calibrate` was given and the preset its last word names, if it names one: each
/// log once, and a last word that is neither a file nor a preset refused.
fn log_paths(logs: &[String]) -> Result<(Vec<String>, Option<String>), CliError> {
    let (mut paths, mut preset) = (logs.to_vec(), None);
    if paths.len() > 1 {
        let last = paths[paths.len() - 1].clone();
        if presets::names().contains(&last.as_str()) && !std::path::Path::new(&last).exists() {
            paths.pop();
            preset = Some(last);
        }
    }
    if paths.len() > 1 {
        let last = &paths[paths.len() - 1];
        // A last word that is no file and reads as a name, not a path, is a mistyped preset.
        if !std::path::Path::new(last).exists() && !last.contains(['/', '.']) {
            return Err(CliError::input(format!(
                "{last}: no such log, and not a preset; valid presets: {}",
                presets::names().join(", ")
            )));
        }
    }
    for (i, p) in paths.iter().enumerate() {
        let place = Place::followed(p.as_ref());
        if let Some(j) = paths[..i]
            .iter()
            .position(|q| q == p || Place::followed(q.as_ref()).same_file(&place))
        {
            return Err(CliError::input(format!(
                "{p} is given twice (logs {} and {}): each run would count twice in the fit",
                j + 1,
                i + 1
            )));
        }
    }
    Ok((paths, preset))
}

pub fn calibrate(a: &CalibrateArgs, outputs: &Outputs) -> Result<(), CliError> {
    let (paths, preset) = log_paths(&a.logs)?;
    let files = paths
        .iter()
        .map(|p| read_runs(std::path::Path::new(p)))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    let (fabric, catalog) = design_of(&a.design, preset.as_deref(), &files[0].run)?;
    let given = op_per_log(&a.op, &paths)?;
    let ops = files
        .iter()
        .map(|f| {
            let ranks = Some(ranks_of(&fabric, &f.run).0);
            study::collective_of(&f.name, &f.run, given(&f.path), ranks)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(study_error)?;
    let logs: Vec<Log<'_>> = files
        .iter()
        .zip(&ops)
        .map(|(f, &op)| Log {
            name: &f.name,
            run: &f.run,
            op,
            nccl: a.nccl.env(),
        })
        .collect();
    let c = study::calibrate(&fabric, &catalog, &logs).map_err(study_error)?;
    for f in &files {
        if let Some(w) = other_gpu(&fabric, &catalog, &f.name, &f.run) {
            crate::io::say!("railyard: warning: {w}");
        }
    }
    let warnings: Vec<String> = [poor_fit_text(&c, &logs), slow_nic_text(&fabric, &c, &logs)]
        .into_iter()
        .flatten()
        .collect();
    for w in &warnings {
        crate::io::say!("railyard: warning: {w}");
    }
    let comment = format!(
        "railyard calibrate: fitted to {}\non {}\nbusbw residual: before {}; after {}{}",
        paths.join(", "),
        describe(&fabric),
        c.busbw_before,
        c.busbw_after,
        warnings
            .iter()
            .map(|w| format!("\nwarning: {w}"))
            .collect::<String>()
    );
    let text = c.fit.calibration.to_toml(&comment);
    outputs.write_file("--out", text, false)?;
    let out = if a.json {
        calibrate_json(&fabric, &logs, &c, &a.out)
    } else {
        calibrate_text(&fabric, &logs, &c, &a.out)
    };
    print(&out)
}

pub fn check_nccl(a: &CheckNcclArgs) -> Result<(), CliError> {
    let calibration: Calibration = a.calibration.load()?;
    let file = read_log(&a.log)?;
    let (fabric, catalog) = design_of(&a.design, a.preset.as_deref(), &file.run)?;
    let ranks = ranks_of(&fabric, &file.run).0;
    let op = study::collective_of(&file.name, &file.run, a.op, Some(ranks)).map_err(study_error)?;
    let log = Log {
        name: &file.name,
        run: &file.run,
        op,
        nccl: a.nccl.env(),
    };
    let check = study::check(&fabric, &catalog, &calibration, log, a.tolerance / 100.0)
        .map_err(study_error)?;
    let calibrated = a.calibration.calibration.is_some();
    let gpu = other_gpu(&fabric, &catalog, &file.name, &file.run);
    if let Some(w) = &gpu {
        crate::io::say!("railyard: warning: {w}");
    }
    print(&if a.json {
        check_json(&fabric, log, &check, calibrated)
    } else {
        let mut text = check_text(&fabric, log, &check, calibrated);
        if let Some(w) = &gpu {
            text.push_str(&format!("# warning: {w}\n"));
        }
        text
    })
}
