//! Jobs that run together on one fabric, each step simulated by the one collective model.
//!
//! # Method
//!
//! Each job's step is first simulated alone on the whole fabric, on its own servers
//! ([`railyard_train::fabric_timer::simulate_placed_step`]: the timer `train` uses, with the
//! job's ranks on its servers), which gives its step, the seconds it spends communicating and
//! the bytes one step puts on every directed network link (its routes as the router takes them).
//!
//! Then every job's step is simulated again on the fabric as the other jobs leave it: on each
//! link a job shares, the others' traffic runs at its rate — bytes per step over the seconds
//! they communicate (`Overlap::Aligned`: their collectives run whenever this job's do, the
//! worst case and the "all jobs' collectives run together") or over their whole step
//! (`Overlap::Averaged`: spread evenly over the step) — and the link keeps what that leaves of
//! its capacity, but never less than an equal share among the jobs on it (max-min fairness
//! gives a job that wants more at least that; Bertsekas & Gallager, *Data Networks*, §6.5.2).
//! The engine then shares each link among the job's own flows as it always does. A slower
//! step lowers a job's rate, so the rounds repeat (every job from the previous round's rates, so
//! the order of the jobs does not matter) until no step moves by more than 1e-4 of itself,
//! or [`MAX_ROUNDS`] rounds.
//!
//! A link no other job crosses keeps its capacity; a job whose links no other job crosses is
//! simulated once: its shared step is its step alone, to the bit.

use super::error::JobsError;
use crate::train::StepSetup;
use railyard_sim::fabric_net::RoutedNet;
use railyard_train::fabric_timer::{
    simulate_placed_step, FabricTimer, Placed, PlacedOp, TrainError,
};
use railyard_train::model::Model;
use railyard_train::parallel::Parallelism;
use railyard_train::step::{Breakdown, CommTimer, Op};
use std::collections::BTreeMap;

/// Rounds of re-simulation at most.
pub const MAX_ROUNDS: usize = 4;

/// How the other jobs' traffic lines up in time with a job's own (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlap {
    #[default]
    Aligned,
    Averaged,
}

impl Overlap {
    pub const NAMES: [&'static str; 2] = ["aligned", "averaged"];

    pub fn parse(s: &str) -> Option<Overlap> {
        match s {
            "aligned" => Some(Overlap::Aligned),
            "averaged" => Some(Overlap::Averaged),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Aligned => "aligned",
            Overlap::Averaged => "averaged",
        }
    }
}

/// What a placed job runs, its layout settled for its GPUs.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Train { model: Box<Model>, par: Parallelism },
    Traffic { op: Op, bytes: u64 },
}

/// A job's step on the fabric and what it puts on the links.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    pub step_s: f64,
    /// Seconds of the step spent communicating (every operation, hidden or not).
    pub comm_s: f64,
    /// The training step (`None` for traffic).
    pub breakdown: Option<Breakdown>,
    /// Bytes per step on each directed network resource.
    pub bytes: BTreeMap<u32, f64>,
    /// The step's operations, to put its traffic on other servers (`placed_resource_bytes`).
    pub ops: Vec<PlacedOp>,
}

/// A link a job shares with others, and how much of it they take.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Contended {
    /// The direction of the link: `su1-leaf1 -> spine3 (leaf-spine)`.
    pub link: String,
    /// The other jobs on it.
    pub jobs: Vec<String>,
    pub capacity_gbs: f64,
    /// What the others' traffic takes, GB/s, and what the job had left.
    pub others_gbs: f64,
    pub left_gbs: f64,
}

/// A job's step with the others running.
#[derive(Debug, Clone, PartialEq)]
pub struct Shared {
    pub load: Load,
    /// Directed links it shares with another job, busiest first.
    pub contended: Vec<Contended>,
}

/// One job running: what, where (servers in rank order), its name and its step alone.
#[derive(Debug, Clone)]
pub struct Running<'a> {
    pub name: &'a str,
    pub work: &'a Resolved,
    pub servers: &'a [usize],
    pub alone: &'a Load,
}

/// A job's step on `servers` with the network's capacities as they stand.
pub fn step_on(
    routed: &RoutedNet<'_>,
    setup: &StepSetup,
    work: &Resolved,
    servers: &[usize],
) -> Result<Load, JobsError> {
    let at = Placed {
        net: &routed.net,
        router: &routed.router,
        catalog: setup.catalog,
        relay: setup.relay,
        servers,
    };
    match work {
        Resolved::Train { model, par } => {
            let p = simulate_placed_step(&at, model, par, &setup.step).map_err(JobsError::Train)?;
            Ok(Load {
                step_s: p.breakdown.step_time_s,
                comm_s: p.comm_s,
                breakdown: Some(p.breakdown),
                bytes: p.resource_bytes,
                ops: p.ops,
            })
        }
        Resolved::Traffic { op, bytes } => {
            let gps = routed.net.fabric.meta.gpus_per_server;
            let timer = FabricTimer::placed(at.net, at.router, gps, at.relay, servers);
            let ranks: Vec<Vec<u32>> = vec![(0..servers.len() as u32 * gps).collect()];
            let comm = |e| JobsError::Train(TrainError::Comm(e));
            let t = timer.seconds(*op, &ranks, *bytes).map_err(comm)?;
            let b = timer.resource_bytes(*op, &ranks, *bytes).map_err(comm)?;
            Ok(Load {
                step_s: t,
                comm_s: t,
                breakdown: None,
                bytes: b,
                ops: vec![PlacedOp {
                    op: *op,
                    groups: ranks,
                    bytes: *bytes,
                    calls_per_step: 1.0,
                }],
            })
        }
    }
}

/// Every running job's step with the others on the fabric (module docs). `routed`'s capacities
/// are restored before it returns.
pub fn run_together(
    routed: &mut RoutedNet<'_>,
    setup: &StepSetup,
    jobs: &[Running],
    overlap: Overlap,
) -> Result<Vec<Shared>, JobsError> {
    run_rounds(routed, setup, jobs, overlap, MAX_ROUNDS, None, &mut 0)
}

/// [`run_together`] with at most `rounds` rounds of re-simulation, re-simulating only the jobs
/// `only` names (the others keep the loads they come with: `Running::alone` is where every job
/// starts), counting the steps it simulates into `steps`.
pub fn run_rounds(
    routed: &mut RoutedNet<'_>,
    setup: &StepSetup,
    jobs: &[Running],
    overlap: Overlap,
    rounds: usize,
    only: Option<&std::collections::BTreeSet<usize>>,
    steps: &mut usize,
) -> Result<Vec<Shared>, JobsError> {
    let links = Links::of(routed, jobs);
    let mut now: Vec<Load> = jobs.iter().map(|j| j.alone.clone()).collect();
    let mut left_of: Vec<BTreeMap<u32, f64>> = vec![BTreeMap::new(); jobs.len()];
    let redo = |i: usize| links.shares(jobs, i) && only.is_none_or(|o| o.contains(&i));
    for _ in 0..rounds.max(1) {
        let mut next = now.clone();
        for i in (0..jobs.len()).filter(|&i| redo(i)) {
            let left = links.left_for(i, jobs, &now, overlap);
            for (&r, &keep) in &left {
                routed
                    .net
                    .set_capacity(r, keep)
                    .map_err(|e| JobsError::Train(TrainError::Net(e)))?;
            }
            let run = step_on(routed, setup, jobs[i].work, jobs[i].servers);
            *steps += 1;
            for &r in left.keys() {
                let _ = routed.net.set_capacity(r, links.line[&r]);
            }
            next[i] = run?;
            left_of[i] = left;
        }
        let moved = now
            .iter()
            .zip(&next)
            .map(|(a, b)| ((b.step_s - a.step_s) / a.step_s.max(f64::MIN_POSITIVE)).abs())
            .fold(0.0, f64::max);
        now = next;
        if moved <= 1e-4 {
            break;
        }
    }
    Ok(now
        .into_iter()
        .zip(&left_of)
        .enumerate()
        .map(|(i, (load, left))| Shared {
            load,
            contended: links.contended(routed, jobs, i, left),
        })
        .collect())
}

/// The links the running jobs cross: which jobs cross each, and its capacity alone.
struct Links {
    on: BTreeMap<u32, Vec<usize>>,
    line: BTreeMap<u32, f64>,
}

impl Links {
    fn of(routed: &RoutedNet<'_>, jobs: &[Running]) -> Links {
        let mut on: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (j, job) in jobs.iter().enumerate() {
            for (&r, &b) in &job.alone.bytes {
                if b > 0.0 {
                    on.entry(r).or_default().push(j);
                }
            }
        }
        let line = on.keys().map(|&r| (r, routed.net.capacity(r))).collect();
        Links { on, line }
    }

    /// Whether job `i` crosses a link another job crosses.
    fn shares(&self, jobs: &[Running], i: usize) -> bool {
        jobs[i].alone.bytes.keys().any(|r| self.on[r].len() > 1)
    }

    /// What job `i` has left of each link it shares, the others running at their rates in `now`
    /// (module docs): what they leave, never less than an equal share.
    fn left_for(
        &self,
        i: usize,
        jobs: &[Running],
        now: &[Load],
        overlap: Overlap,
    ) -> BTreeMap<u32, f64> {
        let rate = |j: usize, r: u32| -> f64 {
            let l = &now[j];
            let over = match overlap {
                Overlap::Aligned => l.comm_s,
                Overlap::Averaged => l.step_s,
            };
            let b = l.bytes.get(&r).copied().unwrap_or(0.0);
            if over > 0.0 {
                b / over
            } else {
                0.0
            }
        };
        let mut left = BTreeMap::new();
        for &r in jobs[i].alone.bytes.keys() {
            let others: Vec<usize> = self.on[&r].iter().copied().filter(|&j| j != i).collect();
            if others.is_empty() {
                continue;
            }
            let c = self.line[&r];
            let taken: f64 = others.iter().map(|&j| rate(j, r)).sum();
            left.insert(r, (c - taken).max(c / (others.len() + 1) as f64));
        }
        left
    }

    /// The links job `i` shared, with what it had left of each: busiest first.
    fn contended(
        &self,
        routed: &RoutedNet<'_>,
        jobs: &[Running],
        i: usize,
        left: &BTreeMap<u32, f64>,
    ) -> Vec<Contended> {
        let mut contended: Vec<Contended> = left
            .iter()
            .map(|(&r, &keep)| Contended {
                link: routed.net.describe(r),
                jobs: self.on[&r]
                    .iter()
                    .filter(|&&j| j != i)
                    .map(|&j| jobs[j].name.to_string())
                    .collect(),
                capacity_gbs: self.line[&r] / 1e9,
                others_gbs: (self.line[&r] - keep).max(0.0) / 1e9,
                left_gbs: keep / 1e9,
            })
            .collect();
        contended.sort_by(|a, b| {
            a.left_gbs
                .total_cmp(&b.left_gbs)
                .then_with(|| a.link.cmp(&b.link))
        });
        contended
    }
}
