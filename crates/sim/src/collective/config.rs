//! What a collective run is asked: the operation, `--algo`, the relay across rails, the
//! send/recv pattern.

use crate::nccl::fitted::Fitted;
use crate::nccl::tuning::NcclAlgo;
use crate::nccl::Collective;
use crate::nccl::Protocols;
/// `--algo`: one of NCCL's algorithms by the name `NCCL_ALGO` takes, or `auto` (NCCL's own choice per
/// size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlgoChoice {
    Ring,
    Tree,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
    Auto,
}

impl AlgoChoice {
    /// The run key's names (`railyard_spec::run`), in this enum's order.
    pub const NAMES: [&'static str; 8] = railyard_spec::run::ALGO_NAMES;

    /// Any case, as `NCCL_ALGO` reads it; `collnet` is CollNetDirect.
    pub fn parse(s: &str) -> Option<AlgoChoice> {
        if s.eq_ignore_ascii_case("auto") {
            return Some(AlgoChoice::Auto);
        }
        Some(match NcclAlgo::parse(s)? {
            NcclAlgo::Ring => AlgoChoice::Ring,
            NcclAlgo::Tree => AlgoChoice::Tree,
            NcclAlgo::CollNetDirect => AlgoChoice::CollNetDirect,
            NcclAlgo::CollNetChain => AlgoChoice::CollNetChain,
            NcclAlgo::Nvls => AlgoChoice::Nvls,
            NcclAlgo::NvlsTree => AlgoChoice::NvlsTree,
            NcclAlgo::Pat => AlgoChoice::Pat,
        })
    }

    /// The one algorithm asked for; `None` for `auto`.
    pub fn nccl(self) -> Option<NcclAlgo> {
        match self {
            AlgoChoice::Ring => Some(NcclAlgo::Ring),
            AlgoChoice::Tree => Some(NcclAlgo::Tree),
            AlgoChoice::CollNetDirect => Some(NcclAlgo::CollNetDirect),
            AlgoChoice::CollNetChain => Some(NcclAlgo::CollNetChain),
            AlgoChoice::Nvls => Some(NcclAlgo::Nvls),
            AlgoChoice::NvlsTree => Some(NcclAlgo::NvlsTree),
            AlgoChoice::Pat => Some(NcclAlgo::Pat),
            AlgoChoice::Auto => None,
        }
    }

    pub(super) fn allows(self, a: NcclAlgo) -> bool {
        self.nccl().is_none_or(|x| x == a)
    }
}

/// How a transfer between two servers gets from the source GPU's rail to the destination GPU's
/// rail when they differ.
///
/// On a fabric with spines the network joins the rails, so the source GPU may send straight from
/// its own NIC. A rail-only fabric has no spine (Wang et al., "Rail-only: A Low-Cost
/// High-Performance Network for Training LLMs with Trillion Parameters", HOTI 2024): the transfer
/// must first cross NVLink to the local GPU on the destination's rail and leave from that GPU's
/// NIC, which is also what NCCL's PXN does by choice (NCCL_PXN_DISABLE=0). How the two hops share
/// time is the question the variants answer.
///
/// Each variant is one `--pxn` value and one printed name ([`Relay::as_str`]):
///
/// | variant | `--pxn` | printed |
/// |---|---|---|
/// | [`Relay::Direct`] | `off` | `direct` |
/// | [`Relay::Pxn`] | `on` | `pxn` |
/// | [`Relay::PxnStaged`] | `staged` | `pxn-staged` |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relay {
    /// Out of the source GPU's own NIC; the network must join the rails.
    Direct,
    /// PXN as NCCL runs it: relayed over NVLink to the GPU on the destination's rail, the hops
    /// overlapped chunk by chunk as NCCL's proxy pipelines them: one flow over NVLink, PCIe and the
    /// rail. The optimistic bound: with NVLink's headroom over a NIC the relay costs next to
    /// nothing.
    Pxn,
    /// PXN store-and-forward: every NVLink hop of the operation completes before the rail hops
    /// start, so the step costs the NVLink phase plus the rail phase. This is the Rail-only
    /// paper's model of all-to-all forwarding through the HB domain, for which it reports
    /// 8.2-11.2% more completion time than a full-bisection Clos.
    PxnStaged,
}

impl Relay {
    /// `--pxn` values; `auto` is [`Relay::auto`].
    pub const NAMES: [&'static str; 4] = railyard_spec::run::RELAY_NAMES;

    /// `None` for `auto`.
    pub fn parse(s: &str) -> Result<Option<Relay>, String> {
        match s {
            "auto" => Ok(None),
            "on" | "pipelined" => Ok(Some(Relay::Pxn)),
            "off" | "direct" => Ok(Some(Relay::Direct)),
            "staged" => Ok(Some(Relay::PxnStaged)),
            _ => Err(format!(
                "`{s}` is not a PXN mode; valid: {}",
                Relay::NAMES.join(", ")
            )),
        }
    }

    /// `--pxn auto`: what NCCL does by default (`NCCL_P2P_PXN_LEVEL=2`; NVIDIA/nccl
    /// src/graph/search.cc `ncclTopoGetNetDev`, module `pxn`): relayed over NVLink to the GPU on
    /// the destination's rail, the hops pipelined, wherever NCCL's condition holds on the servers
    /// (`nccl_relays`: GPUDirect RDMA, NVLink between the GPUs, the NIC's own GPU on its PCIe
    /// switch; never on AMD Instinct, where RCCL ships PXN disabled), whatever the network
    /// behind the NICs. Elsewhere straight from the sender's own NIC where the network joins the
    /// rails, and store-and-forward over the server where it does not (rail-only without a
    /// relay NCCL would take: the Rail-only paper's forwarding model). Read off the links and the
    /// catalog's GPU, not the design's name, so a discovered fabric (`import ibnet`) gets the
    /// same answer.
    pub fn auto(fabric: &railyard_fabric::Fabric, catalog: &railyard_catalog::Catalog) -> Relay {
        if super::pxn::nccl_relays(fabric, catalog) {
            Relay::Pxn
        } else if fabric.rails_joined() {
            Relay::Direct
        } else {
            Relay::PxnStaged
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Relay::Direct => "direct",
            Relay::Pxn => "pxn",
            Relay::PxnStaged => "pxn-staged",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectiveConfig {
    pub op: Collective,
    pub algo: AlgoChoice,
    /// How all-to-all and send/recv cross rails between servers.
    pub relay: Relay,
    /// CollNet (SHARP in-network reduction) is enabled: the switches support it and the user asked
    /// for it (NCCL_COLLNET_ENABLE=1 with the SHARP plugin). Set it from `FabricNet::sharp`: a
    /// network built without SHARP refuses it.
    pub collnet: bool,
    /// Who sends to whom in a send/recv (ignored by the other collectives).
    pub send_recv: SendRecvPattern,
    /// The protocols NCCL may run (`NCCL_PROTO`); all by default.
    pub protocols: Protocols,
    /// The fitted constants of the model ([`crate::nccl::fitted`]): the shipped values by default; the
    /// validation's leave-one-source-out refits replace them (`sim collective --fitted`).
    pub fitted: Fitted,
}

impl CollectiveConfig {
    /// `op` as NCCL runs it by default: its own choice of algorithm, straight from each GPU's NIC
    /// (no relay), no CollNet, nccl-tests' send/recv ring. Change a field with struct update syntax.
    pub fn new(op: Collective) -> CollectiveConfig {
        CollectiveConfig {
            op,
            algo: AlgoChoice::Auto,
            relay: Relay::Direct,
            collnet: false,
            send_recv: SendRecvPattern::Ring,
            protocols: Protocols::ALL,
            fitted: Fitted::default(),
        }
    }
}

/// The transfers of a send/recv on a communicator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SendRecvPattern {
    /// nccl-tests' `sendrecv_perf`: every rank sends to the next and the last to the first
    /// (src/sendrecv.cu: peer `(rank + 1) % nranks`), so on two ranks both send at once.
    #[default]
    Ring,
    /// A pipeline hop: each rank sends to the next and the last sends nothing, as a pipeline
    /// stage passes activations forward (or gradients back) while receiving from the other side
    /// (Megatron-LM's `send_forward_recv_backward`): every stage sends once, not to both
    /// neighbours at once.
    Pipeline,
}
