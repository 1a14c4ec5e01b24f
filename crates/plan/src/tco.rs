//! The whole cluster's cost per hour: servers and networks paid off over some years, plus the power
//! they draw at the facility's PUE and electricity price.
//!
//! `cost per hour = (servers + networks) / (years x 8,766 h) + IT power x PUE x $/kWh`
//!
//! A year is 365.25 days (8,766 hours), as `compare` amortizes the network. Prices come from the
//! catalog (`servers.toml`, GPU prices in `gpus.toml`; all estimates, flagged); the years, PUE and
//! electricity price are the caller's assumptions. A pure function: no I/O, no defaults hidden inside.

use railyard_catalog::Catalog;
use railyard_spec::ClusterSpec;
use serde::Serialize;

/// Hours in a year of 365.25 days.
pub const HOURS_PER_YEAR: f64 = 365.25 * 24.0;

/// What the cluster costs to buy and the power it draws.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capex {
    /// The servers, with their GPUs (and compute NICs when the server price includes them).
    pub servers_usd: f64,
    /// Every planned network (compute, storage, management), NICs included where the servers' price
    /// does not include them.
    pub networks_usd: f64,
    /// Power at full load of the servers and every network's switches, NICs and optics, W.
    pub it_power_w: f64,
    /// True when any price behind the numbers is an estimate.
    pub includes_estimates: bool,
}

/// The caller's assumptions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Assumptions {
    /// Years over which the hardware is paid off.
    pub amortize_years: f64,
    /// Power usage effectiveness of the facility (1.0: no overhead).
    pub pue: f64,
    /// Electricity price, US dollars per kWh.
    pub usd_per_kwh: f64,
}

/// The cluster's cost per hour, by part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CostPerHour {
    pub servers_usd: f64,
    pub networks_usd: f64,
    pub energy_usd: f64,
    pub total_usd: f64,
}

/// Why assumptions cannot be used: the field at fault and what is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcoError {
    pub field: &'static str,
    pub message: String,
}

impl std::fmt::Display for TcoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for TcoError {}

impl Assumptions {
    /// Checks the numbers: years from 0.01 to 100, PUE from 1 to 10, electricity from $0 to $100 per kWh.
    pub fn check(&self) -> Result<(), TcoError> {
        let bad = |field, v: f64, lo: f64, hi: f64| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(TcoError {
                    field,
                    message: format!("{v} is out of range; valid: {lo} to {hi}"),
                })
            }
        };
        bad("amortize-years", self.amortize_years, 0.01, 100.0)?;
        bad("pue", self.pue, 1.0, 10.0)?;
        bad("usd-per-kwh", self.usd_per_kwh, 0.0, 100.0)
    }
}

/// The cluster's cost per hour: capital paid off evenly over the years, energy at the PUE and price.
pub fn cost_per_hour(capex: &Capex, a: &Assumptions) -> Result<CostPerHour, TcoError> {
    a.check()?;
    let hours = a.amortize_years * HOURS_PER_YEAR;
    let servers_usd = capex.servers_usd / hours;
    let networks_usd = capex.networks_usd / hours;
    let energy_usd = capex.it_power_w / 1000.0 * a.pue * a.usd_per_kwh;
    Ok(CostPerHour {
        servers_usd,
        networks_usd,
        energy_usd,
        total_usd: servers_usd + networks_usd + energy_usd,
    })
}

/// What one of the spec's servers costs and draws, from the catalog: the server model the spec names
/// (`servers.model`) when the catalog lists it with the same GPUs, else its GPUs plus an 8-GPU host's
/// non-GPU parts scaled to the GPU count. Returns (price, power W, the price includes the compute
/// NICs, any estimate); `None` when the catalog has no price for the spec's GPU.
pub fn server_price(spec: &ClusterSpec, catalog: &Catalog) -> Option<(f64, f64, bool, bool)> {
    let s = &spec.servers;
    if let Some(m) = catalog
        .servers
        .get(&s.model)
        .filter(|m| m.gpu == s.gpu && m.gpus == s.gpus_per_server)
    {
        return Some((
            m.price.usd,
            m.power_w,
            m.includes_compute_nics,
            m.price.estimate,
        ));
    }
    let gpu = catalog.gpus.get(&s.gpu)?;
    let gpu_price = gpu.price.as_ref()?;
    let host = catalog.servers.get("8-GPU host")?;
    let share = f64::from(s.gpus_per_server) / f64::from(host.gpus.max(1));
    Some((
        gpu_price.usd * f64::from(s.gpus_per_server) + host.price.usd * share,
        gpu.power_w * f64::from(s.gpus_per_server) + host.power_w * share,
        false,
        gpu_price.estimate || host.price.estimate,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capex() -> Capex {
        Capex {
            servers_usd: 8_766_000.0,
            networks_usd: 876_600.0,
            it_power_w: 100_000.0,
            includes_estimates: true,
        }
    }

    #[test]
    fn capital_is_paid_off_per_hour_and_energy_adds() {
        let a = Assumptions {
            amortize_years: 1.0,
            pue: 1.5,
            usd_per_kwh: 0.1,
        };
        let c = cost_per_hour(&capex(), &a).unwrap();
        assert!((c.servers_usd - 1000.0).abs() < 1e-9);
        assert!((c.networks_usd - 100.0).abs() < 1e-9);
        // 100 kW x 1.5 x $0.10.
        assert!((c.energy_usd - 15.0).abs() < 1e-9);
        assert!((c.total_usd - 1115.0).abs() < 1e-9);
        // Twice the years, half the capital per hour; energy unchanged.
        let c2 = cost_per_hour(
            &capex(),
            &Assumptions {
                amortize_years: 2.0,
                ..a
            },
        )
        .unwrap();
        assert!((c2.servers_usd - 500.0).abs() < 1e-9);
        assert_eq!(c2.energy_usd, c.energy_usd);
    }

    #[test]
    fn bad_assumptions_name_the_field() {
        let a = Assumptions {
            amortize_years: 4.0,
            pue: 0.5,
            usd_per_kwh: 0.1,
        };
        assert_eq!(cost_per_hour(&capex(), &a).unwrap_err().field, "pue");
        let a = Assumptions {
            amortize_years: 0.0,
            pue: 1.2,
            usd_per_kwh: 0.1,
        };
        assert_eq!(
            cost_per_hour(&capex(), &a).unwrap_err().field,
            "amortize-years"
        );
        let a = Assumptions {
            amortize_years: 4.0,
            pue: 1.2,
            usd_per_kwh: f64::NAN,
        };
        assert_eq!(
            cost_per_hour(&capex(), &a).unwrap_err().field,
            "usd-per-kwh"
        );
    }

    #[test]
    fn servers_are_priced_from_the_catalog() {
        let catalog = Catalog::builtin();
        let dgx = railyard_spec::presets::load("dgx-h100-superpod").unwrap();
        let (usd, w, nics, est) = server_price(&dgx, &catalog).unwrap();
        assert_eq!((usd, w, nics, est), (270_000.0, 10_200.0, true, true));
        // A server the catalog does not list: its GPUs plus the host's non-GPU parts.
        let budget = railyard_spec::presets::load("h100-nic-1to4").unwrap();
        let (usd, w, nics, _) = server_price(&budget, &catalog).unwrap();
        assert_eq!(usd, 8.0 * 27_500.0 + 32_010.0);
        assert_eq!(w, 8.0 * 700.0 + 4_600.0);
        assert!(!nics);
    }
}
