//! Round trips through the real ibsim and ibnetdiscover (Debian's ibsim-utils and infiniband-diags).
//!
//! Each test starts its own ibsim on its own socket name (IBSIM_SOCKNAME), wraps every client call in
//! `timeout`, and stops only the ibsim it started. Without the tools the tests fail under CI=true and
//! are skipped with a message elsewhere.

use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_spec::{presets, ClusterSpec, Overrides};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn tools_present() -> bool {
    let ok = ["ibsim", "ibsim-run", "ibnetdiscover", "timeout"]
        .iter()
        .all(|t| {
            Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
    if !ok && std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("ibsim, ibsim-run or ibnetdiscover is missing; scripts/test installs ibsim-utils and infiniband-diags");
    }
    if !ok {
        eprintln!("skipping: ibsim-utils / infiniband-diags not installed (run scripts/test)");
    }
    ok
}

fn fabric(preset: &str, o: Overrides) -> Fabric {
    let mut raw = presets::raw(preset).unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

/// An ibsim process that is killed when dropped.
struct Ibsim {
    child: Child,
    sock: String,
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_ibsim(dir: &Path, topo: &str, sock: &str, flags: &str) -> Ibsim {
    let file = dir.join("fabric.topo");
    std::fs::write(&file, topo).unwrap();
    let log = std::fs::File::create(dir.join("ibsim.log")).unwrap();
    let mut cmd = Command::new("ibsim");
    cmd.args(flags.split_whitespace()).arg("-s").arg(&file);
    let child = cmd
        .env("IBSIM_SOCKNAME", sock)
        .stdin(Stdio::piped())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start ibsim");
    let sim = Ibsim {
        child,
        sock: sock.to_string(),
    };
    let start = Instant::now();
    loop {
        let mut text = String::new();
        std::fs::File::open(dir.join("ibsim.log"))
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        if text.contains("sim>") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "ibsim did not come up:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    sim
}

fn client(sim: &Ibsim, args: &[&str]) -> String {
    let out = Command::new("timeout")
        .arg("120")
        .arg("ibsim-run")
        .args(args)
        .env("IBSIM_SOCKNAME", &sim.sock)
        .output()
        .expect("run ibsim-run");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn round_trip(name: &str, f: &Fabric) {
    let dir = tempfile::tempdir().unwrap();
    let export = railyard_ib::export::ibsim_topology(f).unwrap();
    let flags = railyard_ib::export::opensm_files(f)
        .into_iter()
        .find(|(n, _)| *n == "ibsim-flags.txt")
        .unwrap()
        .1;
    let sock = format!("railyard-test-{name}-{}", std::process::id());
    let sim = start_ibsim(dir.path(), &export.text, &sock, &flags);
    let disc = client(&sim, &["ibnetdiscover"]);
    let switches = disc.lines().filter(|l| l.starts_with("Switch")).count();
    let cas = disc.lines().filter(|l| l.starts_with("Ca")).count();
    let expect_sw = f.nodes.iter().filter(|n| n.is_switch()).count();
    let expect_ca = f
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, railyard_fabric::NodeKind::Nic { .. }))
        .count();
    assert_eq!(
        (switches, cas),
        (expect_sw, expect_ca),
        "{name}: discovered switches and CAs"
    );
    // Every cabled port shows up once on each end.
    let port_lines = disc.lines().filter(|l| l.starts_with('[')).count();
    assert_eq!(
        port_lines,
        2 * f.network_links().count(),
        "{name}: discovered port lines"
    );
    for n in f.nodes.iter().filter(|n| n.is_switch()) {
        assert!(
            disc.contains(&format!("# \"{}\"", n.name)),
            "{name}: {} not discovered by description",
            n.name
        );
    }
}

#[test]
fn seed_two_switch_round_trips_through_ibsim() {
    if !tools_present() {
        return;
    }
    round_trip(
        "two-switch",
        &fabric("seed-two-switch", Overrides::default()),
    );
}

#[test]
fn seed_leaf_spine_round_trips_through_ibsim() {
    if !tools_present() {
        return;
    }
    round_trip(
        "leaf-spine",
        &fabric("seed-leaf-spine", Overrides::default()),
    );
}

#[test]
fn rail_optimized_unit_round_trips_through_ibsim() {
    if !tools_present() {
        return;
    }
    let f = fabric(
        "dgx-h100-superpod",
        Overrides {
            servers: Some(32),
            ..Default::default()
        },
    );
    round_trip("rail-su", &f);
}
