//! One training step: compute from FLOPs, communication timed by a [`CommTimer`] (the simulator on
//! the actual fabric), and the 1F1B pipeline schedule that puts them together.
//!
//! Per pipeline stage and micro-batch (Megatron-LM, Narayanan et al., SC'21):
//! - compute: training FLOPs of the micro-batch's tokens / (tp x pp) GPUs, at the GPU's dense BF16 peak
//!   times an achievable efficiency; backward takes twice the forward;
//! - tensor parallelism: 2 all-reduces of the activations (micro-batch x seq x hidden, BF16) per layer
//!   forward and 2 backward (Shoeybi et al., Megatron-LM, 2019, section 3);
//! - expert parallelism: a dispatch and a combine all-to-all per MoE layer forward, and again backward,
//!   of the routed activations (top-k copies of every token);
//! - pipeline: one activation send forward and one gradient send backward between neighbouring stages.
//!
//! 1F1B runs (m + pp - 1) micro-batch slots per step, of which pp - 1 are the bubble; Megatron's
//! interleaved schedule with v model chunks per stage (`Parallelism::vp`) cuts the bubble to
//! (pp - 1) / v slots and sends across every stage boundary v times per micro-batch. Stages may carry
//! different layers (`Parallelism::stage_layers`, Llama 3 405B's 7, 8 x 14, 7): a stage's compute,
//! tensor-parallel and expert-parallel time follow its layers (compute in proportion to them, the
//! output layer's and attention's FLOPs spread likewise), and the slowest stage sets the slot; its
//! parameters set the data-parallel gradient sizes and the model state per GPU. Data-parallel
//! gradient traffic (FP32 gradients, [`Parallelism::grad_bytes`]; BF16 parameters) follows the last
//! backward: ZeRO-0 all-reduces the gradients, ZeRO-1 reduce-scatters
//! them and all-gathers the updated parameters, ZeRO-2 (sharded gradients) reduce-scatters after every
//! micro-batch's backward, and ZeRO-3 also all-gathers parameters for every forward and backward pass
//! (and not after the step). With overlap (the default) gradients go out in buckets while the last backward runs,
//! so only what does not fit under it, or at least the last bucket, is exposed.
//!
//! Precision ([`Precision`]): BF16 runs every FLOP at the GPU's dense BF16 peak; FP8 runs the linear
//! layers' GEMMs at its dense FP8 peak and keeps attention, the router and the output layer at BF16
//! ([`Model::train_flops_split`]), both at the same efficiency; MFU is then against the FP8 peak, as
//! NVIDIA's FP8 recipes state it. With [`StepConfig::fp8_dispatch`] the two expert all-to-alls that
//! carry activations into the experts (forward dispatch, and backward the gradients returning to
//! them) move FP8 values with one FP32 scale per 128 (1 + 4/128 bytes a value), the other two (the
//! combines) BF16, as DeepSeek-V3 does (technical report, section 3.3.4). Activations between stages
//! and tensor-parallel all-reduces stay BF16, data-parallel gradients as
//! [`Parallelism::grad_bytes`] says.
//!
//! Expert overlap ([`StepConfig::ep_overlap`]): DeepSeek-V3's DualPipe runs a forward and a backward
//! chunk together so that one's dispatch and combine run under the other's compute (report, section
//! 3.2.1). Modelled as: a stage's expert all-to-all time per micro-batch is hidden up to its compute
//! per micro-batch, exposed = max(0, all-to-all - compute). DualPipe's own bubble (smaller than
//! 1F1B's) is not modelled: the schedule stays 1F1B.

use crate::compute::{self, Gpu, Passes, Rates, Shapes};
use crate::dispatch;
pub use crate::memory::{
    in_flight, memory_remedies, model_state_bytes, stage_activation_bytes, stage_params, Memory,
    StageParams,
};
use crate::model::Model;
use crate::parallel::{Groups, Parallelism};
use crate::schedule::{self, Schedule, Slot};
use railyard_catalog::KernelTable;
use railyard_sim::collective::CollectiveError;
use serde::{Deserialize, Serialize};

pub use crate::ledger::CommTimer;
use crate::ledger::Ledger;
pub use crate::operation::{Op, Operation, Role, ROLES};
pub use crate::precision::{Peaks, Precision};
use std::collections::BTreeMap;

/// Bytes per value in training: BF16 activations, activation gradients and parameter copies (the
/// data-parallel weight gradients are [`Parallelism::grad_bytes`]).
pub const BYTES_PER_VALUE: u64 = 2;

/// The GPU a step runs on: its peaks and its generation's kernel table (`None`: a GPU no table
/// covers, which needs a flat [`StepConfig::compute_efficiency`]).
#[derive(Debug, Clone, Copy)]
pub struct Device<'a> {
    pub peaks: Peaks,
    pub kernels: Option<&'a KernelTable>,
}

impl From<Peaks> for Device<'_> {
    fn from(peaks: Peaks) -> Self {
        Device {
            peaks,
            kernels: None,
        }
    }
}

/// Why a step cannot be modelled: its communication cannot run, or the GPU lacks the precision.
#[derive(Debug, Clone, PartialEq)]
pub enum StepError {
    Comm(CollectiveError),
    /// FP8 asked of a GPU with no FP8 peak.
    NoFp8,
    /// No kernel table for the GPU and no flat efficiency given.
    NoKernels,
}

impl From<CollectiveError> for StepError {
    fn from(e: CollectiveError) -> Self {
        StepError::Comm(e)
    }
}

/// Knobs of the step model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepConfig {
    /// `None` (the default): every operation timed from its shapes on the GPU generation's
    /// kernel table ([`crate::compute`]). `Some(f)`: every FLOP at f of the dense peak instead
    /// (`--efficiency`, or fitted to a measured step), nothing memory-bound.
    pub compute_efficiency: Option<f64>,
    /// Data-parallel communication overlaps the backward pass in buckets.
    pub dp_overlap: bool,
    /// Gradient buckets for the overlap.
    pub buckets: u32,
    /// The GEMMs' number format (default BF16).
    pub precision: Precision,
    /// Expert dispatch all-to-alls in FP8, combines in BF16 (DeepSeek-V3's recipe; FP8 only).
    pub fp8_dispatch: bool,
    /// Expert all-to-all hidden under compute as DualPipe overlaps it (default off).
    pub ep_overlap: bool,
    /// Tensor-parallel communication overlapped with the GEMMs it feeds (Megatron-Core's
    /// `--tp-comm-overlap`, Transformer Engine's userbuffers; torchtitan's async TP).
    pub tp_overlap: bool,
    /// With FP8: the linear layers' GEMMs with fine-grained block scaling (1x128 / 128x128, as
    /// DeepSeek-V3 trains with DeepGEMM), timed at the kernel table's measured block-scaled rates
    /// ([`railyard_catalog::KernelTable::gemm_fp8_block`]) where the generation has them.
    pub fp8_blockwise: bool,
    /// Interleaved 1F1B's warm-up and cool-down sends asynchronous too (Megatron-Core's
    /// `overlap_p2p_comm_warmup_flush`; the Llama 3 paper's "asynchronous point-to-point
    /// communication in PP"): only the sends the next chunk waits for stay exposed.
    pub overlap_p2p_warmup_flush: bool,
}

impl Default for StepConfig {
    fn default() -> Self {
        StepConfig {
            compute_efficiency: None,
            dp_overlap: true,
            buckets: 8,
            precision: Precision::Bf16,
            fp8_dispatch: false,
            ep_overlap: false,
            tp_overlap: false,
            fp8_blockwise: false,
            overlap_p2p_warmup_flush: false,
        }
    }
}

/// Where a step's time goes, seconds (exposed communication only: what compute does not hide).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub compute_s: f64,
    pub tensor_parallel_s: f64,
    pub expert_parallel_s: f64,
    /// Expert-parallel all-to-all in all, exposed or hidden: only with [`StepConfig::ep_overlap`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expert_parallel_total_s: Option<f64>,
    pub pipeline_parallel_s: f64,
    /// Context-parallel ring attention not hidden under attention (only with context parallelism).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_parallel_s: Option<f64>,
    /// Gradient reduction not hidden under the passes: data and expert-data parallelism, and the
    /// tied embeddings' all-reduce between the first and the last stage.
    pub data_parallel_exposed_s: f64,
    /// Gradient reduction in all, exposed or hidden.
    pub data_parallel_total_s: f64,
    pub pipeline_bubble_s: f64,
    /// The optimizer step over the rank's shard of the parameters (memory-bound; 0 with a flat
    /// efficiency).
    pub optimizer_s: f64,
    /// The fraction of the dense peak the step's compute ran at (the flat efficiency when one
    /// is given; by operation, FLOPs run over the compute's seconds).
    pub compute_efficiency: f64,
    pub step_time_s: f64,
    pub tokens_per_s: f64,
    /// Model FLOPs utilisation: model FLOPs per second over the GPUs' peak (recomputation not counted).
    pub mfu: f64,
    pub microbatches: u64,
    /// Bytes each network tier carries in one step (both directions, every link crossed).
    pub network_bytes_per_tier: BTreeMap<String, f64>,
    /// Model state per GPU, bytes: weights, gradients and Adam's state ([`model_state_bytes`]);
    /// 0 when unknown (a replayed workload names no model).
    pub model_state_bytes_per_gpu: f64,
    /// Activations per GPU at their peak, bytes ([`stage_activation_bytes`]); 0 when unknown.
    pub activation_bytes_per_gpu: f64,
    /// The most one GPU holds of both, bytes ([`Memory::peak_bytes`]); 0 when unknown.
    pub memory_bytes_per_gpu: f64,
    /// Every communication operation of the step, with the time the timer gives one call: on the
    /// fabric, what `sim collective` gives for the same group and size (empty for a replay).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<Operation>,
}

/// How fast the step's kernels run: flat where an efficiency is given, else by operation.
fn rates<'a>(device: &Device<'a>, cfg: &StepConfig) -> Result<Rates<'a>, StepError> {
    match (cfg.compute_efficiency, device.kernels) {
        (Some(e), _) => Ok(Rates::Flat(e)),
        (None, Some(t)) => Ok(Rates::Kernels(t)),
        (None, None) => Err(StepError::NoKernels),
    }
}

/// Each stage's compute for one micro-batch on one rank. By operation: its layers, and the
/// embedding on the first stage and the output layer on the last. Flat: the model's FLOPs per
/// token in proportion to the stage's layers, backward twice the forward, as the first model had
/// it.
fn stage_passes(model: &Model, par: &Parallelism, gpu: &Gpu) -> Vec<Passes> {
    let stages = par.stages(model.layers);
    let moe = model.moe_layers_per_stage(&stages);
    let (tp, pp) = (u64::from(par.tp), stages.len() as u64);
    let tokens = par.micro_batch * par.seq / u64::from(par.cp.max(1));
    let sh = Shapes {
        tokens: tokens as f64,
        seq: par.seq as f64,
        tp: tp as f64,
        ep: f64::from(par.ep.max(1)),
        etp: f64::from(par.etp()),
        recompute: compute::Recompute {
            full: par.recompute,
            modules: par.recompute_modules,
        },
    };
    if let Rates::Flat(e) = gpu.rates {
        let share = tokens as f64 / (tp * pp) as f64;
        let rate = |tflops: f64| tflops * 1e12 * e;
        let (flops, seconds) = match gpu.precision {
            Precision::Bf16 => {
                let f = model.train_flops_per_token(par.seq, par.recompute) * share;
                (f, f / rate(gpu.peaks.bf16_tflops))
            }
            Precision::Fp8 => {
                let (linear, rest) = model.train_flops_split(par.seq, par.recompute);
                let fp8 = gpu.peaks.fp8_tflops.unwrap_or(gpu.peaks.bf16_tflops);
                let t = linear * share / rate(fp8) + rest * share / rate(gpu.peaks.bf16_tflops);
                ((linear + rest) * share, t)
            }
        };
        return stages
            .iter()
            .map(|&layers| {
                let k = (layers * pp) as f64 / model.layers as f64;
                let k = if layers * pp == model.layers { 1.0 } else { k };
                Passes {
                    forward: seconds * k / 3.0,
                    backward: seconds * k * 2.0 / 3.0,
                    weight: seconds * k / 3.0,
                    linear: seconds * k,
                    flops: flops * k,
                }
            })
            .collect();
    }
    let (dense_layer, moe_layer) = (
        compute::layer(model, false, &sh, gpu),
        compute::layer(model, true, &sh, gpu),
    );
    let last = stages.len() - 1;
    stages
        .iter()
        .zip(&moe)
        .enumerate()
        .map(|(i, (&layers, &moe_layers))| {
            let mut p = compute::ends(model, i == 0, i == last, &sh, gpu);
            for (layer, n) in [(dense_layer, layers - moe_layers), (moe_layer, moe_layers)] {
                p.forward += layer.forward * n as f64;
                p.backward += layer.backward * n as f64;
                p.weight += layer.weight * n as f64;
                p.linear += layer.linear * n as f64;
                p.flops += layer.flops * n as f64;
            }
            p
        })
        .collect()
}

/// The slowest stage's micro-batch: its compute, its exposed tensor-, expert- and
/// context-parallel seconds, and all of its expert-parallel seconds.
#[derive(Debug, Clone, Copy, Default)]
struct Slowest {
    compute: Passes,
    tp: f64,
    ep: f64,
    ep_total: f64,
    cp: f64,
    chunk_share: f64,
}

/// The step time of `model` trained with `par` on `device`, in the precision `cfg` says.
pub fn step<'a>(
    model: &Model,
    par: &Parallelism,
    device: impl Into<Device<'a>>,
    cfg: &StepConfig,
    timer: &dyn CommTimer,
) -> Result<Breakdown, StepError> {
    let device = device.into();
    let peak_tflops = device.peaks.of(cfg.precision).ok_or(StepError::NoFp8)?;
    let gpu = Gpu {
        peaks: device.peaks,
        rates: rates(&device, cfg)?,
        precision: cfg.precision,
        fp8_blockwise: cfg.fp8_blockwise,
    };
    let groups: Groups = par.groups();
    let m = par.microbatches();
    let pp = u64::from(par.pp);
    let mut ledger = Ledger::new(timer);
    let passes = stage_passes(model, par, &gpu);
    let slow = slowest_stage(model, par, cfg, &gpu, &passes, &groups, &mut ledger)?;
    let async_ends = cfg.overlap_p2p_warmup_flush;
    let pp_mb = pipeline_sends(model, par, &slow, &groups, async_ends, &mut ledger)?;
    let exposed = slow.tp + slow.ep + slow.cp + pp_mb;
    let slot = Slot {
        forward: slow.compute.forward + exposed / 3.0,
        backward: slow.compute.backward + exposed * 2.0 / 3.0,
        weight: slow.compute.weight,
        chunk_share: slow.chunk_share,
    };
    let pipeline = schedule::pipeline(par.schedule, pp, m, &slot);
    let (dp_exposed, dp_total) =
        data_parallel(model, par, cfg, &slow.compute, &groups, &mut ledger)?;
    let optimizer = compute::optimizer(shard_params(model, par), par.grad_bytes() as f64, &gpu);
    let step_time = pipeline.seconds + dp_exposed + optimizer;
    let tokens_per_s = (par.global_batch * par.seq) as f64 / step_time;
    let gpus = par.world() as f64;
    let mfu =
        model.train_flops_per_token(par.seq, false) * tokens_per_s / (gpus * peak_tflops * 1e12);
    let memory = Memory::of(model, par);
    let mf = m as f64;
    Ok(Breakdown {
        compute_s: mf * slow.compute.total(),
        tensor_parallel_s: mf * slow.tp,
        expert_parallel_s: mf * slow.ep,
        expert_parallel_total_s: (cfg.ep_overlap || par.schedule == Schedule::Dualpipe)
            .then_some(mf * slow.ep_total),
        pipeline_parallel_s: mf * pp_mb,
        context_parallel_s: (par.cp > 1).then_some(mf * slow.cp),
        data_parallel_exposed_s: dp_exposed,
        data_parallel_total_s: dp_total,
        pipeline_bubble_s: pipeline.bubble,
        optimizer_s: optimizer,
        compute_efficiency: cfg.compute_efficiency.unwrap_or(
            slow.compute.flops / slow.compute.total().max(f64::MIN_POSITIVE) / (peak_tflops * 1e12),
        ),
        step_time_s: step_time,
        tokens_per_s,
        mfu,
        microbatches: m,
        network_bytes_per_tier: ledger.traffic,
        model_state_bytes_per_gpu: memory.state_bytes,
        activation_bytes_per_gpu: memory.activation_bytes,
        memory_bytes_per_gpu: memory.peak_bytes,
        operations: ledger.operations,
    })
}

/// The parameters of one rank's optimizer shard: the fullest stage's, divided over the ranks
/// that reduce them with ZeRO 1 and above.
fn shard_params(model: &Model, par: &Parallelism) -> f64 {
    let tp = f64::from(par.tp.max(1));
    let ep = f64::from(par.ep.max(1));
    let etp = f64::from(par.etp().max(1));
    let dp = f64::from(par.dp.max(1)) * f64::from(par.cp.max(1));
    let (dense, expert) = if par.zero == 0 {
        (1.0, 1.0)
    } else {
        (dp, (dp * tp / (etp * ep)).max(1.0))
    };
    stage_params(model, par)
        .iter()
        .map(|s| s.dense as f64 / tp / dense + s.expert as f64 / (etp * ep) / expert)
        .fold(0.0, f64::max)
        * par.schedule.parameter_copies()
}

/// Seconds of one MoE layer's all-to-alls on every stage's groups at once (dispatch and combine,
/// forward and backward), their traffic counted in every micro-batch; `None` without experts.
fn expert_layer(
    model: &Model,
    par: &Parallelism,
    cfg: &StepConfig,
    groups: &Groups,
    ledger: &mut Ledger,
) -> Result<Option<f64>, CollectiveError> {
    if model.moe_layers() == 0 || par.ep <= 1 {
        return Ok(None);
    }
    let (m, pp) = (par.microbatches() as f64, f64::from(par.pp));
    let tokens = par.micro_batch * par.seq / u64::from(par.cp.max(1));
    // Each token's hidden state goes to top_k experts; sequence parallelism splits tokens over TP.
    let routed = tokens * model.hidden * BYTES_PER_VALUE * model.top_k / u64::from(par.tp);
    // Runs in the step: every stage's groups at once, layers / pp on average.
    let moe = (model.moe_layers() + model.mtp_layers) as f64 / pp * m;
    let limited = dispatch::node_limited(model, groups, ledger.timer.gpus_per_server());
    // One all-to-all of `bytes` (the top-k copies' buffer), run `times` in the step.
    let mut all_to_all = |bytes: u64, times: f64| match &limited {
        None => ledger.count("expert-parallel", Op::AllToAll, &groups.ep, bytes, times),
        Some(l) => {
            // Once per destination node over the network (same in-server index), then the
            // copies over NVLink inside each server, pipelined as DeepEP's normal kernels run
            // them: the slower of the two.
            let network = (bytes as f64 / model.top_k.max(1) as f64 * l.nodes_per_token) as u64;
            let ib = ledger.count("expert-parallel", Op::AllToAll, &l.rails, network, times)?;
            let nvlink = ledger.count("expert-parallel", Op::AllToAll, &l.servers, bytes, times)?;
            Ok(ib.max(nvlink))
        }
    };
    if cfg.fp8_dispatch && cfg.precision == Precision::Fp8 {
        // BF16 values as FP8 with one FP32 scale per 128 values: 1 + 4/128 bytes a value.
        let fp8 = routed / BYTES_PER_VALUE * 33 / 32;
        let combine = all_to_all(routed, 2.0 * moe)?;
        let dispatch = all_to_all(fp8, 2.0 * moe)?;
        Ok(Some(2.0 * (combine + dispatch)))
    } else {
        let run = all_to_all(routed, 4.0 * moe)?;
        Ok(Some(4.0 * run))
    }
}

/// Context parallelism: ring attention (Liu, Zaharia and Abbeel, "Ring Attention with Blockwise
/// Transformers for Near-Infinite Context", 2023) as Megatron-Core runs it through Transformer
/// Engine's point-to-point context parallelism: every layer passes each rank's keys and values
/// around the cp ranks, cp - 1 hops forward, and keys, values and their gradients cp - 1 hops
/// backward (3 (cp - 1) blocks in all), each hop overlapped with the attention of the block in
/// hand. A block is this rank's tokens' K and V for its tensor-parallel share of the KV heads
/// (one head at least). Returns one layer's hops in all, seconds.
fn context_layer(
    model: &Model,
    par: &Parallelism,
    groups: &Groups,
    ledger: &mut Ledger,
) -> Result<Option<f64>, CollectiveError> {
    let cp = u64::from(par.cp.max(1));
    if cp <= 1 {
        return Ok(None);
    }
    let tp = u64::from(par.tp);
    let tokens = par.micro_batch * par.seq / cp;
    // Latent attention's K and V are up-projected for every head before attention runs.
    let kv_heads = if model.is_mla() {
        model.heads
    } else {
        model.kv_heads
    };
    let kv_heads = (kv_heads / tp).max(1);
    let head_dims = model.qk_head_dim() + model.value_head_dim();
    let block = tokens * kv_heads * head_dims * BYTES_PER_VALUE;
    let ring: Vec<Vec<u32>> = groups
        .cp
        .iter()
        .flat_map(|g| (0..g.len()).map(move |i| vec![g[i], g[(i + 1) % g.len()]]))
        .collect();
    let hops = 3.0 * (cp - 1) as f64;
    let runs = hops * model.layers as f64 / f64::from(par.pp) * par.microbatches() as f64;
    let hop = ledger.count("context-parallel", Op::SendRecv, &ring, block, runs)?;
    Ok(Some(hops * hop))
}

/// The stage whose micro-batch takes longest, with its communication: tensor parallelism's 2
/// all-reduces (or all-gather and reduce-scatter pairs with sequence parallelism) of the
/// activations per layer forward and 2 backward (Shoeybi et al., Megatron-LM, 2019, section 3),
/// exposed unless [`StepConfig::tp_overlap`] hides them under the layer's linear GEMMs (one
/// chunk of tp stays exposed: the first, before any GEMM can start); expert all-to-all, hidden
/// up to the stage's compute with [`StepConfig::ep_overlap`] or DualPipe; ring attention hidden
/// under attention.
fn slowest_stage(
    model: &Model,
    par: &Parallelism,
    cfg: &StepConfig,
    gpu: &Gpu,
    passes: &[Passes],
    groups: &Groups,
    ledger: &mut Ledger,
) -> Result<Slowest, CollectiveError> {
    let stages = par.stages(model.layers);
    let moe_stages = model.moe_layers_per_stage(&stages);
    let (m, pp) = (par.microbatches() as f64, f64::from(par.pp));
    let tokens = par.micro_batch * par.seq / u64::from(par.cp.max(1));
    let activation = tokens * model.hidden * BYTES_PER_VALUE;
    // Folded (etp < tp): an MoE layer's tp collectives are its attention's (2 of 4); its experts
    // gather over etp > 1 ranks (Megatron-Core's MoEAlltoAllTokenDispatcher, after the dispatch).
    let moe_all = (model.moe_layers() + model.mtp_layers * u64::from(model.is_moe())) as f64;
    let folded_moe = if par.folded() { moe_all } else { 0.0 };
    let etp_run = if par.folded() && par.etp() > 1 {
        let runs = 2.0 * folded_moe / pp * m;
        ledger.count(
            "expert-tensor-parallel",
            Op::AllReduce,
            &groups.etp,
            activation,
            runs,
        )?
    } else {
        0.0
    };
    let tp_run = if par.tp > 1 {
        let runs = (4.0 * (model.layers + model.mtp_layers) as f64 - 2.0 * folded_moe) / pp * m;
        ledger.count(
            "tensor-parallel",
            Op::AllReduce,
            &groups.tp,
            activation,
            runs,
        )?
    } else {
        0.0
    };
    let ep_layer = expert_layer(model, par, cfg, groups, ledger)?;
    let cp_layer = context_layer(model, par, groups, ledger)?;
    // Attention of one layer, which the ring's hops overlap.
    let sh = Shapes {
        tokens: tokens as f64,
        seq: par.seq as f64,
        tp: f64::from(par.tp),
        ep: 1.0,
        etp: f64::from(par.etp()),
        recompute: compute::Recompute {
            full: par.recompute,
            modules: par.recompute_modules,
        },
    };
    let attention = cp_layer.map_or(0.0, |_| compute::attention_seconds(model, &sh, gpu));
    let hide_ep = cfg.ep_overlap || par.schedule == Schedule::Dualpipe;
    let mut slow = Slowest::default();
    let mut worst = f64::NEG_INFINITY;
    // Each stage's layers (the multi-token prediction modules' on the last, with their own
    // tensor- and expert-parallel communication), MoE layers and compute.
    let last = stages.len().saturating_sub(1);
    let mut load: Vec<(u64, f64, f64, Passes)> = stages
        .iter()
        .zip(&moe_stages)
        .zip(passes)
        .enumerate()
        .map(|(i, ((&layers, &moe), p))| {
            let (layers, moe) = if i == last {
                let mtp = model.mtp_layers;
                (layers + mtp, moe + mtp * u64::from(model.is_moe()))
            } else {
                (layers, moe)
            };
            (layers, layers as f64, moe as f64, *p)
        })
        .collect();
    if par.schedule == Schedule::Dualpipe && load.len() > 1 {
        // DualPipe: rank i holds stage i and stage p - 1 - i and runs half the micro-batches
        // through each, fed from both ends (deepseek-ai/DualPipe@7cb1e5e
        // examples/example_dualpipe.py: `nn.Sequential(full_modules[rank],
        // full_modules[pp_size - 1 - rank])`, half the chunks from each end), so a rank's
        // micro-batch costs the mean of the two stages: the first and last stages' embedding,
        // output head and MTP module are shared with the middle.
        let mirrored = load.clone();
        for (i, l) in load.iter_mut().enumerate() {
            let o = mirrored[mirrored.len() - 1 - i];
            let mut p = Passes::default();
            p.add(l.3, 0.5);
            p.add(o.3, 0.5);
            *l = (l.0.max(o.0), (l.1 + o.1) / 2.0, (l.2 + o.2) / 2.0, p);
        }
    }
    for &(layers, n, moe, ref p) in &load {
        let tp_all = (4.0 * n - 2.0 * moe * f64::from(u8::from(par.folded()))) * tp_run
            + 2.0 * moe * etp_run;
        let tp = if cfg.tp_overlap && par.tp > 1 {
            (tp_all / f64::from(par.tp)).max(tp_all - p.linear)
        } else {
            tp_all
        };
        let ep_total = ep_layer.map_or(0.0, |a| a * moe);
        let mut p = *p;
        if par.schedule == Schedule::Dualpipe && ep_total > 0.0 && n > 0.0 {
            // DualPipe splits the SMs between communication and computation for each pair of
            // chunks it overlaps ([`schedule::DUALPIPE_COMM_SM_SHARE`]): the MoE layers' compute
            // runs on the rest of them.
            let r = 1.0 - schedule::DUALPIPE_COMM_SM_SHARE;
            let k = 1.0 + moe / n * (1.0 / r - 1.0);
            p.forward *= k;
            p.backward *= k;
            p.weight *= k;
            p.linear *= k;
        }
        let ep = if hide_ep {
            (ep_total - p.total()).max(0.0)
        } else {
            ep_total
        };
        let cp = cp_layer.map_or(0.0, |hops| n * (hops - attention).max(0.0));
        let total = p.total() + tp + ep + cp;
        if total > worst {
            worst = total;
            let largest = schedule::chunks(layers, par.vp)
                .into_iter()
                .max()
                .unwrap_or(0);
            slow = Slowest {
                compute: p,
                tp,
                ep,
                ep_total,
                cp,
                chunk_share: if layers == 0 { 1.0 } else { largest as f64 / n },
            };
        }
    }
    Ok(slow)
}

/// Activations forward and gradients backward across every stage boundary, once per model chunk
/// (interleaved): the exposed seconds a micro-batch, on average over the step.
///
/// Overlap as Megatron-LM runs it (NVIDIA/Megatron-LM@d98e8a6): `--no-overlap-p2p-communication`
/// is a `store_false` flag, so `overlap_p2p_comm` is on by default, and `validate_args`
/// (megatron/training/arguments.py) turns it off without virtual stages ("non-interleaved schedule
/// does not support overlapping p2p communication"). In `forward_backward_pipelining_with_interleaving`
/// (megatron/core/pipeline_parallel/schedules.py) the steady 1F1B phase starts each chunk's send
/// asynchronously and waits for it only before the next chunk of the other direction, so a forward
/// send hides under a backward chunk and a backward send under a forward chunk; what is longer than
/// the chunk stays exposed. The warm-up and cool-down sends block (`overlap_p2p_comm_warmup_flush`
/// defaults to false, megatron/core/model_parallel_config.py): the first stage, the one with the
/// most, runs `2 (p - 1) + (v - 1) p` warm-up chunks (`get_pp_rank_microbatches`, the group size
/// per virtual stage defaulting to p) and as many cool-down chunks. With `async_ends`
/// (`overlap_p2p_comm_warmup_flush` true; the Llama 3 paper, arXiv 2407.21783 section 3.3.2,
/// "asynchronous point-to-point communication in PP") a warm-up send hides under the next
/// forward chunk unless that chunk waits for it: the pipeline's fill (p - 1 hops) and each of
/// the v - 1 wraps from the last stage back to the first, where the first stage's group of p
/// micro-batches ends as the first of them comes round p sends later: (p - 1) + (v - 1) p
/// exposed a direction, the same as blocking once every chunk is warm-up (m = p).
/// DualPipe hides every send under the paired chunk as the interleaved steady phase does, what is
/// longer than the chunk exposed (DeepSeek-V3 technical report, section 3.2.1: "we can ensure that
/// both all-to-all and PP communication can be fully hidden during execution"; figure 4 schedules
/// the PP sends beside the chunk pair's compute). 1F1B without virtual stages and zero bubble keep
/// every send exposed.
fn pipeline_sends(
    model: &Model,
    par: &Parallelism,
    slow: &Slowest,
    groups: &Groups,
    async_ends: bool,
    ledger: &mut Ledger,
) -> Result<f64, CollectiveError> {
    if par.pp <= 1 {
        return Ok(0.0);
    }
    let tokens = par.micro_batch * par.seq / u64::from(par.cp.max(1));
    let bytes = tokens * model.hidden * BYTES_PER_VALUE / u64::from(par.tp);
    let (pairs, back) = groups.stage_boundaries();
    let vp = f64::from(par.vp.max(1));
    let m = par.microbatches() as f64;
    let runs = m * vp;
    let fwd = ledger.count("pipeline-forward", Op::SendRecv, &pairs, bytes, runs)?;
    ledger.count("pipeline-backward", Op::SendRecv, &back, bytes, runs)?;
    if par.schedule == Schedule::Dualpipe {
        let (f, b) = (slow.compute.forward, slow.compute.backward);
        return Ok(vp * ((fwd - b).max(0.0) + (fwd - f).max(0.0)));
    }
    if par.vp <= 1 || par.schedule != Schedule::OneFOneB {
        return Ok(2.0 * vp * fwd);
    }
    let p = f64::from(par.pp);
    let fill = if async_ends { p - 1.0 } else { 2.0 * (p - 1.0) };
    let blocking = (fill + (vp - 1.0) * p).min(runs);
    let (f_chunk, b_chunk) = (
        slow.compute.forward * slow.chunk_share,
        slow.compute.backward * slow.chunk_share,
    );
    let steady = (runs - blocking) * ((fwd - b_chunk).max(0.0) + (fwd - f_chunk).max(0.0));
    Ok((2.0 * blocking * fwd + steady) / m)
}

/// Data parallelism: this rank's share of the gradients, reduced (reduce-scatter or all-reduce)
/// at `grad_bytes` a value (FP32 unless --grad-reduce-in-bf16), the updated parameters gathered
/// in BF16 (FP8 with [`Parallelism::fp8_params`]). With expert parallelism the routed
/// experts' gradients are reduced among the ranks that hold the same experts (Megatron-Core's
/// expert data parallelism); everything else over DP. Overlap as Megatron-Core's
/// `--overlap-grad-reduce` and `--overlap-param-gather` run it: gradients go out in buckets while
/// the last micro-batch's backward runs, the parameters are gathered under the first forward, so
/// only what does not fit under it, or at least the last bucket, is exposed. Returns (exposed,
/// total) seconds, the tied embeddings' all-reduce included.
fn data_parallel(
    model: &Model,
    par: &Parallelism,
    cfg: &StepConfig,
    mb: &Passes,
    groups: &Groups,
    ledger: &mut Ledger,
) -> Result<(f64, f64), CollectiveError> {
    let (mut exposed, mut total) = (0.0, 0.0);
    let tp = u64::from(par.tp);
    if u64::from(par.dp) * u64::from(par.cp.max(1)) > 1 {
        // The stage with the most gradient bytes per rank sets them: every stage reduces at once.
        let (dense_shard, expert_shard) = stage_params(model, par)
            .iter()
            .map(|s| {
                (
                    s.dense / tp,
                    s.expert / u64::from(par.etp() * par.ep.max(1)),
                )
            })
            .max_by_key(|&(d, e)| d + e)
            .unwrap_or((0, 0));
        let parts: Vec<(&'static str, &[Vec<u32>], u64)> = [
            ("data-parallel", &groups.dp[..], dense_shard),
            ("expert-data-parallel", &groups.edp[..], expert_shard),
        ]
        .into_iter()
        .filter(|&(_, _, params)| params > 0)
        .collect();
        let gather = if par.fp8_params && cfg.precision == Precision::Fp8 {
            1
        } else {
            BYTES_PER_VALUE
        };
        let hide = |t: f64, under: f64| {
            if cfg.dp_overlap {
                (t / f64::from(cfg.buckets.max(1))).max(t - under)
            } else {
                t
            }
        };
        let (fwd, bwd) = (mb.forward, mb.backward);
        let mut run = |op: Op, times: f64| -> Result<f64, CollectiveError> {
            let per_value = if op == Op::AllGather {
                gather
            } else {
                par.grad_bytes()
            };
            let mut t = 0.0;
            for &(role, g, params) in &parts {
                t += ledger.count(role, op, g, params * per_value, times)?;
            }
            Ok(t)
        };
        match par.zero {
            0 => {
                let t = run(Op::AllReduce, 1.0)?;
                total += t;
                exposed += hide(t, bwd);
            }
            1 => {
                let rs = run(Op::ReduceScatter, 1.0)?;
                let ag = run(Op::AllGather, 1.0)?;
                total += rs + ag;
                exposed += hide(rs, bwd) + hide(ag, fwd);
            }
            _ => {
                // Sharded gradients (ZeRO-2 and 3) are reduce-scattered after every micro-batch's
                // backward pass, each under that pass (Rajbhandari et al., SC'20, section 5.2;
                // DeepSpeed reduces at every micro-step while accumulating, as FSDP does).
                let n = par.microbatches() as f64;
                let rs = run(Op::ReduceScatter, n)?;
                total += n * rs;
                exposed += n * hide(rs, bwd);
                if par.zero == 2 {
                    let ag = run(Op::AllGather, 1.0)?;
                    total += ag;
                    exposed += hide(ag, fwd);
                } else {
                    // ZeRO-3: gathered before every forward and backward pass, not after the step.
                    let per_pass = run(Op::AllGather, 2.0 * n)?;
                    total += 2.0 * n * per_pass;
                    exposed += n * (hide(per_pass, fwd) + hide(per_pass, bwd));
                }
            }
        }
    }
    // Tied input and output embeddings on two stages (Megatron-LM keeps
    // `shared_embedding_or_output_weight` on the first and the last stage): their gradients are
    // summed by an all-reduce between the two after the data-parallel reduction (Megatron-Core
    // `finalize_model_grads`, `_allreduce_embedding_grads`): exposed.
    if model.tied_embeddings && par.pp > 1 {
        let bytes = model.vocab * model.hidden / tp * par.grad_bytes();
        let last = par.pp - 1;
        let pairs: Vec<Vec<u32>> = (0..par.dp)
            .flat_map(|d| {
                (0..par.cp.max(1)).flat_map(move |c| {
                    (0..par.tp).map(move |t| vec![par.rank(t, c, d, 0), par.rank(t, c, d, last)])
                })
            })
            .collect();
        let t = ledger.count("embedding-gradient", Op::AllReduce, &pairs, bytes, 1.0)?;
        total += t;
        exposed += t;
    }
    Ok((exposed, total))
}

#[cfg(test)]
#[path = "step_tests.rs"]
pub(crate) mod tests;
