//! Link rates after protocol overhead, computed from the packet format rather than per-speed
//! constants, so any link speed gets its payload rate the same way.
//!
//! For now this covers packet headers and trailers at a given MTU. Line encoding (64b/66b,
//! 256b/257b with FEC) is not subtracted here: `link_gbps` is the data rate the standard quotes
//! (100 for EDR, 400 for NDR), which already excludes encoding.

/// How a protocol wraps payload into packets: payload bytes per full packet and the other bytes each
/// packet puts on the wire (headers, trailers, preamble and gaps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketFormat {
    pub name: &'static str,
    pub payload: u32,
    pub overhead: u32,
}

/// InfiniBand reliable-connection data packet at the 4096-byte MTU: LRH 8 + BTH 12 + payload +
/// ICRC 4 + VCRC 2 = 4122 bytes on the wire (InfiniBand Trade Association, InfiniBand Architecture
/// Specification Vol. 1, chapter 5 "Data packet format"; no GRH inside one subnet, no extended
/// transport header on RDMA WRITE middle/last packets).
pub const INFINIBAND: PacketFormat = PacketFormat {
    name: "InfiniBand",
    payload: 4096,
    overhead: 8 + 12 + 4 + 2,
};

/// RoCEv2 at a 4096-byte RDMA MTU: preamble and SFD 8 + Ethernet header 14 + IPv4 20 + UDP 8 +
/// BTH 12 + payload + ICRC 4 + FCS 4 + inter-frame gap 12 = 4178 bytes of wire time (IBTA Supplement
/// to Vol. 1, Annex A17 "RoCEv2"; IEEE 802.3 clause 3 and 4 for the Ethernet framing and minimum
/// inter-packet gap; RFC 791 and RFC 768 for the IPv4 and UDP headers).
pub const ROCE_V2: PacketFormat = PacketFormat {
    name: "RoCEv2",
    payload: 4096,
    overhead: 8 + 14 + 20 + 8 + 12 + 4 + 4 + 12,
};

impl PacketFormat {
    /// Fraction of the wire carrying payload: payload / (payload + overhead).
    pub fn efficiency(&self) -> f64 {
        f64::from(self.payload) / f64::from(self.payload + self.overhead)
    }

    /// Payload bytes per second on a link of `link_gbps` gigabits per second, for transfers large
    /// enough that every packet is full. 100 Gb/s InfiniBand: 12.5e9 x 4096 / 4122 = 12.42 GB/s.
    pub fn payload_rate(&self, link_gbps: f64) -> f64 {
        // Multiply before dividing so exact inputs stay as exact as f64 allows.
        link_gbps * 1e9 * f64::from(self.payload) / (8.0 * f64::from(self.payload + self.overhead))
    }
}

/// Bytes per second of a link of `link_gbps` gigabits per second with no overhead at all (the
/// "ideal link" other flow-level simulators assume).
pub fn raw_rate(link_gbps: f64) -> f64 {
    link_gbps * 1e9 / 8.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overheads_add_up() {
        assert_eq!(INFINIBAND.payload + INFINIBAND.overhead, 4122);
        assert_eq!(ROCE_V2.payload + ROCE_V2.overhead, 4178);
        assert_eq!(raw_rate(100.0), 12.5e9);
        let ib = INFINIBAND.payload_rate(100.0);
        assert!((ib - 12.5e9 * 4096.0 / 4122.0).abs() < 1.0);
        // One 100G link near 12 GB/s, one 400G near 48-49 GB/s (issue 3).
        assert!((12.0e9..12.5e9).contains(&ib));
        assert!((48.0e9..50.0e9).contains(&INFINIBAND.payload_rate(400.0)));
        assert!((48.0e9..49.5e9).contains(&ROCE_V2.payload_rate(400.0)));
    }
}
