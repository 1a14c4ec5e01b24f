//! NCCL's algorithms, one file each (as SimGrid's `smpi/colls/<op>/<algo>`): how each lays out
//! one step of a collective on the fabric, how many bytes each edge moves, and its latency.

pub mod all_to_all;
pub mod nvls_tree;
pub mod ring;
pub mod send_recv;
pub mod tree;
