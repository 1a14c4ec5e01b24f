//! The flows file of `sim flows`: one flow per line, `src dst bytes [start_seconds]`, hosts by index,
//! `#` starts a comment, blank lines are skipped.
//!
//! Text in, validated flows out (no I/O). Every bad line is reported with its number (up to
//! [`MAX_REPORTED`], the rest counted); the bytes of all flows are summed with checked arithmetic, so
//! a parsed file's total always fits in a `u64`. Whether the flows also finish within the
//! simulator's clock depends on the network: [`crate::net::leafspine::check_flows`] says.

use crate::net::leafspine::HostFlow;
use crate::time::Time;
use std::fmt;

/// At most this many problems are listed from one flows file; the rest are counted.
pub const MAX_REPORTED: usize = 20;

/// A parsed flows file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowsFile {
    /// The flows, in file order.
    pub flows: Vec<HostFlow>,
    /// Bytes of every flow together.
    pub total_bytes: u64,
}

/// One problem: the 1-based line it is on (`None` for the file as a whole) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: Option<usize>,
    pub message: String,
}

/// Why a flows file was refused: the first [`MAX_REPORTED`] problems and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowsError {
    pub problems: Vec<Problem>,
    pub more: usize,
}

impl FlowsError {
    /// Every problem on its own line, `ORIGIN:LINE: problem`.
    pub fn render(&self, origin: &str) -> String {
        let mut lines: Vec<String> = self
            .problems
            .iter()
            .map(|p| match p.line {
                Some(n) => format!("{origin}:{n}: {}", p.message),
                None => format!("{origin}: {}", p.message),
            })
            .collect();
        if self.more > 0 {
            lines.push(format!("{origin}: {} more bad lines", self.more));
        }
        lines.join("\n")
    }
}

impl fmt::Display for FlowsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render("flows file"))
    }
}

impl std::error::Error for FlowsError {}

/// Parses a flows file for a network of `hosts` hosts (numbered from 0).
pub fn parse(text: &str, hosts: u32) -> Result<FlowsFile, FlowsError> {
    // A byte-order mark (Windows editors write one) is no part of the first flow.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut flows = Vec::new();
    let mut problems: Vec<Problem> = Vec::new();
    let mut more = 0usize;
    // `None` once the sum has overflowed (reported once, on the line where it happened).
    let mut total: Option<u64> = Some(0);
    let mut report = |problems: &mut Vec<Problem>, line: usize, message: String| {
        if problems.len() < MAX_REPORTED {
            problems.push(Problem {
                line: Some(line),
                message,
            });
        } else {
            more += 1;
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match parse_line(line, hosts) {
            Ok(f) => {
                if let Some(t) = total {
                    total = t.checked_add(f.bytes);
                    if total.is_none() {
                        report(
                            &mut problems,
                            i + 1,
                            format!(
                                "bytes {}: the flows up to this line carry more than {} bytes in total (2^64 - 1); valid: flows whose bytes add up to less",
                                f.bytes,
                                u64::MAX
                            ),
                        );
                    }
                }
                flows.push(f);
            }
            Err(message) => report(&mut problems, i + 1, message),
        }
    }
    if problems.is_empty() && flows.is_empty() {
        problems.push(Problem {
            line: None,
            message: "no flows (expected lines `src dst bytes [start_seconds]`)".to_string(),
        });
    }
    match total {
        Some(total_bytes) if problems.is_empty() => Ok(FlowsFile { flows, total_bytes }),
        _ => Err(FlowsError { problems, more }),
    }
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
            return Err(match hosts.checked_sub(1) {
                Some(last) => format!("{what} host {h} out of range (hosts are 0..{last})"),
                None => format!("{what} host {h} out of range (there are no hosts)"),
            });
        }
        Ok(h)
    };
    let src = host("source", fields[0])?;
    let dst = host("destination", fields[1])?;
    if src == dst {
        return Err(format!("source and destination are both host {src}"));
    }
    let bytes: u64 = fields[2].parse().map_err(|_| {
        format!(
            "bytes `{}` is not a whole number of bytes; valid: 0 to {}",
            fields[2],
            u64::MAX
        )
    })?;
    let start = match fields.get(3) {
        None => Time::ZERO,
        Some(s) => s
            .parse::<f64>()
            .ok()
            .and_then(Time::from_secs_f64)
            // Flows must finish within half the clock (`leafspine::check_flows`), so a start
            // past 2^63 ps could never be simulated: refused here, with its line.
            .filter(|t| t.checked().is_ok())
            .ok_or_else(|| {
                format!("start `{s}` is not a time in seconds within the simulator's clock; valid: 0 to about 9.2e6 (2^63 ps, 106 days)")
            })?,
    };
    Ok(HostFlow {
        src,
        dst,
        bytes,
        start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, hosts: u32) -> Result<FlowsFile, String> {
        parse(text, hosts).map_err(|e| e.render("f"))
    }

    #[test]
    fn lines_comments_and_starts() {
        let f = check("# header\n0 1 100\n\n1 0 200 0.5 # late\n", 2).unwrap();
        assert_eq!(f.flows.len(), 2);
        assert_eq!(f.total_bytes, 300);
        assert_eq!(f.flows[1].start, Time::from_us(500_000));
    }

    /// A file saved by a Windows editor: a byte-order mark and CRLF line ends read as the same flows.
    #[test]
    fn a_byte_order_mark_and_crlf_are_read_as_plain_text() {
        let f = check("\u{feff}0 1 100\r\n1 0 200 0.5\r\n", 2).unwrap();
        assert_eq!(f, check("0 1 100\n1 0 200 0.5\n", 2).unwrap());
        assert_eq!(f.flows.len(), 2);
    }

    /// A 2^64 - 1 byte flow plus one more byte wrapped the total; the sum is checked and the line that
    /// overflows it is named.
    #[test]
    fn byte_totals_that_overflow_name_the_line() {
        let e = check(&format!("0 1 {}\n# c\n1 0 1\n", u64::MAX), 2).unwrap_err();
        assert!(
            e.starts_with("f:3: bytes 1:") && e.contains("2^64 - 1"),
            "{e}"
        );
        assert_eq!(
            check(&format!("0 1 {}\n", u64::MAX), 2)
                .unwrap()
                .total_bytes,
            u64::MAX
        );
    }

    /// Regression: a start of 1e7 s passed the parser, whose message said starts up to about
    /// 1.8e7 s (213 days) were valid, and was then refused without its line because flows must end
    /// within 2^63 ps (106 days). The parser now refuses it with its line and the real limit.
    #[test]
    fn starts_past_the_clock_name_the_line_and_the_real_limit() {
        let e = check("0 1 1 9000000\n0 1 1 10000000\n", 2).unwrap_err();
        assert!(
            e.starts_with("f:2: start `10000000`") && e.contains("about 9.2e6 (2^63 ps, 106 days)"),
            "{e}"
        );
        assert!(!e.contains("f:1"), "{e}");
    }

    #[test]
    fn every_bad_line_is_reported_up_to_the_limit() {
        let e = check("0 0 1\n0 9 1\nx 1 1\n0 1 -5\n0 1 1 -1\n0 1 1 nan\n0 1\n", 2).unwrap_err();
        for (line, what) in [
            (1, "both host 0"),
            (2, "host 9 out of range (hosts are 0..1)"),
            (3, "`x` is not a host index"),
            (4, "`-5` is not a whole number"),
            (5, "start `-1`"),
            (6, "start `nan`"),
            (7, "found 2 fields"),
        ] {
            assert!(
                e.contains(&format!("f:{line}: ")) && e.contains(what),
                "{what}: {e}"
            );
        }
        let many = "0 0 1\n".repeat(25);
        let e = check(&many, 2).unwrap_err();
        assert_eq!(e.lines().count(), MAX_REPORTED + 1);
        assert!(e.ends_with("f: 5 more bad lines"), "{e}");
        assert!(check("# nothing\n", 2).unwrap_err().contains("no flows"));
        assert!(check("0 1 1\n", 0)
            .unwrap_err()
            .contains("there are no hosts"));
    }
}
