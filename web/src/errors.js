// Progress while a request runs, and errors shown where they are (the
// editor's line, a JSON path, a setting).
import { ApiError } from './api.js';
import { esc } from './format.js';
import { isHlo } from './lint.js';
import { $, modeSpec, state } from './state.js';
import { editor } from './controls.js';
import { showOom } from './oom.js';

// ---- progress and errors ---------------------------------------------------
export let busy = 0;
export async function withProgress(label, fn) {
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

export function hideError() {
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
export function plainMessage(msg) {
  return String(msg || '').replace(/^variant (a|b): /, (m, side) => {
    const label = state.mode === 'stage' ? '' : modeSpec()[`l${side}`];
    return `${side.toUpperCase()}${label ? ` (${label})` : ''}: `;
  });
}
