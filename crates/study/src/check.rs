//! `railyard check`: the health of a discovered fabric on its own (`ib::health`), verified
//! against a plan (`ib::verify`), and what each finding costs ([`crate::impact`]), as one report
//! the front end prints as text or JSON.
//!
//! The front end reads the files (the discovery output, the plan) and hands them over; the steps
//! are separate so that it says what is wrong with its input in the order it reads it.

use crate::compare::{PerfError, PerfRequest};
use crate::discovered::{self, DiscoveredError};
use crate::impact::{impact, impact_text, Impact, ImpactError};
use railyard_catalog::Catalog;
use railyard_fabric::layout::RackPlace;
use railyard_fabric::Fabric;
use railyard_ib::discovery::{self, Discovered, ParseError};
use railyard_ib::health::{self, Health};
use railyard_ib::import::ImportError;
use railyard_ib::verify::{self, Verification};
use railyard_sim::routing::RoutingKind;
use railyard_spec::raw::RawSpec;
use railyard_spec::Overrides;
use railyard_train::model::Model;
use railyard_train::parallel::Layout;
use serde::Serialize;
use std::fmt;

/// A discovered fabric and its health.
pub struct Checked {
    pub discovered: Discovered,
    pub health: Health,
}

/// Reads discovery output (ibnetdiscover, default or `-p`, or iblinkinfo: the format is
/// recognised by content) and checks the fabric's health on its own.
pub fn discover(text: &str) -> Result<Checked, ParseError> {
    let discovered = discovery::parse(text)?;
    let health = health::check(&discovered);
    Ok(Checked { discovered, health })
}

/// What a finding's cost is simulated on: discovery does not see GPUs, so the servers are
/// described (a spec's or the design keys'), and how the simulations run.
#[derive(Debug, Clone, Copy)]
pub struct ImpactAsk<'a> {
    /// The name the discovered fabric goes by (its file's name).
    pub name: &'a str,
    /// A spec file's raw spec and origin whose servers describe the discovered ones.
    pub base: Option<&'a (RawSpec, String)>,
    /// The design keys given (`--gpu`, `--gpus-per-server`, ...).
    pub overrides: &'a Overrides,
    pub catalog: &'a Catalog,
    /// Also a training step of this model, laid out with `train`'s defaults.
    pub model: Option<&'a Model>,
    /// Routing of every simulation.
    pub routing: RoutingKind,
}

/// Why a finding's cost could not be priced: the input (the fabric does not import, the
/// servers do not describe it), or a simulation that failed ([`CheckError::is_simulation`]).
#[derive(Debug)]
pub enum CheckError {
    Import(ImportError),
    Servers(DiscoveredError),
    Impact(ImpactError),
}

impl CheckError {
    /// A simulation failed (not the input).
    pub fn is_simulation(&self) -> bool {
        matches!(
            self,
            CheckError::Impact(ImpactError::Perf(PerfError::Train(_)))
                | CheckError::Impact(ImpactError::Perf(PerfError::Collective(_)))
        )
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Import(e) => write!(f, "{e}"),
            CheckError::Servers(e) => write!(f, "{e}"),
            CheckError::Impact(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CheckError {}

impl Checked {
    /// The discovered fabric against the plan, as `verify --plan` checks it; `places` says where
    /// each planned node stands, `ibsim` expects the rates ibsim shows.
    pub fn verify(
        &self,
        plan: &Fabric,
        places: Option<&[Option<RackPlace>]>,
        ibsim: bool,
    ) -> Verification {
        verify::verify_with(
            plan,
            &self.discovered,
            verify::Options { ibsim_rates: ibsim },
            verify::Site {
                locations: places,
                ..Default::default()
            },
        )
    }

    /// What each finding costs: busbw at 1 GiB (and the training step of the model) as
    /// discovered and with the finding repaired, priced as NCCL runs by default (no SHARP plugin).
    pub fn impact(&self, ask: &ImpactAsk) -> Result<Impact, CheckError> {
        let imported = railyard_ib::import::to_fabric(&self.discovered, ask.name)
            .map_err(CheckError::Import)?;
        let spec = discovered::server_spec(&imported, ask.base.cloned(), ask.overrides)
            .map_err(CheckError::Servers)?;
        let req = PerfRequest {
            busbw: true,
            model: ask.model.map(|m| (m, Layout::unasked())),
            ..PerfRequest::routed(ask.routing)
        };
        impact(
            &self.discovered,
            &self.health,
            ask.name,
            &spec,
            ask.catalog,
            &req,
        )
        .map_err(CheckError::Impact)
    }
}

/// What `check` found: the health, and the verification and the impact where asked for. Its
/// JSON is `{"health", "impact"?, "verification"?}`.
#[derive(Serialize)]
pub struct CheckReport {
    pub health: Health,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impact: Option<Impact>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
}

impl CheckReport {
    /// Healthy, and matching the plan where one was given.
    pub fn ok(&self) -> bool {
        self.health.healthy && self.verification.as_ref().is_none_or(|v| v.matches)
    }

    /// The report as text: the health of the fabric read from `origin`, the verification
    /// against the plan named `plan`, the impact of each finding under `routing`.
    pub fn text(&self, origin: &str, plan: &str, routing: RoutingKind) -> String {
        let mut out = health::health_text(&self.health, origin);
        if let Some(r) = &self.verification {
            out.push_str(&format!("against the plan {plan}:\n"));
            out.push_str(&verify::report_text(r));
        }
        if let Some(i) = &self.impact {
            out.push_str(&impact_text(i, routing.as_str()));
        }
        out
    }
}
