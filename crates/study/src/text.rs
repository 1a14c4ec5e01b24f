//! Numbers as every railyard output writes them, for the front ends' own lines: one formatting
//! for a figure whether a model's report or a command's header prints it. Re-exported from the
//! crates that define them (the catalog's `number`, the fabric's `thousands` and `plural`) so a
//! front end needs no model crate to print.

/// A figure in its shortest exact form (`1.5`, `400`), as the catalog and every table write it.
pub use railyard_catalog::number;
/// A count with thousands separators (`16,384`), and a count with its noun (`1 server`, `2 servers`).
pub use railyard_fabric::text::{plural, thousands};
