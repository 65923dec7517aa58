#!/usr/bin/env python3
"""The step benchmark's table (scripts/bench_step.sh): arbor's and PyTorch's timings of the same batches,
read from OUT/arbor-T.jsonl and OUT/torch-T.jsonl, side by side; the last line `step ratio: X` is
PyTorch's ms over arbor's for the windowed step on the median document at 2 threads.

    python3 scripts/step_table.py OUT
"""
import json
import os
import sys


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def main():
    out = sys.argv[1]
    rows, versions, headline = [], None, None
    for t in (1, 2):
        arbor = {r["case"]: r for r in lines(os.path.join(out, f"arbor-{t}.jsonl"))}
        torch = {r["case"]: r for r in lines(os.path.join(out, f"torch-{t}.jsonl"))}
        for case, a in arbor.items():
            p = torch[case]
            versions = f"torch {p['torch']}, transformers {p['transformers']}"
            ratio = p["median_ms"] / a["median_ms"]
            if t == 2 and case == "median document, window":
                headline = ratio
            mib = lambda r: "-" if r["peak_rss_mib"] is None else f"{r['peak_rss_mib']:,.0f}"
            what = "pairs" if case.startswith("reranker") else "units"
            rows.append([case, str(t), f"{a['queries']} q, {a['units']} {what}, {a['tokens']:,} pieces",
                         f"{a['median_ms']:,.0f}", f"{p['median_ms']:,.0f}", f"{ratio:.2f}",
                         f"{a['tokens_per_s']:,.0f}", f"{p['tokens_per_s']:,.0f}", mib(a), mib(p),
                         f"{a['first_loss']:.4f} / {p['first_loss']:.4f}"])
    head = ["case", "threads", "batch", "arbor ms", "PyTorch ms", "PyTorch/arbor", "arbor pieces/s", "PyTorch pieces/s",
            "arbor peak MiB", "PyTorch peak MiB", "first loss arbor / PyTorch"]
    print(f"arbor's fine-tuning step against PyTorch ({versions}), the same batches, median of the timed steps")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if headline is None:
        sys.exit("no windowed step on the median document at 2 threads: no headline")
    print(f"step ratio: {headline:.2f}")


if __name__ == "__main__":
    main()
