//! InfiniBand interop: the formats operators' tools read and write.
//!
//! [`export`] writes a fabric as an ibnetdiscover-format topology file that ibsim loads (`ibsim -s`),
//! with deterministic GUIDs ([`guid`]) and node descriptions that carry railyard's device names.
//! No I/O: functions return text.

pub mod export;
pub mod guid;
pub mod ibnet;
pub mod import;
pub mod lft;
pub mod verify;
