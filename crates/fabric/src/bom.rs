//! What a fabric is made of: its parts by catalog id (switches, NICs, cables and fibre by stocked
//! length, transceivers), counted from the graph, and what they cost at the catalog's prices.
//!
//! One count: the plan's bill of materials (`railyard_plan::Plan`) and the design search's exact costs
//! both come from [`parts`] and [`Totals`], so the design the search calls cheapest is the one the plan
//! prices lowest, to the cent.

use crate::graph::{Fabric, Medium, NodeId, NodeKind};
use railyard_catalog::{Catalog, Price};
use std::collections::{BTreeMap, HashMap};

/// For every network link, in [`Fabric::network_links`] order, the position (in that order) of the
/// first link of the physical cable it runs on: its own position, except for the second and later
/// legs of a twin or splitter cable. The layout gives a direct cable to links that share a cage
/// only when one multi-port cable carries them all (`layout::cable`: a cage's ports that go to
/// different cages take a transceiver), so direct-cable links that share a cage are one cable.
/// Fibre links and straight cables (catalog `form`) are each their own; so are the links of a
/// straight cable the layout put into a shared cage for want of any other part (flagged by the
/// plan).
pub fn cable_firsts(f: &Fabric, catalog: &Catalog) -> Vec<u32> {
    let mut first_in: HashMap<(NodeId, u32), u32> = HashMap::new();
    f.network_links()
        .enumerate()
        .map(|(i, (_, l))| {
            let i = i as u32;
            let Medium::Cable { part, .. } = &l.medium else {
                return i;
            };
            let multi = catalog
                .cables
                .get(&**part)
                .is_some_and(|c| c.form != railyard_catalog::CableForm::Straight);
            if !multi {
                return i;
            }
            let cages = [f.cage_holder(l.a), f.cage_holder(l.b)];
            let first = cages
                .iter()
                .filter_map(|c| first_in.get(c).copied())
                .min()
                .unwrap_or(i);
            for c in cages {
                first_in.entry(c).or_insert(first);
            }
            first
        })
        .collect()
}

/// Kinds of part, in bill-of-materials order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PartKind {
    Switch,
    Nic,
    Cable,
    Transceiver,
    Fibre,
}

impl PartKind {
    pub const ALL: [PartKind; 5] = [
        PartKind::Switch,
        PartKind::Nic,
        PartKind::Cable,
        PartKind::Transceiver,
        PartKind::Fibre,
    ];

    /// The BOM category name: `switch`, `nic`, `cable`, `transceiver`, `fibre`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Switch => "switch",
            PartKind::Nic => "nic",
            PartKind::Cable => "cable",
            PartKind::Transceiver => "transceiver",
            PartKind::Fibre => "fibre",
        }
    }
}

/// How many of one part (at one stocked length, for cables and fibre) a fabric holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartCount<'a> {
    pub kind: PartKind,
    pub part: &'a str,
    /// Stocked length in millimetres, for cables and fibre.
    pub length_mm: Option<u64>,
    pub quantity: u64,
}

impl PartCount<'_> {
    pub fn length_m(&self) -> Option<f64> {
        self.length_mm.map(|mm| mm as f64 / 1000.0)
    }
}

/// Every part of a fabric, sorted by kind, part and length. Compute NICs are parts (the NIC count is a
/// design choice); storage NICs and other endpoints belong to their servers and are not.
pub fn parts<'f>(f: &'f Fabric, catalog: &Catalog) -> Vec<PartCount<'f>> {
    type Key<'a> = (PartKind, &'a str, Option<u64>);
    let mut bom: BTreeMap<Key, u64> = BTreeMap::new();
    for node in &f.nodes {
        match node.kind {
            NodeKind::Switch { .. } => {
                *bom.entry((PartKind::Switch, &node.model, None))
                    .or_default() += 1
            }
            NodeKind::Nic { .. } => {
                *bom.entry((PartKind::Nic, &node.model, None)).or_default() += 1
            }
            _ => {}
        }
    }
    fn add<'a>(m: &'a Medium, n: u64, bom: &mut BTreeMap<Key<'a>, u64>) {
        let (kind, part, len): (PartKind, &'a str, f64) = match m {
            Medium::Cable { part, length_m, .. } => (PartKind::Cable, part, *length_m),
            Medium::Fibre { part, length_m, .. } => (PartKind::Fibre, part, *length_m),
            _ => return,
        };
        let mm = (len * 1000.0).round() as u64;
        *bom.entry((kind, part, Some(mm))).or_default() += n;
    }
    // Neighbouring links mostly share a medium: count runs of equal media, then add each run.
    let firsts = cable_firsts(f, catalog);
    let mut run: Option<(&Medium, u64)> = None;
    // The later legs of a twin or splitter cable are counted with its first.
    for (_, l) in f
        .network_links()
        .zip(&firsts)
        .enumerate()
        .filter(|(i, (_, &first))| first == *i as u32)
        .map(|(_, (link, _))| link)
    {
        match &mut run {
            Some((m, n)) if *m == &l.medium => *n += 1,
            _ => {
                if let Some((m, n)) = run.replace((&l.medium, 1)) {
                    add(m, n, &mut bom);
                }
            }
        }
    }
    if let Some((m, n)) = run {
        add(m, n, &mut bom);
    }
    for m in &f.modules {
        *bom.entry((PartKind::Transceiver, &m.part, None))
            .or_default() += 1;
    }
    bom.into_iter()
        .map(|((kind, part, length_mm), quantity)| PartCount {
            kind,
            part,
            length_mm,
            quantity,
        })
        .collect()
}

/// A part's catalog facts.
#[derive(Debug, Clone, Copy)]
pub struct PartInfo<'c> {
    pub description: &'c str,
    pub price: &'c Price,
    /// Power of one part, W (a whole cable for cables; zero for fibre).
    pub power_w: f64,
}

/// Looks a part up in the catalog (`None` for an id the catalog does not hold).
pub fn part_info<'c>(catalog: &'c Catalog, kind: PartKind, part: &str) -> Option<PartInfo<'c>> {
    Some(match kind {
        PartKind::Switch => {
            let s = catalog.switches.get(part)?;
            PartInfo {
                description: &s.name,
                price: &s.price,
                power_w: s.power_w,
            }
        }
        PartKind::Nic => {
            let n = catalog.nics.get(part)?;
            PartInfo {
                description: &n.name,
                price: &n.price,
                power_w: n.power_w,
            }
        }
        PartKind::Cable => {
            let c = catalog.cables.get(part)?;
            PartInfo {
                description: &c.name,
                price: &c.price,
                power_w: c.power_w,
            }
        }
        PartKind::Transceiver => {
            let t = catalog.transceivers.get(part)?;
            PartInfo {
                description: &t.name,
                price: &t.price,
                power_w: t.power_w,
            }
        }
        PartKind::Fibre => {
            let f = catalog.fibres.get(part)?;
            PartInfo {
                description: &f.name,
                price: &f.price,
                power_w: 0.0,
            }
        }
    })
}

/// The unit price of a part at its stocked length.
pub fn unit_price(catalog: &Catalog, p: &PartCount) -> f64 {
    part_info(catalog, p.kind, p.part)
        .map_or(0.0, |i| i.price.at_length(p.length_m().unwrap_or(0.0)))
}

/// Cost and power of a fabric's parts by kind, summed in bill-of-materials order.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Totals {
    /// US dollars per [`PartKind`] (in [`PartKind::ALL`] order).
    pub usd: [f64; 5],
    /// Watts per [`PartKind`].
    pub watts: [f64; 5],
    /// Whether any price behind the total is an estimate.
    pub includes_estimates: bool,
}

impl Totals {
    pub fn of(catalog: &Catalog, parts: &[PartCount]) -> Totals {
        let mut t = Totals::default();
        for p in parts {
            let Some(info) = part_info(catalog, p.kind, p.part) else {
                continue;
            };
            let i = p.kind as usize;
            t.usd[i] += info.price.at_length(p.length_m().unwrap_or(0.0)) * p.quantity as f64;
            t.watts[i] += info.power_w * p.quantity as f64;
            t.includes_estimates |= info.price.estimate;
        }
        t
    }

    /// The whole cost: switches + NICs + cables + transceivers + fibre, in that order.
    pub fn total_usd(&self) -> f64 {
        self.usd.iter().sum()
    }
}

/// What a built fabric costs at the catalog's prices.
pub fn cost(f: &Fabric, catalog: &Catalog) -> f64 {
    Totals::of(catalog, &parts(f, catalog)).total_usd()
}
