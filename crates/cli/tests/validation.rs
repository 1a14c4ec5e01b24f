//! The validation set: published NCCL measurements (docs/validation/measurements.toml, sources in
//! docs/validation/SOURCES.md) against railyard's predictions, recomputed on every run through the
//! real binary, so docs/validation.md cannot go stale.
//!
//! A row is scored when it is an exact or approximate published number, the configuration is one
//! railyard can express, and the source publishes the hardware facts the prediction needs (rows
//! with an `unscored` reason say which is missing). Flagged rows (runs their reporters call broken,
//! or with an inferred key parameter) are listed with their prediction but not scored.
//!
//! `RAILYARD_VALIDATION=update cargo test -p railyard --test validation` rewrites
//! docs/validation.md; otherwise the test fails when the file differs from what the model gives. The
//! page states the median and worst errors and whether they meet issue 12's limits; the test holds
//! the page true, not the limits (they are the goal the model is measured against).

use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_railyard");

/// The thresholds of issue 12: median absolute error and worst absolute error over scored rows.
const MEDIAN_LIMIT: f64 = 0.10;
const WORST_LIMIT: f64 = 0.35;
const MIN_SCORED: usize = 30;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Row {
    id: String,
    url: String,
    gpu: String,
    servers: i64,
    gpus_per_server: i64,
    technology: String,
    collective: String,
    size: u64,
    metric: String,
    value: f64,
    quality: String,
    expressible: bool,
    unscored: Option<String>,
    command: String,
}

fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string(root().join("docs/validation/measurements.toml")).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let s = |m: &toml::Value, k: &str| m[k].as_str().unwrap_or_default().to_string();
    doc["measurement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| Row {
            id: s(m, "id"),
            url: s(m, "source_url"),
            gpu: s(m, "gpu"),
            servers: m["servers"].as_integer().unwrap(),
            gpus_per_server: m["gpus_per_server"].as_integer().unwrap(),
            technology: s(m, "technology"),
            collective: s(m, "collective"),
            size: m["size_bytes"].as_integer().unwrap() as u64,
            metric: s(m, "metric"),
            value: m["value"]
                .as_float()
                .or_else(|| m["value"].as_integer().map(|v| v as f64))
                .unwrap(),
            quality: s(m, "quality"),
            expressible: m["expressible"].as_bool().unwrap(),
            unscored: m.get("unscored").and_then(|v| v.as_str()).map(String::from),
            command: s(m, "railyard_command"),
        })
        .collect()
}

/// A prediction (value, and the algorithm and protocol that ran) or why there is none.
type Prediction = Result<(f64, String), String>;

/// Why a row is not scored, or `None` when it is.
fn why_unscored(r: &Row) -> Option<String> {
    if r.quality == "flagged" {
        return Some("flagged by its source (see notes)".into());
    }
    if !r.expressible {
        return Some("not expressible in railyard".into());
    }
    r.unscored.clone()
}

/// The prediction: the row of the command's JSON at the published size (the largest size when
/// the source gives none), in the published metric.
fn predict(r: &Row) -> Prediction {
    let mut args: Vec<String> = r.command.split_whitespace().map(String::from).collect();
    if args.first().map(String::as_str) != Some("railyard") {
        return Err(format!(
            "command does not start with `railyard`: {}",
            r.command
        ));
    }
    args.remove(0);
    args.push("--json".into());
    let o = Command::new(BIN).args(&args).output().unwrap();
    if !o.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            r.command,
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().ok_or("no rows")?;
    let size_of = |x: &Value| {
        x.get("requested_bytes")
            .and_then(Value::as_u64)
            .or_else(|| x["size_bytes"].as_u64())
    };
    let pick = if r.size == 0 {
        rows.last()
    } else {
        rows.iter().find(|x| size_of(x) == Some(r.size))
    }
    .ok_or_else(|| format!("no row of {} bytes", r.size))?;
    let key = match r.metric.as_str() {
        "busbw_gbs" => "busbw_gbs",
        "algbw_gbs" => "algbw_gbs",
        "time_us" => "time_us",
        m => return Err(format!("unknown metric {m}")),
    };
    let how = format!(
        "{} {}",
        pick["algorithm"].as_str().unwrap_or("?"),
        pick["protocol"].as_str().unwrap_or("?")
    );
    Ok((pick[key].as_f64().ok_or("metric missing")?, how))
}

fn human_size(b: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    if b == 0 {
        return "largest".into();
    }
    for (u, s) in UNITS {
        if b >= u && b.is_multiple_of(u) {
            return format!("{}{s}", b / u);
        }
    }
    format!("{b}")
}

fn render(results: &[(Row, Prediction)]) -> (String, Vec<f64>) {
    let mut scored: Vec<f64> = Vec::new();
    let mut table = String::new();
    for (r, p) in results {
        let (pred, how, err) = match p {
            Ok((v, how)) => (
                format!("{v:.2}"),
                how.clone(),
                format!("{:+.1}%", (v - r.value) / r.value * 100.0),
            ),
            Err(e) => ("-".into(), e.clone(), "-".into()),
        };
        let why = why_unscored(r);
        if why.is_none() {
            if let Ok((v, _)) = p {
                scored.push(((v - r.value) / r.value).abs());
            }
        }
        let metric = match r.metric.as_str() {
            "busbw_gbs" => "busbw GB/s",
            "algbw_gbs" => "algbw GB/s",
            _ => "time us",
        };
        writeln!(
            table,
            "| [{}]({}) | {} | {} x {} | {} | {} {} | {} | {} | {} | {} | {} | {} |",
            r.id,
            r.url,
            r.gpu,
            r.servers,
            r.gpus_per_server,
            r.technology,
            r.collective,
            human_size(r.size),
            metric,
            r.value,
            pred,
            err,
            how,
            why.unwrap_or_else(|| "scored".into())
        )
        .unwrap();
    }
    let mut sorted = scored.clone();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.is_empty() {
        f64::NAN
    } else if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2]
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0
    };
    let worst = sorted.last().copied().unwrap_or(f64::NAN);
    let mut doc = String::new();
    doc.push_str("# Validation: predictions against published NCCL measurements\n\n");
    doc.push_str(
        "Every row is a number someone published (nccl-tests output in GitHub issues, cloud and \
vendor benchmark pages), with the railyard command that reproduces its configuration \
(docs/validation/measurements.toml; sources and their reliability in \
docs/validation/SOURCES.md). This page is generated: `crates/cli/tests/validation.rs` runs every \
command through the binary and fails when this page differs from what the model gives \
(`RAILYARD_VALIDATION=update cargo test -p railyard --test validation` rewrites it).\n\n",
    );
    let met = if median <= MEDIAN_LIMIT && worst <= WORST_LIMIT {
        "met"
    } else {
        "not met yet"
    };
    writeln!(
        doc,
        "**{} of {} rows scored: median |error| {:.1}%, worst {:.1}%.** Issue 12 asks for a median of \
at most {:.0}% and no row above {:.0}%: {met}.\n",
        scored.len(),
        results.len(),
        median * 100.0,
        worst * 100.0,
        MEDIAN_LIMIT * 100.0,
        WORST_LIMIT * 100.0
    )
    .unwrap();
    doc.push_str(
        "A row is scored when it is an exact or approximate published figure for a configuration \
railyard can express and its source publishes the hardware the prediction needs. Flagged rows \
(runs their reporters call misconfigured or under-performing, or with an inferred key \
parameter) and the rest are shown with their predictions, unscored, and why.\n\n",
    );
    doc.push_str(
        "One constant of the model is measured rather than taken from NCCL: LL128 across servers \
starts up 1.19 times slower than NCCL's latency model says (`LL128_NET_STARTUP_FACTOR`), the \
median over six published runs at 1 MiB, none of them a row here (one of the runs is scored at \
16 GiB, where NCCL runs Simple and the start-up does not apply; \
[docs/validation/mid-size-survey](validation/mid-size-survey/README.md), \
`startup-runs.toml`), so no scored row is fitted.\n\n",
    );
    doc.push_str("| measurement | GPU | servers x GPUs | technology | collective, size | metric | published | predicted | error | algorithm, protocol | scored |\n");
    doc.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    doc.push_str(&table);
    (doc, scored)
}

#[test]
fn predictions_match_published_measurements() {
    let rows = rows();
    let preds: Vec<Prediction> = std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(rows.len().div_ceil(2).max(1))
            .map(|chunk| s.spawn(move || chunk.iter().map(predict).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let results: Vec<(Row, Prediction)> = rows.into_iter().zip(preds).collect();
    for (r, p) in &results {
        if let Err(e) = p {
            panic!("{}: {e}", r.id);
        }
    }
    let (doc, scored) = render(&results);
    let path = root().join("docs/validation.md");
    if std::env::var("RAILYARD_VALIDATION").is_ok_and(|v| v == "update") {
        std::fs::write(&path, &doc).unwrap();
    } else {
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == doc,
            "docs/validation.md is stale; RAILYARD_VALIDATION=update rewrites it"
        );
    }
    assert!(
        scored.len() >= MIN_SCORED,
        "only {} scored rows",
        scored.len()
    );
}

/// The measured start-up of LL128 across servers (`LL128_NET_STARTUP_FACTOR` in
/// crates/sim/src/collective.rs) keeps railyard centred on the runs it was measured on
/// (docs/validation/mid-size-survey/startup-runs.toml): each run's row is in its published log as
/// recorded, NCCL runs LL128 there across servers, and the median of measured / predicted time is
/// within 3% of 1 (1.16 without the factor; 1.25 over all 13 healthy runs of the survey). A change
/// to the latency or bandwidth model that moves railyard off these runs fails here.
#[test]
fn ll128_start_up_is_centred_on_the_runs_it_was_measured_on() {
    let dir = root().join("docs/validation/mid-size-survey");
    let text = std::fs::read_to_string(dir.join("startup-runs.toml")).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut ratios = Vec::new();
    for run in doc["run"].as_array().unwrap() {
        let id = run["id"].as_str().unwrap();
        let log = std::fs::read_to_string(dir.join(run["log"].as_str().unwrap())).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        let start = match run.get("section").and_then(|s| s.as_str()) {
            Some(section) => lines
                .iter()
                .position(|l| l.starts_with(section))
                .unwrap_or_else(|| panic!("{id}: no line starts with {section:?}")),
            None => 0,
        };
        let row = run["row"].as_str().unwrap();
        let part = lines[start + 1..]
            .iter()
            .take_while(|l| !l.starts_with("==="))
            .map(|l| collapse(l))
            .collect::<Vec<_>>();
        assert!(
            part.iter().any(|l| l == row),
            "{id}: {row:?} not in its log"
        );
        let cols: Vec<f64> = row
            .split(' ')
            .map(|c| c.parse().unwrap_or(f64::NAN))
            .collect();
        let size = run["size_bytes"].as_integer().unwrap();
        let measured = run["measured_us"].as_float().unwrap();
        assert_eq!(cols[0], size as f64, "{id}: size");
        assert_eq!(measured, cols[5].min(cols[9]), "{id}: measured_us");
        let mut args: Vec<String> = run["railyard_args"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .map(String::from)
            .collect();
        let size = size.to_string();
        args.extend(["-b", &size, "-e", &size, "--json"].map(String::from));
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{id}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["nodes"].as_u64().unwrap() > 1, "{id}: one server");
        let r = &v["rows"][0];
        assert_eq!(r["protocol"], "LL128", "{id}: NCCL does not run LL128 here");
        ratios.push(measured / r["time_us"].as_f64().unwrap());
    }
    assert!(ratios.len() >= 5);
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = (ratios[(n - 1) / 2] + ratios[n / 2]) / 2.0;
    assert!(
        (median - 1.0).abs() <= 0.03,
        "median measured / predicted {median:.3} over {ratios:?}"
    );
}
