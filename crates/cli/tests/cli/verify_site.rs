//! `railyard verify` as a site uses it (issue 13, items 5-7), through the real binary: the site's
//! names (`--names`, hosts renamed through the real ibsim), findings grouped with cable ids and
//! rack positions, `--scope` during staged bring-up, and Ethernet fabrics from LLDP tables
//! (`export lldp`, `verify --lldp`).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

use crate::common::ibsim::ib_tools_present;
use crate::common::railyard_in as railyard;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `ibnetdiscover` of `topo` (in `dir`) run against a real ibsim, which is stopped (this child
/// only) afterwards.
fn rediscover(dir: &Path, topo: &str, flags: &str) -> String {
    let sock = format!("railyard-site-{}-{topo}", std::process::id());
    let log = std::fs::File::create(dir.join(format!("{topo}.log"))).unwrap();
    let mut child = Command::new("ibsim")
        .args(flags.split_whitespace())
        .arg("-s")
        .arg(dir.join(topo))
        .env("IBSIM_SOCKNAME", &sock)
        .stdin(std::process::Stdio::piped())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start ibsim");
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(dir.join(format!("{topo}.log")))
        .unwrap_or_default()
        .contains("sim>")
    {
        if start.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("ibsim did not come up");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = Command::new("timeout")
        .args(["600", "ibsim-run", "ibnetdiscover"])
        .env("IBSIM_SOCKNAME", &sock)
        .output()
        .expect("run ibnetdiscover");
    let _ = child.kill();
    let _ = child.wait();
    assert!(out.status.success(), "ibnetdiscover: {}", text(&out.stderr));
    text(&out.stdout)
}

fn export(dir: &Path, args: &[&str]) -> String {
    let mut argv = vec!["export", "ibnet"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["-o", "fabric.topo", "--opensm-dir", "osm"]);
    let out = railyard(dir, &argv);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::read_to_string(dir.join("osm/ibsim-flags.txt")).unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)))
}

#[test]
fn names_match_a_fabric_whose_hosts_were_renamed_through_ibsim() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let flags = export(d, &["seed-leaf-spine"]);
    // The site's names, set as ibsim sets node descriptions: the `# "..."` of each record's header.
    // Servers srv01-srv09 are node101-node109 with mlx5_N devices, and the names CSV says so; srv10
    // is renamed too but left out of the CSV, and so are the spines (vendor descriptions): those
    // match by their place in the tree.
    let topo = std::fs::read_to_string(d.join("fabric.topo")).unwrap();
    let mut csv = String::from("plan,site\n");
    for s in 1..=9 {
        csv.push_str(&format!("srv{s:02},node1{s:02}\n"));
    }
    for l in 1..=4 {
        csv.push_str(&format!("leaf{l:02},\"ib-leaf-a{l}, row 2\"\n"));
    }
    std::fs::write(d.join("names.csv"), &csv).unwrap();
    let renamed: String = topo
        .lines()
        .map(|line| {
            let header = line.starts_with("Switch\t") || line.starts_with("Ca\t");
            let Some((head, desc)) = line.split_once("\t# ").filter(|_| header) else {
                return format!("{line}\n");
            };
            let name = desc.trim_matches('"');
            let site = if let Some(rest) = name.strip_prefix("srv") {
                let (n, hca) = rest.split_once(" hca").unwrap();
                let k: u32 = hca.parse().unwrap();
                let host = if n == "10" {
                    "mystery-host".to_string()
                } else {
                    format!("node1{n}")
                };
                format!("{host} mlx5_{}", k - 1)
            } else if let Some(l) = name.strip_prefix("leaf0") {
                format!("ib-leaf-a{l}, row 2")
            } else {
                format!("MF0;{name}-x:MQM8700/U1")
            };
            format!("{head}\t# \"{site}\"\n")
        })
        .collect();
    assert!(renamed.contains("# \"node105 mlx5_7\""));
    std::fs::write(d.join("site.topo"), renamed).unwrap();
    let disc = rediscover(d, "site.topo", &flags);
    // ibnetdiscover shows the site's names.
    assert!(disc.contains("\"node105 mlx5_7\""), "{disc}");
    assert!(!disc.contains("\"srv05 hca8\""));
    std::fs::write(d.join("disc.txt"), &disc).unwrap();

    let verify = |extra: &[&str]| {
        let mut argv = vec![
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--ibsim",
            "--discovered",
            "disc.txt",
        ];
        argv.extend_from_slice(extra);
        railyard(d, &argv)
    };
    let o = verify(&["--names", "names.csv"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let out = text(&o.stdout);
    assert!(
        out.starts_with("match: 160 planned cables, 160 discovered, no differences"),
        "{out}"
    );
    // 4 leaves and 72 HCAs by the names map; 2 spines and srv10's 8 HCAs by place.
    assert!(
        out.contains(
            "0 devices matched by description, 76 by the names map, 10 by place in the tree"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "note: 10 devices whose descriptions match no planned name were matched by their place"
        ),
        "{out}"
    );
    let r = json(&verify(&["--names", "names.csv", "--json"]));
    assert_eq!(r["matches"], true);
    assert_eq!(r["matched_by_names"], 76);
    assert_eq!(r["matched_by_place"], 10);
    // Without the names nothing is recognised, and every cable differs.
    let o = verify(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
}

#[test]
fn names_and_scope_errors_name_the_line_or_item_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    export(d, &["seed-leaf-spine"]);
    for (csv, says) in [
        (
            "srv01,a\nsrv02,a\n",
            "names.csv: line 2: site name \"a\" is already given",
        ),
        ("srv01,a,b\n", "names.csv: line 1: 3 fields"),
        (
            "plan,site\nsrv99,a\n",
            "names.csv: line 2: \"srv99\" is not a device of the plan",
        ),
    ] {
        std::fs::write(d.join("names.csv"), csv).unwrap();
        let o = railyard(
            d,
            [
                "verify",
                "--plan",
                "seed-leaf-spine",
                "--discovered",
                "fabric.topo",
                "--names",
                "names.csv",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{csv}");
        assert!(text(&o.stderr).contains(says), "{csv}: {}", text(&o.stderr));
    }
    let o = railyard(
        d,
        [
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "fabric.topo",
            "--scope",
            "leaf01,su9",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("scope \"su9\" names nothing in the plan; valid: a switch (leaf01), a server (srv01) or an HCA (srv01 hca1)"),
        "{}",
        text(&o.stderr)
    );
    // On a plan without scalable units an item that is no unit matched every HCA: `nosuch` alone
    // passed, and a server's scope took every cable.
    let scoped = |item: &str| {
        railyard(
            d,
            [
                "verify",
                "--plan",
                "seed-leaf-spine",
                "--discovered",
                "fabric.topo",
                "--scope",
                item,
            ],
        )
    };
    let o = scoped("nosuch");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stdout));
    assert!(text(&o.stderr).contains("scope \"nosuch\" names nothing in the plan"));
    let o = scoped("srv02");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("no differences in scope srv02 (8 planned cables)"),
        "{}",
        text(&o.stdout)
    );
    // A server named twice was "names nothing in the plan": its HCAs were already taken.
    let o = scoped("srv02,srv02");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("(8 planned cables)"),
        "{}",
        text(&o.stdout)
    );
    let o = railyard(d, ["verify", "--plan", "seed-leaf-spine"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--discovered or --lldp is required"
    );
}

#[test]
fn every_link_at_the_wrong_rate_on_a_512_server_rediscovery_is_one_grouped_finding() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = ["dgx-h100-superpod", "--servers", "512"];
    let flags = export(d, &plan);
    // NDR shows as HDR in ibsim: without --ibsim every one of the 12,288 cables is at the wrong rate.
    std::fs::write(d.join("disc.txt"), rediscover(d, "fabric.topo", &flags)).unwrap();
    let verify = |extra: &[&str]| {
        let mut argv = vec!["verify", "--plan"];
        argv.extend_from_slice(&plan);
        argv.extend_from_slice(&["--discovered", "disc.txt"]);
        argv.extend_from_slice(extra);
        railyard(d, &argv)
    };
    let o = verify(&[]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert_eq!(
        out.lines().filter(|l| l.contains("cables run at")).collect::<Vec<_>>(),
        ["  12288 cables run at 4xHDR, planned 4xNDR: check each cable, its transceivers and port settings; the first 3:"],
        "{out}"
    );
    assert!(out.contains("\nwrong-rate (12288):\n"), "{out}");
    assert!(
        out.contains("    and 12285 more (--all lists every one)"),
        "{out}"
    );
    assert!(out.lines().count() <= 8, "{out}");
    // The examples in numeric port order, each with its cable id and rack positions.
    let examples: Vec<&str> = out.lines().filter(|l| l.starts_with("    C")).collect();
    assert_eq!(examples.len(), 3, "{out}");
    assert!(examples[0].contains(" core01[1] (row "), "{out}");
    assert!(examples[1].contains(" core01[2] (row "), "{out}");
    // --all lists every one; --json keeps every one, each with its cable id.
    let all = text(&verify(&["--all"]).stdout);
    assert_eq!(
        all.lines()
            .filter(|l| l.contains(", planned 4xNDR: check the cable"))
            .count(),
        12288
    );
    let r = json(&verify(&["--json"]));
    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 12288);
    assert!(findings.iter().all(|f| f["cables"][0]["id"]
        .as_str()
        .is_some_and(|id| id.starts_with('C'))));
    // Numeric order: core01[2] before core01[10].
    let at = |p: &str| {
        findings
            .iter()
            .position(|f| f["fix"].as_str().unwrap().starts_with(p))
            .unwrap()
    };
    assert!(at("core01[2] ") < at("core01[10] "));
}

#[test]
fn a_swapped_pair_is_reported_with_both_cable_ids_and_rack_positions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    export(d, &["seed-leaf-spine"]);
    let topo = std::fs::read_to_string(d.join("fabric.topo")).unwrap();
    // Exchange the cables at leaf01 ports 1 and 2 (to srv01 hca1 and hca2), at both ends.
    let swapped = topo
        .replace("[1]\t\"srv01 hca1\"[1]", "[1]\t\"srv01 hcaX\"[1]")
        .replace("[2]\t\"srv01 hca2\"[1]", "[2]\t\"srv01 hca1\"[1]")
        .replace("[1]\t\"srv01 hcaX\"[1]", "[1]\t\"srv01 hca2\"[1]");
    let mut out = String::new();
    let mut current = "";
    for line in swapped.lines() {
        if line.starts_with("Ca\t") {
            current = if line.contains("\"srv01 hca1\"") {
                "hca1"
            } else if line.contains("\"srv01 hca2\"") {
                "hca2"
            } else {
                ""
            };
        }
        let line = match current {
            "hca1" if line.starts_with("[1]\t\"leaf01\"[1]") => {
                line.replace("\"leaf01\"[1]", "\"leaf01\"[2]")
            }
            "hca2" if line.starts_with("[1]\t\"leaf01\"[2]") => {
                line.replace("\"leaf01\"[2]", "\"leaf01\"[1]")
            }
            _ => line.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    std::fs::write(d.join("swapped.topo"), out).unwrap();
    let o = railyard(
        d,
        [
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "swapped.topo",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // cabling.csv of the same plan gives the ids: C0000001 leaf01 p1 - srv01 hca1,
    // C0000002 leaf01 p2 - srv01 hca2.
    let plan = railyard(d, ["plan", "seed-leaf-spine", "--out", "plan"]);
    assert!(plan.status.success());
    let csv = std::fs::read_to_string(d.join("plan/cabling.csv")).unwrap();
    assert!(
        csv.contains("\nC0000001,") && csv.lines().nth(1).unwrap().contains("srv01,hca1,leaf01,p1"),
        "{csv}"
    );
    assert!(
        csv.lines().nth(2).unwrap().contains("srv01,hca2,leaf01,p2"),
        "{csv}"
    );
    assert_eq!(
        out,
        "1 difference: 160 planned cables, 160 discovered (86 devices matched by description, 0 by the names map, 0 by place in the tree)\n\
         swap (1):\n  the cables at leaf01[1] and leaf01[2] are swapped: exchange them\n\
         \x20   C0000001 leaf01[1] (row 2 rack 5 U1) - srv01 hca1[1] (row 2 rack 1 U1)\n\
         \x20   C0000002 leaf01[2] (row 2 rack 5 U1) - srv01 hca2[1] (row 2 rack 1 U1)\n\
         \x20   found leaf01[1] (row 2 rack 5 U1) - srv01 hca2[1] (row 2 rack 1 U1)\n\
         \x20   found leaf01[2] (row 2 rack 5 U1) - srv01 hca1[1] (row 2 rack 1 U1)\n"
    );
    let r = json(&railyard(
        d,
        [
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--discovered",
            "swapped.topo",
            "--json",
        ],
    ));
    let cables = r["findings"][0]["cables"].as_array().unwrap();
    assert_eq!(cables[0]["id"], "C0000001");
    assert_eq!(cables[1]["id"], "C0000002");
    assert_eq!(
        cables[0]["a_location"],
        serde_json::json!({"row": 2, "rack": 5, "slot": 1, "u": 1, "height_u": 1})
    );
    // A fabric.json plan has the cable ids but no layout, so no places.
    let o = railyard(
        d,
        [
            "verify",
            "--plan",
            "plan/fabric.json",
            "--discovered",
            "swapped.topo",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert!(
        out.contains("    C0000001 leaf01[1] - srv01 hca1[1]\n"),
        "{out}"
    );
    assert!(!out.contains("(row "), "{out}");
}

/// The topology without the devices whose names start with any of `prefixes` (their records, the
/// directives before them and the port lines that lead to them): units not cabled yet.
fn without(topo: &str, prefixes: &[&str]) -> String {
    let gone = |name: &str| prefixes.iter().any(|p| name.starts_with(p));
    let mut out = String::new();
    let mut pending = String::new();
    let mut skip = false;
    for line in topo.lines() {
        let quoted = line.split('"').nth(1).unwrap_or("");
        if line.starts_with("Switch\t") || line.starts_with("Ca\t") {
            skip = gone(quoted);
            if !skip {
                out.push_str(&pending);
            }
            pending.clear();
        } else if line.contains('=') && !line.starts_with('[') && !line.starts_with('#') {
            pending.push_str(line);
            pending.push('\n');
            continue;
        } else if line.starts_with('[') && (skip || gone(quoted)) {
            continue;
        }
        if !skip || line.is_empty() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn scope_on_one_unit_of_a_half_cabled_fabric_reports_only_that_unit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    export(d, &["dgx-h100-superpod"]);
    let topo = std::fs::read_to_string(d.join("fabric.topo")).unwrap();
    // Units 1 and 2 cabled; 3 and 4 not yet.
    std::fs::write(d.join("half.topo"), without(&topo, &["su3-", "su4-"])).unwrap();
    let verify = |extra: &[&str]| {
        let mut argv = vec![
            "verify",
            "--plan",
            "dgx-h100-superpod",
            "--ibsim",
            "--discovered",
            "half.topo",
        ];
        argv.extend_from_slice(extra);
        railyard(d, &argv)
    };
    let o = verify(&["--scope", "su1"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).starts_with("match: ") && text(&o.stdout).contains(" in scope su1 ("),
        "{}",
        text(&o.stdout)
    );
    let o = verify(&["--scope", "su1,su2", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    // su3: its 8 leaves are missing, nothing else.
    let r = json(&verify(&["--scope", "su3", "--json"]));
    let findings = r["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 8, "{findings:#?}");
    for f in findings {
        assert_eq!(f["kind"], "missing-device");
        // Where the missing switch should stand.
        assert!(f["device"]["location"]["rack"].as_u64().is_some(), "{f}");
        assert!(f["fix"].as_str().unwrap().starts_with("su3-leaf"), "{f}");
    }
    assert_eq!(r["scope"], serde_json::json!(["su3"]));
    // The whole fabric: both uncabled units.
    let r = json(&verify(&["--json"]));
    let fixes: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fix"].as_str().unwrap())
        .collect();
    assert_eq!(fixes.len(), 16, "{fixes:?}");
    assert!(fixes.iter().any(|f| f.starts_with("su4-")));
    // A single device scope: one leaf of unit 1.
    let o = verify(&["--scope", "su1-leaf1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

fn edit_table(dir: &Path, device: &str, edit: impl Fn(&mut Value)) {
    let path = dir.join(format!("tables/{device}.json"));
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// The entries of a table: `[{ifname: {...}}, ...]`.
fn entries(v: &mut Value) -> &mut Vec<Value> {
    v["lldp"]["interface"].as_array_mut().unwrap()
}

#[test]
fn lldp_tables_of_a_roce_plan_find_an_injected_swap_and_a_missing_cable() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = railyard(d, ["export", "lldp", "roce-400g-sn5600", "-o", "tables"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "wrote 152 neighbour tables to tables\n");
    let files = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d.join("tables"))
            .unwrap()
            .map(|e| format!("tables/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        v.sort();
        v
    };
    let verify = |extra: &[&str]| {
        let mut argv: Vec<String> = ["verify", "--plan", "roce-400g-sn5600", "--lldp"]
            .map(String::from)
            .to_vec();
        argv.extend(files());
        argv.extend(extra.iter().map(|s| s.to_string()));
        railyard(d, &argv)
    };
    // A host's management interface, cabled to a switch the plan does not have, is no fabric cable.
    edit_table(d, "su1-srv03", |v| {
        entries(v).push(serde_json::json!({"eno1": {
            "chassis": {"mgmt-sw1": {"capability": [{"type": "Bridge", "enabled": true}]}},
            "port": {"id": {"type": "ifname", "value": "swp3"}, "descr": "swp3"}
        }}));
    });
    // Files are bounded like every input: /dev/zero is refused.
    for flag in ["--lldp", "--names"] {
        let mut argv = vec!["verify", "--plan", "roce-400g-sn5600", flag, "/dev/zero"];
        if flag == "--names" {
            argv.extend(["--lldp", "tables/su1-leaf1.json"]);
        }
        let o = railyard(d, &argv);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", text(&o.stderr));
    }
    let o = verify(&[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).starts_with("match: 2048 planned cables, 2048 discovered"),
        "{}",
        text(&o.stdout)
    );

    // Swap: su1-leaf1 swp1 and swp2 (to su1-srv01 hca1 and su1-srv02 hca1) exchanged, as both
    // ends' tables then show it.
    edit_table(d, "su1-leaf1", |v| {
        let e = entries(v);
        let (a, b) = (e[0]["swp1"].clone(), e[1]["swp2"].clone());
        e[0]["swp1"] = b;
        e[1]["swp2"] = a;
    });
    for (srv, port) in [("su1-srv01", "swp2"), ("su1-srv02", "swp1")] {
        edit_table(d, srv, |v| {
            let e = entries(v);
            e[0]["hca1"]["port"]["id"]["value"] = port.into();
            e[0]["hca1"]["port"]["descr"] = port.into();
        });
    }
    // Missing: su1-srv05 hca3 unplugged (gone from its table and from su1-leaf3's).
    edit_table(d, "su1-srv05", |v| {
        entries(v).retain(|e| e.get("hca3").is_none())
    });
    edit_table(d, "su1-leaf3", |v| {
        entries(v).retain(|e| e.get("swp5").is_none())
    });
    let o = verify(&["--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let r = json(&o);
    let kinds: Vec<&str> = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["missing-cable", "swap"]);
    assert_eq!(
        r["findings"][0]["fix"],
        "add a cable su1-leaf3[5] - su1-srv05 hca3[1]"
    );
    assert_eq!(
        r["findings"][1]["fix"],
        "the cables at su1-leaf1[1] and su1-leaf1[2] are swapped: exchange them"
    );
    let out = text(&verify(&[]).stdout);
    assert!(out.contains("    C0000001 su1-leaf1[1] (row "), "{out}");
    assert!(out.contains("    C0000009 su1-leaf1[2] (row "), "{out}");

    // InfiniBand plans have no LLDP tables.
    for argv in [
        vec!["export", "lldp", "seed-leaf-spine", "-o", "ib"],
        vec![
            "verify",
            "--plan",
            "seed-leaf-spine",
            "--lldp",
            "tables/su1-leaf1.json",
        ],
    ] {
        let o = railyard(d, &argv);
        assert_eq!(o.status.code(), Some(2), "{argv:?}");
        assert!(
            text(&o.stderr).contains("has no LLDP neighbour tables"),
            "{}",
            text(&o.stderr)
        );
    }
    assert!(!d.join("ib").exists());

    // A broken table: exit 2 naming the file and line.
    std::fs::write(d.join("tables/su1-srv07.json"), "{\n  \"lldp\": {\n    \"interface\": [ {\"hca1\": {\"chassis\": {\"su1-leaf1\": {}}}} ]\n  }\n}\n").unwrap();
    let o = verify(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr)
            .contains("tables/su1-srv07.json: line 3: the neighbour on \"hca1\" has no port"),
        "{}",
        text(&o.stderr)
    );
}

/// The port settings of an ibsim topology file set the rate, as ibsim runs them: one link edited
/// to `w=1` at both ends (its comment still 4xHDR) gives the same finding from the file and from
/// ibnetdiscover run against a real ibsim loaded with it (the file alone verified as a match).
#[test]
fn an_ibsim_files_port_settings_verify_as_ibsim_runs_them() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    export(d, &["seed-leaf-spine"]);
    let topo = std::fs::read_to_string(d.join("fabric.topo")).unwrap();
    let edited = topo
        .replace(
            "[3]\t\"srv01 hca3\"[1]\tw=2 e=4",
            "[3]\t\"srv01 hca3\"[1]\tw=1 e=4",
        )
        .replace("[1]\t\"leaf01\"[3]\tw=2 e=4", "[1]\t\"leaf01\"[3]\tw=1 e=4");
    assert_ne!(edited, topo);
    std::fs::write(d.join("w1.topo"), edited).unwrap();
    std::fs::write(d.join("found.txt"), rediscover(d, "w1.topo", "")).unwrap();
    for discovered in ["w1.topo", "found.txt"] {
        let o = railyard(
            d,
            [
                "verify",
                "--plan",
                "seed-leaf-spine",
                "--discovered",
                discovered,
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{discovered}");
        assert!(
            text(&o.stdout).contains("leaf01[3] - srv01 hca3[1] runs at 1xHDR, planned 4xHDR"),
            "{discovered}: {}",
            text(&o.stdout)
        );
    }
}
