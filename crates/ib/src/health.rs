//! The health of a discovered fabric on its own, without a plan (`railyard check`): what the fabric
//! is ([`Shape`]) and what is wrong with it ([`Finding`]s naming both ends of each link by
//! description, GUID and port, with what to do).
//!
//! Tiers are read off the structure, as nothing in a discovery names them: hosts are the CAs (a
//! switch's SHARP aggregation node is part of its switch and left out); leaves are the switches
//! cabled to a host; every other switch's tier is one more than its hop distance from the nearest
//! leaf over switch-to-switch cables (spines 2, cores 3, ...). A switch with no path to a host has
//! no tier.
//!
//! Peers are the links between the same two tiers (hosts to leaves, leaves to spines, ...) and the
//! switches of one tier. What most peers do is the norm: the rate most links of a pair of tiers run
//! at, the uplink count most switches of a tier have (ties go to the faster rate and the larger
//! count). Findings:
//! - `slow-link`: a link below the width or speed its peers run at;
//! - `slow-device`: a link below its peers' speed at the top speed of the chip at one end (a DDR
//!   ConnectX among QDR hosts: [`crate::chip`] reads the chip off the discovery's `devid`), which
//!   no reseating brings up;
//! - `few-uplinks`: a switch with fewer uplinks than most of its tier (with the cables that would
//!   restore them, on free ports, to the upper switches it has fewest links to);
//! - `uneven-links`: a switch with as many uplinks as its peers but more to one upper switch than
//!   another (D-mod-K then routes more destinations over fewer cables);
//! - `same-tier-link`: a cable between two switches of one tier, in a fabric with more than one
//!   (a two-switch design's inter-switch links are its only tier);
//! - `port-down`: an HCA with a port down while its twin is up, where most HCAs of its port count
//!   have both cabled; `missing-hca`: a host that shows fewer HCAs than most hosts, with the
//!   switch port where its peers' cabling says the missing HCA belongs, when they agree and it
//!   is free;
//! - `isolated-switch`: a switch with no hosts and no path to one;
//! - `loopback`: a cable from a switch port to another port of the same switch (a test loop or a
//!   miswire; it joins the switch to itself and is left out of its peers);
//! - `discovery-warning`: a query the tool printed as failed ([`ToolWarning`]): what lies behind
//!   it may be missing, so the rest of the check describes part of the fabric.
//!
//! Several subnets in one file (ibnetdiscover run from an HCA of each, outputs concatenated) are
//! told apart by their cables: [`subnets`] numbers the parts no cable joins. Peers are always of
//! one subnet, so a subnet of one switch is not a leaf short of the other subnet's uplinks, and
//! each subnet's links are held to its own rates (a storage subnet may run slower than compute).
//!
//! Each finding that a simulation can undo carries its [`Repair`] (the link at its peers' rate, the
//! missing uplinks cabled), which [`repaired`] applies to the discovery.

use crate::discovery::{escaped, Discovered, Link, NodeType, ToolWarning};
use crate::rate::Rate;
use railyard_fabric::import::natural_cmp;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// One end of a link as a technician finds it: the device's description, its GUID and the port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct End {
    pub device: String,
    /// `0x` and 16 hex digits, when the output gives the GUID.
    pub guid: Option<String>,
    pub port: u32,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{}\"", escaped(&self.device))?;
        if let Some(g) = &self.guid {
            write!(f, " ({g})")?;
        }
        write!(f, " port {}", self.port)
    }
}

/// What kind of fault a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    SlowLink,
    SlowDevice,
    FewUplinks,
    UnevenLinks,
    SameTierLink,
    PortDown,
    MissingHca,
    IsolatedSwitch,
    Loopback,
    RateDisagreement,
    DiscoveryWarning,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SlowLink => "slow-link",
            Kind::SlowDevice => "slow-device",
            Kind::FewUplinks => "few-uplinks",
            Kind::UnevenLinks => "uneven-links",
            Kind::SameTierLink => "same-tier-link",
            Kind::PortDown => "port-down",
            Kind::MissingHca => "missing-hca",
            Kind::IsolatedSwitch => "isolated-switch",
            Kind::Loopback => "loopback",
            Kind::RateDisagreement => "rate-disagreement",
            Kind::DiscoveryWarning => "discovery-warning",
        }
    }
}

/// A change to the discovery that undoes a finding, for simulating what the fault costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Link `link` (an index into [`Discovered::links`]) at `rate`.
    Rate { link: usize, rate: Rate },
    /// A new cable between two free ports (node index, port) at `rate`.
    Cable {
        a: (usize, u32),
        b: (usize, u32),
        rate: Rate,
    },
    /// An HCA the discovery did not see (`desc`: `host hcaN`, as its peers are named), cabled
    /// from its port 1 to the free switch port `at` at `rate`, the rate of its host's other HCAs.
    Hca {
        desc: String,
        at: (usize, u32),
        rate: Rate,
    },
}

/// One fault, the links it concerns (both ends; the second `None` where nothing is cabled) and
/// what to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    /// What is wrong, in one sentence.
    pub what: String,
    /// What to do on the floor.
    pub fix: String,
    pub ends: Vec<(End, Option<End>)>,
    /// How a simulation undoes it; empty when it cannot (where a cable should go is unknown).
    #[serde(skip)]
    pub repair: Vec<Repair>,
    /// For a `rate-disagreement`: what each end reported and the rate the link is taken at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rates: Option<ReportedRates>,
}

/// The rates a link's two ends reported ([`crate::discovery::RateDisagreement`]), for `--json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportedRates {
    /// Each end's line in the discovery and the rate printed there, the earlier line first.
    pub reported: Vec<ReportedRate>,
    /// The rate the link is taken at: the lower of the two.
    pub kept: String,
}

/// One end's report of a link's rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportedRate {
    pub line: usize,
    pub rate: String,
}

/// One tier: its switches, their links down and up, and its oversubscription (down over up
/// bandwidth; `None` at the top).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TierShape {
    /// 1 for leaves, 2 for spines, ...
    pub tier: u32,
    pub name: String,
    pub switches: usize,
    pub down_links: usize,
    pub up_links: usize,
    pub down_gbps: f64,
    pub up_gbps: f64,
    /// The largest down:up ratio of the tier's switches (the meaning `plan` gives it); `None` at
    /// the top.
    pub oversubscription: Option<f64>,
}

/// One switch's place and links.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchShape {
    pub device: String,
    pub guid: Option<String>,
    /// `None` for a switch with no path to a host.
    pub tier: Option<u32>,
    pub host_links: usize,
    pub down_links: usize,
    pub up_links: usize,
    pub same_tier_links: usize,
    pub down_gbps: f64,
    pub up_gbps: f64,
    pub oversubscription: Option<f64>,
}

/// The links between a switch and one switch of the tier above.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairLinks {
    pub lower: String,
    pub upper: String,
    /// The two switches' GUIDs: switches that keep their factory description share it.
    pub lower_guid: Option<String>,
    pub upper_guid: Option<String>,
    /// The lower switch's tier (1 for a leaf); `None` for a switch with no path to a host.
    pub lower_tier: Option<u32>,
    pub links: usize,
}

/// What the fabric is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shape {
    pub tiers: Vec<TierShape>,
    /// Switches with no path to a host.
    pub untiered_switches: usize,
    /// Parts of the discovery that no cable joins (one per subnet when several were concatenated).
    pub subnets: usize,
    pub hosts: usize,
    pub hcas: usize,
    pub cables: usize,
    /// Cables by rate (`4xEDR`), the rate `unknown` where the output gives none.
    pub rates: BTreeMap<String, usize>,
    /// Links between every switch and each switch of the tier above it is cabled to.
    pub pairs: Vec<PairLinks>,
    pub switches: Vec<SwitchShape>,
}

/// The health of a discovery: its shape and every finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Health {
    pub healthy: bool,
    pub shape: Shape,
    pub findings: Vec<Finding>,
}

/// Name of tier `t` (1 leaf, 2 spine, 3 core, then `tier N`).
pub fn tier_name(t: u32) -> String {
    match t {
        0 => "host".to_string(),
        1 => "leaf".to_string(),
        2 => "spine".to_string(),
        3 => "core".to_string(),
        n => format!("tier {n}"),
    }
}

/// The chip a node's vendor and device ids name, where the discovery gives both.
fn node_chip(n: &crate::discovery::Node) -> Option<crate::chip::Chip> {
    crate::chip::chip_of(n.vendor_id?, n.device_id?)
}

fn plural(t: u32) -> String {
    match t {
        0 => "hosts".to_string(),
        1 => "leaves".to_string(),
        n => format!("{}s", tier_name(n)),
    }
}

fn guid(g: Option<u64>) -> Option<String> {
    g.map(|g| format!("{g:#018x}"))
}

/// The tiers of every node: hosts 0, leaves 1, then hop distance from the leaves plus one; `None`
/// for switches with no path to a host and for aggregation nodes.
pub fn tiers(d: &Discovered) -> Vec<Option<u32>> {
    let n = d.nodes.len();
    let kept: Vec<bool> = d.nodes.iter().map(|x| !x.is_aggregation_node()).collect();
    let host = |i: usize| kept[i] && d.nodes[i].kind == NodeType::Ca;
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for l in &d.links {
        if kept[l.a.0] && kept[l.b.0] {
            adj[l.a.0].push(l.b.0);
            adj[l.b.0].push(l.a.0);
        }
    }
    let mut tier: Vec<Option<u32>> = (0..n).map(|i| host(i).then_some(0)).collect();
    let cabled_to_host: Vec<bool> = (0..n)
        .map(|i| kept[i] && !host(i) && adj[i].iter().any(|&j| host(j)))
        .collect();
    let mut queue = std::collections::VecDeque::new();
    for i in 0..n {
        if !cabled_to_host[i] {
            continue;
        }
        // A spine with a host or two on it (a management node) is not a leaf: it is cabled to
        // several switches that have hosts, by more cables than it has hosts.
        let hosts = adj[i].iter().filter(|&&j| host(j)).count();
        let to_leaves: Vec<usize> = adj[i]
            .iter()
            .copied()
            .filter(|&j| j != i && cabled_to_host[j])
            .collect();
        let distinct: BTreeSet<usize> = to_leaves.iter().copied().collect();
        if distinct.len() >= 2 && to_leaves.len() > hosts {
            continue;
        }
        tier[i] = Some(1);
        queue.push_back(i);
    }
    while let Some(i) = queue.pop_front() {
        for &j in &adj[i] {
            if kept[j] && tier[j].is_none() {
                tier[j] = tier[i].map(|t| t + 1);
                queue.push_back(j);
            }
        }
    }
    tier
}

/// The subnet of every node: parts of the discovery that no cable joins, numbered from 0 in order
/// of their first node. Aggregation nodes belong to their switch's subnet.
pub fn subnets(d: &Discovered) -> Vec<usize> {
    let n = d.nodes.len();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for l in &d.links {
        adj[l.a.0].push(l.b.0);
        adj[l.b.0].push(l.a.0);
    }
    let mut part = vec![usize::MAX; n];
    let mut next = 0;
    for start in 0..n {
        if part[start] != usize::MAX {
            continue;
        }
        part[start] = next;
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            for &j in &adj[i] {
                if part[j] == usize::MAX {
                    part[j] = next;
                    stack.push(j);
                }
            }
        }
        next += 1;
    }
    part
}

/// The most common value (ties to the larger).
fn mode<T: Ord + Copy>(values: impl IntoIterator<Item = T>) -> Option<T> {
    let mut count: BTreeMap<T, usize> = BTreeMap::new();
    for v in values {
        *count.entry(v).or_default() += 1;
    }
    count.into_iter().max_by_key(|&(_, c)| c).map(|(v, _)| v)
}

fn gbps(rate: Option<Rate>) -> Option<f64> {
    rate.and_then(|r| r.lanes_gbps()).map(|(_, g)| g)
}

/// Checks a discovery's health.
pub fn check(d: &Discovered) -> Health {
    let tier = tiers(d);
    let subnet = subnets(d);
    let kept: Vec<bool> = d.nodes.iter().map(|x| !x.is_aggregation_node()).collect();
    let is_host = |i: usize| kept[i] && d.nodes[i].kind == NodeType::Ca;
    let is_switch = |i: usize| kept[i] && d.nodes[i].kind != NodeType::Ca;
    let links: Vec<usize> = (0..d.links.len())
        .filter(|&k| kept[d.links[k].a.0] && kept[d.links[k].b.0])
        .collect();
    let end = |(n, p): (usize, u32)| End {
        device: d.nodes[n].desc.clone(),
        guid: guid(d.nodes[n].guid),
        port: p,
    };
    // Each link with its lower end first.
    let oriented = |l: &Link| {
        let (ta, tb) = (tier[l.a.0], tier[l.b.0]);
        if tb.map_or(u32::MAX, |t| t) < ta.map_or(u32::MAX, |t| t) {
            (l.b, l.a)
        } else {
            (l.a, l.b)
        }
    };
    let max_tier = (0..d.nodes.len())
        .filter(|&i| is_switch(i))
        .filter_map(|i| tier[i])
        .max()
        .unwrap_or(0);
    let mut top: BTreeMap<usize, u32> = BTreeMap::new();
    for i in (0..d.nodes.len()).filter(|&i| is_switch(i)) {
        if let Some(t) = tier[i] {
            let m = top.entry(subnet[i]).or_default();
            *m = (*m).max(t);
        }
    }
    let subnet_top = |i: usize| top.get(&subnet[i]).copied().unwrap_or(0);

    // Shape: per switch, per tier, per pair.
    let mut switches: BTreeMap<usize, SwitchShape> = BTreeMap::new();
    for i in (0..d.nodes.len()).filter(|&i| is_switch(i)) {
        switches.insert(
            i,
            SwitchShape {
                device: d.nodes[i].desc.clone(),
                guid: guid(d.nodes[i].guid),
                tier: tier[i],
                host_links: 0,
                down_links: 0,
                up_links: 0,
                same_tier_links: 0,
                down_gbps: 0.0,
                up_gbps: 0.0,
                oversubscription: None,
            },
        );
    }
    let mut pairs: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    let mut rates: BTreeMap<String, usize> = BTreeMap::new();
    for &k in &links {
        let l = &d.links[k];
        *rates
            .entry(l.rate.map_or("unknown".to_string(), |r| r.to_string()))
            .or_default() += 1;
        if l.a.0 == l.b.0 {
            continue; // a loopback: a cable, but no link between two devices
        }
        let g = gbps(l.rate).unwrap_or(0.0);
        let (lo, hi) = oriented(l);
        let (tl, th) = (tier[lo.0], tier[hi.0]);
        if tl.is_some() && tl == th {
            for n in [lo.0, hi.0] {
                if let Some(s) = switches.get_mut(&n) {
                    s.same_tier_links += 1;
                }
            }
            continue;
        }
        if let Some(s) = switches.get_mut(&hi.0) {
            s.down_links += 1;
            s.down_gbps += g;
            if is_host(lo.0) {
                s.host_links += 1;
            }
        }
        if let Some(s) = switches.get_mut(&lo.0) {
            s.up_links += 1;
            s.up_gbps += g;
        }
        if is_switch(lo.0) && is_switch(hi.0) && tl.is_some() && th.is_some() {
            pairs.entry((lo.0, hi.0)).or_default().push(k);
        }
    }
    for s in switches.values_mut() {
        s.oversubscription = (s.up_gbps > 0.0).then(|| s.down_gbps / s.up_gbps);
    }
    let mut tiers_shape = Vec::new();
    for t in 1..=max_tier {
        let members: Vec<&SwitchShape> = switches.values().filter(|s| s.tier == Some(t)).collect();
        let down_gbps: f64 = members.iter().map(|s| s.down_gbps).sum();
        let up_gbps: f64 = members.iter().map(|s| s.up_gbps).sum();
        tiers_shape.push(TierShape {
            tier: t,
            name: tier_name(t),
            switches: members.len(),
            down_links: members.iter().map(|s| s.down_links).sum(),
            up_links: members.iter().map(|s| s.up_links).sum(),
            down_gbps,
            up_gbps,
            // As `plan` gives it: the largest of the tier's switches, not the tier's total (a
            // leaf at 2.74:1 among leaves at 2.20:1 is what its hosts get).
            oversubscription: (up_gbps > 0.0)
                .then(|| {
                    members
                        .iter()
                        .filter_map(|m| m.oversubscription)
                        .reduce(f64::max)
                })
                .flatten(),
        });
    }
    let desc = |i: usize| d.nodes[i].desc.as_str();
    let mut pair_rows: Vec<PairLinks> = pairs
        .iter()
        .map(|(&(lo, hi), ls)| PairLinks {
            lower: desc(lo).to_string(),
            upper: desc(hi).to_string(),
            lower_guid: guid(d.nodes[lo].guid),
            upper_guid: guid(d.nodes[hi].guid),
            lower_tier: tier[lo],
            links: ls.len(),
        })
        .collect();
    pair_rows.sort_by(|a, b| {
        natural_cmp(&a.lower, &b.lower).then_with(|| natural_cmp(&a.upper, &b.upper))
    });
    let hcas = (0..d.nodes.len()).filter(|&i| is_host(i)).count();
    let host_of = host_names(d);
    let hosts: BTreeSet<&str> = host_of.iter().flatten().map(|(h, _)| h.as_str()).collect();

    let mut findings = Vec::new();

    // Slow links: below the rate most links between the same two tiers run at.
    let mut classes: BTreeMap<(usize, Option<u32>, Option<u32>), Vec<usize>> = BTreeMap::new();
    for &k in links.iter().filter(|&&k| d.links[k].a.0 != d.links[k].b.0) {
        let (lo, hi) = oriented(&d.links[k]);
        classes
            .entry((subnet[lo.0], tier[lo.0], tier[hi.0]))
            .or_default()
            .push(k);
    }
    let mut norm_rate: BTreeMap<(usize, Option<u32>, Option<u32>), Rate> = BTreeMap::new();
    for (class, ks) in &classes {
        let known: Vec<Rate> = ks
            .iter()
            .filter_map(|&k| d.links[k].rate)
            .filter(|r| r.lanes_gbps().is_some())
            .collect();
        let mut count: BTreeMap<Rate, usize> = BTreeMap::new();
        for r in &known {
            *count.entry(*r).or_default() += 1;
        }
        let Some((norm, peers)) = count
            .iter()
            .max_by(|a, b| {
                a.1.cmp(b.1).then(
                    gbps(Some(*a.0))
                        .partial_cmp(&gbps(Some(*b.0)))
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
            })
            .map(|(r, c)| (*r, *c))
        else {
            continue;
        };
        norm_rate.insert(*class, norm);
        let norm_gbps = gbps(Some(norm)).unwrap_or(0.0);
        let between = match class {
            (_, Some(a), Some(b)) => format!("{} and {}", plural(*a), plural(*b)),
            _ => "switches without a tier".to_string(),
        };
        for &k in ks {
            let l = &d.links[k];
            let Some(rate) = l.rate else { continue };
            let Some(g) = gbps(Some(rate)) else { continue };
            if g >= norm_gbps {
                continue;
            }
            let (lo, hi) = oriented(l);
            // The slower chip of the two ends, where the discovery names them: a link at that
            // chip's top speed runs as fast as the chip can, whatever the cable.
            let limit = [lo.0, hi.0]
                .into_iter()
                .filter_map(|n| Some((n, node_chip(&d.nodes[n])?)))
                .min_by_key(|(_, c)| c.top_speed)
                .filter(|(_, c)| rate.speed == c.top_speed && c.top_speed < norm.speed);
            let slow_width = rate.width != norm.width;
            if let (Some((n, c)), false) = (limit, slow_width) {
                let part = match d.nodes[n].kind {
                    NodeType::Switch => "switch",
                    _ => "HCA",
                };
                findings.push(Finding {
                    kind: Kind::SlowDevice,
                    what: format!(
                        "runs at {rate} ({} Gb/s), the top speed of the {part} \"{}\" ({}, device id {:#06x}), where {peers} of the {} links between {between} run at {norm} ({} Gb/s)",
                        gbps_text(g),
                        escaped(&d.nodes[n].desc),
                        c.name,
                        d.nodes[n].device_id.unwrap_or(0),
                        ks.len(),
                        gbps_text(norm_gbps),
                    ),
                    fix: format!(
                        "no cable fault: a {} runs {} at most; to run this link at {norm}, replace the {part} with one that runs {}",
                        c.name, c.top_speed, norm.speed
                    ),
                    ends: vec![(end(lo), Some(end(hi)))],
                    repair: vec![Repair::Rate { link: k, rate: norm }],
                    rates: None,
                });
                continue;
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
            findings.push(Finding {
                kind: Kind::SlowLink,
                what: format!(
                    "runs at {rate} ({} Gb/s) where {peers} of the {} links between {between} run at {norm} ({} Gb/s): {}",
                    gbps_text(g),
                    ks.len(),
                    gbps_text(norm_gbps),
                    lower.join(", ")
                ),
                fix: format!(
                    "reseat the cable at both ends, clean or replace it (or its transceivers) and check that neither port's LinkWidthEnabled / LinkSpeedEnabled (ibportstate) is set lower; it should come up at {target}"
                ),
                ends: vec![(end(lo), Some(end(hi)))],
                repair: vec![Repair::Rate { link: k, rate: target }],
                rates: None,
            });
        }
    }

    // Uplinks: fewer than most switches of the tier, or uneven between the switches above.
    let mut used: BTreeSet<(usize, u32)> = BTreeSet::new();
    for &k in &links {
        used.insert(d.links[k].a);
        used.insert(d.links[k].b);
    }
    let mut uppers: BTreeMap<usize, BTreeMap<usize, usize>> = BTreeMap::new();
    for (&(lo, hi), ls) in &pairs {
        uppers.entry(lo).or_default().insert(hi, ls.len());
    }
    let mut lowers_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(lo, hi) in pairs.keys() {
        lowers_of.entry(hi).or_default().push(lo);
    }
    for (net, t) in top
        .iter()
        .flat_map(|(&net, &m)| (1..m).map(move |t| (net, t)))
    {
        let members: Vec<usize> = switches
            .iter()
            .filter(|&(&i, s)| s.tier == Some(t) && subnet[i] == net)
            .map(|(&i, _)| i)
            .collect();
        let up = |i: usize| uppers.get(&i).map_or(0, |m| m.values().sum::<usize>());
        let Some(norm) = mode(members.iter().map(|&i| up(i))) else {
            continue;
        };
        // How often each port number carries an uplink on this tier's switches, and a down-link
        // on the tier above's: a missing uplink goes where its peers have theirs (switches of
        // one tier are cabled alike: hosts low, uplinks high), not to the first free port.
        let (mut up_ports, mut down_ports) = (BTreeMap::new(), BTreeMap::new());
        for (&(lo, _), ls) in &pairs {
            if switches.get(&lo).is_some_and(|x| x.tier == Some(t)) && subnet[lo] == net {
                for &k in ls {
                    let (a, b) = oriented(&d.links[k]);
                    *up_ports.entry(a.1).or_insert(0usize) += 1;
                    *down_ports.entry(b.1).or_insert(0usize) += 1;
                }
            }
        }
        let peers = members.iter().filter(|&&i| up(i) == norm).count();
        let rate = norm_rate.get(&(net, Some(t), Some(t + 1))).copied();
        for &s in &members {
            let have = up(s);
            let mine = uppers.get(&s).cloned().unwrap_or_default();
            if have < norm {
                // The upper switches its tier's peers reach through the ones it reaches (all of
                // the tier above when it reaches none), fewest links from it first.
                let mut group: BTreeSet<usize> = BTreeSet::new();
                for u in mine.keys() {
                    for l in lowers_of.get(u).into_iter().flatten() {
                        group.extend(uppers.get(l).into_iter().flat_map(|m| m.keys().copied()));
                    }
                }
                if group.is_empty() {
                    group.extend(
                        switches
                            .iter()
                            .filter(|&(&i, x)| x.tier == Some(t + 1) && subnet[i] == net)
                            .map(|(&i, _)| i),
                    );
                }
                let per_upper = mine.values().copied().max().unwrap_or(1).max(1);
                let mut candidates: Vec<(usize, usize)> = group
                    .iter()
                    .map(|&u| (u, mine.get(&u).copied().unwrap_or(0)))
                    .collect();
                candidates.sort_by(|a, b| a.1.cmp(&b.1).then(natural_cmp(desc(a.0), desc(b.0))));
                let mut missing = norm - have;
                let mut to: Vec<usize> = Vec::new();
                for &(u, c) in &candidates {
                    for _ in c..per_upper {
                        if missing > 0 {
                            to.push(u);
                            missing -= 1;
                        }
                    }
                }
                let mut round = 0;
                while missing > 0 && !candidates.is_empty() && round < norm {
                    to.push(candidates[round % candidates.len()].0);
                    missing -= 1;
                    round += 1;
                }
                let mut ends = Vec::new();
                let mut repair = Vec::new();
                for u in to {
                    let (Some(p), Some(q)) = (
                        usual_free_port(d, s, &used, &up_ports),
                        usual_free_port(d, u, &used, &down_ports),
                    ) else {
                        continue;
                    };
                    used.insert((s, p));
                    used.insert((u, q));
                    ends.push((end((s, p)), Some(end((u, q)))));
                    if let Some(rate) = rate {
                        repair.push(Repair::Cable {
                            a: (s, p),
                            b: (u, q),
                            rate,
                        });
                    }
                }
                let cables: Vec<String> = ends
                    .iter()
                    .map(|(a, b)| match b {
                        Some(b) => format!("{a} to {b}"),
                        None => a.to_string(),
                    })
                    .collect();
                findings.push(Finding {
                    kind: Kind::FewUplinks,
                    what: format!(
                        "{} \"{}\" has {have} uplink{} where {peers} of the {} {} have {norm}",
                        tier_name(t),
                        escaped(desc(s)),
                        if have == 1 { "" } else { "s" },
                        members.len(),
                        plural(t)
                    ),
                    fix: if cables.is_empty() {
                        "cable the missing uplinks (no free ports found to suggest)".to_string()
                    } else {
                        format!(
                            "cable the missing uplink{}: {}",
                            if cables.len() == 1 { "" } else { "s" },
                            cables.join("; ")
                        )
                    },
                    ends,
                    repair,
                    rates: None,
                });
            } else if mine.len() > 1 {
                let most = mine.values().copied().max().unwrap_or(0);
                for (&u, &c) in &mine {
                    if c < most {
                        let ends = pairs[&(s, u)]
                            .iter()
                            .map(|&k| {
                                let (lo, hi) = oriented(&d.links[k]);
                                (end(lo), Some(end(hi)))
                            })
                            .collect();
                        findings.push(Finding {
                            kind: Kind::UnevenLinks,
                            what: format!(
                                "\"{}\" has {c} link{} to \"{}\" but {most} to another {}: D-mod-K routes more destinations over fewer cables",
                                escaped(desc(s)),
                                if c == 1 { "" } else { "s" },
                                escaped(desc(u)),
                                tier_name(t + 1)
                            ),
                            fix: format!(
                                "move a cable from a {} it has {most} links to onto \"{}\", so every pair has {most}",
                                tier_name(t + 1),
                                escaped(desc(u))
                            ),
                            ends,
                            repair: Vec::new(),
                            rates: None,
                        });
                    }
                }
            }
        }
    }

    // Cables between switches of one tier, where there is a tier above to carry traffic instead.
    if max_tier > 1 {
        for &k in &links {
            let l = &d.links[k];
            if subnet_top(l.a.0) > 1
                && l.a.0 != l.b.0
                && is_switch(l.a.0)
                && is_switch(l.b.0)
                && tier[l.a.0].is_some()
                && tier[l.a.0] == tier[l.b.0]
            {
                let t = tier[l.a.0].unwrap_or(0);
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
                    ends: vec![(end(l.a), Some(end(l.b)))],
                    repair: Vec::new(),
                    rates: None,
                });
            }
        }
    }

    // HCAs with a port down while their twin is up.
    let mut cabled: BTreeMap<usize, BTreeMap<u32, (usize, u32)>> = BTreeMap::new();
    for &k in &links {
        let l = &d.links[k];
        for (me, other) in [(l.a, l.b), (l.b, l.a)] {
            if is_host(me.0) {
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
                down.iter().map(|&p| (end((i, p)), None)).collect();
            ends.extend(up.iter().map(|(&p, &o)| (end((i, p)), Some(end(o)))));
            findings.push(Finding {
                kind: Kind::PortDown,
                what: format!(
                    "HCA \"{}\" has port{} {} down while port{} {} {} up, where {peers} of the {} {n}-port HCAs have {norm} cabled",
                    escaped(desc(i)),
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

    // Hosts that show fewer HCAs than most.
    let mut per_host: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (host, hca) in host_of.iter().flatten() {
        per_host
            .entry(host.as_str())
            .or_default()
            .push(hca.as_str());
    }
    if let Some(norm) = mode(per_host.values().map(Vec::len)) {
        let peers = per_host.values().filter(|v| v.len() == norm).count();
        let mut short: Vec<(&&str, &Vec<&str>)> =
            per_host.iter().filter(|(_, v)| v.len() < norm).collect();
        short.sort_by(|a, b| natural_cmp(a.0, b.0));
        // Each host HCA's switch end (its first cable to a switch), by (host, hca).
        let mut hca_at: BTreeMap<(&str, &str), (usize, u32)> = BTreeMap::new();
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
            for hca in missing.iter().flatten() {
                let mut votes: BTreeMap<(usize, u32), usize> = BTreeMap::new();
                for (&(q, qc), &(q_sw, q_port)) in &hca_at {
                    if q == *host || qc != hca.as_str() {
                        continue;
                    }
                    for k in hcas.iter() {
                        let (Some(&(h_sw, h_port)), Some(&(qk_sw, qk_port))) =
                            (hca_at.get(&(*host, *k)), hca_at.get(&(q, *k)))
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
                let Some((&(sw, port), _)) = votes.iter().max_by(|a, b| {
                    a.1.cmp(b.1)
                        .then_with(|| natural_cmp(desc(b.0 .0), desc(a.0 .0)))
                        .then_with(|| b.0 .1.cmp(&a.0 .1))
                }) else {
                    continue;
                };
                if port == 0 || port > d.nodes[sw].ports || used.contains(&(sw, port)) {
                    continue;
                }
                ends.push((
                    End {
                        device: format!("{host} {hca} (not discovered)"),
                        guid: None,
                        port: 1,
                    },
                    Some(end((sw, port))),
                ));
                // Priced as its host's other HCAs run (the slowest of them, if they differ).
                if let Some(rate) = hcas
                    .iter()
                    .filter_map(|k| hca_at.get(&(*host, *k)))
                    .filter_map(|at| rate_at.get(at))
                    .filter_map(|r| Some((*r, gbps(Some(*r))?)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(r, _)| r)
                {
                    repair.push(Repair::Hca {
                        desc: format!("{host} {hca}"),
                        at: (sw, port),
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
                // Every missing HCA placed, or none priced: a partial repair would price a
                // host still short of an HCA.
                repair: if placed_all { repair } else { Vec::new() },
                ends,
                rates: None,
            });
        }
    }

    // Switches with no path to a host.
    for (&i, s) in &switches {
        if s.tier.is_none() {
            let ends = links
                .iter()
                .map(|&k| &d.links[k])
                .filter(|l| l.a.0 == i || l.b.0 == i)
                // This switch's end first.
                .map(|l| {
                    let (me, other) = if l.a.0 == i { (l.a, l.b) } else { (l.b, l.a) };
                    (end(me), Some(end(other)))
                })
                .collect();
            findings.push(Finding {
                kind: Kind::IsolatedSwitch,
                what: format!(
                    "switch \"{}\" has no hosts and no path to a switch that has",
                    escaped(desc(i))
                ),
                fix: "cable it into the fabric (its uplinks or hosts may be on another switch), or take it out".to_string(),
                ends,
                repair: Vec::new(),
                rates: None,
            });
        }
    }

    // Cables from a switch back to itself.
    for &k in &links {
        let l = &d.links[k];
        if l.a.0 == l.b.0 {
            findings.push(Finding {
                kind: Kind::Loopback,
                what: format!(
                    "a cable from port {} of \"{}\" back to its own port {}: it joins the switch to itself and carries no traffic between hosts (a test loop, or a miswire)",
                    l.a.1,
                    escaped(desc(l.a.0)),
                    l.b.1
                ),
                fix: "remove it if no test needs it, or cable both ends where the plan has them"
                    .to_string(),
                ends: vec![(end(l.a), Some(end(l.b)))],
                repair: Vec::new(),
                rates: None,
            });
        }
    }

    // Links whose two ends reported different rates: kept at the lower (a slow-link finding above
    // where that is below its peers); the disagreement itself says the link retrained.
    for r in &d.rate_disagreements {
        if !(kept[r.a.0] && kept[r.b.0]) {
            continue;
        }
        let (lo, hi) = oriented(&Link {
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
            ends: vec![(end(lo), Some(end(hi)))],
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

    // Queries the tool printed as failed: the discovery may lack what lies behind them.
    for w in &d.warnings {
        findings.push(warning_finding(w));
    }

    findings.sort_by(|a, b| {
        a.kind.cmp(&b.kind).then_with(|| {
            let key = |f: &Finding| {
                f.ends
                    .first()
                    .map(|(e, _)| (e.device.clone(), e.port))
                    .unwrap_or_default()
            };
            let (x, y) = (key(a), key(b));
            natural_cmp(&x.0, &y.0).then(x.1.cmp(&y.1))
        })
    });
    let switches: Vec<SwitchShape> = {
        let mut v: Vec<SwitchShape> = switches.into_values().collect();
        v.sort_by(|a, b| {
            a.tier
                .unwrap_or(u32::MAX)
                .cmp(&b.tier.unwrap_or(u32::MAX))
                .then_with(|| natural_cmp(&a.device, &b.device))
        });
        v
    };
    Health {
        healthy: findings.is_empty(),
        shape: Shape {
            untiered_switches: switches.iter().filter(|s| s.tier.is_none()).count(),
            subnets: subnet
                .iter()
                .enumerate()
                .filter(|&(i, _)| kept[i])
                .map(|(_, &p)| p)
                .collect::<BTreeSet<usize>>()
                .len(),
            tiers: tiers_shape,
            hosts: hosts.len(),
            hcas,
            cables: links.len(),
            rates,
            pairs: pair_rows,
            switches,
        },
        findings,
    }
}

fn warning_finding(w: &ToolWarning) -> Finding {
    let text: String = w.text.chars().take(200).collect();
    Finding {
        kind: Kind::DiscoveryWarning,
        what: format!(
            "line {}: the tool printed a failed query (`{}`): whatever lies behind it may be missing from this discovery, so what this check says covers only the part that answered",
            w.line,
            escaped(&text)
        ),
        fix: match w.route() {
            Some(r) => format!(
                "run the discovery again; if the query fails again, check the port at the end of directed route {r} (port by port from the node the discovery started at; `smpquery -D nodeinfo {r}` repeats the query) and its cable"
            ),
            None => "run the discovery again and check the port the query names and its cable"
                .to_string(),
        },
        ends: Vec::new(),
        repair: Vec::new(),
        rates: None,
    }
}

/// The lowest port of node `i` that no cable uses, if any.
fn free_port(d: &Discovered, i: usize, used: &BTreeSet<(usize, u32)>) -> Option<u32> {
    (1..=d.nodes[i].ports).find(|&p| !used.contains(&(i, p)))
}

/// The free port of switch `i` that its peers use most for the same kind of link (`usual`: port
/// number to how many such links use it; the lowest number on a tie), else its first free port.
fn usual_free_port(
    d: &Discovered,
    i: usize,
    used: &BTreeSet<(usize, u32)>,
    usual: &BTreeMap<u32, usize>,
) -> Option<u32> {
    let mut ports: Vec<(u32, usize)> = usual.iter().map(|(&p, &n)| (p, n)).collect();
    ports.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    ports
        .into_iter()
        .map(|(p, _)| p)
        .find(|&p| p >= 1 && p <= d.nodes[i].ports && !used.contains(&(i, p)))
        .or_else(|| free_port(d, i, used))
}

/// Each CA's (host, HCA) names as import groups them into servers; `None` for switches and
/// aggregation nodes.
fn host_names(d: &Discovered) -> Vec<Option<(String, String)>> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for n in d.nodes.iter().filter(|n| n.kind == NodeType::Ca) {
        *seen.entry(n.desc.as_str()).or_default() += 1;
    }
    d.nodes
        .iter()
        .map(|n| {
            (n.kind == NodeType::Ca && !n.is_aggregation_node()).then(|| {
                if seen[n.desc.as_str()] > 1 {
                    (crate::import::unique_name(n), "hca1".to_string())
                } else {
                    crate::import::split_ca(&n.desc)
                }
            })
        })
        .collect()
}

/// The discovery with `repair` applied: links at new rates, new cables.
pub fn repaired(d: &Discovered, repair: &[Repair]) -> Discovered {
    let mut out = d.clone();
    for r in repair {
        match r {
            Repair::Rate { link, rate } => {
                if let Some(l) = out.links.get_mut(*link) {
                    l.rate = Some(*rate);
                }
            }
            Repair::Cable { a, b, rate } => out.links.push(Link {
                a: *a,
                b: *b,
                rate: Some(*rate),
                line: 0,
            }),
            Repair::Hca { desc, at, rate } => {
                out.nodes.push(crate::discovery::Node {
                    kind: NodeType::Ca,
                    // Not a GUID: a discovered node's id never has a space.
                    id: format!("H-{desc} (not discovered)"),
                    desc: desc.clone(),
                    ports: 1,
                    reported_ports: Some(1),
                    guid: None,
                    sysimgguid: None,
                    vendor_id: None,
                    device_id: None,
                    line: 0,
                });
                out.links.push(Link {
                    a: (out.nodes.len() - 1, 1),
                    b: *at,
                    rate: Some(*rate),
                    line: 0,
                });
            }
        }
    }
    out.links.sort_by_key(|l| (l.a, l.b));
    out
}

/// Gb/s as printed: whole numbers as they are (`100`, `8976`), others to one decimal (`54.5` for
/// 4xFDR's 64/66-coded 54.545...).
fn gbps_text(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn ratio(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |r| format!("{r:.2}:1"))
}

/// The health as `railyard check` prints it: the shape, then every finding with its ends and fix.
pub fn health_text(h: &Health, origin: &str) -> String {
    let s = &h.shape;
    let mut out = String::new();
    let rates: Vec<String> = s.rates.iter().map(|(r, n)| format!("{n} at {r}")).collect();
    let _ = writeln!(
        out,
        "{origin}: {} hosts with {} HCAs, {} switches, {} cables ({}){}",
        s.hosts,
        s.hcas,
        s.switches.len(),
        s.cables,
        rates.join(", "),
        if s.subnets > 1 {
            format!(
                " in {} subnets (no cable joins them; each is checked on its own)",
                s.subnets
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "tiers (from the structure: leaves are cabled to hosts, each tier above one hop further):"
    );
    for t in &s.tiers {
        let _ = writeln!(
            out,
            "  {:<6} {:>5} switches  down {:>6} links {:>10} Gb/s  up {:>6} links {:>10} Gb/s  oversubscription {}",
            t.name,
            t.switches,
            t.down_links,
            gbps_text(t.down_gbps),
            t.up_links,
            gbps_text(t.up_gbps),
            ratio(t.oversubscription)
        );
    }
    if s.untiered_switches > 0 {
        let _ = writeln!(
            out,
            "  {} switch{} with no path to a host",
            s.untiered_switches,
            if s.untiered_switches == 1 { "" } else { "es" }
        );
    }
    // Oversubscription per switch, grouped.
    for t in &s.tiers {
        let mut groups: BTreeMap<String, usize> = BTreeMap::new();
        for sw in s.switches.iter().filter(|x| x.tier == Some(t.tier)) {
            *groups.entry(ratio(sw.oversubscription)).or_default() += 1;
        }
        if t.up_links > 0 {
            let g: Vec<String> = groups.iter().map(|(r, n)| format!("{r} on {n}")).collect();
            let _ = writeln!(
                out,
                "oversubscription per {}: {}",
                tier_name(t.tier),
                g.join(", ")
            );
        }
    }
    // Links per pair, grouped by count per pair of tiers (each pair's own tier: descriptions can
    // be shared, a factory default on every switch).
    let mut per: BTreeMap<u32, BTreeMap<usize, usize>> = BTreeMap::new();
    for p in &s.pairs {
        if let Some(t) = p.lower_tier {
            *per.entry(t).or_default().entry(p.links).or_default() += 1;
        }
    }
    for (t, counts) in &per {
        let g: Vec<String> = counts
            .iter()
            .map(|(links, n)| {
                format!(
                    "{links} link{} on {n} pair{}",
                    if *links == 1 { "" } else { "s" },
                    if *n == 1 { "" } else { "s" }
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "links per {}-{} pair: {}",
            tier_name(*t),
            tier_name(t + 1),
            g.join(", ")
        );
    }
    if h.findings.is_empty() {
        out.push_str("healthy: no findings\n");
        return out;
    }
    let _ = writeln!(
        out,
        "{} finding{}:",
        h.findings.len(),
        if h.findings.len() == 1 { "" } else { "s" }
    );
    for f in &h.findings {
        let _ = writeln!(out, "  {}: {}", f.kind.as_str(), f.what);
        for (a, b) in &f.ends {
            match b {
                Some(b) => {
                    let _ = writeln!(out, "    {a} - {b}");
                }
                None => {
                    let _ = writeln!(out, "    {a} (down)");
                }
            }
        }
        let _ = writeln!(out, "    fix: {}", f.fix);
    }
    out
}
