//! The fabric graph: an arena of typed nodes, their ports, and the links between ports.
//!
//! Ids are indexes into the arena vectors, so a fabric of 100,000 GPUs is a handful of flat vectors.
//! Architecture invariant (checked by [`Fabric::check`], asserted by property tests): every port is used by
//! at most one link, both ends of a link run at the link's speed, and every NIC port is either cabled or
//! explicitly unused with a reason.
//!
//! - `elements`: ids and records (node, port, link, module, server);
//! - `fabric`: the [`Fabric`] arena and its [`FabricMeta`], building and lookups, its limits;
//! - `labels`: cable ids, port labels and devices as people name them;
//! - `cages`: who holds a port's cage, and the [`CageIndex`];
//! - `measures`: rails joined, bisection bandwidth;
//! - `check`: the invariants ([`Fabric::check`]);
//! - `union_find`: disjoint sets.

mod cages;
mod check;
mod elements;
mod fabric;
mod labels;
mod measures;
mod union_find;

pub use cages::CageIndex;
pub use check::InvariantError;
pub(crate) use elements::NodeSpec;
pub use elements::{
    Link, LinkId, LinkKind, Medium, Module, Node, NodeId, NodeKind, Port, PortId, PortState,
    Server, Tier, Unused,
};
pub use fabric::{Fabric, FabricMeta, MAX_LINKS, MAX_NODES, MAX_PORTS};
pub use labels::{cable_id, cable_index, push_u64, CABLE_ID_DIGITS};
pub use union_find::UnionFind;
