//! The prediction the writer and the loader share ([`Predictor`]): what the file's few varying
//! facts say every node, port and link is; whatever differs is an exception.

use super::records::{link_of, parse_kind, ExplicitNode, LinkClass, Template};
use crate::graph::{Link, Node, NodeId, NodeKind, Port, PortId, PortState, Server, Unused};

/// What the file says about the arena's shape, and the records predicted from it. The writer and the
/// loader predict with this same code, so whatever differs from the prediction is an exception.
pub(super) struct Predictor<'a> {
    pub(super) strings: &'a [String],
    pub(super) classes: &'a [LinkClass],
    pub(super) template: &'a Template,
    /// Servers laid out by the template (0 without one).
    pub(super) templated: usize,
    pub(super) explicit: &'a [ExplicitNode],
    /// Kind and first port (within its server) of each template node.
    pub(super) template_kinds: Vec<Result<NodeKind, String>>,
    pub(super) template_first_port: Vec<u64>,
    /// First port of each explicit node: the running sum after the templated ports.
    pub(super) explicit_first_port: Vec<u64>,
    pub(super) ports: usize,
}

/// A predicted node, its name still in parts (`prefix/local` or just `local`).
pub(super) struct NodeView<'a> {
    pub(super) kind: NodeKind,
    pub(super) prefix: Option<&'a str>,
    pub(super) local: &'a str,
    pub(super) model: &'a str,
    pub(super) server: Option<u32>,
    pub(super) plane: u32,
    pub(super) first_port: u64,
    pub(super) num_ports: u32,
}

impl NodeView<'_> {
    pub(super) fn matches(&self, n: &Node) -> bool {
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

    pub(super) fn to_node(&self) -> Result<Node, String> {
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
    pub(super) fn new(
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

    pub(super) fn string(&self, i: u32) -> Result<&'a str, String> {
        self.strings
            .get(i as usize)
            .map(String::as_str)
            .ok_or_else(|| format!("string {i} does not exist"))
    }

    pub(super) fn class(&self, i: u32) -> Result<&'a LinkClass, String> {
        self.classes
            .get(i as usize)
            .ok_or_else(|| format!("link class {i} does not exist"))
    }

    fn templated_nodes(&self) -> usize {
        self.templated * self.template.nodes.len()
    }

    pub(super) fn templated_links(&self) -> usize {
        self.templated * self.template.links.len()
    }

    pub(super) fn node_count(&self) -> usize {
        self.templated_nodes() + self.explicit.len()
    }

    pub(super) fn node(&self, idx: usize, servers: &'a [Server]) -> Result<NodeView<'a>, String> {
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
    pub(super) fn base_ports(&self) -> impl Iterator<Item = Result<Port, String>> + '_ {
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
    pub(super) fn templated_link(&self, idx: usize) -> Result<Link, String> {
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
