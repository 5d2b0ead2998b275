// Compile (one module, a comparison or a training step's two sides) and run.
import { post, query } from './api.js';
import { renderRun } from './panels.js';
import { isHlo } from './lint.js';
import { isWhatifMode, renderWhatif, whatifPair } from './whatif.js';
import { $, hasTrain, modeSpec, state, view, writeHash } from './state.js';
import { bodyOf, editor, overrides } from './controls.js';
import { markComputed } from './stale.js';
import { hideError, showError, withProgress } from './errors.js';
import { showResults } from './beforeafter.js';
import { setTab } from './tabs.js';

// ---- compile / compare / run -------------------------------------------------
export async function compile() {
  hideError();
  editor.clearErrors();
  const text = editor.text;
  $('#whatif').classList.add('hidden');
  if (isHlo(text) && state.mode !== 'stage' && !isWhatifMode(state.mode)) {
    // HLO text has no loop or residuals to vary: before/after is its two stages.
    state.mode = 'stage';
    $('#mode').value = 'stage';
    $('#res-b').classList.add('hidden');
  }
  const ov = overrides();
  const train = state.mode === 'residuals' && hasTrain(text);
  const spec = modeSpec();
  return withProgress(state.mode === 'stage' ? 'Compiling…' : `Compiling ${train ? 'the training step with ' : ''}${spec.la} and ${spec.lb}…`, async () => {
    try {
      view.failA = null;
      if (train) {
        await compileTrainSteps(text, ov, spec);
        return;
      }
      if (isWhatifMode(state.mode)) {
        // A: the module as given (a result even when it does not fit);
        // B: its what-if, a result of its own.
        const r = await post(`/v1/compile${query(ov)}`, bodyOf(text), { oomResult: true });
        const { whatif, b, summary } = await whatifPair(state.mode, r.id);
        view.summaries = b ? { [r.id]: r, [b]: summary } : { [r.id]: r };
        view.ratios = null; view.diffCounts = null;
        Object.assign(state, { a: r.id, b: b || r.id });
        renderWhatif($('#whatif'), whatif);
      } else if (state.mode === 'stage') {
        const r = await post(`/v1/compile${query(ov)}`, bodyOf(text));
        view.summaries = { [r.id]: r };
        view.ratios = null; view.diffCounts = null;
        Object.assign(state, { a: r.id, b: r.id });
      } else {
        const m = spec;
        const shared = { ...ov };
        for (const k of Object.keys(m.a)) delete shared[k];
        // The model text goes in verbatim on its own line: syntax errors keep
        // their column, and their line is one more than the editor's.
        const body = `{"model":\n${text}\n,"a":${JSON.stringify(m.a)},"b":${JSON.stringify(m.b)}}`;
        const r = await post(`/v1/compare${query(shared)}`, body);
        view.summaries = { [r.a.id]: r.a, [r.b.id]: r.b };
        view.ratios = r.ratios; view.diffCounts = r.diff && r.diff.counts;
        Object.assign(state, { a: r.a.id, b: r.b.id });
      }
      Object.assign(state, { sel: '', expand: '', computation: '', o: query(ov).slice(1) });
      writeHash();
      markComputed('compare');
      await showResults();
    } catch (e) {
      showError(e, { lineOffset: state.mode === 'stage' ? 0 : 1, text, ov });
    }
  });
}

// The training step with residuals saved (A) and per #res-b (B), as two
// compiles: A may run out of device memory while B fits, and then the OOM
// report shows above B's graph and memory timeline.
async function compileTrainSteps(text, ov, spec) {
  const shared = { ...ov, mode: 'train' };
  delete shared.residuals;
  const [ra, rb] = await Promise.allSettled([spec.a, spec.b].map((v) => post(`/v1/compile${query({ ...shared, ...v })}`, text)));
  const oomA = ra.status === 'rejected' && ra.reason.code === 'out_of_memory';
  if (rb.status === 'rejected' || (ra.status === 'rejected' && !oomA)) {
    const e = ra.status === 'rejected' ? ra.reason : rb.reason;
    showError(e, { text, ov: { ...shared, ...(ra.status === 'rejected' ? spec.a : spec.b) } });
    return;
  }
  const A = oomA ? null : ra.value, B = rb.value;
  view.summaries = A ? { [A.id]: A, [B.id]: B } : { [B.id]: B };
  view.ratios = null; view.diffCounts = null;
  view.failA = oomA ? { error: ra.reason, residuals: spec.a.residuals, id: ra.reason.result && ra.reason.result.id, ctx: { text, ov: { ...shared, ...spec.a } } } : null;
  Object.assign(state, { a: A ? A.id : '', b: B.id, sel: '', expand: '', computation: '', o: query(ov).slice(1) });
  writeHash();
  markComputed('compare');
  await showResults();
}

export async function run() {
  hideError();
  editor.clearErrors();
  return withProgress('Running on the emulated device…', async () => {
    try {
      const r = await post(`/v1/run${query(overrides())}`, bodyOf(editor.text));
      state.run = r.id;
      markComputed('run');
      setTab('run');
      await renderRun($('#run'), r);
    } catch (e) { showError(e); }
  });
}
