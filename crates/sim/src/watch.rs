//! Watching a long simulation from outside: counters the engine sets as it goes, for a caller's
//! other thread to read (a terminal's progress line; `sim flows` with a hundred thousand flows in
//! flight at once runs for many minutes, BENCHMARKS.md).
//!
//! Like [`crate::cancel`], this is a view the caller owns: the engine only stores into it (relaxed,
//! once per event time), reads no clock and does no I/O, and what it computes does not depend on
//! whether anyone watches.

use crate::time::Time;
use std::sync::atomic::{AtomicU64, Ordering};

/// How far a simulation got. Shared by reference between the simulating thread and a reader.
#[derive(Debug, Default)]
pub struct Watch {
    flows: AtomicU64,
    finished: AtomicU64,
    now_ps: AtomicU64,
}

/// One reading of a [`Watch`]. The fields are stored one by one, so a reading taken while the
/// simulation runs may pair a count with the time of the next event; it is for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reading {
    /// Engine flows in the workload (0 until the simulation starts).
    pub flows: u64,
    /// Engine flows finished so far: their last byte sent (or, for a flow with nothing to send,
    /// started).
    pub finished: u64,
    /// Simulated time of the last event handled.
    pub now: Time,
}

impl Watch {
    pub fn new() -> Watch {
        Watch::default()
    }

    /// What the simulation has reported so far.
    pub fn read(&self) -> Reading {
        Reading {
            flows: self.flows.load(Ordering::Relaxed),
            finished: self.finished.load(Ordering::Relaxed),
            now: Time::from_ps(self.now_ps.load(Ordering::Relaxed)),
        }
    }

    pub(crate) fn set_flows(&self, flows: u64) {
        self.flows.store(flows, Ordering::Relaxed);
    }

    pub(crate) fn set(&self, finished: u64, now: Time) {
        self.finished.store(finished, Ordering::Relaxed);
        self.now_ps.store(now.ps(), Ordering::Relaxed);
    }
}
