#!/usr/bin/env python3
"""Whole networks: Tessera against onnxruntime, PyTorch eager and torch.compile.

Creates its own virtual environment (bench/.venv) with the frameworks from PyPI
on first use; the test suite never needs them. For each model and thread count
the sides are timed in alternating rounds in this one run, so a slow spell of
the machine hits all of them; each side keeps the minimum and the median of its
per-round medians.

    bench/network_vs_frameworks.py [--models resnet-18,resnet-50,mobilenet-v2]
        [--threads 1,2] [--rounds 5] [--tessera build/tessera] [--records-dir DIR]

With --records-dir, Tessera builds each model with the tuning records found
there: DIR/MODEL.tTHREADS_graph.log (a graph tuner's choice) if present, else
DIR/MODEL.tTHREADS.log (kernel records), e.g. from
`tessera tune resnet-18 --threads 2 --log DIR/resnet-18.t2.log --graph-tuner dp
--graph-log DIR/resnet-18.t2_graph.log`.

--json FILE writes the rows (model, threads, side, min and median ms) with
the host and the frameworks' versions: `tessera report --baseline FILE` draws
a model's latency beside them.

--baseline-tessera BIN adds the side "tessera before": the same model compiled
and timed by another tessera binary (an earlier commit's build), so a refactor
shows it loses no speed in the same run.

--extra-tessera "LABEL=ARGS" adds a Tessera side compiled with more
`tessera compile` arguments, {model} and {threads} filled in; the side is
left out where a --records file it names does not exist. E.g. the
auto-scheduler's NHWC path:
`--extra-tessera "tessera nhwc-auto=--layout NHWC --keep-layout --records DIR/{model}.nhwc.auto.t{threads}.log"`.

The models are the same architectures on both sides (Tessera's zoo follows
torchvision's), with random weights: timing does not depend on the values.
Models outside the zoo (issue 28's: bert-base, distilbert and gpt2 at 128
tokens, vit-b-16, convnext-t, mobilenet-v3-l, regnet-x-1.6gf, resnext-50;
--models transformers or --models modern for the groups) reach Tessera as the
ONNX file onnxruntime runs; the transformers are built from their configs,
nothing downloaded. Where onnxruntime's transformer optimizer applies (BERT,
DistilBERT, GPT-2, ViT), its fused-attention model is the side
"onnxruntime fused".
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv")
PACKAGES = ["torch", "torchvision", "onnx", "onnxruntime", "onnxscript", "numpy", "transformers"]
TORCHVISION = {"resnet-18": "resnet18", "resnet-50": "resnet50", "mobilenet-v2": "mobilenet_v2",
               "resnet-34": "resnet34", "vgg-16": "vgg16", "squeezenet_v1.1": "squeezenet1_1",
               "mobilenet": None, "inception_v3": "inception_v3"}


# Issue 28's models outside the zoo: torchvision's by name, the transformers
# (the ONNX model's input name, how onnxruntime's optimizer knows it).
MODERN = {"convnext-t": "convnext_tiny", "mobilenet-v3-l": "mobilenet_v3_large", "regnet-x-1.6gf": "regnet_x_1_6gf",
          "resnext-50": "resnext50_32x4d"}
TRANSFORMERS = {"bert-base": "bert", "distilbert": "bert", "gpt2": "gpt2", "vit-b-16": "vit"}
GROUPS = {"transformers": list(TRANSFORMERS), "modern": list(MODERN)}


def build_model(model, torch, torchvision):
    """(network in eval mode, its input, whether Tessera takes the zoo name)."""
    g = torch.Generator().manual_seed(1)
    if model in TORCHVISION and TORCHVISION[model]:
        size = 299 if model == "inception_v3" else 224
        return getattr(torchvision.models, TORCHVISION[model])(weights=None).eval(), \
            torch.randn(1, 3, size, size, generator=g), True
    if model in MODERN:
        return getattr(torchvision.models, MODERN[model])(weights=None).eval(), torch.randn(1, 3, 224, 224, generator=g), \
            False
    if model not in TRANSFORMERS:
        return None, None, False
    import transformer_models
    return (*transformer_models.build(model, g), False)


def ort_fused(onnx_path, model):
    """onnxruntime's transformer optimizer's model (fused attention, layer
    norm and GELU) for `model`, or None where it does not apply."""
    kind = TRANSFORMERS.get(model)
    if not kind:
        return None
    from onnxruntime.transformers import optimizer
    fused = onnx_path[:-len(".onnx")] + ".ort_fused.onnx"
    if not os.path.exists(fused):
        optimizer.optimize_model(onnx_path, model_type=kind, num_heads=12, hidden_size=768,
                                 opt_level=1).save_model_to_file(fused)
    return fused


def ensure_venv():
    """Re-runs this script inside bench/.venv, creating it first if needed."""
    python = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(python):
        print(f"creating {VENV} with {', '.join(PACKAGES)} (once; a few minutes)", flush=True)
        subprocess.check_call(["/usr/bin/python3", "-m", "venv", VENV]) if os.path.exists("/usr/bin/python3") \
            else subprocess.check_call([sys.executable, "-m", "venv", VENV])
        subprocess.check_call([python, "-m", "pip", "install", "-q", "--upgrade", "pip"])
        subprocess.check_call([python, "-m", "pip", "install", "-q"] + PACKAGES)
    os.execv(python, [python] + sys.argv)


def tessera_round(tessera, model, threads, number):
    """One Tessera measurement (a compiled artifact, timed by `tessera bench`): seconds per run."""
    out = subprocess.run([tessera, "bench", model, "--threads", str(threads), "--number", str(number),
                          "--repeat", "3"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"median ([0-9.]+) ms", out)
    return float(m.group(1)) / 1e3


def records_for(directory, model, threads):
    """The tuning log to build `model` at `threads` with, or None."""
    if not directory:
        return None
    for name in (f"{model}.t{threads}_graph.log", f"{model}.t{threads}.log"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    return None


def extra_sides(args, model, source, threads):
    """Compiles each --extra-tessera side of `model` (from `source`: its zoo
    name or its .onnx file): [(label, artifact)]."""
    out = []
    for i, spec in enumerate(args.extra_tessera):
        label, equals, extra = spec.partition("=")
        if not equals or not label:
            sys.exit(f"--extra-tessera {spec!r}: expected LABEL=ARGS")
        words = extra.format(model=model, threads=threads).split()
        if "--records" in words and not os.path.exists(words[words.index("--records") + 1]):
            continue
        artifact = os.path.join(args.artifacts, f"{model}.t{threads}.extra{i}.tsr")
        command = [args.tessera, "compile", source, "--threads", str(threads), "-o", artifact] + words
        print(f"{model} {threads} threads: {label}: {' '.join(words)}", flush=True)
        subprocess.run(command, check=True, capture_output=True)
        out.append((label, artifact))
    return out


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def time_callable(fn, number):
    """Median of 3 measurements, each the mean of `number` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return median(times)


def main():
    ensure_venv()
    import numpy as np
    import onnxruntime as ort
    import torch
    import torchvision

    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnet-18,resnet-50,mobilenet-v2")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--number", type=int, default=10)
    p.add_argument("--tessera", default=os.path.join(HERE, "..", "build", "tessera"))
    p.add_argument("--artifacts", default="/tmp/tessera-bench", help="where compiled models are kept")
    p.add_argument("--records-dir", help="tuning logs MODEL.tTHREADS[_graph].log to build Tessera's side with")
    p.add_argument("--extra-tessera", action="append", default=[],
                   help="LABEL=ARGS: another Tessera side, compiled with ARGS ({model}, {threads} filled in)")
    p.add_argument("--json", help="also write the rows to this file, for `tessera report --baseline`")
    p.add_argument("--baseline-tessera",
                   help="another tessera binary (e.g. an earlier commit's build) as a side 'tessera before', "
                        "compiled and timed by itself: a change shows it loses no speed")
    args = p.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}, cpu: {cpu_name()}")
    rows = []
    models = [m for name in args.models.split(",") for m in GROUPS.get(name, [name])]
    for model in models:
        net, x, zoo = build_model(model, torch, torchvision)
        if net is None:
            print(f"{model}: no torchvision or transformers counterpart, skipped")
            continue
        onnx_path = os.path.join(args.artifacts, f"{model}.onnx")
        if not os.path.exists(onnx_path):
            torch.onnx.export(net, x, onnx_path, opset_version=17, input_names=["data"], dynamo=False)
        fused = ort_fused(onnx_path, model)
        for threads in [int(t) for t in args.threads.split(",")]:
            torch.set_num_threads(threads)
            artifact = os.path.join(args.artifacts, f"{model}.t{threads}.tsr")
            source = model if zoo else onnx_path
            command = [args.tessera, "compile", source, "--threads", str(threads), "-o", artifact]
            records = records_for(args.records_dir, model, threads)
            if records:
                command += ["--records", records]
            print(f"{model} {threads} threads: tessera {'with ' + records if records else 'untuned'}", flush=True)
            subprocess.run(command, check=True, capture_output=True)
            extra = extra_sides(args, model, source, threads)
            if args.baseline_tessera:
                before = os.path.join(args.artifacts, f"{model}.t{threads}.before.tsr")
                subprocess.run([args.baseline_tessera, "compile", source, "--threads", str(threads), "-o", before]
                               + (["--records", records] if records else []), check=True, capture_output=True)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            session = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
            fused_session = ort.InferenceSession(fused, opts, providers=["CPUExecutionProvider"]) if fused else None
            feed = {"data": x.numpy()}
            with torch.no_grad():
                torch._inductor.config.freezing = True  # weights as constants, as our build does
                compiled = torch.compile(net)
                compiled(x)  # compile once, outside the timing
                sides = {
                    "tessera": lambda: tessera_round(args.tessera, artifact, threads, args.number),
                    "onnxruntime": lambda: time_callable(lambda: session.run(None, feed), args.number),
                    "torch eager": lambda: time_callable(lambda: net(x), args.number),
                    "torch.compile": lambda: time_callable(lambda: compiled(x), args.number),
                }
                if fused_session:
                    sides["onnxruntime fused"] = lambda: time_callable(lambda: fused_session.run(None, feed),
                                                                       args.number)
                for label, path in extra:
                    sides[label] = lambda path=path: tessera_round(args.tessera, path, threads, args.number)
                if args.baseline_tessera:
                    sides["tessera before"] = lambda: tessera_round(args.baseline_tessera, before, threads, args.number)
                times = {name: [] for name in sides}
                for r in range(args.rounds):
                    order = list(sides)[r % len(sides):] + list(sides)[:r % len(sides)]
                    for name in order:
                        # The frameworks' thread pools spin for a while after
                        # their last call: let them go idle before any side runs.
                        time.sleep(1.0)
                        times[name].append(sides[name]())
            best_framework = min(min(times[n]) for n in sides if not n.startswith("tessera"))
            for name in sides:
                rows.append((model, threads, name, min(times[name]) * 1e3, median(times[name]) * 1e3,
                             min(times[name]) / best_framework))
                print_row(*rows[-1])  # as it comes: a long run shows what it has measured so far
    print(f"\n{'model':<14} {'thr':>3} {'side':<18} {'min ms':>9} {'median ms':>10} {'/ fastest framework':>20}")
    for row in rows:
        print_row(*row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"host": cpu_name(), "versions": {"torch": torch.__version__, "onnxruntime": ort.__version__},
                       "rows": [{"model": m, "threads": t, "side": side, "min_ms": lo, "median_ms": med}
                                for m, t, side, lo, med, _ in rows]}, f, indent=1)
        print(f"wrote {args.json}")


def print_row(model, threads, name, lo, med, ratio):
    print(f"{model:<14} {threads:>3} {name:<18} {lo:>9.2f} {med:>10.2f} {ratio:>20.2f}", flush=True)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
