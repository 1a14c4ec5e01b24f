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

    fn check(&self) -> Result<(), String> {
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
        if !self.hidden.is_multiple_of(self.heads) {
            return Err(format!(
                "hidden {} is not a multiple of heads {}",
                self.hidden, self.heads
            ));
        }
        if self.hidden / self.heads < MIN_HEAD_DIM {
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
        if self.experts > 0 && (self.top_k == 0 || self.top_k > self.experts) {
            return Err(format!(
                "top_k {} must be 1 to experts ({})",
                self.top_k, self.experts
            ));
        }
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

    /// Parameters of one layer's attention: Q and O are h x h, K and V are h x (kv_heads x head_dim).
    pub fn attention_params(&self) -> u64 {
        let head_dim = self.hidden / self.heads;
        2 * self.hidden * self.hidden + 2 * self.hidden * self.kv_heads * head_dim
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
    /// - a dense feed-forward block: its input (2h), then GELU's input and output (2 x 2f) or
    ///   SwiGLU's gate, up and product (3 x 2f);
    /// - an MoE block: its input (2h: the router's and the shared experts'), the router's
    ///   probabilities (4 bytes an expert, FP32), for each of the token's top-k copies the
    ///   expert's input and output (2 x 2h; the output for the routing weight's gradient) and its
    ///   feed-forward intermediates, and the shared experts' intermediates.
    ///
    /// No dropout: the presets' recipes train without it. The paper's GPT layer (h_kv = h,
    /// f = 4h, GELU) with its two byte-wide dropout masks after attention and the MLP is 34h;
    /// this gives 32h for it (tested).
    pub fn activation_bytes_per_token(&self, moe: bool) -> f64 {
        let h = self.hidden as f64;
        let kv = h * self.kv_heads as f64 / self.heads.max(1) as f64;
        let intermediates = |f: u64| match self.ffn_kind {
            FfnKind::Gelu => 4.0 * f as f64,
            FfnKind::Swiglu => 6.0 * f as f64,
        };
        let norms = 4.0 * h;
        let attention = 6.0 * h + 4.0 * kv + 4.0 * self.heads as f64;
        let ffn = if moe {
            2.0 * h
                + 4.0 * self.experts as f64
                + self.top_k as f64 * (4.0 * h + intermediates(self.expert_width()))
                + self.shared_experts as f64 * intermediates(self.expert_width())
        } else {
            2.0 * h + intermediates(self.ffn)
        };
        norms + attention + ffn
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
        let per_moe = (self.experts + self.shared_experts) * self.expert_params()
            + self.hidden * self.experts;
        let embed = self.vocab * self.hidden * if self.tied_embeddings { 1 } else { 2 };
        self.layers * self.attention_params()
            + dense * self.dense_ffn_params()
            + self.moe_layers() * per_moe
            + embed
    }

    /// Parameters one token's matrix multiplications touch: attention, the dense FFN or the routed and
    /// shared experts, the router, and the output projection (the input embedding is a lookup).
    pub fn active_matmul_params(&self) -> u64 {
        let dense = self.layers - self.moe_layers();
        let per_moe =
            (self.top_k + self.shared_experts) * self.expert_params() + self.hidden * self.experts;
        self.layers * self.attention_params()
            + dense * self.dense_ffn_params()
            + self.moe_layers() * per_moe
            + self.vocab * self.hidden
    }

    /// Training FLOPs per token at sequence length `seq`: 6 x the matmul parameters a token touches
    /// (2 forward, 4 backward) plus attention scores and values, 12 x layers x seq x hidden
    /// (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
    /// Megatron-LM", SC'21, eq. 3, whose GPT case is 72 l h^2 + 12 l s h + 6 V h per token).
    /// Activation recomputation adds one more forward pass (8 instead of 6, 16 instead of 12).
    pub fn train_flops_per_token(&self, seq: u64, recompute: bool) -> f64 {
        let matmul = if recompute { 8.0 } else { 6.0 };
        matmul * self.active_matmul_params() as f64
            + self.layers as f64 * self.attention_flops_per_token(seq, recompute)
    }

    /// One layer's attention scores and values per token, forward and backward (and the forward
    /// again with recomputation): 12 x seq x hidden, 16 with recomputation (the attention term of
    /// [`Model::train_flops_per_token`]'s equation).
    pub fn attention_flops_per_token(&self, seq: u64, recompute: bool) -> f64 {
        let attn = if recompute { 16.0 } else { 12.0 };
        attn * (seq * self.hidden) as f64
    }

    /// [`Model::train_flops_per_token`] in two parts: the linear layers' GEMMs inside the
    /// transformer layers (attention projections, dense FFN, experts), which FP8 training runs in
    /// FP8, and the rest (attention scores and values, the router, the output layer), which it keeps
    /// in BF16 (DeepSeek-V3 Technical Report, section 3.3: "the embedding module, the output head,
    /// MoE gating modules, normalization operators, and attention operators" stay in their
    /// original precision). The two add up to `train_flops_per_token`.
    pub fn train_flops_split(&self, seq: u64, recompute: bool) -> (f64, f64) {
        let matmul = if recompute { 8.0 } else { 6.0 };
        let kept = self.vocab * self.hidden + self.moe_layers() * self.hidden * self.experts;
        let linear = matmul * (self.active_matmul_params() - kept) as f64;
        let rest = matmul * kept as f64
            + self.layers as f64 * self.attention_flops_per_token(seq, recompute);
        (linear, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mixtral = Model::preset("mixtral-8x7b").unwrap();
        let active = (mixtral.active_matmul_params() + mixtral.vocab * mixtral.hidden) as f64 / 1e9;
        assert!(
            (active - 12.9).abs() / 12.9 < 0.03,
            "mixtral active {active:.1}B"
        );
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
