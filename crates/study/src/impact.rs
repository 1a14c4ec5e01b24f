//! What each fault of a discovered fabric costs (`railyard check --impact`): all-reduce and
//! all-to-all busbw at 1 GiB (and with a model a training step) on the fabric as discovered and
//! with each finding repaired as its [`Repair`] says (a degraded link at its peers' rate, missing
//! uplinks cabled), and the loss between them.
//!
//! With static routing (D-mod-K, as OpenSM's ftree) every flow to a destination takes one fixed
//! uplink, so one slow uplink slows every flow routed over it, and a collective, which waits for
//! its slowest flow, runs at that link's pace: the loss is the link's lost rate, not its share of
//! the leaf's uplink capacity.

use crate::compare::{perf, Perf, PerfError, PerfRequest};
use crate::discovered::{furnish, DiscoveredError};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_ib::discovery::Discovered;
use railyard_ib::health::{repaired, Finding, Health, Repair};
use railyard_spec::ClusterSpec;
use serde::Serialize;
use std::fmt::{self, Write};

/// One finding's cost: performance as discovered and repaired, and the loss in % of the repaired.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImpactRow {
    /// The finding's kind, or `all` for every repair at once.
    pub finding: String,
    /// The first link it concerns (`"a"[3] - "b"[5]`).
    pub link: String,
    pub repaired: Perf,
    pub allreduce_loss_pct: Option<f64>,
    pub alltoall_loss_pct: Option<f64>,
    /// Training throughput (tokens/s) lost.
    pub tokens_loss_pct: Option<f64>,
}

/// The cost of every finding that a simulation can repair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Impact {
    pub as_is: Perf,
    pub rows: Vec<ImpactRow>,
    /// Findings that cannot be repaired in a simulation (`kind: what`): where a cable should go is
    /// unknown, a loop cable carries no traffic between hosts, a failed query's loss is unknown.
    pub not_simulated: Vec<String>,
}

/// Why a finding (`kind: what`, as [`Impact::not_simulated`] lists it) has no repair to simulate.
fn why_not_simulated(entry: &str) -> &'static str {
    match entry.split(':').next().unwrap_or("") {
        "loopback" => "it carries no traffic between hosts",
        "discovery-warning" => "what the failed query missed is unknown",
        "rate-disagreement" => {
            "which of the two rates the link runs at is unknown (a slower one is costed as slow-link)"
        }
        _ => "where the cable goes is unknown",
    }
}

/// Why the impact could not be simulated.
#[derive(Debug, Clone, PartialEq)]
pub enum ImpactError {
    Discovered(DiscoveredError),
    Perf(PerfError),
}

impl fmt::Display for ImpactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImpactError::Discovered(e) => write!(f, "{e}"),
            ImpactError::Perf(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ImpactError {}

/// `(repaired - as_is) / repaired` in %, for a rate (busbw, tokens/s).
pub fn loss_pct(as_is: Option<f64>, repaired: Option<f64>) -> Option<f64> {
    match (as_is, repaired) {
        (Some(a), Some(r)) if r > 0.0 => Some((r - a) / r * 100.0),
        _ => None,
    }
}

fn simulate(
    d: &Discovered,
    name: &str,
    spec: &ClusterSpec,
    catalog: &Catalog,
    req: &PerfRequest<'_>,
) -> Result<Perf, ImpactError> {
    let f: Fabric = railyard_ib::import::to_fabric(d, name)
        .map_err(|e| ImpactError::Discovered(DiscoveredError::Import(e)))?;
    let f = furnish(f, spec, catalog).map_err(ImpactError::Discovered)?;
    let summary = railyard_plan::Plan::new(&f, catalog).summary;
    perf(&f, catalog, &summary, req).map_err(ImpactError::Perf)
}

fn link_of(f: &Finding) -> String {
    f.ends
        .first()
        .map(|(a, b)| {
            let e = |x: &railyard_ib::health::End| format!("\"{}\"[{}]", x.device, x.port);
            match b {
                Some(b) => format!("{} - {}", e(a), e(b)),
                None => e(a),
            }
        })
        .unwrap_or_default()
}

/// Simulates `d` as discovered and with each of `health`'s repairable findings repaired (and all
/// of them at once when there are several), its servers furnished as `spec` describes.
pub fn impact(
    d: &Discovered,
    health: &Health,
    name: &str,
    spec: &ClusterSpec,
    catalog: &Catalog,
    req: &PerfRequest<'_>,
) -> Result<Impact, ImpactError> {
    let as_is = simulate(d, name, spec, catalog, req)?;
    let mut rows = Vec::new();
    let mut not_simulated = Vec::new();
    let mut all: Vec<Repair> = Vec::new();
    let row = |finding: String, link: String, p: Perf| ImpactRow {
        allreduce_loss_pct: loss_pct(as_is.allreduce_busbw_1g_gbs, p.allreduce_busbw_1g_gbs),
        alltoall_loss_pct: loss_pct(as_is.alltoall_busbw_1g_gbs, p.alltoall_busbw_1g_gbs),
        tokens_loss_pct: loss_pct(as_is.tokens_per_s, p.tokens_per_s),
        finding,
        link,
        repaired: p,
    };
    for f in &health.findings {
        if f.repair.is_empty() {
            not_simulated.push(format!("{}: {}", f.kind.as_str(), f.what));
            continue;
        }
        all.extend(f.repair.iter().cloned());
        let p = simulate(&repaired(d, &f.repair), name, spec, catalog, req)?;
        rows.push(row(f.kind.as_str().to_string(), link_of(f), p));
    }
    if rows.len() > 1 {
        let p = simulate(&repaired(d, &all), name, spec, catalog, req)?;
        rows.push(row("all".to_string(), String::new(), p));
    }
    Ok(Impact {
        as_is,
        rows,
        not_simulated,
    })
}

/// The impact as a table: one row per finding, busbw in GB/s.
pub fn impact_text(i: &Impact, routing: &str) -> String {
    let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}%"));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "impact at 1 GiB, routing {routing}: busbw in GB/s as discovered, with the finding repaired, and the loss"
    );
    let step = i.as_is.tokens_per_s.is_some();
    let _ = write!(
        out,
        "{:<16} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}",
        "finding", "allreduce", "repaired", "loss", "alltoall", "repaired", "loss"
    );
    if step {
        let _ = write!(out, " {:>10} {:>10} {:>7}", "tokens/s", "repaired", "loss");
    }
    out.push_str("  link\n");
    for r in &i.rows {
        let _ = write!(
            out,
            "{:<16} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}",
            r.finding,
            num(i.as_is.allreduce_busbw_1g_gbs),
            num(r.repaired.allreduce_busbw_1g_gbs),
            pct(r.allreduce_loss_pct),
            num(i.as_is.alltoall_busbw_1g_gbs),
            num(r.repaired.alltoall_busbw_1g_gbs),
            pct(r.alltoall_loss_pct)
        );
        if step {
            let _ = write!(
                out,
                " {:>10} {:>10} {:>7}",
                num(i.as_is.tokens_per_s),
                num(r.repaired.tokens_per_s),
                pct(r.tokens_loss_pct)
            );
        }
        let _ = writeln!(out, "  {}", r.link);
    }
    if i.rows.is_empty() {
        out.push_str("(no finding a simulation can repair)\n");
    }
    for n in &i.not_simulated {
        let _ = writeln!(out, "not simulated ({}): {n}", why_not_simulated(n));
    }
    for n in &i.as_is.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_ib::rate::{Rate, Speed, Width};
    use railyard_sim::routing::RoutingKind;
    use railyard_spec::Overrides;

    fn seed() -> Discovered {
        let spec = railyard_spec::presets::load("seed-leaf-spine").unwrap();
        let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
        let text = railyard_ib::export::ibnetdiscover_text(&f).unwrap();
        railyard_ib::discovery::parse(&text).unwrap()
    }

    fn furnished(d: &Discovered) -> (Fabric, ClusterSpec) {
        let imported = railyard_ib::import::to_fabric(d, "as-built").unwrap();
        let o = Overrides {
            gpu: Some("A100".into()),
            gpus_per_server: Some(8),
            ..Default::default()
        };
        let spec = crate::discovered::server_spec(&imported, None, &o).unwrap();
        (furnish(imported, &spec, &Catalog::builtin()).unwrap(), spec)
    }

    /// The ring all-reduce's step at 1 GiB: its slowest edge's bandwidth, GB/s.
    fn ring_edge_gbs(f: &Fabric) -> f64 {
        use railyard_sim::collective::{AlgoChoice, CollectiveConfig, Relay};
        use railyard_sim::fabric_net::NetConfig;
        use railyard_sim::routing::RoutingConfig;
        let cfg = CollectiveConfig {
            algo: AlgoChoice::Ring,
            relay: Relay::auto(f),
            ..CollectiveConfig::new(railyard_sim::nccl::Collective::AllReduce)
        };
        let routes =
            crate::collective::RouteSource::Policy(RoutingKind::DModK, RoutingConfig::default());
        let run = crate::collective::sweep(
            f,
            &Catalog::builtin(),
            &NetConfig::default(),
            routes,
            &cfg,
            &[1 << 30],
            &mut |_| {},
        )
        .unwrap();
        run.sweep.models[0].edge_gbs()
    }

    /// One leaf-spine cable of the seed leaf-spine (80 uplinks of 4xHDR) comes up at 1xHDR: a
    /// quarter of its rate, 150 Gb/s of the leaves' 16,000 (0.94%). By hand: D-mod-K routes one
    /// ring flow over it, alone, so that flow runs at a quarter of its peers' rate and the ring,
    /// which waits for its slowest flow, at a quarter of its repaired pace; the busbw loss at 1 GiB
    /// is 75% less what the (unchanged) latency hides. Simulated: the ring's slowest edge runs at
    /// exactly a quarter, and all-reduce loses 70-75%, eighty times the link's share.
    #[test]
    fn one_slow_uplink_costs_its_lost_rate_not_its_share() {
        let mut d = seed();
        let k = d
            .links
            .iter()
            .position(|l| {
                let (a, b) = (&d.nodes[l.a.0].desc, &d.nodes[l.b.0].desc);
                (a == "leaf01" && b == "spine01") || (a == "spine01" && b == "leaf01")
            })
            .unwrap();
        d.links[k].rate = Some(Rate {
            width: Width::X1,
            speed: Speed::Hdr,
        });
        let h = railyard_ib::health::check(&d);
        assert_eq!(h.findings.len(), 1, "{:?}", h.findings);
        let f = &h.findings[0];
        assert_eq!(f.kind, railyard_ib::health::Kind::SlowLink);
        let (a, b) = &f.ends[0];
        assert_eq!((a.device.as_str(), a.port), ("leaf01", 21));
        let b = b.as_ref().unwrap();
        assert_eq!((b.device.as_str(), b.port), ("spine01", 1));
        assert!(a.guid.is_some() && b.guid.is_some());

        let (slow, spec) = furnished(&d);
        let (fixed, _) = furnished(&repaired(&d, &f.repair));
        let (e_slow, e_fixed) = (ring_edge_gbs(&slow), ring_edge_gbs(&fixed));
        assert!(
            (e_slow / e_fixed - 0.25).abs() < 1e-9,
            "{e_slow} vs {e_fixed}"
        );

        let req = PerfRequest {
            busbw: true,
            model: None,
            routing: RoutingKind::DModK,
            relay: None,
            sharp: false,
            costs: Default::default(),
            capex: None,
            step: Default::default(),
            calibration: Default::default(),
            sim: Default::default(),
        };
        let i = impact(&d, &h, "as-built", &spec, &Catalog::builtin(), &req).unwrap();
        assert_eq!(i.rows.len(), 1);
        let loss = i.rows[0].allreduce_loss_pct.unwrap();
        let share = 150.0 / 16_000.0 * 100.0;
        assert!((70.0..=75.0).contains(&loss), "all-reduce loss {loss}%");
        assert!(loss > 50.0 * share, "{loss}% vs the link's share {share}%");
        assert!(i.rows[0].alltoall_loss_pct.unwrap() > 50.0 * share);
        let text = impact_text(&i, "dmodk");
        assert!(
            text.contains("slow-link") && text.contains("\"leaf01\"[21] - \"spine01\"[1]"),
            "{text}"
        );
    }
}
