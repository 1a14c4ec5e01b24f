//! Writing `fabric.json`: strings and link classes interned, one server as the template, the
//! rest as explicit rows, and the records the prediction gets wrong as exceptions.

use super::predict::Predictor;
use super::records::{kind_code, ExplicitNode, FileOut, LinkClass, Template, FABRIC_FORMAT};
use crate::graph::{Fabric, Link, LinkId, LinkKind, Medium, Node, Port, PortState, Unused};
use railyard_catalog::{CableKind, FibreKind};
use std::collections::HashMap;

/// Hashable identity of a [`LinkClass`], floats by their bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum MediumKey<'a> {
    Pcie(u32),
    Nvlink,
    Cable(CableKind, &'a str, u64),
    Fibre(FibreKind, &'a str, u64),
    Unplanned,
    Discovered,
}

pub(super) type ClassKey<'a> = (LinkKind, u64, u32, MediumKey<'a>, u64);

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
pub(super) struct Interner<'a> {
    pub(super) strings: Vec<String>,
    pub(super) string_ids: HashMap<&'a str, u32>,
    pub(super) classes: Vec<LinkClass>,
    pub(super) class_ids: HashMap<ClassKey<'a>, u32>,
    /// The last class looked up: neighbouring links mostly share one.
    pub(super) last_class: Option<(ClassKey<'a>, u32)>,
}

impl<'a> Interner<'a> {
    pub(super) fn string(&mut self, s: &'a str) -> u32 {
        *self.string_ids.entry(s).or_insert_with(|| {
            self.strings.push(s.to_string());
            self.strings.len() as u32 - 1
        })
    }

    pub(super) fn class(&mut self, l: &'a Link) -> u32 {
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

/// `fabric.json`: the whole graph, loadable by later commands with
/// [`load_fabric_json`](super::load_fabric_json).
pub fn fabric_json(f: &Fabric) -> String {
    let mut ids = Interner::default();
    ids.string("");
    let (template, templated) = template_of(f, &mut ids).unwrap_or_default();
    let first_explicit_link = templated * template.links.len();
    // Interned in this order: the explicit nodes' models, the links' classes, the modules' parts.
    let rows = Rows::of(
        f,
        &mut ids,
        templated * template.nodes.len(),
        first_explicit_link,
    );
    let shape = Predictor::new(
        &ids.strings,
        &ids.classes,
        &template,
        templated,
        &rows.explicit,
        f.ports.len(),
    );
    let exceptions = Exceptions::of(f, &shape, first_explicit_link);
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
        nodes: &rows.explicit,
        ports: f.ports.len() as u32,
        links: rows.links,
        modules: rows.modules,
        node_exceptions: exceptions.nodes,
        port_exceptions: exceptions.ports,
        link_exceptions: exceptions.links,
    };
    let mut bytes = Vec::with_capacity(1 << 20);
    serde_json::to_writer(&mut bytes, &out).expect("a fabric always serializes");
    bytes.push(b'\n');
    String::from_utf8(bytes).expect("serde_json writes UTF-8")
}

/// The records after the servers' blocks: explicit nodes, links as differences from the previous
/// link's ends, modules as differences from the previous module's node.
struct Rows {
    explicit: Vec<ExplicitNode>,
    links: Vec<(i64, i64, u32)>,
    modules: Vec<(i64, u32, u32)>,
}

impl Rows {
    fn of<'a>(
        f: &'a Fabric,
        ids: &mut Interner<'a>,
        first_explicit_node: usize,
        first_explicit_link: usize,
    ) -> Rows {
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
        Rows {
            explicit,
            links,
            modules,
        }
    }
}

/// The records that differ from the prediction, each with its index.
struct Exceptions<'a> {
    nodes: Vec<(u32, &'a Node)>,
    ports: Vec<(u32, &'a Port)>,
    links: Vec<(u32, &'a Link)>,
}

impl<'a> Exceptions<'a> {
    fn of(f: &'a Fabric, shape: &Predictor, first_explicit_link: usize) -> Exceptions<'a> {
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
        Exceptions {
            nodes: node_exceptions,
            ports: port_exceptions,
            links: link_exceptions,
        }
    }
}
