"""How the build's current choice of untuned tensor cores does on kernels
timed both ways: for each zoo model and batch of bench/gpu/untuned_check.sh's
untuned.jsonl (fp16, tensor cores and CUDA cores), the network compiled here
for `cuda -arch=sm_90` (no GPU needed) says which kernels run mma.sync; the
sum of each call's time on the side the build chose, against all on either
side and the per-kernel best. Re-run after changing
autoschedule/tensor_core_fallback.h's rule.

  python3 bench/gpu/untuned_rule_check.py build/tessera \
      bench/gpu/results/h200-2026-11-28/untuned/untuned.jsonl.xz
"""
import json
import lzma
import re
import subprocess
import sys
import tempfile


def tensor_core_kernels(tessera, model, batch):
    with tempfile.NamedTemporaryFile(suffix=".tsr") as out:
        subprocess.run([tessera, "compile", model, "--batch", str(batch), "--dtype", "float16", "--target",
                        "cuda -arch=sm_90", "--no-shipped-records", "-o", out.name], check=True, capture_output=True)
        data = open(out.name, "rb").read()
    start = data.rfind(b"{", 0, data.find(b'"kernels"'))
    source = json.JSONDecoder().raw_decode(data[start:].decode("latin1"))[0]["source"]
    chosen = set()
    for kernel in re.split(r'(?=extern "C" __global__)', source):
        name = re.search(r"(tessera_k\d+_\w+?)_kernel\d+\(", kernel)
        body = kernel.split("// CUDA C written by")[0]  # the next kernel's prelude defines tsr_tc_mma
        if name and re.search(r"tsr_tc_mma(_frags)?\(\w+_local", body):
            chosen.add(name.group(1))
    return chosen


def main():
    tessera, log = sys.argv[1], sys.argv[2]
    runs = {}
    for line in (lzma.open(log, "rt") if log.endswith(".xz") else open(log)):
        row = json.loads(line)
        if "profile" in row and row["dtype"] == "float16" and not row["model"].endswith(".onnx"):
            side = "tc" if row.get("flags", "").strip() == "" else "cc"
            runs.setdefault((row["model"], row["batch"]), {})[side] = row["profile"]
    print("| model | batch | all tensor cores | all CUDA cores | the build's choice | per-kernel best |")
    print("|---|---|---|---|---|---|")
    for (model, batch), sides in runs.items():
        chosen = tensor_core_kernels(tessera, model, batch)
        pairs = list(zip(sides["tc"], sides["cc"]))
        build = sum(t["ms"] if t["kernel"] in chosen else c["ms"] for t, c in pairs)
        best = sum(min(t["ms"], c["ms"]) for t, c in pairs)
        print(f"| {model} | {batch} | {sum(t['ms'] for t, _ in pairs):.3f} | {sum(c['ms'] for _, c in pairs):.3f} | "
              f"{build:.3f} ({build / best:.2f}x) | {best:.3f} |")


if __name__ == "__main__":
    main()
