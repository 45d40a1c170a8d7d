#!/usr/bin/env bash
# The torch backend's tests: a virtual environment with torch and torchvision
# from PyPI (bench/.venv, shared with the frameworks benchmark), and the
# build tree's tessera package. Usage: python/tests/run_torch_tests.sh [BUILD_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$here/build}"
venv="$here/bench/.venv"
if [ ! -x "$venv/bin/python" ]; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet torch torchvision numpy  # from PyPI, as the benchmarks take them
fi
PYTHONPATH="$build/python" "$venv/bin/python" "$here/python/tests/test_torch_backend.py"
