// "Colour by": the graph panes filled by output bytes, FLOPs, simulated time
// (the device's cost model) or memory space instead of by category, with the
// server's legend in the drawing (graph.svg?overlay=, docs/RENDER.md
// #overlays). The choice is state.overlay, so it lives in the URL hash and a
// link or a reload shows the same colours; every graph request of a pane
// carries it (overlayQuery, read by graph.js).
import { state } from './state.js';

export const OVERLAYS = [
  ['', 'none'],
  ['bytes', 'bytes'],
  ['flops', 'FLOPs'],
  ['time', 'time'],
  ['memory_space', 'memory space'],
];

const known = (v) => OVERLAYS.some(([k]) => k === v);

/** The overlay the panes ask for ('' for none; a hash naming another is none). */
export const overlayQuery = () => (known(state.overlay) ? state.overlay : '');

/** Adds the "colour by" select to the graph toolbar, after the stage
 * select. onChange() redraws the panes; the hash is written before. */
export function mountOverlay(tools, writeHash, onChange) {
  const label = document.createElement('label');
  label.className = 'muted overlay-control';
  label.title = 'fill the nodes by output bytes, FLOPs or simulated time (the device\u2019s cost model; the legend is in the graph) or by memory space (host S(5) in its own colour)';
  label.append('colour by ');
  const select = document.createElement('select');
  select.id = 'overlay';
  select.dataset.testid = 'overlay';
  for (const [value, text] of OVERLAYS) select.add(new Option(text, value, false, value === overlayQuery()));
  label.append(select);
  const stage = tools.querySelector('#stage');
  if (stage) stage.after(label); else tools.append(label);
  select.addEventListener('change', () => {
    state.overlay = select.value;
    writeHash();
    onChange();
  });
  return select;
}

/** The legend is a Graphviz node (id legend:overlay) but no instruction:
 * it is classed "legend" instead of "node", so that clicks, hovers, search
 * and the linked panes, which look for g.node, pass it by. */
export function untagLegend(svg) {
  const g = svg.querySelector('g.node[id="legend:overlay"]');
  if (g) g.setAttribute('class', 'legend');
}
