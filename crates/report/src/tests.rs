use crate::{figures, report_html, DesignReport};
use railyard_catalog::Catalog;
use railyard_plan::Plan;
use railyard_spec::presets;

fn design(name: &str) -> (railyard_fabric::Fabric, Plan, String) {
    let spec = presets::load(name).unwrap();
    let catalog = Catalog::builtin();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    let plan = Plan::new(&f, &catalog);
    (f, plan, spec.description.clone())
}

fn html_of(name: &str) -> String {
    let (f, plan, description) = design(name);
    report_html(&DesignReport {
        fabric: &f,
        plan: &plan,
        description,
        busbw: Default::default(),
    })
}

#[test]
fn every_preset_renders_a_report() {
    for p in presets::PRESETS {
        let html = html_of(p.name);
        for id in [
            "summary",
            "topology",
            "cost",
            "bill-of-materials",
            "cabling-plan",
        ] {
            assert!(
                html.contains(&format!("<section id=\"{id}\"")),
                "{}: {id}",
                p.name
            );
        }
        assert!(html.len() < 5_000_000, "{}", p.name);
    }
}

/// Issue 15: the report says how the design was chosen, lists the next designs, and shows the
/// storage and management networks planned with it.
#[test]
fn the_report_explains_the_design_and_shows_every_network() {
    let spec = presets::load("dgx-h100-superpod").unwrap();
    let catalog = Catalog::builtin();
    let opts = railyard_fabric::SearchOptions { alternatives: 3 };
    let planned = railyard_plan::plan_design(&spec, &catalog, &opts).unwrap();
    let html = report_html(&DesignReport {
        fabric: &planned.fabric,
        plan: &planned.plan,
        description: spec.description.clone(),
        busbw: Default::default(),
    });
    for id in ["design", "networks", "choices", "alternatives"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(
        html.contains("the preset&#39;s reference choice")
            || html.contains("the preset's reference choice")
    );
    for network in ["storage", "in-band", "out-of-band"] {
        assert!(html.contains(&format!("<td>{network}</td>")), "{network}");
    }
    // Planned without its search (a fabric as built), there is nothing to explain.
    assert!(!html_of("dgx-h100-superpod").contains("id=\"design\""));
}

#[test]
fn same_design_same_bytes() {
    assert_eq!(html_of("dgx-h100-superpod"), html_of("dgx-h100-superpod"));
}

/// 12,500 servers x 8 GPUs on XDR: the drawing collapses into groups and the file stays under 5 MB.
#[test]
fn a_100k_gpu_report_stays_under_5_mb_and_readable() {
    let text = r#"
name = "xdr-100k"
[servers]
count = 12500
gpu = "B200"
[fabric]
tech = "ib-xdr"
topology = "rail-optimized"
"#;
    let spec = railyard_spec::parse(text, "test").unwrap();
    let catalog = Catalog::builtin();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    let plan = Plan::new(&f, &catalog);
    let r = DesignReport {
        fabric: &f,
        plan: &plan,
        description: String::new(),
        busbw: Default::default(),
    };
    let html = report_html(&r);
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
    let svg = crate::drawing::topology_svg(&f);
    let boxes = svg.matches("<g class=\"unit").count();
    assert!(boxes <= 4 * crate::drawing::MAX_ROW, "{boxes} boxes");
    assert!(svg.matches("<line").count() < 1000);
    assert!(svg.contains("more"), "the middle of long rows folds");
    assert!(
        html.contains("Showing the first 5,000 of"),
        "cabling table is cut and says so"
    );
}

#[test]
fn two_switch_drawing_puts_odd_hcas_on_switch_1_and_even_on_switch_2() {
    let (f, _, _) = design("seed-two-switch");
    let svg = crate::drawing::topology_svg(&f);
    assert!(svg.contains("switch1</text>"));
    assert!(svg.contains("HCA 1,3,5,7"), "switch 1 serves the odd HCAs");
    assert!(svg.contains("HCA 2,4,6,8"), "switch 2 serves the even HCAs");
    assert!(svg.contains("4 x 200G inter-switch"));
}

#[test]
fn default_drawing_shows_rails_in_colours() {
    let (f, _, _) = design("dgx-h100-superpod");
    let svg = crate::drawing::topology_svg(&f);
    for rail in 0..8 {
        assert!(
            svg.contains(crate::svg::rail_colour(rail)),
            "rail {}",
            rail + 1
        );
    }
    assert!(svg.contains("1,016 x 400G") && svg.contains("1,024 x 400G"));
}

#[test]
fn figures_render_to_non_blank_pngs() {
    let (f, plan, description) = design("seed-leaf-spine");
    let r = DesignReport {
        fabric: &f,
        plan: &plan,
        description,
        busbw: Default::default(),
    };
    for fig in figures(&r) {
        let png = crate::png::render(&fig.svg, 1.0).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{}", fig.name);
        // A blank white image compresses to almost nothing; a drawing with text does not.
        assert!(png.len() > 10_000, "{}: {} bytes", fig.name, png.len());
    }
}

#[test]
fn report_loads_nothing_from_the_network() {
    let html = html_of("dgx-h100-superpod");
    assert!(html.contains("default-src 'none'"));
    for bad in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "src=\"//",
    ] {
        assert!(!html.contains(bad), "{bad}");
    }
}

#[test]
fn busbw_plot_appears_only_with_curves() {
    let (f, plan, description) = design("seed-two-switch");
    let mut r = DesignReport {
        fabric: &f,
        plan: &plan,
        description,
        busbw: Default::default(),
    };
    assert!(!report_html(&r).contains("id=\"busbw\""));
    r.busbw.curves = vec![crate::Curve {
        collective: "allreduce".into(),
        points: vec![(1 << 10, 0.5), (1 << 20, 10.0), (1 << 30, 20.0)],
    }];
    let html = report_html(&r);
    assert!(html.contains("id=\"busbw\"") && html.contains("class=\"curve\""));
}

mod app {
    use crate::app::{handle, presets_json, sim_check};
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
    use crate::app::{self, handle, DesignRequest, MAX_SPEC};
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

/// Regression: the bill of materials showed unit prices in whole dollars, so unit x quantity was
/// not the total (MPO12-OM4 7 m: 384 x 51 = 19,392; the price is 50.50). Every row's unit price x
/// quantity is its total as shown, to the cent.
#[test]
fn bom_unit_price_times_quantity_is_the_total_shown() {
    let (f, plan, description) = design("dgx-h100-superpod");
    let html = report_html(&DesignReport {
        fabric: &f,
        plan: &plan,
        description,
        busbw: Default::default(),
    });
    let start = html.find(r#"<table id="bom">"#).unwrap();
    let table = &html[start..start + html[start..].find("</tbody>").unwrap()];
    let num = |cell: &str| -> f64 {
        let text = cell.split('<').next().unwrap().replace(',', "");
        text.parse().unwrap_or_else(|_| panic!("{cell}"))
    };
    let mut rows = 0;
    let mut with_cents = 0;
    for row in table.split("<tr>").skip(2) {
        let cells: Vec<&str> = row
            .split("<td")
            .skip(1)
            .map(|c| &c[c.find('>').unwrap() + 1..])
            .collect();
        let (qty, unit, total) = (num(cells[4]), num(cells[5]), num(cells[6]));
        assert!(
            (qty * unit - total).abs() < 0.005,
            "{qty} x {unit} != {total}: {row}"
        );
        rows += 1;
        with_cents += usize::from(cells[5].contains('.'));
    }
    assert_eq!(rows, plan.bom.len());
    assert!(with_cents > 0, "no price with cents in the preset's bill");
    assert!(table.contains(r#"<td class="num">50.50</td>"#));
}

/// Regression: an all-to-all curve's 0-byte row was drawn at 1 B, a line along the bottom from
/// 1 B to 4 KB. Log-scale charts leave 0-byte rows out: the axis starts at the first real size.
#[test]
fn busbw_chart_leaves_zero_byte_rows_out() {
    let curve = |points: Vec<(u64, f64)>| crate::Curve {
        collective: "alltoall".into(),
        points,
    };
    let with_zero =
        crate::chart::busbw_svg("t", &[curve(vec![(0, 0.0), (4096, 1.0), (1 << 20, 5.0)])]);
    let without = crate::chart::busbw_svg("t", &[curve(vec![(4096, 1.0), (1 << 20, 5.0)])]);
    assert_eq!(with_zero, without);
    assert_eq!(with_zero.matches("<circle").count(), 2);
    assert!(!with_zero.contains(">1 B<") && !with_zero.contains("0 B:"));
    // Only 0-byte rows: an empty chart, no curve point.
    let only_zero = crate::chart::busbw_svg("t", &[curve(vec![(0, 0.0)])]);
    assert_eq!(only_zero.matches("<circle").count(), 0);
}
