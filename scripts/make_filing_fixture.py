"""Writes experiments/fixtures/filing-mini: the opening of chroma-chunking's `finance` document (annual-report
text with pipe tables) and the chroma-chunking questions whose evidence lies in it.

    python3 scripts/make_filing_fixture.py ../shared/data/chroma-chunking experiments/fixtures/filing-mini
"""
import json
import sys
from pathlib import Path

BYTES = 60_000  # cut at the first paragraph break after this many bytes

src, dst = Path(sys.argv[1]), Path(sys.argv[2])
docs = {d["id"]: d for d in map(json.loads, open(src / "documents.jsonl", encoding="utf-8"))}
text = docs["finance"]["text"].encode()
cut = text.find(b"\n\n", BYTES)
doc = {"id": "finance-excerpt", "title": "finance (excerpt)", "text": text[:cut].decode(), "split": "test"}
queries = []
for q in map(json.loads, open(src / "queries.jsonl", encoding="utf-8")):
    if q["doc_ids"] == ["finance"] and all(e["end"] <= cut for e in q["evidence"]):
        q["doc_ids"] = [doc["id"]]
        q["evidence"] = [dict(e, doc_id=doc["id"]) for e in q["evidence"]]
        queries.append(q)
dst.mkdir(parents=True, exist_ok=True)
with open(dst / "documents.jsonl", "w", encoding="utf-8") as f:
    f.write(json.dumps(doc, ensure_ascii=False) + "\n")
with open(dst / "queries.jsonl", "w", encoding="utf-8") as f:
    for q in queries:
        f.write(json.dumps(q, ensure_ascii=False) + "\n")
print(f"{len(doc['text'].split())} words, {len(queries)} queries")
