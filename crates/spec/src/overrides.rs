//! Command-line and web overrides of a spec: design keys applied to the raw spec before it is
//! validated, so an override is checked exactly as the same value in a spec file.

use crate::design::{Reset, SiteCooling, Topology};
use crate::raw::{AutoOr, AutoOrNone, RawServers, RawSpec, StorageChoice};
use crate::SpecError;
use railyard_catalog::Tech;

/// Design keys that override a preset or spec file (set from the design-key table, `keys::DESIGN_KEYS`, by every front
/// end). `None` leaves the value alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub servers: Option<u32>,
    pub gpus_per_server: Option<u32>,
    pub nics_per_server: Option<u32>,
    pub gpu: Option<String>,
    pub tech: Option<Tech>,
    pub topology: Option<Topology>,
    pub switch: Option<String>,
    pub nic: Option<String>,
    pub oversubscription: Option<f64>,
    pub gpudirect: Option<bool>,
    pub su_size: Option<u32>,
    /// Most kW per server rack (`layout.max_rack_kw`).
    pub max_rack_kw: Option<f64>,
    /// The racks' cooling (`layout.cooling`).
    pub cooling: Option<SiteCooling>,
    /// NIC:GPU ratio as (NICs, GPUs), e.g. (1, 4); sets the compute NICs from the GPUs per server.
    pub nic_ratio: Option<(u32, u32)>,
    /// `Some(false)`: leave the storage fabric out (`--storage none`); `Some(true)`: plan it.
    pub storage: Option<bool>,
    /// `--storage compute`: no storage fabric; storage traffic on the compute fabric (wins over
    /// `storage`).
    pub storage_on_compute: bool,
    /// `Some(false)`: leave both management networks out (`--management none`); `Some(true)`:
    /// plan both.
    pub management: Option<bool>,
}

/// The NIC:GPU ratios that give a whole number of NICs for `gpus` GPUs per server, for messages:
/// `1:1, 1:2, 1:3, 1:6 or N:1` for 6.
fn nic_ratios_for(gpus: i64) -> String {
    if !(1..=1024).contains(&gpus) {
        return "a ratio NICS:GPUS whose NICS x GPUs per server / GPUS is whole".to_string();
    }
    let shared: Vec<String> = (1..=gpus)
        .filter(|d| gpus % d == 0)
        .map(|d| format!("1:{d}"))
        .collect();
    format!(
        "{} for {gpus} GPUs per server, or N:1 (N NICs per GPU)",
        shared.join(", ")
    )
}

impl Overrides {
    /// Applies the flags to a raw spec.
    ///
    /// An override that changes nothing changes nothing: `--tech ib-ndr` on an NDR spec keeps its
    /// switch. Changing the technology resets the NIC, switch, port speed and scalable-unit size that
    /// belonged to the old one to automatic unless they are given too (so `--tech roce-400g` on an
    /// InfiniBand preset picks Ethernet hardware), and records each reset so the plan can say so.
    /// Changing GPUs or NICs per server replaces an explicit PCIe layout by an even one with the same
    /// number of PCIe switches.
    pub fn apply(&self, raw: &mut RawSpec) -> Result<(), SpecError> {
        let mut given: Vec<&str> = Vec::new();
        self.apply_servers(&mut raw.servers, &mut given)?;
        if let Some(t) = self.tech {
            self.reset_for_tech(t, raw);
            raw.fabric.tech = Some(t.as_str().to_string());
            given.push("fabric.tech");
        }
        let s = &mut raw.servers;
        if let Some(n) = &self.nic {
            s.nic = Some(n.clone());
            given.push("servers.nic");
        }
        if let Some(g) = self.gpudirect {
            s.gpudirect = Some(g);
            given.push("servers.gpudirect");
        }
        if let Some(t) = self.topology {
            raw.fabric.topology = Some(t.as_str().to_string());
            given.push("fabric.topology");
        }
        if let Some(sw) = &self.switch {
            raw.fabric.switch = Some(sw.clone());
            given.push("fabric.switch");
        }
        if let Some(r) = self.oversubscription {
            raw.fabric.oversubscription = Some(r);
            given.push("fabric.oversubscription");
        }
        if let Some(n) = self.su_size {
            raw.fabric.su_size = Some(AutoOr::Value(n));
            given.push("fabric.su_size");
        }
        if let Some(kw) = self.max_rack_kw {
            raw.layout.max_rack_kw = Some(kw);
            given.push("layout.max_rack_kw");
        }
        if let Some(c) = self.cooling {
            raw.layout.cooling = Some(c.as_str().to_string());
            given.push("layout.cooling");
        }
        let choice = |on: bool| {
            if on {
                AutoOrNone::Auto
            } else {
                AutoOrNone::None
            }
        };
        if self.storage_on_compute {
            raw.storage.fabric = Some(StorageChoice::Compute);
            given.push("storage.fabric");
        } else if let Some(on) = self.storage {
            raw.storage.fabric = Some(if on {
                StorageChoice::Auto
            } else {
                StorageChoice::None
            });
            given.push("storage.fabric");
        }
        if let Some(on) = self.management {
            raw.management.in_band = Some(choice(on));
            raw.management.out_of_band = Some(choice(on));
            given.extend(["management.in_band", "management.out_of_band"]);
        }
        raw.given.extend(given.into_iter().map(str::to_string));
        Ok(())
    }

    /// The server counts: GPUs, NICs (or a NIC:GPU ratio) and the GPU model. Changing GPUs or NICs
    /// per server replaces an explicit PCIe layout by an even one with as many PCIe switches.
    fn apply_servers(&self, s: &mut RawServers, given: &mut Vec<&str>) -> Result<(), SpecError> {
        if let Some(n) = self.servers {
            s.count = Some(i64::from(n));
            given.push("servers.count");
        }
        if self.gpus_per_server.is_some()
            || self.nics_per_server.is_some()
            || self.nic_ratio.is_some()
        {
            if !s.pcie_switch.is_empty() && s.pcie_switches.is_none() {
                s.pcie_switches = Some(s.pcie_switch.len() as i64);
            }
            s.pcie_switch.clear();
        }
        if let Some(n) = self.gpus_per_server {
            s.gpus_per_server = Some(i64::from(n));
            given.push("servers.gpus_per_server");
        }
        if let Some(n) = self.nics_per_server {
            s.compute_nics = Some(i64::from(n));
            given.push("servers.compute_nics");
        }
        if let Some((nics, gpus)) = self.nic_ratio {
            let per_server = s.gpus_per_server.unwrap_or(8);
            // In i128: the GPUs per server are not range-checked yet (from_raw does that).
            let n = i128::from(per_server) * i128::from(nics);
            if gpus == 0 || n % i128::from(gpus) != 0 {
                return Err(SpecError {
                origin: "command line".to_string(),
                field: "nic-ratio".to_string(),
                message: format!(
                    "{nics}:{gpus} does not give a whole number of NICs for {per_server} GPUs per server; valid: {}",
                    nic_ratios_for(per_server)
                ),
            });
            }
            let from_ratio = n / i128::from(gpus);
            if let Some(m) = self.nics_per_server {
                if i128::from(m) != from_ratio {
                    return Err(SpecError {
                    origin: "command line".to_string(),
                    field: "nic-ratio".to_string(),
                    message: format!(
                        "{nics}:{gpus} gives {from_ratio} NICs for {per_server} GPUs per server, but nics-per-server {m} is given too; give one of them"
                    ),
                });
                }
            }
            // Out of i64's range is out of range for from_raw too: it names servers.compute_nics.
            s.compute_nics = Some(i64::try_from(from_ratio).unwrap_or(i64::MAX));
            given.push("servers.compute_nics");
        }
        if let Some(g) = &self.gpu {
            s.gpu = Some(g.clone());
            given.push("servers.gpu");
        }
        Ok(())
    }

    /// A change of technology resets the NIC, switches, port speed and unit size that belonged to
    /// the old one to automatic unless they are given too, and records each reset.
    fn reset_for_tech(&self, t: Tech, raw: &mut RawSpec) {
        let old = raw
            .fabric
            .tech
            .clone()
            .unwrap_or_else(|| "ib-ndr".to_string());
        if old != t.as_str() {
            let because = format!("the technology changed from {old} to {t}");
            let reset = |field: &str, value: Option<String>, resets: &mut Vec<Reset>| {
                if let Some(value) = value.filter(|v| v != "auto") {
                    resets.push(Reset {
                        field: field.to_string(),
                        value,
                        because: because.clone(),
                    });
                }
            };
            if self.switch.is_none() {
                reset("fabric.switch", raw.fabric.switch.take(), &mut raw.resets);
            }
            if self.nic.is_none() {
                reset("servers.nic", raw.servers.nic.take(), &mut raw.resets);
            }
            // The storage fabric runs the compute fabric's technology unless it names its own.
            if raw.storage.tech.as_deref().is_none_or(|t| t == "auto") {
                reset("storage.switch", raw.storage.switch.take(), &mut raw.resets);
            }
            reset(
                "fabric.port_gbps",
                raw.fabric.port_gbps.take().map(|g| g.to_string()),
                &mut raw.resets,
            );
            if self.su_size.is_none() {
                reset(
                    "fabric.su_size",
                    raw.fabric
                        .su_size
                        .take()
                        .and_then(AutoOr::value)
                        .map(|n| n.to_string()),
                    &mut raw.resets,
                );
            }
        }
    }
}
