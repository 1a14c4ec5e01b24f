//! A training step on a design: the layout resolved for the design's GPUs (fitted to their memory
//! where no layout is asked for), the step simulated on the fabric (with cables taken down), its
//! tokens priced, and whether SHARP changes it. `railyard train`, `compare`, `report --compare`
//! and the web app all predict a step through [`training_step`].

use crate::tco::{Assumptions, Capex, TcoError, TokenCosts};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::collective::Relay;
use railyard_sim::fabric_net::NetConfig;
use railyard_sim::routing::RoutingKind;
use railyard_train::fabric_timer::{simulate_step, OnFabric, TrainError};
use railyard_train::model::Model;
use railyard_train::parallel::{Layout, LayoutError, Parallelism, Resolved};
use railyard_train::step::{Breakdown, StepConfig};
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

/// `layout` resolved for the GPUs of `fabric` a job runs on (the servers `drained` left out, as
/// a scheduler leaves drained nodes out), fitted to their memory where it asks for that (a GPU
/// missing from the catalog holds anything; simulating the step names it).
pub fn lay_out(
    fabric: &Fabric,
    catalog: &Catalog,
    drained: &[usize],
    model: &Model,
    layout: &Layout,
) -> Result<Resolved, LayoutError> {
    let gpu = catalog.gpus.get(&fabric.meta.gpu_model);
    let memory = gpu.map_or(f64::INFINITY, |g| g.memory_bytes());
    layout.resolve_fitted(
        gpus(fabric, drained),
        fabric.meta.gpus_per_server,
        model,
        memory,
    )
}

/// The GPUs of `fabric` a job runs on: those of the servers not `drained`.
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
                relay: Relay::auto(&f),
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
            relay: Relay::auto(&f),
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
