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

use keys::{COMPUTE_NICS, GPUS_PER_SERVER, OVERSUBSCRIPTION, SERVERS, SU_SIZE};
use railyard_catalog::Tech;
use raw::{AutoOr, RawPcieSwitch, RawSpec};
use serde::Serialize;
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
    pub isl_links: u32,
}

/// The machine room, from which cable lengths follow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayoutSpec {
    pub servers_per_rack: u32,
    /// Centre-to-centre distance of neighbouring racks in a row, m.
    pub rack_pitch_m: f64,
    /// Centre-to-centre distance of neighbouring rows, m.
    pub row_pitch_m: f64,
    pub racks_per_row: u32,
    pub leaf_placement: LeafPlacement,
    /// Switches in one network rack.
    pub switches_per_rack: u32,
    /// Vertical run from a device up to the overhead tray, m (counted at both ends).
    pub tray_drop_m: f64,
    /// Run between two devices in the same rack, m.
    pub in_rack_m: f64,
    /// Extra length for bends and service loops, as a fraction.
    pub slack: f64,
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
    /// NIC:GPU ratio as (NICs, GPUs), e.g. (1, 4); sets the compute NICs from the GPUs per server.
    pub nic_ratio: Option<(u32, u32)>,
}

impl Overrides {
    /// Applies the flags to a raw spec.
    ///
    /// Changing the technology resets the NIC and switch to automatic unless they are given too, so
    /// `--tech roce-400g` on an InfiniBand preset picks Ethernet hardware. Changing GPUs or NICs per
    /// server replaces an explicit PCIe layout by an even one with the same number of PCIe switches.
    pub fn apply(&self, raw: &mut RawSpec) -> Result<(), SpecError> {
        let s = &mut raw.servers;
        if let Some(n) = self.servers {
            s.count = Some(i64::from(n));
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
        }
        if let Some(n) = self.nics_per_server {
            s.compute_nics = Some(i64::from(n));
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
                        "{nics}:{gpus} does not give a whole number of NICs for {per_server} GPUs per server; valid: 1:1, 1:2, 1:4, 1:8 or any ratio that divides {per_server}"
                    ),
                });
            }
            // Out of i64's range is out of range for from_raw too: it names servers.compute_nics.
            s.compute_nics = Some(i64::try_from(n / i128::from(gpus)).unwrap_or(i64::MAX));
        }
        if let Some(g) = &self.gpu {
            s.gpu = Some(g.clone());
        }
        if let Some(t) = self.tech {
            raw.fabric.tech = Some(t.as_str().to_string());
            if self.switch.is_none() {
                raw.fabric.switch = None;
            }
            if self.nic.is_none() {
                s.nic = None;
            }
            raw.fabric.port_gbps = None;
        }
        if let Some(n) = &self.nic {
            s.nic = Some(n.clone());
        }
        if let Some(t) = self.topology {
            raw.fabric.topology = Some(t.as_str().to_string());
        }
        if let Some(sw) = &self.switch {
            raw.fabric.switch = Some(sw.clone());
        }
        if let Some(r) = self.oversubscription {
            raw.fabric.oversubscription = Some(r);
        }
        if let Some(g) = self.gpudirect {
            s.gpudirect = Some(g);
        }
        if let Some(n) = self.su_size {
            raw.fabric.su_size = Some(AutoOr::Value(n));
        }
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
            Err(self.err(field, format!("{v} is out of range; valid: {min} to {max}")))
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
        let isl_links = c.count("fabric.isl_links", f.isl_links, 4, 1, 256)?;
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
            tray_drop_m: c.length("layout.tray_drop_m", l.tray_drop_m, 1.5, 0.0, 10.0)?,
            in_rack_m: c.length("layout.in_rack_m", l.in_rack_m, 1.0, 0.1, 5.0)?,
            slack: c.length("layout.slack", l.slack, 0.1, 0.0, 1.0)?,
        };

        Ok(ClusterSpec {
            origin: origin.to_string(),
            name: raw.name.clone().unwrap_or_else(|| "custom".to_string()),
            description: raw.description.clone().unwrap_or_default(),
            servers,
            fabric,
            layout,
        })
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
