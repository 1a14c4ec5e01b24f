//! The records of the arena: node, port and link ids, what a node is ([`NodeKind`], [`Tier`]),
//! a port's state, what a link joins and its medium, transceivers and servers.

use railyard_catalog::{CableKind, FibreKind};
use serde::{Deserialize, Serialize};

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
    /// First port in [`Fabric::ports`](super::Fabric::ports); a node's ports are contiguous.
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
    /// Transceivers at both ends (listed per cage in [`Fabric::modules`](super::Fabric::modules)) and a fibre patch cord.
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

/// What [`Fabric::add_node`](super::Fabric::add_node) needs besides ports.
pub(crate) struct NodeSpec {
    pub kind: NodeKind,
    pub name: String,
    pub model: std::sync::Arc<str>,
    pub server: Option<u32>,
    pub plane: u32,
}
