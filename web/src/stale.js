// What a result was computed from: a page whose source or settings changed
// since is marked stale.
import { $, modelOf, state, view } from './state.js';
import { editor, overrides } from './controls.js';

// ---- what a result was computed from ------------------------------------------
// A model is compared by its canonical form (keys sorted, whitespace dropped:
// what the server hashes), so reformatting it, or the indented text a link
// brings (GET /source), is not an edit; HLO text is compared as it is.
export function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
  return JSON.stringify(v);
}
export const sourceKey = (text) => { const m = modelOf(text); return m ? canonical(m) : text; };
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
export function markComputed(key) {
  view.sig[key] = signature(key);
  refreshStale();
}
