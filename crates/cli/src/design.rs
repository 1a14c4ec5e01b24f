//! From command-line words to a validated spec and catalog, with every input error found up front.

use crate::error::CliError;
use crate::io::{read_input, Input};
use clap::Args;
use railyard_catalog::{Catalog, Tech};
use railyard_spec::{presets, raw::RawSpec, ClusterSpec, Overrides, Topology};
use std::path::PathBuf;

/// Flags that describe a design: a preset or spec file, overrides, and catalog additions.
#[derive(Debug, Clone, Default, Args)]
pub struct DesignArgs {
    /// Spec file (TOML); flags below override it.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Number of GPU servers.
    #[arg(long, value_name = "N")]
    pub servers: Option<u32>,
    #[arg(long, value_name = "N")]
    pub gpus_per_server: Option<u32>,
    /// Compute NICs per server (sets the NIC:GPU ratio).
    #[arg(long, value_name = "N")]
    pub nics_per_server: Option<u32>,
    /// GPU model (catalog id: A100, H100, H200, B200).
    #[arg(long, value_name = "MODEL")]
    pub gpu: Option<String>,
    /// Link technology; picks a matching NIC, switch and cables unless those are given too.
    #[arg(long, value_name = "T", value_parser = parse_tech)]
    pub tech: Option<Tech>,
    #[arg(long, value_name = "T", value_parser = parse_topology)]
    pub topology: Option<Topology>,
    /// Switch model (catalog id), or `auto`.
    #[arg(long = "switch", value_name = "MODEL")]
    pub switch_model: Option<String>,
    /// NIC model (catalog id), or `auto`.
    #[arg(long, value_name = "MODEL")]
    pub nic: Option<String>,
    /// Leaf down:up ratio, 1 = non-blocking.
    #[arg(long, value_name = "R")]
    pub oversubscription: Option<f64>,
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub gpudirect: Option<bool>,
    /// Servers per scalable unit (rail-optimized).
    #[arg(long, value_name = "N")]
    pub su_size: Option<u32>,
    /// NIC:GPU ratio such as 1:1, 1:2 or 1:4 (sets --nics-per-server from the GPUs per server).
    #[arg(long, value_name = "NICS:GPUS", value_parser = parse_ratio)]
    pub nic_ratio: Option<(u32, u32)>,
    /// Catalog file that adds or replaces entries by id.
    #[arg(long, value_name = "FILE")]
    pub catalog: Vec<PathBuf>,
    /// Prices file: `[price_usd]` id = dollars.
    #[arg(long, value_name = "FILE")]
    pub prices: Vec<PathBuf>,
}

fn parse_tech(s: &str) -> Result<Tech, String> {
    s.parse()
}

fn parse_topology(s: &str) -> Result<Topology, String> {
    s.parse()
}

pub fn parse_ratio(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("`{s}` is not a ratio; write NICS:GPUS, e.g. 1:4");
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a == 0 || b == 0 {
        return Err(bad());
    }
    Ok((a, b))
}

/// `--pxn auto|on|off|staged`: how traffic crosses rails between servers (`Relay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PxnArg(pub Option<railyard_sim::collective::Relay>);

impl PxnArg {
    pub fn parse(s: &str) -> Result<PxnArg, String> {
        railyard_sim::collective::Relay::parse(s).map(PxnArg)
    }

    /// The relay: as given, or the fabric's default.
    pub fn resolve(self, f: &railyard_fabric::Fabric) -> railyard_sim::collective::Relay {
        self.0
            .unwrap_or_else(|| railyard_sim::collective::Relay::auto(f))
    }
}

/// `--routing` for the training step and compare: a policy, not an LFT file.
pub fn parse_routing(s: &str) -> Result<railyard_sim::routing::RoutingKind, String> {
    railyard_sim::routing::RoutingKind::parse(s)
        .ok_or_else(|| format!("`{s}` is not a routing policy; valid: dmodk, ecmp, adaptive"))
}

pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => Err(format!("`{s}` is not on or off; valid: on, off")),
    }
}

impl DesignArgs {
    pub fn overrides(&self) -> Overrides {
        Overrides {
            servers: self.servers,
            gpus_per_server: self.gpus_per_server,
            nics_per_server: self.nics_per_server,
            gpu: self.gpu.clone(),
            tech: self.tech,
            topology: self.topology,
            switch: self.switch_model.clone(),
            nic: self.nic.clone(),
            oversubscription: self.oversubscription,
            gpudirect: self.gpudirect,
            su_size: self.su_size,
            nic_ratio: self.nic_ratio,
        }
    }

    /// The catalog with `--catalog` files overlaid and `--prices` applied, in order.
    pub fn catalog(&self) -> Result<Catalog, CliError> {
        let mut catalog = Catalog::builtin();
        for path in &self.catalog {
            let text = read_input(path, Input::CATALOG)?;
            catalog
                .overlay(&text, &path.display().to_string())
                .map_err(|e| CliError::input(e.to_string()))?;
        }
        for path in &self.prices {
            let text = read_input(path, Input::PRICES)?;
            catalog
                .apply_prices(&text, &path.display().to_string())
                .map_err(|e| CliError::input(e.to_string()))?;
        }
        Ok(catalog)
    }

    /// The raw spec from `--spec`, a preset name, or the default preset; and its origin for messages.
    pub fn raw(&self, preset: Option<&str>) -> Result<(RawSpec, String), CliError> {
        match (&self.spec, preset) {
            (Some(_), Some(p)) => Err(CliError::input(format!(
                "give either a preset ({p}) or --spec, not both"
            ))),
            (Some(path), None) => {
                let text = read_input(path, Input::SPEC)?;
                let origin = path.display().to_string();
                let raw = railyard_spec::parse_raw(&text, &origin)
                    .map_err(|e| CliError::input(e.to_string()))?;
                Ok((raw, origin))
            }
            (None, p) => {
                let name = p.unwrap_or(presets::DEFAULT);
                let raw = presets::raw(name).map_err(|e| CliError::input(e.to_string()))?;
                Ok((raw, format!("preset {name}")))
            }
        }
    }

    /// Loads and validates the design, with the flags applied.
    pub fn load(&self, preset: Option<&str>) -> Result<(ClusterSpec, Catalog), CliError> {
        let catalog = self.catalog()?;
        let (mut raw, origin) = self.raw(preset)?;
        self.overrides()
            .apply(&mut raw)
            .map_err(|e| CliError::input(e.to_string()))?;
        let spec =
            ClusterSpec::from_raw(&raw, &origin).map_err(|e| CliError::input(e.to_string()))?;
        Ok((spec, catalog))
    }
}

/// Builds the fabric, naming the spec's origin in errors.
pub fn build(spec: &ClusterSpec, catalog: &Catalog) -> Result<railyard_fabric::Fabric, CliError> {
    railyard_fabric::build(spec, catalog)
        .map_err(|e| CliError::input(format!("{}: {e}", spec.origin)))
}

/// Applies one `key=value` override (as in `compare --vary` and `DESIGN:key=value`).
pub fn apply_kv(o: &mut Overrides, key: &str, value: &str) -> Result<(), CliError> {
    let bad = |m: String| CliError::input(format!("{key}={value}: {m}"));
    let num = |v: &str| {
        v.parse::<u32>()
            .map_err(|_| bad(format!("`{v}` is not a whole number")))
    };
    match key {
        "servers" => o.servers = Some(num(value)?),
        "gpus-per-server" => o.gpus_per_server = Some(num(value)?),
        "nics-per-server" => o.nics_per_server = Some(num(value)?),
        "su-size" => o.su_size = Some(num(value)?),
        "gpu" => o.gpu = Some(value.to_string()),
        "nic" => o.nic = Some(value.to_string()),
        "switch" => o.switch = Some(value.to_string()),
        "tech" => o.tech = Some(value.parse().map_err(bad)?),
        "topology" => o.topology = Some(value.parse().map_err(bad)?),
        "gpudirect" => o.gpudirect = Some(parse_on_off(value).map_err(bad)?),
        "oversubscription" => {
            o.oversubscription = Some(value.parse().map_err(|_| bad(format!("`{value}` is not a number")))?)
        }
        "nic-ratio" => {
            // 1:N means one NIC per N GPUs; resolved against GPUs per server when the design loads.
            o.nic_ratio = Some(parse_ratio(value).map_err(bad)?);
        }
        _ => {
            return Err(CliError::input(format!(
                "unknown key `{key}`; valid: servers, gpus-per-server, nics-per-server, nic-ratio, gpu, nic, switch, tech, topology, oversubscription, gpudirect, su-size"
            )))
        }
    }
    Ok(())
}
