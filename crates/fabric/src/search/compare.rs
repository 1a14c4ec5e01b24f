//! How other designs compare with the chosen one: what differs, their ratios per tier, the best
//! design of each switch model ([`switch_costs`]) and the alternatives as the report lists them.

use super::bound::best_of_option;
use super::report::{AltLinks, AltRatios, AltSwitches, Alternative, SwitchCost};
use super::space::{Candidate, Space};
use crate::shape::Upper;
use crate::text::{plural, thousands};
use std::collections::HashMap;

/// What differs between an alternative and the chosen design.
fn differences(a: &Candidate, c: &Candidate) -> Vec<String> {
    let mut out = Vec::new();
    if a.option.switch.id != c.option.switch.id {
        out.push(format!(
            "{} instead of {}",
            a.option.switch.id, c.option.switch.id
        ));
    } else if a.option.mode.name != c.option.mode.name {
        out.push(format!(
            "{} instead of {}",
            a.option.mode.name, c.option.mode.name
        ));
    }
    if a.shape.su_size != c.shape.su_size {
        if let (Some(x), Some(y)) = (a.shape.su_size, c.shape.su_size) {
            out.push(format!(
                "units of {} instead of {y}",
                plural(u64::from(x), "server", "servers")
            ));
        }
    } else if a.shape.leaf_down != c.shape.leaf_down && a.shape.leaf_up > 0 {
        out.push(format!(
            "{} per leaf instead of {}",
            plural(u64::from(a.shape.leaf_down), "host port", "host ports"),
            c.shape.leaf_down
        ));
    }
    if a.shape.leaf_up != c.shape.leaf_up && a.shape.leaf_up > 0 && c.shape.leaf_up > 0 {
        out.push(format!(
            "{} per leaf instead of {}",
            plural(u64::from(a.shape.leaf_up), "uplink", "uplinks"),
            c.shape.leaf_up
        ));
    }
    if a.counts.tiers != c.counts.tiers {
        out.push(format!(
            "{} tiers instead of {}",
            a.counts.tiers, c.counts.tiers
        ));
    }
    for (what, x, y) in [
        ("leaves", a.counts.leaves, c.counts.leaves),
        ("spines", a.counts.spines, c.counts.spines),
        ("cores", a.counts.cores, c.counts.cores),
    ] {
        if x != y {
            out.push(format!(
                "{} {what} instead of {}",
                thousands(x as f64),
                thousands(y as f64)
            ));
        }
    }
    let links = |c: &Candidate| c.counts.leaf_spine + c.counts.spine_core + c.counts.inter_switch;
    if links(a) != links(c) {
        out.push(format!(
            "{} switch-to-switch cables instead of {}",
            thousands(links(a) as f64),
            thousands(links(c) as f64)
        ));
    }
    if a.conventional {
        out.push(
            "the conventional design: the switch with the most ports, the even leaf split, spines by the smallest divisor"
                .to_string(),
        );
    }
    if !a.keeps_preset {
        out.push("not the preset's reference choice".to_string());
    }
    out
}

/// The best design of each switch model, cheapest first; and what else each changes besides
/// the switch (its unit size, its leaf split, its tiers: [`differences`] with the chosen design
/// `c`), so the switch choice does not credit the switch with a saving the shape makes.
pub(super) fn switch_costs(
    sp: &Space,
    c: &Candidate,
    calibration: f64,
    failed: &[bool],
) -> (Vec<SwitchCost>, HashMap<String, String>) {
    let mut per_switch: Vec<(usize, SwitchCost)> = Vec::new();
    let mut shape_of: HashMap<String, String> = HashMap::new();
    for (oi, option) in sp.options.iter().enumerate() {
        if let Some(b) = best_of_option(sp, oi, calibration, failed).map(|i| &sp.candidates[i]) {
            let shape: Vec<String> = differences(b, c)
                .into_iter()
                .filter(|d| {
                    d.starts_with("units of")
                        || d.contains(" per leaf instead")
                        || d.contains(" tiers instead")
                })
                .collect();
            if !shape.is_empty() {
                shape_of.insert(option.switch.id.clone(), shape.join(", "));
            }
            per_switch.push((
                oi,
                SwitchCost {
                    switch_model: option.switch.id.clone(),
                    port_mode: option.mode.name.clone(),
                    cost_usd: b.cost(calibration),
                    cost_estimated: b.exact.is_none(),
                },
            ));
        }
    }
    per_switch.sort_by(|a, b| a.1.cost_usd.total_cmp(&b.1.cost_usd).then(a.0.cmp(&b.0)));
    let switches = per_switch.into_iter().map(|(_, s)| s).collect();
    (switches, shape_of)
}

/// Design `a` as an alternative to the chosen design `c`, which costs `chosen_cost`.
pub(super) fn alternative(
    a: &Candidate,
    c: &Candidate,
    chosen_cost: f64,
    calibration: f64,
    gbps: u32,
) -> Alternative {
    let ac = a.cost(calibration);
    Alternative {
        switch_model: a.option.switch.id.clone(),
        port_mode: a.option.mode.name.clone(),
        tiers: a.counts.tiers,
        su_size: a.shape.su_size,
        leaf_host_ports: a.shape.leaf_down,
        leaf_uplinks: a.shape.leaf_up,
        switches: AltSwitches {
            leaf: a.counts.leaves,
            spine: a.counts.spines,
            core: a.counts.cores,
            total: a.counts.switches(),
        },
        links: AltLinks {
            server_leaf: a.counts.server_leaf,
            leaf_spine: a.counts.leaf_spine,
            spine_core: a.counts.spine_core,
        },
        oversubscription: ratios(a),
        bisection_gbps: a.bisection(gbps),
        cost_usd: ac,
        cost_delta_usd: ac - chosen_cost,
        cost_estimated: a.exact.is_none(),
        conventional: a.conventional,
        keeps_preset: a.keeps_preset,
        differs: differences(a, c),
    }
}

/// Down:up ratios of full switches per tier, as the plan reports them (0 absent, 1 top tier).
fn ratios(c: &Candidate) -> AltRatios {
    let s = &c.shape;
    let leaf = if s.leaf_up == 0 {
        1.0
    } else {
        c.leaf_hosts as f64 / f64::from(s.leaf_up)
    };
    let (spine, core) = match s.upper {
        Upper::None => (0.0, 0.0),
        Upper::Two { .. } => (1.0, 0.0),
        Upper::Three {
            links, spine_up, ..
        } => (
            (c.pod_slots * u64::from(links)) as f64 / f64::from(spine_up),
            1.0,
        ),
    };
    AltRatios { leaf, spine, core }
}
