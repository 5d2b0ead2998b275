// Guided tour for teaching (driver.js): the seed example, compiled unrolled
// and scanned, then train_offload's training step with residuals saved (out
// of memory on its 64 MiB device) and offloaded (fits), then tracing_bound's
// steps behind a lazy-tensor frontend unrolled (tracing-bound) and scanned
// (recovered); every step quotes the figure just measured.
import { driver } from 'driver.js';
import 'driver.js/dist/driver.css';
import { bytes, seconds, int, ratio, parseXlaBytes } from './format.js';
import { pct, pct2 } from './goodput.js';


export function startTour(app) {
  const S = () => [app.view.summaries[app.state.a], app.view.summaries[app.state.b]];
  const fill = (html) => (pop) => { pop.description.innerHTML = html(); pop.description.style.display = 'block'; };
  // A step that measures moves on when its figures are in, unless the tour
  // was closed meanwhile.
  const runThen = (fn) => async () => { d.getActiveElement()?.blur?.(); await fn(); if (d.isActive()) d.moveNext(); };
  app.begin();
  const d = driver({
    showProgress: true,
    allowClose: true,
    popoverClass: 'hs-tour',
    // Finished or closed: the user's editor, settings and view come back.
    onDestroyStarted: () => { d.destroy(); app.end(); },
    steps: [
      {
        element: '#editor',
        popover: {
          title: '1 · The model',
          description: 'The seed example: <b>64 identical Linear(1024, 1024) layers</b> on a [1, 1024] input. PyTorch/XLA traces it into HLO; the compiler then optimizes it.',
          onNextClick: runThen(async () => { app.setMode('loop'); await app.compile(); }),
        },
        onHighlightStarted: () => app.pickExample('seed_64_linear'),
      },
      {
        element: '#summary',
        popover: {
          title: '2 · scan_layers: one layer, traced once',
          description: 'measuring…',
          onPopoverRender: fill(() => {
            const [a, b] = S();
            if (!a || !b) return 'Compile first.';
            return `Unrolled, the compiler sees <b>${int(a.instructions.optimized)}</b> instructions; with scan it sees <b>${int(b.instructions.optimized)}</b> ` +
              `(<b>${ratio(b.instructions.optimized / a.instructions.optimized)}</b>). Tracing took ${seconds(a.trace_seconds)} vs ${seconds(b.trace_seconds)}, ` +
              `compiling ${seconds(a.compile_seconds)} vs ${seconds(b.compile_seconds)}.`;
          }),
        },
      },
      {
        element: '#panes',
        popover: {
          title: '3 · Before and after',
          description: 'Left: the unrolled program, one box per layer. Right: a <b>while</b> loop whose body is the layer, run 64 times. Scroll to zoom, drag to pan: both sides move together. Click a node for its HLO.',
        },
      },
      {
        element: '#pane-b .timeline',
        popover: {
          title: '4 · Device memory',
          description: 'measuring…',
          onPopoverRender: fill(() => {
            const [a, b] = S();
            if (!a || !b) return '';
            return `Peak device memory: unrolled <b>${bytes(a.memory.peak_device_bytes)}</b>, scan <b>${bytes(b.memory.peak_device_bytes)}</b>. ` +
              'The weights are there either way (stacked into one [64, …] tensor for scan). Hover a buffer to find its instruction.';
          }),
          onNextClick: runThen(async () => {
            await app.pickExample('train_offload');
            app.setMode('residuals', 'offload');
            await app.compile();
          }),
        },
      },
      {
        element: '#summary',
        popover: {
          title: '5 · Host offloading',
          description: 'measuring…',
          onPopoverRender: fill(() => {
            const b = app.view.summaries[app.state.b];
            const failA = app.view.failA;
            if (!b) return 'Compile first.';
            const res = (b.train_step && b.train_step.residuals) || {};
            const fits = `With <b>residuals: offload</b> the step fits: <b>${bytes(b.memory.peak_device_bytes)}</b> on the device ` +
              `and <b>${bytes(res.host_bytes || 0)}</b> of residuals in host memory (host peak ${bytes(b.memory.peak_host_bytes)}); B's timeline shows the host buffers.`;
            const intro = '<b>train_offload</b>: 13 scanned decoder layers, compiled as a <b>training step</b> (forward, backward and SGD update: <code>mode=train</code>) on the 64 MiB <b>teach-64m</b>. ' +
              'The backward pass reads what the forward pass saved: the <b>residuals</b>, stacked over the 13 layers. ';
            if (failA) {
              const m = failA.error.message;
              const used = /Used ([\d.]+\w?) of ([\d.]+\w?)/.exec(m);
              const st = /stack ([\d.]+\w?) of residuals on the device/.exec(m);
              const b = (t) => bytes(parseXlaBytes(t));
              return intro + `Saved on the device they ${st ? `take <b>${b(st[1])}</b> and ` : ''}the step <b>runs out of memory</b>: it needs <b>${used ? b(used[1]) : '?'}</b> of ${used ? b(used[2]) : '?'}. ` + fits;
            }
            const a = app.view.summaries[app.state.a];
            return intro + (a ? `Saved on the device: peak <b>${bytes(a.memory.peak_device_bytes)}</b>. ` : '') + fits;
          }),
        },
      },
      {
        element: '[data-tab="scaling"]',
        popover: {
          title: '6 · Compile time vs depth',
          description: 'Open <b>Compile scaling</b> and press <b>Measure</b>: the same block compiled with 1 to 64 layers, each point the median of 5 fresh compiles (the band is their spread). Unrolled grows with depth; scan stays flat.',
          onNextClick: () => { app.setTab('scaling'); d.moveNext(); },
        },
      },
      {
        element: '[data-tab="goodput"]',
        popover: {
          title: '7 · Tracing-bound steps',
          description: 'A lazy-tensor frontend <b>re-traces the whole model on the host every step</b>, then the device runs it. ' +
            '<b>tracing_bound</b>: 128 small Linear(64) layers on a batch of 32768, cheap for the device. Next runs 10 steps unrolled, ' +
            'with the <b>lazy-tensor</b> frontend overhead model (5 µs per traced op).',
          onNextClick: runThen(async () => {
            app.setTab('goodput');
            await app.pickExample('tracing_bound');
            app.setGoodput({ loop: 'unrolled', frontend: 'lazy-tensor', steps: 10 });
            await app.measureGoodput();
          }),
        },
      },
      {
        element: '#goodput .gp-chart',
        popover: {
          title: '8 · The device waits for the host',
          description: 'measuring…',
          side: 'bottom',
          onPopoverRender: fill(() => {
            const u = app.view.goodput.unrolled;
            if (!u) return 'Measure first.';
            const s = u.summary, n = s.steady_steps || 1;
            return `Unrolled, the host traces <b>${int(u.steps[1]?.traced_ops ?? u.steps[0].traced_ops)}</b> ops a step: <b>${seconds(s.steady_host_seconds / n)}</b> per step ` +
              `(measured trace + the overhead model) for <b>${seconds(s.steady_device_seconds / n)}</b> of device work. Goodput <b>${pct(s.goodput)}</b>, ` +
              `MFU ${pct2(s.mfu)}: <b>${s.verdict}</b>. The red gaps on the device lane are the device idling. ` +
              `The compile cache hit on ${int(u.compile_cache.cached)} of ${int(u.summary.steps)} steps: compiling is not the problem, tracing is. Next: scan.`;
          }),
          onNextClick: runThen(async () => { app.setGoodput({ loop: 'scan' }); await app.measureGoodput(); }),
        },
      },
      {
        element: '#goodput .gp-chart',
        popover: {
          title: '9 · scan: trace one layer, recover goodput',
          description: 'measuring…',
          side: 'bottom',
          onPopoverRender: fill(() => {
            const u = app.view.goodput.unrolled, c = app.view.goodput.scan;
            if (!c) return 'Measure first.';
            const s = c.summary, n = s.steady_steps || 1;
            return `Scanned, the host traces <b>${int(c.steps[0].traced_ops)}</b> ops a step${u ? ` instead of ${int(u.steps[0].traced_ops)}` : ''}: ` +
              `<b>${seconds(s.steady_host_seconds / n)}</b> per step for the same ${seconds(s.steady_device_seconds / n)} of device work. ` +
              `Goodput <b>${pct(s.goodput)}</b>${u ? ` (unrolled: ${pct(u.summary.goodput)})` : ''}, MFU ${pct2(s.mfu)}: <b>${s.verdict}</b>. ` +
              'A faster frontend or a larger batch helps too (docs/STEPS.md).';
          }),
        },
      },
    ],
  });
  d.drive();
  return d;
}
