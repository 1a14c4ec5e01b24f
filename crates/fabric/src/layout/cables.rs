//! Cabling a built fabric: every network link measured, each group of links that share cages
//! given the cheapest class of medium that carries it all, then a transceiver per fibre cage.

use super::cages::{CageGroups, End, GroupForm};
use super::hall::{place, run_length, Position};
use super::media::{CableCtx, Chooser, Class, CLASSES};
use crate::error::{err, BuildError};
use crate::graph::{CageIndex, Fabric, LinkKind, Medium, Module, PortId};
use crate::hardware::Resolved;
use railyard_catalog::{CableUse, FibreKind, TransceiverModel};
use std::collections::HashMap;

/// Measures every network link of the compute fabric and chooses its cable, fibre and transceivers.
pub fn place_and_cable(f: &mut Fabric, r: &Resolved) -> Result<(), BuildError> {
    cable(f, &CableCtx::of(r))
}

/// Measures every network link and chooses its cable, fibre and transceivers: links that share
/// multi-port cages are cabled as a group ([`GroupForm`]), each group by the cheapest class of
/// medium that carries all of it; then a transceiver for every cage that carries fibre.
pub fn cable(f: &mut Fabric, c: &CableCtx) -> Result<(), BuildError> {
    let (net, mut ends) = measure(f, c);
    let CageGroups {
        cages,
        root: group_of,
        links_in,
    } = CageGroups::of(f.nodes.len(), &mut ends);
    let chooser = c.chooser();
    let needs = Needs::of(f, &net, &ends, &group_of, &chooser);
    let cabling = Cabling {
        c,
        chooser: &chooser,
        net: &net,
        ends: &ends,
        links_in: &links_in,
        needs: &needs,
    };
    let mut parts_for: HashMap<(GroupForm, [u32; 2]), bool> = HashMap::new();
    for group in needs.grouped.chunk_by(|x, y| x.0 == y.0) {
        cabling.group(f, group, &mut parts_for)?;
    }
    add_modules(f, c, &chooser, &cages, &net, &ends)
}

/// Measures every network link's run (in id order) and gathers what cabling needs of each end:
/// the link ids and, per link, its two ends' cages and how many ports share them.
fn measure(f: &mut Fabric, c: &CableCtx) -> (Vec<u32>, Vec<[End; 2]>) {
    let l = c.layout;
    let placement = place(f, l, c.fill);
    // Where every node stands, indexed by node id: server nodes stand with their server.
    let mut node_pos: Vec<Option<Position>> = f
        .nodes
        .iter()
        .map(|n| match n.server {
            Some(s) if !n.is_switch() => placement.server.get(s as usize).copied(),
            _ => None,
        })
        .collect();
    for (id, pos) in &placement.node {
        node_pos[id.0 as usize] = Some(*pos);
    }
    let switch_cage = c.switch_cage;
    let nic_cage = c.host_cage;

    // One pass over the network links (in id order) gathers what the steps below need of each end:
    // its position, its cage slot and how many ports share that cage.
    let mut net: Vec<u32> = Vec::new();
    let mut ends: Vec<[End; 2]> = Vec::new();
    let end = |f: &Fabric, p: PortId| {
        let port = &f.ports[p.0 as usize];
        let node = &f.nodes[port.node.0 as usize];
        let (holder, cage) = f.cage_holder(p);
        End {
            node: holder,
            cage,
            slot: 0,
            cage_size: if node.is_switch() {
                switch_cage
            } else {
                nic_cage
            },
        }
    };
    for id in 0..f.links.len() {
        let link = &f.links[id];
        if !link.kind.is_network() {
            continue;
        }
        let pos = |p: PortId| {
            node_pos[f.ports[p.0 as usize].node.0 as usize].expect("every cabled node is placed")
        };
        let run = run_length(pos(link.a), pos(link.b), l);
        let (a, b) = (end(f, link.a), end(f, link.b));
        f.links[id].run_m = run;
        net.push(id as u32);
        ends.push([a, b]);
    }
    (net, ends)
}

fn use_of(kind: LinkKind) -> CableUse {
    if kind == LinkKind::ServerLeaf {
        CableUse::HostSwitch
    } else {
        CableUse::SwitchSwitch
    }
}

/// What a link asks of its medium: its use, its run (bits) and the cage sizes at its ends.
type Need = (CableUse, u64, [u32; 2]);

/// Links differ only in use, run and cage sizes as far as media go, and few runs are distinct:
/// each class's medium is chosen once per distinct need.
struct Needs {
    /// Per need, each class's medium and cost per link (`None`: the class cannot carry it).
    options: Vec<[Option<(Medium, f64)>; CLASSES.len()]>,
    needs: Vec<Need>,
    /// (group root, link, need): groups in order of their root, members in link order.
    grouped: Vec<(u32, u32, u32)>,
}

impl Needs {
    fn of(
        f: &Fabric,
        net: &[u32],
        ends: &[[End; 2]],
        group_of: &[u32],
        chooser: &Chooser,
    ) -> Needs {
        let mut need_ids: HashMap<Need, u32> = HashMap::new();
        let mut last_need: Option<(Need, u32)> = None;
        let mut options: Vec<[Option<(Medium, f64)>; CLASSES.len()]> = Vec::new();
        let mut needs: Vec<Need> = Vec::new();
        let mut grouped: Vec<(u32, u32, u32)> = Vec::with_capacity(net.len());
        for (i, (&id, e)) in net.iter().zip(ends).enumerate() {
            let link = &f.links[id as usize];
            let cage_sizes = [e[0].cage_size, e[1].cage_size];
            let need = (use_of(link.kind), link.run_m.to_bits(), cage_sizes);
            let n = match last_need {
                Some((last, n)) if last == need => n,
                _ => *need_ids.entry(need).or_insert_with(|| {
                    options.push(
                        CLASSES.map(|class| chooser.medium(class, need.0, link.run_m, cage_sizes)),
                    );
                    needs.push(need);
                    options.len() as u32 - 1
                }),
            };
            last_need = Some((need, n));
            grouped.push((group_of[i], i as u32, n));
        }
        grouped.sort_unstable();
        Needs {
            options,
            needs,
            grouped,
        }
    }
}

/// What cabling a group of links needs: the context, the medium chooser, the links (ids into
/// the fabric's links), their ends, the links through each cage slot and the media per need.
struct Cabling<'x, 'c> {
    c: &'x CableCtx<'c>,
    chooser: &'x Chooser<'c>,
    net: &'x [u32],
    ends: &'x [[End; 2]],
    links_in: &'x [u32],
    needs: &'x Needs,
}

impl Cabling<'_, '_> {
    /// Gives every link of `group` (entries of [`Needs::grouped`] with one root) the cheapest class
    /// of medium that carries all of them; the first of equal totals.
    fn group(
        &self,
        f: &mut Fabric,
        group: &[(u32, u32, u32)],
        parts_for: &mut HashMap<(GroupForm, [u32; 2]), bool>,
    ) -> Result<(), BuildError> {
        let (net, ends, chooser) = (self.net, self.ends, self.chooser);
        let form = GroupForm::of(group.iter().map(|g| &ends[g.1 as usize]), self.links_in);
        // Where the catalog has no part at all for such cages (four 200GbE ports in an SN5600
        // cage), a straight cable per link as before, which the plan flags (`shared_cage_cables`).
        let [a, b] = ends[group[0].1 as usize].map(|e| e.cage_size);
        let rule = if form == GroupForm::Single
            || *parts_for
                .entry((form, [a, b]))
                .or_insert_with(|| chooser.has_parts_for(form, [a, b]))
        {
            form
        } else {
            GroupForm::Single
        };
        let Some((c, shared)) = self.cheapest(f, group, rule) else {
            return Err(self.unreached(f, group, rule, form));
        };
        for &(_, i, n) in group {
            let id = net[i as usize] as usize;
            if let Some(m) = &shared {
                f.links[id].medium = m.clone();
            } else if let Some((m, _)) = &self.needs.options[n as usize][c] {
                f.links[id].medium = m.clone();
            }
        }
        Ok(())
    }

    /// The cheapest class that carries every link of `group` cabled by `rule`: its index in
    /// [`CLASSES`], and the one cable the group shares where it takes one.
    fn cheapest(
        &self,
        f: &Fabric,
        group: &[(u32, u32, u32)],
        rule: GroupForm,
    ) -> Option<(usize, Option<Medium>)> {
        let net = self.net;
        let mut best: Option<(f64, usize, Option<Medium>)> = None;
        'class: for (c, class) in CLASSES.iter().enumerate() {
            let mut total = 0.0;
            let mut shared = None;
            match (class, rule) {
                (Class::Direct(kind), GroupForm::Assembly { form, ports }) => {
                    // One cable for the whole group, at the stocked length of its longest run.
                    let links = || group.iter().map(|g| &f.links[net[g.1 as usize] as usize]);
                    let uses: Vec<CableUse> = links().map(|l| use_of(l.kind)).collect();
                    let longest = links().map(|l| l.run_m).fold(0.0, f64::max);
                    match self.chooser.assembly(*kind, form, ports, &uses, longest) {
                        Some((medium, cost)) => {
                            total = cost;
                            shared = Some(medium);
                        }
                        None => continue 'class,
                    }
                }
                // Ports of one cage that go to different cages take a transceiver in it.
                (Class::Direct(_), GroupForm::Mesh) => continue 'class,
                _ => {
                    for &(_, _, n) in group {
                        // Modules must reach the longest run through either of their cages;
                        // approximated here by the link's own run and checked exactly when
                        // modules are chosen ([`add_modules`]).
                        match &self.needs.options[n as usize][c] {
                            Some((_, cost)) => total += cost,
                            None => continue 'class,
                        }
                    }
                }
            }
            if best.as_ref().is_none_or(|(t, _, _)| total < t - 1e-9) {
                best = Some((total, c, shared));
            }
        }
        best.map(|(_, c, shared)| (c, shared))
    }

    /// Why no class carries `group`: the catalog has no part for its cages where straight cables
    /// stood in (`rule` is not its `form`), else its longest run is out of every medium's reach.
    fn unreached(
        &self,
        f: &Fabric,
        group: &[(u32, u32, u32)],
        rule: GroupForm,
        form: GroupForm,
    ) -> BuildError {
        let (c, net) = (self.c, self.net);
        let root = net[group[0].0 as usize];
        let (worst, n) = group
            .iter()
            .map(|&(_, i, n)| (net[i as usize], n))
            .max_by(|a, b| {
                f.links[a.0 as usize]
                    .run_m
                    .total_cmp(&f.links[b.0 as usize].run_m)
            })
            .unwrap_or((root, 0));
        let link = &f.links[worst as usize];
        let (use_, _, cage_sizes) = self.needs.needs[n as usize];
        let (reach, part) = self.chooser.longest_reach(use_, cage_sizes, rule);
        if rule != form {
            // Straight cables stood in for parts the catalog does not have: that is what
            // fails, not the hall (NDR200's four-port cages blamed a 13.9 m run).
            let ports = cage_sizes.iter().copied().max().unwrap_or(1);
            let wanted = match form {
                GroupForm::Assembly { form, ports } => format!(
                    "a {ports}-port {} cable or a {ports}-port transceiver",
                    form.as_str()
                ),
                _ => format!("a {ports}-port transceiver"),
            };
            return err(
                "layout",
                format!(
                    "the catalog has no part for a {ports}-port cage of {} at {} Gb/s ({wanted}): \
                     from {}/{} to {}/{} ({:.1} m) only a straight cable could stand in, and \
                     none reaches (longest: {reach} m, {part}); add such parts with --catalog, or \
                     choose a port mode with one port per cage (fabric.port_gbps)",
                    c.tech,
                    c.gbps,
                    f.port_device(link.a),
                    f.port_label(link.a),
                    f.port_device(link.b),
                    f.port_label(link.b),
                    link.run_m,
                ),
            );
        }
        let shared = match rule {
            GroupForm::Mesh => {
                " (ports of its cages go to different cages, so it takes transceivers)".to_string()
            }
            GroupForm::Assembly { form, ports } => format!(
                " (its cage's {ports} ports take one {} cable)",
                form.as_str()
            ),
            GroupForm::Single => String::new(),
        };
        err(
            "layout",
            format!(
                "the {:.1} m run from {}/{} to {}/{}{shared} is longer than any {} cable or optics in the catalog reaches (longest: {reach} m, {part}); shorten the layout (layout.racks_per_row, layout.row_pitch_m, layout.rack_pitch_m) or add longer optics with --catalog",
                link.run_m,
                f.port_device(link.a),
                f.port_label(link.a),
                f.port_device(link.b),
                f.port_label(link.b),
                c.tech
            ),
        )
    }
}

/// One transceiver per cage that carries fibre, reaching the longest run through that cage, its
/// ports taking the connector of the fibre its links were given.
fn add_modules(
    f: &mut Fabric,
    c: &CableCtx,
    chooser: &Chooser,
    cages: &CageIndex,
    net: &[u32],
    ends: &[[End; 2]],
) -> Result<(), BuildError> {
    // One transceiver per cage that carries fibre, reaching the longest run through that cage:
    // `in_cage[slot]` indexes `fibre_cages` (u32::MAX: no fibre in that cage).
    let mut in_cage = vec![u32::MAX; cages.len()];
    // A cage's ports take the connector of the fibre its links were given (one per medium group).
    let mut fibre_cages: Vec<(FibreKind, &str, f64, u32)> = Vec::new();
    for (&id, e) in net.iter().zip(ends) {
        let link = &f.links[id as usize];
        if let Medium::Fibre { fibre, part, .. } = &link.medium {
            let connector = chooser.connector_of(part);
            for end in e {
                let slot = &mut in_cage[end.slot as usize];
                if *slot == u32::MAX {
                    *slot = fibre_cages.len() as u32;
                    fibre_cages.push((*fibre, connector, 0.0, end.cage_size));
                }
                let e = &mut fibre_cages[*slot as usize];
                e.2 = e.2.max(link.run_m);
            }
        }
    }
    // (fibre, connector, longest run, ports in the cage) -> the cheapest module that carries them.
    type ModuleNeed<'a> = (FibreKind, &'a str, u64, u32);
    let mut modules: HashMap<ModuleNeed, Option<&TransceiverModel>> = HashMap::new();
    let mut last: Option<(ModuleNeed, Option<&TransceiverModel>)> = None;
    f.modules.reserve(fibre_cages.len());
    for (node, cage, slot) in cages.slots() {
        let Some(&(fibre, connector, run, size)) = fibre_cages.get(in_cage[slot] as usize) else {
            continue;
        };
        let key = (fibre, connector, run.to_bits(), size);
        let module = match last {
            Some((k, m)) if k == key => m,
            _ => *modules
                .entry(key)
                .or_insert_with(|| chooser.module(fibre, connector, size, run)),
        };
        last = Some((key, module));
        let module = module.ok_or_else(|| {
            err(
                "layout",
                format!(
                    "no {:?} transceiver for {} carries {size} ports over {run:.1} m in cage {cage} of {}",
                    fibre,
                    c.tech,
                    f.node(node).name
                ),
            )
        })?;
        f.modules.push(Module {
            node,
            cage,
            part: chooser.part(&module.id),
        });
    }
    Ok(())
}
