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

/// Servers per scalable unit of a rail-optimized design (`None` for other topologies): as asked, or a
/// leaf's down-ports; a unit larger than that does not fit its leaves.
fn su_size(r: &Resolved, down: u32) -> Result<Option<u32>, BuildError> {
    let f_spec = &r.spec.fabric;
    if f_spec.topology != Topology::RailOptimized {
        return Ok(None);
    }
    let su = f_spec.su_size.unwrap_or(down);
    if su == 0 || su > down {
        return Err(err(
            "fabric.su_size",
            format!(
                "{su} servers per unit need {su} down-ports per leaf, but a {}-port {} leaf has {down} at oversubscription {}; valid: 1 to {down}",
                r.radix(), r.switch.id, f_spec.oversubscription
            ),
        ));
    }
    Ok(Some(su))
}

/// The most devices (servers' GPUs, NICs, PCIe switches and CPUs, and network switches) a fabric may
/// have. The largest design railyard is measured on (crates/plan/benches/xdr-16k.toml: 16,384 XDR
/// servers, 131,072 GPUs) has 0.37 million devices, 1.8 million ports and 0.86 million links and plans
/// in about 210 MB; the limits leave more than four times that room (about 1 GB at the limit) and keep
/// the arena's 32-bit ids far from overflow.
pub const MAX_NODES: u64 = 1 << 21;
/// The most ports a fabric may have (see [`MAX_NODES`]).
pub const MAX_PORTS: u64 = 1 << 23;
/// The most links (network cables and links inside servers) a fabric may have (see [`MAX_NODES`]).
pub const MAX_LINKS: u64 = 1 << 23;

/// What a design will hold, computed from the spec's counts before anything is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DesignSize {
    pub servers: u64,
    pub switches: u64,
    /// Every node: the servers' devices and the switches.
    pub nodes: u64,
    pub ports: u64,
    /// Every link: inside the servers and network cables.
    pub links: u64,
    pub network_links: u64,
}

impl DesignSize {
    /// Refuses a design past [`MAX_NODES`], [`MAX_PORTS`] or [`MAX_LINKS`], naming the server count
    /// that would fit.
    pub fn check(&self, r: &Resolved) -> Result<(), BuildError> {
        let over = [
            ("devices", self.nodes, MAX_NODES),
            ("ports", self.ports, MAX_PORTS),
            ("links", self.links, MAX_LINKS),
        ]
        .into_iter()
        .find(|&(_, have, limit)| have > limit);
        let Some((what, have, limit)) = over else {
            return Ok(());
        };
        // Every count grows about linearly with the servers.
        let fit = (u128::from(self.servers) * u128::from(limit) / u128::from(have.max(1))) as u64;
        Err(err(
            "servers.count",
            format!(
                "{} servers of {} GPUs and {} NICs make a fabric of {have} {what} on {}-port {} ({}), past railyard's limit of {limit} {what}; valid: at most about {fit} servers of this kind",
                self.servers,
                r.spec.servers.gpus_per_server,
                r.spec.servers.compute_nics,
                r.radix(),
                r.switch.id,
                r.mode.name,
            ),
        ))
    }
}

/// The tiers above `leaves` leaves, as [`upper_tiers`] wires them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UpperShape {
    /// Every leaf sends `m` links to each of `spines` spines.
    Two { m: u32, spines: u32 },
    /// Pods of leaves under `spines_per_pod` spines each (`m_ls` links from every leaf to each);
    /// every spine sends `u2` links up, spread over `group_size` cores of its group.
    Three {
        m_ls: u32,
        spines_per_pod: u32,
        u2: u32,
        group_size: u32,
    },
}

impl UpperShape {
    /// `leaves` leaves with `up` uplinks each, in `pods` pods of at most `slots` leaves; `None` when
    /// three tiers of radix `k` cannot hold them.
    fn new(k: u32, up: u32, leaves: u64, slots: u32, pods: u64) -> Option<UpperShape> {
        if leaves <= u64::from(k) {
            let m = divisors(up)
                .rev()
                .find(|m| leaves * u64::from(*m) <= u64::from(k))
                .unwrap_or(1);
            return Some(UpperShape::Two { m, spines: up / m });
        }
        let spine_down = k / 2;
        let spine_up = k - spine_down;
        let m_ls = divisors(up)
            .rev()
            .find(|m| u64::from(slots) * u64::from(*m) <= u64::from(spine_down))
            .unwrap_or(1);
        // Each spine has as many uplinks as down-links: the spine tier is non-blocking.
        let u2 = (slots.saturating_mul(m_ls)).min(spine_up);
        let group_size = divisors(u2).find(|g| pods * u64::from(u2 / g) <= u64::from(k))?;
        Some(UpperShape::Three {
            m_ls,
            spines_per_pod: up / m_ls,
            u2,
            group_size,
        })
    }

    /// Spine and core switches.
    fn switches(self, pods: u64) -> u64 {
        match self {
            UpperShape::Two { spines, .. } => u64::from(spines),
            UpperShape::Three {
                spines_per_pod,
                group_size,
                ..
            } => u64::from(spines_per_pod) * (u64::from(group_size) + pods),
        }
    }

    /// Leaf-spine and spine-core links.
    fn links(self, leaves: u64, up: u32, pods: u64) -> u64 {
        let leaf_spine = leaves * u64::from(up);
        match self {
            UpperShape::Two { .. } => leaf_spine,
            UpperShape::Three {
                spines_per_pod, u2, ..
            } => leaf_spine + pods * u64::from(spines_per_pod) * u64::from(u2),
        }
    }
}

/// How a rail-optimized design's leaves (`units` x `rails`) are grouped into pods of at most k/2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RailPods {
    /// Every unit fits one pod: pods hold whole rails (`rails_per_pod` of them), so same-rail traffic
    /// between units turns at a spine and never climbs to the core.
    WholeRails { rails_per_pod: u32, pods: u32 },
    /// Not even one unit fits a pod: pods of `size` leaves in leaf order.
    InOrder { size: u32 },
    /// A rail outgrows a pod, so same-rail traffic crosses the core anyway: pods hold whole units
    /// (as many as fit), which needs the fewest spines.
    WholeUnits { units_per_pod: u32, pods: u32 },
}

impl RailPods {
    fn new(k: u32, units: u32, rails: u32) -> RailPods {
        let spine_down = k / 2;
        if units <= spine_down {
            let rails_per_pod = (spine_down / units).min(rails);
            RailPods::WholeRails {
                rails_per_pod,
                pods: rails.div_ceil(rails_per_pod),
            }
        } else if rails > spine_down {
            RailPods::InOrder { size: spine_down }
        } else {
            let units_per_pod = (spine_down / rails).max(1);
            RailPods::WholeUnits {
                units_per_pod,
                pods: units.div_ceil(units_per_pod),
            }
        }
    }

    /// (pods, leaf slots per pod) for `units` x `rails` leaves.
    fn pods_and_slots(self, units: u32, rails: u32) -> (u64, u32) {
        match self {
            RailPods::WholeRails {
                rails_per_pod,
                pods,
            } => (u64::from(pods), rails_per_pod * units),
            RailPods::InOrder { size } => (
                (u64::from(units) * u64::from(rails)).div_ceil(u64::from(size)),
                size,
            ),
            RailPods::WholeUnits {
                units_per_pod,
                pods,
            } => (u64::from(pods), units_per_pod * rails),
        }
    }
}

/// A fat-tree over `hosts` host ports: (switches, network links), or `None` when three tiers of
/// radix `k` cannot hold them.
fn fat_tree_size(k: u32, down: u32, up: u32, hosts: u64) -> Option<(u64, u64)> {
    if hosts <= u64::from(k) {
        return Some((1, hosts));
    }
    let leaves = hosts.div_ceil(u64::from(down));
    let pods = leaves.div_ceil(u64::from(k / 2));
    let shape = UpperShape::new(k, up, leaves, k / 2, pods)?;
    Some((
        leaves + shape.switches(pods),
        hosts + shape.links(leaves, up, pods),
    ))
}

/// The design's counts and every check the topology builders make that needs no graph: too many NIC
/// ports for one or two switches or for three tiers, inter-switch links that leave no port.
fn design_size(
    r: &Resolved,
    template: &ServerTemplate,
    down: u32,
    up: u32,
    su_size: Option<u32>,
) -> Result<DesignSize, BuildError> {
    let s = &r.spec.servers;
    let k = r.radix();
    let servers = u64::from(s.count);
    let rails = s.compute_nics;
    let hosts = servers * u64::from(rails);
    let three_tiers = || three_tier_limit(r, down, hosts);
    let (switches, network_links) = match r.spec.fabric.topology {
        Topology::SingleSwitch => {
            if hosts > u64::from(k) {
                return Err(too_many(r, "one switch", u64::from(k), hosts));
            }
            (1, hosts)
        }
        Topology::TwoSwitch => {
            let isl = r.spec.fabric.isl_links;
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
            // Odd HCAs (1-based) on switch 1: the larger half.
            let most = servers * u64::from(rails.div_ceil(2));
            if most > u64::from(free) {
                return Err(too_many(
                    r,
                    &format!("two switches with {isl} inter-switch links"),
                    2 * u64::from(free),
                    hosts,
                ));
            }
            (2, hosts + u64::from(isl))
        }
        Topology::FatTree => fat_tree_size(k, down, up, hosts).ok_or_else(three_tiers)?,
        Topology::RailOnly => {
            let (sw, links) = fat_tree_size(k, down, up, servers).ok_or_else(three_tiers)?;
            (sw * u64::from(rails), links * u64::from(rails))
        }
        Topology::RailOptimized => {
            let su = su_size.unwrap_or(down);
            let units = s.count.div_ceil(su);
            let leaves = u64::from(units) * u64::from(rails);
            let (pods, slots) = RailPods::new(k, units, rails).pods_and_slots(units, rails);
            let shape = UpperShape::new(k, up, leaves, slots, pods).ok_or_else(three_tiers)?;
            (
                leaves + shape.switches(pods),
                hosts + shape.links(leaves, up, pods),
            )
        }
    };
    let planes = u64::from(r.spec.fabric.planes);
    let (switches, network_links) = (switches * planes, network_links * planes);
    let (nodes, ports, links) = template.counts();
    Ok(DesignSize {
        servers,
        switches,
        nodes: servers * nodes + switches,
        ports: servers * ports + switches * u64::from(k),
        links: servers * links + network_links,
        network_links,
    })
}

/// The design's counts, computed from the spec's numbers alone, with the checks that need no graph.
pub fn size(r: &Resolved) -> Result<DesignSize, BuildError> {
    let (down, up) = leaf_split(r.radix(), r.spec.fabric.oversubscription);
    let su_size = su_size(r, down)?;
    let f = Fabric::new(FabricMeta {
        name: String::new(),
        tech: r.spec.fabric.tech,
        topology: String::new(),
        switch_model: r.switch.id.clone(),
        port_mode: r.mode.name.clone(),
        nic_model: r.nic.id.clone(),
        gpu_model: r.gpu.id.clone(),
        tiers: 1,
        planes: r.spec.fabric.planes,
        su_size,
        scalable_units: None,
        gpudirect: r.spec.servers.gpudirect,
        gpus_per_server: r.spec.servers.gpus_per_server,
        compute_nics_per_server: r.spec.servers.compute_nics,
    });
    design_size(r, &ServerTemplate::new(&f, r), down, up, su_size)
}

/// Builds servers and switches and cables everything; cable types come later from the layout.
pub fn build_topology(r: &Resolved) -> Result<Fabric, BuildError> {
    let spec = r.spec;
    let s = &spec.servers;
    let f_spec = &spec.fabric;
    let k = r.radix();
    let (down, up) = leaf_split(k, f_spec.oversubscription);

    let su_size = su_size(r, down)?;
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
    let template = ServerTemplate::new(&f, r);
    // Bounded before building: the design's counts, from the spec's numbers alone, must fit.
    design_size(r, &template, down, up, su_size)?.check(r)?;

    // Servers first, so server nodes come before switches in the arena.
    let per_plane = s.count as usize * s.compute_nics as usize;
    let mut hosts: Vec<Vec<HostPort>> = vec![Vec::with_capacity(per_plane); f_spec.planes as usize];
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

/// Too many NIC ports for three tiers of this radix (k^3/4 host ports at 1:1, Al-Fares et al.).
fn three_tier_limit(r: &Resolved, down: u32, host_ports: u64) -> BuildError {
    let k = u64::from(r.radix());
    let limit = k.pow(3) / 4 * u64::from(down) / (k / 2).max(1);
    too_many(r, "a three-tier fat-tree", limit, host_ports)
}

fn single_switch(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort]) -> Result<u32, BuildError> {
    // `design_size` checked that one switch holds every NIC port.
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
    // `design_size` checked that the inter-switch links leave room for every NIC port.
    let isl = ctx.r.spec.fabric.isl_links;
    let free = ctx.k() - isl;
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
    let pods: Vec<Vec<Option<NodeId>>> = match RailPods::new(ctx.k(), units, rails) {
        RailPods::WholeRails {
            rails_per_pod,
            pods,
        } => (0..pods)
            .map(|p| {
                let mut slots = Vec::with_capacity((rails_per_pod * units) as usize);
                for rail in p * rails_per_pod..(p + 1) * rails_per_pod {
                    for u in 0..units {
                        slots.push((rail < rails).then(|| leaves[u as usize][rail as usize]));
                    }
                }
                slots
            })
            .collect(),
        RailPods::InOrder { size } => {
            let flat: Vec<NodeId> = leaves.iter().flatten().copied().collect();
            pods_in_order(&flat, size)
        }
        RailPods::WholeUnits {
            units_per_pod,
            pods,
        } => (0..pods)
            .map(|p| {
                let mut slots = Vec::with_capacity((units_per_pod * rails) as usize);
                for u in p * units_per_pod..(p + 1) * units_per_pod {
                    for rail in 0..rails {
                        slots.push((u < units).then(|| leaves[u as usize][rail as usize]));
                    }
                }
                slots
            })
            .collect(),
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
    let slots = pods.iter().map(Vec::len).max().unwrap_or(0) as u32;
    let shape = UpperShape::new(k, up, u64::from(n), slots, pods.len() as u64)
        .ok_or_else(|| three_tier_limit(ctx.r, down, host_ports))?;
    let (m_ls, spines_per_pod, u2, group_size, per_core, n_cores) = match shape {
        UpperShape::Two {
            m,
            spines: spines_n,
        } => {
            let spines: Vec<NodeId> = (0..spines_n)
                .map(|j| {
                    ctx.add_switch(f, Tier::Spine, format!("{group}spine{}", pad(j, spines_n)))
                })
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
        UpperShape::Three {
            m_ls,
            spines_per_pod,
            u2,
            group_size,
        } => (
            m_ls,
            spines_per_pod,
            u2,
            group_size,
            u2 / group_size,
            spines_per_pod * group_size,
        ),
    };
    let spine_down = k / 2;
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
