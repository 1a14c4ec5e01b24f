//! How a switch's ports split: the leaf's between hosts and uplinks at a down:up ratio, the
//! two-switch design's links between its switches, and the divisors that balance a tier.

use railyard_spec::ClusterSpec;

/// The conventional leaf port split for a down:up ratio r on radix k: `up = floor(k / (1 + r))`,
/// `down = min(k - up, floor(up * r))`, so 64 ports give 32:32 at 1:1, 42:21 at 2:1, 48:16 at 3:1.
/// The search starts from it (the "conventional design" it compares against) but is not bound to it.
pub fn leaf_split(k: u32, oversubscription: f64) -> (u32, u32) {
    let up = ((f64::from(k) / (1.0 + oversubscription)).floor() as u32).max(1);
    let down = (k - up).min((f64::from(up) * oversubscription + 1e-9).floor() as u32);
    (down, up)
}

/// The fewest up-facing ports that keep `down` host-facing ports within a down:up ratio of `ratio`.
pub fn uplinks_for(down: u32, ratio: f64) -> u32 {
    // The ratio is an upper bound: down / up <= ratio, with a little slack for ratios such as 4/3.
    ((f64::from(down) / ratio) - 1e-9).ceil().max(1.0) as u32
}

/// Links between the two switches of a two-switch design whose fuller switch holds `most` host
/// ports: `fabric.isl_links` where given, else as many as the asked leaf oversubscription needs
/// (`most / ratio`, rounded up, at least one): the links are each switch's way to the other half
/// of the hosts, its uplinks.
pub fn isl_links(spec: &ClusterSpec, most: u64) -> u32 {
    spec.fabric.isl_links.unwrap_or_else(|| {
        let most = u32::try_from(most).unwrap_or(u32::MAX);
        uplinks_for(most, spec.fabric.oversubscription.max(1.0))
    })
}

/// Divisors of n, ascending.
pub(crate) fn divisors(n: u32) -> impl DoubleEndedIterator<Item = u32> {
    (1..=n).filter(move |d| n.is_multiple_of(*d))
}
