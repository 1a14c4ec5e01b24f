//! A training step on a design: the layout resolved for the design's GPUs (fitted to their memory
//! where no layout is asked for), the step simulated on the fabric (with cables taken down), its
//! tokens priced, and whether SHARP changes it. `railyard train`, `compare`, `report --compare`
//! and the web app all predict a step through [`training_step`].

use crate::domain::{default_tp_on_a_rack, domains_of};
use crate::rules::{self, GivenKeys, ModelFacts, NoEffect, StepFacts};
use crate::scenario::Scenario;
use crate::tco::{Assumptions, Capex, TcoError, TokenCosts};
use railyard_catalog::{Catalog, GpuModel};
// A job on rack-scale NVLink domains, as `lay_out` fills them.
pub use crate::domain::{job_gpus, RackJob, DEFAULT_TP_ON_A_RACK};
use railyard_fabric::Fabric;
// The step's vocabulary, as front ends parse their flags into it and name its errors.
pub use railyard_sim::collective::Relay;
use railyard_sim::fabric_net::NetConfig;
use railyard_sim::routing::RoutingKind;
use railyard_train::fabric_timer::replay_workload;
pub use railyard_train::fabric_timer::TrainError;
use railyard_train::fabric_timer::{simulate_step, OnFabric};
pub use railyard_train::fit::Measured;
use railyard_train::fit::{fit_efficiency, FitError};
pub use railyard_train::model::Model;
use railyard_train::output::{CommSetup, ReplayOutput, StepOutput};
pub use railyard_train::parallel::{Layout, MAX_STAGES};
use railyard_train::parallel::{LayoutError, Parallelism, Resolved};
pub use railyard_train::recompute::Modules;
pub use railyard_train::schedule::Schedule;
use railyard_train::simai::{self, SimaiWorkload};
use railyard_train::step::Breakdown;
pub use railyard_train::step::{Precision, StepConfig};
use std::fmt;

/// How a step runs on a design: the network (calibration, SHARP, host memory, the links down),
/// the routing policy and how transfers cross rails, and the step model's knobs.
#[derive(Debug, Clone, Copy)]
pub struct StepSetup<'a> {
    pub fabric: &'a Fabric,
    pub catalog: &'a Catalog,
    pub net: &'a NetConfig,
    pub routing: RoutingKind,
    pub relay: Relay,
    pub step: StepConfig,
}

impl StepSetup<'_> {
    /// One step of `model` laid out as `par` (routes go around the links `net` has down).
    pub fn run(&self, model: &Model, par: &Parallelism) -> Result<Breakdown, TrainError> {
        let on = OnFabric {
            fabric: self.fabric,
            catalog: self.catalog,
            net: self.net,
            routing: self.routing,
            relay: self.relay,
        };
        simulate_step(&on, model, par, &self.step)
    }

    /// Whether SHARP changes the step `with` (run with `net.sharp` on): the same step with SHARP off
    /// is the test. The default ZeRO layouts keep the all-reduce inside a server and run one GPU per
    /// server in each data-parallel all-gather and reduce-scatter, so NCCL picks no algorithm that
    /// reduces in the switches (CollNet, or NVLS across servers).
    pub fn sharp_changes(&self, model: &Model, par: &Parallelism, with: &Breakdown) -> bool {
        let off = NetConfig {
            sharp: false,
            ..self.net.clone()
        };
        let without = StepSetup { net: &off, ..*self }.run(model, par);
        without.as_ref() != Ok(with)
    }
}

impl Scenario {
    /// How a step runs on the scenario: its fabric, network, routing and relay, with the step
    /// model's knobs `step` (`jobs` runs every job's steps on it).
    pub fn step_setup(&self, step: StepConfig) -> StepSetup<'_> {
        StepSetup {
            fabric: &self.fabric,
            catalog: &self.catalog,
            net: &self.net,
            routing: self.routing,
            relay: self.relay(),
            step,
        }
    }
}

/// `layout` resolved for the GPUs of `fabric` a job runs on (the servers `drained` left out, as
/// a scheduler leaves drained nodes out), fitted to their memory where it asks for that (a GPU
/// missing from the catalog holds anything; simulating the step names it).
///
/// On a rack-scale system (GB200/GB300 NVL72) the job's NVLink domain is the rack, as NCCL sees
/// it: its ranks fill each rack's job trays (`sim::scale_up::job_domains`), tensor parallelism may span
/// them, and expert-parallel groups of up to a rack's job GPUs stay inside it (EP 64 with TP 1:
/// a group of `tp x ep` ranks that divides the rack's job GPUs never straddles two racks in
/// Megatron's rank order, `train::parallel`). Where no tensor parallelism is asked for, it is
/// the largest that splits the heads up to [`DEFAULT_TP_ON_A_RACK`].
pub fn lay_out(
    fabric: &Fabric,
    catalog: &Catalog,
    drained: &[usize],
    model: &Model,
    layout: &Layout,
) -> Result<Resolved, LayoutError> {
    let gpu = catalog.gpus.get(&fabric.meta.gpu_model);
    let memory = gpu.map_or(f64::INFINITY, |g| g.memory_bytes());
    let domains = domains_of(fabric, catalog);
    let mut layout = layout.clone();
    if domains.servers > 1 && layout.tp.is_none() {
        layout.tp = Some(default_tp_on_a_rack(
            domains.ranks,
            model.heads,
            model.kv_heads,
        ));
    }
    layout.resolve_fitted(
        job_gpus(fabric, catalog, drained),
        domains.ranks,
        model,
        memory,
    )
}

/// The GPUs of `fabric`'s servers not `drained`, a server's each (`jobs`, which places jobs on
/// servers and refuses rack-scale trays; a training job on racks: [`job_gpus`]).
pub fn gpus(fabric: &Fabric, drained: &[usize]) -> u64 {
    let servers = fabric.servers.len() - drained.len().min(fabric.servers.len());
    servers as u64 * u64::from(fabric.meta.gpus_per_server)
}

/// What the step's tokens cost: the compute network's price, the whole cluster's capital where
/// known, and the assumptions (years paid off, PUE, electricity price).
#[derive(Debug, Clone, Copy)]
pub struct Pricing<'a> {
    pub network_usd: f64,
    pub capex: Option<&'a Capex>,
    pub assumptions: &'a Assumptions,
}

/// A training step predicted on a design.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainingStep {
    /// The layout it ran with, and the default it replaced where fitted to the GPU's memory.
    pub layout: Resolved,
    pub breakdown: Breakdown,
    pub costs: TokenCosts,
}

/// Why a step could not be predicted.
#[derive(Debug, Clone, PartialEq)]
pub enum StepError {
    Layout(LayoutError),
    Train(TrainError),
    Costs(TcoError),
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepError::Layout(e) => e.fmt(f),
            StepError::Train(e) => e.fmt(f),
            StepError::Costs(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for StepError {}

/// One training step of `model` on the design: `layout` resolved ([`lay_out`]), the step
/// simulated ([`StepSetup::run`]) and its tokens priced ([`TokenCosts::of`]).
pub fn training_step(
    setup: &StepSetup,
    model: &Model,
    layout: &Layout,
    pricing: &Pricing,
) -> Result<TrainingStep, StepError> {
    let resolved = lay_out(
        setup.fabric,
        setup.catalog,
        &setup.net.drained,
        model,
        layout,
    )
    .map_err(StepError::Layout)?;
    let breakdown = setup.run(model, &resolved.par).map_err(StepError::Train)?;
    let costs = TokenCosts::of(
        pricing.network_usd,
        pricing.capex,
        breakdown.tokens_per_s,
        pricing.assumptions,
    )
    .map_err(StepError::Costs)?;
    Ok(TrainingStep {
        layout: resolved,
        breakdown,
        costs,
    })
}

/// What `train` asks of a [`Scenario`]: the model, its layout, the step model's knobs, a measured
/// step to fit the compute efficiency to, and the assumptions behind the costs per token.
#[derive(Debug, Clone)]
pub struct TrainRequest<'a> {
    pub model: &'a Model,
    /// The layout asked for (fitted to the GPU's memory where it says so).
    pub layout: Layout,
    /// The step model's knobs; with `fit`, its compute efficiency is the one fitted.
    pub step: StepConfig,
    /// A step the cluster measured, to fit the compute efficiency to (`--fit-efficiency`).
    pub fit: Option<Measured>,
    pub assumptions: Assumptions,
}

/// A training step predicted on a scenario, with what `train` prints beside it.
#[derive(Debug, Clone)]
pub struct Trained {
    /// The GPU the step ran on.
    pub gpu: GpuModel,
    /// The layout it ran with, and the default it replaced where fitted to the GPU's memory.
    pub layout: Resolved,
    /// The step model's knobs it ran with (the fitted efficiency where one was fitted).
    pub cfg: StepConfig,
    pub breakdown: Breakdown,
    pub costs: TokenCosts,
    /// The measurement the efficiency was fitted to.
    pub fitted_to: Option<Measured>,
    /// On rack-scale NVLink domains (GB200/GB300 NVL72): the GPUs the job takes of a rack and
    /// which of its groups stay inside one.
    pub rack: Option<RackJob>,
}

/// Why `train` could not predict a step: each keeps what the front end names.
#[derive(Debug, Clone, PartialEq)]
pub enum TrainFailure {
    /// The fabric's GPU is not in the catalog.
    UnknownGpu(String),
    /// Bad input, said whole (a workload file at fault).
    Input(String),
    Layout(LayoutError),
    /// A key given that cannot change the step (study's rules).
    NoEffect(NoEffect),
    /// A server's cable is down (this many servers drained): train lays the model out on every
    /// server.
    Drained(usize),
    /// The step could not be simulated.
    Step(TrainError),
    /// The efficiency could not be fitted to the measurement (not a simulation error).
    Fit(Measured, String),
    Costs(TcoError),
}

impl fmt::Display for TrainFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainFailure::UnknownGpu(gpu) => {
                write!(f, "the fabric's GPU `{gpu}` is not in the catalog")
            }
            TrainFailure::Input(e) => f.write_str(e),
            TrainFailure::Layout(e) => e.fmt(f),
            TrainFailure::NoEffect(e) => e.fmt(f),
            TrainFailure::Drained(n) => write!(
                f,
                "--fail-cable takes a server's cable down ({n} of them): a job with a dead host link aborts and the node is drained; train lays the model out on every server, so take switch-to-switch cables down here, or see the drained servers' cost with sim collective --fail-host-links"
            ),
            TrainFailure::Step(e) => e.fmt(f),
            TrainFailure::Fit(m, e) => write!(f, "--fit-efficiency {}: {e}", m.describe()),
            TrainFailure::Costs(e) => write!(f, "--{e}"),
        }
    }
}

impl std::error::Error for TrainFailure {}

/// `railyard train`: one step of `req.model` on the scenario: the layout resolved ([`lay_out`],
/// on every server: a server's cable down is refused), the keys `given` checked against study's
/// rules, the step simulated (or its compute efficiency fitted to a measured step), SHARP's
/// effect tested, and its tokens priced.
pub fn train(
    scn: &Scenario,
    req: &TrainRequest,
    given: &dyn GivenKeys,
) -> Result<Trained, TrainFailure> {
    let (fabric, model) = (&scn.fabric, req.model);
    let gpu = scn
        .catalog
        .gpus
        .get(&fabric.meta.gpu_model)
        .ok_or_else(|| TrainFailure::UnknownGpu(fabric.meta.gpu_model.clone()))?;
    // Every server: a server cable down is refused below (train drains none).
    let layout =
        lay_out(fabric, &scn.catalog, &[], model, &req.layout).map_err(TrainFailure::Layout)?;
    let facts = StepFacts {
        par: &layout.par,
        fitted: req.layout.fit_to_memory,
        nics_per_server: fabric.meta.compute_nics_per_server,
    };
    let named = ModelFacts {
        name: &model.name,
        experts: model.experts,
    };
    rules::model_keys_in_effect(given, &named).map_err(TrainFailure::NoEffect)?;
    rules::step_keys_in_effect(given, &facts).map_err(TrainFailure::NoEffect)?;
    if !scn.net.drained.is_empty() {
        return Err(TrainFailure::Drained(scn.net.drained.len()));
    }
    let setup = scn.step_setup(req.step);
    let par = &layout.par;
    let (cfg, breakdown) = match req.fit {
        None => (req.step, setup.run(model, par).map_err(TrainFailure::Step)?),
        Some(measured) => {
            let step = |efficiency: f64| {
                let step = StepConfig {
                    compute_efficiency: Some(efficiency),
                    ..req.step
                };
                StepSetup { step, ..setup }.run(model, par)
            };
            let fit = fit_efficiency(measured, step).map_err(|e| match e {
                FitError::Step(e) => TrainFailure::Step(e),
                e => TrainFailure::Fit(measured, e.to_string()),
            })?;
            let cfg = StepConfig {
                compute_efficiency: Some(fit.efficiency),
                ..req.step
            };
            (cfg, fit.breakdown)
        }
    };
    // `--sharp on` where no collective of the step would reduce in the switches: the same step
    // with SHARP off is the test (study's rule, as the web API checks it).
    let with_cfg = StepSetup { step: cfg, ..setup };
    rules::sharp_in_effect(given, scn.net.sharp, par, &mut || {
        with_cfg.sharp_changes(model, par, &breakdown)
    })
    .map_err(TrainFailure::NoEffect)?;
    let costs = TokenCosts::of(
        scn.network_usd(),
        scn.capex.as_ref(),
        breakdown.tokens_per_s,
        &req.assumptions,
    )
    .map_err(TrainFailure::Costs)?;
    let rack = RackJob::of(fabric, &scn.catalog, par);
    Ok(Trained {
        gpu: gpu.clone(),
        layout,
        cfg,
        breakdown,
        costs,
        fitted_to: req.fit,
        rack,
    })
}

impl Trained {
    /// The step as `railyard train` prints it.
    fn output<'a>(&'a self, scn: &'a Scenario, model: &'a Model) -> StepOutput<'a> {
        StepOutput {
            model,
            design: &scn.fabric.meta.name,
            fabric: &scn.fabric,
            gpu: &self.gpu,
            par: &self.layout.par,
            cfg: &self.cfg,
            comm: CommSetup {
                routing: scn.routing,
                relay: scn.relay(),
            },
            breakdown: &self.breakdown,
            fitted: self.layout.fitted.as_ref(),
            efficiency_fitted_to: self.fitted_to,
            virtual_stages: self.layout.virtual_stages.as_deref(),
            routing_default: scn.routing_default.as_deref(),
        }
    }

    /// The step, its costs per million tokens and the cables down, as text.
    pub fn text(&self, scn: &Scenario, model: &Model, a: &Assumptions) -> String {
        let mut text = self.output(scn, model).text();
        if let Some(r) = &self.rack {
            text += &r.note();
            text.push('\n');
        }
        text += &self.costs.text(a);
        let failed = scn.failed_cables();
        if !failed.is_empty() {
            text += &format!("failed cables ({}): {}\n", failed.len(), failed.join(" "));
        }
        text
    }

    /// The step as JSON, with the costs per million tokens (`network_usd_per_million_tokens`,
    /// and `cluster_usd_per_hour` and `cluster_usd_per_million_tokens` where the cluster's cost
    /// is known), the rack-scale NVLink domain the job ran on (`nvlink_domain`, [`RackJob`]) and
    /// the cables down (`failed_cables`).
    pub fn json(&self, scn: &Scenario, model: &Model) -> serde_json::Value {
        let mut v = self.output(scn, model).json_value();
        if let (serde_json::Value::Object(m), Ok(serde_json::Value::Object(costs))) =
            (&mut v, serde_json::to_value(self.costs))
        {
            m.extend(costs);
            if let Some(r) = self
                .rack
                .as_ref()
                .and_then(|r| serde_json::to_value(r).ok())
            {
                m.insert("nvlink_domain".to_string(), r);
            }
            let failed = scn.failed_cables();
            if !failed.is_empty() {
                m.insert("failed_cables".to_string(), serde_json::Value::from(failed));
            }
        }
        v
    }
}

/// A compute efficiency given (`--efficiency`): above 0, at most 1.
pub fn check_efficiency(e: f64) -> Result<f64, String> {
    if e > 0.0 && e <= 1.0 {
        Ok(e)
    } else {
        Err(format!(
            "--efficiency {}: valid: above 0, at most 1",
            railyard_catalog::number(e)
        ))
    }
}

/// A SimAI/AICB workload replayed on a scenario (`train --workload`).
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The workload file, as named.
    pub file: String,
    pub workload: SimaiWorkload,
    pub gpu: GpuModel,
    /// Tokens per step, when known (the file does not carry them).
    pub tokens: Option<u64>,
    pub breakdown: Breakdown,
}

/// `train --workload FILE`: the workload `text` (read from `file`) parsed, checked against the
/// scenario's GPUs and replayed on its fabric; `seq` and `micro_batch` give its tokens per step.
/// The errors name the file, the flag or the routing as [`TrainFailure`] does.
pub fn replay(
    scn: &Scenario,
    file: &str,
    text: &str,
    seq: Option<u64>,
    micro_batch: u64,
) -> Result<Replayed, TrainFailure> {
    let at_file = |e: &dyn fmt::Display| TrainFailure::Input(format!("{file}: {e}"));
    let w = simai::parse(text).map_err(|e| at_file(&e))?;
    let fabric = &scn.fabric;
    let gpu = scn
        .catalog
        .gpus
        .get(&fabric.meta.gpu_model)
        .ok_or_else(|| TrainFailure::UnknownGpu(fabric.meta.gpu_model.clone()))?;
    w.check_fits(job_gpus(fabric, &scn.catalog, &[]))
        .map_err(|e| at_file(&e))?;
    let tokens = w
        .tokens_per_step(seq, micro_batch)
        .map_err(TrainFailure::Layout)?;
    let b = replay_workload(
        fabric,
        &scn.catalog,
        &scn.net,
        &w,
        tokens,
        scn.routing,
        scn.relay(),
    )
    .map_err(TrainFailure::Step)?;
    Ok(Replayed {
        file: file.to_string(),
        workload: w,
        gpu: gpu.clone(),
        tokens,
        breakdown: b,
    })
}

impl Replayed {
    fn output<'a>(&'a self, scn: &'a Scenario) -> ReplayOutput<'a> {
        ReplayOutput {
            file: &self.file,
            workload: &self.workload,
            design: &scn.fabric.meta.name,
            fabric: &scn.fabric,
            gpu: &self.gpu,
            comm: CommSetup {
                routing: scn.routing,
                relay: scn.relay(),
            },
            tokens: self.tokens,
            breakdown: &self.breakdown,
        }
    }

    /// The replayed step as text.
    pub fn text(&self, scn: &Scenario) -> String {
        self.output(scn).text()
    }

    /// The replayed step as JSON.
    pub fn json(&self, scn: &Scenario) -> serde_json::Value {
        self.output(scn).json_value()
    }
}

#[cfg(test)]
#[path = "domain_tests.rs"]
mod domain_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_sim::fabric_net::random_network_links;
    use railyard_spec::{presets, ClusterSpec, Overrides};

    fn fabric(servers: u32) -> Fabric {
        let mut raw = presets::raw("dgx-h100-superpod").unwrap();
        Overrides {
            servers: Some(servers),
            ..Default::default()
        }
        .apply(&mut raw)
        .unwrap();
        let spec = ClusterSpec::from_raw(&raw, "test").unwrap();
        railyard_fabric::build(&spec, &Catalog::builtin()).unwrap()
    }

    /// No failures is the step as `simulate_step` times it; failed leaf-spine links that the
    /// data-parallel all-reduce crosses make the step slower, never faster.
    #[test]
    fn failed_links_slow_the_step_they_carry() {
        let f = fabric(16);
        let catalog = Catalog::builtin();
        let model = Model::preset("llama3-8b").unwrap();
        let par = Layout::unasked().resolve(128, 8, &model).unwrap();
        let run = |net: &NetConfig| {
            StepSetup {
                fabric: &f,
                catalog: &catalog,
                net,
                routing: RoutingKind::DModK,
                relay: Relay::auto(&f, &catalog),
                step: StepConfig::default(),
            }
            .run(&model, &par)
            .unwrap()
        };
        let whole = run(&NetConfig::default());
        let on = OnFabric {
            fabric: &f,
            catalog: &catalog,
            net: &NetConfig::default(),
            routing: RoutingKind::DModK,
            relay: Relay::auto(&f, &catalog),
        };
        let direct = simulate_step(&on, &model, &par, &StepConfig::default()).unwrap();
        assert_eq!(whole, direct);
        let degraded = run(&NetConfig {
            failed: random_network_links(&f, 24, 1),
            ..Default::default()
        });
        assert!(
            degraded.data_parallel_total_s > whole.data_parallel_total_s,
            "{} vs {}",
            degraded.data_parallel_total_s,
            whole.data_parallel_total_s
        );
        assert!(degraded.step_time_s >= whole.step_time_s);
    }
}
