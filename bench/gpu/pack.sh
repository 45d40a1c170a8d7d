#!/usr/bin/env bash
# Packs what the device check needs from this machine's build into
# bench/gpu/carry/tessera-gpu.tar.xz (ignored by git; name bench/gpu/carry in
# the device tool's `carry`): tessera_tests and gpu_models, and every shared
# library they load beyond the C and C++ runtimes (the device image has
# those, newer), and what building the Python module there needs. oneDNN
# stays behind: nothing run there uses it. About 50 MB.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$root/bench/gpu/carry"
cp "$build/tessera_tests" "$build/gpu_models" "$stage/"
# The Python module is built on the device against its own Python, numpy and
# pybind11 (device_check.sh step 5): the static libraries, and the two
# header-only libraries our headers and the module include.
cp "$build/libtessera.a" "$build/libtessera_runtime.a" "$stage/"
mkdir -p "$stage/include"
cp -r /usr/include/nlohmann /usr/include/dlpack "$stage/include/"
# Where the tests look for their data (CMAKE_SOURCE_DIR, compiled in).
sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" >"$stage/source_dir.txt"
for program in tessera_tests gpu_models; do
  ldd "$build/$program" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' | xargs -I{} cp -L {} "$stage/lib/"
tar -C "$stage" -cf - . | xz -9 -T2 >"$root/bench/gpu/carry/tessera-gpu.tar.xz"
ls -l "$root/bench/gpu/carry/tessera-gpu.tar.xz"
