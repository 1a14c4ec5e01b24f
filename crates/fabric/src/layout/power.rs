//! Power, cooling and space of the server racks (issue 37, item 5): the checks a spec's racks must
//! pass before anything is built ([`check`]), and what a design's server racks hold and draw
//! ([`Racks`]), from what one server draws and needs ([`super::server`]).
//!
//! A server's power comes from the catalog: its server model's (`servers.toml`, the maker's maximum),
//! else its GPUs' plus an 8-GPU host's non-GPU parts scaled to the GPU count. A rack-scale system's
//! compute trays (GB200 NVL72) stand in their own rack, as many as the system holds, and the rack
//! draws the system's power: the trays with the NVLink switch trays and power shelves
//! (`[[rack_system]]`). A `[layout] max_rack_kw` limit lowers the servers per rack (the DGX SuperPOD
//! H100 rack of four 10.2 kW DGX H100 draws 40.8 kW: "The three main resource constraints in an
//! air-cooled data center environment are power, cooling, and space", DGX SuperPOD H100 data-center
//! design guide, planning); a rack-scale system or a server above it alone cannot be planned.

use super::hall::{rack_counts, RackFill};
use super::server::{rack_system, server_power, ServerSlot};
use crate::error::{err, BuildError};
use crate::graph::Fabric;
use railyard_catalog::{number, Catalog, Cooling, RackSystem};
use railyard_spec::{ClusterSpec, SiteCooling, Topology};
use serde::{Deserialize, Serialize};

/// The spec's racks checked against its servers before anything is built: a rack-scale system's
/// trays as the system has them (its GPU, GPUs per tray, whole racks, scalable units of whole
/// racks), the power limit against one server or one rack-scale system, the cooling against what
/// the servers need. Every error names the spec field at fault and the valid values.
pub(crate) fn check(spec: &ClusterSpec, catalog: &Catalog) -> Result<(), BuildError> {
    let l = &spec.layout;
    let power = server_power(spec, catalog);
    if let Some(r) = rack_system(spec, catalog) {
        check_trays(spec, catalog, r)?;
        if let Some(kw) = l.max_rack_kw {
            if r.power_w > kw * 1000.0 {
                return Err(err(
                    "layout.max_rack_kw",
                    format!(
                        "one {} rack draws {} kW and is one NVLink domain that cannot be split; valid: {} to {}, or servers that are not rack-scale",
                        r.id,
                        number(r.power_w / 1000.0),
                        number(r.power_w / 1000.0),
                        number(railyard_spec::keys::MAX_RACK_KW.max)
                    ),
                ));
            }
        }
    } else if let (Some(kw), Some(p)) = (l.max_rack_kw, &power) {
        if p.watts > kw * 1000.0 {
            return Err(err(
                "layout.max_rack_kw",
                format!(
                    "one server draws {} kW ({}), more than {} kW per rack; valid: {} to {}",
                    number(p.watts / 1000.0),
                    p.source,
                    number(kw),
                    number((p.watts / 1000.0).ceil()),
                    number(railyard_spec::keys::MAX_RACK_KW.max)
                ),
            ));
        }
    }
    if let (Some(SiteCooling::Air), Some(p)) = (l.cooling, &power) {
        if p.cooling.needs_liquid() {
            return Err(err(
                "layout.cooling",
                format!(
                    "the servers are {} cooled ({}) and need a liquid loop at the rack; valid: liquid, or air-cooled servers",
                    p.cooling.as_str(),
                    spec.servers.model
                ),
            ));
        }
    }
    Ok(())
}

/// A rack-scale system's trays as the catalog builds them.
fn check_trays(spec: &ClusterSpec, catalog: &Catalog, r: &RackSystem) -> Result<(), BuildError> {
    let s = &spec.servers;
    let Some(tray) = catalog.servers.get(&r.tray) else {
        return Ok(());
    };
    if s.gpu != tray.gpu {
        return Err(err(
            "servers.gpu",
            format!(
                "a {} compute tray holds {} GPUs; valid: {}",
                r.id, tray.gpu, tray.gpu
            ),
        ));
    }
    if s.gpus_per_server != tray.gpus {
        return Err(err(
            "servers.gpus_per_server",
            format!(
                "a {} compute tray holds {} GPUs; valid: {}",
                r.id, tray.gpus, tray.gpus
            ),
        ));
    }
    // NICs as built: GB200's four ConnectX-7 per tray, GB300's four ConnectX-8 (the catalog's tray).
    if tray.includes_compute_nics && s.compute_nics != tray.compute_nics {
        return Err(err(
            "servers.compute_nics",
            format!(
                "a {} compute tray is built with {} compute NICs; valid: {}",
                r.id, tray.compute_nics, tray.compute_nics
            ),
        ));
    }
    if !s.count.is_multiple_of(r.trays) {
        let racks = s.count.div_ceil(r.trays);
        return Err(err(
            "servers.count",
            format!(
                "{} compute trays are not whole {} racks of {} trays (one NVLink domain of {} GPUs each); valid: a multiple of {}, such as {} ({} racks)",
                s.count,
                r.id,
                r.trays,
                r.gpus(tray.gpus),
                r.trays,
                racks * r.trays,
                racks
            ),
        ));
    }
    if spec.fabric.topology == Topology::RailOptimized {
        if let Some(su) = spec.fabric.su_size.filter(|su| !su.is_multiple_of(r.trays)) {
            return Err(err(
                "fabric.su_size",
                format!(
                    "a unit of {su} trays splits a {} rack (a unit starts a new rack); valid: a multiple of {}",
                    r.id, r.trays
                ),
            ));
        }
    }
    Ok(())
}

/// A rack-scale NVLink domain as a design holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NvlinkDomain {
    /// The rack-scale system's catalog id (`GB200 NVL72`).
    pub system: String,
    /// Domains (racks) in the design.
    pub domains: u32,
    pub gpus_per_domain: u32,
    pub trays_per_domain: u32,
    pub nvlink_switch_trays: u32,
    pub nvlink_switch_chips: u32,
    /// NVLink bandwidth of one GPU, one direction, GB/s: its links at the catalog's per-link figure
    /// (NCCL's topo.h SM100 40.1 GB/s for NVLink 5, what NCCL plans with; the wire carries 50).
    pub gpu_nvlink_gbs: f64,
    /// Racks per scalable unit in the system's reference architecture, with its source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub racks_per_su: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scalable_units: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub su_source: Option<String>,
}

/// A design's server racks: how many, how full and why no fuller, what one draws, the cooling its
/// servers need, and the rack-scale NVLink domain where the servers are its trays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Racks {
    pub server_racks: u32,
    pub servers_per_rack: u32,
    /// What holds a rack to `servers_per_rack`: `layout` (`layout.servers_per_rack`), `space`
    /// (`layout.rack_units`), `power` (`layout.max_rack_kw`) or `rack-scale system`.
    pub limited_by: String,
    /// One server, kW (`None`: the catalog has no power for it).
    pub server_kw: Option<f64>,
    /// A full server rack, kW: its servers, and a rack-scale system's NVLink switch trays and power
    /// shelves.
    pub rack_kw: Option<f64>,
    /// Every server rack, kW: the servers' share of the facility's power.
    pub servers_kw: Option<f64>,
    pub power_source: Option<String>,
    /// The cooling the servers need: `air`, `hybrid` (direct liquid and air) or `liquid`.
    pub cooling: String,
    pub needs_liquid: bool,
    pub max_rack_kw: Option<f64>,
    pub site_cooling: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvlink_domain: Option<NvlinkDomain>,
}

impl Racks {
    /// The server racks of `f`, built from `spec` with `catalog`.
    pub fn of(f: &Fabric, spec: &ClusterSpec, catalog: &Catalog) -> Racks {
        let l = &spec.layout;
        let fill = RackFill::of(f, spec, catalog);
        let (server_racks, _) = rack_counts(f, l, fill);
        let slot = ServerSlot::of(spec, catalog);
        let power = server_power(spec, catalog);
        let system = rack_system(spec, catalog);
        let per = fill.servers;
        let limited_by = if system.is_some() {
            "rack-scale system"
        } else if per >= l.servers_per_rack {
            "layout"
        } else if slot
            .height_u
            .is_some_and(|u| per == l.rack_units / u.max(1))
        {
            "space"
        } else {
            "power"
        };
        let rack_w = match system {
            Some(r) => Some(r.power_w),
            None => power.as_ref().map(|p| p.watts * f64::from(per)),
        };
        let servers = f.servers.len() as f64;
        let servers_w = match system {
            Some(r) => Some(r.power_w * servers / f64::from(r.trays.max(1))),
            None => power.as_ref().map(|p| p.watts * servers),
        };
        let cooling = power.as_ref().map_or(Cooling::Air, |p| p.cooling);
        let nvlink_domain = system.map(|r| {
            let gpus = f.meta.gpus_per_server;
            let domains = f.servers.len() as u32 / r.trays.max(1);
            let gpu = catalog.gpus.get(&spec.servers.gpu);
            NvlinkDomain {
                system: r.id.clone(),
                domains,
                gpus_per_domain: r.gpus(gpus),
                trays_per_domain: r.trays,
                nvlink_switch_trays: r.nvlink_switch_trays,
                nvlink_switch_chips: r.nvlink_switch_chips,
                // Tenths of a GB/s: the sum of 18 links' 40.1 is 721.8, not 721.8000000000001.
                gpu_nvlink_gbs: gpu.map_or(0.0, |g| {
                    (g.nvlink_gbs_per_link * f64::from(g.nvlink_links) * 10.0).round() / 10.0
                }),
                racks_per_su: r.racks_per_su,
                scalable_units: r.racks_per_su.map(|n| domains.div_ceil(n.max(1))),
                su_source: r.racks_per_su.map(|_| r.su_source.clone()),
            }
        });
        let system_source = system.map(|r| {
            format!(
                "the {} rack at {} kW (catalog)",
                r.id,
                number(r.power_w / 1000.0)
            )
        });
        Racks {
            server_racks,
            servers_per_rack: per,
            limited_by: limited_by.to_string(),
            server_kw: power.as_ref().map(|p| p.watts / 1000.0),
            rack_kw: rack_w.map(|w| w / 1000.0),
            servers_kw: servers_w.map(|w| w / 1000.0),
            power_source: system_source.or_else(|| power.as_ref().map(|p| p.source.clone())),
            cooling: cooling.as_str().to_string(),
            needs_liquid: cooling.needs_liquid(),
            max_rack_kw: l.max_rack_kw,
            site_cooling: l.cooling.map(|c| c.as_str().to_string()),
            nvlink_domain,
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use railyard_spec::{presets, Overrides, SiteCooling};

    fn spec(name: &str, o: Overrides) -> ClusterSpec {
        let mut raw = presets::raw(name).unwrap();
        o.apply(&mut raw).unwrap();
        ClusterSpec::from_raw(&raw, name).unwrap()
    }

    fn racks(name: &str, o: Overrides) -> Racks {
        let s = spec(name, o);
        let catalog = Catalog::builtin();
        let f = crate::build(&s, &catalog).unwrap();
        Racks::of(&f, &s, &catalog)
    }

    fn refused(name: &str, o: Overrides) -> BuildError {
        crate::build(&spec(name, o), &Catalog::builtin()).unwrap_err()
    }

    /// The DGX SuperPOD H100 rack: four 10.2 kW DGX H100, 40.8 kW ('40.8 kW total rack power when
    /// each system runs at 10.2 kW maximum', the H100 data-center design guide as docs/hardware-2026.md
    /// section 5 quotes it), air cooled, 32 racks for 4 units of 32 servers (the last holds 31).
    #[test]
    fn the_default_design_reports_its_kw_per_rack() {
        let r = racks("dgx-h100-superpod", Overrides::default());
        assert_eq!((r.server_racks, r.servers_per_rack), (32, 4));
        assert_eq!(r.limited_by, "layout");
        assert!((r.rack_kw.unwrap() - 40.8).abs() < 1e-9);
        assert!((r.servers_kw.unwrap() - 127.0 * 10.2).abs() < 1e-9);
        assert_eq!((r.cooling.as_str(), r.needs_liquid), ("air", false));
        assert!(r.nvlink_domain.is_none());
    }

    /// A 40 kW limit: three DGX H100 (30.6 kW) to a rack, so each unit of 32 servers takes 11 racks
    /// (ten of three and one of two; 31 servers: 11 too), 44 racks against 32.
    #[test]
    fn a_40_kw_limit_changes_servers_per_rack_and_the_rack_count() {
        let r = racks(
            "dgx-h100-superpod",
            Overrides {
                max_rack_kw: Some(40.0),
                ..Default::default()
            },
        );
        assert_eq!((r.server_racks, r.servers_per_rack), (44, 3));
        assert_eq!(r.limited_by, "power");
        assert!((r.rack_kw.unwrap() - 30.6).abs() < 1e-9);
        assert_eq!(r.max_rack_kw, Some(40.0));
        // A limit the rack already meets changes nothing.
        let r = racks(
            "dgx-h100-superpod",
            Overrides {
                max_rack_kw: Some(41.0),
                ..Default::default()
            },
        );
        assert_eq!((r.server_racks, r.servers_per_rack), (32, 4));
    }

    /// DGX SuperPOD GB200 (RA-11338-001): 'each SU contains 8 DGX GB200 systems', each 'a rack-scale,
    /// 72 GPU configuration' of 18 compute trays and 9 NVLink switch trays of 2 chips. The preset's 2
    /// units are 16 racks of 18 trays, 1,152 GPUs; every rack one NVLink domain, in a leaf group of
    /// whole racks; hybrid cooled, so liquid is needed.
    #[test]
    fn gb200_superpod_counts_scalable_units_as_the_reference_architecture() {
        let s = spec("gb200-nvl72-superpod", Overrides::default());
        let catalog = Catalog::builtin();
        let f = crate::build(&s, &catalog).unwrap();
        let r = Racks::of(&f, &s, &catalog);
        let d = r.nvlink_domain.as_ref().unwrap();
        assert_eq!(
            (d.domains, d.gpus_per_domain, d.trays_per_domain),
            (16, 72, 18)
        );
        assert_eq!((d.nvlink_switch_trays, d.nvlink_switch_chips), (9, 18));
        assert_eq!((d.racks_per_su, d.scalable_units), (Some(8), Some(2)));
        let src = d.su_source.as_deref().unwrap();
        assert!(
            src.contains("each SU contains 8 DGX GB200 systems"),
            "{src}"
        );
        assert!(src.contains("RA-11338-001"), "{src}");
        assert_eq!(d.racks_per_su.unwrap() * d.gpus_per_domain, 576);
        assert_eq!((r.server_racks, r.servers_per_rack), (16, 18));
        assert_eq!(f.servers.len() as u32 * f.meta.gpus_per_server, 1152);
        assert!(f.meta.su_size.is_some_and(|su| su % 18 == 0));
        assert!((r.rack_kw.unwrap() - 120.0).abs() < 1e-9);
        assert!((r.servers_kw.unwrap() - 16.0 * 120.0).abs() < 1e-9);
        assert!(r.needs_liquid);
        assert_eq!(r.cooling, "hybrid");
    }

    #[test]
    fn rack_scale_trays_come_in_whole_racks_and_units_of_racks() {
        let e = refused(
            "gb200-nvl72-superpod",
            Overrides {
                servers: Some(100),
                ..Default::default()
            },
        );
        assert_eq!(e.field, "servers.count");
        assert!(
            e.message
                .contains("valid: a multiple of 18, such as 108 (6 racks)"),
            "{e}"
        );
        let e = refused(
            "gb200-nvl72-superpod",
            Overrides {
                su_size: Some(16),
                ..Default::default()
            },
        );
        assert_eq!(e.field, "fabric.su_size");
        let e = refused(
            "gb200-nvl72-superpod",
            Overrides {
                gpus_per_server: Some(8),
                ..Default::default()
            },
        );
        assert_eq!(e.field, "servers.gpus_per_server");
        let e = refused(
            "gb200-nvl72-superpod",
            Overrides {
                nics_per_server: Some(2),
                ..Default::default()
            },
        );
        assert_eq!(e.field, "servers.compute_nics");
        assert!(e.message.contains("valid: 4"), "{e}");
    }

    #[test]
    fn limits_a_design_cannot_meet_are_refused_naming_the_field() {
        // One NVL72 rack is one NVLink domain: it cannot be split to meet 100 kW.
        let e = refused(
            "gb200-nvl72-superpod",
            Overrides {
                max_rack_kw: Some(100.0),
                ..Default::default()
            },
        );
        assert_eq!(e.field, "layout.max_rack_kw");
        assert!(
            e.message.contains("120 kW") && e.message.contains("valid: 120 to 1000"),
            "{e}"
        );
        // An air-cooled site cannot take hybrid-cooled racks or liquid-cooled MI355X servers.
        for name in ["gb200-nvl72-superpod", "mi355x-roce"] {
            let e = refused(
                name,
                Overrides {
                    cooling: Some(SiteCooling::Air),
                    ..Default::default()
                },
            );
            assert_eq!(e.field, "layout.cooling", "{name}");
            assert!(e.message.contains("valid: liquid"), "{e}");
        }
        // One DGX H100 alone draws 10.2 kW.
        let e = refused(
            "dgx-h100-superpod",
            Overrides {
                max_rack_kw: Some(10.0),
                ..Default::default()
            },
        );
        assert_eq!(e.field, "layout.max_rack_kw");
        assert!(e.message.contains("valid: 11 to 1000"), "{e}");
    }

    /// A server the catalog does not list draws its GPUs plus an 8-GPU host's non-GPU parts: eight
    /// B200 at 1,000 W and 4.6 kW.
    #[test]
    fn an_unlisted_server_draws_its_gpus_and_a_hosts_share() {
        let s = spec("b200-xdr", Overrides::default());
        let p = server_power(&s, &Catalog::builtin()).unwrap();
        assert!((p.watts - (8.0 * 1000.0 + 4600.0)).abs() < 1e-9);
        assert_eq!(p.cooling, Cooling::Air);
    }
}
