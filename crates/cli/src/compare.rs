//! `railyard compare` and `railyard report --compare`: designs side by side, each planned and (as
//! asked) simulated on its own thread, printed as a table that fits the terminal, as JSON, or as
//! the decision report's page.

use crate::design::RouteArg;
use crate::design::{self, DesignArgs, Pair, PxnArg, RunOverrides, SharpArg};
use crate::error::CliError;
use crate::given::{flag, Flag, Given};
use crate::io::print;
use crate::output::{Names, Outputs, PathArgs};
use crate::training::{CostArgs, LayoutArgs};
use clap::Args;
use railyard_plan::Plan;
use railyard_sim::routing::RoutingKind;
use railyard_spec::run::Reach;
use railyard_spec::{presets as preset_list, Overrides};
use railyard_study::busbw::{self, Busbw};
use railyard_study::compare::shard as sharded;
use railyard_study::compare::{
    perf, sharp_changes, Compared, Perf, PerfError, PerfRequest, SimSettings,
};
use railyard_study::shard::{Case, Shard};
use railyard_study::tco::Capex;
use railyard_train::model::Model;
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
    /// Routing policy for --perf and --model: dmodk (as OpenSM ftree), ecmp, adaptive; a design's
    /// `routing=` pair overrides it.
    #[arg(long, value_name = "R", default_value = "dmodk", value_parser = design::parse_routing)]
    pub routing: RoutingKind,
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
    pub algo: railyard_sim::collective::AlgoChoice,
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
    pub calibration: railyard_sim::calibration::Calibration,
    /// The fabric as built, evaluated as the first design (`--fabric`).
    pub fabric: Option<&'a std::path::Path>,
    /// The flags given on the command line: one that cannot change the comparison is refused.
    pub given: &'a Given,
    /// The command has `--perf` (`compare`; `report --compare` has none), for the errors.
    pub offers_perf: bool,
    /// Only this shard's designs (`--shard`); every design without.
    pub shard: Option<Shard>,
}

/// One design to compare: its label, where it starts, and its pairs.
#[derive(Debug, Clone)]
struct Variant {
    label: String,
    base: Option<String>,
    pairs: Vec<Pair>,
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

fn split_kv(s: &str) -> Result<(String, String), CliError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| CliError::input(format!("`{s}` is not KEY=VALUE")))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// How many designs the arguments make, from the counts alone: the designs named (or the base one)
/// times the values of every --vary. Refused past --max-designs, before anything is built.
fn sweep_size(j: &Job) -> Result<u64, CliError> {
    let mut factors = vec![j.designs.len().max(1) as u64];
    for v in j.vary {
        let (_, values) = split_kv(v)?;
        factors.push(values.split(',').filter(|s| !s.is_empty()).count() as u64);
    }
    let total = factors
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .unwrap_or(u64::MAX);
    if total > j.max_designs {
        let how = factors
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" x ");
        return Err(CliError::input(format!(
            "compare: {how} = {} designs (designs named x each --vary's values) is past --max-designs {}; sweep fewer values, or raise --max-designs to {} to plan them all",
            if total == u64::MAX { "more than 2^64".to_string() } else { total.to_string() },
            j.max_designs,
            if total == u64::MAX { "that many".to_string() } else { total.to_string() }
        )));
    }
    Ok(total)
}

/// A design's label, named by what differs: `name=` where given; the pairs alone
/// (`tech=roce-400g`) when every design starts from the same base; else `base:pairs`.
fn label_of(base: &str, pairs: &[Pair], same_base: bool) -> String {
    if let Some(name) = pairs.iter().rev().find_map(|p| match p {
        Pair::Name(n) => Some(n.clone()),
        _ => None,
    }) {
        return name;
    }
    let text: Vec<String> = pairs.iter().map(Pair::text).collect();
    match (text.is_empty(), same_base) {
        (true, _) => base.to_string(),
        (false, true) => text.join(","),
        (false, false) => format!("{base}:{}", text.join(",")),
    }
}

fn variants(j: &Job) -> Result<Vec<Variant>, CliError> {
    sweep_size(j)?;
    let mut out = Vec::new();
    if j.designs.is_empty() {
        out.push(Variant {
            label: j
                .design
                .spec
                .as_ref()
                .map_or(preset_list::DEFAULT.to_string(), |p| {
                    p.display().to_string()
                }),
            base: None,
            pairs: Vec::new(),
        });
    }
    let mut named = Vec::new();
    for d in j.designs {
        let (base, rest) = design_base(d);
        let pairs = match rest {
            Some(rest) => rest
                .split(',')
                .map(|pair| split_kv(pair).and_then(|(k, v)| design::parse_pair(&k, &v)))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        // A key given twice would silently take its last value.
        for (i, p) in pairs.iter().enumerate() {
            if let Some(q) = pairs[..i].iter().find(|q| q.key() == p.key()) {
                return Err(CliError::input(format!(
                    "{d}: {} is given twice ({} and {}); give it once",
                    p.key(),
                    q.text(),
                    p.text()
                )));
            }
        }
        named.push((base, pairs));
    }
    // A key swept twice, or swept and set in a design, would silently take the last value.
    let mut swept: Vec<(String, &String)> = Vec::new();
    for v in j.vary {
        let (key, _) = split_kv(v)?;
        let key = canonical_key(&key);
        if let Some((_, first)) = swept.iter().find(|(k, _)| *k == key) {
            return Err(CliError::input(format!(
                "--vary {first} and --vary {v} sweep the same key {key}; give all its values in one --vary"
            )));
        }
        if let Some((d, p)) = j
            .designs
            .iter()
            .zip(&named)
            .find_map(|(d, (_, pairs))| pairs.iter().find(|p| p.key() == key).map(|p| (d, p)))
        {
            return Err(CliError::input(format!(
                "--vary {v} sweeps {key}, which the design {d} sets ({}); set it in one place",
                p.text()
            )));
        }
        swept.push((key, v));
    }
    let same_base = named.windows(2).all(|w| w[0].0 == w[1].0);
    for (base, pairs) in named {
        out.push(Variant {
            label: label_of(&base, &pairs, same_base),
            base: Some(base),
            pairs,
        });
    }
    for v in j.vary {
        let (key, values) = split_kv(v)?;
        let values: Vec<&str> = values.split(',').filter(|s| !s.is_empty()).collect();
        if values.is_empty() {
            return Err(CliError::input(format!(
                "--vary {v}: give at least one value"
            )));
        }
        let parsed = values
            .iter()
            .map(|value| design::parse_pair(&key, value))
            .collect::<Result<Vec<_>, _>>()?;
        let mut next = Vec::with_capacity(out.len() * values.len());
        for base in &out {
            for pair in &parsed {
                let mut v = base.clone();
                let tag = pair.text();
                v.label = match pair {
                    Pair::Name(n) => n.clone(),
                    _ if j.designs.len() <= 1 && out.len() == 1 => tag,
                    _ => format!("{} {tag}", v.label),
                };
                v.pairs.push(pair.clone());
                next.push(v);
            }
        }
        out = next;
    }
    // Two designs of one name= could not be told apart in the table or the verdicts.
    for (i, v) in out.iter().enumerate() {
        let named_so = |v: &Variant| v.pairs.iter().any(|p| matches!(p, Pair::Name(_)));
        if let Some(w) = out[..i]
            .iter()
            .find(|w| w.label == v.label && (named_so(v) || named_so(w)))
        {
            return Err(CliError::input(format!(
                "name={} names two designs ({} and {}); give each design its own name",
                v.label,
                describe_variant(w),
                describe_variant(v)
            )));
        }
    }
    Ok(out)
}

/// The key of a `KEY=VALUE` pair as its table names it (`gpus_per_server` -> `gpus-per-server`),
/// or as given when no table knows it (parsing the pair says so).
fn canonical_key(key: &str) -> String {
    match design::parse_pair_key(key) {
        Some(k) => k.to_string(),
        None => key.to_string(),
    }
}

/// A design as the arguments named it: its base and its pairs (`dgx-h100-superpod:servers=4`).
fn describe_variant(v: &Variant) -> String {
    let base = v.base.as_deref().unwrap_or("the base design");
    let pairs: Vec<String> = v.pairs.iter().map(Pair::text).collect();
    if pairs.is_empty() {
        base.to_string()
    } else {
        format!("{base}:{}", pairs.join(","))
    }
}

/// What a design's run pairs set (`routing=ecmp,tp=4`).
fn run_overrides(v: &Variant) -> RunOverrides {
    let mut run = railyard_spec::run::RunOverrides::default();
    for p in &v.pairs {
        if let Pair::Run(k, val) = p {
            (k.set)(&mut run, val.clone());
        }
    }
    run.into()
}

/// The training flags of `StudyArgs` (clap ids and flags): they lay out and price the step of
/// `--model`, and nothing else.
const TRAINING_FLAGS: [Flag; 21] = [
    flag::TP,
    flag::PP,
    flag::DP,
    flag::EP,
    flag::CP,
    flag::SEQ,
    flag::MICRO_BATCH,
    flag::GLOBAL_BATCH,
    flag::ZERO,
    flag::RECOMPUTE,
    flag::STAGE_LAYERS,
    flag::VP,
    flag::SCHEDULE,
    flag::RECOMPUTE_MODULES,
    flag::TP_OVERLAP,
    flag::FP8_PARAM_GATHER,
    flag::PRECISION,
    flag::FP8_DISPATCH,
    flag::EP_OVERLAP,
    flag::GRAD_REDUCE_IN_BF16,
    flag::EFFICIENCY,
];

/// Flags and pairs that cannot change the comparison, refused before any design is built, naming
/// the flag (or the design and its pair), what is missing and where it does matter. What each
/// reaches (`evaluate_fabric`, `study::compare::perf`): the training flags and layout pairs only
/// the step of `--model`; `--algo` only the all-reduce row of `--perf` (the step and the report's
/// curves run NCCL's own choice); routing, PXN, cables down and host memory only the simulations
/// of `--perf` and `--model` (the report's curves route D-mod-K with every cable up); SHARP and a
/// calibration those and the report's curves; `--seed` the cables `--fail-links` takes down and the ECMP hash of the
/// busbw rows (the step's ECMP hash has a fixed seed); queue pairs only that hash.
fn flags_in_effect(j: &Job, variants: &[Variant]) -> Result<(), CliError> {
    let (s, given) = (j.study, j.given);
    let model = s.model.is_some() || s.model_file.is_some();
    let sims = j.perf || model;
    let refuse = |what: String, why: &str| Err(CliError::input(format!("{what} {why}")));
    let without_model = "has no effect without --model or --model-file: it lays out and prices the training step they predict";
    let (without_perf, without_sims, without_sharp) = if j.offers_perf {
        (
            "has no effect without --perf: it picks the algorithm of the all-reduce busbw row --perf simulates (a --model step runs NCCL's own choice per collective)",
            "has no effect without --perf or --model: only their simulations route traffic, cross rails, take cables down or read host memory",
            "has no effect without --perf, --model or --html: only their simulations reduce in the switches or run calibrated",
        )
    } else {
        (
            "has no effect in report --compare: its busbw curves run NCCL's own choice of algorithm, as a --model step does per collective",
            "has no effect in report --compare without --model: only the training step routes traffic, crosses rails, takes cables down or reads host memory (the busbw curves route D-mod-K with every cable up)",
            "has no effect in report --compare without --model and with --no-sim: only the training step and the busbw curves reduce in the switches or run calibrated",
        )
    };
    // A design's first run pair that reaches only `reach` (the run keys' table says what each
    // reaches), as the refusal names it.
    let pairs = |reach: Reach| {
        variants.iter().find_map(|v| {
            v.pairs
                .iter()
                .find(|p| matches!(p, Pair::Run(k, _) if k.reach == reach))
                .map(|p| format!("{} (design {})", p.text(), describe_variant(v)))
        })
    };
    if !model {
        if let Some(f) = TRAINING_FLAGS.iter().find(|f| given.has(**f)) {
            return refuse(f.long.to_string(), without_model);
        }
        if let Some(pair) = pairs(Reach::TrainingStep) {
            return refuse(pair, without_model);
        }
    }
    if !j.perf {
        if given.has(flag::ALGO) {
            return refuse("--algo".into(), without_perf);
        }
        if let Some(pair) = pairs(Reach::AllReduceRow) {
            return refuse(pair, without_perf);
        }
    }
    if !sims {
        for f in [
            flag::ROUTING,
            flag::PXN,
            flag::FAIL_LINKS,
            flag::FAIL_HOST_LINKS,
            flag::HOST_MEMORY_GBS,
        ] {
            if given.has(f) {
                return refuse(f.long.to_string(), without_sims);
            }
        }
        if let Some(pair) = pairs(Reach::Simulations) {
            return refuse(pair, without_sims);
        }
        if !j.curves {
            for f in [flag::SHARP, flag::CALIBRATION] {
                if given.has(f) {
                    return refuse(f.long.into(), without_sharp);
                }
            }
            if let Some(pair) = pairs(Reach::SimulationsAndCurves) {
                return refuse(pair, without_sharp);
            }
        }
    }
    // The designs whose busbw rows hash (ECMP), each with the queue pairs of its own pair if any;
    // the fabric as built takes the flags.
    let routed = |run: &RunOverrides| match run.routing {
        Some(RouteArg::Policy(kind)) => kind,
        _ => s.routing,
    };
    let mut runs: Vec<RunOverrides> = variants.iter().map(run_overrides).collect();
    if j.fabric.is_some() {
        runs.push(RunOverrides::default());
    }
    let hashing: Vec<&RunOverrides> = runs
        .iter()
        .filter(|r| j.perf && routed(r) == RoutingKind::Ecmp)
        .collect();
    let ecmp_rows = if j.offers_perf {
        "the ECMP hash of --perf's busbw rows, on a design routed by ecmp (--routing ecmp or a routing=ecmp pair)"
    } else {
        "the ECMP hash of compare --perf's busbw rows (report --compare has none)"
    };
    if given.has(flag::SEED)
        && s.fail_links.is_none()
        && s.fail_host_links.is_none()
        && hashing.is_empty()
    {
        return refuse(
            format!("--seed {}", s.seed),
            &format!("has no effect here: it seeds the cables --fail-links and --fail-host-links take down and {ecmp_rows}; no design here has either"),
        );
    }
    if given.has(flag::QPS_PER_CONNECTION) && hashing.iter().all(|r| r.qps_per_connection.is_some())
    {
        return refuse(
            format!("--qps-per-connection {}", s.qps_per_connection),
            &format!("has no effect here: queue pairs matter only to {ecmp_rows}, and no design here has such rows without its own qps-per-connection pair"),
        );
    }
    for v in variants {
        let run = run_overrides(v);
        if run.qps_per_connection.is_some() && !(j.perf && routed(&run) == RoutingKind::Ecmp) {
            let pair = v
                .pairs
                .iter()
                .find(|p| matches!(p, Pair::Run(k, _) if k.reach == Reach::EcmpHash));
            return refuse(
                format!(
                    "{} (design {})",
                    pair.map(Pair::text).unwrap_or_default(),
                    describe_variant(v)
                ),
                &format!("has no effect: queue pairs matter only to {ecmp_rows}, and this design has none"),
            );
        }
    }
    Ok(())
}

/// Plans one design and predicts what was asked of it.
fn evaluate(j: &Job, model: Option<&Model>, v: &Variant) -> Result<Evaluated, CliError> {
    let mut args: DesignArgs = j.design.clone();
    let preset = match &v.base {
        Some(b) if std::path::Path::new(b).is_file() && preset_list::find(b).is_err() => {
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
    let mut o = Overrides::default();
    for p in &v.pairs {
        if let Pair::Design(k, val) = p {
            (k.set)(&mut o, val.clone());
        }
    }
    let run = run_overrides(v);
    o.apply(&mut raw)
        .map_err(|e| CliError::input(format!("{}: {e}", v.label)))?;
    let mut spec = railyard_spec::ClusterSpec::from_raw(&raw, &origin)
        .map_err(|e| CliError::input(format!("{}: {e}", v.label)))?;
    // The design keys that changed it, as `plan` records its flags (`overrides` in the summary).
    let changed: Vec<String> = v
        .pairs
        .iter()
        .filter(|p| matches!(p, Pair::Design(..)))
        .map(Pair::text)
        .collect();
    spec.describe_overrides(&changed);
    let planned = railyard_plan::plan_design(&spec, &catalog, &Default::default())
        .map_err(|e| CliError::input(format!("{}: {origin}: {e}", v.label)))?;
    // The whole cluster: servers and every network.
    let capex = Capex::of(&spec, &catalog, &planned);
    let railyard_plan::Planned { fabric, plan, .. } = planned;
    let mut summary = plan.summary;
    if !v.pairs.is_empty() {
        // Not the preset any more: named by what differs.
        summary.name = v.label.clone();
    }
    let planned = PlannedDesign {
        label: &v.label,
        fabric: &fabric,
        summary,
        capex: capex.as_ref(),
    };
    evaluate_fabric(j, model, planned, &catalog, &run)
}

/// One built design to evaluate: its label, fabric, plan summary and whole cluster's cost.
struct PlannedDesign<'a> {
    label: &'a str,
    fabric: &'a railyard_fabric::Fabric,
    summary: railyard_plan::Summary,
    /// `None` where not known (the fabric as built, or no server price).
    capex: Option<&'a Capex>,
}

/// Predicts what was asked of one built design (a planned variant, or the fabric as built).
fn evaluate_fabric(
    j: &Job,
    model: Option<&Model>,
    d: PlannedDesign,
    catalog: &railyard_catalog::Catalog,
    run: &RunOverrides,
) -> Result<Evaluated, CliError> {
    let PlannedDesign {
        label,
        fabric,
        summary,
        capex,
    } = d;
    let at = |e: CliError| CliError {
        status: e.status,
        message: format!("{label}: {}", e.message),
    };
    let s = j.study;
    let routing = match run.routing {
        Some(RouteArg::Policy(kind)) => kind,
        _ => s.routing,
    };
    let pxn = run.pxn.unwrap_or(s.pxn);
    let sharp = run.sharp.unwrap_or(s.sharp);
    let layout = s.layout.layout(run);
    let step = s.layout.recipe.step_config(s.efficiency).map_err(at)?;
    let failed = crate::sim::failures(
        &[],
        s.fail_links,
        s.fail_host_links,
        s.seed,
        fabric,
        catalog,
    )
    .map_err(at)?;
    let req = PerfRequest {
        busbw: j.perf,
        model: model.map(|m| (m, layout)),
        routing,
        relay: pxn.0,
        sharp: sharp.0,
        costs: s.costs.unchecked(),
        capex,
        step,
        calibration: j.calibration,
        sim: SimSettings {
            algo: run.algo.unwrap_or(s.algo),
            routing: railyard_sim::routing::RoutingConfig {
                seed: s.seed,
                qps_per_connection: run.qps_per_connection.unwrap_or(s.qps_per_connection),
            },
            failed: &failed.links,
            drained: &failed.drained,
            host_memory_gbs: crate::sim::host_memory(s.host_memory_gbs)?,
        },
    };
    let relay = pxn.resolve(fabric);
    let performance: Perf =
        perf(fabric, catalog, &summary, &req).map_err(|e| at(perf_error(e, routing, relay)))?;
    // `--sharp on` for every design: the same prediction with SHARP off is the test, as in
    // `train` (the default ZeRO layouts reduce nothing across servers in the switches). The
    // report's curves are left out of it: with them SHARP is drawn.
    let sharp_moot = sharp.0
        && j.given.has(flag::SHARP)
        && run.sharp.is_none()
        && !j.curves
        && !sharp_changes(fabric, catalog, &summary, &req, &performance);
    let drawing = j
        .drawings
        .then(|| railyard_report::drawing::topology_svg(fabric));
    let busbw = j.curves.then(|| {
        let config = railyard_sim::fabric_net::NetConfig {
            calibration: j.calibration,
            sharp: sharp.0,
            ..Default::default()
        };
        busbw::simulate(fabric, catalog, &config, &mut |_| {})
    });
    Ok(Evaluated {
        compared: Compared {
            label: label.to_string(),
            summary,
            routing: routing.as_str().to_string(),
            pxn: relay.as_str().to_string(),
            sharp: sharp.0,
            performance,
        },
        drawing,
        busbw,
        sharp_moot,
    })
}

fn perf_error(
    e: PerfError,
    routing: RoutingKind,
    relay: railyard_sim::collective::Relay,
) -> CliError {
    match e {
        PerfError::Net(e) => CliError::input(e.to_string()),
        PerfError::Collective(e) => CliError::input(e.to_string()),
        PerfError::Layout(e) => CliError::input(e.to_string()),
        PerfError::Train(e) => crate::training::train_error(e, routing, relay),
        PerfError::Costs(e) => CliError::input(format!("--{e}")),
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
        let bytes = railyard_study::compare::BUSBW_BYTES;
        railyard_sim::time::check_flag_rate(
            "--host-memory-gbs",
            host_memory_gbs,
            bytes,
            &format!("the {bytes}-byte all-reduce and all-to-all compare prices"),
        )
        .map_err(CliError::input)?;
    }
    if let Some(e) = s.efficiency.filter(|e| !(*e > 0.0 && *e <= 1.0)) {
        return Err(CliError::input(format!(
            "--efficiency {}: valid: above 0, at most 1",
            railyard_catalog::number(e)
        )));
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
        s.layout.recipe.for_model(m)?;
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
        let mut summary = Plan::new(&fabric, &catalog).summary;
        let label = path.display().to_string();
        summary.name = label.clone();
        let d = PlannedDesign {
            label: &label,
            fabric: &fabric,
            summary,
            capex: None,
        };
        let e = evaluate_fabric(j, model.as_ref(), d, &catalog, &RunOverrides::default());
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
        Ok(e) => {
            let c = &e.compared;
            let mut s = format!(
                "{label}: network ${}",
                railyard_plan::output::thousands(c.summary.cost_usd.total)
            );
            if let Some(t) = c.performance.step_time_s {
                s.push_str(&format!(", step {t:.3} s"));
            }
            if let Some(b) = c.performance.allreduce_busbw_1g_gbs {
                s.push_str(&format!(", all-reduce {b:.1} GB/s"));
            }
            s
        }
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

/// The decision report of evaluated designs.
pub fn report_html(designs: &[Evaluated], s: &StudyArgs) -> String {
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
    };
    railyard_report::compare::comparison_html(&page)
}

/// The spec files among the designs named (`s.toml`, `s.toml:servers=4`): what a design reads
/// as its base, as [`variants`] and `evaluate` take it.
pub fn design_files(designs: &[String]) -> Vec<std::path::PathBuf> {
    designs
        .iter()
        .map(|d| design_base(d).0)
        .filter(|b| std::path::Path::new(b).is_file() && preset_list::find(b).is_err())
        .map(std::path::PathBuf::from)
        .collect()
}

/// A design's base (a preset or a spec file) and its pairs: `dgx-h100-superpod:servers=4`.
fn design_base(d: &str) -> (String, Option<&str>) {
    let is_base = |s: &str| preset_list::find(s).is_ok() || std::path::Path::new(s).is_file();
    if is_base(d) {
        (d.to_string(), None)
    } else {
        match d.split_once(':') {
            Some((b, rest)) => (b.to_string(), Some(rest)),
            None => (d.to_string(), None),
        }
    }
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
    if let (true, Some(w)) = (a.json && given.has(flag::WIDTH), a.width) {
        return Err(CliError::input(format!(
            "--width {w} has no effect with --json: it sets the columns of the text table; give it without --json"
        )));
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
    let html = a.html.as_ref().map(|_| report_html(&evaluated, &a.study));
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
    let command = railyard_study::shard::recorded_command(&args);
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
