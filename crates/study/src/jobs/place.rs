//! Where a scheduler puts a job: the fabric as Slurm's topology/tree sees it (the leaf groups and
//! switches `railyard export slurm` writes), and the placement policies behind one small trait.
//!
//! - [`TopologyBestFit`]: Slurm's topology/tree allocation: "identify the lowest level switch in
//!   the hierarchy that can satisfy a job's request and then allocate resources on its underlying
//!   leaf switches using a best-fit algorithm" (Slurm Topology Guide,
//!   <https://slurm.schedmd.com/topology.html>, "Tree Topology"). topology/block does the same
//!   with base blocks in place of leaf switches ("Block Topology": the smallest aggregation of
//!   blocks that fits, best fit within it); on the designs the collective model simulates, a
//!   leaf group (a scalable unit's rail leaves) is the block, so one policy serves both.
//! - [`Contiguous`]: the first run of consecutive free servers in scalable-unit order, as a
//!   scheduler that packs nodes in order without a topology plugin would take them.
//! - [`Scattered`]: free servers drawn at random (seeded SplitMix64): the fragmented placement
//!   of a long-running cluster.
//! - Explicit: a job's own `servers` in the mix, checked free (not a policy: it wins over one).
//!
//! "Jobs can only span nodes connected by the same switch fabric" (topology.conf(5)): every
//! policy keeps a job inside one network.

use railyard_fabric::Fabric;
use railyard_ib::slurm;
use std::collections::BTreeMap;

/// The fabric as placement sees it: servers by index, leaf groups and Slurm switches above them.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// Per Slurm switch (leaves first, then each level up), the servers below it, ascending.
    pub switch_servers: Vec<Vec<usize>>,
    pub switch_level: Vec<u32>,
    pub switch_names: Vec<String>,
    /// Per server, its leaf group (index into the switches) and network (top switch).
    pub leaf_of: Vec<usize>,
    pub network_of: Vec<usize>,
    /// Servers in placement order: leaf group by leaf group, each in name order.
    pub order: Vec<usize>,
    pub server_names: Vec<String>,
}

/// Why a fabric gives placement nothing to work with.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyError(pub String);

impl std::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Topology {
    /// The tree `export slurm` writes for `f` (plan names), as placement uses it.
    pub fn of(f: &Fabric) -> Result<Topology, TopologyError> {
        let tree = slurm::tree(f, None).map_err(|e| TopologyError(e.to_string()))?;
        let index: BTreeMap<&str, usize> = f
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        let n = tree.switches.len();
        let mut switch_servers: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut leaf_of = vec![usize::MAX; f.servers.len()];
        let mut order = Vec::with_capacity(f.servers.len());
        for (k, s) in tree.switches.iter().enumerate() {
            if s.level == 0 {
                for name in &s.nodes {
                    if let Some(&i) = index.get(name.as_str()) {
                        switch_servers[k].push(i);
                        leaf_of[i] = k;
                        order.push(i);
                    }
                }
            }
        }
        // Upper switches: their children's servers (children come before parents in the list).
        let mut has_parent = vec![false; n];
        for k in 0..n {
            if tree.switches[k].level == 0 {
                continue;
            }
            let mut below = Vec::new();
            for &c in &tree.switches[k].children {
                has_parent[c] = true;
                below.extend_from_slice(&switch_servers[c]);
            }
            below.sort_unstable();
            below.dedup();
            switch_servers[k] = below;
        }
        let mut network_of = vec![usize::MAX; f.servers.len()];
        for k in (0..n).filter(|&k| !has_parent[k]) {
            for &s in &switch_servers[k] {
                network_of[s] = k;
            }
        }
        for s in &mut switch_servers {
            s.sort_unstable();
        }
        if order.is_empty() {
            return Err(TopologyError(
                "no server is under a leaf switch: nothing to place".into(),
            ));
        }
        Ok(Topology {
            switch_level: tree.switches.iter().map(|s| s.level).collect(),
            switch_names: tree.switches.iter().map(|s| s.name.clone()).collect(),
            switch_servers,
            leaf_of,
            network_of,
            order,
            server_names: f.servers.iter().map(|s| s.name.clone()).collect(),
        })
    }

    /// The leaf groups `servers` spans.
    pub fn leaves_spanned(&self, servers: &[usize]) -> usize {
        let mut l: Vec<usize> = servers.iter().map(|&s| self.leaf_of[s]).collect();
        l.sort_unstable();
        l.dedup();
        l.len()
    }

    /// The level of the lowest Slurm switch above every one of `servers` (0: one leaf group);
    /// `u32::MAX` when they are in different networks.
    pub fn span_level(&self, servers: &[usize]) -> u32 {
        (0..self.switch_servers.len())
            .filter(|&k| {
                servers
                    .iter()
                    .all(|s| self.switch_servers[k].binary_search(s).is_ok())
            })
            .map(|k| self.switch_level[k])
            .min()
            .unwrap_or(u32::MAX)
    }

    /// The servers a leaf group holds, in placement order.
    fn leaf_servers(&self, leaf: usize) -> impl Iterator<Item = usize> + '_ {
        self.order
            .iter()
            .copied()
            .filter(move |&s| self.leaf_of[s] == leaf)
    }
}

/// A placement policy: which free servers a job of `need` servers gets, or `None` when no
/// placement the policy allows fits now.
pub trait Placement {
    /// The name `--placement` takes.
    fn name(&self) -> &'static str;
    fn place(&mut self, topo: &Topology, free: &[bool], need: usize) -> Option<Vec<usize>>;
}

/// The placement policies by name, as `--placement` lists them.
pub const POLICIES: [&str; 3] = ["topology", "contiguous", "scattered"];

/// The policy `name` names (`scattered` drawn from `seed`).
pub fn policy(name: &str, seed: u64) -> Option<Box<dyn Placement>> {
    match name {
        "topology" => Some(Box::new(TopologyBestFit)),
        "contiguous" => Some(Box::new(Contiguous)),
        "scattered" => Some(Box::new(Scattered { state: seed })),
        _ => None,
    }
}

/// Slurm's topology/tree best fit (module docs).
#[derive(Debug, Clone, Copy)]
pub struct TopologyBestFit;

impl Placement for TopologyBestFit {
    fn name(&self) -> &'static str {
        "topology"
    }

    fn place(&mut self, topo: &Topology, free: &[bool], need: usize) -> Option<Vec<usize>> {
        let free_under = |k: usize| topo.switch_servers[k].iter().filter(|&&s| free[s]).count();
        // The lowest level with a switch that fits; at it, the fitting switch with the fewest
        // free servers (ties: the first).
        let levels: std::collections::BTreeSet<u32> = topo.switch_level.iter().copied().collect();
        let switch = levels.into_iter().find_map(|level| {
            (0..topo.switch_servers.len())
                .filter(|&k| topo.switch_level[k] == level)
                .map(|k| (free_under(k), k))
                .filter(|&(n, _)| n >= need)
                .min()
                .map(|(_, k)| k)
        })?;
        // Its leaf groups: whole leaves with the most free first (the fewest leaves), the last
        // part from the leaf that fits it most tightly.
        let mut leaves: Vec<(usize, usize)> = Vec::new();
        for (k, servers) in topo.switch_servers.iter().enumerate() {
            if topo.switch_level[k] == 0
                && servers
                    .iter()
                    .all(|s| topo.switch_servers[switch].binary_search(s).is_ok())
            {
                let n = servers.iter().filter(|&&s| free[s]).count();
                if n > 0 {
                    leaves.push((n, k));
                }
            }
        }
        let mut out = Vec::with_capacity(need);
        while out.len() < need {
            let left = need - out.len();
            let pick = leaves
                .iter()
                .enumerate()
                .filter(|(_, &(n, _))| n >= left)
                .min_by_key(|(_, &(n, k))| (n, k))
                .or_else(|| {
                    leaves
                        .iter()
                        .enumerate()
                        .max_by_key(|(_, &(n, k))| (n, std::cmp::Reverse(k)))
                })
                .map(|(i, _)| i)?;
            let (_, leaf) = leaves.remove(pick);
            out.extend(topo.leaf_servers(leaf).filter(|&s| free[s]).take(left));
        }
        Some(out)
    }
}

/// The first run of consecutive free servers in placement order, inside one network.
#[derive(Debug, Clone, Copy)]
pub struct Contiguous;

impl Placement for Contiguous {
    fn name(&self) -> &'static str {
        "contiguous"
    }

    fn place(&mut self, topo: &Topology, free: &[bool], need: usize) -> Option<Vec<usize>> {
        let mut run: Vec<usize> = Vec::with_capacity(need);
        for &s in &topo.order {
            let joins = run
                .last()
                .is_none_or(|&p| topo.network_of[p] == topo.network_of[s]);
            if !free[s] || !joins {
                run.clear();
            }
            if free[s] {
                run.push(s);
                if run.len() == need {
                    return Some(run);
                }
            }
        }
        None
    }
}

/// Free servers at random, seeded: partial Fisher-Yates over the free servers of the network with
/// the most free (ties: the first), one SplitMix64 draw per pick; the pick in the fabric's order.
#[derive(Debug, Clone, Copy)]
pub struct Scattered {
    pub state: u64,
}

impl Placement for Scattered {
    fn name(&self) -> &'static str {
        "scattered"
    }

    fn place(&mut self, topo: &Topology, free: &[bool], need: usize) -> Option<Vec<usize>> {
        let mut by_net: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &s in &topo.order {
            if free[s] {
                by_net.entry(topo.network_of[s]).or_default().push(s);
            }
        }
        let mut pool = by_net
            .into_values()
            .max_by_key(|v| v.len())
            .filter(|v| v.len() >= need)?;
        for i in 0..need {
            let j = i
                + (railyard_sim::routing::mix64(&mut self.state) % (pool.len() - i) as u64)
                    as usize;
            pool.swap(i, j);
        }
        pool.truncate(need);
        pool.sort_unstable();
        Some(pool)
    }
}
