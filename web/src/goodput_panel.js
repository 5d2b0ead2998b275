// The Goodput tab: runs the model's steps with the panel's settings.
import { get, post, query, results } from './api.js';
import { esc } from './format.js';
import { renderGoodput } from './goodput.js';
import { $, state, view, writeHash } from './state.js';
import { bodyOf, editor, overrides } from './controls.js';
import { markComputed } from './stale.js';
import { hideError, showError, withProgress } from './errors.js';

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

export async function showGoodput() {
  if (!state.grun) return null;
  const url = `${results(state.grun)}/steps.json${goodputQuery()}`;
  const st = await get(url);
  view.goodput[st.loop] = st;
  view.lastGoodput = st;
  renderGoodput($('#goodput'), st);
  $('#gp-links').innerHTML = `<a href="${esc(url)}" target="_blank">steps.json</a> · <a href="${esc(url.replace('/steps.json', '/steps.svg'))}" target="_blank">server chart (SVG)</a>`;
  return st;
}
