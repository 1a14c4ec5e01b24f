//! The figures docs/validation.md states: errors against a published value or against the range
//! of runs that disagree, medians overall and per size band, the worst row, and issue 35's bounds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Issue 35's bounds on the leave-one-source-out error: median, median of each size band, worst.
pub const LOSO_MEDIAN: f64 = 0.08;
pub const LOSO_BAND: f64 = 0.15;
pub const LOSO_WORST: f64 = 0.50;

/// Runs of one configuration (the same command, collective, size and metric) that differ by more
/// than this (largest over smallest, minus one) are scored against the range they span: issue 35's
/// median bound, the tightest of its bounds (no prediction is within it of both ends).
pub const SPREAD: f64 = LOSO_MEDIAN;

/// The size bands of issue 35, by the size a row was predicted at.
pub const BANDS: [(&str, u64, u64); 3] = [
    ("<= 64 KiB", 0, 64 << 10),
    ("64 KiB - 100 MiB", (64 << 10) + 1, 100 << 20),
    ("> 100 MiB", (100 << 20) + 1, u64::MAX),
];

pub fn band_of(size: u64) -> usize {
    BANDS
        .iter()
        .position(|(_, lo, hi)| (*lo..=*hi).contains(&size))
        .unwrap()
}

/// The signed error of `predicted` against a published value, or against the range `[lo, hi]`
/// of runs that disagree (0 inside it, else from the nearer end).
pub fn error(predicted: f64, lo: f64, hi: f64) -> f64 {
    if predicted > hi {
        (predicted - hi) / hi
    } else if predicted < lo {
        (predicted - lo) / lo
    } else {
        0.0
    }
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else {
        (s[(n - 1) / 2] + s[n / 2]) / 2.0
    }
}

/// One scored row's absolute errors: with the shipped constants and left one source out.
pub struct Scored<'a> {
    pub id: &'a str,
    pub source: &'a str,
    pub band: usize,
    pub fit: f64,
    pub loso: f64,
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "not met"
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The summary paragraph of the two errors, overall and per band, with issue 35's bounds.
pub fn summary(rows: &[Scored<'_>]) -> String {
    let mut o = String::new();
    let sources: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.source).collect();
    let worst = |f: &dyn Fn(&Scored<'_>) -> f64| {
        rows.iter()
            .max_by(|a, b| f(a).total_cmp(&f(b)))
            .map(|r| (f(r), r.id))
            .unwrap_or((f64::NAN, "-"))
    };
    let fit: Vec<f64> = rows.iter().map(|r| r.fit).collect();
    let loso: Vec<f64> = rows.iter().map(|r| r.loso).collect();
    let (wl, wl_id) = worst(&|r| r.loso);
    let (wf, wf_id) = worst(&|r| r.fit);
    let _ = writeln!(
        o,
        "| | rows | sources | fit: median | LOSO: median | bound (LOSO) |\n|---|---|---|---|---|---|"
    );
    let _ = writeln!(
        o,
        "| all sizes | {} | {} | {} | **{}** | <= {:.0}%: {} |",
        rows.len(),
        sources.len(),
        pct(median(&fit)),
        pct(median(&loso)),
        LOSO_MEDIAN * 100.0,
        met(median(&loso) <= LOSO_MEDIAN)
    );
    for (b, (name, _, _)) in BANDS.iter().enumerate() {
        let in_band: Vec<&Scored<'_>> = rows.iter().filter(|r| r.band == b).collect();
        let f: Vec<f64> = in_band.iter().map(|r| r.fit).collect();
        let l: Vec<f64> = in_band.iter().map(|r| r.loso).collect();
        let s: std::collections::BTreeSet<&str> = in_band.iter().map(|r| r.source).collect();
        let _ = writeln!(
            o,
            "| {name} | {} | {} | {} | **{}** | <= {:.0}%: {} |",
            in_band.len(),
            s.len(),
            pct(median(&f)),
            pct(median(&l)),
            LOSO_BAND * 100.0,
            met(!l.is_empty() && median(&l) <= LOSO_BAND)
        );
    }
    let _ = writeln!(
        o,
        "| worst row | | | {} ({wf_id}) | **{}** ({wl_id}) | <= {:.0}%: {} |",
        pct(wf),
        pct(wl),
        LOSO_WORST * 100.0,
        met(wl <= LOSO_WORST)
    );
    let above = rows.iter().filter(|r| r.loso > LOSO_WORST).count();
    let _ = writeln!(
        o,
        "\n{above} scored row(s) above {:.0}% left one source out.",
        LOSO_WORST * 100.0
    );
    o
}

/// The leave-one-source-out figures the bounds are on: the median over all rows, the median of
/// each size band ([`BANDS`]), and the worst row.
pub struct Loso {
    pub median: f64,
    pub bands: [f64; 3],
    pub worst: f64,
}

pub fn loso(rows: &[Scored<'_>]) -> Loso {
    let of = |f: &dyn Fn(&Scored<'_>) -> bool| -> Vec<f64> {
        rows.iter().filter(|r| f(r)).map(|r| r.loso).collect()
    };
    Loso {
        median: median(&of(&|_| true)),
        bands: [0, 1, 2].map(|b| median(&of(&|r| r.band == b))),
        worst: of(&|_| true).into_iter().fold(f64::NAN, f64::max),
    }
}

/// The range each spread group spans, by group key, for groups whose runs differ by more than
/// [`SPREAD`]: `(lo, hi, runs)`.
pub fn spreads(groups: &BTreeMap<String, Vec<f64>>) -> BTreeMap<String, (f64, f64, usize)> {
    groups
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .filter_map(|(k, v)| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (hi / lo - 1.0 > SPREAD).then(|| (k.clone(), (lo, hi, v.len())))
        })
        .collect()
}
