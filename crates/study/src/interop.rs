//! A design handed to the InfiniBand and site tools, and the fabric as built checked against it:
//! the files `export ibnet`, `export lldp` and `export slurm` write, what `verify` compares (an
//! ibnetdiscover / iblinkinfo dump or LLDP neighbour tables against the plan, with the site's
//! names, places and scope), and what `import ibnet` makes of a dump. The front end reads the
//! files and names them in errors; the work is here, on crate railyard-ib's formats.

use railyard_fabric::layout::RackPlace;
use railyard_fabric::{Fabric, NodeKind};
use railyard_ib::discovery::{self, Discovered};
use railyard_ib::site::{NameMap, Scope};
use railyard_ib::slurm::{self, Plugin};
use railyard_ib::verify::{self, Options, Site, Verification};
use railyard_ib::{export, import, lldp};
use std::collections::BTreeSet;

/// The site's names (`--names`: a CSV of plan name, site name), checked against the plan.
pub fn names(text: &str, plan: &Fabric) -> Result<NameMap, String> {
    NameMap::parse(text)
        .and_then(|m| m.check(plan).map(|()| m))
        .map_err(|e| e.to_string())
}

/// Slurm's topology.conf for `plugin` (`tree` or `block`; any other name is `tree`, as the flag's
/// parser allows no other), nodes and switches by the site's names.
pub fn slurm_conf(
    f: &Fabric,
    names: Option<&NameMap>,
    plugin: &str,
) -> Result<slurm::Export, String> {
    let plugin = Plugin::ALL
        .into_iter()
        .find(|p| p.as_str() == plugin)
        .unwrap_or(Plugin::Tree);
    slurm::topology_conf(f, names, plugin).map_err(|e| e.to_string())
}

/// The LLDP neighbour tables the plan expects, one `DEVICE.json` file each (file name, text).
/// A device whose name cannot be a file name is refused.
pub fn lldp_files(f: &Fabric) -> Result<Vec<(String, String)>, String> {
    let tables = lldp::expected_tables(f).map_err(|e| e.to_string())?;
    let files: Vec<(String, String)> = tables
        .into_iter()
        .map(|(device, text)| (format!("{device}.json"), text))
        .collect();
    for (name, _) in &files {
        if name.contains('/') || name.starts_with('.') {
            return Err(format!("device name {name:?} cannot be a file name"));
        }
    }
    Ok(files)
}

/// What `export ibnet` writes: the ibsim topology, what ibsim forces it to approximate, and
/// (where asked) OpenSM's ftree files and the ibsim size flags.
#[derive(Debug, Clone)]
pub struct IbnetExport {
    pub text: String,
    pub notes: Vec<String>,
    /// root_guids.txt, cn_guids.txt, ibsim-flags.txt: (file name, text).
    pub opensm: Vec<(&'static str, String)>,
}

/// The ibsim topology of `f` (and the OpenSM files when `opensm`).
pub fn ibnet(f: &Fabric, opensm: bool) -> Result<IbnetExport, String> {
    let e = export::ibsim_topology(f).map_err(|e| e.to_string())?;
    Ok(IbnetExport {
        text: e.text,
        notes: e.notes,
        opensm: if opensm {
            export::opensm_files(f)
        } else {
            Vec::new()
        },
    })
}

/// `--scope`: the part of the plan a staged bring-up checks.
pub fn scope(plan: &Fabric, items: &[String]) -> Result<Scope, String> {
    Scope::resolve(plan, items)
}

/// An ibnetdiscover, iblinkinfo or ibsim topology dump, with the notes on the rates its ends
/// disagree on (`railyard check` names them).
pub fn discovered(text: &str) -> Result<(Discovered, Vec<String>), String> {
    let d = discovery::parse(text).map_err(|e| e.to_string())?;
    let notes = d.rate_disagreements.iter().map(|r| r.note()).collect();
    Ok((d, notes))
}

/// Whether LLDP tables can verify `plan`: an Ethernet fabric only (LLDP gives no InfiniBand view).
pub fn lldp_plan(plan: &Fabric) -> Result<(), String> {
    lldp::ethernet_only(plan).map_err(|e| e.to_string())
}

/// One device's LLDP table as read: the device it was taken on, where it came from (named in
/// errors) and its text.
#[derive(Debug, Clone)]
pub struct LldpFile {
    pub device: String,
    pub source: String,
    pub text: String,
}

/// The fabric LLDP tables show, each device a switch when the plan (through the site's names)
/// says. The tables are read as they are parsed (a file is read only when those before it parsed);
/// errors of this module are `bad(message)`, a table's naming it (`SOURCE: ...`).
pub fn lldp_discovered<E>(
    files: impl IntoIterator<Item = Result<LldpFile, E>>,
    plan: &Fabric,
    names: Option<&NameMap>,
    bad: impl Fn(String) -> E,
) -> Result<Discovered, E> {
    let mut tables = Vec::new();
    for f in files {
        let f = f?;
        let neighbours = lldp::parse(&f.text).map_err(|e| bad(format!("{}: {e}", f.source)))?;
        tables.push(lldp::Table {
            device: f.device,
            source: f.source,
            neighbours,
        });
    }
    let switches: BTreeSet<&str> = plan
        .nodes
        .iter()
        .filter(|n| n.is_switch())
        .map(|n| n.name.as_str())
        .collect();
    let servers: BTreeSet<&str> = plan.servers.iter().map(|s| s.name.as_str()).collect();
    let discovered = lldp::to_discovered(&tables, |device| {
        let planned = names
            .and_then(|m| m.plan_name(device, false))
            .unwrap_or_else(|| device.to_string());
        if switches.contains(planned.as_str()) {
            Some(true)
        } else if servers.contains(planned.as_str()) {
            Some(false)
        } else {
            None
        }
    })
    .map_err(|e| bad(e.to_string()))?;
    if discovered.links.is_empty() {
        return Err(bad(
            "the LLDP tables list no neighbours: nothing to verify".to_string()
        ));
    }
    Ok(discovered)
}

/// What `verify` knows of the site and the discovery beside the two fabrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct VerifyAsk<'a> {
    pub names: Option<&'a NameMap>,
    pub places: Option<&'a [Option<RackPlace>]>,
    pub scope: Option<&'a Scope>,
    /// The discovery gives no rates (LLDP tables).
    pub without_rates: bool,
    /// The discovered fabric runs in ibsim: expect the rates `export ibnet` wrote.
    pub ibsim: bool,
}

/// `railyard verify`: the discovered fabric against the plan.
pub fn verify(plan: &Fabric, discovered: &Discovered, ask: &VerifyAsk) -> Verification {
    let site = Site {
        names: ask.names,
        locations: ask.places,
        scope: ask.scope,
        without_rates: ask.without_rates,
    };
    verify::verify_with(
        plan,
        discovered,
        Options {
            ibsim_rates: ask.ibsim,
        },
        site,
    )
}

/// A verification as `verify` prints it: findings alike folded into one line unless `all`.
pub fn verification_text(v: &Verification, all: bool) -> String {
    verify::report_text_with(v, all)
}

/// What `import ibnet` made of a dump: the fabric, and what the dump could not say.
#[derive(Debug, Clone)]
pub struct Imported {
    pub fabric: Fabric,
    discovered: Discovered,
}

/// `import ibnet`: a dump as a fabric (named `name`), switches and HCAs at the rates they run.
pub fn import_ibnet(text: &str, name: &str) -> Result<Imported, String> {
    let discovered = discovery::parse(text).map_err(|e| e.to_string())?;
    let fabric = import::to_fabric(&discovered, name).map_err(|e| e.to_string())?;
    Ok(Imported { fabric, discovered })
}

impl Imported {
    /// What the import found, one line, then a note for every rate its ends disagree on and every
    /// failed query the tool printed; `origin` names the dump.
    pub fn text(&self, origin: &str) -> String {
        let fabric = &self.fabric;
        let switches = fabric.nodes.iter().filter(|n| n.is_switch()).count();
        let mut msg = format!(
            "{origin}: {} servers, {} HCAs, {switches} switches in {} tier{}, {} cables ({})\n",
            fabric.servers.len(),
            fabric
                .nodes
                .iter()
                .filter(|n| matches!(n.kind, NodeKind::Nic { .. }))
                .count(),
            fabric.meta.tiers,
            if fabric.meta.tiers == 1 { "" } else { "s" },
            fabric.network_links().count(),
            fabric.meta.tech
        );
        for r in &self.discovered.rate_disagreements {
            msg.push_str(&format!("note: {} (`railyard check` names it)\n", r.note()));
        }
        for w in &self.discovered.warnings {
            msg.push_str(&format!(
                "note: line {}: the tool printed a failed query; what lies behind it may be missing from this import (`railyard check` names the route to look at)\n",
                w.line
            ));
        }
        msg
    }

    /// The fabric as fabric.json.
    pub fn json(&self) -> String {
        railyard_fabric::fabric_file::fabric_json(&self.fabric)
    }
}
