// Live lint of the editor's text, in the page and without a request (the
// server's compile gives the full verdict, at its line and column): a model
// description is checked as JSON (jsonc-parser's errors: where the syntax
// breaks), HLO text for what a paste or a cut dump most often breaks:
// brackets that open and close in order (outside quoted strings and // and
// /* */ comments).
import { parse, printParseErrorCode } from 'jsonc-parser';

// HLO text (an HloModule dump, or XLA's test snippets that start with a
// computation) rather than a JSON model, which always starts with '{'.
export function isHlo(text) {
  return /^\s*[^\s{[]/.test(text);
}

// [{from, to, message}] in offsets of text.
export function lint(text) {
  if (!text.trim()) return [];
  return isHlo(text) ? lintHlo(text) : lintJson(text);
}

function lintJson(text) {
  const errors = [];
  parse(text, errors, { allowTrailingComma: false, disallowComments: true });
  return errors.slice(0, 5).map((e) => ({
    from: e.offset, to: e.offset + Math.max(1, e.length), message: `JSON: ${printParseErrorCode(e.error)}`,
  }));
}

const CLOSE = { ')': '(', ']': '[', '}': '{' };
// The start of an instruction: "  [ROOT] [%]name = ".
const INSTRUCTION = /^[ \t]*(ROOT[ \t]+)?%?[\w.-]+[ \t]*=/;
const never = (text, k) => ({ from: k, to: k + 1, message: `HLO: '${text[k]}' is never closed` });
function lintHlo(text) {
  const out = [];
  const stack = [];
  for (let k = 0; k < text.length; k++) {
    const c = text[k];
    // An instruction starts inside its computation's '{' only: whatever the
    // previous one left open is where the text broke.
    if (c === '\n' && stack.length > 1 && INSTRUCTION.test(text.slice(k + 1, k + 200))) {
      out.push(never(text, stack[stack.length - 1]));
      return out;
    }
    if (c === '"') { // a string: skip to its closing quote
      for (k++; k < text.length && text[k] !== '"'; k++) if (text[k] === '\\') k++;
    } else if (c === '/' && text[k + 1] === '/') { // a comment to the end of the line
      const e = text.indexOf('\n', k);
      k = e < 0 ? text.length : e;
    } else if (c === '/' && text[k + 1] === '*') {
      const e = text.indexOf('*/', k + 2);
      k = e < 0 ? text.length : e + 1;
    } else if (c === '(' || c === '[' || c === '{') {
      stack.push(k);
    } else if (CLOSE[c]) {
      const open = stack.pop();
      if (open == null || text[open] !== CLOSE[c]) {
        out.push({ from: k, to: k + 1, message: `HLO: '${c}' closes ${open == null ? 'nothing' : `'${text[open]}'`}` });
        return out;
      }
    }
  }
  if (stack.length) out.push(never(text, stack[stack.length - 1]));
  return out;
}
