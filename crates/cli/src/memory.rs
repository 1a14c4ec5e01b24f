//! The memory budget of a simulation (`--memory-budget` on `sim collective`, `compare`, `train`
//! and `check`): the process's allocator counts the bytes it holds, and once they pass the budget
//! every running simulation stops at its next check (`study::stop_all`, read every
//! few hundred transfers laid out and at every engine event), so a what-if too large for the
//! machine ends with an error naming the flag instead of the kernel's OOM killer ending it
//! without a word, or the machine swapping.
//!
//! The count is of heap bytes asked for (a zeroed vector counts in full before its pages are
//! touched), so it reaches the budget no later than the resident size does.

use crate::error::CliError;
use clap::Args;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The system allocator, counting the bytes it holds.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static OVER: AtomicBool = AtomicBool::new(false);
/// Bytes held when the budget was passed.
static AT: AtomicUsize = AtomicUsize::new(0);
/// The budget as given (`None`: the default), for the message.
static GIVEN: AtomicBool = AtomicBool::new(false);

fn grew(n: usize) {
    let live = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    if live > BUDGET.load(Ordering::Relaxed) && !OVER.swap(true, Ordering::Relaxed) {
        AT.store(live, Ordering::Relaxed);
        railyard_study::stop_all();
    }
}

// SAFETY: every call is passed to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

/// `--memory-budget`, flattened into the commands that simulate.
#[derive(Debug, Clone, Args)]
pub struct MemoryArgs {
    /// Stop with an error naming this flag once the simulation holds more than SIZE of memory
    /// (`2G`, `512M`), rather than be ended by the OOM killer. Default: three quarters of the
    /// machine's memory (or of the cgroup's limit, when lower).
    #[arg(long, value_name = "SIZE", value_parser = parse_budget)]
    pub memory_budget: Option<u64>,
}

fn parse_budget(s: &str) -> Result<u64, String> {
    let n = railyard_study::parse_size(s)?;
    if n < 1 << 20 {
        return Err(format!(
            "`{s}`: a budget below 1M cannot hold a design; valid: 1M or more, e.g. 512M, 2G"
        ));
    }
    Ok(n)
}

impl MemoryArgs {
    /// Sets the process's budget: as given, or the default.
    pub fn apply(&self) {
        let budget = match self.memory_budget {
            Some(b) => {
                GIVEN.store(true, Ordering::Relaxed);
                Some(b)
            }
            None => machine_memory().map(|m| m / 4 * 3),
        };
        if let Some(b) = budget {
            BUDGET.store(usize::try_from(b).unwrap_or(usize::MAX), Ordering::Relaxed);
        }
    }
}

/// The machine's memory in bytes (`MemTotal` of /proc/meminfo), or its cgroup's limit when lower
/// (`memory.max`, cgroup v2).
fn machine_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok());
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// The error to give when the budget was passed, whatever the simulation stopped with.
pub fn exceeded() -> Option<CliError> {
    if !OVER.load(Ordering::Relaxed) {
        return None;
    }
    let mib = |b: usize| (b >> 20).to_string();
    let budget = BUDGET.load(Ordering::Relaxed);
    let which = if GIVEN.load(Ordering::Relaxed) {
        format!("--memory-budget {}M", mib(budget))
    } else {
        format!(
            "--memory-budget's default, {}M (three quarters of this machine's memory)",
            mib(budget)
        )
    };
    Some(CliError::input(format!(
        "stopped before the end: the simulation came to hold {}M of memory, past {which}; give a larger --memory-budget if the machine has it, or simulate fewer servers",
        mib(AT.load(Ordering::Relaxed))
    )))
}
