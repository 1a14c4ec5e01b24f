use super::*;

/// A scratch directory with an input `s.toml`, a file `afile` and a directory `d`.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let r = t.path().to_path_buf();
    std::fs::write(r.join("s.toml"), "spec").unwrap();
    std::fs::write(r.join("afile"), "mine").unwrap();
    std::fs::create_dir(r.join("d")).unwrap();
    (t, r)
}

fn refused(p: PathArgs) -> String {
    let e = p.check().unwrap_err();
    assert_eq!(e.status, 2, "{e}");
    e.message
}

/// An output is refused when it is an input by any name, naming both flags.
#[test]
fn an_output_that_is_an_input_by_any_name_is_refused() {
    let (_t, r) = scratch();
    std::os::unix::fs::symlink(r.join("s.toml"), r.join("link.toml")).unwrap();
    std::fs::hard_link(r.join("s.toml"), r.join("hard.toml")).unwrap();
    for out in [
        r.join("s.toml"),
        r.join("./s.toml"),
        r.join("d/../s.toml"),
        r.join("link.toml"),
        r.join("hard.toml"),
    ] {
        let m = refused(
            PathArgs::default()
                .inputs("--spec", [r.join("s.toml")])
                .output_file("--out", Some(&out)),
        );
        assert!(
            m.contains(&format!(
                "--out {} is also the input (--spec ",
                out.display()
            )),
            "{m}"
        );
    }
    // The input through a symlink, the output by its own name.
    let m = refused(
        PathArgs::default()
            .inputs("--spec", [r.join("link.toml")])
            .output_file("--out", Some(r.join("s.toml"))),
    );
    assert!(m.contains("is also the input (--spec"), "{m}");
    // A directory output that writes the input's name over it.
    let m = refused(
        PathArgs::default()
            .inputs("--fabric", [r.join("d/root_guids.txt")])
            .output_dir(
                "--opensm-dir",
                Some(r.join("d")),
                Names::exact(&["root_guids.txt"]),
            ),
    );
    assert!(
        m.contains("writes root_guids.txt, which is also the input (--fabric"),
        "{m}"
    );
    // Names known only from the work: every input of the pattern in the directory.
    let m = refused(
        PathArgs::default()
            .inputs("--fabric", [r.join("d/fabric.json")])
            .output_dir(
                "--output",
                Some(r.join("d")),
                Names::EndingIn {
                    suffix: ".json",
                    what: "DEVICE.json",
                },
            ),
    );
    assert!(
        m.contains("writes DEVICE.json, and the input --fabric"),
        "{m}"
    );
    // Not a collision: an input beside the outputs under another name, or deeper.
    PathArgs::default()
        .inputs(
            "--spec",
            [r.join("d/spec.toml"), r.join("d/x/root_guids.txt")],
        )
        .output_dir(
            "--opensm-dir",
            Some(r.join("d")),
            Names::exact(&["root_guids.txt"]),
        )
        .check()
        .unwrap();
}

/// Two outputs that cannot both be written are refused, naming both flags.
#[test]
fn outputs_that_collide_are_refused() {
    let (_t, r) = scratch();
    let png = || Names::exact(&["topology.png", "cost.png"]);
    for (file, dir, says) in [
        (
            "d/topology.png",
            "d",
            "--out {r}/d/topology.png is also a file --png {r}/d writes (topology.png): they cannot both be written",
        ),
        ("x", "x", "--out {r}/x is also the directory --png {r}/x"),
        (
            "x",
            "x/sub",
            "--png {r}/x/sub lies inside --out {r}/x, which is a file",
        ),
    ] {
        let m = refused(
            PathArgs::default()
                .output_file("--out", Some(r.join(file)))
                .output_dir("--png", Some(r.join(dir)), png()),
        );
        let says = says.replace("{r}", &r.display().to_string());
        assert!(m.contains(&says), "{m}");
    }
    // The report beside its PNGs is fine.
    PathArgs::default()
        .output_file("--out", Some(r.join("d/report.html")))
        .output_dir("--png", Some(r.join("d")), png())
        .check()
        .unwrap();
}

/// Outputs that cannot be written where they are named are refused before any work.
#[test]
fn outputs_that_cannot_be_written_are_refused() {
    let (_t, r) = scratch();
    std::fs::create_dir(r.join("d/bom.csv")).unwrap();
    let cases = [
        (
            PathArgs::default().output_dir("--png", Some(r.join("afile")), Names::exact(&[])),
            "afile exists and is not a directory",
        ),
        (
            PathArgs::default().output_file("--out", Some(r.join("afile/x.csv"))),
            "afile exists and is not a directory",
        ),
        (
            PathArgs::default().output_file("--out", Some(r.join("d"))),
            "exists and is not a regular file",
        ),
        (
            PathArgs::default().output_dir("--out", Some(r.join("d")), Names::exact(&["bom.csv"])),
            "bom.csv exists and is not a regular file",
        ),
        (
            PathArgs::default().output_file("--out", Some(r.join(".."))),
            "not a file name",
        ),
    ];
    for (p, says) in cases {
        let m = refused(p);
        assert!(m.contains(says), "{m}");
    }
}
