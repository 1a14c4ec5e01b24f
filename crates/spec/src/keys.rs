//! The design vocabulary: one table of the keys that set a design, from which every front end is
//! derived.
//!
//! A [`Key`] names itself twice, kebab-case for the command line (the flag `--gpus-per-server`, and
//! the pair `gpus-per-server=4` of `compare --vary` and `compare DESIGN:KEY=VALUE`) and snake_case for
//! the web (the JSON API's `gpus_per_server` and the web form's field). It says what values it takes
//! ([`Kind`]: a range or the choices), how a value sets its target ([`Key::set`]; for design keys
//! the [`Overrides`]), the spec fields it touches, its help, and which front ends offer it
//! ([`Fronts`]).
//!
//! Every front end parses a value with [`Key::parse`], from text (a JSON value is read as its text,
//! a JSON string as its contents), so a value is valid in one front end exactly when it is valid in
//! the others, and a bad one gets one message, [`KeyError`], that names the value and the valid
//! ones. Each front end puts its own spelling of the key in front: clap's `invalid value '0' for
//! '--servers <N>': `, `servers=0: ` for `--vary`, `servers: ` in the JSON API.
//!
//! [`DESIGN_KEYS`] is the table of design keys. [`Key`] is generic over what a value sets, so other
//! tables use the same machinery: the CLI's run keys (routing, PXN, algorithm) set a run's options.
//!
//! Adding a design key is one entry in [`DESIGN_KEYS`]; the spec side is an [`Overrides`] field and
//! its line in [`Overrides::apply`] (and, for a new spec field, the field in `raw.rs` and its check
//! in [`ClusterSpec::from_raw`], which shares the key's range constant).

use crate::{ClusterSpec, Overrides, Topology};
use railyard_catalog::{Catalog, Tech};
use serde::{Serialize, Serializer};
use std::fmt;

/// The smallest and largest valid value of a key, shared with the spec field it sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds<T> {
    pub min: T,
    pub max: T,
}

/// Servers in a design (`servers.count`).
pub const SERVERS: Bounds<u32> = Bounds {
    min: 1,
    max: 1_000_000,
};
/// GPUs per server (`servers.gpus_per_server`): 72 is an NVL72 rack as one NVLink domain.
pub const GPUS_PER_SERVER: Bounds<u32> = Bounds { min: 1, max: 72 };
/// Compute NICs per server (`servers.compute_nics`).
pub const COMPUTE_NICS: Bounds<u32> = Bounds { min: 1, max: 64 };
/// Servers per scalable unit (`fabric.su_size`): a unit's servers sit on one leaf's down-ports.
pub const SU_SIZE: Bounds<u32> = Bounds {
    min: 1,
    max: railyard_catalog::MAX_SWITCH_PORTS,
};
/// The most a server rack may draw, kW (`layout.max_rack_kw`): from a 1 kW closet to twice the
/// 142 kW of a GB300 NVL72 rack and more (NVL72 AI Factory RA: "Full rack requiring up to 142 kW").
pub const MAX_RACK_KW: Bounds<f64> = Bounds {
    min: 1.0,
    max: 1000.0,
};
/// Leaf down:up ratio (`fabric.oversubscription`).
pub const OVERSUBSCRIPTION: Bounds<f64> = Bounds {
    min: 1.0,
    max: 64.0,
};

/// Which front ends offer a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fronts {
    /// A command-line flag, `--NAME VALUE`.
    pub flag: bool,
    /// A `NAME=VALUE` pair: `compare --vary NAME=V1,V2` and `compare DESIGN:NAME=VALUE`.
    pub vary: bool,
    /// A key of the JSON API's design object, `"JSON": value`.
    pub json: bool,
    /// A field of the web app's design form (named as in the JSON API, so it needs `json`).
    pub form: bool,
}

impl Fronts {
    /// Flag, `--vary`, JSON API and web form.
    pub const EVERYWHERE: Fronts = Fronts {
        flag: true,
        vary: true,
        json: true,
        form: true,
    };
    /// Flag, `--vary` and JSON API; the web form leaves it out.
    pub const NOT_IN_FORM: Fronts = Fronts {
        form: false,
        ..Fronts::EVERYWHERE
    };
    /// Command-line flags only.
    pub const FLAG: Fronts = Fronts {
        flag: true,
        vary: false,
        json: false,
        form: false,
    };

    pub fn has(self, front: Front) -> bool {
        match front {
            Front::Flag => self.flag,
            Front::Vary => self.vary,
            Front::Json => self.json,
            Front::Form => self.form,
        }
    }
}

/// One front end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    Flag,
    Vary,
    Json,
    Form,
}

impl Front {
    pub const ALL: [Front; 4] = [Front::Flag, Front::Vary, Front::Json, Front::Form];
}

/// Catalog sections a key can name an entry of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    Gpu,
    Nic,
    Switch,
}

impl PartKind {
    /// As `railyard catalog KIND` names the section.
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Gpu => "gpu",
            PartKind::Nic => "nic",
            PartKind::Switch => "switch",
        }
    }

    /// As a sentence names an entry: `GPU`, `NIC`, `switch`.
    pub fn label(self) -> &'static str {
        match self {
            PartKind::Gpu => "GPU",
            PartKind::Nic => "NIC",
            PartKind::Switch => "switch",
        }
    }

    /// The ids of this kind in a catalog, in id order.
    pub fn ids(self, catalog: &Catalog) -> Vec<String> {
        match self {
            PartKind::Gpu => catalog.gpus.keys().cloned().collect(),
            PartKind::Nic => catalog.nics.keys().cloned().collect(),
            PartKind::Switch => catalog.switches.keys().cloned().collect(),
        }
    }
}

/// What values a key takes.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A whole number in a range.
    Count(Bounds<u32>),
    /// A finite number in a range; `step` is the web form's increment.
    Number { bounds: Bounds<f64>, step: f64 },
    /// On or off (`on`, `true`, `yes` / `off`, `false`, `no`; JSON `true` / `false`).
    Switch,
    /// One of a set of names. `names` lists them (from the type that owns them, in its order);
    /// `aliases` are other spellings of a name (alias, name); each of `files` is a prefix that
    /// takes a file, `PREFIX:FILE`.
    Choice {
        names: fn() -> Vec<&'static str>,
        aliases: &'static [(&'static str, &'static str)],
        files: &'static [&'static str],
    },
    /// The id of a catalog entry, or `auto` where `auto` is true. Which ids exist depends on the
    /// catalog (`--catalog` adds entries), so the fabric builder checks them.
    Part { catalog: PartKind, auto: bool },
    /// A NIC:GPU ratio, `NICS:GPUS`, both above zero.
    Ratio,
}

/// A parsed value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Count(u32),
    Number(f64),
    Switch(bool),
    /// One of a [`Kind::Choice`]'s names (an alias is read as its name).
    Choice(&'static str),
    /// A [`Kind::Choice`]'s file prefix and the file: `opensm:lfts.dump`.
    File {
        prefix: &'static str,
        path: String,
    },
    /// A catalog id, or `auto`.
    Text(String),
    /// NICs, GPUs.
    Ratio(u32, u32),
}

/// The value's text: what [`Key::parse`] reads back as the same value.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Count(n) => write!(f, "{n}"),
            Value::Number(x) => f.write_str(&railyard_catalog::number(*x)),
            Value::Switch(b) => f.write_str(if *b { "on" } else { "off" }),
            Value::Choice(name) => f.write_str(name),
            Value::File { prefix, path } => write!(f, "{prefix}:{path}"),
            Value::Text(s) => f.write_str(s),
            Value::Ratio(a, b) => write!(f, "{a}:{b}"),
        }
    }
}

/// As JSON: a number, a boolean or a string (the text of choices, files, ids and ratios).
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Count(n) => s.serialize_u32(*n),
            Value::Number(x) => s.serialize_f64(*x),
            Value::Switch(b) => s.serialize_bool(*b),
            other => s.collect_str(other),
        }
    }
}

/// A value a key does not take, or a key no table has: what is wrong and what is valid.
///
/// Displayed as `PROBLEM; valid: VALID`, the same in every front end; each front end names the key
/// in front of it in its own spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// E.g. "`0` is out of range", "`torus` is not a valid choice", "unknown key `colour`".
    pub problem: String,
    /// E.g. "1 to 1000000", "single-switch, fat-tree, rail-optimized, rail-only, two-switch".
    pub valid: String,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; valid: {}", self.problem, self.valid)
    }
}

impl std::error::Error for KeyError {}

/// One key: its names, values, help, front ends, and how a value sets a `T` (and reads back from an
/// `S`, the thing a `T` shapes: design keys read a [`ClusterSpec`]).
pub struct Key<T: 'static, S: 'static = ()> {
    /// Kebab-case: the flag (`--NAME`) and the key of `--vary` and `DESIGN:NAME=VALUE`.
    pub name: &'static str,
    /// snake_case: the JSON API's key and the web form field's name.
    pub json: &'static str,
    /// The value's placeholder in `--help` (`N`, `MODEL`).
    pub value_name: &'static str,
    pub kind: Kind,
    /// One line of help (`--help`, the web form's tooltip); the valid values are added to it.
    pub help: &'static str,
    /// The web form's label.
    pub label: &'static str,
    /// The spec fields a value sets or changes, so that an error the spec or the fabric builder
    /// reports on one of them is reported against this key (the first key that lists a field
    /// owns it, unless a later one was the one given).
    pub fields: &'static [&'static str],
    pub fronts: Fronts,
    /// Sets a parsed value ([`Key::parse`] returns only values of the key's kind).
    pub set: fn(&mut T, Value),
    /// The value as an `S` has it (`None` where it has none, e.g. an automatic SU size).
    pub read: fn(&S) -> Option<Value>,
}

// Not derived: the derive would ask for `T: Copy`, which the fields do not need.
impl<T, S> Clone for Key<T, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, S> Copy for Key<T, S> {}

impl<T, S> fmt::Debug for Key<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// A design key: sets [`Overrides`], reads a [`ClusterSpec`].
pub type DesignKey = Key<Overrides, ClusterSpec>;

/// How a key and its valid values are described to the web form (`GET /api/keys`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyInfo {
    pub name: &'static str,
    pub json: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    /// `count`, `number`, `switch`, `choice`, `part` or `ratio`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    /// The names of a choice, or the catalog's ids of a part (after `auto` where it is valid).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// The valid values in words, as error messages give them.
    pub valid: String,
    /// Whether the web form shows it.
    pub form: bool,
}

impl<T, S> Key<T, S> {
    /// The valid values in words: `1 to 1000000`, `on, off`, `ecmp, dmodk, adaptive, opensm:FILE`.
    pub fn valid(&self) -> String {
        match self.kind {
            Kind::Count(b) => format!("{} to {}", b.min, b.max),
            Kind::Number { bounds: b, .. } => format!("{} to {}", b.min, b.max),
            Kind::Switch => "on, off".to_string(),
            Kind::Choice { names, files, .. } => {
                let mut all: Vec<String> = names().into_iter().map(str::to_string).collect();
                all.extend(files.iter().map(|p| format!("{p}:FILE")));
                all.join(", ")
            }
            Kind::Part { catalog, auto } => format!(
                "{}a {} id of the catalog (`railyard catalog {}`)",
                if auto { "auto or " } else { "" },
                catalog.label(),
                catalog.as_str()
            ),
            Kind::Ratio => "NICS:GPUS, both above zero, such as 1:1, 1:2 or 1:4".to_string(),
        }
    }

    /// Parses a value from its text; the error names the value and the valid ones.
    pub fn parse(&self, text: &str) -> Result<Value, KeyError> {
        let bad = |problem: String| KeyError {
            problem,
            valid: self.valid(),
        };
        match self.kind {
            Kind::Count(b) => match text.parse::<i128>() {
                Ok(n) if n >= i128::from(b.min) && n <= i128::from(b.max) => {
                    // In range, so it fits a u32.
                    Ok(Value::Count(u32::try_from(n).unwrap_or(b.max)))
                }
                Ok(n) => Err(bad(format!("{n} is out of range"))),
                Err(_) if is_integer(text) => Err(bad(format!("{text} is out of range"))),
                Err(_) => Err(bad(format!("`{text}` is not a whole number"))),
            },
            Kind::Number { bounds: b, .. } => match text.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= b.min && x <= b.max => Ok(Value::Number(x)),
                Ok(x) if x.is_finite() => Err(bad(format!(
                    "{} is out of range",
                    railyard_catalog::number(x)
                ))),
                _ => Err(bad(format!("`{text}` is not a number"))),
            },
            Kind::Switch => match text {
                "on" | "true" | "yes" => Ok(Value::Switch(true)),
                "off" | "false" | "no" => Ok(Value::Switch(false)),
                _ => Err(bad(format!("`{text}` is not on or off"))),
            },
            Kind::Choice {
                names,
                aliases,
                files,
            } => {
                let name = aliases
                    .iter()
                    .find(|(alias, _)| *alias == text)
                    .map_or(text, |(_, name)| *name);
                if let Some(n) = names().into_iter().find(|n| *n == name) {
                    return Ok(Value::Choice(n));
                }
                for prefix in files {
                    if let Some(path) = text.strip_prefix(prefix).and_then(|r| r.strip_prefix(':'))
                    {
                        if path.is_empty() {
                            return Err(bad(format!("`{text}` names no file")));
                        }
                        return Ok(Value::File {
                            prefix,
                            path: path.to_string(),
                        });
                    }
                }
                Err(bad(format!("`{text}` is not a valid choice")))
            }
            Kind::Part { .. } => {
                if text.trim().is_empty() {
                    Err(bad(format!("`{text}` is not an id")))
                } else {
                    Ok(Value::Text(text.to_string()))
                }
            }
            Kind::Ratio => {
                let whole = |s: &str| s.parse::<u32>().ok().filter(|&n| n > 0);
                match text.split_once(':') {
                    Some((a, b)) => match (whole(a), whole(b)) {
                        (Some(a), Some(b)) => Ok(Value::Ratio(a, b)),
                        _ => Err(bad(format!("`{text}` is not a ratio"))),
                    },
                    None => Err(bad(format!("`{text}` is not a ratio"))),
                }
            }
        }
    }

    /// Parses a value and sets it.
    pub fn apply(&self, target: &mut T, text: &str) -> Result<(), KeyError> {
        let v = self.parse(text)?;
        (self.set)(target, v);
        Ok(())
    }

    /// This key without its file prefixes, for a command that takes only the names.
    pub fn without_files(&self) -> Self {
        let mut k = *self;
        if let Kind::Choice { names, aliases, .. } = self.kind {
            k.kind = Kind::Choice {
                names,
                aliases,
                files: &[],
            };
        }
        k
    }

    /// The help line with the valid values: `Number of GPU servers [valid: 1 to 1000000]`.
    pub fn flag_help(&self) -> String {
        format!("{} [valid: {}]", self.help, self.valid())
    }

    /// The key's name in a front end: kebab-case on the command line, snake_case on the web.
    pub fn name_in(&self, front: Front) -> &'static str {
        match front {
            Front::Flag | Front::Vary => self.name,
            Front::Json | Front::Form => self.json,
        }
    }

    /// Values the key takes and values it refuses, as text, for tests of every front end: the
    /// ends of a range and a bad neighbour of each, every name of a choice, a part of `catalog`.
    pub fn examples(&self, catalog: &Catalog) -> (Vec<String>, Vec<String>) {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self.kind {
            Kind::Count(b) => (
                vec![b.min.to_string(), b.max.to_string()],
                vec![
                    (i64::from(b.min) - 1).to_string(),
                    (i64::from(b.max) + 1).to_string(),
                    "many".to_string(),
                    "1.5".to_string(),
                    "99999999999999999999999".to_string(),
                ],
            ),
            Kind::Number { bounds: b, .. } => (
                vec![
                    b.min.to_string(),
                    b.max.to_string(),
                    ((b.min + b.max) / 2.0).to_string(),
                ],
                vec![
                    (b.min - 0.5).to_string(),
                    (b.max * 2.0).to_string(),
                    "nan".to_string(),
                    "inf".to_string(),
                    "lots".to_string(),
                ],
            ),
            Kind::Switch => (
                s(&["on", "off", "true", "false", "yes", "no"]),
                s(&["maybe", "1", ""]),
            ),
            Kind::Choice {
                names,
                aliases,
                files,
            } => {
                let mut ok: Vec<String> = names().into_iter().map(str::to_string).collect();
                ok.extend(aliases.iter().map(|(a, _)| a.to_string()));
                ok.extend(files.iter().map(|p| format!("{p}:some-file.txt")));
                let mut bad = s(&["bogus", ""]);
                bad.extend(files.iter().map(|p| format!("{p}:")));
                (ok, bad)
            }
            Kind::Part {
                catalog: part,
                auto,
            } => {
                let mut ok: Vec<String> = part.ids(catalog).into_iter().take(1).collect();
                if auto {
                    ok.push("auto".to_string());
                }
                (ok, s(&["", " "]))
            }
            Kind::Ratio => (
                s(&["1:1", "1:4", "2:1"]),
                s(&["1:0", "0:4", "4", "1:x", "1:4:2"]),
            ),
        }
    }

    /// The description the web form is built from; part ids from `catalog`.
    pub fn describe(&self, catalog: &Catalog) -> KeyInfo {
        let (kind, min, max, step, choices) = match self.kind {
            Kind::Count(b) => (
                "count",
                Some(Value::Count(b.min)),
                Some(Value::Count(b.max)),
                None,
                Vec::new(),
            ),
            Kind::Number { bounds: b, step } => (
                "number",
                Some(Value::Number(b.min)),
                Some(Value::Number(b.max)),
                Some(step),
                Vec::new(),
            ),
            Kind::Switch => ("switch", None, None, None, Vec::new()),
            Kind::Choice { names, .. } => (
                "choice",
                None,
                None,
                None,
                names().into_iter().map(str::to_string).collect(),
            ),
            Kind::Part {
                catalog: part,
                auto,
            } => {
                let mut ids = if auto {
                    vec!["auto".to_string()]
                } else {
                    Vec::new()
                };
                ids.extend(part.ids(catalog));
                ("part", None, None, None, ids)
            }
            Kind::Ratio => ("ratio", None, None, None, Vec::new()),
        };
        KeyInfo {
            name: self.name,
            json: self.json,
            label: self.label,
            help: self.help,
            kind,
            min,
            max,
            step,
            choices,
            valid: self.valid(),
            form: self.fronts.form,
        }
    }
}

/// Digits with an optional sign: a whole number too large for any range.
fn is_integer(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The key a front end names `name`, among those it offers.
pub fn find<T, S>(
    table: &'static [Key<T, S>],
    front: Front,
    name: &str,
) -> Option<&'static Key<T, S>> {
    table
        .iter()
        .find(|k| k.fronts.has(front) && k.name_in(front) == name)
}

/// The keys a front end offers, as it names them.
pub fn names<T, S>(table: &[Key<T, S>], front: Front) -> Vec<&'static str> {
    table
        .iter()
        .filter(|k| k.fronts.has(front))
        .map(|k| k.name_in(front))
        .collect()
}

/// The error for a key no table has: `unknown key `colour`; valid: preset, servers, ...`;
/// `extra` are the front end's own keys (the JSON API's `preset`), listed first.
pub fn unknown_key<T, S>(
    table: &[Key<T, S>],
    front: Front,
    name: &str,
    extra: &[&str],
) -> KeyError {
    let mut valid: Vec<&str> = extra.to_vec();
    valid.extend(names(table, front));
    KeyError {
        problem: format!("unknown key `{name}`"),
        valid: valid.join(", "),
    }
}

/// Of the keys `given` (JSON names) and then all keys a front end offers, the first that owns a
/// spec field (`servers.count` -> `servers`), so that errors on the field name the key behind it.
pub fn owner_of<T, S>(
    table: &'static [Key<T, S>],
    front: Front,
    field: &str,
    given: &[&str],
) -> Option<&'static Key<T, S>> {
    let owns =
        |k: &&Key<T, S>| k.fronts.has(front) && (k.name == field || k.fields.contains(&field));
    // Else the key whose own field it is (`servers.nic` is `--nic`'s; `--nics-per-server` only
    // resets it), else the first that sets it.
    table
        .iter()
        .filter(owns)
        .find(|k| given.contains(&k.name_in(front)))
        .or_else(|| {
            table
                .iter()
                .filter(owns)
                .find(|k| k.fields.first() == Some(&field))
        })
        .or_else(|| table.iter().find(owns))
}

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
            names: auto_or_none,
            aliases: &[],
            files: &[],
        },
        help: "The storage fabric on the servers' storage NICs, planned as the DGX SuperPOD reference architectures plan it, or none",
        label: "Storage fabric",
        fields: &["storage.fabric"],
        fronts: Fronts::NOT_IN_FORM,
        set: |o, v| {
            if let Value::Choice(name) = v {
                o.storage = Some(name == "auto");
            }
        },
        read: |s| Some(Value::Choice(if s.storage.wanted { "auto" } else { "none" })),
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
    crate::SiteCooling::ALL.iter().map(|c| c.as_str()).collect()
}

/// The choices of the keys that plan a network or leave it out.
fn auto_or_none() -> Vec<&'static str> {
    vec!["auto", "none"]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::RawSpec;

    #[test]
    fn names_are_unique_and_spelled_alike() {
        for (i, k) in DESIGN_KEYS.iter().enumerate() {
            assert_eq!(k.json, k.name.replace('-', "_"), "{}", k.name);
            assert!(
                !k.fronts.form || k.fronts.json,
                "{}: a form field is a JSON key",
                k.name
            );
            assert!(!k.help.is_empty() && !k.label.is_empty() && !k.fields.is_empty());
            for other in &DESIGN_KEYS[i + 1..] {
                assert_ne!(k.name, other.name);
            }
        }
    }

    /// Every valid example parses, prints as text that parses to the same value, sets the spec and
    /// reads back from it; every invalid one is refused naming the value and the valid values.
    #[test]
    fn every_key_parses_sets_and_reads_back() {
        let catalog = Catalog::builtin();
        for k in &DESIGN_KEYS {
            let (ok, bad) = k.examples(&catalog);
            assert!(!ok.is_empty() && !bad.is_empty(), "{}", k.name);
            for text in ok {
                let v = k
                    .parse(&text)
                    .unwrap_or_else(|e| panic!("{} {text}: {e}", k.name));
                assert_eq!(k.parse(&v.to_string()), Ok(v.clone()), "{} {text}", k.name);
                let mut o = Overrides::default();
                (k.set)(&mut o, v.clone());
                assert_ne!(o, Overrides::default(), "{} {text} sets nothing", k.name);
                let mut raw = RawSpec::default();
                o.apply(&mut raw).unwrap();
                let spec = ClusterSpec::from_raw(&raw, "test")
                    .unwrap_or_else(|e| panic!("{} {text}: {e}", k.name));
                let back = (k.read)(&spec).unwrap();
                // Switches and choices read back as their canonical spelling.
                assert_eq!(back, k.parse(&text).unwrap(), "{} {text}", k.name);
            }
            for text in bad {
                let e = k.parse(&text).expect_err(&format!("{} {text:?}", k.name));
                assert_eq!(e.valid, k.valid());
                assert!(e.problem.contains(text.trim()), "{}: {e}", k.name);
            }
        }
    }

    /// A range is the spec's: a flag's bound is where the spec file's check refuses.
    #[test]
    fn ranges_are_the_spec_fields_ranges() {
        for k in &DESIGN_KEYS {
            let set = |text: &str| -> Result<(), String> {
                let (table, field) = k.fields[0].split_once('.').unwrap();
                let doc = format!("[{table}]\n{field} = {text}\n");
                let raw = crate::parse_raw(&doc, "test").map_err(|e| e.to_string())?;
                ClusterSpec::from_raw(&raw, "test")
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            };
            let (lo, hi) = match k.kind {
                Kind::Count(b) => (
                    (i64::from(b.min) - 1).to_string(),
                    (i64::from(b.max) + 1).to_string(),
                ),
                Kind::Number { bounds: b, .. } => {
                    ((b.min - 0.5).to_string(), (b.max + 0.5).to_string())
                }
                _ => continue,
            };
            let valid = format!("valid: {}", k.valid());
            // Below the range (TOML's reader refuses a zero SU size itself) and above it.
            assert!(
                set(&lo).is_err() && k.parse(&lo).is_err(),
                "{} {lo}",
                k.name
            );
            let e = set(&hi).expect_err(&format!("{} {hi}", k.name));
            assert!(
                e.contains(k.fields[0]) && e.contains(&valid),
                "{}: {e}",
                k.name
            );
            assert!(k.parse(&hi).is_err());
            let max = k.valid().rsplit(' ').next().unwrap().to_string();
            assert!(
                set(&max).is_ok() && k.parse(&max).is_ok(),
                "{} {max}",
                k.name
            );
        }
    }

    #[test]
    fn messages_name_the_value_and_the_valid_ones() {
        let key = |name| find(&DESIGN_KEYS, Front::Flag, name).unwrap();
        let (servers, topology) = (key("servers"), key("topology"));
        assert_eq!(
            servers.parse("0").unwrap_err().to_string(),
            "0 is out of range; valid: 1 to 1000000"
        );
        assert_eq!(
            servers.parse("many").unwrap_err().to_string(),
            "`many` is not a whole number; valid: 1 to 1000000"
        );
        assert_eq!(
            topology.parse("torus").unwrap_err().to_string(),
            "`torus` is not a valid choice; valid: single-switch, fat-tree, rail-optimized, rail-only, two-switch"
        );
        assert_eq!(
            unknown_key(&DESIGN_KEYS, Front::Json, "colour", &["preset"]).to_string(),
            "unknown key `colour`; valid: preset, servers, gpu, gpus_per_server, nics_per_server, nic_ratio, nic, tech, topology, switch, oversubscription, gpudirect, su_size, storage, management, max_rack_kw, cooling"
        );
    }

    #[test]
    fn errors_on_a_spec_field_name_the_key_given() {
        let owner = |field, given: &[&str]| {
            owner_of(&DESIGN_KEYS, Front::Json, field, given).map(|k| k.json)
        };
        assert_eq!(owner("servers.count", &[]), Some("servers"));
        assert_eq!(owner("servers.compute_nics", &[]), Some("nics_per_server"));
        assert_eq!(
            owner("servers.compute_nics", &["nic_ratio"]),
            Some("nic_ratio")
        );
        assert_eq!(owner("nic-ratio", &[]), Some("nic_ratio"));
        assert_eq!(owner("servers.nic", &["nic"]), Some("nic"));
        // `--nic cx7-ndr` on RoCE was named `--nics-per-server`, which only resets the NIC.
        assert_eq!(owner("servers.nic", &[]), Some("nic"));
        assert_eq!(owner("layout.slack", &[]), None);
    }
}
