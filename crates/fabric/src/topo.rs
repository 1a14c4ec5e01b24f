//! Topology: how a fabric's tiers are shaped, counted and wired.
//!
//! Trees are folded Clos networks (Al-Fares et al., "A Scalable, Commodity Data Center Network
//! Architecture", SIGCOMM 2008): with radix-k switches two non-blocking tiers hold k^2/2 host ports and
//! three tiers k^3/4. Every tree is balanced: a leaf sends the same number of links to every spine it
//! uses, and a spine the same number to every core it uses. Scalable units and pods are provisioned
//! whole, so a partly filled unit still has all its leaves and uplinks and growing it needs no rewiring.
//!
//! A design's [`Shape`] fixes every number the tree needs: how many ports of a leaf face hosts and how
//! many face up, the scalable unit, and how leaves, spines and cores are grouped. The design search
//! (`crate::search`) picks the shape; [`counts`] is the one counting model (what the shape holds,
//! from numbers alone: the search ranks candidates with it and [`size`] bounds a design before it is
//! built), and the builders below wire exactly that shape (property-tested equal).

use crate::error::{err, BuildError};
use crate::graph::{
    Fabric, FabricMeta, LinkKind, Medium, NodeId, NodeKind, NodeSpec, PortId, Tier,
};
use crate::hardware::Resolved;
use crate::server::ServerTemplate;
use railyard_spec::{ClusterSpec, Topology};
use serde::Serialize;

pub use crate::graph::{MAX_LINKS, MAX_NODES, MAX_PORTS};
pub use crate::shape::{Pods, Shape, Upper};

/// The conventional leaf port split for a down:up ratio r on radix k: `up = floor(k / (1 + r))`,
/// `down = min(k - up, floor(up * r))`, so 64 ports give 32:32 at 1:1, 42:21 at 2:1, 48:16 at 3:1.
/// The search starts from it (the "conventional design" it compares against) but is not bound to it.
pub fn leaf_split(k: u32, oversubscription: f64) -> (u32, u32) {
    let up = ((f64::from(k) / (1.0 + oversubscription)).floor() as u32).max(1);
    let down = (k - up).min((f64::from(up) * oversubscription + 1e-9).floor() as u32);
    (down, up)
}

/// The fewest up-facing ports that keep `down` host-facing ports within a down:up ratio of `ratio`.
pub fn uplinks_for(down: u32, ratio: f64) -> u32 {
    // The ratio is an upper bound: down / up <= ratio, with a little slack for ratios such as 4/3.
    ((f64::from(down) / ratio) - 1e-9).ceil().max(1.0) as u32
}

/// Zero-padded index (1-based) wide enough for `count`, at least two digits: `spine05`.
pub fn pad(i: u32, count: u32) -> String {
    let width = count.max(1).to_string().len().max(2);
    format!("{:0width$}", i + 1)
}

/// Divisors of n, ascending.
pub(crate) fn divisors(n: u32) -> impl DoubleEndedIterator<Item = u32> {
    (1..=n).filter(move |d| n.is_multiple_of(*d))
}

/// What a design holds, counted from its numbers alone (the planes included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Counts {
    /// Network tiers: 1 (leaves only), 2 or 3.
    pub tiers: u32,
    pub leaves: u64,
    pub spines: u64,
    pub cores: u64,
    pub server_leaf: u64,
    pub leaf_spine: u64,
    pub spine_core: u64,
    pub inter_switch: u64,
}

impl Counts {
    pub fn switches(&self) -> u64 {
        self.leaves + self.spines + self.cores
    }

    pub fn network_links(&self) -> u64 {
        self.server_leaf + self.leaf_spine + self.spine_core + self.inter_switch
    }

    /// Bisection bandwidth at `gbps` per link, as [`Fabric::bisection_gbps`] computes it on the built
    /// fabric: the narrowest of half the host links and half of each tier boundary's links.
    pub fn bisection_gbps(&self, gbps: f64, two_switch_isl: bool) -> f64 {
        let mut b = self.server_leaf as f64 * gbps / 2.0;
        if self.tiers >= 2 {
            b = b.min(self.leaf_spine as f64 * gbps / 2.0);
        }
        if self.tiers >= 3 {
            b = b.min(self.spine_core as f64 * gbps / 2.0);
        }
        if two_switch_isl {
            b = b.min(self.inter_switch as f64 * gbps);
        }
        b
    }

    fn times(self, n: u64) -> Counts {
        Counts {
            tiers: self.tiers,
            leaves: self.leaves * n,
            spines: self.spines * n,
            cores: self.cores * n,
            server_leaf: self.server_leaf * n,
            leaf_spine: self.leaf_spine * n,
            spine_core: self.spine_core * n,
            inter_switch: self.inter_switch * n,
        }
    }
}

/// Checks the tiers above `units` x `rails` leaves with `up` uplinks each on radix `k` and counts
/// them: (spines, cores, leaf-spine links, spine-core links, tiers). `None` when the shape does not
/// fit the radix or is not balanced.
fn upper_counts(
    k: u32,
    up: u32,
    units: u64,
    rails: u32,
    upper: Upper,
) -> Option<(u64, u64, u64, u64, u32)> {
    let leaves = units * u64::from(rails);
    let k64 = u64::from(k);
    match upper {
        Upper::None => (leaves == 1 && up == 0).then_some((0, 0, 0, 0, 1)),
        Upper::Two { spines, links } => {
            let ok = spines >= 1
                && links >= 1
                && u64::from(spines) * u64::from(links) == u64::from(up)
                && leaves * u64::from(links) <= k64;
            ok.then(|| (u64::from(spines), 0, leaves * u64::from(up), 0, 2))
        }
        Upper::Three {
            pods,
            spines_per_pod,
            links,
            spine_up,
            group,
        } => {
            let (n_pods, slots) = pods.count(units, rails);
            let spine_down = slots * u64::from(links);
            let ok = spines_per_pod >= 1
                && links >= 1
                && group >= 1
                && u64::from(spines_per_pod) * u64::from(links) == u64::from(up)
                && spine_down >= 1
                && spine_down + u64::from(spine_up) <= k64
                && u64::from(spine_up) >= spine_down
                && spine_up.is_multiple_of(group)
                && n_pods * u64::from(spine_up / group) <= k64
                && n_pods >= 1;
            ok.then(|| {
                let spines = n_pods * u64::from(spines_per_pod);
                (
                    spines,
                    u64::from(spines_per_pod) * u64::from(group),
                    leaves * u64::from(up),
                    spines * u64::from(spine_up),
                    3,
                )
            })
        }
    }
}

/// One tree over `hosts` host ports (fat-tree, or one rail of rail-only): the shape's counts, or
/// `None` when it does not fit.
fn tree_counts(k: u32, hosts: u64, shape: &Shape) -> Option<Counts> {
    if shape.upper == Upper::None {
        // One switch holds everything.
        return (hosts <= u64::from(k) && hosts >= 1).then_some(Counts {
            tiers: 1,
            leaves: 1,
            server_leaf: hosts,
            ..Counts::default()
        });
    }
    if hosts <= u64::from(k) || shape.leaf_down == 0 || shape.leaf_down + shape.leaf_up > k {
        // A tree over hosts one switch holds would only add switches: the builder puts them on one.
        return None;
    }
    let leaves = hosts.div_ceil(u64::from(shape.leaf_down));
    let (spines, cores, leaf_spine, spine_core, tiers) =
        upper_counts(k, shape.leaf_up, leaves, 1, shape.upper)?;
    Some(Counts {
        tiers,
        leaves,
        spines,
        cores,
        server_leaf: hosts,
        leaf_spine,
        spine_core,
        inter_switch: 0,
    })
}

/// What a shape holds for a spec on radix-`k` switches: the one counting model of railyard's fabrics.
/// `None` when the shape does not fit the radix, is unbalanced or is not one the builders wire (the
/// search only offers shapes that fit; checks that name a field live there).
pub fn counts(spec: &ClusterSpec, k: u32, shape: &Shape) -> Option<Counts> {
    let s = &spec.servers;
    let servers = u64::from(s.count);
    let rails = s.compute_nics;
    let hosts = servers * u64::from(rails);
    let planes = u64::from(spec.fabric.planes);
    let one_plane = match spec.fabric.topology {
        Topology::SingleSwitch => (hosts <= u64::from(k)).then_some(Counts {
            tiers: 1,
            leaves: 1,
            server_leaf: hosts,
            ..Counts::default()
        })?,
        Topology::TwoSwitch => {
            // Odd HCAs (1-based) on switch 1: the larger half; with one HCA per server, odd
            // servers on switch 1 (`two_switch_side`).
            let most = if rails == 1 {
                servers.div_ceil(2)
            } else {
                servers * u64::from(rails.div_ceil(2))
            };
            let isl = isl_links(spec, most);
            if isl >= k || most > u64::from(k - isl) {
                return None;
            }
            Counts {
                tiers: 1,
                leaves: 2,
                server_leaf: hosts,
                inter_switch: u64::from(isl),
                ..Counts::default()
            }
        }
        Topology::FatTree => tree_counts(k, hosts, shape)?,
        Topology::RailOnly => tree_counts(k, servers, shape)?.times(u64::from(rails)),
        Topology::RailOptimized => {
            let su = shape.su_size?;
            if su == 0 || shape.leaf_down != su || su + shape.leaf_up > k {
                return None;
            }
            let units = servers.div_ceil(u64::from(su));
            let (spines, cores, leaf_spine, spine_core, tiers) =
                upper_counts(k, shape.leaf_up, units, rails, shape.upper)?;
            Counts {
                tiers,
                leaves: units * u64::from(rails),
                spines,
                cores,
                server_leaf: hosts,
                leaf_spine,
                spine_core,
                inter_switch: 0,
            }
        }
    };
    Some(one_plane.times(planes))
}

/// One network link's ends as the builders below wire a shape, without building it: servers by
/// index, leaves by their order among the leaves, spines and cores by their order among the switches
/// above the leaves (every spine, then every core), which is node order and how
/// `layout::place` places them. The design search prices shapes it has not built from these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    ServerLeaf { server: u32, leaf: u64 },
    LeafSpine { leaf: u64, spine: u64 },
    SpineCore { spine: u64, core: u64 },
}

/// The trees of a shape: one per plane, and per rail in rail-only designs; each with the same
/// switches. `None` for the one- and two-switch designs, which have no tree.
#[derive(Debug, Clone, Copy)]
struct Trees {
    count: u64,
    leaves: u64,
    spines: u64,
    cores: u64,
}

fn trees(spec: &ClusterSpec, c: &Counts) -> Option<Trees> {
    let per_plane = match spec.fabric.topology {
        Topology::SingleSwitch | Topology::TwoSwitch => return None,
        Topology::RailOnly => u64::from(spec.servers.compute_nics),
        Topology::FatTree | Topology::RailOptimized => 1,
    };
    let count = per_plane * u64::from(spec.fabric.planes);
    Some(Trees {
        count,
        leaves: c.leaves / count,
        spines: c.spines / count,
        cores: c.cores / count,
    })
}

/// The first server of every leaf, in leaf order (`None` without a tree; see [`Ends`]).
pub fn leaf_first_servers(spec: &ClusterSpec, shape: &Shape, c: &Counts) -> Option<Vec<u32>> {
    let t = trees(spec, c)?;
    let rails = spec.servers.compute_nics;
    let d = shape.leaf_down.max(1);
    let one: Vec<u32> = match spec.fabric.topology {
        // Leaves fill with NIC ports in server order, `leaf_down` each.
        Topology::FatTree => (0..t.leaves)
            .map(|i| (i * u64::from(d) / u64::from(rails)) as u32)
            .collect(),
        Topology::RailOnly => (0..t.leaves).map(|i| (i * u64::from(d)) as u32).collect(),
        // Every leaf of a unit starts at the unit's first server.
        _ => {
            let su = shape.su_size.unwrap_or(d).max(1);
            (0..t.leaves)
                .map(|i| (i / u64::from(rails)) as u32 * su)
                .collect()
        }
    };
    let mut all = Vec::with_capacity((t.leaves * t.count) as usize);
    for _ in 0..t.count {
        all.extend_from_slice(&one);
    }
    Some(all)
}

/// Visits every network link of a shape with how many links join the same ends (see [`Ends`]);
/// false without a tree.
pub fn each_link(
    spec: &ClusterSpec,
    shape: &Shape,
    c: &Counts,
    visit: &mut dyn FnMut(Ends, u64),
) -> bool {
    let Some(t) = trees(spec, c) else {
        return false;
    };
    let servers = spec.servers.count;
    let rails = spec.servers.compute_nics;
    let d = u64::from(shape.leaf_down.max(1));
    let su = u64::from(shape.su_size.unwrap_or(shape.leaf_down).max(1));
    let spines_total = t.spines * t.count;
    for tree in 0..t.count {
        let leaf0 = tree * t.leaves;
        // Server links, and the pod of each leaf (index within the tree).
        match spec.fabric.topology {
            Topology::FatTree => {
                for h in 0..u64::from(servers) * u64::from(rails) {
                    let leaf = if shape.upper == Upper::None { 0 } else { h / d };
                    let server = (h / u64::from(rails)) as u32;
                    visit(
                        Ends::ServerLeaf {
                            server,
                            leaf: leaf0 + leaf,
                        },
                        1,
                    );
                }
            }
            Topology::RailOnly => {
                for s in 0..u64::from(servers) {
                    let leaf = if shape.upper == Upper::None { 0 } else { s / d };
                    visit(
                        Ends::ServerLeaf {
                            server: s as u32,
                            leaf: leaf0 + leaf,
                        },
                        1,
                    );
                }
            }
            _ => {
                for s in 0..u64::from(servers) {
                    for r in 0..u64::from(rails) {
                        let leaf = (s / su) * u64::from(rails) + r;
                        visit(
                            Ends::ServerLeaf {
                                server: s as u32,
                                leaf: leaf0 + leaf,
                            },
                            1,
                        );
                    }
                }
            }
        }
        let spine0 = tree * t.spines;
        let core0 = spines_total + tree * t.cores;
        match shape.upper {
            Upper::None => {}
            Upper::Two { spines, links } => {
                for leaf in 0..t.leaves {
                    for j in 0..u64::from(spines) {
                        visit(
                            Ends::LeafSpine {
                                leaf: leaf0 + leaf,
                                spine: spine0 + j,
                            },
                            u64::from(links),
                        );
                    }
                }
            }
            Upper::Three {
                pods,
                spines_per_pod,
                links,
                spine_up,
                group,
            } => {
                let spp = u64::from(spines_per_pod);
                let r = u64::from(rails);
                let pod_of = |leaf: u64| match (spec.fabric.topology, pods) {
                    (Topology::RailOptimized, Pods::WholeRails { rails: per }) => {
                        (leaf % r) / u64::from(per.max(1))
                    }
                    (Topology::RailOptimized, Pods::WholeUnits { units: per }) => {
                        (leaf / r) / u64::from(per.max(1))
                    }
                    (_, Pods::InOrder { size }) => leaf / u64::from(size.max(1)),
                    // Not a shape the builders wire for this topology (`counts` refuses it).
                    _ => 0,
                };
                for leaf in 0..t.leaves {
                    let p = pod_of(leaf);
                    for j in 0..spp {
                        visit(
                            Ends::LeafSpine {
                                leaf: leaf0 + leaf,
                                spine: spine0 + p * spp + j,
                            },
                            u64::from(links),
                        );
                    }
                }
                let n_pods = t.spines / spp.max(1);
                let g = u64::from(group.max(1));
                let per_core = u64::from(spine_up) / g;
                for p in 0..n_pods {
                    for j in 0..spp {
                        for x in 0..g {
                            visit(
                                Ends::SpineCore {
                                    spine: spine0 + p * spp + j,
                                    core: core0 + j * g + x,
                                },
                                per_core,
                            );
                        }
                    }
                }
            }
        }
    }
    true
}

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

/// One server's nodes, ports and links (every server of a spec is alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerCounts {
    pub nodes: u64,
    pub ports: u64,
    pub links: u64,
}

impl ServerCounts {
    /// The counts of the spec's server, built once.
    pub fn of(r: &Resolved) -> ServerCounts {
        let template = ServerTemplate::new(&Fabric::new(meta(r, None)), r);
        let (nodes, ports, links) = template.counts();
        ServerCounts {
            nodes,
            ports,
            links,
        }
    }
}

impl DesignSize {
    /// The size of a design with these counts on radix-`k` switches.
    pub fn of(servers: u64, server: ServerCounts, c: &Counts, k: u32) -> DesignSize {
        let switches = c.switches();
        DesignSize {
            servers,
            switches,
            nodes: servers * server.nodes + switches,
            ports: servers * server.ports + switches * u64::from(k),
            links: servers * server.links + c.network_links(),
            network_links: c.network_links(),
        }
    }

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

/// The design's counts, computed from the spec's numbers and the chosen shape alone.
pub fn size(r: &Resolved) -> Result<DesignSize, BuildError> {
    let c = counts(r.spec, r.radix(), &r.shape).ok_or_else(|| {
        err(
            "fabric.topology",
            format!(
                "the shape {:?} does not fit {}-port {} for this spec",
                r.shape,
                r.radix(),
                r.switch.id
            ),
        )
    })?;
    Ok(DesignSize::of(
        u64::from(r.spec.servers.count),
        ServerCounts::of(r),
        &c,
        r.radix(),
    ))
}

fn meta(r: &Resolved, counts: Option<&Counts>) -> FabricMeta {
    let spec = r.spec;
    let s = &spec.servers;
    let f_spec = &spec.fabric;
    let su_size = r.shape.su_size;
    FabricMeta {
        name: spec.name.clone(),
        tech: f_spec.tech,
        topology: f_spec.topology.as_str().to_string(),
        switch_model: r.switch.id.clone(),
        port_mode: r.mode.name.clone(),
        nic_model: r.nic.id.clone(),
        gpu_model: r.gpu.id.clone(),
        tiers: counts.map_or(1, |c| c.tiers),
        planes: f_spec.planes,
        su_size,
        scalable_units: su_size.map(|su| s.count.div_ceil(su)),
        gpudirect: s.gpudirect,
        gpus_per_server: s.gpus_per_server,
        compute_nics_per_server: s.compute_nics,
        shape: Some(r.shape),
        oversubscription_requested: Some(f_spec.oversubscription),
        guids: Default::default(),
    }
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

    /// Ports of one cage of the switch model: a switch's uplinks go to the tier above a cage at a
    /// time ([`upper_tiers`]), so a twin-port cage meets one cage above and one twin-port cable
    /// can join them where the run is short enough for copper.
    fn cage(&self) -> u32 {
        self.r.switch.ports_per_cage(self.r.mode)
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

/// Wiring for the storage and management networks, which reuse the compute fabric's tiers.
pub(crate) struct Wiring<'a>(Ctx<'a>);

impl<'a> Wiring<'a> {
    /// Switches of `r`'s model, named with `prefix` (`storage-`).
    pub fn new(r: &'a Resolved<'a>, prefix: &str) -> Wiring<'a> {
        Wiring(Ctx {
            r,
            plane: 0,
            prefix: prefix.to_string(),
        })
    }

    pub fn switch(&self, f: &mut Fabric, tier: Tier, name: String) -> NodeId {
        self.0.add_switch(f, tier, name)
    }

    pub fn cable(&self, f: &mut Fabric, a: PortId, b: PortId, kind: LinkKind) {
        self.0.cable(f, a, b, kind);
    }

    /// Spines and cores above `leaves` (in leaf order), their uplinks on ports
    /// `leaf_down..leaf_down + leaf_up`, as the shape says.
    pub fn upper(&self, f: &mut Fabric, leaves: &[NodeId], shape: &Shape) {
        self.upper_spread(f, leaves, shape, 1);
    }

    /// [`Wiring::upper`] with a leaf's uplinks spread over the spines `cage` ports at a time:
    /// the ports of one multi-port cage go to one spine, onto ports of one cage there, so one
    /// twin-port cable can join them where the run is short enough for copper (round-robin by
    /// port sends a cage's two ports to two spines, which only transceivers and fibre can reach).
    /// Round-robin where the links from a leaf to a spine are not a multiple of `cage` or the
    /// uplinks do not start on a cage.
    pub fn upper_spread(&self, f: &mut Fabric, leaves: &[NodeId], shape: &Shape, cage: u32) {
        let pods = match shape.upper {
            Upper::Three {
                pods: Pods::InOrder { size },
                ..
            } => pods_in_order(leaves, size),
            _ => vec![leaves.iter().copied().map(Some).collect()],
        };
        upper_tiers(f, &self.0, leaves, shape, pods, "", cage);
    }
}

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
    let mut f = Fabric::new(meta(r, Some(&c)));
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
    let per_plane = s.count as usize * s.compute_nics as usize;
    let mut hosts: Vec<Vec<HostPort>> = vec![Vec::with_capacity(per_plane); f_spec.planes as usize];
    template.reserve(&mut f, s.count as usize);
    let su_size = shape
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

fn single_switch(f: &mut Fabric, ctx: &Ctx, hosts: &[HostPort]) {
    // `counts` checked that one switch holds every NIC port.
    let sw = ctx.add_switch(f, Tier::Leaf, "switch1".to_string());
    for (i, h) in hosts.iter().enumerate() {
        let p = f.nth_port(sw, i as u32);
        ctx.cable(f, h.port, p, LinkKind::ServerLeaf);
    }
}

/// Links between the two switches of a two-switch design whose fuller switch holds `most` host
/// ports: `fabric.isl_links` where given, else as many as the asked leaf oversubscription needs
/// (`most / ratio`, rounded up, at least one): the links are each switch's way to the other half
/// of the hosts, its uplinks.
pub fn isl_links(spec: &ClusterSpec, most: u64) -> u32 {
    spec.fabric.isl_links.unwrap_or_else(|| {
        let most = u32::try_from(most).unwrap_or(u32::MAX);
        uplinks_for(most, spec.fabric.oversubscription.max(1.0))
    })
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

/// Pods of `size` leaf slots, in leaf order; the last pod's empty slots are `None`.
fn pods_in_order(leaves: &[NodeId], size: u32) -> Vec<Vec<Option<NodeId>>> {
    leaves
        .chunks(size.max(1) as usize)
        .map(|c| {
            let mut v: Vec<Option<NodeId>> = c.iter().copied().map(Some).collect();
            v.resize(size.max(1) as usize, None);
            v
        })
        .collect()
}

/// Spines (and cores) above `leaves`, whose ports `leaf_down..leaf_down + leaf_up` go up, wired as
/// the shape says.
///
/// Two tiers: each leaf sends `links` links to each spine, so spine port `i x links + t` is leaf `i`'s
/// `t`-th link (the DGX SuperPOD H100 reference: 32 leaves x 32 uplinks -> 16 spines with 2 links from
/// every leaf).
///
/// Three tiers: every pod has the same number of spines, whose first `slots x links` ports face the
/// pod's leaves and the next `spine_up` face up; spine j of every pod connects to core group j, the
/// same number of links to every core of the group.
///
/// Both tiers spread a switch's uplinks `cage` ports at a time where they can: the ports of one
/// twin-port cage then meet one cage above, and one twin-port cable (DAC or active copper) can
/// join them where the run is short enough. Round-robin by port sent a cage's two ports to two
/// switches, which only a transceiver at each end and fibre can reach.
#[allow(clippy::too_many_arguments)]
fn upper_tiers(
    f: &mut Fabric,
    ctx: &Ctx,
    leaves: &[NodeId],
    shape: &Shape,
    pods: Vec<Vec<Option<NodeId>>>,
    group: &str,
    cage: u32,
) {
    let (down, up) = (shape.leaf_down, shape.leaf_up);
    // Uplink `q` of a switch whose uplinks start at port `first` goes to the `j`-th switch above
    // as its `t`-th link there: by cage where a cage's ports can all go to one switch and land on
    // one cage there (`links` a multiple of the cage, uplinks starting on a cage), else
    // round-robin by port.
    let spread = |q: u32, above: u32, links: u32, first: u32| {
        if cage > 1 && links.is_multiple_of(cage) && first.is_multiple_of(cage) {
            let c = q / cage;
            (c % above, (c / above) * cage + q % cage)
        } else {
            (q % above, q / above)
        }
    };
    match shape.upper {
        Upper::None => {}
        Upper::Two { spines, links } => {
            let spines_v: Vec<NodeId> = (0..spines)
                .map(|j| ctx.add_switch(f, Tier::Spine, format!("{group}spine{}", pad(j, spines))))
                .collect();
            for (i, &leaf) in leaves.iter().enumerate() {
                for q in 0..up {
                    let (j, t) = spread(q, spines, links, down);
                    let a = f.nth_port(leaf, down + q);
                    let b = f.nth_port(spines_v[j as usize], i as u32 * links + t);
                    ctx.cable(f, a, b, LinkKind::LeafSpine);
                }
            }
        }
        Upper::Three {
            spines_per_pod,
            links,
            spine_up,
            group: group_size,
            ..
        } => {
            let slots = pods.iter().map(Vec::len).max().unwrap_or(0) as u32;
            let spine_down = slots * links;
            let per_core = spine_up / group_size;
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
                        let (j, t) = spread(q, spines_per_pod, links, down);
                        let a = f.nth_port(leaf, down + q);
                        let b = f.nth_port(spines[j as usize], i as u32 * links + t);
                        ctx.cable(f, a, b, LinkKind::LeafSpine);
                    }
                }
                for (j, &spine) in spines.iter().enumerate() {
                    for q in 0..spine_up {
                        let (g, t) = spread(q, group_size, per_core, spine_down);
                        let core = cores[(j as u32 * group_size + g) as usize];
                        let a = f.nth_port(spine, spine_down + q);
                        let b = f.nth_port(core, p as u32 * per_core + t);
                        ctx.cable(f, a, b, LinkKind::SpineCore);
                    }
                }
            }
        }
    }
}
