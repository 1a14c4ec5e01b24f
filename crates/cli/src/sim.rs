//! `railyard sim`: runs the flow-level simulator (crate railyard-sim) and reports.
//!
//! `sim flows` builds a plain two-tier leaf-spine of single-NIC hosts from flags, reads flows from a
//! file, and prints flow-completion-time statistics; `--fct` writes one CSV row per flow. Flags and
//! the flows file are checked in full before anything is simulated or written.

use crate::error::CliError;
use crate::io::{print, write_files};
use clap::{Args, Subcommand, ValueEnum};
use railyard_sim::fct::{self, FctSummary};
use railyard_sim::leafspine::{self, FlowResult, HostFlow, LeafSpine, LeafSpineConfig};
use railyard_sim::rates::INFINIBAND;
use railyard_sim::routing::{self, RoutingConfig, RoutingKind};
use railyard_sim::{SimError, Time};
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct SimArgs {
    #[command(subcommand)]
    pub command: SimCommand,
}

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Simulate flows between hosts on a plain two-tier leaf-spine (host i on leaf i / K, one link
    /// from every leaf to every spine).
    Flows(FlowsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoutingArg {
    /// Per-flow hash over the spines (seeded; each queue pair hashed on its own).
    Ecmp,
    /// Spine = destination host index mod spines (OpenSM ftree).
    Dmodk,
    /// Every flow spread evenly over all spines.
    Adaptive,
}

#[derive(Debug, Args)]
pub struct FlowsArgs {
    /// Number of hosts (one NIC each).
    #[arg(long, value_name = "H")]
    pub hosts: u32,
    /// Hosts per leaf switch: host i hangs off leaf i / K.
    #[arg(long, value_name = "K")]
    pub hosts_per_leaf: u32,
    /// Number of spine switches; every leaf has one link to each.
    #[arg(long, value_name = "S")]
    pub spines: u32,
    /// Rate of every link, per direction, in Gb/s.
    #[arg(long, value_name = "G")]
    pub link_gbps: f64,
    /// Latency of one hop (link and switch) in nanoseconds.
    #[arg(long, value_name = "L")]
    pub link_latency_ns: u64,
    /// Links carry payload at the raw rate (no InfiniBand packet headers subtracted).
    #[arg(long)]
    pub ideal_links: bool,
    /// Flows file: one flow per line, `src dst bytes [start_seconds]`, hosts by index; `#` starts a
    /// comment.
    #[arg(long, value_name = "FILE")]
    pub flows: PathBuf,
    #[arg(long, value_enum, default_value = "ecmp")]
    pub routing: RoutingArg,
    /// Seed of the ECMP hash.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Queue pairs per connection for ECMP, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub qps_per_connection: u32,
    /// Write each flow's start and finish to OUT.csv (`flow,src,dst,bytes,start_us,finish_us`).
    #[arg(long, value_name = "OUT.csv")]
    pub fct: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &SimArgs) -> Result<(), CliError> {
    match &a.command {
        SimCommand::Flows(f) => flows(f),
    }
}

fn flows(a: &FlowsArgs) -> Result<(), CliError> {
    let net = LeafSpine::new(LeafSpineConfig {
        hosts: a.hosts,
        hosts_per_leaf: a.hosts_per_leaf,
        spines: a.spines,
        link_gbps: a.link_gbps,
        hop_latency: Time::from_ns(a.link_latency_ns),
        packet_format: (!a.ideal_links).then_some(INFINIBAND),
    })
    .map_err(flag_error)?;
    let text = std::fs::read_to_string(&a.flows)
        .map_err(|e| CliError::input(format!("{}: {e}", a.flows.display())))?;
    let flows = parse_flows(&a.flows, &text, a.hosts)?;
    let fct_out = a.fct.as_deref().map(split_out_path).transpose()?;

    let kind = match a.routing {
        RoutingArg::Ecmp => RoutingKind::Ecmp,
        RoutingArg::Dmodk => RoutingKind::DModK,
        RoutingArg::Adaptive => RoutingKind::Adaptive,
    };
    let policy = routing::build(
        kind,
        RoutingConfig {
            seed: a.seed,
            qps_per_connection: a.qps_per_connection,
        },
    );
    // Flows were checked against the network above, so this only fails on a bug.
    let run = leafspine::simulate(&net, policy.as_ref(), &flows)
        .map_err(|e| CliError::failed(e.to_string()))?;
    let summary = fct::summarize(&run.flows);

    if let Some((dir, name)) = fct_out {
        write_files(&dir, &[(name.as_str(), fct_csv(&flows, &run.flows))])?;
    }
    let report = Report {
        args: a,
        net: &net,
        routing: policy.name(),
        flows: &flows,
        summary: &summary,
    };
    if a.json {
        print(&report.json())
    } else {
        print(&report.text())
    }
}

/// A network parameter error, named as the flag the user typed.
fn flag_error(e: SimError) -> CliError {
    match e {
        SimError::Config { what, message } => CliError::input(format!("--{what}: {message}")),
        other => CliError::input(other.to_string()),
    }
}

/// The directory and file name `--fct` writes, so the file can be written atomically beside it.
fn split_out_path(path: &Path) -> Result<(PathBuf, String), CliError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| CliError::input(format!("--fct {}: not a file name", path.display())))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_string()))
}

/// At most this many problems are listed from one flows file; the rest are counted.
const MAX_REPORTED: usize = 20;

/// Parses a flows file: `src dst bytes [start_seconds]` per line, `#` comments, blank lines. Every
/// bad line is reported (up to MAX_REPORTED) as `FILE:LINE: problem`.
pub fn parse_flows(path: &Path, text: &str, hosts: u32) -> Result<Vec<HostFlow>, CliError> {
    let file = path.display();
    let mut flows = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut extra = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match parse_line(line, hosts) {
            Ok(f) => flows.push(f),
            Err(problem) if problems.len() < MAX_REPORTED => {
                problems.push(format!("{file}:{}: {problem}", i + 1));
            }
            Err(_) => extra += 1,
        }
    }
    if problems.is_empty() && flows.is_empty() {
        problems.push(format!(
            "{file}: no flows (expected lines `src dst bytes [start_seconds]`)"
        ));
    }
    if problems.is_empty() {
        return Ok(flows);
    }
    let mut message = problems.join("\n");
    if extra > 0 {
        let _ = write!(message, "\n{file}: {extra} more bad lines");
    }
    Err(CliError::input(message))
}

fn parse_line(line: &str, hosts: u32) -> Result<HostFlow, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if !(3..=4).contains(&fields.len()) {
        return Err(format!(
            "expected `src dst bytes [start_seconds]`, found {} fields",
            fields.len()
        ));
    }
    let host = |what: &str, s: &str| -> Result<u32, String> {
        let h: u32 = s
            .parse()
            .map_err(|_| format!("{what} `{s}` is not a host index"))?;
        if h >= hosts {
            return Err(format!(
                "{what} host {h} out of range (hosts are 0..{})",
                hosts - 1
            ));
        }
        Ok(h)
    };
    let src = host("source", fields[0])?;
    let dst = host("destination", fields[1])?;
    if src == dst {
        return Err(format!("source and destination are both host {src}"));
    }
    let bytes: u64 = fields[2]
        .parse()
        .map_err(|_| format!("bytes `{}` is not a whole number of bytes", fields[2]))?;
    let start = match fields.get(3) {
        None => Time::ZERO,
        Some(s) => s
            .parse::<f64>()
            .ok()
            .and_then(Time::from_secs_f64)
            .ok_or_else(|| format!("start `{s}` is not a time in seconds, 0 or more"))?,
    };
    Ok(HostFlow {
        src,
        dst,
        bytes,
        start,
    })
}

/// One row per flow in input order. Times are exact decimal microseconds (picosecond resolution),
/// so the file is byte-identical across machines.
fn fct_csv(flows: &[HostFlow], results: &[FlowResult]) -> String {
    let mut out = String::with_capacity(48 * flows.len() + 48);
    out.push_str("flow,src,dst,bytes,start_us,finish_us\n");
    for (i, (f, r)) in flows.iter().zip(results).enumerate() {
        let _ = writeln!(
            out,
            "{i},{},{},{},{},{}",
            f.src,
            f.dst,
            f.bytes,
            r.start.us_exact(),
            r.finish.us_exact()
        );
    }
    out
}

/// Microseconds to the nearest nanosecond, from integers (no float formatting differences).
fn us3(t: Time) -> String {
    let ns = (t.ps() + 500) / 1_000;
    format!("{}.{:03} us", ns / 1_000, ns % 1_000)
}

fn gbps(bytes_per_second: f64) -> f64 {
    bytes_per_second * 8.0 / 1e9
}

struct Report<'a> {
    args: &'a FlowsArgs,
    net: &'a LeafSpine,
    routing: &'static str,
    flows: &'a [HostFlow],
    summary: &'a FctSummary,
}

impl Report<'_> {
    fn text(&self) -> String {
        let (a, net, s) = (self.args, self.net, self.summary);
        let mut out = String::new();
        let links = match net.config().packet_format {
            Some(p) => format!(
                "{} Gb/s links ({:.2} Gb/s payload after {} headers)",
                a.link_gbps,
                gbps(net.link_rate()),
                p.name
            ),
            None => format!("{} Gb/s ideal links", a.link_gbps),
        };
        let _ = writeln!(
            out,
            "leaf-spine: {} hosts on {} leaves ({} per leaf), {} spines, {links}, {} ns per hop",
            net.hosts(),
            net.leaves(),
            a.hosts_per_leaf,
            net.spines(),
            a.link_latency_ns
        );
        let routing = match self.routing {
            "ecmp" => format!(
                "ecmp (seed {}, {} QP per connection)",
                a.seed, a.qps_per_connection
            ),
            other => other.to_string(),
        };
        let _ = writeln!(out, "routing: {routing}");
        let bytes: u128 = self.flows.iter().map(|f| u128::from(f.bytes)).sum();
        let _ = writeln!(out, "flows: {} ({bytes} bytes)", s.flows);
        let _ = writeln!(out, "makespan: {}", us3(s.makespan));
        let _ = writeln!(
            out,
            "FCT: mean {}, p50 {}, p99 {}, max {}",
            us3(s.mean),
            us3(s.p50),
            us3(s.p99),
            us3(s.max)
        );
        if let Some(w) = s.slowest {
            let f = self.flows[w.flow];
            let _ = writeln!(
                out,
                "slowest flow vs ideal: flow {} (host {} -> {}), {} vs {} alone: {:.2}x",
                w.flow,
                f.src,
                f.dst,
                us3(w.fct),
                us3(w.ideal),
                w.ratio
            );
        }
        out
    }

    fn json(&self) -> String {
        let (a, net, s) = (self.args, self.net, self.summary);
        let us = |t: Time| t.as_us_f64();
        let slowest = s.slowest.map(|w| {
            let f = self.flows[w.flow];
            serde_json::json!({
                "flow": w.flow,
                "src": f.src,
                "dst": f.dst,
                "fct_us": us(w.fct),
                "ideal_us": us(w.ideal),
                "ratio": w.ratio,
            })
        });
        let value = serde_json::json!({
            "network": {
                "hosts": net.hosts(),
                "hosts_per_leaf": a.hosts_per_leaf,
                "leaves": net.leaves(),
                "spines": net.spines(),
                "link_gbps": a.link_gbps,
                "payload_gbps": gbps(net.link_rate()),
                "packet_format": net.config().packet_format.map(|p| p.name),
                "hop_latency_ns": a.link_latency_ns,
            },
            "routing": self.routing,
            "seed": a.seed,
            "qps_per_connection": a.qps_per_connection,
            "flows": s.flows,
            "bytes": self.flows.iter().map(|f| f.bytes).sum::<u64>(),
            "makespan_us": us(s.makespan),
            "fct_us": {
                "mean": us(s.mean),
                "p50": us(s.p50),
                "p99": us(s.p99),
                "max": us(s.max),
            },
            "slowest": slowest,
        });
        // A json! value of numbers and strings always serializes.
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<HostFlow>, String> {
        parse_flows(Path::new("f.txt"), text, 8).map_err(|e| e.message)
    }

    #[test]
    fn flows_file_lines() {
        let flows = parse("# header\n\n0 1 100\n2 3 5 1e-6 # late\n").unwrap();
        assert_eq!(flows.len(), 2);
        assert_eq!(flows[1].start, Time::from_us(1));
        for (text, problem) in [
            (
                "0 8 1",
                "f.txt:1: destination host 8 out of range (hosts are 0..7)",
            ),
            ("3 3 1", "f.txt:1: source and destination are both host 3"),
            (
                "0 1 1.5",
                "f.txt:1: bytes `1.5` is not a whole number of bytes",
            ),
            (
                "0 1 1 -2",
                "f.txt:1: start `-2` is not a time in seconds, 0 or more",
            ),
            ("x 1 1", "f.txt:1: source `x` is not a host index"),
            (
                "0 1",
                "f.txt:1: expected `src dst bytes [start_seconds]`, found 2 fields",
            ),
            ("# nothing", "f.txt: no flows"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(problem), "{text}: {e}");
        }
        let many = "0 0 1\n".repeat(25);
        let e = parse(&many).unwrap_err();
        assert_eq!(e.lines().count(), MAX_REPORTED + 1);
        assert!(e.ends_with("f.txt: 5 more bad lines"));
    }
}
