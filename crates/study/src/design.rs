//! A design from a front end's words: the key tables flags and pairs are parsed by (the design
//! keys of crates/spec/src/keys.rs and the run keys beside them), the built-in presets, the spec
//! a preset or file gives with the keys applied, and the fabric built or planned from it. The
//! front end reads the files and names its flags in errors; the spec crate validates, the fabric
//! crate searches and builds, the plan crate prices and renders.

use railyard_catalog::Catalog;
use railyard_fabric::layout::{rack_places_of, RackPlace};
use railyard_fabric::{Fabric, SearchOptions};

/// The design keys (`--servers`, `tech=`, ...) and how a key is named on each front end: the one
/// table every front end parses a design by.
pub use railyard_spec::keys;
/// The built-in designs (`railyard presets`).
pub use railyard_spec::presets;
/// The run keys (`routing`, `pxn`, `algo`, `sharp`, the training layout), beside the design keys.
pub use railyard_spec::run;
/// A spec as written (before validation), the validated spec, the keys a front end gave over it,
/// and where each value came from.
pub use railyard_spec::{parse_raw, raw::RawSpec, ClusterSpec, Overrides, Source};

/// Why a design cannot be built: the spec field at fault and what is wrong with it.
pub use railyard_fabric::BuildError;
/// The plan's files as `plan --out` writes them (bill of materials, cabling, fabric.json, the
/// summary) and its summary as text or JSON: crate railyard-plan's one renderer per format.
pub use railyard_plan::output;
/// A design planned: the compute fabric and its plan (bill of materials, cabling, cost, power),
/// with the storage and management networks.
pub use railyard_plan::{Plan, Planned};

/// Searches the spec's design (listing the next `alternatives` designs), builds it and plans it
/// with its storage and management networks.
pub fn plan(
    spec: &ClusterSpec,
    catalog: &Catalog,
    alternatives: usize,
) -> Result<Planned, BuildError> {
    railyard_plan::plan_design(spec, catalog, &SearchOptions { alternatives })
}

/// Builds the spec's design (the search's best, no plan).
pub fn build(spec: &ClusterSpec, catalog: &Catalog) -> Result<Fabric, BuildError> {
    railyard_fabric::build(spec, catalog)
}

/// Gives the spec's GPU the catalog's spelling when it was typed in another case (`--gpu h100`
/// is the catalog's `H100`): GPU names are matched without regard to case where a user types
/// them, and exactly everywhere after. A name that matches no catalog GPU, or several when case
/// is ignored, is left as typed for the build's error, which lists the valid names.
pub fn canonical_gpu(spec: &mut ClusterSpec, catalog: &Catalog) {
    if catalog.gpus.contains_key(&spec.servers.gpu) {
        return;
    }
    let mut hits = catalog
        .gpus
        .keys()
        .filter(|k| k.eq_ignore_ascii_case(&spec.servers.gpu));
    if let (Some(k), None) = (hits.next(), hits.next()) {
        spec.servers.gpu = k.clone();
    }
}

/// Where every node of a plan stands, by node id: row, rack and the rack units cabling.csv gives.
pub type Places = Vec<Option<RackPlace>>;

/// Where every node of `f` (built from `spec`) stands, as `plan` writes it in cabling.csv.
pub fn places(f: &Fabric, spec: &ClusterSpec, catalog: &Catalog) -> Places {
    rack_places_of(f, spec, catalog)
}
