//! Parallelism and placement, as the rest of railyard names them: the layout as asked for
//! ([`Layout`], from [`crate::layout`]) and the parallelism it resolves to ([`Parallelism`], its
//! groups and checks, from [`crate::parallelism`]). A facade above both, so that neither imports
//! the other through it.

pub use crate::layout::{Fitted, Layout, Resolved};
pub use crate::parallelism::*;

#[cfg(test)]
#[path = "parallel_tests.rs"]
mod tests;
