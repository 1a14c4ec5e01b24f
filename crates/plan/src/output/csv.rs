//! The CSV files: bom.csv and the cabling files (RFC 4180 quoting, rows written a megabyte at a
//! time).

use crate::{BomLine, Plan};
use railyard_catalog::Catalog;
use railyard_fabric::layout::RackPlace;
use railyard_fabric::networks::NetworkKind;
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
    let modules = Transceivers::of(f);
    let net: Vec<&Link> = f.network_links().map(|(_, l)| l).collect();
    let firsts = railyard_fabric::bom::cable_firsts(f, catalog);
    let mut out = String::with_capacity(CHUNK + 4096);
    out.push_str(CABLING_HEADER);
    // Neighbouring rows mostly share medium, tier and run length: format those once per change.
    let mut medium_cols = String::new();
    let mut medium_of: Option<(&Medium, LinkKind)> = None;
    let mut run_col = String::new();
    let mut run_of: Option<u64> = None;
    let mut label = String::new();
    for (i, l) in net.into_iter().enumerate() {
        push_id(&mut out, prefix, i as u32);
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
        push_ends(&mut out, f, l, &mut label);
        out.push(',');
        out.push_str(modules.at(l.a));
        out.push(',');
        out.push_str(modules.at(l.b));
        if run_of != Some(l.run_m.to_bits()) {
            run_of = Some(l.run_m.to_bits());
            run_col.clear();
            let _ = write!(run_col, ",{:.2}", l.run_m);
        }
        out.push_str(&run_col);
        push_places(&mut out, f, l, places);
        out.push(',');
        push_id(&mut out, prefix, firsts[i]);
        out.push('\n');
        if out.len() >= CHUNK {
            w.write_all(out.as_bytes())?;
            out.clear();
        }
    }
    w.write_all(out.as_bytes())
}

/// A cable id: `prefix` and the 1-based number `i + 1`, one width in every design
/// (`fabric::cable_id`).
fn push_id(out: &mut String, prefix: &str, i: u32) {
    let width = railyard_fabric::CABLE_ID_DIGITS;
    out.push_str(prefix);
    let start = out.len();
    push_u64(out, u64::from(i + 1));
    let digits = out.len() - start;
    if digits < width {
        out.insert_str(start, &"0000000000"[..width - digits]);
    }
}

/// Both ends of `l` as devices and ports are named on the floor (`a_device,a_port,b_device,b_port`),
/// `label` a buffer.
fn push_ends(out: &mut String, f: &Fabric, l: &Link, label: &mut String) {
    for (n, p) in [l.a, l.b].into_iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&csv_field(f.port_device(p)));
        out.push(',');
        label.clear();
        f.write_port_label(p, label);
        out.push_str(&csv_field(label));
    }
}

/// Each end's row, rack and lowest rack unit (`,a_row,a_rack,a_u,b_row,b_rack,b_u`), empty where
/// not known or not given.
fn push_places(out: &mut String, f: &Fabric, l: &Link, places: Option<&[Option<RackPlace>]>) {
    for p in [l.a, l.b] {
        let place = places.and_then(|ps| ps.get(f.port(p).node.0 as usize).copied().flatten());
        out.push(',');
        if let Some(at) = place {
            push_u64(out, u64::from(at.location.row));
            out.push(',');
            push_u64(out, u64::from(at.location.rack));
            out.push(',');
            if let Some(u) = at.u {
                push_u64(out, u64::from(u));
            }
        } else {
            out.push_str(",,");
        }
    }
}

/// The transceiver in every cage that has one, by cage slot.
struct Transceivers<'f> {
    f: &'f Fabric,
    cages: CageIndex,
    /// Per cage slot, the index of its module in the fabric's (`u32::MAX`: none).
    module_in: Vec<u32>,
}

impl<'f> Transceivers<'f> {
    fn of(f: &'f Fabric) -> Transceivers<'f> {
        let cages = CageIndex::of(f.nodes.len(), f.modules.iter().map(|m| (m.node, m.cage)));
        let mut module_in: Vec<u32> = vec![u32::MAX; cages.len()];
        for (i, m) in f.modules.iter().enumerate() {
            if let Some(slot) = cages.slot(m.node, m.cage) {
                module_in[slot] = i as u32;
            }
        }
        Transceivers {
            f,
            cages,
            module_in,
        }
    }

    /// The part of the transceiver in port `p`'s cage; empty without one.
    fn at(&self, p: PortId) -> &'f str {
        let f = self.f;
        match self.cages.port_slot(f, p) {
            Some(slot) => f
                .modules
                .get(self.module_in[slot] as usize)
                .map_or("", |m| &*m.part),
            None => "",
        }
    }
}
