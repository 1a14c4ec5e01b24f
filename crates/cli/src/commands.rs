//! The subcommands.

use crate::design::{self, DesignArgs};
use crate::error::CliError;
use crate::io::print;
use crate::output::{Names, Outputs, PathArgs};
use clap::Args;
use railyard_plan::output;
use railyard_spec::presets as preset_list;
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
    let opts = railyard_fabric::SearchOptions {
        alternatives: a.alternatives as usize,
    };
    let planned = design::plan(&spec, &catalog, &opts)?;
    let network_files = output::network_files(&planned, &catalog);
    let railyard_plan::Planned { fabric, plan, .. } = planned;
    if let Some(mut staging) = outputs.dir("--out") {
        // cabling.csv (45 MB at 131,072 GPUs) streams into its temp file as it renders.
        let (cabling_tmp, cabling_file) = staging.create("cabling.csv")?;
        let mut cabling = std::io::BufWriter::with_capacity(1 << 20, cabling_file);
        // Where every device stands, for cabling.csv's rack columns.
        let places = railyard_fabric::layout::rack_places_of(&fabric, &spec, &catalog);
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
    let tech = o.tech;
    let switch = catalog_filter("switch", o.switch.as_ref(), &c.switches)?;
    let nic = catalog_filter("nic", o.nic.as_ref(), &c.nics)?;
    let gpu = catalog_filter("gpu", o.gpu.as_ref(), &c.gpus)?;
    let has_tech = |techs: &[railyard_catalog::Tech]| tech.is_none_or(|t| techs.contains(&t));
    let kinds = [
        "switch",
        "nic",
        "gpu",
        "server",
        "cable",
        "transceiver",
        "fibre",
    ];
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
            if switch.is_some_and(|id| id != s.id) {
                continue;
            }
            let modes: Vec<String> = s
                .modes
                .iter()
                .filter(|m| has_tech(&m.techs))
                .map(|m| format!("{} x {}", m.ports, m.name))
                .collect();
            if modes.is_empty() {
                continue;
            }
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
            if nic.is_some_and(|id| id != n.id) || !has_tech(&n.techs) {
                continue;
            }
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
            if gpu.is_some_and(|id| id != g.id) {
                continue;
            }
            // AMD's scale-up links are Infinity Fabric (xGMI), one per peer, not NVLink.
            let links = match g.scale_up {
                railyard_catalog::ScaleUp::Nvswitch => "NVLink",
                railyard_catalog::ScaleUp::Mesh => "Infinity Fabric mesh",
            };
            let _ = writeln!(
                o,
                "  {:<5} {links} {} x {} GB/s, PCIe Gen{} x{}, {} TFLOPS BF16, memory {} | {}",
                g.id,
                g.nvlink_links,
                g.nvlink_gbs_per_link,
                g.pcie_gen,
                g.pcie_lanes,
                g.peak_tflops_bf16,
                g.memory_label(),
                g.source
            );
        }
    }
    if want("server") && tech.is_none() && switch.is_none() && nic.is_none() {
        let _ = writeln!(o, "servers:");
        for x in c.servers.values() {
            if gpu.is_some_and(|id| id != x.gpu) {
                continue;
            }
            let nics = if x.includes_compute_nics {
                format!(", {} compute NICs included", x.compute_nics)
            } else {
                String::new()
            };
            let height = x.rack_units.map_or(String::new(), |u| format!(", {u}U"));
            let rack = x
                .rack_system
                .as_ref()
                .map_or(String::new(), |r| format!(", a compute tray of {r}"));
            let _ = writeln!(
                o,
                "  {:<20} {} x {}{nics}, {} kW{height}, {} cooled{rack} | {} | {}",
                x.id,
                x.gpus,
                x.gpu,
                railyard_catalog::number(x.power_w / 1000.0),
                x.cooling().as_str(),
                price(&x.price),
                x.source
            );
        }
        let _ = writeln!(o, "rack systems:");
        for r in c.rack_systems.values() {
            let tray_gpus = c.servers.get(&r.tray).map_or(0, |t| t.gpus);
            if gpu.is_some_and(|id| c.servers.get(&r.tray).is_none_or(|t| t.gpu != id)) {
                continue;
            }
            let _ = writeln!(
                o,
                "  {:<20} {} x {}, one NVLink domain of {} GPUs, {} NVLink switch trays of {} chips, {} kW, {} cooled{} | {} | {}",
                r.id,
                r.trays,
                r.tray,
                r.gpus(tray_gpus),
                r.nvlink_switch_trays,
                r.nvlink_switch_chips / r.nvlink_switch_trays.max(1),
                railyard_catalog::number(r.power_w / 1000.0),
                r.cooling.as_str(),
                r.racks_per_su
                    .map_or(String::new(), |n| format!(", {n} racks per scalable unit")),
                // The rack's price is spread over its trays where no price of the rest is known.
                if r.price.usd == 0.0 {
                    "priced in its trays".to_string()
                } else {
                    price(&r.price)
                },
                r.source
            );
        }
    }
    if want("cable") {
        let _ = writeln!(o, "cables:");
        for x in c.cables.values().filter(|x| has_tech(&x.techs)) {
            let _ = writeln!(
                o,
                "  {:<16} {}{} up to {} m | {} | {}",
                x.id,
                x.kind.as_str(),
                match x.form {
                    railyard_catalog::CableForm::Straight => String::new(),
                    form => format!(" {} of {} ports", form.as_str(), x.ports),
                },
                x.reach_m(),
                price(&x.price),
                x.source
            );
        }
    }
    if want("transceiver") {
        let _ = writeln!(o, "transceivers:");
        for x in c.transceivers.values().filter(|x| has_tech(&x.techs)) {
            let _ = writeln!(
                o,
                "  {:<22} {} port(s), {:?} {} m, {} | {} | {}",
                x.id,
                x.ports,
                x.fibre,
                x.reach_m,
                x.connector,
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
                "  {:<10} {:?} {} | {} | {}",
                x.id,
                x.kind,
                x.connector,
                price(&x.price),
                x.source
            );
        }
    }
    print(&o)
}
