//! Built-in designs, one TOML file each under `presets/`, compiled into the binary.

use crate::{parse_raw, raw::RawSpec, ClusterSpec, SpecError};

/// A named built-in spec.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! preset {
    ($name:literal) => {
        Preset {
            name: $name,
            text: include_str!(concat!("../presets/", $name, ".toml")),
        }
    };
}

/// Every preset, the default first.
pub const PRESETS: &[Preset] = &[
    preset!("dgx-h100-superpod"),
    preset!("dgx-a100-superpod"),
    preset!("seed-two-switch"),
    preset!("seed-leaf-spine"),
    preset!("seed-edr-fat-tree"),
    preset!("h100-nic-1to4"),
    preset!("roce-400g-sn5600"),
    preset!("rail-only-h100"),
    preset!("b200-xdr"),
    preset!("gb200-nvl72-superpod"),
    preset!("gb300-nvl72"),
    preset!("mi300x-roce"),
    preset!("mi355x-roce"),
];

/// The preset `railyard plan` uses without arguments.
pub const DEFAULT: &str = "dgx-h100-superpod";

/// Looks a preset up by name; the error lists the valid names.
pub fn find(name: &str) -> Result<&'static Preset, SpecError> {
    PRESETS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| SpecError {
            origin: "command line".to_string(),
            field: "preset".to_string(),
            message: format!("unknown preset `{name}`; valid: {}", names().join(", ")),
        })
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// The raw spec of a preset, for applying overrides before validation.
pub fn raw(name: &str) -> Result<RawSpec, SpecError> {
    let p = find(name)?;
    let mut raw = parse_raw(p.text, &format!("preset {}", p.name))?;
    raw.preset = Some(p.name.to_string());
    Ok(raw)
}

/// A preset, validated.
pub fn load(name: &str) -> Result<ClusterSpec, SpecError> {
    let raw = raw(name)?;
    ClusterSpec::from_raw(&raw, &format!("preset {name}"))
}
