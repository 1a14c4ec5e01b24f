//! Issue 35's two Must-show lines about scale, stated from the rows rather than by hand, so the
//! page cannot claim them before the rows do: "10 [scored rows] at 16 or more servers", and
//! "all-to-all of 1 MiB over 512 ranks within 20% of a published measurement at that scale (or the
//! nearest published one, cited)".
//!
//! The nearest published all-to-all is the one closest to 512 ranks and 1 MiB, each distance the
//! absolute base-2 logarithm of the ratio (rank count first, then size): a run at 192 ranks and
//! 8 GiB is 1.4 + 13 = 14.4 doublings away. The line is met only by a scored row (hardware railyard
//! expresses) at 128 or more ranks whose prediction is within 20% of it.

use super::{human_size, run_json, why_unscored, Predicted};
use std::fmt::Write as _;

/// Issue 35: scored rows at 16 or more servers.
pub const SERVERS: i64 = 16;
pub const SERVER_ROWS: usize = 10;
/// Issue 35: all-to-all of 1 MiB over 512 ranks (64 x 8 H100 on the default design), within 20%.
pub const A2A_ARGS: &str = "sim collective alltoall dgx-h100-superpod --servers 64 -b 1M -e 1M";
pub const A2A_RANKS: i64 = 512;
pub const A2A_BYTES: u64 = 1 << 20;
pub const A2A_BOUND: f64 = 0.20;
/// The fewest ranks a published all-to-all may have to stand for "that scale".
pub const A2A_MIN_RANKS: i64 = 128;
/// The same line on the hardware of the nearest published runs (OCI's GB200 NVL72, 4 x 400G per
/// tray, the jobs on 16 trays of each rack): 8 racks x 64 GPUs = 512 ranks at 1 MiB.
pub const A2A_NVL72_ARGS: &str =
    "sim collective alltoall gb200-nvl72-superpod --servers 144 --trays-per-rack 16 -b 1M -e 1M";

/// `railyard ARGS --json`'s first row: its time (us) and busbw (GB/s).
fn first_row(args: &str) -> (f64, f64) {
    let args: Vec<String> = args.split_whitespace().map(String::from).collect();
    let v = run_json(&args).unwrap();
    let row = &v["rows"][0];
    (
        row["time_us"].as_f64().unwrap(),
        row["busbw_gbs"].as_f64().unwrap(),
    )
}

/// Doublings between a run and the line's 512 ranks and 1 MiB.
fn distance(ranks: i64, size: u64) -> f64 {
    (ranks as f64 / A2A_RANKS as f64).log2().abs() + (size as f64 / A2A_BYTES as f64).log2().abs()
}

/// The section, and whether each line is met (servers, all-to-all).
pub fn section(results: &[Predicted]) -> (String, bool, bool) {
    let mut s = String::from("## Issue 35: rows at scale\n\n");
    let at_scale: Vec<&str> = results
        .iter()
        .filter(|p| why_unscored(&p.row).is_none() && p.row.servers >= SERVERS)
        .map(|p| p.row.id.as_str())
        .collect();
    let servers_met = at_scale.len() >= SERVER_ROWS;
    let met = |m: bool| if m { "met" } else { "not met" };
    writeln!(
        s,
        "**Scored rows at {SERVERS} or more servers: {} (issue 35 asks for {SERVER_ROWS}): {}.** {}\n",
        at_scale.len(),
        met(servers_met),
        if at_scale.is_empty() {
            "None.".to_string()
        } else {
            format!("They are {}.", at_scale.join(", "))
        }
    )
    .unwrap();
    let (us, busbw) = first_row(A2A_ARGS);
    let (nvl_us, nvl_busbw) = first_row(A2A_NVL72_ARGS);
    let mut runs: Vec<&Predicted> = results
        .iter()
        .filter(|p| {
            p.row.collective == "alltoall" && p.row.servers * p.row.gpus_per_server >= A2A_MIN_RANKS
        })
        .collect();
    let ranks = |p: &Predicted| p.row.servers * p.row.gpus_per_server;
    runs.sort_by(|a, b| distance(ranks(a), a.row.size).total_cmp(&distance(ranks(b), b.row.size)));
    let scored = runs.iter().find(|p| why_unscored(&p.row).is_none());
    let a2a_met = scored.is_some_and(|p| match &p.fit {
        Ok((pred, _, _)) => (pred / p.row.value - 1.0).abs() <= A2A_BOUND,
        Err(_) => false,
    });
    writeln!(
        s,
        "**All-to-all of 1 MiB over {A2A_RANKS} ranks within {:.0}% of a published run at that \
scale: {}.** railyard predicts {us:.2} us ({busbw:.2} GB/s busbw) for `railyard {A2A_ARGS}`, \
and {nvl_us:.2} us ({nvl_busbw:.2} GB/s busbw) on the hardware of the nearest published runs \
(`railyard {A2A_NVL72_ARGS}`).\n",
        A2A_BOUND * 100.0,
        met(a2a_met)
    )
    .unwrap();
    if runs.is_empty() {
        writeln!(
            s,
            "No published all-to-all at {A2A_MIN_RANKS} or more ranks is among the rows."
        )
        .unwrap();
    } else {
        writeln!(
            s,
            "The published all-to-all runs at {A2A_MIN_RANKS} or more ranks, nearest first \
(doublings from {A2A_RANKS} ranks and 1 MiB):\n"
        )
        .unwrap();
        s.push_str("| measurement | ranks | size | published | predicted | doublings away | scored |\n|---|---|---|---|---|---|---|\n");
        for p in &runs {
            let pred = p
                .fit
                .as_ref()
                .map_or("-".into(), |(v, _, _)| format!("{v:.2}"));
            writeln!(
                s,
                "| {} | {} | {} | {} {} | {pred} | {:.1} | {} |",
                p.row.id,
                ranks(p),
                human_size(p.row.size),
                p.row.value,
                p.row.metric.replace("_gbs", " GB/s").replace("_us", " us"),
                distance(ranks(p), p.row.size),
                why_unscored(&p.row).unwrap_or_else(|| "scored".into())
            )
            .unwrap();
        }
    }
    match scored {
        Some(p) => {
            let err = p.fit.as_ref().map_or("-".into(), |(v, _, _)| {
                format!("{:+.1}%", (v / p.row.value - 1.0) * 100.0)
            });
            writeln!(
                s,
                "\nThe nearest scored run is {} ({} ranks, {}: {} {}, railyard {err}; {}), \
{:.1} doublings from {A2A_RANKS} ranks and 1 MiB: no all-to-all nearer to that scale with its \
hardware stated was found, so the line is stated against it, as issue 35 allows (\"or the \
nearest published one, cited\").\n",
                p.row.id,
                ranks(p),
                human_size(p.row.size),
                p.row.value,
                p.row.metric.replace("_gbs", " GB/s").replace("_us", " us"),
                p.row.url,
                distance(ranks(p), p.row.size)
            )
            .unwrap()
        }
        None => writeln!(
            s,
            "\nNone of them is scored: none at that scale is on hardware railyard builds as run, \
so the line is not met. No all-to-all at {A2A_MIN_RANKS}-1,024 ranks near 1 MiB with its \
hardware stated was found (docs/validation/SOURCES.md, issue 35's searches).\n"
        )
        .unwrap(),
    }
    (s, servers_met, a2a_met)
}

/// The distance the section sorts by: ranks and size each count their doublings.
#[test]
fn distance_counts_doublings_of_ranks_and_size() {
    assert_eq!(distance(512, 1 << 20), 0.0);
    assert_eq!(distance(128, 1 << 20), 2.0);
    assert_eq!(distance(1024, 1 << 18), 3.0);
    assert!((distance(192, 8 << 30) - (13.0 + (512.0f64 / 192.0).log2())).abs() < 1e-12);
}
