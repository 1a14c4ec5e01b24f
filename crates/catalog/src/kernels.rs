//! What a GPU generation's kernels reach, by shape: the tables the training step's compute model
//! times each operation with (issue 36: "efficiency curves by shape taken from published kernel
//! measurements, one table per GPU generation"). Data in data/kernels.toml, each figure with its
//! source; the measurements behind them are docs/validation/kernel-efficiency.toml.

use crate::model::GpuGeneration;
use serde::{Deserialize, Serialize};

/// One generation's kernel efficiencies, as fractions of the GPU's dense peak (or of its memory
/// bandwidth for memory-bound operations).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelTable {
    /// The generation the table is for (`ampere`, `hopper`, `blackwell`).
    pub id: GpuGeneration,
    /// A large BF16 GEMM's best fraction of the dense BF16 peak.
    pub gemm_bf16: f64,
    /// A large FP8 GEMM's best fraction of the dense FP8 peak; `None` without FP8 tensor cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemm_fp8: Option<f64>,
    /// FP8 GEMMs with fine-grained block scaling (1x128 activation tiles, 128x128 weight
    /// blocks, partial sums promoted to FP32), as measured at given shapes: `[m, n, k, fraction
    /// of the dense FP8 peak]` (grouped GEMMs with m the tokens of one group). Empty where no
    /// such kernel is published for the generation (the per-tensor `gemm_fp8` then stands).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gemm_fp8_block: Vec<[f64; 4]>,
    /// How a GEMM's efficiency falls with its smallest dimension: `[dimension, fraction of the
    /// best]` points, rising, interpolated on the dimension's logarithm; 1 beyond the last point.
    pub gemm_shape: Vec<[f64; 2]>,
    /// Causal attention (FlashAttention) forward and backward together, head dimension 128:
    /// `[sequence, fraction of the dense BF16 peak]`, FLOPs counted with the causal mask halving
    /// them as the FlashAttention papers count them; flat beyond the ends.
    pub attention: Vec<[f64; 2]>,
    /// Memory bandwidth of the generation's reference part, TB/s.
    pub hbm_tbs: f64,
    /// Fraction of it a memory-bound kernel (norms, activations, optimizer) streams at.
    pub hbm_efficiency: f64,
    /// The fraction of the kernels' rates above that a whole training step sustains (launch gaps,
    /// synchronisation, clocks under sustained power, kernels no table covers): the one constant
    /// fitted to training runs, each generation on the runs `step_fraction_source` names (and
    /// scored on the others, docs/validation-training.md); 1 where none is fitted.
    #[serde(default = "one")]
    pub step_fraction: f64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub step_fraction_source: String,
    pub source: String,
}

impl KernelTable {
    /// Checks the table's ranges: fractions in (0, 1.2], points rising and positive.
    pub fn validate(&self) -> Result<(), String> {
        let name = format!("kernels {:?}", self.id).to_lowercase();
        let frac = |what: &str, x: f64| {
            if x > 0.0 && x <= 1.0 {
                Ok(())
            } else {
                Err(format!("{name}: {what} {x} is not a fraction in (0, 1]"))
            }
        };
        frac("gemm_bf16", self.gemm_bf16)?;
        if let Some(f) = self.gemm_fp8 {
            frac("gemm_fp8", f)?;
        }
        for p in &self.gemm_fp8_block {
            if !(p[0] > 0.0 && p[1] > 0.0 && p[2] > 0.0) {
                return Err(format!("{name}: gemm_fp8_block shape {p:?} is not above 0"));
            }
            frac("gemm_fp8_block", p[3])?;
        }
        frac("hbm_efficiency", self.hbm_efficiency)?;
        frac("step_fraction", self.step_fraction)?;
        if !(self.hbm_tbs > 0.0 && self.hbm_tbs.is_finite()) {
            return Err(format!("{name}: hbm_tbs {} must be above 0", self.hbm_tbs));
        }
        for (what, curve) in [
            ("gemm_shape", &self.gemm_shape),
            ("attention", &self.attention),
        ] {
            if curve.is_empty() {
                return Err(format!("{name}: {what} needs at least one point"));
            }
            for w in curve.windows(2) {
                if w[1][0] <= w[0][0] {
                    return Err(format!(
                        "{name}: {what} points must rise in their first value"
                    ));
                }
            }
            for p in curve {
                if p[0].is_nan() || p[0] <= 0.0 {
                    return Err(format!("{name}: {what} point {:?} is not above 0", p));
                }
                frac(what, p[1])?;
            }
        }
        Ok(())
    }

    /// A GEMM of `m x n x k` at `precision_peak_fraction` (the table's best for its precision)
    /// times its shape's fraction: the smallest dimension sets it.
    pub fn gemm_efficiency(&self, best: f64, m: f64, n: f64, k: f64) -> f64 {
        best * log_interpolate(&self.gemm_shape, m.min(n).min(k), true)
    }

    /// A block-scaled FP8 GEMM's fraction of the FP8 peak: the measured shape of
    /// [`KernelTable::gemm_fp8_block`] nearest to `m x n x k` (in the sum of the squared
    /// logarithms of the dimensions' ratios; the first of equals). `None` without measurements.
    pub fn gemm_fp8_block_efficiency(&self, m: f64, n: f64, k: f64) -> Option<f64> {
        let d = |p: &[f64; 4]| {
            (p[0] / m).ln().powi(2) + (p[1] / n).ln().powi(2) + (p[2] / k).ln().powi(2)
        };
        self.gemm_fp8_block
            .iter()
            .min_by(|a, b| d(a).total_cmp(&d(b)))
            .map(|p| p[3])
    }

    /// Causal attention's fraction of the BF16 peak at sequence `seq`.
    pub fn attention_efficiency(&self, seq: f64) -> f64 {
        log_interpolate(&self.attention, seq, false)
    }
}

fn one() -> f64 {
    1.0
}

/// Linear interpolation on the logarithm of x between the points; below the first point the
/// first value, above the last the last (or 1 with `to_one`).
fn log_interpolate(points: &[[f64; 2]], x: f64, to_one: bool) -> f64 {
    let first = points[0];
    let last = points[points.len() - 1];
    if x <= first[0] {
        return first[1];
    }
    if x >= last[0] {
        return if to_one { 1.0 } else { last[1] };
    }
    for w in points.windows(2) {
        let ([x0, y0], [x1, y1]) = (w[0], w[1]);
        if x <= x1 {
            let t = (x.ln() - x0.ln()) / (x1.ln() - x0.ln());
            return y0 + t * (y1 - y0);
        }
    }
    last[1]
}

#[cfg(test)]
mod tests {
    use crate::model::GpuGeneration;
    use crate::Catalog;

    #[test]
    fn every_nvidia_generation_a_gpu_names_has_a_table() {
        let c = Catalog::builtin();
        for g in c.gpus.values() {
            if let Some(gen) = g.generation {
                assert!(c.kernels.contains_key(&gen), "{}: no kernel table", g.id);
            }
        }
    }

    #[test]
    fn the_curves_interpolate_between_their_points_and_saturate() {
        let t = &Catalog::builtin().kernels[&GpuGeneration::Hopper];
        let big = t.gemm_efficiency(t.gemm_bf16, 8192.0, 8192.0, 8192.0);
        assert_eq!(big, t.gemm_bf16);
        let small = t.gemm_efficiency(t.gemm_bf16, 256.0, 8192.0, 8192.0);
        assert!(small < 0.3 * big, "{small} {big}");
        let mid = t.gemm_efficiency(t.gemm_bf16, 1448.0, 8192.0, 8192.0);
        assert!(small < mid && mid < big);
        assert!(t.attention_efficiency(512.0) < t.attention_efficiency(8192.0));
        assert_eq!(t.attention_efficiency(1e9), t.attention.last().unwrap()[1]);
    }
}
