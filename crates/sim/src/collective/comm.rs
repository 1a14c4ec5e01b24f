//! GPUs, communicators ([`Comm`]) and the job's shape.

use crate::collective::error::CollectiveError;
use crate::collective::JobShape;
use crate::nccl::HopKind;
use crate::net::fabric_net::FabricNet;
/// A GPU by its server and its index inside the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gpu {
    /// The server's index in `Fabric::servers`.
    pub server: usize,
    /// The GPU's index inside its server.
    pub local: u32,
}

impl Gpu {
    pub fn new(server: usize, local: u32) -> Gpu {
        Gpu { server, local }
    }

    /// The GPU of `rank` when ranks fill servers of `gpus_per_server` GPUs in order (rank r on GPU
    /// r mod g of server r / g).
    pub fn of_rank(rank: u32, gpus_per_server: u32) -> Gpu {
        let g = gpus_per_server.max(1);
        Gpu::new((rank / g) as usize, rank % g)
    }
}

/// The GPUs one NCCL communicator spans: a list of servers and the same local GPUs on each (a
/// data-parallel group takes one GPU per server, a tensor-parallel group several GPUs of one
/// server, the whole job every GPU of every server). Node `i` of the communicator is server
/// `servers[i]`; its rank `r` is local GPU `locals[r % locals.len()]` of node `r / locals.len()`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Comm {
    pub servers: Vec<usize>,
    pub locals: Vec<u32>,
}

impl Comm {
    /// Every GPU of every server of `net` a job runs on (all but the drained ones,
    /// `NetConfig::drained`).
    pub fn whole(net: &FabricNet<'_>) -> Comm {
        let servers = net.active_servers().to_vec();
        let g = servers
            .first()
            .and_then(|&s| net.servers.get(s))
            .map_or(0, |s| s.gpus.len() as u32);
        Comm {
            servers,
            locals: (0..g).collect(),
        }
    }

    /// The communicator of `gpus` when they take the same local GPUs on every server they use
    /// (servers and local GPUs in the order they first appear), else `None`.
    pub fn of_gpus(gpus: &[Gpu]) -> Option<Comm> {
        let mut servers: Vec<usize> = Vec::new();
        let mut locals: Vec<u32> = Vec::new();
        for g in gpus {
            if !servers.contains(&g.server) {
                servers.push(g.server);
            }
            if !locals.contains(&g.local) {
                locals.push(g.local);
            }
        }
        let product = servers.len() * locals.len() == gpus.len()
            && servers
                .iter()
                .all(|&s| locals.iter().all(|&l| gpus.contains(&Gpu::new(s, l))));
        (product && !servers.is_empty()).then_some(Comm { servers, locals })
    }

    pub fn ranks(&self) -> u32 {
        (self.servers.len() * self.locals.len()) as u32
    }

    /// The GPU of rank `r`.
    pub fn gpu_of_rank(&self, r: u32) -> Gpu {
        let g = self.locals.len().max(1);
        Gpu::new(self.servers[r as usize / g], self.locals[r as usize % g])
    }

    /// The NICs (rails) NCCL uses for it: those of its GPUs, in rail order.
    pub fn rails(&self, net: &FabricNet<'_>) -> Vec<u32> {
        let Some(s) = self.servers.first().and_then(|&s| net.servers.get(s)) else {
            return Vec::new();
        };
        if self.locals.len() == s.gpus.len() {
            return (0..s.nics.len() as u32).collect();
        }
        let mut rails: Vec<u32> = self
            .locals
            .iter()
            .filter_map(|&l| s.nic_of_gpu.get(l as usize).copied())
            .collect();
        rails.sort_unstable();
        rails.dedup();
        rails
    }
}

/// The shape of the job on `net`: every GPU a rank.
pub fn shape_of(net: &FabricNet<'_>) -> Result<JobShape, CollectiveError> {
    shape_of_comm(net, &Comm::whole(net))
}

/// The shape of communicator `comm` on `net`: its servers are its nodes, its local GPUs the GPUs
/// per node, the NICs of those GPUs its NICs per node.
pub fn shape_of_comm(net: &FabricNet<'_>, comm: &Comm) -> Result<JobShape, CollectiveError> {
    let nodes = comm.servers.len() as u32;
    let first = comm
        .servers
        .first()
        .and_then(|&s| net.servers.get(s))
        .ok_or(CollectiveError::Config {
            what: "servers",
            message: "the fabric has no servers".into(),
        })?;
    let gpus = comm.locals.len() as u32;
    if gpus == 0
        || comm.servers.iter().any(|&s| {
            net.servers
                .get(s)
                .is_none_or(|srv| comm.locals.iter().any(|&l| l as usize >= srv.gpus.len()))
        })
        || net.servers.iter().any(|s| s.gpus.len() != first.gpus.len())
    {
        return Err(CollectiveError::Config {
            what: "gpus-per-server",
            message: "every server needs the same number of GPUs, at least one".into(),
        });
    }
    let nics = if comm.locals.len() == first.gpus.len() {
        first.nics.len() as u32
    } else {
        comm.rails(net).len() as u32
    };
    if nodes > 1 && nics == 0 {
        return Err(CollectiveError::Config {
            what: "nics-per-server",
            message: "servers without compute NICs cannot talk to each other".into(),
        });
    }
    let mut scratch = Vec::new();
    let intra = if gpus > 1
        && net
            .nvlink_path(
                first.gpus[comm.locals[0] as usize],
                first.gpus[comm.locals[1] as usize],
                &mut scratch,
            )
            .is_some()
    {
        HopKind::Nvlink
    } else {
        HopKind::Pcie
    };
    // On an xGMI mesh RCCL runs its table's rings (`crate::net::xgmi`): one server's whole mesh.
    let mut channels = nics.max(2);
    if let Some(mesh) = net.xgmi_mesh() {
        if let Some(message) = mesh.unmodelled(&net.fabric.meta.gpu_model, nodes, gpus) {
            // Across servers the flag at fault is --servers; a part of one server's mesh is the
            // communicator's own shape.
            return Err(CollectiveError::Config {
                what: if nodes > 1 {
                    "servers"
                } else {
                    "scale-up domain"
                },
                message,
            });
        }
        channels = crate::net::xgmi::MESH_CHANNELS;
    }
    Ok(JobShape {
        ranks: nodes * gpus,
        nodes,
        gpus_per_node: gpus,
        nics_per_node: nics,
        channels,
        intra,
    })
}
