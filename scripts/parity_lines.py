#!/usr/bin/env python3
"""Writes the texts `arbor embed` is checked on against sentence-transformers (scripts/check_embed_parity.py):
one a line, from a data root's corpora, deterministic. By default 300 questions of legalbench-rag-mini and
squad-long, 100 single sentences cut from squad-long's articles, and 150 windows of 3,000 characters of
legalbench-rag-mini's contracts (longer than any encoder's token limit, so the cut is checked too), each
window's line breaks made spaces (a line is one text).

    python3 scripts/parity_lines.py DATA_ROOT > lines.txt
"""
import json
import re
import sys


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    root = sys.argv[1]
    lines = []
    for corpus, n in (("legalbench-rag-mini", 150), ("squad-long", 150)):
        lines += [q["text"] for q in jsonl(f"{root}/{corpus}/queries.jsonl")[:n]]
    articles = jsonl(f"{root}/squad-long/documents.jsonl")
    sentences = [s for d in articles for s in re.split(r"(?<=[.!?])\s+", d["text"]) if 20 <= len(s) <= 400]
    lines += sentences[:: max(1, len(sentences) // 100)][:100]
    contracts = jsonl(f"{root}/legalbench-rag-mini/documents.jsonl")
    windows = [d["text"][i : i + 3000] for d in contracts for i in range(0, len(d["text"]) - 3000, 7919)]
    lines += windows[:: max(1, len(windows) // 150)][:150]
    for line in lines:
        print(" ".join(line.split()))


if __name__ == "__main__":
    main()
