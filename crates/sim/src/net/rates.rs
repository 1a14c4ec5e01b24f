//! Link rates after protocol overhead, computed from the packet format rather than per-speed
//! constants, so any link speed gets its payload rate the same way.
//!
//! For now this covers packet headers and trailers at a given MTU. Line encoding (64b/66b,
//! 256b/257b with FEC) is not subtracted here: `link_gbps` is the data rate the standard quotes
//! (100 for EDR, 400 for NDR), which already excludes encoding.

use crate::time::Time;

/// How a protocol wraps payload into packets: payload bytes per full packet and the other bytes each
/// packet puts on the wire (headers, trailers, preamble and gaps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketFormat {
    pub name: &'static str,
    pub payload: u32,
    pub overhead: u32,
    /// When a flow of this transport counts as complete, if not when its last byte arrives.
    pub completion: Option<Completion>,
    /// Links are lossless Ethernet with PFC and no congestion control: `sim flows` moves bytes as
    /// `net::pfc` says (FIFO egresses, per-ingress-port PAUSE and XON, pauses travelling upstream)
    /// instead of sharing links max-min.
    pub pfc: bool,
}

/// A transfer completed as the sender's verbs report it (`sim flows` of RoCE): an RDMA WRITE or
/// SEND on a reliable connection completes when the ACK covering its last packet reaches the sender
/// (InfiniBand Architecture Specification Vol. 1, 9.7 "Reliable service" and 10.8 "Work completion":
/// a send-queue work request of an RC QP completes on its acknowledgement; RoCEv2 keeps the IB
/// transport, Annex A17). On a path of `h` links that adds, after the last byte arrives:
/// - the ACK's way back: `h` hop latencies and `h` serialisations of the ACK packet, and
/// - with `store_and_forward` switches, one full packet's serialisation at each of the `h - 1`
///   switches, which a fluid flow (whose last byte leaves the sender at the link rate and arrives a
///   path latency later) does not see.
///
/// These are exactly the terms by which htsim's packet-level RoCE (Broadcom/csg-htsim
/// `htsim_roce`, `RoceSrc` finishes a flow on the ACK of its last packet; `FatTreeSwitch` queues
/// store and forward) exceeds a lone fluid flow: 2.0858 us in one leaf and 4.2547 us through a spine
/// at 400 Gb/s with 1 us hops (docs/validation/htsim/README.md, `lone-*` runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Bytes one ACK puts on the wire (headers, AETH, trailers, preamble and gap).
    pub ack_bytes: u32,
    /// Switches receive a whole packet before sending it on.
    pub store_and_forward: bool,
}

/// InfiniBand reliable-connection data packet at the 4096-byte MTU: LRH 8 + BTH 12 + payload +
/// ICRC 4 + VCRC 2 = 4122 bytes on the wire (InfiniBand Trade Association, InfiniBand Architecture
/// Specification Vol. 1, chapter 5 "Data packet format"; no GRH inside one subnet, no extended
/// transport header on RDMA WRITE middle/last packets).
pub const INFINIBAND: PacketFormat = PacketFormat {
    name: "InfiniBand",
    payload: 4096,
    overhead: 8 + 12 + 4 + 2,
    completion: None,
    pfc: false,
};

/// RoCEv2 at a 4096-byte RDMA MTU: preamble and SFD 8 + Ethernet header 14 + IPv4 20 + UDP 8 +
/// BTH 12 + payload + ICRC 4 + FCS 4 + inter-frame gap 12 = 4178 bytes of wire time (IBTA Supplement
/// to Vol. 1, Annex A17 "RoCEv2"; IEEE 802.3 clause 3 and 4 for the Ethernet framing and minimum
/// inter-packet gap; RFC 791 and RFC 768 for the IPv4 and UDP headers).
pub const ROCE_V2: PacketFormat = PacketFormat {
    name: "RoCEv2",
    payload: 4096,
    overhead: 8 + 14 + 20 + 8 + 12 + 4 + 4 + 12,
    completion: None,
    pfc: false,
};

/// RoCEv2 as `sim flows --transport roce` runs it: [`ROCE_V2`]'s framing, completed at the last
/// ACK through store-and-forward switches ([`Completion`]), on links shared as PFC shares them
/// (`net::pfc`). The ACK is preamble 8 + Ethernet 14 +
/// IPv4 20 + UDP 8 + BTH 12 + AETH 4 + ICRC 4 + FCS 4 + gap 12 = 86 bytes of wire time (IBTA Vol. 1
/// 9.3.2 and 9.4.1 for the BTH and the ACK extended transport header AETH; Annex A17 and the
/// references of [`ROCE_V2`] for the rest). Collectives keep [`ROCE_V2`]: their steps are
/// pipelined, and NCCL's own latency constants already hold the completion.
pub const ROCE_V2_COMPLETED: PacketFormat = PacketFormat {
    completion: Some(Completion {
        ack_bytes: 8 + 14 + 20 + 8 + 12 + 4 + 4 + 4 + 12,
        store_and_forward: true,
    }),
    pfc: true,
    ..ROCE_V2
};

impl PacketFormat {
    /// Fraction of the wire carrying payload: payload / (payload + overhead).
    pub fn efficiency(&self) -> f64 {
        f64::from(self.payload) / f64::from(self.payload + self.overhead)
    }

    /// Time from a flow's last byte leaving its sender, at the link rate, to the flow's
    /// completion, on a path of `hops` links of `link_gbps` with `hop_latency` each: the path
    /// latency, plus what [`Completion`] adds when the format has one. The one place `sim flows`
    /// prices completion.
    pub fn completion_latency(&self, hops: u64, hop_latency: Time, link_gbps: f64) -> Time {
        let path = hop_latency.saturating_mul(hops);
        let Some(c) = self.completion else {
            return path;
        };
        let ps_per_byte = 8e3 / link_gbps;
        let packet = f64::from(self.payload + self.overhead) * ps_per_byte;
        let forward = if c.store_and_forward {
            packet * hops.saturating_sub(1) as f64
        } else {
            0.0
        };
        let ack = f64::from(c.ack_bytes) * ps_per_byte * hops as f64;
        path.saturating_mul(2) + Time::from_ps((forward + ack).round() as u64)
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

    #[test]
    fn roce_completion_adds_the_ack_and_store_and_forward() {
        let hop = Time::from_us(1);
        // No completion model: the path latency alone.
        assert_eq!(
            INFINIBAND.completion_latency(4, hop, 400.0),
            Time::from_us(4)
        );
        assert_eq!(ROCE_V2.completion_latency(4, hop, 400.0), Time::from_us(4));
        // 400 Gb/s: 20 ps per byte; a 4178-byte packet is 83.56 ns, an 86-byte ACK 1.72 ns.
        let r = ROCE_V2_COMPLETED;
        assert_eq!(r.payload + r.overhead, 4178);
        assert_eq!(r.completion.unwrap().ack_bytes, 86);
        let two = 2 * 2_000_000 + 83_560 + 2 * 1_720;
        let four = 2 * 4_000_000 + 3 * 83_560 + 4 * 1_720;
        assert_eq!(r.completion_latency(2, hop, 400.0), Time::from_ps(two));
        assert_eq!(r.completion_latency(4, hop, 400.0), Time::from_ps(four));
        // htsim's lone-flow excess (README, 4160-byte packets, 64-byte ACKs): 2.0858 and 4.2547 us;
        // RoCEv2's real framing is a few ns longer.
        let excess = |h: u64| r.completion_latency(h, hop, 400.0).as_us_f64() - h as f64;
        assert!((excess(2) - 2.0858).abs() < 0.005, "{}", excess(2));
        assert!((excess(4) - 4.2547).abs() < 0.005, "{}", excess(4));
    }
}
