// Run tezgah.wasm under Node's WASI (node:wasi, preview1) as a command:
//   node wasm/run_node.mjs build-wasm/tezgah.wasm ARGS...
// The working directory is preopened as "." (relative paths work, as for the native CLI);
// stdin/stdout/stderr are the process's; the exit status is the program's.
// Node >= 20 (node:wasi with version 'preview1').
import { readFile } from 'node:fs/promises';
import process from 'node:process';

// node:wasi prints an ExperimentalWarning on load: not tezgah's output
process.removeAllListeners('warning');
const { WASI } = await import('node:wasi');

const [wasmPath, ...args] = process.argv.slice(2);
if (!wasmPath) {
  process.stderr.write('usage: node wasm/run_node.mjs tezgah.wasm ARGS...\n');
  process.exit(2);
}
const wasi = new WASI({
  version: 'preview1',
  args: ['tezgah', ...args],
  env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('TEZGAH_') || k === 'OMP_NUM_THREADS')),
  preopens: { '.': process.cwd() },
  returnOnExit: true,
});
let bytes;
try {
  bytes = await readFile(wasmPath);
} catch (e) {
  process.stderr.write(`run_node: ${wasmPath}: ${e.code === 'ENOENT' ? 'no such file' : e.message}\n`);
  process.exit(1);
}
const module = await WebAssembly.compile(bytes);
// A --webgpu build (scripts/build_wasm.sh --webgpu) also imports module "wgpu", the page's
// WebGPU bindings (web/wgpu_imports.mjs). Node has no navigator.gpu: every such import answers
// 0, and tzw_init (the first call of `--backend webgpu`) says why, so that flag is one error line
// and everything else runs as in the CPU-only build.
let instance;
const wgpu = {};
for (const imp of WebAssembly.Module.imports(module)) {
  if (imp.module !== 'wgpu' || imp.kind !== 'function') continue;
  wgpu[imp.name] = imp.name !== 'tzw_init' ? () => 0 : (json, len, why, cap) => {
    const msg = new TextEncoder().encode('Node has no navigator.gpu: --backend webgpu runs in the page (node web/serve.mjs)');
    const n = Math.min(msg.length, cap - 1);
    const mem = new Uint8Array(instance.exports.memory.buffer, why, n + 1);
    mem.set(msg.subarray(0, n));
    mem[n] = 0;
    return 0;
  };
}
instance = await WebAssembly.instantiate(module, { ...wasi.getImportObject(), wgpu });
const rc = wasi.start(instance);
process.exitCode = rc;
