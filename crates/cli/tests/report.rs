//! `railyard report`: byte-identical output, PNGs, the plan's report, bad input.

mod common;

use common::railyard_in as railyard;

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
