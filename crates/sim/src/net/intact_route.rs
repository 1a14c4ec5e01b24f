//! The tree router's routes on a fabric with every link up, straight to resources
//! ([`FabricRouting::route_resources`](crate::net::routes::FabricRouting::route_resources)), for
//! a step counted per link: ECMP's hash reads the connection number, so a counted all-to-all
//! routes each of its transfers (268 million on 16,384 GPUs), and most of that time went to what
//! the general walk carries for failures (split pieces, lists of the ways that still lead on, the
//! links kept per path then turned into resources one by one).
//!
//! With no link down the walk of `TreeRouter::walk` takes the same branches every time: the
//! lateral link to the destination's leaf where there is one, else down where the destination's
//! leaf is below (by the parallel index climbed with, or the policy's pick among different
//! children), else up by the policy's pick (the next up-port whose parent reaches the leaf
//! when it does not). This walks them, writing each link's direction and latency as it goes, for
//! a policy that does not spray; a connection whose paths would weigh other than one flow each
//! is left to `route_into`. `counting_a_direct_alltoall_by_sides_and_switches_counts_as_sending_each_transfer`
//! (collective/count.rs) checks the counts against laying out every transfer on the general walk.

use crate::net::fabric_net::{link_dir, FabricNet, NIC_LATENCY};
use crate::net::routes::{ResourcePaths, RouteFailure};
use crate::net::routing::Connection;
use crate::net::tree_router::TreeRouter;
use crate::time::Time;
use railyard_fabric::{LinkId, NodeId, PortId, Tier};

/// Depth of the stack of parallel indexes climbed, as the general walk's.
const STACK: usize = 2 * Tier::ALL.len() + 4;

/// Links a path may take before it is a loop, as the general walk's.
const MAX_HOPS: usize = 2 * Tier::ALL.len() + 2;

/// What is fixed for one connection's walks.
struct Ends {
    c: Connection,
    first: LinkId,
    last: LinkId,
    snic: NodeId,
    dst_leaf: u32,
    dst_leaf_node: NodeId,
}

impl TreeRouter {
    /// The connection's paths on `net` as resources into `out`, where every link is up and the
    /// policy does not spray; `None` otherwise, or where its paths would not each weigh one flow.
    pub(crate) fn route_intact(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut ResourcePaths,
    ) -> Option<Result<(), RouteFailure>> {
        if net.any_failed() || self.policy.sprays() {
            return None;
        }
        let f = net.fabric;
        let fail = |reason: &str| RouteFailure {
            src: net.port_name(src),
            dst: net.port_name(dst),
            reason: reason.to_string(),
        };
        let (Some(first), Some(last)) = (f.port(src).link(), f.port(dst).link()) else {
            return Some(Err(fail("a NIC port is not cabled")));
        };
        let dst_leaf = net.port_leaf[dst.0 as usize];
        if dst_leaf == u32::MAX {
            return Some(Err(fail("the destination is not on a leaf switch")));
        }
        let snic = f.port(src).node;
        let start = net.far(first, snic);
        let c = Connection {
            src: net.port_index[src.0 as usize],
            dst: net.port_index[dst.0 as usize],
            index: conn,
        };
        let subs = self
            .policy
            .sub_flows(&c, net.live_ways[start.0 as usize].max(1))
            .max(1);
        let nominal = self
            .policy
            .sub_flows(&c, net.ways[start.0 as usize].max(1))
            .max(1);
        if subs != nominal {
            return None;
        }
        let ends = Ends {
            c,
            first,
            last,
            snic,
            dst_leaf,
            dst_leaf_node: net.far(last, f.port(dst).node),
        };
        out.clear();
        for sub in 0..subs {
            match self.walk_intact(net, &ends, sub, out) {
                Ok(lat) => {
                    out.ends.push(out.resources.len() as u32);
                    out.latencies.push(lat);
                }
                Err(e) => return Some(Err(fail(e))),
            }
        }
        Some(Ok(()))
    }

    /// Sub-flow `sub`'s path: its resources appended to `out`, its latency returned.
    fn walk_intact(
        &self,
        net: &FabricNet<'_>,
        e: &Ends,
        sub: u32,
        out: &mut ResourcePaths,
    ) -> Result<Time, &'static str> {
        let head = out.resources.len();
        let mut lat = NIC_LATENCY;
        let mut take = |l: LinkId, from: NodeId, out: &mut ResourcePaths| {
            let (a, b) = net.ends[l.0 as usize];
            let forward = a == from.0;
            out.resources.push(link_dir(l, forward));
            let to = if forward { b } else { a };
            lat += net.link_latency[l.0 as usize] + net.node_latency[to as usize];
            NodeId(to)
        };
        let c = &e.c;
        let mut here = take(e.first, e.snic, out);
        let mut value = c.dst;
        let mut parallel = [(0u32, 1u32); STACK];
        let mut climbed = 0usize;
        loop {
            if here == e.dst_leaf_node {
                take(e.last, here, out);
                return Ok(lat);
            }
            if out.resources.len() - head > MAX_HOPS {
                out.resources.truncate(head);
                return Err("the route loops");
            }
            let conn_at = Connection { dst: value, ..*c };
            // Across to the destination's leaf.
            let lateral = &net.lateral[here.0 as usize];
            let to_leaf = |l: &&LinkId| net.far(**l, here) == e.dst_leaf_node;
            let across = lateral.iter().filter(to_leaf).count() as u32;
            if across > 0 {
                let i = self.policy.pick_port(&conn_at, sub, here.0, across);
                let l = lateral
                    .iter()
                    .filter(to_leaf)
                    .nth(i.min(across - 1) as usize);
                here = take(*l.expect("i < across"), here, out);
                continue;
            }
            // Down, where the destination's leaf is below.
            if let Some(l) = self.down_intact(net, e, here, sub, &mut parallel, &mut climbed) {
                here = take(l, here, out);
                continue;
            }
            // Up: the policy's pick, or the next up-port whose parent reaches the leaf.
            let ups = &net.up[here.0 as usize];
            if ups.is_empty() {
                out.resources.truncate(head);
                return Err("no route: no up-link leads to the destination");
            }
            let n = ups.len() as u32;
            let i = self.policy.pick_port(&conn_at, sub, here.0, n).min(n - 1);
            // `i + k` wrapped without a division (`i < n`, `k < n`).
            let Some(l) = (0..n)
                .map(|k| ups[(if i + k >= n { i + k - n } else { i + k }) as usize])
                .find(|&l| net.leaf_has(&net.reach, net.far(l, here), e.dst_leaf))
            else {
                out.resources.truncate(head);
                return Err("no route: every up-link towards it is down");
            };
            if climbed == STACK {
                out.resources.truncate(head);
                return Err("the route loops");
            }
            let (k, m) = net.up_parallel[l.0 as usize];
            parallel[climbed] = (k, m);
            climbed += 1;
            value = k.saturating_add(m.max(1).saturating_mul(value / n.max(1)));
            here = take(l, here, out);
        }
    }

    /// The link down from `here` towards the destination's leaf, when it is below `here`: the
    /// policy's pick among links to different children, else the parallel index climbed with
    /// (popped off the stack).
    fn down_intact(
        &self,
        net: &FabricNet<'_>,
        e: &Ends,
        here: NodeId,
        sub: u32,
        parallel: &mut [(u32, u32); STACK],
        climbed: &mut usize,
    ) -> Option<LinkId> {
        if !net.leaf_has(&net.below, here, e.dst_leaf) {
            return None;
        }
        let scanned: Vec<LinkId>;
        let downs = match net.down_to(here, e.dst_leaf) {
            Some(links) => links,
            // Below several children, or no table row: looked through.
            None => {
                scanned = net.down[here.0 as usize]
                    .iter()
                    .copied()
                    .filter(|&l| {
                        let n = net.far(l, here);
                        net.fabric.node(n).is_switch() && net.leaf_has(&net.below, n, e.dst_leaf)
                    })
                    .collect();
                &scanned
            }
        };
        let (&d0, _) = downs.split_first()?;
        let child = net.far(d0, here);
        let len = downs.len();
        if !downs.iter().all(|&l| net.far(l, here) == child) {
            *climbed = climbed.saturating_sub(1);
            let i = self.policy.pick_port(&e.c, sub, here.0, len as u32);
            return Some(downs[(i as usize).min(len - 1)]);
        }
        let (k, m) = if *climbed > 0 {
            *climbed -= 1;
            let (k, m) = parallel[*climbed];
            (k as usize, m as usize)
        } else {
            (0, 1)
        };
        if len >= m {
            return Some(downs[k % len]);
        }
        // Fewer parallel links down than up: its own one where it is there, else one shifted by
        // the source, as the general walk does for a policy that does not spray.
        let own = net.down[here.0 as usize]
            .iter()
            .copied()
            .filter(|&l| net.far(l, here) == child)
            .nth(k % m.max(1));
        Some(own.unwrap_or(downs[(k + e.c.src as usize) % len]))
    }
}
