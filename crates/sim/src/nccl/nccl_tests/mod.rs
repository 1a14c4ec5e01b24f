//! nccl-tests output, read back: the logs users paste when they ask "is my number normal?".
//!
//! The format is what `all_reduce_perf` and its siblings print (NVIDIA/nccl-tests, `src/util.cu` and,
//! before 2.13, `src/common.cu` and each test's `print_header`):
//!
//! ```text
//! # nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
//! # Collective test starting: all_reduce_perf
//! # nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
//! #
//! # Using devices
//! #  Rank  0 Group  0 Pid  12345 on   node001 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
//! #
//! #                                                              out-of-place                       in-place
//! #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//! #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//!            8             2     float     sum      -1    36.04    0.00    0.00      0    35.87    0.00    0.00      0
//! # Out of bounds values : 0 OK
//! # Avg bus bandwidth    : 114.538
//! ```
//!
//! The reader is driven by the column header, so every variant nccl-tests has printed reads the same
//! way: with or without `redop` and `root` (before 2.13 all-gather had neither), `error` (values such
//! as `0e+00`) or `#wrong` (a count or `N/A`), `cputime` instead of `time` (`-C`), the per-iteration
//! columns of `-I` (`i_min` ...), a trailing timestamp (`-S`), and in-place results only (trace
//! replay). Device lines of every age (`#   Rank  0 on host device 0 [0x07] Tesla V100`, with `Pid`,
//! with `Group`) give the ranks and hosts. Lines that are not nccl-tests output (NCCL_DEBUG=INFO
//! lines, warnings, `mpirun` noise) are skipped; `mpirun --tag-output` prefixes (`[1,0]<stdout>:`)
//! are removed. Several runs in one file (logs concatenated, or one program per collective) become
//! several [`Run`]s.
//!
//! Which collective a run measured is printed only since nccl-tests 2.14 (`# Collective test
//! starting: all_reduce_perf`); for older logs the caller names it ([`Run::collective`] is `None`).
//!
//! A log cut off in the middle of its last line (a truncated file, a paste cut short) loses that
//! row only: it is left out and named in [`Log::warnings`]. A row cut short anywhere else is an
//! error.
//!
//! A row whose numbers contradict each other is an error too (`consistency`): its algbw must be
//! its size over its time, and the busbw / algbw of every row of a run one factor, each within the
//! rounding of the digits printed. nccl-tests computes them so; a row that breaks it was edited or
//! mangled, and none of its numbers can be taken as measured. Whether that one factor is the
//! collective's on the run's ranks is for the caller, who knows both ([`Measurement::busbw_disagrees`]).

use crate::nccl::nccl_tests::read::read_device;
use crate::nccl::nccl_tests::read::read_header;
use crate::nccl::nccl_tests::read::read_row;
use crate::nccl::nccl_tests::read::read_threads;
use crate::nccl::Collective;
use consistency::Printed;
use std::fmt;

mod read;

mod consistency;

/// A whole log: one or more runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Log {
    pub runs: Vec<Run>,
    /// Rows left out, with why (the last line of the file cut short).
    pub warnings: Vec<ParseError>,
}

/// One run of one nccl-tests program.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The program, as nccl-tests names it (`all_reduce_perf`), when the log says.
    pub program: Option<String>,
    /// The collective the program measures, when the log says and railyard models it.
    pub collective: Option<Collective>,
    /// `nThread` and `nGpus` of the `# nThread` line (per process), when present.
    pub threads: Option<u32>,
    pub gpus_per_process: Option<u32>,
    /// What the table's correctness column holds, when it has one.
    pub check_column: Option<CheckColumn>,
    /// One entry per rank listed under `# Using devices`.
    pub devices: Vec<Device>,
    /// The result rows, in the order printed.
    pub rows: Vec<ResultRow>,
    /// `# Avg bus bandwidth : X`, GB/s.
    pub avg_busbw_gbs: Option<f64>,
    /// The 1-based line of the log where the run starts (for messages).
    pub first_line: usize,
}

/// The correctness column of a result table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckColumn {
    /// `#wrong` (nccl-tests 2.13 and later): the number of elements that came out wrong.
    WrongElements,
    /// `error` (before 2.13): the largest absolute difference from the expected value.
    MaxError,
}

/// The largest `error` of a row nccl-tests before 2.13 still counted as correct, per rank beyond the
/// first: its `DeltaMaxValue(type)` (src/common.cu: half 1e-2, float 1e-5, double 1e-12, integers
/// 1e-200), multiplied by `nranks - 1` in `CheckData`. `None` for a type that table does not name.
pub fn max_error_allowed(data_type: &str) -> Option<f64> {
    match data_type {
        "half" | "float16" => Some(1e-2),
        "float" | "float32" => Some(1e-5),
        "double" | "float64" => Some(1e-12),
        "char" | "int" | "int8" | "uint8" | "int32" | "uint32" | "int64" | "uint64" => Some(1e-200),
        _ => None,
    }
}

/// A rank and where it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub rank: u32,
    pub host: String,
    pub device: u32,
    /// The GPU's name as CUDA reports it (`NVIDIA H100 80GB HBM3`).
    pub name: String,
}

/// One line of the result table.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    /// 1-based line number in the log.
    pub line: usize,
    /// Bytes: for all-gather, reduce-scatter and all-to-all the whole array, as nccl-tests defines it.
    pub size: u64,
    pub count: u64,
    pub data_type: String,
    /// `sum`, `none`, ... (absent in old all-gather logs).
    pub redop: Option<String>,
    /// The root rank, -1 for collectives without one (absent in old logs).
    pub root: Option<i64>,
    pub out_of_place: Option<Measurement>,
    pub in_place: Option<Measurement>,
    /// The row as the log prints it (launcher prefix and outer blanks removed), for messages.
    pub text: String,
}

/// Time and bandwidths of one placement (out-of-place or in-place).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Microseconds (wall or, with `-C`, CPU time).
    pub time_us: f64,
    pub algbw_gbs: f64,
    pub busbw_gbs: f64,
    /// Wrong elements (or the maximum error of old logs); `None` when not checked (`N/A`).
    pub wrong: Option<f64>,
    /// How finely each number was printed: half a unit in its last printed place.
    pub rounding: Rounding,
}

/// Half a unit in the last printed place of a measurement's numbers (`46.79`: 0.005): the
/// interval each printed value stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rounding {
    pub time_us: f64,
    pub algbw_gbs: f64,
    pub busbw_gbs: f64,
}

impl Measurement {
    fn printed(&self) -> (Printed, Printed, Printed) {
        let p = |value, half_unit| Printed { value, half_unit };
        (
            p(self.time_us, self.rounding.time_us),
            p(self.algbw_gbs, self.rounding.algbw_gbs),
            p(self.busbw_gbs, self.rounding.busbw_gbs),
        )
    }

    /// Why this measurement's busbw is not its algbw times `factor` (a collective's busbw factor
    /// on the run's ranks, [`Collective::busbw_factor`]) within the digits printed, or `None`
    /// when it is.
    pub fn busbw_disagrees(&self, factor: f64) -> Option<String> {
        let (_, algbw, busbw) = self.printed();
        consistency::busbw_disagrees(algbw, busbw, factor)
    }
}

impl Run {
    /// Ranks in the run: the devices listed under `# Using devices`, or past the highest rank number
    /// listed where some lines are left out (a log shortened by hand to `Rank 0`, `Rank 1`, `...`,
    /// `Rank 7` ran on 8); `None` without them (the `# nThread` line counts the GPUs of one process,
    /// not of the run).
    pub fn ranks(&self) -> Option<u32> {
        let highest = self.devices.iter().map(|d| d.rank).max()?;
        let listed = u32::try_from(self.devices.len()).ok()?;
        Some(listed.max(highest.saturating_add(1)))
    }

    /// Whether rank lines were left out of the log (fewer listed than the highest rank number
    /// implies): the hosts they ran on are then unknown.
    pub fn ranks_elided(&self) -> bool {
        self.ranks()
            .is_some_and(|n| usize::try_from(n).is_ok_and(|n| n > self.devices.len()))
    }

    /// GPUs one process drove: `nThread x nGpus` of the `# nThread` line.
    pub fn ranks_per_process(&self) -> Option<u32> {
        self.threads?.checked_mul(self.gpus_per_process?)
    }

    /// Whether a row returned wrong data in either placement, as nccl-tests judged it: `#wrong`
    /// above 0, or (before 2.13) an `error` above what [`max_error_allowed`] allows on `ranks`
    /// ranks. Unchecked rows (`N/A`, `-c 0`) and types the old table does not name are not wrong,
    /// and neither is an all-to-all's in-place half: nccl-tests does not run all-to-all in place
    /// and does not report its errors (src/alltoall.cu `AlltoAllInitData`: `args->reportErrors =
    /// in_place ? 0 : 1`), though logs before 2.13 print whatever the check found there.
    pub fn wrong_data(&self, row: &ResultRow, ranks: u32, op: Collective) -> bool {
        let allowed = match self.check_column {
            None => return false,
            Some(CheckColumn::WrongElements) => 0.0,
            Some(CheckColumn::MaxError) => match max_error_allowed(&row.data_type) {
                Some(d) => d * f64::from(ranks.saturating_sub(1).max(1)),
                None => return false,
            },
        };
        let in_place = if op == Collective::AllToAll {
            None
        } else {
            row.in_place
        };
        [row.out_of_place, in_place]
            .iter()
            .flatten()
            .any(|m| m.wrong.is_some_and(|w| w > allowed))
    }

    /// Distinct hosts among the devices, in first-seen order.
    pub fn hosts(&self) -> Vec<&str> {
        let mut hosts: Vec<&str> = Vec::new();
        for d in &self.devices {
            if !hosts.contains(&d.host.as_str()) {
                hosts.push(&d.host);
            }
        }
        hosts
    }
}

impl ResultRow {
    /// The measurement users quote: out-of-place, or in-place where only that was run.
    pub fn measurement(&self) -> Option<&Measurement> {
        self.out_of_place.as_ref().or(self.in_place.as_ref())
    }
}

/// A line that cannot be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number; 0 for the file as a whole.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

/// The collective an nccl-tests program measures (`all_reduce_perf` -> all-reduce); `None` for
/// programs railyard does not model (`gather_perf`, `alltoallv_perf`, `hypercube_perf`, ...).
pub fn collective_of_program(program: &str) -> Option<Collective> {
    let name = program.rsplit('/').next().unwrap_or(program);
    let name = name
        .strip_suffix("_perf")
        .or_else(|| name.strip_suffix("_perf_mpi"))?;
    Some(match name {
        "all_reduce" => Collective::AllReduce,
        "all_gather" => Collective::AllGather,
        "reduce_scatter" => Collective::ReduceScatter,
        "broadcast" => Collective::Broadcast,
        "reduce" => Collective::Reduce,
        "alltoall" => Collective::AllToAll,
        "sendrecv" => Collective::SendRecv,
        _ => return None,
    })
}

/// What a column of the result table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Size,
    Count,
    Type,
    Redop,
    Root,
    Time,
    AlgBw,
    BusBw,
    Wrong,
    /// Per-iteration statistics and anything else nccl-tests may add: read past.
    Other,
}

/// The column layout of a run's table.
#[derive(Debug, Clone)]
struct Layout {
    columns: Vec<Column>,
    /// Whether the header ends in a timestamp column (one more field, containing spaces).
    timestamp: bool,
    check_column: Option<CheckColumn>,
    /// The time columns are `cputime` (`-C 1`): CPU time, while the bandwidths are still of the
    /// wall time, so the time does not give algbw.
    cpu_time: bool,
}

/// Reads an nccl-tests log. Errors name the line; a file with no result rows is an error.
pub fn parse(text: &str) -> Result<Log, ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut runs: Vec<Run> = Vec::new();
    let mut run = new_run(1);
    let mut layout: Option<Layout> = None;
    let mut warnings = Vec::new();
    // The last line with text: where a file cut short ends.
    let last = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !strip_launcher_prefix(l).trim().is_empty())
        .last()
        .map(|(i, _)| i + 1);
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = strip_launcher_prefix(raw).trim_end_matches('\r');
        let trimmed = line.trim();
        if let Some(comment) = trimmed.strip_prefix('#') {
            let c = comment.trim();
            if let Some(program) = c.strip_prefix("Collective test starting:") {
                start_run(&mut runs, &mut run, &mut layout, n);
                let program = program.trim().to_string();
                run.collective = collective_of_program(&program);
                run.program = Some(program);
            } else if c.starts_with("nThread ") {
                if !run.rows.is_empty() {
                    start_run(&mut runs, &mut run, &mut layout, n);
                }
                read_threads(c, &mut run);
            } else if c.starts_with("Rank ") {
                run.devices.push(read_device(c, n)?);
            } else if let Some(rest) = c.strip_prefix("Avg bus bandwidth") {
                let value = rest
                    .trim_start()
                    .trim_start_matches(':')
                    .split_whitespace()
                    .next();
                run.avg_busbw_gbs = value
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| v.is_finite());
            } else if let Some(l) = read_header(c) {
                run.check_column = l.check_column;
                layout = Some(l);
            }
            continue;
        }
        // The column header without its `#`: a log pasted into a GitHub comment outside a code
        // block, where `#` lines became headings and lost it.
        if let Some(l) = read_header(trimmed) {
            run.check_column = l.check_column;
            layout = Some(l);
            continue;
        }
        // A result row starts with the size: digits, then more fields.
        let first = trimmed.split_whitespace().next().unwrap_or("");
        if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(l) = &layout else {
            // Digits before any table header: not nccl-tests output (a job id, a counter...).
            continue;
        };
        match (read_row(trimmed, l, n), failure(trimmed)) {
            (Ok(row), _) => {
                if let Some(why) = row_disagrees(&row, l) {
                    return Err(ParseError {
                        line: n,
                        message: format!(
                            "the row contradicts itself: {why}: `{}`",
                            quote_row(&row.text)
                        ),
                    });
                }
                run.rows.push(row)
            }
            // nccl-tests prints a failure where the row's numbers would be, and stops.
            (Err(_), Some(failed)) => warnings.push(ParseError {
                line: n,
                message: format!(
                    "the run failed at this size (nccl-tests printed `{}`); the row is left out",
                    escape(failed)
                ),
            }),
            (Err(e), None) if Some(n) == last => warnings.push(ParseError {
                line: n,
                message: format!(
                    "{}: the log ends in the middle of this row; the row is left out",
                    e.message
                ),
            }),
            (Err(e), None) => return Err(e),
        }
    }
    if !run.rows.is_empty() || runs.is_empty() {
        runs.push(run);
    }
    runs.retain(|r| !r.rows.is_empty());
    if let Some(e) = runs.iter().find_map(odd_factor_row) {
        return Err(e);
    }
    if runs.is_empty() {
        return Err(ParseError {
            line: 0,
            message: match warnings.first() {
                Some(w) => format!("no complete nccl-tests result row (line {}: {})", w.line, w.message),
                None => "no nccl-tests result rows (a table headed `size count type ... time algbw busbw`)"
                    .into(),
            },
        });
    }
    Ok(Log { runs, warnings })
}

/// The failure nccl-tests printed in a row (`Test CUDA failure common.cu:389 'an illegal memory
/// access was encountered'`, `Test NCCL failure ...`: its `testStreamSynchronize` and CUDACHECK /
/// NCCLCHECK report and abort), from its first word.
fn failure(row: &str) -> Option<&str> {
    ["Test CUDA failure", "Test NCCL failure", "Test failure"]
        .iter()
        .find_map(|w| row.find(w))
        .map(|at| row[at..].trim_end())
}

fn new_run(first_line: usize) -> Run {
    Run {
        program: None,
        collective: None,
        threads: None,
        gpus_per_process: None,
        check_column: None,
        devices: Vec::new(),
        rows: Vec::new(),
        avg_busbw_gbs: None,
        first_line,
    }
}

/// Ends the current run (if it holds anything) and starts a new one at line `n`.
fn start_run(runs: &mut Vec<Run>, run: &mut Run, layout: &mut Option<Layout>, n: usize) {
    let done = std::mem::replace(run, new_run(n));
    if !done.rows.is_empty() {
        runs.push(done);
    } else {
        // A run header with no rows yet (the version line before `Collective test starting`,
        // say) carries over what it read.
        run.threads = done.threads;
        run.gpus_per_process = done.gpus_per_process;
        run.first_line = done.first_line;
    }
    *layout = None;
}

/// What launchers and pasting put before each line: `mpirun --tag-output`'s `[job,rank]<stdout>:`,
/// Slurm `srun --label`'s task number (` 0: `), and a quote's `> ` (a log quoted in an e-mail or
/// a GitHub comment).
fn strip_launcher_prefix(line: &str) -> &str {
    let mut line = line;
    if let Some(rest) = line.strip_prefix('[') {
        if let Some(end) = rest.find(">:") {
            let tag = &rest[..end];
            if tag.contains("]<std") {
                line = &rest[end + 2..];
            }
        }
    }
    // `srun --label`: the task number right-aligned, a colon and a space.
    let t = line.trim_start();
    if let Some(colon) = t.find(": ") {
        if colon > 0 && t[..colon].bytes().all(|b| b.is_ascii_digit()) {
            line = &t[colon + 2..];
        }
    }
    while let Some(rest) = line.trim_start().strip_prefix('>') {
        line = rest.strip_prefix(' ').unwrap_or(rest);
    }
    line
}

/// Why a row's algbw is not its size over its time (nccl-tests' definition, within the digits
/// printed), naming the placement; `None` when every placement agrees or the time is CPU time.
fn row_disagrees(row: &ResultRow, layout: &Layout) -> Option<String> {
    if layout.cpu_time {
        return None;
    }
    [
        ("out-of-place", row.out_of_place),
        ("in-place", row.in_place),
    ]
    .into_iter()
    .find_map(|(placement, m)| {
        let (time, algbw, _) = m?.printed();
        consistency::algbw_disagrees(row.size, time, algbw).map(|why| format!("{placement} {why}"))
    })
}

/// The first row of `run` whose busbw / algbw is not the one factor its other rows share (within
/// the digits printed): nccl-tests multiplies every row's algbw by the same factor.
fn odd_factor_row(run: &Run) -> Option<ParseError> {
    let ranges: Vec<(usize, (f64, f64))> = run
        .rows
        .iter()
        .flat_map(|r| [r.out_of_place, r.in_place].map(|m| (r.line, m)))
        .filter_map(|(line, m)| {
            let (_, algbw, busbw) = m?.printed();
            Some((line, consistency::factor_range(algbw, busbw)?))
        })
        .collect();
    let (line, factor, shared) = consistency::odd_factor(&ranges)?;
    let row = run.rows.iter().find(|r| r.line == line)?;
    let m = [row.out_of_place, row.in_place]
        .into_iter()
        .flatten()
        .find(|m| m.busbw_disagrees(factor).is_some())?;
    Some(ParseError {
        line,
        message: format!(
            "the row contradicts the rest of its run: busbw {} GB/s / algbw {} GB/s is not the \
             busbw / algbw of {shared} of its {} measurements ({factor:.4}); nccl-tests prints \
             busbw = algbw x one factor per collective and rank count (doc/PERFORMANCE.md), so \
             the row was edited or comes from another run: `{}`",
            m.busbw_gbs,
            m.algbw_gbs,
            ranges.len(),
            quote_row(&row.text)
        ),
    })
}

/// A row quoted whole in a message (escaped; a very long line cut at 300 characters).
fn quote_row(s: &str) -> String {
    let mut out: String = s.chars().take(300).flat_map(char::escape_debug).collect();
    if s.chars().count() > 300 {
        out.push_str("...");
    }
    out
}

/// Input quoted in a message, with control and invisible characters escaped and its length bounded.
fn escape(s: &str) -> String {
    let mut out: String = s.chars().take(40).flat_map(char::escape_debug).collect();
    if s.chars().count() > 40 {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests;
