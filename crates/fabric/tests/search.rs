//! The design search against what forcing its choices can reach (issue 15).
//!
//! - Exhaustive: on a grid of small and medium requests (every technology, fat-tree and
//!   rail-optimized, 1 to 2,048 servers, 1, 2 and 8 NICs, oversubscription 1 to 3, and the split
//!   port modes NDR200 and HDR100), the design `auto` picks costs no more than any design reached by
//!   forcing a catalog switch, a lower ratio, a scalable-unit size, or a combination. Costs are the
//!   plan's own, from the built fabric's parts. The suite runs every request of up to 5 servers and
//!   a fixed-seed draw of the larger ones ([`sampled`]); `-- --ignored` runs the whole grid.
//! - Properties: cost never drops when a server is added within one design family (switch model,
//!   topology, technology); spines per group never exceed what the leaves' uplinks need by more than
//!   rounding to a balanced tree; the reported oversubscription is the cabled bandwidth ratio, at most
//!   the ratio asked for at the leaves.

use proptest::prelude::*;
use railyard_catalog::{Catalog, Tech};
use railyard_fabric::bom::{self, PartKind};
use railyard_fabric::layout::{CableCtx, MediaFloor};
use railyard_fabric::topo::{counts, Shape, Upper};
use railyard_fabric::{design, Fabric, LinkKind, SearchOptions, Tier};
use railyard_plan::Plan;
use railyard_spec::{ClusterSpec, Topology};
use std::sync::OnceLock;

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(Catalog::builtin)
}

/// A request as a user would write it, with what is forced.
#[derive(Debug, Clone)]
struct Request {
    servers: u32,
    nics: u32,
    tech: Tech,
    topology: Topology,
    ratio: f64,
    port_gbps: Option<u32>,
    switch: Option<String>,
    su_size: Option<u32>,
}

impl Request {
    fn toml(&self) -> String {
        let mut t = format!(
            "name = \"grid\"\n[servers]\ncount = {}\ngpus_per_server = 8\ncompute_nics = {}\n[fabric]\ntech = \"{}\"\ntopology = \"{}\"\noversubscription = {:?}\n",
            self.servers, self.nics, self.tech, self.topology, self.ratio
        );
        if let Some(g) = self.port_gbps {
            t += &format!("port_gbps = {g}\n");
        }
        if let Some(s) = &self.switch {
            t += &format!("switch = \"{s}\"\n");
        }
        if let Some(s) = self.su_size {
            t += &format!("su_size = {s}\n");
        }
        // The compute fabric only: storage and management are planned elsewhere.
        t += "[management]\nin_band = \"none\"\nout_of_band = \"none\"\n";
        t
    }

    fn spec(&self) -> ClusterSpec {
        railyard_spec::parse(&self.toml(), "grid.toml").expect("grid specs are valid")
    }
}

/// The fabric and its cost from its parts (the plan's own sum: `Plan` totals the same
/// `bom::Totals`), or `None` when the request cannot be built.
fn plan(r: &Request) -> Option<(Fabric, f64)> {
    let spec = r.spec();
    let d = design(&spec, catalog(), &SearchOptions::default()).ok()?;
    let cost = railyard_fabric::bom::cost(&d.fabric, catalog());
    Some((d.fabric, cost))
}

/// Catalog switches that carry the request's technology at its port speed.
fn carriers(r: &Request) -> Vec<String> {
    let gbps = r
        .port_gbps
        .unwrap_or_else(|| catalog().technology(r.tech).unwrap().port_gbps);
    catalog()
        .switches
        .values()
        .filter(|s| s.mode_for(r.tech, Some(gbps)).is_some())
        .map(|s| s.id.clone())
        .collect()
}

/// Whether a design's cables can be ordered: no links share a cage the catalog has no part for.
fn orderable(f: &Fabric) -> bool {
    railyard_fabric::layout::shared_cage_cables(f, catalog()).is_none()
}

/// Checks `auto <= forced` for every forced variant of `r` whose cables can be ordered (auto passes
/// over a cheaper design whose cables cannot be, and takes one only when nothing else builds);
/// returns how many designs were compared.
fn auto_is_no_dearer_than_forced(r: &Request) -> usize {
    let Some((auto_fabric, auto)) = plan(r) else {
        // Nothing carries it: no forced variant may build either.
        for sw in carriers(r) {
            let forced = Request {
                switch: Some(sw.clone()),
                ..r.clone()
            };
            assert!(
                plan(&forced).is_none(),
                "auto refused but {sw} builds: {r:?}"
            );
        }
        return 0;
    };
    let ratios: Vec<f64> = [1.0, 1.5, 2.0, 3.0]
        .into_iter()
        .filter(|&x| x <= r.ratio)
        .collect();
    let mut units: Vec<Option<u32>> = vec![None];
    if r.topology == Topology::RailOptimized {
        units.extend([Some(8), Some(20), Some(32)]);
    }
    // One forced choice at a time: each catalog switch, each lower ratio, each unit size; and each
    // switch at the lowest ratio (the auto search's space holds every one of them).
    let mut forced: Vec<Request> = Vec::new();
    for sw in carriers(r) {
        forced.push(Request {
            switch: Some(sw.clone()),
            ..r.clone()
        });
        if r.ratio > 1.0 {
            forced.push(Request {
                switch: Some(sw),
                ratio: 1.0,
                ..r.clone()
            });
        }
    }
    for &ratio in ratios.iter().filter(|&&x| x < r.ratio) {
        forced.push(Request { ratio, ..r.clone() });
    }
    for &su in units.iter().flatten() {
        forced.push(Request {
            su_size: Some(su),
            ..r.clone()
        });
    }
    let mut compared = 0;
    let auto_orderable = orderable(&auto_fabric);
    for f in &forced {
        if let Some((fabric, cost)) = plan(f) {
            if auto_orderable && !orderable(&fabric) {
                continue;
            }
            compared += 1;
            assert!(
                auto <= cost * (1.0 + 1e-12) + 1e-6,
                "auto ${auto:.2} dearer than forced ${cost:.2}\nrequest: {r:?}\nforced: {f:?}"
            );
        }
    }
    compared
}

/// The grid of requests for one technology: fat-tree and rail-optimized, 1 to 2,048 servers, 1, 2
/// and 8 NICs, oversubscription 1 to 3, and the split port mode where the technology has one.
fn requests(tech: Tech) -> Vec<Request> {
    let splits: &[Option<u32>] = match tech {
        Tech::IbNdr => &[None, Some(200)],
        Tech::IbHdr => &[None, Some(100)],
        _ => &[None],
    };
    let mut out = Vec::new();
    for topology in [Topology::FatTree, Topology::RailOptimized] {
        for servers in [1u32, 5, 33, 96, 257, 700, 2048] {
            for nics in [1u32, 2, 8] {
                // Two NICs on small requests only, to keep the grid quick.
                if nics == 2 && servers > 96 {
                    continue;
                }
                for ratio in [1.0, 2.0, 3.0] {
                    // The largest requests at 1:1 only.
                    if servers * nics > 2048 && ratio != 1.0 {
                        continue;
                    }
                    for &port_gbps in splits {
                        out.push(Request {
                            servers,
                            nics,
                            tech,
                            topology,
                            ratio,
                            port_gbps,
                            switch: None,
                            su_size: None,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The suite's share of a technology's grid: every request of up to 5 servers, and of the larger
/// ones [`DRAWN`] per topology and port mode, drawn with a fixed seed (a partial Fisher-Yates on
/// proptest's ChaCha generator). The whole grids take about 10 minutes of CPU on the debug build
/// (HDR alone 290 s, 284 s of it HDR100's split ports), so they run with `--ignored`:
/// `cargo test --release -p railyard-fabric --test search -- --ignored`.
fn sampled(all: Vec<Request>) -> Vec<Request> {
    use proptest::test_runner::{RngAlgorithm, TestRng};
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[34; 32]);
    let (mut keep, mut large): (Vec<Request>, Vec<Request>) =
        all.into_iter().partition(|r| r.servers <= 5);
    while !large.is_empty() {
        let (r0, r1) = (large[0].topology, large[0].port_gbps);
        let (mut stratum, rest): (Vec<Request>, Vec<Request>) = large
            .into_iter()
            .partition(|r| r.topology == r0 && r.port_gbps == r1);
        for i in 0..DRAWN.min(stratum.len()) {
            let span = (stratum.len() - i) as u128;
            let j = i + ((u128::from(rng.next_u64()) * span) >> 64) as usize;
            stratum.swap(i, j);
        }
        stratum.truncate(DRAWN);
        keep.extend(stratum);
        large = rest;
    }
    keep
}

/// Requests of more than 5 servers the suite draws per topology and port mode.
const DRAWN: usize = 4;

/// Checks `auto <= forced` on every request given (see [`auto_is_no_dearer_than_forced`]).
fn grid(requests: Vec<Request>) {
    let n = requests.len();
    let large = requests.iter().filter(|r| r.servers > 5).count();
    let compared: usize = requests.iter().map(auto_is_no_dearer_than_forced).sum();
    assert!(
        large >= 2 * DRAWN && compared > n,
        "{n} requests ({large} of more than 5 servers), {compared} compared"
    );
}

/// A test per technology of the grid the suite samples, and one of the whole grid.
macro_rules! grids {
    ($($sampled:ident, $exhaustive:ident: $tech:expr;)*) => {$(
        #[test]
        fn $sampled() {
            grid(sampled(requests($tech)));
        }

        #[test]
        #[ignore = "the whole grid: cargo test --release -p railyard-fabric --test search -- --ignored"]
        fn $exhaustive() {
            grid(requests($tech));
        }
    )*};
}

grids! {
    grid_ib_edr, grid_ib_edr_exhaustive: Tech::IbEdr;
    grid_ib_hdr, grid_ib_hdr_exhaustive: Tech::IbHdr;
    grid_ib_ndr, grid_ib_ndr_exhaustive: Tech::IbNdr;
    grid_ib_xdr, grid_ib_xdr_exhaustive: Tech::IbXdr;
    grid_roce_100g, grid_roce_100g_exhaustive: Tech::Roce100g;
    grid_roce_200g, grid_roce_200g_exhaustive: Tech::Roce200g;
    grid_roce_400g, grid_roce_400g_exhaustive: Tech::Roce400g;
    grid_roce_800g, grid_roce_800g_exhaustive: Tech::Roce800g;
}

/// The search's cost floor counts every link of a shape at its own run, where the built fabric puts
/// it ([`MediaFloor::runs`]): on switches and NICs whose ports each have a cage of their own it is
/// the built design's cables and optics to the cent, and never above them where ports share cages.
/// Checked on two- and three-tier designs of both topologies in every leaf placement.
#[test]
fn the_cost_floor_is_the_built_cost_where_no_cage_is_shared() {
    let (mut exact, mut tiers) = (0, std::collections::BTreeSet::new());
    for (tech, nics, servers) in [
        (Tech::IbEdr, 1u32, 20u32),
        (Tech::IbEdr, 1, 60),
        (Tech::IbEdr, 1, 1500),
        (Tech::IbEdr, 8, 96),
        (Tech::IbHdr, 2, 450),
        (Tech::IbNdr, 8, 100),
        (Tech::Roce400g, 4, 300),
    ] {
        for topology in [
            Topology::FatTree,
            Topology::RailOptimized,
            Topology::RailOnly,
        ] {
            for placement in ["end-of-row", "middle-of-row", "top-of-rack"] {
                let r = Request {
                    servers,
                    nics,
                    tech,
                    topology,
                    ratio: 1.5,
                    port_gbps: None,
                    switch: None,
                    su_size: None,
                };
                let toml = format!("{}[layout]\nleaf_placement = \"{placement}\"\n", r.toml());
                let spec = railyard_spec::parse(&toml, "floor.toml").unwrap();
                let Ok(d) = design(&spec, catalog(), &SearchOptions::default()) else {
                    continue;
                };
                let c = counts(&spec, d.resolved.radix(), &d.resolved.shape).unwrap();
                let floor = MediaFloor::new(CableCtx::of(&d.resolved))
                    .runs(&spec, &d.resolved.shape, &c)
                    .expect("a tree")
                    .expect("within reach, as built");
                let t = bom::Totals::of(catalog(), &bom::parts(&d.fabric, catalog()));
                let media: f64 = [PartKind::Cable, PartKind::Transceiver, PartKind::Fibre]
                    .iter()
                    .map(|&k| t.usd[k as usize])
                    .sum();
                let shared = d.resolved.switch.ports_per_cage(d.resolved.mode) > 1
                    || spec.servers.nic_ports_per_cage > 1;
                let case = format!("{toml}\n{:?}", d.resolved.shape);
                assert!(floor <= media + 1e-6, "floor {floor} above {media}: {case}");
                if !shared {
                    assert!(
                        (floor - media).abs() < 1e-6,
                        "floor {floor}, built {media}: {case}"
                    );
                    exact += 1;
                    tiers.insert(c.tiers);
                }
            }
        }
    }
    assert!(exact >= 20, "{exact} designs without shared cages");
    assert_eq!(tiers.into_iter().collect::<Vec<_>>(), [1, 2, 3]);
}

/// Per switch: the largest down:up bandwidth ratio of each tier, from the cabled links (a tier that
/// does not exist: 0; switches without uplinks: 1), as an architect would count it.
fn cabled_ratios(f: &Fabric) -> [f64; 3] {
    let mut out = [0.0f64; 3];
    for tier in Tier::ALL {
        let mut worst: Option<f64> = None;
        let mut exists = false;
        for (_, n) in f.switches(tier) {
            exists = true;
            let (mut down, mut up) = (0.0, 0.0);
            for p in n.ports() {
                let Some(l) = f.port(p).link() else { continue };
                let link = f.link(l);
                if link.kind == LinkKind::InterSwitch {
                    continue;
                }
                if link.a == p {
                    up += link.gbps;
                } else {
                    down += link.gbps;
                }
            }
            if up > 0.0 {
                worst = Some(worst.unwrap_or(0.0).max(down / up));
            }
        }
        out[tier as usize] = if exists { worst.unwrap_or(1.0) } else { 0.0 };
    }
    out
}

fn request() -> impl Strategy<Value = Request> {
    (
        1u32..=600,
        prop::sample::select(vec![1u32, 2, 4, 8]),
        prop::sample::select(Tech::ALL.to_vec()),
        prop::sample::select(vec![
            Topology::FatTree,
            Topology::RailOptimized,
            Topology::RailOnly,
        ]),
        prop::sample::select(vec![1.0, 1.5, 2.0, 3.0, 4.0]),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(servers, nics, tech, topology, ratio, sw)| {
            let mut r = Request {
                servers,
                nics,
                tech,
                topology,
                ratio,
                port_gbps: None,
                switch: None,
                su_size: None,
            };
            // A family: one switch model (the property holds per model, topology and technology).
            let c = carriers(&r);
            r.switch = Some(sw.get(&c).clone());
            r
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Adding a server never makes a design family cheaper: every design of n + 1 servers is one of
    /// n servers with a slot left free.
    #[test]
    fn cost_never_drops_when_a_server_is_added(r in request()) {
        let bigger = Request { servers: r.servers + 1, ..r.clone() };
        if let (Some((_, a)), Some((_, b))) = (plan(&r), plan(&bigger)) {
            prop_assert!(a <= b * (1.0 + 1e-12), "{} servers ${a:.0}, {} servers ${b:.0}: {r:?}", r.servers, bigger.servers);
        }
    }

    /// Spines per group never exceed what the leaves' uplinks need by more than rounding: in two
    /// tiers, each spine takes the same number of links from every leaf, at most floor(k / leaves), so
    /// the uplinks need at least ceil(uplinks / floor(k / leaves)) spines; the search uses at most
    /// that many for the fewest uplinks the ratio allows, rounded up to a balanced count (the next
    /// divisor), and never leaves a spine tier more than half empty when fewer spines would do.
    #[test]
    fn spines_follow_from_the_uplinks(r in request()) {
        let Some((f, _)) = plan(&r) else { return Ok(()) };
        let Some(shape) = f.meta.shape else { return Ok(()) };
        let k = f.nodes.iter().find(|n| n.is_switch()).map(|n| n.num_ports).unwrap_or(0);
        if let Shape { upper: Upper::Two { spines, links }, leaf_up, .. } = shape {
            let leaves_per_group = (f.switches(Tier::Leaf).count() as u32)
                / if r.topology == Topology::RailOnly { r.nics } else { 1 };
            let most = (k / leaves_per_group).max(1);
            let need = leaf_up.div_ceil(most);
            prop_assert_eq!(spines * links, leaf_up);
            prop_assert!(links <= most);
            // The fewest spines the uplinks need, rounded up to a divisor of the uplinks.
            let balanced = (need..=leaf_up).find(|s| leaf_up.is_multiple_of(*s)).unwrap();
            prop_assert!(spines <= balanced, "{spines} spines, {need} needed ({balanced} balanced) for {leaves_per_group} leaves x {leaf_up} uplinks on {k} ports: {r:?}");
            // No spine half empty while fewer balanced spines would carry the links: the fewest that
            // divide the uplinks (15 leaves x 14 uplinks on 64 ports need 4 spines, but 14 links do not
            // split evenly over 4, so 7 spines of 30 ports is the fewest balanced count).
            let used = leaves_per_group * links;
            prop_assert!(2 * used >= k || spines == balanced, "{spines} spines each using {used} of {k} ports ({balanced} balanced): {r:?}");
        }
    }

    /// The reported oversubscription is the cabled bandwidth ratio per tier, the same in every
    /// topology, and the leaves' is at most the ratio asked for.
    #[test]
    fn oversubscription_is_the_cabled_ratio_within_the_bound(r in request()) {
        let Some((f, _)) = plan(&r) else { return Ok(()) };
        let s = Plan::new(&f, catalog()).summary;
        let cabled = cabled_ratios(&f);
        prop_assert_eq!([s.oversubscription.leaf, s.oversubscription.spine, s.oversubscription.core], cabled);
        prop_assert!(s.oversubscription.leaf <= r.ratio + 1e-9, "leaf {} > {}: {r:?}", s.oversubscription.leaf, r.ratio);
        // Spines are non-blocking: at most as much down as up.
        if f.switches(Tier::Core).next().is_some() {
            prop_assert!(s.oversubscription.spine <= 1.0 + 1e-9);
        }
        prop_assert_eq!(s.oversubscription_requested, Some(r.ratio));
    }
}
