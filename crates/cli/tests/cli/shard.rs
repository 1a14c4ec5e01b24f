//! Sweeps on a job array, run as the real binary: `compare --shard I/N -o DIR` on each shard and
//! `railyard merge` of their files print exactly what the unsharded compare prints (table and
//! JSON), and bad splits are refused naming the file.

use crate::common::railyard_in;
use std::path::Path;

/// Six designs (three sizes x two technologies), with busbw rows and a training step: each
/// shard of four holds one or two of them.
const SWEEP: [&str; 10] = [
    "compare",
    "seed-leaf-spine",
    "--vary",
    "servers=2,4,6",
    "--vary",
    "tech=ib-ndr,roce-400g",
    "--perf",
    "--model",
    "llama3-8b",
    "--seed",
];

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let o = railyard_in(dir, args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = run(dir, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// `--seed 3` with `--routing ecmp`: the seed reaches the busbw rows' hash, so a shard that lost
/// a flag would differ.
fn sweep(extra: &[&str]) -> Vec<String> {
    SWEEP
        .iter()
        .chain(&["3", "--routing", "ecmp"])
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Four shards, written into two directories, merge into the unsharded output byte for byte:
/// the text table (at the default and at a narrow width, which letters the designs) and the JSON.
#[test]
fn four_shards_merged_print_the_unsharded_compare_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let whole = ok(d, &strs(&sweep(&[])));
    let whole_json = ok(d, &strs(&sweep(&["--json"])));
    let narrow = ok(d, &strs(&sweep(&["--width", "80"])));
    for i in 1..=4 {
        let shard = format!("{i}/4");
        let out = if i <= 2 { "a" } else { "b" };
        let said = ok(d, &strs(&sweep(&["--shard", &shard, "-o", out])));
        let name = format!("compare-shard-{i}-of-4.json");
        assert!(
            said.starts_with(&format!("compare shard {i}/4: "))
                && said.contains(&format!("{out}/{name}")),
            "{said}"
        );
        // Six designs round robin: shards 1 and 2 hold two, 3 and 4 one.
        let held = if i <= 2 {
            "2 of 6 designs"
        } else {
            "1 of 6 designs"
        };
        assert!(said.contains(held), "{said}");
        assert!(d.join(out).join(&name).is_file());
    }
    assert_eq!(ok(d, &["merge", "a", "b"]), whole);
    assert_eq!(ok(d, &["merge", "b", "a", "--json"]), whole_json);
    assert_eq!(ok(d, &["merge", "a", "b", "--width", "80"]), narrow);
    // Files named one by one merge as their directories do.
    let files: Vec<String> = (1..=4)
        .map(|i| {
            format!(
                "{}/compare-shard-{i}-of-4.json",
                if i <= 2 { "a" } else { "b" }
            )
        })
        .collect();
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    assert_eq!(ok(d, &args), whole);
}

/// A merge refuses a missing shard, a shard given twice, another command's shard and a damaged
/// file, naming the file; a shard cannot be empty, and a shard cannot write the report.
#[test]
fn bad_splits_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = |extra: &[&str]| -> Vec<String> {
        ["compare", "--vary", "servers=2,4,6"]
            .iter()
            .chain(extra)
            .map(|s| s.to_string())
            .collect()
    };
    for i in 1..=3 {
        ok(d, &strs(&small(&["--shard", &format!("{i}/3"), "-o", "s"])));
    }
    ok(
        d,
        &strs(&small(&["--perf", "--shard", "3/3", "-o", "other"])),
    );
    let refused = |args: &[&str], says: &[&str]| {
        let (code, out, err) = run(d, args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(out.is_empty(), "{args:?} printed: {out}");
        for s in says {
            assert!(err.contains(s), "{args:?}: `{s}` not in: {err}");
        }
    };
    let one = "s/compare-shard-1-of-3.json";
    let two = "s/compare-shard-2-of-3.json";
    refused(
        &["merge", one, two],
        &["1 of 3 shards missing", "compare-shard-3-of-3.json"],
    );
    refused(
        &["merge", "s", one],
        &["are both shard 1/3", "compare-shard-1-of-3.json"],
    );
    refused(
        &["merge", one, two, "other"],
        &[
            "other/compare-shard-3-of-3.json",
            "another command",
            "--perf",
        ],
    );
    std::fs::create_dir(d.join("bad")).unwrap();
    std::fs::write(d.join("bad/compare-shard-1-of-1.json"), "{\"format\": 1").unwrap();
    refused(
        &["merge", "bad"],
        &["bad/compare-shard-1-of-1.json", "not a railyard shard file"],
    );
    std::fs::create_dir(d.join("empty")).unwrap();
    refused(&["merge", "empty"], &["empty", "no shard file"]);
    refused(
        &strs(&small(&["--shard", "4/4", "-o", "t"])),
        &["--shard 4/4", "3 designs", "at most 3"],
    );
    refused(
        &strs(&small(&["--shard", "1/2", "-o", "t", "--html", "r.html"])),
        &["--html r.html", "--shard 1/2"],
    );
    refused(
        &strs(&small(&["--shard", "0/2", "-o", "t"])),
        &["0/2", "I/N"],
    );
    refused(&strs(&small(&["--shard", "1/2"])), &["--out"]);
    // Nothing half-written: the refused runs made no directory.
    assert!(!d.join("t").exists());
}
