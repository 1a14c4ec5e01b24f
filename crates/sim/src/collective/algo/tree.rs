//! NCCL's double binary tree over servers (`ncclGetDtree`), a chain inside each server.

use crate::collective::algo::ring::channel_order;
use crate::collective::error::CollectiveError;
use crate::collective::step::StepBuilder;
use crate::collective::CollectiveAlgorithm;
use crate::collective::JobShape;
use crate::collective::STEP_CHUNK;
use crate::nccl;
use crate::nccl::Algorithm;
use crate::nccl::Protocol;
/// NCCL's double binary tree for all-reduce: two complementary binary trees over the nodes
/// (`ncclGetDtree`), a chain inside each node; reduce up and broadcast down pipelined together, so
/// every edge carries the channel's data in both directions.
pub struct DoubleBinaryTree;

/// Parent of `rank` in NCCL's binary tree over `n` ranks (`ncclGetBtree`, src/graph/trees.cc).
pub fn btree_parent(n: u32, rank: u32) -> Option<u32> {
    if rank == 0 || rank >= n {
        return None;
    }
    let mut bit = 1u32;
    while bit < n && bit & rank == 0 {
        bit <<= 1;
    }
    let up = (rank ^ bit) | (bit << 1);
    Some(if up >= n { rank ^ bit } else { up })
}

/// Parent in tree `t` (0 or 1) of NCCL's double binary tree: the second tree is the first shifted
/// by one rank (odd n) or mirrored (even n) (`ncclGetDtree`).
pub fn dtree_parent(n: u32, rank: u32, t: u32) -> Option<u32> {
    if t == 0 {
        return btree_parent(n, rank);
    }
    if n % 2 == 1 {
        btree_parent(n, (rank + n - 1) % n).map(|u| (u + 1) % n)
    } else {
        btree_parent(n, n - 1 - rank).map(|u| n - 1 - u)
    }
}

impl CollectiveAlgorithm for DoubleBinaryTree {
    fn name(&self) -> &'static str {
        "tree"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Tree
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        let n = shape.nodes;
        // Both trees on every ring channel's rail: 2 x channels tree channels.
        for c in 0..2 * shape.channels {
            let t = c % 2;
            let (rail, order) = channel_order(b.net, &b.comm, &shape, c / 2);
            let head = order[0];
            for s in 0..n as usize {
                for pair in order.windows(2) {
                    b.transfer(b.gpu(s, pair[0]), b.gpu(s, pair[1]), None, None, STEP_CHUNK)?;
                    b.transfer(b.gpu(s, pair[1]), b.gpu(s, pair[0]), None, None, STEP_CHUNK)?;
                }
                if let Some(p) = dtree_parent(n, s as u32, t) {
                    let p = p as usize;
                    let (child, parent) = (b.gpu(s, head), b.gpu(p, head));
                    b.transfer(child, parent, Some(rail), None, STEP_CHUNK)?;
                    b.transfer(parent, child, Some(rail), None, STEP_CHUNK)?;
                }
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        size as f64 / f64::from(2 * shape.channels.max(1))
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::tree_latency_us(proto, shape.gpus_per_node, shape.nodes, shape.intra)
    }
}
