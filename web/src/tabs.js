// The HLO diff and Metrics tabs, and switching tabs.
import { get, results } from './api.js';
import { showAlignedHlo } from './diffview.js';
import { renderMetrics } from './panels.js';
import { $, labelOf, state, view, writeHash } from './state.js';
import { showError } from './errors.js';
import { showGoodput } from './goodput_panel.js';
import { stageOf, summaryOf, timelines } from './beforeafter.js';

// ---- other tabs --------------------------------------------------------------
export function setTab(tab) {
  state.tab = tab;
  writeHash();
  for (const b of document.querySelectorAll('.tabs button')) b.classList.toggle('active', b.dataset.tab === tab);
  for (const p of document.querySelectorAll('.tab-page')) p.classList.toggle('hidden', p.id !== `page-${tab}`);
  if (tab === 'hlo') showHlo();
  if (tab === 'metrics') showMetrics();
  if (tab === 'goodput' && state.grun && !view.lastGoodput) showGoodput().catch(showError);
  if (tab === 'compare') for (const s of ['a', 'b']) timelines[s].resize();
}
export async function showHlo() {
  if (!state.a) return;
  const sa = stageOf('a'), sb = stageOf('b');
  $('#hlo-title').textContent = `A (${labelOf('a', view.summaries[state.a])}, ${sa}) → B (${labelOf('b', view.summaries[state.b])}, ${sb})`;
  try {
    // Side by side, aligned by the engine's matching (diffview.js).
    await showAlignedHlo($('#hlo-diff'), { a: state.a, sa, b: state.b, sb, onlyChanges: $('#hlo-only-changes').checked });
  } catch (e) { $('#hlo-diff').textContent = e.message; }
}
export async function showMetrics() {
  if (!state.a) return;
  try {
    const [ma, mb, A, B] = await Promise.all([get(`${results(state.a)}/metrics`), get(`${results(state.b)}/metrics`), summaryOf(state.a), summaryOf(state.b)]);
    renderMetrics($('#metrics'), { ma, mb, A, B, la: labelOf('a', A), lb: labelOf('b', B), same: state.a === state.b });
  } catch (e) { $('#metrics').textContent = e.message; }
}
