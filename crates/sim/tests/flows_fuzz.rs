//! Property-based fuzzing of the flows-file parser: whatever the text, `flows_file::parse` returns
//! flows whose total fits in a `u64`, or line-numbered problems, and never panics; parsed flows then
//! pass or fail `leafspine::check_flows` without panicking. The case count is bounded so the run
//! stays short in CI; set PROPTEST_CASES to fuzz longer. Failures proptest finds are kept in
//! flows_fuzz.proptest-regressions beside this file and re-run first; CORPUS keeps inputs that once
//! gave wrong answers.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use railyard_sim::flows_file::{parse, MAX_REPORTED};
use railyard_sim::leafspine::{check_flows, LeafSpine, LeafSpineConfig};
use railyard_sim::time::Time;

const HOSTS: u32 = 8;

/// Inputs that once wrapped, saturated or were misread.
const CORPUS: &[&str] = &[
    // 2^64 - 1 bytes and one more: the total wrapped to 999 and the makespan printed 0.
    "0 1 18446744073709551615\n1 0 1000\n",
    "0 1 18446744073709551615\n",
    "0 1 1 1e300\n",
    "0 1 1 -0\n",
    "0 1 1 nan\n",
    "0 1 1 inf\n",
    "0 1 1 18446744.0737\n",
    "4294967295 0 1\n",
    "0 4294967296 1\n",
    "0 1 -1\n",
    "0 1 1 0 extra\n",
    "#\n\n   \t\n",
    "",
    "0 1 1 # 2 3 4 5\n",
];

fn net() -> LeafSpine {
    LeafSpine::new(LeafSpineConfig {
        hosts: HOSTS,
        hosts_per_leaf: 2,
        spines: 2,
        link_gbps: 400.0,
        hop_latency: Time::from_ns(100),
        packet_format: None,
    })
    .unwrap()
}

fn check(text: &str) {
    match parse(text, HOSTS) {
        Ok(f) => {
            assert!(!f.flows.is_empty());
            let sum: u128 = f.flows.iter().map(|x| u128::from(x.bytes)).sum();
            assert_eq!(sum, u128::from(f.total_bytes));
            for x in &f.flows {
                assert!(x.src < HOSTS && x.dst < HOSTS && x.src != x.dst);
            }
            let _ = check_flows(&net(), &f.flows);
        }
        Err(e) => {
            let lines = text.lines().count();
            assert!(!e.problems.is_empty() && e.problems.len() <= MAX_REPORTED);
            for p in &e.problems {
                assert!(!p.message.is_empty());
                if let Some(n) = p.line {
                    assert!(n >= 1 && n <= lines, "line {n} of {lines}: {}", p.message);
                }
            }
        }
    }
}

/// Pieces a flows file is made of, with the numbers at the edges of their types.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..HOSTS + 2).prop_map(|n| n.to_string()),
        Just(u64::MAX.to_string()),
        Just((u64::MAX / 2 + 1).to_string()),
        Just(u32::MAX.to_string()),
        Just("18446744073709551616".to_string()),
        Just("-1".to_string()),
        Just("1e308".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("0.5".to_string()),
        Just("1e-12".to_string()),
        Just("#".to_string()),
        Just("\n".to_string()),
        Just("\t".to_string()),
        Just("\r\n".to_string()),
        "[ -~]{0,8}",
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| x.to_string()),
    ]
}

/// A plausible line: three or four fields, numbers from anywhere in their range.
fn line() -> impl Strategy<Value = String> {
    (
        0u32..HOSTS + 1,
        0u32..HOSTS + 1,
        prop_oneof![any::<u64>(), 0u64..1 << 40],
        prop::option::of(prop_oneof![any::<f64>(), 0.0f64..1e7]),
    )
        .prop_map(|(s, d, b, t)| match t {
            Some(t) => format!("{s} {d} {b} {t}"),
            None => format!("{s} {d} {b}"),
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/flows_fuzz.proptest-regressions",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(s in any::<String>()) {
        check(&s);
    }

    #[test]
    fn token_soup_never_panics(tokens in prop::collection::vec(token(), 0..40)) {
        check(&tokens.join(" "));
    }

    #[test]
    fn plausible_lines_never_panic(lines in prop::collection::vec(line(), 0..30)) {
        check(&lines.join("\n"));
    }
}

#[test]
fn corpus_never_panics() {
    for text in CORPUS {
        check(text);
    }
    // The wrapped total is refused where it overflows.
    let e = parse(CORPUS[0], HOSTS).unwrap_err();
    assert_eq!(e.problems[0].line, Some(2));
    // One flow of 2^64 - 1 bytes parses, and the network says it cannot finish within the clock.
    let f = parse(CORPUS[1], HOSTS).unwrap();
    let e = check_flows(&net(), &f.flows).unwrap_err();
    assert!(e.to_string().contains("clock"), "{e}");
}
