//! Transceiver cages: which node holds a port's cage ([`Fabric::cage_holder`]: a server's
//! twin-port cages hold ports of neighbouring NICs), and a dense index of cages ([`CageIndex`]) so
//! per-cage facts live in vectors.

use super::elements::{NodeId, NodeKind, PortId};
use super::fabric::Fabric;

impl Fabric {
    /// The node that physically holds a port's cage, and the cage number. Usually the port's own node;
    /// but a server's twin-port cages hold ports of neighbouring NICs (DGX H100: hca1 and hca2 leave
    /// through cage 1), numbered per server, and such a cage belongs to the first NIC with a port in it.
    pub fn cage_holder(&self, p: PortId) -> (NodeId, u32) {
        let port = self.port(p);
        let mut node = port.node;
        if matches!(self.node(node).kind, NodeKind::Nic { .. }) {
            let server = self.node(node).server;
            while node.0 > 0 {
                let prev = NodeId(node.0 - 1);
                let pn = self.node(prev);
                // A NIC's last port is its PCIe attachment; the ones before it face the network.
                let shares = matches!(pn.kind, NodeKind::Nic { .. })
                    && pn.server == server
                    && pn
                        .ports()
                        .take(pn.num_ports.saturating_sub(1) as usize)
                        .any(|q| self.port(q).cage == port.cage);
                if !shares {
                    break;
                }
                node = prev;
            }
        }
        (node, port.cage)
    }
}

/// An index of (node, cage) pairs: a slot number per cage, slots ascending in (node, cage) order, so
/// that per-cage facts live in a `Vec` indexed by slot instead of a map keyed by `(NodeId, cage)`.
#[derive(Debug, Clone)]
pub struct CageIndex(Slots);

#[derive(Debug, Clone)]
enum Slots {
    /// Cages numbered from 0 or 1 up, as built: node `n` owns slots `base[n]..base[n + 1]`, and cage `c`
    /// of it is slot `base[n] + c`.
    Dense(Vec<u32>),
    /// Any other numbering: the distinct pairs, sorted; a pair's slot is its position.
    Sparse(Vec<(NodeId, u32)>),
}

impl CageIndex {
    /// Every cage that holds a port of `f`.
    pub fn new(f: &Fabric) -> CageIndex {
        CageIndex::of(f.nodes.len(), f.ports.iter().map(|p| (p.node, p.cage)))
    }

    /// The cages named by `pairs` (repeats allowed) on nodes `0..nodes`; pairs naming other nodes are
    /// left out.
    pub fn of(nodes: usize, pairs: impl Iterator<Item = (NodeId, u32)> + Clone) -> CageIndex {
        // Per node, 1 + its highest cage (0: no cage).
        let mut count = vec![0u32; nodes];
        let mut named = 0u64;
        for (node, cage) in pairs.clone() {
            if let Some(c) = count.get_mut(node.0 as usize) {
                *c = (*c).max(cage.saturating_add(1));
                named += 1;
            }
        }
        let total: u64 = count.iter().map(|&c| u64::from(c)).sum();
        if total <= 16 * named + 4096 && total < u64::from(u32::MAX) {
            let mut base = Vec::with_capacity(nodes + 1);
            let mut next = 0u32;
            for c in count {
                base.push(next);
                next += c;
            }
            base.push(next);
            CageIndex(Slots::Dense(base))
        } else {
            // Cage numbers far apart: a slot per cage up to the highest would waste memory.
            let mut v: Vec<(NodeId, u32)> = pairs.filter(|(n, _)| (n.0 as usize) < nodes).collect();
            v.sort_unstable();
            v.dedup();
            CageIndex(Slots::Sparse(v))
        }
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        match &self.0 {
            Slots::Dense(base) => base.last().copied().unwrap_or(0) as usize,
            Slots::Sparse(pairs) => pairs.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of cage `cage` of `node`, if indexed.
    pub fn slot(&self, node: NodeId, cage: u32) -> Option<usize> {
        match &self.0 {
            Slots::Dense(base) => {
                let n = node.0 as usize;
                let (lo, hi) = (*base.get(n)?, *base.get(n + 1)?);
                let slot = lo.checked_add(cage)?;
                (slot < hi).then_some(slot as usize)
            }
            Slots::Sparse(pairs) => pairs.binary_search(&(node, cage)).ok(),
        }
    }

    /// The slot of the cage a port sits in, if indexed.
    pub fn port_slot(&self, f: &Fabric, p: PortId) -> Option<usize> {
        let (node, cage) = f.cage_holder(p);
        self.slot(node, cage)
    }

    /// Every slot with its node and cage number, in slot order. A dense index lists every number up to
    /// each node's highest cage.
    pub fn slots(&self) -> impl Iterator<Item = (NodeId, u32, usize)> + '_ {
        let (dense, sparse) = match &self.0 {
            Slots::Dense(base) => {
                let nodes = base.windows(2).enumerate().flat_map(|(n, w)| {
                    (w[0]..w[1]).map(move |s| (NodeId(n as u32), s - w[0], s as usize))
                });
                (Some(nodes), None)
            }
            Slots::Sparse(pairs) => (
                None,
                Some(pairs.iter().enumerate().map(|(s, &(n, c))| (n, c, s))),
            ),
        };
        dense
            .into_iter()
            .flatten()
            .chain(sparse.into_iter().flatten())
    }
}
