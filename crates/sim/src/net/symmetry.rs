//! The symmetry of a fabric network: classes of servers and of resources (directed links, host
//! memory) that the fabric's structure cannot tell apart, found on the fabric alone, before any
//! flow exists.
//!
//! # Method
//!
//! Colour refinement (one-dimensional Weisfeiler-Leman, as in `crate::engine::classes`) on the graph of
//! the fabric's nodes and links:
//!
//! 1. Colour every node by what it is (kind, rail, tier, model, latency, plane) and, inside a
//!    server, by its index among the server's nodes, so GPU 3 of one server only ever matches
//!    GPU 3 of another (ranks, rails and PCIe placement follow local indexes); the nodes of a
//!    drained server (`NetConfig::drained`: no job runs on it) apart from the others.
//! 2. Label every link by its kind and the capacity of each direction (and whether it is down:
//!    failed links are colours of their own, so only what the failures touch splits off; with
//!    a link down or a server drained, by its index among parallel links too, which routes
//!    carry down from their climb).
//!    Not by port: D-mod-K sends a source's flows up ports by destination number, so one
//!    server's flows use a leaf's up-ports unevenly while all servers together use them evenly;
//!    the classes must hold for the whole traffic, not for one server's share of it.
//! 3. Recolour every node by its colour and the multiset of (link label, side, neighbour's colour)
//!    over its links, until no class splits.
//!
//! A server's class is the list of its nodes' colours; a directed link's class is (label,
//! direction, colours of both ends); a server's host memory has its server's class. Scalable
//! units, rails, planes and spine groups come out as classes without being named: every full
//! scalable unit's leaves on one rail look alike, a partial last unit does not.
//!
//! The classes are what the fabric *looks* like; whether traffic treats the members of a class
//! alike depends on the routing too, which colour refinement does not see (D-mod-K numbers
//! destinations). The user of the classes (the collective model's folded all-to-all) checks that
//! for the traffic it lays out and falls back where it does not hold.

use crate::cancel::{Cancel, Cancelled};
use crate::engine::classes::{mix, rank, SEED_A, SEED_B};
use crate::net::fabric_net::FabricNet;
use crate::time::Time;
use railyard_fabric::{LinkId, LinkKind, NodeKind};

/// Classes of a fabric network's servers and resources.
#[derive(Debug, Clone)]
pub struct Symmetry {
    /// Per engine resource of the network (`FabricNet::resources`), its class.
    pub resource_class: Vec<u32>,
    /// Per resource class: its members.
    pub class_size: Vec<u32>,
    /// Per resource class: the capacity of a member (all members have the same), bytes/s.
    pub class_capacity: Vec<f64>,
    /// Per resource class: the longest medium latency of a member link (zero for host memory).
    pub class_latency: Vec<Time>,
    /// Per server: its class.
    pub server_class: Vec<u32>,
    /// Per server class (in order of their first member): the servers, ascending.
    pub server_classes: Vec<Vec<usize>>,
}

/// FNV-1a of a string, for model names in a colour.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn kind_code(k: NodeKind) -> u64 {
    match k {
        NodeKind::Gpu => 1,
        NodeKind::PcieSwitch => 2,
        NodeKind::Cpu => 3,
        NodeKind::NvlinkDomain => 4,
        NodeKind::Nic { rail } => 5 | (u64::from(rail) << 8),
        NodeKind::StorageNic => 6,
        NodeKind::Endpoint => 7,
        NodeKind::Switch { tier } => 8 | ((tier as u64) << 8),
    }
}

fn link_kind_code(k: LinkKind) -> u64 {
    match k {
        LinkKind::Pcie => 1,
        LinkKind::PcieUplink => 2,
        LinkKind::Nvlink => 3,
        LinkKind::ServerLeaf => 4,
        LinkKind::LeafSpine => 5,
        LinkKind::SpineCore => 6,
        LinkKind::InterSwitch => 7,
    }
}

/// The classes of `net`'s servers and resources. Reads `cancel` once per refinement round.
pub fn of_net(net: &FabricNet<'_>, cancel: Cancel<'_>) -> Result<Symmetry, Cancelled> {
    let f = net.fabric;
    let nn = f.nodes.len();
    let nl = f.links.len();
    // Per node: index inside its server (u32::MAX outside servers), and whether its server is
    // drained (no job runs on it: its nodes are told apart from the others').
    let mut local = vec![u32::MAX; nn];
    let mut drained = vec![0u64; nn];
    for (k, s) in f.servers.iter().enumerate() {
        for i in 0..s.num_nodes {
            if let Some(x) = local.get_mut((s.first_node + i) as usize) {
                *x = i;
                drained[(s.first_node + i) as usize] = u64::from(net.is_drained(k));
            }
        }
    }
    let node_keys: Vec<(u64, u64, u64, u32, u32)> = f
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                kind_code(n.kind) | (drained[i] << 40),
                fnv(&n.model),
                net.node_latency(railyard_fabric::NodeId(i as u32)).ps(),
                local[i],
                n.plane,
            )
        })
        .collect();
    let (mut col, mut ncol) = rank(&node_keys);
    drop(node_keys);
    // Link labels and ends.
    let mut label = Vec::with_capacity(nl);
    let mut ends = Vec::with_capacity(nl);
    // With cables down or servers drained, which of the parallel links between two switches a
    // route descends is its parallel index, carried down from the climb: a dead one turns the
    // sub-flows of its index away from every leaf's link of that index. Parallel links are told
    // apart by their index then.
    let degraded = net.any_failed() || net.any_drained();
    for (i, l) in f.links.iter().enumerate() {
        let (a, b) = (f.port(l.a).node, f.port(l.b).node);
        let id = LinkId(i as u32);
        let mut h = mix(link_kind_code(l.kind), SEED_A);
        let parallel = if degraded {
            u64::from(net.up_parallel[i].0) + 1
        } else {
            0
        };
        for x in [
            net.capacity(2 * i as u32).to_bits(),
            net.capacity(2 * i as u32 + 1).to_bits(),
            u64::from(net.is_failed(id)),
            parallel,
        ] {
            h = mix(h ^ x, SEED_B);
        }
        label.push(h);
        ends.push((a.0 as usize, b.0 as usize));
    }
    let mut ha = vec![0u64; nn];
    let mut hb = vec![0u64; nn];
    loop {
        cancel.check()?;
        ha.fill(0);
        hb.fill(0);
        for (l, &(a, b)) in ends.iter().enumerate() {
            for (me, other, side) in [(a, b, 0u64), (b, a, 1u64)] {
                let x = mix(label[l] ^ side, SEED_A) ^ u64::from(col[other]);
                ha[me] = ha[me].wrapping_add(mix(x, SEED_A));
                hb[me] = hb[me].wrapping_add(mix(x, SEED_B));
            }
        }
        let keys: Vec<(u32, u64, u64)> = (0..nn).map(|v| (col[v], ha[v], hb[v])).collect();
        let (new_col, new_n) = rank(&keys);
        let stable = new_n == ncol;
        col = new_col;
        ncol = new_n;
        if stable {
            break;
        }
    }
    // Servers: the colours of their nodes in local order.
    let server_keys: Vec<(u32, u64, u64)> = f
        .servers
        .iter()
        .map(|s| {
            let (mut a, mut b) = (0u64, 0u64);
            for i in 0..s.num_nodes {
                let c = col.get((s.first_node + i) as usize).copied().unwrap_or(0);
                let x = (u64::from(i) << 32) | u64::from(c);
                a = a.wrapping_add(mix(x, SEED_A));
                b = b.wrapping_add(mix(x, SEED_B));
            }
            (s.num_nodes, a, b)
        })
        .collect();
    let (server_class, nsc) = rank(&server_keys);
    drop(server_keys);
    // Resources: directed links, host memory per server, receives through host memory per GPU.
    let mut res_keys: Vec<(u64, u32, u32, u32)> = Vec::with_capacity(net.resources());
    for (l, &(a, b)) in ends.iter().enumerate() {
        res_keys.push((label[l], 0, col[a], col[b]));
        res_keys.push((label[l], 1, col[b], col[a]));
    }
    for &c in &server_class {
        res_keys.push((u64::MAX, 2, c, 0));
    }
    for g in net.staged_receivers() {
        res_keys.push((u64::MAX, 3, col[g.0 as usize], 0));
    }
    let (resource_class, nrc) = rank(&res_keys);
    drop(res_keys);
    let mut class_size = vec![0u32; nrc as usize];
    let mut class_capacity = vec![0.0f64; nrc as usize];
    let mut class_latency = vec![Time::ZERO; nrc as usize];
    for (r, &c) in resource_class.iter().enumerate() {
        let c = c as usize;
        class_size[c] += 1;
        class_capacity[c] = net.capacity(r as u32);
        if r < 2 * nl {
            let lat = net.link_latency(LinkId((r / 2) as u32));
            class_latency[c] = class_latency[c].max(lat);
        }
    }
    // Server classes in order of their first member.
    let mut order: Vec<u32> = vec![u32::MAX; nsc as usize];
    let mut server_classes: Vec<Vec<usize>> = Vec::new();
    for (s, &c) in server_class.iter().enumerate() {
        let c = c as usize;
        if order[c] == u32::MAX {
            order[c] = server_classes.len() as u32;
            server_classes.push(Vec::new());
        }
        server_classes[order[c] as usize].push(s);
    }
    let server_class = server_class.iter().map(|&c| order[c as usize]).collect();
    Ok(Symmetry {
        resource_class,
        class_size,
        class_capacity,
        class_latency,
        server_class,
        server_classes,
    })
}
