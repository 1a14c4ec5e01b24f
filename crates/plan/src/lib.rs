//! The plan: what to buy and how to wire it, read off a built [`Fabric`].
//!
//! [`Plan::new`] counts switches, links, cables, transceivers, power and cost; [`output`] renders the
//! plan as the files `railyard plan --out DIR` writes (`bom.csv`, `cabling.csv`, `summary.json`,
//! `fabric.json`) and as the readable summary. Everything here is a pure function of the fabric and the
//! catalog: no I/O, and every map that reaches output is ordered.

pub mod output;

use railyard_catalog::Catalog;
use railyard_fabric::layout;
pub use railyard_fabric::layout::CageCables;
use railyard_fabric::networks::{Network, NetworkKind};
use railyard_fabric::{
    bom, BuildError, DesignReport, Fabric, LinkKind, Medium, NodeKind, SearchOptions, Tier,
};
use railyard_spec::ClusterSpec;
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
    /// The design's name; with the overrides that changed it from its preset or spec file after a
    /// colon, as `compare` names designs (`dgx-h100-superpod:servers=16,tech=roce-400g`).
    pub name: String,
    /// The overrides that changed the design from its preset or spec file (`servers=16`), when any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
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
    /// The leaf down:up ratio asked for: an upper bound on `oversubscription.leaf` (absent for
    /// imported fabrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oversubscription_requested: Option<f64>,
    /// The host links and uplinks of the leaf at the `oversubscription.leaf` ratio (absent without
    /// a leaf with uplinks), to explain that ratio.
    #[serde(skip)]
    pub leaf_links: Option<(u32, u32)>,
    /// Bandwidth across the narrowest tier boundary when half the NIC ports talk to the other half, Gb/s.
    pub bisection_gbps: f64,
    /// Links of the compute fabric given a direct cable (DAC, ACC, AOC) although a cage at an end
    /// carries more than one of them ([`CageCables`]); absent when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_cage_cables: Option<CageCables>,
    /// Switches on the longest shortest path between two NIC ports of one plane.
    pub worst_case_switch_hops: u32,
    pub power_w: Power,
    pub cost_usd: Cost,
    /// How the design was chosen: choices with their source and reason, the best design per switch
    /// model, and alternatives (`plan`; absent where a fabric is planned without its search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub design: Option<DesignReport>,
    /// The storage fabric, when planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<NetworkSummary>,
    /// The management networks (in-band and out-of-band), when planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management: Option<ManagementSummary>,
}

impl Summary {
    /// Cables and fibre patch cords to order: links, but a twin-port or splitter cable once for all
    /// its legs (`cables_by_type` summed).
    pub fn cable_count(&self) -> u64 {
        self.cables_by_type.values().sum()
    }
}

/// A storage or management network: what it connects, its switches, cables, optics, power and cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetworkSummary {
    /// `storage`, `in-band` or `out-of-band`.
    pub network: String,
    pub tech: String,
    pub switch_model: String,
    pub port_mode: String,
    pub link_gbps: f64,
    /// Device ports attached, by kind of device (`servers`, `storage systems`, `switches`, `pdus`...).
    pub endpoints: BTreeMap<String, u64>,
    pub tiers: u32,
    pub switches: Switches,
    pub links: Links,
    pub cables_by_type: BTreeMap<String, u64>,
    pub cables: Vec<CableCount>,
    pub transceivers: BTreeMap<String, u64>,
    pub oversubscription: Oversubscription,
    /// Links that leave the plan (in-band uplinks to the data-centre network): counted, not priced.
    pub uplinks_outside: u64,
    /// How the network was shaped and why.
    pub notes: Vec<String>,
    pub power_w: Power,
    pub cost_usd: Cost,
}

/// The management networks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManagementSummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_band: Option<NetworkSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_band: Option<NetworkSummary>,
    /// Both networks' cost and power.
    pub cost_usd: f64,
    pub power_w: f64,
    pub includes_estimates: bool,
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

impl Plan {
    /// Counts and prices the fabric against the catalog it was built with.
    pub fn new<'a>(f: &'a Fabric, catalog: &Catalog) -> Plan {
        let mut switches = Switches::default();
        let (mut nics, mut storage_nics) = (0u64, 0u64);
        for node in &f.nodes {
            match node.kind {
                NodeKind::Switch { tier } => match tier {
                    Tier::Leaf => switches.leaf += 1,
                    Tier::Spine => switches.spine += 1,
                    Tier::Core => switches.core += 1,
                },
                NodeKind::Nic { .. } => nics += 1,
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
            let (part, len) = match m {
                Medium::Cable { part, length_m, .. } | Medium::Fibre { part, length_m, .. } => {
                    (part, *length_m)
                }
                _ => return,
            };
            let mm = (len * 1000.0).round() as u64;
            *cables.entry((m.type_name(), part, mm)).or_default() += n;
            *cables_by_type.entry(m.type_name()).or_default() += n;
        };
        // Cables, not links: the later legs of a twin or splitter cable count with its first.
        let firsts = bom::cable_firsts(f, catalog);
        for (i, (_, l)) in f.network_links().enumerate() {
            match l.kind {
                LinkKind::ServerLeaf => links.server_leaf += 1,
                LinkKind::LeafSpine => links.leaf_spine += 1,
                LinkKind::SpineCore => links.spine_core += 1,
                LinkKind::InterSwitch => links.inter_switch += 1,
                _ => {}
            }
            if firsts[i] != i as u32 {
                continue;
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
        }

        // The bill of materials and its totals: the same count the design search costs with.
        let parts = bom::parts(f, catalog);
        let totals = bom::Totals::of(catalog, &parts);
        let bom: Vec<BomLine> = parts.iter().map(|p| bom_line(catalog, p)).collect();
        let [sw_usd, nic_usd, cable_usd, xcvr_usd, fibre_usd] = totals.usd;
        let [sw_w, nic_w, cable_w, xcvr_w, fibre_w] = totals.watts;
        let gpus = f.servers.len() as u64 * u64::from(f.meta.gpus_per_server);
        let total = totals.total_usd();
        let cost = Cost {
            total,
            per_gpu: if gpus > 0 { total / gpus as f64 } else { 0.0 },
            switches: sw_usd,
            nics: nic_usd,
            cables: cable_usd,
            transceivers: xcvr_usd,
            fibre: fibre_usd,
            includes_estimates: totals.includes_estimates,
        };
        let power = Power {
            total: sw_w + nic_w + xcvr_w + cable_w + fibre_w,
            switches: sw_w,
            nics: nic_w,
            transceivers: xcvr_w,
            cables: cable_w + fibre_w,
        };

        let link_gbps = f.network_links().map(|(_, l)| l.gbps).next().unwrap_or(0.0);
        let m = &f.meta;
        let nic_gpu_ratio = if m.compute_nics_per_server >= m.gpus_per_server {
            format!("{}:1", m.compute_nics_per_server / m.gpus_per_server.max(1))
        } else {
            format!("1:{}", m.gpus_per_server / m.compute_nics_per_server.max(1))
        };
        let (oversubscription, leaf_links) = oversubscription(f);
        let summary = Summary {
            name: m.name.clone(),
            overrides: Vec::new(),
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
            oversubscription,
            oversubscription_requested: m.oversubscription_requested,
            leaf_links,
            bisection_gbps: f.bisection_gbps(|_| true),
            shared_cage_cables: layout::shared_cage_cables(f, catalog),
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
            design: None,
            storage: None,
            management: None,
        };
        Plan { summary, bom }
    }
}

/// A spec's design searched, built and planned: the compute fabric and its plan (with how the design
/// was chosen), and the storage and management networks with theirs.
#[derive(Debug)]
pub struct Planned {
    pub fabric: Fabric,
    pub plan: Plan,
    /// The storage and management networks, each with its own plan (bill of materials, cabling).
    pub networks: Vec<(Network, Plan)>,
}

/// Searches the spec's design, builds it and plans it with its storage and management networks.
pub fn plan_design(
    spec: &ClusterSpec,
    catalog: &Catalog,
    opts: &SearchOptions,
) -> Result<Planned, BuildError> {
    let d = railyard_fabric::design(spec, catalog, opts)?;
    let mut plan = Plan::new(&d.fabric, catalog);
    plan.summary.design = Some(d.report);
    plan.summary.name = spec.title();
    plan.summary.overrides = spec.overrides.clone();
    let networks: Vec<(Network, Plan)> = railyard_fabric::networks::plan(spec, catalog, &d.fabric)?
        .into_iter()
        .map(|n| {
            let p = Plan::new(&n.fabric, catalog);
            (n, p)
        })
        .collect();
    // A storage or management network's cost per GPU is per GPU of the cluster: its own fabric
    // holds no servers (summary.json had `per_gpu` 0 for them).
    let gpus = d.fabric.servers.len() as u64 * u64::from(d.fabric.meta.gpus_per_server);
    let summary_of = |kind: NetworkKind| {
        networks.iter().find(|(n, _)| n.kind == kind).map(|(n, p)| {
            let mut s = NetworkSummary::of(n, &p.summary);
            if gpus > 0 {
                s.cost_usd.per_gpu = s.cost_usd.total / gpus as f64;
            }
            s
        })
    };
    plan.summary.storage = summary_of(NetworkKind::Storage);
    let (in_band, out_of_band) = (
        summary_of(NetworkKind::InBand),
        summary_of(NetworkKind::OutOfBand),
    );
    if in_band.is_some() || out_of_band.is_some() {
        let parts = [&in_band, &out_of_band];
        plan.summary.management = Some(ManagementSummary {
            cost_usd: parts
                .iter()
                .flat_map(|p| p.iter())
                .map(|n| n.cost_usd.total)
                .sum(),
            power_w: parts
                .iter()
                .flat_map(|p| p.iter())
                .map(|n| n.power_w.total)
                .sum(),
            includes_estimates: parts
                .iter()
                .flat_map(|p| p.iter())
                .any(|n| n.cost_usd.includes_estimates),
            in_band,
            out_of_band,
        });
    }
    Ok(Planned {
        fabric: d.fabric,
        plan,
        networks,
    })
}

impl NetworkSummary {
    fn of(n: &Network, s: &Summary) -> NetworkSummary {
        NetworkSummary {
            network: n.kind.as_str().to_string(),
            tech: s.tech.clone(),
            switch_model: s.switch_model.clone(),
            port_mode: s.port_mode.clone(),
            link_gbps: s.link_gbps,
            endpoints: n.endpoints.clone(),
            tiers: s.tiers,
            switches: s.switches.clone(),
            links: s.links.clone(),
            cables_by_type: s.cables_by_type.clone(),
            cables: s.cables.clone(),
            transceivers: s.transceivers.clone(),
            oversubscription: s.oversubscription.clone(),
            uplinks_outside: n.uplinks_outside,
            notes: n.notes.clone(),
            power_w: s.power_w.clone(),
            cost_usd: s.cost_usd.clone(),
        }
    }
}

fn owned_keys(m: BTreeMap<&str, u64>) -> BTreeMap<String, u64> {
    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn bom_line(catalog: &Catalog, p: &bom::PartCount) -> BomLine {
    let length_m = p.length_m();
    let info = bom::part_info(catalog, p.kind, p.part);
    let unit = bom::unit_price(catalog, p);
    BomLine {
        category: p.kind.as_str(),
        description: info.map_or(String::new(), |i| i.description.to_string()),
        part: p.part.to_string(),
        length_m,
        quantity: p.quantity,
        unit_price_usd: unit,
        total_usd: unit * p.quantity as f64,
        price_estimate: info.is_some_and(|i| i.price.estimate),
        price_source: info.map_or(String::new(), |i| i.price.source.clone()),
        unit_power_w: info.map_or(0.0, |i| i.power_w),
    }
}

/// Per tier, the largest down:up capacity ratio of any switch that has uplinks; 1 for the top tier
/// (no switch of it has uplinks); 0 for a tier that does not exist. With it, the down and up links
/// of the first leaf at the leaf tier's ratio. A switch of the two-switch design reaches the other
/// half of the hosts only over the links to the other switch, so they are its uplinks (36 hosts
/// per switch over 4 links is 9:1, not the 1:1 of a switch with no uplinks).
fn oversubscription(f: &Fabric) -> (Oversubscription, Option<(u32, u32)>) {
    // tier -> (exists, worst ratio among switches with uplinks)
    let mut tiers: BTreeMap<Tier, Option<f64>> = BTreeMap::new();
    let mut leaf_links: Option<(f64, u32, u32)> = None;
    // An in-band pair's hosts have a port on each switch, so the pair's links are no uplinks.
    let two_switch = f.meta.topology == "two-switch";
    for node in f.nodes.iter().filter(|n| n.is_switch()) {
        let (mut down, mut up) = (0.0, 0.0);
        let (mut down_links, mut up_links) = (0u32, 0u32);
        let (mut lateral, mut lateral_links) = (0.0, 0u32);
        for p in node.ports() {
            let Some(l) = f.port(p).link() else { continue };
            let link = f.link(l);
            match link.kind {
                LinkKind::InterSwitch => {
                    lateral += link.gbps;
                    lateral_links += 1;
                }
                // `a` is the end nearer the servers, so this switch faces up where it is `a`.
                _ if link.a == p => {
                    up += link.gbps;
                    up_links += 1;
                }
                _ => {
                    down += link.gbps;
                    down_links += 1;
                }
            }
        }
        if two_switch && up == 0.0 {
            // No tier above: the links to the other switch are the only way to the other half.
            (up, up_links) = (lateral, lateral_links);
        }
        let tier = node.tier().unwrap_or(Tier::Leaf);
        let worst = tiers.entry(tier).or_insert(None);
        if up > 0.0 {
            *worst = Some(worst.unwrap_or(0.0).max(down / up));
            if tier == Tier::Leaf && leaf_links.is_none_or(|(r, _, _)| down / up > r) {
                leaf_links = Some((down / up, down_links, up_links));
            }
        }
    }
    let get = |t| match tiers.get(&t) {
        None => 0.0,
        Some(worst) => worst.unwrap_or(1.0),
    };
    (
        Oversubscription {
            leaf: get(Tier::Leaf),
            spine: get(Tier::Spine),
            core: get(Tier::Core),
        },
        leaf_links.map(|(_, down, up)| (down, up)),
    )
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
