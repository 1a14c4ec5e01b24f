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
    let svg = crate::drawing::topology_svg(&f, None);
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
    let svg = crate::drawing::topology_svg(&f, None);
    assert!(svg.contains("switch1</text>"));
    assert!(svg.contains("HCA 1,3,5,7"), "switch 1 serves the odd HCAs");
    assert!(svg.contains("HCA 2,4,6,8"), "switch 2 serves the even HCAs");
    assert!(svg.contains("4 x 200G inter-switch"));
}

#[test]
fn default_drawing_shows_rails_in_colours() {
    let (f, _, _) = design("dgx-h100-superpod");
    let svg = crate::drawing::topology_svg(&f, None);
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

/// The design's fabric and its rack-scale NVLink domain, as a plan holds it.
fn domain_design(
    name: &str,
    servers: u32,
) -> (
    railyard_fabric::Fabric,
    Option<railyard_fabric::layout::NvlinkDomain>,
) {
    let mut spec = presets::load(name).unwrap();
    spec.servers.count = servers;
    let catalog = Catalog::builtin();
    let f = railyard_fabric::build(&spec, &catalog).unwrap();
    let d = railyard_fabric::layout::Racks::of(&f, &spec, &catalog).nvlink_domain;
    (f, d)
}

/// Issue 37: a rack-scale NVLink domain is drawn as one block per rack holding its compute trays
/// and its NVLink switch trays (the catalog's GB200/GB300 NVL72: 18 and 9), with the trays' HCAs
/// on the block's edge and their cables going up to the leaves.
#[test]
fn nvl72_racks_draw_as_one_block_each_with_their_nvlink_switches() {
    for (name, speed) in [("gb200-nvl72-superpod", "400G"), ("gb300-nvl72", "800G")] {
        // One scalable unit: 8 racks of 18 trays.
        let (f, d) = domain_design(name, 144);
        let d = d.expect("an NVL72 design has NVLink domains");
        assert_eq!(
            (d.domains, d.trays_per_domain, d.nvlink_switch_trays),
            (8, 18, 9)
        );
        let svg = crate::drawing::topology_svg(&f, Some(&d));
        let blocks: Vec<&str> = svg
            .split("<g class=\"unit server domain\">")
            .skip(1)
            .collect();
        assert_eq!(blocks.len(), 8, "{name}: one block per rack");
        for (i, b) in blocks.iter().enumerate() {
            let b = &b[..b.find("<g class=\"unit ").unwrap_or(b.len())];
            assert!(
                b.contains(&format!("{} rack {}</text>", d.system, i + 1)),
                "{name} {i}"
            );
            assert_eq!(
                b.matches("class=\"nvlink-switch\"").count(),
                9,
                "{name} rack {i}"
            );
            assert_eq!(
                b.matches("class=\"compute-tray\"").count(),
                18,
                "{name} rack {i}"
            );
            assert_eq!(
                b.matches("class=\"hca\"").count(),
                4,
                "4 scale-out HCAs per tray"
            );
        }
        // No server boxes of their own: every tray is inside its rack's block.
        assert_eq!(svg.matches("<g class=\"unit server\">").count(), 0);
        // The trays' scale-out cables leave the blocks for the leaves: 144 trays x 4 NICs.
        let cables = format!("576 x {speed}</text>");
        assert!(
            svg.contains("server–leaf") && svg.contains(&cables),
            "{name}"
        );
    }
    // The preset's 16 racks: the middle of the row folds, and every rack is shown or counted.
    let (f, d) = domain_design("gb200-nvl72-superpod", 288);
    let svg = crate::drawing::topology_svg(&f, d.as_ref());
    let blocks = svg.matches("<g class=\"unit server domain\">").count();
    assert_eq!(blocks, crate::drawing::MAX_ROW - 1);
    assert!(
        svg.contains("… 5 more</text>") && svg.contains("90 compute trays, like their neighbours")
    );
    // Without a domain the same fabric is drawn as before: servers by scalable unit.
    let plain = crate::drawing::topology_svg(&f, None);
    assert_eq!(plain.matches("class=\"nvlink-switch\"").count(), 0);
}
