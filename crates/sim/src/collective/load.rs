//! Flows counted per resource, each by its weight ([`Load`]).

use crate::engine;
use crate::engine::Weight;
use crate::SimError;
/// Flows counted per resource, each by its weight ([`Routes::weight`]), exactly: in whole units
/// of `1 / unit` flow, `unit` the least common multiple of the weights' denominators met so far
/// (1 while every flow weighs 1, when the counts are the flows). Integers add up the same in any
/// order, so the chunks counted on any number of threads give the same counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Load {
    pub(super) units: Vec<u64>,
    pub(super) unit: u64,
}

impl Load {
    pub(super) fn new(resources: usize) -> Load {
        Load {
            units: vec![0; resources],
            unit: 1,
        }
    }

    /// The same resources with nothing counted.
    pub(super) fn empty_like(&self) -> Load {
        Load::new(self.units.len())
    }

    /// Counts `n` flows of `weight` on resource `r`.
    pub(super) fn add(&mut self, r: usize, n: u64, weight: Weight) -> Result<(), SimError> {
        self.fit(u64::from(weight.den()))?;
        let each = u64::from(weight.num()) * (self.unit / u64::from(weight.den()));
        let x = &mut self.units[r];
        *x = n
            .checked_mul(each)
            .and_then(|v| x.checked_add(v))
            .ok_or(SimError::TooLarge("flows on a link"))?;
        Ok(())
    }

    /// Adds another count of the same resources.
    pub(super) fn absorb(&mut self, other: &Load) -> Result<(), SimError> {
        self.fit(other.unit)?;
        let scale = self.unit / other.unit;
        for (x, &y) in self.units.iter_mut().zip(&other.units) {
            *x = y
                .checked_mul(scale)
                .and_then(|v| x.checked_add(v))
                .ok_or(SimError::TooLarge("flows on a link"))?;
        }
        Ok(())
    }

    /// Makes `unit` a multiple of `den`, scaling the counts.
    pub(super) fn fit(&mut self, den: u64) -> Result<(), SimError> {
        let grow = den / gcd(self.unit, den);
        if grow > 1 {
            let too_large = || SimError::TooLarge("flow weights");
            self.unit = self.unit.checked_mul(grow).ok_or_else(too_large)?;
            for x in &mut self.units {
                *x = x.checked_mul(grow).ok_or_else(too_large)?;
            }
        }
        Ok(())
    }

    /// The flows on resource `r`, by weight.
    pub(super) fn flows(&self, r: usize) -> f64 {
        self.units[r] as f64 / self.unit as f64
    }

    /// The fair share of a flow of weight 1 on resource `r` of `capacity` (at most `capacity`).
    pub(super) fn share(&self, r: usize, capacity: f64) -> f64 {
        if self.unit == 1 {
            // As before weights: the same division as the water-filling's.
            capacity / self.units[r].max(1) as f64
        } else {
            capacity / self.flows(r).max(1.0)
        }
    }

    /// The first bottleneck ([`engine::first_bottleneck`]): the resource and the share of a
    /// flow of weight 1 there.
    pub(super) fn first_bottleneck(&self, capacity: impl Fn(usize) -> f64) -> Option<(usize, f64)> {
        let (r, share) = engine::first_bottleneck(&self.units, &capacity)?;
        Some((
            r,
            if self.unit == 1 {
                share
            } else {
                share * self.unit as f64
            },
        ))
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
