// What-ifs on the user's own module (GET /v1/results/{id}/whatif.json,
// docs/WHATIF.md): the Before/after tab's three what-if modes for HLO
// input. A is the module as given (a result even when it does not fit the
// device); B is
//   reroll   - its reroll (every run of repeated layers its own while over
//              stacked per-layer parameters),
//   offload  - the module with its saved activations placed in host memory
//              (the offload passes' copies in and out of S(5)),
//   sharding - the module itself: node details show per-device beside
//              global bytes, the panel the per-device peak,
// B compiled as a result of its own from the HLO text the server returns,
// so both panes draw, diff and time like any other pair. The panel lists
// the runs of repeated layers, what the reroll made of each, and every
// section's figures (or why it was not analysed).
import { get, post, results } from './api.js';
import { bytes, esc, int, seconds } from './format.js';

// The what-if modes of the Before/after select, with the pane labels.
export const WHATIF_MODES = {
  reroll: { la: 'as given', lb: 'rerolled as scan', hlo: 'rerolled' },
  offload: { la: 'as given', lb: 'activations offloaded', hlo: 'offloaded' },
  sharding: { la: 'as given', lb: 'per device', hlo: null },
};
export const isWhatifMode = (mode) => Object.hasOwn(WHATIF_MODES, mode);

// The what-if of result id for mode, and B: the rewritten module compiled
// as a result (b its id), or b null when nothing was rewritten (A = B
// then; the panel says why). A module over the device's HBM is a result
// too (oomResult), flagged out_of_memory.
export async function whatifPair(mode, id) {
  const key = WHATIF_MODES[mode].hlo;
  // get() shares one object per URL between callers: read it, never change it.
  const all = await get(`${results(id)}/whatif.json${key ? `?${key}=hlo` : ''}`);
  const whatif = { ...all };
  delete whatif.rerolled_hlo;
  delete whatif.offloaded_hlo;
  const hlo = key && all[`${key}_hlo`];
  if (!hlo) return { whatif, b: null };
  const r = await post('/v1/compile', JSON.stringify({ hlo }), { oomResult: true });
  return { whatif, b: r.id, summary: r };
}

// The what-if modes' part of a node's details: what one device holds of
// it beside its global size, when it carries a sharding (graph.json's
// per_device_bytes / global_bytes, null otherwise).
export function perDeviceRows(n) {
  if (n.per_device_bytes == null || n.global_bytes == null) return '';
  return `<dt>per device</dt><dd data-testid="details-per-device">${bytes(n.per_device_bytes)} ` +
    `<span class="muted">of ${bytes(n.global_bytes)} global</span></dd>`;
}

const equivalence = (s) => (s.equivalent === true ? '<span class="better">bit-identical</span>'
  : s.equivalent === false ? `<span class="worse">differs (max |Δ| ${esc(s.max_abs_difference)})</span>`
    : 'not run');

function section(title, testid, s, rows) {
  if (!s.analysed) {
    return `<div class="card" data-testid="${testid}"><div class="label">${title}</div>` +
      `<div class="muted" data-testid="${testid}-reason">${esc(s.reason)}</div></div>`;
  }
  return `<div class="card" data-testid="${testid}"><div class="label">${title}</div>` +
    rows.map(([k, v]) => `<div class="vals"><span class="muted">${k}</span> ${v}</div>`).join('') + '</div>';
}

const outcome = (s, path) => {
  const r = (s.runs || []).find((x) => x.path === path);
  if (!r) return '';
  return r.rerolled ? `<span class="better">${int(r.layers_rerolled)} of ${int(r.layers)} in a loop</span> <span class="muted">${esc(r.note)}</span>`
    : `<span class="muted">not rerolled: ${esc(r.note)}</span>`;
};

export function renderWhatif(el, w) {
  const s = w.scan;
  const runs = (w.repeats || []).map((r) =>
    `<tr><td>${esc(r.path)}</td><td>${int(r.count)} × ${int(r.block_instructions)}</td><td>${esc(r.first)} … ${esc(r.last)}</td><td data-testid="whatif-run-outcome">${outcome(s, r.path)}</td></tr>`).join('');
  const off = w.offload;
  const left = (off.not_candidates || []).map((x) => `${int(x.count)} ${esc(x.kind.replace(/_/g, ' '))} values (${bytes(x.bytes)}): ${esc(x.reason)}`).join('; ');
  el.innerHTML = `<h3>What-ifs on this module <span class="muted">(${esc(w.device)}, analysed in ${seconds(w.analysis_seconds)})</span></h3>
    <table data-testid="whatif-repeats"><thead><tr><th>repeated layers</th><th>layers × instructions</th><th>from … to</th><th>reroll</th></tr></thead>
    <tbody>${runs || '<tr><td colspan="4" class="muted">none found</td></tr>'}</tbody></table>
    <div class="cards">
    ${section('reroll as scan', 'whatif-scan', s, [
    ['loops', `${int(s.loops)} (largest: ${esc(s.path)})`],
    ['instructions', `${int(s.instructions_before)} → ${int(s.instructions_after)}`],
    ['compile', `${seconds(s.compile_seconds_before)} → ${seconds(s.compile_seconds_after)}`],
    ['equivalent', equivalence(s)],
    ['note', esc(s.note)]])}
    ${section('offload activations', 'whatif-offload', w.offload, [
    ['device peak', `${bytes(w.offload.peak_before)} → ${bytes(w.offload.peak_after)} (budget ${bytes(w.offload.budget)}, ${w.offload.fits ? 'fits' : 'does not fit'})`],
    ['moved', bytes(w.offload.bytes_moved)],
    ['exposed transfer', seconds(w.offload.exposed_seconds)],
    ['on the host', esc((w.offload.chosen || []).join(', '))],
    ['note', esc(w.offload.reason || '')],
    ['not candidates', left || 'none']])}
    ${section('per device', 'whatif-sharding', w.sharding, [
    ['devices', int(w.sharding.devices)],
    ['peak per device', `${bytes(w.sharding.per_device_peak)} (global ${bytes(w.sharding.global_peak)})`],
    ['note', esc(w.sharding.note)]])}
    </div>`;
  el.classList.remove('hidden');
}
