#!/usr/bin/env bash
# The `arbor index` / `arbor query` benchmark on a corpus's documents (default: legalbench-rag-mini's
# whole corpus): indexing words per second and peak memory, query latency (p50 / p99) and peak memory for
# every method over the first 200 questions in corpus scope, the cost of adding one document, and PyTorch
# sentence-transformers encoding the same units (scripts/bench_torch_units.py, when Python has it).
#
#     scripts/bench_index.sh [CORPUS_DIR] [WORK_DIR]
#
# QUERIES_ONLY=1 reuses WORK_DIR/index.arbor (queries, and SproutRAG's / RAPTOR's when it keeps their
# trees); TREES=1 adds SproutRAG's trees to it first (`arbor index --trees`), RAPTOR=1 RAPTOR's (`--raptor`).
# REPEAT=N asks the questions of an index holding every document N times (WORK_DIR/index-xN.arbor: the
# stored documents, units and vectors copied under new keys by SQL, nothing encoded again), to measure
# search at N times the corpus's units (legalbench-rag-mini's 100,000 units, REPEAT=10: a million), each
# copy's vectors turned by a random rotation of its own (numpy; PYTHON names a Python that has it), and
# builds its approximate index (`arbor index --approximate on`), whose recall@10 against exact search
# (`arbor query --exact`) it prints; the indexing rate is the one measured above, since indexing is per
# document.
set -euo pipefail
corpus=${1:-${ARBOR_DATA:?set ARBOR_DATA or name the corpus folder}/legalbench-rag-mini}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/.." && pwd)
arbor="$here/target/release/arbor"
timed() { /usr/bin/time -f "peak memory %M KB, wall %e s" "$@"; }
cargo build --release --bin arbor --manifest-path "$here/Cargo.toml"
mkdir -p "$work/docs"
ln -sf "$(cd "$corpus" && pwd)/documents.jsonl" "$work/docs/documents.jsonl"
if [ -z "${QUERIES_ONLY:-}" ]; then
  rm -f "$work/index.arbor" "$work/index.arbor-wal" "$work/index.arbor-shm" "$work/docs/added.txt"
  echo "== arbor index ($corpus)"
  timed "$arbor" index "$work/docs" --into "$work/index.arbor"
fi
if [ -n "${TREES:-}" ]; then
  echo "== arbor index --trees (SproutRAG's trees of the stored documents)"
  timed "$arbor" index "$work/docs" --into "$work/index.arbor" --trees
fi
if [ -n "${RAPTOR:-}" ]; then
  echo "== arbor index --raptor (RAPTOR's trees of the stored documents)"
  timed "$arbor" index "$work/docs" --into "$work/index.arbor" --raptor
fi
python3 - "$corpus/queries.jsonl" "$work/questions.txt" <<'PY'
import json, sys
qs = [json.loads(l)["text"].replace("\n", " ") for l in open(sys.argv[1]) if l.strip()][:200]
open(sys.argv[2], "w").write("\n".join(qs) + "\n")
PY
searched="$work/index.arbor"
if [ -n "${REPEAT:-}" ]; then
  searched="$work/index-x$REPEAT.arbor"
  echo "== every document of the index $REPEAT times: $searched"
  rm -f "$searched" "$searched-wal" "$searched-shm" "$searched.hnsw"
  "${PYTHON:-python3}" - "$work/index.arbor" "$searched" "$REPEAT" <<'PY'
import shutil, sqlite3, sys
try:
    import numpy as np
except ImportError:
    sys.exit("REPEAT needs numpy (pip install numpy, or PYTHON=a Python that has it)")
source, target, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copyfile(source, target)
db = sqlite3.connect(target)
db.execute("PRAGMA journal_mode=DELETE")
(dim,) = db.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
dim = int(dim)
keys = [k for (k,) in db.execute("SELECT key FROM documents ORDER BY id")]
for copy in range(1, times):
    # Each copy's vectors turned by a rotation of its own: the copies keep the corpus's geometry (every
    # score within a copy as it was) but are not duplicates, which an approximate index would find
    # together and exact search would rank as ties.
    rotation, _ = np.linalg.qr(np.random.default_rng(copy).standard_normal((dim, dim)))
    rotation = rotation.astype(np.float32)
    for key in keys:
        new = f"{key}#copy-{copy}"
        db.execute("INSERT INTO documents (key, file, digest, title, text, tokens, indexed_at) "
                   "SELECT ?, file, digest, title, text, tokens, indexed_at FROM documents WHERE key = ?", (new, key))
        doc = db.execute("SELECT id FROM documents WHERE key = ?", (new,)).fetchone()[0]
        rows = db.execute("SELECT u.ord, u.byte_start, u.byte_end, u.char_start, u.char_end, u.header, u.vector "
                          "FROM units u JOIN documents d ON u.doc = d.id WHERE d.key = ? ORDER BY u.ord", (key,)).fetchall()
        if rows:
            vectors = np.frombuffer(b"".join(r[6] for r in rows), dtype="<f4").reshape(len(rows), dim) @ rotation
            db.executemany("INSERT INTO units (doc, ord, byte_start, byte_end, char_start, char_end, header, vector) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           [(doc, *r[:6], v.astype("<f4").tobytes()) for r, v in zip(rows, vectors)])
    db.commit()
(n,) = db.execute("SELECT count(*) FROM units").fetchone()
print(f"{len(keys) * times} documents, {n} units")
PY
  echo "== arbor index --approximate on (the HNSW graph of every unit)"
  timed "$arbor" index --into "$searched" --approximate on
  du -h "$searched" "$searched.hnsw"
fi
kept() { python3 -c "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute('SELECT value FROM meta WHERE key=?', (sys.argv[2],)).fetchone(); print(r[0] if r else '')" "$searched" "$1"; }
methods=("flat" "bm25" "hybrid" "Hybrid((depth: Some(100)))" "hierarchy")
# At a million units the default hybrid (every unit's two ranks fused) takes over 7 s a question: not asked.
[ -n "${REPEAT:-}" ] && methods=("flat" "bm25" "Hybrid((depth: Some(100)))" "hierarchy")
[ -n "$(kept trees)" ] && methods+=("sproutrag")
[ -n "$(kept raptor)" ] && methods+=("raptor")
for method in "${methods[@]}"; do
  echo "== arbor query --method $method (200 questions, corpus scope, k 10)"
  timed "$arbor" query "$searched" --queries "$work/questions.txt" -k 10 --method "$method" --timings >/dev/null
done
if [ -e "$searched.hnsw" ]; then
  echo "== flat, exact search (--exact) against the approximate index: recall@10"
  timed "$arbor" query "$searched" --queries "$work/questions.txt" -k 10 --json --exact --timings >"$work/exact.jsonl"
  "$arbor" query "$searched" --queries "$work/questions.txt" -k 10 --json >"$work/approximate.jsonl"
  python3 - "$work/exact.jsonl" "$work/approximate.jsonl" <<'PY'
import json, sys
read = lambda f: [[(h["document"], h["spans"][0]["bytes"][0]) for h in json.loads(l)["results"]] for l in open(f)]
exact, approximate = read(sys.argv[1]), read(sys.argv[2])
recall = [len(set(e) & set(a)) / len(e) for e, a in zip(exact, approximate) if e]
print(f"recall@10 of the approximate index against exact search: {sum(recall) / len(recall):.4f} "
      f"over {len(recall)} questions (all 10 found for {sum(r == 1 for r in recall)})")
PY
fi
if [ -z "${QUERIES_ONLY:-}" ]; then
  echo "== adding one document to the full index"
  python3 - "$corpus/documents.jsonl" "$work/docs/added.txt" <<'PY'
import json, sys
doc = json.loads(open(sys.argv[1]).readline())
open(sys.argv[2], "w").write("An added copy.\n\n" + doc["text"])
PY
  timed "$arbor" index "$work/docs" --into "$work/index.arbor"
  model=${ARBOR_HOME:-$HOME/.cache/arbor}/models/all-MiniLM-L6-v2
  if python3 -c "import sentence_transformers" 2>/dev/null; then
    echo "== PyTorch sentence-transformers on the same units"
    python3 "$here/scripts/bench_torch_units.py" "$work/index.arbor" "$model"
  else
    echo "== PyTorch: sentence-transformers is not installed (pip install sentence-transformers), skipped"
  fi
fi
