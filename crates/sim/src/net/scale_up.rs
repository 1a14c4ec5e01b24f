//! Which scale-up domains the collective model covers. It models the GPUs of one NVLink domain as
//! joined by NVLink switches (NVSwitch on the baseboard, or a rack's NVLink switch trays), every
//! GPU at its NVLink bandwidth, and everything between domains over the network. Two kinds of
//! hardware in the catalog change that picture:
//!
//! - a rack-scale system's compute trays (GB200 NVL72): NCCL treats the whole rack as one NVLink
//!   domain (multi-node NVLink, NVLS across the rack), so traffic between trays of a rack goes over
//!   NVLink. A network built over the NVLink domains ([`FabricNet::over_nvlink_domains`],
//!   `crate::net::nvl_domain`) models it, and `sim collective`, `train` and `compare` run on it
//!   ([`job_domains`]: a training job's ranks on a rack's job trays); a network of one domain
//!   per server ([`FabricNet::new`], which places ranks per server: `jobs`, `sim flows`,
//!   `calibrate`) refuses these trays rather than send traffic between trays over the network;
//! - a full mesh of point-to-point links (AMD Infinity Fabric, `scale_up = "mesh"`): a pair of GPUs
//!   has one link's bandwidth. The server is its own domain; the network gives every pair its
//!   link (`crate::net::xgmi`), and `sim collective` runs RCCL's rings over it on one server.
//!
//! [`FabricNet::new`]: crate::net::fabric_net::FabricNet::new
//! [`FabricNet::over_nvlink_domains`]: crate::net::fabric_net::FabricNet::over_nvlink_domains

use railyard_catalog::{Catalog, RackSystem};
use railyard_fabric::Fabric;

/// The NVLink domain NCCL treats as one node: a server's own, or a rack-scale system's rack of
/// trays (NVIDIA/nccl src/mnnvl.cc `ncclMnnvlCheck`: the ranks whose GPUs share the fabric's
/// cluster UUID and clique id form the clique, one per NVL72 rack).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScaleUpDomain {
    /// Every server is its own NVLink (or PCIe) domain.
    Server,
    /// `trays` consecutive servers (compute trays) of the fabric form one NVLink domain: a rack
    /// of rack-scale system `system`.
    Rack { system: String, trays: u32 },
}

/// The NVLink domains of `fabric`: a rack-scale system's racks where its servers are that system's
/// compute trays (the tray's GPU, as many per server), else a server each (an xGMI mesh is its
/// server's own domain, `crate::net::xgmi`).
pub fn scale_up_domain(fabric: &Fabric, catalog: &Catalog) -> Result<ScaleUpDomain, String> {
    Ok(match rack_system_of(fabric, catalog) {
        Some(r) => ScaleUpDomain::Rack {
            system: r.id.clone(),
            trays: r.trays,
        },
        None => ScaleUpDomain::Server,
    })
}

/// The rack-scale system whose compute trays `fabric`'s servers are (the tray's GPU, as many per
/// server), if any.
fn rack_system_of<'c>(fabric: &Fabric, catalog: &'c Catalog) -> Option<&'c RackSystem> {
    let m = &fabric.meta;
    catalog.rack_systems.values().find(|r| {
        catalog
            .servers
            .get(&r.tray)
            .is_some_and(|t| t.gpu == m.gpu_model && t.gpus == m.gpus_per_server)
    })
}

/// How a training job's ranks fill the NVLink domains NCCL sees ([`scale_up_domain`]): `ranks`
/// to a domain, on its first `ranks` GPUs, and the fabric's servers (trays) in a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobDomains {
    /// Ranks of a job on one domain: a server's GPUs, or the GPUs of a rack's job trays
    /// (`crate::net::nvl_domain::SPARE_TRAYS_PER_RACK` left out).
    pub ranks: u32,
    /// The fabric's servers in one domain: 1, or a rack's trays.
    pub servers: u32,
}

impl JobDomains {
    /// The domains a job runs on when `drained` servers of the fabric's `servers` are left out:
    /// a domain with a drained tray runs nothing (one NCCL clique runs whole or not at all).
    pub fn active(&self, servers: usize, drained: &[usize]) -> usize {
        let per = self.servers.max(1) as usize;
        (0..servers / per)
            .filter(|d| !drained.iter().any(|&s| s / per == *d))
            .count()
    }
}

/// How a training job fills `fabric`'s NVLink domains: a server's GPUs each, or on a
/// rack-scale system the GPUs of each rack's job trays (`NvlDomain::job_trays`), so that its
/// tensor-, expert- and context-parallel groups stay inside a rack's NVLink.
pub fn job_domains(fabric: &Fabric, catalog: &Catalog) -> Result<JobDomains, String> {
    let gps = fabric.meta.gpus_per_server;
    Ok(match scale_up_domain(fabric, catalog)? {
        ScaleUpDomain::Server => JobDomains {
            ranks: gps,
            servers: 1,
        },
        ScaleUpDomain::Rack { system, trays } => {
            let domain = crate::net::nvl_domain::NvlDomain {
                system,
                trays,
                clique_trays: trays,
            };
            JobDomains {
                ranks: domain.job_trays() * gps,
                servers: trays,
            }
        }
    })
}

/// `Ok` when a network of one NVLink domain per server ([`FabricNet::new`]) covers `fabric`'s
/// scale-up domains, else why not: a rack-scale system's trays need the network over the NVLink
/// domains, which `sim collective` builds; the GPU meshes are not modelled at all.
///
/// [`FabricNet::new`]: crate::net::fabric_net::FabricNet::new
pub fn scale_up_support(fabric: &Fabric, catalog: &Catalog) -> Result<(), String> {
    match scale_up_domain(fabric, catalog)? {
        ScaleUpDomain::Server => Ok(()),
        ScaleUpDomain::Rack { system, trays } => {
            let m = &fabric.meta;
            Err(format!(
                "{} GPUs in {}-GPU servers are compute trays of a {system} rack, one NVLink domain of {} GPUs (multi-node NVLink); `sim collective`, `train` and `compare` model the rack as one NVLink domain, but this command places ranks on each server's own NVLink domain and would send traffic between trays of a rack over the network: not modelled yet. `plan` and `report` cover these designs; simulate 8-GPU servers (such as B200) for the network alone",
                m.gpu_model,
                m.gpus_per_server,
                trays * m.gpus_per_server
            ))
        }
    }
}

/// The presets whose scale-up domains the collective model covers on any number of servers: every
/// one but a rack-scale system's trays, which `scale_up::scale_up_support` refuses (tested in
/// collective_tests.rs), and a GPU mesh, which it covers on one server only (`crate::net::xgmi`).
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
