"""Tessera, an auto-tuning deep-learning compiler, from Python.

    import numpy as np, tessera
    model = tessera.load_model("resnet-18")             # a zoo name or an .onnx file
    module = tessera.compile(model, records="r18.log")  # this host; records optional (without: the pre-tuned
                                                        # ones shipped for this host's target, if any)
    logits = module(np.random.rand(1, 3, 224, 224).astype(np.float32))
    module.save("r18.tsr"); tessera.load("r18.tsr")

    tessera.tune(model, log="r18.log", trials=300)      # the seed's progress lines
    tessera.pick_best("r18.log", "r18.best.log")        # the best record per task
    tessera.report(["r18.log"], "r18.html", model="resnet-18")  # one HTML page: tuning, kernels, roofline
    fast = tessera.jit(model, mode="reduce-overhead")   # compiles on its first call
    anybatch = tessera.jit(model, dynamic=True)          # a batch seen at two sizes: one artifact for a range

    bert = tessera.load_model("bert.onnx", dims={"sequence": (1, 512)})
    any_length = tessera.compile(bert)                  # one artifact of buckets: any length in 1..512

    gpu = tessera.compile(model, target="cuda")          # a GpuModule: runs on the GPU
    gpu(x_cuda, out=y_cuda)                             # torch CUDA tensors through DLPack, copied on the device

Arrays are numpy float32. Inputs are read in place when C-contiguous;
outputs are new arrays, except from a jit in reduce-overhead mode, whose
outputs are views that the next call overwrites. Errors are tessera.Error
(a RuntimeError) with a message that names the input.
"""
from ._tessera import (Error, GpuModule, GraphBuilder, Jit, Model, Module, VaryingModule, compile, jit, load,
                       load_model, pick_best, report, tune)

__all__ = ["Error", "GpuModule", "GraphBuilder", "Jit", "Model", "Module", "VaryingModule", "compile", "explain", "jit",
           "load", "load_model", "pick_best", "report", "tune"]


def explain(model, *example_inputs):
    """The graph breaks and the Tessera kernels of `model` (a torch.nn.Module)
    under torch.compile(backend="tessera"): see tessera.torch_backend."""
    from .torch_backend import explain as _explain
    return _explain(model, *example_inputs)
