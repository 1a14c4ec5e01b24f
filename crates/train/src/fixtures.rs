//! Test fixtures shared by the modules' unit tests: a leaf, so that a module's tests need not
//! import another module's tests. Tests build their layouts from these with `..`, so that a new
//! `Parallelism` field is spelled out here and nowhere else in the tests.

use crate::parallelism::Parallelism;

/// `tp x pp x dp` GPUs with the rest as `Layout::unasked` leaves it: no expert or context
/// parallelism, one micro-batch of one 8,192-token sequence per data-parallel rank a step, ZeRO-1,
/// FP32 gradients, no recomputation, an even stage split, plain 1F1B, BF16 weights.
pub(crate) fn megatron(tp: u32, pp: u32, dp: u32) -> Parallelism {
    Parallelism {
        tp,
        pp,
        dp,
        ep: 1,
        cp: 1,
        seq: 8192,
        micro_batch: 1,
        global_batch: u64::from(dp),
        zero: 1,
        recompute: false,
        grad_bf16: false,
        stage_layers: Vec::new(),
        vp: 1,
        schedule: Default::default(),
        recompute_modules: Default::default(),
        fp8_params: false,
        fp8_activations: false,
        bf16_moments: false,
        etp: None,
    }
}

/// Pure data parallelism over `n` GPUs, with BF16 gradients: the accounting of the ZeRO paper
/// that most tests here check against (FP32, the default, in `gradients_are_fp32_unless_asked`).
pub(crate) fn pure_dp(n: u32, zero: u32) -> Parallelism {
    Parallelism {
        seq: 2048,
        zero,
        grad_bf16: true,
        ..megatron(1, 1, n)
    }
}
