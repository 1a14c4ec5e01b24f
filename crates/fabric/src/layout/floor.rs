//! The least any design's cables and optics can cost ([`MediaFloor`]): the design search's lower
//! bound, from the shortest runs the hall allows or, for a shape not built, every link at its run.

use super::hall::{run_length, server_racks, Hall};
use super::media::CableCtx;
use crate::shape::Shape;
use crate::topo::{self, Counts, Ends};
use railyard_catalog::CableUse;
use railyard_spec::{ClusterSpec, LeafPlacement, Topology};
use std::collections::HashMap;

/// The least any design's cables and optics can cost, from what every design of a request shares:
/// where its servers stand, and where leaves, spines and cores may stand ([`place`](super::place)). A lower bound,
/// so the search can skip designs that cannot be cheaper than one it has built, and refuse at once a
/// switch whose cables cannot reach the servers in any design.
///
/// Per link it is the cheapest medium at the shortest run the link can have (its share of the
/// transceivers included): every medium costs at least as much on a longer run, a cage's transceiver
/// costs at least its share per link through it, and links that share a cage share a class of medium,
/// which can only cost more.
#[derive(Debug, Clone)]
pub struct MediaFloor<'c> {
    ctx: CableCtx<'c>,
    /// Cheapest cost per link by (towards a host, run): a hall has few distinct runs.
    memo: std::cell::RefCell<HashMap<(bool, u64), Option<f64>>>,
}

impl<'c> MediaFloor<'c> {
    pub fn new(ctx: CableCtx<'c>) -> MediaFloor<'c> {
        MediaFloor {
            ctx,
            memo: Default::default(),
        }
    }

    /// The cheapest medium's cost per link for a run (see [`CableCtx::link_cost`]), remembered.
    pub(super) fn link_cost(&self, to_host: bool, run: f64) -> Option<f64> {
        *self
            .memo
            .borrow_mut()
            .entry((to_host, run.to_bits()))
            .or_insert_with(|| {
                let (host, switch) = (self.ctx.host_cage, self.ctx.switch_cage);
                if to_host {
                    self.ctx
                        .link_cost(CableUse::HostSwitch, run, [host, switch])
                } else {
                    self.ctx
                        .link_cost(CableUse::SwitchSwitch, run, [switch, switch])
                }
            })
    }

    pub(super) fn run(&self, dx_racks: u32, dy_rows: u32) -> f64 {
        let l = self.ctx.layout;
        (f64::from(dx_racks) * l.rack_pitch_m
            + f64::from(dy_rows) * l.row_pitch_m
            + 2.0 * l.tray_drop_m)
            * (1.0 + l.slack)
    }

    /// The shortest run between two devices that may share a rack.
    fn shortest(&self) -> f64 {
        self.ctx.layout.in_rack_m.min(self.run(0, 0))
    }

    /// The server-to-leaf links of `servers` servers in units of `su` (or none), `links_per_server`
    /// each: the least they cost, or `Err(run)` when some server's shortest run to any leaf is longer
    /// than every medium reaches (no design of this switch can cable it).
    ///
    /// A leaf stands at the end of its first server's row (column `racks_per_row` or beyond), in the
    /// middle (columns `racks_per_row / 2` and on, server racks right of the middle moved over), or in
    /// its first server's rack; so a server in column c is at least `racks_per_row - c`, `mid - c` or
    /// `c - mid + 1` racks from its leaf, or (top of rack) in its rack or beside it.
    pub fn server_leaf(
        &self,
        servers: u32,
        su: Option<u32>,
        links_per_server: u64,
    ) -> Result<f64, f64> {
        let l = self.ctx.layout;
        let units = (0..servers).map(|i| su.map(|s| i / s.max(1)));
        let racks = server_racks(units, self.ctx.fill.servers);
        // Servers per column of the row.
        let mut per_col = vec![0u64; l.racks_per_row as usize];
        for r in racks {
            per_col[(r % l.racks_per_row) as usize] += 1;
        }
        let mid = l.racks_per_row / 2;
        let mut total = 0.0;
        for (col, &n) in per_col.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let col = col as u32;
            let run = match l.leaf_placement {
                LeafPlacement::EndOfRow => self.run(l.racks_per_row - col, 0),
                LeafPlacement::MiddleOfRow if col < mid => self.run(mid - col, 0),
                LeafPlacement::MiddleOfRow => self.run(col - mid + 1, 0),
                LeafPlacement::TopOfRack => self.shortest(),
            };
            let cost = self.link_cost(true, run).ok_or(run)?;
            total += cost * (n * links_per_server) as f64;
        }
        Ok(total)
    }

    /// The leaf-to-spine links of leaves `rows_away` rows from the network row (one entry per leaf,
    /// as [`Hall::rows_from_network`] gives for its first server), `uplinks` each, when `spines`
    /// spines stand in the network row from its first column, `per_rack` to a rack: a leaf
    /// stands at the end or the middle of its row, or in a server rack. `None` when no medium
    /// reaches some of them.
    pub fn leaf_spine(
        &self,
        rows_away: impl Iterator<Item = u32>,
        uplinks: u64,
        spines: u64,
    ) -> Option<f64> {
        let l = self.ctx.layout;
        let last_col = spines.saturating_sub(1) / u64::from(self.ctx.fill.switches.max(1));
        let leaf_col = match l.leaf_placement {
            LeafPlacement::EndOfRow => l.racks_per_row,
            LeafPlacement::MiddleOfRow => l.racks_per_row / 2,
            LeafPlacement::TopOfRack => 0,
        };
        let dx = u64::from(leaf_col).saturating_sub(last_col) as u32;
        // Leaves per distance.
        let mut per_row: Vec<u64> = Vec::new();
        for dy in rows_away {
            let dy = dy.max(1) as usize;
            if per_row.len() <= dy {
                per_row.resize(dy + 1, 0);
            }
            per_row[dy] += 1;
        }
        let mut total = 0.0;
        for (dy, &n) in per_row.iter().enumerate().filter(|(_, &n)| n > 0) {
            total += self.link_cost(false, self.run(dx, dy as u32))? * (n * uplinks) as f64;
        }
        Some(total)
    }

    /// `links` spine-to-core links from `spines` spines to `cores` cores, every core taking as many:
    /// both tiers stand in the network row, spines first, `per_rack` to a rack, so a core
    /// is at least as far from every spine as from the last spine's rack.
    pub fn spine_core(&self, spines: u64, cores: u64, links: u64) -> Option<f64> {
        if links == 0 || cores == 0 {
            return Some(0.0);
        }
        let spr = u64::from(self.ctx.fill.switches.max(1));
        let last_spine_col = spines.saturating_sub(1) / spr;
        let per_core = links as f64 / cores as f64;
        let mut total = 0.0;
        // Cores by rack column: the first and last column may be part-filled.
        let mut i = spines;
        while i < spines + cores {
            let col = i / spr;
            let in_col = ((col + 1) * spr).min(spines + cores) - i;
            let dx = col - last_spine_col;
            let run = if dx == 0 {
                self.shortest()
            } else {
                self.run(dx as u32, 0)
            };
            total += self.link_cost(false, run)? * per_core * in_col as f64;
            i += in_col;
        }
        Some(total)
    }

    /// One inter-switch link: its ends may share a rack.
    pub fn switch_switch(&self) -> Option<f64> {
        self.link_cost(false, self.shortest())
    }

    /// Every network link of a tree shape at its own run, where [`place`](super::place) would put its ends once
    /// built ([`Hall`], [`topo::each_link`]), at the cheapest medium for that run: `Ok(cost)`,
    /// `Err(run)` when some run is longer than every medium reaches, `None` for designs without a
    /// tree. Only sharing of cages is left out, which can only cost more.
    pub fn runs(&self, spec: &ClusterSpec, shape: &Shape, c: &Counts) -> Option<Result<f64, f64>> {
        let l = self.ctx.layout;
        let firsts = topo::leaf_first_servers(spec, shape, c)?;
        let su = shape
            .su_size
            .filter(|_| spec.fabric.topology == Topology::RailOptimized);
        let hall = Hall::new(
            l,
            self.ctx.fill,
            (0..spec.servers.count).map(|i| su.map(|s| i / s.max(1))),
            &firsts,
        );
        // Links by (towards a host, run): a hall has few distinct runs, so each is priced once, in
        // order of first appearance. The run is `run_length`'s, as the built fabric measures it.
        let mut links: HashMap<(bool, u64), u64> = HashMap::new();
        let mut order: Vec<(bool, u64)> = Vec::new();
        let mut last: Option<((bool, u64), u64)> = None;
        let visited = topo::each_link(spec, shape, c, &mut |ends, n| {
            let (a, b, to_host) = match ends {
                Ends::ServerLeaf { server, leaf } => {
                    (hall.server(server), hall.leaves[leaf as usize], true)
                }
                Ends::LeafSpine { leaf, spine } => {
                    (hall.leaves[leaf as usize], hall.upper(spine), false)
                }
                Ends::SpineCore { spine, core } => (hall.upper(spine), hall.upper(core), false),
            };
            let key = (to_host, run_length(a, b, l).to_bits());
            // Neighbouring links mostly share a distance: count runs of equal keys.
            match &mut last {
                Some((k, m)) if *k == key => *m += n,
                _ => {
                    if let Some((k, m)) = last.replace((key, n)) {
                        *links.entry(k).or_insert_with(|| {
                            order.push(k);
                            0
                        }) += m;
                    }
                }
            }
        });
        if let Some((k, m)) = last {
            *links.entry(k).or_insert_with(|| {
                order.push(k);
                0
            }) += m;
        }
        let mut total = 0.0;
        let mut unreached: Option<f64> = None;
        for key @ (to_host, bits) in order {
            let run = f64::from_bits(bits);
            match self.link_cost(to_host, run) {
                Some(x) => total += x * links[&key] as f64,
                None => unreached = Some(unreached.unwrap_or(0.0).max(run)),
            }
        }
        visited.then(|| unreached.map_or(Ok(total), Err))
    }
}
