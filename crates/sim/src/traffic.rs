//! Traffic patterns between hosts, as (source, destination) pairs: the permutations and all-to-all
//! that flow-level simulators are compared on. Deterministic for a given seed.

use crate::routing::mix64;

/// Host i sends to host (i + shift) mod hosts.
pub fn shift(hosts: u32, shift: u32) -> Vec<(u32, u32)> {
    (0..hosts)
        .map(|i| {
            (
                i,
                ((u64::from(i) + u64::from(shift)) % u64::from(hosts.max(1))) as u32,
            )
        })
        .collect()
}

/// A uniformly random permutation with no host sending to itself (a derangement), by Fisher-Yates
/// shuffles drawn until one has no fixed point (about e = 2.7 draws on average). Host i sends to
/// host p(i). Needs at least 2 hosts; with fewer, returns no pairs.
pub fn permutation(hosts: u32, seed: u64) -> Vec<(u32, u32)> {
    if hosts < 2 {
        return Vec::new();
    }
    let mut state = seed;
    let mut p: Vec<u32> = (0..hosts).collect();
    loop {
        for i in (1..p.len()).rev() {
            let j = ((u128::from(mix64(&mut state)) * (i as u128 + 1)) >> 64) as usize;
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &d)| i as u32 != d) {
            return p
                .into_iter()
                .enumerate()
                .map(|(i, d)| (i as u32, d))
                .collect();
        }
    }
}

/// Every host sends to every other host: hosts x (hosts - 1) pairs, source-major.
pub fn all_to_all(hosts: u32) -> Vec<(u32, u32)> {
    (0..hosts)
        .flat_map(|s| (0..hosts).filter(move |&d| d != s).map(move |d| (s, d)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert_eq!(shift(4, 2), [(0, 2), (1, 3), (2, 0), (3, 1)]);
        assert_eq!(all_to_all(3).len(), 6);
        let p = permutation(1000, 9);
        let mut dst: Vec<u32> = p.iter().map(|x| x.1).collect();
        assert!(p.iter().all(|(s, d)| s != d));
        dst.sort_unstable();
        assert_eq!(dst, (0..1000).collect::<Vec<_>>());
        assert_eq!(p, permutation(1000, 9));
        assert_ne!(p, permutation(1000, 10));
    }
}
