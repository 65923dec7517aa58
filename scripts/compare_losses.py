"""Two trainings of one run, step by step (scripts/gpu-check.sh check 8, issue 65: burn-train's DDP at world
size 1 against the Learner on one device): every per-step figure their log.jsonl files share (the loss, the
learning rate) with its largest difference, and each row's IE from the report.

    python3 scripts/compare_losses.py RUN_DIR [TOLERANCE]

RUN_DIR: a run folder (report.json, models.json); the first two rows of its report that have a trained
model are compared. Exits 1 when the two took a different number of steps or a figure differs by more than
TOLERANCE relative to the larger magnitude (default 1e-3: a GPU may add a reduction in another order).
"""

import json
import os
import sys


def per_step(log):
    """step -> {figure: value} for the training lines of a log.jsonl (evaluation lines left out)."""
    steps = {}
    for line in open(log):
        if not line.strip():
            continue
        entry = json.loads(line)
        if any(k.startswith("eval/") for k in entry):
            continue
        steps[entry["step"]] = {k: v for k, v in entry.items() if k != "step" and isinstance(v, (int, float))}
    return steps


def main():
    run = sys.argv[1]
    tolerance = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-3
    report = json.load(open(os.path.join(run, "report.json")))
    models = {m["method"]: m["dir"] for m in json.load(open(os.path.join(run, "models.json")))}
    rows = [m for m in report["methods"] if m["name"] in models][:2]
    if len(rows) < 2:
        sys.exit(f"compare_losses: {run} has {len(rows)} trained row(s); two are compared")
    logs = [per_step(os.path.join(models[r["name"]], "log.jsonl")) for r in rows]
    for i, r in enumerate(rows):
        steps = logs[i]
        first, last = steps[min(steps)], steps[max(steps)]
        print(f"row {i + 1}: {r['name']}")
        print(f"  {len(steps)} steps; IE {r['metrics']['ie_mean']:.2f}; first step {first}; last step {last}")
    bad = []
    if sorted(logs[0]) != sorted(logs[1]):
        bad.append(f"steps: {len(logs[0])} against {len(logs[1])}")
    shared = sorted(set.intersection(*(set(k for s in log.values() for k in s) for log in logs)))
    if not shared:
        bad.append("no per-step figure in both logs")
    print("| figure | steps | difference | at step | relative (the largest) | equal at every step |")
    print("|---|---|---|---|---|---|")
    for key in shared:
        pairs = [(step, a[key], logs[1][step][key]) for step, a in sorted(logs[0].items()) if key in a and key in logs[1].get(step, {})]
        def rel(p):
            return abs(p[1] - p[2]) / max(abs(p[1]), abs(p[2]), 1e-12)
        worst = max(pairs, key=rel)
        diff, relative = abs(worst[1] - worst[2]), rel(worst)
        equal = all(a == b for _, a, b in pairs)
        print(f"| {key} | {len(pairs)} | {diff:.3e} | {worst[0]} | {relative:.3e} | {'yes' if equal else 'no'} |")
        if relative > tolerance:
            bad.append(f"{key} differs by {relative:.2e} of its value at step {worst[0]}")
    if bad:
        sys.exit("compare_losses: the two trainings differ: " + "; ".join(bad))
    print(f"compare_losses: the two trainings agree at every step to {tolerance:g}")


if __name__ == "__main__":
    main()
