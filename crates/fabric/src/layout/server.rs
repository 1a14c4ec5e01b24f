//! One server as the catalog knows it: its model ([`server_model`]), the rack-scale system it is a
//! tray of ([`rack_system`]), what it draws ([`server_power`]), how tall it is ([`server_height_u`]),
//! and what it asks of a rack ([`ServerSlot`]): the one power and space model the hall's
//! [`RackFill`](super::RackFill), the rack checks and `study::tco` share.

use railyard_catalog::{number, Catalog, Cooling, RackSystem, ServerModel};
use railyard_spec::ClusterSpec;

/// The catalog server model the spec's servers are: `servers.model` when the catalog lists it with
/// the same GPUs (and, where its price includes them, the same compute NICs: a DGX with two NICs is
/// not a DGX).
pub fn server_model<'a>(spec: &ClusterSpec, catalog: &'a Catalog) -> Option<&'a ServerModel> {
    let s = &spec.servers;
    catalog.servers.get(&s.model).filter(|m| {
        m.gpu == s.gpu
            && m.gpus == s.gpus_per_server
            && (!m.includes_compute_nics || m.compute_nics == s.compute_nics)
    })
}

/// The rack-scale system the spec's servers are compute trays of (`servers.model` names a tray).
pub fn rack_system<'a>(spec: &ClusterSpec, catalog: &'a Catalog) -> Option<&'a RackSystem> {
    catalog.rack_of(&spec.servers.model)
}

/// One server's power at full load and the cooling it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerPower {
    pub watts: f64,
    /// Where the figure comes from, in words.
    pub source: String,
    pub cooling: Cooling,
}

/// What one of the spec's servers draws ([`server_model`]'s power, else its GPUs' plus an 8-GPU
/// host's non-GPU parts scaled to the GPU count); `None` where the catalog has neither.
pub fn server_power(spec: &ClusterSpec, catalog: &Catalog) -> Option<ServerPower> {
    let s = &spec.servers;
    if let Some(m) = server_model(spec, catalog) {
        let cooling = catalog.rack_of(&m.id).map_or(m.cooling(), |r| r.cooling);
        return Some(ServerPower {
            watts: m.power_w,
            source: format!("{} at {} kW (catalog)", m.id, number(m.power_w / 1000.0)),
            cooling,
        });
    }
    let gpu = catalog.gpus.get(&s.gpu)?;
    let host = catalog.servers.get("8-GPU host")?;
    let share = f64::from(s.gpus_per_server) / f64::from(host.gpus.max(1));
    let watts = gpu.power_w * f64::from(s.gpus_per_server) + host.power_w * share;
    Some(ServerPower {
        watts,
        source: format!(
            "{} x {} at {} W + an 8-GPU host's non-GPU parts at {} kW per 8 GPUs (catalog)",
            s.gpus_per_server,
            gpu.id,
            number(gpu.power_w),
            number(host.power_w / 1000.0)
        ),
        cooling: host.cooling(),
    })
}

/// What one server asks of a rack: its height and power where known, and for a rack-scale system's
/// compute tray the trays its rack holds (a rack of them is the system, never split).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerSlot {
    pub height_u: Option<u32>,
    pub power_w: Option<f64>,
    pub rack_trays: Option<u32>,
}

impl ServerSlot {
    pub fn of(spec: &ClusterSpec, catalog: &Catalog) -> ServerSlot {
        ServerSlot {
            height_u: server_height_u(spec, catalog).map(|(_, u)| u),
            power_w: server_power(spec, catalog).map(|p| p.watts),
            rack_trays: rack_system(spec, catalog).map(|r| r.trays),
        }
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
