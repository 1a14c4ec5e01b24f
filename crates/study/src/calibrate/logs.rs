//! A log held to the design and to itself: the collective it measured, the shape it ran on, and
//! the busbw the design's NICs can carry.

use super::{CalibrateError, Log, Point};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_sim::fabric_net;
use railyard_sim::nccl::Collective;
use railyard_sim::nccl_tests::Run;
use railyard_spec::ClusterSpec;

/// The busbw / algbw every row of a run agrees on (within 2%), from rows of at least 1 GB/s algbw
/// (two decimals printed: from 1 GB/s the rounding is within 0.5%); `None` without such rows or when
/// they disagree.
pub fn factor_of_rows(run: &Run) -> Option<f64> {
    let mut factors: Vec<f64> = run
        .rows
        .iter()
        .filter_map(|r| r.measurement())
        .filter(|m| m.algbw_gbs >= 1.0)
        .map(|m| m.busbw_gbs / m.algbw_gbs)
        .collect();
    factors.sort_by(f64::total_cmp);
    let median = *factors.get(factors.len() / 2)?;
    factors
        .iter()
        .all(|f| (f / median - 1.0).abs() < FACTOR_TOLERANCE)
        .then_some(median)
}

/// How far a row's busbw / algbw may be from a collective's factor and still be that collective.
const FACTOR_TOLERANCE: f64 = 0.02;

/// The collectives whose busbw factor on `n` ranks is `factor` (nccl-tests doc/PERFORMANCE.md).
fn collectives_with_factor(factor: f64, n: u32) -> Vec<Collective> {
    Collective::ALL
        .into_iter()
        .filter(|c| (factor / c.busbw_factor(n) - 1.0).abs() < FACTOR_TOLERANCE)
        .collect()
}

/// The collective a log measured. Where the header names it (`# Collective test starting:
/// all_reduce_perf`), that one; `given` (`--op`) naming another is refused, as is a program railyard
/// does not model, and rows whose busbw / algbw is another collective's factor on `ranks` ranks (a
/// header and rows of different runs). Without a header: `given`, unless the rows' busbw / algbw
/// contradicts its factor on `ranks` ranks; without `given`, all-reduce where the rows show 2(n-1)/n on more than 2 ranks
/// (no other collective has that factor). Anything else cannot be told apart (all-gather,
/// reduce-scatter and all-to-all share (n-1)/n; broadcast, reduce and send/recv 1) and is
/// [`CalibrateError::NoCollective`]. `ranks` is the run's rank count: the log's rank lines, else the
/// design's GPUs.
pub fn collective_of(
    name: &str,
    run: &Run,
    given: Option<Collective>,
    ranks: Option<u32>,
) -> Result<Collective, CalibrateError> {
    let log = name.to_string();
    let shown = factor_of_rows(run);
    let n = run.ranks().or(ranks).filter(|&n| n > 0);
    if let Some(program) = &run.program {
        return match (run.collective, given) {
            (Some(header), Some(given)) if header != given => Err(CalibrateError::OpConflict {
                log,
                program: program.clone(),
                header,
                given,
            }),
            (Some(header), _) => match (shown, n) {
                (Some(factor), Some(n))
                    if (factor / header.busbw_factor(n) - 1.0).abs() >= FACTOR_TOLERANCE =>
                {
                    Err(CalibrateError::HeaderFactor {
                        log,
                        program: program.clone(),
                        header,
                        factor,
                        ranks: n,
                        ranks_from_log: run.ranks().is_some(),
                        matches: collectives_with_factor(factor, n),
                    })
                }
                _ => Ok(header),
            },
            (None, _) => Err(CalibrateError::Unmodelled {
                log,
                program: program.clone(),
            }),
        };
    }
    if let Some(given) = given {
        if let (Some(factor), Some(n)) = (shown, n) {
            if (factor / given.busbw_factor(n) - 1.0).abs() >= FACTOR_TOLERANCE {
                return Err(CalibrateError::OpFactor {
                    log,
                    given,
                    factor,
                    ranks: n,
                    matches: collectives_with_factor(factor, n),
                });
            }
        }
        return Ok(given);
    }
    let shown = shown.zip(n);
    if let Some((factor, n)) = shown {
        if n > 2 && collectives_with_factor(factor, n) == [Collective::AllReduce] {
            return Ok(Collective::AllReduce);
        }
    }
    Err(CalibrateError::NoCollective {
        log,
        shown: shown.map(|(factor, n)| (factor, n, collectives_with_factor(factor, n))),
        ranks_from_log: run.ranks().is_some(),
    })
}

/// `allgather, reducescatter or alltoall`.
pub(super) fn either(ops: &[Collective]) -> String {
    match ops {
        [] => "no collective nccl-tests runs".into(),
        [one] => one.as_str().into(),
        [init @ .., last] => format!(
            "{} or {}",
            init.iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            last.as_str()
        ),
    }
}

/// The servers and GPUs per server a log ran on, as far as it says: hosts from its rank lines, GPUs
/// per server as ranks over hosts (`None` when there are no rank lines, some were left out of the
/// log, or they do not divide).
pub fn shape_of_log(run: &Run) -> Option<(u32, u32)> {
    if run.ranks_elided() {
        return None;
    }
    let hosts = u32::try_from(run.hosts().len()).ok()?;
    let ranks = run.ranks()?;
    (hosts > 0 && ranks % hosts == 0).then(|| (hosts, ranks / hosts))
}

/// The points of `logs` (in log order, then row order) and how many rows were left out (0 bytes or
/// no positive time). A log whose rank count, or servers x GPUs per server shape where its rank lines
/// give hosts, differs from the design's is refused.
pub fn points(fabric: &Fabric, logs: &[Log<'_>]) -> Result<(Vec<Point>, usize), CalibrateError> {
    if logs.is_empty() {
        return Err(CalibrateError::NoLogs);
    }
    let servers = fabric.servers.len() as u64;
    let gpus_per_server = fabric.meta.gpus_per_server;
    let gpus = servers * u64::from(gpus_per_server);
    let mut out = Vec::new();
    let mut skipped = 0;
    for (i, l) in logs.iter().enumerate() {
        let op = l.op;
        if let Some(ranks) = l.run.ranks() {
            if u64::from(ranks) != gpus {
                return Err(CalibrateError::Ranks {
                    log: l.name.to_string(),
                    ranks,
                    design_gpus: gpus,
                });
            }
        }
        if let Some((hosts, gpus_per_host)) = shape_of_log(l.run) {
            if (u64::from(hosts), gpus_per_host) != (servers, gpus_per_server) {
                return Err(CalibrateError::Shape {
                    log: l.name.to_string(),
                    hosts,
                    gpus_per_host,
                    servers,
                    gpus_per_server,
                });
            }
        }
        let ranks = l
            .run
            .ranks()
            .unwrap_or_else(|| u32::try_from(gpus).unwrap_or(u32::MAX));
        check_busbw(l, ranks)?;
        let before = out.len();
        for r in &l.run.rows {
            match r.measurement() {
                Some(m) if r.size > 0 && m.time_us > 0.0 => out.push(Point {
                    log: i,
                    line: r.line,
                    op,
                    size: r.size,
                    measured_us: m.time_us,
                    measured_busbw_gbs: m.busbw_gbs,
                    wrong_data: l.run.wrong_data(r, ranks, op),
                }),
                _ => skipped += 1,
            }
        }
        if out.len() == before {
            return Err(CalibrateError::NoRows {
                log: l.name.to_string(),
            });
        }
    }
    Ok((out, skipped))
}

/// Every row of `l` holds nccl-tests' `busbw = algbw x factor` with its collective's factor on
/// `ranks` ranks, within the digits printed (the parser holds the rows to one factor; this names
/// which): a row that does not is refused, naming it.
fn check_busbw(l: &Log<'_>, ranks: u32) -> Result<(), CalibrateError> {
    let factor = l.op.busbw_factor(ranks);
    for r in &l.run.rows {
        let why = [r.out_of_place, r.in_place]
            .into_iter()
            .flatten()
            .find_map(|m| m.busbw_disagrees(factor));
        if let Some(why) = why {
            return Err(CalibrateError::Busbw {
                log: l.name.to_string(),
                line: r.line,
                row: r.text.clone(),
                why,
                op: l.op,
                ranks,
                ranks_from_log: l.run.ranks().is_some(),
            });
        }
    }
    Ok(())
}

/// The most busbw `op` can show on `fabric` whatever the algorithm, from what the servers' NICs can
/// move: `None` on one server (no NIC carries the collective) or without NICs. With B a server's
/// NICs' payload rate ([`fabric_net::server_nic_payload_gbs`]), N servers of g GPUs and S the size
/// nccl-tests reports, the bytes some server must move through its NICs at least are:
/// - all-reduce: S in (every byte of the result depends on the other servers' data; in-network
///   reduction, SHARP, reaches this), so algbw <= B;
/// - all-gather: the other servers' S (N-1)/N in; reduce-scatter: its contribution to the other
///   servers' parts, S (N-1)/N, out; so algbw <= B N / (N-1);
/// - all-to-all: each of its g GPUs' S (N-1)/N out, so algbw <= B N / (g (N-1));
/// - broadcast, reduce, send/recv: S in at some server, so algbw <= B;
///
/// and busbw = algbw x the collective's factor (nccl-tests doc/PERFORMANCE.md).
pub fn busbw_bound(fabric: &Fabric, op: Collective) -> Option<f64> {
    let servers = fabric.servers.len() as f64;
    if servers < 2.0 {
        return None;
    }
    let b = fabric_net::server_nic_payload_gbs(fabric)?;
    let g = f64::from(fabric.meta.gpus_per_server.max(1));
    let ranks = fabric_ranks(fabric);
    let spread = servers / (servers - 1.0);
    let algbw = match op {
        Collective::AllReduce
        | Collective::Broadcast
        | Collective::Reduce
        | Collective::SendRecv => b,
        Collective::AllGather | Collective::ReduceScatter => b * spread,
        Collective::AllToAll => b * spread / g,
    };
    Some(algbw * op.busbw_factor(ranks))
}

/// The ranks of a run on every GPU of `fabric` (a log's ranks are checked against them).
pub(super) fn fabric_ranks(fabric: &Fabric) -> u32 {
    u32::try_from(fabric.servers.len() as u64 * u64::from(fabric.meta.gpus_per_server))
        .unwrap_or(u32::MAX)
}

/// Whether a measured busbw is above `bound`, beyond the two decimals nccl-tests prints.
pub(super) fn above_bound(busbw: f64, bound: Option<f64>) -> bool {
    bound.is_some_and(|b| busbw > b * 1.005 + 0.01)
}

/// The NICs a server of `spec` keeps when a log shows it with `gpus` GPUs: the design's NICs per
/// GPU (a one-GPU-per-node log on DGX H100 is one GPU with its one NIC, not with eight, which
/// predicted 56 GB/s for a run at 93% of its one 200G link and fitted a NIC rate of 3.35 GB/s);
/// where that ratio gives no whole number, as many as the design has, at most one per GPU.
pub fn nics_for_gpus(spec: &ClusterSpec, gpus: u32) -> Option<u32> {
    let (g, n) = (
        u64::from(spec.servers.gpus_per_server),
        u64::from(spec.servers.compute_nics),
    );
    let nics = if g > 0 && (u64::from(gpus) * n) % g == 0 {
        u64::from(gpus) * n / g
    } else {
        n.min(u64::from(gpus))
    };
    u32::try_from(nics.max(1)).ok()
}

/// The run's rank count and where it comes from: its rank lines (`log`), else (a log without
/// them) the design's GPUs (`design`).
pub fn ranks_of(f: &Fabric, run: &Run) -> (u32, &'static str) {
    match run.ranks() {
        Some(n) => (n, "log"),
        None => (
            u32::try_from(f.servers.len() as u64 * u64::from(f.meta.gpus_per_server))
                .unwrap_or(u32::MAX),
            "design",
        ),
    }
}

/// A warning when the log's rank lines name a GPU that is not the design's: the prediction is then
/// of other hardware (an A100 log checked against the default DGX H100 design was called
/// "UNDERPERFORMS" on 27 of 31 sizes). A name matches when one of its words is the design's GPU
/// id (`NVIDIA H100 80GB HBM3`, `NVIDIA A100-SXM4-40GB`: words split at anything not a letter or
/// digit, so `GH200` is not `H200`). `None` without rank lines or when the GPU matches.
pub fn other_gpu(f: &Fabric, catalog: &Catalog, name: &str, run: &Run) -> Option<String> {
    let device = run.devices.first()?;
    let ours = f.meta.gpu_model.to_ascii_uppercase();
    let words: Vec<String> = device
        .name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_uppercase())
        .collect();
    if words.contains(&ours) {
        return None;
    }
    let known = catalog
        .gpus
        .keys()
        .find(|id| words.contains(&id.to_ascii_uppercase()));
    let remedy = match known {
        Some(id) => format!("give --gpu {id} (or a preset with {id} GPUs)"),
        None => format!(
            "the catalog has no such GPU (valid --gpu: {})",
            catalog.gpus.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
    };
    Some(format!(
        "{name}: the log ran on {} (rank {}), but the design's GPUs are {}: the prediction is of other hardware; {remedy}",
        device.name, device.rank, f.meta.gpu_model
    ))
}
