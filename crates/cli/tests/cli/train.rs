//! `railyard train`, run as the real binary: a model's step, and SimAI/AICB workload files replayed
//! on the fabric.

use serde_json::Value;
use std::path::PathBuf;

use crate::common::railyard;

fn json(args: &[&str]) -> Value {
    let o = railyard(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("--json prints JSON")
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn f(v: &Value, key: &str) -> f64 {
    v.pointer(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// The JSON contract: step_time_s, tokens_per_s and the breakdown, which adds up to the step.
#[test]
fn train_json_has_the_step_and_its_breakdown() {
    let v = json(&[
        "train",
        "--servers",
        "4",
        "--model",
        "llama3-8b",
        "--pp",
        "2",
        "--json",
    ]);
    let step = f(&v, "/step_time_s");
    assert!(step > 0.0 && f(&v, "/tokens_per_s") > 0.0);
    let parts: f64 = [
        "compute_s",
        "tensor_parallel_s",
        "expert_parallel_s",
        "pipeline_parallel_s",
        "pipeline_bubble_s",
        "data_parallel_exposed_s",
        "optimizer_s",
    ]
    .iter()
    .map(|k| f(&v, &format!("/breakdown/{k}")))
    .sum();
    assert!((parts - step).abs() < 1e-9 * step, "{parts} vs {step}");
    assert!(f(&v, "/breakdown/pipeline_bubble_s") > 0.0);
}

/// Expert parallelism across rails on a rail-only fabric runs (relayed over NVLink as NCCL's PXN
/// does by default), no "no route".
#[test]
fn moe_trains_on_rail_only() {
    let v = json(&[
        "train",
        "rail-only-h100",
        "--servers",
        "4",
        "--model",
        "mixtral-8x7b",
        "--tp",
        "2",
        "--ep",
        "8",
        "--json",
    ]);
    assert_eq!(v["cross_rail"], "pxn");
    assert!(f(&v, "/breakdown/expert_parallel_s") > 0.0);
}

/// A workload of one all-reduce of 1 GB in 16-rank data-parallel groups along the rails of 16 DGX
/// H100: every group has its own rail, so the ring all-reduce takes 2 x 15/16 x 1 GB over one NDR
/// NIC's 49.68 GB/s (after headers): 37.74 ms at the NIC bound, carried by server-leaf cables
/// only. NCCL's model (which `train` prices every collective with, as `sim collective` does)
/// reaches a little less through the ring: about 47 GB/s busbw per NDR NIC, as nccl-tests runs on
/// NDR publish (46-48 GB/s), so the step lies between the bound and 6% above it.
#[test]
fn a_simai_all_reduce_replays_at_the_rail_rate() {
    let v = json(&[
        "train",
        "--servers",
        "16",
        "--workload",
        &fixture("simai-dp-allreduce.txt"),
        "--json",
    ]);
    let expect = 2.0 * 15.0 / 16.0 * 1e9 / 49.68e9;
    let step = f(&v, "/step_time_s");
    assert!(step >= expect && step < 1.06 * expect, "{step} vs {expect}");
    assert_eq!((f(&v, "/tp"), f(&v, "/dp")), (8.0, 16.0));
    assert!(v["tokens_per_s"].is_null());
    assert!(v["breakdown"].get("mfu").is_none());
    assert_eq!(f(&v, "/network_utilisation/leaf-spine"), 0.0);
}

/// A transformer workload: compute from the file, TP all-reduces on NVLink, the DP collectives that
/// AICB lists first run last in the backward pass.
#[test]
fn a_simai_transformer_replays_with_tokens_when_the_sequence_is_given() {
    let file = fixture("simai-tp8-dp16.txt");
    let args = [
        "train",
        "--servers",
        "16",
        "--workload",
        &file,
        "--seq",
        "4096",
        "--json",
    ];
    let v = json(&args);
    // 2 micro-batches x 4 layers x (1.2 + 2.4 + 2.4 + 4.8 + 1.2 + 2.4 ms) + 6 ticks.
    let compute = 2.0 * 4.0 * 14.4e-3 + 6e-9;
    assert!((f(&v, "/breakdown/compute_s") - compute).abs() < 1e-12);
    assert!(f(&v, "/breakdown/tensor_parallel_s") > 0.0);
    let tokens = 4096.0 * 2.0 * 16.0;
    assert!((f(&v, "/tokens_per_s") - tokens / f(&v, "/step_time_s")).abs() < 1e-6);
    // The same file twice gives the same bytes.
    assert_eq!(railyard(args).stdout, railyard(args).stdout);
    let text = String::from_utf8(railyard(&args[..7]).stdout).unwrap();
    assert!(text.contains("tensor-parallel collectives"), "{text}");
}

/// Regression: `train --seed` without `--fail-links` (it seeds nothing else: the step's ECMP hash
/// has a fixed seed), and `--pp` or the cost assumptions with `--workload` (its header gives the
/// stages; a replay prints no cost per token) were taken and ignored. Refused, exit 2, naming both
/// flags.
#[test]
fn train_flags_that_change_nothing_are_refused() {
    let workload = fixture("simai-dp-allreduce.txt");
    for (args, needle) in [
        (
            vec!["--servers", "4", "--model", "llama3-8b", "--seed", "2"],
            "--seed 2 has no effect without --fail-links",
        ),
        (
            vec![
                "--servers",
                "4",
                "--nics-per-server",
                "1",
                "--model",
                "mixtral-8x7b",
                "--tp",
                "2",
                "--ep",
                "8",
                "--pxn",
                "staged",
            ],
            "--pxn has no effect on this design: it has one NIC per server",
        ),
        // The default layout (TP 8, ZeRO-1) reduces nothing across servers in the switches.
        (
            vec!["--servers", "4", "--model", "llama3-8b", "--sharp", "on"],
            "--sharp on has no effect on this step",
        ),
        (
            vec!["--servers", "16", "--workload", &workload, "--pp", "2"],
            "--pp 2 has no effect with --workload",
        ),
        (
            vec!["--servers", "16", "--workload", &workload, "--pue", "1.2"],
            "--pue has no effect with --workload",
        ),
        (
            vec![
                "--servers",
                "16",
                "--workload",
                &workload,
                "--amortize-years",
                "3",
            ],
            "--amortize-years has no effect with --workload",
        ),
        (
            vec![
                "--servers",
                "16",
                "--workload",
                &workload,
                "--usd-per-kwh",
                "0.1",
            ],
            "--usd-per-kwh has no effect with --workload",
        ),
    ] {
        let o = railyard([&["train"][..], &args].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    }
}

/// `--sharp on` is taken where a data-parallel all-reduce spans servers with a GPU per NIC (TP 1,
/// ZeRO-0): CollNet runs it.
#[test]
fn sharp_is_taken_where_an_all_reduce_spans_servers() {
    let o = railyard([
        "train",
        "--servers",
        "4",
        "--model",
        "llama3-8b",
        "--tp",
        "1",
        "--zero",
        "0",
        "--sharp",
        "on",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `compare --sharp on` follows `train`: refused where no design's prediction changes with it
/// (llama3-8b at TP 8 and ZeRO-1: it was accepted and printed identical steps), taken where the
/// data-parallel all-reduce spans servers (TP 1, ZeRO-0) or `--perf` simulates an all-reduce.
#[test]
fn compare_sharp_on_is_refused_where_it_changes_nothing() {
    let base = [
        "compare",
        "--servers",
        "4",
        "--sharp",
        "on",
        "--vary",
        "nic-ratio=1:1,1:2",
    ];
    let run = |extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        railyard(args)
    };
    let o = run(&["--model", "llama3-8b"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--sharp on has no effect on any design here"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    for extra in [
        &["--model", "llama3-8b", "--tp", "1", "--zero", "0"][..],
        &["--perf"][..],
    ] {
        let o = run(extra);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{extra:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Bad workload files and layouts that do not fit name the file, the line and the field; exit 2.
#[test]
fn bad_simai_workloads_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixture("simai-tp8-dp16.txt")).unwrap();
    let cases = [
        (
            good.replace(
                "\tALLREDUCE\t33554432\t2400000",
                "\tALLREDUCES\t33554432\t2400000",
            ),
            "line 5: fwd_comm_type",
        ),
        (good.replacen("\n18\n", "\n19\n", 1), "line 2: layers"),
        (
            good.replace("all_gpus: 128", "all_gpus: 256"),
            "line 1: all_gpus",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("w{i}.txt"));
        std::fs::write(&path, text).unwrap();
        let p = path.display().to_string();
        let o = railyard(["train", "--servers", "16", "--workload", &p]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&p) && err.contains(want), "{want}: {err}");
        assert!(o.stdout.is_empty());
    }
    let o = railyard([
        "train",
        "--workload",
        &fixture("simai-tp8-dp16.txt"),
        "--model",
        "llama3-8b",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// Model state per GPU: Llama-3 70B on TP 8 x DP 2 with ZeRO-1 holds 4 + 12/2 bytes per parameter of
/// its eighth, 88 GB: more than an H100's 80 GB, which the text says; ZeRO-3 fits. (The layout is
/// asked for: left to railyard, it would be fitted to the memory instead.)
#[test]
fn model_state_that_does_not_fit_is_flagged() {
    let args = [
        "train",
        "--servers",
        "2",
        "--model",
        "llama3-70b",
        "--tp",
        "8",
    ];
    let v = json(&[&args[..], &["--json"]].concat());
    let params = 70.6e9 / 8.0;
    let gb = f(&v, "/model_state_gb_per_gpu");
    // ZeRO-1 over 2: BF16 weights and FP32 gradients whole, Adam's 12 bytes halved.
    assert!((gb - 12.0 * params / 1e9).abs() < 0.02 * gb, "{gb}");
    // What an H100 exposes: 81,559 MiB.
    assert_eq!(f(&v, "/gpu_memory_gb"), 81_559.0 * 1_048_576.0 / 1e9);
    let text = String::from_utf8(railyard(args).stdout).unwrap();
    assert!(
        text.contains("warning: the model state alone does not fit"),
        "{text}"
    );
    // ZeRO-3 shards the state to fit; 80 layers of activations for a micro-batch of 8,192 tokens
    // on top do not, and full recomputation brings them down to each layer's input.
    let zero3 = [&args[..], &["--zero", "3"]].concat();
    let text = String::from_utf8(railyard(&zero3).stdout).unwrap();
    assert!(
        text.contains("warning: model state and activations do not fit"),
        "{text}"
    );
    let v = json(&[&zero3[..], &["--json"]].concat());
    let (state, act) = (
        f(&v, "/model_state_gb_per_gpu"),
        f(&v, "/activation_gb_per_gpu"),
    );
    assert!(state < 80.0 && state + act > 80.0, "{state} + {act}");
    // One stage: it holds both.
    assert!((f(&v, "/memory_gb_per_gpu") - (state + act)).abs() < 1e-9);
    let text = String::from_utf8(railyard([&zero3[..], &["--recompute"]].concat()).stdout).unwrap();
    assert!(!text.contains("warning"), "{text}");
}

/// Regression (issue 11): a layout whose transfers cannot be routed is bad input, not a failure: an
/// expert all-to-all across servers with `--pxn off` on a rail-only fabric (no spine joins the
/// rails) exits 2, names the routing and the cross-rail mode, and prints nothing on stdout.
#[test]
fn unroutable_layout_is_bad_input() {
    let o = railyard([
        "train",
        "rail-only-h100",
        "--servers",
        "4",
        "--model",
        "deepseek-v3-like",
        "--tp",
        "1",
        "--ep",
        "32",
        "--pxn",
        "off",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("routing adaptive, cross-rail direct: 1 connection(s) have no route"),
        "{err}"
    );
    assert!(err.contains("no up-link leads to the destination"), "{err}");
    assert!(err.contains("--pxn auto, on or staged"), "{err}");
    assert!(o.stdout.is_empty());
    // Relayed over NVLink to the destination's rail, the same layout runs.
    let o = railyard([
        "train",
        "rail-only-h100",
        "--servers",
        "4",
        "--model",
        "deepseek-v3-like",
        "--tp",
        "1",
        "--ep",
        "32",
        "--pxn",
        "staged",
    ]);
    assert_eq!(o.status.code(), Some(0));
}

/// Training as published: an uneven split given or taken from the model (Llama 3 405B's 7, 8 x 14, 7
/// on 16 stages), FP8 and expert overlap add their JSON keys only when asked for, and bad values
/// exit 2 naming the flag and what is valid.
#[test]
fn stage_layers_precision_and_overlap_as_published() {
    let base = [
        "train",
        "--servers",
        "32",
        "--model",
        "llama3-405b",
        "--tp",
        "8",
        "--pp",
        "16",
        "--global-batch",
        "16",
        "--json",
    ];
    let v = json(&base);
    let published: Vec<u64> = [7].into_iter().chain([8; 14]).chain([7]).collect();
    let split: Vec<u64> = v["stage_layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(split, published);
    assert!(v.get("precision").is_none() && v.get("ep_overlap").is_none());
    assert!(v["breakdown"].get("expert_parallel_total_s").is_none());
    // Interleaving: llama3-70b's 20-layer stages in 5 chunks of 4; the bubble shrinks.
    let even = json(&[
        "train",
        "--servers",
        "32",
        "--model",
        "llama3-70b",
        "--tp",
        "8",
        "--pp",
        "4",
        "--vp",
        "1",
        "--global-batch",
        "32",
        "--json",
    ]);
    // Virtual stages not given: chosen (the most that fit, up to one layer a chunk), and said.
    let chosen = json(&[
        "train",
        "--servers",
        "32",
        "--model",
        "llama3-70b",
        "--tp",
        "8",
        "--pp",
        "4",
        "--global-batch",
        "32",
        "--json",
    ]);
    assert_eq!(chosen["vp"], 20);
    assert!(chosen["virtual_stages_chosen"]
        .as_str()
        .unwrap()
        .contains("give --vp to choose"));
    let inter = json(&[
        "train",
        "--servers",
        "32",
        "--model",
        "llama3-70b",
        "--tp",
        "8",
        "--pp",
        "4",
        "--vp",
        "5",
        "--global-batch",
        "32",
        "--json",
    ]);
    assert_eq!(inter["vp"], 5);
    assert!(even.get("vp").is_none());
    assert!(f(&inter, "/breakdown/pipeline_bubble_s") < f(&even, "/breakdown/pipeline_bubble_s"));
    // The same split given is the same step.
    let list = published
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut given = base.to_vec();
    given.extend(["--stage-layers", &list]);
    assert_eq!(json(&given), v);
    // FP8: faster compute, MFU against the FP8 peak.
    let mut fp8 = base.to_vec();
    fp8.extend(["--precision", "fp8"]);
    let w = json(&fp8);
    assert_eq!(w["precision"], "fp8");
    assert_eq!(w["peak_tflops"], 1979.0);
    assert!(f(&w, "/breakdown/compute_s") < f(&v, "/breakdown/compute_s"));
    // MoE with expert overlap and FP8 dispatch: the total is reported, the exposed part no larger.
    let moe = json(&[
        "train",
        "--servers",
        "8",
        "--model",
        "mixtral-8x7b",
        "--tp",
        "2",
        "--ep",
        "8",
        "--precision",
        "fp8",
        "--fp8-dispatch",
        "--ep-overlap",
        "--json",
    ]);
    assert_eq!(moe["fp8_dispatch"], true);
    assert_eq!(moe["ep_overlap"], true);
    assert!(
        f(&moe, "/breakdown/expert_parallel_total_s") >= f(&moe, "/breakdown/expert_parallel_s")
    );
    for (args, needles) in [
        (
            vec!["--stage-layers", "7,8"],
            vec!["--stage-layers", "pp is 16"],
        ),
        (
            vec!["--stage-layers", "7,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8"],
            vec!["--stage-layers", "126"],
        ),
        (vec!["--stage-layers", "7,x"], vec!["--stage-layers", "x"]),
        (vec!["--precision", "fp4"], vec!["fp4", "bf16, fp8"]),
        (vec!["--vp", "9"], vec!["--vp", "1 to 8"]),
        (vec!["--schedule", "gpipe"], vec!["gpipe", "dualpipe"]),
        (
            vec!["--fp8-dispatch"],
            vec!["--fp8-dispatch", "--precision fp8"],
        ),
    ] {
        let mut a = base.to_vec();
        a.extend(args.iter().copied());
        let o = railyard(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: {err}");
        }
    }
    // An A100 has no FP8; a model without a split rule names --pp and --stage-layers.
    let o = railyard([
        "train",
        "dgx-a100-superpod",
        "--servers",
        "2",
        "--model",
        "llama3-8b",
        "--precision",
        "fp8",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("A100") && err.contains("bf16"), "{err}");
    let o = railyard([
        "train",
        "--servers",
        "4",
        "--model",
        "llama3-70b",
        "--pp",
        "3",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--pp") && err.contains("--stage-layers"),
        "{err}"
    );
}

/// Regression: a 3-GPU server took TP 3 for Llama 3 8B, whose 32 attention heads do not split
/// over 3 ranks (Megatron divides the heads by TP), and priced a step no one can run. The default
/// is now the largest TP that fills the server and divides the heads (here 1), and `--tp 3` is
/// refused naming the flag, the heads and the valid values.
#[test]
fn tensor_parallelism_divides_the_attention_heads() {
    let v = json(&[
        "train",
        "--servers",
        "2",
        "--gpus-per-server",
        "3",
        "--nics-per-server",
        "3",
        "--model",
        "llama3-8b",
        "--json",
    ]);
    assert_eq!(v["tp"], 1, "{v}");
    // Every GPU used (TP 1 PP 2 DP 3: one GPU does not hold 8B's state and a sequence of 8,192).
    assert_eq!(
        v["pp"].as_u64().unwrap() * v["dp"].as_u64().unwrap(),
        6,
        "{v}"
    );
    let o = railyard([
        "train",
        "--servers",
        "2",
        "--gpus-per-server",
        "6",
        "--nics-per-server",
        "6",
        "--model",
        "llama3-8b",
        "--tp",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--tp: 3") && err.contains("32 heads") && err.contains("valid: 1, 2"),
        "{err}"
    );
    // The default on a 6-GPU server is TP 2: the largest divisor of 6 that divides 32.
    let v = json(&[
        "train",
        "--servers",
        "1",
        "--gpus-per-server",
        "6",
        "--nics-per-server",
        "6",
        "--model",
        "llama3-8b",
        "--json",
    ]);
    assert_eq!(v["tp"], 2, "{v}");
    // Megatron splits grouped-query attention's key/value heads too: Llama 3 70B's 64 heads split
    // over 16 ranks, its 8 key/value heads do not.
    let o = railyard([
        "train",
        "--servers",
        "4",
        "--gpus-per-server",
        "16",
        "--model",
        "llama3-70b",
        "--tp",
        "16",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--tp: 16: tensor parallelism splits the attention heads, and the 8 key/value heads of its grouped-query attention do not split over 16 ranks; valid: 1, 2, 4, 8"),
        "{err}"
    );
}

/// Expert parallelism on a dense model is bad input that says so and names the models that have
/// experts (it said "0 experts do not split evenly over ep = 2").
#[test]
fn expert_parallelism_on_a_dense_model_names_the_moe_models() {
    let o = railyard([
        "train",
        "--servers",
        "4",
        "--model",
        "llama3-8b",
        "--ep",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--ep: ep = 2 needs a mixture-of-experts model (mixtral-8x7b, deepseek-v3-like, deepseek-v3); this one is dense"),
        "{e}"
    );
}

/// The JSON lists every communication operation of the step with the time of one call, and that
/// time is what `sim collective` gives for the same group and size: the tensor-parallel all-reduce
/// of llama3-70b (TP 8 on one DGX H100, 128 MiB) against `sim collective allreduce --servers 1`.
#[test]
fn train_lists_its_operations_at_sim_collectives_times() {
    let v = json(&[
        "train",
        "--servers",
        "16",
        "--model",
        "llama3-70b",
        "--pp",
        "4",
        "--json",
    ]);
    let ops = v["breakdown"]["operations"].as_array().expect("operations");
    let roles: Vec<&str> = ops.iter().map(|o| o["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        [
            "tensor-parallel",
            "pipeline-forward",
            "pipeline-backward",
            "data-parallel",
            "data-parallel"
        ]
    );
    let tp = &ops[0];
    assert_eq!(tp["collective"], "all-reduce");
    assert_eq!(tp["ranks_per_group"], 8);
    assert_eq!(tp["groups"], 16);
    // 4 all-reduces per layer, 20 layers per stage, 8 micro-batches.
    assert_eq!(tp["calls_per_step"], 640.0);
    let bytes = tp["bytes"].as_u64().unwrap();
    let o = railyard([
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "1",
        "-b",
        &bytes.to_string(),
        "-e",
        &bytes.to_string(),
        "--json",
    ]);
    let sim: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        tp["seconds_per_call"].as_f64().unwrap() * 1e6,
        sim["rows"][0]["time_us"].as_f64().unwrap()
    );
}

/// Flags the layout leaves nothing to act on are refused with the reason, as `--seed` without
/// `--fail-links` is: they printed the same step as without them (`--ep-overlap` even printed
/// "hidden under compute: 0.000 ms" for a dense model).
#[test]
fn expert_and_cross_rail_flags_with_nothing_to_act_on_are_refused() {
    for (args, needle) in [
        (
            &["--model", "llama3-8b", "--servers", "4", "--ep-overlap"][..],
            "--ep-overlap has no effect: llama3-8b is a dense model with no experts",
        ),
        (
            &[
                "--model",
                "llama3-8b",
                "--servers",
                "4",
                "--precision",
                "fp8",
                "--fp8-dispatch",
            ],
            "--fp8-dispatch has no effect: llama3-8b is a dense model",
        ),
        (
            &["--model", "mixtral-8x7b", "--servers", "32", "--ep-overlap"],
            "--ep-overlap has no effect: the layout fitted to the GPU's memory has EP 1",
        ),
        (
            &[
                "--model",
                "mixtral-8x7b",
                "--servers",
                "32",
                "--tp",
                "8",
                "--pxn",
                "on",
            ],
            "--pxn has no effect: the layout given (EP 1, PP 1, CP 1)",
        ),
    ] {
        let mut argv = vec!["train"];
        argv.extend_from_slice(args);
        let o = railyard(&argv);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(o.stdout.is_empty());
    }
    // compare prices the step as train does, and refuses them on a dense model too (it printed
    // the same numbers with them).
    let o = railyard([
        "compare",
        "--servers",
        "4",
        "--vary",
        "nic-ratio=1:1,1:4",
        "--model",
        "llama3-8b",
        "--ep-overlap",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--ep-overlap has no effect: llama3-8b is a dense model"),
        "{err}"
    );
    // With something to act on they run: experts spread over 8 GPUs, or pipeline stages.
    for args in [
        &[
            "--model",
            "mixtral-8x7b",
            "--servers",
            "32",
            "--tp",
            "2",
            "--ep",
            "8",
            "--ep-overlap",
            "--pxn",
            "on",
        ][..],
        &[
            "--model",
            "llama3-8b",
            "--servers",
            "4",
            "--tp",
            "8",
            "--pp",
            "2",
            "--pxn",
            "on",
        ],
    ] {
        let mut argv = vec!["train"];
        argv.extend_from_slice(args);
        let o = railyard(&argv);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// SimAI's own example workloads (tests/fixtures/simai-public, sources in its README) replay as
/// published: each reads, and the smallest's two forward all-reduces in its TP group of 8 take
/// what `sim collective` gives for those sizes on one server (one collective model).
#[test]
fn simai_published_workloads_replay() {
    let public = |name: &str| fixture(&format!("simai-public/{name}"));
    let mut smallest = None;
    for (name, servers, tp, dp, ep) in [
        ("microAllReduce.txt", "1", 8.0, 1.0, 1.0),
        ("microAllReduce_dp.txt", "2", 8.0, 2.0, 1.0),
        ("workload_ep_test.txt", "4", 4.0, 8.0, 4.0),
        ("workload_gpt7b_64g.txt", "8", 8.0, 8.0, 1.0),
    ] {
        let v = json(&[
            "train",
            "--servers",
            servers,
            "--workload",
            &public(name),
            "--json",
        ]);
        assert_eq!(
            (f(&v, "/tp"), f(&v, "/dp"), f(&v, "/ep")),
            (tp, dp, ep),
            "{name}"
        );
        assert!(f(&v, "/step_time_s") > 0.0, "{name}");
        if name == "microAllReduce.txt" {
            smallest = Some(v);
        }
    }
    let v = smallest.expect("microAllReduce.txt ran");
    // Two layer lines of 556,000 ticks of 1 ns forward and 1 each for the input and weight
    // gradients.
    assert!((f(&v, "/breakdown/compute_s") - 2.0 * 556_002e-9).abs() < 1e-12);
    let sim = json(&[
        "sim",
        "collective",
        "allreduce",
        "--servers",
        "1",
        "-b",
        "16M",
        "-e",
        "64M",
        "-f",
        "4",
        "--json",
    ]);
    let rows = sim["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let collectives: f64 = rows.iter().map(|r| f(r, "/time_us") * 1e-6).sum();
    let tp_s = f(&v, "/breakdown/tensor_parallel_s");
    assert!((tp_s - collectives).abs() < 1e-9, "{tp_s} vs {collectives}");
}

/// ZeRO-2 sits between stages 1 and 3, as the ZeRO paper's stages do (Rajbhandari et al., SC'20,
/// figure 1): it shards the gradients as well as the optimizer state, so each GPU holds less model
/// state than with ZeRO-1 and more than with ZeRO-3 (which shards the weights too); and it
/// reduce-scatters the sharded gradients after every micro-batch, so its data-parallel traffic is
/// above ZeRO-1's (one reduce-scatter and one all-gather a step) and below ZeRO-3's (which also
/// gathers the weights for every pass).
#[test]
fn zero_2_sits_between_stages_1_and_3() {
    let at = |zero: &str| {
        json(&[
            "train",
            "--servers",
            "4",
            "--model",
            "llama3-8b",
            "--zero",
            zero,
            "--json",
        ])
    };
    let (one, two, three) = (at("1"), at("2"), at("3"));
    assert_eq!(two["zero"], 2);
    let state = |v: &Value| f(v, "/model_state_gb_per_gpu");
    assert!(state(&one) > state(&two) && state(&two) > state(&three));
    let dp = |v: &Value| f(v, "/breakdown/data_parallel_total_s");
    assert!(dp(&one) < dp(&two) && dp(&two) < dp(&three));
}
