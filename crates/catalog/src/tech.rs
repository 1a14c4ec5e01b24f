//! Link technologies: the closed set of fabric technologies a spec can name ([`Tech::ALL`]), plus the
//! older InfiniBand generations a discovered fabric can run at ([`Tech::DISCOVERED_ONLY`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A fabric link technology, named as in the spec (`ib-ndr`, `roce-400g`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Tech {
    #[serde(rename = "ib-sdr")]
    IbSdr,
    #[serde(rename = "ib-ddr")]
    IbDdr,
    #[serde(rename = "ib-qdr")]
    IbQdr,
    #[serde(rename = "ib-fdr10")]
    IbFdr10,
    #[serde(rename = "ib-fdr")]
    IbFdr,
    #[serde(rename = "ib-edr")]
    IbEdr,
    #[serde(rename = "ib-hdr")]
    IbHdr,
    #[serde(rename = "ib-ndr")]
    IbNdr,
    #[serde(rename = "ib-xdr")]
    IbXdr,
    #[serde(rename = "roce-100g")]
    Roce100g,
    #[serde(rename = "roce-200g")]
    Roce200g,
    #[serde(rename = "roce-400g")]
    Roce400g,
    #[serde(rename = "roce-800g")]
    Roce800g,
    #[serde(rename = "eth-1g")]
    Eth1g,
}

/// InfiniBand or Ethernet (RoCEv2).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// The default: what the InfiniBand tools (ibnetdiscover, iblinkinfo, ibsim) discover.
    #[default]
    Infiniband,
    Ethernet,
}

impl Tech {
    /// Every technology a spec can name (the catalog has hardware for each), in spec order.
    pub const ALL: [Tech; 8] = [
        Tech::IbEdr,
        Tech::IbHdr,
        Tech::IbNdr,
        Tech::IbXdr,
        Tech::Roce100g,
        Tech::Roce200g,
        Tech::Roce400g,
        Tech::Roce800g,
    ];

    /// Technologies of the management networks only (1 GbE to BMCs and PDUs): the catalog describes
    /// them, but a spec cannot plan a compute fabric on them.
    pub const MANAGEMENT_ONLY: [Tech; 1] = [Tech::Eth1g];

    /// InfiniBand generations older than EDR: `railyard import ibnet` reads fabrics that run at them,
    /// but the catalog has no hardware to plan with, so a spec cannot name them.
    pub const DISCOVERED_ONLY: [Tech; 5] = [
        Tech::IbSdr,
        Tech::IbDdr,
        Tech::IbQdr,
        Tech::IbFdr10,
        Tech::IbFdr,
    ];

    /// The spec name, e.g. `ib-ndr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tech::IbSdr => "ib-sdr",
            Tech::IbDdr => "ib-ddr",
            Tech::IbQdr => "ib-qdr",
            Tech::IbFdr10 => "ib-fdr10",
            Tech::IbFdr => "ib-fdr",
            Tech::IbEdr => "ib-edr",
            Tech::IbHdr => "ib-hdr",
            Tech::IbNdr => "ib-ndr",
            Tech::IbXdr => "ib-xdr",
            Tech::Roce100g => "roce-100g",
            Tech::Roce200g => "roce-200g",
            Tech::Roce400g => "roce-400g",
            Tech::Roce800g => "roce-800g",
            Tech::Eth1g => "eth-1g",
        }
    }

    pub fn family(self) -> Family {
        match self {
            Tech::IbSdr
            | Tech::IbDdr
            | Tech::IbQdr
            | Tech::IbFdr10
            | Tech::IbFdr
            | Tech::IbEdr
            | Tech::IbHdr
            | Tech::IbNdr
            | Tech::IbXdr => Family::Infiniband,
            _ => Family::Ethernet,
        }
    }

    /// The names of every technology a spec can name, comma-separated, for error messages.
    pub fn valid_names() -> String {
        Tech::ALL.map(Tech::as_str).join(", ")
    }
}

impl fmt::Display for Tech {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses the technologies a spec can name ([`Tech::ALL`]); fabric.json reads the others through serde.
impl FromStr for Tech {
    type Err = String;
    fn from_str(s: &str) -> Result<Tech, String> {
        Tech::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown technology `{s}`; valid: {}", Tech::valid_names()))
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::Infiniband => "InfiniBand",
            Family::Ethernet => "Ethernet",
        })
    }
}

/// Usable data rate of a PCIe link per direction, Gb/s, after line coding (no packet overhead).
///
/// Transfer rates and encodings from the PCI Express Base Specification: Gen1 2.5 GT/s and Gen2 5 GT/s
/// with 8b/10b; Gen3 8, Gen4 16 and Gen5 32 GT/s with 128b/130b; Gen6 64 GT/s PAM4 in 256-byte FLITs of
/// which 242 bytes carry TLP and DLLP data (the rest is CRC and FEC). TLP header overhead is the
/// simulator's business, not the link's.
pub fn pcie_gbps(gen: u32, lanes: u32) -> f64 {
    let (gt_s, efficiency) = match gen {
        1 => (2.5, 0.8),
        2 => (5.0, 0.8),
        3 => (8.0, 128.0 / 130.0),
        4 => (16.0, 128.0 / 130.0),
        5 => (32.0, 128.0 / 130.0),
        _ => (64.0, 242.0 / 256.0),
    };
    gt_s * efficiency * f64::from(lanes)
}
