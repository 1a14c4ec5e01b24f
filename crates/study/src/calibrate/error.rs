//! Why logs cannot be set against a design, each error naming the log, its line and what would
//! make it fit.

use super::logs::either;
use railyard_fabric::search::plural;
use railyard_sim::calibration::FitBound;
use railyard_sim::collective::CollectiveError;
use railyard_sim::nccl::Collective;
use railyard_sim::SimError;
use std::fmt;

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
