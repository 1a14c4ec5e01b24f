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
