//! topology/block from the tree: the base blocks and the sizes Slurm enforces above them.
//!
//! Slurm's block plugin (topology.conf(5) and the topology guide, Slurm 24.05 and later) takes
//! base blocks of nodes (`BlockName=... Nodes=...`) and `BlockSizes`: the base block's node count,
//! then larger sizes, each a power of two times the one before; a block of the level `2^k` is `2^k`
//! consecutive base blocks in the order written (src/plugins/topology/block/block_record.c). A job
//! goes into the smallest level that holds it, and one larger than every level into the whole
//! cluster. So a level is only worth writing where the fabric has one: a pod of a three-tier tree
//! whose leaf groups are `2^k`, written pod by pod.

use super::Switch;

/// The blocks in the order to write them, and the sizes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    /// Indexes of the tree's leaf switches, each a base block.
    pub order: Vec<usize>,
    /// `BlockSizes`: the base block's nodes, then each level's.
    pub sizes: Vec<u64>,
    pub notes: Vec<String>,
}

/// The ancestors of every leaf, level by level, while each switch has one parent.
fn chains(switches: &[Switch], leaves: &[usize], notes: &mut Vec<String>) -> Vec<Vec<usize>> {
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); switches.len()];
    for (p, s) in switches.iter().enumerate() {
        for &c in &s.children {
            parents[c].push(p);
        }
    }
    let mut chain = vec![leaves.to_vec()];
    loop {
        let current = chain.last().expect("the leaves");
        if current.iter().all(|&c| c == current[0]) {
            break;
        }
        let next: Option<Vec<usize>> = current
            .iter()
            .map(|&c| match parents[c].as_slice() {
                [p] => Some(*p),
                _ => None,
            })
            .collect();
        match next {
            Some(next) => chain.push(next),
            None => {
                if let Some(&c) = current.iter().find(|&&c| parents[c].len() > 1) {
                    notes.push(format!(
                        "{} has {} parent switches: BlockSizes has no level above it",
                        switches[c].name,
                        parents[c].len()
                    ));
                }
                break;
            }
        }
    }
    chain
}

/// Base blocks and sizes for the tree's leaves.
pub(crate) fn layout(switches: &[Switch]) -> Layout {
    let mut notes = Vec::new();
    let leaves: Vec<usize> = (0..switches.len())
        .filter(|&i| switches[i].level == 0)
        .collect();
    let chain = chains(switches, &leaves, &mut notes);
    // Pod by pod: sorted by the highest ancestor first.
    let mut order: Vec<usize> = (0..leaves.len()).collect();
    order.sort_by_key(|&k| {
        let mut key: Vec<usize> = chain.iter().skip(1).rev().map(|c| c[k]).collect();
        key.push(k);
        key
    });
    let base = leaves
        .iter()
        .map(|&l| switches[l].nodes.len() as u64)
        .max()
        .unwrap_or(0);
    let mut sizes = vec![base];
    let mut per = 1usize;
    for (h, level) in chain.iter().enumerate().skip(1) {
        // Runs of the same ancestor, in block order.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &k in &order {
            match runs.last_mut() {
                Some((a, n)) if *a == level[k] => *n += 1,
                _ => runs.push((level[k], 1)),
            }
        }
        if runs.len() == 1 {
            break;
        }
        let k = runs[0].1;
        let even = runs[..runs.len() - 1].iter().all(|r| r.1 == k) && runs[runs.len() - 1].1 <= k;
        if k == per {
            continue;
        }
        if !even || !k.is_power_of_two() {
            let name = &switches[runs[0].0].name;
            notes.push(format!(
                "the switches {} above the leaves ({name} and the like) group {} base blocks{}: Slurm aggregates 2, 4, 8, ... consecutive blocks, so BlockSizes stops below them",
                if h == 1 { "one level".to_string() } else { format!("{h} levels") },
                if even { k.to_string() } else { "unequal numbers of".to_string() },
                if even { " each, not a power of two" } else { "" },
            ));
            break;
        }
        per = k;
        sizes.push(base * k as u64);
    }
    let small: Vec<&Switch> = leaves
        .iter()
        .map(|&l| &switches[l])
        .filter(|s| (s.nodes.len() as u64) < base)
        .collect();
    if let Some(first) = small.first() {
        notes.push(format!(
            "{} of {} blocks hold{} fewer nodes than the base block of {base} ({}: {}): Slurm 24.05 and 24.11 refuse such a block (children count lower than bblock_node_cnt); 25.05 and later take it",
            small.len(),
            leaves.len(),
            if small.len() == 1 { "s" } else { "" },
            first.name,
            first.nodes.len()
        ));
    }
    Layout {
        order: order.into_iter().map(|k| leaves[k]).collect(),
        sizes,
        notes,
    }
}
