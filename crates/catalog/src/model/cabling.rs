//! The cabling's catalog entries: copper and active cables, transceivers and fibre, with the
//! connectors they take.

use super::{check_lengths, check_price, check_range, Price, MAX_POWER_W};
use crate::tech::Tech;
use serde::{Deserialize, Serialize};

/// How a cable carries the signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CableKind {
    /// Passive direct-attach copper.
    Dac,
    /// Active (or linear-active) copper.
    Acc,
    /// Active optical cable, transceivers built in.
    Aoc,
    /// Separate transceivers at both ends and a fibre patch cord.
    Optics,
    /// Twisted-pair copper patch cord with RJ45 plugs (1 GbE management ports).
    Utp,
}

impl CableKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CableKind::Dac => "dac",
            CableKind::Acc => "acc",
            CableKind::Aoc => "aoc",
            CableKind::Optics => "optics",
            CableKind::Utp => "utp",
        }
    }
}

/// Which pair of devices a cable may join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CableUse {
    HostSwitch,
    SwitchSwitch,
}

/// A direct cable product family (DAC, ACC or AOC), stocked in fixed lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CableModel {
    pub id: String,
    pub name: String,
    pub kind: CableKind,
    pub techs: Vec<Tech>,
    pub uses: Vec<CableUse>,
    /// Stocked lengths, metres, ascending; the longest is the reach.
    pub lengths_m: Vec<f64>,
    /// Propagation delay, ns per metre.
    pub delay_ns_per_m: f64,
    /// Power of the whole cable (both ends), W; zero for passive copper.
    pub power_w: f64,
    /// How its plugs carry ports: one link end to end (`straight`, the default), or one plug of
    /// [`ports`](Self::ports) ports at one end and the same at the other (`twin`: both cages carry
    /// the same links) or single-port plugs (`splitter`: one leg per link). A cage whose ports go
    /// to different places cannot take a straight cable per port (hardware.md: a switch cage holds
    /// one twin-port transceiver; the splitter DACs of NDR).
    #[serde(default)]
    pub form: CableForm,
    /// Ports of its multi-port plug (1 for a straight cable); price and power are the whole cable's.
    #[serde(default = "one_port")]
    pub ports: u32,
    /// The rate each port (each leg of a splitter) carries, Gb/s: a multi-port cable of a
    /// technology need not carry its top rate (the HDR splitters' legs are HDR100, 100 Gb/s).
    /// Absent: every rate of its technologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_gbps: Option<u32>,
    pub price: Price,
    pub source: String,
}

/// How a cable's plugs carry ports ([`CableModel::form`]).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum CableForm {
    /// One port at each end.
    #[default]
    Straight,
    /// One multi-port plug at each end; every port of one cage goes to the same other cage.
    Twin,
    /// One multi-port plug at one end, one single-port leg per port at the other.
    Splitter,
}

impl CableForm {
    pub const ALL: [CableForm; 3] = [CableForm::Straight, CableForm::Twin, CableForm::Splitter];

    pub fn as_str(self) -> &'static str {
        match self {
            CableForm::Straight => "straight",
            CableForm::Twin => "twin",
            CableForm::Splitter => "splitter",
        }
    }
}

fn one_port() -> u32 {
    1
}

impl CableModel {
    /// Whether it carries links of `tech` at `gbps` on every port ([`CableModel::port_gbps`]).
    pub fn carries(&self, tech: Tech, gbps: u32) -> bool {
        self.techs.contains(&tech) && self.port_gbps.is_none_or(|g| g >= gbps)
    }

    pub fn reach_m(&self) -> f64 {
        self.lengths_m.last().copied().unwrap_or(0.0)
    }

    /// The shortest stocked length that covers `need_m`.
    pub fn length_for(&self, need_m: f64) -> Option<f64> {
        self.lengths_m.iter().copied().find(|&l| l + 1e-9 >= need_m)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let id = &self.id;
        if self.kind == CableKind::Optics {
            return Err(format!(
                "cable {id}: kind `optics` is described by transceiver and fibre entries; valid kinds: dac, acc, aoc"
            ));
        }
        check_lengths(id, &self.lengths_m)?;
        if self.techs.is_empty() || self.uses.is_empty() {
            return Err(format!("cable {id}: techs and uses must not be empty"));
        }
        check_range(id, "delay_ns_per_m", self.delay_ns_per_m, 0.0, 1e3)?;
        check_range(id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        match (self.form, self.ports) {
            (CableForm::Straight, 1) => {}
            (CableForm::Straight, n) => {
                return Err(format!(
                    "cable {id}: ports = {n} with form `straight` (one port per plug); set form = \"twin\" or \"splitter\" for a multi-port plug"
                ))
            }
            (form, n) if !(2..=8).contains(&n) => {
                return Err(format!(
                    "cable {id}: form `{}` needs ports from 2 to 8 (the multi-port plug's ports), not {n}",
                    form.as_str()
                ))
            }
            _ => {}
        }
        if let Some(g) = self.port_gbps {
            if !(1..=1_600).contains(&g) {
                return Err(format!(
                    "cable {id}: port_gbps = {g}; valid: 1 to 1600 (Gb/s each port carries)"
                ));
            }
        }
        check_price(id, &self.price)
    }
}

/// Multimode or single-mode fibre.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FibreKind {
    Mmf,
    Smf,
}

/// A pluggable optical transceiver. `ports` is how many logical ports one module carries
/// (2 for the twin-port OSFP modules NDR switches use).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransceiverModel {
    pub id: String,
    pub name: String,
    pub techs: Vec<Tech>,
    pub form_factor: String,
    pub ports: u32,
    pub fibre: FibreKind,
    /// The optical connector of one port, which the fibre must end in: `mpo-12` (SR4 and DR4:
    /// 8 of 12 fibres, the default), `mpo-16` (SR8: 16 fibres, IEEE 802.3df) or `lc-duplex` (LR4
    /// and FR4: wavelengths multiplexed onto one pair, IEEE 802.3ba / 802.3cd).
    #[serde(default = "default_connector")]
    pub connector: String,
    pub reach_m: f64,
    pub power_w: f64,
    pub price: Price,
    pub source: String,
}

/// The connector of an optical port or fibre that does not name one.
fn default_connector() -> String {
    "mpo-12".to_string()
}

/// Connectors a catalog may name.
pub const CONNECTORS: [&str; 3] = ["mpo-12", "mpo-16", "lc-duplex"];

fn check_connector(id: &str, connector: &str) -> Result<(), String> {
    if CONNECTORS.contains(&connector) {
        Ok(())
    } else {
        Err(format!(
            "{id}: connector `{connector}`; valid: {}",
            CONNECTORS.join(", ")
        ))
    }
}

impl TransceiverModel {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.ports == 0 || self.reach_m <= 0.0 || self.techs.is_empty() {
            return Err(format!(
                "transceiver {}: ports, reach_m and techs must be set",
                self.id
            ));
        }
        if self.ports > 16 {
            return Err(format!(
                "transceiver {}: ports {}; valid: 1 to 16",
                self.id, self.ports
            ));
        }
        check_range(&self.id, "reach_m", self.reach_m, 0.0, 1e6)?;
        check_range(&self.id, "power_w", self.power_w, 0.0, MAX_POWER_W)?;
        check_connector(&self.id, &self.connector)?;
        check_price(&self.id, &self.price)
    }
}

/// A fibre patch cord type (MPO trunk), stocked in fixed lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FibreModel {
    pub id: String,
    pub name: String,
    pub kind: FibreKind,
    /// The connector at both ends (see [`TransceiverModel::connector`]).
    #[serde(default = "default_connector")]
    pub connector: String,
    pub lengths_m: Vec<f64>,
    pub delay_ns_per_m: f64,
    pub price: Price,
    pub source: String,
}

impl FibreModel {
    pub fn length_for(&self, need_m: f64) -> Option<f64> {
        self.lengths_m.iter().copied().find(|&l| l + 1e-9 >= need_m)
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        check_lengths(&self.id, &self.lengths_m)?;
        check_range(&self.id, "delay_ns_per_m", self.delay_ns_per_m, 0.0, 1e3)?;
        check_connector(&self.id, &self.connector)?;
        check_price(&self.id, &self.price)
    }
}
