//! A simulated step priced as NCCL would run it: algorithm and protocol per size, NCCL's latency
//! model, the protocol's payload and start-up.

use crate::collective::comm::shape_of_comm;
use crate::collective::comm::Comm;
use crate::collective::error::CollectiveError;
use crate::collective::CollectiveAlgorithm;
use crate::collective::JobShape;
use crate::collective::StepModel;
use crate::nccl;
use crate::nccl::fitted::Fitted;
use crate::nccl::tuning;
use crate::nccl::tuning::chain;
use crate::nccl::tuning::chain::Chain;
use crate::nccl::tuning::chunking;
use crate::nccl::tuning::NcclAlgo;
use crate::nccl::tuning::NcclSystem;
use crate::nccl::tuning::Tuning;
use crate::nccl::Collective;
use crate::nccl::HopKind;
use crate::nccl::Protocol;
use crate::net::fabric_net::FabricNet;
use crate::time::Time;
/// Which fabric step bounds an NCCL algorithm: its traffic between servers has the ring's pattern
/// (ring, PAT; CollNet and NVLS across nodes send every node's data once up and once down, the
/// ring's NIC load without its repeats), the double binary tree's (tree) or the double binary tree
/// of one head GPU per channel (NVLSTree, [`NvlsTreeNetwork`]). NVLS on one
/// node crosses only NVSwitch, whose in-switch reduction the fluid model does not represent:
/// NCCL's own model is its only bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    Ring,
    Tree,
    NvlsTree,
}

pub(super) fn family_of(a: NcclAlgo, sys: &NcclSystem) -> Option<Family> {
    match a {
        NcclAlgo::Ring | NcclAlgo::Pat | NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain => {
            Some(Family::Ring)
        }
        NcclAlgo::Nvls if sys.nodes > 1 => Some(Family::Ring),
        NcclAlgo::Nvls => None,
        NcclAlgo::Tree => Some(Family::Tree),
        NcclAlgo::NvlsTree => Some(Family::NvlsTree),
    }
}

/// Payload a protocol carries per byte on the wire: LL sends a 4-byte flag with every 4 bytes of
/// data, LL128 8 bytes of flags per 128-byte line (NCCL src/device/prims_ll*.h).
pub(super) fn payload_fraction(p: Protocol) -> f64 {
    match p {
        Protocol::Ll => 0.5,
        Protocol::Ll128 => 120.0 / 128.0,
        Protocol::Simple => 1.0,
    }
}

/// The time of `size` bytes with the algorithm and protocol NCCL picked: NCCL's latency (times
/// the measured start-up of LL128 across servers, [`LL128_NET_STARTUP_FACTOR`]), the slowest
/// simulated path once, and the bytes at the lesser of NCCL's bandwidth and what the fabric
/// carries for that algorithm's traffic (the simulated step, times the protocol's payload), as a
/// pipeline of chunk steps for NVLS and NVLSTree (`chunking::pipelined_transfer_us`); and the
/// first two alone (the part that does not grow with the size), and of that the measured start-up
/// NCCL's model leaves out, microseconds.
pub(super) fn realized_time_us(
    tuning: &Tuning,
    sys: &NcclSystem,
    a: NcclAlgo,
    p: Protocol,
    size: u64,
    bound: &dyn Fn(Family, u64) -> (f64, Time),
    fitted: &Fitted,
) -> (f64, f64, f64) {
    let model = tuning.bandwidth_at(a, p, size);
    let (fabric, path) = match family_of(a, sys) {
        Some(family) => {
            let (algbw, path) = bound(family, size);
            // In-network reduction sends each node's data once each way: the ring's NIC load
            // divided by its repeats.
            let algbw = match a {
                NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain | NcclAlgo::Nvls => {
                    algbw * tuning.op.busbw_factor(sys.ranks)
                }
                _ => algbw,
            };
            (algbw * payload_fraction(p), path)
        }
        None => (f64::INFINITY, Time::ZERO),
    };
    let bw = model.min(fabric);
    let nccl = tuning.latency_at(a, p, size);
    let startup = nccl * (startup_factor(p, sys, fitted) - 1.0);
    let latency = nccl + startup + path.as_us_f64();
    // NVLS and NVLSTree run a pipeline of chunks that shrink with the size (`chunking`); the
    // others keep NCCL's bytes / bandwidth.
    let transfer = match chunking::nvls_chunking(tuning, a, size) {
        Some(c) => chunking::pipelined_transfer_us(
            bw,
            &c,
            fitted.nvls_chunk_step_us,
            fitted.nvls_pipeline_fill_steps,
        ),
        None => match ring_chain(tuning, sys, a, p, fabric, bw) {
            Some(chain) => chain.transfer_us(size),
            None => size as f64 / (bw * 1e3),
        },
    };
    (latency + transfer, latency, startup)
}

/// The chain a ring broadcast or reduce runs through (`chain`), `None` for the other
/// collectives and algorithms: NCCL's channels, the protocol's chunk, hops inside a server at the
/// GPU's NVLink (or PCIe) bandwidth times the protocol's payload, hops between servers at
/// `fabric` (what the simulated ring step carries, times the payload, GB/s), and the stages after
/// the first at `bw` (the collective's bandwidth).
pub(super) fn ring_chain(
    tuning: &Tuning,
    sys: &NcclSystem,
    a: NcclAlgo,
    p: Protocol,
    fabric: f64,
    bw: f64,
) -> Option<Chain> {
    if a != NcclAlgo::Ring || !matches!(tuning.op, Collective::Broadcast | Collective::Reduce) {
        return None;
    }
    let link = if sys.nvlink {
        sys.nvlink_gbs
    } else {
        sys.pcie_gbs
    };
    Some(Chain {
        ranks: sys.ranks,
        nodes: sys.nodes,
        channels: tuning.runtime_channels,
        chunk: chain::chunk_bytes(p),
        intra_gbs: link * payload_fraction(p),
        inter_gbs: fabric,
        bw_gbs: bw,
    })
}

/// [`LL128_NET_STARTUP_FACTOR`] (as `fitted` has it) where it applies (LL128 across servers),
/// else 1.
pub(super) fn startup_factor(p: Protocol, sys: &NcclSystem, fitted: &Fitted) -> f64 {
    if p == Protocol::Ll128 && sys.nodes > 1 {
        fitted.ll128_net_startup_factor
    } else {
        1.0
    }
}

/// Why NCCL would not run algorithm `a` here, in a user's words.
pub(super) fn why_disabled(op: Collective, a: Option<NcclAlgo>, sys: &NcclSystem) -> &'static str {
    // What the collective allows comes first (tuning.rs `algo_enabled`): NVLSTree on all-gather
    // was refused for "NVSwitch servers with Hopper or later GPUs" on DGX H100.
    match (op, a) {
        (Collective::Broadcast | Collective::Reduce, Some(a)) if a != NcclAlgo::Ring => {
            return "NCCL runs broadcast and reduce as rings only";
        }
        (
            Collective::AllGather | Collective::ReduceScatter,
            Some(NcclAlgo::Tree | NcclAlgo::NvlsTree | NcclAlgo::CollNetChain),
        ) => {
            return "all-gather and reduce-scatter run as ring, PAT, NVLS or CollNetDirect only";
        }
        (Collective::AllReduce, Some(NcclAlgo::Pat)) => {
            return "PAT runs all-gather and reduce-scatter only";
        }
        _ => {}
    }
    match a {
        Some(NcclAlgo::Nvls) if !sys.nvswitch || sys.generation < nccl::GpuGeneration::Hopper => {
            "NVLS needs NVSwitch servers with Hopper or later GPUs"
        }
        Some(NcclAlgo::Nvls) => "NVLS across servers needs CollNet/SHARP (--sharp on)",
        Some(NcclAlgo::NvlsTree) if sys.nodes <= 1 => "NVLSTree needs more than one server",
        Some(NcclAlgo::NvlsTree) => "NVLSTree needs NVSwitch servers with Hopper or later GPUs",
        Some(NcclAlgo::CollNetDirect | NcclAlgo::CollNetChain) => {
            "CollNet needs SHARP-capable switches and --sharp on, more than one server, and for \
             CollNetDirect NVSwitch servers"
        }
        Some(NcclAlgo::Pat) => {
            "PAT runs all-gather and reduce-scatter with one GPU per server only"
        }
        Some(NcclAlgo::Tree) => "NCCL's trees run all-reduce only",
        Some(NcclAlgo::Ring) | None => "not for this collective",
    }
}

/// Whether in-network reduction can change how NCCL runs `op` over every GPU of `net` (a net built
/// with SHARP on): some algorithm and protocol NCCL's model enables with CollNet that it does not
/// enable without (CollNet, or NVLS across servers). False on one server, or where neither the
/// switches' reduction nor NVLS applies (all-gather with one GPU per server): `--sharp on` would
/// change nothing there.
pub fn sharp_changes(net: &FabricNet<'_>, op: Collective) -> Result<bool, CollectiveError> {
    let comm = Comm::whole(net);
    let shape = shape_of_comm(net, &comm)?;
    let on = tuning::tune(op, &nccl_system(net, &shape, &comm, true)?);
    let off = tuning::tune(op, &nccl_system(net, &shape, &comm, false)?);
    Ok(NcclAlgo::ALL.into_iter().any(|a| {
        Protocol::ALL
            .into_iter()
            .any(|p| on.enabled(a, p) && !off.enabled(a, p))
    }))
}

/// NCCL's view of the job on `net` (`tuning::NcclSystem`): the GPU generation, NVLink and PCIe
/// bandwidth of a GPU, and the NICs (network ports, one per plane) and their speed.
pub fn nccl_system(
    net: &FabricNet<'_>,
    shape: &JobShape,
    comm: &Comm,
    collnet: bool,
) -> Result<NcclSystem, CollectiveError> {
    let gpu_model = &net.fabric.meta.gpu_model;
    if let Some(mesh) = net.xgmi_mesh() {
        return Err(CollectiveError::Config {
            what: "servers",
            message: format!(
                "{}; RCCL's tuning model of gfx942 (rome_models.cc `tuning=5`) is not modelled beyond the ring of one server's mesh (`sim collective --servers 1`): not modelled yet",
                mesh.words(gpu_model)
            ),
        });
    }
    let generation = net.gpu_generation().ok_or_else(|| CollectiveError::Config {
            what: "gpu",
            message: format!(
                "NCCL's tuning tables cover Volta, Ampere, Hopper and Blackwell GPUs; `{gpu_model}` is none of them"
            ),
        })?;
    let s0 = &net.servers[comm.servers[0]];
    let g0 = s0.gpus[comm.locals[0] as usize];
    let nvlink = shape.intra == HopKind::Nvlink;
    let gpu_pcie = net.nccl_pcie_gbs(g0).unwrap_or(f64::INFINITY);
    let planes = net.fabric.meta.planes.max(1);
    let mut ports = 0u32;
    let mut nic_gbs: f64 = 0.0;
    let mut nic_pcie = f64::INFINITY;
    for rail in comm.rails(net) {
        for plane in 0..planes {
            if let Some((_, port)) = net.nic_port(comm.servers[0], rail, plane) {
                ports += 1;
                nic_gbs = nic_gbs.max(net.port_gbps(port) / 8.0);
                let nic = net.fabric.port(port).node;
                if let Some(p) = net.nccl_pcie_gbs(nic) {
                    nic_pcie = nic_pcie.min(p);
                }
            }
        }
    }
    let near = s0.gpus_near_nic.first().is_some_and(|g| !g.is_empty());
    Ok(NcclSystem {
        generation,
        nodes: shape.nodes,
        ranks: shape.ranks,
        nvlink,
        nvswitch: nvlink && shape.gpus_per_node > 2,
        nvlink_gbs: net.nvlink_gbs(g0).unwrap_or(0.0),
        pcie_gbs: gpu_pcie.min(nic_pcie).min(1e6),
        nics_per_node: ports.max(1),
        nic_gbs: if nic_gbs > 0.0 { nic_gbs } else { gpu_pcie },
        ll128_net_path: net.gpudirect() && (generation >= nccl::GpuGeneration::Hopper || near),
        collnet,
    })
}

/// Predicted time of one size and the part of it that does not grow with the size (NCCL's latency
/// and the slowest path), microseconds, with NCCL's bus-bandwidth ceilings: S x busbw factor / t may
/// not pass the SM80 cap (before protocol factors) nor the LL cap (after). NCCL's latency is
/// `nccl_latency_us` where the caller has it (all-to-all's p2p schedule, `nccl::p2p`), else the
/// algorithm's.
#[allow(clippy::too_many_arguments)]
pub(super) fn price(
    a: &dyn CollectiveAlgorithm,
    m: &StepModel,
    shape: &JobShape,
    op: Collective,
    proto: Protocol,
    size: u64,
    gpu: Option<nccl::GpuGeneration>,
    nccl_latency_us: Option<f64>,
) -> (f64, f64) {
    let f = nccl::bandwidth_factor(a.nccl_algorithm(), proto, shape.nodes);
    let mut transfer = a.edge_bytes(size, shape) * m.secs_per_byte / f;
    let bus_bytes = size as f64 * op.busbw_factor(shape.ranks);
    if gpu == Some(nccl::GpuGeneration::Ampere) {
        transfer = transfer.max(bus_bytes / (nccl::SM80_BUSBW_CAP_GBS * 1e9 * f));
    }
    if proto == Protocol::Ll {
        if let Some(cap) = nccl::ll_max_busbw_gbs(gpu, shape.nodes) {
            transfer = transfer.max(bus_bytes / (cap * 1e9));
        }
    }
    let nccl = nccl_latency_us.unwrap_or_else(|| a.latency_us(proto, shape));
    let latency = nccl + m.path_latency.as_us_f64();
    (latency + transfer * 1e6, latency)
}
