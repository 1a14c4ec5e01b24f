//! The fabric model: a validated [`ClusterSpec`] and the [`Catalog`] in, a [`Fabric`] graph out.
//!
//! Building runs in four steps, each in its own module:
//! 1. [`resolve`] picks the hardware: GPU, NIC, switch model and the port mode (NDR, NDR200, 400GbE...),
//!    checking that they exist and can carry the technology;
//! 2. `server` adds every server's GPUs, PCIe switches, CPU root complex, NVLink domain and NICs;
//! 3. [`topo`] adds the switches and cables NIC ports to leaves and leaves up the tree;
//! 4. [`layout`] places racks, measures every cable run and picks cables and transceivers from the catalog.
//!
//! Architecture invariant: building does no I/O and is deterministic; the same spec and catalog give the
//! same fabric, node for node and port for port.

pub mod fabric_file;
pub mod graph;
pub mod import;
pub mod layout;
mod server;
pub mod topo;

pub use graph::*;

use railyard_catalog::{Catalog, GpuModel, NicModel, PortMode, SwitchModel, Tech, Technology};
use railyard_spec::ClusterSpec;
use std::fmt;

/// Why a spec cannot be built into a fabric: the spec field at fault and what is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for BuildError {}

pub(crate) fn err(field: &str, message: impl Into<String>) -> BuildError {
    BuildError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// The spec with its hardware looked up in the catalog.
#[derive(Debug, Clone)]
pub struct Resolved<'a> {
    pub spec: &'a ClusterSpec,
    pub catalog: &'a Catalog,
    pub tech: &'a Technology,
    pub gpu: &'a GpuModel,
    pub nic: &'a NicModel,
    pub switch: &'a SwitchModel,
    pub mode: &'a PortMode,
    /// Link speed of every network link, Gb/s.
    pub gbps: u32,
    pub lanes: u32,
}

impl Resolved<'_> {
    /// Ports per switch in the chosen mode: the radix k.
    pub fn radix(&self) -> u32 {
        self.mode.ports
    }
}

/// Looks up the spec's hardware. Automatic choices: the NIC whose port speed matches the technology
/// (fewest ports, then lowest price); the switch with the most ports at that speed (then lowest price).
pub fn resolve<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
) -> Result<Resolved<'a>, BuildError> {
    let tech_id = spec.fabric.tech;
    let tech = catalog.technology(tech_id).ok_or_else(|| {
        err(
            "fabric.tech",
            format!(
                "the catalog has no hardware for {tech_id}; valid: {}",
                Tech::valid_names()
            ),
        )
    })?;
    let gbps = spec.fabric.port_gbps.unwrap_or(tech.port_gbps);

    let gpu = catalog.gpus.get(&spec.servers.gpu).ok_or_else(|| {
        err(
            "servers.gpu",
            format!(
                "unknown GPU `{}`; valid: {}",
                spec.servers.gpu,
                catalog.gpus.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;

    let nics_for = || names(catalog.nics_for(tech_id).iter().map(|n| &n.id));
    let nic = match &spec.servers.nic {
        Some(id) => {
            let nic = catalog.nics.get(id).ok_or_else(|| {
                err(
                    "servers.nic",
                    format!("unknown NIC `{id}`; valid for {tech_id}: {}", nics_for()),
                )
            })?;
            if !nic.techs.contains(&tech_id) {
                return Err(err(
                    "servers.nic",
                    format!(
                        "{id} cannot run {tech_id}; valid for {tech_id}: {}",
                        nics_for()
                    ),
                ));
            }
            nic
        }
        None => catalog
            .nics_for(tech_id)
            .into_iter()
            .filter(|n| n.port_gbps >= gbps)
            .min_by(|a, b| {
                (a.port_gbps != gbps, a.ports, a.price.usd)
                    .partial_cmp(&(b.port_gbps != gbps, b.ports, b.price.usd))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .ok_or_else(|| {
                err(
                    "fabric.tech",
                    format!("no NIC in the catalog runs {tech_id} at {gbps} Gb/s"),
                )
            })?,
    };
    if nic.port_gbps < gbps {
        return Err(err(
            "servers.nic",
            format!(
                "{} ports run at most {} Gb/s, below {tech_id} at {gbps} Gb/s",
                nic.id, nic.port_gbps
            ),
        ));
    }
    if nic.ports < spec.fabric.planes {
        return Err(err(
            "fabric.planes",
            format!(
                "{} planes need {} ports per NIC but {} has {}; valid: 1 to {}",
                spec.fabric.planes, spec.fabric.planes, nic.id, nic.ports, nic.ports
            ),
        ));
    }

    let carriers = || {
        names(
            catalog
                .switches
                .values()
                .filter(|s| s.mode_for(tech_id, Some(gbps)).is_some())
                .map(|s| &s.id),
        )
    };
    let (switch, mode) = match &spec.fabric.switch {
        Some(id) => {
            let sw = catalog.switches.get(id).ok_or_else(|| {
                err(
                    "fabric.switch",
                    format!("unknown switch `{id}`; valid for {tech_id}: {}", carriers()),
                )
            })?;
            let mode = sw.mode_for(tech_id, Some(gbps)).ok_or_else(|| {
                err(
                    "fabric.switch",
                    format!(
                        "{id} cannot carry {tech_id} at {gbps} Gb/s (its modes: {}); valid for {tech_id}: {}",
                        sw.modes.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", "),
                        carriers()
                    ),
                )
            })?;
            (sw, mode)
        }
        None => catalog
            .switches
            .values()
            .filter_map(|s| s.mode_for(tech_id, Some(gbps)).map(|m| (s, m)))
            .min_by(|(a, am), (b, bm)| {
                (std::cmp::Reverse(am.ports), a.price.usd)
                    .partial_cmp(&(std::cmp::Reverse(bm.ports), b.price.usd))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .ok_or_else(|| {
                err(
                    "fabric.port_gbps",
                    format!("no switch in the catalog carries {tech_id} at {gbps} Gb/s"),
                )
            })?,
    };
    Ok(Resolved {
        spec,
        catalog,
        tech,
        gpu,
        nic,
        switch,
        mode,
        gbps,
        lanes: mode.lanes,
    })
}

fn names<'a>(ids: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = ids.map(String::as_str).collect();
    if v.is_empty() {
        "none in the catalog".to_string()
    } else {
        v.join(", ")
    }
}

/// Builds the whole fabric: servers, switches, links, cable lengths, cables and transceivers.
pub fn build(spec: &ClusterSpec, catalog: &Catalog) -> Result<Fabric, BuildError> {
    let r = resolve(spec, catalog)?;
    let mut f = topo::build_topology(&r)?;
    layout::place_and_cable(&mut f, &r)?;
    debug_assert_eq!(f.check(), Ok(()));
    Ok(f)
}

#[cfg(test)]
mod tests;
