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
        e.to_string()
            .starts_with("g.txt: the log measured `gather_perf`, which railyard does not model"),
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
        e.to_string()
            .contains("the factor of allgather, reducescatter or alltoall (sendrecv's is 1.000"),
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
