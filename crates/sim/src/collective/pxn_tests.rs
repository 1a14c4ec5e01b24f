//! `--pxn auto` is NCCL's default on every preset (issue 36, item 3 and its Must-show test).

use super::*;
use crate::net::fabric_net::NetConfig;
use railyard_catalog::{Catalog, ScaleUp};
use railyard_fabric::Fabric;
use railyard_spec::{presets, ClusterSpec, Overrides};

/// A preset at a small size: two racks of a rack-scale system (its trays are servers), four
/// servers of any other.
fn small(preset: &str, catalog: &Catalog) -> Fabric {
    let mut raw = presets::raw(preset).unwrap();
    let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
    let servers = catalog
        .rack_of(&spec.servers.model)
        .map_or(4, |r| 2 * r.trays);
    Overrides {
        servers: Some(servers),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
    railyard_fabric::build(&spec, catalog).unwrap()
}

/// NCCL's condition, stated apart from `nccl_relays` on the network as the simulation builds it
/// (NVIDIA/nccl @5067397c src/graph/search.cc `ncclTopoGetNetDev`, P2P_PXN_LEVEL 2; RCCL
/// @0cbce2a7 src/graph/paths.cc, PXN_DISABLE 1): a GPU relays a send when the peer's NIC is not
/// on this GPU's PCIe switch and a GPU on that switch shares NVLink with it, GPUDirect RDMA on,
/// never on an AMD xGMI mesh.
fn nccl_rule(net: &FabricNet<'_>, catalog: &Catalog) -> bool {
    let f = net.fabric;
    let amd = catalog.gpus[&f.meta.gpu_model].scale_up == ScaleUp::Mesh;
    let s = &net.servers[0];
    let nvlink = |g: u32| net.nvlink_gbs(s.gpus[g as usize]).is_some();
    let relays = (0..s.gpus.len() as u32).any(|g1| {
        (0..s.nics.len()).any(|nic| {
            let near = &s.gpus_near_nic[nic];
            !near.contains(&g1) && near.first().is_some_and(|&g2| nvlink(g1) && nvlink(g2))
        })
    });
    f.meta.gpudirect && !amd && relays
}

/// Every preset of the catalog, GPUDirect RDMA on and off: `--pxn auto` relays (pipelined, as
/// NCCL's proxy does) exactly where NCCL's rule does, and otherwise goes straight out where the
/// network joins the rails.
#[test]
fn pxn_default_equals_nccls_default_on_every_preset() {
    let catalog = Catalog::builtin();
    let mut relayed = Vec::new();
    for preset in presets::names() {
        for gdr in [true, false] {
            let mut f = small(preset, &catalog);
            f.meta.gpudirect = gdr;
            let config = NetConfig::default();
            let Ok(net) = FabricNet::over_nvlink_domains(&f, &catalog, &config) else {
                // A rack-scale system without GPUDirect RDMA is refused (`over_nvlink_domains`).
                assert!(!gdr, "{preset}");
                continue;
            };
            let nccl = nccl_rule(&net, &catalog);
            let want = match (nccl, f.rails_joined()) {
                (true, _) => Relay::Pxn,
                (false, true) => Relay::Direct,
                (false, false) => Relay::PxnStaged,
            };
            assert_eq!(Relay::auto(&f, &catalog), want, "{preset} gpudirect {gdr}");
            if nccl {
                relayed.push(preset);
            }
        }
    }
    // Every NVIDIA preset relays with GPUDirect RDMA on; the AMD ones never do.
    for preset in presets::names() {
        let f = small(preset, &catalog);
        let amd = catalog.gpus[&f.meta.gpu_model].scale_up == ScaleUp::Mesh;
        assert_eq!(relayed.contains(&preset), !amd, "{preset}");
    }
}

/// In a GB200 NVL72 rack (one NCCL node of 18 trays) a send to another rack relays inside the
/// sender's tray, to the GPU with the peer's index in its tray, as NCCL looks the peer's device up
/// in its own system (src/graph/search.cc `ncclTopoGetNetDev`), not through another tray.
#[test]
fn nvl72_relays_inside_the_senders_tray() {
    let catalog = Catalog::builtin();
    let f = small("gb200-nvl72-superpod", &catalog);
    let net = FabricNet::over_nvlink_domains(&f, &catalog, &NetConfig::default()).unwrap();
    assert_eq!(net.servers.len(), 2);
    // GPU 0 (tray 0) to GPU 7 of the other rack (its tray 1, index 3): via GPU 3 of tray 0, NIC 3.
    assert_eq!(relay_of(&net, Gpu::new(0, 0), Gpu::new(1, 7)), Some((3, 3)));
    // GPU 9 (tray 2, index 1) to GPU 70 (tray 17, index 2): via GPU 10, tray 2's NIC 2 (rail 10).
    assert_eq!(
        relay_of(&net, Gpu::new(0, 9), Gpu::new(1, 70)),
        Some((10, 10))
    );
    // The same index: out of its own NIC.
    assert_eq!(relay_of(&net, Gpu::new(0, 9), Gpu::new(1, 5)), None);
}
