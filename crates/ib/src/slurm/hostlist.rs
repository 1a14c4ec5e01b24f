//! Slurm's hostlist expressions: `su1-srv[01-32],su2-srv[01-04]` for 36 names.
//!
//! Slurm reads a hostlist with brackets only (src/common/hostlist.c, `_hostlist_create_bracketed`,
//! the default build): names are separated by commas (or spaces and tabs), and a name whose last
//! `[` opens a list of ranges closed by the name's final `]` stands for the prefix before the
//! bracket followed by each number of each range, `lo` or `lo-hi`, zero-padded to the width of
//! `lo` as written (`[01-32]` is 01 to 32, `[9-10]` is 9 and 10). A range holds at most 65,536
//! names (`MAX_RANGE`). [`compress`] writes names so that Slurm's parser gives back exactly those
//! names; [`expand`] reads an expression the way that parser does (railyard's tests read
//! `scontrol show topology` with it).

use railyard_fabric::import::natural_cmp;
use std::fmt;

/// The most names one range may stand for (`MAX_RANGE` in Slurm's hostlist.c).
pub const MAX_RANGE: u64 = 64 * 1024;

/// Trailing digits longer than this stay part of the prefix: a number must fit Slurm's `unsigned long`.
const MAX_DIGITS: usize = 18;

/// A hostlist expression [`expand`] cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostlistError(pub String);

impl fmt::Display for HostlistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HostlistError {}

/// A name split at its trailing digits: (`su1-srv`, `07`); no digits, all digits or too many, and
/// the whole name is the prefix.
fn split(name: &str) -> (&str, Option<&str>) {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits == name.len() || digits > MAX_DIGITS {
        return (name, None);
    }
    let (prefix, number) = name.split_at(name.len() - digits);
    (prefix, Some(number))
}

/// One range of a bracket: numbers `lo..=hi` written `width` digits wide at least.
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: u64,
    hi: u64,
    width: usize,
}

impl Range {
    /// Whether `digits` (the number `n`) can join this range as its next name: Slurm writes `n`
    /// zero-padded to the range's width, which must give back `digits` exactly.
    fn takes(&self, n: u64, digits: &str) -> bool {
        n == self.hi + 1
            && self.hi - self.lo + 1 < MAX_RANGE
            && format!("{n:0w$}", w = self.width) == digits
    }

    fn write(&self, out: &mut String) {
        let w = self.width;
        if self.lo == self.hi {
            out.push_str(&format!("{:0w$}", self.lo));
        } else {
            out.push_str(&format!("{:0w$}-{:0w$}", self.lo, self.hi));
        }
    }
}

/// The names as one hostlist expression Slurm reads back as exactly these names (duplicates once):
/// names sorted naturally, each run of consecutive numbers after a common prefix one range
/// (`su1-srv[01-32]`), names without a trailing number as they are. The names must not contain
/// the characters a hostlist gives meaning to (`,`, `[`, `]`, spaces); [`super`] checks them.
pub fn compress<S: AsRef<str>>(names: &[S]) -> String {
    // By prefix (naturally), then number, so each prefix's numbers come together.
    let mut sorted: Vec<(&str, Option<(u64, &str)>)> = names
        .iter()
        .map(|name| {
            let (prefix, number) = split(name.as_ref());
            // Fits in u64: at most MAX_DIGITS digits.
            (prefix, number.map(|d| (d.parse().unwrap_or(0), d)))
        })
        .collect();
    sorted.sort_by(|(p, a), (q, b)| {
        natural_cmp(p, q).then_with(|| p.cmp(q)).then_with(|| {
            a.map(|(n, d)| (n, d.len()))
                .cmp(&b.map(|(n, d)| (n, d.len())))
        })
    });
    sorted.dedup();
    // (prefix, ranges) in order; a name without a number is a prefix with no ranges.
    let mut groups: Vec<(&str, Vec<Range>)> = Vec::new();
    for (prefix, number) in sorted {
        let Some((n, digits)) = number else {
            groups.push((prefix, Vec::new()));
            continue;
        };
        match groups.last_mut() {
            Some((p, ranges)) if *p == prefix && !ranges.is_empty() => {
                let last = ranges.last_mut().expect("a range");
                if last.takes(n, digits) {
                    last.hi = n;
                } else {
                    ranges.push(Range {
                        lo: n,
                        hi: n,
                        width: digits.len(),
                    });
                }
            }
            _ => groups.push((
                prefix,
                vec![Range {
                    lo: n,
                    hi: n,
                    width: digits.len(),
                }],
            )),
        }
    }
    let mut out = String::new();
    for (prefix, ranges) in groups {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(prefix);
        match ranges.as_slice() {
            [] => {}
            [one] if one.lo == one.hi => one.write(&mut out),
            _ => {
                out.push('[');
                for (i, r) in ranges.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    r.write(&mut out);
                }
                out.push(']');
            }
        }
    }
    out
}

/// The names a hostlist expression stands for, in the order written, as Slurm's bracketed parser
/// reads it: items separated by commas outside brackets (spaces and tabs too), a bracket only
/// at an item's end. Errors name the item.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let mut names = Vec::new();
    let mut item = String::new();
    let mut depth = 0u32;
    for c in expr.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && matches!(c, ',' | ' ' | '\t') {
            if !item.is_empty() {
                expand_item(&item, &mut names)?;
                item.clear();
            }
        } else {
            item.push(c);
        }
    }
    if !item.is_empty() {
        expand_item(&item, &mut names)?;
    }
    Ok(names)
}

fn expand_item(item: &str, names: &mut Vec<String>) -> Result<(), HostlistError> {
    let bad = |why: &str| HostlistError(format!("hostlist item \"{item}\": {why}"));
    let Some(open) = item.rfind('[') else {
        names.push(item.to_string());
        return Ok(());
    };
    let (prefix, rest) = (&item[..open], &item[open + 1..]);
    let Some(inner) = rest.strip_suffix(']') else {
        return Err(bad("a bracket must close at the end of the name"));
    };
    for range in inner.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let number = |s: &str| {
            (!s.is_empty() && s.len() <= MAX_DIGITS && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| bad(&format!("\"{range}\" is not a number or a range lo-hi")))
        };
        let (l, h) = (number(lo)?, number(hi)?);
        if l > h {
            return Err(bad(&format!("the range \"{range}\" runs backwards")));
        }
        if h - l + 1 > MAX_RANGE {
            return Err(bad(&format!(
                "the range \"{range}\" holds more than {MAX_RANGE} names"
            )));
        }
        let w = lo.len();
        names.extend((l..=h).map(|n| format!("{prefix}{n:0w$}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compresses_runs_with_their_widths() {
        let names: Vec<String> = (1..=32).map(|i| format!("su1-srv{i:02}")).collect();
        assert_eq!(compress(&names), "su1-srv[01-32]");
        assert_eq!(compress(&["node9", "node10", "node11"]), "node[9-11]");
        // 08 and 9: Slurm would write 9 as 09 in a range of width 2.
        assert_eq!(compress(&["n08", "n9", "n10"]), "n[08,9-10]");
        assert_eq!(
            compress(&["b2", "a1", "a2", "a4", "spine", "a3x"]),
            "a[1-2,4],a3x,b2,spine"
        );
        assert_eq!(compress(&["x1", "x1"]), "x1");
        assert_eq!(compress(&["007", "008"]), "007,008");
        assert_eq!(compress::<&str>(&[]), "");
    }

    #[test]
    fn expands_as_slurm_reads() {
        assert_eq!(
            expand("su1-srv[01-03],su2-srv[9-10,12] leaf1").unwrap(),
            [
                "su1-srv01",
                "su1-srv02",
                "su1-srv03",
                "su2-srv9",
                "su2-srv10",
                "su2-srv12",
                "leaf1"
            ]
        );
        for bad in ["a[1-2", "a[2-1]", "a[x]", "a[1-2]b", "a[0-70000]"] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn long_runs_split_at_slurms_range_limit() {
        let names: Vec<String> = (0..MAX_RANGE + 2).map(|i| format!("n{i}")).collect();
        let expr = compress(&names);
        assert_eq!(
            expr,
            format!("n[0-{},{}-{}]", MAX_RANGE - 1, MAX_RANGE, MAX_RANGE + 1)
        );
        assert_eq!(expand(&expr).unwrap(), names);
    }
}
