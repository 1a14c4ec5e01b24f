//! Verify a discovered fabric against the plan, port by port, reporting every difference at once.
//!
//! Devices match by description first (`su1-leaf3`, `su1-srv07 hca3`; a host's `mlx5_N` reads as
//! `hca<N+1>`), or by the site's name for them ([`crate::site::NameMap`]); switches whose descriptions
//! carry no planned name match by their place in the tree: a discovered switch takes the planned
//! switch that most of its already-matched neighbours expect; then each remaining HCA takes the
//! planned HCA its matched switch port expects. (Matching by place starts from devices matched by
//! name: with none, nothing matches.)
//! Then cables are compared. Planned and discovered cables that differ form chains through the ports
//! they share; each chain is one finding with the moves that fix it, so two swapped cables are one
//! swap, not four differences. A cable where it belongs is compared by rate: a different width or
//! speed is `wrong-rate`, a rate the discovery could not name (`4x???`, `??HDR`) or does not give is
//! `unknown-rate` (never a pass). A matched switch that reports fewer ports than planned, or more
//! than a split and a SHARP aggregation node port account for, is `wrong-port-count`.
//!
//! Each finding lists the cables it involves with their cabling.csv ids and, given the plan's
//! [`RackPlace`]s, where both ends stand as cabling.csv names it (row, rack and rack unit); a
//! [`crate::site::Scope`] limits the check to part of the plan. [`report_text_with`] groups findings alike into one line with a count; the JSON keeps all.

mod cables;
mod devices;
mod matching;
mod plan;
mod text;

pub use crate::rate::{planned_rate, rate_name};
pub use text::{report_text, report_text_with, EXAMPLES};

use crate::discovery::{escaped, Discovered};
use plan::Planned;
use railyard_fabric::layout::RackPlace;
use railyard_fabric::Fabric;
use serde::Serialize;

/// A port, named as on the floor: device and port number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PortRef {
    pub device: String,
    pub port: u32,
}

impl std::fmt::Display for PortRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}[{}]", escaped(&self.device), self.port)
    }
}

/// What kind of difference a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    MissingDevice,
    UnknownDevice,
    MissingCable,
    UnexpectedCable,
    /// One cable whose far end sits on the wrong port of the right device.
    WrongPort,
    /// One cable whose far end sits on the wrong device.
    Miswire,
    /// Two cables with their ends exchanged.
    Swap,
    /// Several cables miswired into each other's places.
    MiswiredChain,
    /// A cable where it belongs, at another width or speed than planned.
    WrongRate,
    /// A cable where it belongs whose rate the discovery does not give or could not read.
    UnknownRate,
    /// A switch that reports a port count the plan's model cannot have.
    WrongPortCount,
    /// The plan's technology is of another family than the network discovered (a RoCE plan, an
    /// InfiniBand discovery): no port can be compared, and this is the one finding.
    TechnologyMismatch,
}

/// One difference and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    /// What to do on the floor, in one sentence.
    pub fix: String,
    /// Planned cables involved (ends as planned).
    pub planned: Vec<(PortRef, PortRef)>,
    /// Discovered cables involved (ends as found).
    pub discovered: Vec<(PortRef, PortRef)>,
    /// What findings of this kind alike share, for grouping: the same kind and `group` read as one
    /// line with a count (every cable at 4xHDR where 4xNDR was planned). A finding that is one of a
    /// kind has its `fix` here.
    pub group: String,
    /// Every cable involved, planned ones first, each with its cabling.csv id (planned cables) and
    /// where both ends stand (when the plan has a layout).
    pub cables: Vec<CableRef>,
    /// The planned device a device finding (missing device, wrong port count) is about, with where
    /// it stands when the plan has a layout.
    pub device: Option<DeviceRef>,
}

/// A planned device and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceRef {
    pub name: String,
    pub location: Option<RackPlace>,
}

/// A cable a finding involves, as a technician finds it: the cabling.csv id and both ends with their
/// places.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CableRef {
    /// The cabling.csv id (`C0042`) of a planned cable; `None` for a cable as found where the plan
    /// has none (shown as `found`).
    pub id: Option<String>,
    pub a: PortRef,
    pub b: PortRef,
    pub a_location: Option<RackPlace>,
    pub b_location: Option<RackPlace>,
}

impl std::fmt::Display for CableRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.id {
            Some(id) => write!(f, "{id} ")?,
            None => f.write_str("found ")?,
        }
        write!(f, "{}", self.a)?;
        if let Some(l) = self.a_location {
            write!(f, " ({l})")?;
        }
        write!(f, " - {}", self.b)?;
        if let Some(l) = self.b_location {
            write!(f, " ({l})")?;
        }
        Ok(())
    }
}

/// The verification of a discovered fabric against its plan: whether they match, what was matched
/// and how, and every difference as a finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// True when nothing differs.
    pub matches: bool,
    pub planned_cables: usize,
    pub discovered_cables: usize,
    /// Discovered devices matched by description / by place in the tree.
    pub matched_by_description: usize,
    pub matched_by_place: usize,
    /// Discovered devices matched through the site's names map (`--names`).
    pub matched_by_names: usize,
    /// The part of the plan checked (`--scope`), as asked; empty: all of it.
    pub scope: Vec<String>,
    /// Planned cables with an end in scope (all of them without a scope).
    pub cables_in_scope: usize,
    pub findings: Vec<Finding>,
    /// Every planned cable faster than ibsim can show (NDR, XDR) was found at the rate the ibsim
    /// export writes for it, and no other rate differs: the discovery most likely ran in ibsim
    /// without `Options::ibsim_rates` (`verify --ibsim`). The rates are still reported.
    pub rates_as_ibsim_shows: bool,
}

/// Options for comparing rates.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// The discovered fabric runs in ibsim, which shows NDR and XDR links as HDR: expect the rates the
    /// ibsim export wrote rather than the planned ones.
    pub ibsim_rates: bool,
}

/// What the site adds to a verification ([`verify_with`]); the default adds nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Site<'a> {
    /// The site's names for planned devices.
    pub names: Option<&'a crate::site::NameMap>,
    /// Where every planned node stands, indexed by node id, with the rack units cabling.csv
    /// gives ([`railyard_fabric::layout::rack_places_of`]).
    pub locations: Option<&'a [Option<RackPlace>]>,
    /// Only this part of the plan is checked; the rest is ignored.
    pub scope: Option<&'a crate::site::Scope>,
    /// The discovery gives no rates (LLDP neighbour tables): compare where cables land, not rates.
    pub without_rates: bool,
}

/// Compares the plan with what was discovered.
pub fn verify(plan: &Fabric, disc: &Discovered, opts: Options) -> Verification {
    verify_with(plan, disc, opts, Site::default())
}

/// Compares the plan with what was discovered, with the site's names, places and scope.
///
/// Devices match by their description, then by the site's names map, then (for those whose
/// description matches nothing) by structure: switches by the planned switch most of their matched
/// neighbours expect, then every HCA by the planned HCA its matched switch port expects.
pub fn verify_with(plan: &Fabric, disc: &Discovered, opts: Options, site: Site) -> Verification {
    let p = plan::planned(plan, opts);
    if plan.meta.tech.family() != disc.family {
        return technology_mismatch(plan, disc, &p, &site);
    }
    let adj = matching::adjacency(disc);
    let m = matching::match_devices(disc, &p, &site, &adj);
    let cx = Ctx { p: &p, site: &site };
    let (mut findings, missing_devices) = devices::findings(disc, &cx, &adj, &m.name, &m.taken);
    let (n, plan_diff, found_diff) =
        cables::compare(disc, &cx, &m.name, &missing_devices, opts, &mut findings);
    cables::chains(&cx, &plan_diff, &found_diff, &mut findings);
    cables::cable_refs(&cx, &mut findings);
    findings.sort_by_cached_key(|f| {
        let first = f
            .planned
            .first()
            .or(f.discovered.first())
            .map(|(a, _)| (natural(&a.device), a.port));
        (f.kind, first, natural(&f.fix))
    });
    Verification {
        matches: findings.is_empty(),
        planned_cables: p.cables,
        discovered_cables: disc.links.len(),
        matched_by_description: m.by_description,
        matched_by_place: m.by_place,
        matched_by_names: m.by_names,
        scope: site.scope.map(|s| s.asked.clone()).unwrap_or_default(),
        cables_in_scope: n.cables_in_scope,
        findings,
        rates_as_ibsim_shows: n.wrong_rates > 0
            && n.ibsim_rates == n.wrong_rates
            && n.ibsim_rates == n.beyond_ibsim,
    }
}

/// The plan and the site a verification reads: where devices stand, and what is in scope.
struct Ctx<'a> {
    p: &'a Planned,
    site: &'a Site<'a>,
}

impl Ctx<'_> {
    fn in_scope(&self, d: &str) -> bool {
        self.site.scope.is_none_or(|s| s.contains(d))
    }

    fn location(&self, d: &str) -> Option<RackPlace> {
        let (locs, &i) = (self.site.locations?, self.p.node.get(d)?);
        locs.get(i).copied().flatten()
    }

    /// A finding about one device (`None`: a discovered device the plan has no place for).
    fn device_finding(
        &self,
        kind: Kind,
        fix: String,
        group: &str,
        device: Option<&str>,
    ) -> Finding {
        Finding {
            kind,
            group: group.to_string(),
            fix,
            planned: vec![],
            discovered: vec![],
            cables: vec![],
            device: device.map(|d| DeviceRef {
                name: d.to_string(),
                location: self.location(d),
            }),
        }
    }
}

/// The verification of a discovery of another network family than the plan's: one finding that
/// says so, not a difference for every port (an InfiniBand dump against a RoCE plan matches no
/// device by its rate or cable as planned, and would list every cable).
fn technology_mismatch(plan: &Fabric, disc: &Discovered, p: &Planned, site: &Site) -> Verification {
    let tech = plan.meta.tech;
    let (planned, found) = (tech.family(), disc.family);
    let how = match found {
        railyard_catalog::Family::Infiniband => {
            "InfiniBand (ibnetdiscover, iblinkinfo or ibsim output)"
        }
        railyard_catalog::Family::Ethernet => "Ethernet (LLDP neighbour tables)",
    };
    let (fabric_word, to_do) = match planned {
        railyard_catalog::Family::Ethernet => (
            "RoCE over Ethernet",
            "verify a RoCE fabric by its switches' and hosts' LLDP neighbour tables (`verify --lldp`), or this discovery against an InfiniBand plan (`--tech ib-ndr`, say)",
        ),
        railyard_catalog::Family::Infiniband => (
            "InfiniBand",
            "verify an InfiniBand fabric by ibnetdiscover or iblinkinfo output, or these tables against an Ethernet plan (`--tech roce-400g`, say)",
        ),
    };
    let fix = format!(
        "technology mismatch: the plan is {tech} ({fabric_word}) and the discovery is {how}, so no port was compared ({} planned cables, {} discovered); {to_do}",
        p.cables,
        disc.links.len()
    );
    Verification {
        matches: false,
        planned_cables: p.cables,
        discovered_cables: disc.links.len(),
        matched_by_description: 0,
        matched_by_place: 0,
        matched_by_names: 0,
        scope: site.scope.map(|s| s.asked.clone()).unwrap_or_default(),
        cables_in_scope: 0,
        rates_as_ibsim_shows: false,
        findings: vec![Finding {
            kind: Kind::TechnologyMismatch,
            group: fix.clone(),
            fix,
            planned: vec![],
            discovered: vec![],
            cables: vec![],
            device: None,
        }],
    }
}

/// A sort key that orders the numbers in a name by value: `core01[2]` before `core01[10]`,
/// `srv9` before `srv10`.
fn natural(s: &str) -> Vec<(String, u128)> {
    // Digits read as their value (saturating: a longer run than u128 holds sorts last).
    let value = |d: &str| {
        d.bytes().fold(0u128, |v, b| {
            v.saturating_mul(10).saturating_add(u128::from(b - b'0'))
        })
    };
    let mut out = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                out.push((std::mem::take(&mut text), value(&digits)));
                digits.clear();
            }
            text.push(c);
        }
    }
    out.push((text, value(&digits)));
    out
}

#[cfg(test)]
mod tests;
