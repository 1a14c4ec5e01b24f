//! [`RoutedNet`]: a network and its tree router, and two route sources compared.

use crate::error::SimError;
use crate::net::routing::{RoutingConfig, RoutingKind};
use railyard_catalog::Catalog;
use railyard_fabric::{Fabric, PortId};

use crate::fabric_net::FabricNet;
use crate::fabric_net::FabricRouting;
use crate::fabric_net::NetConfig;
use crate::fabric_net::TreeRouter;
/// What a simulation on a designed fabric starts from: the fabric's network and a tree router over
/// one routing policy.
pub struct RoutedNet<'f> {
    pub net: FabricNet<'f>,
    pub router: TreeRouter,
}

impl<'f> RoutedNet<'f> {
    /// The network of `fabric` built as `config` says, routed by policy `kind` with `routing`'s knobs;
    /// a policy the hardware does not run is refused (`capability::check_routing`).
    pub fn new(
        fabric: &'f Fabric,
        catalog: &Catalog,
        config: &NetConfig,
        kind: RoutingKind,
        routing: RoutingConfig,
    ) -> Result<RoutedNet<'f>, SimError> {
        crate::net::capability::check_routing(fabric, catalog, kind)?;
        Ok(RoutedNet {
            net: FabricNet::new(fabric, catalog, config)?,
            router: TreeRouter::new(kind, routing),
        })
    }
}

impl<'f> RoutedNet<'f> {
    /// [`RoutedNet::new`] over the fabric's NVLink domains as NCCL sees them
    /// ([`FabricNet::over_nvlink_domains`]): a rack-scale system's rack is one server of the
    /// network (`train` and `compare` on GB200/GB300 NVL72), any other server its own.
    pub fn over_nvlink_domains(
        fabric: &'f Fabric,
        catalog: &Catalog,
        config: &NetConfig,
        kind: RoutingKind,
        routing: RoutingConfig,
    ) -> Result<RoutedNet<'f>, SimError> {
        Ok(RoutedNet {
            net: FabricNet::over_nvlink_domains(fabric, catalog, config)?,
            router: TreeRouter::new(kind, routing),
        })
    }
}

/// How many connections two route sources send over exactly the same links (every sub-flow's path
/// compared in order), and the first few that differ, so a simulation over OpenSM's tables can say
/// where it departs from railyard's own routing.
pub fn compare_routes(
    net: &FabricNet<'_>,
    a: &dyn FabricRouting,
    b: &dyn FabricRouting,
    pairs: &[(PortId, PortId)],
) -> RouteComparison {
    let mut cmp = RouteComparison::default();
    for &(src, dst) in pairs {
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        let same = match (
            a.route(net, src, dst, 0, &mut pa),
            b.route(net, src, dst, 0, &mut pb),
        ) {
            (Ok(()), Ok(())) => pa == pb,
            _ => false,
        };
        if same {
            cmp.same += 1;
        } else {
            cmp.differ += 1;
            if cmp.examples.len() < 5 {
                let f = net.fabric;
                cmp.examples.push(format!(
                    "{}/{} -> {}/{}",
                    f.port_device(src),
                    f.port_label(src),
                    f.port_device(dst),
                    f.port_label(dst)
                ));
            }
        }
    }
    cmp
}

/// The result of [`compare_routes`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RouteComparison {
    pub same: usize,
    pub differ: usize,
    /// Up to five connections that differ, `device/port -> device/port`.
    pub examples: Vec<String>,
}
