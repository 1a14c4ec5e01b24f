// The page of `railyard serve` (crates/report/src/app.rs inlines this file after `const PRESETS = ...;`
// and `const KEYS = ...;`, the design keys as GET /api/keys describes them).
// Each form's design fields are built from KEYS: the keys marked `form`, in the table's order.
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

// One field per form key, before the "simulate busbw" box: a checkbox for a switch, a number input
// with the key's range for a count or number, a select for a choice or a catalog part, text otherwise.
function buildFields(form) {
  const before = form.simulate.closest('label');
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

function fill(form, name) {
  const p = PRESETS.presets.find(x => x.name === name);
  if (!p) return;
  form.preset.value = p.name;
  for (const f of FIELDS) {
    if (form[f].type === 'checkbox') form[f].checked = !!p[f]; else form[f].value = p[f];
  }
}

// The preset plus only the fields that differ from it, so an untouched form plans the preset itself.
function design(form) {
  const p = PRESETS.presets.find(x => x.name === form.preset.value) || {};
  const d = { preset: form.preset.value };
  for (const f of FIELDS) {
    const el = form[f];
    let v;
    if (el.type === 'checkbox') v = el.checked;
    else if (el.type === 'number') { if (el.value === '') continue; v = Number(el.value); }
    else v = el.value;
    if (v !== p[f]) d[f] = v;
  }
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
  buildFields(form);
  form.preset.addEventListener('change', () => fill(form, form.preset.value));
  form.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(update, 250); });
  form.addEventListener('change', () => { clearTimeout(timer); timer = setTimeout(update, 50); });
  form.addEventListener('submit', e => e.preventDefault());
  fill(form, initial);
  update();
}

const def = (PRESETS.presets.find(p => p.default) || PRESETS.presets[0]).name;
setup(document.getElementById('design-A'), def);
setup(document.getElementById('design-B'), 'seed-leaf-spine');
