//! `fabric.json`: the whole [`Fabric`] graph in a compact, lossless form.
//!
//! # Format `railyard-fabric/2`
//!
//! A 131,072-GPU fabric has millions of ports but little variety: every server is built alike, a
//! node's ports are numbered and caged in order, and a port that carries a link runs at the link's
//! speed. So the file states the few things that vary and a loader *predicts* the rest; wherever the
//! prediction would be wrong the file carries the true record as an exception. Loading is therefore
//! exact for any fabric: `load_fabric_json(&fabric_json(&f)) == f`. The top-level object:
//!
//! - `format`: `"railyard-fabric/2"`; loaders refuse other formats.
//! - `meta`: [`crate::FabricMeta`], as in the summary.
//! - `strings`: interned catalog ids (node models, cable and transceiver parts); `strings[0]` is `""`.
//!   Other fields name a string by its index.
//! - `classes`: interned link attributes, `{kind, gbps, lanes, medium, run_m}` (the
//!   [`crate::Link`] fields other than its ports). Links name a class by index.
//! - `template` (absent when servers are not alike): one server's insides, ids relative to the server.
//!   - `nodes`: `[kind, local name, model, plane, ports]`; node `j` of server `i` is node `i * N + j`
//!     (`N` template nodes), named `<server name>/<local name>`, with `server = i`.
//!   - `ports`: `[node, number, cage, gbps, lanes, unused]`; port `k` of server `i` is port
//!     `i * P + k`. `unused` is the port's state when no link names it.
//!   - `links`: `[a, b, class]`; link `k` of server `i` is link `i * L + k`, joining ports
//!     `i * P + a` and `i * P + b`.
//! - `servers`: `[name, su, first node, nodes]` per server. The first `len(servers)` blocks of
//!   `N` nodes, `P` ports and `L` links are the template's, when there is one.
//! - `nodes`: the nodes after the servers' blocks (switches), each
//!   `[kind, name, model, server, plane, ports, gbps, lanes, ports per cage]`. Their ports follow in
//!   node order: port `i` (0-based) of a node has number `i + 1`, cage `i / (ports per cage) + 1`, the
//!   node's speed and lanes, and is a spare.
//! - `ports`: the number of ports.
//! - `links`: the links after the servers' blocks, each `[a, b, class]` where `a` and `b` are
//!   *differences* from the previous link's `a` and `b` (the first from 0).
//! - `modules`: transceivers, each `[node, cage, part]`, `node` a difference from the previous
//!   module's node (the first from 0).
//! - `node_exceptions`, `port_exceptions`, `link_exceptions` (absent when empty): `[index, record]`
//!   pairs, records as [`crate::Node`], [`crate::Port`] and
//!   [`crate::Link`] serialize, replacing the predicted record at that index.
//!
//! Kinds are `gpu`, `pcie-switch`, `cpu`, `nvlink-domain`, `nic:<rail>`, `storage-nic`, `leaf`,
//! `spine` and `core`. A port's state is predicted last: every port a link names is linked to the last
//! link naming it and runs at that link's speed and lanes; the other ports keep their predicted state.

use crate::graph::{
    Fabric, FabricMeta, Link, LinkId, LinkKind, Medium, Module, Node, NodeId, NodeKind, Port,
    PortId, PortState, Server, Tier, Unused,
};
use railyard_catalog::{CableKind, FibreKind};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The format tag of `fabric.json`; loaders refuse other formats.
pub const FABRIC_FORMAT: &str = "railyard-fabric/2";

/// `[kind, local name, model, plane, ports]`.
type TemplateNode = (String, String, u32, u32, u32);
/// `[node, number, cage, gbps, lanes, unused]`.
type TemplatePort = (u32, u32, u32, f64, u32, Unused);
/// `[kind, name, model, server, plane, ports, gbps, lanes, ports per cage]`.
type ExplicitNode = (String, String, u32, Option<u32>, u32, u32, f64, u32, u32);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct LinkClass {
    kind: LinkKind,
    gbps: f64,
    lanes: u32,
    medium: Medium,
    run_m: f64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Template {
    nodes: Vec<TemplateNode>,
    ports: Vec<TemplatePort>,
    links: Vec<(u32, u32, u32)>,
}

#[derive(Serialize)]
struct FileOut<'a> {
    format: &'static str,
    meta: &'a FabricMeta,
    strings: &'a [String],
    classes: &'a [LinkClass],
    #[serde(skip_serializing_if = "Option::is_none")]
    template: Option<&'a Template>,
    servers: Vec<(&'a str, Option<u32>, u32, u32)>,
    nodes: &'a [ExplicitNode],
    ports: u32,
    links: Vec<(i64, i64, u32)>,
    modules: Vec<(i64, u32, u32)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    node_exceptions: Vec<(u32, &'a Node)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    port_exceptions: Vec<(u32, &'a Port)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    link_exceptions: Vec<(u32, &'a Link)>,
}

#[derive(Deserialize)]
struct FileIn {
    meta: FabricMeta,
    strings: Vec<String>,
    classes: Vec<LinkClass>,
    #[serde(default)]
    template: Option<Template>,
    servers: Vec<(String, Option<u32>, u32, u32)>,
    nodes: Vec<ExplicitNode>,
    ports: u32,
    links: Vec<(i64, i64, u32)>,
    modules: Vec<(i64, u32, u32)>,
    #[serde(default)]
    node_exceptions: Vec<(u32, Node)>,
    #[serde(default)]
    port_exceptions: Vec<(u32, Port)>,
    #[serde(default)]
    link_exceptions: Vec<(u32, Link)>,
}

/// Only the format tag, read first so that other formats get a clear message.
#[derive(Deserialize)]
struct Tag {
    format: String,
}

fn kind_code(kind: NodeKind) -> String {
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

fn parse_kind(code: &str) -> Result<NodeKind, String> {
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

/// What the file says about the arena's shape, and the records predicted from it. The writer and the
/// loader predict with this same code, so whatever differs from the prediction is an exception.
struct Predictor<'a> {
    strings: &'a [String],
    classes: &'a [LinkClass],
    template: &'a Template,
    /// Servers laid out by the template (0 without one).
    templated: usize,
    explicit: &'a [ExplicitNode],
    /// Kind and first port (within its server) of each template node.
    template_kinds: Vec<Result<NodeKind, String>>,
    template_first_port: Vec<u64>,
    /// First port of each explicit node: the running sum after the templated ports.
    explicit_first_port: Vec<u64>,
    ports: usize,
}

/// A predicted node, its name still in parts (`prefix/local` or just `local`).
struct NodeView<'a> {
    kind: NodeKind,
    prefix: Option<&'a str>,
    local: &'a str,
    model: &'a str,
    server: Option<u32>,
    plane: u32,
    first_port: u64,
    num_ports: u32,
}

impl NodeView<'_> {
    fn matches(&self, n: &Node) -> bool {
        let name_ok = match self.prefix {
            Some(prefix) => {
                n.name
                    .strip_prefix(prefix)
                    .and_then(|rest| rest.strip_prefix('/'))
                    == Some(self.local)
            }
            None => n.name == self.local,
        };
        name_ok
            && n.kind == self.kind
            && &*n.model == self.model
            && n.server == self.server
            && n.plane == self.plane
            && u64::from(n.first_port) == self.first_port
            && n.num_ports == self.num_ports
    }

    fn to_node(&self) -> Result<Node, String> {
        let name = match self.prefix {
            Some(prefix) => {
                let mut name = String::with_capacity(prefix.len() + 1 + self.local.len());
                name.push_str(prefix);
                name.push('/');
                name.push_str(self.local);
                name
            }
            None => self.local.to_string(),
        };
        Ok(Node {
            kind: self.kind,
            name,
            model: self.model.into(),
            server: self.server,
            plane: self.plane,
            first_port: u32::try_from(self.first_port)
                .map_err(|_| "more ports than a fabric holds".to_string())?,
            num_ports: self.num_ports,
        })
    }
}

impl<'a> Predictor<'a> {
    fn new(
        strings: &'a [String],
        classes: &'a [LinkClass],
        template: &'a Template,
        templated: usize,
        explicit: &'a [ExplicitNode],
        ports: usize,
    ) -> Predictor<'a> {
        let mut next = 0u64;
        let template_first_port = template
            .nodes
            .iter()
            .map(|n| {
                let first = next;
                next += u64::from(n.4);
                first
            })
            .collect();
        let mut next = (templated * template.ports.len()) as u64;
        let explicit_first_port = explicit
            .iter()
            .map(|n| {
                let first = next;
                next += u64::from(n.5);
                first
            })
            .collect();
        Predictor {
            strings,
            classes,
            template,
            templated,
            explicit,
            template_kinds: template.nodes.iter().map(|n| parse_kind(&n.0)).collect(),
            template_first_port,
            explicit_first_port,
            ports,
        }
    }

    fn string(&self, i: u32) -> Result<&'a str, String> {
        self.strings
            .get(i as usize)
            .map(String::as_str)
            .ok_or_else(|| format!("string {i} does not exist"))
    }

    fn class(&self, i: u32) -> Result<&'a LinkClass, String> {
        self.classes
            .get(i as usize)
            .ok_or_else(|| format!("link class {i} does not exist"))
    }

    fn templated_nodes(&self) -> usize {
        self.templated * self.template.nodes.len()
    }

    fn templated_links(&self) -> usize {
        self.templated * self.template.links.len()
    }

    fn node_count(&self) -> usize {
        self.templated_nodes() + self.explicit.len()
    }

    fn node(&self, idx: usize, servers: &'a [Server]) -> Result<NodeView<'a>, String> {
        let per = self.template.nodes.len();
        if idx < self.templated_nodes() {
            let (i, j) = (idx / per, idx % per);
            let (_, local, model, plane, ports) = &self.template.nodes[j];
            let first_in_server = self.template_first_port[j];
            return Ok(NodeView {
                kind: self.template_kinds[j].clone()?,
                prefix: Some(&servers[i].name),
                local,
                model: self.string(*model)?,
                server: Some(i as u32),
                plane: *plane,
                first_port: (i * self.template.ports.len()) as u64 + first_in_server,
                num_ports: *ports,
            });
        }
        let k = idx - self.templated_nodes();
        let (kind, name, model, server, plane, ports, ..) = &self.explicit[k];
        Ok(NodeView {
            kind: parse_kind(kind)?,
            prefix: None,
            local: name,
            model: self.string(*model)?,
            server: *server,
            plane: *plane,
            first_port: self.explicit_first_port[k],
            num_ports: *ports,
        })
    }

    /// The predicted ports, before links set their states, in port order.
    fn base_ports(&self) -> impl Iterator<Item = Result<Port, String>> + '_ {
        let t = &self.template;
        let templated = (0..self.templated).flat_map(move |i| {
            t.ports
                .iter()
                .map(move |&(node, number, cage, gbps, lanes, unused)| {
                    if node as usize >= t.nodes.len() {
                        return Err(format!("template port names node {node}"));
                    }
                    Ok(Port {
                        node: NodeId((i * t.nodes.len()) as u32 + node),
                        number,
                        cage,
                        gbps,
                        lanes,
                        state: PortState::Unused(unused),
                    })
                })
        });
        let first_explicit = self.templated_nodes();
        let explicit = self.explicit.iter().enumerate().flat_map(move |(k, n)| {
            let (gbps, lanes, per_cage) = (n.6, n.7, n.8.max(1));
            let node = NodeId((first_explicit + k) as u32);
            (0..n.5).map(move |i| {
                Ok(Port {
                    node,
                    number: i + 1,
                    cage: i / per_cage + 1,
                    gbps,
                    lanes,
                    state: PortState::Unused(Unused::Spare),
                })
            })
        });
        let filler = std::iter::repeat_with(|| {
            Ok(Port {
                node: NodeId(0),
                number: 0,
                cage: 0,
                gbps: 0.0,
                lanes: 0,
                state: PortState::Unused(Unused::Spare),
            })
        });
        templated.chain(explicit).chain(filler).take(self.ports)
    }

    /// Link `idx` of the templated servers.
    fn templated_link(&self, idx: usize) -> Result<Link, String> {
        let per = self.template.links.len();
        let (i, k) = (idx / per, idx % per);
        let (a, b, class) = self.template.links[k];
        let base = (i * self.template.ports.len()) as u64;
        let port = |rel: u32| {
            if rel as usize >= self.template.ports.len() {
                return Err(format!("template link names port {rel}"));
            }
            Ok(PortId((base + u64::from(rel)) as u32))
        };
        Ok(link_of(port(a)?, port(b)?, self.class(class)?))
    }
}

fn link_of(a: PortId, b: PortId, c: &LinkClass) -> Link {
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

/// Hashable identity of a [`LinkClass`], floats by their bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum MediumKey<'a> {
    Pcie(u32),
    Nvlink,
    Cable(CableKind, &'a str, u64),
    Fibre(FibreKind, &'a str, u64),
    Unplanned,
    Discovered,
}

type ClassKey<'a> = (LinkKind, u64, u32, MediumKey<'a>, u64);

fn class_key(l: &Link) -> ClassKey<'_> {
    let medium = match &l.medium {
        Medium::Pcie { gen } => MediumKey::Pcie(*gen),
        Medium::Nvlink => MediumKey::Nvlink,
        Medium::Cable {
            kind,
            part,
            length_m,
        } => MediumKey::Cable(*kind, part, length_m.to_bits()),
        Medium::Fibre {
            fibre,
            part,
            length_m,
        } => MediumKey::Fibre(*fibre, part, length_m.to_bits()),
        Medium::Unplanned => MediumKey::Unplanned,
        Medium::Discovered => MediumKey::Discovered,
    };
    (l.kind, l.gbps.to_bits(), l.lanes, medium, l.run_m.to_bits())
}

#[derive(Default)]
struct Interner<'a> {
    strings: Vec<String>,
    string_ids: HashMap<&'a str, u32>,
    classes: Vec<LinkClass>,
    class_ids: HashMap<ClassKey<'a>, u32>,
    /// The last class looked up: neighbouring links mostly share one.
    last_class: Option<(ClassKey<'a>, u32)>,
}

impl<'a> Interner<'a> {
    fn string(&mut self, s: &'a str) -> u32 {
        *self.string_ids.entry(s).or_insert_with(|| {
            self.strings.push(s.to_string());
            self.strings.len() as u32 - 1
        })
    }

    fn class(&mut self, l: &'a Link) -> u32 {
        let key = class_key(l);
        if let Some((k, id)) = self.last_class {
            if k == key {
                return id;
            }
        }
        let id = *self.class_ids.entry(key).or_insert_with(|| {
            self.classes.push(LinkClass {
                kind: l.kind,
                gbps: l.gbps,
                lanes: l.lanes,
                medium: l.medium.clone(),
                run_m: l.run_m,
            });
            self.classes.len() as u32 - 1
        });
        self.last_class = Some((key, id));
        id
    }
}

/// One server's insides as a template, when server 0 starts the arena and its nodes are named
/// `<server>/<local>`; `None` otherwise (then every node is explicit). Returns the template and how
/// many servers it lays out.
fn template_of<'a>(f: &'a Fabric, ids: &mut Interner<'a>) -> Option<(Template, usize)> {
    let s0 = f.servers.first()?;
    let n = s0.num_nodes as usize;
    let servers = f.servers.len();
    if s0.first_node != 0 || n == 0 || servers.checked_mul(n)? > f.nodes.len() {
        return None;
    }
    let mut t = Template::default();
    let mut next_port = 0u32;
    for node in &f.nodes[..n] {
        let local = node
            .name
            .strip_prefix(s0.name.as_str())
            .and_then(|r| r.strip_prefix('/'))?;
        if node.server != Some(0) || node.first_port != next_port {
            return None;
        }
        next_port = next_port.checked_add(node.num_ports)?;
        let model = ids.string(&node.model);
        t.nodes.push((
            kind_code(node.kind),
            local.to_string(),
            model,
            node.plane,
            node.num_ports,
        ));
    }
    let p = next_port as usize;
    if servers.checked_mul(p)? > f.ports.len() {
        return None;
    }
    for port in &f.ports[..p] {
        if port.node.0 as usize >= n {
            return None;
        }
        let unused = match port.state {
            PortState::Unused(u) => u,
            PortState::Linked(_) => Unused::Spare,
        };
        t.ports.push((
            port.node.0,
            port.number,
            port.cage,
            port.gbps,
            port.lanes,
            unused,
        ));
    }
    let inside = |l: &Link| (l.a.0 as usize) < p && (l.b.0 as usize) < p;
    let l = f.links.iter().take_while(|l| inside(l)).count();
    if servers.checked_mul(l)? > f.links.len() {
        return None;
    }
    for link in &f.links[..l] {
        t.links.push((link.a.0, link.b.0, ids.class(link)));
    }
    Some((t, servers))
}

/// Speed, lanes and ports per cage that predict most of a node's ports.
fn port_defaults(f: &Fabric, node: &Node) -> (f64, u32, u32) {
    let first = node.first_port as usize;
    let ports = f
        .ports
        .get(first..first + node.num_ports as usize)
        .unwrap_or(&[]);
    let Some(p0) = ports.first() else {
        return (0.0, 0, 1);
    };
    let model = ports.iter().find(|p| p.link().is_none()).unwrap_or(p0);
    let per_cage = ports
        .iter()
        .position(|p| p.cage != p0.cage)
        .unwrap_or(ports.len())
        .max(1) as u32;
    (model.gbps, model.lanes, per_cage)
}

/// `fabric.json`: the whole graph, loadable by later commands with [`load_fabric_json`].
pub fn fabric_json(f: &Fabric) -> String {
    let mut ids = Interner::default();
    ids.string("");
    let (template, templated) = template_of(f, &mut ids).unwrap_or_default();
    let first_explicit_node = templated * template.nodes.len();
    let first_explicit_link = templated * template.links.len();

    let explicit: Vec<ExplicitNode> = f.nodes[first_explicit_node..]
        .iter()
        .map(|n| {
            let (gbps, lanes, per_cage) = port_defaults(f, n);
            (
                kind_code(n.kind),
                n.name.clone(),
                ids.string(&n.model),
                n.server,
                n.plane,
                n.num_ports,
                gbps,
                lanes,
                per_cage,
            )
        })
        .collect();
    let (mut prev_a, mut prev_b) = (0i64, 0i64);
    let links: Vec<(i64, i64, u32)> = f.links[first_explicit_link..]
        .iter()
        .map(|l| {
            let (a, b) = (i64::from(l.a.0), i64::from(l.b.0));
            let row = (a - prev_a, b - prev_b, ids.class(l));
            (prev_a, prev_b) = (a, b);
            row
        })
        .collect();
    let mut prev_node = 0i64;
    let modules: Vec<(i64, u32, u32)> = f
        .modules
        .iter()
        .map(|m| {
            let node = i64::from(m.node.0);
            let row = (node - prev_node, m.cage, ids.string(&m.part));
            prev_node = node;
            row
        })
        .collect();

    let shape = Predictor::new(
        &ids.strings,
        &ids.classes,
        &template,
        templated,
        &explicit,
        f.ports.len(),
    );
    let mut node_exceptions = Vec::new();
    for (i, node) in f.nodes.iter().enumerate() {
        match shape.node(i, &f.servers) {
            Ok(view) if view.matches(node) => {}
            _ => node_exceptions.push((i as u32, node)),
        }
    }
    let mut link_exceptions = Vec::new();
    for (i, link) in f.links[..first_explicit_link].iter().enumerate() {
        if shape.templated_link(i).as_ref() != Ok(link) {
            link_exceptions.push((i as u32, link));
        }
    }
    // The last link naming each port sets its state (as the loader applies them, in order).
    let mut last_link = vec![u32::MAX; f.ports.len()];
    for (i, l) in f.links.iter().enumerate() {
        for p in [l.a, l.b] {
            if let Some(slot) = last_link.get_mut(p.0 as usize) {
                *slot = i as u32;
            }
        }
    }
    let mut port_exceptions = Vec::new();
    for (i, (predicted, port)) in shape.base_ports().zip(&f.ports).enumerate() {
        let Ok(mut predicted) = predicted else {
            port_exceptions.push((i as u32, port));
            continue;
        };
        if let Some(l) = f.links.get(last_link[i] as usize) {
            predicted.state = PortState::Linked(LinkId(last_link[i]));
            predicted.gbps = l.gbps;
            predicted.lanes = l.lanes;
        }
        if predicted != *port {
            port_exceptions.push((i as u32, port));
        }
    }

    let out = FileOut {
        format: FABRIC_FORMAT,
        meta: &f.meta,
        strings: &ids.strings,
        classes: &ids.classes,
        template: (templated > 0).then_some(&template),
        servers: f
            .servers
            .iter()
            .map(|s| (s.name.as_str(), s.su, s.first_node, s.num_nodes))
            .collect(),
        nodes: &explicit,
        ports: f.ports.len() as u32,
        links,
        modules,
        node_exceptions,
        port_exceptions,
        link_exceptions,
    };
    let mut bytes = Vec::with_capacity(1 << 20);
    serde_json::to_writer(&mut bytes, &out).expect("a fabric always serializes");
    bytes.push(b'\n');
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

fn id_from(base: &mut i64, delta: i64, what: &str) -> Result<u32, String> {
    *base = base
        .checked_add(delta)
        .ok_or_else(|| format!("{what} id out of range"))?;
    u32::try_from(*base).map_err(|_| format!("{what} id {base} out of range"))
}

/// Why a `fabric.json` does not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FabricFileError {
    /// Not JSON, or JSON not shaped as fabric.json: where the reader stopped, and why.
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// The `format` tag names another format than [`FABRIC_FORMAT`].
    Format { found: String },
    /// Records that describe no fabric: an index, count or id out of range (the message names the
    /// section and the record).
    Records(String),
    /// The fabric the records describe breaks the graph invariants ([`Fabric::check`]).
    Invariant(crate::graph::InvariantError),
}

impl std::fmt::Display for FabricFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FabricFileError::Json {
                line,
                column,
                message,
            } => write!(f, "line {line}, column {column}: {message}"),
            FabricFileError::Format { found } => write!(
                f,
                "format is `{found}`; this railyard reads `{FABRIC_FORMAT}`"
            ),
            FabricFileError::Records(message) => f.write_str(message),
            FabricFileError::Invariant(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FabricFileError {}

/// Loads `fabric.json`, checking its format tag and the graph invariants.
pub fn load_fabric_json(text: &str) -> Result<Fabric, FabricFileError> {
    let json = |e: serde_json::Error| FabricFileError::Json {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    };
    let tag: Tag = serde_json::from_str(text).map_err(json)?;
    if tag.format != FABRIC_FORMAT {
        return Err(FabricFileError::Format { found: tag.format });
    }
    let file: FileIn = serde_json::from_str(text).map_err(json)?;
    let f = rebuild(&file).map_err(FabricFileError::Records)?;
    f.check().map_err(FabricFileError::Invariant)?;
    Ok(f)
}

/// The fabric a file describes: predictions, then exceptions.
fn rebuild(file: &FileIn) -> Result<Fabric, String> {
    let empty = Template::default();
    let template = file.template.as_ref().unwrap_or(&empty);
    let templated = if file.template.is_some() {
        file.servers.len()
    } else {
        0
    };
    let too_big = || "the fabric is larger than ids can number".to_string();
    for per in [
        template.nodes.len(),
        template.ports.len(),
        template.links.len(),
    ] {
        if templated
            .checked_mul(per)
            .is_none_or(|n| n > u32::MAX as usize)
        {
            return Err(too_big());
        }
    }
    if (templated * template.nodes.len()).saturating_add(file.nodes.len()) > u32::MAX as usize {
        return Err(too_big());
    }
    let shape = Predictor::new(
        &file.strings,
        &file.classes,
        template,
        templated,
        &file.nodes,
        file.ports as usize,
    );
    let generated = shape
        .explicit_first_port
        .last()
        .map_or((templated * template.ports.len()) as u64, |&first| {
            first + u64::from(file.nodes.last().map_or(0, |n| n.5))
        });
    if u64::from(file.ports) > generated + file.port_exceptions.len() as u64 {
        return Err(format!(
            "{} ports, but the nodes and exceptions describe at most {}",
            file.ports,
            generated + file.port_exceptions.len() as u64
        ));
    }

    // A few bytes of file can describe many records (a count of ports, a server per template):
    // bounded as a planned design is, before anything is allocated.
    use crate::graph::{MAX_LINKS, MAX_NODES, MAX_PORTS};
    let links_total = shape.templated_links() as u64 + file.links.len() as u64;
    for (what, have, limit) in [
        ("devices", shape.node_count() as u64, MAX_NODES),
        ("ports", u64::from(file.ports), MAX_PORTS),
        ("links", links_total, MAX_LINKS),
    ] {
        if have > limit {
            return Err(format!(
                "{have} {what}, past railyard's limit of {limit} {what} for one fabric"
            ));
        }
    }

    let servers: Vec<Server> = file
        .servers
        .iter()
        .map(|(name, su, first_node, num_nodes)| Server {
            name: name.clone(),
            su: *su,
            first_node: *first_node,
            num_nodes: *num_nodes,
        })
        .collect();

    let mut nodes = Vec::with_capacity(shape.node_count());
    for i in 0..shape.node_count() {
        nodes.push(shape.node(i, &servers)?.to_node()?);
    }
    for (i, node) in &file.node_exceptions {
        *nodes
            .get_mut(*i as usize)
            .ok_or_else(|| format!("node exception {i}: no such node"))? = node.clone();
    }

    let mut links = Vec::with_capacity(shape.templated_links() + file.links.len());
    for i in 0..shape.templated_links() {
        links.push(shape.templated_link(i)?);
    }
    let (mut a, mut b) = (0i64, 0i64);
    for &(da, db, class) in &file.links {
        let pa = PortId(id_from(&mut a, da, "port")?);
        let pb = PortId(id_from(&mut b, db, "port")?);
        links.push(link_of(pa, pb, shape.class(class)?));
    }
    for (i, link) in &file.link_exceptions {
        *links
            .get_mut(*i as usize)
            .ok_or_else(|| format!("link exception {i}: no such link"))? = link.clone();
    }

    let mut ports = shape.base_ports().collect::<Result<Vec<Port>, String>>()?;
    for (i, l) in links.iter().enumerate() {
        for p in [l.a, l.b] {
            if let Some(port) = ports.get_mut(p.0 as usize) {
                port.state = PortState::Linked(LinkId(i as u32));
                port.gbps = l.gbps;
                port.lanes = l.lanes;
            }
        }
    }
    for (i, port) in &file.port_exceptions {
        *ports
            .get_mut(*i as usize)
            .ok_or_else(|| format!("port exception {i}: no such port"))? = port.clone();
    }

    let mut node = 0i64;
    let modules = file
        .modules
        .iter()
        .map(|&(dn, cage, part)| {
            Ok(Module {
                node: NodeId(id_from(&mut node, dn, "node")?),
                cage,
                part: shape.string(part)?.into(),
            })
        })
        .collect::<Result<Vec<Module>, String>>()?;

    Ok(Fabric {
        meta: file.meta.clone(),
        servers,
        nodes,
        ports,
        links,
        modules,
    })
}
