#!/usr/bin/env bash
# Every zoo model, NCHW and NHWC, batch 1 and 4: compiled, run on seeded
# inputs and compared with the reference interpreter (tessera compile --check).
# Too slow for the test suite (the interpreter runs VGG-19 at batch 4 in plain
# loops); the suite checks a representative few (tests/compile/build_test.cc).
#
#   bench/check_zoo.sh [TESSERA] [MODELS...]
set -uo pipefail
tessera="${1:-build/tessera}"
shift || true
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(resnet-18 resnet-34 resnet-50 resnet-101 resnet-152 vgg-11 vgg-13 vgg-16 vgg-19
                                   mobilenet mobilenet-v2 squeezenet_v1.1 inception_v3)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
passed=0
for model in "${models[@]}"; do
  for layout in NCHW NHWC; do
    for batch in 1 4; do
      if line=$("$tessera" compile "$model" --layout "$layout" --batch "$batch" --check -o "$out/m.tsr" 2>&1); then
        passed=$((passed + 1))
        echo "ok   $model $layout batch $batch: $(echo "$line" | grep -o 'max rel error [^:]*' | head -1)"
      else
        failed=$((failed + 1))
        echo "FAIL $model $layout batch $batch: $(echo "$line" | tail -1)"
      fi
    done
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
