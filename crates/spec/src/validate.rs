//! From the spec as written to the validated design: every value range-checked, defaults filled,
//! and each design value's source recorded. Errors name the field and the valid values.

use crate::design::{
    ClusterSpec, FabricSpec, LayoutSpec, LeafPlacement, ManagementSpec, PcieSwitchSpec, Provenance,
    ServerSpec, SiteCooling, Source, StorageSpec, Topology, TRACKED_FIELDS,
};
use crate::keys::{self, COMPUTE_NICS, GPUS_PER_SERVER, OVERSUBSCRIPTION, SERVERS, SU_SIZE};
use crate::raw::{
    AutoOr, AutoOrNone, RawLayout, RawManagement, RawPcieSwitch, RawServers, RawSpec, RawStorage,
    StorageChoice,
};
use crate::SpecError;
use railyard_catalog::Tech;
use std::str::FromStr;

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
            Err(self.err(
                field,
                format!(
                    "{} is out of range; valid: {} to {}",
                    railyard_catalog::number(v),
                    railyard_catalog::number(min),
                    railyard_catalog::number(max)
                ),
            ))
        }
    }

    /// A count that may be `"auto"` (then `None`), else 1 to `max`.
    fn auto_count(
        &self,
        field: &str,
        v: Option<AutoOr<u32>>,
        max: u32,
    ) -> Result<Option<u32>, SpecError> {
        match v.and_then(AutoOr::value) {
            None => Ok(None),
            Some(n) => self.count(field, Some(i64::from(n)), 0, 1, max).map(Some),
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
        let servers = check_servers(&c, &raw.servers)?;
        let fabric = check_fabric(&c, raw)?;
        let layout = check_layout(&c, &raw.layout)?;
        let storage = check_storage(&c, &raw.storage, fabric.tech, servers.storage_nics)?;
        let management = check_management(&c, &raw.management)?;
        let provenance = provenance(raw);
        Ok(ClusterSpec {
            origin: origin.to_string(),
            name: raw.name.clone().unwrap_or_else(|| "custom".to_string()),
            description: raw.description.clone().unwrap_or_default(),
            servers,
            fabric,
            layout,
            storage,
            management,
            provenance,
            overrides: Vec::new(),
        })
    }
}

/// The servers' counts, NICs and PCIe layout.
fn check_servers(c: &Checker, s: &RawServers) -> Result<ServerSpec, SpecError> {
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
        check_pcie_layout(c, &s.pcie_switch, gpus, nics, storage_nics)?
    };
    let gpu = s.gpu.clone().unwrap_or_else(|| "H100".to_string());
    Ok(ServerSpec {
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
    })
}

/// The compute fabric: technology, topology, oversubscription and unit size.
fn check_fabric(c: &Checker, raw: &RawSpec) -> Result<FabricSpec, SpecError> {
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
    let isl_links = match f.isl_links {
        None => None,
        Some(v) => Some(c.count("fabric.isl_links", Some(v), 0, 1, 256)?),
    };
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
    // Scalable units group servers by rail on rail-optimized fabrics only: anywhere else a unit
    // size the user gives would be kept in the spec and change nothing (a preset's is its
    // reference's, left as it is when the topology changes).
    if let Some(n) = su_size {
        let given = raw.preset.is_none() || raw.given.contains("fabric.su_size");
        if given && topology != Topology::RailOptimized {
            return Err(c.err(
                "fabric.su_size",
                format!(
                    "{n} has no effect on a {} fabric: scalable units group servers by rail on rail-optimized fabrics only; leave it out, or use topology rail-optimized",
                    topology.as_str()
                ),
            ));
        }
    }
    Ok(FabricSpec {
        tech,
        topology,
        switch: auto_id(&f.switch),
        oversubscription,
        su_size,
        planes,
        port_gbps,
        isl_links,
    })
}

/// The floor: racks, rows, pitches and cable allowances.
fn check_layout(c: &Checker, l: &RawLayout) -> Result<LayoutSpec, SpecError> {
    Ok(LayoutSpec {
        servers_per_rack: c.count("layout.servers_per_rack", l.servers_per_rack, 4, 1, 64)?,
        rack_pitch_m: c.length("layout.rack_pitch_m", l.rack_pitch_m, 0.6, 0.3, 5.0)?,
        row_pitch_m: c.length("layout.row_pitch_m", l.row_pitch_m, 2.4, 1.0, 50.0)?,
        racks_per_row: c.count("layout.racks_per_row", l.racks_per_row, 16, 1, 200)?,
        leaf_placement: c.parse(
            "layout.leaf_placement",
            l.leaf_placement.as_ref(),
            LeafPlacement::EndOfRow,
        )?,
        switches_per_rack: c.count("layout.switches_per_rack", l.switches_per_rack, 16, 1, 48)?,
        rack_units: c.count("layout.rack_units", l.rack_units, 42, 8, 60)?,
        tray_drop_m: c.length("layout.tray_drop_m", l.tray_drop_m, 1.5, 0.0, 10.0)?,
        in_rack_m: c.length("layout.in_rack_m", l.in_rack_m, 1.0, 0.1, 5.0)?,
        slack: c.length("layout.slack", l.slack, 0.1, 0.0, 1.0)?,
        max_rack_kw: match l.max_rack_kw {
            None => None,
            v => Some(c.length(
                "layout.max_rack_kw",
                v,
                0.0,
                keys::MAX_RACK_KW.min,
                keys::MAX_RACK_KW.max,
            )?),
        },
        cooling: match &l.cooling {
            None => None,
            v => Some(c.parse("layout.cooling", v.as_ref(), SiteCooling::Air)?),
        },
    })
}

/// The storage fabric; it runs the compute fabric's `tech` unless it names its own.
fn check_storage(
    c: &Checker,
    st: &RawStorage,
    tech: Tech,
    storage_nics: u32,
) -> Result<StorageSpec, SpecError> {
    let storage_tech = match st.tech.as_deref() {
        None | Some("auto") => tech,
        Some(t) => c.parse("storage.tech", Some(&t.to_string()), tech)?,
    };
    let ports_per_server = c
        .auto_count("storage.ports_per_server", st.ports_per_server, 16)?
        .unwrap_or(storage_nics);
    let on_compute = st.fabric == Some(StorageChoice::Compute);
    let wanted = !on_compute && st.fabric != Some(StorageChoice::None);
    Ok(StorageSpec {
        wanted,
        on_compute,
        enabled: wanted && ports_per_server > 0,
        tech: storage_tech,
        switch: auto_id(&st.switch),
        ports_per_server,
        // RA-11333-001: server connections "slightly oversubscribed with a ratio near 4:3".
        oversubscription: c.length(
            "storage.oversubscription",
            st.oversubscription,
            4.0 / 3.0,
            1.0,
            64.0,
        )?,
        array_ports: c.auto_count("storage.array_ports", st.array_ports, 1_000_000)?,
        spines: c.auto_count("storage.spines", st.spines, 65_536)?,
    })
}

/// The in-band and out-of-band management networks.
fn check_management(c: &Checker, m: &RawManagement) -> Result<ManagementSpec, SpecError> {
    Ok(ManagementSpec {
        in_band: m.in_band != Some(AutoOrNone::None),
        out_of_band: m.out_of_band != Some(AutoOrNone::None),
        in_band_switch: m
            .in_band_switch
            .clone()
            .unwrap_or_else(|| "SN4600C".to_string()),
        oob_switch: m.oob_switch.clone().unwrap_or_else(|| "SN2201".to_string()),
        in_band_ports_per_server: c.count(
            "management.in_band_ports_per_server",
            m.in_band_ports_per_server,
            2,
            0,
            16,
        )?,
        management_servers: c.count(
            "management.management_servers",
            m.management_servers,
            4,
            0,
            1024,
        )?,
        management_server_ports: c.count(
            "management.management_server_ports",
            m.management_server_ports,
            2,
            1,
            16,
        )?,
        fabric_managers: c.count("management.fabric_managers", m.fabric_managers, 4, 0, 64)?,
        user_storage_ports: c.count(
            "management.user_storage_ports",
            m.user_storage_ports,
            8,
            0,
            4096,
        )?,
        uplinks: c.count("management.uplinks", m.uplinks, 4, 0, 256)?,
        pdus: c.auto_count("management.pdus", m.pdus, 1_000_000)?,
        oob_ports_per_switch: c.count(
            "management.oob_ports_per_switch",
            m.oob_ports_per_switch,
            40,
            1,
            railyard_catalog::MAX_SWITCH_PORTS,
        )?,
    })
}

/// Where each design value came from: a preset's own values are the reference's choices.
fn provenance(raw: &RawSpec) -> Provenance {
    let set = |field: &str| -> bool {
        match field {
            "servers.nic" => auto_id(&raw.servers.nic).is_some(),
            "fabric.tech" => raw.fabric.tech.is_some(),
            "fabric.topology" => raw.fabric.topology.is_some(),
            "fabric.switch" => auto_id(&raw.fabric.switch).is_some(),
            "fabric.oversubscription" => raw.fabric.oversubscription.is_some(),
            "fabric.su_size" => raw.fabric.su_size.and_then(AutoOr::value).is_some(),
            "fabric.port_gbps" => raw.fabric.port_gbps.is_some(),
            "storage.switch" => auto_id(&raw.storage.switch).is_some(),
            "storage.spines" => raw.storage.spines.and_then(AutoOr::value).is_some(),
            "storage.array_ports" => raw.storage.array_ports.and_then(AutoOr::value).is_some(),
            _ => false,
        }
    };
    let sources = TRACKED_FIELDS
        .iter()
        .map(|&field| {
            let source = if !set(field) {
                Source::Auto
            } else if raw.preset.is_some() && !raw.given.contains(field) {
                Source::Preset
            } else {
                Source::Given
            };
            (field.to_string(), source)
        })
        .collect();
    Provenance {
        preset: raw.preset.clone(),
        sources,
        resets: raw.resets.clone(),
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
