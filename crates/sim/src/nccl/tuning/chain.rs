//! How long NCCL's ring broadcast and reduce take: a pipeline of chunks through every rank.
//!
//! NCCL prices broadcast and reduce for its algorithm and protocol choice as one step
//! (`tuning.cc`, the `sameChannels` case), but what its kernel runs is a chain: the root's data
//! goes from rank to rank around the ring, each rank receiving a chunk, copying it and sending it
//! on (NVIDIA/nccl v2.23.4-1, 68b5423, read, not copied):
//! - `src/device/broadcast.h` `runRing` and `src/device/reduce.h` `runRing`: per channel a loop
//!   over chunks of `chunkCount`; the root sends, the rank before the root only receives, every
//!   other rank `directRecvCopyDirectSend` (reduce: `recvReduceSend`) one chunk at a time, with
//!   `BROADCAST_CHUNKSTEPS` = `BROADCAST_SLICESTEPS` = 1 (`REDUCE_*` alike,
//!   `src/include/collectives.h`): a chunk is one step of the connection's FIFO, forwarded once it
//!   has arrived.
//! - `src/include/device.h` `ncclCollCbdPart`: the message is split into one contiguous part per
//!   channel; `src/enqueue.cc` `calcCollChunking` (lines 2009-2014): the chunk is a step of the
//!   protocol's buffer, `buffSize / NCCL_STEPS`: Simple 4 MiB / 8 = 512 KiB
//!   (`DEFAULT_BUFFSIZE`, `src/init.cc`), LL 512 KiB / 8 halved for its flags = 32 KiB
//!   (`DEFAULT_LL_BUFFSIZE`), LL128 4,915,200 / 8 x 15/16 = 576,000 bytes
//!   (`DEFAULT_LL128_BUFFSIZE`, `NCCL_LL128_DATAELEMS` / `NCCL_LL128_LINEELEMS`); a part smaller
//!   than a chunk is one chunk.
//!
//! So with `k` chunks per channel and `h` = ranks - 1 hops, the last rank has its last chunk after
//! the first chunk's trip through every hop plus `k - 1` chunks at the pipeline's slowest stage:
//! `sum over hops of stage / hop bandwidth + (k - 1) x stage / bandwidth`, a stage being one chunk
//! on every channel at once. Hops inside a server run at the GPU's NVLink (or PCIe) bandwidth
//! times the protocol's payload, hops between servers at what the fabric carries for the ring
//! (the simulated step, times the payload); the stages that follow at the collective's bandwidth
//! (the lesser of NCCL's and the fabric's).
//! At large sizes (`k` >> `h`) this is size / bandwidth; at a fixed size it grows linearly in the
//! ranks: ABCI 2.0's broadcast of 1 MiB took 54.9 us on 8 A100 and 599.1 us on 128
//! (aistabci/abci2.0benchmark, bcast/).

/// One chunk of NCCL's ring broadcast / reduce per channel, bytes of data (see the module doc).
pub fn chunk_bytes(p: crate::nccl::Protocol) -> u64 {
    match p {
        crate::nccl::Protocol::Simple => (4 << 20) / 8,
        crate::nccl::Protocol::Ll => (512 << 10) / 8 / 2,
        crate::nccl::Protocol::Ll128 => 4_915_200 / 8 / 16 * 15,
    }
}

/// The chain a broadcast or reduce runs through: its shape and its hops' speeds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chain {
    /// Ranks of the communicator (the chain has ranks - 1 hops).
    pub ranks: u32,
    /// Servers the ranks are on (nodes - 1 hops cross the network).
    pub nodes: u32,
    /// Channels the collective runs on, each a chain of its own.
    pub channels: u32,
    /// Bytes of data one chunk of one channel carries (`chunk_bytes`).
    pub chunk: u64,
    /// GB/s of data a hop inside a server carries (all channels).
    pub intra_gbs: f64,
    /// GB/s of data a hop between servers carries (all channels: the NICs' wire rate).
    pub inter_gbs: f64,
    /// GB/s of data the collective reaches (its slowest stage, at most the hops').
    pub bw_gbs: f64,
}

impl Chain {
    /// Bytes of one pipeline stage (one chunk on every channel) and the chunks per channel for a
    /// message of `size` bytes.
    /// A message smaller than a chunk per channel is one stage of its own size.
    pub fn stages(&self, size: u64) -> (f64, u64) {
        let full = self.chunk.max(1) * u64::from(self.channels.max(1));
        let stage = full.min(size).max(1);
        (stage as f64, size.div_ceil(stage).max(1))
    }

    /// Microseconds from the root's first byte to the last rank's last byte for `size` bytes
    /// (the pipeline above; no fixed latency).
    pub fn transfer_us(&self, size: u64) -> f64 {
        let nodes = self.nodes.max(1);
        let ranks = self.ranks.max(nodes);
        let (stage, k) = self.stages(size);
        let intra = self.intra_gbs * 1e3;
        let inter = self.inter_gbs.min(self.intra_gbs) * 1e3;
        let mut bw = self.bw_gbs.min(self.intra_gbs) * 1e3;
        if nodes > 1 {
            bw = bw.min(inter);
        }
        let inter_hops = f64::from(nodes - 1);
        let intra_hops = f64::from(ranks - nodes);
        let fill = if ranks <= 1 {
            stage / bw
        } else {
            intra_hops * stage / intra + inter_hops * stage / inter
        };
        // The last stage may be partly filled: the tail carries what is left of the message.
        let rest = (size as f64 - stage).max(0.0);
        fill + rest.min((k - 1) as f64 * stage) / bw
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::Protocol;

    /// 8 channels of Simple chunks, NVLink at 240 GB/s, the network at 90 GB/s: A100 servers with
    /// four HDR NICs as NCCL sees them.
    fn chain(ranks: u32, nodes: u32) -> Chain {
        Chain {
            ranks,
            nodes,
            channels: 8,
            chunk: chunk_bytes(Protocol::Simple),
            intra_gbs: 240.0,
            inter_gbs: 90.0,
            bw_gbs: 90.0,
        }
    }

    #[test]
    fn chunks_are_a_step_of_each_protocols_buffer() {
        assert_eq!(chunk_bytes(Protocol::Simple), 524_288);
        assert_eq!(chunk_bytes(Protocol::Ll), 32_768);
        assert_eq!(chunk_bytes(Protocol::Ll128), 576_000);
    }

    #[test]
    fn a_message_of_one_chunk_per_channel_crosses_every_hop_once() {
        // 1 MiB on 8 channels: one 128 KiB chunk each, one stage of 1 MiB.
        let c = chain(128, 16);
        assert_eq!(c.stages(1 << 20), ((1 << 20) as f64, 1));
        let stage = (1 << 20) as f64;
        let want = 112.0 * stage / 240e3 + 15.0 * stage / 90e3;
        assert!((c.transfer_us(1 << 20) - want).abs() < 1e-9);
    }

    #[test]
    fn time_grows_linearly_in_ranks_at_a_fixed_size() {
        // One server more adds 7 NVLink hops and one network hop, whatever the servers before.
        let t: Vec<f64> = (1..=16)
            .map(|n| chain(8 * n, n).transfer_us(1 << 20))
            .collect();
        let step = (1 << 20) as f64 * (7.0 / 240e3 + 1.0 / 90e3);
        for w in t[1..].windows(2) {
            assert!((w[1] - w[0] - step).abs() < 1e-9, "{w:?}");
        }
    }

    #[test]
    fn large_messages_approach_size_over_bandwidth() {
        let c = chain(128, 16);
        let size = 64u64 << 30;
        let ideal = size as f64 / 90e3;
        let t = c.transfer_us(size);
        assert!(t > ideal && t < 1.01 * ideal, "{t} vs {ideal}");
        // The fill is the chunks' trip through the chain: 4 MiB stages over 127 hops.
        let stage = (4u64 << 20) as f64;
        let fill = 112.0 * stage / 240e3 + 15.0 * stage / 90e3;
        assert!((t - (fill + (size as f64 - stage) / 90e3)).abs() < 1e-6);
    }

    #[test]
    fn one_server_runs_at_the_slower_of_nvlink_and_the_collective() {
        let mut c = chain(8, 1);
        c.bw_gbs = 300.0;
        let size = 32u64 << 20;
        let stage = (4u64 << 20) as f64;
        let want = 7.0 * stage / 240e3 + (size as f64 - stage) / 240e3;
        assert!((c.transfer_us(size) - want).abs() < 1e-9);
    }
}
