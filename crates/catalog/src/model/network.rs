//! The network's catalog entries: technologies (a link speed and its lanes), switches with their
//! port modes and SHARP, and NICs.

use super::{
    check_pcie, check_price, check_range, Price, MAX_POWER_W, MAX_RACK_UNITS, MAX_SWITCH_PORTS,
};
use crate::tech::{Family, Tech};
use serde::{Deserialize, Serialize};

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
    /// How sites route this technology unless told otherwise, with the documents that say so:
    /// what every simulation of a design on it runs when no routing is given.
    pub default_routing: DefaultRouting,
    pub source: String,
}

/// The routing policies a catalog entry may name, as the simulator names them
/// (`railyard_sim::routing::RoutingKind::NAMES`, `railyard_spec::run::ROUTING_NAMES`; a test
/// keeps them equal).
pub const ROUTING_POLICIES: [&str; 3] = ["ecmp", "dmodk", "adaptive"];

/// A technology's default routing: the policy its sites run and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultRouting {
    /// One of [`ROUTING_POLICIES`].
    pub policy: String,
    /// Why, in a few words, as reports print it beside the policy ("RoCE default: ECMP ...").
    pub why: String,
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
        if !ROUTING_POLICIES.contains(&self.default_routing.policy.as_str()) {
            return Err(format!(
                "technology {id}: default_routing.policy `{}`; valid: {}",
                self.default_routing.policy,
                ROUTING_POLICIES.join(", ")
            ));
        }
        if self.default_routing.source.trim().is_empty()
            || self.default_routing.why.trim().is_empty()
        {
            return Err(format!(
                "technology {id}: default_routing needs a why and a source (the documents that say how sites route it)"
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
    /// Whether the switch routes adaptively (per packet, by the load of its ports: InfiniBand
    /// adaptive routing, Spectrum-X RoCE adaptive routing), with the document that says so;
    /// absent: it does not (it hashes flows, ECMP, or follows its forwarding table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_routing: Option<Sharp>,
    pub price: Price,
    pub source: String,
}

/// Support for NVIDIA SHARP in-network aggregation as NCCL uses it (CollNet, through the
/// NCCL-SHARP plugin), and the document that says so; the same shape says whether a switch routes
/// adaptively and a NIC takes sprayed packets (`adaptive_routing`, `packet_spraying`).
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

    /// As for `sharp`, for another capability of the same shape (`{ supported, source }`).
    fn validate_named(cap: &Option<Sharp>, id: &str, field: &str) -> Result<(), String> {
        match cap {
            Some(s) if s.source.trim().is_empty() => Err(format!(
                "{id}: {field} needs a source (the document that says whether it is supported)"
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
        Sharp::validate_named(
            &self.adaptive_routing,
            &format!("switch {id}"),
            "adaptive_routing",
        )?;
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
    /// Whether the adapter takes packets of one RoCE connection sprayed over several paths and
    /// puts them back in order (Spectrum-X SuperNICs), which adaptive routing on Ethernet needs,
    /// with its source; absent: it does not. (On InfiniBand every ConnectX-5 or newer places
    /// out-of-order packets, which is not what this says.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_spraying: Option<Sharp>,
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
        Sharp::validate_named(
            &self.packet_spraying,
            &format!("nic {}", self.id),
            "packet_spraying",
        )?;
        check_price(&self.id, &self.price)
    }
}
