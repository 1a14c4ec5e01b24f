//! The records of `railyard-fabric/2` as serde reads and writes them: the format tag, node kind
//! codes, the template, link classes, the file's top-level object in and out.

use crate::graph::{
    FabricMeta, Link, LinkKind, Medium, Node, NodeKind, Port, PortId, Tier, Unused,
};
use serde::{Deserialize, Serialize};

/// The format tag of `fabric.json`; loaders refuse other formats.
pub const FABRIC_FORMAT: &str = "railyard-fabric/2";

/// `[kind, local name, model, plane, ports]`.
pub(super) type TemplateNode = (String, String, u32, u32, u32);

/// `[node, number, cage, gbps, lanes, unused]`.
pub(super) type TemplatePort = (u32, u32, u32, f64, u32, Unused);

/// `[kind, name, model, server, plane, ports, gbps, lanes, ports per cage]`.
pub(super) type ExplicitNode = (String, String, u32, Option<u32>, u32, u32, f64, u32, u32);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct LinkClass {
    pub(super) kind: LinkKind,
    pub(super) gbps: f64,
    pub(super) lanes: u32,
    pub(super) medium: Medium,
    pub(super) run_m: f64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Template {
    pub(super) nodes: Vec<TemplateNode>,
    pub(super) ports: Vec<TemplatePort>,
    pub(super) links: Vec<(u32, u32, u32)>,
}

#[derive(Serialize)]
pub(super) struct FileOut<'a> {
    pub(super) format: &'static str,
    pub(super) meta: &'a FabricMeta,
    pub(super) strings: &'a [String],
    pub(super) classes: &'a [LinkClass],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) template: Option<&'a Template>,
    pub(super) servers: Vec<(&'a str, Option<u32>, u32, u32)>,
    pub(super) nodes: &'a [ExplicitNode],
    pub(super) ports: u32,
    pub(super) links: Vec<(i64, i64, u32)>,
    pub(super) modules: Vec<(i64, u32, u32)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) node_exceptions: Vec<(u32, &'a Node)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) port_exceptions: Vec<(u32, &'a Port)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) link_exceptions: Vec<(u32, &'a Link)>,
}

#[derive(Deserialize)]
pub(super) struct FileIn {
    pub(super) meta: FabricMeta,
    pub(super) strings: Vec<String>,
    pub(super) classes: Vec<LinkClass>,
    #[serde(default)]
    pub(super) template: Option<Template>,
    pub(super) servers: Vec<(String, Option<u32>, u32, u32)>,
    pub(super) nodes: Vec<ExplicitNode>,
    pub(super) ports: u32,
    pub(super) links: Vec<(i64, i64, u32)>,
    pub(super) modules: Vec<(i64, u32, u32)>,
    #[serde(default)]
    pub(super) node_exceptions: Vec<(u32, Node)>,
    #[serde(default)]
    pub(super) port_exceptions: Vec<(u32, Port)>,
    #[serde(default)]
    pub(super) link_exceptions: Vec<(u32, Link)>,
}

/// Only the format tag, read first so that other formats get a clear message.
#[derive(Deserialize)]
pub(super) struct Tag {
    pub(super) format: String,
}

pub(super) fn kind_code(kind: NodeKind) -> String {
    match kind {
        NodeKind::Gpu => "gpu".to_string(),
        NodeKind::PcieSwitch => "pcie-switch".to_string(),
        NodeKind::Cpu => "cpu".to_string(),
        NodeKind::NvlinkDomain => "nvlink-domain".to_string(),
        NodeKind::Nic { rail } => format!("nic:{rail}"),
        NodeKind::StorageNic => "storage-nic".to_string(),
        NodeKind::Endpoint => "endpoint".to_string(),
        NodeKind::Switch { tier } => tier.as_str().to_string(),
    }
}

pub(super) fn parse_kind(code: &str) -> Result<NodeKind, String> {
    Ok(match code {
        "gpu" => NodeKind::Gpu,
        "pcie-switch" => NodeKind::PcieSwitch,
        "cpu" => NodeKind::Cpu,
        "nvlink-domain" => NodeKind::NvlinkDomain,
        "storage-nic" => NodeKind::StorageNic,
        "endpoint" => NodeKind::Endpoint,
        "leaf" => NodeKind::Switch { tier: Tier::Leaf },
        "spine" => NodeKind::Switch { tier: Tier::Spine },
        "core" => NodeKind::Switch { tier: Tier::Core },
        _ => match code.strip_prefix("nic:").map(str::parse) {
            Some(Ok(rail)) => NodeKind::Nic { rail },
            _ => return Err(format!("unknown node kind `{code}`")),
        },
    })
}

pub(super) fn link_of(a: PortId, b: PortId, c: &LinkClass) -> Link {
    Link {
        a,
        b,
        kind: c.kind,
        gbps: c.gbps,
        lanes: c.lanes,
        medium: c.medium.clone(),
        run_m: c.run_m,
    }
}
