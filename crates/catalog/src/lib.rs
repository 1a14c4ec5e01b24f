//! The hardware catalog: every switch, NIC, GPU, cable, transceiver and fibre railyard knows, as data.
//!
//! The built-in catalog is TOML compiled into the binary (`data/*.toml`). Users add entries or replace
//! them by id with `--catalog FILE` ([`Catalog::overlay`]) and set prices with `--prices FILE`
//! ([`Catalog::apply_prices`]). Every entry carries a `source`; prices that are not from a public price
//! list carry `price_estimate = true` and say so wherever they are printed.
//!
//! This crate does no I/O: callers read files and hand over their text and a name for error messages.

mod model;
pub mod number;
mod tech;

pub use model::*;
pub use number::number;
pub use tech::{pcie_gbps, Family, Tech};

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// The built-in data files, in the order they are loaded.
const BUILTIN: &[(&str, &str)] = &[
    (
        "builtin:technologies.toml",
        include_str!("../data/technologies.toml"),
    ),
    (
        "builtin:switches.toml",
        include_str!("../data/switches.toml"),
    ),
    ("builtin:nics.toml", include_str!("../data/nics.toml")),
    ("builtin:gpus.toml", include_str!("../data/gpus.toml")),
    ("builtin:servers.toml", include_str!("../data/servers.toml")),
    ("builtin:cables.toml", include_str!("../data/cables.toml")),
];

/// An error in catalog or prices data: which file, where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogError {
    /// File name (or `builtin:...`).
    pub origin: String,
    /// What is wrong, naming the entry and field.
    pub message: String,
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for CatalogError {}

/// One catalog file: any subset of the sections.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    technology: Vec<Technology>,
    #[serde(default)]
    switch: Vec<SwitchModel>,
    #[serde(default)]
    nic: Vec<NicModel>,
    #[serde(default)]
    gpu: Vec<GpuModel>,
    #[serde(default)]
    server: Vec<ServerModel>,
    #[serde(default)]
    rack_system: Vec<RackSystem>,
    #[serde(default)]
    cable: Vec<CableModel>,
    #[serde(default)]
    transceiver: Vec<TransceiverModel>,
    #[serde(default)]
    fibre: Vec<FibreModel>,
}

/// A prices file: `[price_usd]` maps catalog ids to US dollars; an optional `source` names where they come from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesFile {
    #[serde(default)]
    source: Option<String>,
    price_usd: BTreeMap<String, PriceEntry>,
}

/// A price in a prices file: a plain number, or `{ usd = .., per_m_usd = .. }` for cables and fibre.
/// Anything else is refused with the accepted forms (the key and line come from the parser).
#[derive(Debug, Deserialize)]
#[serde(
    untagged,
    expecting = "not a price; valid: a number of US dollars (`\"QM9700\" = 28000`), or `{ usd = 30, per_m_usd = 1.2 }` (a per-metre part for cables and fibre)"
)]
enum PriceEntry {
    Flat(f64),
    Detailed {
        usd: f64,
        #[serde(default)]
        per_m_usd: f64,
    },
}

/// All hardware railyard can plan with, keyed by id (ordered, so listings are deterministic).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub technologies: BTreeMap<Tech, Technology>,
    pub switches: BTreeMap<String, SwitchModel>,
    pub nics: BTreeMap<String, NicModel>,
    pub gpus: BTreeMap<String, GpuModel>,
    /// GPU server models, keyed by the name a spec gives as `servers.model`.
    pub servers: BTreeMap<String, ServerModel>,
    /// Rack-scale systems (GB200 NVL72), whose compute trays are servers.
    pub rack_systems: BTreeMap<String, RackSystem>,
    pub cables: BTreeMap<String, CableModel>,
    pub transceivers: BTreeMap<String, TransceiverModel>,
    pub fibres: BTreeMap<String, FibreModel>,
}

impl Catalog {
    /// The catalog compiled into the binary.
    pub fn builtin() -> Catalog {
        let mut catalog = Catalog::default();
        for (origin, text) in BUILTIN {
            // Architecture invariant: the built-in data parses and validates; a unit test pins this.
            catalog
                .overlay(text, origin)
                .unwrap_or_else(|e| panic!("built-in catalog is invalid: {e}"));
        }
        catalog
    }

    /// Adds the entries of a catalog file, replacing entries with the same id.
    ///
    /// The whole file is checked before anything changes, so a bad file leaves the catalog as it was.
    pub fn overlay(&mut self, text: &str, origin: &str) -> Result<(), CatalogError> {
        let err = |message: String| CatalogError {
            origin: origin.to_string(),
            message,
        };
        let file: CatalogFile = toml::from_str(text).map_err(|e| err(toml_message(&e, text)))?;
        let mut next = self.clone();
        for t in file.technology {
            next.technologies.insert(t.id, t);
        }
        macro_rules! merge {
            ($list:expr, $map:expr) => {
                for entry in $list {
                    $map.insert(entry.id.clone(), entry);
                }
            };
        }
        merge!(file.switch, next.switches);
        merge!(file.nic, next.nics);
        merge!(file.gpu, next.gpus);
        merge!(file.server, next.servers);
        merge!(file.rack_system, next.rack_systems);
        merge!(file.cable, next.cables);
        merge!(file.transceiver, next.transceivers);
        merge!(file.fibre, next.fibres);
        next.validate().map_err(err)?;
        *self = next;
        Ok(())
    }

    /// Sets prices by id from a prices file. Prices set this way are no longer estimates; their source
    /// becomes the file's `source` or its name.
    pub fn apply_prices(&mut self, text: &str, origin: &str) -> Result<(), CatalogError> {
        let err = |message: String| CatalogError {
            origin: origin.to_string(),
            message,
        };
        let file: PricesFile = toml::from_str(text).map_err(|e| err(toml_message(&e, text)))?;
        let source = file
            .source
            .unwrap_or_else(|| format!("prices file {origin}"));
        let mut next = self.clone();
        for (id, entry) in &file.price_usd {
            let (usd, per_m_usd) = match *entry {
                PriceEntry::Flat(usd) => (usd, 0.0),
                PriceEntry::Detailed { usd, per_m_usd } => (usd, per_m_usd),
            };
            check_price_usd(&format!("price_usd.{id}"), usd, per_m_usd).map_err(err)?;
            let slot = next.price_mut(id).ok_or_else(|| {
                err(format!(
                    "price_usd.{id}: no catalog entry has this id; valid ids: {}",
                    self.priced_ids().join(", ")
                ))
            })?;
            *slot = Price {
                usd,
                per_m_usd,
                estimate: false,
                source: source.clone(),
            };
        }
        *self = next;
        Ok(())
    }

    fn price_mut(&mut self, id: &str) -> Option<&mut Price> {
        if let Some(s) = self.switches.get_mut(id) {
            return Some(&mut s.price);
        }
        if let Some(n) = self.nics.get_mut(id) {
            return Some(&mut n.price);
        }
        if let Some(g) = self.gpus.get_mut(id) {
            let p = g.price.get_or_insert_with(|| Price {
                usd: 0.0,
                per_m_usd: 0.0,
                estimate: false,
                source: String::new(),
            });
            return Some(p);
        }
        if let Some(s) = self.servers.get_mut(id) {
            return Some(&mut s.price);
        }
        if let Some(r) = self.rack_systems.get_mut(id) {
            return Some(&mut r.price);
        }
        if let Some(c) = self.cables.get_mut(id) {
            return Some(&mut c.price);
        }
        if let Some(t) = self.transceivers.get_mut(id) {
            return Some(&mut t.price);
        }
        if let Some(f) = self.fibres.get_mut(id) {
            return Some(&mut f.price);
        }
        None
    }

    /// Every id that carries a price, sorted.
    pub fn priced_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .switches
            .keys()
            .chain(self.nics.keys())
            .chain(self.gpus.keys())
            .chain(self.servers.keys())
            .chain(self.rack_systems.keys())
            .chain(self.cables.keys())
            .chain(self.transceivers.keys())
            .chain(self.fibres.keys())
            .cloned()
            .collect();
        ids.sort();
        ids
    }

    /// Cross-entry checks: references resolve, numbers are positive, every technology is described.
    fn validate(&self) -> Result<(), String> {
        for t in self.technologies.values() {
            t.validate()?;
        }
        for s in self.switches.values() {
            s.validate()?;
        }
        for n in self.nics.values() {
            n.validate()?;
        }
        for g in self.gpus.values() {
            g.validate()?;
        }
        for sv in self.servers.values() {
            sv.validate()?;
            if !self.gpus.contains_key(&sv.gpu) {
                return Err(format!(
                    "server {}: unknown GPU `{}`; valid: {}",
                    sv.id,
                    sv.gpu,
                    self.gpus.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        self.validate_racks()?;
        for c in self.cables.values() {
            c.validate()?;
        }
        for t in self.transceivers.values() {
            t.validate()?;
            if !self.fibres.values().any(|f| f.kind == t.fibre) {
                return Err(format!(
                    "transceiver {}: no fibre of kind {:?} in the catalog",
                    t.id, t.fibre
                ));
            }
        }
        for f in self.fibres.values() {
            f.validate()?;
        }
        Ok(())
    }

    /// Rack-scale systems and their trays name each other: a tray names a rack system whose tray
    /// it is, a rack system's trays fit in its power (see [`RackSystem::validate`]).
    fn validate_racks(&self) -> Result<(), String> {
        for r in self.rack_systems.values() {
            r.validate()?;
            let tray = self.servers.get(&r.tray).ok_or_else(|| {
                format!(
                    "rack_system {}: unknown tray `{}`; valid: a server id ({})",
                    r.id,
                    r.tray,
                    self.servers.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })?;
            if tray.rack_system.as_deref() != Some(r.id.as_str()) {
                return Err(format!(
                    "rack_system {}: its tray `{}` must name it (rack_system = \"{}\")",
                    r.id, r.tray, r.id
                ));
            }
            if f64::from(r.trays) * tray.power_w > r.power_w {
                return Err(format!(
                    "rack_system {}: {} trays of {} W draw more than the rack's power_w {}",
                    r.id,
                    r.trays,
                    number(tray.power_w),
                    number(r.power_w)
                ));
            }
        }
        for s in self.servers.values() {
            let Some(id) = &s.rack_system else { continue };
            match self.rack_systems.get(id) {
                Some(r) if r.tray == s.id => {}
                Some(r) => {
                    return Err(format!(
                        "server {}: rack_system `{id}` has tray `{}`, not this server",
                        s.id, r.tray
                    ))
                }
                None => {
                    return Err(format!(
                        "server {}: unknown rack_system `{id}`; valid: {}",
                        s.id,
                        self.rack_systems
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }
            }
        }
        Ok(())
    }

    /// The rack-scale system a server model is a compute tray of, if any.
    pub fn rack_of(&self, server: &str) -> Option<&RackSystem> {
        let id = self.servers.get(server)?.rack_system.as_ref()?;
        self.rack_systems.get(id)
    }

    /// The technology's description. The built-in data describes every technology a spec can name
    /// ([`Tech::ALL`], unit test `every_tech_is_described`); the generations only discovered fabrics
    /// run at ([`Tech::DISCOVERED_ONLY`]) have no entry.
    pub fn technology(&self, tech: Tech) -> Option<&Technology> {
        self.technologies.get(&tech)
    }

    /// Switch models that can carry `tech`, sorted by id.
    pub fn switches_for(&self, tech: Tech) -> Vec<&SwitchModel> {
        self.switches
            .values()
            .filter(|s| s.mode_for(tech, None).is_some())
            .collect()
    }

    /// NIC models that can run `tech`, sorted by id.
    pub fn nics_for(&self, tech: Tech) -> Vec<&NicModel> {
        self.nics
            .values()
            .filter(|n| n.techs.contains(&tech))
            .collect()
    }
}

/// Turns a toml error into one line that names the line, column and the problem.
pub fn toml_message(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let (line, col) = line_col(text, span.start);
            // A type error points at the value and does not name its key: name it from the source.
            match key_at(text, span.start) {
                Some(key) => format!(
                    "line {line}, column {col}: {key}: {}",
                    msg.replace("expected i64", "expected a whole number")
                        .replace("expected u32", "expected a whole number")
                        .replace("expected f64", "expected a number")
                ),
                None => format!("line {line}, column {col}: {msg}"),
            }
        }
        None => msg,
    }
}

/// The dotted key (`servers.count`) whose value starts at `offset`, when the line there is a plain
/// `key = value` under a `[table]` header; `None` otherwise.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let (key, gap) = before[line_start..].split_once('=')?;
    let key = key.trim();
    // A quoted key (`"MPO12-OM4" = ..`, as part ids are written) is named without its quotes.
    let key = match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
        Some(k) if !k.contains(['"', '\\']) => k,
        _ => key,
    };
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    if !gap.trim().is_empty() || key.is_empty() || !key.chars().all(bare) {
        return None;
    }
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim_start)
        .find(|l| l.starts_with('['))
        .and_then(|l| l.trim_start_matches('[').split(']').next())
        .map(str::trim);
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key.to_string(),
    })
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests;
