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
# search at N times the corpus's units (legalbench-rag-mini's 100,000 units, REPEAT=10: a million); the
# indexing rate is the one measured above, since indexing is per document.
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
  rm -f "$searched" "$searched-wal" "$searched-shm"
  python3 - "$work/index.arbor" "$searched" "$REPEAT" <<'PY'
import shutil, sqlite3, sys
source, target, times = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copyfile(source, target)
db = sqlite3.connect(target)
db.execute("PRAGMA journal_mode=DELETE")
keys = [k for (k,) in db.execute("SELECT key FROM documents ORDER BY id")]
for copy in range(1, times):
    for key in keys:
        new = f"{key}#copy-{copy}"
        db.execute("INSERT INTO documents (key, file, digest, title, text, tokens, indexed_at) "
                   "SELECT ?, file, digest, title, text, tokens, indexed_at FROM documents WHERE key = ?", (new, key))
        doc = db.execute("SELECT id FROM documents WHERE key = ?", (new,)).fetchone()[0]
        db.execute("INSERT INTO units (doc, ord, byte_start, byte_end, char_start, char_end, header, vector) "
                   "SELECT ?, u.ord, u.byte_start, u.byte_end, u.char_start, u.char_end, u.header, u.vector "
                   "FROM units u JOIN documents d ON u.doc = d.id WHERE d.key = ?", (doc, key))
        for table, column in (("trees", "merges"), ("raptor", "tree")):
            db.execute(f"INSERT INTO {table} (doc, {column}) SELECT ?, t.{column} FROM {table} t "
                       "JOIN documents d ON t.doc = d.id WHERE d.key = ?", (doc, key))
    db.commit()
(n,) = db.execute("SELECT count(*) FROM units").fetchone()
print(f"{len(keys) * times} documents, {n} units")
PY
fi
kept() { python3 -c "import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute('SELECT value FROM meta WHERE key=?', (sys.argv[2],)).fetchone(); print(r[0] if r else '')" "$searched" "$1"; }
methods=("flat" "bm25" "hybrid" "Hybrid((depth: Some(100)))" "hierarchy")
[ -n "$(kept trees)" ] && methods+=("sproutrag")
[ -n "$(kept raptor)" ] && methods+=("raptor")
for method in "${methods[@]}"; do
  echo "== arbor query --method $method (200 questions, corpus scope, k 10)"
  timed "$arbor" query "$searched" --queries "$work/questions.txt" -k 10 --method "$method" --timings >/dev/null
done
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
