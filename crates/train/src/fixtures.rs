//! Test fixtures shared by the modules' unit tests: a leaf, so that a module's tests need not
//! import another module's tests.

use crate::parallelism::Parallelism;

/// Pure data parallelism over `n` GPUs, with BF16 gradients: the accounting of the ZeRO paper
/// that most tests here check against (FP32, the default, in `gradients_are_fp32_unless_asked`).
pub(crate) fn pure_dp(n: u32, zero: u32) -> Parallelism {
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
        recompute_modules: Default::default(),
        fp8_params: false,
        fp8_activations: false,
        bf16_moments: false,
        etp: None,
    }
}
