//! The training job `train`, `compare` and `report --compare` predict, declared once: the layout
//! flags (`--tp`, `--pp`, ... `--zero`), how the model trains (`RecipeArgs`), the cost assumptions
//! behind a cost per million tokens (`CostArgs`), and the model they name.

use crate::design::RunOverrides;
use crate::error::CliError;
use clap::Args;
use railyard_study::tco::Assumptions;
use railyard_study::train::{
    Layout, Model, Modules, Precision, Relay, Schedule, StepConfig, TrainError, MAX_STAGES,
};
use railyard_study::RoutingKind;

/// How the training job is laid out on the GPUs: the flags of `train`, `compare` and `report
/// --compare` (where a design's pairs, `DESIGN:tp=4`, override them).
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    /// Tensor parallelism (inside a server); default the GPUs per server.
    #[arg(long, value_name = "N")]
    pub tp: Option<u32>,
    /// Pipeline stages; default 1, or with no layout flag at all, as the layout fitted to the GPU's
    /// memory has it (of the layouts whose model state and activations fit, the one using the most
    /// GPUs, then the fewest stages).
    #[arg(long, value_name = "N")]
    pub pp: Option<u32>,
    /// Data parallelism; default every remaining GPU.
    #[arg(long, value_name = "N")]
    pub dp: Option<u32>,
    /// Expert parallelism (divides dp, or with --etp ep x etp divides tp x cp x dp); default 1, or with no layout flag at all, the least that
    /// lets the model state and activations fit in the GPU's memory.
    #[arg(long, value_name = "N")]
    pub ep: Option<u32>,
    /// Context parallelism: each sequence split over N ranks (ring attention, as Megatron-Core's
    /// --context-parallel-size); 2 x N must divide the sequence.
    #[arg(long, value_name = "N")]
    pub cp: Option<u32>,
    /// Expert tensor parallelism: the ranks one expert's GEMMs are split over (Megatron-Core's
    /// --expert-tensor-parallel-size); default tp. Given, the expert groups fold over the
    /// tp x cp x dp ranks (MoE parallel folding): ep x etp must divide tp x cp x dp, and --cp
    /// may go with --ep.
    #[arg(long, value_name = "N")]
    pub etp: Option<u32>,
    /// Sequence length; default the model's.
    #[arg(long, value_name = "N")]
    pub seq: Option<u64>,
    /// Sequences per micro-batch.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub micro_batch: u64,
    /// Sequences per step; default the model's published batch rounded to a multiple of dp x
    /// micro-batch, else 8 micro-batches per data-parallel rank.
    #[arg(long, value_name = "N")]
    pub global_batch: Option<u64>,
    /// ZeRO stage: 0 (gradients all-reduced, nothing sharded), 1 (optimizer state sharded over the
    /// data-parallel ranks), 2 (and the gradients, reduce-scattered after every micro-batch) or 3
    /// (and the weights, gathered for every pass).
    #[arg(long, value_name = "0|1|2|3", default_value_t = 1)]
    pub zero: u32,
    /// Recompute activations in the backward pass (full recomputation: 8 x the parameters' FLOPs a
    /// token instead of 6, and only each layer's input kept).
    #[arg(long)]
    pub recompute: bool,
    /// Recompute these modules' activations in the backward pass (Megatron-Core's
    /// --recompute-modules with --recompute-granularity selective), comma-separated: core_attn,
    /// mla_up_proj, layernorm, mlp, moe_act, moe.
    #[arg(long, value_name = "M,M,...", value_parser = Modules::parse, conflicts_with = "recompute")]
    pub recompute_modules: Option<Modules>,
    #[command(flatten)]
    pub recipe: RecipeArgs,
}

impl LayoutArgs {
    /// The layout asked for, with a design's pairs (`tp=`, `pp=`, ... `zero=`) over the flags; with
    /// no layout flag or pair at all (and no `--cp`), fitted to the GPU's memory.
    pub fn layout(&self, run: &RunOverrides) -> Layout {
        let (tp, pp, dp, ep) = (
            run.tp.or(self.tp),
            run.pp.or(self.pp),
            run.dp.or(self.dp),
            run.ep.or(self.ep),
        );
        Layout {
            tp,
            pp: pp.unwrap_or(1),
            dp,
            ep: ep.unwrap_or(1),
            cp: self.cp.unwrap_or(1),
            seq: self.seq,
            micro_batch: run.micro_batch.unwrap_or(self.micro_batch),
            global_batch: run.global_batch.or(self.global_batch),
            zero: run.zero.unwrap_or(self.zero),
            recompute: self.recompute,
            recompute_modules: self.recompute_modules.unwrap_or_default(),
            fp8_params: self.recipe.fp8_param_gather,
            fp8_activations: self.recipe.fp8_activation_cache,
            bf16_moments: self.recipe.bf16_moments,
            etp: self.etp,
            grad_bf16: self.recipe.grad_reduce_in_bf16,
            stage_layers: self.recipe.stage_layers(),
            vp: self.recipe.vp,
            schedule: self.recipe.schedule,
            fit_to_memory: unasked(tp, pp, dp, ep, &self.recipe)
                && self.cp.is_none()
                && self.etp.is_none(),
        }
    }
}

/// How the model trains, beyond its layout: the stage split, interleaving, number format and
/// expert overlap. `train`, `compare` and `report --compare` flatten these in, so a step is priced
/// the same way by each.
#[derive(Debug, Clone, Args)]
pub struct RecipeArgs {
    /// Layers of each pipeline stage, first to last, comma-separated (e.g. 7,8,...,8,7 for Llama 3
    /// 405B on 16 stages); one per stage, adding up to the model's layers. Default: an even split,
    /// or the model's own rule where the layers do not split evenly.
    #[arg(long, value_name = "L,L,...", value_parser = parse_stage_layers)]
    pub stage_layers: Option<StageLayers>,
    /// Virtual pipeline stages per stage (Megatron's interleaved 1F1B): the bubble shrinks vp
    /// times, stage boundaries are crossed vp times per micro-batch. Need not divide a stage's
    /// layers (chunks as even as they go, as Megatron-Core's pipeline layouts allow); the
    /// micro-batches per pipeline must be a multiple of pp. Default: with more than one stage,
    /// the most (up to one layer a chunk) that fit in the GPU's memory, said in the output.
    #[arg(long, value_name = "N")]
    pub vp: Option<u32>,
    /// Pipeline schedule: 1f1b (interleaved with --vp above 1), zero-bubble (ZB-H1: weight
    /// gradients fill the bubble) or dualpipe (DeepSeek-V3: both ends fed, expert all-to-all
    /// hidden under the paired chunk, two parameter copies).
    #[arg(long, value_name = "1f1b|zero-bubble|dualpipe", default_value = "1f1b",
          value_parser = Schedule::parse)]
    pub schedule: Schedule,
    /// Overlap tensor-parallel communication with the GEMMs it feeds (Megatron-Core's
    /// --tp-comm-overlap, torchtitan's async TP): one chunk of it stays exposed.
    #[arg(long)]
    pub tp_overlap: bool,
    /// With --vp above 1: the warm-up and cool-down pipeline sends asynchronous too, as the
    /// steady ones (Megatron-Core's overlap_p2p_comm_warmup_flush, default false there; the Llama
    /// 3 paper's "asynchronous point-to-point communication in PP"): only the sends the next
    /// chunk waits for stay exposed, the pipeline's fill and each wrap from the last stage back
    /// to the first.
    #[arg(long)]
    pub overlap_p2p_warmup_flush: bool,
    /// With --precision fp8: keep the parameters in FP8 and all-gather them at one byte a value
    /// (Megatron-Core's --fp8-param-gather, torchtitan's FP8 FSDP all-gather).
    #[arg(long)]
    pub fp8_param_gather: bool,
    /// With --precision fp8: cache the activations the linear layers keep for the backward pass in
    /// FP8 (one FP32 scale per 128 values; the attention output projection's input in E5M6), as
    /// DeepSeek-V3 trains (its report's section 3.3.3).
    #[arg(long)]
    pub fp8_activation_cache: bool,
    /// With --precision fp8: GEMMs with fine-grained block scaling (1x128 activation tiles,
    /// 128x128 weight blocks, as DeepSeek-V3 trains with DeepGEMM), timed at the kernel table's
    /// measured block-scaled rates where the GPU generation has them (Hopper: DeepGEMM on H800).
    #[arg(long)]
    pub fp8_blockwise: bool,
    /// Keep AdamW's moments in BF16 (master weights and gradients stay FP32): 8 bytes of optimizer
    /// state a parameter instead of 12, as DeepSeek-V3 trains (its report's section 3.3.3).
    #[arg(long)]
    pub bf16_moments: bool,
    /// Number format of the GEMMs: bf16, or fp8 (the linear layers at the GPU's dense FP8 peak,
    /// attention and the output layer at BF16; MFU against the FP8 peak).
    #[arg(long, value_name = "bf16|fp8", default_value = "bf16", value_parser = Precision::parse)]
    pub precision: Precision,
    /// With --precision fp8: expert dispatch all-to-alls in FP8 (with one FP32 scale per 128
    /// values), combines in BF16, as DeepSeek-V3 trains.
    #[arg(long)]
    pub fp8_dispatch: bool,
    /// Hide expert all-to-all under compute as DeepSeek-V3's DualPipe overlaps it: exposed =
    /// max(0, all-to-all - compute) per micro-batch on each stage.
    #[arg(long)]
    pub ep_overlap: bool,
    /// Accumulate and reduce gradients in BF16 (Megatron-LM's --grad-reduce-in-bf16): 2 bytes a
    /// gradient in memory and on the data-parallel reduce-scatter or all-reduce, where the default
    /// is FP32, 4, as Megatron-LM trains with BF16 parameters.
    #[arg(long)]
    pub grad_reduce_in_bf16: bool,
}

/// True when no layout flag was given (tp, pp, dp, ep, stage layers, virtual stages): the layout
/// is then fitted to the GPU's memory ([`Layout::resolve_fitted`]).
fn unasked(
    tp: Option<u32>,
    pp: Option<u32>,
    dp: Option<u32>,
    ep: Option<u32>,
    recipe: &RecipeArgs,
) -> bool {
    tp.is_none()
        && pp.is_none()
        && dp.is_none()
        && ep.is_none()
        && recipe.stage_layers.is_none()
        && recipe.vp.is_none()
}

impl RecipeArgs {
    /// Layers per stage as given (empty: the default split).
    pub fn stage_layers(&self) -> Vec<u64> {
        self.stage_layers.clone().map(|s| s.0).unwrap_or_default()
    }

    /// The step configuration at `efficiency` (`None`: by operation); `--fp8-dispatch`,
    /// `--fp8-param-gather`, `--fp8-activation-cache` and `--fp8-blockwise` need `--precision fp8`.
    pub fn step_config(&self, efficiency: Option<f64>) -> Result<StepConfig, CliError> {
        for (on, flag, what) in [
            (self.fp8_dispatch, "--fp8-dispatch", "FP8 dispatch"),
            (
                self.fp8_param_gather,
                "--fp8-param-gather",
                "FP8 parameter all-gathers",
            ),
            (
                self.fp8_activation_cache,
                "--fp8-activation-cache",
                "FP8 activation caches",
            ),
            (
                self.fp8_blockwise,
                "--fp8-blockwise",
                "block-scaled FP8 GEMMs",
            ),
        ] {
            if on && self.precision != Precision::Fp8 {
                return Err(CliError::input(format!(
                    "{flag}: {what} need --precision fp8"
                )));
            }
        }
        Ok(StepConfig {
            compute_efficiency: efficiency,
            precision: self.precision,
            fp8_dispatch: self.fp8_dispatch,
            ep_overlap: self.ep_overlap,
            tp_overlap: self.tp_overlap,
            fp8_blockwise: self.fp8_blockwise,
            overlap_p2p_warmup_flush: self.overlap_p2p_warmup_flush,
            ..StepConfig::default()
        })
    }
}

/// `--stage-layers`: layer counts, comma-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageLayers(pub Vec<u64>);

fn parse_stage_layers(s: &str) -> Result<StageLayers, String> {
    let v: Vec<u64> = s
        .split(',')
        .map(|w| {
            w.trim().parse::<u64>().map_err(|_| {
                format!("`{w}` is not a layer count; valid: whole numbers separated by commas, one per pipeline stage, such as 7,8,8,7")
            })
        })
        .collect::<Result<_, _>>()?;
    if v.len() > MAX_STAGES {
        return Err(format!("{} stages; valid: at most {MAX_STAGES}", v.len()));
    }
    Ok(StageLayers(v))
}

/// A step that could not be timed: a network that cannot be built or communication that cannot run
/// is bad input (exit 2, naming the routing and cross-rail mode); a GPU missing from the catalog
/// the fabric was built from is a failure.
pub fn train_error(e: TrainError, routing: RoutingKind, relay: Relay) -> CliError {
    match e {
        TrainError::UnknownGpu(_) => CliError::failed(e.to_string()),
        TrainError::Net(_)
        | TrainError::NoFp8(_)
        | TrainError::NoKernels(_)
        | TrainError::PastClock { .. } => CliError::input(e.to_string()),
        TrainError::Comm(e) => CliError::simulation(
            e,
            &format!("{}, cross-rail {}", routing.as_str(), relay.as_str()),
        ),
    }
}

/// A model preset by name or a model file.
pub fn load_model(name: Option<&str>, file: Option<&std::path::Path>) -> Result<Model, CliError> {
    match (name, file) {
        (Some(_), Some(_)) => Err(CliError::input(
            "give either --model or --model-file, not both",
        )),
        (None, Some(path)) => {
            let text = crate::io::read_input(path, crate::io::Input::MODEL)?;
            Model::parse(&text, &path.display().to_string())
                .map_err(|e| CliError::input(e.to_string()))
        }
        (m, None) => Model::preset(m.unwrap_or("llama3-70b"))
            .map_err(|e| CliError::input(format!("--model: {e}"))),
    }
}

/// The assumptions behind a cost per million tokens (`compare`, `report --compare`, `train`).
#[derive(Debug, Clone, Args)]
pub struct CostArgs {
    /// Years over which the hardware is paid off, for the costs per million tokens (an assumption).
    #[arg(long, value_name = "Y", default_value_t = 4.0)]
    pub amortize_years: f64,
    /// Power usage effectiveness of the hall, for the cluster's cost per million tokens (an
    /// assumption; default the 2023 industry average, Uptime Institute).
    #[arg(long, value_name = "R", default_value_t = railyard_study::tco::DEFAULT_PUE)]
    pub pue: f64,
    /// Electricity price in US dollars per kWh, for the cluster's cost per million tokens (an
    /// assumption; default the 2023 US industrial average, EIA).
    #[arg(long, value_name = "USD", default_value_t = railyard_study::tco::DEFAULT_USD_PER_KWH)]
    pub usd_per_kwh: f64,
}

impl CostArgs {
    /// The assumptions, checked: an error names the flag at fault and the valid range.
    pub fn assumptions(&self) -> Result<Assumptions, CliError> {
        let a = Assumptions {
            amortize_years: self.amortize_years,
            pue: self.pue,
            usd_per_kwh: self.usd_per_kwh,
        };
        a.check().map_err(|e| CliError::input(format!("--{e}")))?;
        Ok(a)
    }

    /// The assumptions as given (checked by [`CostArgs::assumptions`] before any design is built).
    pub fn unchecked(&self) -> Assumptions {
        Assumptions {
            amortize_years: self.amortize_years,
            pue: self.pue,
            usd_per_kwh: self.usd_per_kwh,
        }
    }
}
