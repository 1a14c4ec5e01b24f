//! A cluster's arrivals: a trace file (`railyard-trace/1`, CSV) or the generator of one.
//!
//! The file is one job a line after its header, `submit_s,gpus,duration_s`: seconds after the
//! trace starts, GPUs asked for, and seconds it runs alone at full speed. The job traces of
//! Helios (SenseTime, SC '21), Philly (Microsoft, ATC '19) and Acme (Shanghai AI Lab, NSDI '24)
//! have these columns (`submit_time`, `gpu_num`, `duration`), so any of them converts with one
//! line of awk; none is kept here, as none is published under a licence that allows
//! redistribution (Helios and Acme: "for academic purposes"; Philly: "as is").
//!
//! The generator draws from distributions fitted to the published summary of Acme's Kalos
//! cluster, the LLM-development cluster of the two (InternLM/AcmeTrace,
//! `data/cluster_summary.csv`; Hu et al., "Characterization of Large Language Model Development
//! in the Datacenter", NSDI '24): of its 19,907 GPU jobs the median asks for 1 GPU and the mean
//! for 26.77 (the largest 1,024), the median runs 124 s and the mean 1,259.689 s.
//!
//! - GPUs: 1 with probability 1/2 (the median), else 2^k for k = 1..10 (2 to 1,024 GPUs) with
//!   probability proportional to r^k, r fitted by bisection so the mean is 26.77.
//! - Duration: log-normal with median 124 s and mean 1,259.689 s (mu = ln 124,
//!   sigma = sqrt(2 ln(1259.689 / 124)) = 2.153).
//! - Arrivals: Poisson (exponential gaps) at the rate that offers `load` of the design's GPUs
//!   for the GPU-seconds of the jobs drawn: an assumption of the generator, not a fit; the
//!   traces' own arrivals follow the working day.
//!
//! Every draw is SplitMix64 from the seed, so a seed is one trace, byte for byte.

use railyard_sim::routing::mix64;
use std::fmt::Write;

/// One job of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceJob {
    pub submit_s: f64,
    pub gpus: u64,
    pub duration_s: f64,
}

/// The header line of a trace file.
pub const HEADER: &str = "submit_s,gpus,duration_s";

/// Kalos's published summary (module docs).
pub const KALOS_MEAN_GPUS: f64 = 26.77;
pub const KALOS_MEDIAN_S: f64 = 124.0;
pub const KALOS_MEAN_S: f64 = 1259.689;
const MAX_POWER: i32 = 10;

/// Parses a trace file; errors name the line.
pub fn parse(text: &str, origin: &str) -> Result<Vec<TraceJob>, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    });
    match lines.next() {
        Some((_, h)) if h.trim() == HEADER => {}
        Some((n, h)) => {
            return Err(format!(
                "{origin}: line {}: header `{}`; a trace starts with `{HEADER}`",
                n + 1,
                h.trim()
            ))
        }
        None => return Err(format!("{origin}: empty; a trace starts with `{HEADER}`")),
    }
    let mut out = Vec::new();
    for (n, l) in lines {
        let at = |m: String| format!("{origin}: line {}: {m}", n + 1);
        let cells: Vec<&str> = l.split(',').map(str::trim).collect();
        let [s, g, d] = cells[..] else {
            return Err(at(format!("{} fields; want 3 ({HEADER})", cells.len())));
        };
        let submit_s: f64 = s
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| at(format!("submit_s `{s}`: seconds, 0 or more")))?;
        let gpus: u64 = g
            .parse()
            .ok()
            .filter(|&x| x > 0)
            .ok_or_else(|| at(format!("gpus `{g}`: a whole number, 1 or more")))?;
        let duration_s: f64 = d
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x > 0.0)
            .ok_or_else(|| at(format!("duration_s `{d}`: seconds, above 0")))?;
        if out.last().is_some_and(|p: &TraceJob| p.submit_s > submit_s) {
            return Err(at("submit_s goes back in time; sort the trace by it".into()));
        }
        out.push(TraceJob {
            submit_s,
            gpus,
            duration_s,
        });
    }
    if out.is_empty() {
        return Err(format!("{origin}: no job after the header"));
    }
    Ok(out)
}

/// A trace as its file.
pub fn write(jobs: &[TraceJob]) -> String {
    let mut out = format!("{HEADER}\n");
    for j in jobs {
        let _ = writeln!(out, "{:.3},{},{:.3}", j.submit_s, j.gpus, j.duration_s);
    }
    out
}

/// The GPU sizes' weights above 1 GPU (r^k, k = 1..10) and their mean with the half at 1 GPU.
fn gpu_mean(r: f64) -> f64 {
    let (mut w, mut m) = (0.0, 0.0);
    for k in 1..=MAX_POWER {
        w += r.powi(k);
        m += r.powi(k) * 2f64.powi(k);
    }
    0.5 + 0.5 * m / w
}

/// The ratio r whose sizes have Kalos's mean (bisection: the mean grows with r).
pub fn fitted_ratio() -> f64 {
    let (mut lo, mut hi) = (1e-6, 1.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if gpu_mean(mid) < KALOS_MEAN_GPUS {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

fn uniform(state: &mut u64) -> f64 {
    // 53 random bits in (0, 1).
    ((mix64(state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal draw (Box-Muller).
fn normal(state: &mut u64) -> f64 {
    let (u, v) = (uniform(state), uniform(state));
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// `jobs` jobs drawn as the module says, for a design of `gpus` GPUs at offered `load`, at most
/// `gpus` GPUs each.
pub fn generate(jobs: usize, gpus: u64, load: f64, seed: u64) -> Vec<TraceJob> {
    let r = fitted_ratio();
    let weights: Vec<f64> = (1..=MAX_POWER).map(|k| r.powi(k)).collect();
    let total: f64 = weights.iter().sum();
    let sigma = (2.0 * (KALOS_MEAN_S / KALOS_MEDIAN_S).ln()).sqrt();
    let mu = KALOS_MEDIAN_S.ln();
    let mut state = seed;
    let mut drawn: Vec<(u64, f64)> = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        let size = if uniform(&mut state) < 0.5 {
            1
        } else {
            let mut x = uniform(&mut state) * total;
            let mut k = MAX_POWER;
            for (i, w) in weights.iter().enumerate() {
                if x < *w {
                    k = i as i32 + 1;
                    break;
                }
                x -= w;
            }
            1u64 << k
        };
        let duration_s = (mu + sigma * normal(&mut state)).exp();
        drawn.push((size.min(gpus), (duration_s * 1000.0).round() / 1000.0));
    }
    // The arrival rate that offers `load` of the GPUs for the work drawn: GPU-seconds per job
    // of this sample (a log-normal of sigma 2.15 has a heavy tail, so a sample's mean is far
    // from the distribution's at a thousand jobs).
    let work: f64 = drawn.iter().map(|&(g, d)| g as f64 * d).sum::<f64>() / jobs.max(1) as f64;
    let rate = load * gpus as f64 / work;
    let mut t = 0.0;
    drawn
        .into_iter()
        .map(|(g, d)| {
            t += -uniform(&mut state).ln() / rate;
            TraceJob {
                submit_s: (t * 1000.0).round() / 1000.0,
                gpus: g,
                duration_s: d,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fitted sizes have Kalos's mean; a long draw has half its jobs on 1 GPU, its median of
    /// 124 s and a mean size near the published one; the file round-trips.
    #[test]
    fn the_generator_matches_the_published_summary() {
        assert!((gpu_mean(fitted_ratio()) - KALOS_MEAN_GPUS).abs() < 1e-9);
        let jobs = generate(40_000, 1 << 20, 0.9, 5);
        let mut g: Vec<u64> = jobs.iter().map(|j| j.gpus).collect();
        g.sort_unstable();
        // Half the jobs on 1 GPU: the median sits on the boundary, so the share is the test.
        let ones = g.iter().filter(|&&x| x == 1).count() as f64 / g.len() as f64;
        assert!((ones - 0.5).abs() < 0.01, "{ones}");
        let mean_g = g.iter().sum::<u64>() as f64 / g.len() as f64;
        assert!((mean_g / KALOS_MEAN_GPUS - 1.0).abs() < 0.1, "{mean_g}");
        let mut d: Vec<f64> = jobs.iter().map(|j| j.duration_s).collect();
        d.sort_by(f64::total_cmp);
        let median = d[d.len() / 2];
        assert!((median / KALOS_MEDIAN_S - 1.0).abs() < 0.05, "{median}");
        let back = parse(&write(&jobs[..50]), "t.csv").unwrap();
        assert_eq!(back.len(), 50);
        assert_eq!(back[7].gpus, jobs[7].gpus);
        assert_eq!(generate(10, 4096, 0.9, 5), generate(10, 4096, 0.9, 5));
    }

    #[test]
    fn trace_errors_name_the_line() {
        for (text, want) in [
            ("a,b\n", "line 1: header"),
            ("submit_s,gpus,duration_s\n1,0,5\n", "line 2: gpus `0`"),
            (
                "submit_s,gpus,duration_s\n5,1,5\n1,1,5\n",
                "line 3: submit_s goes back",
            ),
            ("submit_s,gpus,duration_s\n1,1\n", "line 2: 2 fields"),
        ] {
            let e = parse(text, "t.csv").unwrap_err();
            assert!(e.contains(want) && e.starts_with("t.csv: "), "{e}");
        }
    }
}
