#!/usr/bin/env bash
# Untuned half networks on a lent H100/H200 (issue 30): their matrix
# products on tensor cores (the tensor-core template's fallback, the
# default) against the hand-written CUDA-core tiles
# (gpu_models --no-untuned-tensor-cores), each kernel call's device time
# side by side. One call of the device tool:
#   here:   bench/gpu/pack.sh
#   device: run "bench/gpu/untuned_check.sh" with carry ["bench/gpu/carry"]
# Results under $OUT: tests.txt (the CUDA tests of tensor cores and split-K,
# beside the rest), untuned.jsonl (one gpu_models line per model, batch and
# side, --check at batch 1 but for BERT-base), per_layer.md (bench/gpu/compare_untuned.py).
# MODELS (resnet-18 resnet-50 mobilenet-v2 bert-base), BATCHES (1 16),
# DTYPE (float16) and EXTRA (more gpu_models lines: "MODEL BATCH DTYPE
# FLAGS..." separated by ';') narrow or widen it; TOTAL_S (200) bounds it.
# PIPELINED=1 also runs each with its steps pipelined (--untuned-pipelined:
# the next step's fetches loaded while one computes), a third side.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/untuned_check_out}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((start + ${TOTAL_S:-200} - $(date +%s))); }
. "$root/bench/gpu/unpack.sh"

# The tests on CUDA first, alone: a test's kernels timed beside them would not be.
timeout 60 "$work/tessera_tests" --gtest_filter='*OnCuda*' \
  >"$OUT/tests.txt" 2>&1
grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.txt"; grep -E '^\[  FAILED  \]' "$OUT/tests.txt" | head

run() {  # model batch dtype flags...: one line, unless the time is up
  local m=$1 b=$2 dtype=$3
  shift 3
  [ "$(left)" -gt 20 ] || { echo "{\"model\": \"$m\", \"batch\": $b, \"skipped\": \"deadline\"}" >>"$OUT/untuned.jsonl"; return; }
  local check=""  # at batch 1, but not BERT-base (the interpreter takes minutes)
  [ "$b" = 1 ] && [ "$m" != /tmp/bert_base.onnx ] && check=--check
  timeout 90 "$work/gpu_models" --target cuda --batch "$b" --dtype "$dtype" --bench --profile $check \
    --no-shipped-records "$@" "$m" | sed "s/^{/{\"flags\":\"$*\",/" >>"$OUT/untuned.jsonl" 2>>"$OUT/untuned.err"
  tail -1 "$OUT/untuned.jsonl" | cut -c1-160
}
for m in ${MODELS:-resnet-18 resnet-50 mobilenet-v2 bert-base}; do
  if [ "$m" = bert-base ]; then
    m=/tmp/bert_base.onnx
    [ -f "$m" ] || python3 -c "import sys; sys.path.insert(0, '$root/bench/gpu'); import torch_models; torch_models.export_bert_onnx('$m')" \
      >>"$OUT/untuned.err" 2>&1 || { echo "bert-base: the export failed (untuned.err)"; continue; }
  fi
  for b in ${BATCHES:-1 16}; do
    run "$m" "$b" "${DTYPE:-float16}"
    run "$m" "$b" "${DTYPE:-float16}" --no-untuned-tensor-cores
    [ -n "${PIPELINED:-}" ] && run "$m" "$b" "${DTYPE:-float16}" --untuned-pipelined
  done
done
IFS=';' read -ra extra <<<"${EXTRA:-}"
for line in "${extra[@]}"; do
  # shellcheck disable=SC2086
  [ -n "$line" ] && run $line
done
python3 "$root/bench/gpu/compare_untuned.py" "$OUT/untuned.jsonl" | tee "$OUT/per_layer.md" | grep -E '^(###|- )'
echo "== done in $(($(date +%s) - start)) s"
