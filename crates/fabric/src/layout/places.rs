//! Where each device stands as a technician walks to it ([`Location`]: row, rack, slot) and the
//! rack units it fills ([`RackPlace`]), for verify and cabling.csv.

use super::hall::{place, Position, RackFill};
use super::server::server_height_u;
use crate::graph::{Fabric, NodeId};
use railyard_catalog::Catalog;
use railyard_spec::{ClusterSpec, LayoutSpec};
use std::collections::HashMap;

/// Where a device stands, as a technician walks to it: row and rack in the hall (1-based, in the
/// order [`place`] lays them out, the network row counted among the rows) and its slot among the
/// devices of that rack (1-based: a rack's servers in server order, then its switches in node order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Location {
    pub row: u32,
    pub rack: u32,
    pub slot: u32,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "row {} rack {} slot {}", self.row, self.rack, self.slot)
    }
}

/// The [`Location`] of every node, indexed by node id: a server's nodes stand where the server
/// stands; nodes that [`place`] does not place (none in a built fabric) have none.
pub fn locations(f: &Fabric, l: &LayoutSpec, fill: RackFill) -> Vec<Option<Location>> {
    let placement = place(f, l, fill);
    let mut slots: HashMap<(u32, u32), u32> = HashMap::new();
    let mut next = |p: Position| {
        let n = slots.entry((p.row, p.col)).or_default();
        *n += 1;
        Location {
            row: p.row + 1,
            rack: p.col + 1,
            slot: *n,
        }
    };
    let server: Vec<Location> = placement.server.iter().map(|&p| next(p)).collect();
    let mut out: Vec<Option<Location>> = f
        .nodes
        .iter()
        .map(|n| match n.server {
            Some(s) if !n.is_switch() => server.get(s as usize).copied(),
            _ => None,
        })
        .collect();
    for (i, slot) in out.iter_mut().enumerate() {
        if let Some(&p) = placement.node.get(&NodeId(i as u32)) {
            *slot = Some(next(p));
        }
    }
    out
}

/// Where a device stands for cabling.csv: its row and rack ([`Location`]) and the rack units it
/// fills. Shown as cabling.csv names it (`row 2 rack 5 U25`: its `a_row`, `a_rack` and `a_u`
/// columns); in JSON the location's keys (`row`, `rack`, `slot`: its position among the rack's
/// devices) and `u` and `height_u` where known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RackPlace {
    #[serde(flatten)]
    pub location: Location,
    /// The lowest rack unit the device fills (1-based, counted from the bottom of the rack); `None`
    /// when the height of the device or of one below it is not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub u: Option<u32>,
    /// The device's height in rack units, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height_u: Option<u32>,
}

impl std::fmt::Display for RackPlace {
    /// `row 2 rack 5 U25`, or `row 2 rack 5` where the rack unit is not known (cabling.csv leaves
    /// `a_u` empty there too).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "row {} rack {}", self.location.row, self.location.rack)?;
        match self.u {
            Some(u) => write!(f, " U{u}"),
            None => Ok(()),
        }
    }
}

/// The [`RackPlace`] of every node, indexed by node id: [`locations`], and each rack filled from
/// its bottom unit up in slot order (its servers in server order, then its switches in node
/// order), every device as tall as `height` says (a server's nodes share their server's place).
pub fn rack_places(
    f: &Fabric,
    l: &LayoutSpec,
    fill: RackFill,
    height: impl Fn(&crate::graph::Node) -> Option<u32>,
) -> Vec<Option<RackPlace>> {
    let locations = locations(f, l, fill);
    // Each device once: (location, its height), by location (rack, then slot).
    let mut devices: std::collections::BTreeMap<Location, Option<u32>> =
        std::collections::BTreeMap::new();
    for (node, at) in f.nodes.iter().zip(&locations) {
        if let Some(at) = at {
            devices.entry(*at).or_insert_with(|| height(node));
        }
    }
    let mut lowest: HashMap<Location, Option<u32>> = HashMap::with_capacity(devices.len());
    let mut rack = None;
    let mut next: Option<u32> = Some(1);
    for (at, h) in &devices {
        if rack != Some((at.row, at.rack)) {
            rack = Some((at.row, at.rack));
            next = Some(1);
        }
        lowest.insert(*at, next);
        next = next.zip(*h).map(|(u, h)| u + h);
    }
    locations
        .into_iter()
        .map(|at| {
            at.map(|location| RackPlace {
                location,
                u: lowest[&location],
                height_u: devices[&location],
            })
        })
        .collect()
}

/// [`rack_places`] of a fabric built from `spec` with `catalog`: a switch as tall as its catalog
/// model; a server as [`server_height_u`] says; any other device (a storage system, a PDU) of
/// unknown height.
pub fn rack_places_of(f: &Fabric, spec: &ClusterSpec, catalog: &Catalog) -> Vec<Option<RackPlace>> {
    let server = server_height_u(spec, catalog).map(|(_, u)| u);
    rack_places(f, &spec.layout, RackFill::of(f, spec, catalog), |n| {
        if n.is_switch() {
            catalog.switches.get(&*n.model).map(|s| s.rack_units)
        } else if n.server.is_some() {
            server
        } else {
            None
        }
    })
}
