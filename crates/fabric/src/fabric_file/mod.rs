//! `fabric.json`: the whole [`Fabric`](crate::Fabric) graph in a compact, lossless form.
//!
//! # Format `railyard-fabric/2`
//!
//! A 131,072-GPU fabric has millions of ports but little variety: every server is built alike, a
//! node's ports are numbered and caged in order, and a port that carries a link runs at the link's
//! speed. So the file states the few things that vary and a loader *predicts* the rest; wherever the
//! prediction would be wrong the file carries the true record as an exception. Loading is therefore
//! exact for any fabric: `load_fabric_json(&fabric_json(&f)) == f`. The top-level object:
//!
//! - `format`: `"railyard-fabric/2"`; loaders refuse other formats.
//! - `meta`: [`crate::FabricMeta`], as in the summary.
//! - `strings`: interned catalog ids (node models, cable and transceiver parts); `strings[0]` is `""`.
//!   Other fields name a string by its index.
//! - `classes`: interned link attributes, `{kind, gbps, lanes, medium, run_m}` (the
//!   [`crate::Link`] fields other than its ports). Links name a class by index.
//! - `template` (absent when servers are not alike): one server's insides, ids relative to the server.
//!   - `nodes`: `[kind, local name, model, plane, ports]`; node `j` of server `i` is node `i * N + j`
//!     (`N` template nodes), named `<server name>/<local name>`, with `server = i`.
//!   - `ports`: `[node, number, cage, gbps, lanes, unused]`; port `k` of server `i` is port
//!     `i * P + k`. `unused` is the port's state when no link names it.
//!   - `links`: `[a, b, class]`; link `k` of server `i` is link `i * L + k`, joining ports
//!     `i * P + a` and `i * P + b`.
//! - `servers`: `[name, su, first node, nodes]` per server. The first `len(servers)` blocks of
//!   `N` nodes, `P` ports and `L` links are the template's, when there is one.
//! - `nodes`: the nodes after the servers' blocks (switches), each
//!   `[kind, name, model, server, plane, ports, gbps, lanes, ports per cage]`. Their ports follow in
//!   node order: port `i` (0-based) of a node has number `i + 1`, cage `i / (ports per cage) + 1`, the
//!   node's speed and lanes, and is a spare.
//! - `ports`: the number of ports.
//! - `links`: the links after the servers' blocks, each `[a, b, class]` where `a` and `b` are
//!   *differences* from the previous link's `a` and `b` (the first from 0).
//! - `modules`: transceivers, each `[node, cage, part]`, `node` a difference from the previous
//!   module's node (the first from 0).
//! - `node_exceptions`, `port_exceptions`, `link_exceptions` (absent when empty): `[index, record]`
//!   pairs, records as [`crate::Node`], [`crate::Port`] and
//!   [`crate::Link`] serialize, replacing the predicted record at that index.
//!
//! Kinds are `gpu`, `pcie-switch`, `cpu`, `nvlink-domain`, `nic:<rail>`, `storage-nic`, `leaf`,
//! `spine` and `core`. A port's state is predicted last: every port a link names is linked to the last
//! link naming it and runs at that link's speed and lanes; the other ports keep their predicted state.

mod load;
mod predict;
mod records;
mod write;

pub use load::{load_fabric_json, FabricFileError};
pub use records::FABRIC_FORMAT;
pub use write::fabric_json;
