//! The graph invariants ([`Fabric::check`]): what every builder and loader guarantees.

use super::elements::{LinkId, Medium, NodeKind, PortId, PortState, Unused};
use super::fabric::Fabric;
use std::fmt;

/// A broken invariant, found by [`Fabric::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvariantError(pub String);

impl fmt::Display for InvariantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fabric invariant broken: {}", self.0)
    }
}

impl std::error::Error for InvariantError {}

impl Fabric {
    /// Checks the graph invariants; the builders guarantee them, tests and loaders call this.
    pub fn check(&self) -> Result<(), InvariantError> {
        let bad = |m: String| Err(InvariantError(m));
        let mut seen = vec![false; self.ports.len()];
        for (i, l) in self.links.iter().enumerate() {
            for p in [l.a, l.b] {
                let Some(port) = self.ports.get(p.0 as usize) else {
                    return bad(format!("link {i} names port {} which does not exist", p.0));
                };
                if std::mem::replace(&mut seen[p.0 as usize], true) {
                    return bad(format!(
                        "port {} of {} is used by two links",
                        port.number,
                        self.port_node(p).name
                    ));
                }
                if port.state != PortState::Linked(LinkId(i as u32)) {
                    return bad(format!(
                        "port {} of {} does not point back to link {i}",
                        port.number,
                        self.port_node(p).name
                    ));
                }
                if port.gbps != l.gbps || port.lanes != l.lanes {
                    return bad(format!(
                        "{}/{} runs at {} Gb/s x{} but its link at {} Gb/s x{}",
                        self.port_node(p).name,
                        port.number,
                        port.gbps,
                        port.lanes,
                        l.gbps,
                        l.lanes
                    ));
                }
            }
            if l.a == l.b {
                return bad(format!("link {i} joins a port to itself"));
            }
            if l.kind.is_network() && matches!(l.medium, Medium::Unplanned) {
                return bad(format!("network link {i} has no cable"));
            }
        }
        for (i, port) in self.ports.iter().enumerate() {
            if let PortState::Linked(_) = port.state {
                if !seen[i] {
                    return bad(format!(
                        "port {} of {} claims a link that does not name it",
                        port.number,
                        self.node(port.node).name
                    ));
                }
            }
            let node = self.node(port.node);
            if matches!(node.kind, NodeKind::Nic { .. } | NodeKind::StorageNic)
                && port.state == PortState::Unused(Unused::Spare)
            {
                return bad(format!(
                    "NIC port {} is neither cabled nor marked unused",
                    self.port_label(PortId(i as u32))
                ));
            }
        }
        Ok(())
    }
}
