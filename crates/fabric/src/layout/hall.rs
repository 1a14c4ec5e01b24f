//! The hall: where servers, leaves and the switches above them stand ([`Hall`], [`place`]), how
//! many fill a rack ([`RackFill`]), and the run between two places ([`run_length`]).

use super::server::ServerSlot;
use crate::graph::{Fabric, LinkKind, NodeId, Tier};
use railyard_catalog::Catalog;
use railyard_spec::{ClusterSpec, LayoutSpec, LeafPlacement};
use std::collections::HashMap;

/// Where a device stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position {
    /// Row index in the hall (the network row included).
    pub row: u32,
    /// Column (rack slot) in the row.
    pub col: u32,
}

impl Position {
    pub(super) fn x(&self, l: &LayoutSpec) -> f64 {
        f64::from(self.col) * l.rack_pitch_m
    }
    pub(super) fn y(&self, l: &LayoutSpec) -> f64 {
        f64::from(self.row) * l.row_pitch_m
    }
}

/// Cable run between two positions, m, before rounding to a stocked length.
pub fn run_length(a: Position, b: Position, l: &LayoutSpec) -> f64 {
    if a == b {
        return l.in_rack_m;
    }
    let d = (a.x(l) - b.x(l)).abs() + (a.y(l) - b.y(l)).abs() + 2.0 * l.tray_drop_m;
    d * (1.0 + l.slack)
}

/// Positions of every server and switch.
pub struct Placement {
    pub server: Vec<Position>,
    pub node: HashMap<NodeId, Position>,
}

/// How many servers and how many switches stand in one rack: the layout's numbers, or as many as
/// fit in `layout.rack_units` and within `layout.max_rack_kw` where that is fewer
/// ([`LayoutSpec::servers_in_rack`], [`LayoutSpec::switches_in_rack`]); a rack-scale system's trays
/// as many as the system holds. The one rule for the search's hall, the built fabric's placement,
/// the rack counts and the elevations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RackFill {
    pub servers: u32,
    pub switches: u32,
}

impl RackFill {
    /// Servers as `server` asks (height and power unknown: as many as the layout says) and
    /// switches `switch_u` tall.
    pub fn new(l: &LayoutSpec, server: ServerSlot, switch_u: u32) -> RackFill {
        RackFill {
            servers: server
                .rack_trays
                .unwrap_or_else(|| l.servers_in_rack(server.height_u, server.power_w))
                .max(1),
            switches: l.switches_in_rack(switch_u),
        }
    }

    /// The fill of fabric `f` planned from `spec`: its servers as [`ServerSlot::of`] says, its
    /// switches as tall as its switch model (a model the catalog does not list counts as 1U).
    pub fn of(f: &Fabric, spec: &ClusterSpec, catalog: &Catalog) -> RackFill {
        RackFill::new(
            &spec.layout,
            ServerSlot::of(spec, catalog),
            catalog
                .switches
                .get(&f.meta.switch_model)
                .map_or(1, |s| s.rack_units),
        )
    }
}

/// The rack of every server, given each server's scalable unit in server order: servers fill racks
/// in order, `per_rack` each, and a unit starts a new rack.
pub(super) fn server_racks(units: impl Iterator<Item = Option<u32>>, per_rack: u32) -> Vec<u32> {
    let mut rack_of = Vec::with_capacity(units.size_hint().0);
    let (mut rack, mut in_rack, mut last_su) = (0u32, 0u32, None);
    for su in units {
        if in_rack == per_rack.max(1) || (su != last_su && in_rack > 0) {
            rack += 1;
            in_rack = 0;
        }
        rack_of.push(rack);
        in_rack += 1;
        last_su = su;
    }
    rack_of
}

/// Where the servers, the leaves and the switches above them stand, from what a design fixes: each
/// server's scalable unit (racks), each leaf's first server, in leaf order (its row and slot), and
/// the order of the switches above (the network row). [`place`] places a built fabric with it, and
/// the design search the shapes it has not built ([`MediaFloor::runs`](super::MediaFloor::runs)), so both see the same hall.
pub struct Hall<'l> {
    l: &'l LayoutSpec,
    /// Switches in one network rack ([`RackFill`]).
    per_rack: u32,
    rack_of: Vec<u32>,
    net_row: u32,
    /// Racks that middle-of-row network racks move the right half of every row over by.
    shift: u32,
    /// Every leaf's position, in leaf order.
    pub leaves: Vec<Position>,
}

impl<'l> Hall<'l> {
    pub fn new(
        l: &'l LayoutSpec,
        fill: RackFill,
        units: impl Iterator<Item = Option<u32>>,
        leaf_first_servers: &[u32],
    ) -> Hall<'l> {
        let per_rack = fill.switches.max(1);
        let rack_of = server_racks(units, fill.servers);
        let rack = rack_of.last().copied().unwrap_or(0);
        let server_rows = (rack + 1).div_ceil(l.racks_per_row);
        let mut hall = Hall {
            l,
            per_rack,
            rack_of,
            net_row: server_rows / 2,
            shift: 0,
            leaves: Vec::with_capacity(leaf_first_servers.len()),
        };
        let mid_col = l.racks_per_row / 2;
        if l.leaf_placement == LeafPlacement::MiddleOfRow {
            // Network racks per row: server racks right of them shift over.
            let mut net_racks_in_row: HashMap<u32, u32> = HashMap::new();
            for &s in leaf_first_servers {
                *net_racks_in_row
                    .entry(hall.row_of(hall.rack_of[s as usize]))
                    .or_default() += 1;
            }
            hall.shift = net_racks_in_row
                .values()
                .map(|n| n.div_ceil(per_rack))
                .max()
                .unwrap_or(0);
        }
        let mut per_row: HashMap<u32, u32> = HashMap::new();
        for &s in leaf_first_servers {
            let home = hall.server(s);
            let pos = match l.leaf_placement {
                LeafPlacement::TopOfRack => home,
                placement => {
                    let n = per_row.entry(home.row).or_default();
                    let slot = *n / per_rack;
                    *n += 1;
                    let base = if placement == LeafPlacement::EndOfRow {
                        l.racks_per_row + hall.shift
                    } else {
                        mid_col
                    };
                    Position {
                        row: home.row,
                        col: base + slot,
                    }
                }
            };
            hall.leaves.push(pos);
        }
        hall
    }

    fn row_of(&self, rack: u32) -> u32 {
        let row = rack / self.l.racks_per_row;
        if row >= self.net_row {
            row + 1
        } else {
            row
        }
    }

    /// Where server `s` stands.
    pub fn server(&self, s: u32) -> Position {
        let l = self.l;
        let r = self.rack_of[s as usize];
        let col = r % l.racks_per_row;
        Position {
            row: self.row_of(r),
            col: if col >= l.racks_per_row / 2 {
                col + self.shift
            } else {
                col
            },
        }
    }

    /// How many rows server `s` stands from the network row (at least 1).
    pub fn rows_from_network(&self, s: u32) -> u32 {
        self.server(s).row.abs_diff(self.net_row)
    }

    /// Where the `i`-th switch that is not a leaf of servers stands (spines, then cores, in node
    /// order): the network row, as many to a rack as [`Hall::new`] was told.
    pub fn upper(&self, i: u64) -> Position {
        Position {
            row: self.net_row,
            col: (i / u64::from(self.per_rack)) as u32,
        }
    }
}

/// Places servers and switches in the hall, as many to a rack as `fill` says ([`RackFill::of`]).
pub fn place(f: &Fabric, l: &LayoutSpec, fill: RackFill) -> Placement {
    // First server of every leaf, from its server-leaf links (indexed by node id; MAX: none).
    let mut first_server = vec![u32::MAX; f.nodes.len()];
    for link in &f.links {
        if link.kind != LinkKind::ServerLeaf {
            continue;
        }
        // A leaf of devices outside the servers stands in the network row with them.
        let Some(server) = f.port_node(link.a).server else {
            continue;
        };
        let e = &mut first_server[f.port(link.b).node.0 as usize];
        *e = (*e).min(server);
    }
    let (leaves, firsts): (Vec<NodeId>, Vec<u32>) = first_server
        .iter()
        .enumerate()
        .filter(|(_, &s)| s != u32::MAX)
        .map(|(i, &s)| (NodeId(i as u32), s))
        .unzip();
    let hall = Hall::new(l, fill, f.servers.iter().map(|s| s.su), &firsts);
    let mut node: HashMap<NodeId, Position> = leaves
        .into_iter()
        .zip(hall.leaves.iter().copied())
        .collect();
    // Spines, then cores, in the network row; switches without servers that are not placed yet too.
    let mut by_tier: [Vec<NodeId>; 3] = Default::default();
    for (i, n) in f.nodes.iter().enumerate() {
        if let Some(tier) = n.tier() {
            by_tier[tier as usize].push(NodeId(i as u32));
        }
    }
    let mut idx = 0u64;
    for tier in [Tier::Leaf, Tier::Spine, Tier::Core] {
        for &id in &by_tier[tier as usize] {
            if node.contains_key(&id) {
                continue;
            }
            node.insert(id, hall.upper(idx));
            idx += 1;
        }
    }
    // A device outside the servers (a storage system, a management server, another network's switch)
    // stands in the rack of the first switch it is cabled to.
    for (i, n) in f.nodes.iter().enumerate() {
        if n.server.is_some() || n.is_switch() {
            continue;
        }
        let far = n.ports().find_map(|p| {
            let l = f.link(f.port(p).link()?);
            let other = if l.a == p { l.b } else { l.a };
            node.get(&f.port(other).node).copied()
        });
        if let Some(pos) = far {
            node.insert(NodeId(i as u32), pos);
        }
    }
    let server = (0..f.servers.len() as u32)
        .map(|s| hall.server(s))
        .collect();
    Placement { server, node }
}

/// Racks of a placed fabric: (server racks, racks holding its switches).
pub fn rack_counts(f: &Fabric, l: &LayoutSpec, fill: RackFill) -> (u32, u32) {
    let p = place(f, l, fill);
    let mut servers: Vec<(u32, u32)> = p.server.iter().map(|x| (x.row, x.col)).collect();
    servers.sort_unstable();
    servers.dedup();
    let mut switches: Vec<(u32, u32)> = p
        .node
        .iter()
        .filter(|(id, _)| f.node(**id).is_switch())
        .map(|(_, x)| (x.row, x.col))
        .collect();
    switches.sort_unstable();
    switches.dedup();
    (servers.len() as u32, switches.len() as u32)
}
