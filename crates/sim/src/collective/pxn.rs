//! `--pxn auto`: the relay NCCL picks by default for point-to-point traffic between servers
//! (send/recv, and so all-to-all), read off the fabric's servers (issue 36, item 3).
//!
//! # What NCCL does (NVIDIA/nccl @5067397c, read, not copied)
//!
//! - `src/graph/search.cc`, `ncclTopoGetNetDev` with no graph (the p2p path): it starts from the
//!   sender's own NIC, then, with `NCCL_P2P_PXN_LEVEL` at its default 2 ("use PXN as much as
//!   possible to maximize aggregation", NCCL 2.12 and later) and `NCCL_PXN_DISABLE` at its
//!   default 0 (`src/graph/paths.cc`, `ncclPxnDisable`), takes the local GPU with the peer's
//!   device index, that GPU's NIC, and the GPU nearest that NIC (`ncclTopoGetLocalGpu`). When
//!   that GPU reaches the sender over NVLink (path type up to `PATH_NVL`: one NVLink or through
//!   NVSwitch), reaches the NIC through a PCIe switch (up to `PATH_P2C` with `NCCL_PXN_C2C` at its
//!   default 1) and may use GPUDirect RDMA on it (`ncclTopoCheckGdr`), it is the proxy: the data
//!   crosses NVLink to it and leaves from the NIC on the peer's rail. Where the peer's GPU index
//!   is the sender's own, the proxy is the sender itself (no relay).
//! - Rings and trees do not take this path: they use the NIC their graph names
//!   (`ncclTopoGetNetDev` with a graph) and relay only where the sender's own path to that NIC is
//!   of type `PATH_PXN` (`src/graph/paths.cc`, `ncclTopoComputePaths`, "Update paths for NICs":
//!   the GPU is not near the NIC and an NVLink GPU is), which railyard models on every transfer
//!   whatever `--pxn` says (`FabricNet::pxn_relay`).
//! - RCCL (ROCm/rccl @0cbce2a7, `src/graph/paths.cc`) ships `NCCL_PARAM(PxnDisable,
//!   "PXN_DISABLE", 1)`: PXN is off by default on AMD Instinct servers (the catalog's
//!   `scale_up = "mesh"`), so their transfers leave from the sender's own NIC.
//!
//! # The model
//!
//! [`nccl_relays`] states that condition on the fabric's first server (a plan's servers are
//! alike; `Fabric::rails_joined` reads the first server too): NCCL relays when some GPU and some
//! other rail's NIC meet it. `Relay::auto` is then `Relay::Pxn` (NCCL's pipelined proxy). Where
//! NCCL would not relay, transfers leave from the sender's own NIC (`Relay::Direct`) if the
//! network joins the rails; on a rail-only fabric NCCL then has no route at all, and railyard
//! keeps the Rail-only paper's store-and-forward relay (`Relay::PxnStaged`) so such a design is
//! still priced rather than refused.

use railyard_catalog::{Catalog, ScaleUp};
use railyard_fabric::{Fabric, LinkKind, NodeId, NodeKind};

/// Whether NCCL's default (`NCCL_P2P_PXN_LEVEL=2`, `NCCL_PXN_DISABLE=0`) relays some send from a
/// GPU of `fabric`'s first server over NVLink to the GPU of another rail's NIC: GPUDirect RDMA on,
/// an NVIDIA GPU (RCCL disables PXN by default), and a NIC not on the PCIe switch of some GPU `g1`
/// whose nearest GPU `g2` sits on the NIC's PCIe switch and shares NVLink with `g1`.
pub fn nccl_relays(fabric: &Fabric, catalog: &Catalog) -> bool {
    let mesh = catalog
        .gpus
        .get(&fabric.meta.gpu_model)
        .is_some_and(|g| g.scale_up == ScaleUp::Mesh);
    if mesh || !fabric.meta.gpudirect {
        return false;
    }
    let Some(server) = fabric.servers.first() else {
        return false;
    };
    let nodes = server.first_node..server.first_node + server.num_nodes;
    // Each device's PCIe parent (a PCIe switch) and whether it has an NVLink.
    let mut parent: Vec<Option<NodeId>> = vec![None; server.num_nodes as usize];
    let mut nvlink = vec![false; server.num_nodes as usize];
    let local = |n: NodeId| {
        nodes
            .contains(&n.0)
            .then(|| (n.0 - server.first_node) as usize)
    };
    for l in &fabric.links {
        let (a, b) = (fabric.port(l.a).node, fabric.port(l.b).node);
        let Some(i) = local(a) else { continue };
        match l.kind {
            LinkKind::Pcie | LinkKind::PcieUplink
                if fabric.node(b).kind == NodeKind::PcieSwitch =>
            {
                parent[i] = Some(b)
            }
            LinkKind::Nvlink => nvlink[i] = true,
            _ => {}
        }
    }
    let of = |kind: fn(&NodeKind) -> bool| -> Vec<usize> {
        nodes
            .clone()
            .filter(|&n| kind(&fabric.node(NodeId(n)).kind))
            .map(|n| (n - server.first_node) as usize)
            .collect()
    };
    let gpus = of(|k| *k == NodeKind::Gpu);
    let nics = of(|k| matches!(k, NodeKind::Nic { .. }));
    nics.iter().any(|&nic| {
        // The NIC's nearest GPU: on its PCIe switch (NCCL's `PATH_PXB` or better).
        let Some(g2) = gpus
            .iter()
            .copied()
            .find(|&g| parent[nic].is_some() && parent[g] == parent[nic])
        else {
            return false;
        };
        // A sender not on that switch, joined to `g2` by NVLink, relays through it.
        nvlink[g2]
            && gpus
                .iter()
                .any(|&g1| parent[g1] != parent[nic] && nvlink[g1])
    })
}
