use super::*;

const MODERN: &str = "\
# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  12345 on    node001 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  12346 on    node002 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
       8             2     float     sum      -1    36.04    0.00    0.00      0    35.87    0.00    0.00      0
node001:12345:12345 [0] NCCL INFO comm 0x55 rank 0 nranks 2 - Init COMPLETE
  1073741824     268435456     float     sum      -1  22950.1   46.79   46.79      0  22931.2   46.82   46.82    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 23.395
#
# Collective test concluded: all_reduce_perf
";

#[test]
fn a_modern_log_reads_whole() {
    let log = parse(MODERN).unwrap();
    assert_eq!(log.runs.len(), 1);
    let r = &log.runs[0];
    assert_eq!(r.program.as_deref(), Some("all_reduce_perf"));
    assert_eq!(r.collective, Some(Collective::AllReduce));
    assert_eq!(r.ranks(), Some(2));
    assert_eq!(r.hosts(), ["node001", "node002"]);
    assert_eq!(r.devices[1].name, "NVIDIA H100 80GB HBM3");
    assert_eq!(r.rows.len(), 2);
    let big = &r.rows[1];
    assert_eq!((big.size, big.count, big.line), (1 << 30, 1 << 28, 14));
    assert_eq!(big.root, Some(-1));
    let oop = big.out_of_place.unwrap();
    assert_eq!(
        (oop.time_us, oop.busbw_gbs, oop.wrong),
        (22950.1, 46.79, Some(0.0))
    );
    assert_eq!(big.in_place.unwrap().wrong, None);
    assert_eq!(r.avg_busbw_gbs, Some(23.395));
}

/// nccl-tests before 2.13: no `root`, `error` columns printed as `0e+00`, `Pid` without `Group`,
/// and no program name.
#[test]
fn an_old_log_reads_by_its_header() {
    let text = "\
# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  40514 on dgx1 device  0 [0x06] Tesla V100-SXM2-32GB
#   Rank  1 Pid  40514 on dgx1 device  1 [0x07] Tesla V100-SXM2-32GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
       8             2   float     sum    42.30    0.00    0.00  0e+00    42.51    0.00    0.00  0e+00
   134217728      33554432   float     sum   1459.6   91.96  160.92  5e-07   1457.3   92.10  161.17  5e-07
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 60.4
";
    let r = &parse(text).unwrap().runs[0];
    assert_eq!(r.collective, None);
    assert_eq!(
        (r.threads, r.gpus_per_process, r.ranks()),
        (Some(1), Some(8), Some(2))
    );
    // Without the rank lines the run's size is not known: `nThread x nGpus` is one process.
    let bare: String = text
        .lines()
        .filter(|l| !l.contains("Rank "))
        .map(|l| format!("{l}\n"))
        .collect();
    let no_ranks = &parse(&bare).unwrap().runs[0];
    assert_eq!(
        (no_ranks.ranks(), no_ranks.ranks_per_process()),
        (None, Some(8))
    );
    assert_eq!(r.hosts(), ["dgx1"]);
    assert_eq!(r.rows[1].root, None);
    assert_eq!(r.rows[1].out_of_place.unwrap().busbw_gbs, 160.92);
    assert_eq!(r.rows[1].out_of_place.unwrap().wrong, Some(5e-7));
}

#[test]
fn tagged_mpirun_output_and_two_runs_in_one_file() {
    let second = MODERN.replace("all_reduce_perf", "all_gather_perf");
    let tagged: String = format!("{MODERN}{second}")
        .lines()
        .map(|l| format!("[1,0]<stdout>:{l}\n"))
        .collect();
    let log = parse(&tagged).unwrap();
    assert_eq!(log.runs.len(), 2);
    assert_eq!(log.runs[1].collective, Some(Collective::AllGather));
    assert_eq!(log.runs[1].rows.len(), 2);
}

#[test]
fn per_iteration_columns_and_timestamps_are_read_past() {
    let text = "\
#       size         count      type   redop    root     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw #wrong    i_min    i_max    i_p99    i_cv%
 1048576        262144     float     sum      -1    30.10   34.84   61.00      0    29.00    31.00    31.00     1.20    30.00   34.95   61.17      0    29.00    31.00    31.00     1.10
";
    let r = &parse(text).unwrap().runs[0];
    assert_eq!(r.rows[0].in_place.unwrap().busbw_gbs, 61.17);
    let ts = "\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong           timestamp
 1048576        262144     float     sum      -1    30.10   34.84   61.00      0    30.00   34.95   61.17      0 2025-01-02 10:11:12
";
    assert_eq!(parse(ts).unwrap().runs[0].rows[0].size, 1 << 20);
}

#[test]
fn trace_replay_rows_are_in_place_only() {
    let text = "\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
 1048576        262144     float     sum      -1                                    30.00   34.95   61.17      0
";
    let row = &parse(text).unwrap().runs[0].rows[0];
    assert_eq!(row.out_of_place, None);
    assert_eq!(row.measurement().unwrap().busbw_gbs, 61.17);
}

#[test]
fn bad_rows_name_their_line() {
    let text = MODERN.replace("22950.1", "fast");
    let e = parse(&text).unwrap_err();
    assert_eq!(e.line, 14);
    assert!(e.message.contains("time `fast`"), "{e}");
    let text = MODERN.replace("  22931.2   46.82   46.82    N/A", "");
    assert_eq!(parse(&text).unwrap_err().line, 14);
    let e = parse("hello\n1 2 3\n").unwrap_err();
    assert_eq!(e.line, 0);
    assert!(e.to_string().contains("no nccl-tests result rows"));
}

/// A file cut off in its last row loses that row, named in a warning; the rows before it read.
#[test]
fn a_last_row_cut_short_is_left_out_with_a_warning() {
    let cut = &MODERN[..MODERN.find("  22931.2").unwrap()];
    let log = parse(cut).unwrap();
    assert_eq!(log.runs[0].rows.len(), 1);
    assert_eq!(log.warnings.len(), 1);
    let w = &log.warnings[0];
    assert_eq!(w.line, 14);
    assert!(w.message.contains("ends in the middle of this row"), "{w}");
    // Cut in a number of its last field: the field does not read, the row is still left out.
    let cut = MODERN[..MODERN.find("N/A").unwrap() + 2].to_string();
    let log = parse(&cut).unwrap();
    assert_eq!((log.runs[0].rows.len(), log.warnings[0].line), (1, 14));
    // Cut before its last field (one field short, as an old all-to-all row without `redop`
    // is): the warning says the row is short, not that `sum` is no root (nccl-tests issue
    // 214's log, cut where the text ends, said that).
    let cut = MODERN[..MODERN.rfind("N/A").unwrap()].to_string();
    let log = parse(&cut).unwrap();
    let w = &log.warnings[0];
    assert!(
        w.message
            .contains("a result row with 12 fields where the header has 13 columns"),
        "{w}"
    );
    // A run that failed at its second size: the first row reads, the second is left out
    // with what nccl-tests printed (it was refused as "16 fields where the header has 13").
    let failed = MODERN.replace(
        "22950.1   46.79   46.79      0  22931.2   46.82   46.82    N/A",
        "node0: Test CUDA failure common.cu:389 'an illegal memory access was encountered'",
    );
    let log = parse(&failed).unwrap();
    assert_eq!((log.runs[0].rows.len(), log.warnings[0].line), (1, 14));
    assert!(
        log.warnings[0].message.contains(
            "the run failed at this size (nccl-tests printed `Test CUDA failure common.cu:389"
        ),
        "{}",
        log.warnings[0]
    );
    // The only row cut short: no row, and the error says why.
    let only = &MODERN[..MODERN.find("35.87").unwrap()];
    let e = parse(only).unwrap_err();
    assert!(e.message.contains("line 12"), "{e}");
    assert!(parse(MODERN).unwrap().warnings.is_empty());
}

/// `#wrong` counts wrong elements (any is wrong data); the old `error` column is a maximum
/// error, wrong above nccl-tests' allowance for the type times (ranks - 1).
#[test]
fn wrong_data_is_read_as_nccl_tests_judged_it() {
    let log = parse(&MODERN.replace("46.82    N/A", "46.82      3")).unwrap();
    let r = &log.runs[0];
    assert_eq!(r.check_column, Some(CheckColumn::WrongElements));
    assert!(!r.wrong_data(&r.rows[0], 2, Collective::AllReduce));
    assert!(r.wrong_data(&r.rows[1], 2, Collective::AllReduce));
    let old = |err: &str| {
        let text = format!(
            "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n\
             \x20  134217728      33554432   float     sum   1459.6   91.96  160.92  {err}   1457.3   92.10  161.17  5e-07\n"
        );
        parse(&text).unwrap().runs.remove(0)
    };
    let r = old("5e-07");
    assert_eq!(r.check_column, Some(CheckColumn::MaxError));
    assert!(!r.wrong_data(&r.rows[0], 8, Collective::AllReduce));
    let r = old("2e-04");
    assert!(
        r.wrong_data(&r.rows[0], 8, Collective::AllReduce),
        "2e-4 > 1e-5 x 7"
    );
    assert!(
        !r.wrong_data(&r.rows[0], 32, Collective::AllReduce),
        "2e-4 <= 1e-5 x 31"
    );
    let r = old("N/A");
    assert!(!r.wrong_data(&r.rows[0], 8, Collective::AllReduce));
}

#[test]
fn program_names_map_to_collectives() {
    assert_eq!(
        collective_of_program("./build/alltoall_perf"),
        Some(Collective::AllToAll)
    );
    assert_eq!(
        collective_of_program("sendrecv_perf_mpi"),
        Some(Collective::SendRecv)
    );
    assert_eq!(collective_of_program("gather_perf"), None);
    assert_eq!(collective_of_program("all_reduce"), None);
}

/// A table with one time column (railyard's own `sim collective` output, as `calibrate` reads
/// it back) has one placement, read as out-of-place.
#[test]
fn a_table_with_one_time_column_is_out_of_place_only() {
    let text = "\
#       size         count      type   redop    root     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1   4429.4  242.41  454.53     N/A
";
    let log = parse(text).unwrap();
    let row = &log.runs[0].rows[0];
    assert_eq!(row.size, 1 << 30);
    assert_eq!(row.in_place, None);
    let m = row.out_of_place.as_ref().unwrap();
    assert_eq!(
        (m.time_us, m.algbw_gbs, m.busbw_gbs),
        (4429.4, 242.41, 454.53)
    );
}
