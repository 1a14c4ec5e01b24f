//! The fabric graph: an arena of typed nodes, their ports, and the links between ports.
//!
//! Ids are indexes into the arena vectors, so a fabric of 100,000 GPUs is a handful of flat vectors.
//! Architecture invariant (checked by [`Fabric::check`], asserted by property tests): every port is used by
//! at most one link, both ends of a link run at the link's speed, and every NIC port is either cabled or
//! explicitly unused with a reason.

use crate::shape::Shape;
use railyard_catalog::{CableKind, FibreKind, Tech};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NodeId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PortId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LinkId(pub u32);

/// A switch's tier in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Leaf,
    Spine,
    Core,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Leaf, Tier::Spine, Tier::Core];
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Leaf => "leaf",
            Tier::Spine => "spine",
            Tier::Core => "core",
        }
    }
}

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum NodeKind {
    Gpu,
    PcieSwitch,
    /// CPU root complex and host memory.
    Cpu,
    /// The server's NVLink domain (NVSwitch or direct NVLink mesh).
    NvlinkDomain,
    /// A compute NIC (HCA): `rail` is its index in the server, 0-based.
    Nic {
        rail: u32,
    },
    /// A storage NIC.
    StorageNic,
    /// A device port on a storage or management network: a server's storage or in-band port, a BMC, a
    /// storage system, a management server, a PDU, another network's switch.
    Endpoint,
    /// A fabric switch.
    Switch {
        tier: Tier,
    },
}

/// A device in the fabric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub kind: NodeKind,
    /// Unique name as people use it on the floor: `su1-srv07/hca3`, `su1-leaf3`, `spine05`.
    pub name: String,
    /// Catalog id of the model (GPU, NIC or switch); empty for PCIe switches, CPUs and NVLink domains.
    pub model: std::sync::Arc<str>,
    /// The server this node sits in, if any.
    pub server: Option<u32>,
    /// Fabric plane (0-based) for switches; 0 elsewhere.
    pub plane: u32,
    /// First port in [`Fabric::ports`]; a node's ports are contiguous.
    pub first_port: u32,
    pub num_ports: u32,
}

impl Node {
    pub fn ports(&self) -> impl Iterator<Item = PortId> {
        (self.first_port..self.first_port + self.num_ports).map(PortId)
    }

    pub fn is_switch(&self) -> bool {
        matches!(self.kind, NodeKind::Switch { .. })
    }

    pub fn tier(&self) -> Option<Tier> {
        match self.kind {
            NodeKind::Switch { tier } => Some(tier),
            _ => None,
        }
    }
}

/// Why a port has no link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unused {
    /// A switch port left free (spare capacity, partly filled unit).
    Spare,
    /// A NIC port beyond the fabric's planes.
    ExtraNicPort,
    /// A storage NIC whose storage fabric is not part of this plan.
    StorageNotPlanned,
    /// A port discovery does not show: an imported fabric's uncabled HCA ports and PCIe attachments.
    NotDiscovered,
}

/// The state of one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PortState {
    Linked(LinkId),
    Unused(Unused),
}

/// One port of a node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Port {
    pub node: NodeId,
    /// 1-based port number on its node, as on the faceplate and in ibnetdiscover.
    pub number: u32,
    /// 1-based cage (OSFP/QSFP) holding the port; ports of one cage share a transceiver.
    pub cage: u32,
    /// Speed the port runs at, Gb/s (network ports) or its internal bus rate.
    pub gbps: f64,
    pub lanes: u32,
    pub state: PortState,
}

impl Port {
    pub fn link(&self) -> Option<LinkId> {
        match self.state {
            PortState::Linked(l) => Some(l),
            PortState::Unused(_) => None,
        }
    }
}

/// What a link joins: internal server buses, or a tier of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkKind {
    /// PCIe between GPU / NIC and PCIe switch or root complex.
    Pcie,
    /// PCIe switch up to the CPU root complex.
    PcieUplink,
    /// GPU to its NVLink domain.
    Nvlink,
    /// NIC port to leaf switch.
    ServerLeaf,
    LeafSpine,
    SpineCore,
    /// Between switches of one tier (two-switch design).
    InterSwitch,
}

impl LinkKind {
    pub fn is_network(self) -> bool {
        matches!(
            self,
            LinkKind::ServerLeaf
                | LinkKind::LeafSpine
                | LinkKind::SpineCore
                | LinkKind::InterSwitch
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Pcie => "pcie",
            LinkKind::PcieUplink => "pcie-uplink",
            LinkKind::Nvlink => "nvlink",
            LinkKind::ServerLeaf => "server-leaf",
            LinkKind::LeafSpine => "leaf-spine",
            LinkKind::SpineCore => "spine-core",
            LinkKind::InterSwitch => "inter-switch",
        }
    }
}

/// The physical medium of a link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum Medium {
    /// A PCIe bus of a generation.
    Pcie {
        gen: u32,
    },
    Nvlink,
    /// A direct cable (DAC, ACC, AOC): catalog id and stocked length.
    Cable {
        kind: CableKind,
        part: std::sync::Arc<str>,
        length_m: f64,
    },
    /// Transceivers at both ends (listed per cage in [`Fabric::modules`]) and a fibre patch cord.
    Fibre {
        fibre: FibreKind,
        part: std::sync::Arc<str>,
        length_m: f64,
    },
    /// A network link whose cable is not chosen yet (during construction).
    Unplanned,
    /// A cable found by discovery, whose kind and length discovery cannot tell.
    Discovered,
}

impl Medium {
    /// Stocked cable length, m, for cabled links.
    pub fn length_m(&self) -> Option<f64> {
        match self {
            Medium::Cable { length_m, .. } | Medium::Fibre { length_m, .. } => Some(*length_m),
            _ => None,
        }
    }

    /// The catalog id of the cable or fibre.
    pub fn part(&self) -> Option<&str> {
        match self {
            Medium::Cable { part, .. } | Medium::Fibre { part, .. } => Some(part),
            _ => None,
        }
    }

    /// Short type name for tables: `dac`, `acc`, `aoc`, `optics-mmf`, `optics-smf`, `pcie`, `nvlink`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Medium::Pcie { .. } => "pcie",
            Medium::Nvlink => "nvlink",
            Medium::Cable { kind, .. } => kind.as_str(),
            Medium::Fibre {
                fibre: FibreKind::Mmf,
                ..
            } => "optics-mmf",
            Medium::Fibre {
                fibre: FibreKind::Smf,
                ..
            } => "optics-smf",
            Medium::Unplanned => "unplanned",
            Medium::Discovered => "discovered",
        }
    }
}

/// A link between two ports. For network links, `a` is the end nearer the servers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub a: PortId,
    pub b: PortId,
    pub kind: LinkKind,
    /// Data rate per direction, Gb/s.
    pub gbps: f64,
    pub lanes: u32,
    pub medium: Medium,
    /// Run length before rounding up to a stocked cable, m (0 inside a server).
    pub run_m: f64,
}

/// A pluggable transceiver in a cage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Module {
    pub node: NodeId,
    pub cage: u32,
    pub part: std::sync::Arc<str>,
}

/// A server: a group of nodes with a name and a place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Server {
    pub name: String,
    /// Scalable unit (0-based) for unit-based topologies.
    pub su: Option<u32>,
    pub first_node: u32,
    pub num_nodes: u32,
}

/// Facts about how the fabric was built, for summaries and later commands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FabricMeta {
    pub name: String,
    pub tech: Tech,
    pub topology: String,
    /// Switch catalog id and the port mode used.
    pub switch_model: String,
    pub port_mode: String,
    pub nic_model: String,
    pub gpu_model: String,
    /// Network tiers: 1 (leaves only), 2 or 3.
    pub tiers: u32,
    pub planes: u32,
    /// Servers per scalable unit, for unit-based topologies.
    pub su_size: Option<u32>,
    pub scalable_units: Option<u32>,
    pub gpudirect: bool,
    pub gpus_per_server: u32,
    pub compute_nics_per_server: u32,
    /// The tree's shape as planned (absent for imported fabrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    /// The leaf down:up ratio asked for, an upper bound (absent for imported fabrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oversubscription_requested: Option<f64>,
    /// The site's GUIDs (`0x` and 16 hex digits) of a fabric imported from discovery, by
    /// [`Fabric::guid_key`] (absent for plans, whose GUIDs are railyard's own): routes through the
    /// site's OpenSM tables, which name switches and HCA ports by GUID, are traced over it,
    /// furnished with servers or not.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub guids: std::collections::BTreeMap<String, String>,
}

/// The whole fabric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fabric {
    pub meta: FabricMeta,
    pub servers: Vec<Server>,
    pub nodes: Vec<Node>,
    pub ports: Vec<Port>,
    pub links: Vec<Link>,
    pub modules: Vec<Module>,
}

/// The most devices (servers' GPUs, NICs, PCIe switches and CPUs, and network switches) a fabric may
/// have. The largest design railyard is measured on (crates/plan/benches/xdr-16k.toml: 16,384 XDR
/// servers, 131,072 GPUs) has 0.37 million devices, 1.8 million ports and 0.86 million links and plans
/// in about 210 MB; the limits leave more than four times that room (about 1 GB at the limit) and keep
/// the arena's 32-bit ids far from overflow.
pub const MAX_NODES: u64 = 1 << 21;
/// The most ports a fabric may have (see [`MAX_NODES`]).
pub const MAX_PORTS: u64 = 1 << 23;
/// The most links (network cables and links inside servers) a fabric may have (see [`MAX_NODES`]).
pub const MAX_LINKS: u64 = 1 << 23;

/// Digits of every cable id: enough for [`MAX_LINKS`] (8,388,608) links, so an id
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
    pub(crate) fn new(meta: FabricMeta) -> Fabric {
        Fabric {
            meta,
            servers: Vec::new(),
            nodes: Vec::new(),
            ports: Vec::new(),
            links: Vec::new(),
            modules: Vec::new(),
        }
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    /// What names a node in [`FabricMeta::guids`]: a switch's name, or for an HCA its server's
    /// name and `hcaN` (N its rail plus one), which stay the same when a discovered fabric is
    /// furnished with servers; `None` for other nodes.
    pub fn guid_key(&self, id: NodeId) -> Option<String> {
        let n = self.node(id);
        match n.kind {
            NodeKind::Switch { .. } => Some(n.name.clone()),
            NodeKind::Nic { rail } => n
                .server
                .and_then(|s| self.servers.get(s as usize))
                .map(|s| format!("{}/hca{}", s.name, rail + 1)),
            _ => None,
        }
    }

    /// The site GUID of a node, when [`FabricMeta::guids`] has one.
    pub fn site_guid(&self, id: NodeId) -> Option<u64> {
        if self.meta.guids.is_empty() {
            return None;
        }
        let g = self.meta.guids.get(&self.guid_key(id)?)?;
        u64::from_str_radix(g.strip_prefix("0x").unwrap_or(g), 16).ok()
    }

    pub fn port(&self, id: PortId) -> &Port {
        &self.ports[id.0 as usize]
    }

    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.0 as usize]
    }

    /// The node a port belongs to.
    pub fn port_node(&self, id: PortId) -> &Node {
        self.node(self.port(id).node)
    }

    /// Adds a node with `ports` ports of the given speed and lanes, `per_cage` ports to a cage.
    pub(crate) fn add_node(
        &mut self,
        node: NodeSpec,
        ports: u32,
        gbps: f64,
        lanes: u32,
        per_cage: u32,
    ) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        let first_port = self.ports.len() as u32;
        let per_cage = per_cage.max(1);
        self.ports.extend((0..ports).map(|i| Port {
            node: id,
            number: i + 1,
            cage: i / per_cage + 1,
            gbps,
            lanes,
            state: PortState::Unused(Unused::Spare),
        }));
        self.nodes.push(Node {
            kind: node.kind,
            name: node.name,
            model: node.model,
            server: node.server,
            plane: node.plane,
            first_port,
            num_ports: ports,
        });
        id
    }

    /// The `n`th port (0-based) of a node.
    pub fn nth_port(&self, node: NodeId, n: u32) -> PortId {
        let nd = self.node(node);
        debug_assert!(n < nd.num_ports, "{} has no port {}", nd.name, n + 1);
        PortId(nd.first_port + n)
    }

    /// Joins two free ports. Both ports take the link's speed and lanes.
    pub(crate) fn connect(
        &mut self,
        a: PortId,
        b: PortId,
        kind: LinkKind,
        gbps: f64,
        lanes: u32,
        medium: Medium,
    ) -> LinkId {
        let id = LinkId(self.links.len() as u32);
        for p in [a, b] {
            let port = &mut self.ports[p.0 as usize];
            debug_assert!(port.link().is_none(), "port used twice");
            port.state = PortState::Linked(id);
            port.gbps = gbps;
            port.lanes = lanes;
        }
        self.links.push(Link {
            a,
            b,
            kind,
            gbps,
            lanes,
            medium,
            run_m: 0.0,
        });
        id
    }

    pub(crate) fn mark_unused(&mut self, p: PortId, why: Unused) {
        self.ports[p.0 as usize].state = PortState::Unused(why);
    }

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

    /// Switches of a tier.
    pub fn switches(&self, tier: Tier) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.tier() == Some(tier))
            .map(|(i, n)| (NodeId(i as u32), n))
    }

    /// Network links (cables), in id order.
    pub fn network_links(&self) -> impl Iterator<Item = (LinkId, &Link)> {
        self.links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.kind.is_network())
            .map(|(i, l)| (LinkId(i as u32), l))
    }

    /// The network links cabling.csv ids name ([`cable_id`]), in id order: link `C0000001` first.
    pub fn cables(&self) -> Vec<LinkId> {
        self.network_links().map(|(l, _)| l).collect()
    }

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

/// What [`Fabric::add_node`] needs besides ports.
pub(crate) struct NodeSpec {
    pub kind: NodeKind,
    pub name: String,
    pub model: std::sync::Arc<str>,
    pub server: Option<u32>,
    pub plane: u32,
}

/// Disjoint sets over indexes (path halving; the smaller root wins, so roots are deterministic).
#[derive(Debug, Clone)]
pub struct UnionFind(Vec<u32>);

impl UnionFind {
    /// `n` singletons.
    pub fn new(n: usize) -> UnionFind {
        UnionFind((0..n as u32).collect())
    }

    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.0[x as usize] != x {
            let parent = self.0[self.0[x as usize] as usize];
            self.0[x as usize] = parent;
            x = parent;
        }
        x
    }

    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            self.0[hi as usize] = lo;
        }
    }
}
