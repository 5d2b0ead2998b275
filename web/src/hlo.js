// HLO text of both sides, line diff (jsdiff), unchanged runs folded.
import { diffLines } from 'diff';
import { esc } from './format.js';

export function renderHloDiff(root, a, b, onlyChanges) {
  // Myers' diff is O(N·D): give up on texts too different to line up.
  const parts = diffLines(a, b, { timeout: 4000 });
  if (!parts) {
    root.innerHTML = `<div class="skip" data-testid="hlo-counts">the two modules are too different to diff line by line; A has ${a.split('\n').length} lines, B ${b.split('\n').length}</div>` +
      `<div style="display:grid;grid-template-columns:1fr 1fr;gap:8px"><div>${esc(a)}</div><div>${esc(b)}</div></div>`;
    return;
  }
  const out = [];
  let adds = 0, dels = 0;
  for (const p of parts) {
    const lines = p.value.replace(/\n$/, '').split('\n');
    if (p.added) { adds += lines.length; for (const l of lines) out.push(`<div class="add">+ ${esc(l)}</div>`); }
    else if (p.removed) { dels += lines.length; for (const l of lines) out.push(`<div class="del">- ${esc(l)}</div>`); }
    else if (onlyChanges && lines.length > 6) {
      for (const l of lines.slice(0, 2)) out.push(`<div>  ${esc(l)}</div>`);
      out.push(`<div class="skip">  … ${lines.length - 4} unchanged lines …</div>`);
      for (const l of lines.slice(-2)) out.push(`<div>  ${esc(l)}</div>`);
    } else for (const l of lines) out.push(`<div>  ${esc(l)}</div>`);
  }
  root.innerHTML = `<div class="skip" data-testid="hlo-counts">${adds} lines only in B, ${dels} lines only in A</div>${out.join('')}`;
}
