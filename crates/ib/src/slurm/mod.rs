//! Slurm's topology.conf from a fabric, planned or discovered: the switches with their nodes and
//! child switches for topology/tree, or base blocks and block sizes for topology/block.
//!
//! Format (topology.conf(5), <https://slurm.schedmd.com/topology.conf.html>, and the topology
//! guide, <https://slurm.schedmd.com/topology.html>): one line per switch,
//! `SwitchName=NAME Nodes=HOSTLIST` for a leaf or `SwitchName=NAME Switches=HOSTLIST` above,
//! with an optional `LinkSpeed=N` ("the units used are arbitrary and this information is
//! currently not used"; railyard writes the rate of the switch's links to its children in Gb/s).
//! Names are Slurm's own (a switch name is "internal to Slurm and arbitrary", at most 64
//! characters since Slurm 24.11); nodes must be the `NodeName`s of slurm.conf, so they are the
//! site's names (`--names`, [`crate::site::NameMap`]), written as hostlist expressions
//! ([`hostlist`]). topology/block takes `BlockName=NAME Nodes=HOSTLIST` and `BlockSizes=` (Slurm
//! 24.05 and later; 23.11 had `BlockLevels`). topology.yaml (Slurm 25.05 and later) is not
//! written: Slurm reads topology.conf whenever no topology.yaml is present.
//!
//! Which fabric switches make one Slurm switch: structure.rs. No I/O: text in, text out.

mod block;
pub mod hostlist;
mod structure;

use crate::site::NameMap;
use railyard_fabric::import::natural_cmp;
use railyard_fabric::Fabric;
use std::collections::BTreeMap;
use std::fmt::{self, Write};

/// Slurm's limit on a switch name (`HOST_NAME_MAX`, enforced since Slurm 24.11).
pub const MAX_SWITCH_NAME: usize = 64;

/// Which topology plugin the file is for (`TopologyPlugin=topology/...` in slurm.conf).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plugin {
    Tree,
    Block,
}

impl Plugin {
    pub const ALL: [Plugin; 2] = [Plugin::Tree, Plugin::Block];

    pub fn as_str(self) -> &'static str {
        match self {
            Plugin::Tree => "tree",
            Plugin::Block => "block",
        }
    }
}

/// Why a fabric gives no topology.conf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlurmError {
    /// A node name Slurm cannot take (`server` is the fabric's name, `name` the site's).
    NodeName { server: String, name: String },
    /// Two servers with one name.
    DuplicateNode { name: String, servers: [String; 2] },
    /// A switch name longer than Slurm takes.
    LongSwitchName { name: String },
    /// Two Slurm switches with one name.
    DuplicateSwitch { name: String },
    /// No server is cabled to a switch.
    NoNodes,
}

impl fmt::Display for SlurmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlurmError::NodeName { server, name } => {
                let what = if server == name {
                    format!("server \"{}\"", crate::discovery::escaped(name))
                } else {
                    format!(
                        "server {server}'s site name \"{}\"",
                        crate::discovery::escaped(name)
                    )
                };
                write!(
                    f,
                    "{what} cannot be a Slurm node name: it holds a space, a control character or one of , [ ] = # \" ' \\; give the server a site name with --names"
                )
            }
            SlurmError::DuplicateNode { name, servers } => write!(
                f,
                "servers {} and {} would both be Slurm node \"{name}\"; give them distinct site names with --names",
                servers[0], servers[1]
            ),
            SlurmError::LongSwitchName { name } => write!(
                f,
                "Slurm switch name \"{name}\" is longer than {MAX_SWITCH_NAME} characters, which Slurm refuses; give its switches shorter site names with --names"
            ),
            SlurmError::DuplicateSwitch { name } => write!(
                f,
                "two Slurm switches would both be named \"{name}\"; give one of their switches another site name with --names"
            ),
            SlurmError::NoNodes => f.write_str(
                "no server of the fabric is cabled to a switch: Slurm's topology has nothing to place",
            ),
        }
    }
}

impl std::error::Error for SlurmError {}

/// One Slurm switch of topology/tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Switch {
    /// Its `SwitchName`: a fabric switch's (site) name, or for several the name they share with
    /// their numbers as a range (`su1-leaf1-8` for `su1-leaf1` to `su1-leaf8`).
    pub name: String,
    /// The fabric switches it stands for (site names).
    pub members: Vec<String>,
    /// Slurm's level: 0 for a leaf switch.
    pub level: u32,
    /// A leaf's nodes (site names).
    pub nodes: Vec<String>,
    /// The child switches, as indexes into [`Tree::switches`].
    pub children: Vec<usize>,
    /// `LinkSpeed`: the rate most of its links to its children run at, Gb/s (ties: the lower).
    pub link_speed: Option<u32>,
    /// A switch railyard adds above top switches that only links between them join.
    pub joined: bool,
}

/// The fabric as Slurm's topology/tree sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// The fabric's name, for the file's header.
    pub origin: String,
    /// Leaf switches first, then each level above.
    pub switches: Vec<Switch>,
    /// What Slurm will not see as the fabric has it, one sentence each.
    pub notes: Vec<String>,
}

/// What `export slurm` writes: the file's text, and what the file could not say.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    pub text: String,
    pub notes: Vec<String>,
    /// One line for the command's own output: nodes, switches, blocks.
    pub summary: String,
}

/// Whether Slurm can take `c` in a name: not in a hostlist's separators or brackets, the
/// config file's `=` and `#`, quotes or backslash.
fn slurm_char(c: char) -> bool {
    !(c.is_whitespace()
        || c.is_control()
        || matches!(c, ',' | '[' | ']' | '=' | '#' | '"' | '\'' | '\\'))
}

/// A name for Slurm with every character it cannot take as `_`.
fn sanitized(name: &str) -> String {
    name.chars()
        .map(|c| if slurm_char(c) { c } else { '_' })
        .collect()
}

/// A name's runs: text, or digits (at most 18, so a number fits).
fn runs(name: &str) -> Vec<(&str, Option<u64>)> {
    let mut out = Vec::new();
    let b = name.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let digit = b[i].is_ascii_digit();
        let j = i + b[i..]
            .iter()
            .take_while(|c| c.is_ascii_digit() == digit)
            .count();
        let s = &name[i..j];
        out.push((
            s,
            (digit && s.len() <= 18).then(|| s.parse().ok()).flatten(),
        ));
        i = j;
    }
    out
}

/// One name for several switches: their shared name with each varying number written as its
/// range, `lo-hi` (`su1-leaf1` .. `su1-leaf8` -> `su1-leaf1-8`; `rail1-leaf01` .. `rail8-leaf01`
/// -> `rail1-8-leaf01`), when the names are every combination of those ranges; else the first
/// name and how many more (`leaf01+2`). No brackets: Slurm would read them as a hostlist.
pub fn group_name(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        _ => ranged(names).unwrap_or_else(|| format!("{}+{}", names[0], names.len() - 1)),
    }
}

fn ranged(names: &[String]) -> Option<String> {
    let all: Vec<Vec<(&str, Option<u64>)>> = names.iter().map(|n| runs(n)).collect();
    let first = &all[0];
    if all.iter().any(|r| r.len() != first.len()) {
        return None;
    }
    let mut out = String::new();
    let mut combinations = 1usize;
    for (i, &(text, number)) in first.iter().enumerate() {
        let column: Vec<(&str, Option<u64>)> = all.iter().map(|r| r[i]).collect();
        if column.iter().all(|c| c.0 == text) {
            out.push_str(text);
            continue;
        }
        // A varying run must be a number written the way a range of its width writes it.
        number?;
        let mut values: Vec<(u64, &str)> = column
            .iter()
            .map(|&(s, n)| n.map(|n| (n, s)))
            .collect::<Option<_>>()?;
        values.sort();
        values.dedup();
        let (lo, lo_text) = values[0];
        let w = lo_text.len();
        let contiguous = values
            .iter()
            .enumerate()
            .all(|(k, &(n, s))| n == lo + k as u64 && format!("{n:0w$}") == s);
        if !contiguous {
            return None;
        }
        combinations = combinations.checked_mul(values.len())?;
        let hi = values[values.len() - 1].0;
        let _ = write!(out, "{lo_text}-{hi:0w$}");
    }
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    (combinations == distinct.len()).then_some(out)
}

/// `no switch`, `1 switch`, `N switches`.
fn switches(n: usize) -> String {
    match n {
        0 => "no switch".to_string(),
        1 => "1 switch".to_string(),
        n => format!("{n} switches"),
    }
}

/// The rate most of `gbps` run at, rounded to a whole Gb/s; ties to the lower.
fn link_speed(gbps: &[f64]) -> Option<u32> {
    let mut count: BTreeMap<u32, usize> = BTreeMap::new();
    for g in gbps {
        *count
            .entry(g.round().clamp(0.0, f64::from(u32::MAX)) as u32)
            .or_default() += 1;
    }
    // Iterates slowest first; keep the first maximum: the lower on a tie.
    let most = count.values().copied().max()?;
    count.into_iter().find(|&(_, n)| n == most).map(|(s, _)| s)
}

/// The fabric as Slurm's topology/tree: leaves that serve the same servers are one Slurm leaf
/// and switches with the same children one Slurm switch (see structure.rs); nodes and switches by
/// the site's names where `names` gives them.
pub fn tree(f: &Fabric, names: Option<&NameMap>) -> Result<Tree, SlurmError> {
    let s = structure::structure(f);
    let site = |plan: &str| -> String {
        names
            .and_then(|m| m.site_name(plan))
            .unwrap_or(plan)
            .to_string()
    };
    let node_of = node_names(f, &site)?;
    if s.groups.is_empty() {
        return Err(SlurmError::NoNodes);
    }
    let mut renamed: Vec<(String, String)> = Vec::new();
    let mut switches: Vec<Switch> = Vec::with_capacity(s.groups.len());
    let mut taken = std::collections::BTreeSet::new();
    for g in &s.groups {
        let mut members: Vec<String> = g
            .members
            .iter()
            .map(|&m| {
                let given = site(&f.node(m).name);
                let clean = sanitized(&given);
                if clean != given {
                    renamed.push((given, clean.clone()));
                }
                clean
            })
            .collect();
        members.sort_by(|a, b| natural_cmp(a, b).then_with(|| a.cmp(b)));
        let name = group_name(&members);
        if name.chars().count() > MAX_SWITCH_NAME {
            return Err(SlurmError::LongSwitchName { name });
        }
        if !taken.insert(name.clone()) {
            return Err(SlurmError::DuplicateSwitch { name });
        }
        let nodes = g.servers.iter().map(|&i| node_of[i as usize].clone());
        switches.push(Switch {
            name,
            members,
            level: g.level,
            nodes: nodes.collect(),
            children: g.children.iter().copied().collect(),
            link_speed: link_speed(&g.gbps),
            joined: g.joined,
        });
    }
    Ok(Tree {
        // A comment line of the file: nothing in it may end the line.
        origin: f
            .meta
            .name
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect(),
        switches,
        notes: tree_notes(&s, &node_of, &renamed),
    })
}

/// Every server's Slurm node name (the site's where given), checked and unique.
fn node_names(f: &Fabric, site: &dyn Fn(&str) -> String) -> Result<Vec<String>, SlurmError> {
    let mut node_of: Vec<String> = Vec::with_capacity(f.servers.len());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, server) in f.servers.iter().enumerate() {
        let name = site(&server.name);
        if name.is_empty() || !name.chars().all(slurm_char) {
            return Err(SlurmError::NodeName {
                server: server.name.clone(),
                name,
            });
        }
        if let Some(&other) = seen.get(&name) {
            return Err(SlurmError::DuplicateNode {
                name,
                servers: [f.servers[other].name.clone(), server.name.clone()],
            });
        }
        seen.insert(name.clone(), i);
        node_of.push(name);
    }
    Ok(node_of)
}

/// What the file cannot say as the fabric has it: switch names changed for Slurm, servers under
/// no switch or split between leaves, separate networks.
fn tree_notes(
    s: &structure::Structure,
    node_of: &[String],
    renamed: &[(String, String)],
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some((given, clean)) = renamed.first() {
        notes.push(format!(
            "{} switch name{} held characters Slurm cannot take, written as _ (\"{}\" is {clean})",
            renamed.len(),
            if renamed.len() == 1 { "" } else { "s" },
            crate::discovery::escaped(given)
        ));
    }
    // Servers as a note names them: how many, a plural ending, their hostlist.
    let listed = |servers: &[u32]| {
        let list: Vec<&str> = servers
            .iter()
            .map(|&i| node_of[i as usize].as_str())
            .collect();
        let plural = if list.len() == 1 { "" } else { "s" };
        (list.len(), plural, hostlist::compress(&list))
    };
    if !s.unplaced.is_empty() {
        let (n, plural, list) = listed(&s.unplaced);
        notes.push(format!(
            "{n} server{plural} with no NIC cabled to a switch ({list}) under no switch: Slurm warns that switches lack access to them"
        ));
    }
    if !s.straddling.is_empty() {
        let (n, plural, list) = listed(&s.straddling);
        notes.push(format!(
            "{n} server{plural} ({list}) reach leaves that serve other servers too; each is under the leaf holding most of its NIC links, as Slurm's tree holds a node under one leaf"
        ));
    }
    if s.networks > 1 {
        notes.push(format!(
            "the fabric is {} separate networks: Slurm runs no job across them",
            s.networks
        ));
    }
    notes
}

impl Tree {
    /// The leaf switches.
    pub fn leaves(&self) -> impl Iterator<Item = &Switch> {
        self.switches.iter().filter(|s| s.level == 0)
    }

    fn node_count(&self) -> usize {
        self.leaves().map(|s| s.nodes.len()).sum()
    }

    /// A comment line naming the fabric switches a Slurm switch stands for, if several.
    fn members_comment(out: &mut String, s: &Switch) {
        if s.joined {
            let _ = writeln!(
                out,
                "# {}: joined only by the links between them; this switch is railyard's, so jobs can span them",
                hostlist::compress(&s.members)
            );
        } else if s.members.len() > 1 {
            let _ = writeln!(
                out,
                "# {}: {} switches, one to Slurm",
                hostlist::compress(&s.members),
                s.members.len()
            );
        }
    }

    /// topology.conf for topology/tree.
    pub fn conf(&self) -> String {
        let leaves = self.leaves().count();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# topology.conf for Slurm's topology/tree (TopologyPlugin=topology/tree), written by railyard from {}:",
            self.origin
        );
        let _ = writeln!(
            out,
            "# {} nodes under {leaves} leaf switch{}, {} above {}.",
            self.node_count(),
            if leaves == 1 { "" } else { "es" },
            switches(self.switches.len() - leaves),
            if leaves == 1 { "it" } else { "them" },
        );
        out.push_str(
            "# Leaf switches that serve the same nodes (a scalable unit's rail leaves) are one Slurm switch, as are\n\
             # the switches above with the same children: Slurm's tree holds a node under one leaf switch only.\n\
             # LinkSpeed: the rate of a switch's links to its children, Gb/s (Slurm reads it and does not use it).\n",
        );
        for s in &self.switches {
            Tree::members_comment(&mut out, s);
            let _ = write!(out, "SwitchName={}", s.name);
            if s.level == 0 {
                let _ = write!(out, " Nodes={}", hostlist::compress(&s.nodes));
            } else {
                let children: Vec<&str> = s
                    .children
                    .iter()
                    .map(|&c| self.switches[c].name.as_str())
                    .collect();
                let _ = write!(out, " Switches={}", hostlist::compress(&children));
            }
            if let Some(speed) = s.link_speed {
                let _ = write!(out, " LinkSpeed={speed}");
            }
            out.push('\n');
        }
        out
    }

    /// topology.conf for topology/block, with what the blocks could not follow.
    pub fn block_conf(&self) -> (String, Vec<String>) {
        let layout = block::layout(&self.switches);
        let sizes: Vec<String> = layout.sizes.iter().map(u64::to_string).collect();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# topology.conf for Slurm's topology/block (TopologyPlugin=topology/block; BlockSizes: Slurm 24.05 or later),\n\
             # written by railyard from {}: {} nodes in {} base blocks.",
            self.origin,
            self.node_count(),
            layout.order.len()
        );
        out.push_str(
            "# A base block is the nodes under one leaf switch group (a scalable unit's rail leaves): a job that fits\n\
             # in one stays off the spines. Every server here is its own NVLink domain, which Slurm allocates whole,\n\
             # so no block is an NVLink domain. BlockSizes: the base block's nodes, then each pod's where a pod\n\
             # holds 2, 4, 8, ... leaf groups (larger jobs take the whole cluster as one block).\n",
        );
        for &i in &layout.order {
            let s = &self.switches[i];
            Tree::members_comment(&mut out, s);
            let _ = writeln!(
                out,
                "BlockName={} Nodes={}",
                s.name,
                hostlist::compress(&s.nodes)
            );
        }
        let _ = writeln!(out, "BlockSizes={}", sizes.join(","));
        (out, layout.notes)
    }
}

/// topology.conf of `plugin` for a fabric, nodes and switches by the site's names.
pub fn topology_conf(
    f: &Fabric,
    names: Option<&NameMap>,
    plugin: Plugin,
) -> Result<Export, SlurmError> {
    let tree = tree(f, names)?;
    let leaves = tree.leaves().count();
    let members: usize = tree.leaves().map(|s| s.members.len()).sum();
    let nodes = tree.node_count();
    let (text, mut notes, what) = match plugin {
        Plugin::Tree => (
            tree.conf(),
            Vec::new(),
            format!(
                "{leaves} leaf switch{} (of {members} leaves), {} above",
                if leaves == 1 { "" } else { "es" },
                switches(tree.switches.len() - leaves)
            ),
        ),
        Plugin::Block => {
            let (text, notes) = tree.block_conf();
            (text, notes, format!("{leaves} base blocks"))
        }
    };
    let mut all = tree.notes;
    all.append(&mut notes);
    Ok(Export {
        text,
        notes: all,
        summary: format!("topology/{}: {nodes} nodes, {what}", plugin.as_str()),
    })
}

#[cfg(test)]
mod tests;
