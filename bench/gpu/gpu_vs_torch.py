"""Tessera on a CUDA GPU against PyTorch (eager, torch.compile, and
torch.compile(mode="max-autotune")), in fp32 and fp16, one run with the
sides interleaved: each round times Tessera (a gpu_models process, its
device time by CUDA events) and then each PyTorch mode (CUDA events), and
the table holds each side's minimum over the rounds. PyTorch keeps its
defaults in fp32 (cuDNN may use TF32 for convolutions, matmuls stay fp32),
as users run it, and runs fp16 under torch.autocast; Tessera's fp16 is
--dtype float16 (half storage, fp32 arithmetic); dtype tf32 is Tessera's
fp32 on target "cuda -tf32" (its fp32 products on tensor cores in TF32, as
cuDNN's convolutions run under PyTorch's defaults) against PyTorch's fp32.
--records MODEL=LOG compiles that model with a tuning log's best records
(tuned Tessera). --nhwc adds a Tessera side of each zoo model built in NHWC
(gpu_models --layout NHWC: its convolutions products whose window rows are
channels), timed in the same rounds; the ratio is the faster Tessera side's.

  python3 bench/gpu/gpu_vs_torch.py --gpu-models BIN --models resnet-18 ... --batches 1 16 \
      [--dtypes float32 float16 tf32] [--records resnet-18=r18.log] [--nhwc] --out DIR
"""
import contextlib
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402


def time_torch(fn, x, half, warmup=5, iters=20):
    autocast = torch.autocast("cuda", dtype=torch.float16) if half else contextlib.nullcontext()
    with torch.no_grad(), autocast:
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn(x)
        end.record()
        torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def time_tessera(binary, model, batch, extra, target="cuda"):
    out = subprocess.run([binary, "--target", target, "--batch", str(batch), "--bench", *extra, model],
                         capture_output=True, text=True, timeout=300)
    line = json.loads(out.stdout.strip().splitlines()[-1])
    if "error" in line:
        raise RuntimeError(line["error"])
    return line["min_ms"], line


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gpu-models", required=True)
    p.add_argument("--models", nargs="+", default=["resnet-18", "resnet-50", "mobilenet-v2", "bert-base"])
    p.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    p.add_argument("--modes", nargs="+", default=["eager", "compile", "max-autotune"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=["float32", "float16", "tf32"])
    p.add_argument("--records", nargs="*", default=[], help="MODEL=LOG: compile MODEL with LOG's best records")
    p.add_argument("--nhwc", action="store_true", help="also Tessera with the zoo models built in NHWC")
    p.add_argument("--bert-onnx", default="/tmp/bert_base.onnx")
    p.add_argument("--deadline", type=float, default=1e9, help="seconds from now after which nothing new starts")
    p.add_argument("--profile", action="store_true",
                   help="keep Tessera's per-kernel device times (gpu_models --profile) in the JSON rows")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    stop_at = time.time() + a.deadline
    results = []
    out_json = os.path.join(a.out, "gpu_vs_torch.json")
    records = dict(r.split("=", 1) for r in a.records)
    for name in a.models:
        tessera_model, extra = name, ["--records", records[name]] if name in records else []
        if name == "bert-base":
            if not os.path.exists(a.bert_onnx):
                torch_models.export_bert_onnx(a.bert_onnx)
            tessera_model = a.bert_onnx
        net, make_input = torch_models.build(name)
        net = net.cuda()
        for dtype, batch in [(d, b) for d in a.dtypes for b in a.batches]:
            if time.time() > stop_at:
                results.append({"model": name, "dtype": dtype, "batch": batch, "skipped": "deadline"})
                continue
            x = make_input(batch, "cuda")
            half = dtype == "float16"
            row = {"model": name, "dtype": dtype, "batch": batch, "gpu": torch.cuda.get_device_name(),
                   "torch": torch.__version__, "tessera_records": records.get(name)}
            tf32 = dtype == "tf32"
            flags = extra + ["--dtype", "float32" if tf32 else dtype] + (["--profile"] if a.profile else [])
            tessera_lines = []

            def tessera():
                ms, line = time_tessera(a.gpu_models, tessera_model, batch, flags, "cuda -tf32" if tf32 else "cuda")
                tessera_lines.append(line)
                return ms
            sides = {"tessera": tessera}
            nhwc_lines = []

            def tessera_nhwc():
                ms, line = time_tessera(a.gpu_models, tessera_model, batch, flags + ["--layout", "NHWC"],
                                        "cuda -tf32" if tf32 else "cuda")
                nhwc_lines.append(line)
                return ms
            if a.nhwc and name != "bert-base":
                sides["tessera NHWC"] = tessera_nhwc
            if "eager" in a.modes:
                sides["torch eager"] = lambda: time_torch(net, x, half)
            compiled = {}
            for mode in [m for m in a.modes if m != "eager"]:
                kwargs = {} if mode == "compile" else {"mode": mode}
                compiled[mode] = torch.compile(net, **kwargs)
                sides["torch.compile " + mode] = (lambda f: lambda: time_torch(f, x, half))(compiled[mode])
            best = {}
            for r in range(a.rounds):
                for side, run in sides.items():
                    try:
                        ms = run()
                        best[side] = min(best.get(side, ms), ms)
                    except Exception as e:  # one side failing leaves the others' numbers
                        row.setdefault("errors", {})[side] = str(e)[:300]
            row["min_ms"] = best
            if a.profile and tessera_lines:  # the fastest round's kernels
                row["tessera_line"] = min(tessera_lines, key=lambda line: line["min_ms"])
            if a.profile and nhwc_lines:
                row["tessera_nhwc_line"] = min(nhwc_lines, key=lambda line: line["min_ms"])
            torch_best = min((v for k, v in best.items() if not k.startswith("tessera")), default=None)
            tessera_best = min((v for k, v in best.items() if k.startswith("tessera")), default=None)
            if tessera_best and torch_best:
                row["tessera_over_fastest_torch"] = tessera_best / torch_best
            results.append(row)
            print(json.dumps(row), flush=True)
            with open(out_json, "w") as f:
                json.dump(results, f, indent=1)
            torch._dynamo.reset()
    with open(os.path.join(a.out, "gpu_vs_torch.md"), "w") as f:
        f.write("| model | dtype | batch | tessera | tessera NHWC | eager | compile | max-autotune | tessera / fastest |\n"
                "|---|---|---|---|---|---|---|---|---|\n")
        for r in results:
            m = r.get("min_ms", {})
            cell = lambda k: f"{m[k]:.3f}" if k in m else "-"
            ratio = f"{r['tessera_over_fastest_torch']:.2f}" if "tessera_over_fastest_torch" in r else "-"
            f.write(f"| {r['model']} | {r['dtype']} | {r['batch']} | {cell('tessera')} | {cell('tessera NHWC')} | "
                    f"{cell('torch eager')} | "
                    f"{cell('torch.compile compile')} | {cell('torch.compile max-autotune')} | {ratio} |\n")


if __name__ == "__main__":
    main()
