//! What `--fail-cable`, `--fail-links` and `--fail-host-links` take down, for `sim collective`,
//! `compare` and `train`: the network links down and the servers that drains. One reading of the
//! failure flags, so every command takes the same cables down for the same seed.

use railyard_catalog::Catalog;
use railyard_fabric::{cable_id, cable_index, Fabric, LinkId};
use railyard_sim::fabric_net;
use std::fmt;

/// The cables to take down, as a front end was asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct FailureRequest<'a> {
    /// Cables by their cabling.csv id (`C0000042`, `C42`).
    pub cables: &'a [String],
    /// Switch-to-switch cables chosen at random.
    pub links: Option<usize>,
    /// Servers' cables chosen at random.
    pub host_links: Option<usize>,
    /// Seed of both random choices.
    pub seed: u64,
}

/// Cables taken down and the servers that drains.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Failures {
    /// Network links down, sorted, each once.
    pub links: Vec<LinkId>,
    /// Servers whose host cable is down (indexes into `Fabric::servers`, ascending): drained, the
    /// job runs on the servers left (`NetConfig::drained`).
    pub drained: Vec<usize>,
}

/// A failure asked that the design cannot take: the flag and value at fault, what is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureError(pub String);

impl fmt::Display for FailureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FailureError {}

/// The network links `r` takes down, sorted, each once, and the servers a host link down drains
/// (`sim collective`, `compare` and `train`). An id of one leg of a twin-port or splitter cable
/// takes the whole cable down: every row of cabling.csv with its `assembly`
/// (`bom::cable_firsts`), as pulling the cable does. `links` fails single links (a port, a lane
/// or one transceiver) among the fabric's own (leaf-spine, spine-core): a server's link down
/// aborts its job and drains the server, which is what `host_links` (or a server's cable by id)
/// models.
pub fn failures(
    r: &FailureRequest,
    f: &Fabric,
    catalog: &Catalog,
) -> Result<Failures, FailureError> {
    let net = f.cables();
    let mut out = Vec::new();
    let firsts = if r.cables.is_empty() {
        Vec::new()
    } else {
        railyard_fabric::bom::cable_firsts(f, catalog)
    };
    for id in r.cables {
        let n = cable_index(id, net.len()).ok_or_else(|| {
            FailureError(format!(
                "--fail-cable {id}: not a cable of this design; valid: {} .. {} (cabling.csv ids)",
                cable_id(0, net.len()),
                cable_id(net.len().saturating_sub(1), net.len())
            ))
        })?;
        let first = firsts[n];
        out.extend(
            firsts
                .iter()
                .zip(&net)
                .filter(|(c, _)| **c == first)
                .map(|(_, &l)| l),
        );
    }
    let (host, fabric): (Vec<LinkId>, Vec<LinkId>) = net
        .iter()
        .partition(|&&l| f.link(l).kind == railyard_fabric::LinkKind::ServerLeaf);
    if let Some(n) = r.links {
        if n > fabric.len() {
            return Err(FailureError(format!(
                "--fail-links {n}: the design has {} switch-to-switch cables (--fail-links takes those down; --fail-host-links takes servers' cables down, draining the servers)",
                fabric.len()
            )));
        }
        out.extend(fabric_net::random_fabric_links(f, n, r.seed));
    }
    if let Some(n) = r.host_links {
        if n > host.len() {
            return Err(FailureError(format!(
                "--fail-host-links {n}: the design has {} server cables",
                host.len()
            )));
        }
        // Its own stream of the seed: adding host failures leaves the fabric links chosen.
        out.extend(fabric_net::random_host_links(f, n, !r.seed));
    }
    out.sort();
    out.dedup();
    let drained = fabric_net::drained_by(f, &out);
    if !drained.is_empty() && drained.len() >= f.servers.len() {
        return Err(FailureError(format!(
            "the host cables taken down drain all {} servers: no server is left to run the job",
            f.servers.len()
        )));
    }
    Ok(Failures {
        links: out,
        drained,
    })
}

/// The cables `failed` names, by cabling.csv id.
pub fn cable_ids(fabric: &Fabric, failed: &[LinkId]) -> Vec<String> {
    let cables = fabric.cables();
    cables
        .iter()
        .enumerate()
        .filter(|(_, l)| failed.binary_search(l).is_ok())
        .map(|(i, _)| cable_id(i, cables.len()))
        .collect()
}
