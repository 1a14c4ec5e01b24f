//! The storage and management networks, planned beside the compute fabric as the DGX SuperPOD H100
//! reference architecture plans them (NVIDIA RA-11333-001 V11, "Network Fabrics" and Appendix A):
//!
//! - **Storage fabric** (`[storage]`): its own InfiniBand (or the compute technology's) fabric on
//!   the servers' storage ports. Server leaves are "slightly oversubscribed with a ratio near 4:3";
//!   the storage systems sit on leaves of their own at "a 1:1 port to uplink ratio"; one spine tier
//!   (three when the leaves outnumber a spine's ports). For 4 units (127 DGX H100) the reference
//!   lists 16 QM9700, 494 NDR cables between servers, leaves and spines, and 48 storage cables:
//!   8 server leaves of 32 + 24 ports, 2 storage leaves of 24 + 24, 6 spines.
//! - **In-band management** (`[management]`): Ethernet (SN4600C, 100GbE) to every server's two
//!   bonded in-band ports, the management (head) nodes, the user (NFS) storage and the out-of-band
//!   switches' uplinks; leaves in pairs (each server's two ports on the two leaves of a pair, two
//!   inter-switch cables per pair), four uplinks per leaf to a pair of spines, four uplinks from the
//!   spines to the data-centre network. Reference, 4 units: 8 SN4600C; 254 server, 8 management-node,
//!   8 NFS, 16 out-of-band uplink, 6 inter-switch and 24 leaf-to-core cables, 4 data-centre uplinks.
//! - **Out-of-band management**: 1 GbE (SN2201, 48 RJ45 ports) to every server's BMC, every switch of
//!   every network, the management nodes, the fabric managers (UFM) and the rack PDUs; two 100 GbE
//!   uplinks per switch into the in-band network. Reference, 4 units: 8 SN2201, 127 server, 64
//!   InfiniBand switch, 8 in-band switch, 8 management/UFM and 108 PDU cables, 16 uplinks.
//!
//! Each network is a [`Fabric`] of its own on the same hall: servers stand where the compute
//! fabric's stand, devices outside the servers in the rack of the switch they are cabled to, and
//! cables, optics, cost, power and cabling rows come from the same layout and parts models as the
//! compute fabric's. Numbers the reference gives without a rule are spec fields with the reference's
//! value as default (`[management]` uplinks, ports, head nodes; out-of-band ports used per switch:
//! 40 of 48, as its 317 device cables on 8 switches).
//!
//! Rooms: `network` (what they share), `storage`, `in_band`, `out_of_band`; [`plan`] settles the
//! management networks' sizes, which depend on each other.

use crate::error::{err, BuildError};
use crate::graph::Fabric;
use crate::layout::{rack_counts, RackFill};
use railyard_catalog::Catalog;
use railyard_spec::ClusterSpec;

mod in_band;
mod network;
mod out_of_band;
mod storage;

pub use network::{Network, NetworkKind};

use in_band::{in_band_hosts, in_band_layout, in_band_network};
use network::{switch_of, NetSwitch};
use out_of_band::{oob_network, PDUS_PER_OTHER_RACK, PDUS_PER_SERVER_RACK};
use storage::storage;

/// Plans the storage and management networks the spec asks for beside the compute fabric `compute`.
pub fn plan(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
) -> Result<Vec<Network>, BuildError> {
    let mut out = Vec::new();
    if spec.storage.enabled {
        out.push(storage(spec, catalog, compute)?);
    }
    let m = &spec.management;
    if !(m.in_band || m.out_of_band) {
        return Ok(out);
    }
    let in_band = m
        .in_band
        .then(|| switch_of(catalog, &m.in_band_switch, "management.in_band_switch"))
        .transpose()?;
    let oob = m
        .out_of_band
        .then(|| switch_of(catalog, &m.oob_switch, "management.oob_switch"))
        .transpose()?;
    // More ports per switch than the switch has is refused, not cut down to what it has.
    if let Some(NetSwitch { sw, mode, .. }) = oob {
        if m.oob_ports_per_switch > mode.ports {
            return Err(err(
                "management.oob_ports_per_switch",
                format!(
                    "{} ports used per switch, but the out-of-band {} has {}; valid: 1 to {}",
                    m.oob_ports_per_switch, sw.id, mode.ports, mode.ports
                ),
            ));
        }
    }
    let per_oob = oob.map_or(1, |o| m.oob_ports_per_switch.min(o.mode.ports).max(1));
    let sizes = Management {
        in_band,
        oob,
        per_oob,
    }
    .settle(spec, catalog, compute, out.first())?;
    if let Some(switch) = in_band {
        // The out-of-band switches' RJ45 ports, after which their uplink ports are numbered.
        let oob_data_ports = oob.map_or(0, |o| o.mode.ports);
        out.push(in_band_network(
            spec,
            catalog,
            compute,
            switch,
            sizes.oob_switches,
            oob_data_ports,
        )?);
    }
    if let Some(switch) = oob {
        let switches: Vec<String> = compute
            .nodes
            .iter()
            .chain(out.iter().flat_map(|n| n.fabric.nodes.iter()))
            .filter(|n| n.is_switch())
            .map(|n| n.name.clone())
            .collect();
        out.push(oob_network(
            spec, catalog, compute, switch, per_oob, &switches, sizes.pdus,
        )?);
    }
    Ok(out)
}

/// The management networks asked for: their switches, and the out-of-band ports used per switch.
struct Management<'c> {
    in_band: Option<NetSwitch<'c>>,
    oob: Option<NetSwitch<'c>>,
    per_oob: u32,
}

/// The management networks' sizes, settled.
struct Sizes {
    oob_switches: u64,
    pdus: u64,
}

impl Management<'_> {
    /// In-band and out-of-band sizes depend on each other (out-of-band switches uplink into the
    /// in-band network, in-band switches have out-of-band ports): the counts are settled first,
    /// beside the compute fabric `compute` and the storage fabric, if planned.
    fn settle(
        &self,
        spec: &ClusterSpec,
        catalog: &Catalog,
        compute: &Fabric,
        storage: Option<&Network>,
    ) -> Result<Sizes, BuildError> {
        let m = &spec.management;
        let (in_band, oob, per_oob) = (self.in_band, self.oob, self.per_oob);
        let compute_switches = compute.nodes.iter().filter(|n| n.is_switch()).count() as u64;
        let storage_switches = storage.map_or(0, |n| {
            n.fabric.nodes.iter().filter(|x| x.is_switch()).count() as u64
        });
        let storage_u = storage.map_or(1, |n| {
            catalog
                .switches
                .get(&n.fabric.meta.switch_model)
                .map_or(1, |s| s.rack_units)
        });
        let (server_racks, switch_racks) =
            rack_counts(compute, &spec.layout, RackFill::of(compute, spec, catalog));
        let servers = u64::from(spec.servers.count);
        let mut n_oob = 0u64;
        let mut pdus = 0u64;
        for _ in 0..16 {
            let in_band_shape = in_band
                .map(|s| in_band_layout(s.mode.ports, in_band_hosts(spec, n_oob)))
                .transpose()?;
            let n_in_band = in_band_shape.map_or(0, |l| l.switches());
            let other_switches = storage_switches + n_in_band + n_oob;
            // Racks for them: `switches_per_rack` to a rack, and no more rack units than a rack has.
            let other_units = storage_switches * u64::from(storage_u)
                + n_in_band * in_band.map_or(0, |s| u64::from(s.sw.rack_units))
                + n_oob * oob.map_or(0, |s| u64::from(s.sw.rack_units));
            let other_racks = switch_racks as u64
                + other_switches
                    .div_ceil(u64::from(spec.layout.switches_per_rack.max(1)))
                    .max(other_units.div_ceil(u64::from(spec.layout.rack_units.max(1))))
                + u64::from(m.management_servers + m.fabric_managers > 0 || spec.storage.enabled);
            pdus = m.pdus.map_or(
                PDUS_PER_SERVER_RACK * u64::from(server_racks) + PDUS_PER_OTHER_RACK * other_racks,
                u64::from,
            );
            let devices = servers
                + compute_switches
                + storage_switches
                + n_in_band
                + u64::from(m.management_servers + m.fabric_managers)
                + pdus;
            let next = if oob.is_some() {
                devices.div_ceil(u64::from(per_oob))
            } else {
                0
            };
            if next == n_oob {
                break;
            }
            n_oob = next;
        }
        Ok(Sizes {
            oob_switches: n_oob,
            pdus,
        })
    }
}
