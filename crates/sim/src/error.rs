//! What can be wrong with a simulation's input. Everything is checked when the input is built, so a
//! validated `Workload` or `LeafSpine` always simulates to the end.

use crate::engine::ids::{FlowId, ResourceId};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// A resource capacity must be a finite number of bytes per second above zero.
    BadCapacity {
        resource: usize,
        bytes_per_second: f64,
    },
    /// A flow's path names a resource that was never added.
    UnknownResource { flow: usize, resource: ResourceId },
    /// A flow's path crosses the same resource twice (a loop); paths must be simple.
    RepeatedResource { flow: usize, resource: ResourceId },
    /// A flow may only wait for flows added before it, which also rules out cycles.
    BadDependency { flow: usize, dependency: FlowId },
    /// More resources, flows or path entries than the engine's 32-bit indices hold.
    TooLarge(&'static str),
    /// A plain-network parameter out of range (`what` names it).
    Config { what: &'static str, message: String },
    /// A flow between hosts names a host that does not exist or sends to itself.
    BadFlow { flow: usize, message: String },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::BadCapacity {
                resource,
                bytes_per_second,
            } => write!(
                f,
                "resource {resource}: capacity {} B/s must be finite and above zero",
                railyard_catalog::number(*bytes_per_second)
            ),
            SimError::UnknownResource { flow, resource } => {
                write!(
                    f,
                    "flow {flow}: path names unknown resource {}",
                    resource.index()
                )
            }
            SimError::RepeatedResource { flow, resource } => write!(
                f,
                "flow {flow}: path crosses resource {} more than once",
                resource.index()
            ),
            SimError::BadDependency { flow, dependency } => write!(
                f,
                "flow {flow}: may only wait for an earlier flow, not flow {}",
                dependency.index()
            ),
            SimError::TooLarge(what) => write!(f, "too many {what} (the limit is 2^32 - 1)"),
            SimError::Config { what, message } => write!(f, "{what}: {message}"),
            SimError::BadFlow { flow, message } => write!(f, "flow {flow}: {message}"),
        }
    }
}

impl std::error::Error for SimError {}
