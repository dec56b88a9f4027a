# shellcheck shell=bash disable=SC2154  # bt, steps, tmo: set by the attention scripts that call prof
# Sourced (from the repository root) by the scripts/device_webgpu_*.sh that run WebGPU on the
# GPU machine (../shared/docs/DEVICE.md): their common prologue and helpers.
#
# On sourcing, unless DRY is set (a local dry run of a script's logic, on lavapipe): unpack the
# carried Vulkan loader packages (.gl/*.deb) and point Vulkan at NVIDIA's driver and tezgah at
# the carried Dawn (.wg/libwebgpu_wrapper.so). Then the scripts call:
#   device_start NAME OUT_DEFAULT LOG "$@"
#     DIR = the script's first argument (required: "usage: NAME.sh DIR" otherwise), the carried
#     folder of portable binaries and their lib/ (put first on LD_LIBRARY_PATH); out = $OUT, else
#     OUT_DEFAULT (created); sum = $out/summary.log (the result lines) and, when LOG is not "",
#     log = $out/LOG (everything), both emptied; then a first line with the date and the GPU.
#   say TEXT...        a result line: with a log, to the log, the summary and stdout; without,
#                      stamped "[HH:MM:SS +SECONDSs]" to the summary and stdout
#   device_dawn_node   (after device_start) for the scripts that load npm webgpu's dawn.node
#                      through the Node-API stubs: DIR/bin (tezgah, the tests and
#                      libtz_napi_stub.so) after DIR/lib on LD_LIBRARY_PATH, DIR/dawn/dawn.node.xz
#                      unpacked to $DAWN_NODE (default /tmp/dawn.node) and TEZGAH_WEBGPU_LIB
#                      pointing at it
#   train_gpt2 NAME PRECISION STEPS ARGS... (train_shape NAME gpt2|llama PRECISION STEPS ARGS...:
#                      the same with the llama shape, SwiGLU d_ff 2048, as the second choice)
#                      `DIR/bin/tezgah train --backend webgpu --precision PRECISION` on GPT-2 124M,
#                      B 16, T 1024, STEPS steps of DIR/data/train.bin (timeout TTMO, else 120 s;
#                      ARGS appended), into $out/NAME.log and the run folder /tmp/run_NAME; sets
#                      rc (its exit status) and tps (the median tok_per_s of steps 6.., "nan"
#                      without any) and writes the loss of every step to $out/loss_NAME.txt
#   run_env NAME ARCH VAR=VALUE...
#                      train_shape NAME ARCH f16 $steps (10 when unset) with the variables set
#                      for that run only, after removing /tmp/run_NAME; TPS[NAME] = its median
#                      tokens/s, and a result line (rc, tokens/s, peak memory, the first error)
#   f16_tests          the f16-activation tests on the real builtins: test_webgpu_ops'
#                      test_act_f16* and test_attention_sgmat (subgroup matrices required),
#                      test_webgpu_train's act16 and llama cases; a result line each. With
#                      SG_VARIANTS ("VAR=VALUE ...;VAR=VALUE ...": sets of switches, ';' between
#                      sets) also test_attention_sgmat's f16 cases (SG_CASES, default GQA 4/2 at
#                      T 70 and GPT-2's 12 heads at T 1024) under each set, e.g. the written-out
#                      forward's A/B forms TEZGAH_WEBGPU_ATTN_SG_EWO=0, _FWD_NSG=1
#   median_tps FILE    a metrics.jsonl's median tok_per_s of steps 6.. ("nan" without any)
#   torch_peers        the peers, PyTorch bf16 eager (DIR/data/torch_gpt.py, 8 steps, B16 T1024):
#                      TG (GPT-2 124M) and TL (the llama shape) their tokens/s, "nan" without the
#                      script; logs torch_gpt2.log, torch_llama.log
#   valloss_1500       where DIR/vl/{train,val}.bin.xz exist: 1,500 steps of GPT-2 124M f16 on the
#                      real corpus (scripts/device_act16_valloss.sh's data and flags), a result
#                      line with its val losses, median tokens/s and skipped steps (log /tmp/vl.log)
#   pack_logs          $out's logs into $out/logs.tgz beside summary.log
#   row KEY FILE       the ms/step of row KEY of the last per-op profile table in FILE
#   bench_rows FILE    a `TEZGAH_PROFILE=1 bench_webgpu attention` log's rows, one per head_dim
#   prof NAME VAR=VALUE...
#                      the attention scripts' profiled run: `bench_webgpu train $bt $steps` with
#                      TEZGAH_PROFILE=1 and the variables (timeout TMO, else $tmo), into
#                      $out/p_NAME.log, and a line of its attention and matmul rows; the
#                      attention kernels' ms/step kept in F[NAME] (fwd), Q[NAME] (dq), K[NAME] (dkdv)
if [[ -z ${DRY:-} ]]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  export TEZGAH_WEBGPU_LIB=$PWD/.wg/libwebgpu_wrapper.so
fi

device_start() {
  local name=$1 out_default=$2 log_name=$3
  shift 3
  dir=${1:?usage: $name.sh DIR}
  out=${OUT:-$out_default}
  mkdir -p "$out"
  sum=$out/summary.log
  log=${log_name:+$out/$log_name}
  [[ -z $log ]] || : >"$log"
  : >"$sum"
  export LD_LIBRARY_PATH=$PWD/$dir/lib:${LD_LIBRARY_PATH:-}
  local gpu
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  if [[ -n $log ]]; then say "$name: $(date -u) $gpu"; else say "start $(date -u) $gpu"; fi
}

device_dawn_node() {
  export LD_LIBRARY_PATH=$PWD/$dir/lib:$PWD/$dir/bin:${LD_LIBRARY_PATH#"$PWD/$dir/lib:"}
  # (DAWN_NODE, default /tmp/dawn.node: where; rewritten only when it differs, so that a local
  # DRY run does not truncate a file that another process on the machine has mapped: give local
  # runs their own DAWN_NODE)
  local dn=${DAWN_NODE:-/tmp/dawn.node}
  xz -dc "$dir/dawn/dawn.node.xz" | cmp -s - "$dn" || xz -dc "$dir/dawn/dawn.node.xz" >"$dn"
  export TEZGAH_WEBGPU_LIB=$dn
}

# median_tps METRICS: the median tok_per_s of a run's metrics.jsonl from step 6 on, "nan" without any
median_tps() {
  grep -o '"tok_per_s":[0-9.e+]*' "$1" 2>/dev/null | cut -d: -f2 | tail -n +6 | sort -g |
    awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'
}

# shellcheck disable=SC2034  # TG, TL: read by the calling script's table
torch_peers() {
  TG=nan TL=nan
  [[ -f $dir/data/torch_gpt.py ]] || return 0
  TF32=1 timeout 40 python3 "$dir/data/torch_gpt.py" --arch gpt2 --B 16 --T 1024 --compile 0 --steps 8 >"$out/torch_gpt2.log" 2>&1
  TG=$(grep -oE 'tok_s=[0-9]+' "$out/torch_gpt2.log" | tail -1 | cut -d= -f2)
  TF32=1 timeout 40 python3 "$dir/data/torch_gpt.py" --arch llama --ff 2048 --B 16 --T 1024 --compile 0 --steps 8 >"$out/torch_llama.log" 2>&1
  TL=$(grep -oE 'tok_s=[0-9]+' "$out/torch_llama.log" | tail -1 | cut -d= -f2)
}

valloss_1500() {
  [[ -f $dir/vl/train.bin.xz ]] || return 0
  local s vals
  for s in train val; do xz -dc "$dir/vl/$s.bin.xz" >"/tmp/$s.bin"; done
  rm -rf /tmp/run_vl
  timeout 220 "$dir/bin/tezgah" train --backend webgpu --precision f16 --model gpt2-124m -B 16 -T 1024 --vocab-size 50257 \
    --train-shards /tmp/train.bin --val-shards /tmp/val.bin --steps 1500 --lr 6e-4 --warmup 100 --min-lr-frac 0.1 \
    --weight-decay 0.1 --grad-clip 1.0 --seed 1337 --val-every 250 --val-batches 8 --ckpt-every 0 --sample-tokens 0 \
    --log-every 50 --run-dir /tmp/run_vl >/tmp/vl.log 2>&1
  rc=$?
  vals=$(grep -o '"val_loss":[0-9.e+-]*' /tmp/run_vl/metrics.jsonl 2>/dev/null | cut -d: -f2 | tr '\n' ' ')
  say "valloss 1500 steps rc $rc: val losses $vals; median tokens/s $(median_tps /tmp/run_vl/metrics.jsonl); $(grep -E 'skipped' /tmp/vl.log | tail -1 | cut -c1-160)"
}

f16_tests() {
  TZ_TEST_FILTER="test_act_f16*,test_attention_sgmat" TEZGAH_TEST_SGMAT_REQUIRED=1 timeout 150 "$dir/bin/test_webgpu_ops" \
    >"$out/t_ops.log" 2>&1
  say "test_webgpu_ops act_f16*, attention_sgmat rc $?: $(grep -E 'PASSED|FAILED|SKIPPED|error' "$out/t_ops.log" | tail -4 | tr '\n' ' ' | cut -c1-300)"
  local f
  for f in "*act16*" "test_train_llama*"; do
    TZ_TEST_FILTER=$f timeout 90 "$dir/bin/test_webgpu_train" >"$out/t_train.log" 2>&1
    say "test_webgpu_train $f rc $?: $(grep -E 'worst|PASSED|FAILED' "$out/t_train.log" | tr '\n' ';' | cut -c1-300)"
  done
  local set i=0
  while IFS= read -r -d ';' set || [[ -n $set ]]; do
    [[ -n ${set// /} ]] || continue
    i=$((i + 1))
    # shellcheck disable=SC2086  # the set's variables, one word each
    env $set TZ_TEST_FILTER=test_attention_sgmat TEZGAH_TEST_SGMAT_REQUIRED=1 TZ_TEST_SG_ACT=f16 \
      TZ_TEST_SG_CASE="${SG_CASES:-2,70,4,2,64 4,1024,12,12,64}" timeout 120 "$dir/bin/test_webgpu_ops" \
      >"$out/t_sgv$i.log" 2>&1
    say "test_attention_sgmat [$set] rc $?: $(grep -E 'PASSED|FAILED|error|worst err' "$out/t_sgv$i.log" | tail -4 | tr '\n' ' ' | cut -c1-300)"
  done < <(printf %s "${SG_VARIANTS:-}")
}

train_gpt2() { train_shape "$1" gpt2 "${@:2}"; }
# train_shape NAME gpt2|llama PRECISION STEPS ARGS...: train_gpt2's run at GPT-2 124M's sizes, or
# the llama shape (RMSNorm, RoPE, SwiGLU d_ff 2048, the same C, heads and layers)
train_shape() {
  local name=$1 arch=$2 prec=$3 n=$4
  shift 4
  local shape=(--arch gpt2)
  [[ $arch == llama ]] && shape=(--arch llama --d-ff 2048)
  timeout "${TTMO:-120}" "$dir/bin/tezgah" train --backend webgpu --precision "$prec" "${shape[@]}" --n-layer 12 \
    --n-head 12 --d-model 768 --max-seq-len 1024 -B 16 -T 1024 --vocab-size 50257 \
    --train-shards "$dir/data/train.bin" --val-shards "$dir/data/train.bin" --steps "$n" --val-every 0 \
    --ckpt-every 0 --sample-tokens 0 --log-every 1 --run-dir "/tmp/run_$name" "$@" >"$out/$name.log" 2>&1
  rc=$?
  # shellcheck disable=SC2034  # tps: read by the calling script's result line
  tps=$(median_tps "/tmp/run_$name/metrics.jsonl")
  grep -o '"loss":[0-9.e+-]*' "/tmp/run_$name/metrics.jsonl" 2>/dev/null | cut -d: -f2 >"$out/loss_$name.txt"
}

declare -A TPS
run_env() {
  local name=$1 arch=$2 kv
  shift 2
  rm -rf "/tmp/run_$name"
  for kv in "$@"; do export "${kv?}"; done
  train_shape "$name" "$arch" f16 "${steps:-10}"
  for kv in "$@"; do unset "${kv%%=*}"; done
  TPS[$name]=$tps
  say "train $name ($arch $*) rc $rc: median tokens/s (steps 6..) $tps; $(grep -iE 'peak' "$out/$name.log" | tail -1 | cut -c1-90) $(grep -iE 'error' "$out/$name.log" | head -1 | cut -c1-160)"
}

# pack_logs: every log and table under $out into $out/logs.tgz beside summary.log (a device call
# brings few files back)
pack_logs() {
  (cd "$out" || exit
    shopt -s nullglob
    files=(*.log *.txt *.jsonl)
    ((${#files[@]})) || exit 0
    tar czf logs.tgz --exclude=summary.log -- "${files[@]}" &&
      find . -maxdepth 1 -type f ! -name summary.log ! -name logs.tgz -delete)
}

say() {
  if [[ -n ${log:-} ]]; then
    echo "$@" | tee -a "$log" >>"$sum"
    echo "$@"
  else
    echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$sum"
  fi
}

declare -A F Q K
row() { awk -v k="$1" '$1 == k {print $2}' "$2" | tail -1; }

prof() {
  local name=$1
  shift
  env "$@" TEZGAH_PROFILE=1 timeout "${TMO:-$tmo}" "$dir/bench_webgpu" train $bt "$steps" >"$out/p_$name.log" 2>&1
  local rc=$?
  local f=$out/p_$name.log
  F[$name]=$(row attention_fwd "$f")
  Q[$name]=$(row attention_bwd_dq "$f")
  K[$name]=$(row attention_bwd_dkdv "$f")
  say "[$name] rc $rc fwd ${F[$name]} dq ${Q[$name]} dkdv ${K[$name]}" \
    "d $(row attention_bwd_d "$f") matmul_t $(row matmul_t "$f") matmul $(row matmul "$f")" \
    "matmul_at $(row matmul_at "$f") total $(row total "$f") ($*)"
}

# a bench log's per-head_dim lines: hd fwd dkdv dq d conv sum (ms per pair; conv: the f16 copies
# of q/k/v (attention_to_f16) and the fp32 path's conversions of its out), then the bench's own
# wall ms fwd, bwd. Needs stdout line-buffered: each head_dim's table (stderr) comes before its
# "attention B=" line (stdout).
bench_rows() {
  awk '$1 ~ /^attention_(fwd|bwd_dkdv|bwd_dq|bwd_d)$/ && $2 ~ /^[0-9.]+$/ {r[$1] = $2}
       $1 == "attention_to_f16" && $2 ~ /^[0-9.]+$/ {cv += $2}
       $1 ~ /^to_f(16|32)$/ && $2 == "(attn" && $4 ~ /^[0-9.]+$/ {cv += $4}
       /^attention B=/ {hd = $5; sub(/hd=/, "", hd); f = $9; b = $14;
         s = r["attention_fwd"] + r["attention_bwd_dkdv"] + r["attention_bwd_dq"] + r["attention_bwd_d"] + cv;
         printf "%s %s %s %s %s %s %.3f %s %s\n", hd, r["attention_fwd"] + 0, r["attention_bwd_dkdv"] + 0, r["attention_bwd_dq"] + 0,
           r["attention_bwd_d"] + 0, cv + 0, s, f, b; delete r; cv = 0}' "$1"
}
