//! The machine room: where racks stand, how long each cable run is, and which cable or optics carry it.
//!
//! Model (every distance in metres, every parameter in [`LayoutSpec`]):
//! - Server racks stand in rows of `racks_per_row`, `rack_pitch_m` apart; rows are `row_pitch_m` apart.
//!   Servers fill racks in order, `servers_per_rack` each; a scalable unit starts a new rack.
//! - Leaves sit in network racks at the end or in the middle of the row of the first server they serve,
//!   or in that server's own rack (`leaf_placement`), `switches_per_rack` to a rack.
//! - Spines and cores sit in a network row in the middle of the hall.
//! - A run between racks goes up to the overhead tray, along it (Manhattan distance), and down:
//!   `(|dx| + |dy| + 2 x tray_drop_m) x (1 + slack)`; a run inside one rack is `in_rack_m`.
//! - The run is rounded up to a stocked length. Each run gets the cheapest catalog medium that reaches
//!   it: passive copper, active copper, active optical cable, or transceivers and fibre. Ports that share
//!   a cage (twin-port OSFP) share one transceiver, so all links through a cage use one kind of medium.

use crate::error::{err, BuildError};
use crate::graph::{CageIndex, Fabric, LinkKind, Medium, Module, NodeId, PortId, Tier, UnionFind};
use crate::hardware::Resolved;
use crate::shape::Shape;
use crate::topo::{self, Counts, Ends};
use railyard_catalog::{
    CableForm, CableKind, CableUse, Catalog, FibreKind, Tech, TransceiverModel, CONNECTORS,
};
use railyard_spec::{ClusterSpec, LayoutSpec, LeafPlacement, Topology};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub use crate::hardware::server_height_u;

/// Where a device stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position {
    /// Row index in the hall (the network row included).
    pub row: u32,
    /// Column (rack slot) in the row.
    pub col: u32,
}

impl Position {
    fn x(&self, l: &LayoutSpec) -> f64 {
        f64::from(self.col) * l.rack_pitch_m
    }
    fn y(&self, l: &LayoutSpec) -> f64 {
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
/// fit in `layout.rack_units` where that is fewer ([`LayoutSpec::servers_in_rack`],
/// [`LayoutSpec::switches_in_rack`]). The one rule for the search's hall, the built fabric's
/// placement, the rack counts and the elevations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RackFill {
    pub servers: u32,
    pub switches: u32,
}

impl RackFill {
    /// Servers `server_u` tall (unknown: as many as the layout says) and switches `switch_u` tall.
    pub fn new(l: &LayoutSpec, server_u: Option<u32>, switch_u: u32) -> RackFill {
        RackFill {
            servers: server_u
                .map_or(l.servers_per_rack, |u| l.servers_in_rack(u))
                .max(1),
            switches: l.switches_in_rack(switch_u),
        }
    }

    /// The fill of fabric `f` planned from `spec`: its servers as [`server_height_u`] says, its
    /// switches as tall as its switch model (a model the catalog does not list counts as 1U).
    pub fn of(f: &Fabric, spec: &ClusterSpec, catalog: &Catalog) -> RackFill {
        RackFill::new(
            &spec.layout,
            server_height_u(spec, catalog).map(|(_, u)| u),
            catalog
                .switches
                .get(&f.meta.switch_model)
                .map_or(1, |s| s.rack_units),
        )
    }
}

/// The rack of every server, given each server's scalable unit in server order: servers fill racks
/// in order, `per_rack` each, and a unit starts a new rack.
fn server_racks(units: impl Iterator<Item = Option<u32>>, per_rack: u32) -> Vec<u32> {
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
/// the design search the shapes it has not built ([`MediaFloor::runs`]), so both see the same hall.
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
/// fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RackPlace {
    pub location: Location,
    /// The lowest rack unit the device fills (1-based, counted from the bottom of the rack); `None`
    /// when the height of the device or of one below it is not known.
    pub u: Option<u32>,
    /// The device's height in rack units, where known.
    pub height_u: Option<u32>,
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

/// The kind of medium a group of links shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Class {
    Direct(CableKind),
    Optics(FibreKind),
}

const CLASSES: [Class; 6] = [
    Class::Direct(CableKind::Utp),
    Class::Direct(CableKind::Dac),
    Class::Direct(CableKind::Acc),
    Class::Direct(CableKind::Aoc),
    Class::Optics(FibreKind::Mmf),
    Class::Optics(FibreKind::Smf),
];

/// How the links of one group (those sharing multi-port cages, see [`cable`]) can be cabled
/// directly: the layout's rule that a cable's plugs must fit the cages at its ends. The one
/// classifier of shared cages: the layout chooses parts by it, and the plan flags straight cables
/// left in shared cages by it ([`shared_cage_groups`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupForm {
    /// One link, whose cages carry nothing else: a straight cable.
    Single,
    /// One cable for the group: both ends' cages carry the same links (twin), or one cage carries
    /// them all and every other end carries one link (splitter); `ports` is that cage's size.
    Assembly { form: CableForm, ports: u32 },
    /// A cage's links go to cages that carry other links too: no cable fits, only transceivers.
    Mesh,
}

impl GroupForm {
    /// The form of a group from its links' ends and the links through each cage slot.
    fn of<'e>(group: impl Iterator<Item = &'e [End; 2]>, links_in: &[u32]) -> GroupForm {
        // The cages that carry more than one link: up to two are told apart, a third is a mesh.
        let mut multi: [Option<&End>; 2] = [None, None];
        let mut more = false;
        let mut twin = true;
        let mut splitter = true;
        let mut n = 0;
        for e in group {
            n += 1;
            let [a, b] = e.map(|end| links_in[end.slot as usize] > 1);
            for (end, shared) in e.iter().zip([a, b]) {
                if !shared || multi.iter().flatten().any(|m| m.slot == end.slot) {
                    continue;
                }
                match multi.iter_mut().find(|m| m.is_none()) {
                    Some(free) => *free = Some(end),
                    None => more = true,
                }
            }
            twin &= a && b;
            splitter &= a != b;
        }
        match multi {
            _ if n == 1 => GroupForm::Single,
            _ if more => GroupForm::Mesh,
            [Some(x), Some(y)] if twin && x.cage_size == y.cage_size => GroupForm::Assembly {
                form: CableForm::Twin,
                ports: x.cage_size,
            },
            [Some(x), None] if splitter => GroupForm::Assembly {
                form: CableForm::Splitter,
                ports: x.cage_size,
            },
            _ => GroupForm::Mesh,
        }
    }
}

/// Picks the media of one class for one run: the part, its stocked length and its cost per link.
struct Chooser<'a> {
    catalog: &'a Catalog,
    tech: Tech,
    /// The links' rate: a multi-port cable must carry it on every port.
    gbps: u32,
    /// One shared copy of each part id: a fabric names a handful of parts on a million links.
    parts: std::cell::RefCell<HashMap<String, Arc<str>>>,
}

impl Chooser<'_> {
    fn part(&self, id: &str) -> Arc<str> {
        let mut parts = self.parts.borrow_mut();
        if let Some(p) = parts.get(id) {
            return p.clone();
        }
        let p: Arc<str> = id.into();
        parts.insert(id.to_string(), p.clone());
        p
    }

    /// The cheapest straight cable of `kind` for one link of `run`.
    fn direct(&self, kind: CableKind, use_: CableUse, run: f64) -> Option<(&str, f64, f64)> {
        self.catalog
            .cables
            .values()
            .filter(|c| {
                c.kind == kind
                    && c.form == CableForm::Straight
                    && c.carries(self.tech, self.gbps)
                    && c.uses.contains(&use_)
            })
            .filter_map(|c| {
                c.length_for(run)
                    .map(|len| (c.id.as_str(), len, c.price.at_length(len)))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
    }

    /// The cheapest twin or splitter cable of `kind` with a plug of `ports` ports for a group of
    /// links of these uses whose longest run is `run`: its medium (every link of the group takes
    /// it) and the price of the one cable.
    fn assembly(
        &self,
        kind: CableKind,
        form: CableForm,
        ports: u32,
        uses: &[CableUse],
        run: f64,
    ) -> Option<(Medium, f64)> {
        self.catalog
            .cables
            .values()
            .filter(|c| {
                c.kind == kind
                    && c.form == form
                    && c.ports == ports
                    && c.carries(self.tech, self.gbps)
                    && uses.iter().all(|u| c.uses.contains(u))
            })
            .filter_map(|c| {
                c.length_for(run)
                    .map(|len| (c, len, c.price.at_length(len)))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(c, length_m, cost)| {
                (
                    Medium::Cable {
                        kind,
                        part: self.part(&c.id),
                        length_m,
                    },
                    cost,
                )
            })
    }

    /// The least any multi-port cable of this technology that fits cages of these sizes costs per
    /// link it carries on a run of `run` (its price over its ports): what a link can cost at best in
    /// a twin group (both cages of its ports) or a splitter group (one cage of its ports).
    fn assembly_share(&self, use_: CableUse, run: f64, cages: [u32; 2]) -> Option<f64> {
        self.catalog
            .cables
            .values()
            .filter(|c| {
                let fits = match c.form {
                    CableForm::Straight => false,
                    CableForm::Twin => cages == [c.ports, c.ports],
                    CableForm::Splitter => cages.contains(&c.ports),
                };
                fits && c.carries(self.tech, self.gbps) && c.uses.contains(&use_)
            })
            .filter_map(|c| {
                c.length_for(run)
                    .map(|len| c.price.at_length(len) / f64::from(c.ports))
            })
            .min_by(f64::total_cmp)
    }

    /// Whether the catalog has any part for a group of this form between cages of these sizes: a
    /// twin or splitter cable of the form and size, or transceivers of the cages' sizes.
    fn has_parts_for(&self, form: GroupForm, cages: [u32; 2]) -> bool {
        let modules = cages.iter().all(|&size| {
            self.catalog
                .transceivers
                .values()
                .any(|t| t.techs.contains(&self.tech) && t.ports == size)
        });
        match form {
            GroupForm::Single => true,
            GroupForm::Mesh => modules,
            GroupForm::Assembly { form, ports } => {
                modules
                    || self.catalog.cables.values().any(|c| {
                        c.form == form && c.ports == ports && c.carries(self.tech, self.gbps)
                    })
            }
        }
    }

    /// The cheapest transceiver for a cage of `cage_ports` ports whose ports take `connector`.
    fn module(
        &self,
        fibre: FibreKind,
        connector: &str,
        cage_ports: u32,
        run: f64,
    ) -> Option<&TransceiverModel> {
        self.catalog
            .transceivers
            .values()
            .filter(|t| {
                t.fibre == fibre
                    && t.connector == connector
                    && t.techs.contains(&self.tech)
                    && t.ports == cage_ports
                    && t.reach_m + 1e-9 >= run
            })
            .min_by(|a, b| a.price.usd.total_cmp(&b.price.usd))
    }

    /// The cheapest fibre of this kind ending in `connector` that reaches `run`.
    fn fibre(&self, kind: FibreKind, connector: &str, run: f64) -> Option<(&str, f64, f64)> {
        self.catalog
            .fibres
            .values()
            .filter(|f| f.kind == kind && f.connector == connector)
            .filter_map(|f| {
                f.length_for(run)
                    .map(|len| (f.id.as_str(), len, f.price.at_length(len)))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
    }

    /// The connector a catalog fibre ends in.
    fn connector_of(&self, fibre_part: &str) -> &str {
        self.catalog
            .fibres
            .get(fibre_part)
            .map_or("mpo-12", |f| f.connector.as_str())
    }

    /// Medium and cost of one link in a class, or `None` if the class cannot carry it.
    fn medium(
        &self,
        class: Class,
        use_: CableUse,
        run: f64,
        cages: [u32; 2],
    ) -> Option<(Medium, f64)> {
        match class {
            Class::Direct(kind) => self.direct(kind, use_, run).map(|(part, length_m, cost)| {
                (
                    Medium::Cable {
                        kind,
                        part: self.part(part),
                        length_m,
                    },
                    cost,
                )
            }),
            // Modules at both ends and the fibre between them take one connector (an SR8 port
            // takes MPO-16, an LR4 port a duplex LC pair): the cheapest such set.
            Class::Optics(fibre) => CONNECTORS
                .iter()
                .filter_map(|connector| {
                    let a = self.module(fibre, connector, cages[0], run)?;
                    let b = self.module(fibre, connector, cages[1], run)?;
                    let (part, length_m, cost) = self.fibre(fibre, connector, run)?;
                    let modules =
                        a.price.usd / f64::from(a.ports) + b.price.usd / f64::from(b.ports);
                    Some((part, length_m, cost + modules))
                })
                .min_by(|a, b| a.2.total_cmp(&b.2))
                .map(|(part, length_m, cost)| {
                    (
                        Medium::Fibre {
                            fibre,
                            part: self.part(part),
                            length_m,
                        },
                        cost,
                    )
                }),
        }
    }

    /// The longest run any medium of this technology reaches between ends of these cage sizes (and
    /// that kind of link), with what reaches it, for error messages.
    fn longest_reach(&self, use_: CableUse, cages: [u32; 2], form: GroupForm) -> (f64, String) {
        let cables = self
            .catalog
            .cables
            .values()
            .filter(|c| c.carries(self.tech, self.gbps) && c.uses.contains(&use_))
            .filter(|c| match form {
                GroupForm::Single => c.form == CableForm::Straight,
                GroupForm::Assembly { form, ports } => c.form == form && c.ports == ports,
                GroupForm::Mesh => false,
            })
            .map(|c| (c.reach_m(), c.id.clone()));
        let end_reach = |fibre: FibreKind, connector: &str, size: u32| {
            self.catalog
                .transceivers
                .values()
                .filter(|t| {
                    t.fibre == fibre
                        && t.connector == connector
                        && t.techs.contains(&self.tech)
                        && t.ports == size
                })
                .map(|t| (t.reach_m, t.id.clone()))
                .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
        };
        let optics = [FibreKind::Mmf, FibreKind::Smf]
            .into_iter()
            .flat_map(|kind| CONNECTORS.iter().map(move |c| (kind, *c)))
            .filter_map(|(kind, connector)| {
                let (ra, ma) = end_reach(kind, connector, cages[0])?;
                let (rb, mb) = end_reach(kind, connector, cages[1])?;
                let (rf, fibre) = self
                    .catalog
                    .fibres
                    .values()
                    .filter(|f| f.kind == kind && f.connector == connector)
                    .map(|f| (f.lengths_m.last().copied().unwrap_or(0.0), f.id.clone()))
                    .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))?;
                let modules = if ma == mb { ma } else { format!("{ma} + {mb}") };
                Some((ra.min(rb).min(rf), format!("{modules} over {fibre}")))
            });
        cables
            .chain(optics)
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
            .unwrap_or((0.0, "nothing".to_string()))
    }
}

/// What cabling needs to know of one end of a network link.
#[derive(Debug, Clone, Copy)]
struct End {
    node: NodeId,
    cage: u32,
    /// [`CageIndex`] slot of the end's cage.
    slot: u32,
    /// Ports sharing that cage.
    cage_size: u32,
}

/// What cabling a fabric needs to know besides the graph: the hall, the catalog, the technology its
/// links run and the ports per cage at either end.
#[derive(Debug, Clone, Copy)]
pub struct CableCtx<'a> {
    pub layout: &'a LayoutSpec,
    /// Servers and the fabric's switches in one rack ([`RackFill`]).
    pub fill: RackFill,
    pub catalog: &'a Catalog,
    pub tech: Tech,
    /// The links' rate, Gb/s (the switch ports' in their mode).
    pub gbps: u32,
    /// Ports sharing one cage on the fabric's switches.
    pub switch_cage: u32,
    /// Ports sharing one cage on the hosts' side (twin-port OSFP on DGX H100 compute NICs).
    pub host_cage: u32,
}

impl<'a> CableCtx<'a> {
    /// The compute fabric's cabling context.
    pub fn of(r: &'a Resolved) -> CableCtx<'a> {
        CableCtx {
            layout: &r.spec.layout,
            fill: RackFill::new(
                &r.spec.layout,
                server_height_u(r.spec, r.catalog).map(|(_, u)| u),
                r.switch.rack_units,
            ),
            catalog: r.catalog,
            tech: r.spec.fabric.tech,
            gbps: r.mode.gbps,
            switch_cage: r.switch.ports_per_cage(r.mode),
            host_cage: r.host_cage(),
        }
    }

    fn chooser(&self) -> Chooser<'a> {
        Chooser {
            catalog: self.catalog,
            tech: self.tech,
            gbps: self.gbps,
            parts: Default::default(),
        }
    }

    /// Cost per link of the cheapest medium for a run of `run_m` (its share of the transceivers
    /// included), or `None` if nothing reaches it.
    fn link_cost(&self, use_: CableUse, run_m: f64, cages: [u32; 2]) -> Option<f64> {
        let chooser = self.chooser();
        CLASSES
            .iter()
            .filter_map(|&class| chooser.medium(class, use_, run_m, cages).map(|(_, c)| c))
            .chain(chooser.assembly_share(use_, run_m, cages))
            .min_by(f64::total_cmp)
    }

    /// Typical cost per link of the cables and optics of a hall of `servers` servers: (server to leaf,
    /// switch to switch), for ranking designs before they are built. The runs are typical, not exact:
    /// a server half a row from its leaf, a switch a quarter of the hall from the network row. Exact
    /// costs come from [`place_and_cable`] on the built fabric.
    pub fn typical_link_costs(&self, servers: u32) -> (f64, f64) {
        let l = self.layout;
        let racks = servers.div_ceil(self.fill.servers.max(1)).max(1);
        let rows = racks.div_ceil(l.racks_per_row).max(1);
        let along = f64::from(l.racks_per_row) * l.rack_pitch_m / 2.0;
        let across = f64::from(rows.div_ceil(4).max(1)) * l.row_pitch_m;
        let run = |d: f64| (d + 2.0 * l.tray_drop_m) * (1.0 + l.slack);
        let cost = |use_, d, cages| {
            // Past every medium's reach the layout refuses the design; price it as the dearest.
            self.link_cost(use_, run(d), cages)
                .or_else(|| self.link_cost(use_, 0.0, cages))
                .unwrap_or(0.0)
        };
        (
            cost(
                CableUse::HostSwitch,
                along,
                [self.host_cage, self.switch_cage],
            ),
            cost(
                CableUse::SwitchSwitch,
                along + across,
                [self.switch_cage, self.switch_cage],
            ),
        )
    }
}

/// The least any design's cables and optics can cost, from what every design of a request shares:
/// where its servers stand, and where leaves, spines and cores may stand ([`place`]). A lower bound,
/// so the search can skip designs that cannot be cheaper than one it has built, and refuse at once a
/// switch whose cables cannot reach the servers in any design.
///
/// Per link it is the cheapest medium at the shortest run the link can have (its share of the
/// transceivers included): every medium costs at least as much on a longer run, a cage's transceiver
/// costs at least its share per link through it, and links that share a cage share a class of medium,
/// which can only cost more.
#[derive(Debug, Clone)]
pub struct MediaFloor<'c> {
    ctx: CableCtx<'c>,
    /// Cheapest cost per link by (towards a host, run): a hall has few distinct runs.
    memo: std::cell::RefCell<HashMap<(bool, u64), Option<f64>>>,
}

impl<'c> MediaFloor<'c> {
    pub fn new(ctx: CableCtx<'c>) -> MediaFloor<'c> {
        MediaFloor {
            ctx,
            memo: Default::default(),
        }
    }

    /// The cheapest medium's cost per link for a run (see [`CableCtx::link_cost`]), remembered.
    fn link_cost(&self, to_host: bool, run: f64) -> Option<f64> {
        *self
            .memo
            .borrow_mut()
            .entry((to_host, run.to_bits()))
            .or_insert_with(|| {
                let (host, switch) = (self.ctx.host_cage, self.ctx.switch_cage);
                if to_host {
                    self.ctx
                        .link_cost(CableUse::HostSwitch, run, [host, switch])
                } else {
                    self.ctx
                        .link_cost(CableUse::SwitchSwitch, run, [switch, switch])
                }
            })
    }

    fn run(&self, dx_racks: u32, dy_rows: u32) -> f64 {
        let l = self.ctx.layout;
        (f64::from(dx_racks) * l.rack_pitch_m
            + f64::from(dy_rows) * l.row_pitch_m
            + 2.0 * l.tray_drop_m)
            * (1.0 + l.slack)
    }

    /// The shortest run between two devices that may share a rack.
    fn shortest(&self) -> f64 {
        self.ctx.layout.in_rack_m.min(self.run(0, 0))
    }

    /// The server-to-leaf links of `servers` servers in units of `su` (or none), `links_per_server`
    /// each: the least they cost, or `Err(run)` when some server's shortest run to any leaf is longer
    /// than every medium reaches (no design of this switch can cable it).
    ///
    /// A leaf stands at the end of its first server's row (column `racks_per_row` or beyond), in the
    /// middle (columns `racks_per_row / 2` and on, server racks right of the middle moved over), or in
    /// its first server's rack; so a server in column c is at least `racks_per_row - c`, `mid - c` or
    /// `c - mid + 1` racks from its leaf, or (top of rack) in its rack or beside it.
    pub fn server_leaf(
        &self,
        servers: u32,
        su: Option<u32>,
        links_per_server: u64,
    ) -> Result<f64, f64> {
        let l = self.ctx.layout;
        let units = (0..servers).map(|i| su.map(|s| i / s.max(1)));
        let racks = server_racks(units, self.ctx.fill.servers);
        // Servers per column of the row.
        let mut per_col = vec![0u64; l.racks_per_row as usize];
        for r in racks {
            per_col[(r % l.racks_per_row) as usize] += 1;
        }
        let mid = l.racks_per_row / 2;
        let mut total = 0.0;
        for (col, &n) in per_col.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let col = col as u32;
            let run = match l.leaf_placement {
                LeafPlacement::EndOfRow => self.run(l.racks_per_row - col, 0),
                LeafPlacement::MiddleOfRow if col < mid => self.run(mid - col, 0),
                LeafPlacement::MiddleOfRow => self.run(col - mid + 1, 0),
                LeafPlacement::TopOfRack => self.shortest(),
            };
            let cost = self.link_cost(true, run).ok_or(run)?;
            total += cost * (n * links_per_server) as f64;
        }
        Ok(total)
    }

    /// The leaf-to-spine links of leaves `rows_away` rows from the network row (one entry per leaf,
    /// as [`Hall::rows_from_network`] gives for its first server), `uplinks` each, when `spines`
    /// spines stand in the network row from its first column, `per_rack` to a rack: a leaf
    /// stands at the end or the middle of its row, or in a server rack. `None` when no medium
    /// reaches some of them.
    pub fn leaf_spine(
        &self,
        rows_away: impl Iterator<Item = u32>,
        uplinks: u64,
        spines: u64,
    ) -> Option<f64> {
        let l = self.ctx.layout;
        let last_col = spines.saturating_sub(1) / u64::from(self.ctx.fill.switches.max(1));
        let leaf_col = match l.leaf_placement {
            LeafPlacement::EndOfRow => l.racks_per_row,
            LeafPlacement::MiddleOfRow => l.racks_per_row / 2,
            LeafPlacement::TopOfRack => 0,
        };
        let dx = u64::from(leaf_col).saturating_sub(last_col) as u32;
        // Leaves per distance.
        let mut per_row: Vec<u64> = Vec::new();
        for dy in rows_away {
            let dy = dy.max(1) as usize;
            if per_row.len() <= dy {
                per_row.resize(dy + 1, 0);
            }
            per_row[dy] += 1;
        }
        let mut total = 0.0;
        for (dy, &n) in per_row.iter().enumerate().filter(|(_, &n)| n > 0) {
            total += self.link_cost(false, self.run(dx, dy as u32))? * (n * uplinks) as f64;
        }
        Some(total)
    }

    /// `links` spine-to-core links from `spines` spines to `cores` cores, every core taking as many:
    /// both tiers stand in the network row, spines first, `per_rack` to a rack, so a core
    /// is at least as far from every spine as from the last spine's rack.
    pub fn spine_core(&self, spines: u64, cores: u64, links: u64) -> Option<f64> {
        if links == 0 || cores == 0 {
            return Some(0.0);
        }
        let spr = u64::from(self.ctx.fill.switches.max(1));
        let last_spine_col = spines.saturating_sub(1) / spr;
        let per_core = links as f64 / cores as f64;
        let mut total = 0.0;
        // Cores by rack column: the first and last column may be part-filled.
        let mut i = spines;
        while i < spines + cores {
            let col = i / spr;
            let in_col = ((col + 1) * spr).min(spines + cores) - i;
            let dx = col - last_spine_col;
            let run = if dx == 0 {
                self.shortest()
            } else {
                self.run(dx as u32, 0)
            };
            total += self.link_cost(false, run)? * per_core * in_col as f64;
            i += in_col;
        }
        Some(total)
    }

    /// One inter-switch link: its ends may share a rack.
    pub fn switch_switch(&self) -> Option<f64> {
        self.link_cost(false, self.shortest())
    }

    /// Every network link of a tree shape at its own run, where [`place`] would put its ends once
    /// built ([`Hall`], [`topo::each_link`]), at the cheapest medium for that run: `Ok(cost)`,
    /// `Err(run)` when some run is longer than every medium reaches, `None` for designs without a
    /// tree. Only sharing of cages is left out, which can only cost more.
    pub fn runs(&self, spec: &ClusterSpec, shape: &Shape, c: &Counts) -> Option<Result<f64, f64>> {
        let l = self.ctx.layout;
        let firsts = topo::leaf_first_servers(spec, shape, c)?;
        let su = shape
            .su_size
            .filter(|_| spec.fabric.topology == Topology::RailOptimized);
        let hall = Hall::new(
            l,
            self.ctx.fill,
            (0..spec.servers.count).map(|i| su.map(|s| i / s.max(1))),
            &firsts,
        );
        // Links by (towards a host, run): a hall has few distinct runs, so each is priced once, in
        // order of first appearance. The run is `run_length`'s, as the built fabric measures it.
        let mut links: HashMap<(bool, u64), u64> = HashMap::new();
        let mut order: Vec<(bool, u64)> = Vec::new();
        let mut last: Option<((bool, u64), u64)> = None;
        let visited = topo::each_link(spec, shape, c, &mut |ends, n| {
            let (a, b, to_host) = match ends {
                Ends::ServerLeaf { server, leaf } => {
                    (hall.server(server), hall.leaves[leaf as usize], true)
                }
                Ends::LeafSpine { leaf, spine } => {
                    (hall.leaves[leaf as usize], hall.upper(spine), false)
                }
                Ends::SpineCore { spine, core } => (hall.upper(spine), hall.upper(core), false),
            };
            let key = (to_host, run_length(a, b, l).to_bits());
            // Neighbouring links mostly share a distance: count runs of equal keys.
            match &mut last {
                Some((k, m)) if *k == key => *m += n,
                _ => {
                    if let Some((k, m)) = last.replace((key, n)) {
                        *links.entry(k).or_insert_with(|| {
                            order.push(k);
                            0
                        }) += m;
                    }
                }
            }
        });
        if let Some((k, m)) = last {
            *links.entry(k).or_insert_with(|| {
                order.push(k);
                0
            }) += m;
        }
        let mut total = 0.0;
        let mut unreached: Option<f64> = None;
        for key @ (to_host, bits) in order {
            let run = f64::from_bits(bits);
            match self.link_cost(to_host, run) {
                Some(x) => total += x * links[&key] as f64,
                None => unreached = Some(unreached.unwrap_or(0.0).max(run)),
            }
        }
        visited.then(|| unreached.map_or(Ok(total), Err))
    }
}

/// The links that share multi-port cages, grouped: links that share a cage must share a kind of
/// medium (one twin-port or splitter cable, or a transceiver per cage).
struct CageGroups {
    /// The cages links pass through; each end's `slot` indexes them.
    cages: CageIndex,
    /// Per link, its group: the smallest link index of the group (links ascend with their ids, so
    /// that is the group's first link).
    root: Vec<u32>,
    /// Per cage slot, the links through it: a cage that carries more than one decides how its
    /// group is cabled ([`GroupForm::of`]).
    links_in: Vec<u32>,
}

impl CageGroups {
    /// Groups the links whose ends are `ends` (on nodes `0..nodes`), setting each end's slot.
    fn of(nodes: usize, ends: &mut [[End; 2]]) -> CageGroups {
        let cages = CageIndex::of(nodes, ends.iter().flatten().map(|e| (e.node, e.cage)));
        for end in ends.iter_mut().flatten() {
            end.slot = cages
                .slot(end.node, end.cage)
                .expect("every end's cage is indexed") as u32;
        }
        let mut uf = UnionFind::new(ends.len());
        let mut cage_first = vec![u32::MAX; cages.len()];
        let mut links_in = vec![0u32; cages.len()];
        for (i, e) in ends.iter().enumerate() {
            for end in e {
                links_in[end.slot as usize] += 1;
                if end.cage_size > 1 {
                    let first = &mut cage_first[end.slot as usize];
                    if *first == u32::MAX {
                        *first = i as u32;
                    }
                    uf.union(*first, i as u32);
                }
            }
        }
        let root = (0..ends.len() as u32).map(|i| uf.find(i)).collect();
        CageGroups {
            cages,
            root,
            links_in,
        }
    }
}

/// Links given a straight direct cable (one link per cable) where a cage at one end carries more
/// than one link (twin-port OSFP on NDR and XDR switches and DGX servers, four 200GbE ports per
/// SN5600 cage), which such a cage cannot take: it needs a twin-port cable where every link of the
/// cage goes to one cage of as many (`twin`), a splitter where they go to as many single-port cages
/// (`splitter`), and transceivers with fibre where they go to different multi-port cages
/// (`optics`). The layout chooses those parts (`layout::cable`) wherever the catalog has any for
/// the cage's size; where it has none (four 200GbE or 100GbE ports per SN5600 cage), or in a fabric
/// read from a file written before the layout chose them, straight cables remain and are counted
/// here so they are not ordered as is.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CageCables {
    pub twin: u64,
    pub splitter: u64,
    pub optics: u64,
}

impl CageCables {
    pub fn links(&self) -> u64 {
        self.twin + self.splitter + self.optics
    }
}

/// [`CageCables`] of the network links of `f`: the straight cables of each group of links that
/// share multi-port cages, by the form the group takes ([`shared_cage_groups`], the
/// layout's own rule). The search passes over a design with any (`search::design`).
pub fn shared_cage_cables(f: &Fabric, catalog: &Catalog) -> Option<CageCables> {
    let straight = |m: &Medium| match m {
        Medium::Cable { part, .. } => catalog
            .cables
            .get(&**part)
            .is_none_or(|c| c.form == CableForm::Straight),
        _ => false,
    };
    // Most large fabrics are all optics: nothing to look at.
    if !f.network_links().any(|(_, l)| straight(&l.medium)) {
        return None;
    }
    let net = f.cables();
    let mut c = CageCables::default();
    for (form, links) in shared_cage_groups(f) {
        let n = links
            .iter()
            .filter(|&&i| straight(&f.link(net[i as usize]).medium))
            .count() as u64;
        match form {
            GroupForm::Assembly {
                form: CableForm::Twin,
                ..
            } => c.twin += n,
            GroupForm::Assembly {
                form: CableForm::Splitter,
                ..
            } => c.splitter += n,
            _ => c.optics += n,
        }
    }
    (c.links() > 0).then_some(c)
}

/// The network links of a built fabric that share multi-port cages, grouped as [`cable`] groups
/// them, each group with the form a direct cable must take; links alone in their cages are left
/// out. Links are indexes into [`Fabric::cables`] (cabling.csv order). The cage sizes are read
/// from the fabric: the ports each cage holds (a switch's ports with that cage number; a server's
/// NIC ports that leave through it, [`Fabric::cage_holder`]).
pub fn shared_cage_groups(f: &Fabric) -> Vec<(GroupForm, Vec<u32>)> {
    let mut ends: Vec<[End; 2]> = f
        .network_links()
        .map(|(_, l)| {
            [l.a, l.b].map(|p| {
                let (node, cage) = f.cage_holder(p);
                End {
                    node,
                    cage,
                    slot: 0,
                    cage_size: 0,
                }
            })
        })
        .collect();
    let mut size: HashMap<(NodeId, u32), u32> = ends
        .iter()
        .flatten()
        .map(|e| ((e.node, e.cage), 0))
        .collect();
    for node in &f.nodes {
        // A NIC's last port is its PCIe attachment; the ones before it face the network.
        let ports = match node.kind {
            crate::graph::NodeKind::Nic { .. } => node.num_ports.saturating_sub(1),
            _ if node.is_switch() => node.num_ports,
            _ => 0,
        };
        for p in node.ports().take(ports as usize) {
            if let Some(n) = size.get_mut(&f.cage_holder(p)) {
                *n += 1;
            }
        }
    }
    for e in ends.iter_mut().flatten() {
        e.cage_size = size[&(e.node, e.cage)];
    }
    let g = CageGroups::of(f.nodes.len(), &mut ends);
    let mut members: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, &root) in g.root.iter().enumerate() {
        members.entry(root).or_default().push(i as u32);
    }
    members
        .into_values()
        .filter_map(|links| {
            let form = GroupForm::of(links.iter().map(|&i| &ends[i as usize]), &g.links_in);
            (form != GroupForm::Single).then_some((form, links))
        })
        .collect()
}

/// Measures every network link of the compute fabric and chooses its cable, fibre and transceivers.
pub fn place_and_cable(f: &mut Fabric, r: &Resolved) -> Result<(), BuildError> {
    cable(f, &CableCtx::of(r))
}

/// Measures every network link and chooses its cable, fibre and transceivers.
pub fn cable(f: &mut Fabric, c: &CableCtx) -> Result<(), BuildError> {
    let l = c.layout;
    let placement = place(f, l, c.fill);
    // Where every node stands, indexed by node id: server nodes stand with their server.
    let mut node_pos: Vec<Option<Position>> = f
        .nodes
        .iter()
        .map(|n| match n.server {
            Some(s) if !n.is_switch() => placement.server.get(s as usize).copied(),
            _ => None,
        })
        .collect();
    for (id, pos) in &placement.node {
        node_pos[id.0 as usize] = Some(*pos);
    }
    let switch_cage = c.switch_cage;
    let nic_cage = c.host_cage;

    // One pass over the network links (in id order) gathers what the steps below need of each end:
    // its position, its cage slot and how many ports share that cage.
    let mut net: Vec<u32> = Vec::new();
    let mut ends: Vec<[End; 2]> = Vec::new();
    let end = |f: &Fabric, p: PortId| {
        let port = &f.ports[p.0 as usize];
        let node = &f.nodes[port.node.0 as usize];
        let (holder, cage) = f.cage_holder(p);
        End {
            node: holder,
            cage,
            slot: 0,
            cage_size: if node.is_switch() {
                switch_cage
            } else {
                nic_cage
            },
        }
    };
    for id in 0..f.links.len() {
        let link = &f.links[id];
        if !link.kind.is_network() {
            continue;
        }
        let pos = |p: PortId| {
            node_pos[f.ports[p.0 as usize].node.0 as usize].expect("every cabled node is placed")
        };
        let run = run_length(pos(link.a), pos(link.b), l);
        let (a, b) = (end(f, link.a), end(f, link.b));
        f.links[id].run_m = run;
        net.push(id as u32);
        ends.push([a, b]);
    }
    let CageGroups {
        cages,
        root: group_of,
        links_in,
    } = CageGroups::of(f.nodes.len(), &mut ends);
    let chooser = c.chooser();
    let use_of = |kind: LinkKind| {
        if kind == LinkKind::ServerLeaf {
            CableUse::HostSwitch
        } else {
            CableUse::SwitchSwitch
        }
    };
    // Links differ only in use, run and cage sizes as far as media go, and few runs are distinct:
    // choose each class's medium once per distinct need (use, run, cage sizes).
    type Need = (CableUse, u64, [u32; 2]);
    let mut need_ids: HashMap<Need, u32> = HashMap::new();
    let mut last_need: Option<(Need, u32)> = None;
    let mut options: Vec<[Option<(Medium, f64)>; CLASSES.len()]> = Vec::new();
    let mut needs: Vec<Need> = Vec::new();
    // (group root, link, need): groups in order of their root, members in link order.
    let mut grouped: Vec<(u32, u32, u32)> = Vec::with_capacity(net.len());
    for (i, (&id, e)) in net.iter().zip(&ends).enumerate() {
        let link = &f.links[id as usize];
        let cage_sizes = [e[0].cage_size, e[1].cage_size];
        let need = (use_of(link.kind), link.run_m.to_bits(), cage_sizes);
        let n = match last_need {
            Some((last, n)) if last == need => n,
            _ => *need_ids.entry(need).or_insert_with(|| {
                options.push(
                    CLASSES.map(|class| chooser.medium(class, need.0, link.run_m, cage_sizes)),
                );
                needs.push(need);
                options.len() as u32 - 1
            }),
        };
        last_need = Some((need, n));
        grouped.push((group_of[i], i as u32, n));
    }
    grouped.sort_unstable();

    let mut parts_for: HashMap<(GroupForm, [u32; 2]), bool> = HashMap::new();
    let ends_of = |i: u32| {
        let [a, b] = ends[i as usize];
        (a.cage_size, b.cage_size)
    };
    for group in grouped.chunk_by(|x, y| x.0 == y.0) {
        let root = net[group[0].0 as usize];
        let form = GroupForm::of(group.iter().map(|g| &ends[g.1 as usize]), &links_in);
        // The cheapest class that carries every member; the first of equal totals.
        // Where the catalog has no part at all for such cages (four 200GbE ports in an SN5600
        // cage), a straight cable per link as before, which the plan flags (`shared_cage_cables`).
        let (a, b) = ends_of(group[0].1);
        let rule = if form == GroupForm::Single
            || *parts_for
                .entry((form, [a, b]))
                .or_insert_with(|| chooser.has_parts_for(form, [a, b]))
        {
            form
        } else {
            GroupForm::Single
        };
        let mut best: Option<(f64, usize, Option<Medium>)> = None;
        'class: for (c, class) in CLASSES.iter().enumerate() {
            let mut total = 0.0;
            let mut shared = None;
            match (class, rule) {
                (Class::Direct(kind), GroupForm::Assembly { form, ports }) => {
                    // One cable for the whole group, at the stocked length of its longest run.
                    let links = || group.iter().map(|g| &f.links[net[g.1 as usize] as usize]);
                    let uses: Vec<CableUse> = links().map(|l| use_of(l.kind)).collect();
                    let longest = links().map(|l| l.run_m).fold(0.0, f64::max);
                    match chooser.assembly(*kind, form, ports, &uses, longest) {
                        Some((medium, cost)) => {
                            total = cost;
                            shared = Some(medium);
                        }
                        None => continue 'class,
                    }
                }
                // Ports of one cage that go to different cages take a transceiver in it.
                (Class::Direct(_), GroupForm::Mesh) => continue 'class,
                _ => {
                    for &(_, _, n) in group {
                        // Modules must reach the longest run through either of their cages;
                        // approximated here by the link's own run and checked exactly when modules
                        // are chosen below.
                        match &options[n as usize][c] {
                            Some((_, cost)) => total += cost,
                            None => continue 'class,
                        }
                    }
                }
            }
            if best.as_ref().is_none_or(|(t, _, _)| total < t - 1e-9) {
                best = Some((total, c, shared));
            }
        }
        let Some((_, c, shared)) = best else {
            let (worst, n) = group
                .iter()
                .map(|&(_, i, n)| (net[i as usize], n))
                .max_by(|a, b| {
                    f.links[a.0 as usize]
                        .run_m
                        .total_cmp(&f.links[b.0 as usize].run_m)
                })
                .unwrap_or((root, 0));
            let link = &f.links[worst as usize];
            let (use_, _, cage_sizes) = needs[n as usize];
            let (reach, part) = chooser.longest_reach(use_, cage_sizes, rule);
            if rule != form {
                // Straight cables stood in for parts the catalog does not have: that is what
                // fails, not the hall (NDR200's four-port cages blamed a 13.9 m run).
                let ports = cage_sizes.iter().copied().max().unwrap_or(1);
                let wanted = match form {
                    GroupForm::Assembly { form, ports } => format!(
                        "a {ports}-port {} cable or a {ports}-port transceiver",
                        form.as_str()
                    ),
                    _ => format!("a {ports}-port transceiver"),
                };
                return Err(err(
                    "layout",
                    format!(
                        "the catalog has no part for a {ports}-port cage of {} at {} Gb/s ({wanted}): \
                         from {}/{} to {}/{} ({:.1} m) only a straight cable could stand in, and \
                         none reaches (longest: {reach} m, {part}); add such parts with --catalog, or \
                         choose a port mode with one port per cage (fabric.port_gbps)",
                        c.tech,
                        c.gbps,
                        f.port_device(link.a),
                        f.port_label(link.a),
                        f.port_device(link.b),
                        f.port_label(link.b),
                        link.run_m,
                    ),
                ));
            }
            let shared = match rule {
                GroupForm::Mesh => {
                    " (ports of its cages go to different cages, so it takes transceivers)"
                        .to_string()
                }
                GroupForm::Assembly { form, ports } => format!(
                    " (its cage's {ports} ports take one {} cable)",
                    form.as_str()
                ),
                GroupForm::Single => String::new(),
            };
            return Err(err(
                "layout",
                format!(
                    "the {:.1} m run from {}/{} to {}/{}{shared} is longer than any {} cable or optics in the catalog reaches (longest: {reach} m, {part}); shorten the layout (layout.racks_per_row, layout.row_pitch_m, layout.rack_pitch_m) or add longer optics with --catalog",
                    link.run_m,
                    f.port_device(link.a),
                    f.port_label(link.a),
                    f.port_device(link.b),
                    f.port_label(link.b),
                    c.tech
                ),
            ));
        };
        for &(_, i, n) in group {
            let id = net[i as usize] as usize;
            if let Some(m) = &shared {
                f.links[id].medium = m.clone();
            } else if let Some((m, _)) = &options[n as usize][c] {
                f.links[id].medium = m.clone();
            }
        }
    }

    // One transceiver per cage that carries fibre, reaching the longest run through that cage:
    // `in_cage[slot]` indexes `fibre_cages` (u32::MAX: no fibre in that cage).
    let mut in_cage = vec![u32::MAX; cages.len()];
    // A cage's ports take the connector of the fibre its links were given (one per medium group).
    let mut fibre_cages: Vec<(FibreKind, &str, f64, u32)> = Vec::new();
    for (&id, e) in net.iter().zip(&ends) {
        let link = &f.links[id as usize];
        if let Medium::Fibre { fibre, part, .. } = &link.medium {
            let connector = chooser.connector_of(part);
            for end in e {
                let slot = &mut in_cage[end.slot as usize];
                if *slot == u32::MAX {
                    *slot = fibre_cages.len() as u32;
                    fibre_cages.push((*fibre, connector, 0.0, end.cage_size));
                }
                let e = &mut fibre_cages[*slot as usize];
                e.2 = e.2.max(link.run_m);
            }
        }
    }
    // (fibre, connector, longest run, ports in the cage) -> the cheapest module that carries them.
    type ModuleNeed<'a> = (FibreKind, &'a str, u64, u32);
    let mut modules: HashMap<ModuleNeed, Option<&TransceiverModel>> = HashMap::new();
    let mut last: Option<(ModuleNeed, Option<&TransceiverModel>)> = None;
    f.modules.reserve(fibre_cages.len());
    for (node, cage, slot) in cages.slots() {
        let Some(&(fibre, connector, run, size)) = fibre_cages.get(in_cage[slot] as usize) else {
            continue;
        };
        let key = (fibre, connector, run.to_bits(), size);
        let module = match last {
            Some((k, m)) if k == key => m,
            _ => *modules
                .entry(key)
                .or_insert_with(|| chooser.module(fibre, connector, size, run)),
        };
        last = Some((key, module));
        let module = module.ok_or_else(|| {
            err(
                "layout",
                format!(
                    "no {:?} transceiver for {} carries {size} ports over {run:.1} m in cage {cage} of {}",
                    fibre,
                    c.tech,
                    f.node(node).name
                ),
            )
        })?;
        f.modules.push(Module {
            node,
            cage,
            part: chooser.part(&module.id),
        });
    }
    Ok(())
}
