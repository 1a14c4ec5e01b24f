//! Renderings of a plan: CSV and JSON files, the readable summary, and side-by-side comparisons.
//!
//! Each function returns the whole text; the CLI writes it to a temp file and renames it into place.
//!
//! Rooms: `files` (what `plan --out` writes), `csv` (bom.csv, the cabling files), `summary` (the
//! readable summary), `networks` (a storage or management network in it), `compare` (designs
//! side by side), `words` (numbers as the texts print them).

mod compare;
mod csv;
mod files;
mod networks;
mod racks;
mod summary;
mod words;

pub use compare::compare_text;
pub use csv::{bom_csv, cabling_csv, network_cabling_csv, write_cabling_csv, CABLING_HEADER};
pub use files::{network_files, render_files, summary_json};
pub use summary::{alternatives_built, summary_text};

/// `1234567.8` -> `1,234,568`: the one digit grouping, the planner's.
pub use railyard_fabric::text::thousands;
