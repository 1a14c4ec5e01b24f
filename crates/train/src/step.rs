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
use railyard_sim::collective::CollectiveError;
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
}

impl From<CollectiveError> for StepError {
    fn from(e: CollectiveError) -> Self {
        StepError::Comm(e)
    }
}

/// Knobs of the step model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepConfig {
    /// Fraction of the GPU's dense BF16 peak that the model's matrix multiplications reach. The
    /// default, 0.5, is an assumption in line with large-model training reports (Llama 3 reports 38-43%
    /// whole-step MFU on H100, which includes communication and bubbles); set it from your own runs.
    pub compute_efficiency: f64,
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
}

impl Default for StepConfig {
    fn default() -> Self {
        StepConfig {
            compute_efficiency: 0.5,
            dp_overlap: true,
            buckets: 8,
            precision: Precision::Bf16,
            fp8_dispatch: false,
            ep_overlap: false,
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

/// Bytes of model state one GPU holds in mixed-precision Adam training: 2 per parameter of BF16
/// weights, 4 of FP32 gradients (2 with [`Parallelism::grad_bf16`]: [`Parallelism::grad_bytes`])
/// and 12 of optimizer state (FP32 master weights, momentum and variance) — 18 bytes per parameter
/// as Megatron-LM counts them (`theoretical_memory_usage.py`: 6 + 12/d with the distributed
/// optimizer), 16 with BF16 gradients as Rajbhandari et al. count them ("ZeRO: Memory
/// Optimizations Toward Training Trillion Parameter Models", SC'20, section 3.1, FP16 gradients).
/// A rank holds 1/tp of its pipeline stage's dense
/// parameters and 1/(tp x ep) of its routed experts ([`stage_params`]: a stage's layers, and the
/// embedding on the first stage and the output layer on the last); ZeRO-1 shards the optimizer
/// state over the ranks that reduce those gradients (dp, or dp/ep for experts), ZeRO-2 the
/// gradients too (P_os+g), ZeRO-3 the weights as well (P_os+g+p). This is the fullest stage's;
/// activations come on top ([`Memory`]).
pub fn model_state_bytes(model: &Model, par: &Parallelism) -> f64 {
    stage_state_bytes(model, par)
        .into_iter()
        .fold(0.0, f64::max)
}

/// [`model_state_bytes`] of each pipeline stage, first to last.
fn stage_state_bytes(model: &Model, par: &Parallelism) -> Vec<f64> {
    let tp = par.tp.max(1) as f64;
    let ep = if par.ep > 1 { par.ep as f64 } else { 1.0 };
    // ZeRO shards over the ranks that reduce the gradients: data and context parallel together.
    let dp = par.dp.max(1) as f64 * par.cp.max(1) as f64;
    let edp = (dp / ep).max(1.0);
    stage_params(model, par)
        .iter()
        .map(|s| {
            let (dense_rank, expert_rank) = (s.dense as f64 / tp, s.expert as f64 / (tp * ep));
            let sharded = dense_rank / dp + expert_rank / edp;
            let g = par.grad_bytes() as f64;
            match par.zero {
                0 => (14.0 + g) * (dense_rank + expert_rank),
                1 => (2.0 + g) * (dense_rank + expert_rank) + 12.0 * sharded,
                2 => 2.0 * (dense_rank + expert_rank) + (12.0 + g) * sharded,
                _ => (14.0 + g) * sharded,
            }
        })
        .collect()
}

/// Activation bytes a GPU of each pipeline stage holds at its peak, first stage first.
///
/// A micro-batch's layer keeps [`Model::activation_bytes_per_token`] for each of its tokens on the
/// rank (micro-batch x sequence / cp); with `--recompute` (full recomputation) only the layer's
/// input, 2h a token, and during the backward pass one layer's full set again, recomputed
/// (Korthikanti et al. 2022, table 2, "full recompute": 2sbhL/t). Tensor parallelism with sequence
/// parallelism divides all of it by tp (the paper's section 4.2.2; Megatron-LM's
/// `theoretical_memory_usage.py` does the same), but for the routed experts' inputs: with the
/// experts split over the tensor-parallel ranks too (Megatron-Core's default expert tensor
/// parallelism, which [`model_state_bytes`] assumes), the token dispatcher all-gathers the
/// dispatched tokens over the TP group before the experts run (`token_dispatcher.py`,
/// "AllGather(TP) then sort tokens by local expert"), so every rank keeps all of them
/// ([`Model::expert_input_bytes_per_token`]).
///
/// Micro-batches in flight: [`in_flight`]. The last stage also holds the output layer's input
/// and the loss's FP32 logits for the one micro-batch it has in flight: 4h + 4v bytes a token
/// (Megatron-LM `theoretical_memory_usage.py`, inputs to output layer and CE loss). The
/// embedding's input (token ids) is left out: 8 bytes a token.
pub fn stage_activation_bytes(model: &Model, par: &Parallelism) -> Vec<f64> {
    let stages = par.stages(model.layers);
    let moe = model.moe_layers_per_stage(&stages);
    let p = stages.len();
    let tokens = (par.micro_batch * par.seq / u64::from(par.cp.max(1))) as f64;
    let tp = f64::from(par.tp.max(1));
    // Per token on one rank: a dense layer's, an MoE layer's (its expert inputs whole).
    let gathered = model.expert_input_bytes_per_token() * (1.0 - 1.0 / tp);
    let (dense_layer, moe_layer) = (
        model.activation_bytes_per_token(false) / tp,
        model.activation_bytes_per_token(true) / tp + gathered,
    );
    stages
        .iter()
        .zip(&moe)
        .enumerate()
        .map(|(i, (&layers, &moe_layers))| {
            let (kept, transient) = if par.recompute {
                let widest = if moe_layers > 0 {
                    moe_layer
                } else {
                    dense_layer
                };
                (2.0 * model.hidden as f64 * layers as f64 / tp, widest)
            } else {
                let full =
                    (layers - moe_layers) as f64 * dense_layer + moe_layers as f64 * moe_layer;
                (full, 0.0)
            };
            let mut per_token = kept * in_flight(par, i) + transient;
            if i + 1 == p {
                per_token += 4.0 * (model.hidden + model.vocab) as f64 / tp;
            }
            per_token * tokens
        })
        .collect()
}

/// What lowers the memory of a layout that does not fit, for a warning, among the flags that can
/// still change (`max_tp`: the GPUs of a server): with `state` a deeper pipeline or a higher ZeRO
/// stage (less model state a GPU); always more TP or CP (fewer tokens a GPU; CP not beside expert
/// parallelism), a smaller micro-batch, and full recomputation where it is off. A deeper pipeline
/// does not lower the first stage's activations while the step has a micro-batch for every stage
/// ([`in_flight`]), so it is offered for the model state only.
pub fn memory_remedies(par: &Parallelism, model: &Model, max_tp: u32, state: bool) -> String {
    let mut raise = Vec::new();
    if state && u64::from(par.pp) < model.layers {
        raise.push("--pp");
    }
    if state && par.zero < 3 {
        raise.push("--zero");
    }
    if par.tp < max_tp {
        raise.push("--tp");
    }
    if par.ep <= 1 {
        raise.push("--cp");
    }
    let mut r = Vec::new();
    match raise.split_last() {
        None => {}
        Some((last, [])) => r.push(format!("raise {last}")),
        Some((last, rest)) => r.push(format!("raise {} or {last}", rest.join(", "))),
    }
    if par.micro_batch > 1 {
        r.push("lower --micro-batch".to_string());
    }
    if !par.recompute {
        r.push("add --recompute".to_string());
    }
    match r.split_last() {
        None => "no flag left lowers it: more GPUs, or a GPU with more memory".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{}, or {last}", rest.join(", ")),
    }
}

/// How many micro-batches' worth of its layers' activations pipeline stage `i` holds at its
/// peak. Without pipelining one micro-batch at a time. 1F1B (PipeDream-Flush, Narayanan et al.,
/// SC'21; Megatron-Core `forward_backward_pipelining_without_interleaving`): stage i of p runs
/// p - i - 1 warm-up forward passes and one more before its first backward pass, so it holds
/// min(p - i, m) of a step's m micro-batches. Interleaved with v model chunks a stage
/// (`forward_backward_pipelining_with_interleaving`): 2 (p - i - 1) + (v - 1) p warm-up chunks
/// and one more, at most the m v a step has, each 1/v of the stage's layers; for the first stage
/// that is p (1 + (p - 1)/(p v)) micro-batches' worth, Korthikanti et al.'s section 4.2.3.
pub fn in_flight(par: &Parallelism, i: usize) -> f64 {
    let p = u64::from(par.pp.max(1));
    let i = (i as u64).min(p - 1);
    let m = par.microbatches().max(1);
    let v = u64::from(par.vp.max(1));
    if p == 1 {
        1.0
    } else if v == 1 {
        (p - i).min(m) as f64
    } else {
        (2 * (p - i - 1) + (v - 1) * p + 1).min(m * v) as f64 / v as f64
    }
}

/// What one GPU holds in training: the model state of the fullest stage, the activations of the
/// stage that holds the most, and the most any one stage holds of both (the number to compare
/// with the GPU's memory; at most the sum of the two).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    pub state_bytes: f64,
    pub activation_bytes: f64,
    pub peak_bytes: f64,
    /// The stage that holds `peak_bytes` (the first of equals), and its two parts.
    pub peak_stage: usize,
    pub peak_state_bytes: f64,
    pub peak_activation_bytes: f64,
}

impl Memory {
    pub fn of(model: &Model, par: &Parallelism) -> Memory {
        let state = stage_state_bytes(model, par);
        let act = stage_activation_bytes(model, par);
        let max = |v: &mut dyn Iterator<Item = f64>| v.fold(0.0, f64::max);
        let both: Vec<f64> = state.iter().zip(&act).map(|(s, a)| s + a).collect();
        let peak_stage = (0..both.len())
            .max_by(|&x, &y| both[x].total_cmp(&both[y]).then(y.cmp(&x)))
            .unwrap_or(0);
        Memory {
            state_bytes: max(&mut state.iter().copied()),
            activation_bytes: max(&mut act.iter().copied()),
            peak_bytes: both.get(peak_stage).copied().unwrap_or(0.0),
            peak_stage,
            peak_state_bytes: state.get(peak_stage).copied().unwrap_or(0.0),
            peak_activation_bytes: act.get(peak_stage).copied().unwrap_or(0.0),
        }
    }
}

/// The parameters of one pipeline stage, before tensor and expert parallelism divide them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageParams {
    /// Everything but the routed experts that expert parallelism splits (all of it without EP).
    pub dense: u64,
    /// The routed experts of the stage's MoE layers, with EP; 0 without.
    pub expert: u64,
}

/// Each pipeline stage's parameters, first to last: its layers' attention, dense FFN or experts
/// and router ([`Parallelism::stages`], dense layers first as the model has them); the first stage
/// also holds the input embedding and the last the output layer. With tied embeddings and more
/// than one stage the last stage keeps a copy of the embedding for the output layer, as
/// Megatron-LM does (its `shared_embedding_or_output_weight` lives on the first and the last
/// stage, whose gradients are summed), so the stages then add up to one embedding more than
/// [`Model::params`]. Norms and biases are left out, as `params` leaves them.
pub fn stage_params(model: &Model, par: &Parallelism) -> Vec<StageParams> {
    let stages = par.stages(model.layers);
    let moe = model.moe_layers_per_stage(&stages);
    let last = stages.len().saturating_sub(1);
    let embedding = model.vocab * model.hidden;
    let routed_per_layer = model.experts * model.expert_params();
    let moe_layer = (model.experts + model.shared_experts) * model.expert_params()
        + model.hidden * model.experts;
    stages
        .iter()
        .zip(&moe)
        .enumerate()
        .map(|(i, (&layers, &moe_layers))| {
            let mut dense = layers * model.attention_params()
                + (layers - moe_layers) * model.dense_ffn_params()
                + moe_layers * moe_layer;
            if i == 0 {
                dense += embedding;
            }
            if i == last && (!model.tied_embeddings || last > 0) {
                dense += embedding;
            }
            let expert = if par.ep > 1 {
                dense -= moe_layers * routed_per_layer;
                moe_layers * routed_per_layer
            } else {
                0
            };
            StageParams { dense, expert }
        })
        .collect()
}

/// The step time of `model` trained with `par` on GPUs of the given dense peaks, in the precision
/// `cfg` says.
pub fn step(
    model: &Model,
    par: &Parallelism,
    peaks: Peaks,
    cfg: &StepConfig,
    timer: &dyn CommTimer,
) -> Result<Breakdown, StepError> {
    let peak_tflops = peaks.of(cfg.precision).ok_or(StepError::NoFp8)?;
    let groups: Groups = par.groups();
    let m = par.microbatches();
    let (tp, pp, dp) = (u64::from(par.tp), u64::from(par.pp), u64::from(par.dp));
    let cp = u64::from(par.cp.max(1));
    // A micro-batch's tokens on one rank: context parallelism splits every sequence cp ways.
    let tokens_mb = par.micro_batch * par.seq / cp;
    let compute_mb = match cfg.precision {
        Precision::Bf16 => {
            let flops_mb = model.train_flops_per_token(par.seq, par.recompute) * tokens_mb as f64
                / (tp * pp) as f64;
            flops_mb / (peak_tflops * 1e12 * cfg.compute_efficiency)
        }
        Precision::Fp8 => {
            let (linear, rest) = model.train_flops_split(par.seq, par.recompute);
            let share = tokens_mb as f64 / (tp * pp) as f64;
            let rate = |tflops: f64| tflops * 1e12 * cfg.compute_efficiency;
            linear * share / rate(peak_tflops) + rest * share / rate(peaks.bf16_tflops)
        }
    };
    // Each stage's layers and MoE layers; its compute in proportion to its layers (exactly the
    // even split's when the stages are even).
    let stages = par.stages(model.layers);
    let moe_stages = model.moe_layers_per_stage(&stages);
    let stage_compute = |layers: u64| {
        if layers * pp == model.layers {
            compute_mb
        } else {
            compute_mb * (layers * pp) as f64 / model.layers as f64
        }
    };

    // Network bytes per tier in one step: every operation's bytes times how often the step runs it.
    let mut traffic: BTreeMap<String, f64> = BTreeMap::new();
    let mut operations: Vec<Operation> = Vec::new();
    let mut count = |role: &'static str,
                     op: Op,
                     groups: &[Vec<u32>],
                     bytes: u64,
                     times: f64|
     -> Result<(), CollectiveError> {
        for (tier, b) in timer.tier_bytes(op, groups, bytes)? {
            *traffic.entry(tier).or_default() += b * times;
        }
        operations.push(Operation {
            role,
            collective: op,
            groups: groups.len(),
            ranks_per_group: groups.first().map_or(0, Vec::len),
            bytes,
            calls_per_step: times,
            seconds_per_call: timer.seconds(op, groups, bytes)?,
        });
        Ok(())
    };
    // Runs per micro-batch on an average stage: every stage's groups run at once, so the step's
    // traffic is m x the stages' runs, layers / pp each on average (exactly a stage's when even).
    let per_stage = |n: u64| n as f64 / pp as f64;
    let activation = tokens_mb * model.hidden * BYTES_PER_VALUE;
    // Seconds of one run of `op` on every stage's groups at once, its traffic counted `calls` times
    // in every micro-batch.
    let mut per_run = |role: &'static str,
                       op: Op,
                       g: &[Vec<u32>],
                       bytes: u64,
                       calls: f64|
     -> Result<f64, CollectiveError> {
        count(role, op, g, bytes, calls * m as f64)?;
        timer.seconds(op, g, bytes)
    };
    let tp_run = if par.tp > 1 {
        // Every pipeline stage runs its micro-batches: m per step across all stages' groups at once.
        per_run(
            "tensor-parallel",
            Op::AllReduce,
            &groups.tp,
            activation,
            4.0 * per_stage(model.layers),
        )?
    } else {
        0.0
    };
    // Seconds of one MoE layer's all-to-alls (dispatch and combine, forward and backward).
    let ep_layer = if model.moe_layers() > 0 && par.ep > 1 {
        // Each token's hidden state goes to top_k experts; sequence parallelism splits tokens over TP.
        let routed = activation * model.top_k / tp;
        let moe = per_stage(model.moe_layers());
        if cfg.fp8_dispatch && cfg.precision == Precision::Fp8 {
            // BF16 values as FP8 with one FP32 scale per 128 values: 1 + 4/128 bytes a value.
            let fp8 = routed / BYTES_PER_VALUE * 33 / 32;
            let combine = per_run(
                "expert-parallel",
                Op::AllToAll,
                &groups.ep,
                routed,
                2.0 * moe,
            )?;
            let dispatch = per_run("expert-parallel", Op::AllToAll, &groups.ep, fp8, 2.0 * moe)?;
            Some((2.0, combine, dispatch))
        } else {
            Some((
                4.0,
                per_run(
                    "expert-parallel",
                    Op::AllToAll,
                    &groups.ep,
                    routed,
                    4.0 * moe,
                )?,
                0.0,
            ))
        }
    } else {
        None
    };
    // Context parallelism: ring attention (Liu, Zaharia and Abbeel, "Ring Attention with Blockwise
    // Transformers for Near-Infinite Context", 2023) as Megatron-Core runs it through Transformer
    // Engine's point-to-point context parallelism: every layer passes each rank's keys and values
    // around the cp ranks, cp - 1 hops forward, and keys, values and their gradients cp - 1 hops
    // backward (3 (cp - 1) blocks in all), each hop overlapped with the attention of the block in
    // hand; what the attention does not cover is exposed. A block is this rank's tokens' K and V
    // for its tensor-parallel share of the KV heads (one head at least: grouped-query heads fewer
    // than TP are repeated).
    let cp_layer = if cp > 1 {
        let head_dim = model.hidden / model.heads.max(1);
        let kv_heads = (model.kv_heads / tp).max(1);
        let block = 2 * tokens_mb * kv_heads * head_dim * BYTES_PER_VALUE;
        let ring: Vec<Vec<u32>> = groups
            .cp
            .iter()
            .flat_map(|g| (0..g.len()).map(move |i| vec![g[i], g[(i + 1) % g.len()]]))
            .collect();
        let hops = 3.0 * (cp - 1) as f64;
        let hop = per_run(
            "context-parallel",
            Op::SendRecv,
            &ring,
            block,
            hops * per_stage(model.layers),
        )?;
        // Attention scores and values of one layer, at the BF16 peak in either precision.
        let attention = model.attention_flops_per_token(par.seq, par.recompute) * tokens_mb as f64
            / tp as f64
            / (peaks.bf16_tflops * 1e12 * cfg.compute_efficiency);
        Some(((hops * hop - attention).max(0.0), hops * hop))
    } else {
        None
    };
    // The slowest stage: its compute, tensor- and expert-parallel seconds per micro-batch (exposed
    // and in all).
    let mut slow = (f64::NEG_INFINITY, 0.0, 0.0, 0.0, 0.0, 0.0);
    for (&layers, &moe) in stages.iter().zip(&moe_stages) {
        let compute = stage_compute(layers);
        let tp_s = 4.0 * layers as f64 * tp_run;
        let ep_s = match ep_layer {
            Some((calls, a, b)) if moe > 0 => {
                let n = moe as f64;
                calls * n * a + calls * n * b
            }
            _ => 0.0,
        };
        let ep_exposed = if cfg.ep_overlap {
            (ep_s - compute).max(0.0)
        } else {
            ep_s
        };
        let cp_s = cp_layer.map_or(0.0, |(exposed, _)| layers as f64 * exposed);
        let total = compute + tp_s + ep_exposed + cp_s;
        if total > slow.0 {
            slow = (total, compute, tp_s, ep_exposed, ep_s, cp_s);
        }
    }
    let (_, compute_mb, tp_mb, ep_mb, ep_total_mb, cp_mb) = slow;
    let (fwd, bwd) = (compute_mb / 3.0, compute_mb * 2.0 / 3.0);
    let pp_mb = if par.pp > 1 {
        // Activations forward and gradients backward, both directions of every stage boundary.
        let (pairs, back) = groups.stage_boundaries();
        // Interleaved: a micro-batch crosses every stage boundary once per model chunk.
        let vp = f64::from(par.vp.max(1));
        count(
            "pipeline-forward",
            Op::SendRecv,
            &pairs,
            activation / tp,
            m as f64 * vp,
        )?;
        count(
            "pipeline-backward",
            Op::SendRecv,
            &back,
            activation / tp,
            m as f64 * vp,
        )?;
        2.0 * vp * timer.seconds(Op::SendRecv, &pairs, activation / tp)?
    } else {
        0.0
    };
    let slot = compute_mb + tp_mb + ep_mb + pp_mb + cp_mb;
    // Interleaved 1F1B with vp model chunks per stage shrinks the bubble vp times (Narayanan et
    // al., SC'21, section 2.2.2: bubble fraction (p - 1) / (v m)).
    let bubble = (pp - 1) as f64 * slot / f64::from(par.vp.max(1));
    let pipeline = if par.vp > 1 {
        m as f64 * slot + bubble
    } else {
        (m + pp - 1) as f64 * slot
    };

    // Data parallelism: this rank's share of the gradients, reduced (reduce-scatter or all-reduce)
    // at `grad_bytes` a value (FP32 unless --grad-reduce-in-bf16), the updated parameters gathered
    // in BF16. With expert parallelism the routed experts are split over the EP ranks and their
    // gradients are reduced only among the ranks that hold the same experts (Megatron-Core's
    // expert data parallelism); everything else over DP.
    let (mut dp_exposed, mut dp_total) = (0.0, 0.0);
    if u64::from(par.dp) * cp > 1 {
        // The stage with the most gradient bytes per rank sets them: every stage reduces its own
        // at once.
        // Parameters per rank, dense and routed experts.
        let (dense_shard, expert_shard) = stage_params(model, par)
            .iter()
            .map(|s| (s.dense / tp, s.expert / (tp * u64::from(par.ep.max(1)))))
            .max_by_key(|&(d, e)| d + e)
            .unwrap_or((0, 0));
        let parts: Vec<(&str, &[Vec<u32>], u64)> = [
            ("data-parallel", &groups.dp[..], dense_shard),
            ("expert-data-parallel", &groups.edp[..], expert_shard),
        ]
        .into_iter()
        .filter(|&(_, _, params)| params > 0)
        .collect();
        let grad_bytes = par.grad_bytes();
        let hide = |t: f64, under: f64| {
            if cfg.dp_overlap {
                (t / f64::from(cfg.buckets.max(1))).max(t - under)
            } else {
                t
            }
        };
        // One operation over every part, one after the other: seconds.
        let mut run = |op: Op, times: f64| -> Result<f64, CollectiveError> {
            let per_value = match op {
                Op::AllGather => BYTES_PER_VALUE,
                _ => grad_bytes,
            };
            let mut t = 0.0;
            for &(role, g, params) in &parts {
                count(role, op, g, params * per_value, times)?;
                t += timer.seconds(op, g, params * per_value)?;
            }
            Ok(t)
        };
        match par.zero {
            0 => {
                let t = run(Op::AllReduce, 1.0)?;
                dp_total += t;
                dp_exposed += hide(t, bwd);
            }
            1 => {
                let rs = run(Op::ReduceScatter, 1.0)?;
                let ag = run(Op::AllGather, 1.0)?;
                dp_total += rs + ag;
                dp_exposed += hide(rs, bwd) + hide(ag, fwd);
            }
            _ => {
                // Sharded gradients (ZeRO-2 and 3) are reduce-scattered after every micro-batch's
                // backward pass, each under that pass: a rank keeps only its shard of the
                // accumulated gradient (Rajbhandari et al., SC'20, section 5.2; DeepSpeed reduces
                // at every micro-step while accumulating, as FSDP does without `no_sync`).
                let mb = m as f64;
                let rs = run(Op::ReduceScatter, mb)?;
                dp_total += mb * rs;
                dp_exposed += mb * hide(rs, bwd);
                if par.zero == 2 {
                    // The updated weights, gathered once after the optimizer step.
                    let ag = run(Op::AllGather, 1.0)?;
                    dp_total += ag;
                    dp_exposed += hide(ag, fwd);
                } else {
                    // ZeRO-3 holds a shard of the weights: gathered before every forward and
                    // backward pass of every micro-batch, and not after the step.
                    let per_pass = run(Op::AllGather, 2.0 * mb)?;
                    dp_total += 2.0 * mb * per_pass;
                    dp_exposed += mb * (hide(per_pass, fwd) + hide(per_pass, bwd));
                }
            }
        }
    }
    // Tied input and output embeddings on two stages (Megatron-LM keeps
    // `shared_embedding_or_output_weight` on the first and the last stage, [`stage_params`]): each
    // step their gradients are summed by an all-reduce between the two (Megatron-Core
    // `finalize_model_grads`, `_allreduce_embedding_grads`, after the data-parallel reduction and
    // before the optimizer: exposed), one pair per tensor-, context- and data-parallel rank.
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
        count("embedding-gradient", Op::AllReduce, &pairs, bytes, 1.0)?;
        let t = timer.seconds(Op::AllReduce, &pairs, bytes)?;
        dp_total += t;
        dp_exposed += t;
    }
    let step_time = pipeline + dp_exposed;
    let tokens = (par.global_batch * par.seq) as f64;
    let tokens_per_s = tokens / step_time;
    let gpus = (tp * cp * pp * dp) as f64;
    let mfu =
        model.train_flops_per_token(par.seq, false) * tokens_per_s / (gpus * peak_tflops * 1e12);
    let memory = Memory::of(model, par);
    Ok(Breakdown {
        compute_s: m as f64 * compute_mb,
        tensor_parallel_s: m as f64 * tp_mb,
        expert_parallel_s: m as f64 * ep_mb,
        expert_parallel_total_s: cfg.ep_overlap.then_some(m as f64 * ep_total_mb),
        pipeline_parallel_s: m as f64 * pp_mb,
        context_parallel_s: cp_layer.map(|_| m as f64 * cp_mb),
        data_parallel_exposed_s: dp_exposed,
        data_parallel_total_s: dp_total,
        pipeline_bubble_s: bubble,
        step_time_s: step_time,
        tokens_per_s,
        mfu,
        microbatches: m,
        network_bytes_per_tier: traffic,
        model_state_bytes_per_gpu: memory.state_bytes,
        activation_bytes_per_gpu: memory.activation_bytes,
        memory_bytes_per_gpu: memory.peak_bytes,
        operations,
    })
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
        }
    }

    /// Korthikanti et al.'s GPT layer (multi-head attention, a 4h GELU MLP) stores 34h bytes a
    /// token with its two byte-wide dropout masks, selective recomputation and FlashAttention
    /// alike leaving the attention scores out; without dropout that is 32h, plus FlashAttention's
    /// FP32 softmax statistics, 4 bytes a head.
    #[test]
    fn activation_accounting_is_the_papers_without_dropout() {
        let gpt = Model::preset("gpt3-175b").unwrap();
        assert_eq!((gpt.kv_heads, gpt.ffn), (gpt.heads, 4 * gpt.hidden));
        let per_token = gpt.activation_bytes_per_token(false);
        let want = 34.0 * gpt.hidden as f64 - 2.0 * gpt.hidden as f64 + 4.0 * gpt.heads as f64;
        assert_eq!(per_token, want);
        // Megatron-LM's estimator (18 + 4f/h) sbh gives 34h for this layer too: the same tensors.
        assert_eq!(
            per_token - 4.0 * gpt.heads as f64 + 2.0 * gpt.hidden as f64,
            (18.0 + 4.0 * gpt.ffn as f64 / gpt.hidden as f64) * gpt.hidden as f64
        );
    }

    /// 1F1B: stage i of p holds min(p - i, m) micro-batches; the last stage adds the output
    /// layer's input and the FP32 logits for its one micro-batch; tensor parallelism divides it
    /// all; full recomputation keeps each layer's input and one layer's full set.
    #[test]
    fn activations_follow_the_schedule() {
        let model = Model::preset("llama3-8b").unwrap();
        let (h, v) = (model.hidden as f64, model.vocab as f64);
        let layer = model.activation_bytes_per_token(false);
        let tokens = 8192.0;
        let par = Parallelism {
            tp: 2,
            pp: 4,
            dp: 2,
            seq: 8192,
            global_batch: 2 * 16,
            ..pure_dp(2, 1)
        };
        assert_eq!(par.microbatches(), 16);
        let per_stage = model.layers as f64 / 4.0;
        let act = stage_activation_bytes(&model, &par);
        for (i, a) in act.iter().enumerate() {
            let mut want = per_stage * layer * (4 - i) as f64 * tokens;
            if i == 3 {
                want += 4.0 * (h + v) * tokens;
            }
            assert!(
                (a - want / 2.0).abs() < 1e-6 * want,
                "stage {i}: {a} vs {want}"
            );
        }
        // Two micro-batches a step: the first stage holds two, not four.
        let short = Parallelism {
            global_batch: 2 * 2,
            ..par.clone()
        };
        let first = stage_activation_bytes(&model, &short)[0];
        assert!((first - per_stage * layer * 2.0 * tokens / 2.0).abs() < 1.0);
        // Interleaved with 2 virtual stages: 1 + 3/8 times the first stage's; the last stage
        // holds (v - 1) p + 1 = 5 chunks of half its layers, not one micro-batch.
        let vp = Parallelism {
            vp: 2,
            ..par.clone()
        };
        let ivp = stage_activation_bytes(&model, &vp);
        assert!((ivp[0] - act[0] * 1.375).abs() < 1.0);
        assert_eq!(in_flight(&vp, 3), 2.5);
        let logits = 4.0 * (h + v) * tokens / 2.0;
        assert!((ivp[3] - logits - (act[3] - logits) * 2.5).abs() < 1.0);
        // Full recomputation: 2h a layer for each micro-batch in flight, and one layer in full.
        let rc = Parallelism {
            recompute: true,
            ..par.clone()
        };
        let want = (2.0 * h * per_stage * 4.0 + layer) * tokens / 2.0;
        assert!((stage_activation_bytes(&model, &rc)[0] - want).abs() < 1.0);
        // The peak of one stage is at most the two maxima added, and at least either.
        let m = Memory::of(&model, &par);
        assert!(m.peak_bytes <= m.state_bytes + m.activation_bytes);
        assert!(m.peak_bytes >= m.state_bytes.max(m.activation_bytes));
        assert_eq!(m.state_bytes, model_state_bytes(&model, &par));
    }

    /// Experts split over the tensor-parallel ranks see every dispatched token (Megatron-Core
    /// gathers them over TP): an MoE layer's expert inputs are not divided by tp, the rest is.
    #[test]
    fn expert_inputs_are_gathered_over_tensor_parallelism() {
        let model = Model::preset("mixtral-8x7b").unwrap();
        let one = |tp: u32| {
            let par = Parallelism {
                tp,
                seq: 4096,
                ..pure_dp(2, 1)
            };
            stage_activation_bytes(&model, &par)[0]
        };
        let (t1, t8) = (one(1), one(8));
        let tokens = 4096.0;
        let ein = model.expert_input_bytes_per_token();
        assert_eq!(ein, 2.0 * model.hidden as f64 * 2.0);
        let inputs = ein * model.layers as f64 * tokens;
        assert!((t8 - ((t1 - inputs) / 8.0 + inputs)).abs() < 1e-6 * t8);
        let dense = Model::preset("llama3-8b").unwrap();
        assert_eq!(dense.expert_input_bytes_per_token(), 0.0);
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

    /// A warning offers only the flags that can still lower the memory: not --tp at the server's
    /// GPUs, not --cp beside expert parallelism, not --recompute when it is on, and --pp or --zero
    /// only for the model state.
    #[test]
    fn memory_remedies_offer_what_can_still_change() {
        let model = Model::preset("llama3-70b").unwrap();
        let par = Parallelism {
            tp: 8,
            ..pure_dp(2, 1)
        };
        assert_eq!(
            memory_remedies(&par, &model, 8, true),
            "raise --pp, --zero or --cp, or add --recompute"
        );
        assert_eq!(
            memory_remedies(&par, &model, 8, false),
            "raise --cp, or add --recompute"
        );
        let moe = Parallelism {
            ep: 2,
            micro_batch: 2,
            recompute: true,
            tp: 4,
            ..pure_dp(2, 3)
        };
        assert_eq!(
            memory_remedies(&moe, &model, 8, true),
            "raise --pp or --tp, or lower --micro-batch"
        );
        let none = Parallelism {
            ep: 2,
            recompute: true,
            tp: 8,
            pp: 80,
            ..pure_dp(2, 3)
        };
        assert_eq!(
            memory_remedies(&none, &model, 8, true),
            "no flag left lowers it: more GPUs, or a GPU with more memory"
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

    /// The ZeRO paper's example (SC'20, figure 1): Psi parameters on 64 data-parallel GPUs hold
    /// 16 Psi bytes each without ZeRO, (4 + 12/64) Psi with the optimizer partitioned (7.5B: 120 GB
    /// -> 31.4 GB), 16/64 Psi with everything partitioned (1.9 GB).
    #[test]
    fn model_state_follows_the_zero_paper() {
        let model = Model::preset("llama3-8b").unwrap();
        let psi = model.params() as f64;
        let at = |zero| model_state_bytes(&model, &pure_dp(64, zero));
        assert_eq!(at(0), 16.0 * psi);
        assert!((at(1) / at(0) - 31.4 / 120.0).abs() < 1e-3);
        assert!((at(2) / at(0) - 16.6 / 120.0).abs() < 1e-3);
        assert!((at(3) / at(0) - 1.9 / 120.0).abs() < 1e-3);
    }

    /// Every stage holds its layers; the first the embedding, the last the output layer (a copy of
    /// a tied embedding when there are several stages). The stages add up to the model (one
    /// embedding more where a tied one is copied), the routed experts to the model's with EP.
    /// Llama 3 70B on 4 stages (the consistency audit's arithmetic): 20 layers of 855.6 M and the
    /// 1.05 B embedding on the first stage, 18.16 B, 3.0% over a quarter of the model.
    #[test]
    fn stages_hold_their_layers_and_the_embeddings_at_the_ends() {
        for (name, _) in crate::model::PRESETS {
            let model = Model::preset(name).unwrap();
            let embedding = model.vocab * model.hidden;
            for (pp, ep) in [(1u32, 1u32), (2, 1), (4, 1), (4, 8)] {
                if !model.layers.is_multiple_of(u64::from(pp)) || (ep > 1 && !model.is_moe()) {
                    continue;
                }
                let par = Parallelism {
                    pp,
                    ep,
                    ..pure_dp(8, 0)
                };
                let stages = stage_params(&model, &par);
                assert_eq!(stages.len(), pp as usize);
                let total: u64 = stages.iter().map(|s| s.dense + s.expert).sum();
                let copy = if model.tied_embeddings && pp > 1 {
                    embedding
                } else {
                    0
                };
                assert_eq!(total, model.params() + copy, "{name} pp {pp}");
                let experts: u64 = stages.iter().map(|s| s.expert).sum();
                let want = if ep > 1 {
                    model.routed_expert_params()
                } else {
                    0
                };
                assert_eq!(experts, want, "{name} pp {pp} ep {ep}");
                if pp > 2 && !model.is_moe() {
                    // Every stage has as many layers: the ends differ from the middle by the
                    // embedding each holds.
                    assert_eq!(stages[0].dense - stages[1].dense, embedding, "{name}");
                    assert_eq!(stages[pp as usize - 1].dense, stages[0].dense, "{name}");
                }
            }
        }
        let model = Model::preset("llama3-70b").unwrap();
        let par = Parallelism {
            pp: 4,
            ..pure_dp(8, 0)
        };
        let first = stage_params(&model, &par)[0].dense as f64;
        assert!((first / 1e9 - 18.16).abs() < 0.01, "{first}");
        assert!((first / (model.params() as f64 / 4.0) - 1.029).abs() < 0.001);
        assert_eq!(model_state_bytes(&model, &par), 16.0 * first);
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
