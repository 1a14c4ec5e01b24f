//! The subcommands.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::io::{print, write_files};
use clap::Args;
use railyard_plan::{output, Plan, Summary};
use railyard_spec::{presets as preset_list, Overrides};
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
}

pub fn plan(a: &PlanArgs) -> Result<(), CliError> {
    let (spec, catalog) = a.design.load(a.preset.as_deref())?;
    let fabric = design::build(&spec, &catalog)?;
    let plan = Plan::new(&fabric, &catalog);
    if let Some(dir) = &a.out {
        let mut files = output::render_files(&fabric, &plan).to_vec();
        files.push(("report.html", crate::report::html(&spec, &fabric, &plan)));
        write_files(dir, &files)?;
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
}

/// One design to compare: a label, where it starts, and its overrides as key=value pairs.
#[derive(Debug, Clone)]
struct Variant {
    label: String,
    base: Option<String>,
    kv: Vec<(String, String)>,
}

fn split_kv(s: &str) -> Result<(String, String), CliError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| CliError::input(format!("`{s}` is not KEY=VALUE")))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

fn variants(a: &CompareArgs) -> Result<Vec<Variant>, CliError> {
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
                .map(split_kv)
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
        let mut next = Vec::with_capacity(out.len() * values.len());
        for base in &out {
            for value in &values {
                let mut v = base.clone();
                let tag = format!("{key}={value}");
                v.label = if a.designs.len() <= 1 && out.len() == 1 {
                    tag.clone()
                } else {
                    format!("{} {tag}", v.label)
                };
                v.kv.push((key.clone(), value.to_string()));
                next.push(v);
            }
        }
        out = next;
    }
    Ok(out)
}

fn plan_variant(a: &CompareArgs, v: &Variant) -> Result<Summary, CliError> {
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
        design::apply_kv(&mut o, k, val)?;
    }
    o.apply(&mut raw)
        .map_err(|e| CliError::input(format!("{}: {e}", v.label)))?;
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, &origin)
        .map_err(|e| CliError::input(format!("{}: {e}", v.label)))?;
    let fabric = railyard_fabric::build(&spec, &catalog)
        .map_err(|e| CliError::input(format!("{}: {origin}: {e}", v.label)))?;
    Ok(Plan::new(&fabric, &catalog).summary)
}

pub fn compare(a: &CompareArgs) -> Result<(), CliError> {
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
    let mut results: Vec<Option<Result<Summary, CliError>>> =
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
        let summary = r.expect("every variant was planned")?;
        designs.push((v.label.clone(), summary));
    }
    if a.json {
        let json: Vec<serde_json::Value> = designs
            .iter()
            .map(|(label, s)| serde_json::json!({ "label": label, "summary": s }))
            .collect();
        let mut text =
            serde_json::to_string_pretty(&serde_json::json!({ "designs": json })).expect("json");
        text.push('\n');
        print(&text)
    } else {
        print(&output::compare_text(&designs))
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
