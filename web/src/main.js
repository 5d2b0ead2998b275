// hloscope explorer: model editor, before/after graphs that pan and zoom
// together, memory timelines linked to the graphs, HLO diff, compile scaling,
// metrics, runs and a guided tour. State lives in the URL hash, so a link
// (or a reload) restores the view.
import './style.css';
import { get, post, query, results, ApiError } from './api.js';
import { createEditor } from './editor.js';
import { GraphPane, syncPanes, buffersOf } from './graph.js';
import { Timeline } from './memory.js';
import { Outline, searchAll } from './outline.js';
import { bytes, seconds, int, ratio, ratioPhrase, esc, parseXlaBytes } from './format.js';
import { renderHloDiff } from './hlo.js';
import { measureScaling } from './scaling.js';
import { renderMetrics, renderRun } from './panels.js';
import { startTour } from './tour.js';
import { FRONTENDS, renderGoodput } from './goodput.js';
import { isHlo } from './lint.js';
import { rerollAsScan, renderWhatif } from './whatif.js';
import { initPair, openPair } from './compare.js';

const $ = (s) => document.querySelector(s);
const MODES = {
  loop: { a: { loop: 'unrolled' }, b: { loop: 'scan' }, la: 'unrolled', lb: 'scan' },
  stage: { la: 'traced', lb: 'optimized' },
  reroll: { la: 'as given', lb: 'rerolled as scan' },
};
// The current mode, with the residuals compare's B side (#res-b) filled in.
function modeSpec() {
  if (state.mode !== 'residuals') return MODES[state.mode];
  const rb = state.rb || 'offload';
  return { a: { residuals: 'save' }, b: { residuals: rb }, la: 'residuals: save', lb: `residuals: ${rb}` };
}
// Residuals exist only in a differentiated step: a model with a "train"
// section compares its training step (?mode=train).
function hasTrain(text) {
  return !!(modelOf(text) || {}).train;
}
// The editor's text as a model description, or null (HLO text, or being edited).
function modelOf(text) {
  try { const m = JSON.parse(text); return m && typeof m === 'object' ? m : null; } catch { return null; }
}
// A pane's label: a training step says so, with its residual policy.
function labelOf(side, S) {
  if (S && S.mode === 'train') return `train step · residuals: ${S.residuals}`;
  if (side === 'a' && view.failA) return `train step · residuals: ${view.failA.residuals}`;
  return modeSpec()[`l${side}`];
}

// ---- state and URL ---------------------------------------------------------
export const state = {
  mode: 'loop', a: '', b: '', stage: 'optimized', expand: '', computation: '',
  tab: 'compare', sel: '', side: 'a', q: '', ex: '', grun: '', gfe: '', gsteps: '', rb: '',
  o: '', // the sidebar's settings (loop, residuals, device, batch) as a query string
};
// failA: the training step of side A did not fit ({error, residuals, id}); B
// shows, and A's out-of-memory result (id) its graph and timeline.
// sig: per result page, the source and settings it was computed from
// (signature()), so that an edit afterwards marks it stale.
const view = { summaries: {}, ratios: null, diffCounts: null, goodput: {}, failA: null, sig: {} };
// While the tour runs it works in a workspace of its own: nothing it loads
// reaches localStorage, and its end puts the user's editor, settings, view
// and storage back (tourWorkspace).
let touring = false;

function readHash() {
  const h = new URLSearchParams(location.hash.replace(/^#/, ''));
  for (const k of Object.keys(state)) if (h.has(k)) state[k] = h.get(k);
}
function writeHash() {
  const h = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v) h.set(k, v);
  history.replaceState(null, '', `#${h.toString()}`);
  // The ids this browser shows, so that a reload keeps the editor's own text.
  if (!touring) localStorage.setItem('hloscope.ids', `${state.a}/${state.b}`);
}

// ---- editor and controls -----------------------------------------------------
const editor = createEditor($('#editor'), {
  onFile: (f) => openFile(f),
  onPair: (files) => openPair(files), // two dumps dropped: the Dump pair tab
  onChange: (text) => {
    if (!touring) localStorage.setItem('hloscope.model', text);
    const r = editor.repeat();
    $('#layers').value = r ?? '';
    $('#layers').disabled = r == null;
    hideError();
    refreshStale();
  },
});

// A model description is sent as it is, HLO text (a pasted, opened or
// dropped dump) as {"hlo": text}: its errors' lines and columns are the
// text's own.
const bodyOf = (text) => (isHlo(text) ? JSON.stringify({ hlo: text }) : text);
async function openFile(f) {
  const text = await f.text();
  editor.text = text;
  state.ex = '';
  $('#example').value = '';
  writeHash();
}

// ---- what a result was computed from ------------------------------------------
// A model is compared by its canonical form (keys sorted, whitespace dropped:
// what the server hashes), so reformatting it, or the indented text a link
// brings (GET /source), is not an edit; HLO text is compared as it is.
function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}
const sourceKey = (text) => { const m = modelOf(text); return m ? canonical(m) : text; };
// Source and settings: the compare pages also depend on the before/after mode.
function signature(page) {
  const base = [sourceKey(editor.text), canonical(overrides())];
  if (page === 'compare') base.push(state.mode, state.mode === 'residuals' ? state.rb || 'offload' : '');
  return JSON.stringify(base);
}
// Dims a result page whose source or settings changed since it was
// computed; the note says what refreshes it.
const STALE = {
  compare: ['compare', 'hlo', 'metrics'], scaling: ['scaling'], goodput: ['goodput'], run: ['run'],
};
export function refreshStale() {
  for (const [key, pages] of Object.entries(STALE)) {
    const stale = !!view.sig[key] && view.sig[key] !== signature(key);
    for (const pg of pages) $(`#page-${pg}`).classList.toggle('stale', stale);
  }
}
function markComputed(key) {
  view.sig[key] = signature(key);
  refreshStale();
}

async function loadExamples() {
  const [ex, dev] = await Promise.all([get('/v1/examples'), get('/v1/devices')]);
  for (const e of ex.examples) {
    const o = new Option(`${e.name}${e.description ? ` — ${e.description}` : ''}`, e.name);
    o.title = e.description || e.model;
    $('#example').add(o);
  }
  for (const d of dev.devices) {
    $('#device').add(new Option(`${d.name} · ${bytes(d.hbm_bytes)}`, d.name));
  }
  view.defaultDevice = dev.default;
  deviceLabel();
  view.devices = dev.devices;
}

// "model's (NAME)": the device the model text names, else the server default.
function deviceLabel() {
  const m = modelOf(editor.text);
  const name = m && typeof m.device === 'string' ? m.device : view.defaultDevice || '';
  $('#device').options[0].text = name ? `model's (${name})` : "model's";
}

export async function pickExample(name) {
  state.ex = name;
  $('#example').value = name;
  const model = await get(`/v1/examples/${encodeURIComponent(name)}`, { text: true });
  editor.text = typeof model === 'string' ? model : JSON.stringify(model, null, 2);
  deviceLabel();
  writeHash();
}

function overrides() {
  const o = {};
  for (const k of SETTINGS) {
    const v = $(`#${k}`).value.trim();
    if (v) o[k] = v;
  }
  return o;
}
const SETTINGS = ['loop', 'residuals', 'device', 'batch'];
function setOverrides(o) {
  for (const k of SETTINGS) $(`#${k}`).value = o[k] != null ? String(o[k]) : '';
  deviceLabel();
}

// ---- progress and errors ---------------------------------------------------
let busy = 0;
async function withProgress(label, fn) {
  const p = $('#progress');
  const t0 = performance.now();
  busy++;
  p.classList.remove('hidden');
  const tick = () => { p.querySelector('.text').textContent = `${label} ${((performance.now() - t0) / 1000).toFixed(1)} s`; };
  tick();
  const timer = setInterval(tick, 100);
  for (const b of document.querySelectorAll('.buttons button, #scaling-btn, #goodput-btn')) b.disabled = true;
  try {
    return await fn((l) => { label = l; tick(); });
  } finally {
    clearInterval(timer);
    if (--busy === 0) {
      p.classList.add('hidden');
      for (const b of document.querySelectorAll('.buttons button, #scaling-btn, #goodput-btn')) b.disabled = false;
    }
  }
}

function hideError() {
  $('#error').classList.add('hidden');
  for (const c of document.querySelectorAll('.controls .bad')) c.classList.remove('bad');
}

export function showError(err, { lineOffset = 0, ...ctx } = {}) {
  const e = err instanceof ApiError ? err : new ApiError(0, { message: String(err && err.message || err) });
  if (e.code === 'out_of_memory') { showOom(e, ctx); return; }
  const box = $('#error');
  let where = '';
  if (!(e.line > 0) && e.instruction && isHlo(editor.text)) {
    // HLO text: an error about an instruction is marked on its line.
    const lines = editor.text.split('\n');
    const name = e.instruction.replace(/^%/, '');
    const k = lines.findIndex((l) => new RegExp(`^\\s*(ROOT\\s+)?%?${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*=`).test(l));
    if (k >= 0) { e.line = k + 1 + lineOffset; e.column = lines[k].search(/\S/) + 1; }
  }
  if (e.line > 0) {
    const loc = editor.showError({ ...e, line: e.line - lineOffset });
    where = `Line ${loc ? loc.line : e.line - lineOffset}, column ${e.column}`;
  } else if (e.path && e.path[0] === '/') {
    const loc = editor.showError(e);
    where = `${e.path}${loc ? ` (line ${loc.line})` : ''}`;
  } else if (e.path && e.path[0] === '?') {
    const c = $(`#${e.path.slice(1)}`);
    if (c) c.classList.add('bad');
    where = `setting ${e.path.slice(1)}`;
  }
  box.innerHTML = `${where ? `<span class="where" data-testid="error-where">${esc(where)}</span>: ` : ''}${esc(plainMessage(e.message))}` +
    (e.code ? ` <span class="muted">(${esc(e.code)}${e.status ? `, HTTP ${e.status}` : ''})</span>` : '');
  box.classList.remove('hidden');
}

// A comparison's error names its side as the API does ("variant a: ..."):
// say which side that is in the explorer's words.
function plainMessage(msg) {
  return String(msg || '').replace(/^variant (a|b): /, (m, side) => {
    const label = state.mode === 'stage' ? '' : modeSpec()[`l${side}`];
    return `${side.toUpperCase()}${label ? ` (${label})` : ''}: `;
  });
}

function showOom(e, ctx = {}) {
  setTab('compare');
  const el = $('#oom');
  renderOom(el, e, 'Out of device memory');
  for (const s of ['#summary', '#panes', '#graph-tools', '#empty', '#details']) $(s).classList.add('hidden');
  markComputed('compare'); // the report is this source's result
  if (ctx.text != null) largestAtPeak(el, e, ctx);
}

// The figures of XLA's out-of-memory report, in bytes.
function oomFigures(msg) {
  const used = /Used ([\d.]+\w?) of ([\d.]+\w?) (\w+)/.exec(msg);
  const st = /stack ([\d.]+\w?) of residuals on the device and ([\d.]+\w?) on the host/.exec(msg);
  return {
    used: used ? parseXlaBytes(used[1]) : NaN, cap: used ? parseXlaBytes(used[2]) : NaN, space: used ? used[3] : 'hbm',
    stackedDevice: st ? parseXlaBytes(st[1]) : NaN, stackedHost: st ? parseXlaBytes(st[2]) : NaN,
  };
}

// side: the report sits above B's graph (a training step's A does not fit):
// its first line is short enough to share a row with the title.
function renderOom(el, e, title, { side = false } = {}) {
  const msg = plainMessage(e.message);
  const f = oomFigures(msg);
  const rows = [...msg.matchAll(/\d+\. Size: ([^\n]+)\n\s+Operator: ([^\n]+)\n\s+Shape: ([^\n]+)/g)];
  el.innerHTML = `<h2 data-testid="oom-title">${esc(title)}</h2>
    <p data-testid="oom-used">${isNaN(f.used) ? esc(msg.split('\n')[0])
    : `Needs <b>${bytes(f.used)}</b>${side ? '' : ` of device memory (${esc(f.space)})`}; the device has <b>${bytes(f.cap)}</b>: <b>${bytes(f.used - f.cap)}</b> too much.`}</p>
    <button class="small oom-more" data-testid="oom-more" title="advice and the largest buffers at the peak">Details</button>
    ${isNaN(f.stackedDevice) ? '' : `<p data-testid="oom-stacked">The training step's scanned loops stack <b>${bytes(f.stackedDevice)}</b> of residuals on the device and ${bytes(f.stackedHost)} on the host.</p>`}
    <p data-testid="oom-advice" class="advice">Measuring what would fit…</p>
    ${rows.length ? `<table class="xla-rows"><thead><tr><th>#</th><th>size</th><th>operator</th><th>shape</th></tr></thead><tbody>${rows.map((r, k) =>
    `<tr><td>${k + 1}</td><td>${bytes(parseXlaBytes(r[1]))}</td><td>${esc(r[2])}</td><td>${esc(r[3])}</td></tr>`).join('')}</tbody></table>` : ''}
    <details><summary>XLA's report</summary><pre>${esc(msg)}</pre></details>`;
  el.classList.remove('hidden');
  el.classList.remove('expanded');
  el.querySelector('.oom-more').onclick = () => el.classList.toggle('expanded');
}

// What would help, for this case: S is the same program compiled for the
// largest preset (big), cap the capacity it ran out of. Weights that alone
// exceed the device are said so (no loop or policy helps); a model that
// already scans is not told to scan; residual policies only for a
// training step, naming the ones it does not use yet.
export function oomAdvice({ cap, S, big }) {
  if (!S) return `It does not fit the largest preset${big ? ` (${esc(big.name)}, ${bytes(big.hbm_bytes)})` : ''} either: make the model smaller (fewer layers, narrower layers, a smaller batch).`;
  const weights = S.memory.stats.device.argument_bytes;
  const bigger = `a device with more memory (on ${esc(big.name)} the program peaks at ${bytes(S.memory.peak_device_bytes)})`;
  if (weights > cap) {
    return `The parameters and inputs alone take <b>${bytes(weights)}</b>, more than the device's ${bytes(cap)}: no loop or residual policy changes that. ` +
      `Use ${bigger}, or a smaller model.`;
  }
  const train = S.mode === 'train';
  const tips = [];
  if (S.loop !== 'scan') tips.push('<b>loop: scan</b> (one layer\u2019s temporaries live at a time, not every layer\u2019s)');
  if (train) {
    const other = ['offload', 'remat', 'remat_offload', 'auto'].filter((r) => r !== S.residuals);
    tips.push(`a residual policy that moves the stacked residuals to host memory or recomputes them (${other.map((r) => `<b>residuals: ${r}</b>`).join(', ')})`);
  }
  tips.push('a smaller <b>batch</b>', 'fewer layers', bigger);
  const already = S.loop === 'scan' ? `It already scans${train ? ` (residuals: ${esc(S.residuals)})` : ''}. ` : '';
  const fwd = !train && S.loop === 'scan' ? 'Residual policies (offload, remat) act on a training step\u2019s saved activations, not on this forward pass. ' : '';
  return `${already}${fwd}Parameters and inputs take ${bytes(weights)} of the ${bytes(cap)}. What can help: ${tips.join('; ')}.`;
}

// XLA's report lists few allocations: compile the same model for the largest
// device preset (compile allocates nothing) and list the buffers live at its
// peak; that compile also says what the advice can build on.
async function largestAtPeak(el, e, { text, ov }) {
  const big = (view.devices || []).slice().sort((x, y) => y.hbm_bytes - x.hbm_bytes)[0];
  const advice = el.querySelector('[data-testid="oom-advice"]');
  const cap = oomFigures(e.message).cap;
  if (!big) { advice.remove(); return; }
  const variant = /^variant (a|b):/.exec(e.message);
  const extra = variant && state.mode !== 'stage' ? modeSpec()[variant[1]] : {};
  let S = null;
  try {
    S = await post(`/v1/compile${query({ ...ov, ...extra, device: big.name })}`, bodyOf(text));
    const mem = await get(`${results(S.id)}/memory.json`);
    const live = (mem.peak.device.largest_live || []).slice(0, 10);
    const box = document.createElement('div');
    box.dataset.testid = 'oom-largest';
    box.innerHTML = `<h3>Largest buffers live at the peak (${bytes(mem.peak.device.bytes)} at ${esc(mem.peak.device.instruction)})</h3>
      <table><thead><tr><th>#</th><th>buffer</th><th>size</th><th>shape</th><th>op_name</th><th>kind</th></tr></thead><tbody>${live.map((b, k) =>
      `<tr><td>${k + 1}</td><td>${esc(b.name)}</td><td>${bytes(b.bytes)}</td><td>${esc(b.shape)}</td><td>${esc(b.op_name || '')}</td><td>${esc(b.kind)}</td></tr>`).join('')}</tbody></table>
      <p class="muted">Measured by compiling the same model for ${esc(big.name)} (${bytes(big.hbm_bytes)}).</p>`;
    el.insertBefore(box, el.querySelector('details'));
    el.querySelector('table.xla-rows')?.remove(); // the report's list is cut short
  } catch { /* the report above stands; S stays null when even the largest does not fit */ }
  if (advice) advice.innerHTML = isNaN(cap) ? '' : oomAdvice({ cap, S, big });
}

// ---- compile / compare / run -------------------------------------------------
export async function compile() {
  hideError();
  editor.clearErrors();
  const text = editor.text;
  $('#whatif').classList.add('hidden');
  if (isHlo(text) && state.mode !== 'stage' && state.mode !== 'reroll') {
    // HLO text has no loop or residuals to vary: before/after is its two stages.
    state.mode = 'stage';
    $('#mode').value = 'stage';
    $('#res-b').classList.add('hidden');
  }
  const ov = overrides();
  const train = state.mode === 'residuals' && hasTrain(text);
  const spec = modeSpec();
  return withProgress(state.mode === 'stage' ? 'Compiling…' : `Compiling ${train ? 'the training step with ' : ''}${spec.la} and ${spec.lb}…`, async () => {
    try {
      view.failA = null;
      if (train) {
        await compileTrainSteps(text, ov, spec);
        return;
      }
      if (state.mode === 'reroll') {
        // A: the module as given; B: its reroll, a result of its own.
        const r = await post(`/v1/compile${query(ov)}`, bodyOf(text));
        const { whatif, b, summary } = await rerollAsScan(r.id);
        view.summaries = b ? { [r.id]: r, [b]: summary } : { [r.id]: r };
        view.ratios = null; view.diffCounts = null;
        Object.assign(state, { a: r.id, b: b || r.id });
        renderWhatif($('#whatif'), whatif);
      } else if (state.mode === 'stage') {
        const r = await post(`/v1/compile${query(ov)}`, bodyOf(text));
        view.summaries = { [r.id]: r };
        view.ratios = null; view.diffCounts = null;
        Object.assign(state, { a: r.id, b: r.id });
      } else {
        const m = spec;
        const shared = { ...ov };
        for (const k of Object.keys(m.a)) delete shared[k];
        // The model text goes in verbatim on its own line: syntax errors keep
        // their column, and their line is one more than the editor's.
        const body = `{"model":\n${text}\n,"a":${JSON.stringify(m.a)},"b":${JSON.stringify(m.b)}}`;
        const r = await post(`/v1/compare${query(shared)}`, body);
        view.summaries = { [r.a.id]: r.a, [r.b.id]: r.b };
        view.ratios = r.ratios; view.diffCounts = r.diff && r.diff.counts;
        Object.assign(state, { a: r.a.id, b: r.b.id });
      }
      Object.assign(state, { sel: '', expand: '', computation: '', o: query(ov).slice(1) });
      writeHash();
      markComputed('compare');
      await showResults();
    } catch (e) {
      showError(e, { lineOffset: state.mode === 'stage' ? 0 : 1, text, ov });
    }
  });
}

// The training step with residuals saved (A) and per #res-b (B), as two
// compiles: A may run out of device memory while B fits, and then the OOM
// report shows above B's graph and memory timeline.
async function compileTrainSteps(text, ov, spec) {
  const shared = { ...ov, mode: 'train' };
  delete shared.residuals;
  const [ra, rb] = await Promise.allSettled([spec.a, spec.b].map((v) => post(`/v1/compile${query({ ...shared, ...v })}`, text)));
  const oomA = ra.status === 'rejected' && ra.reason.code === 'out_of_memory';
  if (rb.status === 'rejected' || (ra.status === 'rejected' && !oomA)) {
    const e = ra.status === 'rejected' ? ra.reason : rb.reason;
    showError(e, { text, ov: { ...shared, ...(ra.status === 'rejected' ? spec.a : spec.b) } });
    return;
  }
  const A = oomA ? null : ra.value, B = rb.value;
  view.summaries = A ? { [A.id]: A, [B.id]: B } : { [B.id]: B };
  view.ratios = null; view.diffCounts = null;
  view.failA = oomA ? { error: ra.reason, residuals: spec.a.residuals, id: ra.reason.result && ra.reason.result.id, ctx: { text, ov: { ...shared, ...spec.a } } } : null;
  Object.assign(state, { a: A ? A.id : '', b: B.id, sel: '', expand: '', computation: '', o: query(ov).slice(1) });
  writeHash();
  markComputed('compare');
  await showResults();
}

async function run() {
  hideError();
  editor.clearErrors();
  return withProgress('Running on the emulated device…', async () => {
    try {
      const r = await post(`/v1/run${query(overrides())}`, bodyOf(editor.text));
      state.run = r.id;
      markComputed('run');
      setTab('run');
      await renderRun($('#run'), r);
    } catch (e) { showError(e); }
  });
}

// ---- goodput (tracing-bound steps) ------------------------------------------
const goodputQuery = () => query({ steps: state.gsteps || 10, frontend: state.gfe || 'hloscope' });

// Runs the current model (POST /v1/run: a store hit when it ran before), then
// its steps with the panel's settings (GET /steps.json, cached by the server).
export async function measureGoodput() {
  hideError();
  editor.clearErrors();
  const n = Math.min(100, Math.max(1, parseInt($('#gp-steps').value, 10) || 10));
  $('#gp-steps').value = n;
  Object.assign(state, { gfe: $('#gp-frontend').value, gsteps: String(n) });
  writeHash();
  return withProgress(`Running ${n} steps…`, async (label) => {
    try {
      const r = await post(`/v1/run${query(overrides())}`, bodyOf(editor.text));
      label(`Re-tracing ${n} steps…`);
      state.grun = r.id;
      markComputed('goodput');
      writeHash();
      return await showGoodput();
    } catch (e) { showError(e); return null; }
  });
}

async function showGoodput() {
  if (!state.grun) return null;
  const url = `${results(state.grun)}/steps.json${goodputQuery()}`;
  const st = await get(url);
  view.goodput[st.loop] = st;
  view.lastGoodput = st;
  renderGoodput($('#goodput'), st);
  $('#gp-links').innerHTML = `<a href="${esc(url)}" target="_blank">steps.json</a> · <a href="${esc(url.replace('/steps.json', '/steps.svg'))}" target="_blank">server chart (SVG)</a>`;
  return st;
}

// ---- before / after --------------------------------------------------------
const panes = {};
const timelines = {};
let follow, outline;
function initPanes() {
  const handlers = {
    onClick: (p, id) => selectNode(p.side, id),
    onDblClick: (p, id) => { const n = p.nodes.get(id); if (n && n.opcode === 'layer') toggleExpand(n.group || n.layer); },
    onHover: (p, id) => hoverNode(p.side, id),
    onViewChange: (p) => follow && $('#sync').checked && follow(p, p === panes.a ? panes.b : panes.a),
    onClusterClick: (p, id) => showCluster(p.side, id),
  };
  for (const s of ['a', 'b']) {
    panes[s] = new GraphPane($(`#pane-${s} .graph`), handlers);
    panes[s].side = s;
    timelines[s] = new Timeline($(`#pane-${s} .timeline`), { onHover: (b) => hoverBuffer(s, b), onSelect: (b) => selectBuffer(s, b) });
  }
  follow = syncPanes();
  outline = new Outline($('#outline'), {
    onOpen: (path) => openGroup(path),
    onReveal: (path) => revealGroup(outlineSide(), path),
    onClose: (path) => toggleExpand(path),
    onSide: (s) => { state.side = s; writeHash(); showOutline(); if (state.q) search(state.q); },
  });
}

const stageOf = (side) => (state.mode === 'stage' ? (side === 'a' ? 'traced' : 'optimized') : state.stage);
const summaryOf = async (id) => view.summaries[id] || (view.summaries[id] = await get(results(id)));

export async function showResults() {
  const failA = view.failA;
  if ((!state.a && !failA) || !state.b) return;
  $('#oom').classList.add('hidden');
  $('#empty').classList.add('hidden');
  for (const s of ['#summary', '#panes', '#graph-tools']) $(s).classList.remove('hidden');
  $('#stage').disabled = state.mode === 'stage';
  $('#stage').value = state.stage;
  $('#mode').value = state.mode;
  let A, B;
  try {
    [A, B] = await Promise.all([failA ? null : summaryOf(state.a), summaryOf(state.b)]);
  } catch (e) { showError(e); return; }
  $('#pane-a .pane-title').innerHTML = A ? `A · ${esc(labelOf('a', A))} <span class="tag">${esc(A.module)} · ${esc(stageOf('a'))} · ${esc(A.device)}</span>`
    : `A · ${esc(labelOf('a'))} <span class="tag bad-tag">out of device memory</span>`;
  $('#pane-b .pane-title').innerHTML = `B · ${esc(labelOf('b', B))} <span class="tag">${esc(B.module)} · ${esc(stageOf('b'))} · ${esc(B.device)}</span>`;
  if (failA) {
    const el = $('#oom');
    renderOom(el, failA.error, `A · residuals ${failA.residuals}: the step does not fit`, { side: true });
    el.classList.add('oom-side');
    largestAtPeak(el, failA.error, failA.ctx);
  } else $('#oom').classList.remove('oom-side');
  renderSummary(A, B);
  await loadGraphs();
  loadTimelines();
  if (state.tab === 'hlo') showHlo();
  if (state.tab === 'metrics') showMetrics();
}

async function loadGraphs() {
  $('#details').classList.add('hidden');
  $('#panes').classList.remove('with-details');
  for (const s of ['a', 'b']) timelines[s].select(null); // selectNode below marks the new selection's
  await Promise.all(['a', 'b'].map(async (s) => {
    if (s === 'a' && view.failA && !view.failA.id) {
      panes.a.showMessage(`<b>out_of_memory</b>: the training step with residuals ${esc(view.failA.residuals)} does not fit the device (the report is above); B fits.`);
      return;
    }
    panes[s].error = null;
    try {
      await panes[s].load({ id: sideId(s), stage: stageOf(s), expand: state.expand, computation: state.computation });
    } catch (e) {
      panes[s].error = e;
      panes[s].showMessage(`<b>${esc(e.code || 'error')}</b>: ${esc(e.message)}`);
    }
  }));
  if (!view.failA) markDiff();
  showOutline();
  if (state.q) { $('#search').value = state.q; search(state.q); }
  if (state.sel) selectNode(state.side || 'a', state.sel, { focus: true });
}

function markDiff() {
  const A = panes.a.nodes, B = panes.b.nodes;
  const removed = new Set([...A.keys()].filter((k) => !B.has(k)));
  const added = new Set([...B.keys()].filter((k) => !A.has(k)));
  const changed = new Set([...A.keys()].filter((k) => B.has(k) && (A.get(k).opcode !== B.get(k).opcode || A.get(k).shape !== B.get(k).shape)));
  panes.a.mark({ removed, changed });
  panes.b.mark({ added, changed });
  $('#pane-a .pane-title').dataset.removed = removed.size;
  $('#pane-b .pane-title').dataset.added = added.size;
}

function renderSummary(A, B) {
  const r = view.ratios || {};
  const cards = [];
  if (!A) { renderFitSummary(B); return; }
  const card = (label, a, b, fmt, key, apiKey) => {
    const q = apiKey && r[apiKey] != null ? r[apiKey] : (a ? b / a : null);
    const cls = q == null || Math.abs(q - 1) < 0.005 ? '' : q < 1 ? 'better' : 'worse';
    cards.push(`<div class="card ${cls}" data-key="${key}"><div class="label">${label}</div>` +
      `<div class="vals"><span class="va">${fmt(a)}</span> → <span class="vb">${fmt(b)}</span></div>` +
      `<div class="ratio" data-testid="ratio-${key}" data-ratio="${q ?? ''}">${ratio(q)}<span class="phrase">${ratioPhrase(q)}</span></div></div>`);
  };
  if (state.mode === 'stage') {
    card('instructions', A.instructions.traced, A.instructions.optimized, int, 'instructions');
    card('computations', A.computations.traced, A.computations.optimized, int, 'computations');
    cards.push(`<div class="card"><div class="label">trace · compile time</div><div class="vals">${seconds(A.trace_seconds)} · ${seconds(A.compile_seconds)}</div></div>`);
    cards.push(`<div class="card"><div class="label">peak memory device · host</div><div class="vals">${bytes(A.memory.peak_device_bytes)} · ${bytes(A.memory.peak_host_bytes)}</div></div>`);
  } else {
    card('instructions (traced)', A.instructions.traced, B.instructions.traced, int, 'instructions_traced', 'instructions_traced');
    card('instructions (optimized)', A.instructions.optimized, B.instructions.optimized, int, 'instructions_optimized', 'instructions_optimized');
    card('computations', A.computations.optimized, B.computations.optimized, int, 'computations');
    card('trace time', A.trace_seconds, B.trace_seconds, seconds, 'trace_seconds', 'trace_seconds');
    card('compile time', A.compile_seconds, B.compile_seconds, seconds, 'compile_seconds', 'compile_seconds');
    card('peak device memory', A.memory.peak_device_bytes, B.memory.peak_device_bytes, bytes, 'peak_device_bytes', 'peak_device_bytes');
    card('peak host memory', A.memory.peak_host_bytes, B.memory.peak_host_bytes, bytes, 'peak_host_bytes');
  }
  const ra = A.train_step && A.train_step.residuals, rb = B.train_step && B.train_step.residuals;
  if (ra && rb) {
    card('residuals on device', ra.device_bytes, rb.device_bytes, bytes, 'residual_device_bytes');
    card('residuals on host', ra.host_bytes, rb.host_bytes, bytes, 'residual_host_bytes');
  }
  const dc = view.diffCounts;
  $('#summary').innerHTML = `<div class="cards">${cards.join('')}</div>
    <div class="summary-line"><span>compile time per pass — A: <span class="passes" data-side="a">…</span>${state.a === state.b ? '' : ` · B: <span class="passes" data-side="b">…</span>`}</span>` +
    (dc ? `<span data-testid="diff-counts">optimized HLO by name: <b style="color:#2e7d32">${int(dc.added)} added</b>, <b style="color:#c62828">${int(dc.removed)} removed</b>, <b style="color:#ef6c00">${int(dc.changed)} changed</b>, ${int(dc.unchanged)} unchanged</span>` : '') + '</div>';
  // Per-pass compile time (slowest three) from each result's metrics.
  for (const s of ['a', 'b']) {
    get(`${results(state[s])}/metrics`).then((mx) => {
      // On a short screen (a projector) the slowest pass only: the line stays one line.
      const top = window.innerHeight < 820 ? 1 : 3;
      const passes = (mx.compile_report && mx.compile_report.passes || []).slice().sort((x, y) => y.seconds - x.seconds).slice(0, top);
      const cell = $(`#summary .passes[data-side="${s}"]`);
      if (cell) cell.innerHTML = passes.map((p) => `${esc(p.name)} ${seconds(p.seconds)}`).join(', ');
    }).catch(() => {});
  }
}

// A's training step did not fit: what B needs, against the device.
function renderFitSummary(B) {
  const f = oomFigures(view.failA.error.message);
  const res = (B.train_step && B.train_step.residuals) || {};
  const cap = B.memory.capacity ? B.memory.capacity.device_bytes : 0;
  const c = (label, va, vb, key, cls = '') => `<div class="card ${cls}" data-key="${key}"><div class="label">${label}</div>` +
    `<div class="vals"><span class="va">${va}</span> → <span class="vb" data-testid="fit-${key}">${vb}</span></div></div>`;
  $('#summary').innerHTML = `<div class="cards">
    ${c('peak device memory', `${bytes(f.used)} > ${bytes(f.cap)}`, bytes(B.memory.peak_device_bytes), 'peak_device_bytes', 'better')}
    ${c('peak host memory', '–', bytes(B.memory.peak_host_bytes), 'peak_host_bytes')}
    ${c('residuals on host', '–', bytes(res.host_bytes || 0), 'residual_host_bytes')}
    ${c('instructions (optimized)', '–', int(B.instructions.optimized), 'instructions_optimized')}
    </div><div class="summary-line" data-testid="fit-line"><span>A (residuals ${esc(view.failA.residuals)}) runs out of device memory; B (residuals ${esc(B.residuals)}) fits:
    <b>${bytes(B.memory.peak_device_bytes)}</b> of ${bytes(cap)} on ${esc(B.device)}, <b>${bytes(res.host_bytes || 0)}</b> of residuals in host memory.</span></div>` +
    (B.train_step && B.train_step.auto ? `<p class="muted" data-testid="auto-text">${esc(B.train_step.auto.text)}</p>` : '');
}

// The result a pane shows: A's out-of-memory result when A does not fit.
const sideId = (s) => (s === 'a' && view.failA ? view.failA.id : state[s]);
async function loadTimelines() {
  for (const s of ['a', 'b']) {
    timelines[s].clear('loading memory…');
    if (s === 'a' && view.failA && !view.failA.id) { timelines.a.clear('A does not fit the device: no buffer assignment to draw (see the report above).'); continue; }
    if (state.mode === 'stage' && s === 'a') { timelines[s].clear('Buffer assignment runs on the optimized module: see B.'); continue; }
    try {
      const mem = await get(`${results(sideId(s))}/memory.json`);
      timelines[s].render(mem);
    } catch (e) { timelines[s].clear(`memory: ${e.message}`); }
  }
}

// Linking buffers and nodes.
function hoverBuffer(side, b) {
  const p = panes[side];
  const id = b ? p.nodeFor(b.instruction, b.op_name) : null;
  p.setClass('hl', id ? [id] : []);
  if (id) p.focus(id, { ifHidden: true });
  $(`#pane-${side}`).dataset.hl = id || '';
}
// A buffer clicked in the memory view (a box or a row) selects its node.
function selectBuffer(side, b) {
  const id = b && panes[side].nodeFor(b.instruction, b.op_name);
  if (id) selectNode(side, id, { focus: true });
}
function hoverNode(side, id) {
  const n = id && panes[side].nodes.get(id);
  if (!n) { timelines[side].highlight(null); return; }
  timelines[side].highlight(buffersOf(n));
}

// Details of a node.
async function selectNode(side, id, { focus = false } = {}) {
  const p = panes[side];
  const n = p.nodes.get(id);
  for (const s of ['a', 'b']) panes[s].setClass('selected', []);
  if (!n) return;
  p.setClass('selected', [id]);
  const other = panes[side === 'a' ? 'b' : 'a'];
  if (other.nodes.has(id)) other.setClass('selected', [id]);
  // The node's buffers in the memory views (the other side's when it has the node too).
  timelines[side].select(buffersOf(n));
  timelines[other.side].select(other.nodes.has(id) ? buffersOf(other.nodes.get(id)) : null);
  Object.assign(state, { sel: id, side });
  writeHash();
  const chips = (ids) => (ids || []).map((x) => `<a data-node="${esc(x)}">${esc(p.nodes.get(x) ? p.nodes.get(x).name : x)}</a>`).join('') || '<span class="muted">none</span>';
  const d = $('#details');
  const isLayer = n.opcode === 'layer';
  d.innerHTML = `<h3><span data-testid="details-name">${esc(n.name)}</span><button class="small" id="details-close">✕</button></h3>
    <dl>
      <dt>pane</dt><dd>${side.toUpperCase()} · ${esc(labelOf(side, view.summaries[state[side]]))} · ${esc(stageOf(side))}</dd>
      <dt>opcode</dt><dd data-testid="details-opcode">${esc(n.opcode)} <span class="muted">(${esc(n.category)})</span></dd>
      ${n.shape ? `<dt>shape</dt><dd data-testid="details-shape">${esc(n.shape)}</dd>` : ''}
      <dt>bytes</dt><dd data-testid="details-bytes">${bytes(n.bytes)} <span class="muted">(${int(n.bytes)})</span></dd>
      <dt>op_name</dt><dd>${esc(n.op_name || '–')}</dd>
      <dt>layer</dt><dd>${esc(n.layer || '–')}</dd>
      <dt>computation</dt><dd>${esc(n.computation)}</dd>
      ${isLayer ? `<dt>contains</dt><dd>${int(n.collapsed_count)} instructions</dd>` : ''}
      <dt>operands</dt><dd class="chips">${chips(p.ops.operands.get(id))}</dd>
      <dt>users</dt><dd class="chips">${chips(p.ops.users.get(id))}</dd>
    </dl>
    ${isLayer ? `<p><button class="primary small" id="details-expand">Expand ${esc(n.layer)}</button> <span class="muted">(or double-click the node)</span></p>`
    : '<pre data-testid="details-hlo">…</pre>'}
    ${n.layer && !isLayer && state.expand.split(',').includes(n.layer) ? `<button class="small" id="details-collapse">Collapse ${esc(n.layer)}</button>` : ''}`;
  d.classList.remove('hidden');
  $('#panes').classList.add('with-details');
  // Centred once the details column has narrowed the panes; the other pane
  // brings its corresponding node into view at its own scale.
  if (focus) {
    p.focus(id);
    // Once more after the panes' resize has been handled (svg-pan-zoom
    // re-fits on resize), if that moved it out of sight.
    requestAnimationFrame(() => requestAnimationFrame(() => p.focus(id, { ifHidden: true })));
  }
  const match = other.el(id) ? id : other.nodeFor(n.name, n.op_name);
  if (focus && match && $('#sync').checked) other.focus(match, { ifHidden: true });
  $('#details-close').onclick = hideDetails;
  if ($('#details-expand')) $('#details-expand').onclick = () => toggleExpand(n.layer);
  if ($('#details-collapse')) $('#details-collapse').onclick = () => toggleExpand(n.layer);
  for (const a of d.querySelectorAll('a[data-node]')) a.onclick = () => selectNode(side, a.dataset.node, { focus: true });
  if (!isLayer) {
    try {
      const hlo = await get(`${results(p.id)}/hlo?stage=${stageOf(side)}`, { text: true });
      const re = new RegExp(`^\\s*(ROOT )?%?${n.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} = .*$`, 'm');
      const line = re.exec(hlo);
      const pre = d.querySelector('pre[data-testid="details-hlo"]');
      if (pre) pre.textContent = line ? line[0].trim() : '(not in the HLO text of this stage)';
    } catch { /* keep the placeholder */ }
  }
}
function hideDetails() {
  $('#details').classList.add('hidden');
  $('#panes').classList.remove('with-details');
  for (const s of ['a', 'b']) panes[s] && panes[s].setClass('selected', []);
  for (const s of ['a', 'b']) timelines[s] && timelines[s].select(null);
  if (state.sel) { state.sel = ''; writeHash(); }
}
function showCluster(side, id) {
  const c = (panes[side].data.clusters || []).find((x) => x.id === id);
  if (!c) return;
  const d = $('#details');
  d.innerHTML = `<h3><span>${esc(c.computation)}</span><button class="small" id="details-close">✕</button></h3>
    <dl><dt>cluster</dt><dd>${esc(c.id)}</dd><dt>called by</dt><dd>${esc(c.caller || '–')}</dd><dt>instructions</dt><dd>${int(c.nodes.length)}</dd></dl>
    <p><button class="primary small" id="only-comp">Show only this computation</button></p>`;
  d.classList.remove('hidden');
  $('#panes').classList.add('with-details');
  $('#details-close').onclick = hideDetails;
  $('#only-comp').onclick = () => { state.computation = c.computation; state.sel = ''; writeHash(); loadGraphs(); };
}

function toggleExpand(layer) {
  const set = new Set(state.expand.split(',').filter(Boolean));
  if (set.has(layer)) set.delete(layer); else set.add(layer);
  state.expand = [...set].join(',');
  state.sel = '';
  writeHash();
  withProgress(`Rendering ${layer}…`, () => loadGraphs());
}

// Search marks the drawn matches in both panes at once and asks the server
// for every match of the module (inside closed groups too): the outline
// counts them per group, Enter reveals the first one, opening its group.
let searchSeq = 0;
function search(q) {
  state.q = q;
  writeHash();
  let total = 0, first = null;
  for (const s of ['a', 'b']) {
    const hits = panes[s].search(q);
    total += hits.length;
    if (!first && hits.length) first = [s, hits[0]];
  }
  const drawn = `${total} match${total === 1 ? '' : 'es'} drawn`;
  $('#search-count').textContent = q ? drawn : '';
  view.searchAll = null;
  const seq = ++searchSeq, side = outlineSide();
  if (q.trim() && panes[side].id) {
    view.searchAll = searchAll(panes[side].id, stageOf(side), state.computation, q).then((r) => {
      if (seq !== searchSeq) return r;
      $('#search-count').textContent = `${drawn} · ${int(r.count)} in ${side.toUpperCase()}`;
      $('#search-count').dataset.count = r.count;
      outline.markHits(r.hits);
      return r;
    }).catch(() => null);
  } else outline.markHits([]);
  return first;
}
// Enter: the first match drawn in the outline's pane, else the first of
// all its matches (the server's), its group opened.
async function searchEnter(q) {
  search(q);
  const side = outlineSide();
  const drawn = panes[side].search(q);
  if (drawn.length) { selectNode(side, drawn[0], { focus: true }); return; }
  const r = view.searchAll && await view.searchAll;
  const hit = r && r.hits[0];
  if (!hit) return;
  if (hit.group && !panes[side].byName.has(hit.name)) await openGroup(hit.group, { reveal: false });
  const n = panes[side].byName.get(hit.name);
  if (n) selectNode(side, n.id, { focus: true });
  else if (hit.group) revealGroup(side, hit.group);
}

// ---- the outline (group tree) ------------------------------------------------
const outlineSide = () => (view.failA || state.side === 'b' ? 'b' : 'a');
function showOutline() {
  const s = outlineSide();
  outline.show(panes[s].data, { side: s, sides: view.failA || state.a === state.b ? [s] : ['a', 'b'],
    label: labelOf(s, view.summaries[state[s]]), expanded: state.expand.split(',').filter(Boolean) });
  $('#outline').dataset.side = s;
}
// Opens a closed group in both views (?expand= gains its path) and brings
// it into view. A group too large to draw (the render node limit) stays
// closed and the error says so.
async function openGroup(path, { reveal = true } = {}) {
  const before = state.expand;
  const set = new Set(state.expand.split(',').filter(Boolean));
  set.add(path);
  state.expand = [...set].join(',');
  state.sel = '';
  writeHash();
  const side = outlineSide();
  await withProgress(`Opening ${path}…`, () => loadGraphs());
  const failed = panes[side].error;
  if (failed) {
    state.expand = before;
    writeHash();
    await loadGraphs();
    showError(new ApiError(failed.status, { code: failed.code, message: `group ${path} cannot be opened here: ${failed.message}` }));
    return;
  }
  if (reveal) revealGroup(side, path);
}
// Brings a group into view: its closed box, else its first drawn node.
function revealGroup(side, path) {
  const p = panes[side];
  const inside = (g) => { for (let x = outline.groups.get(g); x; x = outline.groups.get(x.parent)) if (x.path === path) return true; return false; };
  const n = [...p.nodes.values()].find((x) => x.opcode === 'layer' && x.group === path) ||
    [...p.nodes.values()].find((x) => p.el(x.id) && inside(x.group));
  outline.reveal(path);
  if (!n) return;
  p.setClass('hl', [n.id]);
  p.focus(n.id);
}

// ---- other tabs --------------------------------------------------------------
function setTab(tab) {
  state.tab = tab;
  writeHash();
  for (const b of document.querySelectorAll('.tabs button')) b.classList.toggle('active', b.dataset.tab === tab);
  for (const p of document.querySelectorAll('.tab-page')) p.classList.toggle('hidden', p.id !== `page-${tab}`);
  if (tab === 'hlo') showHlo();
  if (tab === 'metrics') showMetrics();
  if (tab === 'goodput' && state.grun && !view.lastGoodput) showGoodput().catch(showError);
  if (tab === 'compare') for (const s of ['a', 'b']) timelines[s].resize();
}
async function showHlo() {
  if (!state.a) return;
  const sa = stageOf('a'), sb = stageOf('b');
  $('#hlo-title').textContent = `A (${labelOf('a', view.summaries[state.a])}, ${sa}) → B (${labelOf('b', view.summaries[state.b])}, ${sb})`;
  try {
    const [ta, tb] = await Promise.all([get(`${results(state.a)}/hlo?stage=${sa}`, { text: true }), get(`${results(state.b)}/hlo?stage=${sb}`, { text: true })]);
    renderHloDiff($('#hlo-diff'), ta, tb, $('#hlo-only-changes').checked);
  } catch (e) { $('#hlo-diff').textContent = e.message; }
}
async function showMetrics() {
  if (!state.a) return;
  try {
    const [ma, mb, A, B] = await Promise.all([get(`${results(state.a)}/metrics`), get(`${results(state.b)}/metrics`), summaryOf(state.a), summaryOf(state.b)]);
    renderMetrics($('#metrics'), { ma, mb, A, B, la: labelOf('a', A), lb: labelOf('b', B), same: state.a === state.b });
  } catch (e) { $('#metrics').textContent = e.message; }
}

// ---- wiring ------------------------------------------------------------------
async function main() {
  readHash();
  initPanes();
  $('#mode').value = state.mode;
  for (const b of document.querySelectorAll('.tabs button')) b.onclick = () => setTab(b.dataset.tab);
  $('#compile-btn').onclick = compile;
  $('#run-btn').onclick = run;
  $('#example').onchange = (e) => e.target.value && pickExample(e.target.value);
  $('#layers').onchange = (e) => { const n = parseInt(e.target.value, 10); if (n >= 1) editor.setRepeat(n); };
  const showResB = () => $('#res-b').classList.toggle('hidden', state.mode !== 'residuals');
  $('#res-b').value = state.rb || 'offload';
  showResB();
  $('#mode').onchange = (e) => { state.mode = e.target.value; showResB(); writeHash(); refreshStale(); if (state.a || view.failA) compile(); };
  $('#res-b').onchange = (e) => { state.rb = e.target.value === 'offload' ? '' : e.target.value; writeHash(); refreshStale(); if (state.a || view.failA) compile(); };
  $('#stage').onchange = (e) => { state.stage = e.target.value; state.sel = ''; writeHash(); showResults(); };
  $('#collapse-all').onclick = () => { state.expand = ''; state.computation = ''; state.sel = ''; writeHash(); loadGraphs(); };
  $('#fit-btn').onclick = () => { for (const s of ['a', 'b']) if (panes[s].pz) { panes[s].pz.fit(); panes[s].pz.center(); } };
  $('#search').oninput = (e) => search(e.target.value);
  $('#search').onkeydown = (e) => { if (e.key === 'Enter') searchEnter(e.target.value); };
  // The outline is open by default where the graphs keep room beside it.
  const showOl = (on) => { $('#panes').classList.toggle('with-outline', on); $('#outline').classList.toggle('hidden', !on); $('#outline-btn').classList.toggle('on', on); };
  showOl((localStorage.getItem('hloscope.outline') ?? (innerWidth >= 1500 ? '1' : '0')) === '1');
  $('#outline-btn').onclick = () => { const on = $('#outline').classList.contains('hidden'); localStorage.setItem('hloscope.outline', on ? '1' : '0'); showOl(on); };
  $('#hlo-only-changes').onchange = showHlo;
  $('#share-btn').onclick = async () => {
    writeHash();
    try { await navigator.clipboard.writeText(location.href); $('#share-btn').textContent = 'Link copied'; } catch { $('#share-btn').textContent = 'Link is in the address bar'; }
    setTimeout(() => { $('#share-btn').textContent = 'Copy link'; }, 2000);
  };
  $('#scaling-btn').onclick = () => withProgress('Measuring…', async (label) => {
    try {
      await measureScaling($('#scaling-chart'), $('#scaling-table'), editor.text, overrides(), label);
      markComputed('scaling');
    } catch (e) { showError(e); }
  });
  for (const k of SETTINGS) $(`#${k}`).addEventListener('change', refreshStale);
  $('#batch').addEventListener('input', refreshStale);
  for (const f of FRONTENDS) $('#gp-frontend').add(new Option(f.label, f.name));
  $('#gp-frontend').value = state.gfe || 'hloscope';
  $('#gp-steps').value = state.gsteps || 10;
  $('#goodput-btn').onclick = measureGoodput;
  $('#gp-frontend').onchange = () => { if (state.grun) measureGoodput(); };
  $('#gp-steps').onchange = () => { if (state.grun) measureGoodput(); };
  $('#tour-btn').onclick = () => startTour({
    pickExample, compile, setTab, measureGoodput, state, view,
    ...tourWorkspace(),
    setMode: (m, rb) => { state.mode = m; $('#mode').value = m; if (rb != null) { state.rb = rb === 'offload' ? '' : rb; $('#res-b').value = rb; } showResB(); },
    setGoodput: ({ loop, frontend, steps }) => {
      if (loop != null) $('#loop').value = loop;
      if (frontend != null) $('#gp-frontend').value = frontend;
      if (steps != null) $('#gp-steps').value = steps;
    },
  });
  window.addEventListener('resize', () => { for (const s of ['a', 'b']) timelines[s].resize(); });
  let rt;
  window.addEventListener('resize', () => { clearTimeout(rt); rt = setTimeout(() => { for (const s of ['a', 'b']) panes[s].fitView(); }, 200); });

  $('#yours-btn').onclick = backToYourText;
  $('#open-btn').onclick = () => $('#open-file').click();
  $('#open-file').onchange = (e) => { const fs = [...e.target.files]; if (fs.length > 1) openPair(fs); else if (fs[0]) openFile(fs[0]); e.target.value = ''; };
  // A pair's sides take the sidebar's device (HLO has no loop or residuals).
  initPair($('#page-pair'), { overrides: () => (overrides().device ? { device: overrides().device } : {}) });

  await loadExamples().catch(showError);
  const saved = localStorage.getItem('hloscope.model');
  const linked = (state.a || state.b) && await openLink(saved);
  if (!linked) {
    if (state.ex && !saved) await pickExample(state.ex);
    else if (saved) { editor.text = saved; $('#example').value = state.ex; }
    else await pickExample('seed_64_linear').catch(() => {});
  }
  setTab(state.tab);
  if (state.b && (state.a || state.mode === 'residuals')) {
    // A link to a training step whose A side ran out of memory holds B
    // only: compiling again (store hits) brings back A's report.
    if (!state.a) await compile();
    else await showResults();
  }
  document.body.dataset.ready = '1';
}

// ---- links carry the source -------------------------------------------------
// A link holds result ids; GET /source gives the request they came from.
// Opened elsewhere, the editor and the settings become exactly that source,
// so the panes and the editor agree (any edit afterwards marks them stale).
// Reloading one's own page keeps one's edits (the ids are the ones this
// browser last showed: the panes are marked stale instead). The text a link
// replaces is kept (Back to your text).
async function openLink(saved) {
  const own = localStorage.getItem('hloscope.ids') === `${state.a}/${state.b}`;
  let src;
  try {
    src = await get(`${results(state.b || state.a)}/source`);
  } catch (e) { showError(e); return false; }
  const ov = Object.fromEntries(new URLSearchParams(state.o));
  // The settings the mode varies were not sent (the variant's won): those
  // come from the link; every other one from the request itself.
  const varied = state.mode === 'loop' ? ['loop'] : state.mode === 'residuals' ? ['residuals'] : [];
  const q = src.query || {};
  for (const k of SETTINGS) if (!varied.includes(k)) { if (q[k] != null) ov[k] = q[k]; else delete ov[k]; }
  setOverrides(ov);
  const text = own && saved != null ? saved : src.text;
  if (!own && saved != null && sourceKey(saved) !== sourceKey(src.text)) {
    localStorage.setItem('hloscope.yours', saved);
    $('#link-note').classList.remove('hidden');
  }
  editor.text = text;
  // The panes show the link's source and settings, whatever the editor holds now.
  view.sig.compare = JSON.stringify([sourceKey(src.text), canonical(overrides()), state.mode,
    state.mode === 'residuals' ? state.rb || 'offload' : '']);
  refreshStale();
  return true;
}
function backToYourText() {
  const t = localStorage.getItem('hloscope.yours');
  if (t != null) editor.text = t;
  localStorage.removeItem('hloscope.yours');
  $('#link-note').classList.add('hidden');
}

// ---- the tour's workspace ---------------------------------------------------
// Everything the tour changes: the editor text, the sidebar's and the Goodput
// panel's settings, the URL state and the view. begin() saves them, end()
// (the tour finished or was closed) waits for the tour's last request and
// puts them back, with localStorage as it was.
const CONTROLS = ['#example', '#loop', '#residuals', '#device', '#batch', '#mode', '#res-b', '#gp-frontend', '#gp-steps'];
function tourWorkspace() {
  let saved = null;
  return {
    begin() {
      saved = {
        text: editor.text, stored: localStorage.getItem('hloscope.model'),
        controls: CONTROLS.map((c) => $(c).value), state: { ...state },
        view: { ...view, sig: { ...view.sig }, goodput: { ...view.goodput } },
        goodput: $('#goodput').innerHTML, gpLinks: $('#gp-links').innerHTML,
      };
      touring = true;
      // The tour's figures do not depend on the user's settings: it starts
      // from the models' own (it sets what its steps need).
      setOverrides({});
      $('#gp-frontend').value = 'hloscope';
      $('#gp-steps').value = 10;
    },
    async end() {
      if (!saved) return;
      while (busy) await new Promise((ok) => setTimeout(ok, 50));
      const w = saved;
      saved = null;
      editor.text = w.text;
      CONTROLS.forEach((c, k) => { $(c).value = w.controls[k]; });
      $('#res-b').classList.toggle('hidden', w.state.mode !== 'residuals');
      deviceLabel();
      for (const k of Object.keys(state)) state[k] = w.state[k];
      Object.assign(view, w.view);
      $('#goodput').innerHTML = w.goodput;
      $('#gp-links').innerHTML = w.gpLinks;
      if (w.stored == null) localStorage.removeItem('hloscope.model');
      else localStorage.setItem('hloscope.model', w.stored);
      touring = false;
      setTab(state.tab); // first: graphs are fitted to a visible pane
      if (state.b && (state.a || view.failA)) await showResults();
      else {
        for (const sel of ['#summary', '#panes', '#graph-tools', '#oom', '#details']) $(sel).classList.add('hidden');
        $('#empty').classList.remove('hidden');
      }
      refreshStale();
    },
  };
}

window.hloscope = { state, view, panes, timelines, editor, measureGoodput };
main();
