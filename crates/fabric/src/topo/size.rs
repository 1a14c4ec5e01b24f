//! A design's size before anything is allocated: devices, ports and links from the spec's numbers,
//! held to the arena's limits.

use super::counts::{counts, Counts};
use crate::error::{err, BuildError};
use crate::graph::{Fabric, MAX_LINKS, MAX_NODES, MAX_PORTS};
use crate::hardware::Resolved;
use crate::server::ServerTemplate;

/// What a design will hold, computed from the spec's counts before anything is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DesignSize {
    pub servers: u64,
    pub switches: u64,
    /// Every node: the servers' devices and the switches.
    pub nodes: u64,
    pub ports: u64,
    /// Every link: inside the servers and network cables.
    pub links: u64,
    pub network_links: u64,
}

/// One server's nodes, ports and links (every server of a spec is alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerCounts {
    pub nodes: u64,
    pub ports: u64,
    pub links: u64,
}

impl ServerCounts {
    /// The counts of the spec's server, built once.
    pub fn of(r: &Resolved) -> ServerCounts {
        let template = ServerTemplate::new(&Fabric::new(r.meta(1)), r);
        let (nodes, ports, links) = template.counts();
        ServerCounts {
            nodes,
            ports,
            links,
        }
    }
}

impl DesignSize {
    /// The size of a design with these counts on radix-`k` switches.
    pub fn of(servers: u64, server: ServerCounts, c: &Counts, k: u32) -> DesignSize {
        let switches = c.switches();
        DesignSize {
            servers,
            switches,
            nodes: servers * server.nodes + switches,
            ports: servers * server.ports + switches * u64::from(k),
            links: servers * server.links + c.network_links(),
            network_links: c.network_links(),
        }
    }

    /// Refuses a design past [`MAX_NODES`], [`MAX_PORTS`] or [`MAX_LINKS`], naming the server count
    /// that would fit.
    pub fn check(&self, r: &Resolved) -> Result<(), BuildError> {
        let over = [
            ("devices", self.nodes, MAX_NODES),
            ("ports", self.ports, MAX_PORTS),
            ("links", self.links, MAX_LINKS),
        ]
        .into_iter()
        .find(|&(_, have, limit)| have > limit);
        let Some((what, have, limit)) = over else {
            return Ok(());
        };
        // Every count grows about linearly with the servers.
        let fit = (u128::from(self.servers) * u128::from(limit) / u128::from(have.max(1))) as u64;
        Err(err(
            "servers.count",
            format!(
                "{} servers of {} GPUs and {} NICs make a fabric of {have} {what} on {}-port {} ({}), past railyard's limit of {limit} {what}; valid: at most about {fit} servers of this kind",
                self.servers,
                r.spec.servers.gpus_per_server,
                r.spec.servers.compute_nics,
                r.radix(),
                r.switch.id,
                r.mode.name,
            ),
        ))
    }
}

/// The design's counts, computed from the spec's numbers and the chosen shape alone.
pub fn size(r: &Resolved) -> Result<DesignSize, BuildError> {
    let c = counts(r.spec, r.radix(), &r.shape).ok_or_else(|| {
        err(
            "fabric.topology",
            format!(
                "the shape {:?} does not fit {}-port {} for this spec",
                r.shape,
                r.radix(),
                r.switch.id
            ),
        )
    })?;
    Ok(DesignSize::of(
        u64::from(r.spec.servers.count),
        ServerCounts::of(r),
        &c,
        r.radix(),
    ))
}
