//! The storage and management networks, planned beside the compute fabric as the DGX SuperPOD H100
//! reference architecture plans them (NVIDIA RA-11333-001 V11, "Network Fabrics" and Appendix A):
//!
//! - **Storage fabric** (`[storage]`): its own InfiniBand (or the compute technology's) fabric on
//!   the servers' storage ports. Server leaves are "slightly oversubscribed with a ratio near 4:3";
//!   the storage systems sit on leaves of their own at "a 1:1 port to uplink ratio"; one spine tier
//!   (three when the leaves outnumber a spine's ports). For 4 units (127 DGX H100) the reference
//!   lists 16 QM9700, 494 NDR cables between servers, leaves and spines, and 48 storage cables:
//!   8 server leaves of 32 + 24 ports, 2 storage leaves of 24 + 24, 6 spines.
//! - **In-band management** (`[management]`): Ethernet (SN4600C, 100GbE) to every server's two
//!   bonded in-band ports, the management (head) nodes, the user (NFS) storage and the out-of-band
//!   switches' uplinks; leaves in pairs (each server's two ports on the two leaves of a pair, two
//!   inter-switch cables per pair), four uplinks per leaf to a pair of spines, four uplinks from the
//!   spines to the data-centre network. Reference, 4 units: 8 SN4600C; 254 server, 8 management-node,
//!   8 NFS, 16 out-of-band uplink, 6 inter-switch and 24 leaf-to-core cables, 4 data-centre uplinks.
//! - **Out-of-band management**: 1 GbE (SN2201, 48 RJ45 ports) to every server's BMC, every switch of
//!   every network, the management nodes, the fabric managers (UFM) and the rack PDUs; two 100 GbE
//!   uplinks per switch into the in-band network. Reference, 4 units: 8 SN2201, 127 server, 64
//!   InfiniBand switch, 8 in-band switch, 8 management/UFM and 108 PDU cables, 16 uplinks.
//!
//! Each network is a [`Fabric`] of its own on the same hall: servers stand where the compute
//! fabric's stand, devices outside the servers in the rack of the switch they are cabled to, and
//! cables, optics, cost, power and cabling rows come from the same layout and parts models as the
//! compute fabric's. Numbers the reference gives without a rule are spec fields with the reference's
//! value as default (`[management]` uplinks, ports, head nodes; out-of-band ports used per switch:
//! 40 of 48, as its 317 device cables on 8 switches).

use crate::error::{err, BuildError};
use crate::graph::{
    Fabric, FabricMeta, LinkKind, NodeId, NodeKind, NodeSpec, PortId, Server, Tier,
};
use crate::hardware::{base, server_height_u, Resolved};
use crate::layout::{cable, rack_counts, CableCtx};
use crate::search::tree_uppers;
use crate::shape::{Shape, Upper};
use crate::text::{plural, ratio_text, thousands};
use crate::topo::{uplinks_for, Wiring};
use railyard_catalog::{Catalog, PortMode, SwitchModel, Tech};
use railyard_spec::ClusterSpec;
use std::collections::BTreeMap;

/// Which network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NetworkKind {
    Storage,
    InBand,
    OutOfBand,
}

impl NetworkKind {
    /// `storage`, `in-band`, `out-of-band`.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkKind::Storage => "storage",
            NetworkKind::InBand => "in-band",
            NetworkKind::OutOfBand => "out-of-band",
        }
    }

    /// What its cabling file's ids start with (`SC0000001`, `IC…`, `OC…`): a letter for the
    /// network before the compute fabric's `C`, so no two cables of one plan share a label.
    pub fn cable_prefix(self) -> &'static str {
        match self {
            NetworkKind::Storage => "SC",
            NetworkKind::InBand => "IC",
            NetworkKind::OutOfBand => "OC",
        }
    }
}

/// A planned storage or management network.
#[derive(Debug, Clone)]
pub struct Network {
    pub kind: NetworkKind,
    pub fabric: Fabric,
    /// Device ports attached, by kind of device.
    pub endpoints: BTreeMap<String, u64>,
    /// Links that leave the plan (the in-band uplinks to the data-centre network).
    pub uplinks_outside: u64,
    /// How the network was shaped and why.
    pub notes: Vec<String>,
}

/// In-band leaves send four uplinks each to the spines (RA-11333-001: 24 leaf-to-core cables on six
/// leaves).
const IN_BAND_LEAF_UPLINKS: u32 = 4;
/// In-band leaves are paired for the servers' bonded ports, two inter-switch cables per pair (the
/// reference: 6 for three pairs).
const IN_BAND_PAIR_LINKS: u32 = 2;
/// Out-of-band uplinks per switch into the in-band network (the reference: "two uplinks per OOB").
const OOB_UPLINKS: u32 = 2;
/// Rack PDUs on the out-of-band network: per server rack and per other rack (the reference: 96 for
/// its 32 DGX racks and 12 for its 6 other racks).
const PDUS_PER_SERVER_RACK: u64 = 3;
const PDUS_PER_OTHER_RACK: u64 = 2;

/// A catalog switch and its native port mode, for a network whose spec names it.
fn switch_of<'c>(
    catalog: &'c Catalog,
    id: &str,
    field: &str,
) -> Result<(&'c SwitchModel, &'c PortMode, Tech), BuildError> {
    let sw = catalog.switches.get(id).ok_or_else(|| {
        err(
            field,
            format!(
                "unknown switch `{id}`; valid: {}",
                catalog
                    .switches
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let mode = &sw.modes[0];
    Ok((sw, mode, mode.techs[0]))
}

/// Plans the storage and management networks the spec asks for beside the compute fabric `compute`.
pub fn plan(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
) -> Result<Vec<Network>, BuildError> {
    let mut out = Vec::new();
    if spec.storage.enabled {
        out.push(storage(spec, catalog, compute)?);
    }
    let m = &spec.management;
    if !(m.in_band || m.out_of_band) {
        return Ok(out);
    }
    let compute_switches = compute.nodes.iter().filter(|n| n.is_switch()).count() as u64;
    let storage_switches = out.first().map_or(0, |n| {
        n.fabric.nodes.iter().filter(|x| x.is_switch()).count() as u64
    });
    let storage_u = out.first().map_or(1, |n| {
        catalog
            .switches
            .get(&n.fabric.meta.switch_model)
            .map_or(1, |s| s.rack_units)
    });
    let (server_racks, switch_racks) = rack_counts(
        compute,
        &spec.layout,
        crate::layout::RackFill::of(compute, spec, catalog),
    );
    // In-band and out-of-band sizes depend on each other (out-of-band switches uplink into the
    // in-band network, in-band switches have out-of-band ports): settle the counts first.
    let in_band = m
        .in_band
        .then(|| switch_of(catalog, &m.in_band_switch, "management.in_band_switch"))
        .transpose()?;
    let oob = m
        .out_of_band
        .then(|| switch_of(catalog, &m.oob_switch, "management.oob_switch"))
        .transpose()?;
    let servers = u64::from(spec.servers.count);
    // More ports per switch than the switch has is refused, not cut down to what it has.
    if let Some((sw, mode, _)) = oob {
        if m.oob_ports_per_switch > mode.ports {
            return Err(err(
                "management.oob_ports_per_switch",
                format!(
                    "{} ports used per switch, but the out-of-band {} has {}; valid: 1 to {}",
                    m.oob_ports_per_switch, sw.id, mode.ports, mode.ports
                ),
            ));
        }
    }
    let per_oob = oob.map_or(1, |(_, mode, _)| {
        m.oob_ports_per_switch.min(mode.ports).max(1)
    });
    let mut n_oob = 0u64;
    let mut pdus = 0u64;
    for _ in 0..16 {
        let in_band_shape = in_band
            .map(|(_, mode, _)| in_band_layout(mode.ports, in_band_hosts(spec, n_oob)))
            .transpose()?;
        let n_in_band = in_band_shape.map_or(0, |l| l.switches());
        let other_switches = storage_switches + n_in_band + n_oob;
        // Racks for them: `switches_per_rack` to a rack, and no more rack units than a rack has.
        let other_units = storage_switches * u64::from(storage_u)
            + n_in_band * in_band.map_or(0, |(sw, _, _)| u64::from(sw.rack_units))
            + n_oob * oob.map_or(0, |(sw, _, _)| u64::from(sw.rack_units));
        let other_racks = switch_racks as u64
            + other_switches
                .div_ceil(u64::from(spec.layout.switches_per_rack.max(1)))
                .max(other_units.div_ceil(u64::from(spec.layout.rack_units.max(1))))
            + u64::from(m.management_servers + m.fabric_managers > 0 || spec.storage.enabled);
        pdus = m.pdus.map_or(
            PDUS_PER_SERVER_RACK * u64::from(server_racks) + PDUS_PER_OTHER_RACK * other_racks,
            u64::from,
        );
        let devices = servers
            + compute_switches
            + storage_switches
            + n_in_band
            + u64::from(m.management_servers + m.fabric_managers)
            + pdus;
        let next = if oob.is_some() {
            devices.div_ceil(u64::from(per_oob))
        } else {
            0
        };
        if next == n_oob {
            break;
        }
        n_oob = next;
    }
    if let Some((sw, mode, tech)) = in_band {
        // The out-of-band switches' RJ45 ports, after which their uplink ports are numbered.
        let oob_data_ports = oob.map_or(0, |(_, mode, _)| mode.ports);
        out.push(in_band_network(
            spec,
            catalog,
            compute,
            sw,
            mode,
            tech,
            n_oob,
            oob_data_ports,
        )?);
    }
    if let Some((sw, mode, tech)) = oob {
        let switches: Vec<String> = compute
            .nodes
            .iter()
            .chain(out.iter().flat_map(|n| n.fabric.nodes.iter()))
            .filter(|n| n.is_switch())
            .map(|n| n.name.clone())
            .collect();
        out.push(oob_network(
            spec, catalog, compute, sw, mode, tech, per_oob, &switches, pdus,
        )?);
    }
    Ok(out)
}

fn meta(
    spec: &ClusterSpec,
    kind: NetworkKind,
    sw: &SwitchModel,
    mode: &PortMode,
    tech: Tech,
) -> FabricMeta {
    FabricMeta {
        name: format!("{}-{}", spec.name, kind.as_str()),
        tech,
        topology: kind.as_str().to_string(),
        switch_model: sw.id.clone(),
        port_mode: mode.name.clone(),
        nic_model: String::new(),
        gpu_model: String::new(),
        tiers: 1,
        planes: 1,
        su_size: None,
        scalable_units: None,
        gpudirect: false,
        gpus_per_server: 0,
        compute_nics_per_server: 0,
        shape: None,
        oversubscription_requested: None,
        guids: Default::default(),
    }
}

/// Adds an endpoint node of `ports` ports at `gbps`.
fn endpoint(
    f: &mut Fabric,
    name: String,
    server: Option<u32>,
    ports: u32,
    gbps: u32,
    lanes: u32,
) -> NodeId {
    f.add_node(
        NodeSpec {
            kind: NodeKind::Endpoint,
            name,
            model: "".into(),
            server,
            plane: 0,
        },
        ports,
        f64::from(gbps),
        lanes,
        1,
    )
}

/// Mirrors the compute fabric's servers (same names and units, so they stand in the same racks), each
/// with `ports` endpoints named `{local}{n}` (`stor1`) or `local` alone for one port (`bmc`).
fn servers_with_ports(
    f: &mut Fabric,
    compute: &Fabric,
    local: &str,
    ports: u32,
    gbps: u32,
    lanes: u32,
) -> Vec<PortId> {
    let mut out = Vec::with_capacity(compute.servers.len() * ports as usize);
    for (i, s) in compute.servers.iter().enumerate() {
        let first = f.nodes.len() as u32;
        for p in 0..ports {
            let name = if ports == 1 {
                format!("{}/{local}", s.name)
            } else {
                format!("{}/{local}{}", s.name, p + 1)
            };
            let id = endpoint(f, name, Some(i as u32), 1, gbps, lanes);
            out.push(f.nth_port(id, 0));
        }
        f.servers.push(Server {
            name: s.name.clone(),
            su: s.su,
            first_node: first,
            num_nodes: ports,
        });
    }
    out
}

/// Ports of a device outside the servers that another network's cabling file also names, one
/// endpoint per port called `device/port` ([`Fabric::port_label`] gives `port`): a switch's
/// management port (`su1-leaf1/mgmt`) beside its data ports, an out-of-band switch's uplinks on
/// its QSFP28 ports (`oob-switch01/p49`) beside its RJ45 ports, a management node's BMC.
fn named_ports(
    f: &mut Fabric,
    device: &str,
    ports: &[String],
    gbps: u32,
    lanes: u32,
) -> Vec<PortId> {
    ports
        .iter()
        .map(|p| {
            let id = endpoint(f, format!("{device}/{p}"), None, 1, gbps, lanes);
            f.nth_port(id, 0)
        })
        .collect()
}

/// A device outside the servers with `ports` ports.
fn device_ports(f: &mut Fabric, name: String, ports: u32, gbps: u32, lanes: u32) -> Vec<PortId> {
    let id = endpoint(f, name, None, ports, gbps, lanes);
    (0..ports).map(|p| f.nth_port(id, p)).collect()
}

/// The network's `Resolved`: the compute spec's servers on this network's switch and technology.
fn resolved<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
    sw: &'a SwitchModel,
    mode: &'a PortMode,
    tech: Tech,
    shape: Shape,
) -> Result<Resolved<'a>, BuildError> {
    let mut b = base(spec, catalog)?;
    b.tech = catalog.technology(tech).ok_or_else(|| {
        err(
            "storage.tech",
            format!("the catalog has no hardware for {tech}"),
        )
    })?;
    b.gbps = mode.gbps;
    Ok(Resolved::new(&b, sw, mode, shape))
}

fn cable_ctx<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
    sw: &SwitchModel,
    mode: &PortMode,
    tech: Tech,
) -> CableCtx<'a> {
    CableCtx {
        layout: &spec.layout,
        fill: crate::layout::RackFill::new(
            &spec.layout,
            server_height_u(spec, catalog).map(|(_, u)| u),
            sw.rack_units,
        ),
        catalog,
        tech,
        gbps: mode.gbps,
        switch_cage: sw.ports_per_cage(mode),
        host_cage: 1,
    }
}

/// The storage leaves as built: `leaves` of `up` storage ports and `up` uplinks each (storage at
/// 1:1), holding `arrays` storage ports; a leaf short of them still has all its uplinks (leaves are
/// built whole, as the compute fabric's last unit), so it runs below 1:1, and the note says so.
fn storage_leaves_note(arrays: u64, leaves: u64, up: u32) -> String {
    let up64 = u64::from(up);
    let room = leaves * up64;
    let head = format!(
        "{} of {} + {}",
        plural(leaves, "storage leaf", "storage leaves"),
        plural(up64, "storage port", "storage ports"),
        plural(up64, "uplink", "uplinks"),
    );
    if arrays >= room {
        return format!("{head} (1:1)");
    }
    let last = arrays - (leaves - 1) * up64;
    format!(
        "{head}, {} attached: {} {last} of {up}, on all {up} uplinks ({}; leaves are built whole)",
        plural(arrays, "storage port", "storage ports"),
        if leaves == 1 {
            "the leaf holds"
        } else {
            "the last holds"
        },
        ratio_text(last as f64 / up64 as f64)
    )
}

/// The storage fabric's shape: server leaves of `down` ports, storage leaves of `up` ports, `up`
/// uplinks on every leaf, and the tiers above.
#[derive(Debug, Clone, Copy)]
struct StorageLayout {
    down: u32,
    up: u32,
    server_leaves: u64,
    array_leaves: u64,
    upper: Upper,
    spines: u64,
    cores: u64,
    switch_links: u64,
}

fn storage_layouts(
    k: u32,
    hosts: u64,
    arrays: u64,
    ratio: f64,
    spines: Option<u32>,
    visit: &mut dyn FnMut(StorageLayout),
) {
    for d in 1..k {
        let server_leaves = hosts.div_ceil(u64::from(d));
        // The fewest host ports that give this many leaves.
        if hosts.div_ceil(server_leaves) != u64::from(d) {
            continue;
        }
        let u0 = uplinks_for(d, ratio);
        for u in u0..=k - d {
            // Storage systems at 1:1: as many storage ports as uplinks on their leaves.
            if 2 * u > k {
                break;
            }
            let array_leaves = arrays.div_ceil(u64::from(u));
            let leaves = server_leaves + array_leaves;
            if leaves > u64::from(k) && u > u0 + 4 {
                break;
            }
            tree_uppers(k, u, leaves, &mut |upper| {
                let (n_spines, cores, sc) = match upper {
                    Upper::Two { spines, .. } => (u64::from(spines), 0, 0),
                    Upper::Three {
                        pods,
                        spines_per_pod,
                        spine_up,
                        group,
                        ..
                    } => {
                        let (n_pods, _) = pods.count(leaves, 1);
                        let s = n_pods * u64::from(spines_per_pod);
                        (
                            s,
                            u64::from(spines_per_pod) * u64::from(group),
                            s * u64::from(spine_up),
                        )
                    }
                    Upper::None => return true,
                };
                if spines.is_none_or(|want| u64::from(want) == n_spines) {
                    visit(StorageLayout {
                        down: d,
                        up: u,
                        server_leaves,
                        array_leaves,
                        upper,
                        spines: n_spines,
                        cores,
                        switch_links: leaves * u64::from(u) + sc,
                    });
                }
                true
            });
        }
    }
}

fn storage(spec: &ClusterSpec, catalog: &Catalog, compute: &Fabric) -> Result<Network, BuildError> {
    let st = &spec.storage;
    let servers = u64::from(spec.servers.count);
    let hosts = servers * u64::from(st.ports_per_server);
    // The reference: 48 storage ports for 4 units of 32 servers, 3 per 8 servers.
    let arrays = st
        .array_ports
        .map_or((servers * 3).div_ceil(8), u64::from)
        .max(1);
    let tech_model = catalog.technology(st.tech).ok_or_else(|| {
        err(
            "storage.tech",
            format!("the catalog has no hardware for {}", st.tech),
        )
    })?;
    let gbps = tech_model.port_gbps;
    let options: Vec<(&SwitchModel, &PortMode)> = match &st.switch {
        Some(id) => {
            let sw = catalog
                .switches
                .get(id)
                .ok_or_else(|| err("storage.switch", format!("unknown switch `{id}`")))?;
            let mode = sw.mode_for(st.tech, Some(gbps)).ok_or_else(|| {
                err(
                    "storage.switch",
                    format!("{id} cannot carry {} at {gbps} Gb/s", st.tech),
                )
            })?;
            vec![(sw, mode)]
        }
        None => catalog
            .switches
            .values()
            .filter_map(|s| s.mode_for(st.tech, Some(gbps)).map(|m| (s, m)))
            .collect(),
    };
    // The cheapest layout by counts: switches at catalog prices, cables and optics at typical runs.
    let cheapest = |spines: Option<u32>| {
        let mut best: Option<(f64, u64, usize, &SwitchModel, &PortMode, StorageLayout)> = None;
        let mut order = 0usize;
        for &(sw, mode) in &options {
            let (c_sl, c_ss) =
                cable_ctx(spec, catalog, sw, mode, st.tech).typical_link_costs(spec.servers.count);
            storage_layouts(
                mode.ports,
                hosts,
                arrays,
                st.oversubscription,
                spines,
                &mut |l| {
                    let switches = l.server_leaves + l.array_leaves + l.spines + l.cores;
                    let cost = switches as f64 * sw.price.usd
                        + (hosts + arrays) as f64 * c_sl
                        + l.switch_links as f64 * c_ss;
                    order += 1;
                    let key = ((cost * 100.0).round(), switches, order);
                    if best
                        .as_ref()
                        .is_none_or(|b| (key.0, key.1, key.2) < ((b.0 * 100.0).round(), b.1, b.2))
                    {
                        best = Some((cost, switches, order, sw, mode, l));
                    }
                },
            );
        }
        best
    };
    let mut relaxed = None;
    // A preset's spine count is the reference's for its size (6 for the 127 servers of
    // RA-11333-001): on another size the cheapest count is used, and the plan says so (it put 6
    // spines above 2 leaves for one server).
    let preset_spines = spec.provenance.source("storage.spines") == railyard_spec::Source::Preset;
    let reference_size = spec
        .provenance
        .preset
        .as_deref()
        .and_then(|p| railyard_spec::presets::raw(p).ok())
        .and_then(|raw| raw.servers.count)
        == Some(i64::from(spec.servers.count));
    let mut best = if preset_spines && !reference_size {
        relaxed = st.spines;
        cheapest(None)
    } else {
        cheapest(st.spines)
    };
    // Nor is it kept where it cannot balance the reference's own size with other choices.
    if best.is_none() && preset_spines {
        best = cheapest(None);
        relaxed = st.spines;
    }
    let Some((_, _, _, sw, mode, l)) = best else {
        return Err(err(
            "storage.spines",
            format!(
                "no storage fabric of {} balances {hosts} server and {arrays} storage ports{}; give another [storage] spines, switch or ports_per_server, or fabric = \"none\"",
                options.iter().map(|(s, _)| s.id.as_str()).collect::<Vec<_>>().join(" or "),
                st.spines.map(|s| format!(" on {s} spines")).unwrap_or_default()
            ),
        ));
    };
    let shape = Shape {
        leaf_down: l.down,
        leaf_up: l.up,
        su_size: None,
        upper: l.upper,
    };
    let r = resolved(spec, catalog, sw, mode, st.tech, shape)?;
    let mut f = Fabric::new(meta(spec, NetworkKind::Storage, sw, mode, st.tech));
    let server_ports = servers_with_ports(
        &mut f,
        compute,
        "stor",
        st.ports_per_server,
        gbps,
        mode.lanes,
    );
    let array_ports = device_ports(
        &mut f,
        "storage-system".to_string(),
        arrays as u32,
        gbps,
        mode.lanes,
    );
    let w = Wiring::new(&r, "storage-");
    let n_leaves = (l.server_leaves + l.array_leaves) as u32;
    let leaves: Vec<NodeId> = (0..n_leaves)
        .map(|i| {
            w.switch(
                &mut f,
                Tier::Leaf,
                format!("leaf{}", crate::topo::pad(i, n_leaves)),
            )
        })
        .collect();
    for (i, &p) in server_ports.iter().enumerate() {
        let leaf = leaves[i / l.down as usize];
        let q = f.nth_port(leaf, i as u32 % l.down);
        w.cable(&mut f, p, q, LinkKind::ServerLeaf);
    }
    for (i, &p) in array_ports.iter().enumerate() {
        let leaf = leaves[l.server_leaves as usize + i / l.up as usize];
        let q = f.nth_port(leaf, i as u32 % l.up);
        w.cable(&mut f, p, q, LinkKind::ServerLeaf);
    }
    w.upper_spread(&mut f, &leaves, &shape, sw.ports_per_cage(mode));
    f.meta.tiers = if l.cores > 0 { 3 } else { 2 };
    cable(&mut f, &cable_ctx(spec, catalog, sw, mode, st.tech))?;
    let mut notes = vec![
        format!(
            "{} of {} + {} (at most {} asked)",
            plural(l.server_leaves, "server leaf", "server leaves"),
            plural(u64::from(l.down), "server port", "server ports"),
            plural(u64::from(l.up), "uplink", "uplinks"),
            ratio_text(st.oversubscription)
        ),
        storage_leaves_note(arrays, l.array_leaves, l.up),
        format!(
            "{}{}",
            plural(l.spines, "spine", "spines"),
            if l.cores > 0 {
                format!(" and {} cores", l.cores)
            } else {
                String::new()
            }
        ),
    ];
    if let Some(r) = spec.provenance.reset("storage.switch") {
        notes.push(format!(
            "the spec's storage switch {} was reset to auto because {}: {} instead",
            r.value, r.because, sw.id
        ));
    }
    if let Some(n) = relaxed.filter(|&n| u64::from(n) != l.spines) {
        notes.push(format!(
            "the preset's {n} storage spines are the reference's, for its size: {} here, the cheapest that balance these leaves",
            l.spines
        ));
    }
    if st.array_ports.is_none() {
        notes.push(format!(
            "{}: 3 per 8 servers, as the reference's 48 for 4 units; set [storage] array_ports for the storage you buy",
            plural(arrays, "storage port", "storage ports")
        ));
    }
    let mut endpoints = BTreeMap::new();
    endpoints.insert("server ports".to_string(), hosts);
    endpoints.insert("storage system ports".to_string(), arrays);
    Ok(Network {
        kind: NetworkKind::Storage,
        fabric: f,
        endpoints,
        uplinks_outside: 0,
        notes,
    })
}

/// In-band host ports: servers, management nodes, user storage, out-of-band uplinks.
fn in_band_hosts(spec: &ClusterSpec, n_oob: u64) -> InBandHosts {
    let m = &spec.management;
    InBandHosts {
        servers: u64::from(spec.servers.count) * u64::from(m.in_band_ports_per_server),
        management: u64::from(m.management_servers) * u64::from(m.management_server_ports),
        user_storage: u64::from(m.user_storage_ports),
        oob: n_oob * u64::from(OOB_UPLINKS),
    }
}

#[derive(Debug, Clone, Copy)]
struct InBandHosts {
    servers: u64,
    management: u64,
    user_storage: u64,
    oob: u64,
}

impl InBandHosts {
    fn total(&self) -> u64 {
        self.servers + self.management + self.user_storage + self.oob
    }
}

#[derive(Debug, Clone, Copy)]
struct InBandLayout {
    down: u32,
    leaves: u64,
    upper: Upper,
    spines: u64,
    cores: u64,
}

impl InBandLayout {
    fn switches(&self) -> u64 {
        self.leaves + self.spines + self.cores
    }
}

/// In-band leaves in pairs of `k - 4 - 2` host ports; above them a pair of spines (two links from
/// every leaf to each), four spines when more leaves than a spine can take twice, three tiers beyond.
fn in_band_layout(k: u32, hosts: InBandHosts) -> Result<InBandLayout, BuildError> {
    let up = IN_BAND_LEAF_UPLINKS;
    if k <= up + IN_BAND_PAIR_LINKS {
        return Err(err(
            "management.in_band_switch",
            format!("a {k}-port switch leaves no host port after {up} uplinks and {IN_BAND_PAIR_LINKS} pair links"),
        ));
    }
    let down = k - up - IN_BAND_PAIR_LINKS;
    let pairs = hosts.total().div_ceil(2 * u64::from(down)).max(1);
    let leaves = 2 * pairs;
    if leaves == 2 {
        return Ok(InBandLayout {
            down,
            leaves,
            upper: Upper::None,
            spines: 0,
            cores: 0,
        });
    }
    // Prefer two spines (resilience) with the most links each, else the fewest switches.
    let mut best: Option<(u64, Upper, u64, u64)> = None;
    tree_uppers(k, up, leaves, &mut |upper| {
        let (spines, cores) = match upper {
            Upper::Two { spines, .. } => (u64::from(spines), 0),
            Upper::Three {
                pods,
                spines_per_pod,
                group,
                ..
            } => (
                pods.count(leaves, 1).0 * u64::from(spines_per_pod),
                u64::from(spines_per_pod) * u64::from(group),
            ),
            Upper::None => return true,
        };
        let score = spines + cores + if spines < 2 { 1_000_000 } else { 0 };
        if best.is_none_or(|b| score < b.0) {
            best = Some((score, upper, spines, cores));
        }
        true
    });
    let (_, upper, spines, cores) = best.ok_or_else(|| {
        err(
            "management.in_band_switch",
            format!("{leaves} in-band leaves do not fit three tiers of {k}-port switches"),
        )
    })?;
    Ok(InBandLayout {
        down,
        leaves,
        upper,
        spines,
        cores,
    })
}

#[allow(clippy::too_many_arguments)]
fn in_band_network(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
    sw: &SwitchModel,
    mode: &PortMode,
    tech: Tech,
    n_oob: u64,
    oob_data_ports: u32,
) -> Result<Network, BuildError> {
    let m = &spec.management;
    let k = mode.ports;
    let hosts = in_band_hosts(spec, n_oob);
    let l = in_band_layout(k, hosts)?;
    let shape = Shape {
        leaf_down: l.down,
        leaf_up: IN_BAND_LEAF_UPLINKS,
        su_size: None,
        upper: l.upper,
    };
    let r = resolved(spec, catalog, sw, mode, tech, shape)?;
    let (gbps, lanes) = (mode.gbps, mode.lanes);
    let mut f = Fabric::new(meta(spec, NetworkKind::InBand, sw, mode, tech));
    let mut ports = servers_with_ports(
        &mut f,
        compute,
        "inband",
        m.in_band_ports_per_server,
        gbps,
        lanes,
    );
    for i in 0..m.management_servers {
        ports.extend(device_ports(
            &mut f,
            format!("mgmt-node{}", crate::topo::pad(i, m.management_servers)),
            m.management_server_ports,
            gbps,
            lanes,
        ));
    }
    if m.user_storage_ports > 0 {
        ports.extend(device_ports(
            &mut f,
            "user-storage".to_string(),
            m.user_storage_ports,
            gbps,
            lanes,
        ));
    }
    // The out-of-band switches' uplinks leave from their QSFP28 ports, numbered after the RJ45
    // ports the out-of-band network cables (SN2201: 1-48 RJ45, 49-52 QSFP28).
    let uplinks: Vec<String> = (0..OOB_UPLINKS)
        .map(|t| format!("p{}", oob_data_ports + 1 + t))
        .collect();
    for i in 0..n_oob as u32 {
        ports.extend(named_ports(
            &mut f,
            &format!("oob-switch{}", crate::topo::pad(i, n_oob as u32)),
            &uplinks,
            gbps,
            lanes,
        ));
    }
    let w = Wiring::new(&r, "inband-");
    let n = l.leaves as u32;
    let leaves: Vec<NodeId> = (0..n)
        .map(|i| {
            w.switch(
                &mut f,
                Tier::Leaf,
                format!("leaf{}", crate::topo::pad(i, n)),
            )
        })
        .collect();
    // Host j goes to pair j / (2 x down), alternating leaves: a server's two ports on both of a pair.
    for (j, &p) in ports.iter().enumerate() {
        let j = j as u32;
        let pair = j / (2 * l.down);
        let leaf = leaves[(2 * pair + j % 2) as usize];
        let q = f.nth_port(leaf, (j % (2 * l.down)) / 2);
        w.cable(&mut f, p, q, LinkKind::ServerLeaf);
    }
    for pair in 0..n / 2 {
        for t in 0..IN_BAND_PAIR_LINKS {
            let port = k - IN_BAND_PAIR_LINKS + t;
            let a = f.nth_port(leaves[2 * pair as usize], port);
            let b = f.nth_port(leaves[2 * pair as usize + 1], port);
            w.cable(&mut f, a, b, LinkKind::InterSwitch);
        }
    }
    w.upper(&mut f, &leaves, &shape);
    f.meta.tiers = match l.upper {
        Upper::None => 1,
        Upper::Two { .. } => 2,
        Upper::Three { .. } => 3,
    };
    cable(&mut f, &cable_ctx(spec, catalog, sw, mode, tech))?;
    let mut endpoints = BTreeMap::new();
    endpoints.insert("server ports".to_string(), hosts.servers);
    endpoints.insert("management node ports".to_string(), hosts.management);
    endpoints.insert("user storage ports".to_string(), hosts.user_storage);
    endpoints.insert("out-of-band switch uplinks".to_string(), hosts.oob);
    let leaves_note = if matches!(l.upper, Upper::None) {
        format!(
            "{} leaves in a pair of {} host ports each, {IN_BAND_PAIR_LINKS} cables within the pair; no uplinks cabled (one pair needs no spines; {IN_BAND_LEAF_UPLINKS} ports per leaf stay free for them)",
            l.leaves, l.down
        )
    } else {
        format!(
            "{} leaves in pairs of {} host ports, {IN_BAND_PAIR_LINKS} cables within each pair, {IN_BAND_LEAF_UPLINKS} uplinks per leaf",
            l.leaves, l.down
        )
    };
    let notes = vec![
        leaves_note,
        format!(
            "{} spines{}; {} uplinks to the data-centre network (counted, not priced: their far ends are the site's)",
            l.spines,
            if l.cores > 0 { format!(" and {} cores", l.cores) } else { String::new() },
            m.uplinks
        ),
    ];
    Ok(Network {
        kind: NetworkKind::InBand,
        fabric: f,
        endpoints,
        uplinks_outside: u64::from(m.uplinks),
        notes,
    })
}

#[allow(clippy::too_many_arguments)]
fn oob_network(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
    sw: &SwitchModel,
    mode: &PortMode,
    tech: Tech,
    per_switch: u32,
    switches: &[String],
    pdus: u64,
) -> Result<Network, BuildError> {
    let m = &spec.management;
    let r = resolved(spec, catalog, sw, mode, tech, Shape::FLAT)?;
    let (gbps, lanes) = (mode.gbps, mode.lanes);
    let mut f = Fabric::new(meta(spec, NetworkKind::OutOfBand, sw, mode, tech));
    let mut ports = servers_with_ports(&mut f, compute, "bmc", 1, gbps, lanes);
    // Switches by their management port, management nodes and fabric managers by their BMC: their
    // numbered ports are data ports in the other networks' files.
    let (mgmt, bmc) = (["mgmt".to_string()], ["bmc".to_string()]);
    for name in switches {
        ports.extend(named_ports(&mut f, name, &mgmt, gbps, lanes));
    }
    for i in 0..m.management_servers {
        ports.extend(named_ports(
            &mut f,
            &format!("mgmt-node{}", crate::topo::pad(i, m.management_servers)),
            &bmc,
            gbps,
            lanes,
        ));
    }
    for i in 0..m.fabric_managers {
        ports.extend(named_ports(
            &mut f,
            &format!("fabric-manager{}", crate::topo::pad(i, m.fabric_managers)),
            &bmc,
            gbps,
            lanes,
        ));
    }
    for i in 0..pdus as u32 {
        ports.extend(device_ports(
            &mut f,
            format!("pdu{}", crate::topo::pad(i, pdus as u32)),
            1,
            gbps,
            lanes,
        ));
    }
    let w = Wiring::new(&r, "oob-");
    let n = (ports.len() as u64).div_ceil(u64::from(per_switch)) as u32;
    let leaves: Vec<NodeId> = (0..n)
        .map(|i| {
            w.switch(
                &mut f,
                Tier::Leaf,
                format!("switch{}", crate::topo::pad(i, n)),
            )
        })
        .collect();
    for (j, &p) in ports.iter().enumerate() {
        let leaf = leaves[j / per_switch as usize];
        let q = f.nth_port(leaf, j as u32 % per_switch);
        w.cable(&mut f, p, q, LinkKind::ServerLeaf);
    }
    cable(&mut f, &cable_ctx(spec, catalog, sw, mode, tech))?;
    let mut endpoints = BTreeMap::new();
    endpoints.insert("server BMCs".to_string(), u64::from(spec.servers.count));
    endpoints.insert("switches".to_string(), switches.len() as u64);
    endpoints.insert(
        "management nodes".to_string(),
        u64::from(m.management_servers),
    );
    endpoints.insert("fabric managers".to_string(), u64::from(m.fabric_managers));
    endpoints.insert("PDUs".to_string(), pdus);
    let notes = vec![
        if n <= 1 {
            format!(
                "1 switch with {} of {} ports used (at most {per_switch} per switch); {OOB_UPLINKS} uplinks into the in-band network (cabled there)",
                ports.len(),
                mode.ports
            )
        } else {
            format!(
                "{n} switches with {} of {} ports used ({per_switch} on each but the last, which has {}); {OOB_UPLINKS} uplinks each into the in-band network (cabled there)",
                thousands(ports.len() as f64),
                thousands(f64::from(n) * f64::from(mode.ports)),
                ports.len() - (n as usize - 1) * per_switch as usize
            )
        },
        if m.pdus.is_some() {
            format!("{pdus} rack PDUs as given")
        } else {
            format!("{pdus} rack PDUs: {PDUS_PER_SERVER_RACK} per server rack and {PDUS_PER_OTHER_RACK} per other rack, the reference's rule (96 for its 32 DGX racks, 12 for its 6 other racks)")
        },
    ];
    Ok(Network {
        kind: NetworkKind::OutOfBand,
        fabric: f,
        endpoints,
        uplinks_outside: 0,
        notes,
    })
}
