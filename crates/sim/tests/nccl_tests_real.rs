//! Real nccl-tests logs (tests/data/nccl-tests/, sources in its README) read as published: the
//! ranks, hosts, rows and peak numbers below were read off the files by hand.

use railyard_sim::nccl::Collective;
use railyard_sim::nccl_tests::{parse, Run};

fn run(file: &str) -> Run {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/nccl-tests")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let log = parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(log.runs.len(), 1, "{file}");
    log.runs.into_iter().next().unwrap()
}

/// (file, ranks, hosts, rows, largest size, its out-of-place busbw, average busbw)
const CASES: [(&str, u32, usize, usize, u64, f64, f64); 5] = [
    (
        "nccl-tests-issue309-h100-2node-ib-all_reduce.txt",
        16,
        2,
        32,
        17179869184,
        469.21,
        139.56,
    ),
    (
        "oci-a100-2node-roce-all_reduce.txt",
        16,
        2,
        31,
        8589934592,
        237.94,
        66.4834,
    ),
    (
        "gcp-a4-b200-2node-roce-all_gather.txt",
        16,
        2,
        24,
        8589934592,
        260.03,
        59.3638,
    ),
    (
        "superbench-a100-1node-all_reduce-2021.txt",
        8,
        1,
        34,
        8589934592,
        235.26,
        68.4048,
    ),
    (
        "superbench-a100-1node-alltoall-2021.txt",
        8,
        1,
        34,
        8589934592,
        224.31,
        58.6481,
    ),
];

#[test]
fn real_logs_read_as_published() {
    for (file, ranks, hosts, rows, size, busbw, avg) in CASES {
        let r = run(file);
        assert_eq!(r.ranks(), Some(ranks), "{file}");
        assert_eq!(r.hosts().len(), hosts, "{file}");
        assert_eq!(r.rows.len(), rows, "{file}");
        let last = r.rows.last().unwrap();
        assert_eq!(last.size, size, "{file}");
        assert_eq!(last.out_of_place.unwrap().busbw_gbs, busbw, "{file}");
        assert_eq!(r.avg_busbw_gbs, Some(avg), "{file}");
        // nccl-tests' own arithmetic holds on every row: algbw = size / time (GB = 1e9 B), to the
        // two decimals printed.
        for row in &r.rows {
            let m = row.out_of_place.unwrap();
            if m.time_us > 0.0 && row.size > 0 {
                let algbw = row.size as f64 / (m.time_us * 1e3);
                assert!(
                    (algbw - m.algbw_gbs).abs() <= 0.01 + 1e-3 * algbw,
                    "{file} line {}: {algbw} vs {}",
                    row.line,
                    m.algbw_gbs
                );
            }
        }
    }
}

#[test]
fn the_program_name_tells_the_collective_where_printed() {
    // The 2021 logs predate `# Collective test starting`; the newer ones say what ran only if
    // nccl-tests printed it.
    assert_eq!(
        run("superbench-a100-1node-all_reduce-2021.txt").collective,
        None
    );
    for (file, _, _, _, _, _, _) in CASES {
        let r = run(file);
        if let Some(c) = r.collective {
            assert!(
                matches!(c, Collective::AllReduce | Collective::AllGather),
                "{file}: {c}"
            );
        }
    }
}

#[test]
fn an_empty_redop_column_reads_as_none() {
    let r = run("superbench-a100-1node-alltoall-2021.txt");
    assert!(r.rows.iter().all(|row| row.redop.is_none()));
    assert!(run("oci-a100-2node-roce-all_reduce.txt")
        .rows
        .iter()
        .all(|row| row.redop.as_deref() == Some("sum")));
}

fn parse_file(
    file: &str,
) -> Result<railyard_sim::nccl_tests::Log, railyard_sim::nccl_tests::ParseError> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/nccl-tests")
        .join(file);
    parse(&std::fs::read_to_string(&path).unwrap())
}

/// Logs as users paste them into issues: launcher prefixes, an empty host name, rank lines left out
/// by hand, `#` lost to GitHub's rendering, and an old all-to-all whose in-place check nccl-tests
/// itself does not report.
#[test]
fn logs_as_users_paste_them() {
    // `srun --label`: every line behind ` 0: `.
    let r = run("issue290-h100-2node-srun-label-c0-all_reduce.txt");
    assert_eq!(
        (r.ranks(), r.hosts().len(), r.rows.len()),
        (Some(16), 2, 11)
    );
    assert_eq!(
        r.rows.last().unwrap().out_of_place.unwrap().busbw_gbs,
        155.57
    );
    assert_eq!(r.avg_busbw_gbs, Some(142.735));

    // An empty host name: the rank lines read (the text ends at the table header, so the
    // error is about the rows, not line 5).
    let e = parse_file("cut/nccl841-a100pcie-1node-g8-empty-hostname-header.txt").unwrap_err();
    assert!(e.message.contains("no nccl-tests result rows"), "{e}");

    // Rank lines 2-5 elided: 8 ranks (the busbw factor is all-reduce's on 8: 838.38 / 479.07 =
    // 1.750), the hosts unknown.
    let r = run("oci-gb300-2node-all_reduce-elided-ranks.txt");
    assert_eq!(
        (r.ranks(), r.devices.len(), r.ranks_elided()),
        (Some(8), 4, true)
    );
    let m = r.rows[0].out_of_place.unwrap();
    assert!((m.busbw_gbs / m.algbw_gbs - Collective::AllReduce.busbw_factor(8)).abs() < 1e-3);

    // The header without `#`: the table is found, and its only row is cut where the text
    // ends.
    let e = parse_file("cut/issue249-a10g-1gpu-no-hash-github-rendered.txt").unwrap_err();
    assert!(
        e.message.contains("no complete nccl-tests result row"),
        "{e}"
    );
    assert!(e.message.contains("ends in the middle of this row"), "{e}");

    // A run that failed in its only row: refused for that, naming what nccl-tests printed.
    let e = parse_file("cut/issue355-h800-2node-alltoall-cuda-failure.txt").unwrap_err();
    assert!(
        e.message
            .contains("the run failed at this size (nccl-tests printed `Test CUDA failure"),
        "{e}"
    );

    // Old all-to-all: in-place `error` 1e+00 on every row, `Out of bounds values : 0 OK`.
    let r = run("issue78-v100-8node-alltoall-old-format-empty-redop.txt");
    assert_eq!(r.rows.len(), 2);
    for row in &r.rows {
        assert_eq!(row.in_place.unwrap().wrong, Some(1.0));
        assert!(
            !r.wrong_data(row, 64, Collective::AllToAll),
            "line {}",
            row.line
        );
        // The same error in an all-reduce's in-place half is wrong data.
        assert!(
            r.wrong_data(row, 64, Collective::AllReduce),
            "line {}",
            row.line
        );
    }
}

/// The header nccl-tests prints for rows of `fields` fields, for the excerpts in docs/validation
/// that keep the rows only: 13 (2.13 and later: `root`, `#wrong`) or 12 (before: no `root`,
/// `error`).
fn header_for(fields: usize) -> Option<&'static str> {
    match fields {
        13 => Some("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"),
        12 => Some("#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"),
        _ => None,
    }
}

/// The published runs of docs/validation/mid-size-survey, each as a log the parser reads: a file
/// per run, or per `=== X)` block where one file gathers several runs (NVIDIA/nccl-tests issue
/// 309's thread). The files keep the rows and the curator's notes; a block without the column
/// header gets the one its rows' field count implies, and a line the curator annotated inside a
/// row (`...  (in-place)`, `(row split across read window ...)`) is not a row as printed and is
/// left out. Returns (name, text, rows).
fn survey_runs() -> Vec<(String, String, usize)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/validation/mid-size-survey");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for (b, block) in text.split("\n===").enumerate() {
            // A block after the first starts with its `=== X) ...` title line.
            let block = if b == 0 {
                block
            } else {
                block.split_once('\n').map_or("", |(_, rest)| rest)
            };
            // A row after any `srun --label` task number (`0:`), as the parser strips it.
            let unlabelled = |l: &str| -> String {
                let t = l.trim_start();
                match t.split_once(": ") {
                    Some((n, rest)) if n.bytes().all(|c| c.is_ascii_digit()) => rest.to_string(),
                    _ => t.to_string(),
                }
            };
            let is_row = |l: &str| {
                unlabelled(l)
                    .split_whitespace()
                    .next()
                    .is_some_and(|w| w.bytes().all(|c| c.is_ascii_digit()))
            };
            let fields_of = |l: &str| unlabelled(l).split_whitespace().count();
            let rows: Vec<&str> = block.lines().filter(|l| is_row(l)).collect();
            // The rows' field count: the one most rows have.
            let count = |n: usize| rows.iter().filter(|r| fields_of(r) == n).count();
            let Some(fields) = (1..40)
                .max_by_key(|&n| (count(n), n))
                .filter(|&n| count(n) > 0)
            else {
                continue;
            };
            let has_header = block
                .lines()
                .any(|l| l.trim_start_matches(['#', ' ']).starts_with("size "));
            let mut log = String::new();
            if !has_header {
                log.push_str(
                    header_for(fields)
                        .unwrap_or_else(|| panic!("{name} block {b}: rows of {fields} fields")),
                );
            }
            let mut kept = 0;
            for l in block.lines() {
                if is_row(l) && fields_of(l) != fields {
                    continue;
                }
                kept += usize::from(is_row(l));
                log.push_str(l);
                log.push('\n');
            }
            out.push((format!("{name} block {b}"), log, kept));
        }
    }
    out
}

/// Every real log kept in the repository agrees with itself as nccl-tests prints it (algbw = size
/// / time, one busbw / algbw per run, within the digits printed): the check refuses none of them.
/// crates/sim/tests/data/nccl-tests (all vintages: 2021 `error` columns, empty `redop`, launcher
/// prefixes, `step: N(bytes)`) and the runs of docs/validation/mid-size-survey.
#[test]
fn every_real_log_in_the_repository_agrees_with_itself() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nccl-tests");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    let mut rows = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let log = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        rows += log.runs.iter().map(|r| r.rows.len()).sum::<usize>();
    }
    assert_eq!((files.len(), rows), (23, 556));
    let survey = survey_runs();
    let mut survey_rows = 0;
    for (name, text, kept) in &survey {
        let log = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let read: usize = log.runs.iter().map(|r| r.rows.len()).sum();
        assert_eq!(read, *kept, "{name}");
        survey_rows += read;
    }
    assert_eq!((survey.len(), survey_rows), (21, 286));
}

/// A real log with one number of one row changed (`from` -> `to` on the line holding `row`).
fn edited(file: &str, row: &str, from: &str, to: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/nccl-tests")
        .join(file);
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().find(|l| l.contains(row)).unwrap();
    assert!(line.contains(from), "{line}");
    text.replacen(line, &line.replacen(from, to, 1), 1)
}

/// Regression (issue 33): `check-nccl` took a row whose size, time and algbw contradict each other
/// (1 GiB in 0.05 us is 21,474,836 GB/s, not 79.92) and reported it `+109144536323.2% above` the
/// prediction. The parser refuses it, naming the line, the row and what disagrees.
#[test]
fn regression_check_nccl_took_a_row_whose_time_contradicts_its_algbw() {
    let file = "issue290-h100-2node-srun-label-c0-all_reduce.txt";
    let text = edited(file, "1073741824     268435456", "13435", " 0.05");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.line, 31, "{e}");
    assert!(
        e.message.starts_with(
            "the row contradicts itself: out-of-place algbw 79.92 GB/s is not size / time \
             (1073741824 B / 0.05 us = 21474836.48 GB/s"
        ),
        "{e}"
    );
    assert!(
        e.message.contains(
            "`1073741824     268435456     float     sum      -1     0.05   79.92  149.85"
        ),
        "{e}"
    );
    // The in-place half is held to it as well.
    let text = edited(file, "1073741824     268435456", "13430", "23430");
    let e = parse(&text).unwrap_err();
    assert!(
        e.message
            .contains("in-place algbw 79.95 GB/s is not size / time"),
        "{e}"
    );
    // The digits printed are all the slack: 13435 +- 0.5 us gives 79.92 +- 0.005; 13445 does not.
    assert!(parse(&edited(file, "1073741824     268435456", "13435", "13436")).is_ok());
    assert!(parse(&edited(file, "1073741824     268435456", "13435", "13445")).is_err());
}

/// Regression (issue 33): a row whose busbw is not its algbw times the factor every other row of
/// its run shows (one factor per collective and rank count) was taken, and called IMPOSSIBLE for
/// the design at `+1.7%` from the prediction. The parser refuses it.
#[test]
fn regression_check_nccl_took_a_row_whose_busbw_contradicts_its_time() {
    let file = "issue290-h100-2node-srun-label-c0-all_reduce.txt";
    let text = edited(file, "1073741824     268435456", "149.85", "949.85");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.line, 31, "{e}");
    assert!(
        e.message.starts_with(
            "the row contradicts the rest of its run: busbw 949.85 GB/s / algbw 79.92 GB/s is not \
             the busbw / algbw of 21 of its 22 measurements (1.8750)"
        ),
        "{e}"
    );
    // busbw 149.86 is within 79.92 +- 0.005 x 1.875; 149.90 is not.
    assert!(parse(&edited(
        file,
        "1073741824     268435456",
        "149.85",
        "149.86"
    ))
    .is_ok());
    assert!(parse(&edited(
        file,
        "1073741824     268435456",
        "149.85",
        "149.90"
    ))
    .is_err());
}

/// `-C 1` prints CPU time in a `cputime` column while the bandwidths stay of the wall time: the
/// time is not held to algbw there, the factor still is.
#[test]
fn cpu_time_columns_are_not_held_to_algbw() {
    let file = "issue290-h100-2node-srun-label-c0-all_reduce.txt";
    let text = edited(file, "1073741824     268435456", "13435", " 2.05")
        .replace("     time   algbw   busbw", "  cputime   algbw   busbw");
    assert!(parse(&text).is_ok());
}
