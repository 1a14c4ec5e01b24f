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

/// One finding's cost: performance with that fault alone (every other finding repaired), on the
/// healthy fabric (every finding repaired), and the loss in % of the healthy; the `all` row has
/// every fault at once, the fabric as discovered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImpactRow {
    /// The finding's kind, or `all` for every fault at once.
    pub finding: String,
    /// The first link it concerns (`"a"[3] - "b"[5]`).
    pub link: String,
    /// The healthy fabric: every finding a simulation can repair repaired ([`Impact::healthy`]).
    pub repaired: Perf,
    /// The healthy fabric with this fault alone (in the `all` row, the fabric as discovered).
    pub with_fault: Perf,
    pub allreduce_loss_pct: Option<f64>,
    pub alltoall_loss_pct: Option<f64>,
    /// Training throughput (tokens/s) lost.
    pub tokens_loss_pct: Option<f64>,
}

/// The cost of every finding that a simulation can repair, each priced against the healthy fabric
/// alone and all of them together. Nothing is simulated when no finding can be priced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Impact {
    /// The fabric as discovered (`None`: nothing to price, not simulated).
    pub as_is: Option<Perf>,
    /// The fabric with every finding a simulation can repair repaired: what each loss is of
    /// (`None`: nothing to price).
    pub healthy: Option<Perf>,
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

/// Prices each of `health`'s repairable findings against the healthy fabric (`d` with every one
/// repaired): the healthy fabric with that fault alone, then with all of them (`d` as discovered,
/// when there are several), its servers furnished as `spec` describes. A loss priced against the
/// fabric as discovered would measure one fault against a baseline other faults already hold
/// back. Without a finding to price, nothing is simulated.
pub fn impact(
    d: &Discovered,
    health: &Health,
    name: &str,
    spec: &ClusterSpec,
    catalog: &Catalog,
    req: &PerfRequest<'_>,
) -> Result<Impact, ImpactError> {
    let (priced, unpriced): (Vec<&Finding>, Vec<&Finding>) =
        health.findings.iter().partition(|f| !f.repair.is_empty());
    let not_simulated = unpriced
        .iter()
        .map(|f| format!("{}: {}", f.kind.as_str(), f.what))
        .collect();
    if priced.is_empty() {
        return Ok(Impact {
            as_is: None,
            healthy: None,
            rows: Vec::new(),
            not_simulated,
        });
    }
    let repairs = |skip: Option<usize>| -> Vec<Repair> {
        priced
            .iter()
            .enumerate()
            .filter(|&(k, _)| Some(k) != skip)
            .flat_map(|(_, f)| f.repair.iter().cloned())
            .collect()
    };
    let healthy = simulate(&repaired(d, &repairs(None)), name, spec, catalog, req)?;
    let as_is = simulate(d, name, spec, catalog, req)?;
    let row = |finding: String, link: String, p: Perf| ImpactRow {
        allreduce_loss_pct: loss_pct(p.allreduce_busbw_1g_gbs, healthy.allreduce_busbw_1g_gbs),
        alltoall_loss_pct: loss_pct(p.alltoall_busbw_1g_gbs, healthy.alltoall_busbw_1g_gbs),
        tokens_loss_pct: loss_pct(p.tokens_per_s, healthy.tokens_per_s),
        finding,
        link,
        repaired: healthy.clone(),
        with_fault: p,
    };
    let mut rows = Vec::new();
    for (k, f) in priced.iter().enumerate() {
        // One fault alone is the fabric as discovered.
        let alone = if priced.len() == 1 {
            as_is.clone()
        } else {
            simulate(&repaired(d, &repairs(Some(k))), name, spec, catalog, req)?
        };
        rows.push(row(f.kind.as_str().to_string(), link_of(f), alone));
    }
    if priced.len() > 1 {
        rows.push(row("all".to_string(), String::new(), as_is.clone()));
    }
    Ok(Impact {
        as_is: Some(as_is),
        healthy: Some(healthy),
        rows,
        not_simulated,
    })
}

/// The impact as a table: one row per finding, busbw in GB/s.
pub fn impact_text(i: &Impact, routing: &str) -> String {
    let num = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}%"));
    let mut out = String::new();
    let Some(healthy) = &i.healthy else {
        out.push_str(
            "impact: nothing to price (no finding a simulation can repair), nothing simulated\n",
        );
        for n in &i.not_simulated {
            let _ = writeln!(out, "not simulated ({}): {n}", why_not_simulated(n));
        }
        return out;
    };
    let _ = writeln!(
        out,
        "impact at 1 GiB, routing {routing}: busbw in GB/s with the fault (alone; all: every fault, as discovered), healthy (every finding repaired), and the loss"
    );
    let step = healthy.tokens_per_s.is_some();
    let _ = write!(
        out,
        "{:<16} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}",
        "finding", "allreduce", "healthy", "loss", "alltoall", "healthy", "loss"
    );
    if step {
        let _ = write!(out, " {:>10} {:>10} {:>7}", "tokens/s", "healthy", "loss");
    }
    out.push_str("  link\n");
    for r in &i.rows {
        let _ = write!(
            out,
            "{:<16} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}",
            r.finding,
            num(r.with_fault.allreduce_busbw_1g_gbs),
            num(r.repaired.allreduce_busbw_1g_gbs),
            pct(r.allreduce_loss_pct),
            num(r.with_fault.alltoall_busbw_1g_gbs),
            num(r.repaired.alltoall_busbw_1g_gbs),
            pct(r.alltoall_loss_pct)
        );
        if step {
            let _ = write!(
                out,
                " {:>10} {:>10} {:>7}",
                num(r.with_fault.tokens_per_s),
                num(r.repaired.tokens_per_s),
                pct(r.tokens_loss_pct)
            );
        }
        let _ = writeln!(out, "  {}", r.link);
    }
    for n in &i.not_simulated {
        let _ = writeln!(out, "not simulated ({}): {n}", why_not_simulated(n));
    }
    for n in &healthy.notes {
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
            relay: Relay::auto(f, &railyard_catalog::Catalog::builtin()),
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

        let req = request();
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

    fn request() -> PerfRequest<'static> {
        PerfRequest {
            busbw: true,
            ..PerfRequest::routed(RoutingKind::DModK)
        }
    }

    /// The index of the link between leaf `leaf` and spine `spine` (first of them).
    fn uplink(d: &Discovered, leaf: &str, spine: &str) -> usize {
        d.links
            .iter()
            .position(|l| {
                let (a, b) = (&d.nodes[l.a.0].desc, &d.nodes[l.b.0].desc);
                (a == leaf && b == spine) || (a == spine && b == leaf)
            })
            .unwrap()
    }

    /// Issue 33: `check --impact` priced a slow uplink against the fabric as discovered, which
    /// other faults already held back: with two uplinks at 1xHDR, repairing one left the ring at
    /// the other's quarter pace, so each was said to cost nothing. Each is now priced alone
    /// against the healthy fabric: the 70-75% one slow uplink costs by itself
    /// ([`one_slow_uplink_costs_its_lost_rate_not_its_share`]), and the `all` row as discovered.
    #[test]
    fn a_slow_uplink_is_priced_against_the_healthy_fabric_not_a_degraded_one() {
        let mut d = seed();
        let quarter = Rate {
            width: Width::X1,
            speed: Speed::Hdr,
        };
        for (leaf, spine) in [("leaf01", "spine01"), ("leaf03", "spine02")] {
            let k = uplink(&d, leaf, spine);
            d.links[k].rate = Some(quarter);
        }
        let h = railyard_ib::health::check(&d);
        assert_eq!(h.findings.len(), 2, "{:?}", h.findings);
        let (_, spec) = furnished(&d);
        let i = impact(&d, &h, "as-built", &spec, &Catalog::builtin(), &request()).unwrap();
        assert_eq!(i.rows.len(), 3);
        let healthy = i.healthy.as_ref().unwrap().allreduce_busbw_1g_gbs.unwrap();
        for r in &i.rows {
            assert_eq!(r.repaired.allreduce_busbw_1g_gbs, Some(healthy));
            let loss = r.allreduce_loss_pct.unwrap();
            assert!((70.0..=75.0).contains(&loss), "{}: {loss}%", r.finding);
        }
        assert_eq!(i.rows[2].with_fault, *i.as_is.as_ref().unwrap());
    }

    /// `d` without node `n` and its links: what a discovery shows when an HCA does not answer.
    fn without_node(d: &Discovered, n: usize) -> Discovered {
        let mut out = d.clone();
        out.nodes.remove(n);
        let at = |x: usize| if x > n { x - 1 } else { x };
        out.links = d
            .links
            .iter()
            .filter(|l| l.a.0 != n && l.b.0 != n)
            .map(|l| railyard_ib::discovery::Link {
                a: (at(l.a.0), l.a.1),
                b: (at(l.b.0), l.b.1),
                ..l.clone()
            })
            .collect();
        out
    }

    /// Issue 33: `check --impact` listed a missing HCA as "not simulated" (0%) while it halves
    /// all-reduce: the server's two GPUs of that NIC's PCIe switch share the other NIC, so the
    /// ring's edge through it runs at half its rate. Now the HCA is put back where its peers'
    /// HCAs say it belongs, at their rate, and the loss priced: by hand 50% of the ring's network
    /// rate, less what the unchanged latency hides, and all-to-all loses too.
    #[test]
    fn a_missing_hca_is_priced_not_listed_as_not_simulated() {
        let full = seed();
        let n = full
            .nodes
            .iter()
            .position(|x| x.desc.ends_with(" hca3") && x.desc.contains("srv0004"))
            .or_else(|| full.nodes.iter().position(|x| x.desc.ends_with(" hca3")))
            .unwrap();
        let d = without_node(&full, n);
        let h = railyard_ib::health::check(&d);
        assert_eq!(h.findings.len(), 1, "{:?}", h.findings);
        let f = &h.findings[0];
        assert_eq!(f.kind, railyard_ib::health::Kind::MissingHca);
        assert_eq!(f.repair.len(), 1);
        // Repaired, the discovery is whole again: the same HCA name, switch port and rate.
        let fixed = repaired(&d, &f.repair);
        assert!(railyard_ib::health::check(&fixed).healthy);
        let (_, spec) = furnished(&full);
        let i = impact(&d, &h, "as-built", &spec, &Catalog::builtin(), &request()).unwrap();
        assert!(i.not_simulated.is_empty(), "{:?}", i.not_simulated);
        assert_eq!(i.rows.len(), 1);
        let r = &i.rows[0];
        assert_eq!(r.finding, "missing-hca");
        let loss = r.allreduce_loss_pct.unwrap();
        assert!((40.0..=50.0).contains(&loss), "all-reduce loss {loss}%");
        assert!(r.alltoall_loss_pct.unwrap() > 0.0);
        // The healthy fabric is the one discovered with nothing missing.
        let (whole, _) = furnished(&full);
        let (back, _) = furnished(&fixed);
        assert_eq!(
            (whole.servers.len(), whole.network_links().count()),
            (back.servers.len(), back.network_links().count())
        );
    }

    /// Issue 33: `check --impact` on a healthy fabric simulated it (46 s at 1,024 servers) to say
    /// there was nothing to repair. Without a finding to price, nothing is simulated.
    #[test]
    fn nothing_to_price_simulates_nothing() {
        let d = seed();
        let h = railyard_ib::health::check(&d);
        assert!(h.healthy);
        let (_, spec) = furnished(&d);
        let i = impact(&d, &h, "as-built", &spec, &Catalog::builtin(), &request()).unwrap();
        assert_eq!((i.as_is.is_none(), i.healthy.is_none()), (true, true));
        assert!(i.rows.is_empty());
        assert!(impact_text(&i, "dmodk").contains("nothing to price"));
    }
}
