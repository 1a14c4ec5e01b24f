//! Cables compared: by rate where they land as planned, else as chains of differing planned and
//! discovered cables through the ports they share, each one finding with the moves that fix it.

use super::CableRef;
use super::{Ctx, Finding, Kind, Options, PortRef};
use crate::discovery::Discovered;
use crate::rate::Rate;
use std::collections::{BTreeMap, BTreeSet};

/// Cables that differ, as (lower port, upper port).
type Diff = BTreeSet<(PortRef, PortRef)>;

/// What the rate comparison counted.
#[derive(Default)]
pub(super) struct CableCount {
    pub(super) cables_in_scope: usize,
    /// Cables found at a rate other than planned: all of them, and those at the rate ibsim shows.
    pub(super) wrong_rates: usize,
    pub(super) ibsim_rates: usize,
    /// Cables found as planned whose planned rate ibsim cannot show.
    pub(super) beyond_ibsim: usize,
}

/// Discovered cables in planned names (both directions): far end, rate and line.
fn found_cables(
    disc: &Discovered,
    name: &[Option<String>],
) -> BTreeMap<PortRef, (PortRef, Option<Rate>, usize)> {
    let mut found: BTreeMap<PortRef, (PortRef, Option<Rate>, usize)> = BTreeMap::new();
    for l in &disc.links {
        let (Some(a), Some(b)) = (&name[l.a.0], &name[l.b.0]) else {
            continue;
        };
        let (a, b) = (
            PortRef {
                device: a.clone(),
                port: l.a.1,
            },
            PortRef {
                device: b.clone(),
                port: l.b.1,
            },
        );
        found.insert(a.clone(), (b.clone(), l.rate, l.line));
        found.insert(b, (a, l.rate, l.line));
    }
    found
}

/// Compares cables; cables touching unknown or missing devices are covered by the device
/// findings. Returns the counts and the differences: planned cables not found as planned, found
/// cables not planned.
pub(super) fn compare(
    disc: &Discovered,
    cx: &Ctx,
    name: &[Option<String>],
    missing_devices: &BTreeSet<&String>,
    opts: Options,
    findings: &mut Vec<Finding>,
) -> (CableCount, Diff, Diff) {
    let p = cx.p;
    let found = found_cables(disc, name);
    let relevant = |r: &PortRef| !missing_devices.contains(&r.device);
    let cable_in_scope =
        |a: &PortRef, b: &PortRef| cx.in_scope(&a.device) || cx.in_scope(&b.device);
    let mut plan_diff: Diff = BTreeSet::new();
    let mut n = CableCount::default();
    for (a, (b, rate, _)) in &p.links {
        if a > b || !cable_in_scope(a, b) {
            continue;
        }
        n.cables_in_scope += 1;
        if !relevant(a) || !relevant(b) {
            continue;
        }
        match found.get(a) {
            Some((fb, frate, line)) if fb == b => {
                compare_rate((a, b), *rate, (frate, *line), opts, cx, &mut n, findings);
            }
            _ => {
                plan_diff.insert((a.clone(), b.clone()));
            }
        }
    }
    let mut found_diff: BTreeSet<(PortRef, PortRef)> = BTreeSet::new();
    for (a, (b, _, _)) in &found {
        if a < b && p.links.get(a).is_none_or(|(pb, _, _)| pb != b) {
            found_diff.insert((a.clone(), b.clone()));
        }
    }
    (n, plan_diff, found_diff)
}

/// A cable found where it was planned, compared by rate.
fn compare_rate(
    (a, b): (&PortRef, &PortRef),
    rate: Rate,
    (frate, line): (&Option<Rate>, usize),
    opts: Options,
    cx: &Ctx,
    n: &mut CableCount,
    findings: &mut Vec<Finding>,
) {
    let rate = &rate;
    if rate.as_ibsim() != *rate {
        n.beyond_ibsim += 1;
    }
    let finding = |kind, fix, group| Finding {
        kind,
        fix,
        group,
        planned: vec![(a.clone(), b.clone())],
        discovered: vec![(a.clone(), b.clone())],
        cables: vec![],
        device: None,
    };
    match frate {
        _ if cx.site.without_rates => {}
        None => findings.push(finding(
            Kind::UnknownRate,
            format!("the discovery gives no rate for {a} - {b} (line {line}), planned {rate}: rediscover with ibnetdiscover or iblinkinfo, which print every link's rate"),
            format!("cables without a rate in the discovery, planned {rate}: rediscover with ibnetdiscover or iblinkinfo, which print every link's rate"),
        )),
        Some(fr) if !fr.is_known() => findings.push(finding(
            Kind::UnknownRate,
            format!("{a} - {b} runs at a rate the tool could not read ({fr}, line {line}), planned {rate}: check the port with ibportstate and rediscover"),
            format!("cables run at a rate the tool could not read ({fr}), planned {rate}: check each port with ibportstate and rediscover"),
        )),
        Some(fr) if fr != rate => {
            n.wrong_rates += 1;
            if !opts.ibsim_rates && *fr == rate.as_ibsim() {
                n.ibsim_rates += 1;
            }
            findings.push(finding(
                Kind::WrongRate,
                format!("{a} - {b} runs at {fr}, planned {rate}: check the cable, transceivers and port settings"),
                format!("cables run at {fr}, planned {rate}: check each cable, its transceivers and port settings"),
            ))
        }
        Some(_) => {}
    }
}

/// Chains: ports joined by differing planned and discovered cables, each one finding.
pub(super) fn chains(cx: &Ctx, plan_diff: &Diff, found_diff: &Diff, findings: &mut Vec<Finding>) {
    let mut adj: BTreeMap<PortRef, Vec<(bool, PortRef)>> = BTreeMap::new();
    for (a, b) in plan_diff {
        adj.entry(a.clone()).or_default().push((true, b.clone()));
        adj.entry(b.clone()).or_default().push((true, a.clone()));
    }
    for (a, b) in found_diff {
        adj.entry(a.clone()).or_default().push((false, b.clone()));
        adj.entry(b.clone()).or_default().push((false, a.clone()));
    }
    let mut seen: BTreeSet<PortRef> = BTreeSet::new();
    let starts: Vec<PortRef> = adj.keys().cloned().collect();
    for start in starts {
        if seen.contains(&start) {
            continue;
        }
        let mut stack = vec![start];
        let mut ports = BTreeSet::new();
        while let Some(x) = stack.pop() {
            if !seen.insert(x.clone()) {
                continue;
            }
            ports.insert(x.clone());
            for (_, y) in &adj[&x] {
                if !seen.contains(y) {
                    stack.push(y.clone());
                }
            }
        }
        if !ports.iter().any(|x| cx.in_scope(&x.device)) {
            continue;
        }
        let planned: Vec<(PortRef, PortRef)> = plan_diff
            .iter()
            .filter(|(a, _)| ports.contains(a))
            .cloned()
            .collect();
        let discovered: Vec<(PortRef, PortRef)> = found_diff
            .iter()
            .filter(|(a, _)| ports.contains(a))
            .cloned()
            .collect();
        findings.push(classify(planned, discovered));
    }
}

/// Every cable a finding involves, with its cabling.csv id and where its ends stand.
pub(super) fn cable_refs(cx: &Ctx, findings: &mut [Finding]) {
    let p = cx.p;
    for f in findings.iter_mut() {
        let mut seen = BTreeSet::new();
        for (a, b) in f.planned.iter().chain(&f.discovered) {
            if !seen.insert((a.clone(), b.clone())) {
                continue;
            }
            let id = p
                .links
                .get(a)
                .filter(|(pb, _, _)| pb == b)
                .map(|&(_, _, i)| railyard_fabric::cable_id(i, p.cables));
            f.cables.push(CableRef {
                id,
                a: a.clone(),
                b: b.clone(),
                a_location: cx.location(&a.device),
                b_location: cx.location(&b.device),
            });
        }
    }
}

/// Names a chain of differing cables and says how to fix it.
fn classify(planned: Vec<(PortRef, PortRef)>, discovered: Vec<(PortRef, PortRef)>) -> Finding {
    let grouped = |kind, fix, group: &str| Finding {
        kind,
        fix,
        group: group.to_string(),
        planned: planned.clone(),
        discovered: discovered.clone(),
        cables: vec![],
        device: None,
    };
    let finding = |kind, fix: String| grouped(kind, fix.clone(), &fix);
    match (planned.as_slice(), discovered.as_slice()) {
        ([(a, b)], []) => grouped(
            Kind::MissingCable,
            format!("add a cable {a} - {b}"),
            "planned cables not found: add each as planned",
        ),
        ([], [(a, b)]) => grouped(
            Kind::UnexpectedCable,
            format!("remove the cable {a} - {b}, which the plan does not have"),
            "cables the plan does not have: remove each",
        ),
        ([(pa, pb)], [(da, db)]) => {
            // One end is right (shared), the other landed elsewhere.
            let (fixed, should, is) = if pa == da {
                (pa, pb, db)
            } else if pa == db {
                (pa, pb, da)
            } else if pb == da {
                (pb, pa, db)
            } else {
                (pb, pa, da)
            };
            let kind = if should.device == is.device {
                Kind::WrongPort
            } else {
                Kind::Miswire
            };
            finding(
                kind,
                format!("the cable from {fixed} lands on {is}: move that end to {should}"),
            )
        }
        ([p1, p2], [d1, d2]) if is_swap(p1, p2, d1, d2) => {
            // In a swap every end's far end changed; name the pair on one device when there is one.
            let moved = [&d1.0, &d1.1, &d2.0, &d2.1];
            // Every end is "moved" in a swap; name the pair on one device when there is one.
            let pair = same_device_pair(&moved).unwrap_or((&d1.1, &d2.1));
            finding(
                Kind::Swap,
                format!(
                    "the cables at {} and {} are swapped: exchange them",
                    pair.0, pair.1
                ),
            )
        }
        _ => {
            let moves: Vec<String> = planned.iter().map(|(a, b)| format!("{a} - {b}")).collect();
            finding(
                Kind::MiswiredChain,
                format!(
                    "{} cables are miswired into each other's places: recable them as planned ({})",
                    discovered.len().max(planned.len()),
                    moves.join("; ")
                ),
            )
        }
    }
}

/// Two planned cables a-b, c-d found as a-d, c-b (or a-c, b-d): their four ends, crossed.
fn is_swap(
    p1: &(PortRef, PortRef),
    p2: &(PortRef, PortRef),
    d1: &(PortRef, PortRef),
    d2: &(PortRef, PortRef),
) -> bool {
    let ends = |x: &(PortRef, PortRef), y: &(PortRef, PortRef)| {
        let mut v = vec![&x.0, &x.1, &y.0, &y.1];
        v.sort();
        v.into_iter().cloned().collect::<Vec<_>>()
    };
    ends(p1, p2) == ends(d1, d2)
}

fn same_device_pair<'a>(ports: &[&'a PortRef]) -> Option<(&'a PortRef, &'a PortRef)> {
    for (i, a) in ports.iter().enumerate() {
        for b in &ports[i + 1..] {
            if a.device == b.device {
                return Some((a, b));
            }
        }
    }
    None
}
