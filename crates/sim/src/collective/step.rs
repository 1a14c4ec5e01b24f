//! [`StepBuilder`]: one step's flows laid out on a fabric network, transfer by transfer, counted
//! per link, or folded by symmetry, and finished into a [`StepModel`].

use crate::cancel::Cancel;
use crate::collective::bottleneck::bottleneck_at;
use crate::collective::bottleneck::bottleneck_folded;
use crate::collective::bottleneck::gcd;
use crate::collective::comm::Comm;
use crate::collective::comm::Gpu;
use crate::collective::config::Relay;
use crate::collective::error::CollectiveError;
use crate::collective::merged::Merged;
use crate::collective::phase::Counted;
use crate::collective::phase::Fold;
use crate::collective::phase::StepPhase;
use crate::collective::relay_of;
use crate::collective::Bottleneck;
use crate::collective::CollectiveAlgorithm;
use crate::collective::Counting;
use crate::collective::JobShape;
use crate::collective::StepModel;
use crate::collective::STEP_CHUNK;
use crate::engine::classes;
use crate::engine::classes::Quotient;
use crate::engine::Flow;
use crate::engine::Weight;
use crate::engine::Workload;
use crate::error::SimError;
use crate::net::fabric_net::FabricNet;
use crate::net::fabric_net::PcieMemo;
use crate::net::routes::resource_ids;
use crate::net::routes::FabricRouting;
use crate::net::routes::RouteFailure;
use crate::net::routes::Routes;
use crate::net::symmetry::Symmetry;
use crate::time::Time;
use railyard_fabric::LinkId;
/// Builds one step's flows on a fabric network. A step has one phase, or two when relays are
/// staged: the NVLink hops, then the network hops, one after the other.
pub struct StepBuilder<'n, 'f> {
    pub net: &'n FabricNet<'f>,
    pub(super) router: &'n dyn FabricRouting,
    pub shape: JobShape,
    /// The communicator the algorithm lays out ([`StepBuilder::gpu`] maps its nodes).
    pub comm: Comm,
    pub(super) phases: Vec<StepPhase>,
    pub(super) conn: u32,
    pub(super) routes: Routes,
    /// Paths inside servers, by their ends.
    pub(super) pcie: PcieMemo,
    pub(super) path: Vec<u32>,
    pub(super) failures: Vec<RouteFailure>,
    pub(super) failure_count: usize,
    pub(super) cancel: Cancel<'n>,
    /// Transfers laid out, to read `cancel` every [`CANCEL_EVERY_TRANSFERS`].
    pub(super) transfers: u32,
    /// Laying out by symmetry ([`Fold`]).
    pub(super) fold: Option<Fold<'n>>,
    /// The symmetry check failed: the step must be laid out flow by flow.
    pub(super) fold_failed: bool,
    /// Counting flows per resource instead of simulating them ([`StepBuilder::count_on`]).
    pub(super) count: bool,
    /// The source ranks an all-to-all lays out (`lo..hi`), when not all: a counted step is laid
    /// out a few sources at a time to report progress.
    pub(super) sources: Option<(u32, u32)>,
}

/// Transfers laid out between two reads of a [`StepBuilder`]'s cancellation flag.
pub(super) const CANCEL_EVERY_TRANSFERS: u32 = 256;

impl<'n, 'f> StepBuilder<'n, 'f> {
    pub fn new(
        net: &'n FabricNet<'f>,
        router: &'n dyn FabricRouting,
        shape: JobShape,
    ) -> Result<Self, SimError> {
        Ok(StepBuilder {
            net,
            router,
            shape,
            comm: Comm::whole(net),
            phases: vec![StepPhase::new(net, None, false)?],
            conn: 0,
            routes: Routes::default(),
            pcie: PcieMemo::default(),
            path: Vec::new(),
            failures: Vec::new(),
            failure_count: 0,
            cancel: Cancel::NEVER,
            transfers: 0,
            fold: None,
            fold_failed: false,
            count: false,
            sources: None,
        })
    }

    /// Counts flows per resource from now on instead of adding them to a workload: for a step too
    /// large to simulate flow by flow that cannot be laid out by symmetry (ECMP, failed links,
    /// imported routes). Every phase's flows start together, so [`Counted`] times the step from
    /// the counts. Only for a step with no flows yet.
    pub(super) fn count_on(&mut self) -> Result<(), SimError> {
        self.phases = vec![StepPhase::new(self.net, None, true)?];
        self.fold = None;
        self.count = true;
        Ok(())
    }

    /// Whether the step is being laid out by counting flows per resource instead of simulating
    /// them (`StepBuilder::count_on`).
    pub fn counting(&self) -> bool {
        self.count
    }

    /// Whether counted phases are in their bounding pass ([`StepBuilder::bound_counted`]).
    pub(super) fn bounding(&self) -> bool {
        self.phases
            .iter()
            .any(|p| p.counted.as_ref().is_some_and(|c| c.bounding))
    }

    /// Whether a counted phase has unequal flows, so the step needs a bounding pass
    /// ([`StepBuilder::bound_counted`]) to be timed well.
    pub(super) fn counted_unequal(&self) -> bool {
        self.phases.iter().any(|p| {
            p.counted
                .as_ref()
                .is_some_and(|c| p.represented > 0 && !c.equal())
        })
    }

    /// Ends counting: the same transfers laid out again from now on bound each flow's drain by
    /// the complete counts ([`Counted`]) instead of counting. Transfers and route failures are
    /// not counted twice.
    pub(super) fn bound_counted(&mut self) {
        for c in self.phases.iter_mut().filter_map(|p| p.counted.as_mut()) {
            c.bounding = true;
        }
        // The same connections again, so each takes the same paths.
        self.conn = 0;
    }

    /// A builder for one worker of [`lay_out_counted`]: the same network, routes, shape and
    /// cancellation, counting from zero, or, in the bounding pass, bounding against a copy of the
    /// complete counts.
    pub(super) fn worker(&self) -> StepBuilder<'n, 'f> {
        let phases = self
            .phases
            .iter()
            .map(|p| StepPhase {
                w: Workload::new(),
                paths: Vec::new(),
                offsets: vec![0],
                latency: Time::ZERO,
                represented: 0,
                merged: None,
                divisor: Vec::new(),
                counted: p.counted.as_ref().map(|c| Counted {
                    load: if c.bounding {
                        c.load.clone()
                    } else {
                        c.load.empty_like()
                    },
                    weighted: c.weighted,
                    min_bytes: u64::MAX,
                    max_bytes: 0,
                    bounding: c.bounding,
                    bound: Time::ZERO,
                }),
            })
            .collect();
        StepBuilder {
            net: self.net,
            router: self.router,
            shape: self.shape,
            comm: self.comm.clone(),
            phases,
            conn: 0,
            routes: Routes::default(),
            pcie: PcieMemo::default(),
            path: Vec::new(),
            failures: Vec::new(),
            failure_count: 0,
            cancel: self.cancel,
            transfers: 0,
            fold: None,
            fold_failed: false,
            count: true,
            sources: None,
        }
    }

    /// Adds up what the workers of [`lay_out_counted`] counted (or bounded), as one builder
    /// laying out every chunk in order would have: failures in chunk order, the first error by
    /// chunk.
    pub(super) fn merge(&mut self, workers: Vec<ChunkWork<'n, 'f>>) -> Result<(), CollectiveError> {
        let mut failures: Vec<(usize, Vec<RouteFailure>, usize)> = Vec::new();
        let mut error: Option<(usize, CollectiveError)> = None;
        for w in workers {
            failures.extend(w.failures);
            if let Some((i, e)) = w.error {
                if error.as_ref().is_none_or(|(j, _)| i < *j) {
                    error = Some((i, e));
                }
            }
            for (k, wp) in w.builder.phases.into_iter().enumerate() {
                while self.phases.len() <= k {
                    self.phases.push(StepPhase::new(self.net, None, true)?);
                }
                let p = &mut self.phases[k];
                let (Some(c), Some(wc)) = (p.counted.as_mut(), wp.counted) else {
                    continue;
                };
                if c.bounding {
                    c.bound = c.bound.max(wc.bound);
                    continue;
                }
                p.represented += wp.represented;
                p.latency = p.latency.max(wp.latency);
                c.load.absorb(&wc.load)?;
                c.weighted |= wc.weighted;
                c.min_bytes = c.min_bytes.min(wc.min_bytes);
                c.max_bytes = c.max_bytes.max(wc.max_bytes);
            }
        }
        if let Some((_, e)) = error {
            return Err(e);
        }
        failures.sort_by_key(|f| f.0);
        for (_, list, count) in failures {
            self.failure_count += count;
            for f in list {
                if self.failures.len() < 5 {
                    self.failures.push(f);
                }
            }
        }
        Ok(())
    }

    /// Lays out by symmetry from now on ([`Fold`]); only for a step with no flows yet, by an
    /// algorithm that can ([`CollectiveAlgorithm::folds`]).
    pub(super) fn fold_on(&mut self, sym: &'n Symmetry) -> Result<(), SimError> {
        let scale = sym
            .server_classes
            .iter()
            .fold(0u32, |g, c| gcd(g, c.len() as u32))
            .max(1);
        let fold = Fold {
            sym,
            scale,
            weight: 1,
            signatures: Vec::new(),
            checking: false,
            trace: false,
            crossed: Vec::new(),
        };
        self.phases = vec![StepPhase::new(self.net, Some(&fold), false)?];
        self.fold = Some(fold);
        Ok(())
    }

    /// Local GPU `local` of node `node` of the communicator being laid out.
    pub fn gpu(&self, node: usize, local: u32) -> Gpu {
        Gpu::new(self.comm.servers[node], local)
    }

    /// Stops laying out and simulating with [`CollectiveError::Cancelled`] once `cancel` is set.
    pub fn cancel_on(mut self, cancel: Cancel<'n>) -> Self {
        self.cancel = cancel;
        self
    }

    pub(super) fn add(
        &mut self,
        phase: usize,
        path: &[u32],
        bytes: u64,
        latency: Time,
        weight: Weight,
    ) -> Result<(), SimError> {
        while self.phases.len() <= phase {
            self.phases
                .push(StepPhase::new(self.net, self.fold.as_ref(), self.count)?);
        }
        if let Some(fold) = &mut self.fold {
            return add_folded(
                self.net,
                fold,
                &mut self.phases[phase],
                phase,
                path,
                Piece {
                    bytes,
                    latency,
                    share: weight,
                },
            );
        }
        let ph = &mut self.phases[phase];
        if let Some(c) = ph.counted.as_mut().filter(|c| c.bounding) {
            c.bound_flow(self.net, path, bytes, weight);
            return Ok(());
        }
        ph.represented += 1;
        if let Some(c) = &mut ph.counted {
            for &r in path {
                c.load.add(r as usize, 1, weight)?;
            }
            c.weighted |= weight != Weight::ONE;
            c.min_bytes = c.min_bytes.min(bytes);
            c.max_bytes = c.max_bytes.max(bytes);
            ph.latency = ph.latency.max(latency);
            return Ok(());
        }
        let ids = resource_ids(path, &ph.w)?;
        ph.w.add_weighted_flow(
            &Flow {
                path: &ids,
                bytes,
                ..Flow::default()
            },
            &[],
            weight,
        )?;
        ph.paths.extend_from_slice(path);
        ph.offsets.push(ph.paths.len() as u32);
        ph.latency = ph.latency.max(latency);
        Ok(())
    }

    /// Flows added so far, over all phases (laid out by symmetry: the flows they stand for).
    pub fn flows(&self) -> usize {
        self.phases.iter().map(|p| p.represented as usize).sum()
    }

    /// Adds a transfer of `bytes` from `a` to `d` that crosses rails as `relay` says. Staged
    /// relays put the NVLink hop (and every transfer inside a server) in the first phase and the
    /// network hop in the second.
    pub fn send(
        &mut self,
        a: Gpu,
        d: Gpu,
        relay: Relay,
        bytes: u64,
    ) -> Result<(), CollectiveError> {
        if a.server != d.server
            && matches!(relay, Relay::Pxn | Relay::Direct)
            && (super::has_spare_nics(self.net, a.server)
                || super::has_spare_nics(self.net, d.server))
        {
            // Several NICs per GPU: the transfer's channels go through each of them in equal
            // parts (`rails_of_gpu`); with PXN from the local GPU of the destination's rail,
            // direct from the sender's own NICs to the receiver's.
            let to = super::rails_of_gpu(self.net, d.server, d.local);
            let from = super::rails_of_gpu(self.net, a.server, a.local);
            let k = to.len().max(from.len());
            if k > 1 {
                let part = bytes / k as u64;
                for i in 0..k {
                    let dst = to[i % to.len()];
                    if relay == Relay::Pxn {
                        // The relay is the GPU the rail is dealt to (`rails_of_gpu`) where NCCL
                        // relays at all (`pxn_relay`: GPUDirect, the NIC not near the sender).
                        let net = self.net;
                        let locals = &self.comm.locals;
                        let via = net.pxn_relay(a.server, a.local, dst, locals).map(|r| {
                            locals
                                .iter()
                                .copied()
                                .find(|&g| super::rails_of_gpu(net, a.server, g).contains(&dst))
                                .unwrap_or(r)
                        });
                        self.transfer_rails(0, a, d, (Some(dst), Some(dst)), via, part)?;
                    } else {
                        let src = from[i % from.len()];
                        self.transfer_rails(0, a, d, (Some(src), Some(dst)), None, part)?;
                    }
                }
                return Ok(());
            }
        }
        match (relay, relay_of(self.net, a, d)) {
            (Relay::Pxn, Some((via, rail))) => {
                self.transfer_in(0, a, d, Some(rail), Some(via), bytes)
            }
            (Relay::PxnStaged, Some((via, _))) => {
                let hop = Gpu::new(a.server, via);
                self.transfer_in(0, a, hop, None, None, bytes)?;
                self.transfer_in(1, hop, d, None, None, bytes)
            }
            // Between servers on one rail, staging puts the network hop in the second phase.
            (Relay::PxnStaged, None) if a.server != d.server => {
                self.transfer_in(1, a, d, None, None, bytes)
            }
            _ => self.transfer_in(0, a, d, None, None, bytes),
        }
    }

    /// Adds a transfer of `bytes` from GPU `a` to GPU `b`. Between servers it leaves through NIC
    /// `rail` (default: `a`'s nearest) and arrives through the same rail's NIC, or `b`'s nearest
    /// when `rail` is `None`; with `via` (a local index of a GPU in `a`'s server), it first crosses
    /// NVLink to that GPU and leaves from there, hops pipelined (PXN, [`Relay::Pxn`]).
    pub fn transfer(
        &mut self,
        a: Gpu,
        b: Gpu,
        rail: Option<u32>,
        via: Option<u32>,
        bytes: u64,
    ) -> Result<(), CollectiveError> {
        self.transfer_in(0, a, b, rail, via, bytes)
    }

    /// [`StepBuilder::transfer`] into phase `phase`.
    pub(super) fn transfer_in(
        &mut self,
        phase: usize,
        a: Gpu,
        b: Gpu,
        rail: Option<u32>,
        via: Option<u32>,
        bytes: u64,
    ) -> Result<(), CollectiveError> {
        self.transfer_rails(phase, a, b, (rail, rail), via, bytes)
    }

    /// [`StepBuilder::transfer_in`] leaving through rail `rails.0` and arriving through rail
    /// `rails.1` (each by default the GPU's own NIC).
    fn transfer_rails(
        &mut self,
        phase: usize,
        a: Gpu,
        b: Gpu,
        rails: (Option<u32>, Option<u32>),
        via: Option<u32>,
        bytes: u64,
    ) -> Result<(), CollectiveError> {
        let rail = rails.0;
        self.transfers = self.transfers.wrapping_add(1);
        if self.transfers.is_multiple_of(CANCEL_EVERY_TRANSFERS) {
            self.cancel.check()?;
        }
        let net = self.net;
        let (sa, sb) = (&net.servers[a.server], &net.servers[b.server]);
        let (ga, gb) = (sa.gpus[a.local as usize], sb.gpus[b.local as usize]);
        self.path.clear();
        if a.server == b.server {
            let mut path = std::mem::take(&mut self.path);
            let lat = net.intra_path(ga, gb, a.server, &mut path);
            self.add(phase, &path, bytes, lat, Weight::ONE)?;
            self.path = path;
            return Ok(());
        }
        let conn = self.conn;
        self.conn += 1;
        let mut path = std::mem::take(&mut self.path);
        let mut lat = Time::ZERO;
        let mut from = ga;
        // Out through a NIC the GPU is not near: over NVLink to a GPU that is, as NCCL does.
        let via = via
            .or_else(|| rail.and_then(|r| net.pxn_relay(a.server, a.local, r, &self.comm.locals)));
        if let Some(p) = via.filter(|&p| p != a.local) {
            let pg = sa.gpus[p as usize];
            lat += net.intra_path(ga, pg, a.server, &mut path);
            from = pg;
        }
        let src_rail = rail.unwrap_or(sa.nic_of_gpu[a.local as usize]);
        let dst_rail = rails.1.unwrap_or(sb.nic_of_gpu[b.local as usize]);
        let plane = conn % net.fabric.meta.planes.max(1);
        let (Some((_, sp)), Some((_, dp))) = (
            net.nic_port(a.server, src_rail, plane),
            net.nic_port(b.server, dst_rail, plane),
        ) else {
            self.fail(RouteFailure {
                src: net.fabric.node(from).name.clone(),
                dst: net.fabric.node(gb).name.clone(),
                reason: "every NIC cable of a server is down".into(),
            });
            self.path = path;
            return Ok(());
        };
        let snic = net.fabric.port(sp).node;
        let dnic = net.fabric.port(dp).node;
        lat += net.pcie_path_memo(&mut self.pcie, from, snic, a.server, &mut path);
        let head = path.len();
        let mut routes = std::mem::take(&mut self.routes);
        routes.clear();
        if let Err(e) = self.router.route_into(net, sp, dp, conn, &mut routes) {
            self.fail(e);
            self.routes = routes;
            self.path = path;
            return Ok(());
        }
        for (i, part) in routes.bytes(bytes).enumerate() {
            path.truncate(head);
            let mut l = lat + net.network_path(sp, routes.path(i), &mut path);
            l += net.pcie_path_memo(&mut self.pcie, dnic, gb, b.server, &mut path);
            self.add(phase, &path, part, l, routes.weight(i))?;
        }
        self.routes = routes;
        self.path = path;
        Ok(())
    }

    pub(super) fn fail(&mut self, e: RouteFailure) {
        self.failure_count += 1;
        if self.failures.len() < 5 {
            self.failures.push(e);
        }
    }

    /// Runs the step: seconds per byte of the slowest edge, and what limits it.
    pub fn finish(self, algorithm: &dyn CollectiveAlgorithm) -> Result<StepModel, CollectiveError> {
        if self.failure_count > 0 {
            return Err(CollectiveError::Routes {
                failures: self.failures,
                total: self.failure_count,
            });
        }
        // Flows the fabric cannot tell apart are simulated as classes where routes depend on the
        // structure alone and no link is down; elsewhere (ECMP, imported routes, failures) flow by
        // flow, as before.
        let by_class = self.router.structural() && !self.net.any_failed();
        // Phases run one after the other: their times and latencies add; the slowest names the
        // bottleneck.
        let mut secs = 0.0;
        let mut latency = Time::ZERO;
        let mut slowest: Option<(Time, &StepPhase, Option<Quotient>)> = None;
        let mut classes = None;
        // Counted phases: timed and their bottleneck found from the counts.
        let mut counted: Option<(Time, Bottleneck)> = None;
        let mut exact = true;
        for ph in self.phases.iter().filter(|p| p.represented > 0) {
            if let Some(c) = &ph.counted {
                let Some((makespan, r, flows)) = c.makespan(self.net) else {
                    continue;
                };
                if let Err(past) = makespan.checked() {
                    return Err(CollectiveError::PastClock {
                        what: format!(
                            "one step of {} ({STEP_CHUNK} bytes a flow)",
                            algorithm.name()
                        ),
                        past,
                        bottleneck: Some(self.counted_bottleneck(r, flows)),
                    });
                }
                exact &= c.min_bytes == c.max_bytes;
                secs += makespan.as_secs_f64();
                latency += ph.latency;
                if counted.as_ref().is_none_or(|(t, _)| makespan > *t) {
                    counted = Some((makespan, self.counted_bottleneck(r, flows)));
                }
                continue;
            }
            let q = match self.fold {
                Some(_) => Some(ph.folded_quotient(self.cancel)?),
                None => ph.quotient(by_class, self.cancel)?,
            };
            if let Some(q) = &q {
                *classes.get_or_insert(0) += q.classes();
            }
            let makespan = ph.makespan_by(q.as_ref(), self.cancel)?;
            if let Err(past) = makespan.checked() {
                let rates = ph.rates_by(q.as_ref(), self.cancel)?;
                return Err(CollectiveError::PastClock {
                    what: format!(
                        "one step of {} ({STEP_CHUNK} bytes a flow)",
                        algorithm.name()
                    ),
                    past,
                    bottleneck: self.phase_bottleneck(ph, &rates),
                });
            }
            secs += makespan.as_secs_f64();
            latency += ph.latency;
            if slowest.as_ref().is_none_or(|(t, _, _)| makespan > *t) {
                slowest = Some((makespan, ph, q));
            }
        }
        let bottleneck = match slowest {
            _ if self.count => counted.map(|(_, b)| b),
            Some((_, ph, q)) => {
                let rates = ph.rates_by(q.as_ref(), self.cancel)?;
                self.phase_bottleneck(ph, &rates)
            }
            None => None,
        };
        Ok(StepModel {
            algorithm: algorithm.name(),
            nccl_algorithm: algorithm.nccl_algorithm(),
            secs_per_byte: secs / STEP_CHUNK as f64,
            path_latency: latency,
            flows: self.flows(),
            classes,
            counted: self.count.then_some(Counting { exact }),
            bottleneck,
        })
    }
}

impl StepBuilder<'_, '_> {
    /// Resource `r` as the bottleneck of a counted phase, crossed by `flows` flows.
    fn counted_bottleneck(&self, r: u32, flows: u32) -> Bottleneck {
        Bottleneck {
            resource: self.net.describe(r),
            capacity_gbs: self.net.capacity(r) / 1e9,
            flows,
        }
    }

    /// The bottleneck of phase `ph` at `rates`, flow by flow or folded.
    fn phase_bottleneck(&self, ph: &StepPhase, rates: &[f64]) -> Option<Bottleneck> {
        match &self.fold {
            None => bottleneck_at(self.net, &ph.w, rates, &ph.paths, &ph.offsets),
            Some(fold) => bottleneck_folded(self.net, fold, ph, rates),
        }
    }
}

/// What one worker of [`lay_out_counted`] did: its builder (counts or bounds), the route failures
/// of each chunk that had any (chunk, the first few, how many), the error that stopped it.
pub(super) struct ChunkWork<'n, 'f> {
    pub(super) builder: StepBuilder<'n, 'f>,
    pub(super) failures: Vec<(usize, Vec<RouteFailure>, usize)>,
    pub(super) error: Option<(usize, CollectiveError)>,
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
pub(super) fn source_server(net: &FabricNet<'_>, path: &[u32]) -> Option<u32> {
    let &r = path.first()?;
    let l = net.fabric.links.get(r as usize / 2)?;
    let end = if r.is_multiple_of(2) { l.a } else { l.b };
    net.fabric.port_node(end).server
}
