//! The cluster spec: what the user asks for, parsed from TOML into validated types.
//!
//! Parsing happens in two steps, as smoltcp parses packets: TOML becomes a [`raw::RawSpec`] (shape only,
//! unknown keys rejected with their line), command-line overrides are applied to the raw spec
//! ([`Overrides`]), and [`ClusterSpec::from_raw`] checks every value and fills defaults. After that point
//! a [`ClusterSpec`] is internally consistent; checks that need the hardware catalog (does this switch
//! carry this speed?) happen when the fabric is built.
//!
//! No I/O: callers pass text and a name for messages.

pub mod keys;
pub mod presets;
pub mod raw;
pub mod run;

use keys::{COMPUTE_NICS, GPUS_PER_SERVER, OVERSUBSCRIPTION, SERVERS, SU_SIZE};
use railyard_catalog::Tech;
use raw::{AutoOr, AutoOrNone, RawPcieSwitch, RawSpec};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// An error in a spec: where it came from, which field, what is wrong and what is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// File name, `preset NAME`, or `command line`.
    pub origin: String,
    /// Dotted field path, e.g. `servers.compute_nics`; empty when the TOML itself is malformed.
    pub field: String,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}: {}: {}", self.origin, self.field, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

/// Fabric topology families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Every NIC port on one switch.
    SingleSwitch,
    /// Folded Clos: leaves, spines and (when needed) cores; NIC ports fill leaves in order.
    FatTree,
    /// Fat-tree in scalable units where HCA i of every server goes to leaf i of its unit.
    RailOptimized,
    /// Rail leaves only, no spine: cross-rail traffic crosses NVLink inside the server (Wang et al.).
    RailOnly,
    /// The seed's design: odd HCAs on switch 1, even HCAs on switch 2, switches joined by a few cables.
    TwoSwitch,
}

impl Topology {
    pub const ALL: [Topology; 5] = [
        Topology::SingleSwitch,
        Topology::FatTree,
        Topology::RailOptimized,
        Topology::RailOnly,
        Topology::TwoSwitch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Topology::SingleSwitch => "single-switch",
            Topology::FatTree => "fat-tree",
            Topology::RailOptimized => "rail-optimized",
            Topology::RailOnly => "rail-only",
            Topology::TwoSwitch => "two-switch",
        }
    }

    pub fn valid_names() -> String {
        Topology::ALL.map(Topology::as_str).join(", ")
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Topology {
    type Err = String;
    fn from_str(s: &str) -> Result<Topology, String> {
        Topology::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown topology `{s}`; valid: {}", Topology::valid_names()))
    }
}

/// Where leaf switches sit relative to the servers they serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeafPlacement {
    /// A network rack at the end of the row that holds the unit's servers.
    EndOfRow,
    /// A network rack in the middle of that row.
    MiddleOfRow,
    /// In the rack of the first server the leaf serves.
    TopOfRack,
}

impl LeafPlacement {
    pub const ALL: [LeafPlacement; 3] = [
        LeafPlacement::EndOfRow,
        LeafPlacement::MiddleOfRow,
        LeafPlacement::TopOfRack,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            LeafPlacement::EndOfRow => "end-of-row",
            LeafPlacement::MiddleOfRow => "middle-of-row",
            LeafPlacement::TopOfRack => "top-of-rack",
        }
    }
}

impl FromStr for LeafPlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<LeafPlacement, String> {
        LeafPlacement::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown placement `{s}`; valid: {}",
                    LeafPlacement::ALL.map(LeafPlacement::as_str).join(", ")
                )
            })
    }
}

/// The cooling a site's racks have (`layout.cooling`): what a design's servers may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SiteCooling {
    /// Air only: servers that need a liquid loop (GB200 NVL72, MI355X) cannot be planned.
    Air,
    /// A liquid loop at the racks (direct liquid cooling); air-cooled servers run there too.
    Liquid,
}

impl SiteCooling {
    pub const ALL: [SiteCooling; 2] = [SiteCooling::Air, SiteCooling::Liquid];
    pub fn as_str(self) -> &'static str {
        match self {
            SiteCooling::Air => "air",
            SiteCooling::Liquid => "liquid",
        }
    }
}

impl FromStr for SiteCooling {
    type Err = String;
    fn from_str(s: &str) -> Result<SiteCooling, String> {
        SiteCooling::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown cooling `{s}`; valid: {}",
                    SiteCooling::ALL.map(SiteCooling::as_str).join(", ")
                )
            })
    }
}

/// A validated cluster spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterSpec {
    /// Where the spec came from (`preset NAME` or a file name), for messages.
    #[serde(skip)]
    pub origin: String,
    pub name: String,
    pub description: String,
    pub servers: ServerSpec,
    pub fabric: FabricSpec,
    pub layout: LayoutSpec,
    pub storage: StorageSpec,
    pub management: ManagementSpec,
    /// Where each design value came from, and what overrides reset.
    #[serde(skip)]
    pub provenance: Provenance,
    /// The overrides (flags) that changed this design from its preset or spec file, as
    /// `servers=16` in the key table's order; empty when nothing changed it. The front end sets
    /// them (with the description: [`ClusterSpec::describe_overrides`]); plans and reports title
    /// the design by them.
    #[serde(skip)]
    pub overrides: Vec<String>,
}

/// Where a design value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Not set: railyard chooses.
    Auto,
    /// Set by a built-in preset: the reference design's choice. The plan keeps it; `--alternatives`
    /// also shows designs that do not.
    Preset,
    /// Set by the user (a spec file, a flag or a `key=value` override): kept everywhere.
    Given,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Auto => "auto",
            Source::Preset => "preset",
            Source::Given => "given",
        }
    }
}

/// A value an override reset to automatic, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reset {
    /// Dotted field, e.g. `fabric.switch`.
    pub field: String,
    /// The value it had, e.g. `QM9700`.
    pub value: String,
    /// Why it was reset, e.g. `the technology changed from ib-ndr to roce-400g`.
    pub because: String,
}

/// The design fields whose source [`Provenance`] records.
pub const TRACKED_FIELDS: &[&str] = &[
    "servers.nic",
    "fabric.tech",
    "fabric.topology",
    "fabric.switch",
    "fabric.oversubscription",
    "fabric.su_size",
    "fabric.port_gbps",
    "storage.switch",
    "storage.spines",
    "storage.array_ports",
];

/// Where a spec's design values came from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Provenance {
    /// The built-in preset the spec started from.
    pub preset: Option<String>,
    /// Source of each field of [`TRACKED_FIELDS`].
    pub sources: BTreeMap<String, Source>,
    pub resets: Vec<Reset>,
}

impl Provenance {
    /// Where `field` (one of [`TRACKED_FIELDS`]) came from; `Auto` for fields not tracked.
    pub fn source(&self, field: &str) -> Source {
        self.sources.get(field).copied().unwrap_or(Source::Auto)
    }

    /// The reset of `field`, if an override reset it.
    pub fn reset(&self, field: &str) -> Option<&Reset> {
        self.resets.iter().find(|r| r.field == field)
    }
}

/// The storage fabric: on the servers' storage NICs, as the DGX SuperPOD reference architectures plan
/// it (RA-11333-001, "Storage Fabric"): server leaves near 4:3, storage systems on leaves of their own
/// at 1:1, one spine tier.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StorageSpec {
    /// False for `fabric = "none"` (`--storage none`).
    pub wanted: bool,
    /// Planned: wanted, and the servers have storage ports.
    pub enabled: bool,
    pub tech: Tech,
    /// Switch catalog id; `None` picks the cheapest that carries the technology.
    pub switch: Option<String>,
    /// Storage ports cabled per server (default: one per storage NIC).
    pub ports_per_server: u32,
    /// Down:up ratio of the server leaves, an upper bound.
    pub oversubscription: f64,
    /// Storage system ports; `None` = 3 per 8 servers, as the reference's 48 for 4 units of 32.
    pub array_ports: Option<u32>,
    /// Spine switches; `None` = the fewest that balance the leaves.
    pub spines: Option<u32>,
}

/// The management networks: in-band Ethernet (provisioning, home directories, job services) and
/// out-of-band Ethernet (every device's BMC or management port), as RA-11333-001 plans them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManagementSpec {
    pub in_band: bool,
    pub out_of_band: bool,
    pub in_band_switch: String,
    pub oob_switch: String,
    /// In-band ports per server (DGX H100: two, bonded).
    pub in_band_ports_per_server: u32,
    /// Cluster management (head) nodes, each with `management_server_ports` in-band ports.
    pub management_servers: u32,
    pub management_server_ports: u32,
    /// Fabric manager appliances (UFM), on the out-of-band network.
    pub fabric_managers: u32,
    /// Ports of the user (NFS) storage on the in-band network.
    pub user_storage_ports: u32,
    /// Uplinks from the in-band network to the data-centre network.
    pub uplinks: u32,
    /// Rack PDUs on the out-of-band network; `None` = 3 per server rack and 2 per other rack.
    pub pdus: Option<u32>,
    /// Out-of-band ports used per switch (the rest stay free for growth).
    pub oob_ports_per_switch: u32,
}

/// What one server looks like, and how many there are.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSpec {
    pub count: u32,
    pub model: String,
    /// GPU catalog id.
    pub gpu: String,
    pub gpus_per_server: u32,
    /// NIC catalog id; `None` picks one for the technology.
    pub nic: Option<String>,
    pub compute_nics: u32,
    pub storage_nics: u32,
    pub gpudirect: bool,
    pub nic_ports_per_cage: u32,
    /// PCIe switches, each with the GPUs and NICs under it (0-based indexes). GPUs and NICs on no
    /// switch hang off the CPU root complex directly.
    pub pcie: Vec<PcieSwitchSpec>,
}

impl ServerSpec {
    /// GPUs per compute NIC (4 for a 1:4 NIC:GPU ratio); 0 when there are more NICs than GPUs.
    pub fn gpus_per_nic(&self) -> u32 {
        self.gpus_per_server / self.compute_nics
    }

    /// The NIC:GPU ratio as people write it: `1:1`, `1:4`, `2:1`.
    pub fn nic_ratio(&self) -> String {
        if self.compute_nics >= self.gpus_per_server {
            format!("{}:1", self.compute_nics / self.gpus_per_server)
        } else {
            format!("1:{}", self.gpus_per_server / self.compute_nics)
        }
    }
}

/// One PCIe switch and what hangs off it (0-based GPU and NIC indexes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PcieSwitchSpec {
    pub gpus: Vec<u32>,
    pub nics: Vec<u32>,
    pub storage_nics: Vec<u32>,
}

/// The compute fabric asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FabricSpec {
    pub tech: Tech,
    pub topology: Topology,
    /// Switch catalog id; `None` picks one for the technology.
    pub switch: Option<String>,
    /// Down:up ratio at the leaf (1 = non-blocking).
    pub oversubscription: f64,
    /// Servers per scalable unit; `None` = as many as a leaf has down-ports.
    pub su_size: Option<u32>,
    pub planes: u32,
    pub port_gbps: Option<u32>,
    /// Links between the two switches of a two-switch design; `None` = as many as the asked
    /// oversubscription needs (`fabric::topo::isl_links`).
    pub isl_links: Option<u32>,
}

/// The machine room, from which cable lengths follow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutSpec {
    /// Servers in one rack, at most: fewer where they would not fit in `rack_units`
    /// ([`LayoutSpec::servers_in_rack`]).
    pub servers_per_rack: u32,
    /// Centre-to-centre distance of neighbouring racks in a row, m.
    pub rack_pitch_m: f64,
    /// Centre-to-centre distance of neighbouring rows, m.
    pub row_pitch_m: f64,
    pub racks_per_row: u32,
    pub leaf_placement: LeafPlacement,
    /// Switches in one network rack, at most: fewer where they would not fit in `rack_units`
    /// ([`LayoutSpec::switches_in_rack`]).
    pub switches_per_rack: u32,
    /// Height of every rack, rack units (42U, the common EIA-310 rack; 48U and 52U racks exist).
    /// Server racks must hold `servers_per_rack` servers; network racks hold as many switches as fit.
    pub rack_units: u32,
    /// Vertical run from a device up to the overhead tray, m (counted at both ends).
    pub tray_drop_m: f64,
    /// Run between two devices in the same rack, m.
    pub in_rack_m: f64,
    /// Extra length for bends and service loops, as a fraction.
    pub slack: f64,
    /// The most power one server rack may draw, kW (`None`: no limit): fewer servers stand in a
    /// rack where theirs would draw more ([`LayoutSpec::servers_in_rack`]); a rack-scale system or
    /// a server that alone draws more cannot be planned.
    pub max_rack_kw: Option<f64>,
    /// The racks' cooling (`None`: not said; the plan reports what the servers need).
    pub cooling: Option<SiteCooling>,
}

impl LayoutSpec {
    /// Switches `height_u` rack units tall in one network rack: `switches_per_rack`, or as many as
    /// fit in `rack_units` if that is fewer (at least one). Sixteen 4U Q3400 spines filled a rack to
    /// U64.
    pub fn switches_in_rack(&self, height_u: u32) -> u32 {
        self.switches_per_rack
            .min(self.rack_units / height_u.max(1))
            .max(1)
    }

    /// Servers `height_u` rack units tall drawing `power_w` each (unknown: no power limit) in one
    /// rack: `servers_per_rack`, or as many as fit in `rack_units` or within `max_rack_kw` if that
    /// is fewer (at least one: a server above the limit alone is refused before planning). Eight 8U
    /// servers were drawn up to U57; four 10.2 kW DGX H100 draw 40.8 kW, three fit 40 kW.
    pub fn servers_in_rack(&self, height_u: Option<u32>, power_w: Option<f64>) -> u32 {
        let by_power = match (self.max_rack_kw, power_w) {
            (Some(kw), Some(w)) if w > 0.0 => {
                (kw * 1000.0 / w).floor().min(f64::from(u32::MAX)) as u32
            }
            _ => u32::MAX,
        };
        let by_space = height_u.map_or(u32::MAX, |u| self.rack_units / u.max(1));
        self.servers_per_rack.min(by_space).min(by_power).max(1)
    }
}

/// Design keys that override a preset or spec file (set from [`keys::DESIGN_KEYS`] by every front
/// end). `None` leaves the value alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub servers: Option<u32>,
    pub gpus_per_server: Option<u32>,
    pub nics_per_server: Option<u32>,
    pub gpu: Option<String>,
    pub tech: Option<Tech>,
    pub topology: Option<Topology>,
    pub switch: Option<String>,
    pub nic: Option<String>,
    pub oversubscription: Option<f64>,
    pub gpudirect: Option<bool>,
    pub su_size: Option<u32>,
    /// Most kW per server rack (`layout.max_rack_kw`).
    pub max_rack_kw: Option<f64>,
    /// The racks' cooling (`layout.cooling`).
    pub cooling: Option<SiteCooling>,
    /// NIC:GPU ratio as (NICs, GPUs), e.g. (1, 4); sets the compute NICs from the GPUs per server.
    pub nic_ratio: Option<(u32, u32)>,
    /// `Some(false)`: leave the storage fabric out (`--storage none`); `Some(true)`: plan it.
    pub storage: Option<bool>,
    /// `Some(false)`: leave both management networks out (`--management none`); `Some(true)`:
    /// plan both.
    pub management: Option<bool>,
}

/// The NIC:GPU ratios that give a whole number of NICs for `gpus` GPUs per server, for messages:
/// `1:1, 1:2, 1:3, 1:6 or N:1` for 6.
fn nic_ratios_for(gpus: i64) -> String {
    if !(1..=1024).contains(&gpus) {
        return "a ratio NICS:GPUS whose NICS x GPUs per server / GPUS is whole".to_string();
    }
    let shared: Vec<String> = (1..=gpus)
        .filter(|d| gpus % d == 0)
        .map(|d| format!("1:{d}"))
        .collect();
    format!(
        "{} for {gpus} GPUs per server, or N:1 (N NICs per GPU)",
        shared.join(", ")
    )
}

impl Overrides {
    /// Applies the flags to a raw spec.
    ///
    /// An override that changes nothing changes nothing: `--tech ib-ndr` on an NDR spec keeps its
    /// switch. Changing the technology resets the NIC, switch, port speed and scalable-unit size that
    /// belonged to the old one to automatic unless they are given too (so `--tech roce-400g` on an
    /// InfiniBand preset picks Ethernet hardware), and records each reset so the plan can say so.
    /// Changing GPUs or NICs per server replaces an explicit PCIe layout by an even one with the same
    /// number of PCIe switches.
    pub fn apply(&self, raw: &mut RawSpec) -> Result<(), SpecError> {
        let mut given: Vec<&str> = Vec::new();
        let s = &mut raw.servers;
        if let Some(n) = self.servers {
            s.count = Some(i64::from(n));
            given.push("servers.count");
        }
        if self.gpus_per_server.is_some()
            || self.nics_per_server.is_some()
            || self.nic_ratio.is_some()
        {
            if !s.pcie_switch.is_empty() && s.pcie_switches.is_none() {
                s.pcie_switches = Some(s.pcie_switch.len() as i64);
            }
            s.pcie_switch.clear();
        }
        if let Some(n) = self.gpus_per_server {
            s.gpus_per_server = Some(i64::from(n));
            given.push("servers.gpus_per_server");
        }
        if let Some(n) = self.nics_per_server {
            s.compute_nics = Some(i64::from(n));
            given.push("servers.compute_nics");
        }
        if let Some((nics, gpus)) = self.nic_ratio {
            let per_server = s.gpus_per_server.unwrap_or(8);
            // In i128: the GPUs per server are not range-checked yet (from_raw does that).
            let n = i128::from(per_server) * i128::from(nics);
            if gpus == 0 || n % i128::from(gpus) != 0 {
                return Err(SpecError {
                    origin: "command line".to_string(),
                    field: "nic-ratio".to_string(),
                    message: format!(
                        "{nics}:{gpus} does not give a whole number of NICs for {per_server} GPUs per server; valid: {}",
                        nic_ratios_for(per_server)
                    ),
                });
            }
            let from_ratio = n / i128::from(gpus);
            if let Some(m) = self.nics_per_server {
                if i128::from(m) != from_ratio {
                    return Err(SpecError {
                        origin: "command line".to_string(),
                        field: "nic-ratio".to_string(),
                        message: format!(
                            "{nics}:{gpus} gives {from_ratio} NICs for {per_server} GPUs per server, but nics-per-server {m} is given too; give one of them"
                        ),
                    });
                }
            }
            // Out of i64's range is out of range for from_raw too: it names servers.compute_nics.
            s.compute_nics = Some(i64::try_from(from_ratio).unwrap_or(i64::MAX));
            given.push("servers.compute_nics");
        }
        if let Some(g) = &self.gpu {
            s.gpu = Some(g.clone());
            given.push("servers.gpu");
        }
        if let Some(t) = self.tech {
            let old = raw
                .fabric
                .tech
                .clone()
                .unwrap_or_else(|| "ib-ndr".to_string());
            if old != t.as_str() {
                let because = format!("the technology changed from {old} to {t}");
                let reset = |field: &str, value: Option<String>, resets: &mut Vec<Reset>| {
                    if let Some(value) = value.filter(|v| v != "auto") {
                        resets.push(Reset {
                            field: field.to_string(),
                            value,
                            because: because.clone(),
                        });
                    }
                };
                if self.switch.is_none() {
                    reset("fabric.switch", raw.fabric.switch.take(), &mut raw.resets);
                }
                if self.nic.is_none() {
                    reset("servers.nic", raw.servers.nic.take(), &mut raw.resets);
                }
                // The storage fabric runs the compute fabric's technology unless it names its own.
                if raw.storage.tech.as_deref().is_none_or(|t| t == "auto") {
                    reset("storage.switch", raw.storage.switch.take(), &mut raw.resets);
                }
                reset(
                    "fabric.port_gbps",
                    raw.fabric.port_gbps.take().map(|g| g.to_string()),
                    &mut raw.resets,
                );
                if self.su_size.is_none() {
                    reset(
                        "fabric.su_size",
                        raw.fabric
                            .su_size
                            .take()
                            .and_then(AutoOr::value)
                            .map(|n| n.to_string()),
                        &mut raw.resets,
                    );
                }
            }
            raw.fabric.tech = Some(t.as_str().to_string());
            given.push("fabric.tech");
        }
        let s = &mut raw.servers;
        if let Some(n) = &self.nic {
            s.nic = Some(n.clone());
            given.push("servers.nic");
        }
        if let Some(g) = self.gpudirect {
            s.gpudirect = Some(g);
            given.push("servers.gpudirect");
        }
        if let Some(t) = self.topology {
            raw.fabric.topology = Some(t.as_str().to_string());
            given.push("fabric.topology");
        }
        if let Some(sw) = &self.switch {
            raw.fabric.switch = Some(sw.clone());
            given.push("fabric.switch");
        }
        if let Some(r) = self.oversubscription {
            raw.fabric.oversubscription = Some(r);
            given.push("fabric.oversubscription");
        }
        if let Some(n) = self.su_size {
            raw.fabric.su_size = Some(AutoOr::Value(n));
            given.push("fabric.su_size");
        }
        if let Some(kw) = self.max_rack_kw {
            raw.layout.max_rack_kw = Some(kw);
            given.push("layout.max_rack_kw");
        }
        if let Some(c) = self.cooling {
            raw.layout.cooling = Some(c.as_str().to_string());
            given.push("layout.cooling");
        }
        let choice = |on: bool| {
            if on {
                AutoOrNone::Auto
            } else {
                AutoOrNone::None
            }
        };
        if let Some(on) = self.storage {
            raw.storage.fabric = Some(choice(on));
            given.push("storage.fabric");
        }
        if let Some(on) = self.management {
            raw.management.in_band = Some(choice(on));
            raw.management.out_of_band = Some(choice(on));
            given.extend(["management.in_band", "management.out_of_band"]);
        }
        raw.given.extend(given.into_iter().map(str::to_string));
        Ok(())
    }
}

/// Parses spec TOML into its raw form; errors name the line.
pub fn parse_raw(text: &str, origin: &str) -> Result<RawSpec, SpecError> {
    toml::from_str(text).map_err(|e| SpecError {
        origin: origin.to_string(),
        field: String::new(),
        message: railyard_catalog::toml_message(&e, text),
    })
}

/// Parses and validates a spec file.
pub fn parse(text: &str, origin: &str) -> Result<ClusterSpec, SpecError> {
    ClusterSpec::from_raw(&parse_raw(text, origin)?, origin)
}

struct Checker<'a> {
    origin: &'a str,
}

impl Checker<'_> {
    fn err(&self, field: &str, message: impl Into<String>) -> SpecError {
        SpecError {
            origin: self.origin.to_string(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn count(
        &self,
        field: &str,
        v: Option<i64>,
        default: u32,
        min: u32,
        max: u32,
    ) -> Result<u32, SpecError> {
        let Some(v) = v else { return Ok(default) };
        u32::try_from(v)
            .ok()
            .filter(|v| (min..=max).contains(v))
            .ok_or_else(|| self.err(field, format!("{v} is out of range; valid: {min} to {max}")))
    }

    fn length(
        &self,
        field: &str,
        v: Option<f64>,
        default: f64,
        min: f64,
        max: f64,
    ) -> Result<f64, SpecError> {
        let Some(v) = v else { return Ok(default) };
        if v.is_finite() && v >= min && v <= max {
            Ok(v)
        } else {
            Err(self.err(
                field,
                format!(
                    "{} is out of range; valid: {} to {}",
                    railyard_catalog::number(v),
                    railyard_catalog::number(min),
                    railyard_catalog::number(max)
                ),
            ))
        }
    }

    fn parse<T: FromStr<Err = String>>(
        &self,
        field: &str,
        v: Option<&String>,
        default: T,
    ) -> Result<T, SpecError> {
        match v {
            None => Ok(default),
            Some(s) => s.parse().map_err(|m: String| self.err(field, m)),
        }
    }
}

/// `"auto"` and absent both mean automatic.
fn auto_id(v: &Option<String>) -> Option<String> {
    v.as_ref().filter(|s| s.as_str() != "auto").cloned()
}

impl ClusterSpec {
    /// Validates a raw spec, filling defaults. Defaults describe a DGX H100-class server on NDR.
    pub fn from_raw(raw: &RawSpec, origin: &str) -> Result<ClusterSpec, SpecError> {
        let c = Checker { origin };
        let s = &raw.servers;
        let count = c.count("servers.count", s.count, 1, SERVERS.min, SERVERS.max)?;
        let gpus = c.count(
            "servers.gpus_per_server",
            s.gpus_per_server,
            8,
            GPUS_PER_SERVER.min,
            GPUS_PER_SERVER.max,
        )?;
        let nics = c.count(
            "servers.compute_nics",
            s.compute_nics,
            gpus,
            COMPUTE_NICS.min,
            COMPUTE_NICS.max,
        )?;
        if !(gpus % nics == 0 || nics % gpus == 0) {
            let valid: Vec<String> = (1..=gpus)
                .filter(|d| gpus % d == 0)
                .map(|d| d.to_string())
                .collect();
            return Err(c.err(
                "servers.compute_nics",
                format!(
                    "{nics} compute NICs do not divide {gpus} GPUs into a NIC:GPU ratio; valid: {} (or a multiple of {gpus})",
                    valid.join(", ")
                ),
            ));
        }
        let storage_nics = c.count("servers.storage_nics", s.storage_nics, 0, 0, 16)?;
        let nic_ports_per_cage =
            c.count("servers.nic_ports_per_cage", s.nic_ports_per_cage, 1, 1, 2)?;
        let pcie = if s.pcie_switch.is_empty() {
            let n = c.count(
                "servers.pcie_switches",
                s.pcie_switches,
                gpus.div_ceil(2).min(gpus),
                0,
                64,
            )?;
            even_pcie_layout(n, gpus, nics, storage_nics)
        } else {
            check_pcie_layout(&c, &s.pcie_switch, gpus, nics, storage_nics)?
        };
        let gpu = s.gpu.clone().unwrap_or_else(|| "H100".to_string());
        let servers = ServerSpec {
            count,
            model: s
                .model
                .clone()
                .unwrap_or_else(|| format!("{gpus} x {gpu} server")),
            gpu,
            gpus_per_server: gpus,
            nic: auto_id(&s.nic),
            compute_nics: nics,
            storage_nics,
            gpudirect: s.gpudirect.unwrap_or(true),
            nic_ports_per_cage,
            pcie,
        };

        let f = &raw.fabric;
        let tech: Tech = c.parse("fabric.tech", f.tech.as_ref(), Tech::IbNdr)?;
        let topology = c.parse(
            "fabric.topology",
            f.topology.as_ref(),
            Topology::RailOptimized,
        )?;
        let oversubscription = c.length(
            "fabric.oversubscription",
            f.oversubscription,
            1.0,
            OVERSUBSCRIPTION.min,
            OVERSUBSCRIPTION.max,
        )?;
        let planes = c.count("fabric.planes", f.planes, 1, 1, 8)?;
        let port_gbps = match f.port_gbps {
            None => None,
            Some(v) => Some(c.count("fabric.port_gbps", Some(v), 0, 1, 1600)?),
        };
        let isl_links = match f.isl_links {
            None => None,
            Some(v) => Some(c.count("fabric.isl_links", Some(v), 0, 1, 256)?),
        };
        // A unit's servers sit on one leaf's down-ports, so no unit is larger than a switch's radix.
        let su_size = match f.su_size.and_then(AutoOr::value) {
            None => None,
            Some(v) => Some(c.count(
                "fabric.su_size",
                Some(i64::from(v)),
                0,
                SU_SIZE.min,
                SU_SIZE.max,
            )?),
        };
        // Scalable units group servers by rail on rail-optimized fabrics only: anywhere else a unit
        // size the user gives would be kept in the spec and change nothing (a preset's is its
        // reference's, left as it is when the topology changes).
        if let Some(n) = su_size {
            let given = raw.preset.is_none() || raw.given.contains("fabric.su_size");
            if given && topology != Topology::RailOptimized {
                return Err(c.err(
                    "fabric.su_size",
                    format!(
                        "{n} has no effect on a {} fabric: scalable units group servers by rail on rail-optimized fabrics only; leave it out, or use topology rail-optimized",
                        topology.as_str()
                    ),
                ));
            }
        }
        let fabric = FabricSpec {
            tech,
            topology,
            switch: auto_id(&f.switch),
            oversubscription,
            su_size,
            planes,
            port_gbps,
            isl_links,
        };

        let l = &raw.layout;
        let layout = LayoutSpec {
            servers_per_rack: c.count("layout.servers_per_rack", l.servers_per_rack, 4, 1, 64)?,
            rack_pitch_m: c.length("layout.rack_pitch_m", l.rack_pitch_m, 0.6, 0.3, 5.0)?,
            row_pitch_m: c.length("layout.row_pitch_m", l.row_pitch_m, 2.4, 1.0, 50.0)?,
            racks_per_row: c.count("layout.racks_per_row", l.racks_per_row, 16, 1, 200)?,
            leaf_placement: c.parse(
                "layout.leaf_placement",
                l.leaf_placement.as_ref(),
                LeafPlacement::EndOfRow,
            )?,
            switches_per_rack: c.count(
                "layout.switches_per_rack",
                l.switches_per_rack,
                16,
                1,
                48,
            )?,
            rack_units: c.count("layout.rack_units", l.rack_units, 42, 8, 60)?,
            tray_drop_m: c.length("layout.tray_drop_m", l.tray_drop_m, 1.5, 0.0, 10.0)?,
            in_rack_m: c.length("layout.in_rack_m", l.in_rack_m, 1.0, 0.1, 5.0)?,
            slack: c.length("layout.slack", l.slack, 0.1, 0.0, 1.0)?,
            max_rack_kw: match l.max_rack_kw {
                None => None,
                v => Some(c.length(
                    "layout.max_rack_kw",
                    v,
                    0.0,
                    keys::MAX_RACK_KW.min,
                    keys::MAX_RACK_KW.max,
                )?),
            },
            cooling: match &l.cooling {
                None => None,
                v => Some(c.parse("layout.cooling", v.as_ref(), SiteCooling::Air)?),
            },
        };

        let st = &raw.storage;
        let storage_tech = match st.tech.as_deref() {
            None | Some("auto") => tech,
            Some(t) => c.parse("storage.tech", Some(&t.to_string()), tech)?,
        };
        let auto_count =
            |field: &str, v: Option<AutoOr<u32>>, max: u32| -> Result<Option<u32>, SpecError> {
                match v.and_then(AutoOr::value) {
                    None => Ok(None),
                    Some(n) => c.count(field, Some(i64::from(n)), 0, 1, max).map(Some),
                }
            };
        let ports_per_server = auto_count("storage.ports_per_server", st.ports_per_server, 16)?
            .unwrap_or(servers.storage_nics);
        let wanted = st.fabric != Some(AutoOrNone::None);
        let storage = StorageSpec {
            wanted,
            enabled: wanted && ports_per_server > 0,
            tech: storage_tech,
            switch: auto_id(&st.switch),
            ports_per_server,
            // RA-11333-001: server connections "slightly oversubscribed with a ratio near 4:3".
            oversubscription: c.length(
                "storage.oversubscription",
                st.oversubscription,
                4.0 / 3.0,
                1.0,
                64.0,
            )?,
            array_ports: auto_count("storage.array_ports", st.array_ports, 1_000_000)?,
            spines: auto_count("storage.spines", st.spines, 65_536)?,
        };
        let m = &raw.management;
        let management = ManagementSpec {
            in_band: m.in_band != Some(AutoOrNone::None),
            out_of_band: m.out_of_band != Some(AutoOrNone::None),
            in_band_switch: m
                .in_band_switch
                .clone()
                .unwrap_or_else(|| "SN4600C".to_string()),
            oob_switch: m.oob_switch.clone().unwrap_or_else(|| "SN2201".to_string()),
            in_band_ports_per_server: c.count(
                "management.in_band_ports_per_server",
                m.in_band_ports_per_server,
                2,
                0,
                16,
            )?,
            management_servers: c.count(
                "management.management_servers",
                m.management_servers,
                4,
                0,
                1024,
            )?,
            management_server_ports: c.count(
                "management.management_server_ports",
                m.management_server_ports,
                2,
                1,
                16,
            )?,
            fabric_managers: c.count("management.fabric_managers", m.fabric_managers, 4, 0, 64)?,
            user_storage_ports: c.count(
                "management.user_storage_ports",
                m.user_storage_ports,
                8,
                0,
                4096,
            )?,
            uplinks: c.count("management.uplinks", m.uplinks, 4, 0, 256)?,
            pdus: auto_count("management.pdus", m.pdus, 1_000_000)?,
            oob_ports_per_switch: c.count(
                "management.oob_ports_per_switch",
                m.oob_ports_per_switch,
                40,
                1,
                railyard_catalog::MAX_SWITCH_PORTS,
            )?,
        };

        // Where each design value came from: a preset's own values are the reference's choices.
        let set = |field: &str| -> bool {
            match field {
                "servers.nic" => auto_id(&raw.servers.nic).is_some(),
                "fabric.tech" => raw.fabric.tech.is_some(),
                "fabric.topology" => raw.fabric.topology.is_some(),
                "fabric.switch" => auto_id(&raw.fabric.switch).is_some(),
                "fabric.oversubscription" => raw.fabric.oversubscription.is_some(),
                "fabric.su_size" => raw.fabric.su_size.and_then(AutoOr::value).is_some(),
                "fabric.port_gbps" => raw.fabric.port_gbps.is_some(),
                "storage.switch" => auto_id(&raw.storage.switch).is_some(),
                "storage.spines" => raw.storage.spines.and_then(AutoOr::value).is_some(),
                "storage.array_ports" => raw.storage.array_ports.and_then(AutoOr::value).is_some(),
                _ => false,
            }
        };
        let sources = TRACKED_FIELDS
            .iter()
            .map(|&field| {
                let source = if !set(field) {
                    Source::Auto
                } else if raw.preset.is_some() && !raw.given.contains(field) {
                    Source::Preset
                } else {
                    Source::Given
                };
                (field.to_string(), source)
            })
            .collect();
        let provenance = Provenance {
            preset: raw.preset.clone(),
            sources,
            resets: raw.resets.clone(),
        };

        Ok(ClusterSpec {
            origin: origin.to_string(),
            name: raw.name.clone().unwrap_or_else(|| "custom".to_string()),
            description: raw.description.clone().unwrap_or_default(),
            servers,
            fabric,
            layout,
            storage,
            management,
            provenance,
            overrides: Vec::new(),
        })
    }

    /// Records the overrides that changed this design from its preset or spec file (`servers=16`),
    /// and describes it by them (`dgx-h100-superpod with --servers 16 --tech roce-400g`): the
    /// preset's prose (its server count, switches and networks) no longer holds.
    pub fn describe_overrides(&mut self, overrides: &[String]) {
        if overrides.is_empty() {
            return;
        }
        let flags: Vec<String> = overrides
            .iter()
            .map(|o| match o.split_once('=') {
                Some((k, v)) => format!("--{} {v}", k.replace('.', "-")),
                None => o.clone(),
            })
            .collect();
        self.description = format!("{} with {}", self.name, flags.join(" "));
        self.overrides = overrides.to_vec();
    }

    /// Describes the design by the `given` settings (`name=value` of [`keys::DESIGN_KEYS`], as the
    /// CLI's flags and the web app's keys give them) that change it from `base` (the preset or
    /// spec file before them), in the keys' order: a setting is kept when the design without it
    /// differs, so a value the preset already has is no change, alone or beside others
    /// (`--servers 127 --storage none` was titled `servers=127,storage=none`). Settings that each
    /// say what another says (`--nic-ratio 1:2 --nics-per-server 4`) are no change alone but one
    /// together: named all. One rule for every front end, so a design has one name.
    pub fn describe_changes(&mut self, base: &RawSpec, origin: &str, given: &[String]) {
        if given.is_empty() {
            return;
        }
        let order = |g: &String| {
            let name = g.split_once('=').map_or(g.as_str(), |(n, _)| n);
            keys::DESIGN_KEYS
                .iter()
                .position(|k| k.name == name)
                .unwrap_or(usize::MAX)
        };
        let mut given = given.to_vec();
        given.sort_by_key(order);
        let without = |left_out: &str| -> Option<ClusterSpec> {
            let mut o = Overrides::default();
            for g in given.iter().filter(|g| g.as_str() != left_out) {
                let (name, v) = g.split_once('=')?;
                let k = keys::DESIGN_KEYS.iter().find(|k| k.name == name)?;
                (k.set)(&mut o, k.parse(v).ok()?);
            }
            let mut raw = base.clone();
            o.apply(&mut raw).ok()?;
            ClusterSpec::from_raw(&raw, origin).ok()
        };
        let mut changing: Vec<String> = given
            .iter()
            .filter(|g| without(g).as_ref() != Some(&*self))
            .cloned()
            .collect();
        let unchanged = ClusterSpec::from_raw(base, origin).is_ok_and(|b| b == *self);
        if changing.is_empty() && !unchanged {
            changing = given;
        }
        self.describe_overrides(&changing);
    }

    /// The design's title: its name, followed by the overrides that changed it as `compare` names
    /// designs (`dgx-h100-superpod:servers=16,tech=roce-400g`).
    pub fn title(&self) -> String {
        if self.overrides.is_empty() {
            self.name.clone()
        } else {
            format!("{}:{}", self.name, self.overrides.join(","))
        }
    }

    pub fn gpus(&self) -> u64 {
        u64::from(self.servers.count) * u64::from(self.servers.gpus_per_server)
    }
}

/// GPUs and NICs spread evenly over `n` PCIe switches: GPU g goes to switch g*n/gpus, so two GPUs
/// share a switch on an 8-GPU, 4-switch server; NICs likewise; storage NICs on the last switches.
pub fn even_pcie_layout(n: u32, gpus: u32, nics: u32, storage_nics: u32) -> Vec<PcieSwitchSpec> {
    // More switches than devices would leave some empty.
    let n = n.min(gpus.max(nics));
    let mut switches = vec![
        PcieSwitchSpec {
            gpus: vec![],
            nics: vec![],
            storage_nics: vec![]
        };
        n as usize
    ];
    if n == 0 {
        return switches;
    }
    for g in 0..gpus {
        switches[(g * n / gpus) as usize].gpus.push(g);
    }
    for k in 0..nics {
        switches[(k * n / nics) as usize].nics.push(k);
    }
    for k in 0..storage_nics {
        switches[(n - 1 - k % n) as usize].storage_nics.push(k);
    }
    switches
}

fn check_pcie_layout(
    c: &Checker,
    raw: &[RawPcieSwitch],
    gpus: u32,
    nics: u32,
    storage_nics: u32,
) -> Result<Vec<PcieSwitchSpec>, SpecError> {
    let mut seen_gpu = vec![false; gpus as usize];
    let mut seen_nic = vec![false; nics as usize];
    let mut seen_storage = vec![false; storage_nics as usize];
    let mut out = Vec::with_capacity(raw.len());
    for (i, sw) in raw.iter().enumerate() {
        let take = |list: &[i64], seen: &mut [bool], what: &str| -> Result<Vec<u32>, SpecError> {
            let field = format!("servers.pcie_switch[{i}].{what}");
            list.iter()
                .map(|&x| {
                    let max = seen.len();
                    let idx = usize::try_from(x)
                        .ok()
                        .filter(|&x| (1..=max).contains(&x))
                        .ok_or_else(|| {
                            c.err(
                                &field,
                                format!("{x} is not a valid number; valid: 1 to {max}"),
                            )
                        })?;
                    if std::mem::replace(&mut seen[idx - 1], true) {
                        return Err(c.err(&field, format!("{x} is already on another PCIe switch")));
                    }
                    Ok(idx as u32 - 1)
                })
                .collect()
        };
        out.push(PcieSwitchSpec {
            gpus: take(&sw.gpus, &mut seen_gpu, "gpus")?,
            nics: take(&sw.nics, &mut seen_nic, "nics")?,
            storage_nics: take(&sw.storage_nics, &mut seen_storage, "storage_nics")?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
