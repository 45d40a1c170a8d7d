#!/usr/bin/env bash
# A short look at the untuned CUDA kernels on a lent H100/H200 (issue 30),
# to find where the time goes before tuning: one call of the device tool.
#   here:   bench/gpu/pack.sh
#   device: run "bench/gpu/profile_check.sh" with carry ["bench/gpu/carry"]
# Results under $OUT: gpu.txt; gpu_tests.txt (the GPU tests, CUDA cases run);
# check.jsonl (ResNet-18/50 and MobileNet-v2 at batch 1, fp32 and fp16,
# ResNet-18 and MobileNet-v2 in TF32, against the interpreter, beside the tests); gpu_vs_torch.{json,md,log}
# (bench/gpu/gpu_vs_torch.py --profile: each model, dtype and batch against
# PyTorch eager, with every Tessera kernel call's device time in the JSON).
# TOTAL_S (330) bounds the whole; BENCH_ARGS adds to the benchmark's
# arguments (its --models, --modes, --rounds, --dtypes narrow or widen it;
# "--dtypes float32 tf32 float16" adds Tessera in TF32).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/profile_check_out}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((start + ${TOTAL_S:-330} - $(date +%s))); }

. "$root/bench/gpu/unpack.sh"

nvidia-smi >"$OUT/gpu.txt" 2>&1
echo "== tests and network checks ($(left) s left)"
timeout 100 "$work/tessera_tests" --gtest_filter='GpuSource*:*GpuOperator*:NvrtcCompiler*:GpuBuild*:*HalfStorage*:TensorCore*' \
  >"$OUT/gpu_tests.txt" 2>&1 &
for dtype in float32 float16; do
  for m in resnet-18 resnet-50 mobilenet-v2; do echo "$dtype $m"; done
done | xargs -P 6 -L 1 sh -c 'timeout 100 "$0" --target cuda --dtype "$1" --batch 1 --check --no-shipped-records "$2"' \
  "$work/gpu_models" >"$OUT/check.jsonl" 2>"$OUT/check.err"
# TF32 (fp32 products on tensor cores) at the half tolerance.
timeout 100 "$work/gpu_models" --target "cuda -tf32" --batch 1 --check --no-shipped-records resnet-18 mobilenet-v2 \
  >>"$OUT/check.jsonl" 2>>"$OUT/check.err"
wait
tail -3 "$OUT/gpu_tests.txt"
cut -c1-200 "$OUT/check.jsonl"

echo "== benchmark, with each kernel's time ($(left) s left)"
PYTHONUNBUFFERED=1 timeout $(($(left) - 5)) python3 "$root/bench/gpu/gpu_vs_torch.py" --gpu-models "$work/gpu_models" \
  --out "$OUT" --rounds 1 --modes eager --profile --models resnet-18 resnet-50 bert-base mobilenet-v2 \
  --deadline $(($(left) - 30)) ${BENCH_ARGS:-} 2>&1 | tee "$OUT/gpu_vs_torch.log" | grep -v Warning | cut -c1-300
echo "== done in $(($(date +%s) - start)) s"
