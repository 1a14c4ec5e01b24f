//! What the wiring gives, read off the graph: whether the network joins the rails, and the
//! bisection bandwidth.

use super::elements::{LinkId, LinkKind, NodeKind};
use super::fabric::Fabric;
use super::union_find::UnionFind;

impl Fabric {
    /// Whether the network joins the rails: every cabled compute NIC of the first server in one
    /// connected network. False on a rail-only fabric, whose rails are separate networks (traffic
    /// between rails must cross the server), whether planned or discovered.
    pub fn rails_joined(&self) -> bool {
        let mut uf = UnionFind::new(self.nodes.len());
        for (_, l) in self.network_links() {
            uf.union(self.port(l.a).node.0, self.port(l.b).node.0);
        }
        let Some(server) = self.servers.first() else {
            return true;
        };
        let mut roots = (server.first_node..server.first_node + server.num_nodes)
            .filter(|&n| {
                let node = &self.nodes[n as usize];
                matches!(node.kind, NodeKind::Nic { .. })
                    && node.ports().any(|p| {
                        self.port(p)
                            .link()
                            .is_some_and(|l| self.link(l).kind.is_network())
                    })
            })
            .map(|n| uf.find(n));
        let first = roots.next();
        roots.all(|r| Some(r) == first)
    }

    /// Bisection bandwidth, Gb/s: half the NIC ports send to the other half; the answer is the narrowest
    /// of half the host capacity and, per tier boundary, half the capacity crossing it (a Clos network's
    /// cut). In the two-switch design traffic between the switches crosses the inter-switch cables.
    /// Only links for which `up` holds count (all of them for a plan; the survivors of failures).
    pub fn bisection_gbps(&self, up: impl Fn(LinkId) -> bool) -> f64 {
        let (mut host, mut leaf_spine, mut spine_core, mut inter) = (0.0, 0.0, 0.0, 0.0);
        let mut has_inter = false;
        for (id, l) in self.network_links() {
            has_inter |= l.kind == LinkKind::InterSwitch;
            if !up(id) {
                continue;
            }
            match l.kind {
                LinkKind::ServerLeaf => host += l.gbps,
                LinkKind::LeafSpine => leaf_spine += l.gbps,
                LinkKind::SpineCore => spine_core += l.gbps,
                _ => inter += l.gbps,
            }
        }
        let mut b: f64 = host / 2.0;
        if self.meta.tiers >= 2 {
            b = b.min(leaf_spine / 2.0);
        }
        if self.meta.tiers >= 3 {
            b = b.min(spine_core / 2.0);
        }
        if has_inter {
            b = b.min(inter);
        }
        b
    }
}
