//! Parse ibnetdiscover topology output (and ibsim topology files, which share its syntax), or its
//! per-port form (`ibnetdiscover -p`); [`parse`] tells them apart by the first line.
//!
//! Two steps, as smoltcp parses packets: [`parse`] reads lines into records and checks each record's
//! shape, then checks the records against each other (every link listed at both ends and agreeing) and
//! returns a validated [`Discovered`]. Every error names its line. The parser never panics on any input;
//! a property test feeds it arbitrary text.
//!
//! Syntax, as infiniband-diags' ibnetdiscover.c prints it (and shared/reference/infiniband-tools.md):
//! ```text
//! vendid=0x2c9                                  directives apply to the next node
//! switchguid=0x2c90002000001(2c90002000001)     GUIDs without leading zeros
//! Switch  8 "S-0002c90002000001"   # "spine02" enhanced port 0 lid 5 lmc 0
//! [1]  "S-0002c90001000000"[6]     # "leaf01" lid 2 4xHDR
//! [2]  "H-00080000000000c0"[1](80000000000c1)   # "node0013 mlx5_0" lid 19 4xHDR
//! caguid=0x80000000000e0
//! Ca  1 "H-00080000000000e0"       # "node0015 mlx5_0"
//! [1](80000000000e1)  "S-0002c90001000003"[3]   # lid 21 lmc 0 "leaf04" lid 7 4xHDR
//! ```
//! Records may or may not be separated by blank lines; a port line belongs to the last header.
//! Descriptions may hold any character (`#` and `"` included: a description runs to the last quote).
//! The rate is the word after the last `lid N` of a port line's comment (`4xHDR`, `4x???`, `??HDR`,
//! any case; see [`crate::rate`]); `-f` adds ` s=N w=N v=N` after it. Grouping (`-g`) adds
//! `Chassis N (guid ...)`, `Non-Chassis Nodes` and `Hostname:` lines and `[ext N]` port suffixes,
//! which are read past, as are the lines `-s` (`--show`) prints before the topology
//! ([`is_progress_line`]). Several runs concatenated (one subnet each) read as one file.

use crate::discovery::{err, is_tool_warning, pair, shown, strip_bom, PortLine, ToolWarning};
pub use crate::discovery::{Discovered, Link, Node, NodeType, ParseError};
use crate::rate::{Rate, Speed, Width};
use std::collections::{HashMap, HashSet};

mod ports;

pub(crate) use ports::is_port_line;

/// Parses a `vendid=` or `devid=` value: hex as ibnetdiscover prints it (`0x2c9`, `0x1013`), at
/// most `max` (the NodeInfo field's width).
fn node_info_id(s: &str, line: usize, key: &str, max: u32) -> Result<u32, ParseError> {
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    match u32::from_str_radix(hex, 16) {
        Ok(v) if v <= max && !hex.is_empty() => Ok(v),
        _ => err(
            line,
            format!(
                "{key}=`{}` is not a NodeInfo id; expected hex of at most {max:#x}, such as {}",
                shown(s),
                if key == "vendid" { "0x2c9" } else { "0x1013" }
            ),
        ),
    }
}

/// Parses a hexadecimal GUID (`0x2c9...`, leading zeros optional), ignoring a `(...)` suffix as
/// ibnetdiscover prints it.
fn parse_guid(s: &str, line: usize) -> Result<u64, ParseError> {
    let v = s.split('(').next().unwrap_or("").trim();
    let hex = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .unwrap_or(v);
    if hex.is_empty() || hex.len() > 16 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return err(
            line,
            format!(
                "`{}` is not a GUID; expected up to 16 hex digits such as 0x0002c90001000001",
                shown(s)
            ),
        );
    }
    u64::from_str_radix(hex, 16).or_else(|_| {
        err(
            line,
            format!(
                "`{}` is not a GUID; expected hex digits such as 0x0002c90001000001",
                shown(s)
            ),
        )
    })
}

/// Reads a double-quoted string at the start of `s`; returns it and the rest.
fn quoted<'a>(s: &'a str, line: usize, what: &str) -> Result<(&'a str, &'a str), ParseError> {
    let s = s.trim_start();
    let Some(rest) = s.strip_prefix('"') else {
        return err(line, format!("expected a quoted {what}"));
    };
    match rest.find('"') {
        Some(end) => Ok((&rest[..end], &rest[end + 1..])),
        None => err(line, format!("unterminated quoted {what}")),
    }
}

/// Reads `[N]` at the start of `s`; returns N and the rest.
fn bracket_num<'a>(s: &'a str, line: usize, what: &str) -> Result<(u32, &'a str), ParseError> {
    let s = s.trim_start();
    let Some(rest) = s.strip_prefix('[') else {
        return err(line, format!("expected [{what}]"));
    };
    let Some(end) = rest.find(']') else {
        return err(line, format!("unterminated [{what}]"));
    };
    let n: u32 = rest[..end].trim().parse().or_else(|_| {
        err(
            line,
            format!("`{}` is not a {what} number", shown(&rest[..end])),
        )
    })?;
    if n == 0 || n > 255 {
        return err(line, format!("{what} {n} is out of range; valid: 1 to 255"));
    }
    Ok((n, &rest[end + 1..]))
}

/// Skips a `[ext N]` external-port suffix (`ibnetdiscover -g`) right at the start of `s`.
fn skip_ext(s: &str) -> &str {
    let t = s.trim_start();
    match t
        .strip_prefix("[ext")
        .and_then(|r| r.find(']').map(|e| &r[e + 1..]))
    {
        Some(rest) => rest,
        None => s,
    }
}

/// Skips a `(guid)` right at the start of `s`, checking it is a GUID.
fn skip_paren_guid(s: &str, line: usize) -> Result<&str, ParseError> {
    let t = s.trim_start();
    if let Some(rest) = t.strip_prefix('(') {
        let Some(end) = rest.find(')') else {
            return err(line, "unterminated (port GUID)");
        };
        parse_guid(&rest[..end], line)?;
        return Ok(&rest[end + 1..]);
    }
    Ok(s)
}

/// The rate in a port line's comment. ibnetdiscover ends the comment with `lid N RATE` (after the
/// remote description, which is quoted and may hold anything, so only the text after its closing
/// quote is read); ibsim topology files written by railyard carry a bare rate (`# 4xHDR`). A word
/// after `lid N` that is no rate is an error; no word there (or no rate at all) is no rate.
/// The rate ibsim brings a port up at from its settings (crate::export's format): the widest width
/// of the `w=` mask (1x = 1, 4x = 2) and the fastest speed of the `e=` mask (FDR = 1, EDR = 2,
/// HDR = 4), else of the `s=` mask (SDR = 1, DDR = 2, QDR = 4); `None` without a width and a speed.
fn settings_rate(w: Option<u32>, s: Option<u32>, e: Option<u32>) -> Option<Rate> {
    let width = match w? {
        m if m & 2 != 0 => Width::X4,
        m if m & 1 != 0 => Width::X1,
        _ => return None,
    };
    let speed = match (e.unwrap_or(0), s.unwrap_or(0)) {
        (e, _) if e & 4 != 0 => Speed::Hdr,
        (e, _) if e & 2 != 0 => Speed::Edr,
        (e, _) if e & 1 != 0 => Speed::Fdr,
        (_, s) if s & 4 != 0 => Speed::Qdr,
        (_, s) if s & 2 != 0 => Speed::Ddr,
        (_, s) if s & 1 != 0 => Speed::Sdr,
        _ => return None,
    };
    Some(Rate { width, speed })
}

/// A port line's rate: the comment's (a discovery's, or the true rate an export notes beside the
/// nearest settings ibsim knows: NDR written as HDR) where the settings bring the port up at what
/// ibsim shows of it, else the settings' (ibsim runs the port at them, whatever the comment says).
fn port_rate(settings: Option<Rate>, comment: Option<Rate>) -> Option<Rate> {
    match (settings, comment) {
        (Some(s), Some(c)) if c.as_ibsim() != s => Some(s),
        (Some(s), None) => Some(s),
        (_, c) => c,
    }
}

fn rate_in(comment: &str, line: usize) -> Result<Option<Rate>, ParseError> {
    let tail = comment.rfind('"').map_or(comment, |q| &comment[q + 1..]);
    let words: Vec<&str> = tail.split_whitespace().collect();
    let lid = words
        .windows(2)
        .rposition(|w| w[0] == "lid" && w[1].parse::<u32>().is_ok());
    match lid {
        Some(k) => match words.get(k + 2) {
            None => Ok(None),
            Some(w) => Rate::parse_compact(w).map(Some).ok_or_else(|| ParseError {
                line,
                message: format!(
                    "`{}` stands where the link rate belongs (after `lid {}`); expected a width and speed such as 4xHDR, 4xFDR10 or 4x???",
                    shown(w),
                    words[k + 1]
                ),
            }),
        },
        None => Ok(words.iter().find_map(|w| Rate::parse_compact(w))),
    }
}

/// The description in a record header's comment: `# "leaf01" enhanced port 0 lid 5 lmc 0` for a
/// switch, `# "srv1 mlx5_0"` for a CA. Descriptions can hold `#` and `"`, so a switch's runs to the
/// quote before ` enhanced port 0` / ` base port 0`, and a CA's to the last quote.
fn header_desc(comment: &str) -> Option<&str> {
    let c = comment.trim_start().strip_prefix('"')?;
    let end = ["\" enhanced port 0", "\" base port 0"]
        .iter()
        .filter_map(|m| c.rfind(m))
        .max()
        .or_else(|| c.rfind('"'))?;
    Some(&c[..end])
}

/// The line PuTTY writes at the top of a session log (`=~=~=~=~=~=~=~=~=~=~=~= PuTTY log
/// 2021.06.15 12:06:05 =~=~=~=~=~=~=~=~=~=~=~=`), where the output was captured that way.
fn is_terminal_log_header(t: &str) -> bool {
    t.starts_with("=~=~=") && t.contains(" PuTTY log ")
}

/// Lines `ibnetdiscover -g` prints around records: `Chassis 2 (guid 0x...)`, `Non-Chassis Nodes`,
/// `Hostname: name`.
fn is_grouping_line(t: &str) -> bool {
    t == "Non-Chassis Nodes"
        || t.starts_with("Hostname: ")
        || t.strip_prefix("Chassis ").is_some_and(|r| {
            r.split_whitespace()
                .next()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
}

/// Whether a line is one `ibnetdiscover -s` (`--show`) prints as it walks the fabric, before the
/// topology: `DR path slid 0; dlid 0; 0,1,19 -> new Switch {00066a00eb002c9d} portnum 0 lid 0-0 ""`
/// (libibnetdisc's `dump_endnode`: the directed route, `new` or `known`, the node type, GUID, port,
/// LID range and description; older releases print `base lid`). It names nodes, not links, and the
/// records or `-p` lines that follow hold everything it says, so it is read past in either form.
pub fn is_progress_line(t: &str) -> bool {
    t.strip_prefix("DR path ").is_some_and(|r| {
        r.split_once(" -> ").is_some_and(|(_, after)| {
            let mut w = after.split_whitespace();
            matches!(w.next(), Some("new" | "known")) && after.contains(" {")
        })
    })
}

/// The first line of `text` that is neither blank, a `#` comment nor an [`is_progress_line`],
/// trimmed: the one that tells the formats apart.
pub(crate) fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !l.starts_with('#')
                && !is_progress_line(l)
                && !is_tool_warning(l)
                && !is_terminal_log_header(l)
        })
        .unwrap_or("")
}

/// Parses and validates a topology in either ibnetdiscover form.
pub fn parse(text: &str) -> Result<Discovered, ParseError> {
    let text = strip_bom(text);
    if is_port_line(first_line(text)) {
        return ports::parse_ports(text);
    }
    let mut nodes: Vec<Node> = Vec::new();
    let mut lines: Vec<PortLine> = Vec::new();
    let mut pending = NodeInfo::default();
    let mut current: Option<usize> = None;
    // Node id -> index, and the (node, port) pairs already listed: lookups stay O(1) on big fabrics.
    let mut ids: HashMap<String, usize> = HashMap::new();
    let mut listed: HashSet<(usize, u32)> = HashSet::new();
    let mut warnings = Vec::new();

    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty()
            || t.starts_with('#')
            || is_grouping_line(t)
            || is_progress_line(t)
            || is_terminal_log_header(t)
        {
            continue;
        }
        if is_tool_warning(t) {
            warnings.push(ToolWarning {
                line,
                text: t.to_string(),
            });
            continue;
        }
        if let Some((key, value)) = t
            .split_once('=')
            .filter(|(k, _)| !k.contains(char::is_whitespace) && !k.starts_with('['))
        {
            directive(key, value, line, &mut pending)?;
            current = None;
            continue;
        }
        // The record keyword, then its port count: `Switch\t36` as ibnetdiscover prints it, or
        // `Switch36` where a terminal log dropped the tab (a PuTTY session log does).
        if let Some((kind, ports, id, desc)) = record_header(t, line)? {
            if ids.insert(id.to_string(), nodes.len()).is_some() {
                return err(
                    line,
                    format!(
                        "node \"{}\" is described twice (the same subnet concatenated twice?)",
                        shown(id)
                    ),
                );
            }
            nodes.push(Node {
                kind,
                id: id.to_string(),
                desc,
                ports,
                reported_ports: Some(ports),
                guid: pending.guid.take(),
                sysimgguid: pending.sysimg.take(),
                vendor_id: pending.vendor.take(),
                device_id: pending.device.take(),
                line,
            });
            current = Some(nodes.len() - 1);
            continue;
        }
        if t.starts_with('[') {
            let Some(node) = current else {
                return err(
                    line,
                    "port line outside a Switch, Ca or Rt record (a record header must come first)",
                );
            };
            let (port, remote, remote_port, settings, comment) =
                port_fields(t, line, &nodes[node])?;
            let (w, sp, e) = port_settings(settings, line)?;
            if !listed.insert((node, port)) {
                return err(
                    line,
                    format!(
                        "port {port} of \"{}\" is listed twice",
                        shown(&nodes[node].id)
                    ),
                );
            }
            lines.push(PortLine {
                node,
                port,
                remote: remote.to_string(),
                remote_port,
                rate: port_rate(settings_rate(w, sp, e), rate_in(comment, line)?),
                line,
            });
            continue;
        }
        return err(
            line,
            format!(
                "cannot read `{}`; expected a directive, a Switch/Ca/Rt header or a [port] line",
                shown(t)
            ),
        );
    }

    let mut d = pair(nodes, &ids, &lines)?;
    d.warnings = warnings;
    Ok(d)
}

/// The directives read since the last record, for the record they precede.
#[derive(Default)]
struct NodeInfo {
    guid: Option<u64>,
    sysimg: Option<u64>,
    vendor: Option<u32>,
    device: Option<u32>,
}

/// A `key=value` directive line, into `pending`.
fn directive(
    key: &str,
    value: &str,
    line: usize,
    pending: &mut NodeInfo,
) -> Result<(), ParseError> {
    // `-g` appends comments to directives: `# Chassis N (...)` to sysimgguid and the chassis
    // type and slot to switchguid (ibnetdiscover.c `out_ids`, `out_switch`).
    let value = value.split('#').next().unwrap_or("").trim();
    match key {
        "switchguid" | "caguid" | "rtguid" => pending.guid = Some(parse_guid(value, line)?),
        "sysimgguid" => pending.sysimg = Some(parse_guid(value, line)?),
        // NodeInfo's VendorID is 24 bits wide and its DeviceID 16 (IBA vol. 1, 14.2.5.3).
        "vendid" => pending.vendor = Some(node_info_id(value, line, key, 0xff_ffff)?),
        "devid" => pending.device = Some(node_info_id(value, line, key, 0xffff)?),
        // ibsim global directives (width=, speed=, extspeed=, do ...) are settings, not topology.
        "width" | "speed" | "extspeed" | "fdr10" | "mlnx" => {}
        _ => {
            return err(
                line,
                format!(
                    "unknown directive `{}`; valid: switchguid, caguid, rtguid, sysimgguid, vendid, devid",
                    shown(key)
                ),
            )
        }
    }
    Ok(())
}

/// A record header (`Switch\t36 "S-..."  # "desc"`): its type, port count, id and description;
/// `None` when the line is no header.
fn record_header(
    t: &str,
    line: usize,
) -> Result<Option<(NodeType, u32, &str, String)>, ParseError> {
    let keyword = [
        ("Switch", NodeType::Switch),
        ("Hca", NodeType::Ca),
        ("Ca", NodeType::Ca),
        ("Rt", NodeType::Router),
    ]
    .into_iter()
    .find(|(k, _)| {
        t.strip_prefix(k)
            .is_some_and(|r| r.starts_with(|c: char| c.is_whitespace() || c.is_ascii_digit()))
    });
    let Some((first, kind)) = keyword else {
        return Ok(None);
    };
    let rest = t[first.len()..].trim_start();
    let num_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let ports: u32 = rest[..num_end].parse().or_else(|_| {
        // `Ca\t : 0x0002c9... ports 1 devid ... "name"`: a node list (`ibnetdiscover -l`,
        // `-H`, `-S`, ibhosts, ibswitches), which lists devices and no cables.
        if rest.starts_with(':') && rest.contains(" ports ") {
            return err(
                line,
                "this is a node list (`ibnetdiscover -l`, `-H` or `-S`, ibhosts, \
                     ibswitches): it names devices but no cables; give the topology \
                     ibnetdiscover prints without those flags"
                    .to_string(),
            );
        }
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
        .and_then(|(_, c)| header_desc(c))
        .unwrap_or(id)
        .to_string();
    Ok(Some((kind, ports, id, desc)))
}

/// A port line's fields: its port, the far node's id and port, the settings (`w=N s=N e=N`) and
/// the comment after them.
fn port_fields<'a>(
    t: &'a str,
    line: usize,
    node: &Node,
) -> Result<(u32, &'a str, u32, &'a str, &'a str), ParseError> {
    let (port, rest) = bracket_num(t, line, "port")?;
    if port > node.ports {
        return err(
            line,
            format!(
                "port {port} on \"{}\", which has {} ports",
                shown(&node.id),
                node.ports
            ),
        );
    }
    let rest = skip_paren_guid(skip_ext(rest), line)?;
    let (remote, rest) = quoted(rest, line, "remote node id")?;
    let (remote_port, rest) = bracket_num(rest, line, "remote port")?;
    let rest = skip_paren_guid(skip_ext(rest), line)?;
    let (settings, comment) = rest.split_once('#').unwrap_or((rest, ""));
    Ok((port, remote, remote_port, settings, comment))
}

/// A port's width, speed and extended speed settings (`w=`, `s=`, `e=`), where given.
type PortSettings = (Option<u32>, Option<u32>, Option<u32>);

/// A port line's `w=N s=N e=N` settings; anything else is an error.
fn port_settings(settings: &str, line: usize) -> Result<PortSettings, ParseError> {
    let (mut w, mut sp, mut e) = (None, None, None);
    for s in settings.split_whitespace() {
        if let Some((k, v)) = s.split_once('=') {
            let v = v.parse::<u32>().ok();
            match k {
                "w" => w = v,
                "s" => sp = v,
                "e" => e = v,
                _ => {}
            }
        }
        let ok = s
            .split_once('=')
            .is_some_and(|(k, v)| matches!(k, "w" | "s" | "e") && v.parse::<u32>().is_ok());
        if !ok {
            return err(
                line,
                format!(
                    "unexpected `{}` on a port line; valid: w=N s=N e=N, then a # comment",
                    shown(s)
                ),
            );
        }
    }
    Ok((w, sp, e))
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

    /// The same fabric as `SAMPLE` plus a dual-port HCA, as `ibnetdiscover -p` prints it: every link
    /// from both ends, switches by node GUID, CA ports by port GUID.
    const PORTS: &str = "SW     0  3 0x0002c90001000002 4x HDR - SW     0  3 0x0002c90001000001 ( 'leafB' - 'leafA' )
SW     0  1 0x0002c90001000001 4x HDR - CA     0  1 0x0008000000000011 ( 'leafA' - 'srv1 hca1' )
SW     0  2 0x0002c90001000001 4x HDR - CA     0  1 0x0008000000000021 ( 'leafA' - 'srv2 hca1' )
SW     0  3 0x0002c90001000001 4x HDR - SW     0  3 0x0002c90001000002 ( 'leafA' - 'leafB' )
SW     0  4 0x0002c90001000001 4x HDR - CA     0  2 0x0008000000000022 ( 'leafA' - 'srv2 hca1' )
CA     0  1 0x0008000000000011 4x HDR - SW     0  1 0x0002c90001000001 ( 'srv1 hca1' - 'leafA' )
CA     0  1 0x0008000000000021 4x HDR - SW     0  2 0x0002c90001000001 ( 'srv2 hca1' - 'leafA' )
CA     0  2 0x0008000000000022 4x HDR - SW     0  4 0x0002c90001000001 ( 'srv2 hca1' - 'leafA' )
";

    /// `ibnetdiscover -s` prints a line per node as it walks the fabric, before the topology, in
    /// the forms current (`lid 0-0 "desc"`) and older (`base lid 0-0"desc"`) libibnetdisc print;
    /// both ibnetdiscover forms read past them, and so does format detection.
    #[test]
    fn progress_lines_of_show_are_read_past() {
        let show = "DR path slid 0; dlid 0; 0 -> new Channel Adapter {0008000000000010} portnum 1 lid 0-0 \"srv1 hca1\"\n\
                    DR path slid 0; dlid 0; 0,1 -> new Switch {0002c90001000001} portnum 0 base lid 0-0\"leafA\"\n\
                    DR path slid 0; dlid 0; 0,1,3 -> known Switch {0002c90001000002} portnum 0 lid 0-0 \"\"\n";
        for text in [SAMPLE, PORTS] {
            let with = format!("{show}{text}");
            assert_eq!(
                crate::discovery::detect(&with),
                crate::discovery::detect(text)
            );
            // The same links, each named at its line three lines further down.
            let ends = |t: &str| -> Vec<_> {
                parse(t)
                    .unwrap()
                    .links
                    .iter()
                    .map(|l| (l.a, l.b, l.rate, l.line))
                    .collect()
            };
            let shifted: Vec<_> = ends(text)
                .into_iter()
                .map(|(a, b, r, line)| (a, b, r, line + 3))
                .collect();
            assert_eq!(ends(&with), shifted);
        }
        assert!(is_progress_line(
            "DR path slid 0; dlid 0; 0,1,19 -> new Switch {00066a00eb002c9d} portnum 0 lid 0-0 \"\""
        ));
        // A query libibmad printed as failed is kept as a warning, wherever it stands.
        let warn = "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110; Connection timed out";
        for text in [SAMPLE, PORTS] {
            let (head, tail) = text.split_at(text.find('\n').unwrap() + 1);
            let with = format!("{warn}\n{head}{warn}\n{tail}");
            let d = parse(&with).unwrap();
            assert_eq!(d.links.len(), parse(text).unwrap().links.len());
            let at: Vec<usize> = d.warnings.iter().map(|w| w.line).collect();
            assert_eq!(at, [1, 3]);
            assert!(parse(text).unwrap().warnings.is_empty());
        }
        // Text that only starts like one is still an error at its line.
        for bad in ["DR path slid 0; dlid 0; 0,1", "DR path -> lost Switch {1}"] {
            assert_eq!(
                parse(&format!("{bad}\n{SAMPLE}")).unwrap_err().line,
                1,
                "{bad}"
            );
        }
    }

    /// A PuTTY session log of ibnetdiscover: PuTTY's header line, CRLF line ends and the tabs
    /// dropped, so `Switch\t4` reads `Switch4` (tests/data/real/sat11-*).
    #[test]
    fn a_putty_log_of_the_output_reads_as_the_output() {
        let putty = format!(
            "=~=~=~=~=~=~=~=~=~=~=~= PuTTY log 2021.06.15 12:06:05 =~=~=~=~=~=~=~=~=~=~=~=\r\n{}",
            SAMPLE.replace('\t', "").replace('\n', "\r\n")
        );
        let (a, b) = (parse(&putty).unwrap(), parse(SAMPLE).unwrap());
        assert_eq!(a.nodes.len(), b.nodes.len());
        let ends =
            |d: &Discovered| -> Vec<_> { d.links.iter().map(|l| (l.a, l.b, l.rate)).collect() };
        assert_eq!(ends(&a), ends(&b));
        // A word that only starts like a keyword is no record.
        for bad in ["Switches 4 \"S-1\"", "Cable 1 \"H-1\"", "Rtx 2 \"R-1\""] {
            assert_eq!(
                parse(&format!("{bad}\n{SAMPLE}")).unwrap_err().line,
                1,
                "{bad}"
            );
        }
    }

    #[test]
    fn parses_the_per_port_format() {
        let d = parse(PORTS).unwrap();
        let names: Vec<(&str, u32)> = d.nodes.iter().map(|n| (n.desc.as_str(), n.ports)).collect();
        // leafB's only listed port is 3; srv2's two port GUIDs are one dual-port HCA.
        assert_eq!(
            names,
            [
                ("leafB", 3),
                ("leafA", 4),
                ("srv1 hca1", 1),
                ("srv2 hca1", 2)
            ]
        );
        let links: Vec<(&str, u32, &str, u32)> = d
            .links
            .iter()
            .map(|l| {
                (
                    d.nodes[l.a.0].desc.as_str(),
                    l.a.1,
                    d.nodes[l.b.0].desc.as_str(),
                    l.b.1,
                )
            })
            .collect();
        assert_eq!(
            links,
            [
                ("leafB", 3, "leafA", 3),
                ("leafA", 1, "srv1 hca1", 1),
                ("leafA", 2, "srv2 hca1", 1),
                ("leafA", 4, "srv2 hca1", 2),
            ]
        );
        assert!(d
            .links
            .iter()
            .all(|l| l.rate.map(|r| r.to_string()).as_deref() == Some("4xHDR")));
    }

    #[test]
    fn per_port_errors_name_the_line() {
        // A link listed from one end only.
        let one_sided: String = PORTS
            .lines()
            .filter(|l| !l.starts_with("CA     0  2"))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = parse(&one_sided).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("one-sided"), "{e}");
        let e = parse(&PORTS.replace("SW     0  4 0x", "SW     0  x 0x")).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        let e = parse(&PORTS.replace("( 'leafA' - 'leafB' )", "( leafA - leafB )")).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
    }

    #[test]
    fn parses_ibnetdiscover_output() {
        let d = parse(SAMPLE).unwrap();
        assert_eq!(d.nodes.len(), 3);
        assert_eq!(d.nodes[0].desc, "leafB");
        assert_eq!(d.nodes[0].guid, Some(0x2c90001000002));
        assert_eq!(d.nodes[2].kind, NodeType::Ca);
        assert_eq!(d.nodes[2].desc, "srv1 hca1");
        assert_eq!(d.links.len(), 2);
        assert!(d
            .links
            .iter()
            .all(|l| l.rate.map(|r| r.to_string()).as_deref() == Some("4xHDR")));
    }

    /// `ibnetdiscover -g -f` of a chassis fabric: grouping lines, `[ext N]` ports, `# Chassis`
    /// comments on directives, `s= w= v=` after the rate, descriptions holding `#` and `"`, and no
    /// blank lines between records (the shape of infiniband-diags' ibnetdiscover.c output).
    const GROUPED: &str = r#"#
# Topology file: generated on Tue Jun  5 14:15:10 2007
#
# Max of 3 hops discovered
# Initiated from node 0008f10403960558 port 0008f10403960559

Chassis 1 (guid 0x8f10400411f56)

# Spine Nodes
vendid=0x8f1
devid=0x5a06
sysimgguid=0x8f10400411f56		# Chassis 1 (ISR9288) slot 1
switchguid=0x8f10400411f57(8f10400411f57)	# ISR9288/ISR9096 Voltaire sLB-24D
Switch	24 "S-0008f10400411f57"		# "ISR9288 Voltaire sLB-24D # "spine" 1" enhanced port 0 lid 6 lmc 0
[1][ext 1]	"S-0008f10400410015"[3]		# "SW-6IB4 Voltaire" lid 3 4xSDR s=1 w=2 v=3
[2][ext 2]	"H-0008f10403960558"[1](8f10403960559) 		# "MT23108 InfiniHost "lab" #1" lid 4 4xddr s=2 w=2 v=3

Non-Chassis Nodes
vendid=0x8f1
switchguid=0x8f10400410015(8f10400410015)
Switch	8 "S-0008f10400410015"		# "SW-6IB4 Voltaire" base port 0 lid 3 lmc 0
[3]	"S-0008f10400411f57"[1][ext 1]		# "ISR9288 Voltaire sLB-24D # "spine" 1" lid 6 4xSDR
caguid=0x8f10403960558
Hca	2 "H-0008f10403960558"		# "MT23108 InfiniHost "lab" #1"
[1](8f10403960559) 	"S-0008f10400411f57"[2][ext 2]		# lid 4 lmc 1 "ISR9288 Voltaire sLB-24D # "spine" 1" lid 6 4xDDR s=2 w=2 v=3
"#;

    #[test]
    fn grouping_full_info_and_any_description_read() {
        let d = parse(GROUPED).unwrap();
        let descs: Vec<&str> = d.nodes.iter().map(|n| n.desc.as_str()).collect();
        assert_eq!(
            descs,
            [
                "ISR9288 Voltaire sLB-24D # \"spine\" 1",
                "SW-6IB4 Voltaire",
                "MT23108 InfiniHost \"lab\" #1"
            ]
        );
        assert_eq!(d.nodes[0].sysimgguid, Some(0x8f10400411f56));
        assert_eq!(d.nodes[0].reported_ports, Some(24));
        let rates: Vec<String> = d
            .links
            .iter()
            .map(|l| l.rate.unwrap().to_string())
            .collect();
        assert_eq!(rates, ["4xSDR", "4xDDR"]);
    }

    #[test]
    fn a_word_where_the_rate_belongs_is_named() {
        let e = parse(&SAMPLE.replacen("\"leafA\" lid 0 4xHDR", "\"leafA\" lid 0 fast", 1))
            .unwrap_err();
        assert_eq!(e.line, 9);
        assert!(
            e.message
                .contains("`fast` stands where the link rate belongs"),
            "{e}"
        );
    }

    fn error_line(text: &str) -> usize {
        parse(text).unwrap_err().line
    }

    /// A node list (`ibnetdiscover -l`, `-H`, `-S`: lines as ibnetdiscover printed them against
    /// ibsim) lists devices and no cables: refused as what it is, not as a record missing its
    /// port count.
    #[test]
    fn a_node_list_is_refused_as_one() {
        for text in [
            "Ca\t : 0x0002c90200000500 ports 1 devid 0x0 vendid 0x2c9 \"srv10 hca8\"\n",
            "Switch\t : 0x0002c90100000004 ports 40 devid 0x0 vendid 0x2c9 \"leaf04\"\n",
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, 1);
            assert!(e.message.contains("this is a node list"), "{e}");
            assert!(e.message.contains("ibnetdiscover -l"), "{e}");
        }
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

    /// `vendid=` and `devid=` are NodeInfo's 24-bit VendorID and 16-bit DeviceID: read onto the
    /// record they precede, and a value wider than its field, or not hex, is refused by line.
    #[test]
    fn vendor_and_device_ids_are_read_and_their_widths_checked() {
        // SAMPLE names leafB's ids (vendid and devid) and leafA's vendor alone.
        let d = parse(SAMPLE).unwrap();
        let ids = |desc: &str| {
            let n = d.nodes.iter().find(|n| n.desc == desc).unwrap();
            (n.vendor_id, n.device_id)
        };
        assert_eq!(ids("leafB"), (Some(0x2c9), Some(0xd2f0)));
        assert_eq!(ids("leafA"), (Some(0x2c9), None));
        for bad in ["devid=0x12345", "vendid=0x1000000", "devid=0xZZ", "devid="] {
            let e = parse(&format!("{bad}\n")).unwrap_err();
            assert_eq!(e.line, 1, "{bad}: {e}");
            assert!(e.message.contains("is not a NodeInfo id"), "{bad}: {e}");
        }
    }
}
