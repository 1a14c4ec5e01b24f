//! The arena itself: [`Fabric`] with its [`FabricMeta`], how builders add nodes and links to it,
//! how callers look them up, and the limits that keep its 32-bit ids far from overflow.

use super::elements::{
    Link, LinkId, LinkKind, Medium, Module, Node, NodeId, NodeKind, NodeSpec, Port, PortId,
    PortState, Server, Tier, Unused,
};
use crate::shape::Shape;
use railyard_catalog::Tech;
use serde::{Deserialize, Serialize};

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

    /// The network links cabling.csv ids name ([`cable_id`](super::cable_id)), in id order: link `C0000001` first.
    pub fn cables(&self) -> Vec<LinkId> {
        self.network_links().map(|(l, _)| l).collect()
    }
}
