//! The storage fabric (`[storage]`): server leaves near 4:3, storage systems on leaves of their
//! own at 1:1, spines (and cores) above; the cheapest layout by counts, a preset's spine count
//! kept only at the reference's size.

use super::network::{
    cable_ctx, device_ports, meta, resolved, servers_with_ports, Network, NetworkKind,
};
use crate::error::{err, BuildError};
use crate::graph::{Fabric, LinkKind, NodeId, Tier};
use crate::layout::cable;
use crate::search::tree_uppers;
use crate::shape::{Shape, Upper};
use crate::text::{plural, ratio_text};
use crate::topo::{pad, uplinks_for, Wiring};
use railyard_catalog::{Catalog, PortMode, SwitchModel};
use railyard_spec::ClusterSpec;
use std::collections::BTreeMap;

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
pub(super) struct StorageLayout {
    pub(super) down: u32,
    pub(super) up: u32,
    pub(super) server_leaves: u64,
    pub(super) array_leaves: u64,
    pub(super) upper: Upper,
    pub(super) spines: u64,
    pub(super) cores: u64,
    pub(super) switch_links: u64,
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

pub(super) fn storage(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
) -> Result<Network, BuildError> {
    let st = &spec.storage;
    let servers = u64::from(spec.servers.count);
    let ports = StoragePorts {
        hosts: servers * u64::from(st.ports_per_server),
        // The reference: 48 storage ports for 4 units of 32 servers, 3 per 8 servers.
        arrays: st
            .array_ports
            .map_or((servers * 3).div_ceil(8), u64::from)
            .max(1),
    };
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
    let chosen = choose_layout(spec, catalog, &options, ports)?;
    let f = build(spec, catalog, compute, &chosen, ports, gbps)?;
    let mut endpoints = BTreeMap::new();
    endpoints.insert("server ports".to_string(), ports.hosts);
    endpoints.insert("storage system ports".to_string(), ports.arrays);
    Ok(Network {
        kind: NetworkKind::Storage,
        fabric: f,
        endpoints,
        uplinks_outside: 0,
        notes: notes(spec, &chosen, ports),
    })
}

/// The storage ports of the servers (`hosts`) and of the storage systems (`arrays`).
#[derive(Debug, Clone, Copy)]
struct StoragePorts {
    hosts: u64,
    arrays: u64,
}

/// The storage fabric chosen: its switch and port mode, its layout, and the preset's spine count
/// where it was set aside (`relaxed`).
struct Chosen<'c> {
    sw: &'c SwitchModel,
    mode: &'c PortMode,
    layout: StorageLayout,
    relaxed: Option<u32>,
}

/// The cheapest layout by counts, on any of `options`, with `spines` spines where given:
/// switches at catalog prices, cables and optics at typical runs.
fn cheapest<'c>(
    spec: &ClusterSpec,
    catalog: &Catalog,
    options: &[(&'c SwitchModel, &'c PortMode)],
    ports: StoragePorts,
    spines: Option<u32>,
) -> Option<(&'c SwitchModel, &'c PortMode, StorageLayout)> {
    let st = &spec.storage;
    let StoragePorts { hosts, arrays } = ports;
    let mut best: Option<(f64, u64, usize, &SwitchModel, &PortMode, StorageLayout)> = None;
    let mut order = 0usize;
    for &(sw, mode) in options {
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
    best.map(|(_, _, _, sw, mode, l)| (sw, mode, l))
}

/// The cheapest layout that keeps the spec's spine count; a preset's count only at the
/// reference's size, or where it balances.
fn choose_layout<'c>(
    spec: &ClusterSpec,
    catalog: &Catalog,
    options: &[(&'c SwitchModel, &'c PortMode)],
    ports: StoragePorts,
) -> Result<Chosen<'c>, BuildError> {
    let st = &spec.storage;
    let cheapest = |spines| cheapest(spec, catalog, options, ports, spines);
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
    let Some((sw, mode, layout)) = best else {
        return Err(err(
            "storage.spines",
            format!(
                "no storage fabric of {} balances {} server and {} storage ports{}; give another [storage] spines, switch or ports_per_server, or fabric = \"none\"",
                options.iter().map(|(s, _)| s.id.as_str()).collect::<Vec<_>>().join(" or "),
                ports.hosts,
                ports.arrays,
                st.spines.map(|s| format!(" on {s} spines")).unwrap_or_default()
            ),
        ));
    };
    Ok(Chosen {
        sw,
        mode,
        layout,
        relaxed,
    })
}

/// The storage fabric of the chosen layout: the servers' storage ports and the storage systems'
/// on leaves of their own, the tiers above, cabled.
fn build(
    spec: &ClusterSpec,
    catalog: &Catalog,
    compute: &Fabric,
    chosen: &Chosen,
    ports: StoragePorts,
    gbps: u32,
) -> Result<Fabric, BuildError> {
    let st = &spec.storage;
    let Chosen {
        sw,
        mode,
        layout: l,
        ..
    } = *chosen;
    let arrays = ports.arrays;
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
        .map(|i| w.switch(&mut f, Tier::Leaf, format!("leaf{}", pad(i, n_leaves))))
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
    Ok(f)
}

/// How the storage fabric was shaped and why.
fn notes(spec: &ClusterSpec, chosen: &Chosen, ports: StoragePorts) -> Vec<String> {
    let st = &spec.storage;
    let Chosen {
        sw,
        layout: l,
        relaxed,
        ..
    } = *chosen;
    let arrays = ports.arrays;
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
    notes
}
