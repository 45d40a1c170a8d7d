#!/usr/bin/env bash
# Tuning on a lent H100/H200 (issue 30), one call of the device tool:
#   here:   bench/gpu/pack.sh
#   device: run "bench/gpu/tune_check.sh" with carry ["bench/gpu/carry"]
# For each model in MODELS (resnet-18) and search in SEARCHES ("templates
# auto"): gpu_models tunes it at batch BATCH (1) for MINUTES (3, a fraction
# allowed) each, its
# log continuing LOGS_IN/<model>.<search>.log when that was carried (a log
# brought back resumes), then checks the tuned network against the
# interpreter and times it; then the untuned network is timed. Results under
# $OUT (TARGET: cuda; opencl tries the script here on PoCL): tune.jsonl
# (one line per run: trials, wall time, kernels tuned, latency), the logs
# <model>.<search>.log (what share/records ships), per_layer.md (each kernel
# call's device time per search: bench/gpu/compare_searches.py), tune.err
# (the tuners' tables), tests.txt (the test; SKIP_TESTS=1 skips it). DTYPE=float16
# tunes and times the networks in half storage (both searches tile a half
# network's matrix products for tensor cores). LAYOUT=NHWC builds the zoo
# models in NHWC (gpu_models --layout; its logs <model>.NHWC.<search>.log).
# MODELS may name bert-base: PyTorch on the device exports it
# (bench/gpu/torch_models.py).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/tune_check_out}
mkdir -p "$OUT"
. "$root/bench/gpu/unpack.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
# The tuning path's own test first: a tiny network tuned by both searches
# measures on the device whose target it read (tests/driver/tune_gpu_test.cc).
# (Its cases are named by the target: "cuda -tf32" is cuda_tf32.)
case_name=$(printf '%s' "${TARGET:-cuda}" | tr -c 'a-zA-Z0-9' '_' | tr -s '_')
[ -n "${SKIP_TESTS:-}" ] || timeout 180 "$work/tessera_tests" --gtest_filter="*TuneOnGpu*${case_name}_*" \
  >"$OUT/tests.txt" 2>&1; tail -3 "$OUT/tests.txt" 2>/dev/null
for m in ${MODELS:-resnet-18}; do
  if [ "$m" = bert-base ]; then
    m=/tmp/bert_base.onnx
    [ -f "$m" ] || python3 -c "import sys; sys.path.insert(0, '$root/bench/gpu'); import torch_models; torch_models.export_bert_onnx('$m')" \
      >>"$OUT/tune.err" 2>&1 || { echo "bert-base: the export failed (tune.err)"; continue; }
  fi
  for s in ${SEARCHES:-templates auto}; do
    name=$(basename "$m" .onnx)${LAYOUT:+.$LAYOUT}
    log="$OUT/$name.$s.log"
    [ -f "${LOGS_IN:-/nonexistent}/$name.$s.log" ] && cp "$LOGS_IN/$name.$s.log" "$log"
    echo "== $m, $s, ${MINUTES:-3} min"
    timeout "$(awk "BEGIN {print int(${MINUTES:-3} * 90 + 120)}")" "$work/gpu_models" --target "${TARGET:-cuda}" --batch "${BATCH:-1}" --dtype "${DTYPE:-float32}" --check --bench --profile \
      ${LAYOUT:+--layout $LAYOUT} --tune "$s" --minutes "${MINUTES:-3}" --log "$log" "$m" >>"$OUT/tune.jsonl" 2>>"$OUT/tune.err"
    tail -1 "$OUT/tune.jsonl" | cut -c1-400
  done
  "$work/gpu_models" --target "${TARGET:-cuda}" --batch "${BATCH:-1}" --dtype "${DTYPE:-float32}" --bench --profile \
    ${LAYOUT:+--layout $LAYOUT} "$m" >>"$OUT/tune.jsonl" 2>>"$OUT/tune.err"
  tail -1 "$OUT/tune.jsonl" | cut -c1-400
done
# Per layer: untuned, templates and auto-scheduler side by side.
python3 "$root/bench/gpu/compare_searches.py" "$OUT/tune.jsonl" | tee "$OUT/per_layer.md"
