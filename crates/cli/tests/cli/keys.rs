//! The one table of design keys (`railyard_spec::keys::DESIGN_KEYS`) through the real binary and the
//! real web server: every key is a flag, a `compare` pair and a JSON key; a valid value is taken, a
//! bad one is refused with exit status 2 (400 on the web) and the same message, `PROBLEM; valid:
//! VALID`, after each front end's spelling of the key; a key outside the table is refused
//! everywhere. The web form's fields are checked in Chromium (browser.rs); the parsers of every
//! command, value by value, in crates/cli/src/design_tests.rs.

use crate::common::{request, Server, BIN};
use railyard_catalog::Catalog;
use railyard_spec::keys::{self, Front, DESIGN_KEYS};
use railyard_spec::run;
use railyard_study::rules::{Question, Rule, RULES};
use serde_json::{json, Value};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    Command::new(BIN)
        .args(args)
        .current_dir(dir.path())
        .output()
        .expect("railyard runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn refused(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert!(o.stdout.is_empty(), "{what}: printed on refusal");
    err
}

#[test]
fn every_design_key_takes_and_refuses_the_same_values_in_every_front_end() {
    let server = Server::start();
    let catalog = Catalog::builtin();
    for k in &DESIGN_KEYS {
        assert!(
            k.fronts.flag && k.fronts.vary && k.fronts.json,
            "{}",
            k.name
        );
        let (ok, bad) = k.examples(&catalog);
        for text in &ok {
            // `catalog` takes the design flags and plans nothing: it lists by the part flags (exit 0)
            // and refuses the others once they parse, saying they do not apply.
            let o = run(&["catalog", "gpu", &format!("--{}={text}", k.name)]);
            if ["tech", "switch", "nic", "gpu"].contains(&k.name) {
                assert_eq!(
                    o.status.code(),
                    Some(0),
                    "--{}={text}: {}",
                    k.name,
                    stderr(&o)
                );
            } else {
                let err = refused(&o, &format!("--{}={text}", k.name));
                assert!(
                    err.contains(&format!("--{} does not apply", k.name)),
                    "--{}={text}: {err}",
                    k.name
                );
            }
        }
        for text in &bad {
            let body = k.parse(text).unwrap_err().to_string();
            let what = format!("--{}={text}", k.name);
            let err = refused(&run(&["plan", &what]), &what);
            assert!(
                err.contains(&format!("for '--{} <{}>': {body}\n", k.name, k.value_name)),
                "{what}: {err}"
            );

            // A compare pair is trimmed before it is parsed.
            let t = text.trim();
            let body = k.parse(t).unwrap_err().to_string();
            let want = format!("railyard: error: {}={t}: {body}\n", k.name);
            let pair = format!("seed-two-switch:{}={t}", k.name);
            let err = refused(&run(&["compare", "seed-two-switch", &pair]), &pair);
            assert_eq!(err, want);
            if !t.is_empty() {
                let vary = format!("{}={t}", k.name);
                let err = refused(&run(&["compare", "--vary", &vary]), &vary);
                assert_eq!(err, want);
            }

            // The server states the range it takes, narrower than the key's where it limits it.
            let body = keys::KeyError {
                valid: railyard_web::valid_here(k),
                ..k.parse(text).unwrap_err()
            }
            .to_string();
            let r = request(
                &server.addr,
                "POST",
                "/api/plan",
                json!({ k.json: text }).to_string().as_bytes(),
            )
            .unwrap();
            assert_eq!(r.status, 400, "{}: {text}: {}", k.json, r.body);
            let v: Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(v["field"], k.json);
            assert_eq!(v["error"], format!("{}: {body}", k.json));
        }
    }
}

#[test]
fn a_key_outside_the_table_is_refused_everywhere() {
    // compare's pairs: the design keys, then the run keys (design.rs RUN_KEYS) and `name`.
    let vary = format!(
        "{}, routing, pxn, algo, sharp, qps-per-connection, tp, pp, dp, ep, micro-batch, global-batch, zero, name",
        keys::names(&DESIGN_KEYS, Front::Vary).join(", ")
    );
    for name in ["colour", "gpus_per_server"] {
        let err = refused(&run(&["plan", &format!("--{name}=1")]), name);
        assert!(
            err.contains(&format!("unexpected argument '--{name}'")),
            "{err}"
        );
        let err = refused(&run(&["compare", "--vary", &format!("{name}=1,2")]), name);
        assert_eq!(
            err,
            format!("railyard: error: unknown key `{name}`; valid: {vary}\n")
        );
    }
    let server = Server::start();
    let json_keys = keys::names(&DESIGN_KEYS, Front::Json);
    let run_keys = run::names(Front::Json);
    for name in ["colour", "gpus-per-server"] {
        let r = request(
            &server.addr,
            "POST",
            "/api/plan",
            json!({ name: 1 }).to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(r.status, 400);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["field"], name);
        assert_eq!(
            v["error"],
            format!(
                "unknown key `{name}`; valid: preset, spec, model, {}, {}",
                json_keys.join(", "),
                run_keys.join(", ")
            )
        );
    }
    // What the form is built from: the JSON keys, the form's own marked.
    let r = request(&server.addr, "GET", "/api/keys", b"").unwrap();
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    let described: Vec<&str> = v["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["json"].as_str().unwrap())
        .collect();
    assert_eq!(described, json_keys);
    let run_described: Vec<&str> = v["run_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["json"].as_str().unwrap())
        .collect();
    assert_eq!(run_described, run_keys);
}

/// A rule's name, the design keys, the model and the key's value under which it refuses its key.
type Fixture = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
);

/// Every rule by which the command line refuses a run key that cannot change a training step
/// (study's rules, one checker) is the web API's too: `train` with the flag and `/api/plan` with
/// the key and a model, on the same design, are refused naming the same key with the same message.
/// The other rules belong to `sim flows` and `sim collective`, questions the web API does not ask.
#[test]
fn every_run_key_rule_of_the_cli_is_enforced_by_the_web_api() {
    // Per rule: the design keys, the model and the key's value under which it refuses the key
    // (four servers of the default preset: a small step).
    let fixtures: [Fixture; 3] = [
        ("pxn-without-cross-rail-traffic", &[], "llama3-8b", "on"),
        (
            "pxn-on-one-nic",
            &[("nics-per-server", "1")],
            "llama3-70b",
            "on",
        ),
        ("sharp-on-a-step-it-does-not-change", &[], "llama3-8b", "on"),
    ];
    // The rules of a training step whose key the web API takes (`pxn`, `sharp`); every other rule
    // refuses a flag the web API has no input for (`--seed`, `--pp` and the costs with
    // `--workload`, which it does not replay; `--ep-overlap` and `--fp8-dispatch`, which its
    // requests do not set), or belongs to a question it does not ask: `sim flows` / `sim
    // collective` (Simulation), `--width`, `jobs --seed` and `report --no-sim` (Output). The
    // comparison's rules (`rules::COMPARE_RULES`) refuse flags and pairs of `compare`; the web
    // API compares by one /api/plan request per design, where a `sharp` or `pxn` without a model
    // is refused by the web's own rule (tested below).
    let steps: Vec<&Rule> = RULES
        .iter()
        .filter(|r| r.when.question() == Question::TrainingStep && r.key.fronts.json)
        .collect();
    let without_web: Vec<&str> = RULES
        .iter()
        .filter(|r| r.when.question() == Question::TrainingStep && !r.key.fronts.json)
        .map(|r| r.name)
        .collect();
    assert_eq!(
        without_web,
        [
            "seed-without-fail-links-in-train",
            "pp-with-a-workload",
            "amortize-years-with-a-workload",
            "pue-with-a-workload",
            "usd-per-kwh-with-a-workload",
            "ep-overlap-on-a-dense-model",
            "fp8-dispatch-on-a-dense-model",
            "ep-overlap-with-ep-1",
            "fp8-dispatch-with-ep-1",
        ],
        "the training-step rules with no web input: a new one with a web key needs a fixture"
    );
    let names: Vec<&str> = steps.iter().map(|r| r.name).collect();
    let fixed: Vec<&str> = fixtures.iter().map(|f| f.0).collect();
    assert_eq!(
        names, fixed,
        "a fixture for every rule, in the table's order"
    );
    let server = Server::start();
    for (rule, (name, design, model, value)) in steps.into_iter().zip(fixtures) {
        let key = rule.key;
        assert!(key.fronts.flag && key.fronts.json, "{name}: {}", key.name);
        let mut args: Vec<String> = ["train", "--servers", "4", "--model", model]
            .map(String::from)
            .to_vec();
        let mut body = json!({ "servers": 4, "model": model, key.json: value });
        for (k, v) in design {
            args.extend([format!("--{k}"), v.to_string()]);
            let json_name = keys::find(&DESIGN_KEYS, Front::Flag, k).unwrap().json;
            body[json_name] = json!(v);
        }
        args.extend([format!("--{}", key.name), value.to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = refused(&run(&args), name);
        let message = err
            .strip_prefix("railyard: error: ")
            .unwrap_or(&err)
            .trim_end();
        assert!(
            message.starts_with(&format!("--{}", key.name)) && message.contains("has no effect"),
            "{name}: {message}"
        );
        let r = request(
            &server.addr,
            "POST",
            "/api/plan",
            body.to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(r.status, 400, "{name}: {}", r.body);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["field"], key.json, "{name}");
        assert_eq!(v["error"], message, "{name}");
    }
    // The same keys where no step runs: refused on the web, naming what they need.
    for (path, body, want) in [
        (
            "/api/plan",
            json!({ "servers": 4, "sharp": "on" }),
            "sharp: has no effect without model: it sets how the training step of `model` runs, which /api/plan predicts; give model",
        ),
        (
            "/api/sim",
            json!({ "servers": 4, "pxn": "on", "model": "llama3-8b" }),
            "pxn: has no effect on /api/sim: it sets how the training step of `model` runs, which /api/plan predicts; give it to /api/plan with model",
        ),
    ] {
        let r = request(&server.addr, "POST", path, body.to_string().as_bytes()).unwrap();
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["error"], want, "{path}");
    }
}
