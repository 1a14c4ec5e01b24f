//! OpenSM's linear forwarding tables, as `opensm -D 0x40 --dump_files_dir DIR` writes them to
//! `opensm-lfts.dump`, and routes traced through them over a planned fabric.
//!
//! Format (observed with Debian 12's OpenSM 3.3.23, shared/reference/infiniband-tools.md):
//! ```text
//! Unicast lids [0-86] of switch Lid 1 guid 0x0002c90100000001 ('leaf01'):
//! 0x0001 000 # Switch portguid 0x0002c90100000001: 'leaf01'
//! 0x000c 001 # Channel Adapter portguid 0x0002c90200000011: 'srv01 hca1'
//! 86 lids dumped
//! ```
//! A destination LID, the egress port (0 = the switch itself), and what owns that LID.

use crate::guid;
use railyard_fabric::{Fabric, LinkId, LinkKind, NodeId, PortId};
use railyard_sim::fabric_net::{
    compare_routes, FabricNet, FabricRouting, RouteComparison, RouteFailure, TreeRouter,
};
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use std::collections::BTreeMap;
use std::fmt;

/// A parse error at a line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LftError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LftError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LftError {}

/// One switch's table.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SwitchLft {
    pub guid: u64,
    pub desc: String,
    /// Destination LID -> egress port.
    pub routes: BTreeMap<u16, u8>,
}

/// All tables, plus which port GUID owns each LID.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lfts {
    /// By switch node GUID.
    pub switches: BTreeMap<u64, SwitchLft>,
    /// LID -> port GUID that owns it (a switch's port 0 GUID is its node GUID).
    pub lid_owner: BTreeMap<u16, u64>,
}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, LftError> {
    Err(LftError {
        line,
        message: message.into(),
    })
}

fn hex(s: &str, line: usize, what: &str) -> Result<u64, LftError> {
    let h = s.trim().trim_end_matches(':');
    let h = h.strip_prefix("0x").unwrap_or(h);
    u64::from_str_radix(h, 16).or_else(|_| {
        err(
            line,
            format!(
                "`{}` is not a hexadecimal {what}",
                crate::discovery::shown(s)
            ),
        )
    })
}

/// Parses `opensm-lfts.dump` (a UTF-8 byte-order mark at the start is read past).
pub fn parse(text: &str) -> Result<Lfts, LftError> {
    let text = crate::discovery::strip_bom(text);
    let mut out = Lfts::default();
    let mut current: Option<u64> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(rest) = t.strip_prefix("Unicast lids") {
            let Some(g) = rest.split_whitespace().skip_while(|w| *w != "guid").nth(1) else {
                return err(line, "switch header without `guid 0x...`");
            };
            let guid = hex(g, line, "GUID")?;
            let desc = rest.split('\'').nth(1).unwrap_or("").to_string();
            out.switches.insert(
                guid,
                SwitchLft {
                    guid,
                    desc,
                    routes: BTreeMap::new(),
                },
            );
            current = Some(guid);
            continue;
        }
        if t.ends_with("lids in use") || t.ends_with("lids dumped") || t.starts_with("Top of") {
            continue;
        }
        if t.starts_with("0x") {
            let Some(sw) = current else {
                return err(
                    line,
                    "route line before any `Unicast lids ... of switch` header",
                );
            };
            let mut words = t.split_whitespace();
            let lid = hex(words.next().unwrap_or(""), line, "LID")?;
            let lid = u16::try_from(lid).or_else(|_| {
                err(
                    line,
                    format!("LID {lid} is out of range; valid: 1 to 49151"),
                )
            })?;
            let port: u8 = words
                .next()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| LftError {
                    line,
                    message: "expected an egress port number after the LID".to_string(),
                })?;
            if let Some(pg) = t
                .split("portguid")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
            {
                out.lid_owner.insert(lid, hex(pg, line, "port GUID")?);
            }
            if let Some(s) = out.switches.get_mut(&sw) {
                s.routes.insert(lid, port);
            }
            continue;
        }
        return err(
            line,
            format!(
                "cannot read `{}`; expected a `Unicast lids` header or a `0xLID PORT` line",
                crate::discovery::shown(t)
            ),
        );
    }
    Ok(out)
}

/// Why a route could not be traced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// The destination has no LID in the dump.
    NoLid { dst: String },
    /// A switch has no entry (or a port that leads nowhere) for the destination.
    Missing { switch: String, dst: String },
    /// The route visits a switch twice.
    Loop { switch: String, dst: String },
    /// The switch is not in the dump.
    UnknownSwitch { switch: String },
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::NoLid { dst } => write!(f, "{dst} has no LID in the LFT dump"),
            RouteError::Missing { switch, dst } => {
                write!(f, "{switch} has no usable route to {dst}")
            }
            RouteError::Loop { switch, dst } => {
                write!(f, "the route to {dst} loops through {switch}")
            }
            RouteError::UnknownSwitch { switch } => write!(f, "{switch} is not in the LFT dump"),
        }
    }
}

/// The GUID of every node that has one, by node id: the site's GUIDs of a fabric imported from
/// discovery ([`railyard_fabric::FabricMeta::guids`]), railyard's own ([`guid::assign`]) for a plan.
pub fn fabric_guids(f: &Fabric) -> Vec<Option<u64>> {
    if f.meta.guids.is_empty() {
        return guid::assign(f);
    }
    (0..f.nodes.len())
        .map(|i| f.site_guid(NodeId(i as u32)))
        .collect()
}

/// The port GUID that owns an HCA port's LID in `lfts`: the node GUID itself where the dump has it
/// (an adapter whose port 1 carries the node GUID, as ConnectX-4 and later do), otherwise the node
/// GUID plus the port number (ConnectX-3, ibsim, railyard's own GUIDs).
fn port_guid(lid_of: &BTreeMap<u64, u16>, node: u64, port: u32) -> u64 {
    if lid_of.contains_key(&node) {
        node
    } else {
        guid::ca_port_guid(node, port)
    }
}

/// Whether an LFT dump is of this fabric at all: at least one of its switches and one of its cabled
/// HCA ports are in the dump. The error says what the fabric and the dump hold, so a dump of another
/// fabric (or a fabric with other GUIDs) is told apart from a dump with a route missing.
pub fn check_matches(f: &Fabric, lfts: &Lfts) -> Result<(), String> {
    let guids = fabric_guids(f);
    let lid_of: BTreeMap<u64, u16> = lfts.lid_owner.iter().map(|(&lid, &g)| (g, lid)).collect();
    let switches: Vec<(NodeId, Option<u64>)> = (0..f.nodes.len())
        .map(|i| NodeId(i as u32))
        .filter(|&n| f.node(n).is_switch())
        .map(|n| (n, guid::of(&guids, n)))
        .collect();
    let shown = |g: Option<u64>| g.map_or("no GUID".to_string(), |g| format!("{g:#018x}"));
    let examples = |items: Vec<String>| {
        let n = items.len();
        let mut s = items.into_iter().take(3).collect::<Vec<_>>().join(", ");
        if n > 3 {
            s.push_str(&format!(" and {} more", n - 3));
        }
        s
    };
    let dump_switches = || {
        examples(
            lfts.switches
                .values()
                .map(|s| format!("'{}' ({:#018x})", s.desc, s.guid))
                .collect(),
        )
    };
    let origin = if f.meta.guids.is_empty() {
        "railyard's own GUIDs of the plan (the GUIDs `export ibnet` gives it)"
    } else {
        "the site's GUIDs the fabric was imported with"
    };
    if !switches
        .iter()
        .any(|(_, g)| g.is_some_and(|g| lfts.switches.contains_key(&g)))
    {
        return Err(format!(
            "none of the fabric's {} switches is in the LFT dump, by {origin}: the fabric has {}; the dump has {}. Give the dump OpenSM wrote for this fabric (opensm-lfts.dump), and the fabric as discovered (`--fabric` with the ibnetdiscover output or its `import ibnet` fabric.json)",
            switches.len(),
            examples(
                switches
                    .iter()
                    .map(|&(n, g)| format!("\"{}\" ({})", f.node(n).name, shown(g)))
                    .collect()
            ),
            dump_switches()
        ));
    }
    let ports: Vec<PortId> = f
        .network_links()
        .filter(|(_, l)| l.kind == LinkKind::ServerLeaf)
        .map(|(_, l)| l.a)
        .collect();
    let has_lid = |p: PortId| {
        guid::of(&guids, f.port(p).node)
            .is_some_and(|g| lid_of.contains_key(&port_guid(&lid_of, g, f.port(p).number)))
    };
    if !ports.is_empty() && !ports.iter().any(|&p| has_lid(p)) {
        return Err(format!(
            "none of the fabric's {} cabled HCA ports has a LID in the LFT dump, by {origin}: the fabric has {}; the dump's LIDs belong to {}",
            ports.len(),
            examples(
                ports
                    .iter()
                    .map(|&p| format!(
                        "{}/{} (port GUID {})",
                        f.port_device(p),
                        f.port_label(p),
                        shown(
                            guid::of(&guids, f.port(p).node)
                                .map(|g| port_guid(&lid_of, g, f.port(p).number))
                        )
                    ))
                    .collect()
            ),
            examples(
                lfts.lid_owner
                    .iter()
                    .map(|(lid, g)| format!("LID {lid} {g:#018x}"))
                    .collect()
            )
        ));
    }
    Ok(())
}

/// Routes traced through OpenSM's tables over a fabric, planned (railyard's GUIDs) or imported
/// from discovery (the site's).
pub struct Router<'a> {
    fabric: &'a Fabric,
    lfts: &'a Lfts,
    guids: Vec<Option<u64>>,
    /// Port GUID of a CA port -> LID.
    lid_of: BTreeMap<u64, u16>,
}

impl<'a> Router<'a> {
    pub fn new(fabric: &'a Fabric, lfts: &'a Lfts) -> Router<'a> {
        let lid_of = lfts.lid_owner.iter().map(|(&lid, &g)| (g, lid)).collect();
        Router {
            fabric,
            lfts,
            guids: fabric_guids(fabric),
            lid_of,
        }
    }

    /// The links a packet from NIC port `src` to NIC port `dst` crosses, in order.
    pub fn route(&self, src: PortId, dst: PortId) -> Result<Vec<LinkId>, RouteError> {
        let f = self.fabric;
        let dst_desc = || format!("{}/{}", f.port_device(dst), f.port_label(dst));
        let dst_node = f.port(dst).node;
        let dst_guid =
            guid::of(&self.guids, dst_node).map(|g| port_guid(&self.lid_of, g, f.port(dst).number));
        let Some(&lid) = dst_guid.and_then(|g| self.lid_of.get(&g)) else {
            return Err(RouteError::NoLid { dst: dst_desc() });
        };
        let mut path = Vec::new();
        let Some(first) = f.port(src).link() else {
            return Err(RouteError::Missing {
                switch: f.port_device(src).to_string(),
                dst: dst_desc(),
            });
        };
        path.push(first);
        let mut at = far_node(f, first, src);
        let mut visited: Vec<NodeId> = Vec::new();
        loop {
            if at == dst_node {
                return Ok(path);
            }
            let name = || f.node(at).name.clone();
            if visited.contains(&at) {
                return Err(RouteError::Loop {
                    switch: name(),
                    dst: dst_desc(),
                });
            }
            visited.push(at);
            let Some(g) = guid::of(&self.guids, at) else {
                return Err(RouteError::Missing {
                    switch: name(),
                    dst: dst_desc(),
                });
            };
            let Some(table) = self.lfts.switches.get(&g) else {
                return Err(RouteError::UnknownSwitch { switch: name() });
            };
            let port = match table.routes.get(&lid) {
                Some(&p) if p != 0 && u32::from(p) <= f.node(at).num_ports => p,
                _ => {
                    return Err(RouteError::Missing {
                        switch: name(),
                        dst: dst_desc(),
                    })
                }
            };
            let out = f.nth_port(at, u32::from(port) - 1);
            let Some(link) = f.port(out).link() else {
                return Err(RouteError::Missing {
                    switch: name(),
                    dst: dst_desc(),
                });
            };
            path.push(link);
            at = far_node(f, link, out);
        }
    }
}

fn far_node(f: &Fabric, link: LinkId, from: PortId) -> NodeId {
    let l = f.link(link);
    f.port(if l.a == from { l.b } else { l.a }).node
}

/// Routes traced through an OpenSM LFT dump; a route over a failed cable is an error too.
pub struct OpenSmRouting<'a> {
    pub router: Router<'a>,
    /// The dump's file name, for reports.
    pub file: String,
}

impl FabricRouting for OpenSmRouting<'_> {
    fn name(&self) -> String {
        format!("opensm:{}", self.file)
    }

    fn route(
        &self,
        net: &FabricNet<'_>,
        src: PortId,
        dst: PortId,
        _conn: u32,
        out: &mut Vec<Vec<LinkId>>,
    ) -> Result<(), RouteFailure> {
        let f = net.fabric;
        let name = |p: PortId| format!("{}/{}", f.port_device(p), f.port_label(p));
        let fail = |reason: String| RouteFailure {
            src: name(src),
            dst: name(dst),
            reason,
        };
        let links = self
            .router
            .route(src, dst)
            .map_err(|e| fail(e.to_string()))?;
        if let Some(l) = links.iter().find(|l| net.is_failed(**l)) {
            let link = f.link(*l);
            return Err(fail(format!(
                "the LFT route crosses a failed cable ({} - {})",
                name(link.a),
                name(link.b)
            )));
        }
        out.push(links);
        Ok(())
    }
}

/// How far `opensm`'s routes agree with railyard's own D-mod-K ([`TreeRouter`] over
/// [`RoutingKind::DModK`]): a shift permutation of every cabled NIC port (port i to port i + n/2, in
/// link order) compared path by path ([`compare_routes`]). Equal routes give equal simulated times.
pub fn compare_with_dmodk(net: &FabricNet<'_>, opensm: &dyn FabricRouting) -> RouteComparison {
    let ports: Vec<PortId> = net
        .fabric
        .network_links()
        .filter(|(_, l)| l.kind == LinkKind::ServerLeaf)
        .map(|(_, l)| l.a)
        .collect();
    let n = ports.len();
    let pairs: Vec<(PortId, PortId)> = (0..n)
        .map(|i| (ports[i], ports[(i + n / 2) % n]))
        .filter(|(x, y)| x != y)
        .collect();
    let dmodk = TreeRouter::new(RoutingKind::DModK, RoutingConfig::default());
    compare_routes(net, opensm, &dmodk, &pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_opensm_dump() {
        let text = "Unicast lids [0-86] of switch Lid 1 guid 0x0002c90100000001 ('leaf01'):\n\
0x0001 000 # Switch portguid 0x0002c90100000001: 'leaf01'\n\
0x000c 001 # Channel Adapter portguid 0x0002c90200000011: 'srv01 hca1'\n\
86 lids in use\n";
        let l = parse(text).unwrap();
        let s = &l.switches[&0x0002c90100000001];
        assert_eq!(s.desc, "leaf01");
        assert_eq!(s.routes[&0x000c], 1);
        assert_eq!(l.lid_owner[&0x000c], 0x0002c90200000011);
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(parse("0x0001 000\n").unwrap_err().line, 1);
        assert_eq!(
            parse("Unicast lids [0-1] of switch Lid 1 guid 0xZZ ('x'):\n")
                .unwrap_err()
                .line,
            1
        );
        assert_eq!(
            parse("Unicast lids [0-1] of switch Lid 1 guid 0x1 ('x'):\nbogus\n")
                .unwrap_err()
                .line,
            2
        );
    }
}
