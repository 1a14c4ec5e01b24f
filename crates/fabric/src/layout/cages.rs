//! Links that share multi-port cages: how such a group can be cabled ([`GroupForm`]: straight,
//! twin-port, splitter or only optics), the groups of a built fabric ([`shared_cage_groups`]) and
//! the straight cables left in shared cages ([`CageCables`]).

use crate::graph::{CageIndex, Fabric, Medium, NodeId, UnionFind};
use railyard_catalog::{CableForm, Catalog};
use std::collections::{BTreeMap, HashMap};

/// How the links of one group (those sharing multi-port cages, see [`cable`](super::cable)) can be cabled
/// directly: the layout's rule that a cable's plugs must fit the cages at its ends. The one
/// classifier of shared cages: the layout chooses parts by it, and the plan flags straight cables
/// left in shared cages by it ([`shared_cage_groups`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupForm {
    /// One link, whose cages carry nothing else: a straight cable.
    Single,
    /// One cable for the group: both ends' cages carry the same links (twin), or one cage carries
    /// them all and every other end carries one link (splitter); `ports` is that cage's size.
    Assembly { form: CableForm, ports: u32 },
    /// A cage's links go to cages that carry other links too: no cable fits, only transceivers.
    Mesh,
}

impl GroupForm {
    /// The form of a group from its links' ends and the links through each cage slot.
    pub(super) fn of<'e>(group: impl Iterator<Item = &'e [End; 2]>, links_in: &[u32]) -> GroupForm {
        // The cages that carry more than one link: up to two are told apart, a third is a mesh.
        let mut multi: [Option<&End>; 2] = [None, None];
        let mut more = false;
        let mut twin = true;
        let mut splitter = true;
        let mut n = 0;
        for e in group {
            n += 1;
            let [a, b] = e.map(|end| links_in[end.slot as usize] > 1);
            for (end, shared) in e.iter().zip([a, b]) {
                if !shared || multi.iter().flatten().any(|m| m.slot == end.slot) {
                    continue;
                }
                match multi.iter_mut().find(|m| m.is_none()) {
                    Some(free) => *free = Some(end),
                    None => more = true,
                }
            }
            twin &= a && b;
            splitter &= a != b;
        }
        match multi {
            _ if n == 1 => GroupForm::Single,
            _ if more => GroupForm::Mesh,
            [Some(x), Some(y)] if twin && x.cage_size == y.cage_size => GroupForm::Assembly {
                form: CableForm::Twin,
                ports: x.cage_size,
            },
            [Some(x), None] if splitter => GroupForm::Assembly {
                form: CableForm::Splitter,
                ports: x.cage_size,
            },
            _ => GroupForm::Mesh,
        }
    }
}

/// What cabling needs to know of one end of a network link.
#[derive(Debug, Clone, Copy)]
pub(super) struct End {
    pub(super) node: NodeId,
    pub(super) cage: u32,
    /// [`CageIndex`] slot of the end's cage.
    pub(super) slot: u32,
    /// Ports sharing that cage.
    pub(super) cage_size: u32,
}

/// The links that share multi-port cages, grouped: links that share a cage must share a kind of
/// medium (one twin-port or splitter cable, or a transceiver per cage).
pub(super) struct CageGroups {
    /// The cages links pass through; each end's `slot` indexes them.
    pub(super) cages: CageIndex,
    /// Per link, its group: the smallest link index of the group (links ascend with their ids, so
    /// that is the group's first link).
    pub(super) root: Vec<u32>,
    /// Per cage slot, the links through it: a cage that carries more than one decides how its
    /// group is cabled ([`GroupForm::of`]).
    pub(super) links_in: Vec<u32>,
}

impl CageGroups {
    /// Groups the links whose ends are `ends` (on nodes `0..nodes`), setting each end's slot.
    pub(super) fn of(nodes: usize, ends: &mut [[End; 2]]) -> CageGroups {
        let cages = CageIndex::of(nodes, ends.iter().flatten().map(|e| (e.node, e.cage)));
        for end in ends.iter_mut().flatten() {
            end.slot = cages
                .slot(end.node, end.cage)
                .expect("every end's cage is indexed") as u32;
        }
        let mut uf = UnionFind::new(ends.len());
        let mut cage_first = vec![u32::MAX; cages.len()];
        let mut links_in = vec![0u32; cages.len()];
        for (i, e) in ends.iter().enumerate() {
            for end in e {
                links_in[end.slot as usize] += 1;
                if end.cage_size > 1 {
                    let first = &mut cage_first[end.slot as usize];
                    if *first == u32::MAX {
                        *first = i as u32;
                    }
                    uf.union(*first, i as u32);
                }
            }
        }
        let root = (0..ends.len() as u32).map(|i| uf.find(i)).collect();
        CageGroups {
            cages,
            root,
            links_in,
        }
    }
}

/// Links given a straight direct cable (one link per cable) where a cage at one end carries more
/// than one link (twin-port OSFP on NDR and XDR switches and DGX servers, four 200GbE ports per
/// SN5600 cage), which such a cage cannot take: it needs a twin-port cable where every link of the
/// cage goes to one cage of as many (`twin`), a splitter where they go to as many single-port cages
/// (`splitter`), and transceivers with fibre where they go to different multi-port cages
/// (`optics`). The layout chooses those parts (`layout::cable`) wherever the catalog has any for
/// the cage's size; where it has none (four 200GbE or 100GbE ports per SN5600 cage), or in a fabric
/// read from a file written before the layout chose them, straight cables remain and are counted
/// here so they are not ordered as is.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CageCables {
    pub twin: u64,
    pub splitter: u64,
    pub optics: u64,
}

impl CageCables {
    pub fn links(&self) -> u64 {
        self.twin + self.splitter + self.optics
    }
}

/// [`CageCables`] of the network links of `f`: the straight cables of each group of links that
/// share multi-port cages, by the form the group takes ([`shared_cage_groups`], the
/// layout's own rule). The search passes over a design with any (`search::design`).
pub fn shared_cage_cables(f: &Fabric, catalog: &Catalog) -> Option<CageCables> {
    let straight = |m: &Medium| match m {
        Medium::Cable { part, .. } => catalog
            .cables
            .get(&**part)
            .is_none_or(|c| c.form == CableForm::Straight),
        _ => false,
    };
    // Most large fabrics are all optics: nothing to look at.
    if !f.network_links().any(|(_, l)| straight(&l.medium)) {
        return None;
    }
    let net = f.cables();
    let mut c = CageCables::default();
    for (form, links) in shared_cage_groups(f) {
        let n = links
            .iter()
            .filter(|&&i| straight(&f.link(net[i as usize]).medium))
            .count() as u64;
        match form {
            GroupForm::Assembly {
                form: CableForm::Twin,
                ..
            } => c.twin += n,
            GroupForm::Assembly {
                form: CableForm::Splitter,
                ..
            } => c.splitter += n,
            _ => c.optics += n,
        }
    }
    (c.links() > 0).then_some(c)
}

/// The network links of a built fabric that share multi-port cages, grouped as [`cable`](super::cable) groups
/// them, each group with the form a direct cable must take; links alone in their cages are left
/// out. Links are indexes into [`Fabric::cables`] (cabling.csv order). The cage sizes are read
/// from the fabric: the ports each cage holds (a switch's ports with that cage number; a server's
/// NIC ports that leave through it, [`Fabric::cage_holder`]).
pub fn shared_cage_groups(f: &Fabric) -> Vec<(GroupForm, Vec<u32>)> {
    let mut ends: Vec<[End; 2]> = f
        .network_links()
        .map(|(_, l)| {
            [l.a, l.b].map(|p| {
                let (node, cage) = f.cage_holder(p);
                End {
                    node,
                    cage,
                    slot: 0,
                    cage_size: 0,
                }
            })
        })
        .collect();
    let mut size: HashMap<(NodeId, u32), u32> = ends
        .iter()
        .flatten()
        .map(|e| ((e.node, e.cage), 0))
        .collect();
    for node in &f.nodes {
        // A NIC's last port is its PCIe attachment; the ones before it face the network.
        let ports = match node.kind {
            crate::graph::NodeKind::Nic { .. } => node.num_ports.saturating_sub(1),
            _ if node.is_switch() => node.num_ports,
            _ => 0,
        };
        for p in node.ports().take(ports as usize) {
            if let Some(n) = size.get_mut(&f.cage_holder(p)) {
                *n += 1;
            }
        }
    }
    for e in ends.iter_mut().flatten() {
        e.cage_size = size[&(e.node, e.cage)];
    }
    let g = CageGroups::of(f.nodes.len(), &mut ends);
    let mut members: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, &root) in g.root.iter().enumerate() {
        members.entry(root).or_default().push(i as u32);
    }
    members
        .into_values()
        .filter_map(|links| {
            let form = GroupForm::of(links.iter().map(|&i| &ends[i as usize]), &g.links_in);
            (form != GroupForm::Single).then_some((form, links))
        })
        .collect()
}
