// Dump pair: two sources side by side — a before/after pair from
// --xla_dump_to, two dumps, or a model and a dump — through POST /v1/compare
// in its two-source form (docs/API.md#compare). The user pastes into, opens
// or drops on the two sides (or drops two files on the editor); the page
// shows the metrics table, the diff of the modules as given (the engine's),
// both graphs with the engine's diff marked, and the two texts side by side,
// aligned by the engine's matching (diffview.js).
import { get, post, query, results } from './api.js';
import { GraphPane, syncPanes } from './graph.js';
import { bytes, seconds, int, ratio, esc } from './format.js';
import { fetchDiff, nodeMarks, renderAlignedDiff } from './diffview.js';
import { isHlo } from './lint.js';
import { dumpModules, isDumpFolder, filesOfEntries, folderEntries } from './dumpdir.js';

const SIDES = ['a', 'b'];
const LIST_MAX = 20;
let root, panes = null, getQuery = () => ({}), onCompared = () => {};
// The two texts and the query the result shown was computed from: an edit
// afterwards marks it stale.
let shown = null;
// A dump folder's modules with both dumps (dumpdir.js), when one was opened.
let folder = [];

/** Builds the page inside el; overrides() gives the sidebar's settings
 * (device, ...), applied to both sides; onResult(id) is told the
 * comparison's id when one is shown ('' when cleared), for the link. */
export function initPair(el, { overrides, onResult } = {}) {
  root = el;
  if (overrides) getQuery = overrides;
  if (onResult) onCompared = onResult;
  root.innerHTML = `
    <p class="lead">Two modules side by side: paste, open or drop a <b>before</b> and an <b>after</b>
      (<code>*.before_optimizations.txt</code> / <code>*.after_optimizations.txt</code> from <code>--xla_dump_to</code>),
      two dumps, or a model and a dump. Each side compiles on its own; the diff is the modules' as given.</p>
    <div class="pair-inputs">
      ${SIDES.map((s) => `<label class="pair-side" data-side="${s}"><span class="pair-label">${s.toUpperCase()}${s === 'a' ? ' · before' : ' · after'} <span class="muted" data-testid="pair-name-${s}"></span></span>
        <textarea spellcheck="false" data-testid="pair-${s}" placeholder="HLO text or a model description (JSON); drop a file here"></textarea></label>`).join('')}
    </div>
    <div class="gp-controls">
      <button class="small" data-testid="pair-open">Open two files…</button>
      <input type="file" multiple accept=".hlo,.txt,.json" class="hidden" data-testid="pair-files">
      <button class="small" data-testid="pair-open-folder" title="a --xla_dump_to folder: its modules' before_optimizations / after_optimizations dumps">Open a dump folder…</button>
      <input type="file" webkitdirectory class="hidden" data-testid="pair-folder">
      <label class="hidden" data-testid="pair-module-label">module <select data-testid="pair-module"></select></label>
      <button class="primary" data-testid="pair-compare">Compare</button>
      <span class="muted" data-testid="pair-links"></span>
    </div>
    <div class="error hidden" data-testid="pair-error" role="alert"></div>
    <div class="stale-note" data-testid="pair-stale">changed since compared — Compare to refresh</div>
    <div data-testid="pair-result"></div>`;
  const q = (t) => root.querySelector(`[data-testid="${t}"]`);
  for (const [btn, input] of [['pair-open', 'pair-files'], ['pair-open-folder', 'pair-folder']]) {
    const f = q(input);
    q(btn).onclick = () => f.click();
    f.onchange = () => { if (f.files.length) openPair([...f.files]); f.value = ''; };
  }
  q('pair-compare').onclick = () => comparePair();
  q('pair-module').onchange = (e) => pickModule(Number(e.target.value));
  for (const s of SIDES) {
    const ta = q(`pair-${s}`);
    ta.addEventListener('input', markStale);
    ta.addEventListener('dragover', (e) => e.preventDefault());
    ta.addEventListener('drop', async (e) => {
      const entries = folderEntries(e.dataTransfer);
      const fs = [...(e.dataTransfer.files || [])];
      if (!entries && !fs.length) return;
      e.preventDefault();
      if (entries) return openPair(await filesOfEntries(entries));
      if (fs.length >= 2) return openPair(fs);
      ta.value = await fs[0].text();
      q(`pair-name-${s}`).textContent = fs[0].name;
      markStale();
    });
  }
}

// The result shown no longer matches the two texts (or the settings).
function markStale() {
  const now = shown && JSON.stringify([...SIDES.map((s) => root.querySelector(`[data-testid="pair-${s}"]`).value), query(getQuery())]);
  root.classList.toggle('stale', !!shown && now !== shown.key);
}

/** Which of two files is the before: XLA's dump names say so; else the
 * order the names sort in (module_0001 before module_0002). */
export function orderPair(files) {
  const rank = (f) => (/before_optimizations/.test(f.name) ? 0 : /after_optimizations/.test(f.name) ? 2 : 1);
  return [...files].slice(0, 2).sort((x, y) => rank(x) - rank(y) || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
}

/** Two files (dropped on the editor, or opened), or a dump folder's files:
 * fills both sides, shows the page and compares them. A folder compares
 * the before and after dumps of one module: the largest when it holds
 * several (a JAX program's dump also holds its small helper jits); the
 * menu picks another. */
export async function openPair(files) {
  showPage();
  const menu = root.querySelector('[data-testid="pair-module-label"]');
  if (!isDumpFolder(files)) {
    folder = [];
    menu.classList.add('hidden');
    const pair = orderPair(files);
    if (pair.length < 2) return null;
    return fillAndCompare(pair);
  }
  folder = dumpModules(files);
  menu.classList.toggle('hidden', folder.length < 2);
  if (!folder.length) {
    showPairError(root.querySelector('[data-testid="pair-error"]'), new Error(`no module in the folder's ${files.length} files has both a *.before_optimizations.txt and an *.after_optimizations.txt dump (XLA writes them with --xla_dump_to=DIR; --xla_dump_hlo_as_text is the default)`));
    return null;
  }
  const largest = folder.reduce((k, m, i) => (m.before.size > folder[k].before.size ? i : k), 0);
  root.querySelector('[data-testid="pair-module"]').innerHTML = folder.map((m, i) =>
    `<option value="${i}"${i === largest ? ' selected' : ''}>${esc(m.id)} · ${esc(m.name)} (${bytes(m.before.size)})</option>`).join('');
  return pickModule(largest);
}

function pickModule(k) {
  const m = folder[k];
  return m ? fillAndCompare([m.before, m.after]) : null;
}

async function fillAndCompare(pair) {
  const texts = await Promise.all(pair.map((f) => f.text()));
  SIDES.forEach((s, k) => {
    root.querySelector(`[data-testid="pair-${s}"]`).value = texts[k];
    root.querySelector(`[data-testid="pair-name-${s}"]`).textContent = pair[k].name;
  });
  return comparePair();
}

function showPage() {
  const tab = document.querySelector('.tabs button[data-tab="pair"]');
  if (tab && !tab.classList.contains('active')) tab.click();
}

/** A link's comparison (its id): both sources and the query from the
 * store (GET /source: text and text_b), compared again (a store hit). */
export async function openPairLink(id) {
  showPage();
  let src;
  try {
    src = await get(`${results(id)}/source`);
  } catch (e) {
    showPairError(root.querySelector('[data-testid="pair-error"]'), e);
    return null;
  }
  folder = [];
  root.querySelector('[data-testid="pair-module-label"]').classList.add('hidden');
  const texts = [src.text, src.text_b];
  SIDES.forEach((s, k) => {
    root.querySelector(`[data-testid="pair-${s}"]`).value = texts[k] ?? '';
    root.querySelector(`[data-testid="pair-name-${s}"]`).textContent = '(from the link)';
  });
  return comparePair({ overrides: src.query || {} });
}

// A side's source as the API takes it: HLO text as {"hlo"}, a model as
// {"model"}; a model that is not JSON is said so before any request.
function sideSource(s, text) {
  if (!text.trim()) throw sideError(s, 'is empty: paste or drop HLO text or a model description');
  if (isHlo(text)) return { hlo: text };
  try { return { model: JSON.parse(text) }; } catch (e) { throw sideError(s, `is not HLO text nor a JSON model (${e.message})`); }
}
function sideError(s, what) { const e = new Error(`${s.toUpperCase()} ${what}`); e.path = `/${s}`; return e; }

/** Compares the two sides' texts with the sidebar's settings (or the
 * overrides a link brought). */
export async function comparePair({ overrides } = {}) {
  const err = root.querySelector('[data-testid="pair-error"]');
  const out = root.querySelector('[data-testid="pair-result"]');
  err.classList.add('hidden');
  const texts = SIDES.map((s) => root.querySelector(`[data-testid="pair-${s}"]`).value);
  let body;
  try {
    body = Object.fromEntries(SIDES.map((s, k) => [s, sideSource(s, texts[k])]));
  } catch (e) { showPairError(err, e); return null; }
  out.innerHTML = '<div class="msg">Compiling both sides…</div>';
  const qs = query(overrides || getQuery());
  try {
    // A side above its device's HBM is its out-of-memory result: shown, not an error.
    const r = await post(`/v1/compare${qs}`, body, { oomResult: true });
    shown = { key: JSON.stringify([...texts, overrides ? query(getQuery()) : qs]) };
    markStale();
    onCompared(r.id);
    await renderPair(out, r);
    return r;
  } catch (e) {
    out.innerHTML = '';
    shown = null;
    markStale();
    onCompared('');
    showPairError(err, e);
    return null;
  }
}

// The API names the side: path /a/hlo with a's line and column, or /b/...
function showPairError(box, e) {
  const side = /^\/(a|b)\b/.exec(e.path || '');
  const where = side ? `${side[1].toUpperCase()}${e.line > 0 ? `, line ${e.line}, column ${e.column}` : e.path.length > 2 ? ` ${e.path.slice(2)}` : ''}` : '';
  box.innerHTML = `${where ? `<span class="where" data-testid="pair-error-where">${esc(where)}</span>: ` : ''}${esc(String(e.message || e).replace(/^side (a|b): /, ''))}`;
  box.classList.remove('hidden');
  if (side && e.line > 0) markLine(root.querySelector(`[data-testid="pair-${side[1]}"]`), e.line, e.column);
}

// Puts the caret at line:column of a side's text and scrolls it into view.
function markLine(ta, line, column) {
  const lines = ta.value.split('\n');
  let pos = 0;
  for (let k = 0; k < line - 1 && k < lines.length; k++) pos += lines[k].length + 1;
  pos += Math.max(0, column - 1);
  ta.focus();
  ta.setSelectionRange(pos, Math.min(ta.value.length, pos + 1));
  ta.scrollTop = Math.max(0, (line - 3) * 18);
}

const FORMAT = { bytes, seconds, count: int };

function tableHtml(r) {
  return `<table class="summary pair-table" data-testid="pair-table"><thead><tr><th>metric</th><th>A</th><th>B</th><th>B / A</th></tr></thead><tbody>${
    r.table.map((row) => `<tr data-metric="${esc(row.metric)}"><td>${esc(row.metric.replace(/_/g, ' '))}</td><td>${FORMAT[row.unit](row.a)}</td><td>${FORMAT[row.unit](row.b)}</td><td>${ratio(row.a ? row.ratio : null)}</td></tr>`).join('')}</tbody></table>`;
}

function diffHtml(d) {
  const n = d.counts;
  const ops = Object.entries(d.opcodes).filter(([, v]) => v.a !== v.b).sort((x, y) => Math.abs(y[1].b - y[1].a) - Math.abs(x[1].b - x[1].a));
  const list = (items, cls) => items.slice(0, LIST_MAX).map((i) => `<li class="${cls}"><b>${esc(i.name)}</b> ${esc(i.opcode)} <span class="muted">${esc(i.shape)}</span></li>`).join('');
  return `<div class="pair-diff" data-testid="pair-diff">
    <p data-testid="pair-counts"><b>${int(n.added)}</b> instructions only in B, <b>${int(n.removed)}</b> only in A, <b>${int(n.changed)}</b> changed (opcode or shape), ${int(n.unchanged)} the same${d.truncated ? ' (lists cut at 100)' : ''}.</p>
    ${ops.length ? `<p data-testid="pair-opcodes">${ops.slice(0, 12).map(([op, v]) => `<code>${esc(op)}</code> ${int(v.a)} → ${int(v.b)}`).join(' · ')}</p>` : '<p data-testid="pair-opcodes">The same opcodes on both sides.</p>'}
    <details><summary>The instructions (the first ${LIST_MAX} of each kind)</summary>
    <ul class="pair-list" data-testid="pair-list">${list(d.added, 'add')}${list(d.removed, 'del')}${d.changed.slice(0, LIST_MAX).map((c) => `<li class="chg"><b>${esc(c.name)}</b> ${esc(c.a.opcode)} ${esc(c.a.shape)} → ${esc(c.b.opcode)} ${esc(c.b.shape)}</li>`).join('')}</ul></details>
  </div>`;
}

function sideTitle(s, S) {
  const oom = S.out_of_memory ? ' <span class="tag bad-tag" data-testid="pair-oom">out of device memory</span>' : '';
  return `${s.toUpperCase()} · ${esc(S.module)} <span class="tag">${esc(S.input)} · ${esc(S.device)}</span>${oom}`;
}

async function renderPair(out, r) {
  // The inputs shrink once there is a result: the diff and the graphs come
  // first (on a projector the graphs stay above the fold), the table after.
  root.classList.add('pair-shown');
  out.innerHTML = `${diffHtml(r.diff_traced)}
    ${SIDES.filter((s) => r[s].out_of_memory).map((s) => `<details class="oom-side"><summary>${s.toUpperCase()} does not fit ${esc(r[s].device)}: XLA's report</summary><pre>${esc(r[s].oom_report)}</pre></details>`).join('')}
    <div class="panes pair-panes">${SIDES.map((s) => `<div class="pane"><div class="pane-title">${sideTitle(s, r[s])}</div><div class="graph" data-testid="pair-graph-${s}"></div></div>`).join('')}</div>
    ${tableHtml(r)}
    <details class="pair-text"><summary>The two texts side by side</summary><div class="hlo-diff" data-testid="pair-hlo-diff"></div></details>`;
  root.querySelector('[data-testid="pair-links"]').innerHTML = SIDES.map((s) =>
    `<a href="${esc(results(r[s].id))}" target="_blank">${s.toUpperCase()} result</a>`).join(' · ') + ` · <a href="${esc(results(r.id))}" target="_blank">comparison</a>`;
  // The engine's diff whole (the reply lists 100 of each kind) and both
  // modules as given, as text, for the aligned view.
  const whole = fetchDiff(r.a.id, 'traced', r.b.id, 'traced');
  Promise.all([whole, ...SIDES.map((s) => get(`${results(r[s].id)}/hlo?stage=traced`, { text: true }))])
    .then(([d, ta, tb]) => renderAlignedDiff(out.querySelector('[data-testid="pair-hlo-diff"]'), d, ta, tb, true))
    .catch((e) => { out.querySelector('[data-testid="pair-hlo-diff"]').textContent = e.message; });
  const handlers = { onClick: () => {}, onHover: () => {} };
  panes = Object.fromEntries(SIDES.map((s) => [s, new GraphPane(out.querySelector(`[data-testid="pair-graph-${s}"]`), handlers)]));
  // The modules as given (a dump is what XLA wrote; a model as traced).
  await Promise.all(SIDES.map((s) => panes[s].load({ id: r[s].id, stage: 'traced' })
    .catch((e) => panes[s].showMessage(`<b>${esc(e.code || 'error')}</b>: ${esc(e.message)}`))));
  try {
    const d = await whole;
    const ma = nodeMarks(d.a, panes.a.data), mb = nodeMarks(d.b, panes.b.data);
    panes.a.mark({ removed: ma.removed, changed: ma.changed });
    panes.b.mark({ added: mb.added, changed: mb.changed });
  } catch { /* the graphs stand unmarked; the text view says why */ }
  syncPanes(panes.a, panes.b);
}
