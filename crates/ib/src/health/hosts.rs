//! Findings about hosts: an HCA with a port down while its twin is up, and a host that shows
//! fewer HCAs than its peers (with the switch port where the missing one belongs).

use super::{escaped, gbps, mode, End, Finding, Kind, Repair, View};
use crate::discovery::NodeType;
use crate::rate::Rate;
use railyard_fabric::import::natural_cmp;
use std::collections::{BTreeMap, BTreeSet};

/// Where a missing HCA belongs: the free switch port (node index, port), and the finding's
/// ends (the HCA, not discovered, and that switch port).
type FarEnd = ((usize, u32), (End, Option<End>));

/// Each host HCA's switch end (its first cable to a switch), by (host, hca).
type HcaAt<'a> = BTreeMap<(&'a str, &'a str), (usize, u32)>;

/// HCAs with a port down while their twin is up.
pub(super) fn ports_down(v: &View, findings: &mut Vec<Finding>) {
    let d = v.d;
    let mut cabled: BTreeMap<usize, BTreeMap<u32, (usize, u32)>> = BTreeMap::new();
    for &k in &v.links {
        let l = &d.links[k];
        for (me, other) in [(l.a, l.b), (l.b, l.a)] {
            if v.is_host(me.0) {
                cabled.entry(me.0).or_default().insert(me.1, other);
            }
        }
    }
    let ports_of = |i: usize| d.nodes[i].reported_ports.unwrap_or(d.nodes[i].ports);
    let mut by_ports: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for &i in cabled.keys() {
        by_ports.entry(ports_of(i)).or_default().push(i);
    }
    for (&n, cas) in &by_ports {
        if n < 2 {
            continue;
        }
        let norm = mode(cas.iter().map(|i| cabled[i].len())).unwrap_or(0);
        let peers = cas.iter().filter(|i| cabled[i].len() == norm).count();
        for &i in cas {
            let up = &cabled[&i];
            if up.len() >= norm {
                continue;
            }
            let down: Vec<u32> = (1..=n).filter(|p| !up.contains_key(p)).collect();
            let mut ends: Vec<(End, Option<End>)> =
                down.iter().map(|&p| (v.end((i, p)), None)).collect();
            ends.extend(up.iter().map(|(&p, &o)| (v.end((i, p)), Some(v.end(o)))));
            findings.push(Finding {
                kind: Kind::PortDown,
                what: format!(
                    "HCA \"{}\" has port{} {} down while port{} {} {} up, where {peers} of the {} {n}-port HCAs have {norm} cabled",
                    escaped(v.desc(i)),
                    if down.len() == 1 { "" } else { "s" },
                    down.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
                    if up.len() == 1 { "" } else { "s" },
                    up.keys().map(u32::to_string).collect::<Vec<_>>().join(", "),
                    if up.len() == 1 { "is" } else { "are" },
                    cas.len()
                ),
                fix: "check the cable of the port that is down and the switch port it goes to (ibportstate shows the port's physical state)".to_string(),
                ends,
                repair: Vec::new(),
                rates: None,
            });
        }
    }
}

/// Hosts that show fewer HCAs than most.
pub(super) fn missing_hcas(
    v: &View,
    host_of: &[Option<(String, String)>],
    findings: &mut Vec<Finding>,
) {
    let d = v.d;
    let mut per_host: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (host, hca) in host_of.iter().flatten() {
        per_host
            .entry(host.as_str())
            .or_default()
            .push(hca.as_str());
    }
    let Some(norm) = mode(per_host.values().map(Vec::len)) else {
        return;
    };
    let peers = per_host.values().filter(|v| v.len() == norm).count();
    let mut short: Vec<(&&str, &Vec<&str>)> =
        per_host.iter().filter(|(_, v)| v.len() < norm).collect();
    short.sort_by(|a, b| natural_cmp(a.0, b.0));
    // Each host HCA's switch end (its first cable to a switch), by (host, hca).
    let mut hca_at: HcaAt = BTreeMap::new();
    for l in &d.links {
        for (ca, sw) in [(l.a, l.b), (l.b, l.a)] {
            if let (Some((h, c)), NodeType::Switch) = (&host_of[ca.0], d.nodes[sw.0].kind) {
                hca_at.entry((h.as_str(), c.as_str())).or_insert(sw);
            }
        }
    }
    let used: BTreeSet<(usize, u32)> = d.links.iter().flat_map(|l| [l.a, l.b]).collect();
    let rate_at: BTreeMap<(usize, u32), Rate> = d
        .links
        .iter()
        .filter_map(|l| l.rate.map(|r| [(l.a, r), (l.b, r)]))
        .flatten()
        .collect();
    for (host, hcas) in short {
        let numbered: Option<BTreeSet<u32>> = hcas
            .iter()
            .map(|h| h.strip_prefix("hca").and_then(|n| n.parse().ok()))
            .collect();
        let missing = numbered.map(|have| {
            (1..=norm as u32)
                .filter(|n| !have.contains(n))
                .map(|n| format!("hca{n}"))
                .collect::<Vec<_>>()
        });
        // Where each missing HCA would be cabled, from the host's peers: every host that
        // cables one of this host's HCAs to the same switch says where its own copy of the
        // missing HCA goes, relative to that one: the other switch it reaches (a rail's leaf,
        // in a rail-optimized unit) or the same, and the port as far from this host's port as
        // the peer's two ports are apart. The place most peers agree on, when it is free in
        // the discovery, is the far end.
        let mut ends = Vec::new();
        let mut repair = Vec::new();
        // Priced as its host's other HCAs run (the slowest of them, if they differ).
        let rate = hcas
            .iter()
            .filter_map(|k| hca_at.get(&(host, *k)))
            .filter_map(|at| rate_at.get(at))
            .filter_map(|r| Some((*r, gbps(Some(*r))?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(r, _)| r);
        for hca in missing.iter().flatten() {
            let Some((at, end)) = far_end(v, &hca_at, &used, host, hcas, hca) else {
                continue;
            };
            ends.push(end);
            if let Some(rate) = rate {
                repair.push(Repair::Hca {
                    desc: format!("{host} {hca}"),
                    at,
                    rate,
                });
            }
        }
        let placed_all = repair.len() == missing.as_ref().map_or(0, Vec::len);
        findings.push(Finding {
            kind: Kind::MissingHca,
            what: format!(
                "host \"{}\" shows {} HCA{} where {peers} of the {} hosts show {norm}{}",
                escaped(host),
                hcas.len(),
                if hcas.len() == 1 { "" } else { "s" },
                per_host.len(),
                match missing {
                    Some(m) if !m.is_empty() => format!(": {} not seen", m.join(", ")),
                    _ => String::new(),
                }
            ),
            fix: if ends.is_empty() {
                "check that the missing HCA's port is cabled and up (ibstat on the host)"
                    .to_string()
            } else {
                "check that the missing HCA's port is cabled and up (ibstat on the host), to the switch port its peers' HCAs say it belongs at (named above; free in the discovery)"
                    .to_string()
            },
            // Every missing HCA placed, or none priced: a partial repair would price a host
            // still short of an HCA.
            repair: if placed_all { repair } else { Vec::new() },
            ends,
            rates: None,
        });
    }
}

/// Where the missing HCA `hca` of `host` (which shows `hcas`) would be cabled, from the host's
/// peers: every host that cables one of this host's HCAs to the same switch says where its own
/// copy of the missing HCA goes, relative to that one: the other switch it reaches (a rail's leaf,
/// in a rail-optimized unit) or the same, and the port as far from this host's port as the
/// peer's two ports are apart. The place most peers agree on, when it is free in the discovery.
fn far_end(
    v: &View,
    hca_at: &HcaAt,
    used: &BTreeSet<(usize, u32)>,
    host: &str,
    hcas: &[&str],
    hca: &str,
) -> Option<FarEnd> {
    let d = v.d;
    let mut votes: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for (&(q, qc), &(q_sw, q_port)) in hca_at {
        if q == host || qc != hca {
            continue;
        }
        for k in hcas.iter() {
            let (Some(&(h_sw, h_port)), Some(&(qk_sw, qk_port))) =
                (hca_at.get(&(host, *k)), hca_at.get(&(q, *k)))
            else {
                continue;
            };
            if qk_sw != h_sw {
                continue;
            }
            let sw = if q_sw == qk_sw { h_sw } else { q_sw };
            let port = i64::from(h_port) + i64::from(q_port) - i64::from(qk_port);
            if let Ok(port) = u32::try_from(port) {
                *votes.entry((sw, port)).or_default() += 1;
            }
        }
    }
    let (&(sw, port), _) = votes.iter().max_by(|a, b| {
        a.1.cmp(b.1)
            .then_with(|| natural_cmp(v.desc(b.0 .0), v.desc(a.0 .0)))
            .then_with(|| b.0 .1.cmp(&a.0 .1))
    })?;
    if port == 0 || port > d.nodes[sw].ports || used.contains(&(sw, port)) {
        return None;
    }
    Some((
        (sw, port),
        (
            End {
                device: format!("{host} {hca} (not discovered)"),
                guid: None,
                port: 1,
            },
            Some(v.end((sw, port))),
        ),
    ))
}
