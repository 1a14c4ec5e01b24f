//! Many jobs on one fabric (`railyard jobs`): a job mix placed by a scheduler's policy, every
//! job's step simulated alone and with the others on the shared links, through the one collective
//! model (share.rs); and a cluster's arrivals and departures replayed (replay.rs).
//!
//! - error.rs: why a mix or a replay could not run.
//! - mix.rs: the job-mix file.
//! - place.rs: the fabric as Slurm's tree, and the placement policies (`Placement`).
//! - share.rs: jobs that run together, each step re-simulated on what the others leave.
//! - checkpoint.rs: a training job's checkpoints and data loading, and what they do to its step.
//! - replay.rs, trace.rs: arrivals and departures over time, and the generator of them.

pub mod checkpoint;
pub mod error;
pub mod mix;
pub mod output;
pub mod place;
pub mod replay;
pub mod share;
pub mod trace;

pub use error::JobsError;

use crate::train::StepSetup;
use mix::{Job, Work};
use place::{Placement, Topology};
use railyard_sim::fabric_net::RoutedNet;
use railyard_sim::routing::RoutingConfig;
use railyard_train::fabric_timer::TrainError;
use share::{run_together, step_on, Contended, Load, Overlap, Resolved, Running, Shared};
use std::collections::BTreeSet;

/// `job`'s work with its layout settled for its GPUs on `setup`'s fabric (fitted to the GPU's
/// memory where the mix asks for no layout, as `train` does).
pub fn resolve(setup: &StepSetup, job: &Job) -> Result<Resolved, JobsError> {
    let f = setup.fabric;
    let gps = u64::from(f.meta.gpus_per_server);
    let total = crate::train::gpus(f, &[]);
    if !job.gpus.is_multiple_of(gps) || job.gpus > total {
        return Err(JobsError::Job {
            job: job.name.clone(),
            message: format!(
                "gpus: {} is not whole servers of this design ({gps} GPUs each, {total} in all)",
                job.gpus
            ),
        });
    }
    Ok(match &job.work {
        Work::Train { model, layout } => {
            let gpu = setup.catalog.gpus.get(&f.meta.gpu_model);
            let memory = gpu.map_or(f64::INFINITY, |g| g.memory_bytes());
            let r = layout
                .resolve_fitted(job.gpus, f.meta.gpus_per_server, model, memory)
                .map_err(|error| JobsError::Layout {
                    job: job.name.clone(),
                    error,
                })?;
            Resolved::Train {
                model: model.clone(),
                par: r.par,
            }
        }
        Work::Traffic { op, bytes } => Resolved::Traffic {
            op: *op,
            bytes: *bytes,
        },
    })
}

/// One job's result in a mix.
#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    pub name: String,
    pub label: String,
    pub gpus: u64,
    pub work: Resolved,
    /// Its servers, in rank order, and the leaf groups they span.
    pub servers: Vec<usize>,
    pub leaves: usize,
    pub alone: Load,
    /// Its step in the phase where it ran slowest, and that phase (index into `MixRun::phases`).
    pub shared: Shared,
    pub phase: usize,
    /// Its checkpoints (`checkpoint_every`) and data loading, where it writes them.
    pub checkpoint: Option<checkpoint::Checkpoint>,
}

impl JobResult {
    /// Shared step over alone.
    pub fn slowdown(&self) -> f64 {
        self.shared.load.step_s / self.alone.step_s
    }
}

/// A span of time in which the same jobs run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Phase {
    pub from_s: f64,
    pub to_s: Option<f64>,
    pub jobs: Vec<String>,
}

/// A mix run under one placement policy.
#[derive(Debug, Clone, PartialEq)]
pub struct MixRun {
    pub policy: &'static str,
    pub overlap: Overlap,
    pub phases: Vec<Phase>,
    pub jobs: Vec<JobResult>,
}

/// Runs the mix `jobs` on `setup`'s fabric: jobs placed as they start (in start order, then the
/// file's; explicit servers first), every phase's jobs run together, each job's slowest phase
/// kept. A job that no placement fits when it starts is an error naming it and what is free.
pub fn run_mix(
    setup: &StepSetup,
    jobs: &[Job],
    (policy, storage): (&mut dyn Placement, Option<&checkpoint::Storage>),
    overlap: Overlap,
) -> Result<MixRun, JobsError> {
    let f = setup.fabric;
    let topo = Topology::of(f).map_err(|e| JobsError::Topology(e.0))?;
    let mut routed = RoutedNet::new(
        f,
        setup.catalog,
        setup.net,
        setup.routing,
        RoutingConfig::default(),
    )
    .map_err(|e| JobsError::Train(TrainError::Net(e)))?;
    let work: Vec<Resolved> = jobs
        .iter()
        .map(|j| resolve(setup, j))
        .collect::<Result<_, _>>()?;
    let mut times: Vec<f64> = jobs
        .iter()
        .flat_map(|j| std::iter::once(j.start).chain(j.end))
        .collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    let mut free = vec![true; f.servers.len()];
    let mut placed: Vec<Option<Vec<usize>>> = vec![None; jobs.len()];
    let mut alone: Vec<Option<Load>> = vec![None; jobs.len()];
    let mut best: Vec<Option<(Shared, usize)>> = vec![None; jobs.len()];
    let mut phases = Vec::new();
    let gps = f.meta.gpus_per_server as usize;
    for (p, &t) in times.iter().enumerate() {
        for (j, job) in jobs.iter().enumerate() {
            if job.end == Some(t) {
                for &s in placed[j].iter().flatten() {
                    free[s] = true;
                }
            }
        }
        let mut starting: Vec<usize> = (0..jobs.len()).filter(|&j| jobs[j].start == t).collect();
        starting.sort_by_key(|&j| jobs[j].servers.is_none());
        for j in starting {
            let servers = place_one(&topo, &mut free, &jobs[j], gps, policy)?;
            alone[j] = Some(step_on(&routed, setup, &work[j], &servers)?);
            placed[j] = Some(servers);
        }
        let running: Vec<usize> = (0..jobs.len())
            .filter(|&j| jobs[j].start <= t && jobs[j].end.is_none_or(|e| e > t))
            .collect();
        phases.push(Phase {
            from_s: t,
            to_s: times.get(p + 1).copied(),
            jobs: running.iter().map(|&j| jobs[j].name.clone()).collect(),
        });
        if running.is_empty() {
            continue;
        }
        let together: Vec<Running> = running
            .iter()
            .map(|&j| Running {
                name: &jobs[j].name,
                work: &work[j],
                servers: placed[j].as_deref().unwrap_or(&[]),
                alone: alone[j].as_ref().expect("placed jobs have a step alone"),
            })
            .collect();
        let shared = run_together(&mut routed, setup, &together, overlap)?;
        for (&j, s) in running.iter().zip(shared) {
            let slower = best[j]
                .as_ref()
                .is_none_or(|(b, _)| s.load.step_s > b.load.step_s);
            if slower {
                best[j] = Some((s, p));
            }
        }
    }
    let mut checkpoints = Vec::with_capacity(jobs.len());
    for (j, job) in jobs.iter().enumerate() {
        let (Some(every), Some((_, phase))) = (job.checkpoint_every, &best[j]) else {
            checkpoints.push(None);
            continue;
        };
        let storage = storage.ok_or_else(|| JobsError::Job {
            job: job.name.clone(),
            message: format!("checkpoint_every: {}", checkpoint::NO_STORAGE),
        })?;
        // The jobs running with it in its slowest phase.
        let running = |k: usize| Running {
            name: &jobs[k].name,
            work: &work[k],
            servers: placed[k].as_deref().unwrap_or(&[]),
            alone: alone[k].as_ref().expect("placed jobs have a step alone"),
        };
        let others: Vec<Running> = (0..jobs.len())
            .filter(|&k| k != j && phases[*phase].jobs.contains(&jobs[k].name))
            .map(running)
            .collect();
        checkpoints.push(checkpoint::checkpoint(
            &mut routed,
            setup,
            (&running(j), &others),
            every,
            storage,
        )?);
    }
    let results = jobs
        .iter()
        .zip(checkpoints)
        .enumerate()
        .map(|(j, (job, checkpoint))| {
            let servers = placed[j].clone().unwrap_or_default();
            let (shared, phase) = best[j].clone().expect("every job runs in some phase");
            JobResult {
                checkpoint,
                name: job.name.clone(),
                label: job.work.label(),
                gpus: job.gpus,
                work: work[j].clone(),
                leaves: topo.leaves_spanned(&servers),
                servers,
                alone: alone[j].clone().expect("every job is placed"),
                shared,
                phase,
            }
        })
        .collect();
    Ok(MixRun {
        policy: policy.name(),
        overlap,
        phases,
        jobs: results,
    })
}

/// The servers `job` gets: its own (checked free) or the policy's.
fn place_one(
    topo: &Topology,
    free: &mut [bool],
    job: &Job,
    gps: usize,
    policy: &mut dyn Placement,
) -> Result<Vec<usize>, JobsError> {
    let need = job.gpus as usize / gps;
    let err = |message: String| JobsError::Job {
        job: job.name.clone(),
        message,
    };
    let servers = match &job.servers {
        Some(names) => {
            let mut out = Vec::with_capacity(names.len());
            let mut seen = BTreeSet::new();
            for n in names {
                let i = topo
                    .server_names
                    .iter()
                    .position(|s| s == n)
                    .ok_or_else(|| err(format!("servers: no server `{n}` in this design")))?;
                if !seen.insert(i) {
                    return Err(err(format!("servers: `{n}` is listed twice")));
                }
                if !free[i] {
                    return Err(err(format!(
                        "servers: `{n}` is taken by another job when this one starts"
                    )));
                }
                out.push(i);
            }
            if out.len() != need {
                return Err(err(format!(
                    "servers: {} servers listed for {} GPUs ({need} servers of {gps} GPUs)",
                    out.len(),
                    job.gpus
                )));
            }
            out
        }
        None => policy.place(topo, free, need).ok_or_else(|| {
            let n = free.iter().filter(|&&x| x).count();
            err(format!(
                "no {} placement of {need} servers fits when it starts at {} s: {n} servers free",
                policy.name(),
                job.start
            ))
        })?,
    };
    for &s in &servers {
        free[s] = false;
    }
    Ok(servers)
}

/// The busiest links a job shares, at most `n`.
pub fn top_contended(s: &Shared, n: usize) -> &[Contended] {
    &s.contended[..s.contended.len().min(n)]
}

#[cfg(test)]
mod tests;
