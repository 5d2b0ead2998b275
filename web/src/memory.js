// Memory timeline of one result (GET /memory.json, buffer assignment): one
// uPlot chart per memory space; x = position in the entry computation's
// program order, y = bytes. Every buffer is a box over its live range,
// stacked first-fit (as a heap simulator would place it); the outline is the
// bytes live; the peak is marked in red. Hovering a box reports its buffer.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { bytes as fmtBytes, esc } from './format.js';
import { layerKey } from './graph.js';

const PALETTE = ['#90caf9', '#a5d6a7', '#ffcc80', '#ce93d8', '#80cbc4', '#f48fb1', '#c5e1a5', '#b0bec5'];
const MAX_BOXES = 6000;

export class Timeline {
  constructor(root, { onHover }) {
    this.root = root;
    this.onHover = onHover;
    this.plots = [];
    this.hl = null; // predicate over buffers
    let t;
    new ResizeObserver(() => { clearTimeout(t); t = setTimeout(() => this.resize(), 50); }).observe(root);
  }

  clear(msg = '') {
    for (const p of this.plots) p.u.destroy();
    this.plots = [];
    this.root.innerHTML = msg ? `<div class="tl-head">${esc(msg)}</div>` : '';
  }

  render(mem) {
    this.clear();
    this.mem = mem;
    const all = mem.buffers || [];
    // The entry computation holds the arguments; loop bodies have their own order.
    const arg = all.find((b) => b.kind === 'argument');
    const entry = arg ? arg.computation : all.length ? all[0].computation : 'main';
    const spaces = ['device', 'host'].filter((s, k) => k === 0 || all.some((b) => b.memory_space === s));
    const head = document.createElement('div');
    head.className = 'tl-head';
    head.innerHTML = spaces.map((s) => {
      const pk = mem.peak && mem.peak[s];
      return `<span data-space="${s}">${s} peak <b data-testid="peak-${s}">${fmtBytes(pk ? pk.bytes : mem[`peak_${s}_bytes`])}</b>` +
        (pk && pk.instruction ? ` at ${esc(pk.instruction)}` : '') + '</span>';
    }).join('') + `<span class="muted">(${all.length} buffers, program order of ${esc(entry)})</span>`;
    this.root.appendChild(head);
    this.hover = document.createElement('div');
    this.hover.className = 'tl-hover hidden';
    this.hover.dataset.testid = 'buffer-hover';
    this.root.appendChild(this.hover);
    const height = (this.root.clientHeight - 24) / spaces.length;
    for (const space of spaces) {
      const bufs = all.filter((b) => b.memory_space === space && b.computation === entry);
      this.plots.push(this.plot(space, bufs, Math.max(70, height)));
    }
  }

  plot(space, bufs, height) {
    const n = Math.max(1, ...bufs.map((b) => b.end + 1));
    const delta = new Float64Array(n + 1);
    for (const b of bufs) { delta[b.start] += b.bytes; delta[Math.min(b.end, n)] -= b.bytes; }
    const xs = [], live = [];
    let acc = 0;
    for (let p = 0; p < n; p++) { acc += delta[p]; xs.push(p); live.push(acc); }
    // First-fit stacking in start order, biggest first among equals.
    const boxes = bufs.slice().sort((a, b) => a.start - b.start || b.bytes - a.bytes).slice(0, MAX_BOXES);
    const active = [];
    let top = 0;
    for (const b of boxes) {
      for (let i = active.length - 1; i >= 0; i--) if (active[i].end <= b.start) active.splice(i, 1);
      active.sort((x, y) => x.off - y.off);
      let off = 0;
      for (const a of active) { if (a.off - off >= b.bytes) break; off = Math.max(off, a.off + a.bytes); }
      b._off = off;
      top = Math.max(top, off + b.bytes);
      active.push({ off, bytes: b.bytes, end: b.end });
    }
    const pk = this.mem.peak && this.mem.peak[space];
    const self = this;
    const el = document.createElement('div');
    this.root.appendChild(el);
    const entry = { space, bufs: boxes, u: null, hot: null };
    const opts = {
      width: Math.max(200, this.root.clientWidth - 8),
      height,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: { time: false }, y: { range: [0, Math.max(top, ...live, 1) * 1.08] } },
      axes: [
        { size: 22, font: '12px system-ui', ticks: { size: 3 } },
        { size: 78, font: '12px system-ui', values: (u, v) => v.map((x) => fmtBytes(x)), label: space, labelSize: 14, labelFont: 'bold 13px system-ui' },
      ],
      series: [{}, { stroke: '#37474f', width: 1.5, paths: uPlot.paths.stepped({ align: 1 }) }],
      hooks: {
        drawSeries: [(u) => self.drawBoxes(u, entry, pk)],
        setCursor: [(u) => {
          const { left, top: t } = u.cursor;
          if (left == null || left < 0) { self.setHot(entry, null); return; }
          const x = u.posToVal(left, 'x'), y = u.posToVal(t, 'y');
          let hit = null;
          for (const b of entry.bufs) if (b.start <= x && x < b.end && b._off <= y && y < b._off + b.bytes) { hit = b; break; }
          self.setHot(entry, hit);
        }],
      },
    };
    entry.u = new uPlot(opts, [xs, live], el);
    el.addEventListener('mouseleave', () => self.setHot(entry, null));
    return entry;
  }

  drawBoxes(u, entry, pk) {
    const ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    for (const b of entry.bufs) {
      const x0 = u.valToPos(b.start, 'x', true), x1 = u.valToPos(b.end, 'x', true);
      const y0 = u.valToPos(b._off, 'y', true), y1 = u.valToPos(b._off + b.bytes, 'y', true);
      const hot = b === entry.hot || (this.hl && this.hl(b));
      const k = layerKey(b.op_name);
      ctx.fillStyle = hot ? '#ff6d00' : PALETTE[k ? Number(k.slice(7)) % PALETTE.length : 7];
      ctx.globalAlpha = hot ? 0.95 : 0.75;
      ctx.fillRect(x0, y1, Math.max(1, x1 - x0), Math.max(1, y0 - y1));
      if (hot) { ctx.globalAlpha = 1; ctx.strokeStyle = '#bf360c'; ctx.lineWidth = 2; ctx.strokeRect(x0, y1, Math.max(1, x1 - x0), Math.max(1, y0 - y1)); }
    }
    ctx.globalAlpha = 1;
    if (pk && pk.bytes > 0) {
      const x = u.valToPos(pk.position, 'x', true), y = u.valToPos(pk.bytes, 'y', true);
      ctx.strokeStyle = '#d50000'; ctx.lineWidth = 2; ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(x, u.bbox.top); ctx.lineTo(x, u.bbox.top + u.bbox.height); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = '#d50000';
      ctx.beginPath(); ctx.arc(x, y, 5, 0, 2 * Math.PI); ctx.fill();
      const px = devicePixelRatio;
      ctx.font = `bold ${13 * px}px system-ui`;
      ctx.textAlign = 'left';
      ctx.textBaseline = 'alphabetic';
      const label = `peak ${fmtBytes(pk.bytes)}`;
      const w = ctx.measureText(label).width;
      const lx = x + 8 * px + w > u.bbox.left + u.bbox.width ? x - 8 * px - w : x + 8 * px;
      const ly = Math.max(u.bbox.top + 16 * px, y + 16 * px);
      ctx.fillStyle = 'rgba(255,255,255,.9)';
      ctx.fillRect(lx - 3 * px, ly - 13 * px, w + 6 * px, 17 * px);
      ctx.fillStyle = '#d50000';
      ctx.fillText(label, lx, ly);
    }
    ctx.restore();
  }

  setHot(entry, b) {
    if (entry.hot === b) return;
    entry.hot = b;
    entry.u.redraw(false);
    if (b) {
      this.hover.classList.remove('hidden');
      this.hover.innerHTML = `<b>${esc(b.name)}</b> ${fmtBytes(b.bytes)} · ${esc(b.shape || '')} · live ${b.start}–${b.end}` +
        (b.instruction !== b.name ? ` · ${esc(b.instruction)}` : '');
    } else this.hover.classList.add('hidden');
    this.onHover(b);
  }

  /** Highlights the buffers pred accepts (null: none); returns how many. */
  highlight(pred) {
    this.hl = pred;
    let n = 0;
    for (const p of this.plots) { p.u.redraw(false); if (pred) n += p.bufs.filter(pred).length; }
    this.root.dataset.highlighted = String(n);
    return n;
  }

  resize() {
    if (!this.mem || !this.root.clientWidth) return;
    for (const p of this.plots) p.u.setSize({ width: Math.max(200, this.root.clientWidth - 8), height: p.u.height });
  }
}
