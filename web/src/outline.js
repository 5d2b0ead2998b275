// The outline beside the graphs: the group tree graph.json carries
// (docs/API.md "Graphs and groups": op_name scopes, layers found from
// structure, called computations), and search over every instruction of
// the module through GET /search, drawn or not. A closed group clicked in
// the outline opens (the view's ?expand= gains its path); an open one, or
// a search hit, is brought into view. Rows are built when their parent
// unfolds: a real module has thousands of groups.
import { get, query, results } from './api.js';
import { esc, int } from './format.js';

export class Outline {
  /** handlers: onOpen(path) opens a group in the view, onReveal(path)
   * brings an open group into view, onClose(path) closes an opened one,
   * onSide(side) shows the other pane's tree. */
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
    this.groups = new Map();
    this.hits = new Map(); // group path -> search hits inside it
    this.unfolded = new Set();
    root.addEventListener('click', (e) => {
      const side = e.target.closest('button.ol-side');
      if (side) { this.h.onSide(side.dataset.side); return; }
      const row = e.target.closest('[data-path]');
      if (!row) return;
      const path = row.dataset.path;
      if (e.target.closest('.ol-twisty')) { this.fold(path, !this.unfolded.has(path)); return; }
      if (e.target.closest('.ol-close')) { this.h.onClose(path); return; }
      const g = this.groups.get(path);
      if (g && !g.open) this.h.onOpen(path); else this.h.onReveal(path);
    });
  }

  /** Shows the group tree of a pane's graph.json (expanded: the paths the
   * view was asked to open, which get a close button). */
  show(data, { side = 'a', sides = ['a', 'b'], label = '', expanded = [] } = {}) {
    const list = (data && data.groups) || [];
    this.groups = new Map(list.map((g) => [g.path, g]));
    this.expanded = new Set(expanded);
    // Unfold what the view shows open (and keep what the user unfolded).
    for (const g of list) if (g.open) this.unfolded.add(g.path);
    const roots = list.filter((g) => !g.parent || !this.groups.has(g.parent));
    const pick = sides.length > 1 ? sides.map((s) => `<button class="ol-side${s === side ? ' on' : ''}" data-side="${s}" data-testid="outline-side-${s}">${s.toUpperCase()}</button>`).join('') : '';
    this.root.innerHTML = `<div class="ol-head">Outline ${pick} <span class="muted" title="${esc(label)}">${esc(label)} · ${int(list.length)} groups</span></div>` +
      `<ul class="ol-tree" data-testid="outline-tree">${roots.map((g) => this.row(g)).join('')}</ul>`;
    this.root.dataset.groups = String(list.length);
  }

  row(g) {
    const kids = (g.children || []).filter((c) => this.groups.has(c));
    const unfolded = kids.length && this.unfolded.has(g.path);
    const n = this.hits.get(g.path);
    const cls = [g.open ? 'open' : 'closed', `kind-${g.kind}`].join(' ');
    return `<li data-path="${esc(g.path)}" class="${cls}" data-testid="outline-row">` +
      `<div class="ol-row" title="${esc(g.path)} · ${esc(g.kind)} · ${int(g.instructions)} instructions${g.open ? '' : ' · click to open'}">` +
      `<span class="ol-twisty">${kids.length ? (unfolded ? '▾' : '▸') : ''}</span>` +
      `<span class="ol-label">${esc(g.label || g.local || g.path)}</span>` +
      (g.repeat > 1 ? `<span class="ol-repeat">${int(g.repeat)} ×</span>` : '') +
      `<span class="ol-count">${int(g.instructions)}</span>` +
      (n ? `<span class="ol-hits" data-testid="outline-hits">${int(n)}</span>` : '') +
      (this.expanded.has(g.path) ? '<span class="ol-close" title="close this group again">✕</span>' : '') +
      `</div>${unfolded ? `<ul>${kids.map((c) => this.row(this.groups.get(c))).join('')}</ul>` : ''}</li>`;
  }

  fold(path, open) {
    if (open) this.unfolded.add(path); else this.unfolded.delete(path);
    const li = this.root.querySelector(`li[data-path="${CSS.escape(path)}"]`);
    if (li) li.outerHTML = this.row(this.groups.get(path));
  }

  /** Unfolds the chain of groups down to path and marks its row. */
  reveal(path) {
    for (let g = this.groups.get(path); g; g = this.groups.get(g.parent)) this.unfolded.add(g.path);
    const top = [...this.groups.values()].filter((g) => !g.parent || !this.groups.has(g.parent));
    this.root.querySelector('.ol-tree').innerHTML = top.map((g) => this.row(g)).join('');
    const li = this.root.querySelector(`li[data-path="${CSS.escape(path)}"]`);
    for (const x of this.root.querySelectorAll('li.current')) x.classList.remove('current');
    if (li) { li.classList.add('current'); li.scrollIntoView({ block: 'nearest' }); }
  }

  /** Counts search hits per group (every group on a hit's chain). */
  markHits(hits) {
    this.hits = new Map();
    for (const h of hits || []) for (const p of h.groups || []) this.hits.set(p, (this.hits.get(p) || 0) + 1);
    const top = [...this.groups.values()].filter((g) => !g.parent || !this.groups.has(g.parent));
    const tree = this.root.querySelector('.ol-tree');
    if (tree) tree.innerHTML = top.map((g) => this.row(g)).join('');
  }
}

/** Every instruction of a result's stage whose name, opcode or op_name
 * contains q, drawn or not (GET /search; at most 1000 listed, count counts
 * all). */
export async function searchAll(id, stage, computation, q) {
  if (!q.trim()) return { count: 0, hits: [] };
  return get(`${results(id)}/search${query({ q: q.trim(), stage, computation })}`);
}
