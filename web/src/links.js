// Links carry the source: a link's result ids bring back its request.
import { get, results } from './api.js';
import { $, state, view } from './state.js';
import { SETTINGS, editor, overrides, setOverrides } from './controls.js';
import { canonical, refreshStale, sourceKey } from './stale.js';
import { showError } from './errors.js';

// ---- links carry the source -------------------------------------------------
// A link holds result ids; GET /source gives the request they came from.
// Opened elsewhere, the editor and the settings become exactly that source,
// so the panes and the editor agree (any edit afterwards marks them stale).
// Reloading one's own page keeps one's edits (the ids are the ones this
// browser last showed: the panes are marked stale instead). The text a link
// replaces is kept (Back to your text).
export async function openLink(saved) {
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
export function backToYourText() {
  const t = localStorage.getItem('hloscope.yours');
  if (t != null) editor.text = t;
  localStorage.removeItem('hloscope.yours');
  $('#link-note').classList.add('hidden');
}
