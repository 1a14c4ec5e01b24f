//! Which discovered device is which planned one: by description or the site's name for it, then
//! switches by the planned switch their matched neighbours expect, then HCAs a host at a time.

use super::plan::{normalise_ca_desc, Planned};
use super::{PortRef, Site};
use crate::discovery::{Discovered, NodeType};
use std::collections::{BTreeMap, BTreeSet};

/// Each discovered node's cables: (own port, far node, far port).
pub(super) type Adjacency = Vec<Vec<(u32, usize, u32)>>;

/// The planned name each discovered node took, and how many took theirs each way.
pub(super) struct Matched {
    pub(super) name: Vec<Option<String>>,
    pub(super) taken: BTreeSet<String>,
    pub(super) by_description: usize,
    pub(super) by_place: usize,
    pub(super) by_names: usize,
}

pub(super) fn adjacency(disc: &Discovered) -> Adjacency {
    let mut disc_adj: Vec<Vec<(u32, usize, u32)>> = vec![Vec::new(); disc.nodes.len()];
    for l in &disc.links {
        disc_adj[l.a.0].push((l.a.1, l.b.0, l.b.1));
        disc_adj[l.b.0].push((l.b.1, l.a.0, l.a.1));
    }
    disc_adj
}

/// Matches every device it can: by description (or the site's name), then by place.
pub(super) fn match_devices(
    disc: &Discovered,
    p: &Planned,
    site: &Site,
    disc_adj: &Adjacency,
) -> Matched {
    let (mut name, mut taken, by_names) = by_description(disc, p, site);
    let by_description = name.iter().flatten().count() - by_names;
    // Then the remaining switches by place: vote with matched neighbours, repeat until stable;
    // then every remaining CA by the planned CA its matched neighbour's port expects.
    switches_by_place(disc, p, disc_adj, &mut name, &mut taken);
    hcas_by_place(disc, p, disc_adj, &mut name, &mut taken);
    let by_place = name.iter().flatten().count() - by_description - by_names;
    Matched {
        name,
        taken,
        by_description,
        by_place,
        by_names,
    }
}

/// Devices by description, or by the site's name for them: the names taken, and how many by the
/// site's names.
fn by_description(
    disc: &Discovered,
    p: &Planned,
    site: &Site,
) -> (Vec<Option<String>>, BTreeSet<String>, usize) {
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
    (name, taken, by_names)
}

/// The free planned device of the kind `switch` that most of node `i`'s matched neighbours'
/// planned cables lead to, with its votes (ties to the first name).
fn votes_for(
    p: &Planned,
    disc_adj: &Adjacency,
    i: usize,
    name: &[Option<String>],
    taken: &BTreeSet<String>,
    switch: bool,
) -> Option<(String, usize)> {
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
}

fn switches_by_place(
    disc: &Discovered,
    p: &Planned,
    disc_adj: &Adjacency,
    name: &mut [Option<String>],
    taken: &mut BTreeSet<String>,
) {
    loop {
        let mut best: Option<(usize, String, usize)> = None;
        for (i, n) in disc.nodes.iter().enumerate() {
            if name[i].is_some() || n.kind != NodeType::Switch {
                continue;
            }
            if let Some((dev, v)) = votes_for(p, disc_adj, i, name, taken, true) {
                if best.as_ref().is_none_or(|(_, _, bv)| v > *bv) {
                    best = Some((i, dev, v));
                }
            }
        }
        let Some((i, dev, _)) = best else { break };
        taken.insert(dev.clone());
        name[i] = Some(dev);
    }
}

// HCAs by place, a host at a time: the HCAs one description names as one host (`node01
// mlx5_0` ... `node01 mlx5_7`, [`crate::import::split_ca`]) are one server, the planned server
// most of their switch ports expect. Each then takes the planned HCA its port expects where
// that HCA is the server's, and the server's HCAs left over otherwise, so an HCA cabled to
// another server's port is a miswire, found below. HCA by HCA, each would be named after
// the port it is plugged into and no swap between servers could ever be found.
fn hcas_by_place(
    disc: &Discovered,
    p: &Planned,
    disc_adj: &Adjacency,
    name: &mut [Option<String>],
    taken: &mut BTreeSet<String>,
) {
    let hosts = hosts_of(disc, name);
    let server_of = |hca: &str| crate::import::split_ca(hca).0;
    let ballots = ballots(p, disc_adj, &hosts, name, taken);
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
            match votes_for(p, disc_adj, i, name, taken, false) {
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
        if let Some((dev, _)) = votes_for(p, disc_adj, i, name, taken, false) {
            taken.insert(dev.clone());
            name[i] = Some(dev);
        }
    }
}

/// The unmatched HCAs by the host their description names.
fn hosts_of(disc: &Discovered, name: &[Option<String>]) -> BTreeMap<String, Vec<usize>> {
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
    hosts
}

/// The planned server each host's ports vote for, most votes first: (votes, host, server).
fn ballots(
    p: &Planned,
    disc_adj: &Adjacency,
    hosts: &BTreeMap<String, Vec<usize>>,
    name: &[Option<String>],
    taken: &BTreeSet<String>,
) -> Vec<(usize, String, String)> {
    let server_of = |hca: &str| crate::import::split_ca(hca).0;
    let mut ballots: Vec<(usize, String, String)> = Vec::new();
    for (host, cas) in hosts {
        let mut votes: BTreeMap<String, usize> = BTreeMap::new();
        for &i in cas {
            if let Some((dev, _)) = votes_for(p, disc_adj, i, name, taken, false) {
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
    ballots
}
