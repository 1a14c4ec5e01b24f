//! What a training step's communication costs, as the step counts it: the timer that prices a
//! collective on the fabric (`CommTimer`, the simulator behind it in fabric_timer.rs) and the
//! ledger that records every operation of the step with its bytes per network tier. Apart from
//! step.rs so that the step's schedule and its ledger stay files of a size one can read.

use crate::operation::{Op, Operation, ROLES};
use railyard_sim::collective::CollectiveError;
use std::collections::BTreeMap;

/// Times collectives on the fabric. `groups` run at the same time (every tensor-parallel group of the
/// job, say), so they contend as they would; `bytes` is the buffer size as nccl-tests defines it for the
/// operation. Returns the time until the slowest group finishes, seconds; an error when the
/// communication cannot run on the fabric (no route, too large to simulate).
pub trait CommTimer {
    fn seconds(&self, op: Op, groups: &[Vec<u32>], bytes: u64) -> Result<f64, CollectiveError>;

    /// Bytes one run of the operation puts on each network tier (`server-leaf`, `leaf-spine`, ...),
    /// counting every link a transfer crosses; empty when the timer knows no topology.
    fn tier_bytes(
        &self,
        _op: Op,
        _groups: &[Vec<u32>],
        _bytes: u64,
    ) -> Result<BTreeMap<String, f64>, CollectiveError> {
        Ok(BTreeMap::new())
    }

    /// GPUs a server holds, rank r on server r / this; `None` when the timer knows no servers
    /// (then node-limited dispatch is sent as a plain all-to-all).
    fn gpus_per_server(&self) -> Option<u32> {
        None
    }
}

/// Network bytes per tier and the operations of a step, as the step counts them.
pub(crate) struct Ledger<'t> {
    pub(crate) timer: &'t dyn CommTimer,
    pub(crate) traffic: BTreeMap<String, f64>,
    pub(crate) operations: Vec<Operation>,
}

impl<'t> Ledger<'t> {
    /// An empty ledger whose operations `timer` times.
    pub(crate) fn new(timer: &'t dyn CommTimer) -> Self {
        Ledger {
            timer,
            traffic: BTreeMap::new(),
            operations: Vec::new(),
        }
    }

    /// Counts `times` runs of `op` on `groups` in the step; returns one run's seconds.
    pub(crate) fn count(
        &mut self,
        role: &'static str,
        op: Op,
        groups: &[Vec<u32>],
        bytes: u64,
        times: f64,
    ) -> Result<f64, CollectiveError> {
        debug_assert!(ROLES.contains(&role), "role {role} is not in ROLES");
        for (tier, b) in self.timer.tier_bytes(op, groups, bytes)? {
            *self.traffic.entry(tier).or_default() += b * times;
        }
        let seconds = self.timer.seconds(op, groups, bytes)?;
        self.operations.push(Operation {
            role,
            collective: op,
            groups: groups.len(),
            ranks_per_group: groups.first().map_or(0, Vec::len),
            bytes,
            calls_per_step: times,
            seconds_per_call: seconds,
        });
        Ok(seconds)
    }
}
