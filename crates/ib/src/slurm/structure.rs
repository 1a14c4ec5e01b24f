//! The tree Slurm sees in a fabric: switches grouped into what Slurm's topology/tree can hold.
//!
//! Slurm's tree keeps each node under one leaf switch ("Topology.conf can only represent a
//! hierarchical network", topology.conf(5) of Slurm 22.05; a node listed under two leaves draws
//! `WARNING: Multiple leaf switches contain nodes`). In a rail-optimized scalable unit every
//! server has one NIC on each of the unit's rail leaves, so the leaves that serve the same servers
//! are one Slurm leaf: a job inside the unit crosses only them, whatever the rails. Above, the
//! switches whose children are the same groups are one Slurm switch (every spine of a two-tier
//! SuperPOD reaches every unit, so they are one switch to Slurm). NVIDIA's topograph reduces a
//! discovered InfiniBand tree the same way (switches with the same children are one).
//!
//! Everything here works on node ids; names are given in [`super`].

use railyard_fabric::import::natural_cmp;
use railyard_fabric::{Fabric, NodeId, NodeKind};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A Slurm switch: fabric switches Slurm cannot tell apart.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    /// The fabric switches, in natural order of their names.
    pub members: Vec<NodeId>,
    /// The servers below (leaf groups only), by index, in natural order of their names.
    pub servers: Vec<u32>,
    /// The groups below (upper groups only).
    pub children: BTreeSet<usize>,
    /// 0 for a leaf group; one more than its highest child above.
    pub level: u32,
    /// The rate of the links to its children (servers' NICs for a leaf group), Gb/s.
    pub gbps: Vec<f64>,
    /// A switch railyard adds above top switches that are joined only by links between
    /// themselves (the two switches of a two-switch design): without a common parent Slurm
    /// runs no job across them.
    pub joined: bool,
}

/// The fabric as Slurm's tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Structure {
    /// Leaf groups first, then each level above, each in natural order of its first member.
    pub groups: Vec<Group>,
    /// Servers no compute NIC of which is cabled to a switch.
    pub unplaced: Vec<u32>,
    /// Servers whose NICs reach leaves that serve other servers too, but not all the same ones
    /// (a fat-tree whose leaves split a server's NICs): each is under the leaf with most of its NIC
    /// links (ties: the first built).
    pub straddling: Vec<u32>,
    /// Top groups that no link joins: separate networks.
    pub networks: usize,
}

/// A union-find over node indices.
struct Sets(Vec<u32>);

impl Sets {
    fn new(n: usize) -> Sets {
        Sets((0..n as u32).collect())
    }
    fn find(&mut self, mut i: u32) -> u32 {
        while self.0[i as usize] != i {
            let up = self.0[self.0[i as usize] as usize];
            self.0[i as usize] = up;
            i = up;
        }
        i
    }
    fn union(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.0[a.max(b) as usize] = a.min(b);
        }
    }
}

/// One network link seen from its ends: a server's NIC and a switch, or two switches.
enum Ends {
    Nic { server: u32, switch: NodeId },
    Switches(NodeId, NodeId),
}

fn ends(f: &Fabric) -> impl Iterator<Item = (Ends, f64)> + '_ {
    f.links
        .iter()
        .filter(|l| l.kind.is_network())
        .filter_map(|l| {
            let (a, b) = (f.port(l.a).node, f.port(l.b).node);
            let (na, nb) = (f.node(a), f.node(b));
            let nic = |n: &railyard_fabric::Node| match (n.kind, n.server) {
                (NodeKind::Nic { .. }, Some(s)) => Some(s),
                _ => None,
            };
            let e = match (nic(na), nic(nb), na.is_switch(), nb.is_switch()) {
                (Some(server), _, _, true) => Ends::Nic { server, switch: b },
                (_, Some(server), true, _) => Ends::Nic { server, switch: a },
                (_, _, true, true) => Ends::Switches(a, b),
                _ => return None,
            };
            Some((e, l.gbps))
        })
}

fn by_name(f: &Fabric) -> impl Fn(&NodeId, &NodeId) -> std::cmp::Ordering + '_ {
    |a, b| natural_cmp(&f.node(*a).name, &f.node(*b).name).then(a.cmp(b))
}

/// The leaf groups: leaves that serve the same servers, with those servers.
fn leaf_groups(f: &Fabric) -> (Vec<Group>, Vec<u32>, Vec<u32>) {
    // Each server's leaves, with the NIC links to each.
    let mut leaves_of: Vec<BTreeMap<NodeId, u32>> = vec![BTreeMap::new(); f.servers.len()];
    for (e, _) in ends(f) {
        if let Ends::Nic { server, switch } = e {
            *leaves_of[server as usize].entry(switch).or_default() += 1;
        }
    }
    let mut sets = Sets::new(f.nodes.len());
    for leaves in &leaves_of {
        let ids: Vec<u32> = leaves.keys().map(|n| n.0).collect();
        for w in ids.windows(2) {
            sets.union(w[0], w[1]);
        }
    }
    // Servers by the component of their leaves.
    let mut components: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for (s, leaves) in leaves_of.iter().enumerate() {
        match leaves.keys().next() {
            Some(first) => components
                .entry(sets.find(first.0))
                .or_default()
                .push(s as u32),
            None => unplaced.push(s as u32),
        }
    }
    let mut straddling = Vec::new();
    let mut groups: Vec<(Vec<NodeId>, Vec<u32>)> = Vec::new();
    for servers in components.into_values() {
        let first: Vec<NodeId> = leaves_of[servers[0] as usize].keys().copied().collect();
        if servers
            .iter()
            .all(|&s| leaves_of[s as usize].keys().eq(first.iter()))
        {
            groups.push((first, servers));
            continue;
        }
        // Leaves that split servers: each server under the leaf holding most of its NIC links.
        let mut home: BTreeMap<NodeId, Vec<u32>> = BTreeMap::new();
        for s in servers {
            let leaves = &leaves_of[s as usize];
            let most = leaves.values().copied().max().unwrap_or(0);
            let leaf = leaves
                .iter()
                .find(|&(_, &n)| n == most)
                .map(|(&l, _)| l)
                .expect("a server with leaves");
            if leaves.len() > 1 {
                straddling.push(s);
            }
            home.entry(leaf).or_default().push(s);
        }
        groups.extend(home.into_iter().map(|(l, s)| (vec![l], s)));
    }
    let order = by_name(f);
    let server_order = |a: &u32, b: &u32| {
        natural_cmp(&f.servers[*a as usize].name, &f.servers[*b as usize].name).then(a.cmp(b))
    };
    let mut out: Vec<Group> = groups
        .into_iter()
        .map(|(mut members, mut servers)| {
            members.sort_by(&order);
            servers.sort_by(server_order);
            Group {
                members,
                servers,
                children: BTreeSet::new(),
                level: 0,
                gbps: Vec::new(),
                joined: false,
            }
        })
        .collect();
    out.sort_by(|a, b| order(&a.members[0], &b.members[0]));
    straddling.sort_by(server_order);
    (out, unplaced, straddling)
}

/// The fabric as Slurm's tree: leaf groups, the groups above them by hop distance from the
/// leaves (switches with the same child groups are one), and a joining switch above top groups
/// that only links between them join.
pub(crate) fn structure(f: &Fabric) -> Structure {
    let (mut groups, unplaced, straddling) = leaf_groups(f);
    let mut group_of: Vec<Option<usize>> = vec![None; f.nodes.len()];
    for (g, group) in groups.iter().enumerate() {
        for m in &group.members {
            group_of[m.0 as usize] = Some(g);
        }
    }
    // Switches cabled to a NIC are leaves: one in no group (its servers went to other leaves)
    // is left out, so it never sits above the groups it shares spines with.
    let mut is_leaf = vec![false; f.nodes.len()];
    let mut switch_links: Vec<Vec<NodeId>> = vec![Vec::new(); f.nodes.len()];
    for (e, gbps) in ends(f) {
        match e {
            Ends::Nic { switch, .. } => {
                is_leaf[switch.0 as usize] = true;
                if let Some(g) = group_of[switch.0 as usize] {
                    groups[g].gbps.push(gbps);
                }
            }
            Ends::Switches(a, b) => {
                switch_links[a.0 as usize].push(b);
                switch_links[b.0 as usize].push(a);
            }
        }
    }
    let depth = depths(&groups, &switch_links, &is_leaf);
    let max_depth = depth.iter().flatten().copied().max().unwrap_or(0);
    for d in 1..=max_depth {
        let first = groups.len();
        let level = level_groups(f, d, &depth, &switch_links, &groups, &group_of);
        for (k, g) in level.iter().enumerate() {
            for m in &g.members {
                group_of[m.0 as usize] = Some(first + k);
            }
        }
        groups.extend(level);
    }
    // Link rates to children.
    for (e, gbps) in ends(f) {
        let Ends::Switches(a, b) = e else { continue };
        let (ga, gb) = (group_of[a.0 as usize], group_of[b.0 as usize]);
        if let (Some(ga), Some(gb)) = (ga, gb) {
            if groups[ga].children.contains(&gb) {
                groups[ga].gbps.push(gbps);
            } else if groups[gb].children.contains(&ga) {
                groups[gb].gbps.push(gbps);
            }
        }
    }
    let networks = join_tops(f, &mut groups, &group_of);
    Structure {
        groups,
        unplaced,
        straddling,
        networks,
    }
}

/// Hop distance of every switch from the leaf groups' members, through switches that are not
/// leaves.
fn depths(groups: &[Group], switch_links: &[Vec<NodeId>], is_leaf: &[bool]) -> Vec<Option<u32>> {
    let mut depth: Vec<Option<u32>> = vec![None; switch_links.len()];
    let mut queue: VecDeque<NodeId> = VecDeque::new();
    for g in groups {
        for &m in &g.members {
            depth[m.0 as usize] = Some(0);
            queue.push_back(m);
        }
    }
    while let Some(n) = queue.pop_front() {
        let d = depth[n.0 as usize].unwrap_or(0);
        for &m in &switch_links[n.0 as usize] {
            if depth[m.0 as usize].is_none() && !is_leaf[m.0 as usize] {
                depth[m.0 as usize] = Some(d + 1);
                queue.push_back(m);
            }
        }
    }
    depth
}

/// The groups of the switches `d` hops from the leaves: those that reach the same groups one hop
/// down are one, in natural order of their first member.
fn level_groups(
    f: &Fabric,
    d: u32,
    depth: &[Option<u32>],
    switch_links: &[Vec<NodeId>],
    groups: &[Group],
    group_of: &[Option<usize>],
) -> Vec<Group> {
    let mut by_children: BTreeMap<BTreeSet<usize>, Vec<NodeId>> = BTreeMap::new();
    for (i, dep) in depth.iter().enumerate() {
        if *dep != Some(d) {
            continue;
        }
        let children: BTreeSet<usize> = switch_links[i]
            .iter()
            .filter(|m| depth[m.0 as usize].is_some_and(|x| x < d))
            .filter_map(|m| group_of[m.0 as usize])
            .collect();
        by_children
            .entry(children)
            .or_default()
            .push(NodeId(i as u32));
    }
    let order = by_name(f);
    let mut level: Vec<Group> = by_children
        .into_iter()
        .map(|(children, mut members)| {
            members.sort_by(&order);
            let level = 1 + children.iter().map(|&c| groups[c].level).max().unwrap_or(0);
            Group {
                members,
                servers: Vec::new(),
                children,
                level,
                gbps: Vec::new(),
                joined: false,
            }
        })
        .collect();
    level.sort_by(|a, b| order(&a.members[0], &b.members[0]));
    level
}

/// Adds a joining group above top groups that links join (and only links between switches of the
/// same distance from the leaves, which the tree leaves out); returns the number of separate
/// networks the tops are in.
fn join_tops(f: &Fabric, groups: &mut Vec<Group>, group_of: &[Option<usize>]) -> usize {
    let mut is_child = vec![false; groups.len()];
    for g in groups.iter() {
        for &c in &g.children {
            is_child[c] = true;
        }
    }
    let tops: Vec<usize> = (0..groups.len()).filter(|&g| !is_child[g]).collect();
    let mut sets = Sets::new(f.nodes.len());
    let mut between: Vec<(NodeId, NodeId, f64)> = Vec::new();
    for (e, gbps) in ends(f) {
        if let Ends::Switches(a, b) = e {
            sets.union(a.0, b.0);
            between.push((a, b, gbps));
        }
    }
    let mut networks: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for &t in &tops {
        let root = sets.find(groups[t].members[0].0);
        networks.entry(root).or_default().push(t);
    }
    let count = networks.len();
    for joined in networks.into_values().filter(|t| t.len() > 1) {
        let mut members: Vec<NodeId> = joined
            .iter()
            .flat_map(|&t| groups[t].members.iter().copied())
            .collect();
        members.sort_by(by_name(f));
        let children: BTreeSet<usize> = joined.iter().copied().collect();
        let gbps = between
            .iter()
            .filter(|(a, b, _)| {
                let (ga, gb) = (group_of[a.0 as usize], group_of[b.0 as usize]);
                ga != gb
                    && ga.is_some_and(|g| children.contains(&g))
                    && gb.is_some_and(|g| children.contains(&g))
            })
            .map(|&(_, _, r)| r)
            .collect();
        let level = 1 + joined.iter().map(|&t| groups[t].level).max().unwrap_or(0);
        groups.push(Group {
            members,
            servers: Vec::new(),
            children,
            level,
            gbps,
            joined: true,
        });
    }
    count
}
