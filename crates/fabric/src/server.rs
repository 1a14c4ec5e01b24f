//! Server internals: GPUs and NICs on PCIe switches under the CPU root complex, GPUs on an NVLink domain.

use crate::graph::{
    Fabric, Link, LinkId, LinkKind, Medium, Node, NodeId, NodeKind, NodeSpec, Port, PortId,
    PortState, Server, Unused,
};
use crate::hardware::Resolved;
use railyard_catalog::pcie_gbps;

/// Every server of a spec is alike: one is built with [`add_server`] and stamped out for the rest, which
/// gives the same nodes, ports and links as building each one, in a fraction of the time.
pub(crate) struct ServerTemplate {
    /// Nodes with their local names (`gpu1`, `hca3`) and ids relative to the server.
    nodes: Vec<Node>,
    ports: Vec<Port>,
    links: Vec<Link>,
    /// Compute NIC network ports, relative: `ports[nic][plane]`.
    nic_ports: Vec<Vec<PortId>>,
}

impl ServerTemplate {
    pub fn new(f: &Fabric, r: &Resolved) -> ServerTemplate {
        let mut scratch = Fabric::new(f.meta.clone());
        let ports = add_server(&mut scratch, r, 0, String::new(), None);
        let mut nodes = scratch.nodes;
        for n in &mut nodes {
            // Built under an empty server name: `/gpu1` -> `gpu1`.
            n.name.remove(0);
        }
        ServerTemplate {
            nodes,
            ports: scratch.ports,
            links: scratch.links,
            nic_ports: ports.ports,
        }
    }

    /// Nodes, ports and links of one server.
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.nodes.len() as u64,
            self.ports.len() as u64,
            self.links.len() as u64,
        )
    }

    /// Makes room in `f` for `servers` more servers.
    pub fn reserve(&self, f: &mut Fabric, servers: usize) {
        f.nodes.reserve(self.nodes.len() * servers);
        f.ports.reserve(self.ports.len() * servers);
        f.links.reserve(self.links.len() * servers);
        f.servers.reserve(servers);
    }

    /// Appends server `index` named `name` and returns its compute NIC ports.
    pub fn stamp(&self, f: &mut Fabric, index: u32, name: String, su: Option<u32>) -> ServerPorts {
        let node_off = f.nodes.len() as u32;
        let port_off = f.ports.len() as u32;
        let link_off = f.links.len() as u32;
        f.nodes.extend(self.nodes.iter().map(|n| {
            let mut full = String::with_capacity(name.len() + 1 + n.name.len());
            full.push_str(&name);
            full.push('/');
            full.push_str(&n.name);
            Node {
                kind: n.kind,
                name: full,
                model: n.model.clone(),
                server: Some(index),
                plane: n.plane,
                first_port: n.first_port + port_off,
                num_ports: n.num_ports,
            }
        }));
        f.ports.extend(self.ports.iter().map(|p| Port {
            node: NodeId(p.node.0 + node_off),
            state: match p.state {
                PortState::Linked(l) => PortState::Linked(LinkId(l.0 + link_off)),
                unused => unused,
            },
            ..*p
        }));
        f.links.extend(self.links.iter().map(|l| Link {
            a: PortId(l.a.0 + port_off),
            b: PortId(l.b.0 + port_off),
            medium: l.medium.clone(),
            ..*l
        }));
        f.servers.push(Server {
            name,
            su,
            first_node: node_off,
            num_nodes: self.nodes.len() as u32,
        });
        ServerPorts {
            ports: self
                .nic_ports
                .iter()
                .map(|planes| planes.iter().map(|p| PortId(p.0 + port_off)).collect())
                .collect(),
        }
    }
}

/// The network ports of one server's compute NICs: `ports[nic][plane]`.
pub(crate) struct ServerPorts {
    pub ports: Vec<Vec<PortId>>,
}

/// Adds one server named `name` and returns its compute NIC ports.
pub(crate) fn add_server(
    f: &mut Fabric,
    r: &Resolved,
    index: u32,
    name: String,
    su: Option<u32>,
) -> ServerPorts {
    let first_node = f.nodes.len() as u32;
    let b = Builder::new(r, index, &name);
    let d = b.devices(f);
    b.attach_pcie(f, &d);
    let ports = b.network_ports(f, &d.nics);
    f.servers.push(Server {
        name,
        su,
        first_node,
        num_nodes: f.nodes.len() as u32 - first_node,
    });
    ServerPorts { ports }
}

/// One server being added: its name and index, and the PCIe rates of its devices.
struct Builder<'a> {
    r: &'a Resolved<'a>,
    index: u32,
    name: &'a str,
    gpu_pcie: f64,
    nic_pcie: f64,
    /// PCIe generation and rate of the x16 links up to the CPU root complex.
    uplink_gen: u32,
    uplink: f64,
}

/// A server's devices, in node order, and those attached straight to the CPU root complex.
struct Devices {
    cpu: NodeId,
    gpus: Vec<NodeId>,
    nics: Vec<NodeId>,
    storage: Vec<NodeId>,
    direct_gpus: Vec<u32>,
    direct_nics: Vec<u32>,
    direct_storage: Vec<u32>,
}

impl<'a> Builder<'a> {
    fn new(r: &'a Resolved<'a>, index: u32, name: &'a str) -> Builder<'a> {
        let (gpu, nic) = (r.gpu, r.nic);
        let uplink_gen = gpu.pcie_gen.max(nic.pcie_gen);
        Builder {
            r,
            index,
            name,
            gpu_pcie: pcie_gbps(gpu.pcie_gen, gpu.pcie_lanes),
            nic_pcie: pcie_gbps(nic.pcie_gen, nic.pcie_lanes),
            uplink_gen,
            uplink: pcie_gbps(uplink_gen, 16),
        }
    }

    fn node(&self, kind: NodeKind, local: &str, model: &str) -> NodeSpec {
        NodeSpec {
            kind,
            name: format!("{}/{local}", self.name),
            model: model.into(),
            server: Some(self.index),
            plane: 0,
        }
    }

    /// Adds the CPU root complex, the NVLink domain with its GPUs, the compute NICs (their ports
    /// caged per server) and the storage NICs.
    fn devices(&self, f: &mut Fabric) -> Devices {
        let s = &self.r.spec.servers;
        let direct_gpus: Vec<u32> = (0..s.gpus_per_server)
            .filter(|g| !s.pcie.iter().any(|p| p.gpus.contains(g)))
            .collect();
        let direct_nics: Vec<u32> = (0..s.compute_nics)
            .filter(|n| !s.pcie.iter().any(|p| p.nics.contains(n)))
            .collect();
        let direct_storage: Vec<u32> = (0..s.storage_nics)
            .filter(|n| !s.pcie.iter().any(|p| p.storage_nics.contains(n)))
            .collect();
        let cpu_ports = s.pcie.len() + direct_gpus.len() + direct_nics.len() + direct_storage.len();
        let cpu = f.add_node(
            self.node(NodeKind::Cpu, "cpu", ""),
            cpu_ports as u32,
            self.uplink,
            16,
            1,
        );

        let gpus = self.gpus(f);
        let nics = self.nics(f);
        let storage = self.storage_nics(f);
        Devices {
            cpu,
            gpus,
            nics,
            storage,
            direct_gpus,
            direct_nics,
            direct_storage,
        }
    }

    /// The NVLink domain and the GPUs on it, each with its NVLink link.
    fn gpus(&self, f: &mut Fabric) -> Vec<NodeId> {
        let s = &self.r.spec.servers;
        let gpu = self.r.gpu;
        let nvlink_gbps = gpu.nvlink_gbs() * 8.0;
        let nvl = f.add_node(
            self.node(NodeKind::NvlinkDomain, "nvlink", ""),
            s.gpus_per_server,
            nvlink_gbps,
            gpu.nvlink_links,
            1,
        );
        let gpus: Vec<NodeId> = (0..s.gpus_per_server)
            .map(|g| {
                let id = f.add_node(
                    self.node(NodeKind::Gpu, &format!("gpu{}", g + 1), &gpu.id),
                    2,
                    self.gpu_pcie,
                    gpu.pcie_lanes,
                    1,
                );
                let (p, q) = (f.nth_port(id, 1), f.nth_port(nvl, g));
                f.connect(
                    p,
                    q,
                    LinkKind::Nvlink,
                    nvlink_gbps,
                    gpu.nvlink_links,
                    Medium::Nvlink,
                );
                id
            })
            .collect();
        gpus
    }

    /// The compute NICs, their network ports caged per server.
    fn nics(&self, f: &mut Fabric) -> Vec<NodeId> {
        let s = &self.r.spec.servers;
        let nic = self.r.nic;
        // NIC ports 1..=n are network ports (numbered as ibnetdiscover numbers them); the last port is PCIe.
        let per_cage = self.r.host_cage();
        let nics: Vec<NodeId> = (0..s.compute_nics)
            .map(|k| {
                f.add_node(
                    self.node(NodeKind::Nic { rail: k }, &format!("hca{}", k + 1), &nic.id),
                    nic.ports + 1,
                    f64::from(nic.port_gbps),
                    self.r.lanes,
                    1,
                )
            })
            .collect();
        // Cages pair NIC k with NIC k+1 when the server has twin-port cages (DGX H100): number them per server.
        for (k, &id) in nics.iter().enumerate() {
            let first = f.node(id).first_port;
            for (j, p) in (first..first + nic.ports).map(PortId).enumerate() {
                f.ports[p.0 as usize].cage =
                    ((k * nic.ports as usize + j) / per_cage as usize) as u32 + 1;
            }
        }
        nics
    }

    /// The storage NICs, their network ports unused (the storage fabric is a plan of its own).
    fn storage_nics(&self, f: &mut Fabric) -> Vec<NodeId> {
        let s = &self.r.spec.servers;
        let nic = self.r.nic;
        let storage: Vec<NodeId> = (0..s.storage_nics)
            .map(|k| {
                let id = f.add_node(
                    self.node(NodeKind::StorageNic, &format!("stor{}", k + 1), &nic.id),
                    nic.ports + 1,
                    f64::from(nic.port_gbps),
                    self.r.lanes,
                    1,
                );
                for p in 0..nic.ports {
                    let port = f.nth_port(id, p);
                    f.mark_unused(port, Unused::StorageNotPlanned);
                }
                id
            })
            .collect();
        storage
    }

    /// Joins the devices to the CPU root complex: through the spec's PCIe switches, the rest
    /// straight to the CPU.
    fn attach_pcie(&self, f: &mut Fabric, d: &Devices) {
        let s = &self.r.spec.servers;
        let (gpu, nic) = (self.r.gpu, self.r.nic);
        let (gpu_pcie, nic_pcie, uplink) = (self.gpu_pcie, self.nic_pcie, self.uplink);
        let pcie_port = |f: &Fabric, id: NodeId| f.nth_port(id, f.node(id).num_ports - 1);
        let gpu_port = |f: &Fabric, id: NodeId| f.nth_port(id, 0);
        let mut cpu_next = 0;
        for (i, sw) in s.pcie.iter().enumerate() {
            let ports = sw.gpus.len() + sw.nics.len() + sw.storage_nics.len() + 1;
            let id = f.add_node(
                self.node(NodeKind::PcieSwitch, &format!("pcie{}", i + 1), ""),
                ports as u32,
                uplink,
                16,
                1,
            );
            let mut next = 0;
            let mut attach = |f: &mut Fabric, dev: PortId, gbps: f64, lanes: u32, gen: u32| {
                let p = f.nth_port(id, next);
                next += 1;
                f.connect(dev, p, LinkKind::Pcie, gbps, lanes, Medium::Pcie { gen });
            };
            for &g in &sw.gpus {
                let p = gpu_port(f, d.gpus[g as usize]);
                attach(f, p, gpu_pcie, gpu.pcie_lanes, gpu.pcie_gen);
            }
            for &k in &sw.nics {
                let p = pcie_port(f, d.nics[k as usize]);
                attach(f, p, nic_pcie, nic.pcie_lanes, nic.pcie_gen);
            }
            for &k in &sw.storage_nics {
                let p = pcie_port(f, d.storage[k as usize]);
                attach(f, p, nic_pcie, nic.pcie_lanes, nic.pcie_gen);
            }
            let up = f.nth_port(id, next);
            let c = f.nth_port(d.cpu, cpu_next);
            cpu_next += 1;
            f.connect(
                up,
                c,
                LinkKind::PcieUplink,
                uplink,
                16,
                Medium::Pcie {
                    gen: self.uplink_gen,
                },
            );
        }
        let mut direct = |f: &mut Fabric, dev: PortId, gbps: f64, lanes: u32, gen: u32| {
            let c = f.nth_port(d.cpu, cpu_next);
            cpu_next += 1;
            f.connect(dev, c, LinkKind::Pcie, gbps, lanes, Medium::Pcie { gen });
        };
        for &g in &d.direct_gpus {
            let p = gpu_port(f, d.gpus[g as usize]);
            direct(f, p, gpu_pcie, gpu.pcie_lanes, gpu.pcie_gen);
        }
        for &k in &d.direct_nics {
            let p = pcie_port(f, d.nics[k as usize]);
            direct(f, p, nic_pcie, nic.pcie_lanes, nic.pcie_gen);
        }
        for &k in &d.direct_storage {
            let p = pcie_port(f, d.storage[k as usize]);
            direct(f, p, nic_pcie, nic.pcie_lanes, nic.pcie_gen);
        }
    }

    /// Network ports: port p of each NIC serves plane p; ports beyond the planes stay explicitly
    /// unused. `ports[nic][plane]`.
    fn network_ports(&self, f: &mut Fabric, nics: &[NodeId]) -> Vec<Vec<PortId>> {
        let planes = self.r.spec.fabric.planes;
        let mut ports = Vec::with_capacity(nics.len());
        for &id in nics {
            let mut per_plane = Vec::with_capacity(planes as usize);
            for p in 0..self.r.nic.ports {
                let port = f.nth_port(id, p);
                if p < planes {
                    per_plane.push(port);
                } else {
                    f.mark_unused(port, Unused::ExtraNicPort);
                }
            }
            ports.push(per_plane);
        }
        ports
    }
}
