// Explorer state: the URL hash (state), what the page shows (view), the
// before/after modes and a pane's label.

import { WHATIF_MODES } from './whatif.js';

export const $ = (s) => document.querySelector(s);
const MODES = {
  loop: { a: { loop: 'unrolled' }, b: { loop: 'scan' }, la: 'unrolled', lb: 'scan' },
  stage: { la: 'traced', lb: 'optimized' },
  ...WHATIF_MODES, // reroll, offload, sharding: what-ifs on a dump (whatif.js)
};
// The current mode, with the residuals compare's B side (#res-b) filled in.
export function modeSpec() {
  if (state.mode !== 'residuals') return MODES[state.mode];
  const rb = state.rb || 'offload';
  return { a: { residuals: 'save' }, b: { residuals: rb }, la: 'residuals: save', lb: `residuals: ${rb}` };
}
// Residuals exist only in a differentiated step: a model with a "train"
// section compares its training step (?mode=train).
export function hasTrain(text) {
  return !!(modelOf(text) || {}).train;
}
// The editor's text as a model description, or null (HLO text, or being edited).
export function modelOf(text) {
  try { const m = JSON.parse(text); return m && typeof m === 'object' ? m : null; } catch { return null; }
}
// A pane's label: a training step says so, with its residual policy.
export function labelOf(side, S) {
  if (S && S.mode === 'train') return `train step · residuals: ${S.residuals}`;
  if (side === 'a' && view.failA) return `train step · residuals: ${view.failA.residuals}`;
  return modeSpec()[`l${side}`];
}


// ---- state and URL ---------------------------------------------------------
export const state = {
  mode: 'loop', a: '', b: '', stage: 'optimized', expand: '', computation: '',
  tab: 'compare', sel: '', side: 'a', q: '', ex: '', grun: '', gfe: '', gsteps: '', rb: '',
  o: '', // the sidebar's settings (loop, residuals, device, batch) as a query string
  overlay: '', // the graphs' "colour by" (overlay.js)
  pair: '', // the Dump pair tab's comparison (compare.js): a link reopens its two sources
};
// failA: the training step of side A did not fit ({error, residuals, id}); B
// shows, and A's out-of-memory result (id) its graph and timeline.
// sig: per result page, the source and settings it was computed from
// (signature()), so that an edit afterwards marks it stale.
export const view = { summaries: {}, ratios: null, diffCounts: null, goodput: {}, failA: null, sig: {} };
// While the tour runs it works in a workspace of its own: nothing it loads
// reaches localStorage, and its end puts the user's editor, settings, view
// and storage back (tourWorkspace).
export let touring = false;
// The tour's workspace (workspace.js) says when it begins and ends.
export function setTouring(on) { touring = on; }

export function readHash() {
  const h = new URLSearchParams(location.hash.replace(/^#/, ''));
  for (const k of Object.keys(state)) if (h.has(k)) state[k] = h.get(k);
}
export function writeHash() {
  const h = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v) h.set(k, v);
  history.replaceState(null, '', `#${h.toString()}`);
  // The ids this browser shows, so that a reload keeps the editor's own text.
  if (!touring) localStorage.setItem('hloscope.ids', `${state.a}/${state.b}`);
}
