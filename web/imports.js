// WebAssembly imports of tezgah.wasm besides WASI, one place for all of them: each entry is a
// function (inst) -> {moduleName: {importName: fn}}; `inst.exports` is the instance's exports
// once it exists (memory, for bindings that read C structs). The CPU build imports nothing
// else. The WebGPU bindings of a `scripts/build_wasm.sh --webgpu` build (issue 23 item 2:
// webgpu.h on navigator.gpu) register here.
import { WgpuImports } from './wgpu_imports.mjs';

export const extraImports = [
  // webgpu.h on navigator.gpu (web/wgpu_imports.mjs): imported by a --webgpu build only (an
  // instance ignores modules it does not import); without navigator.gpu, --backend webgpu is
  // one error line and the CPU backend is the page's choice (worker.js, 'init')
  (inst) => ({ wgpu: new WgpuImports(globalThis.navigator ? navigator.gpu : undefined, () => inst.exports.memory).imports }),
];
