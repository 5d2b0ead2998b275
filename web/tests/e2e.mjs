// End-to-end test of the browser explorer: starts `hloscope serve` on an
// ephemeral loopback port with a temporary --data dir, drives Debian's
// chromium headless with playwright-core, and saves a screenshot per step.
//   node tests/e2e.mjs --server build/hloscope --examples examples \
//        --web web/dist --out build/web-artefacts
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import assert from 'node:assert/strict';
import { bytes, parseXlaBytes } from '../src/format.js';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
const here = new URL('..', import.meta.url).pathname;
// A pane opens zoomed to readable labels, so a node may be out of sight:
// bring it to the pane's middle before the mouse acts on it.
import { inView } from './harness.mjs';
const SERVER = resolve(args.server || join(here, '../build/hloscope'));
const EXAMPLES = resolve(args.examples || join(here, '../examples'));
const WEB = resolve(args.web || join(here, 'dist'));
const OUT = resolve(args.out || join(here, '../build/web-artefacts'));
const CHROMIUM = args.chromium || '/usr/bin/chromium';
mkdirSync(OUT, { recursive: true });
for (const f of readdirSync(OUT)) if (/^(\d\d-.*|failure)\.png$/.test(f)) rmSync(join(OUT, f)); // this run's screenshots only (not memory.mjs's)
if (!existsSync(join(WEB, 'index.html'))) {
  console.error(`[web] ${WEB}/index.html is missing: run  cd web && npm ci && npm run build`);
  process.exit(1);
}
const { chromium } = await import('playwright-core').catch(() => {
  console.error('[web] playwright-core is missing: run  cd web && npm ci');
  process.exit(1);
});

const tmp = mkdtempSync(join(tmpdir(), 'hloscope-web-'));
let server, browser, page;
const errors = [];
const log = (...m) => console.log('[web]', ...m);

function startServer() {
  return new Promise((ok, fail) => {
    server = spawn(SERVER, ['serve', '--port', '0', '--bind', '127.0.0.1', '--data', join(tmp, 'data'),
      '--examples', EXAMPLES, '--web', WEB], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const t = setTimeout(() => fail(new Error(`server did not start: ${out}`)), 20000);
    server.stdout.on('data', (d) => {
      out += d;
      const m = /serving (http:\/\/[^/\s]+)\//.exec(out);
      if (m) { clearTimeout(t); ok(m[1]); }
    });
    server.stderr.on('data', (d) => process.stderr.write(`[server] ${d}`));
    server.on('exit', (c) => { clearTimeout(t); fail(new Error(`server exited ${c}: ${out}`)); });
  });
}

async function stopServer() {
  if (!server || server.exitCode != null) return;
  await new Promise((ok) => { server.removeAllListeners('exit'); server.on('exit', ok); server.kill('SIGTERM'); setTimeout(() => { server.kill('SIGKILL'); ok(); }, 15000); });
}

let step = 0;
async function shot(page, name) {
  step++;
  const file = join(OUT, `${String(step).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  log('screenshot', file);
}

async function compiled(page, timeout = 60000) {
  await page.waitForFunction(() => !document.querySelector('#progress:not(.hidden)'), null, { timeout });
}

const BROWSER_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
// A browser with a profile of its own: another person opening a link.
async function freshBrowser(name, viewport) {
  const ctx = await chromium.launchPersistentContext(join(tmp, name), {
    executablePath: CHROMIUM, headless: true, viewport, args: BROWSER_ARGS,
  });
  const p = ctx.pages()[0] || await ctx.newPage();
  p.on('pageerror', (e) => errors.push(`${name}: ${e.message}`));
  return { ctx, page: p };
}

// Every example's name fits the closed menu (its text box: the width less
// padding and the arrow), measured in the menu's own font: beside its label
// and Open… it was about 150 px at 1280x720 and cut them. So does every
// choice of the half-width Loop, Residuals and Device menus ("model's
// setting" showed as "model's settin" at 1280 px).
async function namesFit(page, where) {
  const cut = await page.evaluate(() => {
    const ctx = document.createElement('canvas').getContext('2d');
    return ['#example', '#loop', '#residuals', '#device'].flatMap((id) => {
      const sel = document.querySelector(id), cs = getComputedStyle(sel);
      ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const room = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 24;
      return [...sel.options].map((o) => (id === '#example' && o.value ? o.value : o.text))
        .filter((t) => ctx.measureText(t).width > room)
        .map((t) => `${id}: ${t} (${Math.round(ctx.measureText(t).width)} > ${Math.round(room)} px)`);
    });
  });
  assert.deepEqual(cut, [], `${where}: names cut in the closed menus`);
}

// Text a teacher reads: no value cut in a card (scrollWidth <= clientWidth of
// every card and its blocks), one unit style (KiB/MiB/GiB, s/ms/µs; never
// XLA's "26.0M" or a bare "Mi"/"m").
async function checkNumbers(page, where) {
  const r = await page.evaluate(() => {
    const cut = [...document.querySelectorAll('#summary .card, #summary .card > div, .gp-card, .gp-card > div')]
      .filter((e) => e.offsetParent && e.scrollWidth > e.clientWidth).map((e) => `${e.className}: ${e.textContent} (${e.scrollWidth} > ${e.clientWidth})`);
    // A card that fits its own box may still run off the page (a row of
    // cards wider than the window: the Goodput cards at 1280 px once).
    cut.push(...[...document.querySelectorAll('#summary .card, .gp-card')]
      .filter((e) => e.offsetParent && e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)
      .map((e) => `${e.className}: ${e.textContent} runs off the page (right ${Math.round(e.getBoundingClientRect().right)} > ${document.documentElement.clientWidth})`));
    // XLA's own report (folded under "XLA's report") keeps XLA's units.
    const text = [...document.querySelectorAll('#summary, .timeline .tl-head, #oom, .gp-cards, .driver-popover-description, .error')]
      .filter((e) => e.offsetParent).map((e) => { const c = e.cloneNode(true); c.querySelectorAll('details').forEach((d) => d.remove()); return c.textContent; }).join('\n');
    return { cut, text };
  });
  assert.deepEqual(r.cut, [], `${where}: card text cut`);
  const bad = r.text.match(/(?<![\w.-])\d+(?:\.\d+)?\s?(?:[KMGT]|KB|MB|GB|Ki|Mi|Gi|us|sec|msec|m)(?![\wµ])/g);
  assert.equal(bad, null, `${where}: units not in one style: ${bad}`);
  // No internal words: the API's "variant a:" / "side b:" prefixes, C
  // names, unfilled values.
  const internal = r.text.match(/\bvariant [ab]:|\bside [ab]:|\bhs_\w+|\bNaN\b|\bundefined\b|\(null\)|\[object /g);
  assert.equal(internal, null, `${where}: internal words shown: ${internal}`);
  const units = [...r.text.matchAll(/\d\s([KMGT]iB|B|s|ms|µs)(?![\w])/g)].length;
  assert.ok(units > 0, `${where}: figures with units shown`);
}

async function main() {
  const base = await startServer();
  log('server', base);
  // A fresh profile (--user-data-dir) per run, as playwright wants it given.
  const ctx = await chromium.launchPersistentContext(join(tmp, 'chromium'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1600, height: 1000 },
    args: BROWSER_ARGS,
  });
  browser = ctx;
  page = ctx.pages()[0] || await ctx.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  // 1. The page loads with its examples and devices.
  await page.goto(`${base}/`);
  await page.waitForSelector('body[data-ready="1"]');
  assert.ok(await page.locator('#example option[value="seed_64_linear"]').count(), 'examples menu lists the seed');
  await namesFit(page, '1600x1000');
  assert.ok(await page.locator('#device option[value="tpu-v5e"]').count(), 'device menu lists tpu-v5e');

  // 2. Pick the seed example.
  await page.selectOption('#example', 'seed_64_linear');
  await page.waitForFunction(() => window.hloscope.editor.text.includes('seed-scan-layers'));
  assert.equal(await page.inputValue('#layers'), '64');
  await shot(page, 'seed-loaded');

  // 3. Compile both ways; the ratio shown is the API's.
  await page.selectOption('#mode', 'loop');
  await page.click('#compile-btn');
  await page.waitForSelector('#progress:not(.hidden)', { timeout: 5000 }).catch(() => {});
  await compiled(page);
  await page.waitForSelector('#pane-a .graph svg g.node');
  await page.waitForSelector('#pane-b .graph svg g.node');
  const seed = await (await fetch(`${base}/v1/examples/seed_64_linear`)).text();
  const api = await (await fetch(`${base}/v1/compare`, { method: 'POST', body: `{"model": ${seed}, "a": {"loop": "unrolled"}, "b": {"loop": "scan"}}` })).json();
  for (const key of ['instructions_optimized', 'instructions_traced', 'peak_device_bytes', 'compile_seconds']) {
    const cell = page.locator(`[data-testid="ratio-${key}"]`);
    const shown = Number(await cell.getAttribute('data-ratio'));
    assert.ok(Math.abs(shown - api.ratios[key]) <= 1e-12 * Math.max(1, Math.abs(api.ratios[key])), `${key}: shown ${shown}, API ${api.ratios[key]}`);
    const text = await cell.textContent();
    assert.ok(text.startsWith(`${Number(api.ratios[key].toPrecision(3))}×`), `${key} text '${text}' vs ${api.ratios[key]}`);
  }
  const instrA = await page.locator(`[data-key="instructions_optimized"] .va`).textContent();
  assert.equal(instrA.replace(/,/g, ''), String(api.a.instructions.optimized));
  log('ratio instructions_optimized', api.ratios.instructions_optimized);
  // The panes are marked from the engine's diff (GET .../diff/{b}): the
  // loop's nodes added in B, and every mark on either side is the diff's.
  await page.waitForSelector('#pane-b g.node.diff-added');
  const engineDiff = await (await fetch(`${base}/v1/results/${api.a.id}/diff/${api.b.id}?stage=optimized`)).json();
  for (const s of ['a', 'b']) {
    const marked = await page.evaluate((x) => [...document.querySelectorAll(`#pane-${x} g.node[class*="diff-"]`)].map((g) => {
      const n = window.hloscope.panes[x].nodes.get(g.id);
      return { cls: g.getAttribute('class'), name: n.name, group: n.opcode === 'layer' ? n.group : null };
    }), s);
    for (const m of marked) {
      const st = m.group ? engineDiff[s].groups[m.group] : engineDiff[s].not_same[m.name];
      assert.ok(st && m.cls.includes(`diff-${st}`), `${s}: ${m.name} marked ${m.cls}, the engine says ${st}`);
    }
  }
  await checkNumbers(page, 'compare 1600x1000');
  await shot(page, 'compare-unrolled-vs-scan');

  // 4. Click a node: its details.
  const dotId = await page.evaluate(() => [...window.hloscope.panes.b.nodes.values()].find((n) => n.opcode === 'dot').id);
  await inView(page, 'b', dotId);
  await page.locator(`#pane-b g.node[id="${dotId}"]`).click();
  await page.waitForSelector('#details:not(.hidden)');
  assert.equal(await page.textContent('[data-testid="details-name"]'), dotId);
  assert.match(await page.textContent('[data-testid="details-opcode"]'), /^dot/);
  await page.waitForFunction((id) => (document.querySelector('[data-testid="details-hlo"]') || {}).textContent?.includes(`${id} = `), dotId);
  assert.match(await page.textContent('[data-testid="details-shape"]'), /^f32\[/);
  await shot(page, 'node-details');

  // 5. Hover a buffer in A's memory timeline: its node lights up in A's graph.
  const pos = await page.evaluate(() => {
    const p = window.hloscope.timelines.a.plots[0];
    // A layer's buffer drawn in the middle of the stack (clear of the axes).
    const top = Math.max(...p.bufs.map((x) => x._off + x.bytes));
    const b = p.bufs.filter((x) => x.op_name && x.op_name.startsWith('layers.') && Math.abs(x._off + x.bytes / 2 - top / 2) < top / 4)
      .sort((x, y) => y.bytes - x.bytes)[0];
    const r = p.u.over.getBoundingClientRect();
    return { x: r.left + p.u.valToPos((b.start + b.end) / 2, 'x'), y: r.top + p.u.valToPos(b._off + b.bytes / 2, 'y'), name: b.name, instruction: b.instruction, op_name: b.op_name };
  });
  await page.mouse.move(pos.x, pos.y);
  await page.waitForFunction(() => document.querySelector('#pane-a').dataset.hl);
  const hl = await page.evaluate(() => document.querySelector('#pane-a').dataset.hl);
  assert.ok(await page.locator(`#pane-a g.node.hl[id="${hl}"]`).count() === 1, `node ${hl} highlighted`);
  // Boxes are a few pixels high: check against the buffer actually under the mouse.
  const hot = await page.evaluate(() => { const h = window.hloscope.timelines.a.plots[0].hot; return h && { name: h.name, op_name: h.op_name }; });
  assert.ok(hot && hot.op_name.startsWith('layers.'), `a layer's buffer under the mouse (aimed at ${pos.name})`);
  assert.equal(hl, `layer:${/^(layers\.\d+)/.exec(hot.op_name)[1]}`);
  assert.ok((await page.textContent('[data-testid="buffer-hover"]')).includes(hot.name));
  await shot(page, 'buffer-hover');
  // ... and the reverse: hovering that node highlights its buffers.
  await page.mouse.move(10, 10);
  await page.evaluate((id) => window.hloscope.panes.a.focus(id), hl);
  await inView(page, 'a', hl);
  await page.locator(`#pane-a g.node[id="${hl}"]`).hover();
  await page.waitForFunction(() => Number(document.querySelector('#pane-a .timeline').dataset.highlighted) > 0);
  await shot(page, 'node-hover-buffers');

  // 6. The URL restores the view after a reload and in a new tab.
  const url = page.url();
  assert.match(url, /#.*a=[0-9a-f]{32}.*b=[0-9a-f]{32}/);
  const fresh = await ctx.newPage();
  await fresh.goto(url);
  await fresh.waitForSelector('body[data-ready="1"]');
  await fresh.waitForSelector('#pane-b g.node.selected');
  assert.equal(await fresh.getAttribute('[data-testid="ratio-instructions_optimized"]', 'data-ratio'), String(api.ratios.instructions_optimized));
  assert.equal(await fresh.textContent('[data-testid="details-name"]'), dotId);
  await shot(fresh, 'shared-url-restored');
  await fresh.close();

  // 6b. A link carries the model and the settings: the sender compiles with
  // batch 2 (the editor is the seed), a recipient with a browser of their own
  // (another model in their editor) sees exactly that source, settings and results.
  await page.fill('#batch', '2');
  await page.click('#compile-btn');
  await compiled(page);
  await page.waitForFunction(() => window.hloscope.view.summaries[window.hloscope.state.b]?.output_shape?.startsWith('f32[2,'));
  const sent = await page.evaluate(() => ({ url: location.href, text: window.hloscope.editor.text, a: window.hloscope.state.a, b: window.hloscope.state.b }));
  const apiB2 = await (await fetch(`${base}/v1/compare?batch=2`, { method: 'POST', body: `{"model": ${seed}, "a": {"loop": "unrolled"}, "b": {"loop": "scan"}}` })).json();
  assert.equal(sent.b, apiB2.b.id, 'the sender shows the batch-2 comparison');
  const other = await freshBrowser('recipient', { width: 1280, height: 720 });
  await other.page.goto(`${base}/`);
  await other.page.waitForSelector('body[data-ready="1"]');
  await other.page.selectOption('#example', 'mlp'); // the recipient's own work
  await other.page.waitForFunction(() => window.hloscope.editor.text.includes('"mlp'));
  const theirs = await other.page.evaluate(() => window.hloscope.editor.text);
  await other.page.goto(sent.url);
  await other.page.reload();
  await other.page.waitForSelector('body[data-ready="1"]');
  await other.page.waitForSelector('#pane-b g.node');
  const got = await other.page.evaluate(() => ({ text: window.hloscope.editor.text, batch: document.querySelector('#batch').value,
    a: window.hloscope.state.a, b: window.hloscope.state.b, stale: document.querySelector('#page-compare').classList.contains('stale') }));
  assert.deepEqual(JSON.parse(got.text), JSON.parse(sent.text), 'the recipient\'s editor holds the sender\'s model');
  assert.equal(got.batch, '2', 'and the sender\'s batch');
  assert.deepEqual([got.a, got.b], [sent.a, sent.b], 'and the sender\'s results');
  assert.equal(got.stale, false, 'editor and panes agree');
  assert.equal(await other.page.getAttribute('[data-testid="ratio-instructions_optimized"]', 'data-ratio'), String(apiB2.ratios.instructions_optimized));
  assert.ok(await other.page.isVisible('[data-testid="link-note"]'), 'the recipient is told their text is kept');
  // The source route is what the link reopened.
  const srcB = await (await fetch(`${base}/v1/results/${sent.b}/source`)).json();
  assert.deepEqual(srcB.query, { batch: 2, loop: 'scan' });
  assert.deepEqual(JSON.parse(got.text), srcB.body);
  await namesFit(other.page, '1280x720');
  // 1280x720: the graph pane has at least half the height, the cards one row.
  const geo = await other.page.evaluate(() => ({ g: document.querySelector('#pane-a .graph').getBoundingClientRect().height,
    tops: [...new Set([...document.querySelectorAll('#summary .card')].map((c) => Math.round(c.getBoundingClientRect().top)))],
    tl: document.querySelector('#pane-a .timeline').getBoundingClientRect().bottom }));
  assert.ok(geo.g >= 360, `graph pane ${geo.g} px high at 1280x720`);
  assert.equal(geo.tops.length, 1, `cards in one row: ${geo.tops}`);
  assert.ok(geo.tl <= 720, `the memory timeline is in view: bottom at ${geo.tl}`);
  await checkNumbers(other.page, 'compare 1280x720');
  await shot(other.page, 'link-in-a-fresh-browser-1280x720');
  // 6c. Stale marker: any edit of the source or a setting after the compile.
  const staleShown = () => other.page.evaluate(() => document.querySelector('#page-compare').classList.contains('stale')
    && getComputedStyle(document.querySelector('#page-compare [data-testid="stale"]')).display !== 'none');
  await other.page.fill('#layers', '32');
  await other.page.dispatchEvent('#layers', 'change');
  await other.page.waitForFunction(() => /"repeat": 32/.test(window.hloscope.editor.text));
  assert.ok(await staleShown(), 'an edit marks the results stale');
  assert.equal(await other.page.textContent('#page-compare [data-testid="stale"]'), 'changed since compile — Compile to refresh');
  assert.ok(Number(await other.page.evaluate(() => getComputedStyle(document.querySelector('#summary')).opacity)) < 1, 'the result panes are dimmed');
  await shot(other.page, 'stale-after-edit');
  await other.page.fill('#layers', '64');
  await other.page.dispatchEvent('#layers', 'change');
  await other.page.waitForFunction(() => !document.querySelector('#page-compare').classList.contains('stale'));
  await other.page.selectOption('#device', 'tpu-v5p');
  assert.ok(await staleShown(), 'a setting marks the results stale');
  await other.page.selectOption('#device', '');
  assert.ok(!(await staleShown()), 'back to the compiled settings: not stale');
  await other.page.selectOption('#example', 'mlp');
  await other.page.waitForFunction(() => window.hloscope.editor.text.includes('"mlp'));
  assert.ok(await staleShown(), 'another example marks the results stale');
  await other.page.click('#compile-btn');
  await compiled(other.page);
  await other.page.waitForFunction(() => !document.querySelector('#page-compare').classList.contains('stale'));
  // Back to their own text.
  await other.page.click('[data-testid="back-to-yours"]');
  assert.equal(await other.page.evaluate(() => window.hloscope.editor.text), theirs);
  await other.ctx.close();
  await page.fill('#batch', '');
  await page.click('#compile-btn');
  await compiled(page);

  // 7. Traced vs optimized and expanding a layer in the unrolled view.
  if (await page.isVisible('#details-close')) await page.locator('#details-close').click();
  await page.selectOption('#mode', 'stage');
  await compiled(page);
  await page.waitForSelector('#pane-a g.node');
  await shot(page, 'traced-vs-optimized');
  await page.selectOption('#mode', 'loop');
  await compiled(page);
  await inView(page, 'a', 'layer:layers.3');
  await page.locator('#pane-a g.node[id="layer:layers.3"]').dblclick();
  await page.waitForFunction(() => window.hloscope.state.expand === 'layers.3' && !document.querySelector('#progress:not(.hidden)'));
  await page.waitForSelector('#pane-a g.node');
  assert.equal(await page.locator('#pane-a g.node[id="layer:layers.3"]').count(), 0, 'layers.3 expanded');
  await page.fill('#search', 'layers.3/');
  assert.match(await page.textContent('#search-count'), /^[1-9]\d* match/);
  await shot(page, 'expanded-layer-search');
  await page.fill('#search', '');

  // 8. HLO diff and metrics tabs.
  await page.click('[data-tab="hlo"]');
  await page.waitForSelector('[data-testid="hlo-counts"]');
  await shot(page, 'hlo-diff');
  await page.click('[data-tab="metrics"]');
  await page.waitForSelector('[data-testid="passes"]');
  await shot(page, 'metrics');
  await page.click('[data-tab="compare"]');

  // 9. An invalid model: the error at its line, in the editor and the message.
  const bad = seed.replace('"features": 1024', '"featurs": 1024');
  const badLine = bad.split('\n').findIndex((l) => l.includes('featurs')) + 1;
  await page.evaluate((t) => { window.hloscope.editor.text = t; }, bad);
  await page.click('#compile-btn');
  await page.waitForSelector('#error:not(.hidden)');
  assert.match(await page.textContent('#error'), /featurs/);
  assert.match(await page.textContent('[data-testid="error-where"]'), new RegExp(`line ${badLine}\\)`));
  const marked = await page.evaluate(() => [...document.querySelectorAll('.cm-lintRange-error')].map((e) => e.closest('.cm-line').textContent));
  assert.ok(marked.length && marked[0].includes('featurs'), `lint mark on the featurs line: ${marked}`);
  await shot(page, 'invalid-model-path');
  // A syntax error: the line and column the server reports, in editor lines.
  const lines = seed.split('\n');
  const k = lines.findIndex((l) => l.includes('"seed"'));
  lines[k] = lines[k].replace(/,\s*$/, '');
  await page.evaluate((t) => { window.hloscope.editor.text = t; }, lines.join('\n'));
  await page.click('#compile-btn');
  await page.waitForSelector('#error:not(.hidden)');
  assert.match(await page.textContent('[data-testid="error-where"]'), new RegExp(`^Line ${k + 2}, column`));
  const synLine = await page.evaluate(() => document.querySelector('.cm-lintRange-error').closest('.cm-line').textContent);
  assert.equal(synLine.trim(), lines[k + 1].trim());
  await shot(page, 'invalid-model-syntax');

  // 10. Out of memory: a clear message with the largest buffers.
  await page.selectOption('#example', 'decoder_50x256');
  await page.waitForFunction(() => window.hloscope.editor.text.includes('decoder-50x256'));
  await page.selectOption('#device', 'teach-16m');
  await page.click('#compile-btn');
  await page.waitForSelector('#oom:not(.hidden)');
  assert.match(await page.textContent('#oom'), /Out of device memory/);
  await page.waitForSelector('[data-testid="oom-largest"] tbody tr');
  assert.ok(await page.locator('[data-testid="oom-largest"] tbody tr').count() >= 5, 'largest buffers at the peak listed');
  // decoder_50x256's parameters alone exceed teach-16m: no loop or policy helps.
  const adviceW = await page.textContent('[data-testid="oom-advice"]');
  assert.match(adviceW, /parameters and inputs alone take [\d.]+ MiB, more than the device's 16\.0 MiB/);
  assert.doesNotMatch(adviceW, /loop: scan/);
  await checkNumbers(page, 'out of memory');
  await shot(page, 'out-of-memory');
  await page.selectOption('#device', '');

  // 10b. The training step (?mode=train) of train_offload on its 64 MiB device:
  // residuals saved run out of memory (A), offloaded fit (B: graph + timeline).
  await page.selectOption('#example', 'train_offload');
  await page.waitForFunction(() => window.hloscope.editor.text.includes('train-offload'));
  await page.selectOption('#mode', 'residuals');
  await page.waitForSelector('#res-b:not(.hidden)');
  if (!(await page.evaluate(() => window.hloscope.state.b && window.hloscope.view.failA))) {
    await compiled(page);
    await page.click('#compile-btn');
  }
  await page.waitForFunction(() => window.hloscope.view.failA && window.hloscope.state.b, null, { timeout: 60000 });
  await compiled(page);
  const trainModel = await (await fetch(`${base}/v1/examples/train_offload`)).text();
  const saveReply = await fetch(`${base}/v1/compile?mode=train&residuals=save`, { method: 'POST', body: trainModel });
  // A compile that does not fit is a result flagged out_of_memory with XLA's report.
  const saveResult = await saveReply.json();
  assert.ok(saveReply.status === 200 && saveResult.out_of_memory, 'save: the training step is out of memory');
  const usedApi = /Used ([\d.]+\w?) of ([\d.]+\w?)/.exec(saveResult.oom_report);
  const offloadReply = await fetch(`${base}/v1/compile?mode=train&residuals=offload`, { method: "POST", body: trainModel });
  const offload = await offloadReply.json();
  assert.equal(offloadReply.status, 200, `offload: ${JSON.stringify(offload).slice(0, 400)}`);
  assert.equal(await page.evaluate(() => window.hloscope.state.b), offload.id, 'B is the offloaded training step');
  await page.waitForSelector('#oom:not(.hidden) [data-testid="oom-stacked"]');
  assert.match(await page.textContent('[data-testid="oom-title"]'), /residuals save: the step does not fit/);
  const bx = (t) => bytes(parseXlaBytes(t));
  assert.ok((await page.textContent('[data-testid="oom-used"]')).includes(`Needs ${bx(usedApi[1])}; the device has ${bx(usedApi[2])}`), 'OOM figures are the API\'s');
  assert.match(await page.textContent('[data-testid="oom-stacked"]'), /stack [\d.]+ MiB of residuals on the device/);
  // train_offload already scans: told about residual policies, batch, device; not to scan.
  await page.waitForFunction(() => !/Measuring/.test(document.querySelector('[data-testid="oom-advice"]').textContent));
  const adviceT = await page.textContent('[data-testid="oom-advice"]');
  assert.match(adviceT, /already scans \(residuals: save\)/);
  assert.match(adviceT, /residuals: offload/);
  assert.match(adviceT, /batch/);
  assert.doesNotMatch(adviceT, /loop: scan/);
  // Folded to its figures above B (at 1600x1000 too: unfolded it left B's
  // graph 240 px); Details unfolds the advice and the largest buffers.
  await page.waitForSelector('[data-testid="oom-largest"] tbody tr', { timeout: 30000, state: 'attached' });
  await page.waitForSelector('#pane-b .graph svg g.node');
  assert.ok(!(await page.isVisible('[data-testid="oom-largest"]')) && await page.isVisible('[data-testid="oom-stacked"]'), 'the report is folded to its figures');
  const foldedGeo = await page.evaluate(() => ({ g: document.querySelector('#pane-b .graph').getBoundingClientRect().height, H: innerHeight }));
  log(`train_offload at 1600x1000: B's graph ${Math.round(foldedGeo.g)} px under the folded report`);
  assert.ok(foldedGeo.g >= 0.35 * foldedGeo.H, `B's graph ${foldedGeo.g} px of ${foldedGeo.H}`);
  await page.click('[data-testid="oom-more"]');
  await page.waitForSelector('[data-testid="oom-largest"] tbody tr', { timeout: 30000 });
  assert.ok(await page.isVisible('[data-testid="oom-advice"]'), 'Details unfolds the advice and the buffers');
  await page.click('[data-testid="oom-more"]');
  await page.waitForSelector('#pane-b [data-testid="peak-host"]');
  // A's out-of-memory result has a graph and a memory timeline of its own (issue 15 item 5).
  await page.waitForSelector('#pane-a .graph svg g.node');
  assert.equal(await page.textContent('#pane-a [data-testid="peak-device"]'), bytes(saveResult.memory.peak_device_bytes), 'A\'s timeline peaks where its report says');
  assert.match(await page.textContent('#pane-b .pane-title'), /train step · residuals: offload/);
  const fitLine = await page.textContent('[data-testid="fit-line"]');
  assert.match(fitLine, /runs out of device memory; B \(residuals offload\) fits/);
  assert.ok(offload.train_step.residuals.host_bytes > 0 && offload.memory.peak_device_bytes < offload.memory.capacity.device_bytes, 'offload fits, residuals on the host');
  const shownB = await page.evaluate(() => window.hloscope.view.summaries[window.hloscope.state.b].memory);
  assert.deepEqual(shownB, offload.memory, 'B shows the API\'s memory');
  log(`train_offload: save needs ${usedApi[1]} of ${usedApi[2]}; offload peak ${offload.memory.peak_device_bytes}, host ${offload.train_step.residuals.host_bytes}`);
  await page.waitForTimeout(300);
  await shot(page, 'train-step-save-oom-vs-offload');
  // B: remat_offload fits too, both sides compile: the usual compare view.
  await page.selectOption('#res-b', 'remat_offload');
  await page.waitForFunction(() => window.hloscope.view.summaries[window.hloscope.state.b]?.residuals === 'remat_offload', null, { timeout: 60000 });
  await compiled(page);
  await page.waitForSelector('#pane-b [data-testid="peak-host"]');
  assert.ok(await page.evaluate(() => window.hloscope.view.failA && !window.hloscope.state.a), 'A still does not fit');
  await shot(page, 'train-step-save-oom-vs-remat-offload');
  await page.selectOption('#res-b', 'offload');
  await compiled(page);
  await page.selectOption('#example', 'decoder_50x256');
  await page.waitForFunction(() => window.hloscope.editor.text.includes('decoder-50x256'));
  await page.selectOption('#mode', 'loop');
  await compiled(page);

  // 11. A 64-layer unrolled decoder stays responsive (collapsed views).
  await page.fill('#layers', '64');
  await page.dispatchEvent('#layers', 'change');
  await page.waitForFunction(() => /"repeat": 64/.test(window.hloscope.editor.text));
  let t0 = Date.now();
  await page.click('#compile-btn');
  await compiled(page);
  await page.waitForSelector('#pane-a g.node[id="layer:layers.63"]', { state: 'attached' });
  const compileMs = Date.now() - t0;
  assert.ok(await page.locator('[data-testid="ratio-instructions_optimized"]').count());
  t0 = Date.now();
  await page.mouse.move(900, 500);
  for (let k = 0; k < 10; k++) await page.mouse.wheel(0, -120);
  const nodeId = await page.evaluate(() => [...window.hloscope.panes.a.nodes.keys()].find((k) => k.startsWith('layer:')));
  await inView(page, 'a', nodeId);
  await page.locator(`#pane-a g.node[id="${nodeId}"]`).hover();
  await page.waitForFunction(() => Number(document.querySelector('#pane-a .timeline').dataset.highlighted) > 0);
  const interactMs = Date.now() - t0;
  log(`decoder 64 layers: compare + render ${compileMs} ms, zoom + hover ${interactMs} ms`);
  assert.ok(compileMs < 30000 && interactMs < 5000, 'responsive');
  await shot(page, 'decoder-64-layers');
  await page.click('[data-tab="hlo"]');
  await page.waitForSelector('[data-testid="hlo-counts"]', { timeout: 20000 });
  await page.click('[data-tab="compare"]');

  // 12. Compile scaling, measured live.
  await page.selectOption('#example', 'seed_64_linear');
  await page.waitForFunction(() => window.hloscope.editor.text.includes('seed-scan-layers'));
  await page.click('[data-tab="scaling"]');
  await page.click('#scaling-btn');
  await page.waitForSelector('#scaling-table tr[data-l="64"]', { timeout: 300000 });
  await compiled(page, 300000);
  // Medians of 5 fresh compiles, never a cache hit; unrolled grows with depth, scan stays below it.
  const scal = await page.evaluate(() => [...document.querySelectorAll('#scaling-table tbody tr')].map((tr) => ({
    L: Number(tr.dataset.l), med: [...tr.querySelectorAll('td[data-median]')].map((td) => Number(td.dataset.median)), text: tr.textContent })));
  assert.equal(scal.length, 7);
  for (const r of scal) {
    assert.equal(r.med.length, 2, `L=${r.L}: both loops measured fresh: ${r.text}`);
    assert.match(r.text, /n=5.*n=5/, `L=${r.L}: five samples each`);
    assert.doesNotMatch(r.text, /\(cached\)/);
  }
  assert.ok(scal[6].med[1] < scal[6].med[0], `L=64: scan ${scal[6].med[1]} s below unrolled ${scal[6].med[0]} s`);
  await shot(page, 'compile-scaling');

  // 13. Goodput: tracing_bound unrolled behind the lazy-tensor frontend model is
  // tracing-bound (the figure shown is the API's steps.json), scanned it recovers.
  await page.selectOption('#example', 'tracing_bound');
  await page.waitForFunction(() => window.hloscope.editor.text.includes('"tracing-bound"'));
  await page.selectOption('#loop', 'unrolled');
  await page.click('[data-tab="goodput"]');
  await page.selectOption('#gp-frontend', 'lazy-tensor');
  await page.fill('#gp-steps', '10');
  await page.click('#goodput-btn');
  await page.waitForSelector('[data-testid="goodput-value"]', { timeout: 120000 });
  await compiled(page);
  const goodputOf = async (loop) => {
    const id = await page.evaluate(() => window.hloscope.state.grun);
    const st = await (await fetch(`${base}/v1/results/${id}/steps.json?frontend=lazy-tensor&steps=10`)).json();
    assert.equal(st.loop, loop);
    const shown = await page.textContent('[data-testid="goodput-value"]');
    assert.equal(shown, `${(100 * st.summary.goodput).toFixed(1)}%`, `${loop}: goodput shown vs the API's`);
    assert.equal(await page.textContent('[data-testid="goodput-verdict"]'), st.summary.verdict);
    assert.equal(await page.textContent('[data-testid="goodput-cache"]'), '1 uncached, 9 cached');
    assert.equal(await page.locator('[data-testid="goodput-chart"] rect.seg-execute').count(), 10);
    log(`goodput ${loop} + lazy-tensor: ${shown} ${st.summary.verdict}`);
    return st;
  };
  const gU = await goodputOf('unrolled');
  assert.ok(gU.summary.goodput < 0.6 && gU.summary.verdict === 'host-bound', `unrolled is tracing-bound: ${gU.summary.goodput}`);
  assert.ok(await page.locator('[data-testid="goodput-chart"] rect.seg-idle').count() > 0, 'the device idles');
  await page.waitForTimeout(200);
  await shot(page, 'goodput-unrolled-lazy-tensor');
  await page.selectOption('#loop', 'scan');
  await page.click('#goodput-btn');
  await page.waitForFunction(() => window.hloscope.view.lastGoodput?.loop === 'scan', null, { timeout: 120000 });
  await compiled(page);
  const gS = await goodputOf('scan');
  assert.ok(gS.summary.goodput > gU.summary.goodput, `scan shows higher goodput: ${gS.summary.goodput} vs ${gU.summary.goodput}`);
  await shot(page, 'goodput-scan-lazy-tensor');
  await page.selectOption('#loop', '');

  // 14. The guided tour, on a projector (1280x720), in a workspace of its own:
  // whatever it loads, the editor, settings and storage are put back when it
  // ends or is closed.
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.click('[data-tab="compare"]');
  await page.selectOption('#example', 'decoder_50x256');
  await page.waitForFunction(() => window.hloscope.editor.text.includes('decoder-50x256'));
  await page.evaluate(() => { window.hloscope.editor.text = window.hloscope.editor.text.replace('"seed": 0', '"seed": 7'); });
  await page.selectOption('#device', 'tpu-v5p');
  await page.fill('#batch', '3');
  const workspace = () => page.evaluate(() => ({
    text: window.hloscope.editor.text,
    controls: ['#example', '#loop', '#residuals', '#device', '#batch', '#mode', '#res-b', '#gp-frontend', '#gp-steps'].map((c) => document.querySelector(c).value),
    storage: Object.fromEntries(Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)])),
    tab: window.hloscope.state.tab,
  }));
  const before = await workspace();
  // Closed at its second step (it compiled the seed meanwhile).
  await page.click('#tour-btn');
  await page.waitForSelector('.driver-popover');
  await page.click('.driver-popover-next-btn');
  await page.waitForFunction(() => document.querySelector('.driver-popover-title')?.textContent.startsWith('2'), null, { timeout: 60000 });
  await page.click('.driver-popover-close-btn');
  await page.waitForFunction((t) => !document.querySelector('.driver-popover') && window.hloscope.editor.text === t, before.text);
  await compiled(page);
  assert.deepEqual(await workspace(), before, 'a closed tour puts the workspace back');
  // The whole tour, then Done.
  const graphHalf = async (step) => {
    const g = await page.evaluate(() => document.querySelector('#pane-b .graph').getBoundingClientRect().height);
    assert.ok(g >= 360, `tour step ${step}: graph ${g} px high at 1280x720`);
  };
  // Every step at 1280x720: its text whole in view at a projector's size,
  // and the graph it shows (steps 2-5) with labels of a legible size (the
  // median height of the node labels in view; a 64-layer scan body or a
  // training step fitted whole drew them 1-3 px high).
  const legible = async (step, { graph = false, shoot = true } = {}) => {
    await page.waitForTimeout(600); // the popover fades in
    const r = await page.evaluate(() => {
      const d = document.querySelector('.driver-popover-description').getBoundingClientRect();
      const panes = ['a', 'b'].map((s) => document.querySelector(`#pane-${s} > .graph`)).filter((g) => g && g.offsetParent && g.querySelector('svg'));
      const labels = panes.map((g) => {
        const box = g.getBoundingClientRect();
        const hs = [...g.querySelectorAll('g.node text')].map((t) => t.getBoundingClientRect())
          .filter((b) => b.bottom > box.top && b.top < box.bottom && b.right > box.left && b.left < box.right).map((b) => b.height).sort((x, y) => x - y);
        return { n: hs.length, median: hs[Math.floor(hs.length / 2)] || 0 };
      });
      return { font: parseFloat(getComputedStyle(document.querySelector('.driver-popover-description')).fontSize), top: d.top, bottom: d.bottom, H: innerHeight, labels };
    });
    assert.ok(r.font >= 15 && r.top >= 0 && r.bottom <= r.H, `tour step ${step}: its text in view at ${r.font} px: ${JSON.stringify(r)}`);
    if (graph) {
      assert.ok(r.labels.length >= 1 && r.labels.every((l) => l.n >= 3 && Math.round(l.median) >= 10), `tour step ${step}: graph labels legible: ${JSON.stringify(r.labels)}`);
    }
    log(`tour step ${step} at 1280x720: text ${r.font} px; labels ${r.labels.map((l) => `${l.n} of median ${l.median.toFixed(1)} px`).join(', ')}`);
    if (shoot) await shot(page, `tour-step-${step}-1280x720`);
  };
  await page.click('#tour-btn');
  await page.waitForSelector('.driver-popover');
  await legible(1);
  await page.click('.driver-popover-next-btn');
  await page.waitForFunction(() => document.querySelector('.driver-popover-title')?.textContent.startsWith('2'), null, { timeout: 60000 });
  assert.match(await page.textContent('.driver-popover-description'), /instructions; with scan it sees/);
  assert.ok(await page.locator('.driver-popover-description').isVisible());
  await graphHalf(2);
  await checkNumbers(page, 'tour step 2');
  await legible(2, { graph: true, shoot: false });
  await shot(page, 'tour-scan');
  // ... and on to its goodput steps: tracing_bound unrolled, then scanned,
  // quoting the figures measured above (same settings: the same cached steps).
  const tourTo = async (n, timeout = 60000) => {
    // The step's own timeout: under load the page may still be drawing the
    // last step's graphs when Next is pressed (30 s once at load 35).
    await page.click('.driver-popover-next-btn', { timeout });
    await page.waitForFunction((k) => document.querySelector('.driver-popover-title')?.textContent.startsWith(`${k} `), n, { timeout });
  };
  for (const n of [3, 4]) { await tourTo(n); await graphHalf(n); await legible(n, { graph: true }); }
  // 5: train_offload's training step, saved (out of memory) vs offloaded.
  await tourTo(5, 120000);
  await compiled(page);
  await page.waitForFunction(() => !/measuring|Compile first/.test(document.querySelector('.driver-popover-description')?.textContent || ''));
  const tour5 = await page.textContent('.driver-popover-description');
  assert.ok(tour5.includes(`runs out of memory: it needs ${bx(usedApi[1])} of ${bx(usedApi[2])}`), `tour 5 quotes the OOM: ${tour5}`);
  await checkNumbers(page, 'tour step 5');
  assert.match(tour5, /the step fits/);
  // On a projector the report above B's graph is one line; Details unfolds it.
  await page.waitForSelector('[data-testid="oom-largest"] tbody tr', { timeout: 30000, state: 'attached' });
  assert.ok(await page.isVisible('[data-testid="oom-used"]') && !(await page.isVisible('[data-testid="oom-largest"]')), 'compact report');
  await graphHalf(5);
  await legible(5, { graph: true, shoot: false });
  await shot(page, 'tour-host-offloading');
  for (const n of [6, 7]) { await tourTo(n); await legible(n); }
  await tourTo(8, 120000);
  await compiled(page);
  assert.match(await page.textContent('.driver-popover-description'), new RegExp(`Goodput ${(100 * gU.summary.goodput).toFixed(1)}%.*host-bound`));
  await checkNumbers(page, 'tour step 8');
  await legible(8, { shoot: false });
  await shot(page, 'tour-goodput-unrolled');
  await tourTo(9, 120000);
  await compiled(page);
  assert.match(await page.textContent('.driver-popover-description'),
    new RegExp(`Goodput ${(100 * gS.summary.goodput).toFixed(1)}% \\(unrolled: ${(100 * gU.summary.goodput).toFixed(1)}%\\)`));
  const chartBox = await page.evaluate(() => document.querySelector('#goodput .gp-chart').getBoundingClientRect().toJSON());
  assert.ok(chartBox.bottom <= 720 && chartBox.height >= 150, `tour 9: the goodput chart is in view at 1280x720: ${JSON.stringify(chartBox)}`);
  await checkNumbers(page, 'tour step 9');
  await legible(9, { shoot: false });
  await shot(page, 'tour-goodput-scan');
  // The figures are measured, so their width varies from run to run (CI once
  // saw "1.22 ms · 1.55 ms" push the row 3 px off a 1280 px page). The widest
  // each format gives must fit too: three significant digits and a unit
  // (written in after the screenshot, which keeps the measured ones).
  await page.evaluate(() => {
    for (const [id, text] of [['goodput-value', '100.0%'], ['goodput-mfu', '88.88%'], ['goodput-host', '8.88 ms'], ['goodput-device', '8.88 ms']])
      document.querySelector(`[data-testid="${id}"]`).textContent = text;
    document.querySelector('[data-testid="goodput-device"]').closest('.gp-card').querySelector('.sub').textContent = 'a steady step takes 8.88 ms of wall time';
  });
  await checkNumbers(page, 'tour step 9 with the widest figures');
  await page.click('.driver-popover-next-btn'); // Done
  await page.waitForFunction((t) => !document.querySelector('.driver-popover') && window.hloscope.editor.text === t, before.text, { timeout: 60000 });
  await compiled(page);
  assert.deepEqual(await workspace(), before, 'the finished tour puts the workspace back');
  await page.waitForSelector('#pane-b .graph svg g.node', { timeout: 30000 }); // the user's results are back on view (B: the scanned side, a small graph)
  await shot(page, 'after-the-tour');

  // 15. HLO in the editor: a real dump (XLA's test data, ../shared) dropped on
  // the editor compiles as traced <-> optimized; live lint marks a broken
  // bracket as you type (no request); the server's syntax error is marked at
  // its line and column.
  const hloText = readFileSync(join(here, '../../shared/hlo-samples/gpu_hlo_pass.hlo'), 'utf8');
  await page.fill('#batch', ''); // batch applies to models only (the server would say so)
  await page.selectOption('#device', '');
  const drop = await page.evaluateHandle((t) => { const d = new DataTransfer(); d.items.add(new File([t], 'gpu_hlo_pass.hlo', { type: 'text/plain' })); return d; }, hloText);
  await page.dispatchEvent('#editor .cm-content', 'drop', { dataTransfer: drop });
  await page.waitForFunction((t) => window.hloscope.editor.text === t, hloText);
  await page.click('#compile-btn');
  await compiled(page);
  await page.waitForSelector('#pane-b .graph svg g.node');
  const hloRes = await page.evaluate(() => ({ mode: window.hloscope.state.mode, S: window.hloscope.view.summaries[window.hloscope.state.b] }));
  const hloApi = await (await fetch(`${base}/v1/compile`, { method: 'POST', body: JSON.stringify({ hlo: hloText }) })).json();
  assert.equal(hloRes.mode, 'stage', 'HLO compares its two stages');
  assert.equal(hloRes.S.id, hloApi.id, 'the dropped dump is the API\'s {"hlo": text}');
  assert.equal(hloRes.S.module, 'Algorithm3xBF16');
  await shot(page, 'hlo-dropped');
  const badHlo = hloText.replace('  p1 = f32[128,128] parameter(1)', '  p1 = f32[128,128] parameter(1');
  await page.evaluate((t) => { window.hloscope.editor.text = t; }, badHlo);
  // CodeMirror draws the lines in view only: the broken one is near the end.
  await page.evaluate(() => { const d = window.hloscope.editor.view.scrollDOM; d.scrollTop = d.scrollHeight; });
  await page.waitForSelector('.cm-lintRange-error', { timeout: 5000 });
  const linted = await page.evaluate(() => document.querySelector('.cm-lintRange-error').closest('.cm-line').textContent);
  assert.equal(linted.trim(), 'p1 = f32[128,128] parameter(1', 'live lint marks the line that broke');
  assert.ok(await page.evaluate(() => document.querySelector('#page-compare').classList.contains('stale')), 'the edit marks the results stale');
  await page.click('#compile-btn');
  await page.waitForSelector('#error:not(.hidden)');
  const synErr = (await (await fetch(`${base}/v1/compile`, { method: 'POST', body: JSON.stringify({ hlo: badHlo }) })).json()).error;
  assert.ok(synErr.line > 0 && synErr.path === '/hlo', `the server gives a line: ${JSON.stringify(synErr)}`);
  assert.match(await page.textContent('[data-testid="error-where"]'), new RegExp(`^Line ${synErr.line}, column ${synErr.column}$`));
  const markedHlo = await page.evaluate(() => document.querySelector('.cm-lintRange-error').closest('.cm-line').textContent);
  assert.equal(markedHlo, badHlo.split('\n')[synErr.line - 1], 'the server\'s error is marked on its line');
  await shot(page, 'hlo-syntax-error');

  // 16. Reroll as scan (docs/WHATIF.md): an unrolled stack of three layers
  // in HLO, "as given <-> rerolled as scan": B is one while over a stacked
  // weight, bit-identical when run; the offload and sharding sections say
  // whether they were analysed.
  const layer = (n, x) => `  w${n} = f32[8,8] parameter(${n + 1}), metadata={op_name="layers.${n}/linear"}\n` +
    `  d${n} = f32[4,8] dot(${x}, w${n}), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="layers.${n}/linear"}\n` +
    `  t${n} = f32[4,8] tanh(d${n}), metadata={op_name="layers.${n}/act"}\n`;
  const stack = `HloModule stack\nENTRY main {\n  x = f32[4,8] parameter(0)\n${layer(0, 'x')}${layer(1, 't0')}${layer(2, 't1')}  ROOT y = f32[4,8] negate(t2)\n}\n`;
  await page.evaluate((t) => { window.hloscope.editor.text = t; }, stack);
  await page.selectOption('#mode', 'reroll');
  await page.click('#compile-btn');
  await compiled(page);
  await page.waitForSelector('[data-testid="whatif-scan"]');
  assert.match(await page.textContent('[data-testid="whatif-scan"]'), /bit-identical/, 'the reroll runs bit-identical');
  assert.match(await page.textContent('[data-testid="whatif-repeats"]'), /layers\.\*\s*3 × /, 'three layers found');
  for (const t of ['whatif-offload', 'whatif-sharding']) assert.ok(await page.$(`[data-testid="${t}"]`), `${t} is shown`);
  await page.waitForSelector('#pane-b .graph svg g.node');
  const rr = await page.evaluate(() => ({ a: window.hloscope.state.a, b: window.hloscope.state.b, S: window.hloscope.view.summaries }));
  assert.notEqual(rr.a, rr.b, 'B is the rerolled module, a result of its own');
  assert.ok(rr.S[rr.b].instructions.traced > 0 && rr.S[rr.b].entry_parameters === 2, 'x and one stacked weight');
  await shot(page, 'reroll-as-scan');
  // 17. HLO highlighting: the dump's opcodes, shapes, names and metadata are
  // marked as such in the editor (web/src/hlo.js).
  const metaHlo = 'HloModule m\n\nENTRY e {\n  p0 = f32[4,8]{1,0} parameter(0)\n' +
    '  ROOT %neg.1 = f32[4,8]{1,0} negate(p0), metadata={op_name="jit(f)/neg" source_line=3}\n}\n';
  await page.evaluate((t) => { window.hloscope.editor.text = t; }, metaHlo);
  await page.waitForSelector('.cm-content .hlo-opcode');
  const marks = await page.evaluate(() => Object.fromEntries(['opcode', 'shape', 'name', 'meta', 'keyword'].map((t) =>
    [t, [...document.querySelectorAll(`.cm-content .hlo-${t}`)].map((e) => e.textContent)])));
  assert.deepEqual(marks.opcode, ['parameter', 'negate'], `opcodes marked: ${JSON.stringify(marks)}`);
  assert.deepEqual(marks.shape, ['f32[4,8]{1,0}', 'f32[4,8]{1,0}'], 'shapes marked');
  assert.ok(marks.name.includes('p0') && marks.name.includes('%neg.1'), `names marked: ${marks.name}`);
  assert.deepEqual(marks.meta, ['metadata={op_name="jit(f)/neg" source_line=3}'], 'metadata marked');
  assert.ok(marks.keyword.includes('HloModule') && marks.keyword.includes('ENTRY') && marks.keyword.includes('ROOT'), 'keywords marked');
  await shot(page, 'hlo-highlighted');

  // 18. A dump pair dropped on the editor: hloscope's own traced and
  // optimized dumps of mlp, named as --xla_dump_to names them (the after
  // first, to show the names decide), side by side through /v1/compare.
  const dumpOf = (stage) => {
    const r = spawnSync(SERVER, ['compile', join(EXAMPLES, 'mlp.json'), '--stage', stage], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };
  const beforeText = dumpOf('traced'), afterText = dumpOf('optimized');
  const pairDrop = await page.evaluateHandle(([b, a]) => {
    const d = new DataTransfer();
    d.items.add(new File([a], 'module_0001.jit_mlp.after_optimizations.txt', { type: 'text/plain' }));
    d.items.add(new File([b], 'module_0001.jit_mlp.before_optimizations.txt', { type: 'text/plain' }));
    return d;
  }, [beforeText, afterText]);
  await page.dispatchEvent('#editor .cm-content', 'drop', { dataTransfer: pairDrop });
  await page.waitForSelector('#page-pair:not(.hidden) [data-testid="pair-table"]', { timeout: 60000 });
  assert.match(await page.textContent('[data-testid="pair-name-a"]'), /before_optimizations/, 'the before is A');
  const pairApi = await (await fetch(`${base}/v1/compare`, { method: 'POST', body: JSON.stringify({ a: { hlo: beforeText }, b: { hlo: afterText } }) })).json();
  const rowText = await page.evaluate(() => [...document.querySelectorAll('[data-testid="pair-table"] tr[data-metric="instructions_traced"] td')].map((t) => t.textContent));
  const insRow = pairApi.table.find((r) => r.metric === 'instructions_traced');
  assert.deepEqual(rowText.slice(1, 3), [insRow.a, insRow.b].map((n) => n.toLocaleString('en-US')), 'the table shows the API\'s figures');
  const counts = await page.textContent('[data-testid="pair-counts"]');
  assert.ok(counts.includes(`${pairApi.diff_traced.counts.removed} only in A`) && pairApi.diff_traced.counts.removed > 0, `the diff counts are the API's: ${counts}`);
  assert.match(await page.textContent('[data-testid="pair-opcodes"]'), /fusion/, 'the opcodes that changed (fusions after)');
  await page.waitForSelector('[data-testid="pair-graph-a"] svg g.node');
  await page.waitForSelector('[data-testid="pair-graph-b"] svg g.node');
  // mlp's layers are drawn collapsed: a layer the passes rewrote (another
  // structural fingerprint) is marked changed; the input x is the same.
  const pairMarks = await page.evaluate(() => Object.fromEntries(['a', 'b'].map((s) => [s,
    [...document.querySelectorAll(`[data-testid="pair-graph-${s}"] g.node`)].map((g) => [g.id, g.getAttribute('class')])])));
  const pairMarked = (s) => pairMarks[s].filter(([, c]) => /diff-/.test(c)).map(([id]) => id);
  assert.ok(pairMarked('a').some((id) => id.startsWith('layer:')) && pairMarked('b').some((id) => id.startsWith('layer:')),
    `rewritten layers marked on both sides: ${JSON.stringify(pairMarks)}`);
  assert.ok(!pairMarked('a').includes('x') && pairMarks.a.some(([id]) => id === 'x'), 'the unchanged input is not marked');
  const pairBox = await page.evaluate(() => document.querySelector('[data-testid="pair-graph-a"]').getBoundingClientRect().toJSON());
  assert.ok(pairBox.top < 720 / 2 && pairBox.height >= 200, `the pair's graphs are in view at 1280x720: ${JSON.stringify(pairBox)}`);
  await page.waitForTimeout(300);
  await shot(page, 'dump-pair-before-after');
  // An error names its side, at its line and column.
  const brokenAfter = afterText.replace(/ROOT (\S+) = /, 'ROOT $1 = = ');
  await page.fill('[data-testid="pair-b"]', brokenAfter);
  await page.click('[data-testid="pair-compare"]');
  await page.waitForSelector('[data-testid="pair-error"]:not(.hidden)');
  const pairErr = (await (await fetch(`${base}/v1/compare`, { method: 'POST', body: JSON.stringify({ a: { hlo: beforeText }, b: { hlo: brokenAfter } }) })).json()).error;
  assert.equal(pairErr.path, '/b/hlo');
  assert.equal(await page.textContent('[data-testid="pair-error-where"]'), `B, line ${pairErr.line}, column ${pairErr.column}`);
  await shot(page, 'dump-pair-error');

  assert.deepEqual(errors.filter((e) => !/status of 4\d\d/.test(e)), [], 'no page errors');
  log(`ok: ${step} screenshots in ${OUT}`);
}

main().then(async () => { await browser?.close(); await stopServer(); rmSync(tmp, { recursive: true, force: true }); process.exit(0); },
  async (e) => { console.error(e); console.error('page errors:', errors); if (page) await page.screenshot({ path: join(OUT, 'failure.png') }).catch(() => {}); await browser?.close().catch(() => {}); await stopServer(); rmSync(tmp, { recursive: true, force: true }); process.exit(1); });
