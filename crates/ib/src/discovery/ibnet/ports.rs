//! `ibnetdiscover -p`: one line per port (`SW  2 19 0x... 4x HDR - CA 8 1 0x... ( ... )`), read into
//! the same [`Discovered`] as the default form.

use super::{is_progress_line, is_terminal_log_header, parse_guid};
use crate::discovery::{
    contiguous, err, is_tool_warning, pair, shown, Discovered, Node, NodeType, ParseError,
    PortLine, ToolWarning,
};
use crate::rate::Rate;
use std::collections::{BTreeSet, HashMap};

/// Whether a line is one of `ibnetdiscover -p`'s (`SW  2 19 0x... 4x HDR - CA 8 1 0x... ( ... )`).
pub(crate) fn is_port_line(t: &str) -> bool {
    let mut w = t.split_whitespace();
    matches!(w.next(), Some("SW" | "CA" | "RT"))
        && w.next().is_some_and(|x| x.parse::<u32>().is_ok())
        && w.next().is_some_and(|x| x.parse::<u32>().is_ok())
        && w.next().is_some_and(|x| x.starts_with("0x"))
}

/// One end of a `-p` line.
struct PortEnd {
    kind: NodeType,
    port: u32,
    guid: u64,
}

fn port_end(tokens: &[&str], line: usize) -> Result<PortEnd, ParseError> {
    let [kind, _lid, port, guid, ..] = tokens else {
        return err(
            line,
            "expected TYPE LID PORT GUID (as `ibnetdiscover -p` prints)",
        );
    };
    let kind = match *kind {
        "SW" => NodeType::Switch,
        "CA" => NodeType::Ca,
        "RT" => NodeType::Router,
        other => {
            return err(
                line,
                format!("`{}` is not a node type; valid: SW, CA, RT", shown(other)),
            )
        }
    };
    let port: u32 = port
        .parse()
        .ok()
        .filter(|p| (1..=255).contains(p))
        .map_or_else(
            || {
                err(
                    line,
                    format!("`{}` is not a port number; valid: 1 to 255", shown(port)),
                )
            },
            Ok,
        )?;
    Ok(PortEnd {
        kind,
        port,
        guid: parse_guid(guid, line)?,
    })
}

/// `ibnetdiscover -p` (`--ports`): one line per port of every node, cabled ports with their far
/// end, so each link shows from both of its ends:
///
/// ```text
/// SW     2    19 0x0002c90100000004 4x HDR - CA     8     1 0x0002c90200000501 ( 'leaf04' - 'srv10 hca8' )
/// SW     2    20 0x0002c90100000004 4x ???                                    'leaf04'
/// ```
///
/// Switches are known by node GUID and CAs by port GUID there, so a CA's ports are gathered into one
/// node by description when their port numbers do not clash (hosts left with a default description
/// stay apart). A node has as many ports as the highest one listed.
pub(super) fn parse_ports(text: &str) -> Result<Discovered, ParseError> {
    let (rows, warnings) = read_rows(text)?;
    let (seen, own_ports) = seen_guids(&rows);
    let (nodes, by_key) = gather_nodes(&seen, &own_ports);
    // Port lines in the shape the pairing check reads: remote names resolve through `index`.
    let index: HashMap<String, usize> = by_key
        .iter()
        .map(|(&(kind, guid), &n)| (end_name(kind, guid), n))
        .collect();
    let lines = port_lines(&rows, &nodes, &by_key)?;
    let mut d = pair(nodes, &index, &lines)?;
    d.warnings = warnings;
    Ok(d)
}

/// One `-p` line read: its own end, its far end if cabled, the link's rate and both descriptions.
struct Row {
    a: PortEnd,
    b: Option<PortEnd>,
    rate: Option<Rate>,
    desc: (String, String),
    line: usize,
}

/// Every port line of `text` read into a [`Row`], and the tool's own warnings kept aside.
fn read_rows(text: &str) -> Result<(Vec<Row>, Vec<ToolWarning>), ParseError> {
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') || is_progress_line(t) || is_terminal_log_header(t) {
            continue;
        }
        if is_tool_warning(t) {
            warnings.push(ToolWarning {
                line,
                text: t.to_string(),
            });
            continue;
        }
        rows.push(read_row(t, line)?);
    }
    Ok((rows, warnings))
}

/// One trimmed `-p` line `t` (line number `line`) read into a [`Row`].
fn read_row(t: &str, line: usize) -> Result<Row, ParseError> {
    if !is_port_line(t) {
        return err(
            line,
            format!(
                "cannot read `{}` as an `ibnetdiscover -p` line: TYPE LID PORT GUID WIDTH SPEED - TYPE LID PORT GUID ( 'desc' - 'desc' )",
                shown(t)
            ),
        );
    }
    let tokens: Vec<&str> = t.split_whitespace().collect();
    let dash = tokens.iter().skip(4).position(|&x| x == "-").map(|k| k + 4);
    let (head, descs) = match dash {
        Some(_) => t.split_once("( '").unwrap_or((t, "")),
        None => (t, ""),
    };
    let descs = descs.trim_end().trim_end_matches(')').trim_end();
    let desc = match descs.strip_suffix('\'').and_then(|d| d.split_once("' - '")) {
        Some((a, b)) => (a.to_string(), b.to_string()),
        None if descs.is_empty() => {
            // An unconnected port: `... 4x ???   'desc'`.
            let own = t
                .find('\'')
                .and_then(|s| t.rfind('\'').filter(|&e| e > s).map(|e| &t[s + 1..e]))
                .unwrap_or("");
            (own.to_string(), String::new())
        }
        None => return err(line, "descriptions must read ( 'a' - 'b' )"),
    };
    let tokens: Vec<&str> = head.split_whitespace().collect();
    let a = port_end(&tokens, line)?;
    let (rate, b) = match dash {
        Some(d) if d < tokens.len() => {
            let rate = match &tokens[4..d] {
                [] => None,
                [w, s] => Some(Rate::parse_words(w, s)),
                other => {
                    return err(
                        line,
                        format!(
                            "`{}` is not a width and speed such as `4x HDR`",
                            shown(&other.join(" "))
                        ),
                    )
                }
            };
            (rate, Some(port_end(&tokens[d + 1..], line)?))
        }
        _ => (None, None),
    };
    if let Some(extra) = dash.and_then(|d| tokens.get(d + 5)) {
        return err(
            line,
            format!(
                "unexpected `{}` after the remote end; descriptions read ( 'a' - 'b' )",
                shown(extra)
            ),
        );
    }
    Ok(Row {
        a,
        b,
        rate,
        desc,
        line,
    })
}

/// A GUID as the lines list it: its type, ports, description and first line.
struct Seen {
    kind: NodeType,
    guid: u64,
    desc: String,
    ports: BTreeSet<u32>,
    line: usize,
}

/// A GUID's key: its node type and GUID (a switch's node GUID, a CA's port GUID).
type GuidKey = (NodeType, u64);

/// Every GUID with its ports, description and first line, in order of appearance; and the ports
/// each GUID lists as its own (the first end of a line), for the reported port count.
fn seen_guids(rows: &[Row]) -> (Vec<Seen>, HashMap<GuidKey, BTreeSet<u32>>) {
    let mut seen: Vec<Seen> = Vec::new();
    let mut seen_at: HashMap<GuidKey, usize> = HashMap::new();
    let mut own_ports: HashMap<GuidKey, BTreeSet<u32>> = HashMap::new();
    for r in rows {
        own_ports
            .entry((r.a.kind, r.a.guid))
            .or_default()
            .insert(r.a.port);
        for (end, desc) in [(Some(&r.a), &r.desc.0), (r.b.as_ref(), &r.desc.1)] {
            let Some(end) = end else { continue };
            let k = *seen_at.entry((end.kind, end.guid)).or_insert_with(|| {
                seen.push(Seen {
                    kind: end.kind,
                    guid: end.guid,
                    desc: desc.clone(),
                    ports: Default::default(),
                    line: r.line,
                });
                seen.len() - 1
            });
            seen[k].ports.insert(end.port);
        }
    }
    (seen, own_ports)
}

/// Nodes: switches by GUID; a CA's port GUIDs gathered by description where ports do not clash.
/// Returns the nodes and the node each GUID belongs to.
fn gather_nodes(
    seen: &[Seen],
    own_ports: &HashMap<GuidKey, BTreeSet<u32>>,
) -> (Vec<Node>, HashMap<GuidKey, usize>) {
    let mut nodes: Vec<Node> = Vec::new();
    let mut node_ports: Vec<BTreeSet<u32>> = Vec::new();
    let mut ca_by_desc: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_key: HashMap<(NodeType, u64), usize> = HashMap::new();
    for g in seen {
        let merge = (g.kind == NodeType::Ca && !g.desc.is_empty())
            .then(|| ca_by_desc.get(g.desc.as_str()))
            .flatten()
            .and_then(|cands| {
                cands
                    .iter()
                    .copied()
                    .find(|&n| node_ports[n].is_disjoint(&g.ports))
            });
        let n = match merge {
            Some(n) => n,
            None => {
                let prefix = match g.kind {
                    NodeType::Switch => "S",
                    NodeType::Ca => "H",
                    NodeType::Router => "R",
                };
                let id = format!("{prefix}-{:016x}", g.guid);
                let reported_ports = (g.kind == NodeType::Switch)
                    .then(|| own_ports.get(&(g.kind, g.guid)).and_then(contiguous))
                    .flatten();
                nodes.push(Node {
                    kind: g.kind,
                    desc: if g.desc.is_empty() {
                        id.clone()
                    } else {
                        g.desc.clone()
                    },
                    id,
                    ports: 0,
                    reported_ports,
                    guid: Some(g.guid),
                    sysimgguid: None,
                    vendor_id: None,
                    device_id: None,
                    line: g.line,
                });
                node_ports.push(Default::default());
                if g.kind == NodeType::Ca {
                    ca_by_desc
                        .entry(g.desc.as_str())
                        .or_default()
                        .push(nodes.len() - 1);
                }
                nodes.len() - 1
            }
        };
        node_ports[n].extend(g.ports.iter().copied());
        nodes[n].ports = node_ports[n].last().copied().unwrap_or(0);
        by_key.insert((g.kind, g.guid), n);
    }
    (nodes, by_key)
}

/// The name a port line gives its far end, resolved through `parse_ports`'s index.
fn end_name(kind: NodeType, guid: u64) -> String {
    format!("{kind:?}-{guid:016x}")
}

/// The cabled rows as port lines of their nodes; a port listed twice is an error.
fn port_lines(
    rows: &[Row],
    nodes: &[Node],
    by_key: &HashMap<GuidKey, usize>,
) -> Result<Vec<PortLine>, ParseError> {
    let mut listed: HashMap<(usize, u32), usize> = HashMap::new();
    let mut lines = Vec::new();
    for r in rows {
        let Some(b) = &r.b else { continue };
        let node = by_key[&(r.a.kind, r.a.guid)];
        if let Some(first) = listed.insert((node, r.a.port), r.line) {
            return err(
                r.line,
                format!(
                    "port {} of \"{}\" is listed twice (first at line {first})",
                    r.a.port,
                    shown(&nodes[node].desc)
                ),
            );
        }
        lines.push(PortLine {
            node,
            port: r.a.port,
            remote: end_name(b.kind, b.guid),
            remote_port: b.port,
            rate: r.rate,
            line: r.line,
        });
    }
    Ok(lines)
}
