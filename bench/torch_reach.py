#!/usr/bin/env python3
"""Which of bench/onnx_reach.py's models run through
torch.compile(backend="tessera") and match eager PyTorch.

Each model (random weights, eval mode; the transformers built from their
configs, nothing downloaded) runs eagerly on a seeded input, then compiled
with the tessera backend; the largest difference relative to the largest
eager output is reported with Dynamo's graphs and the nodes the backend left
to PyTorch (its graph breaks, counted by reason).

    PYTHONPATH=build/python bench/.venv/bin/python bench/torch_reach.py [--family F] [MODEL ...]
"""
import argparse
import collections
import sys
import time

import torch

import onnx_reach
import tessera.torch_backend as tessera_backend


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--family", choices=list(onnx_reach.FAMILIES), default="classification",
                   help="which family of models, when none are named")
    p.add_argument("models", nargs="*")
    args = p.parse_args()
    models = args.models or onnx_reach.family(args.family)
    ok = 0
    for name in models:
        net, x = onnx_reach.build(name)
        seen = {"graphs": 0, "breaks": collections.Counter()}

        def counting_backend(gm, inputs, **kwargs):
            # What the backend will leave to PyTorch (asked node by node, the
            # graph untouched), then the backend itself.
            seen["graphs"] += 1
            for node in gm.graph.nodes:
                # Calls that neither read nor make a tensor (torchvision's usage
                # logging) are no computation to leave anywhere.
                tensors = [node] + list(node.all_input_nodes)
                if not any(isinstance(t.meta.get("example_value", t.meta.get("val")), (torch.Tensor, tuple, list))
                           for t in tensors):
                    continue
                if node.op in ("call_function", "call_method"):
                    supported, why = tessera_backend.supports(node)
                    if not supported:
                        seen["breaks"][why.split(":")[0]] += 1
            return tessera_backend.tessera_backend(gm, inputs, **kwargs)

        torch._dynamo.reset()
        try:
            with torch.no_grad():
                want = net(x)
                start = time.perf_counter()
                got = torch.compile(net, backend=counting_backend)(x)
                first = time.perf_counter() - start
        except Exception as e:  # noqa: BLE001  any failure is the line to report
            print(f"{name:<22} FAILED: {str(e).strip().splitlines()[-1][:200]}", flush=True)
            continue
        err = float((got - want).abs().max() / want.abs().max())
        ok += err <= 1e-4
        breaks = sum(seen["breaks"].values())
        reasons = ", ".join(f"{why} x{n}" for why, n in seen["breaks"].most_common(4))
        print(f"{name:<22} {'correct' if err <= 1e-4 else 'WRONG'}: max rel error {err:.1e}; "
              f"{seen['graphs']} Dynamo graph(s), {breaks} node(s) left to PyTorch{': ' + reasons if reasons else ''}; "
              f"first call {first:.1f} s", flush=True)
    print(f"{ok} of {len(models)} models run and match eager")
    return 0 if ok == len(models) else 1


if __name__ == "__main__":
    sys.exit(main())
