#!/usr/bin/env bash
# The GPU path, run (issue 44): a GPU build of arbor checked against a CPU build on one machine.
#
#   scripts/gpu-check.sh [OUT]        (default OUT: runs/gpu-check)
#
# ARBOR_GPU: the build under test (default target/release/arbor: on a machine without a GPU the script
# checks the CPU build against itself, which is how it is tested here); ARBOR_CPU: the reference build
# (default target/release/arbor); ARBOR_MODEL: an encoder folder (config.json, model.safetensors,
# tokenizer.json) to read instead of all-MiniLM-L6-v2 fetched into $ARBOR_HOME (the GPU machine has no
# network). Three checks, each build in turn:
#   1. the quickstart (experiments/quickstart.ron) trained and evaluated: every method's IE within 0.1 of
#      the CPU build's and every query's ranking the same (scripts/compare_runs.py);
#   2. the encoder: `arbor embed` over the fixture's sentences, sentences a second, and the cosine of each
#      GPU vector to the CPU's (the lowest printed);
#   3. the fine-tuning step on the fixture's fixed batches (`arbor bench-step`,
#      experiments/bench-step-fixture.ron): ms a step, TFLOP/s, and the model FLOPs utilisation against
#      the chip's peak (nvidia-smi's name: H100 / H200, 67 TFLOP/s FP32, 495 TF32 on tensor cores, dense);
#      PyTorch's step on the same batches where python3 has torch and transformers (on the GPU there).
#
# For a lent GPU machine (no network, at most 64 MiB carried; DEVELOPERS' device tool):
#   scripts/gpu-check.sh pack      here: builds the CUDA binary (target/cuda) and packs into .gpu/ both builds
#                                  (stripped, xz) and the encoder with its weights stored as float16 (the
#                                  float32 file is 87 MiB): about 55 MiB; add /.gpu/ to .git/info/exclude
#   scripts/gpu-check.sh unpack    there: unpacks .gpu/ into /tmp/gpu-check (the weights widened back to
#                                  float32, so both builds read the same numbers) and prints the variables
#                                  to run with, e.g. in one command, carry [".gpu"]:
#     eval "$(scripts/gpu-check.sh unpack)" && scripts/gpu-check.sh "$OUT/gpu-check"
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
pack)
    python=${PYTHON:-python3}
    cargo build --release --bin arbor
    CARGO_TARGET_DIR=target/cuda cargo build --release --features cuda --bin arbor
    rm -rf .gpu && mkdir -p .gpu/model
    for side in cpu cuda; do
        bin=target/release/arbor; [ $side = cuda ] && bin=target/cuda/release/arbor
        strip -o ".gpu/arbor-$side" "$bin" && xz -9 -f ".gpu/arbor-$side"
    done
    model=$(ls -d "${ARBOR_HOME:-$HOME/.cache/arbor}"/models/all-MiniLM-L6-v2)
    cp "$model"/{config.json,tokenizer.json,tokenizer_config.json,special_tokens_map.json,vocab.txt,sentence_bert_config.json} .gpu/model/
    "$python" - "$model/model.safetensors" .gpu/model/model.f16.safetensors <<'PY'
import sys
from safetensors.numpy import load_file, save_file
save_file({k: v.astype("float16") for k, v in load_file(sys.argv[1]).items()}, sys.argv[2])
PY
    du -sh .gpu
    exit 0
    ;;
unpack)
    python=${PYTHON:-python3}
    dest=/tmp/gpu-check
    mkdir -p "$dest/model"
    for side in cpu cuda; do xz -dc ".gpu/arbor-$side.xz" > "$dest/arbor-$side" && chmod +x "$dest/arbor-$side"; done
    cp .gpu/model/*.json .gpu/model/vocab.txt "$dest/model/"
    "$python" - .gpu/model/model.f16.safetensors "$dest/model/model.safetensors" <<'PY'
import sys
from safetensors.numpy import load_file, save_file
save_file({k: v.astype("float32") for k, v in load_file(sys.argv[1]).items()}, sys.argv[2])
PY
    echo "export ARBOR_CPU=$dest/arbor-cpu ARBOR_GPU=$dest/arbor-cuda ARBOR_MODEL=$dest/model"
    exit 0
    ;;
esac
out=${1:-runs/gpu-check}
cpu=${ARBOR_CPU:-target/release/arbor}
gpu=${ARBOR_GPU:-target/release/arbor}
python=${PYTHON:-python3}
[ -x "$cpu" ] || cargo build --release --bin arbor
mkdir -p "$out"
experiment() { # experiment file with the encoder folder swapped in, when one is given
    if [ -n "${ARBOR_MODEL:-}" ]; then
        sed "s|model: AllMiniLmL6V2|model: Dir(\"$ARBOR_MODEL\")|" "$1" > "$out/$(basename "$1")"
        grep -q "Dir(" "$out/$(basename "$1")" || sed -i "s|^    methods:|    encoder: (model: Dir(\"$ARBOR_MODEL\")),\n    methods:|" "$out/$(basename "$1")"
        echo "$out/$(basename "$1")"
    else
        echo "$1"
    fi
}
model_args=()
[ -n "${ARBOR_MODEL:-}" ] && model_args=(--model "$ARBOR_MODEL")
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /'
echo "cpu build: $cpu; gpu build: $gpu"

echo "== 1. the quickstart, each build"
quickstart=$(experiment experiments/quickstart.ron)
for side in cpu gpu; do
    bin=$cpu; [ $side = gpu ] && bin=$gpu
    rm -rf "${out:?}/$side"
    start=$(date +%s.%N)
    "$bin" train "$quickstart" --out "$out/$side" > "$out/$side.log" 2>&1 || { tail -n 20 "$out/$side.log"; exit 1; }
    echo "$side: quickstart in $(echo "$(date +%s.%N) - $start" | bc) s"
done
run_of() { dirname "$(ls "$out/$1"/*/*/report.json | head -1)"; }
"$python" scripts/compare_runs.py "$(run_of cpu)" "$(run_of gpu)" 0.1 || status=1

echo "== 2. the encoder, each build"
"$python" -c "
import json, re, sys
for line in open('experiments/fixtures/squad-mini/documents.jsonl'):
    for s in re.split(r'(?<=[.!?])\s+', json.loads(line)['text']):
        if s.strip(): print(s.strip())" > "$out/sentences.txt"
n=$(wc -l < "$out/sentences.txt")
for side in cpu gpu; do
    bin=$cpu; [ $side = gpu ] && bin=$gpu
    start=$(date +%s.%N)
    "$bin" embed --input "$out/sentences.txt" "${model_args[@]}" > "$out/embed-$side.jsonl"
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    echo "$side: $n sentences in $secs s, $(echo "$n / $secs" | bc) sentences a second (the model's load included)"
done
"$python" -c "
import json, math
def rows(p): return [json.loads(l)['embedding'] for l in open(p)]
low = min(sum(a * b for a, b in zip(x, y)) / math.sqrt(sum(a * a for a in x) * sum(b * b for b in y)) for x, y in zip(rows('$out/embed-cpu.jsonl'), rows('$out/embed-gpu.jsonl')))
print(f'lowest cosine of a gpu vector to the cpu one: {low:.6f}')
assert low > 0.9999, 'the builds embed differently'" || status=1

echo "== 3. the fine-tuning step on fixed batches, each build"
bench=$(experiment experiments/bench-step-fixture.ron)
for side in cpu gpu; do
    bin=$cpu; [ $side = gpu ] && bin=$gpu
    "$bin" bench-step "$bench" --batches "$out/batches.json" --steps 5 --cache "$out/cache" > "$out/step-$side.jsonl"
done
if "$python" -c "import torch, transformers" 2> /dev/null; then
    DEVICE=$("$python" -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')") \
        "$python" scripts/bench_torch_step.py "$out/batches.json" 5 > "$out/step-torch.jsonl"
fi
peak=""
if command -v nvidia-smi > /dev/null; then
    case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
        *H100* | *H200*) peak="67 495" ;;
    esac
fi
"$python" - "$out" "$peak" <<'PY'
import json, os, sys
out, peak = sys.argv[1], [float(p) for p in sys.argv[2].split()]
print("| build | backend | case | ms a step | TFLOP/s | MFU FP32 | MFU TF32 | first loss |")
print("|---|---|---|---|---|---|---|---|")
gflop_of = {r["case"]: r["gflop"] for r in map(json.loads, open(os.path.join(out, "step-cpu.jsonl")))}
for side in ("cpu", "gpu", "torch"):
    path = os.path.join(out, f"step-{side}.jsonl")
    if not os.path.exists(path):
        continue
    for r in map(json.loads, open(path)):
        # PyTorch's step is the same batch: the same model FLOPs.
        tflops = gflop_of[r["case"]] / r["median_ms"]
        mfu = ["-", "-"] if not peak or side == "cpu" else [f"{100 * tflops / p:.1f} %" for p in peak]
        backend = r.get("backend") or f"PyTorch {r.get('torch')} ({r.get('device', 'cpu')})"
        print(f"| {side} | {backend} | {r['case']} | {r['median_ms']:.0f} | {tflops:.3f} | {mfu[0]} | {mfu[1]} | {r['first_loss']:.5f} |")
PY
if [ "${status:-0}" -ne 0 ]; then echo "gpu-check: the builds disagree"; exit 1; fi
echo "gpu-check: the builds agree"
