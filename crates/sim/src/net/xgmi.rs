//! AMD Infinity Fabric (xGMI): the full mesh of point-to-point links that joins an AMD Instinct
//! server's GPUs, and the rings RCCL runs over it (issue 37, item 3).
//!
//! # The hardware
//!
//! Eight MI300X (MI325X, MI355X) OAMs on a UBB are "fully connected" by "seven high-bandwidth,
//! low-latency AMD Infinity Fabric links" each (ROCm docs/conceptual/gpu-arch/mi300.md @e396b48):
//! one link per pair of GPUs and no switch, so a pair has one link's bandwidth and a GPU reaches
//! its seven peers at once only over seven different links. The network models every link in
//! each direction as its own resource at the catalog's per-link bandwidth (48 GB/s, RCCL's
//! `GFX94X_XGMI_WIDTH`, src/graph/topo.h), where an NVSwitch server has one NVLink per GPU to a
//! switch. The catalog's GPU says which it is (`scale_up = "mesh"`).
//!
//! # RCCL's rings on the mesh
//!
//! RCCL does not search rings on these nodes: it matches the node against its table of known
//! topologies (ROCm/rccl src/graph/rome_models.cc, `rome_model_79`: 8 GPUs, 7 xGMI links each, no
//! NIC in the graph, options `tuning=5`, the gfx942 tuning model) and takes that model's
//! `ringBase`: 14 Hamiltonian cycles of the 8 GPUs (7 starting at GPU 0, 7 ending there), listed
//! twice, so 28 channels. The 14 cross each of the 56 directed links of the mesh exactly twice:
//! every link carries 4 of the 28 channels, and a GPU sends on all seven of its links at once. [`MESH_RINGS`] holds the 14 rings; a test checks the
//! decomposition. Across nodes RCCL takes another model (`rome_model_81`: 8 NICs, 64 rings
//! entering and leaving through the NICs, not a decomposition of the mesh), which is not
//! modelled: the collective model refuses a mesh of several servers.

use railyard_catalog::{Catalog, ScaleUp};
use railyard_fabric::{Fabric, NodeId};

/// The rings of RCCL's one-node model of an 8-GPU xGMI mesh (ROCm/rccl src/graph/rome_models.cc,
/// `rome_model_79` `ringBase`, read at rccl develop of 2025): 14 Hamiltonian cycles, together
/// crossing every directed link twice. The table lists these 14 twice: 28 channels ([`MESH_CHANNELS`]).
pub const MESH_RINGS: [[u32; 8]; 14] = [
    [0, 1, 2, 3, 4, 5, 6, 7],
    [0, 1, 2, 3, 4, 5, 7, 6],
    [0, 2, 4, 1, 3, 6, 5, 7],
    [0, 2, 4, 6, 1, 7, 3, 5],
    [0, 3, 1, 5, 2, 7, 4, 6],
    [0, 3, 5, 1, 6, 2, 7, 4],
    [0, 4, 1, 7, 3, 6, 2, 5],
    [7, 6, 5, 4, 3, 2, 1, 0],
    [6, 7, 5, 4, 3, 2, 1, 0],
    [7, 5, 6, 3, 1, 4, 2, 0],
    [5, 3, 7, 1, 6, 4, 2, 0],
    [6, 4, 7, 2, 5, 1, 3, 0],
    [4, 7, 2, 6, 1, 5, 3, 0],
    [5, 2, 6, 3, 7, 1, 4, 0],
];

/// Channels RCCL runs on one 8-GPU xGMI node: `rome_model_79`'s `ringBase` lists [`MESH_RINGS`]
/// twice.
pub const MESH_CHANNELS: u32 = 2 * MESH_RINGS.len() as u32;

/// The GPUs of an xGMI mesh RCCL's table covers: 8 (`rome_model_79`'s `nGpus`).
pub const MESH_GPUS: u32 = 8;

/// The mesh's links as engine resources: per server, one per ordered pair of its GPUs.
#[derive(Debug, Clone)]
pub struct XgmiMesh {
    /// Per fabric node: for a GPU, its first outgoing link's resource (its row); `u32::MAX`
    /// otherwise.
    row: Vec<u32>,
    /// Per fabric node: a GPU's index in its server and the server's index.
    local: Vec<(u32, u32)>,
    /// GPUs per server.
    gpus: u32,
    /// The first mesh resource and the number of them.
    first: u32,
    count: u32,
    /// One link's bandwidth, GB/s per direction.
    pub link_gbs: f64,
}

impl XgmiMesh {
    /// The mesh of `fabric`'s servers when its GPU is joined by one (`scale_up = "mesh"`), with
    /// its resources appended to `capacity` (bytes per second); `servers` holds each server's
    /// GPU nodes in local order.
    pub(crate) fn build(
        fabric: &Fabric,
        catalog: &Catalog,
        servers: &[Vec<NodeId>],
        capacity: &mut Vec<f64>,
    ) -> Option<XgmiMesh> {
        let gpu = catalog.gpus.get(&fabric.meta.gpu_model)?;
        if gpu.scale_up != ScaleUp::Mesh {
            return None;
        }
        let gpus = servers.first().map_or(0, |s| s.len() as u32);
        let first = capacity.len() as u32;
        let mut row = vec![u32::MAX; fabric.nodes.len()];
        let mut local = vec![(u32::MAX, u32::MAX); fabric.nodes.len()];
        for (s, nodes) in servers.iter().enumerate() {
            for (i, n) in nodes.iter().enumerate() {
                row[n.0 as usize] = capacity.len() as u32;
                local[n.0 as usize] = (i as u32, s as u32);
                for _ in 1..gpus {
                    capacity.push(gpu.nvlink_gbs_per_link * 1e9);
                }
            }
        }
        Some(XgmiMesh {
            row,
            local,
            gpus,
            first,
            count: capacity.len() as u32 - first,
            link_gbs: gpu.nvlink_gbs_per_link,
        })
    }

    /// The resource of the link from GPU `from` to GPU `to` of the same server; `None` for
    /// anything else.
    pub fn resource(&self, from: NodeId, to: NodeId) -> Option<u32> {
        let base = *self.row.get(from.0 as usize)?;
        let (i, s) = *self.local.get(from.0 as usize)?;
        let (j, t) = *self.local.get(to.0 as usize)?;
        if base == u32::MAX || s != t || i == j || j == u32::MAX {
            return None;
        }
        Some(base + if j < i { j } else { j - 1 })
    }

    /// Why RCCL's rings over this mesh are not modelled for a communicator of `gpus` GPUs on
    /// each of `nodes` servers, naming the GPU (`gpu`); `None` where they are: one server, its 8
    /// GPUs ([`MESH_RINGS`]).
    pub fn unmodelled(&self, gpu: &str, nodes: u32, gpus: u32) -> Option<String> {
        let head = self.words(gpu);
        if nodes > 1 {
            return Some(format!(
                "{head}; RCCL across servers (its rings through the NICs, ROCm/rccl rome_models.cc rome_model_81, and its gfx942 tuning across nodes) is not modelled yet: valid: --servers 1 (RCCL's 28 rings and direct all-to-all on one server's mesh)"
            ));
        }
        if gpus != MESH_GPUS || self.gpus != MESH_GPUS {
            return Some(format!(
                "{head}; RCCL's rings are modelled for the whole mesh of {MESH_GPUS} GPUs (rome_models.cc rome_model_79), not {gpus} of them: not modelled yet"
            ));
        }
        None
    }

    /// What the mesh is, in words that start every refusal: `MI300X GPUs are joined by a full
    /// mesh of 7 Infinity Fabric links at 48 GB/s each, one per peer, with no switch`.
    pub fn words(&self, gpu: &str) -> String {
        format!(
            "{gpu} GPUs are joined by a full mesh of {} Infinity Fabric links at {} GB/s each, one per peer, with no switch",
            self.gpus.saturating_sub(1),
            railyard_catalog::number(self.link_gbs)
        )
    }

    /// Who mesh resource `r` is (`server 0 GPU 2 -> GPU 5 (xGMI)`), or `None` for another.
    pub fn describe(&self, r: u32) -> Option<String> {
        if r < self.first || r >= self.first + self.count || self.gpus < 2 {
            return None;
        }
        let k = r - self.first;
        let per_gpu = self.gpus - 1;
        let (s, rest) = (k / (self.gpus * per_gpu), k % (self.gpus * per_gpu));
        let (i, o) = (rest / per_gpu, rest % per_gpu);
        let j = if o < i { o } else { o + 1 };
        Some(format!("server {s} GPU {i} -> GPU {j} (xGMI)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 14 rings of `rome_model_79` are Hamiltonian cycles that together cross every directed
    /// link of the 8-GPU mesh twice: each link carries 4 of the 28 channels.
    #[test]
    fn rcclrings_cover_every_link_twice() {
        let mut used = [[0u32; 8]; 8];
        for ring in &MESH_RINGS {
            let mut seen = [false; 8];
            for (k, &g) in ring.iter().enumerate() {
                seen[g as usize] = true;
                let next = ring[(k + 1) % 8];
                used[g as usize][next as usize] += 1;
            }
            assert!(seen.iter().all(|&x| x), "{ring:?} is no Hamiltonian cycle");
        }
        for (i, row) in used.iter().enumerate() {
            for (j, &n) in row.iter().enumerate() {
                assert_eq!(n, 2 * u32::from(i != j), "link {i} -> {j}");
            }
        }
        assert_eq!(MESH_CHANNELS, 28);
    }
}
