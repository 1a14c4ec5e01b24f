//! The flows of a folded phase merged by what they cross ([`Merged`]).

use crate::engine::Weight;
use std::collections::HashMap;
/// The flows of a folded phase, merged by what they cross: their bytes and, per resource class,
/// how many of its members (sorted by class), kept flat so adding a flow allocates nothing.
#[derive(Debug, Clone, Default)]
pub(super) struct Merged {
    /// Signature (hash of the bytes and crossings) -> the first merged flow with it; further
    /// ones with the same signature are chained through `next`.
    pub(super) index: HashMap<u64, u32>,
    pub(super) next: Vec<u32>,
    pub(super) sig: Vec<u64>,
    pub(super) bytes: Vec<u64>,
    /// Merged flow k crosses `crossed[ends[k]..ends[k + 1]]`.
    pub(super) crossed: Vec<(u32, u32)>,
    pub(super) ends: Vec<u32>,
    /// Per merged flow: the flows it stands for, in units of `scale` flows of the step.
    pub(super) weight: Vec<u64>,
    /// Per merged flow: what each of its flows weighs in the fair shares (`Routes::weight`).
    pub(super) share: Vec<Weight>,
    /// Per merged flow: the first of its flows' real paths (resource indexes of the network).
    pub(super) paths: Vec<u32>,
    pub(super) offsets: Vec<u32>,
    /// With tracing on, per flow laid out: its source server and its merged flow.
    pub(super) trace: Option<Vec<(u32, u32)>>,
}

/// No next merged flow with the same signature.
const END: u32 = u32::MAX;

impl Merged {
    pub(super) fn new(trace: bool) -> Merged {
        Merged {
            ends: vec![0],
            offsets: vec![0],
            trace: trace.then(Vec::new),
            ..Merged::default()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    pub(super) fn crossed_of(&self, k: usize) -> &[(u32, u32)] {
        &self.crossed[self.ends[k] as usize..self.ends[k + 1] as usize]
    }

    /// Adds `weight` flows of `bytes` crossing `crossed` (signature `sig`); returns its merged
    /// flow.
    pub(super) fn add(
        &mut self,
        sig: u64,
        bytes: u64,
        crossed: &[(u32, u32)],
        weight: u64,
        share: Weight,
        path: &[u32],
    ) -> u32 {
        let mut at = self.index.get(&sig).copied().unwrap_or(END);
        let mut last = END;
        while at != END {
            let k = at as usize;
            if self.bytes[k] == bytes && self.share[k] == share && self.crossed_of(k) == crossed {
                self.weight[k] += weight;
                return at;
            }
            last = at;
            at = self.next[k];
        }
        let k = self.len() as u32;
        match last {
            END => {
                self.index.insert(sig, k);
            }
            l => self.next[l as usize] = k,
        }
        self.next.push(END);
        self.sig.push(sig);
        self.bytes.push(bytes);
        self.crossed.extend_from_slice(crossed);
        self.ends.push(self.crossed.len() as u32);
        self.weight.push(weight);
        self.share.push(share);
        self.paths.extend_from_slice(path);
        self.offsets.push(self.paths.len() as u32);
        k
    }

    /// Adds another class's merged flows, in their order, after this one's.
    pub(super) fn absorb(&mut self, other: Merged) {
        let mut to = Vec::with_capacity(other.len());
        for k in 0..other.len() {
            let path = &other.paths[other.offsets[k] as usize..other.offsets[k + 1] as usize];
            to.push(self.add(
                other.sig[k],
                other.bytes[k],
                other.crossed_of(k),
                other.weight[k],
                other.share[k],
                path,
            ));
        }
        if let (Some(mine), Some(theirs)) = (self.trace.as_mut(), other.trace) {
            mine.extend(theirs.into_iter().map(|(s, k)| (s, to[k as usize])));
        }
    }
}
