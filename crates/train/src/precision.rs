//! The number format of a step's matrix multiplications and the GPU peaks it runs them at: a leaf
//! that the step and the compute model both read.

use serde::Serialize;

/// The number format of a step's matrix multiplications.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Every FLOP at the dense BF16 peak.
    #[default]
    Bf16,
    /// The linear layers' GEMMs at the dense FP8 peak, the rest at BF16 (the step module's docs).
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
