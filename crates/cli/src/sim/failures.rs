//! What `--fail-cable`, `--fail-links` and `--fail-host-links` take down, for `sim collective`,
//! `compare` and `train`: the network links down and the servers that drains.

use crate::error::CliError;
use railyard_catalog::Catalog;
use railyard_fabric::{cable_id, cable_index, Fabric, LinkId};
use railyard_sim::fabric_net;

/// Cables taken down and the servers that drains.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Failures {
    /// Network links down, sorted, each once.
    pub links: Vec<LinkId>,
    /// Servers whose host cable is down (indexes into `Fabric::servers`, ascending): drained, the
    /// job runs on the servers left (`NetConfig::drained`).
    pub drained: Vec<usize>,
}

/// The network links cables `fail_cable` (cabling.csv ids), `fail_links` switch-to-switch links
/// and `fail_host_links` server links chosen at random (seeded by `seed`) take down, sorted, each
/// once, and the servers a host link down drains (`sim collective`, `compare` and `train`). An id
/// of one leg of a twin-port or splitter cable takes the whole cable down: every row of
/// cabling.csv with its `assembly` (`bom::cable_firsts`), as pulling the cable does.
/// `--fail-links` fails single links (a port, a lane or one transceiver) among the fabric's own
/// (leaf-spine, spine-core): a server's link down aborts its job and drains the server, which is
/// what `--fail-host-links` (or `--fail-cable` of a server's cable) models.
pub fn failures(
    fail_cable: &[String],
    fail_links: Option<usize>,
    fail_host_links: Option<usize>,
    seed: u64,
    f: &Fabric,
    catalog: &Catalog,
) -> Result<Failures, CliError> {
    let net = f.cables();
    let mut out = Vec::new();
    let firsts = if fail_cable.is_empty() {
        Vec::new()
    } else {
        railyard_fabric::bom::cable_firsts(f, catalog)
    };
    for id in fail_cable {
        let n = cable_index(id, net.len()).ok_or_else(|| {
            CliError::input(format!(
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
    if let Some(n) = fail_links {
        if n > fabric.len() {
            return Err(CliError::input(format!(
                "--fail-links {n}: the design has {} switch-to-switch cables (--fail-links takes those down; --fail-host-links takes servers' cables down, draining the servers)",
                fabric.len()
            )));
        }
        out.extend(fabric_net::random_fabric_links(f, n, seed));
    }
    if let Some(n) = fail_host_links {
        if n > host.len() {
            return Err(CliError::input(format!(
                "--fail-host-links {n}: the design has {} server cables",
                host.len()
            )));
        }
        // Its own stream of the seed: adding host failures leaves the fabric links chosen.
        out.extend(fabric_net::random_host_links(f, n, !seed));
    }
    out.sort();
    out.dedup();
    let drained = fabric_net::drained_by(f, &out);
    if !drained.is_empty() && drained.len() >= f.servers.len() {
        return Err(CliError::input(format!(
            "the host cables taken down drain all {} servers: no server is left to run the job",
            f.servers.len()
        )));
    }
    Ok(Failures {
        links: out,
        drained,
    })
}
