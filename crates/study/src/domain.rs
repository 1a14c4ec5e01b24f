//! A training job on NVLink domains larger than a server (issue 37): how its ranks fill a
//! GB200/GB300 NVL72 rack, the default tensor parallelism there, and which of its groups stay
//! inside a rack's NVLink. `train`, `compare` and the web app lay a job out through
//! `lay_out` (train.rs), which reads these; the step itself runs on sim's one network over the
//! NVLink domains (`sim::net::nvl_domain`, `RoutedNet::over_nvlink_domains`).

use railyard_catalog::Catalog;
use railyard_fabric::text::thousands;
use railyard_fabric::Fabric;
use railyard_sim::scale_up::{job_domains, scale_up_domain, JobDomains, ScaleUpDomain};
use railyard_train::parallel::Parallelism;
use serde::Serialize;

/// The default tensor parallelism on a rack-scale NVLink domain: at most 8, an HGX server's
/// NVLink domain, as on 8-GPU servers of the same GPU; the rack's larger domain goes to expert
/// and data parallelism instead (NVIDIA's DeepSeek-V3 recipe on GB200 NVL72 runs TP 1 and EP 32
/// inside a rack: NVIDIA/Megatron-LM
/// docs/discussions/deepseek-v3-gb200-optimization/deepseek-v3-gb200-reproduce-guide.md, 2025-11).
pub const DEFAULT_TP_ON_A_RACK: u32 = 8;

/// How a job fills `fabric`'s NVLink domains ([`job_domains`]); a server each where the
/// scale-up domain is one the simulator refuses (simulating the step names why).
pub fn domains_of(fabric: &Fabric, catalog: &Catalog) -> JobDomains {
    job_domains(fabric, catalog).unwrap_or(JobDomains {
        ranks: fabric.meta.gpus_per_server,
        servers: 1,
    })
}

/// The GPUs of `fabric` a training job runs on: those of the servers not `drained`, and on a
/// rack-scale system those of the job trays of every rack none of whose trays is drained.
pub fn job_gpus(fabric: &Fabric, catalog: &Catalog, drained: &[usize]) -> u64 {
    let d = domains_of(fabric, catalog);
    d.active(fabric.servers.len(), drained) as u64 * u64::from(d.ranks)
}

/// The tensor parallelism a job takes where none is asked for on a rack-scale domain of `ranks`
/// GPUs: the largest up to [`DEFAULT_TP_ON_A_RACK`] that divides the rack's job GPUs and splits
/// the heads and key/value heads (as Megatron divides them).
pub fn default_tp_on_a_rack(ranks: u32, heads: u64, kv_heads: u64) -> u32 {
    (1..=DEFAULT_TP_ON_A_RACK.min(ranks.max(1)))
        .rev()
        .find(|&d| {
            ranks.is_multiple_of(d)
                && heads.is_multiple_of(u64::from(d))
                && kv_heads.is_multiple_of(u64::from(d))
        })
        .unwrap_or(1)
}

/// A job on rack-scale NVLink domains, as `train` and `compare` report it (JSON key
/// `nvlink_domain`): the rack, the GPUs the job takes of it, and which of its parallel groups
/// stay inside a rack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RackJob {
    /// The rack-scale system's catalog id (`GB200 NVL72`).
    pub system: String,
    /// GPUs of one rack: one NVLink domain, one NCCL node.
    pub gpus_per_rack: u32,
    /// Compute trays of a rack, and those the job's ranks fill (the rest spare).
    pub trays: u32,
    pub job_trays: u32,
    /// The job's GPUs and the cluster's.
    pub job_gpus: u64,
    pub cluster_gpus: u64,
    /// The kinds of group (`tensor-parallel`, `expert-parallel`, `context-parallel`,
    /// `data-parallel`, `pipeline`) whose every group of more than one rank stays inside a rack:
    /// over NVLink only, nothing on the NICs.
    pub inside_a_rack: Vec<&'static str>,
    /// The kinds whose groups cross racks, over the trays' NICs.
    pub across_racks: Vec<&'static str>,
}

impl RackJob {
    /// The job `par` on `fabric`, when its NVLink domains are rack-scale systems' racks.
    pub fn of(fabric: &Fabric, catalog: &Catalog, par: &Parallelism) -> Option<RackJob> {
        let Ok(ScaleUpDomain::Rack { system, trays }) = scale_up_domain(fabric, catalog) else {
            return None;
        };
        let d = domains_of(fabric, catalog);
        let gps = fabric.meta.gpus_per_server;
        let g = par.groups();
        let kinds: [(&'static str, &Vec<Vec<u32>>); 5] = [
            ("tensor-parallel", &g.tp),
            ("expert-parallel", &g.ep),
            ("context-parallel", &g.cp),
            ("data-parallel", &g.dp),
            ("pipeline", &g.pp),
        ];
        let (mut inside, mut across) = (Vec::new(), Vec::new());
        for (kind, groups) in kinds {
            let groups: Vec<&Vec<u32>> = groups.iter().filter(|g| g.len() > 1).collect();
            if groups.is_empty() {
                continue;
            }
            let one_rack = |g: &&Vec<u32>| g.iter().all(|&r| r / d.ranks == g[0] / d.ranks);
            if groups.iter().all(one_rack) {
                inside.push(kind);
            } else {
                across.push(kind);
            }
        }
        Some(RackJob {
            system,
            gpus_per_rack: trays * gps,
            trays,
            job_trays: d.ranks / gps.max(1),
            job_gpus: par.world(),
            cluster_gpus: fabric.servers.len() as u64 * u64::from(gps),
            inside_a_rack: inside,
            across_racks: across,
        })
    }

    /// One sentence for `train`'s text and `compare`'s notes.
    pub fn note(&self) -> String {
        let list = |v: &[&str]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        format!(
            "NVLink domain: each {} rack of {} GPUs is one NCCL node (multi-node NVLink); the job's ranks fill {} of its {} compute trays, {} of the {} GPUs (the other trays spare, as NVIDIA places jobs on NVL72 in Slurm segments); inside a rack over NVLink: {}; across racks over the trays' NICs: {}",
            self.system,
            self.gpus_per_rack,
            self.job_trays,
            self.trays,
            thousands(self.job_gpus as f64),
            thousands(self.cluster_gpus as f64),
            list(&self.inside_a_rack),
            list(&self.across_racks)
        )
    }
}
