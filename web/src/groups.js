// The outline (group tree): which pane it shows, opening and revealing groups.
import { ApiError } from './api.js';
import { $, labelOf, state, view, writeHash } from './state.js';
import { showError, withProgress } from './errors.js';
import { loadGraphs, outline, panes } from './beforeafter.js';

// ---- the outline (group tree) ------------------------------------------------
export const outlineSide = () => (view.failA || state.side === 'b' ? 'b' : 'a');
export function showOutline() {
  const s = outlineSide();
  outline.show(panes[s].data, { side: s, sides: view.failA || state.a === state.b ? [s] : ['a', 'b'],
    label: labelOf(s, view.summaries[state[s]]), expanded: state.expand.split(',').filter(Boolean) });
  $('#outline').dataset.side = s;
}
// Opens a closed group in both views (?expand= gains its path) and brings
// it into view. A group too large to draw (the render node limit) stays
// closed and the error says so.
export async function openGroup(path, { reveal = true } = {}) {
  const before = state.expand;
  const set = new Set(state.expand.split(',').filter(Boolean));
  set.add(path);
  state.expand = [...set].join(',');
  state.sel = '';
  writeHash();
  const side = outlineSide();
  await withProgress(`Opening ${path}…`, () => loadGraphs());
  const failed = panes[side].error;
  if (failed) {
    state.expand = before;
    writeHash();
    await loadGraphs();
    showError(new ApiError(failed.status, { code: failed.code, message: `group ${path} cannot be opened here: ${failed.message}` }));
    return;
  }
  if (reveal) revealGroup(side, path);
}
// Brings a group into view: its closed box, else its first drawn node.
export function revealGroup(side, path) {
  const p = panes[side];
  const inside = (g) => { for (let x = outline.groups.get(g); x; x = outline.groups.get(x.parent)) if (x.path === path) return true; return false; };
  const n = [...p.nodes.values()].find((x) => x.opcode === 'layer' && x.group === path) ||
    [...p.nodes.values()].find((x) => p.el(x.id) && inside(x.group));
  outline.reveal(path);
  if (!n) return;
  p.setClass('hl', [n.id]);
  p.focus(n.id);
}
