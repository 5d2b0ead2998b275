// The model editor and the sidebar's controls: examples, devices, settings.
import { get } from './api.js';
import { createEditor } from './editor.js';
import { bytes } from './format.js';
import { isHlo } from './lint.js';
import { openPair } from './compare.js';
import { $, modelOf, state, touring, view, writeHash } from './state.js';
import { refreshStale } from './stale.js';
import { hideError } from './errors.js';

// ---- editor and controls -----------------------------------------------------
export const editor = createEditor($('#editor'), {
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
export const bodyOf = (text) => (isHlo(text) ? JSON.stringify({ hlo: text }) : text);
export async function openFile(f) {
  const text = await f.text();
  editor.text = text;
  state.ex = '';
  $('#example').value = '';
  writeHash();
}

export async function loadExamples() {
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

// "NAME (model's)": the device the model text names, else the server
// default; the name first, so that a narrow menu (1280 px) cuts the rest.
export function deviceLabel() {
  const m = modelOf(editor.text);
  const name = m && typeof m.device === 'string' ? m.device : view.defaultDevice || '';
  $('#device').options[0].text = name ? `${name} (model's)` : "model's";
}

export async function pickExample(name) {
  state.ex = name;
  $('#example').value = name;
  const model = await get(`/v1/examples/${encodeURIComponent(name)}`, { text: true });
  editor.text = typeof model === 'string' ? model : JSON.stringify(model, null, 2);
  deviceLabel();
  writeHash();
}

export function overrides() {
  const o = {};
  for (const k of SETTINGS) {
    const v = $(`#${k}`).value.trim();
    if (v) o[k] = v;
  }
  return o;
}
export const SETTINGS = ['loop', 'residuals', 'device', 'batch'];
export function setOverrides(o) {
  for (const k of SETTINGS) $(`#${k}`).value = o[k] != null ? String(o[k]) : '';
  deviceLabel();
}
