//! Storage traffic of a training job (`checkpoint_every` in a job mix): how large its checkpoint
//! is, where it goes, how long it takes, what it does to the step, and what its data loading
//! reads.
//!
//! - Size: a distributed checkpoint (Megatron-Core's `dist_checkpointing`, PyTorch DCP) saves each
//!   parameter's state once, however many data-parallel replicas hold it: the weights in their
//!   precision (BF16, 2 bytes; 1 with FP8 parameters) and Adam's FP32 master weights, first and
//!   second moments (12 bytes), as `train`'s memory model counts the model state
//!   (`railyard_train::memory`), without the gradients, which are not saved. Llama 3 70B:
//!   70.6e9 x 14 bytes = 988 GB.
//! - Who writes: a fully parallel save (Megatron-Core's `--ckpt-fully-parallel-save`, the default)
//!   spreads the write over every data-parallel rank, so each of the job's servers writes an equal
//!   share.
//! - When: asynchronously (Megatron-Core's `--async-save`, PyTorch DCP's `async_save`): the step
//!   stops only while each GPU copies its share to host memory over its PCIe link (rated as NCCL
//!   rates it, `FabricNet::nccl_pcie_gbs`); the write to storage runs during the steps after.
//! - Where: as the `storage` design key says: the design's storage fabric, on the servers'
//!   storage NICs (`auto`, the DGX SuperPOD presets), where the write crosses no link of the
//!   compute fabric; or the compute fabric, through the compute NICs (`compute`). On either, the storage systems take it through their ports (the spec's
//!   `storage.array_ports`, by default 3 per 8 servers as RA-11333-001's 48 for 4 units of 32) at
//!   the network's link rate, shared by the job's servers; a server writes at the lesser of that
//!   share and its own ports (the storage fabric's after its leaves' oversubscription).
//! - The step during the write: on the compute fabric the write's rate is taken from each of the
//!   job's host links (spread over the server's NICs) and from the uplinks of its leaves (the
//!   storage systems hang off leaves of their own), and the step is timed again on what is left
//!   by the one collective model, as jobs sharing links are ([`super::share`]). Max-min fair
//!   sharing gives the write exactly its rate while that rate is at most half a link, so the rate
//!   is capped there.
//! - Data loading: each step reads its global batch's token ids (4 bytes each: a vocabulary past
//!   65,536 ids needs 32-bit ids, as Megatron's indexed datasets store them), a few MB: reported,
//!   and too small to move a step.
//!
//! - Other jobs: each job running with it (in its slowest phase) whose traffic crosses a link the
//!   write takes from is timed again with the write on the links (and no other job): its step
//!   during the write beside its step alone.
//!
//! Not modelled: a storage system that writes slower than its ports take data (its drives and
//! file system), and the storage systems' own leaves and the spine links down to them, which the
//! compute fabric's plan does not hold.

use super::share::{step_on, Resolved, Running};
use super::JobsError;
use crate::train::StepSetup;
use railyard_fabric::graph::{LinkId, LinkKind, NodeId, NodeKind};
use railyard_sim::fabric_net::RoutedNet;
use railyard_train::fabric_timer::TrainError;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where a design's storage traffic goes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "network", rename_all = "kebab-case")]
pub enum Storage {
    /// A storage fabric of its own: each server writes at most `server_gbs` GB/s into it.
    StorageFabric { server_gbs: f64, arrays_gbs: f64 },
    /// The compute fabric, through the compute NICs.
    ComputeFabric { arrays_gbs: f64 },
}

impl Storage {
    /// The storage systems' ports together, GB/s.
    pub fn arrays_gbs(&self) -> f64 {
        match self {
            Storage::StorageFabric { arrays_gbs, .. } | Storage::ComputeFabric { arrays_gbs } => {
                *arrays_gbs
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Storage::StorageFabric { .. } => "storage fabric",
            Storage::ComputeFabric { .. } => "compute fabric",
        }
    }
}

impl Storage {
    /// Where `fabric`'s storage traffic goes, as its spec (`storage` design key) says: a storage
    /// fabric of its own (`auto`, on servers with storage NICs), the compute fabric (`compute`),
    /// or nowhere (`none`, or no storage NICs to plan one on: `None`). The storage systems'
    /// ports: the spec's `storage.array_ports`, by default 3 per 8 servers (RA-11333-001: 48 for
    /// 4 units of 32), at the storage fabric's port rate, or on the compute fabric at its host
    /// links' rate.
    pub fn of(
        spec: &railyard_spec::ClusterSpec,
        fabric: &railyard_fabric::Fabric,
        catalog: &railyard_catalog::Catalog,
    ) -> Option<Storage> {
        let st = &spec.storage;
        let servers = fabric.servers.len() as u64;
        let arrays = st
            .array_ports
            .map_or((servers * 3).div_ceil(8), u64::from)
            .max(1) as f64;
        if st.on_compute {
            let host_gbs = fabric
                .links
                .iter()
                .filter(|l| matches!(l.kind, LinkKind::ServerLeaf))
                .map(|l| l.gbps / 8.0)
                .fold(0.0, f64::max);
            return Some(Storage::ComputeFabric {
                arrays_gbs: arrays * host_gbs,
            });
        }
        let t = catalog.technology(st.tech).filter(|_| st.enabled)?;
        let port_gbs = f64::from(t.port_gbps) / 8.0;
        Some(Storage::StorageFabric {
            server_gbs: f64::from(st.ports_per_server) * port_gbs / st.oversubscription,
            arrays_gbs: arrays * port_gbs,
        })
    }
}

/// Why a design has nowhere to write a checkpoint, and what to give.
pub const NO_STORAGE: &str = "this design has no storage network (storage=none, or servers without storage NICs to plan a storage fabric on); give --storage auto (a storage fabric on the servers' storage NICs) or --storage compute (storage traffic on the compute fabric)";

/// A job's checkpoints and data loading, and what they do to its step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    /// Steps between checkpoints.
    pub every_steps: u64,
    /// The whole checkpoint, bytes, and each server's share.
    pub bytes: f64,
    pub bytes_per_server: f64,
    /// `storage fabric` or `compute fabric`.
    pub network: &'static str,
    /// What one server writes at, GB/s.
    pub write_gbs_per_server: f64,
    /// The write, seconds, in the background.
    pub write_s: f64,
    /// The copy to host memory that stops the step, seconds.
    pub copy_s: f64,
    /// The step alone, and while the write runs.
    pub step_s: f64,
    pub step_during_write_s: f64,
    /// Steps the write spans (at the slower step).
    pub steps_during_write: f64,
    /// Seconds a checkpoint adds to `every_steps` steps, and per step.
    pub added_s: f64,
    pub added_per_step_s: f64,
    /// Data loading: bytes each step reads, and each server's read rate at the step alone, GB/s.
    pub data_bytes_per_step: f64,
    pub data_gbs_per_server: f64,
    /// The other jobs running with it whose links the write crosses (on the compute fabric):
    /// each one's step alone and during the write.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<OtherStep>,
}

/// Another job's step while this job's checkpoint is written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherStep {
    pub name: String,
    pub step_s: f64,
    pub step_during_write_s: f64,
}

/// Bytes a distributed checkpoint of `model` holds: weights and Adam's state, once (module docs).
pub fn checkpoint_bytes(model: &railyard_train::model::Model, fp8_params: bool) -> f64 {
    let weight = if fp8_params { 1.0 } else { 2.0 };
    model.params() as f64 * (weight + 12.0)
}

/// Token ids are stored as 32-bit integers (module docs).
const TOKEN_ID_BYTES: f64 = 4.0;

/// The checkpoint of `job`, every `every` steps, written to `storage` (module docs), and what
/// its write does to the steps of `others` (the jobs running with it, each timed alone but for
/// the write). `routed`'s capacities are restored before it returns.
pub fn checkpoint(
    routed: &mut RoutedNet<'_>,
    setup: &StepSetup,
    (job, others): (&Running, &[Running]),
    every: u64,
    storage: &Storage,
) -> Result<Option<Checkpoint>, JobsError> {
    let (work, servers, step_s) = (job.work, job.servers, job.alone.step_s);
    let Resolved::Train { model, par } = work else {
        return Ok(None);
    };
    let n = servers.len().max(1) as f64;
    let bytes = checkpoint_bytes(model, par.fp8_params);
    let per_server = bytes / n;
    let gpus = n * f64::from(setup.fabric.meta.gpus_per_server);
    let pcie = host_copy_gbs(routed, servers)?;
    let copy_s = bytes / gpus / (pcie * 1e9);
    let host = host_links(routed, servers);
    let arrays_share = storage.arrays_gbs() / n;
    let mut crossed = Vec::new();
    let (rate, during) = match storage {
        Storage::StorageFabric { server_gbs, .. } => (server_gbs.min(arrays_share), step_s),
        Storage::ComputeFabric { .. } => {
            // Each NIC's link gives the write at most half its capacity (module docs).
            let nics_gbs: f64 = host
                .iter()
                .map(|&(_, r)| routed.net.capacity(r) / 1e9)
                .sum();
            let half = nics_gbs / n / 2.0;
            let rate = arrays_share.min(half);
            let take = write_takes(routed, &host, rate);
            let during = step_with(routed, setup, &take, job)?;
            for o in others
                .iter()
                .filter(|o| o.alone.bytes.keys().any(|r| take.contains_key(r)))
            {
                crossed.push(OtherStep {
                    name: o.name.to_string(),
                    step_s: o.alone.step_s,
                    step_during_write_s: step_with(routed, setup, &take, o)?,
                });
            }
            (rate, during)
        }
    };
    let write_s = per_server / (rate * 1e9);
    let steps_during = write_s / during;
    let added_s = copy_s + steps_during * (during - step_s);
    let data = par.global_batch as f64 * par.seq as f64 * TOKEN_ID_BYTES;
    Ok(Some(Checkpoint {
        every_steps: every,
        bytes,
        bytes_per_server: per_server,
        network: storage.name(),
        write_gbs_per_server: rate,
        write_s,
        copy_s,
        step_s,
        step_during_write_s: during,
        steps_during_write: steps_during,
        added_s,
        added_per_step_s: added_s / every as f64,
        data_bytes_per_step: data,
        data_gbs_per_server: data / n / step_s / 1e9,
        others: crossed,
    }))
}

/// The slowest host copy of the job's GPUs, GB/s: each GPU's PCIe link as NCCL rates it.
fn host_copy_gbs(routed: &RoutedNet<'_>, servers: &[usize]) -> Result<f64, JobsError> {
    let f = routed.net.fabric;
    let mut slowest = f64::INFINITY;
    for &s in servers {
        let srv = &f.servers[s];
        for node in srv.first_node..srv.first_node + srv.num_nodes {
            let n = NodeId(node);
            if matches!(f.node(n).kind, NodeKind::Gpu) {
                if let Some(g) = routed.net.nccl_pcie_gbs(n) {
                    slowest = slowest.min(g);
                }
            }
        }
    }
    if slowest.is_finite() {
        Ok(slowest)
    } else {
        Err(JobsError::Topology(
            "no GPU of the job has a PCIe link to copy its checkpoint to host memory over".into(),
        ))
    }
}

/// Each server's host links, NIC to leaf (resource ids), with the server they leave.
fn host_links(routed: &RoutedNet<'_>, servers: &[usize]) -> Vec<(usize, u32)> {
    let f = routed.net.fabric;
    let mut out = Vec::new();
    for (i, l) in f.links.iter().enumerate() {
        if !matches!(l.kind, LinkKind::ServerLeaf) {
            continue;
        }
        for (port, forward) in [(l.a, true), (l.b, false)] {
            let node = f.node(f.port(port).node);
            if let Some(s) = node.server.map(|s| s as usize) {
                if servers.contains(&s) && !routed.net.is_failed(LinkId(i as u32)) {
                    out.push((s, 2 * i as u32 + u32::from(!forward)));
                }
            }
        }
    }
    out
}

/// What the write at `rate` (GB/s a server) takes of each resource, bytes/s: its share of each
/// of the job's host links (spread over the server's NICs) and of its leaves' uplinks.
fn write_takes(routed: &RoutedNet<'_>, host: &[(usize, u32)], rate: f64) -> BTreeMap<u32, f64> {
    let f = routed.net.fabric;
    let nics_of = |s: usize| host.iter().filter(|(t, _)| *t == s).count().max(1) as f64;
    let mut take: BTreeMap<u32, f64> = BTreeMap::new();
    let mut leaving: BTreeMap<u32, f64> = BTreeMap::new();
    for &(s, r) in host {
        let each = rate * 1e9 / nics_of(s);
        *take.entry(r).or_default() += each;
        let l = f.link(LinkId(r / 2));
        let leaf_port = if r % 2 == 0 { l.b } else { l.a };
        *leaving.entry(f.port(leaf_port).node.0).or_default() += each;
    }
    for (&leaf, &bytes) in &leaving {
        let ups: Vec<u32> = routed
            .net
            .up_links(NodeId(leaf))
            .iter()
            .filter(|&&l| !routed.net.is_failed(l))
            .map(|&l| {
                let forward = f.port(f.link(l).a).node.0 == leaf;
                2 * l.0 + u32::from(!forward)
            })
            .collect();
        for &r in &ups {
            *take.entry(r).or_default() += bytes / ups.len() as f64;
        }
    }
    take
}

/// `job`'s step with `take` taken from the resources (never below half of one: max-min gives
/// the write no more, module docs); capacities restored after.
fn step_with(
    routed: &mut RoutedNet<'_>,
    setup: &StepSetup,
    take: &BTreeMap<u32, f64>,
    job: &Running,
) -> Result<f64, JobsError> {
    let line: BTreeMap<u32, f64> = take.keys().map(|&r| (r, routed.net.capacity(r))).collect();
    let net_err = |e| JobsError::Train(TrainError::Net(e));
    for (&r, &t) in take {
        routed
            .net
            .set_capacity(r, (line[&r] - t).max(line[&r] / 2.0))
            .map_err(net_err)?;
    }
    let run = step_on(routed, setup, job.work, job.servers);
    for (&r, &c) in &line {
        let _ = routed.net.set_capacity(r, c);
    }
    Ok(run?.step_s)
}
