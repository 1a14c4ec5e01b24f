//! The builders: every server stamped from one template, then each topology's switches and cables,
//! plane by plane, exactly the shape [`counts`](super::counts) counted.

use super::counts::counts;
use super::ports::isl_links;
use super::size::{DesignSize, ServerCounts};
use super::wiring::{pad, pods_in_order, upper_tiers, Ctx};
use crate::error::{err, BuildError};
use crate::graph::{Fabric, LinkKind, NodeId, PortId, Tier};
use crate::hardware::Resolved;
use crate::server::ServerTemplate;
use crate::shape::{Pods, Shape, Upper};
use railyard_spec::Topology;

/// A NIC port to be cabled: its server, rail (NIC index) and port.
#[derive(Debug, Clone, Copy)]
struct HostPort {
    server: u32,
    rail: u32,
    port: PortId,
}

/// Builds servers and switches and cables everything as the resolved shape says; cable types come
/// later from the layout.
pub fn build_topology(r: &Resolved) -> Result<Fabric, BuildError> {
    let spec = r.spec;
    let s = &spec.servers;
    let f_spec = &spec.fabric;
    let shape = r.shape;
    let c = counts(spec, r.radix(), &shape).ok_or_else(|| {
        err(
            "fabric.topology",
            format!(
                "the shape {shape:?} does not fit {}-port {} for this spec",
                r.radix(),
                r.switch.id
            ),
        )
    })?;
    let mut f = Fabric::new(r.meta(c.tiers));
    let template = ServerTemplate::new(&f, r);
    // Bounded before building: the design's counts, from the spec's numbers alone, must fit.
    let (nodes, ports, links) = template.counts();
    DesignSize::of(
        u64::from(s.count),
        ServerCounts {
            nodes,
            ports,
            links,
        },
        &c,
        r.radix(),
    )
    .check(r)?;

    // Servers first, so server nodes come before switches in the arena.
    let hosts = stamp_servers(&mut f, r, &template);

    for (plane, hosts) in hosts.iter().enumerate() {
        let ctx = Ctx {
            r,
            plane: plane as u32,
            prefix: if f_spec.planes > 1 {
                format!("plane{}-", plane + 1)
            } else {
                String::new()
            },
        };
        match f_spec.topology {
            Topology::SingleSwitch => single_switch(&mut f, &ctx, hosts),
            Topology::TwoSwitch => two_switch(&mut f, &ctx, hosts),
            Topology::FatTree => fat_tree(&mut f, &ctx, hosts, &shape, ""),
            Topology::RailOnly => rail_only(&mut f, &ctx, hosts, &shape),
            Topology::RailOptimized => rail_optimized(&mut f, &ctx, hosts, &shape),
        }
    }
    f.meta.tiers = c.tiers;
    Ok(f)
}

/// Stamps every server from `template`, named by unit where units shape the design
/// (`su1-srv07`) or in order (`srv007`), and returns their compute NIC ports per plane, in server
/// and rail order.
fn stamp_servers(f: &mut Fabric, r: &Resolved, template: &ServerTemplate) -> Vec<Vec<HostPort>> {
    let s = &r.spec.servers;
    let f_spec = &r.spec.fabric;
    let per_plane = s.count as usize * s.compute_nics as usize;
    let mut hosts: Vec<Vec<HostPort>> = vec![Vec::with_capacity(per_plane); f_spec.planes as usize];
    template.reserve(f, s.count as usize);
    let su_size = r
        .shape
        .su_size
        .filter(|_| f_spec.topology == Topology::RailOptimized);
    for i in 0..s.count {
        let (name, su) = match su_size {
            Some(su) => (
                format!("su{}-srv{}", i / su + 1, pad(i % su, su)),
                Some(i / su),
            ),
            None => (format!("srv{}", pad(i, s.count)), None),
        };
        let ports = template.stamp(f, i, name, su);
        for (rail, per_plane) in ports.ports.iter().enumerate() {
            for (plane, &port) in per_plane.iter().enumerate() {
                hosts[plane].push(HostPort {
                    server: i,
                    rail: rail as u32,
                    port,
                });
            }
        }
    }
    hosts
}

fn single_switch(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort]) {
    // `counts` checked that one switch holds every NIC port.
    let sw = ctx.add_switch(f, Tier::Leaf, "switch1".to_string());
    for (i, h) in hosts.iter().enumerate() {
        let p = f.nth_port(sw, i as u32);
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
}

/// The seed's two-switch design: HCA 1, 3, 5, 7 (odd, 1-based) of every server on switch 1, the even
/// ones on switch 2, the switches joined by `isl_links` cables on their last ports.
/// The switch (0 or 1) a NIC port of a two-switch design goes to: odd HCAs on switch 1, even on
/// switch 2, so each server reaches both; with one HCA per server, odd servers on switch 1 (all of
/// them went to switch 1, and switch 2 held only the inter-switch cables).
fn two_switch_side(h: &HostPort, rails: u32) -> usize {
    if rails == 1 {
        (h.server % 2) as usize
    } else {
        (h.rail % 2) as usize
    }
}

fn two_switch(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort]) {
    let rails = hosts.iter().map(|h| h.rail + 1).max().unwrap_or(1);
    // `counts` checked that the inter-switch links leave room for every NIC port.
    let most = hosts
        .iter()
        .filter(|h| two_switch_side(h, rails) == 0)
        .count() as u64;
    let isl = isl_links(ctx.r.spec, most);
    let free = ctx.k() - isl;
    let sws = [
        ctx.add_switch(f, Tier::Leaf, "switch1".to_string()),
        ctx.add_switch(f, Tier::Leaf, "switch2".to_string()),
    ];
    let mut next = [0u32; 2];
    for h in hosts {
        let s = two_switch_side(h, rails);
        let p = f.nth_port(sws[s], next[s]);
        next[s] += 1;
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
    for i in 0..isl {
        let a = f.nth_port(sws[0], free + i);
        let b = f.nth_port(sws[1], free + i);
        ctx.cable(f, a, b, LinkKind::InterSwitch);
    }
}

/// A plain fat-tree: NIC ports fill leaves in server order, `leaf_down` per leaf.
fn fat_tree(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort], shape: &Shape, group: &str) {
    if shape.upper == Upper::None {
        // One switch holds everything: no upper tier needed.
        let sw = ctx.add_switch(f, Tier::Leaf, format!("{group}leaf01"));
        for (i, h) in hosts.iter().enumerate() {
            let p = f.nth_port(sw, i as u32);
            ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
        }
        return;
    }
    let down = shape.leaf_down;
    let n_leaves = (hosts.len() as u32).div_ceil(down);
    let leaves: Vec<NodeId> = (0..n_leaves)
        .map(|i| ctx.add_switch(f, Tier::Leaf, format!("{group}leaf{}", pad(i, n_leaves))))
        .collect();
    for (i, h) in hosts.iter().enumerate() {
        let leaf = leaves[i / down as usize];
        let p = f.nth_port(leaf, i as u32 % down);
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
    let pods = match shape.upper {
        Upper::Three {
            pods: Pods::InOrder { size },
            ..
        } => pods_in_order(&leaves, size),
        _ => vec![leaves.iter().copied().map(Some).collect()],
    };
    upper_tiers(f, ctx, &leaves, shape, pods, group, ctx.cage());
}

/// Rail-only (Wang et al.): every rail is its own network of leaves (and spines if a rail outgrows one
/// switch); there is no switch path between rails.
fn rail_only(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort], shape: &Shape) {
    let rails = ctx.r.spec.servers.compute_nics;
    for rail in 0..rails {
        let on_rail: Vec<HostPort> = hosts.iter().copied().filter(|h| h.rail == rail).collect();
        fat_tree(f, ctx, &on_rail, shape, &format!("rail{}-", rail + 1));
    }
}

/// Rail-optimized fat-tree in scalable units: HCA i of every server in a unit goes to leaf i of that
/// unit (server j of the unit on leaf port j+1); units are provisioned whole.
fn rail_optimized(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort], shape: &Shape) {
    let servers = ctx.r.spec.servers.count;
    let rails = ctx.r.spec.servers.compute_nics;
    // `counts` checked that a rail-optimized shape has a unit size.
    let su_size = shape.su_size.unwrap_or(shape.leaf_down).max(1);
    let units = servers.div_ceil(su_size);
    // leaves[unit][rail]
    let mut leaves = Vec::with_capacity(units as usize);
    for u in 0..units {
        let row: Vec<NodeId> = (0..rails)
            .map(|rail| ctx.add_switch(f, Tier::Leaf, format!("su{}-leaf{}", u + 1, rail + 1)))
            .collect();
        leaves.push(row);
    }
    for h in hosts {
        let (u, j) = (h.server / su_size, h.server % su_size);
        let p = f.nth_port(leaves[u as usize][h.rail as usize], j);
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
    let pods: Vec<Vec<Option<NodeId>>> = match shape.upper {
        // Leaves ordered rail-major, so a pod holds whole rails: same-rail traffic between units then
        // turns at a spine and never climbs to the core.
        Upper::Three {
            pods: Pods::WholeRails { rails: per },
            ..
        } => {
            let per = per.max(1);
            (0..rails.div_ceil(per))
                .map(|p| {
                    let mut slots = Vec::with_capacity((per * units) as usize);
                    for rail in p * per..(p + 1) * per {
                        for u in 0..units {
                            slots.push((rail < rails).then(|| leaves[u as usize][rail as usize]));
                        }
                    }
                    slots
                })
                .collect()
        }
        Upper::Three {
            pods: Pods::WholeUnits { units: per },
            ..
        } => {
            let per = per.max(1);
            (0..units.div_ceil(per))
                .map(|p| {
                    let mut slots = Vec::with_capacity((per * rails) as usize);
                    for u in p * per..(p + 1) * per {
                        for rail in 0..rails {
                            slots.push((u < units).then(|| leaves[u as usize][rail as usize]));
                        }
                    }
                    slots
                })
                .collect()
        }
        Upper::Three {
            pods: Pods::InOrder { size },
            ..
        } => {
            let flat: Vec<NodeId> = leaves.iter().flatten().copied().collect();
            pods_in_order(&flat, size)
        }
        _ => vec![leaves.iter().flatten().copied().map(Some).collect()],
    };
    let flat: Vec<NodeId> = leaves.into_iter().flatten().collect();
    upper_tiers(f, ctx, &flat, shape, pods, "", ctx.cage());
}
