//! Errors that end a command, with the exit status they map to.

use railyard_study::collective::{CollectiveError, SimError};
use std::fmt;

/// Exit status 2: the input is wrong (spec, flags, files); 1: something failed while doing the work.
#[derive(Debug)]
pub struct CliError {
    pub status: i32,
    pub message: String,
}

impl CliError {
    pub fn input(message: impl Into<String>) -> CliError {
        CliError {
            status: 2,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> CliError {
        CliError {
            status: 1,
            message: message.into(),
        }
    }
}

impl CliError {
    /// A simulation that could not run. What the design, the flags or the routes cause exits 2:
    /// connections without a route (`routing` names the route source), a flag the collective cannot
    /// use, a job too large to simulate. Anything else is a failure of the simulator (exit 1).
    pub fn simulation(e: CollectiveError, routing: &str) -> CliError {
        match e {
            CollectiveError::Routes { ref failures, .. } => {
                // The hint follows the reasons: cables down, or no switch joining the ends (a
                // rail-only fabric's rails).
                let down = failures.iter().any(|f| f.reason.contains("down"));
                let unjoined = failures
                    .iter()
                    .any(|f| f.reason.contains("no up-link leads to the destination"));
                let mut hints = Vec::new();
                if unjoined {
                    hints.push("no switch joins these ends (a rail-only fabric joins no rails): --pxn auto, on or staged relays cross-rail all-to-all and send/recv over NVLink");
                }
                if down {
                    hints.push("with cables down, fewer failures may leave a route");
                }
                let hint = if hints.is_empty() {
                    String::new()
                } else {
                    format!("\n({})", hints.join("; "))
                };
                CliError::input(format!("routing {routing}: {e}{hint}"))
            }
            CollectiveError::Config { what, message } => {
                CliError::input(format!("--{what}: {message}"))
            }
            CollectiveError::TooManyFlows { .. }
            | CollectiveError::Sim(SimError::TooLarge(_))
            | CollectiveError::PastClock { .. } => CliError::input(e.to_string()),
            CollectiveError::Sim(_) | CollectiveError::Cancelled => CliError::failed(e.to_string()),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}
