//! Leave one source out: the fitted constants of the model (`railyard_sim::fitted::FITTED`) refitted
//! by their own rule on their own runs, less one source's, so each source's rows can be predicted
//! by a model that never saw that source.
//!
//! Each constant's runs are read here from the files `FITTED` names, each run tagged with its
//! source; the rule that gave the shipped value is applied to them, and the test holds the shipped
//! value to what the rule gives on all of them (rounded as shipped). A constant with no run left
//! without a source takes its neutral value: the model as NCCL's own code has it.

use super::{root, run_json, source_of};
use railyard_sim::fitted::FITTED;
use std::collections::BTreeMap;

/// One run a constant is fitted on: its source and what it contributes to the rule.
#[derive(Debug, Clone)]
pub struct FitRun {
    pub source: String,
    pub value: f64,
}

/// The runs of every replaceable fitted constant, by name, as the rules read them.
pub struct FitData {
    /// `LL128_NET_STARTUP_FACTOR`: each run's `1 + (measured - time without it) / NCCL's latency`.
    pub ll128: Vec<FitRun>,
    /// `NCCL_TESTS_HOST_US_PER_GPU`: the times of runs one thread drives several GPUs in, where
    /// the launches set the time.
    pub host_gpu: Vec<HostRun>,
    /// `NCCL_TESTS_HOST_US_PER_P2P_CALL`: the times of all-to-all runs one thread drives several
    /// GPUs in, where the launches and the point-to-point calls set the time.
    pub p2p: Vec<HostRun>,
    /// `NVLS_CHUNK_STEP_US` and `NVLS_PIPELINE_FILL_STEPS` (fitted together): each row of the
    /// NVLS runs with railyard's time as a function of the two.
    pub nvls: Vec<NvlsPoint>,
}

/// One row of an NVLS or NVLSTree sweep: the measured time and railyard's time at step cost `o`
/// and fill `d`, which is bilinear in them (`chunking::pipelined_transfer_us`):
/// `t00 + d x + o (n + d q)`, read off four runs of the binary.
#[derive(Debug, Clone)]
pub struct NvlsPoint {
    pub source: String,
    pub measured: f64,
    pub t00: f64,
    pub x: f64,
    pub n: f64,
    pub q: f64,
}

impl NvlsPoint {
    pub fn time(&self, o: f64, d: f64) -> f64 {
        self.t00 + d * self.x + o * (self.n + d * self.q)
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some((v[(n - 1) / 2] + v[n / 2]) / 2.0)
}

/// The startup runs of docs/validation/mid-size-survey/startup-runs.toml, each priced with the
/// shipped factor: the factor that run alone asks for.
fn ll128_runs() -> Vec<FitRun> {
    let text =
        std::fs::read_to_string(root().join("docs/validation/mid-size-survey/startup-runs.toml"))
            .unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let shipped = railyard_sim::collective::LL128_NET_STARTUP_FACTOR;
    doc["run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            let id = run["id"].as_str().unwrap().to_string();
            let size = run["size_bytes"].as_integer().unwrap().to_string();
            let mut args: Vec<String> = run["railyard_args"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .map(String::from)
                .collect();
            args.extend(["-b", &size, "-e", &size].map(String::from));
            let v = run_json(&args).unwrap_or_else(|e| panic!("{id}: {e}"));
            let row = &v["rows"][0];
            let time = row["time_us"].as_f64().unwrap();
            let startup = row["startup_us"].as_f64().unwrap();
            assert!(startup > 0.0, "{id}: no LL128 start-up across servers");
            let nccl_latency = startup / (shipped - 1.0);
            let measured = run["measured_us"].as_float().unwrap();
            FitRun {
                source: run["source"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{id}: no source"))
                    .to_string(),
                value: 1.0 + (measured - (time - startup)) / nccl_latency,
            }
        })
        .collect()
}

/// The whitespace-split data rows of a published nccl-tests log of this repository, with the URL
/// its README gives as source.
fn log_rows(file: &str) -> Vec<Vec<String>> {
    let path = root().join("crates/sim/tests/data/nccl-tests").join(file);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .filter(|c| c.len() > 4 && c[0].bytes().all(|b| b.is_ascii_digit()))
        .collect()
}

const SUPERBENCH: &str = "https://github.com/microsoft/superbenchmark/blob/main/tests/data/";

/// A host-time run: its time, microseconds, the GPUs its thread drove and, for the
/// point-to-point runs, the calls each GPU's iteration makes (a send and a receive per rank).
#[derive(Debug, Clone)]
pub struct HostRun {
    pub source: String,
    pub time_us: f64,
    pub gpus: f64,
    pub calls: f64,
}

/// The Azure guide's `-g 8` all-reduce rows at 1 KiB (docs/validation/measurements.toml), where a
/// thread's launches of 8 GPUs set the time: 8 x H100 and 8 x H200 with NVLS, 8 x A100 with ring LL.
const AZURE_HOST_ROWS: [&str; 3] = [
    "azure-ndh100v5-1srv-allreduce-1k",
    "azure-ndh200v5-1srv-allreduce-1k",
    "azure-nda100v4-1srv-allreduce-1k",
];

/// The per-GPU runs: superbench's 0-byte all-reduce rows and the Azure guide's 1 KiB rows (their
/// time from the published bus bandwidth); the per-call runs: superbench's all-to-all of 32 B to
/// 1 MiB and the 8-32 B all-to-all of tinygrad/open-gpu-kernel-modules#17 (`-g 2`).
fn host_runs() -> (Vec<HostRun>, Vec<HostRun>) {
    let source = source_of(SUPERBENCH);
    let run = |source: &str, time_us: f64, gpus: f64, calls: f64| HostRun {
        source: source.to_string(),
        time_us,
        gpus,
        calls,
    };
    let mut gpu: Vec<HostRun> = log_rows("superbench-a100-1node-all_reduce-2021.txt")
        .into_iter()
        .filter(|c| c[0] == "0")
        .flat_map(|c| [c[4].clone(), c[8].clone()])
        .map(|t| run(&source, t.parse().unwrap(), 8.0, 0.0))
        .collect();
    for r in super::rows() {
        if AZURE_HOST_ROWS.contains(&r.id.as_str()) {
            assert_eq!(
                (r.size, r.metric.as_str(), r.servers),
                (1024, "busbw_gbs", 1)
            );
            let n = r.gpus_per_server as f64;
            let t = r.size as f64 * 2.0 * (n - 1.0) / n / r.value / 1e3;
            gpu.push(run(&r.source, t, n, 0.0));
        }
    }
    assert_eq!(gpu.len(), 4 + AZURE_HOST_ROWS.len());
    let mut p2p: Vec<HostRun> = log_rows("superbench-a100-1node-alltoall-2021.txt")
        .into_iter()
        .filter(|c| (32..=1 << 20).contains(&c[0].parse::<u64>().unwrap()))
        .map(|c| run(&source, c[3].parse().unwrap(), 8.0, 16.0))
        .collect();
    let tinygrad =
        root().join("docs/validation/mid-size-survey/tinygrad17_rtx4090_alltoall_g2.txt");
    let text = std::fs::read_to_string(tinygrad).unwrap();
    let url = text
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    for l in text.lines() {
        let c: Vec<&str> = l.split_whitespace().collect();
        if c.len() == 13 && c[0].bytes().all(|b| b.is_ascii_digit()) {
            for t in [c[5], c[9]] {
                p2p.push(run(&source_of(&url), t.parse().unwrap(), 2.0, 4.0));
            }
        }
    }
    (gpu, p2p)
}

/// The mean over sources of `per(source's runs)`, or `None` without runs.
fn mean_over_sources(runs: &[&HostRun], per: &dyn Fn(&[&HostRun]) -> f64) -> Option<f64> {
    let mut by: BTreeMap<&str, Vec<&HostRun>> = BTreeMap::new();
    for r in runs {
        by.entry(r.source.as_str()).or_default().push(r);
    }
    (!by.is_empty()).then(|| by.values().map(|v| per(v)).sum::<f64>() / by.len() as f64)
}

/// The runs of every replaceable constant (runs the binary on the startup and NVLS runs).
pub fn fit_data() -> FitData {
    let (host_gpu, p2p) = host_runs();
    FitData {
        ll128: ll128_runs(),
        host_gpu,
        p2p,
        nvls: nvls_points(),
    }
}

/// The sizes the NVLS pipeline is fitted on: 4 to 128 MiB.
const NVLS_SIZES: (u64, u64) = (4 << 20, 128 << 20);

/// The measured time of each size of one run of docs/validation/mid-size-survey/nvls-runs.toml,
/// microseconds.
fn nvls_measured(run: &toml::Value) -> BTreeMap<u64, f64> {
    let dir = root().join("docs/validation/mid-size-survey");
    let log = run["log"].as_str().unwrap();
    let path = if log.contains('/') {
        root().join(log)
    } else {
        dir.join(log)
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    if let Some(section) = run.get("section").and_then(|s| s.as_str()) {
        let start = lines.iter().position(|l| l.starts_with(section)).unwrap();
        lines = lines[start + 1..]
            .iter()
            .copied()
            .take_while(|l| !l.starts_with("==="))
            .collect();
    }
    let mut out = BTreeMap::new();
    for l in lines {
        let c: Vec<&str> = l
            .split(|ch: char| ch.is_whitespace() || ch == '|')
            .filter(|x| !x.is_empty())
            .collect();
        match run["format"].as_str().unwrap() {
            "nccl-tests" if c.len() >= 13 && c[0].bytes().all(|b| b.is_ascii_digit()) => {
                let t = |i: usize| c[i].parse::<f64>().unwrap_or(f64::INFINITY);
                out.insert(c[0].parse().unwrap(), t(5).min(t(9)));
            }
            "busbw-table" if c.len() == 2 => {
                let (Some(unit), Ok(busbw)) = (c[0].chars().last(), c[1].parse::<f64>()) else {
                    continue;
                };
                let scale = match unit {
                    'K' => 1e3,
                    'M' => 1e6,
                    'G' => 1e9,
                    _ => continue,
                };
                let Ok(v) = c[0][..c[0].len() - 1].parse::<f64>() else {
                    continue;
                };
                let size = 1u64 << (v * scale).log2().round() as u32;
                let n = run["ranks"].as_integer().unwrap() as f64;
                out.insert(size, size as f64 * 2.0 * (n - 1.0) / n / busbw / 1e3);
            }
            _ => {}
        }
    }
    out
}

/// Every row of the NVLS runs with railyard's time as a function of the two constants: the binary
/// at (o, d) = (0, 0), (0, 1), (1, 0), (1, 1) gives the bilinear form's four coefficients, checked
/// against a fifth run at the shipped values.
fn nvls_points() -> Vec<NvlsPoint> {
    let text =
        std::fs::read_to_string(root().join("docs/validation/mid-size-survey/nvls-runs.toml"))
            .unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let shipped = railyard_sim::fitted::Fitted::default();
    let (lo, hi) = NVLS_SIZES;
    let mut points = Vec::new();
    for run in doc["run"].as_array().unwrap() {
        let id = run["id"].as_str().unwrap();
        let measured = nvls_measured(run);
        let times = |o: f64, d: f64| -> Vec<(u64, f64, String)> {
            let mut args: Vec<String> = run["railyard_args"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .map(String::from)
                .collect();
            args.extend([
                "-b".into(),
                lo.to_string(),
                "-e".into(),
                hi.to_string(),
                "--fitted".into(),
                format!("NVLS_CHUNK_STEP_US={o}"),
                "--fitted".into(),
                format!("NVLS_PIPELINE_FILL_STEPS={d}"),
            ]);
            let v = run_json(&args).unwrap_or_else(|e| panic!("{id}: {e}"));
            v["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["size_bytes"].as_u64().unwrap(),
                        r["time_us"].as_f64().unwrap(),
                        r["algorithm"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        };
        let (t00, t01, t10, t11) = (
            times(0.0, 0.0),
            times(0.0, 1.0),
            times(1.0, 0.0),
            times(1.0, 1.0),
        );
        let check = times(shipped.nvls_chunk_step_us, shipped.nvls_pipeline_fill_steps);
        for i in 0..t00.len() {
            let (size, base, algo) = &t00[i];
            let Some(&m) = measured.get(size) else {
                continue;
            };
            if !matches!(algo.as_str(), "nvls" | "nvlstree") {
                continue;
            }
            let x = t01[i].1 - base;
            let n = t10[i].1 - base;
            let p = NvlsPoint {
                source: run["source"].as_str().unwrap().to_string(),
                measured: m,
                t00: *base,
                x,
                n,
                q: t11[i].1 - base - x - n,
            };
            let want = check[i].1;
            let got = p.time(shipped.nvls_chunk_step_us, shipped.nvls_pipeline_fill_steps);
            assert!(
                (got / want - 1.0).abs() < 1e-9,
                "{id} {size}: bilinear {got} vs {want}"
            );
            points.push(p);
        }
    }
    points
}

/// `NVLS_CHUNK_STEP_US` and `NVLS_PIPELINE_FILL_STEPS` by their rule: the least squares of the
/// relative time error over `points`, on a grid of 0.01 us (0 to 2 us) and whole steps (0 to 40);
/// the neutral values where there is no point.
fn fit_nvls(points: &[&NvlsPoint]) -> (f64, f64) {
    if points.is_empty() {
        return (0.0, 0.0);
    }
    let mut best = (f64::INFINITY, 0.0, 0.0);
    for oi in 0..=200 {
        let o = f64::from(oi) / 100.0;
        for d in 0..=40 {
            let d = f64::from(d);
            let e: f64 = points
                .iter()
                .map(|p| (p.time(o, d) / p.measured - 1.0).powi(2))
                .sum();
            if e < best.0 {
                best = (e, o, d);
            }
        }
    }
    (best.1, best.2)
}

/// Rounded as the shipped values are (two decimals).
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The constants fitted by their rules on the runs `keep` keeps, rounded as shipped; a constant
/// with no run kept is at its neutral value.
pub fn refit(d: &FitData, keep: &dyn Fn(&FitRun) -> bool) -> BTreeMap<&'static str, f64> {
    let values = |runs: &[FitRun]| -> Vec<f64> {
        runs.iter().filter(|r| keep(r)).map(|r| r.value).collect()
    };
    let neutral = |name: &str| FITTED.iter().find(|c| c.name == name).unwrap().neutral;
    let mut out = BTreeMap::new();
    let ll128 = median(&mut values(&d.ll128)).map_or(neutral("LL128_NET_STARTUP_FACTOR"), round2);
    out.insert("LL128_NET_STARTUP_FACTOR", ll128);
    let host_kept = |runs: &[HostRun]| -> Vec<HostRun> {
        runs.iter()
            .filter(|r| {
                keep(&FitRun {
                    source: r.source.clone(),
                    value: r.time_us,
                })
            })
            .cloned()
            .collect()
    };
    let gpu = host_kept(&d.host_gpu);
    let gpu: Vec<&HostRun> = gpu.iter().collect();
    let per_gpu = mean_over_sources(&gpu, &|v| {
        v.iter().map(|r| r.time_us / r.gpus).sum::<f64>() / v.len() as f64
    })
    .map_or(neutral("NCCL_TESTS_HOST_US_PER_GPU"), round2);
    out.insert("NCCL_TESTS_HOST_US_PER_GPU", per_gpu);
    let p2p = host_kept(&d.p2p);
    let p2p: Vec<&HostRun> = p2p.iter().collect();
    let per_call = mean_over_sources(&p2p, &|v| {
        let mut per: Vec<f64> = v.iter().map(|r| r.time_us / r.gpus).collect();
        (median(&mut per).unwrap() - per_gpu) / v[0].calls
    })
    .map_or(neutral("NCCL_TESTS_HOST_US_PER_P2P_CALL"), round2);
    out.insert("NCCL_TESTS_HOST_US_PER_P2P_CALL", per_call);
    let kept: Vec<&NvlsPoint> = d
        .nvls
        .iter()
        .filter(|p| {
            keep(&FitRun {
                source: p.source.clone(),
                value: 0.0,
            })
        })
        .collect();
    let (o, fill) = fit_nvls(&kept);
    out.insert("NVLS_CHUNK_STEP_US", o);
    out.insert("NVLS_PIPELINE_FILL_STEPS", fill);
    out
}

/// The sources of the runs a replaceable constant is fitted on.
pub fn sources_of(d: &FitData, name: &str) -> Vec<String> {
    let mut from: Vec<String> = match name {
        "LL128_NET_STARTUP_FACTOR" => d.ll128.iter().map(|r| r.source.clone()).collect(),
        "NCCL_TESTS_HOST_US_PER_GPU" => d.host_gpu.iter().map(|r| r.source.clone()).collect(),
        "NCCL_TESTS_HOST_US_PER_P2P_CALL" => d.p2p.iter().map(|r| r.source.clone()).collect(),
        _ => d.nvls.iter().map(|r| r.source.clone()).collect(),
    };
    from.sort();
    from.dedup();
    from
}

/// The `--fitted` arguments that give the model fitted without `source`: empty where no constant
/// was fitted on it (the shipped model already left it out).
pub fn without(d: &FitData, source: &str) -> Vec<String> {
    if !FITTED.iter().any(|c| c.sources.contains(&source)) {
        return Vec::new();
    }
    refit(d, &|r| r.source != source)
        .into_iter()
        .filter(|(name, v)| FITTED.iter().any(|c| c.name == *name && c.value != *v))
        .flat_map(|(name, v)| ["--fitted".to_string(), format!("{name}={v}")])
        .collect()
}

/// The refits as docs/validation.md lists them: each constant's shipped value, the value its rule
/// gives on all its runs, and without each of its sources.
pub fn table(d: &FitData) -> String {
    let all = refit(d, &|_| true);
    let mut t = String::from(
        "| constant | shipped | fitted on | sources | rule | refitted by this test | without each source |\n|---|---|---|---|---|---|---|\n",
    );
    for c in FITTED {
        let (refitted, each) = match all.get(c.name) {
            Some(v) => (
                format!("{v}"),
                c.sources
                    .iter()
                    .map(|s| format!("{s}: {}", refit(d, &|r| r.source != *s)[c.name]))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            None => (
                "not refitted: a stated figure".into(),
                "no validation row comes from its source".into(),
            ),
        };
        t.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {refitted} | {each} |\n",
            c.name,
            c.value,
            c.fitted_on,
            c.sources.join(", "),
            c.rule
        ));
    }
    t
}
