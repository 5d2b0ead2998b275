// The source editor: CodeMirror 6, a model description (JSON mode) or HLO
// text (a pasted, opened or dropped dump, highlighted by hlo.js: opcodes,
// shapes, names, metadata). Two files dropped at once are a pair to compare,
// more files or a --xla_dump_to folder a dump folder (onPair). Server errors become lint
// diagnostics at the reported line/column (syntax errors) or at the value the
// JSON path (RFC 6901 pointer) names (schema errors), located with
// jsonc-parser's syntax tree; as you type, lint.js marks broken syntax
// (debounced, no request).
import { basicSetup } from 'codemirror';
import { EditorView } from '@codemirror/view';
import { Compartment } from '@codemirror/state';
import { json } from '@codemirror/lang-json';
import { setDiagnostics, lintGutter } from '@codemirror/lint';
import { parseTree, findNodeAtLocation, modify, applyEdits, parse } from 'jsonc-parser';
import { lint, isHlo } from './lint.js';
import { hloHighlight } from './hlo.js';
import { folderEntries, filesOfEntries } from './dumpdir.js';

const LINT_DELAY_MS = 400;

export function createEditor(parent, { onChange, onFile, onPair } = {}) {
  const language = new Compartment();
  let lintTimer = 0, hlo = false;
  const liveLint = () => {
    const text = view.state.doc.toString();
    view.dispatch(setDiagnostics(view.state, lint(text).map((d) => ({ ...d, severity: 'error', source: 'lint' }))));
  };
  const view = new EditorView({
    parent,
    extensions: [
      basicSetup,
      language.of(json()),
      lintGutter(),
      EditorView.lineWrapping,
      // A file dropped on the editor replaces its text (CodeMirror would
      // insert it at the drop point); two files are a before/after pair.
      EditorView.domEventHandlers({
        drop(e) {
          // A --xla_dump_to folder: its files (walked after the event, from
          // the entries taken during it) go to the pair's module picker.
          const entries = onPair && folderEntries(e.dataTransfer);
          if (entries) {
            e.preventDefault();
            filesOfEntries(entries).then(onPair);
            return true;
          }
          const files = [...((e.dataTransfer && e.dataTransfer.files) || [])];
          if (files.length >= 2 && onPair) {
            e.preventDefault();
            onPair(files);
            return true;
          }
          if (!files[0] || !onFile) return false;
          e.preventDefault();
          onFile(files[0]);
          return true;
        },
      }),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) {
          view.dispatch(setDiagnostics(view.state, [])); // stale once edited
          const text = view.state.doc.toString();
          if (isHlo(text) !== hlo) { // JSON for a model, HLO for a dump
            hlo = !hlo;
            view.dispatch({ effects: language.reconfigure(hlo ? hloHighlight() : json()) });
          }
          clearTimeout(lintTimer);
          lintTimer = setTimeout(liveLint, LINT_DELAY_MS);
          onChange && onChange(text);
        }
      }),
    ],
  });
  return {
    view,
    get text() { return view.state.doc.toString(); },
    set text(t) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: t } }); },
    clearErrors() { clearTimeout(lintTimer); view.dispatch(setDiagnostics(view.state, [])); },
    /** Marks the error in the text; returns {line, from, to} or null. */
    showError(err) {
      clearTimeout(lintTimer); // the server's verdict stands
      const range = locate(view.state.doc, view.state.doc.toString(), err);
      if (!range) return null;
      const diag = { from: range.from, to: range.to, severity: 'error', message: err.message, source: err.path || 'hloscope' };
      view.dispatch(setDiagnostics(view.state, [diag]));
      view.dispatch({ selection: { anchor: range.from }, effects: EditorView.scrollIntoView(range.from, { y: 'center' }) });
      return { ...range, line: view.state.doc.lineAt(range.from).number };
    },
    /** The first {"repeat": N} of the top-level layers, or null. */
    repeat() {
      const loc = repeatLocation(this.text);
      return loc ? loc.value : null;
    },
    setRepeat(n) {
      const text = this.text;
      const loc = repeatLocation(text);
      if (!loc) return false;
      const edits = modify(text, loc.path, n, { formattingOptions: { insertSpaces: true, tabSize: 2 } });
      const next = applyEdits(text, edits);
      // Keep the cursor and undo history: replace only what changed.
      let a = 0;
      while (a < text.length && text[a] === next[a]) a++;
      let b = 0;
      while (b < text.length - a && text[text.length - 1 - b] === next[next.length - 1 - b]) b++;
      view.dispatch({ changes: { from: a, to: text.length - b, insert: next.slice(a, next.length - b) } });
      return true;
    },
  };
}

function repeatLocation(text) {
  let model;
  try { model = parse(text, [], { allowTrailingComma: false }); } catch { return null; }
  if (!model || !Array.isArray(model.layers)) return null;
  const k = model.layers.findIndex((l) => l && typeof l.repeat === 'number');
  if (k < 0) return null;
  return { path: ['layers', k, 'repeat'], value: model.layers[k].repeat };
}

export function pointerSegments(ptr) {
  if (!ptr || ptr[0] !== '/') return [];
  return ptr.slice(1).split('/').map((s) => {
    const t = s.replace(/~1/g, '/').replace(/~0/g, '~');
    return /^\d+$/.test(t) ? Number(t) : t;
  });
}

function locate(doc, text, err) {
  if (err.line > 0) {
    const ln = doc.line(Math.min(err.line, doc.lines));
    const from = Math.min(ln.from + Math.max(err.column - 1, 0), ln.to);
    // Underline the token at the position (at least one character).
    const m = /^("(?:[^"\\]|\\.)*"|[\w.+-]+|.)/.exec(text.slice(from, ln.to));
    const to = Math.min(ln.to, from + (m ? m[0].length : 1));
    return { from, to: Math.max(to, from + (from < doc.length ? 1 : 0)) };
  }
  if (err.path && err.path[0] === '/') {
    const tree = parseTree(text);
    if (!tree) return null;
    let segs = pointerSegments(err.path);
    while (segs.length) {
      const node = findNodeAtLocation(tree, segs);
      if (node) {
        const n = node.parent && node.parent.type === 'property' ? node.parent : node;
        // A whole object is too much: mark its first line.
        const end = Math.min(n.offset + n.length, doc.lineAt(n.offset).to);
        return { from: n.offset, to: Math.max(end, n.offset + 1) };
      }
      // Unknown key: the pointer names a key that exists only as text.
      const last = segs[segs.length - 1];
      const parent = findNodeAtLocation(tree, segs.slice(0, -1));
      if (typeof last === 'string' && parent && parent.type === 'object') {
        const prop = (parent.children || []).find((p) => p.children && p.children[0].value === last);
        if (prop) return { from: prop.offset, to: prop.offset + prop.length };
      }
      segs = segs.slice(0, -1);
    }
    return { from: 0, to: Math.min(1, doc.length) };
  }
  return null;
}
