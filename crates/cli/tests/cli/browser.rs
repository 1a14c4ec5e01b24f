//! The report and the web app in a real browser: headless Chromium (Debian's `chromium`, which
//! scripts/test installs) driven over the DevTools protocol. Without Chromium these tests skip with
//! a message, except under CI=true, where they fail.

use crate::common::chrome::{self, Chrome};
use crate::common::{need, railyard_in, succeeded, Server};
use std::time::Duration;

fn chromium() -> bool {
    need("chromium", chrome::available())
}

/// `railyard report -o r.html` of the default preset: drawing, tables and both plots visible in
/// Chromium, nothing loaded from the network, no console errors, a screenshot that is not blank, and
/// the cabling filter works.
#[test]
fn default_report_renders_in_chromium() {
    if !chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    succeeded(&railyard_in(dir.path(), ["report", "-o", "r.html"]));
    let file = dir.path().join("r.html");
    let url = format!("file://{}", file.display());

    let mut c = Chrome::launch(1400, 1000);
    c.open(&url);
    // Each part is there and takes room on the page.
    for sel in [
        "#topology svg",
        "#cost svg",
        "#busbw svg",
        "#bom tbody tr",
        "#cabling tbody tr",
        "#summary .card",
    ] {
        let visible = c.eval(&format!(
            "(() => {{ const e = document.querySelector('{sel}'); if (!e) return false; const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }})()"
        ));
        assert_eq!(visible, true, "{sel} is not visible");
    }
    assert_eq!(
        c.eval("document.querySelectorAll('#busbw path.curve').length"),
        2,
        "all-reduce and all-to-all curves"
    );
    assert_eq!(
        c.eval("document.querySelector('[data-key=gpus]').textContent"),
        "1,016 x H100"
    );
    // The filter keeps the rows of one device.
    let all = c
        .eval("document.querySelectorAll('#cabling tbody tr').length")
        .as_u64()
        .unwrap();
    c.eval("(() => { const i = document.getElementById('cable-filter'); i.value = 'su2-srv07'; i.dispatchEvent(new Event('input')); })()");
    let shown = c
        .eval("[...document.querySelectorAll('#cabling tbody tr')].filter(r => !r.hidden).length")
        .as_u64()
        .unwrap();
    assert_eq!(shown, 8, "su2-srv07 has 8 cables of {all}");

    c.assert_drawn_from(&["file://"]);
    c.assert_no_console_errors(&[]);
}

/// The decision report of issue 16: `railyard report --compare` of the superpod, its RoCE variant
/// and a 1:4 NIC variant with llama3-70b on 4 pipeline stages. In Chromium: the comparison table,
/// the Pareto chart (a point per design, the front drawn), the cost per token, the step breakdowns
/// side by side, the busbw curves overlaid (one per design in each of the two charts) and each
/// design's drawing are visible; designs are named by what differs; nothing is loaded from the
/// network; no console errors.
#[test]
fn decision_report_renders_in_chromium() {
    if !chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = railyard_in(
        dir.path(),
        [
            "report",
            "--compare",
            "dgx-h100-superpod",
            "dgx-h100-superpod:tech=roce-400g",
            "dgx-h100-superpod:nic-ratio=1:4",
            "--model",
            "llama3-70b",
            "--pp",
            "4",
            "-o",
            "decision.html",
        ],
    );
    succeeded(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "railyard: wrote decision.html\n"
    );
    let file = dir.path().join("decision.html");
    let html = std::fs::read_to_string(&file).unwrap();
    // Named by what differs, never by a preset a variant no longer is.
    // (each design's warnings follow its name, issue 36).
    assert!(html.contains("<li><b>B</b> tech=roce-400g<"), "legend");
    assert!(html.contains("<li><b>C</b> nic-ratio=1:4<"), "legend");
    let url = format!("file://{}", file.display());
    let mut c = Chrome::launch(1400, 1000);
    c.open(&url);
    for sel in [
        "#comparison tbody tr",
        "#pareto svg",
        "#pareto circle.design",
        "#cost-per-token svg",
        "#step-breakdown tbody tr",
        "#busbw svg",
        "#drawings svg",
        "#verdicts li",
        "#decision",
        "#command-line",
        "#run-keys tbody tr",
    ] {
        let visible = c.eval(&format!(
            "(() => {{ const e = document.querySelector('{sel}'); if (!e) return false; const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }})()"
        ));
        assert_eq!(visible, true, "{sel} is not visible");
    }
    assert_eq!(
        c.eval("document.querySelectorAll('#comparison thead th').length"),
        4,
        "a label column and three designs"
    );
    assert_eq!(
        c.eval("document.querySelectorAll('#pareto circle.design').length"),
        3
    );
    assert_eq!(
        c.eval("document.querySelectorAll('#pareto circle.pareto').length")
            .as_u64()
            .map(|n| n >= 1),
        Some(true)
    );
    assert_eq!(
        c.eval("document.querySelectorAll('#busbw svg').length"),
        2,
        "all-reduce and all-to-all charts"
    );
    assert_eq!(
        c.eval("document.querySelectorAll('#busbw path.curve').length"),
        6,
        "a curve per design in each chart"
    );
    assert_eq!(
        c.eval("document.querySelectorAll('#drawings svg').length"),
        3
    );
    let steps = c.eval(
        "[...document.querySelectorAll('#comparison tbody tr')].find(r => r.cells[0].textContent === 'llama3-70b step time (s)') ? 'yes' : 'no'",
    );
    assert_eq!(steps, "yes");
    c.assert_drawn_from(&["file://"]);
    c.assert_no_console_errors(&[]);
}

/// The web app of issue 16 in Chromium: add a third design, upload a spec file into it (validated
/// by the server as `--spec` is; a broken one is refused naming the spec), select a training model
/// and see its step time; the comparison's table and Pareto chart follow every change; the
/// design's cabling plan and report download.
#[test]
fn web_app_compares_any_number_of_designs_with_a_spec_and_a_model() {
    if !chromium() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("pod.toml");
    std::fs::write(
        &spec,
        include_str!("../../../spec/presets/seed-leaf-spine.toml")
            .replace("name = \"seed-leaf-spine\"", "name = \"uploaded-pod\"")
            .replace("count = 10", "count = 6"),
    )
    .unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[servers]\ncount = \"many\"\n").unwrap();

    let server = Server::start();
    let mut c = Chrome::launch(1600, 1200);
    c.open(&server.url());
    for side in ["A", "B"] {
        c.wait_for(
            &format!("!!document.querySelector('#design-{side} [data-key=servers]')"),
            Duration::from_secs(60),
        );
    }
    c.wait_for(
        "document.querySelectorAll('#comparison .pareto circle.design').length === 2",
        Duration::from_secs(30),
    );
    // A third design.
    c.eval("document.getElementById('add-design').click()");
    let servers_c = "document.querySelector('#design-C [data-key=servers]')";
    c.wait_for(
        &format!("!!{servers_c} && {servers_c}.textContent === '10'"),
        Duration::from_secs(60),
    );
    c.wait_for(
        "document.querySelectorAll('#comparison .pareto circle.design').length === 3",
        Duration::from_secs(30),
    );
    let chart_before = c.eval("document.querySelector('#comparison .pareto').innerHTML");

    // Upload files into design C's spec input through DevTools, as a user picking a file would.
    let upload = |c: &mut Chrome, path: &std::path::Path| {
        let r = c.call(
            "Runtime.evaluate",
            serde_json::json!({ "expression": "document.querySelector('#design-C input[name=spec_file]')" }),
        );
        let object = r["result"]["objectId"].as_str().unwrap().to_string();
        c.call(
            "DOM.setFileInputFiles",
            serde_json::json!({ "files": [path.display().to_string()], "objectId": object }),
        );
    };
    upload(&mut c, &broken);
    c.wait_for(
        "document.querySelector('#design-C .status').classList.contains('error') && document.querySelector('#design-C .status').textContent.startsWith('spec: ')",
        Duration::from_secs(30),
    );
    upload(&mut c, &spec);
    c.wait_for(
        &format!("{servers_c}.textContent === '6'"),
        Duration::from_secs(60),
    );
    // The form shows the uploaded spec's values.
    assert_eq!(
        c.eval("document.querySelector('#design-C input[name=servers]').value"),
        "6"
    );
    c.wait_for(
        &format!(
            "document.querySelector('#comparison .pareto').innerHTML !== {}",
            chart_before
        ),
        Duration::from_secs(30),
    );
    // A training model: its step time appears in the design and in the comparison's table.
    c.eval("(() => { const s = document.querySelector('#design-C select[name=model]'); s.value = 'llama3-8b'; s.dispatchEvent(new Event('change', { bubbles: true })); })()");
    c.wait_for(
        "!!document.querySelector('#design-C [data-key=step-time]')",
        Duration::from_secs(120),
    );
    let step = c.eval("document.querySelector('#design-C [data-key=step-time]').textContent");
    let secs: f64 = step
        .as_str()
        .unwrap()
        .trim_end_matches(" s")
        .parse()
        .unwrap();
    assert!(secs > 0.0, "{step}");
    assert!(
        c.eval("document.querySelector('#design-C .train table').rows.length")
            .as_u64()
            >= Some(5)
    );
    c.wait_for(
        &format!(
            "[...document.querySelectorAll('#compare-table tr')].some(r => r.cells[0].textContent === 'step time' && r.cells[3] && r.cells[3].textContent === {step})"
        ),
        Duration::from_secs(30),
    );
    // The design's files, as its download links fetch them (a JSON body, sent as application/json).
    let csv = c.eval("fetch('/api/cabling', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(design(document.querySelector('#design-C form'))) }).then(r => r.text())");
    assert!(csv.as_str().unwrap().starts_with("id,type,part"), "{csv}");
    let report = c.eval("fetch('/api/report', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(design(document.querySelector('#design-C form'))) }).then(r => r.text())");
    assert!(report.as_str().unwrap().contains("uploaded-pod"));
    // A string body without a type, as a page on another site may post one with no preflight: the
    // browser types it text/plain, and the server refuses it (issue 33).
    let refused = c.eval("fetch('/api/plan', { method: 'POST', body: '{}' }).then(r => r.status)");
    assert_eq!(refused, 415);
    // Removing a design takes it out of the comparison.
    c.eval("document.querySelector('#design-B .remove').click()");
    c.wait_for(
        "document.querySelectorAll('#comparison .pareto circle.design').length === 2 && !document.getElementById('design-B')",
        Duration::from_secs(30),
    );
    let png = c.screenshot(false);
    assert!(c.not_blank(&png));
    // The 400 answer to the broken spec and the 415 to the text/plain post are the test's
    // doing; a 503 is the server busy with another design's simulation (one at a time),
    // which the page waits out and retries.
    c.assert_no_console_errors(&["status of 400", "status of 415", "status of 503"]);
}

/// `railyard serve` in Chromium: the page plans both designs, a form change updates the numbers, the
/// second design's busbw plot arrives with progress, and nothing errors.
#[test]
fn web_app_updates_numbers_when_the_form_changes() {
    if !chromium() {
        return;
    }
    let server = Server::start();
    let mut c = Chrome::launch(1600, 1200);
    c.open(&server.url());
    let a = "document.querySelector('#design-A [data-key=servers]')";
    c.wait_for(
        &format!("!!{a} && {a}.textContent === '127'"),
        Duration::from_secs(60),
    );
    c.wait_for(
        "!!document.querySelector('#design-B [data-key=servers]')",
        Duration::from_secs(60),
    );
    // Each form's fields are the table's form keys, in its order, between the preset (or a spec
    // file) and the training model, and the preset filled them in.
    let mut want = vec!["preset", "spec_file"];
    want.extend(railyard_spec::keys::names(
        &railyard_spec::keys::DESIGN_KEYS,
        railyard_spec::keys::Front::Form,
    ));
    want.extend(["model", "simulate"]);
    for side in ["A", "B"] {
        assert_eq!(
            c.eval(&format!(
                "[...document.querySelectorAll('#design-{side} form [name]')].map(e => e.name).join(',')"
            )),
            want.join(","),
        );
        assert_eq!(
            c.eval(&format!(
                "[...document.querySelectorAll('#design-{side} form input[type=number], #design-{side} form select:not([name=model])')].filter(e => e.value === '').length"
            )),
            0
        );
    }
    assert_eq!(
        c.eval("document.querySelector('#design-A input[name=servers]').max"),
        railyard_web::MAX_SERVERS.to_string()
    );
    // Type a new server count into design A.
    c.eval("(() => { const i = document.querySelector('#design-A input[name=servers]'); i.value = '64'; i.dispatchEvent(new Event('input', { bubbles: true })); })()");
    c.wait_for(
        &format!("{a}.textContent === '64'"),
        Duration::from_secs(60),
    );
    assert_eq!(
        c.eval("document.querySelector('#design-A [data-key=gpus]').textContent"),
        "512 x H100"
    );
    assert_eq!(
        c.eval("document.querySelector('#design-A [data-key=switches-leaf]').textContent"),
        "16",
        "64 servers are two scalable units of 8 leaves"
    );
    // A bad value shows the server's message naming the field, and the page keeps working.
    c.eval("(() => { const i = document.querySelector('#design-A input[name=nics_per_server]'); i.value = '3'; i.dispatchEvent(new Event('input', { bubbles: true })); })()");
    c.wait_for(
        "document.querySelector('#design-A .status').textContent.startsWith('nics_per_server')",
        Duration::from_secs(60),
    );
    // Design B (seed-leaf-spine) gets its busbw plot.
    c.wait_for(
        "document.querySelectorAll('#design-B .busbw path.curve').length === 2",
        Duration::from_secs(180),
    );
    assert!(c.eval("document.querySelector('#design-B .drawing svg') !== null") == true);
    c.assert_drawn_from(&[&server.url()]);
    // The 400 answer to the bad value above is the test's doing.
    c.assert_no_console_errors(&["status of 400"]);
}

/// The app's own page never gets in its own way: 50 rapid changes of each design's server count
/// (some 'input' events, some 'change', between 0 and 300 ms apart, while design A's first
/// simulation of 1,016 GPUs is still running) abort the page's stale requests instead of queueing
/// them. No response is a 503 (nor any other error), nothing reaches the console, and each design
/// ends showing its last value, planned and simulated.
#[test]
fn web_app_keeps_up_with_rapid_form_changes() {
    if !chromium() {
        return;
    }
    let server = Server::start();
    let mut c = Chrome::launch(1600, 1200);
    c.open(&server.url());
    let card = |side: &str| format!("document.querySelector('#design-{side} [data-key=servers]')");
    let (a, b) = (card("A"), card("B"));
    c.wait_for(
        &format!("!!{a} && {a}.textContent === '127' && !!{b} && {b}.textContent === '10'"),
        Duration::from_secs(60),
    );
    let last = c.eval(
        r#"(async () => {
  const a = document.querySelector('#design-A input[name=servers]');
  const b = document.querySelector('#design-B input[name=servers]');
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  for (let i = 0; i < 50; i++) {
    const kind = i % 2 ? 'input' : 'change';
    a.value = String(2 + (i * 7) % 30); a.dispatchEvent(new Event(kind, { bubbles: true }));
    b.value = String(2 + (i * 5) % 14); b.dispatchEvent(new Event(kind, { bubbles: true }));
    await sleep([0, 20, 60, 120, 300][i % 5]);
  }
  return a.value + ' ' + b.value;
})()"#,
    );
    assert_eq!(last, "15 9");
    let done = |side: &str, servers: &str| {
        format!(
            "(() => {{ const r = document.getElementById('design-{side}'); const c = r.querySelector('[data-key=servers]'); return !!c && c.textContent === '{servers}' && r.querySelectorAll('.busbw path.curve').length === 2 && r.querySelector('.status').textContent.startsWith('planned and simulated'); }})()"
        )
    };
    c.wait_for(&done("A", "15"), Duration::from_secs(240));
    c.wait_for(&done("B", "9"), Duration::from_secs(240));
    assert_eq!(
        c.eval("document.querySelector('#design-A [data-key=gpus]').textContent"),
        "120 x H100"
    );
    let bad: Vec<(String, u64)> = c
        .responses()
        .into_iter()
        .filter(|(_, status)| *status >= 400)
        .collect();
    assert_eq!(bad, Vec::<(String, u64)>::new(), "error responses");
    let sims = c
        .requests()
        .iter()
        .filter(|u| u.contains("/api/sim"))
        .count();
    assert!(sims >= 4, "the page simulated only {sims} times");
    let aborted = c
        .events
        .iter()
        .filter(|e| e["method"] == "Network.loadingFailed" && e["params"]["canceled"] == true)
        .count();
    eprintln!(
        "{} requests, {sims} simulations, {aborted} aborted by the page",
        c.requests().len()
    );
    c.assert_no_console_errors(&[]);
    assert_eq!(
        c.eval("document.querySelectorAll('.status.error').length"),
        0,
        "no design shows an error"
    );
}

/// Issue 37 in the web app: a GB200 NVL72 design is drawn with each rack as one NVLink domain
/// block holding its 18 compute trays and 9 NVLink switch trays (the catalog's GB200 NVL72), the
/// trays' HCAs on its edge, visible in Chromium.
#[test]
fn web_app_draws_an_nvl72_rack_as_one_block_with_its_nvlink_switches() {
    if !chromium() {
        return;
    }
    let server = Server::start();
    let mut c = Chrome::launch(1600, 1200);
    c.open(&server.url());
    let a = "document.querySelector('#design-A [data-key=servers]')";
    c.wait_for(
        &format!("!!{a} && {a}.textContent === '127'"),
        Duration::from_secs(60),
    );
    // No simulation: the drawing is the point. Then the GB200 preset, cut to one scalable unit.
    c.eval("(() => { const f = document.querySelector('#design-A form'); f.simulate.checked = false; f.preset.value = 'gb200-nvl72-superpod'; f.preset.dispatchEvent(new Event('change', { bubbles: true })); })()");
    c.wait_for(
        &format!("{a}.textContent === '288'"),
        Duration::from_secs(60),
    );
    c.eval("(() => { const i = document.querySelector('#design-A input[name=servers]'); i.value = '144'; i.dispatchEvent(new Event('input', { bubbles: true })); })()");
    let blocks = "document.querySelectorAll('#design-A .drawing svg g.unit.server.domain')";
    c.wait_for(
        &format!("{a}.textContent === '144' && {blocks}.length === 8"),
        Duration::from_secs(60),
    );
    // Each block: 9 NVLink switch trays and 18 compute trays inside it, shown on the page.
    let per_block = c.eval(&format!(
        "[...{blocks}].map(b => [b.querySelectorAll('.nvlink-switch').length, b.querySelectorAll('.compute-tray').length, b.querySelectorAll('.hca').length].join('/')).join(' ')"
    ));
    assert_eq!(per_block, ["9/18/4"; 8].join(" "));
    let inside = c.eval(&format!(
        "[...{blocks}].every(b => {{ const box = b.querySelector('rect').getBoundingClientRect(); return [...b.querySelectorAll('.nvlink-switch')].every(s => {{ const r = s.getBoundingClientRect(); return r.width > 0 && r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom; }}); }})"
    ));
    assert_eq!(
        inside, true,
        "every NVLink switch tray inside its rack's block"
    );
    assert_eq!(
        c.eval("document.querySelector('#design-A .drawing svg').textContent.includes('GB200 NVL72 rack 1')"),
        true
    );
    // Design B's simulation may be answered 503 while another runs (the page retries).
    c.assert_no_console_errors(&["status of 503"]);
}
