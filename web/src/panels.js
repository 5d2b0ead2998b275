// Metrics (per-pass compile report of both sides) and run results.
import { seconds, int, bytes, esc } from './format.js';
import { results } from './api.js';

export function renderMetrics(root, { ma, mb, A, B, la, lb, same }) {
  const pa = (ma.compile_report && ma.compile_report.passes) || [];
  const pb = (mb.compile_report && mb.compile_report.passes) || [];
  const names = [...new Set([...pa.map((p) => p.name), ...pb.map((p) => p.name)])];
  const max = Math.max(1e-12, ...pa.map((p) => p.seconds), ...pb.map((p) => p.seconds));
  const cell = (p) => (p ? `<td class="bar-cell"><span class="b" style="width:${(100 * p.seconds / max).toFixed(1)}%"></span><span class="v">${seconds(p.seconds)}</span></td><td>${int(p.instructions_before)} → ${int(p.instructions_after)}</td>` : '<td>–</td><td>–</td>');
  const by = (arr, n) => arr.find((p) => p.name === n);
  root.innerHTML = `<h3>Compile time per pass</h3>
    <table class="summary" data-testid="passes"><thead><tr><th>pass</th><th>A · ${esc(la)}</th><th>instructions</th>${same ? '' : `<th>B · ${esc(lb)}</th><th>instructions</th>`}</tr></thead><tbody>
    ${names.map((n) => `<tr><td>${esc(n)}</td>${cell(by(pa, n))}${same ? '' : cell(by(pb, n))}</tr>`).join('')}
    <tr><td><b>total</b></td><td colspan="2"><b>${seconds(ma.compile_report && ma.compile_report.total_seconds)}</b></td>${same ? '' : `<td colspan="2"><b>${seconds(mb.compile_report && mb.compile_report.total_seconds)}</b></td>`}</tr></tbody></table>
    <h3>Counters</h3>
    <table class="summary"><thead><tr><th></th><th>A</th>${same ? '' : '<th>B</th>'}</tr></thead><tbody>
    ${['CachedCompile', 'UncachedCompile'].map((k) => `<tr><td>${k}</td><td>${int(ma.counters && ma.counters[k])}</td>${same ? '' : `<td>${int(mb.counters && mb.counters[k])}</td>`}</tr>`).join('')}
    <tr><td>estimated FLOPs</td><td>${int(A.estimate && A.estimate.flops)}</td>${same ? '' : `<td>${int(B.estimate && B.estimate.flops)}</td>`}</tr>
    <tr><td>estimated bytes</td><td>${bytes(A.estimate && A.estimate.bytes)}</td>${same ? '' : `<td>${bytes(B.estimate && B.estimate.bytes)}</td>`}</tr>
    <tr><td>pipeline</td><td>${esc(A.pipeline)}</td>${same ? '' : `<td>${esc(B.pipeline)}</td>`}</tr>
    <tr><td>fingerprint</td><td>${esc(A.fingerprint)}</td>${same ? '' : `<td>${esc(B.fingerprint)}</td>`}</tr>
    </tbody></table>
    <h3>torch_xla-style reports</h3>
    <pre>${esc(ma.compile_report_text || '')}\n${esc(ma.metrics_report_text || '')}</pre>
    ${same ? '' : `<pre>${esc(mb.compile_report_text || '')}\n${esc(mb.metrics_report_text || '')}</pre>`}`;
}

export async function renderRun(root, r) {
  const run = r.run || {};
  const outs = (r.outputs || []).map((o) => `<tr><td>${esc(o.shape)}</td><td>${esc(o.sum)}</td><td>${esc((o.first || o.values || []).slice(0, 6).join(', '))}</td></tr>`).join('');
  // The training step's own figures beside its losses: the step (forward,
  // backward and update) peaks higher than the forward pass above.
  const step = r.train && r.train.last_step;
  const train = r.train && !r.train.error && r.train.losses
    ? `<h3>Training</h3><p>${int(r.train.steps)} steps, losses: <b>${r.train.losses.map((x) => Number(x).toPrecision(4)).join(' → ')}</b></p>` +
      (step ? `<p data-testid="train-peak">training step (${int(r.train.step_instructions)} instructions): peak <b>${bytes(step.peak_device_bytes)}</b> device · ${bytes(step.peak_host_bytes)} host, ${seconds(step.sim_seconds)} simulated per step</p>` : '')
    : r.train && r.train.error ? `<h3>Training</h3><p class="muted">${esc(r.train.error.message || JSON.stringify(r.train.error))}</p>` : '';
  let steps = '';
  try {
    const s = await fetch(`${results(r.id)}/steps.json`).then((x) => (x.ok ? x.json() : null));
    if (s) steps = `<h3>Steps (forward pass, ${s.summary.steps} steps, frontend ${esc(s.frontend.name)}): goodput ${(100 * s.summary.goodput).toFixed(1)}%${s.summary.verdict === 'host-bound' ? ' — <span style="color:#c62828">host-bound (tracing-bound)</span>' : ''}</h3>
      <p class="muted">The <b>Goodput</b> tab measures them with another frontend overhead or step count.</p>
      <div class="run-steps"><img alt="step timeline" src="${results(r.id)}/steps.svg"></div>`;
  } catch { /* no steps */ }
  root.innerHTML = `<h3>Run of ${esc(r.module)} on ${esc(r.device)} (${esc(r.loop)})</h3>
    <table class="summary"><tbody>
      <tr><td>simulated device time</td><td>${seconds(run.sim_seconds ?? run.simulated_seconds)}</td></tr>
      <tr><td>FLOPs executed</td><td>${int(run.flops)}</td></tr>
      <tr><td>bytes accessed</td><td>${bytes(run.bytes_accessed)}</td></tr>
      <tr><td>instructions executed</td><td>${int(run.instructions ?? run.instructions_executed)}</td></tr>
      <tr><td>measured peak${r.train ? ' of the forward pass' : ''} (device · host)</td><td>${bytes(run.peak_device_bytes)} · ${bytes(run.peak_host_bytes)}</td></tr>
      <tr><td>host wall time</td><td>${seconds(run.wall_seconds ?? run.host_seconds)}</td></tr>
    </tbody></table>
    <h3>Outputs</h3><table class="summary"><thead><tr><th>shape</th><th>sum</th><th>first values</th></tr></thead><tbody>${outs}</tbody></table>
    ${train}${steps}
    <details><summary>full reply</summary><pre>${esc(JSON.stringify(r, null, 2))}</pre></details>`;
}
