// Compile scaling, measured live: the current model's repeated block with
// L = 1, 2, 4, ... 64 layers, compiled unrolled and scanned (POST /v1/compile).
import uPlot from 'uplot';
import { post, query } from './api.js';
import { seconds, int, esc } from './format.js';

export const LAYERS = [1, 2, 4, 8, 16, 32, 64];

export async function measureScaling(chartEl, tableEl, text, ov, label) {
  const model = JSON.parse(text);
  const rep = (model.layers || []).find((l) => l && l.repeat);
  const block = rep ? rep.block : model.layers && model.layers[0];
  if (!block) throw new Error('the model has no layers to repeat');
  const rows = [];
  for (const L of LAYERS) {
    const row = { L };
    for (const loop of ['unrolled', 'scan']) {
      label(`Compiling L=${L} ${loop}…`);
      const m = { ...model, name: `${model.name || 'model'}-scaling`, layers: [{ repeat: L, block }] };
      const r = await post(`/v1/compile${query({ ...ov, loop })}`, m);
      row[loop] = r;
    }
    rows.push(row);
    draw(chartEl, tableEl, rows);
  }
  return rows;
}

const total = (r) => r.trace_seconds + r.compile_seconds;

function draw(chartEl, tableEl, rows) {
  chartEl.innerHTML = '';
  const data = [rows.map((r) => r.L), rows.map((r) => total(r.unrolled)), rows.map((r) => total(r.scan))];
  new uPlot({
    width: Math.min(1000, chartEl.clientWidth - 12 || 800), height: 340,
    title: 'trace + compile time vs layers',
    scales: { x: { time: false, distr: 3, log: 2 }, y: { distr: 1 } },
    axes: [
      { label: 'layers (L)', labelFont: 'bold 14px system-ui', font: '13px system-ui' },
      { label: 'seconds', labelFont: 'bold 14px system-ui', font: '13px system-ui', size: 70, values: (u, v) => v.map((x) => seconds(x)) },
    ],
    series: [{ label: 'L' },
      { label: 'unrolled', stroke: '#c62828', width: 3, points: { size: 8 }, value: (u, v) => seconds(v) },
      { label: 'scan', stroke: '#1565c0', width: 3, points: { size: 8 }, value: (u, v) => seconds(v) }],
  }, data, chartEl);
  tableEl.innerHTML = `<thead><tr><th>layers</th><th>unrolled: instructions</th><th>unrolled: trace + compile</th><th>scan: instructions</th><th>scan: trace + compile</th><th>scan / unrolled time</th></tr></thead><tbody>` +
    rows.map((r) => `<tr data-l="${r.L}"><td>${r.L}</td><td>${int(r.unrolled.instructions.optimized)}</td><td>${seconds(total(r.unrolled))}${cached(r.unrolled)}</td>` +
      `<td>${int(r.scan.instructions.optimized)}</td><td>${seconds(total(r.scan))}${cached(r.scan)}</td><td>${(total(r.scan) / total(r.unrolled)).toPrecision(3)}×</td></tr>`).join('') + '</tbody>';
}
const cached = (r) => (r.compile_cache === 'hit' ? ' <span class="muted" title="compile cache hit: compile time is the lookup">(cached)</span>' : '');
export { esc };
