//! Which scale-up domains the collective model covers. It models each server's GPUs as one domain
//! joined by NVLink switches (NVSwitch on the baseboard), every GPU at its NVLink bandwidth, and
//! everything between servers over the network. Two kinds of hardware in the catalog break that
//! picture, and a simulation on them would print wrong numbers, so it is refused:
//!
//! - a rack-scale system's compute trays (GB200 NVL72): NCCL treats the whole rack as one NVLink
//!   domain (multi-node NVLink, NVLS across the rack), so traffic between trays of a rack goes over
//!   NVLink, which the model would send over the network;
//! - a full mesh of point-to-point links (AMD Infinity Fabric, `scale_up = "mesh"`): a pair of GPUs
//!   has one link's bandwidth, and RCCL's rings, trees and direct all-to-all follow the mesh, which
//!   the model would treat as a switch.

use railyard_catalog::{Catalog, ScaleUp};
use railyard_fabric::Fabric;

/// `Ok` when the collective model covers `fabric`'s scale-up domains, else why not, in words that
/// say what is not modelled and what is.
pub fn scale_up_support(fabric: &Fabric, catalog: &Catalog) -> Result<(), String> {
    let m = &fabric.meta;
    let Some(gpu) = catalog.gpus.get(&m.gpu_model) else {
        return Ok(());
    };
    if let Some(r) = catalog.rack_systems.values().find(|r| {
        catalog
            .servers
            .get(&r.tray)
            .is_some_and(|t| t.gpu == gpu.id && t.gpus == m.gpus_per_server)
    }) {
        return Err(format!(
            "{} GPUs in {}-GPU servers are compute trays of a {} rack, one NVLink domain of {} GPUs (multi-node NVLink); the collective model treats every server as its own NVLink domain and would send traffic between trays of a rack over the network: not modelled yet. `plan` and `report` cover these designs; simulate 8-GPU servers (such as B200) for the network alone",
            gpu.id,
            m.gpus_per_server,
            r.id,
            r.trays * m.gpus_per_server
        ));
    }
    if gpu.scale_up == ScaleUp::Mesh {
        return Err(format!(
            "{} GPUs are joined by a full mesh of {} Infinity Fabric links at {} GB/s each, one per peer, with no switch; the collective model treats a server's GPUs as switched (NVSwitch) and does not follow RCCL's algorithms over the mesh: not modelled yet. `plan` and `report` cover these designs",
            gpu.id,
            gpu.nvlink_links,
            railyard_catalog::number(gpu.nvlink_gbs_per_link)
        ));
    }
    Ok(())
}

/// The presets whose scale-up domains the collective model covers: every one but a rack-scale
/// system's trays and a GPU mesh, which `scale_up::scale_up_support` refuses (tested in collective_tests.rs).
#[cfg(test)]
pub(crate) fn simulated_presets() -> Vec<&'static str> {
    use railyard_spec::{presets, ClusterSpec};
    let catalog = Catalog::builtin();
    presets::names()
        .into_iter()
        .filter(|p| {
            let spec = ClusterSpec::from_raw(&presets::raw(p).unwrap(), p).unwrap();
            catalog.rack_of(&spec.servers.model).is_none()
                && catalog
                    .gpus
                    .get(&spec.servers.gpu)
                    .is_none_or(|g| g.scale_up.is_switched())
        })
        .collect()
}
