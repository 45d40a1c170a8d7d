#!/usr/bin/env python3
"""torch.compile(BERT-base, backend="tessera", dynamic=True) at several
sequence lengths, against eager PyTorch in the same process: each length's
first call (a compile, a range of buckets, or nothing) and then the minimum
of a few calls. BERT-base is built from its config (random weights, nothing
downloaded). Needs bench/.venv (torch, transformers):

    PYTHONPATH=build/python bench/.venv/bin/python bench/torch_dynamic_sequence.py \\
        [--lengths 128,64,100,37,128,16,200] [--threads 1]
"""
import argparse
import time

import torch
import transformers

import tessera.torch_backend  # noqa: F401  registers backend="tessera"


def best_ms(f, calls=5):
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lengths", default="128,64,100,37,128,16,200")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    model = transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False).eval()
    compiled = torch.compile(model, backend="tessera", dynamic=True, options={"threads": args.threads})
    print(f"{'tokens':>6} {'first call s':>12} {'rel error':>9} {'tessera ms':>10} {'eager ms':>9}")
    with torch.no_grad():
        for n in [int(v) for v in args.lengths.split(",")]:
            ids = torch.randint(0, 30000, (1, n))
            start = time.perf_counter()
            y = compiled(input_ids=ids).last_hidden_state
            first = time.perf_counter() - start
            want = model(input_ids=ids).last_hidden_state
            error = float((y - want).abs().max() / want.abs().max())
            print(f"{n:>6} {first:12.2f} {error:9.1e} {best_ms(lambda: compiled(input_ids=ids)):10.1f} "
                  f"{best_ms(lambda: model(input_ids=ids)):9.1f}", flush=True)


if __name__ == "__main__":
    main()
