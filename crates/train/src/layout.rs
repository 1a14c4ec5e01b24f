//! A layout as asked for, its defaults filled in ([`Layout::resolve`]), fitted to the GPU's memory
//! where none was asked for, and its virtual stages chosen where none were given
//! ([`Layout::resolve_fitted`]).

use crate::model::Model;
use crate::parallelism::{
    balanced_stages, default_global_batch, heads_split, layout_label, LayoutError, Parallelism,
};
use crate::recompute::Modules;
use crate::schedule::Schedule;

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
    /// Expert tensor parallelism (`--etp`, `Parallelism::etp`); `None`: as tp.
    pub etp: Option<u32>,
    /// Sequence length; default the model's.
    pub seq: Option<u64>,
    pub micro_batch: u64,
    /// Sequences per step; default the model's published batch, else
    /// [`DEFAULT_MICROBATCHES_PER_RANK`](crate::parallelism::DEFAULT_MICROBATCHES_PER_RANK) micro-batches per data-parallel rank
    /// ([`default_global_batch`]).
    pub global_batch: Option<u64>,
    pub zero: u32,
    pub recompute: bool,
    /// `--grad-reduce-in-bf16` ([`Parallelism::grad_bf16`]).
    pub grad_bf16: bool,
    /// Layers of each pipeline stage (`--stage-layers`); empty: an even split, or where the layers
    /// do not split evenly the model's own rule ([`Model::first_last_stage_fewer_layers`]).
    pub stage_layers: Vec<u64>,
    /// Virtual pipeline stages per stage (`--vp`); `None`: chosen as [`Layout::resolve_fitted`]
    /// says (1 where it does not choose).
    pub vp: Option<u32>,
    /// The pipeline schedule (`--schedule`, default 1F1B).
    pub schedule: Schedule,
    /// Modules recomputed selectively (`--recompute-modules`).
    pub recompute_modules: Modules,
    /// FP8 parameters (`--fp8-param-gather`, [`Parallelism::fp8_params`]).
    pub fp8_params: bool,
    /// `--fp8-activation-cache` ([`Parallelism::fp8_activations`]).
    pub fp8_activations: bool,
    /// `--bf16-moments` ([`Parallelism::bf16_moments`]).
    pub bf16_moments: bool,
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
    /// Where the virtual stages were not given and were chosen ([`Layout::choose_vp`]): why.
    pub virtual_stages: Option<String>,
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
    /// What it would hold per GPU ([`crate::memory::Memory`]).
    pub default_memory: crate::memory::Memory,
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
            vp: None,
            schedule: Schedule::OneFOneB,
            recompute_modules: Modules::default(),
            fp8_params: false,
            fp8_activations: false,
            bf16_moments: false,
            etp: None,
            fit_to_memory: true,
        }
    }

    /// Like [`Layout::resolve`], and where no layout was asked for ([`Layout::fit_to_memory`])
    /// and the default's model state and activations ([`crate::memory::Memory`]) do not fit in the
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
        let mut resolved = self.resolve_memory(gpus, gpus_per_server, model, memory_bytes)?;
        if self.vp.is_none() {
            if let Some((par, why)) =
                self.choose_vp(&resolved.par, gpus, gpus_per_server, model, memory_bytes)
            {
                resolved.par = par;
                resolved.virtual_stages = Some(why);
            }
        }
        Ok(resolved)
    }

    /// Virtual stages as a Megatron user picks them when the run does not say: an interleaved
    /// 1F1B pipeline (the schedule every Megatron-Core recipe of more than one stage runs) with
    /// the most model chunks a stage whose activations and state still fit in the GPU's memory,
    /// up to one layer a chunk (NVIDIA's GPT-3 175B recipe runs 12 stages of one layer a chunk;
    /// Llama 3's "the first model chunk on the first stage has only the embedding" is one layer a
    /// chunk too). More chunks shrink the bubble, (p - 1)/v slots, and, past two, the first
    /// stage's activations ([`crate::memory::in_flight`]). None where there is no pipeline, the
    /// schedule is not 1F1B, the micro-batches do not come in groups of pp, or no v > 1 fits.
    pub fn choose_vp(
        &self,
        par: &Parallelism,
        gpus: u64,
        gpus_per_server: u32,
        model: &Model,
        memory_bytes: f64,
    ) -> Option<(Parallelism, String)> {
        if par.pp < 2 || par.schedule != Schedule::OneFOneB {
            return None;
        }
        let most = par.stages(model.layers).into_iter().max().unwrap_or(1);
        let most = u32::try_from(most).unwrap_or(u32::MAX);
        (2..=most).rev().find_map(|v| {
            let candidate = Parallelism { vp: v, ..par.clone() };
            candidate.check(gpus, gpus_per_server, model).ok()?;
            let held = crate::memory::Memory::of(model, &candidate).peak_bytes;
            (held <= memory_bytes).then(|| {
                let why = format!(
                    "virtual stages not given: {v} a stage chosen, the most that fit in the GPU's memory ({:.1} of {:.1} GB) up to one layer a chunk, as a Megatron-Core user runs the interleaved schedule; give --vp to choose",
                    held / 1e9,
                    memory_bytes / 1e9
                );
                (candidate, why)
            })
        })
    }

    /// [`Layout::resolve_fitted`] without the choice of virtual stages.
    fn resolve_memory(
        &self,
        gpus: u64,
        gpus_per_server: u32,
        model: &Model,
        memory_bytes: f64,
    ) -> Result<Resolved, LayoutError> {
        let default = self.resolve(gpus, gpus_per_server, model)?;
        let (memory, held) = (memory_bytes, crate::memory::Memory::of(model, &default));
        if !self.fit_to_memory || held.peak_bytes <= memory {
            return Ok(Resolved {
                par: default,
                fitted: None,
                virtual_stages: None,
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
                virtual_stages: None,
            },
            None => Resolved {
                par: default,
                fitted: None,
                virtual_stages: None,
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
                if crate::memory::Memory::of(model, &par).peak_bytes <= memory {
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
            vp: self.vp.unwrap_or(1),
            schedule: self.schedule,
            recompute_modules: self.recompute_modules,
            fp8_params: self.fp8_params,
            fp8_activations: self.fp8_activations,
            bf16_moments: self.bf16_moments,
            etp: self.etp,
        };
        par.check(gpus, gpus_per_server, model)?;
        Ok(par)
    }
}
