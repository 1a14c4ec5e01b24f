//! Catalog entry types, deserialized from TOML with unknown fields rejected.

use crate::number::number;
use crate::tech::{Family, Tech};
use serde::{Deserialize, Serialize};

/// A price and where it comes from. `per_m_usd` adds a per-metre part for cables and fibre.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub usd: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub per_m_usd: f64,
    /// True when no public price list backs the number; printed next to every cost it feeds.
    pub estimate: bool,
    pub source: String,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Price {
    /// The price of one unit of `length_m` metres (length matters only with a per-metre part).
    pub fn at_length(&self, length_m: f64) -> f64 {
        self.usd + self.per_m_usd * length_m
    }
}

/// Signalling facts of a link technology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Technology {
    pub id: Tech,
    pub name: String,
    pub family: Family,
    /// Data rate of one port after line coding and FEC, Gb/s (what the port name promises: NDR = 400).
    pub port_gbps: u32,
    pub lanes: u32,
    /// Signalling rate of one lane on the wire, Gb/s (e.g. 25.78125 for EDR, 106.25 for NDR).
    pub lane_signal_gbps: f64,
    pub modulation: String,
    /// Line coding and FEC, as the standard names them.
    pub coding: String,
    /// Default path MTU for RDMA, bytes (InfiniBand 4096; RoCE 4096 on a 4200+ byte Ethernet MTU).
    pub mtu_bytes: u32,
    pub source: String,
}

impl Technology {
    pub(crate) fn validate(&self) -> Result<(), String> {
        let id = self.id.as_str();
        if !(1..=10_000).contains(&self.port_gbps) {
            return Err(format!(
                "technology {id}: port_gbps {}; valid: 1 to 10000",
                self.port_gbps
            ));
        }
        if !(1..=16).contains(&self.lanes) {
            return Err(format!(
                "technology {id}: lanes {}; valid: 1 to 16",
                self.lanes
            ));
        }
        if !(256..=65_536).contains(&self.mtu_bytes) {
            return Err(format!(
                "technology {id}: mtu_bytes {}; valid: 256 to 65536",
                self.mtu_bytes
            ));
        }
        check_range(
            &format!("technology {id}"),
            "lane_signal_gbps",
            self.lane_signal_gbps,
            0.001,
            10_000.0,
        )
    }
}

/// One way a switch's ports can run: native or split (HDR100, NDR200, 4 x 100GbE ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortMode {
    /// Marketing name of the mode, e.g. `NDR`, `NDR200`, `HDR100`, `400GbE`.
    pub name: String,
    pub techs: Vec<Tech>,
    pub gbps: u32,
    pub lanes: u32,
    /// Logical ports the switch has in this mode.
    pub ports: u32,
}

/// A switch model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchModel {
    pub id: String,
    pub name: String,
    pub family: Family,
    /// Physical cages on the front panel (an OSFP cage carries two NDR ports on QM9700).
    pub cages: u32,
    /// Port modes, the native one first.
    pub modes: Vec<PortMode>,
    /// Port-to-port latency, ns.
    pub latency_ns: u32,
    /// Typical power without optics, W.
    pub power_w: f64,
    pub rack_units: u32,
    /// Runs its own subnet manager / management (QM9700) or needs an external one (QM9790).
    pub managed: bool,
    /// Whether the switch aggregates reductions in the network for NCCL (SHARP streaming
    /// aggregation, CollNet), with the document that says so; absent: not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharp: Option<Sharp>,
    pub price: Price,
    pub source: String,
}

/// Support for NVIDIA SHARP in-network aggregation as NCCL uses it (CollNet, through the
/// NCCL-SHARP plugin), and the document that says so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sharp {
    pub supported: bool,
    pub source: String,
}

impl Sharp {
    /// Whether `sharp` (an entry's field) says the device supports SHARP for NCCL.
    pub fn supported(sharp: &Option<Sharp>) -> bool {
        sharp.as_ref().is_some_and(|s| s.supported)
    }

    fn validate(sharp: &Option<Sharp>, id: &str) -> Result<(), String> {
        match sharp {
            Some(s) if s.source.trim().is_empty() => Err(format!(
                "{id}: sharp needs a source (the document that says whether SHARP is supported)"
            )),
            _ => Ok(()),
        }
    }
}

impl SwitchModel {
    /// The port mode that carries `tech`, at `gbps` if given, else the fastest such mode.
    pub fn mode_for(&self, tech: Tech, gbps: Option<u32>) -> Option<&PortMode> {
        self.modes
            .iter()
            .filter(|m| m.techs.contains(&tech))
            .filter(|m| gbps.is_none_or(|g| m.gbps == g))
            .max_by_key(|m| m.gbps)
    }

    /// Logical ports per cage in `mode`.
    pub fn ports_per_cage(&self, mode: &PortMode) -> u32 {
        (mode.ports / self.cages).max(1)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let id = &self.id;
        if self.modes.is_empty() {
            return Err(format!("switch {id}: needs at least one entry in modes"));
        }
        if self.cages == 0 {
            return Err(format!("switch {id}: cages must be at least 1"));
        }
        for m in &self.modes {
            if m.ports == 0 || m.gbps == 0 || m.lanes == 0 || m.techs.is_empty() {
                return Err(format!(
                    "switch {id}: mode {} needs ports, gbps, lanes and techs above zero",
                    m.name
                ));
            }
            if !(2..=MAX_SWITCH_PORTS).contains(&m.ports) {
                return Err(format!(
                    "switch {id}: mode {} has {} ports; valid: 2 to {MAX_SWITCH_PORTS}",
                    m.name, m.ports
                ));
            }
            if m.ports % self.cages != 0 {
                return Err(format!(
                    "switch {id}: mode {} has {} ports, not a multiple of {} cages",
                    m.name, m.ports, self.cages
                ));
            }
            if m.techs.iter().any(|t| t.family() != self.family) {
                return Err(format!(
                    "switch {id}: mode {} lists a technology of another family",
                    m.name
                ));
            }
        }
        if !(1..=MAX_RACK_UNITS).contains(&self.rack_units) {
            return Err(format!(
                "switch {id}: rack_units {}; valid: 1 to {MAX_RACK_UNITS}",
                self.rack_units
            ));
        }
        check_range(id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        Sharp::validate(&self.sharp, &format!("switch {id}"))?;
        check_price(id, &self.price)
    }
}

/// A network adapter (HCA in InfiniBand words).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicModel {
    pub id: String,
    pub name: String,
    pub techs: Vec<Tech>,
    pub ports: u32,
    pub port_gbps: u32,
    pub pcie_gen: u32,
    pub pcie_lanes: u32,
    pub power_w: f64,
    /// Whether the adapter takes part in SHARP in-network aggregation for NCCL (CollNet), with its
    /// source; absent: not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharp: Option<Sharp>,
    pub price: Price,
    pub source: String,
}

impl NicModel {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.ports == 0 || self.port_gbps == 0 || self.techs.is_empty() {
            return Err(format!(
                "nic {}: ports, port_gbps and techs must be set",
                self.id
            ));
        }
        if self.ports > 16 {
            return Err(format!(
                "nic {}: ports {}; valid: 1 to 16",
                self.id, self.ports
            ));
        }
        check_pcie(&self.id, self.pcie_gen, self.pcie_lanes)?;
        check_range(&self.id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        Sharp::validate(&self.sharp, &format!("nic {}", self.id))?;
        check_price(&self.id, &self.price)
    }
}

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

/// How a cable carries the signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CableKind {
    /// Passive direct-attach copper.
    Dac,
    /// Active (or linear-active) copper.
    Acc,
    /// Active optical cable, transceivers built in.
    Aoc,
    /// Separate transceivers at both ends and a fibre patch cord.
    Optics,
    /// Twisted-pair copper patch cord with RJ45 plugs (1 GbE management ports).
    Utp,
}

impl CableKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CableKind::Dac => "dac",
            CableKind::Acc => "acc",
            CableKind::Aoc => "aoc",
            CableKind::Optics => "optics",
            CableKind::Utp => "utp",
        }
    }
}

/// Which pair of devices a cable may join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CableUse {
    HostSwitch,
    SwitchSwitch,
}

/// A direct cable product family (DAC, ACC or AOC), stocked in fixed lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CableModel {
    pub id: String,
    pub name: String,
    pub kind: CableKind,
    pub techs: Vec<Tech>,
    pub uses: Vec<CableUse>,
    /// Stocked lengths, metres, ascending; the longest is the reach.
    pub lengths_m: Vec<f64>,
    /// Propagation delay, ns per metre.
    pub delay_ns_per_m: f64,
    /// Power of the whole cable (both ends), W; zero for passive copper.
    pub power_w: f64,
    /// How its plugs carry ports: one link end to end (`straight`, the default), or one plug of
    /// [`ports`](Self::ports) ports at one end and the same at the other (`twin`: both cages carry
    /// the same links) or single-port plugs (`splitter`: one leg per link). A cage whose ports go
    /// to different places cannot take a straight cable per port (hardware.md: a switch cage holds
    /// one twin-port transceiver; the splitter DACs of NDR).
    #[serde(default)]
    pub form: CableForm,
    /// Ports of its multi-port plug (1 for a straight cable); price and power are the whole cable's.
    #[serde(default = "one_port")]
    pub ports: u32,
    /// The rate each port (each leg of a splitter) carries, Gb/s: a multi-port cable of a
    /// technology need not carry its top rate (the HDR splitters' legs are HDR100, 100 Gb/s).
    /// Absent: every rate of its technologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_gbps: Option<u32>,
    pub price: Price,
    pub source: String,
}

/// How a cable's plugs carry ports ([`CableModel::form`]).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CableForm {
    /// One port at each end.
    #[default]
    Straight,
    /// One multi-port plug at each end; every port of one cage goes to the same other cage.
    Twin,
    /// One multi-port plug at one end, one single-port leg per port at the other.
    Splitter,
}

impl CableForm {
    pub const ALL: [CableForm; 3] = [CableForm::Straight, CableForm::Twin, CableForm::Splitter];

    pub fn as_str(self) -> &'static str {
        match self {
            CableForm::Straight => "straight",
            CableForm::Twin => "twin",
            CableForm::Splitter => "splitter",
        }
    }
}

fn one_port() -> u32 {
    1
}

impl CableModel {
    /// Whether it carries links of `tech` at `gbps` on every port ([`CableModel::port_gbps`]).
    pub fn carries(&self, tech: Tech, gbps: u32) -> bool {
        self.techs.contains(&tech) && self.port_gbps.is_none_or(|g| g >= gbps)
    }

    pub fn reach_m(&self) -> f64 {
        self.lengths_m.last().copied().unwrap_or(0.0)
    }

    /// The shortest stocked length that covers `need_m`.
    pub fn length_for(&self, need_m: f64) -> Option<f64> {
        self.lengths_m.iter().copied().find(|&l| l + 1e-9 >= need_m)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let id = &self.id;
        if self.kind == CableKind::Optics {
            return Err(format!(
                "cable {id}: kind `optics` is described by transceiver and fibre entries; valid kinds: dac, acc, aoc"
            ));
        }
        check_lengths(id, &self.lengths_m)?;
        if self.techs.is_empty() || self.uses.is_empty() {
            return Err(format!("cable {id}: techs and uses must not be empty"));
        }
        check_range(id, "delay_ns_per_m", self.delay_ns_per_m, 0.0, 1e3)?;
        check_range(id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        match (self.form, self.ports) {
            (CableForm::Straight, 1) => {}
            (CableForm::Straight, n) => {
                return Err(format!(
                    "cable {id}: ports = {n} with form `straight` (one port per plug); set form = \"twin\" or \"splitter\" for a multi-port plug"
                ))
            }
            (form, n) if !(2..=8).contains(&n) => {
                return Err(format!(
                    "cable {id}: form `{}` needs ports from 2 to 8 (the multi-port plug's ports), not {n}",
                    form.as_str()
                ))
            }
            _ => {}
        }
        if let Some(g) = self.port_gbps {
            if !(1..=1_600).contains(&g) {
                return Err(format!(
                    "cable {id}: port_gbps = {g}; valid: 1 to 1600 (Gb/s each port carries)"
                ));
            }
        }
        check_price(id, &self.price)
    }
}

/// Multimode or single-mode fibre.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FibreKind {
    Mmf,
    Smf,
}

/// A pluggable optical transceiver. `ports` is how many logical ports one module carries
/// (2 for the twin-port OSFP modules NDR switches use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransceiverModel {
    pub id: String,
    pub name: String,
    pub techs: Vec<Tech>,
    pub form_factor: String,
    pub ports: u32,
    pub fibre: FibreKind,
    /// The optical connector of one port, which the fibre must end in: `mpo-12` (SR4 and DR4:
    /// 8 of 12 fibres, the default), `mpo-16` (SR8: 16 fibres, IEEE 802.3df) or `lc-duplex` (LR4
    /// and FR4: wavelengths multiplexed onto one pair, IEEE 802.3ba / 802.3cd).
    #[serde(default = "default_connector")]
    pub connector: String,
    pub reach_m: f64,
    pub power_w: f64,
    pub price: Price,
    pub source: String,
}

/// The connector of an optical port or fibre that does not name one.
fn default_connector() -> String {
    "mpo-12".to_string()
}

/// Connectors a catalog may name.
pub const CONNECTORS: [&str; 3] = ["mpo-12", "mpo-16", "lc-duplex"];

fn check_connector(id: &str, connector: &str) -> Result<(), String> {
    if CONNECTORS.contains(&connector) {
        Ok(())
    } else {
        Err(format!(
            "{id}: connector `{connector}`; valid: {}",
            CONNECTORS.join(", ")
        ))
    }
}

impl TransceiverModel {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.ports == 0 || self.reach_m <= 0.0 || self.techs.is_empty() {
            return Err(format!(
                "transceiver {}: ports, reach_m and techs must be set",
                self.id
            ));
        }
        if self.ports > 16 {
            return Err(format!(
                "transceiver {}: ports {}; valid: 1 to 16",
                self.id, self.ports
            ));
        }
        check_range(&self.id, "reach_m", self.reach_m, 0.0, 1e6)?;
        check_range(&self.id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        check_connector(&self.id, &self.connector)?;
        check_price(&self.id, &self.price)
    }
}

/// A fibre patch cord type (MPO trunk), stocked in fixed lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FibreModel {
    pub id: String,
    pub name: String,
    pub kind: FibreKind,
    /// The connector at both ends (see [`TransceiverModel::connector`]).
    #[serde(default = "default_connector")]
    pub connector: String,
    pub lengths_m: Vec<f64>,
    pub delay_ns_per_m: f64,
    pub price: Price,
    pub source: String,
}

impl FibreModel {
    pub fn length_for(&self, need_m: f64) -> Option<f64> {
        self.lengths_m.iter().copied().find(|&l| l + 1e-9 >= need_m)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        check_lengths(&self.id, &self.lengths_m)?;
        check_range(&self.id, "delay_ns_per_m", self.delay_ns_per_m, 0.0, 1e3)?;
        check_connector(&self.id, &self.connector)?;
        check_price(&self.id, &self.price)
    }
}

/// The most one part may cost, US dollars: far above any switch, NIC, cable or module (a QM9700 lists
/// near $30,000), so a price past it is a typo. Bounded prices keep every cost sum finite and exact
/// enough to print: at most [`MAX_PRICE_USD`] x 2^32 parts stays below 2^63.
pub const MAX_PRICE_USD: f64 = 1e9;
/// The most a cable or fibre may cost per metre, US dollars.
pub const MAX_PRICE_PER_M_USD: f64 = 1e6;
/// The most ports a switch mode may have (the largest catalog switch has 256 in a split mode). Tree
/// sizes grow with the cube of the radix; bounding it keeps every count in range.
pub const MAX_SWITCH_PORTS: u32 = 2048;
/// The tallest device, in rack units: the height of a tall (58U) rack.
pub const MAX_RACK_UNITS: u32 = 58;
/// The most power one part may draw, watts.
pub const MAX_POWER_W: f64 = 1e6;

/// Checks that a price is a number of US dollars in range; `what` names the entry's price field.
pub fn check_price_usd(what: &str, usd: f64, per_m_usd: f64) -> Result<(), String> {
    if !(usd.is_finite() && (0.0..=MAX_PRICE_USD).contains(&usd)) {
        return Err(format!(
            "{what}: {} is not a price; valid: 0 to {MAX_PRICE_USD:.0} US dollars",
            number(usd)
        ));
    }
    if !(per_m_usd.is_finite() && (0.0..=MAX_PRICE_PER_M_USD).contains(&per_m_usd)) {
        return Err(format!(
            "{what}: per_m_usd {} is not a price per metre; valid: 0 to {MAX_PRICE_PER_M_USD:.0} US dollars",
            number(per_m_usd)
        ));
    }
    Ok(())
}

/// Checks a number of a catalog entry: finite and within `min..=max`.
fn check_range(id: &str, field: &str, v: f64, min: f64, max: f64) -> Result<(), String> {
    if v.is_finite() && v >= min && v <= max {
        Ok(())
    } else {
        Err(format!(
            "{id}: {field} {} is out of range; valid: {} to {}",
            number(v),
            number(min),
            number(max)
        ))
    }
}

fn check_price(id: &str, p: &Price) -> Result<(), String> {
    check_price_usd(&format!("{id}: price"), p.usd, p.per_m_usd)?;
    if p.source.trim().is_empty() {
        return Err(format!(
            "{id}: price.source must name where the price comes from"
        ));
    }
    Ok(())
}

fn check_pcie(id: &str, gen: u32, lanes: u32) -> Result<(), String> {
    if !(1..=6).contains(&gen) {
        return Err(format!(
            "{id}: pcie_gen {gen} is not a PCIe generation; valid: 1 to 6"
        ));
    }
    if ![1, 2, 4, 8, 16, 32].contains(&lanes) {
        return Err(format!(
            "{id}: pcie_lanes {lanes}; valid: 1, 2, 4, 8, 16, 32"
        ));
    }
    Ok(())
}

fn check_lengths(id: &str, lengths: &[f64]) -> Result<(), String> {
    if lengths.is_empty()
        || lengths
            .iter()
            .any(|l| !(l.is_finite() && *l > 0.0 && *l <= 1e5))
    {
        return Err(format!(
            "{id}: lengths_m must list positive lengths of at most 100000 m"
        ));
    }
    if lengths.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!("{id}: lengths_m must be strictly ascending"));
    }
    Ok(())
}
