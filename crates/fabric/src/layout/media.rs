//! Choosing media from the catalog: the cheapest cable, twin-port or splitter cable, or
//! transceivers and fibre of each class for a run ([`Chooser`]), and what cabling a fabric needs
//! to know besides the graph ([`CableCtx`]: hall, catalog, rate, cage sizes; typical link costs).

use super::cages::GroupForm;
use super::hall::RackFill;
use crate::graph::Medium;
use crate::hardware::Resolved;
use railyard_catalog::{
    CableForm, CableKind, CableUse, Catalog, FibreKind, Tech, TransceiverModel, CONNECTORS,
};
use railyard_spec::LayoutSpec;
use std::collections::HashMap;
use std::sync::Arc;

/// The kind of medium a group of links shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Class {
    Direct(CableKind),
    Optics(FibreKind),
}

pub(super) const CLASSES: [Class; 6] = [
    Class::Direct(CableKind::Utp),
    Class::Direct(CableKind::Dac),
    Class::Direct(CableKind::Acc),
    Class::Direct(CableKind::Aoc),
    Class::Optics(FibreKind::Mmf),
    Class::Optics(FibreKind::Smf),
];

/// Picks the media of one class for one run: the part, its stocked length and its cost per link.
pub(super) struct Chooser<'a> {
    pub(super) catalog: &'a Catalog,
    pub(super) tech: Tech,
    /// The links' rate: a multi-port cable must carry it on every port.
    pub(super) gbps: u32,
    /// One shared copy of each part id: a fabric names a handful of parts on a million links.
    pub(super) parts: std::cell::RefCell<HashMap<String, Arc<str>>>,
}

impl Chooser<'_> {
    pub(super) fn part(&self, id: &str) -> Arc<str> {
        let mut parts = self.parts.borrow_mut();
        if let Some(p) = parts.get(id) {
            return p.clone();
        }
        let p: Arc<str> = id.into();
        parts.insert(id.to_string(), p.clone());
        p
    }

    /// The cheapest straight cable of `kind` for one link of `run`.
    fn direct(&self, kind: CableKind, use_: CableUse, run: f64) -> Option<(&str, f64, f64)> {
        self.catalog
            .cables
            .values()
            .filter(|c| {
                c.kind == kind
                    && c.form == CableForm::Straight
                    && c.carries(self.tech, self.gbps)
                    && c.uses.contains(&use_)
            })
            .filter_map(|c| {
                c.length_for(run)
                    .map(|len| (c.id.as_str(), len, c.price.at_length(len)))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
    }

    /// The cheapest twin or splitter cable of `kind` with a plug of `ports` ports for a group of
    /// links of these uses whose longest run is `run`: its medium (every link of the group takes
    /// it) and the price of the one cable.
    pub(super) fn assembly(
        &self,
        kind: CableKind,
        form: CableForm,
        ports: u32,
        uses: &[CableUse],
        run: f64,
    ) -> Option<(Medium, f64)> {
        self.catalog
            .cables
            .values()
            .filter(|c| {
                c.kind == kind
                    && c.form == form
                    && c.ports == ports
                    && c.carries(self.tech, self.gbps)
                    && uses.iter().all(|u| c.uses.contains(u))
            })
            .filter_map(|c| {
                c.length_for(run)
                    .map(|len| (c, len, c.price.at_length(len)))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(c, length_m, cost)| {
                (
                    Medium::Cable {
                        kind,
                        part: self.part(&c.id),
                        length_m,
                    },
                    cost,
                )
            })
    }

    /// The least any multi-port cable of this technology that fits cages of these sizes costs per
    /// link it carries on a run of `run` (its price over its ports): what a link can cost at best in
    /// a twin group (both cages of its ports) or a splitter group (one cage of its ports).
    fn assembly_share(&self, use_: CableUse, run: f64, cages: [u32; 2]) -> Option<f64> {
        self.catalog
            .cables
            .values()
            .filter(|c| {
                let fits = match c.form {
                    CableForm::Straight => false,
                    CableForm::Twin => cages == [c.ports, c.ports],
                    CableForm::Splitter => cages.contains(&c.ports),
                };
                fits && c.carries(self.tech, self.gbps) && c.uses.contains(&use_)
            })
            .filter_map(|c| {
                c.length_for(run)
                    .map(|len| c.price.at_length(len) / f64::from(c.ports))
            })
            .min_by(f64::total_cmp)
    }

    /// Whether the catalog has any part for a group of this form between cages of these sizes: a
    /// twin or splitter cable of the form and size, or transceivers of the cages' sizes.
    pub(super) fn has_parts_for(&self, form: GroupForm, cages: [u32; 2]) -> bool {
        let modules = cages.iter().all(|&size| {
            self.catalog
                .transceivers
                .values()
                .any(|t| t.techs.contains(&self.tech) && t.ports == size)
        });
        match form {
            GroupForm::Single => true,
            GroupForm::Mesh => modules,
            GroupForm::Assembly { form, ports } => {
                modules
                    || self.catalog.cables.values().any(|c| {
                        c.form == form && c.ports == ports && c.carries(self.tech, self.gbps)
                    })
            }
        }
    }

    /// The cheapest transceiver for a cage of `cage_ports` ports whose ports take `connector`.
    pub(super) fn module(
        &self,
        fibre: FibreKind,
        connector: &str,
        cage_ports: u32,
        run: f64,
    ) -> Option<&TransceiverModel> {
        self.catalog
            .transceivers
            .values()
            .filter(|t| {
                t.fibre == fibre
                    && t.connector == connector
                    && t.techs.contains(&self.tech)
                    && t.ports == cage_ports
                    && t.reach_m + 1e-9 >= run
            })
            .min_by(|a, b| a.price.usd.total_cmp(&b.price.usd))
    }

    /// The cheapest fibre of this kind ending in `connector` that reaches `run`.
    pub(super) fn fibre(
        &self,
        kind: FibreKind,
        connector: &str,
        run: f64,
    ) -> Option<(&str, f64, f64)> {
        self.catalog
            .fibres
            .values()
            .filter(|f| f.kind == kind && f.connector == connector)
            .filter_map(|f| {
                f.length_for(run)
                    .map(|len| (f.id.as_str(), len, f.price.at_length(len)))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
    }

    /// The connector a catalog fibre ends in.
    pub(super) fn connector_of(&self, fibre_part: &str) -> &str {
        self.catalog
            .fibres
            .get(fibre_part)
            .map_or("mpo-12", |f| f.connector.as_str())
    }

    /// Medium and cost of one link in a class, or `None` if the class cannot carry it.
    pub(super) fn medium(
        &self,
        class: Class,
        use_: CableUse,
        run: f64,
        cages: [u32; 2],
    ) -> Option<(Medium, f64)> {
        match class {
            Class::Direct(kind) => self.direct(kind, use_, run).map(|(part, length_m, cost)| {
                (
                    Medium::Cable {
                        kind,
                        part: self.part(part),
                        length_m,
                    },
                    cost,
                )
            }),
            // Modules at both ends and the fibre between them take one connector (an SR8 port
            // takes MPO-16, an LR4 port a duplex LC pair): the cheapest such set.
            Class::Optics(fibre) => CONNECTORS
                .iter()
                .filter_map(|connector| {
                    let a = self.module(fibre, connector, cages[0], run)?;
                    let b = self.module(fibre, connector, cages[1], run)?;
                    let (part, length_m, cost) = self.fibre(fibre, connector, run)?;
                    let modules =
                        a.price.usd / f64::from(a.ports) + b.price.usd / f64::from(b.ports);
                    Some((part, length_m, cost + modules))
                })
                .min_by(|a, b| a.2.total_cmp(&b.2))
                .map(|(part, length_m, cost)| {
                    (
                        Medium::Fibre {
                            fibre,
                            part: self.part(part),
                            length_m,
                        },
                        cost,
                    )
                }),
        }
    }

    /// The longest run any medium of this technology reaches between ends of these cage sizes (and
    /// that kind of link), with what reaches it, for error messages.
    pub(super) fn longest_reach(
        &self,
        use_: CableUse,
        cages: [u32; 2],
        form: GroupForm,
    ) -> (f64, String) {
        let cables = self
            .catalog
            .cables
            .values()
            .filter(|c| c.carries(self.tech, self.gbps) && c.uses.contains(&use_))
            .filter(|c| match form {
                GroupForm::Single => c.form == CableForm::Straight,
                GroupForm::Assembly { form, ports } => c.form == form && c.ports == ports,
                GroupForm::Mesh => false,
            })
            .map(|c| (c.reach_m(), c.id.clone()));
        let end_reach = |fibre: FibreKind, connector: &str, size: u32| {
            self.catalog
                .transceivers
                .values()
                .filter(|t| {
                    t.fibre == fibre
                        && t.connector == connector
                        && t.techs.contains(&self.tech)
                        && t.ports == size
                })
                .map(|t| (t.reach_m, t.id.clone()))
                .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
        };
        let optics = [FibreKind::Mmf, FibreKind::Smf]
            .into_iter()
            .flat_map(|kind| CONNECTORS.iter().map(move |c| (kind, *c)))
            .filter_map(|(kind, connector)| {
                let (ra, ma) = end_reach(kind, connector, cages[0])?;
                let (rb, mb) = end_reach(kind, connector, cages[1])?;
                let (rf, fibre) = self
                    .catalog
                    .fibres
                    .values()
                    .filter(|f| f.kind == kind && f.connector == connector)
                    .map(|f| (f.lengths_m.last().copied().unwrap_or(0.0), f.id.clone()))
                    .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))?;
                let modules = if ma == mb { ma } else { format!("{ma} + {mb}") };
                Some((ra.min(rb).min(rf), format!("{modules} over {fibre}")))
            });
        cables
            .chain(optics)
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
            .unwrap_or((0.0, "nothing".to_string()))
    }
}

/// What cabling a fabric needs to know besides the graph: the hall, the catalog, the technology its
/// links run and the ports per cage at either end.
#[derive(Debug, Clone, Copy)]
pub struct CableCtx<'a> {
    pub layout: &'a LayoutSpec,
    /// Servers and the fabric's switches in one rack ([`RackFill`]).
    pub fill: RackFill,
    pub catalog: &'a Catalog,
    pub tech: Tech,
    /// The links' rate, Gb/s (the switch ports' in their mode).
    pub gbps: u32,
    /// Ports sharing one cage on the fabric's switches.
    pub switch_cage: u32,
    /// Ports sharing one cage on the hosts' side (twin-port OSFP on DGX H100 compute NICs).
    pub host_cage: u32,
}

impl<'a> CableCtx<'a> {
    /// The compute fabric's cabling context.
    pub fn of(r: &'a Resolved) -> CableCtx<'a> {
        CableCtx {
            layout: &r.spec.layout,
            fill: RackFill::new(
                &r.spec.layout,
                super::server::ServerSlot::of(r.spec, r.catalog),
                r.switch.rack_units,
            ),
            catalog: r.catalog,
            tech: r.spec.fabric.tech,
            gbps: r.mode.gbps,
            switch_cage: r.switch.ports_per_cage(r.mode),
            host_cage: r.host_cage(),
        }
    }

    pub(super) fn chooser(&self) -> Chooser<'a> {
        Chooser {
            catalog: self.catalog,
            tech: self.tech,
            gbps: self.gbps,
            parts: Default::default(),
        }
    }

    /// Cost per link of the cheapest medium for a run of `run_m` (its share of the transceivers
    /// included), or `None` if nothing reaches it.
    pub(super) fn link_cost(&self, use_: CableUse, run_m: f64, cages: [u32; 2]) -> Option<f64> {
        let chooser = self.chooser();
        CLASSES
            .iter()
            .filter_map(|&class| chooser.medium(class, use_, run_m, cages).map(|(_, c)| c))
            .chain(chooser.assembly_share(use_, run_m, cages))
            .min_by(f64::total_cmp)
    }

    /// Typical cost per link of the cables and optics of a hall of `servers` servers: (server to leaf,
    /// switch to switch), for ranking designs before they are built. The runs are typical, not exact:
    /// a server half a row from its leaf, a switch a quarter of the hall from the network row. Exact
    /// costs come from [`place_and_cable`](super::place_and_cable) on the built fabric.
    pub fn typical_link_costs(&self, servers: u32) -> (f64, f64) {
        let l = self.layout;
        let racks = servers.div_ceil(self.fill.servers.max(1)).max(1);
        let rows = racks.div_ceil(l.racks_per_row).max(1);
        let along = f64::from(l.racks_per_row) * l.rack_pitch_m / 2.0;
        let across = f64::from(rows.div_ceil(4).max(1)) * l.row_pitch_m;
        let run = |d: f64| (d + 2.0 * l.tray_drop_m) * (1.0 + l.slack);
        let cost = |use_, d, cages| {
            // Past every medium's reach the layout refuses the design; price it as the dearest.
            self.link_cost(use_, run(d), cages)
                .or_else(|| self.link_cost(use_, 0.0, cages))
                .unwrap_or(0.0)
        };
        (
            cost(
                CableUse::HostSwitch,
                along,
                [self.host_cage, self.switch_cage],
            ),
            cost(
                CableUse::SwitchSwitch,
                along + across,
                [self.switch_cage, self.switch_cage],
            ),
        )
    }
}
