//! The health as `railyard check` prints it.

use super::{gbps_text, tier_name, Health, Shape};
use std::collections::BTreeMap;
use std::fmt::Write;

fn ratio(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |r| format!("{r:.2}:1"))
}

/// The health as `railyard check` prints it: the shape, then every finding with its ends and fix.
pub fn health_text(h: &Health, origin: &str) -> String {
    let mut out = String::new();
    shape_text(&mut out, &h.shape, origin);
    per_switch_text(&mut out, &h.shape);
    if h.findings.is_empty() {
        out.push_str("healthy: no findings\n");
        return out;
    }
    let _ = writeln!(
        out,
        "{} finding{}:",
        h.findings.len(),
        if h.findings.len() == 1 { "" } else { "s" }
    );
    for f in &h.findings {
        let _ = writeln!(out, "  {}: {}", f.kind.as_str(), f.what);
        for (a, b) in &f.ends {
            match b {
                Some(b) => {
                    let _ = writeln!(out, "    {a} - {b}");
                }
                None => {
                    let _ = writeln!(out, "    {a} (down)");
                }
            }
        }
        let _ = writeln!(out, "    fix: {}", f.fix);
    }
    out
}

/// What the fabric is: hosts, switches, cables by rate, and each tier.
fn shape_text(out: &mut String, s: &Shape, origin: &str) {
    let rates: Vec<String> = s.rates.iter().map(|(r, n)| format!("{n} at {r}")).collect();
    let _ = writeln!(
        out,
        "{origin}: {} hosts with {} HCAs, {} switches, {} cables ({}){}",
        s.hosts,
        s.hcas,
        s.switches.len(),
        s.cables,
        rates.join(", "),
        if s.subnets > 1 {
            format!(
                " in {} subnets (no cable joins them; each is checked on its own)",
                s.subnets
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "tiers (from the structure: leaves are cabled to hosts, each tier above one hop further):"
    );
    for t in &s.tiers {
        let _ = writeln!(
            out,
            "  {:<6} {:>5} switches  down {:>6} links {:>10} Gb/s  up {:>6} links {:>10} Gb/s  oversubscription {}",
            t.name,
            t.switches,
            t.down_links,
            gbps_text(t.down_gbps),
            t.up_links,
            gbps_text(t.up_gbps),
            ratio(t.oversubscription)
        );
    }
    if s.untiered_switches > 0 {
        let _ = writeln!(
            out,
            "  {} switch{} with no path to a host",
            s.untiered_switches,
            if s.untiered_switches == 1 { "" } else { "es" }
        );
    }
}

/// Oversubscription per switch and links per pair of switches, each grouped by value.
fn per_switch_text(out: &mut String, s: &Shape) {
    // Oversubscription per switch, grouped.
    for t in &s.tiers {
        let mut groups: BTreeMap<String, usize> = BTreeMap::new();
        for sw in s.switches.iter().filter(|x| x.tier == Some(t.tier)) {
            *groups.entry(ratio(sw.oversubscription)).or_default() += 1;
        }
        if t.up_links > 0 {
            let g: Vec<String> = groups.iter().map(|(r, n)| format!("{r} on {n}")).collect();
            let _ = writeln!(
                out,
                "oversubscription per {}: {}",
                tier_name(t.tier),
                g.join(", ")
            );
        }
    }
    // Links per pair, grouped by count per pair of tiers (each pair's own tier: descriptions can
    // be shared, a factory default on every switch).
    let mut per: BTreeMap<u32, BTreeMap<usize, usize>> = BTreeMap::new();
    for p in &s.pairs {
        if let Some(t) = p.lower_tier {
            *per.entry(t).or_default().entry(p.links).or_default() += 1;
        }
    }
    for (t, counts) in &per {
        let g: Vec<String> = counts
            .iter()
            .map(|(links, n)| {
                format!(
                    "{links} link{} on {n} pair{}",
                    if *links == 1 { "" } else { "s" },
                    if *n == 1 { "" } else { "s" }
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "links per {}-{} pair: {}",
            tier_name(*t),
            tier_name(t + 1),
            g.join(", ")
        );
    }
}
