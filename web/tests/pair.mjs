// Browser test of the Dump pair tab's folder and link (issue 17 items 2 and
// 1): a --xla_dump_to folder opened (<input webkitdirectory>) or dropped (on
// the editor) compares its largest module's before/after dumps, the menu
// picks another module; the link of a comparison, opened in a browser of its
// own, shows the sender's two sources and results.
//   node tests/pair.mjs --server build/hloscope --examples examples --web web/dist --out build/web-artefacts
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { Harness, options } from './harness.mjs';

const opt = options(process.argv.slice(2));
const h = new Harness(opt, 'pair');
const log = (...m) => console.log('[web.pair]', ...m);
const SHARED = new URL('../../../shared/hlo-samples/', import.meta.url).pathname;
let page;

const api = async (path, body) => (await fetch(`${h.base}${path}`, body ? { method: 'POST', body: JSON.stringify(body) } : {})).json();

function dumpOf(file, stage) {
  const r = spawnSync(opt.server, ['compile', file, '--stage', stage], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

// A folder as --xla_dump_to leaves it: two modules with both dumps (XLA's
// GPU backend prefixes the after's suffix; torch_xla's module names hold a
// dot), and files that are no pair: a buffer assignment, a per-pass dump, a
// module compiled but not optimized. Module 1 is XLA's own test snippet.
function dumpFolder(dir) {
  mkdirSync(dir, { recursive: true });
  const mlp = join(opt.examples, 'mlp.json');
  const snippet = join(SHARED, 'while_with_known_trip_count.hlo');
  const files = {
    'module_0000.jit_mlp.before_optimizations.txt': dumpOf(mlp, 'traced'),
    'module_0000.jit_mlp.sm_8.0_gpu_after_optimizations.txt': dumpOf(mlp, 'optimized'),
    'module_0000.jit_mlp.sm_8.0_gpu_after_optimizations-buffer-assignment.txt': 'BufferAssignment:\nallocation 0: size 64\n',
    'module_0000.jit_mlp.0003.simplification.after_algsimp.before_dce.txt': dumpOf(mlp, 'traced'),
    'module_0001.SyncTensorsGraph.12.before_optimizations.txt': readFileSync(snippet, 'utf8'),
    'module_0001.SyncTensorsGraph.12.sm_8.0_gpu_after_optimizations.txt': dumpOf(snippet, 'optimized'),
    'module_0002.jit_convert.before_optimizations.txt': readFileSync(join(SHARED, 'add.hlo'), 'utf8'),
  };
  for (const [n, t] of Object.entries(files)) writeFileSync(join(dir, n), t);
  return files;
}

const pairState = (p) => p.evaluate(() => ({
  a: document.querySelector('[data-testid="pair-a"]').value, b: document.querySelector('[data-testid="pair-b"]').value,
  names: ['a', 'b'].map((s) => document.querySelector(`[data-testid="pair-name-${s}"]`).textContent),
  modules: [...document.querySelectorAll('[data-testid="pair-module"] option')].map((o) => o.textContent),
  picked: document.querySelector('[data-testid="pair-module"]').selectedOptions[0]?.textContent,
  menu: !document.querySelector('[data-testid="pair-module-label"]').classList.contains('hidden'),
  row: [...document.querySelectorAll('[data-testid="pair-table"] tr[data-metric="instructions_traced"] td')].map((t) => t.textContent),
  pair: window.hloscope.state.pair, url: location.href,
  stale: document.querySelector('#page-pair').classList.contains('stale'),
}));

// The comparison shown is the API's for these two texts: same id, same figures.
async function checkShown(p, a, b, query = '') {
  const r = await api(`/v1/compare${query}`, { a: { hlo: a }, b: { hlo: b } });
  assert.ok(r.id, JSON.stringify(r).slice(0, 300));
  await p.waitForFunction((id) => window.hloscope.state.pair === id, r.id, { timeout: 60000 });
  await p.waitForSelector('[data-testid="pair-graph-a"] svg g.node', { timeout: 60000 });
  await p.waitForSelector('[data-testid="pair-graph-b"] svg g.node', { timeout: 60000 });
  const s = await pairState(p);
  const ins = r.table.find((x) => x.metric === 'instructions_traced');
  assert.deepEqual(s.row.slice(1, 3), [ins.a, ins.b].map((n) => n.toLocaleString('en-US')), 'the table is the API\'s');
  return { r, s };
}

async function folderOpened(dir, files) {
  // 1. <input webkitdirectory>: the whole folder.
  await page.click('[data-testid="tab-pair"]');
  await page.setInputFiles('[data-testid="pair-folder"]', dir);
  await page.waitForSelector('[data-testid="pair-table"]', { timeout: 60000 });
  const size = (n) => statSync(join(dir, n)).size;
  const largest = size('module_0000.jit_mlp.before_optimizations.txt') > size('module_0001.SyncTensorsGraph.12.before_optimizations.txt') ? 0 : 1;
  const want = [['module_0000.jit_mlp.before_optimizations.txt', 'module_0000.jit_mlp.sm_8.0_gpu_after_optimizations.txt'],
    ['module_0001.SyncTensorsGraph.12.before_optimizations.txt', 'module_0001.SyncTensorsGraph.12.sm_8.0_gpu_after_optimizations.txt']];
  let { s } = await checkShown(page, files[want[largest][0]], files[want[largest][1]]);
  assert.ok(s.menu, 'a menu of the modules');
  assert.deepEqual(s.modules.map((m) => m.split(' (')[0]), ['module_0000 · jit_mlp', 'module_0001 · SyncTensorsGraph.12'],
    'the modules with both dumps, by id (module_0002 has no after, the pass dump is no module)');
  assert.deepEqual(s.names, want[largest], 'the largest module, its before in A');
  await h.shot(page, 'folder-opened');
  // 2. The menu picks the other module.
  const other = 1 - largest;
  await page.selectOption('[data-testid="pair-module"]', String(other));
  ({ s } = await checkShown(page, files[want[other][0]], files[want[other][1]]));
  assert.deepEqual(s.names, want[other], 'the module picked');
  log('folder: modules', s.modules.join(' | '));
  await h.shot(page, 'folder-module-picked');
}

// 3. A folder dragged onto the editor. A drop's folder is only reachable
// through DataTransferItem.webkitGetAsEntry (a test cannot put a folder in
// a DataTransfer), so the entries here are the File System API's shape,
// holding the real files: a subfolder, and readEntries answering in
// batches of two as Chromium's does in batches of 100.
async function folderDropped(files) {
  await page.click('[data-testid="tab-compare"]');
  await page.evaluate((fs) => {
    const file = (name) => ({ isFile: true, isDirectory: false, name, file: (ok) => ok(new File([fs[name]], name, { type: 'text/plain' })) });
    const dir = (name, children) => ({
      isFile: false, isDirectory: true, name,
      createReader: () => { let k = 0; return { readEntries: (ok) => setTimeout(() => { ok(children.slice(k, k + 2)); k += 2; }, 0) }; },
    });
    const names = Object.keys(fs);
    const top = dir('xla_dump', [...names.slice(0, 3).map(file), dir('more', names.slice(3).map(file))]);
    const ev = new DragEvent('drop', { bubbles: true, cancelable: true });
    Object.defineProperty(ev, 'dataTransfer', { value: { files: [], items: [{ kind: 'file', webkitGetAsEntry: () => top }] } });
    document.querySelector('#editor .cm-content').dispatchEvent(ev);
  }, files);
  await page.waitForSelector('#page-pair:not(.hidden) [data-testid="pair-table"]', { timeout: 60000 });
  const s = await pairState(page);
  assert.equal(s.modules.length, 2, `the dropped folder's two modules: ${s.modules}`);
  const m = /^module_\d+ · (\S+)/.exec(s.picked);
  assert.ok(m && s.names[0].includes(m[1]) && /before_optimizations/.test(s.names[0]) && /after_optimizations/.test(s.names[1]), `the picked module's pair: ${JSON.stringify(s)}`);
  await checkShown(page, files[s.names[0]], files[s.names[1]]);
  await h.shot(page, 'folder-dropped-on-editor');
}

// 4. The link: a recipient with a browser of their own (and their own pair
// on the page) sees the sender's two texts and the same comparison.
async function linkOpened(files) {
  const sent = await pairState(page);
  assert.ok(sent.pair && sent.url.includes(`pair=${encodeURIComponent(sent.pair)}`), `the URL holds the comparison: ${sent.url}`);
  const other = await h.browser('recipient', { width: 1280, height: 720 });
  await other.goto(`${h.base}/`);
  await other.waitForSelector('body[data-ready="1"]');
  await other.click('[data-testid="tab-pair"]');
  const mine = ['module_0000.jit_mlp.before_optimizations.txt', 'module_0000.jit_mlp.sm_8.0_gpu_after_optimizations.txt'];
  await other.fill('[data-testid="pair-a"]', files[mine[0]]);
  await other.fill('[data-testid="pair-b"]', files[mine[1]]);
  await other.goto(sent.url);
  await other.reload();
  await other.waitForSelector('body[data-ready="1"]');
  const { s } = await checkShown(other, sent.a, sent.b);
  assert.equal(s.a, sent.a, 'A is the sender\'s text, exactly');
  assert.equal(s.b, sent.b, 'B is the sender\'s text, exactly');
  assert.equal(s.pair, sent.pair, 'the same comparison');
  assert.equal(s.stale, false, 'texts and result agree');
  assert.ok(await other.isVisible('#page-pair [data-testid="pair-graph-a"]'));
  const g = await other.evaluate(() => document.querySelector('[data-testid="pair-graph-a"]').getBoundingClientRect().toJSON());
  assert.ok(g.top < 720 / 2 && g.height >= 200, `the graphs are in view at 1280x720: ${JSON.stringify(g)}`);
  await h.shot(other, 'link-in-a-fresh-browser');
  // An edit of a side marks the result stale; undoing it clears the mark.
  await other.fill('[data-testid="pair-b"]', `${sent.b}\n`);
  assert.equal((await pairState(other)).stale, true, 'an edit marks the result stale');
  assert.ok(await other.isVisible('[data-testid="pair-stale"]'), 'and says so');
  await h.shot(other, 'link-edited-stale');
  await other.fill('[data-testid="pair-b"]', sent.b);
  assert.equal((await pairState(other)).stale, false, 'undoing the edit clears it');
  // The source route holds what the link reopened.
  const src = await api(`/v1/results/${sent.pair}/source`);
  assert.deepEqual([src.text, src.text_b], [sent.a, sent.b]);
}

async function main() {
  await h.start();
  log('server', h.base);
  const dir = join(h.tmp, 'xla_dump');
  const files = dumpFolder(dir);
  page = await h.browser('sender', { width: 1280, height: 720 });
  await page.goto(`${h.base}/`);
  await page.waitForSelector('body[data-ready="1"]');
  await folderOpened(dir, files);
  await folderDropped(files);
  await linkOpened(files);
  assert.deepEqual(h.errors, [], 'no page errors');
}

main().then(async () => { await h.stop(); process.exit(0); },
  async (e) => { console.error(e); console.error('page errors:', h.errors); if (page) await h.shot(page, 'failure').catch(() => {}); await h.stop(); process.exit(1); });
