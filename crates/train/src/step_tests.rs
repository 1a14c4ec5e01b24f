//! Unit tests of [`crate::step`].

use super::*;

/// The flat model at 0.5 of the peak: the formulas these tests check are FLOP counts.
pub(crate) fn flat() -> StepConfig {
    StepConfig {
        compute_efficiency: Some(0.5),
        ..StepConfig::default()
    }
}

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

use crate::fixtures::megatron;
pub(crate) use crate::fixtures::pure_dp;

/// Megatron-LM's default with BF16 parameters: FP32 gradients, 18 bytes a parameter without
/// ZeRO and 6 + 12/d with the distributed optimizer (`theoretical_memory_usage.py`), reduced
/// at 4 bytes a value and gathered at 2; `--grad-reduce-in-bf16` gives the ZeRO paper's 16.
#[test]
fn gradients_are_fp32_unless_asked() {
    let model = Model::preset("llama3-8b").unwrap();
    let psi = model.params() as f64;
    let fp32 = |zero| Parallelism {
        grad_bf16: false,
        ..pure_dp(64, zero)
    };
    assert_eq!(fp32(0).grad_bytes(), 4);
    assert_eq!(model_state_bytes(&model, &fp32(0)), 18.0 * psi);
    let z1 = model_state_bytes(&model, &fp32(1));
    assert!((z1 - (6.0 + 12.0 / 64.0) * psi).abs() < 1e-6 * z1);
    assert_eq!(model_state_bytes(&model, &pure_dp(64, 0)), 16.0 * psi);
    let cfg = flat();
    let timer = Ring { busbw: 50e9 };
    let ops = |par: &Parallelism| {
        let b = step(&model, par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
        b.operations
            .iter()
            .filter(|o| o.role == "data-parallel")
            .map(|o| (o.collective, o.bytes))
            .collect::<Vec<_>>()
    };
    let (f, h) = (ops(&fp32(1)), ops(&pure_dp(64, 1)));
    let params = model.params();
    assert_eq!(
        f,
        [(Op::ReduceScatter, 4 * params), (Op::AllGather, 2 * params)]
    );
    assert_eq!(
        h,
        [(Op::ReduceScatter, 2 * params), (Op::AllGather, 2 * params)]
    );
}

/// Pure data parallelism without overlap spends 2(n-1)/n x gradient bytes / busbw communicating,
/// whether the gradients are all-reduced (ZeRO-0) or reduce-scattered and all-gathered (ZeRO-1).
#[test]
fn pure_data_parallel_without_overlap_is_the_all_reduce_formula() {
    let model = Model::preset("llama3-8b").unwrap();
    let cfg = StepConfig {
        dp_overlap: false,
        ..flat()
    };
    let busbw = 100e9;
    for zero in [0, 1] {
        let n = 16;
        let b = step(
            &model,
            &pure_dp(n, zero),
            Peaks::bf16(989.0),
            &cfg,
            &Ring { busbw },
        )
        .unwrap();
        let grads = (model.params() * BYTES_PER_VALUE) as f64;
        let expect = 2.0 * f64::from(n - 1) / f64::from(n) * grads / busbw;
        assert!(
            (b.data_parallel_exposed_s - expect).abs() / expect < 1e-12,
            "zero {zero}"
        );
        assert!((b.step_time_s - b.compute_s - expect).abs() < 1e-12);
    }
}

/// Sharded gradients are reduce-scattered after every micro-batch: with m micro-batches per
/// step, ZeRO-2 runs m reduce-scatters and one all-gather of the updated weights, ZeRO-3 m
/// reduce-scatters and 2m all-gathers (one per forward and backward pass), ZeRO-1 one of
/// each (its gradients are whole until the step). Each moves (n-1)/n of the gradient bytes.
#[test]
fn sharded_gradients_are_reduced_every_micro_batch() {
    let model = Model::preset("llama3-8b").unwrap();
    let cfg = StepConfig {
        dp_overlap: false,
        ..flat()
    };
    let busbw = 100e9;
    let n = 16;
    let one = f64::from(n - 1) / f64::from(n) * (model.params() * BYTES_PER_VALUE) as f64 / busbw;
    for (zero, ops) in [(1, 2.0), (2, 4.0 + 1.0), (3, 4.0 + 8.0)] {
        let mut par = pure_dp(n, zero);
        par.global_batch = 4 * u64::from(n);
        let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &Ring { busbw }).unwrap();
        assert_eq!(b.microbatches, 4);
        let expect = ops * one;
        assert!(
            (b.data_parallel_total_s - expect).abs() / expect < 1e-12,
            "zero {zero}: {} vs {expect}",
            b.data_parallel_total_s
        );
    }
}

/// With expert parallelism, the routed experts' gradients (1/ep of them per rank) are all-reduced
/// among the dp/ep ranks that hold the same experts; the rest over all dp ranks.
#[test]
fn expert_gradients_reduce_over_expert_data_parallel_groups() {
    let model = Model::preset("mixtral-8x7b").unwrap();
    let cfg = StepConfig {
        dp_overlap: false,
        ..flat()
    };
    let busbw = 100e9;
    let mut par = pure_dp(16, 0);
    par.ep = 8;
    let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &Ring { busbw }).unwrap();
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
        global_batch: 64,
        grad_bf16: true,
        ..megatron(8, 4, 4)
    };
    let timer = Ring { busbw: 40e9 };
    let with = step(&model, &par, Peaks::bf16(989.0), &flat(), &timer).unwrap();
    let without = step(
        &model,
        &par,
        Peaks::bf16(989.0),
        &StepConfig {
            dp_overlap: false,
            ..flat()
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

fn llama405b_pp16(stage_layers: Vec<u64>) -> Parallelism {
    Parallelism {
        global_batch: 32,
        zero: 0,
        grad_bf16: true,
        stage_layers,
        ..megatron(8, 16, 1)
    }
}

/// Llama 3 405B's published split (7, 8 x 14, 7 layers): a slot is the slowest stage's, 8
/// layers of compute (8 x 16 / 126 of an even stage's) and 4 x 8 tensor-parallel all-reduces
/// of the activations, plus the pipeline sends; 1F1B runs (m + pp - 1) slots.
#[test]
fn uneven_stages_run_at_the_slowest_stage() {
    let model = Model::preset("llama3-405b").unwrap();
    let mut stages = vec![8u64; 16];
    stages[0] = 7;
    stages[15] = 7;
    let par = llama405b_pp16(stages);
    let busbw = 100e9;
    let cfg = flat();
    let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &Ring { busbw }).unwrap();
    let tokens = 8192.0;
    let even = model.train_flops_per_token(8192, false) * tokens
        / (8.0 * 16.0)
        / (989e12 * cfg.compute_efficiency.unwrap());
    let compute = even * 8.0 * 16.0 / 126.0;
    let activation = tokens * model.hidden as f64 * 2.0;
    let tp = 4.0 * 8.0 * (2.0 * 7.0 / 8.0 * activation / busbw);
    let send = 2.0 * activation / 8.0 / busbw;
    let slot = compute + tp + send;
    let m = 32.0;
    let close = |a: f64, b: f64| (a - b).abs() / b < 1e-12;
    assert!(
        close(b.compute_s, m * compute),
        "{} vs {}",
        b.compute_s,
        m * compute
    );
    assert!(close(b.tensor_parallel_s, m * tp));
    assert!(close(b.pipeline_bubble_s, 15.0 * slot));
    assert!(close(b.step_time_s, (m + 15.0) * slot));
    // The model state of the fullest stage: a middle one's 8 layers (the ends' 7 layers and
    // the 2.1 B embedding or output layer come to less), over the 8 tensor-parallel ranks.
    let layer = (model.params() - 2 * model.vocab * model.hidden) as f64 / 126.0;
    assert!(close(b.model_state_bytes_per_gpu, 16.0 * 8.0 * layer / 8.0));
}

/// An even split given as a list is the even split: the same step, bit for bit.
#[test]
fn an_even_list_is_the_even_split() {
    let model = Model::preset("llama3-70b").unwrap();
    let mut par = llama405b_pp16(Vec::new());
    par.pp = 4;
    let timer = Ring { busbw: 50e9 };
    let cfg = flat();
    let even = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    par.stage_layers = vec![20; 4];
    let listed = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    assert_eq!(even, listed);
}

/// FP8 runs the linear layers' GEMMs at the FP8 peak and the rest at BF16, at one efficiency;
/// MFU is against the FP8 peak. A GPU without an FP8 peak is refused.
#[test]
fn fp8_runs_the_linear_layers_at_the_fp8_peak() {
    let model = Model::preset("llama3-70b").unwrap();
    let mut par = pure_dp(8, 1);
    par.seq = 8192;
    let timer = Ring { busbw: 1e15 };
    let cfg = StepConfig {
        precision: Precision::Fp8,
        ..flat()
    };
    let peaks = Peaks {
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
    };
    let b = step(&model, &par, peaks, &cfg, &timer).unwrap();
    let (linear, rest) = model.train_flops_split(8192, false);
    assert!(
        ((linear + rest) - model.train_flops_per_token(8192, false)).abs() / (linear + rest)
            < 1e-12
    );
    let eff = cfg.compute_efficiency.unwrap();
    let per_mb = 8192.0 * (linear / (1979e12 * eff) + rest / (989e12 * eff));
    let m = b.microbatches as f64;
    assert!((b.compute_s - m * per_mb).abs() / (m * per_mb) < 1e-12);
    let bf16 = step(&model, &par, peaks, &flat(), &timer).unwrap();
    // Faster than BF16, slower than twice as fast (attention and the output layer stay BF16).
    assert!(b.compute_s < bf16.compute_s && 2.0 * b.compute_s > bf16.compute_s);
    let mfu = model.train_flops_per_token(8192, false) * b.tokens_per_s / (8.0 * 1979e12);
    assert!((b.mfu - mfu).abs() < 1e-12);
    assert_eq!(
        step(&model, &par, Peaks::bf16(312.0), &cfg, &timer).unwrap_err(),
        StepError::NoFp8
    );
}

fn mixtral_ep8() -> Parallelism {
    let mut par = pure_dp(16, 1);
    par.ep = 8;
    par.seq = 4096;
    par
}

/// FP8 dispatch: of a MoE layer's four all-to-alls, the two dispatches carry 1 + 4/128 bytes a
/// value instead of 2; on a timer linear in bytes the expert time is (2 + 2 x 33/64) / 4 of
/// BF16's.
#[test]
fn fp8_dispatch_shrinks_the_two_dispatches() {
    let model = Model::preset("mixtral-8x7b").unwrap();
    let par = mixtral_ep8();
    let timer = Ring { busbw: 50e9 };
    let peaks = Peaks {
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
    };
    let fp8 = StepConfig {
        precision: Precision::Fp8,
        ..flat()
    };
    let plain = step(&model, &par, peaks, &fp8, &timer).unwrap();
    let dispatch = step(
        &model,
        &par,
        peaks,
        &StepConfig {
            fp8_dispatch: true,
            ..fp8
        },
        &timer,
    )
    .unwrap();
    let ratio = dispatch.expert_parallel_s / plain.expert_parallel_s;
    assert!(
        (ratio - (2.0 + 2.0 * 33.0 / 64.0) / 4.0).abs() < 1e-12,
        "{ratio}"
    );
    // Without FP8 compute there is no FP8 dispatch.
    let bf16 = StepConfig {
        fp8_dispatch: true,
        ..flat()
    };
    let b = step(&model, &par, peaks, &bf16, &timer).unwrap();
    let base = step(&model, &par, peaks, &flat(), &timer).unwrap();
    assert_eq!(b.expert_parallel_s, base.expert_parallel_s);
}

/// Expert overlap hides a micro-batch's all-to-all up to its compute: exposed = max(0, a2a -
/// compute), all of it when the network is fast, the difference when it is slow.
#[test]
fn ep_overlap_hides_all_to_all_up_to_compute() {
    let model = Model::preset("mixtral-8x7b").unwrap();
    let par = mixtral_ep8();
    let on = StepConfig {
        ep_overlap: true,
        ..flat()
    };
    for busbw in [1e9, 1e12] {
        let timer = Ring { busbw };
        let off = step(&model, &par, Peaks::bf16(989.0), &flat(), &timer).unwrap();
        let b = step(&model, &par, Peaks::bf16(989.0), &on, &timer).unwrap();
        assert_eq!(off.expert_parallel_total_s, None);
        assert_eq!(b.expert_parallel_total_s, Some(off.expert_parallel_s));
        let expect = (off.expert_parallel_s - off.compute_s).max(0.0);
        assert!((b.expert_parallel_s - expect).abs() <= 1e-12 * off.expert_parallel_s);
        assert!(b.step_time_s <= off.step_time_s);
        assert_eq!(b.compute_s, off.compute_s);
    }
}

/// GPT-3's tied embeddings on two stages: one all-reduce a step of the embedding's gradient
/// share (vocab x hidden / tp, BF16) between the first and the last stage, a pair for every
/// tensor- and data-parallel rank, exposed; none on one stage or with untied embeddings.
#[test]
fn tied_embeddings_on_two_stages_sum_their_gradients() {
    let model = Model::preset("gpt3-175b").unwrap();
    assert!(model.tied_embeddings);
    let mut par = llama405b_pp16(Vec::new());
    (par.tp, par.pp, par.dp, par.seq, par.global_batch) = (4, 8, 2, 2048, 64);
    let timer = Ring { busbw: 50e9 };
    let cfg = flat();
    let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    let tied: Vec<&Operation> = b
        .operations
        .iter()
        .filter(|o| o.role == "embedding-gradient")
        .collect();
    assert_eq!(tied.len(), 1);
    let bytes = model.vocab * model.hidden / 4 * 2;
    let o = tied[0];
    assert_eq!(
        (
            o.collective,
            o.groups,
            o.ranks_per_group,
            o.bytes,
            o.calls_per_step
        ),
        (Op::AllReduce, 8, 2, bytes, 1.0)
    );
    // A ring all-reduce on two ranks moves the buffer once: 2 (n - 1) / n = 1.
    let want = bytes as f64 / 50e9;
    assert!((o.seconds_per_call - want).abs() < 1e-12 * want);
    // Exposed: the step is longer by it than the same model untied.
    let untied = Model {
        tied_embeddings: false,
        ..model.clone()
    };
    let u = step(&untied, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    assert!(u.operations.iter().all(|o| o.role != "embedding-gradient"));
    // Untied, the last stage holds the output layer instead of the copy: the same bytes.
    let more = b.data_parallel_exposed_s - u.data_parallel_exposed_s;
    assert!((more - want).abs() < 1e-9 * want, "{more} vs {want}");
    assert!((b.step_time_s - u.step_time_s - want).abs() < 1e-9 * b.step_time_s);
    par.pp = 1;
    par.dp = 16;
    let one = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    assert!(one
        .operations
        .iter()
        .all(|o| o.role != "embedding-gradient"));
}

/// Interleaved 1F1B (Narayanan et al., SC'21, section 2.2.2): with v model chunks per stage the
/// bubble is (pp - 1) / v slots and each micro-batch crosses every stage boundary v times; as
/// Megatron-LM overlaps them (`overlap_p2p_comm`), only the first stage's 2 (pp - 1) + (v - 1) pp
/// warm-up and as many cool-down sends block: 14 + 88 = 102 of each direction's 768 here, the
/// steady ones hidden under chunks far longer than a send.
#[test]
fn interleaving_divides_the_bubble_and_multiplies_the_sends() {
    let model = Model::preset("gpt3-175b").unwrap();
    let mut par = llama405b_pp16(Vec::new());
    par.tp = 4;
    par.pp = 8;
    par.seq = 2048;
    par.global_batch = 64;
    let timer = Ring { busbw: 50e9 };
    let cfg = flat();
    let plain = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    par.vp = 12;
    let b = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    let m = 64.0;
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-30);
    assert!(close(b.compute_s, plain.compute_s));
    assert!(close(
        b.pipeline_parallel_s,
        102.0 / 64.0 * plain.pipeline_parallel_s
    ));
    let slot = (b.compute_s + b.tensor_parallel_s + b.pipeline_parallel_s) / m;
    assert!(close(b.pipeline_bubble_s, 7.0 * slot / 12.0));
    assert!(close(
        b.step_time_s,
        m * slot + 7.0 * slot / 12.0 + b.data_parallel_exposed_s
    ));
    assert!(b.step_time_s < plain.step_time_s);
}

/// A send longer than the chunk it hides under: the steady phase exposes what sticks out,
/// 2 s - (F + B) / v a chunk pair, on top of the blocking warm-up and cool-down sends. Without
/// virtual stages Megatron-LM does not overlap (arguments.py sets `overlap_p2p_comm` false).
#[test]
fn interleaved_sends_hide_under_their_chunks_up_to_the_chunk() {
    let model = Model::preset("gpt3-175b").unwrap();
    let mut par = llama405b_pp16(Vec::new());
    (par.tp, par.pp, par.seq, par.global_batch, par.vp) = (4, 8, 2048, 64, 12);
    // 12,582,912 bytes a send at 1 GB/s: 12.6 ms, longer than a chunk's forward and backward.
    let timer = Ring { busbw: 1e9 };
    let b = step(&model, &par, Peaks::bf16(989.0), &flat(), &timer).unwrap();
    let s = 2048.0 * 12288.0 * 2.0 / 4.0 / 1e9;
    let (m, runs, blocking) = (64.0, 768.0, 102.0);
    let chunk = b.compute_s / m / 12.0;
    assert!(s > chunk);
    let want = 2.0 * blocking * s + (runs - blocking) * (2.0 * s - chunk);
    assert!((b.pipeline_parallel_s - want).abs() <= 1e-9 * want);
    // Asynchronous warm-up and cool-down: only the fill's 7 hops and the 11 wraps' 8 sends each
    // wait, 95 a direction instead of 102 (the rest hide as the steady ones do).
    let cfg = StepConfig {
        overlap_p2p_warmup_flush: true,
        ..flat()
    };
    let a = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    let want = 2.0 * 95.0 * s + (runs - 95.0) * (2.0 * s - chunk);
    assert!((a.pipeline_parallel_s - want).abs() <= 1e-9 * want);
    par.vp = 1;
    let plain = step(&model, &par, Peaks::bf16(989.0), &flat(), &timer).unwrap();
    assert!((plain.pipeline_parallel_s - 2.0 * m * s).abs() <= 1e-9 * plain.pipeline_parallel_s);
    let plain_async = step(&model, &par, Peaks::bf16(989.0), &cfg, &timer).unwrap();
    assert_eq!(plain_async.pipeline_parallel_s, plain.pipeline_parallel_s);
}

/// Context parallelism splits every micro-batch's tokens: on the same 16 GPUs, TP 8 x CP 2
/// computes half a micro-batch's tokens per rank where TP 8 x DP 2 computes a whole one;
/// the ring passes 3 (cp - 1) blocks of K and V per layer and only what attention does not
/// cover is exposed; ZeRO shards over data and context ranks together.
#[test]
fn context_parallelism_splits_the_sequence_and_rings_keys_and_values() {
    let model = Model::preset("llama3-70b").unwrap();
    let cfg = StepConfig {
        dp_overlap: false,
        ..flat()
    };
    let base = Parallelism {
        global_batch: 16,
        grad_bf16: true,
        ..megatron(8, 1, 2)
    };
    let cp2 = Parallelism {
        dp: 1,
        cp: 2,
        global_batch: 8,
        ..base.clone()
    };
    assert_eq!(base.world(), cp2.world());
    let peaks = Peaks::bf16(989.0);
    // A fast network: the ring hides under attention.
    let fast = Ring { busbw: 1e15 };
    let a = step(&model, &base, peaks, &cfg, &fast).unwrap();
    let b = step(&model, &cp2, peaks, &cfg, &fast).unwrap();
    assert_eq!((a.microbatches, b.microbatches), (8, 8));
    assert!(
        (b.compute_s / a.compute_s - 0.5).abs() < 1e-12,
        "{} {}",
        a.compute_s,
        b.compute_s
    );
    assert_eq!(a.context_parallel_s, None);
    assert_eq!(b.context_parallel_s, Some(0.0));
    // A slow network: the ring is exposed, by what attention does not cover.
    let slow = Ring { busbw: 1e8 };
    let c = step(&model, &cp2, peaks, &cfg, &slow).unwrap();
    let head_dim = model.hidden / model.heads;
    let block = 2 * 4096 * (model.kv_heads / 8) * head_dim * BYTES_PER_VALUE;
    let ring = 3.0 * block as f64 / 1e8;
    let attention = 12.0 * (8192 * model.hidden) as f64 * 4096.0 / 8.0 / (989e12 * 0.5);
    let want = 8.0 * model.layers as f64 * (ring - attention);
    let got = c.context_parallel_s.unwrap();
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
    // ZeRO-1 shards the optimizer over dp x cp = 2 ranks in both layouts.
    assert_eq!(
        model_state_bytes(&model, &base),
        model_state_bytes(&model, &cp2)
    );
}

/// The schedules on one layout: zero-bubble and DualPipe idle less than 1F1B and run the same
/// micro-batches (the busy part, compute and exposed communication, is the same); 126 layers of
/// Llama 3 405B on 8 stages of 8 uneven chunks (16 or 15 layers a stage) idle as two-layer chunks do.
#[test]
fn schedules_shrink_the_bubble_as_published() {
    let model = Model::preset("llama3-405b").unwrap();
    let timer = Ring { busbw: 50e9 };
    let mut par = llama405b_pp16(Vec::new());
    par.pp = 8;
    par.stage_layers = vec![16, 16, 16, 16, 16, 16, 15, 15];
    let run = |p: &Parallelism| step(&model, p, Peaks::bf16(989.0), &flat(), &timer).unwrap();
    let one = run(&par);
    let zb = run(&Parallelism {
        schedule: Schedule::ZeroBubble,
        ..par.clone()
    });
    let dual = run(&Parallelism {
        schedule: Schedule::Dualpipe,
        ..par.clone()
    });
    let busy = |b: &Breakdown| b.step_time_s - b.pipeline_bubble_s - b.data_parallel_exposed_s;
    assert!((busy(&zb) - busy(&one)).abs() < 1e-9 * busy(&one));
    assert!(zb.pipeline_bubble_s < one.pipeline_bubble_s);
    assert!(dual.pipeline_bubble_s < zb.pipeline_bubble_s);
    let inter = run(&Parallelism {
        vp: 8,
        ..par.clone()
    });
    // The slowest stage (16 layers) has 8 chunks of 2: an eighth of its slot a bubble slot.
    let slot = (inter.step_time_s - inter.pipeline_bubble_s) / 32.0;
    assert!((inter.pipeline_bubble_s - 7.0 * slot / 8.0).abs() < 1e-9 * slot);
}

/// DualPipe's rank i holds stage i and stage p - 1 - i and runs half the micro-batches through
/// each (deepseek-ai/DualPipe examples/example_dualpipe.py): on two stages every rank holds the
/// whole model, so how the layers split between the stages changes neither the compute of a
/// micro-batch nor the model state; 1F1B's slowest stage is the larger one.
#[test]
fn dualpipe_ranks_hold_a_stage_and_its_mirror() {
    let model = Model::preset("llama3-8b").unwrap();
    let timer = Ring { busbw: 50e9 };
    let mut par = pure_dp(8, 1);
    par.pp = 2;
    par.dp = 4;
    par.global_batch = 64;
    let with = |layers: Vec<u64>, schedule: Schedule| {
        let p = Parallelism {
            stage_layers: layers,
            schedule,
            ..par.clone()
        };
        let b = step(&model, &p, Peaks::bf16(989.0), &flat(), &timer).unwrap();
        (b.compute_s, model_state_bytes(&model, &p))
    };
    let (even, even_state) = with(vec![16, 16], Schedule::Dualpipe);
    let (uneven, uneven_state) = with(vec![24, 8], Schedule::Dualpipe);
    assert!((even / uneven - 1.0).abs() < 1e-12, "{even} vs {uneven}");
    assert!((even_state / uneven_state - 1.0).abs() < 1e-12);
    let (one_even, _) = with(vec![16, 16], Schedule::OneFOneB);
    let (one_uneven, _) = with(vec![24, 8], Schedule::OneFOneB);
    assert!(one_uneven > one_even * 1.3);
}

/// TP overlap never slows a step and hides all but a chunk where the GEMMs cover it; FP8
/// parameter all-gathers move one byte a value.
#[test]
fn tp_overlap_and_fp8_parameter_gathers() {
    let model = Model::preset("llama3-70b").unwrap();
    let timer = Ring { busbw: 50e9 };
    let mut par = pure_dp(8, 1);
    par.tp = 8;
    par.seq = 8192;
    let peaks = Peaks {
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
    };
    let plain = step(&model, &par, peaks, &flat(), &timer).unwrap();
    let cfg = StepConfig {
        tp_overlap: true,
        ..flat()
    };
    let hidden = step(&model, &par, peaks, &cfg, &timer).unwrap();
    assert!(hidden.tensor_parallel_s <= plain.tensor_parallel_s);
    assert!(hidden.tensor_parallel_s >= plain.tensor_parallel_s / 8.0 - 1e-12);
    let gathers = |par: &Parallelism, cfg: &StepConfig| {
        step(&model, par, peaks, cfg, &timer)
            .unwrap()
            .operations
            .iter()
            .find(|o| o.collective == Op::AllGather)
            .map(|o| o.bytes)
            .unwrap()
    };
    let fp8 = StepConfig {
        precision: Precision::Fp8,
        ..flat()
    };
    let one_byte = Parallelism {
        fp8_params: true,
        fp8_activations: false,
        bf16_moments: false,
        etp: None,
        ..par.clone()
    };
    assert_eq!(2 * gathers(&one_byte, &fp8), gathers(&par, &fp8));
    // And the weights are held at one byte: the model state falls by one byte a parameter.
    let (a, b) = (
        Memory::of(&model, &par).state_bytes,
        Memory::of(&model, &one_byte).state_bytes,
    );
    assert!(
        (a - b - model.params() as f64 / 8.0).abs() < 1e-6 * a,
        "{a} {b}"
    );
}

/// By operation, a GPU without a kernel table and no flat efficiency is refused, not guessed.
#[test]
fn no_kernel_table_no_guess() {
    let model = Model::preset("llama3-8b").unwrap();
    let e = step(
        &model,
        &pure_dp(8, 1),
        Peaks::bf16(989.0),
        &StepConfig::default(),
        &Ring { busbw: 50e9 },
    );
    assert_eq!(e.unwrap_err(), StepError::NoKernels);
}

/// A [`Ring`] on servers of `per` GPUs.
struct OnServers {
    ring: Ring,
    per: u32,
}

impl CommTimer for OnServers {
    fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError> {
        self.ring.seconds(op, groups, bytes)
    }

    fn gpus_per_server(&self) -> Option<u32> {
        Some(self.per)
    }
}

/// Node-limited dispatch in the step: with DeepSeek-V3's M = 4 and an expert-parallel group of
/// 16 ranks on 2 servers of 8, each token's copies cross the network once per destination node
/// (2 here, the most there are: 2/8 of the top-8 copies' buffer) on the rails (one rank a
/// server), then go over NVLink inside each server (the whole buffer, 8 ranks); the model
/// without the limit sends the top-8 copies as one all-to-all over the 16 ranks.
#[test]
fn node_limited_dispatch_crosses_the_network_once_per_node() {
    let v3 = Model::preset("deepseek-v3").unwrap();
    let mut par = pure_dp(16, 1);
    par.ep = 16;
    par.seq = 4096;
    par.global_batch = 16;
    let timer = OnServers {
        ring: Ring { busbw: 50e9 },
        per: 8,
    };
    let peaks = Peaks::bf16(989.0);
    let ops = |m: &Model| {
        step(m, &par, peaks, &flat(), &timer)
            .unwrap()
            .operations
            .into_iter()
            .filter(|o| o.role == "expert-parallel")
            .map(|o| (o.ranks_per_group, o.groups, o.bytes))
            .collect::<Vec<_>>()
    };
    let routed = 4096 * 7168 * 2 * 8;
    assert_eq!(ops(&v3), vec![(2, 8, routed / 8 * 2), (8, 2, routed)]);
    let unlimited = Model {
        node_limit: 0,
        node_limit_source: String::new(),
        ..v3
    };
    assert_eq!(ops(&unlimited), vec![(16, 1, routed)]);
}

/// DualPipe gives 20 of 132 SMs to the all-to-all of every chunk pair it overlaps (DeepSeek-V3
/// report, sections 3.2.1 and 3.2.2): with expert parallelism its MoE layers' compute takes
/// 132/112 of the time it takes without (the flat model: the same FLOPs either way).
#[test]
fn dualpipe_compute_runs_on_the_sms_communication_leaves() {
    let model = Model::preset("mixtral-8x7b").unwrap();
    let timer = Ring { busbw: 50e9 };
    let mut par = pure_dp(8, 1);
    par.pp = 2;
    par.dp = 4;
    par.global_batch = 64;
    par.schedule = Schedule::Dualpipe;
    let compute = |ep: u32| {
        let p = Parallelism { ep, ..par.clone() };
        step(&model, &p, Peaks::bf16(989.0), &flat(), &timer)
            .unwrap()
            .compute_s
    };
    let ratio = compute(2) / compute(1);
    assert!((ratio - 132.0 / 112.0).abs() < 1e-12, "{ratio}");
}

/// DualPipe hides the pipeline sends under the paired chunk (DeepSeek-V3 report, section 3.2.1:
/// "both all-to-all and PP communication can be fully hidden"): none exposed where the chunk is
/// longer than the send, 1F1B's two a micro-batch exposed; on a slow link what outlasts the chunk.
#[test]
fn dualpipe_hides_pipeline_sends_under_the_paired_chunk() {
    let model = Model::preset("llama3-8b").unwrap();
    let mut par = pure_dp(8, 1);
    par.pp = 2;
    par.dp = 4;
    par.global_batch = 64;
    let run = |schedule: Schedule, busbw: f64| {
        let p = Parallelism {
            schedule,
            ..par.clone()
        };
        step(&model, &p, Peaks::bf16(989.0), &flat(), &Ring { busbw }).unwrap()
    };
    assert!(run(Schedule::OneFOneB, 50e9).pipeline_parallel_s > 0.0);
    assert_eq!(run(Schedule::Dualpipe, 50e9).pipeline_parallel_s, 0.0);
    let (one, dual) = (run(Schedule::OneFOneB, 1e6), run(Schedule::Dualpipe, 1e6));
    assert!(dual.pipeline_parallel_s > 0.0);
    assert!(dual.pipeline_parallel_s < one.pipeline_parallel_s);
}
