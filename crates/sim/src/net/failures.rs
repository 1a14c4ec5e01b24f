//! Links that fail and servers they drain: random failures by seed, and what a set of failed links takes down.

use crate::net::routing::mix64;
use railyard_fabric::{Fabric, LinkId, LinkKind};

/// `n` distinct network links chosen uniformly at random (seeded SplitMix64 partial Fisher-Yates),
/// in link order.
pub fn random_network_links(f: &Fabric, n: usize, seed: u64) -> Vec<LinkId> {
    random_of(f.network_links().map(|(l, _)| l).collect(), n, seed)
}

/// `n` distinct switch-to-switch links (leaf-spine, spine-core, between the two switches of a
/// two-switch design) chosen uniformly at random, as [`random_network_links`] chooses among all
/// network links, in link order: the cables `--fail-links` takes down (a server's own cable
/// drains the server instead, `NetConfig::drained`).
pub fn random_fabric_links(f: &Fabric, n: usize, seed: u64) -> Vec<LinkId> {
    let all: Vec<LinkId> = f
        .network_links()
        .filter(|(_, l)| l.kind != LinkKind::ServerLeaf)
        .map(|(l, _)| l)
        .collect();
    random_of(all, n, seed)
}

/// `n` distinct server links (a NIC's cable to its leaf) chosen uniformly at random, as
/// [`random_network_links`] chooses, in link order: the cables `--fail-host-links` takes down,
/// each draining its server ([`drained_by`]).
pub fn random_host_links(f: &Fabric, n: usize, seed: u64) -> Vec<LinkId> {
    let all: Vec<LinkId> = f
        .network_links()
        .filter(|(_, l)| l.kind == LinkKind::ServerLeaf)
        .map(|(l, _)| l)
        .collect();
    random_of(all, n, seed)
}

/// The servers (indexes into `Fabric::servers`, ascending, each once) that `links` drain: a job
/// with a dead host link aborts and the scheduler drains the node (NCCL does not move a GPU's
/// traffic to another server's NIC, nor to another NIC of its own once the job has started), so
/// the job runs on the servers left (`NetConfig::drained`).
pub fn drained_by(f: &Fabric, links: &[LinkId]) -> Vec<usize> {
    let mut out: Vec<usize> = links
        .iter()
        .filter(|&&l| f.link(l).kind == LinkKind::ServerLeaf)
        .filter_map(|&l| {
            let link = f.link(l);
            [link.a, link.b]
                .into_iter()
                .find_map(|p| f.node(f.port(p).node).server)
        })
        .map(|s| s as usize)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `n` of `all` chosen by a seeded partial Fisher-Yates shuffle (SplitMix64), in link order.
pub(crate) fn random_of(mut all: Vec<LinkId>, n: usize, seed: u64) -> Vec<LinkId> {
    let n = n.min(all.len());
    let mut state = seed;
    for i in 0..n {
        let span = (all.len() - i) as u128;
        let j = i + ((u128::from(mix64(&mut state)) * span) >> 64) as usize;
        all.swap(i, j);
    }
    let mut out = all[..n].to_vec();
    out.sort();
    out
}

/// What failed links cost: per tier, links down of links in total and the capacity lost; and the
/// bisection bandwidth before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureReport {
    /// (link kind, links down, links of that kind, Gb/s lost).
    pub tiers: Vec<(LinkKind, usize, usize, f64)>,
    /// Bisection bandwidth, Gb/s, with every link up and with the failed ones down.
    pub bisection_gbps: (f64, f64),
}

/// Counts failed links per network tier, and bisection bandwidth before and after the failures
/// (`Fabric::bisection_gbps`, as the plan reports it).
pub fn failure_report(f: &Fabric, failed: &[LinkId]) -> FailureReport {
    let kinds = [
        LinkKind::ServerLeaf,
        LinkKind::LeafSpine,
        LinkKind::SpineCore,
        LinkKind::InterSwitch,
    ];
    let mut tiers = Vec::new();
    for k in kinds {
        let total = f.network_links().filter(|(_, l)| l.kind == k).count();
        let down: Vec<&LinkId> = failed.iter().filter(|l| f.link(**l).kind == k).collect();
        // `+ 0.0`: an empty f64 sum is -0.0, which would print as "-0".
        let gbps: f64 = down.iter().map(|l| f.link(**l).gbps).sum::<f64>() + 0.0;
        if total > 0 {
            tiers.push((k, down.len(), total, gbps));
        }
    }
    let failed: std::collections::BTreeSet<LinkId> = failed.iter().copied().collect();
    FailureReport {
        tiers,
        bisection_gbps: (
            f.bisection_gbps(|_| true),
            f.bisection_gbps(|l| !failed.contains(&l)),
        ),
    }
}
