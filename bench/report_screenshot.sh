#!/bin/sh
# Makes the report of a ResNet-18 tuning and screenshots it in headless
# Chromium (issue 33's picture): tunes resnet-18 (unless LOG exists), times
# onnxruntime and PyTorch on it for the baselines (unless BASELINE exists),
# writes the page and a PNG of it.
#
#   bench/report_screenshot.sh [OUT_DIR]   (default /tmp/tessera-report)
#   TRIALS=32 THREADS=1 LOG=... BASELINE=... bench/report_screenshot.sh
#
# Needs Debian's chromium (apt-get install chromium); the build in build/.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/tessera-report}
trials=${TRIALS:-32}
threads=${THREADS:-1}
mkdir -p "$out"
log=${LOG:-$out/resnet-18.t$threads.log}
baseline=${BASELINE:-$out/baselines.json}
tessera="$here/build/tessera"

if [ ! -s "$log" ]; then
  echo "tuning resnet-18 ($trials trials a task, $threads threads) into $log"
  "$tessera" tune resnet-18 --trials "$trials" --threads "$threads" --log "$log" --no-evaluate
fi
if [ ! -s "$baseline" ]; then
  echo "timing onnxruntime and PyTorch on resnet-18 ($threads threads) into $baseline"
  "$here/bench/network_vs_frameworks.py" --models resnet-18 --threads "$threads" --rounds 3 --json "$baseline" \
    --records-dir "$out"
fi
"$tessera" report "$log" --model resnet-18 --threads "$threads" --baseline "$baseline" -o "$out/report.html"

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "no chromium here (apt-get install chromium): the page is $out/report.html" >&2
  exit 1
fi
# A tall window takes the whole page (the tuning's per-task charts are long).
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,2400 \
  --screenshot="$out/report.png" "file://$out/report.html" 2>/dev/null
echo "wrote $out/report.html and $out/report.png"
