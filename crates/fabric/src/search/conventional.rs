//! The conventional design on a switch: the leaf split `leaf_split` gives for the ratio, a unit of
//! the leaf's host ports and the tiers above by the smallest divisors, as the first railyard built
//! them; the alternatives always show it.

use super::shapes::Req;
use crate::shape::{Pods, Shape, Upper};
use crate::topo::{divisors, leaf_split};
use railyard_spec::Topology;

/// The conventional design's shape on radix `k`: the leaf split [`leaf_split`] gives for the ratio,
/// a unit of the leaf's host ports (or the fixed unit), and the tiers above by the smallest divisors.
pub(super) fn conventional_shape(req: &Req, k: u32) -> Option<Shape> {
    let (down, up) = leaf_split(k, req.ratio);
    let tree = |hosts: u64| -> Option<Shape> {
        if hosts <= u64::from(k) {
            return Some(Shape {
                leaf_down: hosts as u32,
                leaf_up: 0,
                su_size: None,
                upper: Upper::None,
            });
        }
        let leaves = hosts.div_ceil(u64::from(down));
        conventional_upper(k, up, leaves, 1, Pods::InOrder { size: k / 2 }).map(|upper| Shape {
            leaf_down: down,
            leaf_up: up,
            su_size: None,
            upper,
        })
    };
    match req.topology {
        Topology::SingleSwitch | Topology::TwoSwitch => Some(Shape::FLAT),
        Topology::FatTree => tree(req.servers * u64::from(req.rails)),
        Topology::RailOnly => tree(req.servers),
        Topology::RailOptimized => {
            // The fullest leaf, in whole racks of a rack-scale system's trays.
            let su = req.su.unwrap_or(down / req.su_step * req.su_step);
            if su > down || su == 0 {
                return None;
            }
            let units = req.servers.div_ceil(u64::from(su));
            let rails = req.rails;
            let half = k / 2;
            let pods = if units <= u64::from(half) {
                Pods::WholeRails {
                    rails: (half / units as u32).min(rails).max(1),
                }
            } else if rails > half {
                Pods::InOrder { size: half }
            } else {
                Pods::WholeUnits {
                    units: (half / rails).max(1),
                }
            };
            let upper = if units * u64::from(rails) == 1 {
                Upper::None
            } else {
                conventional_upper(k, up, units, rails, pods)?
            };
            Some(Shape {
                leaf_down: su,
                leaf_up: if upper == Upper::None { 0 } else { up },
                su_size: Some(su),
                upper,
            })
        }
    }
}

/// The tiers above as the first railyard built them: two tiers with the largest divisor of the
/// uplinks as links per spine, three with as many links per spine as fit half a spine's ports and the
/// smallest core group.
fn conventional_upper(k: u32, up: u32, units: u64, rails: u32, pods: Pods) -> Option<Upper> {
    let leaves = units * u64::from(rails);
    let k64 = u64::from(k);
    if leaves <= k64 {
        let links = divisors(up).rev().find(|m| leaves * u64::from(*m) <= k64)?;
        return Some(Upper::Two {
            spines: up / links,
            links,
        });
    }
    let (n_pods, slots) = pods.count(units, rails);
    let half = u64::from(k / 2);
    let links = divisors(up).rev().find(|m| slots * u64::from(*m) <= half)?;
    let spine_up = (slots * u64::from(links)).min(k64 - half) as u32;
    let group = divisors(spine_up).find(|g| n_pods * u64::from(spine_up / g) <= k64)?;
    Some(Upper::Three {
        pods,
        spines_per_pod: up / links,
        links,
        spine_up,
        group,
    })
}
