//! An all-to-all laid out by symmetry ([`Fold`]): the representative servers' flows, merged by what
//! they cross, laid out a server class at a time on every core, with cables down and servers
//! drained as well as on an intact fabric.
//!
//! # Failures and drained servers
//!
//! The classes come from colour refinement on the fabric with every failed link labelled down and
//! every drained server coloured apart (`crate::net::symmetry`), so only the servers and links the
//! failures touch split off: 16 leaf-spine cables of 16,384 GPUs' 32,768 leave 19 server classes,
//! and a step lays out 19 representative servers instead of 2,048. Their routes must treat the
//! members of a class alike as well: a route source that moves a dead port's share by the
//! source's number (D-mod-K, ECMP) does not, and is laid out flow by flow or counted instead; one
//! that spreads around the failure (adaptive routing, `FabricRouting::symmetric_around_failures`)
//! does, and the tests compare every flow's rate with the per-flow engine's on fabrics with
//! cables down and servers drained.
//!
//! # Merged flows
//!
//! A representative's flows that cross the same resource classes the same number of times with the
//! same bytes are one flow of the folded step, whose widths add up: max-min fairness gives flows
//! the fabric cannot tell apart one rate, so a flow of width 2w is two flows of width w. The
//! folded step then holds a few thousand flows however many the representatives lay out (4.2
//! million per server of 16,384 GPUs with adaptive routing), and widths are divided by their
//! greatest common divisor per resource class, as `classes::divide_widths` does, to stay in
//! range.

use super::config::Relay;
use super::error::CollectiveError;
use super::phase::{Fold, StepPhase};
use super::step::StepBuilder;
use super::STEP_CHUNK;
use crate::collective::merged::Merged;
use crate::engine::{Flow, ResourceId, Workload};
use crate::error::SimError;

/// Lays out the step by symmetry: per class of servers a job runs on, its first server's
/// transfers, then its last server's as a check (they must cross the resource classes alike,
/// flow for flow as multisets); classes on every core, merged in class order, so the result does
/// not depend on the threads. A check that fails, or a route missing, leaves `b.fold_failed` or
/// `b.failure_count` set for the caller to lay the step out another way.
pub(super) fn lay_out_folded(
    b: &mut StepBuilder<'_, '_>,
    relay: Relay,
) -> Result<(), CollectiveError> {
    let Some(sym) = b.fold.as_ref().map(|f| f.sym) else {
        return Ok(());
    };
    let classes: Vec<usize> = (0..sym.server_classes.len())
        .filter(|&c| !b.net.is_drained(sym.server_classes[c][0]))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(classes.len()).max(1);
    let mut done: Vec<Option<ClassWork<'_, '_>>> = (0..classes.len()).map(|_| None).collect();
    if threads == 1 {
        for (i, &c) in classes.iter().enumerate() {
            done[i] = Some(lay_class(b, c, relay));
        }
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let b = &*b;
        let results: Vec<Vec<(usize, ClassWork<'_, '_>)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (next, classes) = (&next, &classes);
                    scope.spawn(move || {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(&c) = classes.get(i) else { break };
                            let w = lay_class(b, c, relay);
                            let stop = w.error.is_some();
                            mine.push((i, w));
                            if stop {
                                break;
                            }
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for (i, w) in results.into_iter().flatten() {
            done[i] = Some(w);
        }
    }
    for w in done.into_iter().flatten() {
        if let Some(e) = w.error {
            return Err(e);
        }
        b.failure_count += w.builder.failure_count;
        for f in w.builder.failures {
            if b.failures.len() < 5 {
                b.failures.push(f);
            }
        }
        b.fold_failed |= w.builder.fold_failed;
        let fold = b.fold.as_ref().map(|f| (f.sym, f.scale, f.trace));
        for (k, p) in w.builder.phases.into_iter().enumerate() {
            while b.phases.len() <= k {
                b.phases
                    .push(StepPhase::new(b.net, b.fold.as_ref(), false)?);
            }
            let into = &mut b.phases[k];
            into.represented += p.represented;
            into.latency = into.latency.max(p.latency);
            if let (Some(m), Some((_, _, trace))) = (p.merged, fold) {
                into.merged
                    .get_or_insert_with(|| Merged::new(trace))
                    .absorb(m);
            }
        }
    }
    if b.fold_failed || b.failure_count > 0 {
        return Ok(());
    }
    let Some(fold) = b.fold.as_ref() else {
        return Ok(());
    };
    for ph in &mut b.phases {
        materialise(fold, ph)?;
    }
    Ok(())
}

/// One server class laid out: the builder that did it, or the error that stopped it.
struct ClassWork<'n, 'f> {
    builder: StepBuilder<'n, 'f>,
    error: Option<CollectiveError>,
}

/// Server class `c`'s representative (its first server) laid out on a builder of its own, and its
/// last server's flows checked against it.
fn lay_class<'n, 'f>(b: &StepBuilder<'n, 'f>, c: usize, relay: Relay) -> ClassWork<'n, 'f> {
    let mut w = b.fold_worker();
    let error = lay_class_on(&mut w, c, relay).err();
    ClassWork { builder: w, error }
}

fn lay_class_on(
    w: &mut StepBuilder<'_, '_>,
    c: usize,
    relay: Relay,
) -> Result<(), CollectiveError> {
    let Some(sym) = w.fold.as_ref().map(|f| f.sym) else {
        return Ok(());
    };
    let members = &sym.server_classes[c];
    let (first, last) = (members[0], members[members.len() - 1]);
    if let Some(fold) = w.fold.as_mut() {
        fold.weight = members.len() as u32 / fold.scale;
        fold.checking = false;
        fold.signatures.clear();
    }
    lay_server(w, first, relay)?;
    if last == first {
        return Ok(());
    }
    let Some(fold) = w.fold.as_mut() else {
        return Ok(());
    };
    let mut mine = std::mem::take(&mut fold.signatures);
    fold.checking = true;
    lay_server(w, last, relay)?;
    let Some(fold) = w.fold.as_mut() else {
        return Ok(());
    };
    let mut theirs = std::mem::take(&mut fold.signatures);
    mine.sort_unstable();
    theirs.sort_unstable();
    if mine != theirs {
        w.fold_failed = true;
    }
    Ok(())
}

/// Every transfer from the GPUs of `server` (a server of the communicator) to every other rank.
fn lay_server(
    b: &mut StepBuilder<'_, '_>,
    server: usize,
    relay: Relay,
) -> Result<(), CollectiveError> {
    let shape = b.shape;
    let g = shape.gpus_per_node;
    let Ok(node) = b.comm.servers.binary_search(&server) else {
        return Ok(());
    };
    let planes = u64::from(b.net.fabric.meta.planes.max(1));
    // Transfers between servers per source server: the connection counter (and so the plane) a
    // server's first transfer has when every server is laid out in order.
    let per_server = u64::from(g) * u64::from(g) * u64::from(shape.nodes.saturating_sub(1));
    b.conn = ((node as u64 * per_server) % planes) as u32;
    for l in 0..g {
        let i = node as u32 * g + l;
        for j in 0..shape.ranks {
            if i != j {
                b.send(
                    b.comm.gpu_of_rank(i),
                    b.comm.gpu_of_rank(j),
                    relay,
                    STEP_CHUNK,
                )?;
            }
        }
    }
    Ok(())
}

/// A folded phase's merged flows as its workload: one resource per resource class (its members'
/// capacity together, over `scale`), one flow per merged flow with widths (members crossed) x
/// (flows it stands for), widths and capacity divided by the widths' greatest common divisor per
/// class.
fn materialise(fold: &Fold<'_>, ph: &mut StepPhase) -> Result<(), SimError> {
    let Some(m) = ph.merged.as_mut() else {
        return Ok(());
    };
    let sym = fold.sym;
    let classes = sym.class_size.len();
    let mut div = vec![0u64; classes];
    for k in 0..m.len() {
        for &(c, n) in m.crossed_of(k) {
            div[c as usize] = gcd64(div[c as usize], u64::from(n) * m.weight[k]);
        }
    }
    let mut w = Workload::new();
    w.reserve(m.len(), m.crossed.len());
    for (c, &cap) in sym.class_capacity.iter().enumerate() {
        let whole = f64::from(sym.class_size[c]) * cap / f64::from(fold.scale);
        w.add_resource(whole / div[c].max(1) as f64)?;
    }
    let (mut ids, mut widths) = (Vec::new(), Vec::new());
    for k in 0..m.len() {
        ids.clear();
        widths.clear();
        for &(c, n) in m.crossed_of(k) {
            ids.push(ResourceId::from_index(c));
            let width = u64::from(n) * m.weight[k] / div[c as usize].max(1);
            widths.push(u32::try_from(width).map_err(|_| SimError::TooLarge("flow widths"))?);
        }
        w.add_weighted_flow(
            &Flow {
                path: &ids,
                bytes: m.bytes[k],
                ..Flow::default()
            },
            &widths,
            m.share[k],
        )?;
    }
    ph.w = w;
    ph.paths = std::mem::take(&mut m.paths);
    ph.offsets = std::mem::replace(&mut m.offsets, vec![0]);
    ph.divisor = div.into_iter().map(|d| d.max(1)).collect();
    Ok(())
}

fn gcd64(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd64(b, a % b)
    }
}

impl<'n, 'f> StepBuilder<'n, 'f> {
    /// A builder laying out one server class by symmetry: the same network, routes, shape,
    /// communicator and classes, with nothing laid out yet.
    fn fold_worker(&self) -> StepBuilder<'n, 'f> {
        let fold = self.fold.as_ref().map(|f| Fold {
            sym: f.sym,
            scale: f.scale,
            weight: 1,
            signatures: Vec::new(),
            checking: false,
            trace: f.trace,
            crossed: Vec::new(),
        });
        StepBuilder {
            net: self.net,
            router: self.router,
            shape: self.shape,
            comm: self.comm.clone(),
            phases: Vec::new(),
            conn: 0,
            routes: Default::default(),
            pcie: Default::default(),
            path: Vec::new(),
            failures: Vec::new(),
            failure_count: 0,
            cancel: self.cancel,
            transfers: 0,
            fold,
            fold_failed: false,
            count: false,
            sources: None,
        }
    }
}
