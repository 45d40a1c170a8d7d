#!/usr/bin/env python3
"""One artifact for every sequence length: BERT-base (or GPT-2, DistilBERT)
exported with a symbolic sequence axis, compiled once by
`tessera compile --dim sequence=MIN..MAX --buckets ...`, timed at several
lengths against onnxruntime (plain and with its transformer optimizer's fused
attention) and against Tessera artifacts compiled for each length alone
(what the buckets cost).

    bench/varying_sequence.py [--model bert-base] [--sizes 16,64,100,256,512]
        [--buckets 16,64,256,512] [--range 1..512] [--threads 1] [--rounds 3]

Runs in bench/.venv (network_vs_frameworks.py creates it); the sides are
timed in alternating rounds, and each keeps the minimum and the median of its
per-round medians. A length between buckets (100) runs padded to the next one.
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import network_vs_frameworks as nvf  # noqa: E402  (its venv and helpers)


def tessera_bench(tessera, artifact, threads, number, size=None):
    command = [tessera, "bench", artifact, "--threads", str(threads), "--number", str(number), "--repeat", "3"]
    if size is not None:
        command += ["--sizes", str(size)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1)) / 1e3


def compile_once(command, artifact):
    if os.path.exists(artifact):
        return None
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    nvf.ensure_venv()
    import numpy as np
    import onnxruntime as ort
    import torch
    import transformer_models

    p = argparse.ArgumentParser()
    p.add_argument("--model", default="bert-base", choices=["bert-base", "distilbert", "gpt2"])
    p.add_argument("--sizes", default="16,64,100,256,512")
    p.add_argument("--buckets", default="16,64,256,512")
    p.add_argument("--range", default="1..512")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--number", type=int, default=3)
    p.add_argument("--tessera", default=os.path.join(HERE, "..", "build", "tessera"))
    p.add_argument("--artifacts", default="/tmp/tessera-varying")
    args = p.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}, cpu: {nvf.cpu_name()}, "
          f"{args.threads} threads", flush=True)

    net, x = transformer_models.build(args.model, torch.Generator().manual_seed(1))
    onnx_path = os.path.join(args.artifacts, f"{args.model}.dynamic.onnx")
    if not os.path.exists(onnx_path):
        torch.onnx.export(net, x, onnx_path, opset_version=17, input_names=["data"], output_names=["hidden"],
                          dynamic_axes={"data": {1: "sequence"}, "hidden": {1: "sequence"}}, dynamo=False)
    fused = nvf.ort_fused(onnx_path, args.model)

    t = args.threads
    varying = os.path.join(args.artifacts, f"{args.model}.t{t}.varying.tsr")
    took = compile_once([args.tessera, "compile", onnx_path, "--dim", f"sequence={args.range}", "--buckets",
                         args.buckets, "--threads", str(t), "-o", varying], varying)
    if took is not None:
        print(f"one artifact for sequence {args.range} (buckets {args.buckets}): compiled in {took:.0f} s, "
              f"{os.path.getsize(varying) / 1e6:.0f} MB", flush=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    fixed = {}
    for n in sizes:
        fixed[n] = os.path.join(args.artifacts, f"{args.model}.t{t}.s{n}.tsr")
        took = compile_once([args.tessera, "compile", onnx_path, "--dim", f"sequence={n}", "--threads", str(t),
                             "-o", fixed[n]], fixed[n])
        if took is not None:
            print(f"artifact for sequence {n} alone: compiled in {took:.0f} s, "
                  f"{os.path.getsize(fixed[n]) / 1e6:.0f} MB", flush=True)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = t
    opts.inter_op_num_threads = 1
    sessions = {"onnxruntime": ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])}
    if fused:
        sessions["onnxruntime fused"] = ort.InferenceSession(fused, opts, providers=["CPUExecutionProvider"])
    rows = []
    for n in sizes:
        feed = {"data": np.random.default_rng(n).integers(0, 30000, (1, n)).astype(np.int64)}
        sides = {
            "tessera one artifact": lambda n=n: tessera_bench(args.tessera, varying, t, args.number, n),
            "tessera this size": lambda n=n: tessera_bench(args.tessera, fixed[n], t, args.number),
        }
        for name, s in sessions.items():
            sides[name] = lambda s=s, feed=feed: nvf.time_callable(lambda: s.run(None, feed), args.number)
        times = {name: [] for name in sides}
        for r in range(args.rounds):
            order = list(sides)[r % len(sides):] + list(sides)[:r % len(sides)]
            for name in order:
                time.sleep(1.0)  # the frameworks' pools spin a while after their last call
                times[name].append(sides[name]())
        best = min(min(times[name]) for name in sessions)
        for name in sides:
            rows.append((n, name, min(times[name]) * 1e3, nvf.median(times[name]) * 1e3, min(times[name]) / best))
        print(f"sequence {n} timed", flush=True)
    print(f"\n{args.model}, {t} threads")
    print(f"{'sequence':>8} {'side':<22} {'min ms':>9} {'median ms':>10} {'/ fastest onnxruntime':>22}")
    for n, name, lo, med, ratio in rows:
        print(f"{n:>8} {name:<22} {lo:>9.2f} {med:>10.2f} {ratio:>22.2f}")


if __name__ == "__main__":
    main()
