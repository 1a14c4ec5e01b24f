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
