// HLO text in the explorer: highlighting in the editor (a small tokenizer
// of XLA's text format: the editor's CodeMirror has no HLO mode, and
// @codemirror/language is not a dependency of ours). The diff of two
// modules is the engine's, side by side (diffview.js).
import { ViewPlugin, Decoration, EditorView } from '@codemirror/view';
import { RangeSetBuilder } from '@codemirror/state';

// Element types of XLA's shapes (xla_data.proto's PrimitiveType, as text).
const ELEMENT = 'pred|s2|s4|s8|s16|s32|s64|u2|u4|u8|u16|u32|u64|f16|f32|f64|bf16|c64|c128|' +
  'f8e5m2|f8e4m3fn|f8e4m3b11fnuz|f8e5m2fnuz|f8e4m3fnuz|f8e4m3|f8e3m4|f4e2m1fn|f8e8m0fnu|token|opaque';
// One token at the start of the rest of a line, tried in order; the first
// that matches wins. type null: no mark (spacing, punctuation, operands).
const RULES = [
  ['comment', /^\/\/.*/],
  ['comment', /^\/\*.*?(\*\/|$)/],
  ['string', /^"(?:[^"\\]|\\.)*"?/],
  // metadata={op_name="..." source_file=...}: what the user's framework
  // said about the instruction, one mark up to its closing brace.
  ['meta', /^(metadata|frontend_attributes|backend_config)=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}?/],
  ['keyword', /^(HloModule|ENTRY|ROOT)\b/],
  ['shape', new RegExp(`^(${ELEMENT})\\[[\\d,?<=\\s]*\\](\\{[^}]*\\})?`)],
  ['opcode', /^[a-z][\w-]*(?=\()/],
  ['attr', /^[a-z_]\w*(?==)/],
  ['name', /^%[\w.-]+/],
  ['number', /^-?(\d+\.?\d*(e[+-]?\d+)?|inf|nan)\b/],
  [null, /^[\w.-]+|^\s+|^./],
];

/** The tokens of one line of HLO text: [{from, to, type}], offsets in the
 * line; type is comment, string, meta, keyword, shape, opcode, attr, name
 * (an instruction's or computation's name, where it is defined or used with
 * '%') or number. */
export function hloTokens(line) {
  const out = [];
  // The name an instruction defines: "  [ROOT] [%]name = ...".
  const def = /^(\s*(?:ROOT\s+)?)(%?[\w.-]+)(?=\s*=)/.exec(line);
  let k = 0;
  if (def) {
    if (def[1].trim()) out.push({ from: def[1].indexOf('ROOT'), to: def[1].indexOf('ROOT') + 4, type: 'keyword' });
    out.push({ from: def[1].length, to: def[0].length, type: 'name' });
    k = def[0].length;
  }
  while (k < line.length) {
    const rest = line.slice(k);
    for (const [type, re] of RULES) {
      const m = re.exec(rest);
      if (!m || !m[0].length) continue;
      if (type) out.push({ from: k, to: k + m[0].length, type });
      k += m[0].length;
      break;
    }
  }
  return out;
}

const MARKS = Object.fromEntries(['comment', 'string', 'meta', 'keyword', 'shape', 'opcode', 'attr', 'name', 'number']
  .map((t) => [t, Decoration.mark({ class: `hlo-${t}` })]));

function decorations(view) {
  const b = new RangeSetBuilder();
  for (const { from, to } of view.visibleRanges) {
    for (let pos = from; pos <= to;) {
      const line = view.state.doc.lineAt(pos);
      for (const t of hloTokens(line.text)) b.add(line.from + t.from, line.from + t.to, MARKS[t.type]);
      pos = line.to + 1;
    }
  }
  return b.finish();
}

// Colours that stay readable on a projector: opcodes and shapes stand out,
// metadata and comments recede.
const theme = EditorView.baseTheme({
  '.hlo-opcode': { color: '#0b5cad', fontWeight: '600' },
  '.hlo-shape': { color: '#1a7f37' },
  '.hlo-name': { color: '#8250df' },
  '.hlo-keyword': { color: '#cf222e', fontWeight: '600' },
  '.hlo-attr': { color: '#953800' },
  '.hlo-meta': { color: '#6e7781', fontStyle: 'italic' },
  '.hlo-comment': { color: '#6e7781', fontStyle: 'italic' },
  '.hlo-string': { color: '#0a3069' },
  '.hlo-number': { color: '#0550ae' },
});

/** CodeMirror extension: HLO text highlighted by hloTokens, visible lines only. */
export function hloHighlight() {
  const plugin = ViewPlugin.fromClass(class {
    constructor(view) { this.decorations = decorations(view); }
    update(u) { if (u.docChanged || u.viewportChanged) this.decorations = decorations(u.view); }
  }, { decorations: (v) => v.decorations });
  return [plugin, theme];
}
