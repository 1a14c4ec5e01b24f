//! How NCCL cuts an NVLS or NVLSTree collective into chunks, and what the chunk steps cost.
//!
//! NCCL's model (`tuning.cc`) prices every size as latency + bytes / bandwidth, and picks its
//! algorithm on that. What it runs after the choice is a pipeline of chunk steps whose chunk
//! shrinks with the message so that every channel has enough in flight (NVIDIA/nccl v2.30.7-1,
//! read, not copied; the same rule since v2.18):
//! - `src/transport/nvls.cc` `ncclNvlsTuning` (lines 202-244): `nvlsChannels` 16 on SM90
//!   (`NVLS_NCHANNELS_SM90`, line 155), 24 on SM100 in one node, 32 across nodes;
//!   `nvlsChunkSize` 128 KiB (`NVLS_CHUNKSIZE`); `nvlsTreeMaxChunkSize` 64 KiB from 4 nodes,
//!   else the chunk (`NVLSTREE_MAX_CHUNKSIZE` = -2, since 2.29); `ncclNvlsTreeSm100Tuning`
//!   (lines 164-200) changes all three on SM100 across nodes by NIC speed, GPUs per node and the
//!   GPU-to-NIC path.
//! - `src/enqueue.cc` `topoGetAlgoInfo` (lines 2084-2090): NVLS and NVLSTree always run on
//!   `nvlsChannels` (NVLS across nodes at most `comm->nChannels`), with no reduction by size.
//! - `src/enqueue.cc` `calcCollChunking` (lines 2222-2286): the chunk starts at a Simple step
//!   (4 MiB buffer / `NCCL_STEPS` 8 = 512 KiB); NVLS caps it at `nvlsChunkSize` (32 KiB across
//!   nodes when NCCL's NVLS all-reduce bandwidth is below 150 GB/s) and halves it to 64, 32, 16 KiB
//!   below 64, 8, 2 x `concurrentOps` x chunk bytes; NVLSTree starts at
//!   min(`nvlsChunkSize`, `nvlsTreeMaxChunkSize`) and goes to 256, 128, 64, 32 KiB below 32, 16, 4,
//!   1 x `concurrentOps` x chunk; `concurrentOps` = channels x `nvls.nHeads`.
//! - `src/enqueue.cc` (lines 2332-2364): the NVLS and NVLSTree patterns run one step per chunk and
//!   `nHeads` chunks per loop of `channels x nHeads x chunk` bytes.
//!
//! Each chunk step passes through a pipeline of warp groups (scatter, multimem reduce, network
//! tree, multimem broadcast, gather: `src/device/all_reduce.h` `RunWorkColl` for NVLS and
//! NVLS_TREE) that hand over through flags once per chunk. Two costs follow that latency +
//! bytes / bandwidth leaves out, and that are measured rather than read from the code
//! (`crate::nccl::fitted::NVLS_CHUNK_STEP_US`, `NVLS_PIPELINE_FILL_STEPS`): a fixed time per chunk
//! step, comparable to a 16-32 KiB chunk's transfer, and the steps it takes to fill and drain the
//! pipeline. docs/validation/mid-size.md has the evidence.

use crate::nccl::tuning::graph::nvls_graph;
use crate::nccl::tuning::NcclAlgo;
use crate::nccl::tuning::NcclSystem;
use crate::nccl::tuning::Tuning;
use crate::nccl::{Collective, GpuGeneration};

const KIB: u64 = 1024;

/// NCCL's Simple buffer per connection (`DEFAULT_BUFFSIZE`, 4 MiB, `src/init.cc`) over its
/// `NCCL_STEPS` (8, `src/include/device.h`): the chunk every algorithm starts from.
const SIMPLE_STEP_BYTES: u64 = (4 << 20) / 8;

/// What `ncclNvlsTuning` sets for a communicator: the CTAs (channels) NVLS and NVLSTree run on,
/// `nvlsChunkSize` and `nvlsTreeMaxChunkSize`, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvlsTuning {
    pub channels: u32,
    pub chunk: u64,
    pub tree_max_chunk: u64,
}

/// `ncclNvlsTuning` with NCCL's defaults (no `NCCL_NVLS_CHUNKSIZE`, `NCCL_NVLSTREE_MAX_CHUNKSIZE`
/// or CTA limits). On SM100 across nodes the GPU-to-NIC path is taken as PXB or closer: railyard's
/// servers put each GPU's NIC behind its PCIe switch, as HGX B200 and GB200 trays do.
pub fn nvls_tuning(sys: &NcclSystem) -> NvlsTuning {
    let blackwell = sys.generation >= GpuGeneration::Blackwell;
    let mut t = NvlsTuning {
        channels: match (blackwell, sys.nodes > 1) {
            (false, _) => 16,
            (true, false) => 24,
            (true, true) => 32,
        },
        chunk: 128 * KIB,
        tree_max_chunk: 0,
    };
    if blackwell && sys.nodes > 1 {
        sm100_tree_tuning(sys, &mut t);
    }
    if t.tree_max_chunk == 0 {
        t.tree_max_chunk = if sys.nodes >= 4 { 64 * KIB } else { t.chunk };
    }
    t
}

/// `ncclNvlsTreeSm100Tuning` (nvls.cc lines 164-200), the path taken as PXB (see [`nvls_tuning`]).
fn sm100_tree_tuning(sys: &NcclSystem, t: &mut NvlsTuning) {
    let (ppn, nic) = (sys.ppn(), sys.nic_gbs);
    let pxb = true;
    if sys.nodes == 2 && nic >= 48.0 {
        t.channels = 32;
        t.tree_max_chunk = 128 * KIB;
        if ppn <= 4 {
            t.chunk = 256 * KIB;
            t.tree_max_chunk = 256 * KIB;
        } else if ppn >= 16 || (ppn <= 8 && pxb && nic < 96.0) {
            t.tree_max_chunk = 64 * KIB;
        }
    } else if nic >= 96.0 {
        if ppn <= 8 {
            t.channels = 24;
            t.chunk = 256 * KIB;
            t.tree_max_chunk = 256 * KIB;
        } else {
            t.channels = 32;
            t.tree_max_chunk = if ppn < 32 { 128 * KIB } else { 64 * KIB };
        }
    } else if nic >= 48.0 {
        t.channels = 24;
        t.tree_max_chunk = if pxb { 64 * KIB } else { 128 * KIB };
    }
}

/// How one NVLS or NVLSTree collective of a given size is cut: per channel, `steps` chunk steps
/// of `step_bytes` on average (the last loop may fill its chunks partly), `chunk` as NCCL sets it
/// for this size and `full_chunk` as it sets it for large sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chunking {
    pub channels: u32,
    /// `nvls.nHeads`: the NVLS graph's channels (GPUs of the node, or its NICs across nodes).
    pub heads: u32,
    pub chunk: u64,
    pub full_chunk: u64,
    pub steps: u64,
    pub step_bytes: f64,
}

/// `calcCollChunking` for NVLS and NVLSTree (`None` for the other algorithms, which keep NCCL's
/// latency + bytes / bandwidth): `nbytes` is the collective's whole buffer (nccl-tests' size; NCCL's
/// `globalBytesPerElement x count`).
pub fn nvls_chunking(tuning: &Tuning, a: NcclAlgo, nbytes: u64) -> Option<Chunking> {
    let sys = &tuning.system;
    let heads = nvls_graph(sys)?.channels.max(1);
    let nt = nvls_tuning(sys);
    let (channels, full_chunk) = match a {
        NcclAlgo::Nvls => {
            let channels = if sys.nodes > 1 {
                nt.channels.min(tuning.runtime_channels.max(1))
            } else {
                nt.channels
            };
            let mut max = nt.chunk;
            if sys.nodes > 1 && nvls_allreduce_gbs(tuning) < 150.0 {
                max = 32 * KIB;
            }
            (channels, SIMPLE_STEP_BYTES.min(max))
        }
        NcclAlgo::NvlsTree => (nt.channels, nt.chunk.min(nt.tree_max_chunk)),
        _ => return None,
    };
    let ops = u64::from(channels) * u64::from(heads);
    let mut chunk = full_chunk;
    let halvings: &[(u64, u64)] = if a == NcclAlgo::Nvls {
        &[(64, 64 * KIB), (8, 32 * KIB), (2, 16 * KIB)]
    } else {
        &[
            (32, 256 * KIB),
            (16, 128 * KIB),
            (4, 64 * KIB),
            (1, 32 * KIB),
        ]
    };
    for &(times, to) in halvings {
        if nbytes < times * ops * chunk && chunk > to {
            chunk = to;
        }
    }
    let loops = nbytes.div_ceil(ops * chunk);
    let steps = loops * u64::from(heads);
    let step_bytes = if steps == 0 {
        0.0
    } else {
        nbytes as f64 / (f64::from(channels) * steps as f64)
    };
    Some(Chunking {
        channels,
        heads,
        chunk,
        full_chunk,
        steps,
        step_bytes,
    })
}

/// NCCL's NVLS all-reduce bandwidth (`comm->bandwidths[AllReduce][NVLS][Simple]`), which decides
/// the chunk of NVLS across nodes whatever the collective.
fn nvls_allreduce_gbs(tuning: &Tuning) -> f64 {
    let p = crate::nccl::Protocol::Simple;
    if tuning.op == Collective::AllReduce {
        tuning.bandwidth(NcclAlgo::Nvls, p)
    } else {
        super::tune(Collective::AllReduce, &tuning.system).bandwidth(NcclAlgo::Nvls, p)
    }
}

/// The size-dependent time of a chunked collective, microseconds: `(steps + fill_steps) x (step_us
/// + step_bytes / raw rate)` per channel, where the raw rate is what is left of the channel's share
/// of `algbw_gbs` (the algorithm bandwidth NCCL's model and the fabric give) once a full chunk's
/// step pays `step_us`. At large sizes (full chunks, steps >> fill) this is bytes / bandwidth, as
/// before; at mid sizes small chunks pay `step_us` each and the pipeline's fill is a visible part.
/// `step_us` is held below half a full chunk's time so the raw rate stays finite.
pub fn pipelined_transfer_us(algbw_gbs: f64, c: &Chunking, step_us: f64, fill_steps: f64) -> f64 {
    let per_channel = algbw_gbs * 1e3 / f64::from(c.channels.max(1)); // bytes per us
    let full_step_us = c.full_chunk as f64 / per_channel;
    let o = step_us.clamp(0.0, full_step_us / 2.0);
    let raw = c.full_chunk as f64 / (full_step_us - o);
    (c.steps as f64 + fill_steps) * (o + c.step_bytes / raw)
}

#[cfg(test)]
#[path = "chunking_tests.rs"]
mod tests;
