use super::*;
use crate::collective::{simulate_transfers, Gpu, Relay};
use crate::fabric_net::TreeRouter;
use crate::net::rates;
use crate::net::routes::FabricRouting;
use crate::net::routing::RoutingConfig;
use crate::net::routing::RoutingKind;
use railyard_catalog::Catalog;
use railyard_fabric::LinkKind;
use railyard_spec::{presets, ClusterSpec, Overrides};

fn fabric(preset: &str, servers: u32, gpus: u32, nics: u32) -> Fabric {
    let mut raw = presets::raw(preset).unwrap();
    Overrides {
        servers: Some(servers),
        gpus_per_server: Some(gpus),
        nics_per_server: Some(nics),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

fn dmodk() -> TreeRouter {
    TreeRouter::new(RoutingKind::DModK, RoutingConfig::default())
}

#[test]
fn pcie_tlp_efficiency_per_generation() {
    assert_eq!(pcie_tlp_efficiency(5), 256.0 / 282.0);
    assert_eq!(pcie_tlp_efficiency(2), 256.0 / 280.0);
    assert_eq!(pcie_tlp_efficiency(6), 256.0 / 272.0);
    // Gen5 x16: 63.0 GB/s after 128b/130b, 57.2 GB/s of payload.
    let gen5 = rates::raw_rate(railyard_catalog::pcie_gbps(5, 16)) * pcie_tlp_efficiency(5);
    assert!((57.0e9..57.5e9).contains(&gen5), "{gen5}");
}

#[test]
fn capacities_follow_the_technology_and_the_link() {
    let ib = fabric("dgx-h100-superpod", 2, 8, 8);
    let roce = fabric("roce-400g-sn5600", 2, 8, 8);
    for (f, format) in [(&ib, rates::INFINIBAND), (&roce, rates::ROCE_V2)] {
        let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
        let (l, link) = f.network_links().next().unwrap();
        let want = format.payload_rate(link.gbps);
        assert_eq!(net.capacity(2 * l.0), want);
        assert_eq!(net.capacity(2 * l.0 + 1), want);
        let nv = f
            .links
            .iter()
            .position(|l| l.kind == LinkKind::Nvlink)
            .unwrap();
        assert_eq!(net.capacity(2 * nv as u32), 370.8e9);
        // Host memory: half the bandwidth per staged byte (written, then read).
        let last = net.resources() as u32 - 1;
        assert_eq!(net.capacity(last), HOST_MEMORY_GBS * 1e9 / 2.0);
    }
}

/// A path's latency: both NICs, every switch from the catalog, every cable's length x its
/// catalog delay per metre.
#[test]
fn path_latency_from_catalog() {
    let f = fabric("seed-leaf-spine", 2, 1, 1);
    let catalog = Catalog::builtin();
    let net = FabricNet::new(&f, &catalog, &NetConfig::default()).unwrap();
    let (src, dst) = (
        net.nic_port(0, 0, 0).unwrap().1,
        net.nic_port(1, 0, 0).unwrap().1,
    );
    let mut paths = Vec::new();
    dmodk().route(&net, src, dst, 0, &mut paths).unwrap();
    let mut res = Vec::new();
    let got = net.network_path(src, &paths[0], &mut res);
    let mut want_ps = 2 * NIC_LATENCY.ps();
    let mut at = f.port(src).node;
    for &l in &paths[0] {
        let link = f.link(l);
        let delay = match &link.medium {
            Medium::Cable { part, length_m, .. } => {
                catalog.cables[&**part].delay_ns_per_m * length_m
            }
            Medium::Fibre { part, length_m, .. } => {
                catalog.fibres[&**part].delay_ns_per_m * length_m
            }
            _ => panic!("a network link without a medium"),
        };
        want_ps += (delay * 1000.0).round() as u64;
        at = net.far(l, at);
        if let Some(s) = catalog.switches.get(&*f.node(at).model) {
            want_ps += u64::from(s.latency_ns) * 1000;
        }
    }
    // The last hop enters the NIC, counted once above.
    assert_eq!(got, Time::from_ps(want_ps));
    assert_eq!(res.len(), paths[0].len());
}

/// GPU to NIC: one PCIe switch crossed when they share it, two plus the root complex when not;
/// with GPUDirect RDMA off, through host memory.
#[test]
fn pcie_paths_cross_the_switches_between() {
    let f = fabric("dgx-h100-superpod", 1, 8, 8);
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let s = &net.servers[0];
    let mut out = Vec::new();
    // GPU 0 and NIC 0 share PCIe switch 1.
    assert_eq!(s.nic_of_gpu[..2], [0, 1]);
    let lat = net.pcie_path(s.gpus[0], s.nics[0], 0, &mut out);
    assert_eq!((out.len(), lat), (2, PCIE_SWITCH_LATENCY));
    out.clear();
    let lat = net.pcie_path(s.gpus[0], s.nics[7], 0, &mut out);
    assert_eq!((out.len(), lat), (4, PCIE_SWITCH_LATENCY.saturating_mul(2)));
    let o = Overrides {
        gpudirect: Some(false),
        servers: Some(1),
        ..Overrides::default()
    };
    let mut raw = presets::raw("dgx-h100-superpod").unwrap();
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, "t").unwrap();
    let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let s = &net.servers[0];
    out.clear();
    net.pcie_path(s.gpus[0], s.nics[0], 0, &mut out);
    // Up to the root complex, host memory, back down.
    let host = 2 * f.links.len() as u32;
    assert_eq!(out.len(), 5);
    assert_eq!(out[2], host);
    // NIC to GPU: the same, and the GPU's own receive through host memory (one per GPU,
    // after the server's host memory), capped at what NCCL's kernel reads.
    out.clear();
    net.pcie_path(s.nics[0], s.gpus[0], 0, &mut out);
    assert_eq!(out.len(), 6);
    assert_eq!((out[2], out[3]), (host, host + 1));
    assert_eq!(net.capacity(out[3]), HOST_STAGED_RECEIVE_GBS * 1e9);
    assert_eq!(net.staged_receivers()[0], s.gpus[0]);
    assert_eq!(net.resources() as u32, host + 1 + 8);
    assert!(net
        .describe(out[3])
        .ends_with("gpu1 receiving through host memory (GPUDirect RDMA off)"));
}

/// Issue 3's analytic case on a designed fabric: a shift permutation (i -> i + H/2) on a
/// non-blocking two-tier tree with D-mod-K never shares a link, so every transfer runs at the
/// full NIC rate.
#[test]
fn dmodk_shift_permutation_is_collision_free() {
    let f = fabric("seed-leaf-spine", 200, 1, 1);
    let net = FabricNet::new(&f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let pairs: Vec<(Gpu, Gpu)> = crate::traffic::shift(200, 100)
        .into_iter()
        .map(|(a, b)| (Gpu::new(a as usize, 0), Gpu::new(b as usize, 0)))
        .collect();
    let (_, rates) = simulate_transfers(&net, &dmodk(), &pairs, Relay::Direct, 1 << 20).unwrap();
    let full = rates::INFINIBAND.payload_rate(200.0);
    for r in rates {
        assert!((r - full).abs() < 1.0, "{r} vs {full}");
    }
}
