//! One communication operation of a training step, as the step's breakdown lists it
//! (the step's `Breakdown::operations`), and the roles an operation plays.

use serde::{Deserialize, Serialize};

/// A collective operation a step performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    SendRecv,
}

/// One communication operation of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    /// What it is for: one of [`ROLES`] (`embedding-gradient`: tied embeddings on the first and
    /// the last stage, summed).
    #[serde(deserialize_with = "role_named")]
    pub role: Role,
    pub collective: Op,
    /// Groups that run it at once, and the ranks of each.
    pub groups: usize,
    pub ranks_per_group: usize,
    /// The buffer of one call, bytes, as nccl-tests sizes it for the collective.
    pub bytes: u64,
    /// Calls in one step (an average stage's, where stages differ).
    pub calls_per_step: f64,
    /// One call, all groups at once, seconds.
    pub seconds_per_call: f64,
}

/// What an operation is for: one of [`ROLES`]. A name of its own so that serde reads it back
/// through [`ROLES`] rather than borrowing it from the input (which a `&'static str` field would
/// ask of every input).
pub type Role = &'static str;

/// What a step's operations are for ([`Operation::role`]).
pub const ROLES: [&str; 8] = [
    "tensor-parallel",
    "expert-parallel",
    "context-parallel",
    "pipeline-forward",
    "pipeline-backward",
    "data-parallel",
    "expert-data-parallel",
    "embedding-gradient",
];

/// An operation's role read back (a sharded sweep's results, `railyard merge`): one of [`ROLES`].
fn role_named<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let name = String::deserialize(d)?;
    ROLES.iter().copied().find(|r| *r == name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "operation role `{name}`: valid: {}",
            ROLES.join(", ")
        ))
    })
}
