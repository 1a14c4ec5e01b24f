//! Designs side by side (`railyard compare`): each design's simulated performance ([`perf`]: busbw
//! at 1 GiB, a training step, the network's cost per million tokens) and the comparison as text and
//! JSON.
pub mod band;
mod design;
pub mod shard;
mod table;
mod verdict;

pub use design::{
    check_host_memory, evaluate, hashes_by_default, plan_variant, Ask, Evaluated, Variant,
};
pub use railyard_sim::collective::AlgoChoice;
pub use table::{compare_table, short_label};
pub use verdict::{decision, verdict_on, verdicts, Decision, Verdict};

use crate::busbw::curve;
pub use crate::tco::network_usd_per_million_tokens as usd_per_million_tokens;
use crate::tco::{cost_per_hour, Assumptions, Capex, TcoError};
use crate::train::{training_step, Pricing, StepError, StepSetup};
use railyard_catalog::Catalog;
use railyard_fabric::{Fabric, LinkId};
use railyard_plan::Summary;
use railyard_sim::calibration::Calibration;
use railyard_sim::collective::{CollectiveConfig, CollectiveError, Relay};
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
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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

impl PerfRequest<'_> {
    /// Nothing predicted yet, routed by `routing`, everything else as NCCL runs by default: PXN
    /// as the fabric suggests, no SHARP plugin, no calibration, default costs and `sim
    /// collective`'s knobs.
    pub fn routed(routing: RoutingKind) -> Self {
        PerfRequest {
            busbw: false,
            model: None,
            routing,
            relay: None,
            sharp: false,
            costs: Default::default(),
            capex: None,
            step: Default::default(),
            calibration: Default::default(),
            sim: Default::default(),
        }
    }
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
    /// Each predicted figure's interval, by the figure's key (`step_time_s`, ...): from the
    /// validation residuals of its kind and scale (`band::bands_of`); the verdicts name a winner
    /// only outside them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_band: BTreeMap<String, band::ErrorBand>,
}

/// A resolved training layout as the comparison reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(deserialize_with = "gradients_named")]
    pub gradients: Gradients,
    /// The layers of each pipeline stage, first to last, where they differ (as `train` shows
    /// them: Llama 3 405B on 16 stages is 7, 8 x 14, 7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage_layers: Option<Vec<u64>>,
}

/// The gradients' precision by name, `fp32` or `bf16`: a name of its own so that serde reads it
/// back through a lookup of the two names rather than borrowing it from the input.
pub type Gradients = &'static str;

/// [`LayoutOut::gradients`] read back (a sharded sweep's results, `railyard merge`).
fn gradients_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    match String::deserialize(d)?.as_str() {
        "bf16" => Ok("bf16"),
        "fp32" => Ok("fp32"),
        other => Err(serde::de::Error::custom(format!(
            "gradients `{other}`: valid: bf16, fp32"
        ))),
    }
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
    let relay = req.relay.unwrap_or_else(|| Relay::auto(fabric, catalog));
    let config = NetConfig {
        calibration: req.calibration,
        sharp: req.sharp,
        failed: req.sim.failed.to_vec(),
        drained: req.sim.drained.to_vec(),
        host_memory_gbs: req.sim.host_memory_gbs,
        // The training step hashes as the busbw rows do (`--qps-per-connection`, `--seed`).
        hash: req.sim.routing,
        // Every tray of a rack-scale design's racks (a training step places its ranks itself).
        rack_trays: None,
    };
    if req.busbw {
        busbw_at_1g(&mut perf, fabric, catalog, &config, relay, req)?;
    }
    if let Some((model, layout)) = &req.model {
        let ctx = (fabric, catalog, &config, relay);
        training_perf(&mut perf, ctx, summary, req, (model, layout))?;
    }
    let gpus = perf.layout.as_ref().map(|l| {
        u64::from(l.tp) * u64::from(l.cp.unwrap_or(1)) * u64::from(l.pp) * u64::from(l.dp)
    });
    perf.error_band = band::bands_of(&perf, BUSBW_BYTES, gpus);
    Ok(perf)
}

/// All-reduce and all-to-all busbw at [`BUSBW_BYTES`] into `perf`.
fn busbw_at_1g(
    perf: &mut Perf,
    fabric: &Fabric,
    catalog: &Catalog,
    config: &NetConfig,
    relay: Relay,
    req: &PerfRequest<'_>,
) -> Result<(), PerfError> {
    let RoutedNet { net, router } =
        RoutedNet::over_nvlink_domains(fabric, catalog, config, req.routing, req.sim.routing)
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
    // Crossing rails as asked, else as NCCL does by default (`Relay::auto`: relayed over NVLink
    // to the destination's rail on NVIDIA servers, straight out on AMD ones).
    perf.alltoall_busbw_1g_gbs = busbw(Collective::AllToAll)?;
    Ok(())
}

/// The training step of `model` laid out as `layout`, its memory and its cost per token, into `perf`.
fn training_perf(
    perf: &mut Perf,
    (fabric, catalog, config, relay): (&Fabric, &Catalog, &NetConfig, Relay),
    summary: &Summary,
    req: &PerfRequest<'_>,
    (model, layout): (&Model, &Layout),
) -> Result<(), PerfError> {
    let gpu = catalog.gpus.get(&fabric.meta.gpu_model);
    let memory = gpu.map_or(f64::INFINITY, |g| g.memory_bytes());
    let memory_label = gpu.map_or_else(String::new, |g| g.memory_label());
    let setup = StepSetup {
        fabric,
        catalog,
        net: config,
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
    if let Some(r) = crate::domain::RackJob::of(fabric, catalog, &par) {
        perf.notes.push(r.note());
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
    Ok(())
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

/// Why [`perf_checked`] predicted nothing: a run key given that cannot change the step (study's
/// rules), or the prediction's own error.
#[derive(Debug)]
pub enum CheckedError {
    NoEffect(crate::rules::NoEffect),
    Perf(PerfError),
}

/// What `req` predicts of the design, with the run keys `given` checked as `railyard train`
/// checks its flags: where `check` (a run key was given) and `req` has a model, the step's rules
/// on the layout it runs and, with SHARP on, SHARP's test (the same prediction with SHARP off). A
/// layout that cannot be laid out is left to the prediction's own error. The web app's training
/// step (`/api/plan` with a model).
pub fn perf_checked(
    fabric: &Fabric,
    catalog: &Catalog,
    summary: &Summary,
    req: &PerfRequest<'_>,
    given: &dyn crate::rules::GivenKeys,
    check: bool,
) -> Result<Perf, CheckedError> {
    let laid = match (&req.model, check) {
        (Some((model, layout)), true) => crate::train::lay_out(fabric, catalog, &[], model, layout)
            .ok()
            .map(|laid| (laid, layout.fit_to_memory)),
        _ => None,
    };
    if let Some((laid, fitted)) = &laid {
        let facts = crate::rules::StepFacts {
            par: &laid.par,
            fitted: *fitted,
            nics_per_server: fabric.meta.compute_nics_per_server,
        };
        crate::rules::step_keys_in_effect(given, &facts).map_err(CheckedError::NoEffect)?;
    }
    let p = perf(fabric, catalog, summary, req).map_err(CheckedError::Perf)?;
    if let Some((laid, _)) = &laid {
        crate::rules::sharp_in_effect(given, req.sharp, &laid.par, &mut || {
            sharp_changes(fabric, catalog, summary, req, &p)
        })
        .map_err(CheckedError::NoEffect)?;
    }
    Ok(p)
}

/// One design of a comparison: its label, plan summary, how it was simulated and its predicted
/// performance.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Compared {
    pub label: String,
    pub summary: Summary,
    /// Routing policy of its simulations.
    pub routing: String,
    /// Why, where `routing` is its technology's default rather than asked for: the catalog's
    /// words (`Scenario::routing_default`), for the decision report to say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_default: Option<String>,
    /// How its transfers cross rails between servers (`Relay`'s name).
    pub pxn: String,
    /// NCCL could reduce in the switches (SHARP, CollNet); the key is left out when off.
    #[serde(default, skip_serializing_if = "is_false")]
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
    /// The decision: the winner on the deciding figure, or none when tied within model error.
    verdict: Option<Decision>,
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
    let verdicts = verdicts(designs);
    serde_json::to_value(CompareJson {
        designs,
        verdict: decision(&verdicts),
        verdicts,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests;
