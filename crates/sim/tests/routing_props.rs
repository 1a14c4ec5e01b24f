//! Routing on designed fabrics, as issue 12 asks of it: on a non-blocking tree of two or three
//! tiers, fat-tree or rail-optimized, a shift permutation (rank i sends to rank i + s) routed by
//! D-mod-K never shares a link, so every transfer runs at its NIC's payload rate, as OpenSM's
//! ftree routes it (Zahavi 2010); adaptive routing, which spreads each transfer over its first
//! switch's up-ports, reaches the same rate. Designs and shifts are drawn at random; the case
//! count is small because each case simulates a whole fabric (PROPTEST_CASES runs more).
//! The sizes are full trees: D-mod-K's guarantee does not cover a part-filled last pod (see
//! `fat_tree_shift_runs_at_nic_rate`).

use proptest::prelude::*;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::collective::{simulate_transfers, Gpu, Relay};
use railyard_sim::fabric_net::{FabricNet, NetConfig, TreeRouter};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_spec::{presets, ClusterSpec, Overrides};

fn fabric(preset: &str, servers: u32) -> Fabric {
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

/// The lowest rate any transfer of the shift by `shift` ranks reaches, and the NIC payload rate
/// (bytes/s) it should reach.
fn shift_rates(f: &Fabric, kind: RoutingKind, shift: u64) -> (f64, f64) {
    let catalog = Catalog::builtin();
    let net = FabricNet::new(f, &catalog, &NetConfig::default()).unwrap();
    let g = u64::from(f.meta.gpus_per_server);
    let ranks = f.servers.len() as u64 * g;
    let pairs: Vec<(Gpu, Gpu)> = (0..ranks)
        .map(|i| {
            (
                Gpu::of_rank(i as u32, g as u32),
                Gpu::of_rank(((i + shift) % ranks) as u32, g as u32),
            )
        })
        .filter(|(a, b)| a.server != b.server)
        .collect();
    let router = TreeRouter::new(kind, RoutingConfig::default());
    let (_, rates) = simulate_transfers(&net, &router, &pairs, Relay::Direct, 1 << 20).unwrap();
    let nic = net
        .nic_port(0, 0, 0)
        .map(|(_, port)| net.port_gbps(port))
        .unwrap();
    let full = railyard_sim::rates::INFINIBAND.payload_rate(nic);
    (rates.into_iter().fold(f64::INFINITY, f64::min), full)
}

fn check(preset: &str, servers: u32, shift: u64) {
    let f = fabric(preset, servers);
    for kind in [RoutingKind::DModK, RoutingKind::Adaptive] {
        let (slowest, full) = shift_rates(&f, kind, shift);
        assert!(
            slowest >= full * 0.999,
            "{preset} with {servers} servers ({} tiers), shift {shift}, {}: slowest transfer \
             {:.2} GB/s, NIC rate {:.2} GB/s",
            f.meta.tiers,
            kind.as_str(),
            slowest / 1e9,
            full / 1e9
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// EDR fat-trees of 36-port switches with 4 NICs per server: two tiers up to 648 NICs,
    /// three above. The sizes fill whole leaves and pods (18 NICs per leaf, 18 leaves per pod):
    /// D-mod-K's guarantee is for a full tree. With a part-filled last pod the shift wraps onto
    /// destinations whose tree digits repeat (171 servers, shift 100: two flows from
    /// pod2-spine04 meet on its up-link to core07), as with OpenSM's ftree.
    #[test]
    fn fat_tree_shift_runs_at_nic_rate(servers in prop::sample::select(vec![36u32, 81, 162, 243]), s in 1u64..1000) {
        let shift = 1 + s % (u64::from(servers) * 4 - 1);
        check("seed-edr-fat-tree", servers, shift);
    }

    /// DGX H100 rail-optimized NDR: two tiers up to 8 scalable units, three at 16; shifts by
    /// whole servers stay on their rail, the others cross rails through spines and cores.
    #[test]
    fn rail_optimized_shift_runs_at_nic_rate(servers in prop::sample::select(vec![64u32, 256, 512]), s in 1u64..4096) {
        let shift = 1 + s % (u64::from(servers) * 8 - 1);
        check("dgx-h100-superpod", servers, shift);
    }
}
