#!/usr/bin/env python3
"""The LlamaIndex and LangChain retrievers (scripts/arbor_retrievers.py) against `arbor query --json`.

    python3 -m venv /tmp/retrievers && /tmp/retrievers/bin/pip install llama-index-core langchain-core
    /tmp/retrievers/bin/python scripts/check_retrievers.py INDEX [--questions FILE] [--arbor PATH]

Starts `arbor serve INDEX` on a free port and asks every question (default: 20 fixed ones) through both
retrievers and through `arbor query INDEX QUESTION --json` with the same method, k and budget, for Flat,
BM25 and Hybrid: the documents, the spans and the texts must be the same at every rank, and the scores
equal (the same float printed by the same code). Prints one line a method and exits 1 on a difference.
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from arbor_retrievers import ArborLangChainRetriever, ArborLlamaIndexRetriever  # noqa: E402

QUESTIONS = [
    "What is the incubation period?", "How is the virus transmitted?", "What are the symptoms of infection?",
    "Which animals are reservoirs?", "What is the case fatality rate?", "How effective are masks?",
    "What treatments were tried?", "How long does the virus survive on surfaces?", "What is R0?",
    "Who is most at risk?", "What causes fever?", "How was the outbreak detected?", "What vaccine candidates exist?",
    "What is the role of ACE2?", "How are children affected?", "What did the serology show?",
    "Where did the outbreak start?", "What is the mortality among the elderly?", "How is the disease diagnosed?",
    "What are the limitations of the study?",
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("index")
    parser.add_argument("--questions", help="a file of questions, one a line")
    parser.add_argument("--arbor", default=str(ROOT / "target/release/arbor"))
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=None)
    args = parser.parse_args()
    questions = QUESTIONS if not args.questions else [l.strip() for l in open(args.questions) if l.strip()]
    budget = [] if args.max_tokens is None else ["--max-tokens", str(args.max_tokens)]
    server = subprocess.Popen([args.arbor, "serve", args.index, "--port", "0", *budget], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = server.stdout.readline().strip().removeprefix("listening on ")
    failures = 0
    try:
        for method in ["Flat", "Bm25", "Hybrid(())"]:
            llama = ArborLlamaIndexRetriever(url, k=args.k, method=method)
            chain = ArborLangChainRetriever(url=url, k=args.k, method=method)
            same = 0
            for q in questions:
                out = subprocess.run([args.arbor, "query", args.index, q, "--method", method, "-k", str(args.k), "--json", *budget],
                                     capture_output=True, text=True, check=True).stdout
                want = [(r["document"], r["spans"], r["text"], r["score"]) for r in json.loads(out)["results"]]
                got_llama = [(n.node.metadata["document"], n.node.metadata["spans"], n.node.text, n.score) for n in llama.retrieve(q)]
                got_chain = [(d.metadata["document"], d.metadata["spans"], d.page_content, d.metadata["score"]) for d in chain.invoke(q)]
                if got_llama == want and got_chain == want:
                    same += 1
                else:
                    failures += 1
                    print(f"  {method} {q!r}: differs\n    query: {want[:2]}\n    llama: {got_llama[:2]}\n    chain: {got_chain[:2]}")
            print(f"{method}: {same} of {len(questions)} questions: LlamaIndex and LangChain return arbor query --json's "
                  f"{args.k} results (documents, spans, texts, scores)")
    finally:
        server.terminate()
        server.wait()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
