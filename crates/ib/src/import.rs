//! A discovered topology as a railyard fabric, so `sim` and `verify` can use what ibnetdiscover saw.

use crate::ibnet::{Discovered, NodeType};
use railyard_catalog::Tech;
use railyard_fabric::import::{assemble, Cable, Device};
use railyard_fabric::Fabric;
use std::collections::BTreeMap;

/// Lanes and Gb/s of a rate as ibnetdiscover prints it (`4xHDR` -> 4 lanes, 200 Gb/s), with the
/// technology it implies. Lane rates: EDR 25, HDR 50, NDR 100, XDR 200 Gb/s (hardware.md).
pub fn parse_rate(rate: &str) -> Option<(u32, f64, Tech)> {
    let (lanes, speed) = rate.split_once('x')?;
    let lanes: u32 = lanes.parse().ok().filter(|&l| l > 0)?;
    let (lane_gbps, tech) = match speed {
        "EDR" => (25.0, Tech::IbEdr),
        "HDR" => (50.0, Tech::IbHdr),
        "NDR" => (100.0, Tech::IbNdr),
        "XDR" => (200.0, Tech::IbXdr),
        _ => return None,
    };
    Some((lanes, lane_gbps * f64::from(lanes), tech))
}

/// Server and HCA names of a CA description: `su1-srv07 hca3` and `node0013 mlx5_2` (read as `hca3`)
/// split at the last space; a description without one is a server with a single `hca1`.
fn split_ca(desc: &str) -> (String, String) {
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
pub fn to_fabric(d: &Discovered, name: &str) -> Result<Fabric, String> {
    let mut tech = None;
    let mut cables = Vec::with_capacity(d.links.len());
    for l in &d.links {
        let rate = l
            .rate
            .as_deref()
            .ok_or_else(|| format!("line {}: the link has no rate such as 4xHDR; fabrics are imported from ibnetdiscover output", l.line))?;
        let (lanes, gbps, t) = parse_rate(rate).ok_or_else(|| {
            format!(
                "line {}: rate `{rate}` is not one of NxEDR, NxHDR, NxNDR, NxXDR",
                l.line
            )
        })?;
        tech = tech.or(Some(t));
        cables.push(Cable {
            a: l.a,
            b: l.b,
            gbps,
            lanes,
        });
    }
    let tech = tech.ok_or("the topology has no links")?;
    // Names must be unique: a description shared by several switches gets the node id appended.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for n in &d.nodes {
        *seen.entry(n.desc.clone()).or_default() += 1;
    }
    let devices = d
        .nodes
        .iter()
        .map(|n| match n.kind {
            NodeType::Ca => {
                let (server, hca) = split_ca(&n.desc);
                Device {
                    name: server,
                    hca: Some(hca),
                    ports: n.ports,
                }
            }
            NodeType::Switch | NodeType::Router => Device {
                name: if seen[&n.desc] > 1 {
                    format!("{} ({})", n.desc, n.id)
                } else {
                    n.desc.clone()
                },
                hca: None,
                ports: n.ports,
            },
        })
        .collect::<Vec<_>>();
    assemble(name, tech, &devices, &cables).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(parse_rate("4xHDR"), Some((4, 200.0, Tech::IbHdr)));
        assert_eq!(parse_rate("2xNDR"), Some((2, 200.0, Tech::IbNdr)));
        assert_eq!(parse_rate("4xQDR"), None);
    }

    #[test]
    fn exported_plan_imports_with_its_shape() {
        let spec = railyard_spec::presets::load("seed-leaf-spine").unwrap();
        let plan = railyard_fabric::build(&spec, &railyard_catalog::Catalog::builtin()).unwrap();
        let text = crate::export::ibsim_topology(&plan).unwrap().text;
        // ibsim files carry no rates; ibnetdiscover output does. Add them as ibnetdiscover prints them.
        let with_rates: String = text
            .lines()
            .map(|l| {
                if l.starts_with('[') {
                    format!("{l}\t# lid 0 4xHDR\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let d = crate::ibnet::parse(&with_rates).unwrap();
        let f = to_fabric(&d, "leaf-spine.topo").unwrap();
        f.check().unwrap();
        assert_eq!(f.servers.len(), 10);
        assert_eq!(f.meta.tiers, 2);
        assert_eq!(f.network_links().count(), plan.network_links().count());
        let report = crate::verify::verify(&f, &d, crate::verify::Options::default());
        assert!(report.matches, "{:?}", report.findings);
    }
}

#[cfg(test)]
mod expected_discovery {
    #[test]
    fn expected_ibnetdiscover_output_imports_and_verifies_with_true_rates() {
        let spec = railyard_spec::presets::load("dgx-h100-superpod").unwrap();
        let plan = railyard_fabric::build(&spec, &railyard_catalog::Catalog::builtin()).unwrap();
        let text = crate::export::ibnetdiscover_text(&plan).unwrap();
        let d = crate::ibnet::parse(&text).unwrap();
        let report = crate::verify::verify(&plan, &d, crate::verify::Options::default());
        assert!(report.matches, "{:?}", report.findings.first());
        let f = super::to_fabric(&d, "expected").unwrap();
        assert_eq!(f.meta.tech, railyard_catalog::Tech::IbNdr);
        assert_eq!(f.network_links().count(), plan.network_links().count());
    }
}
