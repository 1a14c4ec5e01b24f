//! `railyard sim collective` through the real binary: issue 3's claims on designed fabrics, the JSON
//! and text outputs, failures, and input errors (exit status 2 naming the flag).

use std::process::Output;

use crate::common::{railyard, succeeded};

/// `railyard sim collective ARGS`.
pub(crate) fn collective(args: &[&str]) -> Output {
    railyard(["sim", "collective"].iter().chain(args))
}

/// `railyard sim collective ARGS`, which must succeed: its text.
pub(crate) fn text(args: &[&str]) -> String {
    succeeded(&collective(args))
}

/// `railyard sim collective ARGS --json`, which must succeed: its JSON.
pub(crate) fn json(args: &[&str]) -> serde_json::Value {
    let all = [args, &["--json"]].concat();
    serde_json::from_str(&text(&all)).expect("json")
}

pub(crate) fn last_busbw(v: &serde_json::Value) -> f64 {
    let rows = v["rows"].as_array().expect("rows");
    rows.last().expect("a row")["busbw_gbs"]
        .as_f64()
        .expect("busbw")
}

/// Exit status 2 and a message naming `needle`.
pub(crate) fn rejects(args: &[&str], needle: &str) {
    let o = collective(args);
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
    let one = text(&args);
    assert_eq!(one, text(&args));
    assert!(one.contains(
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    ));
    assert!(one.contains("# Avg bus bandwidth"));
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
    let said = text(&g8);
    assert!(
        said.contains(
            "one thread drives 8 GPUs (nccl-tests -g 8): no size above 0 takes less than 33.84 us"
        ),
        "{said}"
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
    let said = text(&args("8"));
    assert!(
        said.contains("no size above 0 takes less than 86.32 us"),
        "{said}"
    );
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
    let o = collective(&[
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
    succeeded(&o);
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
    let o = collective(&["allgather", "--servers", "4", "-b", "8", "-e", "8"]);
    assert!(succeeded(&o).contains(
        "a size of 0 moves nothing (less than one float per rank): NCCL discards the call, 0 us"
    ));
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
    let said = text(&[&base[..], &["--proto", "simple"]].concat());
    assert!(
        said.contains("# protocols NCCL may choose: Simple (--proto, as NCCL_PROTO sets them)"),
        "{said}"
    );
    assert!(
        said.contains("# algorithm/protocol by size: 8-8589934592 ring/Simple"),
        "{said}"
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
