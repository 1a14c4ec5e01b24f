//! Findings about switches: fewer uplinks than their tier's peers (with the cables that would
//! restore them), uplinks uneven between the switches above, or no path to a host.

use super::links::Class;
use super::shape::Pairs;
use super::{escaped, mode, plural, tier_name, Finding, Kind, Repair, SwitchShape, View};
use crate::discovery::Discovered;
use crate::rate::Rate;
use railyard_fabric::import::natural_cmp;
use std::collections::{BTreeMap, BTreeSet};

/// Who each switch is cabled up to, and the ports cables take.
struct Uplinks {
    /// Ports that carry a cable; a suggested cable takes its two ports.
    used: BTreeSet<(usize, u32)>,
    /// Lower switch -> upper switch -> links between them.
    uppers: BTreeMap<usize, BTreeMap<usize, usize>>,
    /// Upper switch -> the lower switches cabled to it.
    lowers_of: BTreeMap<usize, Vec<usize>>,
}

impl Uplinks {
    /// The uplinks of switch `i`.
    fn up(&self, i: usize) -> usize {
        self.uppers.get(&i).map_or(0, |m| m.values().sum::<usize>())
    }
}

/// One tier of one subnet: its switches and what most of them have.
struct TierNorm {
    t: u32,
    net: usize,
    members: Vec<usize>,
    /// The uplink count most switches of the tier have, and how many have it.
    norm: usize,
    peers: usize,
    /// The rate most links from this tier to the next run at.
    rate: Option<Rate>,
    /// How often each port number carries an uplink on this tier's switches, and a down-link on
    /// the tier above's: a missing uplink goes where its peers have theirs (switches of one tier
    /// are cabled alike: hosts low, uplinks high), not to the first free port.
    up_ports: BTreeMap<u32, usize>,
    down_ports: BTreeMap<u32, usize>,
}

/// Uplinks: fewer than most switches of the tier, or uneven between the switches above.
pub(super) fn uplinks(
    v: &View,
    switches: &BTreeMap<usize, SwitchShape>,
    pairs: &Pairs,
    norm_rate: &BTreeMap<Class, Rate>,
    findings: &mut Vec<Finding>,
) {
    let d = v.d;
    let mut used: BTreeSet<(usize, u32)> = BTreeSet::new();
    for &k in &v.links {
        used.insert(d.links[k].a);
        used.insert(d.links[k].b);
    }
    let mut uppers: BTreeMap<usize, BTreeMap<usize, usize>> = BTreeMap::new();
    for (&(lo, hi), ls) in pairs {
        uppers.entry(lo).or_default().insert(hi, ls.len());
    }
    let mut lowers_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(lo, hi) in pairs.keys() {
        lowers_of.entry(hi).or_default().push(lo);
    }
    let mut ups = Uplinks {
        used,
        uppers,
        lowers_of,
    };
    for (net, t) in v
        .top
        .iter()
        .flat_map(|(&net, &m)| (1..m).map(move |t| (net, t)))
    {
        let Some(tn) = tier_norm(v, switches, pairs, &ups, (net, t), norm_rate) else {
            continue;
        };
        for &s in &tn.members {
            let mine = ups.uppers.get(&s).cloned().unwrap_or_default();
            if ups.up(s) < tn.norm {
                let f = few_uplinks(v, switches, &mut ups, &tn, s, &mine);
                findings.push(f);
            } else if mine.len() > 1 {
                uneven_links(v, pairs, t, s, &mine, findings);
            }
        }
    }
}

/// Tier `t` of subnet `net` and what most of its switches have; `None` for a tier with none.
fn tier_norm(
    v: &View,
    switches: &BTreeMap<usize, SwitchShape>,
    pairs: &Pairs,
    ups: &Uplinks,
    (net, t): (usize, u32),
    norm_rate: &BTreeMap<Class, Rate>,
) -> Option<TierNorm> {
    let d = v.d;
    let members: Vec<usize> = switches
        .iter()
        .filter(|&(&i, s)| s.tier == Some(t) && v.subnet[i] == net)
        .map(|(&i, _)| i)
        .collect();
    let norm = mode(members.iter().map(|&i| ups.up(i)))?;
    let (mut up_ports, mut down_ports) = (BTreeMap::new(), BTreeMap::new());
    for (&(lo, _), ls) in pairs {
        if switches.get(&lo).is_some_and(|x| x.tier == Some(t)) && v.subnet[lo] == net {
            for &k in ls {
                let (a, b) = v.oriented(&d.links[k]);
                *up_ports.entry(a.1).or_insert(0usize) += 1;
                *down_ports.entry(b.1).or_insert(0usize) += 1;
            }
        }
    }
    let peers = members.iter().filter(|&&i| ups.up(i) == norm).count();
    let rate = norm_rate.get(&(net, Some(t), Some(t + 1))).copied();
    Some(TierNorm {
        t,
        net,
        members,
        norm,
        peers,
        rate,
        up_ports,
        down_ports,
    })
}

/// Switch `s` with fewer uplinks than most of its tier, and the cables that would restore them
/// on free ports.
fn few_uplinks(
    v: &View,
    switches: &BTreeMap<usize, SwitchShape>,
    ups: &mut Uplinks,
    tn: &TierNorm,
    s: usize,
    mine: &BTreeMap<usize, usize>,
) -> Finding {
    let d = v.d;
    let (t, norm, peers, rate, members) = (tn.t, tn.norm, tn.peers, tn.rate, &tn.members);
    let have = ups.up(s);
    let to = uplink_targets(v, switches, ups, tn, s, mine);
    let mut ends = Vec::new();
    let mut repair = Vec::new();
    for u in to {
        let (Some(p), Some(q)) = (
            usual_free_port(d, s, &ups.used, &tn.up_ports),
            usual_free_port(d, u, &ups.used, &tn.down_ports),
        ) else {
            continue;
        };
        ups.used.insert((s, p));
        ups.used.insert((u, q));
        ends.push((v.end((s, p)), Some(v.end((u, q)))));
        if let Some(rate) = rate {
            repair.push(Repair::Cable {
                a: (s, p),
                b: (u, q),
                rate,
            });
        }
    }
    let cables: Vec<String> = ends
        .iter()
        .map(|(a, b)| match b {
            Some(b) => format!("{a} to {b}"),
            None => a.to_string(),
        })
        .collect();
    Finding {
        kind: Kind::FewUplinks,
        what: format!(
            "{} \"{}\" has {have} uplink{} where {peers} of the {} {} have {norm}",
            tier_name(t),
            escaped(v.desc(s)),
            if have == 1 { "" } else { "s" },
            members.len(),
            plural(t)
        ),
        fix: if cables.is_empty() {
            "cable the missing uplinks (no free ports found to suggest)".to_string()
        } else {
            format!(
                "cable the missing uplink{}: {}",
                if cables.len() == 1 { "" } else { "s" },
                cables.join("; ")
            )
        },
        ends,
        repair,
        rates: None,
    }
}

/// The upper switches a short switch's missing uplinks go to: those its tier's peers reach
/// through the ones it reaches (all of the tier above when it reaches none), fewest links from
/// it first, up to as many links each as it has to any.
fn uplink_targets(
    v: &View,
    switches: &BTreeMap<usize, SwitchShape>,
    ups: &Uplinks,
    tn: &TierNorm,
    s: usize,
    mine: &BTreeMap<usize, usize>,
) -> Vec<usize> {
    let (t, net, norm, have) = (tn.t, tn.net, tn.norm, ups.up(s));
    let mut group: BTreeSet<usize> = BTreeSet::new();
    for u in mine.keys() {
        for l in ups.lowers_of.get(u).into_iter().flatten() {
            group.extend(
                ups.uppers
                    .get(l)
                    .into_iter()
                    .flat_map(|m| m.keys().copied()),
            );
        }
    }
    if group.is_empty() {
        group.extend(
            switches
                .iter()
                .filter(|&(&i, x)| x.tier == Some(t + 1) && v.subnet[i] == net)
                .map(|(&i, _)| i),
        );
    }
    let per_upper = mine.values().copied().max().unwrap_or(1).max(1);
    let mut candidates: Vec<(usize, usize)> = group
        .iter()
        .map(|&u| (u, mine.get(&u).copied().unwrap_or(0)))
        .collect();
    candidates.sort_by(|a, b| a.1.cmp(&b.1).then(natural_cmp(v.desc(a.0), v.desc(b.0))));
    let mut missing = norm - have;
    let mut to: Vec<usize> = Vec::new();
    for &(u, c) in &candidates {
        for _ in c..per_upper {
            if missing > 0 {
                to.push(u);
                missing -= 1;
            }
        }
    }
    let mut round = 0;
    while missing > 0 && !candidates.is_empty() && round < norm {
        to.push(candidates[round % candidates.len()].0);
        missing -= 1;
        round += 1;
    }
    to
}

/// Switch `s` with more links to one upper switch than another.
fn uneven_links(
    v: &View,
    pairs: &Pairs,
    t: u32,
    s: usize,
    mine: &BTreeMap<usize, usize>,
    findings: &mut Vec<Finding>,
) {
    let d = v.d;
    let most = mine.values().copied().max().unwrap_or(0);
    for (&u, &c) in mine {
        if c < most {
            let ends = pairs[&(s, u)]
                .iter()
                .map(|&k| {
                    let (lo, hi) = v.oriented(&d.links[k]);
                    (v.end(lo), Some(v.end(hi)))
                })
                .collect();
            findings.push(Finding {
                kind: Kind::UnevenLinks,
                what: format!(
                    "\"{}\" has {c} link{} to \"{}\" but {most} to another {}: D-mod-K routes more destinations over fewer cables",
                    escaped(v.desc(s)),
                    if c == 1 { "" } else { "s" },
                    escaped(v.desc(u)),
                    tier_name(t + 1)
                ),
                fix: format!(
                    "move a cable from a {} it has {most} links to onto \"{}\", so every pair has {most}",
                    tier_name(t + 1),
                    escaped(v.desc(u))
                ),
                ends,
                repair: Vec::new(),
                rates: None,
            });
        }
    }
}

/// Switches with no path to a host.
pub(super) fn isolated_switches(
    v: &View,
    switches: &BTreeMap<usize, SwitchShape>,
    findings: &mut Vec<Finding>,
) {
    let d = v.d;
    for (&i, s) in switches {
        if s.tier.is_none() {
            let ends = v
                .links
                .iter()
                .map(|&k| &d.links[k])
                .filter(|l| l.a.0 == i || l.b.0 == i)
                // This switch's end first.
                .map(|l| {
                    let (me, other) = if l.a.0 == i { (l.a, l.b) } else { (l.b, l.a) };
                    (v.end(me), Some(v.end(other)))
                })
                .collect();
            findings.push(Finding {
                kind: Kind::IsolatedSwitch,
                what: format!(
                    "switch \"{}\" has no hosts and no path to a switch that has",
                    escaped(v.desc(i))
                ),
                fix: "cable it into the fabric (its uplinks or hosts may be on another switch), or take it out".to_string(),
                ends,
                repair: Vec::new(),
                rates: None,
            });
        }
    }
}

/// The lowest port of node `i` that no cable uses, if any.
fn free_port(d: &Discovered, i: usize, used: &BTreeSet<(usize, u32)>) -> Option<u32> {
    (1..=d.nodes[i].ports).find(|&p| !used.contains(&(i, p)))
}

/// The free port of switch `i` that its peers use most for the same kind of link (`usual`: port
/// number to how many such links use it; the lowest number on a tie), else its first free port.
fn usual_free_port(
    d: &Discovered,
    i: usize,
    used: &BTreeSet<(usize, u32)>,
    usual: &BTreeMap<u32, usize>,
) -> Option<u32> {
    let mut ports: Vec<(u32, usize)> = usual.iter().map(|(&p, &n)| (p, n)).collect();
    ports.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    ports
        .into_iter()
        .map(|(p, _)| p)
        .find(|&p| p >= 1 && p <= d.nodes[i].ports && !used.contains(&(i, p)))
        .or_else(|| free_port(d, i, used))
}
