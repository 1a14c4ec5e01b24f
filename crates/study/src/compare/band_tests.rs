//! The error bands stay tied to the validation: every half-width and count of
//! data/model-error.toml recomputed from the generated pages (docs/validation.md,
//! docs/validation-training.md), which the validation tests hold true.

use super::*;
use std::path::Path;

fn page(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The cells of a page's table rows that start with a link (`| [id](url) | ...`).
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.starts_with("| ["))
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn percent(cell: &str) -> f64 {
    cell.trim_end_matches('%')
        .parse::<f64>()
        .unwrap_or_else(|e| panic!("{cell}: {e}"))
        .abs()
}

/// `8G`, `64K`, `1M`, `8`: bytes.
fn bytes(cell: &str) -> u64 {
    let s = cell.rsplit(' ').next().unwrap_or(cell);
    let (n, unit) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], 1 << 10),
        Some(b'M') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<u64>().unwrap_or_else(|e| panic!("{cell}: {e}")) * unit
}

/// The nearest-rank percentile `p` of `v`, rounded to a tenth as the pages print.
fn nearest_rank(mut v: Vec<f64>, p: u32) -> f64 {
    v.sort_by(f64::total_cmp);
    let rank = (f64::from(p) / 100.0 * v.len() as f64).ceil() as usize;
    (v[rank.max(1) - 1] * 10.0).round() / 10.0
}

/// Which row of `table` covers `at`, as `row` picks.
fn index(rows: &[Row], at: u64) -> usize {
    rows.iter()
        .position(|r| r.max.is_none_or(|m| at <= m))
        .unwrap_or(rows.len() - 1)
}

fn check(kind: &str, rows: &[Row], errors: Vec<Vec<f64>>, p: u32) {
    let mut wrong = Vec::new();
    for (r, e) in rows.iter().zip(errors) {
        let (n, h) = (e.len(), nearest_rank(e, p));
        if n != r.count || (h - r.half_width_percent).abs() > 1e-9 {
            wrong.push(format!(
                "{kind} {}: the pages give half_width_percent = {h} over {n}; the table has {} over {}",
                r.name, r.half_width_percent, r.count
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "data/model-error.toml has drifted from the validation pages:\n{}",
        wrong.join("\n")
    );
}

/// Collectives: the scored rows of docs/validation.md by size band, each row's LOSO error (the
/// fit error where it reads `same`).
#[test]
fn collective_bands_are_the_validation_pages() {
    let t = table();
    let mut errors = vec![Vec::new(); t.collective.len()];
    for c in rows(&page("validation.md")) {
        if c.len() != 14 || c[13] != "scored" {
            continue;
        }
        let loso = if c[11] == "same" { &c[9] } else { &c[11] };
        errors[index(&t.collective, bytes(&c[5]))].push(percent(loso));
    }
    check("collective", &t.collective, errors, t.percentile);
}

/// Training steps: the test runs of docs/validation-training.md by their GPUs, each run once by
/// its largest |error| over its scored metrics.
#[test]
fn training_bands_are_the_validation_pages() {
    let t = table();
    let mut runs: BTreeMap<(String, u64), f64> = BTreeMap::new();
    // The metrics table's rows (10 cells; the page's other tables have fewer).
    for c in rows(&page("validation-training.md")) {
        if c.len() != 10 || !c[9].starts_with("test") {
            continue;
        }
        let gpus: u64 = c[1].split(' ').next().unwrap().parse().unwrap();
        let e = runs.entry((c[0].clone(), gpus)).or_insert(0.0);
        *e = e.max(percent(&c[8]));
    }
    let mut errors = vec![Vec::new(); t.training.len()];
    for ((_, gpus), e) in runs {
        errors[index(&t.training, gpus)].push(e);
    }
    check("training", &t.training, errors, t.percentile);
}

/// The table's rows cover every size and scale in order, and only the last is unbounded.
#[test]
fn the_table_covers_every_size_and_scale_in_order() {
    let t = table();
    for rows in [&t.collective, &t.training] {
        let bounds: Vec<Option<u64>> = rows.iter().map(|r| r.max).collect();
        assert!(bounds.last().unwrap().is_none(), "{bounds:?}");
        assert!(
            bounds[..bounds.len() - 1]
                .windows(2)
                .all(|w| w[0].unwrap() < w[1].unwrap_or(u64::MAX)),
            "{bounds:?}"
        );
        assert!(rows.iter().all(|r| r.half_width_percent > 0.0
            && r.half_width_percent < 100.0
            && !r.source.is_empty()));
    }
    assert_eq!(row(Kind::Collective { bytes: 1 << 30 }).name, "> 100 MiB");
    assert_eq!(row(Kind::Collective { bytes: 64 << 10 }).name, "<= 64 KiB");
    assert_eq!(
        row(Kind::TrainingStep { gpus: 16_384 }).name,
        "> 4,096 GPUs"
    );
    assert_eq!(row(Kind::TrainingStep { gpus: 4096 }).name, "<= 4,096 GPUs");
}

/// A prediction off by exactly h from the interval's ends: x / lo - 1 = h and 1 - x / hi = h.
#[test]
fn the_band_holds_what_a_measurement_may_have_been() {
    let b = band(100.0, Kind::TrainingStep { gpus: 16_384 });
    let h = b.half_width_percent / 100.0;
    assert!((100.0 / b.lo - 1.0 - h).abs() < 1e-12, "{b:?}");
    assert!((1.0 - 100.0 / b.hi - h).abs() < 1e-12, "{b:?}");
    assert!(b.overlaps(&band(120.0, Kind::TrainingStep { gpus: 16_384 })));
    assert!(!b.overlaps(&band(140.0, Kind::TrainingStep { gpus: 16_384 })));
}
