//! `railyard report`: byte-identical output, PNGs, the plan's report, bad input.

use crate::common::railyard_in as railyard;

#[test]
fn same_design_same_report_bytes_and_pngs_of_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    for out in ["a.html", "b.html"] {
        let o = railyard(
            dir.path(),
            [
                "report",
                "seed-two-switch",
                "-o",
                out,
                "--png",
                "png",
                "--png-scale",
                "1",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let a = std::fs::read(dir.path().join("a.html")).unwrap();
    assert_eq!(a, std::fs::read(dir.path().join("b.html")).unwrap());
    let html = String::from_utf8(a).unwrap();
    assert!(
        html.contains("<section id=\"busbw\""),
        "the report plots busbw"
    );
    for name in ["topology.png", "cost.png", "busbw.png"] {
        let png = std::fs::read(dir.path().join("png").join(name)).unwrap();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
            "{name}"
        );
    }
}

#[test]
fn plan_out_writes_a_report_without_simulating() {
    let dir = tempfile::tempdir().unwrap();
    let o = railyard(dir.path(), ["plan", "seed-leaf-spine", "--out", "p"]);
    assert!(o.status.success());
    let html = std::fs::read_to_string(dir.path().join("p/report.html")).unwrap();
    assert!(html.contains("<section id=\"topology\""));
    assert!(
        !html.contains("<section id=\"busbw\""),
        "no plot without a simulation"
    );
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["report", "--servers", "many"][..],
        &["report", "no-such-preset"],
        &["report", "--png", "p", "--png-scale", "0"],
    ] {
        let o = railyard(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Regression: `report -o r3.html --png afile` (afile a regular file) failed with "afile: File
/// exists" (exit 1) after writing r3.html. Every output is checked before any work: bad outputs
/// exit 2 and leave nothing, and the files already there stay as they were.
#[test]
fn a_bad_output_exits_2_and_writes_none_of_the_outputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("afile"), "mine").unwrap();
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    for (args, says) in [
        (
            &["report", "-o", "r3.html", "--png", "afile", "--no-sim"][..],
            "--png afile exists and is not a directory",
        ),
        (
            &["report", "-o", "r3.html", "--png", "afile/sub", "--no-sim"],
            "afile exists and is not a directory",
        ),
        (
            &["report", "-o", "adir", "--png", "p", "--no-sim"],
            "adir exists and is not a regular file",
        ),
        (
            &["report", "-o", "afile/r.html", "--no-sim"],
            "afile exists and is not a directory",
        ),
    ] {
        let o = railyard(dir.path(), args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["adir", "afile"], "{args:?}");
        assert_eq!(
            std::fs::read_dir(dir.path().join("adir")).unwrap().count(),
            0
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("afile")).unwrap(),
            "mine"
        );
    }
    // The report and its PNGs into one directory: one commit, all there.
    let o = railyard(
        dir.path(),
        ["report", "-o", "out/r.html", "--png", "out", "--no-sim"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["cost.png", "r.html", "topology.png"]);
}

/// Regression: `report --servers 16 --tech roce-400g` described the design with the preset's
/// prose ("127 DGX H100, 8 NDR ... QM9700 ... with its storage fabric"), and `plan` titled it
/// plainly `dgx-h100-superpod`. Flags that change the design describe and title it by what
/// changed; flags that change nothing leave the preset's description.
#[test]
fn flags_that_change_the_design_describe_it_instead_of_the_preset() {
    let dir = tempfile::tempdir().unwrap();
    let o = railyard(
        dir.path(),
        [
            "report",
            "--servers",
            "16",
            "--tech",
            "roce-400g",
            "--no-sim",
            "-o",
            "r16.html",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.path().join("r16.html")).unwrap();
    assert!(
        html.contains("dgx-h100-superpod with --servers 16 --tech roce-400g"),
        "no description by the flags"
    );
    assert!(html.contains("dgx-h100-superpod:servers=16,tech=roce-400g"));
    for preset_prose in [
        "127 DGX",
        "rail-optimized QM9700",
        "storage fabric and management",
    ] {
        assert!(!html.contains(preset_prose), "{preset_prose} still shown");
    }
    let o = railyard(
        dir.path(),
        [
            "plan",
            "--servers",
            "8192",
            "--storage",
            "none",
            "--management",
            "none",
            "--json",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        j["name"],
        "dgx-h100-superpod:servers=8192,storage=none,management=none"
    );
    assert_eq!(
        j["overrides"],
        serde_json::json!(["servers=8192", "storage=none", "management=none"])
    );
    assert_eq!(j["servers"], 8192);
    // The preset's own values change nothing: its name and description stay.
    let o = railyard(dir.path(), ["plan", "--servers", "127", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["name"], "dgx-h100-superpod");
    assert!(j.get("overrides").is_none());
    // Beside a flag that changes the design, the preset's own value is still no change.
    let o = railyard(
        dir.path(),
        ["plan", "--servers", "127", "--storage", "none", "--json"],
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["name"], "dgx-h100-superpod:storage=none");
    assert_eq!(j["overrides"], serde_json::json!(["storage=none"]));
    // Two flags that say the same thing are named together.
    let o = railyard(
        dir.path(),
        [
            "plan",
            "--nic-ratio",
            "1:2",
            "--nics-per-server",
            "4",
            "--json",
        ],
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        j["overrides"].as_array().map(Vec::len),
        Some(2),
        "{}",
        j["overrides"]
    );
    let o = railyard(
        dir.path(),
        ["report", "--servers", "127", "--no-sim", "-o", "r127.html"],
    );
    assert!(o.status.success());
    let html = std::fs::read_to_string(dir.path().join("r127.html")).unwrap();
    assert!(html.contains("127 DGX H100"));
}

/// Issue 36: the decision report reproduces itself. It holds the command line as typed (quoted
/// as sh reads it back), every run key with its value and whether it was given, each design's
/// memory warning beside it (Llama 3 405B on PP 4 does not fit an 80 GB H100; the report showed
/// no warning), the predicted figures with their error bands, and a decision that names no
/// winner inside them.
#[test]
fn the_decision_report_holds_its_command_line_run_keys_and_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let argv = [
        "report",
        "--compare",
        "dgx-h100-superpod",
        "dgx-h100-superpod:tech=roce-400g,name=RoCE 400G",
        "--servers",
        "16",
        "--model",
        "llama3-405b",
        "--pp",
        "4",
        "--pxn",
        "on",
        "--efficiency",
        "0.4",
        "--no-sim",
        "-o",
        "d.html",
    ];
    let o = railyard(dir.path(), argv);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(dir.path().join("d.html")).unwrap();
    assert!(
        html.contains(
            "<pre id=\"command-line\"><code>railyard report --compare dgx-h100-superpod &#39;dgx-h100-superpod:tech=roce-400g,name=RoCE 400G&#39; --servers 16 --model llama3-405b --pp 4 --pxn on --efficiency 0.4 --no-sim -o d.html</code></pre>"
        ),
        "{}",
        &html[html.find("command-line").unwrap_or(0)..][..400]
    );
    let row = |key: &str, value: &str, from: &str| {
        format!("<tr><td><code>{key}</code></td><td>{value}</td><td>{from}</td>")
    };
    for (key, value, from) in [
        ("--model", "llama3-405b", "given"),
        ("--pp", "4", "given"),
        ("--pxn", "on", "given"),
        ("--efficiency", "0.4", "given"),
        ("--fp8-dispatch", "false", "default"),
        ("--precision", "bf16", "default"),
        ("--ep-overlap", "false", "default"),
        ("--schedule", "1f1b", "default"),
        ("--recompute", "false", "default"),
        ("--qps-per-connection", "1", "default"),
        ("--routing", "", "default (unset)"),
        ("--calibration", "", "default (unset)"),
        ("--seq", "", "default (unset)"),
    ] {
        assert!(
            html.contains(&row(key, value, from)),
            "{key} {value} {from}"
        );
    }
    // The memory warning beside each design, in the designs' key.
    let key = &html[html.find("id=\"designs-key\"").unwrap()..];
    let key = &key[..key.find("</header>").unwrap()];
    assert_eq!(
        key.matches("<ul class=\"warnings\"><li>the model state alone, 114.8 GB per GPU, does not fit in the GPU&#39;s 85.5 GB")
            .count(),
        2,
        "{key}"
    );
    // The routing says it is the technology's default, and why.
    assert!(html.contains("adaptive (InfiniBand"), "routing default");
    // Same step within the band: no winner, the deciding figure named.
    assert!(
        html.contains("<p id=\"decision\"><b>no winner: tied within model error on cluster cost per million tokens, the figure that decides"),
        "decision"
    );
}
