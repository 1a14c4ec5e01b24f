//! `railyard compare` and `railyard report --compare`: designs side by side, each planned and (as
//! asked) simulated on its own thread, printed as a table that fits the terminal, as JSON, or as
//! the decision report's page.

mod designs;

use crate::design::RouteArg;
use crate::design::{self, DesignArgs, Pair, PxnArg, RunOverrides, SharpArg};
use crate::error::CliError;
use crate::given::{flag, Given};
use crate::io::print;
use crate::output::{Names, Outputs, PathArgs};
use crate::training::{CostArgs, LayoutArgs};
use clap::Args;
pub use designs::design_files;
use designs::{describe_variant, run_overrides, variants, Variant};
use railyard_study::busbw::Busbw;
use railyard_study::compare::shard as sharded;
use railyard_study::compare::{self as study, AlgoChoice, Compared, PerfError};
use railyard_study::failures::FailureRequest;
use railyard_study::rules::{self, CompareFacts, DesignFacts, ModelFacts};
use railyard_study::scenario::{Calibration, RoutingConfig};
use railyard_study::shard::{recorded_command, Case, Shard};
use railyard_study::train::{check_efficiency, Model};
use railyard_study::{RoutingKind, RunSettings, Scenario};
use std::io::IsTerminal;
use std::path::PathBuf;

/// The training model and how every design is simulated: the flags `train` and `sim` share with
/// `compare` and `report --compare` (each design may override routing, PXN and the layout with a
/// pair, `DESIGN:routing=adaptive,tp=4`).
#[derive(Debug, Clone, Args)]
pub struct StudyArgs {
    /// Also predict a training step of this model on every design: step time, tokens/s and network
    /// cost per million tokens (see `railyard train`; TP = GPUs per server, DP the rest).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// A model TOML file (same keys as crates/train/models/*.toml) instead of --model.
    #[arg(long, value_name = "FILE")]
    pub model_file: Option<PathBuf>,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Run every FLOP at this fraction of the GPU's dense peak instead of timing each operation
    /// from its shapes on the GPU generation's kernel table, the default (as `train --efficiency`).
    #[arg(long, value_name = "F")]
    pub efficiency: Option<f64>,
    /// Routing policy for --perf and --model: dmodk (as OpenSM ftree), ecmp, adaptive (where the
    /// hardware does it); a design's `routing=` pair overrides it. Default: each design's
    /// technology's (the catalog's default_routing: InfiniBand adaptive, dmodk on switches without
    /// it; RoCE ecmp).
    #[arg(long, value_name = "R", value_parser = design::parse_routing)]
    pub routing: Option<RoutingKind>,
    /// How all-to-all (and the step's expert all-to-all and pipeline sends) cross rails between
    /// servers: `auto` (through the network where it joins the rails, relayed staged on rail-only),
    /// `on` (PXN, pipelined), `off`, `staged`; as for `sim collective`. A design's `pxn=` pair
    /// overrides it.
    #[arg(long, value_name = "auto|on|off|staged", default_value = "auto",
          value_parser = PxnArg::parse)]
    pub pxn: PxnArg,
    /// In-network all-reduce on SHARP switches: `on` lets NCCL use CollNetDirect / CollNetChain
    /// (and NVLS across servers) as with `NCCL_COLLNET_ENABLE=1` and the NCCL-SHARP plugin; `off`
    /// (default) as NCCL runs without the plugin. Refused on a fabric whose switches or NICs do
    /// not support SHARP (the error names them and the valid models). A design's `sharp=` pair
    /// overrides it.
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = SharpArg::parse)]
    pub sharp: SharpArg,
    /// Algorithm of the all-reduce busbw row of --perf: ring, tree, ... or auto (the faster per
    /// size, as NCCL picks), as for `sim collective`; a design's `algo=` pair overrides it.
    #[arg(long, value_name = "A", default_value = "auto", value_parser = design::parse_algo)]
    pub algo: AlgoChoice,
    /// Seed of the ECMP hash (--perf's busbw rows) and of --fail-links, as for `sim collective`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Queue pairs per connection for ECMP in --perf's busbw rows, each hashed on its own
    /// (NCCL_IB_QPS_PER_CONNECTION); a design's `qps-per-connection=` pair overrides it.
    #[arg(long, value_name = "N", default_value = "1", value_parser = design::parse_qps)]
    pub qps_per_connection: u32,
    /// Take N switch-to-switch cables (leaf-spine, spine-core) of every design down, chosen at
    /// random (seeded by --seed), for its busbw rows and its training step; routes go around them.
    #[arg(long, value_name = "N")]
    pub fail_links: Option<usize>,
    /// Take N servers' cables of every design down, chosen at random (seeded by --seed), for its
    /// busbw rows and its training step: each drains its server, and the job runs on the servers
    /// left, as for `sim collective`.
    #[arg(long, value_name = "N")]
    pub fail_host_links: Option<usize>,
    /// Host memory bandwidth per server, GB/s, for GPUDirect RDMA off (default: 2 sockets x 8
    /// DDR5-4800 channels = 614.4), as for `sim collective`.
    #[arg(long, value_name = "GB/S")]
    pub host_memory_gbs: Option<f64>,
    #[command(flatten)]
    pub costs: CostArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub memory: crate::memory::MemoryArgs,
    /// Designs: a preset or spec file, optionally with pairs, e.g.
    /// `dgx-h100-superpod:tech=roce-400g,nics-per-server=2`. Pairs take the design keys, the run
    /// keys `routing`, `pxn`, `algo`, `sharp`, `qps-per-connection`, `tp`, `pp`, `dp`, `ep`,
    /// `micro-batch`, `global-batch`, `zero`, and `name=LABEL`. Without designs, the flags' base
    /// design.
    pub designs: Vec<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// Sweep a key over values, e.g. `--vary nic-ratio=1:1,1:4`, `--vary tech=ib-ndr,roce-400g` or
    /// `--vary routing=ecmp,adaptive`; several --vary flags sweep every combination.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
    /// Print the designs' summaries, layouts and step breakdowns as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also simulate all-reduce and all-to-all at 1 GiB on every design (busbw rows).
    #[arg(long)]
    pub perf: bool,
    #[command(flatten)]
    pub study: StudyArgs,
    #[command(flatten)]
    pub calibration: design::CalibrationArgs,
    /// The fabric as built, compared as the first design: a fabric.json (`import ibnet`, `plan
    /// --out`) or ibnetdiscover / iblinkinfo output, its servers described by --gpu and
    /// --gpus-per-server (--nics-per-server) or --spec.
    #[arg(long, value_name = "FILE")]
    pub fabric: Option<PathBuf>,
    /// Most designs one compare plans (the designs named times every --vary's values); a larger
    /// sweep is refused before any design is built.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_DESIGNS)]
    pub max_designs: u64,
    /// Columns the table may take (default: $COLUMNS on a terminal, else 160). Wider tables label
    /// the designs A, B, ... with a legend and go on in pages.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(40..))]
    pub width: Option<u16>,
    /// Also write the decision report (as `railyard report --compare`) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Evaluate only shard I of N of the designs (the i-th design, from 0, is shard i mod N + 1's)
    /// and write their results to -o DIR as compare-shard-I-of-N.json, for a job array;
    /// `railyard merge DIR` prints what the unsharded compare prints.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse, requires = "out")]
    pub shard: Option<Shard>,
    /// With --shard: the directory the shard's file goes into.
    #[arg(short = 'o', long, value_name = "DIR", requires = "shard")]
    pub out: Option<PathBuf>,
}

/// Designs a compare plans unless `--max-designs` allows more: each design is a whole plan (and
/// simulation, with --perf or --model).
pub const DEFAULT_MAX_DESIGNS: u64 = 64;

/// What a comparison is asked: the designs, the flags they share, and what to predict.
pub struct Job<'a> {
    pub designs: &'a [String],
    pub design: &'a DesignArgs,
    pub vary: &'a [String],
    pub study: &'a StudyArgs,
    /// busbw at 1 GiB rows.
    pub perf: bool,
    pub max_designs: u64,
    /// Each design's drawing, for the report.
    pub drawings: bool,
    /// Each design's busbw curves, for the report.
    pub curves: bool,
    /// A cluster's calibration, applied to every simulation (`--calibration`).
    pub calibration: Calibration,
    /// The fabric as built, evaluated as the first design (`--fabric`).
    pub fabric: Option<&'a std::path::Path>,
    /// The flags given on the command line: one that cannot change the comparison is refused.
    pub given: &'a Given,
    /// The command has `--perf` (`compare`; `report --compare` has none), for the errors.
    pub offers_perf: bool,
    /// Only this shard's designs (`--shard`); every design without.
    pub shard: Option<Shard>,
}

/// A design compared: the row of the table, and for the report its drawing and busbw curves.
pub struct Evaluated {
    pub compared: Compared,
    pub drawing: Option<String>,
    pub busbw: Option<Busbw>,
    /// `--sharp on` reached this design (no `sharp=` pair of its own) and changed nothing it
    /// predicts: the same prediction with SHARP off is identical.
    pub sharp_moot: bool,
}

/// The routing policy of a design's simulations: its `routing=` pair's, else the flag's; `None`:
/// its technology's default.
fn routed(s: &StudyArgs, run: &RunOverrides) -> Option<RoutingKind> {
    match run.routing {
        Some(RouteArg::Policy(kind)) => Some(kind),
        _ => s.routing,
    }
}

/// Flags and pairs that cannot change the comparison, refused before any design is built
/// (study's rules of a comparison, [`rules::compare_keys_in_effect`]).
fn flags_in_effect(j: &Job, variants: &[Variant]) -> Result<(), CliError> {
    let s = j.study;
    let mut designs: Vec<DesignFacts> = variants
        .iter()
        .map(|v| DesignFacts {
            named: describe_variant(v),
            pairs: v
                .pairs
                .iter()
                .filter_map(|p| match p {
                    Pair::Run(k, _) => Some((*k, p.text())),
                    _ => None,
                })
                .collect(),
            // Routed by its technology's default where none is given: ECMP on Ethernet.
            ecmp: match routed(s, &run_overrides(v)) {
                Some(kind) => kind == RoutingKind::Ecmp,
                None => hashes_by_default(j, v),
            },
        })
        .collect();
    // The fabric as built takes the flags.
    if j.fabric.is_some() {
        designs.push(DesignFacts {
            named: String::new(),
            pairs: Vec::new(),
            ecmp: s.routing.is_none_or(|k| k == RoutingKind::Ecmp),
        });
    }
    let facts = CompareFacts {
        model: s.model.is_some() || s.model_file.is_some(),
        perf: j.perf,
        curves: j.curves,
        offers_perf: j.offers_perf,
        seed: s.seed,
        qps_per_connection: s.qps_per_connection,
        random_failures: s.fail_links.is_some() || s.fail_host_links.is_some(),
        designs: &designs,
    };
    rules::compare_keys_in_effect(j.given, &facts).map_err(|e| CliError::input(e.message))
}

/// A design's base spec with the flags' design keys applied, where it came from, its catalog
/// and its design pairs, as [`evaluate`] plans it.
fn base_of(j: &Job, v: &Variant) -> Result<design::Base, CliError> {
    let mut args: DesignArgs = j.design.clone();
    let preset = match &v.base {
        Some(b) if std::path::Path::new(b).is_file() && !design::is_preset(b) => {
            args.spec = Some(PathBuf::from(b));
            None
        }
        other => other.clone(),
    };
    let catalog = args.catalog()?;
    let (mut raw, origin) = args.raw(preset.as_deref())?;
    args.overrides()
        .apply(&mut raw)
        .map_err(|e| CliError::input(e.to_string()))?;
    let pairs: Vec<_> = v
        .pairs
        .iter()
        .filter_map(|p| match p {
            Pair::Design(k, val) => Some((*k, val.clone(), p.text())),
            _ => None,
        })
        .collect();
    Ok((catalog, raw, origin, pairs))
}

/// Whether a design without a routing of its own hashes its flows by its technology's default
/// (RoCE: ECMP), read from its spec before it is planned; a design that cannot be read counts as
/// hashing (its error comes when it is planned).
fn hashes_by_default(j: &Job, v: &Variant) -> bool {
    let Ok((catalog, raw, origin, pairs)) = base_of(j, v) else {
        return true;
    };
    let variant = study::Variant {
        raw,
        origin: &origin,
        label: &v.label,
        pairs: &pairs,
        renamed: false,
    };
    study::hashes_by_default(&variant, &catalog)
}

/// Plans one design and predicts what was asked of it.
fn evaluate(j: &Job, model: Option<&Model>, v: &Variant) -> Result<Evaluated, CliError> {
    let (catalog, raw, origin, pairs) = base_of(j, v)?;
    let run = run_overrides(v);
    let variant = study::Variant {
        raw,
        origin: &origin,
        label: &v.label,
        pairs: &pairs,
        renamed: !v.pairs.is_empty(),
    };
    let settings = run_settings(j, &run)?;
    let scn = study::plan_variant(variant, catalog, &settings).map_err(CliError::input)?;
    evaluate_scenario(j, model, &v.label, scn, &run)
}

/// How a design's simulations run: the flags, with its run pairs over them.
fn run_settings(j: &Job, run: &RunOverrides) -> Result<RunSettings, CliError> {
    let s = j.study;
    Ok(RunSettings {
        routing: routed(s, run),
        qps_per_connection: run.qps_per_connection.unwrap_or(s.qps_per_connection),
        pxn: run.pxn.unwrap_or(s.pxn).0,
        sharp: run.sharp.unwrap_or(s.sharp).0,
        calibration: j.calibration,
        host_memory_gbs: crate::sim::host_memory(s.host_memory_gbs)?,
    })
}

/// Predicts what was asked of one built design (a planned variant, or the fabric as built).
fn evaluate_scenario(
    j: &Job,
    model: Option<&Model>,
    label: &str,
    mut scn: Scenario,
    run: &RunOverrides,
) -> Result<Evaluated, CliError> {
    let at = |e: CliError| CliError {
        status: e.status,
        message: format!("{label}: {}", e.message),
    };
    let s = j.study;
    let step = s.layout.recipe.step_config(s.efficiency).map_err(at)?;
    scn.fail(&FailureRequest {
        cables: &[],
        links: s.fail_links,
        host_links: s.fail_host_links,
        seed: s.seed,
    })
    .map_err(|e| at(CliError::input(e.0)))?;
    let ask = study::Ask {
        label,
        busbw: j.perf,
        model: model.map(|m| (m, s.layout.layout(run))),
        step,
        costs: s.costs.unchecked(),
        algo: run.algo.unwrap_or(s.algo),
        hash: RoutingConfig {
            seed: s.seed,
            qps_per_connection: run.qps_per_connection.unwrap_or(s.qps_per_connection),
        },
        test_sharp: j.given.has(flag::SHARP) && run.sharp.is_none(),
        curves: j.curves,
    };
    let e = study::evaluate(&scn, &ask).map_err(|e| at(perf_error(e, &scn)))?;
    let drawing = j.drawings.then(|| {
        let domain = scn
            .summary
            .racks
            .as_ref()
            .and_then(|r| r.nvlink_domain.as_ref());
        railyard_report::drawing::topology_svg(&scn.fabric, domain)
    });
    Ok(Evaluated {
        compared: e.compared,
        drawing,
        busbw: e.busbw,
        sharp_moot: e.sharp_moot,
    })
}

fn perf_error(e: PerfError, scn: &Scenario) -> CliError {
    match e {
        PerfError::Train(e) => crate::training::train_error(e, scn.routing, scn.relay()),
        PerfError::Costs(e) => CliError::input(format!("--{e}")),
        e => CliError::input(e.to_string()),
    }
}

/// Every design of `j`, planned and simulated on all cores, in the order given. On a terminal,
/// each design is reported on stderr as it finishes.
pub fn evaluate_all(j: &Job) -> Result<Vec<Evaluated>, CliError> {
    let (_, all) = evaluate_cases(j)?;
    let all: Vec<Evaluated> = all.into_iter().map(|(_, e)| e).collect();
    let moot: Vec<(bool, bool)> = all
        .iter()
        .map(|e| (e.compared.sharp, e.sharp_moot))
        .collect();
    match sharded::sharp_refusal(&moot, j.given.has(flag::SHARP)) {
        Some(refusal) => Err(CliError::input(refusal)),
        None => Ok(all),
    }
}

/// The designs of `j` (its shard's only, with `--shard`), each with its index among all of
/// them, and how many there are in all.
fn evaluate_cases(j: &Job) -> Result<(usize, Vec<(usize, Evaluated)>), CliError> {
    let s = j.study;
    s.costs.assumptions()?;
    let host_memory_gbs = crate::sim::host_memory(s.host_memory_gbs)?;
    // Every design's busbw is measured at one size: at the host memory's rate it must fit the
    // simulator's clock, said for the flag before any work.
    if s.host_memory_gbs.is_some() {
        study::check_host_memory(host_memory_gbs).map_err(CliError::input)?;
    }
    if let Some(e) = s.efficiency {
        check_efficiency(e).map_err(CliError::input)?;
    }
    let variants = variants(j)?;
    flags_in_effect(j, &variants)?;
    if variants.len() + usize::from(j.fabric.is_some()) < 2 {
        return Err(CliError::input(
            "compare needs at least two designs: name two presets or spec files, or sweep with --vary KEY=V1,V2",
        ));
    }
    // The fabric as built is case 0, the variants follow.
    let first = usize::from(j.fabric.is_some());
    let cases = first + variants.len();
    if let Some(shard) = j.shard {
        shard
            .check_cases(cases, "designs")
            .map_err(CliError::input)?;
    }
    let takes = |case: usize| j.shard.is_none_or(|s| s.takes(case));
    let todo: Vec<usize> = (0..variants.len()).filter(|i| takes(first + i)).collect();
    let model = match (&s.model, &s.model_file) {
        (None, None) => None,
        (name, file) => Some(crate::training::load_model(
            name.as_deref(),
            file.as_deref(),
        )?),
    };
    if let Some(m) = &model {
        let facts = ModelFacts {
            name: &m.name,
            experts: m.experts,
        };
        rules::model_keys_in_effect(j.given, &facts).map_err(|e| CliError::input(e.message))?;
    }
    let tty = std::io::stderr().is_terminal();
    let n = todo.len();
    if tty {
        crate::io::say!("railyard: compare: {n} designs");
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(n);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Evaluated, CliError>)>();
    let mut results: Vec<Option<Result<Evaluated, CliError>>> = (0..n).map(|_| None).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, variants, todo, model) = (&next, &variants, &todo, model.as_ref());
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= todo.len() {
                    break;
                }
                let r = evaluate(j, model, &variants[todo[i]]);
                // The receiver lives until every sender is gone.
                let _ = tx.send((i, r));
            });
        }
        drop(tx);
        for (done, (i, r)) in rx.iter().enumerate() {
            if tty {
                crate::io::say!(
                    "railyard: [{}/{n}] {}",
                    done + 1,
                    finished_line(&variants[todo[i]].label, &r)
                );
            }
            results[i] = Some(r);
        }
    });
    let mut all = Vec::with_capacity(n + 1);
    if let Some(path) = j.fabric.filter(|_| takes(0)) {
        // The fabric as built, as the first design: discovery output or fabric.json, its servers
        // furnished from the server flags (`study::discovered`).
        let (fabric, catalog) = crate::fabric_arg::design_fabric(None, j.design, Some(path))?;
        let label = path.display().to_string();
        let run = RunOverrides::default();
        let e = run_settings(j, &run).and_then(|settings| {
            let mut scn = Scenario::built(fabric, catalog, &settings);
            scn.summary.name = label.clone();
            evaluate_scenario(j, model.as_ref(), &label, scn, &run)
        });
        all.push((0, e));
    }
    all.extend(todo.iter().zip(results).map(|(&i, r)| {
        let r = r.unwrap_or_else(|| Err(CliError::failed("a design was not evaluated")));
        (first + i, r)
    }));
    let all = all
        .into_iter()
        .map(|(i, r)| r.map(|e| (i, e)))
        .collect::<Result<_, _>>()?;
    Ok((cases, all))
}

/// The progress line of a finished design: its label and its headline numbers.
fn finished_line(label: &str, r: &Result<Evaluated, CliError>) -> String {
    match r {
        Err(e) => format!("{label}: error: {e}"),
        Ok(e) => e.compared.progress(),
    }
}

/// Columns of the table: as asked, else the terminal's $COLUMNS, else 160.
pub fn table_width(asked: Option<u16>) -> usize {
    asked.map(usize::from).unwrap_or_else(|| {
        std::io::stdout()
            .is_terminal()
            .then(|| std::env::var("COLUMNS").ok()?.parse::<usize>().ok())
            .flatten()
            .filter(|&w| w >= 40)
            .unwrap_or(160)
    })
}

/// The model's name for the table's rows.
fn model_name(s: &StudyArgs) -> String {
    match (&s.model, &s.model_file) {
        (Some(m), _) => m.clone(),
        (None, Some(f)) => f.display().to_string(),
        (None, None) => String::new(),
    }
}

/// The decision report of evaluated designs, with the command line and run keys of `inv`.
pub fn report_html(
    designs: &[Evaluated],
    s: &StudyArgs,
    inv: railyard_report::reproduce::Invocation,
) -> String {
    let page = railyard_report::compare::ComparisonReport {
        designs: designs
            .iter()
            .map(|e| railyard_report::compare::ComparedDesign {
                compared: &e.compared,
                drawing: e.drawing.clone().unwrap_or_default(),
                busbw: e.busbw.clone().unwrap_or_default(),
            })
            .collect(),
        model: model_name(s),
        amortize_years: s.costs.amortize_years,
        invocation: inv,
    };
    railyard_report::compare::comparison_html(&page)
}

/// The study's run keys as clap defines them: every flag of `StudyArgs` (with the layout's and
/// the costs' it flattens) and `--calibration`. Walked from the structs, so a key added to them
/// is in the report without a list to update.
pub fn run_key_args() -> Vec<clap::Arg> {
    let c = StudyArgs::augment_args(clap::Command::new("study"));
    let c = design::CalibrationArgs::augment_args(c);
    c.get_arguments()
        .filter(|a| a.get_long().is_some())
        .cloned()
        .collect()
}

/// The command line as typed (`argv`) and every run key with its value as `given` holds it, for
/// the decision report to be run again.
pub fn invocation(argv: Vec<String>, given: &Given) -> railyard_report::reproduce::Invocation {
    let run_keys = run_key_args()
        .iter()
        .map(|a| {
            let id = a.get_id().as_str();
            railyard_report::reproduce::RunKeyRow {
                key: format!("--{}", a.get_long().unwrap_or(id)),
                value: given.value(id).unwrap_or_default(),
                given: given.has_id(id),
                help: a.get_help().map(|h| h.to_string()).unwrap_or_default(),
            }
        })
        .collect();
    railyard_report::reproduce::Invocation { argv, run_keys }
}

/// The arguments this process was started with, the program first by its file name (`railyard`,
/// not the path it was found at: the page is the same wherever the binary lives).
pub fn argv() -> Vec<String> {
    std::env::args_os()
        .enumerate()
        .map(|(i, a)| match i {
            0 => std::path::Path::new(&a)
                .file_name()
                .unwrap_or(&a)
                .to_string_lossy()
                .into_owned(),
            _ => a.to_string_lossy().into_owned(),
        })
        .collect()
}

impl StudyArgs {
    /// `p` with `--model-file`'s file.
    pub fn paths(&self, p: PathArgs) -> PathArgs {
        p.inputs("--model-file", &self.model_file)
    }
}

impl CompareArgs {
    /// What `compare` reads and writes, for the output check.
    pub fn paths(&self) -> PathArgs {
        let p = self.design.paths(PathArgs::default());
        let p = self.calibration.paths(self.study.paths(p));
        let shard_file = self.shard.map(|s| s.file_name("compare"));
        p.inputs("--fabric", &self.fabric)
            .inputs("DESIGN", design_files(&self.designs))
            .output_file("--html", self.html.as_ref())
            .output_dir(
                "--out",
                self.out.as_ref(),
                Names::Exact(shard_file.into_iter().collect()),
            )
    }
}

pub fn run(a: &CompareArgs, given: &Given, outputs: &Outputs) -> Result<(), CliError> {
    a.memory.apply();
    if let Some(width) = a.width {
        let facts = rules::TableFacts {
            json: a.json,
            width,
        };
        rules::table_keys_in_effect(given, &facts).map_err(|e| CliError::input(e.message))?;
    }
    if let (Some(shard), Some(html)) = (a.shard, &a.html) {
        return Err(CliError::input(format!(
            "--html {} cannot be given with --shard {shard}: the report needs every design, and a shard has only its own; run compare --html unsharded",
            html.display()
        )));
    }
    let job = Job {
        designs: &a.designs,
        design: &a.design,
        vary: &a.vary,
        study: &a.study,
        perf: a.perf,
        max_designs: a.max_designs,
        drawings: a.html.is_some(),
        curves: a.html.is_some(),
        calibration: a.calibration.load()?,
        fabric: a.fabric.as_deref(),
        given,
        offers_perf: true,
        shard: a.shard,
    };
    let context = sharded::Context {
        model: model_name(&a.study),
        costs: a.study.costs.unchecked(),
        calibration_note: a.calibration.note(&job.calibration),
        calibration_json: a.calibration.json_key(&job.calibration).map(|(_, v)| v),
        sharp_given: given.has(flag::SHARP),
    };
    if let (Some(shard), Some(dir)) = (a.shard, &a.out) {
        return write_shard(&job, (shard, dir), context, outputs);
    }
    let evaluated = evaluate_all(&job)?;
    let html = a
        .html
        .as_ref()
        .map(|_| report_html(&evaluated, &a.study, invocation(argv(), given)));
    let designs: Vec<Compared> = evaluated.into_iter().map(|e| e.compared).collect();
    let text = sharded::render(&designs, &context, a.json, table_width(a.width));
    if let Some(html) = html {
        outputs.write_file("--html", html, false)?;
    }
    print(&text)
}

/// `--shard I/N -o DIR`: this shard's designs evaluated and written to DIR whole, for `railyard
/// merge`; a line on stdout says which.
fn write_shard(
    job: &Job,
    (shard, dir): (Shard, &std::path::Path),
    context: sharded::Context,
    outputs: &Outputs,
) -> Result<(), CliError> {
    let (cases, evaluated) = evaluate_cases(job)?;
    let labels: Vec<String> = evaluated
        .iter()
        .map(|(i, e)| format!("{} {}", i + 1, e.compared.label))
        .collect();
    let results = evaluated
        .into_iter()
        .map(|(index, e)| Case {
            index,
            result: sharded::Evaluated {
                design: e.compared,
                sharp_moot: e.sharp_moot,
            },
        })
        .collect();
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let command = recorded_command(&args);
    let name = shard.file_name("compare");
    let text = sharded::shard_file(command, shard, cases, context, results);
    let Some(mut staging) = outputs.dir("--out") else {
        return Err(CliError::failed("--shard without -o (clap requires it)"));
    };
    staging.write(&name, text)?;
    staging.commit_quietly()?;
    print(&format!(
        "compare shard {shard}: {} of {cases} designs ({}) written to {}\n",
        labels.len(),
        labels.join(", "),
        dir.join(&name).display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Issue 36: the decision report names every run key of the study. The keys are walked from
    /// `StudyArgs` and `CalibrationArgs` (a key added to them is listed without a list to
    /// update); each is a row of the report's table with its value and where it came from, and
    /// the keys the issue names are among them.
    #[test]
    fn the_report_lists_every_run_key_with_its_value_and_source() {
        let m = crate::Cli::command().get_matches_from([
            "railyard",
            "report",
            "--compare",
            "a",
            "b",
            "--model",
            "llama3-70b",
            "--pxn",
            "on",
            "-o",
            "x.html",
        ]);
        let given = Given::of(crate::given::innermost(&m));
        let inv = invocation(vec!["railyard".to_string()], &given);
        let html = railyard_report::reproduce::section(&inv);
        let keys = run_key_args();
        for a in &keys {
            let long = a.get_long().unwrap();
            assert!(
                html.contains(&format!("<tr><td><code>--{long}</code></td>")),
                "--{long} is not in the report"
            );
        }
        let longs: Vec<&str> = keys.iter().filter_map(|a| a.get_long()).collect();
        for k in [
            "precision",
            "fp8-dispatch",
            "ep-overlap",
            "efficiency",
            "calibration",
            "routing",
            "pxn",
            "qps-per-connection",
            "schedule",
            "recompute",
            "seq",
            "micro-batch",
            "global-batch",
            "sharp",
            "algo",
        ] {
            assert!(longs.contains(&k), "--{k} is not a run key");
        }
        assert!(html.contains("<tr><td><code>--pxn</code></td><td>on</td><td>given</td>"));
        assert!(html.contains("<tr><td><code>--micro-batch</code></td><td>1</td><td>default</td>"));
        assert!(html
            .contains("<tr><td><code>--efficiency</code></td><td></td><td>default (unset)</td>"));
    }
}
