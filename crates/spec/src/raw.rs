//! The spec as written: TOML tables with every key optional and unknown keys rejected.
//!
//! Raw values are only shapes; [`crate::ClusterSpec::from_raw`] turns them into validated types.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// `"auto"` or a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum AutoOr<T> {
    #[default]
    Auto,
    Value(T),
}

impl<T> AutoOr<T> {
    pub fn value(self) -> Option<T> {
        match self {
            AutoOr::Auto => None,
            AutoOr::Value(v) => Some(v),
        }
    }
}

impl<'de> Deserialize<'de> for AutoOr<u32> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = AutoOr<u32>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"auto\" or a positive whole number")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
                if s == "auto" {
                    Ok(AutoOr::Auto)
                } else {
                    Err(E::custom(format!(
                        "`{s}` is not valid; give \"auto\" or a positive whole number"
                    )))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u32::try_from(v)
                    .ok()
                    .filter(|&v| v > 0)
                    .map(AutoOr::Value)
                    .ok_or_else(|| {
                        E::custom(format!(
                            "{v} is not valid; give \"auto\" or a positive whole number"
                        ))
                    })
            }
        }
        d.deserialize_any(V)
    }
}

/// A whole spec file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub servers: RawServers,
    #[serde(default)]
    pub fabric: RawFabric,
    #[serde(default)]
    pub layout: RawLayout,
    #[serde(default)]
    pub storage: RawStorage,
    #[serde(default)]
    pub management: RawManagement,
    /// The built-in preset this spec came from (set when a built-in preset is read, never by TOML): its
    /// values are the reference design's choices, which `--alternatives` may look past.
    #[serde(skip)]
    pub preset: Option<String>,
    /// Dotted fields set by overrides (flags, `key=value`): the user's own choices.
    #[serde(skip)]
    pub given: std::collections::BTreeSet<String>,
    /// Values an override reset to automatic, with the reason (a technology change resets the switch,
    /// NIC, port speed and unit size that belonged to the old technology).
    #[serde(skip)]
    pub resets: Vec<crate::design::Reset>,
}

/// `"auto"`, `"none"` or absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum AutoOrNone {
    #[default]
    Auto,
    None,
}

impl<'de> Deserialize<'de> for AutoOrNone {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "auto" => Ok(AutoOrNone::Auto),
            "none" => Ok(AutoOrNone::None),
            _ => Err(serde::de::Error::custom(format!(
                "`{s}` is not valid; give \"auto\" or \"none\""
            ))),
        }
    }
}

/// `[storage] fabric`: `"auto"` (a storage fabric of its own), `"none"` or `"compute"` (storage
/// traffic on the compute fabric, through the compute NICs: no storage fabric).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum StorageChoice {
    #[default]
    Auto,
    None,
    Compute,
}

impl<'de> Deserialize<'de> for StorageChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "auto" => Ok(StorageChoice::Auto),
            "none" => Ok(StorageChoice::None),
            "compute" => Ok(StorageChoice::Compute),
            _ => Err(serde::de::Error::custom(format!(
                "`{s}` is not valid; give \"auto\", \"none\" or \"compute\""
            ))),
        }
    }
}

/// The storage fabric (`[storage]`): planned on the servers' storage NICs as the DGX SuperPOD
/// reference architectures plan it, unless `fabric = "none"` or `"compute"`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStorage {
    /// "auto" (plan it when servers have storage NICs), "none", or "compute" (storage traffic on
    /// the compute fabric).
    pub fabric: Option<StorageChoice>,
    /// Technology id, or "auto" for the compute fabric's.
    pub tech: Option<String>,
    /// Switch model id or "auto".
    pub switch: Option<String>,
    /// Storage ports cabled per server, or "auto" for one per storage NIC.
    pub ports_per_server: Option<AutoOr<u32>>,
    /// Server leaves' down:up ratio (the reference: "near 4:3").
    pub oversubscription: Option<f64>,
    /// Ports of the storage systems, attached 1:1 on leaves of their own, or "auto".
    pub array_ports: Option<AutoOr<u32>>,
    /// Spine switches, or "auto" for the fewest that balance the leaves.
    pub spines: Option<AutoOr<u32>>,
}

/// The management networks (`[management]`): in-band Ethernet and out-of-band (BMC) Ethernet.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawManagement {
    /// "auto" or "none".
    pub in_band: Option<AutoOrNone>,
    /// "auto" or "none".
    pub out_of_band: Option<AutoOrNone>,
    pub in_band_switch: Option<String>,
    pub oob_switch: Option<String>,
    pub in_band_ports_per_server: Option<i64>,
    pub management_servers: Option<i64>,
    pub management_server_ports: Option<i64>,
    pub fabric_managers: Option<i64>,
    pub user_storage_ports: Option<i64>,
    pub uplinks: Option<i64>,
    pub pdus: Option<AutoOr<u32>>,
    pub oob_ports_per_switch: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServers {
    pub count: Option<i64>,
    /// Descriptive server model name, e.g. "DGX H100".
    pub model: Option<String>,
    pub gpu: Option<String>,
    pub gpus_per_server: Option<i64>,
    /// NIC model id, or "auto" to pick one for the technology.
    pub nic: Option<String>,
    pub compute_nics: Option<i64>,
    pub storage_nics: Option<i64>,
    pub gpudirect: Option<bool>,
    /// NIC ports sharing one cage (2 on DGX H100's twin-port OSFP cages).
    pub nic_ports_per_cage: Option<i64>,
    /// Number of PCIe switches with GPUs and NICs spread evenly; ignored when `pcie_switch` lists them.
    pub pcie_switches: Option<i64>,
    #[serde(default)]
    pub pcie_switch: Vec<RawPcieSwitch>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPcieSwitch {
    /// GPU numbers (1-based) on this switch.
    #[serde(default)]
    pub gpus: Vec<i64>,
    /// Compute NIC numbers (1-based, hca1..) on this switch.
    #[serde(default)]
    pub nics: Vec<i64>,
    /// Storage NIC numbers (1-based) on this switch.
    #[serde(default)]
    pub storage_nics: Vec<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFabric {
    pub tech: Option<String>,
    pub topology: Option<String>,
    /// Switch model id or "auto".
    pub switch: Option<String>,
    pub oversubscription: Option<f64>,
    pub su_size: Option<AutoOr<u32>>,
    pub planes: Option<i64>,
    /// Port speed to run, Gb/s, when a switch offers split modes (200 on NDR = NDR200, 100 on HDR = HDR100).
    pub port_gbps: Option<i64>,
    /// Inter-switch links of the two-switch design.
    pub isl_links: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLayout {
    pub servers_per_rack: Option<i64>,
    pub rack_pitch_m: Option<f64>,
    pub row_pitch_m: Option<f64>,
    pub racks_per_row: Option<i64>,
    pub leaf_placement: Option<String>,
    pub switches_per_rack: Option<i64>,
    pub rack_units: Option<i64>,
    pub tray_drop_m: Option<f64>,
    pub in_rack_m: Option<f64>,
    pub slack: Option<f64>,
    /// Most kW one server rack may draw.
    pub max_rack_kw: Option<f64>,
    /// "air" or "liquid".
    pub cooling: Option<String>,
}
