//! Predicted bus bandwidth for the report's plots, from the simulator (`railyard sim collective`'s
//! model: NCCL-style ring, double binary tree and all-to-all with PXN on this fabric, D-mod-K routing,
//! algorithm and protocol chosen per size as NCCL's tuner does).

use crate::chart::Curve;
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::collective::{self, AlgoChoice, CollectiveConfig, CollectiveError, Relay};
use railyard_sim::fabric_net::{FabricNet, NetConfig, TreeRouter};
use railyard_sim::nccl::{self, Collective};
use railyard_sim::routing::{self, RoutingConfig, RoutingKind};
use railyard_sim::{Cancel, Cancelled};

/// Message sizes of the plots: 256 B to 8 GiB, doubling (as `nccl-tests -b 256 -e 8G -f 2`).
pub fn sizes() -> Vec<u64> {
    nccl::sweep(256, 8 << 30, 2).unwrap_or_default()
}

/// The collectives the report plots.
pub const COLLECTIVES: [Collective; 2] = [Collective::AllReduce, Collective::AllToAll];

/// Curves that could be simulated, and a note for each that could not (too large, no route).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Busbw {
    pub curves: Vec<Curve>,
    pub notes: Vec<String>,
}

/// Simulates each of [`COLLECTIVES`] on `f` at [`sizes`]; `progress` hears about each phase.
pub fn simulate(f: &Fabric, catalog: &Catalog, progress: &mut dyn FnMut(&str)) -> Busbw {
    // `Cancel::NEVER` is never set, so this is never the default.
    simulate_until(f, catalog, progress, Cancel::NEVER).unwrap_or_default()
}

/// [`simulate`] that stops with [`Cancelled`] soon after `cancel` is set (between collectives, and
/// inside each as [`collective::run_until`] reads it).
pub fn simulate_until(
    f: &Fabric,
    catalog: &Catalog,
    progress: &mut dyn FnMut(&str),
    cancel: Cancel<'_>,
) -> Result<Busbw, Cancelled> {
    let mut out = Busbw::default();
    let net = match FabricNet::new(f, catalog, &NetConfig::default()) {
        Ok(net) => net,
        Err(e) => {
            out.notes.push(format!("not simulated: {e}"));
            return Ok(out);
        }
    };
    let router = TreeRouter {
        policy: routing::build(RoutingKind::DModK, RoutingConfig::default()),
    };
    let sizes = sizes();
    for op in COLLECTIVES {
        cancel.check()?;
        let cfg = CollectiveConfig {
            op,
            algo: AlgoChoice::Auto,
            relay: Relay::auto(f),
            collnet: false,
        };
        let mut inner = |m: &str| progress(&format!("{op}: {m}"));
        match collective::run_until(&net, &router, &cfg, &sizes, &mut inner, cancel) {
            Ok(report) => out.curves.push(Curve {
                collective: op.to_string(),
                points: report
                    .rows
                    .iter()
                    .map(|r| (r.row.size_bytes, r.row.busbw_gbs))
                    .collect(),
            }),
            Err(CollectiveError::Cancelled) => return Err(Cancelled),
            Err(e) => {
                // Errors about the collective itself already start with its name.
                let e = e.to_string();
                let why = e.strip_prefix(&format!("{op}: ")).unwrap_or(&e);
                out.notes.push(format!("{op} not simulated: {why}"));
            }
        }
    }
    Ok(out)
}
