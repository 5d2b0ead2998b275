// Browser test of "colour by" (issue 14 item 4, web/src/overlay.js): the
// select adds ?overlay= to both panes' graph requests, the drawing carries
// the server's legend and the cost model's colours, the choice is in the URL
// hash and survives a reload; memory space paints the offload example's
// host buffers (S(5)) in their own colour.
//   node tests/overlay.mjs --server build/hloscope --examples examples \
//        --web web/dist --out build/web-artefacts --chromium /usr/bin/chromium
import assert from 'node:assert/strict';
import { Harness, options, idle, pick, compile } from './harness.mjs';

const h = new Harness(options(process.argv.slice(2)), 'overlay');
const log = (...m) => console.log('[web]', ...m);
let page;

// What the panes show: their legend's texts and node fills, and the
// overlay their graph.json says it was drawn with.
const shown = (p) => p.evaluate(() => Object.fromEntries(['a', 'b'].map((s) => {
  const pane = window.hloscope.panes[s];
  const legend = pane.svg && pane.svg.querySelector('g.legend[id="legend:overlay"]');
  const fills = [...pane.svg.querySelectorAll('g.node polygon')].map((x) => x.getAttribute('fill'));
  return [s, { legend: legend ? legend.textContent : null, fills,
    overlay: pane.data.overlay, nodes: pane.data.nodes.map((n) => ({ id: n.id, fill: n.fill, space: n.memory_space })) }];
})));

async function main() {
  await h.start();
  log('server', h.base);
  page = await h.browser('chromium-1280', { width: 1280, height: 720 });
  const requests = [];
  page.on('request', (r) => { if (/\/graph\.(svg|json)/.test(r.url())) requests.push(r.url()); });
  await page.goto(`${h.base}/`);
  await page.waitForSelector('body[data-ready="1"]');
  await pick(page, 'decoder_50x256', 'decoder-50x256');
  await compile(page);
  assert.equal(await page.inputValue('[data-testid="overlay"]'), '', 'none by default');
  let s = await shown(page);
  assert.equal(s.a.legend, null, 'no legend without an overlay');

  // 1. FLOPs: both panes ask for it, draw the legend and colour the hottest node darkest.
  requests.length = 0;
  await page.selectOption('[data-testid="overlay"]', 'flops');
  await idle(page);
  await page.waitForSelector('#pane-b g.legend[id="legend:overlay"]');
  assert.ok(requests.length >= 4 && requests.every((u) => u.includes('overlay=flops')), `graph requests carry overlay=flops: ${requests}`);
  s = await shown(page);
  for (const side of ['a', 'b']) {
    assert.equal(s[side].overlay.kind, 'flops', `${side}: graph.json is the flops view`);
    assert.match(s[side].legend, /GFLOP/, `${side}: the legend is in GFLOP`);
    assert.ok(s[side].fills.includes('#800026'), `${side}: the largest node is dark red`);
  }
  assert.match(await page.evaluate(() => location.hash), /overlay=flops/, 'the hash keeps the overlay');
  await h.shot(page, 'flops');

  // 2. A reload keeps it.
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  await page.waitForSelector('#pane-b g.legend[id="legend:overlay"]', { timeout: 120000 });
  assert.equal(await page.inputValue('[data-testid="overlay"]'), 'flops', 'the select says flops after a reload');

  // 3. Memory space on the offload example: host nodes in the host colour.
  await pick(page, 'graph_offload', 'graph-offload');
  await page.selectOption('[data-testid="overlay"]', 'memory_space');
  await compile(page);
  await page.waitForSelector('#pane-b g.legend[id="legend:overlay"]');
  s = await shown(page);
  const host = s.b.nodes.filter((n) => n.space !== 'device');
  assert.ok(host.length > 0, 'the offloaded activations are not on the device');
  assert.ok(host.every((n) => n.fill === '#d81b60' || n.fill === '#f8bbd0'), 'host (or mixed) nodes have their colours');
  assert.ok(s.b.fills.includes('#d81b60') || s.b.fills.includes('#f8bbd0'), 'and the drawing uses them');
  assert.match(s.b.legend, /host S\(5\)/, 'the legend names host memory');
  await h.shot(page, 'memory-space');

  // 4. Back to none: category colours, no legend, no overlay in the hash.
  await page.selectOption('[data-testid="overlay"]', '');
  await idle(page);
  await page.waitForFunction(() => !document.querySelector('#pane-b g.legend[id="legend:overlay"]'));
  assert.doesNotMatch(await page.evaluate(() => location.hash), /overlay=/, 'none leaves the hash');
  assert.deepEqual(h.errors, [], 'no page errors');
}

main().then(async () => { await h.stop(); process.exit(0); },
  async (e) => { console.error(e); console.error('page errors:', h.errors); if (page) await h.shot(page, 'failure').catch(() => {}); await h.stop(); process.exit(1); });
