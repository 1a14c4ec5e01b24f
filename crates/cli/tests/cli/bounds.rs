//! Issue 10: every numeric input validated at the boundary, and work and memory bounded before
//! building. Each test runs the real binary on an input that once panicked, ran out of memory, ran
//! without end or printed a wrong number with exit status 0, and asserts the clear error (exit 2,
//! naming the flag or field) or the correct result.
//!
//! Memory is bounded with the shell's `ulimit -v` around the binary (an address-space limit the
//! kernel enforces, so a loaded CI machine cannot make the test flaky); nothing here asserts a time.

use crate::common::{railyard as run, BIN};
use std::path::Path;
use std::process::{Command, Output};

/// Address space allowed to a run that must be refused from counts alone: far below the 7.4 GB
/// `plan --servers 1000000` once took, far above what an error needs.
const SMALL_KIB: u64 = 512 * 1024;

/// Runs under `ulimit -v KIB`.
fn run_limited(kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .output()
        .expect("sh runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit status 2 with every `needles` in the message, and no panic.
fn refused(o: &Output, needles: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
    assert!(o.stdout.is_empty(), "nothing printed on refusal");
    err
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    stdout(o)
}

/// `--su-size 0` divided by zero in the topology builder (exit 101) in every command that builds a
/// design; it is refused where the value is parsed (a flag, a `DESIGN:key=value` pair: the design
/// key's range, shared with the spec) or the spec file validated, naming the key and the valid range.
#[test]
fn su_size_zero_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let topo = dir.path().join("f.topo");
    let topo = topo.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["plan", "--su-size", "0"],
        vec!["report", "--su-size", "0", "--no-sim", "-o", "r.html"],
        vec!["sim", "collective", "allreduce", "--su-size", "0"],
        vec!["train", "--su-size", "0"],
        vec!["export", "ibnet", "--su-size", "0", "-o", topo],
        vec![
            "compare",
            "dgx-h100-superpod",
            "dgx-h100-superpod:su-size=0",
        ],
    ];
    for args in cases {
        refused(&run(&args), &["su-size", "valid: 1 to"]);
    }
    assert!(!Path::new(topo).exists());
    // In a spec file too, and past the largest radix.
    let spec = dir.path().join("s.toml");
    std::fs::write(&spec, "[fabric]\nsu_size = 0\n").unwrap();
    refused(
        &run(["plan", "--spec", spec.to_str().unwrap()]),
        &["su_size"],
    );
    refused(
        &run(["plan", "--su-size", "4294967295"]),
        &["--su-size", "valid: 1 to 2048"],
    );
}

/// `plan --servers 1000000` (inside the spec's range) built 8 million NIC ports in 19 s and 7.45 GB
/// before finding that three tiers of 64-port switches hold 65,536. It is refused from the counts,
/// under an address-space limit of 512 MiB, naming the tier and radix limit and the servers that fit.
#[test]
fn huge_designs_are_refused_from_their_counts_within_a_memory_bound() {
    for (args, needles) in [
        (
            vec!["plan", "--servers", "1000000"],
            vec![
                "servers.count",
                "three-tier rail-optimized fabric",
                "64-port QM9700",
                "at most 8192 servers",
            ],
        ),
        (
            vec!["plan", "--servers", "1000000", "--topology", "fat-tree"],
            vec!["servers.count", "three-tier fat-tree"],
        ),
        (
            vec!["plan", "--servers", "1000000", "--topology", "rail-only"],
            vec!["servers.count"],
        ),
        (
            vec!["plan", "--servers", "100000", "--topology", "single-switch"],
            vec!["servers.count", "one switch"],
        ),
        (
            // 256-port 200GbE switches hold 4 million host ports in three tiers: past the size limit.
            vec![
                "plan",
                "--servers",
                "400000",
                "--tech",
                "roce-200g",
                "--topology",
                "fat-tree",
            ],
            vec![
                "servers.count",
                "past railyard's limit",
                "valid: at most about",
            ],
        ),
        (
            vec!["sim", "collective", "allreduce", "--servers", "1000000"],
            vec!["three-tier rail-optimized fabric"],
        ),
        (
            vec!["train", "--servers", "1000000"],
            vec!["three-tier rail-optimized fabric"],
        ),
    ] {
        refused(&run_limited(SMALL_KIB, &args), &needles);
    }
}

/// The planner's largest measured design still plans: 16,384 XDR servers (131,072 GPUs).
#[test]
fn the_largest_benched_design_still_plans() {
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/../plan/benches/xdr-16k.toml");
    let out = ok(&run(["plan", "--spec", spec, "--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["servers"], 16_384);
    assert_eq!(v["gpus"], 131_072);
    assert_eq!(v["links"]["total"], 394_368);
}

/// `plan --spec /dev/zero` grew past 5.8 GB and `verify --discovered /dev/zero` past 8.3 GB. Every
/// file the CLI reads goes through one reader: devices and pipes are refused without being read, a
/// file past its kind's limit is refused from its size, and the error names the file, flag and limit.
#[test]
fn dev_zero_pipes_and_oversized_inputs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let flows = d("ok.flows");
    std::fs::write(&flows, "0 1 100\n").unwrap();
    let z = "/dev/zero";
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["plan".into(), "--spec".into(), z.into()], "--spec"),
        (vec!["plan".into(), "--catalog".into(), z.into()], "--catalog"),
        (vec!["plan".into(), "--prices".into(), z.into()], "--prices"),
        (
            vec![
                "verify".into(),
                "--plan".into(),
                "seed-leaf-spine".into(),
                "--discovered".into(),
                z.into(),
            ],
            "--discovered",
        ),
        (
            vec!["import".into(), "ibnet".into(), z.into()],
            "import ibnet FILE",
        ),
        (
            vec![
                "export".into(),
                "ibnet".into(),
                "--fabric".into(),
                z.into(),
                "-o".into(),
                d("x.topo"),
            ],
            "--fabric",
        ),
        (
            vec!["train".into(), "--model-file".into(), z.into()],
            "--model-file",
        ),
        (
            vec!["train".into(), "--workload".into(), z.into()],
            "--workload",
        ),
        (
            vec![
                "sim".into(),
                "collective".into(),
                "allreduce".into(),
                "seed-leaf-spine".into(),
                "--routing".into(),
                format!("opensm:{z}"),
            ],
            "--routing opensm:FILE",
        ),
        (
            "sim flows --hosts 2 --hosts-per-leaf 1 --spines 1 --link-gbps 100 --link-latency-ns 1 --flows /dev/zero"
                .split(' ')
                .map(String::from)
                .collect(),
            "--flows",
        ),
    ];
    for (args, flag) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(
            &run_limited(SMALL_KIB, &args),
            &["/dev/zero", "a device", flag],
        );
    }
    // A pipe with no writer would block a reader forever: refused without being opened.
    let fifo = d("spec.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    refused(&run(["plan", "--spec", &fifo]), &["a pipe", "--spec"]);
    // A (sparse) file one byte past the limit is refused from its size, unread.
    let big = d("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((1 << 20) + 1)
        .unwrap();
    refused(
        &run_limited(SMALL_KIB, &["plan", "--spec", &big]),
        &["big.toml", "1048577 bytes", "1 MiB", "--spec"],
    );
    refused(
        &run(["plan", "--spec", &d("missing.toml")]),
        &["missing.toml", "--spec"],
    );
}

fn flows(dir: &Path, text: &str, json: bool) -> Output {
    let path = dir.join("f.txt");
    std::fs::write(&path, text).unwrap();
    let mut args = vec![
        "sim",
        "flows",
        "--hosts",
        "2",
        "--hosts-per-leaf",
        "1",
        "--spines",
        "1",
        "--link-gbps",
        "100",
        "--link-latency-ns",
        "100",
        "--flows",
        path.to_str().unwrap(),
    ];
    if json {
        args.push("--json");
    }
    run(&args)
}

/// A flow of 2^64 - 1 bytes and one of 1,000 wrapped the total to `"bytes": 999` with a makespan of
/// 0, exit 0. The sum is checked (the line that overflows it is named), and flows that cannot finish
/// within the simulator's clock are refused; large flows that fit are summed exactly.
#[test]
fn flow_byte_totals_that_overflow_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        &flows(dir.path(), "0 1 18446744073709551615\n1 0 1000\n", true),
        &["f.txt:2:", "2^64 - 1"],
    );
    refused(
        &flows(dir.path(), "0 1 18446744073709551615\n", true),
        &["f.txt", "clock"],
    );
    refused(
        &flows(dir.path(), "0 1 1 1e300\n", false),
        &["f.txt:1:", "start"],
    );
    let big = 1u64 << 40;
    let out = ok(&flows(dir.path(), &format!("0 1 {big}\n1 0 {big}\n"), true));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["bytes"], 2 * big);
    assert!(v["makespan_us"].as_f64().unwrap() > 1e6, "{out}");
}

/// A price of 1e308 printed $9,223,372,036,854,775,807 (a saturated cast). Prices are refused
/// past $1e9 a part (and NaN, infinite, negative) naming the id; a price at the bound sums exactly.
#[test]
fn prices_past_the_bound_are_refused_and_large_ones_sum_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    for bad in ["1e308", "nan", "-5", "inf"] {
        std::fs::write(&p, format!("[price_usd]\nQM9700 = {bad}\n")).unwrap();
        refused(
            &run(["plan", "--prices", p.to_str().unwrap()]),
            &["price_usd.QM9700", "valid: 0 to 1000000000"],
        );
    }
    std::fs::write(&p, "[price_usd]\nQM9700 = 1e9\n").unwrap();
    let out = ok(&run(["plan", "--prices", p.to_str().unwrap(), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let switches = v["switches"]["total"].as_f64().unwrap();
    assert_eq!(v["cost_usd"]["switches"].as_f64().unwrap(), switches * 1e9);
    let text = ok(&run(["plan", "--prices", p.to_str().unwrap()]));
    assert!(!text.contains("9,223,372,036,854,775,807"), "{text}");
    let catalog = dir.path().join("c.toml");
    std::fs::write(
        &catalog,
        "[[fibre]]\nid = \"F\"\nname = \"f\"\nkind = \"mmf\"\nlengths_m = [1e300]\ndelay_ns_per_m = 5\nsource = \"s\"\nprice = { usd = 1, estimate = true, source = \"s\" }\n",
    )
    .unwrap();
    refused(
        &run(["plan", "--catalog", catalog.to_str().unwrap()]),
        &["lengths_m"],
    );
}

/// A one-GPU collective printed "4.49e+298 GB/s per edge". One rank sends nothing: the step has no
/// flows and 0 GB/s per edge, and busbw is 0, as nccl-tests reports a single rank.
#[test]
fn one_gpu_collectives_report_zero_bus_bandwidth() {
    let base = [
        "sim",
        "collective",
        "--servers",
        "1",
        "--gpus-per-server",
        "1",
        "--nics-per-server",
        "1",
        "-b",
        "1M",
        "-e",
        "4M",
    ];
    for op in ["allreduce", "allgather", "reducescatter", "alltoall"] {
        let mut args = base.to_vec();
        args.insert(2, op);
        let text = ok(&run(&args));
        assert!(text.contains("0 flows (a single rank"), "{text}");
        assert!(!text.contains("e+"), "{text}");
        args.push("--json");
        let v: serde_json::Value = serde_json::from_str(&ok(&run(&args))).unwrap();
        for row in v["rows"].as_array().unwrap() {
            assert_eq!(row["busbw_gbs"], 0.0, "{op}: {row}");
        }
        for m in v["steps"].as_array().unwrap() {
            assert_eq!(
                (m["flows"].as_u64(), m["edge_gbs"].as_f64()),
                (Some(0), Some(0.0))
            );
        }
    }
}

/// `-b 2` printed size 2 with count 0. Sizes round as nccl-tests rounds them (whole floats, and a
/// whole number per rank for all-gather), the table says so, and size and count agree.
#[test]
fn sizes_below_one_element_round_as_nccl_tests_does() {
    let args = [
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "2",
        "-b",
        "2",
        "-e",
        "6",
        "-f",
        "3",
    ];
    let text = ok(&run(args));
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..2], ["0", "0"], "{text}");
    assert_eq!(rows[1][..2], ["4", "1"], "{text}");
    assert!(
        text.contains("# sizes rounded down as nccl-tests rounds them")
            && text.contains("2 -> 0, 6 -> 4"),
        "{text}"
    );
    let mut json = args.to_vec();
    json[2] = "allgather";
    json.push("--json");
    let v: serde_json::Value = serde_json::from_str(&ok(&run(&json))).unwrap();
    for row in v["rows"].as_array().unwrap() {
        let (size, count) = (
            row["size_bytes"].as_u64().unwrap(),
            row["count"].as_u64().unwrap(),
        );
        assert_eq!(size, count * 4 * 16, "{row}");
    }
}

/// `train --tp 1000000000` blamed --dp, `--micro-batch 0` blamed --global-batch and `--seq 0` was
/// accepted: each error names the flag at fault.
#[test]
fn train_errors_name_the_flag_at_fault() {
    for (args, flag) in [
        (vec!["--tp", "1000000000"], "--tp:"),
        (vec!["--tp", "0"], "--tp:"),
        (vec!["--pp", "100000"], "--pp:"),
        (vec!["--dp", "100000"], "--dp:"),
        (vec!["--micro-batch", "0"], "--micro-batch:"),
        (
            vec!["--micro-batch", "18446744073709551615"],
            "--micro-batch:",
        ),
        (vec!["--seq", "0"], "--seq:"),
        (
            vec!["--global-batch", "18446744073709551615"],
            "--global-batch:",
        ),
    ] {
        let mut all = vec!["train", "seed-leaf-spine"];
        all.extend(&args);
        refused(&run(&all), &[flag]);
    }
}

/// `compare` with three --vary keys of 50 values each ran without end. The sweep size is computed
/// from the counts and refused past --max-designs before any design is built.
#[test]
fn compare_sweeps_past_the_limit_are_refused_from_their_size() {
    let fifty: Vec<String> = (1..=50).map(|n| n.to_string()).collect();
    let fifty = fifty.join(",");
    let (a, b, c) = (
        format!("servers={fifty}"),
        format!("su-size={fifty}"),
        format!("gpus-per-server={fifty}"),
    );
    let args = ["compare", "--vary", &a, "--vary", &b, "--vary", &c];
    refused(
        &run_limited(SMALL_KIB, &args),
        &[
            "1 x 50 x 50 x 50 = 125000 designs",
            "--max-designs 64",
            "raise --max-designs to 125000",
        ],
    );
    refused(
        &run([
            "compare",
            "--vary",
            "servers=1,2",
            "--vary",
            "su-size=1,2",
            "--max-designs",
            "3",
        ]),
        &["4 designs", "--max-designs 3"],
    );
    let out = ok(&run([
        "compare",
        "seed-leaf-spine",
        "--vary",
        "servers=4,8",
        "--max-designs",
        "2",
    ]));
    assert!(
        out.contains("servers=4") && out.contains("servers=8"),
        "{out}"
    );
}

/// Other numeric flags at the edges: refused with the flag named, never a panic.
#[test]
fn numeric_flags_at_the_edges_name_the_flag() {
    fn leafspine(extra: &[&'static str]) -> Vec<&'static str> {
        let mut v = vec![
            "sim",
            "flows",
            "--hosts",
            "2",
            "--hosts-per-leaf",
            "1",
            "--spines",
            "1",
            "--link-gbps",
            "100",
            "--link-latency-ns",
            "1",
            "--flows",
            "/nonexistent",
        ];
        v.extend_from_slice(extra);
        v
    }
    for (args, needle) in [
        (leafspine(&["--hosts", "4000000000"]), "--hosts"),
        (leafspine(&["--link-gbps", "nan"]), "--link-gbps"),
        (leafspine(&["--link-gbps", "1e308"]), "--link-gbps"),
        (
            leafspine(&["--link-latency-ns", "18446744073709551615"]),
            "--link-latency-ns",
        ),
        (
            vec!["plan", "--oversubscription", "nan"],
            "--oversubscription",
        ),
        (vec!["plan", "--servers", "0"], "--servers"),
        (vec!["plan", "--gpus-per-server", "0"], "--gpus-per-server"),
        (
            vec!["plan", "--nic-ratio", "4294967295:1"],
            "servers.compute_nics",
        ),
        (
            vec![
                "sim",
                "collective",
                "allreduce",
                "--host-memory-gbs",
                "1e308",
            ],
            "--host-memory-gbs",
        ),
        (
            vec!["compare", "--vary", "servers=1,2", "--amortize-years", "0"],
            "--amortize-years",
        ),
    ] {
        refused(&run(&args), &[needle]);
    }
    // clap refuses a queue-pair count past NCCL's 128 (exit 2, naming the flag).
    let o = run([
        "sim",
        "collective",
        "allreduce",
        "--qps-per-connection",
        "4000000000",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--qps-per-connection"),
        "{}",
        stderr(&o)
    );
}
