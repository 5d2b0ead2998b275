// Search over both panes and the whole module.
import { searchAll } from './outline.js';
import { int } from './format.js';
import { $, state, view, writeHash } from './state.js';
import { outline, panes, stageOf } from './beforeafter.js';
import { selectNode } from './details.js';
import { openGroup, outlineSide, revealGroup } from './groups.js';

// Search marks the drawn matches in both panes at once and asks the server
// for every match of the module (inside closed groups too): the outline
// counts them per group, Enter reveals the first one, opening its group.
let searchSeq = 0;
export function search(q) {
  state.q = q;
  writeHash();
  let total = 0, first = null;
  for (const s of ['a', 'b']) {
    const hits = panes[s].search(q);
    total += hits.length;
    if (!first && hits.length) first = [s, hits[0]];
  }
  const drawn = `${total} match${total === 1 ? '' : 'es'} drawn`;
  $('#search-count').textContent = q ? drawn : '';
  view.searchAll = null;
  const seq = ++searchSeq, side = outlineSide();
  if (q.trim() && panes[side].id) {
    view.searchAll = searchAll(panes[side].id, stageOf(side), state.computation, q).then((r) => {
      if (seq !== searchSeq) return r;
      $('#search-count').textContent = `${drawn} · ${int(r.count)} in ${side.toUpperCase()}`;
      $('#search-count').dataset.count = r.count;
      outline.markHits(r.hits);
      return r;
    }).catch(() => null);
  } else outline.markHits([]);
  return first;
}
// Enter: the first match drawn in the outline's pane, else the first of
// all its matches (the server's), its group opened.
export async function searchEnter(q) {
  search(q);
  const side = outlineSide();
  const drawn = panes[side].search(q);
  if (drawn.length) { selectNode(side, drawn[0], { focus: true }); return; }
  const r = view.searchAll && await view.searchAll;
  const hit = r && r.hits[0];
  if (!hit) return;
  if (hit.group && !panes[side].byName.has(hit.name)) await openGroup(hit.group, { reveal: false });
  const n = panes[side].byName.get(hit.name);
  if (n) selectNode(side, n.id, { focus: true });
  else if (hit.group) revealGroup(side, hit.group);
}
