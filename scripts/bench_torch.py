#!/usr/bin/env python3
"""PyTorch sentence-transformers throughput on the sentences of a file (one per line), for the encoder
benchmark (models/benches/encoder_throughput.rs runs it beside arbor). Prints one JSON line:
{"sentences_per_second": ..., "threads": ..., "torch": VERSION, "sentence_transformers": VERSION}.

    python3 scripts/bench_torch.py SENTENCES_FILE MODEL_DIR [BATCH_SIZE] [REPEATS]
"""
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402


def main():
    path, model_dir = sys.argv[1], sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    sentences = [l.rstrip("\n") for l in open(path, encoding="utf-8")]
    model = SentenceTransformer(model_dir, device="cpu")
    model.encode(sentences[:batch], batch_size=batch)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        model.encode(sentences, batch_size=batch)
        best = min(best, time.perf_counter() - start)
    print(json.dumps({
        "sentences_per_second": len(sentences) / best,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }))


if __name__ == "__main__":
    main()
