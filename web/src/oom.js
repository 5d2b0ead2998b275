// The out-of-memory report: XLA's figures, the largest buffers at the peak
// and what would help.
import { get, post, query, results } from './api.js';
import { bytes, esc, parseXlaBytes } from './format.js';
import { $, modeSpec, state, view } from './state.js';
import { bodyOf } from './controls.js';
import { markComputed } from './stale.js';
import { plainMessage } from './errors.js';
import { setTab } from './tabs.js';

export function showOom(e, ctx = {}) {
  setTab('compare');
  const el = $('#oom');
  renderOom(el, e, 'Out of device memory');
  for (const s of ['#summary', '#panes', '#graph-tools', '#empty', '#details']) $(s).classList.add('hidden');
  markComputed('compare'); // the report is this source's result
  if (ctx.text != null) largestAtPeak(el, e, ctx);
}

// The figures of XLA's out-of-memory report, in bytes.
export function oomFigures(msg) {
  const used = /Used ([\d.]+\w?) of ([\d.]+\w?) (\w+)/.exec(msg);
  const st = /stack ([\d.]+\w?) of residuals on the device and ([\d.]+\w?) on the host/.exec(msg);
  return {
    used: used ? parseXlaBytes(used[1]) : NaN, cap: used ? parseXlaBytes(used[2]) : NaN, space: used ? used[3] : 'hbm',
    stackedDevice: st ? parseXlaBytes(st[1]) : NaN, stackedHost: st ? parseXlaBytes(st[2]) : NaN,
  };
}

// side: the report sits above B's graph (a training step's A does not fit):
// its first line is short enough to share a row with the title.
export function renderOom(el, e, title, { side = false } = {}) {
  const msg = plainMessage(e.message);
  const f = oomFigures(msg);
  const rows = [...msg.matchAll(/\d+\. Size: ([^\n]+)\n\s+Operator: ([^\n]+)\n\s+Shape: ([^\n]+)/g)];
  el.innerHTML = `<h2 data-testid="oom-title">${esc(title)}</h2>
    <p data-testid="oom-used">${isNaN(f.used) ? esc(msg.split('\n')[0])
    : `Needs <b>${bytes(f.used)}</b>${side ? '' : ` of device memory (${esc(f.space)})`}; the device has <b>${bytes(f.cap)}</b>: <b>${bytes(f.used - f.cap)}</b> too much.`}</p>
    <button class="small oom-more" data-testid="oom-more" title="advice and the largest buffers at the peak">Details</button>
    ${isNaN(f.stackedDevice) ? '' : `<p data-testid="oom-stacked">The training step's scanned loops stack <b>${bytes(f.stackedDevice)}</b> of residuals on the device and ${bytes(f.stackedHost)} on the host.</p>`}
    <p data-testid="oom-advice" class="advice">Measuring what would fit…</p>
    ${rows.length ? `<table class="xla-rows"><thead><tr><th>#</th><th>size</th><th>operator</th><th>shape</th></tr></thead><tbody>${rows.map((r, k) =>
    `<tr><td>${k + 1}</td><td>${bytes(parseXlaBytes(r[1]))}</td><td>${esc(r[2])}</td><td>${esc(r[3])}</td></tr>`).join('')}</tbody></table>` : ''}
    <details><summary>XLA's report</summary><pre>${esc(msg)}</pre></details>`;
  el.classList.remove('hidden');
  el.classList.remove('expanded');
  el.querySelector('.oom-more').onclick = () => el.classList.toggle('expanded');
}

// What would help, for this case: S is the same program compiled for the
// largest preset (big), cap the capacity it ran out of. Weights that alone
// exceed the device are said so (no loop or policy helps); a model that
// already scans is not told to scan; residual policies only for a
// training step, naming the ones it does not use yet.
export function oomAdvice({ cap, S, big }) {
  if (!S) return `It does not fit the largest preset${big ? ` (${esc(big.name)}, ${bytes(big.hbm_bytes)})` : ''} either: make the model smaller (fewer layers, narrower layers, a smaller batch).`;
  const weights = S.memory.stats.device.argument_bytes;
  const bigger = `a device with more memory (on ${esc(big.name)} the program peaks at ${bytes(S.memory.peak_device_bytes)})`;
  if (weights > cap) {
    return `The parameters and inputs alone take <b>${bytes(weights)}</b>, more than the device's ${bytes(cap)}: no loop or residual policy changes that. ` +
      `Use ${bigger}, or a smaller model.`;
  }
  const train = S.mode === 'train';
  const tips = [];
  if (S.loop !== 'scan') tips.push('<b>loop: scan</b> (one layer\u2019s temporaries live at a time, not every layer\u2019s)');
  if (train) {
    const other = ['offload', 'remat', 'remat_offload', 'auto'].filter((r) => r !== S.residuals);
    tips.push(`a residual policy that moves the stacked residuals to host memory or recomputes them (${other.map((r) => `<b>residuals: ${r}</b>`).join(', ')})`);
  }
  tips.push('a smaller <b>batch</b>', 'fewer layers', bigger);
  const already = S.loop === 'scan' ? `It already scans${train ? ` (residuals: ${esc(S.residuals)})` : ''}. ` : '';
  const fwd = !train && S.loop === 'scan' ? 'Residual policies (offload, remat) act on a training step\u2019s saved activations, not on this forward pass. ' : '';
  return `${already}${fwd}Parameters and inputs take ${bytes(weights)} of the ${bytes(cap)}. What can help: ${tips.join('; ')}.`;
}

// XLA's report lists few allocations: compile the same model for the largest
// device preset (compile allocates nothing) and list the buffers live at its
// peak; that compile also says what the advice can build on.
export async function largestAtPeak(el, e, { text, ov }) {
  const big = (view.devices || []).slice().sort((x, y) => y.hbm_bytes - x.hbm_bytes)[0];
  const advice = el.querySelector('[data-testid="oom-advice"]');
  const cap = oomFigures(e.message).cap;
  if (!big) { advice.remove(); return; }
  const variant = /^variant (a|b):/.exec(e.message);
  const extra = variant && state.mode !== 'stage' ? modeSpec()[variant[1]] : {};
  let S = null;
  try {
    S = await post(`/v1/compile${query({ ...ov, ...extra, device: big.name })}`, bodyOf(text));
    const mem = await get(`${results(S.id)}/memory.json`);
    const live = (mem.peak.device.largest_live || []).slice(0, 10);
    const box = document.createElement('div');
    box.dataset.testid = 'oom-largest';
    box.innerHTML = `<h3>Largest buffers live at the peak (${bytes(mem.peak.device.bytes)} at ${esc(mem.peak.device.instruction)})</h3>
      <table><thead><tr><th>#</th><th>buffer</th><th>size</th><th>shape</th><th>op_name</th><th>kind</th></tr></thead><tbody>${live.map((b, k) =>
      `<tr><td>${k + 1}</td><td>${esc(b.name)}</td><td>${bytes(b.bytes)}</td><td>${esc(b.shape)}</td><td>${esc(b.op_name || '')}</td><td>${esc(b.kind)}</td></tr>`).join('')}</tbody></table>
      <p class="muted">Measured by compiling the same model for ${esc(big.name)} (${bytes(big.hbm_bytes)}).</p>`;
    el.insertBefore(box, el.querySelector('details'));
    el.querySelector('table.xla-rows')?.remove(); // the report's list is cut short
  } catch { /* the report above stands; S stays null when even the largest does not fit */ }
  if (advice) advice.innerHTML = isNaN(cap) ? '' : oomAdvice({ cap, S, big });
}
