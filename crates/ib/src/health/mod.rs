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

mod hosts;
mod links;
mod shape;
mod text;
mod uplinks;

pub use text::health_text;

use crate::discovery::{escaped, Discovered, Link, NodeType, ToolWarning};
use crate::rate::Rate;
use railyard_fabric::import::natural_cmp;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

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

/// A discovery read as tiers and subnets: what every check of [`check`] looks at.
struct View<'a> {
    d: &'a Discovered,
    tier: Vec<Option<u32>>,
    subnet: Vec<usize>,
    /// Every node but aggregation nodes (part of their switch).
    kept: Vec<bool>,
    /// The links between kept nodes, by index into [`Discovered::links`].
    links: Vec<usize>,
    /// The highest tier of any switch.
    max_tier: u32,
    /// The highest tier of each subnet.
    top: BTreeMap<usize, u32>,
}

impl<'a> View<'a> {
    fn new(d: &'a Discovered) -> View<'a> {
        let tier = tiers(d);
        let subnet = subnets(d);
        let kept: Vec<bool> = d.nodes.iter().map(|x| !x.is_aggregation_node()).collect();
        let links: Vec<usize> = (0..d.links.len())
            .filter(|&k| kept[d.links[k].a.0] && kept[d.links[k].b.0])
            .collect();
        let mut v = View {
            d,
            tier,
            subnet,
            kept,
            links,
            max_tier: 0,
            top: BTreeMap::new(),
        };
        v.max_tier = (0..d.nodes.len())
            .filter(|&i| v.is_switch(i))
            .filter_map(|i| v.tier[i])
            .max()
            .unwrap_or(0);
        let mut top: BTreeMap<usize, u32> = BTreeMap::new();
        for i in (0..d.nodes.len()).filter(|&i| v.is_switch(i)) {
            if let Some(t) = v.tier[i] {
                let m = top.entry(v.subnet[i]).or_default();
                *m = (*m).max(t);
            }
        }
        v.top = top;
        v
    }

    fn is_host(&self, i: usize) -> bool {
        self.kept[i] && self.d.nodes[i].kind == NodeType::Ca
    }

    fn is_switch(&self, i: usize) -> bool {
        self.kept[i] && self.d.nodes[i].kind != NodeType::Ca
    }

    fn end(&self, (n, p): (usize, u32)) -> End {
        End {
            device: self.d.nodes[n].desc.clone(),
            guid: guid(self.d.nodes[n].guid),
            port: p,
        }
    }

    /// A link with its lower end first.
    fn oriented(&self, l: &Link) -> ((usize, u32), (usize, u32)) {
        let (ta, tb) = (self.tier[l.a.0], self.tier[l.b.0]);
        if tb.map_or(u32::MAX, |t| t) < ta.map_or(u32::MAX, |t| t) {
            (l.b, l.a)
        } else {
            (l.a, l.b)
        }
    }

    fn subnet_top(&self, i: usize) -> u32 {
        self.top.get(&self.subnet[i]).copied().unwrap_or(0)
    }

    fn desc(&self, i: usize) -> &'a str {
        self.d.nodes[i].desc.as_str()
    }
}

/// Checks a discovery's health.
pub fn check(d: &Discovered) -> Health {
    let v = View::new(d);
    let (switches, pairs, rates) = shape::switch_shapes(&v);
    let host_of = host_names(d);
    let mut findings = Vec::new();
    let norm_rate = links::slow_links(&v, &mut findings);
    uplinks::uplinks(&v, &switches, &pairs, &norm_rate, &mut findings);
    links::same_tier_links(&v, &mut findings);
    hosts::ports_down(&v, &mut findings);
    hosts::missing_hcas(&v, &host_of, &mut findings);
    uplinks::isolated_switches(&v, &switches, &mut findings);
    links::loopbacks(&v, &mut findings);
    links::rate_disagreements(&v, &mut findings);
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
    Health {
        healthy: findings.is_empty(),
        shape: shape::shape(&v, switches, &pairs, rates, &host_of),
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
