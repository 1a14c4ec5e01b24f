//! The validated design: the types a spec becomes once every value is checked
//! ([`ClusterSpec::from_raw`]), with the topology, placement and cooling vocabularies they use.
//! A [`ClusterSpec`] is internally consistent; hardware checks wait for the catalog.

use railyard_catalog::Tech;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

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
    /// False for `fabric = "none"` (`--storage none`) and `"compute"`.
    pub wanted: bool,
    /// `fabric = "compute"` (`--storage compute`): storage traffic (checkpoints, data loading)
    /// runs on the compute fabric, through the compute NICs; no storage fabric is planned.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub on_compute: bool,
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

impl ClusterSpec {
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
