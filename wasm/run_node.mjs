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
const module = await WebAssembly.compile(await readFile(wasmPath));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
const rc = wasi.start(instance);
process.exitCode = rc;
