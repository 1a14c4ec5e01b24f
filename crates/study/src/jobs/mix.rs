//! The job-mix file (`railyard jobs --mix FILE`): the jobs a cluster runs at once, each a model
//! trained with a layout or a collective run back to back, its GPUs, when it starts and, where it
//! must, the servers it runs on.
//!
//! ```toml
//! [[job]]
//! name = "llama-a"        # unique; default job1, job2, ...
//! model = "llama3-70b"    # a preset model (railyard train --model)
//! gpus = 4096             # whole servers
//! tp = 8                  # tp, pp, dp, ep, micro_batch, global_batch, zero: as train's flags;
//! pp = 4                  # none given: the layout fitted to the GPU's memory, as train does
//! start = 0               # seconds; default 0
//! end = 3600              # seconds; default: runs to the end
//! checkpoint_every = 100  # steps between checkpoints (training jobs; default: none)
//!
//! [[job]]
//! name = "bench"
//! traffic = "allreduce"   # a collective run back to back: allreduce, reducescatter,
//! bytes = "1G"            # allgather, alltoall; each call's buffer
//! gpus = 256
//! servers = "su1-srv[01-32]"   # a Slurm hostlist: placed here, whatever the policy
//! ```

use railyard_sim::nccl::parse_size;
use railyard_train::model::Model;
use railyard_train::parallel::Layout;
use railyard_train::step::Op;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::fmt;

/// What a job runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// A training step of a model with a layout (unresolved: the job's GPUs settle it).
    Train { model: Box<Model>, layout: Layout },
    /// One collective over every GPU of the job, run back to back: its "step" is one call.
    Traffic { op: Op, bytes: u64 },
}

impl Work {
    /// The model's name or the collective, for tables.
    pub fn label(&self) -> String {
        match self {
            Work::Train { model, .. } => model.name.clone(),
            Work::Traffic { op, bytes } => format!("{} {}", op_name(*op), size_words(*bytes)),
        }
    }
}

/// One job of a mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub name: String,
    pub work: Work,
    pub gpus: u64,
    /// Seconds after the mix starts.
    pub start: f64,
    /// Seconds after the mix starts when it leaves; `None`: it runs to the end.
    pub end: Option<f64>,
    /// The servers it must run on (site or plan names), from the file's hostlist.
    pub servers: Option<Vec<String>>,
    /// Steps between the checkpoints it writes (`checkpoint.rs`); `None`: it writes none.
    pub checkpoint_every: Option<u64>,
}

/// A job-mix file that cannot be read: where and why.
#[derive(Debug, Clone, PartialEq)]
pub struct MixError(pub String);

impl fmt::Display for MixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MixError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMix {
    job: Vec<RawJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    name: Option<String>,
    model: Option<String>,
    traffic: Option<String>,
    bytes: Option<toml::Value>,
    gpus: u64,
    tp: Option<u32>,
    pp: Option<u32>,
    dp: Option<u32>,
    ep: Option<u32>,
    micro_batch: Option<u64>,
    global_batch: Option<u64>,
    zero: Option<u32>,
    start: Option<f64>,
    end: Option<f64>,
    servers: Option<String>,
    checkpoint_every: Option<u64>,
}

/// The collectives a traffic job may run.
pub const TRAFFIC: [&str; 4] = ["allreduce", "reducescatter", "allgather", "alltoall"];

fn op_of(name: &str) -> Option<Op> {
    match name {
        "allreduce" => Some(Op::AllReduce),
        "reducescatter" => Some(Op::ReduceScatter),
        "allgather" => Some(Op::AllGather),
        "alltoall" => Some(Op::AllToAll),
        _ => None,
    }
}

/// The name a traffic job's collective is written with.
pub fn op_name(op: Op) -> &'static str {
    match op {
        Op::AllReduce => "allreduce",
        Op::ReduceScatter => "reducescatter",
        Op::AllGather => "allgather",
        Op::AllToAll => "alltoall",
        Op::SendRecv => "sendrecv",
    }
}

fn size_words(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (u, name) in UNITS {
        if bytes >= u && bytes.is_multiple_of(u) {
            return format!("{} {name}", bytes / u);
        }
    }
    format!("{bytes} B")
}

/// Parses a job-mix file; `origin` names it in errors. Models are the presets
/// ([`Model::preset`]); every error names the job (its name, else its number) and the key.
pub fn parse(text: &str, origin: &str) -> Result<Vec<Job>, MixError> {
    let raw: RawMix = toml::from_str(text).map_err(|e| {
        MixError(format!(
            "{origin}: {}",
            e.to_string().trim_end().replace('\n', " ")
        ))
    })?;
    if raw.job.is_empty() {
        return Err(MixError(format!(
            "{origin}: no [[job]]: a mix names at least one job"
        )));
    }
    let mut names = BTreeSet::new();
    let mut jobs = Vec::with_capacity(raw.job.len());
    for (i, r) in raw.job.into_iter().enumerate() {
        let name = r.name.clone().unwrap_or_else(|| format!("job{}", i + 1));
        let at = |key: &str, msg: String| MixError(format!("{origin}: job `{name}`: {key}: {msg}"));
        if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c == ',') {
            return Err(at("name", "must be a word (no spaces or commas)".into()));
        }
        if !names.insert(name.clone()) {
            return Err(at(
                "name",
                "two jobs have this name; names are unique".into(),
            ));
        }
        let work = work(&r, &at)?;
        if r.gpus == 0 {
            return Err(at("gpus", "must be at least 1".into()));
        }
        let start = r.start.unwrap_or(0.0);
        if !(start.is_finite() && start >= 0.0) {
            return Err(at("start", format!("{start}: seconds, 0 or more")));
        }
        if let Some(end) = r.end {
            if !(end.is_finite() && end > start) {
                return Err(at("end", format!("{end}: seconds, after start ({start})")));
            }
        }
        let servers = match &r.servers {
            Some(expr) => Some(
                railyard_ib::slurm::hostlist::expand(expr)
                    .map_err(|e| at("servers", e.to_string()))?,
            ),
            None => None,
        };
        match (r.checkpoint_every, &work) {
            (Some(0), _) => return Err(at("checkpoint_every", "steps, at least 1".into())),
            (Some(_), Work::Traffic { .. }) => {
                return Err(at(
                    "checkpoint_every",
                    "only a training job (model = ...) has a state to checkpoint".into(),
                ))
            }
            _ => {}
        }
        jobs.push(Job {
            name,
            work,
            gpus: r.gpus,
            start,
            end: r.end,
            servers,
            checkpoint_every: r.checkpoint_every,
        });
    }
    Ok(jobs)
}

fn work(r: &RawJob, at: &dyn Fn(&str, String) -> MixError) -> Result<Work, MixError> {
    match (&r.model, &r.traffic) {
        (Some(m), None) => {
            if r.bytes.is_some() {
                return Err(at("bytes", "only a traffic job has a buffer size".into()));
            }
            let model = Model::preset(m).map_err(|e| at("model", e.to_string()))?;
            let asked = r.tp.is_some() || r.pp.is_some() || r.dp.is_some() || r.ep.is_some();
            let layout = Layout {
                tp: r.tp,
                pp: r.pp.unwrap_or(1),
                dp: r.dp,
                ep: r.ep.unwrap_or(1),
                micro_batch: r.micro_batch.unwrap_or(1),
                global_batch: r.global_batch,
                zero: r.zero.unwrap_or(1),
                fit_to_memory: !asked,
                ..Layout::unasked()
            };
            Ok(Work::Train {
                model: Box::new(model),
                layout,
            })
        }
        (None, Some(t)) => {
            let op = op_of(t).ok_or_else(|| {
                at(
                    "traffic",
                    format!("unknown collective `{t}`; valid: {}", TRAFFIC.join(", ")),
                )
            })?;
            let layout_keys = [
                ("tp", r.tp.is_some()),
                ("pp", r.pp.is_some()),
                ("dp", r.dp.is_some()),
                ("ep", r.ep.is_some()),
                ("micro_batch", r.micro_batch.is_some()),
                ("global_batch", r.global_batch.is_some()),
                ("zero", r.zero.is_some()),
            ];
            if let Some((k, _)) = layout_keys.iter().find(|(_, given)| *given) {
                return Err(at(k, "a traffic job has no layout; only a model job".into()));
            }
            let bytes = match &r.bytes {
                Some(toml::Value::Integer(n)) if *n > 0 => *n as u64,
                Some(toml::Value::String(s)) => parse_size(s).map_err(|e| at("bytes", e))?,
                Some(v) => return Err(at("bytes", format!("{v}: a size such as 1G or 65536"))),
                None => return Err(at("bytes", "a traffic job needs its buffer size".into())),
            };
            if bytes == 0 {
                return Err(at("bytes", "must be above zero".into()));
            }
            Ok(Work::Traffic { op, bytes })
        }
        (Some(_), Some(_)) => Err(at("traffic", "a job has a model or traffic, not both".into())),
        (None, None) => Err(at(
            "model",
            "missing: a job trains a model (model = \"llama3-70b\") or runs traffic (traffic = \"allreduce\")".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_reads_models_traffic_and_hostlists() {
        let text = r#"
[[job]]
name = "a"
model = "llama3-8b"
gpus = 16
tp = 8

[[job]]
traffic = "alltoall"
bytes = "1M"
gpus = 8
start = 5
end = 10
servers = "su1-srv[01]"
"#;
        let jobs = parse(text, "mix.toml").unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[1].name, "job2");
        assert_eq!(
            jobs[1].work,
            Work::Traffic {
                op: Op::AllToAll,
                bytes: 1 << 20
            }
        );
        assert_eq!(
            jobs[1].servers.as_deref(),
            Some(&["su1-srv01".to_string()][..])
        );
        match &jobs[0].work {
            Work::Train { layout, .. } => {
                assert_eq!(layout.tp, Some(8));
                assert!(!layout.fit_to_memory);
            }
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn errors_name_the_file_the_job_and_the_key() {
        let cases = [
            ("[[job]]\nmodel = \"llama9\"\ngpus = 8\n", "mix.toml: job `job1`: model:"),
            ("[[job]]\ngpus = 8\n", "job `job1`: model: missing"),
            (
                "[[job]]\ntraffic = \"bcast\"\nbytes = 8\ngpus = 8\n",
                "valid: allreduce, reducescatter, allgather, alltoall",
            ),
            ("[[job]]\nmodel = \"llama3-8b\"\ngpus = 8\nend = 0\n", "job `job1`: end:"),
            (
                "[[job]]\nname = \"x\"\nmodel = \"llama3-8b\"\ngpus = 8\n[[job]]\nname = \"x\"\nmodel = \"llama3-8b\"\ngpus = 8\n",
                "names are unique",
            ),
            ("[[job]]\nmodel = \"llama3-8b\"\ngpus = 8\ncolour = 1\n", "unknown field `colour`"),
            (
                "[[job]]\nmodel = \"llama3-8b\"\ngpus = 8\ncheckpoint_every = 0\n",
                "job `job1`: checkpoint_every: steps, at least 1",
            ),
            (
                "[[job]]\ntraffic = \"allreduce\"\nbytes = 8\ngpus = 8\ncheckpoint_every = 10\n",
                "checkpoint_every: only a training job",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text, "mix.toml").unwrap_err().0;
            assert!(e.contains(want), "{e}");
            assert!(e.starts_with("mix.toml: "), "{e}");
        }
    }
}
