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

use crate::svg::{esc, n, rail_colour, speed, text_width, thousands, FONT};
use railyard_fabric::{Fabric, LinkKind, NodeId, NodeKind, Tier};
use std::collections::BTreeMap;
use std::fmt::Write;

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

fn build_rows(f: &Fabric, links: &[NetLink]) -> Rows {
    let rails = f.meta.compute_nics_per_server.max(1);
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

    // Servers.
    let mut server_units: Vec<Unit> = Vec::new();
    let mut server_unit = vec![(0usize, None); f.servers.len()];
    let server_slots = |labels: bool| -> Vec<(String, Option<u32>)> {
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
    };
    if f.servers.len() <= MAX_SERVERS_SINGLE {
        for (i, s) in f.servers.iter().enumerate() {
            server_unit[i] = (i, None);
            server_units.push(Unit {
                members: vec![i as u32],
                title: s.name.clone(),
                subtitle: format!("{} x {}", f.meta.gpus_per_server, f.meta.gpu_model),
                rails: Vec::new(),
                slots: server_slots(true),
                elided: false,
                folded: 0,
            });
        }
    } else {
        // By scalable unit, else by the leaf of the first HCA; consecutive servers only.
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
                    slots: server_slots(false),
                    elided: false,
                    folded: 0,
                });
            }
            let u = server_units.len() - 1;
            server_units[u].members.push(i as u32);
            server_unit[i] = (u, None);
        }
        for u in &mut server_units {
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
        // Per switch, the units and the devices right below it.
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
        let below = if by_nodes { below_nodes } else { below };
        let mut units: Vec<Unit> = Vec::new();
        if switches.len() <= MAX_SINGLE {
            for (id, node) in &switches {
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
                });
            }
        } else {
            let mut by_key: BTreeMap<Vec<usize>, usize> = BTreeMap::new();
            for (id, _) in &switches {
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
        }
        rows.units[row] = units;
    }
    rows
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

fn unit_width(u: &Unit, row: usize) -> f64 {
    let text = text_width(&u.title, 11.0).max(text_width(&u.subtitle, 9.0));
    let slots = u.slots.len() as f64 * if row == 0 { 13.0 } else { 11.0 };
    // A switch serving several rails gets room for a landing point per rail.
    let rails = if row == 1 && u.slots.is_empty() && u.rails.len() > 1 {
        u.rails.len() as f64 * 26.0 + 16.0
    } else {
        0.0
    };
    (text + 14.0)
        .max(slots + 12.0)
        .max(rails)
        .max(if row == 0 { 64.0 } else { 70.0 })
}

/// The topology drawing as a standalone SVG document.
pub fn topology_svg(f: &Fabric) -> String {
    let links = net_links(f);
    let mut rows = build_rows(f, &links);
    // A row is of groups when its devices were too many to draw one by one.
    let grouped = [
        f.servers.len() > MAX_SERVERS_SINGLE,
        f.switches(Tier::Leaf).count() > MAX_SINGLE,
        f.switches(Tier::Spine).count() > MAX_SINGLE,
        f.switches(Tier::Core).count() > MAX_SINGLE,
    ];
    let shown: Vec<Vec<usize>> = rows
        .units
        .iter_mut()
        .enumerate()
        .map(|(r, u)| fold(u, grouped[r], if r == 0 { "servers" } else { "switches" }))
        .collect();
    let present: Vec<usize> = (0..4).filter(|&r| !rows.units[r].is_empty()).collect();

    // Geometry: row y (top of box), unit x and width.
    // Boxes of a row share one width; adjacent rows with as many boxes share it too, so a scalable
    // unit's servers stand under its leaves.
    let mut uniform: Vec<f64> = (0..4)
        .map(|r| {
            rows.units[r]
                .iter()
                .map(|u| unit_width(u, r))
                .fold(0.0, f64::max)
        })
        .collect();
    for r in 0..3 {
        if rows.units[r].len() == rows.units[r + 1].len() {
            let w = uniform[r].max(uniform[r + 1]);
            uniform[r] = w;
            uniform[r + 1] = w;
        }
    }
    let widths: Vec<Vec<f64>> = (0..4)
        .map(|r| vec![uniform[r]; rows.units[r].len()])
        .collect();
    let row_w = |r: usize| -> f64 {
        let w = &widths[r];
        w.iter().sum::<f64>() + GAP * w.len().saturating_sub(1) as f64
    };
    let inner = present.iter().map(|&r| row_w(r)).fold(0.0, f64::max);
    let width = LEFT + inner + 30.0;
    let mut y_of = [0.0; 4];
    for (i, &r) in present.iter().rev().enumerate() {
        y_of[r] = TOP + i as f64 * (BOX_H + ROW_GAP);
    }
    let height = TOP + present.len() as f64 * (BOX_H + ROW_GAP) - ROW_GAP + 40.0;
    let mut x_of: Vec<Vec<f64>> = vec![Vec::new(); 4];
    for r in 0..4 {
        let mut x = LEFT + (inner - row_w(r)) / 2.0;
        for w in &widths[r] {
            x_of[r].push(x);
            x += w + GAP;
        }
    }
    let slot_x = |row: usize, unit: usize, slot: Option<usize>| -> f64 {
        let (x, w) = (x_of[row][unit], widths[row][unit]);
        match slot {
            Some(s) => {
                let count = rows.units[row][unit].slots.len().max(1) as f64;
                let pitch = (w - 12.0) / count;
                x + 6.0 + pitch * (s as f64 + 0.5)
            }
            None => x + w / 2.0,
        }
    };
    // A single switch serving several rails (two-switch, fat-tree leaves): server lines arrive at a
    // point per rail, so the rails it serves read off the drawing.
    let rail_x = |row: usize, unit: usize, rail: Option<u32>| -> Option<f64> {
        let u = &rows.units[row][unit];
        let i = u.rails.iter().position(|&r| Some(r) == rail)?;
        if !u.slots.is_empty() || u.rails.len() < 2 || row != 1 {
            return None;
        }
        let (x, w) = (x_of[row][unit], widths[row][unit]);
        let pitch = (w - 16.0) / u.rails.len() as f64;
        Some(x + 8.0 + pitch * (i as f64 + 0.5))
    };

    // Edges, aggregated by shown unit (and slot where it helps).
    let mut per_pair: BTreeMap<(usize, usize), BTreeMap<EdgeKey, (u64, f64)>> = BTreeMap::new();
    let mut unit_level: BTreeMap<(usize, usize), BTreeMap<EdgeKey, (u64, f64)>> = BTreeMap::new();
    let mut inter: BTreeMap<(usize, usize, usize), (u64, f64)> = BTreeMap::new();
    let mut totals: BTreeMap<(usize, usize), (u64, f64)> = BTreeMap::new();
    for l in &links {
        let place = |e: End| -> (usize, Option<usize>) {
            let (u, s) = if e.row == 0 {
                rows.server_unit[e.id as usize]
            } else {
                rows.node_unit[e.id as usize]
            };
            let su = shown[e.row][u];
            let unit = &rows.units[e.row][su];
            let slot = if unit.elided || unit.slots.is_empty() {
                None
            } else if e.row == 0 {
                l.rail.map(|r| r as usize)
            } else {
                s
            };
            (su, slot)
        };
        let (lo, lo_slot) = place(l.lo);
        let (hi, hi_slot) = place(l.hi);
        if l.kind == LinkKind::InterSwitch {
            let e = inter
                .entry((l.lo.row, lo.min(hi), lo.max(hi)))
                .or_insert((0, l.gbps));
            e.0 += 1;
            continue;
        }
        let t = totals.entry((l.lo.row, l.hi.row)).or_insert((0, l.gbps));
        t.0 += 1;
        let key = EdgeKey {
            lo_row: l.lo.row,
            lo,
            lo_slot,
            hi_row: l.hi.row,
            hi,
            hi_slot,
            rail: if l.lo.row == 0 { l.rail } else { None },
        };
        let e = per_pair
            .entry((l.lo.row, l.hi.row))
            .or_default()
            .entry(key)
            .or_insert((0, l.gbps));
        e.0 += 1;
        let coarse = EdgeKey {
            lo_slot: None,
            hi_slot: None,
            ..key
        };
        let e = unit_level
            .entry((l.lo.row, l.hi.row))
            .or_default()
            .entry(coarse)
            .or_insert((0, l.gbps));
        e.0 += 1;
    }

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="topology" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="{FONT}" role="img" aria-label="Topology of {name}">"#,
        w = n(width),
        h = n(height),
        name = esc(&f.meta.name),
    );
    let _ = write!(
        s,
        r##"<rect width="100%" height="100%" fill="#ffffff"/><text x="16" y="24" font-size="15" font-weight="bold" fill="#222">{}</text><text x="16" y="44" font-size="11" fill="#555">{}</text>"##,
        esc(&format!(
            "{} — {} {}",
            f.meta.name, f.meta.tech, f.meta.topology
        )),
        esc(&format!(
            "{} servers · {} tier{} · {} {} switches ({})",
            thousands(f.servers.len() as f64),
            f.meta.tiers,
            if f.meta.tiers == 1 { "" } else { "s" },
            f.nodes.iter().filter(|x| x.is_switch()).count(),
            f.meta.switch_model,
            f.meta.port_mode,
        )),
    );
    // Rail legend.
    let rails = f.meta.compute_nics_per_server;
    if rails > 1 && rails as usize <= MAX_SLOTS {
        let mut x = width - 30.0 - rails as f64 * 52.0;
        let _ = write!(
            s,
            r##"<text x="{}" y="24" font-size="11" fill="#555" text-anchor="end">rails</text>"##,
            n(x - 6.0)
        );
        for r in 0..rails {
            let _ = write!(
                s,
                r##"<rect x="{}" y="14" width="12" height="12" fill="{}"/><text x="{}" y="24" font-size="11" fill="#333">{}</text>"##,
                n(x),
                rail_colour(r),
                n(x + 15.0),
                r + 1
            );
            x += 52.0;
        }
    }

    // Row labels and per-boundary totals.
    let row_names = ["servers", "leaf", "spine", "core"];
    let tier_names = ["server", "leaf", "spine", "core"];
    for &r in &present {
        let count: usize = if r == 0 {
            f.servers.len()
        } else {
            rows.units[r]
                .iter()
                .map(|u| u.members.len() + u.folded)
                .sum::<usize>()
        };
        let _ = write!(
            s,
            r##"<text x="16" y="{}" font-size="13" font-weight="bold" fill="#222">{}</text><text x="16" y="{}" font-size="11" fill="#555">{}</text>"##,
            n(y_of[r] + 18.0),
            row_names[r],
            n(y_of[r] + 34.0),
            esc(&format!(
                "{} {}",
                thousands(count as f64),
                if r == 0 { "servers" } else { "switches" }
            )),
        );
    }
    for (&(lo, hi), &(count, gbps)) in &totals {
        let y = (y_of[lo] + y_of[hi] + BOX_H) / 2.0;
        let _ = write!(
            s,
            r##"<text class="tier-links" x="16" y="{}" font-size="11" fill="#333">{}</text><text x="16" y="{}" font-size="11" fill="#333">{}</text>"##,
            n(y + 4.0),
            esc(&format!("{}–{}", tier_names[lo], tier_names[hi])),
            n(y + 18.0),
            esc(&format!("{} x {}", thousands(count as f64), speed(gbps))),
        );
    }

    // Lines.
    s.push_str(r#"<g class="links" fill="none">"#);
    let mut labels = Labels::default();
    for (pair, fine) in &per_pair {
        let edges = if pair.0 > 0 && fine.len() > MAX_SLOT_EDGES {
            &unit_level[pair]
        } else {
            fine
        };
        let width_px = if edges.len() > 200 { 0.6 } else { 1.4 };
        let label_each = edges.len() <= MAX_LABELLED;
        if !label_each && unit_level[pair].len() <= MAX_LABELLED {
            // Too many lines to label one by one: label each pair of boxes once.
            let mut agg: BTreeMap<(usize, usize), (u64, f64, usize)> = BTreeMap::new();
            for (k, &(count, gbps)) in &unit_level[pair] {
                let e = agg.entry((k.lo, k.hi)).or_insert((0, gbps, 0));
                e.0 += count;
                e.2 += 1;
            }
            for (&(lo, hi), &(count, gbps, _)) in &agg {
                let (x1, y1) = (slot_x(pair.0, lo, None), y_of[pair.0]);
                let (x2, y2) = (slot_x(pair.1, hi, None), y_of[pair.1] + BOX_H);
                let (lx, ly) = (x1 + (x2 - x1) * 0.45, y1 + (y2 - y1) * 0.45);
                labels.push(
                    lx,
                    ly,
                    &format!("{} x {}", thousands(count as f64), speed(gbps)),
                );
            }
        }
        for (k, &(count, gbps)) in edges {
            let x1 = slot_x(k.lo_row, k.lo, k.lo_slot);
            let y1 = y_of[k.lo_row];
            let x2 = match k.hi_slot {
                None if k.lo_row == 0 => rail_x(k.hi_row, k.hi, k.rail),
                _ => None,
            }
            .unwrap_or_else(|| slot_x(k.hi_row, k.hi, k.hi_slot));
            let y2 = y_of[k.hi_row] + BOX_H;
            let colour = k.rail.map_or("#8a8f98", rail_colour);
            let w = if count > 1 && edges.len() <= 200 {
                width_px + (count as f64).log2().min(4.0) * 0.5
            } else {
                width_px
            };
            let _ = write!(
                s,
                r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{colour}" stroke-width="{}" stroke-opacity="0.85"><title>{}</title></line>"#,
                n(x1),
                n(y1),
                n(x2),
                n(y2),
                n(w),
                esc(&format!("{count} x {}", speed(gbps))),
            );
            if label_each {
                let (lx, ly) = (x1 + (x2 - x1) * 0.6, y1 + (y2 - y1) * 0.6);
                labels.push(lx, ly, &format!("{} x {}", count, speed(gbps)));
            }
        }
    }
    for (&(row, a, b), &(count, gbps)) in &inter {
        let (x1, x2) = (slot_x(row, a, None), slot_x(row, b, None));
        let y = y_of[row];
        let _ = write!(
            s,
            r##"<path d="M{} {} C{} {} {} {} {} {}" stroke="#444" stroke-width="2.5"/>"##,
            n(x1),
            n(y),
            n(x1),
            n(y - 46.0),
            n(x2),
            n(y - 46.0),
            n(x2),
            n(y)
        );
        let text = format!("{} x {} inter-switch", count, speed(gbps));
        let _ = write!(
            labels.svg,
            r##"<text class="link-label" x="{}" y="{}" font-size="10" fill="#222" text-anchor="middle">{}</text>"##,
            n((x1 + x2) / 2.0),
            n(y - 40.0),
            esc(&text)
        );
    }
    s.push_str("</g>");

    // Boxes.
    for &r in &present {
        for (i, u) in rows.units[r].iter().enumerate() {
            let (x, y, w) = (x_of[r][i], y_of[r], widths[r][i]);
            let (fill, stroke) = if u.elided {
                ("#f4f4f4", "#999")
            } else if r == 0 {
                ("#eef3f8", "#5b6b7c")
            } else {
                ("#fdf6e9", "#8a6d3b")
            };
            let dash = if u.elided {
                r#" stroke-dasharray="4 3""#
            } else {
                ""
            };
            let _ = write!(
                s,
                r#"<g class="unit {}"><rect x="{}" y="{}" width="{}" height="{BOX_H}" rx="4" fill="{fill}" stroke="{stroke}"{dash}/>"#,
                if r == 0 { "server" } else { "switch" },
                n(x),
                n(y),
                n(w),
            );
            if u.rails.len() == 1 && u.slots.is_empty() {
                let _ = write!(
                    s,
                    r#"<rect x="{}" y="{}" width="{}" height="5" fill="{}"/>"#,
                    n(x),
                    n(y),
                    n(w),
                    rail_colour(u.rails[0])
                );
            }
            let lands = r == 1 && u.slots.is_empty() && u.rails.len() > 1;
            let (ty, sy) = if r == 0 {
                (y + 27.0, y + 39.0)
            } else if lands {
                (y + 14.0, y + 25.0)
            } else {
                (y + 19.0, y + 31.0)
            };
            if lands {
                // Where each rail's cables land, numbered as the servers' HCAs.
                for &rail in &u.rails {
                    if let Some(cx) = rail_x(r, i, Some(rail)) {
                        let _ = write!(
                            s,
                            r##"<rect class="rail-port" x="{}" y="{}" width="14" height="11" fill="{}"/><text x="{}" y="{}" font-size="8" fill="#ffffff" text-anchor="middle">{}</text>"##,
                            n(cx - 7.0),
                            n(y + BOX_H - 12.0),
                            rail_colour(rail),
                            n(cx),
                            n(y + BOX_H - 3.5),
                            rail + 1
                        );
                    }
                }
            }
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" font-size="11" fill="#222" text-anchor="middle">{}</text><text x="{}" y="{}" font-size="9" fill="#555" text-anchor="middle">{}</text>"##,
                n(x + w / 2.0),
                n(ty),
                esc(&u.title),
                n(x + w / 2.0),
                n(sy),
                esc(&u.subtitle),
            );
            // Slots: server HCAs on the top edge, member switches on the bottom edge.
            for (si, (label, rail)) in u.slots.iter().enumerate() {
                let cx = slot_x(r, i, Some(si));
                let colour = rail.map_or("#b9a27a", rail_colour);
                if r == 0 {
                    let _ = write!(
                        s,
                        r##"<rect class="hca" x="{}" y="{}" width="10" height="10" fill="{colour}"/>"##,
                        n(cx - 5.0),
                        n(y + 2.0)
                    );
                    if !label.is_empty() {
                        let _ = write!(
                            s,
                            r##"<text x="{}" y="{}" font-size="8" fill="#ffffff" text-anchor="middle">{}</text>"##,
                            n(cx),
                            n(y + 10.0),
                            esc(label)
                        );
                    }
                } else {
                    let _ = write!(
                        s,
                        r#"<rect x="{}" y="{}" width="8" height="6" fill="{colour}"/>"#,
                        n(cx - 4.0),
                        n(y + BOX_H - 7.0)
                    );
                }
            }
            s.push_str("</g>");
        }
    }
    s.push_str(&labels.svg);
    s.push_str("</svg>");
    s
}

/// Link labels, each on a white pill; a label that would overlap one already placed is left out (the
/// tier totals on the left still give every count).
#[derive(Default)]
struct Labels {
    svg: String,
    placed: Vec<(f64, f64, f64, f64)>,
}

impl Labels {
    fn push(&mut self, x: f64, y: f64, text: &str) {
        let tw = text_width(text, 9.0) + 6.0;
        let rect = (x - tw / 2.0, y - 9.5, tw, 13.0);
        let overlaps = self.placed.iter().any(|p| {
            rect.0 < p.0 + p.2
                && p.0 < rect.0 + rect.2
                && rect.1 < p.1 + p.3
                && p.1 < rect.1 + rect.3
        });
        if overlaps {
            return;
        }
        self.placed.push(rect);
        let _ = write!(
            self.svg,
            r##"<rect x="{}" y="{}" width="{}" height="13" rx="3" fill="#ffffff" fill-opacity="0.9"/><text class="link-label" x="{}" y="{}" font-size="9" fill="#333" text-anchor="middle">{}</text>"##,
            n(rect.0),
            n(rect.1),
            n(tw),
            n(x),
            n(y),
            esc(text)
        );
    }
}
