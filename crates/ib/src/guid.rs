//! Deterministic GUIDs for a planned fabric.
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
pub fn assign(f: &Fabric) -> Vec<Option<u64>> {
    let (mut switches, mut cas) = (0u32, 0u32);
    f.nodes
        .iter()
        .map(|n| match n.kind {
            NodeKind::Switch { .. } => {
                switches += 1;
                Some(switch_guid(switches - 1))
            }
            NodeKind::Nic { .. } | NodeKind::StorageNic => {
                cas += 1;
                Some(ca_guid(cas - 1))
            }
            _ => None,
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
