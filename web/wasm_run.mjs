// Run a tezgah wasm32-wasi program in the page (or a Worker) with its WebGPU imports: WASI
// from @bjorn3/browser_wasi_shim (passed in, so this file names no install path), the "wgpu"
// imports from web/wgpu_imports.mjs on navigator.gpu, and the entry point called through
// WebAssembly.promising() so that the program's GPU waits can suspend (JSPI).
//
//   const shim = await import('/npm/@bjorn3/browser_wasi_shim/dist/index.js');
//   const r = await runWasm({ shim, url: '/build/tezgah.wasm', args: ['tezgah', 'info'],
//                             files: { 'corpus.txt': bytes }, onStdout: (line) => ..., onStderr });
//   r.code (exit status), r.files (name -> Uint8Array: the files in the preopened folder after
//   the run), r.ms (wall time of the run).
// The program sees `files` in its working folder "." (a preopened in-memory directory).
import { WgpuImports } from './wgpu_imports.mjs';

export async function runWasm({ shim, url, module, args = ['prog'], env = [], files = {}, onStdout, onStderr,
  gpu = globalThis.navigator ? navigator.gpu : undefined }) {
  const { WASI, File, OpenFile, ConsoleStdout, PreopenDirectory, WASIProcExit } = shim;
  const out = onStdout || ((l) => console.log(l));
  const err = onStderr || ((l) => console.warn(l));
  const contents = new Map();
  for (const [name, data] of Object.entries(files)) contents.set(name, new File(data));
  const dir = new PreopenDirectory('.', contents);
  const fds = [new OpenFile(new File([])), ConsoleStdout.lineBuffered(out), ConsoleStdout.lineBuffered(err), dir];
  const wasi = new WASI(args, env, fds, { debug: false });
  const wg = new WgpuImports(gpu);
  const mod = module || await WebAssembly.compileStreaming(fetch(url));
  // The shim reports no rights on its in-memory folders, and WASI's libc answers
  // access(dir, W_OK) from the folder's inheriting rights (train checks its run directory that
  // way): report every right for folders (the in-memory file system is all writable). fdstat:
  // filetype u8 at 0, rights_base u64 at 8, rights_inheriting u64 at 16; FILETYPE_DIRECTORY 3
  // (WASI preview 1, wasi_snapshot_preview1.witx).
  const wasiImport = { ...wasi.wasiImport };
  wasiImport.fd_fdstat_get = (fd, p) => {
    const r = wasi.wasiImport.fd_fdstat_get(fd, p);
    const v = new DataView(inst.exports.memory.buffer);
    if (r === 0 && v.getUint8(p) === 3) {
      const all = (1n << 29n) - 1n; // rights bits 0..28
      v.setBigUint64(p + 8, all, true);
      v.setBigUint64(p + 16, all, true);
    }
    return r;
  };
  const inst = await WebAssembly.instantiate(mod, { wasi_snapshot_preview1: wasiImport, wgpu: wg.imports });
  wasi.inst = inst;
  wg.setMemory(inst.exports.memory);
  const t0 = performance.now();
  let code = 0;
  try {
    // promising: the wait import (WebAssembly.Suspending) may suspend this call's wasm stack
    const start = typeof WebAssembly.promising === 'function' ? WebAssembly.promising(inst.exports._start)
      : inst.exports._start;
    await start();
  } catch (e) {
    if (e instanceof WASIProcExit) code = e.code;
    else throw e;
  }
  const ms = performance.now() - t0;
  const after = {};
  const walk = (d, prefix) => {
    for (const [name, ino] of d.contents) {
      if (ino.contents instanceof Map) walk(ino, prefix + name + '/');
      else if (ino.data) after[prefix + name] = ino.data;
    }
  };
  walk(dir.dir, '');
  return { code, ms, files: after };
}
