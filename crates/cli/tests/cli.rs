//! End-to-end tests of the `railyard` binary: every case runs the real executable in a temporary
//! working directory and checks its exit status, stdout, stderr and the files it writes.
//!
//! One test binary for the CLI, as ripgrep keeps one: the files under `tests/cli/` are its modules
//! (one link instead of one per file, and `cargo test` runs all their tests in parallel threads
//! instead of one file after another). Run one file's tests with `cargo test -p railyard --test cli
//! serve::`. The recorded pages keep binaries of their own, named by the commands that rewrite
//! them: `golden`, `validation`, `validation_training` and `crate_graph`.

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[path = "cli/asbuilt.rs"]
mod asbuilt;
#[path = "cli/bounds.rs"]
mod bounds;
#[path = "cli/browser.rs"]
mod browser;
#[path = "cli/calibrate.rs"]
mod calibrate;
mod common;
#[path = "cli/docs.rs"]
mod docs;
#[path = "cli/inputs.rs"]
mod inputs;
#[path = "cli/interop.rs"]
mod interop;
#[path = "cli/jobs.rs"]
mod jobs;
#[path = "cli/keys.rs"]
mod keys;
#[path = "cli/paths.rs"]
mod paths;
#[path = "cli/racks.rs"]
mod racks;
#[path = "cli/report.rs"]
mod report;
#[path = "cli/serve.rs"]
mod serve;
#[path = "cli/shard.rs"]
mod shard;
#[path = "cli/sim_collective.rs"]
mod sim_collective;
#[path = "cli/sim_collective_routes.rs"]
mod sim_collective_routes;
#[path = "cli/sim_flows.rs"]
mod sim_flows;
#[path = "cli/slurm.rs"]
mod slurm;
#[path = "cli/train.rs"]
mod train;
#[path = "cli/verify_site.rs"]
mod verify_site;
#[path = "cli/what_if.rs"]
mod what_if;

use common::{railyard, railyard_in, BIN};

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("stderr is UTF-8")
}

/// Asserts a successful run and returns its stdout.
fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    stdout(o)
}

/// `railyard plan --json ARGS`, parsed.
fn plan_json(args: &[&str]) -> Value {
    let o = railyard(["plan", "--json"].iter().chain(args));
    serde_json::from_str(&ok(&o)).expect("plan --json prints JSON")
}

/// A number at a dotted path such as `links.server_leaf`.
fn num(v: &Value, path: &str) -> f64 {
    let pointer = format!("/{}", path.replace('.', "/"));
    v.pointer(&pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("`{path}` is missing or not a number in {v}"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const PRESETS: [&str; 8] = [
    "dgx-h100-superpod",
    "dgx-a100-superpod",
    "seed-two-switch",
    "seed-leaf-spine",
    "seed-edr-fat-tree",
    "h100-nic-1to4",
    "roce-400g-sn5600",
    "rail-only-h100",
];

#[test]
fn presets_prints_one_line_per_preset_and_marks_the_default() {
    let out = ok(&railyard(["presets"]));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() >= 9, "{out}");
    let names: Vec<&str> = lines
        .iter()
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    for p in PRESETS {
        assert_eq!(
            names.iter().filter(|n| **n == p).count(),
            1,
            "{p} not listed once:\n{out}"
        );
    }
    let defaults: Vec<&&str> = lines.iter().filter(|l| l.contains("(default)")).collect();
    assert_eq!(defaults.len(), 1, "{out}");
    assert!(defaults[0].starts_with("dgx-h100-superpod "), "{out}");
    // Every line describes its preset.
    assert!(
        lines.iter().all(|l| l.split_whitespace().count() > 1),
        "{out}"
    );
}

#[test]
fn plan_without_arguments_prints_a_readable_summary_of_the_default() {
    let cwd = tempfile::tempdir().unwrap();
    let o = railyard_in(cwd.path(), ["plan"]);
    let out = ok(&o);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    for needle in [
        "railyard plan: dgx-h100-superpod",
        "127 servers, 1,016 GPUs (H100)",
        "switches (QM9700 NDR):",
        "leaf",
        "spine",
        "links:",
        "server-leaf",
        "oversubscription: leaf 1:1",
        "cost: $",
        "per GPU",
    ] {
        assert!(out.contains(needle), "missing `{needle}`:\n{out}");
    }
    // Without --out nothing is written, not even into the working directory.
    assert!(entries(cwd.path()).is_empty());
}

/// Keys that scripts rely on.
const CONTRACT: [&str; 12] = [
    "servers",
    "gpus",
    "switches.leaf",
    "switches.spine",
    "switches.core",
    "links.server_leaf",
    "links.leaf_spine",
    "links.spine_core",
    "cost_usd.total",
    "cost_usd.per_gpu",
    "oversubscription.leaf",
    "oversubscription.spine",
];

#[test]
fn plan_json_keeps_the_contract_keys() {
    let v = plan_json(&[]);
    for key in CONTRACT {
        num(&v, key);
    }
    assert_eq!(num(&v, "servers"), 127.0);
    assert_eq!(num(&v, "gpus"), 127.0 * 8.0);
    let (total, per_gpu) = (num(&v, "cost_usd.total"), num(&v, "cost_usd.per_gpu"));
    assert!(total > 0.0);
    assert!(
        (per_gpu * num(&v, "gpus") - total).abs() < 1e-6 * total,
        "{v}"
    );
}

/// Published reference designs and the seed designs: preset/flags and the counts they must give.
#[test]
fn plans_match_reference_designs() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, f64)]);
    #[rustfmt::skip]
    let cases: &[Case] = &[
        // NVIDIA DGX SuperPOD H100 reference architecture, rail-optimized NDR.
        (
            &["--servers", "127"],
            &[
                ("switches.leaf", 32.0),
                ("switches.spine", 16.0),
                ("switches.core", 0.0),
                ("links.server_leaf", 1016.0),
                ("links.leaf_spine", 1024.0),
                ("links.spine_core", 0.0),
                ("oversubscription.leaf", 1.0),
            ],
        ),
        (
            &["--servers", "256"],
            &[
                ("switches.leaf", 64.0),
                ("switches.spine", 32.0),
                ("switches.core", 0.0),
                ("links.server_leaf", 2048.0),
            ],
        ),
        (
            &["--servers", "512"],
            &[
                ("switches.leaf", 128.0),
                ("switches.spine", 128.0),
                ("switches.core", 64.0),
                ("links.server_leaf", 4096.0),
                ("links.leaf_spine", 4096.0),
                ("links.spine_core", 4096.0),
            ],
        ),
        // The seed designs.
        (
            &["seed-two-switch"],
            &[
                ("switches.total", 2.0),
                ("switches.leaf", 2.0),
                ("switches.spine", 0.0),
                ("links.inter_switch", 4.0),
                ("links.server_leaf", 72.0),
                ("links.leaf_spine", 0.0),
            ],
        ),
        (
            &["seed-leaf-spine"],
            &[
                ("switches.leaf", 4.0),
                ("switches.spine", 2.0),
                ("switches.core", 0.0),
                ("links.leaf_spine", 80.0),
                ("links.server_leaf", 80.0),
            ],
        ),
        (
            &["seed-edr-fat-tree"],
            &[
                ("oversubscription.leaf", 1.0),
                ("switches.leaf", 16.0),
                ("switches.spine", 9.0),
                ("links.server_leaf", 288.0),
            ],
        ),
    ];
    for (args, want) in cases {
        let v = plan_json(args);
        for (key, value) in *want {
            assert_eq!(num(&v, key), *value, "plan {args:?}: {key}");
        }
        let tiers = ["server_leaf", "leaf_spine", "spine_core", "inter_switch"];
        let sum: f64 = tiers.iter().map(|t| num(&v, &format!("links.{t}"))).sum();
        assert_eq!(num(&v, "links.total"), sum, "plan {args:?}");
        let switches: f64 = ["leaf", "spine", "core"]
            .iter()
            .map(|t| num(&v, &format!("switches.{t}")))
            .sum();
        assert_eq!(num(&v, "switches.total"), switches, "plan {args:?}");
    }
}

const OUT_FILES: [&str; 11] = [
    "bom.csv",
    "cabling.csv",
    "fabric.json",
    "in-band-bom.csv",
    "in-band-cabling.csv",
    "out-of-band-bom.csv",
    "out-of-band-cabling.csv",
    "report.html",
    "storage-bom.csv",
    "storage-cabling.csv",
    "summary.json",
];

#[test]
fn out_dir_gets_exactly_its_files_with_the_same_bytes_every_time() {
    for preset in ["dgx-h100-superpod", "seed-two-switch", "seed-edr-fat-tree"] {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a/plan"), tmp.path().join("b"));
        let (a_arg, b_arg) = (a.to_str().unwrap(), b.to_str().unwrap());
        let first = ok(&railyard(["plan", preset, "--json", "--out", a_arg]));
        ok(&railyard(["plan", preset, "--out", b_arg]));
        assert_eq!(entries(&a), OUT_FILES, "{preset}");
        assert_eq!(entries(&b), OUT_FILES, "{preset}");
        for name in OUT_FILES {
            let (x, y) = (
                std::fs::read(a.join(name)).unwrap(),
                std::fs::read(b.join(name)).unwrap(),
            );
            assert!(x == y, "{preset}: {name} differs between two runs");
        }
        // summary.json is what --json prints.
        assert_eq!(
            std::fs::read_to_string(a.join("summary.json")).unwrap(),
            first
        );

        let summary: Value = serde_json::from_str(&first).unwrap();
        let cabling = std::fs::read_to_string(a.join("cabling.csv")).unwrap();
        let mut rows = cabling.lines();
        let header = rows.next().unwrap();
        assert!(
            header.starts_with("id,type,part,length_m,tier,a_device,a_port,b_device,b_port"),
            "{header}"
        );
        let columns = header.split(',').count();
        let rows: Vec<&str> = rows.collect();
        assert_eq!(rows.len() as f64, num(&summary, "links.total"), "{preset}");
        for row in &rows {
            assert_eq!(row.split(',').count(), columns, "{preset}: {row}");
        }
        let tiers = |tier: &str| {
            rows.iter()
                .filter(|r| r.split(',').nth(4) == Some(tier))
                .count() as f64
        };
        assert_eq!(
            tiers("server-leaf"),
            num(&summary, "links.server_leaf"),
            "{preset}"
        );
        assert_eq!(
            tiers("leaf-spine"),
            num(&summary, "links.leaf_spine"),
            "{preset}"
        );

        let fabric: Value =
            serde_json::from_str(&std::fs::read_to_string(a.join("fabric.json")).unwrap()).unwrap();
        // A versioned format tag, so that loaders can refuse files they do not read.
        let format = fabric["format"].as_str().unwrap_or_default();
        assert!(format.starts_with("railyard-fabric/"), "{preset}: {format}");
        let bom = std::fs::read_to_string(a.join("bom.csv")).unwrap();
        assert!(bom.starts_with("category,part,"), "{bom}");

        // Planning again into a used directory replaces the files with identical ones, leaving no temp files.
        ok(&railyard(["plan", preset, "--out", b_arg]));
        assert_eq!(entries(&b), OUT_FILES, "{preset}");
        for name in OUT_FILES {
            assert!(
                std::fs::read(a.join(name)).unwrap() == std::fs::read(b.join(name)).unwrap(),
                "{preset}: {name} changed on a rerun"
            );
        }
    }
}

/// The five output files of `dir`, read.
fn out_set(dir: &Path) -> Vec<Vec<u8>> {
    OUT_FILES
        .iter()
        .map(|n| std::fs::read(dir.join(n)).unwrap())
        .collect()
}

/// Regression: with `bom.csv` a directory in the output directory, `plan --out` left a mix of new
/// and old files and three `.tmp` files. Now it refuses before anything moves: the previous outputs
/// stay whole and nothing else appears.
#[test]
fn plan_out_that_cannot_complete_leaves_the_previous_outputs_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_arg = out.to_str().unwrap();
    ok(&railyard(["plan", "seed-two-switch", "--out", out_arg]));
    let before = out_set(&out);
    std::fs::remove_file(out.join("bom.csv")).unwrap();
    std::fs::create_dir(out.join("bom.csv")).unwrap();
    let mut before_without_bom = before.clone();
    before_without_bom.remove(0);
    let o = railyard(["plan", "seed-leaf-spine", "--out", out_arg]);
    // An output whose place is taken is bad input (exit 2), as an output directory that is a file.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("bom.csv exists and is not a regular file"),
        "{}",
        stderr(&o)
    );
    assert_eq!(entries(&out), OUT_FILES);
    let after: Vec<Vec<u8>> = OUT_FILES[1..]
        .iter()
        .map(|n| std::fs::read(out.join(n)).unwrap())
        .collect();
    assert!(after == before_without_bom, "the previous outputs changed");
}

/// Regression: two `plan --out` into one directory at once gave a mixed set (1 run in 30). The
/// directory must always hold one run's whole set.
#[test]
fn concurrent_plan_out_into_one_directory_never_mixes() {
    let tmp = tempfile::tempdir().unwrap();
    let designs = ["seed-two-switch", "seed-leaf-spine"];
    let reference: Vec<Vec<Vec<u8>>> = designs
        .iter()
        .map(|d| {
            let dir = tmp.path().join(d);
            ok(&railyard(["plan", d, "--out", dir.to_str().unwrap()]));
            out_set(&dir)
        })
        .collect();
    let shared = tmp.path().join("shared");
    let shared_arg = shared.to_str().unwrap();
    for round in 0..10 {
        let children: Vec<_> = designs
            .iter()
            .map(|d| {
                Command::new(BIN)
                    .args(["plan", d, "--out", shared_arg])
                    .current_dir(tmp.path())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        assert_eq!(entries(&shared), OUT_FILES, "round {round}");
        let got = out_set(&shared);
        assert!(
            reference.contains(&got),
            "round {round}: the directory holds a mix of two runs"
        );
    }
}

/// Runs `railyard plan ARGS --out DIR/out` in a temp dir holding `files`; `{dir}` in an argument is
/// replaced by the temp dir. Expects exit status 2, every needle on stderr and no output files.
fn assert_rejected(files: &[(&str, &str)], args: &[&str], needles: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in files {
        write(tmp.path(), name, text);
    }
    let dir = tmp.path().to_str().unwrap();
    let out = tmp.path().join("out");
    let mut argv: Vec<String> = vec!["plan".into()];
    argv.extend(args.iter().map(|a| a.replace("{dir}", dir)));
    argv.extend(["--out".into(), out.to_str().unwrap().into()]);
    let o = railyard_in(tmp.path(), &argv);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{argv:?}: stderr: {err}");
    for needle in needles {
        assert!(
            err.contains(needle),
            "{argv:?}: stderr lacks `{needle}`:\n{err}"
        );
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !out.exists() || entries(&out).is_empty(),
        "{argv:?} wrote {:?}",
        entries(&out)
    );
    let mut left: Vec<String> = entries(tmp.path());
    left.retain(|n| !files.iter().any(|(f, _)| f == n) && n != "out");
    assert!(left.is_empty(), "{argv:?} wrote {left:?}");
}

#[test]
fn rejects_unknown_key_in_spec_file() {
    assert_rejected(
        &[(
            "spec.toml",
            "name = \"x\"\n[servers]\ncount = 4\nbogus_key = 1\n",
        )],
        &["--spec", "{dir}/spec.toml"],
        &["spec.toml", "line 4", "bogus_key", "count", "compute_nics"],
    );
}

#[test]
fn rejects_wrong_type_in_spec_file() {
    assert_rejected(
        &[("spec.toml", "[servers]\ncount = \"four\"\n")],
        &["--spec", "{dir}/spec.toml"],
        &[
            "spec.toml",
            "line 2",
            "servers.count",
            "\"four\"",
            "whole number",
        ],
    );
}

#[test]
fn rejects_nic_count_that_does_not_divide_the_gpus() {
    assert_rejected(
        &[],
        &["--nics-per-server", "3"],
        &["servers.compute_nics", "3", "valid: 1, 2, 4, 8"],
    );
}

#[test]
fn rejects_more_nic_ports_than_one_switch_has() {
    assert_rejected(
        &[],
        &["--topology", "single-switch", "--servers", "100"],
        &[
            "servers.count",
            "800 NIC ports",
            "one switch",
            "QM9700",
            "valid: at most 8 servers",
        ],
    );
}

#[test]
fn rejects_fat_tree_beyond_three_tiers() {
    assert_rejected(
        &[],
        &[
            "seed-edr-fat-tree",
            "--gpus-per-server",
            "1",
            "--nics-per-server",
            "1",
            "--servers",
            "20000",
        ],
        &[
            "servers.count",
            "three-tier",
            "SB7800",
            "valid: at most 11664 servers",
        ],
    );
}

#[test]
fn rejects_switch_that_cannot_carry_the_speed() {
    assert_rejected(
        &[],
        &["--switch", "QM8700"],
        &[
            "fabric.switch",
            "QM8700",
            "ib-ndr",
            "valid for ib-ndr: QM9700, QM9790",
        ],
    );
}

#[test]
fn rejects_cable_run_longer_than_any_cable_reaches() {
    assert_rejected(
        &[(
            "far.toml",
            "[servers]\ncount = 127\n[layout]\nracks_per_row = 1\nrow_pitch_m = 50\n",
        )],
        &["--spec", "{dir}/far.toml"],
        &[
            "layout",
            "longer than",
            "layout.racks_per_row",
            "layout.row_pitch_m",
        ],
    );
}

#[test]
fn rejects_unknown_preset() {
    let mut needles = vec!["preset", "`no-such-design`", "valid:"];
    needles.extend(PRESETS);
    assert_rejected(&[], &["no-such-design"], &needles);
}

#[test]
fn rejects_unknown_tech() {
    // clap rejects the value itself, also with status 2.
    assert_rejected(
        &[],
        &["--tech", "ib-qdr"],
        &[
            "--tech",
            "ib-qdr",
            "ib-edr",
            "ib-ndr",
            "roce-400g",
            "roce-800g",
        ],
    );
}

#[test]
fn rejects_unknown_key_in_catalog_file() {
    assert_rejected(
        &[("extra.toml", "[[switch]]\nid = \"X1\"\nbogus = 1\n")],
        &["--catalog", "{dir}/extra.toml"],
        &["extra.toml", "line 3", "`bogus`", "cages"],
    );
}

#[test]
fn rejects_price_for_unknown_part() {
    assert_rejected(
        &[("prices.toml", "[price_usd]\nNO-SUCH-PART = 5\n")],
        &["--prices", "{dir}/prices.toml"],
        &[
            "prices.toml",
            "price_usd.NO-SUCH-PART",
            "valid ids",
            "QM9700",
        ],
    );
}

#[test]
fn closed_stdout_ends_quietly_with_status_0() {
    let many: Vec<String> = (1..=40).map(|n| n.to_string()).collect();
    let vary = format!("servers={}", many.join(","));
    // (arguments, bytes to read before closing the pipe); the compare output outgrows a pipe buffer.
    let cases: &[(&[&str], usize)] = &[
        (&["plan"], 16),
        (&["plan"], 0),
        (&["plan", "--json"], 1),
        (&["presets"], 0),
        (&["compare", "--json", "--vary", &vary], 16),
    ];
    for (args, n) in cases {
        let mut child = Command::new(BIN)
            .args(*args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stdout.take().unwrap();
        let mut buf = vec![0u8; *n];
        pipe.read_exact(&mut buf).unwrap();
        drop(pipe);
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {:?} {}",
            o.status,
            stderr(&o)
        );
        assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
    }
}

/// The cells of the row of a compare table that starts with `label`.
fn row<'a>(table: &'a str, label: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` row:\n{table}"));
    line[label.len()..].split_whitespace().collect()
}

#[test]
fn compare_prints_one_column_per_design() {
    let out = ok(&railyard(["compare", "seed-leaf-spine", "seed-two-switch"]));
    assert_eq!(
        row(&out, ""),
        ["seed-leaf-spine", "seed-two-switch"],
        "{out}"
    );
    assert_eq!(row(&out, "topology"), ["fat-tree", "two-switch"]);
    assert_eq!(row(&out, "leaf switches"), ["4", "2"]);
    assert_eq!(row(&out, "spine switches"), ["2", "0"]);
    assert_eq!(row(&out, "cables"), ["160", "76"]);

    let out = ok(&railyard(["compare", "--vary", "nic-ratio=1:1,1:4"]));
    assert_eq!(row(&out, ""), ["nic-ratio=1:1", "nic-ratio=1:4"], "{out}");
    assert_eq!(row(&out, "NIC:GPU"), ["1:1", "1:4"]);
    assert_eq!(row(&out, "leaf switches"), ["32", "8"]);
}

#[test]
fn compare_needs_two_designs() {
    let cases: &[&[&str]] = &[
        &["compare"],
        &["compare", "seed-leaf-spine"],
        &["compare", "--vary", "nic-ratio=1:4"],
    ];
    for args in cases {
        let o = railyard(*args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains("at least two designs"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn prices_file_changes_the_cost() {
    let tmp = tempfile::tempdir().unwrap();
    let prices = write(tmp.path(), "prices.toml", "[price_usd]\nQM9700 = 1\n");
    let base = plan_json(&[]);
    let cheap = plan_json(&["--prices", prices.to_str().unwrap()]);
    let switches = num(&base, "switches.total");
    assert_eq!(num(&cheap, "cost_usd.switches"), switches);
    assert!(num(&cheap, "cost_usd.total") < num(&base, "cost_usd.total"));
    let saved = num(&base, "cost_usd.total") - num(&cheap, "cost_usd.total");
    let expected = num(&base, "cost_usd.switches") - switches;
    assert!((saved - expected).abs() < 1e-6, "{saved} vs {expected}");
    // Only prices change, not the design.
    for key in ["switches.total", "links.total", "gpus"] {
        assert_eq!(num(&cheap, key), num(&base, key), "{key}");
    }
}

/// Rail-only (Wang et al.) drops the spine layer: for the same GPUs its switches, cables and optics
/// cost less than the rail-optimized fat-tree's, within the 38-77% lower network cost the paper reports,
/// and compare says by how much.
#[test]
fn rail_only_costs_less_than_rail_optimized() {
    let out = railyard([
        "compare",
        "rail-only-h100:topology=rail-optimized",
        "rail-only-h100",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fabric_cost = |i: usize| {
        let c = &v["designs"][i]["summary"]["cost_usd"];
        c["total"].as_f64().unwrap() - c["nics"].as_f64().unwrap()
    };
    let saving = 1.0 - fabric_cost(1) / fabric_cost(0);
    assert!(
        (0.38..=0.77).contains(&saving),
        "rail-only saves {:.0}%",
        saving * 100.0
    );
    let text = railyard([
        "compare",
        "rail-only-h100:topology=rail-optimized",
        "rail-only-h100",
    ]);
    let text = String::from_utf8(text.stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("vs the first design"))
        .unwrap();
    assert!(row.contains(&format!("-{:.0}%", saving * 100.0)), "{row}");
}

/// MoE all-to-all on rail-only: with TP 2 the EP groups cross rails. By default (`--pxn auto`,
/// NCCL's P2P_PXN_LEVEL=2) both designs relay over NVLink to the destination's rail, pipelined as
/// NCCL's PXN proxy runs it, so neither crosses a spine and they train alike, rail-only cheaper
/// per token (issue 36: "rail-only from 11.5% slower to a tie"). Priced as the Rail-only paper
/// prices forwarding (staged) against straight through the spines (`pxn=off`), all-to-all busbw
/// drops and the expert all-to-all takes longer, by a bounded amount.
#[test]
fn compare_shows_the_moe_penalty_of_rail_only() {
    let step = [
        "--servers",
        "16",
        "--model",
        "mixtral-8x7b",
        "--tp",
        "2",
        "--ep",
        "8",
    ];
    let json = |designs: &[&str], extra: &[&str]| -> serde_json::Value {
        let out = railyard(
            ["compare"]
                .iter()
                .chain(designs)
                .chain(&step)
                .chain(extra)
                .chain(&["--perf", "--json"])
                .copied(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let v = json(&[], &["--vary", "topology=rail-optimized,rail-only"]);
    let perf = |i: usize, k: &str| v["designs"][i]["performance"][k].as_f64().unwrap();
    assert_eq!(v["designs"][0]["pxn"], "pxn");
    assert_eq!(v["designs"][1]["pxn"], "pxn");
    for k in [
        "alltoall_busbw_1g_gbs",
        "expert_all_to_all_s",
        "step_time_s",
    ] {
        let ratio = perf(1, k) / perf(0, k);
        assert!((ratio - 1.0).abs() < 1e-3, "{k} ratio by default {ratio}");
    }
    assert!(perf(1, "network_usd_per_million_tokens") < perf(0, "network_usd_per_million_tokens"));

    let v = json(
        &[
            "dgx-h100-superpod:pxn=off",
            "dgx-h100-superpod:topology=rail-only,pxn=staged",
        ],
        &[],
    );
    let perf = |i: usize, k: &str| v["designs"][i]["performance"][k].as_f64().unwrap();
    let busbw = perf(1, "alltoall_busbw_1g_gbs") / perf(0, "alltoall_busbw_1g_gbs");
    assert!(
        (0.85..0.95).contains(&busbw),
        "all-to-all busbw ratio {busbw}"
    );
    let a2a = perf(1, "expert_all_to_all_s") / perf(0, "expert_all_to_all_s");
    assert!((1.05..1.25).contains(&a2a), "expert all-to-all ratio {a2a}");
    let step_ratio = perf(1, "step_time_s") / perf(0, "step_time_s");
    assert!(
        (1.0..1.05).contains(&step_ratio),
        "step time ratio {step_ratio}"
    );
    // Cheaper per token all the same.
    assert!(perf(1, "network_usd_per_million_tokens") < perf(0, "network_usd_per_million_tokens"));
}

/// Every `--vary` key of issue 6 runs with performance rows, and the rows move the way they must:
/// fewer NICs and GPUDirect off lower busbw and slow the step; rail-only relays all-to-all as
/// rail-optimized does by default (NCCL's PXN) and all-reduce is unchanged; RoCE pays its headers; more
/// oversubscription on a fat-tree never raises all-to-all busbw (adaptive routing, as the step
/// invariant uses: static D-mod-K collisions depend on each layout).
#[test]
fn every_vary_key_has_performance_rows() {
    let perf = |vary: &str, extra: &[&str]| -> Vec<(f64, f64, f64)> {
        let mut args = vec![
            "compare",
            "--vary",
            vary,
            "--perf",
            "--model",
            "llama3-8b",
            "--json",
        ];
        args.extend_from_slice(if extra.is_empty() {
            &["--servers", "8"]
        } else {
            extra
        });
        let v: Value = serde_json::from_str(&ok(&railyard(&args))).unwrap();
        v["designs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let p = &d["performance"];
                (
                    p["allreduce_busbw_1g_gbs"].as_f64().unwrap(),
                    p["alltoall_busbw_1g_gbs"].as_f64().unwrap(),
                    p["step_time_s"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let nics = perf("nic-ratio=1:1,1:2,1:4", &[]);
    assert!(nics[0].0 > nics[1].0 && nics[1].0 > nics[2].0, "{nics:?}");
    assert!(nics[0].2 <= nics[1].2 && nics[1].2 <= nics[2].2, "{nics:?}");
    let gdr = perf("gpudirect=on,off", &[]);
    assert!(gdr[0].0 > gdr[1].0 && gdr[0].2 <= gdr[1].2, "{gdr:?}");
    // All-to-all crosses rails relayed over NVLink by default (NCCL's PXN, `--pxn auto`), so
    // rail-only loses nothing to rail-optimized; store-and-forward (`--pxn staged`, the Rail-only
    // paper's model) it falls below (`compare_shows_the_moe_penalty_of_rail_only`).
    let topo = perf("topology=rail-optimized,fat-tree,rail-only", &[]);
    assert_eq!(topo[0].0, topo[2].0, "{topo:?}");
    assert_eq!(topo[2].1, topo[0].1, "{topo:?}");
    let tech = perf("tech=ib-ndr,roce-400g", &[]);
    assert!(
        tech[1].0 < tech[0].0 && tech[1].0 > 0.95 * tech[0].0,
        "{tech:?}"
    );
    let over = perf(
        "oversubscription=1,2,4",
        &[
            "--topology",
            "fat-tree",
            "--servers",
            "16",
            "--routing",
            "adaptive",
        ],
    );
    assert!(over[0].1 >= over[1].1 && over[1].1 >= over[2].1, "{over:?}");
    assert!(over[2].1 < 0.5 * over[0].1, "{over:?}");
}

/// A design too large for the per-flow all-to-all (ECMP: no symmetry to lay it out by) still
/// compares: its all-to-all is timed from the flows counted on each link (exact for equal flows
/// that start together) and a note says so. With D-mod-K (the default) the same designs run by
/// symmetry, with no note. Straight from each GPU's NIC (`--pxn off`): relayed as NCCL does by
/// default, every transfer stays on its rail's leaf and ECMP has no spine to collide on.
#[test]
fn compare_times_an_all_to_all_too_large_to_simulate_from_counts() {
    let by_symmetry = ok(&railyard([
        "compare",
        "--servers",
        "264",
        "--vary",
        "gpudirect=on,off",
        "--pxn",
        "off",
        "--perf",
        "--json",
    ]));
    let v: Value = serde_json::from_str(&by_symmetry).unwrap();
    let mut dmodk = Vec::new();
    for d in v["designs"].as_array().unwrap() {
        let p = &d["performance"];
        dmodk.push(p["alltoall_busbw_1g_gbs"].as_f64().unwrap());
        assert!(
            p["notes"].as_array().is_none_or(|n| n.is_empty()),
            "{by_symmetry}"
        );
    }
    let args = [
        "compare",
        "--servers",
        "264",
        "--vary",
        "gpudirect=on,off",
        "--pxn",
        "off",
        "--perf",
        "--routing",
        "ecmp",
    ];
    let text = ok(&railyard(args));
    assert!(!text.contains("too large"), "{text}");
    assert!(
        text.contains("alltoall: timed from the flows counted on each link instead of simulating each flow: exact"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&ok(&railyard(args.iter().chain(&["--json"])))).unwrap();
    for (d, dmodk) in v["designs"].as_array().unwrap().iter().zip(dmodk) {
        let p = &d["performance"];
        // ECMP's collisions cost a few percent against D-mod-K on a non-blocking fabric (none
        // without GPUDirect RDMA, where the host path bounds both).
        let ecmp = p["alltoall_busbw_1g_gbs"].as_f64().unwrap();
        assert!(ecmp <= dmodk && ecmp > 0.8 * dmodk, "{ecmp} vs {dmodk}");
        if d["label"] == "gpudirect=on" {
            assert!(ecmp < dmodk, "{ecmp} vs {dmodk}");
        }
        assert!(p["allreduce_busbw_1g_gbs"].as_f64().unwrap() > 0.0);
        assert!(p["notes"][0].as_str().unwrap().contains("counted"));
    }
}

/// A rail-optimized design smaller than one scalable unit says why its leaves read below 1:1.
#[test]
fn partial_scalable_units_explain_their_leaf_ratio() {
    let out = ok(&railyard(["plan", "--servers", "16"]));
    assert!(out.contains("leaf 0.5:1"), "{out}");
    assert!(out.contains("built whole"), "{out}");
    let full = ok(&railyard(["plan", "--servers", "32"]));
    // The compute fabric's unit is whole (a storage leaf short of storage ports may say so).
    assert!(
        full.contains("leaf 1:1")
            && !full
                .lines()
                .any(|l| l.contains("scalable unit") && l.contains("built whole")),
        "{full}"
    );
}

/// Issue 15: "network $ per million tokens" left out the servers, GPUs and power, so a 1:4 NIC:GPU
/// design looked cheapest per token even where it trains a mixture of experts much slower. The whole
/// cluster's cost per million tokens counts them: the 1:4 design still costs less in network per
/// token, and more for the whole cluster.
#[test]
fn a_slower_cheaper_network_costs_more_per_token_for_the_whole_cluster() {
    // Experts spread over two servers' GPUs (the fitted default has none: EP 1 fits).
    let layout = [
        "--model",
        "deepseek-v3-like",
        "--pp",
        "7",
        "--ep",
        "2",
        "--stage-layers",
        "8,9,9,9,9,9,8",
    ];
    let args = [&["compare", "--vary", "nic-ratio=1:1,1:4"][..], &layout].concat();
    let out = railyard(args.iter().copied().chain(["--json"]));
    let v: serde_json::Value = serde_json::from_str(&ok(&out)).unwrap();
    let perf = |i: usize, k: &str| v["designs"][i]["performance"][k].as_f64().unwrap();
    // The figures docs/guide/compare.md gives: 1.35x slower, a third of the network cost per token,
    // 1.2x the cluster's.
    assert!(perf(1, "step_time_s") > 1.3 * perf(0, "step_time_s"));
    assert!(
        perf(1, "network_usd_per_million_tokens")
            < 0.55 * perf(0, "network_usd_per_million_tokens")
    );
    assert!(
        perf(1, "cluster_usd_per_million_tokens")
            > 1.15 * perf(0, "cluster_usd_per_million_tokens")
    );
    // The cluster's hour: the same servers cost about the same with either network.
    let hour = perf(1, "cluster_usd_per_hour") / perf(0, "cluster_usd_per_hour");
    assert!((0.8..1.0).contains(&hour), "{hour}");
    // The table says so, with its assumptions.
    let text = ok(&railyard(args.iter().copied()));
    assert!(
        text.contains("cluster $ per M tokens (4 y, PUE 1.58, $0.0806/kWh)"),
        "{text}"
    );
    // Bad assumptions are refused naming the flag.
    let out = railyard(args.iter().copied().chain(["--pue", "0.5"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pue"));
    // train prints both, and takes the same assumptions.
    let train = [&["train"][..], &layout].concat();
    let v: serde_json::Value =
        serde_json::from_str(&ok(&railyard(train.iter().copied().chain(["--json"])))).unwrap();
    let same = v["cluster_usd_per_million_tokens"].as_f64().unwrap()
        / perf(0, "cluster_usd_per_million_tokens");
    assert!((same - 1.0).abs() < 1e-9, "{same}");
    let dear = ok(&railyard(
        train.iter().copied().chain(["--usd-per-kwh", "0.5"]),
    ));
    assert!(dear.contains("cluster $ per M tokens: "), "{dear}");
    let out = railyard(train.iter().copied().chain(["--amortize-years", "0"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--amortize-years"));
}

/// With no layout flag, a model whose state does not fit on TP 8 alone gets the first layout
/// that fits (docs/guide/train.md's examples), and says so; an asked-for layout is kept, with the warning.
#[test]
fn an_unasked_layout_is_fitted_to_the_gpus_memory_and_says_so() {
    let json = |args: &[&str]| -> Value {
        let out = railyard(args.iter().copied().chain(["--json"]));
        serde_json::from_str(&ok(&out)).unwrap()
    };
    let v = json(&["train", "--model", "llama3-405b"]);
    assert_eq!(
        (v["tp"].as_u64(), v["pp"].as_u64(), v["dp"].as_u64()),
        (Some(8), Some(42), Some(3))
    );
    // The 81,559 MiB an H100 exposes, 85.5 GB.
    assert!(v["memory_gb_per_gpu"].as_f64().unwrap() <= v["gpu_memory_gb"].as_f64().unwrap());
    let note = v["layout_fitted"].as_str().unwrap();
    assert!(
        note.contains(
            "TP8 PP1 DP127 would hold 377.0 GB per GPU (model state 309.2 GB, activations 67.8 GB), more than the 85.5 GB each GPU has"
        ),
        "{note}"
    );
    let v = json(&["train", "--model", "deepseek-v3-like"]);
    assert_eq!(
        (v["pp"].as_u64(), v["dp"].as_u64(), v["ep"].as_u64()),
        (Some(7), Some(18), Some(2))
    );
    assert_eq!(v["stage_layers"], serde_json::json!([8, 9, 9, 9, 9, 9, 8]));
    // Only a starved pipeline fits 128K-token sequences without --cp or --recompute: taken, and
    // said; with --recompute two stages fit, each with its micro-batches.
    let v = json(&["train", "--model", "llama3-70b", "--seq", "131072"]);
    let note = v["layout_fitted"].as_str().unwrap();
    assert!(
        note.contains("this one has 8 for 42 stages, so most of its pipeline idles"),
        "{note}"
    );
    let v = json(&[
        "train",
        "--model",
        "llama3-70b",
        "--seq",
        "131072",
        "--recompute",
    ]);
    assert_eq!(v["pp"].as_u64(), Some(2));
    let note = v["layout_fitted"].as_str().unwrap();
    assert!(!note.contains("idles"), "{note}");
    // Asked for, even as the default: kept, and the text warns.
    let v = json(&["train", "--model", "llama3-405b", "--pp", "1"]);
    assert_eq!((v["pp"].as_u64(), v.get("layout_fitted")), (Some(1), None));
    let text = ok(&railyard(["train", "--model", "llama3-405b", "--pp", "1"]));
    assert!(
        text.contains("warning: the model state alone does not fit"),
        "{text}"
    );
    // A model that fits keeps the default, with no note.
    let v = json(&["train", "--model", "llama3-70b"]);
    assert_eq!((v["pp"].as_u64(), v.get("layout_fitted")), (Some(1), None));
    // compare says it under the table, and warns where an asked-for layout does not fit.
    let compare = |model: &str, extra: &[&str]| {
        let args = ["compare", "--vary", "nic-ratio=1:1,1:4", "--model", model];
        ok(&railyard(args.iter().chain(extra).copied()))
    };
    let text = compare("llama3-405b", &[]);
    assert!(
        text.contains("nic-ratio=1:4: layout fitted to the GPU's memory"),
        "{text}"
    );
    let text = compare("llama3-405b", &["--pp", "1"]);
    assert!(
        text.contains("nic-ratio=1:1: the model state alone, 309.2 GB per GPU, does not fit"),
        "{text}"
    );
    // The layout row names every split asked for, interleaving included.
    let text = compare("llama3-70b", &["--pp", "2", "--vp", "2", "--servers", "10"]);
    assert!(text.contains("TP8 PP2 VP2 DP5"), "{text}");
}

/// `--fit-efficiency` finds the efficiency that reproduces a measured step, and says where it came
/// from; a measurement no efficiency reaches, or one given with --efficiency, is refused.
#[test]
fn fit_efficiency_reproduces_a_measured_step() {
    let base = ["train", "--servers", "16", "--model", "llama3-8b"];
    let at = |extra: &[&str]| -> Value {
        let out = railyard(base.iter().chain(extra).copied().chain(["--json"]));
        serde_json::from_str(&ok(&out)).unwrap()
    };
    // A step made at efficiency 0.42, measured back.
    let made = at(&["--efficiency", "0.42"]);
    let t = made["step_time_s"].as_f64().unwrap();
    let fit = at(&["--fit-efficiency", &format!("step-time={t}")]);
    let e = fit["compute_efficiency"].as_f64().unwrap();
    assert!((e - 0.42).abs() < 2e-4, "{e}");
    assert_eq!(fit["efficiency_fitted_to"]["step_time_s"].as_f64(), Some(t));
    let text = ok(&railyard(
        base.iter()
            .copied()
            .chain(["--fit-efficiency", &format!("step-time={t}")]),
    ));
    assert!(text.contains("(fitted to the measured"), "{text}");
    for (args, needle) in [
        (vec!["--fit-efficiency", "step-time=0.0001"], "even at 1.0"),
        (vec!["--fit-efficiency", "mfu=120%"], "above 100%"),
        (
            vec!["--fit-efficiency", "mfu=0.4", "--efficiency", "0.5"],
            "cannot be used with",
        ),
    ] {
        let out = railyard(base.iter().copied().chain(args.iter().copied()));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

/// 16 designs (4 NIC ratios x 2 technologies x 2 oversubscriptions) fit a 160-column terminal:
/// the columns are lettered A..P with a legend naming each design by what differs, and go on in
/// pages of the same rows. (The whole table is recorded in golden/compare-16-designs.txt.)
#[test]
fn compare_of_16_designs_fits_160_columns() {
    let out = ok(&railyard([
        "compare",
        "--servers",
        "16",
        "--vary",
        "nic-ratio=1:1,1:2,1:4,1:8",
        "--vary",
        "tech=ib-ndr,roce-400g",
        "--vary",
        "oversubscription=1,2",
    ]));
    for line in out.lines() {
        assert!(line.chars().count() <= 160, "{} wide: {line}", line.len());
    }
    assert!(
        out.contains("  A  nic-ratio=1:1 tech=ib-ndr oversubscription=1\n"),
        "{out}"
    );
    assert!(
        out.contains("  P  nic-ratio=1:8 tech=roce-400g oversubscription=2\n"),
        "{out}"
    );
    // Every design has its column once, on one of the pages.
    // A page's header: blank where the row labels are, then one letter per column.
    let letters: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with(' ') && !l.trim().is_empty())
        .filter(|l| {
            l.split_whitespace()
                .all(|w| w.len() == 1 && w.chars().all(|c| c.is_ascii_uppercase()))
        })
        .flat_map(|l| l.split_whitespace())
        .collect();
    let want: Vec<String> = (b'A'..=b'P').map(|c| (c as char).to_string()).collect();
    assert_eq!(letters, want, "{out}");
    assert_eq!(
        out.matches("\nservers ").count(),
        out.matches("\nGPUs ").count()
    );
    // A narrower terminal takes more pages, each within its width.
    let narrow = ok(&railyard([
        "compare",
        "--servers",
        "16",
        "--vary",
        "nic-ratio=1:1,1:2,1:4,1:8",
        "--width",
        "80",
    ]));
    let table = narrow.split("\nwhich design wins:").next().unwrap();
    assert!(table.lines().all(|l| l.chars().count() <= 80), "{narrow}");
    assert!(narrow.matches("\nservers ").count() >= 2, "{narrow}");
}

/// Routing and PXN per design: `A:routing=adaptive B:routing=ecmp` simulates each design with its
/// own routing, and the table says which ran where (PXN `auto` resolved as NCCL's default: `pxn`);
/// ECMP's hash collisions cost all-reduce busbw that adaptive routing keeps.
#[test]
fn compare_routes_each_design_as_its_pairs_say() {
    let out = ok(&railyard([
        "compare",
        "seed-leaf-spine:routing=adaptive",
        "seed-leaf-spine:routing=ecmp,pxn=off",
        "seed-leaf-spine:name=static,routing=dmodk",
        "--perf",
    ]));
    assert_eq!(
        row(&out, ""),
        ["routing=adaptive", "routing=ecmp,pxn=off", "static"],
        "{out}"
    );
    assert_eq!(row(&out, "routing"), ["adaptive", "ecmp", "dmodk"], "{out}");
    assert_eq!(
        row(&out, "cross-rail (PXN)"),
        ["pxn", "direct", "pxn"],
        "{out}"
    );
    let busbw: Vec<f64> = row(&out, "all-reduce busbw 1 GiB (GB/s)")
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
    assert!(busbw[0] > busbw[1], "adaptive beats ECMP: {out}");
    assert!(out.contains("which design wins:\n"), "{out}");
    assert!(
        out.contains("  highest all-reduce busbw at 1 GiB: "),
        "{out}"
    );
    // A bad value names the pair and the valid routings; an LFT file is not a compare routing.
    for bad in ["routing=bogus", "routing=opensm:x.dump"] {
        let o = railyard([
            "compare",
            &format!("seed-leaf-spine:{bad}"),
            "seed-leaf-spine",
        ]);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains("valid: ecmp, dmodk, adaptive\n"),
            "{}",
            stderr(&o)
        );
    }
}

/// `compare --json` carries each design's layout and step breakdown, with its routing, and the
/// verdicts; the breakdown is the one `train` prints for the same design and flags.
#[test]
fn compare_json_carries_the_layout_and_step_breakdown() {
    let out = ok(&railyard([
        "compare",
        "seed-leaf-spine",
        "seed-leaf-spine:tp=4,routing=ecmp",
        "--model",
        "llama3-8b",
        "--zero",
        "0",
        "--efficiency",
        "0.4",
        "--json",
    ]));
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["designs"];
    assert_eq!(d[0]["performance"]["layout"]["tp"], 8);
    assert_eq!(d[1]["performance"]["layout"]["tp"], 4);
    assert_eq!(d[1]["performance"]["layout"]["zero"], 0);
    assert_eq!(d[1]["routing"], "ecmp");
    assert_eq!(d[1]["label"], "tp=4,routing=ecmp");
    assert_eq!(d[1]["summary"]["name"], "tp=4,routing=ecmp");
    let b = &d[0]["performance"]["breakdown"];
    for key in [
        "compute_s",
        "tensor_parallel_s",
        "data_parallel_exposed_s",
        "pipeline_bubble_s",
        "step_time_s",
        "mfu",
    ] {
        assert!(b[key].is_number(), "{key}: {b}");
    }
    assert_eq!(b["step_time_s"], d[0]["performance"]["step_time_s"]);
    let train = ok(&railyard([
        "train",
        "seed-leaf-spine",
        "--model",
        "llama3-8b",
        "--zero",
        "0",
        "--efficiency",
        "0.4",
        "--json",
    ]));
    let t: Value = serde_json::from_str(&train).unwrap();
    assert_eq!(t["step_time_s"], b["step_time_s"]);
    assert!(
        v["verdicts"].as_array().unwrap().len() >= 3,
        "{}",
        v["verdicts"]
    );
}

/// `train --fail-links 8 --seed 1` on 8 servers of seed-leaf-spine takes down leaf-spine cables
/// the data-parallel all-reduce crosses: routed by D-mod-K the step is slower than with every
/// cable up, and the output names the cables down; InfiniBand's default, adaptive routing, sprays
/// around them and keeps the step.
#[test]
fn train_with_failed_links_is_slower_where_they_carry_the_job() {
    let args = [
        "train",
        "seed-leaf-spine",
        "--servers",
        "8",
        "--model",
        "llama3-8b",
        "--json",
        "--routing",
        "dmodk",
    ];
    let whole: Value = serde_json::from_str(&ok(&railyard(args))).unwrap();
    let adaptive = |extra: &[&str]| -> Value {
        let mut a = args[..args.len() - 2].to_vec();
        a.extend(extra);
        serde_json::from_str(&ok(&railyard(&a))).unwrap()
    };
    let step = |v: &Value| v["step_time_s"].as_f64().unwrap();
    assert_eq!(
        step(&adaptive(&["--fail-links", "8", "--seed", "1"])),
        step(&adaptive(&[]))
    );
    let mut failing = args.to_vec();
    failing.extend(["--fail-links", "8", "--seed", "1"]);
    let failed: Value = serde_json::from_str(&ok(&railyard(&failing))).unwrap();
    let t = |v: &Value| v["step_time_s"].as_f64().unwrap();
    let dp = |v: &Value| v["breakdown"]["data_parallel_total_s"].as_f64().unwrap();
    assert!(t(&failed) > t(&whole), "{} vs {}", t(&failed), t(&whole));
    assert!(dp(&failed) > dp(&whole));
    assert_eq!(failed["failed_cables"].as_array().unwrap().len(), 8);
    assert!(whole.get("failed_cables").is_none());
    // The text says which cables; an unknown cable is refused with the valid range.
    failing.retain(|a| *a != "--json");
    let text = ok(&railyard(&failing));
    assert!(text.contains("failed cables (8): C"), "{text}");
    let o = railyard([
        "train",
        "seed-leaf-spine",
        "--servers",
        "4",
        "--fail-cable",
        "C9999",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--fail-cable C9999: not a cable"),
        "{}",
        stderr(&o)
    );
}

/// A report of a preset changed by flags is titled by what differs, never by the preset it no
/// longer is, and says what it wrote.
#[test]
fn a_report_of_a_changed_preset_is_titled_by_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let o = railyard_in(
        dir.path(),
        [
            "report",
            "--tech",
            "roce-400g",
            "--no-sim",
            "--output",
            "r.html",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "railyard: wrote r.html\n");
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(
        html.contains("<h1>dgx-h100-superpod:tech=roce-400g</h1>"),
        "{}",
        &html[..html.len().min(2000)]
    );
    // Without flags, the preset's own name.
    let o = railyard_in(dir.path(), ["report", "--no-sim", "-o", "p.html"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("p.html")).unwrap();
    assert!(html.contains("<h1>dgx-h100-superpod</h1>"));
}

/// Issue 15: `--storage none --management none` gives the compute fabric alone, with the same
/// numbers under the summary's existing keys; the networks have keys and files of their own.
#[test]
fn storage_and_management_flags_leave_the_compute_numbers_alone() {
    let full: serde_json::Value = serde_json::from_str(&ok(&railyard(["plan", "--json"]))).unwrap();
    let bare: serde_json::Value = serde_json::from_str(&ok(&railyard([
        "plan",
        "--json",
        "--storage",
        "none",
        "--management",
        "none",
    ])))
    .unwrap();
    for key in [
        "switches",
        "links",
        "cost_usd",
        "power_w",
        "oversubscription",
        "cables",
    ] {
        assert_eq!(full[key], bare[key], "{key}");
    }
    assert_eq!(full["storage"]["switches"]["total"], 16);
    assert_eq!(full["management"]["in_band"]["switches"]["total"], 8);
    assert!(bare.get("storage").is_none() && bare.get("management").is_none());
    // As a --vary key too, with the value named when it is not one.
    let out = railyard(["compare", "--vary", "storage=auto,off"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("valid: auto, none"),
        "{}",
        stderr(&out)
    );
}

/// Regression: `plan --storage compute` printed "254 storage NICs" beside the compute NICs as
/// `--storage auto` does, though the flag puts storage traffic on the compute fabric, through the
/// compute NICs (docs/guide/plan.md). The summary now says so, and says the storage NICs carry none
/// of it; summary.json keeps the count and says where storage runs; the compute numbers are those
/// of `--storage none`.
#[test]
fn regression_plan_storage_compute_printed_the_storage_nics_as_used() {
    let text = ok(&railyard(["plan", "--storage", "compute"]));
    assert!(
        text.contains(
            "1,016 compute NICs (ConnectX-7, NIC:GPU 1:1), storage through the compute NICs (254 storage NICs unused), GPUDirect RDMA on"
        ),
        "{text}"
    );
    assert!(!text.contains("NIC:GPU 1:1), 254 storage NICs"), "{text}");
    let auto = ok(&railyard(["plan"]));
    assert!(
        auto.contains("NIC:GPU 1:1), 254 storage NICs, GPUDirect"),
        "{auto}"
    );
    let json = |storage: &str| -> serde_json::Value {
        serde_json::from_str(&ok(&railyard(["plan", "--json", "--storage", storage]))).unwrap()
    };
    let (compute, none) = (json("compute"), json("none"));
    assert_eq!(compute["storage_on_compute"], true);
    assert_eq!(compute["storage_nics"], 254);
    assert!(none.get("storage_on_compute").is_none());
    assert!(compute.get("storage").is_none());
    for key in ["switches", "links", "cost_usd", "power_w", "nics"] {
        assert_eq!(compute[key], none[key], "{key}");
    }
}

/// cabling.csv's rack columns (`a_row,a_rack,a_u,b_row,b_rack,b_u`, after the first twelve): every
/// cable names both ends' row, rack and lowest rack unit; a device stands in one place; no two
/// devices of a rack share a unit (servers 8U as DGX H100 in servers.toml, QM9700 switches 1U as
/// in switches.toml); and every server-leaf run is the layout's run between the two racks
/// (`(|dx| + |dy| + 2 x tray drop) x (1 + slack)`, the in-rack run in one rack), for every leaf
/// placement.
#[test]
fn cabling_csv_places_both_ends_of_every_cable_in_a_rack() {
    let preset = include_str!("../../spec/presets/dgx-h100-superpod.toml");
    let (base, _) = preset.split_once("[layout]").unwrap();
    let (rack_pitch, row_pitch, tray, in_rack, slack) = (0.7, 3.0, 1.5, 2.0, 0.1);
    for placement in ["end-of-row", "middle-of-row", "top-of-rack"] {
        let tmp = tempfile::tempdir().unwrap();
        let spec = format!(
            "{base}[layout]\nservers_per_rack = 4\nracks_per_row = 8\nleaf_placement = \"{placement}\"\n\
             switches_per_rack = 16\nrack_pitch_m = {rack_pitch}\nrow_pitch_m = {row_pitch}\n\
             tray_drop_m = {tray}\nin_rack_m = {in_rack}\nslack = {slack}\n"
        );
        write(tmp.path(), "spec.toml", &spec);
        ok(&railyard_in(
            tmp.path(),
            ["plan", "--spec", "spec.toml", "--out", "out"],
        ));
        let csv = std::fs::read_to_string(tmp.path().join("out/cabling.csv")).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(
            header,
            [
                "id",
                "type",
                "part",
                "length_m",
                "tier",
                "a_device",
                "a_port",
                "b_device",
                "b_port",
                "a_transceiver",
                "b_transceiver",
                "run_m",
                "a_row",
                "a_rack",
                "a_u",
                "b_row",
                "b_rack",
                "b_u",
                "assembly"
            ]
        );
        // Device -> (row, rack, lowest unit).
        let mut at: std::collections::BTreeMap<String, (u32, u32, u32)> = Default::default();
        let mut server_leaf = 0;
        for line in lines {
            let c: Vec<&str> = line.split(',').collect();
            assert_eq!(c.len(), header.len(), "{placement}: {line}");
            let place = |i: usize| -> (u32, u32, u32) {
                let n = |j: usize| {
                    c[j].parse::<u32>().unwrap_or_else(|_| {
                        panic!("{placement}: column {} empty: {line}", header[j])
                    })
                };
                let p = (n(i), n(i + 1), n(i + 2));
                assert!(p.0 >= 1 && p.1 >= 1 && p.2 >= 1, "{placement}: {line}");
                p
            };
            let ends = [(c[5], place(12)), (c[7], place(15))];
            for (device, p) in ends {
                let was = at.entry(device.to_string()).or_insert(p);
                assert_eq!(*was, p, "{placement}: {device} stands in two places");
            }
            if c[4] == "server-leaf" {
                server_leaf += 1;
                let ((_, a), (_, b)) = (ends[0], ends[1]);
                let want = if (a.0, a.1) == (b.0, b.1) {
                    in_rack
                } else {
                    (f64::from(a.1.abs_diff(b.1)) * rack_pitch
                        + f64::from(a.0.abs_diff(b.0)) * row_pitch
                        + 2.0 * tray)
                        * (1.0 + slack)
                };
                let run: f64 = c[11].parse().unwrap();
                let length: f64 = c[3].parse().unwrap();
                assert!(
                    (run - want).abs() < 0.006,
                    "{placement}: run {run}, racks give {want}: {line}"
                );
                assert!(
                    length + 1e-9 >= run,
                    "{placement}: {length} m cable on a {run} m run"
                );
            }
        }
        assert_eq!(server_leaf, 1016, "{placement}");
        // No two devices share a unit of one rack.
        let mut racks: std::collections::BTreeMap<(u32, u32), Vec<(u32, &str)>> =
            Default::default();
        for (device, (row, rack, u)) in &at {
            racks.entry((*row, *rack)).or_default().push((*u, device));
        }
        let mut shared_racks = 0;
        for ((row, rack), mut devices) in racks {
            devices.sort();
            let kinds: std::collections::BTreeSet<bool> =
                devices.iter().map(|(_, d)| d.contains("-srv")).collect();
            shared_racks += usize::from(kinds.len() == 2);
            for w in devices.windows(2) {
                let ((u, lower), (next, upper)) = (w[0], w[1]);
                let height = if lower.contains("-srv") { 8 } else { 1 };
                assert!(
                    u + height <= next,
                    "{placement}: row {row} rack {rack}: {lower} (U{u}, {height}U) and {upper} (U{next}) overlap"
                );
            }
        }
        // Leaves stand among the servers only where placed in their racks.
        assert_eq!(shared_racks > 0, placement == "top-of-rack", "{placement}");
    }
}

/// `compare` takes `train`'s recipe flags (uneven stages, interleaving, FP8, FP8 dispatch, expert
/// overlap) and prices each design's step exactly as `train` does with them.
#[test]
fn compare_prices_the_step_with_the_recipe_flags_of_train() {
    let base = [
        "--servers",
        "4",
        "--model",
        "llama3-70b",
        "--pp",
        "2",
        "--json",
    ];
    // A mixture of experts with expert parallelism, for the flags that act on its all-to-all.
    let moe = [
        "--servers",
        "4",
        "--model",
        "mixtral-8x7b",
        "--tp",
        "2",
        "--ep",
        "8",
        "--json",
    ];
    let step_of = |base: &[&str], compare: bool, extra: &[&str]| -> f64 {
        let mut argv: Vec<&str> = if compare {
            vec!["compare", "dgx-h100-superpod", "dgx-h100-superpod:name=b"]
        } else {
            vec!["train", "dgx-h100-superpod"]
        };
        argv.extend_from_slice(base);
        argv.extend_from_slice(extra);
        let v: Value = serde_json::from_str(&ok(&railyard(&argv))).unwrap();
        let t = if compare {
            &v["designs"][0]["performance"]["step_time_s"]
        } else {
            &v["step_time_s"]
        };
        t.as_f64().unwrap()
    };
    let step = |compare: bool, extra: &[&str]| step_of(&base, compare, extra);
    let plain = step(true, &[]);
    for extra in [
        &["--stage-layers", "38,42"][..],
        &["--vp", "2"],
        &["--precision", "fp8"],
    ] {
        let c = step(true, extra);
        assert_eq!(c, step(false, extra), "{extra:?}");
        assert_ne!(c, plain, "{extra:?} changes nothing");
    }
    let moe_plain = step_of(&moe, true, &["--precision", "fp8"]);
    for extra in [
        &["--precision", "fp8", "--fp8-dispatch"][..],
        &["--precision", "fp8", "--ep-overlap"],
    ] {
        let c = step_of(&moe, true, extra);
        assert_eq!(c, step_of(&moe, false, extra), "{extra:?}");
        assert_ne!(c, moe_plain, "{extra:?} changes nothing");
    }
    assert!(step(true, &["--stage-layers", "38,42"]) > plain);
    assert!(step(true, &["--precision", "fp8"]) < plain);
    for (bad, names) in [
        (&["--fp8-dispatch"][..], "--fp8-dispatch"),
        (&["--stage-layers", "1,2"], "--stage-layers"),
        (&["--precision", "fp4"], "bf16"),
    ] {
        let mut argv = vec!["compare", "dgx-h100-superpod", "dgx-h100-superpod:name=b"];
        argv.extend_from_slice(&base);
        argv.extend_from_slice(bad);
        let out = railyard(&argv);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(names), "{bad:?}: {err}");
        assert!(out.stdout.is_empty(), "{bad:?}");
    }
}

/// `compare` takes `sim collective`'s and `train`'s per-run flags: `--algo` (and `algo=` per
/// design) sets the all-reduce row's algorithm, `--seed` the ECMP hash, `--qps-per-connection`
/// (and its pair) the queue pairs ECMP spreads, `--fail-links N` takes cables down,
/// `--host-memory-gbs` bounds GPUDirect-off traffic; each changes the busbw where it should, and
/// bad values are refused with exit 2 and the valid choices.
#[test]
fn compare_takes_the_simulation_flags_of_sim_and_train() {
    let busbw = |args: &[&str]| -> Vec<(f64, f64)> {
        let mut argv = vec!["compare", "--perf", "--json"];
        argv.extend_from_slice(args);
        let v: Value = serde_json::from_str(&ok(&railyard(&argv))).unwrap();
        v["designs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let p = &d["performance"];
                (
                    p["allreduce_busbw_1g_gbs"].as_f64().unwrap(),
                    p["alltoall_busbw_1g_gbs"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let two = ["seed-leaf-spine", "seed-leaf-spine:name=b"];
    let with = |extra: &[&str]| -> Vec<(f64, f64)> {
        let mut a: Vec<&str> = two.to_vec();
        a.extend_from_slice(extra);
        busbw(&a)
    };
    // --algo: ring and tree differ on all-reduce; all-to-all has no algorithm to choose.
    let ring = with(&["--algo", "ring"]);
    let tree = with(&["--algo", "tree"]);
    assert!((ring[0].0 - tree[0].0).abs() > 1.0, "{ring:?} {tree:?}");
    assert_eq!(ring[0].1, tree[0].1);
    // Per design, as a pair and a sweep: the same numbers as the flag.
    let per_design = busbw(&["seed-leaf-spine", "--vary", "algo=ring,tree"]);
    assert_eq!(per_design, [ring[0], tree[0]]);
    let table = ok(&railyard([
        "compare",
        "seed-leaf-spine:algo=ring",
        "seed-leaf-spine:algo=tree",
        "--perf",
    ]));
    assert!(table.contains("all-reduce algorithm"), "{table}");
    // --seed moves the ECMP hash; D-mod-K does not hash.
    let ecmp = |seed: &str, qps: &str| {
        with(&[
            "--routing",
            "ecmp",
            "--seed",
            seed,
            "--qps-per-connection",
            qps,
        ])[0]
    };
    assert_ne!(ecmp("0", "1").0, ecmp("2", "1").0);
    // D-mod-K hashes nothing: --seed and --qps-per-connection change nothing there, and are
    // refused (`compare_refuses_flags_that_change_nothing`).
    // More queue pairs spread all-reduce over more spines: the flag and the pair agree.
    let (one, four) = (ecmp("0", "1"), ecmp("0", "4"));
    assert!(four.0 > one.0, "{one:?} {four:?}");
    let pair = busbw(&[
        "seed-leaf-spine",
        "--vary",
        "qps-per-connection=1,4",
        "--routing",
        "ecmp",
    ]);
    assert_eq!(pair, [one, four]);
    // --fail-links takes cables of every design down: less bandwidth, the same for the same seed.
    let whole = with(&[])[0];
    let failed = with(&["--fail-links", "8", "--seed", "1"]);
    assert!(failed[0].1 < whole.1, "{failed:?} vs {whole:?}");
    assert_eq!(failed[0], failed[1]);
    // --host-memory-gbs bounds GPUDirect-off traffic through host memory.
    let slow = with(&["--gpudirect", "off", "--host-memory-gbs", "20"])[0];
    let fast = with(&["--gpudirect", "off"])[0];
    assert!(slow.0 < fast.0, "{slow:?} vs {fast:?}");

    for (args, needle) in [
        (
            &["--algo", "bogus"][..],
            "for '--algo <A>': `bogus` is not a valid choice; valid: ring, tree,",
        ),
        (
            &["--qps-per-connection", "0"],
            "for '--qps-per-connection <N>': 0 is out of range; valid: 1 to 128",
        ),
        (
            &["--vary", "qps-per-connection=0,1"],
            "qps-per-connection=0: 0 is out of range; valid: 1 to 128",
        ),
        (
            &["--vary", "algo=ring,bogus"],
            "algo=bogus: `bogus` is not a valid choice; valid: ring, tree,",
        ),
        (
            &["--host-memory-gbs", "0"],
            "--host-memory-gbs 0: must be a number of GB/s above zero",
        ),
        (
            &["--fail-links", "100000"],
            "--fail-links 100000: the design has 80 switch-to-switch cables",
        ),
        (&["--seed", "x"], "invalid value 'x' for '--seed <N>'"),
    ] {
        let mut argv = vec![
            "compare",
            "seed-leaf-spine",
            "seed-leaf-spine:name=b",
            "--perf",
        ];
        argv.extend_from_slice(args);
        let o = railyard(&argv);
        assert_eq!(o.status.code(), Some(2), "{argv:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{argv:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{argv:?}");
    }
}

/// Regression: `compare` (and `report --compare`) took flags and pairs that change nothing and
/// ignored them: the training flags and layout pairs without `--model`, `--algo` without `--perf`,
/// routing, PXN, cables down and host memory without `--perf` or `--model`, SHARP without those or
/// `--html`, `--seed` with neither `--fail-links` nor an ECMP busbw row, queue pairs without an
/// ECMP busbw row. Each is refused before any design is built (exit 2, nothing printed), naming
/// the flag (or the pair and its design) and what it needs.
#[test]
fn compare_refuses_flags_that_change_nothing() {
    let two = ["compare", "seed-leaf-spine", "seed-two-switch"];
    for (args, needle) in [
        (&["--tp", "4"][..], "--tp has no effect without --model or --model-file"),
        (&["--efficiency", "0.5"], "--efficiency has no effect without --model"),
        (&["--recompute"], "--recompute has no effect without --model"),
        (
            &["--vary", "zero=1,3"],
            "zero=1 (design seed-leaf-spine:zero=1) has no effect without --model",
        ),
        (
            &["--model", "llama3-8b", "--algo", "ring"],
            "--algo has no effect without --perf",
        ),
        (
            &["--routing", "ecmp"],
            "--routing has no effect without --perf or --model",
        ),
        (&["--pxn", "on"], "--pxn has no effect without --perf or --model"),
        (
            &["--fail-links", "1"],
            "--fail-links has no effect without --perf or --model",
        ),
        (
            &["--host-memory-gbs", "100"],
            "--host-memory-gbs has no effect without --perf or --model",
        ),
        (
            &["--sharp", "off"],
            "--sharp has no effect without --perf, --model or --html",
        ),
        (
            &["--perf", "--seed", "2"],
            "--seed 2 has no effect here: it seeds the cables --fail-links and --fail-host-links take down and the ECMP hash",
        ),
        (
            &["--model", "llama3-8b", "--routing", "ecmp", "--seed", "2"],
            "--seed 2 has no effect here",
        ),
        (
            &["--perf", "--qps-per-connection", "4"],
            "--qps-per-connection 4 has no effect here",
        ),
        (
            &["--json", "--width", "100"],
            "--width 100 has no effect with --json",
        ),
    ] {
        let o = railyard([&two[..], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    // A pair on one design that hashes nothing, and a flag every ECMP design overrides.
    for (args, needle) in [
        (
            &[
                "compare",
                "seed-leaf-spine:qps-per-connection=2",
                "seed-two-switch:routing=ecmp",
                "--perf",
            ][..],
            "qps-per-connection=2 (design seed-leaf-spine:qps-per-connection=2) has no effect",
        ),
        (
            &[
                "compare",
                "seed-leaf-spine:routing=ecmp,qps-per-connection=2",
                "seed-two-switch",
                "--perf",
                "--qps-per-connection",
                "4",
            ],
            "--qps-per-connection 4 has no effect here",
        ),
        (
            &[
                "report",
                "--compare",
                "seed-leaf-spine",
                "seed-two-switch",
                "-o",
                "never.html",
                "--algo",
                "ring",
            ],
            "--algo has no effect in report --compare",
        ),
        // A plain report (no --compare) took the decision report's flags and ignored them.
        (
            &["report", "-o", "never.html", "--tp", "4"],
            "--tp has no effect on a plain report: it belongs to the decision report",
        ),
        (
            &["report", "-o", "never.html", "--routing", "adaptive"],
            "--routing has no effect on a plain report",
        ),
        (
            &["report", "-o", "never.html", "--sharp", "on", "--no-sim"],
            "--sharp has no effect with --no-sim",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = railyard_in(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(files_under(dir.path()).is_empty());
    }
    // A calibration changes only what is simulated: refused where nothing is, taken with --perf.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "format = \"railyard-calibration/1\"\nnic_gbs = 20\nlatency_us = 5\n",
    )
    .unwrap();
    let o = railyard_in(
        dir.path(),
        [&two[..], &["--calibration", "c.toml"]].concat(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--calibration has no effect without --perf, --model or --html"),
        "{}",
        stderr(&o)
    );
    ok(&railyard_in(
        dir.path(),
        [&two[..], &["--calibration", "c.toml", "--perf"]].concat(),
    ));
    // Where they matter they are taken: the seed of cables down, the ECMP knobs on an ECMP design.
    for args in [
        &[
            "seed-leaf-spine:routing=ecmp",
            "seed-two-switch",
            "--perf",
            "--seed",
            "2",
            "--qps-per-connection",
            "2",
        ][..],
        &[
            "seed-leaf-spine",
            "seed-two-switch",
            "--perf",
            "--fail-links",
            "1",
            "--seed",
            "2",
        ],
    ] {
        ok(&railyard([&["compare"][..], args].concat()));
    }
}

/// Every file under `dir`, as paths relative to it with `/`, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// Issue 16: every command that writes a file says what it wrote: each file it leaves is named on
/// stdout or stderr (`railyard: wrote out/bom.csv, ...`, `wrote topo.txt`), with the path given.
#[test]
fn every_command_that_writes_a_file_names_each_file_it_wrote() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dump = data.join("ib/tests/data/real/sx6036-qdr-fdr10-2014.ibnetdiscover");
    let log =
        data.join("sim/tests/data/nccl-tests/nccl-tests-issue309-h100-2node-ib-all_reduce.txt");
    let flows = "0 3 1000000\n1 2 1000000\n";
    let commands: Vec<Vec<&str>> = vec![
        vec!["plan", "seed-two-switch", "--out", "out"],
        vec!["report", "seed-two-switch", "-o", "r.html", "--png", "png"],
        vec![
            "compare",
            "seed-two-switch",
            "seed-leaf-spine",
            "--html",
            "c.html",
        ],
        vec![
            "report",
            "--compare",
            "seed-two-switch",
            "seed-leaf-spine",
            "-o",
            "d.html",
        ],
        vec![
            "export",
            "ibnet",
            "seed-two-switch",
            "-o",
            "topo.txt",
            "--opensm-dir",
            "osm",
        ],
        vec!["export", "lldp", "roce-400g-sn5600", "-o", "tables"],
        vec![
            "import",
            "ibnet",
            dump.to_str().unwrap(),
            "-o",
            "imported.json",
        ],
        vec![
            "sim",
            "flows",
            "--hosts",
            "4",
            "--hosts-per-leaf",
            "2",
            "--spines",
            "1",
            "--link-gbps",
            "100",
            "--link-latency-ns",
            "150",
            "--flows",
            "flows.txt",
            "--fct",
            "fct.csv",
        ],
        vec!["calibrate", log.to_str().unwrap(), "-o", "fit/cal.toml"],
    ];
    for argv in commands {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "flows.txt", flows);
        let o = railyard_in(tmp.path(), &argv);
        let said = format!("{}{}", stdout(&o), stderr(&o));
        assert_eq!(o.status.code(), Some(0), "{argv:?}: {said}");
        let written: Vec<String> = files_under(tmp.path())
            .into_iter()
            .filter(|f| f != "flows.txt")
            .collect();
        assert!(!written.is_empty(), "{argv:?} wrote nothing");
        for f in &written {
            assert!(
                said.lines()
                    .any(|l| l.contains("wrote") && l.contains(f.as_str())),
                "{argv:?} wrote {f} without saying so:\n{said}"
            );
        }
    }
}

/// Regression: a count of one read "1 servers", "1 scalable units", "1 storage system ports",
/// "1 server leaves", "1 switches" (plan), "1 servers x 8 H100" (sim collective), "1 spines"
/// (sim flows) and "1 micro-batches" (train). Each now takes its noun in the number it has.
#[test]
fn a_count_of_one_takes_the_singular() {
    let plan = ok(&railyard(["plan", "--servers", "1"]));
    for want in [
        "  1 server, 8 GPUs",
        "1 scalable unit of 32 servers",
        "2 server ports, 1 storage system port\n",
        "  1 server leaf of 2 server ports + 2 uplinks",
    ] {
        assert!(plan.contains(want), "{want:?} missing in:\n{plan}");
    }
    let two = ok(&railyard(["plan", "seed-two-switch", "--servers", "1"]));
    assert!(two.contains("  1 switch with 22 of 48 ports used"), "{two}");
    let sim = ok(&railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "1",
        "-b",
        "1M",
        "-e",
        "1M",
    ]));
    assert!(sim.contains(": 1 server x 8 H100 = 8 ranks,"), "{sim}");
    let flows = ok(&railyard([
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
        "--generate",
        "lognormal:flows=1,median=1",
    ]));
    assert!(
        flows.starts_with("leaf-spine: 2 hosts on 2 leaves (1 per leaf), 1 spine, "),
        "{flows}"
    );
    let train = ok(&railyard([
        "train",
        "--servers",
        "1",
        "--model",
        "llama3-8b",
        "--tp",
        "1",
        "--pp",
        "8",
        "--global-batch",
        "1",
    ]));
    assert!(train.contains("global batch 1 (1 micro-batch);"), "{train}");
    for all in [&plan, &two, &sim, &flows, &train] {
        for bad in [
            "1 servers",
            "1 spines",
            "1 switches",
            "1 micro-batches",
            "1 scalable units",
        ] {
            assert!(!all.contains(&format!(" {bad}")), "{bad:?} in:\n{all}");
        }
    }
}

/// Regression: a design of one switch read "worst case 1 switch hops" in the plan and the report.
#[test]
fn one_switch_hop_is_singular() {
    let plan = ok(&railyard(["plan", "seed-leaf-spine", "--servers", "3"]));
    assert!(plan.contains("; worst case 1 switch hop\n"), "{plan}");
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    ok(&railyard([
        "report",
        "seed-leaf-spine",
        "--servers",
        "3",
        "--no-sim",
        "-o",
        html.to_str().unwrap(),
    ]));
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(
        text.contains("worst case 1 switch hop."),
        "no singular hop in the report"
    );
    assert!(!text.contains("1 switch hops"));
}

/// The note under `oversubscription:` in `plan`'s summary for `args` (empty when there is none).
fn oversubscription_note(args: &[&str]) -> String {
    let text = ok(&railyard(args));
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("oversubscription:"));
    lines.next().expect("an oversubscription line");
    lines
        .next()
        .filter(|l| l.starts_with("  (below"))
        .unwrap_or_default()
        .to_string()
}

/// Regression: the note on a leaf ratio below the one asked said "no leaf is full ... so leaves
/// have more uplink than host capacity" for full leaves at 32/22 = 1.45:1 (whole uplinks), for 20
/// hosts on 16 uplinks (1.25:1, less uplink than host capacity), and for 1:1 under 1.0001:1 asked.
/// It gives the true reason in each case, and nothing where the ratios shown are the same.
#[test]
fn the_note_on_a_leaf_ratio_below_the_one_asked_gives_the_true_reason() {
    assert_eq!(
        oversubscription_note(&["plan", "--oversubscription", "1.5"]),
        "  (below 1.5:1 asked: uplinks come whole: 32 hosts at 1.5:1 need 21.33 uplinks, so 22 (1.45:1))"
    );
    assert_eq!(
        oversubscription_note(&["plan", "--servers", "20", "--oversubscription", "2"]),
        "  (below 2:1 asked: no leaf is full: the fullest has 20 of its 32 host ports cabled, and units, leaves and their uplinks are built whole, so it has 20 hosts on 16 uplinks: 1.25:1)"
    );
    assert_eq!(
        oversubscription_note(&["plan", "--oversubscription", "1.0001"]),
        ""
    );
    // More uplinks than the ratio needs, to balance the leaves over fewer spines.
    let note = oversubscription_note(&["plan", "--oversubscription", "3"]);
    assert!(
        note.contains("12 uplinks where 11 meet the ratio"),
        "{note}"
    );
    for args in [
        &["plan", "--oversubscription", "1.5"][..],
        &["plan", "--servers", "20", "--oversubscription", "2"],
        &["plan", "--oversubscription", "3"],
    ] {
        let note = oversubscription_note(args);
        assert!(
            !note.contains("more uplink than host capacity"),
            "{args:?}: {note}"
        );
    }
}

/// Regression: conflicting values were accepted and the last won: `--vary` of one key twice
/// (labelled "oversubscription=1 oversubscription=3" for 2.67:1 leaves), a key twice in one
/// design, `--nic-ratio` with a different `--nics-per-server` (1:1 in either order), and `name=X`
/// on two designs. Each is refused with both values named, and nothing is written.
#[test]
fn conflicting_values_are_refused_naming_both() {
    for (args, needles) in [
        (
            &[
                "compare",
                "--vary",
                "oversubscription=1,2",
                "--vary",
                "oversubscription=3,4",
            ][..],
            &[
                "--vary oversubscription=1,2",
                "--vary oversubscription=3,4",
                "same key",
            ][..],
        ),
        (
            &[
                "compare",
                "dgx-h100-superpod:servers=4,servers=8",
                "seed-two-switch",
            ],
            &["servers is given twice", "servers=4", "servers=8"],
        ),
        (
            &[
                "compare",
                "seed-two-switch:name=X",
                "seed-leaf-spine:name=X",
            ],
            &[
                "name=X names two designs",
                "seed-two-switch:name=X",
                "seed-leaf-spine:name=X",
            ],
        ),
        (
            &[
                "compare",
                "seed-two-switch:servers=4",
                "seed-leaf-spine",
                "--vary",
                "servers=8,16",
            ],
            &["--vary servers=8,16", "servers=4"],
        ),
        (
            &["plan", "--nic-ratio", "1:1", "--nics-per-server", "2"],
            &["1:1 gives 8 NICs", "nics-per-server 2"],
        ),
        (
            &["plan", "--nics-per-server", "2", "--nic-ratio", "1:1"],
            &["1:1 gives 8 NICs", "nics-per-server 2"],
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let o = railyard_in(tmp.path(), args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: lacks `{n}`: {err}");
        }
        assert!(entries(tmp.path()).is_empty());
    }
    // Values that agree are one design.
    let j = plan_json(&["--nics-per-server", "8", "--nic-ratio", "1:1"]);
    assert_eq!(j["nics"], 1016);
}

/// Regression: `--gpus-per-server 6 --nic-ratio 1:4` listed "1:1, 1:2, 1:4, 1:8" as valid, and
/// 1:4 and 1:8 are not for 6 GPUs. The ratios listed are those that fit the GPUs per server.
#[test]
fn a_wrong_nic_ratio_lists_the_ratios_valid_for_the_gpus_per_server() {
    assert_rejected(
        &[],
        &["--gpus-per-server", "6", "--nic-ratio", "1:4"],
        &[
            "nic-ratio",
            "valid: 1:1, 1:2, 1:3, 1:6 for 6 GPUs per server",
        ],
    );
}

/// Regression: errors listed wrong valid values: "valid: at most 0 servers of 64 NICs" on one
/// switch; "valid: 1 to 63" for isl_links whatever the host ports need; and a price written as a
/// string gave "data did not match any variant of untagged enum PriceEntry".
#[test]
fn errors_list_the_values_that_are_valid_here() {
    assert_rejected(
        &[],
        &[
            "--topology",
            "single-switch",
            "--servers",
            "1",
            "--nics-per-server",
            "64",
            "--tech",
            "ib-hdr",
        ],
        &[
            "no server of 64 NICs fits one switch",
            "at most 40 NICs",
            "40-port",
        ],
    );
    let preset = include_str!("../../spec/presets/seed-two-switch.toml");
    assert!(preset.contains("isl_links = 4"));
    // 9 servers of 8 NICs put 36 host ports on each 40-port switch: 4 are left for links between them.
    assert_rejected(
        &[(
            "isl.toml",
            &preset.replace("isl_links = 4", "isl_links = 30"),
        )],
        &["--spec", "{dir}/isl.toml"],
        &["fabric.isl_links", "36 host ports", "valid: 1 to 4"],
    );
    assert_rejected(
        &[(
            "isl.toml",
            &preset.replace("isl_links = 4", "isl_links = 100"),
        )],
        &["--spec", "{dir}/isl.toml", "--servers", "20"],
        &[
            "fabric.isl_links",
            "valid: 1 to 39, and at most 9 servers of 8 NICs",
        ],
    );
    assert_rejected(
        &[("p.toml", "[price_usd]\n\"QM9700\" = \"28000\"\n")],
        &["--prices", "{dir}/p.toml"],
        &[
            "p.toml",
            "line 2",
            "price_usd.QM9700",
            "a number of US dollars",
            "per_m_usd",
        ],
    );
}

/// Regression: the management notes said "1 switch with 40 of 48 ports used" for seed-two-switch's
/// out-of-band network, which uses 36 (40 is the most per switch), and "4 uplinks per leaf" for an
/// in-band pair with no spines and no uplink cabled; `oob_ports_per_switch = 1000` was cut to 48.
#[test]
fn management_notes_count_the_ports_used_and_too_many_ports_per_switch_are_refused() {
    let text = ok(&railyard(["plan", "seed-two-switch"]));
    assert!(
        text.contains("1 switch with 36 of 48 ports used (at most 40 per switch)"),
        "{text}"
    );
    assert!(
        text.contains("2 leaves in a pair of 58 host ports each")
            && text.contains("no uplinks cabled")
            && !text.contains("4 uplinks per leaf"),
        "{text}"
    );
    let text = ok(&railyard(["plan"]));
    assert!(text.contains("4 uplinks per leaf"), "{text}");
    assert!(
        text.contains(
            "8 switches with 319 of 384 ports used (40 on each but the last, which has 39)"
        ),
        "{text}"
    );
    let preset = include_str!("../../spec/presets/seed-two-switch.toml");
    let spec = format!("{preset}\n[management]\noob_ports_per_switch = 1000\n");
    assert!(!preset.contains("[management]"));
    assert_rejected(
        &[("oob.toml", &spec)],
        &["--spec", "{dir}/oob.toml"],
        &[
            "management.oob_ports_per_switch",
            "1000",
            "SN2201 has 48",
            "valid: 1 to 48",
        ],
    );
}

/// Regression: `catalog` took every design flag and ignored it, bad values too (`catalog gpu --gpu
/// X100 --switch nonexistent --spec /nonexistent.toml` exited 0; `catalog switch --tech ib-xdr`
/// listed every switch). It filters by --tech, --switch, --nic and --gpu, checks their values, and
/// refuses the flags that describe a design.
#[test]
fn catalog_filters_by_the_part_flags_and_refuses_the_design_flags() {
    let xdr = ok(&railyard(["catalog", "switch", "--tech", "ib-xdr"]));
    let all = ok(&railyard(["catalog", "switch"]));
    assert!(xdr.contains("Q3400") && !xdr.contains("QM9700"), "{xdr}");
    assert!(xdr.lines().count() < all.lines().count());
    // Every NIC, cable and transceiver listed for RoCE 400G carries it.
    let roce = ok(&railyard(["catalog", "nic", "--tech", "roce-400g"]));
    assert!(
        roce.lines().skip(1).all(|l| l.contains("roce-400g")),
        "{roce}"
    );
    assert!(
        roce.contains("ConnectX-7") && !roce.contains("ConnectX-6 "),
        "{roce}"
    );
    let one = ok(&railyard(["catalog", "gpu", "--gpu", "H100"]));
    assert_eq!(one.lines().count(), 2, "{one}");
    for (args, needles) in [
        (
            &[
                "catalog",
                "gpu",
                "--gpu",
                "X100",
                "--switch",
                "nonexistent",
                "--spec",
                "/nonexistent.toml",
            ][..],
            &[
                "--spec /nonexistent.toml does not apply",
                "--tech, --switch, --nic, --gpu",
            ][..],
        ),
        (
            &["catalog", "gpu", "--gpu", "X100"],
            &["--gpu X100", "valid: A100, B200, B300, GB200, GB300, H100, H20, H200, H800, MI300X, MI325X, MI355X"],
        ),
        (
            &["catalog", "switch", "--switch", "nonexistent"],
            &["--switch nonexistent", "QM9700"],
        ),
        (
            &["catalog", "--servers", "4"],
            &["--servers does not apply"],
        ),
        (&["catalog", "--tech", "ib-xdr2"], &["ib-xdr2", "ib-ndr"]),
    ] {
        let o = railyard(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: lacks `{n}`: {err}");
        }
        assert!(stdout(&o).is_empty());
    }
}

/// The two-switch design: the links between the switches are each switch's uplinks. Unset, there
/// are as many as the ratio asked needs (32 host ports per switch at 1:1: 32 links; at 4:1: 8),
/// and more servers than fit at that ratio are refused with how many fit; the seed's given 4
/// links for 36 host ports are 9:1, said as such (it printed "leaf 1:1" for both).
#[test]
fn two_switch_links_follow_the_ratio_asked() {
    let plan = |extra: &[&str]| {
        let mut args = vec!["plan", "--topology", "two-switch", "--servers", "8"];
        args.extend_from_slice(extra);
        stdout(&railyard(&args))
    };
    let t = plan(&[]);
    assert!(t.contains("  inter-switch        32\n"), "{t}");
    assert!(t.contains("oversubscription: leaf 1:1,"), "{t}");
    let t = plan(&["--oversubscription", "4"]);
    assert!(t.contains("  inter-switch         8\n"), "{t}");
    assert!(t.contains("oversubscription: leaf 4:1,"), "{t}");
    let o = railyard(["plan", "--topology", "two-switch", "--servers", "9"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("36 host ports per switch (9 servers x 4) at 1:1 need 36 links to the other switch, more than a 64-port QM9700 has left; valid: at most 8 servers"),
        "{e}"
    );
    let t = stdout(&railyard(["plan", "seed-two-switch"]));
    assert!(
        t.contains("oversubscription: leaf 9:1, spine -, core - (cabled; above the 1:1 asked: 36 host ports per switch on 4 links to the other, as fabric.isl_links gives; 1:1 asked needs 36)"),
        "{t}"
    );
}

/// A cage that carries more than one link takes one cable for all of them or transceivers: a
/// twin-port cable where its links all go to one cage, a splitter where they go to single-port
/// cages, optics where they go to different multi-port cages. The default design's DGX H100
/// twin-port cages send their two ports to two leaves (optics, as the DGX SuperPOD cables them);
/// a two-switch NDR design's four links between the switches run on two twin-port DACs (one bill
/// of materials line of 2, legs named in cabling.csv's `assembly`); the storage systems' ports are
/// reached over splitters. Nothing is left a straight cable into a shared cage (no warning, no
/// `shared_cage_cables`).
#[test]
fn shared_cages_take_twin_cables_splitters_or_optics() {
    let t = stdout(&railyard(["plan"]));
    assert!(!t.contains("warning:"), "{t}");
    // The storage fabric's 48 splitter legs are 24 cables, and 48 of its leaf-spine links run on
    // 24 twin-port DACs (a leaf's cage goes to one spine: `Wiring::upper_spread`).
    assert!(
        t.contains("  cables: 302 to devices, 240 leaf-spine links, on 494 cables (48 dac, 446 optics-mmf)\n"),
        "{t}"
    );
    let v = plan_json(&[]);
    assert!(v.get("shared_cage_cables").is_none(), "{v}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    ok(&railyard(["plan", "--out", dir.to_str().unwrap()]));
    let cabling = std::fs::read_to_string(dir.join("cabling.csv")).unwrap();
    let server_leaf: Vec<&str> = cabling
        .lines()
        .filter(|l| l.contains(",server-leaf,"))
        .collect();
    assert_eq!(server_leaf.len(), 1016);
    assert!(
        server_leaf.iter().all(|l| l.contains(",optics-mmf,")),
        "{cabling}"
    );
    let storage = std::fs::read_to_string(dir.join("storage-cabling.csv")).unwrap();
    let splitter: Vec<&str> = storage
        .lines()
        .filter(|l| l.contains("DACS-OSFP-2x400G"))
        .collect();
    assert_eq!(splitter.len(), 48, "{storage}");
    let bom = std::fs::read_to_string(dir.join("storage-bom.csv")).unwrap();
    assert!(bom.contains("cable,DACS-OSFP-2x400G,NDR twin-port OSFP to 2 x 400G OSFP passive copper splitter,1,24,"), "{bom}");

    let dir = tmp.path().join("two");
    let t = ok(&railyard([
        "plan",
        "seed-two-switch",
        "--tech",
        "ib-ndr",
        "--out",
        dir.to_str().unwrap(),
    ]));
    assert!(
        t.contains("  dac        DAC-OSFP-2x400G         1 m        2\n"),
        "{t}"
    );
    let bom = std::fs::read_to_string(dir.join("bom.csv")).unwrap();
    assert!(bom.contains("cable,DAC-OSFP-2x400G,"), "{bom}");
    let line = bom
        .lines()
        .find(|l| l.starts_with("cable,DAC-OSFP-2x400G,"))
        .unwrap();
    assert_eq!(line.split(',').nth(4), Some("2"), "{line}");
    let cabling = std::fs::read_to_string(dir.join("cabling.csv")).unwrap();
    assert!(cabling.lines().next().unwrap().ends_with(",b_u,assembly"));
    let isl: Vec<(&str, &str)> = cabling
        .lines()
        .filter(|l| l.contains(",inter-switch,"))
        .map(|l| (l.split(',').nth(7).unwrap(), l.rsplit(',').next().unwrap()))
        .collect();
    assert_eq!(
        isl.iter().map(|x| x.1).collect::<Vec<_>>(),
        ["C0000073", "C0000073", "C0000075", "C0000075"],
        "{cabling}"
    );
}

/// `compare --json` records each design's overrides in its summary as `plan --json` does: the
/// same summary for `dgx-h100-superpod:servers=257` and `plan --servers 257`, and none for a
/// preset compared as it is.
#[test]
fn compare_json_summaries_name_their_overrides_as_plan_does() {
    let o = railyard([
        "compare",
        "dgx-h100-superpod:servers=257",
        "seed-two-switch",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let summary = &v["designs"][0]["summary"];
    assert_eq!(
        summary["overrides"],
        serde_json::json!(["servers=257"]),
        "{summary}"
    );
    assert!(v["designs"][1]["summary"].get("overrides").is_none());
    let p: Value =
        serde_json::from_str(&stdout(&railyard(["plan", "--servers", "257", "--json"]))).unwrap();
    assert_eq!(p["overrides"], summary["overrides"]);
    assert_eq!(p["name"], summary["name"]);
}

/// An error on a value a flag gave names the flag (it blamed the preset: "preset dgx-h100-superpod:
/// fabric.su_size: ..."), and a scalable-unit size on a topology without units is refused, not kept
/// in the design's name while changing nothing.
#[test]
fn errors_name_the_flag_that_gave_the_value_and_su_size_needs_units() {
    for (args, want) in [
        (
            &["plan", "--su-size", "33"][..],
            "--su-size (fabric.su_size of preset dgx-h100-superpod): 33 servers per unit",
        ),
        (
            &["plan", "--switch", "SN5600"],
            "--switch (fabric.switch of preset dgx-h100-superpod): SN5600 cannot carry ib-ndr",
        ),
        (
            &["plan", "--topology", "fat-tree", "--su-size", "16"],
            "--su-size (fabric.su_size of preset dgx-h100-superpod): 16 has no effect on a fat-tree fabric",
        ),
        (
            &["plan", "seed-edr-fat-tree", "--su-size", "8"],
            "8 has no effect on a fat-tree fabric",
        ),
    ] {
        let o = railyard(args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(o.stdout.is_empty());
    }
    // A preset's own unit size stays where the topology changes (the reference's, not the user's).
    ok(&railyard(["plan", "--topology", "fat-tree"]));
}
