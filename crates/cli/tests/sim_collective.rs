//! `railyard sim collective` through the real binary: issue 3's claims on designed fabrics, the JSON
//! and text outputs, failures, and input errors (exit status 2 naming the flag).

use std::process::{Command, Output};

fn railyard(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_railyard"))
        .args(args)
        .output()
        .expect("run railyard")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "railyard failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["sim", "collective"];
    all.extend_from_slice(args);
    all.push("--json");
    serde_json::from_str(&stdout(&railyard(&all))).expect("json")
}

fn last_busbw(v: &serde_json::Value) -> f64 {
    let rows = v["rows"].as_array().expect("rows");
    rows.last().expect("a row")["busbw_gbs"]
        .as_f64()
        .expect("busbw")
}

/// Exit status 2 and a message naming `needle`.
fn rejects(args: &[&str], needle: &str) {
    let mut all = vec!["sim", "collective"];
    all.extend_from_slice(args);
    let o = railyard(&all);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(o.stdout.is_empty());
}

/// Issue 3: `railyard sim collective sendrecv --servers 2 --gpus-per-server 1 --nics-per-server 1
/// --tech ib-edr -b 1G -e 1G` gives about 12 GB/s.
#[test]
fn sendrecv_on_two_edr_servers_is_about_12_gbs() {
    let v = json(&[
        "sendrecv",
        "--servers",
        "2",
        "--gpus-per-server",
        "1",
        "--nics-per-server",
        "1",
        "--tech",
        "ib-edr",
        "-b",
        "1G",
        "-e",
        "1G",
    ]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["size_bytes"], 1u64 << 30);
    let b = last_busbw(&v);
    assert!((11.5..12.5).contains(&b), "{b}");
    assert_eq!(v["ranks"], 2);
    assert_eq!(v["nodes"], 2);
}

/// A 1:4 NIC:GPU ratio cuts inter-node all-reduce busbw about 4x against 1:1.
#[test]
fn one_nic_per_four_gpus_is_four_times_slower() {
    let run = |ratio: &str| {
        last_busbw(&json(&[
            "allreduce",
            "seed-leaf-spine",
            "--servers",
            "4",
            "--nic-ratio",
            ratio,
            "-b",
            "8G",
            "-e",
            "8G",
        ]))
    };
    let (one, four) = (run("1:1"), run("1:4"));
    let r = one / four;
    assert!((3.8..4.2).contains(&r), "1:1 {one} / 1:4 {four} = {r}");
}

/// The sweep follows -b -e -f; every row has the fields nccl-tests users know plus the algorithm
/// and protocol; two runs print the same bytes.
#[test]
fn sweep_rows_and_determinism() {
    let args = [
        "allreduce",
        "--servers",
        "4",
        "-b",
        "8",
        "-e",
        "128M",
        "-f",
        "4",
    ];
    let v = json(&args);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 13); // 8 x 4^k up to 2^27
    for r in rows {
        for k in ["size_bytes", "time_us", "algbw_gbs", "busbw_gbs"] {
            assert!(r[k].is_number(), "{k}: {r}");
        }
        assert!(r["algorithm"].is_string() && r["protocol"].is_string());
    }
    assert_eq!(rows[0]["protocol"], "LL");
    assert!(v["steps"][0]["bottleneck"]["resource"].is_string());
    let mut a: Vec<&str> = vec!["sim", "collective"];
    a.extend_from_slice(&args);
    let one = stdout(&railyard(&a));
    assert_eq!(one, stdout(&railyard(&a)));
    assert!(one.contains(
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    ));
    assert!(one.contains("# Avg bus bandwidth"));
}

/// Named and random cables down: the report lists them and what the tier lost; routes go around
/// leaf-spine failures, so the collective still runs.
#[test]
fn failed_cables_are_reported() {
    let v = json(&[
        "allreduce",
        "--servers",
        "64",
        "-b",
        "1G",
        "-e",
        "1G",
        "--fail-links",
        "4",
        "--seed",
        "3",
    ]);
    let cables = v["failed_cables"].as_array().unwrap();
    assert_eq!(cables.len(), 4);
    let down: u64 = v["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["down"].as_u64().unwrap())
        .sum();
    assert_eq!(down, 4);
    // A leaf-spine cable of a 64-server rail-optimized design (ids after the 512 server cables),
    // by its cabling.csv id.
    let v = json(&[
        "allgather",
        "--servers",
        "64",
        "-b",
        "1G",
        "-e",
        "1G",
        "--fail-cable",
        "C0600",
    ]);
    assert_eq!(v["failed_cables"][0], "C0600");
    assert!(last_busbw(&v) > 0.0);
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    rejects(&["allreducex"], "valid: allreduce, allgather");
    rejects(&["allreduce", "-b", "8X"], "valid: a whole number");
    rejects(&["allreduce", "-b", "1G", "-e", "1K"], "-e");
    rejects(&["allreduce", "--algo", "pat"], "valid: ring, tree, auto");
    rejects(&["allgather", "--algo", "tree"], "--algo");
    rejects(&["allreduce", "--routing", "minimal"], "opensm:FILE");
    rejects(
        &["allreduce", "--servers", "2", "--fail-cable", "C9999"],
        "--fail-cable C9999",
    );
    rejects(
        &["allreduce", "--servers", "2", "--fail-links", "100000"],
        "--fail-links",
    );
    rejects(
        &["allreduce", "--routing", "opensm:/nonexistent/lfts"],
        "/nonexistent/lfts",
    );
    rejects(
        &["allreduce", "--host-memory-gbs", "0"],
        "--host-memory-gbs",
    );
}

/// An LFT dump that routes nothing: every connection is reported missing (exit 2).
#[test]
fn opensm_routes_missing_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lfts.txt");
    std::fs::write(
        &path,
        "Unicast lids [0-1] of switch Lid 1 guid 0x0002c90100000001 ('leaf01'):\n\
         0x0001 000 # Switch portguid 0x0002c90100000001: 'leaf01'\n",
    )
    .unwrap();
    let routing = format!("opensm:{}", path.display());
    rejects(
        &[
            "sendrecv",
            "--servers",
            "2",
            "--gpus-per-server",
            "1",
            "--nics-per-server",
            "1",
            "--routing",
            &routing,
        ],
        "no route",
    );
}
