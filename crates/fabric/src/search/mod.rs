//! The design search: what an architect would build for a request.
//!
//! A request fixes the servers, their NICs, the technology and link speed, the topology and the
//! largest leaf down:up ratio it accepts. Everything else is a choice: the switch model and port mode,
//! the leaf port split (how many ports face hosts, how many face up), the scalable-unit size, how many
//! spines and cores and how they are grouped, and the number of tiers. Values the user gives stay
//! fixed; values a preset gives (a published reference design's choices) are kept by the plan, and
//! the alternatives also show designs that do not keep them.
//!
//! Method, in three steps:
//! 1. **Enumerate** every valid shape of every catalog switch that carries the request
//!    ([`crate::topo::Shape`]): every leaf size and unit size, every tier balanced, within the radix, every
//!    full leaf at most the requested ratio, the spine tier non-blocking. Dominated shapes are
//!    skipped as they are generated (for one leaf size, more uplinks only pay off if they need fewer
//!    spines; more spine uplinks only if they need fewer cores), and the fewest tiers that hold the
//!    leaves are used (a third tier only adds switches and cables to a tree that two tiers hold).
//! 2. **Count and bound** each with the one counting model, [`crate::topo::counts`]: switches and NICs at
//!    their catalog prices; cables and optics estimated at typical runs of the hall
//!    ([`CableCtx::typical_link_costs`](crate::layout::CableCtx::typical_link_costs), to rank) and bounded below by the shortest runs the hall
//!    allows ([`MediaFloor`](crate::layout::MediaFloor), a floor no built design goes under). A switch whose cables cannot reach
//!    the servers in any design is dropped here, before anything is built.
//! 3. **Cost exactly, branch and bound**: the best-ranked designs are built and priced from their
//!    parts ([`bom::cost`](crate::bom::cost), the plan's own bill of materials) while any design's floor is below the
//!    best exact cost. Before a design is built its floor is tightened to every link at its own run
//!    ([`MediaFloor::runs`](crate::layout::MediaFloor::runs): the same hall [`crate::layout::place`] uses), which is the exact cost but
//!    for shared transceiver cages, so most designs stop there and few are built. The chosen design
//!    is then the cheapest of all, to the cent ([`DesignReport::complete`]), unless a budget of links
//!    to build runs out first (the 131,072-GPU design is built once).
//!
//! Ties go to fewer switches, then more bisection bandwidth, then the larger scalable unit and the
//! order of enumeration, so the same request gives the same design.
//!
//! The module's rooms: `shapes` and `conventional` enumerate (step 1), `space` counts and bounds
//! (step 2), `bound` builds and costs (step 3); `explain` turns the finished search into the
//! [`DesignReport`] (`report`: its types; `choices`: each choice in words; `compare`: the other
//! designs against the chosen one); `no_design` says why there is none.

mod bound;
mod choices;
mod compare;
mod conventional;
mod explain;
mod no_design;
mod report;
mod shapes;
mod space;

pub use crate::text::{plural, thousands};
pub use report::{AltLinks, AltRatios, AltSwitches, Alternative, Choice, DesignReport, SwitchCost};
pub(crate) use shapes::tree_uppers;

use crate::build::build_resolved;
use crate::error::BuildError;
use crate::graph::Fabric;
use crate::hardware::Resolved;
use bound::{choose, Chosen};
use explain::{report, Costing};
use no_design::no_design;
use railyard_catalog::Catalog;
use railyard_spec::ClusterSpec;
use space::{cmp_keys, space};

/// How much the search reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchOptions {
    /// Alternatives to report besides the chosen design.
    pub alternatives: usize,
}

/// The searched design, built, with the report of how it was chosen.
#[derive(Debug)]
pub struct Designed<'a> {
    pub fabric: Fabric,
    pub resolved: Resolved<'a>,
    pub report: DesignReport,
}

/// The design the counting model ranks first among those that keep the preset's choices, without
/// building anything (the search's first step; [`design`] and [`build`] then cost the best few
/// exactly).
pub fn resolve<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
) -> Result<Resolved<'a>, BuildError> {
    let sp = space(spec, catalog)?;
    let gbps = sp.base.gbps;
    let best = sp
        .candidates
        .iter()
        .filter(|c| c.keeps_preset)
        .min_by(|a, b| cmp_keys(a.key(1.0, gbps), b.key(1.0, gbps)))
        .or(sp.out_of_reach.as_ref())
        .ok_or_else(|| no_design(spec, &sp))?;
    Ok(Resolved::new(
        &sp.base,
        best.option.switch,
        best.option.mode,
        best.shape,
    ))
}

/// Builds the whole fabric of the searched design: servers, switches, links, cable lengths, cables
/// and transceivers. [`design`] does the same and also reports the choices and alternatives.
pub fn build(spec: &ClusterSpec, catalog: &Catalog) -> Result<Fabric, BuildError> {
    design(spec, catalog, &SearchOptions::default()).map(|d| d.fabric)
}

/// Searches the designs of a spec, builds the cheapest that keeps the preset's choices, and reports
/// how it was chosen and the next designs.
pub fn design<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
    opts: &SearchOptions,
) -> Result<Designed<'a>, BuildError> {
    let mut sp = space(spec, catalog)?;
    if !sp.candidates.iter().any(|c| c.keeps_preset) {
        // No cable reaches some run of any design left: building the best of them says which.
        if let Some(c) = &sp.out_of_reach {
            let r = Resolved::new(&sp.base, c.option.switch, c.option.mode, c.shape);
            build_resolved(&r)?;
        }
        return Err(no_design(spec, &sp));
    }
    // The chosen design: build the best-ranked designs that keep the preset's choices.
    let mut chosen = choose(&mut sp, spec, catalog)?;
    chosen.cost_switch_bests(&mut sp, spec, catalog);
    let built_to_choose = chosen.budget.built;
    let alternatives = chosen.cost_alternatives(&mut sp, catalog, opts.alternatives);
    let Chosen {
        index,
        fabric,
        calibration,
        failed,
        budget,
        complete,
        passed_over,
        partless,
    } = chosen;
    let c = &sp.candidates[index];
    let resolved = Resolved::new(&sp.base, c.option.switch, c.option.mode, c.shape);
    let report = report(
        spec,
        &sp,
        index,
        &alternatives,
        Costing {
            calibration,
            built: budget.built,
            for_alternatives: budget.built - built_to_choose,
            passed_over,
            partless,
            complete,
        },
        &failed,
    );
    Ok(Designed {
        fabric,
        resolved,
        report,
    })
}
