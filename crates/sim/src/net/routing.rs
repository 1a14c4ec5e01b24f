//! Routing policies behind one trait, as quinn puts congestion controllers behind
//! `congestion::Controller`: the network builder asks the policy, and knows none of them.
//!
//! A policy answers two questions for a connection: into how many equal sub-flows is it split (queue
//! pairs, or paths sprayed over), and which port does each sub-flow take at a switch offering
//! several equal-cost ports ([`Routing::pick_port`]): up-ports on the way up, the links between
//! the two switches of a two-switch design, and on the way down the links to different lower
//! switches that all lead to the destination, where a tree has several (parallel links to one
//! switch follow the up-port taken instead; see `fabric_net`).
//!
//! - [`Ecmp`]: per-flow hashing. Each queue pair of a connection is hashed on its own, as
//!   NCCL_IB_QPS_PER_CONNECTION opens several QPs per connection that switches hash independently
//!   (by UDP source port on RoCEv2). Collisions are the point: two big flows on one up-link share it.
//! - [`DModK`]: deterministic fat-tree routing. The up-port is the destination index modulo the
//!   number of up-ports, as OpenSM's ftree routing engine and SimGrid's fat-tree route: on a
//!   non-blocking tree a shift permutation then never collides.
//! - [`Adaptive`]: a flow spread evenly over the up-ports of its first switch (one sub-flow per
//!   up-port; on a two-switch design, per link to the other switch), each sub-flow routed above
//!   it as D-mod-K routes a shifted destination: the fluid
//!   limit of per-packet adaptive routing, within the flow count of one sub-flow per first
//!   up-port; a flow finishes when its last sub-flow does. Around a failed link it spreads over
//!   the ports that still lead on ([`Routing::sprays`]).
//!
//! A routing table imported from a subnet manager (an OpenSM LFT dump: switch and destination LID to
//! out-port) is not a policy: it gives whole routes, and plugs in one level up, as a
//! `fabric_net::FabricRouting` (`railyard_ib::lft::OpenSmRouting`).

/// A connection to route: hosts by index, and which connection between them this is (several
/// connections between one pair hash differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    pub src: u32,
    pub dst: u32,
    pub index: u32,
}

/// A routing policy. Implementations must be deterministic: the same arguments give the same answer.
pub trait Routing: Sync {
    /// Which policy this is: what the network builder may assume of its routes (ECMP's hash
    /// follows no structure; D-mod-K and adaptive routing follow the tree's).
    fn kind(&self) -> RoutingKind;

    /// Short name for reports ("ecmp", "dmodk", "adaptive"): the kind's run-key name.
    fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// How many equal sub-flows carry `conn` when its first switch has `up_ports` equal-cost
    /// up-ports (the links to the other switch on a two-switch design). At least 1.
    fn sub_flows(&self, conn: &Connection, up_ports: u32) -> u32;

    /// The port, in `0..ports`, that sub-flow `sub_flow` of `conn` takes at switch `switch` among
    /// `ports` equal-cost ones (up-ports, lateral links, or down-links to different switches).
    fn pick_port(&self, conn: &Connection, sub_flow: u32, switch: u32, ports: u32) -> u32;

    /// Whether the policy spreads traffic over whatever ports lead on: around a failed link, a
    /// connection's sub-flows go over the first switch's up-ports that still reach the
    /// destination (one each), and a sub-flow that meets a dead or useless port further on is
    /// split evenly over the live ones, as adaptive routing sprays packets over its live ports.
    /// A policy that does not (D-mod-K, ECMP: one path per sub-flow) moves a dead port's share to
    /// one live port, picked by the source. Default: no.
    fn sprays(&self) -> bool {
        false
    }
}

/// Which policy, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoutingKind {
    Ecmp,
    DModK,
    Adaptive,
}

impl RoutingKind {
    /// The run key's names (`railyard_spec::run`), in this enum's order.
    pub const NAMES: [&'static str; 3] = railyard_spec::run::ROUTING_NAMES;

    pub fn parse(name: &str) -> Option<RoutingKind> {
        match name {
            "ecmp" => Some(RoutingKind::Ecmp),
            "dmodk" => Some(RoutingKind::DModK),
            "adaptive" => Some(RoutingKind::Adaptive),
            _ => None,
        }
    }

    /// The policy's name, as [`Routing::name`] reports it and [`RoutingKind::parse`] reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            RoutingKind::Ecmp => "ecmp",
            RoutingKind::DModK => "dmodk",
            RoutingKind::Adaptive => "adaptive",
        }
    }
}

/// The most queue pairs NCCL opens per connection (`NCCL_IB_MAX_QPS` in NCCL's
/// src/transport/net_ib.cc), the ceiling of NCCL_IB_QPS_PER_CONNECTION.
pub const MAX_QPS_PER_CONNECTION: u32 = railyard_spec::run::MAX_QPS_PER_CONNECTION;

/// Knobs a policy may use; the others ignore them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoutingConfig {
    /// Seed of the ECMP hash (switches' hash seeds).
    pub seed: u64,
    /// Queue pairs per connection, each hashed independently (NCCL_IB_QPS_PER_CONNECTION).
    pub qps_per_connection: u32,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            seed: 0,
            qps_per_connection: 1,
        }
    }
}

/// Builds the policy `kind` names.
pub fn build(kind: RoutingKind, config: RoutingConfig) -> Box<dyn Routing> {
    match kind {
        RoutingKind::Ecmp => Box::new(Ecmp {
            seed: config.seed,
            qps_per_connection: config.qps_per_connection.max(1),
        }),
        RoutingKind::DModK => Box::new(DModK),
        RoutingKind::Adaptive => Box::new(Adaptive),
    }
}

/// Per-flow ECMP: a seeded hash of (source, destination, connection, queue pair, switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ecmp {
    pub seed: u64,
    pub qps_per_connection: u32,
}

impl Routing for Ecmp {
    fn kind(&self) -> RoutingKind {
        RoutingKind::Ecmp
    }

    fn sub_flows(&self, _conn: &Connection, _up_ports: u32) -> u32 {
        self.qps_per_connection.max(1)
    }

    fn pick_port(&self, conn: &Connection, sub_flow: u32, switch: u32, ports: u32) -> u32 {
        let h = hash(
            self.seed,
            &[
                u64::from(conn.src),
                u64::from(conn.dst),
                u64::from(conn.index),
                u64::from(sub_flow),
                u64::from(switch),
            ],
        );
        // Multiply-shift range reduction (Lemire 2019): h * n / 2^64 is in 0..n.
        ((u128::from(h) * u128::from(ports)) >> 64) as u32
    }
}

/// D-mod-K: up-port = destination index mod up-ports (OpenSM ftree; SimGrid FatTreeZone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DModK;

impl Routing for DModK {
    fn kind(&self) -> RoutingKind {
        RoutingKind::DModK
    }

    fn sub_flows(&self, _conn: &Connection, _up_ports: u32) -> u32 {
        1
    }

    fn pick_port(&self, conn: &Connection, _sub_flow: u32, _switch: u32, ports: u32) -> u32 {
        conn.dst % ports.max(1)
    }
}

/// Adaptive routing in the fluid limit: one equal sub-flow per up-port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adaptive;

impl Routing for Adaptive {
    fn kind(&self) -> RoutingKind {
        RoutingKind::Adaptive
    }

    fn sub_flows(&self, _conn: &Connection, up_ports: u32) -> u32 {
        up_ports.max(1)
    }

    fn sprays(&self) -> bool {
        true
    }

    /// Sub-flow `s` takes D-mod-K's port shifted by `s`: at the first switch the sub-flows
    /// cover every up-port once; above it each sub-flow is D-mod-K's route of a shifted
    /// destination, so sub-flows of different destinations spread over a tier's up-ports as
    /// D-mod-K's do instead of all sub-flow `s` meeting on port `s` of every switch.
    fn pick_port(&self, conn: &Connection, sub_flow: u32, _switch: u32, ports: u32) -> u32 {
        conn.dst.wrapping_add(sub_flow) % ports.max(1)
    }
}

/// One step of SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): advances `state` and returns a well-mixed 64-bit value. Used as the seeded hash
/// and as the test and traffic generators' RNG; small, fast and the same everywhere.
pub fn mix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Seeded hash of a few words: each word is folded into a SplitMix64 state.
fn hash(seed: u64, words: &[u64]) -> u64 {
    let mut state = seed;
    let mut h = mix64(&mut state);
    for &w in words {
        state ^= w ^ h;
        h = mix64(&mut state);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(src: u32, dst: u32) -> Connection {
        Connection { src, dst, index: 0 }
    }

    #[test]
    fn dmodk_takes_destination_mod_ports() {
        let r = build(RoutingKind::DModK, RoutingConfig::default());
        assert_eq!(r.sub_flows(&conn(0, 13), 8), 1);
        assert_eq!(r.pick_port(&conn(0, 13), 0, 0, 8), 5);
        assert_eq!(r.pick_port(&conn(7, 16), 0, 3, 8), 0);
    }

    #[test]
    fn adaptive_uses_every_port_once() {
        let r = build(RoutingKind::Adaptive, RoutingConfig::default());
        assert_eq!(r.sub_flows(&conn(0, 1), 4), 4);
        assert_eq!(r.sub_flows(&conn(0, 1), 1), 1);
        // D-mod-K's port (1 mod 4) shifted by the sub-flow: every port once.
        let ports: Vec<u32> = (0..4).map(|s| r.pick_port(&conn(0, 1), s, 0, 4)).collect();
        assert_eq!(ports, [1, 2, 3, 0]);
    }

    #[test]
    fn ecmp_is_seeded_deterministic_and_spread() {
        let cfg = RoutingConfig {
            seed: 42,
            qps_per_connection: 4,
        };
        let a = build(RoutingKind::Ecmp, cfg);
        let b = build(RoutingKind::Ecmp, cfg);
        let other = build(RoutingKind::Ecmp, RoutingConfig { seed: 43, ..cfg });
        assert_eq!(a.sub_flows(&conn(1, 2), 16), 4);
        let mut counts = [0u32; 16];
        let mut differs = 0;
        for src in 0..64 {
            for qp in 0..4 {
                let c = conn(src, 100 + src);
                let p = a.pick_port(&c, qp, 0, 16);
                assert_eq!(p, b.pick_port(&c, qp, 0, 16));
                differs += u32::from(p != other.pick_port(&c, qp, 0, 16));
                counts[p as usize] += 1;
            }
        }
        // 256 draws over 16 ports: every port used, none wildly over (mean 16).
        assert!(counts.iter().all(|&c| (1..=40).contains(&c)), "{counts:?}");
        assert!(differs > 128, "seed barely matters: {differs}");
    }

    #[test]
    fn routing_names_parse_back() {
        for name in RoutingKind::NAMES {
            let kind = RoutingKind::parse(name).unwrap();
            assert_eq!(build(kind, RoutingConfig::default()).name(), name);
            assert_eq!(kind.as_str(), name);
        }
        assert_eq!(RoutingKind::parse("minimal"), None);
        // The catalog's default routings name these policies.
        assert_eq!(railyard_catalog::ROUTING_POLICIES, RoutingKind::NAMES);
    }
}
