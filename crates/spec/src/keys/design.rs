//! The design keys: every setting a front end may change in a design, in the order the CLI's help
//! and the web form show them.

use super::{
    DesignKey, Fronts, Key, Kind, PartKind, Value, COMPUTE_NICS, GPUS_PER_SERVER, MAX_RACK_KW,
    OVERSUBSCRIPTION, SERVERS, SU_SIZE,
};
use crate::design::{SiteCooling, Topology};
use railyard_catalog::Tech;

fn tech_names() -> Vec<&'static str> {
    Tech::ALL.iter().map(|t| t.as_str()).collect()
}

fn topology_names() -> Vec<&'static str> {
    Topology::ALL.iter().map(|t| t.as_str()).collect()
}

/// The number a value holds; design keys' setters get only values of their own kind.
fn count(v: &Value) -> Option<u32> {
    match v {
        Value::Count(n) => Some(*n),
        _ => None,
    }
}

/// The design keys: every key a flag, `compare --vary` / `DESIGN:KEY=VALUE`, the JSON API and the
/// web form can set, in the order `--help` and the form list them.
pub static DESIGN_KEYS: [DesignKey; 16] = [
    Key {
        name: "servers",
        json: "servers",
        value_name: "N",
        kind: Kind::Count(SERVERS),
        help: "Number of GPU servers",
        label: "servers",
        fields: &["servers.count"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| o.servers = count(&v),
        read: |s| Some(Value::Count(s.servers.count)),
    },
    Key {
        name: "gpu",
        json: "gpu",
        value_name: "MODEL",
        kind: Kind::Part {
            catalog: PartKind::Gpu,
            auto: false,
        },
        help: "GPU model",
        label: "GPU",
        fields: &["servers.gpu"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| o.gpu = Some(v.to_string()),
        read: |s| Some(Value::Text(s.servers.gpu.clone())),
    },
    Key {
        name: "gpus-per-server",
        json: "gpus_per_server",
        value_name: "N",
        kind: Kind::Count(GPUS_PER_SERVER),
        help: "GPUs per server",
        label: "GPUs per server",
        fields: &["servers.gpus_per_server", "servers.pcie_switches"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| o.gpus_per_server = count(&v),
        read: |s| Some(Value::Count(s.servers.gpus_per_server)),
    },
    Key {
        name: "nics-per-server",
        json: "nics_per_server",
        value_name: "N",
        kind: Kind::Count(COMPUTE_NICS),
        help: "Compute NICs per server (sets the NIC:GPU ratio)",
        label: "NICs per server",
        fields: &["servers.compute_nics", "servers.nic"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| o.nics_per_server = count(&v),
        read: |s| Some(Value::Count(s.servers.compute_nics)),
    },
    Key {
        name: "nic-ratio",
        json: "nic_ratio",
        value_name: "NICS:GPUS",
        kind: Kind::Ratio,
        help: "NIC:GPU ratio (sets --nics-per-server from the GPUs per server)",
        label: "NIC:GPU ratio",
        fields: &["servers.compute_nics"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| {
            if let Value::Ratio(nics, gpus) = v {
                o.nic_ratio = Some((nics, gpus));
            }
        },
        read: |s| {
            let (nics, gpus) = (s.servers.compute_nics, s.servers.gpus_per_server);
            Some(if nics >= gpus {
                Value::Ratio(nics / gpus, 1)
            } else {
                Value::Ratio(1, gpus / nics)
            })
        },
    },
    Key {
        name: "nic",
        json: "nic",
        value_name: "MODEL",
        kind: Kind::Part {
            catalog: PartKind::Nic,
            auto: true,
        },
        help: "NIC model",
        label: "NIC",
        fields: &["servers.nic"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| o.nic = Some(v.to_string()),
        read: |s| {
            Some(Value::Text(
                s.servers.nic.clone().unwrap_or_else(|| "auto".to_string()),
            ))
        },
    },
    Key {
        name: "tech",
        json: "tech",
        value_name: "T",
        kind: Kind::Choice {
            names: tech_names,
            aliases: &[],
            files: &[],
        },
        help: "Link technology; picks a matching NIC, switch and cables unless those are given too",
        label: "technology",
        fields: &["fabric.tech", "fabric.port_gbps"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| {
            if let Value::Choice(name) = v {
                o.tech = name.parse().ok();
            }
        },
        read: |s| Some(Value::Choice(s.fabric.tech.as_str())),
    },
    Key {
        name: "topology",
        json: "topology",
        value_name: "T",
        kind: Kind::Choice {
            names: topology_names,
            aliases: &[],
            files: &[],
        },
        help: "Fabric topology",
        label: "topology",
        fields: &["fabric.topology", "fabric.isl_links"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| {
            if let Value::Choice(name) = v {
                o.topology = name.parse().ok();
            }
        },
        read: |s| Some(Value::Choice(s.fabric.topology.as_str())),
    },
    Key {
        name: "switch",
        json: "switch",
        value_name: "MODEL",
        kind: Kind::Part {
            catalog: PartKind::Switch,
            auto: true,
        },
        help: "Switch model",
        label: "switch",
        fields: &["fabric.switch"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| o.switch = Some(v.to_string()),
        read: |s| {
            Some(Value::Text(
                s.fabric
                    .switch
                    .clone()
                    .unwrap_or_else(|| "auto".to_string()),
            ))
        },
    },
    Key {
        name: "oversubscription",
        json: "oversubscription",
        value_name: "R",
        kind: Kind::Number {
            bounds: OVERSUBSCRIPTION,
            step: 0.5,
        },
        help: "Leaf down:up ratio, 1 = non-blocking",
        label: "oversubscription",
        fields: &["fabric.oversubscription"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| {
            if let Value::Number(x) = v {
                o.oversubscription = Some(x);
            }
        },
        read: |s| Some(Value::Number(s.fabric.oversubscription)),
    },
    Key {
        name: "gpudirect",
        json: "gpudirect",
        value_name: "on|off",
        kind: Kind::Switch,
        help: "GPUDirect RDMA: NICs read and write GPU memory directly",
        label: "GPUDirect RDMA",
        fields: &["servers.gpudirect"],
        fronts: Fronts::EVERYWHERE,
        set: |o, v| {
            if let Value::Switch(b) = v {
                o.gpudirect = Some(b);
            }
        },
        read: |s| Some(Value::Switch(s.servers.gpudirect)),
    },
    Key {
        name: "su-size",
        json: "su_size",
        value_name: "N",
        kind: Kind::Count(SU_SIZE),
        help: "Servers per scalable unit (rail-optimized); at most a leaf's down-ports",
        label: "SU size",
        fields: &["fabric.su_size"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| o.su_size = count(&v),
        read: |s| s.fabric.su_size.map(Value::Count),
    },
    Key {
        name: "storage",
        json: "storage",
        value_name: "auto|none",
        kind: Kind::Choice {
            names: storage_choices,
            aliases: &[],
            files: &[],
        },
        help: "The storage fabric on the servers' storage NICs, planned as the DGX SuperPOD reference architectures plan it; none; or compute: storage traffic (checkpoints, data loading) on the compute fabric, through the compute NICs, and no storage fabric",
        label: "Storage fabric",
        fields: &["storage.fabric"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| {
            if let Value::Choice(name) = v {
                o.storage = Some(name == "auto");
                o.storage_on_compute = name == "compute";
            }
        },
        read: |s| {
            Some(Value::Choice(match (s.storage.on_compute, s.storage.wanted) {
                (true, _) => "compute",
                (false, true) => "auto",
                (false, false) => "none",
            }))
        },
    },
    Key {
        name: "management",
        json: "management",
        value_name: "auto|none",
        kind: Kind::Choice {
            names: auto_or_none,
            aliases: &[],
            files: &[],
        },
        help: "The in-band and out-of-band management networks, planned as the DGX SuperPOD reference architectures plan them, or none",
        label: "Management networks",
        fields: &["management.in_band", "management.out_of_band"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| {
            if let Value::Choice(name) = v {
                o.management = Some(name == "auto");
            }
        },
        read: |s| {
            let on = s.management.in_band || s.management.out_of_band;
            Some(Value::Choice(if on { "auto" } else { "none" }))
        },
    },
    Key {
        name: "max-rack-kw",
        json: "max_rack_kw",
        value_name: "KW",
        kind: Kind::Number {
            bounds: MAX_RACK_KW,
            step: 5.0,
        },
        help: "The most power one server rack may draw, kW: fewer servers stand in a rack where theirs would draw more",
        label: "kW per rack",
        fields: &["layout.max_rack_kw"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| {
            if let Value::Number(x) = v {
                o.max_rack_kw = Some(x);
            }
        },
        read: |s| s.layout.max_rack_kw.map(Value::Number),
    },
    Key {
        name: "cooling",
        json: "cooling",
        value_name: "air|liquid",
        kind: Kind::Choice {
            names: cooling_names,
            aliases: &[],
            files: &[],
        },
        help: "The racks' cooling: air refuses servers that need a liquid loop (GB200 NVL72, MI355X)",
        label: "cooling",
        fields: &["layout.cooling"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| {
            if let Value::Choice(name) = v {
                o.cooling = name.parse().ok();
            }
        },
        read: |s| s.layout.cooling.map(|c| Value::Choice(c.as_str())),
    },
];

fn cooling_names() -> Vec<&'static str> {
    SiteCooling::ALL.iter().map(|c| c.as_str()).collect()
}

/// The choices of the keys that plan a network or leave it out.
fn auto_or_none() -> Vec<&'static str> {
    vec!["auto", "none"]
}

fn storage_choices() -> Vec<&'static str> {
    vec!["auto", "none", "compute"]
}
