// Browser test of the what-ifs on a user's own dump (issue 15, docs/WHATIF.md):
// a training step dump dropped on the editor, then the Before/after modes
//   "as given <-> rerolled as scan"   B: every run of layers its own while,
//   "as given <-> activations offloaded"  B: the step that fits the device,
//   "as given <-> per device"  node details: per-device beside global bytes,
// and the fourth, two dumps dropped at once: the Dump pair tab, side by side.
// Every figure the page shows is checked against the API's own answer.
//   node tests/whatif.mjs --server build/hloscope --examples examples \
//        --web web/dist --out build/web-artefacts --chromium /usr/bin/chromium
import assert from 'node:assert/strict';
import { Harness, options, idle, inView } from './harness.mjs';
import { bytes } from '../src/format.js';

const h = new Harness(options(process.argv.slice(2)), 'whatif');
let page;
const log = (...m) => console.log('[web]', ...m);

const api = async (path, init) => {
  const r = await fetch(`${h.base}${path}`, init);
  const body = await r.json();
  assert.ok(r.ok, `${path}: ${JSON.stringify(body).slice(0, 300)}`);
  return body;
};

// Three decoder layers trained with SGD, as hloscope traces them unrolled:
// 24 MB at its peak, more than teach-16m holds.
const MODEL = {
  name: 'whatif-dump', seed: 3, input: { shape: [1, 256, 128] },
  layers: [{ repeat: 3, block: { type: 'decoder', heads: 4, hidden: 344 } }],
  train: { loss: 'mse', target: 'random', optimizer: { type: 'sgd', lr: 0.01 }, steps: 1 },
};
const DEVICE = 'teach-16m';

// A module annotated for two devices, as a JAX dump before partitioning
// writes it: the weight and the activations split along their rows.
const SHARDED = `HloModule sharded
ENTRY main {
  x = f32[256,512] parameter(0), sharding={devices=[2,1]0,1}
  w = f32[512,512] parameter(1), sharding={devices=[2,1]0,1}
  d = f32[256,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={devices=[2,1]0,1}
  ROOT t = f32[256,512] tanh(d), sharding={devices=[2,1]0,1}
}
`;

async function drop(page, files) {
  const dt = await page.evaluateHandle((fs) => {
    const d = new DataTransfer();
    for (const [name, text] of fs) d.items.add(new File([text], name, { type: 'text/plain' }));
    return d;
  }, files);
  await page.dispatchEvent('#editor .cm-content', 'drop', { dataTransfer: dt });
}

async function compileIn(page, mode) {
  await page.selectOption('#mode', mode);
  await idle(page, 150000);
  if (!(await page.$('[data-testid="whatif"]:not(.hidden)'))) {
    await page.click('#compile-btn');
    await idle(page, 150000);
  }
  await page.waitForSelector('[data-testid="whatif"]:not(.hidden)', { timeout: 150000 });
  await page.waitForSelector('#pane-b .graph svg g.node', { state: 'attached', timeout: 150000 });
  return page.evaluate(() => ({ a: window.hloscope.state.a, b: window.hloscope.state.b }));
}

async function main() {
  await h.start();
  // Tall enough for the what-if panel and both graphs in view.
  page = await h.browser('whatif', { width: 1400, height: 1200 });
  await page.goto(h.base);
  await page.waitForFunction(() => window.hloscope && document.querySelectorAll('#example option').length > 1);

  // The dump: the training step traced, as its HLO text.
  const traced = await api(`/v1/compile?mode=train&device=teach-64m`, { method: 'POST', body: JSON.stringify(MODEL) });
  const dump = await (await fetch(`${h.base}/v1/results/${traced.id}/hlo?stage=traced`)).text();
  assert.match(dump, /^HloModule /);
  await drop(page, [['module_0001.jit_train_step.before_optimizations.txt', dump]]);
  await page.waitForFunction(() => window.hloscope.editor.text.startsWith('HloModule'));
  await page.selectOption('#device', DEVICE);

  // 1. Reroll as scan: the forward and the backward layers, each its own loop.
  let ids = await compileIn(page, 'reroll');
  const w = await api(`/v1/results/${ids.a}/whatif.json`);
  assert.ok(w.scan.analysed && w.scan.loops >= 2, `forward and backward reroll: ${JSON.stringify(w.scan).slice(0, 400)}`);
  assert.notEqual(ids.a, ids.b, 'B is the rerolled module, a result of its own');
  const outcomes = await page.$$eval('[data-testid="whatif-run-outcome"]', (t) => t.map((x) => x.textContent));
  assert.ok(outcomes.filter((t) => / in a loop/.test(t)).length >= 1, `each run says what became of it: ${outcomes}`);
  assert.match(await page.textContent('[data-testid="whatif-scan"]'), new RegExp(`${w.scan.loops} \\(largest`), 'the loops are shown');
  await h.shot(page, 'reroll-train-step');

  // 2. Offload activations: A does not fit teach-16m (a result all the
  // same), B is the step with its saved activations on the host and fits.
  ids = await compileIn(page, 'offload');
  const wo = await api(`/v1/results/${ids.a}/whatif.json`);
  assert.ok(wo.offload.analysed && wo.offload.fits && wo.offload.chosen.length > 0, `the step fits once offloaded: ${JSON.stringify(wo.offload).slice(0, 400)}`);
  assert.notEqual(ids.a, ids.b, 'B is the offloaded module, a result of its own');
  const memA = await api(`/v1/results/${ids.a}/memory.json`);
  const memB = await api(`/v1/results/${ids.b}/memory.json`);
  const hbm = (await api('/v1/devices')).devices.find((d) => d.name === DEVICE).hbm_bytes;
  assert.ok(memA.peak.device.bytes > hbm, `A needs more than ${DEVICE}: ${memA.peak.device.bytes}`);
  assert.ok(memB.peak.device.bytes <= hbm, `B fits ${DEVICE}: ${memB.peak.device.bytes} of ${hbm}`);
  assert.ok(memB.peak.host.bytes > 0, 'B holds activations on the host');
  const offText = await page.textContent('[data-testid="whatif-offload"]');
  assert.ok(offText.includes(bytes(wo.offload.peak_after)) && /fits/.test(offText), `the panel shows the API's peak: ${offText}`);
  log(`offload: A ${memA.peak.device.bytes}, B ${memB.peak.device.bytes} (what-if ${wo.offload.peak_after}) of ${hbm}`);
  await h.shot(page, 'offload-activations');

  // 3. Per device: a module annotated for two devices; node details show
  // what one device holds beside the global size.
  await page.selectOption('#device', '');
  await page.evaluate((t) => { window.hloscope.editor.text = t; }, SHARDED);
  ids = await compileIn(page, 'sharding');
  const ws = await api(`/v1/results/${ids.a}/whatif.json`);
  assert.ok(ws.sharding.analysed && ws.sharding.devices === 2, JSON.stringify(ws.sharding));
  assert.match(await page.textContent('[data-testid="whatif-sharding"]'), new RegExp(bytes(ws.sharding.per_device_peak).replace('.', '\\.')));
  const g = await api(`/v1/results/${ids.a}/graph.json`);
  const node = g.nodes.find((n) => n.name === 'w');
  assert.ok(node && node.per_device_bytes * 2 === node.global_bytes, `w is halved per device: ${JSON.stringify(node)}`);
  await inView(page, 'a', node.id);
  await page.locator(`#pane-a g.node[id="${node.id}"]`).click();
  await page.waitForSelector('[data-testid="details-per-device"]');
  const per = await page.textContent('[data-testid="details-per-device"]');
  assert.ok(per.includes(bytes(node.per_device_bytes)) && per.includes(`${bytes(node.global_bytes)} global`), `details: ${per}`);
  await h.shot(page, 'per-device');

  // 4. Two dumps at once: the dump and its reroll side by side (Dump pair).
  const rer = await api(`/v1/results/${(await api('/v1/compile', { method: 'POST', body: JSON.stringify({ hlo: dump }) })).id}/whatif.json?run=0&rerolled=hlo`);
  await drop(page, [['module_0001.before.txt', dump], ['module_0001.rerolled.txt', rer.rerolled_hlo]]);
  await page.waitForSelector('#page-pair:not(.hidden) [data-testid="pair-table"]', { timeout: 150000 });
  await page.waitForSelector('[data-testid="pair-graph-b"] svg g.node', { state: 'attached', timeout: 150000 });
  await h.shot(page, 'dump-and-reroll-pair');

  assert.deepEqual(h.errors.filter((e) => !/status of 4\d\d/.test(e)), [], 'no page errors');
  log('ok');
}

main().then(async () => { await h.stop(); process.exit(0); },
  async (e) => {
    console.error(e);
    console.error('page errors:', h.errors);
    if (page) await h.shot(page, 'failure').catch(() => {});
    if (page) console.error('page says:', await page.evaluate(() => [document.querySelector('#error')?.textContent, document.querySelector('#whatif')?.textContent].join(' | ').slice(0, 1500)).catch(() => ''));
    await h.stop();
    process.exit(1);
  });
