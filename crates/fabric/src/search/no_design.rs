//! Why no design exists, in terms the user can act on: the size limit, what one or two switches
//! hold, a unit larger than a leaf holds, or the most servers any switch's tree holds.

use super::shapes::{each_shape, Req};
use super::space::Space;
use crate::error::{err, BuildError};
use crate::hardware::SwitchOption;
use crate::topo::{counts, isl_links, uplinks_for};
use railyard_spec::{ClusterSpec, Topology};

/// Why no design exists: the size limit, or what the topology of the spec's switches holds.
pub(super) fn no_design(spec: &ClusterSpec, sp: &Space) -> BuildError {
    if let Some(e) = &sp.too_big {
        if !sp.candidates.iter().any(|c| c.keeps_preset) {
            return e.clone();
        }
    }
    // Only the switches the plan may use (the preset's, when it names one).
    let options: Vec<&SwitchOption> = sp
        .options
        .iter()
        .filter(|o| o.named || spec.fabric.switch.is_none())
        .collect();
    let best = options
        .iter()
        .max_by_key(|o| o.mode.ports)
        .copied()
        .unwrap_or(&sp.options[0]);
    let limits = Limits { spec, best };
    match spec.fabric.topology {
        Topology::SingleSwitch => {
            let k = u64::from(best.mode.ports);
            let rails = spec.servers.compute_nics;
            return limits.too_many("one switch", k, k / u64::from(rails.max(1)), k);
        }
        Topology::TwoSwitch => return limits.two_switch(),
        _ => {}
    }
    let req = Req::of(spec);
    if let Some(e) = unit_too_large(&req, best) {
        return e;
    }
    most_servers(spec, &options, best)
}

/// The limits of one switch model (the largest the plan may use) for a spec's servers.
struct Limits<'s> {
    spec: &'s ClusterSpec,
    best: &'s SwitchOption<'s>,
}

impl Limits<'_> {
    /// More NIC ports than `what` holds: at most `limit` NIC ports; `max_servers` servers fit, of
    /// at most `max_nics` NICs each.
    fn too_many(&self, what: &str, limit: u64, max_servers: u64, max_nics: u64) -> BuildError {
        let s = &self.spec.servers;
        let rails = s.compute_nics;
        let hosts = u64::from(s.count) * u64::from(rails);
        let (k, sw, mode) = (
            self.best.mode.ports,
            &self.best.switch.id,
            &self.best.mode.name,
        );
        let valid = if max_servers == 0 {
            format!(
                "no server of {rails} NICs fits {what}; valid: servers of at most {max_nics} NICs there, or a topology of more switches (rail-optimized, fat-tree)"
            )
        } else {
            format!("valid: at most {max_servers} servers of {rails} NICs")
        };
        err(
            "servers.count",
            format!(
                "{hosts} NIC ports exceed {what}: at most {limit} NIC ports on {k}-port {sw} ({mode}); {valid}"
            ),
        )
    }

    /// What the two switches of a two-switch design hold: the host ports of the fuller one and
    /// the links between them.
    fn two_switch(&self) -> BuildError {
        let spec = self.spec;
        let s = &spec.servers;
        let rails = s.compute_nics;
        let (k, sw) = (self.best.mode.ports, &self.best.switch.id);
        // A server's odd HCAs (1-based) go to switch 1, the larger half: it bounds the rest.
        let per_server = u64::from(rails.div_ceil(2)).max(1);
        let most = u64::from(s.count) * per_server;
        let isl = isl_links(spec, most);
        if spec.fabric.isl_links.is_none() && most + u64::from(isl) > u64::from(k) {
            // Sized from the ratio asked: a switch holds h hosts and h / r links to the other.
            let r = spec.fabric.oversubscription.max(1.0);
            let hosts_fit = (f64::from(k) * r / (r + 1.0)).floor() as u64;
            return err(
                "servers.count",
                format!(
                    "{most} host ports per switch ({} servers x {per_server}) at {r}:1 need {isl} links to the other switch, more than a {k}-port {sw} has left; valid: at most {} servers, a higher --oversubscription, or fabric.isl_links",
                    s.count,
                    hosts_fit / per_server
                ),
            );
        }
        let max_isl = u64::from(k).saturating_sub(most);
        if u64::from(isl) > max_isl && (max_isl >= 1 || isl >= k) {
            let valid = if max_isl >= 1 {
                format!("1 to {max_isl}")
            } else {
                format!(
                    "1 to {}, and at most {} servers of {rails} NICs",
                    k - 1,
                    u64::from(k - 1) / per_server
                )
            };
            let left = match k.saturating_sub(isl) {
                0 => "no port".to_string(),
                n => format!("{n} ports"),
            };
            return err(
                "fabric.isl_links",
                format!(
                    "{isl} inter-switch links leave {left} of a {k}-port {sw} for {most} host ports ({} servers x {per_server}); valid: {valid}",
                    s.count
                ),
            );
        }
        let free = u64::from(k.saturating_sub(isl));
        self.too_many(
            &format!("two switches with {isl} inter-switch links"),
            2 * free,
            free / per_server,
            2 * free,
        )
    }
}

/// A unit the user fixed that no leaf of the switch holds at the ratio asked, if so.
fn unit_too_large(req: &Req, best: &SwitchOption) -> Option<BuildError> {
    let (k, sw) = (best.mode.ports, &best.switch.id);
    if let (Topology::RailOptimized, Some(su), true) = (req.topology, req.su, req.su_given) {
        // The largest unit a leaf holds at this ratio.
        let max_su = (1..k)
            .rev()
            .find(|&s| s + uplinks_for(s, req.ratio) <= k)
            .unwrap_or(0);
        if su > max_su {
            return Some(err(
                "fabric.su_size",
                format!(
                    "{su} servers per unit need {su} host ports and {} uplinks per leaf at oversubscription {}, but a {k}-port {sw} leaf has {k}; valid: 1 to {max_su}",
                    uplinks_for(su, req.ratio),
                    req.ratio
                ),
            ));
        }
    }
    None
}

/// The most servers any of the switches holds in the spec's topology, found by a binary search
/// on the counts.
fn most_servers(spec: &ClusterSpec, options: &[&SwitchOption], best: &SwitchOption) -> BuildError {
    let s = &spec.servers;
    let rails = s.compute_nics;
    let hosts = u64::from(s.count) * u64::from(rails);
    let req = Req::of(spec);
    let fits = |servers: u64, o: &SwitchOption| -> bool {
        let mut probe = spec.clone();
        probe.servers.count = servers as u32;
        let req = Req::of(&probe);
        let mut found = false;
        each_shape(&req, o.mode.ports, &mut |shape| {
            found = counts(&probe, o.mode.ports, &shape).is_some();
            !found
        });
        found
    };
    let mut limit: Option<(u64, &SwitchOption)> = None;
    for o in options {
        let (mut lo, mut hi) = (0u64, u64::from(s.count));
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid, o) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if limit.is_none_or(|(best, _)| lo > best) {
            limit = Some((lo, o));
        }
    }
    let (max_servers, o) = limit.unwrap_or((0, best));
    let what = match spec.fabric.topology {
        Topology::FatTree => "a three-tier fat-tree",
        Topology::RailOnly => "rails of three-tier fat-trees",
        _ => "a three-tier rail-optimized fabric",
    };
    err(
        "servers.count",
        format!(
            "{hosts} NIC ports exceed {what}: at most {} NIC ports on {}-port {} ({}) at oversubscription {}; valid: at most {max_servers} servers of {rails} NICs",
            max_servers * u64::from(rails),
            o.mode.ports,
            o.switch.id,
            o.mode.name,
            req.ratio
        ),
    )
}
