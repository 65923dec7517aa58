#!/usr/bin/env bash
# The GPU code path without a GPU: Burn's wgpu backend (CubeCL, the compiler burn-cuda uses too) on Mesa's
# lavapipe, a Vulkan driver that runs on the CPU. Installs lavapipe when no Vulkan driver is there (Debian /
# Ubuntu: mesa-vulkan-drivers and the Vulkan loader), then runs on it
#   1. the models crate's tests (unit and integration: parity with sentence-transformers included) and the
#      losses' and trainers' unit tests, every one that builds its tensors on `DefaultBackend`, which
#      `--features wgpu` makes burn-wgpu, and
#   2. the quickstart experiment, whose trained SproutRAG (the SLLM over the encoder's unit vectors) trains
#      and is evaluated on the wgpu device.
# Usage: scripts/wgpu-lavapipe.sh [tests|quickstart|all]   (default: all)
# Slow by design: lavapipe is a correctness path, not a fast one; the CPU default stays ndarray.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"

icd=$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -1 || true)
if [[ -z "$icd" ]]; then
    echo "== installing Mesa's lavapipe (mesa-vulkan-drivers) and the Vulkan loader"
    packages=(mesa-vulkan-drivers libvulkan1)
    if [[ $(id -u) -eq 0 ]]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
    elif command -v sudo >/dev/null; then
        sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
    else
        echo "no lavapipe and no way to install it: run 'apt-get install ${packages[*]}' as root" >&2
        exit 1
    fi
    icd=$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json | head -1)
fi
# Only lavapipe, even where another Vulkan driver is installed.
export VK_ICD_FILENAMES="$icd"
echo "== Vulkan driver: $icd"

if [[ "$what" == tests || "$what" == all ]]; then
    echo "== backend-generic tests on burn-wgpu (lavapipe)"
    start=$(date +%s)
    # Skipped: the two-device tests (the compressor's, the dense control's, SproutRAG's). `schedule.devices`
    # names devices of the backend's first kind, which for wgpu is a discrete GPU; lavapipe is a CPU
    # adapter, so device 0 does not exist here (cubecl-wgpu: "No Discrete GPU device found").
    cargo test --release --features arbor-models/wgpu -p arbor-models
    cargo test --release --features arbor-models/wgpu -p arbor-losses -p arbor-trainers --lib -- \
        --skip two_devices
    echo "== tests took $(( $(date +%s) - start )) s (build included)"
fi
if [[ "$what" == quickstart || "$what" == all ]]; then
    echo "== the quickstart experiment on burn-wgpu (lavapipe)"
    start=$(date +%s)
    out=$(mktemp -d)
    cargo run --release --features wgpu --bin train -- experiments/quickstart.ron --out "$out" --cache "$out/cache"
    echo "== quickstart took $(( $(date +%s) - start )) s (build included); run folder in $out"
fi
