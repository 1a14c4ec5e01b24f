//! A cluster's arrivals and departures replayed on a design (`railyard jobs --replay` or
//! `--generate`): jobs queue first come first served, each placed by the policy when it reaches
//! the head of the queue and fits; a job runs its trace duration stretched by its slowdown,
//! which the collective model gives it as the running jobs change.
//!
//! # Method
//!
//! - A job of fewer GPUs than a server shares a server with others: the server with the fewest
//!   free GPUs that still holds it (Slurm's cons_tres best fit). A larger job takes whole free
//!   servers (its GPUs rounded up to them) where the policy puts them; it trains Llama 3 8B
//!   (at most 64 GPUs) or Llama 3 70B (more), the layout fitted to the GPU's memory as `train`
//!   fits it. Jobs inside one server cross no network link and run at their own speed.
//! - GPUs idle while a job waits are counted (GPU-seconds), and apart those idle while the head
//!   job's GPUs are free in number but no placement of the policy fits them: fragmentation.
//! - Slowdown: a multi-server job's step with the others running (share.rs) over its step alone.
//!   Its remaining work (seconds alone) drains at 1 / slowdown, and finish times move when it
//!   changes. The step is simulated again only when the set of running multi-server jobs
//!   changes, and only for the jobs that share a link with one that came or went, one round
//!   each, every other job's traffic at its step as it stands (jobs far apart keep theirs: a
//!   link no changed job crosses leaves their steps as they were). A job's step alone is
//!   simulated once per placement shape (its model and layout, the lowest switch level spanning
//!   its servers, and its servers per leaf group in descending order); its bytes on each link
//!   are routed for its own servers every time (routes only, no simulation).

use super::error::JobsError;
use super::place::{Placement, Topology};
use super::share::{run_rounds, step_on, Load, Overlap, Resolved, Running};
use super::trace::TraceJob;
use crate::train::StepSetup;
use railyard_sim::fabric_net::RoutedNet;
use railyard_sim::routing::RoutingConfig;
use railyard_train::fabric_timer::{placed_resource_bytes, Placed, TrainError};
use railyard_train::model::Model;
use railyard_train::parallel::Layout;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// One job as the replay ran it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReplayJob {
    pub submit_s: f64,
    pub start_s: f64,
    pub end_s: f64,
    pub gpus: u64,
    /// Whole servers it took (0: part of one).
    pub servers: usize,
    pub duration_s: f64,
    /// Its run over its duration: 1 for a job that shared no link.
    pub slowdown: f64,
}

/// A trace replayed under one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub policy: &'static str,
    pub overlap: Overlap,
    pub jobs: Vec<ReplayJob>,
    pub makespan_s: f64,
    /// GPU-seconds the jobs held until the last arrival, and that time.
    pub busy_gpu_s: f64,
    pub arrivals_s: f64,
    /// GPU-seconds free while a job waited, and of them while the head job's GPUs were free in
    /// number but no placement fitted.
    pub idle_waiting_gpu_s: f64,
    pub unplaceable_gpu_s: f64,
    /// Steps simulated: alone (one per placement shape) and shared.
    pub alone_steps: usize,
    pub shared_steps: usize,
}

struct Net {
    work: usize,
    alone: Load,
    /// Its step as the jobs running now leave the links (`alone` when it shares none).
    now: Load,
    slow: f64,
}

struct Run {
    job: usize,
    gpus_on: Vec<(usize, u32)>,
    servers: Vec<usize>,
    remaining: f64,
    net: Option<Net>,
    /// It ran slower than alone for a while.
    slowed: bool,
}

impl Run {
    fn slow(&self) -> f64 {
        self.net.as_ref().map_or(1.0, |n| n.slow)
    }
}

/// What the replay keeps between events.
struct State<'a> {
    topo: Topology,
    routed: RoutedNet<'a>,
    works: BTreeMap<usize, (usize, Resolved)>,
    work_list: Vec<Resolved>,
    shapes: HashMap<(usize, u32, Vec<usize>), Load>,
    alone_steps: usize,
    shared_steps: usize,
}

/// Replays `trace` on `setup`'s fabric under `policy` (module docs).
pub fn replay(
    setup: &StepSetup,
    trace: &[TraceJob],
    policy: &mut dyn Placement,
    overlap: Overlap,
) -> Result<Replay, JobsError> {
    let f = setup.fabric;
    let gps = f.meta.gpus_per_server;
    let total = crate::train::gpus(f, &[]);
    if let Some((i, j)) = trace.iter().enumerate().find(|(_, j)| j.gpus > total) {
        return Err(JobsError::Job {
            job: format!("trace line {}", i + 2),
            message: format!("{} GPUs; this design has {total}", j.gpus),
        });
    }
    let routed = RoutedNet::new(
        f,
        setup.catalog,
        setup.net,
        setup.routing,
        RoutingConfig::default(),
    )
    .map_err(|e| JobsError::Train(TrainError::Net(e)))?;
    let mut st = State {
        topo: Topology::of(f).map_err(|e| JobsError::Topology(e.0))?,
        routed,
        works: BTreeMap::new(),
        work_list: Vec::new(),
        shapes: HashMap::new(),
        alone_steps: 0,
        shared_steps: 0,
    };
    let mut q = Queue {
        t: 0.0,
        next: 0,
        waiting: VecDeque::new(),
        running: Vec::new(),
        free: vec![gps; f.servers.len()],
        out: trace
            .iter()
            .map(|j| ReplayJob {
                submit_s: j.submit_s,
                start_s: f64::NAN,
                end_s: f64::NAN,
                gpus: j.gpus,
                servers: 0,
                duration_s: j.duration_s,
                slowdown: 1.0,
            })
            .collect(),
        idle_waiting: 0.0,
        unplaceable: 0.0,
        busy: 0.0,
        head_unplaceable: false,
    };
    let last_submit = trace.last().map_or(0.0, |j| j.submit_s);
    while let Some(t_next) = q.next_event(trace) {
        q.advance(t_next, total, last_submit);
        let mut changed = q.depart(trace);
        q.admit(&mut st, setup, policy, trace, &mut changed)?;
        if !changed.is_empty() {
            reshare(&mut st, setup, &mut q.running, &changed, overlap)?;
        }
    }
    if let Some(&j) = q.waiting.front() {
        return Err(JobsError::Job {
            job: format!("trace line {}", j + 2),
            message: format!(
                "{} GPUs: no {} placement fits them even on the idle design",
                trace[j].gpus,
                policy.name()
            ),
        });
    }
    let Queue {
        out,
        busy,
        idle_waiting,
        unplaceable,
        ..
    } = q;
    let makespan = out.iter().map(|j| j.end_s).fold(0.0, f64::max);
    Ok(Replay {
        policy: policy.name(),
        overlap,
        jobs: out,
        makespan_s: makespan,
        busy_gpu_s: busy,
        arrivals_s: last_submit,
        idle_waiting_gpu_s: idle_waiting,
        unplaceable_gpu_s: unplaceable,
        alone_steps: st.alone_steps,
        shared_steps: st.shared_steps,
    })
}

/// The cluster as the replay runs it: the clock, the next arrival, the jobs waiting and running,
/// every server's free GPUs, and what is counted.
struct Queue {
    t: f64,
    next: usize,
    waiting: VecDeque<usize>,
    running: Vec<Run>,
    free: Vec<u32>,
    out: Vec<ReplayJob>,
    idle_waiting: f64,
    unplaceable: f64,
    busy: f64,
    /// The head job waits with its GPUs free in number: no placement fits them.
    head_unplaceable: bool,
}

impl Queue {
    /// When the next job arrives or the first running one ends; `None` when nothing is left.
    fn next_event(&self, trace: &[TraceJob]) -> Option<f64> {
        let arrival = trace.get(self.next).map(|j| j.submit_s);
        let finish = self
            .running
            .iter()
            .map(|r| self.t + r.remaining * r.slow())
            .min_by(f64::total_cmp);
        match (arrival, finish) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(f64::INFINITY).min(b.unwrap_or(f64::INFINITY))),
        }
    }

    /// Time runs to `t_next`: idle GPUs counted, every running job's work drained.
    fn advance(&mut self, t_next: f64, total: u64, last_submit: f64) {
        let dt = t_next - self.t;
        let free: u64 = self.free.iter().map(|&g| u64::from(g)).sum();
        if !self.waiting.is_empty() {
            self.idle_waiting += free as f64 * dt;
            if self.head_unplaceable {
                self.unplaceable += free as f64 * dt;
            }
        }
        // GPU use while jobs still arrive: after the last, the tail of long jobs drains alone.
        let open = (last_submit.min(t_next) - self.t).max(0.0);
        self.busy += (total - free) as f64 * open;
        for r in &mut self.running {
            r.remaining -= dt / r.slow();
        }
        self.t = t_next;
    }

    /// The jobs whose work is done leave; returns the jobs that shared a link with one of them.
    fn depart(&mut self, trace: &[TraceJob]) -> BTreeSet<usize> {
        let mut gone: BTreeSet<u32> = BTreeSet::new();
        let mut k = 0;
        while k < self.running.len() {
            let r = &self.running[k];
            if r.remaining > 1e-9 * trace[r.job].duration_s {
                k += 1;
                continue;
            }
            let r = self.running.swap_remove(k);
            for &(s, g) in &r.gpus_on {
                self.free[s] += g;
            }
            let o = &mut self.out[r.job];
            o.end_s = self.t;
            // A job never slowed ran its duration (the sum of its stretches would round).
            o.slowdown = if r.slowed {
                ((self.t - o.start_s) / o.duration_s).max(1.0)
            } else {
                1.0
            };
            if let Some(n) = &r.net {
                gone.extend(n.alone.bytes.keys());
            }
        }
        neighbours(&self.running, &gone).into_iter().collect()
    }

    /// Arrivals join the queue; first come, first served: the head starts if it fits, else
    /// everything waits. Multi-server jobs that start join `changed`.
    fn admit(
        &mut self,
        st: &mut State,
        setup: &StepSetup,
        policy: &mut dyn Placement,
        trace: &[TraceJob],
        changed: &mut BTreeSet<usize>,
    ) -> Result<(), JobsError> {
        while self.next < trace.len() && trace[self.next].submit_s <= self.t {
            self.waiting.push_back(self.next);
            self.next += 1;
        }
        let gps = setup.fabric.meta.gpus_per_server;
        self.head_unplaceable = false;
        while let Some(&j) = self.waiting.front() {
            let Some((gpus_on, servers)) = place(st, policy, &mut self.free, trace[j].gpus, gps)
            else {
                let free: u64 = self.free.iter().map(|&g| u64::from(g)).sum();
                self.head_unplaceable = free >= trace[j].gpus;
                break;
            };
            self.waiting.pop_front();
            self.out[j].start_s = self.t;
            self.out[j].servers = servers.len();
            let net = if servers.len() >= 2 {
                changed.insert(j);
                Some(alone(st, setup, &servers, gps)?)
            } else {
                None
            };
            self.running.push(Run {
                job: j,
                gpus_on,
                servers,
                remaining: trace[j].duration_s,
                net,
                slowed: false,
            });
        }
        Ok(())
    }
}

/// Running jobs that cross any of `resources`.
fn neighbours(running: &[Run], resources: &BTreeSet<u32>) -> Vec<usize> {
    running
        .iter()
        .filter(|r| {
            r.net
                .as_ref()
                .is_some_and(|n| n.alone.bytes.keys().any(|x| resources.contains(x)))
        })
        .map(|r| r.job)
        .collect()
}

/// Where a job runs: the GPUs it takes on each server, and its whole servers (none for a job
/// inside one server).
type Granted = (Vec<(usize, u32)>, Vec<usize>);

/// A place for `gpus` GPUs: part of one server (best fit) or whole servers from the policy.
fn place(
    st: &mut State,
    policy: &mut dyn Placement,
    free: &mut [u32],
    gpus: u64,
    gps: u32,
) -> Option<Granted> {
    if gpus < u64::from(gps) {
        let g = gpus as u32;
        let s = (0..free.len())
            .filter(|&s| free[s] >= g)
            .min_by_key(|&s| (free[s], s))?;
        free[s] -= g;
        return Some((vec![(s, g)], Vec::new()));
    }
    let need = gpus.div_ceil(u64::from(gps)) as usize;
    let whole: Vec<bool> = free.iter().map(|&g| g == gps).collect();
    let servers = policy.place(&st.topo, &whole, need)?;
    for &s in &servers {
        free[s] = 0;
    }
    Some((servers.iter().map(|&s| (s, gps)).collect(), servers))
}

/// The model a multi-server job of the trace trains (module docs), laid out for its GPUs.
fn work_for(
    st: &mut State,
    setup: &StepSetup,
    servers: usize,
    gps: u32,
) -> Result<usize, JobsError> {
    if let Some((i, _)) = st.works.get(&servers) {
        return Ok(*i);
    }
    let gpus = servers as u64 * u64::from(gps);
    let name = if gpus <= 64 {
        "llama3-8b"
    } else {
        "llama3-70b"
    };
    let model = Model::preset(name).map_err(|e| JobsError::Topology(e.to_string()))?;
    let memory = setup
        .catalog
        .gpus
        .get(&setup.fabric.meta.gpu_model)
        .map_or(f64::INFINITY, |g| g.memory_bytes());
    let r = Layout::unasked()
        .resolve_fitted(gpus, gps, &model, memory)
        .map_err(|error| JobsError::Layout {
            job: format!("a {gpus}-GPU {name} job of the trace"),
            error,
        })?;
    let w = Resolved::Train {
        model: Box::new(model),
        par: r.par,
    };
    let i = st.work_list.len();
    st.work_list.push(w.clone());
    st.works.insert(servers, (i, w));
    Ok(i)
}

/// A multi-server job's step alone on `servers`: simulated once per placement shape, its bytes
/// routed for these servers.
fn alone(st: &mut State, setup: &StepSetup, servers: &[usize], gps: u32) -> Result<Net, JobsError> {
    let work = work_for(st, setup, servers.len(), gps)?;
    let mut per_leaf: BTreeMap<usize, usize> = BTreeMap::new();
    for &s in servers {
        *per_leaf.entry(st.topo.leaf_of[s]).or_default() += 1;
    }
    let mut counts: Vec<usize> = per_leaf.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let key = (work, st.topo.span_level(servers), counts);
    let load = match st.shapes.get(&key) {
        Some(shape) => {
            let at = Placed {
                net: &st.routed.net,
                router: &st.routed.router,
                catalog: setup.catalog,
                relay: setup.relay,
                servers,
            };
            let bytes = placed_resource_bytes(&at, &shape.ops)
                .map_err(|e| JobsError::Train(TrainError::Comm(e)))?;
            Load {
                bytes,
                ..shape.clone()
            }
        }
        None => {
            let load = step_on(&st.routed, setup, &st.work_list[work], servers)?;
            st.alone_steps += 1;
            st.shapes.insert(key, load.clone());
            load
        }
    };
    Ok(Net {
        work,
        now: load.clone(),
        alone: load,
        slow: 1.0,
    })
}

/// Re-simulates the running multi-server jobs that share a link with any of `changed` (and
/// those jobs themselves), one round, every other job's traffic at its step as it stands.
fn reshare(
    st: &mut State,
    setup: &StepSetup,
    running: &mut [Run],
    changed: &BTreeSet<usize>,
    overlap: Overlap,
) -> Result<(), JobsError> {
    let nets: Vec<usize> = (0..running.len())
        .filter(|&k| running[k].net.is_some())
        .collect();
    let net = |k: usize| running[k].net.as_ref().expect("network job");
    // The resources of the jobs that changed; the jobs crossing them are redone.
    let touched: BTreeSet<u32> = nets
        .iter()
        .filter(|&&k| changed.contains(&running[k].job))
        .flat_map(|&k| net(k).alone.bytes.keys().copied())
        .collect();
    let redo: BTreeSet<usize> = nets
        .iter()
        .enumerate()
        .filter(|(_, &k)| {
            changed.contains(&running[k].job)
                || net(k).alone.bytes.keys().any(|r| touched.contains(r))
        })
        .map(|(i, _)| i)
        .collect();
    if redo.is_empty() {
        return Ok(());
    }
    let together: Vec<Running> = nets
        .iter()
        .map(|&k| Running {
            name: "",
            work: &st.work_list[net(k).work],
            servers: &running[k].servers,
            alone: &net(k).now,
        })
        .collect();
    let shared = run_rounds(
        &mut st.routed,
        setup,
        &together,
        overlap,
        1,
        Some(&redo),
        &mut st.shared_steps,
    )?;
    for (i, s) in shared.into_iter().enumerate() {
        if !redo.contains(&i) {
            continue;
        }
        if let Some(n) = running[nets[i]].net.as_mut() {
            // A job left sharing nothing runs as alone.
            n.now = if s.contended.is_empty() {
                n.alone.clone()
            } else {
                s.load
            };
            n.slow = n.now.step_s / n.alone.step_s;
            running[nets[i]].slowed |= n.slow > 1.0;
        }
    }
    Ok(())
}
