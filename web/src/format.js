// Number formatting shared by every view: one unit style, so that a figure
// reads the same in a card, a table, a chart axis, the tour and an
// out-of-memory report. Bytes in binary units (B, KiB, MiB, GiB, TiB),
// durations in s / ms / µs, both with three significant digits.
const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

// Three significant digits, no exponent: 1.23, 12.3, 123 (and 1024 stays 1024).
const sig3 = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

export function bytes(n) {
  if (n == null || isNaN(n)) return '–';
  let i = 0, v = Math.abs(Number(n));
  while (v >= 1024 && i < BYTE_UNITS.length - 1) { v /= 1024; i++; }
  return `${n < 0 ? '-' : ''}${i === 0 ? v.toFixed(0) : sig3(v)} ${BYTE_UNITS[i]}`;
}

export function seconds(s) {
  if (s == null || isNaN(s)) return '–';
  const v = Math.abs(s), sign = s < 0 ? '-' : '';
  if (v >= 1) return `${sign}${sig3(v)} s`;
  if (v >= 1e-3) return `${sign}${sig3(v * 1e3)} ms`;
  if (v === 0) return '0 µs';
  return `${sign}${sig3(v * 1e6)} µs`;
}

// The byte counts in XLA's messages ("100.72M", "688.00K", "0B":
// tsl::strings::HumanReadableNumBytes, binary multiples), as a number of
// bytes, so that the explorer shows them in its own units. NaN when the
// text is not one.
export function parseXlaBytes(t) {
  const m = /^(-?[\d.]+)([KMGTPE]?)B?$/.exec(String(t || '').trim());
  if (!m) return NaN;
  return Number(m[1]) * 1024 ** ('_KMGTPE'.indexOf(m[2] || '_'));
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
