//! `railyard sim collective` through the real binary: issue 3's claims on designed fabrics, the JSON
//! and text outputs, failures, and input errors (exit status 2 naming the flag).

use std::process::Output;

use crate::common::railyard;

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "railyard failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["sim", "collective"];
    all.extend_from_slice(args);
    all.push("--json");
    serde_json::from_str(&stdout(&railyard(&all))).expect("json")
}

fn last_busbw(v: &serde_json::Value) -> f64 {
    let rows = v["rows"].as_array().expect("rows");
    rows.last().expect("a row")["busbw_gbs"]
        .as_f64()
        .expect("busbw")
}

/// Exit status 2 and a message naming `needle`.
fn rejects(args: &[&str], needle: &str) {
    let mut all = vec!["sim", "collective"];
    all.extend_from_slice(args);
    let o = railyard(&all);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(o.stdout.is_empty());
}

/// Issue 3: `railyard sim collective sendrecv --servers 2 --gpus-per-server 1 --nics-per-server 1
/// --tech ib-edr -b 1G -e 1G` gives about 12 GB/s.
#[test]
fn sendrecv_on_two_edr_servers_is_about_12_gbs() {
    let v = json(&[
        "sendrecv",
        "--servers",
        "2",
        "--gpus-per-server",
        "1",
        "--nics-per-server",
        "1",
        "--tech",
        "ib-edr",
        "-b",
        "1G",
        "-e",
        "1G",
    ]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["size_bytes"], 1u64 << 30);
    let b = last_busbw(&v);
    assert!((11.5..12.5).contains(&b), "{b}");
    assert_eq!(v["ranks"], 2);
    assert_eq!(v["nodes"], 2);
}

/// A 1:4 NIC:GPU ratio cuts inter-node all-reduce busbw about 4x against 1:1.
#[test]
fn one_nic_per_four_gpus_is_four_times_slower() {
    let run = |ratio: &str| {
        last_busbw(&json(&[
            "allreduce",
            "seed-leaf-spine",
            "--servers",
            "4",
            "--nic-ratio",
            ratio,
            "-b",
            "8G",
            "-e",
            "8G",
        ]))
    };
    let (one, four) = (run("1:1"), run("1:4"));
    let r = one / four;
    assert!((3.8..4.2).contains(&r), "1:1 {one} / 1:4 {four} = {r}");
}

/// The sweep follows -b -e -f; every row has the fields nccl-tests users know plus the algorithm
/// and protocol; two runs print the same bytes.
#[test]
fn sweep_rows_and_determinism() {
    let args = [
        "allreduce",
        "--servers",
        "4",
        "-b",
        "8",
        "-e",
        "128M",
        "-f",
        "4",
    ];
    let v = json(&args);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 13); // 8 x 4^k up to 2^27
    for r in rows {
        for k in ["size_bytes", "time_us", "algbw_gbs", "busbw_gbs"] {
            assert!(r[k].is_number(), "{k}: {r}");
        }
        assert!(r["algorithm"].is_string() && r["protocol"].is_string());
    }
    assert_eq!(rows[0]["protocol"], "LL");
    assert!(v["steps"][0]["bottleneck"]["resource"].is_string());
    let mut a: Vec<&str> = vec!["sim", "collective"];
    a.extend_from_slice(&args);
    let one = stdout(&railyard(&a));
    assert_eq!(one, stdout(&railyard(&a)));
    assert!(one.contains(
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    ));
    assert!(one.contains("# Avg bus bandwidth"));
}

/// Named and random cables down: the report lists them and what the tier lost; routes go around
/// leaf-spine failures, so the collective still runs.
#[test]
fn failed_cables_are_reported() {
    let v = json(&[
        "allreduce",
        "--servers",
        "64",
        "-b",
        "1G",
        "-e",
        "1G",
        "--fail-links",
        "4",
        "--seed",
        "3",
    ]);
    let cables = v["failed_cables"].as_array().unwrap();
    assert_eq!(cables.len(), 4);
    let down: u64 = v["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["down"].as_u64().unwrap())
        .sum();
    assert_eq!(down, 4);
    // A leaf-spine cable of a 64-server rail-optimized design (ids after the 512 server cables),
    // by its cabling.csv id, given short and printed at the ids' fixed width.
    let v = json(&[
        "allgather",
        "--servers",
        "64",
        "-b",
        "1G",
        "-e",
        "1G",
        "--fail-cable",
        "C0600",
    ]);
    assert_eq!(v["failed_cables"][0], "C0000600");
    assert!(last_busbw(&v) > 0.0);
    // One leg of a twin-port cable takes the whole cable down: seed-two-switch at NDR joins its
    // switches with twin-port DACs, C0000073 and C0000074 the two legs of one (cabling.csv
    // `assembly`), and either id fails both.
    for id in ["C73", "C74"] {
        let v = json(&[
            "allreduce",
            "seed-two-switch",
            "--tech",
            "ib-ndr",
            "-b",
            "1G",
            "-e",
            "1G",
            "--fail-cable",
            id,
        ]);
        assert_eq!(
            v["failed_cables"],
            serde_json::json!(["C0000073", "C0000074"]),
            "{id}"
        );
    }
}

/// Regression: flags that cannot change the result were taken and ignored: the ECMP knobs on a
/// route source that hashes nothing (`--qps-per-connection` with adaptive, dmodk or an OpenSM dump;
/// `--seed` there without `--fail-links`), `--algo` and `--sharp` on operations NCCL runs as
/// point-to-point sends (alltoall, sendrecv) or only as a ring (broadcast, reduce), `--pxn` on
/// operations that relay nothing, `--host-memory-gbs` with GPUDirect RDMA on (nothing is staged
/// through host memory). Each is refused (exit 2, nothing printed) naming both flags or
/// the operation, and where the flag matters; there it is taken.
#[test]
fn flags_that_change_nothing_are_refused() {
    for (args, needle) in [
        (
            &["allreduce", "--routing", "adaptive", "--qps-per-connection", "4"][..],
            "--qps-per-connection 4 has no effect with --routing adaptive",
        ),
        (
            // Without --routing, InfiniBand's default (adaptive), known once the design is built.
            &["allreduce", "--qps-per-connection", "2"],
            "--qps-per-connection 2 has no effect with --routing adaptive",
        ),
        (
            &["allreduce", "--routing", "dmodk", "--seed", "3"],
            "--seed 3 has no effect with --routing dmodk (D-mod-K routes by destination) and no --fail-links",
        ),
        (
            &["allreduce", "--routing", "adaptive", "--seed", "0"],
            "--seed 0 has no effect with --routing adaptive",
        ),
        (
            &["alltoall", "--algo", "ring"],
            "--algo ring has no effect on alltoall: NCCL runs it as point-to-point sends",
        ),
        (
            &["sendrecv", "--algo", "auto"],
            "--algo auto has no effect on sendrecv",
        ),
        (
            &["broadcast", "--algo", "ring"],
            "--algo ring has no effect on broadcast: NCCL runs it only as a ring",
        ),
        (
            &["alltoall", "--sharp", "on"],
            "--sharp on has no effect on alltoall",
        ),
        (
            &["reduce", "--sharp", "off"],
            "--sharp off has no effect on reduce",
        ),
        (
            &["allreduce", "--pxn", "on"],
            "--pxn on has no effect on allreduce",
        ),
        (
            &["allgather", "--pxn", "staged"],
            "--pxn staged has no effect on allgather",
        ),
        (
            &["allreduce", "--servers", "2", "--host-memory-gbs", "100"],
            "--host-memory-gbs 100 has no effect on this design: it has GPUDirect RDMA on",
        ),
        // One server: nothing goes through a NIC or a switch, and nothing reduces in the switches.
        (
            &[
                "allreduce",
                "--servers",
                "1",
                "--gpudirect",
                "off",
                "--host-memory-gbs",
                "1",
            ],
            "--host-memory-gbs 1 has no effect on one server",
        ),
        (
            &["allreduce", "--servers", "1", "--routing", "ecmp", "--seed", "5"],
            "--seed 5 has no effect on one server",
        ),
        (
            &["allreduce", "--servers", "1", "--sharp", "on"],
            "--sharp on has no effect on allreduce here",
        ),
        // All-gather with one GPU per server: neither CollNet nor NVLS runs it.
        (
            &[
                "allgather",
                "--servers",
                "4",
                "--gpus-per-server",
                "1",
                "--nics-per-server",
                "1",
                "--sharp",
                "on",
            ],
            "--sharp on has no effect on allgather here",
        ),
        (
            &["allreduce", "--servers", "4", "--fail-links", "0", "--seed", "5"],
            "--seed 5 has no effect with --routing adaptive and --fail-links 0",
        ),
        // One NIC per server: nothing crosses rails (staged serialised the in-server share).
        (
            &[
                "alltoall",
                "--servers",
                "4",
                "--nics-per-server",
                "1",
                "--pxn",
                "staged",
            ],
            "--pxn staged has no effect on this design: it has one NIC per server",
        ),
    ] {
        rejects(args, needle);
    }
    // An OpenSM dump routes by its tables: the file is not even read.
    rejects(
        &[
            "allreduce",
            "--routing",
            "opensm:no-such-lfts.txt",
            "--qps-per-connection",
            "2",
        ],
        "--qps-per-connection 2 has no effect with --routing opensm:no-such-lfts.txt (an OpenSM LFT dump routes by its tables)",
    );
    // Where each matters, it is taken.
    let small = ["--servers", "2", "-b", "1M", "-e", "1M"];
    for args in [
        &[
            "allreduce",
            "--routing",
            "ecmp",
            "--qps-per-connection",
            "2",
            "--seed",
            "3",
        ][..],
        &["allreduce", "--fail-links", "1", "--seed", "3"],
        &["alltoall", "--pxn", "on"],
        &["allgather", "--algo", "ring"],
        &["allreduce", "--sharp", "off"],
        &["allreduce", "--sharp", "on"],
        &[
            "allreduce",
            "--gpudirect",
            "off",
            "--host-memory-gbs",
            "100",
        ],
    ] {
        let v = json(&[args, &small[..]].concat());
        assert!(last_busbw(&v) > 0.0, "{args:?}");
    }
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    rejects(&["allreducex"], "valid: allreduce, allgather");
    rejects(&["allreduce", "-b", "8X"], "valid: a whole number");
    rejects(&["allreduce", "-b", "1G", "-e", "1K"], "-e");
    rejects(
        &["allreduce", "--algo", "butterfly"],
        "valid: ring, tree, collnetdirect",
    );
    // NCCL's own names, but not what NCCL runs here: the message says why and what it would run.
    rejects(
        &["allreduce", "--algo", "pat"],
        "PAT runs all-gather and reduce-scatter only",
    );
    rejects(
        &["allgather", "--algo", "pat"],
        "PAT runs all-gather and reduce-scatter with one GPU per server only",
    );
    rejects(
        &["allreduce", "seed-leaf-spine", "--algo", "nvls"],
        "NVLS needs NVSwitch servers with Hopper or later GPUs",
    );
    rejects(&["allgather", "--algo", "tree"], "--algo");
    rejects(&["allreduce", "--routing", "minimal"], "opensm:FILE");
    rejects(
        &["allreduce", "--servers", "2", "--fail-cable", "C9999"],
        "--fail-cable C9999",
    );
    rejects(
        &["allreduce", "--servers", "2", "--fail-links", "100000"],
        "--fail-links",
    );
    rejects(
        &["allreduce", "--routing", "opensm:/nonexistent/lfts"],
        "/nonexistent/lfts",
    );
    rejects(
        &["allreduce", "--host-memory-gbs", "0"],
        "--host-memory-gbs",
    );
    rejects(
        &["allreduce", "--gpus-per-thread", "0"],
        "--gpus-per-thread",
    );
    rejects(
        &["allreduce", "--gpus-per-thread", "65"],
        "--gpus-per-thread",
    );
}

/// nccl-tests `-g 8` (one thread drives the server's 8 GPUs): the 8 host launches (33.84 us; the
/// superbenchmark A100 log reads 34.66 us at 8 B) take the place of NCCL's latency, the transfer
/// comes on top, large sizes are as with one process per GPU within a launch's share, and `-g 1`
/// changes nothing.
#[test]
fn one_thread_driving_eight_gpus_floors_small_sizes() {
    let args = [
        "allreduce",
        "dgx-a100-superpod",
        "--servers",
        "1",
        "-b",
        "8",
        "-e",
        "1G",
        "-f",
        "1024",
    ];
    let per_gpu = json(&args);
    let mut g8 = args.to_vec();
    g8.extend_from_slice(&["--gpus-per-thread", "8"]);
    let one_thread = json(&g8);
    assert_eq!(one_thread["gpus_per_thread"], 8);
    assert!(per_gpu.get("gpus_per_thread").is_none());
    let rows = |v: &serde_json::Value| v["rows"].as_array().expect("rows").clone();
    let (a, b) = (rows(&per_gpu), rows(&one_thread));
    assert_eq!(a.len(), b.len());
    let t = |r: &serde_json::Value| r["time_us"].as_f64().expect("time");
    // 8 B: NCCL's ring LL latency (15 us) is under the 8 launches, which take its place; 8 bytes
    // add next to nothing.
    assert!(t(&a[0]) < 34.0, "{}", t(&a[0]));
    assert!(
        t(&b[0]) >= 8.0 * 4.23 && t(&b[0]) < 8.0 * 4.23 + 0.01,
        "{}",
        t(&b[0])
    );
    // Every size moves its bytes after the last launch: the time grows by the launches less NCCL's
    // latency (nothing where that latency is longer, as LL128's and Simple's on a ring of 8), never
    // more, and 1 GiB, which takes milliseconds, barely notices.
    for (x, y) in a.iter().zip(&b) {
        let more = t(y) - t(x);
        assert!((0.0..8.0 * 4.23).contains(&more), "{x} {y}");
    }
    let last = a.len() - 1;
    let (bus_a, bus_b) = (
        a[last]["busbw_gbs"].as_f64().unwrap(),
        b[last]["busbw_gbs"].as_f64().unwrap(),
    );
    assert!((bus_a - bus_b) / bus_a < 0.001, "{bus_a} {bus_b}");
    let mut g1 = args.to_vec();
    g1.extend_from_slice(&["--gpus-per-thread", "1"]);
    assert_eq!(json(&g1)["rows"], per_gpu["rows"]);
    // The text says why.
    let mut all = vec!["sim", "collective"];
    all.extend_from_slice(&g8);
    let text = stdout(&railyard(&all));
    assert!(
        text.contains(
            "one thread drives 8 GPUs (nccl-tests -g 8): no size above 0 takes less than 33.84 us"
        ),
        "{text}"
    );
}

/// An all-to-all by one thread driving 8 GPUs also pays each GPU's 16 point-to-point calls (a send
/// and a receive to every rank): 8 x (4.23 + 16 x 0.41) = 86.32 us at small sizes, where the
/// superbenchmark log the per-call time was measured on is flat at a median 87.27 us from 32 B to
/// 1 MiB. One process per GPU (the default) does not pay them, and all-reduce never does.
#[test]
fn one_thread_driving_eight_gpus_pays_each_point_to_point_call() {
    let args = |g: &'static str| {
        [
            "alltoall",
            "dgx-a100-superpod",
            "--servers",
            "1",
            "-b",
            "1K",
            "-e",
            "1K",
            "--gpus-per-thread",
            g,
        ]
    };
    let run = |g| json(&args(g))["rows"][0]["time_us"].as_f64().expect("time");
    let g8 = run("8");
    assert!((g8 - 86.32).abs() < 0.1, "{g8}");
    assert!(run("1") < 30.0, "{}", run("1"));
    let text = stdout(&railyard([&["sim", "collective"][..], &args("8")].concat()));
    assert!(
        text.contains("no size above 0 takes less than 86.32 us"),
        "{text}"
    );
}

/// An LFT dump that gives the HCA ports no LID is not of this fabric; one whose tables route
/// nothing has every connection reported missing (exit 2 both).
#[test]
fn opensm_routes_missing_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lfts.txt");
    let run = |dump: &str, says: &str| {
        std::fs::write(&path, dump).unwrap();
        let routing = format!("opensm:{}", path.display());
        rejects(
            &[
                "sendrecv",
                "--servers",
                "2",
                "--gpus-per-server",
                "1",
                "--nics-per-server",
                "1",
                "--routing",
                &routing,
            ],
            says,
        );
    };
    run(
        "Unicast lids [0-1] of switch Lid 1 guid 0x0002c90100000001 ('leaf01'):\n\
         0x0001 000 # Switch portguid 0x0002c90100000001: 'leaf01'\n",
        "none of the fabric's 2 cabled HCA ports has a LID in the LFT dump, by railyard's own GUIDs of the plan (the GUIDs `export ibnet` gives it): the fabric has su1-srv01/hca1 (port GUID 0x0002c90200000011)",
    );
    run(
        "Unicast lids [0-3] of switch Lid 1 guid 0x0002c90100000001 ('leaf01'):\n\
         0x0001 000 # Switch portguid 0x0002c90100000001: 'leaf01'\n\
         0x0002 000 # Channel Adapter portguid 0x0002c90200000011: 'su1-srv01 hca1'\n\
         0x0003 000 # Channel Adapter portguid 0x0002c90200000041: 'su1-srv02 hca1'\n",
        "no route",
    );
}

/// An OpenSM LFT dump written from the simulator's own D-mod-K routes (every switch's egress port
/// per destination LID, in `opensm-lfts.dump` format): `--routing opensm:FILE` traces the same paths
/// and gives the same table as `--routing dmodk`; taking a cable on those routes down is reported.
#[test]
fn opensm_lfts_route_like_dmodk() {
    use railyard_fabric::{LinkId, NodeKind, PortId};
    use railyard_sim::fabric_net::{FabricNet, FabricRouting, NetConfig, TreeRouter};
    use std::collections::BTreeMap;
    use std::fmt::Write;

    let catalog = railyard_catalog::Catalog::builtin();
    let mut raw = railyard_spec::presets::raw("dgx-h100-superpod").unwrap();
    railyard_spec::Overrides {
        servers: Some(4),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = railyard_spec::ClusterSpec::from_raw(&raw, "test").unwrap();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    let net = FabricNet::new(&f, &catalog, &NetConfig::default()).unwrap();
    let router = TreeRouter::new(
        railyard_sim::routing::RoutingKind::DModK,
        Default::default(),
    );
    let guids = railyard_ib::guid::assign(&f);
    // Every cabled compute NIC port gets a LID.
    let ports: Vec<PortId> = f
        .nodes
        .iter()
        .filter(|n| matches!(n.kind, NodeKind::Nic { .. }))
        .flat_map(|n| n.ports())
        .filter(|&p| {
            f.port(p)
                .link()
                .is_some_and(|l| f.link(l).kind.is_network())
        })
        .collect();
    let mut tables: BTreeMap<u32, BTreeMap<u16, u32>> = BTreeMap::new();
    for (i, &dst) in ports.iter().enumerate() {
        let lid = i as u16 + 1;
        for &src in &ports {
            if src == dst {
                continue;
            }
            let mut paths: Vec<Vec<LinkId>> = Vec::new();
            router.route(&net, src, dst, 0, &mut paths).unwrap();
            let mut at = f.port(src).node;
            for &l in &paths[0] {
                let link = f.link(l);
                let (near, far) = if f.port(link.a).node == at {
                    (link.a, link.b)
                } else {
                    (link.b, link.a)
                };
                if f.node(at).is_switch() {
                    tables
                        .entry(at.0)
                        .or_default()
                        .insert(lid, f.port(near).number);
                }
                at = f.port(far).node;
            }
        }
    }
    let mut dump = String::new();
    for (node, routes) in &tables {
        let g = railyard_ib::guid::of(&guids, railyard_fabric::NodeId(*node)).unwrap();
        let _ = writeln!(
            dump,
            "Unicast lids [0x0-0x{:x}] of switch Lid 0 guid 0x{g:016x} ('{}'):",
            ports.len(),
            f.node(railyard_fabric::NodeId(*node)).name
        );
        for (lid, port) in routes {
            let p = ports[*lid as usize - 1];
            let owner = railyard_ib::guid::of(&guids, f.port(p).node).unwrap();
            let pg = railyard_ib::guid::ca_port_guid(owner, f.port(p).number);
            let _ = writeln!(
                dump,
                "0x{lid:04x} {port:03} # Channel Adapter portguid 0x{pg:016x}: 'x'"
            );
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("opensm-lfts.dump");
    std::fs::write(&path, dump).unwrap();
    let routing = format!("opensm:{}", path.display());
    let args = [
        "allreduce",
        "--servers",
        "4",
        "-b",
        "1M",
        "-e",
        "1G",
        "-f",
        "32",
    ];
    let table = |extra: &[&str]| {
        let mut a: Vec<&str> = vec!["sim", "collective"];
        a.extend_from_slice(&args);
        a.extend_from_slice(extra);
        let out = stdout(&railyard(&a));
        // The table without the routing lines.
        out.lines()
            .filter(|l| !l.starts_with("# routing") && !l.starts_with("# OpenSM's routes"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        table(&["--routing", &routing]),
        table(&["--routing", "dmodk"])
    );
    let mut a: Vec<&str> = vec!["sim", "collective"];
    a.extend_from_slice(&args);
    a.extend_from_slice(&["--routing", &routing]);
    assert!(
        stdout(&railyard(&a))
            .contains("OpenSM's routes equal railyard's dmodk on all 32 connections"),
        "the report says the LFT routes agree with dmodk"
    );
    // The first leaf-spine cable (after the 32 server cables) carries cross-rail LFT routes, which
    // all-to-all without PXN uses: the run names the route over the failed cable.
    let all = [
        "sim",
        "collective",
        "alltoall",
        "--servers",
        "4",
        "--pxn",
        "off",
        "--routing",
        &routing,
        "--fail-cable",
        "C033",
    ];
    let o = railyard(all);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("crosses a failed cable"), "{err}");
    // D-mod-K routes around it.
    let mut dmodk = all.to_vec();
    dmodk[8] = "dmodk";
    stdout(&railyard(&dmodk));
}

/// `--sharp on` (NCCL's CollNet with the SHARP plugin): refused with exit 2 on RoCE and on EDR,
/// naming the switch and NIC models and the valid ones; on DGX A100 (QM8790, ConnectX-6) the
/// rows run CollNetDirect and busbw rises over `--sharp off` (the default, as NCCL runs without
/// the plugin). `train` and `compare` take the same key.
#[test]
fn sharp_on_where_supported_and_refused_elsewhere() {
    let valid = "valid switches: Q3400, QM8700, QM8790, QM9700, QM9790";
    rejects(
        &[
            "allreduce",
            "roce-400g-sn5600",
            "--servers",
            "2",
            "--sharp",
            "on",
        ],
        "switch SN5600 does not aggregate in the network for NCCL",
    );
    rejects(
        &[
            "allreduce",
            "roce-400g-sn5600",
            "--servers",
            "2",
            "--sharp",
            "on",
        ],
        valid,
    );
    rejects(
        &["allreduce", "seed-edr-fat-tree", "--sharp", "on"],
        "switch SB7800 does not aggregate",
    );
    rejects(
        &["allreduce", "seed-edr-fat-tree", "--sharp", "on"],
        "NIC ConnectX-5 does not take part in SHARP for NCCL; valid NICs: ConnectX-6",
    );
    rejects(&["allreduce", "--sharp", "yes"], "valid: on, off");
    let args = |sharp| {
        json(&[
            "allreduce",
            "dgx-a100-superpod",
            "--servers",
            "2",
            "-b",
            "1G",
            "-e",
            "1G",
            "--sharp",
            sharp,
        ])
    };
    let (off, on) = (args("off"), args("on"));
    assert_eq!(on["rows"][0]["algorithm"], "collnetdirect", "{on}");
    assert_ne!(off["rows"][0]["algorithm"], "collnetdirect", "{off}");
    assert!(last_busbw(&on) > 1.15 * last_busbw(&off), "{on} {off}");
    let o = railyard([
        "train",
        "roce-400g-sn5600",
        "--servers",
        "2",
        "--model",
        "llama3-8b",
        "--sharp",
        "on",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("switch SN5600"));
}

/// Regression: `--gpus-per-thread 3` on 8-GPU servers (and 16, more than a server has) printed a
/// table, exit 0, for a run nccl-tests cannot make: its threads drive GPUs of their own server,
/// so `-g` divides a server's GPUs. Now exit 2 naming the flag and the valid values.
#[test]
fn gpus_per_thread_divides_a_servers_gpus() {
    for g in ["3", "16"] {
        rejects(
            &[
                "allreduce",
                "--servers",
                "1",
                "-b",
                "1M",
                "-e",
                "1M",
                "--gpus-per-thread",
                g,
            ],
            "does not divide the 8 GPUs of a server; valid: 1, 2, 4, 8",
        );
    }
    let o = railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "1",
        "-b",
        "1M",
        "-e",
        "1M",
        "--gpus-per-thread",
        "4",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A size that rounds to 0 elements per rank is an empty collective: NCCL discards it (since
/// 2.22), so its row takes 0 us, under one thread driving every GPU too; the text says so. It was
/// priced at the algorithm's full latency (43.76 us for all-gather on 4 DGX H100), where published
/// logs show about 0.2 us of nccl-tests' own loop.
#[test]
fn an_empty_collective_takes_no_time() {
    for extra in [&[][..], &["--gpus-per-thread", "8"][..]] {
        let mut args = vec![
            "allgather",
            "--servers",
            "4",
            "-b",
            "8",
            "-e",
            "1K",
            "-f",
            "128",
        ];
        args.extend_from_slice(extra);
        let v = json(&args);
        let rows = v["rows"].as_array().expect("rows");
        assert_eq!(rows[0]["size_bytes"], 0);
        assert_eq!(rows[0]["time_us"], 0.0);
        assert!(rows[1]["time_us"].as_f64().unwrap() > 10.0);
    }
    let o = railyard([
        "sim",
        "collective",
        "allgather",
        "--servers",
        "4",
        "-b",
        "8",
        "-e",
        "8",
    ]);
    assert!(stdout(&o).contains(
        "a size of 0 moves nothing (less than one float per rank): NCCL discards the call, 0 us"
    ));
}

/// `--servers` with a discovered fabric: its servers are the ones it shows. The true count is
/// accepted (it was refused: "64 NIC ports exceed one switch"), another is refused naming both
/// (it was ignored and the 8-server result printed).
#[test]
fn servers_with_a_discovered_fabric_must_be_its_count() {
    let dump = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ib/tests/data/ibsim/seed8.ibnetdiscover-p");
    let dump = dump.to_str().unwrap();
    let run = |servers: &str| {
        railyard([
            "sim",
            "collective",
            "allreduce",
            "seed-leaf-spine",
            "--servers",
            servers,
            "--fabric",
            dump,
            "-b",
            "1G",
            "-e",
            "1G",
        ])
    };
    let o = run("8");
    assert!(stdout(&o).contains("1073741824"));
    let o = run("3");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--servers 3: the fabric has 8 servers; its servers are the ones it shows (valid: leave --servers out, or 8)"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A collective with connections that have no route exits 2, and the hint follows why: cables down
/// (every leaf-spine cable of the seed leaf-spine: fewer failures may leave a route; nothing about
/// `--pxn`, which all-reduce refuses), or rails no switch joins on a rail-only fabric (where
/// `--pxn` relays).
#[test]
fn route_failures_hint_at_their_own_cause() {
    let o = railyard([
        "sim",
        "collective",
        "allreduce",
        "seed-leaf-spine",
        "--fail-links",
        "80",
        "--seed",
        "2",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("every up-link towards it is down"), "{err}");
    assert!(err.contains("fewer failures may leave a route"), "{err}");
    assert!(!err.contains("--pxn"), "{err}");
    rejects(
        &[
            "alltoall",
            "rail-only-h100",
            "--servers",
            "2",
            "--pxn",
            "off",
            "-b",
            "1M",
            "-e",
            "1M",
        ],
        "no switch joins these ends (a rail-only fabric joins no rails): --pxn auto, on or staged",
    );
}

/// One leaf-spine cable of 80 down on seed-leaf-spine: the all-to-all still fits the time of the
/// intact fabric with D-mod-K and adaptive routing (the spines keep 19 of a leaf's 20 links at
/// 22.7 GB/s of 24.84), and adaptive is no slower than static routing. The dead link's share went
/// to the next port, whose link then carried two: 64,175 us with adaptive, slower than D-mod-K's
/// 62,696 and ECMP's 63,777. Then each of a connection's 19 live paths took a whole fair share of
/// its NIC's link next to its neighbours' 20 (40,089 against 38,924 us): a connection weighs
/// the same at its NIC whatever paths a failure leaves it. Adaptive routing's time differs from
/// the intact one only by the rounding of a 1 MiB transfer over 19 paths instead of 20 (its
/// largest path carries 55,189 bytes, 52,429.55 per twentieth of the connection, against 52,429:
/// 1.1e-5). Straight from each GPU's NIC (`--pxn off`), so every transfer crosses the spines.
#[test]
fn a_cable_down_spreads_its_share_over_the_live_links() {
    let time = |extra: &[&str]| -> f64 {
        let mut argv = vec![
            "sim",
            "collective",
            "alltoall",
            "seed-leaf-spine",
            "-b",
            "1G",
            "-e",
            "1G",
            "--pxn",
            "off",
            "--json",
        ];
        argv.extend_from_slice(extra);
        let o = railyard(&argv);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["rows"][0]["time_us"].as_f64().unwrap()
    };
    let intact = time(&["--routing", "adaptive"]);
    let adaptive = time(&["--routing", "adaptive", "--fail-cable", "C81"]);
    let dmodk = time(&["--routing", "dmodk", "--fail-cable", "C81"]);
    let ecmp = time(&["--routing", "ecmp", "--fail-cable", "C81"]);
    assert!(
        (adaptive - intact).abs() <= 2e-5 * intact,
        "{adaptive} vs intact {intact}"
    );
    assert_eq!(dmodk, intact);
    assert!(adaptive <= ecmp, "{adaptive} vs ECMP {ecmp}");
}

/// An algorithm the collective does not run is refused for that reason, not for hardware the design
/// has (NVLSTree on DGX H100 all-gather said "needs NVSwitch servers with Hopper or later GPUs").
#[test]
fn an_algorithm_the_collective_does_not_run_says_so() {
    rejects(
        &["allgather", "--algo", "nvlstree", "-b", "1M", "-e", "1M"],
        "(all-gather and reduce-scatter run as ring, PAT, NVLS or CollNetDirect only)",
    );
    rejects(
        &["allreduce", "--algo", "pat", "-b", "1M", "-e", "1M"],
        "(PAT runs all-gather and reduce-scatter only)",
    );
    // Nor does a message larger than a GPU's memory run (it printed a row for 100G on H100).
    rejects(
        &["allreduce", "-b", "100G", "-e", "100G"],
        "-e 107374182400: larger than the memory of one H100, 85.5 GB (81559 MiB)",
    );
}

/// `--proto` leaves NCCL the protocols NCCL_PROTO would: every row runs one of them, the header
/// and JSON say which, a restriction NCCL cannot run is an error naming `--proto` and what runs,
/// and point-to-point sends fall back from LL to Simple. Leaving out LL128 on 2 DGX A100 (NCCL
/// runs ring LL128 at 1 MiB there, docs/validation.md) makes 1 MiB slower, as NCCL would find.
#[test]
fn proto_leaves_nccl_the_protocols_nccl_proto_would() {
    let base = [
        "allreduce",
        "dgx-a100-superpod",
        "--servers",
        "2",
        "--algo",
        "ring",
    ];
    let sizes = ["-b", "8", "-e", "64M", "-f", "4"];
    let all = json(&[&base[..], &sizes[..]].concat());
    let no128 = json(&[&base[..], &sizes[..], &["--proto", "^LL128"]].concat());
    assert_eq!(
        all["protocols"],
        serde_json::json!(["LL", "LL128", "Simple"])
    );
    assert_eq!(no128["protocols"], serde_json::json!(["LL", "Simple"]));
    let rows = |v: &serde_json::Value| v["rows"].as_array().unwrap().clone();
    let mut slower = 0;
    for (x, y) in rows(&all).iter().zip(&rows(&no128)) {
        assert_ne!(y["protocol"], "LL128", "{y}");
        let (tx, ty) = (
            x["time_us"].as_f64().unwrap(),
            y["time_us"].as_f64().unwrap(),
        );
        if x["protocol"] == "LL128" {
            assert!(ty > tx, "{x} vs {y}");
            slower += 1;
        } else {
            assert_eq!(tx, ty, "{x} vs {y}");
        }
    }
    assert!(slower > 0, "NCCL runs LL128 at some size here");
    let text = stdout(&railyard(
        [
            &["sim", "collective"][..],
            &base[..],
            &["--proto", "simple"],
        ]
        .concat(),
    ));
    assert!(
        text.contains("# protocols NCCL may choose: Simple (--proto, as NCCL_PROTO sets them)"),
        "{text}"
    );
    assert!(
        text.contains("# algorithm/protocol by size: 8-8589934592 ring/Simple"),
        "{text}"
    );
    rejects(
        &[
            "allreduce",
            "--servers",
            "1",
            "--algo",
            "nvls",
            "--proto",
            "LL",
        ],
        "--proto: NCCL runs none of nvls with protocol LL",
    );
    rejects(
        &["allreduce", "--proto", "LL64"],
        "valid: LL, LL128, Simple",
    );
    // All-to-all sends its small messages with LL on one server unless it is left out; across
    // servers with Simple (NCCL's p2p network connections have no LL buffers).
    let a2a = |servers: &str, extra: &[&str]| {
        let v = json(
            &[
                &["alltoall", "--servers", servers, "-b", "1K", "-e", "1K"][..],
                extra,
            ]
            .concat(),
        );
        v["rows"][0]["protocol"].as_str().unwrap().to_string()
    };
    assert_eq!(a2a("1", &[]), "LL");
    assert_eq!(a2a("1", &["--proto", "simple"]), "Simple");
    assert_eq!(a2a("2", &[]), "Simple");
}

/// Issue 35 item 4: each technology routes as its sites route unless told (RoCE: ECMP, said
/// beside the routing; InfiniBand: adaptive), `--qps-per-connection` is taken on RoCE without
/// `--routing`, and `--routing adaptive` is refused on Ethernet without a Spectrum-X pairing,
/// naming the parts and the valid choices (and taken with BlueField-3 SuperNICs on SN5600).
#[test]
fn routing_defaults_by_technology_and_adaptive_needs_hardware_that_does_it() {
    let roce = stdout(&railyard([
        "sim",
        "collective",
        "alltoall",
        "roce-400g-sn5600",
        "--servers",
        "4",
        "-b",
        "1M",
        "-e",
        "1M",
        "--qps-per-connection",
        "4",
    ]));
    assert!(
        roce.contains("# routing: ecmp (RoCE default: ECMP on the 5-tuple"),
        "{roce}"
    );
    let ib = stdout(&railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "4",
        "-b",
        "1M",
        "-e",
        "1M",
    ]));
    assert!(
        ib.contains("# routing: adaptive (InfiniBand default: adaptive routing"),
        "{ib}"
    );
    let given = stdout(&railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "4",
        "-b",
        "1M",
        "-e",
        "1M",
        "--routing",
        "dmodk",
    ]));
    assert!(given.contains("# routing: dmodk, "), "{given}");
    rejects(
        &[
            "allreduce", "roce-400g-sn5600", "--servers", "4", "-b", "1M", "-e", "1M", "--routing",
            "adaptive",
        ],
        "NIC ConnectX-7 does not put sprayed packets back in order (Spectrum-X needs a SuperNIC); valid NICs: BlueField-3-SuperNIC",
    );
    rejects(
        &[
            "allreduce",
            "mi300x-roce",
            "--servers",
            "4",
            "-b",
            "1M",
            "-e",
            "1M",
            "--routing",
            "adaptive",
        ],
        "switch TH5-64x800 does not route adaptively on Ethernet; valid switches: SN5400, SN5600",
    );
    let spx = railyard([
        "sim",
        "collective",
        "allreduce",
        "roce-400g-sn5600",
        "--servers",
        "4",
        "--nic",
        "BlueField-3-SuperNIC",
        "-b",
        "1M",
        "-e",
        "1M",
        "--routing",
        "adaptive",
    ]);
    assert_eq!(
        spx.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&spx.stderr)
    );
}
