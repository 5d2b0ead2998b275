// One graph pane: the server's Graphviz SVG (node ids are instruction names,
// docs/RENDER.md) with svg-pan-zoom, and the same view as JSON for details,
// diff marks and search.
import svgPanZoom from 'svg-pan-zoom';
import { get, query, results } from './api.js';

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
    const q = query({ stage, expand, computation });
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
    this.svg = svg;
    this.pz = svgPanZoom(svg, {
      fit: true, center: true, controlIconsEnabled: true, dblClickZoomEnabled: false,
      minZoom: 0.2, maxZoom: 60, zoomScaleSensitivity: 0.25,
      onZoom: () => this.h.onViewChange && this.h.onViewChange(this),
      onPan: () => this.h.onViewChange && this.h.onViewChange(this),
    });
    this.readable();
    this.home = { pan: this.pz.getPan(), zoom: this.pz.getZoom() };
  }

  /** A tall graph (an unrolled chain of layers) fitted whole is unreadable:
   * show its top at a readable size instead, centred; the rest is a drag away. */
  readable() {
    const sz = this.pz.getSizes();
    if (sz.realZoom >= 0.5 || sz.viewBox.height / sz.viewBox.width < 1.5 * sz.height / sz.width) return;
    const target = Math.min(0.9, (0.95 * sz.width) / sz.viewBox.width);
    if (target <= sz.realZoom) return;
    this.pz.zoom(this.pz.getZoom() * (target / sz.realZoom));
    const s2 = this.pz.getSizes();
    this.pz.pan({ x: (s2.width - s2.viewBox.width * s2.realZoom) / 2, y: 8 });
  }

  fitView() {
    // A pane on a hidden tab has no size to fit into (svg-pan-zoom would scale by NaN).
    if (!this.pz || !this.root.clientWidth || !this.root.clientHeight) return;
    this.pz.resize(); this.pz.fit(); this.pz.center(); this.readable();
    this.home = { pan: this.pz.getPan(), zoom: this.pz.getZoom() };
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

  /** The node standing for an instruction: itself, or its collapsed layer. */
  nodeFor(instruction, opName) {
    const n = this.byName.get(instruction);
    if (n && this.el(n.id)) return n.id;
    const key = layerKey(opName);
    if (key && this.nodes.has(`layer:${key}`)) return `layer:${key}`;
    return null;
  }
}

export function layerKey(opName) {
  const m = /^(layers\.\d+)(\/|$)/.exec(opName || '');
  return m ? m[1] : null;
}

function push(map, k, v) { if (!map.has(k)) map.set(k, []); map.get(k).push(v); }

/** Keeps two panes' views together: the same zoom and the same pan relative
 * to each pane's fitted starting view. */
export function syncPanes(a, b) {
  let busy = false;
  const follow = (src, dst) => {
    if (busy || !src.pz || !dst.pz || !src.home || !dst.home) return;
    busy = true;
    try {
      const z = src.pz.getZoom() / src.home.zoom;
      const p = src.pz.getPan();
      dst.pz.zoom(dst.home.zoom * z);
      dst.pz.pan({ x: p.x + z * (dst.home.pan.x - src.home.pan.x), y: p.y + z * (dst.home.pan.y - src.home.pan.y) });
    } finally { busy = false; }
  };
  return follow;
}
