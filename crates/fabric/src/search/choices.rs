//! The design's choices in words: each with its value, its source (given, preset or auto) and
//! why, as the plan prints them under "design:" and summary.json keeps them.

use super::report::{Choice, SwitchCost};
use super::space::{Candidate, Space};
use crate::shape::{Pods, Upper};
use crate::text::{plural, ratio_text, signed_usd, thousands};
use crate::topo::uplinks_for;
use railyard_spec::{ClusterSpec, Source, Topology};
use std::collections::HashMap;
use std::fmt::Write;

/// What the choices' words are made of: the request, the search, the chosen design and its cost.
#[derive(Clone, Copy)]
pub(super) struct Prose<'s, 'a> {
    pub spec: &'s ClusterSpec,
    pub sp: &'s Space<'a>,
    pub c: &'s Candidate<'a>,
    /// The chosen design's cost.
    pub cost: f64,
    /// Factor on typical cable costs, from the first design built.
    pub calibration: f64,
}

impl Prose<'_, '_> {
    /// Where a spec field's value came from: `given`, `preset` or `auto`.
    fn source(&self, field: &str) -> String {
        self.spec.provenance.source(field).as_str().to_string()
    }

    /// Why a spec field was reset to auto, when it was: the start of its choice's reason.
    fn reset_note(&self, field: &str) -> String {
        self.spec
            .provenance
            .reset(field)
            .map(|r| {
                format!(
                    "the spec's {} was reset to auto because {}; ",
                    r.value, r.because
                )
            })
            .unwrap_or_default()
    }
}

fn push(out: &mut Vec<Choice>, key: &str, value: String, source: String, why: String) {
    out.push(Choice {
        key: key.to_string(),
        value,
        source,
        why,
    });
}

/// The switch comparison the switch choice quotes: the best design of each switch model,
/// cheapest first, and what else each changes (`compare::switch_costs`); a cheaper design passed
/// over for cables that cannot be ordered; switch models left out for want of cage parts.
pub(super) struct Switches<'r> {
    pub costs: &'r [SwitchCost],
    pub shape_of: &'r HashMap<String, String>,
    pub passed_over: Option<usize>,
    pub partless: bool,
}

/// Every choice of the design, in the order the plan prints them.
pub(super) fn choices(p: &Prose, switches: &Switches) -> Vec<Choice> {
    let mut out = Vec::new();
    switch_choice(p, switches, &mut out);
    port_mode_choice(p, &mut out);
    nic_choice(p, &mut out);
    leaf_ports_choice(p, &mut out);
    unit_choice(p, &mut out);
    upper_choices(p, &mut out);
    tiers_choices(p, &mut out);
    out
}

/// The switch: the cheapest of the switch models (or the preset's or user's), against the best
/// design of another.
fn switch_choice(p: &Prose, switches: &Switches, out: &mut Vec<Choice>) {
    let Prose {
        sp,
        c,
        cost,
        calibration,
        ..
    } = *p;
    let mut why = p.reset_note("fabric.switch");
    why.push_str(&switch_comparison(p, switches));
    if let Some(u) = switches.passed_over.map(|u| &sp.candidates[u]) {
        let _ = write!(
            why,
            "{}a design with {} at {} costs ${} ({}) but was passed over: links share cages the catalog has no part for (a multi-port cable or transceiver), so its cables could not be ordered",
            if why.is_empty() { "" } else { "; " },
            u.option.switch.id,
            u.option.mode.name,
            thousands(u.cost(calibration)),
            signed_usd(u.cost(calibration) - cost)
        );
    }
    let sw = &c.option.switch.id;
    push(out, "switch", sw.clone(), p.source("fabric.switch"), why);
}

/// The chosen switch against the others, as its source calls for: the cheapest of how many
/// (auto), the preset's unless another is cheaper, or what another would cost (given).
fn switch_comparison(p: &Prose, switches: &Switches) -> String {
    let Prose {
        spec, sp, c, cost, ..
    } = *p;
    let (gbps, tech, prov) = (sp.base.gbps, spec.fabric.tech, &spec.provenance);
    let Switches {
        costs: switches,
        shape_of,
        partless,
        ..
    } = *switches;
    let sw = &c.option.switch.id;
    let cheapest_other = switches.iter().find(|s| &s.switch_model != sw);
    // Another switch model's best design and what it costs: `QM9790 ... costs ~$1,234`.
    let other = |o: &SwitchCost, verb: &str| {
        format!(
            "{}{} {verb} {}${}",
            o.switch_model,
            shape_of
                .get(&o.switch_model)
                .map_or(String::new(), |d| format!(" and {d}")),
            if o.cost_estimated { "~" } else { "" },
            thousands(o.cost_usd),
        )
    };
    let cheaper = || {
        switches
            .first()
            .filter(|o| &o.switch_model != sw && o.cost_usd < cost - 0.5)
    };
    let mut why = String::new();
    match prov.source("fabric.switch") {
        Source::Auto => {
            let _ = write!(
                why,
                "cheapest design of {} switch model{} carrying {tech} at {gbps} Gb/s{}",
                switches.len(),
                if switches.len() == 1 { "" } else { "s" },
                if partless {
                    " with cables that can be ordered"
                } else {
                    ""
                }
            );
            if let Some(o) = cheapest_other {
                let delta = signed_usd(o.cost_usd - cost);
                let _ = write!(why, "; the best with {} ({delta})", other(o, "costs"));
            }
        }
        Source::Preset => {
            let _ = write!(why, "the preset's reference choice");
            if let Some(o) = cheaper() {
                let delta = signed_usd(o.cost_usd - cost);
                let _ = write!(
                    why,
                    "; a design with {} ({delta}, see --alternatives)",
                    other(o, "costs")
                );
            } else {
                let _ = write!(why, "; also the cheapest");
            }
        }
        Source::Given => {
            if let Some(o) = cheaper() {
                let delta = signed_usd(o.cost_usd - cost);
                let _ = write!(why, "a design with {} ({delta})", other(o, "would cost"));
            }
        }
    }
    why
}

fn port_mode_choice(p: &Prose, out: &mut Vec<Choice>) {
    let Prose { spec, sp, c, .. } = *p;
    let (gbps, tech) = (sp.base.gbps, spec.fabric.tech);
    let mode = c.option.mode;
    push(
        out,
        "port_mode",
        format!("{} ({} x {} Gb/s)", mode.name, mode.ports, mode.gbps),
        p.source("fabric.port_gbps"),
        format!(
            "{}{}",
            p.reset_note("fabric.port_gbps"),
            if spec.fabric.port_gbps.is_some() {
                format!("the port speed asked for, {gbps} Gb/s")
            } else {
                format!("{tech}'s port speed, {gbps} Gb/s")
            }
        ),
    );
}

fn nic_choice(p: &Prose, out: &mut Vec<Choice>) {
    let Prose { spec, sp, .. } = *p;
    let (gbps, tech, prov) = (sp.base.gbps, spec.fabric.tech, &spec.provenance);
    let nic = sp.base.nic;
    push(
        out,
        "nic",
        nic.id.clone(),
        p.source("servers.nic"),
        format!(
            "{}{}{}",
            p.reset_note("servers.nic"),
            if sp.base.host_cage() < spec.servers.nic_ports_per_cage {
                format!(
                    "its {} ports per cage went with it (one cage per port); ",
                    spec.servers.nic_ports_per_cage
                )
            } else {
                String::new()
            },
            if prov.source("servers.nic") == Source::Auto {
                format!("the NIC whose ports run {tech} at {gbps} Gb/s (fewest ports, then lowest price)")
            } else {
                String::new()
            }
        ),
    );
}

/// A leaf's host ports and uplinks, against the ratio asked (tree topologies only).
fn leaf_ports_choice(p: &Prose, out: &mut Vec<Choice>) {
    let Prose { spec, sp, c, .. } = *p;
    let shape = c.shape;
    let requested = spec.fabric.oversubscription;
    let topology = spec.fabric.topology;
    if matches!(
        topology,
        Topology::FatTree | Topology::RailOnly | Topology::RailOptimized
    ) {
        let ports_why = if shape.leaf_up == 0 {
            String::new()
        } else {
            let need = uplinks_for(shape.leaf_down, requested);
            let full = f64::from(shape.leaf_down) / f64::from(shape.leaf_up);
            let mut w = format!(
                "a full leaf at {} (at most {} asked)",
                ratio_text(full),
                ratio_text(requested)
            );
            if c.leaf_hosts < u64::from(shape.leaf_down) {
                // No leaf is full (it said "a full leaf at 0.03:1" for one server's 32 + 32 leaf).
                let _ = write!(
                    w,
                    "; the fullest here has {} of its {} host ports cabled: {}",
                    c.leaf_hosts,
                    shape.leaf_down,
                    ratio_text(c.leaf_hosts as f64 / f64::from(shape.leaf_up))
                );
            }
            if shape.leaf_up > need {
                // What the fewest uplinks would need above the leaves.
                let fewest = sp.candidates.iter().find(|x| {
                    x.option.switch.id == c.option.switch.id
                        && x.shape.su_size == shape.su_size
                        && x.shape.leaf_down == shape.leaf_down
                        && x.shape.leaf_up == need
                });
                let _ = write!(
                    w,
                    "; {} uplinks where {need} meet the ratio, so the leaves share {}",
                    shape.leaf_up,
                    plural(c.counts.spines, "spine", "spines")
                );
                if let Some(f) = fewest {
                    let _ = write!(w, " instead of {}", thousands(f.counts.spines as f64));
                }
            }
            w
        };
        let value = if shape.leaf_up == 0 {
            format!("{} host ports on one switch", shape.leaf_down)
        } else {
            format!("{} to hosts + {} up", shape.leaf_down, shape.leaf_up)
        };
        push(out, "leaf_ports", value, "auto".to_string(), ports_why);
    }
}

/// The scalable unit, and how full the last one is (rail-optimized designs).
fn unit_choice(p: &Prose, out: &mut Vec<Choice>) {
    let Prose { spec, c, .. } = *p;
    let prov = &spec.provenance;
    let shape = c.shape;
    if let Some(su) = shape.su_size {
        let units = spec.servers.count.div_ceil(su);
        let last = spec.servers.count - (units - 1) * su;
        let mut why = p.reset_note("fabric.su_size");
        match prov.source("fabric.su_size") {
            Source::Auto => why.push_str("the cheapest unit size"),
            Source::Preset => why.push_str("the preset's reference unit"),
            Source::Given => {}
        }
        if last < su {
            if !why.is_empty() {
                why.push_str("; ");
            }
            let _ = write!(
                why,
                "the last unit holds {last} of {su} servers: its leaves and uplinks are built whole, so its leaves run at {}",
                ratio_text(f64::from(last) / f64::from(shape.leaf_up.max(1)))
            );
        }
        push(
            out,
            "scalable_unit",
            format!(
                "{} of {su} servers",
                plural(u64::from(units), "unit", "units")
            ),
            p.source("fabric.su_size"),
            why,
        );
    }
}

/// The spines (and the cores) above the leaves.
fn upper_choices(p: &Prose, out: &mut Vec<Choice>) {
    let Prose { spec, c, .. } = *p;
    let (shape, mode, topology) = (c.shape, c.option.mode, spec.fabric.topology);
    match shape.upper {
        Upper::None => {}
        Upper::Two { spines, links } => push(
            out,
            "spines",
            format!(
                "{}, {} from every leaf",
                plural(c.counts.spines, "spine", "spines"),
                plural(u64::from(links), "link", "links")
            ),
            "auto".to_string(),
            format!(
                "{} of {} leaf uplinks each: the fewest that balance {} leaves on {}-port spines",
                plural(u64::from(spines), "spine", "spines"),
                shape.leaf_up,
                thousands(
                    c.counts.leaves as f64
                        / f64::from(spec.fabric.planes)
                        / if topology == Topology::RailOnly {
                            f64::from(spec.servers.compute_nics)
                        } else {
                            1.0
                        }
                ),
                mode.ports
            ),
        ),
        Upper::Three { .. } => three_tier_choices(c, out),
    }
}

/// The spines per pod and the core groups of a three-tier tree.
fn three_tier_choices(c: &Candidate, out: &mut Vec<Choice>) {
    let Upper::Three {
        pods,
        spines_per_pod,
        links,
        spine_up,
        group,
    } = c.shape.upper
    else {
        return;
    };
    let pod_kind = match pods {
        Pods::InOrder { .. } => "in leaf order".to_string(),
        Pods::WholeRails { rails } => format!(
            "of {} whole rail{}",
            rails,
            if rails == 1 { "" } else { "s" }
        ),
        Pods::WholeUnits { units } => format!(
            "of {} whole unit{}",
            units,
            if units == 1 { "" } else { "s" }
        ),
    };
    push(
        out,
        "spines",
        format!(
            "{}: {} per pod of {} leaf slots ({pod_kind}), {} from every leaf",
            plural(c.counts.spines, "spine", "spines"),
            spines_per_pod,
            c.pod_slots,
            plural(u64::from(links), "link", "links"),
        ),
        "auto".to_string(),
        format!(
            "each spine {} down and {spine_up} up",
            c.pod_slots * u64::from(links)
        ),
    );
    push(
        out,
        "cores",
        format!(
            "{}: {} groups of {group}",
            plural(c.counts.cores, "core", "cores"),
            spines_per_pod
        ),
        "auto".to_string(),
        format!(
            "spine j of every pod sends {} link{} to each core of group j; the fewest cores that balance",
            spine_up / group,
            if spine_up / group == 1 { "" } else { "s" }
        ),
    );
}

/// The tiers, and the cable media chosen per run.
fn tiers_choices(p: &Prose, out: &mut Vec<Choice>) {
    let c = p.c;
    let mode = c.option.mode;
    push(
        out,
        "tiers",
        c.counts.tiers.to_string(),
        "auto".to_string(),
        match c.counts.tiers {
            1 => "every leaf is a top-tier switch".to_string(),
            2 => format!(
                "every leaf reaches every spine on {}-port switches",
                mode.ports
            ),
            _ => format!(
                "more leaves than a {}-port spine has ports: pods under a core tier",
                mode.ports
            ),
        },
    );
    push(
                out,
        "cable_media",
        "per run".to_string(),
        "auto".to_string(),
        "the cheapest catalog cable or optics that reaches each run; a cage's ports share one twin-port cable, one splitter or one transceiver"
            .to_string(),
    );
}
