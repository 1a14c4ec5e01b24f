//! Deterministic GUIDs for a planned fabric; a discovered one keeps its site's.
//!
//! GUIDs are EUI-64 values whose top 24 bits are the vendor's OUI (IBTA spec vol. 1, 4.1.1); we use
//! NVIDIA/Mellanox's 0x0002c9 so tools display the vendor as they would on real hardware. The next byte
//! tells switches (0x01) from channel adapters (0x02); the rest is the device's index in the fabric.
//! A CA's port GUID is its node GUID plus the port number, as ibsim assigns them, so CA node GUIDs step
//! by 16 to leave room for the ports.

use railyard_fabric::{Fabric, NodeId, NodeKind};

/// NVIDIA (Mellanox) organisationally unique identifier.
pub const OUI: u64 = 0x0002c9;

const SWITCH_CLASS: u64 = 0x01;
const CA_CLASS: u64 = 0x02;

/// GUID of the `index`th switch (0-based).
pub fn switch_guid(index: u32) -> u64 {
    (OUI << 40) | (SWITCH_CLASS << 32) | (u64::from(index) + 1)
}

/// Node GUID of the `index`th channel adapter (0-based).
pub fn ca_guid(index: u32) -> u64 {
    (OUI << 40) | (CA_CLASS << 32) | ((u64::from(index) + 1) << 4)
}

/// Port GUID of a CA port (1-based port number).
pub fn ca_port_guid(node_guid: u64, port: u32) -> u64 {
    node_guid + u64::from(port)
}

/// Node GUIDs of every switch and NIC in a fabric, by node id; `None` for nodes InfiniBand does not see.
/// A node read from a site's discovery keeps the site's GUID ([`Fabric::site_guid`]), so an exported
/// fabric shows the GUIDs the site's tools do; the others get railyard's, skipping any the site uses
/// (and a site GUID already given to another node, which cannot happen in a discovery, is not
/// repeated). A plan has no site GUIDs: railyard's alone, as before.
pub fn assign(f: &Fabric) -> Vec<Option<u64>> {
    let site: Vec<Option<u64>> = (0..f.nodes.len())
        .map(|i| f.site_guid(NodeId(i as u32)))
        .collect();
    let taken: std::collections::HashSet<u64> = site.iter().flatten().copied().collect();
    let mut used: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let (mut switches, mut cas) = (0u32, 0u32);
    f.nodes
        .iter()
        .zip(&site)
        .map(|(n, &site)| {
            let own = |count: &mut u32, make: fn(u32) -> u64| loop {
                *count += 1;
                let g = make(*count - 1);
                if !taken.contains(&g) {
                    return g;
                }
            };
            let is_ib = matches!(
                n.kind,
                NodeKind::Switch { .. } | NodeKind::Nic { .. } | NodeKind::StorageNic
            );
            if !is_ib {
                return None;
            }
            // The counters advance for every node, so railyard's GUIDs do not move with the site's.
            let mine = match n.kind {
                NodeKind::Switch { .. } => own(&mut switches, switch_guid),
                _ => own(&mut cas, ca_guid),
            };
            Some(match site {
                Some(g) if used.insert(g) => g,
                _ => mine,
            })
        })
        .collect()
}

/// The GUID assigned to a node, if it has one.
pub fn of(guids: &[Option<u64>], id: NodeId) -> Option<u64> {
    guids.get(id.0 as usize).copied().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_carry_the_oui_and_class() {
        assert_eq!(switch_guid(0), 0x0002_c901_0000_0001);
        assert_eq!(ca_guid(0), 0x0002_c902_0000_0010);
        assert_eq!(ca_port_guid(ca_guid(0), 1), 0x0002_c902_0000_0011);
        assert_ne!(ca_guid(1), ca_port_guid(ca_guid(0), 1));
    }
}
