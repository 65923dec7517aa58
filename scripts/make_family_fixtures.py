#!/usr/bin/env python3
"""Regenerates models/tests/fixtures/tiny-{roberta,xlm-roberta,mpnet}/: for each encoder family arbor reads
besides BERT (issue 85; BERT's is tiny-bert-cls, scripts/make_pooling_fixture.py), a small randomly
initialised model of that family saved as a sentence-transformers folder (mean pooling, normalised), with
what PyTorch computes for it, which arbor's tests hold its own passes to.

No pretrained weights of these families but all-mpnet-base-v2 can be fetched where arbor is built, so the
models are made here: a tokenizer of the family's kind learnt from the sentences below (byte-level BPE for
RoBERTa, a SentencePiece unigram model for XLM-RoBERTa, WordPiece with RoBERTa's `<s> ... </s>` for MPNet,
as the real checkpoints have), the model (hidden 32, 2 blocks, 4 heads, 66 positions) drawn by
transformers from a fixed seed, saved with save_pretrained, wrapped as sentence-transformers does.
expected.json holds, for every sentence:
- `ids`: the token ids sentence-transformers encodes (arbor must tokenize alike);
- `vectors`: sentence-transformers' `encode` (mean pooling, normalised);
- `loss` and `grads`: the loss `sum(pooled * R)` over the batch of all sentences, `R[i, d] = ((i * hidden +
  d) * 7919 % 1000) / 500 - 1`, and PyTorch's gradient of it for a few parameters (float32, eager
  attention, the exact erf GELU), named as in the checkpoint;
and for MPNet `buckets`: `relative_position_bucket` of every distance from -600 to 600.

    python3 -m pip install sentence-transformers
    python3 scripts/make_family_fixtures.py [OUT_ROOT]
"""
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer, models  # noqa: E402
from tokenizers import ByteLevelBPETokenizer, SentencePieceUnigramTokenizer, processors  # noqa: E402
from tokenizers import BertWordPieceTokenizer  # noqa: E402
from transformers import (  # noqa: E402
    MPNetConfig,
    MPNetModel,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)

ROOT = sys.argv[1] if len(sys.argv) > 1 else "models/tests/fixtures"
SENTENCES = [
    "What is the notice period for terminating the agreement?",
    "Either party may terminate this Agreement on thirty days' written notice.",
    "The Receiving Party shall keep the Confidential Information secret and shall not disclose it to any third party "
    "without the prior written consent of the Disclosing Party, except to its employees who need to know it.",
    "Hi",
    "a",
    "Revenue grew 12% to $4.2 billion in fiscal 2022, driven by services.",
    "Super Bowl 50 was an American football game played on February 7, 2016.",
    "The virus binds to the ACE2 receptor on the surface of host cells.",
    "Ünïcödé tëxt, emoji-free, with accents and a hyphen-ated word.",
]
GRADS = {
    "roberta": ["embeddings.LayerNorm.weight", "embeddings.token_type_embeddings.weight",
                "encoder.layer.0.attention.self.query.weight", "encoder.layer.1.output.dense.weight"],
    "mpnet": ["embeddings.LayerNorm.weight", "encoder.relative_attention_bias.weight",
              "encoder.layer.0.attention.attn.q.weight", "encoder.layer.1.output.dense.weight"],
}
GRADS["xlm-roberta"] = GRADS["roberta"]
SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=66, hidden_act="gelu", attn_implementation="eager")


def roberta_tokenizer(work):
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(SENTENCES * 4, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")


def xlm_roberta_tokenizer(work):
    unigram = SentencePieceUnigramTokenizer()
    unigram.train_from_iterator(SENTENCES * 4, vocab_size=200, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                unk_token="<unk>")
    unigram.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=unigram, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="<unk>", pad_token="<pad>")


def mpnet_tokenizer(work):
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(SENTENCES * 4, vocab_size=300, min_frequency=1,
                           special_tokens=["<s>", "<pad>", "</s>", "[UNK]", "<mask>"])
    wp.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    return PreTrainedTokenizerFast(tokenizer_object=wp._tokenizer, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                   cls_token="<s>", unk_token="[UNK]", pad_token="<pad>", mask_token="<mask>")


FAMILIES = {
    "roberta": (roberta_tokenizer, RobertaConfig, RobertaModel, dict(type_vocab_size=1, pad_token_id=1)),
    "xlm-roberta": (xlm_roberta_tokenizer, XLMRobertaConfig, XLMRobertaModel, dict(type_vocab_size=1, pad_token_id=1)),
    "mpnet": (mpnet_tokenizer, MPNetConfig, MPNetModel, dict(pad_token_id=1, relative_attention_num_buckets=32,
                                                              layer_norm_eps=1e-5)),
}


def make(family, work):
    make_tokenizer, Config, Model, extra = FAMILIES[family]
    torch.manual_seed(11)
    tokenizer = make_tokenizer(work)
    config = Config(vocab_size=len(tokenizer), **SHAPE, **extra)
    model = Model(config, add_pooling_layer=False).eval()
    # A freshly drawn model's biases and layer norms are 0 and 1, its relative bias tiny: make every
    # parameter count, so a name read into the wrong place shows.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 or "relative_attention_bias" in name:
                p.add_(torch.randn_like(p) * 0.2)
    model_dir = os.path.join(work, family)
    model.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)
    transformer = models.Transformer(model_dir, max_seq_length=64)
    st = SentenceTransformer(modules=[transformer, models.Pooling(32, pooling_mode="mean"), models.Normalize()], device="cpu")
    out = os.path.join(ROOT, f"tiny-{family}")
    shutil.rmtree(out, ignore_errors=True)
    st.save(out)
    os.remove(os.path.join(out, "README.md"))
    expected = {"sentences": SENTENCES, "vectors": st.encode(SENTENCES, convert_to_numpy=True).tolist()}
    features = st.tokenize(SENTENCES)
    mask = features["attention_mask"]
    expected["ids"] = [row[m.bool()].tolist() for row, m in zip(features["input_ids"], mask)]
    # The loss and its gradient through the model as sentence-transformers runs it (padded batch).
    encoder = st[0].auto_model
    encoder.train(False)
    encoder.zero_grad()
    hidden = encoder(input_ids=features["input_ids"], attention_mask=mask).last_hidden_state
    summed = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
    pooled = torch.nn.functional.normalize(summed, dim=-1)
    n, h = pooled.shape
    r = torch.tensor([[((i * h + d) * 7919 % 1000) / 500.0 - 1.0 for d in range(h)] for i in range(n)])
    loss = (pooled * r).sum()
    loss.backward()
    params = dict(encoder.named_parameters())
    expected["loss"] = loss.item()
    expected["grads"] = {name: params[name].grad.flatten().tolist() for name in GRADS[family]}
    if family == "mpnet":
        distances = torch.arange(-600, 601)
        expected["buckets"] = encoder.encoder.relative_position_bucket(distances).tolist()
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)
    print(f"wrote {out}: {sorted(os.listdir(out))}, loss {loss.item():.6f}")


def main():
    work = tempfile.mkdtemp()
    for family in FAMILIES:
        make(family, work)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
