//! A discovered fabric, whatever tool printed it: the validated [`Discovered`] every parser returns,
//! the pairing check they share, and [`parse`], which tells the formats apart by content.
//!
//! Formats, one parser each:
//! - `ibnetdiscover` (and ibsim topology files, which share its syntax) and `ibnetdiscover -p`:
//!   [`ibnet`];
//! - `iblinkinfo`: [`iblinkinfo`];
//! - LLDP neighbour tables of an Ethernet (RoCE) fabric: [`lldp`].
//!
//! Whatever the format, a parsed `Discovered` has at least one node and one link, lists every link
//! once with both of its ends agreeing, and keeps each link's rate as both ends reported it (an
//! unknown part on one end takes the other's; ends that report different rates keep the lower, and
//! the disagreement is kept beside the links: [`RateDisagreement`]). Every
//! error names its line (line 0: the file as a whole), and text quoted from the input is escaped, so
//! a control or invisible character shows as `\u{feff}` rather than vanishing.

pub mod iblinkinfo;
pub mod ibnet;
pub mod lldp;

use crate::rate::Rate;
use railyard_catalog::Family;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A parse error at a line (1-based; 0 when it concerns the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
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

/// One node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeType,
    /// The node's id: the quoted id of an ibnetdiscover record (`S-0002c9...`; a name in ibsim
    /// files), or one made from the GUID (`S-<guid>`) in formats that print none.
    pub id: String,
    /// The node description, or the id when there is none.
    pub desc: String,
    /// The highest port number a link may use.
    pub ports: u32,
    /// The port count the node reports (NumPorts), where the output says: the record header of
    /// ibnetdiscover's default form, or a switch that `ibnetdiscover -p` or `iblinkinfo` lists port
    /// by port from 1 without a gap (both print every port of a switch, cabled or not).
    pub reported_ports: Option<u32>,
    pub guid: Option<u64>,
    pub sysimgguid: Option<u64>,
    /// NodeInfo VendorID and DeviceID, where the output gives them (`vendid=`, `devid=` above an
    /// ibnetdiscover record): they name the chip ([`crate::chip::chip_of`]).
    pub vendor_id: Option<u32>,
    pub device_id: Option<u32>,
    /// Line of the header (or of the first line that names the node).
    pub line: usize,
}

/// One link, stored once, with its two ends as (node index, port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub a: (usize, u32),
    pub b: (usize, u32),
    /// Width and speed, when either end says (`None`: neither line carries a rate).
    pub rate: Option<Rate>,
    /// Line of the first port line that names this link.
    pub line: usize,
}

/// A validated discovered fabric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Discovered {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    /// Queries the tool reported as failed, in file order ([`ToolWarning`]).
    pub warnings: Vec<ToolWarning>,
    /// Links whose two ends report different rates, in file order ([`RateDisagreement`]).
    pub rate_disagreements: Vec<RateDisagreement>,
    /// The network the discovery saw: InfiniBand for the InfiniBand tools' output (ibnetdiscover,
    /// iblinkinfo, an ibsim topology: subnet management packets reach no Ethernet fabric), Ethernet
    /// for LLDP neighbour tables (`lldp::to_discovered`).
    pub family: Family,
}

/// A line in which the tool (libibmad under ibnetdiscover or iblinkinfo) reports a query that
/// failed, kept where stderr was captured with the output: `src/query_smp.c:195; umad (DR path
/// slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110; Connection timed out`, or `ibwarn: ...` /
/// `iberror: ...` in later releases. The node or port it names did not answer, so whatever lies
/// behind it may be missing from the discovery; the parsers keep the line here and read on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolWarning {
    pub line: usize,
    /// The line as printed, trimmed.
    pub text: String,
}

/// A link whose two ends report different known rates. ibnetdiscover prints each end's own
/// PortInfo, read when the discovery reached that node, so a link that retrained between the two
/// reads shows two rates (the tool's own manual page has one: a Voltaire port at 4xSDR whose other
/// end says 1xSDR, crates/ib/tests/data/real/voltaire-isr9024-sdr-2007-manpage.ibnetdiscover). The
/// link is kept at the lower of the two, the rate it was seen to fall to; `railyard check` names
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateDisagreement {
    /// The link's ends as [`Link::a`] and [`Link::b`] hold them.
    pub a: (usize, u32),
    pub b: (usize, u32),
    /// Each end's line and the rate it reported, the earlier line first.
    pub first: (usize, Rate),
    pub second: (usize, Rate),
    /// The rate the link is kept at: the lower of the two.
    pub kept: Rate,
}

impl RateDisagreement {
    /// The disagreement as a note for a front end: `line 15: the two ends of this link report
    /// different rates (4xSDR here, 1xSDR at line 26), so it is taken at the lower, 1xSDR`.
    pub fn note(&self) -> String {
        format!(
            "line {}: the two ends of this link report different rates ({} here, {} at line {}), so it is taken at the lower, {}",
            self.first.0, self.first.1, self.second.1, self.second.0, self.kept
        )
    }
}

impl ToolWarning {
    /// The directed route the failed query took (`0,1,1,31`: out of port 1 of the node the
    /// discovery started from, then port 1, then port 31), when the line names one.
    pub fn route(&self) -> Option<&str> {
        let after = self.text.split("DR path ").nth(1)?;
        let route = after.split(';').nth(2)?.split_whitespace().next()?;
        route
            .split(',')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
            .then_some(route)
    }
}

/// Whether a line is a [`ToolWarning`]: `ibwarn: `, `iberror: ` or a C source location
/// (`src/query_smp.c:195; `) at its start.
pub(crate) fn is_tool_warning(t: &str) -> bool {
    if t.starts_with("ibwarn: ") || t.starts_with("iberror: ") {
        return true;
    }
    let Some((head, _)) = t.split_once("; ") else {
        return false;
    };
    let Some((file, num)) = head.rsplit_once(':') else {
        return false;
    };
    file.ends_with(".c")
        && !file.contains(char::is_whitespace)
        && !num.is_empty()
        && num.chars().all(|c| c.is_ascii_digit())
}

impl Node {
    /// Whether this is a switch's SHARP aggregation node: a CA inside an NVIDIA Quantum switch,
    /// listed on a port past the front-panel ones with the description `Mellanox Technologies
    /// Aggregation Node` (as in tests/data/real/hdr-excerpt.ibnetdiscover-p). It is part of the
    /// switch, not a host: import and verify leave it and its link out.
    pub fn is_aggregation_node(&self) -> bool {
        self.kind == NodeType::Ca && self.desc.trim() == "Mellanox Technologies Aggregation Node"
    }
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

/// The output formats [`parse`] recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `ibnetdiscover` (default form) or an ibsim topology file.
    Ibnetdiscover,
    /// `ibnetdiscover -p` (`--ports`).
    IbnetdiscoverPorts,
    /// `iblinkinfo` (default form or `-l`).
    Iblinkinfo,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Ibnetdiscover => "ibnetdiscover",
            Format::IbnetdiscoverPorts => "ibnetdiscover -p",
            Format::Iblinkinfo => "iblinkinfo",
        })
    }
}

/// Which tool printed `text`, judged by its first line that is neither blank, a `#` comment nor
/// a progress line of `ibnetdiscover -s` ([`crate::discovery::ibnet::is_progress_line`]).
pub fn detect(text: &str) -> Format {
    let first = crate::discovery::ibnet::first_line(strip_bom(text));
    if crate::discovery::ibnet::is_port_line(first) {
        Format::IbnetdiscoverPorts
    } else if crate::discovery::iblinkinfo::is_iblinkinfo_line(first) {
        Format::Iblinkinfo
    } else {
        Format::Ibnetdiscover
    }
}

/// Parses any of the [`Format`]s, told apart by content.
pub fn parse(text: &str) -> Result<Discovered, ParseError> {
    match detect(text) {
        Format::Ibnetdiscover | Format::IbnetdiscoverPorts => crate::discovery::ibnet::parse(text),
        Format::Iblinkinfo => crate::discovery::iblinkinfo::parse(text),
    }
}

/// `text` without a UTF-8 byte-order mark at its start (editors on Windows add one).
pub(crate) fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Input text as an error message quotes it: at most 60 characters, escaped as [`escaped`] does.
pub(crate) fn shown(s: &str) -> String {
    let mut out: String = escaped(&s.chars().take(60).collect::<String>());
    if s.chars().nth(60).is_some() {
        out.push_str("...");
    }
    out
}

/// `s` with control and invisible characters escaped as Rust does (`\t`, `\u{feff}`,
/// `\u{200b}`), so a message shows every character the input holds; quotes stay as they are.
pub fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '\'' => out.push(c),
            c => out.extend(c.escape_debug()),
        }
    }
    out
}

pub(crate) fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError {
        line,
        message: message.into(),
    })
}

/// A port line before its link is checked against the other end.
#[derive(Debug, Clone)]
pub(crate) struct PortLine {
    pub node: usize,
    pub port: u32,
    /// The remote node's name, resolved through the index given to [`pair`].
    pub remote: String,
    pub remote_port: u32,
    pub rate: Option<Rate>,
    pub line: usize,
}

/// Checks that every link is listed at both ends and that the ends agree on each other (a rate
/// they disagree on is kept at the lower, [`RateDisagreement`]); `index` resolves the remote names
/// the port lines use to nodes. A discovery without nodes or without links is an error: there is
/// nothing to import or verify.
pub(crate) fn pair(
    nodes: Vec<Node>,
    index: &HashMap<String, usize>,
    lines: &[PortLine],
) -> Result<Discovered, ParseError> {
    if nodes.is_empty() {
        return err(
            0,
            "no nodes: the file is empty or holds only comments and headers; expected the output of \
             ibnetdiscover, ibnetdiscover -p or iblinkinfo",
        );
    }
    let mut at: HashMap<(usize, u32), usize> = HashMap::with_capacity(lines.len());
    for (k, l) in lines.iter().enumerate() {
        at.insert((l.node, l.port), k);
    }
    let mut links = Vec::new();
    let mut disagreements = Vec::new();
    for l in lines {
        let Some(&r) = index.get(&l.remote) else {
            return err(
                l.line,
                format!(
                    "port {} leads to \"{}\", which has no record",
                    l.port,
                    shown(&l.remote)
                ),
            );
        };
        if l.remote_port > nodes[r].ports {
            return err(
                l.line,
                format!(
                    "\"{}\" has {} ports, not port {}",
                    shown(&nodes[r].id),
                    nodes[r].ports,
                    l.remote_port
                ),
            );
        }
        let Some(&k) = at.get(&(r, l.remote_port)) else {
            return err(
                l.line,
                format!(
                    "one-sided link: \"{}\"[{}] lists \"{}\"[{}], but that port's record does not list it back",
                    shown(&nodes[l.node].id),
                    l.port,
                    shown(&nodes[r].id),
                    l.remote_port
                ),
            );
        };
        let back = &lines[k];
        if index.get(&back.remote) != Some(&l.node) || back.remote_port != l.port {
            return err(
                l.line,
                format!(
                    "link ends disagree: \"{}\"[{}] lists \"{}\"[{}], which lists \"{}\"[{}] (line {})",
                    shown(&nodes[l.node].id),
                    l.port,
                    shown(&nodes[r].id),
                    l.remote_port,
                    shown(&back.remote),
                    back.remote_port,
                    back.line
                ),
            );
        }
        if (l.node, l.port) == (r, l.remote_port) {
            return err(l.line, "a port linked to itself");
        }
        if (l.node, l.port) < (r, l.remote_port) {
            let (first, second) = if l.line <= back.line {
                (l, back)
            } else {
                (back, l)
            };
            let rate = match (first.rate, second.rate) {
                (Some(x), Some(y)) => Some(Rate::merge(x, y).unwrap_or_else(|| {
                    let kept = Rate::lower(x, y);
                    disagreements.push(RateDisagreement {
                        a: (l.node, l.port),
                        b: (r, l.remote_port),
                        first: (first.line, x),
                        second: (second.line, y),
                        kept,
                    });
                    kept
                })),
                (x, y) => x.or(y),
            };
            links.push(Link {
                a: (l.node, l.port),
                b: (r, l.remote_port),
                rate,
                line: first.line,
            });
        }
    }
    if links.is_empty() {
        return err(
            0,
            format!(
                "{} node{} and no links: a discovery needs at least one cabled port",
                nodes.len(),
                if nodes.len() == 1 { "" } else { "s" }
            ),
        );
    }
    links.sort_by_key(|l| (l.a, l.b));
    disagreements.sort_by_key(|d| d.first.0);
    Ok(Discovered {
        nodes,
        links,
        warnings: Vec::new(),
        rate_disagreements: disagreements,
        family: Family::Infiniband,
    })
}

/// The port count a node reports when its ports were listed one by one from 1 without a gap.
pub(crate) fn contiguous(ports: &std::collections::BTreeSet<u32>) -> Option<u32> {
    let max = *ports.last()?;
    (ports.len() as u32 == max && ports.first() == Some(&1)).then_some(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_escapes_invisible_characters_and_truncates() {
        assert_eq!(shown("\u{feff}vendid"), "\\u{feff}vendid");
        assert_eq!(
            shown("a\tb\u{200b}c \"d\" 'e'"),
            "a\\tb\\u{200b}c \"d\" 'e'"
        );
        assert_eq!(shown(&"x".repeat(70)), format!("{}...", "x".repeat(60)));
    }

    #[test]
    fn tool_warnings_are_told_from_other_lines_and_give_their_route() {
        for w in [
            "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110; Connection timed out",
            "ibwarn: [12345] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1,20)",
            "iberror: failed: discover failed",
        ] {
            assert!(is_tool_warning(w), "{w}");
        }
        for not in [
            "Switch 36 \"S-1\" # \"a.c:1; b\"",
            "[1] \"H-2\"[1] # \"x\" lid 2 4xEDR",
            "my file.c:12; x",
            "a.c:; x",
            "vendid=0x2c9",
        ] {
            assert!(!is_tool_warning(not), "{not}");
        }
        let w = |text: &str| ToolWarning {
            line: 1,
            text: text.to_string(),
        };
        assert_eq!(
            w("src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110").route(),
            Some("0,1,1,31")
        );
        assert_eq!(w("iberror: failed: discover failed").route(), None);
        assert_eq!(w("x.c:1; DR path slid 0; dlid 0; 0,a Attr").route(), None);
    }

    #[test]
    fn line_zero_is_the_whole_file() {
        let e = ParseError {
            line: 0,
            message: "no nodes".into(),
        };
        assert_eq!(e.to_string(), "no nodes");
    }
}
