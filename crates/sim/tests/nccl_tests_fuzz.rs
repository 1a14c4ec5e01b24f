//! Property-based fuzzing of the nccl-tests log reader: whatever the text, `parse` returns runs or an
//! error that names a line of the text (or the file as a whole), and never panics. Seeded from the real
//! logs under tests/data/nccl-tests/ and a modern sample. PROPTEST_CASES fuzzes longer.

use proptest::prelude::*;
use railyard_sim::nccl_tests::parse;

const SAMPLE: &str = "\
# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
# Collective test starting: alltoall_perf
# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  12345 on    node001 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  12345 on    node001 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024            32     float    none      -1    40.10    0.03    0.02      0    39.80    0.03    0.02    N/A
  1073741824      33554432     float    none      -1   9000.0  119.30  104.39      0   8990.1  119.44  104.51      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 52.3
#
# Collective test concluded: alltoall_perf
";

/// Every log to mutate: the real ones kept as test data, and the sample.
fn seeds() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nccl-tests");
    let mut logs = vec![SAMPLE.to_string()];
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<_> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
        paths.sort();
        for p in paths {
            logs.push(std::fs::read_to_string(p).unwrap());
        }
    }
    logs
}

fn check(text: &str) {
    match parse(text) {
        Ok(log) => {
            assert!(!log.runs.is_empty());
            for r in &log.runs {
                assert!(!r.rows.is_empty());
                for row in &r.rows {
                    let m = row.measurement().expect("a row has a measurement");
                    assert!(m.time_us.is_finite() && m.busbw_gbs >= 0.0);
                }
            }
        }
        Err(e) => {
            let lines = text.lines().count();
            assert!(e.line <= lines, "error line {} of {lines}: {e}", e.line);
            assert!(!e.message.is_empty());
        }
    }
}

/// `text` with one byte replaced or deleted.
fn mutate(text: &str, pos: usize, byte: u8, delete: bool) -> String {
    let mut bytes = text.as_bytes().to_vec();
    if bytes.is_empty() {
        return String::new();
    }
    let pos = pos % bytes.len();
    if delete {
        bytes.remove(pos);
    } else {
        bytes[pos] = byte;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Pieces nccl-tests output is made of, to build plausible garbage.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("#".to_string()),
        Just("size count type redop root time algbw busbw #wrong".to_string()),
        Just("size count time".to_string()),
        Just("Rank".to_string()),
        Just("on".to_string()),
        Just("device".to_string()),
        Just("[0000:18:00]".to_string()),
        Just("Collective test starting:".to_string()),
        Just("nThread 1 nGpus".to_string()),
        Just("Avg bus bandwidth :".to_string()),
        Just("N/A".to_string()),
        Just("1e308".to_string()),
        Just("-1".to_string()),
        Just("NaN".to_string()),
        Just("[1,0]<stdout>:".to_string()),
        Just("timestamp".to_string()),
        Just(" ".repeat(32)),
        Just("\n".to_string()),
        "[ -~]{0,12}",
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|n| n.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..80)) {
        check(&tokens.join(" "));
    }

    #[test]
    fn mutated_logs_never_panic(which in any::<prop::sample::Index>(), pos in any::<usize>(), byte in any::<u8>(), delete in any::<bool>()) {
        let logs = seeds();
        check(&mutate(which.get::<String>(&logs), pos, byte, delete));
    }

    #[test]
    fn truncated_logs_never_panic(which in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let logs = seeds();
        let log = which.get::<String>(&logs);
        let mut end = cut.index(log.len() + 1);
        while !log.is_char_boundary(end) {
            end -= 1;
        }
        check(&log[..end]);
    }

    /// A log cut anywhere inside a result row after its first (the file ends mid-row) still reads:
    /// every row before the cut, and the cut row either whole (cut after its last field), left
    /// out with a warning naming its line, or (cut in its leading blanks or a launcher's prefix)
    /// not there.
    #[test]
    fn a_log_cut_inside_a_row_reads_the_rows_before_it(which in any::<prop::sample::Index>(), row in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let logs = seeds();
        let log = which.get::<String>(&logs);
        let parsed = parse(log).unwrap();
        let rows: Vec<usize> = parsed.runs.iter().flat_map(|r| r.rows.iter().map(|x| x.line)).collect();
        prop_assume!(rows.len() >= 2);
        let before = row.index(rows.len() - 1) + 1;
        let line = rows[before];
        // Byte range of that line.
        let start: usize = log.split_inclusive('\n').take(line - 1).map(str::len).sum();
        let text = log.split_inclusive('\n').nth(line - 1).unwrap().trim_end_matches(['\n', '\r']);
        let end = start + 1 + cut.index(text.len());
        let cut_log = &log[..end];
        let read = parse(cut_log).unwrap_or_else(|e| panic!("{e}"));
        let kept: usize = read.runs.iter().map(|r| r.rows.len()).sum();
        // Cut in its leading blanks, or in a launcher's task prefix (`srun --label`'s ` 0: `):
        // nothing of the row is there yet.
        let head = log[start..end].trim();
        let blank = head.is_empty()
            || head
                .strip_suffix(':')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        match read.warnings.as_slice() {
            [] if blank => prop_assert_eq!(kept, before),
            [] => prop_assert_eq!(kept, before + 1),
            [w] => {
                prop_assert_eq!(w.line, line);
                prop_assert_eq!(kept, before);
            }
            more => prop_assert!(false, "{:?}", more),
        }
    }
}

#[test]
fn every_seed_reads() {
    for log in seeds() {
        let parsed = parse(&log).unwrap();
        assert!(parsed.runs.iter().all(|r| !r.rows.is_empty()));
    }
}
