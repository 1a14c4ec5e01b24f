//! The training half of the validation set: published training runs (docs/validation/training_runs.toml)
//! expressed with their published parallelism, batch and pipeline stage split, run through the real
//! `railyard train`, and compared with the published throughput, so docs/validation-training.md cannot go
//! stale.
//!
//! A metric is scored when its run's quality is "read", or when the run lists it under `cross_checked`
//! (a recalled figure confirmed by a second source); the rest are shown unscored. Runs without a
//! `railyard_command` are listed with what keeps railyard from expressing them. Each run is predicted
//! twice: with `train`'s default compute efficiency (an assumption, nothing fitted), and with one
//! efficiency fitted on one run (the run with `fit_efficiency_on`, through `train --fit-efficiency`)
//! and used for every other, as issue 12 asks.
//!
//! `RAILYARD_VALIDATION=update cargo test -p railyard --test validation_training` rewrites the page;
//! otherwise the test fails when the page differs from what the model gives.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_railyard");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The metrics a run may publish: its key in training_runs.toml, how the page names it, and how
/// the prediction is read from `train --json` (given the run's peak TFLOPS for the MFU's precision).
const METRICS: [(&str, &str); 5] = [
    ("tflops_per_gpu", "model TFLOPS per GPU"),
    ("mfu", "MFU"),
    ("tokens_per_s", "tokens/s"),
    ("tokens_per_s_derived", "tokens/s (derived from GPU-hours)"),
    ("step_time_s", "step time, s"),
];

/// The predicted value of `metric` from a step's JSON.
fn predicted(metric: &str, v: &Value) -> f64 {
    let peak = v
        .get("peak_tflops")
        .and_then(Value::as_f64)
        .unwrap_or_else(|| {
            // BF16: the JSON names the GPU; its BF16 peak is the catalog's.
            let gpu = v["gpu_model"].as_str().unwrap();
            railyard_catalog::Catalog::builtin().gpus[gpu].peak_tflops_bf16
        });
    match metric {
        "tflops_per_gpu" => v["mfu"].as_f64().unwrap() * peak,
        "mfu" => v["mfu"].as_f64().unwrap(),
        "tokens_per_s" | "tokens_per_s_derived" => v["tokens_per_s"].as_f64().unwrap(),
        "step_time_s" => v["step_time_s"].as_f64().unwrap(),
        m => panic!("unknown metric {m}"),
    }
}

fn run_json(command: &str) -> Value {
    let mut args: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(args.first(), Some(&"railyard"), "{command}");
    args.remove(0);
    args.push("--json");
    let o = Command::new(BIN)
        .current_dir(root())
        .args(&args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What keeps a run without a command from being expressed.
fn why_not_expressed(r: &toml::Value) -> String {
    let int = |k: &str| r[k].as_integer().unwrap_or(0);
    let mut why = Vec::new();
    if int("tp") == 0 {
        why.push("parallel layout not published".to_string());
    }
    if int("cp") > 1 {
        why.push(format!(
            "context parallelism (CP {}) not modelled",
            int("cp")
        ));
    }
    if int("ep") > int("dp") && int("dp") > 0 {
        why.push(format!(
            "EP {} spans TP x DP ranks (in railyard EP divides DP {})",
            int("ep"),
            int("dp")
        ));
    }
    if why.is_empty() {
        why.push("model not among railyard's presets (a --model-file would do)".to_string());
    }
    why.join("; ")
}

fn fmt_value(metric: &str, x: f64) -> String {
    match metric {
        "mfu" => format!("{:.1}%", 100.0 * x),
        "tokens_per_s" | "tokens_per_s_derived" => format!("{x:.0}"),
        "step_time_s" => format!("{x:.2}"),
        _ => format!("{x:.0}"),
    }
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[test]
fn published_training_runs_against_train() {
    let text = std::fs::read_to_string(root().join("docs/validation/training_runs.toml")).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let runs = doc["run"].as_array().unwrap();
    let s = |r: &toml::Value, k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    let mut table = String::new();
    let mut notes = String::new();
    let mut others = String::new();
    let mut memory_rows = String::new();
    let mut scored: Vec<f64> = Vec::new();
    let mut scored_fitted: Vec<f64> = Vec::new();
    let mut expressed = 0;
    // The one efficiency, fitted on the one run that says which of its metrics to fit.
    let fit_runs: Vec<&toml::Value> = runs
        .iter()
        .filter(|r| r.get("fit_efficiency_on").is_some())
        .collect();
    assert_eq!(fit_runs.len(), 1, "exactly one run names fit_efficiency_on");
    let fit_run = fit_runs[0];
    let fit_id = s(fit_run, "id");
    let fit_key = s(fit_run, "fit_efficiency_on");
    let fit_value = fit_run[fit_key.as_str()].as_float().unwrap();
    let fit_flag = match fit_key.as_str() {
        "tokens_per_s" => format!("tokens-per-s={fit_value}"),
        "step_time_s" => format!("step-time={fit_value}"),
        "mfu" => format!("mfu={fit_value}"),
        k => panic!("fit_efficiency_on = {k:?}; valid: tokens_per_s, step_time_s, mfu"),
    };
    let fitted_on = run_json(&format!(
        "{} --fit-efficiency {fit_flag}",
        s(fit_run, "railyard_command")
    ));
    let efficiency = fitted_on["compute_efficiency"].as_f64().unwrap();
    // The fit reproduces what it was fitted to.
    let got = predicted(&fit_key, &fitted_on);
    assert!(
        ((got - fit_value) / fit_value).abs() < 1e-3,
        "fitted {fit_key} {got} vs {fit_value}"
    );
    assert_eq!(
        fitted_on["efficiency_fitted_to"][fit_key.as_str()].as_f64(),
        Some(fit_value)
    );
    for r in runs {
        let id = s(r, "id");
        let command = s(r, "railyard_command");
        if command.is_empty() {
            writeln!(
                others,
                "| [{id}]({}) | {} | {} x {} | {} |",
                s(r, "source_url"),
                s(r, "model"),
                r["gpus"].as_integer().unwrap(),
                s(r, "gpu"),
                why_not_expressed(r)
            )
            .unwrap();
            continue;
        }
        expressed += 1;
        let v = run_json(&command);
        // Each run ran, so its GPUs held it: railyard's memory must fit, or the row must say
        // which of the run's memory savings railyard does not model.
        let (state, act, held, memory) = (
            v["model_state_gb_per_gpu"].as_f64().unwrap(),
            v["activation_gb_per_gpu"].as_f64().unwrap(),
            v["memory_gb_per_gpu"].as_f64().unwrap(),
            v["gpu_memory_gb"].as_f64().unwrap(),
        );
        let unmodelled = s(r, "memory_not_modelled");
        assert!(
            held <= memory || !unmodelled.is_empty(),
            "{id}: railyard holds {held:.1} GB per GPU of the {memory} GB the run fitted in"
        );
        writeln!(
            memory_rows,
            "| [{id}]({}) | {} | {state:.1} | {act:.1} | {held:.1} | {memory:.1} | {} |",
            s(r, "source_url"),
            v["gpu_model"].as_str().unwrap(),
            if held <= memory {
                "fits".to_string()
            } else {
                format!("does not fit: {unmodelled}")
            }
        )
        .unwrap();
        let is_fit_run = id == fit_id;
        let vf = if is_fit_run {
            fitted_on.clone()
        } else {
            run_json(&format!("{command} --efficiency {efficiency}"))
        };
        let checked: Vec<&str> = r
            .get("cross_checked")
            .and_then(|c| c.as_array())
            .map(|c| c.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        let quality = s(r, "quality");
        let layout = format!(
            "TP {} PP {}{} DP {}{}",
            v["tp"],
            v["pp"],
            v.get("vp")
                .map(|x| format!(" (VP {x})"))
                .unwrap_or_default(),
            v["dp"],
            if v["ep"].as_u64() > Some(1) {
                format!(" EP {}", v["ep"])
            } else {
                String::new()
            }
        ) + &v.get("cp").map(|c| format!(" CP {c}")).unwrap_or_default();
        let stages = v
            .get("stage_layers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_else(|| "even".into());
        let precision = v
            .get("precision")
            .and_then(Value::as_str)
            .unwrap_or("bf16")
            .to_uppercase();
        for (key, name) in METRICS {
            let published = r
                .get(key)
                .and_then(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64)))
                .unwrap_or(0.0);
            if published <= 0.0 {
                continue;
            }
            let pred = predicted(key, &v);
            let err = (pred - published) / published;
            let pred_fitted = predicted(key, &vf);
            let err_fitted = (pred_fitted - published) / published;
            let score = quality == "read" || checked.contains(&key);
            if score {
                scored.push(err.abs());
                if !is_fit_run {
                    scored_fitted.push(err_fitted.abs());
                }
            }
            writeln!(
                table,
                "| [{id}]({}) | {} x {} | {layout} | {stages} | {precision} | {name} | {} | {} | {:+.1}% | {} | {} | {} |",
                s(r, "source_url"),
                v["gpus"],
                v["gpu_model"].as_str().unwrap(),
                fmt_value(key, published),
                fmt_value(key, pred),
                100.0 * err,
                fmt_value(key, pred_fitted),
                if is_fit_run {
                    format!("{:+.1}% (fitted here)", 100.0 * err_fitted)
                } else {
                    format!("{:+.1}%", 100.0 * err_fitted)
                },
                if score {
                    if quality == "read" { "scored (read)".to_string() } else { "scored (cross-checked)".to_string() }
                } else {
                    format!("not scored ({quality})")
                }
            )
            .unwrap();
        }
        writeln!(
            notes,
            "- **{id}**: `{command}`. {}\n",
            s(r, "prediction_notes")
        )
        .unwrap();
    }
    scored.sort_by(f64::total_cmp);
    scored_fitted.sort_by(f64::total_cmp);
    let mut page = String::new();
    page.push_str("# Validation: predicted training throughput against published runs\n\n");
    page.push_str(
        "Published training runs (docs/validation/training_runs.toml, with sources and quality flags) \
expressed with their published parallelism, global batch and pipeline stage split, run through \
`railyard train`, and compared with the throughput their authors published. This page is generated: \
`crates/cli/tests/validation_training.rs` runs every command through the binary and fails when this page \
differs from what the model gives (`RAILYARD_VALIDATION=update cargo test -p railyard --test \
validation_training` rewrites it). The NCCL half of the validation set is docs/validation.md.\n\n",
    );
    page.push_str(
        "Each run is predicted twice. First with nothing fitted: `train`'s default compute efficiency (0.5 \
of the GPU's dense peak in the run's precision, an assumption), the catalog's peaks and the simulated \
fabric. Then with one compute efficiency fitted on one run and used for every other (the issue's \
method): ",
    );
    writeln!(
        page,
        "`train --fit-efficiency {fit_flag}` on {fit_id} gives {efficiency:.4}, and every other run is run \
with `--efficiency {efficiency}`; the fitted run's own rows are not scored in that column. A metric is \
scored when the run's figures were read in the source, or when a recalled figure was cross-checked \
against a second source (the run's `cross_checked`); the rest are shown, not scored.\n"
    )
    .unwrap();
    writeln!(
        page,
        "**Default efficiency: {} metrics scored over {expressed} runs, median |error| {:.1}%, worst {:.1}%. \
Efficiency fitted on one run: {} metrics scored over the other runs, median |error| {:.1}%, worst {:.1}%.**\n",
        scored.len(),
        100.0 * median(&scored),
        100.0 * scored.last().copied().unwrap_or(f64::NAN),
        scored_fitted.len(),
        100.0 * median(&scored_fitted),
        100.0 * scored_fitted.last().copied().unwrap_or(f64::NAN)
    )
    .unwrap();
    page.push_str("| run | GPUs | parallelism | layers per stage | precision | metric | published | predicted (default efficiency) | error | predicted (fitted efficiency) | error | scored |\n");
    page.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    page.push_str(&table);
    page.push_str("\n## The commands, and why each is off\n\n");
    page.push_str(&notes);
    page.push_str("## Memory: each run fitted in its GPUs\n\n");
    page.push_str(
        "Every run above ran, so its GPUs held its model state and activations. `train` counts both \
(`model_state_gb_per_gpu`, `activation_gb_per_gpu`, and `memory_gb_per_gpu`, the most one pipeline \
stage holds of the two; docs/guide/train.md); the test fails where railyard's \
count exceeds the GPU's memory, unless the run names the memory savings railyard does not model. \
The check is one-sided: the count leaves out the CUDA context, NCCL's and the framework's buffers and \
the allocator's fragmentation, so it is a lower bound, and a count that is too low passes. GB \
here are 10^9 bytes; a GPU's memory is what the device exposes (an H100's 81,559 MiB, 85.5 GB, \
of its datasheet's 80 GiB).\n\n",
    );
    page.push_str("| run | GPU | model state (GB) | activations (GB) | in all (GB) | GPU memory (GB) | |\n|---|---|---|---|---|---|---|\n");
    page.push_str(&memory_rows);
    page.push('\n');
    page.push_str("## Runs not expressed yet\n\n");
    page.push_str("| run | model | GPUs | what railyard lacks |\n|---|---|---|---|\n");
    page.push_str(&others);
    let path = root().join("docs/validation-training.md");
    if std::env::var("RAILYARD_VALIDATION").is_ok_and(|v| v == "update") {
        std::fs::write(&path, &page).unwrap();
    } else {
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == page,
            "docs/validation-training.md is stale; RAILYARD_VALIDATION=update rewrites it"
        );
    }
    // The must-show: Llama 3 405B at 8,192 and 16,384 GPUs and DeepSeek-V3 on 2,048 H800,
    // each with its published layout and an uneven stage split.
    for id in [
        "llama3-405b-8192gpu",
        "llama3-405b-16384gpu",
        "deepseek-v3-2048-h800",
    ] {
        assert!(
            table.contains(&format!("[{id}]")),
            "{id} is not in the validation"
        );
    }
    assert!(scored.len() >= 3, "only {} scored metrics", scored.len());
}
