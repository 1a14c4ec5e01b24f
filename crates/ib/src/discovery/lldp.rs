//! Ethernet fabrics as built: LLDP neighbour tables read into a [`Discovered`] fabric that
//! [`crate::verify`] checks port by port, and the neighbour tables a plan expects.
//!
//! Input: what lldpd prints for `lldpcli show neighbors` on each switch and host, in its plain-text
//! form or as `lldpcli -f json` (or `-f json0`). Sources of the formats (samples in
//! tests/data/lldp/README.md): lldpd's own integration tests (tests/integration/test_lldpcli.py in
//! github.com/lldpd/lldpd) and published outputs of real devices. A table does not name the device
//! it was taken on; the caller names it (the CLI: from the file name).
//!
//! Every neighbour entry gives the local interface, the neighbour's system name (its chassis id when
//! it sends none) and the neighbour's port: the port id when its subtype is `ifname`, else the port
//! description (lldpd on Linux sends the MAC as id and the interface name as description), else
//! the id. A switch port is the last number in its interface name (`swp17`, `Ethernet17`, `eth1/17`
//! are port 17); each host interface is a node of its own, `host ifname`, with one port, as an HCA
//! is in an InfiniBand discovery. Whether a device is a switch is the caller's to say (from the
//! plan); a device the caller does not know is a switch when a neighbour reports it with the Bridge
//! capability enabled.
//!
//! LLDP gives no link rates: verify with [`crate::verify::Site::without_rates`].
//!
//! Output ([`expected_tables`]): one table per switch and server of a plan, in lldpcli's `-f json`
//! form, switch ports named `swp<N>` and host interfaces by the plan's NIC names (`hca1`).

use crate::discovery::{escaped, shown, Discovered, Link, Node, NodeType, ParseError};
use railyard_catalog::{Family, Tech};
use railyard_fabric::{Fabric, NodeKind};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// One neighbour as a table lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The local interface (`swp17`, `eth0`).
    pub local: String,
    /// The neighbour's system name, or its chassis id when it sends none.
    pub remote: String,
    /// The neighbour's port (interface name where the neighbour says it).
    pub remote_port: String,
    /// Whether the neighbour has the Bridge capability enabled, when it says.
    pub remote_bridge: Option<bool>,
    /// Line of the entry (its `Interface:` line, or where its interface is named in JSON).
    pub line: usize,
}

/// One device's neighbour table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The device the table was taken on.
    pub device: String,
    /// Where the table came from (a file name), for messages.
    pub source: String,
    pub neighbours: Vec<Neighbour>,
}

/// Parses `lldpcli show neighbors` output, plain text or JSON (told apart by the first character
/// that is not blank). A table with no neighbours is valid; a file with nothing LLDP in it is not.
pub fn parse(text: &str) -> Result<Vec<Neighbour>, ParseError> {
    let text = crate::discovery::strip_bom(text);
    match text.trim_start().chars().next() {
        None => Err(ParseError {
            line: 0,
            message: "empty file; expected the output of `lldpcli show neighbors` (plain text or -f json)".into(),
        }),
        Some('{') => parse_json(text),
        Some(_) => parse_text(text),
    }
}

fn parse_text(text: &str) -> Result<Vec<Neighbour>, ParseError> {
    struct Entry {
        local: String,
        line: usize,
        name: Option<String>,
        chassis: Option<String>,
        port_id: Option<(String, String)>,
        port_descr: Option<String>,
        bridge: Option<bool>,
    }
    let finish = |e: Entry| -> Result<Neighbour, ParseError> {
        let remote = e.name.or(e.chassis).ok_or_else(|| ParseError {
            line: e.line,
            message: format!(
                "the neighbour on \"{}\" has no SysName and no ChassisID",
                shown(&e.local)
            ),
        })?;
        let remote_port = match (e.port_id, e.port_descr) {
            (Some((kind, id)), _) if kind == "ifname" => id,
            (_, Some(d)) if !d.is_empty() => d,
            (Some((_, id)), _) => id,
            (None, _) => {
                return Err(ParseError {
                    line: e.line,
                    message: format!(
                        "the neighbour on \"{}\" has no PortID and no PortDescr",
                        shown(&e.local)
                    ),
                })
            }
        };
        Ok(Neighbour {
            local: e.local,
            remote,
            remote_port,
            remote_bridge: e.bridge,
            line: e.line,
        })
    };
    let mut out = Vec::new();
    let mut cur: Option<Entry> = None;
    let mut lldp = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.chars().all(|c| c == '-') {
            continue;
        }
        if line.starts_with("LLDP neighbors") {
            lldp = true;
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if key == "Interface" {
            lldp = true;
            if let Some(e) = cur.take() {
                out.push(finish(e)?);
            }
            let local = value.split(',').next().unwrap_or("").trim();
            if local.is_empty() {
                return Err(ParseError {
                    line: n,
                    message: "an Interface line without an interface name".into(),
                });
            }
            cur = Some(Entry {
                local: local.to_string(),
                line: n,
                name: None,
                chassis: None,
                port_id: None,
                port_descr: None,
                bridge: None,
            });
            continue;
        }
        let Some(e) = cur.as_mut() else {
            if matches!(key, "SysName" | "ChassisID" | "PortID" | "PortDescr") {
                return Err(ParseError {
                    line: n,
                    message: format!("{key} before any Interface line"),
                });
            }
            continue;
        };
        let typed = |v: &str| match v.split_once(' ') {
            Some((kind, rest)) => (kind.to_string(), rest.trim().to_string()),
            None => (String::new(), v.to_string()),
        };
        match key {
            "SysName" => e.name = Some(value.to_string()).filter(|v| !v.is_empty()),
            "ChassisID" => e.chassis = Some(typed(value).1).filter(|v| !v.is_empty()),
            "PortID" => e.port_id = Some(typed(value)).filter(|(_, v)| !v.is_empty()),
            "PortDescr" => e.port_descr = Some(value.to_string()),
            "Capability" => {
                if let Some((cap, state)) = value.split_once(',') {
                    if cap.trim() == "Bridge" {
                        e.bridge = Some(state.trim() == "on");
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(e) = cur.take() {
        out.push(finish(e)?);
    }
    if !lldp {
        return Err(ParseError {
            line: 0,
            message: "no LLDP neighbours: expected the output of `lldpcli show neighbors` (a `LLDP neighbors:` header and `Interface:` entries) or of `lldpcli -f json show neighbors`".into(),
        });
    }
    Ok(out)
}

/// The only element of a one-element array (json0 wraps every value so), else the value.
fn one(v: &Value) -> &Value {
    match v {
        Value::Array(a) if a.len() == 1 => &a[0],
        v => v,
    }
}

/// A string value, bare or wrapped as `{"value": ...}` (json0).
fn text_of(v: &Value) -> Option<String> {
    match one(v) {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("value").and_then(text_of),
        _ => None,
    }
}

/// The items of a value that is one item or an array of them.
fn items(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    }
}

fn parse_json(text: &str) -> Result<Vec<Neighbour>, ParseError> {
    // serde_json counts the line after a final newline; an error there is on the last line.
    let last = text.lines().count().max(1);
    let root: Value = serde_json::from_str(text).map_err(|e| ParseError {
        line: e.line().min(last),
        message: format!("not valid JSON: {e}"),
    })?;
    let Some(lldp) = root.get("lldp") else {
        return Err(ParseError {
            line: 1,
            message: "no \"lldp\" key: expected the output of `lldpcli -f json show neighbors`"
                .into(),
        });
    };
    // Where each interface is named, in document order, to give entries their line.
    let mut cursor = 0;
    let mut line_of = |name: &str| {
        let quoted = serde_json::to_string(name).unwrap_or_default();
        let at = text[cursor..]
            .find(&quoted)
            .map(|p| p + cursor)
            .or_else(|| text.find(&quoted));
        match at {
            Some(p) => {
                cursor = p + quoted.len();
                text[..p].matches('\n').count() + 1
            }
            None => 0,
        }
    };
    let mut out = Vec::new();
    for table in items(lldp) {
        let Some(ifaces) = table.get("interface") else {
            continue;
        };
        // json: {"eth0": {...}} or [{"eth0": {...}}, ...]; json0: [{"name": "eth0", ...}, ...].
        let mut entries: Vec<(String, &Value)> = Vec::new();
        for item in items(ifaces) {
            let Value::Object(o) = item else {
                return Err(ParseError {
                    line: 0,
                    message: "\"interface\" holds something other than interface objects".into(),
                });
            };
            if let Some(name) = o.get("name").and_then(text_of) {
                entries.push((name, item));
            } else {
                for (name, v) in o {
                    entries.push((name.clone(), v));
                }
            }
        }
        for (local, v) in entries {
            let line = line_of(&local);
            let bad = |what: &str| ParseError {
                line,
                message: format!("the neighbour on \"{}\" {what}", shown(&local)),
            };
            let chassis = v
                .get("chassis")
                .map(one)
                .ok_or_else(|| bad("has no chassis"))?;
            let Value::Object(c) = chassis else {
                return Err(bad("has a chassis that is not an object"));
            };
            // json names the chassis object by the system name; json0 has a "name" field.
            let (name, body): (Option<String>, &Map<String, Value>) =
                if let Some(n) = c.get("name").and_then(text_of) {
                    (Some(n), c)
                } else if c.contains_key("id") || c.is_empty() {
                    (None, c)
                } else {
                    match c.iter().next() {
                        Some((n, Value::Object(body))) => (Some(n.clone()), body),
                        _ => return Err(bad("has a chassis without a name or id")),
                    }
                };
            let id = body
                .get("id")
                .map(one)
                .and_then(|i| i.get("value"))
                .and_then(text_of);
            let remote = name
                .or(id)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| bad("has no system name and no chassis id"))?;
            let bridge = body.get("capability").and_then(|caps| {
                items(caps).into_iter().find_map(|cap| {
                    let cap = one(cap);
                    (cap.get("type").and_then(text_of).as_deref() == Some("Bridge"))
                        .then(|| cap.get("enabled").and_then(|e| one(e).as_bool()))
                        .flatten()
                })
            });
            let port = v.get("port").map(one).ok_or_else(|| bad("has no port"))?;
            let pid = port.get("id").map(one);
            let pid_type = pid.and_then(|p| p.get("type")).and_then(text_of);
            let pid_value = pid.and_then(|p| p.get("value")).and_then(text_of);
            let descr = port
                .get("descr")
                .and_then(text_of)
                .filter(|d| !d.is_empty());
            let remote_port = match (pid_type.as_deref(), pid_value, descr) {
                (Some("ifname"), Some(id), _) => id,
                (_, _, Some(d)) => d,
                (_, Some(id), None) => id,
                (_, None, None) => return Err(bad("has no port id and no port description")),
            };
            out.push(Neighbour {
                local,
                remote,
                remote_port,
                remote_bridge: bridge,
                line,
            });
        }
    }
    Ok(out)
}

/// An error in a set of tables: the table (its source) and line, or a conflict between two.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablesError {
    pub source: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for TablesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.source, self.message)
        } else {
            write!(f, "{}: line {}: {}", self.source, self.line, self.message)
        }
    }
}

impl std::error::Error for TablesError {}

/// The port number of a switch interface: the last number in its name (`swp17`, `Ethernet1/17`).
pub fn port_number(ifname: &str) -> Option<u32> {
    let end = ifname.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = ifname[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    ifname[start..end].parse().ok().filter(|&n| n > 0)
}

/// The fabric the tables show: every neighbour entry is one cable, seen from one end or both.
/// `is_switch` says whether a device name is a switch (`None`: the caller does not know; then a
/// neighbour's Bridge capability decides). A host's entry whose neighbour the caller does not know
/// (its management network) is left out; a switch's is kept, to be reported. Errors name the table and line: a switch interface
/// without a port number, a port that two entries give different neighbours.
pub fn to_discovered(
    tables: &[Table],
    is_switch: impl Fn(&str) -> Option<bool>,
) -> Result<Discovered, TablesError> {
    // Bridge capability as neighbours report each device.
    let mut bridge: BTreeMap<&str, bool> = BTreeMap::new();
    for t in tables {
        for n in &t.neighbours {
            if let Some(b) = n.remote_bridge {
                *bridge.entry(&n.remote).or_default() |= b;
            }
        }
    }
    let switch = |d: &str| is_switch(d).unwrap_or_else(|| bridge.get(d).copied().unwrap_or(false));
    let mut nodes: Vec<Node> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    // (node, port) -> (far (node, port), table index, line)
    type End = (usize, u32);
    let mut ends: BTreeMap<End, (End, usize, usize)> = BTreeMap::new();
    let mut links: Vec<Link> = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for n in &t.neighbours {
            // A host's neighbour that the caller does not know is its management network, not the
            // fabric: left out.
            if !switch(&t.device) && is_switch(&n.remote).is_none() {
                continue;
            }
            let mut end = |device: &str, ifname: &str| -> Result<(usize, u32), TablesError> {
                let sw = switch(device);
                let (desc, port) = if sw {
                    let port = port_number(ifname).ok_or_else(|| TablesError {
                        source: t.source.clone(),
                        line: n.line,
                        message: format!(
                            "switch \"{}\" interface \"{}\" has no port number; switch ports are read from the last number in the interface name (swp17, Ethernet1/17)",
                            shown(device),
                            shown(ifname)
                        ),
                    })?;
                    (device.to_string(), port)
                } else {
                    (format!("{device} {ifname}"), 1)
                };
                let i = *index.entry(desc.clone()).or_insert_with(|| {
                    nodes.push(Node {
                        kind: if sw { NodeType::Switch } else { NodeType::Ca },
                        id: desc.clone(),
                        desc,
                        ports: 0,
                        reported_ports: None,
                        vendor_id: None,
                        device_id: None,
                        guid: None,
                        sysimgguid: None,
                        line: n.line,
                    });
                    nodes.len() - 1
                });
                nodes[i].ports = nodes[i].ports.max(port);
                Ok((i, port))
            };
            let a = end(&t.device, &n.local)?;
            let b = end(&n.remote, &n.remote_port)?;
            if a == b {
                return Err(TablesError {
                    source: t.source.clone(),
                    line: n.line,
                    message: format!(
                        "\"{}\" lists itself as its own neighbour",
                        escaped(&n.local)
                    ),
                });
            }
            let mut known = true;
            for (x, y) in [(a, b), (b, a)] {
                match ends.get(&x) {
                    Some(&(far, src, line)) if far != y => {
                        let name =
                            |e: (usize, u32)| format!("{}[{}]", escaped(&nodes[e.0].desc), e.1);
                        return Err(TablesError {
                            source: t.source.clone(),
                            line: n.line,
                            message: format!(
                                "{} is listed with neighbour {} here and {} in {} line {}: tables taken at different times? collect them again",
                                name(x),
                                name(y),
                                name(far),
                                tables[src].source,
                                line
                            ),
                        });
                    }
                    Some(_) => {}
                    None => known = false,
                }
            }
            if !known {
                ends.insert(a, (b, ti, n.line));
                ends.insert(b, (a, ti, n.line));
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                links.push(Link {
                    a,
                    b,
                    rate: None,
                    line: n.line,
                });
            }
        }
    }
    links.sort_by_key(|l| (l.a, l.b));
    Ok(Discovered {
        nodes,
        links,
        warnings: Vec::new(),
        rate_disagreements: Vec::new(),
        family: Family::Ethernet,
    })
}

/// The neighbour tables a plan expects, one per switch and server with cables, in lldpcli's
/// `-f json show neighbors` form (`{"lldp": {"interface": [{"swp1": {...}}, ...]}}`), by device
/// name. Switch ports are `swp<N>`; host interfaces carry the plan's NIC names (`hca1`).
///
/// InfiniBand fabrics run no LLDP: their expected tables are an error naming the technologies that
/// do (use `export ibnet` for them).
pub fn expected_tables(f: &Fabric) -> Result<BTreeMap<String, String>, crate::export::ExportError> {
    ethernet_only(f)?;
    // Device and interface of a port.
    let at = |p: railyard_fabric::PortId| -> (String, String, bool) {
        let port = f.port(p);
        let n = f.node(port.node);
        match (n.kind, n.server) {
            (NodeKind::Nic { .. } | NodeKind::StorageNic, Some(s)) => (
                f.servers[s as usize].name.clone(),
                n.name.rsplit('/').next().unwrap_or(&n.name).to_string(),
                false,
            ),
            _ => (n.name.clone(), format!("swp{}", port.number), n.is_switch()),
        }
    };
    let mut tables: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for (_, l) in f.network_links() {
        let (a, b) = (at(l.a), at(l.b));
        for (local, remote) in [(&a, &b), (&b, &a)] {
            let entry = json!({
                "via": "LLDP",
                "chassis": {
                    remote.0.clone(): {
                        "capability": [
                            {"type": "Bridge", "enabled": remote.2},
                            {"type": "Router", "enabled": remote.2},
                        ]
                    }
                },
                "port": {
                    "id": {"type": "ifname", "value": remote.1},
                    "descr": remote.1,
                }
            });
            tables
                .entry(local.0.clone())
                .or_default()
                .push((local.1.clone(), entry));
        }
    }
    Ok(tables
        .into_iter()
        .map(|(device, mut entries)| {
            entries.sort_by_key(|(i, _)| (port_number(i), i.clone()));
            let list: Vec<Value> = entries
                .into_iter()
                .map(|(i, e)| {
                    let mut m = Map::new();
                    m.insert(i, e);
                    Value::Object(m)
                })
                .collect();
            let text = serde_json::to_string_pretty(&json!({"lldp": {"interface": list}}))
                .unwrap_or_default()
                + "\n";
            (device, text)
        })
        .collect())
}

/// An error unless the fabric is Ethernet, the family whose switches and hosts send LLDP.
pub fn ethernet_only(f: &Fabric) -> Result<(), crate::export::ExportError> {
    let tech = f.meta.tech;
    if tech.family() == Family::Ethernet {
        return Ok(());
    }
    Err(crate::export::ExportError(format!(
        "the {tech} fabric has no LLDP neighbour tables (InfiniBand: use ibnetdiscover and `export ibnet`); valid technologies: {}",
        Tech::ALL
            .iter()
            .filter(|t| t.family() == Family::Ethernet)
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )))
}
