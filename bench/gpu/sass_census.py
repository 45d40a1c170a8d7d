"""Static SASS census of a network's CUDA kernels, without a GPU: each zoo
network is compiled untuned for `cuda -arch=sm_90` (--no-shipped-records),
its CUDA source assembled by nvcc (the flags NVRTC gets), and every kernel's
machine code disassembled by nvdisasm and counted: instructions, branches,
divergent regions (BSSY), global loads, tensor-core (HMMA) and fp32 (FFMA)
multiply-adds, the instructions and multiply-adds of each kernel's hot loop
(the one with the most multiply-adds), the shared memory passes its
ldmatrix sites take by their rows' stride (ldsm_passes, from the CUDA
source), and the bytes ptxas spilled. Given two builds, each network
side by side (--kernels: each kernel that changed).

A proxy for sessions with no GPU, not a timing: it shows control flow and
instruction overhead (index arithmetic per multiply-add), not latency,
occupancy or memory traffic. Claims of speed still need bench/gpu's device
runs.

  python3 bench/gpu/sass_census.py build/tessera [--before OLD_TESSERA] \\
      [--models resnet-18 mobilenet-v2] [--batches 1 16] [--dtypes float32 float16] \\
      [--layout NHWC] [--before-layout NCHW]

--layout is the zoo's activation layout (NCHW by default); --before-layout
the before side's (the same by default), so that one build's two layouts
can be counted side by side (--before build/tessera --before-layout NCHW
--layout NHWC).

nvdisasm: from the CUDA toolkit if it has one, else PATH (PyPI's
nvidia-cuda-nvdisasm, 13.2 and later, in any venv: its nvidia/cu13/bin), else
the copy PyTorch's Triton carries in bench/.venv (bench/gpu/gpu_vs_torch.py's
environment).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def find_nvdisasm():
    for candidate in [os.path.join(CUDA, "bin", "nvdisasm"), shutil.which("nvdisasm")] + sorted(
            glob.glob(os.path.join(ROOT, "bench/.venv/lib/python3*/site-packages/triton/backends/nvidia/bin/nvdisasm"))):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("sass_census: no nvdisasm (not in " + CUDA + "/bin, PATH or bench/.venv's triton; "
             "pip install nvidia-cuda-nvdisasm brings one)")


def network_source(tessera, model, batch, dtype, layout):
    with tempfile.NamedTemporaryFile(suffix=".tsr") as out:
        subprocess.run([tessera, "compile", model, "--batch", str(batch), "--dtype", dtype, "--layout", layout,
                        "--target", "cuda -arch=sm_90", "--no-shipped-records", "-o", out.name], check=True,
                       capture_output=True)
        data = open(out.name, "rb").read()
    start = data.rfind(b"{", 0, data.find(b'"kernels"'))
    return json.JSONDecoder().raw_decode(data[start:].decode("latin1"))[0]["source"]


def hot_loop(lines):
    """(instructions, multiply-adds) of the loop with the most multiply-adds
    (HMMA, else FFMA; the smallest such loop): a loop is a label and a
    branch back to it."""
    labels, loops = {}, []
    at = 0
    for l in lines:
        label = re.match(r"(\.L_x_\d+):", l)
        if label:
            labels[label.group(1)] = at
            continue
        back = re.search(r"BRA `\((\.L_x_\d+)\)", l)
        if back and back.group(1) in labels:
            loops.append((labels[back.group(1)], at + 1))
        at += 1
    body = [l for l in lines if not re.match(r"\.L_x_\d+:", l)]
    best = (0, 0)
    for start, end in loops:
        mma = sum(1 for l in body[start:end] if re.search(r"\bHMMA\b", l))
        mma = mma or sum(1 for l in body[start:end] if re.search(r"\bFFMA\b", l))
        if mma > best[1] or (mma == best[1] and mma and end - start < best[0]):
            best = (end - start, mma)
    return best


def count(kernel_sass):
    lines = [l for l in kernel_sass.splitlines()
             if re.match(r"\s*/\*[0-9a-f]{4}\*/", l) or re.match(r"\.L_x_\d+:", l)]
    code = [l for l in lines if not re.match(r"\.L_x_\d+:", l)]

    def n(pattern):
        return sum(1 for l in code if re.search(pattern, l))

    loop, loop_mma = hot_loop(lines)
    return {"instructions": len(code), "branches": n(r"\bBRA\b"), "divergent": n(r"\bBSSY\b"),
            "global_loads": n(r"\bLDG\b"), "hmma": n(r"\bHMMA\b"), "ffma": n(r"\bFFMA\b"),
            "loop": loop, "loop_mma": loop_mma}


def ldmatrix_passes(kernel_source):
    """Shared memory passes of the kernel's ldmatrix sites, summed: each
    reads 8 x 8 matrices as 8 rows of 16 bytes, `ld` halves apart (the
    last argument of tsr_ldmatrix_a / _b), and takes as many passes as
    the most of those rows in one 16-byte slot of the 128 bytes the banks
    serve a cycle (tir/pad_tensor_core_rows.h). Static: a site in a loop
    counts once."""
    total = 0
    for m in re.finditer(r"tsr_ldmatrix_[ab]<(?:true|false)>\([^;]*?, (\d+)\)", kernel_source):
        slots = {}
        for r in range(8):
            slot = r * int(m.group(1)) * 2 % 128 // 16
            slots[slot] = slots.get(slot, 0) + 1
        total += max(slots.values())
    return total


def census(tessera, nvdisasm, model, batch, dtype, layout):
    """{kernel name: counts} of one network."""
    source = network_source(tessera, model, batch, dtype, layout)
    with tempfile.TemporaryDirectory() as tmp:
        cu, cubin = os.path.join(tmp, "net.cu"), os.path.join(tmp, "net.cubin")
        open(cu, "w").write(source)
        ptxas = subprocess.run([os.path.join(CUDA, "bin", "nvcc"), "-arch=sm_90", "-std=c++17", "-cubin", "-w",
                                "-Xptxas", "-v", "-o", cubin, cu], check=True, capture_output=True, text=True).stderr
        sass = subprocess.run([nvdisasm, "-c", cubin], check=True, capture_output=True, text=True).stdout
    kernels = {}
    for part in re.split(r"\n(?=//-+ \.text\.)", sass):
        name = re.match(r"//-+ \.text\.(\S+) ", part)
        if name:
            kernels[name.group(1)] = count(part)
    # ptxas -v: per entry function, its spilled bytes and registers.
    for entry in re.split(r"Compiling entry function '", ptxas)[1:]:
        name = entry.split("'")[0]
        spills = re.search(r"(\d+) bytes spill stores", entry)
        registers = re.search(r"Used (\d+) registers", entry)
        if name in kernels:
            kernels[name]["spill_bytes"] = int(spills.group(1)) if spills else 0
            kernels[name]["registers"] = int(registers.group(1)) if registers else 0
    for part in re.split(r'\n(?=extern "C" __global__)', source):
        name = re.search(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(", part)
        if name and name.group(1) in kernels:
            kernels[name.group(1)]["ldsm_passes"] = ldmatrix_passes(part)
    return kernels


def total(kernels, key):
    return sum(k.get(key, 0) for k in kernels.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tessera")
    parser.add_argument("--before", help="another build's tessera, counted beside it")
    parser.add_argument("--models", nargs="+", default=["resnet-18", "resnet-50", "mobilenet-v2"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"])
    parser.add_argument("--kernels", action="store_true", help="every kernel whose counts changed")
    parser.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    parser.add_argument("--before-layout", choices=["NCHW", "NHWC"], help="the before side's (default: --layout)")
    args = parser.parse_args()
    before_layout = args.before_layout or args.layout
    nvdisasm = find_nvdisasm()
    keys = ["instructions", "branches", "divergent", "global_loads", "hmma", "ffma", "loop", "loop_mma", "ldsm_passes",
            "spill_bytes"]
    print("| model | batch | dtype | kernels | " + " | ".join(keys) + " |")
    print("|---|---|---|---|" + "---|" * len(keys))
    for model in args.models:
        for batch in args.batches:
            for dtype in args.dtypes:
                now = census(args.tessera, nvdisasm, model, batch, dtype, args.layout)
                old = census(args.before, nvdisasm, model, batch, dtype, before_layout) if args.before else None
                cells = [f"{total(old, k)} -> {total(now, k)}" if old else str(total(now, k)) for k in keys]
                print(f"| {model} | {batch} | {dtype} | {len(now)} | " + " | ".join(cells) + " |", flush=True)
                if args.kernels and old:
                    for name, c in now.items():
                        o = old.get(name)
                        if o and o != c:
                            print(f"  {name}: " + ", ".join(f"{k} {o.get(k, 0)} -> {c.get(k, 0)}" for k in keys
                                                            if o.get(k, 0) != c.get(k, 0)))


if __name__ == "__main__":
    main()
