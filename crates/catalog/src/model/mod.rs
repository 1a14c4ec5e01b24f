//! Catalog entry types, deserialized from TOML with unknown fields rejected: the network's
//! technologies, switches and NICs ([`network`]), the compute side ([`compute`]: GPUs, servers,
//! rack-scale systems) and the cabling ([`cabling`]), with the range checks they share.

mod cabling;
mod compute;
mod network;

pub use cabling::*;
pub use compute::*;
pub use network::*;

use crate::number::number;
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
