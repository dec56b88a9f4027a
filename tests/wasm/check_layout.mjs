// Check web/wgpu_imports.mjs against the wasm32 layout of a build, without a browser: every
// (struct, member), struct size and constant that the JavaScript reads by name must be in the
// JSON that wgpu_wasm.c hands it (tz_wgpu_wasm_layout_json: offsetof / sizeof as clang lays the
// structs out for wasm32), with the kinds the code assumes (the one floating-point member,
// 64-bit sizes and offsets). Runs `wgpu_smoke.wasm --layout` under Node's WASI.
//
//   node tests/wasm/check_layout.mjs build-wasm/wgpu_smoke.wasm
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WASI } from 'node:wasi';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const wasmPath = process.argv[2];
if (!wasmPath) {
  console.error('usage: check_layout.mjs wgpu_smoke.wasm');
  process.exit(2);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tz-layout-'));
const outFile = path.join(tmp, 'layout.json');
const fd = fs.openSync(outFile, 'w');
const wasi = new WASI({ version: 'preview1', args: ['wgpu_smoke', '--layout'], stdout: fd, returnOnExit: true });
const mod = new WebAssembly.Module(fs.readFileSync(wasmPath));
// the "wgpu" imports are not called in --layout mode: any call is a bug here
const wgpu = {};
for (const im of WebAssembly.Module.imports(mod))
  if (im.module === 'wgpu') wgpu[im.name] = () => { throw new Error(`check_layout: ${im.name} called`); };
const inst = new WebAssembly.Instance(mod, { wasi_snapshot_preview1: wasi.getImportObject ? wasi.getImportObject().wasi_snapshot_preview1 : wasi.wasiImport, wgpu });
const rc = wasi.start(inst);
fs.closeSync(fd);
if (rc !== 0) {
  console.log(`check_layout: FAIL: wgpu_smoke --layout exited ${rc}`);
  process.exit(1);
}
const raw = JSON.parse(fs.readFileSync(outFile, 'utf8'));
fs.rmSync(tmp, { recursive: true });
const fields = new Map(raw.members.map(([s, m, off, size, kind]) => [`${s}.${m}`, { off, size, kind }]));
const { layoutNamesUsed } = await import(path.join(repo, 'web/wgpu_imports.mjs'));
const src = fs.readFileSync(path.join(repo, 'web/wgpu_imports.mjs'), 'utf8');
const used = layoutNamesUsed(src);
const bad = [];
for (const m of used.members) if (!fields.has(m)) bad.push(`member ${m} is not in the layout`);
for (const s of used.sizes) if (raw.sizes[s] === undefined) bad.push(`size of ${s} is not in the layout`);
for (const c of used.consts) if (raw.consts[c] === undefined) bad.push(`constant ${c} is not in the layout`);
// what the code assumes of the kinds (rd/wr pick the access by size and kind, so these only
// guard the few places that do arithmetic on a member: offsets and sizes as 64-bit)
const want = { 'WGPUConstantEntry.value': [8, 'f'], 'WGPUBindGroupEntry.offset': [8, 'u'], 'WGPUBindGroupEntry.size': [8, 'u'],
  'WGPUBufferDescriptor.size': [8, 'u'], 'WGPUFuture.id': [8, 'u'], 'WGPUStringView.length': [4, 'u'], 'WGPUStringView.data': [4, 'u'] };
for (const [k, [size, kind]] of Object.entries(want)) {
  const f = fields.get(k);
  if (f && (f.size !== size || f.kind !== kind)) bad.push(`${k} is ${f.size} bytes kind ${f.kind}, the code assumes ${size} ${kind}`);
}
if (raw.sizes['void *'] !== 4 || raw.sizes.WGPUCommandBuffer !== 4) bad.push('pointers are not 4 bytes (not wasm32?)');
for (const b of bad) console.log(`check_layout: FAIL: ${b}`);
if (bad.length) process.exit(1);
console.log(`check_layout: ok: ${used.members.size} members, ${used.sizes.size} sizes, ${used.consts.size} constants used by ` +
  `web/wgpu_imports.mjs are in the wasm32 layout (${fields.size} members, ${Object.keys(raw.sizes).length} structs)`);
