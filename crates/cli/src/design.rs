//! From command-line words to a validated spec and catalog, with every input error found up front.

use crate::error::CliError;
use crate::io::{read_input, Input};
use crate::sim::RouteArg;
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};
use railyard_catalog::Catalog;
use railyard_sim::calibration::Calibration;
use railyard_sim::collective::{AlgoChoice, Relay};
use railyard_sim::routing::RoutingKind;
use railyard_spec::keys::{
    self, DesignKey, Front, Fronts, Key, KeyError, Kind, Value, DESIGN_KEYS,
};
use railyard_spec::{presets, raw::RawSpec, ClusterSpec, Overrides};
use std::path::PathBuf;

/// Flags that describe a design: a preset or spec file, the design keys of
/// [`railyard_spec::keys::DESIGN_KEYS`] as flags (`--servers N`, ...), and catalog additions.
#[derive(Debug, Clone, Default)]
pub struct DesignArgs {
    /// `--spec FILE`.
    pub spec: Option<PathBuf>,
    /// The design keys given as flags.
    pub overrides: Overrides,
    /// `--catalog FILE`, repeatable.
    pub catalog: Vec<PathBuf>,
    /// `--prices FILE`, repeatable.
    pub prices: Vec<PathBuf>,
    /// The design keys given as flags, as `name=value` in the table's order (what differs from
    /// the preset or spec).
    pub given: Vec<String>,
}

/// A design key as a flag: `--NAME VALUE`, parsed by the key, help with the valid values.
fn key_arg(k: &'static DesignKey) -> Arg {
    Arg::new(k.name)
        .long(k.name)
        .value_name(k.value_name)
        .help(k.flag_help())
        // `--servers -1` reaches the key's parser, which says what is valid.
        .allow_negative_numbers(true)
        .value_parser(move |s: &str| k.parse(s))
}

impl clap::Args for DesignArgs {
    fn augment_args(cmd: Command) -> Command {
        let cmd = cmd.arg(
            Arg::new("spec")
                .long("spec")
                .value_name("FILE")
                .value_parser(clap::value_parser!(PathBuf))
                .help("Spec file (TOML); flags below override it"),
        );
        let cmd = DESIGN_KEYS
            .iter()
            .filter(|k| k.fronts.flag)
            .fold(cmd, |cmd, k| cmd.arg(key_arg(k)));
        cmd.arg(
            Arg::new("catalog")
                .long("catalog")
                .value_name("FILE")
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
                .help("Catalog file that adds or replaces entries by id"),
        )
        .arg(
            Arg::new("prices")
                .long("prices")
                .value_name("FILE")
                .action(ArgAction::Append)
                .value_parser(clap::value_parser!(PathBuf))
                .help("Prices file: `[price_usd]` id = dollars"),
        )
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for DesignArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut d = DesignArgs::default();
        d.update_from_arg_matches(m)?;
        Ok(d)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        // Every id read here is one `augment_args` defined, with the type its parser returns.
        if let Some(p) = m.get_one::<PathBuf>("spec") {
            self.spec = Some(p.clone());
        }
        for k in DESIGN_KEYS.iter().filter(|k| k.fronts.flag) {
            if let Some(v) = m.get_one::<Value>(k.name) {
                (k.set)(&mut self.overrides, v.clone());
                self.given.push(format!("{}={v}", k.name));
            }
        }
        if let Some(files) = m.get_many::<PathBuf>("catalog") {
            self.catalog = files.cloned().collect();
        }
        if let Some(files) = m.get_many::<PathBuf>("prices") {
            self.prices = files.cloned().collect();
        }
        Ok(())
    }
}

/// `--calibration FILE`: what `railyard calibrate` fitted to a cluster's own nccl-tests logs (a
/// NIC rate and a latency), applied to every simulation of the command. One flag for every command
/// that simulates (`sim collective`, `train`, `compare`, `report`, `check-nccl`), read and checked
/// once by [`CalibrationArgs::load`].
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CalibrationArgs {
    /// Calibration file from `railyard calibrate` (railyard-calibration/1): the NIC rate and latency
    /// fitted to this cluster's nccl-tests logs, applied to every simulation
    #[arg(long = "calibration", value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

impl CalibrationArgs {
    /// `p` with `--calibration`'s file.
    pub fn paths(&self, p: crate::output::PathArgs) -> crate::output::PathArgs {
        p.inputs("--calibration", &self.calibration)
    }

    /// The calibration: the file's, or none (changes nothing). Errors name the file and the line
    /// or key at fault (bad input, exit 2).
    pub fn load(&self) -> Result<Calibration, CliError> {
        let Some(path) = &self.calibration else {
            return Ok(Calibration::default());
        };
        let text = read_input(path, Input::CALIBRATION)?;
        Calibration::from_toml(&text)
            .map_err(|e| CliError::input(format!("{} (--calibration): {e}", path.display())))
    }

    /// What an output says of the calibration it applied: `calibrated by FILE (NIC 28.03 GB/s,
    /// latency +7.39 us)`; `None` without `--calibration` (the output stays as it was).
    pub fn note(&self, c: &Calibration) -> Option<String> {
        let path = self.calibration.as_ref()?;
        Some(format!(
            "calibrated by {} ({})",
            path.display(),
            c.describe()
        ))
    }

    /// A JSON output with a `calibration` object (file, nic_gbs, latency_us) added where a
    /// calibration applied; unchanged otherwise.
    pub fn annotate_json(&self, c: &Calibration, json: String) -> String {
        let Some(path) = &self.calibration else {
            return json;
        };
        let Ok(serde_json::Value::Object(mut m)) = serde_json::from_str(&json) else {
            return json;
        };
        m.insert(
            "calibration".to_string(),
            serde_json::json!({
                "file": path.display().to_string(),
                "nic_gbs": c.nic_gbs,
                "latency_us": c.latency_us,
            }),
        );
        let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(m)).unwrap_or(json);
        s.push('\n');
        s
    }

    /// The network configuration a simulation starts from: the default with the calibration.
    pub fn net_config(&self) -> Result<railyard_sim::fabric_net::NetConfig, CliError> {
        Ok(railyard_sim::fabric_net::NetConfig {
            calibration: self.load()?,
            ..Default::default()
        })
    }
}

/// What a run's keys set: how a simulation routes, relays across rails and picks its algorithm,
/// and (per design of `compare`) how the training job is laid out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOverrides {
    pub routing: Option<RouteArg>,
    pub pxn: Option<PxnArg>,
    pub algo: Option<AlgoChoice>,
    pub sharp: Option<SharpArg>,
    pub qps_per_connection: Option<u32>,
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    pub ep: Option<u32>,
    pub micro_batch: Option<u32>,
    pub global_batch: Option<u32>,
    pub zero: Option<u32>,
}

/// A run key: sets [`RunOverrides`].
pub type RunKey = Key<RunOverrides>;

fn routing_names() -> Vec<&'static str> {
    RoutingKind::NAMES.to_vec()
}

fn pxn_names() -> Vec<&'static str> {
    Relay::NAMES.to_vec()
}

fn algo_names() -> Vec<&'static str> {
    AlgoChoice::NAMES.to_vec()
}

/// The route a routing value names: a policy, or an OpenSM LFT dump.
fn route_of(v: Value) -> Option<RouteArg> {
    match v {
        Value::Choice(name) => RoutingKind::parse(name).map(RouteArg::Policy),
        Value::File { path, .. } => Some(RouteArg::OpenSm(PathBuf::from(path))),
        _ => None,
    }
}

fn pxn_of(v: Value) -> Option<PxnArg> {
    match v {
        Value::Choice(name) => Relay::parse(name).ok().map(PxnArg),
        _ => None,
    }
}

fn algo_of(v: Value) -> Option<AlgoChoice> {
    match v {
        Value::Choice(name) => AlgoChoice::parse(name),
        _ => None,
    }
}

/// The run keys: how `sim`, `train` and `compare` simulate, the sibling of the design keys (the
/// same [`Key`] machinery: one parser, one error wording). Their names come from the simulator's
/// types; each command's flag (with its own default and help) parses through the entries below,
/// and the tests enumerate this list.
///
/// Routing, PXN, the algorithm, SHARP and the queue pairs are also `compare`'s per-design pairs
/// (`DESIGN:routing=ecmp`, `--vary pxn=on,off`, `--vary algo=ring,tree`, `--vary sharp=on,off`),
/// as are the training layout's keys, which are pairs only (`train` and `compare` have their own
/// flags for them, with defaults).
pub static RUN_KEYS: [RunKey; 12] = [
    ROUTING,
    PXN,
    ALGO,
    SHARP,
    QPS_PER_CONNECTION,
    layout_key!("tp", tp, "Tensor parallelism of --model on this design"),
    layout_key!("pp", pp, "Pipeline stages of --model on this design"),
    layout_key!("dp", dp, "Data parallelism of --model on this design"),
    layout_key!("ep", ep, "Expert parallelism of --model on this design"),
    layout_key!(
        "micro-batch",
        micro_batch,
        "Sequences per micro-batch of --model on this design"
    ),
    layout_key!(
        "global-batch",
        global_batch,
        "Sequences per step of --model on this design"
    ),
    ZERO,
];

/// Flag and per-design pair.
const FLAG_AND_PAIR: Fronts = Fronts {
    flag: true,
    vary: true,
    json: false,
    form: false,
};

/// Per-design pair only.
const PAIR: Fronts = Fronts {
    flag: false,
    vary: true,
    json: false,
    form: false,
};

/// Largest count a layout pair takes (the layout itself checks it against the design's GPUs).
const LAYOUT: keys::Bounds<u32> = keys::Bounds {
    min: 1,
    max: 1 << 24,
};

/// A count of the training layout as a per-design pair of `compare`, setting `RunOverrides::$field`.
macro_rules! layout_key {
    ($name:literal, $field:ident, $help:literal) => {
        Key {
            name: $name,
            json: $name,
            value_name: "N",
            kind: Kind::Count(LAYOUT),
            help: $help,
            label: $name,
            fields: &[],
            fronts: PAIR,
            set: |r, v| {
                if let Value::Count(n) = v {
                    r.$field = Some(n);
                }
            },
            read: |_| None,
        }
    };
}
use layout_key;

fn zero_names() -> Vec<&'static str> {
    vec!["0", "1", "2", "3"]
}

/// `zero=0|1|2|3`: the ZeRO stage of --model on this design.
pub const ZERO: RunKey = Key {
    name: "zero",
    json: "zero",
    value_name: "0|1|2|3",
    kind: Kind::Choice {
        names: zero_names,
        aliases: &[],
        files: &[],
    },
    help: "ZeRO stage of --model on this design",
    label: "ZeRO",
    fields: &[],
    fronts: PAIR,
    set: |r, v| {
        if let Value::Choice(n) = v {
            r.zero = n.parse().ok();
        }
    },
    read: |_| None,
};

/// `--routing`: `ecmp`, `dmodk`, `adaptive`, or `opensm:FILE` where a command reads LFT dumps.
pub const ROUTING: RunKey = Key {
    name: "routing",
    json: "routing",
    value_name: "R",
    kind: Kind::Choice {
        names: routing_names,
        aliases: &[],
        files: &["opensm"],
    },
    help: "Routing: a policy (ecmp, dmodk as OpenSM ftree, adaptive) or an OpenSM LFT dump",
    label: "routing",
    fields: &[],
    fronts: FLAG_AND_PAIR,
    set: |r, v| r.routing = route_of(v),
    read: |_| None,
};

/// `--pxn`: `auto`, `on`, `off`, `staged`.
pub const PXN: RunKey = Key {
    name: "pxn",
    json: "pxn",
    value_name: "auto|on|off|staged",
    kind: Kind::Choice {
        names: pxn_names,
        aliases: &[("pipelined", "on"), ("direct", "off")],
        files: &[],
    },
    help: "How transfers cross rails between servers (PXN)",
    label: "PXN",
    fields: &[],
    fronts: FLAG_AND_PAIR,
    set: |r, v| r.pxn = pxn_of(v),
    read: |_| None,
};

/// `--algo`: `ring`, `tree`, `auto`.
pub const ALGO: RunKey = Key {
    name: "algo",
    json: "algo",
    value_name: "A",
    kind: Kind::Choice {
        names: algo_names,
        aliases: &[],
        files: &[],
    },
    help: "Collective algorithm",
    label: "algorithm",
    fields: &[],
    fronts: FLAG_AND_PAIR,
    set: |r, v| r.algo = algo_of(v),
    read: |_| None,
};

fn sharp_names() -> Vec<&'static str> {
    vec!["on", "off"]
}

/// `--sharp on|off`: whether NCCL may reduce in the switches (SHARP, NCCL's CollNet:
/// `NCCL_COLLNET_ENABLE=1` with the NCCL-SHARP plugin). Off by default, as NCCL has it without
/// the plugin; on a fabric whose switches or NICs do not support it, an error names them.
pub const SHARP: RunKey = Key {
    name: "sharp",
    json: "sharp",
    value_name: "on|off",
    kind: Kind::Choice {
        names: sharp_names,
        aliases: &[],
        files: &[],
    },
    help: "In-network all-reduce on SHARP switches (NCCL CollNet, with the SHARP plugin)",
    label: "SHARP",
    fields: &[],
    fronts: FLAG_AND_PAIR,
    set: |r, v| {
        if let Value::Choice(n) = v {
            r.sharp = match n {
                "on" => Some(SharpArg(true)),
                "off" => Some(SharpArg(false)),
                _ => None,
            };
        }
    },
    read: |_| None,
};

/// `--qps-per-connection N`: queue pairs per connection, each hashed on its own by ECMP
/// (`NCCL_IB_QPS_PER_CONNECTION`).
pub const QPS_PER_CONNECTION: RunKey = Key {
    name: "qps-per-connection",
    json: "qps_per_connection",
    value_name: "N",
    kind: Kind::Count(keys::Bounds {
        min: 1,
        max: railyard_sim::routing::MAX_QPS_PER_CONNECTION,
    }),
    help:
        "Queue pairs per connection for ECMP, each hashed on its own (NCCL_IB_QPS_PER_CONNECTION)",
    label: "QPs per connection",
    fields: &[],
    fronts: FLAG_AND_PAIR,
    set: |r, v| {
        if let Value::Count(n) = v {
            r.qps_per_connection = Some(n);
        }
    },
    read: |_| None,
};

/// `--sharp on|off` as parsed: `true` lets NCCL use CollNet (SHARP) where the fabric supports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharpArg(pub bool);

impl SharpArg {
    pub fn parse(s: &str) -> Result<SharpArg, KeyError> {
        run_value(&SHARP, s, |r| r.sharp)
    }
}

/// Parses a run key's value and reads back what it set; `None` (a value of another kind, which the
/// key's parser never returns) is reported as an invalid choice.
fn run_value<X>(key: &RunKey, s: &str, get: fn(RunOverrides) -> Option<X>) -> Result<X, KeyError> {
    let mut r = RunOverrides::default();
    key.apply(&mut r, s)?;
    get(r).ok_or_else(|| KeyError {
        problem: format!("`{s}` is not a valid choice"),
        valid: key.valid(),
    })
}

/// `--routing` of `sim collective`: a policy or `opensm:FILE`.
pub fn parse_route(s: &str) -> Result<RouteArg, KeyError> {
    run_value(&ROUTING, s, |r| r.routing)
}

/// `--routing` of `sim flows`, `train` and `compare`: a policy, not an LFT file.
pub fn parse_routing(s: &str) -> Result<RoutingKind, KeyError> {
    run_value(&ROUTING.without_files(), s, |r| match r.routing {
        Some(RouteArg::Policy(kind)) => Some(kind),
        _ => None,
    })
}

/// `--algo`: ring, tree or auto.
pub fn parse_algo(s: &str) -> Result<AlgoChoice, KeyError> {
    run_value(&ALGO, s, |r| r.algo)
}

/// `--qps-per-connection N`, 1 to `MAX_QPS_PER_CONNECTION`.
pub fn parse_qps(s: &str) -> Result<u32, KeyError> {
    run_value(&QPS_PER_CONNECTION, s, |r| r.qps_per_connection)
}

/// `--pxn auto|on|off|staged`: how traffic crosses rails between servers (`Relay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PxnArg(pub Option<Relay>);

impl PxnArg {
    pub fn parse(s: &str) -> Result<PxnArg, KeyError> {
        run_value(&PXN, s, |r| r.pxn)
    }

    /// The relay: as given, or the fabric's default.
    pub fn resolve(self, f: &railyard_fabric::Fabric) -> Relay {
        self.0.unwrap_or_else(|| Relay::auto(f))
    }
}

impl DesignArgs {
    /// `p` with the files these flags read: `--spec`, `--catalog`, `--prices`.
    pub fn paths(&self, p: crate::output::PathArgs) -> crate::output::PathArgs {
        p.inputs("--spec", &self.spec)
            .inputs("--catalog", &self.catalog)
            .inputs("--prices", &self.prices)
    }

    pub fn overrides(&self) -> Overrides {
        self.overrides.clone()
    }

    /// The catalog with `--catalog` files overlaid and `--prices` applied, in order.
    pub fn catalog(&self) -> Result<Catalog, CliError> {
        let mut catalog = Catalog::builtin();
        for path in &self.catalog {
            let text = read_input(path, Input::CATALOG)?;
            catalog
                .overlay(&text, &path.display().to_string())
                .map_err(|e| CliError::input(e.to_string()))?;
        }
        for path in &self.prices {
            let text = read_input(path, Input::PRICES)?;
            catalog
                .apply_prices(&text, &path.display().to_string())
                .map_err(|e| CliError::input(e.to_string()))?;
        }
        Ok(catalog)
    }

    /// The raw spec from `--spec`, a preset name, or the default preset; and its origin for messages.
    pub fn raw(&self, preset: Option<&str>) -> Result<(RawSpec, String), CliError> {
        match (&self.spec, preset) {
            (Some(_), Some(p)) => Err(CliError::input(format!(
                "give either a preset ({p}) or --spec, not both"
            ))),
            (Some(path), None) => {
                let text = read_input(path, Input::SPEC)?;
                let origin = path.display().to_string();
                let raw = railyard_spec::parse_raw(&text, &origin)
                    .map_err(|e| CliError::input(e.to_string()))?;
                Ok((raw, origin))
            }
            (None, p) => {
                let name = p.unwrap_or(presets::DEFAULT);
                let raw = presets::raw(name).map_err(|e| CliError::input(e.to_string()))?;
                Ok((raw, format!("preset {name}")))
            }
        }
    }

    /// Loads and validates the design, with the flags applied.
    pub fn load(&self, preset: Option<&str>) -> Result<(ClusterSpec, Catalog), CliError> {
        let catalog = self.catalog()?;
        let (mut raw, origin) = self.raw(preset)?;
        self.overrides()
            .apply(&mut raw)
            .map_err(|e| CliError::input(e.to_string()))?;
        let mut spec = ClusterSpec::from_raw(&raw, &origin).map_err(|e| {
            // A value a flag gave is named by its flag, not blamed on the preset or file.
            field_error(
                raw.given.contains(&e.field),
                &e.field,
                &e.origin,
                &e.message,
            )
        })?;
        if !self.given.is_empty() {
            let (base, _) = self.raw(preset)?;
            spec.describe_changes(&base, &origin, &self.given);
        }
        Ok((spec, catalog))
    }
}

/// Searches, builds and plans the design with its storage and management networks, naming the
/// spec's origin in errors.
pub fn plan(
    spec: &ClusterSpec,
    catalog: &Catalog,
    opts: &railyard_fabric::SearchOptions,
) -> Result<railyard_plan::Planned, CliError> {
    railyard_plan::plan_design(spec, catalog, opts).map_err(|e| build_error(spec, e))
}

/// Builds the fabric, naming the spec's origin in errors.
pub fn build(spec: &ClusterSpec, catalog: &Catalog) -> Result<railyard_fabric::Fabric, CliError> {
    railyard_fabric::build(spec, catalog).map_err(|e| build_error(spec, e))
}

/// A design error with where its value came from: the flag that gave it (`--switch (fabric.switch
/// of preset dgx-h100-superpod): ...`), else the spec's origin (a preset's value, a file's).
fn build_error(spec: &ClusterSpec, e: railyard_fabric::BuildError) -> CliError {
    let by_flag = spec.provenance.preset.is_some()
        && spec.provenance.source(&e.field) == railyard_spec::Source::Given;
    field_error(by_flag, &e.field, &spec.origin, &e.message)
}

/// An error on spec `field`: named by the flag that owns it when `by_flag` (`--switch
/// (fabric.switch of preset dgx-h100-superpod): ...`), else by its origin and field.
fn field_error(by_flag: bool, field: &str, origin: &str, message: &str) -> CliError {
    match by_flag
        .then(|| keys::owner_of(&DESIGN_KEYS, Front::Flag, field, &[]))
        .flatten()
    {
        Some(k) => CliError::input(format!(
            "--{} ({field} of {origin}): {message}",
            k.name_in(Front::Flag)
        )),
        None if field.is_empty() => CliError::input(format!("{origin}: {message}")),
        None => CliError::input(format!("{origin}: {field}: {message}")),
    }
}

/// A `key=value` pair of `compare --vary` and `DESIGN:key=value`, parsed by its design key; the
/// error names the pair and the valid values (or the valid keys).
pub fn parse_kv(key: &str, value: &str) -> Result<(&'static DesignKey, Value), CliError> {
    let k = keys::find(&DESIGN_KEYS, Front::Vary, key).ok_or_else(|| {
        CliError::input(keys::unknown_key(&DESIGN_KEYS, Front::Vary, key, &[]).to_string())
    })?;
    let v = k
        .parse(value)
        .map_err(|e| CliError::input(format!("{key}={value}: {e}")))?;
    Ok((k, v))
}

/// A `KEY=VALUE` pair of `compare` (`DESIGN:KEY=VALUE`, `--vary KEY=V1,V2`): a design key, a run
/// key (routing, PXN, the training layout), or `name`, the design's label.
#[derive(Debug, Clone)]
pub enum Pair {
    Design(&'static DesignKey, Value),
    Run(&'static RunKey, Value),
    Name(String),
}

impl Pair {
    /// The pair's key: `tech`, `routing`, `name`.
    pub fn key(&self) -> &'static str {
        match self {
            Pair::Design(k, _) => k.name,
            Pair::Run(k, _) => k.name,
            Pair::Name(_) => "name",
        }
    }

    /// The pair as `compare` shows it in a label: `tech=roce-400g`.
    pub fn text(&self) -> String {
        match self {
            Pair::Design(k, v) => format!("{}={v}", k.name),
            Pair::Run(k, v) => format!("{}={v}", k.name),
            Pair::Name(n) => format!("name={n}"),
        }
    }
}

/// The keys `compare`'s pairs take: the design keys, then the run keys, then `name`.
pub fn pair_names() -> Vec<&'static str> {
    let mut v = keys::names(&DESIGN_KEYS, Front::Vary);
    v.extend(keys::names(&RUN_KEYS, Front::Vary));
    v.push("name");
    v
}

/// The name of the key a pair of `compare` names (as [`Pair::key`] gives it), if any table has it.
pub fn parse_pair_key(key: &str) -> Option<&'static str> {
    if key == "name" {
        return Some("name");
    }
    keys::find(&DESIGN_KEYS, Front::Vary, key)
        .map(|k| k.name)
        .or_else(|| keys::find(&RUN_KEYS, Front::Vary, key).map(|k| k.name))
}

/// Parses one pair of `compare` by its key's table; the error names the pair and the valid values
/// (or the valid keys). A routing pair takes a policy (no LFT file: `compare` reads none).
pub fn parse_pair(key: &str, value: &str) -> Result<Pair, CliError> {
    if key == "name" {
        if value.is_empty() || value.chars().any(char::is_control) || value.len() > 64 {
            return Err(CliError::input(format!(
                "name={value}: a design's name is 1 to 64 printable characters"
            )));
        }
        return Ok(Pair::Name(value.to_string()));
    }
    if keys::find(&DESIGN_KEYS, Front::Vary, key).is_some() {
        let (k, v) = parse_kv(key, value)?;
        return Ok(Pair::Design(k, v));
    }
    let k = keys::find(&RUN_KEYS, Front::Vary, key).ok_or_else(|| {
        CliError::input(format!(
            "unknown key `{key}`; valid: {}",
            pair_names().join(", ")
        ))
    })?;
    let parsed = if k.name == ROUTING.name {
        k.without_files().parse(value)
    } else {
        k.parse(value)
    };
    let v = parsed.map_err(|e| CliError::input(format!("{key}={value}: {e}")))?;
    Ok(Pair::Run(k, v))
}

#[cfg(test)]
#[path = "design_tests.rs"]
mod tests;
