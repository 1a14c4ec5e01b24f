//! What NCCL and nccl-tests define: collectives, bus-bandwidth factors, message-size sweeps, and NCCL's
//! own latency model used to calibrate small-message times.
//!
//! Sources: NVIDIA nccl-tests `doc/PERFORMANCE.md` and `src/*.cu` (busbw factors, size semantics, sweep
//! flags); NVIDIA NCCL v2.30 `src/graph/tuning.cc` (base and per-step latencies, protocol bandwidth
//! caps), both summarised in shared/reference/nccl.md.

use std::fmt;
use std::str::FromStr;

pub mod fitted;
pub mod nccl_tests;
pub mod p2p;
pub mod tuning;

/// The collectives nccl-tests measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    SendRecv,
}

impl Collective {
    pub const ALL: [Collective; 7] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllToAll,
        Collective::SendRecv,
    ];

    /// The CLI name: `allreduce`, `alltoall`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Collective::AllReduce => "allreduce",
            Collective::AllGather => "allgather",
            Collective::ReduceScatter => "reducescatter",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::AllToAll => "alltoall",
            Collective::SendRecv => "sendrecv",
        }
    }

    /// busbw = algbw x factor, n ranks (nccl-tests doc/PERFORMANCE.md).
    pub fn busbw_factor(self, n: u32) -> f64 {
        let n = f64::from(n.max(1));
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => {
                (n - 1.0) / n
            }
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }

    /// Whether nccl-tests prints a reduction operator for this collective.
    pub fn has_redop(self) -> bool {
        matches!(
            self,
            Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce
        )
    }

    /// Whether nccl-tests prints a root for this collective.
    pub fn has_root(self) -> bool {
        matches!(self, Collective::Broadcast | Collective::Reduce)
    }

    /// The bytes nccl-tests moves, and prints as the size, for a requested size S: whole elements
    /// (`count = size / wordSize(type)` in common.cu's setupArgs) and, for all-gather, reduce-scatter
    /// and all-to-all, a whole number of them per rank (`(count/nranks)*nranks` in their
    /// getCollByteCount). A size below one element (per rank) moves nothing: nccl-tests prints 0.
    pub fn tested_bytes(self, size: u64, type_size: u64, n: u32) -> u64 {
        let count = size / type_size.max(1);
        match self {
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => {
                let n = u64::from(n.max(1));
                count / n * n * type_size
            }
            _ => count * type_size,
        }
    }

    /// Element count nccl-tests prints for a size S (bytes) with `type_size`-byte elements and n ranks:
    /// for all-gather, reduce-scatter and all-to-all S is the whole array (count x n x type size), so
    /// the count is per rank; otherwise the count is the buffer's.
    pub fn count(self, size: u64, type_size: u64, n: u32) -> u64 {
        match self {
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => {
                size / type_size / u64::from(n.max(1))
            }
            _ => size / type_size,
        }
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Collective {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Collective::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown collective `{s}`; valid: {}",
                    Collective::ALL.map(Collective::as_str).join(", ")
                )
            })
    }
}

/// Parses a size as nccl-tests does: a number with an optional K, M, G or T suffix, powers of 1024
/// (`8`, `1K`, `128M`, `8G`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("`{s}` is not a size; valid: a whole number with an optional K, M, G or T suffix, e.g. 8, 1K, 128M, 8G"))
}

/// Sizes of a `-b BEGIN -e END -f FACTOR` sweep, as nccl-tests steps them (multiply until past END).
pub fn sweep(begin: u64, end: u64, factor: u64) -> Result<Vec<u64>, String> {
    if begin == 0 {
        return Err("-b must be at least 1 byte".to_string());
    }
    if end < begin {
        return Err(format!("-e {end} is smaller than -b {begin}"));
    }
    if factor < 2 && begin != end {
        return Err(format!("-f {factor}: the factor must be at least 2"));
    }
    let mut sizes = vec![begin];
    let mut s = begin;
    while let Some(next) = s.checked_mul(factor) {
        if next > end || factor < 2 {
            break;
        }
        sizes.push(next);
        s = next;
    }
    Ok(sizes)
}

/// NCCL's algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Algorithm {
    Ring,
    Tree,
}

impl Algorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
        }
    }
}

/// NCCL's protocols, in order of message size they suit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// Low latency: 8-byte stores with flags, half the bandwidth.
    Ll,
    /// 128-byte lines with flags.
    Ll128,
    Simple,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        }
    }

    fn index(self) -> usize {
        match self {
            Protocol::Ll => 0,
            Protocol::Ll128 => 1,
            Protocol::Simple => 2,
        }
    }

    /// Fraction of the link bandwidth a ring reaches with this protocol; see [`bandwidth_factor`].
    pub fn bandwidth_fraction(self) -> f64 {
        bandwidth_factor(Algorithm::Ring, self, 1)
    }
}

/// The protocols NCCL may run, as `NCCL_PROTO` sets them (src/graph/tuning.cc reads it with
/// `parseList`: names separated by commas, any case, all of them excluded instead with a leading
/// `^`). NCCL picks among the algorithm and protocol pairs left; point-to-point sends (all-to-all,
/// send/recv) use LL for small messages only where LL is left, else Simple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Protocols([bool; 3]);

impl Protocols {
    /// NCCL's default: every protocol, each where NCCL enables it.
    pub const ALL: Protocols = Protocols([true; 3]);

    pub fn allows(self, p: Protocol) -> bool {
        self.0[p.index()]
    }

    /// These but `p`; `None` when nothing is left.
    pub fn without(self, p: Protocol) -> Option<Protocols> {
        let mut set = self.0;
        set[p.index()] = false;
        set.iter().any(|&a| a).then_some(Protocols(set))
    }

    /// Whether every protocol is left (NCCL's default).
    pub fn is_all(self) -> bool {
        self == Protocols::ALL
    }

    /// `LL`, `LL128`, `Simple` or a comma-separated list of them, any case; `^LIST` for all but
    /// those. The error names the valid choices.
    pub fn parse(s: &str) -> Result<Protocols, String> {
        let (exclude, list) = match s.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let mut named = [false; 3];
        for name in list.split(',') {
            let name = name.trim();
            let p = Protocol::ALL
                .into_iter()
                .find(|p| p.as_str().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    format!(
                        "protocol `{name}`; valid: LL, LL128, Simple, a comma-separated list of them, or ^LIST for all but those (as NCCL_PROTO)"
                    )
                })?;
            named[p.index()] = true;
        }
        let set = Protocols(named.map(|n| n != exclude));
        if set.0.iter().all(|&a| !a) {
            return Err(format!("`{s}` leaves no protocol; valid: LL, LL128, Simple, a comma-separated list of them, or ^LIST for all but those (as NCCL_PROTO)"));
        }
        Ok(set)
    }

    /// The protocols left, as NCCL names them, in NCCL's order.
    pub fn names(self) -> Vec<&'static str> {
        Protocol::ALL
            .into_iter()
            .filter(|&p| self.allows(p))
            .map(Protocol::as_str)
            .collect()
    }

    /// [`Protocols::names`] as NCCL_PROTO lists them: `LL,Simple`.
    pub fn label(self) -> String {
        self.names().join(",")
    }
}

impl Default for Protocols {
    fn default() -> Protocols {
        Protocols::ALL
    }
}

/// Where one hop of a step runs, for NCCL's per-step hardware latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopKind {
    Nvlink,
    Pcie,
    Net,
}

/// Base latency of an algorithm and protocol, microseconds (tuning.cc `baseLat`).
pub fn base_latency_us(algo: Algorithm, proto: Protocol) -> f64 {
    const RING: [f64; 3] = [6.6, 14.0, 8.4];
    const TREE: [f64; 3] = [6.8, 14.0, 8.4];
    match algo {
        Algorithm::Ring => RING[proto.index()],
        Algorithm::Tree => TREE[proto.index()],
    }
}

/// Hardware latency of one step over a kind of hop, microseconds (tuning.cc `hwLat`, NCCL v2.19 and
/// later). Trees over PCI have their own row ({1.0, 1.9, 4.0}), not the ring's ({1.0, 2.5, 5.7}).
pub fn hop_latency_us(algo: Algorithm, proto: Protocol, hop: HopKind) -> f64 {
    const NVLINK_RING: [f64; 3] = [0.6, 1.9, 3.4];
    const NVLINK_TREE: [f64; 3] = [0.6, 1.25, 4.0];
    const PCI_RING: [f64; 3] = [1.0, 2.5, 5.7];
    const PCI_TREE: [f64; 3] = [1.0, 1.9, 4.0];
    const NET_RING: [f64; 3] = [2.7, 4.0, 14.0];
    const NET_TREE: [f64; 3] = [5.0, 8.5, 14.0];
    let i = proto.index();
    match (hop, algo) {
        (HopKind::Nvlink, Algorithm::Ring) => NVLINK_RING[i],
        (HopKind::Nvlink, Algorithm::Tree) => NVLINK_TREE[i],
        (HopKind::Pcie, Algorithm::Ring) => PCI_RING[i],
        (HopKind::Pcie, Algorithm::Tree) => PCI_TREE[i],
        (HopKind::Net, Algorithm::Ring) => NET_RING[i],
        (HopKind::Net, Algorithm::Tree) => NET_TREE[i],
    }
}

/// The network latency of one step: with one rank per node NCCL uses the tree's network row for
/// every algorithm ("with ppn=1 latencies are fully exposed", tuning.cc).
fn inter_latency_us(algo: Algorithm, proto: Protocol, ppn: u32) -> f64 {
    let a = if ppn <= 1 { Algorithm::Tree } else { algo };
    hop_latency_us(a, proto, HopKind::Net)
}

/// NCCL's ring latency, microseconds (tuning.cc, `ncclTopoTuneModel`).
///
/// All-reduce, all-gather, reduce-scatter: base + (nsteps - nInterSteps) x intra + nInterSteps x inter,
/// with nsteps = 2(n-1) for all-reduce and n-1 for all-gather / reduce-scatter, and nInterSteps =
/// 2(nodes-1), nodes-1, or 0 on one node; on several nodes intra is at least [`net_overhead_us`]. Broadcast and reduce run as a pipelined chain: base plus one
/// step's latency (network on several nodes, `sameChannels` case). Other collectives (all-to-all,
/// send/recv) are charged like broadcast: base plus one step.
pub fn ring_latency_us(
    coll: Collective,
    proto: Protocol,
    ranks: u32,
    nodes: u32,
    intra: HopKind,
) -> f64 {
    let nodes = nodes.max(1);
    let ppn = ranks / nodes;
    let base = base_latency_us(Algorithm::Ring, proto);
    let mut intra_lat = hop_latency_us(Algorithm::Ring, proto, intra);
    if nodes > 1 {
        intra_lat = intra_lat.max(net_overhead_us(proto));
    }
    let inter_lat = inter_latency_us(Algorithm::Ring, proto, ppn);
    let (steps, inter_steps) = match coll {
        Collective::AllReduce => (2 * ranks.saturating_sub(1), 2 * (nodes - 1)),
        Collective::AllGather | Collective::ReduceScatter => (ranks.saturating_sub(1), nodes - 1),
        _ => {
            let step = if nodes > 1 { inter_lat } else { intra_lat };
            return base + step;
        }
    };
    let inter_steps = inter_steps.min(steps);
    base + f64::from(steps - inter_steps) * intra_lat + f64::from(inter_steps) * inter_lat
}

/// NCCL's tree latency, microseconds: base + 2 x ((ppn - 1) x intra + log2(nodes) x inter), log2
/// rounded down as `log2i` does (tuning.cc).
pub fn tree_latency_us(proto: Protocol, ppn: u32, nodes: u32, intra: HopKind) -> f64 {
    let intra_lat = hop_latency_us(Algorithm::Tree, proto, intra);
    let inter_lat = inter_latency_us(Algorithm::Tree, proto, ppn);
    let log_nodes = f64::from(31 - nodes.max(1).leading_zeros());
    base_latency_us(Algorithm::Tree, proto)
        + 2.0 * (f64::from(ppn.saturating_sub(1)) * intra_lat + log_nodes * inter_lat)
}

/// The fraction of the simulated bus bandwidth an algorithm and protocol reach in NCCL's model
/// (tuning.cc "various model refinements"): ring LL 0.5, ring LL128 0.92; tree all-reduce 0.92, times
/// 1/3.8 for LL and 7/9 (one node) or 120/128 (several) for LL128. Per-channel caps are left out: they
/// depend on the GPU generation and NCCL's channel count, which the simulation does not pick.
pub fn bandwidth_factor(algo: Algorithm, proto: Protocol, nodes: u32) -> f64 {
    match (algo, proto) {
        (Algorithm::Ring, Protocol::Ll) => 0.5,
        (Algorithm::Ring, Protocol::Ll128) => 0.92,
        (Algorithm::Ring, Protocol::Simple) => 1.0,
        (Algorithm::Tree, Protocol::Ll) => 0.92 / 3.8,
        (Algorithm::Tree, Protocol::Ll128) => {
            0.92 * if nodes <= 1 { 7.0 / 9.0 } else { 120.0 / 128.0 }
        }
        (Algorithm::Tree, Protocol::Simple) => 0.92,
    }
}

/// GPU generations, as NCCL's tuning tables index them: a catalog attribute of each GPU
/// (`GpuModel::generation`).
pub use railyard_catalog::GpuGeneration;

/// NCCL's ceiling on LL bus bandwidth, GB/s (tuning.cc `llMaxBws`): on one node by GPU generation
/// (39.0, 87.7, 141.0, 282.0 from Volta to Blackwell); on 2 and on more nodes by CPU vendor, Intel
/// assumed (39.0 and 20.4). `None` on one node of an unknown generation.
pub fn ll_max_busbw_gbs(gpu: Option<GpuGeneration>, nodes: u32) -> Option<f64> {
    match nodes {
        0 | 1 => gpu.map(|g| match g {
            GpuGeneration::Volta => 39.0,
            GpuGeneration::Ampere => 87.7,
            GpuGeneration::Hopper => 141.0,
            GpuGeneration::Blackwell => 282.0,
        }),
        2 => Some(39.0),
        _ => Some(20.4),
    }
}

/// NCCL's ceiling on A100 (SM80) bus bandwidth before protocol factors, GB/s: `if (compCap80) busBw
/// = std::min(busBw, 235.0f)` in tuning.cc of NCCL 2.8-2.12. It brings the 12 x 20 GB/s NVLink model
/// down to the 230-235 GB/s measured on DGX A100 (nccl.md).
pub const SM80_BUSBW_CAP_GBS: f64 = 235.0;

/// NCCL's network post overhead per ring step on several nodes, microseconds, x3 for Simple: the
/// floor of the intra-node step latency (tuning.cc `getNetOverhead`, x86 Intel 1.0 us).
pub fn net_overhead_us(proto: Protocol) -> f64 {
    if proto == Protocol::Simple {
        3.0
    } else {
        1.0
    }
}

/// NCCL's threshold for the LL protocol on send/recv, bytes to one peer (`NCCL_P2P_LL_THRESHOLD`,
/// default 16384: src/enqueue.cc since NCCL 2.14).
pub const P2P_LL_THRESHOLD_BYTES: f64 = 16384.0;

/// The protocol NCCL runs a send/recv (and each peer of an all-to-all) with: LL where the peer gets
/// at most [`P2P_LL_THRESHOLD_BYTES`], Simple above, never LL128. src/enqueue.cc `addP2pToPlan`
/// compares the bytes with the threshold times the channels the transfer is split over, and splits
/// only transfers above a minimum part of 64 KiB (half of the 128 KiB network chunk, an eighth of
/// the 512 KiB NVLink one), so the comparison comes to the bytes against the threshold itself.
/// NCCL before 2.14 ran send/recv in Simple only.
pub fn p2p_protocol(bytes_per_peer: f64) -> Protocol {
    if bytes_per_peer <= P2P_LL_THRESHOLD_BYTES {
        Protocol::Ll
    } else {
        Protocol::Simple
    }
}

/// One row of an nccl-tests style table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub size_bytes: u64,
    pub count: u64,
    pub time_us: f64,
    pub algbw_gbs: f64,
    pub busbw_gbs: f64,
}

impl Row {
    /// algbw = S / t and busbw = algbw x factor, GB = 1e9 bytes (nccl-tests).
    pub fn new(coll: Collective, size: u64, ranks: u32, time_us: f64) -> Row {
        let algbw = if time_us > 0.0 {
            size as f64 / (time_us * 1e-6) / 1e9
        } else {
            0.0
        };
        Row {
            size_bytes: size,
            count: coll.count(size, 4, ranks),
            time_us,
            algbw_gbs: algbw,
            busbw_gbs: algbw * coll.busbw_factor(ranks),
        }
    }
}

/// Time as nccl-tests prints it: `%7.2f` below 100 us, `%7.1f` below 10 ms, `%7.0f` above
/// (nccl-tests `src/common.cu`).
fn time_str(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{us:7.0}")
    } else if us >= 100.0 {
        format!("{us:7.1}")
    } else {
        format!("{us:7.2}")
    }
}

/// Renders rows as nccl-tests prints its out-of-place columns (float data, sum reduction, root 0
/// where it applies, -1 elsewhere; `#wrong` is `N/A` as with `-c 0`).
pub fn table(coll: Collective, rows: &[Row]) -> String {
    use fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}",
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"
    );
    let units = format!(
        "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)"
    );
    let _ = writeln!(o, "{}", units.trim_end());
    for r in rows {
        let redop = if coll.has_redop() { "sum" } else { "none" };
        let root = if coll.has_root() { "0" } else { "-1" };
        let _ = writeln!(
            o,
            "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}  {}  {:>6.2}  {:>6.2}  {:>6}",
            r.size_bytes,
            r.count,
            "float",
            redop,
            root,
            time_str(r.time_us),
            r.algbw_gbs,
            r.busbw_gbs,
            "N/A"
        );
    }
    o
}

#[cfg(test)]
mod tests;
