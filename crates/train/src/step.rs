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

use crate::model::Model;
use crate::parallel::{Groups, Parallelism};
pub use crate::memory::{
    in_flight, memory_remedies, model_state_bytes, stage_activation_bytes, stage_params, Memory,
    StageParams,
};
use railyard_sim::collective::CollectiveError;
use crate::compute::{self, Gpu, Passes, Rates, Shapes};
use crate::schedule::{self, Schedule, Slot};
use railyard_catalog::KernelTable;
use serde::Serialize;
use std::collections::BTreeMap;

/// Bytes per value in training: BF16 activations, activation gradients and parameter copies (the
/// data-parallel weight gradients are [`Parallelism::grad_bytes`]).
pub const BYTES_PER_VALUE: u64 = 2;

/// A collective operation a step performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    SendRecv,
}

/// Times collectives on the fabric. `groups` run at the same time (every tensor-parallel group of the
/// job, say), so they contend as they would; `bytes` is the buffer size as nccl-tests defines it for the
/// operation. Returns the time until the slowest group finishes, seconds; an error when the
/// communication cannot run on the fabric (no route, too large to simulate).
pub trait CommTimer {
    fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError>;

    /// Bytes one run of the operation puts on each network tier (`server-leaf`, `leaf-spine`, ...),
    /// counting every link a transfer crosses; empty when the timer knows no topology.
    fn tier_bytes(
        &self,
        _op: Op,
        _groups: &[Vec<u32>],
        _bytes: u64,
    ) -> Result<BTreeMap<String, f64>, CollectiveError> {
        Ok(BTreeMap::new())
    }
}

/// The number format of a step's matrix multiplications.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Every FLOP at the dense BF16 peak.
    #[default]
    Bf16,
    /// The linear layers' GEMMs at the dense FP8 peak, the rest at BF16 (module docs).
    Fp8,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }

    /// Parses `bf16` or `fp8`; the error lists the valid names.
    pub fn parse(s: &str) -> Result<Precision, String> {
        match s {
            "bf16" => Ok(Precision::Bf16),
            "fp8" => Ok(Precision::Fp8),
            _ => Err(format!("unknown precision `{s}`; valid: bf16, fp8")),
        }
    }
}

/// A GPU's dense peaks as the step uses them, TFLOP/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peaks {
    pub bf16_tflops: f64,
    /// `None` for a GPU without FP8 tensor cores.
    pub fp8_tflops: Option<f64>,
}

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

impl Peaks {
    /// A GPU of `bf16_tflops` without FP8.
    pub fn bf16(bf16_tflops: f64) -> Peaks {
        Peaks {
            bf16_tflops,
            fp8_tflops: None,
        }
    }

    /// The peak MFU is measured against: the BF16 peak, or the FP8 peak in FP8 (`None` when the
    /// GPU has none).
    pub fn of(&self, precision: Precision) -> Option<f64> {
        match precision {
            Precision::Bf16 => Some(self.bf16_tflops),
            Precision::Fp8 => self.fp8_tflops,
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
    /// With FP8, the parameters kept and all-gathered in FP8, one byte a value (Megatron-Core's
    /// `--fp8-param-gather`, torchtitan's FP8 FSDP all-gather).
    pub fp8_param_gather: bool,
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
            fp8_param_gather: false,
        }
    }
}

/// Where a step's time goes, seconds (exposed communication only: what compute does not hide).
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<Operation>,
}

/// One communication operation of a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Operation {
    /// What it is for: `tensor-parallel`, `expert-parallel`, `context-parallel`,
    /// `pipeline-forward`, `pipeline-backward`, `data-parallel`, `expert-data-parallel`,
    /// `embedding-gradient` (tied embeddings on the first and the last stage, summed).
    pub role: &'static str,
    pub collective: Op,
    /// Groups that run it at once, and the ranks of each.
    pub groups: usize,
    pub ranks_per_group: usize,
    /// The buffer of one call, bytes, as nccl-tests sizes it for the collective.
    pub bytes: u64,
    /// Calls in one step (an average stage's, where stages differ).
    pub calls_per_step: f64,
    /// One call, all groups at once, seconds.
    pub seconds_per_call: f64,
}


/// Network bytes per tier and the operations of a step, as the step counts them.
struct Ledger<'t> {
    timer: &'t dyn CommTimer,
    traffic: BTreeMap<String, f64>,
    operations: Vec<Operation>,
}

impl Ledger<'_> {
    /// Counts `times` runs of `op` on `groups` in the step; returns one run's seconds.
    fn count(
        &mut self,
        role: &'static str,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
        times: f64,
    ) -> Result<f64, CollectiveError> {
        for (tier, b) in self.timer.tier_bytes(op, groups, bytes)? {
            *self.traffic.entry(tier).or_default() += b * times;
        }
        let seconds = self.timer.seconds(op, groups, bytes)?;
        self.operations.push(Operation {
            role,
            collective: op,
            groups: groups.len(),
            ranks_per_group: groups.first().map_or(0, Vec::len),
            bytes,
            calls_per_step: times,
            seconds_per_call: seconds,
        });
        Ok(seconds)
    }
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
        recompute: par.recompute,
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
    };
    let groups: Groups = par.groups();
    let m = par.microbatches();
    let pp = u64::from(par.pp);
    let mut ledger = Ledger {
        timer,
        traffic: BTreeMap::new(),
        operations: Vec::new(),
    };
    let passes = stage_passes(model, par, &gpu);
    let slow = slowest_stage(model, par, cfg, &gpu, &passes, &groups, &mut ledger)?;
    let pp_mb = pipeline_sends(model, par, &groups, &mut ledger)?;
    let exposed = slow.tp + slow.ep + slow.cp + pp_mb;
    let slot = Slot {
        forward: slow.compute.forward + exposed / 3.0,
        backward: slow.compute.backward + exposed * 2.0 / 3.0,
        weight: slow.compute.weight,
        chunk_share: slow.chunk_share,
    };
    let pipeline = schedule::pipeline(par.schedule, pp, m, &slot);
    let (dp_exposed, dp_total) = data_parallel(model, par, cfg, &slow.compute, &groups, &mut ledger)?;
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
    let dp = f64::from(par.dp.max(1)) * f64::from(par.cp.max(1));
    let (dense, expert) = if par.zero == 0 {
        (1.0, 1.0)
    } else {
        (dp, (dp / ep).max(1.0))
    };
    stage_params(model, par)
        .iter()
        .map(|s| s.dense as f64 / tp / dense + s.expert as f64 / (tp * ep) / expert)
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
    let moe = model.moe_layers() as f64 / pp * m;
    if cfg.fp8_dispatch && cfg.precision == Precision::Fp8 {
        // BF16 values as FP8 with one FP32 scale per 128 values: 1 + 4/128 bytes a value.
        let fp8 = routed / BYTES_PER_VALUE * 33 / 32;
        let combine = ledger.count("expert-parallel", Op::AllToAll, &groups.ep, routed, 2.0 * moe)?;
        let dispatch = ledger.count("expert-parallel", Op::AllToAll, &groups.ep, fp8, 2.0 * moe)?;
        Ok(Some(2.0 * (combine + dispatch)))
    } else {
        let run = ledger.count("expert-parallel", Op::AllToAll, &groups.ep, routed, 4.0 * moe)?;
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
    let head_dim = model.hidden / model.heads.max(1);
    let kv_heads = (model.kv_heads / tp).max(1);
    let block = 2 * tokens * kv_heads * head_dim * BYTES_PER_VALUE;
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
    let tp_run = if par.tp > 1 {
        let runs = 4.0 * model.layers as f64 / pp * m;
        ledger.count("tensor-parallel", Op::AllReduce, &groups.tp, activation, runs)?
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
        recompute: par.recompute,
    };
    let attention = cp_layer.map_or(0.0, |_| compute::attention_seconds(model, &sh, gpu));
    let hide_ep = cfg.ep_overlap || par.schedule == Schedule::Dualpipe;
    let mut slow = Slowest::default();
    let mut worst = f64::NEG_INFINITY;
    for ((&layers, &moe), p) in stages.iter().zip(&moe_stages).zip(passes) {
        let n = layers as f64;
        let tp_all = 4.0 * n * tp_run;
        let tp = if cfg.tp_overlap && par.tp > 1 {
            (tp_all / f64::from(par.tp)).max(tp_all - p.linear)
        } else {
            tp_all
        };
        let ep_total = ep_layer.map_or(0.0, |a| a * moe as f64);
        let ep = if hide_ep {
            (ep_total - p.total()).max(0.0)
        } else {
            ep_total
        };
        let cp = cp_layer.map_or(0.0, |hops| n * (hops - attention).max(0.0));
        let total = p.total() + tp + ep + cp;
        if total > worst {
            worst = total;
            let largest = schedule::chunks(layers, par.vp).into_iter().max().unwrap_or(0);
            slow = Slowest {
                compute: *p,
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
/// (interleaved), a micro-batch's seconds (both directions, not overlapped).
fn pipeline_sends(
    model: &Model,
    par: &Parallelism,
    groups: &Groups,
    ledger: &mut Ledger,
) -> Result<f64, CollectiveError> {
    if par.pp <= 1 {
        return Ok(0.0);
    }
    let tokens = par.micro_batch * par.seq / u64::from(par.cp.max(1));
    let bytes = tokens * model.hidden * BYTES_PER_VALUE / u64::from(par.tp);
    let (pairs, back) = groups.stage_boundaries();
    let vp = f64::from(par.vp.max(1));
    let runs = par.microbatches() as f64 * vp;
    let fwd = ledger.count("pipeline-forward", Op::SendRecv, &pairs, bytes, runs)?;
    ledger.count("pipeline-backward", Op::SendRecv, &back, bytes, runs)?;
    Ok(2.0 * vp * fwd)
}

/// Data parallelism: this rank's share of the gradients, reduced (reduce-scatter or all-reduce)
/// at `grad_bytes` a value (FP32 unless --grad-reduce-in-bf16), the updated parameters gathered
/// in BF16 (FP8 with [`StepConfig::fp8_param_gather`]). With expert parallelism the routed
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
            .map(|s| (s.dense / tp, s.expert / (tp * u64::from(par.ep.max(1)))))
            .max_by_key(|&(d, e)| d + e)
            .unwrap_or((0, 0));
        let parts: Vec<(&'static str, &[Vec<u32>], u64)> = [
            ("data-parallel", &groups.dp[..], dense_shard),
            ("expert-data-parallel", &groups.edp[..], expert_shard),
        ]
        .into_iter()
        .filter(|&(_, _, params)| params > 0)
        .collect();
        let gather = if cfg.fp8_param_gather && cfg.precision == Precision::Fp8 {
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
            let per_value = if op == Op::AllGather { gather } else { par.grad_bytes() };
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
pub(crate) mod tests {
    use super::*;

    /// A ring on every group at a fixed bus bandwidth: time = busbw factor x bytes / busbw (nccl-tests).
    pub(crate) struct Ring {
        pub busbw: f64,
    }

    impl CommTimer for Ring {
        fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError> {
            let n = groups.first().map_or(1, Vec::len) as f64;
            let factor = match op {
                Op::AllReduce => 2.0 * (n - 1.0) / n,
                Op::ReduceScatter | Op::AllGather | Op::AllToAll => (n - 1.0) / n,
                Op::SendRecv => 1.0,
            };
            Ok(factor * bytes as f64 / self.busbw)
        }
    }

    /// Pure data parallelism over `n` GPUs, with BF16 gradients: the accounting of the ZeRO paper
    /// that most tests here check against (FP32, the default, in `gradients_are_fp32_unless_asked`).
    fn pure_dp(n: u32, zero: u32) -> Parallelism {
        Parallelism {
            tp: 1,
            pp: 1,
            dp: n,
            ep: 1,
            cp: 1,
            seq: 2048,
            micro_batch: 1,
            global_batch: u64::from(n),
            zero,
            recompute: false,
            grad_bf16: true,
            stage_layers: Vec::new(),
            vp: 1,
            schedule: Default::default(),
        }
    }




    /// Megatron-LM's default with BF16 parameters: FP32 gradients, 18 bytes a parameter without
    /// ZeRO and 6 + 12/d with the distributed optimizer (`theoretical_memory_usage.py`), reduced
    /// at 4 bytes a value and gathered at 2; `--grad-reduce-in-bf16` gives the ZeRO paper's 16.
    #[test]
    fn gradients_are_fp32_unless_asked() {
        let model = Model::preset("llama3-8b").unwrap();
        let psi = model.params() as f64;
        let fp32 = |zero| Parallelism {
            grad_bf16: false,
            ..pure_dp(64, zero)
        };
        assert_eq!(fp32(0).grad_bytes(), 4);
        assert_eq!(model_state_bytes(&model, &fp32(0)), 18.0 * psi);
        let z1 = model_state_bytes(&model, &fp32(1));
        assert!((z1 - (6.0 + 12.0 / 64.0) * psi).abs() < 1e-6 * z1);
        assert_eq!(model_state_bytes(&model, &pure_dp(64, 0)), 16.0 * psi);
        let cfg = StepConfig::default();
        let timer = Ring { busbw: 50e9 };
        let ops = |par: &Parallelism| {
            let b = step(&model, par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
            b.operations
                .iter()
                .filter(|o| o.role == "data-parallel")
                .map(|o| (o.collective, o.bytes))
                .collect::<Vec<_>>()
        };
        let (f, h) = (ops(&fp32(1)), ops(&pure_dp(64, 1)));
        let params = model.params();
        assert_eq!(
            f,
            [(Op::ReduceScatter, 4 * params), (Op::AllGather, 2 * params)]
        );
        assert_eq!(
            h,
            [(Op::ReduceScatter, 2 * params), (Op::AllGather, 2 * params)]
        );
    }


    /// Pure data parallelism without overlap spends 2(n-1)/n x gradient bytes / busbw communicating,
    /// whether the gradients are all-reduced (ZeRO-0) or reduce-scattered and all-gathered (ZeRO-1).
    #[test]
    fn pure_data_parallel_without_overlap_is_the_all_reduce_formula() {
        let model = Model::preset("llama3-8b").unwrap();
        let cfg = StepConfig {
            dp_overlap: false,
            ..StepConfig::default()
        };
        let busbw = 100e9;
        for zero in [0, 1] {
            let n = 16;
            let b = step(
                &model,
                &pure_dp(n, zero),
                Peaks::bf16(989.0),
                &cfg,
                &Ring { busbw },
            )
            .unwrap();
            let grads = (model.params() * BYTES_PER_VALUE) as f64;
            let expect = 2.0 * f64::from(n - 1) / f64::from(n) * grads / busbw;
            assert!(
                (b.data_parallel_exposed_s - expect).abs() / expect < 1e-12,
                "zero {zero}"
            );
            assert!((b.step_time_s - b.compute_s - expect).abs() < 1e-12);
        }
    }



    /// Sharded gradients are reduce-scattered after every micro-batch: with m micro-batches per
    /// step, ZeRO-2 runs m reduce-scatters and one all-gather of the updated weights, ZeRO-3 m
    /// reduce-scatters and 2m all-gathers (one per forward and backward pass), ZeRO-1 one of
    /// each (its gradients are whole until the step). Each moves (n-1)/n of the gradient bytes.
    #[test]
    fn sharded_gradients_are_reduced_every_micro_batch() {
        let model = Model::preset("llama3-8b").unwrap();
        let cfg = StepConfig {
            dp_overlap: false,
            ..StepConfig::default()
        };
        let busbw = 100e9;
        let n = 16;
        let one =
            f64::from(n - 1) / f64::from(n) * (model.params() * BYTES_PER_VALUE) as f64 / busbw;
        for (zero, ops) in [(1, 2.0), (2, 4.0 + 1.0), (3, 4.0 + 8.0)] {
            let mut par = pure_dp(n, zero);
            par.global_batch = 4 * u64::from(n);
            let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &Ring { busbw }).unwrap();
            assert_eq!(b.microbatches, 4);
            let expect = ops * one;
            assert!(
                (b.data_parallel_total_s - expect).abs() / expect < 1e-12,
                "zero {zero}: {} vs {expect}",
                b.data_parallel_total_s
            );
        }
    }

    /// With expert parallelism, the routed experts' gradients (1/ep of them per rank) are all-reduced
    /// among the dp/ep ranks that hold the same experts; the rest over all dp ranks.
    #[test]
    fn expert_gradients_reduce_over_expert_data_parallel_groups() {
        let model = Model::preset("mixtral-8x7b").unwrap();
        let cfg = StepConfig {
            dp_overlap: false,
            ..StepConfig::default()
        };
        let busbw = 100e9;
        let mut par = pure_dp(16, 0);
        par.ep = 8;
        let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &Ring { busbw }).unwrap();
        let expert = model.routed_expert_params() as f64 * BYTES_PER_VALUE as f64;
        let dense = model.params() as f64 * BYTES_PER_VALUE as f64 - expert;
        let ring = |n: f64, bytes: f64| 2.0 * (n - 1.0) / n * bytes / busbw;
        let expect = ring(16.0, dense) + ring(2.0, expert / 8.0);
        assert!(
            (b.data_parallel_total_s - expect).abs() / expect < 1e-12,
            "{} vs {expect}",
            b.data_parallel_total_s
        );
        // Far less than reducing every parameter over all 16 ranks.
        assert!(b.data_parallel_total_s < 0.4 * ring(16.0, dense + expert));
    }

    #[test]
    fn overlap_never_makes_a_step_slower_and_bubbles_follow_1f1b() {
        let model = Model::preset("llama3-70b").unwrap();
        let par = Parallelism {
            tp: 8,
            pp: 4,
            dp: 4,
            ep: 1,
            cp: 1,
            seq: 8192,
            micro_batch: 1,
            global_batch: 64,
            zero: 1,
            recompute: false,
            grad_bf16: true,
            stage_layers: Vec::new(),
            vp: 1,
            schedule: Default::default(),
        };
        let timer = Ring { busbw: 40e9 };
        let with = step(
            &model,
            &par,
            Peaks::bf16(989.0),
            &StepConfig::default(),
            &timer,
        )
        .unwrap();
        let without = step(
            &model,
            &par,
            Peaks::bf16(989.0),
            &StepConfig {
                dp_overlap: false,
                ..StepConfig::default()
            },
            &timer,
        )
        .unwrap();
        assert!(with.step_time_s <= without.step_time_s);
        let m = 16.0;
        let slot = with.pipeline_bubble_s / 3.0;
        assert!((with.step_time_s - with.data_parallel_exposed_s - (m + 3.0) * slot).abs() < 1e-9);
        assert!(with.mfu > 0.0 && with.mfu < 0.5);
    }

    fn llama405b_pp16(stage_layers: Vec<u64>) -> Parallelism {
        Parallelism {
            tp: 8,
            pp: 16,
            dp: 1,
            ep: 1,
            cp: 1,
            seq: 8192,
            micro_batch: 1,
            global_batch: 32,
            zero: 0,
            recompute: false,
            grad_bf16: true,
            stage_layers,
            vp: 1,
            schedule: Default::default(),
        }
    }

    /// Llama 3 405B's published split (7, 8 x 14, 7 layers): a slot is the slowest stage's, 8
    /// layers of compute (8 x 16 / 126 of an even stage's) and 4 x 8 tensor-parallel all-reduces
    /// of the activations, plus the pipeline sends; 1F1B runs (m + pp - 1) slots.
    #[test]
    fn uneven_stages_run_at_the_slowest_stage() {
        let model = Model::preset("llama3-405b").unwrap();
        let mut stages = vec![8u64; 16];
        stages[0] = 7;
        stages[15] = 7;
        let par = llama405b_pp16(stages);
        let busbw = 100e9;
        let cfg = StepConfig::default();
        let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &Ring { busbw }).unwrap();
        let tokens = 8192.0;
        let even = model.train_flops_per_token(8192, false) * tokens
            / (8.0 * 16.0)
            / (989e12 * cfg.compute_efficiency);
        let compute = even * 8.0 * 16.0 / 126.0;
        let activation = tokens * model.hidden as f64 * 2.0;
        let tp = 4.0 * 8.0 * (2.0 * 7.0 / 8.0 * activation / busbw);
        let send = 2.0 * activation / 8.0 / busbw;
        let slot = compute + tp + send;
        let m = 32.0;
        let close = |a: f64, b: f64| (a - b).abs() / b < 1e-12;
        assert!(
            close(b.compute_s, m * compute),
            "{} vs {}",
            b.compute_s,
            m * compute
        );
        assert!(close(b.tensor_parallel_s, m * tp));
        assert!(close(b.pipeline_bubble_s, 15.0 * slot));
        assert!(close(b.step_time_s, (m + 15.0) * slot));
        // The model state of the fullest stage: a middle one's 8 layers (the ends' 7 layers and
        // the 2.1 B embedding or output layer come to less), over the 8 tensor-parallel ranks.
        let layer = (model.params() - 2 * model.vocab * model.hidden) as f64 / 126.0;
        assert!(close(b.model_state_bytes_per_gpu, 16.0 * 8.0 * layer / 8.0));
    }

    /// An even split given as a list is the even split: the same step, bit for bit.
    #[test]
    fn an_even_list_is_the_even_split() {
        let model = Model::preset("llama3-70b").unwrap();
        let mut par = llama405b_pp16(Vec::new());
        par.pp = 4;
        let timer = Ring { busbw: 50e9 };
        let cfg = StepConfig::default();
        let even = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        par.stage_layers = vec![20; 4];
        let listed = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        assert_eq!(even, listed);
    }

    /// FP8 runs the linear layers' GEMMs at the FP8 peak and the rest at BF16, at one efficiency;
    /// MFU is against the FP8 peak. A GPU without an FP8 peak is refused.
    #[test]
    fn fp8_runs_the_linear_layers_at_the_fp8_peak() {
        let model = Model::preset("llama3-70b").unwrap();
        let mut par = pure_dp(8, 1);
        par.seq = 8192;
        let timer = Ring { busbw: 1e15 };
        let cfg = StepConfig {
            precision: Precision::Fp8,
            ..StepConfig::default()
        };
        let peaks = Peaks {
            bf16_tflops: 989.0,
            fp8_tflops: Some(1979.0),
        };
        let b = step(&model, &par, peaks, &cfg, &timer).unwrap();
        let (linear, rest) = model.train_flops_split(8192, false);
        assert!(
            ((linear + rest) - model.train_flops_per_token(8192, false)).abs() / (linear + rest)
                < 1e-12
        );
        let eff = cfg.compute_efficiency;
        let per_mb = 8192.0 * (linear / (1979e12 * eff) + rest / (989e12 * eff));
        let m = b.microbatches as f64;
        assert!((b.compute_s - m * per_mb).abs() / (m * per_mb) < 1e-12);
        let bf16 = step(&model, &par, peaks, &StepConfig::default(), &timer).unwrap();
        // Faster than BF16, slower than twice as fast (attention and the output layer stay BF16).
        assert!(b.compute_s < bf16.compute_s && 2.0 * b.compute_s > bf16.compute_s);
        let mfu = model.train_flops_per_token(8192, false) * b.tokens_per_s / (8.0 * 1979e12);
        assert!((b.mfu - mfu).abs() < 1e-12);
        assert_eq!(
            step(&model, &par, Peaks::bf16(312.0), &cfg, &timer).unwrap_err(),
            StepError::NoFp8
        );
    }

    fn mixtral_ep8() -> Parallelism {
        let mut par = pure_dp(16, 1);
        par.ep = 8;
        par.seq = 4096;
        par
    }

    /// FP8 dispatch: of a MoE layer's four all-to-alls, the two dispatches carry 1 + 4/128 bytes a
    /// value instead of 2; on a timer linear in bytes the expert time is (2 + 2 x 33/64) / 4 of
    /// BF16's.
    #[test]
    fn fp8_dispatch_shrinks_the_two_dispatches() {
        let model = Model::preset("mixtral-8x7b").unwrap();
        let par = mixtral_ep8();
        let timer = Ring { busbw: 50e9 };
        let peaks = Peaks {
            bf16_tflops: 989.0,
            fp8_tflops: Some(1979.0),
        };
        let fp8 = StepConfig {
            precision: Precision::Fp8,
            ..StepConfig::default()
        };
        let plain = step(&model, &par, peaks, &fp8, &timer).unwrap();
        let dispatch = step(
            &model,
            &par,
            peaks,
            &StepConfig {
                fp8_dispatch: true,
                ..fp8
            },
            &timer,
        )
        .unwrap();
        let ratio = dispatch.expert_parallel_s / plain.expert_parallel_s;
        assert!(
            (ratio - (2.0 + 2.0 * 33.0 / 64.0) / 4.0).abs() < 1e-12,
            "{ratio}"
        );
        // Without FP8 compute there is no FP8 dispatch.
        let bf16 = StepConfig {
            fp8_dispatch: true,
            ..StepConfig::default()
        };
        let b = step(&model, &par, peaks, &bf16, &timer).unwrap();
        let base = step(&model, &par, peaks, &StepConfig::default(), &timer).unwrap();
        assert_eq!(b.expert_parallel_s, base.expert_parallel_s);
    }

    /// Expert overlap hides a micro-batch's all-to-all up to its compute: exposed = max(0, a2a -
    /// compute), all of it when the network is fast, the difference when it is slow.
    #[test]
    fn ep_overlap_hides_all_to_all_up_to_compute() {
        let model = Model::preset("mixtral-8x7b").unwrap();
        let par = mixtral_ep8();
        let on = StepConfig {
            ep_overlap: true,
            ..StepConfig::default()
        };
        for busbw in [1e9, 1e12] {
            let timer = Ring { busbw };
            let off = step(
                &model,
                &par,
                Peaks::bf16(989.0),
                &StepConfig::default(),
                &timer,
            )
            .unwrap();
            let b = step(&model, &par, Peaks::bf16(989.0), &on, &timer).unwrap();
            assert_eq!(off.expert_parallel_total_s, None);
            assert_eq!(b.expert_parallel_total_s, Some(off.expert_parallel_s));
            let expect = (off.expert_parallel_s - off.compute_s).max(0.0);
            assert!((b.expert_parallel_s - expect).abs() <= 1e-12 * off.expert_parallel_s);
            assert!(b.step_time_s <= off.step_time_s);
            assert_eq!(b.compute_s, off.compute_s);
        }
    }

    /// GPT-3's tied embeddings on two stages: one all-reduce a step of the embedding's gradient
    /// share (vocab x hidden / tp, BF16) between the first and the last stage, a pair for every
    /// tensor- and data-parallel rank, exposed; none on one stage or with untied embeddings.
    #[test]
    fn tied_embeddings_on_two_stages_sum_their_gradients() {
        let model = Model::preset("gpt3-175b").unwrap();
        assert!(model.tied_embeddings);
        let mut par = llama405b_pp16(Vec::new());
        (par.tp, par.pp, par.dp, par.seq, par.global_batch) = (4, 8, 2, 2048, 64);
        let timer = Ring { busbw: 50e9 };
        let cfg = StepConfig::default();
        let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        let tied: Vec<&Operation> = b
            .operations
            .iter()
            .filter(|o| o.role == "embedding-gradient")
            .collect();
        assert_eq!(tied.len(), 1);
        let bytes = model.vocab * model.hidden / 4 * 2;
        let o = tied[0];
        assert_eq!(
            (
                o.collective,
                o.groups,
                o.ranks_per_group,
                o.bytes,
                o.calls_per_step
            ),
            (Op::AllReduce, 8, 2, bytes, 1.0)
        );
        // A ring all-reduce on two ranks moves the buffer once: 2 (n - 1) / n = 1.
        let want = bytes as f64 / 50e9;
        assert!((o.seconds_per_call - want).abs() < 1e-12 * want);
        // Exposed: the step is longer by it than the same model untied.
        let untied = Model {
            tied_embeddings: false,
            ..model.clone()
        };
        let u = step(&untied, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        assert!(u.operations.iter().all(|o| o.role != "embedding-gradient"));
        // Untied, the last stage holds the output layer instead of the copy: the same bytes.
        let more = b.data_parallel_exposed_s - u.data_parallel_exposed_s;
        assert!((more - want).abs() < 1e-9 * want, "{more} vs {want}");
        assert!((b.step_time_s - u.step_time_s - want).abs() < 1e-9 * b.step_time_s);
        par.pp = 1;
        par.dp = 16;
        let one = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        assert!(one
            .operations
            .iter()
            .all(|o| o.role != "embedding-gradient"));
    }

    /// Interleaved 1F1B (Narayanan et al., SC'21, section 2.2.2): with v model chunks per stage the
    /// bubble is (pp - 1) / v slots and each micro-batch crosses every stage boundary v times, so a
    /// slot's pipeline sends cost v times as much.
    #[test]
    fn interleaving_divides_the_bubble_and_multiplies_the_sends() {
        let model = Model::preset("gpt3-175b").unwrap();
        let mut par = llama405b_pp16(Vec::new());
        par.tp = 4;
        par.pp = 8;
        par.seq = 2048;
        par.global_batch = 64;
        let timer = Ring { busbw: 50e9 };
        let cfg = StepConfig::default();
        let plain = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        par.vp = 12;
        let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        let m = 64.0;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-30);
        assert!(close(b.compute_s, plain.compute_s));
        assert!(close(
            b.pipeline_parallel_s,
            12.0 * plain.pipeline_parallel_s
        ));
        let slot = (b.compute_s + b.tensor_parallel_s + b.pipeline_parallel_s) / m;
        assert!(close(b.pipeline_bubble_s, 7.0 * slot / 12.0));
        assert!(close(
            b.step_time_s,
            m * slot + 7.0 * slot / 12.0 + b.data_parallel_exposed_s
        ));
        assert!(b.step_time_s < plain.step_time_s);
    }

    /// Context parallelism splits every micro-batch's tokens: on the same 16 GPUs, TP 8 x CP 2
    /// computes half a micro-batch's tokens per rank where TP 8 x DP 2 computes a whole one;
    /// the ring passes 3 (cp - 1) blocks of K and V per layer and only what attention does not
    /// cover is exposed; ZeRO shards over data and context ranks together.
    #[test]
    fn context_parallelism_splits_the_sequence_and_rings_keys_and_values() {
        let model = Model::preset("llama3-70b").unwrap();
        let cfg = StepConfig {
            dp_overlap: false,
            ..StepConfig::default()
        };
        let base = Parallelism {
            tp: 8,
            pp: 1,
            dp: 2,
            ep: 1,
            cp: 1,
            seq: 8192,
            micro_batch: 1,
            global_batch: 16,
            zero: 1,
            recompute: false,
            grad_bf16: true,
            stage_layers: Vec::new(),
            vp: 1,
            schedule: Default::default(),
        };
        let cp2 = Parallelism {
            dp: 1,
            cp: 2,
            global_batch: 8,
            ..base.clone()
        };
        assert_eq!(base.world(), cp2.world());
        let peaks = Peaks::bf16(989.0);
        // A fast network: the ring hides under attention.
        let fast = Ring { busbw: 1e15 };
        let a = step(&model, &base, peaks, &cfg, &fast).unwrap();
        let b = step(&model, &cp2, peaks, &cfg, &fast).unwrap();
        assert_eq!((a.microbatches, b.microbatches), (8, 8));
        assert!(
            (b.compute_s / a.compute_s - 0.5).abs() < 1e-12,
            "{} {}",
            a.compute_s,
            b.compute_s
        );
        assert_eq!(a.context_parallel_s, None);
        assert_eq!(b.context_parallel_s, Some(0.0));
        // A slow network: the ring is exposed, by what attention does not cover.
        let slow = Ring { busbw: 1e8 };
        let c = step(&model, &cp2, peaks, &cfg, &slow).unwrap();
        let head_dim = model.hidden / model.heads;
        let block = 2 * 4096 * (model.kv_heads / 8) * head_dim * BYTES_PER_VALUE;
        let ring = 3.0 * block as f64 / 1e8;
        let attention = 12.0 * (8192 * model.hidden) as f64 * 4096.0 / 8.0 / (989e12 * 0.5);
        let want = 8.0 * model.layers as f64 * (ring - attention);
        let got = c.context_parallel_s.unwrap();
        assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
        // ZeRO-1 shards the optimizer over dp x cp = 2 ranks in both layouts.
        assert_eq!(
            model_state_bytes(&model, &base),
            model_state_bytes(&model, &cp2)
        );
    }
}
