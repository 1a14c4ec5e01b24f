//! The readable summary `railyard plan` prints: the fabric, its switches, links, cables and
//! optics, ratios, bisection, power and cost, the design's choices and the alternatives.

use super::networks::network_text;
use super::words::{ratio, trim};
use crate::Summary;
use railyard_fabric::text::{plural, thousands};
use railyard_fabric::DesignReport;
use std::fmt::Write;

/// The readable summary `railyard plan` prints.
pub fn summary_text(s: &Summary) -> String {
    let mut o = String::new();
    head_text(&mut o, s);
    parts_text(&mut o, s);
    shared_cage_warning(&mut o, s);
    capacity_text(&mut o, s);
    cost_text(&mut o, s);
    if let Some(r) = &s.racks {
        super::racks::racks_text(&mut o, r);
    }
    networks_text(&mut o, s);
    if let Some(r) = &s.racks {
        super::racks::facility_text(&mut o, s, r);
    }
    if let Some(d) = &s.design {
        alternatives_text(&mut o, d);
    }
    o
}

/// The servers' storage NICs; with storage on the compute fabric (`--storage compute`), that
/// storage runs through the compute NICs and those NICs carry none of it.
fn storage_nics(s: &Summary) -> String {
    let nics = plural(s.storage_nics, "storage NIC", "storage NICs");
    if s.storage_on_compute {
        format!("storage through the compute NICs ({nics} unused)")
    } else {
        nics
    }
}

/// The design's name, its servers and fabric, and how it was chosen.
fn head_text(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "railyard plan: {}", s.name);
    let _ = writeln!(
        o,
        "  {}, {} ({}), {} ({}, NIC:GPU {}), {}, GPUDirect RDMA {}",
        plural(s.servers, "server", "servers"),
        plural(s.gpus, "GPU", "GPUs"),
        s.gpu_model,
        plural(s.nics, "compute NIC", "compute NICs"),
        s.nic_model,
        s.nic_gpu_ratio,
        storage_nics(s),
        if s.gpudirect { "on" } else { "off" }
    );
    let su = match (s.su_size, s.scalable_units) {
        // A rack-scale design's leaf groups are whole racks of trays; its scalable units are the
        // reference architecture's racks, said on the NVLink domain line.
        (Some(size), Some(n)) if s.racks.as_ref().is_some_and(|r| r.nvlink_domain.is_some()) => {
            format!(
                ", {} of {} (whole racks)",
                plural(u64::from(n), "leaf group", "leaf groups"),
                plural(u64::from(size), "tray", "trays")
            )
        }
        (Some(size), Some(n)) => format!(
            ", {} of {}",
            plural(u64::from(n), "scalable unit", "scalable units"),
            plural(u64::from(size), "server", "servers")
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "  fabric: {} {} ({} Gb/s links), {} tier{}, {} plane{}{su}",
        s.tech,
        s.topology,
        s.link_gbps,
        s.tiers,
        if s.tiers == 1 { "" } else { "s" },
        s.planes,
        if s.planes == 1 { "" } else { "s" },
    );
    if let Some(d) = s.racks.as_ref().and_then(|r| r.nvlink_domain.as_ref()) {
        super::racks::domain_text(o, d);
    }
    if let Some(d) = &s.design {
        design_text(o, d);
    }
}

/// Switches per tier, links per tier, cables and transceivers.
fn parts_text(o: &mut String, s: &Summary) {
    let _ = writeln!(o);
    let _ = writeln!(o, "switches ({} {}):", s.switch_model, s.port_mode);
    for (tier, n) in [
        ("leaf", s.switches.leaf),
        ("spine", s.switches.spine),
        ("core", s.switches.core),
    ] {
        let _ = writeln!(o, "  {tier:<8}{:>8}", thousands(n as f64));
    }
    let _ = writeln!(
        o,
        "  {:<8}{:>8}",
        "total",
        thousands(s.switches.total as f64)
    );
    let _ = writeln!(o, "links:");
    for (tier, n) in [
        ("server-leaf", s.links.server_leaf),
        ("leaf-spine", s.links.leaf_spine),
        ("spine-core", s.links.spine_core),
        ("inter-switch", s.links.inter_switch),
    ] {
        if n > 0 || tier != "inter-switch" {
            let _ = writeln!(o, "  {tier:<14}{:>8}", thousands(n as f64));
        }
    }
    let _ = writeln!(o, "cables:");
    for c in &s.cables {
        let _ = writeln!(
            o,
            "  {:<10} {:<18} {:>6} m {:>8}",
            c.kind,
            c.part,
            c.length_m,
            thousands(c.count as f64)
        );
    }
    if !s.transceivers.is_empty() {
        let _ = writeln!(o, "transceivers:");
        for (part, n) in &s.transceivers {
            let _ = writeln!(o, "  {part:<29} {:>10}", thousands(*n as f64));
        }
    }
}

/// Straight cables left in cages that carry more than one link, which cannot be ordered as listed.
fn shared_cage_warning(o: &mut String, s: &Summary) {
    if let Some(c) = &s.shared_cage_cables {
        let mut needs = Vec::new();
        for (n, what) in [
            (c.twin, "a twin-port cable: the cage's ports go to one cage"),
            (
                c.splitter,
                "a splitter cable: its ports go to single-port cages",
            ),
            (
                c.optics,
                "transceivers and fibre: its ports go to different multi-port cages",
            ),
        ] {
            if n > 0 {
                needs.push(format!("{} need {what}", thousands(n as f64)));
            }
        }
        let _ = writeln!(
            o,
            "warning: {} links have a straight cable into a cage that carries more than one link ({}); such a cage cannot take them and the catalog has no twin-port cable, splitter or transceiver of its size for this technology at the links' rate (add them with --catalog), so the cables above cannot be ordered as listed",
            thousands(c.links() as f64),
            needs.join("; ")
        );
    }
}

/// Oversubscription (and why the leaf's is below the bound asked), bisection and hops.
fn capacity_text(o: &mut String, s: &Summary) {
    let asked = s
        .oversubscription_requested
        .map(|r| {
            let cabled = s.oversubscription.leaf;
            match s.leaf_links {
                // Only a two-switch design's given link count goes past the ratio asked.
                Some((hosts, up)) if cabled > r + 1e-9 && s.topology == "two-switch" => format!(
                    " (cabled; above the {} asked: {hosts} host ports per switch on {up} links to the other, as fabric.isl_links gives; {} asked needs {})",
                    ratio(r),
                    ratio(r),
                    railyard_fabric::topo::uplinks_for(hosts, r)
                ),
                _ => format!(" (cabled; the leaf at most {} asked)", ratio(r)),
            }
        })
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "oversubscription: leaf {}, spine {}, core {}{asked}",
        ratio(s.oversubscription.leaf),
        ratio(s.oversubscription.spine),
        ratio(s.oversubscription.core)
    );
    if let Some(why) = oversubscription_note(s) {
        let _ = writeln!(o, "  ({why})");
    }
    // A rail-only fabric joins a server's NIC i only to the other servers' NIC i: its cut is between
    // halves of the servers, rail to rail; between rails the network has no path at all.
    let rail_only = if s.topology == "rail-only" {
        " (servers' halves, rail to rail: no network path joins two rails, NVLink inside a server carries that traffic)"
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "bisection bandwidth: {} Tb/s{rail_only}; worst case {}",
        trim(s.bisection_gbps / 1000.0),
        plural(
            u64::from(s.worst_case_switch_hops),
            "switch hop",
            "switch hops"
        )
    );
}

/// Power and cost.
fn cost_text(o: &mut String, s: &Summary) {
    let est = if s.cost_usd.includes_estimates {
        " (includes estimated prices; see bom.csv)"
    } else {
        ""
    };
    let p = &s.power_w;
    let _ = writeln!(
        o,
        "power: {} kW (switches {}, NICs {}, optics {}, active cables {})",
        trim(p.total / 1000.0),
        trim(p.switches / 1000.0),
        trim(p.nics / 1000.0),
        trim(p.transceivers / 1000.0),
        trim(p.cables / 1000.0)
    );
    let c = &s.cost_usd;
    let _ = writeln!(
        o,
        "cost: ${} total, ${} per GPU{est}",
        thousands(c.total),
        thousands(c.per_gpu)
    );
    let _ = writeln!(
        o,
        "  switches ${}, NICs ${}, cables ${}, transceivers ${}, fibre ${}",
        thousands(c.switches),
        thousands(c.nics),
        thousands(c.cables),
        thousands(c.transceivers),
        thousands(c.fibre)
    );
}

/// The storage and management networks, and all networks' cost.
fn networks_text(o: &mut String, s: &Summary) {
    let c = &s.cost_usd;
    if let Some(n) = &s.storage {
        network_text(o, "storage fabric", n);
    }
    if let Some(m) = &s.management {
        for n in [&m.in_band, &m.out_of_band].into_iter().flatten() {
            let name = if n.network == "in-band" {
                "in-band management network"
            } else {
                "out-of-band management network"
            };
            network_text(o, name, n);
        }
    }
    if s.storage.is_some() || s.management.is_some() {
        let storage = s.storage.as_ref().map_or(0.0, |n| n.cost_usd.total);
        let management = s.management.as_ref().map_or(0.0, |m| m.cost_usd);
        let _ = writeln!(
            o,
            "\nall networks: ${} (compute ${}, storage ${}, management ${})",
            thousands(c.total + storage + management),
            thousands(c.total),
            thousands(storage),
            thousands(management)
        );
    }
}

/// Why the cabled leaf ratio is below the bound asked for, when it is and the ratios shown differ:
/// the leaves are not full (units, leaves and their uplinks are built whole), the search gave them
/// more uplinks than the ratio needs (to balance them over the spines), or uplinks come whole
/// (32 hosts at 1.5:1 need 21.33 uplinks, so 22: 1.45:1).
fn oversubscription_note(s: &Summary) -> Option<String> {
    let cabled = s.oversubscription.leaf;
    let asked = s.oversubscription_requested?;
    if cabled <= 0.0 || cabled >= asked - 1e-9 || ratio(cabled) == ratio(asked) {
        return None;
    }
    let (hosts, up) = s.leaf_links?;
    let design = s.design.as_ref();
    let below = format!("below {} asked", ratio(asked));
    let cabled_text = format!("{hosts} hosts on {up} uplinks: {}", ratio(cabled));
    if let Some((down, _)) = design
        .and_then(|d| d.leaf_ports)
        .filter(|&(down, _)| hosts < down)
    {
        return Some(format!(
            "{below}: no leaf is full: the fullest has {hosts} of its {down} host ports cabled, and units, leaves and their uplinks are built whole, so it has {cabled_text}"
        ));
    }
    let need = railyard_fabric::topo::uplinks_for(hosts, asked);
    if up > need {
        let leaf = design.and_then(|d| d.choices.iter().find(|c| c.key == "leaf_ports"));
        if let Some(l) = leaf.filter(|l| l.why.contains("uplinks where")) {
            return Some(format!("{below}: {}", l.why));
        }
        return Some(format!(
            "{below}: {up} uplinks where {need} meet the ratio, so a leaf has {cabled_text}"
        ));
    }
    Some(format!(
        "{below}: uplinks come whole: {hosts} hosts at {} need {} uplinks, so {up} ({})",
        ratio(asked),
        trim(f64::from(hosts) / asked),
        ratio(cabled)
    ))
}

/// The designs built only to cost the alternatives asked for, after those that chose the design
/// (a plan without `--alternatives` builds only those): "; 2 more for the alternatives".
pub fn alternatives_built(d: &DesignReport) -> String {
    match d.costed_for_alternatives {
        0 => String::new(),
        n => format!("; {n} more for the alternatives"),
    }
}

/// The design's choices, each with its source and reason.
fn design_text(o: &mut String, d: &DesignReport) {
    let _ = writeln!(
        o,
        "  design: the {} of {} designs that meet the request and keep the given and preset choices ({} built and costed from their parts{}{})",
        if d.complete { "cheapest" } else { "best built" },
        thousands(d.candidates as f64),
        d.costed_exactly - d.costed_for_alternatives,
        alternatives_built(d),
        if d.complete {
            ""
        } else {
            "; the search's budget of links to build ran out: a design not built may cost a little less"
        }
    );
    for c in &d.choices {
        let key = c.key.replace('_', " ");
        let why = if c.why.is_empty() {
            String::new()
        } else {
            format!(": {}", c.why)
        };
        let _ = writeln!(o, "    {key:<14} {} [{}]{why}", c.value, c.source);
    }
}

/// The alternatives, cheapest first.
fn alternatives_text(o: &mut String, d: &DesignReport) {
    if d.alternatives.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nalternatives (compute fabric, cheapest first; ~ marks a cost estimated from counts):"
    );
    for (i, a) in d.alternatives.iter().enumerate() {
        let delta = a.cost_delta_usd.round();
        let sign = if delta < 0.0 { "-" } else { "+" };
        let _ = writeln!(
            o,
            "  {}. {}${} ({sign}${}): {} {}, {} leaf + {} spine + {} core, leaf {}, {} tier{}{}",
            i + 1,
            if a.cost_estimated { "~" } else { "" },
            thousands(a.cost_usd),
            thousands(delta.abs()),
            a.switch_model,
            a.port_mode,
            thousands(a.switches.leaf as f64),
            thousands(a.switches.spine as f64),
            thousands(a.switches.core as f64),
            ratio(a.oversubscription.leaf),
            a.tiers,
            if a.tiers == 1 { "" } else { "s" },
            a.su_size
                .map(|s| format!(", units of {s}"))
                .unwrap_or_default()
        );
        if !a.differs.is_empty() {
            let _ = writeln!(o, "     {}", a.differs.join("; "));
        }
    }
}
