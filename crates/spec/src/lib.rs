//! The cluster spec: what the user asks for, parsed from TOML into validated types.
//!
//! Parsing happens in two steps, as smoltcp parses packets: TOML becomes a [`raw::RawSpec`] (shape only,
//! unknown keys rejected with their line), command-line overrides are applied to the raw spec
//! ([`Overrides`]), and [`ClusterSpec::from_raw`] checks every value and fills defaults. After that point
//! a [`ClusterSpec`] is internally consistent; checks that need the hardware catalog (does this switch
//! carry this speed?) happen when the fabric is built.
//!
//! No I/O: callers pass text and a name for messages.

mod describe;
mod design;
pub mod keys;
mod overrides;
pub mod presets;
pub mod raw;
pub mod run;
mod validate;

pub use design::{
    ClusterSpec, FabricSpec, LayoutSpec, LeafPlacement, ManagementSpec, PcieSwitchSpec, Provenance,
    Reset, ServerSpec, SiteCooling, Source, StorageSpec, Topology, TRACKED_FIELDS,
};
pub use overrides::Overrides;
pub use validate::{even_pcie_layout, parse, parse_raw};

use std::fmt;

/// An error in a spec: where it came from, which field, what is wrong and what is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// File name, `preset NAME`, or `command line`.
    pub origin: String,
    /// Dotted field path, e.g. `servers.compute_nics`; empty when the TOML itself is malformed.
    pub field: String,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}: {}: {}", self.origin, self.field, self.message)
        }
    }
}

impl std::error::Error for SpecError {}

#[cfg(test)]
mod tests;
