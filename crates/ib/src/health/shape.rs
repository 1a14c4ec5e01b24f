//! What the fabric is: each switch's links down and up, each tier's, and the links between each
//! switch and the switches above it.

use super::{gbps, guid, tier_name, PairLinks, Shape, SwitchShape, TierShape, View};
use railyard_fabric::import::natural_cmp;
use std::collections::{BTreeMap, BTreeSet};

/// The links between a lower and an upper switch, by (lower, upper) node.
pub(super) type Pairs = BTreeMap<(usize, usize), Vec<usize>>;

/// Every switch's shape, the links of each (lower, upper) pair and the cables by rate.
pub(super) fn switch_shapes(
    v: &View,
) -> (BTreeMap<usize, SwitchShape>, Pairs, BTreeMap<String, usize>) {
    let d = v.d;
    // Shape: per switch, per tier, per pair.
    let mut switches: BTreeMap<usize, SwitchShape> = BTreeMap::new();
    for i in (0..d.nodes.len()).filter(|&i| v.is_switch(i)) {
        switches.insert(
            i,
            SwitchShape {
                device: d.nodes[i].desc.clone(),
                guid: guid(d.nodes[i].guid),
                tier: v.tier[i],
                host_links: 0,
                down_links: 0,
                up_links: 0,
                same_tier_links: 0,
                down_gbps: 0.0,
                up_gbps: 0.0,
                oversubscription: None,
            },
        );
    }
    let mut pairs: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    let mut rates: BTreeMap<String, usize> = BTreeMap::new();
    for &k in &v.links {
        let l = &d.links[k];
        *rates
            .entry(l.rate.map_or("unknown".to_string(), |r| r.to_string()))
            .or_default() += 1;
        if l.a.0 == l.b.0 {
            continue; // a loopback: a cable, but no link between two devices
        }
        let g = gbps(l.rate).unwrap_or(0.0);
        let (lo, hi) = v.oriented(l);
        let (tl, th) = (v.tier[lo.0], v.tier[hi.0]);
        if tl.is_some() && tl == th {
            for n in [lo.0, hi.0] {
                if let Some(s) = switches.get_mut(&n) {
                    s.same_tier_links += 1;
                }
            }
            continue;
        }
        if let Some(s) = switches.get_mut(&hi.0) {
            s.down_links += 1;
            s.down_gbps += g;
            if v.is_host(lo.0) {
                s.host_links += 1;
            }
        }
        if let Some(s) = switches.get_mut(&lo.0) {
            s.up_links += 1;
            s.up_gbps += g;
        }
        if v.is_switch(lo.0) && v.is_switch(hi.0) && tl.is_some() && th.is_some() {
            pairs.entry((lo.0, hi.0)).or_default().push(k);
        }
    }
    for s in switches.values_mut() {
        s.oversubscription = (s.up_gbps > 0.0).then(|| s.down_gbps / s.up_gbps);
    }
    (switches, pairs, rates)
}

/// Each tier's switches and links, its oversubscription the largest of its switches'.
fn tier_shapes(v: &View, switches: &BTreeMap<usize, SwitchShape>) -> Vec<TierShape> {
    let mut tiers_shape = Vec::new();
    for t in 1..=v.max_tier {
        let members: Vec<&SwitchShape> = switches.values().filter(|s| s.tier == Some(t)).collect();
        let down_gbps: f64 = members.iter().map(|s| s.down_gbps).sum();
        let up_gbps: f64 = members.iter().map(|s| s.up_gbps).sum();
        tiers_shape.push(TierShape {
            tier: t,
            name: tier_name(t),
            switches: members.len(),
            down_links: members.iter().map(|s| s.down_links).sum(),
            up_links: members.iter().map(|s| s.up_links).sum(),
            down_gbps,
            up_gbps,
            // As `plan` gives it: the largest of the tier's switches, not the tier's total (a
            // leaf at 2.74:1 among leaves at 2.20:1 is what its hosts get).
            oversubscription: (up_gbps > 0.0)
                .then(|| {
                    members
                        .iter()
                        .filter_map(|m| m.oversubscription)
                        .reduce(f64::max)
                })
                .flatten(),
        });
    }
    tiers_shape
}

/// The links between every switch and each switch above it, in natural order.
fn pair_rows(v: &View, pairs: &Pairs) -> Vec<PairLinks> {
    let d = v.d;
    let mut pair_rows: Vec<PairLinks> = pairs
        .iter()
        .map(|(&(lo, hi), ls)| PairLinks {
            lower: v.desc(lo).to_string(),
            upper: v.desc(hi).to_string(),
            lower_guid: guid(d.nodes[lo].guid),
            upper_guid: guid(d.nodes[hi].guid),
            lower_tier: v.tier[lo],
            links: ls.len(),
        })
        .collect();
    pair_rows.sort_by(|a, b| {
        natural_cmp(&a.lower, &b.lower).then_with(|| natural_cmp(&a.upper, &b.upper))
    });
    pair_rows
}

/// The fabric's shape: tiers, subnets, hosts, cables and switches.
pub(super) fn shape(
    v: &View,
    switches: BTreeMap<usize, SwitchShape>,
    pairs: &Pairs,
    rates: BTreeMap<String, usize>,
    host_of: &[Option<(String, String)>],
) -> Shape {
    let d = v.d;
    let tiers_shape = tier_shapes(v, &switches);
    let pair_rows = pair_rows(v, pairs);
    let hcas = (0..d.nodes.len()).filter(|&i| v.is_host(i)).count();
    let hosts: BTreeSet<&str> = host_of.iter().flatten().map(|(h, _)| h.as_str()).collect();
    let switches: Vec<SwitchShape> = {
        let mut v: Vec<SwitchShape> = switches.into_values().collect();
        v.sort_by(|a, b| {
            a.tier
                .unwrap_or(u32::MAX)
                .cmp(&b.tier.unwrap_or(u32::MAX))
                .then_with(|| natural_cmp(&a.device, &b.device))
        });
        v
    };
    Shape {
        untiered_switches: switches.iter().filter(|s| s.tier.is_none()).count(),
        subnets: v
            .subnet
            .iter()
            .enumerate()
            .filter(|&(i, _)| v.kept[i])
            .map(|(_, &p)| p)
            .collect::<BTreeSet<usize>>()
            .len(),
        tiers: tiers_shape,
        hosts: hosts.len(),
        hcas,
        cables: v.links.len(),
        rates,
        pairs: pair_rows,
        switches,
    }
}
