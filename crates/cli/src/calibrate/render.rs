//! What `calibrate` and `check-nccl` print: the fit or the check as text, or as JSON.

use railyard_study::calibrate::{self as study, ranks_of, Calibrated, Check, Log, NcclEnv};
use railyard_study::calibrate::{Residual, Run};
use railyard_study::collective::{host_floor_us, Fitted};
use railyard_study::text::plural;
use railyard_study::Fabric;
use serde_json::json;
use std::fmt::Write as _;

pub(super) fn describe(f: &Fabric) -> String {
    let m = &f.meta;
    format!(
        "{} x {} {}, {} x {} NICs each ({}, {}), GPUDirect RDMA {}",
        plural(f.servers.len() as u64, "server", "servers"),
        m.gpus_per_server,
        m.gpu_model,
        m.compute_nics_per_server,
        m.nic_model,
        m.tech,
        m.topology,
        if m.gpudirect { "on" } else { "off" }
    )
}

/// Bytes as nccl-tests' `-b`/`-e` take them: `8`, `1K`, `16G`, or the number of bytes.
fn size(b: u64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// What a fit that leaves the median size more than 20% off ([`study::POOR_FIT`]) says.
pub(super) fn poor_fit_text(c: &Calibrated, logs: &[Log<'_>]) -> Option<String> {
    let (log, line, size, err) = c.poor_fit()?;
    Some(format!(
        "the fit leaves the predicted busbw {} off the logs' (worst: {} line {line}, {size} bytes, \
         predicted {:+.1}% against measured): past {:.0}% at the median, a NIC rate and a \
         latency do not describe these logs on this design, and every command calibrated with \
         this file carries that error; check that the design is the one the logs ran on \
         (--servers, --gpus-per-server, --nics-per-server, --tech, --gpu) and look at each log \
         with check-nccl",
        c.busbw_after,
        logs[log].name,
        err * 100.0,
        study::POOR_FIT * 100.0
    ))
}

/// A warning when the fitted NIC rate is below what a logged row needs
/// ([`study::Calibrated::nic_below_needed`]).
pub(super) fn slow_nic_text(f: &Fabric, c: &Calibrated, logs: &[Log<'_>]) -> Option<String> {
    let (i, needed) = c.nic_below_needed(f)?;
    let p = &c.points[i];
    Some(format!(
        "the fitted NIC rate, {:.2} GB/s, is below the {needed:.2} GB/s that {} line {} ({} bytes, \
         busbw {:.2} GB/s) needs of each of the design's NICs: the times as a whole fit a slower \
         NIC, but calibrated with this file every command predicts that size slower than the log \
         measured it",
        c.fit.calibration.nic_gbs.unwrap_or(needed),
        logs[p.log].name,
        p.line,
        p.size,
        p.measured_busbw_gbs
    ))
}

/// `16 ranks`, or where the log has no rank lines, that the count is the design's.
fn ranks_text(f: &Fabric, run: &Run) -> String {
    match ranks_of(f, run) {
        (n, "log") => plural(u64::from(n), "rank", "ranks"),
        (n, _) => format!(
            "rank count unknown (no rank lines in the log): {}, the design's GPUs",
            plural(u64::from(n), "rank", "ranks")
        ),
    }
}

/// Where the log's header says one thread drove several GPUs (`nGpus N`, nccl-tests' `-g N`):
/// `; one thread drove 8 GPUs (nGpus 8), so no size above 0 takes less than 86.72 us`, the floor
/// the prediction takes for it ([`host_floor_us`]); empty
/// otherwise.
fn threads_text(f: &Fabric, l: Log<'_>) -> String {
    match l.run.gpus_per_process.filter(|&g| g > 1) {
        Some(g) => format!(
            "; one thread drove {g} GPUs (nGpus {g}), so no size above 0 takes less than {:.2} us",
            host_floor_us(l.op, ranks_of(f, l.run).0, g, &Fitted::default())
        ),
        None => String::new(),
    }
}

fn sizes_used(c: &Calibrated, log: usize) -> (usize, u64, u64) {
    let s: Vec<u64> = c
        .points
        .iter()
        .filter(|p| p.log == log)
        .map(|p| p.size)
        .collect();
    (
        s.len(),
        s.iter().copied().min().unwrap_or(0),
        s.iter().copied().max().unwrap_or(0),
    )
}

pub(super) fn calibrate_text(
    f: &Fabric,
    logs: &[Log<'_>],
    c: &Calibrated,
    out: &std::path::Path,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# design: {}", describe(f));
    for (i, l) in logs.iter().enumerate() {
        let (n, lo, hi) = sizes_used(c, i);
        let _ = writeln!(
            s,
            "# log {}: {}, {}, {n} sizes used ({} to {}){}",
            l.name,
            l.op,
            ranks_text(f, l.run),
            size(lo),
            size(hi),
            threads_text(f, *l)
        );
    }
    // `--algo` and `--proto` apply to every log alike.
    if let Some(env) = logs.first().and_then(|l| env_text(l.nccl)) {
        let _ = writeln!(s, "# {env}");
    }
    if c.skipped > 0 {
        let _ = writeln!(
            s,
            "# {} rows left out (0 bytes or no positive time)",
            c.skipped
        );
    }
    points_table(&mut s, c);
    fit_text(&mut s, c);
    let _ = writeln!(
        s,
        "# residual (|predicted - measured| / measured busbw over the {} sizes used): before: {}; \
         after: {}",
        c.points.len(),
        c.busbw_before,
        c.busbw_after
    );
    for w in [poor_fit_text(c, logs), slow_nic_text(f, c, logs)]
        .into_iter()
        .flatten()
    {
        let _ = writeln!(s, "# warning: {w}");
    }
    let _ = writeln!(s, "# wrote {}", out.display());
    s
}

/// Each point: measured, and against the prediction before and after the fit.
fn points_table(s: &mut String, c: &Calibrated) {
    let _ = writeln!(
        s,
        "#\n# {:>4} {:>5} {:>13} {:>14} {:>11} {:>9} {:>11} {:>9}",
        "log", "line", "size", "op", "measured", "before", "after", "after"
    );
    let _ = writeln!(
        s,
        "# {:>4} {:>5} {:>13} {:>14} {:>11} {:>9} {:>11} {:>9}",
        "", "", "(B)", "", "busbw GB/s", "vs pred", "busbw GB/s", "vs pred"
    );
    for (i, p) in c.points.iter().enumerate() {
        let bw = |t: f64| p.measured_busbw_gbs * p.measured_us / t;
        let _ = writeln!(
            s,
            "  {:>4} {:>5} {:>13} {:>14} {:>11.2} {:>9} {:>11.2} {:>9}",
            p.log + 1,
            p.line,
            p.size,
            p.op.as_str(),
            p.measured_busbw_gbs,
            pct(c.fit.before[i] / p.measured_us - 1.0),
            bw(c.fit.after[i]),
            pct(c.fit.after[i] / p.measured_us - 1.0),
        );
    }
}

/// The fitted NIC rate and latency, each with why when it could not be identified.
fn fit_text(s: &mut String, c: &Calibrated) {
    let cal = &c.fit.calibration;
    let nic = match cal.nic_gbs {
        Some(r) => format!(
            "{r:.2} GB/s per NIC (line rate after headers {:.2} GB/s)",
            c.nominal_nic_gbs
        ),
        None => format!(
            "not identified: no rate below the line rate fits the logs better (the NIC limits \
             no logged size, or the logs run at its line rate); left at the line rate after \
             headers ({:.2} GB/s)",
            c.nominal_nic_gbs
        ),
    };
    let _ = writeln!(s, "#\n# fit: NIC rate {nic}");
    if c.fit.latency_fitted {
        let _ = writeln!(
            s,
            "# fit: latency {:.2} us added to every operation",
            cal.latency_us
        );
    } else {
        let _ = writeln!(
            s,
            "# fit: latency not identified: at every logged size NCCL's latency is under {:.0}% \
             of the predicted time (the bandwidth regime), where an added latency cannot be told \
             from a slower NIC; none added (log sizes down to a few KiB to fit one)",
            study::LATENCY_REGIME_SHARE * 100.0
        );
    }
}

fn residual_json(r: &Residual) -> serde_json::Value {
    json!({"median_abs": r.median_abs, "worst_abs": r.worst_abs})
}

pub(super) fn calibrate_json(
    f: &Fabric,
    logs: &[Log<'_>],
    c: &Calibrated,
    out: &std::path::Path,
) -> String {
    let logs_json: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (n, lo, hi) = sizes_used(c, i);
            let (ranks, from) = ranks_of(f, l.run);
            json!({"log": l.name, "op": l.op.as_str(), "ranks": ranks, "ranks_from": from,
                   "sizes_used": n, "min_bytes": lo, "max_bytes": hi})
        })
        .collect();
    let rows: Vec<_> = c
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"log": logs[p.log].name, "line": p.line, "size_bytes": p.size,
                   "op": p.op.as_str(), "measured_busbw_gbs": p.measured_busbw_gbs,
                   "measured_time_us": p.measured_us,
                   "before_time_us": c.fit.before[i], "after_time_us": c.fit.after[i]})
        })
        .collect();
    let cal = &c.fit.calibration;
    let v = json!({
        "design": describe(f),
        "logs": logs_json,
        "algo": logs.first().map_or("auto", |l| env_json(l.nccl).0),
        "protocols": logs.first().map(|l| env_json(l.nccl).1),
        "skipped_rows": c.skipped,
        "nic_gbs": cal.nic_gbs,
        "nic_identified": c.fit.nic_identified,
        "nominal_nic_gbs": c.nominal_nic_gbs,
        "latency_us": cal.latency_us,
        "latency_fitted": c.fit.latency_fitted,
        "poor_fit": poor_fit_text(c, logs),
        "nic_below_needed": slow_nic_text(f, c, logs),
        "residual_before": residual_json(&c.busbw_before),
        "residual_after": residual_json(&c.busbw_after),
        "rows": rows,
        "out": out.display().to_string(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

fn flag(r: &study::CheckRow) -> &'static str {
    if r.wrong_data {
        "WRONG DATA"
    } else if r.impossible {
        "IMPOSSIBLE"
    } else if r.below {
        "BELOW"
    } else if r.above {
        "above"
    } else {
        "ok"
    }
}

pub(super) fn check_text(f: &Fabric, l: Log<'_>, c: &Check, calibrated: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# design: {}", describe(f));
    let _ = writeln!(
        s,
        "# log {}: {}, {}; predicted {}{}",
        l.name,
        l.op,
        ranks_text(f, l.run),
        if calibrated {
            "with the calibration"
        } else {
            "uncalibrated"
        },
        threads_text(f, l)
    );
    if let Some(env) = env_text(l.nccl) {
        let _ = writeln!(s, "# {env}");
    }
    if c.skipped > 0 {
        let _ = writeln!(
            s,
            "# {} rows left out (0 bytes or no positive time)",
            c.skipped
        );
    }
    if let Some(b) = c.bound_busbw_gbs {
        let _ = writeln!(
            s,
            "# the most busbw this design's NICs allow for {}: {b:.2} GB/s",
            l.op
        );
    }
    let _ = writeln!(
        s,
        "#\n# {:>5} {:>13} {:>11} {:>11} {:>9} {:>9} {:>7}  verdict",
        "line", "size", "measured", "predicted", "vs pred", "algo", "proto"
    );
    let units = format!(
        "# {:>5} {:>13} {:>11} {:>11}",
        "", "(B)", "busbw GB/s", "busbw GB/s"
    );
    let _ = writeln!(s, "{units}");
    for r in &c.rows {
        let _ = writeln!(
            s,
            "  {:>5} {:>13} {:>11.2} {:>11.2} {:>9} {:>9} {:>7}  {}",
            r.point.line,
            r.point.size,
            r.point.measured_busbw_gbs,
            r.predicted_busbw_gbs,
            pct(r.error),
            r.predicted.algorithm,
            r.predicted.protocol,
            flag(r)
        );
    }
    let _ = writeln!(
        s,
        "#\n# residual (|predicted - measured| / measured busbw): {}\n# {}",
        c.residual,
        c.verdict()
    );
    s
}

/// What `--algo` and `--proto` left NCCL, where they leave it less than NCCL's default.
fn env_text(env: NcclEnv) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(a) = env.algo.nccl() {
        parts.push(format!("algorithm {} (--algo, as NCCL_ALGO)", a.as_str()));
    }
    if !env.protocols.is_all() {
        parts.push(format!(
            "protocols {} (--proto, as NCCL_PROTO)",
            env.protocols.label()
        ));
    }
    (!parts.is_empty()).then(|| format!("predicted with NCCL left {}", parts.join(" and ")))
}

/// JSON `algo` (`auto` or NCCL_ALGO's name) and `protocols` (those left, as NCCL names them).
fn env_json(env: NcclEnv) -> (&'static str, Vec<&'static str>) {
    (
        env.algo.nccl().map_or("auto", |a| a.as_str()),
        env.protocols.names(),
    )
}

pub(super) fn check_json(f: &Fabric, l: Log<'_>, c: &Check, calibrated: bool) -> String {
    let rows: Vec<_> = c
        .rows
        .iter()
        .map(|r| {
            json!({"line": r.point.line, "size_bytes": r.point.size,
                   "measured_busbw_gbs": r.point.measured_busbw_gbs,
                   "measured_time_us": r.point.measured_us,
                   "predicted_busbw_gbs": r.predicted_busbw_gbs,
                   "predicted_time_us": r.predicted.time_us,
                   "measured_vs_predicted": r.error, "algorithm": r.predicted.algorithm,
                   "protocol": r.predicted.protocol, "verdict": flag(r),
                   "wrong_data": r.wrong_data, "impossible": r.impossible})
        })
        .collect();
    let v = json!({
        "design": describe(f),
        "log": l.name,
        "op": l.op.as_str(),
        "ranks": ranks_of(f, l.run).0,
        "ranks_from": ranks_of(f, l.run).1,
        "gpus_per_thread": l.run.gpus_per_process.unwrap_or(1),
        "calibrated": calibrated,
        "algo": env_json(l.nccl).0,
        "protocols": env_json(l.nccl).1,
        "tolerance": c.tolerance,
        "skipped_rows": c.skipped,
        "rows": rows,
        "below": c.below(),
        "above": c.above(),
        "wrong_data": c.wrong_data(),
        "impossible": c.impossible(),
        "bound_busbw_gbs": c.bound_busbw_gbs,
        "residual": residual_json(&c.residual),
        "ok": c.ok(),
        "verdict": c.verdict(),
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
