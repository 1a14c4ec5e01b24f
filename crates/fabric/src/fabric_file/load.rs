//! Loading `fabric.json`: the format tag checked, the records bounded before anything is
//! allocated, the fabric rebuilt from predictions and exceptions and held to its invariants.

use super::predict::Predictor;
use super::records::{link_of, FileIn, Tag, Template, FABRIC_FORMAT};
use crate::graph::{
    Fabric, Link, LinkId, Module, Node, NodeId, Port, PortId, PortState, Server, MAX_LINKS,
    MAX_NODES, MAX_PORTS,
};

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
    bounded(file, &shape)?;
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
    let nodes = nodes(file, &shape, &servers)?;
    let links = links(file, &shape)?;
    let ports = ports(file, &shape, &links)?;
    let modules = modules(file, &shape)?;
    Ok(Fabric {
        meta: file.meta.clone(),
        servers,
        nodes,
        ports,
        links,
        modules,
    })
}

/// Refuses a file whose ports the nodes and exceptions cannot describe, or that describes more
/// than railyard's limits: a few bytes of file can describe many records (a count of ports, a
/// server per template), bounded as a planned design is, before anything is allocated.
fn bounded(file: &FileIn, shape: &Predictor) -> Result<(), String> {
    let generated = shape.explicit_first_port.last().map_or(
        (shape.templated * shape.template.ports.len()) as u64,
        |&first| first + u64::from(file.nodes.last().map_or(0, |n| n.5)),
    );
    if u64::from(file.ports) > generated + file.port_exceptions.len() as u64 {
        return Err(format!(
            "{} ports, but the nodes and exceptions describe at most {}",
            file.ports,
            generated + file.port_exceptions.len() as u64
        ));
    }
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
    Ok(())
}

/// The predicted nodes, then the node exceptions.
fn nodes(file: &FileIn, shape: &Predictor, servers: &[Server]) -> Result<Vec<Node>, String> {
    let mut nodes = Vec::with_capacity(shape.node_count());
    for i in 0..shape.node_count() {
        nodes.push(shape.node(i, servers)?.to_node()?);
    }
    for (i, node) in &file.node_exceptions {
        *nodes
            .get_mut(*i as usize)
            .ok_or_else(|| format!("node exception {i}: no such node"))? = node.clone();
    }
    Ok(nodes)
}

/// The templated servers' links, the explicit links (ends as differences), then the exceptions.
fn links(file: &FileIn, shape: &Predictor) -> Result<Vec<Link>, String> {
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
    Ok(links)
}

/// The predicted ports, each linked to the last link naming it at its rate, then the exceptions.
fn ports(file: &FileIn, shape: &Predictor, links: &[Link]) -> Result<Vec<Port>, String> {
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
    Ok(ports)
}

/// The transceivers, nodes as differences from the previous module's node.
fn modules(file: &FileIn, shape: &Predictor) -> Result<Vec<Module>, String> {
    let mut node = 0i64;
    file.modules
        .iter()
        .map(|&(dn, cage, part)| {
            Ok(Module {
                node: NodeId(id_from(&mut node, dn, "node")?),
                cage,
                part: shape.string(part)?.into(),
            })
        })
        .collect::<Result<Vec<Module>, String>>()
}

fn id_from(base: &mut i64, delta: i64, what: &str) -> Result<u32, String> {
    *base = base
        .checked_add(delta)
        .ok_or_else(|| format!("{what} id out of range"))?;
    u32::try_from(*base).map_err(|_| format!("{what} id {base} out of range"))
}
