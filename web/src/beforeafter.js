// The before/after panes: graphs, memory timelines, summary cards.
import { get, results } from './api.js';
import { GraphPane, syncPanes } from './graph.js';
import { Timeline } from './memory.js';
import { Outline } from './outline.js';
import { bytes, esc, int, ratio, ratioPhrase, seconds } from './format.js';
import { $, labelOf, state, view, writeHash } from './state.js';
import { showError } from './errors.js';
import { largestAtPeak, oomFigures, renderOom } from './oom.js';
import { hoverBuffer, hoverNode, selectBuffer, selectNode, showCluster, toggleExpand } from './details.js';
import { search } from './search.js';
import { openGroup, outlineSide, revealGroup, showOutline } from './groups.js';
import { showHlo, showMetrics } from './tabs.js';
import { markPanes } from './diffview.js';

// ---- before / after --------------------------------------------------------
export const panes = {};
export const timelines = {};
let follow;
export let outline;
export function initPanes() {
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

export const stageOf = (side) => (state.mode === 'stage' ? (side === 'a' ? 'traced' : 'optimized') : state.stage);
export const summaryOf = async (id) => view.summaries[id] || (view.summaries[id] = await get(results(id)));

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

export async function loadGraphs() {
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

// The engine's diff colours the panes (diffview.js): matched by place in a
// layer, a scan body for every layer, reducers by structure, not by id.
async function markDiff() {
  const n = await markPanes(panes, { a: state.a, sa: stageOf('a'), b: state.b, sb: stageOf('b'), keep: !!state.sel });
  if (!n) return;
  $('#pane-a .pane-title').dataset.removed = n.removed;
  $('#pane-b .pane-title').dataset.added = n.added;
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
