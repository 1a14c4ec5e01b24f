//! Pipeline schedules as frameworks run them, and the time a step's pipeline takes under each.
//!
//! A schedule is fed the slowest stage's time per micro-batch, split as the zero-bubble papers
//! split it: F (forward), B (backward: input gradients and weight gradients together) and W (the
//! weight gradients' part of B), each with the stage's exposed communication. The bubbles are
//! those of DeepSeek-V3's technical report, table 2 (DeepSeek-AI, arXiv 2412.19437, section
//! 3.2.1), with m micro-batches on p stages:
//! - 1F1B (PipeDream-Flush; Narayanan et al., SC'21): (p - 1)(F + B);
//! - interleaved 1F1B with v model chunks a stage (Megatron-Core's virtual pipeline): the bubble is
//!   p - 1 chunk slots, (p - 1)(F + B)/v when the chunks are even (Narayanan et al., section
//!   2.2.2); chunks need not be even (Megatron-Core's `--pipeline-model-parallel-layout`, e.g. 126
//!   layers on 8 stages of 8 chunks): the largest chunk sets the slot;
//! - zero bubble, ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the weight
//!   gradients fill the bubble, (p - 1)(F + B - 2W), at 1F1B's memory;
//! - DualPipe (DeepSeek-V3): micro-batches fed from both ends, a forward and a backward chunk run
//!   together so one's expert all-to-all hides under the other's compute: (p/2 - 1)(F&B + B - 3W),
//!   F&B the two chunks together; two copies of the parameters, p + 1 micro-batches of
//!   activations.

use serde::Serialize;

/// The share of a GPU's SMs DualPipe gives its expert all-to-all: 20 of the H800's 132
/// (DeepSeek-V3 technical report, section 3.2.1: "for a pair of forward and backward chunks, we
/// rearrange these components and manually adjust the ratio of GPU SMs dedicated to
/// communication versus computation"; section 3.2.2: "only 20 SMs are sufficient to fully
/// utilize the bandwidths of IB and NVLink"). The chunk pairs' compute runs on the other 112.
pub const DUALPIPE_COMM_SM_SHARE: f64 = 20.0 / 132.0;

/// How a pipeline runs its micro-batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schedule {
    /// 1F1B, or interleaved 1F1B with more than one virtual stage (`Parallelism::vp`).
    #[default]
    #[serde(rename = "1f1b")]
    OneFOneB,
    /// ZB-H1: backward split into input and weight gradients, the latter filling the bubble.
    ZeroBubble,
    /// DeepSeek-V3's bidirectional schedule.
    Dualpipe,
}

impl Schedule {
    pub const NAMES: &'static str = "1f1b, zero-bubble, dualpipe";

    pub fn as_str(self) -> &'static str {
        match self {
            Schedule::OneFOneB => "1f1b",
            Schedule::ZeroBubble => "zero-bubble",
            Schedule::Dualpipe => "dualpipe",
        }
    }

    /// Parses a schedule's name; the error lists the valid ones.
    pub fn parse(s: &str) -> Result<Schedule, String> {
        match s {
            "1f1b" | "interleaved" => Ok(Schedule::OneFOneB),
            "zero-bubble" | "zb" | "zbh1" => Ok(Schedule::ZeroBubble),
            "dualpipe" => Ok(Schedule::Dualpipe),
            _ => Err(format!(
                "unknown schedule `{s}`; valid: {}",
                Schedule::NAMES
            )),
        }
    }

    /// Parameter copies a stage holds (DualPipe keeps two).
    pub fn parameter_copies(self) -> f64 {
        match self {
            Schedule::Dualpipe => 2.0,
            _ => 1.0,
        }
    }
}

/// The slowest stage's seconds per micro-batch, and what the schedule needs of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// Forward, with its exposed communication.
    pub forward: f64,
    /// Backward (input and weight gradients), with its exposed communication.
    pub backward: f64,
    /// The weight gradients' part of `backward`.
    pub weight: f64,
    /// The largest model chunk's share of the stage (1 without virtual stages).
    pub chunk_share: f64,
}

impl Slot {
    pub fn total(&self) -> f64 {
        self.forward + self.backward
    }
}

/// A step's pipeline: all of it, and the bubble in it, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pipeline {
    pub seconds: f64,
    pub bubble: f64,
}

/// The pipeline of `m` micro-batches on `p` stages under `schedule`.
pub fn pipeline(schedule: Schedule, p: u64, m: u64, slot: &Slot) -> Pipeline {
    let busy = m as f64 * slot.total();
    let stages = p.saturating_sub(1) as f64;
    let (f, b, w) = (slot.forward, slot.backward, slot.weight);
    let bubble = match schedule {
        _ if p <= 1 => 0.0,
        Schedule::OneFOneB => stages * slot.total() * slot.chunk_share,
        Schedule::ZeroBubble => stages * (f + b - 2.0 * w).max(0.0),
        Schedule::Dualpipe => {
            let half = (p / 2).saturating_sub(1) as f64;
            half * (f + b + b - 3.0 * w).max(0.0)
        }
    };
    Pipeline {
        seconds: busy + bubble,
        bubble,
    }
}

/// The layers of each of a stage's `v` model chunks, as even as they go (the first chunks take
/// the extra layers; a chunk may be empty, as Llama 3's first chunk holds only the embedding).
pub fn chunks(layers: u64, v: u32) -> Vec<u64> {
    let v = u64::from(v.max(1));
    (0..v)
        .map(|i| layers / v + u64::from(i < layers % v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(chunk_share: f64) -> Slot {
        Slot {
            forward: 1.0,
            backward: 2.0,
            weight: 1.0,
            chunk_share,
        }
    }

    /// DeepSeek-V3's table 2 with F = W = 1, B = 2 (W part of B) and F&B = F + B: 1F1B idles
    /// (p - 1) 3, ZB-H1 (p - 1), DualPipe (p/2 - 1) 2.
    #[test]
    fn bubbles_are_deepseeks_table() {
        let one = pipeline(Schedule::OneFOneB, 16, 32, &slot(1.0));
        assert_eq!(one.bubble, 45.0);
        assert_eq!(one.seconds, 32.0 * 3.0 + 45.0);
        assert_eq!(
            pipeline(Schedule::ZeroBubble, 16, 32, &slot(1.0)).bubble,
            15.0
        );
        assert_eq!(
            pipeline(Schedule::Dualpipe, 16, 32, &slot(1.0)).bubble,
            14.0
        );
        // Interleaved with 4 even chunks: a quarter of 1F1B's.
        assert_eq!(
            pipeline(Schedule::OneFOneB, 16, 32, &slot(0.25)).bubble,
            45.0 / 4.0
        );
        assert_eq!(pipeline(Schedule::Dualpipe, 1, 32, &slot(1.0)).bubble, 0.0);
    }

    /// 126 layers on 8 stages take 16 or 15 a stage; 8 chunks of 16 are 2 each, of 15 seven of
    /// 2 and one of 1; 7 layers in 8 chunks leave one empty.
    #[test]
    fn chunks_need_not_divide_the_layers() {
        assert_eq!(chunks(16, 8), vec![2; 8]);
        assert_eq!(chunks(15, 8), vec![2, 2, 2, 2, 2, 2, 2, 1]);
        assert_eq!(chunks(7, 8).iter().filter(|&&c| c == 0).count(), 1);
        assert_eq!(chunks(7, 1), vec![7]);
    }

    #[test]
    fn names_parse_and_print() {
        for s in [Schedule::OneFOneB, Schedule::ZeroBubble, Schedule::Dualpipe] {
            assert_eq!(Schedule::parse(s.as_str()), Ok(s));
        }
        assert!(Schedule::parse("gpipe").unwrap_err().contains("dualpipe"));
    }
}
