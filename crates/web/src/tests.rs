//! The web API's pages and answers, as pure functions.

mod app {
    use crate::{handle, presets_json, sim_check};
    use serde_json::Value;

    fn post(body: &str) -> (u16, Value) {
        let r = handle("POST", "/api/plan", body.as_bytes());
        (r.status, serde_json::from_slice(&r.body).unwrap())
    }

    /// A design the request's keys change is described by them, as the CLI describes its flags;
    /// keys that leave the preset as it is keep its text.
    #[test]
    fn a_changed_design_is_described_by_its_keys() {
        let (status, v) = post(r#"{"servers": 16, "tech": "roce-400g"}"#);
        assert_eq!(status, 200, "{v}");
        assert_eq!(
            v["description"],
            "dgx-h100-superpod with --servers 16 --tech roce-400g"
        );
        let (status, v) = post(r#"{"servers": 127}"#);
        assert_eq!(status, 200, "{v}");
        let preset = railyard_spec::presets::load("dgx-h100-superpod").unwrap();
        assert_eq!(v["description"], preset.description.as_str());
        // The CLI's rule (`ClusterSpec::describe_changes`): a key that changes nothing beside
        // another is left out (seed-edr-fat-tree has 4 GPUs per server), and keys are named in
        // the flags' order, not the request's.
        let (status, v) =
            post(r#"{"preset": "seed-edr-fat-tree", "nics_per_server": 2, "gpus_per_server": 4}"#);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["name"], "seed-edr-fat-tree:nics-per-server=2");
        let (status, v) = post(r#"{"gpudirect": "off", "servers": 20}"#);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["name"], "dgx-h100-superpod:servers=20,gpudirect=off");
    }

    /// One line per case: body, expected status, field named.
    #[test]
    fn invalid_designs_answer_400_naming_the_field() {
        for (body, field) in [
            (r#"{"servers": "many"}"#, "servers"),
            (r#"{"servers": -3}"#, "servers"),
            (r#"{"servers": 1000000}"#, "servers"),
            (r#"{"gpudirect": "maybe"}"#, "gpudirect"),
            (r#"{"gpudirect": 1}"#, "gpudirect"),
            (r#"{"nic_ratio": "1:3"}"#, "nic_ratio"),
            (r#"{"tech": "ib-qdr"}"#, "tech"),
            (r#"{"topology": "torus"}"#, "topology"),
            (r#"{"preset": "nope"}"#, "preset"),
            (r#"{"colour": "red"}"#, "colour"),
            (r#"{"nics_per_server": 3}"#, "nics_per_server"),
            (
                r#"{"servers": 5000, "topology": "single-switch"}"#,
                "servers",
            ),
            (r#"[1, 2]"#, "body"),
            (r#"{"servers": "#, "body"),
        ] {
            let (status, v) = post(body);
            assert_eq!(status, 400, "{body}: {v}");
            assert_eq!(v["field"], field, "{body}: {v}");
            assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
        }
    }

    #[test]
    fn a_valid_design_plans_with_drawing_and_cost() {
        let (status, v) = post(r#"{"preset": "seed-leaf-spine", "servers": 12}"#);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["summary"]["servers"], 12);
        // How the design was chosen, and the next designs (issue 15).
        assert_eq!(v["summary"]["design"]["choices"][0]["key"], "switch");
        assert!(!v["summary"]["design"]["alternatives"]
            .as_array()
            .unwrap()
            .is_empty());
        assert!(v["summary_html"]
            .as_str()
            .unwrap()
            .contains("id=\"alternatives\""));
        assert!(v["drawing_svg"].as_str().unwrap().starts_with("<svg"));
        assert!(v["cost_svg"].as_str().unwrap().starts_with("<svg"));
        // An empty body plans the default preset, as the CLI does without arguments.
        let (status, v) = post("");
        assert_eq!(status, 200);
        assert_eq!(v["summary"]["servers"], 127);
    }

    #[test]
    fn pages_and_presets() {
        let page = handle("GET", "/", b"");
        assert_eq!(page.status, 200);
        // The designs are panels the script clones from the template.
        let page = String::from_utf8(page.body).unwrap();
        assert!(page.contains("<template id=\"design-template\">"));
        assert!(page.contains("id=\"add-design\""));
        assert!(page.contains("id=\"comparison\""));
        assert_eq!(handle("GET", "/nope", b"").status, 404);
        assert_eq!(handle("DELETE", "/api/plan", b"").status, 405);
        let p = presets_json();
        assert_eq!(
            p["presets"].as_array().unwrap().len(),
            railyard_spec::presets::PRESETS.len()
        );
    }

    #[test]
    fn huge_simulations_are_refused_before_they_start() {
        let r = sim_check(br#"{"servers": 4096}"#).err().unwrap();
        assert_eq!(r.status, 400);
        assert!(String::from_utf8(r.body)
            .unwrap()
            .contains("\"field\":\"servers\""));
    }
}

mod app_api {
    use crate as app;
    use crate::{handle, DesignRequest, MAX_SPEC};
    use railyard_study::compare;
    use serde_json::{json, Value};

    fn answer(path: &str, body: &Value) -> (u16, Value) {
        let r = handle("POST", path, body.to_string().as_bytes());
        (
            r.status,
            serde_json::from_slice(&r.body).unwrap_or(Value::Null),
        )
    }

    const POD: &str = include_str!("../../spec/presets/seed-leaf-spine.toml");

    /// An uploaded spec plans as `--spec` does; keys given beside it override it; a broken spec, an
    /// oversized one and a spec with a preset are refused naming `spec`; an error in a field the
    /// spec set is the spec's.
    #[test]
    fn a_spec_upload_is_validated_as_the_cli_does() {
        let six = POD.replace("count = 10", "count = 6");
        let (status, v) = answer("/api/plan", &json!({ "spec": six }));
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["summary"]["servers"], 6);
        assert_eq!(v["fields"]["servers"], 6);
        let (_, v) = answer("/api/plan", &json!({ "spec": six, "servers": 4 }));
        assert_eq!(v["summary"]["servers"], 4);
        for (body, starts) in [
            (
                json!({ "spec": "[servers]\ncount = \"many\"\n" }),
                "uploaded spec",
            ),
            (json!({ "spec": "x".repeat(MAX_SPEC + 1) }), "spec: "),
            (
                json!({ "spec": POD, "preset": "seed-two-switch" }),
                "give either",
            ),
            (
                json!({ "spec": POD.replace("count = 10", "count = 0") }),
                "",
            ),
        ] {
            let (status, v) = answer("/api/plan", &body);
            assert_eq!((status, v["field"].as_str()), (400, Some("spec")), "{v}");
            assert!(v["error"].as_str().unwrap().starts_with(starts), "{v}");
        }
        assert!(DesignRequest::parse(json!({ "spec": 1 }).to_string().as_bytes()).is_err());
    }

    /// A model adds the training step to the plan; an unknown model names the valid ones.
    #[test]
    fn a_model_adds_the_training_step() {
        let (status, v) = answer(
            "/api/plan",
            &json!({ "preset": "seed-leaf-spine", "model": "llama3-8b" }),
        );
        assert_eq!(status, 200, "{v}");
        let t = &v["train"];
        assert!(t["step_time_s"].as_f64().unwrap() > 0.0);
        assert_eq!(t["step_time_s"], t["breakdown"]["step_time_s"]);
        assert_eq!(t["layout"]["tp"], 8);
        let (_, v) = answer("/api/plan", &json!({ "preset": "seed-leaf-spine" }));
        assert_eq!(v["train"], Value::Null);
        let (status, v) = answer("/api/plan", &json!({ "model": "gpt5" }));
        assert_eq!((status, v["field"].as_str()), (400, Some("model")));
        assert!(
            v["error"].as_str().unwrap().contains("valid: gpt3-175b"),
            "{v}"
        );
    }

    /// The run keys set how the model's step runs: taken where they can change it, a bad value
    /// refused naming the key and the valid values as the flag's parser says them.
    #[test]
    fn run_keys_set_the_training_step() {
        let design = |pxn: &str| json!({ "servers": 4, "model": "llama3-70b", "pxn": pxn });
        for pxn in ["on", "off", "staged"] {
            let (status, v) = answer("/api/plan", &design(pxn));
            assert_eq!(status, 200, "{pxn}: {v}");
            assert!(v["train"]["step_time_s"].as_f64().unwrap() > 0.0);
        }
        let (status, v) = answer("/api/plan", &design("sideways"));
        assert_eq!((status, v["field"].as_str()), (400, Some("pxn")), "{v}");
        let e = v["error"].as_str().unwrap();
        assert!(
            e.starts_with("pxn: ") && e.contains("valid: auto, on, off, staged"),
            "{e}"
        );
    }

    /// The comparison charts: a point per design, the Pareto front through the designs no other
    /// beats; by tokens/s where every design has them, else by bisection.
    #[test]
    fn compare_charts_the_designs_of_the_page() {
        let (status, v) = answer(
            "/api/compare",
            &json!({ "designs": [
                { "label": "A", "cost_usd": 100.0, "bisection_tbs": 1.0, "tokens_per_s": 10.0, "network_usd_per_million_tokens": 0.5 },
                { "label": "B", "cost_usd": 50.0, "bisection_tbs": 2.0, "tokens_per_s": 20.0, "network_usd_per_million_tokens": 0.1 },
                { "label": "C", "cost_usd": 80.0, "bisection_tbs": 3.0, "tokens_per_s": 5.0, "network_usd_per_million_tokens": 0.9 },
            ] }),
        );
        assert_eq!(status, 200, "{v}");
        let svg = v["pareto_svg"].as_str().unwrap();
        assert_eq!(svg.matches("<circle class=\"design").count(), 3);
        // B is cheaper and faster than A and C: the only design on the front.
        assert_eq!(svg.matches("class=\"design pareto\"").count(), 1);
        assert!(svg.contains("tokens/s (higher is better)"));
        assert!(v["cost_per_token_svg"]
            .as_str()
            .unwrap()
            .contains("class=\"bar\""));
        let (status, v) = answer(
            "/api/compare",
            &json!({ "designs": [{ "label": "A", "cost_usd": 1.0, "bisection_tbs": 1.0 }] }),
        );
        assert_eq!(status, 200);
        assert!(v["pareto_svg"]
            .as_str()
            .unwrap()
            .contains("bisection (Tb/s)"));
        assert_eq!(v["cost_per_token_svg"], Value::Null);
        let many: Vec<Value> = (0..=app::MAX_COMPARED)
            .map(|_| json!({ "cost_usd": 1.0 }))
            .collect();
        let (status, v) = answer("/api/compare", &json!({ "designs": many }));
        assert_eq!((status, v["field"].as_str()), (400, Some("designs")));
    }

    /// Issue 36: the page's comparison names a winner only beyond the error bands of the
    /// designs' cost per token (the training step's `error_band`), else "tied within model error".
    #[test]
    fn compare_names_a_winner_only_beyond_the_error_bands() {
        let band = |x: f64| {
            serde_json::to_value(compare::band::band(
                x,
                compare::band::Kind::TrainingStep { gpus: 16_384 },
            ))
            .unwrap()
        };
        let design = |label: &str, x: f64| {
            json!({ "label": label, "cost_usd": 1.0, "network_usd_per_million_tokens": x,
                    "network_usd_per_million_tokens_band": band(x) })
        };
        let (status, v) = answer(
            "/api/compare",
            &json!({ "designs": [design("A", 0.1000), design("B", 0.1004)] }),
        );
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["verdict"]["winner"], Value::Null);
        assert_eq!(v["verdict"]["tied"], true);
        assert_eq!(
            v["verdict"]["decided_by"],
            "network cost per million tokens"
        );
        assert!(v["verdict"]["text"]
            .as_str()
            .unwrap()
            .starts_with("no winner: tied within model error"));
        let (_, v) = answer(
            "/api/compare",
            &json!({ "designs": [design("A", 0.10), design("B", 0.20)] }),
        );
        assert_eq!(v["verdict"]["winner"], "A");
        let mut bad = design("B", 0.2);
        bad["network_usd_per_million_tokens_band"] = json!({ "lo": "x" });
        let (status, v) = answer(
            "/api/compare",
            &json!({ "designs": [design("A", 0.1), bad] }),
        );
        assert_eq!((status, v["field"].as_str()), (400, Some("designs")), "{v}");
    }

    /// The design's files for the page's download links.
    #[test]
    fn report_and_cabling_download() {
        let body = json!({ "preset": "seed-two-switch" }).to_string();
        let r = handle("POST", "/api/cabling", body.as_bytes());
        assert_eq!((r.status, r.content_type), (200, "text/csv; charset=utf-8"));
        assert!(r.body.starts_with(b"id,type,part,"));
        let r = handle("POST", "/api/report", body.as_bytes());
        assert_eq!(r.status, 200);
        assert!(String::from_utf8(r.body)
            .unwrap()
            .contains("seed-two-switch"));
        assert_eq!(handle("GET", "/api/report", b"").status, 405);
    }
}
