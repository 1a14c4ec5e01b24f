//! Adding switches and cabling the tiers above the leaves, as a shape says: the compute fabric's
//! builders and the storage and management networks ([`Wiring`]) share it.

use crate::graph::{Fabric, LinkKind, Medium, NodeId, NodeKind, NodeSpec, PortId, Tier};
use crate::hardware::Resolved;
use crate::shape::{Pods, Shape, Upper};

/// Zero-padded index (1-based) wide enough for `count`, at least two digits: `spine05`.
pub fn pad(i: u32, count: u32) -> String {
    let width = count.max(1).to_string().len().max(2);
    format!("{:0width$}", i + 1)
}

/// What every switch builder needs.
pub(super) struct Ctx<'a> {
    pub r: &'a Resolved<'a>,
    pub plane: u32,
    /// Name prefix: `plane2-` when there are several planes, `rail3-` inside rail-only rails.
    pub prefix: String,
}

impl Ctx<'_> {
    pub fn k(&self) -> u32 {
        self.r.radix()
    }

    pub fn add_switch(&self, f: &mut Fabric, tier: Tier, name: String) -> NodeId {
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
    pub fn cage(&self) -> u32 {
        self.r.switch.ports_per_cage(self.r.mode)
    }

    pub fn cable(&self, f: &mut Fabric, a: PortId, b: PortId, kind: LinkKind) {
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

/// Pods of `size` leaf slots, in leaf order; the last pod's empty slots are `None`.
pub(super) fn pods_in_order(leaves: &[NodeId], size: u32) -> Vec<Vec<Option<NodeId>>> {
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
pub(super) fn upper_tiers(
    f: &mut Fabric,
    ctx: &Ctx,
    leaves: &[NodeId],
    shape: &Shape,
    pods: Vec<Vec<Option<NodeId>>>,
    group: &str,
    cage: u32,
) {
    let uplinks = Uplinks {
        cage,
        leaf_down: shape.leaf_down,
        leaf_up: shape.leaf_up,
    };
    match shape.upper {
        Upper::None => {}
        Upper::Two { spines, links } => {
            let spines_v: Vec<NodeId> = (0..spines)
                .map(|j| ctx.add_switch(f, Tier::Spine, format!("{group}spine{}", pad(j, spines))))
                .collect();
            for (i, &leaf) in leaves.iter().enumerate() {
                uplinks.cable_leaf(f, ctx, leaf, i as u32, &spines_v, links);
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
                    uplinks.cable_leaf(f, ctx, leaf, i as u32, &spines, links);
                }
                for (j, &spine) in spines.iter().enumerate() {
                    for q in 0..spine_up {
                        let (g, t) = uplinks.spread(q, group_size, per_core, spine_down);
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

/// How uplinks are spread over the switches above: a leaf's `leaf_up` uplinks start at port
/// `leaf_down`, and a switch's uplinks go `cage` ports at a time where they can ([`Uplinks::spread`]).
#[derive(Debug, Clone, Copy)]
struct Uplinks {
    cage: u32,
    leaf_down: u32,
    leaf_up: u32,
}

impl Uplinks {
    /// Uplink `q` of a switch whose uplinks start at port `first` goes to the `j`-th of `above`
    /// switches as its `t`-th of `links` links there: `(j, t)`. By cage where a cage's ports can
    /// all go to one switch and land on one cage there (`links` a multiple of the cage, uplinks
    /// starting on a cage), else round-robin by port.
    fn spread(self, q: u32, above: u32, links: u32, first: u32) -> (u32, u32) {
        let cage = self.cage;
        if cage > 1 && links.is_multiple_of(cage) && first.is_multiple_of(cage) {
            let c = q / cage;
            (c % above, (c / above) * cage + q % cage)
        } else {
            (q % above, q / above)
        }
    }

    /// Cables the uplinks of `leaf`, the `i`-th leaf slot under `spines`, `links` to each spine.
    fn cable_leaf(
        self,
        f: &mut Fabric,
        ctx: &Ctx,
        leaf: NodeId,
        i: u32,
        spines: &[NodeId],
        links: u32,
    ) {
        let (down, up) = (self.leaf_down, self.leaf_up);
        for q in 0..up {
            let (j, t) = self.spread(q, spines.len() as u32, links, down);
            let a = f.nth_port(leaf, down + q);
            let b = f.nth_port(spines[j as usize], i * links + t);
            ctx.cable(f, a, b, LinkKind::LeafSpine);
        }
    }
}
