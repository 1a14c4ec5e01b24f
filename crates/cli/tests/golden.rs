//! Recorded outputs: every command on every preset, byte for byte.
//!
//! Each case runs the real binary in a fresh working directory (outputs go to relative paths, so
//! nothing in them depends on where the test runs) and is compared with its record under
//! `tests/golden/<case>.txt`: exit status, stderr, stdout (in full up to 64 KiB, else its length and
//! hash) and the length and hash of every file it writes. A refactor must leave every record as it
//! is; a change that means to move numbers or text rewrites the records with
//!
//! ```sh
//! RAILYARD_GOLDEN=update cargo test -p railyard --test golden
//! ```
//!
//! and the diff of `tests/golden/` shows what moved, for review.

mod common;

use common::railyard_in;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Stdout up to this size is recorded in full; larger output by length and hash.
const INLINE: usize = 64 * 1024;

const PRESETS: [&str; 9] = [
    "dgx-h100-superpod",
    "dgx-a100-superpod",
    "seed-two-switch",
    "seed-leaf-spine",
    "seed-edr-fat-tree",
    "h100-nic-1to4",
    "roce-400g-sn5600",
    "rail-only-h100",
    "b200-xdr",
];

/// A case: its record's name, the arguments, the files it writes (relative to its directory) and any
/// input files it needs (name, contents).
struct Case {
    name: String,
    args: Vec<String>,
    outputs: Vec<&'static str>,
    inputs: Vec<(&'static str, &'static str)>,
}

fn case(name: impl Into<String>, args: &[&str]) -> Case {
    Case {
        name: name.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        outputs: Vec::new(),
        inputs: Vec::new(),
    }
}

const PLAN_FILES: [&str; 11] = [
    "out/bom.csv",
    "out/cabling.csv",
    "out/fabric.json",
    "out/report.html",
    "out/summary.json",
    "out/storage-bom.csv",
    "out/storage-cabling.csv",
    "out/in-band-bom.csv",
    "out/in-band-cabling.csv",
    "out/out-of-band-bom.csv",
    "out/out-of-band-cabling.csv",
];

const FLOWS: &str = "# a small mix: a permutation, an incast and late starts\n\
0 9 1000000\n1 10 1000000\n2 11 2000000\n3 12 500000\n4 0 1000000\n5 0 1000000\n6 0 1000000\n\
7 15 4000000 0.0001\n8 14 1000000 0.0002\n";

fn cases() -> Vec<Case> {
    let mut v = vec![
        case("presets", &["presets"]),
        case("catalog", &["catalog"]),
        case("catalog-switch", &["catalog", "switch"]),
        case(
            "compare-seeds",
            &[
                "compare",
                "seed-leaf-spine",
                "seed-two-switch",
                "seed-edr-fat-tree",
            ],
        ),
        case(
            "compare-vary-perf-model",
            &[
                "compare",
                "--vary",
                "nic-ratio=1:1,1:4",
                "--servers",
                "16",
                "--perf",
                "--model",
                "llama3-70b",
                "--pp",
                "4",
            ],
        ),
        case(
            "compare-rail-only-moe",
            &[
                "compare",
                "rail-only-h100",
                "dgx-h100-superpod",
                "--servers",
                "16",
                "--perf",
                "--model",
                "mixtral-8x7b",
                "--tp",
                "2",
                "--ep",
                "8",
                "--json",
            ],
        ),
        case(
            "compare-tech",
            &[
                "compare",
                "dgx-h100-superpod",
                "dgx-h100-superpod:tech=roce-400g",
            ],
        ),
        case(
            "compare-16-designs",
            &[
                "compare",
                "--servers",
                "16",
                "--vary",
                "nic-ratio=1:1,1:2,1:4,1:8",
                "--vary",
                "tech=ib-ndr,roce-400g",
                "--vary",
                "oversubscription=1,2",
            ],
        ),
        case(
            "compare-routing-per-design",
            &[
                "compare",
                "seed-leaf-spine:routing=adaptive",
                "seed-leaf-spine:routing=ecmp,pxn=on",
                "seed-leaf-spine:name=static",
                "--perf",
                "--model",
                "llama3-8b",
            ],
        ),
        case(
            "train-fail-links",
            &[
                "train",
                "seed-leaf-spine",
                "--servers",
                "8",
                "--model",
                "llama3-8b",
                "--fail-links",
                "8",
                "--seed",
                "1",
            ],
        ),
        case(
            "sim-collective-ecmp-failures",
            &[
                "sim",
                "collective",
                "allreduce",
                "--servers",
                "64",
                "--routing",
                "ecmp",
                "--fail-links",
                "4",
                "--seed",
                "1",
                "-b",
                "1M",
                "-e",
                "1G",
                "-f",
                "32",
            ],
        ),
        // Issue 15's case: the conventional 13-spine design is listed, dearer than the chosen one.
        case(
            "plan-edr-96-alternatives",
            &[
                "plan",
                "--servers",
                "96",
                "--gpus-per-server",
                "1",
                "--nics-per-server",
                "1",
                "--tech",
                "ib-edr",
                "--topology",
                "fat-tree",
                "--oversubscription",
                "2",
                "--alternatives",
                "3",
            ],
        ),
        case(
            "plan-alternatives-json",
            &["plan", "seed-leaf-spine", "--alternatives", "2", "--json"],
        ),
        case(
            "sim-collective-sendrecv-json",
            &["sim", "collective", "sendrecv", "--servers", "16", "--json"],
        ),
        case(
            "train-deepseek",
            &[
                "train",
                "--servers",
                "32",
                "--model",
                "deepseek-v3-like",
                "--ep",
                "8",
                "--json",
            ],
        ),
        case(
            "train-workload",
            &["train", "--servers", "16", "--workload", "wl.txt"],
        ),
    ];
    v.last_mut()
        .unwrap()
        .inputs
        .push(("wl.txt", include_str!("fixtures/simai-tp8-dp16.txt")));
    for (i, routing) in ["dmodk", "ecmp", "adaptive"].into_iter().enumerate() {
        let mut c = case(
            format!("sim-flows-{routing}"),
            &[
                "sim",
                "flows",
                "--hosts",
                "16",
                "--hosts-per-leaf",
                "4",
                "--spines",
                "2",
                "--link-gbps",
                "100",
                "--link-latency-ns",
                "150",
                "--flows",
                "flows.txt",
                "--routing",
                routing,
                "--fct",
                "fct.csv",
            ],
        );
        if i == 1 {
            c.args.push("--json".into());
        }
        c.inputs.push(("flows.txt", FLOWS));
        c.outputs.push("fct.csv");
        v.push(c);
    }
    for p in PRESETS {
        v.push(case(format!("{p}-plan"), &["plan", p]));
        let mut c = case(
            format!("{p}-plan-out"),
            &["plan", p, "--json", "--out", "out"],
        );
        c.outputs.extend(PLAN_FILES);
        v.push(c);
        v.push(case(
            format!("{p}-allreduce"),
            &[
                "sim",
                "collective",
                "allreduce",
                p,
                "-b",
                "8",
                "-e",
                "1G",
                "-f",
                "8",
            ],
        ));
        v.push(case(
            format!("{p}-alltoall-8-servers"),
            &[
                "sim",
                "collective",
                "alltoall",
                p,
                "--servers",
                "8",
                "-b",
                "1K",
                "-e",
                "1G",
                "-f",
                "32",
            ],
        ));
        v.push(case(
            format!("{p}-train-llama3-70b"),
            &["train", p, "--model", "llama3-70b", "--pp", "4"],
        ));
        let mut c = case(format!("{p}-report"), &["report", p, "-o", "report.html"]);
        c.outputs.push("report.html");
        v.push(c);
        let mut c = case(
            format!("{p}-export-ibnet"),
            &[
                "export",
                "ibnet",
                p,
                "-o",
                "topo.txt",
                "--opensm-dir",
                "osm",
            ],
        );
        c.outputs.push("topo.txt");
        v.push(c);
        v.push(case(format!("{p}-export-slurm"), &["export", "slurm", p]));
    }
    v
}

/// FNV-1a, 64 bits: enough to tell outputs apart, and no dependency.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn digest(bytes: &[u8]) -> String {
    format!("{} bytes, fnv1a64 {:016x}", bytes.len(), fnv1a(bytes))
}

/// Runs a case and renders its record.
fn record(c: &Case) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in &c.inputs {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let o = railyard_in(dir.path(), &c.args);
    let mut r = String::new();
    writeln!(r, "args: {}", c.args.join(" ")).unwrap();
    writeln!(r, "status: {:?}", o.status.code()).unwrap();
    for f in &c.outputs {
        match std::fs::read(dir.path().join(f)) {
            Ok(bytes) => writeln!(r, "file {f}: {}", digest(&bytes)).unwrap(),
            Err(_) => writeln!(r, "file {f}: absent").unwrap(),
        }
    }
    writeln!(r, "--- stderr").unwrap();
    r.push_str(&String::from_utf8_lossy(&o.stderr));
    writeln!(r, "--- stdout").unwrap();
    if o.stdout.len() <= INLINE {
        r.push_str(&String::from_utf8_lossy(&o.stdout));
    } else {
        writeln!(r, "{}", digest(&o.stdout)).unwrap();
    }
    r
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn every_output_matches_its_record() {
    let update = std::env::var("RAILYARD_GOLDEN").is_ok_and(|v| v == "update");
    let cases = cases();
    // Two at a time: CI has two cores.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(c) = cases.get(i) else { break };
                let r = record(c);
                results.lock().unwrap().push((c.name.clone(), r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort();
    let dir = golden_dir();
    let mut differ = Vec::new();
    for (name, got) in &results {
        let path = dir.join(format!("{name}.txt"));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if *got != want {
            differ.push(format!(
                "{name}: output differs from {}\n--- got:\n{}",
                path.display(),
                got.lines().take(40).collect::<Vec<_>>().join("\n")
            ));
        }
    }
    // No stale records: every record file belongs to a case.
    let names: Vec<String> = results.iter().map(|(n, _)| format!("{n}.txt")).collect();
    for e in std::fs::read_dir(&dir).unwrap() {
        let f = e.unwrap().file_name().to_string_lossy().into_owned();
        if !names.contains(&f) {
            if update {
                std::fs::remove_file(dir.join(&f)).unwrap();
            } else {
                differ.push(format!("{f}: a record with no case"));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} outputs differ from their records (RAILYARD_GOLDEN=update rewrites them; review the diff):\n{}",
        differ.len(),
        results.len(),
        differ.join("\n\n")
    );
}
