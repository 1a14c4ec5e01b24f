//! Evaluating a design: what the front ends (the CLI and the web app) ask of a built fabric, each
//! question one function that sets the simulation up, runs it and returns a result to print.
//!
//! - [`check`]: a discovered fabric's health, verified against a plan, with what each finding
//!   costs (`railyard check`).
//! - [`collective`]: an NCCL collective swept over message sizes, routed by a policy or by an
//!   OpenSM LFT dump, with cables taken down (`railyard sim collective`).
//! - [`busbw`]: bus-bandwidth curves of all-reduce and all-to-all, for the report's plot and the
//!   web app (cancellable).
//! - [`calibrate`]: nccl-tests logs against the design: a calibration fitted to them (`railyard
//!   calibrate`), each logged size beside its prediction (`railyard check-nccl`).
//! - [`compare`]: designs side by side: busbw at 1 GiB, a training step, the network's cost per
//!   million tokens, and the comparison's table and JSON (`railyard compare`).
//! - [`design`]: a design from a front end's words: the key tables, the presets, the spec with
//!   the keys given, the fabric built or planned (`plan`, and every command's design flags).
//! - [`discovered`]: a fabric as built (fabric.json or discovery output) as a design, its servers
//!   furnished from a description (`--fabric` on every command).
//! - [`domain`]: a training job on rack-scale NVLink domains (GB200/GB300 NVL72): the GPUs it
//!   takes of a rack, the default TP there, which of its groups stay inside a rack.
//! - [`failures`]: the cables `--fail-cable`, `--fail-links` and `--fail-host-links` take down,
//!   and the servers that drains (`sim collective`, `compare`, `train`).
//! - [`flows`]: flows between hosts on a plain leaf-spine, read from a file or drawn at random,
//!   simulated to their completion times (`railyard sim flows`).
//! - [`impact`]: what each finding of `check` costs in busbw and training throughput.
//! - [`interop`]: a design handed to the InfiniBand and site tools (`export ibnet`, `export
//!   lldp`, `export slurm`), the fabric as built verified against it (`verify`), a discovery dump
//!   imported as a fabric (`import ibnet`).
//! - [`jobs`]: many jobs on one fabric: a job mix placed by a scheduler's policy, every step alone
//!   and with the others on the shared links; a cluster trace replayed (`railyard jobs`).
//! - [`parts`]: the catalog's parts listed by kind, filtered by technology or part (`railyard
//!   catalog`).
//! - [`rules`]: when a run key given cannot change the result: one table of rules every front end
//!   checks its keys against, so the CLI and the web API refuse a key alike.
//! - [`scenario`]: a design and how it is run (fabric, catalog, cost, network, routing, relay,
//!   cables down), built once by a front end and handed to the question it asks.
//! - [`shard`]: sweeps on a job array: a command's cases split over N shards, each shard's file,
//!   and the shards merged back into the unsharded run's output (`--shard I/N -o DIR`, `railyard
//!   merge`).
//! - [`train`]: a training step on a design: the layout resolved, the step simulated with cables
//!   taken down, its tokens priced, whether SHARP changes it (`train`, `compare`, the web app).
//! - [`text`]: numbers as every output writes them, for the front ends' own lines.
//! - [`tco`]: the whole cluster's cost of ownership per hour and per million tokens: servers and
//!   every network paid off over some years, and the power they draw (`compare`, `train`).
//!
//! Architecture invariant: no I/O and no clock: files are read by the caller and handed over as
//! text or parsed values; the same fabric and request give the same result.

pub mod busbw;
pub mod calibrate;
pub mod check;
pub mod collective;
pub mod compare;
pub mod design;
pub mod discovered;
pub mod domain;
pub mod failures;
pub mod flows;
pub mod impact;
pub mod interop;
pub mod jobs;
pub mod parts;
pub mod rules;
pub mod scenario;
pub mod shard;
pub mod tco;
pub mod text;
pub mod train;

/// The two nouns every question takes and a front end holds between loading a design and asking
/// of it: the fabric (planned or as built) and the catalog of its parts. Re-exported so a front
/// end names them without importing the model crates (issue 34: the CLI imports only study).
pub use railyard_catalog::Catalog;
pub use railyard_fabric::Fabric;

/// The routing policies, as front ends parse `--routing` into them.
pub use railyard_sim::routing::RoutingKind;
pub use scenario::{RunSettings, Scenario};

/// Stops every running simulation at its next check: a front end's memory budget passed
/// (`--memory-budget`), so a what-if too large for the machine ends with an error.
pub use railyard_sim::cancel::stop_all;
/// A byte size as the commands take it (`1G`, `64M`, `4096`): NCCL's and nccl-tests' suffixes.
pub use railyard_sim::nccl::parse_size;
