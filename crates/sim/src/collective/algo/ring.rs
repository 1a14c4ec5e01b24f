//! NCCL's ring: one ring per channel, each entering a server near the channel's rail.

use crate::collective::comm::Comm;
use crate::collective::error::CollectiveError;
use crate::collective::step::StepBuilder;
use crate::collective::CollectiveAlgorithm;
use crate::collective::JobShape;
use crate::collective::STEP_CHUNK;
use crate::nccl;
use crate::nccl::Algorithm;
use crate::nccl::Collective;
use crate::nccl::Protocol;
use crate::net::fabric_net::FabricNet;
/// The GPU order of channel `c` inside a server: enter at a GPU near rail `c mod NICs`, leave from
/// another GPU on the same PCIe switch (or the next GPU), the rest in index order between.
pub(in crate::collective) fn channel_order(
    net: &FabricNet<'_>,
    comm: &Comm,
    shape: &JobShape,
    c: u32,
) -> (u32, Vec<u32>) {
    // `shape_of_comm` made the shape: the communicator has a server and `g >= 1` GPUs on each, so
    // `cand` below holds its GPUs and is never empty.
    let s = &net.servers[comm.servers[0]];
    let rails = comm.rails(net);
    let k = (rails.len() as u32).max(1);
    let rail = rails.get((c % k) as usize).copied().unwrap_or(c % k);
    let v = c / k;
    let mine = |x: &u32| comm.locals.contains(x);
    let own: Vec<u32> = s
        .gpus_of_nic
        .get(rail as usize)
        .map(|g| g.iter().copied().filter(mine).collect())
        .unwrap_or_default();
    let near: Vec<u32> = s
        .gpus_near_nic
        .get(rail as usize)
        .map(|g| g.iter().copied().filter(mine).collect())
        .unwrap_or_default();
    let mut cand: Vec<u32> = Vec::with_capacity(comm.locals.len());
    for x in own
        .iter()
        .chain(near.iter())
        .chain(comm.locals.iter())
        .copied()
    {
        if !cand.contains(&x) {
            cand.push(x);
        }
    }
    let _ = shape;
    // The channel enters at a GPU of the rail's NIC; a NIC that is no GPU's own (more NICs than
    // GPUs on a PCIe switch) is taken by the switch's GPUs in turn, as `nic_of_gpu` deals the
    // GPUs to the NICs, so each GPU's PCIe link receives from as many NICs as the others'.
    let first = if own.is_empty() && !near.is_empty() {
        let on_switch = s.gpus_near_nic.get(rail as usize);
        let pos = (0..rail)
            .filter(|&r| s.gpus_near_nic.get(r as usize) == on_switch)
            .count();
        (pos + v as usize) % near.len()
    } else {
        (v as usize) % own.len().max(1).min(cand.len())
    };
    let entry = cand[first];
    // The exit is the GPU after the entry among the switch's GPUs, in turn: each GPU on a switch
    // then sends one channel out and takes one in. Taking the switch's first GPU for every channel
    // put three channels' egress on one GPU's PCIe link with four GPUs and NICs per switch, and
    // made 16 NICs on 16 GPUs slower than 8.
    let after_entry = near
        .iter()
        .position(|&x| x == entry)
        .filter(|_| near.len() > 1)
        .map(|i| near[(i + 1) % near.len()]);
    let exit = after_entry.unwrap_or_else(|| {
        cand.iter()
            .cycle()
            .skip(first + 1)
            .take(cand.len())
            .copied()
            .find(|&x| x != entry)
            .unwrap_or(entry)
    });
    let mut order = vec![entry];
    order.extend(
        comm.locals
            .iter()
            .copied()
            .filter(|&x| x != entry && x != exit),
    );
    if exit != entry {
        order.push(exit);
    }
    (rail, order)
}

/// Ring algorithms: all-reduce, all-gather, reduce-scatter, and the chain for broadcast / reduce.
pub struct Ring {
    pub op: Collective,
}

impl CollectiveAlgorithm for Ring {
    fn name(&self) -> &'static str {
        "ring"
    }

    fn nccl_algorithm(&self) -> Algorithm {
        Algorithm::Ring
    }

    fn step(&self, b: &mut StepBuilder<'_, '_>) -> Result<(), CollectiveError> {
        let shape = b.shape;
        let n = shape.nodes as usize;
        let chain = matches!(self.op, Collective::Broadcast | Collective::Reduce);
        for c in 0..shape.channels {
            let (rail, order) = match b.net.xgmi_mesh() {
                // RCCL's rings of the mesh (one server: `shape_of_comm` refuses more).
                Some(_) => {
                    let ring = crate::net::xgmi::MESH_RINGS
                        [c as usize % crate::net::xgmi::MESH_RINGS.len()];
                    (0, ring.to_vec())
                }
                None => channel_order(b.net, &b.comm, &shape, c),
            };
            let (entry, exit) = (order[0], order[order.len() - 1]);
            for s in 0..n {
                for pair in order.windows(2) {
                    b.transfer(b.gpu(s, pair[0]), b.gpu(s, pair[1]), None, None, STEP_CHUNK)?;
                }
                // The edge into the next server (or back to the entry on one server). The chain
                // of broadcast / reduce has no edge into the root (server 0's entry).
                let next = (s + 1) % n;
                if chain && next == 0 {
                    continue;
                }
                if n > 1 || exit != entry {
                    b.transfer(
                        b.gpu(s, exit),
                        b.gpu(next, entry),
                        Some(rail),
                        None,
                        STEP_CHUNK,
                    )?;
                }
            }
        }
        Ok(())
    }

    fn edge_bytes(&self, size: u64, shape: &JobShape) -> f64 {
        let n = f64::from(shape.ranks.max(1));
        let per_channel = size as f64 / f64::from(shape.channels.max(1));
        per_channel
            * match self.op {
                Collective::AllReduce => 2.0 * (n - 1.0) / n,
                Collective::AllGather | Collective::ReduceScatter => (n - 1.0) / n,
                _ => 1.0,
            }
    }

    fn latency_us(&self, proto: Protocol, shape: &JobShape) -> f64 {
        nccl::ring_latency_us(self.op, proto, shape.ranks, shape.nodes, shape.intra)
    }
}
