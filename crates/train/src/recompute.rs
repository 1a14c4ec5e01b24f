//! Selective activation recomputation by module, as Megatron-Core's `--recompute-granularity
//! selective --recompute-modules` runs it: each module named drops the activations it would keep
//! for the backward pass and runs its forward again there (Korthikanti et al., "Reducing
//! Activation Recomputation in Large Transformer Models", MLSys 2023, section 5; Megatron-Core
//! `transformer_config.py`, `recompute_modules`). Full recomputation (`--recompute`) is
//! the parallelism's `Parallelism::recompute`.

use serde::Serialize;

/// A module whose activations are recomputed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Module {
    /// The attention core (FlashAttention's output and softmax statistics).
    CoreAttn,
    /// The two norms: their outputs, the QKV and MLP inputs, recomputed from the norms' inputs.
    Layernorm,
    /// A dense layer's MLP: only its input kept.
    Mlp,
    /// The experts' activation function (SwiGLU's product or GELU's output).
    MoeAct,
    /// The whole MoE block's experts: only the block's input kept.
    Moe,
    /// Latent attention's up-projections: Q, K and V (and the latents' norm outputs) recomputed
    /// from the compressed latents (DeepSeek-V3 report, section 3.2.3: "we recompute all RMSNorm
    /// operations and MLA up-projections during back-propagation"; Megatron-Core's
    /// `mla_up_proj`). Nothing on a model without latent attention.
    MlaUpProj,
}

impl Module {
    const ALL: [Module; 6] = [
        Module::CoreAttn,
        Module::MlaUpProj,
        Module::Layernorm,
        Module::Mlp,
        Module::MoeAct,
        Module::Moe,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Module::CoreAttn => "core_attn",
            Module::Layernorm => "layernorm",
            Module::Mlp => "mlp",
            Module::MoeAct => "moe_act",
            Module::Moe => "moe",
            Module::MlaUpProj => "mla_up_proj",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The modules recomputed, a set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Modules(u8);

impl Modules {
    pub fn has(self, m: Module) -> bool {
        self.0 & m.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn with(self, m: Module) -> Modules {
        Modules(self.0 | m.bit())
    }

    /// The names, comma-separated, in Megatron-Core's order.
    pub fn names(self) -> String {
        Module::ALL
            .iter()
            .filter(|m| self.has(**m))
            .map(|m| m.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Parses Megatron-Core's module names, comma-separated; the error lists the valid ones.
    pub fn parse(s: &str) -> Result<Modules, String> {
        s.split(',')
            .map(str::trim)
            .try_fold(Modules::default(), |acc, name| {
                Module::ALL
                    .iter()
                    .find(|m| m.as_str() == name)
                    .map(|m| acc.with(*m))
                    .ok_or_else(|| {
                        format!(
                        "unknown module `{name}`; valid: core_attn, mla_up_proj, layernorm, mlp, moe_act, moe"
                    )
                    })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_in_order() {
        let m = Modules::parse("moe_act,layernorm").unwrap();
        assert!(m.has(Module::Layernorm) && m.has(Module::MoeAct) && !m.has(Module::Mlp));
        assert_eq!(m.names(), "layernorm,moe_act");
        assert!(Modules::parse("mla_up_proj")
            .unwrap()
            .has(Module::MlaUpProj));
        assert!(Modules::parse("up_proj")
            .unwrap_err()
            .contains("mla_up_proj"));
    }
}
