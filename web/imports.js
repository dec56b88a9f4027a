// WebAssembly imports of tezgah.wasm besides WASI, one place for all of them: each entry is a
// function (inst) -> {moduleName: {importName: fn}}; `inst.exports` is the instance's exports
// once it exists (memory, for bindings that read C structs). The CPU build imports nothing
// else. The WebGPU bindings of a `scripts/build_wasm.sh --webgpu` build (issue 23 item 2:
// webgpu.h on navigator.gpu) register here.
export const extraImports = [];
