#!/usr/bin/env bash
# The `arbor index` / `arbor query` benchmark on a corpus's documents (default: legalbench-rag-mini's
# whole corpus): indexing words per second and peak memory, query latency (p50 / p99) and peak memory for
# flat and BM25 over the first 200 questions, and PyTorch sentence-transformers encoding the same units
# (scripts/bench_torch_units.py, when Python has it). Prints what each step reports.
#
#     scripts/bench_index.sh [CORPUS_DIR] [WORK_DIR]
set -euo pipefail
corpus=${1:-${ARBOR_DATA:?set ARBOR_DATA or name the corpus folder}/legalbench-rag-mini}
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/.." && pwd)
arbor="$here/target/release/arbor"
cargo build --release --bin arbor --manifest-path "$here/Cargo.toml"
mkdir -p "$work/docs"
ln -sf "$(cd "$corpus" && pwd)/documents.jsonl" "$work/docs/documents.jsonl"
rm -f "$work/index.arbor" "$work/index.arbor-wal" "$work/index.arbor-shm"
echo "== arbor index ($corpus)"
/usr/bin/time -f "peak memory %M KB, wall %e s" "$arbor" index "$work/docs" --into "$work/index.arbor"
python3 - "$corpus/queries.jsonl" "$work/questions.txt" <<'PY'
import json, sys
qs = [json.loads(l)["text"].replace("\n", " ") for l in open(sys.argv[1]) if l.strip()][:200]
open(sys.argv[2], "w").write("\n".join(qs) + "\n")
PY
for method in flat bm25 hybrid; do
  echo "== arbor query --method $method (200 questions, corpus scope, k 10)"
  /usr/bin/time -f "peak memory %M KB, wall %e s" "$arbor" query "$work/index.arbor" --queries "$work/questions.txt" -k 10 --method $method --timings >/dev/null
done
echo "== adding one document to the full index"
python3 - "$corpus/documents.jsonl" "$work/docs/added.txt" <<'PY'
import json, sys
doc = json.loads(open(sys.argv[1]).readline())
open(sys.argv[2], "w").write("An added copy.\n\n" + doc["text"])
PY
/usr/bin/time -f "peak memory %M KB, wall %e s" "$arbor" index "$work/docs" --into "$work/index.arbor"
model=${ARBOR_HOME:-$HOME/.cache/arbor}/models/all-MiniLM-L6-v2
if python3 -c "import sentence_transformers" 2>/dev/null; then
  echo "== PyTorch sentence-transformers on the same units"
  python3 "$here/scripts/bench_torch_units.py" "$work/index.arbor" "$model"
else
  echo "== PyTorch: sentence-transformers is not installed (pip install sentence-transformers), skipped"
fi
