//! `railyard sim collective` and its routes through the real binary: failed cables, OpenSM's
//! forwarding tables, discovered fabrics, routing defaults by technology, and routes that fail.

use crate::common::succeeded;
use crate::sim_collective::{collective, json, last_busbw, rejects, text};

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
        let out = text(&[&args[..], extra].concat());
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
    assert!(
        text(&[&args[..], &["--routing", &routing]].concat())
            .contains("OpenSM's routes equal railyard's dmodk on all 32 connections"),
        "the report says the LFT routes agree with dmodk"
    );
    // The first leaf-spine cable (after the 32 server cables) carries cross-rail LFT routes, which
    // all-to-all without PXN uses: the run names the route over the failed cable.
    let all = [
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
    rejects(&all, "crosses a failed cable");
    // D-mod-K routes around it.
    let mut dmodk = all.to_vec();
    dmodk[6] = "dmodk";
    text(&dmodk);
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
        collective(&[
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
    assert!(succeeded(&o).contains("1073741824"));
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
    let o = collective(&[
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
        let base = [
            "alltoall",
            "seed-leaf-spine",
            "-b",
            "1G",
            "-e",
            "1G",
            "--pxn",
            "off",
        ];
        json(&[&base[..], extra].concat())["rows"][0]["time_us"]
            .as_f64()
            .unwrap()
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

/// Issue 35 item 4: each technology routes as its sites route unless told (RoCE: ECMP, said
/// beside the routing; InfiniBand: adaptive), `--qps-per-connection` is taken on RoCE without
/// `--routing`, and `--routing adaptive` is refused on Ethernet without a Spectrum-X pairing,
/// naming the parts and the valid choices (and taken with BlueField-3 SuperNICs on SN5600).
#[test]
fn routing_defaults_by_technology_and_adaptive_needs_hardware_that_does_it() {
    let roce = text(&[
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
    ]);
    assert!(
        roce.contains("# routing: ecmp (RoCE default: ECMP on the 5-tuple"),
        "{roce}"
    );
    let ib = text(&["allreduce", "--servers", "4", "-b", "1M", "-e", "1M"]);
    assert!(
        ib.contains("# routing: adaptive (InfiniBand default: adaptive routing"),
        "{ib}"
    );
    let given = text(&[
        "allreduce",
        "--servers",
        "4",
        "-b",
        "1M",
        "-e",
        "1M",
        "--routing",
        "dmodk",
    ]);
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
    let spx = collective(&[
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
    succeeded(&spx);
}
