//! A fabric as built, as a design every command can evaluate: a fabric.json (from `import ibnet`
//! or `plan --out`) or discovery output read directly ([`load`]), and the servers discovery cannot
//! see ([`furnish`]): GPUs, PCIe switches and NVLink from a server description (the flags `--gpu`,
//! `--gpus-per-server`, `--nics-per-server`, or a preset or spec whose servers match).

use railyard_catalog::{Catalog, Family, Tech};
use railyard_fabric::{BuildError, Fabric};
use railyard_ib::discovery::ParseError;
use railyard_ib::import::ImportError;
use railyard_spec::raw::RawSpec;
use railyard_spec::{ClusterSpec, Overrides, SpecError};
use std::fmt;

/// Why a fabric file does not give a fabric to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub enum DiscoveredError {
    /// fabric.json that does not load.
    FabricJson(String),
    /// Discovery output that does not parse (names the line).
    Parse(ParseError),
    /// A discovery that does not import (names the line and the link's ends).
    Import(ImportError),
    /// The servers are not described: the design keys that must be given (`gpu`,
    /// `gpus-per-server`).
    MissingServers {
        missing: Vec<&'static str>,
        hcas: u32,
    },
    /// The server description is not a valid spec (names the field).
    Spec(SpecError),
    /// The servers do not fit the discovered HCAs (names the spec field).
    Build(BuildError),
    /// `--servers` given with a fabric that has another number of servers.
    ServerCount { given: u32, fabric: usize },
}

impl fmt::Display for DiscoveredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoveredError::FabricJson(e) => f.write_str(e),
            DiscoveredError::ServerCount { given, fabric } => write!(
                f,
                "--servers {given}: the fabric has {fabric} servers; its servers are the ones it \
                 shows (valid: leave --servers out, or {fabric})"
            ),
            DiscoveredError::Parse(e) => write!(f, "{e}"),
            DiscoveredError::Import(e) => write!(f, "{e}"),
            DiscoveredError::MissingServers { missing, hcas } => write!(
                f,
                "a discovered fabric shows HCAs ({hcas} per server at most), not GPUs: give {} \
                 (and --nics-per-server N if the servers have more NICs than HCAs were found), or \
                 a preset or --spec whose servers match",
                missing
                    .iter()
                    .map(|k| format!("--{k}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            DiscoveredError::Spec(e) => write!(f, "{e}"),
            DiscoveredError::Build(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DiscoveredError {}

/// A fabric file's text as a fabric: fabric.json when it starts with `{`, otherwise ibnetdiscover
/// (either form) or iblinkinfo output, imported at each link's rate (`name` names the fabric),
/// with a note for each link whose two ends reported different rates (taken at the lower,
/// [`railyard_ib::discovery::RateDisagreement::note`]).
pub fn load(text: &str, name: &str) -> Result<(Fabric, Vec<String>), DiscoveredError> {
    if text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with('{')
    {
        return railyard_fabric::fabric_file::load_fabric_json(text)
            .map(|f| (f, Vec::new()))
            .map_err(|e| DiscoveredError::FabricJson(e.to_string()));
    }
    let d = railyard_ib::discovery::parse(text).map_err(DiscoveredError::Parse)?;
    let notes = d.rate_disagreements.iter().map(|r| r.note()).collect();
    railyard_ib::import::to_fabric(&d, name)
        .map(|f| (f, notes))
        .map_err(DiscoveredError::Import)
}

/// Whether a fabric has its servers' insides (a plan's fabric.json) or only their HCAs (an imported
/// discovery).
pub fn has_gpus(f: &Fabric) -> bool {
    f.meta.gpus_per_server > 0
}

/// The servers' description: `base` (a preset's or spec's raw form, whose `servers` table is used)
/// with `overrides` applied, or without a base the overrides alone, which must then name the GPU
/// and GPUs per server. NICs per server default to the most HCAs a discovered server has.
pub fn server_spec(
    f: &Fabric,
    base: Option<(RawSpec, String)>,
    overrides: &Overrides,
) -> Result<ClusterSpec, DiscoveredError> {
    let hcas = f.meta.compute_nics_per_server;
    let (mut raw, origin) = match base {
        Some(b) => b,
        None => {
            let mut missing = Vec::new();
            if overrides.gpu.is_none() {
                missing.push("gpu");
            }
            if overrides.gpus_per_server.is_none() {
                missing.push("gpus-per-server");
            }
            if !missing.is_empty() {
                return Err(DiscoveredError::MissingServers { missing, hcas });
            }
            let mut raw = RawSpec::default();
            raw.servers.compute_nics = Some(i64::from(hcas.max(1)));
            raw.fabric.topology = Some("single-switch".to_string());
            (raw, "command line".to_string())
        }
    };
    // The servers' NICs run the discovered technology; one only discovered (QDR, say) has no NIC
    // in the catalog, so its servers get the slowest InfiniBand NIC the catalog has.
    let tech = if Tech::ALL.contains(&f.meta.tech) {
        f.meta.tech
    } else if f.meta.tech.family() == Family::Infiniband {
        Tech::IbEdr
    } else {
        f.meta.tech
    };
    raw.fabric.tech = Some(tech.as_str().to_string());
    raw.fabric.port_gbps = None;
    raw.fabric.planes = None;
    raw.servers.count = Some(1);
    raw.fabric.topology = Some("single-switch".to_string());
    raw.fabric.su_size = None;
    // The fabric's servers are the ones it shows: a count given must be theirs, and describes one
    // server here (the spec only furnishes its insides).
    let mut overrides = overrides.clone();
    if let Some(given) = overrides.servers.take() {
        if given as usize != f.servers.len() {
            return Err(DiscoveredError::ServerCount {
                given,
                fabric: f.servers.len(),
            });
        }
    }
    overrides.apply(&mut raw).map_err(DiscoveredError::Spec)?;
    ClusterSpec::from_raw(&raw, &origin).map_err(DiscoveredError::Spec)
}

/// `f` ready to simulate: as it is when it has its servers' insides, otherwise furnished with the
/// servers `spec` describes ([`railyard_fabric::import::furnish`]).
pub fn furnish(
    f: Fabric,
    spec: &ClusterSpec,
    catalog: &Catalog,
) -> Result<Fabric, DiscoveredError> {
    if has_gpus(&f) {
        return Ok(f);
    }
    railyard_fabric::import::furnish(&f, spec, catalog).map_err(DiscoveredError::Build)
}

/// A fabric as built, as a design to evaluate: its servers described by `base` and `overrides`
/// ([`server_spec`]) and furnished ([`furnish`]); a fabric with its servers' insides as it is.
pub fn as_design(
    f: Fabric,
    base: Option<(RawSpec, String)>,
    overrides: &Overrides,
    catalog: &Catalog,
) -> Result<Fabric, DiscoveredError> {
    if has_gpus(&f) {
        return Ok(f);
    }
    let spec = server_spec(&f, base, overrides)?;
    furnish(f, &spec, catalog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{sweep, RouteSource};
    use railyard_sim::collective::{CollectiveConfig, Relay};
    use railyard_sim::fabric_net::NetConfig;
    use railyard_sim::nccl::Collective;
    use railyard_sim::routing::{RoutingConfig, RoutingKind};
    use railyard_spec::presets;

    fn plan(preset: &str, servers: Option<u32>) -> Fabric {
        let mut raw = presets::raw(preset).unwrap();
        Overrides {
            servers,
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    /// What ibnetdiscover prints of the plan, imported, furnished from the flags alone.
    fn rediscovered(f: &Fabric, gpu: &str) -> Fabric {
        let text = railyard_ib::export::ibnetdiscover_text(f).unwrap();
        let (imported, notes) = load(&text, "as-built").unwrap();
        assert!(notes.is_empty());
        assert!(!has_gpus(&imported));
        let o = Overrides {
            gpu: Some(gpu.to_string()),
            gpus_per_server: Some(8),
            ..Default::default()
        };
        let spec = server_spec(&imported, None, &o).unwrap();
        furnish(imported, &spec, &Catalog::builtin()).unwrap()
    }

    fn busbw(f: &Fabric, op: Collective) -> railyard_sim::collective::Sweep {
        let cfg = CollectiveConfig {
            relay: Relay::auto(f, &Catalog::builtin()),
            ..CollectiveConfig::new(op)
        };
        let routes = RouteSource::Policy(RoutingKind::DModK, RoutingConfig::default());
        let sizes = [1 << 20, 1 << 30];
        sweep(
            f,
            &Catalog::builtin(),
            &NetConfig::default(),
            routes,
            &cfg,
            &sizes,
            &mut |_| {},
        )
        .unwrap()
        .sweep
    }

    /// The rediscovered fabric, furnished with the plan's servers from `--gpu` and
    /// `--gpus-per-server`, simulates exactly as the plan: same ranks, routes and busbw.
    #[test]
    fn a_rediscovered_plan_simulates_as_the_plan() {
        for (preset, servers, gpu) in [
            ("seed-leaf-spine", None, "A100"),
            ("dgx-h100-superpod", Some(32), "H100"),
        ] {
            let f = plan(preset, servers);
            let g = rediscovered(&f, gpu);
            assert_eq!(g.servers.len(), f.servers.len(), "{preset}");
            for (a, b) in f.servers.iter().zip(&g.servers) {
                assert_eq!(a.name, b.name, "{preset}: servers in the plan's order");
            }
            // Discovery measures no cable, so the plan's propagation delays (a few ns per metre)
            // are the one difference: with its cables' lengths unknown, the plan gives the same
            // rows to the last bit; with them, the same busbw at 1 GiB to 0.01%.
            let mut unmeasured = f.clone();
            for l in &mut unmeasured.links {
                if l.kind.is_network() {
                    l.medium = railyard_fabric::Medium::Discovered;
                }
            }
            for op in [Collective::AllReduce, Collective::AllToAll] {
                let (x, y) = (busbw(&unmeasured, op), busbw(&g, op));
                assert_eq!(x.rows, y.rows, "{preset} {op}");
                assert_eq!(x.routing, y.routing);
                let (p, q) = (busbw(&f, op).rows[1].row.busbw_gbs, y.rows[1].row.busbw_gbs);
                assert!((p - q).abs() / p < 1e-4, "{preset} {op}: {p} vs {q}");
            }
        }
    }

    #[test]
    fn servers_must_be_described() {
        let f = plan("seed-leaf-spine", None);
        let text = railyard_ib::export::ibnetdiscover_text(&f).unwrap();
        let (imported, _) = load(&text, "as-built").unwrap();
        let e = server_spec(&imported, None, &Overrides::default()).unwrap_err();
        assert_eq!(
            e,
            DiscoveredError::MissingServers {
                missing: vec!["gpu", "gpus-per-server"],
                hcas: 8
            }
        );
        assert!(e.to_string().contains("--gpu and --gpus-per-server"), "{e}");
        // Fewer NICs than a server has HCAs names the field.
        let o = Overrides {
            gpu: Some("A100".into()),
            gpus_per_server: Some(8),
            nics_per_server: Some(4),
            ..Default::default()
        };
        let spec = server_spec(&imported, None, &o).unwrap();
        let e = furnish(imported, &spec, &Catalog::builtin()).unwrap_err();
        assert!(e.to_string().starts_with("servers.compute_nics:"), "{e}");
    }
}
