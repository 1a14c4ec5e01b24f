//! The verification as `railyard verify` prints it: findings alike grouped into one line.

use super::{Finding, Kind, Verification};

/// How many findings of one group the text report lists before it says how many more there are.
pub const EXAMPLES: usize = 3;

/// The report as text, findings grouped ([`report_text_with`] without `all`).
pub fn report_text(r: &Verification) -> String {
    report_text_with(r, false)
}

fn kind_name(k: Kind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The report as text: a summary line, then the findings by kind (with the count of each kind).
/// Within a kind, findings alike (the same [`Finding::group`]) are one line with their count and the
/// first [`EXAMPLES`] cables, unless `all`, which lists every finding. Every cable shows its
/// cabling.csv id and where its ends stand, when the plan says.
pub fn report_text_with(r: &Verification, all: bool) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let scope = if r.scope.is_empty() {
        String::new()
    } else {
        format!(
            " in scope {} ({})",
            r.scope.join(","),
            railyard_fabric::search::plural(
                r.cables_in_scope as u64,
                "planned cable",
                "planned cables"
            )
        )
    };
    let matched = format!(
        "{} devices matched by description, {} by the names map, {} by place in the tree",
        r.matched_by_description, r.matched_by_names, r.matched_by_place
    );
    if let Some(f) = r
        .findings
        .iter()
        .find(|f| f.kind == Kind::TechnologyMismatch)
    {
        let _ = writeln!(o, "{}", f.fix);
        return o;
    }
    if r.matches {
        let _ = writeln!(
            o,
            "match: {} planned cables, {} discovered, no differences{scope} ({matched})",
            r.planned_cables, r.discovered_cables
        );
        if r.matched_by_place > 0 {
            let _ = writeln!(
                o,
                "note: {} devices whose descriptions match no planned name were matched by their place in the tree and port numbers",
                r.matched_by_place
            );
        }
        return o;
    }
    differences_header(&mut o, r, &scope, &matched);
    // Findings are sorted by kind; groups keep the order of their first finding.
    let mut i = 0;
    while i < r.findings.len() {
        let kind = r.findings[i].kind;
        let end = i + r.findings[i..]
            .iter()
            .take_while(|f| f.kind == kind)
            .count();
        kind_text(&mut o, kind, &r.findings[i..end], all);
        i = end;
    }
    o
}

/// The first lines of a report with differences: how many, and what to know before reading them.
fn differences_header(o: &mut String, r: &Verification, scope: &str, matched: &str) {
    use std::fmt::Write;
    let _ = writeln!(
        o,
        "{} difference{}{scope}: {} planned cables, {} discovered ({matched})",
        r.findings.len(),
        if r.findings.len() == 1 { "" } else { "s" },
        r.planned_cables,
        r.discovered_cables,
    );
    if r.matched_by_place > 0 {
        let _ = writeln!(
            o,
            "note: {} devices whose descriptions match no planned name were matched by their place in the tree and port numbers",
            r.matched_by_place
        );
    }
    if r.matched_by_description + r.matched_by_names + r.matched_by_place == 0
        && r.discovered_cables > 0
    {
        let _ = writeln!(
            o,
            "note: no discovered device matched a planned one: no description is a planned name \
             (switches that keep their factory description, such as \"SwitchIB Mellanox \
             Technologies\", all look alike), so nothing anchors the match by place and every \
             device below reads as missing or unknown; give --names with the site's names for the \
             plan's (the hosts are enough: the switches then match by their place)"
        );
    }
    if r.rates_as_ibsim_shows {
        let _ = writeln!(
            o,
            "note: every planned NDR or XDR cable runs at the rate ibsim shows it at (ibsim knows speeds up to HDR) and no other rate differs: if this discovery ran in ibsim, give --ibsim (verify, check --plan)"
        );
    }
}

/// One kind's findings, alike ones grouped.
fn kind_text(o: &mut String, kind: Kind, of_kind: &[Finding], all: bool) {
    use std::fmt::Write;
    let _ = writeln!(o, "{} ({}):", kind_name(kind), of_kind.len());
    let mut groups: Vec<(&str, Vec<&Finding>)> = Vec::new();
    for f in of_kind {
        match groups.iter_mut().find(|(g, _)| *g == f.group) {
            Some((_, v)) => v.push(f),
            None => groups.push((&f.group, vec![f])),
        }
    }
    for (group, fs) in groups {
        group_text(o, group, &fs, all);
    }
}

/// One group of findings alike: each one when it is alone or `all`, else a count and the first
/// [`EXAMPLES`].
fn group_text(o: &mut String, group: &str, fs: &[&Finding], all: bool) {
    use std::fmt::Write;
    if fs.len() == 1 || all {
        for f in fs {
            let _ = writeln!(o, "  {}", f.fix);
            if let Some(l) = f.device.as_ref().and_then(|d| d.location) {
                let _ = writeln!(o, "    at {l}");
            }
            for c in &f.cables {
                let _ = writeln!(o, "    {c}");
            }
        }
        return;
    }
    if fs.len() > EXAMPLES {
        let _ = writeln!(o, "  {} {group}; the first {EXAMPLES}:", fs.len());
    } else {
        let _ = writeln!(o, "  {} {group}:", fs.len());
    }
    for f in fs.iter().take(EXAMPLES) {
        match f.cables.first() {
            Some(c) if f.cables.len() == 1 => {
                let _ = writeln!(o, "    {c}");
            }
            _ => match f.device.as_ref().and_then(|d| d.location) {
                Some(l) => {
                    let _ = writeln!(o, "    {} (at {l})", f.fix);
                }
                None => {
                    let _ = writeln!(o, "    {}", f.fix);
                }
            },
        }
    }
    if fs.len() > EXAMPLES {
        let _ = writeln!(
            o,
            "    and {} more (--all lists every one)",
            fs.len() - EXAMPLES
        );
    }
}
