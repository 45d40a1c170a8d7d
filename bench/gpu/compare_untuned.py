"""Per-kernel comparison of bench/gpu/untuned_check.sh's untuned.jsonl: for
each model and batch, every kernel call's device time with the half
products on tensor cores (the default) and on CUDA cores
(--no-untuned-tensor-cores), as a markdown table; lines with other flags
(its EXTRA) are listed by their network time.

  python3 bench/gpu/compare_untuned.py OUT/untuned.jsonl
"""
import json
import sys

SIDES = {"": "tensor cores", "--no-untuned-tensor-cores": "CUDA cores"}


def main():
    runs, others = {}, []
    for line in open(sys.argv[1]):
        row = json.loads(line)
        if "profile" not in row:
            others.append(row)  # an error, a skipped line
            continue
        side = SIDES.get(row.get("flags", "").strip())
        if side is None:
            others.append(row)
            continue
        runs.setdefault((row["model"], row["batch"], row["dtype"]), {})[side] = row
    for (model, batch, dtype), by_side in runs.items():
        print(f"\n### {model}, batch {batch}, {dtype}\n")
        for side, row in by_side.items():
            check = f", correct {row['correct']} ({row['max_rel_error']:.1e})" if "correct" in row else ""
            print(f"- {side}: network {row['min_ms']:.3f} ms{check}")
        if len(by_side) < 2:
            continue
        tc, cc = by_side["tensor cores"]["profile"], by_side["CUDA cores"]["profile"]
        print("\n| call | nodes | tensor cores (ms) | CUDA cores (ms) | ratio |\n|---|---|---|---|---|")
        for i, (a, b) in enumerate(zip(tc, cc)):
            print(f"| {i} | {a['nodes'] or a['kernel']} | {a['ms']:.4f} | {b['ms']:.4f} | {a['ms'] / b['ms']:.2f} |")
    for row in others:
        keep = {k: row[k] for k in ("model", "batch", "dtype", "flags", "min_ms", "correct", "error", "skipped")
                if k in row}
        print(f"\n- {json.dumps(keep)}")


if __name__ == "__main__":
    main()
