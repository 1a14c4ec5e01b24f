//! Designs side by side (`railyard compare`): each design's simulated performance ([`perf`]: busbw
//! at 1 GiB, a training step, the network's cost per million tokens) and the comparison as text and
//! JSON.

use crate::busbw::curve;
use crate::tco::{cost_per_hour, Assumptions, Capex, TcoError};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_plan::output::{compare_text, thousands};
use railyard_plan::Summary;
use railyard_sim::collective::{CollectiveError, Relay};
use railyard_sim::fabric_net::{NetConfig, RoutedNet};
use railyard_sim::nccl::Collective;
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_sim::{Cancel, SimError};
use railyard_train::fabric_timer::{simulate_step, TrainError};
use railyard_train::model::Model;
use railyard_train::parallel::{Layout, LayoutError};
use railyard_train::step::StepConfig;
use serde::Serialize;
use std::fmt;

/// The message size of the busbw rows: 1 GiB, where bus bandwidth has reached its plateau.
pub const BUSBW_BYTES: u64 = 1 << 30;

/// What to predict of each design.
#[derive(Debug, Clone, Copy)]
pub struct PerfRequest<'a> {
    /// Simulate all-reduce and all-to-all at [`BUSBW_BYTES`].
    pub busbw: bool,
    /// Predict a training step of this model, laid out as asked (defaults per design).
    pub model: Option<(&'a Model, Layout)>,
    /// Routing policy of every simulation.
    pub routing: RoutingKind,
    /// How transfers cross rails between servers; `None`: [`Relay::auto`] of each design.
    pub relay: Option<Relay>,
    /// Years over which the hardware is paid off, the PUE and the electricity price, for the costs
    /// per million tokens (assumptions).
    pub costs: Assumptions,
}

/// Simulated performance of one design.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Perf {
    pub allreduce_busbw_1g_gbs: Option<f64>,
    pub alltoall_busbw_1g_gbs: Option<f64>,
    pub step_time_s: Option<f64>,
    /// Expert-parallel all-to-all in the step (with EP above 1).
    pub expert_all_to_all_s: Option<f64>,
    /// Weights, gradients and Adam state per GPU (activations not counted).
    pub model_state_gb_per_gpu: Option<f64>,
    /// What could not be simulated, and why.
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
}

/// Why a design's performance could not be predicted.
#[derive(Debug, Clone, PartialEq)]
pub enum PerfError {
    /// The network could not be built.
    Net(SimError),
    /// A collective could not run on it (other than an all-to-all too large to simulate, which
    /// becomes a note).
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

/// The network's cost per million tokens: `network_usd` paid off over `years` of training at
/// `tokens_per_s`.
pub fn usd_per_million_tokens(network_usd: f64, tokens_per_s: f64, years: f64) -> f64 {
    // Julian years of 365.25 days.
    let seconds = years * 365.25 * 86_400.0;
    network_usd / (tokens_per_s * seconds) * 1e6
}

/// What `req` asks of the design `fabric`, planned as `summary`, whose whole cluster costs `capex`
/// (`None` where the catalog prices no server of its GPU).
pub fn perf(
    fabric: &Fabric,
    catalog: &Catalog,
    summary: &Summary,
    capex: Option<&Capex>,
    req: &PerfRequest<'_>,
) -> Result<Perf, PerfError> {
    let mut perf = Perf::default();
    if let Some(c) = capex {
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
    if req.busbw {
        let RoutedNet { net, router } = RoutedNet::new(
            fabric,
            catalog,
            &NetConfig::default(),
            req.routing,
            RoutingConfig::default(),
        )
        .map_err(PerfError::Net)?;
        let mut busbw = |op| -> Result<Option<f64>, PerfError> {
            match curve(
                &net,
                &router,
                op,
                relay,
                &[BUSBW_BYTES],
                &mut |_| {},
                Cancel::NEVER,
            ) {
                Ok(c) => Ok(Some(c.points.first().map_or(0.0, |p| p.1))),
                // Too many flows to simulate: the row says so instead of failing the comparison.
                Err(e @ CollectiveError::TooManyFlows { .. }) => {
                    perf.notes.push(format!("all-to-all not simulated: {e}"));
                    Ok(None)
                }
                Err(e) => Err(PerfError::Collective(e)),
            }
        };
        perf.allreduce_busbw_1g_gbs = busbw(Collective::AllReduce)?;
        // Through the spines where there are spines; relayed store-and-forward over NVLink on a
        // rail-only fabric (the Rail-only paper's model; `Relay::auto`).
        perf.alltoall_busbw_1g_gbs = busbw(Collective::AllToAll)?;
    }
    if let Some((model, layout)) = req.model {
        let gpus = fabric.servers.len() as u64 * u64::from(fabric.meta.gpus_per_server);
        let par = layout
            .resolve(gpus, fabric.meta.gpus_per_server, model)
            .map_err(PerfError::Layout)?;
        let b = simulate_step(
            fabric,
            catalog,
            model,
            &par,
            &StepConfig::default(),
            req.routing,
            relay,
        )
        .map_err(PerfError::Train)?;
        perf.step_time_s = Some(b.step_time_s);
        perf.expert_all_to_all_s = (par.ep > 1).then_some(b.expert_parallel_s);
        perf.model_state_gb_per_gpu = Some(b.model_state_bytes_per_gpu / 1e9);
        perf.tokens_per_s = Some(b.tokens_per_s);
        perf.network_usd_per_million_tokens = Some(usd_per_million_tokens(
            summary.cost_usd.total,
            b.tokens_per_s,
            req.costs.amortize_years,
        ));
        perf.cluster_usd_per_million_tokens = perf
            .cluster_usd_per_hour
            .map(|hour| hour / (b.tokens_per_s * 3600.0) * 1e6);
    }
    Ok(perf)
}

/// One design of a comparison: its label, plan summary and predicted performance.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    pub label: String,
    pub summary: Summary,
    pub performance: Perf,
}

#[derive(Serialize)]
struct CompareJson<'a> {
    designs: &'a [Compared],
}

/// The comparison as JSON: `{"designs": [{"label", "summary", "performance"}]}`, object keys in
/// alphabetical order (through `serde_json::Value`, whose maps are sorted).
pub fn compare_json(designs: &[Compared]) -> String {
    // Numbers, strings and maps with string keys: serializing them cannot fail.
    let mut text = serde_json::to_value(CompareJson { designs })
        .and_then(|v| serde_json::to_string_pretty(&v))
        .unwrap_or_default();
    text.push('\n');
    text
}

/// The comparison as a table (the plans' rows, then what the topology costs and what was predicted)
/// and the notes of what could not be simulated. `model` names the model in the step rows and
/// `costs` the assumptions in the cost rows.
pub fn compare_table(designs: &[Compared], model: &str, costs: &Assumptions) -> String {
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
    let columns: Vec<(String, Summary)> = designs
        .iter()
        .map(|d| (d.label.clone(), d.summary.clone()))
        .collect();
    let mut text = compare_text(&columns, &extra);
    for d in designs {
        for n in &d.performance.notes {
            text.push_str(&format!("{}: {n}\n", d.label));
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
}
