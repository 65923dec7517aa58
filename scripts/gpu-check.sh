#!/usr/bin/env bash
# The GPU path, run (issue 44): a GPU build of arbor checked against a CPU build on one machine.
#
#   scripts/gpu-check.sh [OUT]        (default OUT: runs/gpu-check)
#
# ARBOR_GPU: the build under test (default target/release/arbor: on a machine without a GPU the script
# checks the CPU build against itself, which is how it is tested here); ARBOR_CPU: the reference build
# (default target/release/arbor); ARBOR_MODEL: an encoder folder (config.json, model.safetensors,
# tokenizer.json) to read instead of all-MiniLM-L6-v2 fetched into $ARBOR_HOME (the GPU machine has no
# network); ARBOR_CHECK_TIMEOUT: seconds any one run may take (default 600); ARBOR_CHECKS: which checks
# to run (default "1 2 3 4 5 6 7 8"). The checks, cheapest first:
#   1. the encoder: `arbor embed` over the fixture's sentences, sentences a second, and the cosine of each
#      GPU vector to the CPU's (the lowest printed);
#   2. the fine-tuning step on the fixture's fixed batches (`arbor bench-step`,
#      experiments/bench-step-fixture.ron), each build and PyTorch (where python3 has torch and
#      transformers; on the GPU there, in float32 and with TF32 matrix products, as burn-cuda's matmul
#      rounds float32 inputs to TF32 on tensor cores): ms a step, TFLOP/s, and the model FLOPs utilisation
#      against the chip's peak (nvidia-smi's name: H100 / H200, 67 TFLOP/s FP32, 495 TF32, dense);
#   3. the same on scripts/bench_step.sh's batches (experiments/bench-step-legalbench.ron), the GPU build
#      and PyTorch, where ARBOR_DATA holds legalbench-rag-mini;
#   4. the quickstart (experiments/quickstart.ron) trained and evaluated: every method's IE within 0.1 of
#      the CPU build's and every query's ranking the same (scripts/compare_runs.py); then each build scores
#      the other's trained models (`evaluate --from`), every row's IE in a table (the learned head weights
#      of one build on the other's attention);
#   5. (run before 4) pooling and prompts: `arbor embed` of the tiny CLS fixture's sentences
#      (models/tests/fixtures/tiny-bert-cls) as queries and as passages under CLS, last-token and mean
#      pooling, each build against sentence-transformers' vectors in its expected.json;
#   6. (run before 4; issue 65) the field's large batch, where ARBOR_DATA holds squad-long
#      (experiments/bench-step-pairs-squad.ron: 256 questions x 256-piece passages with a mined negative
#      each, GradCache chunks of 64): the GPU build in float32 (TF32 products) and in bf16 autocast
#      (`--precision bf16`) against PyTorch in TF32 and under bf16 autocast on the same batch: ms a step,
#      peak GPU memory (nvidia-smi's, sampled every 0.1 s, above what was in use before), TFLOP/s and MFU
#      against the card's FP32, TF32 and BF16 peaks; then the encoder's inference at batch 256, `arbor
#      embed` against sentence-transformers on squad-long's sentences (the rate between 4,096 and 32,768
#      sentences, ARBOR_EMBED_SENTENCES, so that loading is not counted);
#   7. (run after 2; issue 65's numerics) the encoder's forward pass step by step on the first batch of
#      check 2's file: `arbor trace-forward` on each build and scripts/trace_forward.py's PyTorch side
#      (float32, and TF32 on a GPU), each against PyTorch in float32 (skipped where python3 has no torch):
#      per step the largest difference relative to the reference's magnitude, and the step where it grows most;
#   8. (run before 4; issue 65) burn-train's distributed data parallel at world size 1: the encoder's
#      fine-tuning on the Learner on device 0 and under DDP on the same seed (experiments/lent-ddp-fixture.ron),
#      by ARBOR_DDP (a CUDA build with `--features ddp`; default the GPU build), every step's loss of the
#      two trainings side by side (scripts/compare_losses.py) and both rows' IE.
#
# For a lent GPU machine (no network, at most 64 MiB carried; DEVELOPERS' device tool):
#   scripts/gpu-check.sh pack      here: builds the CUDA binary (target/cuda) and packs into .gpu/ both builds
#                                  (stripped, xz) and the encoder with its weights stored as float16 (the
#                                  float32 file is 87 MiB), and legalbench-rag-mini's contractnli documents
#                                  and questions from $ARBOR_DATA (default ../shared/data; 1 MiB), for
#                                  check 3: about 61 MiB; add /.gpu/ to .git/info/exclude
#                                  ARBOR_PACK_BUILDS: which builds (default "cpu cuda"; "cuda-ddp": the
#                                  CUDA build with `--features ddp`, target/cuda-ddp, for check 8: the three
#                                  builds and the encoder exceed 64 MiB, so it goes in a second pack of its
#                                  own, ARBOR_PACK_BUILDS=cuda-ddp ARBOR_PACK_MODEL=0, whose unpack on the
#                                  same warm machine reuses the first's encoder); ARBOR_PACK_CORPORA:
#                                  whole corpora of $ARBOR_DATA to pack besides (e.g. "squad-long" for check
#                                  6; "legalbench-rag-mini squad-long covid-qa", as one tar.xz: about 9 MiB
#                                  for those three, contractnli's files then not packed apart)
#   scripts/gpu-check.sh unpack    there: unpacks .gpu/ into /tmp/gpu-check (the weights widened back to
#                                  float32, so both builds read the same numbers) and prints the variables
#                                  (ARBOR_CPU, ARBOR_GPU, ARBOR_MODEL, ARBOR_DATA, ARBOR_DDP)
#                                  to run with, e.g. in one command, carry [".gpu"]:
#     eval "$(scripts/gpu-check.sh unpack)" && scripts/gpu-check.sh "$OUT/gpu-check"
#   scripts/gpu-check.sh train OUT FILE...
#                                  there: the GPU build trains and scores every experiment file given, all at
#                                  once (one process each, sharing the GPU and a cache in /tmp), each under
#                                  ARBOR_CHECK_TIMEOUT seconds, and packs the run folders (reports,
#                                  retrievals, each run's log and time) into OUT/runs.tar.xz, one file, as a
#                                  lent machine sends files back; a file that fails or runs out of time is
#                                  said so, the others still packed. E.g. issue 42's reruns, with
#                                  ARBOR_PACK_BUILDS=cuda ARBOR_PACK_CORPORA="legalbench-rag-mini squad-long
#                                  covid-qa" packed here. A second call within the machine's idle time finds
#                                  the cache as the first left it: a run cut short resumes (trained models,
#                                  the skeleton's checkpoints).
#   scripts/gpu-check.sh chain OUT TRAIN_FILE EVAL_FILE...
#                                  there: the GPU build trains TRAIN_FILE, then scores every EVAL_FILE with its
#                                  trained models (`evaluate --from` the run, all at once), each under
#                                  ARBOR_CHECK_TIMEOUT seconds, packed as `train` packs; e.g.
#                                  experiments/lent-finetune-legalbench.ron, then lent-legalbench-corpus.ron
#                                  and lent-covidqa.ron
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
pack)
    python=${PYTHON:-python3}
    rm -rf .gpu && mkdir -p .gpu/model
    for side in ${ARBOR_PACK_BUILDS:-cpu cuda}; do
        case $side in
        cpu) cargo build --release --bin arbor && bin=target/release/arbor ;;
        cuda | cuda-ddp)
            # Without nvcc here cudarc binds CUDA's newest API (13.4); the lent machines' toolkit is 13.0.
            CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-13000} CARGO_TARGET_DIR=target/$side cargo build --release --features "${side/-/,}" --bin arbor
            bin=target/$side/release/arbor
            ;;
        *) echo "gpu-check.sh pack: no build \"$side\" (cpu, cuda, cuda-ddp)" >&2 && exit 2 ;;
        esac
        strip -o ".gpu/arbor-$side" "$bin" && xz -9 -f ".gpu/arbor-$side"
    done
    if [ "${ARBOR_PACK_MODEL:-1}" = 1 ]; then
        model=$(ls -d "${ARBOR_HOME:-$HOME/.cache/arbor}"/models/all-MiniLM-L6-v2)
        cp "$model"/{config.json,tokenizer.json,tokenizer_config.json,special_tokens_map.json,vocab.txt,sentence_bert_config.json} .gpu/model/
        "$python" - "$model/model.safetensors" .gpu/model/model.f16.safetensors <<'PY'
import sys
from safetensors.numpy import load_file, save_file
save_file({k: v.astype("float16") for k, v in load_file(sys.argv[1]).items()}, sys.argv[2])
PY
    fi
    data=${ARBOR_DATA:-../shared/data}/legalbench-rag-mini
    if [ -n "${ARBOR_PACK_CORPORA:-}" ]; then
        # shellcheck disable=SC2086 # a list of folder names
        tar -C "${ARBOR_DATA:-../shared/data}" -cJf .gpu/data.tar.xz $ARBOR_PACK_CORPORA
    fi
    if [ -d "$data" ] && [[ " ${ARBOR_PACK_CORPORA:-} " != *" legalbench-rag-mini "* ]]; then
        mkdir -p .gpu/data/legalbench-rag-mini
        "$python" - "$data" .gpu/data/legalbench-rag-mini <<'PY'
import json, os, sys
src, dst = sys.argv[1:]
def keep(name, wanted):
    with open(os.path.join(src, name)) as f, open(os.path.join(dst, name), "w") as out:
        out.writelines(l for l in f if l.strip() and wanted(json.loads(l)))
keep("documents.jsonl", lambda d: d["id"].startswith("contractnli/"))
keep("queries.jsonl", lambda q: all(d.startswith("contractnli/") for d in q["doc_ids"]))
PY
    fi
    du -sh .gpu
    exit 0
    ;;
unpack)
    python=${PYTHON:-python3}
    dest=/tmp/gpu-check
    mkdir -p "$dest/model"
    for side in cpu cuda cuda-ddp; do # python's lzma: the lent machine may have no xz
        [ -f ".gpu/arbor-$side.xz" ] || continue
        "$python" -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" ".gpu/arbor-$side.xz" "$dest/arbor-$side"
        chmod +x "$dest/arbor-$side"
    done
    if [ -f .gpu/model/model.f16.safetensors ]; then
        cp .gpu/model/*.json .gpu/model/vocab.txt "$dest/model/"
        "$python" - .gpu/model/model.f16.safetensors "$dest/model/model.safetensors" <<'PY'
import sys
from safetensors.numpy import load_file, save_file
save_file({k: v.astype("float32") for k, v in load_file(sys.argv[1]).items()}, sys.argv[2])
PY
    fi
    [ -d .gpu/data ] && cp -r .gpu/data "$dest/"
    if [ -f .gpu/data.tar.xz ]; then
        mkdir -p "$dest/data"
        "$python" -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" .gpu/data.tar.xz "$dest/data"
    fi
    # What this unpack or an earlier one on this machine left (a second pack, e.g. the cuda-ddp build
    # alone with ARBOR_PACK_MODEL=0, reuses the first's encoder and builds).
    exports=()
    [ -f "$dest/arbor-cpu" ] && exports+=("ARBOR_CPU=$dest/arbor-cpu")
    [ -f "$dest/arbor-cuda" ] && exports+=("ARBOR_GPU=$dest/arbor-cuda")
    [ -f "$dest/arbor-cuda-ddp" ] && exports+=("ARBOR_DDP=$dest/arbor-cuda-ddp")
    [ -f "$dest/model/model.safetensors" ] && exports+=("ARBOR_MODEL=$dest/model")
    [ -d "$dest/data" ] && exports+=("ARBOR_DATA=$dest/data")
    echo "export ${exports[*]}"
    exit 0
    ;;
esac
mode=check
case "${1:-}" in train | chain) mode=$1 && shift ;; esac
out=${1:-runs/gpu-check}
cpu=${ARBOR_CPU:-target/release/arbor}
gpu=${ARBOR_GPU:-target/release/arbor}
python=${PYTHON:-python3}
limit=${ARBOR_CHECK_TIMEOUT:-600}
[ -x "$cpu" ] || [ $mode != check ] || cargo build --release --bin arbor
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
ms() { echo $(($(date +%s%N) / 1000000)); }
secs() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
bin_of() { if [ "$1" = gpu ]; then echo "$gpu"; else echo "$cpu"; fi; }
model_args=()
[ -n "${ARBOR_MODEL:-}" ] && model_args=(--model "$ARBOR_MODEL")
peak=""
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /'
    case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
        *H100* | *H200*) peak="67 495 989" ;; # dense FP32, TF32, BF16 TFLOP/s (SXM)
    esac
fi
echo "cpu build: $cpu; gpu build: $gpu; $(nproc) cpus"
# The host processor beside the card, its SIMD extensions and the CPU build's kernel path (older builds
# have no `arbor cpu`: the model name alone).
"$cpu" cpu 2> /dev/null || grep -m1 "model name" /proc/cpuinfo || true

# One experiment file through the GPU build: `run_file COMMAND FILE [ARGS...]` (train or evaluate), its log in
# the runs folder, ending with its exit status and time; returns that status.
run_file() {
    local command=$1 file=$2 name start rc=0
    shift 2
    name=$(basename "$file" .ron)
    [ "$command" = train ] || name+=".$command"
    start=$(ms)
    timeout "$limit" "$gpu" "$command" "$(experiment "$file")" --out "$out/runs" --cache /tmp/gpu-check-cache "$@" > "$out/runs/$name.log" 2>&1 || rc=$?
    echo "$name: exit $rc after $(secs $(($(ms) - start))) s" | tee -a "$out/runs/$name.log"
    return $rc
}
if [ $mode != check ]; then
    shift
    [ $# -gt 0 ] || { echo "gpu-check.sh $mode OUT FILE...: no experiment file given" >&2; exit 2; }
    [ -x "$gpu" ] || { echo "gpu-check.sh $mode: no build at $gpu (ARBOR_GPU)" >&2; exit 2; }
    mkdir -p "$out/runs"
    if [ $mode = chain ]; then
        trained=$1
        shift
        if run_file train "$trained"; then
            run=$(ls -d "$out/runs/$(sed -n 's/^ *name: "\(.*\)",$/\1/p' "$trained" | head -1)"/*/ | tail -1)
            for file in "$@"; do run_file evaluate "$file" --from "$run" & done
        fi
    else
        for file in "$@"; do run_file train "$file" & done
    fi
    wait
    tar -C "$out" -cJf "$out/runs.tar.xz" runs && rm -rf "${out:?}/runs"
    echo "gpu-check: the run folders and logs are in $out/runs.tar.xz"
    exit 0
fi
torch_device=""
"$python" -c "import torch, transformers" 2> /dev/null && torch_device=$("$python" -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')")

checks=" ${ARBOR_CHECKS:-1 2 3 4 5 6 7 8} "
if [[ $checks == *" 1 "* ]]; then
echo "== 1. the encoder, each build"
"$python" -c "
import json, re, sys
for line in open('experiments/fixtures/squad-mini/documents.jsonl'):
    for s in re.split(r'(?<=[.!?])\s+', json.loads(line)['text']):
        if s.strip(): print(s.strip())" > "$out/sentences.txt"
n=$(wc -l < "$out/sentences.txt")
for side in cpu gpu; do
    start=$(ms)
    timeout "$limit" "$(bin_of $side)" embed --input "$out/sentences.txt" "${model_args[@]}" > "$out/embed-$side.jsonl"
    took=$(($(ms) - start))
    echo "$side: $n sentences in $(secs $took) s, $((n * 1000 / took)) sentences a second (the model's load included)"
done
"$python" -c "
import json, math
def rows(p): return [json.loads(l)['embedding'] for l in open(p)]
low = min(sum(a * b for a, b in zip(x, y)) / math.sqrt(sum(a * a for a in x) * sum(b * b for b in y)) for x, y in zip(rows('$out/embed-cpu.jsonl'), rows('$out/embed-gpu.jsonl')))
print(f'lowest cosine of a gpu vector to the cpu one: {low:.6f}')
assert low > 0.9999, 'the builds embed differently'" || status=1
fi

# Runs a command ($2...) while nvidia-smi samples the GPU's used memory every 0.1 s; writes the peak above
# what was in use before it started (MiB) to the file $1 (nothing without nvidia-smi).
with_gpu_peak() {
    local file=$1 base poll rc=0
    shift
    command -v nvidia-smi > /dev/null || { "$@"; return; }
    used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
    base=$(used)
    (peak=0; while :; do m=$(used); [ "$m" -gt "$peak" ] && peak=$m && echo $((peak - base)) > "$file"; sleep 0.1; done) &
    poll=$!
    "$@" || rc=$?
    kill $poll 2> /dev/null; wait $poll 2> /dev/null || true
    return $rc
}

# The step on one experiment's fixed batches: each side named ($2...) times it (cpu, gpu: arbor's builds,
# with the arguments in bench_args; torch: PyTorch on the batches the last arbor side wrote), then one table.
bench_args=()
steps() {
    local name=$1 bench
    shift
    bench=$(experiment "$1")
    shift
    for side in "$@"; do
        case $side in
        torch | torch-tf32)
            [ -n "$torch_device" ] || continue
            [ "$side" = torch-tf32 ] && [ "$torch_device" != cuda ] && continue
            tf32=0; [ "$side" = torch-tf32 ] && tf32=1
            DEVICE=$torch_device TF32=$tf32 with_gpu_peak "$out/gpumem-$name-$side.txt" timeout "$limit" "$python" scripts/bench_torch_step.py "$out/batches-$name.json" 5 > "$out/step-$name-$side.jsonl" || status=1
            ;;
        *)
            with_gpu_peak "$out/gpumem-$name-$side.txt" timeout "$limit" "$(bin_of "$side")" bench-step "$bench" --batches "$out/batches-$name.json" --steps 5 --cache "$out/cache-$name" "${bench_args[@]}" > "$out/step-$name-$side.jsonl" || status=1
            ;;
        esac
    done
    "$python" - "$out" "$name" "$peak" <<'PY'
import json, os, sys
out, name, peak = sys.argv[1], sys.argv[2], [float(p) for p in sys.argv[3].split()]
def lines(side):
    path = os.path.join(out, f"step-{name}-{side}.jsonl")
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
# PyTorch's step is the same batch: the same model FLOPs as arbor's.
gflop_of = {r["case"]: r["gflop"] for side in ("cpu", "gpu") for r in lines(side)}
def gpu_mib(side):
    path = os.path.join(out, f"gpumem-{name}-{side}.txt")
    return open(path).read().strip() if os.path.exists(path) else "-"
print("| build | backend | case | ms a step | peak GPU MiB | TFLOP/s | MFU FP32 | MFU TF32 | MFU BF16 | first loss |")
print("|---|---|---|---|---|---|---|---|---|---|")
for side in ("cpu", "gpu", "torch", "torch-tf32"):
    for r in lines(side):
        tflops = gflop_of[r["case"]] / r["median_ms"]
        on_gpu = side == "gpu" or r.get("device") == "cuda"
        mfu = [f"{100 * tflops / p:.1f} %" for p in peak] if peak and on_gpu else ["-", "-", "-"]
        backend = r.get("backend") or f"PyTorch {r.get('torch')} ({r.get('device', 'cpu')}, {r.get('precision', 'fp32')})"
        print(f"| {side} | {backend} | {r['case']} | {r['median_ms']:.0f} | {gpu_mib(side)} | {tflops:.3f} | {' | '.join(mfu)} | {r['first_loss']:.5f} |")
PY
}

if [[ $checks == *" 2 "* ]]; then
    echo "== 2. the fine-tuning step on the fixture's fixed batches"
    steps fixture experiments/bench-step-fixture.ron cpu gpu torch torch-tf32
fi

if [[ $checks != *" 7 "* ]]; then
    :
elif [ -z "$torch_device" ]; then
    echo "== 7. skipped: $python has no torch and transformers (scripts/trace_forward.py reads the traces with them)"
else
    echo "== 7. the forward pass step by step on the fixture's first batch (scripts/trace_forward.py)"
    batches=$out/batches-fixture.json
    [ -f "$batches" ] || timeout "$limit" "$cpu" bench-step "$(experiment experiments/bench-step-fixture.ron)" --batches "$batches" --steps 1 --cache "$out/cache-fixture" > /dev/null || status=1
    traces=()
    for side in cpu gpu; do
        timeout "$limit" "$(bin_of $side)" trace-forward "$batches" --out "$out/trace-$side.safetensors" || status=1
        traces+=("$out/trace-$side.safetensors")
    done
    for precision in fp32 tf32; do
        [ $precision = tf32 ] && [ "$torch_device" != cuda ] && continue
        tf32=0; [ $precision = tf32 ] && tf32=1
        DEVICE=$torch_device TF32=$tf32 timeout "$limit" "$python" scripts/trace_forward.py torch "$batches" "$out/trace-torch-$precision.safetensors" || status=1
        traces+=("$out/trace-torch-$precision.safetensors")
    done
    # Against PyTorch in float32: the CPU build, the GPU build, PyTorch in TF32 (on a GPU).
    ref=${traces[2]}
    unset 'traces[2]'
    # The table is also written to trace-compare.txt; the traces (about 100 MB each) are removed.
    "$python" scripts/trace_forward.py compare "$ref" "${traces[@]}" > "$out/trace-compare.txt" || status=1
    cat "$out/trace-compare.txt"
    rm -f "$ref" "${traces[@]}"
fi

if [[ $checks != *" 3 "* ]]; then
    :
elif [ -d "${ARBOR_DATA:-}/legalbench-rag-mini" ]; then
    echo "== 3. the fine-tuning step on legalbench-rag-mini's batches (scripts/bench_step.sh's), the GPU build and PyTorch"
    steps legalbench experiments/bench-step-legalbench.ron gpu torch torch-tf32
else
    echo "== 3. skipped: no legalbench-rag-mini under ARBOR_DATA=${ARBOR_DATA:-}"
fi

if [[ $checks == *" 5 "* ]]; then
    echo "== 5. pooling and prompts: each build's vectors of the tiny CLS fixture against sentence-transformers'"
    fixture=models/tests/fixtures/tiny-bert-cls
    "$python" -c "import json; [print(s) for s in json.load(open('$fixture/expected.json'))['sentences']]" > "$out/pooling-sentences.txt"
    for mode in cls lasttoken mean; do
        dir=$out/pooling-$mode
        rm -rf "$dir" && cp -r "$fixture" "$dir"
        "$python" -c "import json, sys; p = sys.argv[1] + '/1_Pooling/config.json'; c = json.load(open(p)); c['pooling_mode'] = sys.argv[2]; json.dump(c, open(p, 'w'))" "$dir" "$mode"
        for side in cpu gpu; do
            for role in query document; do
                flag=(); [ $role = query ] && flag=(--queries)
                timeout "$limit" "$(bin_of $side)" embed --input "$out/pooling-sentences.txt" --model "$dir" "${flag[@]}" > "$out/pooling-$mode-$role-$side.jsonl" || status=1
            done
        done
    done
    # The CPU kernel agrees to float rounding; the GPU's products round to TF32 (about 1e-3 relative).
    "$python" - "$out" "$fixture/expected.json" <<'PY' || status=1
import json, sys
out, expected = sys.argv[1], json.load(open(sys.argv[2]))
bad = []
for side, tolerance in (("cpu", 1e-5), ("gpu", 2e-3)):
    for mode in ("cls", "lasttoken", "mean"):
        for role in ("query", "document"):
            got = [json.loads(l)["embedding"] for l in open(f"{out}/pooling-{mode}-{role}-{side}.jsonl")]
            d = max(abs(a - b) for g, w in zip(got, expected[mode][role]) for a, b in zip(g, w))
            print(f"{side} build, {mode} pooling, {role}: largest difference to sentence-transformers {d:.2e}")
            bad += [(side, mode, role)] if d >= tolerance else []
assert not bad, f"pooled or prompted otherwise than sentence-transformers: {bad}"
PY
fi

if [[ $checks != *" 6 "* ]]; then
    :
elif [ -d "${ARBOR_DATA:-}/squad-long" ]; then
    echo "== 6. the large batch: 256 questions x 256-piece passages by GradCache, float32 and bf16, the GPU build and PyTorch"
    # ARBOR_PAIRS_EXPERIMENT: another batch's experiment (a small one tries the check out on a CPU).
    pairs=${ARBOR_PAIRS_EXPERIMENT:-experiments/bench-step-pairs-squad.ron}
    bench_args=(--precision f32)
    steps pairs-f32 "$pairs" gpu torch-tf32
    bench_args=(--precision bf16)
    steps pairs-bf16 "$pairs" gpu torch
    bench_args=()
    echo "== 6b. the encoder's inference at batch 256: the GPU build against sentence-transformers"
    # ARBOR_EMBED_SENTENCES: the two counts whose difference the rate is read over.
    read -r few many <<< "${ARBOR_EMBED_SENTENCES:-4096 32768}"
    "$python" - "$ARBOR_DATA/squad-long/documents.jsonl" "$out" "$few" "$many" <<'PY'
import json, re, sys
sentences = []
for line in open(sys.argv[1]):
    sentences += [s.replace("\n", " ") for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]) if 20 <= len(s) <= 400]
sentences = (sentences * (int(sys.argv[4]) // max(len(sentences), 1) + 1))[:int(sys.argv[4])]
for n in sys.argv[3:5]:
    open(f"{sys.argv[2]}/sentences-{n}.txt", "w").write("\n".join(sentences[:int(n)]) + "\n")
PY
    took=()
    for n in $few $many; do
        start=$(ms)
        timeout "$limit" "$gpu" embed --input "$out/sentences-$n.txt" --batch-size 256 "${model_args[@]}" > /dev/null || status=1
        took+=($(($(ms) - start)))
    done
    echo "arbor (gpu build): $(((many - few) * 1000 / (took[1] - took[0] + 1))) sentences a second at batch 256 ($few in $(secs "${took[0]}") s, $many in $(secs "${took[1]}") s)"
    if [ -n "$torch_device" ]; then
        "$python" - "$out" "${ARBOR_MODEL:-sentence-transformers/all-MiniLM-L6-v2}" "$torch_device" "$few" "$many" <<'PY' || status=1
import sys, time
from sentence_transformers import SentenceTransformer
out, model, device, few, many = sys.argv[1:]
st = SentenceTransformer(model, device=device)
took = {}
for n in (few, many):
    lines = open(f"{out}/sentences-{n}.txt").read().splitlines()
    start = time.perf_counter()
    st.encode(lines, batch_size=256)
    took[n] = time.perf_counter() - start
print(f"sentence-transformers ({device}): {(int(many) - int(few)) / (took[many] - took[few]):.0f} sentences a second at batch 256 "
      f"({few} in {took[few]:.3f} s, {many} in {took[many]:.3f} s, the model loaded before)")
PY
    fi
else
    echo "== 6. skipped: no squad-long under ARBOR_DATA=${ARBOR_DATA:-}"
fi

if [[ $checks == *" 8 "* ]]; then
    echo "== 8. burn-train's DDP at world size 1 against the Learner on one device, on the same seed"
    # ARBOR_DDP: a CUDA build with `--features ddp` (default: the GPU build, which refuses the DDP row
    # unless it has the feature); ARBOR_DDP_EXPERIMENT: another file whose first two trained rows are compared.
    ddp=${ARBOR_DDP:-$gpu}
    rm -rf "${out:?}/ddp"
    start=$(ms)
    if timeout "$limit" "$ddp" train "$(experiment "${ARBOR_DDP_EXPERIMENT:-experiments/lent-ddp-fixture.ron}")" --out "$out/ddp" > "$out/ddp.log" 2>&1; then
        echo "$ddp: trained and scored in $(secs $(($(ms) - start))) s"
        "$python" scripts/compare_losses.py "$(dirname "$(ls "$out"/ddp/*/*/models.json | head -1)")" || status=1
    else
        grep -A2 '^Error' "$out/ddp.log" || tail -n 20 "$out/ddp.log" # the message, not a backtrace under RUST_BACKTRACE
        status=1
    fi
fi

[[ $checks == *" 4 "* ]] || { echo "gpu-check: checks$checks done"; exit "${status:-0}"; }
echo "== 4. the quickstart, each build"
quickstart=$(experiment experiments/quickstart.ron)
for side in cpu gpu; do
    rm -rf "${out:?}/$side"
    start=$(ms)
    timeout "$limit" "$(bin_of $side)" train "$quickstart" --out "$out/$side" > "$out/$side.log" 2>&1 || { tail -n 20 "$out/$side.log"; exit 1; }
    echo "$side: quickstart in $(secs $(($(ms) - start))) s"
done
run_of() { dirname "$(ls "$out/$1"/*/*/report.json | head -1)"; }
"$python" scripts/compare_runs.py "$(run_of cpu)" "$(run_of gpu)" 0.1 || status=1
# The models each build trained, scored by the other (issue 65: why the learned head weights' trees differ):
# the CPU build over the GPU run's models reads the GPU's weights on the CPU's attention, and the reverse.
for pair in "cpu gpu" "gpu cpu"; do
    read -r by from <<< "$pair"
    timeout "$limit" "$(bin_of "$by")" evaluate "$quickstart" --from "$(run_of "$from")" --out "$out/$by-scores-$from" > "$out/$by-scores-$from.log" 2>&1 ||
        { tail -n 20 "$out/$by-scores-$from.log"; status=1; }
done
"$python" - "$(run_of cpu)" "$(run_of gpu)" "$(run_of cpu-scores-gpu)" "$(run_of gpu-scores-cpu)" <<'PY' || status=1
import json, sys
names = ["cpu build, its models", "gpu build, its models", "cpu build, gpu models", "gpu build, cpu models"]
runs = [{m["name"]: m["metrics"]["ie_mean"] for m in json.load(open(f"{r}/report.json"))["methods"]} for r in sys.argv[1:]]
print("IE of each row, each build scoring each build's trained models:")
print("| method | " + " | ".join(names) + " |")
for method in runs[0]:
    print(f"| {method[:60]} | " + " | ".join(f"{r.get(method, float('nan')):.2f}" for r in runs) + " |")
PY

if [ "${status:-0}" -ne 0 ]; then echo "gpu-check: the builds disagree"; exit 1; fi
echo "gpu-check: the builds agree"
