//! Multi-node NVLink (issue 37, item 2): a GB200 NVL72 rack is one NCCL node, inside it every
//! collective runs over NVLink, between racks over the trays' NICs. One to four racks each: the
//! fabrics stay small.

use super::*;
use crate::net::fabric_net::NetConfig;
use crate::net::rates;
use crate::net::routing::{RoutingConfig, RoutingKind};
use crate::net::tree_router::TreeRouter;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_spec::{presets, ClusterSpec, Overrides};

/// `racks` racks of the GB200 NVL72 preset (18 trays of 4 GPUs each).
fn racks(racks: u32) -> Fabric {
    let preset = "gb200-nvl72-superpod";
    let mut raw = presets::raw(preset).unwrap();
    Overrides {
        servers: Some(18 * racks),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn net<'f>(f: &'f Fabric, config: &NetConfig) -> FabricNet<'f> {
    FabricNet::over_nvlink_domains(f, &Catalog::builtin(), config).unwrap()
}

fn sweep(f: &Fabric, op: Collective, size: u64) -> Sweep {
    let n = net(f, &NetConfig::default());
    let router = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
    run(
        &n,
        &router,
        &CollectiveConfig::new(op),
        &[size],
        &mut |_| {},
    )
    .unwrap()
}

/// NCCL's MNNVL view (src/mnnvl.cc, src/graph/topo.cc): the rack's 18 trays are one node of 72
/// GPUs and 72 NICs; the network of one domain per server still refuses the trays.
#[test]
fn an_nvl72_rack_is_one_nccl_node() {
    let f = racks(2);
    let n = net(&f, &NetConfig::default());
    assert_eq!(n.servers.len(), 2);
    assert_eq!(
        n.nvlink_domain().map(|d| (d.system.as_str(), d.trays)),
        Some(("GB200 NVL72", 18))
    );
    let shape = shape_of(&n).unwrap();
    assert_eq!(
        (shape.nodes, shape.gpus_per_node, shape.nics_per_node),
        (2, 72, 72)
    );
    // Rails run on from tray to tray: NIC r of tray t is rail 4t + r, its GPU's own, near the
    // GPUs of its PCIe switch in that tray (GPUs 2 and 3 with NICs 2 and 3).
    let d = &n.servers[1];
    assert_eq!(d.nic_of_gpu[4 * 5 + 2], 4 * 5 + 2);
    assert_eq!(d.gpus_of_nic[4 * 5 + 2], vec![22]);
    assert_eq!(d.gpus_near_nic[4 * 5 + 2], vec![22, 23]);
    match FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()) {
        Err(crate::SimError::Config { what, message }) => {
            assert_eq!(what, "scale-up domain");
            assert!(
                message.contains("`sim collective`, `train` and `compare` model the rack"),
                "{message}"
            );
        }
        _ => panic!("a network of one domain per server took NVL72 trays"),
    }
    // A training job fills 16 of each rack's 18 trays: 64 ranks a domain of 18 servers.
    assert_eq!(
        crate::net::scale_up::job_domains(&f, &Catalog::builtin()),
        Ok(crate::net::scale_up::JobDomains {
            ranks: 64,
            servers: 18
        })
    );
}

/// Inside one rack nothing crosses the network: every step's bottleneck is an NVLink, and NVLS
/// (in the NVLink switches, across all 18 trays) carries the large all-reduce. Published: 839.16
/// GB/s busbw at 4 GiB on one GB200 NVL72 rack, 72 ranks, NCCL 2.26.2 (coreweave/nccl-tests
/// README @cb86553, "Expected Performance / GB200 / Single Rack":
/// `4294967296 1073741824 float sum -1 10094 425.49 839.16`); railyard within 10%.
#[test]
fn nvl72_rack_allreduce_is_within_ten_percent_of_a_published_run() {
    let f = racks(1);
    let s = sweep(&f, Collective::AllReduce, 4 << 30);
    for m in &s.models {
        let b = m.bottleneck.as_ref().unwrap();
        assert!(
            b.resource.contains("(nvlink)"),
            "{}: {}",
            m.algorithm,
            b.resource
        );
    }
    let row = &s.rows[0];
    assert_eq!(row.algorithm, "nvls");
    let measured = 839.16;
    let err = row.row.busbw_gbs / measured - 1.0;
    assert!(
        err.abs() <= 0.10,
        "{} against {measured}",
        row.row.busbw_gbs
    );
}

/// Between racks an all-to-all crosses the scale-out fabric: half of each GPU's data leaves the
/// rack through its own tray NIC, so on two racks busbw is the NIC's payload rate x (n - 1) /
/// (n - 72) (nccl-tests' (n-1)/n factor over the remote half), to the latency's rounding.
#[test]
fn alltoall_between_two_racks_is_bound_by_the_tray_nics() {
    let f = racks(2);
    let s = sweep(&f, Collective::AllToAll, 8 << 30);
    let b = s.models[0].bottleneck.as_ref().unwrap();
    assert!(b.resource.contains("(server-leaf)"), "{}", b.resource);
    let nic = rates::INFINIBAND.payload_rate(400.0) / 1e9;
    let want = nic * 143.0 / 72.0;
    let got = s.rows[0].row.busbw_gbs;
    assert!((got / want - 1.0).abs() < 0.01, "{got} against {want}");
}

/// Across racks an all-reduce runs NCCL's NVLSTree: NVLS inside each rack, a tree between racks
/// over the NICs. It cannot beat NVLS on one rack (each GPU moves as much over its NVLink), and
/// on 2 and 4 racks the tree's network side does not bind: the bus bandwidth stays within a few
/// percent of one rack's.
#[test]
fn allreduce_across_racks_runs_nvls_inside_and_a_tree_between() {
    let one = sweep(&racks(1), Collective::AllReduce, 8 << 30).rows[0]
        .row
        .algbw_gbs;
    for n in [2, 4] {
        let s = sweep(&racks(n), Collective::AllReduce, 8 << 30);
        assert_eq!(s.shape.nodes, n);
        let row = &s.rows[0];
        assert_eq!(row.algorithm, "nvlstree", "{n} racks");
        assert!(row.row.algbw_gbs <= one * (1.0 + 1e-9), "{n} racks");
        assert!(row.row.algbw_gbs >= one * 0.95, "{n} racks");
        let tree = s.models.iter().find(|m| m.algorithm == "nvlstree").unwrap();
        assert!(tree
            .bottleneck
            .as_ref()
            .unwrap()
            .resource
            .contains("(server-leaf)"));
    }
}

/// A drained tray takes its whole rack out of the job (a clique's ranks run together or not at
/// all); GPUDirect RDMA off is refused on a rack-scale domain.
#[test]
fn a_drained_tray_takes_its_rack_out_and_gpudirect_off_is_refused() {
    let f = racks(2);
    let config = NetConfig {
        drained: vec![20],
        ..NetConfig::default()
    };
    let n = net(&f, &config);
    assert_eq!(n.active_servers(), &[0]);
    assert!(n.any_drained() && n.is_drained(20) && !n.is_drained(3));
    assert_eq!(shape_of(&n).unwrap().ranks, 72);
    let mut off = racks(1);
    off.meta.gpudirect = false;
    assert!(
        FabricNet::over_nvlink_domains(&off, &Catalog::builtin(), &NetConfig::default()).is_err()
    );
}

/// A job on the first 16 trays of each rack (`NetConfig::rack_trays`, `sim collective
/// --trays-per-rack`): NCCL's clique is its 64 GPUs and their 64 NICs in each rack; more trays
/// than a rack holds, or trays of a design that is no rack-scale system, are refused.
#[test]
fn a_job_on_part_of_each_rack_sees_its_trays_as_the_node() {
    let f = racks(2);
    let config = NetConfig {
        rack_trays: Some(16),
        ..NetConfig::default()
    };
    let n = net(&f, &config);
    let d = n.nvlink_domain().unwrap();
    assert_eq!((d.trays, d.clique_trays), (18, 16));
    let shape = shape_of(&n).unwrap();
    assert_eq!(
        (
            shape.nodes,
            shape.gpus_per_node,
            shape.nics_per_node,
            shape.ranks
        ),
        (2, 64, 64, 128)
    );
    // A drained tray the job does not use leaves its rack in the job.
    let spare = NetConfig {
        rack_trays: Some(16),
        drained: vec![17],
        ..NetConfig::default()
    };
    assert_eq!(net(&f, &spare).active_servers(), &[0, 1]);
    let catalog = Catalog::builtin();
    let too_many = NetConfig {
        rack_trays: Some(19),
        ..NetConfig::default()
    };
    assert!(FabricNet::over_nvlink_domains(&f, &catalog, &too_many).is_err());
    let mut raw = presets::raw("b200-xdr").unwrap();
    Overrides {
        servers: Some(2),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, "b200-xdr").unwrap();
    let servers = railyard_fabric::build(&spec, &catalog).unwrap();
    let err = FabricNet::over_nvlink_domains(&servers, &catalog, &config)
        .err()
        .unwrap();
    assert!(err.to_string().contains("trays per rack"), "{err}");
}
