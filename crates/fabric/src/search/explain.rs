//! The design report assembled from a finished search: the switch comparison, the choices in
//! words and the alternatives.

use super::choices::{choices, Prose, Switches};
use super::compare::{alternative, switch_costs};
use super::report::DesignReport;
use super::space::Space;
use railyard_spec::ClusterSpec;

/// How the search costed its designs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Costing {
    /// Factor on typical cable costs, from the first design built.
    pub(super) calibration: f64,
    /// Designs built.
    pub(super) built: u32,
    /// Of them, built only to cost the alternatives asked for.
    pub(super) for_alternatives: u32,
    /// No design left unbuilt could cost less than the chosen one.
    pub(super) complete: bool,
    /// A cheaper design built and passed over: links share cages the catalog has no part for.
    pub(super) passed_over: Option<usize>,
    /// Switch models left out of the comparison because the catalog has no part for their cages
    /// at this technology (`cage_parts`), the chosen design being one that can be ordered.
    pub(super) partless: bool,
}

/// How the design `chosen` was chosen, with `alternatives` (indexes into the candidates) listed.
pub(super) fn report(
    spec: &ClusterSpec,
    sp: &Space,
    chosen: usize,
    alternatives: &[usize],
    costing: Costing,
    failed: &[bool],
) -> DesignReport {
    let Costing {
        calibration,
        built,
        for_alternatives,
        complete,
        passed_over,
        partless,
    } = costing;
    let gbps = sp.base.gbps;
    let c = &sp.candidates[chosen];
    let cost = c.cost(calibration);
    let (switches, shape_of) = switch_costs(sp, c, calibration, failed);
    let prose = Prose {
        spec,
        sp,
        c,
        cost,
        calibration,
    };
    let choices = choices(
        &prose,
        &Switches {
            costs: &switches,
            shape_of: &shape_of,
            passed_over,
            partless,
        },
    );
    let alternatives = alternatives
        .iter()
        .map(|&i| alternative(&sp.candidates[i], c, cost, calibration, gbps))
        .collect();
    DesignReport {
        candidates: sp.candidates.len() as u64,
        costed_exactly: built,
        costed_for_alternatives: for_alternatives,
        complete,
        cost_usd: cost,
        choices,
        switches,
        alternatives,
        leaf_ports: (c.shape.leaf_up > 0).then_some((c.shape.leaf_down, c.shape.leaf_up)),
    }
}
