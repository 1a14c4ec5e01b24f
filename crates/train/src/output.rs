//! What `railyard train` prints: a step of a model, or a replayed SimAI workload, on a design, as
//! text and as JSON.
//!
//! JSON objects are written with their keys in alphabetical order (through `serde_json::Value`,
//! whose maps are sorted), so the bytes do not depend on the order fields are declared in.

use crate::fabric_timer::network_utilisation;
use crate::fit::Measured;
use crate::model::Model;
use crate::parallel::{Fitted, Parallelism};
use crate::simai::SimaiWorkload;
use crate::step::{Breakdown, Precision, StepConfig};
use railyard_catalog::GpuModel;
use railyard_fabric::Fabric;
use railyard_sim::collective::Relay;
use railyard_sim::routing::RoutingKind;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// How the step's communication was simulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommSetup {
    pub routing: RoutingKind,
    pub relay: Relay,
}

/// A model's training step on a design, as `railyard train` reports it.
pub struct StepOutput<'a> {
    pub model: &'a Model,
    /// The design's name.
    pub design: &'a str,
    pub fabric: &'a Fabric,
    pub gpu: &'a GpuModel,
    pub par: &'a Parallelism,
    pub cfg: &'a StepConfig,
    pub comm: CommSetup,
    pub breakdown: &'a Breakdown,
    /// The default layout this one replaced because its model state and activations did not fit.
    pub fitted: Option<&'a Fitted>,
    /// The measurement the compute efficiency was fitted to (`--fit-efficiency`).
    pub efficiency_fitted_to: Option<Measured>,
    /// Why the virtual stages are what they are, where the run did not give them
    /// ([`crate::parallel::Layout::choose_vp`]).
    pub virtual_stages: Option<&'a str>,
    /// Why the routing is what it is, where it is the technology's default rather than asked
    /// for (the catalog's `default_routing`: "RoCE default: ECMP ..."): printed beside it, and
    /// in JSON as `routing_default`.
    pub routing_default: Option<&'a str>,
}

#[derive(Serialize)]
struct StepJson<'a> {
    model: &'a str,
    design: &'a str,
    gpus: u64,
    gpu_model: &'a str,
    tp: u32,
    pp: u32,
    dp: u32,
    ep: u32,
    /// Context parallelism, where above 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    cp: Option<u32>,
    /// Expert tensor parallelism, where `--etp` was given (MoE parallel folding).
    #[serde(skip_serializing_if = "Option::is_none")]
    etp: Option<u32>,
    seq: u64,
    micro_batch: u64,
    global_batch: u64,
    zero: u32,
    compute_efficiency: f64,
    /// `by-operation` (the kernel tables) or `flat` (`--efficiency`, `--fit-efficiency`).
    compute_model: &'static str,
    routing: &'static str,
    /// Why `routing`, where it is the technology's default (absent where asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    routing_default: Option<&'a str>,
    cross_rail: &'static str,
    step_time_s: f64,
    tokens_per_s: f64,
    mfu: f64,
    /// `mfu` with the attention scores and values counted under the causal mask (half the
    /// matrix), the convention of Megatron-LM's later FLOP count
    /// (`Model::train_flops_per_token_causal`); what some published MFUs and TFLOPS count.
    mfu_causal_attention: f64,
    network_utilisation: BTreeMap<String, f64>,
    model_state_gb_per_gpu: f64,
    activation_gb_per_gpu: f64,
    memory_gb_per_gpu: f64,
    /// What the GPU exposes, 10^9 bytes as the other `_gb` keys ([`GpuModel::memory_bytes`]).
    gpu_memory_gb: f64,
    /// The precision gradients are accumulated and reduced in: `fp32` or `bf16`.
    gradients: &'static str,
    breakdown: &'a Breakdown,
    /// The keys below appear only when not the default (even stages, BF16, no overlap), so the
    /// output of a step without them stays as it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    stage_layers: Option<&'a [u64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vp: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    precision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_tflops: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fp8_dispatch: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    ep_overlap: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    tp_overlap: bool,
    /// `--overlap-p2p-warmup-flush`: asynchronous pipeline sends in warm-up and cool-down.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    overlap_p2p_warmup_flush: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fp8_param_gather: bool,
    /// `--fp8-activation-cache`: the linear layers' inputs kept in FP8 for the backward pass.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fp8_activation_cache: bool,
    /// `--bf16-moments`: AdamW's moments in BF16.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    bf16_moments: bool,
    /// Node-limited routing: the most nodes a token's experts sit on (the model's `node_limit`),
    /// where expert parallelism runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    node_limit: Option<u64>,
    /// The pipeline schedule, where not 1F1B (interleaved when `vp` is above 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule: Option<&'static str>,
    /// The modules recomputed selectively, where any.
    #[serde(skip_serializing_if = "Option::is_none")]
    recompute_modules: Option<String>,
    /// Why `vp` is what it is where the run did not give it.
    #[serde(skip_serializing_if = "Option::is_none")]
    virtual_stages_chosen: Option<&'a str>,
    /// Why the layout is not the default: the default's model state and activations did not fit.
    #[serde(skip_serializing_if = "Option::is_none")]
    layout_fitted: Option<String>,
    /// The measurement `compute_efficiency` was fitted to: one key, `tokens_per_s`, `step_time_s`
    /// or `mfu`.
    #[serde(skip_serializing_if = "Option::is_none")]
    efficiency_fitted_to: Option<BTreeMap<&'static str, f64>>,
}

impl StepOutput<'_> {
    /// The peak the step's MFU is against: the FP8 peak in FP8, else BF16.
    fn peak(&self) -> f64 {
        match self.cfg.precision {
            Precision::Fp8 => self
                .gpu
                .peak_tflops_fp8
                .unwrap_or(self.gpu.peak_tflops_bf16),
            Precision::Bf16 => self.gpu.peak_tflops_bf16,
        }
    }

    /// The JSON text: [`Self::json_value`], pretty, keys in alphabetical order.
    pub fn json(&self) -> String {
        pretty_json(&self.json_value())
    }

    /// The JSON object, for a front end to print as it is or with keys of its own added.
    pub fn json_value(&self) -> serde_json::Value {
        let (par, b) = (self.par, self.breakdown);
        json_value(&StepJson {
            model: &self.model.name,
            design: self.design,
            gpus: par.world(),
            gpu_model: &self.gpu.id,
            tp: par.tp,
            pp: par.pp,
            dp: par.dp,
            ep: par.ep,
            cp: (par.cp > 1).then_some(par.cp),
            etp: par.etp,
            seq: par.seq,
            micro_batch: par.micro_batch,
            global_batch: par.global_batch,
            zero: par.zero,
            compute_efficiency: self
                .cfg
                .compute_efficiency
                .unwrap_or(self.breakdown.compute_efficiency),
            compute_model: if self.cfg.compute_efficiency.is_some() {
                "flat"
            } else {
                "by-operation"
            },
            routing: self.comm.routing.as_str(),
            routing_default: self.routing_default,
            cross_rail: self.comm.relay.as_str(),
            step_time_s: b.step_time_s,
            tokens_per_s: b.tokens_per_s,
            mfu: b.mfu,
            mfu_causal_attention: b.mfu * self.model.train_flops_per_token_causal(par.seq, false)
                / self.model.train_flops_per_token(par.seq, false),
            network_utilisation: network_utilisation(self.fabric, b),
            model_state_gb_per_gpu: b.model_state_bytes_per_gpu / 1e9,
            activation_gb_per_gpu: b.activation_bytes_per_gpu / 1e9,
            memory_gb_per_gpu: b.memory_bytes_per_gpu / 1e9,
            gpu_memory_gb: self.gpu.memory_bytes() / 1e9,
            gradients: if par.grad_bf16 { "bf16" } else { "fp32" },
            breakdown: b,
            stage_layers: (!par.stage_layers.is_empty()).then_some(&par.stage_layers[..]),
            vp: (par.vp > 1).then_some(par.vp),
            precision: (self.cfg.precision != Precision::Bf16).then(|| self.cfg.precision.as_str()),
            peak_tflops: (self.cfg.precision != Precision::Bf16).then(|| self.peak()),
            fp8_dispatch: self.cfg.fp8_dispatch && self.cfg.precision == Precision::Fp8,
            ep_overlap: self.cfg.ep_overlap,
            tp_overlap: self.cfg.tp_overlap,
            overlap_p2p_warmup_flush: self.cfg.overlap_p2p_warmup_flush,
            fp8_param_gather: par.fp8_params,
            fp8_activation_cache: par.fp8_activations,
            bf16_moments: par.bf16_moments,
            node_limit: self.node_limit(),
            schedule: (par.schedule != crate::schedule::Schedule::OneFOneB)
                .then_some(par.schedule.as_str()),
            virtual_stages_chosen: self.virtual_stages,
            recompute_modules: (!par.recompute_modules.is_empty())
                .then(|| par.recompute_modules.names()),
            layout_fitted: self.fitted.map(|f| f.note(par)),
            efficiency_fitted_to: self
                .efficiency_fitted_to
                .map(|m| BTreeMap::from([m.json_pair()])),
        })
    }

    /// The model's node limit where its experts run over expert-parallel groups.
    fn node_limit(&self) -> Option<u64> {
        (self.model.node_limit > 0 && self.par.ep > 1).then_some(self.model.node_limit)
    }

    pub fn text(&self) -> String {
        let b = self.breakdown;
        let mut o = String::new();
        self.write_layout(&mut o);
        write_breakdown(
            &mut o,
            b,
            ["tensor-parallel all-reduce", "expert-parallel all-to-all"],
        );
        if let Some(total) = b.expert_parallel_total_s {
            let _ = writeln!(
                o,
                "  {:<34}{:>12.3} ms (hidden under compute: {:.3} ms, --ep-overlap)",
                "expert-parallel (total)",
                total * 1e3,
                (total - b.expert_parallel_s) * 1e3
            );
        }
        let _ = writeln!(
            o,
            "step time {:.3} s, {:.0} tokens/s, MFU {:.1}%",
            b.step_time_s,
            b.tokens_per_s,
            100.0 * b.mfu
        );
        write_utilisation(&mut o, self.fabric, b);
        self.write_memory(&mut o);
        self.write_efficiency(&mut o);
        o
    }

    /// The title and the layout: parallelism, batch, ZeRO, routing, stages and schedule.
    fn write_layout(&self, o: &mut String) {
        let (par, b, gpu) = (self.par, self.breakdown, self.gpu);
        let _ = writeln!(
            o,
            "railyard train: {} on {} ({} x {})",
            self.model.name,
            self.design,
            par.world(),
            gpu.id
        );
        let _ = writeln!(
            o,
            "  TP {} x PP {}{} x DP {}{}; sequence {}, micro-batch {}, global batch {} ({}); ZeRO-{}; routing {}; cross-rail {}",
            par.tp,
            par.pp,
            if par.vp > 1 {
                format!(" (VP {}, interleaved)", par.vp)
            } else {
                String::new()
            },
            par.dp,
            if par.ep > 1 && (par.etp.is_some() || par.cp > 1) {
                // MoE parallel folding: the expert groups over tp x cp x dp.
                let cp = if par.cp > 1 {
                    format!(" x CP {}", par.cp)
                } else {
                    String::new()
                };
                format!("{cp} (EP {}, ETP {}, folded)", par.ep, par.etp())
            } else if par.ep > 1 {
                format!(" (EP {})", par.ep)
            } else if par.cp > 1 {
                format!(" x CP {}", par.cp)
            } else {
                String::new()
            },
            par.seq,
            par.micro_batch,
            par.global_batch,
            railyard_fabric::search::plural(b.microbatches, "micro-batch", "micro-batches"),
            par.zero,
            match self.routing_default {
                Some(why) => format!("{} ({why})", self.comm.routing.as_str()),
                None => self.comm.routing.as_str().to_string(),
            },
            self.comm.relay.as_str()
        );
        if !par.stage_layers.is_empty() {
            let layers: Vec<String> = par.stage_layers.iter().map(u64::to_string).collect();
            let _ = writeln!(
                o,
                "  pipeline stages of {} layers (the slowest stage sets the pipeline)",
                layers.join(",")
            );
        }
        if let Some(f) = self.fitted {
            let _ = writeln!(o, "  {}", f.note(par));
        }
        if let Some(v) = self.virtual_stages {
            let _ = writeln!(o, "  {v}");
        }
        if par.schedule != crate::schedule::Schedule::OneFOneB {
            let _ = writeln!(o, "  pipeline schedule {}", par.schedule.as_str());
        }
    }

    /// Model state, activations and memory per GPU, with a warning where they do not fit.
    fn write_memory(&self, o: &mut String) {
        let (par, b, gpu) = (self.par, self.breakdown, self.gpu);
        let state_gb = b.model_state_bytes_per_gpu / 1e9;
        let _ = writeln!(
            o,
            "model state per GPU {state_gb:.1} GB ({} weights, {} gradients, {}; ZeRO-{})",
            if par.fp8_params { "FP8" } else { "BF16" },
            if par.grad_bf16 { "BF16" } else { "FP32" },
            if par.bf16_moments {
                "FP32 master weights and BF16 Adam moments"
            } else {
                "FP32 Adam"
            },
            par.zero
        );
        let capacity = gpu.memory_bytes();
        let memory = crate::step::Memory::of(self.model, par);
        let _ = writeln!(
            o,
            "activations per GPU {:.1} GB ({})",
            b.activation_bytes_per_gpu / 1e9,
            activations_held(self.model, par),
        );
        let split = if par.pp > 1 {
            format!(
                ", on stage {} of {}: model state {:.1} GB + activations {:.1} GB",
                memory.peak_stage + 1,
                par.pp,
                memory.peak_state_bytes / 1e9,
                memory.peak_activation_bytes / 1e9
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "memory per GPU {:.1} GB of the {}'s {}{split}",
            b.memory_bytes_per_gpu / 1e9,
            gpu.id,
            gpu.memory_label()
        );
        if b.model_state_bytes_per_gpu > capacity {
            let also = if b.activation_bytes_per_gpu > capacity {
                format!(
                    "; the activations alone, {:.1} GB, do not fit either: {}",
                    b.activation_bytes_per_gpu / 1e9,
                    crate::step::memory_remedies(
                        par,
                        self.model,
                        self.fabric.meta.gpus_per_server,
                        false
                    )
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "warning: the model state alone does not fit in the {}'s {}; raise --tp, --pp, --ep or --zero{also}",
                gpu.id,
                gpu.memory_label()
            );
        } else if b.memory_bytes_per_gpu > capacity {
            let _ = writeln!(
                o,
                "warning: model state and activations do not fit in the {}'s {}; {}",
                gpu.id,
                gpu.memory_label(),
                crate::step::memory_remedies(
                    par,
                    self.model,
                    self.fabric.meta.gpus_per_server,
                    true
                )
            );
        }
    }

    /// The compute efficiency in effect and where it comes from.
    fn write_efficiency(&self, o: &mut String) {
        let gpu = self.gpu;
        // Where the efficiency comes from: an assumption, or fitted to a measurement.
        let (eff, why) = match (self.efficiency_fitted_to, self.cfg.compute_efficiency) {
            (None, None) => (
                format!("{:.2}", self.breakdown.compute_efficiency),
                format!(
                    "in effect (by operation: each GEMM, attention, norm and optimizer step timed from its shapes on the {} kernel table; --efficiency F for one flat fraction)",
                    gpu.generation
                        .map_or("GPU's".to_string(), |g| format!("{g:?}").to_lowercase())
                ),
            ),
            (None, Some(e)) => (format!("{e:.2}"), "(--efficiency; an assumption)".to_string()),
            (Some(m), e) => (
                format!("{:.4}", e.unwrap_or(self.breakdown.compute_efficiency)),
                format!(
                    "(fitted to the measured {}: --fit-efficiency)",
                    m.describe()
                ),
            ),
        };
        match self.cfg.precision {
            Precision::Bf16 => {
                let _ = writeln!(
                    o,
                    "compute efficiency {eff} of {} TFLOPS dense BF16 {why}",
                    gpu.peak_tflops_bf16
                );
            }
            Precision::Fp8 => {
                let _ = writeln!(
                    o,
                    "compute efficiency {eff} of {} TFLOPS dense FP8 for the linear layers, {} TFLOPS dense BF16 for attention and the output layer {why}; MFU against the FP8 peak",
                    self.peak(),
                    gpu.peak_tflops_bf16
                );
                if self.cfg.fp8_dispatch {
                    let _ = writeln!(
                        o,
                        "expert dispatch all-to-alls in FP8 (1 + 4/128 bytes a value with its scales), combines in BF16 (--fp8-dispatch)"
                    );
                }
            }
        }
        if let Some(m) = self.node_limit() {
            let _ = writeln!(
                o,
                "expert routing limited to {m} nodes a token (the model's node_limit): where an expert-parallel group spans servers, each token crosses the network once per destination node and fans out over NVLink there, as DeepEP sends it"
            );
        }
    }
}

/// A SimAI workload replayed on a design, as `railyard train --workload` reports it.
pub struct ReplayOutput<'a> {
    /// The workload file, as named.
    pub file: &'a str,
    pub workload: &'a SimaiWorkload,
    /// The design's name.
    pub design: &'a str,
    pub fabric: &'a Fabric,
    pub gpu: &'a GpuModel,
    pub comm: CommSetup,
    /// Tokens per step, when known (the file does not carry them).
    pub tokens: Option<u64>,
    pub breakdown: &'a Breakdown,
}

#[derive(Serialize)]
struct ReplayJson<'a> {
    workload: &'a str,
    policy: &'a str,
    design: &'a str,
    gpus: u32,
    gpu_model: &'a str,
    tp: u32,
    pp: u32,
    dp: u32,
    ep: u32,
    ga: u32,
    layers: usize,
    routing: &'static str,
    cross_rail: &'static str,
    step_time_s: f64,
    tokens_per_s: Option<f64>,
    network_utilisation: BTreeMap<String, f64>,
    breakdown: ReplayBreakdownJson<'a>,
}

/// A replayed step's [`Breakdown`]: no MFU and no model state (the file names no model), tokens per
/// second only when known.
#[derive(Serialize)]
struct ReplayBreakdownJson<'a> {
    compute_s: f64,
    tensor_parallel_s: f64,
    expert_parallel_s: f64,
    pipeline_parallel_s: f64,
    data_parallel_exposed_s: f64,
    data_parallel_total_s: f64,
    pipeline_bubble_s: f64,
    step_time_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens_per_s: Option<f64>,
    microbatches: u64,
    network_bytes_per_tier: &'a BTreeMap<String, f64>,
}

impl ReplayOutput<'_> {
    /// The JSON text: [`Self::json_value`], pretty, keys in alphabetical order.
    pub fn json(&self) -> String {
        pretty_json(&self.json_value())
    }

    /// The JSON object, for a front end to print as it is or with keys of its own added.
    pub fn json_value(&self) -> serde_json::Value {
        let (w, b) = (self.workload, self.breakdown);
        let tokens_per_s = self.tokens.map(|_| b.tokens_per_s);
        json_value(&ReplayJson {
            workload: self.file,
            policy: &w.policy,
            design: self.design,
            gpus: w.all_gpus,
            gpu_model: &self.gpu.id,
            tp: w.tp,
            pp: w.pp,
            dp: w.dp(),
            ep: w.ep,
            ga: w.ga,
            layers: w.layers.len(),
            routing: self.comm.routing.as_str(),
            cross_rail: self.comm.relay.as_str(),
            step_time_s: b.step_time_s,
            tokens_per_s,
            network_utilisation: network_utilisation(self.fabric, b),
            breakdown: ReplayBreakdownJson {
                compute_s: b.compute_s,
                tensor_parallel_s: b.tensor_parallel_s,
                expert_parallel_s: b.expert_parallel_s,
                pipeline_parallel_s: b.pipeline_parallel_s,
                data_parallel_exposed_s: b.data_parallel_exposed_s,
                data_parallel_total_s: b.data_parallel_total_s,
                pipeline_bubble_s: b.pipeline_bubble_s,
                step_time_s: b.step_time_s,
                tokens_per_s,
                microbatches: b.microbatches,
                network_bytes_per_tier: &b.network_bytes_per_tier,
            },
        })
    }

    pub fn text(&self) -> String {
        let (w, b) = (self.workload, self.breakdown);
        let gpus = self.fabric.servers.len() as u64 * u64::from(self.fabric.meta.gpus_per_server);
        let mut o = String::new();
        let _ = writeln!(
            o,
            "railyard train: SimAI workload {} on {} ({} of {} x {})",
            self.file, self.design, w.all_gpus, gpus, self.gpu.id
        );
        let _ = writeln!(
            o,
            "  {}: TP {} x PP {} x DP {} (EP {}), gradient accumulation {}, {} layer lines; routing {}; cross-rail {}",
            w.policy,
            w.tp,
            w.pp,
            w.dp(),
            w.ep,
            w.ga,
            w.layers.len(),
            self.comm.routing.as_str(),
            self.comm.relay.as_str()
        );
        write_breakdown(
            &mut o,
            b,
            ["tensor-parallel collectives", "expert-parallel collectives"],
        );
        match self.tokens {
            Some(_) => {
                let _ = writeln!(
                    o,
                    "step time {:.3} s, {:.0} tokens/s",
                    b.step_time_s, b.tokens_per_s
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "step time {:.3} s (give --seq, and --micro-batch, for tokens/s: the file does not carry them)",
                    b.step_time_s
                );
            }
        }
        write_utilisation(&mut o, self.fabric, b);
        let _ = writeln!(
            o,
            "compute times from the workload file (1 tick = 1 ns, as SimAI reads them)"
        );
        o
    }
}

/// `v` as a JSON value; its objects keep their keys in alphabetical order (serde_json's map).
fn json_value(v: &impl Serialize) -> serde_json::Value {
    // Numbers, strings and maps with string keys: serializing them cannot fail.
    serde_json::to_value(v).unwrap_or_default()
}

/// Pretty JSON with a final newline.
pub fn pretty_json(v: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    text
}

/// The breakdown rows; `names` label the tensor- and expert-parallel rows.
fn write_breakdown(o: &mut String, b: &Breakdown, names: [&str; 2]) {
    let mut row = |what: &str, s: f64| {
        let _ = writeln!(
            o,
            "  {what:<34}{:>12.3} ms {:>6.1}%",
            s * 1e3,
            100.0 * s / b.step_time_s
        );
    };
    row("compute", b.compute_s);
    row(names[0], b.tensor_parallel_s);
    row(names[1], b.expert_parallel_s);
    row("pipeline send/recv", b.pipeline_parallel_s);
    if let Some(cp) = b.context_parallel_s {
        row("context-parallel ring (exposed)", cp);
    }
    row("pipeline bubble", b.pipeline_bubble_s);
    row("data-parallel (exposed)", b.data_parallel_exposed_s);
    if b.optimizer_s > 0.0 {
        row("optimizer step", b.optimizer_s);
    }
    let _ = writeln!(
        o,
        "  {:<34}{:>12.3} ms (hidden under backward: {:.3} ms)",
        "data-parallel (total)",
        b.data_parallel_total_s * 1e3,
        (b.data_parallel_total_s - b.data_parallel_exposed_s) * 1e3
    );
}

/// The network utilisation line.
fn write_utilisation(o: &mut String, fabric: &Fabric, b: &Breakdown) {
    let use_: Vec<String> = network_utilisation(fabric, b)
        .into_iter()
        .map(|(tier, u)| format!("{tier} {:.1}%", 100.0 * u))
        .collect();
    if !use_.is_empty() {
        let _ = writeln!(o, "network utilisation over the step: {}", use_.join(", "));
    }
}

/// How the activations are held, for the output: the micro-batches the stage holding the most
/// keeps in flight ([`crate::step::in_flight`]), the recomputation, and the sequence parallelism
/// that divides them by TP.
fn activations_held(model: &Model, par: &Parallelism) -> String {
    let act = crate::step::stage_activation_bytes(model, par);
    let peak = (0..act.len())
        .max_by(|&a, &b| act[a].total_cmp(&act[b]).then(b.cmp(&a)))
        .unwrap_or(0);
    let n = crate::step::in_flight(par, peak);
    let count = if n.fract() == 0.0 {
        format!("{n:.0} micro-batch{}", if n == 1.0 { "" } else { "es" })
    } else {
        format!("{n:.2} micro-batches' worth, interleaved,")
    };
    let mut s = match (par.pp > 1, peak) {
        (false, _) => "1 micro-batch at a time".to_string(),
        (true, 0) => format!("{count} in flight on the first stage"),
        (true, i) => format!("{count} in flight on stage {} of {}", i + 1, par.pp),
    };
    if par.recompute {
        s.push_str(", full recomputation");
    } else if par.recompute_modules.is_empty() {
        s.push_str(", FlashAttention, no recomputation");
    } else {
        s.push_str(&format!(
            ", FlashAttention, {} recomputed",
            par.recompute_modules.names()
        ));
    }
    if par.fp8_activations {
        s.push_str(", linear layers' inputs cached in FP8");
    }
    if par.tp > 1 {
        s.push_str(", divided by TP with sequence parallelism");
    }
    s
}
