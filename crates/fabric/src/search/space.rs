//! Step 2, count and bound: every shape of every switch option counted ([`Candidate`]), priced at
//! typical runs to rank and bounded below by the hall's shortest runs ([`MediaFloor`]); the
//! [`Space`] the branch and bound searches.

use super::conventional::conventional_shape;
use super::shapes::{each_shape, Req};
use crate::error::BuildError;
use crate::hardware::{base, switch_options, Base, Resolved, SwitchOption};
use crate::layout::{CableCtx, Hall, MediaFloor, RackFill, ServerSlot};
use crate::shape::{Shape, Upper};
use crate::topo::{counts, leaf_first_servers, Counts, DesignSize, ServerCounts};
use railyard_catalog::Catalog;
use railyard_spec::{ClusterSpec, Source, Topology};
use std::collections::HashMap;

/// One design the search considered.
#[derive(Debug, Clone)]
pub(super) struct Candidate<'a> {
    pub(super) option: SwitchOption<'a>,
    pub(super) shape: Shape,
    pub(super) counts: Counts,
    /// Switches and NICs at catalog prices.
    pub(super) hardware: f64,
    /// Cables and optics at typical runs (before calibration).
    pub(super) media: f64,
    /// The least the design can cost: switches and NICs at their prices, cables and optics at the
    /// shortest runs the hall allows ([`MediaFloor`]); never above the exact cost.
    pub(super) floor: f64,
    /// The floor counts every link at its own run ([`MediaFloor::runs`]).
    pub(super) refined: bool,
    /// Index of its switch option in [`Space::options`].
    pub(super) option_index: usize,
    pub(super) exact: Option<f64>,
    /// Keeps every choice the preset made.
    pub(super) keeps_preset: bool,
    pub(super) conventional: bool,
    /// Enumeration order: the last tie-break.
    pub(super) order: usize,
    /// Host ports on a full leaf.
    pub(super) leaf_hosts: u64,
    /// Leaf slots per pod (three tiers; 0 otherwise).
    pub(super) pod_slots: u64,
}

impl Candidate<'_> {
    fn estimate(&self, calibration: f64) -> f64 {
        self.hardware + self.media * calibration
    }

    pub(super) fn cost(&self, calibration: f64) -> f64 {
        self.exact.unwrap_or_else(|| self.estimate(calibration))
    }

    pub(super) fn bisection(&self, gbps: u32) -> f64 {
        self.counts
            .bisection_gbps(f64::from(gbps), self.counts.inter_switch > 0)
    }

    /// Ranking key: cost, then fewer switches, more bisection, enumeration order.
    pub(super) fn key(&self, calibration: f64, gbps: u32) -> (f64, u64, f64, usize) {
        (
            self.cost(calibration),
            self.counts.switches(),
            -self.bisection(gbps),
            self.order,
        )
    }

    /// The best key the design could have once built: its floor for the cost.
    pub(super) fn floor_key(&self, gbps: u32) -> (f64, u64, f64, usize) {
        (
            self.exact.unwrap_or(self.floor),
            self.counts.switches(),
            -self.bisection(gbps),
            self.order,
        )
    }

    pub(super) fn same_design(&self, other: &Candidate) -> bool {
        self.option.switch.id == other.option.switch.id
            && self.option.mode.name == other.option.mode.name
            && self.shape.su_size == other.shape.su_size
            && self.counts == other.counts
    }
}

pub(super) fn cmp_keys(a: (f64, u64, f64, usize), b: (f64, u64, f64, usize)) -> std::cmp::Ordering {
    // Costs are sums of prices: equal designs cost the same to the cent, so compare cents.
    let cents = |x: f64| (x * 100.0).round();
    cents(a.0)
        .total_cmp(&cents(b.0))
        .then(a.1.cmp(&b.1))
        .then(a.2.total_cmp(&b.2))
        .then(a.3.cmp(&b.3))
}

/// Every candidate of the request, counted and estimated; and the reason none exists, if none does.
pub(super) struct Space<'a> {
    pub(super) base: Base<'a>,
    pub(super) options: Vec<SwitchOption<'a>>,
    /// The cable floor of each option.
    pub(super) floors: Vec<MediaFloor<'a>>,
    pub(super) candidates: Vec<Candidate<'a>>,
    /// The smallest design refused for its size, if every design of some switch was.
    pub(super) too_big: Option<BuildError>,
    /// The best-ranked design that keeps the preset's choices but whose runs no cable or optics
    /// reaches ([`MediaFloor`]): built only to say why, when no design is left.
    pub(super) out_of_reach: Option<Candidate<'a>>,
}

pub(super) fn space<'a>(
    spec: &'a ClusterSpec,
    catalog: &'a Catalog,
) -> Result<Space<'a>, BuildError> {
    let base = base(spec, catalog)?;
    let options = switch_options(&base)?;
    let req = Req::of(spec).in_racks(crate::layout::rack_system(spec, catalog).map(|r| r.trays));
    let mut found = Found {
        candidates: Vec::new(),
        too_big: None,
        out_of_reach: None,
        halls: HashMap::new(),
        gbps: base.gbps,
    };
    let shared = Shared::of(spec, catalog, &base, &options);
    let mut floors = Vec::with_capacity(options.len());
    let conventional_switch = conventional_switch(&options);
    for (option_index, option) in options.iter().enumerate() {
        let k = option.mode.ports;
        let ctx = CableCtx {
            layout: &spec.layout,
            fill: RackFill::new(&spec.layout, shared.server, option.switch.rack_units),
            catalog,
            tech: spec.fabric.tech,
            gbps: option.mode.gbps,
            switch_cage: option.switch.ports_per_cage(option.mode),
            host_cage: base.host_cage(),
        };
        let typical = ctx.typical_link_costs(spec.servers.count);
        floors.push(MediaFloor::new(ctx));
        let media_floor = &floors[option_index];
        let mut census = Census {
            spec,
            base: &base,
            option: *option,
            option_index,
            shared,
            keeps_switch: option.named || spec.provenance.source("fabric.switch") == Source::Auto,
            typical,
            media_floor,
            isl_floor: media_floor.switch_switch(),
            server_floor: HashMap::new(),
        };
        let conventional = (conventional_switch
            == Some((option.switch.id.clone(), option.mode.name.clone())))
        .then(|| conventional_shape(&req, k))
        .flatten();
        let before = found.candidates.len();
        each_shape(&req, k, &mut |shape| {
            census.add(&mut found, shape, Some(shape) == conventional);
            true
        });
        if let Some(conv) = conventional {
            if !found.candidates[before..].iter().any(|c| c.shape == conv) {
                census.add(&mut found, conv, true);
            }
        }
    }
    let Found {
        mut candidates,
        too_big,
        out_of_reach,
        ..
    } = found;
    for (i, c) in candidates.iter_mut().enumerate() {
        c.order = i;
    }
    Ok(Space {
        base,
        options,
        floors,
        candidates,
        too_big: too_big.map(|(_, e)| e),
        out_of_reach,
    })
}

/// The conventional switch: the one the spec names, else the most ports, then the cheapest (its
/// id and port mode).
fn conventional_switch(options: &[SwitchOption]) -> Option<(String, String)> {
    options
        .iter()
        .find(|o| o.named)
        .or_else(|| {
            options.iter().min_by(|a, b| {
                (std::cmp::Reverse(a.mode.ports), a.switch.price.usd)
                    .partial_cmp(&(std::cmp::Reverse(b.mode.ports), b.switch.price.usd))
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
        })
        .map(|o| (o.switch.id.clone(), o.mode.name.clone()))
}

/// What counting every switch option's shapes gathers.
struct Found<'a> {
    candidates: Vec<Candidate<'a>>,
    /// The smallest design refused for its size (its devices), if any.
    too_big: Option<(u64, BuildError)>,
    out_of_reach: Option<Candidate<'a>>,
    /// Where servers stand, per unit size (leaves are placed by the floors themselves).
    halls: HashMap<Option<u32>, Hall<'a>>,
    gbps: u32,
}

impl<'a> Found<'a> {
    /// Keeps a candidate with a floor; of those without (no cable or optics reaches some run),
    /// the best-ranked that keeps the preset's choices, to say why when no design is left.
    fn keep(&mut self, candidate: Candidate<'a>, reached: bool) {
        let gbps = self.gbps;
        if reached {
            self.candidates.push(candidate);
        } else if candidate.keeps_preset
            && self.out_of_reach.as_ref().is_none_or(|o: &Candidate| {
                cmp_keys(candidate.key(1.0, gbps), o.key(1.0, gbps)).is_lt()
            })
        {
            self.out_of_reach = Some(candidate);
        }
    }
}

/// What every switch option's census shares.
#[derive(Debug, Clone, Copy)]
struct Shared {
    servers: u64,
    /// One server's nodes, ports and links (every server is alike, whichever the switch).
    server_counts: ServerCounts,
    /// The preset's unit size, which a design keeps to keep the preset's choices.
    preset_su: Option<u32>,
    /// Every compute NIC at its catalog price.
    nic_cost: f64,
    /// What a server asks of a rack (height, power, a rack-scale system's trays).
    server: ServerSlot,
}

impl Shared {
    fn of(spec: &ClusterSpec, catalog: &Catalog, base: &Base, options: &[SwitchOption]) -> Shared {
        let servers = u64::from(spec.servers.count);
        Shared {
            servers,
            // Every server is alike, whichever the switch.
            server_counts: ServerCounts::of(&Resolved::new(
                base,
                options[0].switch,
                options[0].mode,
                Shape::FLAT,
            )),
            preset_su: (spec.provenance.source("fabric.su_size") == Source::Preset)
                .then_some(spec.fabric.su_size)
                .flatten(),
            nic_cost: base.nic.price.usd * servers as f64 * f64::from(spec.servers.compute_nics),
            server: ServerSlot::of(spec, catalog),
        }
    }
}

/// Counting the shapes of one switch option: what all its candidates share.
struct Census<'s, 'a> {
    spec: &'a ClusterSpec,
    base: &'s Base<'a>,
    option: SwitchOption<'a>,
    option_index: usize,
    shared: Shared,
    keeps_switch: bool,
    /// Typical cost of a server link and of a switch-to-switch link (to rank).
    typical: (f64, f64),
    media_floor: &'s MediaFloor<'a>,
    isl_floor: Option<f64>,
    /// The floors of the server links per unit size.
    server_floor: HashMap<Option<u32>, Result<f64, f64>>,
}

impl<'a> Census<'_, 'a> {
    /// Counts `shape` and adds it as a candidate (`conventional` if it is the conventional
    /// design): nothing when it does not fit, noted in `too_big` when past the size limits.
    fn add(&mut self, found: &mut Found<'a>, shape: Shape, conventional: bool) {
        let spec = self.spec;
        let option = self.option;
        let k = option.mode.ports;
        let Some(c) = counts(spec, k, &shape) else {
            return;
        };
        let size = DesignSize::of(self.shared.servers, self.shared.server_counts, &c, k);
        let r = Resolved::new(self.base, option.switch, option.mode, shape);
        if let Err(e) = size.check(&r) {
            if found.too_big.as_ref().is_none_or(|(n, _)| size.nodes < *n) {
                found.too_big = Some((size.nodes, e));
            }
            return;
        }
        // A unit size only shapes rail-optimized designs.
        let keeps_su = self.shared.preset_su.is_none()
            || spec.fabric.topology != Topology::RailOptimized
            || shape.su_size == self.shared.preset_su;
        let (leaf_hosts, pod_slots) = self.leaf_fill(&shape);
        let hardware = c.switches() as f64 * option.switch.price.usd + self.shared.nic_cost;
        let (c_sl, c_ss) = self.typical;
        let media = c.server_leaf as f64 * c_sl
            + (c.leaf_spine + c.spine_core + c.inter_switch) as f64 * c_ss;
        // The least this design can cost; none when no cable or optics reaches its runs.
        let floor = self.floor(&mut found.halls, &shape, &c, hardware);
        let candidate = Candidate {
            leaf_hosts,
            pod_slots,
            option,
            shape,
            counts: c,
            hardware,
            media,
            floor: floor.unwrap_or(f64::INFINITY),
            refined: false,
            option_index: self.option_index,
            exact: None,
            keeps_preset: self.keeps_switch && keeps_su,
            conventional,
            order: 0,
        };
        found.keep(candidate, floor.is_some());
    }

    /// Host ports on a full leaf, and leaf slots per pod (three tiers; 0 otherwise).
    fn leaf_fill(&self, shape: &Shape) -> (u64, u64) {
        let spec = self.spec;
        let servers = self.shared.servers;
        let (units, rails, tree_hosts) = match spec.fabric.topology {
            Topology::RailOptimized => (
                servers.div_ceil(u64::from(shape.su_size.unwrap_or(1).max(1))),
                spec.servers.compute_nics,
                servers,
            ),
            Topology::RailOnly => (
                servers.div_ceil(u64::from(shape.leaf_down.max(1))),
                1,
                servers,
            ),
            _ => {
                let hosts = servers * u64::from(spec.servers.compute_nics);
                (hosts.div_ceil(u64::from(shape.leaf_down.max(1))), 1, hosts)
            }
        };
        let pod_slots = match shape.upper {
            Upper::Three { pods, .. } => pods.count(units, rails).1,
            _ => 0,
        };
        (tree_hosts.min(u64::from(shape.leaf_down)), pod_slots)
    }

    /// The least a design of `shape` with counts `c` can cost ([`MediaFloor`]): `hardware` and
    /// its links at the shortest runs the hall allows; `None` when no cable reaches some run.
    fn floor(
        &mut self,
        halls: &mut HashMap<Option<u32>, Hall<'a>>,
        shape: &Shape,
        c: &Counts,
        hardware: f64,
    ) -> Option<f64> {
        let spec = self.spec;
        let media_floor = self.media_floor;
        let su = shape
            .su_size
            .filter(|_| spec.fabric.topology == Topology::RailOptimized);
        let sl = *self.server_floor.entry(su).or_insert_with(|| {
            media_floor.server_leaf(
                spec.servers.count,
                su,
                c.server_leaf / self.shared.servers.max(1),
            )
        });
        let ls = if c.leaf_spine > 0 {
            // Every leaf at least as many rows from the spines as its first server.
            let hall = halls.entry(su).or_insert_with(|| {
                Hall::new(
                    &spec.layout,
                    RackFill::new(
                        &spec.layout,
                        self.shared.server,
                        self.option.switch.rack_units,
                    ),
                    (0..spec.servers.count).map(|i| su.map(|s| i / s.max(1))),
                    &[],
                )
            });
            let firsts = leaf_first_servers(spec, shape, c)?;
            media_floor.leaf_spine(
                firsts.iter().map(|&s| hall.rows_from_network(s)),
                c.leaf_spine / c.leaves.max(1),
                c.spines,
            )?
        } else {
            0.0
        };
        let sc = media_floor.spine_core(c.spines, c.cores, c.spine_core)?;
        let isl = if c.inter_switch > 0 {
            self.isl_floor? * c.inter_switch as f64
        } else {
            0.0
        };
        Some(hardware + sl.ok()? + ls + sc + isl)
    }
}
