// What the browser tests share: a live `hloscope serve` on an ephemeral
// loopback port with a temporary --data dir, Debian's chromium through
// playwright-core with a profile of its own, and numbered screenshots.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export function options(argv) {
  const args = Object.fromEntries(argv.reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
  const here = new URL('..', import.meta.url).pathname;
  return {
    server: resolve(args.server || join(here, '../build/hloscope')),
    examples: resolve(args.examples || join(here, '../examples')),
    web: resolve(args.web || join(here, 'dist')),
    out: resolve(args.out || join(here, '../build/web-artefacts')),
    chromium: args.chromium || '/usr/bin/chromium',
  };
}

export const BROWSER_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export class Harness {
  /** prefix: this test's screenshots are <out>/<prefix>-NN-<name>.png. */
  constructor(opt, prefix) {
    this.opt = opt;
    this.prefix = prefix;
    this.tmp = mkdtempSync(join(tmpdir(), 'hloscope-web-'));
    this.errors = [];
    this.step = 0;
    this.contexts = [];
    mkdirSync(opt.out, { recursive: true });
    for (const f of readdirSync(opt.out)) if (f.startsWith(`${prefix}-`) && f.endsWith('.png')) rmSync(join(opt.out, f));
  }

  /** extra: more `hloscope serve` flags (e.g. a larger --max-body). */
  async start(extra = []) {
    if (!existsSync(join(this.opt.web, 'index.html'))) throw new Error(`${this.opt.web}/index.html is missing: run  cd web && npm ci && npm run build`);
    this.pw = (await import('playwright-core')).chromium;
    this.base = await new Promise((ok, fail) => {
      this.server = spawn(this.opt.server, ['serve', '--port', '0', '--bind', '127.0.0.1', '--data', join(this.tmp, 'data'),
        '--examples', this.opt.examples, '--web', this.opt.web, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const t = setTimeout(() => fail(new Error(`server did not start: ${out}`)), 20000);
      this.server.stdout.on('data', (d) => {
        out += d;
        const m = /serving (http:\/\/[^/\s]+)\//.exec(out);
        if (m) { clearTimeout(t); ok(m[1]); }
      });
      this.server.stderr.on('data', (d) => process.stderr.write(`[server] ${d}`));
      this.server.on('exit', (c) => { clearTimeout(t); fail(new Error(`server exited ${c}: ${out}`)); });
    });
    return this.base;
  }

  /** A browser with a profile of its own at this viewport. */
  async browser(name, viewport) {
    const ctx = await this.pw.launchPersistentContext(join(this.tmp, name), {
      executablePath: this.opt.chromium, headless: true, viewport, args: BROWSER_ARGS,
    });
    this.contexts.push(ctx);
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('pageerror', (e) => this.errors.push(`${name}: ${e.message}`));
    // A 4xx the explorer shows as a message (an out-of-memory step) is no page error.
    page.on('console', (m) => { if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) this.errors.push(`${name}: ${m.text()}`); });
    return page;
  }

  /** The JSON reply of a request to the server, asserted 2xx. */
  async api(path, init) {
    const r = await fetch(`${this.base}${path}`, init);
    const body = await r.json();
    if (!r.ok) throw new Error(`${path}: ${JSON.stringify(body).slice(0, 300)}`);
    return body;
  }

  async shot(page, name) {
    this.step++;
    const file = join(this.opt.out, `${this.prefix}-${String(this.step).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file });
    console.log('[web] screenshot', file);
  }

  async stop() {
    for (const c of this.contexts) await c.close().catch(() => {});
    if (this.server && this.server.exitCode == null) {
      await new Promise((ok) => {
        this.server.removeAllListeners('exit');
        this.server.on('exit', ok);
        this.server.kill('SIGTERM');
        setTimeout(() => { this.server.kill('SIGKILL'); ok(); }, 15000);
      });
    }
    rmSync(this.tmp, { recursive: true, force: true });
  }
}

/** Waits until no compile, run or render is in progress. */
export async function idle(page, timeout = 60000) {
  await page.waitForFunction(() => !document.querySelector('#progress:not(.hidden)'), null, { timeout });
}

/** Picks an example in the editor's list; marker: text of it to wait for. */
export async function pick(page, name, marker) {
  await page.selectOption('#example', name);
  await page.waitForFunction((m) => window.hloscope.editor.text.includes(m), marker);
}

/** Brings node id of pane side ('a' or 'b') to the pane's middle: panes
 * open zoomed to readable labels, so a node the mouse acts on may be out of
 * sight (or under the graph tools) until then. svg-pan-zoom applies wheel
 * zooms at the next animation frame, which can move the node away again
 * after a focus: so it is checked every frame and focused again until its
 * middle is in the pane. */
export async function inView(page, side, id) {
  await page.waitForFunction(([s, x]) => {
    const p = window.hloscope.panes[s], g = p.el(x);
    if (!g) return false;
    const r = g.getBoundingClientRect(), v = p.svg.getBoundingClientRect();
    const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    if (cx > v.left && cx < v.right && cy > v.top && cy < v.bottom) return true;
    p.focus(x);
    return false;
  }, [side, id], { polling: 'raf', timeout: 10000 });
}

/** Compiles the editor's text and waits for both panes' graphs. */
export async function compile(page) {
  await page.click('#compile-btn');
  await idle(page);
  await page.waitForSelector('#pane-b .graph svg g.node');
}
