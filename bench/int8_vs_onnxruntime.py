#!/usr/bin/env python3
"""Int8 networks: Tessera's `--quantize int8` against Tessera fp32 and
onnxruntime's int8 (issue 31's benchmark).

onnxruntime's side is what its users deploy: the torchvision model exported to
ONNX and quantized by `quantize_static` (QDQ format, per-channel weights,
uint8 activations (`--activations int8`: int8, its default, S8S8), int8
weights, min-max calibration on the same seeded random inputs Tessera
calibrates on), run by its CPU provider. Tessera compiles the
zoo model of the same architecture with `--quantize int8 --calibrate N`
("int8"), and onnxruntime's quantized file itself ("qdq": its QDQ pairs fused
into Tessera's int8 kernels, onnxruntime's integers and scales; the logits'
distance from onnxruntime's is printed). Weights are random on both sides:
timing does not depend on them.

For each model, thread count and ISA the sides are timed in alternating rounds
in this one run; each keeps the minimum and median of its per-round medians.
`--isas host,avx2` compiles Tessera's sides for this host and for it capped at
AVX2 (`--target "llvm -isa=avx2"`; AVX-VNNI stays where the host has it), plus
`haswell` for AVX2 without any VNNI (`-mcpu=haswell`). onnxruntime has no
option to cap its ISA: each row's onnxruntime runs in a process of its own that
sees the CPU without AVX-512 and AMX ("avx2") and without AVX-VNNI too
("haswell"), through hide_cpu_features.c (CPUID faulting; Linux on a CPU with
`cpuid_fault`), so both sides of a row compute with the same instructions. Tessera keeps the first convolution in
float32 (its default, seed 003's skip_conv_layers=[0]); `--quantize-all`
quantizes it too, as onnxruntime's quantize_static does.

bert-base (and the other transformers of network_vs_frameworks.py) have no
convolution for `--quantize int8`: their rows time onnxruntime's quantized
file in Tessera (qdq) against Tessera fp32 and onnxruntime int8.

    bench/int8_vs_onnxruntime.py [--models resnet-18,resnet-50,mobilenet-v2,bert-base]
        [--threads 1,2] [--isas host,avx2] [--rounds 5] [--calibrate 8] [--activations uint8|int8]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import network_vs_frameworks as frameworks  # noqa: E402  (its venv, models and timing)

ISA_TARGETS = {"host": "llvm", "avx2": "llvm -isa=avx2", "haswell": "llvm -mcpu=haswell"}
# What onnxruntime's process must not see of the CPU for each ISA (hide_cpu_features.c).
ISA_HIDDEN = {"host": "", "avx2": "avx512", "haswell": "avx512,avxvnni"}


def hide_cpu_features_library(directory):
    """bench/hide_cpu_features.c built into `directory` (once): the library's path."""
    out = os.path.join(directory, "hide_cpu_features.so")
    source = os.path.join(HERE, "hide_cpu_features.c")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(source):
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", out, source], check=True)
    return out


class OrtWorker:
    """onnxruntime timing `model` in a process of its own that sees the CPU without the features `hidden`
    names (\"\": all of them), so that it picks the kernels it would pick on such a CPU."""

    def __init__(self, model, feed_path, threads, number, hidden, library):
        env = dict(os.environ)
        if hidden:
            env.update(LD_PRELOAD=library, HIDE_CPU_FEATURES=hidden)
        self.process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--ort-worker", model, feed_path,
                                         str(threads), str(number), library if hidden else ""],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = self.process.stdout.readline()
        if not ready.startswith("ready"):
            raise RuntimeError(f"onnxruntime worker for {model} ({hidden or 'all features'}) did not start")

    def time(self):
        self.process.stdin.write("time\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def ort_worker_main(model, feed_path, threads, number, library):
    """The worker's side: checks that the features are hidden, then times a run per line read."""
    import ctypes

    import numpy as np
    import onnxruntime as ort
    if library:
        leaf7 = ctypes.CDLL(library).hide_cpu_features_leaf7
        leaf7.restype = ctypes.c_uint64
        seen = leaf7()
        if seen & (1 << 16) or ("avxvnni" in os.environ["HIDE_CPU_FEATURES"] and seen >> 32 & (1 << 4)):
            sys.exit(f"hide_cpu_features: {os.environ['HIDE_CPU_FEATURES']} still visible")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    feed = dict(np.load(feed_path))
    print("ready", flush=True)
    for _ in sys.stdin:
        print(frameworks.time_callable(lambda: session.run(None, feed), number), flush=True)


def calibration_sample(rng, x):
    """A seeded input like `x`: token ids for a text model (int64), else uniform in [-1, 1]."""
    import numpy as np
    if x.dtype == np.int64:
        return rng.integers(0, 30000, x.shape).astype(np.int64)
    return rng.uniform(-1, 1, x.shape).astype(np.float32)


def ort_int8(onnx_path, x, samples, activations="uint8"):
    """onnxruntime's quantize_static of `onnx_path` (QDQ, per channel, `activations` uint8 or int8), calibrated on
    `samples` seeded inputs like `x` (a numpy array): the path."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    out = onnx_path[:-len(".onnx")] + (".int8.onnx" if activations == "uint8" else ".s8s8.onnx")
    if os.path.exists(out):
        return out

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(42)
            self.items = iter([{"data": calibration_sample(rng, x)} for _ in range(samples)])

        def get_next(self):
            return next(self.items, None)

    prepared = onnx_path[:-len(".onnx")] + ".prep.onnx"
    quant_pre_process(onnx_path, prepared)
    quantize_static(prepared, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8 if activations == "uint8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--ort-worker":
        return ort_worker_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    frameworks.ensure_venv()
    import numpy as np
    import onnxruntime as ort
    import torch
    import torchvision

    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnet-18,resnet-50,mobilenet-v2")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--isas", default="host,avx2", help="host, avx2 (-isa=avx2), haswell (AVX2 without VNNI)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--number", type=int, default=10)
    p.add_argument("--calibrate", type=int, default=8, help="seeded random calibration samples, both sides")
    p.add_argument("--quantize-all", action="store_true",
                   help="Tessera quantizes the first convolution too (--skip-layers ''), as onnxruntime does")
    p.add_argument("--activations", default="uint8", choices=["uint8", "int8"],
                   help="onnxruntime's activation type (int8: S8S8, its default)")
    p.add_argument("--tessera", default=os.path.join(HERE, "..", "build", "tessera"))
    p.add_argument("--artifacts", default="/tmp/tessera-bench", help="where compiled models are kept")
    args = p.parse_args()
    os.makedirs(args.artifacts, exist_ok=True)
    library = hide_cpu_features_library(args.artifacts) if any(ISA_HIDDEN[i] for i in args.isas.split(",")) else ""
    print(f"onnxruntime {ort.__version__}, cpu: {frameworks.cpu_name()}")
    rows = []
    for model in args.models.split(","):
        net, x, _ = frameworks.build_model(model, torch, torchvision)
        onnx_path = os.path.join(args.artifacts, f"{model}.onnx")
        if not os.path.exists(onnx_path):
            torch.onnx.export(net, x, onnx_path, opset_version=17, input_names=["data"], dynamo=False)
        quantized = ort_int8(onnx_path, x.numpy(), args.calibrate, args.activations)
        feed = {"data": x.numpy()}
        feed_path = os.path.join(args.artifacts, f"{model}.feed.npz")
        np.savez(feed_path, **feed)
        # A transformer has no convolution for --quantize int8: its int8 side is onnxruntime's file (qdq).
        sides_of_tessera = ("fp32", "qdq") if model in frameworks.TRANSFORMERS else ("fp32", "int8", "qdq")
        for threads in [int(t) for t in args.threads.split(",")]:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            session = ort.InferenceSession(quantized, opts, providers=["CPUExecutionProvider"])
            sides, workers = {}, []
            for isa in args.isas.split(","):
                target = ISA_TARGETS[isa]
                workers.append(OrtWorker(quantized, feed_path, threads, args.number, ISA_HIDDEN[isa], library))
                sides[f"onnxruntime {isa} int8"] = workers[-1].time
                int8 = ["--quantize", "int8", "--calibrate", str(args.calibrate)] + \
                    (["--skip-layers", ""] if args.quantize_all else [])
                for label, source, extra in (("fp32", onnx_path if model in frameworks.TRANSFORMERS else model, []),
                                             ("int8", model, int8), ("qdq", quantized, [])):
                    if label not in sides_of_tessera:
                        continue
                    artifact = os.path.join(args.artifacts, f"{model}.t{threads}.{isa}.{label}.tsr")
                    if os.path.exists(artifact):
                        os.remove(artifact)
                    subprocess.run([args.tessera, "compile", source, "--threads", str(threads), "--target", target,
                                    "-o", artifact] + extra, check=True, capture_output=True)
                    if label == "qdq" and threads == 1:
                        print(f"{model} {isa}: onnxruntime's QDQ model in Tessera: logits' max relative error against "
                              f"onnxruntime's {qdq_error(args.tessera, artifact, session, feed):.1e}", flush=True)
                    sides[f"tessera {isa} {label}"] = \
                        lambda artifact=artifact: frameworks.tessera_round(args.tessera, artifact, threads, args.number)
            times = {name: [] for name in sides}
            for r in range(args.rounds):
                order = list(sides)[r % len(sides):] + list(sides)[:r % len(sides)]
                for name in order:
                    time.sleep(1.0)  # onnxruntime's pool spins after its last call: let it go idle
                    times[name].append(sides[name]())
            for worker in workers:
                worker.close()
            for isa in args.isas.split(","):
                ort_best = min(times[f"onnxruntime {isa} int8"])
                fp32 = min(times[f"tessera {isa} fp32"])
                int8 = min(times.get(f"tessera {isa} int8", [float("nan")]))
                qdq = min(times[f"tessera {isa} qdq"])
                rows.append((model, threads, isa, fp32 * 1e3, int8 * 1e3, qdq * 1e3, ort_best * 1e3, fp32 / int8,
                             int8 / ort_best, qdq / ort_best))
                print_row(*rows[-1])
    print(f"\n{'model':<13} {'thr':>3} {'isa':<8} {'fp32 ms':>8} {'int8 ms':>8} {'qdq ms':>8} {'ort int8':>9} "
          f"{'fp32/int8':>10} {'int8/ort':>9} {'qdq/ort':>8}")
    for row in rows:
        print_row(*row)


def qdq_error(tessera, artifact, session, feed):
    """The largest |tessera - onnxruntime| over the largest |onnxruntime| of the logits, on `feed`."""
    import numpy as np
    want = session.run(None, feed)[0]
    with tempfile.TemporaryDirectory() as d:
        np.save(os.path.join(d, "x.npy"), feed["data"].astype(np.float32))  # token ids too: Tessera reads float npy
        subprocess.run([tessera, "run", artifact, "--input", os.path.join(d, "x.npy"), "--output", os.path.join(d, "y.npy")],
                       check=True, capture_output=True)
        got = np.load(os.path.join(d, "y.npy"))
    return float(np.abs(got - want).max() / np.abs(want).max())


def print_row(model, threads, isa, fp32, int8, qdq, ort_int8_ms, speedup, ratio, qdq_ratio):
    print(f"{model:<13} {threads:>3} {isa:<8} {fp32:>8.2f} {int8:>8.2f} {qdq:>8.2f} {ort_int8_ms:>9.2f} "
          f"{speedup:>10.2f} {ratio:>9.2f} {qdq_ratio:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
