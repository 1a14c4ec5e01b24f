//! Transformer models as data: presets compiled in, user models in TOML, and what they cost to train.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The feed-forward block: two matrices (GELU MLP, GPT) or three (SwiGLU, Llama).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FfnKind {
    Gelu,
    Swiglu,
}

impl FfnKind {
    fn matrices(self) -> u64 {
        match self {
            FfnKind::Gelu => 2,
            FfnKind::Swiglu => 3,
        }
    }
}

/// The longest sequence a model or `--seq` may give, tokens (1 Mi).
pub const MAX_SEQ: u64 = 1 << 20;

/// The largest global batch, sequences.
pub const MAX_GLOBAL_BATCH: u64 = 1 << 32;

/// The shortest sequence a model or `--seq` may give, tokens: the shortest of a published
/// pretraining recipe (BERT trains 90% of its steps on 128-token sequences: Devlin et al., 2019,
/// appendix A.2; decoder-only LLMs train on 1,024 to 8,192). A shorter one is not what the step
/// prices: attention over a handful of tokens runs no FlashAttention tile full (128 query rows for
/// the head dimensions of the presets), and with every dimension 1 a "step" came out at 0.97 ps.
pub const MIN_SEQ: u64 = 128;

/// The narrowest hidden and feed-forward widths a model may give: railyard prices a layer's
/// matrix multiplications as FLOPs at a fraction of the GPU's tensor-core peak
/// (`step::Peaks`), which holds only for GEMMs that fill the tensor cores' tiles. The smallest
/// tile NVIDIA's GEMMs run on Hopper is 64 rows (its `wgmma` instructions are m64nNk16: PTX ISA,
/// "Asynchronous warpgroup level matrix multiply"), and CUTLASS's smallest Ampere tiles are 64 x
/// 64; a narrower matrix leaves most of a tile idle and runs at a fraction of any efficiency
/// given.
pub const MIN_WIDTH: u64 = 64;

/// The smallest head dimension (hidden / heads): FlashAttention-2, whose memory the step counts
/// ([`Model::activation_bytes_per_token`]), is built for head dimensions 32 to 256 (its kernels
/// are instantiated for 32, 64, 96, ..., 256, and a smaller head is padded to 32, so its FLOPs
/// are not the model's).
pub const MIN_HEAD_DIM: u64 = 32;

/// The smallest vocabulary: a tokenizer covers at least the 256 byte values (byte-level BPE as
/// GPT-2's starts from them; ByT5 uses them alone), or some text has no tokens.
pub const MIN_VOCAB: u64 = 256;

/// A decoder-only transformer, dense or mixture-of-experts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    pub name: String,
    pub description: String,
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    /// Key/value heads (grouped-query attention); equal to `heads` for multi-head attention.
    pub kv_heads: u64,
    /// Feed-forward width of dense layers.
    pub ffn: u64,
    pub ffn_kind: FfnKind,
    pub vocab: u64,
    pub tied_embeddings: bool,
    /// Default training sequence length.
    pub seq: u64,
    /// Routed experts per MoE layer; 0 for a dense model.
    #[serde(default)]
    pub experts: u64,
    #[serde(default)]
    pub shared_experts: u64,
    /// Experts each token is routed to.
    #[serde(default)]
    pub top_k: u64,
    /// Feed-forward width of one expert (defaults to `ffn`).
    #[serde(default)]
    pub expert_ffn: u64,
    /// Leading layers that stay dense in an MoE model.
    #[serde(default)]
    pub dense_layers: u64,
    /// The head dimension of queries, keys and values where it is not hidden / heads (Qwen3-235B:
    /// 128 on hidden 4096 with 64 heads, its `config.json` `head_dim`); 0: hidden / heads. Not
    /// with multi-head latent attention, which has its own.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub head_dim: u64,
    /// Multi-head latent attention (DeepSeek-V2 and V3, arXiv 2412.19437 section 2.1.1; the key
    /// names are `config.json`'s): the rank of the compressed key-value latent, `d_c` (DeepSeek-V3:
    /// 512); 0: no latent attention. With it, [`Model::qk_nope_head_dim`],
    /// [`Model::qk_rope_head_dim`] and [`Model::v_head_dim`] are needed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kv_lora_rank: u64,
    /// The rank of the compressed query, `d_c'` (DeepSeek-V3: 1536); 0: queries projected from
    /// the hidden state directly (DeepSeek-V2-Lite).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub q_lora_rank: u64,
    /// A query's and key's per-head dimension without rotary embedding, `d_h` (DeepSeek-V3: 128).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub qk_nope_head_dim: u64,
    /// The decoupled rotary part of each query head, and of the one key all heads share, `d_h^R`
    /// (DeepSeek-V3: 64).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub qk_rope_head_dim: u64,
    /// A value's per-head dimension (DeepSeek-V3: 128).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub v_head_dim: u64,
    /// Multi-token prediction modules trained beside the model, `D` (DeepSeek-V3 section 2.2:
    /// D = 1; `config.json` `num_nextn_predict_layers`): each is a projection of 2h to h, one more
    /// transformer layer (an MoE layer in an MoE model) and the shared output head, run on the
    /// last pipeline stage as Megatron-Core places it. 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtp_layers: u64,
    /// Node-limited routing: the most nodes a token's experts may sit on, M (DeepSeek-V3 report,
    /// section 2.1.2: M = 4; `config.json` `topk_group`); 0: no limit. With expert parallelism
    /// over several servers, each token then crosses the network once per destination node and
    /// fans out over NVLink there (the `dispatch` module).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub node_limit: u64,
    /// Where `node_limit` is published (required with it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_limit_source: String,
    /// The published pipeline split where the layers do not divide evenly into the stages: the
    /// first and the last stage carry this many layers fewer than the others, which leaves room
    /// for the input embedding and the output layer and loss (Llama 3 405B: 1, "The Llama 3 Herd
    /// of Models", section 3.3.2). 0: no such rule (the layers must split evenly, or be given).
    #[serde(default)]
    pub first_last_stage_fewer_layers: u64,
    /// The published global batch, sequences of `seq` tokens, at the end of training (batch
    /// size ramps, where the recipe has one, are over by then); 0: not published. The default
    /// global batch of a step (the layout's `Layout::resolve`).
    #[serde(default)]
    pub global_batch: u64,
    /// Where `global_batch` is published (required with it).
    #[serde(default)]
    pub global_batch_source: String,
    pub source: String,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// An error in a model file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

macro_rules! model {
    ($name:literal) => {
        ($name, include_str!(concat!("../models/", $name, ".toml")))
    };
}

/// The built-in models.
pub const PRESETS: &[(&str, &str)] = &[
    model!("gpt3-175b"),
    model!("llama3-8b"),
    model!("llama3-70b"),
    model!("llama3-405b"),
    model!("mixtral-8x7b"),
    model!("deepseek-v3-like"),
    model!("deepseek-v3"),
];

/// Why a model field has the least value it has, for its error.
fn why_at_least(field: &str) -> &'static str {
    match field {
        "hidden" | "ffn" | "expert_ffn" => {
            " (narrower matrices fill no 64-row tensor-core tile, so the compute of a step at an \
             efficiency of the GPU's peak does not describe them)"
        }
        "vocab" => " (a tokenizer covers at least the 256 byte values)",
        "seq" => {
            " (the shortest training sequence of a published pretraining recipe, BERT's 128 \
             tokens)"
        }
        _ => "",
    }
}

impl Model {
    /// Parses and checks a model file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Model, ModelError> {
        let m: Model = toml::from_str(text).map_err(|e| {
            ModelError(format!(
                "{origin}: {}",
                railyard_catalog::toml_message(&e, text)
            ))
        })?;
        m.check()
            .map_err(|e| ModelError(format!("{origin}: {e}")))?;
        Ok(m)
    }

    /// A built-in model by name; the error lists the valid names.
    pub fn preset(name: &str) -> Result<Model, ModelError> {
        let (_, text) = PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            ModelError(format!(
                "unknown model `{name}`; valid: {}",
                PRESETS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        Model::parse(text, &format!("model {name}"))
    }

    /// Every field in its range and the fields consistent with each other: sizes, then attention,
    /// experts, and the published batch and stage split.
    fn check(&self) -> Result<(), String> {
        self.check_sizes()?;
        self.check_attention()?;
        self.check_experts()?;
        self.check_batch_and_stages()
    }

    /// Each size within its bounds.
    fn check_sizes(&self) -> Result<(), String> {
        // Bounds far past any model (DeepSeek-V3: 61 layers, 7,168 hidden, 256 experts, 129,280
        // vocab; Llama 3 405B: 126 layers, 16,384 hidden, 53,248 ffn), chosen so that every product
        // the step takes stays below 2^63: routed expert parameters below 3 x 2^55, a micro-batch's
        // routed activations (micro-batch x seq x hidden x 2 bytes x top_k) below 2^60. Below, the
        // least a model means anything at ([`MIN_WIDTH`], [`MIN_VOCAB`], [`MIN_SEQ`]): smaller
        // models gave sub-picosecond steps (issue 33).
        for (field, v, min, max) in [
            ("layers", self.layers, 1, 1u64 << 10),
            ("hidden", self.hidden, MIN_WIDTH, 1 << 17),
            ("heads", self.heads, 1, 1 << 16),
            ("kv_heads", self.kv_heads, 1, 1 << 16),
            ("ffn", self.ffn, MIN_WIDTH, 1 << 18),
            ("vocab", self.vocab, MIN_VOCAB, 1 << 24),
            ("seq", self.seq, MIN_SEQ, MAX_SEQ),
        ] {
            if !(min..=max).contains(&v) {
                return Err(format!(
                    "{field} {v} is out of range; valid: {min} to {max}{}",
                    why_at_least(field)
                ));
            }
        }
        // 0 where absent: no experts, an expert as wide as `ffn`.
        for (field, v, max) in [
            ("expert_ffn", self.expert_ffn, 1 << 18),
            ("experts", self.experts, 1 << 10),
            ("shared_experts", self.shared_experts, 1 << 10),
            ("top_k", self.top_k, 1 << 10),
        ] {
            if v > max {
                return Err(format!("{field} {v} is out of range; valid: at most {max}"));
            }
        }
        if self.expert_ffn != 0 && self.expert_ffn < MIN_WIDTH {
            return Err(format!(
                "expert_ffn {} is out of range; valid: 0 (as wide as ffn) or {MIN_WIDTH} to {}{}",
                self.expert_ffn,
                1 << 18,
                why_at_least("expert_ffn")
            ));
        }
        for (field, v) in [
            ("head_dim", self.head_dim),
            ("kv_lora_rank", self.kv_lora_rank),
            ("q_lora_rank", self.q_lora_rank),
            ("qk_nope_head_dim", self.qk_nope_head_dim),
            ("qk_rope_head_dim", self.qk_rope_head_dim),
            ("v_head_dim", self.v_head_dim),
        ] {
            if v > 1 << 17 {
                return Err(format!(
                    "{field} {v} is out of range; valid: at most {}",
                    1 << 17
                ));
            }
        }
        if self.mtp_layers > 1 << 4 {
            return Err(format!(
                "mtp_layers {} is out of range; valid: 0 to 16",
                self.mtp_layers
            ));
        }
        Ok(())
    }

    /// Attention's shape: multi-head latent attention's dimensions, or heads that split `hidden`
    /// into heads FlashAttention runs, grouped evenly over the key-value heads.
    fn check_attention(&self) -> Result<(), String> {
        if self.is_mla() {
            if self.head_dim != 0 {
                return Err(
                    "head_dim is not used with kv_lora_rank (multi-head latent attention): \
                            give qk_nope_head_dim, qk_rope_head_dim and v_head_dim; valid: \
                            head_dim 0"
                        .to_string(),
                );
            }
            for (field, v) in [
                ("qk_nope_head_dim", self.qk_nope_head_dim),
                ("v_head_dim", self.v_head_dim),
                ("kv_lora_rank", self.kv_lora_rank),
            ] {
                if v < MIN_HEAD_DIM {
                    return Err(format!(
                        "{field} {v} is out of range with kv_lora_rank (multi-head latent \
                         attention); valid: at least {MIN_HEAD_DIM}"
                    ));
                }
            }
        } else if self.q_lora_rank + self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim
            > 0
        {
            return Err(
                "q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim describe \
                        multi-head latent attention and need kv_lora_rank; valid: kv_lora_rank \
                        above 0, or none of them"
                    .to_string(),
            );
        }
        if self.head_dim != 0 && self.head_dim < MIN_HEAD_DIM {
            return Err(format!(
                "head_dim {} is out of range; valid: 0 (hidden / heads) or {MIN_HEAD_DIM} to {}",
                self.head_dim,
                1 << 17
            ));
        }
        if self.head_dim == 0 && !self.is_mla() && !self.hidden.is_multiple_of(self.heads) {
            return Err(format!(
                "hidden {} is not a multiple of heads {}",
                self.hidden, self.heads
            ));
        }
        if self.head_dim == 0 && !self.is_mla() && self.hidden / self.heads < MIN_HEAD_DIM {
            return Err(format!(
                "heads {} make heads of {} dimensions (hidden {} / heads); valid: heads at most \
                 {} (a head dimension of at least {MIN_HEAD_DIM}: FlashAttention-2 runs head \
                 dimensions 32 to 256)",
                self.heads,
                self.hidden / self.heads,
                self.hidden,
                self.hidden / MIN_HEAD_DIM
            ));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(format!(
                "heads {} is not a multiple of kv_heads {}",
                self.heads, self.kv_heads
            ));
        }
        Ok(())
    }

    /// The routed experts each token takes, and the node limit on them.
    fn check_experts(&self) -> Result<(), String> {
        if self.experts > 0 && (self.top_k == 0 || self.top_k > self.experts) {
            return Err(format!(
                "top_k {} must be 1 to experts ({})",
                self.top_k, self.experts
            ));
        }
        if self.node_limit > 0 && self.node_limit_source.trim().is_empty() {
            return Err(format!(
                "node_limit {} needs node_limit_source: where it is published",
                self.node_limit
            ));
        }
        if self.node_limit > self.top_k.max(1) || (self.node_limit > 0 && !self.is_moe()) {
            return Err(format!(
                "node_limit {} is out of range; valid: 0 (no limit) or 1 to top_k ({}) on an MoE \
                 model",
                self.node_limit, self.top_k
            ));
        }
        Ok(())
    }

    /// The published global batch (with its source) and the layers of the stage split.
    fn check_batch_and_stages(&self) -> Result<(), String> {
        if self.global_batch > 0 && self.global_batch_source.trim().is_empty() {
            return Err(format!(
                "global_batch {} needs global_batch_source: where it is published",
                self.global_batch
            ));
        }
        if self.global_batch > MAX_GLOBAL_BATCH {
            return Err(format!(
                "global_batch {}; valid: 0 (not published) to {}",
                self.global_batch, MAX_GLOBAL_BATCH
            ));
        }
        if self.first_last_stage_fewer_layers >= self.layers {
            return Err(format!(
                "first_last_stage_fewer_layers {} must be below layers {}",
                self.first_last_stage_fewer_layers, self.layers
            ));
        }
        if self.dense_layers > self.layers {
            return Err(format!(
                "dense_layers {} exceeds layers {}",
                self.dense_layers, self.layers
            ));
        }
        Ok(())
    }

    /// The model's own split into `pp` pipeline stages where its layers do not split evenly: the
    /// first and last stage [`Model::first_last_stage_fewer_layers`] fewer than the rest, which
    /// all carry the same (126 layers on 16 stages with 1 fewer: 7, 8 x 14, 7). Empty when the
    /// layers split evenly, when the model has no such rule, or when the rule does not fit `pp`.
    pub fn uneven_stages(&self, pp: u32) -> Vec<u64> {
        let (n, pp) = (self.first_last_stage_fewer_layers, u64::from(pp));
        if n == 0 || pp < 2 || self.layers.is_multiple_of(pp) {
            return Vec::new();
        }
        let padded = self.layers + 2 * n;
        if !padded.is_multiple_of(pp) || padded / pp <= n {
            return Vec::new();
        }
        let per = padded / pp;
        let mut stages = vec![per; pp as usize];
        stages[0] = per - n;
        stages[pp as usize - 1] = per - n;
        stages
    }

    /// MoE layers of each pipeline stage whose layers are `stages` (stage 0 first): the first
    /// [`Model::dense_layers`] layers are dense.
    pub fn moe_layers_per_stage(&self, stages: &[u64]) -> Vec<u64> {
        let mut start = 0u64;
        stages
            .iter()
            .map(|&l| {
                let end = start.saturating_add(l);
                let moe = if self.is_moe() {
                    end.saturating_sub(start.max(self.dense_layers))
                } else {
                    0
                };
                start = end;
                moe
            })
            .collect()
    }

    pub fn is_moe(&self) -> bool {
        self.experts > 0
    }

    /// The intermediate width of one expert: `expert_ffn`, else the dense `ffn`.
    pub fn expert_ffn_width(&self) -> u64 {
        self.expert_width()
    }

    fn expert_width(&self) -> u64 {
        if self.expert_ffn > 0 {
            self.expert_ffn
        } else {
            self.ffn
        }
    }

    /// MoE layers (the rest are dense).
    pub fn moe_layers(&self) -> u64 {
        if self.is_moe() {
            self.layers - self.dense_layers
        } else {
            0
        }
    }

    /// Multi-head latent attention ([`Model::kv_lora_rank`] above 0).
    pub fn is_mla(&self) -> bool {
        self.kv_lora_rank > 0
    }

    /// A query's and key's head dimension: `head_dim` (default hidden / heads), or with latent
    /// attention the part without and the part with rotary embedding (DeepSeek-V3: 128 + 64).
    pub fn qk_head_dim(&self) -> u64 {
        if self.is_mla() {
            self.qk_nope_head_dim + self.qk_rope_head_dim
        } else if self.head_dim > 0 {
            self.head_dim
        } else {
            self.hidden / self.heads
        }
    }

    /// A value's head dimension: as the query's, or latent attention's `v_head_dim`.
    pub fn value_head_dim(&self) -> u64 {
        if self.is_mla() {
            self.v_head_dim
        } else {
            self.qk_head_dim()
        }
    }

    /// The attention core's width, the mean of the query-key and the value widths over all heads:
    /// its forward is 4 x tokens x keys x this FLOPs (2 for Q K^T over the query-key width, 2 for
    /// the values over theirs). hidden for standard attention with hidden / heads heads; DeepSeek-V3:
    /// 128 x (192 + 128) / 2 = 20,480.
    pub fn attention_width(&self) -> u64 {
        self.heads * (self.qk_head_dim() + self.value_head_dim()) / 2
    }

    /// One layer's attention projections as (input width, output width), in the order they run, the
    /// output projection last. Standard (grouped-query) attention: Q, K and V from h, O back to h.
    /// Latent attention (DeepSeek-V3 report, section 2.1.1, equations 1-11): the query down- and
    /// up-projections (h to d_c', d_c' to heads x (d_h + d_h^R)), the joint key-value
    /// down-projection with the shared rotary key (h to d_c + d_h^R), the key-value up-projection
    /// (d_c to heads x (d_h + d_v)), and O (heads x d_v to h).
    pub fn attention_projections(&self) -> Vec<(u64, u64)> {
        let (h, heads) = (self.hidden, self.heads);
        let (qk, v) = (self.qk_head_dim(), self.value_head_dim());
        if self.is_mla() {
            let mut p = Vec::new();
            if self.q_lora_rank > 0 {
                p.push((h, self.q_lora_rank));
                p.push((self.q_lora_rank, heads * qk));
            } else {
                p.push((h, heads * qk));
            }
            p.push((h, self.kv_lora_rank + self.qk_rope_head_dim));
            p.push((self.kv_lora_rank, heads * (self.qk_nope_head_dim + v)));
            p.push((heads * v, h));
            p
        } else {
            vec![(h, heads * qk + self.kv_heads * (qk + v)), (heads * v, h)]
        }
    }

    /// Parameters of one layer's attention: the weights of [`Model::attention_projections`]
    /// (standard attention with hidden / heads heads: Q and O h x h, K and V h x kv_heads x
    /// head_dim).
    pub fn attention_params(&self) -> u64 {
        self.attention_projections()
            .iter()
            .map(|(i, o)| i * o)
            .sum()
    }

    /// Parameters of one MoE layer: routed and shared experts and the router (attention apart).
    fn moe_block_params(&self) -> u64 {
        (self.experts + self.shared_experts) * self.expert_params() + self.hidden * self.experts
    }

    /// Parameters of one multi-token prediction module as the last stage holds them: its layer
    /// (an MoE layer in an MoE model) and its 2h-to-h projection (DeepSeek-V3 report, section
    /// 2.2: the embedding and the output head are shared with the main model).
    pub fn mtp_module_params(&self) -> u64 {
        let block = if self.is_moe() {
            self.moe_block_params()
        } else {
            self.dense_ffn_params()
        };
        self.attention_params() + block + 2 * self.hidden * self.hidden
    }

    /// Parameters one token's matrix multiplications touch in one multi-token prediction module:
    /// its layer (the top-k and shared experts and the router in an MoE model), its projection,
    /// and the shared output head, which it runs again.
    fn mtp_active_params(&self) -> u64 {
        let block = if self.is_moe() {
            (self.top_k + self.shared_experts) * self.expert_params() + self.hidden * self.experts
        } else {
            self.dense_ffn_params()
        };
        self.attention_params() + block + 2 * self.hidden * self.hidden + self.vocab * self.hidden
    }

    /// Parameters of one dense layer's FFN.
    pub fn dense_ffn_params(&self) -> u64 {
        self.ffn_kind.matrices() * self.hidden * self.ffn
    }

    /// Parameters of one expert (routed or shared).
    pub fn expert_params(&self) -> u64 {
        self.ffn_kind.matrices() * self.hidden * self.expert_width()
    }

    /// Activation bytes one token of a micro-batch leaves stored in one layer for the backward
    /// pass, before tensor parallelism divides them (`moe`: an MoE layer, else a dense one). The
    /// accounting is Korthikanti et al.'s, "Reducing Activation Recomputation in Large Transformer
    /// Models" (MLSys 2023, arXiv 2205.05198, section 4.1): count each tensor the backward pass
    /// reads, 2 bytes a value in BF16. Applied to the layer as the presets have it and train it:
    /// - two norms, each keeping its input: 2 x 2h;
    /// - attention: the QKV projections' input (2h), Q (2h), K and V (2 x 2h_kv, grouped-query
    ///   attention: h_kv = h x kv_heads / heads), the output projection's input (2h), and
    ///   FlashAttention's softmax statistics (4 bytes a head, FP32) in place of the attention
    ///   scores, which it recomputes (the paper's selective recomputation of its 5as/h term);
    ///   with other head dimensions ([`Model::qk_head_dim`], [`Model::value_head_dim`]) Q, K, V
    ///   and the output projection's input take their widths; latent attention keeps K and V for
    ///   every head (FlashAttention runs on the up-projected heads) and each latent (d_c', d_c)
    ///   twice, its norm's input and the up-projection's ([`Model::mla_latent_bytes_per_token`]);
    /// - a dense feed-forward block: its input (2h), then GELU's input and output (2 x 2f) or
    ///   SwiGLU's gate, up and product (3 x 2f);
    /// - an MoE block: its input (2h: the router's and the shared experts'), the router's
    ///   probabilities (4 bytes an expert, FP32), for each of the token's top-k copies the
    ///   expert's input (2h) and its feed-forward intermediates, and the shared experts'
    ///   intermediates. Not the experts' outputs: Megatron-Core multiplies the routing weight
    ///   into the activation before the second GEMM (`activation_func_with_probs` in
    ///   megatron/core/transformer/moe/experts.py: `self.activation_func(x) * probs`), so the
    ///   weight's gradient reads the activation's input, already kept, and the combine that sums
    ///   the copies keeps nothing.
    ///
    /// No dropout: the presets' recipes train without it. The paper's GPT layer (h_kv = h,
    /// f = 4h, GELU) with its two byte-wide dropout masks after attention and the MLP is 34h;
    /// this gives 32h for it (tested).
    pub fn activation_bytes_per_token(&self, moe: bool) -> f64 {
        let h = self.hidden as f64;
        let intermediates = |f: u64| match self.ffn_kind {
            FfnKind::Gelu => 4.0 * f as f64,
            FfnKind::Swiglu => 6.0 * f as f64,
        };
        let norms = 4.0 * h;
        let attention = 2.0 * h
            + self.qkv_bytes_per_token()
            + 2.0 * (self.heads * self.value_head_dim()) as f64
            + 4.0 * self.heads as f64
            + 2.0 * self.mla_latent_bytes_per_token();
        let ffn = if moe {
            2.0 * h
                + 4.0 * self.experts as f64
                + self.top_k as f64 * (2.0 * h + intermediates(self.expert_width()))
                + self.shared_experts as f64 * intermediates(self.expert_width())
        } else {
            2.0 * h + intermediates(self.ffn)
        };
        norms + attention + ffn
    }

    /// Of [`Model::activation_bytes_per_token`], the attention's Q, K and V, BF16 bytes a token:
    /// 2 (heads x qk + kv x (qk + v)) with kv the key-value heads, every head with latent
    /// attention (its K and V are up-projected per head).
    pub fn qkv_bytes_per_token(&self) -> f64 {
        let kv = if self.is_mla() {
            self.heads
        } else {
            self.kv_heads
        };
        let (qk, v) = (self.qk_head_dim(), self.value_head_dim());
        2.0 * (self.heads * qk + kv * (qk + v)) as f64
    }

    /// Latent attention's compressed query and key-value latents, BF16 bytes a token, counted once
    /// (2 (d_c' + d_c)); 0 without latent attention.
    pub fn mla_latent_bytes_per_token(&self) -> f64 {
        if self.is_mla() {
            2.0 * (self.q_lora_rank + self.kv_lora_rank) as f64
        } else {
            0.0
        }
    }

    /// Of [`Model::activation_bytes_per_token`] of an MoE layer, the routed experts' inputs: a BF16
    /// copy of the token for each of the top-k experts it goes to, 2h each (0 for a dense model).
    pub fn expert_input_bytes_per_token(&self) -> f64 {
        if self.is_moe() {
            2.0 * self.hidden as f64 * self.top_k as f64
        } else {
            0.0
        }
    }

    /// Parameters of the routed experts, which expert parallelism splits over its ranks (shared
    /// experts and routers stay whole on every rank).
    pub fn routed_expert_params(&self) -> u64 {
        self.moe_layers() * self.experts * self.expert_params()
    }

    /// All parameters (embeddings once if tied), ignoring norms and biases.
    pub fn params(&self) -> u64 {
        let dense = self.layers - self.moe_layers();
        let embed = self.vocab * self.hidden * if self.tied_embeddings { 1 } else { 2 };
        self.layers * self.attention_params()
            + dense * self.dense_ffn_params()
            + self.moe_layers() * self.moe_block_params()
            + self.mtp_layers * self.mtp_module_params()
            + embed
    }

    /// Parameters one token's matrix multiplications touch: attention, the dense FFN or the routed and
    /// shared experts, the router, and the output projection (the input embedding is a lookup),
    /// and those of the multi-token prediction modules.
    pub fn active_matmul_params(&self) -> u64 {
        let dense = self.layers - self.moe_layers();
        let per_moe =
            (self.top_k + self.shared_experts) * self.expert_params() + self.hidden * self.experts;
        self.layers * self.attention_params()
            + dense * self.dense_ffn_params()
            + self.moe_layers() * per_moe
            + self.vocab * self.hidden
            + self.mtp_layers * self.mtp_active_params()
    }

    /// Training FLOPs per token at sequence length `seq`: 6 x the matmul parameters a token touches
    /// (2 forward, 4 backward) plus attention scores and values, 12 x layers x seq x hidden
    /// (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
    /// Megatron-LM", SC'21, eq. 3, whose GPT case is 72 l h^2 + 12 l s h + 6 V h per token).
    /// Activation recomputation adds one more forward pass (8 instead of 6, 16 instead of 12).
    /// The multi-token prediction modules' layers count as layers.
    pub fn train_flops_per_token(&self, seq: u64, recompute: bool) -> f64 {
        let matmul = if recompute { 8.0 } else { 6.0 };
        matmul * self.active_matmul_params() as f64
            + (self.layers + self.mtp_layers) as f64
                * self.attention_flops_per_token(seq, recompute)
    }

    /// `train_flops_per_token` with the attention scores and values counted under the causal mask:
    /// half the 12 x seq x width (16 with recomputation) of each layer, the other half being the
    /// masked upper triangle that FlashAttention skips. Which of the two a published figure counts
    /// is a convention of its source: PaLM's MFU (arXiv 2204.02311, appendix B) and Megatron-LM's
    /// first `num_floating_point_operations` count the whole matrix; Megatron-LM's later one
    /// (NVIDIA/Megatron-LM megatron/training/training.py@001b00c, `attn_layer_flops`: `seq_len /
    /// 2`) counts half. At 8K tokens the two differ by a few percent; at 128K by 1.4x.
    pub fn train_flops_per_token_causal(&self, seq: u64, recompute: bool) -> f64 {
        self.train_flops_per_token(seq, recompute)
            - 0.5
                * (self.layers + self.mtp_layers) as f64
                * self.attention_flops_per_token(seq, recompute)
    }

    /// One layer's attention scores and values per token, forward and backward (and the forward
    /// again with recomputation): 12 x seq x width, 16 with recomputation (the attention term of
    /// [`Model::train_flops_per_token`]'s equation, whose width is hidden; here
    /// [`Model::attention_width`], which is hidden for standard attention).
    pub fn attention_flops_per_token(&self, seq: u64, recompute: bool) -> f64 {
        let attn = if recompute { 16.0 } else { 12.0 };
        attn * (seq * self.attention_width()) as f64
    }

    /// [`Model::train_flops_per_token`] in two parts: the linear layers' GEMMs inside the
    /// transformer layers (attention projections, dense FFN, experts), which FP8 training runs in
    /// FP8, and the rest (attention scores and values, the router, the output layer), which it keeps
    /// in BF16 (DeepSeek-V3 Technical Report, section 3.3: "the embedding module, the output head,
    /// MoE gating modules, normalization operators, and attention operators" stay in their
    /// original precision). The two add up to `train_flops_per_token`.
    pub fn train_flops_split(&self, seq: u64, recompute: bool) -> (f64, f64) {
        let matmul = if recompute { 8.0 } else { 6.0 };
        let kept = (self.vocab * self.hidden) * (1 + self.mtp_layers)
            + (self.moe_layers() + self.mtp_layers * u64::from(self.is_moe()))
                * self.hidden
                * self.experts;
        let linear = matmul * (self.active_matmul_params() - kept) as f64;
        let rest = matmul * kept as f64
            + (self.layers + self.mtp_layers) as f64
                * self.attention_flops_per_token(seq, recompute);
        (linear, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_flops_halve_only_the_attention_matrix() {
        // Llama 3 405B: 6 x the matmul parameters plus 6 s h a layer under the causal mask, 12 s h
        // without; at 128K the attention is 1.4x of the whole count's difference.
        let m = Model::preset("llama3-405b").unwrap();
        let (l, h) = (m.layers as f64, m.hidden as f64);
        for seq in [8192u64, 131_072] {
            let s = seq as f64;
            let full = m.train_flops_per_token(seq, false);
            let causal = m.train_flops_per_token_causal(seq, false);
            let six_n = 6.0 * m.active_matmul_params() as f64;
            assert!((full - (six_n + 12.0 * l * s * h)).abs() < 1e-6 * full);
            assert!((causal - (six_n + 6.0 * l * s * h)).abs() < 1e-6 * causal);
        }
        let r = m.train_flops_per_token_causal(131_072, false)
            / m.train_flops_per_token(131_072, false);
        assert!((0.70..0.73).contains(&r), "{r}");
    }

    #[test]
    fn every_preset_parses() {
        for (name, _) in PRESETS {
            let m = Model::preset(name).unwrap();
            assert_eq!(&m.name, name);
        }
    }

    /// Published parameter counts: GPT-3 175.0B, Llama 3 8.0B / 70.6B / 405.9B, Mixtral 46.7B total and
    /// 12.9B active, DeepSeek-V3 671B total and 37B active (norms and biases ignored here; MLA modelled
    /// as standard attention, so the DeepSeek-like model is a little larger).
    #[test]
    fn parameter_counts_match_published_sizes() {
        let close = |name: &str, want: f64, tol: f64| {
            let got = Model::preset(name).unwrap().params() as f64 / 1e9;
            assert!(
                (got - want).abs() / want < tol,
                "{name}: {got:.1}B vs {want}B"
            );
        };
        close("gpt3-175b", 175.0, 0.02);
        close("llama3-8b", 8.03, 0.02);
        close("llama3-70b", 70.6, 0.02);
        close("llama3-405b", 405.9, 0.02);
        close("mixtral-8x7b", 46.7, 0.02);
        close("deepseek-v3-like", 671.0, 0.06);
        // With latent attention the main model is the published 671B within 0.1%; its MTP module
        // adds 11.6B besides the shared embedding and head (the published checkpoint's 685B counts
        // the MTP module's own copies of them too).
        let v3 = Model::preset("deepseek-v3").unwrap();
        let main = (v3.params() - v3.mtp_layers * v3.mtp_module_params()) as f64 / 1e9;
        assert!(
            (main - 671.0).abs() / 671.0 < 0.001,
            "deepseek-v3 {main:.2}B"
        );
        assert_eq!(v3.attention_params(), 187_105_280);
        let mtp = v3.mtp_module_params() as f64 / 1e9;
        assert!((mtp - 11.6).abs() < 0.05, "deepseek-v3 MTP {mtp:.2}B");
        let mixtral = Model::preset("mixtral-8x7b").unwrap();
        let active = (mixtral.active_matmul_params() + mixtral.vocab * mixtral.hidden) as f64 / 1e9;
        assert!(
            (active - 12.9).abs() / 12.9 < 0.03,
            "mixtral active {active:.1}B"
        );
    }

    /// DeepSeek-V3's latent attention (report, section 2.1.1): 128 heads of 192-wide queries and
    /// keys (128 + 64 rotary) and 128-wide values, so the attention core is 128 x (192 + 128) / 2
    /// = 20,480 wide against standard attention's hidden 7,168; the per-layer projections are
    /// 7168 x 1536 + 1536 x 24576 + 7168 x 576 + 512 x 32768 + 16384 x 7168 weights.
    #[test]
    fn latent_attention_has_its_published_shapes() {
        let v3 = Model::preset("deepseek-v3").unwrap();
        let like = Model::preset("deepseek-v3-like").unwrap();
        assert_eq!((v3.qk_head_dim(), v3.value_head_dim()), (192, 128));
        assert_eq!(v3.attention_width(), 20_480);
        assert_eq!(like.attention_width(), like.hidden);
        assert_eq!(
            v3.attention_projections(),
            vec![
                (7168, 1536),
                (1536, 128 * 192),
                (7168, 512 + 64),
                (512, 128 * 256),
                (128 * 128, 7168)
            ]
        );
        assert_eq!(
            v3.attention_flops_per_token(4096, false),
            12.0 * 4096.0 * 20_480.0
        );
        // Q, K and V of every head, then the two latents counted once.
        assert_eq!(
            v3.qkv_bytes_per_token(),
            2.0 * 128.0 * (192.0 + 192.0 + 128.0)
        );
        assert_eq!(v3.mla_latent_bytes_per_token(), 2.0 * (1536.0 + 512.0));
        // The MTP module's layer, projection and a second pass of the output head are FLOPs.
        let no_mtp = Model {
            mtp_layers: 0,
            ..v3.clone()
        };
        let extra =
            v3.train_flops_per_token(4096, false) - no_mtp.train_flops_per_token(4096, false);
        let layer = 6.0 * (v3.attention_params() + 9 * v3.expert_params() + 7168 * 256) as f64
            + v3.attention_flops_per_token(4096, false);
        let want = layer + 6.0 * (2 * 7168 * 7168 + 129_280 * 7168) as f64;
        assert!((extra - want).abs() / want < 1e-12, "{extra} vs {want}");
    }

    /// `head_dim` sets the heads' width where it is not hidden / heads; the latent attention keys
    /// come together or not at all.
    #[test]
    fn head_dim_and_latent_keys_are_checked() {
        let base = include_str!("../models/llama3-8b.toml");
        let qwen = format!("{base}head_dim = 256\n");
        let m = Model::parse(&qwen, "m.toml").unwrap();
        assert_eq!(m.qk_head_dim(), 256);
        // 32 heads of 256 for Q and O, 8 of 256 for K and V, on hidden 4096.
        assert_eq!(
            m.attention_params(),
            4096 * (32 * 256 + 8 * 512) + 32 * 256 * 4096
        );
        let bad = format!("{base}q_lora_rank = 1536\n");
        assert!(Model::parse(&bad, "m.toml")
            .unwrap_err()
            .0
            .contains("need kv_lora_rank"));
        let v3 = include_str!("../models/deepseek-v3.toml");
        let both = format!("{v3}head_dim = 128\n");
        assert!(Model::parse(&both, "m.toml")
            .unwrap_err()
            .0
            .contains("head_dim is not used with kv_lora_rank"));
    }

    #[test]
    fn gpt3_flops_follow_megatron_formula() {
        let m = Model::preset("gpt3-175b").unwrap();
        let (l, h, s, v) = (96.0, 12288.0, 2048.0, 50257.0);
        let megatron = 72.0 * l * h * h + 12.0 * l * s * h + 6.0 * v * h;
        let ours = m.train_flops_per_token(2048, false);
        assert!(
            (ours - megatron).abs() / megatron < 1e-9,
            "{ours} vs {megatron}"
        );
    }

    #[test]
    fn bad_models_are_rejected_with_the_field() {
        let e = Model::parse("name = \"x\"\n", "m.toml").unwrap_err();
        assert!(e.0.contains("m.toml"), "{e}");
        let text = Model::preset("llama3-8b")
            .map(|m| toml::to_string(&m).unwrap())
            .unwrap()
            .replace("kv_heads = 8", "kv_heads = 7");
        assert!(Model::parse(&text, "m.toml")
            .unwrap_err()
            .0
            .contains("kv_heads"));
    }

    /// Regression (issue 33): `train --model-file` with every dimension 1 was taken and printed a
    /// 0.97 ps step. Each dimension below the least a model means anything at is refused naming
    /// the field, the valid range and why; the presets and a model at every minimum read.
    #[test]
    fn regression_train_took_a_model_of_ones() {
        let ones = "name = \"ones\"\ndescription = \"d\"\nsource = \"s\"\nffn_kind = \"gelu\"\n\
                    tied_embeddings = true\nlayers = 1\nhidden = 1\nheads = 1\nkv_heads = 1\n\
                    ffn = 1\nvocab = 1\nseq = 1\n";
        let e = Model::parse(ones, "ones.toml").unwrap_err();
        assert_eq!(
            e.0,
            "ones.toml: hidden 1 is out of range; valid: 64 to 131072 (narrower matrices fill no \
             64-row tensor-core tile, so the compute of a step at an efficiency of the GPU's peak \
             does not describe them)"
        );
        let least = ones
            .replace("hidden = 1", "hidden = 64")
            .replace("ffn = 1", "ffn = 64")
            .replace("vocab = 1", "vocab = 256")
            .replace("seq = 1", "seq = 128");
        let m = Model::parse(&least, "least.toml").unwrap();
        assert_eq!((m.hidden, m.ffn, m.vocab, m.seq), (64, 64, 256, 128));
        for (from, to, says) in [
            ("ffn = 64", "ffn = 63", "ffn 63 is out of range; valid: 64 to 262144"),
            ("vocab = 256", "vocab = 255", "vocab 255 is out of range; valid: 256 to 16777216 (a tokenizer covers at least the 256 byte values)"),
            ("seq = 128", "seq = 127", "seq 127 is out of range; valid: 128 to 1048576"),
            ("layers = 1", "layers = 0", "layers 0 is out of range; valid: 1 to 1024"),
            ("heads = 1", "heads = 4", "heads 4 make heads of 16 dimensions (hidden 64 / heads); valid: heads at most 2"),
        ] {
            let e = Model::parse(&least.replace(from, to), "m.toml").unwrap_err();
            assert!(e.0.starts_with(&format!("m.toml: {says}")), "{e}");
        }
        let moe = format!("{least}experts = 2\ntop_k = 1\nexpert_ffn = 32\n");
        let e = Model::parse(&moe, "m.toml").unwrap_err();
        assert!(
            e.0.starts_with(
                "m.toml: expert_ffn 32 is out of range; valid: 0 (as wide as ffn) or 64 to 262144"
            ),
            "{e}"
        );
        for (name, _) in PRESETS {
            Model::preset(name).unwrap();
        }
    }
}
