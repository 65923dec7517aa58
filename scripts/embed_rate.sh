#!/usr/bin/env bash
# `arbor embed`'s rate on each kernel path of this processor (issue 64): the first 2,048 sentences of
# squad-long's documents (20-400 characters), batch 32, the rate between 512 and 2,048 sentences so that
# loading the model is not counted; RUNS runs of each path, then the two paths' vectors of 512 sentences
# compared. Paths: `auto` (the processor's best: gemm's AVX-512 microkernels where it has avx512f) and
# `avx2` (ARBOR_KERNELS=avx2: AVX2 + FMA; the same path as auto on a processor without AVX-512).
#
#   ARBOR_DATA=../shared/data scripts/embed_rate.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2}
data=${ARBOR_DATA:?set ARBOR_DATA to the folder holding squad-long}
cargo build --release --bin arbor
target=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
arbor="$target/release/arbor"
"$arbor" cpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$data/squad-long/documents.jsonl" "$tmp" <<'PY'
import json, re, sys
sentences = []
for line in open(sys.argv[1]):
    for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]):
        if 20 <= len(s) <= 400:
            sentences.append(s.replace("\n", " "))
    if len(sentences) >= 2048:
        break
for n in (512, 2048):
    open(f"{sys.argv[2]}/sent{n}.txt", "w").write("\n".join(sentences[:n]) + "\n")
PY
seconds() { /usr/bin/time -f %e env ARBOR_KERNELS="$1" "$arbor" embed --input "$tmp/sent$2.txt" --batch-size 32 2>&1 >/dev/null | tail -1; }
for run in $(seq "$runs"); do
    for path in auto avx2; do
        a=$(seconds "$path" 512)
        b=$(seconds "$path" 2048)
        python3 -c "print('run $run, $path: %.1f sentences/s (512 in $a s, 2048 in $b s)' % (1536 / ($b - $a)))"
    done
done
ARBOR_KERNELS=auto "$arbor" embed --input "$tmp/sent512.txt" > "$tmp/auto.jsonl"
ARBOR_KERNELS=avx2 "$arbor" embed --input "$tmp/sent512.txt" > "$tmp/avx2.jsonl"
python3 - "$tmp" <<'PY'
import json, math, sys
a, b = ([json.loads(l)["embedding"] for l in open(f"{sys.argv[1]}/{p}.jsonl")] for p in ("auto", "avx2"))
cos = [sum(x * y for x, y in zip(u, v)) / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v)) for u, v in zip(a, b)]
print("vectors, auto against avx2, %d sentences: min cos %.12f, max abs diff %.2e" % (len(cos), min(cos), max(abs(x - y) for u, v in zip(a, b) for x, y in zip(u, v))))
PY
