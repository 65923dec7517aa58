#!/usr/bin/env python3
"""The encoder's forward pass step by step, arbor against PyTorch or one build against another (issue 65:
where the GPU build's first loss parts from PyTorch's). Both sides read the first case of a batches file
written by `arbor bench-step --batches` (its queries and its window's units, each side padded to its
longest row, one forward pass a side, as the step runs them) and keep every step of every block under
the name of the transformers module that computes it (arbor_models::bert::trace).

    arbor trace-forward BATCHES --out A.safetensors        arbor's side (the build that runs it)
    python3 scripts/trace_forward.py torch BATCHES OUT     PyTorch's side: DEVICE=cuda, TF32=1 and the
                                                           file's precision as scripts/bench_torch_step.py
    python3 scripts/trace_forward.py compare REF OTHER...  each OTHER against REF, step by step

`compare` prints, per step and over the real tokens only (padding rows are each framework's own), the
largest absolute difference relative to REF's largest magnitude at that step, then for each OTHER the
step where that relative difference grows the most from the step before (where the two part) and the
lowest cosine between their pooled vectors (what the loss reads).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_torch_step as bts  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

STEPS = ["query", "key", "value", "context", "attention_output", "attention_norm", "intermediate", "output", "output_norm"]


def module_steps(layer):
    """(step name, module) of one BertLayer, each module's output being that step's result."""
    return [
        ("query", layer.attention.self.query),
        ("key", layer.attention.self.key),
        ("value", layer.attention.self.value),
        ("context", layer.attention.self),
        ("attention_output", layer.attention.output.dense),
        ("attention_norm", layer.attention.output.LayerNorm),
        ("intermediate", layer.intermediate),
        ("output", layer.output.dense),
        ("output_norm", layer.output.LayerNorm),
    ]


def trace_side(model, rows, side):
    """One side's trace: the mask, the embeddings, every block's steps, the pooled vectors."""
    traced = {}

    def keep(name):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            traced[name] = out.detach().float().reshape(-1, out.shape[-1]).cpu().contiguous()

        return hook

    handles = [model.embeddings.register_forward_hook(keep(f"{side}.embeddings"))]
    for l, layer in enumerate(model.encoder.layer):
        handles += [m.register_forward_hook(keep(f"{side}.{l}.{step}")) for step, m in module_steps(layer)]
    length = max(len(r) for r in rows)
    mask = torch.zeros((len(rows), length))
    for i, r in enumerate(rows):
        mask[i, : len(r)] = 1.0
    with torch.no_grad():
        pooled = bts.pool_as(model, rows)
    for h in handles:
        h.remove()
    traced[f"{side}.mask"] = mask
    traced[f"{side}.pooled"] = pooled.detach().float().cpu().contiguous()
    return traced


def torch_trace(batches, out):
    spec = json.load(open(batches))
    bts.set_precision(spec)
    case = spec["cases"][0]
    model = bts.load_encoder(spec["model_dir"], 0, False)
    traced = {}
    for side in ["queries", "window"]:
        traced.update(trace_side(model, case["batch"][side], side))
    save_file(traced, out)
    print(f"{out}: {len(traced)} steps of case {case['name']!r} (torch {torch.__version__}, {bts.DEVICE}, {bts.PRECISION})")


def order(names):
    """Steps in the order the forward computes them, each side in turn."""
    def key(name):
        side, rest = name.split(".", 1)
        if rest == "mask":
            at = (-1, 0)
        elif rest == "embeddings":
            at = (0, 0)
        elif rest == "pooled":
            at = (10**6, 0)
        else:
            l, step = rest.split(".", 1)
            at = (1 + int(l), STEPS.index(step))
        return (0 if side == "queries" else 1, at)

    return sorted(names, key=key)


def real(traces, name, t):
    """`t` restricted to the real tokens' rows when it has one row a token."""
    mask = traces[name.split(".")[0] + ".mask"].reshape(-1) > 0.5
    return t[mask] if t.shape[0] == mask.numel() and not name.endswith(".pooled") else t


def compare(ref_path, others):
    ref = load_file(ref_path)
    sides = [load_file(p) for p in others]
    names = [n for n in order(ref) if not n.endswith(".mask") and all(n in s for s in sides)]
    print("step | " + " | ".join(f"max|d|/max|ref| {os.path.basename(p)}" for p in others))
    rel = {p: [] for p in others}
    for name in names:
        r = real(ref, name, ref[name])
        cells = []
        for p, side in zip(others, sides):
            o = real(ref, name, side[name])
            if o.shape != r.shape:
                cells.append(f"shape {tuple(o.shape)} vs {tuple(r.shape)}")
                continue
            value = ((o - r).abs().max() / r.abs().max().clamp(min=1e-30)).item()
            rel[p].append((name, value))
            cells.append(f"{value:.3e}")
        print(f"{name} | " + " | ".join(cells))
    for p, side in zip(others, sides):
        jumps = [(b[1] / max(a[1], 1e-12), a, b) for a, b in zip(rel[p], rel[p][1:]) if a[0].split(".")[0] == b[0].split(".")[0]]
        if jumps:
            ratio, a, b = max(jumps)
            print(f"{os.path.basename(p)}: the largest growth is at {b[0]} ({a[1]:.3e} after {a[0]} -> {b[1]:.3e}, x{ratio:.1f})")
        for s in ["queries", "window"]:
            name = f"{s}.pooled"
            if name in ref and name in side:
                cos = torch.nn.functional.cosine_similarity(ref[name], side[name], dim=1).min().item()
                print(f"{os.path.basename(p)}: {name}: lowest cosine to {os.path.basename(ref_path)}'s {cos:.8f}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "torch":
        torch_trace(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
