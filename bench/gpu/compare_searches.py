"""Per-layer comparison of the two searches from bench/gpu/tune_check.sh's
tune.jsonl (gpu_models --profile lines): for each model, every kernel call's
device time untuned, tuned with the templates and tuned with the
auto-scheduler, at the trial budget each search spent, as a markdown table.

  python3 bench/gpu/compare_searches.py OUT/tune.jsonl
"""
import json
import sys


def main():
    runs = {}
    for line in open(sys.argv[1]):
        row = json.loads(line)
        if "profile" not in row:
            continue  # an error line, or a run without --profile
        search = row.get("tune", {}).get("search", "untuned")
        runs.setdefault((row["model"], row["batch"]), {})[search] = row
    for (model, batch), by_search in runs.items():
        sides = [s for s in ("untuned", "templates", "auto") if s in by_search]
        print(f"\n### {model}, batch {batch}\n")
        for s in sides:
            t = by_search[s].get("tune")
            if t:
                print(f"- {s}: {t['trials']} trials in {t['seconds']:.0f} s, "
                      f"{by_search[s]['kernels_tuned']} of {by_search[s]['kernels']} kernels tuned, "
                      f"network {by_search[s]['min_ms']:.3f} ms")
            else:
                print(f"- {s}: network {by_search[s]['min_ms']:.3f} ms")
        print("\n| call | nodes | " + " | ".join(f"{s} (ms)" for s in sides) + " | auto / templates |")
        print("|---|---|" + "---|" * len(sides) + "---|")
        first = by_search[sides[0]]["profile"]
        for i, call in enumerate(first):
            ms = [by_search[s]["profile"][i]["ms"] if i < len(by_search[s]["profile"]) else None for s in sides]
            ratio = "-"
            if "auto" in sides and "templates" in sides:
                a, t = ms[sides.index("auto")], ms[sides.index("templates")]
                ratio = f"{a / t:.2f}" if a and t else "-"
            cells = " | ".join(f"{m:.4f}" if m is not None else "-" for m in ms)
            print(f"| {i} | {call['nodes'] or call['kernel']} | {cells} | {ratio} |")


if __name__ == "__main__":
    main()
