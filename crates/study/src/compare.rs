//! Designs side by side (`railyard compare`): each design's simulated performance ([`perf`]: busbw
//! at 1 GiB, a training step, the network's cost per million tokens) and the comparison as text and
//! JSON.

use crate::busbw::curve;
pub use crate::tco::network_usd_per_million_tokens as usd_per_million_tokens;
use crate::tco::{cost_per_hour, Assumptions, Capex, TcoError};
use crate::train::{training_step, Pricing, StepError, StepSetup};
use railyard_catalog::Catalog;
use railyard_fabric::{Fabric, LinkId};
use railyard_plan::output::{compare_text, thousands};
use railyard_plan::Summary;
use railyard_sim::calibration::Calibration;
use railyard_sim::collective::{AlgoChoice, CollectiveConfig, CollectiveError, Relay};
use railyard_sim::fabric_net::{NetConfig, RoutedNet};
use railyard_sim::nccl::Collective;
use railyard_sim::output::counted_note;
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_sim::{Cancel, SimError};
use railyard_train::fabric_timer::TrainError;
pub use railyard_train::model::{Model, PRESETS as MODELS};
pub use railyard_train::parallel::Layout;
use railyard_train::parallel::{LayoutError, Parallelism};
pub use railyard_train::step::Breakdown;
pub use railyard_train::step::StepConfig;
use serde::Serialize;
use std::fmt;

/// The message size of the busbw rows: 1 GiB, where bus bandwidth has reached its plateau.
pub const BUSBW_BYTES: u64 = 1 << 30;

/// What to predict of each design.
#[derive(Debug, Clone)]
pub struct PerfRequest<'a> {
    /// Simulate all-reduce and all-to-all at [`BUSBW_BYTES`].
    pub busbw: bool,
    /// Predict a training step of this model, laid out as asked (defaults per design).
    pub model: Option<(&'a Model, Layout)>,
    /// Routing policy of every simulation.
    pub routing: RoutingKind,
    /// How transfers cross rails between servers; `None`: [`Relay::auto`] of each design.
    pub relay: Option<Relay>,
    /// NCCL may reduce in the switches (SHARP, CollNet); the fabric must support it.
    pub sharp: bool,
    /// Years over which the hardware is paid off, the PUE and the electricity price, for the costs
    /// per million tokens (assumptions).
    pub costs: Assumptions,
    /// What the design's whole cluster costs (servers and every network), for its cost per hour
    /// and per million tokens; `None` where it is not known (no server price, a fabric as built).
    pub capex: Option<&'a Capex>,
    /// A cluster's calibration (`railyard calibrate`), applied to every simulation; the default
    /// changes nothing.
    pub calibration: Calibration,
    /// The step model's knobs (compute efficiency).
    pub step: StepConfig,
    /// The rest of `sim collective`'s knobs: the all-reduce's algorithm, the ECMP hash, links down
    /// and host memory bandwidth.
    pub sim: SimSettings<'a>,
}

/// How a design is simulated beyond routing and PXN, as `sim collective`'s flags say; the default
/// is `sim collective`'s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimSettings<'a> {
    /// Algorithm of the all-reduce busbw row (all-to-all is point-to-point in NCCL, with no
    /// algorithm to choose); the training step picks its own per collective and size, as `train`.
    pub algo: AlgoChoice,
    /// Seed of the ECMP hash and queue pairs per connection, for the busbw rows.
    pub routing: RoutingConfig,
    /// Network links down, for every simulation of the design (its busbw rows and its step).
    pub failed: &'a [LinkId],
    /// Servers drained (their host cable down: no job runs on them), for every simulation of the
    /// design: its collectives and its training step run on the servers left.
    pub drained: &'a [usize],
    /// Host memory bandwidth per server, GB/s, for every simulation (with GPUDirect RDMA off).
    pub host_memory_gbs: f64,
}

impl Default for SimSettings<'_> {
    fn default() -> Self {
        SimSettings {
            algo: AlgoChoice::Auto,
            routing: RoutingConfig::default(),
            failed: &[],
            drained: &[],
            host_memory_gbs: railyard_sim::fabric_net::HOST_MEMORY_GBS,
        }
    }
}

/// Simulated performance of one design.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Perf {
    /// The all-reduce row's algorithm where one was asked for (`--algo`; absent with `auto`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allreduce_algo: Option<String>,
    pub allreduce_busbw_1g_gbs: Option<f64>,
    pub alltoall_busbw_1g_gbs: Option<f64>,
    pub step_time_s: Option<f64>,
    /// Expert-parallel all-to-all in the step (with EP above 1).
    pub expert_all_to_all_s: Option<f64>,
    /// Weights, gradients and Adam state per GPU (the fullest stage's).
    pub model_state_gb_per_gpu: Option<f64>,
    /// Activations per GPU at their peak (`railyard_train::step::stage_activation_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activation_gb_per_gpu: Option<f64>,
    /// The most one GPU holds of both (`railyard_train::step::Memory`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_gb_per_gpu: Option<f64>,
    /// What the GPU exposes, 10^9 bytes (`GpuModel::memory_bytes`), beside `memory_gb_per_gpu`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_memory_gb: Option<f64>,
    /// What could not be simulated and why, a layout fitted to the GPU's memory, a model state
    /// that does not fit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub tokens_per_s: Option<f64>,
    /// Network cost amortized over `amortize_years` of training, per million tokens.
    pub network_usd_per_million_tokens: Option<f64>,
    /// The whole cluster's cost per hour: servers and every network paid off over `amortize_years`,
    /// and their power at the PUE and electricity price ([`crate::tco`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_usd_per_hour: Option<f64>,
    /// The whole cluster's cost per million tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_usd_per_million_tokens: Option<f64>,
    /// The training layout the step ran with (defaults resolved for this design).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutOut>,
    /// Where the step's time goes (`railyard train`'s breakdown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
}

/// A resolved training layout as the comparison reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LayoutOut {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    /// Context parallelism, where above 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cp: Option<u32>,
    /// Virtual pipeline stages per stage (interleaved 1F1B), where above 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vp: Option<u32>,
    pub seq: u64,
    pub micro_batch: u64,
    pub global_batch: u64,
    pub microbatches: u64,
    pub zero: u32,
    pub recompute: bool,
    /// The precision gradients are accumulated and reduced in: `fp32` or `bf16`.
    pub gradients: &'static str,
    /// The layers of each pipeline stage, first to last, where they differ (as `train` shows
    /// them: Llama 3 405B on 16 stages is 7, 8 x 14, 7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage_layers: Option<Vec<u64>>,
}

impl LayoutOut {
    pub fn of(p: &Parallelism) -> LayoutOut {
        LayoutOut {
            tp: p.tp,
            pp: p.pp,
            dp: p.dp,
            ep: p.ep,
            cp: (p.cp > 1).then_some(p.cp),
            vp: (p.vp > 1).then_some(p.vp),
            seq: p.seq,
            micro_batch: p.micro_batch,
            global_batch: p.global_batch,
            microbatches: p.microbatches(),
            zero: p.zero,
            recompute: p.recompute,
            gradients: if p.grad_bf16 { "bf16" } else { "fp32" },
            stage_layers: (p.stage_layers.windows(2).any(|w| w[0] != w[1]))
                .then(|| p.stage_layers.clone()),
        }
    }

    /// `TP8 PP4 DP4`, with VP, EP and CP where above 1 ([`railyard_train::parallel::layout_label`]),
    /// and an uneven stage split by runs: `TP8 PP16 DP8, stages 7,8x14,7`.
    pub fn short(&self) -> String {
        let label = railyard_train::parallel::layout_label(
            self.tp,
            self.pp,
            self.vp.unwrap_or(1),
            self.dp,
            self.ep,
            self.cp.unwrap_or(1),
        );
        let Some(stages) = &self.stage_layers else {
            return label;
        };
        let mut runs: Vec<(u64, usize)> = Vec::new();
        for &l in stages {
            match runs.last_mut() {
                Some((v, n)) if *v == l => *n += 1,
                _ => runs.push((l, 1)),
            }
        }
        let runs: Vec<String> = runs
            .iter()
            .map(|&(v, n)| {
                if n > 1 {
                    format!("{v}x{n}")
                } else {
                    v.to_string()
                }
            })
            .collect();
        format!("{label}, stages {}", runs.join(","))
    }
}

/// Why a design's performance could not be predicted.
#[derive(Debug, Clone, PartialEq)]
pub enum PerfError {
    /// The network could not be built.
    Net(SimError),
    /// A collective could not run on it (no route, for one). An all-to-all too large to simulate
    /// flow by flow runs by symmetry or is timed from its flows counted per link, with a note.
    Collective(CollectiveError),
    /// The model's layout does not fit the design (names the flag).
    Layout(LayoutError),
    /// The training step could not be timed.
    Train(TrainError),
    /// The cost assumptions are out of range (names the flag).
    Costs(TcoError),
}

impl fmt::Display for PerfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerfError::Net(e) => write!(f, "{e}"),
            PerfError::Collective(e) => write!(f, "{e}"),
            PerfError::Layout(e) => write!(f, "{e}"),
            PerfError::Train(e) => write!(f, "{e}"),
            PerfError::Costs(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PerfError {}

/// What `req` asks of the design `fabric`, planned as `summary`.
pub fn perf(
    fabric: &Fabric,
    catalog: &Catalog,
    summary: &Summary,
    req: &PerfRequest<'_>,
) -> Result<Perf, PerfError> {
    let mut perf = Perf::default();
    if let Some(c) = req.capex {
        perf.cluster_usd_per_hour = Some(
            cost_per_hour(c, &req.costs)
                .map_err(PerfError::Costs)?
                .total_usd,
        );
    }
    if !req.busbw && req.model.is_none() {
        return Ok(perf);
    }
    let relay = req.relay.unwrap_or_else(|| Relay::auto(fabric));
    let config = NetConfig {
        calibration: req.calibration,
        sharp: req.sharp,
        failed: req.sim.failed.to_vec(),
        drained: req.sim.drained.to_vec(),
        host_memory_gbs: req.sim.host_memory_gbs,
    };
    if req.busbw {
        let RoutedNet { net, router } =
            RoutedNet::new(fabric, catalog, &config, req.routing, req.sim.routing)
                .map_err(PerfError::Net)?;
        let mut busbw = |op| -> Result<Option<f64>, PerfError> {
            let algo = if op == Collective::AllReduce {
                req.sim.algo
            } else {
                AlgoChoice::Auto
            };
            let cfg = CollectiveConfig {
                algo,
                relay,
                collnet: net.sharp(),
                ..CollectiveConfig::new(op)
            };
            match curve(
                &net,
                &router,
                &cfg,
                &[BUSBW_BYTES],
                &mut |_| {},
                Cancel::NEVER,
            ) {
                Ok((c, counted)) => {
                    if let Some(counted) = counted {
                        perf.notes.push(format!("{op}: {}", counted_note(&counted)));
                    }
                    Ok(Some(c.points.first().map_or(0.0, |p| p.1)))
                }
                Err(e) => Err(PerfError::Collective(e)),
            }
        };
        perf.allreduce_busbw_1g_gbs = busbw(Collective::AllReduce)?;
        // `AlgoChoice::NAMES` is in the enum's order.
        perf.allreduce_algo = (req.sim.algo != AlgoChoice::Auto)
            .then(|| AlgoChoice::NAMES[req.sim.algo as usize].to_string());
        // Through the spines where there are spines; relayed store-and-forward over NVLink on a
        // rail-only fabric (the Rail-only paper's model; `Relay::auto`).
        perf.alltoall_busbw_1g_gbs = busbw(Collective::AllToAll)?;
    }
    if let Some((model, layout)) = &req.model {
        let gpu = catalog.gpus.get(&fabric.meta.gpu_model);
        let memory = gpu.map_or(f64::INFINITY, |g| g.memory_bytes());
        let memory_label = gpu.map_or_else(String::new, |g| g.memory_label());
        let setup = StepSetup {
            fabric,
            catalog,
            net: &config,
            routing: req.routing,
            relay,
            step: req.step,
        };
        let pricing = Pricing {
            network_usd: summary.cost_usd.total,
            capex: req.capex,
            assumptions: &req.costs,
        };
        let t = training_step(&setup, model, layout, &pricing).map_err(|e| match e {
            StepError::Layout(e) => PerfError::Layout(e),
            StepError::Train(e) => PerfError::Train(e),
            StepError::Costs(e) => PerfError::Costs(e),
        })?;
        let (par, b, costs) = (t.layout.par, t.breakdown, t.costs);
        if let Some(f) = &t.layout.fitted {
            perf.notes.push(f.note(&par));
        }
        if let Some(v) = &t.layout.virtual_stages {
            perf.notes.push(v.clone());
        }
        perf.step_time_s = Some(b.step_time_s);
        perf.expert_all_to_all_s = (par.ep > 1).then_some(b.expert_parallel_s);
        perf.model_state_gb_per_gpu = Some(b.model_state_bytes_per_gpu / 1e9);
        perf.activation_gb_per_gpu = Some(b.activation_bytes_per_gpu / 1e9);
        perf.memory_gb_per_gpu = Some(b.memory_bytes_per_gpu / 1e9);
        perf.gpu_memory_gb = gpu.map(|g| g.memory_bytes() / 1e9);
        if b.model_state_bytes_per_gpu > memory {
            perf.notes.push(format!(
                "the model state alone, {:.1} GB per GPU, does not fit in the GPU's {memory_label}; raise --tp, --pp, --ep or --zero",
                b.model_state_bytes_per_gpu / 1e9
            ));
        } else if b.memory_bytes_per_gpu > memory {
            perf.notes.push(format!(
                "model state and activations, {:.1} GB per GPU, do not fit in the GPU's {memory_label}; {}",
                b.memory_bytes_per_gpu / 1e9,
                railyard_train::step::memory_remedies(&par, model, fabric.meta.gpus_per_server, true)
            ));
        }
        perf.tokens_per_s = Some(b.tokens_per_s);
        perf.network_usd_per_million_tokens = Some(costs.network_usd_per_million_tokens);
        perf.cluster_usd_per_million_tokens = costs.cluster_usd_per_million_tokens;
        perf.layout = Some(LayoutOut::of(&par));
        perf.breakdown = Some(b);
    }
    Ok(perf)
}

/// Whether SHARP changes what `req` (with `sharp` on) predicted of the design, `with`: the same
/// prediction with SHARP off is the test, as [`crate::train::StepSetup::sharp_changes`] tests a
/// step (the default ZeRO layouts reduce nothing across servers in the switches).
pub fn sharp_changes(
    fabric: &Fabric,
    catalog: &Catalog,
    summary: &Summary,
    req: &PerfRequest<'_>,
    with: &Perf,
) -> bool {
    let off = PerfRequest {
        sharp: false,
        ..req.clone()
    };
    !perf(fabric, catalog, summary, &off).is_ok_and(|p| p == *with)
}

/// One design of a comparison: its label, plan summary, how it was simulated and its predicted
/// performance.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    pub label: String,
    pub summary: Summary,
    /// Routing policy of its simulations.
    pub routing: String,
    /// How its transfers cross rails between servers (`Relay`'s name).
    pub pxn: String,
    /// NCCL could reduce in the switches (SHARP, CollNet); the key is left out when off.
    #[serde(skip_serializing_if = "is_false")]
    pub sharp: bool,
    pub performance: Perf,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize)]
struct CompareJson<'a> {
    designs: &'a [Compared],
    verdicts: Vec<Verdict>,
}

/// The comparison as JSON: `{"designs": [{"label", "summary", "routing", "pxn", "performance"}],
/// "verdicts": [...]}`, object keys in alphabetical order (through `serde_json::Value`, whose maps
/// are sorted).
pub fn compare_json(designs: &[Compared]) -> String {
    let mut text = serde_json::to_string_pretty(&compare_value(designs)).unwrap_or_default();
    text.push('\n');
    text
}

/// The comparison as a JSON value (objects' keys in alphabetical order), for a front end to print
/// with keys of its own added.
pub fn compare_value(designs: &[Compared]) -> serde_json::Value {
    // Numbers, strings and maps with string keys: serializing them cannot fail.
    serde_json::to_value(CompareJson {
        designs,
        verdicts: verdicts(designs),
    })
    .unwrap_or_default()
}

/// Which design is best on one axis and by how much: numbers only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// E.g. "network cost".
    pub axis: String,
    /// Whether lower is better on this axis.
    pub lower_is_better: bool,
    /// The best design(s) (more than one on a tie).
    pub best: Vec<String>,
    pub best_value: f64,
    /// The next best design and its value, when another design differs.
    pub next: Option<(String, f64)>,
    /// How far the best is ahead of the next, percent of the next's value.
    pub margin_percent: Option<f64>,
    /// The sentence the report and the text print.
    pub text: String,
}

/// The axes a buyer reads: (name, lower is better, unit formatter, value).
type Axis = (
    &'static str,
    bool,
    fn(f64) -> String,
    fn(&Compared) -> Option<f64>,
);

const AXES: [Axis; 8] = [
    (
        "network cost",
        true,
        |x| format!("${}", thousands(x)),
        |d| Some(d.summary.cost_usd.total),
    ),
    (
        "network power",
        true,
        |x| format!("{x:.2} kW"),
        |d| Some(d.summary.power_w.total / 1000.0),
    ),
    (
        "all-reduce busbw at 1 GiB",
        false,
        |x| format!("{x:.1} GB/s"),
        |d| d.performance.allreduce_busbw_1g_gbs,
    ),
    (
        "all-to-all busbw at 1 GiB",
        false,
        |x| format!("{x:.1} GB/s"),
        |d| d.performance.alltoall_busbw_1g_gbs,
    ),
    (
        "training step time",
        true,
        |x| format!("{x:.3} s"),
        |d| d.performance.step_time_s,
    ),
    (
        "training throughput",
        false,
        |x| format!("{} tokens/s", thousands(x)),
        |d| d.performance.tokens_per_s,
    ),
    (
        "network cost per million tokens",
        true,
        |x| format!("${x:.4}"),
        |d| d.performance.network_usd_per_million_tokens,
    ),
    (
        "cluster cost per million tokens",
        true,
        |x| format!("${x:.4}"),
        |d| d.performance.cluster_usd_per_million_tokens,
    ),
];

/// For each axis where at least two designs have a value: the best design, its value, and how far
/// ahead of the next best it is. Generated from the numbers alone.
pub fn verdicts(designs: &[Compared]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (axis, lower, unit, get) in AXES {
        let vals: Vec<(&str, f64)> = designs
            .iter()
            .filter_map(|d| {
                get(d)
                    .filter(|x| x.is_finite())
                    .map(|x| (d.label.as_str(), x))
            })
            .collect();
        if vals.len() < 2 {
            continue;
        }
        let better = |a: f64, b: f64| if lower { a < b } else { a > b };
        let best_value =
            vals.iter()
                .map(|v| v.1)
                .fold(vals[0].1, |acc, x| if better(x, acc) { x } else { acc });
        // Designs the table shows at the same value tie with the best: a lead too small to
        // print is no lead (352.36 and 352.44 GB/s both read 352.4).
        let shown = unit(best_value);
        let best: Vec<String> = vals
            .iter()
            .filter(|v| unit(v.1) == shown)
            .map(|v| v.0.to_string())
            .collect();
        let next =
            vals.iter()
                .filter(|v| unit(v.1) != shown)
                .fold(None::<(&str, f64)>, |acc, &(l, x)| match acc {
                    Some((_, y)) if !better(x, y) => acc,
                    _ => Some((l, x)),
                });
        let margin_percent =
            next.and_then(|(_, y)| (y != 0.0).then(|| 100.0 * (y - best_value).abs() / y.abs()));
        let lead = if lower { "lowest" } else { "highest" };
        let text = match (next, margin_percent) {
            (Some((l, y)), Some(m)) => format!(
                "{lead} {axis}: {} ({}), {} {} {l} ({})",
                best.join(" and "),
                unit(best_value),
                if m < 0.05 {
                    "less than 0.1%".to_string()
                } else {
                    format!("{m:.1}%")
                },
                if lower { "below" } else { "above" },
                unit(y)
            ),
            (Some((l, y)), None) => format!(
                "{lead} {axis}: {} ({}); next {l} ({})",
                best.join(" and "),
                unit(best_value),
                unit(y)
            ),
            (None, _) => format!("{axis}: every design at {}", unit(best_value)),
        };
        out.push(Verdict {
            axis: axis.to_string(),
            lower_is_better: lower,
            best,
            best_value,
            next: next.map(|(l, y)| (l.to_string(), y)),
            margin_percent,
            text,
        });
    }
    out
}

/// The rows the comparison adds to the plans' rows: what the topology costs and what was predicted.
fn extra_rows(
    designs: &[Compared],
    model: &str,
    costs: &Assumptions,
) -> Vec<(String, Vec<String>)> {
    let amortize_years = costs.amortize_years;
    let mut extra: Vec<(String, Vec<String>)> = Vec::new();
    // The other planned networks (the compute fabric's rows are the plan's own).
    let others = |s: &Summary| {
        let storage = s.storage.as_ref().map(|n| n.cost_usd.total);
        let management = s.management.as_ref().map(|m| m.cost_usd);
        (storage.is_some() || management.is_some())
            .then(|| storage.unwrap_or(0.0) + management.unwrap_or(0.0))
    };
    if designs.iter().any(|d| others(&d.summary).is_some()) {
        extra.push((
            "storage + management ($)".to_string(),
            designs
                .iter()
                .map(|d| others(&d.summary).map_or("-".to_string(), thousands))
                .collect(),
        ));
    }
    // Switches, cables and optics: what the topology changes (the NICs are the servers' choice).
    let fabric_cost = |s: &Summary| s.cost_usd.total - s.cost_usd.nics;
    let base = designs.first().map_or(0.0, |d| fabric_cost(&d.summary));
    extra.push((
        "fabric cost excl. NICs ($)".to_string(),
        designs
            .iter()
            .map(|d| thousands(fabric_cost(&d.summary)))
            .collect(),
    ));
    extra.push((
        "  vs the first design".to_string(),
        designs
            .iter()
            .map(|d| {
                if base > 0.0 {
                    format!("{:+.0}%", 100.0 * (fabric_cost(&d.summary) - base) / base)
                } else {
                    "-".to_string()
                }
            })
            .collect(),
    ));
    let simulated = designs.iter().any(|d| {
        d.performance.allreduce_busbw_1g_gbs.is_some() || d.performance.step_time_s.is_some()
    });
    if simulated {
        extra.push((
            "routing".to_string(),
            designs.iter().map(|d| d.routing.clone()).collect(),
        ));
        extra.push((
            "cross-rail (PXN)".to_string(),
            designs.iter().map(|d| d.pxn.clone()).collect(),
        ));
    }
    if designs
        .iter()
        .any(|d| d.performance.allreduce_algo.is_some())
    {
        extra.push((
            "all-reduce algorithm".to_string(),
            designs
                .iter()
                .map(|d| {
                    d.performance
                        .allreduce_algo
                        .clone()
                        .unwrap_or_else(|| "auto".to_string())
                })
                .collect(),
        ));
    }
    let mut row = |label: &str, f: &dyn Fn(&Perf) -> Option<String>| {
        let cells: Vec<Option<String>> = designs.iter().map(|d| f(&d.performance)).collect();
        if cells.iter().any(Option::is_some) {
            extra.push((
                label.to_string(),
                cells.into_iter().map(Option::unwrap_or_default).collect(),
            ));
        }
    };
    row("all-reduce busbw 1 GiB (GB/s)", &|p| {
        p.allreduce_busbw_1g_gbs.map(|x| format!("{x:.1}"))
    });
    row("all-to-all busbw 1 GiB (GB/s)", &|p| {
        match (p.allreduce_busbw_1g_gbs, p.alltoall_busbw_1g_gbs) {
            // Simulated designs without an all-to-all: past the simulation limit (see notes).
            (Some(_), None) => Some("too large".to_string()),
            (_, a2a) => a2a.map(|x| format!("{x:.1}")),
        }
    });
    row(&format!("{model} layout"), &|p| {
        p.layout.as_ref().map(|l| l.short())
    });
    row(&format!("{model} step time (s)"), &|p| {
        p.step_time_s.map(|x| format!("{x:.3}"))
    });
    row("  expert all-to-all (ms)", &|p| {
        p.expert_all_to_all_s.map(|x| format!("{:.1}", x * 1e3))
    });
    row(&format!("{model} tokens/s"), &|p| {
        p.tokens_per_s.map(thousands)
    });
    row("model state per GPU (GB)", &|p| {
        p.model_state_gb_per_gpu.map(|x| format!("{x:.1}"))
    });
    row("activations per GPU (GB)", &|p| {
        p.activation_gb_per_gpu.map(|x| format!("{x:.1}"))
    });
    row(
        &format!("network $ per M tokens ({amortize_years} y)"),
        &|p| p.network_usd_per_million_tokens.map(|x| format!("{x:.4}")),
    );
    row(
        &format!(
            "cluster $ per M tokens ({amortize_years} y, PUE {}, ${}/kWh)",
            costs.pue, costs.usd_per_kwh
        ),
        &|p| p.cluster_usd_per_million_tokens.map(|x| format!("{x:.4}")),
    );
    extra
}

/// Short column labels for a comparison too wide for its labels: A, B, ... Z, AA, AB, ...
pub fn short_label(i: usize) -> String {
    let mut n = i;
    let mut s = Vec::new();
    loop {
        s.push(b'A' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s.iter().rev().map(|&b| b as char).collect()
}

fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// The comparison as a table (the plans' rows, then what the topology costs and what was
/// predicted), the notes of what could not be simulated, and which design wins on which axis.
/// `model` names the model in the step rows and `costs` the assumptions in the cost rows.
///
/// The table fits `width` columns: when the designs' own labels make it wider, the columns are
/// labelled A, B, ... with a legend, and designs that still do not fit go on further pages of the
/// same rows.
pub fn compare_table(
    designs: &[Compared],
    model: &str,
    costs: &Assumptions,
    width: usize,
) -> String {
    let extra = extra_rows(designs, model, costs);
    let page = |range: std::ops::Range<usize>, short: bool| -> String {
        let columns: Vec<(String, Summary)> = designs[range.clone()]
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let label = if short {
                    short_label(range.start + i)
                } else {
                    d.label.clone()
                };
                (label, d.summary.clone())
            })
            .collect();
        let rows: Vec<(String, Vec<String>)> = extra
            .iter()
            .map(|(l, v)| (l.clone(), v[range.clone()].to_vec()))
            .collect();
        compare_text(&columns, &rows)
    };
    let mut text = page(0..designs.len(), false);
    let lettered = widest(&text) > width;
    if lettered {
        text.clear();
        let pad = short_label(designs.len().saturating_sub(1)).len();
        text.push_str("designs:\n");
        for (i, d) in designs.iter().enumerate() {
            text.push_str(&format!("  {:<pad$}  {}\n", short_label(i), d.label));
        }
        let mut start = 0;
        while start < designs.len() {
            // As many designs as fit (at least one).
            let mut end = start + 1;
            while end < designs.len() && widest(&page(start..end + 1, true)) <= width {
                end += 1;
            }
            let body = page(start..end, true);
            text.push('\n');
            for line in body.lines() {
                // The estimate note once, after the last page.
                if end < designs.len() && line.starts_with("costs include") {
                    continue;
                }
                text.push_str(line);
                text.push('\n');
            }
            start = end;
        }
    }
    for d in designs {
        for n in &d.performance.notes {
            text.push_str(&format!("{}: {n}\n", d.label));
        }
    }
    // Lettered columns: the verdicts name the designs by their letters too (a tie names several).
    let v = if lettered {
        let by_letter: Vec<Compared> = designs
            .iter()
            .enumerate()
            .map(|(i, d)| Compared {
                label: short_label(i),
                ..d.clone()
            })
            .collect();
        verdicts(&by_letter)
    } else {
        verdicts(designs)
    };
    if !v.is_empty() {
        text.push_str("\nwhich design wins:\n");
        for x in v {
            text.push_str(&format!("  {}\n", x.text));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// $1,000,000 of network over one year at 1,000,000 tokens/s: 31,557,600,000,000 tokens, so
    /// $0.0317 per million.
    #[test]
    fn cost_per_million_tokens_spreads_the_network_over_the_years() {
        let x = usd_per_million_tokens(1e6, 1e6, 1.0);
        assert!((x - 1e6 / 31_557_600.0).abs() < 1e-12, "{x}");
        assert!((usd_per_million_tokens(1e6, 1e6, 4.0) - x / 4.0).abs() < 1e-15);
    }

    #[test]
    fn short_labels_count_like_spreadsheet_columns() {
        let got: Vec<String> = [0, 1, 25, 26, 27, 51, 52, 701, 702]
            .iter()
            .map(|&i| short_label(i))
            .collect();
        assert_eq!(got, ["A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]);
    }

    fn design(label: &str, cost: f64, tokens: Option<f64>) -> Compared {
        let spec = railyard_spec::presets::load("seed-two-switch").unwrap();
        let catalog = Catalog::builtin();
        let f = railyard_fabric::build(&spec, &catalog).unwrap();
        let mut summary = railyard_plan::Plan::new(&f, &catalog).summary;
        summary.cost_usd.total = cost;
        Compared {
            label: label.to_string(),
            summary,
            routing: "dmodk".to_string(),
            pxn: "off".to_string(),
            sharp: false,
            performance: Perf {
                tokens_per_s: tokens,
                ..Perf::default()
            },
        }
    }

    /// The winner of each axis and its margin come from the numbers: lowest cost $75 is 25% below
    /// the next ($100); the highest throughput 1,200 tokens/s is 20% above 1,000; a tie names both.
    #[test]
    fn verdicts_name_the_best_design_and_its_margin() {
        let v = verdicts(&[
            design("A", 100.0, Some(1000.0)),
            design("B", 75.0, Some(1200.0)),
            design("C", 75.0, None),
        ]);
        let cost = v.iter().find(|x| x.axis == "network cost").unwrap();
        assert_eq!(cost.best, ["B", "C"]);
        assert_eq!(cost.next, Some(("A".to_string(), 100.0)));
        assert_eq!(cost.margin_percent, Some(25.0));
        assert_eq!(
            cost.text,
            "lowest network cost: B and C ($75), 25.0% below A ($100)"
        );
        let tps = v.iter().find(|x| x.axis == "training throughput").unwrap();
        assert_eq!(tps.best, ["B"]);
        assert!((tps.margin_percent.unwrap() - 20.0).abs() < 1e-9);
        // One design with a value is no comparison.
        assert!(v.iter().all(|x| x.axis != "training step time"));
    }

    /// Regression: `compare --vary tech=ib-ndr,roce-400g --perf --servers 16` read "highest
    /// all-reduce busbw at 1 GiB: tech=ib-ndr (352.4 GB/s), 0.0% above tech=roce-400g (352.4
    /// GB/s)": a win the table cannot show. Designs that print the same value tie; a lead that
    /// shows but rounds to 0.0% reads "less than 0.1%".
    #[test]
    fn verdicts_tie_designs_the_table_shows_alike() {
        let step = |label: &str, s: f64| {
            let mut d = design(label, 100.0, None);
            d.performance.step_time_s = Some(s);
            d.performance.allreduce_busbw_1g_gbs = Some(s * 100.0);
            d
        };
        let v = verdicts(&[step("A", 9.38901), step("B", 9.38912), step("C", 9.5)]);
        let t = v.iter().find(|x| x.axis == "training step time").unwrap();
        assert_eq!(t.best, ["A", "B"]);
        assert_eq!(
            t.text,
            "lowest training step time: A and B (9.389 s), 1.2% below C (9.500 s)"
        );
        let v = verdicts(&[step("A", 9.38901), step("B", 9.38912)]);
        let t = v.iter().find(|x| x.axis == "training step time").unwrap();
        assert_eq!(t.text, "training step time: every design at 9.389 s");
        let v = verdicts(&[step("A", 9.3890), step("B", 9.3904)]);
        let t = v.iter().find(|x| x.axis == "training step time").unwrap();
        assert_eq!(
            t.text,
            "lowest training step time: A (9.389 s), less than 0.1% below B (9.390 s)"
        );
        let b = v
            .iter()
            .find(|x| x.axis == "all-reduce busbw at 1 GiB")
            .unwrap();
        assert_eq!(
            b.text,
            "highest all-reduce busbw at 1 GiB: B (939.0 GB/s), less than 0.1% above A (938.9 GB/s)"
        );
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    /// An uneven stage split is part of the layout a comparison shows, by runs; an even one (given
    /// as a list or not) is not.
    #[test]
    fn an_uneven_stage_split_shows_by_runs() {
        let mut stages = vec![8u64; 16];
        stages[0] = 7;
        stages[15] = 7;
        let par = Parallelism {
            tp: 8,
            pp: 16,
            dp: 8,
            ep: 1,
            cp: 1,
            seq: 8192,
            micro_batch: 1,
            global_batch: 2048,
            zero: 1,
            recompute: false,
            grad_bf16: false,
            stage_layers: stages.clone(),
            vp: 1,
            schedule: Default::default(),
            recompute_modules: Default::default(),
            fp8_params: false,
        };
        let l = LayoutOut::of(&par);
        assert_eq!(l.stage_layers.as_deref(), Some(&stages[..]));
        assert_eq!(l.short(), "TP8 PP16 DP8, stages 7,8x14,7");
        let json = serde_json::to_value(&l).unwrap();
        assert_eq!(json["stage_layers"][0], 7);
        for even in [Vec::new(), vec![8u64; 16]] {
            let l = LayoutOut::of(&Parallelism {
                stage_layers: even,
                ..par.clone()
            });
            assert_eq!((l.short().as_str(), l.stage_layers), ("TP8 PP16 DP8", None));
        }
    }
}
