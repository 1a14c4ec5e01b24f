//! The spec's hardware looked up in the catalog: technology, GPU, NIC and link speed ([`Base`]),
//! the switches that may carry the request ([`switch_options`]), and a design's switch, port mode
//! and tree shape on top of them ([`Resolved`]). Step 1 of building: every error names the spec
//! field at fault and the valid choices.

use crate::error::{err, BuildError};
use crate::graph::FabricMeta;
use crate::shape::Shape;
use railyard_catalog::{Catalog, GpuModel, NicModel, PortMode, SwitchModel, Tech, Technology};
use railyard_spec::{ClusterSpec, Source};

/// The spec's hardware other than the switches: technology, GPU, NIC and link speed.
#[derive(Debug, Clone, Copy)]
pub struct Base<'a> {
    pub spec: &'a ClusterSpec,
    pub catalog: &'a Catalog,
    pub tech: &'a Technology,
    pub gpu: &'a GpuModel,
    pub nic: &'a NicModel,
    /// Link speed of every network link, Gb/s.
    pub gbps: u32,
}

impl Base<'_> {
    /// Compute NIC ports sharing one cage on a server ([`host_cage`]).
    pub fn host_cage(&self) -> u32 {
        host_cage(self.spec, self.nic)
    }
}

/// Compute NIC ports sharing one cage on a server with NIC `nic`. Twin-port cages belong to the
/// NIC hardware the spec names (DGX H100's ConnectX-7 ports leave through twin-port OSFP cages):
/// where a technology change reset that NIC and another was picked (ConnectX-6 at HDR), each port
/// is a cage of its own; where the same NIC comes back (ConnectX-7 at 400GbE), so do its cages.
pub fn host_cage(spec: &ClusterSpec, nic: &NicModel) -> u32 {
    match spec.provenance.reset("servers.nic") {
        Some(r) if r.value != nic.id => 1,
        _ => spec.servers.nic_ports_per_cage,
    }
}

/// The spec with its hardware looked up in the catalog and the fabric's shape chosen.
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
    /// How the tree is shaped (see [`Shape`]).
    pub shape: Shape,
}

impl<'a> Resolved<'a> {
    /// Ports per switch in the chosen mode: the radix k.
    pub fn radix(&self) -> u32 {
        self.mode.ports
    }

    /// Compute NIC ports sharing one cage on a server ([`host_cage`]).
    pub fn host_cage(&self) -> u32 {
        host_cage(self.spec, self.nic)
    }

    /// What the built fabric records of this design ([`FabricMeta`]), with `tiers` network tiers.
    pub(crate) fn meta(&self, tiers: u32) -> FabricMeta {
        let spec = self.spec;
        let s = &spec.servers;
        let f_spec = &spec.fabric;
        let su_size = self.shape.su_size;
        FabricMeta {
            name: spec.name.clone(),
            tech: f_spec.tech,
            topology: f_spec.topology.as_str().to_string(),
            switch_model: self.switch.id.clone(),
            port_mode: self.mode.name.clone(),
            nic_model: self.nic.id.clone(),
            gpu_model: self.gpu.id.clone(),
            tiers,
            planes: f_spec.planes,
            su_size,
            scalable_units: su_size.map(|su| s.count.div_ceil(su)),
            gpudirect: s.gpudirect,
            gpus_per_server: s.gpus_per_server,
            compute_nics_per_server: s.compute_nics,
            shape: Some(self.shape),
            oversubscription_requested: Some(f_spec.oversubscription),
            guids: Default::default(),
        }
    }

    pub(crate) fn new(
        base: &Base<'a>,
        switch: &'a SwitchModel,
        mode: &'a PortMode,
        shape: Shape,
    ) -> Resolved<'a> {
        Resolved {
            spec: base.spec,
            catalog: base.catalog,
            tech: base.tech,
            gpu: base.gpu,
            nic: base.nic,
            switch,
            mode,
            gbps: base.gbps,
            lanes: mode.lanes,
            shape,
        }
    }
}

/// Looks up the spec's technology, GPU and NIC. The automatic NIC is the one whose port speed matches
/// the technology (fewest ports, then lowest price).
pub fn base<'a>(spec: &'a ClusterSpec, catalog: &'a Catalog) -> Result<Base<'a>, BuildError> {
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

    // A server must fit in a rack; as many as fit stand in one (`layout::RackFill`).
    if let Some((server_model, u)) = server_height_u(spec, catalog) {
        let l = &spec.layout;
        if u > l.rack_units {
            return Err(err(
                "layout.rack_units",
                format!(
                    "a {u}U server ({server_model}) does not fit a {}U rack; valid: {u} to 60",
                    l.rack_units
                ),
            ));
        }
    }

    // Rack-scale trays, the power limit and the cooling, before any design is counted.
    crate::layout::check_racks(spec, catalog)?;

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
    let nic = nic_of(spec, catalog, gbps)?;
    Ok(Base {
        spec,
        catalog,
        tech,
        gpu,
        nic,
        gbps,
    })
}

/// The compute NIC: the one the spec names, else the automatic one (see [`base`]); checked to run
/// the technology at `gbps` on as many ports as the fabric has planes.
fn nic_of<'a>(
    spec: &ClusterSpec,
    catalog: &'a Catalog,
    gbps: u32,
) -> Result<&'a NicModel, BuildError> {
    let tech_id = spec.fabric.tech;
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
    Ok(nic)
}

/// A switch model and the port mode it would run, as the search may use it.
#[derive(Debug, Clone, Copy)]
pub struct SwitchOption<'a> {
    pub switch: &'a SwitchModel,
    pub mode: &'a PortMode,
    /// The spec names this switch (a preset's reference choice or the user's).
    pub named: bool,
}

/// The switches the search may use for a compute fabric: the one the spec names (with the errors of a
/// switch that does not exist or cannot carry the speed), and, unless the user named it, every other
/// catalog switch with a port mode at the link speed (by id). Any of them carries the request.
pub fn switch_options<'a>(base: &Base<'a>) -> Result<Vec<SwitchOption<'a>>, BuildError> {
    let spec = base.spec;
    let catalog = base.catalog;
    let tech_id = spec.fabric.tech;
    let gbps = base.gbps;
    let carriers = || {
        names(
            catalog
                .switches
                .values()
                .filter(|s| s.mode_for(tech_id, Some(gbps)).is_some())
                .map(|s| &s.id),
        )
    };
    let mut out = Vec::new();
    if let Some(id) = &spec.fabric.switch {
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
        out.push(SwitchOption {
            switch: sw,
            mode,
            named: true,
        });
        if spec.provenance.source("fabric.switch") == Source::Given {
            return Ok(out);
        }
    }
    for sw in catalog.switches.values() {
        if Some(&sw.id) == spec.fabric.switch.as_ref() {
            continue;
        }
        for mode in sw
            .modes
            .iter()
            .filter(|m| m.techs.contains(&tech_id) && m.gbps == gbps)
        {
            out.push(SwitchOption {
                switch: sw,
                mode,
                named: false,
            });
        }
    }
    if out.is_empty() {
        return Err(err(
            "fabric.port_gbps",
            format!("no switch in the catalog carries {tech_id} at {gbps} Gb/s"),
        ));
    }
    Ok(out)
}

fn names<'a>(ids: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = ids.map(String::as_str).collect();
    if v.is_empty() {
        "none in the catalog".to_string()
    } else {
        v.join(", ")
    }
}

/// The height of one of `spec`'s servers, rack units, and where it comes from: its catalog model's;
/// for a model the catalog does not list, 1U per GPU as the `8-GPU host` it is priced as (8U for 8
/// GPUs; a 4-GPU server 4U); `None` above 8 GPUs (a rack-scale system railyard has no height for).
pub fn server_height_u(spec: &ClusterSpec, catalog: &Catalog) -> Option<(String, u32)> {
    if let Some(m) = catalog.servers.get(&spec.servers.model) {
        if let Some(u) = m.rack_units {
            return Some((m.id.clone(), u));
        }
    }
    let host = catalog.servers.get("8-GPU host")?;
    let (u, gpus) = (host.rack_units?, host.gpus.max(1));
    let g = spec.servers.gpus_per_server;
    (g <= gpus).then(|| {
        (
            format!("{}, as an 8-GPU host of {u}U", spec.servers.model),
            (u * g).div_ceil(gpus).max(1),
        )
    })
}
