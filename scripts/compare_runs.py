#!/usr/bin/env python3
"""Two run folders of one experiment against each other (scripts/gpu-check.sh: a GPU build's run against a
CPU build's): every method's IE within a tolerance, and every query's ranking the same, items in the same
order up to near-ties (two scores within 1e-3 may swap, as one text encoded on two devices may).

    python3 scripts/compare_runs.py REFERENCE_RUN OTHER_RUN [IE_TOLERANCE]

Prints a line per method and `runs agree` or `runs differ` last; exits 1 when they differ.
"""
import json
import os
import sys


def report(run):
    with open(os.path.join(run, "report.json")) as f:
        r = json.load(f)
    return {m["name"]: m["metrics"]["ie_mean"] for m in r["methods"]}, r.get("provenance") or {}


def rankings(run):
    out = {}
    with open(os.path.join(run, "retrievals.jsonl")) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[(r["method"], r["query"])] = [(i["doc"], json.dumps(i["spans"]), i["score"]) for i in r["items"]]
    return out


def same_ranking(got, want, tie=1e-3):
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if (g[0], g[1]) == (w[0], w[1]):
            continue
        if not any(abs(o[2] - w[2]) <= tie and (o[0], o[1]) == (g[0], g[1]) for o in want):
            return False
    return True


def main():
    ref, other = sys.argv[1], sys.argv[2]
    tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
    (ie_ref, prov_ref), (ie_other, prov_other) = report(ref), report(other)
    print(f"reference: {prov_ref.get('backend', '?')}; other: {prov_other.get('backend', '?')}")
    rank_ref, rank_other = rankings(ref), rankings(other)
    ok = set(ie_ref) == set(ie_other)
    for name, ie in ie_ref.items():
        if name not in ie_other:
            print(f"{name}: missing from {other}")
            continue
        keys = [k for k in rank_ref if k[0] == name]
        differ = [k[1] for k in keys if not same_ranking(rank_other.get(k, []), rank_ref[k])]
        close = abs(ie_other[name] - ie) <= tolerance
        ok &= close and not differ
        print(f"{name}: IE {ie:.3f} against {ie_other[name]:.3f} ({'within' if close else 'NOT within'} {tolerance}); "
              f"{len(keys) - len(differ)} of {len(keys)} rankings the same{'' if not differ else ', differ: ' + ', '.join(differ[:5])}")
    print("runs agree" if ok else "runs differ")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
