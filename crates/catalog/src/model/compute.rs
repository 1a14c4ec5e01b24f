//! The compute side's catalog entries: GPUs with their scale-up domains, servers, and rack-scale
//! systems with their power and cooling.

use super::{check_pcie, check_price, check_range, Price, MAX_POWER_W, MAX_RACK_UNITS};
use serde::{Deserialize, Serialize};

/// A GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuModel {
    pub id: String,
    pub name: String,
    /// NVLink bandwidth per link and direction, GB/s (NCCL topo.h values).
    pub nvlink_gbs_per_link: f64,
    pub nvlink_links: u32,
    pub pcie_gen: u32,
    pub pcie_lanes: u32,
    /// The datasheet's memory figure ("80GB"), which counts GiB.
    pub memory_gb: u32,
    /// The memory the device exposes, MiB: the total nvidia-smi (NVML) reports, a little below
    /// the datasheet's GiB ([`GpuModel::memory_bytes`]); where absent, `memory_gb` GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u32>,
    /// Dense BF16 tensor peak, TFLOP/s.
    pub peak_tflops_bf16: f64,
    /// Dense FP8 tensor peak, TFLOP/s; `None` for a GPU without FP8 tensor cores (A100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_tflops_fp8: Option<f64>,
    /// Where the FP8 peak comes from (required with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_source: Option<String>,
    pub power_w: f64,
    /// Price of one GPU (for the cluster's cost of ownership).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
    /// The GPU's architecture generation, as NCCL's tuning tables index GPUs (by compute
    /// capability); `None` for a GPU the tables do not cover, which gets no per-generation caps.
    #[serde(default)]
    pub generation: Option<GpuGeneration>,
    /// How the GPUs of a server reach each other without the network: through NVLink switches
    /// (the default: every NVIDIA SXM part) or a full mesh of point-to-point links, one to each
    /// peer (AMD Infinity Fabric, xGMI), where `nvlink_links` counts the links and so the peers.
    #[serde(default, skip_serializing_if = "ScaleUp::is_switched")]
    pub scale_up: ScaleUp,
    pub source: String,
}

/// How a GPU's scale-up links are joined ([`GpuModel::scale_up`]).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleUp {
    /// Every link goes to an NVLink switch (NVSwitch on the baseboard, or a rack's NVLink switch
    /// trays): any GPU reaches any other at the GPU's whole NVLink bandwidth.
    #[default]
    Nvswitch,
    /// A full mesh without a switch (AMD Instinct on a UBB: "seven high-bandwidth, low-latency AMD
    /// Infinity Fabric links ... to form a fully connected 8-GPU system", ROCm mi300.md): each
    /// link joins one pair of GPUs, so a pair has one link's bandwidth.
    Mesh,
}

impl ScaleUp {
    pub fn is_switched(&self) -> bool {
        *self == ScaleUp::Nvswitch
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ScaleUp::Nvswitch => "nvswitch",
            ScaleUp::Mesh => "mesh",
        }
    }
}

/// How a server or rack is cooled, as its maker builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cooling {
    /// Fans only.
    Air,
    /// Direct liquid cooling of the hot parts (GPUs, CPUs, switches), air for the rest: needs a
    /// liquid loop all the same (DGX GB200: "hybrid cooling with both direct liquid cooling and air
    /// cooling", RA-11338-001).
    Hybrid,
    /// Liquid cooled throughout.
    Liquid,
}

impl Cooling {
    pub fn as_str(self) -> &'static str {
        match self {
            Cooling::Air => "air",
            Cooling::Hybrid => "hybrid",
            Cooling::Liquid => "liquid",
        }
    }

    /// Whether the site needs a liquid loop for it.
    pub fn needs_liquid(self) -> bool {
        self != Cooling::Air
    }
}

/// GPU architecture generations, as NCCL's tuning tables index them (tuning.cc `*_COMPCAP_IDX`:
/// compute capability 7.x Volta, 8.x Ampere, 9.x Hopper, 10.x Blackwell).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuGeneration {
    Volta,
    Ampere,
    Hopper,
    Blackwell,
}

/// A GPU server model with its price and power, for the cluster's cost of ownership.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerModel {
    /// The name a spec gives as `servers.model`, e.g. `DGX H100`.
    pub id: String,
    pub name: String,
    /// GPU catalog id and count.
    pub gpu: String,
    pub gpus: u32,
    /// Power at full load, W.
    pub power_w: f64,
    /// True when the price includes the compute NICs (a DGX does).
    pub includes_compute_nics: bool,
    /// Compute NICs the price includes (0 when it includes none).
    #[serde(default)]
    pub compute_nics: u32,
    /// Height in rack units, where the source gives it: the rack-unit columns of cabling.csv
    /// stack a rack's servers by it (`fabric::layout::rack_places`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_units: Option<u32>,
    /// How it is cooled; absent: air (the 8-GPU servers of the catalog are air cooled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooling: Option<Cooling>,
    /// The rack-scale system ([`RackSystem`]) this server is a compute tray of: its GPUs share
    /// the rack's NVLink domain, not one of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_system: Option<String>,
    pub price: Price,
    pub source: String,
}

impl ServerModel {
    /// How it is cooled ([`ServerModel::cooling`]; air where the entry does not say).
    pub fn cooling(&self) -> Cooling {
        self.cooling.unwrap_or(Cooling::Air)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if !(1..=1024).contains(&self.gpus) {
            return Err(format!(
                "server {}: gpus {}; valid: 1 to 1024",
                self.id, self.gpus
            ));
        }
        if self
            .rack_units
            .is_some_and(|u| !(1..=MAX_RACK_UNITS).contains(&u))
        {
            return Err(format!(
                "server {}: rack_units {}; valid: 1 to {MAX_RACK_UNITS}",
                self.id,
                self.rack_units.unwrap_or(0)
            ));
        }
        if self.includes_compute_nics != (self.compute_nics > 0) || self.compute_nics > 64 {
            return Err(format!(
                "server {}: compute_nics {} with includes_compute_nics {}; valid: 1 to 64 NICs the price includes, or 0 and false",
                self.id, self.compute_nics, self.includes_compute_nics
            ));
        }
        check_range(&self.id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        check_price(&self.id, &self.price)
    }
}

/// A rack-scale system: compute trays ([`ServerModel`]s naming it in `rack_system`) and NVLink
/// switch trays in one rack, every GPU of the rack in one NVLink domain (GB200 NVL72: 18 compute
/// trays and 9 NVLink switch trays; RA-11338-001, "Network Fabrics").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RackSystem {
    pub id: String,
    pub name: String,
    /// The compute tray's server id.
    pub tray: String,
    /// Compute trays in one rack: the NVLink domain is their GPUs.
    pub trays: u32,
    /// NVLink switch trays and the switch chips in them; every GPU has one NVLink to each chip.
    pub nvlink_switch_trays: u32,
    pub nvlink_switch_chips: u32,
    /// Height of one NVLink switch tray, rack units.
    pub nvlink_switch_tray_units: u32,
    /// The whole rack at full load, W: trays, NVLink switch trays, power shelves' losses and the
    /// rack's own management switches.
    pub power_w: f64,
    pub cooling: Cooling,
    /// Racks in one scalable unit of the system's reference architecture (DGX SuperPOD GB200: 8),
    /// where one is published, with its source in `su_source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub racks_per_su: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub su_source: String,
    /// The rack without its compute trays (NVLink switch trays, power shelves, cable cartridges,
    /// manifolds), for the cost of ownership; the trays are priced as servers.
    pub price: Price,
    pub source: String,
}

impl RackSystem {
    /// GPUs in one rack (the NVLink domain), with `tray_gpus` GPUs per tray.
    pub fn gpus(&self, tray_gpus: u32) -> u32 {
        self.trays * tray_gpus
    }

    /// The rack's power beyond its compute trays' (NVLink switch trays, power conversion,
    /// management switches), W: what a rack adds to `trays` trays of `tray_w` each.
    pub fn overhead_w(&self, tray_w: f64) -> f64 {
        (self.power_w - f64::from(self.trays) * tray_w).max(0.0)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let id = &self.id;
        if !(2..=1024).contains(&self.trays) {
            return Err(format!(
                "rack_system {id}: trays {}; valid: 2 to 1024",
                self.trays
            ));
        }
        if self.nvlink_switch_trays == 0
            || self.nvlink_switch_chips == 0
            || !self
                .nvlink_switch_chips
                .is_multiple_of(self.nvlink_switch_trays)
        {
            return Err(format!(
                "rack_system {id}: nvlink_switch_chips {} must be a whole number above zero per each of {} nvlink_switch_trays",
                self.nvlink_switch_chips, self.nvlink_switch_trays
            ));
        }
        let u = self.nvlink_switch_tray_units;
        if !(1..=MAX_RACK_UNITS).contains(&u) {
            return Err(format!(
                "rack_system {id}: nvlink_switch_tray_units {u}; valid: 1 to {MAX_RACK_UNITS}"
            ));
        }
        check_range(id, "power_w", self.power_w, 1.0, MAX_POWER_W)?;
        if let Some(n) = self.racks_per_su {
            if !(1..=1024).contains(&n) || self.su_source.trim().is_empty() {
                return Err(format!(
                    "rack_system {id}: racks_per_su {n} needs su_source and 1 to 1024 racks"
                ));
            }
        }
        check_price(id, &self.price)
    }
}

impl GpuModel {
    /// The GPU's memory, bytes: what the device exposes ([`GpuModel::memory_mib`], the total
    /// nvidia-smi reports), else the datasheet's "GB" figure, which counts GiB (an H100's five HBM3
    /// stacks of 16 GiB are its "80GB"; the device exposes 81,559 MiB of them).
    pub fn memory_bytes(&self) -> f64 {
        match self.memory_mib {
            Some(mib) => f64::from(mib) * f64::from(1u32 << 20),
            None => f64::from(self.memory_gb) * f64::from(1u32 << 30),
        }
    }

    /// [`GpuModel::memory_bytes`] for a sentence, in GB (10^9 bytes, as railyard prints memory)
    /// with the figure it comes from, as nvidia-smi prints it: `85.5 GB (81559 MiB)`, or `17.2 GB
    /// (16 GiB)`.
    pub fn memory_label(&self) -> String {
        let gb = self.memory_bytes() / 1e9;
        match self.memory_mib {
            Some(mib) => format!("{gb:.1} GB ({mib} MiB)"),
            None => format!("{gb:.1} GB ({} GiB)", self.memory_gb),
        }
    }

    /// Total NVLink bandwidth per direction, GB/s.
    pub fn nvlink_gbs(&self) -> f64 {
        self.nvlink_gbs_per_link * f64::from(self.nvlink_links)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        check_pcie(&self.id, self.pcie_gen, self.pcie_lanes)?;
        if self.memory_gb == 0 {
            return Err(format!("gpu {}: memory_gb must be at least 1", self.id));
        }
        if let Some(mib) = self.memory_mib {
            let most = u64::from(self.memory_gb) * 1024;
            if mib == 0 || u64::from(mib) > most {
                return Err(format!(
                    "gpu {}: memory_mib {mib} must be between 1 and memory_gb x 1024 = {most} (the device exposes at most its datasheet's GiB)",
                    self.id
                ));
            }
        }
        if !(self.peak_tflops_bf16.is_finite() && self.peak_tflops_bf16 > 0.0) {
            return Err(format!(
                "gpu {}: peak_tflops_bf16 must be positive",
                self.id
            ));
        }
        check_range(
            &self.id,
            "peak_tflops_bf16",
            self.peak_tflops_bf16,
            0.0,
            1e6,
        )?;
        match (self.peak_tflops_fp8, &self.fp8_source) {
            (None, None) => {}
            (Some(fp8), Some(_)) => {
                if !(fp8.is_finite() && fp8 > 0.0) {
                    return Err(format!("gpu {}: peak_tflops_fp8 must be positive", self.id));
                }
                check_range(&self.id, "peak_tflops_fp8", fp8, 0.0, 1e6)?;
            }
            (Some(_), None) => {
                return Err(format!(
                    "gpu {}: peak_tflops_fp8 needs fp8_source (where the peak comes from)",
                    self.id
                ))
            }
            (None, Some(_)) => {
                return Err(format!(
                    "gpu {}: fp8_source without peak_tflops_fp8",
                    self.id
                ))
            }
        }
        check_range(
            &self.id,
            "nvlink_gbs_per_link",
            self.nvlink_gbs_per_link,
            0.0,
            1e5,
        )?;
        if self.nvlink_links > 1024 {
            return Err(format!(
                "gpu {}: nvlink_links {}; valid: 0 to 1024",
                self.id, self.nvlink_links
            ));
        }
        check_range(&self.id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        match &self.price {
            Some(p) => check_price(&self.id, p),
            None => Ok(()),
        }
    }
}
