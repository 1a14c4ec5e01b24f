//! `railyard export slurm` against a real Slurm (issue 38): the topology.conf of the default plan
//! and of a fabric ibsim runs and ibnetdiscover rediscovers, loaded by a throwaway `slurmctld` on
//! loopback (the plan's nodes declared, no compute daemons), read back with `scontrol show
//! topology`: every leaf of the fabric is named in a Slurm leaf switch with exactly its nodes, and
//! every switch above with its child switches. The packaged Slurm (Debian 12: 22.05) has no
//! topology/block plugin (Slurm 23.11 added it; `BlockSizes` is 24.05's): the block file is
//! checked against the documented syntax, and loaded where the installed Slurm is new enough.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::common::ibsim::{ib_tools_present, tools_present, Ibsim};
use crate::common::railyard_in as railyard;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// slurmctld and scontrol on the PATH, or a skip (a failure under CI=true).
fn slurm_present() -> bool {
    tools_present(&["slurmctld", "scontrol"])
}

/// One controller at a time: each takes a port found free a moment before.
static CONTROLLER: Mutex<()> = Mutex::new(());

/// The installed Slurm's version, `slurmctld -V` (`slurm-wlm 22.05.8`): (major, minor).
fn slurm_version() -> (u32, u32) {
    let out = Command::new("slurmctld").arg("-V").output().unwrap();
    let v = text(&out.stdout);
    let number = v.split_whitespace().last().unwrap_or("").to_string();
    let mut parts = number.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether this host's name resolves to loopback only: then slurmctld, told not to listen on
/// every address (`NoCtldInAddrAny`), listens on the host name's address, loopback (Slurm 22.05
/// src/common/slurm_protocol_api.c, `slurm_setup_addr`); elsewhere it listens on every address,
/// on a port of its own for a second or two, and is reached through loopback all the same.
fn hostname_is_loopback() -> bool {
    use std::net::ToSocketAddrs;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    match (host.trim(), 0).to_socket_addrs() {
        Ok(addrs) => {
            let addrs: Vec<_> = addrs.collect();
            !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}

/// A throwaway slurmctld on loopback with `nodes` declared (State=FUTURE: no slurmd is
/// expected) and topology.conf from `dir`; killed (this child only) when dropped.
struct Slurmctld {
    child: Child,
    conf: PathBuf,
    dir: PathBuf,
}

impl Drop for Slurmctld {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Slurmctld {
    /// Starts it on `dir/topology.conf` for `plugin` (tree or block) and waits until `scontrol`
    /// reaches it; panics with its log if it stops.
    fn start(dir: &Path, nodes: &[String], plugin: &str) -> Slurmctld {
        let user = text(&Command::new("id").arg("-un").output().unwrap().stdout)
            .trim()
            .to_string();
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let d = dir.display();
        let mut conf = format!(
            "ClusterName=railyard\nSlurmctldHost=localhost\nSlurmctldPort={}\nSlurmdPort={}\n\
             {bind}SlurmUser={user}\nAuthType=auth/none\n\
             CredType=cred/none\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmctldLogFile={d}/slurmctld.log\n\
             SelectType=select/cons_tres\nProctrackType=proctrack/linuxproc\n\
             TopologyPlugin=topology/{plugin}\nReturnToService=2\n",
            free_port(),
            free_port(),
            bind = if hostname_is_loopback() {
                "CommunicationParameters=NoCtldInAddrAny\n"
            } else {
                ""
            },
        );
        for n in nodes {
            conf.push_str(&format!("NodeName={n} CPUs=1 State=FUTURE\n"));
        }
        conf.push_str("PartitionName=all Nodes=ALL Default=YES\n");
        let path = dir.join("slurm.conf");
        std::fs::write(&path, conf).unwrap();
        let out = std::fs::File::create(dir.join("slurmctld.out")).unwrap();
        let child = Command::new("slurmctld")
            .arg("-D")
            .arg("-f")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start slurmctld");
        let mut ctld = Slurmctld {
            child,
            conf: path,
            dir: dir.to_path_buf(),
        };
        let start = Instant::now();
        loop {
            if let Some(status) = ctld.child.try_wait().unwrap() {
                panic!("slurmctld stopped ({status}):\n{}", ctld.log());
            }
            if ctld.scontrol(&["ping"]).status.success() {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "slurmctld did not answer:\n{}",
                ctld.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        ctld
    }

    fn scontrol(&self, args: &[&str]) -> Output {
        Command::new("scontrol")
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .output()
            .expect("run scontrol")
    }

    fn log(&self) -> String {
        ["slurmctld.out", "slurmctld.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `scontrol show topology`, by switch: level, nodes and child switches as Slurm expands them.
    fn topology(&self) -> BTreeMap<String, Shown> {
        let out = self.scontrol(&["show", "topology"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let mut shown = BTreeMap::new();
        for line in text(&out.stdout).lines().filter(|l| !l.trim().is_empty()) {
            let name = value(line, "SwitchName").unwrap_or_else(|| panic!("{line}"));
            shown.insert(
                name.to_string(),
                Shown {
                    level: value(line, "Level").unwrap().parse().unwrap(),
                    nodes: set(value(line, "Nodes")),
                    switches: set(value(line, "Switches")),
                },
            );
        }
        shown
    }
}

/// One switch as `scontrol show topology` shows it.
#[derive(Debug)]
struct Shown {
    level: u32,
    nodes: BTreeSet<String>,
    switches: BTreeSet<String>,
}

fn value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

/// A hostlist as a set of names (railyard's reading of Slurm's syntax; its own tests hold it to
/// Slurm's parser).
fn set(expr: Option<&str>) -> BTreeSet<String> {
    expr.map(|e| {
        railyard_ib::slurm::hostlist::expand(e)
            .unwrap()
            .into_iter()
            .collect()
    })
    .unwrap_or_default()
}

/// One Slurm switch as railyard wrote it: its line, and the fabric switches its comment names.
#[derive(Debug)]
struct Written {
    name: String,
    members: BTreeSet<String>,
    nodes: BTreeSet<String>,
    switches: BTreeSet<String>,
}

/// The switches of a topology.conf for topology/tree.
fn written(conf: &str) -> Vec<Written> {
    let mut out = Vec::new();
    let mut comment: Option<&str> = None;
    for line in conf.lines() {
        if let Some(c) = line.strip_prefix("# ") {
            // `# su1-leaf[1-8]: 8 switches, one to Slurm` names the switches of the next line.
            comment = c
                .split_once(": ")
                .filter(|(_, what)| what.ends_with("one to Slurm") || what.starts_with("joined"))
                .map(|(m, _)| m);
            continue;
        }
        let name = value(line, "SwitchName").unwrap().to_string();
        let members = match comment.take() {
            Some(m) => set(Some(m)),
            None => BTreeSet::from([name.clone()]),
        };
        out.push(Written {
            members,
            nodes: set(value(line, "Nodes")),
            switches: set(value(line, "Switches")),
            name,
        });
    }
    out
}

/// The fabric's leaf switches (those cabled to an HCA) and the servers each serves, from an
/// ibnetdiscover or ibsim topology (descriptions `su1-leaf1` and `su1-srv01 hca1`).
fn leaves(topo: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut switch: Option<String> = None;
    for line in topo.lines() {
        if line.starts_with("Switch") || line.starts_with("Ca") {
            switch = line.starts_with("Switch").then(|| {
                line.split("# \"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .to_string()
            });
        } else if let (Some(sw), true) = (&switch, line.starts_with('[')) {
            let quoted: Vec<&str> = line.split('"').collect();
            if let Some(hca) = quoted.iter().find(|q| q.contains(" hca")) {
                let server = hca.split(' ').next().unwrap().to_string();
                out.entry(sw.clone()).or_default().insert(server);
            }
        }
    }
    out
}

/// The written topology loaded by Slurm: every fabric leaf in a Slurm leaf switch, which Slurm
/// shows at level 0 with exactly the servers that leaf serves (all of them, and those of the
/// leaves it stands with); every switch above with its child switches and all nodes below them;
/// no Slurm warning about the topology.
fn assert_loaded(conf: &str, topo: &str, ctld: &Slurmctld, rename: &dyn Fn(&str) -> String) {
    let written = written(conf);
    let shown = ctld.topology();
    assert_eq!(shown.len(), written.len(), "{shown:?}");
    let leaves = leaves(topo);
    assert!(!leaves.is_empty());
    for (leaf, servers) in &leaves {
        let w = written
            .iter()
            .find(|w| !w.nodes.is_empty() && w.members.contains(&rename(leaf)))
            .unwrap_or_else(|| panic!("leaf {leaf} is in no Slurm leaf switch:\n{conf}"));
        let s = &shown[&w.name];
        assert_eq!(s.level, 0, "{}", w.name);
        assert_eq!(s.nodes, w.nodes, "{}", w.name);
        let servers: BTreeSet<String> = servers.iter().map(|s| rename(s)).collect();
        assert_eq!(s.nodes, servers, "{leaf} serves them");
    }
    let nodes_below = |w: &Written| -> BTreeSet<String> {
        let mut all = BTreeSet::new();
        let mut todo = vec![w.name.clone()];
        while let Some(n) = todo.pop() {
            let s = &shown[&n];
            all.extend(s.nodes.iter().cloned());
            todo.extend(s.switches.iter().cloned());
        }
        all
    };
    for w in written.iter().filter(|w| w.nodes.is_empty()) {
        let s = &shown[&w.name];
        assert!(s.level > 0, "{}", w.name);
        assert_eq!(s.switches, w.switches, "{}", w.name);
        assert_eq!(s.nodes, nodes_below(w), "{}", w.name);
    }
    let log = ctld.log();
    for bad in ["WARNING", "Invalid", "fatal"] {
        assert!(!log.contains(bad), "slurmctld: {bad}:\n{log}");
    }
}

/// The nodes a topology.conf names.
fn all_nodes(conf: &str) -> Vec<String> {
    let mut nodes: BTreeSet<String> = BTreeSet::new();
    for line in conf.lines().filter(|l| !l.starts_with('#')) {
        nodes.extend(set(value(line, "Nodes")));
    }
    nodes.into_iter().collect()
}

/// `railyard ARGS` in `dir`, exit 0, its stdout.
fn run(dir: &Path, args: &[&str]) -> String {
    let out = railyard(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// topology/block as topology.conf(5) documents it: `BlockName=NAME Nodes=HOSTLIST` lines with
/// unique names, each node in one block, and one `BlockSizes=` whose first size is the largest
/// block's nodes and each next size a power of two times the one before; loaded into the
/// installed Slurm where it has the plugin and BlockSizes (24.05 and later).
fn assert_blocks(dir: &Path, block: &str, nodes: &[String]) {
    let mut names = BTreeSet::new();
    let mut seen: Vec<String> = Vec::new();
    let mut largest = 0;
    let mut sizes: Vec<u64> = Vec::new();
    for line in block.lines().filter(|l| !l.starts_with('#')) {
        if let Some(s) = line.strip_prefix("BlockSizes=") {
            assert!(sizes.is_empty(), "one BlockSizes");
            sizes = s.split(',').map(|x| x.parse().unwrap()).collect();
            continue;
        }
        let mut kv = line.split_whitespace();
        let name = kv.next().unwrap().strip_prefix("BlockName=").unwrap();
        let members = railyard_ib::slurm::hostlist::expand(
            kv.next().unwrap().strip_prefix("Nodes=").unwrap(),
        )
        .unwrap();
        assert!(kv.next().is_none(), "{line}");
        assert!(names.insert(name.to_string()), "{name} twice");
        largest = largest.max(members.len() as u64);
        seen.extend(members);
    }
    seen.sort();
    let mut want = nodes.to_vec();
    want.sort();
    assert_eq!(seen, want, "every node in one block");
    assert_eq!(sizes.first(), Some(&largest));
    for w in sizes.windows(2) {
        assert!(w[1] > w[0] && w[1] % w[0] == 0 && (w[1] / w[0]).is_power_of_two());
    }
    if slurm_version() >= (24, 5) {
        let d = dir.join("block");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("topology.conf"), block).unwrap();
        let ctld = Slurmctld::start(&d, nodes, "block");
        let out = ctld.scontrol(&["show", "topology"]);
        assert!(out.status.success(), "{}", ctld.log());
        for name in &names {
            assert!(text(&out.stdout).contains(name.as_str()), "{name}");
        }
    } else {
        eprintln!(
            "slurmctld {:?} has no topology/block with BlockSizes (24.05 and later): the block file is checked against topology.conf(5) only",
            slurm_version()
        );
    }
}

/// `export slurm PLAN` written as topology.conf in `dir` and loaded by a slurmctld with its
/// nodes declared, checked against the plan's own topology (`export ibnet PLAN`).
fn load_plan(dir: &Path, plan: &[&str]) -> (String, Vec<String>, Slurmctld) {
    let mut args = vec!["export", "slurm"];
    args.extend(plan);
    let conf = run(dir, &args);
    std::fs::write(dir.join("topology.conf"), &conf).unwrap();
    let nodes = all_nodes(&conf);
    let mut args = vec!["export", "ibnet", "-o", "plan.topo"];
    args.extend(plan);
    run(dir, &args);
    let ctld = Slurmctld::start(dir, &nodes, "tree");
    assert_loaded(
        &conf,
        &std::fs::read_to_string(dir.join("plan.topo")).unwrap(),
        &ctld,
        &|n| n.to_string(),
    );
    (conf, nodes, ctld)
}

/// The default plan (`railyard export slurm`, no arguments: the 127 DGX H100 SuperPOD), loaded.
#[test]
fn default_plan_loads_in_slurmctld() {
    if !slurm_present() {
        return;
    }
    let _one = CONTROLLER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, nodes, ctld) = load_plan(d, &[]);
    assert_eq!(nodes.len(), 127);
    // 32 leaves in 4 Slurm leaf switches, one of 16 spines above.
    let shown = ctld.topology();
    assert_eq!(shown.values().filter(|s| s.level == 0).count(), 4);
    assert_eq!(
        shown["spine01-16"].switches,
        set(Some("su1-leaf1-8,su2-leaf1-8,su3-leaf1-8,su4-leaf1-8"))
    );
    drop(ctld);
    let block = run(d, &["export", "slurm", "--plugin", "block"]);
    assert!(block.ends_with("BlockSizes=32\n"), "{block}");
    assert_blocks(d, &block, &nodes);
}

/// The site's names of two DGX A100 units (servers dgx-a001.., leaves ib-l101..), written as a
/// names CSV to `path`: plan name -> site name.
fn site_names(path: &Path) -> BTreeMap<String, String> {
    let mut site: BTreeMap<String, String> = BTreeMap::new();
    for su in 1..=2 {
        for i in 1..=20 {
            site.insert(
                format!("su{su}-srv{i:02}"),
                format!("dgx-a{:03}", (su - 1) * 20 + i),
            );
        }
        for r in 1..=8 {
            site.insert(format!("su{su}-leaf{r}"), format!("ib-l{su}{r:02}"));
        }
    }
    let mut csv = String::from("plan,site\n");
    for (p, s) in &site {
        csv.push_str(&format!("{p},{s}\n"));
    }
    std::fs::write(path, csv).unwrap();
    site
}

/// `plan` exported, run in ibsim and rediscovered by ibnetdiscover: its output, also written
/// to `dir/disc.txt`.
fn rediscover(dir: &Path, plan: &[&str]) -> String {
    let mut args = vec![
        "export",
        "ibnet",
        "-o",
        "fabric.topo",
        "--opensm-dir",
        "osm",
    ];
    args.extend(plan);
    run(dir, &args);
    let sim = Ibsim::start_exported(dir, "fabric.topo");
    let disc = sim.run(&["ibnetdiscover"]);
    drop(sim);
    std::fs::write(dir.join("disc.txt"), &disc).unwrap();
    disc
}

/// Two scalable units of the HDR DGX A100 SuperPOD run in ibsim and rediscovered by
/// ibnetdiscover: `export slurm --fabric` gives the plan's own switch lines, and with the
/// site's names (`--names`) the nodes as slurm.conf declares them; Slurm loads both.
#[test]
fn an_ibsim_rediscovery_loads_in_slurmctld_by_the_sites_names() {
    if !(slurm_present() && ib_tools_present()) {
        return;
    }
    let _one = CONTROLLER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = ["dgx-a100-superpod", "--servers", "40"];
    let disc = rediscover(d, &plan);

    // The rediscovery's Slurm lines are the plan's.
    let mut args = vec!["export", "slurm"];
    args.extend(plan);
    let planned = run(d, &args);
    let out = run(
        d,
        &[
            "export",
            "slurm",
            "--fabric",
            "disc.txt",
            "-o",
            "topology.conf",
        ],
    );
    assert_eq!(
        out,
        "wrote topology.conf: topology/tree: 40 nodes, 2 leaf switches (of 16 leaves), 1 switch above\n"
    );
    let conf = std::fs::read_to_string(d.join("topology.conf")).unwrap();
    let body = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("# topology.conf"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(body(&conf), body(&planned));
    // Writing over its input is refused.
    let out = railyard(
        d,
        ["export", "slurm", "--fabric", "disc.txt", "-o", "disc.txt"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is also the input (--fabric disc.txt)"));

    let site = site_names(&d.join("names.csv"));
    run(
        d,
        &[
            "export",
            "slurm",
            "--fabric",
            "disc.txt",
            "--names",
            "names.csv",
            "-o",
            "site/topology.conf",
        ],
    );
    let conf = std::fs::read_to_string(d.join("site/topology.conf")).unwrap();
    assert!(
        conf.contains("\nSwitchName=ib-l101-108 Nodes=dgx-a[001-020] LinkSpeed=200\n"),
        "{conf}"
    );
    let nodes = all_nodes(&conf);
    assert_eq!(nodes.len(), 40);
    assert!(nodes.iter().all(|n| n.starts_with("dgx-a")));
    let rename = |n: &str| site.get(n).cloned().unwrap_or_else(|| n.to_string());
    let ctld = Slurmctld::start(&d.join("site"), &nodes, "tree");
    assert_loaded(&conf, &disc, &ctld, &rename);
    drop(ctld);
    let block = run(
        d,
        &[
            "export",
            "slurm",
            "--fabric",
            "disc.txt",
            "--names",
            "names.csv",
            "--plugin",
            "block",
        ],
    );
    assert!(
        block.contains("\nBlockName=ib-l201-208 Nodes=dgx-a[021-040]\n"),
        "{block}"
    );
    assert_blocks(&d.join("site"), &block, &nodes);
}

/// A three-tier plan (2,048 DGX H100: 64 units, pods of two units under 256 cores) loads with its
/// three levels: each pod's spines over its two units, the cores over the 32 pods; its blocks are
/// the units, aggregated by pod.
#[test]
fn a_three_tier_plan_loads_in_slurmctld_level_by_level() {
    if !slurm_present() {
        return;
    }
    let _one = CONTROLLER.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = ["--servers", "2048"];
    let (_, nodes, ctld) = load_plan(d, &plan);
    assert_eq!(nodes.len(), 2048);
    let shown = ctld.topology();
    let at = |level: u32| shown.values().filter(|s| s.level == level).count();
    assert_eq!((at(0), at(1), at(2), shown.len()), (64, 32, 1, 97));
    assert_eq!(
        shown["pod2-spine01-16"].switches,
        set(Some("su3-leaf1-8,su4-leaf1-8"))
    );
    assert_eq!(shown["core001-256"].switches.len(), 32);
    assert_eq!(shown["core001-256"].nodes.len(), 2048);
    drop(ctld);
    let mut args = vec!["export", "slurm", "--plugin", "block"];
    args.extend(plan);
    let block = run(d, &args);
    assert!(block.ends_with("BlockSizes=32,64\n"), "{block}");
    assert_blocks(d, &block, &nodes);
}

/// Bad input: exit 2, nothing written, the error naming what is wrong and the choices.
#[test]
fn export_slurm_refuses_bad_input_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let refused = |args: &[&str], says: &str| {
        let out = railyard(d, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!d.join("t.conf").exists());
    };
    refused(
        &["export", "slurm", "--plugin", "ring"],
        "[possible values: tree, block]",
    );
    std::fs::write(d.join("names.csv"), "su1-srv01,gpu001\nsu9-leaf1,x\n").unwrap();
    refused(
        &["export", "slurm", "--names", "names.csv", "-o", "t.conf"],
        "names.csv: line 2: \"su9-leaf1\" is not a device of the plan",
    );
    std::fs::write(d.join("names.csv"), "su1-srv01,\"gpu 001\"\n").unwrap();
    refused(
        &["export", "slurm", "--names", "names.csv", "-o", "t.conf"],
        "server su1-srv01's site name \"gpu 001\" cannot be a Slurm node name",
    );
    refused(
        &["export", "slurm", "--names", "names.csv", "-o", "names.csv"],
        "is also the input (--names names.csv)",
    );
    refused(
        &[
            "export",
            "slurm",
            "seed-leaf-spine",
            "--fabric",
            "f.json",
            "-o",
            "t.conf",
        ],
        "give either --fabric or a preset / --spec, not both",
    );
    std::fs::write(d.join("file"), "").unwrap();
    refused(
        &["export", "slurm", "-o", "file/t.conf"],
        "exists and is not a directory",
    );
}
