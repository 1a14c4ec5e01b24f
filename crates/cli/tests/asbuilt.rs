//! The fabric as built through the real binary (issue 13): `check` on real dumps and on fabrics
//! rediscovered through the real ibsim (a link degraded through a SubnSet(PortInfo) that
//! `ibportstate` sends, as a subnet manager or an operator would), `--fabric` on `sim collective`
//! equal to the plan's own simulation, and `check --impact`.

use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::railyard_in as railyard;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// ibsim, ibsim-run, ibnetdiscover, iblinkinfo and ibportstate, or a skip (a failure under
/// CI=true).
fn ib_tools_present() -> bool {
    let ok = [
        "ibsim",
        "ibsim-run",
        "ibnetdiscover",
        "iblinkinfo",
        "ibportstate",
        "timeout",
    ]
    .iter()
    .all(|t| {
        Command::new("sh")
            .args(["-c", &format!("command -v {t}")])
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("ibsim-utils or infiniband-diags is missing; scripts/test installs them");
    }
    if !ok {
        eprintln!("skipping: ibsim-utils / infiniband-diags not installed (run scripts/test)");
    }
    ok
}

/// An ibsim on its own socket, killed (this child only) when dropped.
struct Ibsim {
    child: std::process::Child,
    sock: String,
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ibsim {
    /// ibsim on `dir/topo` with the flags `export ibnet --opensm-dir` wrote.
    fn start(dir: &Path, topo: &str) -> Ibsim {
        let flags = std::fs::read_to_string(dir.join("osm/ibsim-flags.txt")).unwrap();
        // Tests run in parallel threads of one process: every ibsim needs a socket of its own.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sock = format!("railyard-asbuilt-{}-{n}", std::process::id());
        let log = std::fs::File::create(dir.join("ibsim.log")).unwrap();
        let child = Command::new("ibsim")
            .args(flags.split_whitespace())
            .arg("-s")
            .arg(dir.join(topo))
            .env("IBSIM_SOCKNAME", &sock)
            .stdin(std::process::Stdio::piped())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start ibsim");
        let sim = Ibsim { child, sock };
        let start = std::time::Instant::now();
        while !std::fs::read_to_string(dir.join("ibsim.log"))
            .unwrap_or_default()
            .contains("sim>")
        {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "ibsim did not come up"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        sim
    }

    /// A tool's output, run against this simulator (bounded by `timeout`).
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("timeout")
            .arg("120")
            .arg("ibsim-run")
            .args(args)
            .env("IBSIM_SOCKNAME", &self.sock)
            .output()
            .expect("run ibsim-run");
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    }
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
        let sim = Ibsim::start(d, "fabric.topo");
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
    let sim = Ibsim::start(d, "fabric.topo");
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
    assert_eq!(t.matches("  slow-link: runs at 4xDDR").count(), 23, "{t}");
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
    std::fs::write(d.join("bad.txt"), "Switch 36 \"S-1\"\n[1] \"H-2\"[1]\n").unwrap();
    let out = check(d, &["bad.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.txt: line 2"),
        "{}",
        text(&out.stderr)
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
