//! The network model: a railyard fabric as the engine's resources and latencies (`FabricNet`),
//! the route sources over it, the failures that take links down, and the plain leaf-spine of
//! `sim flows`.

pub mod build;
pub mod calibration;
pub mod capability;
pub mod fabric_net;
pub mod failures;
mod intact_route;
pub mod leafspine;
pub mod nvl_domain;
pub mod pfc;
pub mod rates;
pub mod regular;
pub mod routed;
pub mod routes;
pub mod routing;
pub mod scale_up;
pub mod symmetry;
pub mod tree_router;
pub mod xgmi;
