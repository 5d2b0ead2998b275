// Browser test of the memory view and the graph navigation (issue 17 item 4,
// issue 14's explorer part): the table of buffers live at the peak against
// the API's memory.json, buffer <-> node selection, zoom and range select,
// round byte ticks, resizable lanes readable in the training compare, the
// training step's peak beside the training loss, the outline of the group
// tree, search over every instruction (the API's /search) that reveals a
// hit inside a closed group, and panes linked by node, not by zoom ratio.
//   node tests/memory.mjs --server build/hloscope --examples examples \
//        --web web/dist --out build/web-artefacts --chromium /usr/bin/chromium
import assert from 'node:assert/strict';
import { Harness, options, idle, pick, compile, inView } from './harness.mjs';
import { bytes } from '../src/format.js';

const h = new Harness(options(process.argv.slice(2)), 'memory');
const log = (...m) => console.log('[web]', ...m);
let page;

const api = async (path, init) => {
  const r = await fetch(`${h.base}${path}`, init);
  const body = await r.json();
  assert.ok(r.ok, `${path}: ${JSON.stringify(body).slice(0, 300)}`);
  return body;
};
const example = async (name) => (await fetch(`${h.base}/v1/examples/${name}`)).text();

// The peak table of one pane, as shown.
const table = (p, side) => p.evaluate((s) => {
  const t = window.hloscope.timelines[s];
  return { rows: t.rows.map((b) => ({ id: b.id, name: b.name, bytes: b.bytes, space: b.memory_space })),
    shown: document.querySelectorAll(`#pane-${s} [data-testid="peak-table"] tbody tr`).length,
    title: document.querySelector(`#pane-${s} .tl-table-title`).textContent };
}, side);

async function peakTable(p) {
  // 1. The seed, unrolled vs scan: each pane lists the buffers live at its
  // peak, all of them (not the ten largest), largest first, as memory.json says.
  await p.click('#pane-a [data-testid="peak-table-toggle"]');
  await p.waitForSelector('#pane-a [data-testid="peak-table"]:not(.hidden) tbody tr');
  const ids = await p.evaluate(() => [window.hloscope.state.a, window.hloscope.state.b]);
  for (const [k, side] of [[0, 'a'], [1, 'b']]) {
    const mem = await api(`/v1/results/${ids[k]}/memory.json`);
    const want = ['device', 'host'].flatMap((s) => (mem.peak[s].live || []).map((i) => mem.buffers[i]));
    const t = await table(p, side);
    assert.equal(t.shown, want.length, `${side}: one row per buffer live at the peak`);
    assert.deepEqual(t.rows.map((b) => b.id).sort(), want.map((b) => b.id).sort(), `${side}: the rows are memory.json's peak.live`);
    const dev = t.rows.filter((b) => b.space === 'device');
    assert.deepEqual(dev.slice(0, 10).map((b) => b.name), mem.peak.device.largest_live.map((b) => b.name), `${side}: largest first`);
    const held = dev.reduce((s, b) => s + b.bytes, 0);
    assert.ok(held <= mem.peak.device.bytes && held > 0.9 * mem.peak.device.bytes, `${side}: the rows hold the peak (${held} of ${mem.peak.device.bytes})`);
    assert.ok(t.title.includes(bytes(mem.peak.device.bytes)), `${side}: the title says the peak: ${t.title}`);
  }
  // Sorting by a column: op_name ascending, then size again.
  await p.click('#pane-a [data-testid="peak-table"] th[data-key="bytes"]');
  let sizes = (await table(p, 'a')).rows.map((b) => b.bytes);
  assert.deepEqual(sizes, sizes.slice().sort((x, y) => x - y), 'sorted by size, ascending after a click');
  await p.click('#pane-a [data-testid="peak-table"] th[data-key="bytes"]');
  sizes = (await table(p, 'a')).rows.map((b) => b.bytes);
  assert.deepEqual(sizes, sizes.slice().sort((x, y) => y - x), 'and descending after another');
  await h.shot(p, 'peak-table');

  // 2. A row clicked selects its node; the node selected marks its buffer.
  const row = await p.evaluate(() => {
    const t = window.hloscope.timelines.a;
    const k = t.rows.findIndex((b) => b.kind !== 'argument' && window.hloscope.panes.a.nodeFor(b.instruction, b.op_name));
    return { k, b: t.rows[k], node: window.hloscope.panes.a.nodeFor(t.rows[k].instruction, t.rows[k].op_name) };
  });
  await p.click(`#pane-a [data-testid="peak-table"] tbody tr[data-row="${row.k}"]`);
  await p.waitForSelector('#details:not(.hidden)');
  assert.equal(await p.evaluate(() => window.hloscope.state.sel), row.node, `row ${row.b.name} selects node ${row.node}`);
  assert.equal(await p.locator(`#pane-a g.node.selected[id="${row.node}"]`).count(), 1);
  assert.ok(Number(await p.getAttribute('#pane-a .timeline', 'data-selected')) >= 1, 'its buffers are marked');
  assert.equal(await p.locator(`#pane-a [data-testid="peak-table"] tr.selected[data-row="${row.k}"]`).count(), 1, 'and its row');
  await h.shot(p, 'row-selects-node');
  // Node -> buffer: a node of the graph clicked marks its rows.
  const other = await p.evaluate((taken) => {
    const t = window.hloscope.timelines.a, pa = window.hloscope.panes.a;
    const b = t.rows.find((x) => pa.el(x.instruction) && x.instruction !== taken);
    return b && b.instruction;
  }, row.b.instruction);
  if (other) {
    await inView(p, 'a', other);
    await p.locator(`#pane-a g.node[id="${other}"]`).click();
    await p.waitForFunction((id) => window.hloscope.state.sel === id, other);
    const marked = await p.evaluate(() => [...document.querySelectorAll('#pane-a [data-testid="peak-table"] tr.selected')]
      .map((tr) => window.hloscope.timelines.a.rows[Number(tr.dataset.row)].instruction));
    assert.ok(marked.length >= 1 && marked.every((x) => x === other), `node ${other} marks its rows: ${marked}`);
  }

  // 3. A box clicked in a lane selects its node (the tallest box with a
  // node: most boxes of the unrolled seed are 2 px high).
  const box = await p.evaluate(() => {
    const pl = window.hloscope.timelines.b.plots[0], pb = window.hloscope.panes.b;
    const b = pl.bufs.filter((x) => pb.nodeFor(x.instruction, x.op_name)).sort((x, y) => y.bytes - x.bytes)[0];
    const r = pl.u.over.getBoundingClientRect();
    return { x: r.left + pl.u.valToPos(b.start + (b.end - b.start + 1) / 2, 'x'), y: r.top + pl.u.valToPos(b._off + b.bytes / 2, 'y'), node: pb.nodeFor(b.instruction, b.op_name) };
  });
  await p.mouse.click(box.x, box.y);
  await p.waitForFunction((id) => window.hloscope.state.sel === id && window.hloscope.state.side === 'b', box.node);
  await h.shot(p, 'box-selects-node');
}

async function zoomAndTicks(p) {
  // 4. Byte ticks fall on round values in the explorer's units.
  const ticks = await p.evaluate(() => window.hloscope.timelines.a.plots.map((pl) => ({ splits: pl.u.axes[1]._splits, values: pl.u.axes[1]._values })));
  for (const t of ticks) {
    assert.ok(t.splits.length >= 2, `ticks: ${t.values}`);
    const step = t.splits[1] - t.splits[0];
    assert.ok(t.splits.every((v, k) => Math.abs(v - t.splits[0] - k * step) < 1e-6 * step), `evenly spaced: ${t.splits}`);
    for (const v of t.values) {
      const m = /^(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB)$/.exec(v);
      assert.ok(m, `tick "${v}" in the explorer's units`);
      assert.ok(Number.isInteger(Number(m[1]) * 4), `tick "${v}" is round (a quarter of a unit at most)`);
    }
  }
  log('y ticks', ticks.map((t) => t.values.join(', ')).join(' | '));
  // 5. Drag across a lane: every lane zooms to that range, the table lists
  // the buffers live at its highest point; reset shows the whole program.
  const lane = await p.evaluate(() => { const r = window.hloscope.timelines.a.plots[0].u.over.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  const full = await p.evaluate(() => window.hloscope.timelines.a.plots[0].u.scales.x);
  await p.mouse.move(lane.x + lane.w * 0.2, lane.y + lane.h * 0.5);
  await p.mouse.down();
  await p.mouse.move(lane.x + lane.w * 0.45, lane.y + lane.h * 0.5, { steps: 6 });
  await p.mouse.up();
  await p.waitForFunction(() => document.querySelector('#pane-a .timeline').dataset.range);
  const z = await p.evaluate(() => {
    const t = window.hloscope.timelines.a;
    return { range: t.range, scales: t.plots.map((pl) => [pl.u.scales.x.min, pl.u.scales.x.max]), rows: t.rows.length, at: t.rangePeak(),
      title: document.querySelector('#pane-a .tl-table-title').textContent };
  });
  assert.ok(z.range[0] > full.min && z.range[1] < full.max, `zoomed into ${z.range} of ${full.min}–${full.max}`);
  for (const s of z.scales) assert.deepEqual(s, [z.range[0], z.range[1] + 1], 'every lane shows the range');
  assert.match(z.title, /highest point of positions/);
  assert.ok(z.at.at >= z.range[0] && z.at.at <= z.range[1] && z.rows === z.at.rows.length, 'the table lists the range\'s highest point');
  await h.shot(p, 'range-zoom');
  await p.click('#pane-a [data-testid="memory-reset"]');
  assert.deepEqual(await p.evaluate(() => { const s = window.hloscope.timelines.a.plots[0].u.scales.x; return [s.min, s.max]; }), [full.min, full.max]);
}

async function trainingLanes(p, minLane) {
  // 6. train_offload's training step, residuals save (does not fit) vs
  // offload: B's device and host lanes are readable and resizable; the
  // table lists B's host buffers too.
  await pick(p, 'train_offload', 'train-offload');
  await p.selectOption('#mode', 'residuals');
  await idle(p);
  if (!(await p.evaluate(() => window.hloscope.view.failA && window.hloscope.state.b))) await p.click('#compile-btn');
  await p.waitForFunction(() => window.hloscope.view.failA && window.hloscope.state.b, null, { timeout: 90000 });
  await idle(p, 90000);
  await p.waitForSelector('#pane-b [data-testid="peak-host"]');
  const lanes = await p.evaluate(() => window.hloscope.timelines.b.plots.map((pl) => ({ space: pl.space, h: pl.u.over.getBoundingClientRect().height })));
  assert.deepEqual(lanes.map((l) => l.space), ['device', 'host']);
  const geo = await p.evaluate(() => ({ g: document.querySelector('#pane-b .graph').getBoundingClientRect().height, H: innerHeight }));
  log('training compare lanes', lanes.map((l) => `${l.space} ${Math.round(l.h)} px`).join(', '), `graph ${Math.round(geo.g)} px of ${geo.H}`);
  for (const l of lanes) assert.ok(l.h >= minLane, `${l.space} lane ${l.h} px high (at least ${minLane})`);
  // A projector: the lanes stand side by side and the graph keeps half the height.
  if (geo.H <= 720) assert.ok(geo.g >= geo.H / 2, `graph ${geo.g} px of ${geo.H} beside the two lanes`);
  const B = await p.evaluate(() => window.hloscope.state.b);
  const mem = await api(`/v1/results/${B}/memory.json`);
  if (await p.isHidden('#pane-b [data-testid="peak-table"]')) await p.click('#pane-b [data-testid="peak-table-toggle"]');
  await p.waitForSelector('#pane-b [data-testid="peak-table"] tbody tr');
  const t = await table(p, 'b');
  assert.equal(t.rows.filter((b) => b.space === 'host').length, mem.peak.host.live.length, 'B\'s host buffers at the host peak');
  assert.ok(mem.peak.host.live.length > 0, 'offload keeps residuals in host memory');
  await h.shot(p, 'train-step-lanes');
  await oomReportMatchesPeakTable(p);
  // Dragging the top edge up gives the lanes room (on a projector the table
  // stands in their place: closed first).
  if (await p.isVisible('#pane-b .timeline.table-only')) await p.click('#pane-b [data-testid="peak-table-toggle"]');
  await p.locator('#pane-b [data-testid="memory-resize"]').scrollIntoViewIfNeeded();
  const grip = await p.locator('#pane-b [data-testid="memory-resize"]').boundingBox();
  await p.mouse.move(grip.x + grip.width / 2, grip.y + grip.height / 2);
  await p.mouse.down();
  await p.mouse.move(grip.x + grip.width / 2, grip.y - 250, { steps: 5 });
  await p.mouse.up();
  await p.waitForTimeout(300);
  const after = await p.evaluate(() => window.hloscope.timelines.b.plots[0].u.over.getBoundingClientRect().height);
  assert.ok(after > lanes[0].h + 20, `the device lane grew from ${lanes[0].h} to ${after} px`);
  await h.shot(p, 'train-step-lanes-resized');
  await p.evaluate(() => localStorage.removeItem('hloscope.memoryHeight'));
  await p.selectOption('#mode', 'loop');
  await idle(p, 90000);
}

// 6b. The out-of-memory report of A (residuals save) lists the largest
// buffers at the peak: the same buffers, names and sizes, as A's peak table
// (A's out-of-memory result), the largest first, and both are memory.json's.
async function oomReportMatchesPeakTable(p) {
  await p.waitForSelector('#oom [data-testid="oom-largest"] tbody tr', { state: 'attached', timeout: 60000 });
  const report = await p.evaluate(() => [...document.querySelectorAll('#oom [data-testid="oom-largest"] tbody tr')]
    .map((tr) => ({ name: tr.cells[1].textContent, size: tr.cells[2].textContent })));
  if (await p.isHidden('#pane-a [data-testid="peak-table"]')) await p.click('#pane-a [data-testid="peak-table-toggle"]');
  await p.waitForSelector('#pane-a [data-testid="peak-table"] tbody tr');
  const A = await p.evaluate(() => window.hloscope.view.failA.id);
  const mem = await api(`/v1/results/${A}/memory.json`);
  const t = await table(p, 'a');
  const dev = t.rows.filter((b) => b.space === 'device');
  // Equal sizes may sort either way: each listed buffer is a row of the
  // table with its size, and the sizes are the table's largest.
  const rows = new Map(dev.map((b) => [b.name, bytes(b.bytes)]));
  for (const r of report) assert.equal(rows.get(r.name), r.size, `${r.name} (${r.size}) is a row of A's peak table with its size`);
  assert.deepEqual(report.map((r) => r.size), dev.slice(0, report.length).map((b) => bytes(b.bytes)), 'the table\'s largest buffers');
  assert.deepEqual(report.map((r) => r.name), mem.peak.device.largest_live.slice(0, report.length).map((b) => b.name), 'memory.json\'s largest_live');
  assert.ok(report.length >= 3, `the report lists buffers: ${report.length}`);
  log('OOM report: the', report.length, 'largest buffers at A\'s peak, as its peak table');
  await h.shot(p, 'oom-report-and-peak-table');
}

async function runTrainPeak(p) {
  // 7. Run of a model with a train section: the training step's peak sits
  // beside the losses, the step's, not the forward pass's.
  await pick(p, 'mlp', '"mlp');
  await p.click('#run-btn');
  await idle(p);
  await p.waitForSelector('[data-testid="train-peak"]');
  const r = await api('/v1/run', { method: 'POST', body: await example('mlp') });
  const text = await p.textContent('[data-testid="train-peak"]');
  assert.ok(text.includes(bytes(r.train.last_step.peak_device_bytes)), `train peak ${text} is the step's ${r.train.last_step.peak_device_bytes}`);
  assert.notEqual(r.train.last_step.peak_device_bytes, r.run.peak_device_bytes, 'the step peaks elsewhere than the forward pass');
  await h.shot(p, 'run-training-peak');
  await p.click('[data-tab="compare"]');
}

async function outlineAndSearch(p) {
  // 8. The outline of the seed unrolled (64 layers): the group tree
  // graph.json carries; a closed layer clicked opens (?expand=) and is
  // revealed. (A decoder layer's view can take over the 10 s layout
  // deadline on a loaded machine: the seed's layers lay out in 0.2 s.)
  await pick(p, 'seed_64_linear', 'seed');
  await compile(p);
  if (await p.isHidden('#outline')) await p.click('[data-testid="outline-toggle"]');
  await p.waitForSelector('#outline [data-testid="outline-row"]');
  await p.click('[data-testid="outline-side-a"]');
  await p.waitForSelector('#outline[data-side="a"]');
  const A = await p.evaluate(() => window.hloscope.state.a);
  const g = await api(`/v1/results/${A}/graph.json`);
  assert.equal(Number(await p.getAttribute('#outline', 'data-groups')), g.groups.length, 'the outline holds graph.json\'s groups');
  const closed = g.groups.find((x) => !x.open && x.kind === 'op_name' && x.path === 'layers.7');
  assert.ok(closed, 'layers.7 is closed by default');
  await p.locator(`#outline li[data-path="${closed.path}"] > .ol-row`).click();
  await p.waitForFunction((path) => window.hloscope.state.expand.split(',').includes(path), closed.path);
  await idle(p);
  const opened = await p.evaluate((path) => ({ n: [...window.hloscope.panes.a.nodes.values()].filter((n) => n.opcode !== 'layer' && n.group === path).length,
    box: window.hloscope.panes.a.nodes.has(`layer:${path}`) }), closed.path);
  assert.ok(opened.n >= 3 && !opened.box, `layers.7's instructions are drawn (${opened.n}), its box is gone`);
  assert.equal(await p.locator(`#outline li.current[data-path="${closed.path}"]`).count(), 1, 'and marked in the outline');
  await h.shot(p, 'outline-opens-group');
  // 9. Search finds every instruction, drawn or not (the API's count: the
  // 64 dots hide in closed layers), and Enter reveals the first, opening its group.
  await p.click('#collapse-all');
  await idle(p);
  const q = 'dot';
  const all = await api(`/v1/results/${A}/search?q=${q}`);
  await p.fill('#search', q);
  await p.waitForFunction((n) => Number(document.querySelector('#search-count').dataset.count) === n, all.count);
  const drawn = await p.evaluate(() => document.querySelectorAll('#pane-a g.node.match').length);
  assert.ok(all.count > drawn, `search counts ${all.count} instructions, ${drawn} drawn`);
  assert.ok(await p.locator('#outline [data-testid="outline-hits"]').count() > 0, 'the outline counts hits per group');
  const hit = all.hits.find((x) => x.group && x.group !== '@main');
  assert.equal(hit, all.hits[0], 'the first hit lies in a group');
  await p.press('#search', 'Enter');
  await p.waitForFunction((name) => window.hloscope.state.sel && window.hloscope.panes.a.nodes.get(window.hloscope.state.sel)?.name === name, hit.name, { timeout: 60000 });
  assert.ok(await p.evaluate((path) => window.hloscope.state.expand.split(',').includes(path), hit.group), `its group ${hit.group} opened`);
  // In view once the panes have settled (the details column narrows them).
  await p.waitForFunction((id) => {
    const r = window.hloscope.panes.a.el(id).getBoundingClientRect(), s = document.querySelector('#pane-a > .graph').getBoundingClientRect();
    return r.left >= s.left && r.right <= s.right && r.top >= s.top && r.bottom <= s.bottom;
  }, hit.name, { timeout: 5000 }).catch(() => assert.fail(`${hit.name} is in view`));
  await h.shot(p, 'search-reveals-hidden-instruction');
  await p.fill('#search', '');
}

async function linkedPanes(p) {
  // 10. Pan & zoom together by node: zooming A never rescales B; B brings
  // the node at A's middle (or the group holding it) to its own middle.
  // The seed unrolled, traced vs optimized: both draw the 64 layers.
  await p.selectOption('#loop', 'unrolled');
  await p.selectOption('#mode', 'stage');
  await idle(p);
  await compile(p);
  await p.click('#collapse-all');
  await idle(p);
  assert.ok(await p.isChecked('#sync'));
  const zb = await p.evaluate(() => window.hloscope.panes.b.pz.getZoom());
  const ga = await p.locator('#pane-a > .graph').boundingBox();
  await p.mouse.move(ga.x + ga.width / 2, ga.y + ga.height / 3);
  for (let k = 0; k < 6; k++) { await p.mouse.wheel(0, -120); await p.waitForTimeout(50); }
  await p.waitForTimeout(300);
  const r = await p.evaluate(() => {
    const { a, b } = window.hloscope.panes;
    const id = a.centreNode(), n = a.nodes.get(id);
    const target = b.el(id) ? id : b.nodeFor(n.name, n.op_name);
    const t = b.el(target).getBoundingClientRect(), s = b.svg.getBoundingClientRect();
    return { za: a.pz.getZoom(), zb: b.pz.getZoom(), id, target,
      off: [t.left + t.width / 2 - (s.left + s.width / 2), t.top + t.height / 2 - (s.top + s.height / 2)] };
  });
  assert.ok(r.za > 1.5, `A zoomed in (${r.za})`);
  assert.equal(r.zb, zb, 'B\'s zoom did not change');
  assert.ok(r.target && Math.abs(r.off[0]) < 40 && Math.abs(r.off[1]) < 40, `B centres ${r.target} for A's ${r.id}: off by ${r.off}`);
  await h.shot(p, 'linked-by-node');
}

async function main() {
  await h.start();
  log('server', h.base);
  for (const [w, hgt, minLane] of [[1600, 1000, 80], [1280, 720, 50]]) {
    page = await h.browser(`chromium-${w}`, { width: w, height: hgt });
    await page.goto(`${h.base}/`);
    await page.waitForSelector('body[data-ready="1"]');
    await pick(page, 'seed_64_linear', 'seed');
    await compile(page);
    await page.waitForSelector('#pane-b [data-testid="peak-device"]');
    await h.shot(page, `seed-${w}x${hgt}`);
    // One lane fits in view under a graph of at least half the height.
    const geo = await page.evaluate(() => {
      const tl = document.querySelector('#pane-a .timeline').getBoundingClientRect();
      const lane = window.hloscope.timelines.a.plots[0].u.over.getBoundingClientRect();
      return { g: document.querySelector('#pane-a > .graph').getBoundingClientRect().height, tl: tl.bottom, lane: lane.height, laneBottom: lane.bottom, H: innerHeight };
    });
    log(`seed ${w}x${hgt}: graph ${Math.round(geo.g)} px, lane ${Math.round(geo.lane)} px`);
    if (hgt <= 720) assert.ok(geo.g >= geo.H / 2, `graph ${geo.g} px of ${geo.H}`);
    assert.ok(geo.tl <= geo.H && geo.laneBottom <= geo.tl + 1 && geo.lane >= minLane * 0.9, `the lane (${geo.lane} px) is in view`);
    if (w === 1600) {
      await peakTable(page);
      await zoomAndTicks(page);
    }
    await trainingLanes(page, minLane);
    if (w === 1600) {
      await runTrainPeak(page);
      await outlineAndSearch(page);
      await linkedPanes(page);
    } else {
      await pick(page, 'decoder_50x256', 'decoder-50x256');
      await compile(page);
      if (await page.isHidden('#outline')) await page.click('[data-testid="outline-toggle"]');
      if (await page.isHidden('#pane-a [data-testid="peak-table"]')) await page.click('#pane-a [data-testid="peak-table-toggle"]');
      await page.waitForSelector('#pane-a [data-testid="peak-table"] tbody tr');
      await page.waitForTimeout(300);
      // On a projector the table stands in the lanes' place: the graph keeps
      // half the screen and the table shows its column heads and three rows.
      const tableGeo = () => page.evaluate(() => {
        const tl = document.querySelector('#pane-a .timeline').getBoundingClientRect();
        const rows = [...document.querySelectorAll('#pane-a [data-testid="peak-table"] tbody tr')]
          .filter((tr) => { const r = tr.getBoundingClientRect(); return r.top >= tl.top && r.bottom <= tl.bottom + 1; });
        const lanes = document.querySelector('#pane-a .tl-lanes');
        return { g: document.querySelector('#pane-a > .graph').getBoundingClientRect().height, rows: rows.length,
          lanes: lanes.offsetHeight, bottom: tl.bottom, H: innerHeight };
      });
      let geo = await tableGeo();
      log(`decoder 1280x720 with the outline and the peak table: graph ${Math.round(geo.g)} px, ${geo.rows} rows in view`);
      assert.ok(geo.g >= geo.H / 2, `graph ${geo.g} px high at 1280x720 with the outline and the peak table open`);
      assert.ok(geo.rows >= 3 && geo.bottom <= geo.H, `the table's rows are in view: ${JSON.stringify(geo)}`);
      assert.equal(geo.lanes, 0, 'the lanes give the table their place');
      await h.shot(page, 'outline-and-table-1280x720');
      // The toggle brings the lanes back, the graph keeps its half.
      await page.click('#pane-a [data-testid="peak-table-toggle"]');
      await page.waitForTimeout(300);
      geo = await tableGeo();
      assert.ok(geo.lanes >= minLane && geo.g >= geo.H / 2, `lanes back under the graph: ${JSON.stringify(geo)}`);
    }
  }
  assert.deepEqual(h.errors, [], 'no page errors');
}

main().then(async () => { await h.stop(); process.exit(0); },
  async (e) => { console.error(e); console.error('page errors:', h.errors); if (page) await h.shot(page, 'failure').catch(() => {}); await h.stop(); process.exit(1); });
