//! How people name what the arena numbers: cable ids (`C0000042`), port labels (`hca3`, `p17`)
//! and the device a port sits on, as cabling plans and the floor name them.

use super::elements::{NodeKind, PortId};
use super::fabric::Fabric;

/// Digits of every cable id: enough for [`MAX_LINKS`](super::MAX_LINKS) (8,388,608) links, so an id
/// has the same width in every design (`C0000042`).
pub const CABLE_ID_DIGITS: usize = 7;

/// The cabling.csv id of the network link at `index` (0-based, in link order): `C` and the 1-based
/// index zero-padded to [`CABLE_ID_DIGITS`] (`C0000042`), whatever the design's size. `count`,
/// the design's cables, is kept for callers and names no width any more.
pub fn cable_id(index: usize, count: usize) -> String {
    let _ = count;
    format!("C{:0CABLE_ID_DIGITS$}", index + 1)
}

/// The 0-based index of the cable a cabling.csv id names (`C0000042`, `C0042` or `c42` -> 41), if it is one
/// of `count` cables.
pub fn cable_index(id: &str, count: usize) -> Option<usize> {
    id.strip_prefix(['C', 'c'])
        .and_then(|d| d.parse::<usize>().ok())
        .filter(|&n| (1..=count).contains(&n))
        .map(|n| n - 1)
}

impl Fabric {
    /// Display name of a port as used in cabling plans: `hca3` on a NIC, `p17` on a switch.
    pub fn port_label(&self, p: PortId) -> String {
        let mut out = String::new();
        self.write_port_label(p, &mut out);
        out
    }

    /// Appends [`Fabric::port_label`] to `out` without allocating a string of its own.
    pub fn write_port_label(&self, p: PortId, out: &mut String) {
        let port = self.port(p);
        let node = self.node(port.node);
        let number = |out: &mut String| {
            out.push('p');
            push_u64(out, u64::from(port.number));
        };
        match node.kind {
            NodeKind::Nic { .. } | NodeKind::StorageNic => {
                let local = node.name.rsplit('/').next().unwrap_or(&node.name);
                out.push_str(local);
                // A NIC's last port is its PCIe attachment; the ones before it face the network.
                if node.num_ports > 2 {
                    out.push('/');
                    number(out);
                }
            }
            // A server's endpoint is named for its port (`stor1`, `bmc`), as is a device's port
            // that another network's file also names (`su1-leaf1/mgmt`, `oob-switch01/p49`):
            // `device/port`. Other devices' ports go by number.
            NodeKind::Endpoint
                if node.num_ports == 1 && (node.server.is_some() || node.name.contains('/')) =>
            {
                out.push_str(node.name.rsplit('/').next().unwrap_or(&node.name));
            }
            _ => number(out),
        }
    }

    /// The device a port sits on, as named on the floor: the server for NIC ports, else the node.
    pub fn port_device(&self, p: PortId) -> &str {
        let node = self.port_node(p);
        match node.server {
            Some(s)
                if matches!(
                    node.kind,
                    NodeKind::Nic { .. } | NodeKind::StorageNic | NodeKind::Endpoint
                ) =>
            {
                &self.servers[s as usize].name
            }
            // A device's named port (`su1-leaf1/mgmt`): the device is what comes before it.
            None if node.kind == NodeKind::Endpoint && node.num_ports == 1 => node
                .name
                .rsplit_once('/')
                .map_or(node.name.as_str(), |(device, _)| device),
            _ => &node.name,
        }
    }
}

/// Appends the decimal digits of `n` to `out` (no allocation, unlike `to_string`).
pub fn push_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}
