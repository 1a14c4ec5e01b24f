//! Findings about links: slower than their peers, between two switches of one tier, looped back
//! to their own switch, or reported at two rates by their two ends.

use super::{
    escaped, gbps, gbps_text, node_chip, plural, tier_name, Finding, Kind, Repair, ReportedRate,
    ReportedRates, View,
};
use crate::chip::Chip;
use crate::discovery::{Discovered, Link, NodeType};
use crate::rate::Rate;
use std::collections::BTreeMap;

/// A class of peer links: (subnet, lower tier, upper tier).
pub(super) type Class = (usize, Option<u32>, Option<u32>);

/// What most links of a class run at, and how many they are.
struct Peers {
    norm: Rate,
    norm_gbps: f64,
    /// How many links of the class run at `norm`.
    count: usize,
    /// How many links the class has.
    of: usize,
    /// The two tiers, for messages (`leaves and spines`).
    between: String,
}

/// Slow links: below the rate most links between the same two tiers of their subnet run at.
/// Returns that rate for each class of links, for the cables a missing uplink needs.
pub(super) fn slow_links(v: &View, findings: &mut Vec<Finding>) -> BTreeMap<Class, Rate> {
    let d = v.d;
    let mut classes: BTreeMap<Class, Vec<usize>> = BTreeMap::new();
    for &k in v
        .links
        .iter()
        .filter(|&&k| d.links[k].a.0 != d.links[k].b.0)
    {
        let (lo, hi) = v.oriented(&d.links[k]);
        classes
            .entry((v.subnet[lo.0], v.tier[lo.0], v.tier[hi.0]))
            .or_default()
            .push(k);
    }
    let mut norm_rate: BTreeMap<Class, Rate> = BTreeMap::new();
    for (class, ks) in &classes {
        let Some((norm, count)) = norm_of(d, ks) else {
            continue;
        };
        norm_rate.insert(*class, norm);
        let peers = Peers {
            norm,
            norm_gbps: gbps(Some(norm)).unwrap_or(0.0),
            count,
            of: ks.len(),
            between: match class {
                (_, Some(a), Some(b)) => format!("{} and {}", plural(*a), plural(*b)),
                _ => "switches without a tier".to_string(),
            },
        };
        findings.extend(ks.iter().filter_map(|&k| slow_link(v, k, &peers)));
    }
    norm_rate
}

/// The rate most of links `ks` run at (ties to the faster) and how many run at it.
fn norm_of(d: &Discovered, ks: &[usize]) -> Option<(Rate, usize)> {
    let known: Vec<Rate> = ks
        .iter()
        .filter_map(|&k| d.links[k].rate)
        .filter(|r| r.lanes_gbps().is_some())
        .collect();
    let mut count: BTreeMap<Rate, usize> = BTreeMap::new();
    for r in &known {
        *count.entry(*r).or_default() += 1;
    }
    count
        .iter()
        .max_by(|a, b| {
            a.1.cmp(b.1).then(
                gbps(Some(*a.0))
                    .partial_cmp(&gbps(Some(*b.0)))
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
        })
        .map(|(r, c)| (*r, *c))
}

/// Link `k` as a finding when it runs below its peers: a slow device when the chip at one end
/// tops out at its speed, else a slow link to reseat.
fn slow_link(v: &View, k: usize, p: &Peers) -> Option<Finding> {
    let d = v.d;
    let (norm, norm_gbps) = (p.norm, p.norm_gbps);
    let l = &d.links[k];
    let rate = l.rate?;
    let g = gbps(Some(rate))?;
    if g >= norm_gbps {
        return None;
    }
    let (lo, hi) = v.oriented(l);
    // The slower chip of the two ends, where the discovery names them: a link at that
    // chip's top speed runs as fast as the chip can, whatever the cable.
    let limit = [lo.0, hi.0]
        .into_iter()
        .filter_map(|n| Some((n, node_chip(&d.nodes[n])?)))
        .min_by_key(|(_, c)| c.top_speed)
        .filter(|(_, c)| rate.speed == c.top_speed && c.top_speed < norm.speed);
    let slow_width = rate.width != norm.width;
    if let (Some(slowest), false) = (limit, slow_width) {
        return Some(slow_device(v, k, (rate, g), slowest, p));
    }
    // What reseating can bring back: the peers' width, and their speed unless a chip at
    // one end tops out below it.
    let target = match limit {
        Some((_, c)) => Rate {
            width: norm.width,
            speed: c.top_speed,
        },
        None => norm,
    };
    let mut lower = Vec::new();
    if slow_width {
        lower.push(format!(
            "width {} where they run {}",
            rate.width, norm.width
        ));
    }
    if rate.speed != norm.speed {
        lower.push(match limit {
            Some((n, c)) => format!(
                "speed {} where they run {}, the top speed of \"{}\" ({}, device id {:#06x})",
                rate.speed,
                norm.speed,
                escaped(&d.nodes[n].desc),
                c.name,
                d.nodes[n].device_id.unwrap_or(0)
            ),
            None => format!("speed {} where they run {}", rate.speed, norm.speed),
        });
    }
    let (peers, between) = (p.count, &p.between);
    Some(Finding {
        kind: Kind::SlowLink,
        what: format!(
            "runs at {rate} ({} Gb/s) where {peers} of the {} links between {between} run at {norm} ({} Gb/s): {}",
            gbps_text(g),
            p.of,
            gbps_text(norm_gbps),
            lower.join(", ")
        ),
        fix: format!(
            "reseat the cable at both ends, clean or replace it (or its transceivers) and check that neither port's LinkWidthEnabled / LinkSpeedEnabled (ibportstate) is set lower; it should come up at {target}"
        ),
        ends: vec![(v.end(lo), Some(v.end(hi)))],
        repair: vec![Repair::Rate { link: k, rate: target }],
        rates: None,
    })
}

/// A link at the top speed of the slower chip at its ends, below its peers: no reseating helps.
fn slow_device(
    v: &View,
    k: usize,
    (rate, g): (Rate, f64),
    (n, c): (usize, Chip),
    p: &Peers,
) -> Finding {
    let d = v.d;
    let (lo, hi) = v.oriented(&d.links[k]);
    let (norm, norm_gbps, peers, between) = (p.norm, p.norm_gbps, p.count, &p.between);
    let part = match d.nodes[n].kind {
        NodeType::Switch => "switch",
        _ => "HCA",
    };
    Finding {
        kind: Kind::SlowDevice,
        what: format!(
            "runs at {rate} ({} Gb/s), the top speed of the {part} \"{}\" ({}, device id {:#06x}), where {peers} of the {} links between {between} run at {norm} ({} Gb/s)",
            gbps_text(g),
            escaped(&d.nodes[n].desc),
            c.name,
            d.nodes[n].device_id.unwrap_or(0),
            p.of,
            gbps_text(norm_gbps),
        ),
        fix: format!(
            "no cable fault: a {} runs {} at most; to run this link at {norm}, replace the {part} with one that runs {}",
            c.name, c.top_speed, norm.speed
        ),
        ends: vec![(v.end(lo), Some(v.end(hi)))],
        repair: vec![Repair::Rate { link: k, rate: norm }],
        rates: None,
    }
}

/// Cables between switches of one tier, where there is a tier above to carry traffic instead.
pub(super) fn same_tier_links(v: &View, findings: &mut Vec<Finding>) {
    let d = v.d;
    if v.max_tier > 1 {
        for &k in &v.links {
            let l = &d.links[k];
            if v.subnet_top(l.a.0) > 1
                && l.a.0 != l.b.0
                && v.is_switch(l.a.0)
                && v.is_switch(l.b.0)
                && v.tier[l.a.0].is_some()
                && v.tier[l.a.0] == v.tier[l.b.0]
            {
                let t = v.tier[l.a.0].unwrap_or(0);
                findings.push(Finding {
                    kind: Kind::SameTierLink,
                    what: format!(
                        "a cable between two {}: a tree joins them through the tier above, and routing may send traffic over it",
                        plural(t)
                    ),
                    fix: format!(
                        "move it to a port of a {} (or remove it) if it is a miswire",
                        tier_name(t + 1)
                    ),
                    ends: vec![(v.end(l.a), Some(v.end(l.b)))],
                    repair: Vec::new(),
                    rates: None,
                });
            }
        }
    }
}

/// Cables from a switch back to itself.
pub(super) fn loopbacks(v: &View, findings: &mut Vec<Finding>) {
    let d = v.d;
    for &k in &v.links {
        let l = &d.links[k];
        if l.a.0 == l.b.0 {
            findings.push(Finding {
                kind: Kind::Loopback,
                what: format!(
                    "a cable from port {} of \"{}\" back to its own port {}: it joins the switch to itself and carries no traffic between hosts (a test loop, or a miswire)",
                    l.a.1,
                    escaped(v.desc(l.a.0)),
                    l.b.1
                ),
                fix: "remove it if no test needs it, or cable both ends where the plan has them"
                    .to_string(),
                ends: vec![(v.end(l.a), Some(v.end(l.b)))],
                repair: Vec::new(),
                rates: None,
            });
        }
    }
}

/// Links whose two ends reported different rates: kept at the lower (a slow-link finding above
/// where that is below its peers); the disagreement itself says the link retrained.
pub(super) fn rate_disagreements(v: &View, findings: &mut Vec<Finding>) {
    let d = v.d;
    for r in &d.rate_disagreements {
        if !(v.kept[r.a.0] && v.kept[r.b.0]) {
            continue;
        }
        let (lo, hi) = v.oriented(&Link {
            a: r.a,
            b: r.b,
            rate: Some(r.kept),
            line: r.first.0,
        });
        findings.push(Finding {
            kind: Kind::RateDisagreement,
            what: format!(
                "its two ends report different rates: {} at line {}, {} at line {}; the discovery reads each end when it reaches that node, so the link came up at another rate between the two reads (or the file was edited); this check takes it at the lower, {}",
                r.first.1, r.first.0, r.second.1, r.second.0, r.kept
            ),
            fix: "run the discovery again (or `iblinkinfo` on the switch) to see the rate it runs at now; a link that keeps changing rate is a cable or port to reseat or replace".to_string(),
            ends: vec![(v.end(lo), Some(v.end(hi)))],
            repair: Vec::new(),
            rates: Some(ReportedRates {
                reported: [r.first, r.second]
                    .iter()
                    .map(|(line, rate)| ReportedRate {
                        line: *line,
                        rate: rate.to_string(),
                    })
                    .collect(),
                kept: r.kept.to_string(),
            }),
        });
    }
}
