//! The server racks in the readable summary: a rack-scale NVLink domain, how many racks and how
//! full, what a rack draws and the cooling it needs against the site's limits, and the facility's
//! power at full load (`fabric::layout::Racks` holds the numbers).

use super::words::trim;
use crate::Summary;
use railyard_fabric::layout::{NvlinkDomain, Racks};
use railyard_fabric::text::{plural, thousands};
use std::fmt::Write;

/// The rack-scale NVLink domain and the reference architecture's scalable units, under the fabric
/// line: `NVLink domains: 16 GB200 NVL72 racks of 72 GPUs ...`.
pub(super) fn domain_text(o: &mut String, d: &NvlinkDomain) {
    let _ = writeln!(
        o,
        "  NVLink domains: {} of {} GPUs ({} compute trays and {} NVLink switch trays of {} chips each; every GPU has one NVLink to each chip), one NVLink domain per rack",
        plural(u64::from(d.domains), &format!("{} rack", d.system), &format!("{} racks", d.system)),
        d.gpus_per_domain,
        d.trays_per_domain,
        d.nvlink_switch_trays,
        d.nvlink_switch_chips / d.nvlink_switch_trays.max(1),
    );
    if let (Some(per), Some(n), Some(src)) = (d.racks_per_su, d.scalable_units, &d.su_source) {
        let _ = writeln!(
            o,
            "  scalable units: {} of {} ({} GPUs each), as the reference architecture counts them: {src}",
            plural(u64::from(n), "unit", "units"),
            plural(u64::from(per), "rack", "racks"),
            thousands(f64::from(per * d.gpus_per_domain))
        );
    }
}

/// `racks: 32 server racks of 4 servers ..., 40.8 kW per rack ...` and the cooling the servers need.
pub(super) fn racks_text(o: &mut String, r: &Racks) {
    let why = match r.limited_by.as_str() {
        "rack-scale system" => "one rack-scale system each".to_string(),
        "space" => "as many as fit: layout.rack_units".to_string(),
        "power" => format!(
            "as many as stay within {} kW: layout.max_rack_kw",
            trim(r.max_rack_kw.unwrap_or(0.0))
        ),
        _ => "layout.servers_per_rack".to_string(),
    };
    let unit = if r.nvlink_domain.is_some() {
        ("tray", "trays")
    } else {
        ("server", "servers")
    };
    let power = match (r.rack_kw, r.servers_kw, &r.power_source) {
        (Some(rack), Some(all), Some(src)) => format!(
            ", {} kW per rack, {} kW in all ({src})",
            trim(rack),
            thousands(all)
        ),
        _ => ", power unknown (the catalog has none for these servers)".to_string(),
    };
    let _ = writeln!(
        o,
        "racks: {} of {} ({why}){power}",
        plural(u64::from(r.server_racks), "server rack", "server racks"),
        plural(u64::from(r.servers_per_rack), unit.0, unit.1),
    );
    let limit = r.max_rack_kw.map_or(String::new(), |kw| {
        format!(" within the limit of {} kW per rack", trim(kw))
    });
    let cooling = match (r.needs_liquid, r.site_cooling.as_deref()) {
        (false, _) => format!("air cooled{limit}"),
        (true, Some(_)) => format!(
            "needs liquid cooling ({}), the site's liquid loop{limit}",
            cooling_words(&r.cooling)
        ),
        (true, None) => format!(
            "needs liquid cooling ({}){limit}; warning: the site's cooling is not given ([layout] cooling = \"liquid\" or \"air\")",
            cooling_words(&r.cooling)
        ),
    };
    let _ = writeln!(o, "  {cooling}");
}

fn cooling_words(c: &str) -> &'static str {
    match c {
        "hybrid" => "hybrid: direct liquid cooling of GPUs, CPUs and switches, air for the rest",
        "liquid" => "liquid cooled throughout",
        _ => "air",
    }
}

/// The facility's power at full load: the server racks and every network planned.
pub(super) fn facility_text(o: &mut String, s: &Summary, r: &Racks) {
    let Some(servers) = r.servers_kw else { return };
    let networks = s.power_w.total / 1000.0
        + s.storage.as_ref().map_or(0.0, |n| n.power_w.total / 1000.0)
        + s.management.as_ref().map_or(0.0, |m| m.power_w / 1000.0);
    let _ = writeln!(
        o,
        "facility power: {} kW at full load (server racks {}, networks {}), before cooling overhead (PUE)",
        thousands(servers + networks),
        thousands(servers),
        trim(networks)
    );
}
