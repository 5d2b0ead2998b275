// Goodput: tracing-bound steps of the current model (GET /steps.json of a
// run, hs_steps_run on the server). The host re-traces every step (plus the
// frontend overhead model), the first step compiles, the device executes
// what the host hands over; the chart has those two lanes, the cards the
// summary: goodput, MFU and the host-bound / device-bound verdict.
import { esc, int, seconds } from './format.js';

export const FRONTENDS = [
  { name: 'hloscope', us: 0, label: 'hloscope (0 µs/op)' },
  { name: 'lazy-tensor', us: 5, label: 'lazy-tensor (5 µs/op)' },
  { name: 'eager-python', us: 20, label: 'eager-python (20 µs/op)' },
];

// Goodput and MFU as shown (and as the tests round them): one decimal of a percent.
export const pct = (x) => `${(100 * x).toFixed(1)}%`;
export const pct2 = (x) => `${(100 * x).toFixed(2)}%`;

const KINDS = {
  trace: { color: '#1e88e5', label: 'trace (measured)' },
  overhead: { color: '#90caf9', label: 'frontend overhead (model)' },
  lookup: { color: '#78909c', label: 'cache lookup' },
  compile: { color: '#8e24aa', label: 'compile (cache miss)' },
  wait: { color: '#fdd835', label: 'host waits (queue full)' },
  execute: { color: '#43a047', label: 'device executes' },
  idle: { color: '#e53935', label: 'device idle' },
};

// The host and device segments of every step, as hs_steps_gantt_segments lays them out.
export function segments(st) {
  const host = [], device = [];
  for (const p of st.steps) {
    let t = p.host_start;
    for (const [kind, d] of [['trace', p.trace_seconds], ['overhead', p.overhead_seconds], ['lookup', p.lookup_seconds], ['compile', p.compile_seconds]]) {
      if (d > 0) host.push({ step: p.step, kind, start: t, end: t + d });
      t += d;
    }
    if (p.host_wait > 0) host.push({ step: p.step, kind: 'wait', start: p.host_end, end: p.host_end + p.host_wait });
    if (p.device_idle > 0) device.push({ step: p.step, kind: 'idle', start: p.device_start - p.device_idle, end: p.device_start });
    device.push({ step: p.step, kind: 'execute', start: p.device_start, end: p.device_end, reused: !p.device_measured });
  }
  return { host, device };
}

function chart(st) {
  const { host, device } = segments(st);
  const W = 1200, L = 110, R = 16, laneH = 64, top = 12, gap = 16;
  const end = Math.max(st.summary.makespan_seconds, ...host.map((s) => s.end), 1e-9);
  const x = (t) => L + (t / end) * (W - L - R);
  const H = top + 2 * laneH + gap + 48;
  const parts = [];
  const lane = (segs, y, name) => {
    parts.push(`<text x="${L - 12}" y="${y + laneH / 2 + 7}" text-anchor="end" class="lane">${name}</text>`);
    parts.push(`<rect x="${L}" y="${y}" width="${W - L - R}" height="${laneH}" fill="#f5f7fa" stroke="#cfd8dc"/>`);
    for (const s of segs) {
      const x0 = x(s.start), w = Math.max(1, x(s.end) - x0);
      parts.push(`<rect class="seg seg-${s.kind}" data-step="${s.step}" x="${x0.toFixed(2)}" y="${y + 4}" width="${w.toFixed(2)}" height="${laneH - 8}" fill="${KINDS[s.kind].color}" stroke="#fff" stroke-width="1">` +
        `<title>step ${s.step}: ${esc(KINDS[s.kind].label)}${s.reused ? ' (step 1\u2019s simulated time)' : ''}, ${seconds(s.end - s.start)}</title></rect>`);
      if (s.kind === 'execute' && w > 26) parts.push(`<text x="${(x0 + w / 2).toFixed(1)}" y="${y + laneH / 2 + 7}" text-anchor="middle" class="stepno">${s.step}</text>`);
    }
  };
  lane(host, top, 'host');
  lane(device, top + laneH + gap, 'device');
  // Time axis in ms with ~8 round ticks.
  const axisY = top + 2 * laneH + gap + 8;
  const raw = (end * 1e3) / 8, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((v) => v >= raw);
  for (let t = 0; t <= end * 1e3 + 1e-9; t += step) {
    const px = x(t / 1e3);
    parts.push(`<line x1="${px}" x2="${px}" y1="${top}" y2="${axisY}" stroke="#b0bec5" stroke-dasharray="${t ? '2 4' : ''}"/>`);
    parts.push(`<text x="${px}" y="${axisY + 20}" text-anchor="middle" class="tick">${Number(t.toPrecision(3))}</text>`);
  }
  parts.push(`<text x="${W - R}" y="${axisY + 38}" text-anchor="end" class="tick">wall time, ms (host measured + overhead model; device simulated)</text>`);
  return `<svg class="gp-chart" viewBox="0 0 ${W} ${H}" preserveAspectRatio="xMinYMin meet" data-testid="goodput-chart" role="img" aria-label="host and device lanes">${parts.join('')}</svg>`;
}

export function renderGoodput(root, st) {
  const s = st.summary;
  const n = s.steady_steps || 1;
  const host = s.steady_host_seconds / n, dev = s.steady_device_seconds / n;
  const hostBound = s.verdict === 'host-bound';
  const fe = st.frontend || {};
  const legend = Object.entries(KINDS).map(([k, v]) => `<span><i style="background:${v.color}"></i>${esc(v.label)}</span>`).join('');
  root.innerHTML = `
    <div class="gp-cards">
      <div class="gp-card gp-main ${hostBound ? 'bad' : 'good'}"><div class="label">goodput</div>
        <div class="big" data-testid="goodput-value" data-goodput="${s.goodput}">${pct(s.goodput)}</div>
        <div class="sub">device busy / wall (steps 2–${int(s.steps)})</div></div>
      <div class="gp-card ${hostBound ? 'bad' : 'good'}"><div class="label">verdict</div>
        <div class="big verdict" data-testid="goodput-verdict">${esc(s.verdict)}</div>
        <div class="sub">${hostBound ? 'tracing-bound: the device waits for the host' : 'the host keeps ahead of the device'}</div></div>
      <div class="gp-card"><div class="label">MFU</div><div class="big" data-testid="goodput-mfu">${pct2(s.mfu)}</div>
        <div class="sub">of ${esc(st.device)}'s peak</div></div>
      <div class="gp-card"><div class="label">per step: host · device</div>
        <div class="big"><span class="${hostBound ? 'hot' : ''}" data-testid="goodput-host">${seconds(host)}</span> · <span data-testid="goodput-device">${seconds(dev)}</span></div>
        <div class="sub">a steady step takes ${seconds(s.step_seconds)} of wall time</div></div>
    </div>
    <p class="gp-line" data-testid="goodput-line"><b>${esc(st.model)}</b>, ${esc(st.loop)}, ${esc(st.mode)}, on ${esc(st.device)} ·
      frontend <b>${esc(fe.name)}</b> (${fe.op_overhead_us} µs per traced op, a model) ·
      ${int(st.steps[0] ? st.steps[0].traced_ops : 0)} traced ops per step ·
      compile cache <b data-testid="goodput-cache">${int(st.compile_cache.uncached)} uncached, ${int(st.compile_cache.cached)} cached</b> · queue ${int(st.queue_depth)}</p>
    ${chart(st)}
    <div class="gp-legend">${legend}</div>`;
}
