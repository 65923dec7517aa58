#!/usr/bin/env python3
"""An `arbor export` folder under sentence-transformers (issue 43): the vectors SentenceTransformer(DIR)
gives against arbor's own (`arbor embed --model DIR`) for the first N sentences of the committed fixture,
read as passages (`encode_document`, the folder's document prompt) and as queries (`encode_query` against
`arbor embed --queries`).

    python3 scripts/check_export.py DIR [N]        (N: 100 sentences by default)

ARBOR: the arbor binary (default target/release/arbor). PYTHON with sentence-transformers installed runs
it (`pip install sentence-transformers`). Prints the versions, the lowest and the mean cosine, and
`export matches` or `export differs` last; exits 1 when the lowest cosine is below 0.9999.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "experiments", "fixtures", "squad-mini", "documents.jsonl")


def sentences(n):
    out = []
    with open(FIXTURE) as f:
        for line in f:
            for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]):
                if s.strip():
                    out.append(s.strip())
                if len(out) == n:
                    return out
    return out


def main():
    folder = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    texts = sentences(n)
    model = SentenceTransformer(folder, device="cpu")
    arbor = os.environ.get("ARBOR", "target/release/arbor")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(texts) + "\n")
    cos = []
    try:
        for encode, flag in ((model.encode_document, []), (model.encode_query, ["--queries"])):
            theirs = encode(texts, batch_size=32, convert_to_numpy=True).astype(np.float64)
            cmd = [arbor, "embed", "--input", f.name, "--model", folder] + flag
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            ours = np.array([json.loads(line)["embedding"] for line in out.splitlines() if line.strip()], dtype=np.float64)
            cos.append((ours * theirs).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1)))
    finally:
        os.unlink(f.name)
    cos = np.concatenate(cos)
    print(f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}; {len(texts)} sentences")
    print(f"modules: {[type(m).__name__ for m in model]}; prompts: {model.prompts}")
    print(f"cosine of arbor's vector to sentence-transformers': lowest {cos.min():.6f}, mean {cos.mean():.6f}")
    ok = cos.min() >= 0.9999
    print("export matches" if ok else "export differs")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
