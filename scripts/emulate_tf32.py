"""The first loss of `arbor bench-step`'s batches in PyTorch on the CPU, in float32 and with TF32 rounding
emulated on chosen matrix products (issue 65's numerics): where a GPU's TF32 moves the loss, without a GPU.

    PYTHON=/path/to/python-with-torch; $PYTHON scripts/emulate_tf32.py BATCHES.json

BATCHES.json is what `arbor bench-step FILE --batches BATCHES.json` writes (scripts/bench_step.sh's
experiments/bench-step-legalbench.ron holds the batch whose first loss RESULTS.md's "On a GPU" quotes).
TF32 keeps 10 of float32's 23 mantissa bits; a tensor core's operands are rounded to it to nearest, ties
away from zero (CUDA's `cvt.rna.tf32.f32`, which `nvcuda::wmma::__float_to_tf32` is: what burn-cuda's
matmul stages its float32 operands through, cubek-matmul's `adjust_dtypes`). The rounding is applied to the
operands of: the encoder's linear layers (what PyTorch's `allow_tf32` rounds in cuBLAS), the attention's two
products (Q K^T and P V: burn-cuda's attention is two matmuls; PyTorch's fused attention kernels in float32
are not cuBLAS calls), and the loss's similarities. The attention runs in transformers' eager form, so that
its products are `torch.matmul` calls.
"""

import json
import sys

import torch
import transformers
from transformers import AutoModel

import bench_torch_step as step


def tf32(x):
    """x rounded to TF32: round to nearest, ties away from zero, on the 13 dropped mantissa bits."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


ROUNDED = set()
_linear, _matmul = torch.nn.functional.linear, torch.matmul


def linear(x, w, b=None):
    return _linear(tf32(x), tf32(w), b) if "linear" in ROUNDED else _linear(x, w, b)


def matmul(a, b):
    return _matmul(tf32(a), tf32(b)) if "attention" in ROUNDED else _matmul(a, b)


def first_loss(model, spec, case):
    """bench_torch_step's dense loss (run_case) on the batch, before any step."""
    batch = case["batch"]
    units = step.pool(model, batch["window"])
    if batch["frozen"]:
        units = torch.cat([units, torch.tensor(batch["frozen"], dtype=torch.float32)])
    queries = torch.nn.functional.normalize(step.pool(model, batch["queries"]), dim=-1, eps=1e-12)
    candidates = torch.nn.functional.normalize(units[torch.tensor(batch["positives"] + batch["negatives"])], dim=-1, eps=1e-12)
    if "logits" in ROUNDED:
        queries, candidates = tf32(queries), tf32(candidates)
    logits = queries @ candidates.T / spec["tau"]
    excluded = step.false_negatives(batch.get("excluded", []), len(batch["queries"]), len(candidates))
    target = torch.arange(len(batch["queries"]))
    return torch.nn.functional.cross_entropy(logits.masked_fill(excluded, float("-inf")), target).item()


def main():
    spec = json.load(open(sys.argv[1]))
    torch.set_num_threads(2)
    transformers.logging.set_verbosity_error()
    model = AutoModel.from_pretrained(spec["model_dir"], attn_implementation="eager").eval()
    torch.nn.functional.linear, torch.matmul = linear, matmul
    variants = [
        ("float32", set()),
        ("TF32: linear layers", {"linear"}),
        ("TF32: attention products", {"attention"}),
        ("TF32: linear layers + attention products", {"linear", "attention"}),
        ("TF32: linear layers + attention products + similarities", {"linear", "attention", "logits"}),
    ]
    print(f"| case | {' | '.join(name for name, _ in variants)} |")
    print(f"|---|{'---|' * len(variants)}")
    with torch.no_grad():
        for case in spec["cases"]:
            losses = []
            for _, rounded in variants:
                ROUNDED.clear()
                ROUNDED.update(rounded)
                losses.append(first_loss(model, spec, case))
            print(f"| {case['name']} | {' | '.join(f'{loss:.6f}' for loss in losses)} |")


if __name__ == "__main__":
    main()
