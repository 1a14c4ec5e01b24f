//! `railyard export`, `import` and `verify` through the real binary: files, exit statuses and messages.
//! (The round trips through the real ibsim, ibnetdiscover and OpenSM are in crates/ib/tests/ibsim.rs.)

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_railyard");

fn railyard(cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("railyard runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Swaps the HCAs at the far ends of a switch's first two ports, on both sides of each link, as a
/// technician swapping two cables at the switch would.
fn swap_first_two_ports(topo: &str, switch: &str) -> String {
    let lines: Vec<&str> = topo.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("Switch\t") && l.contains(&format!("\"{switch}\"")))
        .unwrap();
    let remote = |l: &str| l.split('"').nth(1).unwrap().to_string();
    let (h1, h2) = (remote(lines[header + 1]), remote(lines[header + 2]));
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let l = if i == header + 1 {
            l.replace(&format!("\"{h1}\""), &format!("\"{h2}\""))
        } else if i == header + 2 {
            l.replace(&format!("\"{h2}\""), &format!("\"{h1}\""))
        } else if l.starts_with("[1]") && l.contains(&format!("\"{switch}\"[1]")) {
            l.replace(&format!("\"{switch}\"[1]"), &format!("\"{switch}\"[2]"))
        } else if l.starts_with("[1]") && l.contains(&format!("\"{switch}\"[2]")) {
            l.replace(&format!("\"{switch}\"[2]"), &format!("\"{switch}\"[1]"))
        } else {
            l.to_string()
        };
        out.push(l);
    }
    out.join("\n") + "\n"
}

#[test]
fn verify_exits_0_on_a_match_1_on_differences_2_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = railyard(
        d,
        &[
            "export",
            "ibnet",
            "seed-leaf-spine",
            "-o",
            "fabric.topo",
            "--opensm-dir",
            "osm",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    for f in [
        "fabric.topo",
        "osm/root_guids.txt",
        "osm/cn_guids.txt",
        "osm/ibsim-flags.txt",
    ] {
        assert!(d.join(f).is_file(), "{f} written");
    }
    // The two spines are the roots of a two-tier tree.
    let roots = std::fs::read_to_string(d.join("osm/root_guids.txt")).unwrap();
    assert_eq!(roots.lines().count(), 2);

    let ok = railyard(
        d,
        &[
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "fabric.topo",
        ],
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}{}",
        text(&ok.stdout),
        text(&ok.stderr)
    );
    assert!(text(&ok.stdout).starts_with("match:"));

    let topo = std::fs::read_to_string(d.join("fabric.topo")).unwrap();
    std::fs::write(
        d.join("swapped.topo"),
        swap_first_two_ports(&topo, "leaf01"),
    )
    .unwrap();
    let diff = railyard(
        d,
        &[
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "swapped.topo",
            "--json",
        ],
    );
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{}{}",
        text(&diff.stdout),
        text(&diff.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&diff.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["kind"], "swap");

    std::fs::write(d.join("broken.topo"), "Switch 4 \"a\"\n[1] \"b\"[1]\n").unwrap();
    let bad = railyard(
        d,
        &[
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "broken.topo",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("broken.topo: line 2"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn import_writes_a_fabric_that_verify_and_export_accept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The expected ibnetdiscover output of a plan, written by ibsim export and verified back: import it.
    let out = railyard(
        d,
        &["export", "ibnet", "seed-two-switch", "-o", "plan.topo"],
    );
    assert!(out.status.success());
    // Written as ibnetdiscover prints port lines: remote, then `# lid N 4xHDR`.
    let topo = std::fs::read_to_string(d.join("plan.topo")).unwrap();
    let bare = |l: &str| l.split('\t').take(2).collect::<Vec<_>>().join("\t");
    let discovered: String = topo
        .lines()
        .map(|l| {
            if l.starts_with('[') {
                format!("{}\t# lid 0 4xHDR\n", bare(l))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(d.join("discovered.txt"), discovered).unwrap();
    let no_rates: String = topo
        .lines()
        .map(|l| {
            if l.starts_with('[') {
                format!("{}\n", bare(l))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(d.join("no-rates.txt"), no_rates).unwrap();
    let imp = railyard(
        d,
        &[
            "import",
            "ibnet",
            "discovered.txt",
            "-o",
            "imported/fabric.json",
        ],
    );
    assert!(imp.status.success(), "{}", text(&imp.stderr));
    assert!(
        text(&imp.stdout).contains("9 servers, 72 HCAs, 2 switches"),
        "{}",
        text(&imp.stdout)
    );
    let v = railyard(
        d,
        &[
            "verify",
            "--plan",
            "imported/fabric.json",
            "--discovered",
            "discovered.txt",
        ],
    );
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}{}",
        text(&v.stdout),
        text(&v.stderr)
    );
    let e = railyard(
        d,
        &[
            "export",
            "ibnet",
            "--fabric",
            "imported/fabric.json",
            "-o",
            "again.topo",
        ],
    );
    assert!(e.status.success(), "{}", text(&e.stderr));

    // Without rates there is nothing to say how fast the links are: a line-numbered error, exit 2.
    let bad = railyard(d, &["import", "ibnet", "no-rates.txt"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("line "), "{}", text(&bad.stderr));
}

#[test]
fn roce_fabrics_have_no_infiniband_export() {
    let dir = tempfile::tempdir().unwrap();
    let out = railyard(
        dir.path(),
        &["export", "ibnet", "roce-400g-sn5600", "-o", "x.topo"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("ib-ndr"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("x.topo").exists());
}
