//! An all-to-all without relays counted per link (`StepBuilder::count_on`) a source GPU at a
//! time: the same flows, resources and counts as laying out every transfer through
//! `StepBuilder::send`, with each source's path to its NIC and each destination's path from its
//! NIC found once instead of for every transfer, and counted once per source or destination:
//! 268 million transfers of 16,384 GPUs spend their time routing between the NICs.

use super::{CollectiveError, Gpu, RouteFailure, StepBuilder, CANCEL_EVERY_TRANSFERS, STEP_CHUNK};
use crate::time::Time;
use railyard_fabric::PortId;

/// One GPU's side of its transfers through the network on one plane: its NIC port, the path
/// between the GPU and that NIC (resources and latency), and how many flows crossed it.
#[derive(Clone, Default)]
struct Side {
    port: Option<PortId>,
    path: Vec<u32>,
    latency: Time,
    flows: u64,
}

impl StepBuilder<'_, '_> {
    /// Counts the transfers of source ranks `lo..hi` to every other rank, as
    /// `AllToAll { relay: Direct }` lays them out: transfers inside a server over NVLink (or
    /// PCIe), the others from the source's NIC to the destination's through the network, each
    /// taking the connection number the layout in order gives it.
    pub(super) fn count_direct(&mut self, lo: u32, hi: u32) -> Result<(), CollectiveError> {
        let net = self.net;
        let ranks = self.shape.ranks;
        let planes = net.fabric.meta.planes.max(1);
        // Per destination rank and plane: its side, found when first needed.
        let mut into: Vec<Side> = vec![Side::default(); (ranks * planes) as usize];
        let mut known = vec![false; (ranks * planes) as usize];
        let mut net_path: Vec<u32> = Vec::new();
        let mut routes = std::mem::take(&mut self.routes);
        for i in lo..hi.min(ranks) {
            let a = self.comm.gpu_of_rank(i);
            let sa = &net.servers[a.server];
            let ga = sa.gpus[a.local as usize];
            let rail = sa.nic_of_gpu[a.local as usize];
            let mut out: Vec<Side> = vec![Side::default(); planes as usize];
            for (p, side) in out.iter_mut().enumerate() {
                if let Some((_, sp)) = net.nic_port(a.server, rail, p as u32) {
                    let snic = net.fabric.port(sp).node;
                    side.port = Some(sp);
                    side.latency =
                        net.pcie_path_memo(&mut self.pcie, ga, snic, a.server, &mut side.path);
                }
            }
            for j in 0..ranks {
                if i == j {
                    continue;
                }
                self.transfers = self.transfers.wrapping_add(1);
                if self.transfers.is_multiple_of(CANCEL_EVERY_TRANSFERS) {
                    self.cancel.check()?;
                }
                let b = self.comm.gpu_of_rank(j);
                if a.server == b.server {
                    self.count_inside(a, b)?;
                    continue;
                }
                let conn = self.conn;
                self.conn += 1;
                let plane = conn % planes;
                let k = (j * planes + plane) as usize;
                if !known[k] {
                    into[k] = self.side_into(b, plane);
                    known[k] = true;
                }
                let src = &out[plane as usize];
                let (Some(sp), Some(dp)) = (src.port, into[k].port) else {
                    let gb = net.servers[b.server].gpus[b.local as usize];
                    self.fail(RouteFailure {
                        src: net.fabric.node(ga).name.clone(),
                        dst: net.fabric.node(gb).name.clone(),
                        reason: "every NIC cable of a server is down".into(),
                    });
                    continue;
                };
                routes.clear();
                if let Err(e) = self.router.route_into(net, sp, dp, conn, &mut routes) {
                    self.fail(e);
                    continue;
                }
                let n = routes.len() as u64;
                let ph = &mut self.phases[0];
                let Some(c) = ph.counted.as_mut() else {
                    continue;
                };
                for (p, bytes) in routes.bytes(STEP_CHUNK).enumerate() {
                    net_path.clear();
                    let lat = net.network_path(sp, routes.path(p), &mut net_path);
                    for &r in &net_path {
                        c.load[r as usize] += 1;
                    }
                    c.min_bytes = c.min_bytes.min(bytes);
                    c.max_bytes = c.max_bytes.max(bytes);
                    ph.latency = ph.latency.max(src.latency + lat + into[k].latency);
                }
                ph.represented += n;
                out[plane as usize].flows += n;
                into[k].flows += n;
            }
            self.add_side(&out)?;
        }
        self.add_side(&into)?;
        self.routes = routes;
        Ok(())
    }

    /// The side of destination GPU `b` on `plane`: its NIC port and the path from it to the GPU.
    fn side_into(&mut self, b: Gpu, plane: u32) -> Side {
        let net = self.net;
        let sb = &net.servers[b.server];
        let gb = sb.gpus[b.local as usize];
        let mut side = Side::default();
        if let Some((_, dp)) = net.nic_port(b.server, sb.nic_of_gpu[b.local as usize], plane) {
            let dnic = net.fabric.port(dp).node;
            side.port = Some(dp);
            side.latency = net.pcie_path_memo(&mut self.pcie, dnic, gb, b.server, &mut side.path);
        }
        side
    }

    /// A transfer between two GPUs of one server, counted as `StepBuilder::send` lays it out.
    fn count_inside(&mut self, a: Gpu, b: Gpu) -> Result<(), CollectiveError> {
        self.send(a, b, super::Relay::Direct, STEP_CHUNK)
    }

    /// Counts the flows that crossed each side's path.
    fn add_side(&mut self, sides: &[Side]) -> Result<(), CollectiveError> {
        let Some(c) = self.phases[0].counted.as_mut() else {
            return Ok(());
        };
        for side in sides.iter().filter(|s| s.flows > 0) {
            for &r in &side.path {
                let x = &mut c.load[r as usize];
                *x = u32::try_from(u64::from(*x) + side.flows)
                    .map_err(|_| crate::error::SimError::TooLarge("flows on a link"))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AllToAll, CollectiveAlgorithm, Relay, StepBuilder};
    use crate::collective::shape_of;
    use crate::fabric_net::{FabricNet, NetConfig, TreeRouter};
    use crate::routing::{RoutingConfig, RoutingKind};
    use railyard_catalog::Catalog;
    use railyard_fabric::LinkKind;
    use railyard_spec::{presets, ClusterSpec, Overrides};

    /// `count_direct` counts what laying out every transfer through `StepBuilder::send` counts:
    /// the same load on every resource, flow sizes, latency, flows and route failures, on a
    /// fabric with fabric cables and a server's cable down, for each routing.
    #[test]
    fn counting_a_direct_alltoall_by_sides_counts_as_sending_each_transfer() {
        for preset in ["seed-leaf-spine", "dgx-h100-superpod"] {
            let mut raw = presets::raw(preset).unwrap();
            Overrides {
                servers: Some(12),
                ..Default::default()
            }
            .apply(&mut raw)
            .unwrap();
            let spec = ClusterSpec::from_raw(&raw, preset).unwrap();
            let f = railyard_fabric::build(&spec, &Catalog::builtin()).unwrap();
            let pick = |kind: LinkKind, n: usize| {
                f.network_links()
                    .filter(|(_, l)| l.kind == kind)
                    .map(|(id, _)| id)
                    .take(n)
                    .collect::<Vec<_>>()
            };
            let mut failed = pick(LinkKind::LeafSpine, 3);
            let fabric_only = failed.clone();
            failed.extend(pick(LinkKind::ServerLeaf, 1));
            for down in [Vec::new(), fabric_only, failed] {
                let config = NetConfig {
                    failed: down.clone(),
                    ..NetConfig::default()
                };
                let net = FabricNet::new(&f, &Catalog::builtin(), &config).unwrap();
                for kind in [RoutingKind::Ecmp, RoutingKind::DModK, RoutingKind::Adaptive] {
                    let r = TreeRouter::new(kind, RoutingConfig::default());
                    let shape = shape_of(&net).unwrap();
                    let mut by_sides = StepBuilder::new(&net, &r, shape).unwrap();
                    by_sides.count_on().unwrap();
                    AllToAll {
                        relay: Relay::Direct,
                    }
                    .step(&mut by_sides)
                    .unwrap();
                    let mut by_sends = StepBuilder::new(&net, &r, shape).unwrap();
                    by_sends.count_on().unwrap();
                    for i in 0..shape.ranks {
                        for j in (0..shape.ranks).filter(|&j| j != i) {
                            let (a, b) =
                                (by_sends.comm.gpu_of_rank(i), by_sends.comm.gpu_of_rank(j));
                            by_sends
                                .send(a, b, Relay::Direct, super::STEP_CHUNK)
                                .unwrap();
                        }
                    }
                    let what = format!("{preset} {kind:?} {} down", down.len());
                    let (x, y) = (&by_sides.phases[0], &by_sends.phases[0]);
                    let (cx, cy) = (x.counted.as_ref().unwrap(), y.counted.as_ref().unwrap());
                    assert!(x.represented > 0, "{what}");
                    assert_eq!(cx.load, cy.load, "{what}");
                    assert_eq!(
                        (cx.min_bytes, cx.max_bytes, x.latency, x.represented),
                        (cy.min_bytes, cy.max_bytes, y.latency, y.represented),
                        "{what}"
                    );
                    assert_eq!(by_sides.phases.len(), by_sends.phases.len(), "{what}");
                    assert_eq!(by_sides.conn, by_sends.conn, "{what}");
                    assert_eq!(by_sides.failure_count, by_sends.failure_count, "{what}");
                    assert_eq!(by_sides.failures, by_sends.failures, "{what}");
                }
            }
        }
    }
}
