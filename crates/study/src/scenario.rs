//! A [`Scenario`]: a design and how it is run, built once by a front end (from its flags, a
//! `compare` design's pairs or a web request) and handed to the question it asks (`train`,
//! `compare`). It holds the fabric (planned from a spec, or as built) with its catalog and
//! cost, and the network every simulation of it runs on: calibration, SHARP, host memory, the
//! cables down and the servers they drain, the routing policy and how transfers cross rails.
//! Front ends parse into it; they never rebuild a layout, a price or a network beside it.

use crate::failures::{failures, FailureError, FailureRequest};
use crate::tco::Capex;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_plan::{Plan, Planned, Summary};
pub use railyard_sim::calibration::Calibration;
use railyard_sim::collective::Relay;
/// The technology's default routing, for a front end that must know it before the scenario is
/// built (to check the ECMP flags against the routing in effect): the one rule, in sim's
/// capability module, that [`Scenario`] applies too.
pub use railyard_sim::fabric_net::default_routing;
use railyard_sim::fabric_net::NetConfig;
pub use railyard_sim::routing::RoutingConfig;
use railyard_sim::routing::RoutingKind;
use railyard_spec::ClusterSpec;

/// A design and how every simulation of it runs.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub fabric: Fabric,
    pub catalog: Catalog,
    /// The compute network's plan summary (its bill, cost and name).
    pub summary: Summary,
    /// What the whole cluster costs (servers and every network), where known: a planned design
    /// with a server price; `None` for a fabric as built.
    pub capex: Option<Capex>,
    /// The network: calibration, SHARP, host memory bandwidth, the links down and the servers
    /// drained.
    pub net: NetConfig,
    /// The routing policy of every simulation: as asked, else the technology's default
    /// ([`RunSettings::routing`]).
    pub routing: RoutingKind,
    /// Why, when `routing` is the technology's default rather than asked for: the catalog's
    /// words ("RoCE default: ECMP on the 5-tuple ..."), printed beside the policy.
    pub routing_default: Option<String>,
    /// How transfers cross rails between servers; `None`: [`Relay::auto`] of the fabric.
    pub pxn: Option<Relay>,
}

/// How a scenario's simulations run, as a front end was asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSettings {
    /// `None`: the technology's default routing, as its sites run it (the catalog's
    /// `default_routing`: InfiniBand adaptive, as NVIDIA's OpenSM enables it by default, D-mod-K
    /// where the switches do not route adaptively; RoCE ECMP per queue pair).
    pub routing: Option<RoutingKind>,
    /// Queue pairs per connection, each hashed on its own by ECMP (NCCL_IB_QPS_PER_CONNECTION;
    /// NCCL's default 1).
    pub qps_per_connection: u32,
    /// `None`: [`Relay::auto`].
    pub pxn: Option<Relay>,
    pub sharp: bool,
    pub calibration: Calibration,
    /// Host memory bandwidth per server, GB/s (with GPUDirect RDMA off).
    pub host_memory_gbs: f64,
}

impl Default for RunSettings {
    /// As NCCL runs by default, routed as the technology's sites route: PXN as the fabric
    /// suggests, one queue pair per connection, no SHARP plugin, no calibration.
    fn default() -> Self {
        RunSettings {
            routing: None,
            qps_per_connection: 1,
            pxn: None,
            sharp: false,
            calibration: Calibration::default(),
            host_memory_gbs: railyard_sim::fabric_net::HOST_MEMORY_GBS,
        }
    }
}

impl Scenario {
    /// A design planned from `spec` (with its storage and management networks, so the whole
    /// cluster's cost is known where the catalog prices its servers).
    pub fn planned(
        spec: &ClusterSpec,
        catalog: Catalog,
        planned: Planned,
        run: &RunSettings,
    ) -> Self {
        let capex = Capex::of(spec, &catalog, &planned);
        let Planned { fabric, plan, .. } = planned;
        Scenario::new(fabric, catalog, plan.summary, capex, run)
    }

    /// A fabric as built (or built without its plan's other networks): the compute network's own
    /// plan prices it; the cluster's cost is not known.
    pub fn built(fabric: Fabric, catalog: Catalog, run: &RunSettings) -> Self {
        let summary = Plan::new(&fabric, &catalog).summary;
        Scenario::new(fabric, catalog, summary, None, run)
    }

    fn new(
        fabric: Fabric,
        catalog: Catalog,
        summary: Summary,
        capex: Option<Capex>,
        run: &RunSettings,
    ) -> Self {
        let (routing, routing_default) = match run.routing {
            Some(kind) => (kind, None),
            None => match railyard_sim::fabric_net::default_routing(&fabric, &catalog) {
                Some((kind, why)) => (kind, Some(why)),
                // A technology the catalog has no entry for (an older InfiniBand generation of a
                // discovered fabric): OpenSM's ftree, D-mod-K.
                None => (RoutingKind::DModK, None),
            },
        };
        Scenario {
            fabric,
            catalog,
            summary,
            capex,
            routing,
            routing_default,

            net: NetConfig {
                sharp: run.sharp,
                calibration: run.calibration,
                host_memory_gbs: run.host_memory_gbs,
                // A training step hashes with the switches' default seed; its queue pairs as
                // asked.
                hash: RoutingConfig {
                    seed: 0,
                    qps_per_connection: run.qps_per_connection.max(1),
                },
                ..NetConfig::default()
            },
            pxn: run.pxn,
        }
    }

    /// The cables `r` takes down, with the servers they drain, for every simulation of the
    /// scenario ([`failures`]).
    pub fn fail(&mut self, r: &FailureRequest) -> Result<(), FailureError> {
        let f = failures(r, &self.fabric, &self.catalog)?;
        self.net.failed = f.links;
        self.net.drained = f.drained;
        Ok(())
    }

    /// How transfers cross rails: as asked, else as the fabric suggests ([`Relay::auto`]).
    pub fn relay(&self) -> Relay {
        self.pxn
            .unwrap_or_else(|| Relay::auto(&self.fabric, &self.catalog))
    }

    /// The routing as reports print it: the policy, and where it is the technology's default,
    /// why (`ecmp (RoCE default: ECMP on the 5-tuple ...)`).
    pub fn routing_label(&self) -> String {
        match &self.routing_default {
            Some(why) => format!("{} ({why})", self.routing.as_str()),
            None => self.routing.as_str().to_string(),
        }
    }

    /// The compute network's price, US dollars.
    pub fn network_usd(&self) -> f64 {
        self.summary.cost_usd.total
    }

    /// The cables down, by cabling.csv id.
    pub fn failed_cables(&self) -> Vec<String> {
        crate::failures::cable_ids(&self.fabric, &self.net.failed)
    }
}
