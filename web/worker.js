// The page's engine: tezgah.wasm (the same C engine as the native CLI, built by
// scripts/build_wasm.sh) run as a WASI command in this Worker, so the page stays responsive.
// WASI comes from @bjorn3/browser_wasi_shim (npm, pinned in web/package-lock.json) over an
// in-memory file system that lives as long as this Worker: the corpus, the run directory
// "run/" (checkpoint.tzc, metrics.jsonl, tokenizer.json) and the data cache.
//
// Messages in (from app.js):
//   {type:'init'}                                   compile /tezgah.wasm        -> {type:'ready'}
//   {type:'train', corpus: Uint8Array, args: [..], stop: SharedArrayBuffer|null}
//        `tezgah train --data corpus.txt --run-dir run ARGS...` in a fresh file system;
//        -> {type:'metrics', rows} (metrics.jsonl lines as they are written), {type:'log', text}
//           (stderr), {type:'done', cmd:'train', rc, seconds}
//   {type:'sample', args: [..]}  `tezgah sample run ARGS...` -> {type:'done', cmd:'sample', rc, stdout}
//   {type:'file', path}          bytes of a file of the file system -> {type:'file', path, bytes}
// Errors: {type:'error', message}. Stop: the page sets word 0 of `stop` to 1; while the
// engine writes (every step writes metrics.jsonl) this Worker sees it and calls the exported
// tz_train_request_stop(SIGINT): the step finishes, the checkpoint is written and train exits
// with 130, as Ctrl-C does natively.
import { WASI, File, OpenFile, ConsoleStdout, PreopenDirectory, Directory } from './node_modules/@bjorn3/browser_wasi_shim/dist/index.js';
import { extraImports } from './imports.js'; // non-WASI imports (WebGPU bindings)

// The run's directory, preopened as ".". The shim reports no rights on directories; wasi-libc's
// access(dir, W_OK) reads the preopen's inheriting rights (train checks its run directory is
// writable), so this one reports all rights, as Node's WASI does.
const ALL_RIGHTS = (1n << 30n) - 1n;
class RunDirectory extends PreopenDirectory {
  fd_fdstat_get() {
    const r = super.fd_fdstat_get();
    if (r.fdstat) {
      r.fdstat.fs_rights_base = ALL_RIGHTS;
      r.fdstat.fs_rights_inherited = ALL_RIGHTS;
    }
    return r;
  }
}

let module = null;
let root = null; // the PreopenDirectory '.' of the current run


function decodeLines(state, bytes) {
  state.text += new TextDecoder().decode(bytes, { stream: true });
  const lines = state.text.split('\n');
  state.text = lines.pop();
  return lines;
}

function lookup(path) {
  let node = root.dir;
  for (const part of path.split('/').filter((p) => p && p !== '.')) {
    if (!(node instanceof Directory)) return null;
    node = node.contents.get(part);
    if (!node) return null;
  }
  return node;
}

// Run one tezgah command to completion; returns {rc, stdout, stderr}.
function run(args, hooks = {}) {
  const out = [], err = [];
  const stdout = ConsoleStdout.lineBuffered((l) => out.push(l));
  const stderr = new ConsoleStdout((bytes) => {
    const t = new TextDecoder().decode(bytes);
    err.push(t);
    if (hooks.log) hooks.log(t);
  });
  const wasi = new WASI(['tezgah', ...args], [], [new OpenFile(new File([])), stdout, stderr, root]);
  const inst = { exports: null };
  const imports = { wasi_snapshot_preview1: { ...wasi.wasiImport } };
  if (hooks.afterWrite) {
    const fdWrite = wasi.wasiImport.fd_write;
    imports.wasi_snapshot_preview1.fd_write = (...a) => {
      const r = fdWrite(...a);
      hooks.afterWrite(inst.exports);
      return r;
    };
  }
  for (const f of extraImports) Object.assign(imports, f(inst));
  const instance = new WebAssembly.Instance(module, imports);
  inst.exports = instance.exports;
  let rc;
  try {
    rc = wasi.start(instance);
  } catch (e) {
    // a trap (out of memory, unreachable): the engine's state is gone, say what it was
    err.push(`\ntezgah.wasm trapped: ${e}\n`);
    rc = 134;
  }
  return { rc, stdout: out.join('\n') + (out.length ? '\n' : ''), stderr: err.join('') };
}

function train(msg) {
  root = new RunDirectory('.', new Map([['corpus.txt', new File(msg.corpus)]]));
  const stop = msg.stop ? new Int32Array(msg.stop) : null;
  let seen = 0, lastPoll = 0, stopSent = false;
  const pending = { text: '' };
  const flushMetrics = (force) => {
    const now = performance.now();
    if (!force && now - lastPoll < 100) return;
    lastPoll = now;
    const f = lookup('run/metrics.jsonl');
    if (!f || !f.data || f.data.length <= seen) return;
    const lines = decodeLines(pending, f.data.slice(seen));
    seen = f.data.length;
    const rows = [];
    for (const l of lines) {
      try { rows.push(JSON.parse(l)); } catch { /* a partial line: the next poll has it */ }
    }
    if (rows.length) postMessage({ type: 'metrics', rows });
  };
  const t0 = performance.now();
  const r = run(['train', '--data', 'corpus.txt', '--run-dir', 'run', ...msg.args], {
    log: (t) => postMessage({ type: 'log', text: t }),
    afterWrite: (exports) => {
      if (stop && !stopSent && Atomics.load(stop, 0) === 1) {
        stopSent = true;
        exports.tz_train_request_stop(2); // SIGINT
      }
      flushMetrics(false);
    },
  });
  flushMetrics(true);
  postMessage({ type: 'done', cmd: 'train', rc: r.rc, seconds: (performance.now() - t0) / 1000, stderr: r.stderr });
}

onmessage = async (ev) => {
  const msg = ev.data;
  try {
    if (msg.type === 'init') {
      const resp = await fetch(msg.url || 'tezgah.wasm');
      if (!resp.ok) throw new Error(`tezgah.wasm: HTTP ${resp.status}: ${(await resp.text()).trim()}`);
      module = await WebAssembly.compileStreaming(resp);
      postMessage({ type: 'ready' });
    } else if (msg.type === 'train') {
      train(msg);
    } else if (msg.type === 'sample') {
      if (!root) throw new Error('no run yet: train first');
      const r = run(['sample', 'run', ...msg.args]);
      postMessage({ type: 'done', cmd: 'sample', rc: r.rc, stdout: r.stdout, stderr: r.stderr });
    } else if (msg.type === 'file') {
      const f = root && lookup(msg.path);
      if (!f || !(f instanceof File)) throw new Error(`${msg.path}: no such file (train first)`);
      const bytes = f.data.slice();
      postMessage({ type: 'file', path: msg.path, bytes }, [bytes.buffer]);
    }
  } catch (e) {
    postMessage({ type: 'error', message: String(e && e.message ? e.message : e) });
  }
};
