//! The subcommands.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::io::{print, Staging};
use clap::Args;
use railyard_plan::{output, Summary};
use railyard_spec::keys::{DesignKey, Value};
use railyard_spec::{presets as preset_list, Overrides};
use railyard_study::compare::{
    compare_json, compare_table, perf, Compared, Perf, PerfError, PerfRequest,
};
use railyard_study::tco::{Assumptions, Capex};
use railyard_train::parallel::Layout;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Built-in design to start from (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// Write bom.csv, cabling.csv, fabric.json, summary.json and report.html into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also list the next N designs of the search, with their cost and what differs.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub alternatives: u32,
}

pub fn plan(a: &PlanArgs) -> Result<(), CliError> {
    let (spec, catalog) = a.design.load(a.preset.as_deref())?;
    let opts = railyard_fabric::SearchOptions {
        alternatives: a.alternatives as usize,
    };
    let planned = railyard_plan::plan_design(&spec, &catalog, &opts)
        .map_err(|e| CliError::input(format!("{}: {e}", spec.origin)))?;
    let network_files = output::network_files(&planned);
    let railyard_plan::Planned { fabric, plan, .. } = planned;
    if let Some(dir) = &a.out {
        let mut staging = Staging::new(dir)?;
        // cabling.csv (45 MB at 131,072 GPUs) streams into its temp file as it renders.
        let (cabling_tmp, cabling_file) = staging.create("cabling.csv")?;
        let mut cabling = std::io::BufWriter::with_capacity(1 << 20, cabling_file);
        // The report renders beside the other files (which take two threads of their own).
        let (files, report) = std::thread::scope(|s| {
            let report = s.spawn(|| crate::report::html(&spec, &fabric, &plan));
            (
                output::render_files(&fabric, &plan, &mut cabling),
                report.join(),
            )
        });
        let cabling_err =
            |e: std::io::Error| CliError::failed(format!("{}: {e}", cabling_tmp.display()));
        let files = files.map_err(cabling_err)?;
        std::io::Write::flush(&mut cabling).map_err(cabling_err)?;
        drop(cabling);
        let report = report.unwrap_or_else(|e| std::panic::resume_unwind(e));
        for (name, text) in files
            .iter()
            .map(|(n, t)| (*n, t.as_str()))
            .chain([("report.html", report.as_str())])
            .chain(network_files.iter().map(|(n, t)| (n.as_str(), t.as_str())))
        {
            staging.write(name, text.as_bytes())?;
        }
        staging.commit()?;
    }
    // A large fabric is millions of small allocations and the process is about to exit, which returns
    // its memory at once: skip freeing them one by one (tens of ms at 131,072 GPUs).
    std::mem::forget(fabric);
    if a.json {
        print(&output::summary_json(&plan.summary))
    } else {
        print(&output::summary_text(&plan.summary))
    }
}

pub fn presets() -> Result<(), CliError> {
    let width = preset_list::PRESETS
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for p in preset_list::PRESETS {
        let spec = preset_list::load(p.name).map_err(|e| CliError::failed(e.to_string()))?;
        let default = if p.name == preset_list::DEFAULT {
            " (default)"
        } else {
            ""
        };
        let _ = writeln!(out, "{:<width$}  {}{default}", p.name, spec.description);
    }
    print(&out)
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Designs: a preset or spec file, optionally with overrides, e.g.
    /// `dgx-h100-superpod:tech=roce-400g,nics-per-server=2`. Without designs, the flags' base design.
    pub designs: Vec<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// Sweep a key over values, e.g. `--vary nic-ratio=1:1,1:4` or `--vary tech=ib-ndr,roce-400g`;
    /// several --vary flags sweep every combination.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
    /// Print the designs' summaries as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also simulate all-reduce and all-to-all at 1 GiB on every design (busbw rows).
    #[arg(long)]
    pub perf: bool,
    /// Also predict a training step of this model on every design: step time, tokens/s and network
    /// cost per million tokens (see `railyard train`; TP = GPUs per server, DP the rest).
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Tensor parallelism for --model (default the GPUs per server).
    #[arg(long, value_name = "N")]
    pub tp: Option<u32>,
    /// Pipeline stages for --model.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pp: u32,
    /// Expert parallelism for --model (divides the data parallelism).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub ep: u32,
    /// Sequences per step for --model (default 8 micro-batches per data-parallel rank).
    #[arg(long, value_name = "N")]
    pub global_batch: Option<u64>,
    /// Routing policy for --perf and --model: dmodk (as OpenSM ftree), ecmp, adaptive.
    #[arg(long, value_name = "R", default_value = "dmodk", value_parser = crate::design::parse_routing)]
    pub routing: railyard_sim::routing::RoutingKind,
    /// How all-to-all (and the step's expert all-to-all and pipeline sends) cross rails between
    /// servers: `auto` (through the network where it joins the rails, relayed staged on rail-only),
    /// `on` (PXN, pipelined), `off`, `staged`; as for `sim collective`.
    #[arg(long, value_name = "auto|on|off|staged", default_value = "auto",
          value_parser = crate::design::PxnArg::parse)]
    pub pxn: crate::design::PxnArg,
    /// Years over which the hardware is paid off, for the costs per million tokens (an assumption).
    #[arg(long, value_name = "Y", default_value_t = 4.0)]
    pub amortize_years: f64,
    /// Power usage effectiveness of the hall, for the cluster's cost per million tokens (an
    /// assumption; default the 2023 industry average, Uptime Institute).
    #[arg(long, value_name = "R", default_value_t = railyard_study::tco::DEFAULT_PUE)]
    pub pue: f64,
    /// Electricity price in US dollars per kWh, for the cluster's cost per million tokens (an
    /// assumption; default the 2023 US industrial average, EIA).
    #[arg(long, value_name = "USD", default_value_t = railyard_study::tco::DEFAULT_USD_PER_KWH)]
    pub usd_per_kwh: f64,
    /// Most designs one compare plans (the designs named times every --vary's values); a larger
    /// sweep is refused before any design is built.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_DESIGNS)]
    pub max_designs: u64,
}

/// Designs a compare plans unless `--max-designs` allows more: a table of 64 columns is already
/// past reading, and each design is a whole plan (and simulation, with --perf or --model).
pub const DEFAULT_MAX_DESIGNS: u64 = 64;

/// One design to compare: a label, where it starts, and its overrides: design keys and values,
/// parsed from key=value pairs.
#[derive(Debug, Clone)]
struct Variant {
    label: String,
    base: Option<String>,
    kv: Vec<(&'static DesignKey, Value)>,
}

fn split_kv(s: &str) -> Result<(String, String), CliError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| CliError::input(format!("`{s}` is not KEY=VALUE")))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// How many designs the arguments make, from the counts alone: the designs named (or the base one)
/// times the values of every --vary. Refused past --max-designs, before anything is built.
fn sweep_size(a: &CompareArgs) -> Result<u64, CliError> {
    let mut factors = vec![a.designs.len().max(1) as u64];
    for v in &a.vary {
        let (_, values) = split_kv(v)?;
        factors.push(values.split(',').filter(|s| !s.is_empty()).count() as u64);
    }
    let total = factors
        .iter()
        .try_fold(1u64, |acc, &n| acc.checked_mul(n))
        .unwrap_or(u64::MAX);
    if total > a.max_designs {
        let how = factors
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" x ");
        return Err(CliError::input(format!(
            "compare: {how} = {} designs (designs named x each --vary's values) is past --max-designs {}; sweep fewer values, or raise --max-designs to {} to plan them all",
            if total == u64::MAX { "more than 2^64".to_string() } else { total.to_string() },
            a.max_designs,
            if total == u64::MAX { "that many".to_string() } else { total.to_string() }
        )));
    }
    Ok(total)
}

fn variants(a: &CompareArgs) -> Result<Vec<Variant>, CliError> {
    let size = sweep_size(a)?;
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) && size > 2 {
        eprintln!("railyard: compare: {size} designs");
    }
    let mut out = Vec::new();
    if a.designs.is_empty() {
        out.push(Variant {
            label: a
                .design
                .spec
                .as_ref()
                .map_or(preset_list::DEFAULT.to_string(), |p| {
                    p.display().to_string()
                }),
            base: None,
            kv: Vec::new(),
        });
    }
    for d in &a.designs {
        let is_base = |s: &str| preset_list::find(s).is_ok() || std::path::Path::new(s).is_file();
        let (base, rest) = if is_base(d) {
            (d.clone(), None)
        } else {
            match d.split_once(':') {
                Some((b, rest)) => (b.to_string(), Some(rest)),
                None => (d.clone(), None),
            }
        };
        let kv = match rest {
            Some(rest) => rest
                .split(',')
                .map(|pair| split_kv(pair).and_then(|(k, v)| design::parse_kv(&k, &v)))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        out.push(Variant {
            label: d.clone(),
            base: Some(base),
            kv,
        });
    }
    for v in &a.vary {
        let (key, values) = split_kv(v)?;
        let values: Vec<&str> = values.split(',').filter(|s| !s.is_empty()).collect();
        if values.is_empty() {
            return Err(CliError::input(format!(
                "--vary {v}: give at least one value"
            )));
        }
        let parsed = values
            .iter()
            .map(|value| design::parse_kv(&key, value))
            .collect::<Result<Vec<_>, _>>()?;
        let mut next = Vec::with_capacity(out.len() * values.len());
        for base in &out {
            for (value, kv) in values.iter().zip(&parsed) {
                let mut v = base.clone();
                let tag = format!("{key}={value}");
                v.label = if a.designs.len() <= 1 && out.len() == 1 {
                    tag.clone()
                } else {
                    format!("{} {tag}", v.label)
                };
                v.kv.push(kv.clone());
                next.push(v);
            }
        }
        out = next;
    }
    Ok(out)
}

fn plan_variant(a: &CompareArgs, v: &Variant) -> Result<(Summary, Perf), CliError> {
    let mut args: DesignArgs = a.design.clone();
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
    for (k, val) in &v.kv {
        (k.set)(&mut o, val.clone());
    }
    o.apply(&mut raw)
        .map_err(|e| CliError::input(format!("{}: {e}", v.label)))?;
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, &origin)
        .map_err(|e| CliError::input(format!("{}: {e}", v.label)))?;
    let planned = railyard_plan::plan_design(&spec, &catalog, &Default::default())
        .map_err(|e| CliError::input(format!("{}: {origin}: {e}", v.label)))?;
    let capex = Capex::of(&spec, &catalog, &planned);
    let perf = perf_of(
        a,
        &planned.fabric,
        &catalog,
        &planned.plan.summary,
        capex.as_ref(),
    )
    .map_err(|e| CliError {
        status: e.status,
        message: format!("{}: {}", v.label, e.message),
    })?;
    Ok((planned.plan.summary, perf))
}

/// Busbw at 1 GiB and the training step, as asked for.
fn perf_of(
    a: &CompareArgs,
    fabric: &railyard_fabric::Fabric,
    catalog: &railyard_catalog::Catalog,
    summary: &Summary,
    capex: Option<&Capex>,
) -> Result<Perf, CliError> {
    let model = match &a.model {
        Some(name) => Some(crate::train::load_model(Some(name), None)?),
        None => None,
    };
    let layout = Layout {
        tp: a.tp,
        pp: a.pp,
        dp: None,
        ep: a.ep,
        seq: None,
        micro_batch: 1,
        global_batch: a.global_batch,
        zero: 1,
        recompute: false,
    };
    let req = PerfRequest {
        busbw: a.perf,
        model: model.as_ref().map(|m| (m, layout)),
        routing: a.routing,
        relay: a.pxn.0,
        costs: a.costs(),
    };
    perf(fabric, catalog, summary, capex, &req).map_err(|e| match e {
        PerfError::Net(e) => CliError::input(e.to_string()),
        PerfError::Collective(e) => CliError::input(e.to_string()),
        PerfError::Layout(e) => CliError::input(e.to_string()),
        PerfError::Train(e) => {
            let relay = a.pxn.resolve(fabric);
            crate::train::train_error(e, a.routing, relay)
        }
        PerfError::Costs(e) => CliError::input(format!("--{e}")),
    })
}

impl CompareArgs {
    /// The cost assumptions of the flags.
    fn costs(&self) -> Assumptions {
        Assumptions {
            amortize_years: self.amortize_years,
            pue: self.pue,
            usd_per_kwh: self.usd_per_kwh,
        }
    }
}

pub fn compare(a: &CompareArgs) -> Result<(), CliError> {
    a.costs()
        .check()
        .map_err(|e| CliError::input(format!("--{e}")))?;
    let variants = variants(a)?;
    if variants.len() < 2 {
        return Err(CliError::input(
            "compare needs at least two designs: name two presets or spec files, or sweep with --vary KEY=V1,V2",
        ));
    }
    // Designs are independent: plan them on all cores, keeping the given order.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(variants.len());
    let mut results: Vec<Option<Result<(Summary, Perf), CliError>>> =
        (0..variants.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let chunks = results.chunks_mut(variants.len().div_ceil(threads));
        for (c, slot) in chunks.enumerate() {
            let start = c * variants.len().div_ceil(threads);
            let variants = &variants;
            s.spawn(move || {
                for (i, r) in slot.iter_mut().enumerate() {
                    *r = Some(plan_variant(a, &variants[start + i]));
                }
            });
        }
    });
    let mut designs = Vec::with_capacity(variants.len());
    for (v, r) in variants.iter().zip(results) {
        let (summary, performance) = r.expect("every variant was planned")?;
        designs.push(Compared {
            label: v.label.clone(),
            summary,
            performance,
        });
    }
    if a.json {
        print(&compare_json(&designs))
    } else {
        let model = a.model.clone().unwrap_or_default();
        print(&compare_table(&designs, &model, &a.costs()))
    }
}

#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// Only this kind: switch, nic, gpu, cable, transceiver, fibre.
    pub kind: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
}

pub fn catalog(a: &CatalogArgs) -> Result<(), CliError> {
    let c = a.design.catalog()?;
    let kinds = ["switch", "nic", "gpu", "cable", "transceiver", "fibre"];
    if let Some(k) = &a.kind {
        if !kinds.contains(&k.as_str()) {
            return Err(CliError::input(format!(
                "unknown kind `{k}`; valid: {}",
                kinds.join(", ")
            )));
        }
    }
    let want = |k: &str| a.kind.as_deref().is_none_or(|w| w == k);
    let price = |p: &railyard_catalog::Price| {
        let per_m = if p.per_m_usd > 0.0 {
            format!(" + ${}/m", p.per_m_usd)
        } else {
            String::new()
        };
        format!(
            "${}{per_m}{}",
            output::thousands(p.usd),
            if p.estimate { " (estimate)" } else { "" }
        )
    };
    let mut o = String::new();
    if want("switch") {
        let _ = writeln!(o, "switches:");
        for s in c.switches.values() {
            let modes: Vec<String> = s
                .modes
                .iter()
                .map(|m| format!("{} x {}", m.ports, m.name))
                .collect();
            let _ = writeln!(
                o,
                "  {:<9} {} | {} | {}",
                s.id,
                modes.join(", "),
                price(&s.price),
                s.source
            );
        }
    }
    if want("nic") {
        let _ = writeln!(o, "NICs:");
        for n in c.nics.values() {
            let techs: Vec<&str> = n.techs.iter().map(|t| t.as_str()).collect();
            let _ = writeln!(
                o,
                "  {:<16} {} x {}G, PCIe Gen{} x{}, {} | {} | {}",
                n.id,
                n.ports,
                n.port_gbps,
                n.pcie_gen,
                n.pcie_lanes,
                techs.join("/"),
                price(&n.price),
                n.source
            );
        }
    }
    if want("gpu") {
        let _ = writeln!(o, "GPUs:");
        for g in c.gpus.values() {
            let _ = writeln!(
                o,
                "  {:<5} NVLink {} x {} GB/s, PCIe Gen{} x{}, {} TFLOPS BF16 | {}",
                g.id,
                g.nvlink_links,
                g.nvlink_gbs_per_link,
                g.pcie_gen,
                g.pcie_lanes,
                g.peak_tflops_bf16,
                g.source
            );
        }
    }
    if want("cable") {
        let _ = writeln!(o, "cables:");
        for x in c.cables.values() {
            let _ = writeln!(
                o,
                "  {:<16} {} up to {} m | {} | {}",
                x.id,
                x.kind.as_str(),
                x.reach_m(),
                price(&x.price),
                x.source
            );
        }
    }
    if want("transceiver") {
        let _ = writeln!(o, "transceivers:");
        for x in c.transceivers.values() {
            let _ = writeln!(
                o,
                "  {:<22} {} port(s), {:?} {} m | {} | {}",
                x.id,
                x.ports,
                x.fibre,
                x.reach_m,
                price(&x.price),
                x.source
            );
        }
    }
    if want("fibre") {
        let _ = writeln!(o, "fibre:");
        for x in c.fibres.values() {
            let _ = writeln!(
                o,
                "  {:<10} {:?} | {} | {}",
                x.id,
                x.kind,
                price(&x.price),
                x.source
            );
        }
    }
    print(&o)
}
