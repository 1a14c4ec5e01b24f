//! The drawing written out as SVG: title and rail legend, row labels, lines with their labels,
//! and the boxes with their ports.

use super::geometry::{EdgeCounts, Edges, Geometry};
use super::{EdgeKey, Unit, BOX_H, MAX_LABELLED, MAX_SLOTS, MAX_SLOT_EDGES};
use crate::svg::{esc, n, rail_colour, speed, text_width, thousands, FONT};
use railyard_fabric::Fabric;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The document's opening, title and rail legend.
pub(super) fn header(s: &mut String, f: &Fabric, (width, height): (f64, f64)) {
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
}

/// Row labels and per-boundary totals.
pub(super) fn row_labels(
    s: &mut String,
    f: &Fabric,
    g: &Geometry,
    totals: &BTreeMap<(usize, usize), (u64, f64)>,
) {
    let row_names = ["servers", "leaf", "spine", "core"];
    let tier_names = ["server", "leaf", "spine", "core"];
    for &r in &g.present {
        let count: usize = if r == 0 {
            f.servers.len()
        } else {
            g.rows.units[r]
                .iter()
                .map(|u| u.members.len() + u.folded)
                .sum::<usize>()
        };
        let _ = write!(
            s,
            r##"<text x="16" y="{}" font-size="13" font-weight="bold" fill="#222">{}</text><text x="16" y="{}" font-size="11" fill="#555">{}</text>"##,
            n(g.y_of[r] + 18.0),
            row_names[r],
            n(g.y_of[r] + 34.0),
            esc(&format!(
                "{} {}",
                thousands(count as f64),
                if r == 0 { "servers" } else { "switches" }
            )),
        );
    }
    for (&(lo, hi), &(count, gbps)) in totals {
        let y = (g.y_of[lo] + g.y_of[hi] + BOX_H) / 2.0;
        let _ = write!(
            s,
            r##"<text class="tier-links" x="16" y="{}" font-size="11" fill="#333">{}</text><text x="16" y="{}" font-size="11" fill="#333">{}</text>"##,
            n(y + 4.0),
            esc(&format!("{}–{}", tier_names[lo], tier_names[hi])),
            n(y + 18.0),
            esc(&format!("{} x {}", thousands(count as f64), speed(gbps))),
        );
    }
}

/// The lines between rows, labelled one by one when few, else once per pair of boxes.
pub(super) fn links(s: &mut String, g: &Geometry, e: &Edges, labels: &mut Labels) {
    let (per_pair, unit_level) = (&e.per_pair, &e.unit_level);
    for (pair, fine) in per_pair {
        let edges = if pair.0 > 0 && fine.len() > MAX_SLOT_EDGES {
            &unit_level[pair]
        } else {
            fine
        };
        let width_px = if edges.len() > 200 { 0.6 } else { 1.4 };
        let label_each = edges.len() <= MAX_LABELLED;
        if !label_each && unit_level[pair].len() <= MAX_LABELLED {
            label_box_pairs(g, *pair, &unit_level[pair], labels);
        }
        for (k, &(count, gbps)) in edges {
            let style = (width_px, edges.len(), label_each);
            line(s, g, k, (count, gbps), style, labels);
        }
    }
}

/// Too many lines to label one by one: label each pair of boxes once.
fn label_box_pairs(
    g: &Geometry,
    pair: (usize, usize),
    unit_level: &EdgeCounts,
    labels: &mut Labels,
) {
    let mut agg: BTreeMap<(usize, usize), (u64, f64, usize)> = BTreeMap::new();
    for (k, &(count, gbps)) in unit_level {
        let e = agg.entry((k.lo, k.hi)).or_insert((0, gbps, 0));
        e.0 += count;
        e.2 += 1;
    }
    for (&(lo, hi), &(count, gbps, _)) in &agg {
        let (x1, y1) = (g.slot_x(pair.0, lo, None), g.y_of[pair.0]);
        let (x2, y2) = (g.slot_x(pair.1, hi, None), g.y_of[pair.1] + BOX_H);
        let (lx, ly) = (x1 + (x2 - x1) * 0.45, y1 + (y2 - y1) * 0.45);
        labels.push(
            lx,
            ly,
            &format!("{} x {}", thousands(count as f64), speed(gbps)),
        );
    }
}

/// One line between a box (or slot) and another, `style` its width, how many lines its pair
/// of rows draws, and whether each is labelled.
fn line(
    s: &mut String,
    g: &Geometry,
    k: &EdgeKey,
    (count, gbps): (u64, f64),
    (width_px, lines, label_each): (f64, usize, bool),
    labels: &mut Labels,
) {
    let x1 = g.slot_x(k.lo_row, k.lo, k.lo_slot);
    let y1 = g.y_of[k.lo_row];
    let x2 = match k.hi_slot {
        None if k.lo_row == 0 => g.rail_x(k.hi_row, k.hi, k.rail),
        _ => None,
    }
    .unwrap_or_else(|| g.slot_x(k.hi_row, k.hi, k.hi_slot));
    let y2 = g.y_of[k.hi_row] + BOX_H;
    let colour = k.rail.map_or("#8a8f98", rail_colour);
    let w = if count > 1 && lines <= 200 {
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

/// The cables between switches of one row, as arcs above it.
pub(super) fn inter_switch_links(
    s: &mut String,
    g: &Geometry,
    inter: &BTreeMap<(usize, usize, usize), (u64, f64)>,
    labels: &mut Labels,
) {
    for (&(row, a, b), &(count, gbps)) in inter {
        let (x1, x2) = (g.slot_x(row, a, None), g.slot_x(row, b, None));
        let y = g.y_of[row];
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
}

/// The boxes, row by row.
pub(super) fn boxes(s: &mut String, g: &Geometry) {
    for &r in &g.present {
        for (i, u) in g.rows.units[r].iter().enumerate() {
            unit_box(s, g, (r, i), u);
        }
    }
}

/// One box: its frame, rail band, rail ports, title and slots.
fn unit_box(s: &mut String, g: &Geometry, (r, i): (usize, usize), u: &Unit) {
    let (x, y, w) = (g.x_of[r][i], g.y_of[r], g.widths[r][i]);
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
    let (class, h) = match (r, &u.domain) {
        (0, Some(_)) => ("server domain", BOX_H + super::domain::EXTRA_H),
        (0, None) => ("server", BOX_H),
        _ => ("switch", BOX_H),
    };
    let _ = write!(
        s,
        r#"<g class="unit {class}"><rect x="{}" y="{}" width="{}" height="{}" rx="4" fill="{fill}" stroke="{stroke}"{dash}/>"#,
        n(x),
        n(y),
        n(w),
        n(h),
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
        rail_ports(s, g, (r, i), u, y);
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
    slots(s, g, (r, i), u, y);
    if let Some(d) = &u.domain {
        super::domain::paint(s, (x, y, w), d);
    }
    s.push_str("</g>");
}

/// Where each rail's cables land on a switch serving several rails, numbered as the servers' HCAs.
fn rail_ports(s: &mut String, g: &Geometry, (r, i): (usize, usize), u: &Unit, y: f64) {
    for &rail in &u.rails {
        if let Some(cx) = g.rail_x(r, i, Some(rail)) {
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

/// Slots: server HCAs on the top edge, member switches on the bottom edge.
fn slots(s: &mut String, g: &Geometry, (r, i): (usize, usize), u: &Unit, y: f64) {
    for (si, (label, rail)) in u.slots.iter().enumerate() {
        let cx = g.slot_x(r, i, Some(si));
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
}

/// Link labels, each on a white pill; a label that would overlap one already placed is left out (the
/// tier totals on the left still give every count).
#[derive(Default)]
pub(super) struct Labels {
    pub(super) svg: String,
    placed: Vec<(f64, f64, f64, f64)>,
}

impl Labels {
    pub(super) fn push(&mut self, x: f64, y: f64, text: &str) {
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
