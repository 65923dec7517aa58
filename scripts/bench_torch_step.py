#!/usr/bin/env python3
"""The reference for arbor's fine-tuning step (the dense control's, arbor_trainers::dense): the same step
in PyTorch with sentence-transformers' all-MiniLM-L6-v2, timed. One step: a batch of questions and one
document's units encoded with gradients (mean pooling, L2 norm), InfoNCE at tau 0.05 over the units
(the positives and every other unit as negatives), backward, AdamW at 2e-5. `whole` encodes every unit of
the document; `window` the units that fit in STEP_TOKENS word pieces (arbor's `step_tokens`: positives,
then the units nearest the questions by the frozen vectors). Units come from an arbor index (SQLite),
so both sides encode the same texts. `window-frozen` is `window` with the embeddings and the first
FROZEN_LAYERS blocks kept at their pretrained weights (arbor's `frozen_layers`): no gradient, so PyTorch
keeps no activations for them.

    python3 scripts/bench_torch_step.py INDEX MODEL_DIR QUESTIONS_FILE [STEP_TOKENS] [STEPS] [DOC_KEY] [FROZEN_LAYERS]

DOC_KEY names the document (a key of the index; default: the one with the most units).

Prints one JSON line per mode: units and word pieces encoded, seconds per step (median of STEPS after a
warm-up step), threads.
"""
import json
import os
import sqlite3
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402


def units_of(index, key):
    db = sqlite3.connect(index)
    if key:
        doc_id, text = db.execute("SELECT id, text FROM documents WHERE key = ?", (key,)).fetchone()
    else:
        doc_id, text = db.execute("SELECT d.id, d.text FROM documents d JOIN units u ON u.doc = d.id GROUP BY d.id ORDER BY COUNT(*) DESC LIMIT 1").fetchone()
    raw = text.encode("utf-8")
    return [raw[s:e].decode("utf-8") for s, e in db.execute("SELECT byte_start, byte_end FROM units WHERE doc = ? ORDER BY ord", (doc_id,))]


def main():
    index, model_dir, questions_file = sys.argv[1], sys.argv[2], sys.argv[3]
    step_tokens = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 3
    key = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else None
    frozen_layers = int(sys.argv[7]) if len(sys.argv) > 7 else 3
    model = SentenceTransformer(model_dir, device="cpu")
    tok = model.tokenizer
    units = units_of(index, key)
    questions = [l.strip() for l in open(questions_file) if l.strip()][:32]
    with torch.no_grad():
        frozen_u = model.encode(units, batch_size=32, convert_to_tensor=True, normalize_embeddings=True)
        frozen_q = model.encode(questions, batch_size=32, convert_to_tensor=True, normalize_embeddings=True)
    # Positives: each question's nearest unit (a stand-in for the gold unit), then the window's negatives.
    nearest = (frozen_q @ frozen_u.T).max(dim=0).values
    positives = (frozen_q @ frozen_u.T).argmax(dim=1).tolist()
    lengths = [len(tok(u, truncation=True, max_length=256)["input_ids"]) for u in units]
    keep = set(positives)
    used = sum(lengths[u] for u in keep)
    for u in sorted(range(len(units)), key=lambda u: -float(nearest[u])):
        if u not in keep and used + lengths[u] <= step_tokens:
            keep.add(u)
            used += lengths[u]
    window = sorted(keep)
    encoder = model[0].auto_model
    encoder.train()
    optimizer = torch.optim.AdamW(encoder.parameters(), lr=2e-5)

    def embed(texts):
        out = []
        for i in range(0, len(texts), 32):
            batch = tok(texts[i:i + 32], padding=True, truncation=True, max_length=256, return_tensors="pt")
            hidden = encoder(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(pooled, dim=-1))
        return torch.cat(out)

    for mode, chosen in (("whole", list(range(len(units)))), ("window", window), ("window-frozen", window)):
        if mode == "window-frozen":
            for part in [encoder.embeddings, *encoder.encoder.layer[:frozen_layers]]:
                part.requires_grad_(False)
            optimizer = torch.optim.AdamW([p for p in encoder.parameters() if p.requires_grad], lr=2e-5)
        at = {u: i for i, u in enumerate(chosen)}
        target = torch.tensor([at[p] for p in positives])
        times = []
        for s in range(steps + 1):
            start = time.perf_counter()
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(embed(questions) @ embed([units[u] for u in chosen]).T / 0.05, target)
            loss.backward()
            optimizer.step()
            if s > 0:
                times.append(time.perf_counter() - start)
        print(json.dumps({"mode": mode, "units": len(chosen), "tokens": sum(lengths[u] for u in chosen), "seconds_per_step": statistics.median(times), "threads": torch.get_num_threads(),
                          "frozen_layers": frozen_layers if mode == "window-frozen" else 0}))


if __name__ == "__main__":
    main()
