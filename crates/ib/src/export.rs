//! Export a fabric as an ibnetdiscover-format topology file for ibsim, and the files OpenSM's fat-tree
//! routing wants.
//!
//! Format facts (shared/reference/infiniband-tools.md, observed with Debian 12's ibsim 0.10): a node
//! header `Switch|Ca <nports> "<nodeid>"`, preceded by `switchguid=` / `caguid=` / `sysimgguid=` /
//! `vendid=` directives that apply to the next node only; port lines `[<port>] "<remote>"[<rport>]` with
//! `w=` (width enable mask: 1x=1, 4x=2), `s=` (speed mask: SDR=1, DDR=2, QDR=4) and `e=` (extended
//! speed mask: FDR=1, EDR=2, HDR=4); every link is listed at both ends, each at its own rate. ibsim
//! 0.10 knows speeds only up to HDR and widths 1x and 4x, so NDR and XDR links are written as HDR,
//! FDR10 as QDR and other widths as 4x ([`Rate::as_ibsim`]), and the file says so; the plan keeps the
//! true rate.

use crate::guid;
use crate::rate::{Rate, Speed, Width};
use railyard_catalog::{Family, Tech};
use railyard_fabric::{Fabric, LinkKind, NodeKind, Tier};
use std::fmt::{self, Write};

/// Why a fabric cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportError(pub String);

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ExportError {}

/// An exported topology and what the export had to approximate.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    pub text: String,
    /// Approximations ibsim forces (speeds it cannot represent), one sentence each.
    pub notes: Vec<String>,
}

/// The node id and description a node gets in the topology file: the switch name (`su1-leaf3`), or for
/// a NIC its server and local name (`su1-srv07 hca3`), as `ibnetdiscover` shows node descriptions.
pub fn node_desc(f: &Fabric, id: railyard_fabric::NodeId) -> String {
    let n = f.node(id);
    match (n.kind, n.server) {
        (NodeKind::Nic { .. } | NodeKind::StorageNic, Some(s)) => {
            let local = n.name.rsplit('/').next().unwrap_or(&n.name);
            format!("{} {local}", f.servers[s as usize].name)
        }
        _ => n.name.clone(),
    }
}

/// The port settings that bring a link up at `rate` in ibsim (`w=2 e=4` for 4xHDR, `w=2 s=4 e=0`
/// for 4xQDR): the width mask, then the speed mask, which for SDR, DDR and QDR also clears the
/// extended speeds. `rate` must be one ibsim shows ([`Rate::as_ibsim`]).
fn ibsim_settings(rate: Rate) -> Option<&'static str> {
    let one = rate.width == Width::X1;
    Some(match (one, rate.speed) {
        (true, Speed::Sdr) => "w=1 s=1 e=0",
        (true, Speed::Ddr) => "w=1 s=2 e=0",
        (true, Speed::Qdr) => "w=1 s=4 e=0",
        (true, Speed::Fdr) => "w=1 e=1",
        (true, Speed::Edr) => "w=1 e=2",
        (true, Speed::Hdr) => "w=1 e=4",
        (false, Speed::Sdr) => "w=2 s=1 e=0",
        (false, Speed::Ddr) => "w=2 s=2 e=0",
        (false, Speed::Qdr) => "w=2 s=4 e=0",
        (false, Speed::Fdr) => "w=2 e=1",
        (false, Speed::Edr) => "w=2 e=2",
        (false, Speed::Hdr) => "w=2 e=4",
        (_, Speed::Fdr10 | Speed::Ndr | Speed::Xdr | Speed::Unknown) => return None,
    })
}

/// Writes the fabric's InfiniBand devices (switches and cabled NICs) and links for `ibsim -s`.
pub fn ibsim_topology(f: &Fabric) -> Result<Export, ExportError> {
    let tech = f.meta.tech;
    if tech.family() != Family::Infiniband {
        return Err(ExportError(format!(
            "a {tech} fabric has no InfiniBand topology; valid technologies: {}",
            Tech::ALL
                .iter()
                .filter(|t| t.family() == Family::Infiniband)
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let guids = guid::assign(f);
    let notes = rate_notes(f)?;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "# railyard topology for ibsim: {} ({})",
        f.meta.name, tech
    );
    let _ = writeln!(
        out,
        "# {} switches, {} HCAs with network links, {} links; GUID OUI 0x{:06x}",
        f.nodes.iter().filter(|n| n.is_switch()).count(),
        f.nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Nic { .. }))
            .count(),
        f.network_links().count(),
        guid::OUI
    );
    for n in &notes {
        let _ = writeln!(out, "# note: {n}");
    }
    out.push('\n');

    // Switches first: ibsim attaches clients to the first node unless told otherwise.
    let order = f
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_switch())
        .chain(
            f.nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| matches!(n.kind, NodeKind::Nic { .. } | NodeKind::StorageNic)),
        );
    for (i, _) in order {
        write_node(&mut out, f, &guids, i);
    }
    Ok(Export { text: out, notes })
}

/// What ibsim can show of each rate, and a note for each speed and width it cannot; a link of no
/// InfiniBand rate is an error.
fn rate_notes(f: &Fabric) -> Result<Vec<String>, ExportError> {
    let tech = f.meta.tech;
    let mut notes = Vec::new();
    let mut width_notes = Vec::new();
    let (mut speeds_noted, mut widths_noted) = (Vec::new(), Vec::new());
    for (_, l) in f.network_links() {
        let rate = Rate::of_link(l.gbps, l.lanes);
        if rate.speed == Speed::Unknown || rate.width == Width::Unknown {
            return Err(ExportError(format!(
                "a link of {} Gb/s over {} lanes is no InfiniBand rate; valid: 1x, 2x, 4x, 8x or 12x lanes of {}",
                l.gbps,
                l.lanes,
                Speed::ALL.map(Speed::name).join(", ")
            )));
        }
        let shown = rate.as_ibsim();
        if shown.speed != rate.speed && !speeds_noted.contains(&rate.speed) {
            speeds_noted.push(rate.speed);
            notes.push(format!(
                "ibsim 0.10 cannot represent {} ({} Gb/s links): links are written as 4x{}; the plan keeps {} Gb/s",
                rate.speed.tech().unwrap_or(tech),
                l.gbps,
                shown.speed,
                l.gbps
            ));
        }
        if shown.width != rate.width && !widths_noted.contains(&l.lanes) {
            widths_noted.push(l.lanes);
            width_notes.push(format!(
                "{}x links are written as 4x, the widest width every ibsim build accepts",
                l.lanes
            ));
        }
    }
    notes.extend(width_notes);
    Ok(notes)
}

/// One device of [`ibsim_topology`]: its header and its network links, then a blank line; a NIC
/// without a network link (or without a GUID) is left out.
fn write_node(out: &mut String, f: &Fabric, guids: &[Option<u64>], i: usize) {
    let node = &f.nodes[i];
    let id = railyard_fabric::NodeId(i as u32);
    let Some(g) = guid::of(guids, id) else {
        return;
    };
    let links: Vec<_> = node
        .ports()
        .filter_map(|p| f.port(p).link().map(|l| (p, f.link(l))))
        .filter(|(_, l)| l.kind.is_network())
        .collect();
    if links.is_empty() && !node.is_switch() {
        return;
    }
    let role = node.tier().map_or("HCA", Tier::as_str);
    let _ = writeln!(out, "# {role} {}", node.model);
    let _ = writeln!(out, "vendid=0x2c9");
    let _ = writeln!(out, "sysimgguid=0x{g:x}");
    let network_ports = match node.kind {
        // A NIC's last port in the graph is its PCIe attachment.
        NodeKind::Nic { .. } | NodeKind::StorageNic => node.num_ports - 1,
        _ => node.num_ports,
    };
    if node.is_switch() {
        let _ = writeln!(out, "switchguid=0x{g:x}");
        // A `# "..."` after the header is the node description ibsim reports.
        let _ = writeln!(out, "Switch\t{network_ports} \"{0}\"\t# \"{0}\"", node.name);
    } else {
        let _ = writeln!(out, "caguid=0x{g:x}");
        let _ = writeln!(
            out,
            "Ca\t{network_ports} \"{0}\"\t# \"{0}\"",
            node_desc(f, id)
        );
    }
    for (p, link) in links {
        let other = if link.a == p { link.b } else { link.a };
        let remote = f.port(other);
        let shown = Rate::of_link(link.gbps, link.lanes).as_ibsim();
        let _ = writeln!(
            out,
            "[{}]\t\"{}\"[{}]\t{}\t# {shown}{}",
            f.port(p).number,
            node_desc(f, remote.node),
            remote.number,
            ibsim_settings(shown).unwrap_or_default(),
            if link.kind == LinkKind::ServerLeaf {
                ""
            } else {
                " inter-switch"
            }
        );
    }
    out.push('\n');
}

/// Files for OpenSM's fat-tree routing and for ibsim's size limits:
/// `root_guids.txt` (the top tier: cores, spines of a two-tier tree, or leaves; `opensm -a`),
/// `cn_guids.txt` (compute HCA port GUIDs; `opensm -u`), and `ibsim-flags.txt` (the `-N -S -P` limits
/// this fabric needs; ibsim defaults to 2048 nodes, 256 switches, 13312 ports).
pub fn opensm_files(f: &Fabric) -> Vec<(&'static str, String)> {
    let guids = guid::assign(f);
    // ftree ranks switches from the roots down, so only the top tier may be listed.
    let top = match f.meta.tiers {
        1 => Tier::Leaf,
        2 => Tier::Spine,
        _ => Tier::Core,
    };
    let mut roots = String::new();
    for (i, n) in f.nodes.iter().enumerate() {
        if n.tier() == Some(top) {
            if let Some(g) = guids[i] {
                let _ = writeln!(roots, "0x{g:016x}");
            }
        }
    }
    let mut cns = String::new();
    let (mut nodes, mut switches, mut ports) = (0u64, 0u64, 0u64);
    for (i, n) in f.nodes.iter().enumerate() {
        let Some(g) = guids[i] else { continue };
        match n.kind {
            NodeKind::Switch { .. } => {
                nodes += 1;
                switches += 1;
                ports += u64::from(n.num_ports) + 1;
            }
            NodeKind::Nic { .. } => {
                let cabled: Vec<u32> = n
                    .ports()
                    .filter(|&p| {
                        f.port(p)
                            .link()
                            .is_some_and(|l| f.link(l).kind.is_network())
                    })
                    .map(|p| f.port(p).number)
                    .collect();
                if cabled.is_empty() {
                    continue;
                }
                nodes += 1;
                ports += u64::from(n.num_ports - 1);
                for p in cabled {
                    let _ = writeln!(cns, "0x{:016x}", guid::ca_port_guid(g, p));
                }
            }
            _ => {}
        }
    }
    let flag = |v: u64, default: u64| v.max(default);
    let flags = format!(
        "-N {} -S {} -P {}\n",
        flag(nodes + 16, 2048),
        flag(switches + 16, 256),
        flag(ports + 64, 13312)
    );
    vec![
        ("root_guids.txt", roots),
        ("cn_guids.txt", cns),
        ("ibsim-flags.txt", flags),
    ]
}

/// The fabric as `ibnetdiscover` would print it on the built cluster: `S-`/`H-` node ids from the
/// GUIDs, descriptions in comments, LIDs assigned in order (switches first), and each link's true
/// width and speed (`4xNDR`). Useful as the expected discovery of a plan and for benchmarks.
pub fn ibnetdiscover_text(f: &Fabric) -> Result<String, ExportError> {
    if f.meta.tech.family() != Family::Infiniband {
        return ibsim_topology(f).map(|e| e.text);
    }
    let guids = guid::assign(f);
    let order: Vec<usize> = f
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_switch())
        .chain(f.nodes.iter().enumerate().filter(|(_, n)| {
            matches!(n.kind, NodeKind::Nic { .. })
                && n.ports().any(|p| {
                    f.port(p)
                        .link()
                        .is_some_and(|l| f.link(l).kind.is_network())
                })
        }))
        .map(|(i, _)| i)
        .collect();
    let mut lid = vec![0u32; f.nodes.len()];
    for (k, &i) in order.iter().enumerate() {
        lid[i] = k as u32 + 1;
    }
    let id_of = |i: usize| -> String {
        let g = guids[i].unwrap_or(0);
        if f.nodes[i].is_switch() {
            format!("S-{g:016x}")
        } else {
            format!("H-{g:016x}")
        }
    };
    let mut out = String::with_capacity(order.len() * 400);
    out.push_str("#\n# Topology file: railyard's expected ibnetdiscover output for ");
    out.push_str(&f.meta.name);
    out.push_str("\n#\n\n");
    for &i in &order {
        let node = &f.nodes[i];
        let g = guids[i].unwrap_or(0);
        let desc = node_desc(f, railyard_fabric::NodeId(i as u32));
        let _ = writeln!(out, "vendid=0x2c9\ndevid=0x0\nsysimgguid=0x{g:x}");
        if node.is_switch() {
            let _ = writeln!(out, "switchguid=0x{g:x}({g:x})");
            let _ = writeln!(
                out,
                "Switch\t{} \"{}\"\t\t# \"{desc}\" enhanced port 0 lid {} lmc 0",
                node.num_ports,
                id_of(i),
                lid[i]
            );
        } else {
            let _ = writeln!(out, "caguid=0x{g:x}");
            let _ = writeln!(
                out,
                "Ca\t{} \"{}\"\t\t# \"{desc}\"",
                node.num_ports - 1,
                id_of(i)
            );
        }
        for p in node.ports() {
            let Some(l) = f.port(p).link() else { continue };
            let link = f.link(l);
            if !link.kind.is_network() {
                continue;
            }
            let other = if link.a == p { link.b } else { link.a };
            let r = f.port(other);
            let ri = r.node.0 as usize;
            let rate = crate::rate::rate_name(link.gbps, link.lanes, false);
            let rdesc = node_desc(f, r.node);
            let number = f.port(p).number;
            if node.is_switch() {
                let remote_guid = match f.nodes[ri].is_switch() {
                    true => String::new(),
                    false => format!(
                        "({:x})",
                        guid::ca_port_guid(guids[ri].unwrap_or(0), r.number)
                    ),
                };
                let _ = writeln!(
                    out,
                    "[{number}]\t\"{}\"[{}]{remote_guid}\t\t# \"{rdesc}\" lid {} {rate}",
                    id_of(ri),
                    r.number,
                    lid[ri]
                );
            } else {
                let _ = writeln!(
                    out,
                    "[{number}]({:x}) \t\"{}\"[{}]\t\t# lid {} lmc 0 \"{rdesc}\" lid {} {rate}",
                    guid::ca_port_guid(g, number),
                    id_of(ri),
                    r.number,
                    lid[i],
                    lid[ri]
                );
            }
        }
        out.push('\n');
    }
    Ok(out)
}
