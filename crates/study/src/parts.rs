//! `railyard catalog`: the parts the catalog holds, listed by kind (switches, NICs, GPUs,
//! servers and rack-scale systems, cables, transceivers, fibre), each with its price and the
//! datasheet figures the models use; filtered to one technology or one part.

use railyard_catalog::{number, CableForm, Catalog, Price, ScaleUp, Tech};
use railyard_fabric::text::thousands;
use std::fmt::Write;

/// The kinds `catalog KIND` lists, in the order the full listing gives them.
pub const KINDS: [&str; 7] = [
    "switch",
    "nic",
    "gpu",
    "server",
    "cable",
    "transceiver",
    "fibre",
];

/// The listing of the kinds `kind` names (every kind without one; a kind not in [`KINDS`] lists
/// nothing), filtered by `f`.
pub fn listing(c: &Catalog, f: &PartFilter, kind: Option<&str>) -> String {
    let lists: [PartList; 7] = [
        switches_text,
        nics_text,
        gpus_text,
        servers_text,
        cables_text,
        transceivers_text,
        fibres_text,
    ];
    let mut o = String::new();
    for (k, list) in KINDS.iter().zip(lists) {
        if kind.is_none_or(|w| w == *k) {
            list(&mut o, c, f);
        }
    }
    o
}

/// What `catalog` lists: parts for a technology, or one switch, NIC or GPU.
pub struct PartFilter<'a> {
    pub tech: Option<Tech>,
    pub switch: Option<&'a str>,
    pub nic: Option<&'a str>,
    pub gpu: Option<&'a str>,
}

impl PartFilter<'_> {
    fn has_tech(&self, techs: &[Tech]) -> bool {
        self.tech.is_none_or(|t| techs.contains(&t))
    }
}

/// One kind of part listed by `catalog`.
type PartList = fn(&mut String, &Catalog, &PartFilter);

/// A part's price as the catalog lists it.
fn price_text(p: &Price) -> String {
    let per_m = if p.per_m_usd > 0.0 {
        format!(" + ${}/m", p.per_m_usd)
    } else {
        String::new()
    };
    format!(
        "${}{per_m}{}",
        thousands(p.usd),
        if p.estimate { " (estimate)" } else { "" }
    )
}

fn switches_text(o: &mut String, c: &Catalog, f: &PartFilter) {
    let _ = writeln!(o, "switches:");
    for s in c.switches.values() {
        if f.switch.is_some_and(|id| id != s.id) {
            continue;
        }
        let modes: Vec<String> = s
            .modes
            .iter()
            .filter(|m| f.has_tech(&m.techs))
            .map(|m| format!("{} x {}", m.ports, m.name))
            .collect();
        if modes.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "  {:<9} {} | {} | {}",
            s.id,
            modes.join(", "),
            price_text(&s.price),
            s.source
        );
    }
}

fn nics_text(o: &mut String, c: &Catalog, f: &PartFilter) {
    let _ = writeln!(o, "NICs:");
    for n in c.nics.values() {
        if f.nic.is_some_and(|id| id != n.id) || !f.has_tech(&n.techs) {
            continue;
        }
        let techs: Vec<&str> = n.techs.iter().map(|t| t.as_str()).collect();
        let _ = writeln!(
            o,
            "  {:<16} {} x {}G, PCIe Gen{} x{}, {} | {} | {}",
            n.id,
            n.ports,
            n.port_gbps,
            n.pcie_gen,
            n.pcie_lanes,
            techs.join("/"),
            price_text(&n.price),
            n.source
        );
    }
}

fn gpus_text(o: &mut String, c: &Catalog, f: &PartFilter) {
    let _ = writeln!(o, "GPUs:");
    for g in c.gpus.values() {
        if f.gpu.is_some_and(|id| id != g.id) {
            continue;
        }
        // AMD's scale-up links are Infinity Fabric (xGMI), one per peer, not NVLink.
        let links = match g.scale_up {
            ScaleUp::Nvswitch => "NVLink",
            ScaleUp::Mesh => "Infinity Fabric mesh",
        };
        let _ = writeln!(
            o,
            "  {:<5} {links} {} x {} GB/s, PCIe Gen{} x{}, {} TFLOPS BF16, memory {} | {}",
            g.id,
            g.nvlink_links,
            g.nvlink_gbs_per_link,
            g.pcie_gen,
            g.pcie_lanes,
            g.peak_tflops_bf16,
            g.memory_label(),
            g.source
        );
    }
}

/// Servers and rack systems; only when no technology, switch or NIC narrows the list.
fn servers_text(o: &mut String, c: &Catalog, f: &PartFilter) {
    if f.tech.is_some() || f.switch.is_some() || f.nic.is_some() {
        return;
    }
    let _ = writeln!(o, "servers:");
    for x in c.servers.values() {
        if f.gpu.is_some_and(|id| id != x.gpu) {
            continue;
        }
        let nics = if x.includes_compute_nics {
            format!(", {} compute NICs included", x.compute_nics)
        } else {
            String::new()
        };
        let height = x.rack_units.map_or(String::new(), |u| format!(", {u}U"));
        let rack = x
            .rack_system
            .as_ref()
            .map_or(String::new(), |r| format!(", a compute tray of {r}"));
        let _ = writeln!(
            o,
            "  {:<20} {} x {}{nics}, {} kW{height}, {} cooled{rack} | {} | {}",
            x.id,
            x.gpus,
            x.gpu,
            number(x.power_w / 1000.0),
            x.cooling().as_str(),
            price_text(&x.price),
            x.source
        );
    }
    let _ = writeln!(o, "rack systems:");
    for r in c.rack_systems.values() {
        let tray_gpus = c.servers.get(&r.tray).map_or(0, |t| t.gpus);
        if f.gpu
            .is_some_and(|id| c.servers.get(&r.tray).is_none_or(|t| t.gpu != id))
        {
            continue;
        }
        let _ = writeln!(
            o,
            "  {:<20} {} x {}, one NVLink domain of {} GPUs, {} NVLink switch trays of {} chips, {} kW, {} cooled{} | {} | {}",
            r.id,
            r.trays,
            r.tray,
            r.gpus(tray_gpus),
            r.nvlink_switch_trays,
            r.nvlink_switch_chips / r.nvlink_switch_trays.max(1),
            number(r.power_w / 1000.0),
            r.cooling.as_str(),
            r.racks_per_su
                .map_or(String::new(), |n| format!(", {n} racks per scalable unit")),
            // The rack's price is spread over its trays where no price of the rest is known.
            if r.price.usd == 0.0 {
                "priced in its trays".to_string()
            } else {
                price_text(&r.price)
            },
            r.source
        );
    }
}

fn cables_text(o: &mut String, c: &Catalog, f: &PartFilter) {
    let _ = writeln!(o, "cables:");
    for x in c.cables.values().filter(|x| f.has_tech(&x.techs)) {
        let _ = writeln!(
            o,
            "  {:<16} {}{} up to {} m | {} | {}",
            x.id,
            x.kind.as_str(),
            match x.form {
                CableForm::Straight => String::new(),
                form => format!(" {} of {} ports", form.as_str(), x.ports),
            },
            x.reach_m(),
            price_text(&x.price),
            x.source
        );
    }
}

fn transceivers_text(o: &mut String, c: &Catalog, f: &PartFilter) {
    let _ = writeln!(o, "transceivers:");
    for x in c.transceivers.values().filter(|x| f.has_tech(&x.techs)) {
        let _ = writeln!(
            o,
            "  {:<22} {} port(s), {:?} {} m, {} | {} | {}",
            x.id,
            x.ports,
            x.fibre,
            x.reach_m,
            x.connector,
            price_text(&x.price),
            x.source
        );
    }
}

fn fibres_text(o: &mut String, c: &Catalog, _: &PartFilter) {
    let _ = writeln!(o, "fibre:");
    for x in c.fibres.values() {
        let _ = writeln!(
            o,
            "  {:<10} {:?} {} | {} | {}",
            x.id,
            x.kind,
            x.connector,
            price_text(&x.price),
            x.source
        );
    }
}
