//! The fabric as built through the real binary (issue 13): `check` on real dumps and on fabrics
//! rediscovered through the real ibsim (a link degraded through a SubnSet(PortInfo) that
//! `ibportstate` sends, as a subnet manager or an operator would), `--fabric` on `sim collective`
//! equal to the plan's own simulation, and `check --impact`; every kind of `check` finding on a
//! fabric the test changes cable by cable in the topology ibsim runs.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::ibsim::{ib_tools_present, tools_present, Ibsim};
use crate::common::railyard_in as railyard;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `railyard export ibnet PRESET [flags]` into `dir` (fabric.topo, osm/).
fn export(dir: &Path, preset: &str, flags: &[&str]) {
    let mut args = vec![
        "export",
        "ibnet",
        preset,
        "-o",
        "fabric.topo",
        "--opensm-dir",
        "osm",
    ];
    args.extend(flags);
    let out = railyard(dir, args);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn check(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["check"];
    all.extend(args);
    railyard(dir, all)
}

/// `sim collective allreduce` at 1 GiB: the step lines (flows, GB/s per edge, bottleneck: the
/// routes) and the busbw.
fn allreduce(dir: &Path, args: &[&str]) -> (Vec<String>, f64) {
    let mut all = vec!["sim", "collective", "allreduce", "-b", "1G", "-e", "1G"];
    all.extend(args);
    let out = railyard(dir, all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    let t = text(&out.stdout);
    let steps = t
        .lines()
        .filter(|l| l.starts_with("# ring step") || l.starts_with("# tree step"))
        .map(str::to_string)
        .collect();
    let busbw = t
        .lines()
        .find(|l| l.trim_start().starts_with("1073741824"))
        .and_then(|l| l.split_whitespace().nth(7))
        .and_then(|b| b.parse().ok())
        .unwrap_or_else(|| panic!("no 1 GiB row: {t}"));
    (steps, busbw)
}

/// Exported, loaded into ibsim, rediscovered by ibnetdiscover and imported, a seed leaf-spine and
/// a rail-optimized unit (one 20-server SU of the HDR DGX A100 SuperPOD, which ibsim shows at its
/// true rate) simulate as their plans: the same ring and tree steps (flows, edge bandwidth,
/// bottleneck link) and the same busbw, within the few nanoseconds of cable propagation that
/// discovery cannot measure. The discovery itself (`--fabric disc.txt`) gives the same.
#[test]
fn sim_collective_on_a_rediscovered_fabric_equals_its_plan() {
    if !ib_tools_present() {
        return;
    }
    for (preset, flags) in [
        ("seed-leaf-spine", vec![]),
        ("dgx-a100-superpod", vec!["--servers", "20"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        export(d, preset, &flags);
        let sim = Ibsim::start_exported(d, "fabric.topo");
        std::fs::write(d.join("disc.txt"), sim.run(&["ibnetdiscover"])).unwrap();
        drop(sim);
        let imp = railyard(d, ["import", "ibnet", "disc.txt", "-o", "imported.json"]);
        assert_eq!(imp.status.code(), Some(0), "{}", text(&imp.stderr));
        let mut plan_args = vec![preset];
        plan_args.extend(&flags);
        let (plan_steps, plan_busbw) = allreduce(d, &plan_args);
        for file in ["imported.json", "disc.txt"] {
            let (steps, busbw) = allreduce(
                d,
                &["--fabric", file, "--gpus-per-server", "8", "--gpu", "A100"],
            );
            assert_eq!(steps, plan_steps, "{preset} {file}: routes");
            assert!(
                (busbw - plan_busbw).abs() / plan_busbw < 1e-3,
                "{preset} {file}: {busbw} vs {plan_busbw}"
            );
        }
        // Discovery sees no GPUs: without the server flags the error names them.
        let out = railyard(
            d,
            [
                "sim",
                "collective",
                "allreduce",
                "--fabric",
                "imported.json",
            ],
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("give --gpu and --gpus-per-server"),
            "{}",
            text(&out.stderr)
        );
        // `check` on the rediscovered preset: healthy, exit 0.
        let out = check(d, &["disc.txt"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        assert!(text(&out.stdout).ends_with("healthy: no findings\n"));
    }
}

/// `sim collective alltoall` on 1,024 DGX H100 took 0.2 s on the plan and 16.3 s on its own
/// discovered form: only a designed fabric was laid out by symmetry, so a discovered one had its
/// 67 million flows counted. A rail-optimized HDR SuperPOD of 260 servers (2,080 GPUs, 4.3
/// million flows: past the per-flow limit) rediscovered through the real ibsim is laid out by
/// symmetry as its plan is: no step timed from counted flows, the plan's step and busbw (the
/// few nanoseconds of cable discovery cannot measure aside).
#[test]
fn regression_alltoall_on_a_rediscovered_fabric_was_not_laid_out_by_symmetry() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    export(d, "dgx-a100-superpod", &["--servers", "260"]);
    let sim = Ibsim::start_exported(d, "fabric.topo");
    std::fs::write(d.join("disc.txt"), sim.run(&["ibnetdiscover"])).unwrap();
    drop(sim);
    let alltoall = |args: &[&str]| {
        // D-mod-K, the routing whose layout by symmetry this regression is about (InfiniBand's
        // default is adaptive).
        let mut all = vec![
            "sim",
            "collective",
            "alltoall",
            "-b",
            "1G",
            "-e",
            "1G",
            "--routing",
            "dmodk",
        ];
        all.extend(args);
        let out = railyard(d, all);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    let plan = alltoall(&["dgx-a100-superpod", "--servers", "260"]);
    let found = alltoall(&["dgx-a100-superpod", "--fabric", "disc.txt"]);
    let step = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("# alltoall"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no step line: {t}"))
    };
    // 1 GiB rounds down to whole floats per rank (1073737600 B on 2,080 ranks): the one row.
    let busbw = |t: &str| -> f64 {
        t.lines()
            .find(|l| !l.starts_with('#') && !l.trim().is_empty())
            .and_then(|l| l.split_whitespace().nth(7))
            .and_then(|b| b.parse().ok())
            .unwrap_or_else(|| panic!("no row: {t}"))
    };
    assert!(step(&plan).contains("4324320 flows"), "{plan}");
    assert!(!found.contains("timed from the flows counted"), "{found}");
    assert_eq!(step(&found), step(&plan));
    let (p, q) = (busbw(&plan), busbw(&found));
    assert!((p - q).abs() / p < 1e-3, "{p} vs {q}");
}

/// One uplink of the seed leaf-spine degraded in ibsim: leaf01 port 21 (to spine01 port 1) set to
/// width 1x and port 22 (to spine02 port 1) to speed EDR, by `ibportstate` over ibsim's
/// SubnSet(PortInfo) (ibsim's console has no command for it; ibsim applies LinkWidthEnabled and
/// LinkSpeedExtEnabled to both ends of the link). ibnetdiscover and iblinkinfo both show the
/// degraded links, and `check` reports each naming both ends, exit 1; `--impact` prices them.
#[test]
fn links_degraded_through_ibsim_are_check_findings_with_their_cost() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    export(d, "seed-leaf-spine", &[]);
    let sim = Ibsim::start_exported(d, "fabric.topo");
    // ibsim-run attaches at the file's first node, leaf01: direct route `0` is leaf01 itself.
    sim.run(&["ibportstate", "-D", "0", "21", "width", "1"]);
    sim.run(&["ibportstate", "-D", "0", "22", "espeed", "2"]);
    let disc = sim.run(&["ibnetdiscover"]);
    let links = sim.run(&["iblinkinfo"]);
    drop(sim);
    assert_eq!(disc.matches("1xHDR").count(), 2, "both ends print 1xHDR");
    assert_eq!(disc.matches("4xEDR").count(), 2);
    assert_eq!(links.matches("==( 1X ").count(), 2);
    std::fs::write(d.join("disc.txt"), &disc).unwrap();
    std::fs::write(d.join("links.txt"), &links).unwrap();
    for file in ["disc.txt", "links.txt"] {
        let out = check(d, &[file, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{file}: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let f = v["health"]["findings"].as_array().unwrap();
        assert_eq!(f.len(), 2, "{file}: {f:?}");
        for (finding, (port, spine, rate)) in f
            .iter()
            .zip([(21, "spine01", "1xHDR"), (22, "spine02", "4xEDR")])
        {
            assert_eq!(finding["kind"], "slow-link");
            let ends = &finding["ends"][0];
            assert_eq!(ends[0]["device"], "leaf01", "{file}");
            assert_eq!(ends[0]["port"], port);
            assert_eq!(ends[0]["guid"], "0x0002c90100000001");
            assert_eq!(ends[1]["device"], spine);
            assert_eq!(ends[1]["port"], 1);
            assert!(
                finding["what"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("runs at {rate}")),
                "{finding}"
            );
        }
    }
    let out = check(
        d,
        &[
            "disc.txt",
            "--impact",
            "--gpu",
            "A100",
            "--gpus-per-server",
            "8",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    let row = |name: &str| {
        t.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {t}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Both repaired: the plan's 175.6 GB/s; one link of 80 at a quarter of its rate held all-reduce
    // to 48.5 (a 72.4% loss; see study::impact's test for the hand computation).
    let all = row("all ");
    assert_eq!(all[1..4], ["48.5", "175.6", "72.4%"], "{t}");
    // With a model, the training step too: tokens/s as discovered, repaired and the loss.
    let out = check(
        d,
        &[
            "disc.txt",
            "--impact",
            "--gpu",
            "A100",
            "--gpus-per-server",
            "8",
            "--model",
            "llama3-8b",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["impact"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "two findings and all at once");
    let tokens = v["impact"]["as_is"]["tokens_per_s"].as_f64().unwrap();
    let repaired = rows[2]["repaired"]["tokens_per_s"].as_f64().unwrap();
    assert!(repaired > tokens, "{repaired} vs {tokens}");
    assert!(rows[2]["tokens_loss_pct"].as_f64().unwrap() > 0.0);
    // Server flags are needed for --impact.
    let out = check(d, &["disc.txt", "--impact"]);
    assert_eq!(out.status.code(), Some(2));
}

fn real(name: &str) -> String {
    format!(
        "{}/../ib/tests/data/real/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The public real dumps (crates/ib/tests/data/real, sources in its README): `check` describes
/// them and exits 1 on their faults; input that is not a discovery is exit 2.
#[test]
fn check_describes_the_real_dumps_and_exits_by_their_health() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = check(
        d,
        &[&real("voltaire4036-infiniscale-qdr-ddr-2020.ibnetdiscover")],
    );
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    assert!(
        t.contains("89 hosts with 89 HCAs, 11 switches, 159 cables (23 at 4xDDR, 136 at 4xQDR)"),
        "{t}"
    );
    assert!(t.contains("  leaf       6 switches"), "{t}");
    // Its 23 DDR hosts are DDR-only ConnectX parts (devid 0x6732): no cable to reseat.
    assert_eq!(t.matches("  slow-device: runs at 4xDDR").count(), 23, "{t}");
    assert!(!t.contains("slow-link"), "{t}");
    let out = check(d, &[&real("sx6036-qdr-fdr10-2014.ibnetdiscover")]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    assert!(
        t.contains("144 hosts with 144 HCAs, 8 switches, 192 cables"),
        "{t}"
    );
    assert!(
        t.contains("few-uplinks: leaf \"MF0;ib1:SX6036/U1\" has 7 uplinks"),
        "{t}"
    );
    // A QLogic 12800-180 director as `ibnetdiscover -s -p` printed it, progress lines first: its
    // leaf boards and spine chips are the tiers, and the one host at 4xDDR the only finding.
    let out = check(d, &[&real("avakas-qlogic12800-qdr-2016.ibnetdiscover-p")]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    for line in [
        "281 hosts with 281 HCAs, 25 switches, 569 cables (1 at 4xDDR, 568 at 4xQDR)\n",
        "  leaf      16 switches",
        "  spine      9 switches",
        "links per leaf-spine pair: 2 links on 144 pairs",
        "1 finding:",
        "  slow-link: runs at 4xDDR (16 Gb/s) where 280 of the 281 links between hosts and leaves run at 4xQDR",
        "    \"node008 HCA-1\" (0x001175000077f8e0) port 1 - \"QLogic 12800-180 GUID=0x00066a00e8001310 L107\" (0x00066a00ec002e04) port 6",
    ] {
        assert!(t.contains(line), "{line}\n{t}");
    }
    // PlaFRIM's two subnets, one file each, concatenated: two subnets, each checked on its own.
    let both = format!(
        "{}{}",
        std::fs::read_to_string(real("plafrim2-truescale-qdr-2016-subnet0.ibnetdiscover-p"))
            .unwrap(),
        std::fs::read_to_string(real("plafrim2-is5030-qdr-2016-subnet1.ibnetdiscover-p")).unwrap()
    );
    std::fs::write(d.join("plafrim2.txt"), both).unwrap();
    let out = check(d, &["plafrim2.txt"]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    for line in [
        "118 hosts with 119 HCAs, 8 switches, 178 cables (177 at 4xQDR, 1 at 4xSDR) in 2 subnets",
        "2 findings:",
        "  slow-link: runs at 4xSDR (8 Gb/s) where 22 of the 23 links between hosts and leaves run at 4xQDR",
        "  few-uplinks: leaf \"TS-i12k00066a00e30076ab\" has 11 uplinks where 4 of the 5 leaves have 12",
    ] {
        assert!(t.contains(line), "{line}\n{t}");
    }
    // An EDR Switch-IB and an FDR SX6012 from an NVIDIA support article: three loop cables, three
    // slow hosts, and the query libibmad printed as timed out in line 1, with its route.
    let out = check(
        d,
        &[&real(
            "mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover",
        )],
    );
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    for line in [
        "5 hosts with 6 HCAs, 2 switches, 10 cables (4 at 4xEDR, 3 at 4xFDR, 2 at 4xQDR, 1 at 4xSDR)\n",
        "7 findings:",
        "  slow-link: runs at 4xSDR (8 Gb/s) where 2 of the 6 links between hosts and leaves run at 4xFDR (54.5 Gb/s)",
        // r-ufm101's two HCAs are QDR ConnectX parts (devid 0x673c) at QDR; r-ufm96's ConnectX-4
        // at SDR on an FDR switch is a cable fault.
        "  slow-device: runs at 4xQDR (32 Gb/s), the top speed of the HCA \"r-ufm101 HCA-1\" (ConnectX (MT25408 Hermon QDR, PCIe gen2), device id 0x673c)",
        "  slow-device: runs at 4xQDR (32 Gb/s), the top speed of the HCA \"r-ufm101 HCA-2\"",
        "  loopback: a cable from port 19 of \"SwitchIB Mellanox Technologies\" back to its own port 21",
        "  discovery-warning: line 1: the tool printed a failed query (`src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110; Connection timed out`)",
        "`smpquery -D nodeinfo 0,1,1,31`",
    ] {
        assert!(t.contains(line), "{line}\n{t}");
    }
    // An HDR cluster (MQM8700 leaves, MCS8500 directors) from a PuTTY log, less the shell prompt
    // logged after the output: three tiers, five leaves an uplink short, four EDR appliance links.
    let log =
        std::fs::read_to_string(real("sat11-mqm8700-mcs8500-hdr-2021.ibnetdiscover")).unwrap();
    let cut = log.trim_end().rfind('\n').unwrap() + 1;
    std::fs::write(d.join("sat11.txt"), &log[..cut]).unwrap();
    let out = check(d, &["sat11.txt"]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out.stdout);
    for line in [
        "383 hosts with 2328 HCAs, 400 switches, 8723 cables (4 at 4xEDR, 8719 at 4xHDR)\n",
        "  leaf     154 switches",
        "  spine    160 switches",
        "  core      86 switches",
        "links per leaf-spine pair: 1 link on 3075 pairs",
        "117 findings:",
        // The two UFM appliances' four HCAs are ConnectX-4 (devid 0x1013) at EDR, their top speed.
        "  slow-device: runs at 4xEDR (100 Gb/s), the top speed of the HCA \"sat11-0101-0902-01ufm HCA-1\" (ConnectX-4, device id 0x1013), where 2324 of the 2328 links between hosts and leaves run at 4xHDR (200 Gb/s)",
        "  few-uplinks: leaf \"MF0;sat11-0101-0906-07ib0:MQM8700/U1\" has 19 uplinks where 149 of the 154 leaves have 20",
        // The missing uplink goes where the leaf's peers have theirs: ports 21-40 here (hosts on
        // 1-16), the gap at 27 on this leaf, whose peers' port 27 reaches L02 of 0905; not the
        // first free port (17, a host port).
        "fix: cable the missing uplink: \"MF0;sat11-0101-0902-14ib0:MQM8700/U1\" (0x0c42a10300cf28c8) port 27 to \"MF0;sat11-0101-0905-01ib1-A:MCS8500/L02/U1\"",
        "fix: cable the missing uplink: \"MF0;sat11-0101-0906-07ib0:MQM8700/U1\" (0x0c42a10300bdf234) port 35 to \"MF0;sat11-0101-0906-01ib1-A:MCS8500/L05/U2\"",
    ] {
        assert!(t.contains(line), "{line}\n{}", &t[..2000.min(t.len())]);
    }
    std::fs::write(d.join("bad.txt"), "Switch 36 \"S-1\"\n[1] \"H-2\"[1]\n").unwrap();
    let out = check(d, &["bad.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.txt: line 2"),
        "{}",
        text(&out.stderr)
    );
}

/// `check --impact` on the real Switch-IB lab fabric: its slow hosts are simulated repaired; its
/// loop cables and the failed query are listed as not simulated, each with why.
#[test]
fn check_impact_on_a_real_lab_fabric_says_why_some_findings_are_not_simulated() {
    let dir = tempfile::tempdir().unwrap();
    let out = check(
        dir.path(),
        &[
            &real("mellanox-lab-switchib-sx6012-edr-fdr-2016.ibnetdiscover"),
            "--impact",
            "--gpu",
            "H100",
            "--gpus-per-server",
            "8",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.contains("\"r-ufm96 HCA-1\"[1] - \"MF0;switch-de779e:SX6012/U1\"[8]"),
        "{t}"
    );
    assert_eq!(
        t.matches("not simulated (it carries no traffic between hosts): loopback: ")
            .count(),
        3,
        "{t}"
    );
    assert!(
        t.contains(
            "not simulated (what the failed query missed is unknown): discovery-warning: line 1"
        ),
        "{t}"
    );
}

/// `--fabric` takes discovery output directly on every command that evaluates a design: a real
/// 2014 QDR fabric (its servers described by the flags) trains, compares as the first design,
/// reports and exports; without the server flags each names them (exit 2).
#[test]
fn every_command_takes_a_real_discovery_as_its_fabric() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = real("sx6036-qdr-fdr10-2014.ibnetdiscover");
    let servers = ["--gpu", "H100", "--gpus-per-server", "8"];
    let run = |args: &[&str], with_servers: bool| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--fabric", f.as_str()]);
        if with_servers {
            all.extend(servers);
        }
        railyard(d, all)
    };
    for args in [
        &["train", "--model", "llama3-8b"][..],
        &["compare", "seed-edr-fat-tree"],
        &["report", "-o", "as-built.html", "--no-sim"],
    ] {
        let out = run(args, true);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let out = run(args, false);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("give --gpu and --gpus-per-server"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = run(&["train", "--model", "llama3-8b"], true);
    assert!(
        text(&out.stdout).starts_with(
            "railyard train: llama3-8b on sx6036-qdr-fdr10-2014.ibnetdiscover (1152 x H100)"
        ),
        "{}",
        text(&out.stdout)
    );
    let out = run(&["compare", "seed-edr-fat-tree", "--json"], true);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["designs"][0]["summary"]["servers"], 144);
    assert!(std::fs::read_to_string(d.join("as-built.html"))
        .unwrap()
        .contains("the fabric as built"));
    // Export needs no servers: the discovery goes back to ibsim at its own rates.
    let out = run(&["export", "ibnet", "-o", "again.topo"], false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// An ibsim topology as `export ibnet` writes it, changed cable by cable the way a technician
/// would change the floor: every cable is declared at both ends (`[port] "peer"[port] w=.. e=..`
/// under each node's `Switch`/`Ca` line), so a change edits both lines.
struct Topo {
    lines: Vec<String>,
}

impl Topo {
    fn read(path: &Path) -> Topo {
        let text = std::fs::read_to_string(path).unwrap();
        Topo {
            lines: text.lines().map(str::to_string).collect(),
        }
    }

    fn write(&self, path: &Path) {
        std::fs::write(path, self.lines.join("\n") + "\n").unwrap();
    }

    /// The index of node `name`'s `Switch`/`Ca` line.
    fn header(&self, name: &str) -> usize {
        let quoted = format!("\"{name}\"");
        self.lines
            .iter()
            .position(|l| {
                let Some((kind, rest)) = l.split_once('\t') else {
                    return false;
                };
                (kind == "Switch" || kind == "Ca")
                    && rest
                        .split_once(' ')
                        .is_some_and(|(_, q)| q.starts_with(&quoted))
            })
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    /// The index of the line for port `port` of node `name`.
    fn port_line(&self, name: &str, port: u32) -> Option<usize> {
        let start = self.header(name) + 1;
        let prefix = format!("[{port}]\t");
        self.lines[start..]
            .iter()
            .take_while(|l| l.starts_with('['))
            .position(|l| l.starts_with(&prefix))
            .map(|i| start + i)
    }

    /// Unplugs the cable on `name` port `port` (both ends); returns the far end.
    fn unlink(&mut self, name: &str, port: u32) -> (String, u32) {
        let i = self
            .port_line(name, port)
            .unwrap_or_else(|| panic!("{name}[{port}] is not cabled"));
        let line = self.lines.remove(i);
        let peer = line.split('"').nth(1).unwrap().to_string();
        let peer_port: u32 = line
            .split('"')
            .nth(2)
            .and_then(|r| r.strip_prefix('['))
            .and_then(|r| r.split(']').next())
            .and_then(|p| p.parse().ok())
            .unwrap();
        let j = self.port_line(&peer, peer_port).unwrap();
        self.lines.remove(j);
        (peer, peer_port)
    }

    /// Cables `a` port `p` to `b` port `q` at 4xHDR (both ends free).
    fn link(&mut self, (a, p): (&str, u32), (b, q): (&str, u32)) {
        for (me, mp, other, op) in [(a, p, b, q), (b, q, a, p)] {
            assert!(self.port_line(me, mp).is_none(), "{me}[{mp}] is cabled");
            let h = self.header(me);
            self.lines
                .insert(h + 1, format!("[{mp}]\t\"{other}\"[{op}]\tw=2 e=4"));
        }
    }

    /// Gives node `name` `ports` ports (a dual-port HCA for 2).
    fn ports(&mut self, name: &str, ports: u32) {
        let h = self.header(name);
        let (kind, rest) = self.lines[h].split_once('\t').unwrap();
        let (_, rest) = rest.split_once(' ').unwrap();
        self.lines[h] = format!("{kind}\t{ports} {rest}");
    }
}

/// `check --json` on `dir/topo` as rediscovered by ibnetdiscover in ibsim: the exit status and
/// the findings.
fn check_rediscovered(d: &Path, topo: &str) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let sim = Ibsim::start_exported(d, topo);
    let disc = sim.run(&["ibnetdiscover"]);
    drop(sim);
    let file = format!("{topo}.disc");
    std::fs::write(d.join(&file), &disc).unwrap();
    check_file(d, &file)
}

fn check_file(d: &Path, file: &str) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let out = check(d, &[file, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{file}: {e}: {}", text(&out.stderr)));
    let findings = v["health"]["findings"].as_array().unwrap().clone();
    let plain = text(&check(d, &[file]).stdout);
    (out.status.code(), findings, plain)
}

/// One end of a finding's cable: (device, GUID, port).
fn end_of(e: &serde_json::Value) -> (String, String, u64) {
    (
        e["device"].as_str().unwrap().to_string(),
        e["guid"].as_str().unwrap_or("").to_string(),
        e["port"].as_u64().unwrap(),
    )
}

fn end(device: &str, guid: &str, port: u64) -> (String, String, u64) {
    (device.to_string(), guid.to_string(), port)
}

/// A seed leaf-spine of 8 servers (4 leaves of 16 hosts and 16 uplinks, 8 to each of 2 spines;
/// ports 33-40 free everywhere) exported to `dir/fabric.topo`, healthy as rediscovered.
fn seed8(d: &Path) -> Topo {
    export(d, "seed-leaf-spine", &["--servers", "8"]);
    let (code, findings, plain) = check_rediscovered(d, "fabric.topo");
    assert_eq!(code, Some(0), "{plain}");
    assert!(findings.is_empty(), "{plain}");
    Topo::read(&d.join("fabric.topo"))
}

const LEAF01: &str = "0x0002c90100000001";
const LEAF02: &str = "0x0002c90100000002";
const LEAF03: &str = "0x0002c90100000003";
const SPINE02: &str = "0x0002c90100000006";

/// A leaf with an uplink unplugged in ibsim has fewer uplinks than its peers: the finding names the
/// leaf and the spine with free ports on both to cable, exit 1.
#[test]
fn a_leaf_short_of_an_uplink_in_ibsim_is_a_finding() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut t = seed8(d);
    assert_eq!(t.unlink("leaf03", 18), ("spine02".to_string(), 17));
    t.write(&d.join("short.topo"));
    let (code, f, plain) = check_rediscovered(d, "short.topo");
    assert_eq!(code, Some(1), "{plain}");
    assert_eq!(f.len(), 1, "{plain}");
    assert_eq!(f[0]["kind"], "few-uplinks");
    assert!(
        f[0]["what"]
            .as_str()
            .unwrap()
            .contains("leaf \"leaf03\" has 15 uplinks where 3 of the 4 leaves have 16"),
        "{plain}"
    );
    // The suggested cable: the first free ports of leaf03 and spine02, the very ports unplugged.
    let e = &f[0]["ends"][0];
    assert_eq!(end_of(&e[0]), end("leaf03", LEAF03, 18));
    assert_eq!(end_of(&e[1]), end("spine02", SPINE02, 17));
    assert_eq!(
        f[0]["fix"],
        "cable the missing uplink: \"leaf03\" (0x0002c90100000003) port 18 to \"spine02\" (0x0002c90100000006) port 17"
    );
}

/// A cable moved from one spine to the other leaves the leaf with as many uplinks as its peers but
/// 9 to spine01 and 7 to spine02: an uneven pair, every cable of it named at both ends.
#[test]
fn uneven_links_between_a_leaf_and_its_spines_in_ibsim_are_a_finding() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut t = seed8(d);
    let (spine, _) = t.unlink("leaf03", 18);
    assert_eq!(spine, "spine02");
    t.link(("leaf03", 18), ("spine01", 33));
    t.write(&d.join("uneven.topo"));
    let (code, f, plain) = check_rediscovered(d, "uneven.topo");
    assert_eq!(code, Some(1), "{plain}");
    assert_eq!(f.len(), 1, "{plain}");
    assert_eq!(f[0]["kind"], "uneven-links");
    assert_eq!(
        f[0]["what"],
        "\"leaf03\" has 7 links to \"spine02\" but 9 to another spine: D-mod-K routes more destinations over fewer cables"
    );
    let ends = f[0]["ends"].as_array().unwrap();
    assert_eq!(ends.len(), 7);
    for e in ends {
        let (a, b) = (end_of(&e[0]), end_of(&e[1]));
        assert_eq!((a.0.as_str(), a.1.as_str()), ("leaf03", LEAF03));
        assert_eq!(
            a.2 % 2,
            0,
            "leaf03's spine02 ports are the even ones: {a:?}"
        );
        assert_eq!((b.0.as_str(), b.1.as_str()), ("spine02", SPINE02));
    }
    assert!(f[0]["fix"]
        .as_str()
        .unwrap()
        .starts_with("move a cable from a spine it has 9 links to onto \"spine02\""));
    assert!(
        plain.contains(
            "links per leaf-spine pair: 7 links on 1 pair, 8 links on 6 pairs, 9 links on 1 pair"
        ),
        "{plain}"
    );
}

/// A cable between two leaves (free ports 33) is a same-tier link naming both.
#[test]
fn a_cable_between_two_leaves_in_ibsim_is_a_finding() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut t = seed8(d);
    t.link(("leaf01", 33), ("leaf02", 33));
    t.write(&d.join("same-tier.topo"));
    let (code, f, plain) = check_rediscovered(d, "same-tier.topo");
    assert_eq!(code, Some(1), "{plain}");
    assert_eq!(f.len(), 1, "{plain}");
    assert_eq!(f[0]["kind"], "same-tier-link");
    let e = &f[0]["ends"][0];
    let mut both = [end_of(&e[0]), end_of(&e[1])];
    both.sort();
    assert_eq!(both, [end("leaf01", LEAF01, 33), end("leaf02", LEAF02, 33)]);
    assert!(f[0]["fix"]
        .as_str()
        .unwrap()
        .starts_with("move it to a port of a spine"));
    // The leaves stay leaves and keep their 16 uplinks each.
    assert!(plain.contains("  leaf       4 switches"), "{plain}");
}

/// Four HCAs of srv01 made dual-port in ibsim, port 2 of each cabled to leaf02 (free ports 33-35)
/// but one's left unplugged: that HCA has a port down while its twin is up, named with both ends of
/// the port that is up.
#[test]
fn an_hca_with_a_port_down_while_its_twin_is_up_in_ibsim_is_a_finding() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut t = seed8(d);
    for (hca, leaf02_port) in [("srv01 hca1", 33), ("srv01 hca2", 34), ("srv01 hca3", 35)] {
        t.ports(hca, 2);
        t.link((hca, 2), ("leaf02", leaf02_port));
    }
    t.ports("srv01 hca4", 2);
    t.write(&d.join("twin.topo"));
    let (code, f, plain) = check_rediscovered(d, "twin.topo");
    assert_eq!(code, Some(1), "{plain}");
    assert_eq!(f.len(), 1, "{plain}");
    assert_eq!(f[0]["kind"], "port-down");
    assert_eq!(
        f[0]["what"],
        "HCA \"srv01 hca4\" has port 2 down while port 1 is up, where 3 of the 4 2-port HCAs have 2 cabled"
    );
    let ends = f[0]["ends"].as_array().unwrap();
    assert_eq!(ends.len(), 2);
    assert_eq!(
        end_of(&ends[0][0]),
        end("srv01 hca4", "0x0002c90200000040", 2)
    );
    assert!(
        ends[0][1].is_null(),
        "nothing is cabled to the port that is down"
    );
    assert_eq!(
        end_of(&ends[1][0]),
        end("srv01 hca4", "0x0002c90200000040", 1)
    );
    assert_eq!(end_of(&ends[1][1]), end("leaf01", LEAF01, 4));
    assert!(f[0]["fix"].as_str().unwrap().starts_with("check the cable"));
    assert!(
        plain.contains("    \"srv01 hca4\" (0x0002c90200000040) port 2 (down)"),
        "{plain}"
    );
}

/// One HCA of a server unplugged in ibsim: the host shows 7 HCAs where the others show 8 and the
/// finding says which one is not seen, and where it belongs: discovery sees nothing of the HCA, but
/// its peers on the same leaf cable their hca4 three ports after their hca1, so srv03's goes to
/// port 4 of leaf02 (srv03's hca1 is at port 1), which is free.
#[test]
fn a_host_missing_an_hca_in_ibsim_is_a_finding() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut t = seed8(d);
    t.unlink("srv03 hca4", 1);
    t.write(&d.join("missing.topo"));
    let (code, f, plain) = check_rediscovered(d, "missing.topo");
    assert_eq!(code, Some(1), "{plain}");
    // The leaf that lost the HCA has one host fewer than its peers: no other finding.
    assert_eq!(f.len(), 1, "{plain}");
    assert_eq!(f[0]["kind"], "missing-hca");
    assert_eq!(
        f[0]["what"],
        "host \"srv03\" shows 7 HCAs where 7 of the 8 hosts show 8: hca4 not seen"
    );
    assert!(f[0]["fix"].as_str().unwrap().contains("ibstat"));
    assert!(
        plain.contains(
            "\"srv03 hca4 (not discovered)\" port 1 - \"leaf02\" (0x0002c90100000002) port 4"
        ),
        "{plain}"
    );
    // Rail-optimized: the missing HCA's rail leaf, at the port the host has on every other rail.
    let r = dir.path().join("rail");
    std::fs::create_dir_all(&r).unwrap();
    export(&r, "dgx-h100-superpod", &["--servers", "4"]);
    let mut t = Topo::read(&r.join("fabric.topo"));
    let (leaf, port) = t.unlink("su1-srv03 hca4", 1);
    t.write(&r.join("missing.topo"));
    let (code, f, plain) = check_rediscovered(&r, "missing.topo");
    assert_eq!(code, Some(1), "{plain}");
    let missing: Vec<_> = f.iter().filter(|x| x["kind"] == "missing-hca").collect();
    assert_eq!(missing.len(), 1, "{plain}");
    let far = &missing[0]["ends"][0][1];
    assert_eq!(
        (far["device"].as_str(), far["port"].as_u64()),
        (Some(leaf.as_str()), Some(u64::from(port))),
        "{plain}"
    );
}

/// Two spare switches cabled only to each other, on a subnet of their own, discovered there and
/// appended to the fabric's discovery (as a site concatenates the output of its subnets): each is
/// a switch with no hosts and no uplinks, named with both ends of its cables.
#[test]
fn switches_with_no_hosts_and_no_uplinks_are_findings() {
    if !ib_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    seed8(d);
    let main = std::fs::read_to_string(d.join("fabric.topo.disc")).unwrap();
    let mut island = String::new();
    for (n, me, other) in [(1, "spare01", "spare02"), (2, "spare02", "spare01")] {
        island.push_str(&format!(
            "vendid=0x2c9\nsysimgguid=0x2c9030000000{n}\nswitchguid=0x2c9030000000{n}\nSwitch\t40 \"{me}\"\n[1]\t\"{other}\"[1]\tw=2 e=4\n[2]\t\"{other}\"[2]\tw=2 e=4\n\n"
        ));
    }
    std::fs::write(d.join("island.topo"), island).unwrap();
    let sim = Ibsim::start_exported(d, "island.topo");
    let spare = sim.run(&["ibnetdiscover"]);
    drop(sim);
    std::fs::write(d.join("both.disc"), format!("{main}{spare}")).unwrap();
    let (code, f, plain) = check_file(d, "both.disc");
    assert_eq!(code, Some(1), "{plain}");
    assert_eq!(f.len(), 2, "{plain}");
    for (finding, (me, my_guid, other, other_guid)) in f.iter().zip([
        (
            "spare01",
            "0x0002c90300000001",
            "spare02",
            "0x0002c90300000002",
        ),
        (
            "spare02",
            "0x0002c90300000002",
            "spare01",
            "0x0002c90300000001",
        ),
    ]) {
        assert_eq!(finding["kind"], "isolated-switch");
        assert_eq!(
            finding["what"],
            format!("switch \"{me}\" has no hosts and no path to a switch that has")
        );
        let ends = finding["ends"].as_array().unwrap();
        assert_eq!(ends.len(), 2, "{finding}");
        // This switch's end first.
        for (port, e) in (1..).zip(ends) {
            assert_eq!(end_of(&e[0]), end(me, my_guid, port));
            assert_eq!(end_of(&e[1]), end(other, other_guid, port));
        }
        assert!(finding["fix"]
            .as_str()
            .unwrap()
            .starts_with("cable it into the fabric"));
    }
    assert!(
        plain.contains("2 switches with no path to a host"),
        "{plain}"
    );
}

/// Every railyard GUID in `text` (`0x` and hex digits, with leading zeros or without) moved into a
/// site's ranges, the low 32 bits kept: switches to 0xec0d9a03..., HCAs to 0x506b4b03... (the
/// OUIs of the SwitchIB switches and ConnectX HCAs of a real EDR fabric), so nothing of railyard's
/// own numbering is left for routing to lean on.
fn site_guids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("0x") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let len = tail
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(tail.len());
        let digits = &tail[..len];
        let moved = u64::from_str_radix(digits, 16)
            .ok()
            .and_then(|v| match v >> 32 {
                0x0002c901 => Some(0xec0d_9a03_0000_0000 | (v & 0xffff_ffff)),
                0x0002c902 => Some(0x506b_4b03_0000_0000 | (v & 0xffff_ffff)),
                _ => None,
            });
        match moved {
            Some(v) if digits.len() == 16 => out.push_str(&format!("0x{v:016x}")),
            Some(v) => out.push_str(&format!("0x{v:x}")),
            None => {
                out.push_str("0x");
                out.push_str(digits);
            }
        }
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

/// The site's own routing on the fabric as discovered: a seed leaf-spine loaded into ibsim with a
/// site's GUIDs, routed by the real OpenSM (ftree, two passes: the second on a settled fabric) and
/// rediscovered. `sim collective --fabric DISCOVERED --routing opensm:opensm-lfts.dump` traces
/// every route through OpenSM's tables by the site's GUIDs, from the discovery or from its
/// fabric.json alike, and they equal railyard's D-mod-K: the same steps and busbw. The plan itself,
/// whose GUIDs are railyard's, is told the dump is not of it (exit 2).
#[test]
fn the_sites_opensm_tables_route_the_fabric_as_discovered() {
    if !ib_tools_present() || !tools_present(&["opensm"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    export(d, "seed-leaf-spine", &["--servers", "8"]);
    for file in ["fabric.topo", "osm/root_guids.txt", "osm/cn_guids.txt"] {
        let moved = site_guids(&std::fs::read_to_string(d.join(file)).unwrap());
        std::fs::write(d.join(file), moved).unwrap();
    }
    let sim = Ibsim::start_exported(d, "fabric.topo");
    let cache = d.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    for pass in 0..2 {
        let dump = d.join(format!("dump{pass}"));
        std::fs::create_dir_all(&dump).unwrap();
        let log = d.join(format!("opensm{pass}.log"));
        let out = Command::new("timeout")
            .arg("180")
            .arg("ibsim-run")
            .args([
                "opensm",
                "-o",
                "-d2",
                "-D",
                "0x43",
                "-R",
                "ftree,no_fallback",
            ])
            .arg("-f")
            .arg(&log)
            .arg("--dump_files_dir")
            .arg(&dump)
            .arg("-a")
            .arg(d.join("osm/root_guids.txt"))
            .arg("-u")
            .arg(d.join("osm/cn_guids.txt"))
            .env("IBSIM_SOCKNAME", &sim.sock)
            // OpenSM keeps GUID-to-LID assignments in its cache directory: one of our own.
            .env("OSM_CACHE_DIR", &cache)
            .output()
            .expect("run opensm");
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            log_text.contains("ftree tables configured on all switches")
                && log_text.contains("SUBNET UP"),
            "pass {pass}: OpenSM ftree did not route (exit {:?})",
            out.status.code()
        );
    }
    std::fs::copy(d.join("dump1/opensm-lfts.dump"), d.join("lfts.dump")).unwrap();
    std::fs::write(d.join("disc.txt"), sim.run(&["ibnetdiscover"])).unwrap();
    drop(sim);
    let lfts = std::fs::read_to_string(d.join("lfts.dump")).unwrap();
    assert!(
        lfts.contains("guid 0xec0d9a0300000001 ('leaf01')"),
        "the dump names the site's GUIDs"
    );
    let imp = railyard(d, ["import", "ibnet", "disc.txt", "-o", "imported.json"]);
    assert_eq!(imp.status.code(), Some(0), "{}", text(&imp.stderr));
    let json = std::fs::read_to_string(d.join("imported.json")).unwrap();
    assert!(
        json.contains("\"leaf01\":\"0xec0d9a0300000001\"")
            || json.contains("\"leaf01\": \"0xec0d9a0300000001\""),
        "fabric.json keeps the site's GUIDs"
    );
    let servers = ["--gpus-per-server", "8", "--gpu", "A100"];
    let mut outputs = Vec::new();
    for file in ["disc.txt", "imported.json"] {
        let mut args = vec![
            "sim",
            "collective",
            "allreduce",
            "-b",
            "1G",
            "-e",
            "1G",
            "--fabric",
            file,
        ];
        args.extend(servers);
        args.extend(["--routing", "opensm:lfts.dump"]);
        let out = railyard(d, &args);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
        let t = text(&out.stdout);
        // Every one of the 64 connections compared was traced through the dump (a route missing
        // from it would be exit 2): OpenSM's ftree routes by the LIDs it gave the site's GUIDs,
        // as railyard's D-mod-K routes the fabric as discovered (they differed on 16 of 64 while
        // the import kept ibnetdiscover's order of devices and cables).
        assert!(
            t.contains("# routing: opensm:lfts.dump")
                && t.contains("OpenSM's routes equal railyard's dmodk on all 64 connections"),
            "{file}: {t}"
        );
        // The same routes and times from the discovery and from its fabric.json.
        outputs.push(t.lines().skip(1).collect::<Vec<_>>().join("\n"));
    }
    assert_eq!(outputs[0], outputs[1]);
    // The plan has railyard's GUIDs, not the site's: the dump is not of it.
    let out = railyard(
        d,
        [
            "sim",
            "collective",
            "allreduce",
            "seed-leaf-spine",
            "--servers",
            "8",
            "--routing",
            "opensm:lfts.dump",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("lfts.dump: none of the fabric's 6 switches is in the LFT dump, by railyard's own GUIDs of the plan"),
        "{err}"
    );
    assert!(err.contains("\"leaf01\" (0x0002c90100000001)"), "{err}");
    assert!(err.contains("'leaf01' (0xec0d9a0300000001)"), "{err}");
}
