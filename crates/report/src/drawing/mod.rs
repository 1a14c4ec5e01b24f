//! The topology drawing: tiers as rows (servers at the bottom, then leaves, spines, cores), rails in
//! colours, link counts and speeds labelled.
//!
//! Small fabrics are drawn device by device, with every HCA of every server as a coloured port, so the
//! seed's two-switch design shows HCA 1, 3, 5, 7 going to switch 1 and 2, 4, 6, 8 to switch 2. Large
//! fabrics collapse into *units*: a tier with more than [`MAX_SINGLE`] switches becomes one box per
//! group of switches that serve the same units below (one box per scalable unit's leaves, per pod's
//! spines), servers group by scalable unit, and a row with more than [`MAX_ROW`] units keeps its first
//! and last units and folds the middle into one "… N more" box. So the drawing of a 100,000-GPU fabric
//! has at most a few dozen boxes and a few hundred lines, whatever the fabric's size.

mod domain;
mod geometry;
mod paint;

use crate::svg::thousands;
use geometry::{edges, Geometry};
use paint::Labels;
use railyard_fabric::layout::NvlinkDomain;
use railyard_fabric::{Fabric, LinkKind, NodeId, NodeKind, Tier};
use std::collections::BTreeMap;

/// Servers drawn one by one up to this many; grouped beyond.
pub const MAX_SERVERS_SINGLE: usize = 12;
/// Switches of a tier drawn one by one up to this many; grouped beyond.
pub const MAX_SINGLE: usize = 24;
/// Boxes of groups in a row before the middle ones fold into one.
pub const MAX_ROW: usize = 12;
/// Slots (member switches, rails) shown inside a box at most.
const MAX_SLOTS: usize = 16;
/// Lines between two rows up to which each line carries its own label.
const MAX_LABELLED: usize = 24;
/// Switch-to-switch lines drawn member to member up to this many; box to box beyond.
const MAX_SLOT_EDGES: usize = 64;

/// One box of the drawing.
#[derive(Debug, Clone)]
struct Unit {
    /// Nodes (switches) or server indexes it stands for.
    members: Vec<u32>,
    title: String,
    subtitle: String,
    /// Rails served, for the colour swatch and the subtitle of switches.
    rails: Vec<u32>,
    /// Slot labels and colours along the box edge (member switches or server rails).
    slots: Vec<(String, Option<u32>)>,
    elided: bool,
    /// Members of the units an elided unit stands for.
    folded: usize,
    /// A rack-scale NVLink domain's block: its compute trays and NVLink switch trays.
    domain: Option<domain::DomainBox>,
}

/// Rows bottom up: 0 servers, 1 leaf, 2 spine, 3 core.
struct Rows {
    units: [Vec<Unit>; 4],
    /// For each switch node, (unit, slot) in its row; servers in `server_unit`.
    /// Indexed by node id; `(usize::MAX, None)` for nodes that are not switches.
    node_unit: Vec<(usize, Option<usize>)>,
    server_unit: Vec<(usize, Option<usize>)>,
}

fn tier_row(t: Tier) -> usize {
    match t {
        Tier::Leaf => 1,
        Tier::Spine => 2,
        Tier::Core => 3,
    }
}

/// A network link seen from the drawing: lower end, upper end, rail of the NIC end.
#[derive(Clone, Copy)]
struct End {
    /// Server index (row 0) or switch node id.
    id: u32,
    row: usize,
}

struct NetLink {
    lo: End,
    hi: End,
    rail: Option<u32>,
    gbps: f64,
    kind: LinkKind,
}

fn net_links(f: &Fabric) -> Vec<NetLink> {
    let mut out = Vec::new();
    for (_, l) in f.network_links() {
        let (na, nb) = (f.port(l.a).node, f.port(l.b).node);
        let (a, b) = (f.node(na), f.node(nb));
        let end = |id: NodeId| -> Option<End> {
            let node = f.node(id);
            match node.kind {
                NodeKind::Switch { tier } => Some(End {
                    id: id.0,
                    row: tier_row(tier),
                }),
                _ => node.server.map(|s| End { id: s, row: 0 }),
            }
        };
        let (Some(lo), Some(hi)) = (end(na), end(nb)) else {
            continue;
        };
        let rail = match (a.kind, b.kind) {
            (NodeKind::Nic { rail }, _) | (_, NodeKind::Nic { rail }) => Some(rail),
            _ => None,
        };
        out.push(NetLink {
            lo,
            hi,
            rail,
            gbps: l.gbps,
            kind: l.kind,
        });
    }
    out
}

/// `su1-leaf1` .. `su1-leaf8` -> `su1-leaf1…8`; otherwise `first…last`.
fn range_label(first: &str, last: &str) -> String {
    if first == last {
        return first.to_string();
    }
    let common = first
        .char_indices()
        .zip(last.chars())
        .take_while(|((_, a), b)| a == b)
        .last()
        .map_or(0, |((i, c), _)| i + c.len_utf8());
    // Cut back to the last non-digit so `leaf09`..`leaf16` keeps its digits whole; a tail that is
    // more than a number is shown whole (`pod1-spine01…pod4-spine20`).
    let cut = first[..common]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let tail = &last[cut..];
    if tail.chars().all(|c| c.is_ascii_digit()) {
        format!("{first}…{tail}")
    } else {
        format!("{first}…{last}")
    }
}

fn rails_label(rails: &[u32]) -> String {
    let list: Vec<String> = rails.iter().map(|r| (r + 1).to_string()).collect();
    if rails.len() == 1 {
        format!("rail {}", list[0])
    } else {
        format!("HCA {}", list.join(","))
    }
}

fn build_rows(f: &Fabric, links: &[NetLink], domain: Option<&NvlinkDomain>) -> Rows {
    let rails = f.meta.compute_nics_per_server.max(1);
    let node_rails = leaf_rails(links);
    let (server_units, server_unit) = server_units(f, links, rails, domain);
    let mut rows = Rows {
        units: [server_units, Vec::new(), Vec::new(), Vec::new()],
        node_unit: vec![(usize::MAX, None); f.nodes.len()],
        server_unit,
    };
    // Switch tiers, bottom up: each switch's lower units, from the links below it.
    for tier in Tier::ALL {
        let row = tier_row(tier);
        let switches: Vec<(NodeId, &railyard_fabric::Node)> = f.switches(tier).collect();
        if switches.is_empty() {
            continue;
        }
        let units = if switches.len() <= MAX_SINGLE {
            switch_units(&switches, &node_rails, rails, &mut rows)
        } else {
            let below = below_each(links, &rows, row);
            grouped_switch_units(f, &switches, &below, &node_rails, &mut rows)
        };
        rows.units[row] = units;
    }
    rows
}

/// The rails each leaf serves.
fn leaf_rails(links: &[NetLink]) -> BTreeMap<u32, Vec<u32>> {
    // Rails each switch serves (leaves only).
    let mut node_rails: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for l in links {
        if let (Some(r), 1) = (l.rail, l.hi.row) {
            let v = node_rails.entry(l.hi.id).or_default();
            if !v.contains(&r) {
                v.push(r);
            }
        }
    }
    for v in node_rails.values_mut() {
        v.sort_unstable();
    }
    node_rails
}

/// A server's HCA slots, numbered when `labels`; none past [`MAX_SLOTS`] rails.
fn server_slots(rails: u32, labels: bool) -> Vec<(String, Option<u32>)> {
    if rails as usize > MAX_SLOTS {
        return Vec::new();
    }
    (0..rails)
        .map(|r| {
            let label = if labels {
                (r + 1).to_string()
            } else {
                String::new()
            };
            (label, Some(r))
        })
        .collect()
}

/// The servers' row: one block per rack when the servers are a rack-scale system's compute trays,
/// else one box per server when few, else one per scalable unit (or per first leaf); and each
/// server's box.
fn server_units(
    f: &Fabric,
    links: &[NetLink],
    rails: u32,
    domain: Option<&NvlinkDomain>,
) -> (Vec<Unit>, Vec<(usize, Option<usize>)>) {
    let mut server_units: Vec<Unit> = Vec::new();
    let mut server_unit = vec![(0usize, None); f.servers.len()];
    if let Some(d) = domain {
        domain::rack_units(f, d, rails, &mut server_units, &mut server_unit);
    } else if f.servers.len() <= MAX_SERVERS_SINGLE {
        for (i, s) in f.servers.iter().enumerate() {
            server_unit[i] = (i, None);
            server_units.push(Unit {
                members: vec![i as u32],
                title: s.name.clone(),
                subtitle: format!("{} x {}", f.meta.gpus_per_server, f.meta.gpu_model),
                rails: Vec::new(),
                slots: server_slots(rails, true),
                elided: false,
                folded: 0,
                domain: None,
            });
        }
    } else {
        grouped_servers(f, links, rails, &mut server_units, &mut server_unit);
    }
    (server_units, server_unit)
}

/// Servers by scalable unit, else by the leaf of the first HCA; consecutive servers only.
fn grouped_servers(
    f: &Fabric,
    links: &[NetLink],
    rails: u32,
    server_units: &mut Vec<Unit>,
    server_unit: &mut [(usize, Option<usize>)],
) {
    let mut first_leaf: Vec<u32> = vec![u32::MAX; f.servers.len()];
    for l in links {
        if l.lo.row == 0 && first_leaf[l.lo.id as usize] == u32::MAX {
            first_leaf[l.lo.id as usize] = l.hi.id;
        }
    }
    let mut last_key = None;
    for (i, s) in f.servers.iter().enumerate() {
        let key = match s.su {
            Some(su) => (0, su),
            None => (1, first_leaf[i]),
        };
        if last_key != Some(key) {
            last_key = Some(key);
            server_units.push(Unit {
                members: Vec::new(),
                title: String::new(),
                subtitle: String::new(),
                rails: Vec::new(),
                slots: server_slots(rails, false),
                elided: false,
                folded: 0,
                domain: None,
            });
        }
        let u = server_units.len() - 1;
        server_units[u].members.push(i as u32);
        server_unit[i] = (u, None);
    }
    for u in server_units.iter_mut() {
        let first = &f.servers[u.members[0] as usize];
        let last = &f.servers[*u.members.last().unwrap_or(&u.members[0]) as usize];
        u.title = match first.su {
            Some(su) => format!("SU {}", su + 1),
            None => range_label(&first.name, &last.name),
        };
        u.subtitle = format!(
            "{} servers x {} HCA",
            u.members.len(),
            f.meta.compute_nics_per_server
        );
    }
}

/// Per switch of `row`, what is right below it: the devices when their sets give few groups (a
/// pod's spines), else the units (one group when all serve all).
fn below_each(links: &[NetLink], rows: &Rows, row: usize) -> BTreeMap<u32, Vec<usize>> {
    let mut below: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    let mut below_nodes: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for l in links {
        if l.hi.row == row && l.lo.row + 1 == row {
            let u = if l.lo.row == 0 {
                rows.server_unit[l.lo.id as usize].0
            } else {
                rows.node_unit[l.lo.id as usize].0
            };
            let v = below.entry(l.hi.id).or_default();
            if !v.contains(&u) {
                v.push(u);
            }
            below_nodes
                .entry(l.hi.id)
                .or_default()
                .push(l.lo.id as usize);
        }
    }
    for v in below.values_mut().chain(below_nodes.values_mut()) {
        v.sort_unstable();
        v.dedup();
    }
    // Group switches that serve the same devices (a pod's spines) when that gives few groups;
    // else those that serve the same units below (one group when all serve all).
    let by_nodes = {
        let keys: std::collections::BTreeSet<&Vec<usize>> = below_nodes.values().collect();
        keys.len() <= MAX_ROW
    };
    if by_nodes {
        below_nodes
    } else {
        below
    }
}

/// A row of few switches: one box each.
fn switch_units(
    switches: &[(NodeId, &railyard_fabric::Node)],
    node_rails: &BTreeMap<u32, Vec<u32>>,
    rails: u32,
    rows: &mut Rows,
) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    for (id, node) in switches {
        let r = node_rails.get(&id.0).cloned().unwrap_or_default();
        let subtitle = if r.is_empty() || r.len() == rails as usize {
            node.model.to_string()
        } else {
            format!("{} · {}", node.model, rails_label(&r))
        };
        rows.node_unit[id.0 as usize] = (units.len(), None);
        units.push(Unit {
            members: vec![id.0],
            title: node.name.clone(),
            subtitle,
            rails: r,
            slots: Vec::new(),
            elided: false,
            folded: 0,
            domain: None,
        });
    }
    units
}

/// A row of many switches: one box per group serving the same things below.
fn grouped_switch_units(
    f: &Fabric,
    switches: &[(NodeId, &railyard_fabric::Node)],
    below: &BTreeMap<u32, Vec<usize>>,
    node_rails: &BTreeMap<u32, Vec<u32>>,
    rows: &mut Rows,
) -> Vec<Unit> {
    let mut units: Vec<Unit> = Vec::new();
    let mut by_key: BTreeMap<Vec<usize>, usize> = BTreeMap::new();
    for (id, _) in switches {
        let key = below.get(&id.0).cloned().unwrap_or_default();
        let u = *by_key.entry(key).or_insert_with(|| {
            units.push(Unit {
                members: Vec::new(),
                title: String::new(),
                subtitle: String::new(),
                rails: Vec::new(),
                slots: Vec::new(),
                elided: false,
                folded: 0,
                domain: None,
            });
            units.len() - 1
        });
        units[u].members.push(id.0);
    }
    for (ui, u) in units.iter_mut().enumerate() {
        let first = f.node(NodeId(u.members[0]));
        let last = f.node(NodeId(*u.members.last().unwrap_or(&u.members[0])));
        u.title = range_label(&first.name, &last.name);
        u.subtitle = format!("{} x {}", u.members.len(), first.model);
        let with_slots = u.members.len() <= MAX_SLOTS;
        for (si, &m) in u.members.iter().enumerate() {
            let r = node_rails.get(&m).cloned().unwrap_or_default();
            for &x in &r {
                if !u.rails.contains(&x) {
                    u.rails.push(x);
                }
            }
            if with_slots {
                let colour = (r.len() == 1).then(|| r[0]);
                u.slots.push((String::new(), colour));
            }
            rows.node_unit[m as usize] = (ui, with_slots.then_some(si));
        }
        u.rails.sort_unstable();
    }
    units
}

/// Which unit of a row is shown where: visible units keep their place, the middle of a long row folds
/// into one elided unit.
fn fold(units: &mut Vec<Unit>, grouped: bool, noun: &str) -> Vec<usize> {
    let count = units.len();
    // Rows of single devices are short by construction (at most MAX_SINGLE); fold rows of groups.
    if count <= MAX_ROW || !grouped {
        return (0..count).collect();
    }
    let head = MAX_ROW - 2;
    let mid: Vec<Unit> = units.drain(head..count - 1).collect();
    let members: usize = mid.iter().map(|u| u.members.len()).sum();
    let elided = Unit {
        members: Vec::new(),
        title: format!("… {} more", mid.len()),
        subtitle: format!(
            "{} {noun}, like their neighbours",
            thousands(members as f64)
        ),
        rails: Vec::new(),
        slots: Vec::new(),
        elided: true,
        folded: members,
        domain: None,
    };
    units.insert(head, elided);
    (0..count)
        .map(|i| {
            if i < head {
                i
            } else if i < count - 1 {
                head
            } else {
                head + 1
            }
        })
        .collect()
}

/// Aggregated lines between two shown boxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct EdgeKey {
    lo_row: usize,
    lo: usize,
    lo_slot: Option<usize>,
    hi_row: usize,
    hi: usize,
    hi_slot: Option<usize>,
    rail: Option<u32>,
}

const BOX_H: f64 = 44.0;
const ROW_GAP: f64 = 130.0;
const GAP: f64 = 14.0;
const LEFT: f64 = 190.0;
const TOP: f64 = 70.0;

/// The topology drawing as a standalone SVG document. `domain`: the design's rack-scale NVLink
/// domain (`Racks::nvlink_domain` of its plan), whose racks are drawn as blocks with their NVLink
/// switch trays; `None` for servers of their own.
pub fn topology_svg(f: &Fabric, domain: Option<&NvlinkDomain>) -> String {
    let links = net_links(f);
    let mut rows = build_rows(f, &links, domain);
    // A row is of groups when its devices were too many to draw one by one (racks are groups).
    let grouped = [
        f.servers.len() > MAX_SERVERS_SINGLE || domain.is_some(),
        f.switches(Tier::Leaf).count() > MAX_SINGLE,
        f.switches(Tier::Spine).count() > MAX_SINGLE,
        f.switches(Tier::Core).count() > MAX_SINGLE,
    ];
    let shown: Vec<Vec<usize>> = rows
        .units
        .iter_mut()
        .enumerate()
        .map(|(r, u)| {
            let noun = match (r, domain) {
                (0, Some(_)) => "compute trays",
                (0, None) => "servers",
                _ => "switches",
            };
            fold(u, grouped[r], noun)
        })
        .collect();
    let present: Vec<usize> = (0..4).filter(|&r| !rows.units[r].is_empty()).collect();
    let g = Geometry::new(&rows, present);
    let e = edges(&links, &rows, &shown);
    let mut s = String::new();
    paint::header(&mut s, f, (g.width, g.height));
    paint::row_labels(&mut s, f, &g, &e.totals);
    // Lines.
    s.push_str(r#"<g class="links" fill="none">"#);
    let mut labels = Labels::default();
    paint::links(&mut s, &g, &e, &mut labels);
    paint::inter_switch_links(&mut s, &g, &e.inter, &mut labels);
    s.push_str("</g>");
    paint::boxes(&mut s, &g);
    s.push_str(&labels.svg);
    s.push_str("</svg>");
    s
}
