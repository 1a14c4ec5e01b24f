//! Every file `railyard plan --out DIR` writes, and the storage and management networks' files.

use super::csv::{bom_csv, network_cabling_csv, write_cabling_csv, CABLING_HEADER};
use crate::{Plan, Planned, Summary};
use railyard_catalog::Catalog;
use railyard_fabric::fabric_file::fabric_json;
use railyard_fabric::layout::RackPlace;
use railyard_fabric::networks::NetworkKind;
use railyard_fabric::Fabric;

/// Every file `railyard plan --out DIR` writes, in writing order: `bom.csv`, `cabling.csv`,
/// `fabric.json`, `summary.json`. The two large ones render on two threads; `cabling.csv` (45 MB at
/// 131,072 GPUs) goes to `cabling` as it is formatted, so it is never whole in memory, and the other
/// three come back by name.
///
/// `places` is where every node stands ([`railyard_fabric::layout::rack_places_of`]), for the
/// rack columns of `cabling.csv`.
pub fn render_files<W: std::io::Write + Send>(
    f: &Fabric,
    catalog: &Catalog,
    plan: &Plan,
    places: Option<&[Option<RackPlace>]>,
    cabling: &mut W,
) -> std::io::Result<[(&'static str, String); 3]> {
    let (cabling, fabric) = std::thread::scope(|s| {
        let cabling = s.spawn(|| write_cabling_csv(f, catalog, places, cabling));
        let fabric = fabric_json(f);
        (cabling.join(), fabric)
    });
    cabling.unwrap_or_else(|e| std::panic::resume_unwind(e))?;
    Ok([
        ("bom.csv", bom_csv(plan)),
        ("fabric.json", fabric),
        ("summary.json", summary_json(&plan.summary)),
    ])
}

/// `summary.json`.
pub fn summary_json(s: &Summary) -> String {
    let mut text = serde_json::to_string_pretty(s).expect("a summary always serializes");
    text.push('\n');
    text
}

/// The storage and management networks' files, `{network}-bom.csv` and `{network}-cabling.csv` for
/// `storage`, `in-band` and `out-of-band`: always all six (a network not planned gets the header
/// lines only), so a directory never holds one run's network files beside another run's.
pub fn network_files(planned: &Planned, catalog: &Catalog) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for kind in [
        NetworkKind::Storage,
        NetworkKind::InBand,
        NetworkKind::OutOfBand,
    ] {
        let (bom, cabling) = match planned.networks.iter().find(|(n, _)| n.kind == kind) {
            // Their devices' heights are not known (storage systems, PDUs), and another network's
            // switch stands with the first switch it is cabled to: the rack columns stay empty.
            Some((n, p)) => (bom_csv(p), network_cabling_csv(&n.fabric, catalog, kind)),
            None => (
                bom_csv(&Plan {
                    summary: planned.plan.summary.clone(),
                    bom: Vec::new(),
                }),
                CABLING_HEADER.to_string(),
            ),
        };
        out.push((format!("{}-bom.csv", kind.as_str()), bom));
        out.push((format!("{}-cabling.csv", kind.as_str()), cabling));
    }
    out
}
