//! The fabric model: a validated [`ClusterSpec`](railyard_spec::ClusterSpec) and the
//! [`Catalog`](railyard_catalog::Catalog) in, a [`Fabric`] graph out.
//!
//! Building runs in four steps, each in its own module:
//! 1. `hardware` looks up the GPU, NIC and the switches that can carry the technology, and
//!    [`search`] picks the switch model, port mode (NDR, NDR200, 400GbE...) and tree [`Shape`](topo::Shape);
//! 2. `server` adds every server's GPUs, PCIe switches, CPU root complex, NVLink domain and NICs;
//! 3. [`topo`] adds the switches and cables NIC ports to leaves and leaves up the tree;
//! 4. [`layout`] places racks, measures every cable run and picks cables and transceivers from the catalog.
//!
//! Around them: [`graph`] (the arena), [`bom`] (parts and cost), [`networks`] (storage and
//! management networks), [`import`] (discovered fabrics), [`fabric_file`] (fabric.json) and
//! [`text`] (numbers in words). This file only declares the modules and the crate's public paths;
//! no module imports another in a circle.
//!
//! Architecture invariant: building does no I/O and is deterministic; the same spec and catalog give the
//! same fabric, node for node and port for port.

pub mod bom;
mod build;
mod error;
pub mod fabric_file;
pub mod graph;
mod hardware;
pub mod import;
pub mod layout;
pub mod networks;
pub mod search;
mod server;
mod shape;
pub mod text;
pub mod topo;

pub use build::build_resolved;
pub(crate) use error::err;
pub use error::BuildError;
pub use graph::*;
pub use hardware::{base, host_cage, switch_options, Base, Resolved, SwitchOption};
pub use search::{build, design, resolve, DesignReport, Designed, SearchOptions};

#[cfg(test)]
mod tests;
