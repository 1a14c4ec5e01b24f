//! What every storage or management network shares: its kind and record ([`Network`]), its
//! switch from the catalog, its fabric's meta, the devices it attaches (the compute fabric's
//! servers mirrored, devices outside them), its `Resolved` and cabling context.

use crate::error::{err, BuildError};
use crate::graph::{Fabric, FabricMeta, NodeId, NodeKind, NodeSpec, PortId, Server};
use crate::hardware::{base, Resolved};
use crate::layout::{CableCtx, RackFill, ServerSlot};
use crate::shape::Shape;
use railyard_catalog::{Catalog, PortMode, SwitchModel, Tech};
use railyard_spec::ClusterSpec;
use std::collections::BTreeMap;

/// Which network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NetworkKind {
    Storage,
    InBand,
    OutOfBand,
}

impl NetworkKind {
    /// `storage`, `in-band`, `out-of-band`.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkKind::Storage => "storage",
            NetworkKind::InBand => "in-band",
            NetworkKind::OutOfBand => "out-of-band",
        }
    }

    /// What its cabling file's ids start with (`SC0000001`, `IC…`, `OC…`): a letter for the
    /// network before the compute fabric's `C`, so no two cables of one plan share a label.
    pub fn cable_prefix(self) -> &'static str {
        match self {
            NetworkKind::Storage => "SC",
            NetworkKind::InBand => "IC",
            NetworkKind::OutOfBand => "OC",
        }
    }
}

/// A planned storage or management network.
#[derive(Debug, Clone)]
pub struct Network {
    pub kind: NetworkKind,
    pub fabric: Fabric,
    /// Device ports attached, by kind of device.
    pub endpoints: BTreeMap<String, u64>,
    /// Links that leave the plan (the in-band uplinks to the data-centre network).
    pub uplinks_outside: u64,
    /// How the network was shaped and why.
    pub notes: Vec<String>,
}

/// A catalog switch and its native port mode, for a network whose spec names it.
pub(super) fn switch_of<'c>(
    catalog: &'c Catalog,
    id: &str,
    field: &str,
) -> Result<NetSwitch<'c>, BuildError> {
    let sw = catalog.switches.get(id).ok_or_else(|| {
        err(
            field,
            format!(
                "unknown switch `{id}`; valid: {}",
                catalog
                    .switches
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let mode = &sw.modes[0];
    Ok(NetSwitch {
        sw,
        mode,
        tech: mode.techs[0],
    })
}

/// A management network's switch model, its native port mode and that mode's technology.
#[derive(Debug, Clone, Copy)]
pub(super) struct NetSwitch<'c> {
    pub sw: &'c SwitchModel,
    pub mode: &'c PortMode,
    pub tech: Tech,
}

pub(super) fn meta(
    spec: &ClusterSpec,
    kind: NetworkKind,
    sw: &SwitchModel,
    mode: &PortMode,
    tech: Tech,
) -> FabricMeta {
    FabricMeta {
        name: format!("{}-{}", spec.name, kind.as_str()),
        tech,
        topology: kind.as_str().to_string(),
        switch_model: sw.id.clone(),
        port_mode: mode.name.clone(),
        nic_model: String::new(),
        gpu_model: String::new(),
        tiers: 1,
        planes: 1,
        su_size: None,
        scalable_units: None,
        gpudirect: false,
        gpus_per_server: 0,
        compute_nics_per_server: 0,
        shape: None,
        oversubscription_requested: None,
        guids: Default::default(),
    }
}

/// Adds an endpoint node of `ports` ports at `gbps`.
fn endpoint(
    f: &mut Fabric,
    name: String,
    server: Option<u32>,
    ports: u32,
    gbps: u32,
    lanes: u32,
) -> NodeId {
    f.add_node(
        NodeSpec {
            kind: NodeKind::Endpoint,
            name,
            model: "".into(),
            server,
            plane: 0,
        },
        ports,
        f64::from(gbps),
        lanes,
        1,
    )
}

/// Mirrors the compute fabric's servers (same names and units, so they stand in the same racks), each
/// with `ports` endpoints named `{local}{n}` (`stor1`) or `local` alone for one port (`bmc`).
pub(super) fn servers_with_ports(
    f: &mut Fabric,
    compute: &Fabric,
    local: &str,
    ports: u32,
    gbps: u32,
    lanes: u32,
) -> Vec<PortId> {
    let mut out = Vec::with_capacity(compute.servers.len() * ports as usize);
    for (i, s) in compute.servers.iter().enumerate() {
        let first = f.nodes.len() as u32;
        for p in 0..ports {
            let name = if ports == 1 {
                format!("{}/{local}", s.name)
            } else {
                format!("{}/{local}{}", s.name, p + 1)
            };
            let id = endpoint(f, name, Some(i as u32), 1, gbps, lanes);
            out.push(f.nth_port(id, 0));
        }
        f.servers.push(Server {
            name: s.name.clone(),
            su: s.su,
            first_node: first,
            num_nodes: ports,
        });
    }
    out
}

/// Ports of a device outside the servers that another network's cabling file also names, one
/// endpoint per port called `device/port` ([`Fabric::port_label`] gives `port`): a switch's
/// management port (`su1-leaf1/mgmt`) beside its data ports, an out-of-band switch's uplinks on
/// its QSFP28 ports (`oob-switch01/p49`) beside its RJ45 ports, a management node's BMC.
pub(super) fn named_ports(
    f: &mut Fabric,
    device: &str,
    ports: &[String],
    gbps: u32,
    lanes: u32,
) -> Vec<PortId> {
    ports
        .iter()
        .map(|p| {
            let id = endpoint(f, format!("{device}/{p}"), None, 1, gbps, lanes);
            f.nth_port(id, 0)
        })
        .collect()
}

/// A device outside the servers with `ports` ports.
pub(super) fn device_ports(
    f: &mut Fabric,
    name: String,
    ports: u32,
    gbps: u32,
    lanes: u32,
) -> Vec<PortId> {
    let id = endpoint(f, name, None, ports, gbps, lanes);
    (0..ports).map(|p| f.nth_port(id, p)).collect()
}

/// The network's `Resolved`: the compute spec's servers on this network's switch and technology.
pub(super) fn resolved<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
    sw: &'a SwitchModel,
    mode: &'a PortMode,
    tech: Tech,
    shape: Shape,
) -> Result<Resolved<'a>, BuildError> {
    let mut b = base(spec, catalog)?;
    b.tech = catalog.technology(tech).ok_or_else(|| {
        err(
            "storage.tech",
            format!("the catalog has no hardware for {tech}"),
        )
    })?;
    b.gbps = mode.gbps;
    Ok(Resolved::new(&b, sw, mode, shape))
}

pub(super) fn cable_ctx<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
    sw: &SwitchModel,
    mode: &PortMode,
    tech: Tech,
) -> CableCtx<'a> {
    CableCtx {
        layout: &spec.layout,
        fill: RackFill::new(&spec.layout, ServerSlot::of(spec, catalog), sw.rack_units),
        catalog,
        tech,
        gbps: mode.gbps,
        switch_cage: sw.ports_per_cage(mode),
        host_cage: 1,
    }
}
