//! Where everything stands: each row's height on the page, each box's place and width, and the
//! links aggregated into the lines drawn between shown boxes.

use super::{EdgeKey, End, NetLink, Rows, Unit, BOX_H, GAP, LEFT, ROW_GAP, TOP};
use crate::svg::text_width;
use railyard_fabric::LinkKind;
use std::collections::BTreeMap;

fn unit_width(u: &Unit, row: usize) -> f64 {
    let text = text_width(&u.title, 11.0).max(text_width(&u.subtitle, 9.0));
    let slots = u.slots.len() as f64 * if row == 0 { 13.0 } else { 11.0 };
    // A switch serving several rails gets room for a landing point per rail.
    let rails = if row == 1 && u.slots.is_empty() && u.rails.len() > 1 {
        u.rails.len() as f64 * 26.0 + 16.0
    } else {
        0.0
    };
    let domain = u.domain.as_ref().map_or(0.0, super::domain::min_width);
    (text + 14.0)
        .max(slots + 12.0)
        .max(rails)
        .max(domain)
        .max(if row == 0 { 64.0 } else { 70.0 })
}

/// Where every box stands: row tops, unit lefts and widths, and the page's size.
pub(super) struct Geometry<'a> {
    pub(super) rows: &'a Rows,
    /// The rows that have boxes.
    pub(super) present: Vec<usize>,
    pub(super) widths: Vec<Vec<f64>>,
    pub(super) x_of: Vec<Vec<f64>>,
    pub(super) y_of: [f64; 4],
    pub(super) width: f64,
    pub(super) height: f64,
}

impl<'a> Geometry<'a> {
    /// Boxes of a row share one width; adjacent rows with as many boxes share it too, so a
    /// scalable unit's servers stand under its leaves.
    pub(super) fn new(rows: &'a Rows, present: Vec<usize>) -> Geometry<'a> {
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
        // Rack blocks reach below the servers' row (the bottom one) by their strips.
        let below = if rows.units[0].iter().any(|u| u.domain.is_some()) {
            super::domain::EXTRA_H
        } else {
            0.0
        };
        let height = TOP + present.len() as f64 * (BOX_H + ROW_GAP) - ROW_GAP + 40.0 + below;
        let mut x_of: Vec<Vec<f64>> = vec![Vec::new(); 4];
        for r in 0..4 {
            let mut x = LEFT + (inner - row_w(r)) / 2.0;
            for w in &widths[r] {
                x_of[r].push(x);
                x += w + GAP;
            }
        }
        Geometry {
            rows,
            present,
            widths,
            x_of,
            y_of,
            width,
            height,
        }
    }

    /// The x where a line meets a box: its slot's centre, or the box's.
    pub(super) fn slot_x(&self, row: usize, unit: usize, slot: Option<usize>) -> f64 {
        let (x, w) = (self.x_of[row][unit], self.widths[row][unit]);
        match slot {
            Some(s) => {
                let count = self.rows.units[row][unit].slots.len().max(1) as f64;
                let pitch = (w - 12.0) / count;
                x + 6.0 + pitch * (s as f64 + 0.5)
            }
            None => x + w / 2.0,
        }
    }

    // A single switch serving several rails (two-switch, fat-tree leaves): server lines arrive at a
    // point per rail, so the rails it serves read off the drawing.
    pub(super) fn rail_x(&self, row: usize, unit: usize, rail: Option<u32>) -> Option<f64> {
        let u = &self.rows.units[row][unit];
        let i = u.rails.iter().position(|&r| Some(r) == rail)?;
        if !u.slots.is_empty() || u.rails.len() < 2 || row != 1 {
            return None;
        }
        let (x, w) = (self.x_of[row][unit], self.widths[row][unit]);
        let pitch = (w - 16.0) / u.rails.len() as f64;
        Some(x + 8.0 + pitch * (i as f64 + 0.5))
    }
}

/// Lines between shown boxes, by pair of rows.
pub(super) type EdgeCounts = BTreeMap<EdgeKey, (u64, f64)>;

/// The links aggregated by shown unit (and slot where it helps).
pub(super) struct Edges {
    /// By (lower row, upper row): the lines between boxes and slots.
    pub(super) per_pair: BTreeMap<(usize, usize), EdgeCounts>,
    /// The same, box to box.
    pub(super) unit_level: BTreeMap<(usize, usize), EdgeCounts>,
    /// Inter-switch links by (row, box, box).
    pub(super) inter: BTreeMap<(usize, usize, usize), (u64, f64)>,
    /// Links and their speed between two rows.
    pub(super) totals: BTreeMap<(usize, usize), (u64, f64)>,
}

/// The links aggregated by shown unit (and slot where it helps).
pub(super) fn edges(links: &[NetLink], rows: &Rows, shown: &[Vec<usize>]) -> Edges {
    let mut per_pair: BTreeMap<(usize, usize), BTreeMap<EdgeKey, (u64, f64)>> = BTreeMap::new();
    let mut unit_level: BTreeMap<(usize, usize), BTreeMap<EdgeKey, (u64, f64)>> = BTreeMap::new();
    let mut inter: BTreeMap<(usize, usize, usize), (u64, f64)> = BTreeMap::new();
    let mut totals: BTreeMap<(usize, usize), (u64, f64)> = BTreeMap::new();
    for l in links {
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
    Edges {
        per_pair,
        unit_level,
        inter,
        totals,
    }
}
