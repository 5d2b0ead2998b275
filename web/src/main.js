// hloscope explorer: model editor, before/after graphs that pan and zoom
// together, memory timelines linked to the graphs, HLO diff, compile scaling,
// metrics, runs and a guided tour. State lives in the URL hash, so a link
// (or a reload) restores the view.
//
// This entry point wires the page's controls to the modules, one per
// concern: state.js (URL hash, view), controls.js (editor, settings),
// stale.js, errors.js (progress, errors), oom.js, actions.js (compile,
// compare, run), goodput_panel.js, beforeafter.js (panes, timelines,
// summary), details.js, search.js, groups.js (outline), tabs.js, links.js
// and workspace.js (the tour's).
import './style.css';
import { measureScaling } from './scaling.js';
import { startTour } from './tour.js';
import { FRONTENDS } from './goodput.js';
import { initPair, openPair, openPairLink } from './compare.js';
import { $, readHash, state, view, writeHash } from './state.js';
import { SETTINGS, editor, loadExamples, openFile, overrides, pickExample } from './controls.js';
import { markComputed, refreshStale } from './stale.js';
import { showError, withProgress } from './errors.js';
import { compile, run } from './actions.js';
import { measureGoodput } from './goodput_panel.js';
import { initPanes, loadGraphs, panes, showResults, timelines } from './beforeafter.js';
import { search, searchEnter } from './search.js';
import { setTab, showHlo } from './tabs.js';
import { backToYourText, openLink } from './links.js';
import { tourWorkspace } from './workspace.js';
import { mountOverlay } from './overlay.js';

// ---- wiring ------------------------------------------------------------------
async function main() {
  readHash();
  initPanes();
  $('#mode').value = state.mode;
  for (const b of document.querySelectorAll('.tabs button')) b.onclick = () => setTab(b.dataset.tab);
  $('#compile-btn').onclick = compile;
  $('#run-btn').onclick = run;
  $('#example').onchange = (e) => e.target.value && pickExample(e.target.value);
  $('#layers').onchange = (e) => { const n = parseInt(e.target.value, 10); if (n >= 1) editor.setRepeat(n); };
  const showResB = () => $('#res-b').classList.toggle('hidden', state.mode !== 'residuals');
  $('#res-b').value = state.rb || 'offload';
  showResB();
  $('#mode').onchange = (e) => { state.mode = e.target.value; showResB(); writeHash(); refreshStale(); if (state.a || view.failA) compile(); };
  $('#res-b').onchange = (e) => { state.rb = e.target.value === 'offload' ? '' : e.target.value; writeHash(); refreshStale(); if (state.a || view.failA) compile(); };
  $('#stage').onchange = (e) => { state.stage = e.target.value; state.sel = ''; writeHash(); showResults(); };
  mountOverlay($('#graph-tools'), writeHash, () => { if (state.a) withProgress('Colouring the graphs…', () => loadGraphs()); });
  $('#collapse-all').onclick = () => { state.expand = ''; state.computation = ''; state.sel = ''; writeHash(); loadGraphs(); };
  $('#fit-btn').onclick = () => { for (const s of ['a', 'b']) if (panes[s].pz) { panes[s].pz.fit(); panes[s].pz.center(); } };
  $('#search').oninput = (e) => search(e.target.value);
  $('#search').onkeydown = (e) => { if (e.key === 'Enter') searchEnter(e.target.value); };
  // The outline is open by default where the graphs keep room beside it.
  const showOl = (on) => { $('#panes').classList.toggle('with-outline', on); $('#outline').classList.toggle('hidden', !on); $('#outline-btn').classList.toggle('on', on); };
  showOl((localStorage.getItem('hloscope.outline') ?? (innerWidth >= 1500 ? '1' : '0')) === '1');
  $('#outline-btn').onclick = () => { const on = $('#outline').classList.contains('hidden'); localStorage.setItem('hloscope.outline', on ? '1' : '0'); showOl(on); };
  $('#hlo-only-changes').onchange = showHlo;
  $('#share-btn').onclick = async () => {
    writeHash();
    try { await navigator.clipboard.writeText(location.href); $('#share-btn').textContent = 'Link copied'; } catch { $('#share-btn').textContent = 'Link is in the address bar'; }
    setTimeout(() => { $('#share-btn').textContent = 'Copy link'; }, 2000);
  };
  $('#scaling-btn').onclick = () => withProgress('Measuring…', async (label) => {
    try {
      await measureScaling($('#scaling-chart'), $('#scaling-table'), editor.text, overrides(), label);
      markComputed('scaling');
    } catch (e) { showError(e); }
  });
  for (const k of SETTINGS) $(`#${k}`).addEventListener('change', refreshStale);
  $('#batch').addEventListener('input', refreshStale);
  for (const f of FRONTENDS) $('#gp-frontend').add(new Option(f.label, f.name));
  $('#gp-frontend').value = state.gfe || 'hloscope';
  $('#gp-steps').value = state.gsteps || 10;
  $('#goodput-btn').onclick = measureGoodput;
  $('#gp-frontend').onchange = () => { if (state.grun) measureGoodput(); };
  $('#gp-steps').onchange = () => { if (state.grun) measureGoodput(); };
  $('#tour-btn').onclick = () => startTour({
    pickExample, compile, setTab, measureGoodput, state, view,
    ...tourWorkspace(),
    setMode: (m, rb) => { state.mode = m; $('#mode').value = m; if (rb != null) { state.rb = rb === 'offload' ? '' : rb; $('#res-b').value = rb; } showResB(); },
    setGoodput: ({ loop, frontend, steps }) => {
      if (loop != null) $('#loop').value = loop;
      if (frontend != null) $('#gp-frontend').value = frontend;
      if (steps != null) $('#gp-steps').value = steps;
    },
  });
  window.addEventListener('resize', () => { for (const s of ['a', 'b']) timelines[s].resize(); });
  let rt;
  window.addEventListener('resize', () => { clearTimeout(rt); rt = setTimeout(() => { for (const s of ['a', 'b']) panes[s].fitView(); }, 200); });

  $('#yours-btn').onclick = backToYourText;
  $('#open-btn').onclick = () => $('#open-file').click();
  $('#open-file').onchange = (e) => { const fs = [...e.target.files]; if (fs.length > 1) openPair(fs); else if (fs[0]) openFile(fs[0]); e.target.value = ''; };
  // A pair's sides take the sidebar's device (HLO has no loop or residuals).
  initPair($('#page-pair'), {
    overrides: () => (overrides().device ? { device: overrides().device } : {}),
    onResult: (id) => { state.pair = id; writeHash(); }, // the comparison shown, for the link
  });

  await loadExamples().catch(showError);
  const saved = localStorage.getItem('hloscope.model');
  const linked = (state.a || state.b) && await openLink(saved);
  if (!linked) {
    if (state.ex && !saved) await pickExample(state.ex);
    else if (saved) { editor.text = saved; $('#example').value = state.ex; }
    else await pickExample('seed_64_linear').catch(() => {});
  }
  setTab(state.tab);
  // A dump pair's link: its two sources from the store, compared again.
  if (state.pair) await openPairLink(state.pair);
  if (state.b && (state.a || state.mode === 'residuals')) {
    // A link to a training step whose A side ran out of memory holds B
    // only: compiling again (store hits) brings back A's report.
    if (!state.a) await compile();
    else await showResults();
  }
  document.body.dataset.ready = '1';
}

window.hloscope = { state, view, panes, timelines, editor, measureGoodput };
main();
