//! Routing and oversubscription over random fabrics (issue 12, "Must show"): two and three tiers,
//! fat-tree and rail-optimized. On a non-blocking fabric adaptive routing, which spreads each
//! transfer over the shortest paths it may take, is never slower than D-mod-K (OpenSM's ftree) or
//! ECMP hashing (any seed); with adaptive routing, removing oversubscription never makes a
//! collective slower (the training step's side is in crates/train/tests/step_props.rs). The
//! fabrics are drawn from sizes that give each tier count; all-to-all, whose flows grow with the
//! square of the ranks, runs on the smaller ones only, so the suite stays fast in debug builds
//! (PROPTEST_CASES runs more). Routing on full trees is in `routing_props.rs`.

use proptest::prelude::*;
use railyard_catalog::{Catalog, Tech};
use railyard_fabric::Fabric;
use railyard_sim::collective::{run, CollectiveConfig, Relay, Sweep};
use railyard_sim::fabric_net::{FabricNet, NetConfig, TreeRouter};
use railyard_sim::nccl::Collective;
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_spec::{presets, ClusterSpec, Overrides};

/// A fabric to draw: preset, servers, and overrides that change its hardware.
#[derive(Debug, Clone, Copy)]
struct Shape {
    preset: &'static str,
    servers: u32,
    /// Rail-optimized DGX A100 on 36-port EDR switches: three tiers from a hundred servers.
    edr: bool,
}

/// Two- and three-tier fat-trees (36-port EDR, 4 NICs per server: three tiers above 162
/// servers) and rail-optimized fabrics (DGX H100 on QM9700: two tiers; DGX A100 on SB7800: three
/// tiers at 100 servers).
const SHAPES: [Shape; 7] = [
    Shape {
        preset: "seed-edr-fat-tree",
        servers: 18,
        edr: false,
    },
    Shape {
        preset: "seed-edr-fat-tree",
        servers: 40,
        edr: false,
    },
    Shape {
        preset: "seed-edr-fat-tree",
        servers: 171,
        edr: false,
    },
    Shape {
        preset: "dgx-h100-superpod",
        servers: 8,
        edr: false,
    },
    Shape {
        preset: "dgx-h100-superpod",
        servers: 40,
        edr: false,
    },
    Shape {
        preset: "dgx-a100-superpod",
        servers: 24,
        edr: true,
    },
    Shape {
        preset: "dgx-a100-superpod",
        servers: 100,
        edr: true,
    },
];

fn fabric(s: Shape, oversubscription: f64) -> Fabric {
    let mut raw = presets::raw(s.preset).unwrap();
    let mut o = Overrides {
        servers: Some(s.servers),
        oversubscription: Some(oversubscription),
        storage: Some(false),
        management: Some(false),
        ..Default::default()
    };
    if s.edr {
        o.tech = Some(Tech::IbEdr);
        o.switch = Some("SB7800".into());
    }
    o.apply(&mut raw).unwrap();
    let spec = ClusterSpec::from_raw(&raw, s.preset).unwrap();
    railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
}

/// All-to-all only where its flows stay few enough for a debug build.
fn ops(f: &Fabric) -> Vec<Collective> {
    let ranks = f.servers.len() as u64 * u64::from(f.meta.gpus_per_server);
    let mut v = vec![Collective::AllReduce, Collective::AllGather];
    if ranks <= 320 {
        v.push(Collective::AllToAll);
    }
    v
}

const SIZES: [u64; 3] = [1 << 16, 1 << 24, 1 << 30];

fn sweep(f: &Fabric, op: Collective, kind: RoutingKind, seed: u64) -> Sweep {
    let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let cfg = CollectiveConfig {
        relay: Relay::auto(f, &Catalog::builtin()),
        ..CollectiveConfig::new(op)
    };
    let router = TreeRouter::new(
        kind,
        RoutingConfig {
            seed,
            ..RoutingConfig::default()
        },
    );
    run(&net, &router, &cfg, &SIZES, &mut |_| {}).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5, ..ProptestConfig::default() })]

    /// On a non-blocking fabric adaptive routing is never slower than D-mod-K or ECMP.
    #[test]
    fn adaptive_never_slower_than_static_routing(s in prop::sample::select(SHAPES.to_vec()), seed in any::<u64>()) {
        let f = fabric(s, 1.0);
        for op in ops(&f) {
            let adaptive = sweep(&f, op, RoutingKind::Adaptive, seed);
            for kind in [RoutingKind::DModK, RoutingKind::Ecmp] {
                let other = sweep(&f, op, kind, seed);
                for (a, b) in adaptive.rows.iter().zip(&other.rows) {
                    prop_assert!(
                        a.row.time_us <= b.row.time_us * (1.0 + 1e-9),
                        "{} x {} ({} tiers) {op} {} B: adaptive {:.3} us ({}) slower than {} {:.3} us ({})",
                        s.preset, s.servers, f.meta.tiers, a.row.size_bytes, a.row.time_us, a.algorithm,
                        kind.as_str(), b.row.time_us, b.algorithm
                    );
                }
            }
        }
    }

    /// With adaptive routing, removing oversubscription (2:1 or 3:1 at the leaves down to 1:1)
    /// never makes a collective slower.
    ///
    /// One known case is allowed for, by its size only: where the non-blocking design's paths are
    /// longer than the oversubscribed one's, every size pays that latency once. Removing
    /// oversubscription can take more switches: 171 EDR fat-tree servers need 3 tiers at 1:1 and 2
    /// at 2:1 (leaves of 24 hosts instead of 16), +0.233 us; 24 DGX A100 rail-optimized on EDR
    /// need 2 scalable units at 1:1 where one leaf per rail holds all 24 at 2:1, so rail traffic
    /// climbs to a spine and back, +0.24 us. That is the network as built, not the model: the
    /// property is checked on the rest of the time (the non-blocking time less the growth of the
    /// steps' path latency is never above the oversubscribed one).
    #[test]
    fn removing_oversubscription_never_slower_with_adaptive(
        s in prop::sample::select(SHAPES.to_vec()),
        ratio in prop::sample::select(vec![2.0f64, 3.0]),
    ) {
        let (over, full) = (fabric(s, ratio), fabric(s, 1.0));
        for op in ops(&full) {
            let a = sweep(&over, op, RoutingKind::Adaptive, 0);
            let b = sweep(&full, op, RoutingKind::Adaptive, 0);
            let latency = |x: &Sweep| {
                x.models.iter().map(|m| m.path_latency.as_us_f64()).fold(0.0, f64::max)
            };
            let extra_hops = (latency(&b) - latency(&a)).max(0.0);
            for (x, y) in a.rows.iter().zip(&b.rows) {
                prop_assert!(
                    y.row.time_us - extra_hops <= x.row.time_us * (1.0 + 1e-9),
                    "{} x {} ({} tiers, {} at {ratio}:1) {op} {} B: non-blocking {:.3} us ({}) slower than {ratio}:1 {:.3} us ({})",
                    s.preset, s.servers, full.meta.tiers, over.meta.tiers, x.row.size_bytes,
                    y.row.time_us, y.algorithm, x.row.time_us, x.algorithm
                );
            }
        }
    }
}

/// The draws above cover both topologies at two and three tiers.
#[test]
fn the_shapes_cover_two_and_three_tiers_of_both_topologies() {
    let mut seen = std::collections::BTreeSet::new();
    for s in SHAPES {
        let f = fabric(s, 1.0);
        seen.insert((f.meta.topology.clone(), f.meta.tiers));
    }
    for topology in ["fat-tree", "rail-optimized"] {
        for tiers in [2, 3] {
            assert!(
                seen.contains(&(topology.to_string(), tiers)),
                "{topology} {tiers}: {seen:?}"
            );
        }
    }
}
