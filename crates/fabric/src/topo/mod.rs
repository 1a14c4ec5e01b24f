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
//!
//! - `ports`: how a leaf's ports split between hosts and uplinks, and the two-switch design's links;
//! - `counts`: [`counts`], what a shape holds;
//! - `ends`: [`each_link`], every link's ends as the builders wire them, without building;
//! - `size`: [`size`], a design's devices, ports and links against the arena's limits;
//! - `wiring`: adding switches and cabling the tiers above the leaves ([`pad`] names them);
//! - `builders`: [`build_topology`], the servers and every topology's tree.

mod builders;
mod counts;
mod ends;
mod ports;
mod size;
mod wiring;

pub use crate::graph::{MAX_LINKS, MAX_NODES, MAX_PORTS};
pub use crate::shape::{Pods, Shape, Upper};
pub use builders::build_topology;
pub use counts::{counts, Counts};
pub use ends::{each_link, leaf_first_servers, Ends};
pub(crate) use ports::divisors;
pub use ports::{isl_links, leaf_split, uplinks_for};
pub use size::{size, DesignSize, ServerCounts};
pub use wiring::pad;
pub(crate) use wiring::Wiring;
