"""Per-kernel comparison of bench/gpu/untuned_check.sh's untuned.jsonl: for
each model and batch, every kernel call's device time with the half
products on tensor cores (the default), on CUDA cores
(--no-untuned-tensor-cores) and with the steps pipelined
(--untuned-pipelined), whichever ran, as a markdown table; lines with other
flags (its EXTRA) are listed by their network time.

  python3 bench/gpu/compare_untuned.py OUT/untuned.jsonl
"""
import json
import sys

SIDES = {"": "tensor cores", "--no-untuned-tensor-cores": "CUDA cores", "--untuned-pipelined": "pipelined"}


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
        if len(by_side) < 2 or "tensor cores" not in by_side:
            continue
        # Each other side beside the default, and the default's time over it.
        base = by_side["tensor cores"]["profile"]
        others_here = [side for side in SIDES.values() if side in by_side and side != "tensor cores"]
        head = " | ".join(f"{side} (ms) | tensor cores / {side}" for side in others_here)
        print(f"\n| call | nodes | tensor cores (ms) | {head} |\n|---|---|---|" + "---|---|" * len(others_here))
        for i, a in enumerate(base):
            cells = []
            for side in others_here:
                b = by_side[side]["profile"][i]
                cells.append(f"{b['ms']:.4f} | {a['ms'] / b['ms']:.2f}")
            print(f"| {i} | {a['nodes'] or a['kernel']} | {a['ms']:.4f} | " + " | ".join(cells) + " |")
    for row in others:
        keep = {k: row[k] for k in ("model", "batch", "dtype", "flags", "min_ms", "correct", "error", "skipped")
                if k in row}
        print(f"\n- {json.dumps(keep)}")


if __name__ == "__main__":
    main()
