//! SimAI / AICB workload files, replayed on the fabric.
//!
//! AICB (github.com/aliyun/aicb) writes one rank's training iteration for SimAI's astra-sim as text:
//!
//! ```text
//! HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 4 all_gpus: 64 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0
//! 3
//! grad_gather     -1  1        NONE           0  1       NONE  0  1  ALLGATHER  2807758848  100
//! attention_row   -1  1750840  REDUCESCATTER  50331648  875420  ALLGATHER  50331648  875420  NONE  0  100
//! ...
//! ```
//!
//! Line 1 names the loop (`HYBRID_TRANSFORMER_FWD_IN_BCKWD` or `HYBRID_TRANSFORMER`) and the layout
//! as `key: value` pairs; line 2 the number of layer lines; each layer line holds, whitespace
//! separated: name, a dependency (-1), then forward, input-gradient and weight-gradient triples of
//! compute time, collective and bytes, and an update time. Times are astra-sim ticks of 1 ns
//! (SimAI's `Common.hh`: `CLOCK_PERIOD 1`, `FREQ 1000` ticks per microsecond); sizes are the
//! collective's buffer in bytes. A collective's group follows SimAI's `Workload.cc`: forward and
//! input-gradient collectives run in the tensor-parallel group, weight-gradient collectives in the
//! data-parallel group, and the suffixes `_EP` and `_DP_EP` select the expert-parallel group and
//! the data-parallel group of expert replicas. AICB unrolls the gradient-accumulation micro-batches
//! into the layer list, so the file is one stage's whole iteration.
//!
//! The replay follows astra-sim's transformer loop: forward through the layers, each computing and
//! then running its collective to completion; backward from the last layer, input-gradient compute
//! and collective (blocking), then weight-gradient compute, whose collective is queued on a
//! data-parallel stream that runs under the rest of the backward pass (first in, first out; the
//! update time follows each). The step ends when both are done. With `pp` above 1, railyard adds
//! the 1F1B bubble, (pp - 1) micro-batch slots of the stage's blocking timeline, and the
//! stage-boundary sends of `pp_comm` bytes forward and backward per micro-batch (its own model;
//! astra-sim's pipeline handling is not reproduced). Every collective is timed by the
//! [`CommTimer`], the simulator on the actual fabric.

use crate::model::MAX_SEQ;
use crate::parallel::{Groups, LayoutError, Parallelism, MAX_MICRO_BATCH};
use crate::step::{Breakdown, CommTimer, Op};
use railyard_sim::collective::CollectiveError;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Seconds per astra-sim tick.
pub const TICK_S: f64 = 1e-9;

/// Which ranks a collective runs among.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    Tp,
    Dp,
    Ep,
    /// Data-parallel ranks that hold the same experts (`_DP_EP`).
    DpEp,
}

/// A collective of a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm {
    pub op: Op,
    pub group: Group,
    pub bytes: u64,
}

/// One pass of a layer (forward, input gradient or weight gradient): its compute and the collective
/// that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerPass {
    /// Ticks (ns).
    pub compute: u64,
    pub comm: Option<Comm>,
}

/// One layer line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub name: String,
    pub fwd: LayerPass,
    pub ig: LayerPass,
    pub wg: LayerPass,
    /// Ticks after each weight-gradient collective (the optimizer step of the layer).
    pub update: u64,
}

/// A parsed SimAI/AICB workload file (the simulator engine's flows and resources are
/// `railyard_sim::Workload`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimaiWorkload {
    pub policy: String,
    /// `model_parallel_NPU_group`: the tensor-parallel size.
    pub tp: u32,
    pub ep: u32,
    pub pp: u32,
    /// Gradient-accumulation steps (micro-batches per iteration).
    pub ga: u32,
    pub all_gpus: u32,
    /// Bytes sent across each pipeline-stage boundary per micro-batch and direction.
    pub pp_comm: u64,
    pub layers: Vec<Layer>,
}

/// What is wrong with a workload file, and where (1-based line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.field, self.message)
    }
}

impl std::error::Error for ParseError {}

fn err(line: usize, field: &str, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        field: field.to_string(),
        message: message.into(),
    }
}

/// The policies whose loop [`replay`] follows.
pub const POLICIES: [&str; 2] = ["HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER"];

/// Collective names SimAI reads (before any `_EP` / `_DP_EP` suffix).
const COLLECTIVES: [&str; 5] = [
    "NONE",
    "ALLREDUCE",
    "ALLGATHER",
    "REDUCESCATTER",
    "ALLTOALL",
];

/// A collective column: type and group. `default` is the group of the bare name.
fn collective(
    line: usize,
    field: &str,
    s: &str,
    default: Group,
) -> Result<Option<(Op, Group)>, ParseError> {
    let (base, group) = if let Some(b) = s.strip_suffix("_DP_EP") {
        (b, Group::DpEp)
    } else if let Some(b) = s.strip_suffix("_EP") {
        (b, Group::Ep)
    } else {
        (s, default)
    };
    let op = match base {
        // SimAI reads BROADCAST as no collective (its parser knows no broadcast type).
        "NONE" | "BROADCAST" => return Ok(None),
        "ALLREDUCE" => Op::AllReduce,
        "ALLGATHER" => Op::AllGather,
        "REDUCESCATTER" => Op::ReduceScatter,
        "ALLTOALL" => Op::AllToAll,
        "ALLREDUCEALLTOALL" => {
            return Err(err(
                line,
                field,
                "ALLREDUCEALLTOALL (DLRM's fused collective) is not replayed",
            ))
        }
        _ => {
            return Err(err(
                line,
                field,
                format!(
                    "`{s}` is not a collective; valid: {}, each optionally with _EP or _DP_EP",
                    COLLECTIVES.join(", ")
                ),
            ))
        }
    };
    Ok(Some((op, group)))
}

fn number(line: usize, field: &str, s: Option<&str>) -> Result<u64, ParseError> {
    let s = s.ok_or_else(|| err(line, field, "missing"))?;
    s.parse::<u64>()
        .map_err(|_| err(line, field, format!("`{s}` is not a whole number")))
}

/// Parses a workload file's text.
pub fn parse(text: &str) -> Result<SimaiWorkload, ParseError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let (_, header) = lines.next().ok_or_else(|| err(1, "header", "empty file"))?;
    let tokens: Vec<&str> = header.split_whitespace().collect();
    let policy = tokens.first().copied().unwrap_or_default().to_string();
    if !POLICIES.contains(&policy.as_str()) {
        return Err(err(
            1,
            "policy",
            format!(
                "`{policy}` is not replayed; valid: {} (AICB's training workloads)",
                POLICIES.join(", ")
            ),
        ));
    }
    // `key: value` pairs; SimAI also accepts `pp_comm` without its colon.
    let mut kv: BTreeMap<String, u64> = BTreeMap::new();
    let mut i = 1;
    while i < tokens.len() {
        let key = tokens[i].trim_end_matches(':');
        if !key.is_empty() && (tokens[i].ends_with(':') || key == "pp_comm") {
            let v = number(1, key, tokens.get(i + 1).copied())?;
            kv.insert(key.to_string(), v);
            // `checkpoints: N l1 .. lN`: the layer list follows the count.
            let skip = if matches!(key, "checkpoints" | "checkpoint_initiates") {
                v as usize
            } else {
                0
            };
            i = i.saturating_add(2).saturating_add(skip);
        } else {
            i += 1;
        }
    }
    let get = |k: &str, default: u64| -> Result<u32, ParseError> {
        let v = kv.get(k).copied().unwrap_or(default);
        u32::try_from(v)
            .ok()
            .filter(|&v| v >= 1)
            .ok_or_else(|| err(1, k, format!("{v}: valid: 1 or more")))
    };
    let tp = get(
        "model_parallel_NPU_group",
        *kv.get("model_parallel_NPU_group")
            .ok_or_else(|| err(1, "model_parallel_NPU_group", "missing"))?,
    )?;
    if kv.get("checkpoints").copied().unwrap_or(0) > 0
        || kv.get("checkpoint_initiates").copied().unwrap_or(0) > 0
    {
        return Err(err(
            1,
            "checkpoints",
            "activation checkpoints (forward in backward) are not replayed; valid: 0",
        ));
    }
    let w_head = SimaiWorkload {
        policy,
        tp,
        ep: get("ep", 1)?,
        pp: get("pp", 1)?,
        ga: get("ga", 1)?,
        all_gpus: get(
            "all_gpus",
            *kv.get("all_gpus")
                .ok_or_else(|| err(1, "all_gpus", "missing"))?,
        )?,
        pp_comm: kv.get("pp_comm").copied().unwrap_or(0),
        layers: Vec::new(),
    };
    let (n_line, count) = lines
        .next()
        .ok_or_else(|| err(2, "layers", "missing: the number of layer lines"))?;
    let count = number(n_line, "layers", Some(count.trim()))? as usize;
    let mut w = w_head;
    for (n, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        if w.layers.len() == count {
            return Err(err(
                n,
                "layers",
                format!("more layer lines than the {count} line 2 announces"),
            ));
        }
        let mut f = l.split_whitespace();
        let name = f.next().unwrap_or_default().to_string();
        let _dependency = f.next().ok_or_else(|| err(n, "dependency", "missing"))?;
        let mut phase = |what: &str, default: Group| -> Result<LayerPass, ParseError> {
            let compute = number(n, &format!("{what}_compute"), f.next())?;
            let kind = f
                .next()
                .ok_or_else(|| err(n, &format!("{what}_comm_type"), "missing"))?;
            let c = collective(n, &format!("{what}_comm_type"), kind, default)?;
            let bytes = number(n, &format!("{what}_comm_size"), f.next())?;
            Ok(LayerPass {
                compute,
                comm: c.map(|(op, group)| Comm { op, group, bytes }),
            })
        };
        let fwd = phase("fwd", Group::Tp)?;
        let ig = phase("ig", Group::Tp)?;
        let wg = phase("wg", Group::Dp)?;
        let update = number(n, "update_time", f.next())?;
        w.layers.push(Layer {
            name,
            fwd,
            ig,
            wg,
            update,
        });
    }
    if w.layers.len() != count {
        return Err(err(
            n_line,
            "layers",
            format!(
                "line 2 announces {count} layer lines, the file has {}",
                w.layers.len()
            ),
        ));
    }
    Ok(w)
}

impl SimaiWorkload {
    /// Data parallelism: the GPUs over TP x PP.
    pub fn dp(&self) -> u32 {
        self.all_gpus / self.tp.saturating_mul(self.pp).max(1)
    }

    /// Checks that the header's layout runs on a cluster of `gpus` GPUs: no more GPUs than it has,
    /// GPUs that split into TP x PP, and EP dividing the data parallelism. Errors name the header
    /// field (line 1).
    pub fn check_fits(&self, gpus: u64) -> Result<(), ParseError> {
        let bad = |field: &str, message: String| Err(err(1, field, message));
        if u64::from(self.all_gpus) > gpus {
            return bad(
                "all_gpus",
                format!(
                    "{} GPUs but the design has {gpus}; valid: at most {gpus} (set --servers)",
                    self.all_gpus
                ),
            );
        }
        let tp_pp = u64::from(self.tp) * u64::from(self.pp);
        if !u64::from(self.all_gpus).is_multiple_of(tp_pp) {
            return bad(
                "all_gpus",
                format!(
                    "{} GPUs do not split into model_parallel_NPU_group x pp = {tp_pp}",
                    self.all_gpus
                ),
            );
        }
        if !self.dp().is_multiple_of(self.ep) {
            return bad(
                "ep",
                format!(
                    "{}: valid: a divisor of the data parallelism {}",
                    self.ep,
                    self.dp()
                ),
            );
        }
        Ok(())
    }

    /// Tokens one step trains on, which the file does not carry: sequences of `seq` tokens in
    /// micro-batches of `micro_batch`, one per gradient-accumulation step and data-parallel rank;
    /// `None` without a sequence length. The error names the flag out of range.
    pub fn tokens_per_step(
        &self,
        seq: Option<u64>,
        micro_batch: u64,
    ) -> Result<Option<u64>, LayoutError> {
        if let Some(seq) = seq {
            if !(1..=MAX_SEQ).contains(&seq) {
                return Err(LayoutError {
                    field: "seq",
                    message: format!("{seq} tokens; valid: 1 to {MAX_SEQ}"),
                });
            }
        }
        if !(1..=MAX_MICRO_BATCH).contains(&micro_batch) {
            return Err(LayoutError {
                field: "micro-batch",
                message: format!("{micro_batch} sequences; valid: 1 to {MAX_MICRO_BATCH}"),
            });
        }
        Ok(seq.map(|seq| {
            seq.saturating_mul(micro_batch)
                .saturating_mul(u64::from(self.ga))
                .saturating_mul(u64::from(self.dp()))
        }))
    }

    /// The workload's rank groups, placed as Megatron places them.
    pub fn groups(&self) -> Groups {
        Parallelism {
            tp: self.tp,
            pp: self.pp,
            dp: self.dp(),
            ep: self.ep,
            cp: 1,
            // Groups do not depend on the batch; the file does not carry it.
            seq: 1,
            micro_batch: 1,
            global_batch: u64::from(self.dp()) * u64::from(self.ga),
            zero: 1,
            recompute: false,
            grad_bf16: false,
            stage_layers: Vec::new(),
            vp: 1,
            schedule: Default::default(),
            recompute_modules: Default::default(),
            fp8_params: false,
            fp8_activations: false,
            bf16_moments: false,
            etp: None,
        }
        .groups()
    }
}

/// The groups of `g` for `group`.
fn group_sets(g: &Groups, group: Group) -> Vec<Vec<u32>> {
    match group {
        Group::Tp => g.tp.clone(),
        Group::Dp => g.dp.clone(),
        Group::Ep => g.ep.clone(),
        Group::DpEp => g.edp.clone(),
    }
}

/// Replays `w` on the fabric behind `timer`: astra-sim's transformer loop with every collective
/// timed by `timer`. `tokens` per step, when known, gives tokens per second (0 otherwise); MFU is
/// left at 0: the file carries no model to count FLOPs from.
pub fn replay(
    w: &SimaiWorkload,
    timer: &dyn CommTimer,
    tokens: Option<u64>,
) -> Result<Breakdown, CollectiveError> {
    let groups = w.groups();
    let mut sets: HashMap<Group, Vec<Vec<u32>>> = HashMap::new();
    // Seconds and bytes per network tier of each distinct collective, and the step's traffic.
    type Timed = (f64, BTreeMap<String, f64>);
    let mut cache: HashMap<(Op, Group, u64), Timed> = HashMap::new();
    let mut traffic: BTreeMap<String, f64> = BTreeMap::new();
    let mut time = |c: Comm| -> Result<f64, CollectiveError> {
        if c.bytes == 0 {
            return Ok(0.0);
        }
        let key = (c.op, c.group, c.bytes);
        let (t, tiers) = match cache.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let set = sets
                    .entry(c.group)
                    .or_insert_with(|| group_sets(&groups, c.group));
                e.insert(if set.first().is_none_or(|g| g.len() < 2) {
                    (0.0, BTreeMap::new())
                } else {
                    (
                        timer.seconds(c.op, set, c.bytes)?,
                        timer.tier_bytes(c.op, set, c.bytes)?,
                    )
                })
            }
        };
        for (tier, b) in tiers {
            *traffic.entry(tier.clone()).or_default() += *b;
        }
        Ok(*t)
    };
    let mut b = Breakdown {
        compute_s: 0.0,
        tensor_parallel_s: 0.0,
        expert_parallel_s: 0.0,
        expert_parallel_total_s: None,
        pipeline_parallel_s: 0.0,
        context_parallel_s: None,
        data_parallel_exposed_s: 0.0,
        data_parallel_total_s: 0.0,
        pipeline_bubble_s: 0.0,
        optimizer_s: 0.0,
        compute_efficiency: 0.0,
        step_time_s: 0.0,
        tokens_per_s: 0.0,
        mfu: 0.0,
        microbatches: u64::from(w.ga),
        network_bytes_per_tier: BTreeMap::new(),
        model_state_bytes_per_gpu: 0.0,
        activation_bytes_per_gpu: 0.0,
        memory_bytes_per_gpu: 0.0,
        operations: Vec::new(),
    };
    // The blocking timeline (compute and blocking collectives) and the data-parallel stream.
    let mut now = 0.0f64;
    // Runs a phase's compute; a blocking collective then runs before the timeline goes on, a
    // non-blocking one is returned with its time for the stream.
    let mut phase = |b: &mut Breakdown,
                     now: &mut f64,
                     p: &LayerPass,
                     blocking: bool|
     -> Result<Option<f64>, CollectiveError> {
        let c = p.compute as f64 * TICK_S;
        b.compute_s += c;
        *now += c;
        let Some(comm) = p.comm else {
            return Ok(None);
        };
        let t = time(comm)?;
        if !blocking {
            return Ok(Some(t));
        }
        match comm.group {
            Group::Tp => b.tensor_parallel_s += t,
            Group::Ep => b.expert_parallel_s += t,
            Group::Dp | Group::DpEp => {
                b.data_parallel_exposed_s += t;
                b.data_parallel_total_s += t;
            }
        }
        *now += t;
        Ok(None)
    };
    for l in &w.layers {
        phase(&mut b, &mut now, &l.fwd, true)?;
    }
    let mut stream_free = 0.0f64;
    let mut stream_busy = 0.0f64;
    for l in w.layers.iter().rev() {
        phase(&mut b, &mut now, &l.ig, true)?;
        if let Some(t) = phase(&mut b, &mut now, &l.wg, false)? {
            let t = t + l.update as f64 * TICK_S;
            stream_free = stream_free.max(now) + t;
            stream_busy += t;
        }
    }
    let stage = now;
    let exposed_stream = (stream_free - now).max(0.0);
    b.data_parallel_total_s += stream_busy;
    b.data_parallel_exposed_s += exposed_stream;
    if w.pp > 1 {
        let (pairs, back) = groups.stage_boundaries();
        let ga = f64::from(w.ga.max(1));
        if w.pp_comm > 0 {
            let send = timer.seconds(Op::SendRecv, &pairs, w.pp_comm)?;
            b.pipeline_parallel_s = 2.0 * ga * send;
            for set in [&pairs, &back] {
                for (tier, x) in timer.tier_bytes(Op::SendRecv, set, w.pp_comm)? {
                    *traffic.entry(tier).or_default() += x * ga;
                }
            }
        }
        let slot = (stage + b.pipeline_parallel_s) / ga;
        b.pipeline_bubble_s = f64::from(w.pp - 1) * slot;
    }
    b.step_time_s = stage + b.pipeline_parallel_s + b.pipeline_bubble_s + exposed_stream;
    if let Some(t) = tokens {
        b.tokens_per_s = t as f64 / b.step_time_s;
    }
    b.network_bytes_per_tier = traffic;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every collective at a fixed bus bandwidth (nccl-tests factors), no latency.
    use crate::step::tests::Ring;

    /// Two transformer layers on TP 2 x DP 4, written the way AICB writes them (tabs or spaces).
    const TWO_LAYERS: &str = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 4 ga: 1 all_gpus: 8 checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0
3
grads\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tREDUCESCATTER\t800000000\t100
layer_a\t-1\t2000000\tALLREDUCE\t100000000\t4000000\tALLREDUCE\t100000000\t4000000\tALLREDUCE\t400000000\t100
layer_b   -1 2000000 ALLGATHER_EP 100000000 4000000 NONE 0 4000000 ALLREDUCE 400000000 100
";

    /// The header against a cluster: more GPUs than it has, GPUs that do not split into TP x PP,
    /// EP not dividing DP; and tokens per step from a sequence length the file does not carry.
    #[test]
    fn fits_a_cluster_and_counts_tokens() {
        let w = parse(TWO_LAYERS).unwrap();
        assert_eq!(w.check_fits(8), Ok(()));
        let e = w.check_fits(4).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "all_gpus"));
        let odd = SimaiWorkload {
            all_gpus: 6,
            tp: 4,
            ..w.clone()
        };
        assert_eq!(odd.check_fits(8).unwrap_err().field, "all_gpus");
        let ep = SimaiWorkload { ep: 3, ..w.clone() };
        assert_eq!(ep.check_fits(8).unwrap_err().field, "ep");
        // seq 4096 x micro-batch 2 x ga 1 x dp 4.
        assert_eq!(w.tokens_per_step(Some(4096), 2), Ok(Some(4096 * 2 * 4)));
        assert_eq!(w.tokens_per_step(None, 2), Ok(None));
        assert_eq!(w.tokens_per_step(Some(0), 1).unwrap_err().field, "seq");
        assert_eq!(w.tokens_per_step(None, 0).unwrap_err().field, "micro-batch");
    }

    #[test]
    fn parses_the_header_and_the_layers() {
        let w = parse(TWO_LAYERS).unwrap();
        assert_eq!(
            (w.tp, w.ep, w.pp, w.ga, w.all_gpus, w.dp()),
            (2, 1, 1, 1, 8, 4)
        );
        assert_eq!(w.layers.len(), 3);
        let a = &w.layers[1];
        assert_eq!(a.name, "layer_a");
        assert_eq!(a.fwd.compute, 2_000_000);
        assert_eq!(
            a.fwd.comm,
            Some(Comm {
                op: Op::AllReduce,
                group: Group::Tp,
                bytes: 100_000_000
            })
        );
        // Weight-gradient collectives default to the data-parallel group; suffixes override.
        assert_eq!(a.wg.comm.unwrap().group, Group::Dp);
        assert_eq!(w.layers[2].fwd.comm.unwrap().group, Group::Ep);
        assert_eq!(w.layers[2].ig.comm, None);
        assert_eq!(a.update, 100);
        // SimAI also reads `pp_comm` without its colon.
        let w = parse(&TWO_LAYERS.replace("pp_comm: 0", "pp_comm 4096")).unwrap();
        assert_eq!(w.pp_comm, 4096);
    }

    #[test]
    fn bad_files_name_the_line_and_field() {
        let bad = |text: &str| parse(text).unwrap_err();
        let e = bad(&TWO_LAYERS.replace("ALLGATHER_EP", "ALLSCATTER"));
        assert_eq!((e.line, e.field.as_str()), (5, "fwd_comm_type"));
        assert!(e.message.contains("ALLREDUCE"), "{e}");
        let e = bad(&TWO_LAYERS.replacen("\n3\n", "\n4\n", 1));
        assert_eq!((e.line, e.field.as_str()), (2, "layers"));
        let e = bad(&TWO_LAYERS.replace("4000000 NONE 0 4000000", "4000000 NONE 0"));
        assert_eq!(e.line, 5);
        let e = bad(&TWO_LAYERS.replace("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "DATA"));
        assert_eq!((e.line, e.field.as_str()), (1, "policy"));
        let e = bad(&TWO_LAYERS.replace("checkpoints: 0", "checkpoints: 1 3"));
        assert_eq!(e.field, "checkpoints");
        let e = bad(&TWO_LAYERS.replace("2000000\tALLREDUCE", "2.5\tALLREDUCE"));
        assert_eq!((e.line, e.field.as_str()), (4, "fwd_compute"));
    }

    /// The timeline by hand, at 100 GB/s busbw (1 tick = 1 ns). Forward: grads 1 ns; layer_a 2 ms
    /// plus its TP all-reduce of 100 MB in groups of 2 (1 ms); layer_b 2 ms + an all-gather in EP
    /// groups of 1 (free): 5 ms + 1 ns. Backward from the last layer: layer_b 4 ms ig, 4 ms wg,
    /// then its DP all-reduce of 400 MB on 4 ranks (6 ms) + 100 ns update runs 13-19 ms; layer_a
    /// 4 ms ig, 1 ms TP, 4 ms wg ends at 22 ms + 1 ns, its all-reduce runs to 28 ms + 101 ns;
    /// grads' ticks end the compute at 22 ms + 3 ns, its 800 MB reduce-scatter (6 ms) queues
    /// behind and ends the step at 34 ms + 201 ns.
    #[test]
    fn replays_astra_sims_loop_by_hand() {
        let w = parse(TWO_LAYERS).unwrap();
        let b = replay(&w, &Ring { busbw: 100e9 }, Some(8 * 4096)).unwrap();
        let (ms, ns) = (1e-3, 1e-9);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(b.compute_s, 20.0 * ms + 3.0 * ns), "{}", b.compute_s);
        assert!(close(b.tensor_parallel_s, 2.0 * ms));
        assert!(close(b.step_time_s, 34.0 * ms + 201.0 * ns), "{b:?}");
        assert!(close(b.data_parallel_exposed_s, 12.0 * ms + 198.0 * ns));
        assert!(close(b.data_parallel_total_s, 18.0 * ms + 300.0 * ns));
        assert!(close(b.tokens_per_s, 8.0 * 4096.0 / b.step_time_s));
    }

    /// Pipeline stages add the 1F1B bubble and the boundary sends.
    #[test]
    fn pipelines_add_the_bubble_and_the_sends() {
        let text = TWO_LAYERS
            .replace("pp: 1", "pp: 2")
            .replace("ga: 1", "ga: 4")
            .replace("pp_comm: 0", "pp_comm: 50000000");
        let w = parse(&text).unwrap();
        assert_eq!(w.dp(), 2);
        let b = replay(&w, &Ring { busbw: 100e9 }, None).unwrap();
        // 2 x ga sends of 50 MB at 100 GB/s.
        assert!((b.pipeline_parallel_s - 8.0 * 0.5e-3).abs() < 1e-12);
        let stage = b.compute_s + b.tensor_parallel_s;
        let slot = (stage + b.pipeline_parallel_s) / 4.0;
        assert!((b.pipeline_bubble_s - slot).abs() < 1e-12);
        assert_eq!(b.tokens_per_s, 0.0);
    }
}
