//! The design report: how the design was chosen, as `plan` prints it and summary.json keeps it
//! (each choice with its source and reason, the best design per switch model, the alternatives).

use serde::{Deserialize, Serialize};

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How the design was chosen: each choice with its source and reason, the best design per switch
/// model, and the alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignReport {
    /// Valid designs the search counted.
    pub candidates: u64,
    /// Designs built and costed exactly.
    pub costed_exactly: u32,
    /// Of them, those built only to cost the alternatives asked for (`--alternatives`, the report's
    /// list): a plan without them builds the rest, so both say how the design was chosen alike.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub costed_for_alternatives: u32,
    /// Every design that could cost less than the chosen one was built and costed (false when the
    /// search's budget of links to build ran out first, as on the largest designs).
    pub complete: bool,
    /// The chosen design's cost from its parts, US dollars.
    pub cost_usd: f64,
    pub choices: Vec<Choice>,
    /// The cheapest design of each switch model that carries the request, cheapest first.
    pub switches: Vec<SwitchCost>,
    /// The next designs, cheapest first (see [`Alternative`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
    /// A full leaf's host ports and uplinks as designed (absent without a leaf tier), to explain
    /// the leaf ratio cabled (the `leaf_ports` choice says it in words).
    #[serde(skip)]
    pub leaf_ports: Option<(u32, u32)>,
}

/// One choice of the design.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// What was chosen: `switch`, `port_mode`, `nic`, `leaf_ports`, `scalable_unit`, `spines`,
    /// `cores`, `tiers`, `cable_media`.
    pub key: String,
    pub value: String,
    /// `given` (the user's), `preset` (the reference design's), `auto` (the search's).
    pub source: String,
    /// Why, when the search chose or something differs from what was implied.
    pub why: String,
}

/// The cheapest design of one switch model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchCost {
    pub switch_model: String,
    pub port_mode: String,
    pub cost_usd: f64,
    /// True when the cost is from counts at typical cable runs, not from a built design.
    pub cost_estimated: bool,
}

/// A design the search did not choose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alternative {
    pub switch_model: String,
    pub port_mode: String,
    pub tiers: u32,
    pub su_size: Option<u32>,
    /// Host-facing and up-facing ports of a leaf.
    pub leaf_host_ports: u32,
    pub leaf_uplinks: u32,
    pub switches: AltSwitches,
    pub links: AltLinks,
    /// Down:up ratio of a full switch per tier (a tier that does not exist: 0; the top tier: 1).
    pub oversubscription: AltRatios,
    pub bisection_gbps: f64,
    pub cost_usd: f64,
    /// This design's cost minus the chosen one's.
    pub cost_delta_usd: f64,
    /// True when the cost is from counts at typical cable runs, not from a built design.
    pub cost_estimated: bool,
    /// The conventional design: the switch with the most ports, the leaf split `leaf_split` gives for
    /// the ratio, a unit of a leaf's host ports, spines and cores by the smallest divisors.
    pub conventional: bool,
    /// Keeps every choice the preset made (the reference design's).
    pub keeps_preset: bool,
    /// What differs from the chosen design.
    pub differs: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AltSwitches {
    pub leaf: u64,
    pub spine: u64,
    pub core: u64,
    pub total: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AltLinks {
    pub server_leaf: u64,
    pub leaf_spine: u64,
    pub spine_core: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AltRatios {
    pub leaf: f64,
    pub spine: f64,
    pub core: f64,
}
