//! The web app behind `railyard serve`, as pure functions: a request's method, path and body in, a
//! response out. The HTTP layer (the CLI) reads sockets and writes bytes; nothing here touches the
//! file system, and every design a request names is built from the compiled-in presets and catalog.
//!
//! API (JSON):
//! - `GET /api/presets`: the built-in designs with the form's fields filled in.
//! - `POST /api/plan` with a [`DesignRequest`]: summary, BOM, drawing and cost chart.
//! - `POST /api/sim[?client=ID]` with a [`DesignRequest`]: predicted busbw curves, streamed as
//!   NDJSON lines (`{"progress": "..."}` while simulating, then `{"result": {...}}`, or
//!   `{"cancelled": "..."}` when a newer request with the same client id superseded it).
//!
//! Invalid input answers 400 with `{"error": MESSAGE, "field": NAME}`, NAME a request key.

use crate::{chart, drawing, html};
use railyard_catalog::{Catalog, Tech};
use railyard_fabric::Fabric;
use railyard_plan::Plan;
use railyard_sim::{Cancel, Cancelled};
use railyard_spec::{presets, ClusterSpec, Overrides, Topology};
use railyard_study::busbw::{self, Busbw};
use serde_json::{json, Map, Value};

/// Request bodies above this many bytes answer 413.
pub const MAX_BODY: usize = 16 * 1024;
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

/// The form's fields: every key optional, unknown keys rejected.
#[derive(Debug, Clone, Default)]
pub struct DesignRequest {
    pub preset: Option<String>,
    pub overrides: Overrides,
}

/// Keys a design request may have, with the spec fields they set (for mapping errors back).
const KEYS: [(&str, &[&str]); 12] = [
    ("preset", &["preset"]),
    ("servers", &["servers.count"]),
    ("gpu", &["servers.gpu"]),
    (
        "gpus_per_server",
        &["servers.gpus_per_server", "servers.pcie_switches"],
    ),
    ("nics_per_server", &["servers.compute_nics", "servers.nic"]),
    ("nic", &["servers.nic"]),
    ("tech", &["fabric.tech", "fabric.port_gbps"]),
    ("topology", &["fabric.topology", "fabric.isl_links"]),
    ("switch", &["fabric.switch"]),
    ("oversubscription", &["fabric.oversubscription"]),
    ("gpudirect", &["servers.gpudirect"]),
    ("su_size", &["fabric.su_size"]),
];

/// The request key behind a spec or build error's field (`servers.count` -> `servers`).
fn request_key(field: &str) -> &'static str {
    KEYS.iter()
        .find(|(_, fields)| fields.contains(&field))
        .map_or("design", |(k, _)| k)
}

type Bad = Box<Response>;

fn bad(field: &str, message: impl AsRef<str>) -> Bad {
    Box::new(Response::error(400, field, message.as_ref()))
}

impl DesignRequest {
    /// Parses a JSON object; the error names the offending key.
    pub fn parse(body: &[u8]) -> Result<DesignRequest, Bad> {
        let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(body).map_err(|e| bad("body", format!("not JSON: {e}")))?
        };
        let Value::Object(obj) = v else {
            return Err(bad("body", "expected a JSON object of design fields"));
        };
        let mut r = DesignRequest::default();
        let o = &mut r.overrides;
        for (key, value) in &obj {
            let k = key.as_str();
            let whole = |v: &Value| -> Result<u32, Bad> {
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        bad(
                            k,
                            format!("{k}: expected a whole number above zero, got {v}"),
                        )
                    })
            };
            let text = |v: &Value| -> Result<String, Bad> {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(k, format!("{k}: expected a string, got {v}")))
            };
            match k {
                "preset" => {
                    let name = text(value)?;
                    presets::find(&name).map_err(|e| bad(k, e.message))?;
                    r.preset = Some(name);
                }
                "servers" => {
                    let n = whole(value)?;
                    if n > MAX_SERVERS {
                        return Err(bad(
                            k,
                            format!("servers: {n} is more than this server plans per request; valid: 1 to {MAX_SERVERS} (use the CLI for more)"),
                        ));
                    }
                    o.servers = Some(n);
                }
                "gpus_per_server" => o.gpus_per_server = Some(whole(value)?),
                "nics_per_server" => o.nics_per_server = Some(whole(value)?),
                "su_size" => o.su_size = Some(whole(value)?),
                "gpu" => o.gpu = Some(text(value)?),
                "nic" => o.nic = Some(text(value)?),
                "switch" => o.switch = Some(text(value)?),
                "tech" => o.tech = Some(text(value)?.parse::<Tech>().map_err(|e| bad(k, e))?),
                "topology" => {
                    o.topology = Some(text(value)?.parse::<Topology>().map_err(|e| bad(k, e))?)
                }
                "oversubscription" => {
                    o.oversubscription =
                        Some(value.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
                            bad(
                                k,
                                format!("oversubscription: expected a number, got {value}"),
                            )
                        })?)
                }
                "gpudirect" => {
                    o.gpudirect = Some(value.as_bool().ok_or_else(|| {
                        bad(k, format!("gpudirect: expected true or false, got {value}"))
                    })?)
                }
                _ => {
                    let valid: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                    return Err(bad(
                        k,
                        format!("unknown key `{k}`; valid: {}", valid.join(", ")),
                    ));
                }
            }
        }
        Ok(r)
    }

    /// The validated spec, the catalog and the built fabric.
    pub fn build(&self) -> Result<(ClusterSpec, Catalog, Fabric), Bad> {
        let name = self.preset.as_deref().unwrap_or(presets::DEFAULT);
        let mut raw = presets::raw(name).map_err(|e| bad("preset", e.message))?;
        self.overrides
            .apply(&mut raw)
            .map_err(|e| bad(request_key(&e.field), e.to_string()))?;
        let spec = ClusterSpec::from_raw(&raw, &format!("preset {name}"))
            .map_err(|e| bad(request_key(&e.field), e.to_string()))?;
        let catalog = Catalog::builtin();
        let fabric = railyard_fabric::build(&spec, &catalog)
            .map_err(|e| bad(request_key(&e.field), e.to_string()))?;
        Ok((spec, catalog, fabric))
    }
}

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
        ("POST", "/api/plan") => plan(body),
        (_, "/" | "/index.html" | "/api/presets" | "/api/plan" | "/api/sim") => {
            Response::error(405, "method", &format!("{method} is not allowed on {path}"))
        }
        _ => Response::error(404, "path", &format!("no such page: {path}")),
    }
}

/// `POST /api/plan`.
pub fn plan(body: &[u8]) -> Response {
    let req = match DesignRequest::parse(body) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    let (spec, catalog, fabric) = match req.build() {
        Ok(x) => x,
        Err(resp) => return *resp,
    };
    let plan = Plan::new(&fabric, &catalog);
    let s = &plan.summary;
    Response::json(
        200,
        &json!({
            "name": s.name,
            "description": spec.description,
            "summary": s,
            "bom": plan.bom,
            "summary_html": html::summary_cards(s),
            "design_line": html::design_line(s),
            "drawing_svg": drawing::topology_svg(&fabric),
            "cost_svg": chart::cost_svg(&plan),
        }),
    )
}

/// Checks a simulation request before any streaming starts: the design builds and is small enough.
pub fn sim_check(body: &[u8]) -> Result<(Catalog, Fabric), Response> {
    let req = DesignRequest::parse(body).map_err(|b| *b)?;
    let (_, catalog, fabric) = req.build().map_err(|b| *b)?;
    let gpus = fabric.servers.len() as u64 * u64::from(fabric.meta.gpus_per_server);
    if gpus > MAX_SIM_GPUS {
        return Err(Response::error(
            400,
            "servers",
            &format!("{gpus} GPUs are more than this server simulates per request; valid: at most {MAX_SIM_GPUS} GPUs (use `railyard report` for more)"),
        ));
    }
    Ok((catalog, fabric))
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
    let Busbw { curves, notes } = busbw::simulate_until(fabric, catalog, &mut progress, cancel)?;
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
            Some(json!({
                "name": p.name,
                "description": s.description,
                "default": p.name == presets::DEFAULT,
                "servers": s.servers.count,
                "gpu": s.servers.gpu,
                "gpus_per_server": s.servers.gpus_per_server,
                "nics_per_server": s.servers.compute_nics,
                "tech": s.fabric.tech.as_str(),
                "topology": s.fabric.topology.as_str(),
                "oversubscription": s.fabric.oversubscription,
                "gpudirect": s.servers.gpudirect,
            }))
        })
        .collect();
    json!({ "presets": list })
}

/// The app page: two design forms side by side, each with its plan, cost, drawing and busbw.
pub fn page() -> String {
    let catalog = Catalog::builtin();
    let options = |items: &mut dyn Iterator<Item = String>| -> String {
        items
            .map(|v| format!("<option>{}</option>", crate::svg::esc(&v)))
            .collect()
    };
    let gpus = options(&mut catalog.gpus.keys().cloned());
    let techs = options(&mut Tech::ALL.iter().map(|t| t.as_str().to_string()));
    let topologies = options(&mut Topology::ALL.iter().map(|t| t.as_str().to_string()));
    let preset_opts = options(&mut presets::PRESETS.iter().map(|p| p.name.to_string()));
    let form = |side: &str| -> String {
        format!(
            r#"<div class="design" id="design-{side}"><h2>Design {side}</h2><form autocomplete="off">
<label>preset <select name="preset">{preset_opts}</select></label>
<label>servers <input name="servers" type="number" min="1" max="{MAX_SERVERS}"></label>
<label>GPU <select name="gpu">{gpus}</select></label>
<label>GPUs per server <input name="gpus_per_server" type="number" min="1"></label>
<label>NICs per server <input name="nics_per_server" type="number" min="1"></label>
<label>technology <select name="tech">{techs}</select></label>
<label>topology <select name="topology">{topologies}</select></label>
<label>oversubscription <input name="oversubscription" type="number" min="1" step="0.5"></label>
<label><input name="gpudirect" type="checkbox"> GPUDirect RDMA</label>
<label><input name="simulate" type="checkbox" checked> simulate busbw</label>
</form><p class="status muted" role="status"></p><p class="line"></p><div class="cards-box"></div>
<div class="figure drawing"></div><div class="figure cost"></div><div class="figure busbw"></div></div>"#
        )
    };
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>railyard</title><style>{css}
{app_css}</style></head><body>
<header><h1>railyard</h1><p class="muted">Design an RDMA fabric for a GPU cluster: change a field and the plan, cost, drawing and predicted bus bandwidth follow. Two designs side by side.</p></header>
<div class="designs">{a}{b}</div>
<script>const PRESETS = {presets};
{script}</script>
</body></html>
"#,
        css = html::CSS,
        app_css = APP_CSS,
        a = form("A"),
        b = form("B"),
        presets = presets_json(),
        script = APP_SCRIPT,
    )
}

/// The page's script (`assets/app.js`): fill a form from a preset, post the design on every change
/// (debounced), abort the form's stale requests, retry quietly while the server is busy, show the
/// answers, stream simulation progress. `node --check` parses it in the tests.
pub const APP_SCRIPT: &str = include_str!("../assets/app.js");

/// The page's own styles (`assets/app.css`), after the report's [`html::CSS`].
pub const APP_CSS: &str = include_str!("../assets/app.css");
