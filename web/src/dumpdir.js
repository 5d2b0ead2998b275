// A --xla_dump_to folder, dropped or opened: its files, and the modules in
// it that have both an HLO dump before and after optimizations.
//
// XLA names a module's dumps module_NNNN.NAME.SUFFIX (xla/service/dump.cc,
// FilenameFor): NNNN is the module's unique id within the process, NAME the
// module's name (jit_f; torch_xla's SyncTensorsGraph.123 has a dot in it),
// SUFFIX "before_optimizations.txt" for the module as the framework gave it
// and "after_optimizations.txt" for the compiled one, which a backend
// prefixes (GPU: "sm_8.0_gpu_after_optimizations.txt"). The same folder
// holds much else: buffer assignments, per-pass dumps
// (module_NNNN.NAME.0042.pass.after_x.before_y.txt), LLVM IR, protos.

const DUMP_NAME = /^module_(\d+)\.(.+)\.(?:[^/]*_)?(before|after)_optimizations\.txt$/;

/** The modules of a dump folder that have both sides:
 * [{ id: 'module_0001', name: 'jit_f', before: File, after: File }], in the
 * order XLA compiled them. files: File objects (their folder path, if any,
 * in webkitRelativePath is ignored; a name seen twice keeps the first). */
export function dumpModules(files) {
  const byId = new Map();
  for (const f of files) {
    const m = DUMP_NAME.exec(f.name);
    if (!m) continue;
    const [, num, rest, side] = m;
    const id = `module_${num}`;
    const mod = byId.get(id) || { id, name: '' };
    // The name is what the before's file says (the after's may carry the
    // backend's prefix glued to it).
    if (side === 'before') mod.name = rest;
    else if (!mod.name) mod.name = rest.replace(/\.[^.]*$/, '');
    if (!mod[side]) mod[side] = f;
    byId.set(id, mod);
  }
  return [...byId.values()].filter((m) => m.before && m.after).sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
}

/** Whether files look like a dump folder's (not just two files to compare). */
export function isDumpFolder(files) {
  return files.length > 2 || files.some((f) => f.webkitRelativePath && f.webkitRelativePath.includes('/'));
}

/** The files under the entries of a drop (folders walked, at any depth).
 * entries: FileSystemEntry objects, taken from the DataTransfer while the
 * drop event runs (it is emptied afterwards). */
export async function filesOfEntries(entries) {
  const out = [];
  const walk = async (e) => {
    if (e.isFile) out.push(await new Promise((ok, fail) => e.file(ok, fail)));
    else if (e.isDirectory) {
      const reader = e.createReader();
      // readEntries answers in batches (Chromium: 100) until an empty one.
      for (;;) {
        const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
        if (!batch.length) break;
        for (const c of batch) await walk(c);
      }
    }
  };
  for (const e of entries) await walk(e);
  return out;
}

/** The entries of a drop that holds a folder, or null (plain files only).
 * Must run inside the drop handler. */
export function folderEntries(dataTransfer) {
  const items = [...((dataTransfer && dataTransfer.items) || [])];
  const entries = items.map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null)).filter(Boolean);
  return entries.some((e) => e.isDirectory) ? entries : null;
}
