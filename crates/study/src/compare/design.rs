//! One design of a comparison: planned from a base spec and its pairs into a [`Scenario`]
//! ([`plan_variant`]), then evaluated as asked ([`evaluate`]): its busbw rows and training step
//! ([`perf`]), whether SHARP changed any of it, and the report's busbw curves. `compare` and
//! `report --compare` build each design's scenario from their flags and the design's pairs and
//! hand it here.

use super::{perf, sharp_changes, Compared, Perf, PerfError, PerfRequest, SimSettings};
use crate::busbw::{self, Busbw};
use crate::scenario::{RunSettings, Scenario};
use crate::tco::Assumptions;
use railyard_catalog::Catalog;
use railyard_sim::collective::AlgoChoice;
use railyard_sim::routing::RoutingConfig;
use railyard_spec::keys::{DesignKey, Value};
use railyard_spec::raw::RawSpec;
use railyard_spec::{ClusterSpec, Overrides};
use railyard_train::model::Model;
use railyard_train::parallel::Layout;
use railyard_train::step::StepConfig;

/// A design of a comparison to plan: its base spec (with the flags' design keys applied), where
/// it came from, its label and its design pairs.
#[derive(Debug, Clone)]
pub struct Variant<'a> {
    pub raw: RawSpec,
    /// The preset or spec file the base came from, for the errors.
    pub origin: &'a str,
    pub label: &'a str,
    /// The design keys its pairs set, with the pairs' text (`tech=roce-400g`) recorded as the
    /// keys that changed it.
    pub pairs: &'a [(&'static DesignKey, Value, String)],
    /// Name the design by its label: it is not its preset any more (it has pairs of any kind).
    pub renamed: bool,
}

/// Whether a variant routed by its technology's default hashes its flows (ECMP: RoCE, the
/// catalog's `default_routing`), read from its spec before it is planned, so that the flags only
/// ECMP reads (`--seed`, `--qps-per-connection`) can be refused before any design is built. A
/// spec that does not parse, or names no technology the catalog knows, counts as hashing: its
/// own error comes when it is planned.
pub fn hashes_by_default(v: &Variant, catalog: &Catalog) -> bool {
    let mut raw = v.raw.clone();
    let mut o = Overrides::default();
    for (k, val, _) in v.pairs {
        (k.set)(&mut o, val.clone());
    }
    if o.apply(&mut raw).is_err() {
        return true;
    }
    let Ok(spec) = ClusterSpec::from_raw(&raw, v.origin) else {
        return true;
    };
    catalog
        .technologies
        .get(&spec.fabric.tech)
        .is_none_or(|t| t.default_routing.policy == "ecmp")
}

/// A variant planned (with its storage and management networks, so the whole cluster's cost is
/// known) into a scenario run as `run` says. Errors name the design's label (and the base they
/// were read from where the plan fails).
pub fn plan_variant(v: Variant, catalog: Catalog, run: &RunSettings) -> Result<Scenario, String> {
    let Variant {
        mut raw,
        origin,
        label,
        pairs,
        renamed,
    } = v;
    let mut o = Overrides::default();
    for (k, val, _) in pairs {
        (k.set)(&mut o, val.clone());
    }
    o.apply(&mut raw).map_err(|e| format!("{label}: {e}"))?;
    let mut spec = ClusterSpec::from_raw(&raw, origin).map_err(|e| format!("{label}: {e}"))?;
    // The design keys that changed it, as `plan` records its flags (`overrides` in the summary).
    let changed: Vec<String> = pairs.iter().map(|(_, _, text)| text.clone()).collect();
    spec.describe_overrides(&changed);
    let planned = railyard_plan::plan_design(&spec, &catalog, &Default::default())
        .map_err(|e| format!("{label}: {origin}: {e}"))?;
    let mut scn = Scenario::planned(&spec, catalog, planned, run);
    if renamed {
        scn.summary.name = label.to_string();
    }
    Ok(scn)
}

/// What a comparison asks of one design's scenario.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    pub label: &'a str,
    /// busbw at 1 GiB rows (`--perf`).
    pub busbw: bool,
    /// A training step of this model, laid out as asked.
    pub model: Option<(&'a Model, Layout)>,
    /// The step model's knobs.
    pub step: StepConfig,
    /// The assumptions behind the costs per million tokens.
    pub costs: Assumptions,
    /// The all-reduce row's algorithm.
    pub algo: AlgoChoice,
    /// Seed of the ECMP hash and queue pairs per connection, for the busbw rows.
    pub hash: RoutingConfig,
    /// `--sharp on` was given for this design (no `sharp=` pair of its own): test whether it
    /// changes anything predicted.
    pub test_sharp: bool,
    /// The report's busbw curves.
    pub curves: bool,
}

/// A design compared: the row of the table, and for the report its busbw curves.
#[derive(Debug, Clone)]
pub struct Evaluated {
    pub compared: Compared,
    pub busbw: Option<Busbw>,
    /// `--sharp on` reached this design and changed nothing it predicts: the same prediction
    /// with SHARP off is identical.
    pub sharp_moot: bool,
}

/// Predicts what `ask` asks of one built design (a planned variant, or the fabric as built).
pub fn evaluate(scn: &Scenario, ask: &Ask) -> Result<Evaluated, PerfError> {
    let req = PerfRequest {
        busbw: ask.busbw,
        model: ask.model.clone(),
        routing: scn.routing,
        relay: scn.pxn,
        sharp: scn.net.sharp,
        costs: ask.costs,
        capex: scn.capex.as_ref(),
        step: ask.step,
        calibration: scn.net.calibration,
        sim: SimSettings {
            algo: ask.algo,
            routing: ask.hash,
            failed: &scn.net.failed,
            drained: &scn.net.drained,
            host_memory_gbs: scn.net.host_memory_gbs,
        },
    };
    let performance: Perf = perf(&scn.fabric, &scn.catalog, &scn.summary, &req)?;
    // `--sharp on` for every design: the same prediction with SHARP off is the test, as in
    // `train` (the default ZeRO layouts reduce nothing across servers in the switches). The
    // report's curves are left out of it: with them SHARP is drawn.
    let sharp_moot = scn.net.sharp
        && ask.test_sharp
        && !ask.curves
        && !sharp_changes(&scn.fabric, &scn.catalog, &scn.summary, &req, &performance);
    let busbw = ask.curves.then(|| {
        let (calibration, sharp) = (scn.net.calibration, scn.net.sharp);
        busbw::curves(&scn.fabric, &scn.catalog, calibration, sharp, &mut |_| {})
    });
    Ok(Evaluated {
        compared: Compared {
            label: ask.label.to_string(),
            summary: scn.summary.clone(),
            routing: scn.routing.as_str().to_string(),
            routing_default: scn.routing_default.clone(),
            pxn: scn.relay().as_str().to_string(),
            sharp: scn.net.sharp,
            performance,
        },
        busbw,
        sharp_moot,
    })
}

/// Every design's busbw is measured at [`super::BUSBW_BYTES`]: at the host memory's rate it must
/// fit the simulator's clock, said for the flag before any work.
pub fn check_host_memory(gbs: f64) -> Result<(), String> {
    let bytes = super::BUSBW_BYTES;
    railyard_sim::time::check_flag_rate(
        "--host-memory-gbs",
        gbs,
        bytes,
        &format!("the {bytes}-byte all-reduce and all-to-all compare prices"),
    )
    .map(|_| ())
}

impl Compared {
    /// The progress line of a finished design: its network's cost and headline numbers.
    pub fn progress(&self) -> String {
        let mut s = format!(
            "{}: network ${}",
            self.label,
            railyard_plan::output::thousands(self.summary.cost_usd.total)
        );
        if let Some(t) = self.performance.step_time_s {
            s.push_str(&format!(", step {t:.3} s"));
        }
        if let Some(b) = self.performance.allreduce_busbw_1g_gbs {
            s.push_str(&format!(", all-reduce {b:.1} GB/s"));
        }
        s
    }
}
