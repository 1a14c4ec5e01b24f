//! Route sources behind [`FabricRouting`], the paths they give ([`Routes`]) and why a route can fail.

use crate::engine::{ResourceId, Weight, Workload};
use crate::error::SimError;
use railyard_fabric::{LinkId, PortId};

use crate::fabric_net::FabricNet;
/// A route source over the fabric's network: the links (in order from the source NIC port) each
/// sub-flow of a connection crosses. Implemented by `TreeRouter` over the routing policies, and by
/// `railyard_ib::lft::OpenSmRouting` over OpenSM LFT dumps.
pub trait FabricRouting: Sync {
    /// Short name for reports.
    fn name(&self) -> String;

    /// Appends one path per sub-flow of connection `conn` from NIC port `src` to NIC port `dst`.
    fn route(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut Vec<Vec<LinkId>>,
    ) -> Result<(), RouteFailure>;

    /// Whether routes follow from the fabric's structure alone (D-mod-K, adaptive), not from a
    /// hash of the connection (ECMP) nor from tables read from a file: then flows the fabric
    /// cannot tell apart may be simulated as classes (`crate::engine::classes`). The partition is checked
    /// exactly either way; this keeps the per-flow engine, and today's results to the last bit,
    /// where symmetry is unlikely. Default: no.
    fn structural(&self) -> bool {
        false
    }

    /// [`FabricRouting::route`] into `out`, with each path's share of the connection's bytes
    /// (a route source that splits a sub-flow around a failed link gives its pieces smaller
    /// shares). The default takes [`FabricRouting::route`]'s paths as equal shares.
    fn route_into(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        conn: u32,
        out: &mut Routes,
    ) -> Result<(), RouteFailure> {
        let mut paths = Vec::new();
        self.route(net, src, dst, conn, &mut paths)?;
        let n = paths.len() as u32;
        for p in &paths {
            out.push(p, n);
        }
        Ok(())
    }

    /// [`FabricRouting::route_into`] as a counted step reads it, where the route source has a
    /// faster way on `net`: the same paths, each as its resources and latency
    /// ([`FabricNet::network_path`]) in `out`, every path an equal part of the connection weighing
    /// one flow ([`ResourcePaths`]). `None` where it has none for this connection (the default):
    /// the caller routes it with `route_into`.
    fn route_resources(
        &self,
        _net: &FabricNet<'_>,
        _src: PortId,
        _dst: PortId,
        _conn: u32,
        _out: &mut ResourcePaths,
    ) -> Option<Result<(), RouteFailure>> {
        None
    }

    /// Whether routes around failed links (and drained servers) keep to the fabric's structure
    /// too: no choice depends on a source's or destination's number where a link is down, so the
    /// servers and links that colour refinement cannot tell apart with the failed links as
    /// colours of their own carry the same traffic (`crate::net::symmetry`, `collective`'s fold).
    /// Adaptive routing spreads around a failure ([`Routing::sprays`](crate::net::routing::Routing::sprays)); D-mod-K and ECMP move a
    /// dead port's share to a live port picked by the source. Default: no.
    fn symmetric_around_failures(&self) -> bool {
        false
    }

    /// Whether a route's links after its first (the source NIC's cable) depend only on the first
    /// switch and the destination port: not on the source port nor the connection number, so
    /// one route serves every source on that switch (`collective`'s counted all-to-all routes
    /// once per first switch and destination). Default: no.
    fn by_first_switch(&self) -> bool {
        false
    }

    /// The most sub-flows one connection takes on `net` (adaptive routing: one per up-port of the
    /// first switch; ECMP: its queue pairs): what a step's flow count is multiplied by, for the
    /// choice of how to lay it out and for its memory. Default: 1.
    fn max_sub_flows(&self, _net: &FabricNet<'_>) -> u32 {
        1
    }

    /// Whether every transfer leaving a switch is spread over all of its up-ports alike (adaptive
    /// routing), so how destinations are numbered cannot load one up-link more than another.
    /// Default: no.
    fn spreads_over_every_up_port(&self) -> bool {
        false
    }
}

/// The paths of one connection, each with its share of the connection's bytes (`1 / parts`):
/// [`FabricRouting::route_into`]'s output, kept between calls so routing a step's millions of
/// connections allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct Routes {
    pub(crate) links: Vec<LinkId>,
    /// End of each path in `links`.
    pub(crate) ends: Vec<u32>,
    /// Per path, the parts of the connection it carries one of.
    pub(crate) parts: Vec<u32>,
    /// The parts the connection takes on the intact fabric, whose weight in the fair shares
    /// it keeps: each path weighs `nominal / parts` of a flow ([`Routes::weight`]); 0: each
    /// path weighs one flow.
    pub(crate) nominal: u32,
    /// Working lists of the tree router.
    pub(crate) scratch: [Vec<LinkId>; 3],
    /// The tree router's order of a connection's sub-flows: (port, sub-flow).
    pub(crate) order: Vec<(u32, u32)>,
}

impl Routes {
    pub fn clear(&mut self) {
        self.links.clear();
        self.ends.clear();
        self.parts.clear();
        self.nominal = 0;
    }

    /// Path `i`'s weight in the fair shares it takes part in: a connection competes as its
    /// intact self, `nominal` sub-flows, whatever paths a failure leaves it, each path weighing
    /// its part of that (`engine::Workload::add_weighted_flow`). Adaptive routing spreads a
    /// connection's bytes over its live paths; the connection, not each path, is what its NIC
    /// shares its link between. A whole flow per path gave a connection sprayed over 19 live
    /// up-ports 19 shares of its NIC's link next to its neighbours' 20: it lagged, and one
    /// leaf-spine cable of 80 down made an all-to-all 3% slower than the intact fabric.
    pub fn weight(&self, i: usize) -> Weight {
        let parts = self.parts(i);
        if self.nominal == 0 || self.nominal == parts {
            return Weight::ONE;
        }
        Weight::new(self.nominal, parts).unwrap_or(Weight::ONE)
    }

    /// What the connection weighs in flows, its paths' weights added up: `nominal` where they
    /// are weighed by it (a connection's parts add up to one), else one flow per path.
    pub fn flows(&self) -> u64 {
        if self.nominal == 0 {
            self.len() as u64
        } else {
            u64::from(self.nominal)
        }
    }

    /// Number of paths.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Path `i`: the links from the source NIC port, in order.
    pub fn path(&self, i: usize) -> &[LinkId] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.links[start..self.ends[i] as usize]
    }

    /// Every path, in order.
    pub fn paths(&self) -> impl Iterator<Item = &[LinkId]> + '_ {
        (0..self.len()).map(|i| self.path(i))
    }

    /// The parts of the connection path `i` carries one of: its share is `1 / parts`.
    pub fn parts(&self, i: usize) -> u32 {
        self.parts[i].max(1)
    }

    /// Adds a path carrying one of `parts` equal parts of the connection.
    pub fn push(&mut self, links: &[LinkId], parts: u32) {
        self.links.extend_from_slice(links);
        self.ends.push(self.links.len() as u32);
        self.parts.push(parts.max(1));
    }

    /// The bytes of each path when the connection moves `bytes`: `bytes / parts`, rounded down,
    /// and the bytes left one each to the first paths (so `n` equal paths take `bytes / n`, the
    /// first `bytes % n` one more, and the bytes add up).
    pub fn bytes(&self, bytes: u64) -> impl Iterator<Item = u64> + '_ {
        let base = move |i: usize| bytes / u64::from(self.parts[i].max(1));
        let laid: u64 = (0..self.len()).map(base).sum();
        let left = bytes.saturating_sub(laid);
        (0..self.len()).map(move |i| base(i) + u64::from((i as u64) < left))
    }
}

/// The paths of one connection as resources ([`FabricRouting::route_resources`]): each path's
/// link directions from the source NIC's cable on and its latency, as
/// [`FabricNet::network_path`] gives them for [`Routes::path`]; each path carries an equal part
/// of the connection and weighs one flow ([`Routes::weight`] of a connection that keeps its
/// intact sub-flows). Kept between calls, so a counted step allocates nothing per transfer.
#[derive(Debug, Clone, Default)]
pub struct ResourcePaths {
    pub(crate) resources: Vec<u32>,
    /// End of each path in `resources`.
    pub(crate) ends: Vec<u32>,
    pub(crate) latencies: Vec<crate::time::Time>,
}

impl ResourcePaths {
    pub fn clear(&mut self) {
        self.resources.clear();
        self.ends.clear();
        self.latencies.clear();
    }

    /// Number of paths.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Path `i`'s resources, in order from the source NIC's cable.
    pub fn path(&self, i: usize) -> &[u32] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.resources[start..self.ends[i] as usize]
    }

    /// Path `i`'s latency.
    pub fn latency(&self, i: usize) -> crate::time::Time {
        self.latencies[i]
    }

    /// The bytes of each path when the connection moves `bytes`, as [`Routes::bytes`] splits them
    /// over equal parts: `bytes / n`, the first `bytes % n` paths one more.
    pub fn bytes(&self, bytes: u64) -> impl Iterator<Item = u64> + '_ {
        let n = self.len().max(1) as u64;
        (0..self.len()).map(move |i| bytes / n + u64::from((i as u64) < bytes % n))
    }
}

/// A connection with no usable route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteFailure {
    pub src: String,
    pub dst: String,
    pub reason: String,
}

impl std::fmt::Display for RouteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} -> {}: {}", self.src, self.dst, self.reason)
    }
}

/// Resource ids of a path as the engine's type (the workload from [`FabricNet::workload`] holds
/// every resource index the network hands out).
pub fn resource_ids(path: &[u32], w: &Workload) -> Result<Vec<ResourceId>, SimError> {
    path.iter()
        .map(|&r| {
            if (r as usize) < w.resources() {
                Ok(ResourceId::from_index(r))
            } else {
                Err(SimError::TooLarge("resources"))
            }
        })
        .collect()
}
