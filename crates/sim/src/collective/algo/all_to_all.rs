//! All-to-all: every rank to every other, directly or relayed over NVLink to the destination's
//! rail (PXN).

use crate::collective::config::Relay;
use crate::collective::error::CollectiveError;
use crate::collective::fold;
use crate::collective::step::StepBuilder;
use crate::collective::CollectiveAlgorithm;
use crate::collective::JobShape;
use crate::collective::MAX_ALLTOALL_FLOWS;
use crate::collective::STEP_CHUNK;
use crate::nccl;
use crate::nccl::Algorithm;
use crate::nccl::Collective;
use crate::nccl::Protocol;
/// All-to-all: every rank sends S/n to every other rank at once, crossing rails as `relay` says.
pub struct AllToAll {
    pub relay: Relay,
}

impl CollectiveAlgorithm for AllToAll {
    fn name(&self) -> &'static str {
        match self.relay {
            Relay::Direct => "alltoall",
            Relay::Pxn => "alltoall-pxn",
            Relay::PxnStaged => "alltoall-pxn-staged",
        }
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Ring
    }

    fn folds(&self) -> bool {
        true
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        if b.fold.is_some() {
            return self.step_folded(b);
        }
        let flows = u64::from(shape.ranks) * u64::from(shape.ranks.saturating_sub(1));
        if flows > MAX_ALLTOALL_FLOWS && !b.counting() {
            return Err(CollectiveError::TooManyFlows {
                ranks: shape.ranks,
                flows,
            });
        }
        let (lo, hi) = b.sources.unwrap_or((0, shape.ranks));
        // The counted shortcuts send each transfer through the GPUs' own NICs; with several
        // NICs per GPU the transfers are split (`rails_of_gpu`) and counted one by one.
        if self.relay == Relay::Direct && b.counting() && !multi_rail(b) {
            if b.router.by_first_switch() {
                return b.count_direct_by_switch(lo, hi);
            }
            if !b.bounding() {
                return b.count_direct(lo, hi);
            }
        }
        for i in lo..hi.min(shape.ranks) {
            for j in 0..shape.ranks {
                if i == j {
                    continue;
                }
                b.send(
                    b.comm.gpu_of_rank(i),
                    b.comm.gpu_of_rank(j),
                    self.relay,
                    STEP_CHUNK,
                )?;
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        size as f64 / f64::from(shape.ranks.max(1))
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::ring_latency_us(
            Collective::AllToAll,
            proto,
            shape.ranks,
            shape.nodes,
            shape.intra,
        )
    }
}

/// Whether some GPU of the step's servers has more than one NIC (`rails_of_gpu`).
fn multi_rail(b: &StepBuilder<'_, '_>) -> bool {
    (0..b.net.servers.len()).any(|i| crate::collective::has_spare_nics(b.net, i))
}

impl AllToAll {
    /// The step by symmetry ([`Fold`]), for a communicator of every GPU a job runs on: per server
    /// class, the representative's transfers, then the last member's as a check
    /// ([`fold::lay_out_folded`]).
    pub(in crate::collective) fn step_folded(
        &self,
        b: &mut StepBuilder<'_, '_>,
    ) -> Result<(), CollectiveError> {
        fold::lay_out_folded(b, self.relay)
    }
}
