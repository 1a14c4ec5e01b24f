//! Parse ibnetdiscover topology output (and ibsim topology files, which share its syntax).
//!
//! Two steps, as smoltcp parses packets: [`parse`] reads lines into records and checks each record's
//! shape, then checks the records against each other (every link listed at both ends and agreeing) and
//! returns a validated [`Discovered`]. Every error names its line. The parser never panics on any input;
//! a property test feeds it arbitrary text.
//!
//! Syntax (shared/reference/infiniband-tools.md, and ibnetdiscover's own output):
//! ```text
//! vendid=0x2c9                                  directives apply to the next node
//! switchguid=0x2c90002000001(2c90002000001)
//! Switch  8 "S-0002c90002000001"   # "spine02" enhanced port 0 lid 5 lmc 0
//! [1]  "S-0002c90001000000"[6]     # "leaf01" lid 2 4xHDR
//! [2]  "H-00080000000000c0"[1](80000000000c1)   # "node0013 mlx5_0" lid 19 4xHDR
//! caguid=0x80000000000e0
//! Ca  1 "H-00080000000000e0"       # "node0015 mlx5_0"
//! [1](80000000000e1)  "S-0002c90001000003"[3]   # lid 21 lmc 0 "leaf04" lid 7 4xHDR
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// A parse error at a line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// What kind of node a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeType {
    Switch,
    Ca,
    Router,
}

/// One node record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeType,
    /// The quoted node id (`S-0002c9...` in ibnetdiscover output, a name in ibsim files).
    pub id: String,
    /// The node description (`# "..."` after the header), or the id when there is none.
    pub desc: String,
    pub ports: u32,
    pub guid: Option<u64>,
    pub sysimgguid: Option<u64>,
    /// Line of the header.
    pub line: usize,
}

/// One link, stored once, with its two ends as (node index, port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub a: (usize, u32),
    pub b: (usize, u32),
    /// Width and speed as printed (`4xHDR`), when the output says.
    pub rate: Option<String>,
    /// Line of the first port line that names this link.
    pub line: usize,
}

/// A validated discovered fabric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Discovered {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
}

impl Discovered {
    /// Index of a node by description.
    pub fn by_desc(&self) -> BTreeMap<&str, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.desc.as_str(), i))
            .collect()
    }
}

/// A port line before its link is checked against the other end.
#[derive(Debug, Clone)]
struct PortLine {
    node: usize,
    port: u32,
    remote: String,
    remote_port: u32,
    rate: Option<String>,
    line: usize,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

/// Parses a hexadecimal GUID (`0x2c9...`), ignoring a `(...)` suffix as ibnetdiscover prints it.
fn parse_guid(s: &str, line: usize) -> Result<u64, ParseError> {
    let v = s.split('(').next().unwrap_or("").trim();
    let hex = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .unwrap_or(v);
    if hex.is_empty() || hex.len() > 16 {
        return err(
            line,
            format!("`{s}` is not a GUID; expected up to 16 hex digits such as 0x0002c90001000001"),
        );
    }
    u64::from_str_radix(hex, 16).or_else(|_| {
        err(
            line,
            format!("`{s}` is not a GUID; expected hex digits such as 0x0002c90001000001"),
        )
    })
}

/// Reads a double-quoted string at the start of `s`; returns it and the rest.
fn quoted(s: &str, line: usize, what: &str) -> Result<(String, String), ParseError> {
    let s = s.trim_start();
    let Some(rest) = s.strip_prefix('"') else {
        return err(line, format!("expected a quoted {what}"));
    };
    match rest.find('"') {
        Some(end) => Ok((rest[..end].to_string(), rest[end + 1..].to_string())),
        None => err(line, format!("unterminated quoted {what}")),
    }
}

/// Reads `[N]` at the start of `s`; returns N and the rest.
fn bracket_num(s: &str, line: usize, what: &str) -> Result<(u32, String), ParseError> {
    let s = s.trim_start();
    let Some(rest) = s.strip_prefix('[') else {
        return err(line, format!("expected [{what}]"));
    };
    let Some(end) = rest.find(']') else {
        return err(line, format!("unterminated [{what}]"));
    };
    let n: u32 = rest[..end]
        .trim()
        .parse()
        .or_else(|_| err(line, format!("`{}` is not a {what} number", &rest[..end])))?;
    if n == 0 || n > 255 {
        return err(line, format!("{what} {n} is out of range; valid: 1 to 255"));
    }
    Ok((n, rest[end + 1..].to_string()))
}

/// Skips a `(guid)` right at the start of `s`, checking it is a GUID.
fn skip_paren_guid(s: &str, line: usize) -> Result<String, ParseError> {
    let t = s.trim_start();
    if let Some(rest) = t.strip_prefix('(') {
        let Some(end) = rest.find(')') else {
            return err(line, "unterminated (port GUID)");
        };
        parse_guid(&rest[..end], line)?;
        return Ok(rest[end + 1..].to_string());
    }
    Ok(s.to_string())
}

/// The `NxSPEED` token in a trailing comment, if any (`4xHDR`, `2xNDR`).
fn rate_in(comment: &str) -> Option<String> {
    comment
        .split_whitespace()
        .find(|w| {
            let mut it = w.splitn(2, 'x');
            matches!((it.next(), it.next()), (Some(n), Some(sp)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && !sp.is_empty() && sp.chars().all(|c| c.is_ascii_uppercase()))
        })
        .map(str::to_string)
}

/// The first quoted string in a comment (`# "leaf01" lid 2 4xHDR` -> `leaf01`).
fn first_quoted(comment: &str) -> Option<String> {
    let start = comment.find('"')?;
    let rest = &comment[start + 1..];
    let end = rest.find('"')?;
    Some(rest[..end].to_string())
}

/// Parses and validates a topology. `origin` is only for callers' messages.
pub fn parse(text: &str) -> Result<Discovered, ParseError> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut lines: Vec<PortLine> = Vec::new();
    let (mut guid, mut sysimg): (Option<u64>, Option<u64>) = (None, None);
    let mut current: Option<usize> = None;
    // Node id -> index, and the (node, port) pairs already listed: lookups stay O(1) on big fabrics.
    let mut ids: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut listed: std::collections::HashSet<(usize, u32)> = std::collections::HashSet::new();

    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            current = None;
            continue;
        }
        if t.starts_with('#') {
            continue;
        }
        if let Some((key, value)) = t
            .split_once('=')
            .filter(|(k, _)| !k.contains(char::is_whitespace) && !k.starts_with('['))
        {
            match key {
                "switchguid" | "caguid" | "rtguid" => guid = Some(parse_guid(value, line)?),
                "sysimgguid" => sysimg = Some(parse_guid(value, line)?),
                "vendid" | "devid" => {
                    parse_guid(value, line)?;
                }
                // ibsim global directives (width=, speed=, extspeed=, do ...) are settings, not topology.
                "width" | "speed" | "extspeed" | "fdr10" | "mlnx" => {}
                _ => return err(line, format!("unknown directive `{key}`; valid: switchguid, caguid, rtguid, sysimgguid, vendid, devid")),
            }
            current = None;
            continue;
        }
        let first = t.split_whitespace().next().unwrap_or("");
        let kind = match first {
            "Switch" => Some(NodeType::Switch),
            "Ca" | "Hca" => Some(NodeType::Ca),
            "Rt" => Some(NodeType::Router),
            _ => None,
        };
        if let Some(kind) = kind {
            let rest = &t[first.len()..];
            let rest = rest.trim_start();
            let num_end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let ports: u32 = rest[..num_end].parse().or_else(|_| {
                err(
                    line,
                    format!("{first} record needs a port count before its id"),
                )
            })?;
            if ports == 0 || ports > 255 {
                return err(line, format!("{first} with {ports} ports; valid: 1 to 255"));
            }
            let (id, after) = quoted(&rest[num_end..], line, "node id")?;
            if id.is_empty() {
                return err(line, "empty node id");
            }
            let desc = after
                .split_once('#')
                .and_then(|(_, c)| first_quoted(c))
                .unwrap_or_else(|| id.clone());
            if ids.insert(id.clone(), nodes.len()).is_some() {
                return err(line, format!("node \"{id}\" is described twice"));
            }
            nodes.push(Node {
                kind,
                id,
                desc,
                ports,
                guid: guid.take(),
                sysimgguid: sysimg.take(),
                line,
            });
            current = Some(nodes.len() - 1);
            continue;
        }
        if t.starts_with('[') {
            let Some(node) = current else {
                return err(line, "port line outside a Switch, Ca or Rt record (a record header must come first, with no blank line between)");
            };
            let (port, rest) = bracket_num(t, line, "port")?;
            if port > nodes[node].ports {
                return err(
                    line,
                    format!(
                        "port {port} on \"{}\", which has {} ports",
                        nodes[node].id, nodes[node].ports
                    ),
                );
            }
            let rest = skip_paren_guid(&rest, line)?;
            let (remote, rest) = quoted(&rest, line, "remote node id")?;
            let (remote_port, rest) = bracket_num(&rest, line, "remote port")?;
            let rest = skip_paren_guid(&rest, line)?;
            let (settings, comment) = rest.split_once('#').unwrap_or((rest.as_str(), ""));
            for s in settings.split_whitespace() {
                let ok = s
                    .split_once('=')
                    .is_some_and(|(k, v)| matches!(k, "w" | "s" | "e") && v.parse::<u32>().is_ok());
                if !ok {
                    return err(
                        line,
                        format!(
                            "unexpected `{s}` on a port line; valid: w=N s=N e=N, then a # comment"
                        ),
                    );
                }
            }
            if !listed.insert((node, port)) {
                return err(
                    line,
                    format!("port {port} of \"{}\" is listed twice", nodes[node].id),
                );
            }
            lines.push(PortLine {
                node,
                port,
                remote,
                remote_port,
                rate: rate_in(comment),
                line,
            });
            continue;
        }
        return err(
            line,
            format!(
                "cannot read `{}`; expected a directive, a Switch/Ca/Rt header or a [port] line",
                truncate(t)
            ),
        );
    }

    // Every link must be listed at both ends, and the ends must agree.
    let index = ids;
    let mut at: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for (k, l) in lines.iter().enumerate() {
        at.insert((l.node, l.port), k);
    }
    let mut links = Vec::new();
    for l in &lines {
        let Some(&r) = index.get(&l.remote) else {
            return err(
                l.line,
                format!(
                    "port {} leads to \"{}\", which has no record",
                    l.port, l.remote
                ),
            );
        };
        if l.remote_port > nodes[r].ports {
            return err(
                l.line,
                format!(
                    "\"{}\" has {} ports, not port {}",
                    l.remote, nodes[r].ports, l.remote_port
                ),
            );
        }
        let Some(&k) = at.get(&(r, l.remote_port)) else {
            return err(
                l.line,
                format!(
                    "one-sided link: \"{}\"[{}] lists \"{}\"[{}], but that port's record does not list it back",
                    nodes[l.node].id, l.port, l.remote, l.remote_port
                ),
            );
        };
        let back = &lines[k];
        if back.remote != nodes[l.node].id || back.remote_port != l.port {
            return err(
                l.line,
                format!(
                    "link ends disagree: \"{}\"[{}] lists \"{}\"[{}], which lists \"{}\"[{}] (line {})",
                    nodes[l.node].id, l.port, l.remote, l.remote_port, back.remote, back.remote_port, back.line
                ),
            );
        }
        if (l.node, l.port) == (r, l.remote_port) {
            return err(l.line, "a port linked to itself");
        }
        if (l.node, l.port) < (r, l.remote_port) {
            links.push(Link {
                a: (l.node, l.port),
                b: (r, l.remote_port),
                rate: l.rate.clone().or_else(|| back.rate.clone()),
                line: l.line.min(back.line),
            });
        }
    }
    links.sort_by_key(|l| (l.a, l.b));
    Ok(Discovered { nodes, links })
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"#
# Topology file: generated on Mon Nov 30 13:39:41 2026
#
vendid=0x2c9
devid=0xd2f0
sysimgguid=0x2c90001000002
switchguid=0x2c90001000002(2c90001000002)
Switch	4 "S-0002c90001000002"		# "leafB" base port 0 lid 0 lmc 0
[3]	"S-0002c90001000001"[3]		# "leafA" lid 0 4xHDR

vendid=0x2c9
switchguid=0x2c90001000001(2c90001000001)
Switch	4 "S-0002c90001000001"		# "leafA" base port 0 lid 0 lmc 0
[1]	"H-0008000000000010"[1](8000000000011) 		# "srv1 hca1" lid 0 4xHDR
[3]	"S-0002c90001000002"[3]		# "leafB" lid 0 4xHDR

vendid=0x2c9
caguid=0x8000000000010
Ca	1 "H-0008000000000010"		# "srv1 hca1"
[1](8000000000011) 	"S-0002c90001000001"[1]		# lid 0 lmc 0 "leafA" lid 0 4xHDR
"#;

    #[test]
    fn parses_ibnetdiscover_output() {
        let d = parse(SAMPLE).unwrap();
        assert_eq!(d.nodes.len(), 3);
        assert_eq!(d.nodes[0].desc, "leafB");
        assert_eq!(d.nodes[0].guid, Some(0x2c90001000002));
        assert_eq!(d.nodes[2].kind, NodeType::Ca);
        assert_eq!(d.nodes[2].desc, "srv1 hca1");
        assert_eq!(d.links.len(), 2);
        assert!(d.links.iter().all(|l| l.rate.as_deref() == Some("4xHDR")));
    }

    fn error_line(text: &str) -> usize {
        parse(text).unwrap_err().line
    }

    #[test]
    fn one_sided_link_names_its_line() {
        let text = SAMPLE.replace(
            "[3]\t\"S-0002c90001000001\"[3]\t\t# \"leafA\" lid 0 4xHDR\n",
            "",
        );
        let e = parse(&text).unwrap_err();
        assert!(e.message.contains("one-sided"), "{e}");
        assert_eq!(e.line, 14);
    }

    #[test]
    fn bad_guid_truncated_record_and_garbage_name_lines() {
        assert_eq!(error_line("switchguid=0xZZ\n"), 1);
        assert_eq!(error_line("vendid=0x2c9\nSwitch 4 \"S-1\n"), 2);
        assert_eq!(error_line("Switch 4 \"a\"\n[1] \"b\"[1]\n"), 2);
        assert_eq!(error_line("hello world\n"), 1);
        assert_eq!(error_line("[1] \"x\"[1]\n"), 1);
        assert_eq!(error_line("Switch 4 \"a\"\n[9] \"b\"[1]\n"), 2);
    }
}
