#!/usr/bin/env bash
# arbor's fine-tuning step against PyTorch's on exactly the same batches, 1 and 2 threads, one table.
#
#   PYTHON=/path/to/python ARBOR_DATA=../shared/data scripts/bench_step.sh [EXPERIMENT] [STEPS]
#
# PYTHON: an interpreter with torch and transformers (sentence-transformers brings both); EXPERIMENT: the
# file whose first fine-tuning Dense method sets the step (default experiments/bench-step-legalbench.ron);
# STEPS: timed steps a case after one warm-up (default 5). `arbor bench-step` writes the batches (token ids,
# frozen vectors, the loss's rows, the optimizer) to $BENCH_OUT/batches.json and times arbor's step on
# them; scripts/bench_torch_step.py times PyTorch's on the same file. The last line is the headline:
# `step ratio: X`, PyTorch's ms over arbor's for the windowed step on the median document at 2 threads
# (above 1: arbor is faster).
set -euo pipefail
cd "$(dirname "$0")/.."
experiment=${1:-experiments/bench-step-legalbench.ron}
steps=${2:-5}
python=${PYTHON:-python3}
out=${BENCH_OUT:-runs/bench-step}
mkdir -p "$out"
"$python" -c "import torch, transformers" || { echo "PYTHON=$python has no torch or transformers: pip install sentence-transformers, then PYTHON=/that/python" >&2; exit 1; }
cargo build --release --bin arbor
# The binary cargo just built, wherever CARGO_TARGET_DIR (or a config) puts the build.
target=$(cargo metadata --format-version 1 --no-deps | "$python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
arbor="$target/release/arbor"
# Every speed figure names its processor and the SIMD the kernels may use.
"$arbor" cpu >&2
for t in 1 2; do
    echo "== $t thread(s): arbor" >&2
    RAYON_NUM_THREADS=$t MATMUL_NUM_THREADS=$t "$arbor" bench-step "$experiment" --batches "$out/batches.json" --steps "$steps" --cache "$out/cache" > "$out/arbor-$t.jsonl"
    echo "== $t thread(s): PyTorch" >&2
    THREADS=$t OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t "$python" scripts/bench_torch_step.py "$out/batches.json" "$steps" > "$out/torch-$t.jsonl"
done
"$python" scripts/step_table.py "$out"
