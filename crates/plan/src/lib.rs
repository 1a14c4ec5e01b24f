//! The plan: what to buy and how to wire it, read off a built [`Fabric`].
//!
//! [`Plan::new`] counts switches, links, cables, transceivers, power and cost; [`output`] renders the
//! plan as the files `railyard plan --out DIR` writes (`bom.csv`, `cabling.csv`, `summary.json`,
//! `fabric.json`) and as the readable summary. Everything here is a pure function of the fabric and the
//! catalog: no I/O, and every map that reaches output is ordered.

pub mod output;

use railyard_catalog::{Catalog, Price};
use railyard_fabric::{Fabric, LinkKind, Medium, NodeKind, Tier};
use serde::Serialize;
use std::collections::BTreeMap;

/// Switch counts per tier (a tier that does not exist is 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Switches {
    pub leaf: u64,
    pub spine: u64,
    pub core: u64,
    pub total: u64,
}

/// Cable counts per tier of the compute fabric.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Links {
    pub server_leaf: u64,
    pub leaf_spine: u64,
    pub spine_core: u64,
    /// Between switches of one tier (the two-switch design's inter-switch cables).
    pub inter_switch: u64,
    pub total: u64,
}

/// Down:up capacity ratio per tier: 1 is non-blocking; the top tier reports 1 (all traffic turns there),
/// a tier that does not exist reports 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Oversubscription {
    pub leaf: f64,
    pub spine: f64,
    pub core: f64,
}

/// Cost by category, US dollars.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cost {
    pub total: f64,
    pub per_gpu: f64,
    pub switches: f64,
    pub nics: f64,
    pub cables: f64,
    pub transceivers: f64,
    pub fibre: f64,
    /// True when any price behind the total is an estimate (see the BOM's price_source column).
    pub includes_estimates: bool,
}

/// Power by category, watts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Power {
    pub total: f64,
    pub switches: f64,
    pub nics: f64,
    pub transceivers: f64,
    pub cables: f64,
}

/// One kind of cable or fibre at one stocked length.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CableCount {
    #[serde(rename = "type")]
    pub kind: String,
    pub part: String,
    pub length_m: f64,
    pub count: u64,
}

/// Everything the summary reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub name: String,
    pub tech: String,
    pub topology: String,
    pub gpu_model: String,
    pub nic_model: String,
    pub switch_model: String,
    pub port_mode: String,
    pub link_gbps: f64,
    pub servers: u64,
    pub gpus: u64,
    pub nics: u64,
    pub storage_nics: u64,
    pub nic_gpu_ratio: String,
    pub gpudirect: bool,
    pub tiers: u32,
    pub planes: u32,
    pub su_size: Option<u32>,
    pub scalable_units: Option<u32>,
    pub switches: Switches,
    pub links: Links,
    pub cables_by_type: BTreeMap<String, u64>,
    pub cables: Vec<CableCount>,
    pub transceivers: BTreeMap<String, u64>,
    pub oversubscription: Oversubscription,
    /// Bandwidth across the narrowest tier boundary when half the NIC ports talk to the other half, Gb/s.
    pub bisection_gbps: f64,
    /// Switches on the longest shortest path between two NIC ports of one plane.
    pub worst_case_switch_hops: u32,
    pub power_w: Power,
    pub cost_usd: Cost,
}

/// One line of the bill of materials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BomLine {
    pub category: &'static str,
    pub part: String,
    pub description: String,
    /// Stocked length for cables and fibre; `None` for devices.
    pub length_m: Option<f64>,
    pub quantity: u64,
    pub unit_price_usd: f64,
    pub total_usd: f64,
    pub price_estimate: bool,
    pub price_source: String,
    pub unit_power_w: f64,
}

/// The plan of a fabric.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub summary: Summary,
    pub bom: Vec<BomLine>,
}

/// Key for grouping BOM lines: category order, part, length in millimetres.
type BomKey<'a> = (u8, &'a str, Option<u64>);

impl Plan {
    /// Counts and prices the fabric against the catalog it was built with.
    pub fn new<'a>(f: &'a Fabric, catalog: &Catalog) -> Plan {
        // Keys borrow from the fabric; only the few distinct ones are copied out at the end.
        let mut bom: BTreeMap<BomKey, u64> = BTreeMap::new();
        let mut switches = Switches::default();
        let (mut nics, mut storage_nics) = (0u64, 0u64);
        for node in &f.nodes {
            match node.kind {
                NodeKind::Switch { tier } => {
                    match tier {
                        Tier::Leaf => switches.leaf += 1,
                        Tier::Spine => switches.spine += 1,
                        Tier::Core => switches.core += 1,
                    }
                    *bom.entry((0, &node.model, None)).or_default() += 1;
                }
                NodeKind::Nic { .. } => {
                    nics += 1;
                    *bom.entry((1, &node.model, None)).or_default() += 1;
                }
                NodeKind::StorageNic => storage_nics += 1,
                _ => {}
            }
        }
        switches.total = switches.leaf + switches.spine + switches.core;

        let mut links = Links::default();
        let mut cables: BTreeMap<(&str, &str, u64), u64> = BTreeMap::new();
        let mut cables_by_type: BTreeMap<&str, u64> = BTreeMap::new();
        // Neighbouring links mostly share a medium: count runs of equal media, then add each run.
        let mut run: Option<(&Medium, u64)> = None;
        let mut add = |m: &'a Medium, n: u64| {
            let (category, part, len) = match m {
                Medium::Cable { part, length_m, .. } => (2, part, *length_m),
                Medium::Fibre { part, length_m, .. } => (4, part, *length_m),
                _ => return,
            };
            let mm = (len * 1000.0).round() as u64;
            *bom.entry((category, part, Some(mm))).or_default() += n;
            *cables.entry((m.type_name(), part, mm)).or_default() += n;
            *cables_by_type.entry(m.type_name()).or_default() += n;
        };
        for (_, l) in f.network_links() {
            match l.kind {
                LinkKind::ServerLeaf => links.server_leaf += 1,
                LinkKind::LeafSpine => links.leaf_spine += 1,
                LinkKind::SpineCore => links.spine_core += 1,
                LinkKind::InterSwitch => links.inter_switch += 1,
                _ => {}
            }
            match &mut run {
                Some((m, n)) if *m == &l.medium => *n += 1,
                _ => {
                    if let Some((m, n)) = run.replace((&l.medium, 1)) {
                        add(m, n);
                    }
                }
            }
        }
        if let Some((m, n)) = run {
            add(m, n);
        }
        links.total = links.server_leaf + links.leaf_spine + links.spine_core + links.inter_switch;
        let mut transceivers: BTreeMap<&str, u64> = BTreeMap::new();
        for m in &f.modules {
            *transceivers.entry(&m.part).or_default() += 1;
            *bom.entry((3, &m.part, None)).or_default() += 1;
        }

        let bom: Vec<BomLine> = bom
            .into_iter()
            .map(|(key, qty)| bom_line(catalog, key, qty))
            .collect();
        let mut cost = Cost::default();
        let mut power = Power::default();
        for line in &bom {
            let (c, p) = match line.category {
                "switch" => (&mut cost.switches, &mut power.switches),
                "nic" => (&mut cost.nics, &mut power.nics),
                "cable" => (&mut cost.cables, &mut power.cables),
                "transceiver" => (&mut cost.transceivers, &mut power.transceivers),
                _ => (&mut cost.fibre, &mut power.cables),
            };
            *c += line.total_usd;
            *p += line.unit_power_w * line.quantity as f64;
            cost.includes_estimates |= line.price_estimate;
        }
        let gpus = f.servers.len() as u64 * u64::from(f.meta.gpus_per_server);
        cost.total = cost.switches + cost.nics + cost.cables + cost.transceivers + cost.fibre;
        cost.per_gpu = if gpus > 0 {
            cost.total / gpus as f64
        } else {
            0.0
        };
        power.total = power.switches + power.nics + power.transceivers + power.cables;

        let link_gbps = f.network_links().map(|(_, l)| l.gbps).next().unwrap_or(0.0);
        let m = &f.meta;
        let nic_gpu_ratio = if m.compute_nics_per_server >= m.gpus_per_server {
            format!("{}:1", m.compute_nics_per_server / m.gpus_per_server.max(1))
        } else {
            format!("1:{}", m.gpus_per_server / m.compute_nics_per_server.max(1))
        };
        let summary = Summary {
            name: m.name.clone(),
            tech: m.tech.to_string(),
            topology: m.topology.clone(),
            gpu_model: m.gpu_model.clone(),
            nic_model: m.nic_model.clone(),
            switch_model: m.switch_model.clone(),
            port_mode: m.port_mode.clone(),
            link_gbps,
            servers: f.servers.len() as u64,
            gpus,
            nics,
            storage_nics,
            nic_gpu_ratio,
            gpudirect: m.gpudirect,
            tiers: m.tiers,
            planes: m.planes,
            su_size: m.su_size,
            scalable_units: m.scalable_units,
            oversubscription: oversubscription(f),
            bisection_gbps: f.bisection_gbps(|_| true),
            worst_case_switch_hops: worst_case_hops(f),
            switches,
            links,
            cables_by_type: owned_keys(cables_by_type),
            cables: cables
                .into_iter()
                .map(|((kind, part, mm), count)| CableCount {
                    kind: kind.to_string(),
                    part: part.to_string(),
                    length_m: mm as f64 / 1000.0,
                    count,
                })
                .collect(),
            transceivers: owned_keys(transceivers),
            power_w: power,
            cost_usd: cost,
        };
        Plan { summary, bom }
    }
}

fn owned_keys(m: BTreeMap<&str, u64>) -> BTreeMap<String, u64> {
    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

const CATEGORIES: [&str; 5] = ["switch", "nic", "cable", "transceiver", "fibre"];

fn bom_line(catalog: &Catalog, (cat, part, mm): BomKey, quantity: u64) -> BomLine {
    let length_m = mm.map(|mm| mm as f64 / 1000.0);
    let (description, price, power): (&str, &Price, f64) = match cat {
        0 => {
            let s = &catalog.switches[part];
            (&s.name, &s.price, s.power_w)
        }
        1 => {
            let n = &catalog.nics[part];
            (&n.name, &n.price, n.power_w)
        }
        2 => {
            let c = &catalog.cables[part];
            (&c.name, &c.price, c.power_w)
        }
        3 => {
            let t = &catalog.transceivers[part];
            (&t.name, &t.price, t.power_w)
        }
        _ => {
            let fb = &catalog.fibres[part];
            (&fb.name, &fb.price, 0.0)
        }
    };
    let unit = price.at_length(length_m.unwrap_or(0.0));
    BomLine {
        category: CATEGORIES[cat as usize],
        description: description.to_string(),
        part: part.to_string(),
        length_m,
        quantity,
        unit_price_usd: unit,
        total_usd: unit * quantity as f64,
        price_estimate: price.estimate,
        price_source: price.source.clone(),
        unit_power_w: power,
    }
}

/// Per tier, the largest down:up capacity ratio of any switch that has uplinks; 1 for the top tier
/// (no switch of it has uplinks); 0 for a tier that does not exist.
fn oversubscription(f: &Fabric) -> Oversubscription {
    // tier -> (exists, worst ratio among switches with uplinks)
    let mut tiers: BTreeMap<Tier, Option<f64>> = BTreeMap::new();
    for node in f.nodes.iter().filter(|n| n.is_switch()) {
        let (mut down, mut up) = (0.0, 0.0);
        for p in node.ports() {
            let Some(l) = f.port(p).link() else { continue };
            let link = f.link(l);
            match link.kind {
                LinkKind::InterSwitch => {}
                // `a` is the end nearer the servers, so this switch faces up where it is `a`.
                _ if link.a == p => up += link.gbps,
                _ => down += link.gbps,
            }
        }
        let worst = tiers
            .entry(node.tier().unwrap_or(Tier::Leaf))
            .or_insert(None);
        if up > 0.0 {
            *worst = Some(worst.unwrap_or(0.0).max(down / up));
        }
    }
    let get = |t| match tiers.get(&t) {
        None => 0.0,
        Some(worst) => worst.unwrap_or(1.0),
    };
    Oversubscription {
        leaf: get(Tier::Leaf),
        spine: get(Tier::Spine),
        core: get(Tier::Core),
    }
}

/// Switches on the longest shortest path between two NIC ports of one plane: 1 on one switch, 2 in the
/// two-switch design, 3 through a spine, 5 through a core. Rail-only rails count within a rail.
fn worst_case_hops(f: &Fabric) -> u32 {
    if f.meta.topology == "two-switch" {
        return 2;
    }
    2 * f.meta.tiers - 1
}

#[cfg(test)]
mod tests;
