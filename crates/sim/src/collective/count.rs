//! An all-to-all without relays counted per link (`StepBuilder::count_on`) a source GPU at a
//! time: the same flows, resources and counts as laying out every transfer through
//! `StepBuilder::send`, with each source's path to its NIC and each destination's path from its
//! NIC found once instead of for every transfer, and counted once per source or destination:
//! 268 million transfers of 16,384 GPUs spend their time routing between the NICs.

use super::comm::Gpu;
use super::error::CollectiveError;
use super::step::StepBuilder;
use super::step::CANCEL_EVERY_TRANSFERS;
use super::STEP_CHUNK;
use crate::engine::{self, Weight};
use crate::net::routes::ResourcePaths;
use crate::net::routes::RouteFailure;
use crate::net::routes::Routes;
use crate::time::Time;
use railyard_fabric::PortId;

/// One GPU's side of its transfers through the network on one plane: its NIC port, the path
/// between the GPU and that NIC (resources and latency), and how many flows crossed it, each by
/// its weight (`Routes::weight`).
#[derive(Clone, Default)]
struct Side {
    port: Option<PortId>,
    path: Vec<u32>,
    latency: Time,
    flows: u64,
}

/// Destinations routed to by every source of a chunk before the next ones
/// ([`StepBuilder::count_direct`]): 256 GPUs are 32 eight-GPU servers, a rail-optimized unit's
/// worth of leaves.
const DESTINATION_BLOCK: u32 = 256;

impl StepBuilder<'_, '_> {
    /// Counts the transfers of source ranks `lo..hi` to every other rank, as
    /// `AllToAll { relay: Direct }` lays them out: transfers inside a server over NVLink (or
    /// PCIe), the others from the source's NIC to the destination's through the network, each
    /// taking the connection number the layout in order gives it.
    ///
    /// The network transfers go a block of [`DESTINATION_BLOCK`] destinations at a time for every
    /// source of the chunk, not every destination for one source after another: routing a
    /// transfer reads its destination's port, leaf and the tables down to that leaf, and a block's
    /// stay in the cache while all the chunk's sources route to it (one destination after another
    /// over 16,384 GPUs missed the cache at nearly every transfer). Every count is a sum, so the
    /// order does not change it; each transfer keeps its connection number, and route failures
    /// are reported in the layout's order.
    pub(super) fn count_direct(&mut self, lo: u32, hi: u32) -> Result<(), CollectiveError> {
        let net = self.net;
        let ranks = self.shape.ranks;
        let hi = hi.min(ranks);
        let planes = net.fabric.meta.planes.max(1);
        // Per destination rank and plane: its side, found when first needed.
        let mut into: Vec<Side> = vec![Side::default(); (ranks * planes) as usize];
        let mut known = vec![false; (ranks * planes) as usize];
        let mut net_path: Vec<u32> = Vec::new();
        let mut routes = std::mem::take(&mut self.routes);
        let gpus: Vec<Gpu> = (0..ranks).map(|j| self.comm.gpu_of_rank(j)).collect();
        // Ranks per server, ascending.
        let mut on_server: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
        for (j, g) in gpus.iter().enumerate() {
            on_server.entry(g.server).or_default().push(j as u32);
        }
        // Per source: its sides per plane and the connection number of its next network
        // transfer (its transfers to ranks on other servers are numbered in rank order).
        let mut sources: Vec<(Vec<Side>, u32)> = Vec::with_capacity((hi - lo) as usize);
        let mut conn = self.conn;
        for i in lo..hi {
            let a = gpus[i as usize];
            let sa = &net.servers[a.server];
            let ga = sa.gpus[a.local as usize];
            let rail = sa.nic_of_gpu[a.local as usize];
            let mut out: Vec<Side> = vec![Side::default(); planes as usize];
            for (p, side) in out.iter_mut().enumerate() {
                if let Some((_, sp)) = net.nic_port(a.server, rail, p as u32) {
                    let snic = net.fabric.port(sp).node;
                    side.port = Some(sp);
                    side.latency =
                        net.pcie_path_memo(&mut self.pcie, ga, snic, a.server, &mut side.path);
                }
            }
            sources.push((out, conn));
            conn = conn.wrapping_add(ranks - on_server[&a.server].len() as u32);
        }
        // Inside servers, in the layout's order.
        for i in lo..hi {
            let a = gpus[i as usize];
            for &j in &on_server[&a.server] {
                if j != i {
                    self.tick()?;
                    self.count_inside(a, gpus[j as usize])?;
                }
            }
        }
        let mut failed: Vec<(u32, u32, RouteFailure)> = Vec::new();
        // Routes found straight as resources, counted here and added to the load at the end.
        let mut fast = ResourcePaths::default();
        let mut counts: Vec<u64> = vec![0; net.resources()];
        for block in (0..ranks).step_by(DESTINATION_BLOCK as usize) {
            for i in lo..hi {
                let a = gpus[i as usize];
                let (out, next) = &mut sources[(i - lo) as usize];
                for j in block..(block + DESTINATION_BLOCK).min(ranks) {
                    let b = gpus[j as usize];
                    if a.server == b.server {
                        continue;
                    }
                    self.tick()?;
                    let conn = *next;
                    *next = next.wrapping_add(1);
                    let plane = conn % planes;
                    let k = (j * planes + plane) as usize;
                    if !known[k] {
                        into[k] = self.side_into(b, plane);
                        known[k] = true;
                    }
                    let src = &out[plane as usize];
                    let (Some(sp), Some(dp)) = (src.port, into[k].port) else {
                        let ga = net.servers[a.server].gpus[a.local as usize];
                        let gb = net.servers[b.server].gpus[b.local as usize];
                        let e = RouteFailure {
                            src: net.fabric.node(ga).name.clone(),
                            dst: net.fabric.node(gb).name.clone(),
                            reason: "every NIC cable of a server is down".into(),
                        };
                        failed.push((i, j, e));
                        continue;
                    };
                    let sides = (src.latency, into[k].latency);
                    let flows = match self.router.route_resources(net, sp, dp, conn, &mut fast) {
                        Some(Err(e)) => {
                            failed.push((i, j, e));
                            continue;
                        }
                        Some(Ok(())) => self.count_resources(&fast, &mut counts, sides),
                        None => {
                            routes.clear();
                            if let Err(e) = self.router.route_into(net, sp, dp, conn, &mut routes) {
                                failed.push((i, j, e));
                                continue;
                            }
                            self.count_routes(&routes, sp, sides, &mut net_path)?
                        }
                    };
                    let Some(flows) = flows else {
                        continue;
                    };
                    out[plane as usize].flows += flows;
                    into[k].flows += flows;
                }
            }
        }
        if let Some(c) = self.phases[0].counted.as_mut() {
            for (r, &n) in counts.iter().enumerate().filter(|&(_, &n)| n > 0) {
                c.load.add(r, n, Weight::ONE)?;
            }
        }
        self.conn = conn;
        failed.sort_by_key(|&(i, j, _)| (i, j));
        for (_, _, e) in failed {
            self.fail(e);
        }
        for (out, _) in std::mem::take(&mut sources) {
            self.add_side(&out)?;
        }
        self.add_side(&into)?;
        self.routes = routes;
        Ok(())
    }

    /// Counts a transfer's paths found as resources
    /// ([`FabricRouting::route_resources`](crate::net::routes::FabricRouting::route_resources)) into
    /// `counts`, each weighing one flow, with `sides` the latencies of its source's and
    /// destination's sides; the flows it weighs, or `None` when the step is not counted.
    fn count_resources(
        &mut self,
        fast: &ResourcePaths,
        counts: &mut [u64],
        sides: (Time, Time),
    ) -> Option<u64> {
        let ph = &mut self.phases[0];
        let c = ph.counted.as_mut()?;
        for (p, bytes) in fast.bytes(STEP_CHUNK).enumerate() {
            for &r in fast.path(p) {
                counts[r as usize] += 1;
            }
            c.min_bytes = c.min_bytes.min(bytes);
            c.max_bytes = c.max_bytes.max(bytes);
            ph.latency = ph.latency.max(sides.0 + fast.latency(p) + sides.1);
        }
        let n = fast.len() as u64;
        ph.represented += n;
        Some(n)
    }

    /// Counts a transfer's `routes` from source NIC port `sp` on the phase's load, each path by
    /// its weight, with `sides` as [`StepBuilder::count_resources`]; the flows the connection
    /// weighs ([`Routes::flows`]), or `None` when the step is not counted.
    fn count_routes(
        &mut self,
        routes: &Routes,
        sp: PortId,
        sides: (Time, Time),
        net_path: &mut Vec<u32>,
    ) -> Result<Option<u64>, CollectiveError> {
        let net = self.net;
        let ph = &mut self.phases[0];
        let Some(c) = ph.counted.as_mut() else {
            return Ok(None);
        };
        for (p, bytes) in routes.bytes(STEP_CHUNK).enumerate() {
            net_path.clear();
            let lat = net.network_path(sp, routes.path(p), net_path);
            let weight = routes.weight(p);
            for &r in net_path.iter() {
                c.load.add(r as usize, 1, weight)?;
            }
            c.weighted |= weight != Weight::ONE;
            c.min_bytes = c.min_bytes.min(bytes);
            c.max_bytes = c.max_bytes.max(bytes);
            ph.latency = ph.latency.max(sides.0 + lat + sides.1);
        }
        ph.represented += routes.len() as u64;
        Ok(Some(routes.flows()))
    }

    /// Counts one transfer towards the cancellation check.
    fn tick(&mut self) -> Result<(), CollectiveError> {
        self.transfers = self.transfers.wrapping_add(1);
        if self.transfers.is_multiple_of(CANCEL_EVERY_TRANSFERS) {
            self.cancel.check()?;
        }
        Ok(())
    }

    /// The side of destination GPU `b` on `plane`: its NIC port and the path from it to the GPU.
    fn side_into(&mut self, b: Gpu, plane: u32) -> Side {
        let net = self.net;
        let sb = &net.servers[b.server];
        let gb = sb.gpus[b.local as usize];
        let mut side = Side::default();
        if let Some((_, dp)) = net.nic_port(b.server, sb.nic_of_gpu[b.local as usize], plane) {
            let dnic = net.fabric.port(dp).node;
            side.port = Some(dp);
            side.latency = net.pcie_path_memo(&mut self.pcie, dnic, gb, b.server, &mut side.path);
        }
        side
    }

    /// A transfer between two GPUs of one server, counted as `StepBuilder::send` lays it out.
    fn count_inside(&mut self, a: Gpu, b: Gpu) -> Result<(), CollectiveError> {
        self.send(a, b, super::Relay::Direct, STEP_CHUNK)
    }

    /// Counts the flows that crossed each side's path.
    fn add_side(&mut self, sides: &[Side]) -> Result<(), CollectiveError> {
        let Some(c) = self.phases[0].counted.as_mut() else {
            return Ok(());
        };
        for side in sides.iter().filter(|s| s.flows > 0) {
            for &r in &side.path {
                c.load.add(r as usize, side.flows, Weight::ONE)?;
            }
        }
        Ok(())
    }
}

/// Routes of a chunk of sources by first switch and destination side
/// ([`FabricRouting::by_first_switch`]): each route found once, its links after the first (the
/// source's NIC cable, counted on the source's side) kept with how many transfers took it.
#[derive(Default)]
struct RouteMemo {
    /// Destination sides (rank x plane) per first switch.
    width: usize,
    /// Per first switch (by node): its row of key indexes + 1 (0: not routed yet).
    rows: std::collections::HashMap<u32, Vec<u32>>,
    keys: Vec<MemoKey>,
    /// Every key's paths after their first link: resources, `links[ends[p - 1]..ends[p]]`.
    links: Vec<u32>,
    ends: Vec<u32>,
    /// Per path, its weight (`Routes::weight`).
    weights: Vec<Weight>,
}

/// One route of a [`RouteMemo`].
struct MemoKey {
    /// Transfers that took it.
    count: u64,
    /// Its paths: `ends[first..first + n]`.
    first: u32,
    n: u32,
    /// Its paths' weights added up, in flows (`Routes::flows`).
    flows: u64,
    /// The sub-flow slowest at a given share: the most bytes per weight, as (bytes, weight).
    slowest: (u64, f64),
    /// The longest path's latency after the first link.
    latency: Time,
    min_bytes: u64,
    max_bytes: u64,
    /// While bounding: the latest drain of a sub-flow at the smallest share after its first link.
    bound: Time,
    /// Why the route is missing, if it is.
    failure: Option<String>,
}

impl StepBuilder<'_, '_> {
    /// [`StepBuilder::count_direct`] for a routing whose routes after the first switch depend only
    /// on it and the destination ([`FabricRouting::by_first_switch`]: adaptive routing): a route
    /// is found once per first switch and destination side for the chunk's sources, not once per
    /// transfer, and its links are counted once with the transfers that took it (268 million
    /// transfers of 16,384 GPUs share about 8 million routes). In the bounding pass
    /// ([`StepBuilder::bound_counted`]) the same routes bound each transfer's drain: a sub-flow's
    /// smallest share is the smaller of its sides' (source GPU to NIC cable, NIC to destination
    /// GPU) and its path's after the first link, so a transfer's latest drain is the later of its
    /// largest sub-flow at its sides' share and the route's own latest.
    pub(super) fn count_direct_by_switch(
        &mut self,
        lo: u32,
        hi: u32,
    ) -> Result<(), CollectiveError> {
        let net = self.net;
        let ranks = self.shape.ranks;
        let planes = net.fabric.meta.planes.max(1);
        let bounding = self.bounding();
        let mut memo = RouteMemo {
            width: (ranks * planes) as usize,
            ..RouteMemo::default()
        };
        let mut into: Vec<Side> = vec![Side::default(); (ranks * planes) as usize];
        let mut known = vec![false; (ranks * planes) as usize];
        let mut into_share = vec![f64::INFINITY; (ranks * planes) as usize];
        let mut routes = std::mem::take(&mut self.routes);
        let mut scratch: Vec<u32> = Vec::new();
        for i in lo..hi.min(ranks) {
            let a = self.comm.gpu_of_rank(i);
            let sa = &net.servers[a.server];
            let ga = sa.gpus[a.local as usize];
            let rail = sa.nic_of_gpu[a.local as usize];
            // Per plane: the source's side through its NIC cable, and its first switch.
            let mut out: Vec<Side> = vec![Side::default(); planes as usize];
            let mut start: Vec<Option<u32>> = vec![None; planes as usize];
            let mut out_share = vec![f64::INFINITY; planes as usize];
            for (p, side) in out.iter_mut().enumerate() {
                let Some((_, sp)) = net.nic_port(a.server, rail, p as u32) else {
                    continue;
                };
                let snic = net.fabric.port(sp).node;
                side.port = Some(sp);
                side.latency =
                    net.pcie_path_memo(&mut self.pcie, ga, snic, a.server, &mut side.path);
                // `nic_port` gives live network ports only: the cable is there and up.
                if let Some(first) = net.fabric.port(sp).link() {
                    side.latency += net.network_path(sp, &[first], &mut side.path);
                    start[p] = Some(net.far(first, snic).0);
                }
                if bounding {
                    out_share[p] = self.share(&side.path);
                }
            }
            for j in 0..ranks {
                if i == j {
                    continue;
                }
                self.transfers = self.transfers.wrapping_add(1);
                if self.transfers.is_multiple_of(CANCEL_EVERY_TRANSFERS) {
                    self.cancel.check()?;
                }
                let b = self.comm.gpu_of_rank(j);
                if a.server == b.server {
                    self.count_inside(a, b)?;
                    continue;
                }
                let conn = self.conn;
                self.conn += 1;
                let plane = conn % planes;
                let k = (j * planes + plane) as usize;
                if !known[k] {
                    into[k] = self.side_into(b, plane);
                    if bounding {
                        into_share[k] = self.share(&into[k].path);
                    }
                    known[k] = true;
                }
                let src = &out[plane as usize];
                let (Some(sp), Some(dp), Some(first)) =
                    (src.port, into[k].port, start[plane as usize])
                else {
                    let gb = net.servers[b.server].gpus[b.local as usize];
                    self.fail(RouteFailure {
                        src: net.fabric.node(ga).name.clone(),
                        dst: net.fabric.node(gb).name.clone(),
                        reason: "every NIC cable of a server is down".into(),
                    });
                    continue;
                };
                let key =
                    self.memo_key(&mut memo, &mut routes, &mut scratch, sp, dp, first, k, conn);
                let m = &mut memo.keys[key];
                if let Some(reason) = &m.failure {
                    let reason = reason.clone();
                    self.fail(RouteFailure {
                        src: net.port_name(sp),
                        dst: net.port_name(dp),
                        reason,
                    });
                    continue;
                }
                let Some(c) = self.phases[0].counted.as_mut() else {
                    continue;
                };
                if bounding {
                    let share = out_share[plane as usize].min(into_share[k]);
                    if share.is_finite() {
                        let (bytes, weight) = m.slowest;
                        c.bound = c.bound.max(engine::drain_time(bytes, share * weight));
                    }
                    c.bound = c.bound.max(m.bound);
                    continue;
                }
                m.count += 1;
                let ph = &mut self.phases[0];
                ph.latency = ph.latency.max(src.latency + m.latency + into[k].latency);
                ph.represented += u64::from(m.n);
                out[plane as usize].flows += m.flows;
                into[k].flows += m.flows;
            }
            if !bounding {
                self.add_side(&out)?;
            }
        }
        self.routes = routes;
        if bounding {
            return Ok(());
        }
        self.add_side(&into)?;
        let Some(c) = self.phases[0].counted.as_mut() else {
            return Ok(());
        };
        for m in memo.keys.iter().filter(|m| m.count > 0) {
            for p in m.first..m.first + m.n {
                let (from, to) = (memo.ends[p as usize], memo.ends[p as usize + 1]);
                let weight = memo.weights[p as usize];
                c.weighted |= weight != Weight::ONE;
                for &r in &memo.links[from as usize..to as usize] {
                    c.load.add(r as usize, m.count, weight)?;
                }
            }
            c.min_bytes = c.min_bytes.min(m.min_bytes);
            c.max_bytes = c.max_bytes.max(m.max_bytes);
        }
        Ok(())
    }

    /// The smallest share per flow (capacity over the flows counted) of `path`'s resources, while
    /// bounding.
    fn share(&self, path: &[u32]) -> f64 {
        let Some(c) = self.phases[0].counted.as_ref() else {
            return f64::INFINITY;
        };
        path.iter()
            .map(|&r| c.load.share(r as usize, self.net.capacity(r)))
            .fold(f64::INFINITY, f64::min)
    }

    /// The memo's key for routes from first switch `first` to destination side `k` (port `dp`),
    /// routed from `sp` (one of that switch's NIC ports) the first time it is asked for.
    #[allow(clippy::too_many_arguments)]
    fn memo_key(
        &self,
        memo: &mut RouteMemo,
        routes: &mut Routes,
        scratch: &mut Vec<u32>,
        sp: PortId,
        dp: PortId,
        first: u32,
        k: usize,
        conn: u32,
    ) -> usize {
        let width = memo.width;
        let row = memo.rows.entry(first).or_insert_with(|| vec![0; width]);
        if row[k] > 0 {
            return row[k] as usize - 1;
        }
        let net = self.net;
        let key = memo.keys.len();
        row[k] = key as u32 + 1;
        if memo.ends.is_empty() {
            memo.ends.push(0);
        }
        let mut m = MemoKey {
            count: 0,
            first: memo.ends.len() as u32 - 1,
            n: 0,
            flows: 0,
            slowest: (0, 1.0),
            latency: Time::ZERO,
            min_bytes: u64::MAX,
            max_bytes: 0,
            bound: Time::ZERO,
            failure: None,
        };
        routes.clear();
        match self.router.route_into(net, sp, dp, conn, routes) {
            Err(e) => m.failure = Some(e.reason),
            Ok(()) => {
                let head = net.fabric.port(sp).link();
                let mut first_latency = Time::ZERO;
                if let Some(l) = head {
                    scratch.clear();
                    first_latency = net.network_path(sp, &[l], scratch);
                }
                for (p, bytes) in routes.bytes(STEP_CHUNK).enumerate() {
                    scratch.clear();
                    let lat = net.network_path(sp, routes.path(p), scratch);
                    // Every path leaves by the source's cable, counted on its side.
                    debug_assert_eq!(routes.path(p).first().copied(), head);
                    let rest = &scratch[1.min(scratch.len())..];
                    memo.links.extend_from_slice(rest);
                    memo.ends.push(memo.links.len() as u32);
                    memo.weights.push(routes.weight(p));
                    let weight = routes.weight(p).as_f64();
                    m.n += 1;
                    let (b, wt) = m.slowest;
                    if bytes as f64 / weight > b as f64 / wt {
                        m.slowest = (bytes, weight);
                    }
                    m.latency = m.latency.max(lat.saturating_sub(first_latency));
                    m.min_bytes = m.min_bytes.min(bytes);
                    m.max_bytes = m.max_bytes.max(bytes);
                    if self.bounding() {
                        let share = self.share(rest);
                        if share.is_finite() {
                            m.bound = m.bound.max(engine::drain_time(bytes, share * weight));
                        }
                    }
                }
            }
        }
        m.flows = routes.flows();
        memo.keys.push(m);
        key
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AllToAll, CollectiveAlgorithm, Relay, StepBuilder};
    use crate::collective::shape_of;
    use crate::net::fabric_net::{FabricNet, NetConfig};
    use crate::net::routing::{RoutingConfig, RoutingKind};
    use crate::net::tree_router::TreeRouter;
    use crate::time::Time;
    use railyard_catalog::Catalog;
    use railyard_fabric::LinkKind;
    use railyard_spec::{presets, ClusterSpec, Overrides};

    /// `count_direct` (and with adaptive routing `count_direct_by_switch`) counts what laying out
    /// every transfer through `StepBuilder::send` counts: the same load on every resource, flow
    /// sizes, latency, flows and route failures, and in the bounding pass the same latest drain,
    /// on a fabric with fabric cables and a server's cable down, for each routing.
    #[test]
    fn counting_a_direct_alltoall_by_sides_and_switches_counts_as_sending_each_transfer() {
        let mut fabrics: Vec<(String, railyard_fabric::Fabric, Catalog)> = Vec::new();
        for preset in ["seed-leaf-spine", "dgx-h100-superpod"] {
            let mut raw = presets::raw(preset).unwrap();
            Overrides {
                servers: Some(12),
                ..Default::default()
            }
            .apply(&mut raw)
            .unwrap();
            let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
            let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
            fabrics.push((preset.to_string(), f, Catalog::builtin()));
        }
        // Three tiers: routes above the spines read the destination's digits.
        fabrics.extend(
            super::super::tests::small_trees()
                .into_iter()
                .filter(|(_, f, _)| f.links.iter().any(|l| l.kind == LinkKind::SpineCore)),
        );
        for (preset, f, catalog) in &fabrics {
            let pick = |kind: LinkKind, n: usize| {
                f.network_links()
                    .filter(|(_, l)| l.kind == kind)
                    .map(|(id, _)| id)
                    .take(n)
                    .collect::<Vec<_>>()
            };
            let mut failed = pick(LinkKind::LeafSpine, 3);
            failed.extend(pick(LinkKind::SpineCore, 2));
            let fabric_only = failed.clone();
            failed.extend(pick(LinkKind::ServerLeaf, 1));
            for down in [Vec::new(), fabric_only, failed] {
                let config = NetConfig {
                    failed: down.clone(),
                    ..NetConfig::default()
                };
                let net = FabricNet::new(f, catalog, &config).unwrap();
                for kind in [RoutingKind::Ecmp, RoutingKind::DModK, RoutingKind::Adaptive] {
                    let r = TreeRouter::new(kind, RoutingConfig::default());
                    let shape = shape_of(&net).unwrap();
                    let mut by_sides = StepBuilder::new(&net, &r, shape).unwrap();
                    by_sides.count_on().unwrap();
                    let a2a = AllToAll {
                        relay: Relay::Direct,
                    };
                    a2a.step(&mut by_sides).unwrap();
                    let mut by_sends = StepBuilder::new(&net, &r, shape).unwrap();
                    by_sends.count_on().unwrap();
                    for i in 0..shape.ranks {
                        for j in (0..shape.ranks).filter(|&j| j != i) {
                            let (a, b) =
                                (by_sends.comm.gpu_of_rank(i), by_sends.comm.gpu_of_rank(j));
                            by_sends
                                .send(a, b, Relay::Direct, super::STEP_CHUNK)
                                .unwrap();
                        }
                    }
                    let what = format!("{preset} {kind:?} {} down", down.len());
                    let (x, y) = (&by_sides.phases[0], &by_sends.phases[0]);
                    let (cx, cy) = (x.counted.as_ref().unwrap(), y.counted.as_ref().unwrap());
                    assert!(x.represented > 0, "{what}");
                    assert_eq!(cx.load, cy.load, "{what}");
                    assert_eq!(
                        (cx.min_bytes, cx.max_bytes, x.latency, x.represented),
                        (cy.min_bytes, cy.max_bytes, y.latency, y.represented),
                        "{what}"
                    );
                    assert_eq!(by_sides.phases.len(), by_sends.phases.len(), "{what}");
                    assert_eq!(by_sides.conn, by_sends.conn, "{what}");
                    assert_eq!(by_sides.failure_count, by_sends.failure_count, "{what}");
                    assert_eq!(by_sides.failures, by_sends.failures, "{what}");
                    if by_sides.failure_count > 0 {
                        continue;
                    }
                    // The bounding pass over the complete counts: the same latest drain.
                    by_sides.bound_counted();
                    a2a.step(&mut by_sides).unwrap();
                    by_sends.bound_counted();
                    for i in 0..shape.ranks {
                        for j in (0..shape.ranks).filter(|&j| j != i) {
                            let (a, b) =
                                (by_sends.comm.gpu_of_rank(i), by_sends.comm.gpu_of_rank(j));
                            by_sends
                                .send(a, b, Relay::Direct, super::STEP_CHUNK)
                                .unwrap();
                        }
                    }
                    let (cx, cy) = (
                        by_sides.phases[0].counted.as_ref().unwrap(),
                        by_sends.phases[0].counted.as_ref().unwrap(),
                    );
                    assert!(cy.bound > Time::ZERO, "{what}");
                    assert_eq!(cx.bound, cy.bound, "{what}");
                }
            }
        }
    }
}
