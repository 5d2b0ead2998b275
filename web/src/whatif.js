// What-ifs on the user's own module (GET /v1/results/{id}/whatif.json,
// docs/WHATIF.md): the Before/after tab's "reroll as scan" mode. A is the
// module as given; B is its reroll (the largest run of repeated layers as
// one while over stacked per-layer parameters), compiled as a result of
// its own from the HLO text the server returns, so both panes draw, diff
// and time like any other pair. The panel lists the runs of repeated
// layers, the reroll's figures, and the offload and sharding sections'
// figures when the server analysed them (or why not).
import { get, post, results } from './api.js';
import { bytes, esc, int, seconds } from './format.js';

// Compiles the rerolled module of result id; { whatif, b } with b the
// rerolled result's id, or b null when nothing rerolled (A = B then).
export async function rerollAsScan(id) {
  // get() shares one object per URL between callers: read it, never change it.
  const { rerolled_hlo: hlo, ...whatif } = await get(`${results(id)}/whatif.json?rerolled=hlo`);
  if (!whatif.scan.analysed || !hlo) return { whatif, b: null };
  const r = await post('/v1/compile', JSON.stringify({ hlo }));
  return { whatif, b: r.id, summary: r };
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

export function renderWhatif(el, w) {
  const s = w.scan;
  const runs = (w.repeats || []).map((r) =>
    `<tr><td>${esc(r.path)}</td><td>${int(r.count)} × ${int(r.block_instructions)}</td><td>${esc(r.first)} … ${esc(r.last)}</td></tr>`).join('');
  el.innerHTML = `<h3>What-ifs on this module <span class="muted">(${esc(w.device)}, analysed in ${seconds(w.analysis_seconds)})</span></h3>
    <table data-testid="whatif-repeats"><thead><tr><th>repeated layers</th><th>layers × instructions</th><th>from … to</th></tr></thead>
    <tbody>${runs || '<tr><td colspan="3" class="muted">none found</td></tr>'}</tbody></table>
    <div class="cards">
    ${section('reroll as scan', 'whatif-scan', s, [
    ['run', esc(s.path)],
    ['instructions', `${int(s.instructions_before)} → ${int(s.instructions_after)}`],
    ['compile', `${seconds(s.compile_seconds_before)} → ${seconds(s.compile_seconds_after)}`],
    ['equivalent', equivalence(s)],
    ['note', esc(s.note)]])}
    ${section('offload activations', 'whatif-offload', w.offload, [
    ['device peak', `${bytes(w.offload.peak_before)} → ${bytes(w.offload.peak_after)} (budget ${bytes(w.offload.budget)}, ${w.offload.fits ? 'fits' : 'does not fit'})`],
    ['moved', bytes(w.offload.bytes_moved)],
    ['exposed transfer', seconds(w.offload.exposed_seconds)],
    ['on the host', esc((w.offload.chosen || []).join(', '))]])}
    ${section('per device', 'whatif-sharding', w.sharding, [
    ['devices', int(w.sharding.devices)],
    ['peak per device', `${bytes(w.sharding.per_device_peak)} (global ${bytes(w.sharding.global_peak)})`],
    ['note', esc(w.sharding.note)]])}
    </div>`;
  el.classList.remove('hidden');
}
