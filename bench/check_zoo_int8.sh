#!/usr/bin/env bash
# Every zoo CNN quantized (compile --quantize int8 --check): each integer
# kernel against the integer reference on its compiled inputs, and how far
# quantization moved the logits from the float32 model. Too slow for the
# test suite (the interpreter runs VGG in plain loops); the suite checks the
# narrow ResNet-18 and the digits CNN (tests/driver/quantized_compile_test.cc).
#
#   bench/check_zoo_int8.sh [TESSERA] [MODELS...]
set -uo pipefail
tessera="${1:-build/tessera}"
shift || true
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(resnet-18 resnet-34 resnet-50 resnet-101 resnet-152 vgg-11 vgg-13 vgg-16 vgg-19
                                   mobilenet mobilenet-v2 squeezenet_v1.1 inception_v3)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
for model in "${models[@]}"; do
  if text=$("$tessera" compile "$model" --quantize int8 --calibrate 4 --check -o "$out/m.tsr" 2>&1); then
    status=ok
  else
    status=FAIL
    failed=$((failed + 1))
  fi
  kernels=$(echo "$text" | grep -o 'integer kernels: [0-9]* of [0-9]* values equal the integer reference exactly\(, [0-9]* within one step\)\?' | sed 's/ values equal the integer reference exactly/ exact/')
  float32=$(echo "$text" | grep -o '[0-9.e+-]* against the float32 model' | head -1)
  echo "$status $model: $kernels; logits max rel error $float32"
  [ "$status" = FAIL ] && echo "$text" | tail -3
done
exit $((failed > 0))
