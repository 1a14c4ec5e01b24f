//! An all-to-all laid out by symmetry ([`Fold`]): the representative servers' flows, merged by what
//! they cross, laid out a server class at a time on every core, with cables down and servers
//! drained as well as on an intact fabric.
//!
//! # Failures and drained servers
//!
//! The classes come from colour refinement on the fabric with every failed link labelled down and
//! every drained server coloured apart (`crate::symmetry`), so only the servers and links the
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

use super::{CollectiveError, Fold, Relay, StepBuilder, StepPhase, STEP_CHUNK};
use crate::engine::classes;
use crate::engine::{Flow, ResourceId, Weight, Workload};
use crate::error::SimError;
use crate::fabric_net::FabricNet;
use crate::time::Time;
use railyard_fabric::LinkId;
use std::collections::HashMap;

/// The flows of a folded phase, merged by what they cross: their bytes and, per resource class,
/// how many of its members (sorted by class), kept flat so adding a flow allocates nothing.
#[derive(Debug, Clone, Default)]
pub(super) struct Merged {
    /// Signature (hash of the bytes and crossings) -> the first merged flow with it; further
    /// ones with the same signature are chained through `next`.
    index: HashMap<u64, u32>,
    next: Vec<u32>,
    sig: Vec<u64>,
    bytes: Vec<u64>,
    /// Merged flow k crosses `crossed[ends[k]..ends[k + 1]]`.
    crossed: Vec<(u32, u32)>,
    ends: Vec<u32>,
    /// Per merged flow: the flows it stands for, in units of `scale` flows of the step.
    weight: Vec<u64>,
    /// Per merged flow: what each of its flows weighs in the fair shares (`Routes::weight`).
    share: Vec<Weight>,
    /// Per merged flow: the first of its flows' real paths (resource indexes of the network).
    paths: Vec<u32>,
    offsets: Vec<u32>,
    /// With tracing on, per flow laid out: its source server and its merged flow.
    pub(super) trace: Option<Vec<(u32, u32)>>,
}

/// No next merged flow with the same signature.
const END: u32 = u32::MAX;

impl Merged {
    pub(super) fn new(trace: bool) -> Merged {
        Merged {
            ends: vec![0],
            offsets: vec![0],
            trace: trace.then(Vec::new),
            ..Merged::default()
        }
    }

    fn len(&self) -> usize {
        self.bytes.len()
    }

    fn crossed_of(&self, k: usize) -> &[(u32, u32)] {
        &self.crossed[self.ends[k] as usize..self.ends[k + 1] as usize]
    }

    /// Adds `weight` flows of `bytes` crossing `crossed` (signature `sig`); returns its merged
    /// flow.
    fn add(
        &mut self,
        sig: u64,
        bytes: u64,
        crossed: &[(u32, u32)],
        weight: u64,
        share: Weight,
        path: &[u32],
    ) -> u32 {
        let mut at = self.index.get(&sig).copied().unwrap_or(END);
        let mut last = END;
        while at != END {
            let k = at as usize;
            if self.bytes[k] == bytes && self.share[k] == share && self.crossed_of(k) == crossed {
                self.weight[k] += weight;
                return at;
            }
            last = at;
            at = self.next[k];
        }
        let k = self.len() as u32;
        match last {
            END => {
                self.index.insert(sig, k);
            }
            l => self.next[l as usize] = k,
        }
        self.next.push(END);
        self.sig.push(sig);
        self.bytes.push(bytes);
        self.crossed.extend_from_slice(crossed);
        self.ends.push(self.crossed.len() as u32);
        self.weight.push(weight);
        self.share.push(share);
        self.paths.extend_from_slice(path);
        self.offsets.push(self.paths.len() as u32);
        k
    }

    /// Adds another class's merged flows, in their order, after this one's.
    fn absorb(&mut self, other: Merged) {
        let mut to = Vec::with_capacity(other.len());
        for k in 0..other.len() {
            let path = &other.paths[other.offsets[k] as usize..other.offsets[k + 1] as usize];
            to.push(self.add(
                other.sig[k],
                other.bytes[k],
                other.crossed_of(k),
                other.weight[k],
                other.share[k],
                path,
            ));
        }
        if let (Some(mine), Some(theirs)) = (self.trace.as_mut(), other.trace) {
            mine.extend(theirs.into_iter().map(|(s, k)| (s, to[k as usize])));
        }
    }
}

/// One flow [`StepBuilder::add`] lays out: what it carries, its path latency and its weight in
/// the fair shares (`Routes::weight`).
pub(super) struct Piece {
    pub bytes: u64,
    pub latency: Time,
    pub share: Weight,
}

/// [`StepBuilder::add`] laying out by symmetry: the flow crosses resource classes and is merged
/// with the flows that cross them alike; or, checking, only its signature is recorded.
pub(super) fn add_folded(
    net: &FabricNet<'_>,
    fold: &mut Fold<'_>,
    ph: &mut StepPhase,
    phase: usize,
    path: &[u32],
    piece: Piece,
) -> Result<(), SimError> {
    let Piece {
        bytes,
        latency,
        share,
    } = piece;
    let sym = fold.sym;
    let links = 2 * net.fabric.links.len();
    let mut crossed = std::mem::take(&mut fold.crossed);
    crossed.clear();
    crossed.extend(path.iter().map(|&r| (sym.resource_class[r as usize], 1)));
    crossed.sort_unstable();
    crossed.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 += b.1;
        }
        same
    });
    let mut sig = classes::mix(phase as u64 ^ (bytes << 8), classes::SEED_A);
    if share != Weight::ONE {
        let w = (u64::from(share.num()) << 32) | u64::from(share.den());
        sig = classes::mix(sig ^ w, classes::SEED_B);
    }
    for &(c, n) in &crossed {
        sig = classes::mix(sig ^ ((u64::from(c) << 32) | u64::from(n)), classes::SEED_B);
    }
    fold.signatures.push(sig);
    if fold.checking {
        fold.crossed = crossed;
        return Ok(());
    }
    // Each link's latency replaced by its class's longest.
    let mut latency = latency;
    for &r in path {
        if (r as usize) < links {
            let l = LinkId(r / 2);
            latency = latency + sym.class_latency[sym.resource_class[r as usize] as usize]
                - net.link_latency(l);
        }
    }
    let merged = ph.merged.get_or_insert_with(|| Merged::new(fold.trace));
    let k = merged.add(sig, bytes, &crossed, u64::from(fold.weight), share, path);
    fold.crossed = crossed;
    if let Some(t) = merged.trace.as_mut() {
        let server = source_server(net, path).unwrap_or(u32::MAX);
        t.push((server, k));
    }
    ph.latency = ph.latency.max(latency);
    ph.represented += u64::from(fold.weight) * u64::from(fold.scale);
    Ok(())
}

/// The server a path starts in (its first resource is a link out of one of its devices).
fn source_server(net: &FabricNet<'_>, path: &[u32]) -> Option<u32> {
    let &r = path.first()?;
    let l = net.fabric.links.get(r as usize / 2)?;
    let end = if r.is_multiple_of(2) { l.a } else { l.b };
    net.fabric.port_node(end).server
}

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
