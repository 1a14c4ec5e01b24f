//! The resolved parallelism of a step ([`Parallelism`]), its groups and its checks: the leaf that
//! the layout search, the memory model and the step build on (the `parallel` module re-exports it
//! with the layouts as asked for).
//!
//! Placement: which GPUs form the tensor-, pipeline-, data- and expert-parallel groups.
//!
//! Ranks are laid out as Megatron-LM's launcher does with its default order (tensor fastest, then data,
//! then pipeline): rank = tp_rank + tp x (dp_rank + dp x pp_rank), and rank r runs on GPU r of the
//! cluster (server r / gpus_per_server). So a tensor-parallel group sits inside one server's NVLink
//! domain, data-parallel peers are the same local GPU on different servers (one rail), and pipeline
//! stages are blocks of servers. Expert-parallel groups split each data-parallel group into blocks of
//! `ep` ranks (Megatron-Core's expert parallelism within data parallelism).
//!
//! On a rack-scale NVLink domain (GB200/GB300 NVL72) a "server" here is the domain NCCL sees, the
//! rack, holding the ranks a job takes of it (`study::train::lay_out`, 64 of its 72 GPUs): a group
//! of `tp x ep` ranks that divides them (EP 64 with TP 1, EP 8 with TP 8) sits inside one rack's
//! NVLink, so its all-to-all never reaches the NICs.
//!
//! Context parallelism (`cp`) sits between tensor and data parallelism, as in Megatron-Core's
//! default order `tp-cp-ep-dp-pp`: rank = tp_rank + tp x (cp_rank + cp x (dp_rank + dp x
//! pp_rank)). The ranks of a context-parallel group each hold 1/cp of every sequence; gradients are
//! reduced over data and context parallelism together (Megatron-Core's data-parallel group with
//! context parallelism).

use crate::model::Model;
use crate::schedule::Schedule;
use std::fmt;

/// The largest micro-batch, sequences.
pub const MAX_MICRO_BATCH: u64 = 1 << 12;
pub use crate::model::MAX_GLOBAL_BATCH;

/// The most pipeline stages `--stage-layers` may list (a model has at most 1,024 layers).
pub const MAX_STAGES: usize = 1 << 10;

/// How a model is split across GPUs, and the batch it trains on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parallelism {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    /// Expert tensor parallelism (`--etp`): the ranks one expert's GEMMs are split over. `None`:
    /// as `tp`, the experts split like the dense layers and expert groups inside data parallelism.
    /// `Some`: Megatron-Core's MoE parallel folding (arXiv 2504.14960; Megatron-Core
    /// docs/source/api-guide/moe.rst, "MoE Parallel Folding"; parallel_state.py
    /// `initialize_model_parallel` with `expert_tensor_parallel_size`): the tp x cp x dp ranks of
    /// a stage regrouped as etp x ep x edp, `Parallelism::groups` says how.
    pub etp: Option<u32>,
    /// Context parallelism: each sequence split over `cp` ranks, attention's keys and values passed
    /// around them in a ring (1: none).
    pub cp: u32,
    pub seq: u64,
    pub micro_batch: u64,
    pub global_batch: u64,
    /// ZeRO stage for data parallelism: 0 (plain all-reduce of gradients), 1 (optimizer state sharded: gradients reduce-scattered, parameters
    /// all-gathered once per step) or 3 (parameters sharded too: all-gathered for every forward and
    /// backward pass).
    pub zero: u32,
    pub recompute: bool,
    /// Gradients accumulated and reduced in BF16 (Megatron-LM's `--grad-reduce-in-bf16`); by
    /// default FP32, as Megatron-LM does with BF16 parameters ([`Parallelism::grad_bytes`]).
    pub grad_bf16: bool,
    /// Layers of each pipeline stage, stage 0 first; empty for an even split (layers / pp each).
    pub stage_layers: Vec<u64>,
    /// Virtual pipeline stages (model chunks) per stage, Megatron's interleaved 1F1B; 1 = plain.
    /// Need not divide a stage's layers (Megatron-Core's pipeline layouts): [`crate::schedule::chunks`].
    pub vp: u32,
    /// The pipeline schedule ([`crate::schedule`]).
    pub schedule: crate::schedule::Schedule,
    /// Modules recomputed selectively ([`crate::recompute`]); full recomputation is `recompute`.
    pub recompute_modules: crate::recompute::Modules,
    /// The weights kept in FP8 only and all-gathered at one byte a value (Megatron-Core's
    /// `--fp8-param-gather`, torchtitan's FP8 FSDP all-gather); FP8 training only.
    pub fp8_params: bool,
    /// The activations the Linear layers keep for their backward pass cached in FP8 with one FP32
    /// scale per 128 values, the attention output projection's input in E5M6 (DeepSeek-V3
    /// report, arXiv 2412.19437, section 3.3.3 "Low-Precision Activation"); FP8 training only
    /// (the memory model's `fp8_cache_savings`).
    pub fp8_activations: bool,
    /// AdamW's first and second moments in BF16, the master weights and gradients in FP32
    /// (DeepSeek-V3 report, section 3.3.3 "Low-Precision Optimizer States"): 8 bytes of
    /// optimizer state a parameter instead of 12.
    pub bf16_moments: bool,
}

/// Micro-batches per data-parallel rank in a step when no global batch is given: an assumption,
/// enough for a 1F1B pipeline of a few stages to keep its bubble small.
pub const DEFAULT_MICROBATCHES_PER_RANK: u64 = 8;

/// A layout in one word per split, `TP8 PP4 DP4`, with VP, EP and CP where above 1
/// (`TP8 PP4 VP2 DP4 EP2`): the one short form, `compare`'s layout row and the notes.
pub fn layout_label(tp: u32, pp: u32, vp: u32, dp: u32, ep: u32, cp: u32) -> String {
    let mut s = format!("TP{tp} PP{pp}");
    if vp > 1 {
        s += &format!(" VP{vp}");
    }
    s += &format!(" DP{dp}");
    if ep > 1 {
        s += &format!(" EP{ep}");
    }
    if cp > 1 {
        s += &format!(" CP{cp}");
    }
    s
}

/// The global batch when none is given: the model's published one ([`Model::global_batch`])
/// rounded to the nearest multiple of dp x micro-batch (at least one; halves up), else
/// [`DEFAULT_MICROBATCHES_PER_RANK`] micro-batches per data-parallel rank. `u64::MAX` where it
/// overflows, for [`Parallelism::check`] to refuse.
pub fn default_global_batch(model: &Model, dp: u32, micro_batch: u64) -> u64 {
    let per_step = u64::from(dp).saturating_mul(micro_batch);
    if model.global_batch == 0 || per_step == 0 {
        return per_step.saturating_mul(DEFAULT_MICROBATCHES_PER_RANK);
    }
    let steps = (model.global_batch + per_step / 2) / per_step;
    steps.max(1).saturating_mul(per_step)
}

/// Whether tensor parallelism `tp` splits the model's attention heads: Megatron divides them over
/// the tensor-parallel ranks (`divide(num_attention_heads, tensor_model_parallel_size)` in its
/// attention layer), and the key/value heads of grouped-query attention too
/// (`divide(num_query_groups, world_size)`), so TP must divide both.
pub(crate) fn heads_split(model: &Model, tp: u32) -> bool {
    tp > 0
        && model.heads.is_multiple_of(u64::from(tp))
        && model.kv_heads.is_multiple_of(u64::from(tp))
}

/// `layers` over `pp` stages as evenly as they go, the extra layers on the middle stages first,
/// then the last, then the first: the first stage also holds the embedding and the last the
/// output layer and loss, which is why the Llama 3 paper (section 3.3.2) puts fewer layers on
/// them. 61 layers on 16 stages: 3, 4 x 13, 3, 3.
pub fn balanced_stages(layers: u64, pp: u64) -> Vec<u64> {
    let pp_us = pp.max(1) as usize;
    let (base, mut extra) = (layers / pp.max(1), layers % pp.max(1));
    let mut stages = vec![base; pp_us];
    let order = (1..pp_us.saturating_sub(1)).chain([pp_us - 1, 0]);
    for i in order {
        if extra == 0 {
            break;
        }
        stages[i] += 1;
        extra -= 1;
    }
    stages
}

/// Why a parallel layout does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    /// The flag at fault (`tp`, `pp`, ...).
    pub field: &'static str,
    pub message: String,
}

/// A layout error naming `field`.
fn bad(field: &'static str, message: String) -> Result<(), LayoutError> {
    Err(LayoutError { field, message })
}

/// `field` is 0 where it must be at least 1.
fn zero(field: &'static str) -> Result<(), LayoutError> {
    bad(field, "must be at least 1".to_string())
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{}: {}", self.field, self.message)
    }
}

impl std::error::Error for LayoutError {}

/// Rank groups; each inner list is one group, in rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    pub tp: Vec<Vec<u32>>,
    pub dp: Vec<Vec<u32>>,
    /// Pipeline chains, stage 0 first.
    pub pp: Vec<Vec<u32>>,
    pub ep: Vec<Vec<u32>>,
    /// Expert data parallelism: the data-parallel ranks that hold the same experts (one per expert
    /// group of a DP group, at the same place in each), which reduce those experts' gradients.
    pub edp: Vec<Vec<u32>>,
    /// Context-parallel rings (empty without context parallelism).
    pub cp: Vec<Vec<u32>>,
    /// Expert tensor-parallel groups under MoE parallel folding with 1 < etp < tp (empty
    /// otherwise: with etp = tp they are the `tp` groups).
    pub etp: Vec<Vec<u32>>,
}

impl Groups {
    /// Every boundary between neighbouring pipeline stages as a (sender, receiver) pair, forward
    /// (activations) and backward (gradients): all of them send at once.
    pub fn stage_boundaries(&self) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let forward: Vec<Vec<u32>> = self
            .pp
            .iter()
            .flat_map(|chain| chain.windows(2).map(|w| w.to_vec()))
            .collect();
        let backward = forward
            .iter()
            .map(|p| p.iter().rev().copied().collect())
            .collect();
        (forward, backward)
    }
}

impl Parallelism {
    /// The expert tensor-parallel size: `etp`, else `tp`.
    pub fn etp(&self) -> u32 {
        self.etp.unwrap_or(self.tp)
    }

    /// True under MoE parallel folding with the experts split over fewer ranks than the dense
    /// layers (etp < tp): the MoE layers then run no tensor-parallel collective over tp.
    pub fn folded(&self) -> bool {
        self.etp() < self.tp
    }

    pub fn world(&self) -> u64 {
        u64::from(self.tp) * u64::from(self.cp.max(1)) * u64::from(self.pp) * u64::from(self.dp)
    }

    /// Layers of each pipeline stage, stage 0 first: the given split, else `layers` / pp each.
    pub fn stages(&self, layers: u64) -> Vec<u64> {
        if self.stage_layers.is_empty() {
            let pp = u64::from(self.pp.max(1));
            vec![layers / pp; pp as usize]
        } else {
            self.stage_layers.clone()
        }
    }

    /// True when every stage has the same layers (the split given or not).
    pub fn even_stages(&self, layers: u64) -> bool {
        let pp = u64::from(self.pp.max(1));
        self.stages(layers)
            .iter()
            .all(|&l| l.saturating_mul(pp) == layers)
    }

    /// Bytes of one gradient value as it is accumulated and reduced over data parallelism: 4
    /// (FP32) unless [`Parallelism::grad_bf16`]. Megatron-LM with BF16 parameters sets
    /// `accumulate_allreduce_grads_in_fp32` unless `--grad-reduce-in-bf16` is given
    /// (megatron/training/arguments.py, "accumulate and all-reduce gradients in fp32 for bfloat16
    /// data type"; param_and_grad_buffer.py then keeps the gradient buffer in FP32), and Llama 3
    /// reduce-scatters its gradients in FP32 ("The Llama 3 Herd of Models", section 3.3.2, "Numerical stability").
    pub fn grad_bytes(&self) -> u64 {
        if self.grad_bf16 {
            2
        } else {
            4
        }
    }

    /// Micro-batches per step per pipeline: global batch / (dp x micro batch).
    pub fn microbatches(&self) -> u64 {
        self.global_batch / (u64::from(self.dp) * self.micro_batch)
    }

    /// Checks the layout against the cluster and the model's heads, layers and experts. Each error names
    /// the flag at fault: the first of tp, pp, dp, ep, seq, micro-batch, global-batch, zero (in that
    /// order) that cannot hold, each checked against the cluster left by the ones before it.
    pub fn check(&self, gpus: u64, gpus_per_server: u32, model: &Model) -> Result<(), LayoutError> {
        // One flag at a time, so a default derived from a bad flag (dp from tp and pp) is not blamed.
        self.check_tp(gpus_per_server, model)?;
        self.check_cp(gpus)?;
        self.check_pp(gpus)?;
        self.check_stage_layers(model.layers)?;
        self.check_vp_and_schedule(model.layers)?;
        self.check_dp_and_ep(gpus, model.experts)?;
        self.check_batch()
    }

    /// tp: inside one NVLink domain (a server's GPUs, or those a job takes of a GB200/GB300 NVL72
    /// rack: `gpus_per_server` is the ranks a domain holds), and the attention heads split over it.
    fn check_tp(&self, gpus_per_server: u32, model: &Model) -> Result<(), LayoutError> {
        if self.tp == 0 {
            return zero("tp");
        }
        if self.tp > gpus_per_server || !gpus_per_server.is_multiple_of(self.tp) {
            let valid: Vec<String> = (1..=gpus_per_server)
                .filter(|d| gpus_per_server.is_multiple_of(*d))
                .map(|d| d.to_string())
                .collect();
            return bad(
                "tp",
                format!(
                    "{}: tensor parallelism stays inside one NVLink domain of {gpus_per_server} GPUs (a server's, or a job's share of a rack-scale domain); valid: {}",
                    self.tp,
                    valid.join(", ")
                ),
            );
        }
        if !heads_split(model, self.tp) {
            let valid: Vec<String> = (1..=gpus_per_server)
                .filter(|&d| gpus_per_server.is_multiple_of(d) && heads_split(model, d))
                .map(|d| d.to_string())
                .collect();
            return bad(
                "tp",
                format!(
                    "{}: tensor parallelism splits the attention heads, and {} do not split over {} ranks; valid: {}",
                    self.tp,
                    if model.heads.is_multiple_of(u64::from(self.tp.max(1))) {
                        format!("the {} key/value heads of its grouped-query attention", model.kv_heads)
                    } else {
                        format!("{} heads", model.heads)
                    },
                    self.tp,
                    valid.join(", ")
                ),
            );
        }
        Ok(())
    }

    /// cp: within the cluster, the sequence in 2 x cp chunks, not with expert parallelism.
    fn check_cp(&self, gpus: u64) -> Result<(), LayoutError> {
        if self.cp == 0 {
            return zero("cp");
        }
        if self.cp > 1 {
            let cp = u64::from(self.cp);
            if u64::from(self.tp) * cp > gpus {
                return bad(
                    "cp",
                    format!(
                        "{} context-parallel ranks of tp = {} need {} GPUs but the cluster has {gpus}",
                        self.cp,
                        self.tp,
                        u64::from(self.tp) * cp
                    ),
                );
            }
            if !self.seq.is_multiple_of(2 * cp) {
                return bad(
                    "cp",
                    format!(
                        "the sequence of {} tokens does not split into 2 x cp = {} equal chunks (Megatron-Core balances causal attention that way); valid: a cp for which 2 x cp divides the sequence",
                        self.seq,
                        2 * cp
                    ),
                );
            }
            if self.ep > 1 && self.etp.is_none() {
                return bad(
                    "cp",
                    format!(
                        "context parallelism with expert parallelism (ep = {}) is not modelled; valid: cp 1 with --ep, ep 1 with --cp, or --etp to fold the expert groups over tp x cp x dp (Megatron-Core's MoE parallel folding)",
                        self.ep
                    ),
                );
            }
        }
        Ok(())
    }

    /// pp: its stages of tp x cp GPUs within the cluster.
    fn check_pp(&self, gpus: u64) -> Result<(), LayoutError> {
        if self.pp == 0 {
            return zero("pp");
        }
        let tp = u64::from(self.tp) * u64::from(self.cp.max(1));
        let tp_pp = tp * u64::from(self.pp);
        if tp_pp > gpus {
            return bad(
                "pp",
                format!(
                    "{} stages of tp = {}{} need {tp_pp} GPUs but the cluster has {gpus}; valid: at most {}",
                    self.pp,
                    self.tp,
                    if self.cp > 1 { format!(" x cp = {}", self.cp) } else { String::new() },
                    gpus / tp
                ),
            );
        }
        Ok(())
    }

    /// The layers split into pp stages: evenly, or as `--stage-layers` lists them.
    fn check_stage_layers(&self, layers: u64) -> Result<(), LayoutError> {
        if self.stage_layers.is_empty() {
            if !layers.is_multiple_of(u64::from(self.pp)) {
                return bad(
                    "pp",
                    format!(
                        "{layers} layers do not split evenly into {} stages; give the layers of each stage with --stage-layers",
                        self.pp
                    ),
                );
            }
        } else {
            let given = &self.stage_layers;
            let sum = given.iter().try_fold(0u64, |a, &l| a.checked_add(l));
            let list = || {
                given
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            if given.len() != self.pp as usize {
                return bad(
                    "stage-layers",
                    format!(
                        "{} stages listed ({}) but pp is {}; valid: one layer count per pipeline stage",
                        given.len(),
                        list(),
                        self.pp
                    ),
                );
            }
            if given.contains(&0) || sum != Some(layers) {
                return bad(
                    "stage-layers",
                    format!(
                        "{} must be at least 1 layer per stage and add up to the model's {layers} layers",
                        list()
                    ),
                );
            }
        }
        Ok(())
    }

    /// vp and the schedule: virtual stages and the schedules other than 1F1B need a pipeline.
    fn check_vp_and_schedule(&self, layers: u64) -> Result<(), LayoutError> {
        if self.vp == 0 {
            return zero("vp");
        }
        if self.vp > 1 {
            let vp = u64::from(self.vp);
            if self.pp < 2 {
                return bad(
                    "vp",
                    format!(
                        "{} virtual stages need a pipeline; valid: 1 with pp = 1",
                        self.vp
                    ),
                );
            }
            // Chunks need not be even (Megatron-Core's pipeline layouts, `schedule::chunks`), but
            // the largest stage gives each chunk a layer at least.
            let most = self.stages(layers).into_iter().max().unwrap_or(0);
            if vp > most {
                return bad(
                    "vp",
                    format!(
                        "{} model chunks on stages of at most {most} layers leave chunks without a layer on every stage; valid: 1 to {most}",
                        self.vp
                    ),
                );
            }
            if self.schedule != Schedule::OneFOneB {
                return bad(
                    "vp",
                    format!(
                        "{} virtual stages with the {} schedule; valid: 1 (virtual stages interleave 1F1B)",
                        self.vp,
                        self.schedule.as_str()
                    ),
                );
            }
        }
        if self.schedule != Schedule::OneFOneB && self.pp < 2 {
            return bad(
                "schedule",
                format!(
                    "{} needs a pipeline; valid: 1f1b with pp = 1",
                    self.schedule.as_str()
                ),
            );
        }
        if self.schedule == Schedule::Dualpipe && !self.pp.is_multiple_of(2) {
            // DeepSeek-V3, section 3.2.1: "the pipeline stages and micro-batches be divisible by 2".
            return bad(
                "schedule",
                format!("dualpipe needs an even number of stages; pp is {}", self.pp),
            );
        }
        Ok(())
    }

    /// dp within the cluster left by tp x cp x pp; ep dividing dp and the model's experts.
    fn check_dp_and_ep(&self, gpus: u64, experts: u64) -> Result<(), LayoutError> {
        let tp_pp = u64::from(self.tp) * u64::from(self.cp.max(1)) * u64::from(self.pp);
        if self.dp == 0 {
            return zero("dp");
        }
        if self.world() > gpus {
            return bad(
                "dp",
                format!(
                    "tp x cp x pp x dp = {} GPUs but the cluster has {gpus}; valid: dp at most {}",
                    self.world(),
                    gpus / tp_pp
                ),
            );
        }
        if self.ep == 0 {
            return zero("ep");
        }
        if let Some(etp) = self.etp {
            self.check_folding(etp)?;
        } else if !self.dp.is_multiple_of(self.ep) {
            return bad(
                "ep",
                format!(
                    "expert parallelism splits data-parallel groups: ep must divide dp = {}",
                    self.dp
                ),
            );
        }
        if self.ep > 1 && experts == 0 {
            return bad(
                "ep",
                format!(
                    "ep = {} needs a mixture-of-experts model ({}); this one is dense (no \
                     experts): valid: ep = 1",
                    self.ep,
                    crate::model::PRESETS
                        .iter()
                        .filter(|(n, _)| crate::model::Model::preset(n).is_ok_and(|m| m.is_moe()))
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        if self.ep > 1 && !experts.is_multiple_of(u64::from(self.ep)) {
            return bad(
                "ep",
                format!(
                    "{experts} experts do not split evenly over ep = {}",
                    self.ep
                ),
            );
        }
        Ok(())
    }

    /// etp divides tp, and ep x etp divides tp x cp x dp: MoE parallel folding's
    /// ETP x EP x EDP = TP x CP x DP (Megatron-Core parallel_state.py `initialize_model_parallel`,
    /// which builds the expert groups from the same ranks as the tp x cp x dp ones).
    fn check_folding(&self, etp: u32) -> Result<(), LayoutError> {
        if etp == 0 || !self.tp.is_multiple_of(etp) {
            let valid: Vec<String> = (1..=self.tp)
                .filter(|d| self.tp.is_multiple_of(*d))
                .map(|d| d.to_string())
                .collect();
            return bad(
                "etp",
                format!(
                    "{etp}: expert tensor parallelism must divide tp = {}; valid: {}",
                    self.tp,
                    valid.join(", ")
                ),
            );
        }
        let ranks = u64::from(self.tp) * u64::from(self.cp.max(1)) * u64::from(self.dp);
        if !ranks.is_multiple_of(u64::from(self.ep) * u64::from(etp)) {
            let valid: Vec<String> = (1..=ranks / u64::from(etp))
                .filter(|e| ranks.is_multiple_of(e * u64::from(etp)))
                .map(|e| e.to_string())
                .collect();
            return bad(
                "ep",
                format!(
                    "ep x etp = {} must divide tp x cp x dp = {ranks} (MoE parallel folding); valid ep with etp {etp}: {}",
                    u64::from(self.ep) * u64::from(etp),
                    valid.join(", ")
                ),
            );
        }
        Ok(())
    }

    /// seq, micro-batch, global batch (a multiple of dp x micro-batch, of pp when interleaved, even for dualpipe) and zero.
    fn check_batch(&self) -> Result<(), LayoutError> {
        if !(crate::model::MIN_SEQ..=crate::model::MAX_SEQ).contains(&self.seq) {
            return bad(
                "seq",
                format!(
                    "{} tokens; valid: {} to {} (the shortest training sequence of a published \
                     pretraining recipe, BERT's, is {} tokens)",
                    self.seq,
                    crate::model::MIN_SEQ,
                    crate::model::MAX_SEQ,
                    crate::model::MIN_SEQ
                ),
            );
        }
        if !(1..=MAX_MICRO_BATCH).contains(&self.micro_batch) {
            return bad(
                "micro-batch",
                format!(
                    "{} sequences; valid: 1 to {MAX_MICRO_BATCH}",
                    self.micro_batch
                ),
            );
        }
        // dp < 2^32 and micro-batch <= 2^12: the product fits.
        let per_step = u64::from(self.dp) * self.micro_batch;
        if self.global_batch == 0
            || self.global_batch > MAX_GLOBAL_BATCH
            || !self.global_batch.is_multiple_of(per_step)
        {
            return bad(
                "global-batch",
                format!(
                    "the global batch {} must be a positive multiple of dp x micro-batch = {per_step}, at most {MAX_GLOBAL_BATCH}",
                    self.global_batch,
                ),
            );
        }
        if self.vp > 1 && !self.microbatches().is_multiple_of(u64::from(self.pp)) {
            // Megatron-LM's interleaved schedule runs micro-batches in groups of pp.
            return bad(
                "global-batch",
                format!(
                    "{} micro-batches per pipeline; the interleaved schedule (vp {}) needs a multiple of pp = {}",
                    self.microbatches(),
                    self.vp,
                    self.pp
                ),
            );
        }
        if self.schedule == Schedule::Dualpipe && !self.microbatches().is_multiple_of(2) {
            return bad(
                "global-batch",
                format!(
                    "{} micro-batches per pipeline; dualpipe feeds them from both ends and needs an even number",
                    self.microbatches()
                ),
            );
        }
        if self.zero > 3 {
            return bad("zero", format!("stage {}; valid: 0, 1, 2, 3", self.zero));
        }
        Ok(())
    }

    /// The rank of (tp, cp, dp, pp) coordinates.
    pub fn rank(&self, t: u32, c: u32, d: u32, p: u32) -> u32 {
        t + self.tp * (c + self.cp.max(1) * (d + self.dp * p))
    }

    /// The expert groups of pipeline stage `p`. The stage's tp x cp x dp ranks, in rank order
    /// (tp fastest, then cp, then dp), are regrouped as etp x ep x edp, etp fastest: Megatron-Core's
    /// parallel_state.py `initialize_model_parallel` builds its expert `RankGenerator` with order
    /// `tp-ep-dp` over the same ranks (tp = expert_tensor_parallel_size). So an expert-parallel
    /// group is ep ranks etp apart, and the ranks holding the same experts (expert data
    /// parallelism) are etp x ep apart. With etp = tp and cp = 1 this is expert parallelism inside
    /// each tensor rank's data-parallel group, blocks of ep consecutive data ranks.
    fn expert_groups(&self, p: u32, g: &mut Groups) {
        let cp = self.cp.max(1);
        let etp = self.etp().max(1);
        let stage = self.tp * cp * self.dp;
        let base = p * stage;
        let ep = self.ep.clamp(1, (stage / etp).max(1));
        let edp = (stage / (etp * ep)).max(1);
        for t in 0..etp {
            for k in 0..edp {
                g.ep.push((0..ep).map(|e| base + t + etp * (e + ep * k)).collect());
            }
            for e in 0..ep {
                g.edp
                    .push((0..edp).map(|k| base + t + etp * (e + ep * k)).collect());
            }
        }
        if self.folded() && etp > 1 {
            for b in 0..stage / etp {
                g.etp.push((0..etp).map(|t| base + t + etp * b).collect());
            }
        }
    }

    /// Every group of every kind.
    pub fn groups(&self) -> Groups {
        let cp = self.cp.max(1);
        let mut g = Groups {
            tp: Vec::new(),
            dp: Vec::new(),
            pp: Vec::new(),
            ep: Vec::new(),
            edp: Vec::new(),
            cp: Vec::new(),
            etp: Vec::new(),
        };
        for p in 0..self.pp {
            for d in 0..self.dp {
                for c in 0..cp {
                    g.tp.push((0..self.tp).map(|t| self.rank(t, c, d, p)).collect());
                }
                if cp > 1 {
                    for t in 0..self.tp {
                        g.cp.push((0..cp).map(|c| self.rank(t, c, d, p)).collect());
                    }
                }
            }
            for t in 0..self.tp {
                // Data and context parallel ranks together reduce the gradients.
                let dp: Vec<u32> = (0..self.dp)
                    .flat_map(|d| (0..cp).map(move |c| (c, d)))
                    .map(|(c, d)| self.rank(t, c, d, p))
                    .collect();
                g.dp.push(dp);
            }
            self.expert_groups(p, &mut g);
        }
        for d in 0..self.dp {
            for c in 0..cp {
                for t in 0..self.tp {
                    g.pp.push((0..self.pp).map(|p| self.rank(t, c, d, p)).collect());
                }
            }
        }
        g
    }
}
