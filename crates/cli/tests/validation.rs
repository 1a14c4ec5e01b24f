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
//!
//! Issue 35: beside those figures, the page gives the leave-one-source-out (LOSO) error: every
//! source's rows predicted with the model's fitted constants (`railyard_sim::fitted::FITTED`)
//! refitted without that source ([`loso`]), overall, per size band and the worst row, against
//! issue 35's bounds ([`stats`]), and holds the bounds the model meets (the median and every size
//! band). Runs of one configuration that disagree by more than the median bound are scored against
//! the range they span. Issue 35's two lines about scale (scored rows at 16 or more servers, the
//! all-to-all of 1 MiB over 512 ranks against the nearest published run) are stated from the rows
//! ([`scale`]), met or not. docs/validation/SOURCES.md's coverage table is counted from the rows
//! too ([`coverage`]).

#[path = "validation/coverage.rs"]
mod coverage;
#[path = "validation/loso.rs"]
mod loso;
#[path = "validation/scale.rs"]
mod scale;
#[path = "validation/stats.rs"]
mod stats;

use serde_json::Value;
use std::collections::BTreeMap;
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
    /// Who published it ([`source_of`] its address): the unit left out.
    source: String,
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
            source: source_of(&s(m, "source_url")),
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

/// The source of a published figure, as the fitted constants name theirs: `owner/repo#N` for a
/// GitHub issue, pull request or discussion (each thread is its own reporter), `owner/repo` for
/// the rest of a repository (one publisher's pages), else the host.
fn source_of(url: &str) -> String {
    let rest = url
        .trim_start_matches("https://")
        .trim_start_matches("http://");
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["github.com", owner, repo, "issues" | "pull" | "discussions", n, ..] => {
            format!("{owner}/{repo}#{n}")
        }
        ["github.com", owner, repo, ..] => format!("{owner}/{repo}"),
        [host, ..] => host.to_string(),
        [] => url.to_string(),
    }
}

/// The JSON `railyard ARGS --json` prints, or why it failed.
fn run_json(args: &[String]) -> Result<Value, String> {
    let o = Command::new(BIN).args(args).arg("--json").output().unwrap();
    if !o.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())
}

/// A prediction (value, the algorithm and protocol that ran, and the size it was read at) or why
/// there is none.
type Prediction = Result<(f64, String, u64), String>;

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
/// the source gives none), in the published metric; `extra` arguments after the command's.
fn predict(r: &Row, extra: &[String]) -> Prediction {
    let mut args: Vec<String> = r.command.split_whitespace().map(String::from).collect();
    if args.first().map(String::as_str) != Some("railyard") {
        return Err(format!(
            "command does not start with `railyard`: {}",
            r.command
        ));
    }
    args.remove(0);
    args.extend(extra.iter().cloned());
    let v = run_json(&args)?;
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
    Ok((
        pick[key].as_f64().ok_or("metric missing")?,
        how,
        size_of(pick).unwrap_or(r.size),
    ))
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

/// A row with its predictions: with the shipped constants, and with them refitted without its
/// source (the same prediction where no constant was fitted on its source).
struct Predicted {
    row: Row,
    fit: Prediction,
    loso: Prediction,
}

/// The spread group of a row: runs of one configuration as railyard expresses it.
fn group_key(r: &Row, size: u64) -> String {
    let command: Vec<&str> = r.command.split_whitespace().collect();
    format!(
        "{} | {} | {size} | {}",
        command.join(" "),
        r.collective,
        r.metric
    )
}

/// The table row of one measurement, and its scored errors where it is scored.
fn table_row<'a>(
    p: &'a Predicted,
    spreads: &BTreeMap<String, (f64, f64, usize)>,
) -> (String, Option<stats::Scored<'a>>) {
    let r = &p.row;
    let why = why_unscored(r);
    let range = match &p.fit {
        Ok((_, _, size)) if why.is_none() => spreads.get(&group_key(r, *size)).copied(),
        _ => None,
    };
    let (lo, hi) = range.map_or((r.value, r.value), |(lo, hi, _)| (lo, hi));
    let cell = |x: &Prediction| match x {
        Ok((v, _, _)) => (
            format!("{v:.2}"),
            format!("{:+.1}%", stats::error(*v, lo, hi) * 100.0),
        ),
        Err(_) => ("-".into(), "-".into()),
    };
    let (pred, err) = cell(&p.fit);
    let (lpred, lerr) = if p.loso == p.fit {
        ("same".into(), "same".into())
    } else {
        cell(&p.loso)
    };
    let how = match &p.fit {
        Ok((_, how, _)) => how.clone(),
        Err(e) => e.clone(),
    };
    let published = match range {
        Some((lo, hi, n)) => format!(
            "{} (runs: {lo}-{hi}, {n} runs, spread {:.1}%)",
            r.value,
            (hi / lo - 1.0) * 100.0
        ),
        None => format!("{}", r.value),
    };
    let metric = match r.metric.as_str() {
        "busbw_gbs" => "busbw GB/s",
        "algbw_gbs" => "algbw GB/s",
        _ => "time us",
    };
    let scored = match (&why, &p.fit, &p.loso) {
        (None, Ok((f, _, size)), Ok((l, _, _))) => Some(stats::Scored {
            id: &r.id,
            source: &r.source,
            band: stats::band_of(*size),
            fit: stats::error(*f, lo, hi).abs(),
            loso: stats::error(*l, lo, hi).abs(),
        }),
        _ => None,
    };
    let line = format!(
        "| [{}]({}) | {} | {} | {} x {} | {} | {} {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        r.id,
        r.url,
        r.source,
        r.gpu,
        r.servers,
        r.gpus_per_server,
        r.technology,
        r.collective,
        human_size(r.size),
        metric,
        published,
        pred,
        err,
        lpred,
        lerr,
        how,
        why.unwrap_or_else(|| "scored".into())
    );
    (line, scored)
}

const INTRO: &str =
    "Every row is a number someone published (nccl-tests output in GitHub issues, cloud \
and vendor benchmark pages), with the railyard command that reproduces its configuration \
(docs/validation/measurements.toml; sources and their reliability in \
docs/validation/SOURCES.md). This page is generated: `crates/cli/tests/validation.rs` runs every \
command through the binary and fails when this page differs from what the model gives \
(`RAILYARD_VALIDATION=update cargo test -p railyard --test validation` rewrites it).\n\n";

const SCORING: &str = "A row is scored when it is an exact or approximate published figure for a \
configuration railyard can express and its source publishes the hardware the prediction needs. \
Flagged rows (runs their reporters call misconfigured or under-performing, or with an inferred key \
parameter) and the rest are shown with their predictions, unscored, and why.\n\n";

const LOSO_TEXT: &str = "## Leave one source out (issue 35)\n\nA few constants of the model are \
measured on published runs rather than taken from NCCL's code (`railyard_sim::fitted`, listed below \
with the runs they were fitted on). Scored against its own source, such a constant is scored on \
what it was fitted to. So every source's rows are predicted a second time (the LOSO columns) by the \
model with each constant refitted by its own rule on its runs less that source's; a constant with \
no run left takes its neutral value (the model as NCCL's code has it). `same` where no constant was \
fitted on the row's source. A source is who published the row: a GitHub issue or pull request \
(`owner/repo#N`) or a repository's pages (`owner/repo`). The size bands are those of the size the \
row was predicted at. Where runs of one configuration as railyard expresses it (the same command, \
collective, size and metric) disagree by more than 8% (largest over smallest, the issue's median \
bound), the rows show the range and are scored against it (0 inside it, else from the nearer end). \
A change that lowers the fit error but not the LOSO error is not kept (issue 35).\n\n";

fn render(results: &[Predicted], fit_data: &loso::FitData) -> (String, stats::Loso) {
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for p in results {
        if let (None, Ok((_, _, size))) = (why_unscored(&p.row), &p.fit) {
            groups
                .entry(group_key(&p.row, *size))
                .or_default()
                .push(p.row.value);
        }
    }
    let spreads = stats::spreads(&groups);
    let mut table = String::new();
    let mut scored = Vec::new();
    for p in results {
        let (line, s) = table_row(p, &spreads);
        table.push_str(&line);
        scored.extend(s);
    }
    let fit: Vec<f64> = scored.iter().map(|s| s.fit).collect();
    let median = stats::median(&fit);
    let worst = fit.iter().copied().fold(f64::NAN, f64::max);
    let mut doc = String::new();
    doc.push_str("# Validation: predictions against published NCCL measurements\n\n");
    doc.push_str(INTRO);
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
    doc.push_str(SCORING);
    doc.push_str(LOSO_TEXT);
    doc.push_str(&stats::summary(&scored));
    doc.push_str("\nThe fitted constants, the runs they were fitted on, and the values this test's refits give:\n\n");
    doc.push_str(&loso::table(fit_data));
    doc.push('\n');
    doc.push_str(&scale::section(results).0);
    doc.push_str("## Rows\n\n| measurement | source | GPU | servers x GPUs | technology | collective, size | metric | published | predicted | error | LOSO predicted | LOSO error | algorithm, protocol | scored |\n");
    doc.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    doc.push_str(&table);
    (doc, stats::loso(&scored))
}

#[test]
fn predictions_match_published_measurements() {
    let rows = rows();
    let fit_data = loso::fit_data();
    let mut without: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in &rows {
        if !without.contains_key(&r.source) {
            without.insert(r.source.clone(), loso::without(&fit_data, &r.source));
        }
    }
    // Every constant whose sources give rows must be replaceable, or its rows' LOSO is not one.
    for c in railyard_sim::fitted::FITTED
        .iter()
        .filter(|c| !c.replaceable)
    {
        for r in &rows {
            assert!(
                !c.sources.contains(&r.source.as_str()),
                "{}: its source {} gives a row ({}), but --fitted cannot replace it",
                c.name,
                r.source,
                r.id
            );
        }
    }
    let jobs: Vec<(&Row, &[String])> = rows
        .iter()
        .flat_map(|r| {
            let extra = without[&r.source].as_slice();
            let loso = (!extra.is_empty()).then_some((r, extra));
            std::iter::once((r, &[][..])).chain(loso)
        })
        .collect();
    let out: BTreeMap<(String, bool), Prediction> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(2).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|(r, extra)| ((r.id.clone(), !extra.is_empty()), predict(r, extra)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let results: Vec<Predicted> = rows
        .into_iter()
        .map(|row| {
            let fit = out[&(row.id.clone(), false)].clone();
            let loso = out
                .get(&(row.id.clone(), true))
                .cloned()
                .unwrap_or_else(|| fit.clone());
            Predicted { row, fit, loso }
        })
        .collect();
    for p in &results {
        if let Err(e) = p.fit.as_ref().and(p.loso.as_ref()) {
            panic!("{}: {e}", p.row.id);
        }
    }
    let (doc, bounds) = render(&results, &fit_data);
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
    let scored = results
        .iter()
        .filter(|p| why_unscored(&p.row).is_none())
        .count();
    assert!(scored >= MIN_SCORED, "only {scored} scored rows");
    // Issue 35's bounds on the leave-one-source-out error that the model meets stay met: the
    // median and every size band (the worst row, 51.7% on superbench's A100 LL128 4 MiB, does not
    // meet its 50% yet: docs/validation/mid-size.md section 4).
    assert!(
        bounds.median <= stats::LOSO_MEDIAN,
        "LOSO median {:.1}% above {:.0}%",
        bounds.median * 100.0,
        stats::LOSO_MEDIAN * 100.0
    );
    for (b, m) in bounds.bands.iter().enumerate() {
        assert!(
            *m <= stats::LOSO_BAND,
            "LOSO median of band {} {:.1}% above {:.0}%",
            stats::BANDS[b].0,
            m * 100.0,
            stats::LOSO_BAND * 100.0
        );
    }
    assert!(bounds.worst.is_finite());
}

/// docs/validation/SOURCES.md's coverage table is the rows' own count (`RAILYARD_VALIDATION=update`
/// rewrites it): it was written by hand and fell behind the rows added since.
#[test]
fn sources_coverage_table_counts_the_measurements() {
    let path = root().join("docs/validation/SOURCES.md");
    let have = std::fs::read_to_string(&path).unwrap();
    let want = coverage::replaced(&have, &coverage::table(&rows()))
        .expect("SOURCES.md has its coverage section and table");
    if std::env::var("RAILYARD_VALIDATION").is_ok_and(|v| v == "update") {
        std::fs::write(&path, &want).unwrap();
    } else {
        assert!(
            have == want,
            "docs/validation/SOURCES.md's coverage table is stale; RAILYARD_VALIDATION=update rewrites it"
        );
    }
}

/// The fitted constants' refits hold the shipped values: each constant's rule on all its runs
/// gives the value shipped (rounded as shipped), so the runs named are the runs it was fitted on.
#[test]
fn every_fitted_constant_follows_from_the_runs_it_names() {
    let d = loso::fit_data();
    let all = loso::refit(&d, &|_| true);
    for c in railyard_sim::fitted::FITTED
        .iter()
        .filter(|c| c.replaceable)
    {
        assert_eq!(all[c.name], c.value, "{}: its rule on its runs", c.name);
        let from = loso::sources_of(&d, c.name);
        let mut named = c.sources.to_vec();
        named.sort();
        assert_eq!(from, named, "{}: the sources its runs come from", c.name);
    }
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

/// What leave one source out relies on: `--fitted` replaces the one constant named and nothing
/// else, says so, and refuses a name or value it does not take (exit 2, naming the choices).
#[test]
fn fitted_replaces_the_constant_named_and_nothing_else() {
    let base = "sim collective allreduce dgx-h100-superpod --servers 2 -b 1M -e 1M";
    let args = |extra: &str| -> Vec<String> {
        format!("{base} {extra}")
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let shipped = run_json(&args("")).unwrap();
    let neutral = run_json(&args("--fitted LL128_NET_STARTUP_FACTOR=1")).unwrap();
    let (s, n) = (&shipped["rows"][0], &neutral["rows"][0]);
    assert!(shipped.get("fitted_replaced").is_none());
    assert_eq!(
        neutral["fitted_replaced"],
        serde_json::json!([{"name": "LL128_NET_STARTUP_FACTOR", "value": 1.0, "shipped": 1.19}])
    );
    assert_eq!(n["startup_us"], 0.0);
    let gone = s["time_us"].as_f64().unwrap() - n["time_us"].as_f64().unwrap();
    assert!(
        (gone - s["startup_us"].as_f64().unwrap()).abs() < 0.01,
        "{s} {n}"
    );
    assert_eq!(
        (&s["algorithm"], &s["protocol"]),
        (&n["algorithm"], &n["protocol"])
    );
    // The host times of -g 8 move only a run one thread drives.
    let host = run_json(&args("--fitted NCCL_TESTS_HOST_US_PER_GPU=0")).unwrap();
    assert_eq!(host["rows"][0]["time_us"], s["time_us"]);
    for (bad, needle) in [
        (
            "--fitted HOST_STAGED_RECEIVE_GBS=8",
            "valid: LL128_NET_STARTUP_FACTOR",
        ),
        ("--fitted LL128_NET_STARTUP_FACTOR", "valid: NAME=VALUE"),
        ("--fitted LL128_NET_STARTUP_FACTOR=x", "is not a number"),
        (
            "--fitted NCCL_TESTS_HOST_US_PER_GPU=-1",
            "valid: a number from 0 to 1000",
        ),
        (
            "--fitted LL128_NET_STARTUP_FACTOR=1 --fitted LL128_NET_STARTUP_FACTOR=2",
            "given twice",
        ),
    ] {
        let o = Command::new(BIN).args(args(bad)).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(needle), "{bad}: {err}");
    }
}
