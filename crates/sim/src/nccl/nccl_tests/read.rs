//! One line of an nccl-tests log read: the threads and devices lines, the table's header, a result
//! row's fields and its measurement.

use crate::nccl::nccl_tests::consistency::Printed;
use crate::nccl::nccl_tests::escape;
use crate::nccl::nccl_tests::CheckColumn;
use crate::nccl::nccl_tests::Column;
use crate::nccl::nccl_tests::Device;
use crate::nccl::nccl_tests::Layout;
use crate::nccl::nccl_tests::Measurement;
use crate::nccl::nccl_tests::ParseError;
use crate::nccl::nccl_tests::ResultRow;
use crate::nccl::nccl_tests::Rounding;
use crate::nccl::nccl_tests::Run;
/// `nThread 1 nGpus 8 minBytes ...`
pub(super) fn read_threads(c: &str, run: &mut Run) {
    let words: Vec<&str> = c.split_whitespace().collect();
    let value = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
            .and_then(|v| v.parse::<u32>().ok())
    };
    run.threads = value("nThread");
    run.gpus_per_process = value("nGpus");
}

/// `Rank  0 Group  0 Pid  12345 on node001 device  0 [0000:18:00] NVIDIA H100 80GB HBM3` and the
/// older forms without `Group` or `Pid`.
pub(super) fn read_device(c: &str, n: usize) -> Result<Device, ParseError> {
    let err = |what: &str| ParseError {
        line: n,
        message: format!(
            "device line: {what} (expected `# Rank N ... on HOST device D [BUS] NAME`)"
        ),
    };
    let words: Vec<&str> = c.split_whitespace().collect();
    let rank = words
        .get(1)
        .and_then(|w| w.parse::<u32>().ok())
        .ok_or_else(|| err("no rank number after `Rank`"))?;
    let on = words
        .iter()
        .position(|w| *w == "on")
        .ok_or_else(|| err("no `on HOST`"))?;
    // The host is the word after `on`; nccl-tests prints an empty one where the host name it read
    // was empty (`on        device  0`), so a missing host reads as "".
    let dev = words
        .iter()
        .skip(on + 1)
        .position(|w| *w == "device")
        .map(|p| p + on + 1)
        .ok_or_else(|| err("no `device`"))?;
    let host = if dev > on + 1 { words[on + 1] } else { "" };
    let device = words
        .get(dev + 1)
        .and_then(|w| w.parse::<u32>().ok())
        .ok_or_else(|| err("no device number"))?;
    // The name follows the bus id in brackets.
    let name = match c.find(']') {
        Some(close) => c[close + 1..].trim().to_string(),
        None => words
            .get(dev + 2..)
            .map(|w| w.join(" "))
            .unwrap_or_default(),
    };
    Ok(Device {
        rank,
        host: host.to_string(),
        device,
        name,
    })
}

/// The column header (`size count type redop root time algbw busbw #wrong ...`), or `None` for any
/// other comment.
pub(super) fn read_header(c: &str) -> Option<Layout> {
    let words: Vec<&str> = c.split_whitespace().collect();
    if words.first() != Some(&"size") || words.get(1) != Some(&"count") {
        return None;
    }
    let mut columns = Vec::new();
    let mut timestamp = false;
    let mut check_column = None;
    let cpu_time = words.contains(&"cputime");
    for w in &words {
        match *w {
            "#wrong" | "wrong" => check_column = Some(CheckColumn::WrongElements),
            "error" => check_column = Some(CheckColumn::MaxError),
            _ => {}
        }
        columns.push(match *w {
            "size" => Column::Size,
            "count" => Column::Count,
            "type" => Column::Type,
            "redop" => Column::Redop,
            "root" => Column::Root,
            "time" | "cputime" => Column::Time,
            "algbw" => Column::AlgBw,
            "busbw" => Column::BusBw,
            "#wrong" | "error" | "wrong" => Column::Wrong,
            "timestamp" => {
                timestamp = true;
                continue;
            }
            _ => Column::Other,
        });
    }
    Some(Layout {
        columns,
        timestamp,
        check_column,
        cpu_time,
    })
}

pub(super) fn read_row(line: &str, layout: &Layout, n: usize) -> Result<ResultRow, ParseError> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    // Old all-to-all logs print an empty `redop` column (blanks): one field short, read without it.
    if fields.len() + 1 == layout.columns.len() && layout.columns.contains(&Column::Redop) {
        let without = Layout {
            columns: layout
                .columns
                .iter()
                .copied()
                .filter(|c| *c != Column::Redop)
                .collect(),
            timestamp: layout.timestamp,
            check_column: layout.check_column,
            cpu_time: layout.cpu_time,
        };
        // A row of another table cut one field short reads wrong without `redop` too: its
        // error is the short row's ("13 fields where the header has 14"), not a misread field
        // (it said "root `sum` is not a rank").
        return read_fields(line, &fields, &without, n)
            .or_else(|_| read_fields(line, &fields, layout, n));
    }
    read_fields(line, &fields, layout, n)
}

pub(super) fn read_fields(
    line: &str,
    fields: &[&str],
    layout: &Layout,
    n: usize,
) -> Result<ResultRow, ParseError> {
    let err = |message: String| ParseError { line: n, message };
    let head = layout
        .columns
        .iter()
        .take_while(|c| !matches!(c, Column::Time))
        .count();
    // nccl-tests prints an out-of-place and an in-place half, each with its own time column; a
    // table with one time column (railyard's `sim collective`) has one half, read as out-of-place.
    let times = layout.columns[head..]
        .iter()
        .filter(|c| matches!(c, Column::Time))
        .count();
    let per_placement = if times <= 1 {
        layout.columns.len() - head
    } else {
        (layout.columns.len() - head) / 2
    };
    // A full row has every column; a trace-replay row has the in-place half only, after 32 blanks
    // where the out-of-place half would be (a row cut short has no such gap). A timestamp (`-S`)
    // adds fields at the end, which are read past.
    let in_place_only = fields.len() < layout.columns.len()
        && fields.len() >= head + per_placement
        && line.contains(&" ".repeat(30));
    if fields.len() < layout.columns.len() && !in_place_only {
        return Err(err(format!(
            "a result row with {} fields where the header has {} columns",
            fields.len(),
            layout.columns.len()
        )));
    }
    if !layout.timestamp && !in_place_only && fields.len() > layout.columns.len() {
        return Err(err(format!(
            "a result row with {} fields where the header has {} columns",
            fields.len(),
            layout.columns.len()
        )));
    }
    let mut row = ResultRow {
        line: n,
        size: 0,
        count: 0,
        data_type: String::new(),
        redop: None,
        root: None,
        out_of_place: None,
        in_place: None,
        text: line.to_string(),
    };
    for (col, field) in layout.columns[..head].iter().zip(fields) {
        match col {
            Column::Size => {
                row.size = field
                    .parse()
                    .map_err(|_| err(format!("size `{}` is not a byte count", escape(field))))?
            }
            Column::Count => {
                row.count = field
                    .parse()
                    .map_err(|_| err(format!("count `{}` is not a number", escape(field))))?
            }
            Column::Type => row.data_type = field.to_string(),
            Column::Redop => row.redop = Some(field.to_string()),
            Column::Root => {
                row.root = Some(
                    field
                        .parse()
                        .map_err(|_| err(format!("root `{}` is not a rank", escape(field))))?,
                )
            }
            _ => {}
        }
    }
    let halves: Vec<&[Column]> = layout.columns[head..]
        .chunks(per_placement.max(1))
        .collect();
    let mut at = head;
    let placements: &[usize] = if in_place_only { &[1] } else { &[0, 1] };
    for &p in placements {
        let Some(cols) = halves.get(p) else { break };
        let values = fields
            .get(at..at + cols.len())
            .ok_or_else(|| err("a result row ends early".into()))?;
        at += cols.len();
        let m = read_measurement(cols, values).map_err(err)?;
        if p == 0 {
            row.out_of_place = m;
        } else {
            row.in_place = m;
        }
    }
    Ok(row)
}

pub(super) fn read_measurement(
    cols: &[Column],
    values: &[&str],
) -> Result<Option<Measurement>, String> {
    let number = |what: &str, v: &str| -> Result<Printed, String> {
        Printed::parse(v)
            .ok_or_else(|| format!("{what} `{}` is not a non-negative number", escape(v)))
    };
    let (mut time, mut algbw, mut busbw) = (None, None, None);
    let mut wrong = None;
    for (col, v) in cols.iter().zip(values) {
        match col {
            Column::Time => time = Some(number("time", v)?),
            Column::AlgBw => algbw = Some(number("algbw", v)?),
            Column::BusBw => busbw = Some(number("busbw", v)?),
            Column::Wrong => {
                wrong = if *v == "N/A" {
                    None
                } else {
                    Some(number("#wrong", v)?.value)
                }
            }
            _ => {}
        }
    }
    let (Some(time), Some(algbw), Some(busbw)) = (time, algbw, busbw) else {
        return Err("the header has no time, algbw or busbw column".into());
    };
    Ok(Some(Measurement {
        time_us: time.value,
        algbw_gbs: algbw.value,
        busbw_gbs: busbw.value,
        wrong,
        rounding: Rounding {
            time_us: time.half_unit,
            algbw_gbs: algbw.half_unit,
            busbw_gbs: busbw.half_unit,
        },
    }))
}
