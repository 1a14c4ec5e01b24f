//! Renderings of a plan: CSV and JSON files, the readable summary, and side-by-side comparisons.
//!
//! Each function returns the whole text; the CLI writes it to a temp file and renames it into place.

use crate::{BomLine, Plan, Summary};
use railyard_catalog::Catalog;
use railyard_fabric::layout::RackPlace;
use railyard_fabric::networks::NetworkKind;
use railyard_fabric::search::plural;
use railyard_fabric::{push_u64, CageIndex, Fabric, Link, LinkKind, Medium, PortId};
use std::borrow::Cow;
use std::fmt::Write;

/// Quotes a CSV field when it needs it (RFC 4180).
fn csv_field(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

fn csv_row(out: &mut String, fields: &[&str]) {
    let row: Vec<Cow<str>> = fields.iter().map(|f| csv_field(f)).collect();
    out.push_str(&row.join(","));
    out.push('\n');
}

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

/// `bom.csv`: one line per part (and stocked length), with unit and total price and the price's source.
pub fn bom_csv(plan: &Plan) -> String {
    let mut out = String::new();
    csv_row(
        &mut out,
        &[
            "category",
            "part",
            "description",
            "length_m",
            "quantity",
            "unit_price_usd",
            "total_usd",
            "price_estimate",
            "price_source",
            "unit_power_w",
        ],
    );
    for BomLine {
        category,
        part,
        description,
        length_m,
        quantity,
        unit_price_usd,
        total_usd,
        price_estimate,
        price_source,
        unit_power_w,
    } in &plan.bom
    {
        csv_row(
            &mut out,
            &[
                category,
                part,
                description,
                &length_m.map(|l| l.to_string()).unwrap_or_default(),
                &quantity.to_string(),
                &format!("{unit_price_usd:.2}"),
                &format!("{total_usd:.2}"),
                &price_estimate.to_string(),
                price_source,
                &unit_power_w.to_string(),
            ],
        );
    }
    out
}

/// The header line of every cabling file. Columns are only ever added at the end: the first twelve
/// are a contract with the files written before the rack columns came.
pub const CABLING_HEADER: &str =
    "id,type,part,length_m,tier,a_device,a_port,b_device,b_port,a_transceiver,b_transceiver,run_m,a_row,a_rack,a_u,b_row,b_rack,b_u,assembly\n";

/// `cabling.csv`: one row per link (a cable, or one leg of a twin-port or splitter cable), ends
/// named as on the floor (`su1-srv07`, `hca3`; `su1-leaf3`, `p17`), each end's row, rack and lowest
/// rack unit from `places` (indexed by node id, as [`railyard_fabric::layout::rack_places_of`]
/// gives them; empty where not known or not given), and `assembly`: the id of the row of the
/// physical cable's first leg ([`railyard_fabric::bom::cable_firsts`]), the row's own id for a
/// single-link cable or a fibre.
pub fn cabling_csv(f: &Fabric, catalog: &Catalog, places: Option<&[Option<RackPlace>]>) -> String {
    let mut bytes = Vec::new();
    write_cabling_csv(f, catalog, places, &mut bytes).expect("writing to memory does not fail");
    String::from_utf8(bytes).expect("the CSV is UTF-8")
}

/// A storage or management network's cabling file: [`cabling_csv`] with ids that name the network
/// (`SC0000001` for storage: [`NetworkKind::cable_prefix`]), so one plan's files never label two
/// cables alike.
pub fn network_cabling_csv(f: &Fabric, catalog: &Catalog, kind: NetworkKind) -> String {
    let mut bytes = Vec::new();
    write_cabling_rows(f, catalog, None, kind.cable_prefix(), &mut bytes)
        .expect("writing to memory does not fail");
    String::from_utf8(bytes).expect("the CSV is UTF-8")
}

/// [`cabling_csv`], written to `w` a megabyte at a time.
pub fn write_cabling_csv<W: std::io::Write>(
    f: &Fabric,
    catalog: &Catalog,
    places: Option<&[Option<RackPlace>]>,
    w: &mut W,
) -> std::io::Result<()> {
    write_cabling_rows(f, catalog, places, "C", w)
}

/// The cabling rows of `f`, ids `prefix` and the cable's number.
fn write_cabling_rows<W: std::io::Write>(
    f: &Fabric,
    catalog: &Catalog,
    places: Option<&[Option<RackPlace>]>,
    prefix: &str,
    w: &mut W,
) -> std::io::Result<()> {
    /// Rows gather in memory up to this many bytes between writes.
    const CHUNK: usize = 1 << 20;
    // The transceiver in every cage that has one, by cage slot.
    let cages = CageIndex::of(f.nodes.len(), f.modules.iter().map(|m| (m.node, m.cage)));
    let mut module_in: Vec<u32> = vec![u32::MAX; cages.len()];
    for (i, m) in f.modules.iter().enumerate() {
        if let Some(slot) = cages.slot(m.node, m.cage) {
            module_in[slot] = i as u32;
        }
    }
    let module_at = |p: PortId| -> &str {
        match cages.port_slot(f, p) {
            Some(slot) => f
                .modules
                .get(module_in[slot] as usize)
                .map_or("", |m| &*m.part),
            None => "",
        }
    };
    let net: Vec<&Link> = f.network_links().map(|(_, l)| l).collect();
    let firsts = railyard_fabric::bom::cable_firsts(f, catalog);
    // One id width in every design (`fabric::cable_id`).
    let width = railyard_fabric::CABLE_ID_DIGITS;
    let push_id = |out: &mut String, i: u32| {
        out.push_str(prefix);
        let start = out.len();
        push_u64(out, u64::from(i + 1));
        let digits = out.len() - start;
        if digits < width {
            out.insert_str(start, &"0000000000"[..width - digits]);
        }
    };
    let mut out = String::with_capacity(CHUNK + 4096);
    out.push_str(CABLING_HEADER);
    // Neighbouring rows mostly share medium, tier and run length: format those once per change.
    let mut medium_cols = String::new();
    let mut medium_of: Option<(&Medium, LinkKind)> = None;
    let mut run_col = String::new();
    let mut run_of: Option<u64> = None;
    let mut label = String::new();
    for (i, l) in net.into_iter().enumerate() {
        push_id(&mut out, i as u32);
        if medium_of != Some((&l.medium, l.kind)) {
            medium_of = Some((&l.medium, l.kind));
            medium_cols.clear();
            let _ = write!(
                medium_cols,
                ",{},{},{},{},",
                l.medium.type_name(),
                csv_field(l.medium.part().unwrap_or("")),
                l.medium.length_m().unwrap_or(0.0),
                l.kind.as_str(),
            );
        }
        out.push_str(&medium_cols);
        for (n, p) in [l.a, l.b].into_iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str(&csv_field(f.port_device(p)));
            out.push(',');
            label.clear();
            f.write_port_label(p, &mut label);
            out.push_str(&csv_field(&label));
        }
        out.push(',');
        out.push_str(module_at(l.a));
        out.push(',');
        out.push_str(module_at(l.b));
        if run_of != Some(l.run_m.to_bits()) {
            run_of = Some(l.run_m.to_bits());
            run_col.clear();
            let _ = write!(run_col, ",{:.2}", l.run_m);
        }
        out.push_str(&run_col);
        for p in [l.a, l.b] {
            let place = places.and_then(|ps| ps.get(f.port(p).node.0 as usize).copied().flatten());
            out.push(',');
            if let Some(at) = place {
                push_u64(&mut out, u64::from(at.location.row));
                out.push(',');
                push_u64(&mut out, u64::from(at.location.rack));
                out.push(',');
                if let Some(u) = at.u {
                    push_u64(&mut out, u64::from(u));
                }
            } else {
                out.push_str(",,");
            }
        }
        out.push(',');
        push_id(&mut out, firsts[i]);
        out.push('\n');
        if out.len() >= CHUNK {
            w.write_all(out.as_bytes())?;
            out.clear();
        }
    }
    w.write_all(out.as_bytes())
}

/// `summary.json`.
pub fn summary_json(s: &Summary) -> String {
    let mut text = serde_json::to_string_pretty(s).expect("a summary always serializes");
    text.push('\n');
    text
}

use railyard_fabric::fabric_file::fabric_json;

/// `1234567.8` -> `1,234,568`: the one digit grouping, the planner's.
pub use railyard_fabric::search::thousands;

fn ratio(x: f64) -> String {
    if x == 0.0 {
        "-".to_string()
    } else {
        format!("{}:1", trim(x))
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One of a kind of attached device, as the networks name them in the plural (`server ports`,
/// `switches`, `PDUs`): `server port`, `switch`, `PDU`.
fn singular(many: &str) -> String {
    let one = if many.ends_with("ches") {
        many.strip_suffix("es")
    } else {
        many.strip_suffix('s')
    };
    one.unwrap_or(many).to_string()
}

/// The readable summary `railyard plan` prints.
pub fn summary_text(s: &Summary) -> String {
    let mut o = String::new();
    let est = if s.cost_usd.includes_estimates {
        " (includes estimated prices; see bom.csv)"
    } else {
        ""
    };
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
        plural(s.storage_nics, "storage NIC", "storage NICs"),
        if s.gpudirect { "on" } else { "off" }
    );
    let su = match (s.su_size, s.scalable_units) {
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
    if let Some(d) = &s.design {
        design_text(&mut o, d);
    }
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
    if let Some(n) = &s.storage {
        network_text(&mut o, "storage fabric", n);
    }
    if let Some(m) = &s.management {
        for n in [&m.in_band, &m.out_of_band].into_iter().flatten() {
            let name = if n.network == "in-band" {
                "in-band management network"
            } else {
                "out-of-band management network"
            };
            network_text(&mut o, name, n);
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
    if let Some(d) = &s.design {
        alternatives_text(&mut o, d);
    }
    o
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
pub fn alternatives_built(d: &railyard_fabric::DesignReport) -> String {
    match d.costed_for_alternatives {
        0 => String::new(),
        n => format!("; {n} more for the alternatives"),
    }
}

/// The design's choices, each with its source and reason.
fn design_text(o: &mut String, d: &railyard_fabric::DesignReport) {
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
fn alternatives_text(o: &mut String, d: &railyard_fabric::DesignReport) {
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

/// A storage or management network.
fn network_text(o: &mut String, name: &str, n: &crate::NetworkSummary) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{name}: {} {} ({} Gb/s), {} tier{}",
        n.switch_model,
        n.port_mode,
        n.link_gbps,
        n.tiers,
        if n.tiers == 1 { "" } else { "s" }
    );
    let ends: Vec<String> = n
        .endpoints
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| plural(*v, &singular(k), k))
        .collect();
    let _ = writeln!(o, "  ports attached: {}", ends.join(", "));
    let _ = writeln!(
        o,
        "  switches: {} leaf, {} spine, {} core ({} total)",
        thousands(n.switches.leaf as f64),
        thousands(n.switches.spine as f64),
        thousands(n.switches.core as f64),
        thousands(n.switches.total as f64)
    );
    let mut links = format!(
        "  cables: {} to devices",
        thousands(n.links.server_leaf as f64)
    );
    if n.links.leaf_spine > 0 {
        let _ = write!(
            links,
            ", {} leaf-spine",
            thousands(n.links.leaf_spine as f64)
        );
    }
    if n.links.spine_core > 0 {
        let _ = write!(
            links,
            ", {} spine-core",
            thousands(n.links.spine_core as f64)
        );
    }
    if n.links.inter_switch > 0 {
        let _ = write!(
            links,
            ", {} inter-switch",
            thousands(n.links.inter_switch as f64)
        );
    }
    let by_type: Vec<String> = n
        .cables_by_type
        .iter()
        .map(|(k, v)| plural(*v, &singular(k), k))
        .collect();
    let cables: u64 = n.cables_by_type.values().sum();
    let total =
        n.links.server_leaf + n.links.leaf_spine + n.links.spine_core + n.links.inter_switch;
    if cables < total {
        // Twin-port and splitter cables carry more than one link each.
        let _ = writeln!(
            o,
            "{links} links, on {} cables ({})",
            thousands(cables as f64),
            by_type.join(", ")
        );
    } else {
        let _ = writeln!(o, "{links} ({})", by_type.join(", "));
    }
    if !n.transceivers.is_empty() {
        let t: Vec<String> = n
            .transceivers
            .iter()
            .map(|(k, v)| plural(*v, &singular(k), k))
            .collect();
        let _ = writeln!(o, "  transceivers: {}", t.join(", "));
    }
    for note in &n.notes {
        let _ = writeln!(o, "  {note}");
    }
    let _ = writeln!(
        o,
        "  power: {} kW; cost: ${}{}",
        trim(n.power_w.total / 1000.0),
        thousands(n.cost_usd.total),
        if n.cost_usd.includes_estimates {
            " (includes estimated prices)"
        } else {
            ""
        }
    );
}

/// The storage and management networks' files, `{network}-bom.csv` and `{network}-cabling.csv` for
/// `storage`, `in-band` and `out-of-band`: always all six (a network not planned gets the header
/// lines only), so a directory never holds one run's network files beside another run's.
pub fn network_files(planned: &crate::Planned, catalog: &Catalog) -> Vec<(String, String)> {
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

/// Designs side by side: one row per metric, one column per design.
/// `extra` rows (label, one cell per design) follow the plan's rows: simulated performance, say.
pub fn compare_text(designs: &[(String, Summary)], extra: &[(String, Vec<String>)]) -> String {
    type Row = (&'static str, fn(&Summary) -> String);
    let rows: &[Row] = &[
        ("servers", |s| thousands(s.servers as f64)),
        ("GPUs", |s| {
            format!("{} x {}", thousands(s.gpus as f64), s.gpu_model)
        }),
        ("NIC:GPU", |s| s.nic_gpu_ratio.clone()),
        ("NICs", |s| {
            format!("{} x {}", thousands(s.nics as f64), s.nic_model)
        }),
        ("GPUDirect RDMA", |s| {
            if s.gpudirect { "on" } else { "off" }.to_string()
        }),
        ("technology", |s| s.tech.clone()),
        ("topology", |s| s.topology.clone()),
        ("switch", |s| format!("{} {}", s.switch_model, s.port_mode)),
        ("tiers", |s| s.tiers.to_string()),
        ("leaf switches", |s| thousands(s.switches.leaf as f64)),
        ("spine switches", |s| thousands(s.switches.spine as f64)),
        ("core switches", |s| thousands(s.switches.core as f64)),
        ("cables", |s| thousands(s.cable_count() as f64)),
        ("transceivers", |s| {
            thousands(s.transceivers.values().sum::<u64>() as f64)
        }),
        ("oversubscription (leaf)", |s| {
            ratio(s.oversubscription.leaf)
        }),
        ("bisection (Tb/s)", |s| trim(s.bisection_gbps / 1000.0)),
        ("worst-case switch hops", |s| {
            s.worst_case_switch_hops.to_string()
        }),
        ("power (kW)", |s| trim(s.power_w.total / 1000.0)),
        ("network cost ($)", |s| thousands(s.cost_usd.total)),
        ("cost per GPU ($)", |s| thousands(s.cost_usd.per_gpu)),
    ];
    let labels: Vec<&str> = rows
        .iter()
        .map(|r| r.0)
        .chain(extra.iter().map(|(l, _)| l.as_str()))
        .collect();
    let label_w = labels.iter().map(|l| l.len()).max().unwrap_or(0);
    let cells: Vec<Vec<String>> = designs
        .iter()
        .enumerate()
        .map(|(d, (_, s))| {
            rows.iter()
                .map(|r| (r.1)(s))
                .chain(
                    extra
                        .iter()
                        .map(|(_, v)| v.get(d).cloned().unwrap_or_default()),
                )
                .collect()
        })
        .collect();
    let widths: Vec<usize> = designs
        .iter()
        .zip(&cells)
        .map(|((name, _), col)| {
            col.iter()
                .map(String::len)
                .chain([name.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    let _ = write!(o, "{:<label_w$}", "");
    for ((name, _), w) in designs.iter().zip(&widths) {
        let _ = write!(o, "  {name:>w$}");
    }
    o.push('\n');
    for (i, label) in labels.iter().enumerate() {
        let _ = write!(o, "{label:<label_w$}");
        for (col, w) in cells.iter().zip(&widths) {
            let _ = write!(o, "  {:>w$}", col[i]);
        }
        o.push('\n');
    }
    if designs.iter().any(|(_, s)| s.cost_usd.includes_estimates) {
        o.push_str("costs include estimated prices (see bom.csv of each design for sources)\n");
    }
    o
}
