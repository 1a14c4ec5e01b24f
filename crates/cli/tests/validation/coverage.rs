//! The coverage table of docs/validation/SOURCES.md, counted from measurements.toml so that it
//! cannot go stale: how many rows there are by GPU, technology, collective, servers, message size
//! and quality, and how the scored ones spread over the same axes.
//!
//! The GPU is the family named in the row's `gpu` (GH200 before H200, GB200 before B200: the
//! longer name first); the technology is the network between servers as the row's `technology`
//! begins (InfiniBand, RoCE; NVLink or xGMI alone inside one server or rack; "unknown" and RDMA of
//! no named kind: not stated).

use super::{source_of, why_unscored, Row};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The section's heading; the table runs from it to the first blank line after the table.
pub const HEADING: &str = "## Coverage of `measurements.toml`";

/// GPU families, each before any it contains (GH200 before H200).
const GPUS: [&str; 12] = [
    "GH200", "GB200", "GB300", "MI300X", "H100", "H200", "H800", "A100", "B200", "B300", "V100",
    "MI250",
];

fn gpu(r: &Row) -> &'static str {
    GPUS.iter()
        .find(|g| r.gpu.contains(*g))
        .copied()
        .unwrap_or("unknown")
}

/// The network a row's numbers cross, by how its `technology` begins.
fn technology(r: &Row) -> &'static str {
    let t = r.technology.as_str();
    if t.contains("InfiniBand") && !t.starts_with("unknown") {
        "InfiniBand (EDR, HDR, NDR, XDR)"
    } else if t.starts_with("RoCE") || t.contains("RoCE between") {
        "RoCE (100G-400G)"
    } else if t.starts_with("NVLink") {
        "NVLink inside one server or rack"
    } else if t.contains("xGMI") {
        "xGMI inside one server"
    } else {
        "not stated"
    }
}

fn collective(r: &Row) -> &str {
    match r.collective.as_str() {
        "allreduce" => "all-reduce",
        "alltoall" => "all-to-all",
        "allgather" => "all-gather",
        "reducescatter" => "reduce-scatter",
        "sendrecv" => "send/recv",
        other => other,
    }
}

fn servers(r: &Row) -> &'static str {
    match r.servers {
        ..=1 => "1",
        2 => "2",
        3..=32 => "3-32",
        33..=99 => "33-99",
        _ => "100+",
    }
}

/// The size bands, as the table names them, in order.
const SIZES: [&str; 4] = [
    "<= 64 KiB",
    "64 KiB - 100 MiB",
    "> 100 MiB",
    "not published",
];

fn size(r: &Row) -> &'static str {
    match r.size {
        0 => SIZES[3],
        1..=65_536 => SIZES[0],
        s if s <= 100 << 20 => SIZES[1],
        _ => SIZES[2],
    }
}

/// `name count` pairs, most first (ties by name).
fn by_count<'a, K: Ord + std::fmt::Display>(
    rows: &[&'a Row],
    key: impl Fn(&'a Row) -> K,
) -> String {
    let mut n: BTreeMap<K, usize> = BTreeMap::new();
    for r in rows {
        *n.entry(key(r)).or_default() += 1;
    }
    let mut v: Vec<(K, usize)> = n.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let v: Vec<String> = v.iter().map(|(k, c)| format!("{k} {c}")).collect();
    v.join(", ")
}

/// `band: count` pairs in the bands' order, the empty ones left out.
fn by_band<'a>(
    rows: &[&'a Row],
    bands: &[&str],
    key: impl Fn(&'a Row) -> &'static str,
    sep: &str,
) -> String {
    let v: Vec<String> = bands
        .iter()
        .filter_map(|b| {
            let c = rows.iter().filter(|r| key(r) == *b).count();
            (c > 0).then(|| format!("{b}{sep}{c}"))
        })
        .collect();
    v.join(if sep == ": " { "; " } else { ", " })
}

const SERVER_BANDS: [&str; 5] = ["1", "2", "3-32", "33-99", "100+"];

/// The runs above 32 servers, largest first: `128 H100 servers` (trays for rack-scale systems).
fn large_runs(rows: &[&Row]) -> String {
    let runs: BTreeSet<(i64, &str)> = rows
        .iter()
        .filter(|r| r.servers > 32)
        .map(|r| (r.servers, gpu(r)))
        .collect();
    let v: Vec<String> = runs
        .iter()
        .rev()
        .map(|(n, g)| {
            let unit = if g.starts_with("GB") {
                "trays"
            } else {
                "servers"
            };
            format!("{n} {g} {unit}")
        })
        .collect();
    v.join("; ")
}

/// The section: heading and table.
pub fn table(rows: &[Row]) -> String {
    let all: Vec<&Row> = rows.iter().collect();
    let scored: Vec<&Row> = rows.iter().filter(|r| why_unscored(r).is_none()).collect();
    let sources: BTreeSet<String> = scored.iter().map(|r| source_of(&r.url)).collect();
    let mut s = format!(
        "{HEADING} ({} rows; {} scored)\n\n\
         Counted from the rows by crates/cli/tests/validation.rs (`RAILYARD_VALIDATION=update` rewrites it). \
         A row is scored when `quality` is exact or approximate, `expressible = true` and no `unscored` reason is set.\n\n\
         | dimension | rows |\n|---|---|\n",
        rows.len(),
        scored.len()
    );
    let expressible = rows.iter().filter(|r| r.expressible).count();
    let lines = [
        ("GPU", by_count(&all, gpu)),
        ("technology", by_count(&all, technology)),
        ("collective", by_count(&all, collective)),
        (
            "servers",
            match large_runs(&all) {
                runs if runs.is_empty() => by_band(&all, &SERVER_BANDS, servers, ": "),
                runs => format!("{} ({runs})", by_band(&all, &SERVER_BANDS, servers, ": ")),
            },
        ),
        ("message size", by_band(&all, &SIZES, size, ": ")),
        (
            "quality",
            format!(
                "{}; expressible in railyard {expressible}, not {}",
                by_count(&all, |r| r.quality.as_str()),
                rows.len() - expressible
            ),
        ),
        (
            "scored rows",
            format!(
                "{} from {} sources: by servers {} (16 or more: {}); by GPU {}; by collective {}; by size {}",
                scored.len(),
                sources.len(),
                by_band(&scored, &SERVER_BANDS, servers, ": ").replace("; ", ", "),
                scored.iter().filter(|r| r.servers >= 16).count(),
                by_count(&scored, gpu),
                by_count(&scored, collective),
                by_band(&scored, &SIZES, size, " "),
            ),
        ),
    ];
    for (k, v) in lines {
        let _ = writeln!(s, "| {k} | {v} |");
    }
    s
}

/// SOURCES.md with its coverage section (heading to the table's last line) replaced by `section`.
pub fn replaced(doc: &str, section: &str) -> Option<String> {
    let start = doc.find(HEADING)?;
    let table = start + doc[start..].find("\n|")? + 1;
    let end = doc[table..]
        .find("\n\n")
        .map_or(doc.len(), |i| table + i + 1);
    Some(format!("{}{section}{}", &doc[..start], &doc[end..]))
}
