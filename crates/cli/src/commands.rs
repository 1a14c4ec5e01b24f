//! The subcommands.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::io::print;
use crate::output::{Names, Outputs, PathArgs};
use clap::Args;
use railyard_study::design::{output, places, presets as preset_list, Planned};
use railyard_study::parts::{self, PartFilter};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Built-in design to start from (see `railyard presets`); default dgx-h100-superpod.
    pub preset: Option<String>,
    #[command(flatten)]
    pub design: DesignArgs,
    /// Write bom.csv, cabling.csv, fabric.json, summary.json and report.html into DIR
    /// (`-o`, `--output`: the same flag, as in `report` and `export`).
    #[arg(
        short = 'o',
        long = "out",
        visible_alias = "output",
        value_name = "DIR"
    )]
    pub out: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also list the next N designs of the search, with their cost and what differs.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub alternatives: u32,
}

/// Every file `plan --out` writes: the files of `output::render_files` and `output::network_files`,
/// and report.html. The output check knows them before any work (`plan --spec out/fabric.json -o
/// out` is refused); staging any other name is refused as a bug.
const PLAN_FILES: [&str; 11] = [
    "bom.csv",
    "cabling.csv",
    "fabric.json",
    "summary.json",
    "report.html",
    "storage-bom.csv",
    "storage-cabling.csv",
    "in-band-bom.csv",
    "in-band-cabling.csv",
    "out-of-band-bom.csv",
    "out-of-band-cabling.csv",
];

impl PlanArgs {
    /// What `plan` reads and writes, for the output check.
    pub fn paths(&self) -> PathArgs {
        self.design.paths(PathArgs::default()).output_dir(
            "--out",
            self.out.as_ref(),
            Names::exact(&PLAN_FILES),
        )
    }
}

pub fn plan(a: &PlanArgs, outputs: &Outputs) -> Result<(), CliError> {
    let (spec, catalog) = a.design.load(a.preset.as_deref())?;
    let planned = design::plan(&spec, &catalog, a.alternatives as usize)?;
    let network_files = output::network_files(&planned, &catalog);
    let Planned { fabric, plan, .. } = planned;
    if let Some(mut staging) = outputs.dir("--out") {
        // cabling.csv (45 MB at 131,072 GPUs) streams into its temp file as it renders.
        let (cabling_tmp, cabling_file) = staging.create("cabling.csv")?;
        let mut cabling = std::io::BufWriter::with_capacity(1 << 20, cabling_file);
        // Where every device stands, for cabling.csv's rack columns.
        let places = places(&fabric, &spec, &catalog);
        // The report renders beside the other files (which take two threads of their own).
        let (files, report) = std::thread::scope(|s| {
            let report = s.spawn(|| crate::report::html(&spec, &fabric, &plan));
            (
                output::render_files(&fabric, &catalog, &plan, Some(&places), &mut cabling),
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
            .into_iter()
            .map(|(n, t)| (n.to_string(), t))
            .chain([("report.html".to_string(), report)])
            .chain(network_files)
        {
            staging.write(&name, text)?;
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
pub struct CatalogArgs {
    /// Only this kind: switch, nic, gpu, server (servers and rack-scale systems), cable,
    /// transceiver, fibre.
    pub kind: Option<String>,
    /// Of the design flags, the listing takes --tech (the switches, NICs, cables and transceivers
    /// of that technology), --switch, --nic and --gpu (that part only), --catalog and --prices;
    /// it refuses the others.
    #[command(flatten)]
    pub design: DesignArgs,
}

/// The design flags `catalog` filters its listing by; it refuses the others.
const CATALOG_FILTERS: [&str; 4] = ["tech", "switch", "nic", "gpu"];

/// A part named by a filter flag, checked against the catalog: `None` for no filter (or `auto`).
fn catalog_filter<'a, V>(
    flag: &str,
    given: Option<&'a String>,
    parts: &std::collections::BTreeMap<String, V>,
) -> Result<Option<&'a str>, CliError> {
    match given.map(String::as_str) {
        None | Some("auto") => Ok(None),
        Some(id) if parts.contains_key(id) => Ok(Some(id)),
        Some(id) => Err(CliError::input(format!(
            "--{flag} {id}: no such part in the catalog; valid: {}",
            parts.keys().cloned().collect::<Vec<_>>().join(", ")
        ))),
    }
}

pub fn catalog(a: &CatalogArgs) -> Result<(), CliError> {
    if let Some(spec) = &a.design.spec {
        return Err(CliError::input(format!(
            "catalog lists parts, not a design: --spec {} does not apply; it takes --{}, --catalog and --prices",
            spec.display(),
            CATALOG_FILTERS.join(", --")
        )));
    }
    for g in &a.design.given {
        let key = g.split_once('=').map_or(g.as_str(), |(k, _)| k);
        if !CATALOG_FILTERS.contains(&key) {
            return Err(CliError::input(format!(
                "catalog lists parts, not a design: --{key} does not apply; it takes --{}, --catalog and --prices",
                CATALOG_FILTERS.join(", --")
            )));
        }
    }
    let c = a.design.catalog()?;
    let o = &a.design.overrides;
    let f = PartFilter {
        tech: o.tech,
        switch: catalog_filter("switch", o.switch.as_ref(), &c.switches)?,
        nic: catalog_filter("nic", o.nic.as_ref(), &c.nics)?,
        gpu: catalog_filter("gpu", o.gpu.as_ref(), &c.gpus)?,
    };
    if let Some(k) = &a.kind {
        if !parts::KINDS.contains(&k.as_str()) {
            return Err(CliError::input(format!(
                "unknown kind `{k}`; valid: {}",
                parts::KINDS.join(", ")
            )));
        }
    }
    let o = parts::listing(&c, &f, a.kind.as_deref());
    print(&o)
}
