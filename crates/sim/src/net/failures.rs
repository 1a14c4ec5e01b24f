//! Links that fail and servers they drain: random failures by seed, and what a set of failed links takes down.

use crate::net::routing::mix64;
use railyard_fabric::{Fabric, LinkId, LinkKind, NodeId, NodeKind, Tier};

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

/// The failed links between switches, as routing reads them ([`FabricNet::parallel_down_is_failed`]).
#[derive(Default)]
pub(crate) struct DeadParallel {
    /// By (switch, child directly below it) with a failed link between them: how many parallel
    /// links join the two (live or not) and the indexes, in the switch's down-list order, of
    /// those that are down; in (switch, child) order.
    pub(crate) by_pair: Vec<DeadLinks>,
    /// Per node, whether it is a switch with an entry in `by_pair` (empty: none is).
    pub(crate) has: Vec<bool>,
    /// Per spine, its column: the component of the spine-core links it is in (spine j of every
    /// pod with core group j). A sub-flow that climbs to a spine of one pod comes down to
    /// another pod through the spine of the same column there. Empty with no cable down.
    pub(crate) column: Vec<u32>,
    /// `by_pair`'s entries of a spine and a leaf below it, by (the spine's column, the leaf),
    /// where that spine is the only one of its column above the leaf (so the descent to the
    /// leaf from that column is known); in (column, leaf) order.
    pub(crate) by_column: Vec<DeadLinks>,
    /// Per node, whether its column has an entry in `by_column`.
    pub(crate) column_has: Vec<bool>,
}

/// ((a switch or column, a child), (parallel links between them, indexes of those down)).
pub(crate) type DeadLinks = ((u32, u32), (u32, Vec<u32>));

impl DeadParallel {
    /// Whether index `k` (mod the parallel links) is among `key`'s dead links (`None`: no entry).
    pub(crate) fn dead_index(&self, table: &[DeadLinks], key: (u32, u32), k: u32) -> Option<bool> {
        let i = table.binary_search_by_key(&key, |e| e.0).ok()?;
        let (m, dead) = &table[i].1;
        Some(*m > 0 && dead.binary_search(&(k % m)).is_ok())
    }
}

/// The failed links between a switch and a child directly below it ([`DeadParallel`]).
pub(crate) fn dead_parallel_links(
    f: &Fabric,
    up: &[Vec<LinkId>],
    down: &[Vec<LinkId>],
    failed: &[bool],
) -> DeadParallel {
    let mut out: Vec<DeadLinks> = Vec::new();
    let mut has = vec![false; f.nodes.len()];
    for (i, _) in failed.iter().enumerate().filter(|(_, &x)| x) {
        let link = f.link(LinkId(i as u32));
        if !matches!(link.kind, LinkKind::LeafSpine | LinkKind::SpineCore) {
            continue;
        }
        let (child, parent) = (f.port(link.a).node, f.port(link.b).node);
        if out.iter().any(|e| e.0 == (parent.0, child.0)) {
            continue;
        }
        let to_child: Vec<LinkId> = down[parent.0 as usize]
            .iter()
            .copied()
            .filter(|&d| f.port(f.link(d).a).node == child)
            .collect();
        let dead = (0..to_child.len() as u32)
            .filter(|&k| failed[to_child[k as usize].0 as usize])
            .collect();
        out.push(((parent.0, child.0), (to_child.len() as u32, dead)));
        has[parent.0 as usize] = true;
    }
    out.sort_unstable_by_key(|e| e.0);
    if out.is_empty() {
        return DeadParallel::default();
    }
    let column = spine_columns(f);
    let mut by_column: Vec<DeadLinks> = Vec::new();
    let mut column_has = vec![false; f.nodes.len()];
    for ((spine, leaf), dead) in &out {
        let c = column[*spine as usize];
        if c == u32::MAX || f.node(NodeId(*leaf)).kind != (NodeKind::Switch { tier: Tier::Leaf }) {
            continue;
        }
        // The leaf's spines of that column: one, or the descent is not known.
        let mut above: Vec<u32> = up[*leaf as usize]
            .iter()
            .map(|&l| f.port(f.link(l).b).node.0)
            .filter(|&s| column[s as usize] == c)
            .collect();
        above.sort_unstable();
        above.dedup();
        if above.len() == 1 {
            by_column.push(((c, *leaf), dead.clone()));
        }
    }
    by_column.sort_unstable_by_key(|e| e.0);
    for (n, &c) in column.iter().enumerate() {
        column_has[n] = c != u32::MAX && by_column.iter().any(|e| e.0 .0 == c);
    }
    DeadParallel {
        by_pair: out,
        has,
        column,
        by_column,
        column_has,
    }
}

/// Per spine, the smallest node number of its component over the spine-core links (live or
/// not); `u32::MAX` for every other node.
fn spine_columns(f: &Fabric) -> Vec<u32> {
    let mut root: Vec<u32> = (0..f.nodes.len() as u32).collect();
    fn find(root: &mut [u32], mut x: u32) -> u32 {
        while root[x as usize] != x {
            root[x as usize] = root[root[x as usize] as usize];
            x = root[x as usize];
        }
        x
    }
    for l in f.links.iter().filter(|l| l.kind == LinkKind::SpineCore) {
        let (a, b) = (
            find(&mut root, f.port(l.a).node.0),
            find(&mut root, f.port(l.b).node.0),
        );
        root[a.max(b) as usize] = a.min(b);
    }
    (0..f.nodes.len() as u32)
        .map(|n| match f.node(NodeId(n)).kind {
            NodeKind::Switch { tier: Tier::Spine } => find(&mut root, n),
            _ => u32::MAX,
        })
        .collect()
}
