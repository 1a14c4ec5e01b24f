//! Why a mix or a replay could not run: the job at fault and what is wrong, or the step's own
//! error.

use railyard_train::fabric_timer::TrainError;
use railyard_train::parallel::LayoutError;
use std::fmt;

/// Why a mix could not be run.
#[derive(Debug, Clone, PartialEq)]
pub enum JobsError {
    /// A job as the file gives it does not fit the design (named).
    Job {
        job: String,
        message: String,
    },
    Layout {
        job: String,
        error: LayoutError,
    },
    Train(TrainError),
    Topology(String),
}

impl fmt::Display for JobsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobsError::Job { job, message } => write!(f, "job `{job}`: {message}"),
            JobsError::Layout { job, error } => write!(f, "job `{job}`: {error}"),
            JobsError::Train(e) => e.fmt(f),
            JobsError::Topology(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for JobsError {}
