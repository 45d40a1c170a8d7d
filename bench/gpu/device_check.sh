#!/usr/bin/env bash
# The CUDA target's checks on a lent H100/H200 device machine (issue 29),
# under 8 minutes, results under $OUT:
#   here:   bench/gpu/pack.sh            (after building; makes bench/gpu/carry/)
#   device: run "bench/gpu/device_check.sh" with carry ["bench/gpu/carry"]
# 1. gpu.txt: nvidia-smi; 2. gpu_tests.txt: the GPU tests (CUDA cases run,
# OpenCL ones skip: the image has no OpenCL driver); 3. zoo_check.jsonl:
# every zoo model at batch 1 and 8 compiled for cuda against the reference
# interpreter; 4. python.txt (beside 3): the Python module built there, CUDA
# tensors through DLPack and torch.compile(backend="tessera") on the GPU;
# 5. winograd.jsonl: ResNet-18 untuned, direct against Winograd convolutions;
# 6. gpu_vs_torch.*, alone on the machine: the benchmark (bench/gpu/gpu_vs_torch.py, extra
# arguments in BENCH_ARGS) in the time left.
# Correctness comes first; each step has a deadline so that the rest still
# runs and what is done comes back. TOTAL_S (470), ZOO_BATCHES, ZOO_MODELS
# and ZOO_RESERVE (the seconds the zoo leaves to the benchmark, 200) narrow a rerun.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/device_check_out}
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $((start + ${TOTAL_S:-470} - $(date +%s))); }

. "$root/bench/gpu/unpack.sh"  # the carried build in $work, its libraries found

nvidia-smi >"$OUT/gpu.txt" 2>&1
echo "== tests ($(left) s left)"
timeout 90 "$work/tessera_tests" --gtest_filter='GpuSource*:*GpuOperator*:NvrtcCompiler*:GpuBuild*:*HalfStorage*:TensorCore*' \
  >"$OUT/gpu_tests.txt" 2>&1
# Tuning in a process of its own: the tests above ran on the GPU in theirs,
# and CUDA does not survive the fork of a measurement child.
timeout 120 "$work/tessera_tests" --gtest_filter='*TuneOnGpu*cuda*' >>"$OUT/gpu_tests.txt" 2>&1
tail -3 "$OUT/gpu_tests.txt"

python_step() {
  # The module built here, against this image's Python, numpy and pybind11;
  # then CUDA tensors through DLPack and torch.compile(backend="tessera") on
  # the GPU (python/tests/test_torch_backend.py, TorchBackendOnCuda).
  if [ "$(left)" -gt 100 ]; then
    py=$work/python/tessera
    mkdir -p "$py" && cp "$root"/python/tessera/*.py "$py/"
    ext=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
    # One object per source in parallel (the machine has 16 cores), then the link.
    flags="-O1 -std=c++20 -fPIC -w -I$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
      -I$(python3 -c "import pybind11; print(pybind11.get_include())") -I$work/include -I$root/src -I$root/include"
    mkdir -p "$work/obj" && : >"$OUT/python.txt"
    for f in "$root"/python/src/*.cc; do
      timeout 120 g++ $flags -c "$f" -o "$work/obj/$(basename "$f" .cc).o" >>"$OUT/python.txt" 2>&1 &
    done
    wait
    g++ -shared "$work"/obj/*.o "$work/libtessera.a" "$work/libtessera_runtime.a" "$work"/lib/*.so* \
      -Wl,-rpath,"$work/lib" -o "$py/_tessera$ext" >>"$OUT/python.txt" 2>&1 &&
      PYTHONPATH=$work/python timeout 150 python3 "$root/python/tests/test_torch_backend.py" \
        TorchBackendOnCuda >>"$OUT/python.txt" 2>&1
  else
    echo "skipped: too little time left" | tee "$OUT/python.txt"
  fi
}
python_step &  # light (4 compilers, then one process): beside the zoo
python_pid=$!

echo "== zoo against the interpreter ($(left) s left)"
models=${ZOO_MODELS:-"resnet-18 resnet-34 resnet-50 resnet-101 resnet-152 vgg-11 vgg-13 vgg-16 vgg-19 mobilenet
  mobilenet-v2 squeezenet_v1.1 inception_v3 $root/tests/data/onnx/bert_tiny.onnx $root/tests/data/onnx/gpt2_tiny.onnx"}
# The reference interpreter runs on one core (VGG-19 at batch 8 for minutes), so
# every (batch, model) check is its own process, 16 at a time; each writes one
# JSON line, whole (shorter than a pipe's atomic write). One cut off by the
# deadline gets a line saying so.
# The two ONNX files have a fixed batch of 1.
# ZOO_DTYPES ("float32 float16"): each model in each storage precision.
pairs() {
  for dtype in ${ZOO_DTYPES:-float32 float16}; do
    for batch in ${ZOO_BATCHES:-1 8}; do
      for m in $models; do [ "$batch" != 1 ] && [[ $m == *.onnx ]] || echo "$dtype $batch $m"; done
    done
  done
}
zoo_limit=$(($(left) - ${ZOO_RESERVE:-200}))
pairs | xargs -P 16 -L 1 sh -c 'timeout '"$zoo_limit"' "$0" --target cuda --dtype "$1" --batch "$2" --check "$3"' \
  "$work/gpu_models" >>"$OUT/zoo_check.jsonl" 2>>"$OUT/zoo_check.err"
pairs | while read -r dtype batch m; do
  grep -q "\"batch\":$batch,.*\"dtype\":\"$dtype\",.*\"model\":\"$m\"" "$OUT/zoo_check.jsonl" ||
    echo "{\"model\": \"$m\", \"batch\": $batch, \"dtype\": \"$dtype\", \"skipped\": \"deadline ($zoo_limit s)\"}" >>"$OUT/zoo_check.jsonl"
done
grep -c '"correct":true' "$OUT/zoo_check.jsonl"; grep -v '"correct":true' "$OUT/zoo_check.jsonl" | head -5

wait $python_pid
echo "== Python on the GPU"; tail -4 "$OUT/python.txt"

# Winograd in NCHW against the direct kernels, both untuned (the hand-written
# schedules), ResNet-18 fp32 batch 1: whether --convolutions winograd should
# become the GPU's default (build::BuildOptions::gpu_winograd).
echo "== Winograd against direct, untuned ($(left) s left)"
for conv in direct winograd direct winograd; do
  timeout 60 "$work/gpu_models" --target cuda --batch 1 --check --bench --no-shipped-records --convolutions $conv \
    resnet-18 >>"$OUT/winograd.jsonl" 2>>"$OUT/winograd.err"
done
cut -c1-300 "$OUT/winograd.jsonl"

echo "== benchmark ($(left) s left)"
PYTHONUNBUFFERED=1 timeout $(($(left) - 5)) python3 "$root/bench/gpu/gpu_vs_torch.py" --gpu-models "$work/gpu_models" \
  --out "$OUT" --rounds 3 --deadline $(($(left) - 60)) ${BENCH_ARGS:-} 2>&1 | tee "$OUT/gpu_vs_torch.log" | grep -v Warning

echo "== done in $(( $(date +%s) - start )) s"
