//! Node-limited expert dispatch as DeepSeek-V3 routes and DeepEP sends it.
//!
//! Routing (DeepSeek-V3 technical report, arXiv 2412.19437, section 2.1.2, "Node-Limited
//! Routing"): each token goes to at most M nodes, picked by the sum of the highest K / M
//! affinity scores of the experts on each node; its top-K experts are then chosen among those
//! nodes' experts only (M = 4, K = 8 for DeepSeek-V3, section 4.2). [`route`] is that rule.
//!
//! Sending (section 3.2.2; deepseek-ai/DeepEP README, "normal kernels ... forwarding data from
//! NVLink domain to RDMA domain"): a token crosses InfiniBand once per destination node, to the
//! GPU with the same in-node index there, which forwards it over NVLink to the GPUs holding its
//! experts; the combine runs the same way back. So a token's cross-node traffic is one copy per
//! remote destination node, not one per expert: [`remote_nodes_per_token`].

use crate::model::Model;
use crate::parallelism::Groups;
use std::collections::BTreeMap;

/// The experts a token is routed to under node-limited routing: `scores` are its affinities to
/// every expert, `experts_per_node` consecutive experts on each node; the `max_nodes` nodes with
/// the highest sums of their `k / max_nodes` best scores are chosen, then the `k` best experts on
/// those nodes. Ties go to the lower index. Returns the experts, best first.
pub fn route(scores: &[f64], experts_per_node: usize, k: usize, max_nodes: usize) -> Vec<usize> {
    let nodes = scores.len().div_ceil(experts_per_node.max(1));
    let per_node = (k / max_nodes.max(1)).max(1);
    let best_first = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut node_scores: Vec<(usize, f64)> = (0..nodes)
        .map(|n| {
            let lo = n * experts_per_node;
            let hi = (lo + experts_per_node).min(scores.len());
            let mut s: Vec<f64> = scores[lo..hi].to_vec();
            s.sort_by(|a, b| b.total_cmp(a));
            (n, s.iter().take(per_node).sum())
        })
        .collect();
    node_scores.sort_by(best_first);
    let chosen: Vec<usize> = node_scores
        .iter()
        .take(max_nodes.max(1))
        .map(|&(n, _)| n)
        .collect();
    let mut candidates: Vec<(usize, f64)> = scores
        .iter()
        .enumerate()
        .filter(|(e, _)| chosen.contains(&(e / experts_per_node.max(1))))
        .map(|(e, &s)| (e, s))
        .collect();
    candidates.sort_by(best_first);
    candidates.into_iter().take(k).map(|(e, _)| e).collect()
}

/// Remote nodes a token's dispatch crosses InfiniBand to, on average, for an expert-parallel
/// group over `nodes` nodes with routing limited to `max_nodes` of them: each of the at most
/// min(M, nodes) destination nodes once, less its own node, which it is among with probability
/// min(M, nodes) / nodes when the experts are balanced (the auxiliary-loss-free balancing of
/// section 2.1.2), so min(M, nodes) (1 - 1/nodes): 3.5 for DeepSeek-V3's M = 4 on 8 nodes (EP 64).
/// This counts every destination node as reached; [`route`] may reach fewer, so it is the most
/// the dispatch sends.
pub fn remote_nodes_per_token(nodes: u64, max_nodes: u64) -> f64 {
    if nodes <= 1 {
        return 0.0;
    }
    let m = max_nodes.min(nodes) as f64;
    m * (1.0 - 1.0 / nodes as f64)
}

/// The expert-parallel groups split as node-limited dispatch sends over them: `rails`, the ranks
/// of a group with the same index in their servers (one per server), and `servers`, a group's
/// ranks on one server; `nodes_per_token` the destination nodes a token's copies go to
/// (min(M, nodes), its own node's share of the all-to-all buffer included, so that the buffer's
/// remote part is [`remote_nodes_per_token`]).
pub struct NodeLimited {
    /// One group per in-server index of each expert-parallel group: its ranks, one a server.
    pub rails: Vec<Vec<u32>>,
    /// One group per server of each expert-parallel group: its ranks there.
    pub servers: Vec<Vec<u32>>,
    /// Destination nodes a token's copies go to, its own among them: min(M, nodes).
    pub nodes_per_token: f64,
}

/// [`NodeLimited`] where the model limits its routing and an expert-parallel group spans more
/// than one server with the same number of its ranks on each; else `None`.
pub fn node_limited(
    model: &Model,
    groups: &Groups,
    per_server: Option<u32>,
) -> Option<NodeLimited> {
    let g = per_server.filter(|&g| g > 0 && model.node_limit > 0)?;
    let (mut rails, mut servers) = (Vec::new(), Vec::new());
    let mut nodes = 0;
    for group in &groups.ep {
        let mut by_server: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for &r in group {
            by_server.entry(r / g).or_default().push(r);
        }
        let per = by_server.values().next().map_or(0, Vec::len);
        if by_server.len() < 2 || by_server.values().any(|v| v.len() != per) {
            return None;
        }
        nodes = by_server.len();
        for i in 0..per {
            rails.push(by_server.values().map(|v| v[i]).collect());
        }
        servers.extend(by_server.into_values());
    }
    Some(NodeLimited {
        rails,
        servers,
        nodes_per_token: model.node_limit.min(nodes as u64) as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded linear congruential generator (Knuth's MMIX constants): scores in [0, 1).
    fn scores(seed: &mut u64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (*seed >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    /// DeepSeek-V3's routing on EP 64 over 8 nodes (256 experts, 32 a node, top-8, M = 4): every
    /// token's experts sit on at most 4 nodes, it gets 8 of them, and the remote nodes it is sent
    /// to average at most 3.5 ([`remote_nodes_per_token`]).
    #[test]
    fn node_limited_dispatch_sends_each_token_to_at_most_m_nodes() {
        let (experts, per_node, k, m) = (256, 32, 8, 4);
        let mut seed = 36;
        let (mut remote, tokens) = (0usize, 4096);
        for t in 0..tokens {
            let s = scores(&mut seed, experts);
            let picked = route(&s, per_node, k, m);
            assert_eq!(picked.len(), k);
            let mut nodes: Vec<usize> = picked.iter().map(|e| e / per_node).collect();
            nodes.sort_unstable();
            nodes.dedup();
            assert!(nodes.len() <= m, "token {t} went to {} nodes", nodes.len());
            let home = t % (experts / per_node);
            remote += nodes.iter().filter(|&&n| n != home).count();
        }
        let mean = remote as f64 / tokens as f64;
        let bound = remote_nodes_per_token(8, 4);
        assert_eq!(bound, 3.5);
        assert!(mean <= bound + 0.05 && mean > 3.0, "{mean}");
        // Without the limit (M = 8) the same tokens reach more nodes.
        let mut seed = 36;
        let wide: usize = (0..tokens)
            .map(|_| {
                let s = scores(&mut seed, experts);
                let mut n: Vec<usize> = route(&s, per_node, k, 8)
                    .iter()
                    .map(|e| e / per_node)
                    .collect();
                n.sort_unstable();
                n.dedup();
                n.len()
            })
            .sum();
        assert!(wide as f64 / tokens as f64 > 4.5);
    }
}
