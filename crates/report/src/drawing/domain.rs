//! Rack-scale NVLink domains in the drawing (issue 37): when a design's servers are the compute
//! trays of a rack-scale system (GB200/GB300 NVL72), the servers' row shows one block per rack,
//! the NVLink domain NCCL sees as one node, holding its compute trays and its NVLink switch trays,
//! with the trays' scale-out HCAs on the block's top edge, where their cables leave for the leaves.
//!
//! The counts come from the design's `NvlinkDomain` (the catalog's `[[rack_system]]`: GB200 NVL72
//! has 18 compute trays and 9 NVLink switch trays, "Each DGX GB200 rack is built with 18 compute
//! trays and 9 NVLink switch trays", DGX SuperPOD GB200 RA RA-11338-001, Network Fabrics). A rack's
//! trays are consecutive servers of the fabric: the planner stands a rack-scale system's trays in
//! whole racks (`RackFill`), as the simulator groups them (sim's `nvl_domain`).

use super::{server_slots, Unit, BOX_H};
use crate::svg::{esc, n};
use railyard_fabric::layout::NvlinkDomain;
use railyard_fabric::Fabric;
use std::fmt::Write;

/// Height a domain block adds below a server box: a strip of compute trays, the NVLink switch
/// trays joined to them and their label.
pub(super) const EXTRA_H: f64 = 50.0;
/// Width of one compute tray and of one NVLink switch tray in the strips, px, with the gap after it.
const TRAY_W: f64 = 5.0;
const TRAY_GAP: f64 = 2.0;
const SWITCH_W: f64 = 10.0;
const SWITCH_GAP: f64 = 4.0;

/// What a domain block holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DomainBox {
    /// Compute trays in this rack (a design's last rack may hold fewer than the system's).
    pub(super) trays: u32,
    pub(super) nvlink_switch_trays: u32,
}

/// The servers' row as one block per rack: each `d.trays_per_domain` consecutive servers.
pub(super) fn rack_units(
    f: &Fabric,
    d: &NvlinkDomain,
    rails: u32,
    server_units: &mut Vec<Unit>,
    server_unit: &mut [(usize, Option<usize>)],
) {
    let per = d.trays_per_domain.max(1) as usize;
    let labels = f.servers.len() <= per;
    for (rack, first) in (0..f.servers.len()).step_by(per).enumerate() {
        let members: Vec<u32> = (first..(first + per).min(f.servers.len()))
            .map(|i| i as u32)
            .collect();
        for &m in &members {
            server_unit[m as usize] = (server_units.len(), None);
        }
        let trays = members.len() as u32;
        server_units.push(Unit {
            title: format!("{} rack {}", d.system, rack + 1),
            subtitle: format!(
                "{trays} trays · {} x {} · {} HCA/tray",
                trays * f.meta.gpus_per_server,
                f.meta.gpu_model,
                f.meta.compute_nics_per_server
            ),
            members,
            rails: Vec::new(),
            slots: server_slots(rails, labels),
            elided: false,
            folded: 0,
            domain: Some(DomainBox {
                trays,
                nvlink_switch_trays: d.nvlink_switch_trays,
            }),
        });
    }
}

/// The narrowest a domain block may be: its strips of trays and switches with a margin.
pub(super) fn min_width(d: &DomainBox) -> f64 {
    let trays = f64::from(d.trays) * (TRAY_W + TRAY_GAP);
    let switches = f64::from(d.nvlink_switch_trays) * (SWITCH_W + SWITCH_GAP);
    trays.max(switches) + 16.0
}

/// The inside of a domain block below its title: the compute trays, the NVLink switch trays and
/// the NVLink between them (every GPU of the rack has a link to every switch chip).
pub(super) fn paint(s: &mut String, (x, y, w): (f64, f64, f64), d: &DomainBox) {
    let cx = x + w / 2.0;
    let trays_w = f64::from(d.trays) * (TRAY_W + TRAY_GAP) - TRAY_GAP;
    let switches_w = f64::from(d.nvlink_switch_trays) * (SWITCH_W + SWITCH_GAP) - SWITCH_GAP;
    let (ty, by, sy) = (y + BOX_H + 1.0, y + BOX_H + 10.0, y + BOX_H + 16.0);
    let _ = write!(
        s,
        r##"<g class="compute-trays"><title>{} compute trays</title>"##,
        d.trays
    );
    let mut tx = cx - trays_w / 2.0;
    for _ in 0..d.trays {
        let _ = write!(
            s,
            r##"<rect class="compute-tray" x="{}" y="{}" width="{TRAY_W}" height="7" fill="#5b6b7c"/>"##,
            n(tx),
            n(ty)
        );
        tx += TRAY_W + TRAY_GAP;
    }
    s.push_str("</g>");
    // The NVLink: one band joining every tray to every switch tray.
    let band = trays_w.max(switches_w);
    let _ = write!(
        s,
        r##"<rect class="nvlink" x="{}" y="{}" width="{}" height="4" fill="#76b900" fill-opacity="0.6"><title>NVLink: every GPU of the rack to every NVLink switch chip</title></rect>"##,
        n(cx - band / 2.0),
        n(by),
        n(band)
    );
    let _ = write!(
        s,
        r##"<g class="nvlink-switches"><title>{} NVLink switch trays</title>"##,
        d.nvlink_switch_trays
    );
    let mut sx = cx - switches_w / 2.0;
    for _ in 0..d.nvlink_switch_trays {
        let _ = write!(
            s,
            r##"<rect class="nvlink-switch" x="{}" y="{}" width="{SWITCH_W}" height="9" rx="1" fill="#3d6600"/>"##,
            n(sx),
            n(sy)
        );
        sx += SWITCH_W + SWITCH_GAP;
    }
    s.push_str("</g>");
    let _ = write!(
        s,
        r##"<text x="{}" y="{}" font-size="9" fill="#3d6600" text-anchor="middle">{}</text>"##,
        n(cx),
        n(y + BOX_H + 37.0),
        esc(&format!("{} NVLink switch trays", d.nvlink_switch_trays))
    );
}
