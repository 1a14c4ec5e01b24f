//! Stopping a long computation early: a flag the caller owns (set from another thread, say when a
//! web client goes away), read between the steps of a simulation.
//!
//! Reading the flag is the only thing this does: no clock, no I/O. Where it is read (every 256
//! transfers laid out, at every engine event and every 4,096 flows started or drained at one
//! instant, for every resource a solve visits and every 4,096 entries of its queue, between phases
//! and algorithms) is chosen so that a set flag is noticed within milliseconds (9-22 ms on a
//! million-flow all-to-all, BENCHMARKS.md) while an unset one costs a relaxed load beside heap
//! work.

use std::sync::atomic::{AtomicBool, Ordering};

/// A view of a cancellation flag, or none ([`Cancel::NEVER`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Cancel<'a>(Option<&'a AtomicBool>);

/// The computation stopped because its [`Cancel`] flag was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cancelled")
    }
}

impl std::error::Error for Cancelled {}

impl<'a> Cancel<'a> {
    /// Never cancelled: run to the end.
    pub const NEVER: Cancel<'static> = Cancel(None);

    /// Cancelled once `flag` is true.
    pub fn new(flag: &'a AtomicBool) -> Cancel<'a> {
        Cancel(Some(flag))
    }

    /// Whether the flag is set.
    pub fn is_set(self) -> bool {
        self.0.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `Err(Cancelled)` once the flag is set.
    pub fn check(self) -> Result<(), Cancelled> {
        if self.is_set() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_is_never_set_and_a_flag_is_read() {
        assert!(!Cancel::NEVER.is_set());
        let flag = AtomicBool::new(false);
        let c = Cancel::new(&flag);
        assert_eq!(c.check(), Ok(()));
        flag.store(true, Ordering::Relaxed);
        assert_eq!(c.check(), Err(Cancelled));
    }
}
