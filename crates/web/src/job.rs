//! The requests of the API that compute, checked before any work is done: the design parses, stays
//! within what this server plans per request, and says how big it is ([`Size`]), so the server can
//! choose how to run it before it spends memory on it. Their answers come in pieces of about a
//! megabyte ([`Answer`]), which the server can let go of one by one as the client takes them.
//!
//! Why the limits on GPUs and NICs: planning grows with the fabric's endpoints, not with the server
//! count alone. 16,384 servers of 8 GPUs and 8 NICs plan in about 220 MB (BENCHMARKS.md, "Planning
//! 131,072 GPUs"); the same servers with 72 GPUs each took 608 MB, and with 16 storage NICs each
//! 534 MB, measured on `railyard plan` (2026-12-07). A request plans at most what the benchmark
//! measures; the CLI plans more.

use crate::{bad, Bad, DesignRequest, Response, MAX_SERVERS, MAX_SIM_GPUS, SPEC};
use railyard_catalog::Catalog;
use railyard_fabric::Fabric;
use railyard_report::{chart, drawing, html};
use railyard_spec::ClusterSpec;
use railyard_study::busbw::Busbw;
use serde_json::{json, Value};

/// GPUs a planning request may ask for: 16,384 servers of 8.
pub const MAX_PLAN_GPUS: u64 = 131_072;
/// NICs, compute and storage, a planning request may ask for: 16,384 servers of 8 compute NICs and
/// 1 storage NIC (so `dgx-a100-superpod` and `roce-400g-sn5600` reach [`MAX_SERVERS`]).
pub const MAX_PLAN_NICS: u64 = 147_456;
/// Bytes of an answer piece: rows gather up to this before a new piece starts.
pub const PIECE: usize = 1 << 20;

/// How big a design is: what planning it costs grows with these.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    pub servers: u64,
    pub gpus: u64,
    /// Compute and storage NICs.
    pub nics: u64,
    /// GPUs a training step is predicted on (`model` given on `/api/plan`; 0 otherwise): the step's
    /// time grows with them, not with the NICs, so a server may run it on a lane of its own.
    pub train_gpus: u64,
}

impl Size {
    fn of(spec: &ClusterSpec) -> Size {
        let s = &spec.servers;
        let servers = u64::from(s.count);
        Size {
            servers,
            gpus: servers * u64::from(s.gpus_per_server),
            nics: servers * u64::from(s.compute_nics + s.storage_nics),
            train_gpus: 0,
        }
    }

    /// GPUs and NICs: the fabric's endpoints, what its nodes, ports and links grow with.
    pub fn endpoints(&self) -> u64 {
        self.gpus + self.nics
    }
}

/// An answer in pieces: status, content type and the body as consecutive byte strings.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub pieces: Vec<Vec<u8>>,
}

impl Answer {
    /// Bytes of the body.
    pub fn len(&self) -> usize {
        self.pieces.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The answer in one piece.
    pub fn into_response(self) -> Response {
        Response {
            status: self.status,
            content_type: self.content_type,
            body: self.pieces.concat(),
        }
    }
}

impl From<Response> for Answer {
    fn from(r: Response) -> Answer {
        Answer {
            status: r.status,
            content_type: r.content_type,
            pieces: vec![r.body],
        }
    }
}

/// Pieces of [`PIECE`] bytes (the last one shorter), as a writer.
#[derive(Default)]
struct Pieces(Vec<Vec<u8>>);

impl std::io::Write for Pieces {
    fn write(&mut self, mut buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len();
        while !buf.is_empty() {
            match self.0.last_mut() {
                Some(last) if last.len() < PIECE => {
                    let take = buf.len().min(PIECE - last.len());
                    last.extend_from_slice(&buf[..take]);
                    buf = &buf[take..];
                }
                _ => self.0.push(Vec::with_capacity(PIECE)),
            }
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a computing request asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum What {
    Plan,
    Report,
    Cabling,
}

/// A design request that parsed, with its validated spec, within this server's limits.
struct Design {
    req: DesignRequest,
    spec: ClusterSpec,
    catalog: Catalog,
    size: Size,
}

impl Design {
    /// Parses and validates `body`; refuses a design past [`MAX_SERVERS`] (an uploaded spec's count
    /// included), `max_gpus` or [`MAX_PLAN_NICS`], naming the key that made it so big.
    fn check(body: &[u8], max_gpus: u64, what: &str) -> Result<Design, Bad> {
        let req = DesignRequest::parse(body)?;
        let (spec, catalog) = req.spec()?;
        let size = Size::of(&spec);
        let s = &spec.servers;
        let limit = |fields: &[&str], problem: String, valid: String| {
            let key = req.size_key(fields);
            bad(
                key,
                format!("{key}: {problem}; valid: {valid} (use the CLI for more)"),
            )
        };
        if size.servers > u64::from(MAX_SERVERS) {
            return Err(limit(
                &["servers.count"],
                format!(
                    "{} servers are more than this server {what} per request",
                    s.count
                ),
                format!("1 to {MAX_SERVERS} servers"),
            ));
        }
        if size.gpus > max_gpus {
            return Err(limit(
                &["servers.count", "servers.gpus_per_server"],
                format!(
                    "{} GPUs ({} servers x {}) are more than this server {what} per request",
                    size.gpus, s.count, s.gpus_per_server
                ),
                format!("at most {max_gpus} GPUs"),
            ));
        }
        if size.nics > MAX_PLAN_NICS {
            return Err(limit(
                &["servers.count", "servers.compute_nics"],
                format!(
                    "{} NICs ({} servers x {} compute + {} storage) are more than this server {what} per request",
                    size.nics, s.count, s.compute_nics, s.storage_nics
                ),
                format!("at most {MAX_PLAN_NICS} NICs"),
            ));
        }
        Ok(Design {
            req,
            spec,
            catalog,
            size,
        })
    }
}

impl DesignRequest {
    /// The run keys (`pxn`, `sharp`) set how the training step of `model` runs, which only
    /// `/api/plan` predicts (`steps`): given elsewhere, or without a model, they are refused.
    fn run_keys_in_effect(&self, path: &str, steps: bool) -> Result<(), Bad> {
        let Some(key) = self.run_given.first() else {
            return Ok(());
        };
        let why = "it sets how the training step of `model` runs, which /api/plan predicts";
        if !steps {
            return Err(bad(
                key.json,
                format!(
                    "{}: has no effect on {path}: {why}; give it to /api/plan with model",
                    key.json
                ),
            ));
        }
        if self.model.is_none() {
            return Err(bad(
                key.json,
                format!(
                    "{}: has no effect without model: {why}; give model",
                    key.json
                ),
            ));
        }
        Ok(())
    }

    /// The request key to name for a design too big: of the keys behind `fields` (spec fields),
    /// the first the request gave, else the first field's (`spec` for an uploaded spec's).
    fn size_key(&self, fields: &[&str]) -> &'static str {
        fields
            .iter()
            .map(|f| self.request_key(f))
            .find(|k| self.given.contains(k))
            .unwrap_or_else(|| match self.spec {
                Some(_) => SPEC,
                None => self.request_key(fields[0]),
            })
    }
}

/// A planning request (`/api/plan`, `/api/report`, `/api/cabling`), checked, not yet run.
pub struct Job {
    what: What,
    design: Design,
}

/// Checks a `POST` to `path` (`/api/plan`, `/api/report` or `/api/cabling`) before any work: the
/// body is a design request of at most [`MAX_PLAN_GPUS`] GPUs and [`MAX_PLAN_NICS`] NICs.
pub fn job(path: &str, body: &[u8]) -> Result<Job, Response> {
    let what = match path {
        "/api/plan" => What::Plan,
        "/api/report" => What::Report,
        "/api/cabling" => What::Cabling,
        _ => {
            return Err(Response::error(
                404,
                "path",
                &format!("no such page: {path}"),
            ))
        }
    };
    let mut design = Design::check(body, MAX_PLAN_GPUS, "plans").map_err(|b| *b)?;
    design
        .req
        .run_keys_in_effect(path, what == What::Plan)
        .map_err(|b| *b)?;
    // A model's step is predicted on `/api/plan` only (elsewhere `model` is not used).
    if what == What::Plan && design.req.model.is_some() {
        design.size.train_gpus = design.size.gpus;
    }
    Ok(Job { what, design })
}

impl Job {
    pub fn size(&self) -> Size {
        self.design.size
    }

    /// Plans the design and renders the answer: the plan's JSON, report.html (no busbw plots: the
    /// page has them) or cabling.csv in pieces.
    pub fn run(self) -> Answer {
        let Design {
            req, spec, catalog, ..
        } = self.design;
        let planned = match req.plan_spec(&spec, &catalog) {
            Ok(p) => p,
            Err(r) => return (*r).into(),
        };
        let railyard_plan::Planned { fabric, plan, .. } = planned;
        match self.what {
            What::Plan => match plan_json(&req, &spec, &catalog, &fabric, &plan) {
                Ok(v) => Response::json(200, &v).into(),
                Err(r) => (*r).into(),
            },
            What::Report => Response {
                status: 200,
                content_type: "text/html; charset=utf-8",
                body: railyard_report::report_html(&railyard_report::DesignReport {
                    fabric: &fabric,
                    plan: &plan,
                    description: spec.description.clone(),
                    busbw: Busbw::default(),
                })
                .into_bytes(),
            }
            .into(),
            What::Cabling => {
                let places = railyard_fabric::layout::rack_places_of(&fabric, &spec, &catalog);
                let mut out = Pieces::default();
                railyard_plan::output::write_cabling_csv(
                    &fabric,
                    &catalog,
                    Some(&places),
                    &mut out,
                )
                .expect("writing to memory does not fail");
                Answer {
                    status: 200,
                    content_type: "text/csv; charset=utf-8",
                    pieces: out.0,
                }
            }
        }
    }
}

/// `POST /api/plan`'s answer: summary, BOM, drawing, cost chart, the form's fields and, with a
/// model, the training step.
fn plan_json(
    req: &DesignRequest,
    spec: &ClusterSpec,
    catalog: &Catalog,
    fabric: &Fabric,
    plan: &railyard_plan::Plan,
) -> Result<Value, Bad> {
    let s = &plan.summary;
    let train = match &req.model {
        Some(_) => super::train(req, fabric, catalog, plan)?,
        None => Value::Null,
    };
    Ok(json!({
        "name": s.name,
        "description": spec.description,
        "summary": s,
        "bom": plan.bom,
        "summary_html": format!(
            "{}{}{}",
            html::summary_cards(s),
            html::design_choices(s),
            html::networks(s)
        ),
        "design_line": html::design_line(s),
        "drawing_svg": drawing::topology_svg(
            fabric,
            s.racks.as_ref().and_then(|r| r.nvlink_domain.as_ref())
        ),
        "cost_svg": chart::cost_svg(plan),
        "fields": super::form_fields(spec),
        "train": train,
    }))
}

/// A simulation request (`/api/sim`), checked, not yet built.
pub struct SimJob(Design);

/// Checks a simulation request before any work: a design request of at most [`MAX_SIM_GPUS`] GPUs.
pub fn sim_job(body: &[u8]) -> Result<SimJob, Response> {
    let design = Design::check(body, MAX_SIM_GPUS, "simulates").map_err(|b| *b)?;
    design
        .req
        .run_keys_in_effect("/api/sim", false)
        .map_err(|b| *b)?;
    Ok(SimJob(design))
}

impl SimJob {
    pub fn size(&self) -> Size {
        self.0.size
    }

    /// Builds the design's fabric to simulate.
    pub fn build(self) -> Result<(Catalog, Fabric), Response> {
        let Design {
            req, spec, catalog, ..
        } = self.0;
        let fabric = req.build_spec(&spec, &catalog).map_err(|b| *b)?;
        Ok((catalog, fabric))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A design's size counts its GPUs and its compute and storage NICs (the default preset: 127
    /// DGX H100 of 8 GPUs, 8 compute and 2 storage NICs).
    #[test]
    fn a_size_counts_gpus_and_nics() {
        let j = job("/api/plan", b"{}").ok().unwrap();
        assert_eq!(
            j.size(),
            Size {
                servers: 127,
                gpus: 1016,
                nics: 1270,
                train_gpus: 0,
            }
        );
        let j = job("/api/plan", br#"{"model": "llama3-8b"}"#).ok().unwrap();
        assert_eq!(j.size().train_gpus, 1016);
        let j = job("/api/report", br#"{"model": "llama3-8b"}"#)
            .ok()
            .unwrap();
        assert_eq!(j.size().train_gpus, 0, "report.html has no training step");
        assert_eq!(j.size().endpoints(), 2286);
        let j = sim_job(br#"{"preset": "seed-two-switch", "servers": 4}"#)
            .ok()
            .unwrap();
        assert_eq!(j.size().gpus, 32);
    }

    /// cabling.csv comes in pieces of at most [`PIECE`] bytes that join to the one-piece file.
    #[test]
    fn cabling_comes_in_pieces_that_join_to_the_file() {
        let body = br#"{"preset": "b200-xdr"}"#;
        let a = job("/api/cabling", body).ok().unwrap().run();
        assert_eq!((a.status, a.content_type), (200, "text/csv; charset=utf-8"));
        assert!(a.pieces.len() >= 2, "{} pieces", a.pieces.len());
        assert!(a.pieces.iter().all(|p| !p.is_empty() && p.len() <= PIECE));
        let req = DesignRequest::parse(body).ok().unwrap();
        let (spec, catalog, planned) = req.plan().ok().unwrap();
        let places = railyard_fabric::layout::rack_places_of(&planned.fabric, &spec, &catalog);
        let whole = railyard_plan::output::cabling_csv(&planned.fabric, &catalog, Some(&places))
            .into_bytes();
        assert_eq!(a.len(), whole.len());
        assert!(a.into_response().body == whole);
    }

    /// A design past the limits is refused from its spec, naming the key that made it so big.
    #[test]
    fn designs_past_the_limits_name_the_key() {
        for (body, field) in [
            (
                r#"{"preset": "b200-xdr", "servers": 16384, "gpus_per_server": 16}"#,
                "servers",
            ),
            (
                r#"{"preset": "b200-xdr", "servers": 2048, "gpus_per_server": 72}"#,
                "servers",
            ),
            (
                r#"{"preset": "b200-xdr", "gpus_per_server": 72, "servers": 2048}"#,
                "servers",
            ),
        ] {
            let r = job("/api/plan", body.as_bytes()).err().unwrap();
            assert_eq!(r.status, 400, "{body}");
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(v["field"], field, "{body}: {v}");
        }
        // The sim limit is lower: 16,384 GPUs.
        let r = sim_job(br#"{"preset": "b200-xdr", "servers": 2049}"#)
            .err()
            .unwrap();
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["field"], "servers");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("more than this server simulates"),
            "{v}"
        );
    }
}
