// A node's details, and the buffers in the memory view linked to the nodes;
// expanding and collapsing a layer.
import { get, results } from './api.js';
import { buffersOf } from './graph.js';
import { bytes, esc, int } from './format.js';
import { $, labelOf, state, view, writeHash } from './state.js';
import { withProgress } from './errors.js';
import { perDeviceRows } from './whatif.js';
import { loadGraphs, panes, stageOf, timelines } from './beforeafter.js';

// Linking buffers and nodes.
export function hoverBuffer(side, b) {
  const p = panes[side];
  const id = b ? p.nodeFor(b.instruction, b.op_name) : null;
  p.setClass('hl', id ? [id] : []);
  if (id) p.focus(id, { ifHidden: true });
  $(`#pane-${side}`).dataset.hl = id || '';
}
// A buffer clicked in the memory view (a box or a row) selects its node.
export function selectBuffer(side, b) {
  const id = b && panes[side].nodeFor(b.instruction, b.op_name);
  if (id) selectNode(side, id, { focus: true });
}
export function hoverNode(side, id) {
  const n = id && panes[side].nodes.get(id);
  if (!n) { timelines[side].highlight(null); return; }
  timelines[side].highlight(buffersOf(n));
}

// Details of a node.
export async function selectNode(side, id, { focus = false } = {}) {
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
      ${perDeviceRows(n)}
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
export function showCluster(side, id) {
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

export function toggleExpand(layer) {
  const set = new Set(state.expand.split(',').filter(Boolean));
  if (set.has(layer)) set.delete(layer); else set.add(layer);
  state.expand = [...set].join(',');
  state.sel = '';
  writeHash();
  withProgress(`Rendering ${layer}…`, () => loadGraphs());
}
