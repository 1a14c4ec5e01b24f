//! What one GPU holds in training: the model state of its pipeline stage (weights, gradients,
//! optimizer state, sharded as ZeRO says) and the activations the schedule keeps in flight.

use crate::model::{FfnKind, Model};
use crate::parallelism::Parallelism;
use crate::recompute::{Module, Modules};
use crate::schedule::Schedule;

/// Bytes of model state one GPU holds in mixed-precision Adam training: 2 per parameter of BF16
/// weights (1 with [`Parallelism::fp8_params`]), 4 of FP32 gradients (2 with [`Parallelism::grad_bf16`]: [`Parallelism::grad_bytes`])
/// and 12 of optimizer state (FP32 master weights, momentum and variance) — 18 bytes per parameter
/// as Megatron-LM counts them (`theoretical_memory_usage.py`: 6 + 12/d with the distributed
/// optimizer), 16 with BF16 gradients as Rajbhandari et al. count them ("ZeRO: Memory
/// Optimizations Toward Training Trillion Parameter Models", SC'20, section 3.1, FP16 gradients).
/// A rank holds 1/tp of its pipeline stage's dense
/// parameters and 1/(etp x ep) of its routed experts ([`stage_params`]: a stage's layers, and the
/// embedding on the first stage and the output layer on the last); ZeRO-1 shards the optimizer
/// state over the ranks that reduce those gradients (dp, or dp/ep for experts), ZeRO-2 the
/// gradients too (P_os+g), ZeRO-3 the weights as well (P_os+g+p). This is the fullest stage's;
/// activations come on top ([`Memory`]).
pub fn model_state_bytes(model: &Model, par: &Parallelism) -> f64 {
    stage_state_bytes(model, par)
        .into_iter()
        .fold(0.0, f64::max)
}

/// Bytes of AdamW state a parameter: the FP32 master weight and the two moments, FP32 (12) or
/// BF16 with [`Parallelism::bf16_moments`] (8; DeepSeek-V3 report, section 3.3.3: "we adopt the
/// BF16 data format instead of FP32 to track the first and second moments in the AdamW
/// optimizer ... the master weights ... and gradients ... are still retained in FP32").
fn optimizer_bytes(par: &Parallelism) -> f64 {
    if par.bf16_moments {
        8.0
    } else {
        12.0
    }
}

/// [`model_state_bytes`] of each pipeline stage, first to last.
fn stage_state_bytes(model: &Model, par: &Parallelism) -> Vec<f64> {
    let tp = par.tp.max(1) as f64;
    let ep = if par.ep > 1 { par.ep as f64 } else { 1.0 };
    // ZeRO shards over the ranks that reduce the gradients: data and context parallel together.
    let dp = par.dp.max(1) as f64 * par.cp.max(1) as f64;
    // The routed experts over etp x ep ranks, their copies over the rest of the stage's
    // tp x cp x dp ranks (expert data parallelism; with etp = tp, dp x cp / ep).
    let etp = f64::from(par.etp().max(1));
    let edp = (dp * tp / (etp * ep)).max(1.0);
    // The weights: BF16, or FP8 only (Megatron-Core's --fp8-param-gather keeps no BF16 copy).
    let w = if par.fp8_params { 1.0 } else { 2.0 };
    let one: Vec<f64> = stage_params(model, par)
        .iter()
        .map(|s| {
            let (dense_rank, expert_rank) = (s.dense as f64 / tp, s.expert as f64 / (etp * ep));
            let sharded = dense_rank / dp + expert_rank / edp;
            let g = par.grad_bytes() as f64;
            let o = optimizer_bytes(par);
            match par.zero {
                0 => (w + o + g) * (dense_rank + expert_rank),
                1 => (w + g) * (dense_rank + expert_rank) + o * sharded,
                2 => w * (dense_rank + expert_rank) + (o + g) * sharded,
                _ => (w + o + g) * sharded,
            }
        })
        .collect();
    if par.schedule == Schedule::Dualpipe && one.len() > 1 {
        // DualPipe keeps two stages' parameters on every rank (DeepSeek-V3, table 2: "2x"):
        // stage i and stage p - 1 - i (deepseek-ai/DualPipe@7cb1e5e examples/example_dualpipe.py).
        return (0..one.len())
            .map(|i| one[i] + one[one.len() - 1 - i])
            .collect();
    }
    one.iter()
        .map(|b| b * par.schedule.parameter_copies())
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
    // Per token on one rank: a dense layer's, an MoE layer's (its expert inputs whole), less what
    // selective recomputation drops.
    let modules = par.recompute_modules;
    let gathered = if modules.has(Module::Moe) {
        0.0
    } else {
        model.expert_input_bytes_per_token() * (1.0 - 1.0 / tp)
    };
    let fp8 = |moe: bool| {
        if par.fp8_activations {
            fp8_cache_savings(model, moe, modules)
        } else {
            0.0
        }
    };
    // FP8 caching shrinks the gathered expert inputs as it shrinks the rest.
    let gathered = if par.fp8_activations {
        gathered * FP8_CACHED
    } else {
        gathered
    };
    let (dense_layer, moe_layer) = (
        (model.activation_bytes_per_token(false)
            - selective_savings(model, false, modules)
            - fp8(false))
            / tp,
        (model.activation_bytes_per_token(true)
            - selective_savings(model, true, modules)
            - fp8(true))
            / tp
            + gathered,
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
                // The output layer's input and logits, and again for each multi-token prediction
                // module, whose layer keeps what a layer of its kind keeps.
                let mtp = model.mtp_layers as f64;
                per_token += (1.0 + mtp) * 4.0 * (model.hidden + model.vocab) as f64 / tp;
                let layer = if model.is_moe() {
                    moe_layer
                } else {
                    dense_layer
                };
                let layer = if par.recompute {
                    2.0 * model.hidden as f64 / tp
                } else {
                    layer
                };
                per_token += mtp * layer * in_flight(par, i);
            }
            per_token * tokens
        })
        .collect()
}

/// Of [`Model::activation_bytes_per_token`], what the modules recomputed selectively drop, bytes
/// a token before tensor parallelism: the attention core its FP32 softmax statistics (its
/// output stays, the output projection's input); the norms their outputs, the QKV and MLP
/// inputs (2h each), and latent attention's latent norms theirs; latent attention's
/// up-projections Q, K and V ([`Model::qkv_bytes_per_token`]); a dense MLP its intermediates; the experts' activation the product (or
/// GELU's output) of each copy and shared expert; the whole MoE block everything of its copies
/// and shared experts but the block's input and the router's probabilities.
pub fn selective_savings(model: &Model, moe: bool, modules: Modules) -> f64 {
    let h = model.hidden as f64;
    let f = |w: u64| w as f64;
    let (interm, act_out) = match model.ffn_kind {
        FfnKind::Gelu => (4.0, 2.0),
        FfnKind::Swiglu => (6.0, 2.0),
    };
    let copies = model.top_k as f64;
    let shared = model.shared_experts as f64;
    let fe = f(model.expert_ffn_width());
    let mut saved = 0.0;
    if modules.has(Module::CoreAttn) {
        saved += 4.0 * model.heads as f64;
    }
    if modules.has(Module::Layernorm) {
        // With latent attention, the latents' norms too: their outputs, the up-projections' inputs.
        saved += 4.0 * h + model.mla_latent_bytes_per_token();
    }
    if modules.has(Module::MlaUpProj) && model.is_mla() {
        saved += model.qkv_bytes_per_token();
    }
    if !moe && modules.has(Module::Mlp) {
        saved += interm * f(model.ffn);
    }
    if moe && modules.has(Module::Moe) {
        saved += copies * (2.0 * h + interm * fe) + shared * interm * fe;
    } else if moe && modules.has(Module::MoeAct) {
        saved += (copies + shared) * act_out * fe;
    }
    saved
}

/// What a BF16 activation cached in FP8 keeps of its bytes: one byte a value and one FP32 scale
/// per 128 values (the 1x128 tiles of DeepSeek-V3's fine-grained quantization, report section
/// 3.3.2), (1 + 4/128) / 2.
pub const FP8_CACHED: f64 = (1.0 + 4.0 / 128.0) / 2.0;

/// What the attention output projection's input keeps of its BF16 bytes in E5M6, 12 bits a
/// value (DeepSeek-V3 report, section 3.3.3: "a customized E5M6 data format exclusively for
/// these activations", as the attention's backward pass reads them too).
pub const E5M6_CACHED: f64 = 12.0 / 16.0;

/// Of [`Model::activation_bytes_per_token`] less [`selective_savings`], what caching the linear
/// layers' inputs in FP8 saves, bytes a token before tensor parallelism (DeepSeek-V3 report,
/// arXiv 2412.19437, section 3.3.3 "Low-Precision Activation": "cache the activations in FP8
/// format for the backward pass of the Linear operator"): the QKV (or latent down-projection)
/// input, latent attention's up-projection inputs, the MLP or MoE block's input (each unless
/// `layernorm` recomputation already drops it), the attention output projection's input in E5M6
/// ([`E5M6_CACHED`]), a dense MLP's second GEMM input (unless `mlp` drops it), and in an MoE
/// block every copy's expert input, the routed and shared experts' SwiGLU inputs ("also stored
/// in FP8", the report's exception (2)) and their second GEMM inputs (unless `moe_act` drops
/// them); nothing of the experts when the whole block is recomputed (`moe`). The norms' inputs,
/// Q, K and V (FlashAttention's inputs), the softmax statistics and the router's probabilities
/// stay as they are.
pub fn fp8_cache_savings(model: &Model, moe: bool, modules: Modules) -> f64 {
    let h = model.hidden as f64;
    let cut = 1.0 - FP8_CACHED;
    let mut saved = (1.0 - E5M6_CACHED) * 2.0 * (model.heads * model.value_head_dim()) as f64;
    if !modules.has(Module::Layernorm) {
        saved += cut * (4.0 * h + model.mla_latent_bytes_per_token());
    }
    let (first, second) = match model.ffn_kind {
        FfnKind::Gelu => (2.0, 2.0),
        FfnKind::Swiglu => (4.0, 2.0),
    };
    if !moe {
        if !modules.has(Module::Mlp) {
            saved += cut * second * model.ffn as f64;
        }
        return saved;
    }
    if modules.has(Module::Moe) {
        return saved;
    }
    let fe = model.expert_ffn_width() as f64;
    let (copies, shared) = (model.top_k as f64, model.shared_experts as f64);
    saved += cut * copies * 2.0 * h;
    saved += cut * (copies + shared) * first * fe;
    if !modules.has(Module::MoeAct) {
        saved += cut * (copies + shared) * second * fe;
    }
    saved
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
    if par.schedule == Schedule::Dualpipe && par.pp > 1 {
        // DeepSeek-V3, table 2: p + 1 micro-batches of a stage's activations.
        return (u64::from(par.pp) + 1).min(2 * par.microbatches().max(1)) as f64;
    }
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
            // The multi-token prediction modules sit on the last stage (their embedding and
            // output head are the model's).
            let mut moe_layers = moe_layers;
            if i == last {
                dense += model.mtp_layers * model.mtp_module_params();
                if model.is_moe() {
                    moe_layers += model.mtp_layers;
                }
            }
            let expert = if par.ep > 1 || par.folded() {
                dense -= moe_layers * routed_per_layer;
                moe_layers * routed_per_layer
            } else {
                0
            };
            StageParams { dense, expert }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fixtures::pure_dp;

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

    /// Selective recomputation drops what each module keeps, and only that: the norms' outputs
    /// (4h), a dense MLP's intermediates, the experts' activation products; the whole MoE block
    /// also its gathered expert inputs.
    /// `mla_up_proj` drops latent attention's Q, K and V (recomputed from the latents kept), and
    /// `layernorm` the latents' norm outputs too (DeepSeek-V3 report, section 3.2.3); neither
    /// touches a model without latent attention beyond its own norms.
    #[test]
    fn latent_attention_recomputation_drops_q_k_v() {
        let v3 = Model::preset("deepseek-v3").unwrap();
        let up = Modules::parse("mla_up_proj").unwrap();
        assert_eq!(selective_savings(&v3, true, up), v3.qkv_bytes_per_token());
        let ln = Modules::parse("layernorm").unwrap();
        assert_eq!(
            selective_savings(&v3, true, ln),
            4.0 * 7168.0 + 2.0 * (1536.0 + 512.0)
        );
        let llama = Model::preset("llama3-8b").unwrap();
        assert_eq!(selective_savings(&llama, false, up), 0.0);
    }

    /// DeepSeek-V3's MoE layer as its report trains it (section 3.2.3's recomputation, section
    /// 3.3.3's FP8 caches): 456,192 BF16 bytes a token (no expert outputs: the routing weight
    /// goes into the activation), of which the recomputation drops 200,704 and FP8 caching a
    /// further 99,456: the output projection's input in E5M6 (a quarter of 32,768), the eight
    /// expert inputs (114,688) and nine SwiGLU inputs (73,728) at (1 + 4/128) / 2.
    #[test]
    fn fp8_caches_shrink_the_linear_inputs_as_deepseek_v3_keeps_them() {
        let v3 = Model::preset("deepseek-v3").unwrap();
        assert_eq!(v3.activation_bytes_per_token(true), 456_192.0);
        let m = Modules::parse("layernorm,mla_up_proj,moe_act").unwrap();
        assert_eq!(selective_savings(&v3, true, m), 200_704.0);
        assert_eq!(
            fp8_cache_savings(&v3, true, m),
            8192.0 + (114_688.0 + 73_728.0) * (1.0 - FP8_CACHED)
        );
        assert_eq!(fp8_cache_savings(&v3, true, m), 99_456.0);
        // The whole block recomputed leaves only the attention's saving.
        let block = Modules::parse("moe").unwrap();
        assert_eq!(
            fp8_cache_savings(&v3, true, block),
            4.0 * 7168.0 * (1.0 - FP8_CACHED) + 2.0 * 2048.0 * (1.0 - FP8_CACHED) + 8192.0
        );
        let par = Parallelism {
            seq: 4096,
            ep: 8,
            ..pure_dp(8, 1)
        };
        let cached = Parallelism {
            fp8_activations: true,
            ..par.clone()
        };
        let (a, b) = (
            stage_activation_bytes(&v3, &par)[0],
            stage_activation_bytes(&v3, &cached)[0],
        );
        assert!(b < a && b > a / 2.0, "{a} -> {b}");
    }

    /// BF16 moments: 2 + 2 + 8 = 12 bytes a parameter unsharded with BF16 gradients (the
    /// fixture's), 8 of them sharded by ZeRO-1.
    #[test]
    fn bf16_moments_hold_eight_bytes_of_optimizer_state() {
        let model = Model::preset("llama3-8b").unwrap();
        let psi = model.params() as f64;
        let at = |zero, bf16_moments| {
            let par = Parallelism {
                bf16_moments,
                ..pure_dp(64, zero)
            };
            model_state_bytes(&model, &par)
        };
        assert_eq!(at(0, true), 12.0 * psi);
        assert!((at(1, true) - (4.0 + 8.0 / 64.0) * psi).abs() < 1e-6 * psi);
        assert!(at(1, true) < at(1, false));
    }

    #[test]
    fn selective_recomputation_drops_each_modules_activations() {
        use crate::recompute::Modules;
        let dense = Model::preset("llama3-8b").unwrap();
        let par = Parallelism {
            tp: 2,
            seq: 8192,
            ..pure_dp(2, 1)
        };
        let base = stage_activation_bytes(&dense, &par)[0];
        let with = |m: &str, model: &Model, par: &Parallelism| {
            stage_activation_bytes(
                model,
                &Parallelism {
                    recompute_modules: Modules::parse(m).unwrap(),
                    ..par.clone()
                },
            )[0]
        };
        let (h, tokens, layers) = (dense.hidden as f64, 8192.0, dense.layers as f64);
        let norms = base - with("layernorm", &dense, &par);
        assert!((norms - 4.0 * h * layers * tokens / 2.0).abs() < 1.0);
        let mlp = base - with("mlp", &dense, &par);
        assert!((mlp - 6.0 * dense.ffn as f64 * layers * tokens / 2.0).abs() < 1.0);
        // The MoE modules do nothing on a dense model.
        assert_eq!(with("moe,moe_act", &dense, &par), base);
        let moe = Model::preset("mixtral-8x7b").unwrap();
        let mpar = Parallelism {
            tp: 2,
            seq: 4096,
            ..pure_dp(2, 1)
        };
        let all = stage_activation_bytes(&moe, &mpar)[0];
        let act = with("moe_act", &moe, &mpar);
        let block = with("moe", &moe, &mpar);
        assert!(block < act && act < all);
    }
}
