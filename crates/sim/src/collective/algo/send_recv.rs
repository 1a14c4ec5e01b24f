//! Send/recv: nccl-tests' ring pattern, or a pipeline hop that sends one way.

use crate::collective::config::Relay;
use crate::collective::config::SendRecvPattern;
use crate::collective::error::CollectiveError;
use crate::collective::step::StepBuilder;
use crate::collective::CollectiveAlgorithm;
use crate::collective::JobShape;
use crate::collective::STEP_CHUNK;
use crate::nccl;
use crate::nccl::Algorithm;
use crate::nccl::Collective;
use crate::nccl::Protocol;
/// A send/recv: rank i sends the whole buffer to rank i+1 (and receives from i-1), the last rank to
/// the first as nccl-tests does or not at all in a pipeline hop ([`SendRecvPattern`]); between
/// rails as `relay` says, as all-to-all's transfers do (NCCL's PXN serves every p2p operation:
/// src/transport/net.cc, paths.cc `ncclTopoGetPxnRanks`).
pub struct SendRecv {
    pub relay: Relay,
    pub pattern: SendRecvPattern,
}

impl CollectiveAlgorithm for SendRecv {
    fn name(&self) -> &'static str {
        "p2p"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Ring
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        if shape.ranks < 2 {
            return Ok(());
        }
        let senders = match self.pattern {
            SendRecvPattern::Ring => shape.ranks,
            SendRecvPattern::Pipeline => shape.ranks - 1,
        };
        for i in 0..senders {
            let j = (i + 1) % shape.ranks;
            b.send(
                b.comm.gpu_of_rank(i),
                b.comm.gpu_of_rank(j),
                self.relay,
                STEP_CHUNK,
            )?;
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, _shape: &JobShape) -> f64 {
        size as f64
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::ring_latency_us(
            Collective::SendRecv,
            proto,
            shape.ranks,
            shape.nodes,
            shape.intra,
        )
    }
}
