//! Counting a built fabric for its plan: devices per kind, links per tier, cables (a twin-port or
//! splitter cable once), transceivers, the bill of materials with its cost and power (the same
//! count the design search costs with), and the ratios and hops the summary reports.

use crate::summary::{BomLine, CableCount, Cost, Links, Oversubscription, Power, Switches};
use railyard_catalog::Catalog;
use railyard_fabric::{bom, Fabric, FabricMeta, LinkKind, Medium, NodeKind, Tier};
use std::collections::BTreeMap;

/// Switches per tier, compute NICs and storage NICs.
pub(crate) fn devices(f: &Fabric) -> (Switches, u64, u64) {
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
    (switches, nics, storage_nics)
}

/// Network links per tier, and the cables to order: by type and by part and stocked length.
pub(crate) struct Cables {
    pub links: Links,
    pub cables_by_type: BTreeMap<String, u64>,
    pub cables: Vec<CableCount>,
}

/// Counts links and cables: cables, not links, so the later legs of a twin or splitter cable
/// count with its first.
pub(crate) fn cables<'a>(f: &'a Fabric, catalog: &Catalog) -> Cables {
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
    Cables {
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
    }
}

/// Transceivers by part.
pub(crate) fn transceivers(f: &Fabric) -> BTreeMap<String, u64> {
    let mut transceivers: BTreeMap<&str, u64> = BTreeMap::new();
    for m in &f.modules {
        *transceivers.entry(&m.part).or_default() += 1;
    }
    owned_keys(transceivers)
}

/// The bill of materials and its totals: the same count the design search costs with; the cost
/// per GPU over `gpus`.
pub(crate) fn bill(f: &Fabric, catalog: &Catalog, gpus: u64) -> (Vec<BomLine>, Cost, Power) {
    let parts = bom::parts(f, catalog);
    let totals = bom::Totals::of(catalog, &parts);
    let bom: Vec<BomLine> = parts.iter().map(|p| bom_line(catalog, p)).collect();
    let [sw_usd, nic_usd, cable_usd, xcvr_usd, fibre_usd] = totals.usd;
    let [sw_w, nic_w, cable_w, xcvr_w, fibre_w] = totals.watts;
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
    (bom, cost, power)
}

/// Compute NICs to GPUs per server: `1:1`, `2:1`, `1:2`.
pub(crate) fn nic_gpu_ratio(m: &FabricMeta) -> String {
    if m.compute_nics_per_server >= m.gpus_per_server {
        format!("{}:1", m.compute_nics_per_server / m.gpus_per_server.max(1))
    } else {
        format!("1:{}", m.gpus_per_server / m.compute_nics_per_server.max(1))
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
pub(crate) fn oversubscription(f: &Fabric) -> (Oversubscription, Option<(u32, u32)>) {
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
pub(crate) fn worst_case_hops(f: &Fabric) -> u32 {
    if f.meta.topology == "two-switch" {
        return 2;
    }
    2 * f.meta.tiers - 1
}
