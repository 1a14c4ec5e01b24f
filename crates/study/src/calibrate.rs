//! A cluster's own nccl-tests logs against the model: `railyard calibrate` fits a
//! [`Calibration`] (the rate a NIC delivers, the latency NCCL's model leaves out) to them, and
//! `railyard check-nccl` sets each logged size beside its prediction ("is my number normal?").
//!
//! Every logged row with bytes moved and a positive time is a point; rows of 0 bytes (sizes below
//! the rank count) are left out. A prediction is `sim collective`'s: the collective the log's
//! header names, on the design's fabric, D-mod-K routing, PXN as NCCL sets it, algorithm and
//! protocol per size as NCCL's tuner picks them. Errors are relative errors of busbw (at one size
//! busbw scales as 1 / time, so the predicted busbw is the measured one times measured / predicted
//! time).
//!
//! Before any number is compared the log is held to the design and to itself: the collective the
//! header names wins over `--op`, and without a header the rows' busbw / algbw must be `--op`'s
//! factor ([`collective_of`]); the hosts x GPUs per host of its rank lines must be the design's
//! servers x GPUs per server ([`points`]); a row that returned wrong data is broken, not slow
//! (refused by [`calibrate`], flagged by [`check`]); a row above the busbw the design's NICs can carry
//! ([`busbw_bound`]) did not run on this design.

use railyard_catalog::Catalog;
use railyard_fabric::search::plural;
use railyard_fabric::Fabric;
use railyard_sim::calibration::{self, Calibration, Fit, FitBound, Residual};
use railyard_sim::collective::{self, AlgoChoice, CollectiveConfig, CollectiveError, Relay};
use railyard_sim::fabric_net::{self, NetConfig, RoutedNet};
use railyard_sim::nccl::{Collective, Protocols};
use railyard_sim::nccl_tests::Run;
use railyard_sim::routing::{RoutingConfig, RoutingKind};
use railyard_sim::SimError;
use std::fmt;

/// A parsed nccl-tests run, the name it is known by (its file) and the collective it measured
/// ([`collective_of`]).
#[derive(Debug, Clone, Copy)]
pub struct Log<'a> {
    pub name: &'a str,
    pub run: &'a Run,
    pub op: Collective,
    /// What the run's environment left NCCL to choose from.
    pub nccl: NcclEnv,
}

/// The algorithms and protocols a run's environment left NCCL (`NCCL_ALGO`, `NCCL_PROTO`; the
/// `--algo` and `--proto` of `calibrate` and `check-nccl`). A log does not record them, and a run
/// with `NCCL_ALGO=Ring` (the usual way to measure the network alone) is predicted as a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NcclEnv {
    pub algo: AlgoChoice,
    pub protocols: Protocols,
}

impl Default for NcclEnv {
    /// NCCL's defaults: its own choice of every algorithm and protocol.
    fn default() -> NcclEnv {
        NcclEnv {
            algo: AlgoChoice::Auto,
            protocols: Protocols::ALL,
        }
    }
}

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
fn either(ops: &[Collective]) -> String {
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

/// One logged size: where it is, what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index of the log in the list given.
    pub log: usize,
    /// 1-based line of the row in its log.
    pub line: usize,
    pub op: Collective,
    pub size: u64,
    pub measured_us: f64,
    pub measured_busbw_gbs: f64,
    /// The run returned wrong data at this size ([`Run::wrong_data`]).
    pub wrong_data: bool,
}

/// Why logs cannot be set against a design.
#[derive(Debug, Clone, PartialEq)]
pub enum CalibrateError {
    /// No logs were given.
    NoLogs,
    /// The log does not say which collective it measured, and its rows cannot tell: the factor
    /// they show on how many ranks and the collectives with it, where they agree on one.
    NoCollective {
        log: String,
        shown: Option<(f64, u32, Vec<Collective>)>,
        /// Whether the rank count is the log's (its rank lines) or the design's GPUs.
        ranks_from_log: bool,
    },
    /// The log's header names one collective and `--op` another.
    OpConflict {
        log: String,
        program: String,
        header: Collective,
        given: Collective,
    },
    /// The log's header names a program railyard does not model.
    Unmodelled { log: String, program: String },
    /// The log's header names one collective and its rows show another's busbw factor: the rank
    /// count (from the log's rank lines, else the design's GPUs) and the collectives with it.
    HeaderFactor {
        log: String,
        program: String,
        header: Collective,
        factor: f64,
        ranks: u32,
        ranks_from_log: bool,
        matches: Vec<Collective>,
    },
    /// `--op`'s busbw factor is not the one the log's rows show.
    OpFactor {
        log: String,
        given: Collective,
        factor: f64,
        ranks: u32,
        matches: Vec<Collective>,
    },
    /// The log's rank lines show another servers x GPUs per server shape than the design's.
    Shape {
        log: String,
        hosts: u32,
        gpus_per_host: u32,
        servers: u64,
        gpus_per_server: u32,
    },
    /// Rows that returned wrong data: (line, size) of each.
    WrongData {
        log: String,
        rows: Vec<(usize, u64)>,
    },
    /// Rows measured above the most busbw the design's NICs allow: (line, size, busbw) of each.
    Impossible {
        log: String,
        bound_gbs: f64,
        rows: Vec<(usize, u64, f64)>,
    },
    /// The fit stopped at the edge of the NIC rates it searches.
    FitBound { bound: FitBound, nominal_gbs: f64 },
    /// A row's busbw is not its algbw times the collective's factor on the run's ranks, within
    /// the digits printed: the row (its line and text), why, and where the rank count comes from.
    Busbw {
        log: String,
        line: usize,
        row: String,
        why: String,
        op: Collective,
        ranks: u32,
        ranks_from_log: bool,
    },
    /// The log ran on another number of ranks than the design has GPUs.
    Ranks {
        log: String,
        ranks: u32,
        design_gpus: u64,
    },
    /// The log has no row with bytes moved and a positive time.
    NoRows { log: String },
    /// The design's fabric has no NIC to calibrate.
    NoNic,
    /// The network could not be built.
    Net(SimError),
    /// A collective could not be simulated.
    Collective { log: String, error: CollectiveError },
    /// The simulation gave no time for a logged size.
    NoPrediction { log: String, line: usize, size: u64 },
}

impl fmt::Display for CalibrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibrateError::NoLogs => write!(f, "no nccl-tests log given"),
            CalibrateError::NoCollective {
                log,
                shown,
                ranks_from_log,
            } => {
                write!(
                    f,
                    "{log}: the log does not say which collective it measured (no `# Collective \
                     test starting: NAME_perf` line)"
                )?;
                if let Some((factor, n, ops)) = shown {
                    write!(
                        f,
                        " and its rows' busbw / algbw ({factor:.3} on {}{}) fits {}",
                        plural(u64::from(*n), "rank", "ranks"),
                        if *ranks_from_log {
                            ""
                        } else {
                            ", the design's GPUs: the log has no rank lines, so give the design \
                             it ran on (--servers, --gpus-per-server)"
                        },
                        either(ops)
                    )?;
                }
                write!(
                    f,
                    "; give --op (calibrate: --op LOG=OP for this log alone; valid: {})",
                    Collective::ALL.map(Collective::as_str).join(", ")
                )
            }
            CalibrateError::OpConflict {
                log,
                program,
                header,
                given,
            } => write!(
                f,
                "{log}: the log measured {header} (its header: `# Collective test starting: \
                 {program}`) but --op says {given}; leave --op out, or give the log of {given}"
            ),
            CalibrateError::Unmodelled { log, program } => write!(
                f,
                "{log}: the log measured `{}`, which railyard does not model (valid: {})",
                program.escape_debug(),
                Collective::ALL.map(Collective::as_str).join(", ")
            ),
            CalibrateError::HeaderFactor {
                log,
                program,
                header,
                factor,
                ranks,
                ranks_from_log,
                matches,
            } => write!(
                f,
                "{log}: the header names {header} (`# Collective test starting: {program}`) but \
                 its rows show busbw / algbw = {factor:.3} on {}{}, the factor of {} ({header}'s \
                 is {:.3}: nccl-tests PERFORMANCE.md); the header and the rows are of different \
                 collectives: give the log of one run as nccl-tests printed it{}",
                plural(u64::from(*ranks), "rank", "ranks"),
                if *ranks_from_log {
                    ""
                } else {
                    " (the design's GPUs: the log has no rank lines)"
                },
                either(matches),
                header.busbw_factor(*ranks),
                if *ranks_from_log {
                    ""
                } else {
                    ", or the design it ran on (--servers, --gpus-per-server)"
                }
            ),
            CalibrateError::OpFactor {
                log,
                given,
                factor,
                ranks,
                matches,
            } => write!(
                f,
                "{log}: --op {given} does not fit the log: its rows show busbw / algbw = \
                 {factor:.3} on {}, the factor of {} ({given}'s is {:.3}: nccl-tests \
                 PERFORMANCE.md); give the collective the log measured",
                plural(u64::from(*ranks), "rank", "ranks"),
                either(matches),
                given.busbw_factor(*ranks)
            ),
            CalibrateError::Shape {
                log,
                hosts,
                gpus_per_host,
                servers,
                gpus_per_server,
            } => write!(
                f,
                "{log}: the log's rank lines show {} x {} but the design has {} x {}; give the \
                 design it ran on (--servers, --gpus-per-server)",
                plural(u64::from(*hosts), "host", "hosts"),
                plural(u64::from(*gpus_per_host), "GPU", "GPUs"),
                plural(*servers, "server", "servers"),
                plural(u64::from(*gpus_per_server), "GPU", "GPUs"),
            ),
            CalibrateError::WrongData { log, rows } => write!(
                f,
                "{log}: {} returned wrong data (nccl-tests' #wrong / error column): {}; a run that \
                 returns wrong data is broken, not slow, and its times are not fitted",
                if rows.len() == 1 { "a row" } else { "rows" },
                rows.iter()
                    .map(|(line, size)| format!("line {line} ({size} bytes)"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            CalibrateError::Impossible {
                log,
                bound_gbs,
                rows,
            } => write!(
                f,
                "{log}: {} measured above {bound_gbs:.2} GB/s busbw, the most this design's NICs \
                 allow: {}; the log did not run on this design (check --servers, \
                 --gpus-per-server, --nics-per-server, --tech)",
                if rows.len() == 1 { "a row" } else { "rows" },
                rows.iter()
                    .map(|(line, size, bw)| format!("line {line} ({size} bytes, {bw:.2} GB/s)"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            CalibrateError::FitBound { bound, nominal_gbs } => match bound {
                FitBound::LineRate { faster, sizes } => write!(
                    f,
                    "the fit stopped at its upper bound, the NIC's line rate after headers \
                     ({nominal_gbs:.2} GB/s): at the {sizes} sizes whose time the NIC's rate \
                     enters, the logs are {:.0}% faster (median) than this design allows at that \
                     rate. The logs are faster than this design can be: check --tech (the NIC \
                     speed), --nics-per-server and --servers; no calibration written",
                    faster * 100.0
                ),
                FitBound::Floor { rate_gbs } => write!(
                    f,
                    "the fit stopped at its lower bound, a NIC rate of {rate_gbs:.2} GB/s (5% of \
                     the line rate after headers, {nominal_gbs:.2} GB/s): the logs are slower than \
                     any NIC rate explains, so something else holds them back (GPUDirect RDMA \
                     off: --gpudirect; fewer NICs in use than --nics-per-server; a NIC down); no \
                     calibration written"
                ),
            },
            CalibrateError::Busbw {
                log,
                line,
                row,
                why,
                op,
                ranks,
                ranks_from_log,
            } => write!(
                f,
                "{log}: line {line}: the row contradicts itself: {why}, {op}'s busbw factor on \
                 {} ({}nccl-tests PERFORMANCE.md: busbw = algbw x factor): `{}`; give the log as \
                 nccl-tests printed it{}",
                plural(u64::from(*ranks), "rank", "ranks"),
                if *ranks_from_log {
                    "the log's rank lines; "
                } else {
                    "the design's GPUs: the log has no rank lines; "
                },
                row.escape_debug(),
                if *ranks_from_log {
                    ""
                } else {
                    ", or the design it ran on (--servers, --gpus-per-server)"
                }
            ),
            CalibrateError::Ranks {
                log,
                ranks,
                design_gpus,
            } => write!(
                f,
                "{log}: the run has {ranks} ranks but the design has {design_gpus} GPUs; give the \
                 design it ran on (--servers, --gpus-per-server)"
            ),
            CalibrateError::NoRows { log } => {
                write!(f, "{log}: no row with bytes moved and a positive time")
            }
            CalibrateError::NoNic => write!(f, "the design has no NIC to calibrate"),
            CalibrateError::Net(e) => write!(f, "{e}"),
            CalibrateError::Collective { log, error } => write!(f, "{log}: {error}"),
            CalibrateError::NoPrediction { log, line, size } => write!(
                f,
                "{log}: line {line}: the model gives no time for {size} bytes"
            ),
        }
    }
}

impl std::error::Error for CalibrateError {}

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
fn fabric_ranks(fabric: &Fabric) -> u32 {
    u32::try_from(fabric.servers.len() as u64 * u64::from(fabric.meta.gpus_per_server))
        .unwrap_or(u32::MAX)
}

/// Whether a measured busbw is above `bound`, beyond the two decimals nccl-tests prints.
fn above_bound(busbw: f64, bound: Option<f64>) -> bool {
    bound.is_some_and(|b| busbw > b * 1.005 + 0.01)
}

/// One point's prediction: time, and the algorithm and protocol NCCL's tuner picked.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub time_us: f64,
    /// The part of `time_us` that does not grow with the size (`RowResult::latency_us`).
    pub latency_us: f64,
    pub algorithm: &'static str,
    pub protocol: &'static str,
}

/// The largest median busbw error a calibration leaves without a warning, 20%: the tolerance
/// `check-nccl` holds a log to by default. Past it a NIC rate and a latency do not describe the
/// logs on this design, and every command calibrated with it carries the mismatch
/// ([`Calibrated::poor_fit`]).
pub const POOR_FIT: f64 = 0.20;

/// The share of a predicted time its latency must reach, at one logged size at least, for a fit to
/// tell an added latency from a slower NIC: below it at every size, the logs are all in the
/// bandwidth regime and the latency is left at 0 ([`calibration::fit_with`]).
pub const LATENCY_REGIME_SHARE: f64 = 0.10;

/// The model's prediction of every point on `fabric` with `calibration` applied.
pub fn predict(
    fabric: &Fabric,
    catalog: &Catalog,
    calibration: &Calibration,
    logs: &[Log<'_>],
    points: &[Point],
) -> Result<Vec<Predicted>, CalibrateError> {
    let config = NetConfig {
        calibration: *calibration,
        ..NetConfig::default()
    };
    let RoutedNet { net, router } = RoutedNet::new(
        fabric,
        catalog,
        &config,
        RoutingKind::DModK,
        RoutingConfig::default(),
    )
    .map_err(CalibrateError::Net)?;
    let mut out: Vec<Option<Predicted>> = vec![None; points.len()];
    for (i, l) in logs.iter().enumerate() {
        let mine: Vec<usize> = (0..points.len()).filter(|&p| points[p].log == i).collect();
        let Some(&first) = mine.first() else { continue };
        let mut sizes: Vec<u64> = mine.iter().map(|&p| points[p].size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        let cfg = CollectiveConfig {
            relay: Relay::auto(fabric),
            collnet: net.sharp(),
            algo: l.nccl.algo,
            protocols: l.nccl.protocols,
            ..CollectiveConfig::new(points[first].op)
        };
        // Timed as the log's nccl-tests ran: `nGpus` GPUs per thread (`-g`), whose launches take the
        // place of NCCL's latency where longer.
        let sweep = collective::run(&net, &router, &cfg, &sizes, &mut |_| {})
            .and_then(|s| s.driven_by_one_thread(l.run.gpus_per_process.unwrap_or(1).max(1)))
            .map_err(|error| CalibrateError::Collective {
                log: l.name.to_string(),
                error,
            })?;
        for &p in &mine {
            let row = sweep
                .rows
                .iter()
                .find(|r| r.row.size_bytes == points[p].size)
                .or_else(|| sweep.rows.get(sizes.binary_search(&points[p].size).ok()?));
            out[p] = row.map(|r| Predicted {
                time_us: r.row.time_us,
                latency_us: r.latency_us,
                algorithm: r.algorithm,
                protocol: r.protocol.as_str(),
            });
        }
    }
    out.into_iter()
        .zip(points)
        .map(|(p, pt)| {
            p.filter(|p| p.time_us > 0.0 && p.time_us.is_finite())
                .ok_or_else(|| CalibrateError::NoPrediction {
                    log: logs[pt.log].name.to_string(),
                    line: pt.line,
                    size: pt.size,
                })
        })
        .collect()
}

/// The relative errors of predicted busbw against measured busbw, from times (busbw at one size
/// scales as 1 / time).
pub fn busbw_residual(predicted_us: &[f64], measured_us: &[f64]) -> Residual {
    let inv = |v: &[f64]| v.iter().map(|t| 1.0 / t).collect::<Vec<f64>>();
    Residual::of(&inv(predicted_us), &inv(measured_us))
}

/// A calibration fitted to logs, with the points it used.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    pub fit: Fit,
    /// The NIC payload rate the fit searched below, GB/s.
    pub nominal_nic_gbs: f64,
    pub points: Vec<Point>,
    /// Rows left out (0 bytes or no positive time).
    pub skipped: usize,
    /// busbw residuals before and after (the fit's own residuals are of time).
    pub busbw_before: Residual,
    pub busbw_after: Residual,
}

impl Calibrated {
    /// Where the fitted NIC rate is below what a logged row needs: the busbw bound scales with the
    /// NIC rate, so a row measured at busbw B where the bound at line rate is U needs at least
    /// `nominal x B / U` per NIC. The time-weighted fit can settle below it (issue 309's 2 x H100
    /// all-reduce: 27.98 GB/s, while its 16 GiB row needs 31.3), and the calibrated model then
    /// runs that size slower than the log measured it. The neediest row: (index into `points`,
    /// the rate it needs, GB/s).
    pub fn nic_below_needed(&self, fabric: &Fabric) -> Option<(usize, f64)> {
        let fitted = self.fit.calibration.nic_gbs?;
        let (i, needed) = self
            .points
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.wrong_data)
            .filter_map(|(i, p)| {
                let bound = busbw_bound(fabric, p.op)?;
                (bound > 0.0).then(|| (i, self.nominal_nic_gbs * p.measured_busbw_gbs / bound))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        // Beyond the two decimals nccl-tests prints and calibrate writes.
        (fitted < needed * 0.999).then_some((i, needed))
    }

    /// Where the fit leaves the median size more than [`POOR_FIT`] off (busbw): the worst size's
    /// (log, line, size, predicted / measured busbw - 1).
    pub fn poor_fit(&self) -> Option<(usize, usize, u64, f64)> {
        if self.busbw_after.median_abs <= POOR_FIT {
            return None;
        }
        let measured = self.points.iter().map(|p| p.measured_us);
        let (i, err) = self
            .fit
            .after
            .iter()
            .zip(measured)
            .map(|(p, m)| m / p - 1.0)
            .enumerate()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
        let p = &self.points[i];
        Some((p.log, p.line, p.size, err))
    }
}

/// Fits a calibration to `logs` run on `fabric`.
pub fn calibrate(
    fabric: &Fabric,
    catalog: &Catalog,
    logs: &[Log<'_>],
) -> Result<Calibrated, CalibrateError> {
    let (points, skipped) = points(fabric, logs)?;
    for (i, l) in logs.iter().enumerate() {
        let mine = || points.iter().filter(move |p| p.log == i);
        let wrong: Vec<(usize, u64)> = mine()
            .filter(|p| p.wrong_data)
            .map(|p| (p.line, p.size))
            .collect();
        if !wrong.is_empty() {
            return Err(CalibrateError::WrongData {
                log: l.name.to_string(),
                rows: wrong,
            });
        }
    }
    let nominal = fabric_net::nic_payload_gbs(fabric).ok_or(CalibrateError::NoNic)?;
    let measured: Vec<f64> = points.iter().map(|p| p.measured_us).collect();
    let fit_latency = predict(fabric, catalog, &Calibration::default(), logs, &points)?
        .iter()
        .any(|p| p.latency_us >= LATENCY_REGIME_SHARE * p.time_us);
    let fit = calibration::fit_with(&measured, nominal, fit_latency, &mut |c| {
        predict(fabric, catalog, c, logs, &points)
            .map(|v| v.into_iter().map(|p| p.time_us).collect())
    })?;
    if let Some(bound) = fit.bound {
        return Err(CalibrateError::FitBound {
            bound,
            nominal_gbs: nominal,
        });
    }
    for (i, l) in logs.iter().enumerate() {
        let mine = || points.iter().filter(move |p| p.log == i);
        let bound = busbw_bound(fabric, l.op);
        let over: Vec<(usize, u64, f64)> = mine()
            .filter(|p| above_bound(p.measured_busbw_gbs, bound))
            .map(|p| (p.line, p.size, p.measured_busbw_gbs))
            .collect();
        if let (Some(bound_gbs), false) = (bound, over.is_empty()) {
            return Err(CalibrateError::Impossible {
                log: l.name.to_string(),
                bound_gbs,
                rows: over,
            });
        }
    }
    Ok(Calibrated {
        busbw_before: busbw_residual(&fit.before, &measured),
        busbw_after: busbw_residual(&fit.after, &measured),
        fit,
        nominal_nic_gbs: nominal,
        points,
        skipped,
    })
}

/// One row of a check: a logged size beside its prediction.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRow {
    pub point: Point,
    pub predicted: Predicted,
    pub predicted_busbw_gbs: f64,
    /// measured / predicted busbw - 1 (negative: slower than the model).
    pub error: f64,
    /// More than the tolerance slower than predicted.
    pub below: bool,
    /// More than the tolerance faster than predicted (the model is pessimistic there), and not
    /// [`CheckRow::impossible`].
    pub above: bool,
    /// The run returned wrong data at this size: broken, whatever its time.
    pub wrong_data: bool,
    /// Measured above [`Check::bound_busbw_gbs`]: more than the design's NICs can carry, so the log
    /// did not run on this design.
    pub impossible: bool,
}

/// A log checked against a design.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub rows: Vec<CheckRow>,
    pub skipped: usize,
    pub tolerance: f64,
    pub residual: Residual,
    /// The most busbw the design's NICs allow ([`busbw_bound`]); `None` on one server.
    pub bound_busbw_gbs: Option<f64>,
}

impl Check {
    /// Rows that returned wrong data.
    pub fn wrong_data(&self) -> usize {
        self.rows.iter().filter(|r| r.wrong_data).count()
    }

    /// Rows measured above what the design allows.
    pub fn impossible(&self) -> usize {
        self.rows.iter().filter(|r| r.impossible).count()
    }

    /// Whether the run is sound and delivers what the design should: no wrong data, nothing above
    /// the design's bound, nothing below the tolerance.
    pub fn ok(&self) -> bool {
        self.below() == 0 && self.wrong_data() == 0 && self.impossible() == 0
    }

    /// Rows more than the tolerance below the prediction.
    pub fn below(&self) -> usize {
        self.rows.iter().filter(|r| r.below).count()
    }

    /// Rows more than the tolerance above the prediction.
    pub fn above(&self) -> usize {
        self.rows.iter().filter(|r| r.above).count()
    }

    /// One line: whether the run is within the tolerance of the prediction, and where not. Wrong
    /// data and rows above the design's bound come first: neither is a speed to compare.
    pub fn verdict(&self) -> String {
        let n = self.rows.len();
        let pct = self.tolerance * 100.0;
        let mut broken = Vec::new();
        let wrong: Vec<&CheckRow> = self.rows.iter().filter(|r| r.wrong_data).collect();
        if let Some(first) = wrong.first() {
            broken.push(format!(
                "DATA ERRORS: {} of {n} sizes returned wrong data (nccl-tests' #wrong or \
                 error column; first at {} bytes, line {}): the run is broken, not slow",
                wrong.len(),
                first.point.size,
                first.point.line
            ));
        }
        let worst = self.rows.iter().filter(|r| r.impossible).max_by(|x, y| {
            x.point
                .measured_busbw_gbs
                .total_cmp(&y.point.measured_busbw_gbs)
        });
        if let (Some(w), Some(bound)) = (worst, self.bound_busbw_gbs) {
            broken.push(format!(
                "IMPOSSIBLE FOR THIS DESIGN: {} of {n} sizes measured above {bound:.2} GB/s busbw, \
                 the most its NICs allow ({:.2} GB/s at {} bytes): the log did not run on this \
                 design; check --servers, --gpus-per-server, --nics-per-server, --tech",
                self.impossible(),
                w.point.measured_busbw_gbs,
                w.point.size
            ));
        }
        if !broken.is_empty() {
            return broken.join("; ");
        }
        match (self.below(), self.above()) {
            (0, 0) => format!("OK: all {n} sizes within {pct:.0}% of the prediction"),
            (0, a) => format!(
                "OK: no size more than {pct:.0}% below the prediction; {a} of {n} above it (the \
                 model is pessimistic there)"
            ),
            (b, _) => {
                let worst = self
                    .rows
                    .iter()
                    .filter(|r| r.below)
                    .min_by(|x, y| x.error.total_cmp(&y.error))
                    .map(|r| (r.point.size, r.error));
                let (size, e) = worst.unwrap_or((0, 0.0));
                format!(
                    "UNDERPERFORMS: {b} of {n} sizes more than {pct:.0}% below the prediction \
                     (worst {:.1}% at {size} bytes)",
                    e * 100.0
                )
            }
        }
    }
}

/// Sets every row of `log` beside its prediction on `fabric` with `calibration`; rows more than
/// `tolerance` (relative busbw) below the prediction are flagged.
pub fn check(
    fabric: &Fabric,
    catalog: &Catalog,
    calibration: &Calibration,
    log: Log<'_>,
    tolerance: f64,
) -> Result<Check, CalibrateError> {
    let logs = [log];
    let (points, skipped) = points(fabric, &logs)?;
    let predicted = predict(fabric, catalog, calibration, &logs, &points)?;
    let measured: Vec<f64> = points.iter().map(|p| p.measured_us).collect();
    let times: Vec<f64> = predicted.iter().map(|p| p.time_us).collect();
    let residual = busbw_residual(&times, &measured);
    let bound = busbw_bound(fabric, log.op);
    let ranks = fabric_ranks(fabric);
    let rows = points
        .into_iter()
        .zip(predicted)
        .map(|(point, predicted)| {
            // nccl-tests' busbw of the predicted time (bytes per microsecond / 1e3 = GB/s), as
            // `sim collective` prints it: not the log's rounded busbw scaled by the times.
            let predicted_busbw_gbs =
                point.size as f64 * point.op.busbw_factor(ranks) / (predicted.time_us * 1e3);
            let error = predicted.time_us / point.measured_us - 1.0;
            let impossible = above_bound(point.measured_busbw_gbs, bound);
            CheckRow {
                below: error < -tolerance,
                above: error > tolerance && !impossible,
                wrong_data: point.wrong_data,
                impossible,
                point,
                predicted,
                predicted_busbw_gbs,
                error,
            }
        })
        .collect();
    Ok(Check {
        rows,
        skipped,
        tolerance,
        residual,
        bound_busbw_gbs: bound,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use railyard_sim::nccl_tests::parse;

    fn log(header: &str, rows: &str) -> Run {
        let text = format!(
            "{header}# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n\
             #\n# Using devices\n\
             #  Rank  0 Group  0 Pid  1 on  a device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n\
             #  Rank  1 Group  0 Pid  2 on  a device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n\
             #  Rank  2 Group  0 Pid  3 on  b device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n\
             #  Rank  3 Group  0 Pid  4 on  b device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n\
             #\n\
             #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
             #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n\
             {rows}"
        );
        parse(&text).unwrap().runs.remove(0)
    }

    const ALL_REDUCE: &str = "\
           0             0     float     sum      -1     1.00    0.00    0.00      0     1.00    0.00    0.00      0
  1073741824     268435456     float     sum      -1  10000.0  107.37  161.06      0  10000.0  107.37  161.06      0
";

    const GATHER: &str = "  1073741824     268435456     float    none      -1  10000.0  107.37   80.53      0  10000.0  107.37   80.53      0\n";

    /// The header names the collective, and `--op` naming another is refused; without it all-reduce
    /// is told by busbw/algbw = 2(n-1)/n, anything else needs `--op`, and an `--op` whose factor the
    /// rows contradict is refused. The shape is read off the rank lines: 2 hosts x 2 GPUs.
    #[test]
    fn the_collective_and_shape_come_from_the_log() {
        let named = log("# Collective test starting: all_gather_perf\n", GATHER);
        assert_eq!(
            collective_of("x", &named, None, None),
            Ok(Collective::AllGather)
        );
        assert_eq!(
            collective_of("x", &named, Some(Collective::AllGather), None),
            Ok(Collective::AllGather)
        );
        let e = collective_of("ag.txt", &named, Some(Collective::Broadcast), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ag.txt: the log measured allgather (its header: `# Collective test starting: \
             all_gather_perf`) but --op says broadcast; leave --op out, or give the log of broadcast"
        );
        let other = log("# Collective test starting: gather_perf\n", GATHER);
        let e = collective_of("g.txt", &other, Some(Collective::AllGather), None).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "g.txt: the log measured `gather_perf`, which railyard does not model"
            ),
            "{e}"
        );
        let bare = log("", ALL_REDUCE);
        assert_eq!(
            collective_of("x", &bare, None, None),
            Ok(Collective::AllReduce)
        );
        assert_eq!(shape_of_log(&bare), Some((2, 2)));
        let e = collective_of("r.log", &bare, Some(Collective::AllGather), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "r.log: --op allgather does not fit the log: its rows show busbw / algbw = 1.500 on 4 \
             ranks, the factor of allreduce (allgather's is 0.750: nccl-tests PERFORMANCE.md); give \
             the collective the log measured"
        );
        let gather = log("", GATHER);
        let e = collective_of("g.log", &gather, None, None).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "g.log: the log does not say which collective it measured (no `# Collective test \
                 starting: NAME_perf` line) and its rows' busbw / algbw (0.750 on 4 ranks) fits \
                 allgather, reducescatter or alltoall; give --op"
            ),
            "{e}"
        );
        // Without rank lines the count is the design's, and the message says so (a 2-rank
        // all-gather read on the default design's 1,016 GPUs fitted nothing, with no word why).
        let mut bare_gather = gather.clone();
        bare_gather.devices.clear();
        let e = collective_of("g.log", &bare_gather, None, Some(1016)).unwrap_err();
        assert!(
            e.to_string().contains(
                "(0.750 on 1,016 ranks, the design's GPUs: the log has no rank lines, so give the \
                 design it ran on (--servers, --gpus-per-server)) fits no collective"
            ),
            "{e}"
        );
        for op in [
            Collective::AllGather,
            Collective::ReduceScatter,
            Collective::AllToAll,
        ] {
            assert_eq!(collective_of("g.log", &gather, Some(op), None), Ok(op));
        }
        assert!(collective_of("g.log", &gather, Some(Collective::Broadcast), None).is_err());
    }

    /// Regression: a header naming one collective was taken whatever the rows showed. Rows whose
    /// busbw / algbw is another collective's factor are refused naming both, as `--op` is; rows that
    /// fit the header's factor are taken, with or without rank lines.
    #[test]
    fn a_header_whose_rows_show_another_factor_is_refused() {
        let wrong = log("# Collective test starting: all_gather_perf\n", ALL_REDUCE);
        let e = collective_of("ag.txt", &wrong, None, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ag.txt: the header names allgather (`# Collective test starting: all_gather_perf`) \
             but its rows show busbw / algbw = 1.500 on 4 ranks, the factor of allreduce \
             (allgather's is 0.750: nccl-tests PERFORMANCE.md); the header and the rows are of \
             different collectives: give the log of one run as nccl-tests printed it"
        );
        // `--op` agreeing with the header does not make the rows fit.
        assert!(collective_of("ag.txt", &wrong, Some(Collective::AllGather), None).is_err());
        let wrong = log("# Collective test starting: sendrecv_perf\n", GATHER);
        let e = collective_of("sr.txt", &wrong, None, None).unwrap_err();
        assert!(
            e.to_string().contains(
                "the factor of allgather, reducescatter or alltoall (sendrecv's is 1.000"
            ),
            "{e}"
        );
        // The header's own factor on the log's ranks: taken.
        for (program, rows, op) in [
            ("all_reduce_perf", ALL_REDUCE, Collective::AllReduce),
            ("all_gather_perf", GATHER, Collective::AllGather),
            ("alltoall_perf", GATHER, Collective::AllToAll),
        ] {
            let run = log(&format!("# Collective test starting: {program}\n"), rows);
            assert_eq!(collective_of("x", &run, None, None), Ok(op));
        }
    }

    /// The verdict: below the tolerance is underperforming (the worst size named), above it only
    /// says the model is pessimistic.
    #[test]
    fn the_verdict_flags_rows_below_the_prediction() {
        let row = |size: u64, error: f64| CheckRow {
            point: Point {
                log: 0,
                line: 1,
                op: Collective::AllReduce,
                size,
                measured_us: 1.0,
                measured_busbw_gbs: 1.0,
                wrong_data: false,
            },
            predicted: Predicted {
                time_us: 1.0,
                latency_us: 0.0,
                algorithm: "ring",
                protocol: "Simple",
            },
            predicted_busbw_gbs: 1.0,
            error,
            below: error < -0.2,
            above: error > 0.2,
            wrong_data: false,
            impossible: false,
        };
        let check = |rows: Vec<CheckRow>| Check {
            rows,
            skipped: 0,
            tolerance: 0.2,
            residual: Residual {
                median_abs: 0.0,
                worst_abs: 0.0,
            },
            bound_busbw_gbs: Some(100.0),
        };
        assert_eq!(
            check(vec![row(8, 0.1), row(16, -0.1)]).verdict(),
            "OK: all 2 sizes within 20% of the prediction"
        );
        assert!(check(vec![row(8, 0.5), row(16, 0.0)])
            .verdict()
            .starts_with("OK: no size more than 20% below the prediction; 1 of 2 above it"));
        assert_eq!(
            check(vec![row(8, -0.3), row(16, -0.5), row(32, 0.0)]).verdict(),
            "UNDERPERFORMS: 2 of 3 sizes more than 20% below the prediction (worst -50.0% at 16 bytes)"
        );
        // Wrong data and rows above the design's bound come before any speed.
        let mut rows = vec![row(8, -0.5), row(16, 0.0), row(32, 9.0)];
        rows[1].wrong_data = true;
        rows[2].impossible = true;
        rows[2].above = false;
        rows[2].point.measured_busbw_gbs = 900.0;
        let c = check(rows);
        assert_eq!((c.wrong_data(), c.impossible(), c.ok()), (1, 1, false));
        assert_eq!(
            c.verdict(),
            "DATA ERRORS: 1 of 3 sizes returned wrong data (nccl-tests' #wrong or error column; \
             first at 16 bytes, line 1): the run is broken, not slow; IMPOSSIBLE FOR THIS DESIGN: 1 of 3 sizes measured above \
             100.00 GB/s busbw, the most its NICs allow (900.00 GB/s at 32 bytes): the log did not \
             run on this design; check --servers, --gpus-per-server, --nics-per-server, --tech"
        );
    }
}
