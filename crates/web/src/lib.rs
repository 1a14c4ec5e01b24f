//! The web app behind `railyard serve`, as pure functions: a request's method, path and body in, a
//! response out. The HTTP layer (the CLI) reads sockets and writes bytes; nothing here touches the
//! file system, and every design a request names is built from the compiled-in presets and catalog.
//!
//! API (JSON):
//! - `GET /api/presets`: the built-in designs with the form's fields filled in.
//! - `GET /api/keys`: the design keys a request takes ([`DESIGN_KEYS`]): names, valid values, and
//!   which the form shows; and the run keys of a model's training step (`run_keys`).
//! - `POST /api/plan` with a [`DesignRequest`]: summary, BOM, drawing and cost chart.
//!   With `model`, also the training step of that model on the design (TP the GPUs per server,
//!   DP the rest) and the network's cost per million tokens.
//! - `POST /api/report` and `POST /api/cabling` with a [`DesignRequest`]: the design's report.html
//!   and cabling.csv, for the page's download links.
//! - `POST /api/compare` with `{"designs": [{"label", "cost_usd", "tokens_per_s", "bisection_tbs"}]}`:
//!   the comparison charts of the designs on the page (cost against performance with the Pareto
//!   front, cost per million tokens), and with each design's `network_usd_per_million_tokens` and
//!   its `network_usd_per_million_tokens_band` (the training step's `error_band`), the `verdict`:
//!   a winner only beyond the error bands, else "tied within model error".
//! - `POST /api/sim[?client=ID]` with a [`DesignRequest`]: predicted busbw curves, streamed as
//!   NDJSON lines (`{"progress": "..."}` while simulating, then `{"result": {...}}`, or
//!   `{"cancelled": "..."}` when a newer request with the same client id superseded it).
//!
//! A request body is JSON sent as `application/json` (415 otherwise: [`check_content_type`]) in
//! which no object gives a key twice (400 naming the key). A design request's keys are `preset` or
//! `spec` (a spec file's TOML text, at most [`MAX_SPEC`] bytes, parsed and validated as `--spec`
//! is), `model` (a built-in training model), the JSON names of [`DESIGN_KEYS`] and the run keys
//! the API takes (`pxn`, `sharp`: how `model`'s step runs on `/api/plan`, refused elsewhere and
//! where study's rules say they change nothing, as `railyard train` refuses its flags); each value
//! is parsed by its key, as the command line's flags are. A design is checked before any work against
//! this server's limits ([`job`]: at most [`MAX_SERVERS`] servers, [`MAX_PLAN_GPUS`] GPUs and
//! [`MAX_PLAN_NICS`] NICs to plan, [`MAX_SIM_GPUS`] GPUs to simulate), whether its keys or an
//! uploaded spec made it so big. Invalid input answers 400 with `{"error": MESSAGE, "field":
//! NAME}`, NAME a request key.

use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_plan::Plan;
use railyard_report::{chart, html};
use railyard_sim::Cancelled;
use railyard_spec::keys::{self, DesignKey, Front, KeyInfo, Kind, DESIGN_KEYS};
use railyard_spec::run::{self, RunOverrides};
use railyard_spec::{presets, ClusterSpec, Overrides};
use railyard_study::busbw::{self, Busbw};
use railyard_study::compare::{self, Model};
use railyard_study::rules::{GivenKeys, NoEffect, RunKey};
use serde_json::{json, Map, Value};

mod job;
mod json;
#[cfg(test)]
mod tests;

pub use job::{job, sim_job, Answer, Job, SimJob, Size, MAX_PLAN_GPUS, MAX_PLAN_NICS};
pub use json::{check_content_type, JSON_TYPE};

/// What a simulation request is built into and how it is stopped, as the server hosting this app
/// holds them between [`SimJob::build`] and [`sim_until`].
pub use railyard_catalog::Catalog as SimCatalog;
pub use railyard_fabric::Fabric as SimFabric;
pub use railyard_sim::Cancel;

/// Request bodies above this many bytes answer 413 (a spec file and the design's keys fit).
pub const MAX_BODY: usize = 32 * 1024;
/// Bytes of spec TOML a request may upload (presets are about 1 KiB).
pub const MAX_SPEC: usize = 16 * 1024;
/// Designs `/api/compare` charts at most.
pub const MAX_COMPARED: usize = 16;
/// Servers a planning request may ask for (131,072 GPUs at 8 per server plan in about a second).
pub const MAX_SERVERS: u32 = 16_384;
/// GPUs a simulation request may ask for.
pub const MAX_SIM_GPUS: u64 = 16_384;

/// An HTTP response: status, content type and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, v: &Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: v.to_string().into_bytes(),
        }
    }

    /// `{"error": message, "field": field}`.
    pub fn error(status: u16, field: &str, message: &str) -> Response {
        Response::json(status, &json!({ "error": message, "field": field }))
    }
}

/// A design: the preset it starts from and the design keys it sets (every key optional, unknown
/// keys rejected).
#[derive(Debug, Clone, Default)]
pub struct DesignRequest {
    pub preset: Option<String>,
    /// A spec file's TOML text instead of a preset.
    pub spec: Option<String>,
    /// A built-in training model whose step to predict.
    pub model: Option<String>,
    pub overrides: Overrides,
    /// The JSON names of the design keys given, in the order given.
    pub given: Vec<&'static str>,
    /// The same keys as `name=value` (the flag's name), to describe a design they change.
    pub given_values: Vec<String>,
    /// What the run keys given set (`pxn`, `sharp`: how the training step of `model` runs).
    pub run: RunOverrides,
    /// The run keys given, in the order given.
    pub run_given: Vec<&'static RunKey>,
}

/// Study's rules ask which run keys a request gave ([`railyard_study::rules`]).
impl GivenKeys for DesignRequest {
    fn has(&self, key: &RunKey) -> bool {
        self.run_given.iter().any(|k| k.name == key.name)
    }
}

/// The request's own keys besides the design keys of [`DESIGN_KEYS`].
const PRESET: &str = "preset";
const SPEC: &str = "spec";
const MODEL: &str = "model";
const OWN_KEYS: [&str; 3] = [PRESET, SPEC, MODEL];

/// Limits of this server on top of a key's range (a request plans within a second or so; the CLI
/// plans more): (JSON name, largest value).
pub const REQUEST_LIMITS: [(&str, u32); 1] = [("servers", MAX_SERVERS)];

/// The range this server takes for a whole-number key it limits ([`REQUEST_LIMITS`]).
fn request_range(key: &DesignKey) -> Option<(u32, u32)> {
    let (_, limit) = REQUEST_LIMITS.iter().find(|(name, _)| *name == key.json)?;
    match key.kind {
        Kind::Count(b) => Some((b.min, b.max.min(*limit))),
        _ => None,
    }
}

/// The valid values of a key this server limits.
fn request_valid(min: u32, max: u32) -> String {
    format!("{min} to {max} (use the CLI for more)")
}

/// The valid values this server states for `key`, in every error on it and in `/api/keys`: the
/// key's own ([`keys::Key::valid`]), or the narrower range of [`REQUEST_LIMITS`].
pub fn valid_here(key: &DesignKey) -> String {
    match request_range(key) {
        Some((min, max)) => request_valid(min, max),
        None => key.valid(),
    }
}

type Bad = Box<Response>;

fn bad(field: &str, message: impl AsRef<str>) -> Bad {
    Box::new(Response::error(400, field, message.as_ref()))
}

/// A JSON value as the text a design key parses: a string's contents, anything else as JSON
/// writes it (`12`, `1.5`, `true`), so the API takes what the command line takes.
fn key_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl DesignRequest {
    /// Parses a JSON object; the error names the offending key.
    pub fn parse(body: &[u8]) -> Result<DesignRequest, Bad> {
        let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Map::new())
        } else {
            json::parse(body)?
        };
        let Value::Object(obj) = v else {
            return Err(bad("body", "expected a JSON object of design fields"));
        };
        let mut r = DesignRequest::default();
        for (k, value) in &obj {
            let k = k.as_str();
            if k == PRESET {
                let name = value
                    .as_str()
                    .ok_or_else(|| bad(k, format!("{k}: expected a string, got {value}")))?;
                presets::find(name).map_err(|e| bad(k, e.message))?;
                r.preset = Some(name.to_string());
                continue;
            }
            if k == SPEC {
                let text = value
                    .as_str()
                    .ok_or_else(|| bad(k, format!("{k}: expected the spec file's text")))?;
                if text.len() > MAX_SPEC {
                    return Err(bad(
                        k,
                        format!(
                            "{k}: {} bytes is more than a spec file this server takes; valid: at most {MAX_SPEC} bytes",
                            text.len()
                        ),
                    ));
                }
                railyard_spec::parse_raw(text, "uploaded spec")
                    .map_err(|e| bad(k, e.to_string()))?;
                r.spec = Some(text.to_string());
                continue;
            }
            if k == MODEL {
                let name = value
                    .as_str()
                    .ok_or_else(|| bad(k, format!("{k}: expected a string, got {value}")))?;
                if !name.is_empty() {
                    Model::preset(name).map_err(|e| bad(k, format!("{k}: {e}")))?;
                    r.model = Some(name.to_string());
                }
                continue;
            }
            if let Some(key) = run::find(Front::Json, k) {
                let v = key
                    .parse(&key_text(value))
                    .map_err(|e| bad(k, format!("{k}: {e}")))?;
                (key.set)(&mut r.run, v);
                r.run_given.push(key);
                continue;
            }
            let key = keys::find(&DESIGN_KEYS, Front::Json, k).ok_or_else(|| {
                let mut e = keys::unknown_key(&DESIGN_KEYS, Front::Json, k, &OWN_KEYS);
                for name in run::names(Front::Json) {
                    e.valid += &format!(", {name}");
                }
                bad(k, e.to_string())
            })?;
            // Every error of a key this server limits states the range it takes, not the key's.
            let v = key.parse(&key_text(value)).map_err(|mut e| {
                e.valid = valid_here(key);
                bad(k, format!("{k}: {e}"))
            })?;
            if let (Some((_, max)), keys::Value::Count(n)) = (request_range(key), &v) {
                if *n > max {
                    let e = keys::KeyError {
                        problem: format!("{n} is more than this server plans per request"),
                        valid: valid_here(key),
                    };
                    return Err(bad(k, format!("{k}: {e}")));
                }
            }
            r.given_values.push(format!("{}={v}", key.name));
            (key.set)(&mut r.overrides, v);
            r.given.push(key.json);
        }
        if r.spec.is_some() && r.preset.is_some() {
            return Err(bad(SPEC, "give either a preset or a spec, not both"));
        }
        Ok(r)
    }

    /// The request key behind a spec or build error's field (`servers.count` -> `servers`): of the
    /// keys that set the field, the one given, else the first.
    fn request_key(&self, field: &str) -> &'static str {
        if field == PRESET {
            return PRESET;
        }
        let owner = keys::owner_of(&DESIGN_KEYS, Front::Json, field, &self.given);
        if self.spec.is_some() && owner.is_none_or(|k| !self.given.contains(&k.json)) {
            // A field the uploaded spec set and no key of the request changed.
            return SPEC;
        }
        owner.map_or("design", |k| k.json)
    }

    /// The validated spec, the catalog and the built fabric.
    pub fn build(&self) -> Result<(ClusterSpec, Catalog, Fabric), Bad> {
        let (spec, catalog) = self.spec()?;
        let fabric = self.build_spec(&spec, &catalog)?;
        Ok((spec, catalog, fabric))
    }

    /// The fabric of `spec` (this request's validated spec).
    fn build_spec(&self, spec: &ClusterSpec, catalog: &Catalog) -> Result<Fabric, Bad> {
        railyard_fabric::build(spec, catalog)
            .map_err(|e| bad(self.request_key(&e.field), e.to_string()))
    }

    /// The validated spec and the catalog, the design searched (with [`PLAN_ALTERNATIVES`] next
    /// designs), built and planned with its storage and management networks.
    pub fn plan(&self) -> Result<(ClusterSpec, Catalog, railyard_plan::Planned), Bad> {
        let (spec, catalog) = self.spec()?;
        let planned = self.plan_spec(&spec, &catalog)?;
        Ok((spec, catalog, planned))
    }

    /// [`DesignRequest::plan`] of `spec` (this request's validated spec).
    fn plan_spec(
        &self,
        spec: &ClusterSpec,
        catalog: &Catalog,
    ) -> Result<railyard_plan::Planned, Bad> {
        let opts = railyard_fabric::SearchOptions {
            alternatives: PLAN_ALTERNATIVES,
        };
        railyard_plan::plan_design(spec, catalog, &opts)
            .map_err(|e| bad(self.request_key(&e.field), e.to_string()))
    }

    /// The validated spec and the catalog.
    fn spec(&self) -> Result<(ClusterSpec, Catalog), Bad> {
        let name = self.preset.as_deref().unwrap_or(presets::DEFAULT);
        let (mut raw, origin) = match &self.spec {
            Some(text) => (
                railyard_spec::parse_raw(text, "uploaded spec")
                    .map_err(|e| bad(SPEC, e.to_string()))?,
                "uploaded spec".to_string(),
            ),
            None => (
                presets::raw(name).map_err(|e| bad("preset", e.message))?,
                format!("preset {name}"),
            ),
        };
        let base = raw.clone();
        self.overrides
            .apply(&mut raw)
            .map_err(|e| bad(self.request_key(&e.field), e.to_string()))?;
        let mut spec = ClusterSpec::from_raw(&raw, &origin)
            .map_err(|e| bad(self.request_key(&e.field), e.to_string()))?;
        // Described by the keys that change the design, by the CLI's rule.
        spec.describe_changes(&base, &origin, &self.given_values);
        Ok((spec, Catalog::builtin()))
    }
}

/// Alternatives `POST /api/plan` lists beside the chosen design.
pub const PLAN_ALTERNATIVES: usize = 3;

/// Routes one request that needs no streaming. `/api/sim` is [`sim`].
pub fn handle(method: &str, path: &str, body: &[u8]) -> Response {
    let path = path.split('?').next().unwrap_or(path);
    match (method, path) {
        ("GET" | "HEAD", "/") | ("GET" | "HEAD", "/index.html") => Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: page().into_bytes(),
        },
        ("GET" | "HEAD", "/api/presets") => Response::json(200, &presets_json()),
        ("GET" | "HEAD", "/api/keys") => Response::json(200, &keys_json()),
        ("POST", "/api/plan" | "/api/report" | "/api/cabling") => {
            job(path, body).map_or_else(|r| r, |j| j.run().into_response())
        }
        ("POST", "/api/compare") => compare(body),
        (
            _,
            "/" | "/index.html" | "/api/presets" | "/api/keys" | "/api/plan" | "/api/sim"
            | "/api/report" | "/api/cabling" | "/api/compare",
        ) => Response::error(405, "method", &format!("{method} is not allowed on {path}")),
        _ => Response::error(404, "path", &format!("no such page: {path}")),
    }
}

/// The form's fields as `spec` has them (for a form showing an uploaded spec).
fn form_fields(spec: &ClusterSpec) -> Value {
    let mut m = Map::new();
    for k in DESIGN_KEYS.iter().filter(|k| k.fronts.form) {
        if let Some(v) = (k.read)(spec) {
            m.insert(k.json.into(), json!(v));
        }
    }
    Value::Object(m)
}

/// The training step of the request's built-in model on the design: the layout `train` takes when
/// none is asked for (fitted to the GPU's memory: `Layout::unasked`), routed as the technology's
/// sites route it (the catalog's `default_routing`, as `train` without `--routing`), cross-rail
/// as `pxn` says (else as NCCL does by default, `Relay::auto`), SHARP as `sharp` says (else off, as NCCL runs
/// without the SHARP plugin); a run key that cannot change the step is refused by study's rules,
/// as `railyard train` refuses its flag. Notes under the table.
fn train(
    req: &DesignRequest,
    fabric: &Fabric,
    catalog: &Catalog,
    plan: &Plan,
) -> Result<Value, Bad> {
    let name = req.model.as_deref().unwrap_or_default();
    let model = Model::preset(name).map_err(|e| bad(MODEL, format!("{MODEL}: {e}")))?;
    let refused = |e: NoEffect| bad(e.key.json, e.message);
    let relay = match req.run.pxn {
        Some(name) => railyard_sim::collective::Relay::parse(name)
            .map_err(|e| bad(run::PXN.json, format!("{}: {e}", run::PXN.json)))?,
        None => None,
    };
    let perf_req = compare::PerfRequest {
        model: Some((&model, compare::Layout::unasked())),
        relay,
        sharp: req.run.sharp.unwrap_or(false),
        ..compare::PerfRequest::routed(
            railyard_sim::fabric_net::default_routing(fabric, catalog)
                .map_or(railyard_sim::routing::RoutingKind::DModK, |(kind, _)| kind),
        )
    };
    // The run keys given checked against the layout the step runs (study's rules, as `train`
    // checks its flags).
    let check = !req.run_given.is_empty();
    let p = compare::perf_checked(fabric, catalog, &plan.summary, &perf_req, req, check).map_err(
        |e| match e {
            compare::CheckedError::NoEffect(e) => refused(e),
            compare::CheckedError::Perf(e) => bad(MODEL, format!("{MODEL}: {e}")),
        },
    )?;
    let mut rows = String::from(r#"<table class="step"><tbody>"#);
    if let Some(b) = &p.breakdown {
        for (label, v) in [
            ("compute", b.compute_s),
            ("tensor-parallel (exposed)", b.tensor_parallel_s),
            ("expert-parallel (exposed)", b.expert_parallel_s),
            ("pipeline send/recv (exposed)", b.pipeline_parallel_s),
            ("data-parallel (exposed)", b.data_parallel_exposed_s),
            ("pipeline bubble", b.pipeline_bubble_s),
        ] {
            rows.push_str(&format!(
                r#"<tr><td>{label}</td><td class="num">{v:.3} s</td></tr>"#
            ));
        }
    }
    rows.push_str("</tbody></table>");
    // A layout fitted to the GPU's memory, or a model state that does not fit: said under the step.
    for n in &p.notes {
        rows.push_str(&format!(
            r#"<p class="note">{}</p>"#,
            railyard_report::svg::esc(n)
        ));
    }
    Ok(json!({
        "model": name,
        "layout": p.layout,
        "step_time_s": p.step_time_s,
        "tokens_per_s": p.tokens_per_s,
        "network_usd_per_million_tokens": p.network_usd_per_million_tokens,
        "breakdown": p.breakdown,
        "breakdown_html": rows,
        "notes": p.notes,
        // Each predicted figure's interval (study's error bands), for the comparison's verdict.
        "error_band": p.error_band,
    }))
}

/// `POST /api/compare`: the comparison charts of the page's designs.
pub fn compare(body: &[u8]) -> Response {
    let v = match json::parse(body) {
        Ok(v) => v,
        Err(r) => return *r,
    };
    let Some(list) = v.get("designs").and_then(Value::as_array) else {
        return Response::error(400, "designs", "designs: expected a list of designs");
    };
    if list.len() > MAX_COMPARED {
        return Response::error(
            400,
            "designs",
            &format!(
                "designs: {} is more than this server charts; valid: at most {MAX_COMPARED}",
                list.len()
            ),
        );
    }
    // Every number is finite and at least 0; `cost_usd` is required, the others may be absent or
    // null (a design without a training step has no tokens/s), and a value of another kind is
    // refused with the range, not ignored.
    let num = |i: usize, d: &Value, k: &str| -> Result<Option<f64>, Response> {
        match d.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Some)
                .ok_or_else(|| {
                    Response::error(
                        400,
                        "designs",
                        &format!("designs[{i}].{k}: {v} is not a number from 0 up; valid: a number, at least 0"),
                    )
                }),
        }
    };
    let mut points = Vec::new();
    let mut tokens = Vec::new();
    let mut per_m = Vec::new();
    // Each design's network $ per million tokens with its error band, for the verdict.
    let mut figures = Vec::new();
    for (i, d) in list.iter().enumerate() {
        let label = d
            .get("label")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(16)
            .collect::<String>();
        let numbers = (|| {
            Ok::<_, Response>((
                num(i, d, "cost_usd")?,
                num(i, d, "tokens_per_s")?,
                num(i, d, "network_usd_per_million_tokens")?,
                num(i, d, "bisection_tbs")?,
            ))
        })();
        let (cost, tokens_per_s, usd_per_m, bisection) = match numbers {
            Ok(n) => n,
            Err(e) => return e,
        };
        let Some(cost) = cost else {
            return Response::error(
                400,
                "designs",
                &format!("designs[{i}].cost_usd: missing; valid: a number, at least 0"),
            );
        };
        const BAND: &str = "network_usd_per_million_tokens_band";
        let band = match d.get(BAND) {
            None | Some(Value::Null) => None,
            Some(v) => match serde_json::from_value::<compare::band::ErrorBand>(v.clone()) {
                Ok(b) => Some(b),
                Err(e) => {
                    return Response::error(
                        400,
                        "designs",
                        &format!("designs[{i}].{BAND}: {e}; valid: the error_band of /api/plan's training step (lo, hi, half_width_percent, source)"),
                    )
                }
            },
        };
        if let Some(x) = usd_per_m {
            figures.push((label.clone(), x, band));
        }
        tokens.push(tokens_per_s);
        per_m.push((label.clone(), usd_per_m));
        points.push(chart::Point {
            label,
            x: bisection.unwrap_or(0.0),
            y: cost,
        });
    }
    let by_tokens = !tokens.is_empty() && tokens.iter().all(Option::is_some);
    if by_tokens {
        for (p, t) in points.iter_mut().zip(&tokens) {
            p.x = t.unwrap_or(0.0);
        }
    }
    let x_label = if by_tokens {
        "tokens/s"
    } else {
        "bisection (Tb/s)"
    };
    let bars: Option<Vec<(String, f64)>> =
        per_m.into_iter().map(|(l, v)| v.map(|v| (l, v))).collect();
    Response::json(
        200,
        &json!({
            "pareto_svg": chart::pareto_svg(x_label, "network cost ($)", &points),
            "cost_per_token_svg": bars
                .filter(|b| !b.is_empty())
                .map(|b| chart::bars_svg("Network $ per million tokens", &b, 4)),
            // A winner only beyond the error bands, else "tied within model error" (study's
            // verdict on the figure the page's designs share).
            "verdict": compare::verdict_on("network cost per million tokens", &figures)
                .and_then(|v| compare::decision(&[v])),
        }),
    )
}

/// Checks a simulation request before any streaming starts: the design is small enough
/// ([`sim_job`]) and builds.
pub fn sim_check(body: &[u8]) -> Result<(Catalog, Fabric), Response> {
    sim_job(body)?.build()
}

/// `POST /api/sim` after [`sim_check`]: simulates, calling `emit` with one NDJSON line per phase,
/// and returns the final line.
pub fn sim(catalog: &Catalog, fabric: &Fabric, emit: &mut dyn FnMut(&str)) -> String {
    match sim_until(catalog, fabric, emit, Cancel::NEVER) {
        Ok(last) => last,
        // `Cancel::NEVER` is never set.
        Err(Cancelled) => cancelled_line("cancelled"),
    }
}

/// [`sim`] that stops with [`Cancelled`] soon after `cancel` is set (the server sets it when the
/// client goes away or a newer request from the same client supersedes this one).
pub fn sim_until(
    catalog: &Catalog,
    fabric: &Fabric,
    emit: &mut dyn FnMut(&str),
    cancel: Cancel<'_>,
) -> Result<String, Cancelled> {
    let mut progress = |m: &str| emit(&format!("{}\n", json!({ "progress": m })));
    let Busbw { curves, notes } = busbw::simulate_until(
        fabric,
        catalog,
        &railyard_sim::fabric_net::NetConfig::default(),
        &mut progress,
        cancel,
    )?;
    let svg = if curves.is_empty() {
        String::new()
    } else {
        chart::busbw_svg("Predicted busbw against message size", &curves)
    };
    let curves: Vec<Value> = curves
        .iter()
        .map(|c| json!({ "collective": c.collective, "points": c.points }))
        .collect();
    Ok(format!(
        "{}\n",
        json!({ "result": { "curves": curves, "notes": notes, "busbw_svg": svg } })
    ))
}

/// The last NDJSON line of a simulation stopped before its result: `{"cancelled": why}`.
pub fn cancelled_line(why: &str) -> String {
    format!("{}\n", json!({ "cancelled": why }))
}

/// Longest client id `/api/sim?client=ID` takes.
pub const MAX_CLIENT_ID: usize = 64;

/// The client id of `/api/sim?client=ID` (letters, digits, `-`, `_`, `.`; at most
/// [`MAX_CLIENT_ID`]), `None` without one. A newer simulation with the same id supersedes an older
/// one still running or waiting. A bad id answers 400 naming `client`.
pub fn client_id(path: &str) -> Result<Option<String>, Response> {
    let Some((_, query)) = path.split_once('?') else {
        return Ok(None);
    };
    let mut id = None;
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "client" {
            continue;
        }
        let ok = !value.is_empty()
            && value.len() <= MAX_CLIENT_ID
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !ok {
            return Err(Response::error(
                400,
                "client",
                &format!("client: expected 1 to {MAX_CLIENT_ID} letters, digits, '-', '_' or '.'"),
            ));
        }
        id = Some(value.to_string());
    }
    Ok(id)
}

/// `GET /api/presets`: name, description and the form's fields of every built-in design.
pub fn presets_json() -> Value {
    let list: Vec<Value> = presets::PRESETS
        .iter()
        .filter_map(|p| {
            let s = presets::load(p.name).ok()?;
            let mut m = Map::new();
            m.insert("name".into(), json!(p.name));
            m.insert("description".into(), json!(s.description));
            m.insert("default".into(), json!(p.name == presets::DEFAULT));
            for k in DESIGN_KEYS.iter().filter(|k| k.fronts.form) {
                if let Some(v) = (k.read)(&s) {
                    m.insert(k.json.into(), json!(v));
                }
            }
            Some(Value::Object(m))
        })
        .collect();
    json!({ "presets": list })
}

/// `GET /api/keys`: the design keys the JSON API takes, from [`DESIGN_KEYS`], with their valid
/// values (this server's [`REQUEST_LIMITS`] applied) and whether the form shows them. The page
/// builds its form from this (inlined as `KEYS`). Built once: it depends on compiled-in data only.
pub fn keys_json() -> Value {
    static KEYS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    KEYS.get_or_init(|| {
        let catalog = Catalog::builtin();
        let keys: Vec<KeyInfo> = DESIGN_KEYS
            .iter()
            .filter(|k| k.fronts.json)
            .map(|k| {
                let mut info = k.describe(&catalog);
                if let Some((_, max)) = request_range(k) {
                    info.max = Some(keys::Value::Count(max));
                    info.valid = valid_here(k);
                }
                info
            })
            .collect();
        // The run keys the API takes, for `model`'s training step on /api/plan.
        let run_keys: Vec<KeyInfo> = run::RUN_KEYS
            .iter()
            .filter(|k| k.fronts.json)
            .map(|k| k.describe(&catalog))
            .collect();
        json!({ "keys": keys, "run_keys": run_keys })
    })
    .clone()
}

/// The app page: design forms side by side (two at first; the page adds and removes more), each
/// with its plan, cost, drawing, busbw, training step and download links, and the comparison of
/// them all. The script builds each form from the template and its design-key fields from `KEYS`.
pub fn page() -> String {
    let preset_opts: String = presets::PRESETS
        .iter()
        .map(|p| format!("<option>{}</option>", railyard_report::svg::esc(p.name)))
        .collect();
    let model_opts: String = compare::MODELS
        .iter()
        .map(|(name, _)| format!("<option>{}</option>", railyard_report::svg::esc(name)))
        .collect();
    let form = format!(
        r#"<div class="design"><h2><span class="title">Design</span> <button type="button" class="remove" title="remove this design">remove</button></h2><form autocomplete="off">
<label>preset <select name="preset">{preset_opts}</select></label>
<label title="a spec file (TOML, at most {MAX_SPEC} bytes), validated as railyard plan --spec does">spec file <input name="spec_file" type="file" accept=".toml,text/plain"></label>
<label title="a training model: its step on this design (TP the GPUs per server, DP the rest; at every size this server plans)">training model <select name="model"><option value="">none</option>{model_opts}</select></label>
<label><input name="simulate" type="checkbox" checked> simulate busbw</label>
</form><p class="status muted" role="status"></p><p class="line"></p><div class="cards-box"></div>
<div class="train"></div><p class="downloads"><a href="" class="get-report" download="report.html">report.html</a> <a href="" class="get-cabling" download="cabling.csv">cabling.csv</a></p>
<div class="figure drawing"></div><div class="figure cost"></div><div class="figure busbw"></div></div>"#
    );
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>railyard</title><style>{css}
{app_css}</style></head><body>
<header><h1>railyard</h1><p class="muted">Design an RDMA fabric for a GPU cluster: change a field and the plan, cost, drawing, predicted bus bandwidth and training step follow. Designs side by side: add as many as you compare.</p></header>
<div class="designs" id="designs"></div>
<p><button type="button" id="add-design">add a design</button></p>
<section id="comparison"><h2>Comparison</h2><p class="muted">Every design on the page: network cost against what it delivers (tokens/s of the training model where every design has one, else bisection), the Pareto front drawn.</p><div class="table-box"><table id="compare-table"></table></div><p class="verdict"></p><div class="figure pareto"></div><div class="figure cost-per-token"></div></section>
<template id="design-template">{form}</template>
<script>const PRESETS = {presets};
const KEYS = {keys};
{script}</script>
</body></html>
"#,
        css = html::CSS,
        app_css = APP_CSS,
        presets = script_json(&presets_json()),
        keys = script_json(&keys_json()),
        script = APP_SCRIPT,
    )
}

/// JSON for inlining in a `<script>`: `<` escaped, so no string in it can close the element.
fn script_json(v: &Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

/// The page's script (`assets/app.js`): fill a form from a preset, post the design on every change
/// (debounced), abort the form's stale requests, retry quietly while the server is busy, show the
/// answers, stream simulation progress. `node --check` parses it in the tests.
pub const APP_SCRIPT: &str = include_str!("../assets/app.js");

/// The page's own styles (`assets/app.css`), after the report's [`html::CSS`].
pub const APP_CSS: &str = include_str!("../assets/app.css");
