//! The whole cluster's cost of ownership: servers and every network paid off over some years, plus
//! the power they draw at the facility's PUE and electricity price; per hour, and per million tokens
//! a training job processes.
//!
//! `cost per hour = (servers + networks) / (years x 8,766 h) + IT power x PUE x $/kWh`
//! `cost per million tokens = cost per hour / (tokens per second x 3,600) x 10^6`
//!
//! A year is 365.25 days (8,766 hours), as the network's cost per million tokens amortizes
//! ([`usd_per_million_tokens`]). Prices come from the catalog (`servers.toml`, GPU
//! prices in `gpus.toml`; all estimates, flagged) and the plan (every network's bill of materials);
//! the years, PUE and electricity price are the caller's assumptions ([`DEFAULT_PUE`] and
//! [`DEFAULT_USD_PER_KWH`] with their sources). Pure functions: no I/O, no clock.

use railyard_catalog::Catalog;
use railyard_plan::Planned;
use railyard_spec::ClusterSpec;
use serde::Serialize;

/// A PUE when the caller gives none: the industry average of Uptime Institute's Global Data Center
/// Survey 2023, 1.58 ("Large data centers are mostly more efficient, analysis confirms", Uptime
/// Intelligence, 2023-11). An assumption: halls built for AI run lower.
pub const DEFAULT_PUE: f64 = 1.58;

/// An electricity price when the caller gives none: the US industrial average of 2023, 8.06 cents
/// per kWh (US EIA, Electric Power Annual 2023, average price to ultimate customers). An assumption.
pub const DEFAULT_USD_PER_KWH: f64 = 0.0806;

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

/// The caller's assumptions (by default 4 years, [`DEFAULT_PUE`], [`DEFAULT_USD_PER_KWH`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
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

impl Default for Assumptions {
    fn default() -> Assumptions {
        Assumptions {
            amortize_years: 4.0,
            pue: DEFAULT_PUE,
            usd_per_kwh: DEFAULT_USD_PER_KWH,
        }
    }
}

impl Assumptions {
    /// Checks the numbers: years from 0.01 to 100, PUE from 1 to 10, electricity from $0 to $100 per kWh.
    pub fn check(&self) -> Result<(), TcoError> {
        let bad = |field, v: f64, lo: f64, hi: f64| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(TcoError {
                    field,
                    message: format!(
                        "{} is out of range; valid: {lo} to {hi}",
                        railyard_catalog::number(v)
                    ),
                })
            }
        };
        bad("amortize-years", self.amortize_years, 0.01, 100.0)?;
        bad("pue", self.pue, 1.0, 10.0)?;
        bad("usd-per-kwh", self.usd_per_kwh, 0.0, 100.0)
    }
}

impl Capex {
    /// What a planned cluster costs and draws: `servers.count` servers priced by [`server_price`],
    /// and the compute fabric and every other planned network (storage, management) from their
    /// bills of materials. Where the server's price includes its compute NICs (a DGX), the NICs
    /// leave the networks' cost and power so they count once. `None` when the catalog prices no
    /// server of the spec's GPU.
    pub fn of(spec: &ClusterSpec, catalog: &Catalog, planned: &Planned) -> Option<Capex> {
        let server = server_price(spec, catalog)?;
        let count = f64::from(spec.servers.count);
        let compute = &planned.plan.summary;
        let (nic_usd, nic_w) = if server.includes_compute_nics {
            (compute.cost_usd.nics, compute.power_w.nics)
        } else {
            (0.0, 0.0)
        };
        let others = planned.networks.iter().map(|(_, p)| &p.summary);
        Some(Capex {
            servers_usd: server.usd * count,
            networks_usd: compute.cost_usd.total - nic_usd
                + others.clone().map(|s| s.cost_usd.total).sum::<f64>(),
            it_power_w: server.power_w * count + compute.power_w.total - nic_w
                + others.clone().map(|s| s.power_w.total).sum::<f64>(),
            includes_estimates: server.estimate
                || compute.cost_usd.includes_estimates
                || others.clone().any(|s| s.cost_usd.includes_estimates),
        })
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

/// The cluster's cost per million tokens at `tokens_per_s`.
pub fn usd_per_million_tokens(cost: &CostPerHour, tokens_per_s: f64) -> f64 {
    cost.total_usd / (tokens_per_s * 3600.0) * 1e6
}

/// What a training job's tokens cost: the network alone (paid off over the years), and the whole
/// cluster where its capital is known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TokenCosts {
    pub network_usd_per_million_tokens: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_usd_per_hour: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_usd_per_million_tokens: Option<f64>,
}

impl TokenCosts {
    /// The costs of a job at `tokens_per_s` on a cluster whose compute network costs `network_usd`
    /// and whose whole capital is `capex`.
    pub fn of(
        network_usd: f64,
        capex: Option<&Capex>,
        tokens_per_s: f64,
        a: &Assumptions,
    ) -> Result<TokenCosts, TcoError> {
        let hour = capex.map(|c| cost_per_hour(c, a)).transpose()?;
        Ok(TokenCosts {
            network_usd_per_million_tokens: network_usd_per_million_tokens(
                network_usd,
                tokens_per_s,
                a.amortize_years,
            ),
            cluster_usd_per_hour: hour.map(|h| h.total_usd),
            cluster_usd_per_million_tokens: hour.map(|h| usd_per_million_tokens(&h, tokens_per_s)),
        })
    }

    /// Two lines, as `train` prints them.
    pub fn text(&self, a: &Assumptions) -> String {
        let mut out = format!(
            "network $ per M tokens: {:.4} (the compute network paid off over {} y)\n",
            self.network_usd_per_million_tokens, a.amortize_years
        );
        if let (Some(m), Some(h)) = (
            self.cluster_usd_per_million_tokens,
            self.cluster_usd_per_hour,
        ) {
            out.push_str(&format!(
                "cluster $ per M tokens: {m:.4} (${} an hour: servers and every network paid off over {} y, power at PUE {} and ${}/kWh)\n",
                railyard_plan::output::thousands(h),
                a.amortize_years,
                a.pue,
                a.usd_per_kwh
            ));
        }
        out
    }
}

/// One server's price and power.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerPrice {
    pub usd: f64,
    /// At full load, W.
    pub power_w: f64,
    /// The price (and power) include the compute NICs.
    pub includes_compute_nics: bool,
    /// Any price behind it is an estimate.
    pub estimate: bool,
}

/// What one of the spec's servers costs and draws, from the catalog: the server model the spec
/// names (`servers.model`) when the catalog lists it with the same GPUs (and, where its price
/// includes them, the same compute NICs: `fabric::layout::server_model`), else its GPUs plus an
/// 8-GPU host's non-GPU parts scaled to the GPU count, the NICs priced with the network. Power is
/// `fabric::layout::server_power`'s, and a rack-scale system's tray draws its share of the whole
/// rack (NVLink switch trays and power shelves included). `None` when the catalog has no price for
/// the spec's GPU.
pub fn server_price(spec: &ClusterSpec, catalog: &Catalog) -> Option<ServerPrice> {
    let s = &spec.servers;
    let power = railyard_fabric::layout::server_power(spec, catalog)?;
    let rack_share = railyard_fabric::layout::rack_system(spec, catalog)
        .map(|r| r.power_w / f64::from(r.trays.max(1)));
    let power_w = rack_share.unwrap_or(power.watts);
    if let Some(m) = railyard_fabric::layout::server_model(spec, catalog) {
        return Some(ServerPrice {
            usd: m.price.usd,
            power_w,
            includes_compute_nics: m.includes_compute_nics,
            estimate: m.price.estimate,
        });
    }
    let gpu = catalog.gpus.get(&s.gpu)?;
    let gpu_price = gpu.price.as_ref()?;
    let host = catalog.servers.get("8-GPU host")?;
    let share = f64::from(s.gpus_per_server) / f64::from(host.gpus.max(1));
    Some(ServerPrice {
        usd: gpu_price.usd * f64::from(s.gpus_per_server) + host.price.usd * share,
        power_w,
        includes_compute_nics: false,
        estimate: gpu_price.estimate || host.price.estimate,
    })
}

/// The network's cost per million tokens: `network_usd` paid off over `years` of training at
/// `tokens_per_s`.
pub fn network_usd_per_million_tokens(network_usd: f64, tokens_per_s: f64, years: f64) -> f64 {
    // Julian years of 365.25 days.
    let seconds = years * 365.25 * 86_400.0;
    network_usd / (tokens_per_s * seconds) * 1e6
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
        let p = server_price(&dgx, &catalog).unwrap();
        assert_eq!(
            (p.usd, p.power_w, p.includes_compute_nics, p.estimate),
            (270_000.0, 10_200.0, true, true)
        );
        // A server the catalog does not list: its GPUs plus the host's non-GPU parts.
        let budget = railyard_spec::presets::load("h100-nic-1to4").unwrap();
        let p = server_price(&budget, &catalog).unwrap();
        assert_eq!(p.usd, 8.0 * 27_500.0 + 32_010.0);
        assert_eq!(p.power_w, 8.0 * 700.0 + 4_600.0);
        assert!(!p.includes_compute_nics);
    }

    /// A DGX H100 with two compute NICs is not a DGX H100: it is priced as its GPUs and a host, its
    /// NICs with the network.
    #[test]
    fn a_server_model_with_other_nics_is_priced_from_its_parts() {
        let catalog = Catalog::builtin();
        let mut raw = railyard_spec::presets::raw("dgx-h100-superpod").unwrap();
        railyard_spec::Overrides {
            nic_ratio: Some((1, 4)),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = railyard_spec::ClusterSpec::from_raw(&raw, "t").unwrap();
        let p = server_price(&spec, &catalog).unwrap();
        assert_eq!(p.usd, 8.0 * 27_500.0 + 32_010.0);
        assert!(!p.includes_compute_nics);
    }

    /// The default preset's capital: 127 DGX H100 and every network, the DGX's own NICs counted once.
    #[test]
    fn capex_counts_servers_and_every_network_once() {
        let catalog = Catalog::builtin();
        let spec = railyard_spec::presets::load("dgx-h100-superpod").unwrap();
        let planned = railyard_plan::plan_design(&spec, &catalog, &Default::default()).unwrap();
        let c = Capex::of(&spec, &catalog, &planned).unwrap();
        assert_eq!(c.servers_usd, 127.0 * 270_000.0);
        let s = &planned.plan.summary;
        let storage = s.storage.as_ref().unwrap().cost_usd.total;
        let management = s.management.as_ref().unwrap().cost_usd;
        let networks = s.cost_usd.total - s.cost_usd.nics + storage + management;
        assert!((c.networks_usd - networks).abs() < 1e-6, "{c:?}");
        assert!(c.includes_estimates);
        // Per million tokens: the hour's cost over the hour's tokens.
        let a = Assumptions {
            amortize_years: 4.0,
            pue: DEFAULT_PUE,
            usd_per_kwh: DEFAULT_USD_PER_KWH,
        };
        let hour = cost_per_hour(&c, &a).unwrap();
        let x = usd_per_million_tokens(&hour, 1e6);
        assert!((x - hour.total_usd / 3600.0).abs() < 1e-12);
    }
}
