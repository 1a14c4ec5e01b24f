//! The ids of a workload's resources and flows, in the order they were added.

/// Index of a resource in its [`Workload`](super::Workload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(pub(super) u32);

impl ResourceId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The id of the `i`th resource added; callers that add resources in a known order (the fabric
    /// network) name them without keeping every id. `Workload::add_flow` still checks the range.
    pub(crate) const fn from_index(i: u32) -> ResourceId {
        ResourceId(i)
    }
}

/// Index of a flow in its [`Workload`](super::Workload), in the order flows were added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(pub(super) u32);

impl FlowId {
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}
