//! Topology builders: which NIC port goes to which leaf port, and how leaves reach spines and cores.
//!
//! Trees are folded Clos networks (Al-Fares et al., "A Scalable, Commodity Data Center Network
//! Architecture", SIGCOMM 2008): with radix-k switches two non-blocking tiers hold k^2/2 host ports and
//! three tiers k^3/4. Every tree is balanced: a leaf sends the same number of links to every spine it
//! uses, and a spine the same number to every core it uses. Scalable units and pods are provisioned
//! whole, so a partly filled unit still has all its leaves and uplinks and growing it needs no rewiring.

use crate::graph::{
    Fabric, FabricMeta, LinkKind, Medium, NodeId, NodeKind, NodeSpec, PortId, Tier,
};
use crate::server::ServerTemplate;
use crate::{err, BuildError, Resolved};
use railyard_spec::Topology;

/// Leaf port split for a down:up oversubscription ratio r on radix k: `up = floor(k / (1 + r))`,
/// `down = min(k - up, floor(up * r))`, so 64 ports give 32:32 at 1:1, 42:21 at 2:1, 48:16 at 3:1.
pub fn leaf_split(k: u32, oversubscription: f64) -> (u32, u32) {
    let up = ((f64::from(k) / (1.0 + oversubscription)).floor() as u32).max(1);
    let down = (k - up).min((f64::from(up) * oversubscription + 1e-9).floor() as u32);
    (down, up)
}

/// Zero-padded index (1-based) wide enough for `count`, at least two digits: `spine05`.
pub fn pad(i: u32, count: u32) -> String {
    let width = count.max(1).to_string().len().max(2);
    format!("{:0width$}", i + 1)
}

/// Divisors of n, ascending.
fn divisors(n: u32) -> impl DoubleEndedIterator<Item = u32> {
    (1..=n).filter(move |d| n.is_multiple_of(*d))
}

/// What every switch builder needs.
struct Ctx<'a> {
    r: &'a Resolved<'a>,
    plane: u32,
    /// Name prefix: `plane2-` when there are several planes, `rail3-` inside rail-only rails.
    prefix: String,
}

impl Ctx<'_> {
    fn k(&self) -> u32 {
        self.r.radix()
    }

    fn add_switch(&self, f: &mut Fabric, tier: Tier, name: String) -> NodeId {
        let sw = self.r.switch;
        f.add_node(
            NodeSpec {
                kind: NodeKind::Switch { tier },
                name: format!("{}{name}", self.prefix),
                model: sw.id.as_str().into(),
                server: None,
                plane: self.plane,
            },
            self.k(),
            f64::from(self.r.gbps),
            self.r.lanes,
            sw.ports_per_cage(self.r.mode),
        )
    }

    fn cable(&self, f: &mut Fabric, a: PortId, b: PortId, kind: LinkKind) {
        f.connect(
            a,
            b,
            kind,
            f64::from(self.r.gbps),
            self.r.lanes,
            Medium::Unplanned,
        );
    }
}

/// A NIC port to be cabled: its server, rail (NIC index) and port.
#[derive(Debug, Clone, Copy)]
struct HostPort {
    server: u32,
    rail: u32,
    port: PortId,
}

/// Builds servers and switches and cables everything; cable types come later from the layout.
pub fn build_topology(r: &Resolved) -> Result<Fabric, BuildError> {
    let spec = r.spec;
    let s = &spec.servers;
    let f_spec = &spec.fabric;
    let k = r.radix();
    let (down, up) = leaf_split(k, f_spec.oversubscription);

    let su_size = match f_spec.topology {
        Topology::RailOptimized => {
            let su = f_spec.su_size.unwrap_or(down);
            if su > down {
                return Err(err(
                    "fabric.su_size",
                    format!(
                        "{su} servers per unit need {su} down-ports per leaf, but a {}-port {} leaf has {down} at oversubscription {}; valid: 1 to {down}",
                        k, r.switch.id, f_spec.oversubscription
                    ),
                ));
            }
            Some(su)
        }
        _ => None,
    };

    let mut f = Fabric::new(FabricMeta {
        name: spec.name.clone(),
        tech: f_spec.tech,
        topology: f_spec.topology.as_str().to_string(),
        switch_model: r.switch.id.clone(),
        port_mode: r.mode.name.clone(),
        nic_model: r.nic.id.clone(),
        gpu_model: r.gpu.id.clone(),
        tiers: 1,
        planes: f_spec.planes,
        su_size,
        scalable_units: su_size.map(|su| s.count.div_ceil(su)),
        gpudirect: s.gpudirect,
        gpus_per_server: s.gpus_per_server,
        compute_nics_per_server: s.compute_nics,
    });

    // Servers first, so server nodes come before switches in the arena.
    let per_plane = s.count as usize * s.compute_nics as usize;
    let mut hosts: Vec<Vec<HostPort>> = vec![Vec::with_capacity(per_plane); f_spec.planes as usize];
    let template = ServerTemplate::new(&f, r);
    template.reserve(&mut f, s.count as usize);
    for i in 0..s.count {
        let (name, su) = match su_size {
            Some(su) => (
                format!("su{}-srv{}", i / su + 1, pad(i % su, su)),
                Some(i / su),
            ),
            None => (format!("srv{}", pad(i, s.count)), None),
        };
        let ports = template.stamp(&mut f, i, name, su);
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

    let mut tiers = 1;
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
        let t = match f_spec.topology {
            Topology::SingleSwitch => single_switch(&mut f, &ctx, hosts)?,
            Topology::TwoSwitch => two_switch(&mut f, &ctx, hosts)?,
            Topology::FatTree => fat_tree(&mut f, &ctx, hosts, down, up, "")?,
            Topology::RailOnly => rail_only(&mut f, &ctx, hosts, down, up)?,
            Topology::RailOptimized => {
                rail_optimized(&mut f, &ctx, hosts, down, up, su_size.unwrap_or(down))?
            }
        };
        tiers = tiers.max(t);
    }
    f.meta.tiers = tiers;
    Ok(f)
}

fn too_many(r: &Resolved, what: &str, limit: u64, have: u64) -> BuildError {
    let per_server = u64::from(r.spec.servers.compute_nics);
    err(
        "servers.count",
        format!(
            "{have} NIC ports exceed {what}: at most {limit} NIC ports on {}-port {} ({}); valid: at most {} servers of {per_server} NICs",
            r.radix(),
            r.switch.id,
            r.mode.name,
            limit / per_server.max(1)
        ),
    )
}

fn single_switch(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort]) -> Result<u32, BuildError> {
    let k = ctx.k();
    if hosts.len() as u64 > u64::from(k) {
        return Err(too_many(
            ctx.r,
            "one switch",
            u64::from(k),
            hosts.len() as u64,
        ));
    }
    let sw = ctx.add_switch(f, Tier::Leaf, "switch1".to_string());
    for (i, h) in hosts.iter().enumerate() {
        let p = f.nth_port(sw, i as u32);
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
    Ok(1)
}

/// The seed's two-switch design: HCA 1, 3, 5, 7 (odd, 1-based) of every server on switch 1, the even
/// ones on switch 2, the switches joined by `isl_links` cables on their last ports.
fn two_switch(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort]) -> Result<u32, BuildError> {
    let k = ctx.k();
    let isl = ctx.r.spec.fabric.isl_links;
    if isl >= k {
        return Err(err(
            "fabric.isl_links",
            format!(
                "{isl} inter-switch links leave no port on a {k}-port switch; valid: 1 to {}",
                k - 1
            ),
        ));
    }
    let free = k - isl;
    let on = |s: u32| hosts.iter().filter(|h| h.rail % 2 == s).count() as u64;
    let most = on(0).max(on(1));
    if most > u64::from(free) {
        return Err(too_many(
            ctx.r,
            &format!("two switches with {isl} inter-switch links"),
            2 * u64::from(free),
            hosts.len() as u64,
        ));
    }
    let sws = [
        ctx.add_switch(f, Tier::Leaf, "switch1".to_string()),
        ctx.add_switch(f, Tier::Leaf, "switch2".to_string()),
    ];
    let mut next = [0u32; 2];
    for h in hosts {
        let s = (h.rail % 2) as usize;
        let p = f.nth_port(sws[s], next[s]);
        next[s] += 1;
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
    for i in 0..isl {
        let a = f.nth_port(sws[0], free + i);
        let b = f.nth_port(sws[1], free + i);
        ctx.cable(f, a, b, LinkKind::InterSwitch);
    }
    Ok(1)
}

/// A plain fat-tree: NIC ports fill leaves in server order, `down` per leaf.
fn fat_tree(
    f: &mut Fabric,
    ctx: &Ctx,
    hosts: &[HostPort],
    down: u32,
    up: u32,
    group: &str,
) -> Result<u32, BuildError> {
    let k = ctx.k();
    if hosts.len() as u64 <= u64::from(k) {
        // One switch holds everything: no upper tier needed.
        let sw = ctx.add_switch(f, Tier::Leaf, format!("{group}leaf01"));
        for (i, h) in hosts.iter().enumerate() {
            let p = f.nth_port(sw, i as u32);
            ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
        }
        return Ok(1);
    }
    let n_leaves = (hosts.len() as u32).div_ceil(down);
    let leaves: Vec<NodeId> = (0..n_leaves)
        .map(|i| ctx.add_switch(f, Tier::Leaf, format!("{group}leaf{}", pad(i, n_leaves))))
        .collect();
    for (i, h) in hosts.iter().enumerate() {
        let leaf = leaves[i / down as usize];
        let p = f.nth_port(leaf, i as u32 % down);
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
    let pods = pods_in_order(&leaves, k / 2);
    upper_tiers(f, ctx, &leaves, down, up, pods, group, hosts.len() as u64)
}

/// Rail-only (Wang et al.): every rail is its own network of leaves (and spines if a rail outgrows one
/// switch); there is no switch path between rails.
fn rail_only(
    f: &mut Fabric,
    ctx: &Ctx,
    hosts: &[HostPort],
    down: u32,
    up: u32,
) -> Result<u32, BuildError> {
    let rails = ctx.r.spec.servers.compute_nics;
    let mut tiers = 1;
    for rail in 0..rails {
        let on_rail: Vec<HostPort> = hosts.iter().copied().filter(|h| h.rail == rail).collect();
        tiers = tiers.max(fat_tree(
            f,
            ctx,
            &on_rail,
            down,
            up,
            &format!("rail{}-", rail + 1),
        )?);
    }
    Ok(tiers)
}

/// Rail-optimized fat-tree in scalable units: HCA i of every server in a unit goes to leaf i of that
/// unit (server j of the unit on leaf port j+1); units are provisioned whole.
fn rail_optimized(
    f: &mut Fabric,
    ctx: &Ctx,
    hosts: &[HostPort],
    down: u32,
    up: u32,
    su_size: u32,
) -> Result<u32, BuildError> {
    let servers = ctx.r.spec.servers.count;
    let rails = ctx.r.spec.servers.compute_nics;
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
    // Leaves ordered rail-major, so a pod holds whole rails when they fit: same-rail traffic between
    // units then turns at a spine and never climbs to the core.
    let spine_down = ctx.k() / 2;
    let pods: Vec<Vec<Option<NodeId>>> = if units <= spine_down {
        let rails_per_pod = (spine_down / units).min(rails);
        (0..rails.div_ceil(rails_per_pod))
            .map(|p| {
                let mut slots = Vec::with_capacity((rails_per_pod * units) as usize);
                for rail in p * rails_per_pod..(p + 1) * rails_per_pod {
                    for u in 0..units {
                        slots.push((rail < rails).then(|| leaves[u as usize][rail as usize]));
                    }
                }
                slots
            })
            .collect()
    } else if rails > spine_down {
        // Not even one unit fits a pod: fill pods in leaf order.
        let flat: Vec<NodeId> = leaves.iter().flatten().copied().collect();
        pods_in_order(&flat, spine_down)
    } else {
        // A rail outgrows a pod, so same-rail traffic crosses the core anyway: pods hold whole units
        // instead (as many as fit), which needs the fewest spines.
        let units_per_pod = (spine_down / rails).max(1);
        (0..units.div_ceil(units_per_pod))
            .map(|p| {
                let mut slots = Vec::with_capacity((units_per_pod * rails) as usize);
                for u in p * units_per_pod..(p + 1) * units_per_pod {
                    for rail in 0..rails {
                        slots.push((u < units).then(|| leaves[u as usize][rail as usize]));
                    }
                }
                slots
            })
            .collect()
    };
    let flat: Vec<NodeId> = leaves.into_iter().flatten().collect();
    upper_tiers(f, ctx, &flat, down, up, pods, "", hosts.len() as u64)
}

/// Pods of `size` leaf slots, in leaf order; the last pod's empty slots are `None`.
fn pods_in_order(leaves: &[NodeId], size: u32) -> Vec<Vec<Option<NodeId>>> {
    leaves
        .chunks(size as usize)
        .map(|c| {
            let mut v: Vec<Option<NodeId>> = c.iter().copied().map(Some).collect();
            v.resize(size as usize, None);
            v
        })
        .collect()
}

/// Spines (and cores when needed) above `leaves`, whose ports `down..down+up` go up.
///
/// Two tiers when every leaf can reach every spine (at most k leaves): each leaf sends m links to each
/// of u/m spines, m the largest divisor of u with leaves x m <= k, so spines fill up (the DGX SuperPOD
/// H100 reference: 32 leaves x 32 uplinks -> 16 spines with 2 links from every leaf).
///
/// Three tiers otherwise: leaves form pods (at most k/2 leaf slots each), every pod has the same spines
/// with half their ports down, and spine j of every pod connects to core group j; a spine sends the same
/// number of links to every core of its group.
#[allow(clippy::too_many_arguments)]
fn upper_tiers(
    f: &mut Fabric,
    ctx: &Ctx,
    leaves: &[NodeId],
    down: u32,
    up: u32,
    pods: Vec<Vec<Option<NodeId>>>,
    group: &str,
    host_ports: u64,
) -> Result<u32, BuildError> {
    let k = ctx.k();
    let n = leaves.len() as u32;
    if n <= k {
        let m = divisors(up).rev().find(|m| n * m <= k).unwrap_or(1);
        let spines_n = up / m;
        let spines: Vec<NodeId> = (0..spines_n)
            .map(|j| ctx.add_switch(f, Tier::Spine, format!("{group}spine{}", pad(j, spines_n))))
            .collect();
        for (i, &leaf) in leaves.iter().enumerate() {
            for q in 0..up {
                let (j, t) = (q % spines_n, q / spines_n);
                let a = f.nth_port(leaf, down + q);
                let b = f.nth_port(spines[j as usize], i as u32 * m + t);
                ctx.cable(f, a, b, LinkKind::LeafSpine);
            }
        }
        return Ok(2);
    }

    let spine_down = k / 2;
    let spine_up = k - spine_down;
    let slots = pods.iter().map(Vec::len).max().unwrap_or(0) as u32;
    let n_pods = pods.len() as u32;
    let m_ls = divisors(up)
        .rev()
        .find(|m| slots * m <= spine_down)
        .unwrap_or(1);
    let spines_per_pod = up / m_ls;
    // Each spine has as many uplinks as down-links: the spine tier is non-blocking.
    let u2 = (slots * m_ls).min(spine_up);
    let Some(group_size) = divisors(u2).find(|g| n_pods * (u2 / g) <= k) else {
        let limit = u64::from(k).pow(3) / 4 * u64::from(down) / u64::from(k / 2);
        return Err(too_many(ctx.r, "a three-tier fat-tree", limit, host_ports));
    };
    let per_core = u2 / group_size;
    let n_cores = spines_per_pod * group_size;
    let cores: Vec<NodeId> = (0..n_cores)
        .map(|c| ctx.add_switch(f, Tier::Core, format!("{group}core{}", pad(c, n_cores))))
        .collect();
    for (p, pod) in pods.iter().enumerate() {
        let spines: Vec<NodeId> = (0..spines_per_pod)
            .map(|j| {
                ctx.add_switch(
                    f,
                    Tier::Spine,
                    format!("{group}pod{}-spine{}", p + 1, pad(j, spines_per_pod)),
                )
            })
            .collect();
        for (i, leaf) in pod.iter().enumerate() {
            let Some(leaf) = *leaf else { continue };
            for q in 0..up {
                let (j, t) = (q % spines_per_pod, q / spines_per_pod);
                let a = f.nth_port(leaf, down + q);
                let b = f.nth_port(spines[j as usize], i as u32 * m_ls + t);
                ctx.cable(f, a, b, LinkKind::LeafSpine);
            }
        }
        for (j, &spine) in spines.iter().enumerate() {
            for q in 0..u2 {
                let (g, t) = (q % group_size, q / group_size);
                let core = cores[(j as u32 * group_size + g) as usize];
                let a = f.nth_port(spine, spine_down + q);
                let b = f.nth_port(core, p as u32 * per_core + t);
                ctx.cable(f, a, b, LinkKind::SpineCore);
            }
        }
    }
    Ok(3)
}
