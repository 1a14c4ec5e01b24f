//! Multi-node NVLink: a rack-scale system's rack as the one NVLink "node" NCCL sees (issue 37,
//! item 2).
//!
//! # What NCCL does (NVIDIA/nccl master, 2026; read, not copied)
//!
//! - `src/mnnvl.cc`, `ncclMnnvlCheck`: ranks whose GPUs report the same NVLink fabric cluster UUID
//!   and clique id form one clique (an NVL72 rack's 72 GPUs), with `NCCL_MNNVL_ENABLE` on and
//!   FABRIC memory handles working (IMEX).
//! - `src/graph/topo.cc`, `ncclTopoGetSystem`: with MNNVL the XML topologies of every rank of the
//!   clique are fused into one system ("MNNVL clique support": the local ranks are the clique's),
//!   and `ncclTopoAddNvLinks` joins every GPU whose NVLinks end on an NVSwitch to the one NVS node
//!   of that system, at links x `ncclTopoNVLinkBw` (40.1 GB/s on SM100). The rack is one node of 72
//!   GPUs and their 72 NICs behind one NVLink switch.
//! - `src/init.cc`: nodes are told apart by the first rank of each rank's ring
//!   (`allGather3Data[r].topoRanks.ringRecv[0]`), so `nNodes` counts cliques, not trays: rings and
//!   trees run inside a rack over NVLink and cross the network only between racks; NVLS
//!   (`src/transport/nvls.cc`, 24 channels on SM100 in one NVLink domain, 32 across them) reduces
//!   in the NVLink switches across the whole rack; the NVLS search gives at most
//!   `NCCL_MAX_NVLS_ARITY` (32, src/include/device.h) heads (`src/graph/search.cc`).
//!
//! # The model
//!
//! The network over the NVLink domains (`FabricNet::over_nvlink_domains`) groups every rack's
//! trays (consecutive servers of the fabric: the planner stands a rack-scale system's trays in
//! whole racks, `fabric::layout::RackFill`) into one `ServerDevices` (`build::merge_domains`): the rack's GPUs and NICs
//! in tray order, NIC `r` of tray `t` as the domain's rail `t x NICs per tray + r`, each GPU near
//! its own tray's NICs. Every collective then sees a rack as the node NCCL sees: a transfer between
//! GPUs of one rack crosses the sender's NVLink out and the receiver's NVLink in (the NVLink switch
//! trays are non-blocking: "full-mesh connectivity between all 72 GPUs", DGX SuperPOD GB200 RA
//! RA-11338-001, Network Fabrics) at the catalog's NVLink bandwidth per GPU (GB200: 18 NVLink 5 links
//! of 40.1 GB/s per direction as NCCL counts them, 721.8 GB/s; NVIDIA quotes 1.8 TB/s both ways,
//! 18 links of 50 GB/s per direction), and traffic between racks leaves through the trays' NICs
//! (GB200: 4 ConnectX-7 per 4-GPU tray) over the scale-out fabric. A domain is a job's only if none
//! of its trays is drained (a clique's ranks all run or none does).
//!
//! A job may take only the first trays of each rack (`NetConfig::rack_trays`, `sim collective
//! --trays-per-rack`): `ncclMnnvlCheck` puts in a clique the communicator's ranks whose GPUs share
//! the fabric's cluster UUID and clique id, so the node NCCL sees is those trays' GPUs and NICs
//! ([`NvlDomain::clique_trays`]), as in OCI's and CoreWeave's runs on 16 trays of each rack.
//!
//! Between cliques (NVIDIA/nccl v2.26.2-1, f44ac759, the version of CoreWeave's runs; the same
//! through v2.28.7-1): NVLSTree reduces inside each clique with NVLS and runs a double binary tree
//! between cliques on the NVLS heads (src/graph/connect.cc `connectNvls`), each head one GPU and
//! its NIC; the NVLS search keeps at most `NCCL_MAX_NVLS_ARITY` heads, as many as every GPU's
//! NVLink carries (`nccl::tuning`'s NVLS graph: 32 on an NVL72 rack). NVLS between cliques needs
//! CollNet (SHARP; `comm->nvlsSupport` with `collNetSupport`, src/graph/tuning.cc). All-to-all is
//! point-to-point: a GPU's share for another clique leaves through the NIC PXN picks in its own
//! tray (`collective::relay_of`).

/// The NVLink domain a network over the NVLink domains was built with: the rack-scale system and
/// its trays per rack (each a server of the fabric).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NvlDomain {
    /// The rack-scale system's catalog id (`GB200 NVL72`).
    pub system: String,
    /// Compute trays (servers of the fabric) per rack.
    pub trays: u32,
    /// The trays of each rack the job's ranks run on, its first ones (`NetConfig::rack_trays`,
    /// at most `trays`): NCCL's clique, the NVLink domain the job sees.
    pub clique_trays: u32,
}

/// Compute trays of a rack-scale system's rack that a training job leaves out: it takes the
/// others in whole Slurm segments and keeps these as spares for a failed tray. NVIDIA's
/// DeepSeek-V3 recipe on GB200 NVL72 (NVIDIA/Megatron-LM,
/// docs/discussions/deepseek-v3-gb200-optimization/deepseek-v3-gb200-reproduce-guide.md, 2025-11:
/// TP 1, PP 8, EP 32, "every 32 GB200 GPUs (8 nodes) are in the same NVL domain", `sbatch
/// --segment 8`) places two segments of 8 trays in a rack of 18; NVIDIA's Slurm guide for
/// NVL72 ("Achieving Peak System and Workload Efficiency on NVIDIA GB200 NVL72 with Slurm Block
/// Scheduling", developer.nvidia.com/blog, 2025) compares `--segment 16` and `--segment 9`, a
/// segment of 16 leaving a rack's two other trays to absorb an unavailable node. So a job's
/// ranks fill 16 trays (64 GPUs) of each rack: groups of a power of two (a DeepSeek-V3's 256
/// experts, 128 heads) fit a rack whole, where 72 GPUs hold none larger than 8.
pub const SPARE_TRAYS_PER_RACK: u32 = 2;

impl NvlDomain {
    /// The trays of each rack a training job's ranks fill: all but [`SPARE_TRAYS_PER_RACK`]
    /// (at least one).
    pub fn job_trays(&self) -> u32 {
        self.trays.saturating_sub(SPARE_TRAYS_PER_RACK).max(1)
    }
}
