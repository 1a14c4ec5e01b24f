//! Routing over a tree of switches with a [`Routing`] policy at every equal-cost choice
//! ([`TreeRouter`], the route source of every designed fabric), and around failed links.
//!
//! A route climbs as D-mod-K does: a switch with n up-links picks by the destination's remaining
//! digits mod n and passes up the parallel index of the link it took plus m x (digits / n), m the
//! links to that parent; down a group of parallel links it takes the parallel index it climbed
//! with. Around a failed link:
//!
//! - a policy with one path per sub-flow (D-mod-K, ECMP) moves the share of a dead or useless
//!   port to one live port picked by the source (`(port + source) mod live`), so the sources of
//!   one switch spread it over the live ports as a re-routing fabric spreads it;
//! - a spraying policy (adaptive, [`Routing::sprays`]) spreads a connection over the first
//!   switch's up-ports that still lead to the destination, one sub-flow each, and splits a
//!   sub-flow that meets a dead or useless port further on evenly over the live ports (each piece
//!   carrying its share, [`Routes::bytes`]). The connection still weighs its intact sub-flows in
//!   every fair share, each path its part of them ([`Routes::weight`]): its NIC shares its link
//!   between connections, not paths. No choice then depends on a source's number: servers
//!   and links that the failures do not tell apart carry the same traffic, which lets a step be
//!   laid out by symmetry (`crate::net::symmetry`) with cables down.
//!
//! On an intact fabric both give the routes they always gave, bit for bit.

use crate::net::fabric_net::FabricNet;

use crate::net::routes::{FabricRouting, ResourcePaths, RouteFailure, Routes};
use crate::net::routing::{self, Connection, Routing, RoutingConfig, RoutingKind};
use railyard_fabric::{LinkId, NodeId, PortId, Tier};

/// Routes over the tree with a [`Routing`] policy at every equal-cost choice.
pub struct TreeRouter {
    pub policy: Box<dyn Routing>,
}

impl TreeRouter {
    /// The tree router over policy `kind` with `config`'s knobs ([`routing::build`]).
    pub fn new(kind: RoutingKind, config: RoutingConfig) -> TreeRouter {
        TreeRouter {
            policy: routing::build(kind, config),
        }
    }
}

/// Depth of the stack of parallel indexes climbed (a route climbs at most the tiers there are).
const STACK: usize = 2 * Tier::ALL.len() + 4;

/// A sub-flow (or a piece of one) on its way: where it is, the destination digits not yet spent
/// on the way up (D-mod-K's mixed radix), and per tier climbed the parallel index of the link
/// taken and how many parallel links there were to that parent.
#[derive(Clone)]
struct Walk {
    /// Links taken before `at`, for a piece split off mid-way (empty: a sub-flow from its start).
    prefix: Vec<LinkId>,
    at: NodeId,
    value: u32,
    parallel: [u32; STACK],
    parallel_of: [u32; STACK],
    climbed: usize,
    sub: u32,
    /// The connection's parts this walk carries one of.
    parts: u32,
}

/// What is fixed for one connection.
struct Cx {
    c: Connection,
    first: LinkId,
    last: LinkId,
    start: NodeId,
    dst_leaf: u32,
    dst_leaf_node: NodeId,
    max_hops: usize,
    /// Spraying around a failure: the first switch's up-ports that lead to the destination.
    spread: bool,
}

/// The next move of a walk.
enum Next {
    One(LinkId),
    /// Split evenly over the links in `Routes::scratch[0]`, each piece climbing (`up`) or not.
    Split {
        up: bool,
    },
}

impl FabricRouting for TreeRouter {
    fn name(&self) -> String {
        self.policy.name().to_string()
    }

    fn structural(&self) -> bool {
        self.policy.kind() != RoutingKind::Ecmp
    }

    fn spreads_over_every_up_port(&self) -> bool {
        self.policy.kind() == RoutingKind::Adaptive
    }

    fn symmetric_around_failures(&self) -> bool {
        self.structural() && self.policy.sprays()
    }

    /// Adaptive routing: the first switch sprays over its up-ports by the destination, and every
    /// choice above it reads the destination and the sub-flow's number (which, with the
    /// destination, names the port it took) or, sprayed around a failure, the port it took
    /// (`port_of`); where it falls back to a port shifted by the source, one port is left, so
    /// the shift picks it.
    fn by_first_switch(&self) -> bool {
        self.structural() && self.policy.sprays()
    }

    fn max_sub_flows(&self, net: &FabricNet<'_>) -> u32 {
        let c = Connection {
            src: 0,
            dst: 0,
            index: 0,
        };
        let ways = net.live_ways.iter().copied().max().unwrap_or(1);
        self.policy.sub_flows(&c, ways.max(1)).max(1)
    }

    fn route(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut Vec<Vec<LinkId>>,
    ) -> Result<(), RouteFailure> {
        let mut routes = Routes::default();
        self.route_into(net, src, dst, conn, &mut routes)?;
        out.extend(routes.paths().map(<[LinkId]>::to_vec));
        Ok(())
    }

    /// With every link up, for a policy that does not spray (the walk in net/intact_route.rs).
    fn route_resources(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut ResourcePaths,
    ) -> Option<Result<(), RouteFailure>> {
        self.route_intact(net, src, dst, conn, out)
    }

    fn route_into(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut Routes,
    ) -> Result<(), RouteFailure> {
        let f = net.fabric;
        let fail = |reason: &str| RouteFailure {
            src: net.port_name(src),
            dst: net.port_name(dst),
            reason: reason.to_string(),
        };
        let (Some(first), Some(last)) = (f.port(src).link(), f.port(dst).link()) else {
            return Err(fail("a NIC port is not cabled"));
        };
        if net.is_failed(first) || net.is_failed(last) {
            return Err(fail("a NIC cable is down"));
        }
        let dst_leaf = net.port_leaf[dst.0 as usize];
        if dst_leaf == u32::MAX {
            return Err(fail("the destination is not on a leaf switch"));
        }
        let dst_leaf_node = net.far(last, f.port(dst).node);
        let start = net.far(first, f.port(src).node);
        let c = Connection {
            src: net.port_index[src.0 as usize],
            dst: net.port_index[dst.0 as usize],
            index: conn,
        };
        // The first switch's equal-cost ways on: its up-links, or on a two-switch design (no
        // tier above) the links to the other switch, which adaptive routing sprays over as over
        // up-links.
        let first_ups = net.live_ways[start.0 as usize];
        // A spraying policy around a failure: a connection that leaves its leaf takes one
        // sub-flow per up-port that still leads to the destination.
        let mut scratch = std::mem::take(&mut out.scratch);
        let spread = self.policy.sprays()
            && net.any_failed()
            && start != dst_leaf_node
            && !net.up[start.0 as usize].is_empty();
        if spread {
            leading_ups(net, start, dst_leaf, dst_leaf_node, None, &mut scratch[2]);
        }
        let ways = if spread && !scratch[2].is_empty() {
            scratch[2].len() as u32
        } else {
            first_ups
        };
        let cx = Cx {
            c,
            first,
            last,
            start,
            dst_leaf,
            dst_leaf_node,
            max_hops: 2 * Tier::ALL.len() + 2,
            spread: spread && !scratch[2].is_empty(),
        };
        // As many sub-flows between NICs of one leaf as through the spines: a NIC shares its link
        // per transfer (per queue pair), so a transfer that stays on its leaf takes as many fair
        // shares of the NIC's link as one that climbs (its sub-flows all take the one path down).
        // Fewer would starve it next to spread transfers and stretch the step (adaptive routing
        // was 2.7% slower than D-mod-K on an all-to-all of 18 EDR fat-tree servers).
        let subs = self.policy.sub_flows(&c, ways.max(1)).max(1);
        // What the connection weighs in every fair share: its sub-flows on the intact fabric
        // (`Routes::weight`).
        out.nominal = self
            .policy
            .sub_flows(&c, net.ways[start.0 as usize].max(1))
            .max(1);
        // Sprayed sub-flows in the order of the ports they take, so the bytes a connection's
        // split leaves over (`Routes::bytes`: one each to the first paths) fall on the same
        // ports whatever the destination's number.
        let mut order = std::mem::take(&mut out.order);
        order.clear();
        order.extend((0..subs).map(|sub| (sub, sub)));
        if cx.spread {
            let conn_at = Connection { dst: c.dst, ..c };
            for o in &mut order {
                o.0 = self
                    .policy
                    .pick_port(&conn_at, o.1, start.0, scratch[2].len() as u32);
            }
            order.sort_unstable();
        }
        let mut pending: Vec<Walk> = Vec::new();
        let mut result = Ok(());
        // One walk, set back to the start for each sub-flow (the stacks are read only below
        // `climbed`).
        let mut w = Walk {
            prefix: Vec::new(),
            at: start,
            value: c.dst,
            parallel: [0; STACK],
            parallel_of: [1; STACK],
            climbed: 0,
            sub: 0,
            parts: subs,
        };
        'subs: for &(_, sub) in &order {
            w.at = start;
            w.value = c.dst;
            w.climbed = 0;
            w.sub = sub;
            w.parts = subs;
            if let Err(e) = self.walk(net, &cx, &mut w, out, &mut scratch, &mut pending) {
                result = Err(fail(e));
                break 'subs;
            }
            // Pieces of a sub-flow split around a failure.
            while let Some(mut w) = pending.pop() {
                if let Err(e) = self.walk(net, &cx, &mut w, out, &mut scratch, &mut pending) {
                    result = Err(fail(e));
                    break 'subs;
                }
            }
        }
        out.scratch = scratch;
        out.order = order;
        result
    }
}

/// The up-links of `here` that lead to the destination's leaf (live, their parent reaching it,
/// the parallel link it would come down by to the leaf live), except those to `cut`; where none
/// do, the live ones whose parent reaches it. Into `out`, in up-list order.
fn leading_ups(
    net: &FabricNet<'_>,
    here: NodeId,
    dst_leaf: u32,
    dst_leaf_node: NodeId,
    cut: Option<NodeId>,
    out: &mut Vec<LinkId>,
) {
    out.clear();
    out.extend(net.up[here.0 as usize].iter().copied().filter(|&l| {
        useful(net, l, here, dst_leaf, dst_leaf_node) && Some(net.far(l, here)) != cut
    }));
    if out.is_empty() {
        // That parent is the only way left: its live parallel links then.
        out.extend(net.up[here.0 as usize].iter().copied().filter(|&l| {
            !net.is_failed(l) && net.leaf_has(&net.reach, net.far(l, here), dst_leaf)
        }));
    }
}

/// Whether up-link `l` of `here` still leads to the destination's leaf.
fn useful(
    net: &FabricNet<'_>,
    l: LinkId,
    here: NodeId,
    dst_leaf: u32,
    dst_leaf_node: NodeId,
) -> bool {
    let parent = net.far(l, here);
    !net.is_failed(l)
        && net.leaf_has(&net.reach, parent, dst_leaf)
        && !(net.any_failed() && net.parallel_down_is_failed(l, parent, dst_leaf, dst_leaf_node))
}

impl TreeRouter {
    /// Follows `w` to the destination, appending its path to `out`; a split pushes its pieces
    /// onto `pending` instead (each with the path so far).
    fn walk(
        &self,
        net: &FabricNet<'_>,
        cx: &Cx,
        w: &mut Walk,
        out: &mut Routes,
        scratch: &mut [Vec<LinkId>; 3],
        pending: &mut Vec<Walk>,
    ) -> Result<(), &'static str> {
        let head = out.links.len();
        if w.prefix.is_empty() {
            out.links.push(cx.first);
        } else {
            out.links.extend_from_slice(&w.prefix);
        }
        loop {
            let here = w.at;
            if here == cx.dst_leaf_node {
                out.links.push(cx.last);
                out.ends.push(out.links.len() as u32);
                out.parts.push(w.parts);
                return Ok(());
            }
            if out.links.len() - head > cx.max_hops {
                out.links.truncate(head);
                return Err("the route loops");
            }
            let next = match self.next(net, cx, w, scratch) {
                Ok(n) => n,
                Err(e) => {
                    out.links.truncate(head);
                    return Err(e);
                }
            };
            match next {
                Next::One(l) => {
                    out.links.push(l);
                    w.at = net.far(l, here);
                }
                Next::Split { up } => {
                    let ways = &scratch[0];
                    let n = net.up[here.0 as usize].len() as u32;
                    let parts = w.parts.saturating_mul(ways.len() as u32);
                    // Pushed last first, so the pieces come off the stack in port order.
                    for &l in ways.iter().rev() {
                        let mut piece = w.clone();
                        piece.prefix = out.links[head..].to_vec();
                        piece.prefix.push(l);
                        piece.at = net.far(l, here);
                        piece.parts = parts;
                        if up && !climb(net, &mut piece, l, n) {
                            out.links.truncate(head);
                            return Err("the route loops");
                        }
                        pending.push(piece);
                    }
                    out.links.truncate(head);
                    return Ok(());
                }
            }
        }
    }

    /// The link `w` takes next from where it is (climbing updates its digits), or a split.
    fn next(
        &self,
        net: &FabricNet<'_>,
        cx: &Cx,
        w: &mut Walk,
        scratch: &mut [Vec<LinkId>; 3],
    ) -> Result<Next, &'static str> {
        let f = net.fabric;
        let here = w.at;
        let c = &cx.c;
        let [lateral, downs, first_ups] = scratch;
        // Trees have no lateral links: no list to build for them.
        lateral.clear();
        lateral.extend(
            net.lateral[here.0 as usize]
                .iter()
                .copied()
                .filter(|&l| !net.is_failed(l) && net.far(l, here) == cx.dst_leaf_node),
        );
        let conn_at = Connection { dst: w.value, ..*c };
        if !lateral.is_empty() {
            let i = self
                .policy
                .pick_port(&conn_at, w.sub, here.0, lateral.len() as u32);
            return Ok(Next::One(lateral[(i as usize).min(lateral.len() - 1)]));
        }
        // A switch with the destination's leaf below it has a live link down to a switch with
        // it below (that is how `below` was built); without it, no need to look through its
        // down-links (a leaf's servers, a spine's leaves on the way up).
        downs.clear();
        if net.leaf_has(&net.below, here, cx.dst_leaf) {
            match net.down_to(here, cx.dst_leaf) {
                // The same links as the scan below finds, in the same order.
                Some(links) => downs.extend_from_slice(links),
                None => downs.extend(net.down[here.0 as usize].iter().copied().filter(|&l| {
                    let n = net.far(l, here);
                    !net.is_failed(l)
                        && f.node(n).is_switch()
                        && net.leaf_has(&net.below, n, cx.dst_leaf)
                })),
            }
        }
        if !downs.is_empty() {
            let child = net.far(downs[0], here);
            if !downs.iter().all(|&l| net.far(l, here) == child) {
                w.climbed = w.climbed.saturating_sub(1);
                let i = self.policy.pick_port(c, w.sub, here.0, downs.len() as u32);
                return Ok(Next::One(downs[(i as usize).min(downs.len() - 1)]));
            }
            // Parallel links to one switch: the same parallel index as the link taken up to
            // the matching tier, so the spread of the up-ports (D-mod-K: by destination)
            // carries over to the way down.
            let (k, m) = if w.climbed > 0 {
                w.climbed -= 1;
                (
                    w.parallel[w.climbed] as usize,
                    w.parallel_of[w.climbed] as usize,
                )
            } else {
                (0, 1)
            };
            if downs.len() >= m {
                return Ok(Next::One(downs[k % downs.len()]));
            }
            // With some of them down, index k mod the live ones would put the dead links'
            // share on the first live ones (one of 9 live links of 10 carried two shares: an
            // all-to-all 65% slower, adaptive routing slower than static): a sub-flow whose own
            // parallel link is live takes it (the sources above sent those whose link is down
            // elsewhere: `useful`); one whose link is down goes to a live one shifted by the
            // source, or sprayed over all of them.
            let own = net.down[here.0 as usize]
                .iter()
                .copied()
                .filter(|&l| net.far(l, here) == child)
                .nth(k % m.max(1));
            return Ok(match own {
                Some(l) if !net.is_failed(l) => Next::One(l),
                _ if self.policy.sprays() && downs.len() > 1 => {
                    scratch.swap(0, 1);
                    Next::Split { up: false }
                }
                _ => Next::One(downs[(k + c.src as usize) % downs.len()]),
            });
        }
        // Up: the policy picks among all up-ports; a dead or useless one falls to the next.
        let ups = &net.up[here.0 as usize];
        if ups.is_empty() {
            return Err("no route: no up-link leads to the destination");
        }
        let n = ups.len() as u32;
        if cx.spread && w.climbed == 0 && here == cx.start {
            // Sprayed over the up-ports that lead on, one sub-flow each.
            let i = self
                .policy
                .pick_port(&conn_at, w.sub, here.0, first_ups.len() as u32);
            let l = first_ups[(i as usize).min(first_ups.len() - 1)];
            if !climb(net, w, l, n) {
                return Err("the route loops");
            }
            w.sub = port_of(ups, l);
            return Ok(Next::One(l));
        }
        let i = self.policy.pick_port(&conn_at, w.sub, here.0, n).min(n - 1);
        let at = ups[i as usize];
        let pick = if net.is_failed(at)
            || (net.any_failed() && !useful(net, at, here, cx.dst_leaf, cx.dst_leaf_node))
        {
            // A cable down here or above (the port's parent no longer reaches the destination):
            // its share goes to the live ports shifted by the source, so the sources of one
            // switch spread it over them as a re-routing fabric does (the next port took it all:
            // two shares on one up-link, the bottleneck of an all-to-all with one leaf-spine
            // cable of 80 down); a spraying policy splits it over them. Its parent, when the way
            // down from it is what is cut: the other parallel links to that parent carry their
            // own shares down already.
            let cut = (!net.is_failed(at)).then(|| net.far(at, here));
            let live = &mut scratch[0];
            leading_ups(net, here, cx.dst_leaf, cx.dst_leaf_node, cut, live);
            if self.policy.sprays() && live.len() > 1 {
                return Ok(Next::Split { up: true });
            }
            (!live.is_empty()).then(|| live[(i as usize + c.src as usize) % live.len()])
        } else {
            (0..n)
                .map(|k| ups[((i + k) % n) as usize])
                .find(|&l| useful(net, l, here, cx.dst_leaf, cx.dst_leaf_node))
        };
        let Some(l) = pick else {
            return Err("no route: every up-link towards it is down");
        };
        // Not sprayed around a failure: the sub-flow keeps its number above the first switch, as
        // D-mod-K's route of a destination shifted by it (`Routing::pick_port`). Naming it by the
        // port it took there instead (`port_of`) sent the sub-flows of one spine whose
        // destinations share a leaf to one core: on an intact 3-tier tree two sub-flows met on
        // a spine's up-link and a shift permutation ran at half the NIC rate.
        if !climb(net, w, l, n) {
            return Err("the route loops");
        }
        Ok(Next::One(l))
    }
}

/// A sub-flow sprayed around a failure is known above its first switch by the up-port it took
/// there (its place in the switch's up-list), not by its number: the number of the sub-flow that
/// takes a port shifts with the destination's place on its leaf, and choices above that depended
/// on it told apart destinations (and sources) that the fabric with cables down does not, which a
/// step laid out by symmetry must not (`crate::net::symmetry`). On an intact fabric a sub-flow keeps
/// its number: named by its port, the sub-flows that reach one spine with destinations on one
/// leaf all read the same digits there and climb the same up-port, and a shift permutation on an
/// intact 3-tier tree met two sub-flows on one link (seed-edr-fat-tree, 243 servers, shift 301:
/// 6.21 of 12.42 GB/s), where D-mod-K's shifted destinations never share one.
fn port_of(ups: &[LinkId], l: LinkId) -> u32 {
    ups.iter().position(|&u| u == l).unwrap_or(0) as u32
}

/// Records a climb over up-link `l` of a switch with `n` up-links: which of the parallel links to
/// that parent it is (of how many), and the destination digits left. `false` when the stack of
/// tiers climbed is full (a loop).
fn climb(net: &FabricNet<'_>, w: &mut Walk, l: LinkId, n: u32) -> bool {
    let (k, m) = net.up_parallel[l.0 as usize];
    if w.climbed == STACK {
        return false;
    }
    w.parallel[w.climbed] = k;
    w.parallel_of[w.climbed] = m;
    w.climbed += 1;
    w.value = k.saturating_add(m.max(1).saturating_mul(w.value / n.max(1)));
    true
}
