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

/// The points of a curve a log axis can show: a 0-byte row (nccl-tests prints one for
/// all-to-all) has no place on it, and drawn at 1 B it made a line along the bottom to the first size.
fn log_points(c: &Curve) -> impl Iterator<Item = &(u64, f64)> {
    c.points.iter().filter(|(b, _)| *b > 0)
}

/// Bus bandwidth (GB/s, nccl-tests' busbw) against message size on a log2 axis, one line per curve;
/// 0-byte rows are left out.
pub fn busbw_svg(title: &str, curves: &[Curve]) -> String {
    let (w, h, left, right, top, bottom) = (720.0, 400.0, 70.0, 150.0, 50.0, 50.0);
    let pts = curves.iter().flat_map(log_points);
    let (mut lo, mut hi, mut ymax) = (u64::MAX, 1u64, 0.0f64);
    for &(b, y) in pts {
        lo = lo.min(b);
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
        for (j, &(b, y)) in log_points(c).enumerate() {
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
        for &(b, y) in log_points(c) {
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

/// A labelled point of a scatter chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub label: String,
    pub x: f64,
    pub y: f64,
}

/// The points no other point beats on both axes (higher `x`, lower `y`): the Pareto front, by
/// ascending `x`. A point is dominated when another is at least as good on both and better on one.
pub fn pareto_front(points: &[Point]) -> Vec<usize> {
    let dominated = |i: usize| {
        let p = &points[i];
        points
            .iter()
            .enumerate()
            .any(|(j, q)| j != i && q.x >= p.x && q.y <= p.y && (q.x > p.x || q.y < p.y))
    };
    let mut front: Vec<usize> = (0..points.len()).filter(|&i| !dominated(i)).collect();
    front.sort_by(|&a, &b| points[a].x.total_cmp(&points[b].x));
    front
}

/// A scatter of what a design delivers (`x`, higher is better) against what it costs (`y`, lower is
/// better), the Pareto front drawn as a line through the designs on it.
pub fn pareto_svg(x_label: &str, y_label: &str, points: &[Point]) -> String {
    let c = ParetoFrame::of(points);
    let (w, h) = (c.w, c.h);
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart pareto-chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="{FONT}" role="img" aria-label="Cost against performance"><rect width="100%" height="100%" fill="#ffffff"/><text x="16" y="24" font-size="15" font-weight="bold" fill="#222">{}</text>"##,
        esc(&format!("{y_label} against {x_label}")),
    );
    c.write_grid(&mut s, x_label, y_label);
    c.write_designs(&mut s, points);
    s.push_str("</svg>");
    s
}

/// The Pareto chart's frame: its size and margins, the ranges its axes show and their steps.
struct ParetoFrame {
    w: f64,
    h: f64,
    left: f64,
    top: f64,
    pw: f64,
    ph: f64,
    x0: f64,
    x1: f64,
    xstep: f64,
    ytop: f64,
    ystep: f64,
}

impl ParetoFrame {
    /// The frame around the finite points: x with 10% of its spread each side, y from zero.
    fn of(points: &[Point]) -> ParetoFrame {
        let (w, h, left, right, top, bottom) = (720.0, 420.0, 90.0, 30.0, 50.0, 50.0);
        let finite: Vec<&Point> = points
            .iter()
            .filter(|p| p.x.is_finite() && p.y.is_finite())
            .collect();
        let (mut x0, mut x1, mut y1) = (f64::MAX, 0.0f64, 0.0f64);
        for p in &finite {
            x0 = x0.min(p.x);
            x1 = x1.max(p.x);
            y1 = y1.max(p.y);
        }
        if finite.is_empty() {
            x0 = 0.0;
        }
        // Room around the points: 10% of the spread each side of x, y from zero.
        let spread = (x1 - x0).max(x1.abs() * 0.05).max(1e-9);
        let (x0, x1) = ((x0 - spread * 0.1).max(0.0), x1 + spread * 0.1);
        let ystep = nice_step(y1.max(1.0) / 5.0);
        let ytop = (y1 / ystep).ceil().max(1.0) * ystep;
        let xstep = nice_step((x1 - x0).max(1e-9) / 5.0);
        let (pw, ph) = (w - left - right, h - top - bottom);
        ParetoFrame {
            w,
            h,
            left,
            top,
            pw,
            ph,
            x0,
            x1,
            xstep,
            ytop,
            ystep,
        }
    }

    /// Where `x` stands across the plot.
    fn px(&self, x: f64) -> f64 {
        self.left + (x - self.x0) / (self.x1 - self.x0) * self.pw
    }

    /// Where `y` stands down the plot.
    fn py(&self, y: f64) -> f64 {
        self.top + self.ph - y / self.ytop * self.ph
    }

    /// The grid lines, their values, the plot's border and the axis labels.
    fn write_grid(&self, s: &mut String, x_label: &str, y_label: &str) {
        let (h, left, top, pw, ph) = (self.h, self.left, self.top, self.pw, self.ph);
        let (x0, x1, xstep, ytop, ystep) = (self.x0, self.x1, self.xstep, self.ytop, self.ystep);
        let px = |x: f64| self.px(x);
        let py = |y: f64| self.py(y);
        let mut v = 0.0;
        while v <= ytop + 1e-9 {
            let _ = write!(
                s,
                r##"<line x1="{left}" y1="{y}" x2="{x2}" y2="{y}" stroke="#e3e3e3"/><text x="{tx}" y="{ty}" font-size="10" fill="#444" text-anchor="end">{}</text>"##,
                thousands(v),
                y = n(py(v)),
                x2 = n(left + pw),
                tx = n(left - 6.0),
                ty = n(py(v) + 3.5),
            );
            v += ystep;
        }
        let mut x = (x0 / xstep).ceil() * xstep;
        while x <= x1 + 1e-9 {
            let _ = write!(
                s,
                r##"<line x1="{px}" y1="{y1}" x2="{px}" y2="{y2}" stroke="#bbb"/><text x="{px}" y="{ty}" font-size="10" fill="#444" text-anchor="middle">{}</text>"##,
                if xstep >= 1.0 { thousands(x) } else { trim(x) },
                px = n(px(x)),
                y1 = n(top + ph),
                y2 = n(top + ph + 4.0),
                ty = n(top + ph + 16.0),
            );
            x += xstep;
        }
        let _ = write!(
            s,
            r##"<rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="#888"/><text x="{}" y="{}" font-size="11" fill="#333" text-anchor="middle">{}</text><text transform="translate(16 {}) rotate(-90)" font-size="11" fill="#333" text-anchor="middle">{}</text>"##,
            n(pw),
            n(ph),
            n(left + pw / 2.0),
            n(h - 12.0),
            esc(&format!("{x_label} (higher is better)")),
            n(top + ph / 2.0),
            esc(&format!("{y_label} (lower is better)")),
        );
    }

    /// The Pareto front as a line through its designs, then every design as a labelled dot.
    fn write_designs(&self, s: &mut String, points: &[Point]) {
        let px = |x: f64| self.px(x);
        let py = |y: f64| self.py(y);
        let front = pareto_front(points);
        let mut d = String::new();
        for (j, &i) in front.iter().enumerate() {
            let p = &points[i];
            let _ = write!(
                d,
                "{}{} {}",
                if j == 0 { "M" } else { " L" },
                n(px(p.x)),
                n(py(p.y))
            );
        }
        if front.len() > 1 {
            let _ = write!(
                s,
                r##"<path class="pareto-front" d="{d}" fill="none" stroke="#1a7f37" stroke-width="2" stroke-dasharray="6 3"/>"##
            );
        }
        for (i, p) in points.iter().enumerate() {
            if !(p.x.is_finite() && p.y.is_finite()) {
                continue;
            }
            let on_front = front.contains(&i);
            let colour = rail_colour(i as u32);
            let _ = write!(
                s,
                r##"<circle class="design{}" cx="{}" cy="{}" r="6" fill="{colour}" stroke="#222" stroke-width="{}"><title>{}</title></circle><text x="{}" y="{}" font-size="12" font-weight="bold" fill="#222">{}</text>"##,
                if on_front { " pareto" } else { "" },
                n(px(p.x)),
                n(py(p.y)),
                if on_front { 2 } else { 0 },
                esc(&format!(
                    "{}: {} at {}",
                    p.label,
                    thousands(p.y),
                    if p.x >= 100.0 {
                        thousands(p.x)
                    } else {
                        trim(p.x)
                    }
                )),
                n(px(p.x) + 9.0),
                n(py(p.y) - 7.0),
                esc(&p.label),
            );
        }
    }
}

/// Vertical bars, one per label, each with its value to `decimals` places.
pub fn bars_svg(title: &str, bars: &[(String, f64)], decimals: usize) -> String {
    let pitch = 70.0;
    let (left, top, bottom, ph) = (30.0, 50.0, 40.0, 260.0);
    // Wide enough for the bars and for the title (about 8.5 units a character at 15 px).
    let w = (left + pitch * bars.len() as f64 + 30.0)
        .max(360.0)
        .max(32.0 + 8.5 * title.chars().count() as f64);
    let h = top + ph + bottom;
    let max = bars
        .iter()
        .map(|b| b.1)
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
        .max(1e-12);
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart bar-chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="{FONT}" role="img" aria-label="{t}"><rect width="100%" height="100%" fill="#ffffff"/><text x="16" y="24" font-size="15" font-weight="bold" fill="#222">{t}</text><line x1="{left}" y1="{base}" x2="{x2}" y2="{base}" stroke="#888"/>"##,
        w = n(w),
        h = n(h),
        t = esc(title),
        base = n(top + ph),
        x2 = n(w - 10.0),
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let v = if v.is_finite() { *v } else { 0.0 };
        let bh = v / max * (ph - 20.0);
        let x = left + 10.0 + i as f64 * pitch;
        let _ = write!(
            s,
            r##"<rect class="bar" x="{}" y="{}" width="44" height="{}" fill="{}"/><text x="{}" y="{}" font-size="11" fill="#222" text-anchor="middle">{}</text><text x="{}" y="{}" font-size="12" font-weight="bold" fill="#222" text-anchor="middle">{}</text>"##,
            n(x),
            n(top + ph - bh),
            n(bh),
            rail_colour(i as u32),
            n(x + 22.0),
            n(top + ph - bh - 5.0),
            format_args!("{v:.decimals$}"),
            n(x + 22.0),
            n(top + ph + 16.0),
            esc(label),
        );
    }
    s.push_str("</svg>");
    s
}
