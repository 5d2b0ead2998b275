// What changed between the two panes, from the engine's diff
// (GET /v1/results/{a}/diff/{b}, docs/API.md#the-diff-of-two-results):
// the graph nodes to colour, matched the engine's way (a layer by its
// place, a scan body standing for every layer, reducers by structure), not
// by node id; and the HLO of both side by side, aligned by computation and
// instruction, a matched pair on one row and an instruction one side lacks
// opposite a gap.
import { get, query, results } from './api.js';
import { esc, int } from './format.js';
import './diffview.css';

/** The engine's diff of result a at stageA against result b at stageB
 * (cached by the server, and by get for the page's life). */
export function fetchDiff(a, stageA, b, stageB) {
  return get(`${results(a)}/diff/${b}${query({ stage_a: stageA, stage_b: stageB })}`);
}

// A group's key in the diff's entry tree: a view of another computation
// names its groups locally ("layers.3"), the entry tree under "@<name>/".
function groupKey(side, graph, path) {
  if (!path || path.startsWith('@') || !graph || graph.computation === side.entry) return path;
  return `@${graph.computation}/${path}`;
}

/** The status of a drawn node on one side: an instruction's own, a closed
 * group's (what it holds); undefined when it is the same. */
export function nodeStatus(side, graph, n) {
  if (n.opcode === 'layer') return side.groups[groupKey(side, graph, n.group || n.layer)];
  return side.not_same[n.name];
}

/** The node ids of one pane's graph.json to mark, by status: {added |
 * removed, changed}. */
export function nodeMarks(side, graph) {
  const out = { added: new Set(), removed: new Set(), changed: new Set() };
  if (!side || !graph) return out;
  for (const n of graph.nodes) {
    const st = nodeStatus(side, graph, n);
    if (st && out[st]) out[st].add(n.id);
  }
  return out;
}

/** The first changed node of a pane (to bring it into view): the first in
 * the graph's order that is not the same. */
export function firstChanged(side, graph) {
  if (!side || !graph) return null;
  const n = graph.nodes.find((x) => nodeStatus(side, graph, x));
  return n ? n.id : null;
}

/** Each instruction's line and each computation's header in HLO text. */
export function hloLines(text) {
  const instrs = new Map(), comps = new Map();
  for (const line of text.split('\n')) {
    const d = /^\s+(?:ROOT\s+)?%?([\w.-]+)\s*=/.exec(line);
    if (d) { instrs.set(d[1], line.trim()); continue; }
    const c = /^(?:ENTRY\s+)?%?([\w.-]+)\s.*\{\s*$/.exec(line);
    if (c && !line.startsWith('HloModule')) comps.set(c[1], line.trim());
  }
  return { instrs, comps };
}

const LABEL = { same: '', changed: 'changed', added: 'only in B', removed: 'only in A' };
const FOLD = 6; // a run of this many same rows or more is folded
const MAX_ROWS = 20000; // rows drawn at most (the rest are counted)

/** Draws the diff's blocks side by side in root: a computation pair's
 * header, then a row per pair or unmatched instruction; with onlyChanges,
 * runs of rows that are the same fold to their ends. texts: the two HLO
 * texts, for the lines. */
export function renderAlignedDiff(root, diff, textA, textB, onlyChanges) {
  const A = hloLines(textA), B = hloLines(textB);
  const c = diff.counts;
  const out = [`<div class="ad-counts" data-testid="hlo-counts">${int(c.added)} instructions only in B, ${int(c.removed)} only in A, ${int(c.changed)} changed, ${int(c.unchanged)} the same` +
    ` <span class="muted">(matched by the engine: by their place in a layer, a scan body for every layer, called computations by structure, the rest by name)</span></div>`];
  let drawn = 0, cut = 0;
  const cell = (lines, name) => (name ? esc(lines.get(name) || name) : '');
  const row = (r) => `<div class="ad-row ad-${r[2]}" data-a="${esc(r[0] || '')}" data-b="${esc(r[1] || '')}" title="${LABEL[r[2]]}">` +
    `<div class="ad-cell ad-a">${cell(A.instrs, r[0])}</div><div class="ad-cell ad-b">${cell(B.instrs, r[1])}</div></div>`;
  for (const blk of diff.blocks) {
    const changes = blk.rows.some((r) => r[2] !== 'same');
    if (onlyChanges && !changes) continue;
    out.push(`<div class="ad-comp" data-a="${esc(blk.a || '')}" data-b="${esc(blk.b || '')}">` +
      `<div class="ad-cell ad-a">${blk.a ? esc(A.comps.get(blk.a) || blk.a) : '<span class="muted">(only in B)</span>'}</div>` +
      `<div class="ad-cell ad-b">${blk.b ? esc(B.comps.get(blk.b) || blk.b) : '<span class="muted">(only in A)</span>'}</div></div>`);
    const rows = blk.rows;
    for (let k = 0; k < rows.length;) {
      if (drawn >= MAX_ROWS) { cut += rows.length - k; break; }
      let e = k;
      while (e < rows.length && rows[e][2] === 'same') e++;
      if (onlyChanges && e - k >= FOLD) {
        for (const r of rows.slice(k, k + 2)) out.push(row(r));
        out.push(`<div class="ad-skip">… ${int(e - k - 4)} rows the same …</div>`);
        for (const r of rows.slice(e - 2, e)) out.push(row(r));
        drawn += 5;
        k = e;
        continue;
      }
      const end = e > k ? e : k + 1;
      for (const r of rows.slice(k, end)) out.push(row(r));
      drawn += end - k;
      k = end;
    }
  }
  if (cut) out.push(`<div class="ad-skip" data-testid="hlo-cut">… ${int(cut)} more rows not drawn (tick "changes only")</div>`);
  root.innerHTML = `<div class="aligned-diff" data-testid="aligned-diff">${out.join('')}</div>`;
}

/** Colours the before/after panes by the engine's diff of what they show
 * (result a at stage sa, b at sb), and brings B's first change into view
 * when it is out of sight (unless keep: a selection is shown). A newer
 * call wins over an older one still waiting for its diff. */
let marking = 0;
export async function markPanes(panes, { a, sa, b, sb, keep = false }) {
  const seq = ++marking;
  let d;
  try { d = await fetchDiff(a, sa, b, sb); } catch { return null; }
  if (seq !== marking) return null;
  const ma = nodeMarks(d.a, panes.a.data), mb = nodeMarks(d.b, panes.b.data);
  panes.a.mark({ removed: ma.removed, changed: ma.changed });
  panes.b.mark({ added: mb.added, changed: mb.changed });
  const first = firstChanged(d.b, panes.b.data);
  if (first && !keep) panes.b.focus(first, { ifHidden: true });
  return { removed: ma.removed.size, added: mb.added.size };
}

/** The HLO tab: result a at stage sa and b at sb side by side in root. */
export async function showAlignedHlo(root, { a, sa, b, sb, onlyChanges }) {
  const [ta, tb, d] = await Promise.all([get(`${results(a)}/hlo?stage=${sa}`, { text: true }),
    get(`${results(b)}/hlo?stage=${sb}`, { text: true }), fetchDiff(a, sa, b, sb)]);
  renderAlignedDiff(root, d, ta, tb, onlyChanges);
}
