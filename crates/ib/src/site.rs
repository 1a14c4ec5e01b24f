//! What a site adds to a plan when verifying: its own names for the planned devices ([`NameMap`],
//! read from a CSV) and the part of the fabric being brought up ([`Scope`]).
//!
//! The names CSV has two columns, the plan's name and the site's name, one device a row: a switch
//! (`su1-leaf1,ib-leaf-a01`), a server (`su1-srv01,gpu001`) or an HCA as a discovery describes it
//! (`su1-srv01 hca1,gpu001 HCA-1`). An optional header row is `plan,site`; fields may be quoted
//! (`"a, b"`, with `""` for a quote); blank lines and lines starting with `#` are skipped. A server's
//! row renames every HCA of the server whose own row is missing: `gpu001 mlx5_0` reads as
//! `su1-srv01 hca1` and `gpu001 HCA-1` (or `hca1`) as `su1-srv01 hca1`.

use crate::discovery::{escaped, ParseError};
use railyard_fabric::{Fabric, NodeKind};
use std::collections::{BTreeMap, BTreeSet};

/// The site's names for planned devices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    /// Site name -> plan name.
    site_to_plan: BTreeMap<String, String>,
    /// Plan name -> site name.
    plan_to_site: BTreeMap<String, String>,
    /// Plan name -> line of its row.
    rows: BTreeMap<String, usize>,
}

/// Splits one CSV line into fields: commas outside quotes separate, `""` inside quotes is a quote.
fn csv_fields(line: &str, n: usize) -> Result<Vec<String>, ParseError> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    let mut at_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().expect("one field").push('"');
            }
            '"' if quoted => quoted = false,
            '"' if at_start => quoted = true,
            ',' if !quoted => {
                fields.push(String::new());
                at_start = true;
                continue;
            }
            c => fields.last_mut().expect("one field").push(c),
        }
        at_start = false;
    }
    if quoted {
        return Err(ParseError {
            line: n,
            message: "a quoted field is not closed".into(),
        });
    }
    Ok(fields)
}

impl NameMap {
    /// Reads the names CSV. Errors name the line: a row without exactly two fields, an empty name,
    /// a site name or plan name given twice. A UTF-8 byte-order mark at the start (Excel's "CSV
    /// UTF-8" writes one) is not part of the first name.
    pub fn parse(text: &str) -> Result<NameMap, ParseError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut map = NameMap::default();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = csv_fields(line, n)?;
            if fields.len() != 2 {
                return Err(ParseError {
                    line: n,
                    message: format!(
                        "{} fields; a row is `plan name,site name` (quote a name that has a comma)",
                        fields.len()
                    ),
                });
            }
            let (plan, site) = (fields[0].trim(), fields[1].trim());
            if map.rows.is_empty()
                && map.site_to_plan.is_empty()
                && plan == "plan"
                && site == "site"
            {
                continue;
            }
            if plan.is_empty() || site.is_empty() {
                return Err(ParseError {
                    line: n,
                    message: "an empty name; a row is `plan name,site name`".into(),
                });
            }
            if let Some(first) = map.rows.get(plan) {
                return Err(ParseError {
                    line: n,
                    message: format!(
                        "plan name \"{}\" is already renamed on line {first}",
                        escaped(plan)
                    ),
                });
            }
            if let Some(other) = map.site_to_plan.get(site) {
                return Err(ParseError {
                    line: n,
                    message: format!(
                        "site name \"{}\" is already given to \"{}\" (line {})",
                        escaped(site),
                        escaped(other),
                        map.rows[other]
                    ),
                });
            }
            map.rows.insert(plan.to_string(), n);
            map.site_to_plan.insert(site.to_string(), plan.to_string());
            map.plan_to_site.insert(plan.to_string(), site.to_string());
        }
        Ok(map)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the map has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Checks that every plan name in the map names a switch, a server or an HCA of `plan`; the error
    /// names the first row that does not.
    pub fn check(&self, plan: &Fabric) -> Result<(), ParseError> {
        let known = plan_names(plan);
        let mut bad: Vec<(usize, &String)> = self
            .rows
            .iter()
            .filter(|(name, _)| !known.contains(*name))
            .map(|(name, &line)| (line, name))
            .collect();
        bad.sort();
        match bad.first() {
            None => Ok(()),
            Some((line, name)) => Err(ParseError {
                line: *line,
                message: format!(
                    "\"{}\" is not a device of the plan; the first column names a switch ({}), a server ({}) or an HCA ({})",
                    escaped(name),
                    example(plan, |n| n.is_switch()).unwrap_or_else(|| "leaf01".into()),
                    plan.servers.first().map_or("srv01".into(), |s| s.name.clone()),
                    example(plan, |n| matches!(n.kind, NodeKind::Nic { .. }))
                        .unwrap_or_else(|| "srv01 hca1".into()),
                ),
            }),
        }
    }

    /// The site's name for a planned device (a switch, a server or an HCA as its row names it).
    pub fn site_name(&self, plan: &str) -> Option<&str> {
        self.plan_to_site.get(plan).map(String::as_str)
    }

    /// The plan name a discovered description stands for, if the map renames it: the description
    /// itself, or for an HCA (`host device`) its host renamed and its device read as `hca<N>`.
    pub fn plan_name(&self, desc: &str, is_ca: bool) -> Option<String> {
        if let Some(p) = self.site_to_plan.get(desc) {
            return Some(p.clone());
        }
        if !is_ca {
            return None;
        }
        let (host, dev) = desc.rsplit_once(' ')?;
        let server = self.site_to_plan.get(host)?;
        Some(format!("{server} {}", hca_name(dev)))
    }
}

/// A host device name read as railyard's `hca<N>`: `mlx5_<n>` (0-based) is `hca<n+1>`; any other
/// name keeps its letters and digits, lowercased (`HCA-1` -> `hca1`).
pub fn hca_name(dev: &str) -> String {
    if let Some(n) = dev
        .strip_prefix("mlx5_")
        .and_then(|n| n.parse::<u32>().ok())
    {
        return format!("hca{}", u64::from(n) + 1);
    }
    dev.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn example(plan: &Fabric, pick: impl Fn(&railyard_fabric::Node) -> bool) -> Option<String> {
    plan.nodes
        .iter()
        .enumerate()
        .find(|(_, n)| pick(n))
        .map(|(i, _)| crate::export::node_desc(plan, railyard_fabric::NodeId(i as u32)))
}

/// Every name the plan gives a switch, server or cabled-or-not HCA (`su1-srv01 hca1`).
fn plan_names(plan: &Fabric) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = plan.servers.iter().map(|s| s.name.clone()).collect();
    for (i, n) in plan.nodes.iter().enumerate() {
        if n.is_switch() || matches!(n.kind, NodeKind::Nic { .. } | NodeKind::StorageNic) {
            names.insert(crate::export::node_desc(
                plan,
                railyard_fabric::NodeId(i as u32),
            ));
        }
    }
    names
}

/// The part of a plan being verified: a set of planned device names (switches and HCAs as
/// [`crate::export::node_desc`] names them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// What was asked for, as given.
    pub asked: Vec<String>,
    pub devices: BTreeSet<String>,
}

impl Scope {
    /// Resolves a scope list: each item is a scalable unit (`su3`: its servers' compute HCAs and the
    /// switches they are cabled to), a switch (`su1-leaf1`), a server (its HCAs) or an HCA (`su1-srv01 hca1`).
    /// The error names the item that is none of them and the valid choices.
    pub fn resolve(plan: &Fabric, items: &[String]) -> Result<Scope, String> {
        let mut devices = BTreeSet::new();
        let desc = |i: usize| crate::export::node_desc(plan, railyard_fabric::NodeId(i as u32));
        let units: BTreeSet<u32> = plan.servers.iter().filter_map(|s| s.su).collect();
        for item in items {
            let item = item.trim();
            let unit = item
                .strip_prefix("su")
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|n| *n >= 1 && units.contains(&(n - 1)));
            // Whether the item names anything, even what an earlier item already took.
            let mut matched = false;
            for (i, n) in plan.nodes.iter().enumerate() {
                let hit = match n.server.map(|s| &plan.servers[s as usize]) {
                    Some(s) if !n.is_switch() => {
                        matches!(n.kind, NodeKind::Nic { .. })
                            // A unit asked for (a server of no unit matches none).
                            && (unit.is_some_and(|u| s.su == Some(u - 1))
                                || s.name == item
                                || desc(i) == item
                                || n.name == item)
                    }
                    _ => n.is_switch() && n.name == item,
                };
                if hit {
                    matched = true;
                    devices.insert(desc(i));
                    // A unit takes the switches its HCAs are cabled to.
                    if unit.is_some() {
                        for p in n.ports() {
                            if let Some(l) = plan.port(p).link() {
                                let l = plan.link(l);
                                if l.kind.is_network() {
                                    let far = if l.a == p { l.b } else { l.a };
                                    devices.insert(desc(plan.port(far).node.0 as usize));
                                }
                            }
                        }
                    }
                }
            }
            if !matched {
                let units = match (units.first(), units.last()) {
                    (Some(a), Some(b)) => format!("a scalable unit (su{}..su{}), ", a + 1, b + 1),
                    _ => String::new(),
                };
                return Err(format!(
                    "scope \"{}\" names nothing in the plan; valid: {units}a switch ({}), a server ({}) or an HCA ({}), comma-separated",
                    escaped(item),
                    example(plan, |n| n.is_switch()).unwrap_or_else(|| "leaf01".into()),
                    plan.servers.first().map_or("srv01".into(), |s| s.name.clone()),
                    example(plan, |n| matches!(n.kind, NodeKind::Nic { .. }))
                        .unwrap_or_else(|| "srv01 hca1".into()),
                ));
            }
        }
        Ok(Scope {
            asked: items.iter().map(|s| s.trim().to_string()).collect(),
            devices,
        })
    }

    /// Whether a planned device is in scope.
    pub fn contains(&self, device: &str) -> bool {
        self.devices.contains(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_csv_reads_quotes_header_and_comments() {
        let m = NameMap::parse(
            "plan,site\n# comment\nsu1-leaf1,ib-leaf-a01\n\"su1-srv01\",\"gpu, 001\"\nsu1-srv02 hca1,\"x \"\"y\"\"\"\n",
        )
        .unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m.plan_name("ib-leaf-a01", false).as_deref(),
            Some("su1-leaf1")
        );
        assert_eq!(
            m.plan_name("gpu, 001 HCA-3", true).as_deref(),
            Some("su1-srv01 hca3")
        );
        assert_eq!(
            m.plan_name("gpu, 001 mlx5_0", true).as_deref(),
            Some("su1-srv01 hca1")
        );
        assert_eq!(
            m.plan_name("x \"y\"", true).as_deref(),
            Some("su1-srv02 hca1")
        );
        assert_eq!(m.plan_name("gpu, 001 HCA-3", false), None);
    }

    /// Regression (issue 33): a names CSV saved by Excel as "CSV UTF-8" starts with a byte-order
    /// mark, which became part of the header (taken as a row) or of the first plan name.
    #[test]
    fn regression_a_byte_order_mark_in_the_names_csv_was_read_as_a_name() {
        for text in [
            "\u{feff}plan,site\nsu1-leaf1,ib-leaf-a01\n",
            "\u{feff}su1-leaf1,ib-leaf-a01\n",
        ] {
            let m = NameMap::parse(text).unwrap();
            assert_eq!(m.len(), 1, "{text:?}");
            assert_eq!(
                m.plan_name("ib-leaf-a01", false).as_deref(),
                Some("su1-leaf1"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn names_csv_errors_name_the_line() {
        for (text, line, says) in [
            ("a,b\na,c\n", 2, "already renamed on line 1"),
            ("a,b\nc,b\n", 2, "already given"),
            ("a,b,c\n", 1, "3 fields"),
            ("\nx,\n", 2, "empty name"),
            ("\"a,b\n", 1, "not closed"),
        ] {
            let e = NameMap::parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(says), "{text:?}: {e}");
        }
    }

    #[test]
    fn hca_names() {
        assert_eq!(hca_name("mlx5_7"), "hca8");
        assert_eq!(hca_name("HCA-2"), "hca2");
        assert_eq!(hca_name("mlx5_4294967295"), "hca4294967296");
    }
}
