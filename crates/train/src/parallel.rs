//! Parallelism and placement: which GPUs form the tensor-, pipeline-, data- and expert-parallel groups.
//!
//! Ranks are laid out as Megatron-LM's launcher does with its default order (tensor fastest, then data,
//! then pipeline): rank = tp_rank + tp x (dp_rank + dp x pp_rank), and rank r runs on GPU r of the
//! cluster (server r / gpus_per_server). So a tensor-parallel group sits inside one server's NVLink
//! domain, data-parallel peers are the same local GPU on different servers (one rail), and pipeline
//! stages are blocks of servers. Expert-parallel groups split each data-parallel group into blocks of
//! `ep` ranks (Megatron-Core's expert parallelism within data parallelism).
//!
//! Context parallelism (`cp`) sits between tensor and data parallelism, as in Megatron-Core's
//! default order `tp-cp-ep-dp-pp`: rank = tp_rank + tp x (cp_rank + cp x (dp_rank + dp x
//! pp_rank)). The ranks of a context-parallel group each hold 1/cp of every sequence; gradients are
//! reduced over data and context parallelism together (Megatron-Core's data-parallel group with
//! context parallelism).

use crate::model::Model;
use std::fmt;

/// The largest micro-batch, sequences.
pub const MAX_MICRO_BATCH: u64 = 1 << 12;
/// The largest global batch, sequences.
pub const MAX_GLOBAL_BATCH: u64 = 1 << 32;

/// The most pipeline stages `--stage-layers` may list (a model has at most 1,024 layers).
pub const MAX_STAGES: usize = 1 << 10;

/// How a model is split across GPUs, and the batch it trains on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parallelism {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    /// Context parallelism: each sequence split over `cp` ranks, attention's keys and values passed
    /// around them in a ring (1: none).
    pub cp: u32,
    pub seq: u64,
    pub micro_batch: u64,
    pub global_batch: u64,
    /// ZeRO stage for data parallelism: 0 (plain all-reduce of gradients), 1 (optimizer state sharded: gradients reduce-scattered, parameters
    /// all-gathered once per step) or 3 (parameters sharded too: all-gathered for every forward and
    /// backward pass).
    pub zero: u32,
    pub recompute: bool,
    /// Gradients accumulated and reduced in BF16 (Megatron-LM's `--grad-reduce-in-bf16`); by
    /// default FP32, as Megatron-LM does with BF16 parameters ([`Parallelism::grad_bytes`]).
    pub grad_bf16: bool,
    /// Layers of each pipeline stage, stage 0 first; empty for an even split (layers / pp each).
    pub stage_layers: Vec<u64>,
    /// Virtual pipeline stages (model chunks) per stage, Megatron's interleaved 1F1B; 1 = plain.
    pub vp: u32,
}

/// Micro-batches per data-parallel rank in a step when no global batch is given: an assumption,
/// enough for a 1F1B pipeline of a few stages to keep its bubble small.
pub const DEFAULT_MICROBATCHES_PER_RANK: u64 = 8;

/// A layout as asked for: the sizes left out are filled in by [`Layout::resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Tensor parallelism; default the GPUs of a server.
    pub tp: Option<u32>,
    pub pp: u32,
    /// Data parallelism; default every GPU left.
    pub dp: Option<u32>,
    pub ep: u32,
    /// Context parallelism (`--cp`, default 1).
    pub cp: u32,
    /// Sequence length; default the model's.
    pub seq: Option<u64>,
    pub micro_batch: u64,
    /// Sequences per step; default the model's published batch, else
    /// [`DEFAULT_MICROBATCHES_PER_RANK`] micro-batches per data-parallel rank
    /// ([`default_global_batch`]).
    pub global_batch: Option<u64>,
    pub zero: u32,
    pub recompute: bool,
    /// `--grad-reduce-in-bf16` ([`Parallelism::grad_bf16`]).
    pub grad_bf16: bool,
    /// Layers of each pipeline stage (`--stage-layers`); empty: an even split, or where the layers
    /// do not split evenly the model's own rule ([`Model::first_last_stage_fewer_layers`]).
    pub stage_layers: Vec<u64>,
    /// Virtual pipeline stages per stage (`--vp`, default 1).
    pub vp: u32,
    /// No layout was asked for (no tp, pp, dp, ep, stage layers or virtual stages given): a
    /// default whose model state and activations do not fit in the GPU's memory is replaced by the layout that
    /// does ([`Layout::resolve_fitted`]). `false`: the defaults as they are.
    pub fit_to_memory: bool,
}

/// A layout with its defaults filled in, and the default it replaced when that did not fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub par: Parallelism,
    pub fitted: Option<Fitted>,
}

/// What [`Layout::resolve_fitted`] searches over: the design's GPUs, the model, the memory a GPU
/// has, the default layout it would replace and the expert-parallel sizes to try.
#[derive(Debug, Clone, Copy)]
struct FitSearch<'a> {
    gpus: u64,
    gpus_per_server: u32,
    model: &'a Model,
    memory: f64,
    default: &'a Parallelism,
    eps: &'a [u32],
}

/// The default layout that [`Layout::resolve_fitted`] replaced, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The default (TP a server, PP 1, DP the rest, EP 1).
    pub default: Parallelism,
    /// What it would hold per GPU ([`crate::step::Memory`]).
    pub default_memory: crate::step::Memory,
    /// The memory it had to fit in, bytes.
    pub memory_bytes: f64,
}

impl Fitted {
    /// One sentence for the output: what was replaced and why.
    pub fn note(&self, chosen: &Parallelism) -> String {
        let m = chosen.microbatches();
        let starved = if m < u64::from(chosen.pp) {
            format!(
                "; no layout with at least as many micro-batches a step as stages fits, and this one has {m} for {} stages, so most of its pipeline idles: --recompute may fit one that does not, or --cp with a layout given",
                chosen.pp
            )
        } else {
            String::new()
        };
        let choose = if chosen.stage_layers.is_empty() {
            "give --tp, --pp, --dp or --ep to choose".to_string()
        } else {
            let layers: Vec<String> = chosen.stage_layers.iter().map(u64::to_string).collect();
            format!(
                "give --tp, --pp, --dp or --ep to choose (this one is --tp {} --pp {} --dp {}{} --stage-layers {})",
                chosen.tp,
                chosen.pp,
                chosen.dp,
                if chosen.ep > 1 {
                    format!(" --ep {}", chosen.ep)
                } else {
                    String::new()
                },
                layers.join(",")
            )
        };
        format!(
            "layout fitted to the GPU's memory: the default {} would hold {:.1} GB per GPU (model state {:.1} GB, activations {:.1} GB), more than the {:.1} GB each GPU has; {} is the first that fits (most GPUs used, then fewest pipeline stages, then fewest expert groups){starved}; {choose}",
            short(&self.default),
            self.default_memory.peak_bytes / 1e9,
            self.default_memory.state_bytes / 1e9,
            self.default_memory.activation_bytes / 1e9,
            self.memory_bytes / 1e9,
            short(chosen)
        )
    }
}

/// A layout in one word per split, `TP8 PP4 DP4`, with VP, EP and CP where above 1
/// (`TP8 PP4 VP2 DP4 EP2`): the one short form, `compare`'s layout row and the notes.
pub fn layout_label(tp: u32, pp: u32, vp: u32, dp: u32, ep: u32, cp: u32) -> String {
    let mut s = format!("TP{tp} PP{pp}");
    if vp > 1 {
        s += &format!(" VP{vp}");
    }
    s += &format!(" DP{dp}");
    if ep > 1 {
        s += &format!(" EP{ep}");
    }
    if cp > 1 {
        s += &format!(" CP{cp}");
    }
    s
}

fn short(p: &Parallelism) -> String {
    layout_label(p.tp, p.pp, p.vp, p.dp, p.ep, p.cp)
}

impl Layout {
    /// The layout when none is asked for: TP a server's GPUs, PP 1, DP every GPU left, EP 1,
    /// the model's sequence, micro-batch 1, ZeRO-1, fitted to the GPU's memory.
    pub fn unasked() -> Layout {
        Layout {
            tp: None,
            pp: 1,
            dp: None,
            ep: 1,
            cp: 1,
            seq: None,
            micro_batch: 1,
            global_batch: None,
            zero: 1,
            recompute: false,
            grad_bf16: false,
            stage_layers: Vec::new(),
            vp: 1,
            fit_to_memory: true,
        }
    }

    /// Like [`Layout::resolve`], and where no layout was asked for ([`Layout::fit_to_memory`])
    /// and the default's model state and activations ([`crate::step::Memory`]) do not fit in the
    /// GPU's `memory_bytes`, the layout that does:
    /// of the layouts with TP a server's GPUs, every pipeline depth up to the layers and, for a
    /// mixture of experts, every expert parallelism that divides the experts (DP the largest
    /// multiple of EP that fits), the first whose state and activations fit, taking the most GPUs used,
    /// then the fewest stages (the smallest bubble), then the fewest expert groups (the least
    /// all-to-all). Layers that do not split evenly go as the model's own rule says, else
    /// [`balanced_stages`]. The same test as the warning `train` prints. When none fits, the
    /// default stays (and warns).
    pub fn resolve_fitted(
        &self,
        gpus: u64,
        gpus_per_server: u32,
        model: &Model,
        memory_bytes: f64,
    ) -> Result<Resolved, LayoutError> {
        let default = self.resolve(gpus, gpus_per_server, model)?;
        let (memory, held) = (memory_bytes, crate::step::Memory::of(model, &default));
        if !self.fit_to_memory || held.peak_bytes <= memory {
            return Ok(Resolved {
                par: default,
                fitted: None,
            });
        }
        let mut eps = vec![1u32];
        if model.experts > 1 {
            eps.extend(
                (2..=model.experts)
                    .filter(|e| model.experts.is_multiple_of(*e))
                    .filter_map(|e| u32::try_from(e).ok()),
            );
        }
        // A pipeline with fewer micro-batches a step than stages fits by leaving stages idle
        // (each holds at most the step's micro-batches: `step::in_flight`); such layouts are
        // taken only where no other fits, and the note says so.
        let mut best: Option<(u64, Parallelism)> = None;
        for starved in [false, true] {
            if best.is_none() {
                let search = FitSearch {
                    gpus,
                    gpus_per_server,
                    model,
                    memory,
                    default: &default,
                    eps: &eps,
                };
                best = self.best_fit(&search, starved);
            }
        }
        Ok(match best {
            Some((_, par)) => Resolved {
                par,
                fitted: Some(Fitted {
                    default,
                    default_memory: held,
                    memory_bytes: memory,
                }),
            },
            None => Resolved {
                par: default,
                fitted: None,
            },
        })
    }

    /// [`Layout::resolve_fitted`]'s search: the first layout that fits, by its order, among
    /// those with at least as many micro-batches a step as stages, or (`starved`) any.
    fn best_fit(&self, search: &FitSearch, starved: bool) -> Option<(u64, Parallelism)> {
        let FitSearch {
            gpus,
            gpus_per_server,
            model,
            memory,
            default,
            eps,
        } = *search;
        let tp = u64::from(default.tp.max(1));
        let mut best: Option<(u64, Parallelism)> = None;
        let max_pp = model.layers.min(gpus / tp);
        for pp in 1..=max_pp {
            let Ok(pp32) = u32::try_from(pp) else { break };
            let dp_max = gpus / (tp * pp);
            // As `resolve` splits them (evenly, or by the model's rule), else balanced.
            let mut stage_layers = model.uneven_stages(pp32);
            if stage_layers.is_empty() && !model.layers.is_multiple_of(pp) {
                stage_layers = balanced_stages(model.layers, pp);
            }
            for &ep in eps {
                let dp = dp_max - dp_max % u64::from(ep);
                let Ok(dp) = u32::try_from(dp) else { continue };
                if dp == 0 {
                    break;
                }
                let world = tp * pp * u64::from(dp);
                if best.as_ref().is_some_and(|(w, _)| *w >= world) {
                    // Ordered by stages then experts: an equal world found earlier wins.
                    continue;
                }
                let candidate = Layout {
                    tp: Some(default.tp),
                    pp: pp32,
                    dp: Some(dp),
                    ep,
                    stage_layers: stage_layers.clone(),
                    fit_to_memory: false,
                    ..self.clone()
                };
                let Ok(par) = candidate.resolve(gpus, gpus_per_server, model) else {
                    continue;
                };
                if !starved && par.microbatches() < u64::from(par.pp) {
                    continue;
                }
                if crate::step::Memory::of(model, &par).peak_bytes <= memory {
                    best = Some((world, par));
                    // More expert groups at this depth use no more GPUs.
                    break;
                }
            }
        }
        best
    }

    /// The parallelism of `model` on a cluster of `gpus` GPUs, `gpus_per_server` to a server, with
    /// the defaults filled in, checked ([`Parallelism::check`]; the error names the flag at fault).
    pub fn resolve(
        &self,
        gpus: u64,
        gpus_per_server: u32,
        model: &Model,
    ) -> Result<Parallelism, LayoutError> {
        // The default: the largest TP that fills a server and splits the heads (`heads_split`).
        let tp = self.tp.unwrap_or_else(|| {
            (1..=gpus_per_server.max(1))
                .rev()
                .find(|&d| gpus_per_server.is_multiple_of(d) && heads_split(model, d))
                .unwrap_or(1)
        });
        let dp = match self.dp {
            Some(d) => d,
            None => u32::try_from(
                gpus / (u64::from(tp.max(1))
                    * u64::from(self.cp.max(1))
                    * u64::from(self.pp.max(1))),
            )
            .unwrap_or(u32::MAX),
        };
        let par = Parallelism {
            tp,
            pp: self.pp,
            dp,
            ep: self.ep,
            cp: self.cp,
            seq: self.seq.unwrap_or(model.seq),
            micro_batch: self.micro_batch,
            // Checked: a huge micro-batch is refused by `check`, not wrapped here.
            global_batch: self
                .global_batch
                .unwrap_or_else(|| default_global_batch(model, dp, self.micro_batch)),
            zero: self.zero,
            recompute: self.recompute,
            grad_bf16: self.grad_bf16,
            stage_layers: if self.stage_layers.is_empty() {
                model.uneven_stages(self.pp)
            } else {
                self.stage_layers.clone()
            },
            vp: self.vp,
        };
        par.check(gpus, gpus_per_server, model)?;
        Ok(par)
    }
}

/// The global batch when none is given: the model's published one ([`Model::global_batch`])
/// rounded to the nearest multiple of dp x micro-batch (at least one; halves up), else
/// [`DEFAULT_MICROBATCHES_PER_RANK`] micro-batches per data-parallel rank. `u64::MAX` where it
/// overflows, for [`Parallelism::check`] to refuse.
pub fn default_global_batch(model: &Model, dp: u32, micro_batch: u64) -> u64 {
    let per_step = u64::from(dp).saturating_mul(micro_batch);
    if model.global_batch == 0 || per_step == 0 {
        return per_step.saturating_mul(DEFAULT_MICROBATCHES_PER_RANK);
    }
    let steps = (model.global_batch + per_step / 2) / per_step;
    steps.max(1).saturating_mul(per_step)
}

/// Whether tensor parallelism `tp` splits the model's attention heads: Megatron divides them over
/// the tensor-parallel ranks (`divide(num_attention_heads, tensor_model_parallel_size)` in its
/// attention layer), and the key/value heads of grouped-query attention too
/// (`divide(num_query_groups, world_size)`), so TP must divide both.
fn heads_split(model: &Model, tp: u32) -> bool {
    tp > 0
        && model.heads.is_multiple_of(u64::from(tp))
        && model.kv_heads.is_multiple_of(u64::from(tp))
}

/// `layers` over `pp` stages as evenly as they go, the extra layers on the middle stages first,
/// then the last, then the first: the first stage also holds the embedding and the last the
/// output layer and loss, which is why the Llama 3 paper (section 3.3.2) puts fewer layers on
/// them. 61 layers on 16 stages: 3, 4 x 13, 3, 3.
pub fn balanced_stages(layers: u64, pp: u64) -> Vec<u64> {
    let pp_us = pp.max(1) as usize;
    let (base, mut extra) = (layers / pp.max(1), layers % pp.max(1));
    let mut stages = vec![base; pp_us];
    let order = (1..pp_us.saturating_sub(1)).chain([pp_us - 1, 0]);
    for i in order {
        if extra == 0 {
            break;
        }
        stages[i] += 1;
        extra -= 1;
    }
    stages
}

/// Why a parallel layout does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutError {
    /// The flag at fault (`tp`, `pp`, ...).
    pub field: &'static str,
    pub message: String,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{}: {}", self.field, self.message)
    }
}

impl std::error::Error for LayoutError {}

/// Rank groups; each inner list is one group, in rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    pub tp: Vec<Vec<u32>>,
    pub dp: Vec<Vec<u32>>,
    /// Pipeline chains, stage 0 first.
    pub pp: Vec<Vec<u32>>,
    pub ep: Vec<Vec<u32>>,
    /// Expert data parallelism: the data-parallel ranks that hold the same experts (one per expert
    /// group of a DP group, at the same place in each), which reduce those experts' gradients.
    pub edp: Vec<Vec<u32>>,
    /// Context-parallel rings (empty without context parallelism).
    pub cp: Vec<Vec<u32>>,
}

impl Groups {
    /// Every boundary between neighbouring pipeline stages as a (sender, receiver) pair, forward
    /// (activations) and backward (gradients): all of them send at once.
    pub fn stage_boundaries(&self) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let forward: Vec<Vec<u32>> = self
            .pp
            .iter()
            .flat_map(|chain| chain.windows(2).map(|w| w.to_vec()))
            .collect();
        let backward = forward
            .iter()
            .map(|p| p.iter().rev().copied().collect())
            .collect();
        (forward, backward)
    }
}

impl Parallelism {
    pub fn world(&self) -> u64 {
        u64::from(self.tp) * u64::from(self.cp.max(1)) * u64::from(self.pp) * u64::from(self.dp)
    }

    /// Layers of each pipeline stage, stage 0 first: the given split, else `layers` / pp each.
    pub fn stages(&self, layers: u64) -> Vec<u64> {
        if self.stage_layers.is_empty() {
            let pp = u64::from(self.pp.max(1));
            vec![layers / pp; pp as usize]
        } else {
            self.stage_layers.clone()
        }
    }

    /// True when every stage has the same layers (the split given or not).
    pub fn even_stages(&self, layers: u64) -> bool {
        let pp = u64::from(self.pp.max(1));
        self.stages(layers)
            .iter()
            .all(|&l| l.saturating_mul(pp) == layers)
    }

    /// Bytes of one gradient value as it is accumulated and reduced over data parallelism: 4
    /// (FP32) unless [`Parallelism::grad_bf16`]. Megatron-LM with BF16 parameters sets
    /// `accumulate_allreduce_grads_in_fp32` unless `--grad-reduce-in-bf16` is given
    /// (megatron/training/arguments.py, "accumulate and all-reduce gradients in fp32 for bfloat16
    /// data type"; param_and_grad_buffer.py then keeps the gradient buffer in FP32), and Llama 3
    /// reduce-scatters its gradients in FP32 ("The Llama 3 Herd of Models", section 3.3.2, "Numerical stability").
    pub fn grad_bytes(&self) -> u64 {
        if self.grad_bf16 {
            2
        } else {
            4
        }
    }

    /// Micro-batches per step per pipeline: global batch / (dp x micro batch).
    pub fn microbatches(&self) -> u64 {
        self.global_batch / (u64::from(self.dp) * self.micro_batch)
    }

    /// Checks the layout against the cluster and the model's heads, layers and experts. Each error names
    /// the flag at fault: the first of tp, pp, dp, ep, seq, micro-batch, global-batch, zero (in that
    /// order) that cannot hold, each checked against the cluster left by the ones before it.
    pub fn check(&self, gpus: u64, gpus_per_server: u32, model: &Model) -> Result<(), LayoutError> {
        let (layers, experts) = (model.layers, model.experts);
        let bad = |field, message: String| Err(LayoutError { field, message });
        // One flag at a time, so a default derived from a bad flag (dp from tp and pp) is not blamed.
        let zero = |field| bad(field, "must be at least 1".to_string());
        if self.tp == 0 {
            return zero("tp");
        }
        if self.tp > gpus_per_server || !gpus_per_server.is_multiple_of(self.tp) {
            let valid: Vec<String> = (1..=gpus_per_server)
                .filter(|d| gpus_per_server.is_multiple_of(*d))
                .map(|d| d.to_string())
                .collect();
            return bad(
                "tp",
                format!(
                    "{}: tensor parallelism stays inside one server's NVLink domain of {gpus_per_server} GPUs; valid: {}",
                    self.tp,
                    valid.join(", ")
                ),
            );
        }
        if !heads_split(model, self.tp) {
            let valid: Vec<String> = (1..=gpus_per_server)
                .filter(|&d| gpus_per_server.is_multiple_of(d) && heads_split(model, d))
                .map(|d| d.to_string())
                .collect();
            return bad(
                "tp",
                format!(
                    "{}: tensor parallelism splits the attention heads, and {} do not split over {} ranks; valid: {}",
                    self.tp,
                    if model.heads.is_multiple_of(u64::from(self.tp.max(1))) {
                        format!("the {} key/value heads of its grouped-query attention", model.kv_heads)
                    } else {
                        format!("{} heads", model.heads)
                    },
                    self.tp,
                    valid.join(", ")
                ),
            );
        }
        if self.cp == 0 {
            return zero("cp");
        }
        if self.cp > 1 {
            let cp = u64::from(self.cp);
            if u64::from(self.tp) * cp > gpus {
                return bad(
                    "cp",
                    format!(
                        "{} context-parallel ranks of tp = {} need {} GPUs but the cluster has {gpus}",
                        self.cp,
                        self.tp,
                        u64::from(self.tp) * cp
                    ),
                );
            }
            if !self.seq.is_multiple_of(2 * cp) {
                return bad(
                    "cp",
                    format!(
                        "the sequence of {} tokens does not split into 2 x cp = {} equal chunks (Megatron-Core balances causal attention that way); valid: a cp for which 2 x cp divides the sequence",
                        self.seq,
                        2 * cp
                    ),
                );
            }
            if self.ep > 1 {
                return bad(
                    "cp",
                    format!(
                        "context parallelism with expert parallelism (ep = {}) is not modelled; valid: cp 1 with --ep, or ep 1 with --cp",
                        self.ep
                    ),
                );
            }
        }
        if self.pp == 0 {
            return zero("pp");
        }
        let tp = u64::from(self.tp) * u64::from(self.cp.max(1));
        let tp_pp = tp * u64::from(self.pp);
        if tp_pp > gpus {
            return bad(
                "pp",
                format!(
                    "{} stages of tp = {}{} need {tp_pp} GPUs but the cluster has {gpus}; valid: at most {}",
                    self.pp,
                    self.tp,
                    if self.cp > 1 { format!(" x cp = {}", self.cp) } else { String::new() },
                    gpus / tp
                ),
            );
        }
        if self.stage_layers.is_empty() {
            if !layers.is_multiple_of(u64::from(self.pp)) {
                return bad(
                    "pp",
                    format!(
                        "{layers} layers do not split evenly into {} stages; give the layers of each stage with --stage-layers",
                        self.pp
                    ),
                );
            }
        } else {
            let given = &self.stage_layers;
            let sum = given.iter().try_fold(0u64, |a, &l| a.checked_add(l));
            let list = || {
                given
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            };
            if given.len() != self.pp as usize {
                return bad(
                    "stage-layers",
                    format!(
                        "{} stages listed ({}) but pp is {}; valid: one layer count per pipeline stage",
                        given.len(),
                        list(),
                        self.pp
                    ),
                );
            }
            if given.contains(&0) || sum != Some(layers) {
                return bad(
                    "stage-layers",
                    format!(
                        "{} must be at least 1 layer per stage and add up to the model's {layers} layers",
                        list()
                    ),
                );
            }
        }
        if self.vp == 0 {
            return zero("vp");
        }
        if self.vp > 1 {
            let vp = u64::from(self.vp);
            if self.pp < 2 {
                return bad(
                    "vp",
                    format!(
                        "{} virtual stages need a pipeline; valid: 1 with pp = 1",
                        self.vp
                    ),
                );
            }
            if let Some(l) = self.stages(layers).iter().find(|l| !l.is_multiple_of(vp)) {
                return bad(
                    "vp",
                    format!(
                        "a stage of {l} layers does not split into {} model chunks; valid: a divisor of every stage's layers",
                        self.vp
                    ),
                );
            }
        }
        if self.dp == 0 {
            return zero("dp");
        }
        if self.world() > gpus {
            return bad(
                "dp",
                format!(
                    "tp x cp x pp x dp = {} GPUs but the cluster has {gpus}; valid: dp at most {}",
                    self.world(),
                    gpus / tp_pp
                ),
            );
        }
        if self.ep == 0 {
            return zero("ep");
        }
        if !self.dp.is_multiple_of(self.ep) {
            return bad(
                "ep",
                format!(
                    "expert parallelism splits data-parallel groups: ep must divide dp = {}",
                    self.dp
                ),
            );
        }
        if self.ep > 1 && experts == 0 {
            return bad(
                "ep",
                format!(
                    "ep = {} needs a mixture-of-experts model ({}); this one is dense (no \
                     experts): valid: ep = 1",
                    self.ep,
                    crate::model::PRESETS
                        .iter()
                        .filter(|(n, _)| crate::model::Model::preset(n).is_ok_and(|m| m.is_moe()))
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        if self.ep > 1 && !experts.is_multiple_of(u64::from(self.ep)) {
            return bad(
                "ep",
                format!(
                    "{experts} experts do not split evenly over ep = {}",
                    self.ep
                ),
            );
        }
        if !(crate::model::MIN_SEQ..=crate::model::MAX_SEQ).contains(&self.seq) {
            return bad(
                "seq",
                format!(
                    "{} tokens; valid: {} to {} (the shortest training sequence of a published \
                     pretraining recipe, BERT's, is {} tokens)",
                    self.seq,
                    crate::model::MIN_SEQ,
                    crate::model::MAX_SEQ,
                    crate::model::MIN_SEQ
                ),
            );
        }
        if !(1..=MAX_MICRO_BATCH).contains(&self.micro_batch) {
            return bad(
                "micro-batch",
                format!(
                    "{} sequences; valid: 1 to {MAX_MICRO_BATCH}",
                    self.micro_batch
                ),
            );
        }
        // dp < 2^32 and micro-batch <= 2^12: the product fits.
        let per_step = u64::from(self.dp) * self.micro_batch;
        if self.global_batch == 0
            || self.global_batch > MAX_GLOBAL_BATCH
            || !self.global_batch.is_multiple_of(per_step)
        {
            return bad(
                "global-batch",
                format!(
                    "the global batch {} must be a positive multiple of dp x micro-batch = {per_step}, at most {MAX_GLOBAL_BATCH}",
                    self.global_batch,
                ),
            );
        }
        if self.vp > 1 && !self.microbatches().is_multiple_of(u64::from(self.pp)) {
            // Megatron-LM's interleaved schedule runs micro-batches in groups of pp.
            return bad(
                "global-batch",
                format!(
                    "{} micro-batches per pipeline; the interleaved schedule (vp {}) needs a multiple of pp = {}",
                    self.microbatches(),
                    self.vp,
                    self.pp
                ),
            );
        }
        if self.zero > 3 {
            return bad("zero", format!("stage {}; valid: 0, 1, 2, 3", self.zero));
        }
        Ok(())
    }

    /// The rank of (tp, cp, dp, pp) coordinates.
    pub fn rank(&self, t: u32, c: u32, d: u32, p: u32) -> u32 {
        t + self.tp * (c + self.cp.max(1) * (d + self.dp * p))
    }

    /// Every group of every kind.
    pub fn groups(&self) -> Groups {
        let cp = self.cp.max(1);
        let mut g = Groups {
            tp: Vec::new(),
            dp: Vec::new(),
            pp: Vec::new(),
            ep: Vec::new(),
            edp: Vec::new(),
            cp: Vec::new(),
        };
        for p in 0..self.pp {
            for d in 0..self.dp {
                for c in 0..cp {
                    g.tp.push((0..self.tp).map(|t| self.rank(t, c, d, p)).collect());
                }
                if cp > 1 {
                    for t in 0..self.tp {
                        g.cp.push((0..cp).map(|c| self.rank(t, c, d, p)).collect());
                    }
                }
            }
            for t in 0..self.tp {
                // Data and context parallel ranks together reduce the gradients; expert groups
                // (without context parallelism, which `check` keeps apart) split the data ranks.
                let dp: Vec<u32> = (0..self.dp)
                    .flat_map(|d| (0..cp).map(move |c| (c, d)))
                    .map(|(c, d)| self.rank(t, c, d, p))
                    .collect();
                for chunk in dp.chunks(self.ep as usize) {
                    g.ep.push(chunk.to_vec());
                }
                let ep = (self.ep as usize).clamp(1, dp.len().max(1));
                for k in 0..ep {
                    g.edp.push(dp.iter().skip(k).step_by(ep).copied().collect());
                }
                g.dp.push(dp);
            }
        }
        for d in 0..self.dp {
            for c in 0..cp {
                for t in 0..self.tp {
                    g.pp.push((0..self.pp).map(|p| self.rank(t, c, d, p)).collect());
                }
            }
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defaults on 16 servers of 8 GPUs: TP fills a server, DP takes every GPU left over the
    /// stages, the model's sequence length, 8 micro-batches per data-parallel rank.
    #[test]
    fn layout_defaults_fill_the_cluster() {
        let model = Model::preset("llama3-70b").unwrap();
        let layout = Layout {
            pp: 4,
            ..Layout::unasked()
        };
        let p = layout.resolve(128, 8, &model).unwrap();
        assert_eq!((p.tp, p.pp, p.dp, p.seq), (8, 4, 4, model.seq));
        assert_eq!(p.global_batch, 4 * DEFAULT_MICROBATCHES_PER_RANK);
        // A given size wins, and is checked against the cluster.
        let e = Layout {
            tp: Some(16),
            ..layout.clone()
        }
        .resolve(128, 8, &model)
        .unwrap_err();
        assert_eq!(e.field, "tp");
    }

    /// 32 layers, no experts, 32 heads.
    fn dense() -> Model {
        Model::preset("llama3-8b").unwrap()
    }

    /// 32 layers, 8 experts, 32 heads.
    fn moe() -> Model {
        Model::preset("mixtral-8x7b").unwrap()
    }

    fn par(tp: u32, pp: u32, dp: u32, ep: u32) -> Parallelism {
        Parallelism {
            tp,
            pp,
            dp,
            ep,
            cp: 1,
            seq: 4096,
            micro_batch: 1,
            global_batch: u64::from(dp) * 8,
            zero: 1,
            recompute: false,
            grad_bf16: false,
            stage_layers: Vec::new(),
            vp: 1,
        }
    }

    #[test]
    fn megatron_order_keeps_tp_in_a_server_and_dp_on_a_rail() {
        let p = par(8, 2, 4, 1);
        let g = p.groups();
        assert_eq!(g.tp.len(), 8);
        assert_eq!(g.tp[0], (0..8).collect::<Vec<_>>());
        // DP peers: the same local GPU (rail) on consecutive servers.
        assert_eq!(g.dp[3], vec![3, 11, 19, 27]);
        // Pipeline stages are blocks of 4 servers.
        assert_eq!(g.pp[0], vec![0, 32]);
        let gpus_per_server = 8;
        for group in &g.dp {
            let rails: std::collections::BTreeSet<u32> =
                group.iter().map(|r| r % gpus_per_server).collect();
            assert_eq!(rails.len(), 1, "a DP group stays on one rail");
        }
    }

    #[test]
    fn every_rank_is_in_exactly_one_group_of_each_kind() {
        let p = par(4, 2, 8, 4);
        let g = p.groups();
        for groups in [&g.tp, &g.dp, &g.pp, &g.ep, &g.edp] {
            let mut all: Vec<u32> = groups.iter().flatten().copied().collect();
            all.sort_unstable();
            assert_eq!(all, (0..64).collect::<Vec<_>>());
        }
        assert!(g.ep.iter().all(|e| e.len() == 4));
        // Expert replicas: one rank of each expert group, 8 / 4 = 2 of them.
        assert!(g.edp.iter().all(|e| e.len() == 2));
        assert_eq!(g.edp[0], vec![g.dp[0][0], g.dp[0][4]]);
    }

    #[test]
    fn layouts_that_do_not_fit_name_the_flag() {
        assert_eq!(
            par(3, 1, 1, 1).check(8, 8, &dense()).unwrap_err().field,
            "tp"
        );
        assert_eq!(
            par(8, 3, 1, 1).check(64, 8, &dense()).unwrap_err().field,
            "pp"
        );
        assert_eq!(
            par(8, 1, 16, 1).check(64, 8, &dense()).unwrap_err().field,
            "dp"
        );
        assert_eq!(
            par(8, 1, 4, 3).check(64, 8, &moe()).unwrap_err().field,
            "ep"
        );
        assert!(par(8, 2, 4, 2).check(64, 8, &moe()).is_ok());
    }

    /// The flag at fault is named: a TP past the server is TP's fault (it once blamed --dp), a
    /// zero micro-batch is the micro-batch's (it once blamed --global-batch), a zero sequence is
    /// refused, and a PP past the cluster is PP's.
    #[test]
    fn each_error_names_the_flag_at_fault() {
        let field = |p: &Parallelism| p.check(64, 8, &moe()).unwrap_err().field;
        assert_eq!(field(&par(1_000_000_000, 1, 1, 1)), "tp");
        assert_eq!(field(&par(16, 1, 1, 1)), "tp");
        assert_eq!(field(&par(8, 16, 1, 1)), "pp");
        assert_eq!(field(&par(8, 2, 1_000_000, 1)), "dp");
        let mut p = par(8, 1, 8, 1);
        p.micro_batch = 0;
        assert_eq!(field(&p), "micro-batch");
        p.micro_batch = u64::MAX;
        assert_eq!(field(&p), "micro-batch");
        let mut p = par(8, 1, 8, 1);
        p.seq = 0;
        assert_eq!(field(&p), "seq");
        p.seq = u64::MAX;
        assert_eq!(field(&p), "seq");
        let mut p = par(8, 1, 8, 1);
        p.global_batch = u64::MAX;
        assert_eq!(field(&p), "global-batch");
        assert!(par(8, 1, 8, 1).check(64, 8, &moe()).is_ok());
    }

    /// Layers per stage: one count per stage, each at least 1, adding up to the model's; the
    /// error names --stage-layers. The model's rule fills the split where the layers do not divide
    /// (Llama 3 405B on 16 stages: 7, 8 x 14, 7, as the Llama 3 paper's section 3.3.2 has it) and
    /// leaves even splits alone.
    #[test]
    fn stage_layers_are_checked_and_filled_from_the_model() {
        let model = Model::preset("llama3-405b").unwrap();
        let mut published = vec![8u64; 16];
        published[0] = 7;
        published[15] = 7;
        assert_eq!(model.uneven_stages(16), published);
        assert_eq!(model.uneven_stages(4), vec![31, 32, 32, 31]);
        assert!(model.uneven_stages(9).is_empty(), "126 layers split evenly");
        assert!(model.uneven_stages(1).is_empty());
        assert!(model.uneven_stages(5).is_empty(), "128 is no multiple of 5");
        let layout = Layout {
            tp: Some(8),
            pp: 16,
            ..Layout::unasked()
        };
        let p = layout.resolve(8192, 8, &model).unwrap();
        assert_eq!(p.stage_layers, published);
        assert_eq!(p.stages(126), published);
        assert!(!p.even_stages(126));
        // A split given wins; a wrong count or sum names the flag.
        let mut given = published.clone();
        given.swap(0, 1);
        let p = Layout {
            stage_layers: given.clone(),
            ..layout.clone()
        }
        .resolve(8192, 8, &model)
        .unwrap();
        assert_eq!(p.stage_layers, given);
        for bad in [vec![63, 63], vec![8; 16], {
            let mut z = published.clone();
            z[1] = 0;
            z[2] = 16;
            z
        }] {
            let e = Layout {
                stage_layers: bad,
                ..layout.clone()
            }
            .resolve(8192, 8, &model)
            .unwrap_err();
            assert_eq!(e.field, "stage-layers", "{e}");
        }
        // A model without the rule: an uneven pp is refused, naming --pp and --stage-layers.
        let e = Layout {
            pp: 3,
            ..layout.clone()
        }
        .resolve(8192, 8, &Model::preset("llama3-70b").unwrap())
        .unwrap_err();
        assert_eq!(e.field, "pp");
        assert!(e.message.contains("--stage-layers"), "{e}");
        // An even pp keeps the even split (no list).
        let p = Layout { pp: 9, ..layout }.resolve(8064, 8, &model).unwrap();
        assert!(p.stage_layers.is_empty() && p.even_stages(126));
    }

    /// DeepSeek-V3's first 3 layers are dense: on 3, 4 x 14, 2 layers the first stage has no MoE
    /// layer and the others all theirs.
    #[test]
    fn moe_layers_follow_the_stages() {
        let model = Model::preset("deepseek-v3-like").unwrap();
        let mut stages = vec![4u64; 16];
        stages[0] = 3;
        stages[15] = 2;
        let mut moe = stages.clone();
        moe[0] = 0;
        assert_eq!(model.moe_layers_per_stage(&stages), moe);
        assert_eq!(model.moe_layers_per_stage(&[2, 59]), vec![0, 58]);
        assert_eq!(
            Model::preset("llama3-8b")
                .unwrap()
                .moe_layers_per_stage(&[16, 16]),
            vec![0, 0]
        );
    }

    /// Virtual stages must divide every stage's layers, need a pipeline, and the interleaved
    /// schedule needs the micro-batches in groups of pp (Megatron-LM's rule).
    #[test]
    fn virtual_stages_are_checked() {
        let mut p = par(8, 4, 2, 1);
        p.global_batch = 8;
        p.vp = 4;
        assert!(p.check(64, 8, &dense()).is_ok());
        p.vp = 3;
        assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "vp");
        p.vp = 0;
        assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "vp");
        p.vp = 2;
        p.global_batch = 12;
        assert_eq!(p.check(64, 8, &dense()).unwrap_err().field, "global-batch");
        let mut q = par(8, 1, 8, 1);
        q.vp = 2;
        assert_eq!(q.check(64, 8, &dense()).unwrap_err().field, "vp");
    }

    #[test]
    fn balanced_stages_put_the_extra_layers_in_the_middle() {
        assert_eq!(
            balanced_stages(61, 16),
            [vec![3], vec![4; 13], vec![3, 3]].concat()
        );
        assert_eq!(balanced_stages(20, 3), vec![6, 7, 7]);
        assert_eq!(balanced_stages(8, 4), vec![2; 4]);
        assert_eq!(balanced_stages(7, 1), vec![7]);
        for (layers, pp) in [(61, 2), (61, 7), (126, 16), (5, 5)] {
            let s = balanced_stages(layers, pp);
            assert_eq!(s.iter().sum::<u64>(), layers);
            assert!(s.iter().max().unwrap() - s.iter().min().unwrap() <= 1);
        }
    }

    /// With no layout asked for, a default whose model state and activations fit stays; one that
    /// does not is replaced by the first layout that fits, using the most GPUs; an asked-for
    /// layout is never replaced.
    #[test]
    fn an_unasked_layout_is_fitted_to_the_gpus_memory() {
        let held = |m: &Model, p: &Parallelism| crate::step::Memory::of(m, p).peak_bytes;
        // An H100's 80 GiB (`GpuModel::memory_bytes`).
        let mem = 80.0 * f64::from(1u32 << 30);
        let small = Model::preset("llama3-8b").unwrap();
        let r = Layout::unasked()
            .resolve_fitted(128, 8, &small, mem)
            .unwrap();
        assert_eq!(r.fitted, None);
        assert_eq!((r.par.tp, r.par.pp, r.par.dp, r.par.ep), (8, 1, 16, 1));

        let big = Model::preset("llama3-405b").unwrap();
        let r = Layout::unasked()
            .resolve_fitted(1016, 8, &big, mem)
            .unwrap();
        let f = r.fitted.clone().expect("405B does not fit on TP 8 alone");
        assert!(f.default_memory.peak_bytes > mem);
        assert!(held(&big, &r.par) <= mem);
        // The first stage holds a micro-batch in flight for each stage, so the activations stay
        // near all 126 layers' for one micro-batch however deep the pipeline (Korthikanti et al.,
        // section 4.2.3): the model state has to shrink to what is left.
        assert_eq!((r.par.tp, r.par.pp, r.par.dp), (8, 42, 3));
        // Every layout using more GPUs, or as many with fewer stages, does not fit.
        for pp in 1..=r.par.pp {
            let dp = (1016 / (8 * pp as u64)) as u32;
            let world = 8 * u64::from(pp) * u64::from(dp);
            if world < r.par.world() || (world == r.par.world() && pp >= r.par.pp) {
                continue;
            }
            let layers = if 126 % pp == 0 {
                Vec::new()
            } else {
                balanced_stages(126, u64::from(pp))
            };
            let q = Layout {
                tp: Some(8),
                pp,
                dp: Some(dp),
                stage_layers: layers,
                fit_to_memory: false,
                ..Layout::unasked()
            }
            .resolve(1016, 8, &big)
            .unwrap();
            assert!(held(&big, &q) > mem, "pp {pp} fits");
        }
        assert!(
            f.note(&r.par).contains("TP8 PP1 DP127"),
            "{}",
            f.note(&r.par)
        );

        // A mixture of experts takes expert parallelism too.
        let moe = Model::preset("deepseek-v3-like").unwrap();
        let r = Layout::unasked()
            .resolve_fitted(2048, 8, &moe, mem)
            .unwrap();
        assert!(r.fitted.is_some());
        assert!(r.par.ep > 1 && r.par.world() == 2048, "{:?}", r.par);
        assert!(held(&moe, &r.par) <= mem);

        // Asked for: kept, even when it does not fit.
        let asked = Layout {
            pp: 1,
            fit_to_memory: false,
            ..Layout::unasked()
        };
        let r = asked.resolve_fitted(1016, 8, &big, mem).unwrap();
        assert_eq!((r.par.pp, r.fitted), (1, None));
        // Nothing fits: the default stays.
        let r = Layout::unasked().resolve_fitted(8, 8, &big, mem).unwrap();
        assert_eq!((r.par.pp, r.par.dp, r.fitted), (1, 1, None));
    }

    /// The default global batch is the model's published one, to the nearest multiple of
    /// dp x micro-batch; without one, 8 micro-batches per data-parallel rank.
    #[test]
    fn the_default_global_batch_is_the_published_one() {
        let m405 = Model::preset("llama3-405b").unwrap();
        assert_eq!(m405.global_batch, 2048);
        assert_eq!(default_global_batch(&m405, 42, 1), 2058);
        assert_eq!(default_global_batch(&m405, 64, 2), 2048);
        assert_eq!(default_global_batch(&m405, 4096, 1), 4096, "at least one");
        let ds = Model::preset("deepseek-v3-like").unwrap();
        assert_eq!(default_global_batch(&ds, 32, 1), 15360);
        let m70 = Model::preset("llama3-70b").unwrap();
        assert_eq!(m70.global_batch, 0);
        assert_eq!(
            default_global_batch(&m70, 16, 1),
            16 * DEFAULT_MICROBATCHES_PER_RANK
        );
        // Published batches name their source.
        let text = toml::to_string(&m405).unwrap().replace(
            &format!("global_batch_source = {:?}", m405.global_batch_source),
            "global_batch_source = \"\"",
        );
        let e = Model::parse(&text, "m.toml").unwrap_err();
        assert!(e.0.contains("global_batch_source"), "{e}");
    }

    /// Megatron-Core's order tp-cp-dp-pp: a context-parallel ring is the same TP rank of
    /// consecutive TP groups; data-parallel gradients reduce over data and context ranks together;
    /// every rank is in exactly one group of each kind.
    #[test]
    fn context_parallel_groups_sit_between_tensor_and_data() {
        let p = Parallelism {
            cp: 2,
            ..par(4, 2, 2, 1)
        };
        assert_eq!(p.world(), 32);
        let g = p.groups();
        assert_eq!(g.cp[0], vec![0, 4]);
        assert_eq!(g.tp[1], vec![4, 5, 6, 7]);
        assert_eq!(g.dp[0], vec![0, 4, 8, 12]);
        assert_eq!(g.pp[0], vec![0, 16]);
        for groups in [&g.tp, &g.dp, &g.pp, &g.cp] {
            let mut all: Vec<u32> = groups.iter().flatten().copied().collect();
            all.sort_unstable();
            assert_eq!(all, (0..32).collect::<Vec<_>>());
        }
        // The checks: 2 x cp divides the sequence; not with expert parallelism.
        let bad = Parallelism {
            seq: 4097,
            ..p.clone()
        };
        assert_eq!(bad.check(32, 8, &dense()).unwrap_err().field, "cp");
        let with_ep = Parallelism { ep: 2, ..p.clone() };
        assert_eq!(with_ep.check(32, 8, &moe()).unwrap_err().field, "cp");
        assert!(p.check(32, 8, &dense()).is_ok());
    }
}
