//! From command-line words to a validated spec and catalog, with every input error found up front.

use crate::error::CliError;
use crate::io::{read_input, Input};
use clap::{Arg, ArgAction, ArgMatches, Command, FromArgMatches};
use railyard_study::compare::AlgoChoice;
use railyard_study::design::keys::{self, DesignKey, Front, Key, KeyError, Value, DESIGN_KEYS};
use railyard_study::design::{parse_raw, presets, BuildError, Planned, Source};
use railyard_study::design::{ClusterSpec, Overrides, RawSpec};
use railyard_study::scenario::Calibration;
use railyard_study::train::Relay;
use railyard_study::{Catalog, Fabric, RoutingKind};
use std::path::PathBuf;

/// Flags that describe a design: a preset or spec file, the design keys of
/// [`keys::DESIGN_KEYS`] as flags (`--servers N`, ...), and catalog additions.
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

    /// The `calibration` key a command's JSON gets where `--calibration` was given: the file and
    /// what it set.
    pub fn json_key(&self, c: &Calibration) -> Option<(&'static str, serde_json::Value)> {
        let path = self.calibration.as_ref()?;
        Some((
            "calibration",
            serde_json::json!({
                "file": path.display().to_string(),
                "nic_gbs": c.nic_gbs,
                "latency_us": c.latency_us,
            }),
        ))
    }
}

/// A `compare` design before it is planned: its catalog, its base spec with the flags' design
/// keys applied, where that came from, and its design pairs with their text.
pub type Base = (
    Catalog,
    RawSpec,
    String,
    Vec<(&'static DesignKey, Value, String)>,
);

/// `--routing`: a built-in policy or an OpenSM LFT dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteArg {
    Policy(RoutingKind),
    OpenSm(PathBuf),
}

use railyard_study::design::run::{self, Route};
use railyard_study::design::run::{RunKey, ALGO, PXN, QPS_PER_CONNECTION, ROUTING, SHARP};

/// What a run's keys set ([`run::RunOverrides`], by name), as the simulator's values: how a
/// simulation routes, relays across rails and picks its algorithm, and (per design of `compare`)
/// how the training job is laid out.
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
    pub micro_batch: Option<u64>,
    pub global_batch: Option<u64>,
    pub zero: Option<u32>,
}

impl RunOverrides {
    /// What a `compare` design's run pairs set (`routing=ecmp,tp=4`).
    pub fn of_pairs(pairs: &[Pair]) -> RunOverrides {
        let mut run = run::RunOverrides::default();
        for p in pairs {
            if let Pair::Run(k, val) = p {
                (k.set)(&mut run, val.clone());
            }
        }
        run.into()
    }
}

/// The built-in design a command takes when none is named.
pub const DEFAULT_PRESET: &str = presets::DEFAULT;

/// Whether `name` is a built-in design (see `railyard presets`).
pub fn is_preset(name: &str) -> bool {
    presets::find(name).is_ok()
}

/// The names the keys set, read by the simulator's types (which take their names from the same
/// constants, so a name the key accepted always reads).
impl From<run::RunOverrides> for RunOverrides {
    fn from(r: run::RunOverrides) -> RunOverrides {
        RunOverrides {
            routing: r.routing.and_then(|route| match route {
                Route::Policy(name) => RoutingKind::parse(name).map(RouteArg::Policy),
                Route::OpenSm(path) => Some(RouteArg::OpenSm(PathBuf::from(path))),
            }),
            pxn: r.pxn.and_then(|name| Relay::parse(name).ok().map(PxnArg)),
            algo: r.algo.and_then(AlgoChoice::parse),
            sharp: r.sharp.map(SharpArg),
            qps_per_connection: r.qps_per_connection,
            tp: r.tp,
            pp: r.pp,
            dp: r.dp,
            ep: r.ep,
            micro_batch: r.micro_batch,
            global_batch: r.global_batch,
            zero: r.zero,
        }
    }
}

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
fn run_value<X>(
    key: &Key<run::RunOverrides>,
    s: &str,
    get: fn(RunOverrides) -> Option<X>,
) -> Result<X, KeyError> {
    let mut r = run::RunOverrides::default();
    key.apply(&mut r, s)?;
    get(r.into()).ok_or_else(|| KeyError {
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
                let raw = parse_raw(&text, &origin).map_err(|e| CliError::input(e.to_string()))?;
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
        railyard_study::design::canonical_gpu(&mut spec, &catalog);
        if !self.given.is_empty() {
            let (base, _) = self.raw(preset)?;
            spec.describe_changes(&base, &origin, &self.given);
        }
        Ok((spec, catalog))
    }
}

/// Searches, builds and plans the design with its storage and management networks (listing the
/// next `alternatives` designs), naming the spec's origin in errors.
pub fn plan(
    spec: &ClusterSpec,
    catalog: &Catalog,
    alternatives: usize,
) -> Result<Planned, CliError> {
    railyard_study::design::plan(spec, catalog, alternatives).map_err(|e| build_error(spec, e))
}

/// Builds the fabric, naming the spec's origin in errors.
pub fn build(spec: &ClusterSpec, catalog: &Catalog) -> Result<Fabric, CliError> {
    railyard_study::design::build(spec, catalog).map_err(|e| build_error(spec, e))
}

/// A design error with where its value came from: the flag that gave it (`--switch (fabric.switch
/// of preset dgx-h100-superpod): ...`), else the spec's origin (a preset's value, a file's).
fn build_error(spec: &ClusterSpec, e: BuildError) -> CliError {
    let by_flag =
        spec.provenance.preset.is_some() && spec.provenance.source(&e.field) == Source::Given;
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
    v.extend(run::names(Front::Vary));
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
        .or_else(|| run::find(Front::Vary, key).map(|k| k.name))
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
    let k = run::find(Front::Vary, key).ok_or_else(|| {
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
