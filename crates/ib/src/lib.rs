//! InfiniBand interop: the formats operators' tools read and write.
//!
//! [`export`] writes a fabric as an ibnetdiscover-format topology file that ibsim loads (`ibsim -s`),
//! with deterministic GUIDs ([`guid`]) and node descriptions that carry railyard's device names.
//! [`discovery`] reads what the tools print of a built fabric (ibnetdiscover in both forms through
//! [`ibnet`], iblinkinfo through [`iblinkinfo`]), with link rates modelled in [`rate`]; [`import`]
//! turns a discovery into a fabric and [`verify`] compares it with a plan. [`lft`] reads OpenSM's
//! forwarding tables; [`slurm`] writes Slurm's topology.conf. No I/O: functions take and return text.

pub mod chip;
pub mod discovery;
pub mod export;
pub mod guid;
pub mod health;
pub mod iblinkinfo;
pub mod ibnet;
pub mod import;
pub mod lft;
pub mod lldp;
pub mod rate;
pub mod site;
pub mod slurm;
pub mod verify;
