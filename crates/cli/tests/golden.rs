//! Recorded outputs: every command on every preset, byte for byte.
//!
//! Each case runs the real binary in a fresh working directory (outputs go to relative paths, so
//! nothing in them depends on where the test runs) and is compared with its record under
//! `tests/golden/<case>.txt`: exit status, stderr, stdout (in full up to 64 KiB, else its length and
//! hash) and the length and hash of every file it writes. Every CSV, JSON and text file a case
//! writes is also kept in full under `tests/golden/<case>/<path>`, so that a diff shows which rows
//! moved, not only that a hash did (one-line JSON is kept spread over lines by [`spread_json`], which
//! only adds whitespace between tokens; [`stored_texts_are_the_recorded_bytes`] checks each kept
//! text against its record's length and hash). HTML reports stay length and hash: they draw the
//! numbers of `summary.json` and `fabric.json`, which are kept in full, and their text is checked by
//! the CLI's report and browser tests (5.6 MB of markup would dwarf the records).
//! A refactor must leave every record as it is; a change that means to move numbers or text
//! rewrites the records with
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

/// Output files kept in full beside their record, by extension.
const KEPT: [&str; 3] = ["csv", "json", "txt"];

const PRESETS: [&str; 13] = [
    "dgx-h100-superpod",
    "dgx-a100-superpod",
    "seed-two-switch",
    "seed-leaf-spine",
    "seed-edr-fat-tree",
    "h100-nic-1to4",
    "roce-400g-sn5600",
    "rail-only-h100",
    "b200-xdr",
    "gb200-nvl72-superpod",
    "gb300-nvl72",
    "mi300x-roce",
    "mi355x-roce",
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
        // Issue 36's tie: Llama 3 405B on 16,384 H100s with the paper's TP 8 PP 16, on the
        // superpod, its 2:1 oversubscribed and its RoCE variants: the step times lie within the
        // error band (±13.8% above 4,096 GPUs), so no winner is named on the deciding figure.
        case(
            "compare-llama3-405b-16384-tie",
            &[
                "compare",
                "dgx-h100-superpod",
                "dgx-h100-superpod:oversubscription=2",
                "dgx-h100-superpod:tech=roce-400g",
                "--servers",
                "2048",
                "--model",
                "llama3-405b",
                "--tp",
                "8",
                "--pp",
                "16",
                "--global-batch",
                "2048",
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
        // Issue 37: a mixture of experts on GB200 NVL72 racks (expert parallelism inside a rack),
        // with the layout fitted to memory and with NVIDIA's recipe (TP 1, PP 8, EP 32), and the
        // same GPUs as 8-GPU B200 servers on NDR InfiniBand beside it.
        case(
            "train-gb200-nvl72-deepseek",
            &[
                "train",
                "gb200-nvl72-superpod",
                "--model",
                "deepseek-v3-like",
            ],
        ),
        case(
            "train-gb200-nvl72-deepseek-recipe-json",
            &[
                "train",
                "gb200-nvl72-superpod",
                "--model",
                "deepseek-v3-like",
                "--tp",
                "1",
                "--pp",
                "8",
                "--ep",
                "32",
                "--stage-layers",
                "7,8,8,8,8,8,8,6",
                "--global-batch",
                "2048",
                "--json",
            ],
        ),
        case(
            "compare-gb200-nvl72-b200-moe",
            &[
                "compare",
                "gb200-nvl72-superpod",
                "b200-xdr:servers=144,tech=ib-ndr,name=b200-8gpu-ndr",
                "--model",
                "deepseek-v3-like",
                "--tp",
                "1",
                "--pp",
                "8",
                "--dp",
                "128",
                "--ep",
                "32",
                "--stage-layers",
                "7,8,8,8,8,8,8,6",
                "--global-batch",
                "2048",
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

/// Whether an output file is kept in full beside its record.
fn kept(path: &str) -> bool {
    Path::new(path)
        .extension()
        .is_some_and(|e| KEPT.iter().any(|k| e == *k))
}

/// Byte ranges of JSON text: a scalar, or a container with its members (key, value).
enum Json {
    Scalar(std::ops::Range<usize>),
    Container(
        std::ops::Range<usize>,
        Vec<(Option<std::ops::Range<usize>>, Json)>,
    ),
}

/// Parses compact JSON (no whitespace between tokens, as `serde_json::to_string` writes it) into
/// byte ranges; `None` for anything else.
fn parse_compact(b: &[u8], at: &mut usize) -> Option<Json> {
    let start = *at;
    let string_end = |at: usize| -> Option<usize> {
        let mut i = at + 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    };
    match *b.get(*at)? {
        open @ (b'{' | b'[') => {
            let close = if open == b'{' { b'}' } else { b']' };
            *at += 1;
            let mut members = Vec::new();
            if b.get(*at) == Some(&close) {
                *at += 1;
                return Some(Json::Container(start..*at, members));
            }
            loop {
                let key = if open == b'{' {
                    let k = *at..string_end(*at)?;
                    *at = k.end;
                    (b.get(*at) == Some(&b':')).then_some(())?;
                    *at += 1;
                    Some(k)
                } else {
                    None
                };
                members.push((key, parse_compact(b, at)?));
                match *b.get(*at)? {
                    b',' => *at += 1,
                    c if c == close => {
                        *at += 1;
                        return Some(Json::Container(start..*at, members));
                    }
                    _ => return None,
                }
            }
        }
        b'"' => {
            *at = string_end(*at)?;
            Some(Json::Scalar(start..*at))
        }
        _ => {
            while *at < b.len() && !b",]}".contains(&b[*at]) {
                if b[*at].is_ascii_whitespace() {
                    return None;
                }
                *at += 1;
            }
            Some(Json::Scalar(start..*at))
        }
    }
}

/// One-line JSON spread over lines for review: a container holding containers puts each member on
/// a line of its own, indented; a container of scalars (a table's row) stays on one line. Only
/// whitespace between tokens is added, so [`compact_json`] gives back the bytes. Text that is not
/// compact JSON is returned as it is.
fn spread_json(text: &[u8]) -> Vec<u8> {
    fn emit(b: &[u8], v: &Json, depth: usize, out: &mut Vec<u8>) {
        match v {
            Json::Scalar(r) => out.extend_from_slice(&b[r.clone()]),
            Json::Container(r, members)
                if !members
                    .iter()
                    .any(|(_, m)| matches!(m, Json::Container(..))) =>
            {
                out.extend_from_slice(&b[r.clone()]);
            }
            Json::Container(r, members) => {
                out.push(b[r.start]);
                for (i, (key, m)) in members.iter().enumerate() {
                    out.push(b'\n');
                    out.resize(out.len() + depth + 1, b' ');
                    if let Some(k) = key {
                        out.extend_from_slice(&b[k.clone()]);
                        out.push(b':');
                    }
                    emit(b, m, depth + 1, out);
                    if i + 1 < members.len() {
                        out.push(b',');
                    }
                }
                out.push(b'\n');
                out.resize(out.len() + depth, b' ');
                out.push(b[r.end - 1]);
            }
        }
    }
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let mut at = 0;
    match parse_compact(body, &mut at) {
        Some(v) if at == body.len() => {
            let mut out = Vec::with_capacity(text.len() * 2);
            emit(body, &v, 0, &mut out);
            out.extend_from_slice(&text[body.len()..]);
            out
        }
        _ => text.to_vec(),
    }
}

/// Undoes [`spread_json`]: drops the line breaks and indentation it put between tokens (spaces and
/// line breaks outside strings), keeping a final line break.
fn compact_json(text: &[u8]) -> Vec<u8> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let (mut out, mut in_string, mut escaped) = (Vec::with_capacity(text.len()), false, false);
    for &c in body {
        if in_string {
            in_string = escaped || c != b'"';
            escaped = !escaped && c == b'\\';
        } else if c == b' ' || c == b'\n' {
            continue;
        } else {
            in_string = c == b'"';
        }
        out.push(c);
    }
    out.extend_from_slice(&text[body.len()..]);
    out
}

/// The form an output file is kept in: JSON spread over lines, anything else as it is.
fn stored_form(path: &str, bytes: &[u8]) -> Vec<u8> {
    if path.ends_with(".json") {
        let spread = spread_json(bytes);
        assert!(
            spread == bytes || compact_json(&spread) == bytes,
            "{path}: spreading over lines must only add whitespace"
        );
        spread
    } else {
        bytes.to_vec()
    }
}

/// A case's record and the output files kept in full (path, stored form).
struct Recorded {
    record: String,
    kept: Vec<(String, Vec<u8>)>,
}

/// Runs a case and renders its record.
fn record(c: &Case) -> Recorded {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in &c.inputs {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let o = railyard_in(dir.path(), &c.args);
    let mut r = String::new();
    let mut kept_files = Vec::new();
    writeln!(r, "args: {}", c.args.join(" ")).unwrap();
    writeln!(r, "status: {:?}", o.status.code()).unwrap();
    for f in &c.outputs {
        match std::fs::read(dir.path().join(f)) {
            Ok(bytes) => {
                writeln!(r, "file {f}: {}", digest(&bytes)).unwrap();
                if kept(f) {
                    kept_files.push((f.to_string(), stored_form(f, &bytes)));
                }
            }
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
    Recorded {
        record: r,
        kept: kept_files,
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Every file under `dir`, as paths relative to it with `/` between parts, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for e in std::fs::read_dir(dir.join(&rel)).unwrap() {
            let e = e.unwrap();
            let r = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                todo.push(r);
            } else {
                found.push(r.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

/// Where two texts first differ: the line number and both lines.
fn first_difference(got: &[u8], want: &[u8]) -> String {
    let (got, want) = (String::from_utf8_lossy(got), String::from_utf8_lossy(want));
    let (mut g, mut w) = (got.lines(), want.lines());
    for n in 1.. {
        match (g.next(), w.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => break,
            (a, b) => {
                let show = |l: Option<&str>| {
                    l.map_or("(no line)".to_string(), |l| l.chars().take(300).collect())
                };
                return format!("line {n}\n    got:  {}\n    want: {}", show(a), show(b));
            }
        }
    }
    "only line endings differ".to_string()
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
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let dir = golden_dir();
    let mut differ = Vec::new();
    let mut expected = Vec::new();
    for (name, got) in &results {
        let path = dir.join(format!("{name}.txt"));
        expected.push(format!("{name}.txt"));
        expected.extend(got.kept.iter().map(|(f, _)| format!("{name}/{f}")));
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &got.record).unwrap();
            for (f, bytes) in &got.kept {
                let p = dir.join(name).join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, bytes).unwrap();
            }
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got.record != want {
            differ.push(format!(
                "{name}: output differs from {}\n--- got:\n{}",
                path.display(),
                got.record.lines().take(40).collect::<Vec<_>>().join("\n")
            ));
        }
        for (f, bytes) in &got.kept {
            let p = dir.join(name).join(f);
            let want = std::fs::read(&p).unwrap_or_default();
            if *bytes != want {
                differ.push(format!(
                    "{name}: {f} differs from {}: {}",
                    p.display(),
                    first_difference(bytes, &want)
                ));
            }
        }
    }
    // No stale records: every file belongs to a case.
    for f in files_under(&dir) {
        if !expected.contains(&f) {
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

/// The files kept in full are the bytes their records hash: for every `file PATH: N bytes, fnv1a64
/// H` line of a record whose file is kept, the kept text (JSON with the whitespace [`spread_json`]
/// added taken out again) has that length and hash. It runs nothing, so it holds the records and the
/// kept texts to each other even where the binary's outputs have moved.
#[test]
fn stored_texts_are_the_recorded_bytes() {
    let dir = golden_dir();
    let mut checked = 0;
    for f in files_under(&dir) {
        let Some(name) = f.strip_suffix(".txt").filter(|n| !n.contains('/')) else {
            continue;
        };
        let record = std::fs::read_to_string(dir.join(&f)).unwrap();
        let header = record.split("--- stderr").next().unwrap();
        for line in header.lines() {
            let Some((path, hash)) = line
                .strip_prefix("file ")
                .and_then(|l| l.split_once(": "))
                .filter(|(p, h)| kept(p) && *h != "absent")
            else {
                continue;
            };
            let p = dir.join(name).join(path);
            let text = std::fs::read(&p)
                .unwrap_or_else(|e| panic!("{}: {e} (the record {f} lists it)", p.display()));
            let bytes = if path.ends_with(".json") {
                compact_json(&text)
            } else {
                text.clone()
            };
            assert!(
                digest(&bytes) == hash || digest(&text) == hash,
                "{}: {} (whitespace taken out: {}) but the record {f} says {hash}",
                p.display(),
                digest(&text),
                digest(&bytes)
            );
            checked += 1;
        }
    }
    assert!(checked > 70, "{checked} kept files checked");
}

/// Spreading JSON over lines only adds whitespace between tokens, strings and escapes included.
#[test]
fn spread_json_keeps_every_byte() {
    let compact =
        br#"{"a":[1,2.5e-3,"x, \"y\"]\\"],"b":{"c":[[true,null],[]],"d":{}},"e":"{ [ :"}"#;
    let spread = spread_json(compact);
    assert!(spread.contains(&b'\n'));
    assert_eq!(compact_json(&spread), compact);
    let with_newline = [compact.as_slice(), b"\n"].concat();
    assert_eq!(compact_json(&spread_json(&with_newline)), with_newline);
    // Not compact JSON: kept as it is.
    assert_eq!(spread_json(b"{ \"a\": 1 }"), b"{ \"a\": 1 }");
}
