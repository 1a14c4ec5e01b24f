//! All-to-all on discovered fabrics (issue 33): a plan as a discovery shows it (devices and cables
//! in the order a tool meets them, no cable lengths) is assembled and furnished as `import ibnet`
//! and `--fabric` do, and must take the plan's fast path (by symmetry) with the per-flow engine's
//! times; irregular discoveries either fold exactly or are laid out flow by flow.

use super::tests::folded_vs_per_flow;
use super::*;
use crate::collective::simulate::simulate_folding_above;
use crate::net::fabric_net::NetConfig;
use crate::net::routing::{RoutingConfig, RoutingKind};
use crate::net::tree_router::TreeRouter;
use crate::Cancel;
use proptest::prelude::*;
use railyard_catalog::Catalog;
use railyard_fabric::import::{assemble, furnish, Cable, Device};
use railyard_fabric::{Fabric, Medium, NodeKind};
use railyard_spec::{presets, ClusterSpec, Overrides};

fn spec(preset: &str, servers: u32) -> ClusterSpec {
    let mut raw = presets::raw(preset).unwrap();
    Overrides {
        servers: Some(servers),
        ..Default::default()
    }
    .apply(&mut raw)
    .unwrap();
    ClusterSpec::from_raw(&raw, preset).unwrap()
}

/// A small deterministic shuffle (SplitMix64), so a case is one seed.
fn shuffle<T>(items: &mut [T], seed: &mut u64) {
    for i in (1..items.len()).rev() {
        *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let j = ((z ^ (z >> 31)) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

/// How a discovery departs from its plan.
#[derive(Debug, Clone, Copy, Default)]
struct Departures {
    /// Devices and cables listed in a shuffled order, each cable from a random end (a tool
    /// walking the fabric from somewhere else); 0: the plan's order.
    order_seed: u64,
    /// Swap the switch ends of two host cables (servers cabled out of order on a leaf, or
    /// across leaves).
    swap_hosts: Option<(usize, usize)>,
    /// Swap the upper ends of two switch-to-switch cables (up-ports cabled out of order, or
    /// between pods).
    swap_ups: Option<(usize, usize)>,
    /// Leave out a network cable (by index among them): not found.
    missing: Option<usize>,
}

/// `plan` as a discovery shows it (switches and HCAs with their cabled ports, each cable at its
/// rate, no lengths), assembled and furnished with `spec`'s servers, as `--fabric` does.
fn discovered(plan: &Fabric, spec: &ClusterSpec, d: Departures) -> Fabric {
    let mut order: Vec<usize> = (0..plan.nodes.len()).collect();
    let mut seed = d.order_seed;
    if seed != 0 {
        shuffle(&mut order, &mut seed);
    }
    let mut device_of = vec![usize::MAX; plan.nodes.len()];
    let mut devices = Vec::new();
    for &i in &order {
        let n = &plan.nodes[i];
        let device = match n.kind {
            NodeKind::Switch { .. } => Device {
                name: n.name.clone(),
                hca: None,
                ports: n.num_ports,
            },
            NodeKind::Nic { rail } => Device {
                name: plan.servers[n.server.unwrap() as usize].name.clone(),
                hca: Some(format!("hca{}", rail + 1)),
                // Its last port is PCIe, which discovery does not see.
                ports: n.num_ports - 1,
            },
            _ => continue,
        };
        device_of[i] = devices.len();
        devices.push(device);
    }
    let mut cables: Vec<Cable> = plan
        .network_links()
        .map(|(_, l)| {
            let end = |p| {
                let port = plan.port(p);
                (device_of[port.node.0 as usize], port.number)
            };
            Cable {
                a: end(l.a),
                b: end(l.b),
                gbps: l.gbps,
                lanes: l.lanes,
            }
        })
        .collect();
    let is_host = |c: &Cable| devices[c.a.0].hca.is_some();
    for (swap, hosts) in [(d.swap_hosts, true), (d.swap_ups, false)] {
        let Some((x, y)) = swap else { continue };
        let which: Vec<usize> = (0..cables.len())
            .filter(|&c| is_host(&cables[c]) == hosts)
            .collect();
        if which.is_empty() {
            continue;
        }
        let (x, y) = (which[x % which.len()], which[y % which.len()]);
        let b = cables[x].b;
        cables[x].b = cables[y].b;
        cables[y].b = b;
    }
    if let Some(m) = d.missing {
        cables.remove(m % cables.len());
    }
    if seed != 0 {
        shuffle(&mut cables, &mut seed);
        for (k, c) in cables.iter_mut().enumerate() {
            if (seed >> (k % 64)) & 1 == 1 {
                std::mem::swap(&mut c.a, &mut c.b);
            }
        }
    }
    let imported = assemble("discovered", plan.meta.tech, &devices, &cables).unwrap();
    furnish(&imported, spec, &Catalog::builtin()).unwrap()
}

/// `preset` at `servers` and the same as discovered, listed in the order `order_seed` shuffles.
fn plan_and_discovery(preset: &str, servers: u32, order_seed: u64) -> (Fabric, Fabric) {
    let s = spec(preset, servers);
    let plan = railyard_fabric::build(&s, &Catalog::builtin()).unwrap();
    let departures = Departures {
        order_seed,
        ..Departures::default()
    };
    let found = discovered(&plan, &s, departures);
    (plan, found)
}

/// The plan with its cables' lengths unknown, as discovery knows them: the same latencies.
fn unmeasured(plan: &Fabric) -> Fabric {
    let mut f = plan.clone();
    for l in &mut f.links {
        if l.kind.is_network() {
            l.medium = Medium::Discovered;
            l.run_m = 0.0;
        }
    }
    f
}

/// All-to-all of every GPU at 1 GiB laid out as `sim collective` lays it out, by symmetry from
/// the first flow on (as past the per-flow limit): the progress it reports and its busbw.
fn alltoall_by_symmetry(f: &Fabric) -> (Vec<String>, Sweep) {
    let net = FabricNet::new(f, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let router = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
    let cfg = CollectiveConfig::new(Collective::AllToAll);
    let mut said = Vec::new();
    let sim = simulate_folding_above(
        &net,
        &router,
        &cfg,
        &[Comm::whole(&net)],
        &mut |m: &str| said.push(m.to_string()),
        Cancel::NEVER,
        0,
        MAX_ALLTOALL_FLOWS,
        COUNT_EQUAL_ABOVE_FLOWS,
    )
    .unwrap();
    (
        said,
        sim.sweep(&[1 << 30])
            .expect("a 1 GiB all-to-all fits the clock"),
    )
}

/// `sim collective alltoall --fabric` on a plan's own discovered form took 16.3 s where the plan
/// took 0.2 s (1,024 DGX H100): only a designed fabric (`meta.shape`) was laid out by symmetry,
/// so every discovered one was counted flow by flow. The symmetry is found on the graph: the
/// discovered fabric is laid out from the plan's representative servers and gives its busbw.
#[test]
fn regression_a_discovered_fabric_lost_the_plans_fast_path() {
    for (preset, servers) in [("dgx-h100-superpod", 12), ("seed-leaf-spine", 8)] {
        let (plan, found) = plan_and_discovery(preset, servers, 7);
        assert!(found.meta.shape.is_none(), "the discovery has no plan");
        let (plan_said, plan_run) = alltoall_by_symmetry(&unmeasured(&plan));
        let (said, run) = alltoall_by_symmetry(&found);
        let reps = |said: &[String]| {
            said.iter()
                .find(|m| m.contains("representative server"))
                .cloned()
        };
        assert!(reps(&plan_said).is_some(), "{preset}: {plan_said:?}");
        assert_eq!(reps(&said), reps(&plan_said), "{preset}: {said:?}");
        assert!(
            !said.iter().any(|m| m.contains("not laid out by symmetry")),
            "{preset}: {said:?}"
        );
        assert_eq!(run.rows, plan_run.rows, "{preset}");
    }
}

/// Every preset as discovered, in a shuffled order, D-mod-K and adaptive, direct, PXN and staged
/// PXN: laid out by symmetry (as its plan is, `folded_alltoall_gives_the_per_flow_times_on_every_preset`)
/// with every flow's rate and finish time those of the per-flow engine, to the same tolerances.
#[test]
fn a_discovered_fabric_folds_with_the_per_flow_times_on_every_preset() {
    for preset in crate::net::scale_up::simulated_presets() {
        let servers = if preset == "seed-two-switch" { 8 } else { 12 };
        let (_, found) = plan_and_discovery(preset, servers, 3);
        for kind in [RoutingKind::DModK, RoutingKind::Adaptive] {
            for relay in [Relay::Direct, Relay::Pxn, Relay::PxnStaged] {
                let what = format!("{preset} x{servers} {kind:?} {relay:?}");
                let Some((reps, flows, classes, worst, worst_rate)) =
                    folded_vs_per_flow(&found, kind, relay)
                else {
                    // Rail-only joins no rails: a direct transfer between rails has no route.
                    assert!(
                        preset == "rail-only-h100" && relay == Relay::Direct,
                        "{what}"
                    );
                    continue;
                };
                eprintln!("{what}: {reps} of {flows} flows, {classes} classes");
                assert!(worst_rate <= 1e-9, "{what}: rates {worst_rate:e}");
                assert!(worst <= 1e-4, "{what}: finish times {worst:e}");
            }
        }
    }
}

proptest! {
    // A case lays a small fabric out both ways; PROPTEST_CASES runs more (500 cases: 341 laid
    // out by symmetry, every one exact).
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(40)
    ))]

    /// A discovery that departs from its plan (listed in any order, cables swapped between
    /// ports, leaves or pods, a cable not found; the plan non-blocking or 2:1) is laid out by
    /// symmetry only where its structure routes alike servers alike (`regular::routes_alike`)
    /// and the symmetry check holds, and then with the per-flow engine's rates and times.
    #[test]
    fn an_irregular_discovery_folds_exactly_or_not_at_all(
        preset in prop::sample::select(crate::net::scale_up::simulated_presets()),
        servers in 3u32..10,
        oversubscribed in any::<bool>(),
        order_seed in 1u64..u64::MAX,
        swap_hosts in prop::option::of((0usize..256, 0usize..256)),
        swap_ups in prop::option::weighted(0.25, (0usize..256, 0usize..256)),
        missing in prop::option::weighted(0.25, 0usize..4096),
        adaptive in any::<bool>(),
    ) {
        let mut raw = presets::raw(preset).unwrap();
        let o = Overrides {
            servers: Some(servers),
            oversubscription: oversubscribed.then_some(2.0),
            ..Default::default()
        };
        let plan = o.apply(&mut raw).ok()
            .and_then(|()| ClusterSpec::from_raw(&raw, preset).ok())
            .and_then(|s| Some((railyard_fabric::build(&s, &Catalog::builtin()).ok()?, s)));
        // Not every preset takes every size or ratio.
        prop_assume!(plan.is_some());
        let (plan, s) = plan.unwrap();
        let d = Departures { order_seed, swap_hosts, swap_ups, missing };
        let found = discovered(&plan, &s, d);
        let kind = if adaptive { RoutingKind::Adaptive } else { RoutingKind::DModK };
        let net = FabricNet::new(&found, &Catalog::builtin(), &NetConfig::default()).unwrap();
        let router = TreeRouter::new(kind, RoutingConfig::default());
        if crate::net::regular::routes_alike(&net, &router).is_ok() {
            if let Some((_, _, _, worst, worst_rate)) =
                folded_vs_per_flow(&found, kind, Relay::auto(&found, &Catalog::builtin()))
            {
                prop_assert!(worst_rate <= 1e-9, "rates {:e}", worst_rate);
                prop_assert!(worst <= 1e-4, "finish times {:e}", worst);
            }
        }
    }
}

/// `an_irregular_discovery_folds_exactly_or_not_at_all` shrunk (the last line of
/// proptest-regressions/collective_discovered_tests.txt, now collective/discovered_tests.txt, met by a random CI seed): 8
/// seed-leaf-spine servers discovered with srv01/hca1 cabled to leaf02:2 and srv03/hca2 to
/// leaf01:1, D-mod-K, PXN (`Relay::auto`). The tree is regular and non-blocking (16 hosts and 16
/// up-links a leaf), so `regular::routes_alike` lets it be laid out by symmetry; but leaf02 holds
/// three NICs of rail 1 and one of rail 2, PXN's traffic is rail-matched, and D-mod-K sends it up
/// by destination number: one of leaf02's up-links to spine01 is full in the per-flow solution
/// while its resource class (the leaf's 8 links to spine01, one class for colour refinement) is
/// at 90%, and flows laid out by symmetry run 29% off their max-min rates (finish times 22%).
/// The fold names leaf01 -> srv02/hca1 its bottleneck, which carries 22.48 of its 24.84 GB/s in
/// the per-flow solution. Adaptive routing spreads every transfer over all up-ports and folds the
/// same fabric exactly.
/// The plans of this preset hold uneven resource classes too (48 to 56 flows on one class's
/// leaf-spine links at 9 servers) and fold exactly, because there no member saturates: a check
/// by rail counts alone would take their fast path away. Open: ignored until the fold or
/// `routes_alike` is fixed.
#[test]
#[ignore = "open bug: laid out by symmetry 29% off its max-min rates"]
fn regression_a_leaf_holding_its_rails_unevenly_is_laid_out_by_symmetry_off_its_rates() {
    let (preset, servers) = ("seed-leaf-spine", 8);
    let s = spec(preset, servers);
    let plan = railyard_fabric::build(&s, &Catalog::builtin()).unwrap();
    let d = Departures {
        order_seed: 1,
        swap_hosts: Some((0, 17)),
        swap_ups: None,
        missing: None,
    };
    let found = discovered(&plan, &s, d);
    let net = FabricNet::new(&found, &Catalog::builtin(), &NetConfig::default()).unwrap();
    let relay = Relay::auto(&found, &Catalog::builtin());
    assert_eq!(relay, Relay::Pxn);
    let exact = |kind: RoutingKind| {
        let (_, _, _, worst, worst_rate) = folded_vs_per_flow(&found, kind, relay)?;
        assert!(worst_rate <= 1e-9, "{kind:?}: rates {worst_rate:e}");
        assert!(worst <= 1e-4, "{kind:?}: finish times {worst:e}");
        Some(())
    };
    assert_eq!(exact(RoutingKind::Adaptive), Some(()));
    // D-mod-K: refused, or exact (fails today).
    let dmodk = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
    if crate::net::regular::routes_alike(&net, &dmodk).is_ok() {
        exact(RoutingKind::DModK);
    }
}
