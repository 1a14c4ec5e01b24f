//! Building one resolved design: its servers and tree ([`crate::topo`]), then its racks, cable runs,
//! cables and transceivers ([`crate::layout`]).

use crate::error::BuildError;
use crate::graph::Fabric;
use crate::hardware::Resolved;
use crate::{layout, topo};

/// Builds one resolved design: topology, then layout and cables.
pub fn build_resolved(r: &Resolved) -> Result<Fabric, BuildError> {
    let mut f = topo::build_topology(r)?;
    layout::place_and_cable(&mut f, r)?;
    debug_assert_eq!(f.check(), Ok(()));
    Ok(f)
}
