#!/usr/bin/env python3
"""torch.compile(backend="tessera") against torch.compile's default backend
(Inductor, with freezing), batch 1, in one run: the sides alternate round by
round and each keeps its fastest round's median.

    PYTHONPATH=build/python bench/.venv/bin/python bench/torch_backend_vs_inductor.py \\
        [--models resnet18,resnet50,mobilenet_v2] [--threads 1,2] [--rounds 5] [--number 20]
        [--records-dir DIR]   # DIR/MODEL.tTHREADS.log: the zoo name's tuning log (resnet-18.t2.log)

Tessera's side uses records when given (torchvision's models are the zoo's
architectures, so a log of `tessera tune resnet-18` applies: same workloads).
"""
import argparse
import os
import statistics
import time

import torch
import torch._inductor.config as inductor_config
import torchvision

import tessera.torch_backend  # noqa: F401  registers backend="tessera"

ZOO = {"resnet18": "resnet-18", "resnet50": "resnet-50", "mobilenet_v2": "mobilenet-v2"}


def median_ms(f, x, number):
    times = []
    for _ in range(number):
        start = time.perf_counter()
        f(x)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="resnet18,resnet50,mobilenet_v2")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--number", type=int, default=20)
    p.add_argument("--records-dir")
    a = p.parse_args()
    inductor_config.freezing = True
    print(f"torch {torch.__version__}")
    print(f"{'model':<14}{'thr':>4} {'tessera ms':>11} {'inductor ms':>12} {'ratio':>7}")
    for threads in [int(t) for t in a.threads.split(",")]:
        torch.set_num_threads(threads)
        for name in a.models.split(","):
            torch._dynamo.reset()
            model = getattr(torchvision.models, name)().eval()
            x = torch.randn(1, 3, 224, 224)
            options = {"threads": threads}
            records = os.path.join(a.records_dir or "", f"{ZOO.get(name, name)}.t{threads}.log")
            if a.records_dir and os.path.exists(records):
                options["records"] = records
            with torch.no_grad():
                sides = {"tessera": torch.compile(model, backend="tessera", options=options),
                         "inductor": torch.compile(model)}
                for f in sides.values():
                    for _ in range(3):
                        f(x)  # compile and warm up
                best = {k: float("inf") for k in sides}
                for r in range(a.rounds):
                    for k in (list(sides) if r % 2 == 0 else list(reversed(sides))):
                        best[k] = min(best[k], median_ms(sides[k], x, a.number))
            print(f"{name:<14}{threads:>4} {best['tessera']:>11.2f} {best['inductor']:>12.2f} "
                  f"{best['tessera'] / best['inductor']:>7.2f}{'  (records)' if 'records' in options else ''}",
                  flush=True)


if __name__ == "__main__":
    main()
