//! Training workloads: LLMs, their parallelism, and the compute and communication of one step.
//!
//! [`model`] describes transformers as data and counts their parameters and FLOPs; [`parallel`] places
//! ranks on GPUs as Megatron-LM does; [`step`] puts compute and communication (timed by a
//! [`step::CommTimer`], the simulator on the fabric) into a 1F1B step; [`simai`] reads SimAI/AICB
//! workload files and replays them on the same timer; [`output`] renders a step as text and JSON.
//! No I/O.

pub mod compute;
pub mod dispatch;
pub mod fabric_timer;
pub mod fit;
#[cfg(test)]
mod fixtures;
pub mod layout;
mod ledger;
pub mod memory;
pub mod model;
pub mod operation;
pub mod output;
pub mod parallel;
pub mod parallelism;
pub mod precision;
pub mod recompute;
pub mod schedule;
pub mod simai;
pub mod step;
