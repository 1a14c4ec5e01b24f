//! Small helpers for writing SVG and HTML text by hand: escaping, number formatting, colours.

use std::borrow::Cow;

/// Escapes text for HTML and SVG content and attribute values.
pub fn esc(s: &str) -> Cow<'_, str> {
    if !s.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A coordinate with at most one decimal, without a trailing `.0` (keeps files small and stable).
pub fn n(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// The font every drawing names first; the PNG renderer bundles it, browsers fall back to sans-serif.
pub const FONT: &str = "DejaVu Sans, Verdana, sans-serif";

/// Rail colours (Tableau 10, then darker variants), by 0-based rail.
pub fn rail_colour(rail: u32) -> &'static str {
    const PALETTE: [&str; 16] = [
        "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
        "#9c755f", "#79706e", "#2f4b7c", "#a05195", "#d45087", "#665191", "#003f5c", "#ffa600",
    ];
    PALETTE[rail as usize % PALETTE.len()]
}

/// Approximate width of `text` at `size` px in DejaVu Sans (average advance ~0.6 em).
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.6
}

/// Gb/s as a short speed: `400G`, `1.6T`.
pub fn speed(gbps: f64) -> String {
    if gbps >= 1000.0 {
        format!("{}T", trim(gbps / 1000.0))
    } else {
        format!("{}G", trim(gbps))
    }
}

/// A number with at most two decimals, trailing zeros dropped.
pub fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

pub use railyard_plan::output::thousands;
