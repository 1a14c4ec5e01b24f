//! Parse `iblinkinfo` output (infiniband-diags' iblinkinfo.c) into the same validated
//! [`Discovered`] the ibnetdiscover parser returns.
//!
//! The default form lists every node with every port, cabled or not:
//! ```text
//! Switch: 0x0002c90100000001 leaf01:
//!            3    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>      12    1[  ] "srv01 hca1" ( )
//!            3    2[  ] ==(                Down/ Polling)==>             [  ] "" ( )
//! CA: srv01 hca1:
//!       0x0002c90200000011     12    1[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>       3    1[  ] "leaf01" ( )
//! ```
//! A port line gives the local LID and port, the link's width, lane speed, state and physical state,
//! and the far end's LID, port and description (iblinkinfo names no far GUID), then what the link
//! could run at (`(Could be 12X )`). So the far end is found by its description and port, checked
//! against the far node's own line (which must point back), and, where descriptions repeat, told
//! apart by LID. `-l` prints one line per port with both GUIDs:
//! ```text
//! 0x0002c90100000001 "                        leaf01"      3    1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  0x0002c90200000011     12    1[  ] "srv01 hca1" ( )
//! ```
//! There nodes are known by GUID: one that lists two or more of its own ports is a switch (a CA port
//! has a GUID of its own), and a CA's port GUIDs gather into one node by description as in
//! `ibnetdiscover -p`. Lane speeds are read as listed in [`crate::rate`]; `-p`'s
//! ` (HOQ:n VL_Stall:n)` after the link is read past.

use crate::discovery::{contiguous, err, pair, shown, strip_bom, PortLine};
pub use crate::discovery::{Discovered, Node, NodeType, ParseError};
use crate::rate::Rate;
use std::collections::{BTreeSet, HashMap};

/// Whether a line is iblinkinfo's: a node header or a port line (`... ==( ... )==> ...`).
pub(crate) fn is_iblinkinfo_line(t: &str) -> bool {
    header(t).is_some() || t.contains("==(") && t.contains(")==>")
}

/// A node header: `Switch: 0x<guid> <desc>:`, `CA: <desc>:`, `Router: <desc>:`.
fn header(t: &str) -> Option<(NodeType, Option<&str>, &str)> {
    let (kind, rest) = if let Some(r) = t.strip_prefix("Switch: ") {
        (NodeType::Switch, r)
    } else if let Some(r) = t.strip_prefix("CA: ") {
        (NodeType::Ca, r)
    } else if let Some(r) = t.strip_prefix("Router: ") {
        (NodeType::Router, r)
    } else {
        return None;
    };
    let rest = rest.strip_suffix(':')?;
    if kind == NodeType::Switch {
        let (guid, desc) = rest.split_once(' ').unwrap_or((rest, ""));
        guid.starts_with("0x").then_some((kind, Some(guid), desc))
    } else {
        Some((kind, None, rest))
    }
}

fn hex(s: &str, line: usize) -> Result<u64, ParseError> {
    let h = s.strip_prefix("0x").unwrap_or(s);
    if h.is_empty() || h.len() > 16 {
        return err(
            line,
            format!("`{}` is not a GUID such as 0x0002c90100000001", shown(s)),
        );
    }
    u64::from_str_radix(h, 16).or_else(|_| {
        err(
            line,
            format!("`{}` is not a GUID such as 0x0002c90100000001", shown(s)),
        )
    })
}

/// `LID PORT[EXT]` at the end of `s` (the words before the brackets); returns LID, port and what
/// comes before them.
fn lid_port(s: &str, line: usize) -> Result<(u32, u32, &str), ParseError> {
    let Some(open) = s.rfind('[') else {
        return err(line, format!("expected LID PORT[..] in `{}`", shown(s)));
    };
    let before = s[..open].trim_end();
    let (rest, port) = before
        .rsplit_once(char::is_whitespace)
        .unwrap_or(("", before));
    let port: u32 = port
        .parse()
        .ok()
        .filter(|p| (1..=255).contains(p))
        .ok_or_else(|| ParseError {
            line,
            message: format!("`{}` is not a port number; valid: 1 to 255", shown(port)),
        })?;
    let rest = rest.trim_end();
    let (rest, lid) = rest.rsplit_once(char::is_whitespace).unwrap_or(("", rest));
    let lid: u32 = lid.parse().or_else(|_| {
        err(
            line,
            format!("`{}` is not a LID before port {port}", shown(lid)),
        )
    })?;
    Ok((lid, port, rest.trim()))
}

/// The link field between `==(` and `)==>`: `4X 53.125 Gbps Active/  LinkUp`, or
/// `Down/ Polling` with no rate.
fn link_rate(link: &str, line: usize) -> Result<Option<Rate>, ParseError> {
    // `-p` appends ` (HOQ:n VL_Stall:n)` to the link field.
    let link = link.split(") (HOQ:").next().unwrap_or(link);
    let Some((before, _phys)) = link.rsplit_once('/') else {
        return err(
            line,
            format!(
                "cannot read the link `{}`; expected WIDTH SPEED STATE/PHYSSTATE",
                shown(link)
            ),
        );
    };
    let before = before.trim();
    let (fields, state) = before
        .rsplit_once(char::is_whitespace)
        .unwrap_or(("", before));
    let fields = fields.trim();
    if state.eq_ignore_ascii_case("down") || fields.is_empty() {
        return Ok(None);
    }
    let (width, speed) = if let Some(rest) = fields.strip_prefix("undefined (") {
        match rest.split_once(')') {
            Some((n, speed)) => (format!("undefined ({n})"), speed),
            None => (fields.to_string(), ""),
        }
    } else {
        match fields.split_once(char::is_whitespace) {
            Some((w, s)) => (w.to_string(), s),
            None => (fields.to_string(), ""),
        }
    };
    Ok(Some(Rate::parse_iblinkinfo(&width, speed.trim())))
}

/// The far end: `LID PORT[..] "desc" (...)`, with `0x<guid>` first in `-l`; `None` for a port
/// with nothing on it (`[  ] "" ( )`, `"Port not available"`).
struct Remote {
    guid: Option<u64>,
    lid: u32,
    port: u32,
    desc: String,
}

fn remote(s: &str, line: usize) -> Result<Option<Remote>, ParseError> {
    let s = s.trim();
    let Some(q) = s.find('"') else {
        return err(
            line,
            format!(
                "cannot read the far end `{}`; expected LID PORT[..] \"description\"",
                shown(s)
            ),
        );
    };
    let head = s[..q].trim();
    let Some(end) = s.rfind('"').filter(|&e| e > q) else {
        return err(line, "unterminated quoted description");
    };
    let desc = &s[q + 1..end];
    if !head.contains(|c: char| c.is_ascii_digit()) {
        return Ok(None);
    }
    let (lid, port, before) = lid_port(head, line)?;
    let guid = match before {
        "" => None,
        g if g.starts_with("0x") => Some(hex(g, line)?),
        other => {
            return err(
                line,
                format!("unexpected `{}` before the far LID", shown(other)),
            )
        }
    };
    Ok(Some(Remote {
        guid,
        lid,
        port,
        desc: desc.to_string(),
    }))
}

/// One port line, before its far end is resolved.
struct Row {
    /// Node index (default form), or the local GUID and description (`-l`).
    node: Option<usize>,
    guid: Option<u64>,
    desc: String,
    lid: u32,
    port: u32,
    rate: Option<Rate>,
    remote: Option<Remote>,
    line: usize,
}

/// Parses and validates `iblinkinfo` output (default form or `-l`).
pub fn parse(text: &str) -> Result<Discovered, ParseError> {
    let Listing {
        mut nodes,
        mut rows,
        warnings,
        line_mode,
    } = read(strip_bom(text))?;
    if line_mode == Some(true) {
        line_nodes(&mut nodes, &mut rows)?;
    }
    number_ports(&mut nodes, &rows)?;
    let lines = port_lines(&nodes, &rows)?;
    let index: HashMap<String, usize> = nodes
        .iter()
        .enumerate()
        .map(|(n, node)| (node.id.clone(), n))
        .collect();
    let mut d = pair(nodes, &index, &lines)?;
    d.warnings = warnings;
    Ok(d)
}

/// What the lines of an output say before the ports are paired: the nodes (from the headers;
/// none in `-l`), each port's row, the tool's warnings, and the form (`Some(true)`: `-l`).
struct Listing {
    nodes: Vec<Node>,
    rows: Vec<Row>,
    warnings: Vec<crate::discovery::ToolWarning>,
    line_mode: Option<bool>,
}

/// Reads every line into nodes and port rows.
fn read(text: &str) -> Result<Listing, ParseError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut current: Option<usize> = None;
    let mut switch_guids: HashMap<u64, usize> = HashMap::new();
    let mut line_mode = None;
    let mut warnings = Vec::new();

    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if crate::discovery::is_tool_warning(t) {
            warnings.push(crate::discovery::ToolWarning {
                line,
                text: t.to_string(),
            });
            continue;
        }
        if let Some((kind, guid, desc)) = header(t) {
            if line_mode == Some(true) {
                return err(
                    line,
                    "a node header in `iblinkinfo -l` output; give one form",
                );
            }
            line_mode = Some(false);
            push_header(&mut nodes, &mut switch_guids, (kind, guid, desc), line)?;
            current = Some(nodes.len() - 1);
            continue;
        }
        let (Some(open), Some(close)) = (t.find("==("), t.find(")==>")) else {
            return err(
                line,
                format!(
                    "cannot read `{}` as iblinkinfo output: a `Switch:`/`CA:` header or a port line `LID PORT[..] ==( ... )==> ...`",
                    shown(t)
                ),
            );
        };
        if close < open {
            return err(line, "`)==>` before `==(`");
        }
        let rate = link_rate(&t[open + 3..close], line)?;
        let far = remote(&t[close + 4..], line)?;
        let (lid, port, before) = lid_port(&t[..open], line)?;
        let row = if before.contains('"') {
            // -l: 0x<guid> "<desc, right-aligned in 30 columns>"
            if line_mode == Some(false) {
                return err(
                    line,
                    "an `iblinkinfo -l` line among node headers; give one form",
                );
            }
            line_mode = Some(true);
            let (guid, desc) = line_guid_desc(before, line)?;
            Row {
                node: None,
                guid: Some(guid),
                desc,
                lid,
                port,
                rate,
                remote: far,
                line,
            }
        } else {
            let Some(node) = current else {
                return err(
                    line,
                    "port line before any `Switch:` or `CA:` header (output cut or filtered?)",
                );
            };
            let guid = port_guid(&nodes[node], before, line)?;
            Row {
                node: Some(node),
                guid,
                desc: nodes[node].desc.clone(),
                lid,
                port,
                rate,
                remote: far,
                line,
            }
        };
        rows.push(row);
    }
    Ok(Listing {
        nodes,
        rows,
        warnings,
        line_mode,
    })
}

/// A node header (`Switch: 0x... desc:` or `CA: desc:`) as a new node; a switch GUID listed twice
/// is an error.
fn push_header(
    nodes: &mut Vec<Node>,
    switch_guids: &mut HashMap<u64, usize>,
    (kind, guid, desc): (NodeType, Option<&str>, &str),
    line: usize,
) -> Result<(), ParseError> {
    let guid = guid.map(|g| hex(g, line)).transpose()?;
    if let Some(g) = guid {
        if let Some(&first) = switch_guids.get(&g) {
            return err(
                line,
                format!(
                    "switch 0x{g:016x} is listed twice (first at line {}; the same subnet concatenated twice?)",
                    nodes[first].line
                ),
            );
        }
        switch_guids.insert(g, nodes.len());
    }
    nodes.push(Node {
        kind,
        id: String::new(),
        desc: desc.to_string(),
        ports: 0,
        reported_ports: None,
        vendor_id: None,
        device_id: None,
        guid,
        sysimgguid: None,
        line,
    });
    Ok(())
}

/// The `0x<guid> "<desc>"` an `iblinkinfo -l` line has before the LID.
fn line_guid_desc(before: &str, line: usize) -> Result<(u64, String), ParseError> {
    let (guid, desc) = before
        .split_once(char::is_whitespace)
        .unwrap_or((before, ""));
    let desc = desc.trim();
    let desc = desc
        .strip_prefix('"')
        .and_then(|d| d.strip_suffix('"'))
        .ok_or_else(|| ParseError {
            line,
            message: "expected 0xGUID \"description\" before the LID".to_string(),
        })?;
    Ok((hex(guid, line)?, desc.trim_start().to_string()))
}

/// The GUID a port line under a header has before the LID: none for a switch's (its header has
/// it), the port GUID for a CA's.
fn port_guid(node: &Node, before: &str, line: usize) -> Result<Option<u64>, ParseError> {
    Ok(match (node.kind, before) {
        (NodeType::Switch, "") => None,
        (NodeType::Ca | NodeType::Router, g) if g.starts_with("0x") => Some(hex(g, line)?),
        (_, other) => {
            return err(
                line,
                format!(
                    "unexpected `{}` before the LID of a {} port",
                    shown(other),
                    if node.kind == NodeType::Switch {
                        "switch"
                    } else {
                        "CA (expected its port GUID)"
                    }
                ),
            )
        }
    })
}

/// Ports per node: each listed once; the highest is the node's port count. Nodes with no id yet
/// are named by their GUID (a CA header names none: its first port's stands in), else their line.
fn number_ports(nodes: &mut [Node], rows: &[Row]) -> Result<(), ParseError> {
    let mut listed: HashMap<(usize, u32), usize> = HashMap::new();
    let mut own: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); nodes.len()];
    for r in rows {
        let Some(n) = r.node else { continue };
        if let Some(first) = listed.insert((n, r.port), r.line) {
            return err(
                r.line,
                format!(
                    "port {} of \"{}\" is listed twice (first at line {first})",
                    r.port,
                    shown(&nodes[n].desc)
                ),
            );
        }
        own[n].insert(r.port);
    }
    for (n, node) in nodes.iter_mut().enumerate() {
        node.ports = own[n].last().copied().unwrap_or(0);
        if node.kind == NodeType::Switch {
            node.reported_ports = contiguous(&own[n]);
        }
        if node.id.is_empty() {
            let prefix = match node.kind {
                NodeType::Switch => "S",
                NodeType::Ca => "H",
                NodeType::Router => "R",
            };
            // A CA header names no GUID: its first port's GUID stands in.
            let guid = node
                .guid
                .or_else(|| rows.iter().find(|r| r.node == Some(n)).and_then(|r| r.guid));
            node.id = match guid {
                Some(g) => format!("{prefix}-{g:016x}"),
                None => format!("{prefix}-line{}", node.line),
            };
        }
    }
    Ok(())
}

/// Each row's far end: by GUID in -l; otherwise by description and port, confirmed by the far
/// line pointing back, and by LID where that leaves a choice.
fn port_lines(nodes: &[Node], rows: &[Row]) -> Result<Vec<PortLine>, ParseError> {
    let mut by_desc_port: HashMap<(&str, u32), Vec<usize>> = HashMap::new();
    let mut by_guid: HashMap<u64, usize> = HashMap::new();
    for (k, r) in rows.iter().enumerate() {
        by_desc_port
            .entry((r.desc.as_str(), r.port))
            .or_default()
            .push(k);
        if let (Some(g), Some(n)) = (r.guid, r.node) {
            by_guid.insert(g, n);
        }
    }
    let mut lines = Vec::new();
    for r in rows {
        let (Some(node), Some(far)) = (r.node, &r.remote) else {
            continue;
        };
        let far_node = match far.guid {
            Some(g) => *by_guid.get(&g).ok_or_else(|| ParseError {
                line: r.line,
                message: format!(
                    "port {} leads to 0x{g:016x} (\"{}\"), which has no line of its own",
                    r.port,
                    shown(&far.desc)
                ),
            })?,
            None => resolve(rows, &by_desc_port, r, far)?,
        };
        lines.push(PortLine {
            node,
            port: r.port,
            remote: nodes[far_node].id.clone(),
            remote_port: far.port,
            rate: r.rate,
            line: r.line,
        });
    }
    Ok(lines)
}

/// The node at the far end of `r`, found by description and port.
fn resolve(
    rows: &[Row],
    by_desc_port: &HashMap<(&str, u32), Vec<usize>>,
    r: &Row,
    far: &Remote,
) -> Result<usize, ParseError> {
    let named = by_desc_port
        .get(&(far.desc.as_str(), far.port))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if named.is_empty() {
        return err(
            r.line,
            format!(
                "port {} leads to \"{}\"[{}], which this output does not list (cut, filtered, or run with --switches-only / --cas-only? a discovery needs every node)",
                r.port,
                shown(&far.desc),
                far.port
            ),
        );
    }
    let back: Vec<usize> = named
        .iter()
        .copied()
        .filter(|&k| {
            rows[k]
                .remote
                .as_ref()
                .is_some_and(|b| b.desc == r.desc && b.port == r.port)
        })
        .collect();
    let pick: Vec<usize> = if back.len() > 1 {
        back.iter()
            .copied()
            .filter(|&k| {
                rows[k].lid == far.lid && rows[k].remote.as_ref().is_some_and(|b| b.lid == r.lid)
            })
            .collect()
    } else {
        back
    };
    match pick.as_slice() {
        [k] => rows[*k].node.ok_or_else(|| ParseError {
            line: r.line,
            message: "far end without a node".to_string(),
        }),
        [] => err(
            r.line,
            format!(
                "one-sided link: port {} leads to \"{}\"[{}], whose line does not lead back",
                r.port,
                shown(&far.desc),
                far.port
            ),
        ),
        many => err(
            r.line,
            format!(
                "port {} leads to \"{}\"[{}], which {} nodes share, LIDs included: \
                 give iblinkinfo -l output (it names GUIDs) or run a subnet manager so LIDs differ",
                r.port,
                shown(&far.desc),
                far.port,
                many.len()
            ),
        ),
    }
}

/// `-l` output: nodes from GUIDs. A GUID that lists two or more ports of its own is a switch; the
/// others are CA ports, gathered into one CA per description where their port numbers do not clash.
fn line_nodes(nodes: &mut Vec<Node>, rows: &mut [Row]) -> Result<(), ParseError> {
    let mut ports_of: HashMap<u64, BTreeSet<u32>> = HashMap::new();
    let mut order: Vec<u64> = Vec::new();
    for r in rows.iter() {
        let Some(g) = r.guid else { continue };
        let set = ports_of.entry(g).or_insert_with(|| {
            order.push(g);
            BTreeSet::new()
        });
        set.insert(r.port);
    }
    let mut node_of: HashMap<u64, usize> = HashMap::new();
    let mut ca_by_desc: HashMap<String, Vec<usize>> = HashMap::new();
    let mut node_ports: Vec<BTreeSet<u32>> = Vec::new();
    for g in order {
        let ports = &ports_of[&g];
        let first = rows.iter().find(|r| r.guid == Some(g));
        let (desc, line) = first.map_or((String::new(), 0), |r| (r.desc.clone(), r.line));
        let switch = ports.len() >= 2;
        let merge = (!switch && !desc.is_empty())
            .then(|| ca_by_desc.get(&desc))
            .flatten()
            .and_then(|c| {
                c.iter()
                    .copied()
                    .find(|&n| node_ports[n].is_disjoint(ports))
            });
        let n = match merge {
            Some(n) => n,
            None => {
                nodes.push(Node {
                    kind: if switch {
                        NodeType::Switch
                    } else {
                        NodeType::Ca
                    },
                    id: format!("{}-{g:016x}", if switch { "S" } else { "H" }),
                    desc: desc.clone(),
                    ports: 0,
                    reported_ports: None,
                    vendor_id: None,
                    device_id: None,
                    guid: switch.then_some(g),
                    sysimgguid: None,
                    line,
                });
                node_ports.push(BTreeSet::new());
                if !switch {
                    ca_by_desc.entry(desc).or_default().push(nodes.len() - 1);
                }
                nodes.len() - 1
            }
        };
        node_ports[n].extend(ports.iter().copied());
        node_of.insert(g, n);
    }
    for r in rows.iter_mut() {
        r.node = r.guid.and_then(|g| node_of.get(&g).copied());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::{Speed, Width};

    /// From the real iblinkinfo (infiniband-diags 44) against ibsim: a two-switch fabric, LIDs all
    /// 0 as no subnet manager ran, one switch port unused.
    const SAMPLE: &str = "CA: srv1 hca1:
      0x0002c90200000011      0    1[  ] ==( 4X        53.125 Gbps Initialize/  LinkUp)==>       0    1[  ] \"leafA\" (Could be 12X )
Switch: 0x0002c90100000002 leafB:
           0    1[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
           0    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
           0    3[  ] ==( 4X        53.125 Gbps Initialize/  LinkUp)==>       0    3[  ] \"leafA\" (Could be 12X )
Switch: 0x0002c90100000001 leafA:
           0    1[  ] ==( 4X        53.125 Gbps Initialize/  LinkUp)==>       0    1[  ] \"srv1 hca1\" (Could be 12X )
           0    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
           0    3[  ] ==( 4X        53.125 Gbps Initialize/  LinkUp)==>       0    3[  ] \"leafB\" (Could be 12X )
";

    #[test]
    fn reads_nodes_links_rates_and_port_counts() {
        let d = parse(SAMPLE).unwrap();
        let names: Vec<(&str, NodeType, u32, Option<u32>)> = d
            .nodes
            .iter()
            .map(|n| (n.desc.as_str(), n.kind, n.ports, n.reported_ports))
            .collect();
        assert_eq!(
            names,
            [
                ("srv1 hca1", NodeType::Ca, 1, None),
                ("leafB", NodeType::Switch, 3, Some(3)),
                ("leafA", NodeType::Switch, 3, Some(3)),
            ]
        );
        assert_eq!(d.links.len(), 2);
        let hdr = Rate {
            width: Width::X4,
            speed: Speed::Hdr,
        };
        assert!(d.links.iter().all(|l| l.rate == Some(hdr)));
        assert_eq!(
            crate::discovery::detect(SAMPLE),
            crate::discovery::Format::Iblinkinfo
        );
    }

    /// libibnetdisc under iblinkinfo prints a failed query as ibnetdiscover does; it is kept as a
    /// warning and the listing reads on.
    #[test]
    fn a_failed_query_line_is_a_warning() {
        let warn = "src/query_smp.c:199; umad (DR path slid 0; dlid 0; 0,1,20,34 Attr 0x11:0) bad status 110; Connection timed out";
        let d = parse(&format!("{warn}\n{SAMPLE}")).unwrap();
        assert_eq!(d.links, {
            let mut l = parse(SAMPLE).unwrap().links;
            for x in &mut l {
                x.line += 1;
            }
            l
        });
        assert_eq!(d.warnings.len(), 1);
        assert_eq!(d.warnings[0].route(), Some("0,1,20,34"));
    }

    #[test]
    fn line_mode_reads_the_same_fabric() {
        let text = "0x0002c90200000011 \"                     srv1 hca1\"      0    1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  0x0002c90100000001      0    1[  ] \"leafA\" ( )
0x0002c90100000001 \"                         leafA\"      0    1[  ] ==( 4X 53.125 Gbps Active/  LinkUp)==>  0x0002c90200000011      0    1[  ] \"srv1 hca1\" ( )
0x0002c90100000001 \"                         leafA\"      0    2[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )
";
        let d = parse(text).unwrap();
        assert_eq!(d.nodes.len(), 2);
        assert_eq!(d.nodes[1].kind, NodeType::Switch);
        assert_eq!(d.nodes[0].desc, "srv1 hca1");
        assert_eq!(d.links.len(), 1);
    }

    #[test]
    fn errors_name_the_line() {
        // The far end's own line is missing (a switches-only listing).
        let only_switches: String = SAMPLE.lines().skip(2).map(|l| format!("{l}\n")).collect();
        let e = parse(&only_switches).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.contains("does not list"), "{e}");
        // A port line with no header above it.
        let e = parse(&SAMPLE.lines().skip(1).collect::<Vec<_>>().join("\n")).unwrap_err();
        assert_eq!(e.line, 1, "{e}");
        // A broken port number.
        let e = parse(&SAMPLE.replacen("0    3[  ] ==( 4X", "0    x[  ] ==( 4X", 1)).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
    }

    #[test]
    fn unknown_and_fdr10_speeds_are_kept() {
        let text = SAMPLE
            .replace(
                "53.125 Gbps Initialize/  LinkUp)==>       0    1[  ] \"leafA\"",
                "10.0 Gbps (FDR10) Active/  LinkUp)==>       0    1[  ] \"leafA\"",
            )
            .replace(
                "53.125 Gbps Initialize/  LinkUp)==>       0    1[  ] \"srv1 hca1\"",
                "undefined (64) Active/  LinkUp)==>       0    1[  ] \"srv1 hca1\"",
            );
        let d = parse(&text).unwrap();
        let l = d.links.iter().find(|l| l.a.1 == 1 || l.b.1 == 1).unwrap();
        // The CA's end says FDR10, the switch's end cannot name its speed: the link is FDR10.
        assert_eq!(l.rate.unwrap().speed, Speed::Fdr10);
    }
}
