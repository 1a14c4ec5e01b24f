//! Large steps laid out on every core: an all-to-all counted per link a few ranks at a time.

use crate::collective::comm::Comm;
use crate::collective::error::CollectiveError;
use crate::collective::step::ChunkWork;
use crate::collective::step::StepBuilder;
use crate::collective::CollectiveAlgorithm;
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
    let total: u64 = comms
        .iter()
        .map(|c| u64::from(c.ranks()) * u64::from(c.ranks().saturating_sub(1)))
        .sum();
    // (communicator, first source, end of sources, first connection number, flows).
    let mut chunks: Vec<(usize, u32, u32, u32, u64)> = Vec::new();
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
        let run = |w: &mut StepBuilder<'_, '_>, c: &(usize, u32, u32, u32, u64)| {
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
