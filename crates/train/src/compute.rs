//! Compute by operation: each GEMM, attention, norm, activation, embedding and optimizer step of
//! a training step timed from its shapes and number format on the GPU, with the efficiencies a
//! GPU generation's kernels reach at those shapes (`railyard_catalog::KernelTable`, one table per
//! generation, each figure from a published kernel measurement).
//!
//! Per rank and micro-batch of T tokens (micro-batch x sequence / cp), with tensor parallelism tp
//! and sequence parallelism (Megatron-Core's layout of a transformer layer):
//! - GEMMs, `C[m, n] = A[m, k] B[k, n]`, m the tokens: QKV (T, h, (h + 2 kv)/tp) (latent
//!   attention: its down- and up-projections, `Model::attention_projections`), the attention
//!   output (T, h/tp, h), the dense MLP's up (and gate) and down projections, the router (T/tp, h,
//!   E), each local expert's up and down projections on its T k ep / E tokens (balanced routing),
//!   the shared experts, and on the last stage the output layer (T, h, V/tp). Forward 2mnk FLOPs;
//!   backward twice that (input and weight gradients, GEMMs of the same three dimensions), the
//!   weight gradients half of it. A GEMM runs at the table's best fraction of the peak of its
//!   format times its smallest dimension's shape factor. With FP8 the linear layers run at the FP8
//!   peak and the router, attention and output layer at BF16 (DeepSeek-V3 report, section 3.3).
//! - Attention (FlashAttention, causal): forward 4 T (s/2) h/tp FLOPs (the causal mask halves the
//!   4 T s h), backward 2.5 times the forward (FlashAttention-2's count, whose benchmarks time
//!   forward + backward as 3.5 forwards), at the table's causal efficiency for the sequence.
//! - Memory-bound operations, bytes streamed at the table's fraction of the memory bandwidth:
//!   the two RMSNorms (read and write 2h each), two residual adds (read 4h, write 2h), rotary
//!   embeddings on Q and K, the MLP's activation (SwiGLU reads 4f and writes 2f; GELU 2f and 2f),
//!   the MoE permutation and un-permutation of each token's k copies, FP8's casts of each GEMM's
//!   input (read 2 bytes, write 1), on the last stage the cross-entropy over FP32 logits. The
//!   backward streams twice the forward's bytes. Sequence parallelism divides the norms, adds and
//!   rotary by tp.
//! - Full recomputation runs every layer's forward again in its backward; selective recomputation
//!   ([`crate::recompute`]) the forward of the modules it names.
//! - The optimizer step (Adam): each parameter of the rank's shard reads its gradient and FP32
//!   master weight and moments and writes them and the BF16 weight back, 26 bytes and the
//!   gradient's.
//!
//! Every rate is then multiplied by the table's `step_fraction`: what a whole step sustains of
//! its kernels' rates, the one constant fitted to training runs (named in the table).
//!
//! With a flat efficiency ([`Rates::Flat`], `--efficiency`) every FLOP of the step runs at that
//! fraction of the peak, the memory-bound operations in it, as railyard's first model did.

use crate::model::{FfnKind, Model};
use crate::precision::{Peaks, Precision};
use crate::recompute::{Module, Modules};
use railyard_catalog::KernelTable;

/// How fast the GPU's kernels run.
#[derive(Debug, Clone, Copy)]
pub enum Rates<'a> {
    /// By operation, from the GPU generation's kernel table.
    Kernels(&'a KernelTable),
    /// Every FLOP at this fraction of the peak (an assumption or a fit to a measured step).
    Flat(f64),
}

/// The GPU as the compute model sees it.
#[derive(Debug, Clone, Copy)]
pub struct Gpu<'a> {
    pub peaks: Peaks,
    pub rates: Rates<'a>,
    pub precision: Precision,
    /// FP8 GEMMs block-scaled (the step configuration's `fp8_blockwise`).
    pub fp8_blockwise: bool,
}

/// Seconds of one micro-batch's passes, split as pipeline schedules need them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Passes {
    pub forward: f64,
    /// Input and weight gradients (and recomputation).
    pub backward: f64,
    /// The weight gradients' part of `backward`.
    pub weight: f64,
    /// The linear layers' GEMMs, forward and backward (what TP communication can overlap).
    pub linear: f64,
    /// FLOPs run, forward and backward with recomputation.
    pub flops: f64,
}

impl Passes {
    pub fn total(&self) -> f64 {
        self.forward + self.backward
    }

    /// Adds `times` of `o`.
    pub fn add(&mut self, o: Passes, times: f64) {
        self.forward += o.forward * times;
        self.backward += o.backward * times;
        self.weight += o.weight * times;
        self.linear += o.linear * times;
        self.flops += o.flops * times;
    }
}

/// What sets a micro-batch's shapes on one rank.
#[derive(Debug, Clone, Copy)]
pub struct Shapes {
    /// Tokens of a micro-batch on the rank (micro-batch x sequence / cp).
    pub tokens: f64,
    pub seq: f64,
    pub tp: f64,
    pub ep: f64,
    /// Expert tensor parallelism (`Parallelism::etp`): an expert's GEMMs split over etp ranks,
    /// which under MoE parallel folding (etp < tp) take the tokens of tp / etp sequence-parallel
    /// shards each, so a rank's expert FLOPs stay the same and only the GEMM shapes change.
    pub etp: f64,
    pub recompute: Recompute,
}

/// What the backward pass runs again: every layer's forward (`full`), or the modules named.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recompute {
    pub full: bool,
    pub modules: Modules,
}

impl Gpu<'_> {
    /// One GEMM of `m x n x k`, forward, seconds; `fp8`: a linear layer (FP8 when the step is).
    fn gemm(&self, m: f64, n: f64, k: f64, fp8: bool) -> f64 {
        let flops = 2.0 * m * n * k;
        let fp8 = fp8 && self.precision == Precision::Fp8;
        let peak = if fp8 {
            self.peaks.fp8_tflops.unwrap_or(self.peaks.bf16_tflops)
        } else {
            self.peaks.bf16_tflops
        } * 1e12;
        match self.rates {
            Rates::Flat(e) => flops / (peak * e),
            Rates::Kernels(t) => {
                let block = (fp8 && self.fp8_blockwise)
                    .then(|| t.gemm_fp8_block_efficiency(m, n, k))
                    .flatten();
                let best = if fp8 {
                    t.gemm_fp8.unwrap_or(t.gemm_bf16)
                } else {
                    t.gemm_bf16
                };
                let e = block.unwrap_or_else(|| t.gemm_efficiency(best, m, n, k));
                flops / (peak * e * t.step_fraction)
            }
        }
    }

    /// Bytes streamed by memory-bound kernels, seconds (0 with a flat efficiency, which counts
    /// FLOPs only).
    fn stream(&self, bytes: f64) -> f64 {
        match self.rates {
            Rates::Flat(_) => 0.0,
            Rates::Kernels(t) => bytes / (t.hbm_tbs * 1e12 * t.hbm_efficiency * t.step_fraction),
        }
    }

    /// Causal attention of `tokens` queries over a sequence of `seq`, `width` = heads x head
    /// dimension on the rank: forward and backward seconds.
    fn attention(&self, tokens: f64, seq: f64, width: f64) -> (f64, f64) {
        let peak = self.peaks.bf16_tflops * 1e12;
        match self.rates {
            // The flat model counts the full 4 T s h forward, 8 backward (Megatron's 12 s h).
            Rates::Flat(e) => {
                let fwd = 4.0 * tokens * seq * width / (peak * e);
                (fwd, 2.0 * fwd)
            }
            Rates::Kernels(t) => {
                let fwd_flops = 2.0 * tokens * seq * width;
                let rate = peak * t.attention_efficiency(seq) * t.step_fraction;
                let both = 3.5 * fwd_flops / rate;
                (both / 3.5, both * 2.5 / 3.5)
            }
        }
    }

    /// The passes of GEMMs `(m, n, k, linear)` and `bytes` streamed forward.
    fn passes(&self, gemms: &[(f64, f64, f64, bool)], bytes: f64) -> Passes {
        let mut p = Passes::default();
        for &(m, n, k, linear) in gemms {
            let f = self.gemm(m, n, k, linear);
            p.forward += f;
            p.backward += 2.0 * f;
            p.weight += f;
            p.flops += 6.0 * m * n * k;
            if linear {
                p.linear += 3.0 * f;
            }
        }
        let s = self.stream(bytes);
        p.forward += s;
        p.backward += 2.0 * s;
        p
    }
}

/// One transformer layer's passes for a micro-batch on one rank (`moe`: an MoE layer), with the
/// recomputation `sh.recompute` asks for: all of the forward again, or the modules named.
pub fn layer(model: &Model, moe: bool, sh: &Shapes, gpu: &Gpu) -> Passes {
    let parts = LayerParts::of(model, moe, sh, gpu);
    let mut p = Passes::default();
    for part in [
        parts.attention,
        parts.up_proj,
        parts.core,
        parts.norms,
        parts.mlp,
        parts.act,
    ] {
        p.add(part, 1.0);
    }
    let again = if sh.recompute.full {
        p
    } else {
        let m = sh.recompute.modules;
        let mut again = Passes::default();
        for (module, part) in [
            (Module::CoreAttn, parts.core),
            (Module::MlaUpProj, parts.up_proj),
            (Module::Layernorm, parts.norms),
            (Module::Mlp, if moe { Passes::default() } else { parts.mlp }),
            (Module::Moe, if moe { parts.mlp } else { Passes::default() }),
        ] {
            if m.has(module) {
                again.add(part, 1.0);
            }
        }
        // The activation function is recomputed with its module or with the experts.
        if (moe && (m.has(Module::MoeAct) || m.has(Module::Moe))) || (!moe && m.has(Module::Mlp)) {
            again.add(parts.act, 1.0);
        }
        again
    };
    p.backward += again.forward;
    p.flops += again.flops / 3.0;
    p
}

/// A layer's operations in the groups recomputation names: the attention's projections, its
/// core, the norms (with the residual adds and rotary), the MLP or the experts (GEMMs, the
/// router, the MoE permutations and FP8 casts) and the activation function.
struct LayerParts {
    attention: Passes,
    /// Latent attention's up-projections (none in standard attention).
    up_proj: Passes,
    core: Passes,
    norms: Passes,
    mlp: Passes,
    act: Passes,
}

impl LayerParts {
    fn of(model: &Model, moe: bool, sh: &Shapes, gpu: &Gpu) -> LayerParts {
        let (h, t, tp) = (model.hidden as f64, sh.tokens, sh.tp);
        let cast = if gpu.precision == Precision::Fp8 {
            3.0
        } else {
            0.0
        };
        let act = |f: f64| match model.ffn_kind {
            FfnKind::Swiglu => 6.0 * f,
            FfnKind::Gelu => 4.0 * f,
        };
        let up = |f: f64| match model.ffn_kind {
            FfnKind::Swiglu => 2.0 * f,
            FfnKind::Gelu => f,
        };
        // The projections: every one but the output projection split by its output columns
        // (Megatron's column-parallel QKV), the output projection by its input rows; with latent
        // attention the up-projections apart, which `mla_up_proj` recomputes. Latent attention's
        // down-projections are split by tp too, a simplification (DeepSeek-V3 trains at TP 1).
        let projections = model.attention_projections();
        let (last_in, _) = projections[projections.len() - 1];
        let (mut gemms, mut up_gemms) = (Vec::new(), Vec::new());
        let mut cast_in = 0.0;
        for &(k, n) in &projections[..projections.len() - 1] {
            let gemm = (t, n as f64 / tp, k as f64, true);
            if model.is_mla() && k != model.hidden {
                up_gemms.push(gemm);
            } else {
                gemms.push(gemm);
            }
            cast_in += k as f64;
        }
        gemms.push((t, h, last_in as f64 / tp, true));
        cast_in += last_in as f64 / tp;
        // Rotary embedding reads and writes the rotated part of Q and K (all of them in standard
        // attention, (heads + kv heads) x head dim, h + h_kv with hidden / heads heads; latent
        // attention's decoupled d_h^R per query head and the shared key).
        let rotary = if model.is_mla() {
            let r = model.qk_rope_head_dim as f64;
            model.heads as f64 * r + r
        } else {
            ((model.heads + model.kv_heads) * model.qk_head_dim()) as f64
        };
        let attention = gpu.passes(
            &gemms,
            (12.0 * h + 4.0 * rotary) / tp * t + cast * cast_in * t,
        );
        let up_proj = gpu.passes(&up_gemms, 0.0);
        let width = model.attention_width() as f64;
        let (fwd, bwd) = gpu.attention(t, sh.seq, width / tp);
        let core = Passes {
            forward: fwd,
            backward: bwd,
            flops: 3.5 * 2.0 * t * sh.seq * width / tp,
            ..Passes::default()
        };
        let norms = gpu.passes(&[], 8.0 * h / tp * t);
        let (mlp, act_bytes) = if moe {
            let (e, k) = (model.experts as f64, model.top_k as f64);
            let fe = model.expert_ffn_width() as f64;
            let local = (e / sh.ep).max(1.0);
            let m = t * k / local;
            let shared = model.shared_experts as f64;
            let mut gemms = vec![(t / tp, e, h, false)];
            if shared > 0.0 {
                gemms.push((t, up(fe * shared) / tp, h, true));
                gemms.push((t, h, fe * shared / tp, true));
            }
            let bytes = 8.0 * h * k + 8.0 * e / tp + cast * (k + shared) * (h + fe / tp);
            let mut p = gpu.passes(&gemms, bytes * t);
            let (me, etp) = (m * sh.etp / tp, sh.etp);
            let one = gpu.passes(&[(me, up(fe) / etp, h, true), (me, h, fe / etp, true)], 0.0);
            p.add(one, local);
            (p, (k + shared) * act(fe) / tp)
        } else {
            let f = model.ffn as f64;
            let gemms = [(t, up(f) / tp, h, true), (t, h, f / tp, true)];
            (gpu.passes(&gemms, cast * (h + f / tp) * t), act(f) / tp)
        };
        LayerParts {
            attention,
            up_proj,
            core,
            norms,
            mlp,
            act: gpu.passes(&[], act_bytes * t),
        }
    }
}

/// One layer's attention forward and backward, seconds (what ring attention's hops hide under).
pub fn attention_seconds(model: &Model, sh: &Shapes, gpu: &Gpu) -> f64 {
    let (fwd, bwd) = gpu.attention(sh.tokens, sh.seq, model.attention_width() as f64 / sh.tp);
    fwd + bwd
}

/// The embedding (first stage) and the output layer and loss (last stage) of a micro-batch.
pub fn ends(model: &Model, first: bool, last: bool, sh: &Shapes, gpu: &Gpu) -> Passes {
    let (h, v, t, tp) = (model.hidden as f64, model.vocab as f64, sh.tokens, sh.tp);
    let mut p = Passes::default();
    if first {
        p.add(gpu.passes(&[], 4.0 * h / tp * t), 1.0);
    }
    if last {
        // The final norm, the logits (BF16), and cross-entropy over FP32 logits.
        let bytes = (4.0 * h / tp + 12.0 * v / tp) * t;
        let head = gpu.passes(&[(t, v / tp, h, false)], bytes);
        p.add(head, 1.0);
        // Each multi-token prediction module (DeepSeek-V3 report, section 2.2), on the last stage
        // as Megatron-Core places it: two norms and the projection of the concatenated 2h to h,
        // one more layer (an MoE layer in an MoE model), and the shared output head and its loss
        // again.
        if model.mtp_layers > 0 {
            let mut mtp = gpu.passes(&[(t, h / tp, 2.0 * h, true)], 8.0 * h / tp * t);
            mtp.add(layer(model, model.is_moe(), sh, gpu), 1.0);
            mtp.add(head, 1.0);
            p.add(mtp, model.mtp_layers as f64);
        }
    }
    p
}

/// Adam's step over `params` parameters of the rank's shard with gradients of `grad_bytes`.
pub fn optimizer(params: f64, grad_bytes: f64, gpu: &Gpu) -> f64 {
    gpu.stream((26.0 + grad_bytes) * params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_catalog::{Catalog, GpuGeneration};

    fn hopper<'a>(t: &'a KernelTable, precision: Precision) -> Gpu<'a> {
        Gpu {
            peaks: Peaks {
                bf16_tflops: 989.0,
                fp8_tflops: Some(1979.0),
            },
            rates: Rates::Kernels(t),
            precision,
            fp8_blockwise: false,
        }
    }

    fn shapes(tokens: f64, tp: f64) -> Shapes {
        Shapes {
            tokens,
            seq: 8192.0,
            tp,
            ep: 1.0,
            etp: tp,
            recompute: Recompute::default(),
        }
    }

    /// A Llama 3 405B layer on TP 8: large GEMMs at the table's best (0.80 of 989), attention
    /// at its 8K efficiency, a few percent of memory-bound work; the backward twice the
    /// forward's GEMMs and 2.5 times its attention.
    #[test]
    fn a_large_layer_runs_near_the_best_gemm_rate() {
        let c = Catalog::builtin();
        let t = &c.kernels[&GpuGeneration::Hopper];
        let m = Model::preset("llama3-405b").unwrap();
        let p = layer(&m, false, &shapes(8192.0, 8.0), &hopper(t, Precision::Bf16));
        let achieved = p.flops / p.total() / 989e12;
        assert!(achieved > 0.6 && achieved < t.gemm_bf16, "{achieved}");
        assert!(p.backward > 2.0 * p.forward * 0.95 && p.weight < p.backward / 2.0);
        // FP8 is faster, not twice.
        let f8 = layer(&m, false, &shapes(8192.0, 8.0), &hopper(t, Precision::Fp8));
        assert!(f8.total() < p.total() && f8.total() > p.total() / 2.0);
        // Recomputation adds a forward.
        let rc = layer(
            &m,
            false,
            &Shapes {
                recompute: Recompute {
                    full: true,
                    ..Recompute::default()
                },
                ..shapes(8192.0, 8.0)
            },
            &hopper(t, Precision::Bf16),
        );
        assert!((rc.total() - p.total() - p.forward).abs() < 1e-12);
    }

    /// Small shapes run below the best: a 1K-token micro-batch on TP 8 of an 8B model reaches
    /// less of the peak than 8K tokens do.
    #[test]
    fn small_shapes_run_slower_a_flop() {
        let c = Catalog::builtin();
        let t = &c.kernels[&GpuGeneration::Hopper];
        let m = Model::preset("llama3-8b").unwrap();
        let g = hopper(t, Precision::Bf16);
        let rate = |tokens: f64| {
            let p = layer(&m, false, &shapes(tokens, 8.0), &g);
            p.flops / p.total()
        };
        assert!(rate(512.0) < 0.8 * rate(8192.0));
    }

    /// The flat model is the FLOP count at one efficiency: 6 x the layer's matmul parameters a
    /// token plus 12 s h attention, nothing memory-bound.
    #[test]
    fn the_flat_model_is_the_flop_count() {
        let m = Model::preset("llama3-8b").unwrap();
        let g = Gpu {
            peaks: Peaks::bf16(1000.0),
            rates: Rates::Flat(0.5),
            precision: Precision::Bf16,
            fp8_blockwise: false,
        };
        let sh = shapes(8192.0, 1.0);
        let p = layer(&m, false, &sh, &g);
        let params = (m.attention_params() + m.dense_ffn_params()) as f64;
        let flops = (6.0 * params + 12.0 * 8192.0 * m.hidden as f64) * 8192.0;
        assert!((p.total() - flops / 500e12).abs() < 1e-9 * p.total());
    }

    /// Selective recomputation runs again only what it names: the norms cost a little, the MLP
    /// much more, all of them together less than full recomputation.
    #[test]
    fn selective_recomputation_runs_its_modules_forward_again() {
        use crate::recompute::Modules;
        let c = Catalog::builtin();
        let t = &c.kernels[&GpuGeneration::Hopper];
        let m = Model::preset("llama3-70b").unwrap();
        let g = hopper(t, Precision::Bf16);
        let run = |modules: &str, full: bool| {
            let sh = Shapes {
                recompute: Recompute {
                    full,
                    modules: if modules.is_empty() {
                        Modules::default()
                    } else {
                        Modules::parse(modules).unwrap()
                    },
                },
                ..shapes(8192.0, 8.0)
            };
            layer(&m, false, &sh, &g).total()
        };
        let none = run("", false);
        let norms = run("layernorm", false) - none;
        let mlp = run("mlp", false) - none;
        let every = run("core_attn,layernorm,mlp", false) - none;
        let full = run("", true) - none;
        assert!(norms > 0.0 && norms < mlp && mlp < every && every < full);
        // The MoE modules change nothing in a dense layer.
        assert_eq!(run("moe,moe_act", false), none);
    }

    /// Block-scaled FP8 GEMMs run at DeepGEMM's measured rate of the nearest shape: DeepSeek-V3's
    /// attention output projection (4,096 x 7,168 x 16,384) at 1,426 of 1,979 TFLOPS, its
    /// latent up-projection of K and V (K 512) at 751; without the setting, the per-tensor curve.
    /// BF16 GEMMs never take it.
    #[test]
    fn block_scaled_fp8_gemms_take_the_measured_shape() {
        let c = Catalog::builtin();
        let t = &c.kernels[&GpuGeneration::Hopper];
        let block = Gpu {
            fp8_blockwise: true,
            ..hopper(t, Precision::Fp8)
        };
        let rate = |g: &Gpu, m: f64, n: f64, k: f64| {
            2.0 * m * n * k / g.gemm(m, n, k, true) / 1979e12 / t.step_fraction
        };
        assert!((rate(&block, 4096.0, 7168.0, 16384.0) - 0.7206).abs() < 1e-9);
        assert!((rate(&block, 4096.0, 32768.0, 512.0) - 0.3795).abs() < 1e-9);
        let plain = hopper(t, Precision::Fp8);
        let curve = t.gemm_efficiency(t.gemm_fp8.unwrap(), 4096.0, 32768.0, 512.0);
        assert!((rate(&plain, 4096.0, 32768.0, 512.0) - curve).abs() < 1e-9);
        let bf16 = Gpu {
            fp8_blockwise: true,
            ..hopper(t, Precision::Bf16)
        };
        assert_eq!(
            bf16.gemm(4096.0, 7168.0, 16384.0, true),
            hopper(t, Precision::Bf16).gemm(4096.0, 7168.0, 16384.0, true)
        );
    }
}
