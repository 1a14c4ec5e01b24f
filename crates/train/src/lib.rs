//! Training workloads: LLMs, their parallelism, and the compute and communication of one step.
//!
//! [`model`] describes transformers as data and counts their parameters and FLOPs. No I/O.

pub mod model;
pub mod parallel;
