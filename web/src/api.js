// The REST API of `hloscope serve` (docs/API.md). Every error reply has the
// shape {"error": {code, message, path, line, column}}; ApiError keeps it.
export class ApiError extends Error {
  constructor(status, err) {
    super(err.message || `HTTP ${status}`);
    this.status = status;
    this.code = err.code || 'http';
    this.path = err.path || '';
    this.line = err.line || 0;
    this.column = err.column || 0;
    this.instruction = err.instruction || '';
  }
}

const cache = new Map(); // GETs of content-addressed artefacts never change

export async function get(path, { text = false, cached = true } = {}) {
  if (cached && cache.has(path)) return cache.get(path);
  const p = (async () => {
    const r = await fetch(path);
    const ct = r.headers.get('content-type') || '';
    const body = ct.includes('json') && !text ? await r.json() : await r.text();
    if (!r.ok) {
      const err = typeof body === 'object' && body.error ? body.error : errorFromText(body, r.status);
      throw new ApiError(r.status, err);
    }
    return body;
  })();
  if (cached) {
    cache.set(path, p);
    p.catch(() => cache.delete(path));
  }
  return p;
}

function errorFromText(text, status) {
  try { const j = JSON.parse(text); if (j.error) return j.error; } catch { /* not JSON */ }
  return { code: 'http', message: `HTTP ${status}` };
}

// A compile above the device's HBM is a result flagged out_of_memory, with
// XLA's report (docs/API.md). Unless oomResult, post() raises it as the
// out_of_memory error it is for the explorer's pages (a comparison names its
// side as "variant a: "); the error keeps the result (.result) with its graph
// and memory timeline.
export function oomError(data) {
  const side = data.endpoint === 'compare' ? ['a', 'b'].find((k) => data[k] && data[k].out_of_memory) : null;
  const r = side ? data[side] : data;
  if (!r || !r.out_of_memory) return null;
  const e = new ApiError(422, { code: 'out_of_memory', message: `${side ? `variant ${side}: ` : ''}${r.oom_report}` });
  e.result = r;
  return e;
}

export async function post(path, body, { oomResult = false } = {}) {
  const r = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const data = await r.json().catch(() => ({ error: { code: 'http', message: `HTTP ${r.status}` } }));
  if (!r.ok) throw new ApiError(r.status, data.error || {});
  const oom = oomResult ? null : oomError(data);
  if (oom) throw oom;
  return data;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v != null) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const results = (id) => `/v1/results/${encodeURIComponent(id)}`;
