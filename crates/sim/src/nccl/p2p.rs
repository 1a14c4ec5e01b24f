//! NCCL's schedule of a group of point-to-point operations (all-to-all, send/recv): which
//! channels each peer's transfer runs on, how the peers are batched on a channel, and the
//! protocol each transfer takes. NCCL v2.30.7 (NVIDIA/nccl@5067397c). The round groups of 8 and
//! `NCCL_P2P_PER_CHANNEL_NET_BW` came in v2.29; v2.23-v2.28 (which have the 8-per-batch limit)
//! group a whole node's rounds, start them on channel `nodeDelta x ceil(ppn / 8)` unreversed, and
//! give a network peer 2 channels (halved while 2 x ranks > 4 x `p2pnChannels`, at least one per
//! NIC; `NCCL_NCHANNELS_PER_NET_PEER` was a fixed 2 up to v2.20): on servers of 8 GPUs the batches
//! per channel come out the same.
//!
//! What NCCL's code does, and what this module keeps of it:
//! - **Rounds** (src/init.cc `ncclP2pSchedule`): the n peers of a rank are visited in n rounds,
//!   in groups of `NCCL_P2P_SCHEDULE_GROUP_SIZE` (8, `NCCL_MAX_DEV_WORK_P2P_PER_BATCH`) ranks of
//!   one node: all of one remote node's GPUs, then the next node's (on one node, the whole node is
//!   one group).
//! - **Channels** (src/graph/paths.cc `ncclTopoComputeP2pChannels`): `p2pnChannels` is the
//!   communicator's channels rounded up to a power of two (at most `NCCL_MAX_P2P_NCHANNELS`,
//!   64); channels per peer are the fewest any peer gets (`ncclTopoGetNchannels`: 2 x the
//!   NVLink links to a peer over NVLink, 2 over PCIe, and over the network
//!   max(NICs, NIC GB/s / `NCCL_P2P_PER_CHANNEL_NET_BW` 14), unless
//!   `NCCL_NCHANNELS_PER_NET_PEER` is set), rounded up to a power of two; across nodes they are
//!   halved until `channels per peer x ceil(ranks / 8)` fits in `p2pnChannels`, "to fit all the
//!   peers within a single round".
//! - **Split** (src/enqueue.cc `scheduleP2pTasksToPlan`, `addP2pToPlan`): an operation starts on
//!   `nChannelsMin` channels (halved until `nChannelsMin x ranks` fits in `p2pnChannels`), on no
//!   more channels than its bytes fill parts of half a chunk (an eighth on one node), doubled up
//!   to the channels per peer while a part is above a chunk (32 chunks on one node); the chunk
//!   is `NCCL_P2P_NET_CHUNKSIZE` 128 KiB across nodes, `NCCL_P2P_NVL_CHUNKSIZE` 512 KiB on one
//!   node of NVLink, `NCCL_P2P_PCI_CHUNKSIZE` 128 KiB otherwise (src/init.cc `computeBuffSizes`).
//! - **Batches** (src/enqueue.cc `ncclAddWorkBatchToPlan`, src/include/channel.h
//!   `ncclP2pChannelBaseForRound`): the rounds of one group start on the same channel (across
//!   nodes the base is the group's index, bit-reversed over the channels; on one node the
//!   round's) and share a batch there, up to 8; a channel runs its batches one after the other,
//!   the operations of a batch together (src/device/sendrecv.h). So the kernel is as long as the
//!   busiest channel's batches in sequence.
//! - **Protocol**: LL where the bytes are at most `NCCL_P2P_LL_THRESHOLD` per channel
//!   ([`super::p2p_protocol`]) and the connection has LL buffers; a network connection of p2p
//!   shares Simple buffers and gets LL buffers only with `NCCL_ALLOC_P2P_NET_LL_BUFFERS=1`
//!   (default 0: src/init.cc, src/transport/net.cc `sendProxySetup`/`recvProxySetup`), so every
//!   transfer that crosses the network runs Simple, at any size.
//!
//! A batch costs one step of NCCL's hardware latency for its hop and protocol (tuning.cc
//! `hwLat`, the ring row: NVLink, PCIe, or the network's 14 us for Simple); NCCL's tuning model
//! prices no point-to-point operation, so this is its nearest figure, not one NCCL applies. The
//! proxy thread's time per network operation (each of a GPU's sends and receives across nodes is
//! posted and polled by one CPU thread, src/proxy.cc) is not in NCCL's code as a number and is
//! left out: a measured per-operation figure is needed for it (issue 35).

use crate::nccl::hop_latency_us;
use crate::nccl::tuning::NcclSystem;
use crate::nccl::Algorithm;
use crate::nccl::GpuGeneration;
use crate::nccl::HopKind;
use crate::nccl::Protocol;

/// Point-to-point operations NCCL puts in one batch of a channel (src/include/device.h
/// `NCCL_MAX_DEV_WORK_P2P_PER_BATCH`), and the size of a round group across nodes
/// (`NCCL_P2P_SCHEDULE_GROUP_SIZE`, src/init.cc).
pub const P2P_PER_BATCH: u32 = 8;

/// The most channels NCCL runs (src/include/device.h `MAXCHANNELS`), the default of
/// `NCCL_MAX_P2P_NCHANNELS` (src/graph/paths.cc).
pub const MAX_P2P_CHANNELS: u32 = 64;

/// GB/s one channel carries to a network peer in NCCL's channel count per peer
/// (`NCCL_P2P_PER_CHANNEL_NET_BW`, src/graph/paths.cc).
pub const P2P_PER_CHANNEL_NET_GBS: f64 = 14.0;

/// The p2p chunk across nodes (`NCCL_P2P_NET_CHUNKSIZE`), and over PCIe on one node
/// (`NCCL_P2P_PCI_CHUNKSIZE`), bytes (src/init.cc).
pub const P2P_NET_CHUNK_BYTES: u64 = 128 << 10;

/// The p2p chunk on one node of NVLink (`NCCL_P2P_NVL_CHUNKSIZE`), bytes (src/init.cc).
pub const P2P_NVL_CHUNK_BYTES: u64 = 512 << 10;

/// One NVLink's bandwidth as NCCL's topology counts it, GB/s (src/graph/topo.h
/// `ncclTopoNVLinkBw`: SM70 and SM80 20.0, SM90 20.6, SM100 40.1).
fn nvlink_link_gbs(g: GpuGeneration) -> f64 {
    match g {
        GpuGeneration::Volta | GpuGeneration::Ampere => 20.0,
        GpuGeneration::Hopper => 20.6,
        GpuGeneration::Blackwell => 40.1,
    }
}

/// How NCCL schedules a communicator's point-to-point operations (module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct P2pSchedule {
    pub nodes: u32,
    pub ranks: u32,
    /// `p2pnChannels`: channels point-to-point operations run on.
    pub channels: u32,
    /// `p2pnChannelsPerPeer`: the most channels one peer's transfer is split over.
    pub channels_per_peer: u32,
    /// `p2pChunkSize`, bytes.
    pub chunk_bytes: u64,
    /// Ranks of a round group (`p2pSchedGroupSize`).
    pub group: u32,
    /// The hop between GPUs of a node.
    pub intra: HopKind,
}

impl P2pSchedule {
    /// NCCL's schedule on `sys`, whose collectives run on `coll_channels` channels (the
    /// communicator's `nChannels`, `Tuning::runtime_channels`).
    pub fn new(sys: &NcclSystem, coll_channels: u32) -> P2pSchedule {
        let nodes = sys.nodes.max(1);
        let ranks = sys.ranks.max(1);
        let channels = coll_channels
            .clamp(1, MAX_P2P_CHANNELS)
            .next_power_of_two()
            .min(MAX_P2P_CHANNELS);
        // The fewest channels any peer gets (`ncclTopoComputeP2pChannelsPerPeer`).
        let local = if sys.nvlink {
            let links = (sys.nvlink_gbs / nvlink_link_gbs(sys.generation)).floor() as u32;
            2 * links.max(1)
        } else {
            2
        };
        let mut per_peer = if sys.ppn() > 1 { local } else { u32::MAX };
        if nodes > 1 {
            let nics = 1;
            let by_bw = (sys.nic_gbs / P2P_PER_CHANNEL_NET_GBS).ceil() as u32;
            per_peer = per_peer.min(by_bw.max(nics));
        }
        if per_peer == u32::MAX {
            per_peer = 1;
        }
        let mut per_peer = per_peer.next_power_of_two();
        if nodes > 1 {
            while per_peer * ranks.div_ceil(P2P_PER_BATCH) > channels && per_peer > 1 {
                per_peer /= 2;
            }
        } else {
            per_peer = per_peer.min(channels);
        }
        let chunk_bytes = if nodes > 1 {
            P2P_NET_CHUNK_BYTES
        } else if sys.nvlink {
            P2P_NVL_CHUNK_BYTES
        } else {
            P2P_NET_CHUNK_BYTES
        };
        let ppn = sys.ppn().max(1);
        let group = if nodes > 1 {
            if !ppn.is_multiple_of(P2P_PER_BATCH) || ppn < P2P_PER_BATCH {
                gcd(P2P_PER_BATCH, ppn)
            } else {
                P2P_PER_BATCH
            }
        } else {
            ppn
        };
        P2pSchedule {
            nodes,
            ranks,
            channels,
            channels_per_peer: per_peer,
            chunk_bytes,
            group,
            intra: if sys.nvlink {
                HopKind::Nvlink
            } else {
                HopKind::Pcie
            },
        }
    }

    /// Channels one operation of `bytes` runs on (src/enqueue.cc `addP2pToPlan`).
    pub fn task_channels(&self, bytes: u64) -> u32 {
        let mut min = self.channels_per_peer;
        while min * self.ranks > self.channels && min > 1 {
            min /= 2;
        }
        if bytes == 0 {
            return 1;
        }
        let (min_part, max_part) = if self.nodes > 1 {
            (self.chunk_bytes / 2, self.chunk_bytes)
        } else {
            (self.chunk_bytes / 8, self.chunk_bytes * 32)
        };
        let mut n = (min as u64).min(bytes.div_ceil(min_part.max(1))).max(1) as u32;
        let mut part = min_part.max(bytes.div_ceil(u64::from(n)));
        while part > max_part && n <= self.channels_per_peer / 2 {
            n *= 2;
            part = bytes.div_ceil(u64::from(n));
        }
        n
    }

    /// The protocol an operation of `bytes` to a peer takes over `hop` (module doc): Simple over
    /// the network, else LL where NCCL's threshold allows it.
    pub fn protocol(&self, bytes: u64, hop: HopKind) -> Protocol {
        if hop == HopKind::Net {
            return Protocol::Simple;
        }
        let per_channel = bytes as f64 / f64::from(self.task_channels(bytes));
        super::p2p_protocol(per_channel)
    }

    /// The batches of an all-to-all of `bytes` to each peer on the busiest channel, as (batches
    /// of peers on the same node, batches of peers across the network): a channel's batches in
    /// sequence (module doc). `local_proto`'s batches are the node's own group.
    pub fn all_to_all_batches(&self, bytes: u64) -> (u32, u32) {
        let parts = self.task_channels(bytes);
        let bits = self.channels.trailing_zeros();
        let mut local = vec![0u32; self.channels as usize];
        let mut net = vec![0u32; self.channels as usize];
        let mask = self.channels - 1;
        if self.nodes > 1 {
            // One batch per round group per channel it covers; group 0 is this node's own.
            let groups = self.ranks / self.group.max(1);
            let per_group = self.group.div_ceil(P2P_PER_BATCH);
            for g in 0..groups {
                for sub in 0..per_group {
                    let base = reverse_bits((g * per_group + sub) & mask, bits);
                    for p in 0..parts {
                        let c = ((base + p) & mask) as usize;
                        // Groups of the own node are the first `ppn / group` of the schedule.
                        if g < (self.ranks / self.nodes) / self.group.max(1) {
                            local[c] += 1;
                        } else {
                            net[c] += 1;
                        }
                    }
                }
            }
        } else {
            // One node: each round starts on its own channel; rounds on one channel share a
            // batch within each group of 8 rounds.
            let mut seen: Vec<Vec<u32>> = vec![Vec::new(); self.channels as usize];
            for r in 0..self.ranks {
                let base = reverse_bits(r & mask, bits);
                for p in 0..parts {
                    let c = ((base + p) & mask) as usize;
                    let batch = r / P2P_PER_BATCH;
                    if !seen[c].contains(&batch) {
                        seen[c].push(batch);
                        local[c] += 1;
                    }
                }
            }
        }
        (0..self.channels as usize)
            .map(|c| (local[c], net[c]))
            .max_by_key(|&(l, n)| (n, l))
            .unwrap_or((1, 0))
    }

    /// The microseconds an all-to-all of `bytes` to each peer takes beyond moving its bytes:
    /// NCCL's base latency of `proto` and the busiest channel's batches, each one step of
    /// `hwLat` for its hop (module doc).
    pub fn all_to_all_latency_us(&self, bytes: u64, proto: Protocol) -> f64 {
        let (local, net) = self.all_to_all_batches(bytes);
        let local_proto = self.protocol(bytes, self.intra);
        super::base_latency_us(Algorithm::Ring, proto)
            + f64::from(local) * hop_latency_us(Algorithm::Ring, local_proto, self.intra)
            + f64::from(net) * hop_latency_us(Algorithm::Ring, Protocol::Simple, HopKind::Net)
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// `reverseBits` of NCCL's src/include/bitops.h: the low `bits` bits of `x` in reverse order.
fn reverse_bits(x: u32, bits: u32) -> u32 {
    if bits == 0 {
        return 0;
    }
    x.reverse_bits() >> (32 - bits)
}

#[cfg(test)]
mod tests;
