//! What `railyard jobs --mix` prints: per placement policy, every job's step alone and shared,
//! its slowdown and the links it shares; as a table or as JSON.

use super::share::Resolved;
use super::{top_contended, MixRun};
use railyard_fabric::text::thousands;
use railyard_fabric::Fabric;
use serde_json::{json, Value};
use std::fmt::Write;

/// Shared links listed per job in the text (JSON lists every one's count and these).
pub const LINKS_SHOWN: usize = 3;

/// What a policy is, in the field's words.
pub fn policy_words(name: &str) -> &'static str {
    match name {
        "topology" => {
            "Slurm topology/tree best fit: the lowest switch that fits, best-fit leaves under it"
        }
        "contiguous" => "the first run of consecutive free servers, scalable unit by scalable unit",
        "scattered" => "free servers at random (seeded)",
        _ => "",
    }
}

fn layout_words(w: &Resolved) -> String {
    match w {
        Resolved::Train { par, .. } => {
            let mut s = format!("TP {} PP {} DP {}", par.tp, par.pp, par.dp);
            if par.ep > 1 {
                let _ = write!(s, " EP {}", par.ep);
            }
            s
        }
        Resolved::Traffic { .. } => "one communicator".into(),
    }
}

/// The header line: the design and how the runs were made.
pub fn header(f: &Fabric, jobs: usize, routing: &str, overlap: &str) -> String {
    let gpus = f.servers.len() as u64 * u64::from(f.meta.gpus_per_server);
    format!(
        "railyard jobs: {jobs} jobs on {} ({} servers, {} GPUs, {}), routing {routing}, overlap {overlap}\n",
        f.meta.name,
        thousands(f.servers.len() as f64),
        thousands(gpus as f64),
        design_words(f),
    )
}

/// The topology, with the leaves' oversubscription where one was asked for: `rail-optimized 2:1`.
pub fn design_words(f: &Fabric) -> String {
    match f.meta.oversubscription_requested {
        Some(r) if r > 1.0 => format!("{} {}:1", f.meta.topology, railyard_catalog::number(r)),
        _ => f.meta.topology.clone(),
    }
}

/// The table of one policy's run.
pub fn text(run: &MixRun) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nplacement {} ({})",
        run.policy,
        policy_words(run.policy)
    );
    out.push_str(&jobs_table(run));
    shared_links_text(run, &mut out);
    phases_text(run, &mut out);
    out.push_str(&checkpoint_text(run));
    out
}

/// A row per job: its layout, GPUs and leaf groups, its step alone and shared, the slowdown.
fn jobs_table(run: &MixRun) -> String {
    let mut out = String::new();
    let rows: Vec<[String; 10]> = run
        .jobs
        .iter()
        .map(|j| {
            [
                j.name.clone(),
                j.label.clone(),
                layout_words(&j.work),
                thousands(j.gpus as f64),
                thousands(j.leaves as f64),
                format!("{:.4}", j.alone.step_s),
                format!("{:.4}", j.shared.load.step_s),
                format!("{:.3}x", j.slowdown()),
                thousands(j.shared.contended.len() as f64),
                format!("{}", j.phase + 1),
            ]
        })
        .collect();
    let head = [
        "job",
        "runs",
        "layout",
        "GPUs",
        "leaf groups",
        "alone s",
        "shared s",
        "slowdown",
        "shared links",
        "phase",
    ];
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (k, (c, w)) in cells.iter().zip(&width).enumerate() {
            if k < 3 {
                let _ = write!(s, "{c:<w$}  ");
            } else {
                let _ = write!(s, "{c:>w$}  ");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    out.push_str(&line(head.to_vec()));
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

/// Each job's busiest shared links, links left alike with the same jobs on one line.
fn shared_links_text(run: &MixRun, out: &mut String) {
    let busiest: Vec<_> = run
        .jobs
        .iter()
        .filter(|j| !j.shared.contended.is_empty())
        .collect();
    if busiest.is_empty() {
        out.push_str("no job shares a link with another: every step is its step alone\n");
    } else {
        out.push_str("busiest shared links (GB/s the job had left of the link's capacity):\n");
        for j in busiest {
            // Links left alike with the same jobs (a unit's rail leaves, as a rule) are one line.
            let mut shown = 0;
            let mut k = 0;
            let c = &j.shared.contended;
            while k < c.len() && shown < LINKS_SHOWN {
                let same = c[k..]
                    .iter()
                    .take_while(|x| {
                        format!("{:.1}", x.left_gbs) == format!("{:.1}", c[k].left_gbs)
                            && x.jobs == c[k].jobs
                    })
                    .count();
                let more = if same > 1 {
                    format!(", and {} more links alike", same - 1)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "  {}: {}: {:.1} of {:.1} (with {}){more}",
                    j.name,
                    c[k].link,
                    c[k].left_gbs,
                    c[k].capacity_gbs,
                    c[k].jobs.join(", ")
                );
                shown += 1;
                k += same;
            }
        }
    }
}

/// The phases of the run, where jobs start or end at different times.
fn phases_text(run: &MixRun, out: &mut String) {
    if run.phases.len() > 1 {
        out.push_str("phases:\n");
        for (k, p) in run.phases.iter().enumerate() {
            let to = p.to_s.map_or("end".to_string(), |t| format!("{t} s"));
            let _ = writeln!(
                out,
                "  {}: {} s to {to}: {}",
                k + 1,
                p.from_s,
                if p.jobs.is_empty() {
                    "no job".to_string()
                } else {
                    p.jobs.join(", ")
                }
            );
        }
    }
}

/// The jobs' checkpoints and data loading (`checkpoint_every`), a line each; empty when none
/// checkpoints.
fn checkpoint_text(run: &MixRun) -> String {
    let mut out = String::new();
    for j in &run.jobs {
        let Some(c) = &j.checkpoint else { continue };
        if out.is_empty() {
            out.push_str("checkpoints (saved asynchronously, every server writing its share):\n");
        }
        let _ = writeln!(
            out,
            "  {}: every {} steps, {:.1} GB ({:.2} GB a server) over the {} at {:.2} GB/s a server: host copy {:.3} s, write {:.2} s; step {:.4} s, {:.4} s during the write ({:.2} steps): +{:.4} s a checkpoint, +{:.5} s a step; data loading {:.1} MB a step ({:.2} MB/s a server)",
            j.name,
            c.every_steps,
            c.bytes / 1e9,
            c.bytes_per_server / 1e9,
            c.network,
            c.write_gbs_per_server,
            c.copy_s,
            c.write_s,
            c.step_s,
            c.step_during_write_s,
            c.steps_during_write,
            c.added_s,
            c.added_per_step_s,
            c.data_bytes_per_step / 1e6,
            c.data_gbs_per_server * 1e3
        );
        for o in &c.others {
            let _ = writeln!(
                out,
                "    {} during the write: step {:.4} s, {:.4} s alone",
                o.name, o.step_during_write_s, o.step_s
            );
        }
    }
    out
}

/// One policy's run as JSON.
pub fn json(run: &MixRun, f: &Fabric) -> Value {
    let jobs: Vec<Value> = run
        .jobs
        .iter()
        .map(|j| {
            let names: Vec<&str> = j.servers.iter().map(|&s| f.servers[s].name.as_str()).collect();
            let layout = match &j.work {
                Resolved::Train { par, .. } => json!({
                    "tp": par.tp, "pp": par.pp, "dp": par.dp, "ep": par.ep,
                    "micro_batch": par.micro_batch, "global_batch": par.global_batch, "zero": par.zero,
                }),
                Resolved::Traffic { .. } => Value::Null,
            };
            let mut v = json!({
                "name": j.name,
                "runs": j.label,
                "gpus": j.gpus,
                "layout": layout,
                "servers": railyard_ib::slurm::hostlist::compress(&names),
                "leaf_groups": j.leaves,
                "alone": {
                    "step_time_s": j.alone.step_s,
                    "communication_s": j.alone.comm_s,
                    "breakdown": j.alone.breakdown,
                },
                "shared": {
                    "step_time_s": j.shared.load.step_s,
                    "communication_s": j.shared.load.comm_s,
                    "breakdown": j.shared.load.breakdown,
                    "phase": j.phase + 1,
                },
                "slowdown": j.slowdown(),
                "shared_links": j.shared.contended.len(),
                "busiest_shared_links": top_contended(&j.shared, LINKS_SHOWN),
            });
            if let (Some(c), Value::Object(m)) = (&j.checkpoint, &mut v) {
                m.insert("checkpoint".into(), json!(c));
            }
            v
        })
        .collect();
    json!({
        "placement": run.policy,
        "overlap": run.overlap.as_str(),
        "phases": run.phases,
        "jobs": jobs,
    })
}

/// A replay's numbers, as the table and JSON print them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReplaySummary {
    pub placement: &'static str,
    pub jobs: usize,
    /// Jobs on two servers or more: the ones the network can slow.
    pub multi_server_jobs: usize,
    pub makespan_s: f64,
    /// GPU-seconds held over GPU-seconds the design had until the last job arrived.
    pub utilisation: f64,
    pub idle_waiting_gpu_h: f64,
    pub unplaceable_gpu_h: f64,
    pub mean_wait_s: f64,
    pub slowdown_mean: f64,
    pub slowdown_p99: f64,
    pub slowdown_max: f64,
    /// Multi-server jobs slowed by more than 1%.
    pub slowed_jobs: usize,
    pub alone_steps: usize,
    pub shared_steps: usize,
}

/// The summary of a replay on a design of `gpus` GPUs.
pub fn replay_summary(r: &super::replay::Replay, gpus: u64) -> ReplaySummary {
    let multi: Vec<f64> = r
        .jobs
        .iter()
        .filter(|j| j.servers >= 2)
        .map(|j| j.slowdown)
        .collect();
    let mut sorted = multi.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if sorted.is_empty() {
            1.0
        } else {
            sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
        }
    };
    let n = r.jobs.len().max(1) as f64;
    ReplaySummary {
        placement: r.policy,
        jobs: r.jobs.len(),
        multi_server_jobs: multi.len(),
        makespan_s: r.makespan_s,
        utilisation: if r.arrivals_s > 0.0 {
            r.busy_gpu_s / (gpus as f64 * r.arrivals_s)
        } else {
            0.0
        },
        idle_waiting_gpu_h: r.idle_waiting_gpu_s / 3600.0,
        unplaceable_gpu_h: r.unplaceable_gpu_s / 3600.0,
        mean_wait_s: r.jobs.iter().map(|j| j.start_s - j.submit_s).sum::<f64>() / n,
        slowdown_mean: if multi.is_empty() {
            1.0
        } else {
            multi.iter().sum::<f64>() / multi.len() as f64
        },
        slowdown_p99: pct(0.99),
        slowdown_max: sorted.last().copied().unwrap_or(1.0),
        slowed_jobs: multi.iter().filter(|&&s| s > 1.01).count(),
        alone_steps: r.alone_steps,
        shared_steps: r.shared_steps,
    }
}

/// The replay's table: one row per placement policy.
pub fn replay_text(rows: &[ReplaySummary]) -> String {
    let head = [
        "placement",
        "jobs",
        "multi-server",
        "makespan h",
        "GPU use",
        "idle while waiting GPU-h",
        "of it unplaceable GPU-h",
        "mean wait s",
        "slowdown mean",
        "p99",
        "max",
        "slowed >1%",
    ];
    let cells: Vec<[String; 12]> = rows
        .iter()
        .map(|r| {
            [
                r.placement.to_string(),
                thousands(r.jobs as f64),
                thousands(r.multi_server_jobs as f64),
                format!("{:.2}", r.makespan_s / 3600.0),
                format!("{:.1}%", 100.0 * r.utilisation),
                format!("{:.1}", r.idle_waiting_gpu_h),
                format!("{:.1}", r.unplaceable_gpu_h),
                format!("{:.0}", r.mean_wait_s),
                format!("{:.4}x", r.slowdown_mean),
                format!("{:.4}x", r.slowdown_p99),
                format!("{:.4}x", r.slowdown_max),
                thousands(r.slowed_jobs as f64),
            ]
        })
        .collect();
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &cells {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (k, (c, w)) in cells.iter().zip(&width).enumerate() {
            if k == 0 {
                let _ = write!(s, "{c:<w$}  ");
            } else {
                let _ = write!(s, "{c:>w$}  ");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for r in &cells {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    let steps: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{} {} alone, {} shared",
                r.placement, r.alone_steps, r.shared_steps
            )
        })
        .collect();
    let _ = writeln!(out, "steps simulated: {}", steps.join("; "));
    out
}

/// One policy's replay as JSON: the summary's numbers and every job as it ran (`replayed`: submit,
/// start and end, GPUs, whole servers, duration alone, slowdown).
pub fn replay_json(row: &ReplaySummary, r: &super::replay::Replay) -> Value {
    let mut v = serde_json::to_value(row).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert(
            "replayed".into(),
            serde_json::to_value(&r.jobs).unwrap_or(Value::Null),
        );
    }
    v
}
