/* tezgah env: the environment variables tezgah reads, with their defaults, what they do, and
 * the value each has in this environment where it is set.
 *
 * Why a table here: the switches are read all over the backends (getenv / env_int next to the
 * code they steer), and nothing else told a user they exist. tests/test_help.sh compares this
 * table with the names quoted in src/ (this file excepted) both ways, so a switch added or
 * removed without its line here fails the test. Names built at run time ("..._%s_RG") are listed
 * expanded. Groups: general, cpu, webgpu, cuda, and "test" for switches that exist only for the
 * tests or for measurements (A/B of kernel forms, tuning of sizes that change no result's
 * meaning): those are not settings a user needs, and their defaults are the measured choices. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"

typedef struct {
  const char *name, *group, *def, *what;
} env_var;

/* group, name, default, meaning; in each group by name */
#define G(n, d, w) {n, "general", d, w}
#define C(n, d, w) {n, "cpu", d, w}
#define W(n, d, w) {n, "webgpu", d, w}
#define K(n, d, w) {n, "cuda", d, w}
#define T(n, d, w) {n, "test", d, w}
#define AB "A/B measurement: "
static const env_var VARS[] = {
    G("TEZGAH_DECODE_CHUNK", "32", "sample --backend cuda: decoding steps per host round trip (0 or 1: one at a time)"),
    G("TEZGAH_DIST_TIMEOUT", "600", "seconds without step progress before a data-parallel rank ends the run (0: no watchdog)"),
    G("TEZGAH_GPT2_DIR", "searched", "directory with GPT-2's encoder.json and vocab.bpe (--tokenizer gpt2)"),
    G("TEZGAH_LAUNCHER_PID", "unset", "the train --nproc launcher's pid (set by it for its CPU ranks): a rank "
                                      "stopped by its signal exits 0, the launcher 128+signal"),
    G("TEZGAH_LOCAL_RANK", "unset", "this rank's index on its host (set by train --nproc)"),
    G("TEZGAH_LOSS_SCALE_GROWTH", "2000", "clean steps before the dynamic loss scale doubles"),
    G("TEZGAH_MODULE_DIR", "searched", "folder of the modules loaded on first use (the MPI communicator); default: beside the executable, then its install prefix"),
    G("TEZGAH_PROFILE", "unset", "1: time every op and print a per-op table (train --profile sets it)"),
    G("TEZGAH_QUICK_EXIT", "after cuda", "1: leave without the libraries' exit handlers after any command; 0: never "
                                         "(leak checkers); default: where a CUDA backend was made"),
    G("TEZGAH_RANK", "unset", "this process's rank in a data-parallel run (set by train --nproc)"),
    G("TEZGAH_VERBOSE", "unset", "1: more diagnostics on stderr (CUDA device and kernel choices); the NCCL version line where set at all"),
    G("TEZGAH_WORLD_SIZE", "unset", "number of data-parallel ranks (set by train --nproc)"),

    C("TEZGAH_CPU_ISA", "widest here", "the CPU GEMM's instruction set: avx512, avx2 or scalar"),
    C("TEZGAH_OPENBLAS_LIB", "searched", "path of libopenblas for TZ_MATMUL=blas"),
    C("TZ_MATMUL", "c", "CPU matmul: c (tezgah's own GEMM) or blas (OpenBLAS, where the build has it)"),

    W("TEZGAH_NAPI_STUB", "built", "path of the N-API stub library that lets dawn.node load outside Node"),
    W("TEZGAH_WEBGPU_ABI_UNCHECKED", "0", "1: load a dawn.node other than the pinned build (ABI not checked)"),
    W("TEZGAH_WEBGPU_ADAPTER_TOGGLES", "2 toggles", "comma-separated Dawn toggles for the adapter request (empty: "
                                                      "none), replacing dawn.node's vulkan_enable_f16_on_nvidia,"
                                                      "allow_unsafe_apis (bun's Dawn: none by default)"),
    W("TEZGAH_WEBGPU_ATTN", "auto", "fallback: the general attention kernels only; fast: a shape the flash kernels "
                                    "cannot take is an error (tests)"),
    W("TEZGAH_WEBGPU_ATTN_SGMAT", "auto", "subgroup-matrix attention: 0 off, 1 required, auto at head_dim 64 and 128"),
    W("TEZGAH_WEBGPU_COMPILE_NOTE_S", "2", "seconds of shader compiling on a CPU adapter before a note says so"),
    W("TEZGAH_WEBGPU_DAWN", "both", "node or bun: look only for that Dawn (default: dawn.node first where an "
                                    "NVIDIA driver is loaded, else bun's)"),
    W("TEZGAH_WEBGPU_DUMP_WGSL", "unset", "DIR: write every shader module's source into DIR (debugging)"),
    W("TEZGAH_WEBGPU_F16", "where offered", "without --precision: 0 runs fp32, 1 requires ShaderF16"),
    W("TEZGAH_WEBGPU_LIB", "searched", "path of the Dawn library to load (else the pinned dawn.node or bun's)"),
    W("TEZGAH_WEBGPU_ROBUST", "0", "1: keep Dawn's robustness checks (bounds on every storage access; slower)"),
    W("TEZGAH_WEBGPU_SGMAT", "where offered", "subgroup-matrix matmul: 0 off (A/B); any other value requires it "
                                             "(tests)"),
    W("TEZGAH_WEBGPU_SUBGROUPS", "where offered", "subgroup reductions: 0 off; any other value requires them (tests)"),
    W("TEZGAH_WEBGPU_VERBOSE", "0", "1: show Dawn's own messages when no adapter is found"),
    W("TEZGAH_WEBGPU_WAIT_S", "600", "seconds to wait for one GPU operation before it is an error"),

    K("TEZGAH_CUDA_ATTN", "auto", "attention: auto, cudnn, builtin (tezgah's kernels), fast (tensor cores or "
                                  "an error: tests) or fallback (the general kernels)"),
    K("TEZGAH_CUDA_DEVICE", "0", "index of the GPU to use (train --nproc: one per rank)"),
    K("TEZGAH_CUDA_GRAPHS", "1", "0: run each step's ops one by one, not as a recorded CUDA graph"),
    K("TEZGAH_CUDA_MM_TUNE", "1", "1: each matmul shape of >= 2 GFLOP takes the fastest of cuBLASLt's algorithms "
                                  "with its first one's bits; 0: its first; all: every shape (tests)"),
    K("TEZGAH_CUDA_PDL", "1", "1: tezgah's own kernels (and recorded decoding steps) use programmatic dependent "
                              "launch on sm_90+, the same bits; 0: plain launches; another value is an error"),
    K("TEZGAH_CUDA_SIDE", "1", "1: training's weight gradients and AdamW on a second stream; grads: the weight "
                               "gradients only; 0: one stream (the same bits each way)"),
    K("TEZGAH_CUDNN_LIB", "searched", "path of libcudnn.so.9"),
    K("TEZGAH_NCCL_ID", "unset", "the NCCL unique id (hex) train --nproc gives its CUDA ranks"),
    K("TEZGAH_NCCL_LIB", "libnccl.so.2", "path of the NCCL library"),

    T("TEZGAH_CPU_MISALIGN", "0", "N: every CPU buffer N bytes past a 64-byte boundary (tests)"),
    T("TEZGAH_CUDA_ATTN_BWD", "auto", AB "attention backward's dQ form: old, ds, ds1 (auto) or ds2"),
    T("TEZGAH_CUDA_ATTN_DS_STORE", "16", AB "attention dS stores of 16 or 4 bytes"),
    T("TEZGAH_CUDA_ATTN_TIMING", "0", "1: time the attention backward's kernels (bench_cuda_attention)"),
    T("TEZGAH_CUDA_DEC_CHUNK", "32/64", "keys per block of decode attention (16..512; other bits)"),
    T("TEZGAH_CUDA_DEC_VEC", "1", AB "0: one decode attention kernel for every shape"),
    T("TEZGAH_CUDA_GELU_EPI", "auto", AB "GeLU in matmul epilogues: auto, off, bwd, fwd, both, +bgrad"),
    T("TEZGAH_CUDA_GEMV", "1", AB "0: no small-batch GEMV kernels (cuBLASLt instead)"),
    T("TEZGAH_CUDA_GEMV_MAX_M", "7", "most rows the small-batch kernels take (1..16)"),
    T("TEZGAH_CUDA_GRADS_WRITTEN", "1", AB "0: zero-fill every weight gradient before the backward"),
    T("TEZGAH_CUDA_LN_CHUNKS", "512", "Layer/RMSNorm one-pass backward's chunk count (16..8192; other sums)"),
    T("TEZGAH_CUDA_LN_RB", "1", AB "0: no one-pass LayerNorm backward"),
    T("TEZGAH_CUDA_LN_WARPS", "by C", "one-pass Layer/RMSNorm backward's warps per block (1..8)"),
    T("TEZGAH_CUDA_MATMUL", "unset", "naive: the fallback matmul kernel only (tests)"),
    T("TEZGAH_CUDA_MMA", "1", AB "0: no tensor-core kernels for small batches"),
    T("TEZGAH_CUDA_MMA_PREA", "1", AB "0: small-batch kernels load a chunk by chunk"),
    T("TEZGAH_CUDA_MMA_TN", "2,4", "small-batch tensor-core tiles per block: S,L (1, 2, 4 or 8)"),
    T("TEZGAH_CUDA_MM_RES", "with bf16", AB "1/0: residual add in the matmul epilogue on/off"),
    T("TEZGAH_CUDA_RMS_ONEPASS", "1", AB "0: RMSNorm backward by rows, then a column sum"),
    T("TEZGAH_CUDA_ROPE_PAIRS", "0", AB "1: RoPE one pair per thread, not 16-byte vectors"),
    T("TEZGAH_CUDA_STEP", "0", "1: decode with the one-kernel step (slower so far)"),
    T("TEZGAH_CUDA_STEP_PF", "1", AB "0: the one-kernel step without prefetch"),
    T("TEZGAH_CUDA_STEP_TRACE", "0", "1: time the one-kernel step's barriers (block 0's clock)"),
    T("TEZGAH_CUDA_UPLOAD_THREADS", "4", "host threads filling a large upload's staging slots"),
    T("TEZGAH_CUDA_WEIGHTS_RO", "1", AB "0: keep the fp32 weights of a bf16 sample"),
    T("TEZGAH_CUDNN_ALLOW_NONDET", "0", "1: let cuDNN pick nondeterministic backward engines"),
    T("TEZGAH_DEBUG_KILL", "unset", "RANK:STEP[:stop]: kill (stop) that rank there (tests)"),
    T("TEZGAH_DEBUG_MEM_FREE", "unset", "BYTES: the backend's free memory, for --recompute auto (tests)"),
    T("TEZGAH_DETACH_EXIT", "0", AB "1: a child process holds the CUDA context's teardown at exit"),
    T("TEZGAH_EXIT_RESET", "0", AB "1: cudaDeviceReset before the quick exit"),
    T("TEZGAH_MM_LOOP", "panels", AB "CPU GEMM macro-kernel loop order: panels or strips"),
    T("TEZGAH_MM_MC", "128", "CPU GEMM's A block rows (a blocking choice: the same bits)"),
    T("TEZGAH_MM_TILE", "by CPU", "CPU GEMM register tile, MRxNR (8x32, 12x32pf, 6x16, ...; same bits)"),
    T("TEZGAH_PREFILL_ROWS", "0", AB "1: prefill a batched sample row by row"),
    T("TEZGAH_PROFILE_SHAPES", "0", "1: profile rows of the WebGPU matmuls name their shapes"),
    T("TEZGAH_TOK_GPU_BATCH_CAP", "by limits", "bytes of text per GPU tokenizer batch, at most (tests)"),
    T("TEZGAH_TOK_GPU_COUNT", "gpu", "cpu: GPU BPE training counts words on the CPU"),
    T("TEZGAH_TOK_GPU_FUSED", "0", AB "1: GPU BPE training in two dispatches an iteration"),
    T("TEZGAH_TOK_GPU_HUGE", "4096", "pre-tokens longer than this encode on the CPU (tests)"),
    T("TEZGAH_TOK_GPU_KEYBITS", "32", "GPU word table's key bits, short to force collisions (tests)"),
    T("TEZGAH_TOK_GPU_NOOP_ITERS", "0", "N: time N empty GPU BPE iterations after the end"),
    T("TEZGAH_TOK_GPU_PRETOK", "gpu", "cpu: pre-tokenize on the CPU in GPU encoding"),
    T("TEZGAH_TOK_GPU_SEGMENT", "16 MiB", "bytes of text per GPU encoding pipeline step (tests)"),
    T("TEZGAH_WEBGPU_ACT", "by precision", AB "f32 keeps activations fp32 under f16; f16 requires f16"),
    T("TEZGAH_WEBGPU_ACT16", "1", AB "0: fp32 matmul inputs under f16 (also fp32 op tests)"),
    T("TEZGAH_WEBGPU_ACT16_VEC", "1", AB "0: per-element f16 variants of the scalar kernels"),
    T("TEZGAH_WEBGPU_ARENA", "0", AB "1: all activations in one buffer"),
    T("TEZGAH_WEBGPU_ATTN_DKDV_NT", "256", "flash dK/dV kernel's threads (128 or 256)"),
    T("TEZGAH_WEBGPU_ATTN_DKDV_ORDER", "1", AB "flash dK/dV kernel's grid order (0 or 1)"),
    T("TEZGAH_WEBGPU_ATTN_DKDV_RG", "as ATTN_RG", "flash dK/dV kernel's row groups (1 or 2)"),
    T("TEZGAH_WEBGPU_ATTN_DQ16", "1", AB "0: fp32 dq partials in subgroup-matrix attention"),
    T("TEZGAH_WEBGPU_ATTN_DQ_KB", "262144", "KiB for attention backward's dq partials, at most"),
    T("TEZGAH_WEBGPU_ATTN_DQ_NT", "256", "flash dQ kernel's threads (128 or 256)"),
    T("TEZGAH_WEBGPU_ATTN_DQ_ORDER", "1", AB "flash dQ kernel's grid order (0 or 1)"),
    T("TEZGAH_WEBGPU_ATTN_DQ_RG", "as ATTN_RG", "flash dQ kernel's row groups (1 or 2)"),
    T("TEZGAH_WEBGPU_ATTN_D_VEC", "1", AB "0: attention's D pass one element a thread"),
    T("TEZGAH_WEBGPU_ATTN_FD", "1", AB "0: attention's D in its own pass, not in flash dK/dV"),
    T("TEZGAH_WEBGPU_ATTN_FUSED_DQ", "1", AB "0: flash backward's dq apart (fa_dq + fa_dkdv)"),
    T("TEZGAH_WEBGPU_ATTN_FWD_NT", "256", "flash forward's threads (128 or 256)"),
    T("TEZGAH_WEBGPU_ATTN_FWD_ORDER", "1", AB "flash forward's grid order (0 or 1)"),
    T("TEZGAH_WEBGPU_ATTN_FWD_RG", "as ATTN_RG", "flash forward's row groups (1 or 2)"),
    T("TEZGAH_WEBGPU_ATTN_NOPACK", "1", AB "0: pack q, k, v before subgroup-matrix attention"),
    T("TEZGAH_WEBGPU_ATTN_NT", "256", "all flash kernels' threads (128 or 256)"),
    T("TEZGAH_WEBGPU_ATTN_ORDER", "1", AB "all attention kernels' grid order (0 or 1)"),
    T("TEZGAH_WEBGPU_ATTN_PACK8", "1", AB "0: no one-pass f16 q/k/v packing"),
    T("TEZGAH_WEBGPU_ATTN_PF", "GPU 1, CPU 0", AB "flash kernels' register prefetch (0 or 1)"),
    T("TEZGAH_WEBGPU_ATTN_RG", "2", "all flash kernels' row groups (1 or 2; 1 where only TEZGAH_WEBGPU_ATTN_NT "
                                  "is set)"),
    T("TEZGAH_WEBGPU_ATTN_RO", "1", AB "0: attention arguments bound read_write"),
    T("TEZGAH_WEBGPU_ATTN_SGMAT_EMU", "0", "1: emulate subgroup-matrix attention (tests on lavapipe)"),
    T("TEZGAH_WEBGPU_ATTN_SG_ABLATE", "0", "bits 1, 2, 4: drop parts of the staged dK/dV (timing only)"),
    T("TEZGAH_WEBGPU_ATTN_SG_DB", "1", AB "0: staged dK/dV single-buffered"),
    T("TEZGAH_WEBGPU_ATTN_SG_DK8", "1", AB "0: dK/dV rows written one by one"),
    T("TEZGAH_WEBGPU_ATTN_SG_DQV4", "1", AB "0: dq sum one float a thread"),
    T("TEZGAH_WEBGPU_ATTN_SG_EWF", "1", AB "0: element-wise passes in round 1's order"),
    T("TEZGAH_WEBGPU_ATTN_SG_EWO", "1", AB "0: forward softmax entries in loops"),
    T("TEZGAH_WEBGPU_ATTN_SG_EWX", "1", AB "0: dK/dV element-wise scales not folded"),
    T("TEZGAH_WEBGPU_ATTN_SG_F32IN", "0", AB "1, 2: fp32 q/k/v read directly (2: converted at loads)"),
    T("TEZGAH_WEBGPU_ATTN_SG_FWD_NSG", "0", AB "1: written-out forward on one subgroup"),
    T("TEZGAH_WEBGPU_ATTN_SG_KREG", "0", AB "1: staged kernels hold K in registers"),
    T("TEZGAH_WEBGPU_ATTN_SG_LAZY", "1", AB "output rescaling: 0 always, 1 past 8 nats, 2 on any growth"),
    T("TEZGAH_WEBGPU_ATTN_SG_NSG", "4", "subgroups per attention workgroup (2 or 4; unset: 2 for the written-out "
                                     "forward)"),
    T("TEZGAH_WEBGPU_ATTN_SG_ONEPASS", "by head_dim", AB "1/0: one-pass / two-pass forward"),
    T("TEZGAH_WEBGPU_ATTN_SG_STAGE", "1", AB "staged kernels: 0 none, 1 all, 2 forward, 3 backward"),
    T("TEZGAH_WEBGPU_ATTN_SG_VST", "1", AB "0: dK/dV without V staged"),
    T("TEZGAH_WEBGPU_ATTN_SG_WO", "1", AB "0: subgroup-matrix attention not written out"),
    T("TEZGAH_WEBGPU_BIAS16", "1", AB "0: bias gradient from fp32 dout"),
    T("TEZGAH_WEBGPU_COLSUM", "1", AB "0: the former column-sum kernels"),
    T("TEZGAH_WEBGPU_ELEM8", "1", AB "0: GeLU four elements a thread, not eight"),
    T("TEZGAH_WEBGPU_EMBED_IPW", "8", "embedding backward's items per workgroup (1..1024)"),
    T("TEZGAH_WEBGPU_F16_PIECES", "1", AB "0: f16 tensors' pieces counted in fp32 elements"),
    T("TEZGAH_WEBGPU_FILL_VEC", "1", AB "0: fills one element a thread"),
    T("TEZGAH_WEBGPU_FLUSH_EVERY", "32", "ops recorded before a submit (0: only at downloads)"),
    T("TEZGAH_WEBGPU_GELU_EPI", "auto", AB "GeLU in matmul epilogues: auto (bwd), off, bwd, fwd, both"),
    T("TEZGAH_WEBGPU_GRAD16", "with sgmat", AB "1/0: f16 gradient copies for fp32 runs"),
    T("TEZGAH_WEBGPU_HIDE_F16", "0", "1: act as an adapter without ShaderF16 (tests)"),
    T("TEZGAH_WEBGPU_LN_SG", "1", AB "0: LayerNorm without subgroup reductions"),
    T("TEZGAH_WEBGPU_MAX_BINDING", "adapter's", "BYTES: a smaller binding limit, to run the split paths (tests)"),
    T("TEZGAH_WEBGPU_MEMOPS", "1", AB "0: the memory-bound ops' former kernels"),
    T("TEZGAH_WEBGPU_MM", "by adapter", "fallback matmul tile TMxTN:BK:NBUF, e.g. 8x16:16:2"),
    T("TEZGAH_WEBGPU_MM_DB", "1", AB "0: bias gradient apart from the dW matmul"),
    T("TEZGAH_WEBGPU_MM_RES", "1", AB "0: residual add apart from the matmul"),
    T("TEZGAH_WEBGPU_MM_RW", "8x8:8:2", "TEZGAH_WEBGPU_MM for read_write dispatches"),
    T("TEZGAH_WEBGPU_MM_TT", "1", AB "0: matmul_t without a transposed weight copy"),
    T("TEZGAH_WEBGPU_NORM_FUSE", "1", AB "0: LayerNorm backward not fused"),
    T("TEZGAH_WEBGPU_NORM_ROWS", "64", "fused norm backward's rows a workgroup (8..4096)"),
    T("TEZGAH_WEBGPU_NORM_V8", "1", AB "0: norms without 8-wide f16 kernels"),
    T("TEZGAH_WEBGPU_NO_FAST_MATMUL", "unset", AB "set: fallback matmul without matmul_fast.wgsl"),
    T("TEZGAH_WEBGPU_NO_WGINIT", "0", AB "1: no zeroing of workgroup memory (unsafe)"),
    T("TEZGAH_WEBGPU_RO", "GPU 1, CPU 0", AB "read-only variants of the preamble kernels"),
    T("TEZGAH_WEBGPU_SGMAT_A16W", "1", AB "0: no f16 copy of a written while staged"),
    T("TEZGAH_WEBGPU_SGMAT_A32", "1", AB "0: fp32 operand converted by a copy pass"),
    T("TEZGAH_WEBGPU_SGMAT_EMU", "0", "1: emulate subgroup matrices (tests on lavapipe)"),
    T("TEZGAH_WEBGPU_SGMAT_EPRE", "default", AB "epilogue prefetch: 0 none, all, else the default"),
    T("TEZGAH_WEBGPU_SGMAT_NATIVE16", "0", "1, 2: a call off the native f16 path is an error (tests)"),
    T("TEZGAH_WEBGPU_SGMAT_O16", "1", AB "0: f16 outputs through fp32 scratch"),
    T("TEZGAH_WEBGPU_SGMAT_SLOTS", "132", "workgroup slots the split-K choice assumes (0: the former rule, "
                                       "ceil(264/tiles) pieces)"),
    T("TEZGAH_WEBGPU_SGMAT_SPLIT", "1", AB "0: no split-K for the weight gradient"),
    T("TEZGAH_WEBGPU_SGMAT_SPLIT_COST", "4", "percent one split-K piece costs in that choice"),
    T("TEZGAH_WEBGPU_SGMAT_TILE", "built", "subgroup-matrix tiles to try, ';'-separated (all forms)"),
    T("TEZGAH_WEBGPU_SGMAT_TILE_DYTX", "built", "the same for dYᵀ·X (weight gradients)"),
    T("TEZGAH_WEBGPU_SGMAT_TILE_DYW", "built", "the same for dY·W (input gradients)"),
    T("TEZGAH_WEBGPU_SGMAT_TILE_SHORTK", "built", "the same, tried first for X·Wᵀ and dY·W at K <= 1024"),
    T("TEZGAH_WEBGPU_SGMAT_TILE_XWT", "built", "the same for X·Wᵀ (forward)"),
    T("TEZGAH_WEBGPU_SG_REUSE", "1", AB "0: convert every operand to f16 on every call"),
    T("TEZGAH_WEBGPU_SWIGLU_BWD_V8", "1", AB "0: SwiGLU backward one element a thread"),
    T("TEZGAH_WEBGPU_SWIGLU_EPI", "1", AB "0: SwiGLU backward apart from the matmul"),
    T("TEZGAH_WEBGPU_SWIGLU_V8", "1", AB "0: SwiGLU forward one element a thread"),
    T("TEZGAH_WEBGPU_XENT4", "1", AB "0: cross-entropy one column an iteration"),
    T("TZ_SGMAT_ADAPTER_TOGGLES", "as webgpu", "Dawn toggles for sgmat.c's own adapter (measurements)"),
    T("TZ_SGMAT_DUMP", "unset", "set: print each subgroup-matrix shader's source (debugging)"),
    T("TZ_SGMAT_EMU_SGSIZE", "8", "threads an emulated subgroup spans (tests)"),
};
#undef G
#undef C
#undef W
#undef K
#undef T
#define N_VARS (int)(sizeof VARS / sizeof *VARS)

static const char *HELP =
    "usage: tezgah env [--set]\n"
    "List the environment variables tezgah reads: name, default, meaning, and the\n"
    "value set here (\"= VALUE\"). Groups: general, cpu, webgpu, cuda, and test\n"
    "(switches for the tests and for measurements: A/B of kernel forms and tuning\n"
    "sizes; their defaults are the measured choices).\n\n"
    "  --set                  only the variables set in this environment\n";

/* "what" wrapped at 79 columns, indented 6 (texts are ASCII but for '·' and 'ᵀ', 2-3 bytes
 * that are one column: counted in characters, as test_help.sh counts them) */
static void print_wrapped(const char *s) {
  const int indent = 6, width = 79;
  int col = 0;
  while (*s) {
    const char *e = s;
    int cols = 0;
    while (*e && *e != ' ') cols += ((unsigned char)*e++ & 0xC0) != 0x80;
    if (col && col + 1 + cols > width) putchar('\n'), col = 0;
    if (!col) col = printf("%*s", indent, "");
    else putchar(' '), col++;
    fwrite(s, 1, (size_t)(e - s), stdout);
    col += cols;
    s = *e ? e + 1 : e;
  }
  putchar('\n');
}

int tz_cmd_env(int argc, char **argv) {
  static const struct option LONG[] = {{"set", 0, 0, 's'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
  int only_set = 0, c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":h", LONG, NULL)) != -1) {
    switch (c) {
      case 's': only_set = 1; break;
      case 'h': fputs(HELP, stdout); return 0;
      case ':': tz_arg_bad("env", LONG, argc, argv, optind, 0, 1); return tz_cli_fail();
      default: tz_arg_bad("env", LONG, argc, argv, optind, optopt, 0); return tz_cli_fail();
    }
  }
  if (optind < argc) {
    tz_err("env: unexpected argument '%s' (see tezgah env --help)", argv[optind]);
    return tz_cli_fail();
  }
  static const char *const groups[] = {"general", "cpu", "webgpu", "cuda", "test"};
  int shown = 0;
  for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
    int head = 0;
    for (int i = 0; i < N_VARS; i++) {
      const env_var *v = &VARS[i];
      const char *now = getenv(v->name);
      if (strcmp(v->group, groups[g]) || (only_set && !now)) continue;
      if (!head++) printf("%s%s:\n", shown ? "\n" : "", groups[g]);
      int col = printf("  %s (default: %s)", v->name, v->def);
      /* the value as set, cut to end the line by column 79 (a toggles list can be long) */
      int room = 79 - col - 3, len = now ? (int)strlen(now) : 0;
      if (now) printf(" = %.*s%s", len > room ? room - 3 : len, now, len > room ? "..." : "");
      putchar('\n');
      print_wrapped(v->what);
      shown++;
    }
  }
  if (only_set && !shown) printf("none of tezgah's environment variables is set (tezgah env: all of them)\n");
  return 0;
}
