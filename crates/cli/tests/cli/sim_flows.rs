//! `railyard sim flows` through the real binary: analytic cases from issue 3, the CSV and JSON
//! outputs, determinism, and input errors (exit status 2, file and line named, nothing written).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{railyard, succeeded};

/// A leaf-spine for `sim flows`: hosts, hosts per leaf, spines, link Gb/s and ns a hop.
type LeafSpine<'a> = [&'a str; 5];

/// 8 hosts, 4 to a leaf, 2 spines, 100 Gb/s links and 100 ns a hop: the analytic cases' network.
const SMALL: LeafSpine = ["8", "4", "2", "100", "100"];

/// The arguments of `railyard sim flows` on `net`, then `rest`.
fn flows_args<'a>(net: LeafSpine<'a>, rest: &[&'a str]) -> Vec<&'a str> {
    let [hosts, per_leaf, spines, gbps, ns] = net;
    let mut args = vec![
        "sim",
        "flows",
        "--hosts",
        hosts,
        "--hosts-per-leaf",
        per_leaf,
        "--spines",
        spines,
        "--link-gbps",
        gbps,
        "--link-latency-ns",
        ns,
    ];
    args.extend_from_slice(rest);
    args
}

fn write_flows(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").expect("write flows");
    path
}

/// Runs `sim flows` on a leaf-spine with 100 Gb/s ideal links and 100 ns hops; returns the JSON.
fn sim_json(hosts: u32, k: u32, spines: u32, flows: &Path, extra: &[&str]) -> serde_json::Value {
    let (h, k, s) = (hosts.to_string(), k.to_string(), spines.to_string());
    let mut args = flows_args(
        [&h, &k, &s, "100", "100"],
        &[
            "--ideal-links",
            "--flows",
            flows.to_str().expect("utf-8 path"),
            "--json",
        ],
    );
    args.extend_from_slice(extra);
    serde_json::from_str(&succeeded(&railyard(&args))).expect("json")
}

fn num(v: &serde_json::Value, path: &[&str]) -> f64 {
    let mut v = v;
    for p in path {
        v = &v[*p];
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("{path:?} not a number: {v}"))
}

/// Independent of the simulator's generator: xorshift64* and Fisher-Yates, redrawn until no host
/// sends to itself.
fn random_derangement(n: u32, mut seed: u64) -> Vec<u32> {
    let mut next = || {
        seed ^= seed >> 12;
        seed ^= seed << 25;
        seed ^= seed >> 27;
        seed.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    loop {
        let mut p: Vec<u32> = (0..n).collect();
        for i in (1..n as usize).rev() {
            p.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        if p.iter().enumerate().all(|(i, &d)| i as u32 != d) {
            return p;
        }
    }
}

const MB: u64 = 1_000_000;

#[test]
fn lone_flow_takes_bytes_over_rate_plus_latency() {
    let dir = tempfile::tempdir().unwrap();
    let flows = write_flows(dir.path(), "one.txt", &["0 5 1000000".into()]);
    let csv = dir.path().join("fct.csv");
    let v = sim_json(8, 4, 2, &flows, &["--fct", csv.to_str().unwrap()]);
    // 1 MB at 12.5 GB/s = 80 us, plus 4 hops x 100 ns.
    assert_eq!(num(&v, &["makespan_us"]), 80.4);
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "flow,src,dst,bytes,start_us,finish_us\n0,0,5,1000000,0.000000,80.400000\n"
    );
    // With InfiniBand headers: 1 MiB x 4122 / 4096 at 12.5 GB/s = 84.41856 us, + 0.4 us.
    let flows = write_flows(dir.path(), "mib.txt", &["0 5 1048576".into()]);
    let out = succeeded(&railyard(flows_args(
        SMALL,
        &[
            "--flows",
            flows.to_str().unwrap(),
            "--fct",
            csv.to_str().unwrap(),
        ],
    )));
    assert!(out.contains("InfiniBand headers"), "{out}");
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .ends_with("0,0,5,1048576,0.000000,84.818560\n"));
}

#[test]
fn roce_completes_at_the_last_ack_and_refuses_ideal_links() {
    let dir = tempfile::tempdir().unwrap();
    let flows = write_flows(dir.path(), "mib.txt", &["0 5 1048576".into()]);
    let csv = dir.path().join("fct.csv");
    let args = |extra: &[&'static str]| {
        let mut a = flows_args(
            SMALL,
            &[
                "--transport",
                "roce",
                "--flows",
                flows.to_str().unwrap(),
                "--fct",
                csv.to_str().unwrap(),
            ],
        );
        a.extend_from_slice(extra);
        a
    };
    let out = succeeded(&railyard(args(&[])));
    assert!(
        out.contains("RoCEv2 headers; complete at the last ACK"),
        "{out}"
    );
    // 256 packets of 4178 bytes at 12.5 GB/s = 85.56544 us; then 4 hops of 100 ns out and back,
    // 3 switches storing a 4178-byte packet (334.24 ns each) and 4 serialisations of the 86-byte
    // ACK (6.88 ns each): 1.83024 us.
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .ends_with("0,0,5,1048576,0.000000,87.395680\n"));
    let v: serde_json::Value =
        serde_json::from_str(&succeeded(&railyard(args(&["--json"])))).unwrap();
    assert_eq!(v["network"]["completion"], "last ACK");
    assert_eq!(v["network"]["packet_format"], "RoCEv2");
    // InfiniBand's JSON has no completion key: the last byte's arrival, as before.
    let (code, err) = run_err(&flows, &["--json", "--transport", "infiniband"]);
    assert_eq!(code, 0, "{err}");
    // Ideal links have no headers and no ACK: refused with a transport, naming both flags.
    let o = railyard(args(&["--ideal-links"]));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--ideal-links") && err.contains("--transport"),
        "{err}"
    );
    let (code, err) = run_err(&flows, &["--transport", "iwarp"]);
    assert_eq!(code, 2);
    assert!(err.contains("valid: infiniband, roce"), "{err}");
}

#[test]
fn two_flows_on_one_link_get_half_each() {
    let dir = tempfile::tempdir().unwrap();
    let flows = write_flows(
        dir.path(),
        "two.txt",
        &["0 5 1000000".into(), "1 5 1000000".into()],
    );
    let v = sim_json(8, 4, 2, &flows, &[]);
    assert_eq!(num(&v, &["fct_us", "p50"]), 160.4);
    assert_eq!(num(&v, &["fct_us", "max"]), 160.4);
    assert!((num(&v, &["slowest", "ratio"]) - 160.4 / 80.4).abs() < 1e-12);
}

#[test]
fn start_times_comments_and_blank_lines() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        "# src dst bytes start".to_string(),
        String::new(),
        "0 1 1000000 0.00002   # starts at 20 us".into(),
    ];
    let flows = write_flows(dir.path(), "late.txt", &lines);
    let csv = dir.path().join("fct.csv");
    sim_json(8, 4, 2, &flows, &["--fct", csv.to_str().unwrap()]);
    // Same leaf: 2 hops.
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .ends_with("0,0,1,1000000,20.000000,100.200000\n"));
}

/// Shift permutation i -> i + H/2 on a non-blocking leaf-spine (K = S) with dmodk: no two flows
/// share a link, so every flow finishes at exactly S / B + path latency.
#[test]
fn shift_permutation_with_dmodk_finishes_at_size_over_bandwidth() {
    let dir = tempfile::tempdir().unwrap();
    let (h, k) = (128u32, 8u32);
    let lines: Vec<String> = (0..h)
        .map(|i| format!("{i} {} {}", (i + h / 2) % h, 10 * MB))
        .collect();
    let flows = write_flows(dir.path(), "shift.txt", &lines);
    let v = sim_json(h, k, k, &flows, &["--routing", "dmodk"]);
    assert_eq!(num(&v, &["makespan_us"]), 800.4);
    assert_eq!(num(&v, &["fct_us", "mean"]), 800.4);
    assert_eq!(num(&v, &["slowest", "ratio"]), 1.0);
}

/// Random permutation with dmodk: makespan n x S / B + path latency, where n is the most flows on
/// one leaf->spine up-link (counted here: dmodk sends host d's traffic up spine d mod S).
#[test]
fn random_permutation_with_dmodk_is_set_by_the_busiest_up_link() {
    let dir = tempfile::tempdir().unwrap();
    let (h, k) = (512u32, 16u32);
    for seed in [1, 2, 3] {
        let p = random_derangement(h, seed);
        let mut per_link = std::collections::BTreeMap::new();
        for (s, &d) in p.iter().enumerate() {
            let s = s as u32;
            if s / k != d / k {
                *per_link.entry((s / k, d % k)).or_insert(0u32) += 1;
            }
        }
        let n = *per_link.values().max().unwrap();
        assert!(
            n >= 2,
            "seed {seed}: a collision-free permutation tests nothing"
        );
        let lines: Vec<String> = p
            .iter()
            .enumerate()
            .map(|(s, d)| format!("{s} {d} {MB}"))
            .collect();
        let flows = write_flows(dir.path(), "perm.txt", &lines);
        let v = sim_json(h, k, k, &flows, &["--routing", "dmodk"]);
        let expect = 80.0 * f64::from(n) + 0.4;
        assert_eq!(num(&v, &["makespan_us"]), expect, "seed {seed}, n = {n}");
    }
}

#[test]
fn ecmp_collides_on_a_permutation_and_adaptive_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let (h, k) = (256u32, 16u32);
    let lines: Vec<String> = random_derangement(h, 7)
        .iter()
        .enumerate()
        .map(|(s, d)| format!("{s} {d} {}", 10 * MB))
        .collect();
    let flows = write_flows(dir.path(), "perm.txt", &lines);
    let ecmp = sim_json(h, k, k, &flows, &["--routing", "ecmp", "--seed", "1"]);
    let adaptive = sim_json(h, k, k, &flows, &["--routing", "adaptive"]);
    let (e, a) = (
        num(&ecmp, &["slowest", "ratio"]),
        num(&adaptive, &["slowest", "ratio"]),
    );
    assert!(e >= 3.0, "ECMP slowest flow only {e}x ideal");
    assert!(a < 1.01, "adaptive slowest flow {a}x ideal");
    assert_eq!(ecmp["routing"], "ecmp");
}

#[test]
fn same_seed_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = random_derangement(64, 5)
        .iter()
        .enumerate()
        .map(|(s, d)| format!("{s} {d} {} {}", 1000 + 7919 * s, s as f64 * 1e-7))
        .collect();
    let flows = write_flows(dir.path(), "perm.txt", &lines);
    let run = |seed: &str, out: &str| {
        let csv = dir.path().join(out);
        let text = succeeded(&railyard(flows_args(
            ["64", "8", "4", "200", "130"],
            &[
                "--flows",
                flows.to_str().unwrap(),
                "--routing",
                "ecmp",
                "--seed",
                seed,
                "--qps-per-connection",
                "2",
                "--fct",
                csv.to_str().unwrap(),
            ],
        )));
        (text, std::fs::read(csv).unwrap())
    };
    let a = run("9", "a.csv");
    let b = run("9", "b.csv");
    assert_eq!(a, b);
    let c = run("10", "c.csv");
    assert_ne!(a.1, c.1, "the seed should move some flows");
    for key in [
        "makespan:",
        "FCT: mean",
        "p99",
        "slowest flow vs ideal:",
        "routing: ecmp (seed 9, 2 QP",
    ] {
        assert!(a.0.contains(key), "{key} missing from:\n{}", a.0);
    }
}

/// The text report, pinned: a regression here is a visible change to what users read.
#[test]
fn text_report_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        "# two flows into host 5, one later flow".to_string(),
        "0 5 1000000".into(),
        "1 5 1000000".into(),
        "2 6 4000000 0.00001".into(),
    ];
    let flows = write_flows(dir.path(), "demo.txt", &lines);
    let out = succeeded(&railyard(flows_args(
        SMALL,
        &["--flows", flows.to_str().unwrap(), "--routing", "dmodk"],
    )));
    // 1 MB at half of 12.5e9 x 4096/4122 B/s = 161.016 us + 0.4 us; flow 2 takes spine 6 mod 2 = 0,
    // a path of its own: 4 MB alone = 322.031 us + 0.4 us, from 10 us.
    let expect = "\
leaf-spine: 8 hosts on 2 leaves (4 per leaf), 2 spines, 100 Gb/s links (99.37 Gb/s payload after InfiniBand headers), 100 ns per hop
routing: dmodk
flows: 3 (6000000 bytes)
makespan: 332.431 us
FCT: mean 215.088 us, p50 161.416 us, p99 322.431 us, max 322.431 us
slowest flow vs ideal: flow 0 (host 0 -> 5), 161.416 us vs 80.908 us alone: 2.00x
";
    assert_eq!(out, expect);
}

fn run_err(flows: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = flows_args(SMALL, &["--flows", flows.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let o = railyard(&args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bad_flows_files_name_file_and_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("fct.csv");
    let csv_arg = csv.to_str().unwrap().to_string();
    for (body, needle) in [
        (
            "0 1 10\n0 9 10\n",
            "bad.txt:2: destination host 9 out of range",
        ),
        (
            "# c\n\n4 4 10\n",
            "bad.txt:3: source and destination are both host 4",
        ),
        ("0 1 ten\n", "bad.txt:1: bytes `ten` is not a whole number"),
        ("0 1 10 soon\n", "bad.txt:1: start `soon` is not a time"),
        ("-1 1 10\n", "bad.txt:1: source `-1` is not a host index"),
        (
            "0 1 10 0 5\n",
            "bad.txt:1: expected `src dst bytes [start_seconds]`",
        ),
        ("# only a comment\n", "bad.txt: no flows"),
    ] {
        let flows = dir.path().join("bad.txt");
        std::fs::write(&flows, body).unwrap();
        let (code, err) = run_err(&flows, &["--fct", &csv_arg]);
        assert_eq!(code, 2, "{body:?}: {err}");
        assert!(err.contains(needle), "{body:?}: {err}");
        assert!(!csv.exists(), "nothing is written on bad input");
    }
    let (code, err) = run_err(&dir.path().join("missing.txt"), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.txt"), "{err}");
}

#[test]
fn bad_network_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let flows = write_flows(dir.path(), "f.txt", &["0 1 10".into()]);
    let o = railyard(flows_args(
        ["8", "4", "2", "0", "100"],
        &["--flows", flows.to_str().unwrap()],
    ));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--link-gbps: must be a number above zero"),
        "{err}"
    );
    // A negative rate reaches the same check: clap had read `-100` as a flag and named `-1`.
    let args = |gbps: &'static str| {
        flows_args(
            ["8", "4", "2", gbps, "100"],
            &["--generate", "lognormal:flows=4,median=1000"],
        )
    };
    let o = railyard(args("-100"));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--link-gbps: must be a number above zero"),
        "{err}"
    );
    // `--fct -` wrote a file named `-`.
    let (code, err) = run_err(&flows, &["--fct", "-"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--fct -: give a file name for the CSV"),
        "{err}"
    );
    let (code, _) = run_err(&flows, &["--routing", "random"]);
    assert_eq!(code, 2);
    let (code, _) = run_err(&flows, &["--qps-per-connection", "0"]);
    assert_eq!(code, 2);
}

/// Runs `sim flows` on 16 hosts (4 per leaf, 4 spines, 100 Gb/s, 100 ns) with `source` (`--flows
/// FILE` or `--generate SPEC`) and the extra flags.
fn sim16(source: &[&str], extra: &[&str]) -> Output {
    let mut args = flows_args(["16", "4", "4", "100", "100"], &[]);
    args.extend_from_slice(source);
    args.extend_from_slice(extra);
    railyard(&args)
}

#[test]
fn generated_flows_run_as_the_same_flows_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    for spec in [
        "lognormal:flows=300,median=64K,sigma=1.5,arrivals=poisson,load=0.7,seed=5",
        "lognormal:flows=200,median=1000000",
    ] {
        let fct = dir.path().join("gen.csv");
        let fct_arg = fct.to_str().unwrap();
        let generated = succeeded(&sim16(&["--generate", spec], &["--fct", fct_arg, "--json"]));
        // The CSV lists every flow: write them back as a flows file (start in exact seconds).
        let csv = std::fs::read_to_string(&fct).unwrap();
        let lines: Vec<String> = csv
            .lines()
            .skip(1)
            .map(|row| {
                let c: Vec<&str> = row.split(',').collect();
                let (whole, frac) = c[4].split_once('.').unwrap();
                let ps: u64 =
                    whole.parse::<u64>().unwrap() * 1_000_000 + frac.parse::<u64>().unwrap();
                format!(
                    "{} {} {} {}.{:012}",
                    c[1],
                    c[2],
                    c[3],
                    ps / 1_000_000_000_000,
                    ps % 1_000_000_000_000
                )
            })
            .collect();
        assert!(lines.len() >= 200);
        let file = write_flows(dir.path(), "same.txt", &lines);
        let fct2 = dir.path().join("file.csv");
        let from_file = succeeded(&sim16(
            &["--flows", file.to_str().unwrap()],
            &["--fct", fct2.to_str().unwrap(), "--json"],
        ));
        // The generated run names its workload with every key; otherwise the two are the same.
        let mut named: serde_json::Value = serde_json::from_str(&generated).unwrap();
        let shown = named
            .as_object_mut()
            .unwrap()
            .remove("generate")
            .expect("the workload is named");
        assert!(
            shown.as_str().unwrap().starts_with("lognormal:flows="),
            "{shown}"
        );
        assert_eq!(
            named,
            serde_json::from_str::<serde_json::Value>(&from_file).unwrap(),
            "{spec}"
        );
        assert_eq!(csv, std::fs::read_to_string(&fct2).unwrap(), "{spec}");
        // Same spec, same output.
        assert_eq!(
            generated,
            succeeded(&sim16(&["--generate", spec], &["--json"]))
        );
    }
}

/// Regression: at a tiny load the generator started every flow past 9.2e18 ps at that time, all at
/// once, and it capped sizes above 10^12 bytes, both without a word (exit 0). A load too low for the
/// clock and a median above the cap are refused naming the key, its value and the valid range; a
/// tail capped below a valid median is simulated with a warning that counts the flows capped.
#[test]
fn generated_starts_past_the_clock_and_capped_sizes_are_not_silent() {
    let o = sim16(
        &[
            "--generate",
            "lognormal:flows=20,median=1M,arrivals=poisson,load=1e-12",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--generate: load: 1e-12 gives ")
            && err.contains("past the simulator's clock")
            && err.contains("valid: a load from "),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    // The least load it names runs.
    let least = err
        .split("valid: a load from ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap();
    let spec = format!("lognormal:flows=20,median=1M,arrivals=poisson,load={least}");
    let o = sim16(&["--generate", &spec], &[]);
    assert!(
        o.status.success(),
        "{spec}: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    let o = sim16(&["--generate", "lognormal:flows=20,median=2T"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("median=`2T`: valid: a whole number of bytes from 1 to 1000000000000"),
        "{err}"
    );

    let o = sim16(
        &["--generate", "lognormal:flows=1000,median=1M,sigma=10"],
        &["--json"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json.is_object());
    let capped: usize = err
        .strip_prefix("railyard: warning: --generate: ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    // P(size > 10^12) = P(Z > ln(10^6) / 10) = 8.4%: about 84 of 1000.
    assert!((40..140).contains(&capped), "{err}");
    assert!(
        err.contains("of 1000 flows were drawn above 1000000000000 bytes (10^12) and capped at it"),
        "{err}"
    );
    // Nothing capped, nothing said.
    let o = sim16(&["--generate", "lognormal:flows=1000,median=1M"], &[]);
    assert!(o.status.success() && o.stderr.is_empty());
}

/// Regression: `--seed` and `--qps-per-connection` were taken and ignored with `--routing dmodk`
/// or `adaptive`, which hash nothing. Refused (exit 2, nothing printed) naming both flags and
/// `--routing ecmp`, where both are taken.
#[test]
fn ecmp_knobs_without_ecmp_are_refused() {
    let source = ["--generate", "lognormal:flows=20,median=64K"];
    for (routing, extra, needles) in [
        (
            "dmodk",
            ["--seed", "2"],
            [
                "--seed 2 has no effect with --routing dmodk",
                "--routing ecmp",
            ],
        ),
        (
            "adaptive",
            ["--seed", "0"],
            [
                "--seed 0 has no effect with --routing adaptive",
                "--routing ecmp",
            ],
        ),
        (
            "dmodk",
            ["--qps-per-connection", "4"],
            [
                "--qps-per-connection 4 has no effect with --routing dmodk",
                "--routing ecmp",
            ],
        ),
        (
            "adaptive",
            ["--qps-per-connection", "1"],
            [
                "--qps-per-connection 1 has no effect with --routing adaptive",
                "--routing ecmp",
            ],
        ),
    ] {
        let mut args = vec!["--routing", routing];
        args.extend_from_slice(&extra);
        let o = sim16(&source, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(needles.iter().all(|n| err.contains(n)), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
        // Without the flag the routing runs; with ecmp the flag is taken.
        succeeded(&sim16(&source, &["--routing", routing]));
        succeeded(&sim16(
            &source,
            &[&["--routing", "ecmp"][..], &extra].concat(),
        ));
    }
}

#[test]
fn bad_generate_specs_name_the_key_and_exit_2() {
    for (spec, needle) in [
        ("lognormal:flows=10", "`median` is missing"),
        ("uniform:flows=10,median=1M", "valid: lognormal"),
        (
            "lognormal:flows=10,median=1M,arrivals=later",
            "valid: zero, poisson",
        ),
        (
            "lognormal:flows=10,median=1M,arrivals=poisson,load=2",
            "load=`2`",
        ),
        ("lognormal:flows=10,median=1M,rate=3", "unknown key `rate`"),
    ] {
        let o = sim16(&["--generate", spec], &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{spec}: {err}");
        assert!(
            err.contains(needle) && err.contains("--generate"),
            "{spec}: {err}"
        );
    }
    // One source of flows, not both, not neither.
    let dir = tempfile::tempdir().unwrap();
    let flows = write_flows(dir.path(), "f.txt", &["0 1 10".into()]);
    let both = sim16(
        &[
            "--flows",
            flows.to_str().unwrap(),
            "--generate",
            "lognormal:flows=1,median=1K",
        ],
        &[],
    );
    assert_eq!(both.status.code(), Some(2));
    assert_eq!(sim16(&[], &[]).status.code(), Some(2));
}

/// `--generate cdf:file=PATH`: sizes from a published flow-size CDF (HPCC's web-search workload,
/// crates/sim/tests/data/flow-size-cdf), seeded as the log-normal form is; every size lies within
/// the CDF's range; a bad CDF file is refused naming the file and line, exit 2.
#[test]
fn generated_flows_from_a_published_cdf() {
    let web = format!(
        "{}/../sim/tests/data/flow-size-cdf/WebSearch_distribution.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("cdf:file={web},flows=300,arrivals=poisson,load=0.5,seed=2");
    let fct = dir.path().join("web.csv");
    let out = succeeded(&sim16(
        &["--generate", &spec],
        &["--fct", fct.to_str().unwrap(), "--json"],
    ));
    assert_eq!(out, succeeded(&sim16(&["--generate", &spec], &["--json"])));
    let csv = std::fs::read_to_string(&fct).unwrap();
    let sizes: Vec<u64> = csv
        .lines()
        .skip(1)
        .map(|r| r.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    assert_eq!(sizes.len(), 300);
    assert!(sizes.iter().all(|&b| (1..=30_000_000).contains(&b)));
    // Bad input: the file and line, exit 2.
    let bad = write_flows(dir.path(), "bad.txt", &["0 0".into(), "100 50".into()]);
    let o = sim16(
        &[
            "--generate",
            &format!("cdf:file={},flows=10", bad.display()),
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.txt: line 2: the last point is at 50%"),
        "{err}"
    );
    let o = sim16(&["--generate", "cdf:file=/no/such/cdf.txt,flows=10"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/such/cdf.txt"));
}

/// On a terminal, `sim flows` shows on stderr how far it got (a line at once, then one a second,
/// cleared at the end), and prints the same result as without one; off a terminal stderr stays
/// empty. The terminal is a pseudo-terminal from util-linux's `script` (Debian's essential
/// bsdutils), with stdout sent to a file inside it.
#[test]
fn a_terminal_is_shown_progress_and_the_result_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let args = "sim flows --hosts 64 --hosts-per-leaf 8 --spines 8 --link-gbps 400 \
                --link-latency-ns 150 --generate lognormal:flows=300,median=1000000,seed=3";
    let out = dir.path().join("out.txt");
    let shell = format!("'{}' {args} > '{}'", crate::common::BIN, out.display());
    let pty = std::process::Command::new("script")
        .args(["-qec", &shell, "/dev/null"])
        .current_dir(dir.path())
        .output()
        .expect("util-linux's script runs (package bsdutils)");
    assert!(pty.status.success(), "{pty:?}");
    let terminal = String::from_utf8(pty.stdout).unwrap();
    // The first line says the flows are being routed, or how many of them finished, depending on
    // how far the run got when it was printed; every line is one of the two.
    let lines: Vec<&str> = terminal
        .split("\r\x1b[2K")
        .filter(|l| !l.is_empty())
        .collect();
    assert!(!lines.is_empty(), "{terminal:?}");
    for line in lines {
        assert!(
            line == "railyard: sim flows: routing 300 flows"
                || (line.starts_with("railyard: sim flows: ")
                    && line.contains(" of 300 flows finished, ")
                    && line.contains(" us simulated, ")),
            "{terminal:?}"
        );
    }
    assert!(terminal.ends_with("\r\x1b[2K"), "{terminal:?}");

    let plain = railyard(args.split_whitespace());
    assert!(plain.stderr.is_empty(), "{:?}", plain.stderr);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), succeeded(&plain));
}
