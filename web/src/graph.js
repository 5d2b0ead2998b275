// One graph pane: the server's Graphviz SVG (node ids are instruction names,
// docs/RENDER.md) with svg-pan-zoom, and the same view as JSON for details,
// diff marks and search.
import svgPanZoom from 'svg-pan-zoom';
import { get, query, results } from './api.js';
import { overlayQuery, untagLegend } from './overlay.js';

// The least label size a graph opens at, in screen (CSS) px: legible on a
// projector at 1280x720 (issues 14 and 17 ask for at least 10).
const LABEL_MIN_PX = 11;

export class GraphPane {
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers; // onClick(pane, nodeId), onHover(pane, nodeId|null), onDblClick, onViewChange
    this.pz = null;
    this.svg = null;
    this.data = null;
    this.nodes = new Map();
    this.byName = new Map();
    this.ops = { operands: new Map(), users: new Map() };
    new ResizeObserver(() => { if (this.pz) this.pz.resize(); }).observe(root);
    let down = null;
    root.addEventListener('mousedown', (e) => { down = [e.clientX, e.clientY]; });
    root.addEventListener('click', (e) => {
      if (down && Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 5) return; // a pan
      const g = e.target.closest('g.node');
      if (g) { e.preventDefault(); this.h.onClick(this, g.id); return; }
      const c = e.target.closest('g.cluster');
      if (c) { e.preventDefault(); this.h.onClusterClick && this.h.onClusterClick(this, c.id); }
    });
    root.addEventListener('dblclick', (e) => {
      const g = e.target.closest('g.node');
      if (g) { e.preventDefault(); this.h.onDblClick && this.h.onDblClick(this, g.id); }
    });
    root.addEventListener('mouseover', (e) => {
      const g = e.target.closest('g.node');
      if (g && g.id !== this.hovered) { this.hovered = g.id; this.h.onHover(this, g.id); }
    });
    root.addEventListener('mouseout', (e) => {
      const g = e.target.closest('g.node');
      if (g && !(e.relatedTarget && g.contains(e.relatedTarget))) { this.hovered = null; this.h.onHover(this, null); }
    });
  }

  async load({ id, stage, expand, computation }) {
    const q = query({ stage, expand, computation, overlay: overlayQuery() });
    this.key = `${id}${q}`;
    this.id = id; this.stage = stage;
    this.destroy();
    this.root.innerHTML = '<div class="msg">Rendering graph…</div>';
    const [svgText, data] = await Promise.all([
      get(`${results(id)}/graph.svg${q}`, { text: true }),
      get(`${results(id)}/graph.json${q}`),
    ]);
    if (this.key !== `${id}${q}`) return; // a newer load started
    this.data = data;
    this.nodes = new Map(data.nodes.map((n) => [n.id, n]));
    this.byName = new Map(data.nodes.map((n) => [n.name, n]));
    this.ops = { operands: new Map(), users: new Map() };
    for (const e of data.edges) {
      if (e.kind !== 'operand') continue;
      push(this.ops.operands, e.to, e.from);
      push(this.ops.users, e.from, e.to);
    }
    const doc = new DOMParser().parseFromString(svgText, 'image/svg+xml');
    const svg = document.importNode(doc.documentElement, true);
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    this.root.innerHTML = '';
    this.root.appendChild(svg);
    untagLegend(svg);
    this.svg = svg;
    this._font = undefined;
    this.pz = svgPanZoom(svg, {
      fit: true, center: true, controlIconsEnabled: true, dblClickZoomEnabled: false,
      minZoom: 0.2, maxZoom: 60, zoomScaleSensitivity: 0.25,
      onZoom: () => this.viewChanged(),
      onPan: () => this.viewChanged(),
    });
    this.readable();
  }

  // A pan or zoom by the user; the view a graph opens at (readable) is each
  // pane's own, so that the other pane is not moved to follow it.
  viewChanged() {
    if (!this.opening && this.h.onViewChange) this.h.onViewChange(this);
  }

  /** A tall graph (an unrolled chain of layers) fitted whole is unreadable:
   * show its top at a readable size instead, centred; the rest is a drag
   * away. Any other graph whose labels would be smaller than LABEL_MIN_PX
   * (a scan's loop body, a training step on a projector) opens zoomed in
   * about its middle until they are that size. */
  readable() {
    this.opening = true;
    try { this.openView(); } finally { this.opening = false; }
  }

  openView() {
    const sz = this.pz.getSizes();
    const font = this.labelFont();
    const tall = sz.realZoom < 0.5 && sz.viewBox.height / sz.viewBox.width >= 1.5 * sz.height / sz.width;
    const across = Math.min(0.9, (0.95 * sz.width) / sz.viewBox.width);
    // Its top across the pane, unless that is still too small to read (a
    // tall graph that is also wide, e.g. Mixtral's default view): then as
    // any other graph, zoomed in on its key node.
    if (tall && (!font || font * across >= LABEL_MIN_PX)) {
      const target = across;
      if (target <= sz.realZoom) return;
      this.pz.zoom(this.pz.getZoom() * (target / sz.realZoom));
      const s2 = this.pz.getSizes();
      this.pz.pan({ x: (s2.width - s2.viewBox.width * s2.realZoom) / 2, y: 8 });
      return;
    }
    if (!font || font * sz.realZoom >= LABEL_MIN_PX) return;
    this.pz.zoom(this.pz.getZoom() * (LABEL_MIN_PX / (font * sz.realZoom)));
    // svg-pan-zoom moves the drawing at the next frame, so the node's place
    // is taken in the drawing's own coordinates, not from the screen.
    const at = this.placeOf(this.keyNode());
    if (!at) return;
    const s2 = this.pz.getSizes();
    this.pz.pan({ x: s2.width / 2 - at.x * s2.realZoom, y: s2.height / 2 - at.y * s2.realZoom });
  }

  /** The middle of node id in the coordinates pan and zoom apply to. */
  placeOf(id) {
    const g = id && this.el(id), vp = this.svg.querySelector('.svg-pan-zoom_viewport');
    if (!g || !vp) return null;
    const b = g.getBBox();
    const m = vp.getCTM().inverse().multiply(g.getCTM());
    const p = new DOMPoint(b.x + b.width / 2, b.y + b.height / 2).matrixTransform(m);
    return { x: p.x, y: p.y };
  }

  /** What a zoomed-in graph opens on: a while loop of the entry (what a
   * scan is), else the entry's root; null keeps the middle. */
  keyNode() {
    const drawn = (this.data ? this.data.nodes : []).filter((n) => this.el(n.id));
    const entry = (n) => n.computation === this.data.computation; // the computation drawn on top
    const pick = drawn.find((n) => n.opcode === 'while' && entry(n)) || drawn.find((n) => n.opcode === 'while') || drawn.find((n) => n.is_root && entry(n));
    return pick ? pick.id : null;
  }

  /** The labels' usual font size in graph units (Graphviz writes it on
   * every text), the median, so that a few large titles do not count. */
  labelFont() {
    if (this._font !== undefined) return this._font;
    const sizes = [...this.svg.querySelectorAll('g.node text')].map((t) => parseFloat(t.getAttribute('font-size'))).filter((x) => x > 0).sort((x, y) => x - y);
    this._font = sizes.length ? sizes[Math.floor(sizes.length / 2)] : 0;
    return this._font;
  }

  fitView() {
    // A pane on a hidden tab has no size to fit into (svg-pan-zoom would scale by NaN).
    if (!this.pz || !this.root.clientWidth || !this.root.clientHeight) return;
    this.pz.resize(); this.pz.fit(); this.pz.center(); this.readable();
  }

  showMessage(html) { this.destroy(); this.data = null; this.nodes = new Map(); this.root.innerHTML = `<div class="msg">${html}</div>`; }

  destroy() {
    if (this.pz) { try { this.pz.destroy(); } catch { /* already gone */ } }
    this.pz = null; this.svg = null;
  }

  el(id) { return this.svg ? this.svg.querySelector(`g.node[id="${CSS.escape(id)}"]`) : null; }

  mark(sets) {
    if (!this.svg) return;
    for (const g of this.svg.querySelectorAll('g.node')) {
      g.classList.remove('diff-added', 'diff-removed', 'diff-changed');
      for (const [cls, set] of Object.entries(sets)) if (set.has(g.id)) g.classList.add(`diff-${cls}`);
    }
  }

  setClass(cls, ids) {
    if (!this.svg) return;
    for (const g of this.svg.querySelectorAll(`g.node.${cls}`)) g.classList.remove(cls);
    for (const id of ids) { const g = this.el(id); if (g) g.classList.add(cls); }
  }

  search(q) {
    if (!this.svg) return [];
    q = q.trim().toLowerCase();
    const hits = !q ? [] : [...this.nodes.values()].filter((n) =>
      [n.name, n.op_name, n.opcode, n.layer].some((s) => s && String(s).toLowerCase().includes(q))).map((n) => n.id);
    this.svg.classList.toggle('searching', !!q);
    this.setClass('match', hits);
    return hits;
  }

  /** Pans so that node id is in the middle of the pane (only when it is out
   * of sight if ifHidden). */
  focus(id, { ifHidden = false } = {}) {
    const g = this.el(id);
    if (!g || !this.pz) return;
    const r = g.getBoundingClientRect(), s = this.svg.getBoundingClientRect();
    if (ifHidden && r.top >= s.top && r.bottom <= s.bottom && r.left >= s.left && r.right <= s.right) return;
    this.pz.panBy({ x: s.left + s.width / 2 - (r.left + r.width / 2), y: s.top + s.height / 2 - (r.top + r.height / 2) });
  }

  /** The drawn node nearest the middle of the pane. */
  centreNode() {
    if (!this.svg) return null;
    const s = this.svg.getBoundingClientRect();
    const cx = s.left + s.width / 2, cy = s.top + s.height / 2;
    let best = null, d = Infinity;
    for (const g of this.svg.querySelectorAll('g.node')) {
      const r = g.getBoundingClientRect();
      const dd = Math.hypot(r.left + r.width / 2 - cx, r.top + r.height / 2 - cy);
      if (dd < d) { d = dd; best = g.id; }
    }
    return best;
  }

  /** The node standing for an instruction: itself, or the closed group
   * whose op_name scope holds it (the innermost drawn one). */
  nodeFor(instruction, opName) {
    const n = this.byName.get(instruction);
    if (n && this.el(n.id)) return n.id;
    let best = null;
    for (const g of this.nodes.values()) {
      if (g.opcode !== 'layer' || !inScope(opName, g.group || g.layer)) continue;
      if (!best || (g.group || '').length > (best.group || '').length) best = g;
    }
    return best ? best.id : null;
  }
}

export function layerKey(opName) {
  const m = /^(layers\.\d+)(\/|$)/.exec(opName || '');
  return m ? m[1] : null;
}

// Whether op_name lies in the op_name scope path (itself or below it).
const inScope = (opName, path) => !!opName && !!path && (opName === path || opName.startsWith(`${path}/`));

/** Which buffers (memory.json records) a node of the graph stands for: an
 * instruction its own, a closed group those of the instructions in its
 * op_name scope. */
export function buffersOf(n) {
  if (n.opcode === 'layer') return (b) => inScope(b.op_name, n.group || n.layer);
  return (b) => b.instruction === n.name;
}

function push(map, k, v) { if (!map.has(k)) map.set(k, []); map.get(k).push(v); }

/** Keeps two panes' views together by correspondence, not by a zoom ratio:
 * the node nearest the middle of the pane that moved is found in the other
 * pane (the same instruction, else the closed group that holds it) and
 * brought to that pane's middle at that pane's own zoom. Zooming one pane
 * never rescales the other, so each stays readable. */
export function syncPanes() {
  let busy = false, frame = 0;
  const follow = (src, dst) => {
    if (busy || !src.pz || !dst.pz) return;
    // At most once a frame: finding the middle node measures every node.
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => align(src, dst));
  };
  const align = (src, dst) => {
    const id = src.centreNode();
    const n = id && src.nodes.get(id);
    if (!n) return;
    const target = dst.el(id) ? id : dst.nodeFor(n.name, n.op_name);
    if (!target) return;
    busy = true;
    try { dst.focus(target); } finally { busy = false; }
  };
  return follow;
}
