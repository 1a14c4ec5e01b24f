//! `railyard export`, `import` and `verify` through the real binary: files, exit statuses and messages.
//! (The round trips through the real ibsim, ibnetdiscover and OpenSM are in crates/ib/tests/ibsim.rs.)

use std::process::Output;

use crate::common::ibsim::{ib_tools_present, Ibsim};
use crate::common::railyard_in as railyard;

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
        [
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
        [
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
        [
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
        [
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
    let out = railyard(d, ["export", "ibnet", "seed-two-switch", "-o", "plan.topo"]);
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
        [
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
        [
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
        [
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
    let bad = railyard(d, ["import", "ibnet", "no-rates.txt"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("line "), "{}", text(&bad.stderr));
}

/// Regression: `verify` and `check --plan` of an InfiniBand discovery against a RoCE plan printed a
/// difference for nearly every device and cable (86 for seed-leaf-spine at `--tech roce-400g`, some
/// 280 on larger fabrics). They say once that the technologies differ, naming both, and exit 1 as a
/// failed check does: for our own export and for a public dump.
#[test]
fn an_infiniband_discovery_against_a_roce_plan_is_one_technology_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = railyard(
        d,
        ["export", "ibnet", "seed-leaf-spine", "-o", "fabric.topo"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let public = real_dump("sx6036-qdr-fdr10-2014.ibnetdiscover");
    for (file, plan) in [
        (
            "fabric.topo",
            &["seed-leaf-spine", "--tech", "roce-400g"][..],
        ),
        (public.as_str(), &["roce-400g-sn5600"][..]),
    ] {
        let verify = railyard(
            d,
            [&["verify", "--discovered", file, "--plan"][..], plan].concat(),
        );
        assert_eq!(
            verify.status.code(),
            Some(1),
            "{file}: {}",
            text(&verify.stderr)
        );
        let report = text(&verify.stdout);
        assert_eq!(report.lines().count(), 1, "{file}: {report}");
        assert!(
            report.starts_with("technology mismatch: the plan is roce-400g (RoCE over Ethernet) and the discovery is InfiniBand"),
            "{file}: {report}"
        );
        let json = railyard(
            d,
            [
                &["verify", "--discovered", file, "--json", "--plan"][..],
                plan,
            ]
            .concat(),
        );
        assert_eq!(json.status.code(), Some(1));
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(v["matches"], false);
        let findings = v["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 1, "{file}: {findings:?}");
        assert_eq!(findings[0]["kind"], "technology-mismatch");

        let check = railyard(d, [&["check", file, "--plan"][..], plan].concat());
        assert_eq!(
            check.status.code(),
            Some(1),
            "{file}: {}",
            text(&check.stderr)
        );
        let out = text(&check.stdout);
        assert_eq!(out.matches("technology mismatch").count(), 1, "{out}");
        assert!(
            !out.contains("missing-cable") && !out.contains("unknown-device"),
            "{out}"
        );
    }
    // The same export against its InfiniBand plan still matches.
    let ok = railyard(
        d,
        [
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "fabric.topo",
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stdout));
}

#[test]
fn roce_fabrics_have_no_infiniband_export() {
    let dir = tempfile::tempdir().unwrap();
    let out = railyard(
        dir.path(),
        ["export", "ibnet", "roce-400g-sn5600", "-o", "x.topo"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("ib-ndr"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("x.topo").exists());
}

/// A public dump kept in crates/ib/tests/data/real (sources in its README).
fn real_dump(name: &str) -> String {
    format!(
        "{}/../ib/tests/data/real/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn real_public_dumps_import_with_exit_0_and_verify_against_their_import() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (file, summary) in [
        (
            "sx6036-qdr-fdr10-2014.ibnetdiscover",
            "144 servers, 144 HCAs, 8 switches in 2 tiers, 192 cables (ib-qdr)",
        ),
        (
            "voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover",
            "89 servers, 89 HCAs, 11 switches in 3 tiers, 159 cables (ib-qdr)",
        ),
        (
            "avakas-qlogic12800-qdr-2016.ibnetdiscover-p",
            "281 servers, 281 HCAs, 25 switches in 2 tiers, 569 cables (ib-qdr)",
        ),
        (
            "plafrim2-truescale-qdr-2016-subnet0.ibnetdiscover-p",
            "96 servers, 96 HCAs, 7 switches in 2 tiers, 155 cables (ib-qdr)",
        ),
        (
            "plafrim2-is5030-qdr-2016-subnet1.ibnetdiscover-p",
            "23 servers, 23 HCAs, 1 switches in 1 tier, 23 cables (ib-qdr)",
        ),
        (
            "sat11-hdr-2021-without-prompt.ibnetdiscover",
            "383 servers, 2328 HCAs, 400 switches in 3 tiers, 8723 cables (ib-hdr)",
        ),
        (
            "mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover",
            "5 servers, 6 HCAs, 2 switches in 1 tier, 10 cables (ib-edr)\n\
             note: line 1: the tool printed a failed query",
        ),
        (
            "voltaire-isr9024-sdr-2007-manpage.ibnetdiscover",
            "4 servers, 4 HCAs, 2 switches in 1 tier, 7 cables (ib-sdr)\n\
             note: line 15: the two ends of this link report different rates (4xSDR here, 1xSDR at \
             line 26), so it is taken at the lower, 1xSDR (`railyard check` names it)\n\
             note: line 18: the two ends of this link report different rates (4xSDR here, 1xSDR at \
             line 52), so it is taken at the lower, 1xSDR",
        ),
    ] {
        // The HDR cluster's PuTTY log less the shell prompt logged after the output.
        let path = if file == "sat11-hdr-2021-without-prompt.ibnetdiscover" {
            let text =
                std::fs::read_to_string(real_dump("sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover"))
                    .unwrap();
            let cut = text.trim_end().rfind('\n').unwrap() + 1;
            std::fs::write(d.join(file), &text[..cut]).unwrap();
            d.join(file).display().to_string()
        } else {
            real_dump(file)
        };
        let out = railyard(d, ["import", "ibnet", &path, "-o", "imported.json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{file}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains(summary), "{}", text(&out.stdout));
        let v = railyard(
            d,
            ["verify", "--plan", "imported.json", "--discovered", &path],
        );
        assert_eq!(
            v.status.code(),
            Some(0),
            "{file}: {}{}",
            text(&v.stdout),
            text(&v.stderr)
        );
    }
    // The HDR cluster's log as kept ends with the appliance's shell prompt: bad input, at its line.
    let out = railyard(
        d,
        [
            "import",
            "ibnet",
            &real_dump("sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover: line 33821: cannot read `sat11-0101-0902-02ufm [ mgmt-ha-active ] (config) #`"),
        "{}",
        text(&out.stderr)
    );
    // An excerpt whose links show from one end only is not a discovery: bad input, with its line.
    let out = railyard(
        d,
        [
            "import",
            "ibnet",
            &real_dump("osc-edr-excerpt.ibnetdiscover-p"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("osc-edr-excerpt.ibnetdiscover-p: line 6: one-sided link"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn regression_empty_and_header_only_discoveries_were_six_differences_not_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("empty.txt"), "").unwrap();
    std::fs::write(
        d.join("header-only.txt"),
        "#\n# Topology file: generated on Mon Nov 30 13:39:41 2026\n#\n",
    )
    .unwrap();
    std::fs::write(
        d.join("no-links.txt"),
        "switchguid=0x2c90100000001\nSwitch\t40 \"S-0002c90100000001\"\t\t# \"leaf01\" base port 0 lid 1 lmc 0\n",
    )
    .unwrap();
    for (file, needle) in [
        ("empty.txt", "empty.txt: no nodes"),
        ("header-only.txt", "header-only.txt: no nodes"),
        ("no-links.txt", "no-links.txt: 1 node and no links"),
    ] {
        for args in [
            vec!["verify", "--plan", "seed-leaf-spine", "--discovered", file],
            vec!["import", "ibnet", file],
        ] {
            let out = railyard(d, &args);
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            assert!(text(&out.stderr).contains(needle), "{}", text(&out.stderr));
            assert!(text(&out.stdout).is_empty());
        }
    }
}

#[test]
fn regression_a_byte_order_mark_was_refused_with_an_invisible_character() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = railyard(
        d,
        ["export", "ibnet", "seed-leaf-spine", "-o", "fabric.topo"],
    );
    assert!(out.status.success());
    let topo = std::fs::read_to_string(d.join("fabric.topo")).unwrap();
    std::fs::write(d.join("bom.topo"), format!("\u{feff}{topo}")).unwrap();
    let ok = railyard(
        d,
        [
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "bom.topo",
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    // Elsewhere an invisible character is refused, and the message shows it escaped.
    std::fs::write(
        d.join("zwsp.topo"),
        topo.replacen("Switch\t", "\u{200b}Switch\t", 1),
    )
    .unwrap();
    let bad = railyard(
        d,
        [
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "zwsp.topo",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("`\\u{200b}Switch\\t40"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn regression_fdr10_on_a_real_rediscovery_verified_as_a_match() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = railyard(
        d,
        [
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
    let flags = std::fs::read_to_string(d.join("osm/ibsim-flags.txt")).unwrap();
    let sim = Ibsim::start(d, "fabric.topo", &flags);
    let verify = |file: &str| {
        railyard(
            d,
            [
                "verify",
                "--plan",
                "seed-leaf-spine",
                "--ibsim",
                "--discovered",
                file,
                "--json",
            ],
        )
    };
    let findings = |o: &Output| -> Vec<String> {
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        r["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap().to_string())
            .collect()
    };
    // Every form of the real rediscovery matches the plan, recognised by content.
    for (file, args) in [
        ("disc.txt", vec!["ibnetdiscover"]),
        ("ports.txt", vec!["ibnetdiscover", "-p"]),
        ("links.txt", vec!["iblinkinfo"]),
    ] {
        std::fs::write(d.join(file), sim.run(&args)).unwrap();
        let o = verify(file);
        assert_eq!(o.status.code(), Some(0), "{file}: {}", text(&o.stdout));
    }
    drop(sim);
    let disc = std::fs::read_to_string(d.join("disc.txt")).unwrap();
    // The edit, `sed 's/4xHDR/4xFDR10/g'`: every cable runs at the wrong rate.
    std::fs::write(d.join("fdr10.txt"), disc.replace("4xHDR", "4xFDR10")).unwrap();
    let o = verify("fdr10.txt");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let kinds = findings(&o);
    assert_eq!(kinds.len(), 160);
    assert!(kinds.iter().all(|k| k == "wrong-rate"), "{kinds:?}");
    // Unknown speed, unknown width: unknown-rate, never a pass.
    for (from, to) in [("4xHDR", "4x???"), ("4xHDR", "??HDR")] {
        std::fs::write(d.join("unknown.txt"), disc.replace(from, to)).unwrap();
        let o = verify("unknown.txt");
        assert_eq!(o.status.code(), Some(1), "{to}");
        assert!(findings(&o).iter().all(|k| k == "unknown-rate"), "{to}");
    }
    // The same edit in iblinkinfo's words.
    let links = std::fs::read_to_string(d.join("links.txt")).unwrap();
    std::fs::write(
        d.join("links-fdr10.txt"),
        links.replace("53.125 Gbps", "10.0 Gbps (FDR10)"),
    )
    .unwrap();
    let o = verify("links-fdr10.txt");
    assert_eq!(o.status.code(), Some(1));
    assert!(findings(&o).iter().all(|k| k == "wrong-rate"));
    // A switch that claims 255 ports.
    let leaf = disc
        .lines()
        .find(|l| l.starts_with("Switch\t40 ") && l.contains("\"leaf01\""))
        .unwrap();
    std::fs::write(
        d.join("ports255.txt"),
        disc.replace(leaf, &leaf.replace("Switch\t40 ", "Switch\t255 ")),
    )
    .unwrap();
    let o = verify("ports255.txt");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(findings(&o), ["wrong-port-count"]);
    // A link that came up degraded: leaf01 port 1 to srv01 hca1 set to DDR at both ends in ibsim.
    let topo = std::fs::read_to_string(d.join("fabric.topo")).unwrap();
    let degraded: String = topo
        .lines()
        .map(|l| {
            let hit = (l.starts_with("[1]\t\"srv01 hca1\"[1]") && current_is(&topo, l, "leaf01"))
                || (l.starts_with("[1]\t\"leaf01\"[1]") && current_is(&topo, l, "srv01 hca1"));
            let l = if hit {
                l.replace("w=2 e=4", "w=2 s=2 e=0")
            } else {
                l.to_string()
            };
            l + "\n"
        })
        .collect();
    assert_eq!(degraded.matches("s=2 e=0").count(), 2);
    std::fs::write(d.join("degraded.topo"), degraded).unwrap();
    let sim = Ibsim::start(d, "degraded.topo", &flags);
    std::fs::write(d.join("degraded.txt"), sim.run(&["ibnetdiscover"])).unwrap();
    std::fs::write(d.join("degraded-links.txt"), sim.run(&["iblinkinfo"])).unwrap();
    drop(sim);
    for file in ["degraded.txt", "degraded-links.txt"] {
        let o = verify(file);
        assert_eq!(o.status.code(), Some(1), "{file}");
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let f = &r["findings"].as_array().unwrap();
        assert_eq!(f.len(), 1, "{file}: {f:?}");
        assert_eq!(f[0]["kind"], "wrong-rate");
        assert_eq!(
            f[0]["fix"],
            "leaf01[1] - srv01 hca1[1] runs at 4xDDR, planned 4xHDR: check the cable, transceivers and port settings"
        );
        // Issue 13: the file imports; the fabric stays HDR and the link keeps its rate.
        let imp = railyard(d, ["import", "ibnet", file, "-o", "degraded.json"]);
        assert_eq!(imp.status.code(), Some(0), "{}", text(&imp.stderr));
        assert!(
            text(&imp.stdout)
                .contains("10 servers, 80 HCAs, 6 switches in 2 tiers, 160 cables (ib-hdr)"),
            "{}",
            text(&imp.stdout)
        );
        let json = std::fs::read_to_string(d.join("degraded.json")).unwrap();
        assert!(
            json.contains("\"gbps\":16.0,\"lanes\":4"),
            "the DDR link is 4 x 4 Gb/s"
        );
    }
}

/// Whether `line` of an ibsim topology sits in the record of the node `id`.
fn current_is(topo: &str, line: &str, id: &str) -> bool {
    let at = topo.find(line).unwrap();
    let header = topo[..at]
        .lines()
        .rev()
        .find(|l| l.starts_with("Switch\t") || l.starts_with("Ca\t"))
        .unwrap_or("");
    header.contains(&format!("\"{id}\""))
}

/// An output that is the command's own input is refused before anything is written: `import ibnet
/// X --out X` and `export ibnet --fabric X --out X` replaced a discovery dump with their output,
/// `sim flows --flows F --fct F` the flows file with its CSV.
#[test]
fn an_output_that_is_the_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = railyard(
        d,
        ["export", "ibnet", "seed-leaf-spine", "--out", "fabric.topo"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let topo = std::fs::read(d.join("fabric.topo")).unwrap();
    for args in [
        &["import", "ibnet", "fabric.topo", "--out", "fabric.topo"][..],
        &[
            "export",
            "ibnet",
            "--fabric",
            "fabric.topo",
            "--out",
            "./fabric.topo",
        ][..],
    ] {
        let o = railyard(d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            text(&o.stderr).contains("is also the input"),
            "{}",
            text(&o.stderr)
        );
        assert_eq!(std::fs::read(d.join("fabric.topo")).unwrap(), topo);
    }
    std::fs::write(d.join("flows.txt"), "0 1 1000000\n").unwrap();
    let o = railyard(
        d,
        [
            "sim",
            "flows",
            "--hosts",
            "4",
            "--hosts-per-leaf",
            "2",
            "--spines",
            "2",
            "--link-gbps",
            "100",
            "--link-latency-ns",
            "100",
            "--flows",
            "flows.txt",
            "--fct",
            "flows.txt",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--fct flows.txt is also the input (--flows flows.txt)"));
    assert_eq!(
        std::fs::read_to_string(d.join("flows.txt")).unwrap(),
        "0 1 1000000\n"
    );
}

/// The node GUIDs of an ibnetdiscover output (`switchguid=` and `caguid=` records), sorted.
fn node_guids(discovery: &str) -> Vec<u64> {
    let mut guids: Vec<u64> = discovery
        .lines()
        .filter_map(|l| {
            l.strip_prefix("switchguid=")
                .or_else(|| l.strip_prefix("caguid="))
        })
        .map(|g| {
            // `switchguid=0x...(...)`: the port GUID in brackets is not the node's.
            let g = g.split(['(', ' ', '\t']).next().unwrap();
            u64::from_str_radix(g.trim_start_matches("0x"), 16).unwrap()
        })
        .collect();
    guids.sort_unstable();
    guids
}

/// A site's discovery exported again keeps the site's node GUIDs: the exported topology says
/// them, and ibnetdiscover run on a real ibsim loaded with it reports them, so what the export
/// describes can be matched with the site's own tools' output by GUID. (Exports of imported dumps
/// used railyard's own GUIDs, 0x0002c901... and 0x0002c902..., which no node of the site has.)
#[test]
fn an_exported_discovery_keeps_the_sites_guids() {
    let dump = real_dump("mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover");
    let site = node_guids(&std::fs::read_to_string(&dump).unwrap());
    assert_eq!(site.len(), 8, "2 switches and 6 HCAs");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = railyard(d, ["import", "ibnet", &dump, "-o", "imported.json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = railyard(
        d,
        [
            "export",
            "ibnet",
            "--fabric",
            "imported.json",
            "-o",
            "again.topo",
            "--opensm-dir",
            "osm",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let topo = std::fs::read_to_string(d.join("again.topo")).unwrap();
    assert_eq!(node_guids(&topo), site, "{topo}");
    if !ib_tools_present() {
        return;
    }
    let flags = std::fs::read_to_string(d.join("osm/ibsim-flags.txt")).unwrap();
    let sim = Ibsim::start(d, "again.topo", &flags);
    let disc = sim.run(&["ibnetdiscover"]);
    drop(sim);
    assert_eq!(node_guids(&disc), site, "{disc}");
}

/// A link whose two ends report different rates is taken at the lower wherever a discovery is
/// read, and every command says so on stderr: `verify --discovered` and `--fabric DISCOVERY`, as
/// `import` does (man ibnetdiscover's example, two such links).
#[test]
fn rate_disagreements_are_noted_wherever_a_discovery_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dump = real_dump("voltaire-isr9024-sdr-2007-manpage.ibnetdiscover");
    let out = railyard(d, ["import", "ibnet", &dump, "-o", "imported.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = railyard(
        d,
        ["verify", "--plan", "imported.json", "--discovered", &dump],
    );
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stdout));
    let err = text(&v.stderr);
    assert_eq!(err.matches("different rates").count(), 2, "{err}");
    assert!(
        err.contains("line 15: the two ends of this link report different rates (4xSDR here, 1xSDR at line 26), so it is taken at the lower, 1xSDR"),
        "{err}"
    );
    let e = railyard(d, ["export", "ibnet", "--fabric", &dump, "-o", "out.topo"]);
    assert_eq!(e.status.code(), Some(0), "{}", text(&e.stderr));
    assert_eq!(text(&e.stderr).matches("different rates").count(), 2);
}
