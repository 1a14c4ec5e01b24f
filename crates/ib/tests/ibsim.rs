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

fn spec(preset: &str, o: Overrides) -> ClusterSpec {
    let mut raw = presets::raw(preset).unwrap();
    o.apply(&mut raw).unwrap();
    ClusterSpec::from_raw(&raw, preset).unwrap()
}

fn fabric(preset: &str, o: Overrides) -> Fabric {
    railyard_fabric::build(&spec(preset, o), &Catalog::builtin()).unwrap()
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

impl Ibsim {
    /// Types commands into ibsim's console (Link, Unlink, ...).
    fn console(&mut self, commands: &str) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().expect("ibsim stdin");
        stdin.write_all(commands.as_bytes()).unwrap();
        stdin.flush().unwrap();
        // The console answers each command with a prompt; give it a moment to apply them.
        std::thread::sleep(Duration::from_millis(300));
    }
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

fn ibsim_for(name: &str, f: &Fabric, dir: &Path) -> Ibsim {
    let export = railyard_ib::export::ibsim_topology(f).unwrap();
    let flags = railyard_ib::export::opensm_files(f)
        .into_iter()
        .find(|(n, _)| *n == "ibsim-flags.txt")
        .unwrap()
        .1;
    // Tests run in parallel threads of one process: every ibsim needs a socket name of its own.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sock = format!("railyard-{name}-{}-{n}", std::process::id());
    start_ibsim(dir, &export.text, &sock, &flags)
}

fn verify(f: &Fabric, disc: &str) -> railyard_ib::verify::Verification {
    let d = railyard_ib::discovery::parse(disc).unwrap_or_else(|e| {
        panic!(
            "{} output does not parse: {e}",
            railyard_ib::discovery::detect(disc)
        )
    });
    railyard_ib::verify::verify(f, &d, railyard_ib::verify::Options { ibsim_rates: true })
}

/// One HCA description per separate subnet (rail-only rails are separate subnets, each with its
/// own subnet manager), to attach a discovery to each.
fn subnet_attach_points(f: &Fabric) -> Vec<String> {
    let mut uf = railyard_fabric::UnionFind::new(f.nodes.len());
    for (_, l) in f.network_links() {
        uf.union(f.port(l.a).node.0, f.port(l.b).node.0);
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut points = Vec::new();
    for (_, l) in f
        .network_links()
        .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::ServerLeaf)
    {
        let node = f.port(l.a).node;
        if seen.insert(uf.find(node.0)) {
            points.push(railyard_ib::export::node_desc(f, node));
        }
    }
    points
}

/// ibnetdiscover of every subnet, concatenated.
fn discover(sim: &Ibsim, f: &Fabric) -> String {
    discover_with(sim, f, "ibnetdiscover")
}

/// `tool` (ibnetdiscover or iblinkinfo) run from one HCA of every subnet, outputs concatenated.
fn discover_with(sim: &Ibsim, f: &Fabric, tool: &str) -> String {
    let points = subnet_attach_points(f);
    if points.len() <= 1 {
        return client(sim, &[tool]);
    }
    let mut all = String::new();
    for p in points {
        let out = Command::new("timeout")
            .arg("120")
            .arg("ibsim-run")
            .arg(tool)
            .env("IBSIM_SOCKNAME", &sim.sock)
            .env("SIM_HOST", &p)
            .output()
            .expect("run ibsim-run");
        assert!(
            out.status.success(),
            "{tool} at {p}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        all.push_str(&String::from_utf8(out.stdout).unwrap());
        all.push('\n');
    }
    all
}

fn round_trip(name: &str, f: &Fabric) {
    let dir = tempfile::tempdir().unwrap();
    let sim = ibsim_for(name, f, dir.path());
    let disc = discover(&sim, f);
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
    let report = verify(f, &disc);
    assert!(report.matches, "{name}: {:?}", report.findings);
    assert_eq!(report.discovered_cables, f.network_links().count());

    // Every cable by its ends' descriptions, with its rate: what each format must agree on.
    let cables = |text: &str| {
        let d = railyard_ib::discovery::parse(text).unwrap();
        let mut v: Vec<(String, u32, String, u32, String)> = d
            .links
            .iter()
            .map(|l| {
                let (a, b) = (&d.nodes[l.a.0], &d.nodes[l.b.0]);
                let (a, b) = ((a.desc.clone(), l.a.1), (b.desc.clone(), l.b.1));
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                let rate = l.rate.map(|r| r.to_string()).unwrap_or_default();
                (a.0, a.1, b.0, b.1, rate)
            })
            .collect();
        v.sort();
        v
    };
    // The per-port format (`ibnetdiscover -p`) of the same subnet reads to the same cables.
    if subnet_attach_points(f).len() == 1 {
        let ports = client(&sim, &["ibnetdiscover", "-p"]);
        let by_port = verify(f, &ports);
        assert!(by_port.matches, "{name} (-p): {:?}", by_port.findings);
        assert_eq!(by_port.discovered_cables, f.network_links().count());
        assert_eq!(
            cables(&ports),
            cables(&disc),
            "{name}: -p and the default format"
        );
        // With `-s` (`--show`) ibnetdiscover first prints a line for every node it reaches
        // (`DR path slid 0; dlid 0; 0,1 -> new Switch {...}`, as in the hwloc netloc data of
        // tests/data/real); both forms read past them to the same cables.
        for args in [&["ibnetdiscover", "-s"][..], &["ibnetdiscover", "-s", "-p"]] {
            let shown = client(&sim, args);
            assert!(
                shown
                    .lines()
                    .any(|l| l.starts_with("DR path ") && l.contains(" -> new Switch {")),
                "{name}: {args:?} printed no progress lines:\n{shown}"
            );
            assert_eq!(cables(&shown), cables(&disc), "{name}: {args:?}");
        }
        // And `iblinkinfo -l`, one line per port with both GUIDs.
        let lines = client(&sim, &["iblinkinfo", "-l"]);
        let by_line = verify(f, &lines);
        assert!(
            by_line.matches,
            "{name} (iblinkinfo -l): {:?}",
            by_line.findings
        );
        assert_eq!(
            cables(&lines),
            cables(&disc),
            "{name}: iblinkinfo -l and ibnetdiscover"
        );
    }
    // So does iblinkinfo (every subnet's, concatenated), found by content, with every switch's port
    // count as the plan has it.
    let links = discover_with(&sim, f, "iblinkinfo");
    assert_eq!(
        railyard_ib::discovery::detect(&links),
        railyard_ib::discovery::Format::Iblinkinfo
    );
    let by_links = verify(f, &links);
    assert!(
        by_links.matches,
        "{name} (iblinkinfo): {:?}",
        by_links.findings
    );
    assert_eq!(
        cables(&links),
        cables(&disc),
        "{name}: iblinkinfo and ibnetdiscover"
    );
    let d = railyard_ib::discovery::parse(&links).unwrap();
    let switches = d
        .nodes
        .iter()
        .filter(|n| n.kind == railyard_ib::discovery::NodeType::Switch);
    for n in switches {
        let planned = f
            .nodes
            .iter()
            .find(|p| p.is_switch() && p.name == n.desc)
            .map(|p| p.num_ports);
        assert_eq!(n.reported_ports, planned, "{name}: ports of {}", n.desc);
    }

    // `check` (issue 13): the rediscovered fabric is healthy, read by either tool, and has the
    // plan's tiers and cables.
    for (tool, text) in [("ibnetdiscover", &disc), ("iblinkinfo", &links)] {
        let h = railyard_ib::health::check(&railyard_ib::discovery::parse(text).unwrap());
        assert!(
            h.healthy,
            "{name} ({tool}): {}",
            railyard_ib::health::health_text(&h, name)
        );
        assert_eq!(h.shape.tiers.len() as u32, f.meta.tiers, "{name} ({tool})");
        assert_eq!(h.shape.cables, f.network_links().count(), "{name} ({tool})");
    }

    // Imported, the discovered fabric has the plan's shape and survives fabric.json.
    let d = railyard_ib::discovery::parse(&disc).unwrap();
    let imported = railyard_ib::import::to_fabric(&d, name).unwrap();
    assert_eq!(
        imported.servers.len(),
        f.servers.len(),
        "{name}: imported servers"
    );
    assert_eq!(imported.meta.tiers, f.meta.tiers, "{name}: imported tiers");
    assert_eq!(
        imported.network_links().count(),
        f.network_links().count(),
        "{name}: imported cables"
    );
    let text = railyard_fabric::fabric_file::fabric_json(&imported);
    assert_eq!(
        railyard_fabric::fabric_file::load_fabric_json(&text).unwrap(),
        imported,
        "{name}: fabric.json round trip"
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

/// 700 single-HCA servers on 36-port EDR switches: beyond the two-tier limit of 648.
fn three_tier() -> Fabric {
    fabric(
        "seed-edr-fat-tree",
        Overrides {
            servers: Some(700),
            gpus_per_server: Some(1),
            nics_per_server: Some(1),
            ..Default::default()
        },
    )
}

#[test]
fn three_tier_fat_tree_round_trips_through_ibsim() {
    if !tools_present() {
        return;
    }
    let f = three_tier();
    assert_eq!(f.meta.tiers, 3);
    round_trip("three-tier", &f);
}

#[test]
fn miswires_injected_through_the_console_are_reported_with_their_fix() {
    if !tools_present() {
        return;
    }
    use railyard_ib::verify::Kind;
    // 30 servers in a 32-server unit: ports 31 and 32 of every leaf are free.
    let f = fabric(
        "dgx-h100-superpod",
        Overrides {
            servers: Some(30),
            ..Default::default()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let mut sim = ibsim_for("miswire", &f, dir.path());
    sim.console(concat!(
        // Swap: the cables on su1-leaf1 ports 1 and 2 exchange places.
        "Unlink \"su1-leaf1\"[1]\n",
        "Unlink \"su1-leaf1\"[2]\n",
        "Link \"su1-leaf1\"[1] \"su1-srv02 hca1\"[1]\n",
        "Link \"su1-leaf1\"[2] \"su1-srv01 hca1\"[1]\n",
        // Missing: su1-leaf3 port 5 unplugged.
        "Unlink \"su1-leaf3\"[5]\n",
        // Wrong port: su1-srv06 hca4 plugged into su1-leaf4 port 31 instead of 6.
        "Unlink \"su1-leaf4\"[6]\n",
        "Link \"su1-leaf4\"[31] \"su1-srv06 hca4\"[1]\n",
        // Extra: a cable between two free leaf ports.
        "Link \"su1-leaf5\"[32] \"su1-leaf6\"[32]\n",
    ));
    let disc = client(&sim, &["ibnetdiscover"]);
    let report = verify(&f, &disc);
    let mut kinds: Vec<Kind> = report.findings.iter().map(|x| x.kind).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![
            Kind::MissingCable,
            Kind::UnexpectedCable,
            Kind::WrongPort,
            Kind::Swap
        ],
        "{:#?}",
        report.findings
    );
    let fixes: Vec<&str> = report.findings.iter().map(|x| x.fix.as_str()).collect();
    assert!(
        fixes.contains(&"the cables at su1-leaf1[1] and su1-leaf1[2] are swapped: exchange them"),
        "{fixes:?}"
    );
    assert!(
        fixes.contains(&"add a cable su1-leaf3[5] - su1-srv05 hca3[1]"),
        "{fixes:?}"
    );
    assert!(
        fixes.contains(&"the cable from su1-srv06 hca4[1] lands on su1-leaf4[31]: move that end to su1-leaf4[6]"),
        "{fixes:?}"
    );
    assert!(
        fixes.contains(
            &"remove the cable su1-leaf5[32] - su1-leaf6[32], which the plan does not have"
        ),
        "{fixes:?}"
    );
}

/// Routes the fabric with OpenSM's ftree engine inside ibsim and returns the parsed LFT dump and
/// what ibnetdiscover then shows of the fabric.
fn opensm_lfts(name: &str, f: &Fabric) -> (railyard_ib::lft::Lfts, String) {
    let dir = tempfile::tempdir().unwrap();
    let sim = ibsim_for(name, f, dir.path());
    let osm = dir.path().join("osm");
    std::fs::create_dir_all(&osm).unwrap();
    for (file, text) in railyard_ib::export::opensm_files(f) {
        std::fs::write(osm.join(file), text).unwrap();
    }
    // Two passes: the second routes a fabric whose ports the first brought up, and must log no error.
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let mut dump = dir.path().join("dump0");
    for pass in 0..2 {
        dump = dir.path().join(format!("dump{pass}"));
        std::fs::create_dir_all(&dump).unwrap();
        let log = dir.path().join(format!("opensm{pass}.log"));
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
            .arg(osm.join("root_guids.txt"))
            .arg("-u")
            .arg(osm.join("cn_guids.txt"))
            .env("IBSIM_SOCKNAME", &sim.sock)
            // OpenSM keeps GUID-to-LID assignments in its cache directory; a cache left by another
            // fabric confuses discovery, so each test gets its own.
            .env("OSM_CACHE_DIR", &cache)
            .output()
            .expect("run opensm");
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            log_text.contains("ftree tables configured on all switches")
                && log_text.contains("SUBNET UP"),
            "{name}: OpenSM ftree did not route (exit {:?}):\n{}",
            out.status.code(),
            log_text
                .lines()
                .filter(|l| l.contains("ERR") || l.contains("ftree"))
                .take(20)
                .collect::<Vec<_>>()
                .join("\n")
        );
        if pass == 1 {
            assert!(
                !log_text.contains("ERR"),
                "{name}: OpenSM errors on the settled fabric:\n{}",
                log_text
                    .lines()
                    .filter(|l| l.contains("ERR"))
                    .take(10)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
    let text = std::fs::read_to_string(dump.join("opensm-lfts.dump")).expect("opensm-lfts.dump");
    (railyard_ib::lft::parse(&text).unwrap(), discover(&sim, f))
}

/// A discovery imported and furnished with `spec`'s servers, as `--fabric` does.
fn furnished(disc: &str, spec: &ClusterSpec) -> Fabric {
    let d = railyard_ib::discovery::parse(disc).unwrap();
    let imported = railyard_ib::import::to_fabric(&d, "rediscovered").unwrap();
    railyard_fabric::import::furnish(&imported, spec, &Catalog::builtin()).unwrap()
}

/// How many of a shift permutation's connections OpenSM's tables route as railyard's D-mod-K
/// does, and how many otherwise (with examples).
fn opensm_vs_dmodk(f: &Fabric, lfts: &railyard_ib::lft::Lfts) -> (usize, usize, Vec<String>) {
    use railyard_sim::fabric_net::{FabricNet, NetConfig};
    let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let opensm = railyard_ib::lft::OpenSmRouting {
        router: railyard_ib::lft::Router::new(f, lfts),
        file: "opensm-lfts.dump".to_string(),
    };
    let cmp = railyard_ib::lft::compare_with_dmodk(&net, &opensm);
    (cmp.same, cmp.differ, cmp.examples)
}

/// `sim collective --routing opensm:DUMP` said OpenSM's routes equal railyard's D-mod-K on all
/// 64 connections of the plan, and differ on 16 of 64 on ibsim's rediscovery of the same fabric:
/// ibnetdiscover lists devices as it meets them (leaf04 first, leaf01 after the spines), the
/// import made its cables in that order, and the tree router took a leaf's up-links in the order
/// of their cables, not of their ports (leaf01 went up to spine02 first). The rediscovery now
/// routes as the plan: OpenSM's routes equal D-mod-K on both.
#[test]
fn regression_a_rediscovered_fabric_routed_unlike_opensm() {
    if !tools_present() {
        return;
    }
    let o = Overrides {
        servers: Some(8),
        ..Default::default()
    };
    let (s, plan) = (
        spec("seed-leaf-spine", o.clone()),
        fabric("seed-leaf-spine", o),
    );
    let (lfts, disc) = opensm_lfts("leaf-spine-8", &plan);
    let switches: Vec<&str> = disc
        .lines()
        .filter(|l| l.starts_with("Switch"))
        .filter_map(|l| l.rsplit('#').next())
        .collect();
    assert!(
        switches.first().is_some_and(|s| !s.contains("leaf01")),
        "ibnetdiscover's order is the plan's: {switches:?}"
    );
    assert_eq!(opensm_vs_dmodk(&plan, &lfts).1, 0, "the plan");
    let found = furnished(&disc, &s);
    let (same, differ, examples) = opensm_vs_dmodk(&found, &lfts);
    assert_eq!((same, differ), (64, 0), "the rediscovery: {examples:?}");
}

/// Every compute NIC port reaches every other through OpenSM's tables, without loops.
fn all_routes_trace(name: &str, f: &Fabric, lfts: &railyard_ib::lft::Lfts) {
    let router = railyard_ib::lft::Router::new(f, lfts);
    let ports: Vec<_> = f
        .network_links()
        .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::ServerLeaf)
        .map(|(_, l)| l.a)
        .collect();
    // A shift by every offset covers every ordered pair on small fabrics; sample larger ones.
    let step = (ports.len() / 64).max(1);
    for offset in (1..ports.len()).step_by(step) {
        for (i, &src) in ports.iter().enumerate() {
            let dst = ports[(i + offset) % ports.len()];
            let path = router
                .route(src, dst)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                path.len() <= 2 * f.meta.tiers as usize,
                "{name}: route longer than the tree is tall"
            );
        }
    }
}

#[test]
fn opensm_ftree_routes_exported_fat_trees() {
    if !tools_present() {
        return;
    }
    let servers = |n| Overrides {
        servers: Some(n),
        ..Default::default()
    };
    let edr_700 = Overrides {
        servers: Some(700),
        gpus_per_server: Some(1),
        nics_per_server: Some(1),
        ..Default::default()
    };
    let cases = [
        ("leaf-spine", "seed-leaf-spine", Overrides::default()),
        ("rail-2su", "dgx-h100-superpod", servers(64)),
        ("three-tier", "seed-edr-fat-tree", edr_700),
        // A partly filled unit: its leaves hold 8 hosts of 32, and ftree routes the 24 missing
        // ones as dummies; railyard's D-mod-K numbers them the same way.
        ("rail-partial", "dgx-h100-superpod", servers(40)),
    ];
    for (name, preset, o) in cases {
        let (spec, f) = (spec(preset, o.clone()), fabric(preset, o));
        let (lfts, disc) = opensm_lfts(name, &f);
        all_routes_trace(name, &f, &lfts);
        same_times_as_dmodk_where_routes_agree(name, &f, &lfts);
        // The fabric as ibnetdiscover shows it routes as its plan: OpenSM's routes are D-mod-K's.
        let found = furnished(&disc, &spec);
        let (_, differ, examples) = opensm_vs_dmodk(&found, &lfts);
        assert_eq!(differ, 0, "{name} rediscovered: {examples:?}");
    }
}

/// A shift permutation of every NIC port simulated over OpenSM's tables and over railyard's D-mod-K:
/// the two route every connection the same way and the completion times are equal; a table changed by
/// hand is reported as differing.
fn same_times_as_dmodk_where_routes_agree(name: &str, f: &Fabric, lfts: &railyard_ib::lft::Lfts) {
    use railyard_sim::collective::{simulate_transfers, Relay};
    use railyard_sim::fabric_net::{FabricNet, NetConfig, TreeRouter};
    use railyard_sim::routing::{RoutingConfig, RoutingKind};
    let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let opensm = railyard_ib::lft::OpenSmRouting {
        router: railyard_ib::lft::Router::new(f, lfts),
        file: "opensm-lfts.dump".to_string(),
    };
    let dmodk = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
    let ports: Vec<_> = f
        .network_links()
        .filter(|(_, l)| l.kind == railyard_fabric::LinkKind::ServerLeaf)
        .map(|(_, l)| l.a)
        .collect();
    let n = ports.len();
    let pairs: Vec<_> = (0..n).map(|i| (ports[i], ports[(i + n / 2) % n])).collect();
    let cmp = railyard_ib::lft::compare_with_dmodk(&net, &opensm);
    assert_eq!(cmp.same + cmp.differ, pairs.len());
    // GPU g of a server sits by NIC g on these 1:1 fabrics: the same shift between GPUs.
    let gpu_of = |p: railyard_fabric::PortId| {
        let node = f.port_node(p);
        let rail = match node.kind {
            railyard_fabric::NodeKind::Nic { rail } => rail,
            _ => 0,
        };
        railyard_sim::collective::Gpu::new(node.server.unwrap() as usize, rail)
    };
    let gpu_pairs: Vec<_> = pairs.iter().map(|&(a, b)| (gpu_of(a), gpu_of(b))).collect();
    let (t_opensm, _) =
        simulate_transfers(&net, &opensm, &gpu_pairs, Relay::Direct, 16 << 20).unwrap();
    let (t_dmodk, _) =
        simulate_transfers(&net, &dmodk, &gpu_pairs, Relay::Direct, 16 << 20).unwrap();
    // OpenSM's ftree and railyard's D-mod-K route these fabrics alike (docs/guide/sim.md says
    // so): every connection takes the same links, so the times are equal.
    assert_eq!(
        cmp.differ, 0,
        "{name}: OpenSM's routes differ from dmodk: {:?}",
        cmp.examples
    );
    assert_eq!(t_opensm, t_dmodk, "{name}: same routes, different times");

    // Send one destination the wrong way on a leaf: the comparison must notice.
    let mut changed = lfts.clone();
    let leaf = f.switches(railyard_fabric::Tier::Leaf).next().unwrap().0;
    let guids = railyard_ib::guid::assign(f);
    let table = changed
        .switches
        .get_mut(&railyard_ib::guid::of(&guids, leaf).unwrap())
        .unwrap();
    let (&lid, port) = table.routes.iter_mut().find(|(_, p)| **p > 1).unwrap();
    *port = if *port == 1 { 2 } else { 1 };
    let opensm = railyard_ib::lft::OpenSmRouting {
        router: railyard_ib::lft::Router::new(f, &changed),
        file: "edited".to_string(),
    };
    let all: Vec<_> = ports
        .iter()
        .flat_map(|&a| ports.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
        .collect();
    let edited = railyard_sim::fabric_net::compare_routes(&net, &opensm, &dmodk, &all);
    assert!(
        edited.differ > 0,
        "{name}: an edited table (LID {lid}) is not reported as differing"
    );
}

#[test]
fn every_infiniband_preset_round_trips_through_ibsim() {
    if !tools_present() {
        return;
    }
    for p in presets::PRESETS {
        let f = fabric(p.name, Overrides::default());
        if f.meta.tech.family() != railyard_catalog::Family::Infiniband {
            continue;
        }
        round_trip(p.name, &f);
    }
}

/// A real 2014 fabric (tests/data/real: SX6036 switches, QDR host links, FDR10 inter-switch
/// links), imported, exported for ibsim at its own rates (QDR as `s=4`, FDR10 written as QDR, which
/// ibsim cannot show) and rediscovered with both tools: it matches at the rates ibsim shows, and the
/// 47 FDR10 links are the only difference at the true rates.
#[test]
fn an_imported_real_qdr_fdr10_fabric_round_trips_through_ibsim() {
    if !tools_present() {
        return;
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/real/sx6036-qdr-fdr10-2014.ibnetdiscover"
    );
    let d = railyard_ib::discovery::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let f = railyard_ib::import::to_fabric(&d, "sx6036").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sim = ibsim_for("sx6036", &f, dir.path());
    for tool in ["ibnetdiscover", "iblinkinfo"] {
        let text = client(&sim, &[tool]);
        let report = verify(&f, &text);
        assert!(report.matches, "{tool}: {:?}", report.findings.first());
        assert_eq!(report.discovered_cables, 192, "{tool}");
        let found = railyard_ib::discovery::parse(&text).unwrap();
        let true_rates =
            railyard_ib::verify::verify(&f, &found, railyard_ib::verify::Options::default());
        assert_eq!(true_rates.findings.len(), 47, "{tool}");
        assert!(true_rates
            .findings
            .iter()
            .all(|x| x.kind == railyard_ib::verify::Kind::WrongRate
                && x.fix.contains("runs at 4xQDR, planned 4xFDR10")));
    }
}
