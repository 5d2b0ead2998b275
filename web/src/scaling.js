// Compile scaling, measured live: the current model's repeated block with
// L = 1, 2, 4, ... 64 layers, compiled unrolled and scanned (POST
// /v1/compile). Each point is the median of several fresh compiles, with
// their spread: a compile-cache hit (compile time = the lookup) is never a
// sample. The server's compile cache is keyed by the traced graph, and a
// result is stored by its request, so each sample is the same block with
// another batch (the first dimension of the input: another graph, the same
// passes over the same instructions); a sample that still hits the cache
// (that graph was compiled before) is skipped.
import uPlot from 'uplot';
import { post, query } from './api.js';
import { seconds, int } from './format.js';

export const LAYERS = [1, 2, 4, 8, 16, 32, 64];
export const SAMPLES = 5;
const LOOPS = ['unrolled', 'scan'];

const total = (r) => r.trace_seconds + r.compile_seconds;
export function median(xs) {
  const v = xs.slice().sort((a, b) => a - b), n = v.length;
  return n ? (n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : NaN;
}

export async function measureScaling(chartEl, tableEl, text, ov, label) {
  let model;
  try { model = JSON.parse(text); } catch { throw new Error('Compile scaling repeats a model description\'s block: the editor holds no JSON model (HLO text has no block to repeat)'); }
  const rep = (model.layers || []).find((l) => l && l.repeat);
  const block = rep ? rep.block : model.layers && model.layers[0];
  if (!block) throw new Error('the model has no layers to repeat');
  const batch0 = Number(ov.batch) || (model.input && model.input.shape && model.input.shape[0]) || 1;
  const rows = [];
  for (const L of LAYERS) {
    const row = { L };
    for (const loop of LOOPS) {
      const m = { ...model, name: `${model.name || 'model'}-scaling`, layers: [{ repeat: L, block }] };
      const fresh = [];
      let skipped = 0;
      for (let k = 0; fresh.length < SAMPLES && k < 3 * SAMPLES; k++) {
        label(`Compiling L=${L} ${loop}, sample ${fresh.length + 1} of ${SAMPLES}…`);
        const r = await post(`/v1/compile${query({ ...ov, loop, batch: batch0 + k })}`, m);
        if (r.compile_cache === 'hit') skipped++;
        else fresh.push(r);
      }
      const t = fresh.map(total);
      row[loop] = { n: t.length, skipped, median: median(t), min: Math.min(...t), max: Math.max(...t),
        instructions: fresh.length ? fresh[0].instructions.optimized : NaN };
    }
    rows.push(row);
    draw(chartEl, tableEl, rows);
  }
  return rows;
}

function draw(chartEl, tableEl, rows) {
  chartEl.innerHTML = '';
  const col = (loop, k) => rows.map((r) => (r[loop].n ? r[loop][k] : null));
  const data = [rows.map((r) => r.L), col('unrolled', 'median'), col('unrolled', 'max'), col('unrolled', 'min'),
    col('scan', 'median'), col('scan', 'max'), col('scan', 'min')];
  const edge = (name, stroke) => ({ label: name, stroke, width: 1, dash: [4, 4], value: (u, v) => seconds(v) });
  new uPlot({
    width: Math.min(1000, chartEl.clientWidth - 12 || 800), height: 340,
    title: `trace + compile time vs layers: median of ${SAMPLES} fresh compiles, band = min–max`,
    scales: { x: { time: false, distr: 3, log: 2 }, y: { distr: 1 } },
    axes: [
      { label: 'layers (L)', labelFont: 'bold 14px system-ui', font: '13px system-ui' },
      { label: 'trace + compile', labelFont: 'bold 14px system-ui', font: '13px system-ui', size: 80, values: (u, v) => v.map((x) => seconds(x)) },
    ],
    series: [{ label: 'L' },
      { label: 'unrolled', stroke: '#c62828', width: 3, points: { size: 8 }, value: (u, v) => seconds(v) },
      edge('unrolled max', '#e57373'), edge('unrolled min', '#e57373'),
      { label: 'scan', stroke: '#1565c0', width: 3, points: { size: 8 }, value: (u, v) => seconds(v) },
      edge('scan max', '#64b5f6'), edge('scan min', '#64b5f6')],
    bands: [{ series: [2, 3], fill: 'rgba(198,40,40,.12)' }, { series: [5, 6], fill: 'rgba(21,101,192,.12)' }],
  }, data, chartEl);
  const cell = (c) => (c.n ? `<td data-median="${c.median}">${seconds(c.median)} <span class="muted">(${seconds(c.min)}–${seconds(c.max)}, n=${c.n}${c.skipped ? `, ${c.skipped} cache hits skipped` : ''})</span></td>`
    : `<td class="muted">no fresh compile (${c.skipped} cache hits)</td>`);
  tableEl.innerHTML = `<thead><tr><th>layers</th><th>unrolled: instructions</th><th>unrolled: trace + compile, median (min–max)</th><th>scan: instructions</th><th>scan: trace + compile, median (min–max)</th><th>scan / unrolled (medians)</th></tr></thead><tbody>` +
    rows.map((r) => `<tr data-l="${r.L}"><td>${r.L}</td><td>${int(r.unrolled.instructions)}</td>${cell(r.unrolled)}` +
      `<td>${int(r.scan.instructions)}</td>${cell(r.scan)}<td>${r.unrolled.n && r.scan.n ? `${(r.scan.median / r.unrolled.median).toPrecision(3)}×` : '–'}</td></tr>`).join('') + '</tbody>';
}
