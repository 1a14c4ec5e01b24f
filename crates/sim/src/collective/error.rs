//! Why a collective cannot run.

use crate::cancel::Cancelled;
use crate::collective::Bottleneck;
use crate::collective::MAX_ALLTOALL_FLOWS;
use crate::error::SimError;
use crate::net::routes::RouteFailure;
use crate::time::PastClock;
use railyard_catalog::number;
use std::fmt;
/// Why a collective cannot run.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectiveError {
    Sim(SimError),
    /// Connections with no route (first few, and how many in all).
    Routes {
        failures: Vec<RouteFailure>,
        total: usize,
    },
    /// Input the collective cannot use (`what` names the flag).
    Config {
        what: &'static str,
        message: String,
    },
    /// An all-to-all of `ranks` ranks makes `flows` flows, more than [`MAX_ALLTOALL_FLOWS`]: too
    /// large to lay out as one step.
    TooManyFlows {
        ranks: u32,
        flows: u64,
    },
    /// The caller's `Cancel` flag was set (`run_until`).
    Cancelled,
    /// A time past the simulator's clock (`Time::CLOCK`): what would take it (`allreduce of
    /// 8589934592 bytes`, `one step of ring`), how long, and the resource that limits the slowest
    /// flow, with its rate (what made it so slow).
    PastClock {
        what: String,
        past: PastClock,
        bottleneck: Option<Bottleneck>,
    },
}

impl From<Cancelled> for CollectiveError {
    fn from(_: Cancelled) -> Self {
        CollectiveError::Cancelled
    }
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectiveError::Sim(e) => write!(f, "{e}"),
            CollectiveError::Routes { failures, total } => {
                write!(f, "{total} connection(s) have no route")?;
                for x in failures {
                    write!(f, "\n  {x}")?;
                }
                Ok(())
            }
            CollectiveError::Config { what, message } => write!(f, "{what}: {message}"),
            CollectiveError::TooManyFlows { ranks, flows } => write!(
                f,
                "{ranks} ranks make {flows} flows; the limit is {MAX_ALLTOALL_FLOWS} (about 2,048 GPUs)"
            ),
            CollectiveError::Cancelled => f.write_str("cancelled"),
            CollectiveError::PastClock {
                what,
                past,
                bottleneck,
            } => {
                write!(f, "{what} would take {past}")?;
                if let Some(b) = bottleneck {
                    write!(
                        f,
                        "; its bottleneck: {}, {} GB/s shared by {} flows",
                        b.resource,
                        number(b.capacity_gbs),
                        b.flows
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CollectiveError {}

impl From<SimError> for CollectiveError {
    fn from(e: SimError) -> Self {
        CollectiveError::Sim(e)
    }
}
