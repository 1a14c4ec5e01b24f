//! Large steps laid out on every core: an all-to-all counted per link a few ranks at a time.

use crate::cancel::Cancel;
use crate::collective::comm::Comm;
use crate::collective::error::CollectiveError;
use crate::collective::step::ChunkWork;
use crate::collective::step::StepBuilder;
use crate::collective::CollectiveAlgorithm;
use crate::collective::{JobShape, StepModel};
use crate::net::fabric_net::FabricNet;
use crate::net::regular;
use crate::net::routes::FabricRouting;
use crate::net::symmetry::{self, Symmetry};
/// Lays out `a` over `comms` by counting flows per link ([`StepBuilder::count_on`]): the source
/// ranks a few at a time, saying how far it got (a step of 131,072 GPUs has 17 billion flows),
/// then, where the flows turn out unequal, the same again to bound them
/// ([`StepBuilder::bound_counted`]).
///
/// The chunks of sources run on every core the machine has. The answer does not depend on how
/// many or in which order: each chunk starts at the connection number the sequential layout
/// gives its first source (every rank sends once over the network to each rank of another
/// server, as [`StepBuilder::send`] does), counts add up, bounds take the largest, and route
/// failures are kept in chunk order.
pub(super) fn lay_out_counted(
    b: &mut StepBuilder<'_, '_>,
    a: &dyn CollectiveAlgorithm,
    comms: &[Comm],
    progress: &mut dyn FnMut(&str),
    bound_unequal: bool,
) -> Result<(), CollectiveError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    lay_out_counted_on(b, a, comms, progress, cores, bound_unequal)
}

/// [`lay_out_counted`] on at most `threads` threads; unequal flows are bounded only with
/// `bound_unequal` (a caller that will lay them out flow by flow instead skips that pass).
pub(super) fn lay_out_counted_on(
    b: &mut StepBuilder<'_, '_>,
    a: &dyn CollectiveAlgorithm,
    comms: &[Comm],
    progress: &mut dyn FnMut(&str),
    threads: usize,
    bound_unequal: bool,
) -> Result<(), CollectiveError> {
    b.count_on()?;
    let (total, chunks) = chunks(b, comms);
    let threads = threads.min(chunks.len()).max(1);
    let pass = |b: &mut StepBuilder<'_, '_>,
                what: &str,
                progress: &mut dyn FnMut(&str)|
     -> Result<(), CollectiveError> {
        let say = |done: u64, progress: &mut dyn FnMut(&str)| {
            progress(&format!(
                "{}: {what}: {done} of {total} flows ({}%)",
                a.name(),
                done * 100 / total.max(1)
            ))
        };
        let run = |w: &mut StepBuilder<'_, '_>, c: &Chunk| {
            w.comm = comms[c.0].clone();
            w.sources = Some((c.1, c.2));
            w.conn = c.3;
            a.step(w)
        };
        if threads == 1 {
            let mut done = 0;
            for c in &chunks {
                run(b, c)?;
                done += c.4;
                say(done, progress);
            }
        } else {
            let next = std::sync::atomic::AtomicUsize::new(0);
            let (tx, rx) = std::sync::mpsc::channel::<u64>();
            let mut workers: Vec<ChunkWork<'_, '_>> = Vec::new();
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| {
                        let mut w = b.worker();
                        let (tx, next, chunks, run) = (tx.clone(), &next, &chunks, &run);
                        scope.spawn(move || {
                            let mut failures = Vec::new();
                            let mut error = None;
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let Some(c) = chunks.get(i) else { break };
                                let before = w.failure_count;
                                if let Err(e) = run(&mut w, c) {
                                    error = Some((i, e));
                                    break;
                                }
                                if w.failure_count > before {
                                    failures.push((
                                        i,
                                        std::mem::take(&mut w.failures),
                                        w.failure_count - before,
                                    ));
                                }
                                // The receiver outlives the workers.
                                let _ = tx.send(c.4);
                            }
                            ChunkWork {
                                builder: w,
                                failures,
                                error,
                            }
                        })
                    })
                    .collect();
                drop(tx);
                let mut done = 0;
                for n in rx {
                    done += n;
                    say(done, progress);
                }
                for h in handles {
                    match h.join() {
                        Ok(w) => workers.push(w),
                        Err(panic) => std::panic::resume_unwind(panic),
                    }
                }
            });
            b.merge(workers)?;
        }
        b.sources = None;
        Ok(())
    };
    pass(b, "counting flows per link", progress)?;
    if bound_unequal && b.failure_count == 0 && b.counted_unequal() {
        b.bound_counted();
        pass(b, "bounding unequal sub-flows", progress)?;
    }
    Ok(())
}

/// A chunk of a counted step's sources: (communicator, first source, end of sources, first
/// connection number, flows).
type Chunk = (usize, u32, u32, u32, u64);

/// The flows of every communicator in `comms`, and their sources cut into [`Chunk`]s, each
/// numbering its connections on from the last.
fn chunks(b: &StepBuilder<'_, '_>, comms: &[Comm]) -> (u64, Vec<Chunk>) {
    let total: u64 = comms
        .iter()
        .map(|c| u64::from(c.ranks()) * u64::from(c.ranks().saturating_sub(1)))
        .sum();
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut conn = 0u32;
    for (k, comm) in comms.iter().enumerate() {
        let ranks = comm.ranks();
        // About a hundred chunks over the whole step; sixteen where a chunk's routes are found
        // once per first switch and destination (`count_direct_by_switch`): a first switch's
        // sources in fewer chunks find its routes fewer times.
        let flows = u64::from(ranks) * u64::from(ranks.saturating_sub(1));
        let per_step = if b.router.by_first_switch() { 16 } else { 100 };
        let reports = (flows * per_step)
            .div_ceil(total.max(1))
            .clamp(1, u64::from(ranks.max(1)));
        let chunk = (u64::from(ranks).div_ceil(reports) as u32).max(1);
        // Network transfers per source: one to each rank on another server.
        let per_source = ranks.saturating_sub(comm.locals.len() as u32);
        let mut lo = 0;
        while lo < ranks {
            let hi = (lo + chunk).min(ranks);
            chunks.push((
                k,
                lo,
                hi,
                conn,
                u64::from(hi - lo) * u64::from(ranks.saturating_sub(1)),
            ));
            conn = conn.wrapping_add((hi - lo).wrapping_mul(per_source));
            lo = hi;
        }
    }
    (total, chunks)
}

/// How [`simulate_until`](super::simulate_until) lays out each algorithm's step: by
/// symmetry where the fabric allows it, counted per link past the per-flow limits, flow by flow
/// otherwise.
pub(super) struct StepLayout<'a, 'f> {
    pub(super) net: &'a FabricNet<'f>,
    pub(super) router: &'a dyn FabricRouting,
    pub(super) comms: &'a [Comm],
    pub(super) cancel: Cancel<'a>,
    pub(super) shape: JobShape,
    /// One communicator of every GPU a job runs on, with routes that keep to the structure: a
    /// step may be laid out by symmetry.
    pub(super) foldable: bool,
    /// The step's flows on the engine: a transfer per pair of ranks, each as many sub-flows as
    /// its route takes (adaptive routing: one per up-port of the first switch).
    pub(super) sub_flows: u64,
    pub(super) fold_above: u64,
    pub(super) count_above: u64,
    pub(super) count_equal_above: u64,
    /// The fabric's symmetry, found for the first step laid out by it.
    pub(super) symmetry: Option<Symmetry>,
    /// The fabric's structure does not route alike servers alike: no step is laid out by symmetry.
    pub(super) irregular: bool,
}

impl StepLayout<'_, '_> {
    /// Each of `algos`' steps laid out and simulated, in order.
    pub(super) fn models(
        &mut self,
        algos: &[&dyn CollectiveAlgorithm],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<StepModel>, CollectiveError> {
        let mut models = Vec::with_capacity(algos.len());
        for a in algos {
            self.cancel.check()?;
            let all = u64::from(self.shape.ranks)
                * u64::from(self.shape.ranks.saturating_sub(1))
                * self.sub_flows;
            let by_symmetry = self.foldable && a.folds() && all > self.fold_above;
            if by_symmetry && self.symmetry.is_none() && !self.irregular {
                self.find_symmetry(*a, progress)?;
            }
            models.push(self.model(*a, all, by_symmetry, progress)?);
        }
        Ok(models)
    }

    /// The fabric's symmetry, where its structure routes alike servers alike.
    fn find_symmetry(
        &mut self,
        a: &dyn CollectiveAlgorithm,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(), CollectiveError> {
        match regular::routes_alike(self.net, self.router) {
            Ok(()) => {
                progress("finding the fabric's symmetry");
                self.symmetry = Some(symmetry::of_net(self.net, self.cancel)?);
            }
            Err(e) => {
                progress(&format!("{}: not laid out by symmetry: {e}", a.name()));
                self.irregular = true;
            }
        }
        Ok(())
    }

    /// `a`'s step (`all` flows) laid out and simulated.
    fn model(
        &self,
        a: &dyn CollectiveAlgorithm,
        all: u64,
        by_symmetry: bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<StepModel, CollectiveError> {
        let net = self.net;
        let cancel = self.cancel;
        let sym = self.symmetry.as_ref().filter(|_| by_symmetry);
        match sym {
            Some(sym) => progress(&format!(
                "{}: laying out one step from {} representative server(s)",
                a.name(),
                sym.server_classes
                    .iter()
                    .filter(|c| !net.is_drained(c[0]))
                    .count()
            )),
            None => progress(&format!("{}: laying out one step", a.name())),
        }
        let b = self.lay_out(a, sym, all, progress)?;
        cancel.check()?;
        if b.counting() {
            progress(&format!(
                "{}: timing {} flows from their counts",
                a.name(),
                b.flows()
            ));
        } else {
            progress(&format!("{}: simulating {} flows", a.name(), b.flows()));
        }
        b.finish(a)
    }

    /// `a`'s step laid out: by symmetry on `sym` where the check holds, else counted or flow by
    /// flow.
    fn lay_out<'s>(
        &'s self,
        a: &dyn CollectiveAlgorithm,
        sym: Option<&'s Symmetry>,
        all: u64,
        progress: &mut dyn FnMut(&str),
    ) -> Result<StepBuilder<'s, 's>, CollectiveError> {
        let (net, router, shape, cancel, comms) =
            (self.net, self.router, self.shape, self.cancel, self.comms);
        let (count_above, count_equal_above) = (self.count_above, self.count_equal_above);
        // Too many flows to simulate one by one: count them per resource instead. Past
        // `count_equal_above` also where flow classes cannot shrink the step (ECMP, OpenSM
        // routes, cables down): counting gives the per-flow engine's makespan when the flows
        // are equal, and gives way to the per-flow layout when they are not (adaptive
        // routing's sub-flows), so those steps keep their per-flow times.
        let classes_help = router.structural() && !net.any_failed();
        let exact_only = all <= count_above;
        let count = a.folds() && (!exact_only || (all > count_equal_above && !classes_help));
        let mut b = StepBuilder::new(net, router, shape)?.cancel_on(cancel);
        // By symmetry where the check holds (foldable: one communicator of every GPU).
        let folded = match sym {
            Some(sym) => {
                b.fold_on(sym)?;
                a.step(&mut b)?;
                // Missing routes are counted over every flow, as the per-flow layout
                // reports them.
                let held = !b.fold_failed && b.failure_count == 0;
                if !held {
                    progress(&format!(
                        "{}: not laid out by symmetry; laying out every flow",
                        a.name()
                    ));
                }
                held
            }
            None => false,
        };
        if !folded {
            if sym.is_some() {
                b = StepBuilder::new(net, router, shape)?.cancel_on(cancel);
            }
            if count {
                lay_out_counted(&mut b, a, comms, progress, !exact_only)?;
                if exact_only && b.counted_unequal() {
                    progress(&format!(
                        "{}: unequal sub-flows; laying out every flow",
                        a.name()
                    ));
                    b = StepBuilder::new(net, router, shape)?.cancel_on(cancel);
                }
            }
            if !b.counting() {
                for comm in comms {
                    b.comm = comm.clone();
                    a.step(&mut b)?;
                }
            }
        }
        Ok(b)
    }
}
