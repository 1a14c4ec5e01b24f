// The page of `railyard serve` (crates/report/src/app.rs inlines this file after `const PRESETS = ...;`
// and `const KEYS = ...;`, the design keys as GET /api/keys describes them).
// Designs are panels cloned from the page's template (two at first; "add a design" adds one, each
// panel's "remove" removes it). Each form's design fields are built from KEYS: the keys marked
// `form`, in the table's order. A spec file uploaded into a form replaces its preset (the server
// validates it as `--spec`); the fields then show the spec's values and send only what was edited.
// A training model adds the step's time and breakdown. Every plan updates the comparison of all
// designs (POST /api/compare: the Pareto chart and cost per token). The download links fetch the
// design's report.html and cabling.csv (retried quietly while the server is busy, as plans are).
// Each design form posts its design on every change (debounced) to /api/plan, then streams
// /api/sim. A newer change aborts the form's older requests (AbortController), so the server stops
// their work as their connections close; /api/sim also carries a client id per form, so the server
// drops the form's older simulation even before it sees the connection go. While the server is busy
// (503) the page waits and retries quietly; real errors are shown in the form's status line.
'use strict';
const FORM_KEYS = KEYS.keys.filter(k => k.form);
const FIELDS = FORM_KEYS.map(k => k.json);
// This page's id: random, so two open pages never supersede each other's simulations.
const PAGE_ID = Math.random().toString(36).slice(2, 10) + Date.now().toString(36);
// Waits between retries while the server answers 503: doubling from 250 ms to 4 s.
const RETRY_FIRST_MS = 250, RETRY_MAX_MS = 4000;

// Bytes of spec file the server takes (crates/report/src/app.rs MAX_SPEC).
const MAX_SPEC = 16 * 1024;

// One field per form key, before the training model: a checkbox for a switch, a number input
// with the key's range for a count or number, a select for a choice or a catalog part, text otherwise.
function buildFields(form) {
  const before = form.model.closest('label');
  for (const k of FORM_KEYS) {
    const label = document.createElement('label');
    label.title = k.help + ' (valid: ' + k.valid + ')';
    let el;
    if (k.kind === 'switch') {
      el = document.createElement('input');
      el.type = 'checkbox';
      label.append(el, ' ' + k.label);
    } else {
      if (k.kind === 'count' || k.kind === 'number') {
        el = document.createElement('input');
        el.type = 'number';
        if (k.min !== undefined) el.min = k.min;
        if (k.max !== undefined) el.max = k.max;
        if (k.step !== undefined) el.step = k.step;
      } else if (k.choices) {
        el = document.createElement('select');
        for (const c of k.choices) {
          const o = document.createElement('option');
          o.textContent = c;
          el.append(o);
        }
      } else {
        el = document.createElement('input');
        el.type = 'text';
      }
      label.append(k.label + ' ', el);
    }
    el.name = k.json;
    form.insertBefore(label, before);
  }
}

function setField(el, v) {
  if (el.type === 'checkbox') el.checked = !!v; else el.value = v;
}

function fill(form, name) {
  const p = PRESETS.presets.find(x => x.name === name);
  if (!p) return;
  form.preset.value = p.name;
  form.uploaded = null;
  form.spec_file.value = '';
  for (const f of FIELDS) {
    setField(form[f], p[f]);
    delete form[f].dataset.touched;
  }
}

function fieldValue(el) {
  if (el.type === 'checkbox') return el.checked;
  if (el.type === 'number') return el.value === '' ? undefined : Number(el.value);
  return el.value;
}

// The preset plus only the fields that differ from it, so an untouched form plans the preset itself;
// with an uploaded spec, the spec plus the fields edited since.
function design(form) {
  const d = {};
  if (form.uploaded) {
    d.spec = form.uploaded.text;
    for (const f of FIELDS) {
      const v = fieldValue(form[f]);
      if (form[f].dataset.touched && v !== undefined) d[f] = v;
    }
  } else {
    const p = PRESETS.presets.find(x => x.name === form.preset.value) || {};
    d.preset = form.preset.value;
    for (const f of FIELDS) {
      const v = fieldValue(form[f]);
      if (v !== undefined && v !== p[f]) d[f] = v;
    }
  }
  if (form.model.value) d.model = form.model.value;
  return d;
}

// Resolves after `ms`, or rejects as soon as `signal` aborts.
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}

// POSTs `body` to `url`; while the server answers 503 (busy), calls `busy` and tries again after a
// growing wait, until an answer that is not 503 or until `signal` aborts (the promise rejects then).
async function post(url, body, signal, busy) {
  for (let wait = RETRY_FIRST_MS; ; wait = Math.min(2 * wait, RETRY_MAX_MS)) {
    const r = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body, signal });
    if (r.status !== 503) return r;
    await r.arrayBuffer();
    busy();
    await sleep(wait, signal);
  }
}

// An error answer's message: `{"error", "field"}` as the API sends it, or the HTTP status.
async function message(r) {
  try {
    const j = await r.json();
    return (j.field ? j.field + ': ' : '') + j.error;
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    return 'HTTP ' + r.status;
  }
}

function setup(root, initial) {
  const form = root.querySelector('form');
  const status = root.querySelector('.status');
  const client = PAGE_ID + '-' + root.id;
  let current = null, timer = null;
  function say(text, error) {
    status.textContent = text;
    status.classList.toggle('error', !!error);
  }
  async function update() {
    if (current) current.abort();
    const ctl = new AbortController();
    current = ctl;
    const signal = ctl.signal;
    const body = JSON.stringify(design(form));
    say('planning…');
    try {
      const r = await post('/api/plan', body, signal, () => say('planning: waiting for the server…'));
      if (!r.ok) { say(await message(r), true); return; }
      const j = await r.json();
      if (form.uploaded) {
        for (const f of FIELDS) if (!form[f].dataset.touched && j.fields[f] !== undefined) setField(form[f], j.fields[f]);
      }
      showTrain(j.train);
      results.set(root, {
        cost_usd: j.summary.cost_usd.total,
        bisection_tbs: j.summary.bisection_gbps / 1000,
        tokens_per_s: j.train ? j.train.tokens_per_s : null,
        network_usd_per_million_tokens: j.train ? j.train.network_usd_per_million_tokens : null,
        network_usd_per_million_tokens_band: j.train && j.train.error_band ? j.train.error_band.network_usd_per_million_tokens || null : null,
        name: j.name,
      });
      refreshComparison();
      root.querySelector('.line').textContent = j.design_line;
      root.querySelector('.cards-box').innerHTML = j.summary_html;
      root.querySelector('.drawing').innerHTML = j.drawing_svg;
      root.querySelector('.cost').innerHTML = j.cost_svg;
      root.querySelector('.busbw').innerHTML = '';
      say('planned');
      if (form.simulate.checked) await simulate(body, signal);
    } catch (e) {
      // Aborted: a newer change superseded this one, which says what happens now.
      if (signal.aborted) return;
      say(e instanceof TypeError ? 'server unreachable' : 'failed: ' + e.message, true);
    } finally {
      if (current === ctl) current = null;
    }
  }
  async function simulate(body, signal) {
    say('simulating…');
    const url = '/api/sim?client=' + encodeURIComponent(client);
    const r = await post(url, body, signal, () => say('simulating: waiting for the server…'));
    if (!r.ok) { say('not simulated: ' + await message(r), true); return; }
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = '', finished = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!line.trim()) continue;
        const m = JSON.parse(line);
        if (m.progress) say('simulating: ' + m.progress);
        if (m.result) {
          finished = true;
          root.querySelector('.busbw').innerHTML = m.result.busbw_svg;
          say('planned and simulated' + (m.result.notes.length ? ' (' + m.result.notes.join('; ') + ')' : ''));
        }
      }
      if (done) break;
    }
    if (!finished && !signal.aborted) say('the simulation stopped before its result', true);
  }
  function showTrain(t) {
    const box = root.querySelector('.train');
    if (!t) { box.innerHTML = ''; return; }
    const usd = t.network_usd_per_million_tokens;
    box.innerHTML = '<p><b>' + t.model + '</b>: step <span data-key="step-time">' + t.step_time_s.toFixed(3) +
      ' s</span>, <span data-key="tokens-per-s">' + Math.round(t.tokens_per_s).toLocaleString('en-US') +
      '</span> tokens/s, network $' + usd.toFixed(4) + ' per million tokens (4 years)</p>' + t.breakdown_html;
  }
  // A download link fetches the design's file when clicked and hands it to the browser.
  for (const [sel, url, name] of [['.get-report', '/api/report', 'report.html'], ['.get-cabling', '/api/cabling', 'cabling.csv']]) {
    root.querySelector(sel).addEventListener('click', async e => {
      e.preventDefault();
      // Busy (503: big answers wait for their clients) is retried quietly, as the plan is.
      const r = await post(url, JSON.stringify(design(form)), new AbortController().signal, () => say(name + ': waiting for the server…'));
      if (!r.ok) { say(await message(r), true); return; }
      const a = document.createElement('a');
      a.href = URL.createObjectURL(await r.blob());
      a.download = name;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    });
  }
  buildFields(form);
  form.preset.addEventListener('change', () => fill(form, form.preset.value));
  form.spec_file.addEventListener('change', async () => {
    const file = form.spec_file.files[0];
    if (!file) return;
    if (file.size > MAX_SPEC) { say(file.name + ': ' + file.size + ' bytes is more than a spec file this server takes; valid: at most ' + MAX_SPEC + ' bytes', true); form.spec_file.value = ''; return; }
    form.uploaded = { name: file.name, text: await file.text() };
    for (const f of FIELDS) delete form[f].dataset.touched;
    update();
  });
  form.addEventListener('input', e => {
    if (e.target && FIELDS.includes(e.target.name)) e.target.dataset.touched = '1';
    clearTimeout(timer); timer = setTimeout(update, 250);
  });
  form.addEventListener('change', e => {
    if (e.target === form.spec_file) return;
    if (e.target && FIELDS.includes(e.target.name)) e.target.dataset.touched = '1';
    clearTimeout(timer); timer = setTimeout(update, 50);
  });
  root.stop = () => { if (current) current.abort(); clearTimeout(timer); };
  form.addEventListener('submit', e => e.preventDefault());
  fill(form, initial);
  update();
}

// Each panel's latest plan numbers, for the comparison.
const results = new Map();
let compareCtl = null, compareTimer = null;

function panels() {
  return [...document.querySelectorAll('#designs .design')];
}

function letter(root) {
  return root.id.replace('design-', '');
}

// The comparison of every planned design: a table here, the charts from the server.
function refreshComparison() {
  clearTimeout(compareTimer);
  compareTimer = setTimeout(async () => {
    const planned = panels().filter(p => results.has(p));
    const table = document.getElementById('compare-table');
    let head = '<thead><tr><th></th>', rows = { 'network cost ($)': [], 'bisection (Tb/s)': [], 'step time': [], 'tokens/s': [], 'network $ per M tokens': [] };
    for (const p of planned) {
      const r = results.get(p);
      head += '<th class="num">' + letter(p) + '</th>';
      rows['network cost ($)'].push(Math.round(r.cost_usd).toLocaleString('en-US'));
      rows['bisection (Tb/s)'].push(r.bisection_tbs.toFixed(1));
      const step = p.querySelector('[data-key=step-time]');
      rows['step time'].push(step ? step.textContent : '');
      rows['tokens/s'].push(r.tokens_per_s ? Math.round(r.tokens_per_s).toLocaleString('en-US') : '');
      rows['network $ per M tokens'].push(r.network_usd_per_million_tokens ? r.network_usd_per_million_tokens.toFixed(4) : '');
    }
    let body = '<tbody>';
    for (const [k, v] of Object.entries(rows)) body += '<tr><td>' + k + '</td>' + v.map(x => '<td class="num">' + x + '</td>').join('') + '</tr>';
    table.innerHTML = head + '</tr></thead>' + body + '</tbody>';
    if (compareCtl) compareCtl.abort();
    const ctl = new AbortController();
    compareCtl = ctl;
    const designs = planned.map(p => Object.assign({ label: letter(p) }, results.get(p)));
    try {
      const r = await post('/api/compare', JSON.stringify({ designs }), ctl.signal, () => {});
      if (!r.ok) return;
      const j = await r.json();
      const sec = document.getElementById('comparison');
      sec.querySelector('.pareto').innerHTML = j.pareto_svg;
      sec.querySelector('.cost-per-token').innerHTML = j.cost_per_token_svg || '';
      // The winner only beyond the model's error bands (study's verdict), else the tie.
      sec.querySelector('.verdict').textContent = j.verdict ? j.verdict.text : '';
    } catch (e) {
      if (!ctl.signal.aborted) throw e;
    }
  }, 100);
}

let nextLetter = 0;
// A new design panel from the template, planned from `preset`.
function addDesign(preset) {
  const root = document.getElementById('design-template').content.firstElementChild.cloneNode(true);
  let n = nextLetter++, id = '';
  do { id = String.fromCharCode(65 + (n % 26)) + id; n = Math.floor(n / 26) - 1; } while (n >= 0);
  root.id = 'design-' + id;
  root.querySelector('.title').textContent = 'Design ' + id;
  root.querySelector('.remove').addEventListener('click', () => {
    if (root.stop) root.stop();
    results.delete(root);
    root.remove();
    refreshComparison();
  });
  document.getElementById('designs').append(root);
  setup(root, preset);
  return root;
}

const def = (PRESETS.presets.find(p => p.default) || PRESETS.presets[0]).name;
addDesign(def);
addDesign('seed-leaf-spine');
document.getElementById('add-design').addEventListener('click', () => addDesign('seed-leaf-spine'));
