//! The numbers that shape a tree, fixed before anything is built: a design's [`Shape`] (the leaf
//! port split, the scalable unit, the tiers above the leaves as [`Upper`], their pods as [`Pods`]).
//! The design search picks a shape, `topo` counts and wires it, and a built fabric keeps it in its
//! `FabricMeta`.

use serde::{Deserialize, Serialize};

/// How the leaves of a three-tier tree are grouped into pods; every pod has spines of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Pods {
    /// Pods of `size` leaf slots, in leaf order (fat-tree and rail-only rails; a rail-optimized design
    /// whose unit alone outgrows a pod); the last pod's empty slots stay free.
    InOrder { size: u32 },
    /// Rail-optimized, every unit fitting one pod: a pod holds `rails` whole rails of every unit, so
    /// same-rail traffic between units turns at a spine and never climbs to the core.
    WholeRails { rails: u32 },
    /// Rail-optimized, a rail outgrowing a pod: a pod holds `units` whole scalable units.
    WholeUnits { units: u32 },
}

impl Pods {
    /// (pods, leaf slots per pod) for `units` x `rails` leaves (fat-tree and rail-only: `units` is the
    /// number of leaves and `rails` 1).
    pub fn count(self, units: u64, rails: u32) -> (u64, u64) {
        let rails = u64::from(rails);
        match self {
            Pods::InOrder { size } => (
                (units * rails).div_ceil(u64::from(size.max(1))),
                u64::from(size),
            ),
            Pods::WholeRails { rails: per } => {
                let per = u64::from(per.max(1));
                (rails.div_ceil(per), per * units)
            }
            Pods::WholeUnits { units: per } => {
                let per = u64::from(per.max(1));
                (units.div_ceil(per), per * rails)
            }
        }
    }
}

/// The tiers above the leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Upper {
    /// None: the leaves are the top tier.
    None,
    /// Every leaf sends `links` links to each of `spines` spines.
    Two { spines: u32, links: u32 },
    /// Leaves in pods; every pod has `spines_per_pod` spines, each leaf sending `links` links to each.
    /// Every spine sends `spine_up` links up, spread evenly over the `group` cores of its group (core
    /// group j serves spine j of every pod), so there are `spines_per_pod x group` cores.
    Three {
        pods: Pods,
        spines_per_pod: u32,
        links: u32,
        spine_up: u32,
        group: u32,
    },
}

/// Every number that shapes a tree, fixed before anything is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shape {
    /// Leaf ports that face hosts: the NIC ports a full leaf holds (rail-optimized: the unit's servers).
    pub leaf_down: u32,
    /// Leaf ports that face up (0 when the leaves are the top tier).
    pub leaf_up: u32,
    /// Servers per scalable unit (rail-optimized designs).
    pub su_size: Option<u32>,
    pub upper: Upper,
}

impl Shape {
    /// The shape of designs without a tree (one switch, two switches).
    pub const FLAT: Shape = Shape {
        leaf_down: 0,
        leaf_up: 0,
        su_size: None,
        upper: Upper::None,
    };
}
