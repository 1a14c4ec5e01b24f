//! Verify a discovered fabric against the plan, port by port, reporting every difference at once.
//!
//! Devices match by description first (`su1-leaf3`, `su1-srv07 hca3`; a host's `mlx5_N` reads as
//! `hca<N+1>`), or by the site's name for them ([`crate::site::NameMap`]); switches whose descriptions
//! carry no planned name match by their place in the tree: a discovered switch takes the planned
//! switch that most of its already-matched neighbours expect; then each remaining HCA takes the
//! planned HCA its matched switch port expects. (Matching by place starts from devices matched by
//! name: with none, nothing matches.)
//! Then cables are compared. Planned and discovered cables that differ form chains through the ports
//! they share; each chain is one finding with the moves that fix it, so two swapped cables are one
//! swap, not four differences. A cable where it belongs is compared by rate: a different width or
//! speed is `wrong-rate`, a rate the discovery could not name (`4x???`, `??HDR`) or does not give is
//! `unknown-rate` (never a pass). A matched switch that reports fewer ports than planned, or more
//! than a split and a SHARP aggregation node port account for, is `wrong-port-count`.
//!
//! Each finding lists the cables it involves with their cabling.csv ids and, given the plan's
//! [`RackPlace`]s, where both ends stand as cabling.csv names it (row, rack and rack unit); a
//! [`crate::site::Scope`] limits the check to part of the plan. [`report_text_with`] groups findings alike into one line with a count; the JSON keeps all.

use crate::discovery::{escaped, Discovered, NodeType};
use crate::rate::Rate;
use railyard_fabric::layout::RackPlace;
use railyard_fabric::{Fabric, NodeKind};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// A port, named as on the floor: device and port number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PortRef {
    pub device: String,
    pub port: u32,
}

impl std::fmt::Display for PortRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]", escaped(&self.device), self.port)
    }
}

/// What kind of difference a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    MissingDevice,
    UnknownDevice,
    MissingCable,
    UnexpectedCable,
    /// One cable whose far end sits on the wrong port of the right device.
    WrongPort,
    /// One cable whose far end sits on the wrong device.
    Miswire,
    /// Two cables with their ends exchanged.
    Swap,
    /// Several cables miswired into each other's places.
    MiswiredChain,
    /// A cable where it belongs, at another width or speed than planned.
    WrongRate,
    /// A cable where it belongs whose rate the discovery does not give or could not read.
    UnknownRate,
    /// A switch that reports a port count the plan's model cannot have.
    WrongPortCount,
    /// The plan's technology is of another family than the network discovered (a RoCE plan, an
    /// InfiniBand discovery): no port can be compared, and this is the one finding.
    TechnologyMismatch,
}

/// One difference and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    /// What to do on the floor, in one sentence.
    pub fix: String,
    /// Planned cables involved (ends as planned).
    pub planned: Vec<(PortRef, PortRef)>,
    /// Discovered cables involved (ends as found).
    pub discovered: Vec<(PortRef, PortRef)>,
    /// What findings of this kind alike share, for grouping: the same kind and `group` read as one
    /// line with a count (every cable at 4xHDR where 4xNDR was planned). A finding that is one of a
    /// kind has its `fix` here.
    pub group: String,
    /// Every cable involved, planned ones first, each with its cabling.csv id (planned cables) and
    /// where both ends stand (when the plan has a layout).
    pub cables: Vec<CableRef>,
    /// The planned device a device finding (missing device, wrong port count) is about, with where
    /// it stands when the plan has a layout.
    pub device: Option<DeviceRef>,
}

/// A planned device and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceRef {
    pub name: String,
    pub location: Option<RackPlace>,
}

/// A cable a finding involves, as a technician finds it: the cabling.csv id and both ends with their
/// places.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CableRef {
    /// The cabling.csv id (`C0042`) of a planned cable; `None` for a cable as found where the plan
    /// has none (shown as `found`).
    pub id: Option<String>,
    pub a: PortRef,
    pub b: PortRef,
    pub a_location: Option<RackPlace>,
    pub b_location: Option<RackPlace>,
}

impl std::fmt::Display for CableRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.id {
            Some(id) => write!(f, "{id} ")?,
            None => f.write_str("found ")?,
        }
        write!(f, "{}", self.a)?;
        if let Some(l) = self.a_location {
            write!(f, " ({l})")?;
        }
        write!(f, " - {}", self.b)?;
        if let Some(l) = self.b_location {
            write!(f, " ({l})")?;
        }
        Ok(())
    }
}

/// The verification of a discovered fabric against its plan: whether they match, what was matched
/// and how, and every difference as a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// True when nothing differs.
    pub matches: bool,
    pub planned_cables: usize,
    pub discovered_cables: usize,
    /// Discovered devices matched by description / by place in the tree.
    pub matched_by_description: usize,
    pub matched_by_place: usize,
    /// Discovered devices matched through the site's names map (`--names`).
    pub matched_by_names: usize,
    /// The part of the plan checked (`--scope`), as asked; empty: all of it.
    pub scope: Vec<String>,
    /// Planned cables with an end in scope (all of them without a scope).
    pub cables_in_scope: usize,
    pub findings: Vec<Finding>,
    /// Every planned cable faster than ibsim can show (NDR, XDR) was found at the rate the ibsim
    /// export writes for it, and no other rate differs: the discovery most likely ran in ibsim
    /// without `Options::ibsim_rates` (`verify --ibsim`). The rates are still reported.
    pub rates_as_ibsim_shows: bool,
}

/// Options for comparing rates.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// The discovered fabric runs in ibsim, which shows NDR and XDR links as HDR: expect the rates the
    /// ibsim export wrote rather than the planned ones.
    pub ibsim_rates: bool,
}

/// The rate a discovery should show for a planned link of `gbps` over `lanes`: its true rate, or
/// with `ibsim` the rate the ibsim export brings it up at ([`Rate::as_ibsim`]).
pub fn planned_rate(gbps: f64, lanes: u32, ibsim: bool) -> Rate {
    let rate = Rate::of_link(gbps, lanes);
    if ibsim {
        rate.as_ibsim()
    } else {
        rate
    }
}

/// The rate string ibnetdiscover prints for a link: width and speed name (`4xNDR`).
pub fn rate_name(gbps: f64, lanes: u32, ibsim: bool) -> String {
    planned_rate(gbps, lanes, ibsim).to_string()
}

/// Planned InfiniBand devices and cables, by description.
struct Planned {
    devices: BTreeMap<String, bool>,
    /// Switch -> (ports, model).
    switches: BTreeMap<String, (u32, String)>,
    /// port -> (far port, expected rate, cable index in [`Fabric::cables`] order)
    links: BTreeMap<PortRef, (PortRef, Rate, usize)>,
    cables: usize,
    /// Device -> node, to look up where it stands.
    node: BTreeMap<String, usize>,
}

fn planned(f: &Fabric, opts: Options) -> Planned {
    let mut devices = BTreeMap::new();
    let mut switches = BTreeMap::new();
    let mut node = BTreeMap::new();
    for (i, n) in f.nodes.iter().enumerate() {
        let is_ib = n.is_switch() || matches!(n.kind, NodeKind::Nic { .. });
        let cabled = n.ports().any(|p| {
            f.port(p)
                .link()
                .is_some_and(|l| f.link(l).kind.is_network())
        });
        if is_ib && (cabled || n.is_switch()) {
            let desc = crate::export::node_desc(f, railyard_fabric::NodeId(i as u32));
            if n.is_switch() {
                switches.insert(desc.clone(), (n.num_ports, n.model.to_string()));
            }
            node.insert(desc.clone(), i);
            devices.insert(desc, n.is_switch());
        }
    }
    let mut links = BTreeMap::new();
    let mut cables = 0;
    for (_, l) in f.network_links() {
        let end = |p| PortRef {
            device: crate::export::node_desc(f, f.port(p).node),
            port: f.port(p).number,
        };
        let (a, b) = (end(l.a), end(l.b));
        let rate = planned_rate(l.gbps, l.lanes, opts.ibsim_rates);
        links.insert(a.clone(), (b.clone(), rate, cables));
        links.insert(b, (a, rate, cables));
        cables += 1;
    }
    Planned {
        devices,
        switches,
        links,
        cables,
        node,
    }
}

/// A host CA description as railyard names it: `host mlx5_2` reads as `host hca3`.
fn normalise_ca_desc(desc: &str) -> String {
    if let Some((host, dev)) = desc.rsplit_once(' ') {
        if let Some(n) = dev
            .strip_prefix("mlx5_")
            .and_then(|n| n.parse::<u32>().ok())
        {
            return format!("{host} hca{}", n + 1);
        }
    }
    desc.to_string()
}

/// What the site adds to a verification ([`verify_with`]); the default adds nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Site<'a> {
    /// The site's names for planned devices.
    pub names: Option<&'a crate::site::NameMap>,
    /// Where every planned node stands, indexed by node id, with the rack units cabling.csv
    /// gives ([`railyard_fabric::layout::rack_places_of`]).
    pub locations: Option<&'a [Option<RackPlace>]>,
    /// Only this part of the plan is checked; the rest is ignored.
    pub scope: Option<&'a crate::site::Scope>,
    /// The discovery gives no rates (LLDP neighbour tables): compare where cables land, not rates.
    pub without_rates: bool,
}

/// Compares the plan with what was discovered.
pub fn verify(plan: &Fabric, disc: &Discovered, opts: Options) -> Verification {
    verify_with(plan, disc, opts, Site::default())
}

/// Compares the plan with what was discovered, with the site's names, places and scope.
///
/// Devices match by their description, then by the site's names map, then (for those whose
/// description matches nothing) by structure: switches by the planned switch most of their matched
/// neighbours expect, then every HCA by the planned HCA its matched switch port expects.
pub fn verify_with(plan: &Fabric, disc: &Discovered, opts: Options, site: Site) -> Verification {
    let p = planned(plan, opts);
    if plan.meta.tech.family() != disc.family {
        return technology_mismatch(plan, disc, &p, &site);
    }

    // 1. Match devices by description, or by the site's name for them.
    let mut name: Vec<Option<String>> = vec![None; disc.nodes.len()];
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut by_names = 0;
    for (i, n) in disc.nodes.iter().enumerate() {
        let desc = if n.kind == NodeType::Ca {
            normalise_ca_desc(&n.desc)
        } else {
            n.desc.clone()
        };
        // A plan imported from a discovery names nodes that shared a description by their id too.
        let unique = match n.kind {
            NodeType::Ca => format!("{} hca1", crate::import::unique_name(n)),
            _ => crate::import::unique_name(n),
        };
        let mapped = site
            .names
            .and_then(|m| m.plan_name(&n.desc, n.kind == NodeType::Ca));
        let candidates = [(mapped, true), (Some(desc), false), (Some(unique), false)];
        for (desc, via_map) in candidates {
            let Some(desc) = desc else { continue };
            if let Some(&is_switch) = p.devices.get(&desc) {
                if is_switch == (n.kind == NodeType::Switch) && taken.insert(desc.clone()) {
                    name[i] = Some(desc);
                    by_names += usize::from(via_map);
                    break;
                }
            }
        }
    }
    let by_description = name.iter().flatten().count() - by_names;

    // 2. Match the remaining switches by place: vote with matched neighbours, repeat until stable;
    // then every remaining CA by the planned CA its matched neighbour's port expects.
    let mut disc_adj: Vec<Vec<(u32, usize, u32)>> = vec![Vec::new(); disc.nodes.len()];
    for l in &disc.links {
        disc_adj[l.a.0].push((l.a.1, l.b.0, l.b.1));
        disc_adj[l.b.0].push((l.b.1, l.a.0, l.a.1));
    }
    let votes_for = |i: usize, name: &[Option<String>], taken: &BTreeSet<String>, switch: bool| {
        let mut votes: BTreeMap<String, usize> = BTreeMap::new();
        for &(_, r, rport) in &disc_adj[i] {
            let Some(rname) = &name[r] else { continue };
            let key = PortRef {
                device: rname.clone(),
                port: rport,
            };
            if let Some((far, _, _)) = p.links.get(&key) {
                if p.devices.get(&far.device) == Some(&switch) && !taken.contains(&far.device) {
                    *votes.entry(far.device.clone()).or_default() += 1;
                }
            }
        }
        votes
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
    };
    loop {
        let mut best: Option<(usize, String, usize)> = None;
        for (i, n) in disc.nodes.iter().enumerate() {
            if name[i].is_some() || n.kind != NodeType::Switch {
                continue;
            }
            if let Some((dev, v)) = votes_for(i, &name, &taken, true) {
                if best.as_ref().is_none_or(|(_, _, bv)| v > *bv) {
                    best = Some((i, dev, v));
                }
            }
        }
        let Some((i, dev, _)) = best else { break };
        taken.insert(dev.clone());
        name[i] = Some(dev);
    }
    // HCAs by place, a host at a time: the HCAs one description names as one host (`node01
    // mlx5_0` ... `node01 mlx5_7`, [`crate::import::split_ca`]) are one server, the planned server
    // most of their switch ports expect. Each then takes the planned HCA its port expects where
    // that HCA is the server's, and the server's HCAs left over otherwise, so an HCA cabled to
    // another server's port is a miswire, found below. HCA by HCA, each would be named after
    // the port it is plugged into and no swap between servers could ever be found.
    let mut hosts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, n) in disc.nodes.iter().enumerate() {
        if name[i].is_none() && n.kind == NodeType::Ca && !n.is_aggregation_node() {
            let host = match n.desc.rsplit_once(' ') {
                Some(_) => crate::import::split_ca(&n.desc).0,
                // No host part: an HCA of its own.
                None => crate::import::unique_name(n),
            };
            hosts.entry(host).or_default().push(i);
        }
    }
    // A "host" whose HCAs share one description is not a host: CAs that keep the factory
    // description (`MT4123 ConnectX6 Mellanox Technologies`) would all fall in it. Each is an HCA
    // of its own.
    let shared: Vec<String> = hosts
        .iter()
        .filter(|(_, cas)| {
            let descs: BTreeSet<&str> = cas.iter().map(|&i| disc.nodes[i].desc.as_str()).collect();
            descs.len() < cas.len()
        })
        .map(|(h, _)| h.clone())
        .collect();
    for h in shared {
        for i in hosts.remove(&h).unwrap_or_default() {
            hosts.insert(crate::import::unique_name(&disc.nodes[i]), vec![i]);
        }
    }
    let server_of = |hca: &str| crate::import::split_ca(hca).0;
    // The planned server each host's ports vote for, most votes first.
    let mut ballots: Vec<(usize, String, String)> = Vec::new();
    for (host, cas) in &hosts {
        let mut votes: BTreeMap<String, usize> = BTreeMap::new();
        for &i in cas {
            if let Some((dev, _)) = votes_for(i, &name, &taken, false) {
                *votes.entry(server_of(&dev)).or_default() += 1;
            }
        }
        if let Some((server, v)) = votes
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        {
            ballots.push((v, host.clone(), server));
        }
    }
    ballots.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut server_taken: BTreeSet<String> = taken
        .iter()
        .filter(|d| p.devices.get(*d) == Some(&false))
        .map(|d| server_of(d))
        .collect();
    for (_, host, server) in ballots {
        if !server_taken.insert(server.clone()) {
            continue;
        }
        let cas = &hosts[&host];
        let mut left: Vec<usize> = Vec::new();
        for &i in cas {
            match votes_for(i, &name, &taken, false) {
                Some((dev, _)) if server_of(&dev) == server => {
                    taken.insert(dev.clone());
                    name[i] = Some(dev);
                }
                _ => left.push(i),
            }
        }
        // The server's HCAs no port claimed, for the HCAs cabled elsewhere: the one of the same
        // HCA name where there is one, else in name order.
        let mut spare: Vec<String> = p
            .devices
            .iter()
            .filter(|(d, &is_switch)| !is_switch && !taken.contains(*d) && server_of(d) == server)
            .map(|(d, _)| d.clone())
            .collect();
        for i in left {
            let own = crate::import::split_ca(&disc.nodes[i].desc).1;
            let k = spare
                .iter()
                .position(|d| crate::import::split_ca(d).1 == own)
                .or((!spare.is_empty()).then_some(0));
            if let Some(k) = k {
                let dev = spare.remove(k);
                taken.insert(dev.clone());
                name[i] = Some(dev);
            }
        }
    }
    // Hosts no port pointed to a free server: each HCA by its own port.
    for (i, n) in disc.nodes.iter().enumerate() {
        if name[i].is_some() || n.kind != NodeType::Ca || n.is_aggregation_node() {
            continue;
        }
        if let Some((dev, _)) = votes_for(i, &name, &taken, false) {
            taken.insert(dev.clone());
            name[i] = Some(dev);
        }
    }
    let by_place = name.iter().flatten().count() - by_description - by_names;

    let in_scope = |d: &str| site.scope.is_none_or(|s| s.contains(d));
    let mut findings = Vec::new();
    let location = |d: &str| {
        let (locs, &i) = (site.locations?, p.node.get(d)?);
        locs.get(i).copied().flatten()
    };
    let device_finding = |kind, fix: String, group: &str, device: Option<&str>| Finding {
        kind,
        group: group.to_string(),
        fix,
        planned: vec![],
        discovered: vec![],
        cables: vec![],
        device: device.map(|d| DeviceRef {
            name: d.to_string(),
            location: location(d),
        }),
    };
    // The discovered device that took each planned name: a second device of the same description
    // is then no stranger to the plan but a duplicate description (an HCA renamed by hand to its
    // neighbour's name was "not in the plan", and its cables a miswired chain).
    let taken_by: BTreeMap<&str, usize> = name
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((d.as_deref()?, i)))
        .collect();
    for (i, n) in disc.nodes.iter().enumerate() {
        // A switch's SHARP aggregation node is part of the switch (its link is left out below, as
        // a link to an unmatched node is). Under a scope, an unknown device counts when it is
        // cabled to a device in scope.
        let touches_scope = || {
            disc_adj[i]
                .iter()
                .any(|&(_, r, _)| name[r].as_deref().is_some_and(in_scope))
        };
        let what = if n.kind == NodeType::Switch {
            "switch"
        } else {
            "CA"
        };
        let own = if n.kind == NodeType::Ca {
            normalise_ca_desc(&n.desc)
        } else {
            n.desc.clone()
        };
        if let (None, Some(&other)) = (&name[i], taken_by.get(own.as_str())) {
            if site.scope.is_none() || touches_scope() {
                findings.push(device_finding(
                    Kind::UnknownDevice,
                    format!(
                        "\"{}\" ({}, line {}) has the description of line {}, which matched the plan's \"{own}\": two devices share one description; give each its own (a host's HCAs are named by hostname and device) and verify again",
                        escaped(&n.desc),
                        what,
                        n.line,
                        disc.nodes[other].line
                    ),
                    "devices that share a description: give each its own and verify again",
                    None,
                ));
                continue;
            }
        }
        if name[i].is_none()
            && !n.is_aggregation_node()
            && (site.scope.is_none() || touches_scope())
        {
            findings.push(device_finding(
                Kind::UnknownDevice,
                format!(
                    "\"{}\" ({}, line {}) is not in the plan: remove it or its cables, or add it to the plan",
                    escaped(&n.desc),
                    what,
                    n.line
                ),
                "devices the plan does not have: remove them or their cables, or add them to the plan",
                None,
            ));
        }
    }
    // An HCA whose cables are all unplugged is invisible to discovery: report its missing cables
    // (below), not a missing device. A switch that was not found is a missing device.
    let missing_devices: BTreeSet<&String> = p
        .devices
        .iter()
        .filter(|(d, &is_switch)| is_switch && !taken.contains(*d))
        .map(|(d, _)| d)
        .collect();
    // A matched switch whose port count the plan's model cannot report. Real switches may report
    // more than the planned mode's ports: ports split in two (HDR100, NDR200), and NVIDIA Quantum
    // switches attach their SHARP aggregation node as a CA on one more port (an HDR100-split switch
    // lists it on port 81: tests/data/real/hdr-excerpt.ibnetdiscover-p). So the range is the planned
    // ports up to twice them plus one; below is a smaller model, above is more than any split.
    for (i, n) in disc.nodes.iter().enumerate() {
        let (Some(desc), Some(reported)) = (&name[i], n.reported_ports) else {
            continue;
        };
        let Some((ports, model)) = p.switches.get(desc) else {
            continue;
        };
        let most = 2 * ports + 1;
        if in_scope(desc) && (reported < *ports || reported > most) {
            let model = if model.is_empty() {
                "the plan's switch".to_string()
            } else {
                format!("the plan's {model}")
            };
            let fix = format!(
                "{} reports {reported} ports (line {}), {model} has {ports} (up to {most} with its ports split and a SHARP aggregation node port): check that the planned switch model is installed",
                escaped(desc),
                n.line
            );
            findings.push(device_finding(
                Kind::WrongPortCount,
                fix.clone(),
                &fix,
                Some(desc),
            ));
        }
    }
    for d in missing_devices.iter().filter(|d| in_scope(d)) {
        findings.push(device_finding(
            Kind::MissingDevice,
            format!(
                "{} was not discovered: check that it is installed, powered and cabled",
                escaped(d)
            ),
            "switches not discovered: check that each is installed, powered and cabled",
            Some(d),
        ));
    }

    // 3. Discovered cables in planned names; cables touching unknown or missing devices are covered by
    // the device findings above.
    let mut found: BTreeMap<PortRef, (PortRef, Option<Rate>, usize)> = BTreeMap::new();
    for l in &disc.links {
        let (Some(a), Some(b)) = (&name[l.a.0], &name[l.b.0]) else {
            continue;
        };
        let (a, b) = (
            PortRef {
                device: a.clone(),
                port: l.a.1,
            },
            PortRef {
                device: b.clone(),
                port: l.b.1,
            },
        );
        found.insert(a.clone(), (b.clone(), l.rate, l.line));
        found.insert(b, (a, l.rate, l.line));
    }
    let relevant = |r: &PortRef| !missing_devices.contains(&r.device);
    let cable_in_scope = |a: &PortRef, b: &PortRef| in_scope(&a.device) || in_scope(&b.device);

    // Differences: planned cables not found as planned, found cables not planned.
    let mut plan_diff: BTreeSet<(PortRef, PortRef)> = BTreeSet::new();
    let mut cables_in_scope = 0;
    // Cables found at a rate other than planned: all of them, and those at the rate ibsim shows.
    let (mut wrong_rates, mut ibsim_rates) = (0usize, 0usize);
    // Cables found as planned whose planned rate ibsim cannot show.
    let mut beyond_ibsim = 0usize;
    for (a, (b, rate, _)) in &p.links {
        if a > b || !cable_in_scope(a, b) {
            continue;
        }
        cables_in_scope += 1;
        if !relevant(a) || !relevant(b) {
            continue;
        }
        match found.get(a) {
            Some((fb, frate, line)) if fb == b => {
                if rate.as_ibsim() != *rate {
                    beyond_ibsim += 1;
                }
                let finding = |kind, fix, group| Finding {
                    kind,
                    fix,
                    group,
                    planned: vec![(a.clone(), b.clone())],
                    discovered: vec![(a.clone(), b.clone())],
                    cables: vec![],
                    device: None,
                };
                match frate {
                    _ if site.without_rates => {}
                    None => findings.push(finding(
                        Kind::UnknownRate,
                        format!("the discovery gives no rate for {a} - {b} (line {line}), planned {rate}: rediscover with ibnetdiscover or iblinkinfo, which print every link's rate"),
                        format!("cables without a rate in the discovery, planned {rate}: rediscover with ibnetdiscover or iblinkinfo, which print every link's rate"),
                    )),
                    Some(fr) if !fr.is_known() => findings.push(finding(
                        Kind::UnknownRate,
                        format!("{a} - {b} runs at a rate the tool could not read ({fr}, line {line}), planned {rate}: check the port with ibportstate and rediscover"),
                        format!("cables run at a rate the tool could not read ({fr}), planned {rate}: check each port with ibportstate and rediscover"),
                    )),
                    Some(fr) if fr != rate => {
                        wrong_rates += 1;
                        if !opts.ibsim_rates && *fr == rate.as_ibsim() {
                            ibsim_rates += 1;
                        }
                        findings.push(finding(
                            Kind::WrongRate,
                            format!("{a} - {b} runs at {fr}, planned {rate}: check the cable, transceivers and port settings"),
                            format!("cables run at {fr}, planned {rate}: check each cable, its transceivers and port settings"),
                        ))
                    }
                    Some(_) => {}
                }
            }
            _ => {
                plan_diff.insert((a.clone(), b.clone()));
            }
        }
    }
    let mut found_diff: BTreeSet<(PortRef, PortRef)> = BTreeSet::new();
    for (a, (b, _, _)) in &found {
        if a < b && p.links.get(a).is_none_or(|(pb, _, _)| pb != b) {
            found_diff.insert((a.clone(), b.clone()));
        }
    }

    // 4. Chains: ports joined by differing planned and discovered cables.
    let mut adj: BTreeMap<PortRef, Vec<(bool, PortRef)>> = BTreeMap::new();
    for (a, b) in &plan_diff {
        adj.entry(a.clone()).or_default().push((true, b.clone()));
        adj.entry(b.clone()).or_default().push((true, a.clone()));
    }
    for (a, b) in &found_diff {
        adj.entry(a.clone()).or_default().push((false, b.clone()));
        adj.entry(b.clone()).or_default().push((false, a.clone()));
    }
    let mut seen: BTreeSet<PortRef> = BTreeSet::new();
    let starts: Vec<PortRef> = adj.keys().cloned().collect();
    for start in starts {
        if seen.contains(&start) {
            continue;
        }
        let mut stack = vec![start];
        let mut ports = BTreeSet::new();
        while let Some(x) = stack.pop() {
            if !seen.insert(x.clone()) {
                continue;
            }
            ports.insert(x.clone());
            for (_, y) in &adj[&x] {
                if !seen.contains(y) {
                    stack.push(y.clone());
                }
            }
        }
        if !ports.iter().any(|x| in_scope(&x.device)) {
            continue;
        }
        let planned: Vec<(PortRef, PortRef)> = plan_diff
            .iter()
            .filter(|(a, _)| ports.contains(a))
            .cloned()
            .collect();
        let discovered: Vec<(PortRef, PortRef)> = found_diff
            .iter()
            .filter(|(a, _)| ports.contains(a))
            .cloned()
            .collect();
        findings.push(classify(planned, discovered));
    }

    // 5. Every cable involved, with its cabling.csv id and where its ends stand.
    for f in &mut findings {
        let mut seen = BTreeSet::new();
        for (a, b) in f.planned.iter().chain(&f.discovered) {
            if !seen.insert((a.clone(), b.clone())) {
                continue;
            }
            let id = p
                .links
                .get(a)
                .filter(|(pb, _, _)| pb == b)
                .map(|&(_, _, i)| railyard_fabric::cable_id(i, p.cables));
            f.cables.push(CableRef {
                id,
                a: a.clone(),
                b: b.clone(),
                a_location: location(&a.device),
                b_location: location(&b.device),
            });
        }
    }
    findings.sort_by_cached_key(|f| {
        let first = f
            .planned
            .first()
            .or(f.discovered.first())
            .map(|(a, _)| (natural(&a.device), a.port));
        (f.kind, first, natural(&f.fix))
    });
    Verification {
        matches: findings.is_empty(),
        planned_cables: p.cables,
        discovered_cables: disc.links.len(),
        matched_by_description: by_description,
        matched_by_place: by_place,
        matched_by_names: by_names,
        scope: site.scope.map(|s| s.asked.clone()).unwrap_or_default(),
        cables_in_scope,
        findings,
        rates_as_ibsim_shows: wrong_rates > 0
            && ibsim_rates == wrong_rates
            && ibsim_rates == beyond_ibsim,
    }
}

/// The verification of a discovery of another network family than the plan's: one finding that
/// says so, not a difference for every port (an InfiniBand dump against a RoCE plan matches no
/// device by its rate or cable as planned, and would list every cable).
fn technology_mismatch(plan: &Fabric, disc: &Discovered, p: &Planned, site: &Site) -> Verification {
    let tech = plan.meta.tech;
    let (planned, found) = (tech.family(), disc.family);
    let how = match found {
        railyard_catalog::Family::Infiniband => {
            "InfiniBand (ibnetdiscover, iblinkinfo or ibsim output)"
        }
        railyard_catalog::Family::Ethernet => "Ethernet (LLDP neighbour tables)",
    };
    let (fabric_word, to_do) = match planned {
        railyard_catalog::Family::Ethernet => (
            "RoCE over Ethernet",
            "verify a RoCE fabric by its switches' and hosts' LLDP neighbour tables (`verify --lldp`), or this discovery against an InfiniBand plan (`--tech ib-ndr`, say)",
        ),
        railyard_catalog::Family::Infiniband => (
            "InfiniBand",
            "verify an InfiniBand fabric by ibnetdiscover or iblinkinfo output, or these tables against an Ethernet plan (`--tech roce-400g`, say)",
        ),
    };
    let fix = format!(
        "technology mismatch: the plan is {tech} ({fabric_word}) and the discovery is {how}, so no port was compared ({} planned cables, {} discovered); {to_do}",
        p.cables,
        disc.links.len()
    );
    Verification {
        matches: false,
        planned_cables: p.cables,
        discovered_cables: disc.links.len(),
        matched_by_description: 0,
        matched_by_place: 0,
        matched_by_names: 0,
        scope: site.scope.map(|s| s.asked.clone()).unwrap_or_default(),
        cables_in_scope: 0,
        rates_as_ibsim_shows: false,
        findings: vec![Finding {
            kind: Kind::TechnologyMismatch,
            group: fix.clone(),
            fix,
            planned: vec![],
            discovered: vec![],
            cables: vec![],
            device: None,
        }],
    }
}

/// A sort key that orders the numbers in a name by value: `core01[2]` before `core01[10]`,
/// `srv9` before `srv10`.
fn natural(s: &str) -> Vec<(String, u128)> {
    // Digits read as their value (saturating: a longer run than u128 holds sorts last).
    let value = |d: &str| {
        d.bytes().fold(0u128, |v, b| {
            v.saturating_mul(10).saturating_add(u128::from(b - b'0'))
        })
    };
    let mut out = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((std::mem::take(&mut text), value(&digits)));
                digits.clear();
            }
            text.push(c);
        }
    }
    out.push((text, value(&digits)));
    out
}

/// Names a chain of differing cables and says how to fix it.
fn classify(planned: Vec<(PortRef, PortRef)>, discovered: Vec<(PortRef, PortRef)>) -> Finding {
    let grouped = |kind, fix, group: &str| Finding {
        kind,
        fix,
        group: group.to_string(),
        planned: planned.clone(),
        discovered: discovered.clone(),
        cables: vec![],
        device: None,
    };
    let finding = |kind, fix: String| grouped(kind, fix.clone(), &fix);
    match (planned.as_slice(), discovered.as_slice()) {
        ([(a, b)], []) => grouped(
            Kind::MissingCable,
            format!("add a cable {a} - {b}"),
            "planned cables not found: add each as planned",
        ),
        ([], [(a, b)]) => grouped(
            Kind::UnexpectedCable,
            format!("remove the cable {a} - {b}, which the plan does not have"),
            "cables the plan does not have: remove each",
        ),
        ([(pa, pb)], [(da, db)]) => {
            // One end is right (shared), the other landed elsewhere.
            let (fixed, should, is) = if pa == da {
                (pa, pb, db)
            } else if pa == db {
                (pa, pb, da)
            } else if pb == da {
                (pb, pa, db)
            } else {
                (pb, pa, da)
            };
            let kind = if should.device == is.device {
                Kind::WrongPort
            } else {
                Kind::Miswire
            };
            finding(
                kind,
                format!("the cable from {fixed} lands on {is}: move that end to {should}"),
            )
        }
        ([p1, p2], [d1, d2]) if is_swap(p1, p2, d1, d2) => {
            // In a swap every end's far end changed; name the pair on one device when there is one.
            let moved = [&d1.0, &d1.1, &d2.0, &d2.1];
            // Every end is "moved" in a swap; name the pair on one device when there is one.
            let pair = same_device_pair(&moved).unwrap_or((&d1.1, &d2.1));
            finding(
                Kind::Swap,
                format!(
                    "the cables at {} and {} are swapped: exchange them",
                    pair.0, pair.1
                ),
            )
        }
        _ => {
            let moves: Vec<String> = planned.iter().map(|(a, b)| format!("{a} - {b}")).collect();
            finding(
                Kind::MiswiredChain,
                format!(
                    "{} cables are miswired into each other's places: recable them as planned ({})",
                    discovered.len().max(planned.len()),
                    moves.join("; ")
                ),
            )
        }
    }
}

/// Two planned cables a-b, c-d found as a-d, c-b (or a-c, b-d): their four ends, crossed.
fn is_swap(
    p1: &(PortRef, PortRef),
    p2: &(PortRef, PortRef),
    d1: &(PortRef, PortRef),
    d2: &(PortRef, PortRef),
) -> bool {
    let ends = |x: &(PortRef, PortRef), y: &(PortRef, PortRef)| {
        let mut v = vec![&x.0, &x.1, &y.0, &y.1];
        v.sort();
        v.into_iter().cloned().collect::<Vec<_>>()
    };
    ends(p1, p2) == ends(d1, d2)
}

fn same_device_pair<'a>(ports: &[&'a PortRef]) -> Option<(&'a PortRef, &'a PortRef)> {
    for (i, a) in ports.iter().enumerate() {
        for b in &ports[i + 1..] {
            if a.device == b.device {
                return Some((a, b));
            }
        }
    }
    None
}

/// How many findings of one group the text report lists before it says how many more there are.
pub const EXAMPLES: usize = 3;

/// The report as text, findings grouped ([`report_text_with`] without `all`).
pub fn report_text(r: &Verification) -> String {
    report_text_with(r, false)
}

fn kind_name(k: Kind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The report as text: a summary line, then the findings by kind (with the count of each kind).
/// Within a kind, findings alike (the same [`Finding::group`]) are one line with their count and the
/// first [`EXAMPLES`] cables, unless `all`, which lists every finding. Every cable shows its
/// cabling.csv id and where its ends stand, when the plan says.
pub fn report_text_with(r: &Verification, all: bool) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let scope = if r.scope.is_empty() {
        String::new()
    } else {
        format!(
            " in scope {} ({})",
            r.scope.join(","),
            railyard_fabric::search::plural(
                r.cables_in_scope as u64,
                "planned cable",
                "planned cables"
            )
        )
    };
    let matched = format!(
        "{} devices matched by description, {} by the names map, {} by place in the tree",
        r.matched_by_description, r.matched_by_names, r.matched_by_place
    );
    if let Some(f) = r
        .findings
        .iter()
        .find(|f| f.kind == Kind::TechnologyMismatch)
    {
        let _ = writeln!(o, "{}", f.fix);
        return o;
    }
    if r.matches {
        let _ = writeln!(
            o,
            "match: {} planned cables, {} discovered, no differences{scope} ({matched})",
            r.planned_cables, r.discovered_cables
        );
        if r.matched_by_place > 0 {
            let _ = writeln!(
                o,
                "note: {} devices whose descriptions match no planned name were matched by their place in the tree and port numbers",
                r.matched_by_place
            );
        }
        return o;
    }
    let _ = writeln!(
        o,
        "{} difference{}{scope}: {} planned cables, {} discovered ({matched})",
        r.findings.len(),
        if r.findings.len() == 1 { "" } else { "s" },
        r.planned_cables,
        r.discovered_cables,
    );
    if r.matched_by_place > 0 {
        let _ = writeln!(
            o,
            "note: {} devices whose descriptions match no planned name were matched by their place in the tree and port numbers",
            r.matched_by_place
        );
    }
    if r.matched_by_description + r.matched_by_names + r.matched_by_place == 0
        && r.discovered_cables > 0
    {
        let _ = writeln!(
            o,
            "note: no discovered device matched a planned one: no description is a planned name \
             (switches that keep their factory description, such as \"SwitchIB Mellanox \
             Technologies\", all look alike), so nothing anchors the match by place and every \
             device below reads as missing or unknown; give --names with the site's names for the \
             plan's (the hosts are enough: the switches then match by their place)"
        );
    }
    if r.rates_as_ibsim_shows {
        let _ = writeln!(
            o,
            "note: every planned NDR or XDR cable runs at the rate ibsim shows it at (ibsim knows speeds up to HDR) and no other rate differs: if this discovery ran in ibsim, give --ibsim (verify, check --plan)"
        );
    }
    // Findings are sorted by kind; groups keep the order of their first finding.
    let mut i = 0;
    while i < r.findings.len() {
        let kind = r.findings[i].kind;
        let end = i + r.findings[i..]
            .iter()
            .take_while(|f| f.kind == kind)
            .count();
        let of_kind = &r.findings[i..end];
        let _ = writeln!(o, "{} ({}):", kind_name(kind), of_kind.len());
        let mut groups: Vec<(&str, Vec<&Finding>)> = Vec::new();
        for f in of_kind {
            match groups.iter_mut().find(|(g, _)| *g == f.group) {
                Some((_, v)) => v.push(f),
                None => groups.push((&f.group, vec![f])),
            }
        }
        for (group, fs) in groups {
            if fs.len() == 1 || all {
                for f in fs {
                    let _ = writeln!(o, "  {}", f.fix);
                    if let Some(l) = f.device.as_ref().and_then(|d| d.location) {
                        let _ = writeln!(o, "    at {l}");
                    }
                    for c in &f.cables {
                        let _ = writeln!(o, "    {c}");
                    }
                }
                continue;
            }
            if fs.len() > EXAMPLES {
                let _ = writeln!(o, "  {} {group}; the first {EXAMPLES}:", fs.len());
            } else {
                let _ = writeln!(o, "  {} {group}:", fs.len());
            }
            for f in fs.iter().take(EXAMPLES) {
                match f.cables.first() {
                    Some(c) if f.cables.len() == 1 => {
                        let _ = writeln!(o, "    {c}");
                    }
                    _ => match f.device.as_ref().and_then(|d| d.location) {
                        Some(l) => {
                            let _ = writeln!(o, "    {} (at {l})", f.fix);
                        }
                        None => {
                            let _ = writeln!(o, "    {}", f.fix);
                        }
                    },
                }
            }
            if fs.len() > EXAMPLES {
                let _ = writeln!(
                    o,
                    "    and {} more (--all lists every one)",
                    fs.len() - EXAMPLES
                );
            }
        }
        i = end;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ibnet::{parse, Link};
    use railyard_catalog::Catalog;
    use railyard_spec::{presets, ClusterSpec};

    fn plan(name: &str) -> Fabric {
        let spec: ClusterSpec = presets::load(name).unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    fn discovered(f: &Fabric) -> Discovered {
        parse(&crate::export::ibsim_topology(f).unwrap().text).unwrap()
    }

    fn opts() -> Options {
        Options { ibsim_rates: true }
    }

    fn node(d: &Discovered, desc: &str) -> usize {
        d.nodes.iter().position(|n| n.desc == desc).unwrap()
    }

    fn link_at(d: &Discovered, n: usize, port: u32) -> usize {
        d.links
            .iter()
            .position(|l| l.a == (n, port) || l.b == (n, port))
            .unwrap()
    }

    fn kinds(r: &Verification) -> Vec<Kind> {
        r.findings.iter().map(|f| f.kind).collect()
    }

    /// Regression: an InfiniBand discovery checked against a RoCE plan listed a difference for
    /// nearly every device and cable (86 on seed-leaf-spine as RoCE 400G); it is one finding that
    /// names both technologies, and the report is that one line.
    #[test]
    fn another_technology_is_one_finding_not_every_port() {
        let ib = plan("seed-leaf-spine");
        let d = discovered(&ib);
        let roce = plan("roce-400g-sn5600");
        let r = verify(&roce, &d, opts());
        assert!(!r.matches);
        assert_eq!(kinds(&r), [Kind::TechnologyMismatch]);
        assert_eq!(r.discovered_cables, d.links.len());
        let text = report_text(&r);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.starts_with("technology mismatch: the plan is roce-400g (RoCE over Ethernet) and the discovery is InfiniBand"),
            "{text}"
        );
        // The other way: Ethernet (LLDP) tables against an InfiniBand plan.
        let lldp = Discovered {
            family: railyard_catalog::Family::Ethernet,
            ..d.clone()
        };
        let r = verify(&ib, &lldp, opts());
        assert_eq!(kinds(&r), [Kind::TechnologyMismatch]);
        assert!(
            r.findings[0]
                .fix
                .contains("the plan is ib-hdr (InfiniBand) and the discovery is Ethernet"),
            "{}",
            r.findings[0].fix
        );
        // The same family compares port by port, as before.
        assert!(verify(&ib, &d, opts()).matches);
    }

    #[test]
    fn exported_plan_matches_itself() {
        for p in ["seed-two-switch", "seed-leaf-spine", "dgx-h100-superpod"] {
            let f = plan(p);
            let r = verify(&f, &discovered(&f), opts());
            assert!(r.matches, "{p}: {:?}", r.findings);
            assert_eq!(r.planned_cables, r.discovered_cables);
        }
    }

    #[test]
    fn true_rates_differ_from_ibsim_rates_on_ndr() {
        let f = plan("dgx-h100-superpod");
        let r = verify(&f, &discovered(&f), Options::default());
        assert!(r.findings.iter().all(|x| x.kind == Kind::WrongRate));
        assert_eq!(r.findings.len(), r.planned_cables);
        // Every NDR cable at the rate ibsim shows it at: the report says how to verify it.
        assert!(r.rates_as_ibsim_shows);
        assert!(report_text(&r)
            .contains("if this discovery ran in ibsim, give --ibsim (verify, check --plan)"));
        // Not where one cable runs at another rate, or where it is asked for.
        let mut d = discovered(&f);
        d.links[0].rate = Some(Rate::of_link(200.0, 2));
        assert!(!verify(&f, &d, Options::default()).rates_as_ibsim_shows);
        assert!(!verify(&f, &discovered(&f), opts()).rates_as_ibsim_shows);
        // An HDR plan found at HDR has nothing beyond ibsim.
        let hdr = plan("seed-leaf-spine");
        assert!(!verify(&hdr, &discovered(&hdr), Options::default()).rates_as_ibsim_shows);
    }

    #[test]
    fn swapped_cables_are_one_swap() {
        let f = plan("seed-leaf-spine");
        let mut d = discovered(&f);
        let leaf = node(&d, "leaf01");
        let (i, j) = (link_at(&d, leaf, 1), link_at(&d, leaf, 2));
        // Exchange the leaf ends of the cables on leaf01 ports 1 and 2.
        let swap_end = |l: &mut Link, from: (usize, u32), to: (usize, u32)| {
            if l.a == from {
                l.a = to
            } else {
                l.b = to
            }
        };
        swap_end(&mut d.links[i], (leaf, 1), (leaf, 2));
        swap_end(&mut d.links[j], (leaf, 2), (leaf, 1));
        let r = verify(&f, &d, opts());
        assert_eq!(kinds(&r), vec![Kind::Swap], "{:?}", r.findings);
        assert!(
            r.findings[0].fix.contains("leaf01[1]") && r.findings[0].fix.contains("leaf01[2]"),
            "{}",
            r.findings[0].fix
        );
    }

    /// HCAs matched by place are matched a host at a time: the site names its hosts `node01
    /// mlx5_1` where the plan says `srv01 hca1`, and two HCAs of two servers have their cables
    /// exchanged. HCA by HCA, each was named after the port it sat on and the report said "no
    /// differences" (exit 0); a host's HCAs are one server, so the exchange is one swap.
    #[test]
    fn a_swap_between_servers_is_found_when_hosts_are_matched_by_place() {
        let f = plan("seed-leaf-spine");
        let mut d = discovered(&f);
        let (l1, l2) = (node(&d, "leaf01"), node(&d, "leaf02"));
        let (i, j) = (link_at(&d, l1, 1), link_at(&d, l2, 5));
        for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Ca) {
            let (host, hca) = n.desc.split_once(' ').unwrap();
            n.desc = format!(
                "{} mlx5_{}",
                host.replace("srv", "node"),
                hca.trim_start_matches("hca")
            );
        }
        let ca_end = |l: &Link| if l.a.0 == l1 || l.a.0 == l2 { l.b } else { l.a };
        let (a, b) = (ca_end(&d.links[i]), ca_end(&d.links[j]));
        assert_ne!(
            d.nodes[a.0].desc.split_once(' ').unwrap().0,
            d.nodes[b.0].desc.split_once(' ').unwrap().0,
            "two servers' HCAs"
        );
        for (k, to) in [(i, b), (j, a)] {
            let l = &mut d.links[k];
            if l.a.0 == l1 || l.a.0 == l2 {
                l.b = to
            } else {
                l.a = to
            }
        }
        let r = verify(&f, &d, opts());
        assert_eq!(kinds(&r), vec![Kind::Swap], "{:?}", r.findings);
        let fix = &r.findings[0].fix;
        assert!(fix.contains("exchange them"), "{fix}");
        // Intact, every host still matches.
        let mut d = discovered(&f);
        for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Ca) {
            n.desc = n.desc.replace("srv", "node").replace(" hca", " mlx5_");
        }
        assert!(verify(&f, &d, opts()).matches);
        // HCAs that all keep the factory description are no host: each matches by its port.
        let mut d = discovered(&f);
        for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Ca) {
            n.desc = "MT4123 ConnectX6   Mellanox Technologies".to_string();
        }
        let r = verify(&f, &d, opts());
        assert!(r.matches, "{:?}", r.findings);
        assert_eq!(r.matched_by_place, 80);
    }

    /// Switches that keep their factory description and hosts of foreign names: nothing matches,
    /// so nothing can be placed. The report says so and points to --names, instead of only
    /// calling every switch "not discovered: check that it is installed, powered and cabled".
    #[test]
    fn nothing_matched_says_to_give_the_names() {
        let f = plan("seed-leaf-spine");
        let mut d = discovered(&f);
        for (i, n) in d.nodes.iter_mut().enumerate() {
            n.desc = match n.kind {
                NodeType::Switch => "SwitchIB Mellanox Technologies".to_string(),
                _ => format!("node{i:03} HCA-1"),
            };
        }
        let r = verify(&f, &d, opts());
        assert!(!r.matches);
        let text = report_text(&r);
        assert!(
            text.lines()
                .nth(1)
                .is_some_and(|l| l.starts_with("note: no discovered device matched")
                    && l.contains("--names")),
            "{text}"
        );
    }

    #[test]
    fn missing_extra_and_wrong_port() {
        // 127 servers: the fourth unit has 31, so port 32 of its leaves is free.
        let f = plan("dgx-h100-superpod");
        let mut d = discovered(&f);
        let leaf = node(&d, "su1-leaf1");
        d.links.remove(link_at(&d, leaf, 33));
        let leaf4 = node(&d, "su4-leaf1");
        let k = link_at(&d, leaf4, 1);
        if d.links[k].a == (leaf4, 1) {
            d.links[k].a = (leaf4, 32)
        } else {
            d.links[k].b = (leaf4, 32)
        }
        let r = verify(&f, &d, opts());
        assert_eq!(
            kinds(&r),
            vec![Kind::MissingCable, Kind::WrongPort],
            "{:?}",
            r.findings
        );
        assert!(
            r.findings[1]
                .fix
                .contains("su4-leaf1[32]: move that end to su4-leaf1[1]"),
            "{}",
            r.findings[1].fix
        );

        let mut d = discovered(&f);
        let (a, b) = (node(&d, "su4-leaf1"), node(&d, "su4-leaf2"));
        d.links.push(Link {
            a: (a, 32),
            b: (b, 32),
            rate: None,
            line: 0,
        });
        let r = verify(&f, &d, opts());
        assert_eq!(kinds(&r), vec![Kind::UnexpectedCable]);
    }

    #[test]
    fn switches_match_by_place_when_descriptions_are_foreign() {
        let f = plan("seed-leaf-spine");
        let mut d = discovered(&f);
        for n in d.nodes.iter_mut().filter(|n| n.kind == NodeType::Switch) {
            n.desc = format!("MF0;switch-{}:MQM8700/U1", n.guid.unwrap_or(0));
        }
        let r = verify(&f, &d, opts());
        assert!(r.matches, "{:?}", r.findings);
        assert_eq!(r.matched_by_place, 6);
    }

    #[test]
    fn hosts_match_by_place_when_their_descriptions_are_foreign() {
        let f = plan("seed-leaf-spine");
        let mut d = discovered(&f);
        let mut cas = 0;
        for (i, n) in d.nodes.iter_mut().enumerate() {
            if n.kind == NodeType::Ca {
                n.desc = format!("node{i:04} ens{i}f0np0");
                cas += 1;
            }
        }
        let r = verify(&f, &d, opts());
        assert!(r.matches, "{:?}", r.findings);
        assert_eq!(r.matched_by_place, cas);
        assert!(report_text(&r).contains(&format!(
            "note: {cas} devices whose descriptions match no planned name were matched by their place"
        )));
    }

    #[test]
    fn names_order_numbers_by_value() {
        let mut v = vec![
            "core01[10]",
            "core01[2]",
            "core01[1]",
            "srv10",
            "srv9",
            "a",
            "a0",
        ];
        v.sort_by_key(|s| natural(s));
        assert_eq!(
            v,
            [
                "a",
                "a0",
                "core01[1]",
                "core01[2]",
                "core01[10]",
                "srv9",
                "srv10"
            ]
        );
        assert!(natural(&"9".repeat(60)) > natural("1"));
    }

    #[test]
    fn alike_findings_are_one_line_and_all_lists_every_one() {
        let f = plan("dgx-h100-superpod");
        let r = verify(&f, &discovered(&f), Options::default());
        let n = r.findings.len();
        let text = report_text(&r);
        // Header, the ibsim note, the group line, its examples and the hint to list them all.
        assert_eq!(text.lines().count(), 3 + 1 + EXAMPLES + 1, "{text}");
        assert!(text.contains(&format!(
            "\nwrong-rate ({n}):\n  {n} cables run at 4xHDR, planned 4xNDR"
        )));
        let all = report_text_with(&r, true);
        assert_eq!(
            all.lines().filter(|l| l.contains("runs at 4xHDR")).count(),
            n
        );
        // Every finding names its one planned cable by id.
        assert!(r
            .findings
            .iter()
            .all(|x| x.cables.len() == 1 && x.cables[0].id.is_some()));
    }

    #[test]
    fn a_unit_scope_holds_its_hcas_and_the_switches_they_are_cabled_to() {
        let f = plan("dgx-h100-superpod");
        let s = crate::site::Scope::resolve(&f, &["su1".to_string()]).unwrap();
        assert!(s.contains("su1-leaf1") && s.contains("su1-leaf8"));
        assert!(s.contains("su1-srv01 hca1") && s.contains("su1-srv32 hca8"));
        assert!(!s.contains("su2-leaf1") && !s.contains("su2-srv01 hca1"));
        assert!(!s.devices.iter().any(|d| d.contains("spine")));
        assert_eq!(s.devices.len(), 8 + 32 * 8);
        let one = crate::site::Scope::resolve(&f, &["su2-srv03".to_string()]).unwrap();
        assert_eq!(one.devices.len(), 8);
        assert!(crate::site::Scope::resolve(&f, &["su5".to_string()])
            .unwrap_err()
            .contains("a scalable unit (su1..su4)"));
    }

    #[test]
    fn mlx5_names_read_as_hca_numbers() {
        assert_eq!(normalise_ca_desc("node0013 mlx5_0"), "node0013 hca1");
        assert_eq!(normalise_ca_desc("su1-srv07 hca3"), "su1-srv07 hca3");
    }
}
