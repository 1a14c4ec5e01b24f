//! railyard's simulator: how fast does communication run on a fabric?
//!
//! Flow-level (fluid) simulation: every transfer is a flow with a rate, flows share the capacities
//! they cross max-min fairly, and the sharing is re-solved only when flows start or finish. That
//! sits between analytical bus-bandwidth formulas (fast, blind to the topology) and packet-level
//! simulators such as ns-3 (topology- and protocol-aware, hours slow): it sees every link and every
//! collision, and a million flows take seconds.
//!
//! Layers, bottom up (each a folder or a module):
//! - [`time`], [`error`], [`cancel`], [`watch`]: integer picoseconds, what can be wrong with an
//!   input, a caller's flag that stops a long simulation, counters for a progress line.
//! - [`engine`]: resources, flows, max-min sharing, the event loop, and flows solved as classes
//!   ([`engine::classes`]). Knows nothing of networks.
//! - [`net`]: the network model: a fabric as resources and latencies ([`net::fabric_net`]), the
//!   route sources over it ([`net::routing`], [`net::tree_router`], [`net::routes`]), failures,
//!   symmetry, and the plain leaf-spine of `sim flows` ([`net::leafspine`]).
//! - [`traffic`]: traffic patterns, the flows file, flow-completion-time statistics.
//! - [`nccl`]: what NCCL and nccl-tests define: collectives, busbw factors, size sweeps, NCCL's
//!   own tuning model ([`nccl::tuning`]), the constants fitted to published runs
//!   ([`nccl::fitted`]), nccl-tests logs read back ([`nccl::nccl_tests`]).
//! - [`collective`]: NCCL's collectives on a fabric, one step simulated and every size priced,
//!   one file per algorithm in `collective/algo/`.
//! - [`output`]: what `railyard sim` prints, as text and JSON.
//!
//! The modules' paths from before the folders (`railyard_sim::fabric_net`, `::routing`,
//! `::tuning`, `::nccl_tests`...) stay as re-exports for the other crates.
//!
//! The engine on its own, two flows sharing one 100 Gb/s link:
//!
//! ```
//! use railyard_sim::{simulate, Flow, Time, Workload};
//!
//! let mut w = Workload::new();
//! let link = w.add_resource(12.5e9)?; // bytes per second
//! for _ in 0..2 {
//!     w.add_flow(&Flow {
//!         path: &[link],
//!         bytes: 1_000_000,
//!         latency: Time::from_ns(100),
//!         ..Flow::default()
//!     })?;
//! }
//! let out = simulate(&w);
//! // Each gets half the link: 1 MB at 6.25 GB/s is 160 us, plus the latency.
//! assert!(out.flows.iter().all(|f| f.finish == Time::from_us(160) + Time::from_ns(100)));
//! # Ok::<(), railyard_sim::SimError>(())
//! ```
//!
//! Architecture invariant: the simulator does no I/O and reads no clock; the same input gives the
//! same output bit for bit. Input is validated when it is built (`Workload::add_flow`,
//! `LeafSpine::new`, `leafspine::simulate`), and a validated input always simulates to the end.

pub mod cancel;
pub mod collective;
pub mod engine;
pub mod error;
pub mod nccl;
pub mod net;
pub mod output;
pub mod time;
pub mod traffic;
pub mod watch;

// The modules' paths before the crate took folders (issue 34), which other crates use.
pub use engine::classes;
pub use nccl::{fitted, nccl_tests, tuning};
pub use net::{
    calibration, leafspine, nvl_domain, rates, regular, routing, scale_up, symmetry, tree_router,
};
pub use traffic::{fct, flows_file};

/// The network model by its path before it became [`net`]: [`FabricNet`](net::fabric_net::FabricNet),
/// its configuration, routes, failures and capabilities, for the crates that name it so.
pub mod fabric_net {
    pub use crate::net::capability::*;
    pub use crate::net::fabric_net::*;
    pub use crate::net::failures::*;
    pub use crate::net::routed::*;
    pub use crate::net::routes::*;
    pub use crate::net::tree_router::TreeRouter;
}

pub use cancel::{Cancel, Cancelled};
pub use engine::{
    simulate, simulate_until, simulate_watched, Flow, FlowId, FlowTimes, Outcome, ResourceId,
    Workload,
};
pub use error::SimError;
pub use time::Time;
pub use watch::Watch;
