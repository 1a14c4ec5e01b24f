//! `railyard calibrate` and `railyard check-nccl`: a cluster's own nccl-tests logs against the
//! design they ran on. The CLI reads the logs (one parser, `railyard_sim::nccl_tests`), works out
//! the design from the flags and the logs' hosts and ranks, and prints what
//! `railyard_study::calibrate` fits or checks; `calibrate -o FILE` writes the calibration atomically.

use crate::design::{self, CalibrationArgs, DesignArgs};
use crate::error::CliError;
use crate::io::{print, read_input, Input};
use crate::output::resolve::Place;
use crate::output::{Outputs, PathArgs};
use clap::Args;
use railyard_fabric::search::plural;
use railyard_fabric::Fabric;
use railyard_sim::calibration::Calibration;
use railyard_sim::collective::AlgoChoice;
use railyard_sim::nccl::{Collective, Protocols};
use railyard_sim::nccl_tests::{self, Run};
use railyard_spec::{presets, Overrides};
use railyard_study::calibrate::{self as study, Calibrated, Check, Log, NcclEnv};
use serde_json::json;
use std::fmt::Write as _;
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
    let log = nccl_tests::parse(&text).map_err(|e| CliError::input(format!("{name}: {e}")))?;
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
) -> Result<(Fabric, railyard_catalog::Catalog), CliError> {
    let mut d = d.clone();
    if let Some((hosts, gpus)) = study::shape_of_log(first) {
        d.overrides.servers = d.overrides.servers.or(Some(hosts));
        if d.overrides.gpus_per_server.is_none() {
            d.overrides.gpus_per_server = Some(gpus);
            // The design's NICs per GPU kept (`--nic-ratio` applies to the log's GPUs itself):
            // a one-GPU-per-node log on DGX H100 is one GPU with its one NIC, not with eight
            // (which predicted 56 GB/s for a run at 93% of its one 200G link, and fitted a NIC
            // rate of 3.35 GB/s).
            if d.overrides.nics_per_server.is_none() && d.overrides.nic_ratio.is_none() {
                let base = DesignArgs {
                    overrides: Overrides {
                        gpus_per_server: None,
                        ..d.overrides.clone()
                    },
                    given: Vec::new(),
                    ..d.clone()
                };
                let (spec, _) = base.load(preset)?;
                let (g, n) = (
                    u64::from(spec.servers.gpus_per_server),
                    u64::from(spec.servers.compute_nics),
                );
                let nics = if g > 0 && (u64::from(gpus) * n) % g == 0 {
                    u64::from(gpus) * n / g
                } else {
                    n.min(u64::from(gpus))
                };
                d.overrides.nics_per_server = u32::try_from(nics.max(1)).ok();
            }
        }
    }
    let (spec, catalog) = d.load(preset)?;
    let fabric = design::build(&spec, &catalog)?;
    Ok((fabric, catalog))
}

/// A warning when the log's rank lines name a GPU that is not the design's: the prediction is then
/// of other hardware (an A100 log checked against the default DGX H100 design was called
/// "UNDERPERFORMS" on 27 of 31 sizes). A name matches when one of its words is the design's GPU
/// id (`NVIDIA H100 80GB HBM3`, `NVIDIA A100-SXM4-40GB`: words split at anything not a letter or
/// digit, so `GH200` is not `H200`). `None` without rank lines or when the GPU matches.
fn other_gpu(
    f: &Fabric,
    catalog: &railyard_catalog::Catalog,
    name: &str,
    run: &Run,
) -> Option<String> {
    let device = run.devices.first()?;
    let ours = f.meta.gpu_model.to_ascii_uppercase();
    let words: Vec<String> = device
        .name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_uppercase())
        .collect();
    if words.contains(&ours) {
        return None;
    }
    let known = catalog
        .gpus
        .keys()
        .find(|id| words.contains(&id.to_ascii_uppercase()));
    let remedy = match known {
        Some(id) => format!("give --gpu {id} (or a preset with {id} GPUs)"),
        None => format!(
            "the catalog has no such GPU (valid --gpu: {})",
            catalog.gpus.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    };
    Some(format!(
        "{name}: the log ran on {} (rank {}), but the design's GPUs are {}: the prediction is of other hardware; {remedy}",
        device.name, device.rank, f.meta.gpu_model
    ))
}

fn describe(f: &Fabric) -> String {
    let m = &f.meta;
    format!(
        "{} x {} {}, {} x {} NICs each ({}, {}), GPUDirect RDMA {}",
        railyard_fabric::search::plural(f.servers.len() as u64, "server", "servers"),
        m.gpus_per_server,
        m.gpu_model,
        m.compute_nics_per_server,
        m.nic_model,
        m.tech,
        m.topology,
        if m.gpudirect { "on" } else { "off" }
    )
}

/// Bytes as nccl-tests' `-b`/`-e` take them: `8`, `1K`, `16G`, or the number of bytes.
fn size(b: u64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

fn study_error(e: study::CalibrateError) -> CliError {
    match e {
        // `--algo` or `--proto` leaves NCCL nothing it runs here: bad input, named by its flag.
        study::CalibrateError::Collective {
            error: railyard_sim::collective::CollectiveError::Config { what, message },
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

pub fn calibrate(a: &CalibrateArgs, outputs: &Outputs) -> Result<(), CliError> {
    let (mut paths, mut preset) = (a.logs.clone(), None);
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

/// What a fit that leaves the median size more than 20% off ([`study::POOR_FIT`]) says.
fn poor_fit_text(c: &Calibrated, logs: &[Log<'_>]) -> Option<String> {
    let (log, line, size, err) = c.poor_fit()?;
    Some(format!(
        "the fit leaves the predicted busbw {} off the logs' (worst: {} line {line}, {size} bytes, \
         predicted {:+.1}% against measured): past {:.0}% at the median, a NIC rate and a \
         latency do not describe these logs on this design, and every command calibrated with \
         this file carries that error; check that the design is the one the logs ran on \
         (--servers, --gpus-per-server, --nics-per-server, --tech, --gpu) and look at each log \
         with check-nccl",
        c.busbw_after,
        logs[log].name,
        err * 100.0,
        study::POOR_FIT * 100.0
    ))
}

/// A warning when the fitted NIC rate is below what a logged row needs
/// ([`study::Calibrated::nic_below_needed`]).
fn slow_nic_text(f: &Fabric, c: &Calibrated, logs: &[Log<'_>]) -> Option<String> {
    let (i, needed) = c.nic_below_needed(f)?;
    let p = &c.points[i];
    Some(format!(
        "the fitted NIC rate, {:.2} GB/s, is below the {needed:.2} GB/s that {} line {} ({} bytes, \
         busbw {:.2} GB/s) needs of each of the design's NICs: the times as a whole fit a slower \
         NIC, but calibrated with this file every command predicts that size slower than the log \
         measured it",
        c.fit.calibration.nic_gbs.unwrap_or(needed),
        logs[p.log].name,
        p.line,
        p.size,
        p.measured_busbw_gbs
    ))
}

/// The run's rank count and where it comes from: its rank lines, else (a log without them) the
/// design's GPUs.
fn ranks_of(f: &Fabric, run: &Run) -> (u32, &'static str) {
    match run.ranks() {
        Some(n) => (n, "log"),
        None => (
            u32::try_from(f.servers.len() as u64 * u64::from(f.meta.gpus_per_server))
                .unwrap_or(u32::MAX),
            "design",
        ),
    }
}

/// `16 ranks`, or where the log has no rank lines, that the count is the design's.
fn ranks_text(f: &Fabric, run: &Run) -> String {
    match ranks_of(f, run) {
        (n, "log") => plural(u64::from(n), "rank", "ranks"),
        (n, _) => format!(
            "rank count unknown (no rank lines in the log): {}, the design's GPUs",
            plural(u64::from(n), "rank", "ranks")
        ),
    }
}

/// Where the log's header says one thread drove several GPUs (`nGpus N`, nccl-tests' `-g N`):
/// `; one thread drove 8 GPUs (nGpus 8), so no size above 0 takes less than 86.72 us`, the floor
/// the prediction takes for it ([`railyard_sim::collective::nccl_tests_host_us`]); empty
/// otherwise.
fn threads_text(f: &Fabric, l: Log<'_>) -> String {
    match l.run.gpus_per_process.filter(|&g| g > 1) {
        Some(g) => format!(
            "; one thread drove {g} GPUs (nGpus {g}), so no size above 0 takes less than {:.2} us",
            railyard_sim::collective::nccl_tests_host_us(
                l.op,
                ranks_of(f, l.run).0,
                g,
                &railyard_sim::fitted::Fitted::default()
            )
        ),
        None => String::new(),
    }
}

fn sizes_used(c: &Calibrated, log: usize) -> (usize, u64, u64) {
    let s: Vec<u64> = c
        .points
        .iter()
        .filter(|p| p.log == log)
        .map(|p| p.size)
        .collect();
    (
        s.len(),
        s.iter().copied().min().unwrap_or(0),
        s.iter().copied().max().unwrap_or(0),
    )
}

fn calibrate_text(f: &Fabric, logs: &[Log<'_>], c: &Calibrated, out: &std::path::Path) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# design: {}", describe(f));
    for (i, l) in logs.iter().enumerate() {
        let (n, lo, hi) = sizes_used(c, i);
        let _ = writeln!(
            s,
            "# log {}: {}, {}, {n} sizes used ({} to {}){}",
            l.name,
            l.op,
            ranks_text(f, l.run),
            size(lo),
            size(hi),
            threads_text(f, *l)
        );
    }
    // `--algo` and `--proto` apply to every log alike.
    if let Some(env) = logs.first().and_then(|l| env_text(l.nccl)) {
        let _ = writeln!(s, "# {env}");
    }
    if c.skipped > 0 {
        let _ = writeln!(
            s,
            "# {} rows left out (0 bytes or no positive time)",
            c.skipped
        );
    }
    let _ = writeln!(
        s,
        "#\n# {:>4} {:>5} {:>13} {:>14} {:>11} {:>9} {:>11} {:>9}",
        "log", "line", "size", "op", "measured", "before", "after", "after"
    );
    let _ = writeln!(
        s,
        "# {:>4} {:>5} {:>13} {:>14} {:>11} {:>9} {:>11} {:>9}",
        "", "", "(B)", "", "busbw GB/s", "vs pred", "busbw GB/s", "vs pred"
    );
    for (i, p) in c.points.iter().enumerate() {
        let bw = |t: f64| p.measured_busbw_gbs * p.measured_us / t;
        let _ = writeln!(
            s,
            "  {:>4} {:>5} {:>13} {:>14} {:>11.2} {:>9} {:>11.2} {:>9}",
            p.log + 1,
            p.line,
            p.size,
            p.op.as_str(),
            p.measured_busbw_gbs,
            pct(c.fit.before[i] / p.measured_us - 1.0),
            bw(c.fit.after[i]),
            pct(c.fit.after[i] / p.measured_us - 1.0),
        );
    }
    let cal = &c.fit.calibration;
    let nic = match cal.nic_gbs {
        Some(r) => format!(
            "{r:.2} GB/s per NIC (line rate after headers {:.2} GB/s)",
            c.nominal_nic_gbs
        ),
        None => format!(
            "not identified: no rate below the line rate fits the logs better (the NIC limits \
             no logged size, or the logs run at its line rate); left at the line rate after \
             headers ({:.2} GB/s)",
            c.nominal_nic_gbs
        ),
    };
    let _ = writeln!(s, "#\n# fit: NIC rate {nic}");
    if c.fit.latency_fitted {
        let _ = writeln!(
            s,
            "# fit: latency {:.2} us added to every operation",
            cal.latency_us
        );
    } else {
        let _ = writeln!(
            s,
            "# fit: latency not identified: at every logged size NCCL's latency is under {:.0}% \
             of the predicted time (the bandwidth regime), where an added latency cannot be told \
             from a slower NIC; none added (log sizes down to a few KiB to fit one)",
            study::LATENCY_REGIME_SHARE * 100.0
        );
    }
    let _ = writeln!(
        s,
        "# residual (|predicted - measured| / measured busbw over the {} sizes used): before: {}; \
         after: {}",
        c.points.len(),
        c.busbw_before,
        c.busbw_after
    );
    for w in [poor_fit_text(c, logs), slow_nic_text(f, c, logs)]
        .into_iter()
        .flatten()
    {
        let _ = writeln!(s, "# warning: {w}");
    }
    let _ = writeln!(s, "# wrote {}", out.display());
    s
}

fn residual_json(r: &railyard_sim::calibration::Residual) -> serde_json::Value {
    json!({"median_abs": r.median_abs, "worst_abs": r.worst_abs})
}

fn calibrate_json(f: &Fabric, logs: &[Log<'_>], c: &Calibrated, out: &std::path::Path) -> String {
    let logs_json: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (n, lo, hi) = sizes_used(c, i);
            let (ranks, from) = ranks_of(f, l.run);
            json!({"log": l.name, "op": l.op.as_str(), "ranks": ranks, "ranks_from": from,
                   "sizes_used": n, "min_bytes": lo, "max_bytes": hi})
        })
        .collect();
    let rows: Vec<_> = c
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"log": logs[p.log].name, "line": p.line, "size_bytes": p.size,
                   "op": p.op.as_str(), "measured_busbw_gbs": p.measured_busbw_gbs,
                   "measured_time_us": p.measured_us,
                   "before_time_us": c.fit.before[i], "after_time_us": c.fit.after[i]})
        })
        .collect();
    let cal = &c.fit.calibration;
    let v = json!({
        "design": describe(f),
        "logs": logs_json,
        "algo": logs.first().map_or("auto", |l| env_json(l.nccl).0),
        "protocols": logs.first().map(|l| env_json(l.nccl).1),
        "skipped_rows": c.skipped,
        "nic_gbs": cal.nic_gbs,
        "nic_identified": c.fit.nic_identified,
        "nominal_nic_gbs": c.nominal_nic_gbs,
        "latency_us": cal.latency_us,
        "latency_fitted": c.fit.latency_fitted,
        "poor_fit": poor_fit_text(c, logs),
        "nic_below_needed": slow_nic_text(f, c, logs),
        "residual_before": residual_json(&c.busbw_before),
        "residual_after": residual_json(&c.busbw_after),
        "rows": rows,
        "out": out.display().to_string(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
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

fn flag(r: &study::CheckRow) -> &'static str {
    if r.wrong_data {
        "WRONG DATA"
    } else if r.impossible {
        "IMPOSSIBLE"
    } else if r.below {
        "BELOW"
    } else if r.above {
        "above"
    } else {
        "ok"
    }
}

fn check_text(f: &Fabric, l: Log<'_>, c: &Check, calibrated: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# design: {}", describe(f));
    let _ = writeln!(
        s,
        "# log {}: {}, {}; predicted {}{}",
        l.name,
        l.op,
        ranks_text(f, l.run),
        if calibrated {
            "with the calibration"
        } else {
            "uncalibrated"
        },
        threads_text(f, l)
    );
    if let Some(env) = env_text(l.nccl) {
        let _ = writeln!(s, "# {env}");
    }
    if c.skipped > 0 {
        let _ = writeln!(
            s,
            "# {} rows left out (0 bytes or no positive time)",
            c.skipped
        );
    }
    if let Some(b) = c.bound_busbw_gbs {
        let _ = writeln!(
            s,
            "# the most busbw this design's NICs allow for {}: {b:.2} GB/s",
            l.op
        );
    }
    let _ = writeln!(
        s,
        "#\n# {:>5} {:>13} {:>11} {:>11} {:>9} {:>9} {:>7}  verdict",
        "line", "size", "measured", "predicted", "vs pred", "algo", "proto"
    );
    let units = format!(
        "# {:>5} {:>13} {:>11} {:>11}",
        "", "(B)", "busbw GB/s", "busbw GB/s"
    );
    let _ = writeln!(s, "{units}");
    for r in &c.rows {
        let _ = writeln!(
            s,
            "  {:>5} {:>13} {:>11.2} {:>11.2} {:>9} {:>9} {:>7}  {}",
            r.point.line,
            r.point.size,
            r.point.measured_busbw_gbs,
            r.predicted_busbw_gbs,
            pct(r.error),
            r.predicted.algorithm,
            r.predicted.protocol,
            flag(r)
        );
    }
    let _ = writeln!(
        s,
        "#\n# residual (|predicted - measured| / measured busbw): {}\n# {}",
        c.residual,
        c.verdict()
    );
    s
}

/// What `--algo` and `--proto` left NCCL, where they leave it less than NCCL's default.
fn env_text(env: NcclEnv) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(a) = env.algo.nccl() {
        parts.push(format!("algorithm {} (--algo, as NCCL_ALGO)", a.as_str()));
    }
    if !env.protocols.is_all() {
        parts.push(format!(
            "protocols {} (--proto, as NCCL_PROTO)",
            env.protocols.label()
        ));
    }
    (!parts.is_empty()).then(|| format!("predicted with NCCL left {}", parts.join(" and ")))
}

/// JSON `algo` (`auto` or NCCL_ALGO's name) and `protocols` (those left, as NCCL names them).
fn env_json(env: NcclEnv) -> (&'static str, Vec<&'static str>) {
    (
        env.algo.nccl().map_or("auto", |a| a.as_str()),
        env.protocols.names(),
    )
}

fn check_json(f: &Fabric, l: Log<'_>, c: &Check, calibrated: bool) -> String {
    let rows: Vec<_> = c
        .rows
        .iter()
        .map(|r| {
            json!({"line": r.point.line, "size_bytes": r.point.size,
                   "measured_busbw_gbs": r.point.measured_busbw_gbs,
                   "measured_time_us": r.point.measured_us,
                   "predicted_busbw_gbs": r.predicted_busbw_gbs,
                   "predicted_time_us": r.predicted.time_us,
                   "measured_vs_predicted": r.error, "algorithm": r.predicted.algorithm,
                   "protocol": r.predicted.protocol, "verdict": flag(r),
                   "wrong_data": r.wrong_data, "impossible": r.impossible})
        })
        .collect();
    let v = json!({
        "design": describe(f),
        "log": l.name,
        "op": l.op.as_str(),
        "ranks": ranks_of(f, l.run).0,
        "ranks_from": ranks_of(f, l.run).1,
        "gpus_per_thread": l.run.gpus_per_process.unwrap_or(1),
        "calibrated": calibrated,
        "algo": env_json(l.nccl).0,
        "protocols": env_json(l.nccl).1,
        "tolerance": c.tolerance,
        "skipped_rows": c.skipped,
        "rows": rows,
        "below": c.below(),
        "above": c.above(),
        "wrong_data": c.wrong_data(),
        "impossible": c.impossible(),
        "bound_busbw_gbs": c.bound_busbw_gbs,
        "residual": residual_json(&c.residual),
        "ok": c.ok(),
        "verdict": c.verdict(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
