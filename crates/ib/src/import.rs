//! A discovered topology as a railyard fabric, so `sim` and `verify` can use what ibnetdiscover saw.
//!
//! Every link keeps the rate it was discovered at (a link that came up degraded, 4xDDR in an EDR
//! fabric, stays 4xDDR), and the fabric's technology is the one most links run at (ties go to the
//! faster, so a half-degraded fabric keeps its design speed), whichever link comes first in the file.
//! A link whose rate is unknown or missing cannot be imported: the error names its line.

use crate::discovery::{shown, Discovered, NodeType};
use crate::rate::{Rate, Speed};
use railyard_fabric::import::{assemble, Cable, Device};
use railyard_fabric::{BuildError, Fabric};
use std::collections::BTreeMap;
use std::fmt;

/// Why a discovered topology does not import. Link errors name the line of the link's record and
/// its two ends (`"description"[port]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportError {
    /// A link printed without a rate (an ibsim topology file, say).
    NoRate { line: usize, a: String, b: String },
    /// A link at a rate the tool could not read in full (`4x???`).
    UnknownRate {
        line: usize,
        a: String,
        b: String,
        rate: Rate,
    },
    /// No link to import (and so no technology to import it at).
    NoLinks,
    /// The devices and cables do not make a fabric; the error names the field at fault.
    Assemble(BuildError),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::NoRate { line, a, b } => write!(
                f,
                "line {line}: the link {a} - {b} has no rate such as 4xHDR; fabrics are imported from ibnetdiscover or iblinkinfo output, which gives every link's rate"
            ),
            ImportError::UnknownRate { line, a, b, rate } => write!(
                f,
                "line {line}: the link {a} - {b} runs at an unknown rate ({rate}): the tool could not read its width or speed; rediscover it, or fix the port"
            ),
            ImportError::NoLinks => f.write_str("the topology has no links"),
            ImportError::Assemble(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ImportError {}

/// The technology most of `rates` run at, ties to the faster; `None` without known speeds.
pub fn majority_speed(rates: impl IntoIterator<Item = Rate>) -> Option<Speed> {
    let mut count: BTreeMap<Speed, usize> = BTreeMap::new();
    for r in rates {
        if r.speed != Speed::Unknown {
            *count.entry(r.speed).or_default() += 1;
        }
    }
    // BTreeMap iterates slowest first; max_by_key keeps the last maximum: the faster on a tie.
    count.into_iter().max_by_key(|&(_, n)| n).map(|(s, _)| s)
}

/// The name a node gets when its description is shared by another node of its kind: the description
/// with the node id (`MT25408 ConnectX Mellanox Technologies (H-0002c90300048248)`). Such a CA is a
/// server of its own with one `hca1`.
pub(crate) fn unique_name(n: &crate::discovery::Node) -> String {
    format!("{} ({})", n.desc, n.id)
}

/// Server and HCA names of a CA description: `su1-srv07 hca3` and `node0013 mlx5_2` (read as `hca3`)
/// split at the last space; a description without one is a server with a single `hca1`.
pub(crate) fn split_ca(desc: &str) -> (String, String) {
    match desc.rsplit_once(' ') {
        Some((host, dev)) => {
            let hca = match dev
                .strip_prefix("mlx5_")
                .and_then(|n| n.parse::<u32>().ok())
            {
                Some(n) => format!("hca{}", n + 1),
                None => dev.to_string(),
            };
            (host.to_string(), hca)
        }
        None => (desc.to_string(), "hca1".to_string()),
    }
}

/// Builds a fabric from a discovered topology. Errors name the line of the record at fault.
pub fn to_fabric(d: &Discovered, name: &str) -> Result<Fabric, ImportError> {
    let end = |(n, p): (usize, u32)| format!("\"{}\"[{p}]", shown(&d.nodes[n].desc));
    // SHARP aggregation nodes are part of their switch: left out, with their links.
    let mut index: Vec<Option<usize>> = Vec::with_capacity(d.nodes.len());
    let mut kept = 0;
    for n in &d.nodes {
        index.push((!n.is_aggregation_node()).then(|| {
            kept += 1;
            kept - 1
        }));
    }
    let mut cables = Vec::with_capacity(d.links.len());
    let mut rates = Vec::with_capacity(d.links.len());
    for l in &d.links {
        let (Some(a), Some(b)) = (index[l.a.0], index[l.b.0]) else {
            continue;
        };
        let rate = l.rate.ok_or_else(|| ImportError::NoRate {
            line: l.line,
            a: end(l.a),
            b: end(l.b),
        })?;
        let (lanes, gbps) = rate.lanes_gbps().ok_or_else(|| ImportError::UnknownRate {
            line: l.line,
            a: end(l.a),
            b: end(l.b),
            rate,
        })?;
        rates.push(rate);
        cables.push(Cable {
            a: (a, l.a.1),
            b: (b, l.b.1),
            gbps,
            lanes,
        });
    }
    let tech = majority_speed(rates)
        .and_then(Speed::tech)
        .ok_or(ImportError::NoLinks)?;
    // Names must be unique: a description shared by several switches gets the node id appended, and
    // CAs that share a description (left at the adapter's default) are servers of their own.
    let mut seen: BTreeMap<(bool, &str), usize> = BTreeMap::new();
    for n in &d.nodes {
        *seen
            .entry((n.kind == NodeType::Ca, n.desc.as_str()))
            .or_default() += 1;
    }
    let devices = d
        .nodes
        .iter()
        .filter(|n| !n.is_aggregation_node())
        .map(|n| match n.kind {
            NodeType::Ca if seen[&(true, n.desc.as_str())] > 1 => Device {
                name: unique_name(n),
                hca: Some("hca1".to_string()),
                ports: n.ports,
            },
            NodeType::Ca => {
                let (server, hca) = split_ca(&n.desc);
                Device {
                    name: server,
                    hca: Some(hca),
                    ports: n.ports,
                }
            }
            NodeType::Switch | NodeType::Router => Device {
                name: if seen[&(false, n.desc.as_str())] > 1 {
                    unique_name(n)
                } else {
                    n.desc.clone()
                },
                hca: None,
                ports: n.ports,
            },
        })
        .collect::<Vec<_>>();
    let mut f = assemble(name, tech, &devices, &cables).map_err(ImportError::Assemble)?;
    // The site's GUIDs, by the names the devices got, for routing over the site's OpenSM tables.
    let guids = {
        let by_name: BTreeMap<&str, usize> = f
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let kept = d.nodes.iter().filter(|n| !n.is_aggregation_node());
        let mut guids = BTreeMap::new();
        for (dev, node) in devices.iter().zip(kept) {
            let Some(g) = node.guid else { continue };
            let name = match &dev.hca {
                Some(h) => format!("{}/{h}", dev.name),
                None => dev.name.clone(),
            };
            if let Some(key) = by_name
                .get(name.as_str())
                .and_then(|&i| f.guid_key(railyard_fabric::NodeId(i as u32)))
            {
                guids.insert(key, format!("{g:#018x}"));
            }
        }
        guids
    };
    f.meta.guids = guids;
    Ok(f)
}

#[cfg(test)]
mod tests;
