//! Branch and bound on the exact cost: which design to build next (the best-ranked whose floor
//! could still beat the best built), the budget of links to build, the chosen design
//! ([`choose`]), the best design of each switch model and the alternatives costed exactly.

use super::no_design::no_design;
use super::space::{cmp_keys, Candidate, Space};
use crate::bom;
use crate::build::build_resolved;
use crate::error::BuildError;
use crate::graph::Fabric;
use crate::hardware::{Resolved, SwitchOption};
use crate::layout;
use railyard_catalog::{Catalog, Tech};
use railyard_spec::ClusterSpec;

/// Network links the search may build to cost designs exactly, beyond the first design (which is
/// always built): a few designs of tens of thousands of links, and no second build of the
/// 131,072-GPU design (397,184 links).
const EXACT_BUDGET_LINKS: u64 = 1 << 18;

/// What searching for the chosen design left: the design, built, and what costing the switch
/// choice and the alternatives still uses.
pub(super) struct Chosen {
    /// The chosen candidate.
    pub index: usize,
    pub fabric: Fabric,
    /// Factor on typical cable costs, from the first design built.
    pub calibration: f64,
    /// Candidates not to build or name: those that failed, and (where the chosen design can be
    /// ordered) those whose cables cannot be.
    pub failed: Vec<bool>,
    pub budget: ExactBudget,
    /// No design left unbuilt could cost less than the chosen one.
    pub complete: bool,
    /// A cheaper design built and passed over: links share cages the catalog has no part for.
    pub passed_over: Option<usize>,
    /// Switch models left out of the comparison for want of cage parts (`cage_parts`).
    pub partless: bool,
}

/// Branch and bound for the chosen design among those that keep the preset's choices, while the
/// budget of links to build lasts.
struct Round {
    calibration: f64,
    spent: u64,
    built: u32,
    best: Option<(usize, Fabric)>,
    /// The best design built whose cables cannot be ordered (links sharing a cage the catalog has
    /// no part for: `layout::shared_cage_cables`): chosen only when no other design is.
    unorderable: Option<(usize, Fabric)>,
    /// Every design built whose cables cannot be ordered: alternatives to one another when no
    /// design that can be ordered was found.
    unorderable_built: Vec<usize>,
    first_error: Option<BuildError>,
    failed: Vec<bool>,
    exhausted: bool,
    /// The first design found out of reach of every cable when counted link by link.
    unreached: Option<usize>,
}

/// Searches the chosen design: builds the best-ranked designs that keep the preset's choices
/// while one could beat the best built (its floor below that one's cost). The error of the first
/// design that failed to build, or why none exists, when none was built.
pub(super) fn choose(
    sp: &mut Space,
    spec: &ClusterSpec,
    catalog: &Catalog,
) -> Result<Chosen, BuildError> {
    let mut round = Round {
        calibration: 1.0,
        spent: 0,
        built: 0,
        best: None,
        unorderable: None,
        unorderable_built: Vec::new(),
        first_error: None,
        failed: vec![false; sp.candidates.len()],
        exhausted: false,
        unreached: None,
    };
    round.run(sp, spec, catalog);
    round.finish(sp, spec, catalog)
}

impl Round {
    fn run(&mut self, sp: &mut Space, spec: &ClusterSpec, catalog: &Catalog) {
        let gbps = sp.base.gbps;
        loop {
            // Branch and bound: the best-ranked design not built yet whose floor could still beat
            // the best built one (cost, then fewer switches, more bisection, order).
            let best_key = self
                .best
                .as_ref()
                .map(|(b, _)| sp.candidates[*b].key(self.calibration, gbps));
            let next = next_to_build(sp, self.calibration, &self.failed, best_key, |c| {
                c.keeps_preset
            });
            let Some(i) = next else { break };
            if !sp.candidates[i].refined {
                // Count every link at its own run before building: most designs stop here.
                if !refine(sp, i, spec) {
                    self.failed[i] = true;
                    self.unreached.get_or_insert(i);
                }
                continue;
            }
            if (self.best.is_some() || self.unorderable.is_some())
                && self.spent + sp.candidates[i].counts.network_links() > EXACT_BUDGET_LINKS
            {
                self.exhausted = true;
                break;
            }
            match build_candidate(sp, i) {
                Ok(f) => self.record(sp, i, f, catalog),
                Err(e) => {
                    self.failed[i] = true;
                    self.first_error.get_or_insert(e);
                }
            }
        }
    }

    /// Costs built design `i` exactly (the first one built calibrates the estimates) and keeps it
    /// if it beats the best of its kind: designs that can be ordered, or those that cannot.
    fn record(&mut self, sp: &mut Space, i: usize, f: Fabric, catalog: &Catalog) {
        let gbps = sp.base.gbps;
        let cost = bom::cost(&f, catalog);
        self.spent += sp.candidates[i].counts.network_links();
        self.built += 1;
        let c = &mut sp.candidates[i];
        debug_assert!(
            c.floor <= cost + 1e-6,
            "floor {} above the exact cost {cost} of {:?}",
            c.floor,
            c.shape
        );
        c.exact = Some(cost);
        if self.built == 1 && c.media > 0.0 {
            self.calibration = ((cost - c.hardware) / c.media).clamp(0.2, 5.0);
        }
        let calibration = self.calibration;
        // A design whose cables cannot be ordered competes only with its like.
        let slot = if layout::shared_cage_cables(&f, catalog).is_some() {
            self.failed[i] = true;
            self.unorderable_built.push(i);
            &mut self.unorderable
        } else {
            &mut self.best
        };
        let better = slot.as_ref().is_none_or(|(b, _)| {
            cmp_keys(
                sp.candidates[i].key(calibration, gbps),
                sp.candidates[*b].key(calibration, gbps),
            )
            .is_lt()
        });
        if better {
            *slot = Some((i, f));
        }
    }

    /// The chosen design: the best that can be ordered, else the best built; and what the switch
    /// choice and the alternatives may name.
    fn finish(
        self,
        sp: &Space,
        spec: &ClusterSpec,
        catalog: &Catalog,
    ) -> Result<Chosen, BuildError> {
        let Round {
            calibration,
            spent,
            built,
            best,
            unorderable,
            unorderable_built,
            first_error,
            mut failed,
            exhausted,
            unreached,
        } = self;
        // A cheaper design passed over for cables that cannot be ordered, named in the report.
        let cost_of = |i: usize| sp.candidates[i].cost(calibration);
        let passed_over = match (&best, &unorderable) {
            (Some((b, _)), Some((u, _))) if cost_of(*u) < cost_of(*b) => Some(*u),
            _ => None,
        };
        if best.is_none() {
            // None can be ordered: those built compete with one another, in the switch choice and
            // as alternatives (QM8700's HDR100 designs went unnamed beside QM8790's).
            for &u in &unorderable_built {
                failed[u] = false;
            }
        }
        let orderable_only = best.is_some();
        let Some((index, fabric)) = best.or(unorderable) else {
            if let (None, Some(i)) = (&first_error, unreached) {
                // Building it says which run no cable reaches.
                build_candidate(sp, i)?;
            }
            return Err(first_error.unwrap_or_else(|| no_design(spec, sp)));
        };
        // Where the chosen design can be ordered, no alternative or switch comparison names one
        // that cannot: designs on switch modes the catalog has no cage part for are all such.
        let tech = spec.fabric.tech;
        let partless = orderable_only && sp.options.iter().any(|o| !cage_parts(o, catalog, tech));
        if orderable_only {
            for (i, c) in sp.candidates.iter().enumerate() {
                if !cage_parts(&sp.options[c.option_index], catalog, tech) {
                    failed[i] = true;
                }
            }
        }
        Ok(Chosen {
            index,
            fabric,
            calibration,
            failed,
            budget: ExactBudget {
                spent,
                built,
                orderable_only,
            },
            complete: !exhausted,
            passed_over,
            partless,
        })
    }
}

impl Chosen {
    /// The best design of every switch model, named in the switch choice: costed exactly while
    /// the budget lasts, so the choice quotes the price --alternatives lists, not an estimate.
    /// Branch and bound as for the chosen design, within one switch model.
    pub fn cost_switch_bests(&mut self, sp: &mut Space, spec: &ClusterSpec, catalog: &Catalog) {
        let (calibration, gbps) = (self.calibration, sp.base.gbps);
        for oi in 0..sp.options.len() {
            loop {
                let bound = best_exact_of_option(sp, oi, calibration, &self.failed)
                    .map(|b| sp.candidates[b].key(calibration, gbps));
                let next = next_to_build(sp, calibration, &self.failed, bound, |c| {
                    c.option_index == oi
                });
                let Some(i) = next else { break };
                if !sp.candidates[i].refined {
                    if !refine(sp, i, spec) {
                        self.failed[i] = true;
                    }
                    continue;
                }
                if !self.budget.cost(sp, i, catalog, &mut self.failed) {
                    break;
                }
            }
        }
    }

    /// The alternatives to report (`n` of them, [`alternative_indexes`]), the next few costed
    /// exactly while the budget lasts.
    pub fn cost_alternatives(&mut self, sp: &mut Space, catalog: &Catalog, n: usize) -> Vec<usize> {
        let calibration = self.calibration;
        let mut alternatives = alternative_indexes(sp, self.index, n, calibration, &self.failed);
        for _ in 0..2 {
            let mut changed = false;
            for &i in &alternatives {
                if sp.candidates[i].exact.is_none()
                    && self.budget.cost(sp, i, catalog, &mut self.failed)
                {
                    changed = true;
                }
            }
            if !changed {
                break;
            }
            alternatives = alternative_indexes(sp, self.index, n, calibration, &self.failed);
        }
        alternatives
    }
}

/// Branch and bound's next design to build among those `wanted` takes: the best-ranked not built
/// (nor failed) whose floor could still beat `bound`, the best built so far.
fn next_to_build(
    sp: &Space,
    calibration: f64,
    failed: &[bool],
    bound: Option<(f64, u64, f64, usize)>,
    wanted: impl Fn(&Candidate) -> bool,
) -> Option<usize> {
    let gbps = sp.base.gbps;
    sp.candidates
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            wanted(c)
                && c.exact.is_none()
                && !failed[*i]
                && bound.is_none_or(|b| cmp_keys(c.floor_key(gbps), b).is_lt())
        })
        .min_by(|a, b| cmp_keys(a.1.key(calibration, gbps), b.1.key(calibration, gbps)))
        .map(|(i, _)| i)
}

/// The links built to cost designs exactly after the chosen one, and the designs built.
pub(super) struct ExactBudget {
    pub(super) spent: u64,
    pub(super) built: u32,
    /// The chosen design can be ordered: one whose cables cannot be is no alternative to it.
    pub(super) orderable_only: bool,
}

impl ExactBudget {
    /// Builds design `i` and costs it exactly if [`EXACT_BUDGET_LINKS`] allows; a design that does
    /// not build, or (when the chosen design can be ordered) whose cables cannot be
    /// (`layout::shared_cage_cables`), is marked failed. False when the budget does not allow it.
    pub(super) fn cost(
        &mut self,
        sp: &mut Space,
        i: usize,
        catalog: &Catalog,
        failed: &mut [bool],
    ) -> bool {
        let links = sp.candidates[i].counts.network_links();
        if self.spent + links > EXACT_BUDGET_LINKS {
            return false;
        }
        self.spent += links;
        match build_candidate(sp, i) {
            Ok(f) => {
                sp.candidates[i].exact = Some(bom::cost(&f, catalog));
                self.built += 1;
                if self.orderable_only && layout::shared_cage_cables(&f, catalog).is_some() {
                    failed[i] = true;
                }
            }
            Err(_) => failed[i] = true,
        }
        true
    }
}

/// Whether the catalog has any part for a cage of `option`'s switch in its mode: a cage of one
/// port takes any cable; a cage of several needs a cable or transceiver of that many ports for the
/// technology (twin-port, splitter or multi-port module: `layout::CableCtx`). Without one, every
/// link on a shared cage keeps a straight cable that cannot be ordered
/// (`layout::shared_cage_cables`), and every design on the mode has such links.
fn cage_parts(option: &SwitchOption, catalog: &Catalog, tech: Tech) -> bool {
    let ports = option.switch.ports_per_cage(option.mode);
    ports == 1
        || catalog
            .transceivers
            .values()
            .any(|t| t.ports == ports && t.techs.contains(&tech))
        || catalog
            .cables
            .values()
            .any(|c| c.ports == ports && c.carries(tech, option.mode.gbps))
}

/// Tightens design `i`'s floor to every link at its own run ([`MediaFloor::runs`]); false when
/// some run is out of reach of every cable.
fn refine(sp: &mut Space, i: usize, spec: &ClusterSpec) -> bool {
    let c = &mut sp.candidates[i];
    c.refined = true;
    match sp.floors[c.option_index].runs(spec, &c.shape, &c.counts) {
        Some(Ok(media)) => {
            c.floor = c.floor.max(c.hardware + media);
            true
        }
        Some(Err(_)) => false,
        None => true,
    }
}

/// The best design (by [`Candidate::key`]) of switch option `oi` not failed: the best costed
/// exactly when no design left unbuilt could beat it (its floor), else the best by estimate.
pub(super) fn best_of_option(
    sp: &Space,
    oi: usize,
    calibration: f64,
    failed: &[bool],
) -> Option<usize> {
    let gbps = sp.base.gbps;
    let of_option = || {
        sp.candidates
            .iter()
            .enumerate()
            .filter(move |(i, c)| c.option_index == oi && !failed[*i])
    };
    let by_key = |a: &(usize, &Candidate), b: &(usize, &Candidate)| {
        cmp_keys(a.1.key(calibration, gbps), b.1.key(calibration, gbps))
    };
    if let Some(e) = best_exact_of_option(sp, oi, calibration, failed) {
        let bound = sp.candidates[e].key(calibration, gbps);
        let open = of_option()
            .any(|(_, c)| c.exact.is_none() && cmp_keys(c.floor_key(gbps), bound).is_lt());
        if !open {
            return Some(e);
        }
    }
    of_option().min_by(by_key).map(|(i, _)| i)
}

/// The best design of switch option `oi` costed exactly and not failed.
fn best_exact_of_option(sp: &Space, oi: usize, calibration: f64, failed: &[bool]) -> Option<usize> {
    let gbps = sp.base.gbps;
    sp.candidates
        .iter()
        .enumerate()
        .filter(|(i, c)| c.option_index == oi && c.exact.is_some() && !failed[*i])
        .min_by(|a, b| cmp_keys(a.1.key(calibration, gbps), b.1.key(calibration, gbps)))
        .map(|(i, _)| i)
}

fn build_candidate(sp: &Space, i: usize) -> Result<Fabric, BuildError> {
    let c = &sp.candidates[i];
    build_resolved(&Resolved::new(
        &sp.base,
        c.option.switch,
        c.option.mode,
        c.shape,
    ))
}

/// The alternatives to report: the next `n` distinct designs by cost (preset choices not kept), the
/// conventional design taking the last place if it is not among them.
fn alternative_indexes(
    sp: &Space,
    chosen: usize,
    n: usize,
    calibration: f64,
    failed: &[bool],
) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let gbps = sp.base.gbps;
    let mut order: Vec<usize> = (0..sp.candidates.len())
        .filter(|&i| i != chosen && !failed[i])
        .collect();
    order.sort_by(|&a, &b| {
        cmp_keys(
            sp.candidates[a].key(calibration, gbps),
            sp.candidates[b].key(calibration, gbps),
        )
    });
    let mut out: Vec<usize> = Vec::new();
    for i in order {
        let c = &sp.candidates[i];
        if c.same_design(&sp.candidates[chosen])
            || out.iter().any(|&j| sp.candidates[j].same_design(c))
        {
            continue;
        }
        out.push(i);
        if out.len() == n {
            break;
        }
    }
    let conventional = (0..sp.candidates.len()).find(|&i| {
        let c = &sp.candidates[i];
        c.conventional && c.keeps_preset && !failed[i]
    });
    if let Some(conv) = conventional {
        let present = conv == chosen
            || sp.candidates[conv].same_design(&sp.candidates[chosen])
            || out
                .iter()
                .any(|&j| sp.candidates[j].same_design(&sp.candidates[conv]));
        if !present {
            if out.len() == n {
                out.pop();
            }
            out.push(conv);
        }
    }
    out
}
