#!/usr/bin/env python3
"""Regenerates models/tests/fixtures/tiny-bert-cls/: a small randomly initialised BERT saved as a
sentence-transformers folder that pools by CLS and carries query and document prompts, with
sentence-transformers' own vectors for it (issue 43: pooling and prompts as encoder settings).

No pretrained weights but all-MiniLM-L6-v2 can be fetched where arbor is built, so the model is made here:
a WordPiece vocabulary learnt from the sentences below, BertModel(hidden 32, 2 layers, 4 heads) drawn by
transformers from a fixed seed, saved with save_pretrained; the folder's modules.json, 1_Pooling (CLS)
and config_sentence_transformers.json (prompts "query" and "document", no default prompt) as
sentence-transformers writes them. expected.json holds, for every sentence, sentence-transformers'
`encode_query` and `encode_document` vectors (each role's prompt prepended) under CLS pooling and, with
the Pooling module swapped, under last-token and mean pooling, and plain `encode` (no prompt) under CLS.

    python3 -m pip install sentence-transformers
    python3 scripts/make_pooling_fixture.py [OUT_DIR]
"""
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer, models  # noqa: E402
from tokenizers import BertWordPieceTokenizer  # noqa: E402
from transformers import BertConfig, BertModel, BertTokenizerFast  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "models/tests/fixtures/tiny-bert-cls"
PROMPTS = {"query": "query: ", "document": "passage: "}
SENTENCES = [
    "What is the notice period for terminating the agreement?",
    "Either party may terminate this Agreement on thirty days' written notice.",
    "The Receiving Party shall keep the Confidential Information secret.",
    "Hi",
    "a",
    "Revenue grew 12% to $4.2 billion in fiscal 2022, driven by services.",
    "Super Bowl 50 was an American football game played on February 7, 2016.",
    "The virus binds to the ACE2 receptor on the surface of host cells.",
    "Which clause governs the return of documents after termination?",
    "Ünïcödé tëxt, emoji-free, with accents and a hyphen-ated word.",
]


def main():
    torch.manual_seed(7)
    work = tempfile.mkdtemp()
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(SENTENCES * 4 + list(PROMPTS.values()), vocab_size=300, min_frequency=1)
    wp.save(os.path.join(work, "tokenizer.json"))
    tokenizer = BertTokenizerFast(tokenizer_file=os.path.join(work, "tokenizer.json"), do_lower_case=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_act="gelu",
    )
    bert = BertModel(config).eval()
    shutil.rmtree(OUT, ignore_errors=True)
    model_dir = os.path.join(work, "bert")
    bert.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)
    transformer = models.Transformer(model_dir, max_seq_length=64)
    expected = {"sentences": SENTENCES, "prompts": PROMPTS}
    for mode in ("lasttoken", "mean", "cls"):  # cls last: the folder saved is the CLS one
        pooling = models.Pooling(config.hidden_size, pooling_mode=mode)
        model = SentenceTransformer(modules=[transformer, pooling, models.Normalize()], prompts=PROMPTS, device="cpu")
        expected[mode] = {
            "query": model.encode_query(SENTENCES, convert_to_numpy=True).tolist(),
            "document": model.encode_document(SENTENCES, convert_to_numpy=True).tolist(),
        }
    expected["cls"]["none"] = model.encode(SENTENCES, convert_to_numpy=True).tolist()
    model.save(OUT)
    os.remove(os.path.join(OUT, "README.md"))  # the model card sentence-transformers writes
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f)
    shutil.rmtree(work)
    print(f"wrote {OUT}: {sorted(os.listdir(OUT))}")


if __name__ == "__main__":
    main()
