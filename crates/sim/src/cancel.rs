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

/// Set once the process is past its memory budget: every [`Cancel`], [`Cancel::NEVER`] included,
/// reads as set from then on, so whatever simulation runs stops at its next check instead of
/// growing until the kernel's OOM killer ends it without a word. Only the binary sets it (its
/// allocator counts the bytes it holds, `railyard --memory-budget`); the core never does.
static STOP_ALL: AtomicBool = AtomicBool::new(false);

/// Stops every computation of the process at its next check (`STOP_ALL`).
pub fn stop_all() {
    STOP_ALL.store(true, Ordering::Relaxed);
}

/// Whether [`stop_all`] was called.
pub fn stopping_all() -> bool {
    STOP_ALL.load(Ordering::Relaxed)
}

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
    /// Never cancelled by a caller: run to the end (or until the process is past its memory
    /// budget, [`stop_all`]).
    pub const NEVER: Cancel<'static> = Cancel(None);

    /// Cancelled once `flag` is true.
    pub fn new(flag: &'a AtomicBool) -> Cancel<'a> {
        Cancel(Some(flag))
    }

    /// Whether the flag is set.
    pub fn is_set(self) -> bool {
        self.0.is_some_and(|f| f.load(Ordering::Relaxed)) || stopping_all()
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
