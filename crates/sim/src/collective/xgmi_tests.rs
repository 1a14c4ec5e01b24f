//! AMD Instinct's xGMI full mesh (issue 37, item 3): a link per GPU pair, RCCL's 28 rings of its
//! one-node table on one server, refused across servers.

use super::*;
use crate::net::fabric_net::NetConfig;
use crate::net::routing::{RoutingConfig, RoutingKind};
use crate::net::tree_router::TreeRouter;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_spec::{presets, ClusterSpec, Overrides};

fn servers(preset: &str, servers: u32) -> Fabric {
    let mut raw = presets::raw(preset).unwrap();
    Overrides {
        servers: Some(servers),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn sweep(f: &Fabric, op: Collective, size: u64) -> Result<Sweep, CollectiveError> {
    let n = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let router = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
    run(
        &n,
        &router,
        &CollectiveConfig::new(op),
        &[size],
        &mut |_| {},
    )
}

/// A pair of GPUs crosses its own link: GPU 0 to GPU 1 and GPU 0 to GPU 2 share no resource, and
/// each is one link at the catalog's 48 GB/s (RCCL's GFX94X_XGMI_WIDTH).
#[test]
fn every_pair_has_its_own_link() {
    let f = servers("mi300x-roce", 1);
    let n = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let g = &n.servers[0].gpus;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    n.nvlink_path(g[0], g[1], &mut a).unwrap();
    n.nvlink_path(g[0], g[2], &mut b).unwrap();
    assert_eq!((a.len(), b.len()), (1, 1));
    assert_ne!(a, b);
    assert_eq!(n.capacity(a[0]), 48e9);
    assert_eq!(n.describe(a[0]), "server 0 GPU 0 -> GPU 1 (xGMI)");
    let mut back = Vec::new();
    n.nvlink_path(g[1], g[0], &mut back).unwrap();
    assert_ne!(a, back);
}

/// On one server RCCL's 28 rings load each directed link with 4 channels, so a ring edge moves
/// 12 GB/s and the ring all-reduce's bus bandwidth reaches 7 links x 48 GB/s = 336 GB/s, less
/// NCCL's latency: the 8 GiB row within 15% of ROCm's published 317.29 GB/s, as ring/Simple.
/// All-to-all sends over every pair's link at once: 7 x 48 GB/s too.
#[test]
fn one_server_runs_rcclrings_over_every_link() {
    for preset in ["mi300x-roce", "mi355x-roce"] {
        let f = servers(preset, 1);
        let s = sweep(&f, Collective::AllReduce, 8 << 30).unwrap();
        assert_eq!(s.shape.channels, 28);
        let m = &s.models[0];
        let b = m.bottleneck.as_ref().unwrap();
        assert!(b.resource.contains("(xGMI)"), "{}", b.resource);
        assert_eq!(b.flows, 4);
        assert!((1.0 / m.secs_per_byte / 12e9 - 1.0).abs() < 1e-6);
        let row = &s.rows[0];
        assert_eq!((row.algorithm, row.protocol), ("ring", Protocol::Simple));
        let busbw = row.row.busbw_gbs;
        assert!(busbw < 336.0 && busbw > 330.0, "{busbw}");
        assert!((busbw / 317.29 - 1.0).abs() <= 0.15, "{busbw}");
        let a2a = sweep(&f, Collective::AllToAll, 8 << 30).unwrap();
        let got = a2a.rows[0].row.busbw_gbs;
        assert!(got < 336.0 && got > 330.0, "{got}");
    }
}

/// Across servers RCCL takes another table entry (rome_model_81, rings through the NICs): refused,
/// naming the mesh and what is valid.
#[test]
fn a_mesh_across_servers_is_refused() {
    let f = servers("mi300x-roce", 2);
    match sweep(&f, Collective::AllReduce, 1 << 20) {
        Err(CollectiveError::Config { what, message }) => {
            assert_eq!(what, "servers");
            assert!(
                message.contains("full mesh of 7 Infinity Fabric links"),
                "{message}"
            );
            assert!(message.contains("valid: --servers 1"), "{message}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("simulated"),
    }
}
