"""Renders the pipe tables of an arbor JSONL corpus as pdftotext writes tables: one row per line, the cells
separated by runs of spaces, no pipes. Every evidence span is moved to the same text in the new layout.

    python3 scripts/plain_tables.py experiments/fixtures/filing-mini experiments/fixtures/filing-text-mini
    python3 scripts/plain_tables.py ../shared/data/chroma-chunking /tmp/chroma-text --docs finance

A table row is a line holding " | "; its cells are joined by four spaces (pdftotext -layout pads columns
to their width; the width does not matter to a tokenizer, the missing separators do).
"""
import argparse
import json
from pathlib import Path

SEP, GAP = " | ", "    "


def render(text: str):
    """The new text and a map from each old byte offset to its new one."""
    old, new = text.encode(), bytearray()
    offsets = [0] * (len(old) + 1)
    i = 0
    while i < len(old):
        line_end = old.find(b"\n", i)
        line_end = len(old) if line_end < 0 else line_end
        line = old[i:line_end]
        row = SEP.encode() in line
        j = i
        while j < line_end:
            if row and old.startswith(SEP.encode(), j):
                for k in range(len(SEP)):
                    offsets[j + k] = len(new)
                new += GAP.encode()
                j += len(SEP)
            else:
                offsets[j] = len(new)
                new.append(old[j])
                j += 1
        if line_end < len(old):
            offsets[line_end] = len(new)
            new.append(old[line_end])
        i = line_end + 1
    offsets[len(old)] = len(new)
    return new.decode(), offsets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--docs", nargs="*", help="keep only these document ids (and their queries)")
    args = ap.parse_args()
    docs = [json.loads(line) for line in open(args.src / "documents.jsonl", encoding="utf-8")]
    if args.docs:
        docs = [d for d in docs if d["id"] in args.docs]
    maps = {}
    for d in docs:
        d["text"], maps[d["id"]] = render(d["text"])
        if d.get("sections"):
            for s in d["sections"]:
                s["start"], s["end"] = maps[d["id"]][s["start"]], maps[d["id"]][s["end"]]
    queries, rows = [], 0
    for q in map(json.loads, open(args.src / "queries.jsonl", encoding="utf-8")):
        if not all(i in maps for i in q["doc_ids"]):
            continue
        for e in q["evidence"]:
            m = maps[e["doc_id"]]
            e["start"], e["end"] = m[e["start"]], m[e["end"]]
        queries.append(q)
    args.dst.mkdir(parents=True, exist_ok=True)
    with open(args.dst / "documents.jsonl", "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    with open(args.dst / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    for d in docs:
        rows += sum(GAP in line for line in d["text"].split("\n"))
    print(f"{len(docs)} documents, {rows} table rows, {len(queries)} queries")


if __name__ == "__main__":
    main()
