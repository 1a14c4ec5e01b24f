//! Charts as standalone SVG documents: the cost breakdown and bus bandwidth against message size.

use crate::svg::{esc, n, rail_colour, thousands, trim, FONT};
use railyard_plan::Plan;
use std::fmt::Write;

/// Cost by category as horizontal bars, each labelled with its dollars and marked when any price
/// behind it is an estimate.
pub fn cost_svg(plan: &Plan) -> String {
    let c = &plan.summary.cost_usd;
    let est = |cat: &str| {
        plan.bom
            .iter()
            .any(|l| l.category == cat && l.price_estimate && l.total_usd > 0.0)
    };
    let bars = [
        ("switches", c.switches, est("switch")),
        ("NICs", c.nics, est("nic")),
        ("cables", c.cables, est("cable")),
        ("transceivers", c.transceivers, est("transceiver")),
        ("fibre", c.fibre, est("fibre")),
    ];
    let max = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1.0);
    let (w, left, bar_w, pitch, top) = (720.0, 110.0, 430.0, 34.0, 54.0);
    let h = top + pitch * bars.len() as f64 + 40.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart cost-chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="{FONT}" role="img" aria-label="Cost breakdown"><rect width="100%" height="100%" fill="#ffffff"/><text x="16" y="24" font-size="15" font-weight="bold" fill="#222">Network cost by category</text><text x="16" y="42" font-size="11" fill="#555">{}</text>"##,
        esc(&format!(
            "${} in all, ${} per GPU{}",
            thousands(c.total),
            thousands(c.per_gpu),
            if c.includes_estimates {
                " (includes estimated prices)"
            } else {
                ""
            }
        )),
        w = n(w),
        h = n(h),
    );
    for (i, (label, usd, estimate)) in bars.iter().enumerate() {
        let y = top + i as f64 * pitch;
        let len = (usd / max * bar_w).max(if *usd > 0.0 { 1.0 } else { 0.0 });
        let _ = write!(
            s,
            r##"<text x="{}" y="{}" font-size="12" fill="#222" text-anchor="end">{label}</text><rect class="bar" x="{left}" y="{}" width="{}" height="20" fill="{}"{}/><text x="{}" y="{}" font-size="11" fill="#222">{}</text>"##,
            n(left - 8.0),
            n(y + 14.0),
            n(y),
            n(len),
            rail_colour(i as u32),
            if *estimate {
                r##" fill-opacity="0.75" stroke="#333" stroke-dasharray="3 2""##
            } else {
                ""
            },
            n(left + len + 6.0),
            n(y + 14.0),
            esc(&format!(
                "${}{}",
                thousands(*usd),
                if *estimate { " (estimate)" } else { "" }
            )),
        );
    }
    let _ = write!(
        s,
        r##"<text x="16" y="{}" font-size="10" fill="#666">Dashed bars include estimated prices; sources are in the bill of materials.</text></svg>"##,
        n(h - 14.0)
    );
    s
}

pub use railyard_study::busbw::Curve;

fn size_label(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "T"),
        (1 << 30, "G"),
        (1 << 20, "M"),
        (1 << 10, "K"),
    ];
    for (scale, unit) in UNITS {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    bytes.to_string()
}

/// Bus bandwidth (GB/s, nccl-tests' busbw) against message size on a log2 axis, one line per curve.
pub fn busbw_svg(title: &str, curves: &[Curve]) -> String {
    let (w, h, left, right, top, bottom) = (720.0, 400.0, 70.0, 150.0, 50.0, 50.0);
    let pts = curves.iter().flat_map(|c| c.points.iter());
    let (mut lo, mut hi, mut ymax) = (u64::MAX, 1u64, 0.0f64);
    for &(b, y) in pts {
        lo = lo.min(b.max(1));
        hi = hi.max(b);
        ymax = ymax.max(y);
    }
    if lo > hi {
        lo = 1;
    }
    let (lx0, lx1) = (
        (lo as f64).log2(),
        (hi as f64).log2().max((lo as f64).log2() + 1.0),
    );
    let step = nice_step(ymax.max(1.0) / 5.0);
    let ytop = (ymax / step).ceil().max(1.0) * step;
    let (pw, ph) = (w - left - right, h - top - bottom);
    let px = |b: u64| left + ((b.max(1) as f64).log2() - lx0) / (lx1 - lx0) * pw;
    let py = |v: f64| top + ph - v / ytop * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart busbw-chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="{FONT}" role="img" aria-label="Bus bandwidth"><rect width="100%" height="100%" fill="#ffffff"/><text x="16" y="24" font-size="15" font-weight="bold" fill="#222">{}</text>"##,
        esc(title)
    );
    // Grid and axes.
    let mut v = 0.0;
    while v <= ytop + 1e-9 {
        let y = py(v);
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{y}" x2="{x2}" y2="{y}" stroke="#e3e3e3"/><text x="{tx}" y="{ty}" font-size="10" fill="#444" text-anchor="end">{}</text>"##,
            trim(v),
            y = n(y),
            x2 = n(left + pw),
            tx = n(left - 6.0),
            ty = n(y + 3.5),
        );
        v += step;
    }
    let mut e = lx0.ceil() as u32;
    let every = (((lx1 - lx0) / 10.0).ceil() as u32).max(1);
    while f64::from(e) <= lx1 + 1e-9 {
        let b = 1u64 << e.min(62);
        let x = px(b);
        let _ = write!(
            s,
            r##"<line x1="{x}" y1="{y1}" x2="{x}" y2="{y2}" stroke="#bbb"/><text x="{x}" y="{ty}" font-size="10" fill="#444" text-anchor="middle">{}</text>"##,
            size_label(b),
            x = n(x),
            y1 = n(top + ph),
            y2 = n(top + ph + 4.0),
            ty = n(top + ph + 16.0),
        );
        e += every;
    }
    let _ = write!(
        s,
        r##"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="#888"/><text x="{}" y="{}" font-size="11" fill="#333" text-anchor="middle">message size (bytes)</text><text transform="translate(18 {}) rotate(-90)" font-size="11" fill="#333" text-anchor="middle">busbw (GB/s)</text>"##,
        n(pw),
        n(ph),
        n(left + pw / 2.0),
        n(h - 12.0),
        n(top + ph / 2.0),
    );
    for (i, c) in curves.iter().enumerate() {
        let colour = rail_colour(i as u32);
        let mut d = String::new();
        for (j, &(b, y)) in c.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{} {}",
                if j == 0 { "M" } else { " L" },
                n(px(b)),
                n(py(y))
            );
        }
        let _ = write!(
            s,
            r##"<path class="curve" d="{d}" fill="none" stroke="{colour}" stroke-width="2"/>"##
        );
        for &(b, y) in &c.points {
            let _ = write!(
                s,
                r##"<circle cx="{}" cy="{}" r="2.5" fill="{colour}"><title>{}</title></circle>"##,
                n(px(b)),
                n(py(y)),
                esc(&format!(
                    "{} {}: {} GB/s",
                    c.collective,
                    size_label(b),
                    trim(y)
                ))
            );
        }
        let ly = top + 10.0 + i as f64 * 18.0;
        let _ = write!(
            s,
            r##"<rect x="{}" y="{}" width="14" height="4" fill="{colour}"/><text x="{}" y="{}" font-size="11" fill="#222">{}</text>"##,
            n(left + pw + 12.0),
            n(ly - 4.0),
            n(left + pw + 30.0),
            n(ly + 1.0),
            esc(&c.collective)
        );
    }
    s.push_str("</svg>");
    s
}

/// 1, 2 or 5 times a power of ten, at least `x`.
fn nice_step(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}
