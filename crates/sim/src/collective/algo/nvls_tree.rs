//! NCCL's NVLS tree: NVLink SHARP inside a server, a tree across servers.

use crate::collective::algo::ring::channel_order;
use crate::collective::algo::tree::dtree_parent;
use crate::collective::error::CollectiveError;
use crate::collective::step::StepBuilder;
use crate::collective::CollectiveAlgorithm;
use crate::collective::JobShape;
use crate::collective::STEP_CHUNK;
use crate::nccl;
use crate::nccl::Algorithm;
use crate::nccl::Protocol;
/// The network side of NVLSTree: NVLink SHARP reduces inside each node, so only one head GPU per
/// channel (the GPU on the channel's rail) sends; the heads of all nodes form NCCL's double binary
/// tree, reduce up and broadcast down together (`ncclGetDtree`; NVLSTree in NCCL's
/// src/device/all_reduce.h). At most `NCCL_MAX_NVLS_ARITY` (32) heads: on a rack-scale NVLink
/// domain (an NVL72 rack's 72 GPUs and NICs) the NVLS search keeps 32 heads, so 32 of the rack's
/// NICs carry the tree between racks (src/graph/search.cc, `nccl::tuning`'s NVLS graph).
pub struct NvlsTreeNetwork;

/// The heads the tree runs on: a channel's each, at most `NCCL_MAX_NVLS_ARITY`.
fn heads(shape: &JobShape) -> u32 {
    shape.channels.clamp(1, nccl::tuning::MAX_NVLS_ARITY)
}

impl CollectiveAlgorithm for NvlsTreeNetwork {
    fn name(&self) -> &'static str {
        "nvlstree"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Tree
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        let n = shape.nodes;
        for c in 0..2 * heads(&shape) {
            let t = c % 2;
            let (rail, order) = channel_order(b.net, &b.comm, &shape, c / 2);
            let head = order[0];
            for s in 0..n {
                if let Some(p) = dtree_parent(n, s, t) {
                    let (s, p) = (s as usize, p as usize);
                    b.transfer(b.gpu(s, head), b.gpu(p, head), Some(rail), None, STEP_CHUNK)?;
                    b.transfer(b.gpu(p, head), b.gpu(s, head), Some(rail), None, STEP_CHUNK)?;
                }
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        size as f64 / f64::from(2 * heads(shape))
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::tree_latency_us(proto, shape.gpus_per_node, shape.nodes, shape.intra)
    }
}
