//! What a plan reports: switch, link and cable counts, oversubscription, power and cost of the
//! compute fabric ([`Summary`]) and of the storage and management networks ([`NetworkSummary`]),
//! and the lines of the bill of materials ([`BomLine`]).

use railyard_fabric::layout::{CageCables, Racks};
use railyard_fabric::networks::Network;
use railyard_fabric::DesignReport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Switch counts per tier (a tier that does not exist is 0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Switches {
    pub leaf: u64,
    pub spine: u64,
    pub core: u64,
    pub total: u64,
}

/// Cable counts per tier of the compute fabric.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Links {
    pub server_leaf: u64,
    pub leaf_spine: u64,
    pub spine_core: u64,
    /// Between switches of one tier (the two-switch design's inter-switch cables).
    pub inter_switch: u64,
    pub total: u64,
}

/// Down:up capacity ratio per tier: 1 is non-blocking; the top tier reports 1 (all traffic turns there),
/// a tier that does not exist reports 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Oversubscription {
    pub leaf: f64,
    pub spine: f64,
    pub core: f64,
}

/// Cost by category, US dollars.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub total: f64,
    pub per_gpu: f64,
    pub switches: f64,
    pub nics: f64,
    pub cables: f64,
    pub transceivers: f64,
    pub fibre: f64,
    /// True when any price behind the total is an estimate (see the BOM's price_source column).
    pub includes_estimates: bool,
}

/// Power by category, watts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Power {
    pub total: f64,
    pub switches: f64,
    pub nics: f64,
    pub transceivers: f64,
    pub cables: f64,
}

/// One kind of cable or fibre at one stocked length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CableCount {
    #[serde(rename = "type")]
    pub kind: String,
    pub part: String,
    pub length_m: f64,
    pub count: u64,
}

/// Everything the summary reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The design's name; with the overrides that changed it from its preset or spec file after a
    /// colon, as `compare` names designs (`dgx-h100-superpod:servers=16,tech=roce-400g`).
    pub name: String,
    /// The overrides that changed the design from its preset or spec file (`servers=16`), when any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    pub tech: String,
    pub topology: String,
    pub gpu_model: String,
    pub nic_model: String,
    pub switch_model: String,
    pub port_mode: String,
    pub link_gbps: f64,
    pub servers: u64,
    pub gpus: u64,
    pub nics: u64,
    pub storage_nics: u64,
    /// Storage traffic runs on the compute fabric, through the compute NICs (`--storage compute`):
    /// the servers' storage NICs carry none of it and no storage fabric is planned.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub storage_on_compute: bool,
    pub nic_gpu_ratio: String,
    pub gpudirect: bool,
    pub tiers: u32,
    pub planes: u32,
    pub su_size: Option<u32>,
    pub scalable_units: Option<u32>,
    pub switches: Switches,
    pub links: Links,
    pub cables_by_type: BTreeMap<String, u64>,
    pub cables: Vec<CableCount>,
    pub transceivers: BTreeMap<String, u64>,
    pub oversubscription: Oversubscription,
    /// The leaf down:up ratio asked for: an upper bound on `oversubscription.leaf` (absent for
    /// imported fabrics).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oversubscription_requested: Option<f64>,
    /// The host links and uplinks of the leaf at the `oversubscription.leaf` ratio (absent without
    /// a leaf with uplinks), to explain that ratio.
    #[serde(skip)]
    pub leaf_links: Option<(u32, u32)>,
    /// Bandwidth across the narrowest tier boundary when half the NIC ports talk to the other half, Gb/s.
    pub bisection_gbps: f64,
    /// Links of the compute fabric given a direct cable (DAC, ACC, AOC) although a cage at an end
    /// carries more than one of them ([`CageCables`]); absent when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_cage_cables: Option<CageCables>,
    /// Switches on the longest shortest path between two NIC ports of one plane.
    pub worst_case_switch_hops: u32,
    pub power_w: Power,
    pub cost_usd: Cost,
    /// How the design was chosen: choices with their source and reason, the best design per switch
    /// model, and alternatives (`plan`; absent where a fabric is planned without its search).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub design: Option<DesignReport>,
    /// The storage fabric, when planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<NetworkSummary>,
    /// The management networks (in-band and out-of-band), when planned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub management: Option<ManagementSummary>,
    /// The server racks: how many, how full, their power and cooling, and a rack-scale NVLink
    /// domain (`plan`; absent where a fabric is planned without its spec).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub racks: Option<Racks>,
}

impl Summary {
    /// Cables and fibre patch cords to order: links, but a twin-port or splitter cable once for all
    /// its legs (`cables_by_type` summed).
    pub fn cable_count(&self) -> u64 {
        self.cables_by_type.values().sum()
    }
}

/// A storage or management network: what it connects, its switches, cables, optics, power and cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkSummary {
    /// `storage`, `in-band` or `out-of-band`.
    pub network: String,
    pub tech: String,
    pub switch_model: String,
    pub port_mode: String,
    pub link_gbps: f64,
    /// Device ports attached, by kind of device (`servers`, `storage systems`, `switches`, `pdus`...).
    pub endpoints: BTreeMap<String, u64>,
    pub tiers: u32,
    pub switches: Switches,
    pub links: Links,
    pub cables_by_type: BTreeMap<String, u64>,
    pub cables: Vec<CableCount>,
    pub transceivers: BTreeMap<String, u64>,
    pub oversubscription: Oversubscription,
    /// Links that leave the plan (in-band uplinks to the data-centre network): counted, not priced.
    pub uplinks_outside: u64,
    /// How the network was shaped and why.
    pub notes: Vec<String>,
    pub power_w: Power,
    pub cost_usd: Cost,
}

/// The management networks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManagementSummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_band: Option<NetworkSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_band: Option<NetworkSummary>,
    /// Both networks' cost and power.
    pub cost_usd: f64,
    pub power_w: f64,
    pub includes_estimates: bool,
}

impl NetworkSummary {
    /// The summary of network `n`, whose own plan's summary is `s`.
    pub(crate) fn of(n: &Network, s: &Summary) -> NetworkSummary {
        NetworkSummary {
            network: n.kind.as_str().to_string(),
            tech: s.tech.clone(),
            switch_model: s.switch_model.clone(),
            port_mode: s.port_mode.clone(),
            link_gbps: s.link_gbps,
            endpoints: n.endpoints.clone(),
            tiers: s.tiers,
            switches: s.switches.clone(),
            links: s.links.clone(),
            cables_by_type: s.cables_by_type.clone(),
            cables: s.cables.clone(),
            transceivers: s.transceivers.clone(),
            oversubscription: s.oversubscription.clone(),
            uplinks_outside: n.uplinks_outside,
            notes: n.notes.clone(),
            power_w: s.power_w.clone(),
            cost_usd: s.cost_usd.clone(),
        }
    }
}

/// One line of the bill of materials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BomLine {
    pub category: &'static str,
    pub part: String,
    pub description: String,
    /// Stocked length for cables and fibre; `None` for devices.
    pub length_m: Option<f64>,
    pub quantity: u64,
    pub unit_price_usd: f64,
    pub total_usd: f64,
    pub price_estimate: bool,
    pub price_source: String,
    pub unit_power_w: f64,
}
