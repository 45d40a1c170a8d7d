#!/usr/bin/env bash
# The CUDA target's checks on a lent H100/H200 device machine (issue 29),
# under 8 minutes, results under $OUT:
#   here:   bench/gpu/pack.sh            (after building; makes bench/gpu/carry/)
#   device: run "bench/gpu/device_check.sh" with carry ["bench/gpu/carry"]
# 1. gpu.txt: nvidia-smi; 2. gpu_tests.txt: the GPU tests (CUDA cases run,
# OpenCL ones skip: the image has no OpenCL driver); 3. gpu_vs_torch.*: the
# benchmark (bench/gpu/gpu_vs_torch.py); 4. zoo_check.jsonl: every zoo model
# at batch 1 and 8 compiled for cuda against the reference interpreter;
# 5. python.txt: the Python module built there, CUDA tensors through DLPack
# and torch.compile(backend="tessera") on the GPU.
# Each step has a deadline so that the rest still runs and what is done comes back.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/device_check_out}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((start + 470 - $(date +%s))); }

work=/tmp/tessera-gpu
mkdir -p "$work"
tar -C "$work" -xJf "$root/bench/gpu/carry/tessera-gpu.tar.xz" || { echo "no carried build" | tee "$OUT/error.txt"; exit 1; }
export LD_LIBRARY_PATH="$work/lib:${LD_LIBRARY_PATH:-}"
# The tests find their data where they were built; point that path here.
src=$(cat "$work/source_dir.txt")
[ -n "$src" ] && [ ! -e "$src" ] && mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"

nvidia-smi >"$OUT/gpu.txt" 2>&1
echo "== tests ($(left) s left)"
timeout 90 "$work/tessera_tests" --gtest_filter='GpuSource*:*GpuOperator*:NvrtcCompiler*:GpuBuild*' \
  >"$OUT/gpu_tests.txt" 2>&1
tail -3 "$OUT/gpu_tests.txt"

echo "== benchmark ($(left) s left)"
PYTHONUNBUFFERED=1 timeout $(($(left) - 150)) python3 "$root/bench/gpu/gpu_vs_torch.py" --gpu-models "$work/gpu_models" \
  --out "$OUT" --rounds 3 --deadline $(($(left) - 240)) 2>&1 | tee "$OUT/gpu_vs_torch.log" | grep -v Warning

echo "== zoo against the interpreter ($(left) s left)"
models="resnet-18 resnet-34 resnet-50 resnet-101 resnet-152 vgg-11 vgg-13 vgg-16 vgg-19 mobilenet mobilenet-v2
        squeezenet_v1.1 inception_v3 $root/tests/data/onnx/bert_tiny.onnx $root/tests/data/onnx/gpt2_tiny.onnx"
for batch in 1 8; do
  for m in $models; do
    [ "$(left)" -lt 10 ] && { echo "{\"model\": \"$m\", \"batch\": $batch, \"skipped\": \"deadline\"}" >>"$OUT/zoo_check.jsonl"; continue; }
    timeout $(left) "$work/gpu_models" --target cuda --batch $batch --check "$m" >>"$OUT/zoo_check.jsonl" 2>>"$OUT/zoo_check.err"
  done
done
grep -c '"correct":true' "$OUT/zoo_check.jsonl"; grep -v '"correct":true' "$OUT/zoo_check.jsonl" | head -5

echo "== Python on the GPU ($(left) s left)"
# The module built here, against this image's Python, numpy and pybind11;
# then CUDA tensors through DLPack and torch.compile(backend="tessera") on
# the GPU (python/tests/test_torch_backend.py, TorchBackendOnCuda).
if [ "$(left)" -gt 100 ]; then
  py=$work/python/tessera
  mkdir -p "$py" && cp "$root"/python/tessera/*.py "$py/"
  ext=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  timeout $(($(left) - 60)) g++ -O1 -std=c++20 -shared -fPIC -w \
    -I"$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")" \
    -I"$(python3 -c "import pybind11; print(pybind11.get_include())")" -I"$work/include" -I"$root/src" -I"$root/include" \
    "$root"/python/src/*.cc "$work/libtessera.a" "$work/libtessera_runtime.a" "$work"/lib/*.so* \
    -Wl,-rpath,"$work/lib" -o "$py/_tessera$ext" >"$OUT/python.txt" 2>&1 &&
    PYTHONPATH=$work/python timeout $(($(left) - 5)) python3 "$root/python/tests/test_torch_backend.py" \
      TorchBackendOnCuda >>"$OUT/python.txt" 2>&1
  tail -4 "$OUT/python.txt"
else
  echo "skipped: too little time left" | tee "$OUT/python.txt"
fi
echo "== done in $(( $(date +%s) - start )) s"
