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
#                             of 8 (what llvmpipe picks by itself on a CPU without AVX): not on
#                             the two entries that run flash attention's subgroup lane reductions
#                             (the ttime4 note below) nor test_tok_webgpu(_cli) (execution-bound:
#                             ci23's note below); set here for the program-per-entry tests
#                             (TZ_LAVAPIPE_4LANE) and with the other settings of the
#                             test_webgpu_ops entries in tests/CMakeLists.txt.
# ctest sets them for these entries (run a test program directly to see llvmpipe's defaults);
# they do nothing on a GPU adapter. History (cold CPU seconds on the loaded 2-core VM):
# ttime2 (nopt): act16 171, large 240 -> 108, tok_webgpu ~120 -> 111, train ~220 -> 133,
# webgpu_cli 93 -> 71, matmul ~345 -> 120 and nosubgroups 302 -> 101 (with 4 lanes); the plain
# test_webgpu_ops entry then cost more with nopt (475 vs 439: its T = 8192 case, since moved to
# the sweep's test_webgpu_attn_long, which kept llvmpipe's defaults until branch ci23 ran it at T 2048). ttime3: the matmul sweep
# 174 -> 79 with 4 lanes, the attention sweep 748 with nopt. test_webgpu_mainjob and
# test_tok_webgpu_cli are not set (mainjob with nopt hit ctest's 900 s limit at load 14; ttime5
# set it for mainjob once that ran one WebGPU run; ci23 its 4 lanes, below).
# Branch ttime4 (2026-12-02): every lavapipe entry of the test_webgpu_ops family, and the
# training tests, with nopt; the 4-lane width wherever the kernels' code does not depend on the
# subgroup size, which is everywhere but the flash attention kernels' lane reductions
# (lanes_sg.wgsl: SGW is a constant of the WGSL; reduce_sg.wgsl's wg_sum / wg_max are the same
# WGSL at any size): the plain test_webgpu_ops entry (its flash attention case is
# test_webgpu_ops_flash's, at the default 8 lanes, as is test_webgpu_ops_attn_pf: since ci26
# its head_dim 32 only, the prefetching kernels' head_dim 64 / 128, whose 16 threads across a row
# join partials at 4 lanes or 8 alike, at 4 lanes in test_webgpu_ops_attn_pf4),
# test_webgpu_ops_act16 (flash attention on head_dim 64 only, whose 16 threads across a row join
# two subgroups' partials at 4 lanes or 8 alike), test_webgpu_train, test_webgpu_large and
# test_webgpu_sgmat (its emulated subgroup matrices have their own size, 8, whatever
# llvmpipe's). One setting for most entries also lets an entry find in Mesa's cache the
# pipelines another compiled. (The note here said Mesa's key includes llvmpipe's settings: it
# includes GALLIVM_PERF but not the width, so until ci24 an 8-lane entry could run code another
# entry had compiled at 4 lanes; the end of this file gives each width its own directory.)
# Branch ttime5 (2026-12-02, cold, CPU s incl. every child: bench/cpu_tree.py): the main job's
# f16 run (its one WebGPU run since then) 161.1 -> 134.4 with nopt, the same losses to every
# digit; test_tok_webgpu_cli 46.2 -> 51.0 with nopt (execution-bound: not set).
# Branch attn22 (2026-12-02, load ~10, passing, with nopt): the subgroup-matrix attention's
# software stand-in, test_webgpu_ops_attn_sgemu 143 CPU s (its first case's pipelines warm from
# an earlier run, that case 69 s cold: ~200 cold; ~1,000 for the stand-in entries without it),
# test_webgpu_ops_attn_sgemu_staged 88 (cold; the staged backward's stand-in did not compile
# within 10 minutes without nopt); _direct: not measured with it. All three are sweep entries.
# Branch ciTime (2026-12-04, cold, CPU s user+sys on the loaded 2-core VM): test_webgpu_ops_act_f16
# (the f16-activation elementwise and matmul cases, added without it) 207.7 -> 163.6 with nopt,
# both passing; the new test_webgpu_ops_attn_sgemu_fwd128 with it from the start.
# Branch ci23 (2026-12-04, cold, CPU s user+sys, bench/cpu_tree.py, load ~8): test_webgpu_attn_long
# with nopt now that it runs T 2048 (tests/CMakeLists.txt): 130.3 -> 110.5; at T 8192 its T²
# work had made nopt cost more (ttime2, above). test_webgpu_ops_attn_sgemu_wo at 4 lanes (set
# with its other settings: the stand-in's WGSL uses no subgroup operation): 246.7 -> 216.2.
# test_webgpu_mainjob at 4 lanes (TZ_LAVAPIPE_4LANE below): 306.3 -> 160.7, two cold runs side
# by side at load ~4, both passing, the losses within 1.3e-5 relative of each other (8 lanes:
# 7.618502 7.271643 7.061839; 4 lanes: 7.618498 7.271671 7.061932; the CPU: 7.618497 7.271515
# 7.061880; the bound 2e-3, the summation orders differ). Its kernels' one
# subgroup-size dependence is flash attention's lane reduction at head_dim 32 (8 threads
# across a row): within one subgroup at 8 lanes (what GPUs, at 32, run), lanes_combine at 4
# (what llvmpipe picks on a CPU without AVX). The first stays covered against the CPU op by
# op in test_webgpu_ops_flash (head_dim 32 at llvmpipe's 8 lanes); the main job's shape end to
# end now runs the second. Its cost at 8 lanes had grown past ttime5's 134-155 since, and it
# was the test command's longest entry (284 s wall in CI, 2026-12-04).
# test_webgpu_ops_act_f16_attention (219.3 -> 118.5) and the sweep's _attn_sgemu_fwd128, which
# reads its pipelines from the cache, at 4 lanes too (tests/CMakeLists.txt says why each may).
# Measured, not set: test_tok_webgpu (its bpe / scan256 WGSL has no subgroup operation) 59.3 at
# llvmpipe's 8 lanes, 67.1 at 4, both passing, side by side at load ~2: execution-bound.
# Branch ci24 (2026-12-04, CPU s user+sys incl. children, the 2-core VM, all passing):
# test_tok_webgpu_cli with nopt, each run on a copy of the cache that test_tok_webgpu (nopt) left,
# as in CI (its COST starts it first): 38.5 -> 29.1 at load ~6, 28.4 -> 23.6 at load ~2. Its
# tokenizer pipelines are test_tok_webgpu's; ttime5's 46.2 -> 51.0 was each run cold, alone.
# docs/RELIABILITY.md has the measurements.
set(TZ_LAVAPIPE_TESTS test_webgpu_ops test_webgpu_ops_flash test_webgpu_ops_matmul
  test_webgpu_ops_nosubgroups test_webgpu_matmul_sweep test_webgpu_attn_variants
  test_webgpu_ops_attn_sgemu test_webgpu_ops_attn_sgemu_direct test_webgpu_ops_attn_sgemu_staged
  test_webgpu_ops_attn_sgemu_db test_webgpu_ops_attn_sgemu_wo test_webgpu_ops_attn_sgemu_fwd128
  test_webgpu_cli test_webgpu_ops_attn_pf test_webgpu_ops_attn_pf4 test_webgpu_ops_act16 test_webgpu_ops_act16_sgemu test_webgpu_ops_act_f16
  test_webgpu_ops_act_f16_attention
  test_webgpu_large test_tok_webgpu
  test_webgpu_train test_webgpu_train_arena test_webgpu_sgmat test_webgpu_sgmat_sweep
  test_webgpu_mainjob test_tok_webgpu_fused test_webgpu_attn_long test_webgpu_attn_long128 test_tok_webgpu_cli)
set_property(TEST ${TZ_LAVAPIPE_TESTS} APPEND PROPERTY ENVIRONMENT "GALLIVM_PERF=nopt")
# (test_webgpu_ops, _act16, _matmul, _nosubgroups and the matmul sweep set the width with their
# other settings in tests/CMakeLists.txt)
# test_webgpu_cli at 4 lanes too (branch ci24): it checks the CLI's behaviour on the WebGPU
# backend (a missing Dawn, --profile's table, the binding-limit error, sample's stderr note) on
# a 1-layer d_model 32 model, nothing that depends on the subgroup size; flash attention's
# in-subgroup reductions at 8 lanes stay covered against the CPU op by op in
# test_webgpu_ops_flash and _attn_pf. Until ci24 it ran at 8 lanes on whatever pipelines
# 4-lane entries had left in the shared cache (below: that cache now has a directory per
# width). CPU s (branch ci24, load ~2, passing): 20.5 at 8 lanes on the one cache after
# test_webgpu_mainjob (the old CI), 74.0 at 8 lanes cold in its own directory, 10.7 at 4 lanes
# after test_webgpu_mainjob, as in CI (COST 160 vs 70; docs/RELIABILITY.md).
set(TZ_LAVAPIPE_4LANE test_webgpu_train test_webgpu_train_arena test_webgpu_large test_webgpu_sgmat test_webgpu_sgmat_sweep
  test_webgpu_mainjob test_webgpu_cli)
set_property(TEST ${TZ_LAVAPIPE_4LANE} APPEND PROPERTY ENVIRONMENT "LP_NATIVE_VECTOR_WIDTH=128")

# One Mesa shader cache per llvmpipe width. Mesa 25.0.7's llvmpipe keys its disk cache on the
# shader, on GALLIVM_PERF (lp_disk_cache_create hashes gallivm_get_perf_flags() into the cache's
# driver id, so nopt and optimised entries never read each other's code) and on the CPU's
# features, but not on LP_NATIVE_VECTOR_WIDTH: an 8-lane run found the code a 4-lane run had
# compiled for the same WGSL and ran it, with 4-lane subgroups, while the host, which derives
# constants from the subgroup size it queried (the v8 LayerNorm's NK: nv8_nk), believed it ran 8.
# test_webgpu_train's test_train_gpt2_act16 at 8 lanes failed so on a copy of CI's cache (step 2
# rel 1.43e-2 against 2e-3) and passed cold (docs/RELIABILITY.md, branch ci24). So each entry
# gets MESA_SHADER_CACHE_DIR=<base>/w<lanes> (LP_NATIVE_VECTOR_WIDTH in its environment: w4 at
# 128 bits) or <base>/wdef (llvmpipe's default width: 8 lanes with AVX2, 4 without, where wdef
# then only repeats w4's compiles). <base> is MESA_SHADER_CACHE_DIR at configure time, so that
# .ci/run's stages (the test command, the sweep, the ASan build, each configuring its own tree
# under the one directory it exports) still share pipelines per width; without it a folder of
# the build tree (not ~/.cache, which Mesa would pick: each build's entries start from their
# own cache, as CI's do). Only Mesa reads the variable: every entry gets one.
if(DEFINED ENV{MESA_SHADER_CACHE_DIR} AND NOT "$ENV{MESA_SHADER_CACHE_DIR}" STREQUAL "")
  set(TZ_MESA_CACHE_BASE "$ENV{MESA_SHADER_CACHE_DIR}")
else()
  set(TZ_MESA_CACHE_BASE "${CMAKE_BINARY_DIR}/mesa-shader-cache")
endif()
get_property(tz_lp_tests DIRECTORY PROPERTY TESTS)
foreach(t ${tz_lp_tests})
  get_test_property(${t} ENVIRONMENT tz_env)
  if(tz_env MATCHES "MESA_SHADER_CACHE_DIR=")
    continue() # an entry that chose its own cache keeps it
  endif()
  if(tz_env MATCHES "LP_NATIVE_VECTOR_WIDTH=([0-9]+)")
    math(EXPR tz_lanes "${CMAKE_MATCH_1} / 32")
    set(tz_w "w${tz_lanes}")
  else()
    set(tz_w "wdef")
  endif()
  set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "MESA_SHADER_CACHE_DIR=${TZ_MESA_CACHE_BASE}/${tz_w}")
endforeach()
