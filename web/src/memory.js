// Memory view of one result (GET /memory.json, buffer assignment), after
// XProf's memory viewer: one uPlot lane per memory space (x = position in
// the entry computation's program order, y = bytes; every buffer a box over
// its live range, stacked first-fit as a heap simulator would place it; the
// bytes live as a step line; the peak in red) and a table of the buffers
// live at the peak. Drag across a lane to zoom into a range (the table then
// lists the buffers live at the highest point inside it), double-click or
// "reset" to see the whole program. A box or a row hovered reports its
// buffer, clicked selects its node in the graph; a node selected in the
// graph marks its buffers here. The lanes' height is dragged at their top
// edge and remembered.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { bytes as fmtBytes, esc } from './format.js';
import { layerKey } from './graph.js';

const PALETTE = ['#90caf9', '#a5d6a7', '#ffcc80', '#ce93d8', '#80cbc4', '#f48fb1', '#c5e1a5', '#b0bec5'];
const MAX_BOXES = 6000;
const HEIGHT_KEY = 'hloscope.memoryHeight';
const TABLE_KEY = 'hloscope.memoryTable';
// Sizes in px, tighter on a short screen (a projector at 1280x720, where
// the graph keeps half the height: one lane then fits the stylesheet's
// 96 px): the line of peaks and buttons above the lanes, the program-order
// axis under the last lane only, and the least plot height that still has
// room for ticks and boxes (below it the lanes scroll instead).
const short = () => innerHeight < 820;
const HEAD = () => (short() ? 22 : 26);
const AXIS = () => (short() ? 20 : 24);
const laneMin = () => (short() ? 50 : 80);
// The lanes' default height: every lane at its minimum, one axis.
const lanesHeight = (n) => HEAD() + n * (laneMin() + 6) + AXIS() + 4;
// The least height of the table alone on a short screen: the line of
// peaks, the column heads and three rows.
const SHORT_TABLE_MIN = 96;

// ---- round byte ticks ----------------------------------------------------
// Steps that stay round in format.js's units: decimal multiples only while
// the axis stays below the next unit (else 1000 KiB and 1.17 MiB would
// follow), binary ones (256, 512) anywhere: 0, 512 MiB, 1 GiB, 1.5 GiB.
const STEPS = [1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 256, 500, 512];
export function byteStep(max, count) {
  const raw = max / Math.max(1, count);
  for (let unit = 1; unit <= 1024 ** 5; unit *= 1024) {
    for (const m of STEPS) {
      const step = m * unit;
      if (step < raw) continue;
      if (m !== 256 && m !== 512 && 1024 % m !== 0 && max >= 1024 * unit) continue;
      return step;
    }
  }
  return raw;
}
// A tick label: format.js's units with the trailing zeros of a round value
// dropped ("16 MiB", "1.5 GiB", not "16.0 MiB").
export const tickLabel = (v) => fmtBytes(v).replace(/\.0+ /, ' ').replace(/(\.\d*?[1-9])0+ /, '$1 ');

function byteSplits(u, axis, min, max) {
  const step = byteStep(max - min, Math.max(2, Math.floor(u.bbox.height / devicePixelRatio / 26)));
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max; v += step) out.push(v);
  return out;
}

// ---- the live bytes over program order -------------------------------------
// Positions are inclusive (a buffer is live at its start and its end, as the
// server's peak counts it), so a box covers [start, end + 1).
function liveCurve(bufs) {
  const n = Math.max(1, ...bufs.map((b) => b.end + 2));
  const delta = new Float64Array(n + 1);
  for (const b of bufs) { delta[b.start] += b.bytes; delta[b.end + 1] -= b.bytes; }
  const xs = [], live = [];
  let acc = 0;
  for (let p = 0; p < n; p++) { acc += delta[p]; xs.push(p); live.push(acc); }
  return { xs, live };
}

// First-fit stacking in start order, biggest first among equals.
function stack(bufs) {
  const boxes = bufs.slice().sort((a, b) => a.start - b.start || b.bytes - a.bytes).slice(0, MAX_BOXES);
  const active = [];
  let top = 0;
  for (const b of boxes) {
    for (let i = active.length - 1; i >= 0; i--) if (active[i].end < b.start) active.splice(i, 1);
    active.sort((x, y) => x.off - y.off);
    let off = 0;
    for (const a of active) { if (a.off - off >= b.bytes) break; off = Math.max(off, a.off + a.bytes); }
    b._off = off;
    top = Math.max(top, off + b.bytes);
    active.push({ off, bytes: b.bytes, end: b.end });
  }
  return { boxes, top };
}

const COLUMNS = [
  { key: 'name', label: 'buffer' },
  { key: 'bytes', label: 'size', num: true },
  { key: 'shape', label: 'shape' },
  { key: 'instruction', label: 'instruction' },
  { key: 'op_name', label: 'op_name' },
  { key: 'kind', label: 'kind' },
  { key: 'memory_space', label: 'space' },
];

export class Timeline {
  constructor(root, { onHover, onSelect }) {
    this.root = root;
    this.onHover = onHover;
    this.onSelect = onSelect || (() => {});
    this.plots = [];
    this.hl = null; // predicate over buffers: hovered in the graph
    this.sel = null; // predicate over buffers: selected in the graph
    this.range = null; // [lo, hi] program positions zoomed into, or null
    this.sort = { key: 'bytes', desc: true };
    const saved = Number(localStorage.getItem(HEIGHT_KEY));
    if (saved > 0) root.style.height = `${saved}px`;
    document.addEventListener('hloscope:peak-table', (e) => { if (this.mem) this.showTable(e.detail); });
    let t;
    new ResizeObserver(() => { clearTimeout(t); t = setTimeout(() => this.resize(), 50); }).observe(root);
  }

  clear(msg = '') {
    for (const p of this.plots) p.u.destroy();
    this.plots = [];
    this.mem = null;
    this.root.innerHTML = msg ? `<div class="tl-head">${esc(msg)}</div>` : '';
    delete this.root.dataset.rows;
  }

  render(mem) {
    this.clear();
    this.mem = mem;
    this.range = null;
    const all = mem.buffers || [];
    // The entry computation holds the arguments; loop bodies have their own order.
    const arg = all.find((b) => b.kind === 'argument');
    this.entry = arg ? arg.computation : all.length ? all[0].computation : 'main';
    this.spaces = ['device', 'host'].filter((s, k) => k === 0 || all.some((b) => b.memory_space === s));
    const peakLive = (s) => (mem.peak && mem.peak[s] && (mem.peak[s].live || mem.peak[s].largest_live.map((b) => b.id))) || [];
    this.atPeak = this.spaces.flatMap((s) => peakLive(s).map((id) => all[id]).filter(Boolean));
    this.defaultHeight();

    this.root.innerHTML = `<div class="tl-grip" title="drag to resize the memory view" data-testid="memory-resize"></div>
      <div class="tl-head"><button class="tl-btn tl-toggle" data-testid="peak-table-toggle" title="the buffers live at the peak, sortable, linked to the graph (on a short screen in the lanes\u2019 place: click again for the lanes)">buffers at peak (${this.atPeak.length})</button>${this.spaces.map((s) => {
        const pk = mem.peak && mem.peak[s];
        return `<span data-space="${s}">${s} peak <b data-testid="peak-${s}">${fmtBytes(pk ? pk.bytes : mem[`peak_${s}_bytes`])}</b>` +
          (pk && pk.instruction ? ` at ${esc(pk.instruction)}` : '') + '</span>';
      }).join('')}<span class="tl-range hidden" data-testid="memory-range"></span>
      <button class="tl-btn tl-reset hidden" data-testid="memory-reset" title="show the whole program (or double-click a lane)">reset zoom</button>
      <span class="muted tl-count">${all.length} buffers, program order of ${esc(this.entry)}</span></div>
      <div class="tl-hover hidden" data-testid="buffer-hover"></div>
      <div class="tl-body"><div class="tl-lanes"></div><div class="tl-table hidden" data-testid="peak-table"></div></div>`;
    this.hover = this.root.querySelector('.tl-hover');
    this.lanes = this.root.querySelector('.tl-lanes');
    this.lanes.classList.toggle('side-by-side', this.sideBySide());
    this.table = this.root.querySelector('.tl-table');
    this.root.querySelector('.tl-reset').onclick = () => this.zoom(null);
    // The user's choice holds for every pane (both sides of a compare).
    this.root.querySelector('.tl-toggle').onclick = () => {
      const on = this.table.classList.contains('hidden');
      localStorage.setItem(TABLE_KEY, on ? '1' : '0');
      document.dispatchEvent(new CustomEvent('hloscope:peak-table', { detail: on }));
    };
    this.grip(this.root.querySelector('.tl-grip'));
    const h = this.laneHeight();
    this.spaces.forEach((space, k) => {
      const bufs = all.filter((b) => b.memory_space === space && b.computation === this.entry);
      this.plots.push(this.plot(space, bufs, h, this.sideBySide() || k === this.spaces.length - 1));
    });
    this.showTable(localStorage.getItem(TABLE_KEY) === '1');
  }

  /** On a short screen (a projector) two lanes stand side by side, each
   * the full height: stacked, they would take the graph's half. */
  sideBySide() { return short() && this.spaces.length > 1; }
  /** How many lanes share the height. */
  laneRows() { return this.sideBySide() ? 1 : this.spaces.length; }

  /** Unless the user dragged a height: one row of lanes keeps the
   * stylesheet's height, two get room for both, the graph above keeps
   * half the pane. */
  defaultHeight() {
    if (localStorage.getItem(HEIGHT_KEY)) return;
    const pane = this.root.parentElement ? this.root.parentElement.clientHeight : 0;
    this.root.style.height = this.laneRows() > 1 ? `${Math.round(pane ? Math.min(lanesHeight(2), 0.5 * pane) : lanesHeight(2))}px` : '';
  }

  /** The plot height of each lane (the last one adds its axis). */
  laneHeight() {
    // With the table shown the lanes leave it two fifths of the height
    // (on a short screen the table stands in their place).
    const table = this.table && !this.table.classList.contains('hidden') && !short();
    const body = (this.root.clientHeight - HEAD() - AXIS() - 4) * (table ? 0.6 : 1);
    return Math.max(laneMin(), Math.floor(body / this.laneRows()) - 6);
  }

  plot(space, bufs, height, last) {
    const { xs, live } = liveCurve(bufs);
    const { boxes, top } = stack(bufs);
    const pk = this.mem.peak && this.mem.peak[space];
    const self = this;
    const el = document.createElement('div');
    el.className = 'tl-lane';
    el.dataset.space = space;
    this.lanes.appendChild(el);
    const entry = { space, bufs: boxes, all: bufs, xs, live, u: null, hot: null, last };
    const opts = {
      width: this.width(),
      height: height + (last ? AXIS() : 0) + 6,
      padding: [6, 10, 0, 0], // the plot area is height px, whatever the axes
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: false }, points: { show: false } },
      select: { show: true },
      scales: { x: { time: false }, y: { range: [0, Math.max(top, ...live, 1) * 1.08] } },
      axes: [
        { show: last, size: AXIS() - 2, font: '12px system-ui', ticks: { size: 3 }, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 1e4, 2e4, 5e4, 1e5] },
        { size: 70, font: '12px system-ui', splits: byteSplits, values: (u, v) => v.map(tickLabel), label: space, labelSize: 14, labelFont: 'bold 13px system-ui' },
      ],
      series: [{}, { stroke: '#37474f', width: 1.5, paths: uPlot.paths.stepped({ align: 1 }) }],
      hooks: {
        drawSeries: [(u) => self.drawBoxes(u, entry, pk)],
        setSelect: [(u) => {
          if (u.select.width < 4) return;
          const lo = u.posToVal(u.select.left, 'x'), hi = u.posToVal(u.select.left + u.select.width, 'x');
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          self.zoom([Math.max(0, Math.floor(lo)), Math.ceil(hi)]);
        }],
        setCursor: [(u) => {
          const { left, top: t } = u.cursor;
          if (left == null || left < 0) { self.setHot(entry, null); return; }
          const x = u.posToVal(left, 'x'), y = u.posToVal(t, 'y');
          let hit = null;
          for (const b of entry.bufs) if (b.start <= x && x < b.end + 1 && b._off <= y && y < b._off + b.bytes) { hit = b; break; }
          self.setHot(entry, hit);
        }],
      },
    };
    entry.u = new uPlot(opts, [xs, live], el);
    el.addEventListener('mouseleave', () => self.setHot(entry, null));
    // A click (not a drag) on a box selects its buffer's node.
    let down = null;
    entry.u.over.addEventListener('mousedown', (e) => { down = [e.clientX, e.clientY]; });
    entry.u.over.addEventListener('click', (e) => {
      if (down && Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 4) return;
      if (entry.hot) this.onSelect(entry.hot);
    });
    entry.u.over.addEventListener('dblclick', () => this.zoom(null));
    return entry;
  }

  width() { return Math.max(160, Math.floor((this.root.clientWidth - 8) / (this.sideBySide() ? this.spaces.length : 1))); }

  drawBoxes(u, entry, pk) {
    const ctx = u.ctx;
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    const marked = [];
    for (const b of entry.bufs) {
      const x0 = u.valToPos(b.start, 'x', true), x1 = u.valToPos(b.end + 1, 'x', true);
      if (x1 < u.bbox.left || x0 > u.bbox.left + u.bbox.width) continue;
      const y0 = u.valToPos(b._off, 'y', true), y1 = u.valToPos(b._off + b.bytes, 'y', true);
      const hot = b === entry.hot || (this.hl && this.hl(b));
      const k = layerKey(b.op_name);
      ctx.fillStyle = hot ? '#ff6d00' : PALETTE[k ? Number(k.slice(7)) % PALETTE.length : 7];
      ctx.globalAlpha = hot ? 0.95 : 0.75;
      const box = [x0, y1, Math.max(1, x1 - x0), Math.max(1, y0 - y1)];
      ctx.fillRect(...box);
      if (hot) { ctx.globalAlpha = 1; ctx.strokeStyle = '#bf360c'; ctx.lineWidth = 2; ctx.strokeRect(...box); }
      if (this.sel && this.sel(b)) marked.push(box);
    }
    // Selected buffers last, outlined in the graph's selection colour.
    ctx.globalAlpha = 1;
    ctx.strokeStyle = '#6200ea';
    ctx.lineWidth = 3 * devicePixelRatio;
    for (const box of marked) ctx.strokeRect(...box);
    if (pk && pk.bytes > 0) this.drawPeak(u, pk);
    ctx.restore();
  }

  drawPeak(u, pk) {
    const ctx = u.ctx;
    const x = u.valToPos(pk.position + 0.5, 'x', true), y = u.valToPos(pk.bytes, 'y', true);
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
    // Right of the marker, else left of it, never past the plot's left edge.
    const lx = x + 8 * px + w > u.bbox.left + u.bbox.width ? Math.max(u.bbox.left + 3 * px, x - 8 * px - w) : x + 8 * px;
    const ly = Math.max(u.bbox.top + 16 * px, y + 16 * px);
    ctx.fillStyle = 'rgba(255,255,255,.9)';
    ctx.fillRect(lx - 3 * px, ly - 13 * px, w + 6 * px, 17 * px);
    ctx.fillStyle = '#d50000';
    ctx.fillText(label, lx, ly);
  }

  setHot(entry, b) {
    if (entry.hot === b) return;
    entry.hot = b;
    entry.u.redraw(false);
    this.showHover(b);
    this.onHover(b);
  }

  showHover(b) {
    if (b) {
      this.hover.classList.remove('hidden');
      this.hover.innerHTML = `<b>${esc(b.name)}</b> ${fmtBytes(b.bytes)} · ${esc(b.shape || '')} · live ${b.start}–${b.end}` +
        (b.instruction !== b.name ? ` · ${esc(b.instruction)}` : '');
    } else this.hover.classList.add('hidden');
  }

  // ---- zoom and range ------------------------------------------------------
  /** Shows program positions [lo, hi] in every lane (null: all of it); the
   * table then lists the buffers live at the highest point of the range. */
  zoom(range) {
    if (!this.mem) return;
    this.range = range && range[1] > range[0] ? range : null;
    for (const p of this.plots) {
      const n = p.xs.length - 1;
      p.u.setScale('x', this.range ? { min: this.range[0], max: Math.min(n, this.range[1] + 1) } : { min: 0, max: n });
    }
    this.root.querySelector('.tl-reset').classList.toggle('hidden', !this.range);
    const label = this.root.querySelector('.tl-range');
    label.classList.toggle('hidden', !this.range);
    if (this.range) label.textContent = `positions ${this.range[0]}–${this.range[1]}`;
    this.root.dataset.range = this.range ? this.range.join('-') : '';
    this.renderTable();
  }

  /** The highest point of the device lane inside the range: the position
   * and the entry computation's buffers live there. */
  rangePeak() {
    const p = this.plots[0];
    const [lo, hi] = this.range;
    let at = lo;
    for (let x = lo; x <= Math.min(hi, p.live.length - 1); x++) if (p.live[x] > p.live[at]) at = x;
    const rows = this.plots.flatMap((q) => q.all.filter((b) => b.start <= at && at <= b.end));
    return { at, bytes: p.live[at] || 0, rows };
  }

  // ---- the table of buffers at the peak -------------------------------------
  showTable(on) {
    this.table.classList.toggle('hidden', !on);
    this.root.querySelector('.tl-toggle').classList.toggle('on', on);
    if (on) {
      this.tableHeight();
      this.renderTable();
    } else {
      this.root.classList.remove('table-only');
      this.defaultHeight();
    }
    this.resize();
  }

  /** Room for the table, unless the user chose a height. A tall screen
   * keeps the lanes above it and the graph more than half of the pane. On
   * a short one (a projector) lanes and table would leave the graph two
   * fifths of the screen: the table takes the lanes' place (the toggle
   * brings them back) and the graph keeps half the screen. */
  tableHeight() {
    const only = short();
    this.root.classList.toggle('table-only', only);
    if (localStorage.getItem(HEIGHT_KEY)) return;
    const graph = this.root.parentElement && this.root.parentElement.querySelector(':scope > .graph');
    const want = only && graph
      ? Math.max(SHORT_TABLE_MIN, this.root.clientHeight + graph.clientHeight - Math.ceil(innerHeight / 2) - 1)
      : Math.min(lanesHeight(this.laneRows()) / 0.6, 0.5 * this.root.parentElement.clientHeight);
    if (only || this.root.clientHeight < want) this.root.style.height = `${Math.round(want)}px`;
  }

  renderTable() {
    if (!this.mem || this.table.classList.contains('hidden')) return;
    let rows, title;
    if (this.range) {
      const rp = this.rangePeak();
      rows = rp.rows;
      title = `Buffers live at the highest point of positions ${this.range[0]}–${this.range[1]}: ${fmtBytes(rp.bytes)} at ${rp.at}`;
    } else {
      rows = this.atPeak;
      const pk = this.mem.peak && this.mem.peak.device;
      title = pk ? `Buffers live at the device peak: ${fmtBytes(pk.bytes)} at ${pk.instruction || pk.position}${pk.inner && pk.inner !== pk.instruction ? ` (inside, at ${pk.inner})` : ''}` : 'Buffers live at the peak';
    }
    const { key, desc } = this.sort;
    const col = COLUMNS.find((c) => c.key === key);
    rows = rows.slice().sort((x, y) => {
      const a = x[key] ?? '', b = y[key] ?? '';
      const c = col.num ? a - b : String(a).localeCompare(String(b), 'en', { numeric: true });
      return desc ? -c : c;
    });
    this.rows = rows;
    const total = rows.reduce((s, b) => s + b.bytes, 0);
    this.table.innerHTML = `<div class="tl-table-title">${esc(title)} · ${rows.length} buffers, ${fmtBytes(total)}</div>
      <table><thead><tr>${COLUMNS.map((c) => `<th data-key="${c.key}" class="${c.key === key ? (desc ? 'desc' : 'asc') : ''}">${c.label}</th>`).join('')}</tr></thead>
      <tbody>${rows.map((b, k) => `<tr data-row="${k}"${this.sel && this.sel(b) ? ' class="selected"' : ''}>` +
        `<td>${esc(b.name)}</td><td class="num">${fmtBytes(b.bytes)}</td><td>${esc(b.shape || '')}</td><td>${esc(b.instruction)}</td>` +
        `<td>${esc(b.op_name || '')}</td><td>${esc(b.kind)}</td><td>${esc(b.memory_space)}</td></tr>`).join('')}</tbody></table>`;
    this.root.dataset.rows = String(rows.length);
    for (const th of this.table.querySelectorAll('th')) {
      th.onclick = () => {
        const k = th.dataset.key;
        this.sort = { key: k, desc: this.sort.key === k ? !this.sort.desc : COLUMNS.find((c) => c.key === k).num };
        this.renderTable();
      };
    }
    const body = this.table.querySelector('tbody');
    body.onclick = (e) => { const tr = e.target.closest('tr'); if (tr) this.onSelect(this.rows[Number(tr.dataset.row)]); };
    body.onmouseover = (e) => {
      const tr = e.target.closest('tr');
      const b = tr ? this.rows[Number(tr.dataset.row)] : null;
      this.hl = b ? (x) => x === b : null;
      for (const p of this.plots) p.u.redraw(false);
      this.showHover(b);
      this.onHover(b);
    };
    body.onmouseleave = () => { this.hl = null; for (const p of this.plots) p.u.redraw(false); this.showHover(null); this.onHover(null); };
  }

  // ---- links with the graph ---------------------------------------------------
  /** Highlights the buffers pred accepts (null: none); returns how many. */
  highlight(pred) {
    this.hl = pred;
    let n = 0;
    for (const p of this.plots) { p.u.redraw(false); if (pred) n += p.bufs.filter(pred).length; }
    this.root.dataset.highlighted = String(n);
    return n;
  }

  /** Marks the buffers of the node selected in the graph (null: none):
   * outlined in the lanes, their rows marked and scrolled into view. */
  select(pred) {
    this.sel = pred;
    for (const p of this.plots) p.u.redraw(false);
    let n = 0;
    for (const tr of this.table ? this.table.querySelectorAll('tbody tr') : []) {
      const on = !!pred && pred(this.rows[Number(tr.dataset.row)]);
      tr.classList.toggle('selected', on);
      if (on && n++ === 0) tr.scrollIntoView({ block: 'nearest' });
    }
    this.root.dataset.selected = String(pred ? this.plots.reduce((s, p) => s + p.all.filter(pred).length, 0) : 0);
  }

  // ---- size ----------------------------------------------------------------
  grip(el) {
    el.addEventListener('pointerdown', (e) => {
      e.preventDefault();
      el.setPointerCapture(e.pointerId);
      const y0 = e.clientY, h0 = this.root.clientHeight;
      const move = (ev) => {
        const h = Math.round(Math.min(0.8 * innerHeight, Math.max(HEAD() + 40, h0 - (ev.clientY - y0))));
        this.root.style.height = `${h}px`;
      };
      const up = () => {
        el.removeEventListener('pointermove', move);
        localStorage.setItem(HEIGHT_KEY, String(this.root.clientHeight));
      };
      el.addEventListener('pointermove', move);
      el.addEventListener('pointerup', up, { once: true });
    });
  }

  resize() {
    if (!this.mem || !this.root.clientWidth) return;
    // From a tall window to a short one (or back) the table's room changes.
    if (this.table && !this.table.classList.contains('hidden') && this.root.classList.contains('table-only') !== short()) {
      this.root.style.height = '';
      this.tableHeight();
    }
    const h = this.laneHeight();
    for (const p of this.plots) p.u.setSize({ width: this.width(), height: h + (p.last ? AXIS() : 0) + 6 });
  }
}
