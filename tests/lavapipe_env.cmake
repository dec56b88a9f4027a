# The test environment for Mesa's lavapipe (llvmpipe), the WebGPU adapter of CI and of machines
# without a GPU. Each new pipeline costs LLVM seconds to minutes of CPU from a cold shader cache
# (a fresh clone, CI); the tests check tezgah's kernels against the CPU backend, not the code
# llvmpipe generates, so two llvmpipe settings cut that cost (measured cold on a 2-core VM,
# CPU seconds, user+sys; docs/RELIABILITY.md, "lavapipe's settings in the tests"):
#   GALLIVM_PERF=nopt         (the entries listed below) llvmpipe skips LLVM's optimisation
#                             passes on the shaders it JITs. The WGSL, Dawn's translation,
#                             the pipelines tezgah creates, the subgroup size and every
#                             kernel choice are the same; the generated
#                             CPU code runs slower, which these small shapes do not notice
#                             (test_webgpu_cli 93 -> 71 s, three matmul pipelines 26 -> 22 s).
#   LP_NATIVE_VECTOR_WIDTH=128  llvmpipe's SIMD width, and so its subgroup size, 4 lanes instead
#                             of 8 (what llvmpipe picks by itself on a CPU without AVX). Only on
#                             the entries that run no lane reductions: test_webgpu_ops_matmul
#                             and the matmul sweep (matmul_fast and matmul.wgsl reduce nothing
#                             across lanes) and test_webgpu_ops_nosubgroups (workgroup-only
#                             reductions); the
#                             8-lane subgroup paths stay in test_webgpu_ops and
#                             test_webgpu_ops_attn_pf (tests/CMakeLists.txt). Together with
#                             nopt: those three 26 -> 9.3 s.
# ctest sets them for these entries (run a test program directly to see llvmpipe's defaults);
# they do nothing on a GPU adapter.
# The entries measured with it (cold, passing, 2026-12-02; the matmul sweep runs the matmul
# entry's kernels with other tiles). The plain test_webgpu_ops entry passed cold with it in 475
# CPU s, more than without (439, cold, the same hour): not set there. Not yet: the attention
# plain entry (its T = 8192 case, where slower generated
# code mattered, is the sweep's test_webgpu_attn_long since ttime3: not measured again),
# test_webgpu_mainjob and test_tok_webgpu_cli: add each here once a cold run passes
# with it at a lower cost. test_webgpu_mainjob with nopt hit ctest's 900 s limit on
# the loaded VM (its fp32 webgpu run alone: 166 CPU s, compiles included; the main job's shapes,
# B 16, T 128, 4 layers, may be where unoptimised code shows; no cold run without it to compare).
# Added on 2026-12-02 (branch ttime2; cold with nopt, CPU seconds, passing): test_webgpu_ops_act16
# 171 (no cold CPU figure without it; 201 s wall cold on an earlier run), test_webgpu_large 108
# (240 before), test_tok_webgpu 111 (about 120 before), test_webgpu_train 133 (about 220
# before; a first try ran past ctest's 900 s on the VM at load 14, a second one without ctest's
# limit passed in 225 s wall at load 4).
# Branch ttime3 (2026-12-02, cold, passing): test_webgpu_matmul_sweep 174 CPU s with nopt alone
# -> 79 with the 4-lane width too (tests/CMakeLists.txt sets that one per entry);
# test_webgpu_attn_variants with nopt 748 (the only earlier figure: its COST, 900, from a cold
# run without it on another day; a first try at load 15-18 stopped at tezgah's 10-minute
# readback limit).
# Branch attn22 (2026-12-02, load ~10, passing, with nopt): the subgroup-matrix attention's
# software stand-in, test_webgpu_ops_attn_sgemu 143 CPU s (its first case's pipelines warm from
# an earlier run, that case 69 s cold: ~200 cold; the lead measured ~1,000 for the stand-in
# entries without it), test_webgpu_ops_attn_sgemu_staged 88 (cold; the staged backward's stand-in
# did not compile within 10 minutes without nopt); _direct: not measured with it (the same kind
# of kernels). All three are sweep entries.
set(TZ_LAVAPIPE_TESTS test_webgpu_ops_matmul test_webgpu_ops_nosubgroups test_webgpu_matmul_sweep
  test_webgpu_attn_variants test_webgpu_ops_attn_sgemu test_webgpu_ops_attn_sgemu_direct
  test_webgpu_ops_attn_sgemu_staged
  test_webgpu_cli test_webgpu_ops_attn_pf test_webgpu_ops_act16 test_webgpu_large test_tok_webgpu
  test_webgpu_train)
set_property(TEST ${TZ_LAVAPIPE_TESTS} APPEND PROPERTY ENVIRONMENT "GALLIVM_PERF=nopt")
