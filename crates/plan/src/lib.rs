//! The plan: what to buy and how to wire it, read off a built [`Fabric`].
//!
//! [`Plan::new`] counts switches, links, cables, transceivers, power and cost; [`output`] renders the
//! plan as the files `railyard plan --out DIR` writes (`bom.csv`, `cabling.csv`, `summary.json`,
//! `fabric.json`) and as the readable summary. Everything here is a pure function of the fabric and the
//! catalog: no I/O, and every map that reaches output is ordered.

mod count;
pub mod output;
mod summary;

pub use railyard_fabric::layout::CageCables;
pub use summary::{
    BomLine, CableCount, Cost, Links, ManagementSummary, NetworkSummary, Oversubscription, Power,
    Summary, Switches,
};

use railyard_catalog::Catalog;
use railyard_fabric::networks::{Network, NetworkKind};
use railyard_fabric::{layout, BuildError, Fabric, SearchOptions};
use railyard_spec::ClusterSpec;

/// The plan of a fabric.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub summary: Summary,
    pub bom: Vec<BomLine>,
}

impl Plan {
    /// Counts and prices the fabric against the catalog it was built with.
    pub fn new(f: &Fabric, catalog: &Catalog) -> Plan {
        let (switches, nics, storage_nics) = count::devices(f);
        let count::Cables {
            links,
            cables_by_type,
            cables,
        } = count::cables(f, catalog);
        let gpus = f.servers.len() as u64 * u64::from(f.meta.gpus_per_server);
        let (bom, cost, power) = count::bill(f, catalog, gpus);
        let link_gbps = f.network_links().map(|(_, l)| l.gbps).next().unwrap_or(0.0);
        let m = &f.meta;
        let (oversubscription, leaf_links) = count::oversubscription(f);
        let summary = Summary {
            name: m.name.clone(),
            overrides: Vec::new(),
            tech: m.tech.to_string(),
            topology: m.topology.clone(),
            gpu_model: m.gpu_model.clone(),
            nic_model: m.nic_model.clone(),
            switch_model: m.switch_model.clone(),
            port_mode: m.port_mode.clone(),
            link_gbps,
            servers: f.servers.len() as u64,
            gpus,
            nics,
            storage_nics,
            storage_on_compute: false,
            nic_gpu_ratio: count::nic_gpu_ratio(m),
            gpudirect: m.gpudirect,
            tiers: m.tiers,
            planes: m.planes,
            su_size: m.su_size,
            scalable_units: m.scalable_units,
            oversubscription,
            oversubscription_requested: m.oversubscription_requested,
            leaf_links,
            bisection_gbps: f.bisection_gbps(|_| true),
            shared_cage_cables: layout::shared_cage_cables(f, catalog),
            worst_case_switch_hops: count::worst_case_hops(f),
            switches,
            links,
            cables_by_type,
            cables,
            transceivers: count::transceivers(f),
            power_w: power,
            cost_usd: cost,
            design: None,
            storage: None,
            management: None,
            racks: None,
        };
        Plan { summary, bom }
    }
}

/// A spec's design searched, built and planned: the compute fabric and its plan (with how the design
/// was chosen), and the storage and management networks with theirs.
#[derive(Debug)]
pub struct Planned {
    pub fabric: Fabric,
    pub plan: Plan,
    /// The storage and management networks, each with its own plan (bill of materials, cabling).
    pub networks: Vec<(Network, Plan)>,
}

/// Searches the spec's design, builds it and plans it with its storage and management networks.
pub fn plan_design(
    spec: &ClusterSpec,
    catalog: &Catalog,
    opts: &SearchOptions,
) -> Result<Planned, BuildError> {
    let d = railyard_fabric::design(spec, catalog, opts)?;
    let mut plan = Plan::new(&d.fabric, catalog);
    plan.summary.design = Some(d.report);
    plan.summary.name = spec.title();
    plan.summary.overrides = spec.overrides.clone();
    plan.summary.storage_on_compute = spec.storage.on_compute;
    plan.summary.racks = Some(layout::Racks::of(&d.fabric, spec, catalog));
    let networks: Vec<(Network, Plan)> = railyard_fabric::networks::plan(spec, catalog, &d.fabric)?
        .into_iter()
        .map(|n| {
            let p = Plan::new(&n.fabric, catalog);
            (n, p)
        })
        .collect();
    // A storage or management network's cost per GPU is per GPU of the cluster: its own fabric
    // holds no servers (summary.json had `per_gpu` 0 for them).
    let gpus = d.fabric.servers.len() as u64 * u64::from(d.fabric.meta.gpus_per_server);
    let summary_of = |kind: NetworkKind| {
        networks.iter().find(|(n, _)| n.kind == kind).map(|(n, p)| {
            let mut s = NetworkSummary::of(n, &p.summary);
            if gpus > 0 {
                s.cost_usd.per_gpu = s.cost_usd.total / gpus as f64;
            }
            s
        })
    };
    plan.summary.storage = summary_of(NetworkKind::Storage);
    let (in_band, out_of_band) = (
        summary_of(NetworkKind::InBand),
        summary_of(NetworkKind::OutOfBand),
    );
    if in_band.is_some() || out_of_band.is_some() {
        let parts = [&in_band, &out_of_band];
        plan.summary.management = Some(ManagementSummary {
            cost_usd: parts
                .iter()
                .flat_map(|p| p.iter())
                .map(|n| n.cost_usd.total)
                .sum(),
            power_w: parts
                .iter()
                .flat_map(|p| p.iter())
                .map(|n| n.power_w.total)
                .sum(),
            includes_estimates: parts
                .iter()
                .flat_map(|p| p.iter())
                .any(|n| n.cost_usd.includes_estimates),
            in_band,
            out_of_band,
        });
    }
    Ok(Planned {
        fabric: d.fabric,
        plan,
        networks,
    })
}

#[cfg(test)]
mod tests;
