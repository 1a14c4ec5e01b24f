//! The flows of one step's phase, solved for their makespan and rates (per flow, by flow class,
//! or folded by symmetry), and the per-link counts of a counted all-to-all.

use crate::cancel::Cancel;
use crate::cancel::Cancelled;
use crate::collective::load;
use crate::collective::merged;
use crate::engine;
use crate::engine::classes;
use crate::engine::classes::Quotient;
use crate::engine::Weight;
use crate::engine::Workload;
use crate::error::SimError;
use crate::net::fabric_net::FabricNet;
use crate::net::symmetry::Symmetry;
use crate::time::Time;
/// The flows of one phase of a step: they all start together.
pub(super) struct StepPhase {
    /// The network's resources and the step's flows; folded (see [`Fold`]): one resource per
    /// resource class and the representative servers' flows.
    pub(super) w: Workload,
    /// Every flow's path (resource indexes of the network), for the bottleneck report.
    pub(super) paths: Vec<u32>,
    pub(super) offsets: Vec<u32>,
    pub(super) latency: Time,
    /// Flows of the whole step the phase's flows stand for.
    pub(super) represented: u64,
    /// The flows counted per resource instead of added to `w` ([`StepBuilder::count_on`]).
    pub(super) counted: Option<Counted>,
    /// Laid out by symmetry: the representatives' flows merged by what they cross, turned into
    /// `w` once the step is laid out ([`merged::Merged`]).
    pub(super) merged: Option<merged::Merged>,
    /// Folded: per resource class, what its widths and capacity were divided by (to keep widths
    /// in range), for the flows per member the bottleneck report names.
    pub(super) divisor: Vec<u64>,
}

/// A phase laid out by counting: how many flows cross each resource of the network, and the
/// smallest and largest flow. A step of flows that all start together is timed from the counts
/// alone ([`engine::first_bottleneck`]): exactly when the flows are equal.
///
/// Unequal flows (adaptive routing splits a transfer over as many sub-flows as it has paths) are
/// bounded from above with a second pass over the same flows once the counts are complete
/// ([`StepBuilder::bound_counted`]): a flow's max-min rate is never below the smallest
/// `capacity / load` on its path (the level at which a resource fills is at least that, and flows
/// leaving only lower the loads), so no flow ends after `bytes / that share`, and the step ends
/// by the latest of these.
pub(super) struct Counted {
    /// Per resource, the flows crossing it, each by its weight (`Routes::weight`).
    pub(super) load: load::Load,
    /// Some flow weighs other than 1: the flows are unequal.
    pub(super) weighted: bool,
    pub(super) min_bytes: u64,
    pub(super) max_bytes: u64,
    /// The counts are complete and flows are being bounded ([`StepBuilder::bound_counted`]).
    pub(super) bounding: bool,
    /// The latest bound of a flow's drain seen while bounding.
    pub(super) bound: Time,
}

impl Counted {
    pub(super) fn equal(&self) -> bool {
        self.min_bytes == self.max_bytes && !self.weighted
    }

    /// The phase's makespan (exact for equal flows, else the bounding pass's bound, or before
    /// it, the largest flow at the first bottleneck's share), and its bottleneck (resource index,
    /// flows on it).
    pub(super) fn makespan(&self, net: &FabricNet<'_>) -> Option<(Time, u32, u32)> {
        let (r, share) = self.load.first_bottleneck(|r| net.capacity(r as u32))?;
        let t = if !self.equal() && self.bounding {
            self.bound
        } else {
            engine::drain_time(self.max_bytes, share)
        };
        Some((t, r as u32, self.load.flows(r).round() as u32))
    }

    /// A flow of `weight` in the bounding pass: it runs at least at `weight` times the smallest
    /// share on its path.
    pub(super) fn bound_flow(
        &mut self,
        net: &FabricNet<'_>,
        path: &[u32],
        bytes: u64,
        weight: Weight,
    ) {
        let share = path
            .iter()
            .map(|&r| self.load.share(r as usize, net.capacity(r)))
            .fold(f64::INFINITY, f64::min);
        if share.is_finite() {
            self.bound = self
                .bound
                .max(engine::drain_time(bytes, share * weight.as_f64()));
        }
    }
}

impl StepPhase {
    pub(super) fn new(
        net: &FabricNet<'_>,
        fold: Option<&Fold<'_>>,
        count: bool,
    ) -> Result<StepPhase, SimError> {
        let counted = count.then(|| Counted {
            load: load::Load::new(net.resources()),
            weighted: false,
            min_bytes: u64::MAX,
            max_bytes: 0,
            bounding: false,
            bound: Time::ZERO,
        });
        let w = match fold {
            None if count => Workload::new(),
            None => net.workload()?,
            // Built from the merged flows once the step is laid out (`fold::materialise`).
            Some(_) => Workload::new(),
        };
        Ok(StepPhase {
            w,
            paths: Vec::new(),
            offsets: vec![0],
            latency: Time::ZERO,
            represented: 0,
            counted,
            merged: fold.map(|f| merged::Merged::new(f.trace)),
            divisor: Vec::new(),
        })
    }

    pub(super) fn makespan(&self) -> Time {
        engine::simulate(&self.w)
            .flows
            .iter()
            .map(|f| f.finish)
            .max()
            .unwrap_or(Time::ZERO)
    }

    /// [`StepPhase::makespan`], stopping once `cancel` is set.
    pub(super) fn makespan_until(&self, cancel: Cancel<'_>) -> Result<Time, Cancelled> {
        Ok(engine::simulate_until(&self.w, cancel)?
            .flows
            .iter()
            .map(|f| f.finish)
            .max()
            .unwrap_or(Time::ZERO))
    }

    /// The phase's quotient by flow classes, when `classes` allows it and it has at most half as
    /// many classes as flows; else `None` (simulate flow by flow).
    pub(super) fn quotient(
        &self,
        classes: bool,
        cancel: Cancel<'_>,
    ) -> Result<Option<Quotient>, Cancelled> {
        if !classes {
            return Ok(None);
        }
        Ok(classes::quotient(&self.w, cancel)?.filter(Quotient::worth_it))
    }

    /// [`StepPhase::quotient`] of a folded phase, always (every flow a class of its own when
    /// colour refinement splits them all), its widths divided down ([`classes::divide_widths`]):
    /// a folded phase's widths count whole server classes.
    pub(super) fn folded_quotient(&self, cancel: Cancel<'_>) -> Result<Quotient, Cancelled> {
        let mut q = match classes::quotient(&self.w, cancel)? {
            Some(q) => q,
            None => Quotient {
                workload: self.w.clone(),
                class_of: (0..self.w.flows() as u32).collect(),
                count: vec![1; self.w.flows()],
            },
        };
        classes::divide_widths(&mut q.workload);
        Ok(q)
    }

    /// The makespan, on the quotient when there is one (a class's flows finish together).
    pub(super) fn makespan_by(
        &self,
        q: Option<&Quotient>,
        cancel: Cancel<'_>,
    ) -> Result<Time, Cancelled> {
        match q {
            None => self.makespan_until(cancel),
            Some(q) => Ok(engine::simulate_until(&q.workload, cancel)?
                .flows
                .iter()
                .map(|f| f.finish)
                .max()
                .unwrap_or(Time::ZERO)),
        }
    }

    /// Every flow's max-min rate with all active, solved on the quotient when there is one.
    pub(super) fn rates_by(
        &self,
        q: Option<&Quotient>,
        cancel: Cancel<'_>,
    ) -> Result<Vec<f64>, Cancelled> {
        match q {
            None => engine::max_min_rates_until(&self.w, cancel),
            Some(q) => Ok(q.expand(&engine::max_min_rates_until(&q.workload, cancel)?)),
        }
    }
}

/// An all-to-all laid out by symmetry: only the flows of representative servers, one per class of
/// servers the fabric cannot tell apart ([`crate::net::symmetry`]).
///
/// # Method
///
/// Every server of a class sends the same traffic, seen from its own place in the fabric, so the
/// flows of a whole class load every resource class the way `members` copies of one server's flows
/// load it. The folded phase has one resource per resource class, with the capacity of all its
/// members together (over `scale`, the greatest common divisor of the server classes' sizes), and
/// one flow per flow of a representative server, crossing each resource class with width
/// (members of its server class / `scale`) x (how many members of that class its path crosses).
/// When every member of a resource class carries the same mix of flows (the symmetry holds for
/// the traffic, not only for the cables), progressive filling on the folded phase fills a class
/// exactly when it fills each member of it, and every flow gets the max-min rate of the whole
/// step: the sum over members of a class is the member's load times the members, and the
/// capacity is scaled the same way. The folded phase is then reduced to flow classes
/// ([`crate::engine::classes`]) and simulated.
///
/// The symmetry is checked for the traffic: the last server of every class is laid out too, and
/// its flows must cross the resource classes exactly as the representative's do (the same
/// multiset of per-flow crossings); otherwise the step is laid out flow by flow (or refused as too
/// large). The tests compare every flow's rate and finish time with the per-flow engine on every
/// preset.
///
/// Path latency: a flow's latency is computed with each link's latency replaced by the longest of
/// its class, so the step's path latency is an upper bound of the per-flow one, equal to it when
/// cables of a class have one length.
pub(super) struct Fold<'n> {
    pub(super) sym: &'n Symmetry,
    /// Greatest common divisor of the server classes' sizes.
    pub(super) scale: u32,
    /// Flows added now stand for `weight` x `scale` flows each.
    pub(super) weight: u32,
    /// Signatures of the flows laid out (the representative's, then the check server's).
    pub(super) signatures: Vec<u64>,
    /// Lay out for the check: record signatures only, add nothing.
    pub(super) checking: bool,
    /// Keep, per representative flow, its server and merged flow (tests map them back).
    pub(super) trace: bool,
    /// The resource classes a flow crosses, kept between flows.
    pub(super) crossed: Vec<(u32, u32)>,
}
