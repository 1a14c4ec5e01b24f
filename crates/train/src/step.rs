//! One training step: compute from FLOPs, communication timed by a [`CommTimer`] (the simulator on
//! the actual fabric), and the 1F1B pipeline schedule that puts them together.
//!
//! Per pipeline stage and micro-batch (Megatron-LM, Narayanan et al., SC'21):
//! - compute: training FLOPs of the micro-batch's tokens / (tp x pp) GPUs, at the GPU's dense BF16 peak
//!   times an achievable efficiency; backward takes twice the forward;
//! - tensor parallelism: 2 all-reduces of the activations (micro-batch x seq x hidden, BF16) per layer
//!   forward and 2 backward (Shoeybi et al., Megatron-LM, 2019, section 3);
//! - expert parallelism: a dispatch and a combine all-to-all per MoE layer forward, and again backward,
//!   of the routed activations (top-k copies of every token);
//! - pipeline: one activation send forward and one gradient send backward between neighbouring stages.
//!
//! 1F1B runs (m + pp - 1) micro-batch slots per step, of which pp - 1 are the bubble. Data-parallel
//! gradient traffic follows the last backward: ZeRO-0 all-reduces the gradients, ZeRO-1 reduce-scatters
//! them and all-gathers the updated parameters, ZeRO-3 also all-gathers parameters for every forward and
//! backward pass. With overlap (the default) gradients go out in buckets while the last backward runs,
//! so only what does not fit under it, or at least the last bucket, is exposed.

use crate::model::Model;
use crate::parallel::{Groups, Parallelism};
use railyard_sim::collective::CollectiveError;
use serde::Serialize;
use std::collections::BTreeMap;

/// Bytes per value in training: BF16 activations, gradients and parameter copies.
pub const BYTES_PER_VALUE: u64 = 2;

/// A collective operation a step performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    SendRecv,
}

/// Times collectives on the fabric. `groups` run at the same time (every tensor-parallel group of the
/// job, say), so they contend as they would; `bytes` is the buffer size as nccl-tests defines it for the
/// operation. Returns the time until the slowest group finishes, seconds; an error when the
/// communication cannot run on the fabric (no route, too large to simulate).
pub trait CommTimer {
    fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError>;

    /// Bytes one run of the operation puts on each network tier (`server-leaf`, `leaf-spine`, ...),
    /// counting every link a transfer crosses; empty when the timer knows no topology.
    fn tier_bytes(
        &self,
        _op: Op,
        _groups: &[Vec<u32>],
        _bytes: u64,
    ) -> Result<BTreeMap<String, f64>, CollectiveError> {
        Ok(BTreeMap::new())
    }
}

/// Knobs of the step model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepConfig {
    /// Fraction of the GPU's dense BF16 peak that the model's matrix multiplications reach. The
    /// default, 0.5, is an assumption in line with large-model training reports (Llama 3 reports 38-43%
    /// whole-step MFU on H100, which includes communication and bubbles); set it from your own runs.
    pub compute_efficiency: f64,
    /// Data-parallel communication overlaps the backward pass in buckets.
    pub dp_overlap: bool,
    /// Gradient buckets for the overlap.
    pub buckets: u32,
}

impl Default for StepConfig {
    fn default() -> Self {
        StepConfig {
            compute_efficiency: 0.5,
            dp_overlap: true,
            buckets: 8,
        }
    }
}

/// Where a step's time goes, seconds (exposed communication only: what compute does not hide).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breakdown {
    pub compute_s: f64,
    pub tensor_parallel_s: f64,
    pub expert_parallel_s: f64,
    pub pipeline_parallel_s: f64,
    pub data_parallel_exposed_s: f64,
    /// Data-parallel communication in all, exposed or hidden.
    pub data_parallel_total_s: f64,
    pub pipeline_bubble_s: f64,
    pub step_time_s: f64,
    pub tokens_per_s: f64,
    /// Model FLOPs utilisation: model FLOPs per second over the GPUs' peak (recomputation not counted).
    pub mfu: f64,
    pub microbatches: u64,
    /// Bytes each network tier carries in one step (both directions, every link crossed).
    pub network_bytes_per_tier: BTreeMap<String, f64>,
    /// Model state per GPU, bytes: weights, gradients and Adam's state ([`model_state_bytes`]);
    /// 0 when unknown (a replayed workload names no model).
    pub model_state_bytes_per_gpu: f64,
}

/// Bytes of model state one GPU holds in mixed-precision Adam training: 2 per parameter of BF16
/// weights, 2 of gradients and 12 of optimizer state (FP32 master weights, momentum and variance) —
/// 16 bytes per parameter (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
/// Parameter Models", SC'20, section 3.1). A rank holds 1/(tp x pp) of the dense parameters and
/// 1/(tp x pp x ep) of the routed experts; ZeRO-1 shards the optimizer state over the ranks that
/// reduce those gradients (dp, or dp/ep for experts), ZeRO-3 shards all of it. Activations are not
/// counted: they depend on recomputation and the schedule, and come on top.
pub fn model_state_bytes(model: &Model, par: &Parallelism) -> f64 {
    let (tp, pp) = (par.tp.max(1) as f64, par.pp.max(1) as f64);
    let ep = if par.ep > 1 { par.ep as f64 } else { 1.0 };
    let expert = if par.ep > 1 {
        model.routed_expert_params() as f64
    } else {
        0.0
    };
    let dense = model.params() as f64 - expert;
    let (dense_rank, expert_rank) = (dense / (tp * pp), expert / (tp * pp * ep));
    let dp = par.dp.max(1) as f64;
    let edp = (dp / ep).max(1.0);
    let sharded = dense_rank / dp + expert_rank / edp;
    match par.zero {
        0 => 16.0 * (dense_rank + expert_rank),
        1 => 4.0 * (dense_rank + expert_rank) + 12.0 * sharded,
        _ => 16.0 * sharded,
    }
}

/// The step time of `model` trained with `par` on GPUs of `peak_tflops` dense BF16.
pub fn step(
    model: &Model,
    par: &Parallelism,
    peak_tflops: f64,
    cfg: &StepConfig,
    timer: &dyn CommTimer,
) -> Result<Breakdown, CollectiveError> {
    let groups: Groups = par.groups();
    let m = par.microbatches();
    let (tp, pp, dp) = (u64::from(par.tp), u64::from(par.pp), u64::from(par.dp));
    let tokens_mb = par.micro_batch * par.seq;
    let flops_mb =
        model.train_flops_per_token(par.seq, par.recompute) * tokens_mb as f64 / (tp * pp) as f64;
    let rate = peak_tflops * 1e12 * cfg.compute_efficiency;
    let compute_mb = flops_mb / rate;
    let (fwd, bwd) = (compute_mb / 3.0, compute_mb * 2.0 / 3.0);

    // Network bytes per tier in one step: every operation's bytes times how often the step runs it.
    let mut traffic: BTreeMap<String, f64> = BTreeMap::new();
    let mut count =
        |op: Op, groups: &[Vec<u32>], bytes: u64, times: f64| -> Result<(), CollectiveError> {
            for (tier, b) in timer.tier_bytes(op, groups, bytes)? {
                *traffic.entry(tier).or_default() += b * times;
            }
            Ok(())
        };
    let layers_per_stage = model.layers / pp;
    let moe_per_stage = model.moe_layers() / pp;
    let activation = par.micro_batch * par.seq * model.hidden * BYTES_PER_VALUE;
    // `calls` runs of `op` in every micro-batch: their traffic over the step's micro-batches, and
    // their seconds per micro-batch.
    let mut per_microbatch =
        |op: Op, g: &[Vec<u32>], bytes: u64, calls: f64| -> Result<f64, CollectiveError> {
            count(op, g, bytes, calls * m as f64)?;
            Ok(calls * timer.seconds(op, g, bytes)?)
        };
    let tp_mb = if par.tp > 1 {
        // Every pipeline stage runs its micro-batches: m per step across all stages' groups at once.
        per_microbatch(
            Op::AllReduce,
            &groups.tp,
            activation,
            4.0 * layers_per_stage as f64,
        )?
    } else {
        0.0
    };
    let ep_mb = if moe_per_stage > 0 && par.ep > 1 {
        // Each token's hidden state goes to top_k experts; sequence parallelism splits tokens over TP.
        let routed = activation * model.top_k / tp;
        per_microbatch(Op::AllToAll, &groups.ep, routed, 4.0 * moe_per_stage as f64)?
    } else {
        0.0
    };
    let pp_mb = if par.pp > 1 {
        // Activations forward and gradients backward, both directions of every stage boundary.
        let (pairs, back) = groups.stage_boundaries();
        count(Op::SendRecv, &pairs, activation / tp, m as f64)?;
        count(Op::SendRecv, &back, activation / tp, m as f64)?;
        2.0 * timer.seconds(Op::SendRecv, &pairs, activation / tp)?
    } else {
        0.0
    };
    let slot = compute_mb + tp_mb + ep_mb + pp_mb;
    let pipeline = (m + pp - 1) as f64 * slot;
    let bubble = (pp - 1) as f64 * slot;

    // Data parallelism: this rank's share of the gradients, BF16. With expert parallelism the routed
    // experts are split over the EP ranks and their gradients are reduced only among the ranks that
    // hold the same experts (Megatron-Core's expert data parallelism); everything else over DP.
    let (mut dp_exposed, mut dp_total) = (0.0, 0.0);
    if par.dp > 1 {
        let expert = if par.ep > 1 {
            model.routed_expert_params()
        } else {
            0
        };
        let dense_shard = (model.params() - expert) / (tp * pp) * BYTES_PER_VALUE;
        let expert_shard = expert / (tp * pp * u64::from(par.ep)) * BYTES_PER_VALUE;
        let parts: Vec<(&[Vec<u32>], u64)> = [
            (&groups.dp[..], dense_shard),
            (&groups.edp[..], expert_shard),
        ]
        .into_iter()
        .filter(|&(_, bytes)| bytes > 0)
        .collect();
        let hide = |t: f64, under: f64| {
            if cfg.dp_overlap {
                (t / f64::from(cfg.buckets.max(1))).max(t - under)
            } else {
                t
            }
        };
        // One operation over every part, one after the other: seconds.
        let mut run = |op: Op, times: f64| -> Result<f64, CollectiveError> {
            let mut t = 0.0;
            for &(g, bytes) in &parts {
                count(op, g, bytes, times)?;
                t += timer.seconds(op, g, bytes)?;
            }
            Ok(t)
        };
        match par.zero {
            0 => {
                let t = run(Op::AllReduce, 1.0)?;
                dp_total += t;
                dp_exposed += hide(t, bwd);
            }
            _ => {
                let rs = run(Op::ReduceScatter, 1.0)?;
                let ag = run(Op::AllGather, 1.0)?;
                dp_total += rs + ag;
                dp_exposed += hide(rs, bwd) + hide(ag, fwd);
                if par.zero == 3 {
                    // Parameters gathered before every forward and backward pass of every micro-batch.
                    let per_pass = run(Op::AllGather, 2.0 * m as f64)?;
                    dp_total += 2.0 * m as f64 * per_pass;
                    dp_exposed += m as f64 * (hide(per_pass, fwd) + hide(per_pass, bwd));
                }
            }
        }
    }
    let step_time = pipeline + dp_exposed;
    let tokens = (par.global_batch * par.seq) as f64;
    let tokens_per_s = tokens / step_time;
    let gpus = (tp * pp * dp) as f64;
    let mfu =
        model.train_flops_per_token(par.seq, false) * tokens_per_s / (gpus * peak_tflops * 1e12);
    Ok(Breakdown {
        compute_s: m as f64 * compute_mb,
        tensor_parallel_s: m as f64 * tp_mb,
        expert_parallel_s: m as f64 * ep_mb,
        pipeline_parallel_s: m as f64 * pp_mb,
        data_parallel_exposed_s: dp_exposed,
        data_parallel_total_s: dp_total,
        pipeline_bubble_s: bubble,
        step_time_s: step_time,
        tokens_per_s,
        mfu,
        microbatches: m,
        network_bytes_per_tier: traffic,
        model_state_bytes_per_gpu: model_state_bytes(model, par),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ring on every group at a fixed bus bandwidth: time = busbw factor x bytes / busbw (nccl-tests).
    pub(crate) struct Ring {
        pub busbw: f64,
    }

    impl CommTimer for Ring {
        fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError> {
            let n = groups.first().map_or(1, Vec::len) as f64;
            let factor = match op {
                Op::AllReduce => 2.0 * (n - 1.0) / n,
                Op::ReduceScatter | Op::AllGather | Op::AllToAll => (n - 1.0) / n,
                Op::SendRecv => 1.0,
            };
            Ok(factor * bytes as f64 / self.busbw)
        }
    }

    fn pure_dp(n: u32, zero: u32) -> Parallelism {
        Parallelism {
            tp: 1,
            pp: 1,
            dp: n,
            ep: 1,
            seq: 2048,
            micro_batch: 1,
            global_batch: u64::from(n),
            zero,
            recompute: false,
        }
    }

    /// Pure data parallelism without overlap spends 2(n-1)/n x gradient bytes / busbw communicating,
    /// whether the gradients are all-reduced (ZeRO-0) or reduce-scattered and all-gathered (ZeRO-1).
    #[test]
    fn pure_data_parallel_without_overlap_is_the_all_reduce_formula() {
        let model = Model::preset("llama3-8b").unwrap();
        let cfg = StepConfig {
            dp_overlap: false,
            ..StepConfig::default()
        };
        let busbw = 100e9;
        for zero in [0, 1] {
            let n = 16;
            let b = step(&model, &pure_dp(n, zero), 989.0, &cfg, &Ring { busbw }).unwrap();
            let grads = (model.params() * BYTES_PER_VALUE) as f64;
            let expect = 2.0 * f64::from(n - 1) / f64::from(n) * grads / busbw;
            assert!(
                (b.data_parallel_exposed_s - expect).abs() / expect < 1e-12,
                "zero {zero}"
            );
            assert!((b.step_time_s - b.compute_s - expect).abs() < 1e-12);
        }
    }

    /// The ZeRO paper's example (SC'20, figure 1): Psi parameters on 64 data-parallel GPUs hold
    /// 16 Psi bytes each without ZeRO, (4 + 12/64) Psi with the optimizer partitioned (7.5B: 120 GB
    /// -> 31.4 GB), 16/64 Psi with everything partitioned (1.9 GB).
    #[test]
    fn model_state_follows_the_zero_paper() {
        let model = Model::preset("llama3-8b").unwrap();
        let psi = model.params() as f64;
        let at = |zero| model_state_bytes(&model, &pure_dp(64, zero));
        assert_eq!(at(0), 16.0 * psi);
        assert!((at(1) / at(0) - 31.4 / 120.0).abs() < 1e-3);
        assert!((at(3) / at(0) - 1.9 / 120.0).abs() < 1e-3);
    }

    /// With expert parallelism, the routed experts' gradients (1/ep of them per rank) are all-reduced
    /// among the dp/ep ranks that hold the same experts; the rest over all dp ranks.
    #[test]
    fn expert_gradients_reduce_over_expert_data_parallel_groups() {
        let model = Model::preset("mixtral-8x7b").unwrap();
        let cfg = StepConfig {
            dp_overlap: false,
            ..StepConfig::default()
        };
        let busbw = 100e9;
        let mut par = pure_dp(16, 0);
        par.ep = 8;
        let b = step(&model, &par, 989.0, &cfg, &Ring { busbw }).unwrap();
        let expert = model.routed_expert_params() as f64 * BYTES_PER_VALUE as f64;
        let dense = model.params() as f64 * BYTES_PER_VALUE as f64 - expert;
        let ring = |n: f64, bytes: f64| 2.0 * (n - 1.0) / n * bytes / busbw;
        let expect = ring(16.0, dense) + ring(2.0, expert / 8.0);
        assert!(
            (b.data_parallel_total_s - expect).abs() / expect < 1e-12,
            "{} vs {expect}",
            b.data_parallel_total_s
        );
        // Far less than reducing every parameter over all 16 ranks.
        assert!(b.data_parallel_total_s < 0.4 * ring(16.0, dense + expert));
    }

    #[test]
    fn overlap_never_makes_a_step_slower_and_bubbles_follow_1f1b() {
        let model = Model::preset("llama3-70b").unwrap();
        let par = Parallelism {
            tp: 8,
            pp: 4,
            dp: 4,
            ep: 1,
            seq: 8192,
            micro_batch: 1,
            global_batch: 64,
            zero: 1,
            recompute: false,
        };
        let timer = Ring { busbw: 40e9 };
        let with = step(&model, &par, 989.0, &StepConfig::default(), &timer).unwrap();
        let without = step(
            &model,
            &par,
            989.0,
            &StepConfig {
                dp_overlap: false,
                ..StepConfig::default()
            },
            &timer,
        )
        .unwrap();
        assert!(with.step_time_s <= without.step_time_s);
        let m = 16.0;
        let slot = with.pipeline_bubble_s / 3.0;
        assert!((with.step_time_s - with.data_parallel_exposed_s - (m + 3.0) * slot).abs() < 1e-9);
        assert!(with.mfu > 0.0 && with.mfu < 0.5);
    }
}
