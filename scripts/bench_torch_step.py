#!/usr/bin/env python3
"""PyTorch's side of arbor's step benchmark (scripts/bench_step.sh): the dense trainer's fine-tuning step
(arbor_trainers::bench) on exactly the batches `arbor bench-step` wrote, timed; the reranker's step
(run_rerank), SproutRAG's joint step (run_joint: the SLLM and its aggregation written here in torch,
started from arbor's initial weights) and the large-batch step across documents (run_pairs: GradCache as
sentence-transformers' CachedMultipleNegativesRankingLoss runs it) when the file has them. When arbor's
steps ran in bf16 (the file's `precision: Bf16`, `arbor bench-step --precision bf16`), the encoder's
forward passes here run under bf16 autocast (the reranker's stays float32, as arbor's does).

One step: the queries and the window's units (token ids as arbor read them, each side padded to its
longest row, one forward pass a side) through the encoder with gradients (mean pooling, L2 norm), the
document's other units by their frozen vectors (from the file), InfoNCE at the file's tau of query i
against the rows `positives ++ negatives` of [window; frozen] (target i; the file's `excluded` pairs, a
query's false negatives, out of its denominator), backward, each gradient
clipped to the file's norm (Burn clips each parameter's gradient on its own), AdamW with arbor's
betas, epsilon, weight decay and learning rate. The embeddings and the lower `frozen_layers` blocks
take no gradient. Dropout is off, as arbor's encoder has none.

    python3 scripts/bench_torch_step.py BATCHES [STEPS]

THREADS sets torch's CPU threads; DEVICE=cuda runs the step on the GPU (each step waits for it); TF32=1
lets its float32 matrix products round their inputs to TF32 on tensor cores, as burn-cuda's do (PyTorch's
default is full float32).

Prints one JSON line per case: milliseconds of each timed step (after one warm-up step) and their
median, word pieces a second, the peak resident memory during the steps (Linux), the first step's loss
(the same batch gives arbor's), and the versions of torch and transformers it ran against.
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig, AutoModel  # noqa: E402


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


DEVICE = torch.device(os.environ.get("DEVICE", "cpu"))
PRECISION = "tf32" if os.environ.get("TF32") == "1" else "fp32"
torch.backends.cuda.matmul.allow_tf32 = PRECISION == "tf32"


def set_precision(spec):
    """bf16 autocast when arbor's steps ran in bf16 (the file's `precision`)."""
    global PRECISION
    if spec.get("precision") == "Bf16":
        PRECISION = "bf16"


def sync():
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def pool(model, rows):
    """Mean-pooled, L2-normalised vectors of token-id rows, one padded batch (arbor's pool_ids)."""
    length = max(len(r) for r in rows)
    ids = torch.zeros((len(rows), length), dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, : len(r)] = 1
    ids, mask = ids.to(DEVICE), mask.to(DEVICE)
    hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, dim=-1, eps=1e-12)


def pool_as(model, rows):
    """`pool` in the file's precision (bf16 autocast or not), the vectors float32 as arbor's are."""
    with autocast():
        return pool(model, rows).float()


def load_encoder(model_dir, frozen_layers, freeze_embeddings):
    """all-MiniLM-L6-v2 from the file's folder with dropout off (arbor's encoder has none), the lower
    `frozen_layers` blocks and, with `freeze_embeddings`, the embeddings taking no gradient."""
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    model = AutoModel.from_pretrained(model_dir).to(DEVICE)
    model.eval()
    for part in ([model.embeddings] if freeze_embeddings else []) + list(model.encoder.layer[:frozen_layers]):
        part.requires_grad_(False)
    return model


def adamw(opt, groups):
    """torch's AdamW with arbor's betas, epsilon and weight decay over `groups`, and the norm each parameter's
    gradient is clipped to on its own (Burn's clipping), or None."""
    optimizer = torch.optim.AdamW(groups, betas=(opt["beta_1"], opt["beta_2"]), eps=opt["epsilon"], weight_decay=opt["weight_decay"])
    return optimizer, (opt.get("grad_clipping") or {}).get("Norm")


def timed_steps(steps, optimizer, clip, loss_of, backward=True):
    """`steps` steps of `loss_of()` (after one warm-up): backward (unless `loss_of` ran it itself), clipping,
    the update, the device waited for. Returns each timed step's milliseconds, the first step's loss and the
    peak memory: the process's resident memory, and on a GPU the most torch held there (peak_gpu_mib)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    times, first_loss = [], None
    reset_peak_rss()
    if DEVICE.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for s in range(steps + 1):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of()
        if first_loss is None:
            first_loss = float(loss.detach())
        if backward:
            loss.backward()
        if clip is not None:
            for p in params:
                torch.nn.utils.clip_grad_norm_([p], clip)
        optimizer.step()
        sync()
        if s > 0:
            times.append((time.perf_counter() - start) * 1e3)
    return times, first_loss, peak_rss_mib()


def peak_gpu_mib():
    return torch.cuda.max_memory_allocated() / 2**20 if DEVICE.type == "cuda" else None


def false_negatives(pairs, queries, candidates):
    """The mask of (query, candidate) pairs left out of InfoNCE's denominator (arbor's step_false_negatives:
    a unit other than a query's positive that overlaps its gold)."""
    mask = torch.zeros((queries, candidates), dtype=torch.bool)
    for i, j in pairs:
        mask[i, j] = True
    return mask.to(DEVICE)


def run_case(spec, case, steps):
    # The dense trainer's frozen lower blocks take the embeddings with them (arbor's FrozenLayers).
    model = load_encoder(spec["model_dir"], spec["frozen_layers"], spec["frozen_layers"] > 0)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer, clip = adamw(spec["optimizer"], [dict(params=params, lr=spec["lr"])])
    batch = case["batch"]
    frozen = torch.tensor(batch["frozen"], dtype=torch.float32, device=DEVICE) if batch["frozen"] else None
    rows = torch.tensor(batch["positives"] + batch["negatives"], device=DEVICE)
    target = torch.arange(len(batch["queries"]), device=DEVICE)
    tau = spec["tau"]
    excluded = false_negatives(batch.get("excluded", []), len(batch["queries"]), len(batch["positives"]) + len(batch["negatives"]))

    def loss():
        units = pool_as(model, batch["window"])
        if frozen is not None:
            units = torch.cat([units, frozen])
        queries = pool_as(model, batch["queries"])
        candidates = torch.nn.functional.normalize(units[rows], dim=-1, eps=1e-12)
        logits = torch.nn.functional.normalize(queries, dim=-1, eps=1e-12) @ candidates.T / tau
        return torch.nn.functional.cross_entropy(logits.masked_fill(excluded, float("-inf")), target)

    return timed_steps(steps, optimizer, clip, loss)


def run_rerank(spec, steps):
    """The reranker's step (arbor_trainers::bench::rerank): pairs padded to the longest, the trunk's mean-pooled,
    L2-normalised states through the head (its initial weights from the file) plus gamma times the prior, the
    listwise softmax (cross-entropy with the positive, column 0, as target) over each group; the trunk's top
    blocks at lr_encoder, the head and gamma at lr_head, each gradient clipped on its own, AdamW."""
    rerank = spec["rerank"]
    layers = AutoConfig.from_pretrained(spec["model_dir"]).num_hidden_layers
    # The reranker's trunk keeps its embeddings whatever the trainable blocks (CrossEncoder::freeze_below).
    model = load_encoder(spec["model_dir"], layers - rerank["trainable_layers"], True)
    head = rerank["head"]
    linear = torch.nn.Linear(len(head["weight"]), 1).to(DEVICE)
    with torch.no_grad():
        linear.weight.copy_(torch.tensor(head["weight"]).view(1, -1))
        linear.bias.fill_(head["bias"])
    gamma = torch.nn.Parameter(torch.tensor([head["gamma"]], device=DEVICE))
    trunk = [p for p in model.parameters() if p.requires_grad]
    rest = [*linear.parameters(), gamma]
    optimizer, clip = adamw(rerank["optimizer"], [dict(params=trunk, lr=rerank["lr_encoder"]), dict(params=rest, lr=rerank["lr_head"])])
    batch = rerank["batch"]
    prior = torch.tensor(batch["priors"], dtype=torch.float32, device=DEVICE)
    group = batch["group"]
    target = torch.zeros(len(batch["pairs"]) // group, dtype=torch.long, device=DEVICE)

    def loss():
        scores = linear(pool(model, batch["pairs"])).squeeze(-1) + gamma * prior
        return torch.nn.functional.cross_entropy(scores.view(-1, group), target)

    return timed_steps(steps, optimizer, clip, loss)


def linear_from(w):
    """A torch Linear holding arbor's weights (Burn keeps `weight` as [inputs][outputs])."""
    weight = torch.tensor(w["weight"], dtype=torch.float32)
    layer = torch.nn.Linear(weight.shape[0], weight.shape[1]).to(DEVICE)
    with torch.no_grad():
        layer.weight.copy_(weight.T)
        layer.bias.copy_(torch.tensor(w["bias"], dtype=torch.float32))
    return layer


def norm_from(w, eps):
    layer = torch.nn.LayerNorm(len(w["gamma"]), eps=eps).to(DEVICE)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(w["gamma"], dtype=torch.float32))
        layer.bias.copy_(torch.tensor(w["beta"], dtype=torch.float32))
    return layer


class Block(torch.nn.Module):
    """One post-norm block of arbor's SLLM (arbor_models::bert::model::BertLayer): multi-head attention whose
    probabilities it returns, output projection + residual + layer norm, exact-GELU feed-forward + residual +
    layer norm."""

    def __init__(self, w, heads, eps):
        super().__init__()
        self.heads = heads
        for name in ("query", "key", "value", "attention_output", "intermediate", "output"):
            setattr(self, name, linear_from(w[name]))
        self.attention_norm = norm_from(w["attention_norm"], eps)
        self.output_norm = norm_from(w["output_norm"], eps)

    def forward(self, x):  # x: [batch, n, d]
        b, n, d = x.shape
        split = lambda t: t.view(b, n, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        probs = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        context = (probs @ v).transpose(1, 2).reshape(b, n, d)
        x = self.attention_norm(self.attention_output(context) + x)
        return self.output_norm(self.output(torch.nn.functional.gelu(self.intermediate(x))) + x), probs


class Sllm(torch.nn.Module):
    """arbor's sentence-level transformer (arbor_models::sllm) with the aggregation weights alpha: e = x +
    output(blocks(input(x) + sinusoid)), M = the softmax(alpha)-weighted sum of every (layer, head)'s
    attention, symmetrised, its diagonal zero."""

    def __init__(self, w):
        super().__init__()
        self.input = linear_from(w["input"])
        self.blocks = torch.nn.ModuleList(Block(b, w["heads"], w["layer_norm_eps"]) for b in w["blocks"])
        self.output = linear_from(w["output"])
        self.alpha = torch.nn.Parameter(torch.tensor(w["alpha"], dtype=torch.float32, device=DEVICE))

    def forward(self, units):  # units: [batch, n, d_input]
        n = units.shape[1]
        x = self.input(units)
        d = x.shape[-1]
        position = torch.arange(n, dtype=torch.float64).unsqueeze(1)
        i = torch.arange(d)
        angle = position / 10_000.0 ** ((2 * (i // 2)).double() / d)
        x = x + torch.where(i % 2 == 0, angle.sin(), angle.cos()).float().to(DEVICE)
        attentions = []
        for block in self.blocks:
            x, probs = block(x)
            attentions.append(probs)
        return units + self.output(x), attentions

    def m(self, attentions):  # attentions: per layer [heads, n, n]
        a = torch.stack(attentions)
        w = torch.softmax(self.alpha.reshape(-1), 0).reshape(self.alpha.shape)
        m = (a * w[:, :, None, None]).sum((0, 1))
        m = (m + m.T) / 2
        return m * (1 - torch.eye(m.shape[0], device=DEVICE))


def run_joint(spec, joint, steps):
    """SproutRAG's joint step (arbor_trainers::bench::joint) over the step's documents: per document, the
    encoder over its window and the other units' frozen vectors, the SLLM over the whole document in
    document order; the queries through the encoder and the SLLM as one-unit documents; L_ret (InfoNCE of
    each query against the step's positives and, with hard negatives, every other unit of the step's
    documents, the file's false negatives left out of the denominator) + lambda * the documents' mean
    L_attn (-mean log max(M, eps) at the gold pairs) + over several documents doc_loss * the document term
    (InfoNCE of each query against the mean of each document's SLLM embeddings, its own the target); the
    aggregation weights, the encoder and the SLLM each at their own rate, AdamW, each gradient clipped on
    its own."""
    frozen_layers = joint["frozen_layers"]
    model = load_encoder(spec["model_dir"], frozen_layers, frozen_layers > 0)
    sllm = Sllm(joint["start"]).to(DEVICE)
    encoder = [p for p in model.parameters() if p.requires_grad]
    new = [p for name, p in sllm.named_parameters() if name != "alpha"]
    groups = [dict(params=[sllm.alpha], lr=joint["lr_aggregation"]), dict(params=encoder, lr=joint["lr_encoder"]),
              dict(params=new, lr=joint["lr_new"])]
    optimizer, clip = adamw(joint["optimizer"], groups)
    documents = joint["step"]["documents"]
    queries_ids = [q for d in documents for q in d["batch"]["queries"]]
    positives, offset, owner = [], 0, []
    for k, d in enumerate(documents):
        positives += [offset + p for p in d["positives"]]
        owner += [k] * len(d["positives"])
        offset += len(d["rows"])
    others = torch.tensor([u for u in range(offset) if u not in positives], dtype=torch.long, device=DEVICE)
    positives = torch.tensor(positives, dtype=torch.long, device=DEVICE)
    owner = torch.tensor(owner, dtype=torch.long, device=DEVICE)
    hard = joint["hard_negatives"] and len(others) > 0
    excluded = false_negatives(joint["step"]["excluded"], len(queries_ids), len(positives) + (len(others) if hard else 0))
    target = torch.arange(len(queries_ids), device=DEVICE)
    normalize = lambda t: torch.nn.functional.normalize(t, dim=-1, eps=1e-12)

    def loss():
        embeddings, attn = [], []
        for d in documents:
            batch = d["batch"]
            units = pool_as(model, batch["window"])
            if batch["frozen"]:
                units = torch.cat([units, torch.tensor(batch["frozen"], dtype=torch.float32, device=DEVICE)])
            e, attentions = sllm(units[torch.tensor(d["rows"], device=DEVICE)].unsqueeze(0))
            embeddings.append(e[0])
            if d["pairs"]:
                m = sllm.m([a[0] for a in attentions])
                i = torch.tensor([p[0] for p in d["pairs"]], dtype=torch.long, device=DEVICE)
                j = torch.tensor([p[1] for p in d["pairs"]], dtype=torch.long, device=DEVICE)
                attn.append(-m[i, j].clamp_min(joint["eps"]).log().mean())
        queries = sllm(pool_as(model, queries_ids).unsqueeze(1))[0][:, 0]
        units = torch.cat(embeddings)
        candidates = [units[positives]]
        if hard:
            candidates.append(units[others])
        logits = (normalize(queries) @ normalize(torch.cat(candidates)).T / joint["tau"]).masked_fill(excluded, float("-inf"))
        total = torch.nn.functional.cross_entropy(logits, target)
        if attn:
            total = total + joint["lambda"] * torch.stack(attn).mean()
        if joint["doc_loss"] > 0 and len(documents) > 1:
            means = torch.stack([e.mean(0) for e in embeddings])
            total = total + joint["doc_loss"] * torch.nn.functional.cross_entropy(
                normalize(queries) @ normalize(means).T / joint["tau"], owner)
        return total

    return timed_steps(steps, optimizer, clip, loss)


def autocast():
    """bf16 autocast when the file's steps ran in bf16 (arbor's `training.precision: Bf16`), else nothing:
    torch.autocast casts the linear layers' and matmuls' operands to bf16 and keeps layer norm, softmax and
    the loss in float32, the parameters float32."""
    return torch.autocast(DEVICE.type, dtype=torch.bfloat16, enabled=PRECISION == "bf16")


def run_pairs(spec, steps):
    """The large-batch step (arbor_trainers::bench::pairs): each question against every passage of the batch
    (InfoNCE at the file's tau, targets and excluded pairs from the file), by GradCache when the file has a
    chunk (sentence-transformers' CachedMultipleNegativesRankingLoss: every row embedded `chunk` at a time
    without a graph, the loss's gradient with respect to the vectors, then each chunk again with its graph,
    backward of its vectors times that gradient; rows taken shortest first as arbor takes them), else one
    pass a side; the whole encoder at the file's rate, AdamW, each gradient clipped on its own."""
    model = load_encoder(spec["model_dir"], spec["frozen_layers"], spec["frozen_layers"] > 0)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer, clip = adamw(spec["optimizer"], [dict(params=params, lr=spec["lr"])])
    batch = spec["pairs"]["batch"]
    queries, passages, chunk = batch["queries"], batch["passages"], batch["chunk"]
    target = torch.tensor(batch["targets"], device=DEVICE)
    excluded = false_negatives(batch["excluded"], len(queries), len(passages))
    tau = spec["tau"]

    def loss_of(q, p):
        logits = q @ p.T / tau
        return torch.nn.functional.cross_entropy(logits.masked_fill(excluded, float("-inf")), target)

    def plain():
        loss = loss_of(pool_as(model, queries), pool_as(model, passages))
        loss.backward()
        return loss

    def side_chunks(rows):
        order = sorted(range(len(rows)), key=lambda r: (len(rows[r]), r))
        return [order[i:i + chunk] for i in range(0, len(order), chunk)]

    def cached():
        sides = [(queries, side_chunks(queries)), (passages, side_chunks(passages))]
        reps = []
        with torch.no_grad(), autocast():
            for rows, chunks in sides:
                rep = torch.empty((len(rows), model.config.hidden_size), device=DEVICE)
                for c in chunks:
                    rep[c] = pool(model, [rows[r] for r in c]).float()
                reps.append(rep.requires_grad_())
        loss = loss_of(*reps)
        loss.backward()
        for (rows, chunks), rep in zip(sides, reps):
            for c in chunks:
                (pool_as(model, [rows[r] for r in c]) * rep.grad[c]).sum().backward()
        return loss.detach()

    return timed_steps(steps, optimizer, clip, cached if chunk else plain, backward=False)


def report(name, units, queries, tokens, times, first_loss, peak, precision=None):
    median = statistics.median(times)
    print(json.dumps({
        "framework": "pytorch",
        "case": name,
        "threads": torch.get_num_threads(),
        "units": units,
        "queries": queries,
        "tokens": tokens,
        "median_ms": median,
        "ms": times,
        "tokens_per_s": tokens / (median / 1e3),
        "peak_rss_mib": peak,
        "peak_gpu_mib": peak_gpu_mib(),
        "first_loss": first_loss,
        "device": DEVICE.type,
        "precision": precision or PRECISION,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }), flush=True)


def main():
    spec = json.load(open(sys.argv[1]))
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    threads = int(os.environ.get("THREADS", torch.get_num_threads()))
    torch.set_num_threads(threads)
    set_precision(spec)
    if spec.get("pairs"):
        times, first_loss, peak = run_pairs(spec, steps)
        batch = spec["pairs"]["batch"]
        tokens = sum(len(r) for r in batch["queries"]) + sum(len(r) for r in batch["passages"])
        report(spec["pairs"]["name"], len(batch["passages"]), len(batch["queries"]), tokens, times, first_loss, peak)
    for case in spec["cases"]:
        times, first_loss, peak = run_case(spec, case, steps)
        batch = case["batch"]
        tokens = sum(len(r) for r in batch["queries"]) + sum(len(r) for r in batch["window"])
        report(case["name"], len(batch["window"]), len(batch["queries"]), tokens, times, first_loss, peak)
    if spec.get("rerank"):
        times, first_loss, peak = run_rerank(spec, steps)
        pairs = spec["rerank"]["batch"]["pairs"]
        group = spec["rerank"]["batch"]["group"]
        # arbor's reranker trains in float32 whatever the file's precision.
        float32 = "tf32" if torch.backends.cuda.matmul.allow_tf32 else "fp32"
        report(spec["rerank"]["name"], len(pairs), len(pairs) // group, sum(len(r) for r in pairs), times, first_loss, peak, float32)
    for joint in spec.get("joints", []):
        times, first_loss, peak = run_joint(spec, joint, steps)
        documents = joint["step"]["documents"]
        units = sum(len(d["rows"]) for d in documents)
        queries = sum(len(d["batch"]["queries"]) for d in documents)
        tokens = sum(len(r) for d in documents for r in d["batch"]["queries"] + d["batch"]["window"])
        report(joint["name"], units, queries, tokens, times, first_loss, peak)


if __name__ == "__main__":
    main()
