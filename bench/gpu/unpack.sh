# Sourced by the device scripts: unpacks the build bench/gpu/pack.sh carried
# into $work (/tmp/tessera-gpu), puts its libraries on the loader's path and
# points the source path the tests were built with (their data) at this
# checkout ($root).
work=/tmp/tessera-gpu
mkdir -p "$work"
tar -C "$work" -xJf "$root/bench/gpu/carry/tessera-gpu.tar.xz" || { echo "no carried build" | tee "$OUT/error.txt"; exit 1; }
export LD_LIBRARY_PATH="$work/lib:${LD_LIBRARY_PATH:-}"
src=$(cat "$work/source_dir.txt")
if [ -n "$src" ] && [ ! -e "$src" ]; then
  mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
fi
