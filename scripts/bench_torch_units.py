#!/usr/bin/env python3
"""PyTorch sentence-transformers encoding the units an arbor index holds, for the indexing benchmark
(scripts/bench_index.sh): reads every unit's text out of the index (an SQLite file), encodes them all in
one run, and prints one JSON line: {"units", "words", "seconds", "words_per_second", "threads"}. Words are
counted over the documents, as `arbor index` counts them.

    python3 scripts/bench_torch_units.py INDEX MODEL_DIR [BATCH_SIZE]
"""
import json
import os
import sqlite3
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402


def main():
    index, model_dir = sys.argv[1], sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    db = sqlite3.connect(index)
    texts, words = [], 0
    for doc_id, text in db.execute("SELECT id, text FROM documents ORDER BY key"):
        raw = text.encode("utf-8")
        words += len(text.split())
        for start, end in db.execute("SELECT byte_start, byte_end FROM units WHERE doc = ? ORDER BY ord", (doc_id,)):
            texts.append(raw[start:end].decode("utf-8"))
    model = SentenceTransformer(model_dir, device="cpu")
    model.encode(texts[:batch], batch_size=batch)  # warm-up
    start = time.perf_counter()
    model.encode(texts, batch_size=batch)
    seconds = time.perf_counter() - start
    print(json.dumps({"units": len(texts), "words": words, "seconds": seconds, "words_per_second": words / seconds, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
