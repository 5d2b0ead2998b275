// Number formatting shared by the views.
export function bytes(n) {
  if (n == null || isNaN(n)) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0, v = Math.abs(n);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return `${(Math.sign(n) * v).toFixed(v >= 100 || i === 0 ? 0 : 1)} ${u[i]}`;
}
export function seconds(s) {
  if (s == null || isNaN(s)) return '–';
  if (s >= 1) return `${s.toFixed(2)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toFixed(s >= 0.1 ? 0 : 2)} ms`;
  return `${(s * 1e6).toFixed(0)} µs`;
}
export const int = (n) => (n == null ? '–' : Number(n).toLocaleString('en-US'));
// Ratio b / a as shown everywhere: three significant digits and a ×.
export function ratio(r) {
  if (r == null || !isFinite(r)) return '–';
  return `${Number(r.toPrecision(3))}×`;
}
export function ratioPhrase(r) {
  if (r == null || !isFinite(r) || r === 0) return '';
  if (Math.abs(r - 1) < 0.005) return 'same';
  return r < 1 ? `${Number((1 / r).toPrecision(3))}× smaller` : `${Number(r.toPrecision(3))}× larger`;
}
export const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
